/*
 * test_store_mcp.c: the MCP-session table of store/ against real SQLite files in a fresh
 * mkdtemp directory per test: round trips, live/ended listing, validation, persistence across a
 * close and reopen, pruning, and the migration of a version-1 database.
 */
#include <criterion/criterion.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sqlite3.h>

#include "store/store.h"
#include "support_store.h"

static char err[RB_ERR_LEN];

static void setup(void)
{
    sup_tmpdir_open("store-mcp");
    err[0] = '\0';
}

TestSuite(store_mcp, .init = setup, .fini = sup_tmpdir_close);

static json_t *mcp_doc(const char *id, int64_t created, json_t *ended)
{
    return json_pack("{s:s, s:I, s:I, s:o, s:s, s:{s:s}, s:{}}", "mcp_session_id", id, "created_at",
                     (json_int_t)created, "last_used_at", (json_int_t)created, "ended_at", ended ? ended : json_null(),
                     "protocol_version", "2025-06-18", "client_info", "name", "pytest", "bound");
}

Test(store_mcp, put_get_roundtrip_survives_reopen)
{
    store *st = sup_store_open(err);
    json_t *d = mcp_doc("m_1", 1000, NULL);
    json_object_set_new(json_object_get(d, "bound"), "python", json_string("s_abc"));
    cr_assert_eq(store_mcp_session_put(st, d, err), RB_OK, "%s", err);
    store_close(st);

    st = sup_store_open(err);
    json_t *got = NULL;
    cr_assert_eq(store_mcp_session_get(st, "m_1", &got, err), RB_OK, "%s", err);
    cr_assert(json_equal(got, d), "stored document differs");
    json_decref(got);

    /* Update: last_used_at and members change, created_at stays. */
    json_object_set_new(d, "last_used_at", json_integer(5000));
    json_object_set_new(d, "log_level", json_string("debug"));
    cr_assert_eq(store_mcp_session_put(st, d, err), RB_OK, "%s", err);
    cr_assert_eq(store_mcp_session_get(st, "m_1", &got, err), RB_OK, "%s", err);
    cr_assert_eq(json_integer_value(json_object_get(got, "last_used_at")), 5000);
    cr_assert_str_eq(json_string_value(json_object_get(got, "log_level")), "debug");
    json_decref(got);
    json_decref(d);
    store_close(st);
}

Test(store_mcp, unknown_is_not_found)
{
    store *st = sup_store_open(err);
    json_t *got = (json_t *)1;
    cr_assert_eq(store_mcp_session_get(st, "m_nope", &got, err), RB_ENOTFOUND);
    cr_assert_null(got);
    cr_assert(strstr(err, "m_nope") != NULL, "%s", err);
    store_close(st);
}

Test(store_mcp, validation_names_the_member)
{
    store *st = sup_store_open(err);
    json_t *d = json_pack("{s:i, s:i}", "created_at", 1, "last_used_at", 1);
    cr_assert_eq(store_mcp_session_put(st, d, err), RB_EINVAL);
    cr_assert(strstr(err, "mcp_session_id") != NULL, "%s", err);
    json_decref(d);

    d = json_pack("{s:s, s:s, s:i}", "mcp_session_id", "m_x", "created_at", "yesterday", "last_used_at", 1);
    cr_assert_eq(store_mcp_session_put(st, d, err), RB_EINVAL);
    cr_assert(strstr(err, "created_at") != NULL, "%s", err);
    json_decref(d);

    d = mcp_doc("m_x", 10, json_string("later"));
    cr_assert_eq(store_mcp_session_put(st, d, err), RB_EINVAL);
    cr_assert(strstr(err, "ended_at") != NULL, "%s", err);
    json_decref(d);

    /* created_at is immutable. */
    d = mcp_doc("m_y", 10, NULL);
    cr_assert_eq(store_mcp_session_put(st, d, err), RB_OK, "%s", err);
    json_object_set_new(d, "created_at", json_integer(11));
    cr_assert_eq(store_mcp_session_put(st, d, err), RB_EINVAL);
    cr_assert(strstr(err, "created_at") != NULL, "%s", err);
    json_decref(d);
    store_close(st);
}

Test(store_mcp, list_live_and_all_newest_first)
{
    store *st = sup_store_open(err);
    json_t *a = mcp_doc("m_a", 100, NULL), *b = mcp_doc("m_b", 200, json_integer(300)), *c = mcp_doc("m_c", 300, NULL);
    cr_assert_eq(store_mcp_session_put(st, a, err), RB_OK, "%s", err);
    cr_assert_eq(store_mcp_session_put(st, b, err), RB_OK, "%s", err);
    cr_assert_eq(store_mcp_session_put(st, c, err), RB_OK, "%s", err);
    json_t *list = NULL;
    cr_assert_eq(store_mcp_session_list(st, 0, &list, err), RB_OK, "%s", err);
    cr_assert_eq(json_array_size(list), 2);
    cr_assert_str_eq(json_string_value(json_object_get(json_array_get(list, 0), "mcp_session_id")), "m_c");
    cr_assert_str_eq(json_string_value(json_object_get(json_array_get(list, 1), "mcp_session_id")), "m_a");
    json_decref(list);
    cr_assert_eq(store_mcp_session_list(st, 1, &list, err), RB_OK, "%s", err);
    cr_assert_eq(json_array_size(list), 3);
    json_decref(list);

    cr_assert_eq(store_mcp_session_delete(st, "m_a", err), RB_OK, "%s", err);
    json_t *got = NULL;
    cr_assert_eq(store_mcp_session_get(st, "m_a", &got, err), RB_ENOTFOUND);
    json_decref(a);
    json_decref(b);
    json_decref(c);
    store_close(st);
}

Test(store_mcp, prune_removes_old_ended_only)
{
    store *st = sup_store_open(err);
    json_t *old = mcp_doc("m_old", 100, json_integer(200)), *recent = mcp_doc("m_recent", 100, json_integer(5000)),
           *live = mcp_doc("m_live", 100, NULL);
    cr_assert_eq(store_mcp_session_put(st, old, err), RB_OK, "%s", err);
    cr_assert_eq(store_mcp_session_put(st, recent, err), RB_OK, "%s", err);
    cr_assert_eq(store_mcp_session_put(st, live, err), RB_OK, "%s", err);
    int n = -1;
    cr_assert_eq(store_prune(st, 1000, &n, err), RB_OK, "%s", err);
    cr_assert_eq(n, 1);
    json_t *got = NULL;
    cr_assert_eq(store_mcp_session_get(st, "m_old", &got, err), RB_ENOTFOUND);
    cr_assert_eq(store_mcp_session_get(st, "m_recent", &got, err), RB_OK, "%s", err);
    json_decref(got);
    cr_assert_eq(store_mcp_session_get(st, "m_live", &got, err), RB_OK, "%s", err);
    json_decref(got);
    json_decref(old);
    json_decref(recent);
    json_decref(live);
    store_close(st);
}

/* A database written by the first schema (no mcp_sessions table) is migrated on open and its
 * existing rows stay. */
Test(store_mcp, migrates_a_version_1_database)
{
    sqlite3 *db = NULL;
    cr_assert_eq(sqlite3_open(sup_db_path, &db), SQLITE_OK);
    const char *v1 = "CREATE TABLE sessions (session_id TEXT PRIMARY KEY NOT NULL, status TEXT NOT NULL,"
                     " container_id TEXT, created_at INTEGER NOT NULL, last_used_at INTEGER NOT NULL,"
                     " ended_at INTEGER, doc TEXT NOT NULL);"
                     "CREATE INDEX sessions_by_created ON sessions(created_at);"
                     "CREATE INDEX sessions_by_ended ON sessions(ended_at) WHERE ended_at IS NOT NULL;"
                     "CREATE TABLE executions (request_id TEXT PRIMARY KEY NOT NULL, session_id TEXT NOT NULL,"
                     " status TEXT NOT NULL, created_at INTEGER NOT NULL, started_at INTEGER,"
                     " completed_at INTEGER, doc TEXT NOT NULL);"
                     "CREATE INDEX executions_by_session ON executions(session_id, created_at);"
                     "CREATE INDEX executions_by_completed ON executions(completed_at) WHERE completed_at IS NOT NULL;"
                     "CREATE TABLE meta (key TEXT PRIMARY KEY NOT NULL, value TEXT NOT NULL);"
                     "INSERT INTO meta VALUES ('instance', 'i_kept');"
                     "PRAGMA user_version=1; PRAGMA application_id=1380077400;";
    cr_assert_eq(sqlite3_exec(db, v1, NULL, NULL, NULL), SQLITE_OK, "%s", sqlite3_errmsg(db));
    sqlite3_close(db);

    store *st = sup_store_open(err);
    char *v = NULL;
    cr_assert_eq(store_meta_get(st, "instance", &v, err), RB_OK, "%s", err);
    cr_assert_str_eq(v, "i_kept");
    free(v);
    json_t *d = mcp_doc("m_new", 1, NULL);
    cr_assert_eq(store_mcp_session_put(st, d, err), RB_OK, "%s", err);
    json_decref(d);
    store_close(st);

    cr_assert_eq(sqlite3_open(sup_db_path, &db), SQLITE_OK);
    sqlite3_stmt *q = NULL;
    cr_assert_eq(sqlite3_prepare_v2(db, "PRAGMA user_version", -1, &q, NULL), SQLITE_OK);
    cr_assert_eq(sqlite3_step(q), SQLITE_ROW);
    cr_assert_geq(sqlite3_column_int(q, 0), 2);
    sqlite3_finalize(q);
    sqlite3_close(db);
}

/*
 * test_store.c: store/ against real SQLite files in a fresh mkdtemp directory per test (removed
 * afterwards). A second raw SQLite connection stands in for "another reader" where a test must
 * see what is committed on disk.
 */
#include <criterion/criterion.h>

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <sqlite3.h>

#include "store/store.h"
#include "support_store.h"

static char err[RB_ERR_LEN];

static void setup(void)
{
    sup_tmpdir_open("store");
    err[0] = '\0';
}

TestSuite(store, .init = setup, .fini = sup_tmpdir_close);

static json_t *session_doc(const char *id, int64_t created, json_t *ended)
{
    return json_pack("{s:s, s:s, s:s, s:I, s:I, s:o, s:s, s:{s:i}}", "session_id", id, "status", "ready",
                     "container_id", "c0ffee", "created_at", (json_int_t)created, "last_used_at",
                     (json_int_t)created + 5, "ended_at", ended ? ended : json_null(), "language", "python",
                     "execution_options", "timeout", 30);
}

static json_t *exec_doc(const char *rid, const char *sid, const char *status, int64_t created, json_t *completed)
{
    return json_pack("{s:s, s:s, s:s, s:I, s:n, s:o, s:s, s:[]}", "request_id", rid, "session_id", sid, "status",
                     status, "created_at", (json_int_t)created, "started_at", "completed_at",
                     completed ? completed : json_null(), "code", "print(1)", "outputs");
}

static void assert_json_eq(json_t *a, json_t *b)
{
    if (!json_equal(a, b)) {
        char *sa = json_dumps(a, JSON_COMPACT), *sb = json_dumps(b, JSON_COMPACT);
        size_t la = sa ? strlen(sa) : 0, lb = sb ? strlen(sb) : 0;
        cr_log_error("documents differ (%zu vs %zu bytes): %.300s / %.300s", la, lb, sa ? sa : "", sb ? sb : "");
        free(sa);
        free(sb);
        cr_assert_fail("documents differ");
    }
}

/* The ids of a JSON array of documents, joined by ',' (for order checks). */
static void ids_of(json_t *list, const char *key, char *buf, size_t len)
{
    size_t i, off = 0;
    json_t *d;
    buf[0] = '\0';
    json_array_foreach (list, i, d) {
        int n = snprintf(buf + off, len - off, "%s%s", i ? "," : "", json_string_value(json_object_get(d, key)));
        cr_assert(n > 0 && (size_t)n < len - off);
        off += (size_t)n;
    }
}

Test(store, session_round_trip_and_upsert)
{
    store *st = sup_store_open(err);
    json_t *doc = session_doc("s1", 1000, NULL);
    /* Members beyond the columns, of every JSON type, kept verbatim. */
    json_object_set_new(doc, "nested", json_pack("{s:[i,f,b,n,s], s:f}", "a", 1, 0.1, 1, "x", "pi", 3.141592653589793));
    json_object_set_new(doc, "nul", json_stringn("a\0b", 3));
    json_object_set_new(doc, "big", json_integer(INT64_MAX));
    cr_assert_eq(store_session_put(st, doc, err), RB_OK, "%s", err);

    json_t *got = NULL;
    cr_assert_eq(store_session_get(st, "s1", &got, err), RB_OK, "%s", err);
    assert_json_eq(got, doc);
    json_decref(got);

    /* Upsert: same id, changed fields replace the row. */
    json_object_set_new(doc, "status", json_string("ended"));
    json_object_set_new(doc, "ended_at", json_integer(2000));
    json_object_del(doc, "nested");
    cr_assert_eq(store_session_put(st, doc, err), RB_OK, "%s", err);
    cr_assert_eq(store_session_get(st, "s1", &got, err), RB_OK, "%s", err);
    assert_json_eq(got, doc);
    json_decref(got);

    json_t *list = NULL;
    cr_assert_eq(store_session_list(st, 1, &list, err), RB_OK, "%s", err);
    cr_assert_eq(json_array_size(list), 1);
    json_decref(list);

    /* created_at of an existing session is immutable: refused, row unchanged. */
    json_t *moved = json_deep_copy(doc);
    json_object_set_new(moved, "created_at", json_integer(1));
    cr_assert_eq(store_session_put(st, moved, err), RB_EINVAL);
    cr_assert(strstr(err, "created_at") != NULL, "%s", err);
    json_decref(moved);
    cr_assert_eq(store_session_get(st, "s1", &got, err), RB_OK, "%s", err);
    assert_json_eq(got, doc);
    json_decref(got);

    got = (json_t *)1;
    cr_assert_eq(store_session_get(st, "nope", &got, err), RB_ENOTFOUND);
    cr_assert_null(got);
    cr_assert(strstr(err, "nope") != NULL, "%s", err);

    cr_assert_eq(store_session_delete(st, "s1", err), RB_OK, "%s", err);
    cr_assert_eq(store_session_get(st, "s1", &got, err), RB_ENOTFOUND);
    cr_assert_eq(store_session_delete(st, "s1", err), RB_OK, "deleting an absent session is not an error");
    json_decref(doc);
    store_close(st);
}

Test(store, unicode_and_large_documents)
{
    store *st = sup_store_open(err);
    const char *uni = "h\xc3\xa9llo \xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e \xf0\x9f\x8e\x89 \"quoted\" \\ \n\t";
    json_t *doc = exec_doc("r-\xc3\xa9", "s\xe2\x82\xac", "completed", 10, json_integer(20));
    json_object_set_new(doc, "stdout", json_string(uni));
    json_object_set_new(doc, "\xe9\x8d\xb5", json_string("key in unicode"));

    /* 1 MiB of mixed ASCII and multi-byte text. */
    size_t len = 1024 * 1024;
    char *big = malloc(len + 1);
    cr_assert_not_null(big);
    for (size_t i = 0; i < len;) {
        if (i % 97 == 0 && i + 3 <= len) {
            memcpy(big + i, "\xe2\x82\xac", 3);
            i += 3;
        } else {
            big[i] = (char)('a' + (i % 26));
            i++;
        }
    }
    big[len] = '\0';
    json_object_set_new(doc, "stderr", json_string(big));
    free(big);

    cr_assert_eq(store_execution_put(st, doc, err), RB_OK, "%s", err);
    json_t *got = NULL;
    cr_assert_eq(store_execution_get(st, "r-\xc3\xa9", &got, err), RB_OK, "%s", err);
    assert_json_eq(got, doc);
    cr_assert_eq(json_string_length(json_object_get(got, "stderr")), len);
    json_decref(got);

    json_t *list = NULL;
    cr_assert_eq(store_execution_list(st, "s\xe2\x82\xac", 0, &list, err), RB_OK, "%s", err);
    cr_assert_eq(json_array_size(list), 1);
    assert_json_eq(json_array_get(list, 0), doc);
    json_decref(list);

    /* A small document after a large one (the encode buffer shrinks back) still round-trips. */
    json_t *small = exec_doc("r2", "s", "queued", 11, NULL);
    cr_assert_eq(store_execution_put(st, small, err), RB_OK, "%s", err);
    cr_assert_eq(store_execution_get(st, "r2", &got, err), RB_OK, "%s", err);
    assert_json_eq(got, small);
    json_decref(got);
    json_decref(small);
    json_decref(doc);
    store_close(st);
}

Test(store, session_list_order_and_include_ended)
{
    store *st = sup_store_open(err);
    json_t *docs[] = {
        session_doc("a", 100, NULL), session_doc("b", 300, NULL), session_doc("c", 200, json_integer(400)),
        session_doc("d", 200, NULL), /* same created_at as c, inserted later: listed first */
    };
    for (size_t i = 0; i < 4; i++) {
        cr_assert_eq(store_session_put(st, docs[i], err), RB_OK, "%s", err);
        json_decref(docs[i]);
    }
    char ids[64];
    json_t *list = NULL;
    cr_assert_eq(store_session_list(st, 1, &list, err), RB_OK, "%s", err);
    ids_of(list, "session_id", ids, sizeof(ids));
    cr_assert_str_eq(ids, "b,d,c,a");
    json_decref(list);

    cr_assert_eq(store_session_list(st, 0, &list, err), RB_OK, "%s", err);
    ids_of(list, "session_id", ids, sizeof(ids));
    cr_assert_str_eq(ids, "b,d,a");
    json_decref(list);

    /* Ending a session through an update moves it out of the live list. */
    json_t *b = session_doc("b", 300, json_integer(500));
    cr_assert_eq(store_session_put(st, b, err), RB_OK, "%s", err);
    json_decref(b);
    cr_assert_eq(store_session_list(st, 0, &list, err), RB_OK, "%s", err);
    ids_of(list, "session_id", ids, sizeof(ids));
    cr_assert_str_eq(ids, "d,a");
    json_decref(list);
    store_close(st);
}

Test(store, execution_list_order_and_limit)
{
    store *st = sup_store_open(err);
    const char *rids[] = {"r3", "r1", "r2", "r4"};
    const int64_t created[] = {30, 10, 20, 40};
    for (int i = 0; i < 4; i++) {
        json_t *d = exec_doc(rids[i], "s1", "completed", created[i], json_integer(created[i] + 1));
        cr_assert_eq(store_execution_put(st, d, err), RB_OK, "%s", err);
        json_decref(d);
    }
    json_t *other = exec_doc("x1", "s2", "queued", 15, NULL);
    cr_assert_eq(store_execution_put(st, other, err), RB_OK, "%s", err);
    json_decref(other);

    char ids[64];
    json_t *list = NULL;
    cr_assert_eq(store_execution_list(st, "s1", 0, &list, err), RB_OK, "%s", err);
    ids_of(list, "request_id", ids, sizeof(ids));
    cr_assert_str_eq(ids, "r1,r2,r3,r4");
    cr_assert_str_eq(json_string_value(json_object_get(json_array_get(list, 0), "code")), "print(1)");
    json_decref(list);

    cr_assert_eq(store_execution_list(st, "s1", 2, &list, err), RB_OK, "%s", err);
    ids_of(list, "request_id", ids, sizeof(ids));
    cr_assert_str_eq(ids, "r3,r4", "limit keeps the newest, in creation order");
    json_decref(list);

    cr_assert_eq(store_execution_list(st, "s1", 10, &list, err), RB_OK, "%s", err);
    cr_assert_eq(json_array_size(list), 4);
    json_decref(list);

    cr_assert_eq(store_execution_list(st, "none", 0, &list, err), RB_OK, "%s", err);
    cr_assert(json_is_array(list) && json_array_size(list) == 0);
    json_decref(list);

    json_t *got = NULL;
    cr_assert_eq(store_execution_get(st, "zz", &got, err), RB_ENOTFOUND);
    cr_assert_null(got);

    /* An update moving an execution to another session (or creation time) is refused. */
    json_t *moved = exec_doc("r1", "s2", "completed", 10, json_integer(11));
    cr_assert_eq(store_execution_put(st, moved, err), RB_EINVAL);
    cr_assert(strstr(err, "session_id") != NULL, "%s", err);
    json_object_set_new(moved, "session_id", json_string("s1"));
    json_object_set_new(moved, "created_at", json_integer(99));
    cr_assert_eq(store_execution_put(st, moved, err), RB_EINVAL);
    json_object_set_new(moved, "created_at", json_integer(10));
    json_object_set_new(moved, "status", json_string("error"));
    cr_assert_eq(store_execution_put(st, moved, err), RB_OK, "%s", err);
    cr_assert_eq(store_execution_get(st, "r1", &got, err), RB_OK, "%s", err);
    assert_json_eq(got, moved);
    json_decref(got);
    json_decref(moved);
    store_close(st);
}

Test(store, fail_unfinished)
{
    store *st = sup_store_open(err);
    json_t *q = exec_doc("q", "s", "queued", 1, NULL);
    json_t *r = exec_doc("r", "s", "running", 2, NULL);
    json_object_set_new(r, "started_at", json_integer(3));
    json_object_set_new(r, "stdout", json_string("partial"));
    json_t *c = exec_doc("c", "s", "completed", 0, json_integer(5));
    json_t *all[] = {q, r, c};
    for (int i = 0; i < 3; i++)
        cr_assert_eq(store_execution_put(st, all[i], err), RB_OK, "%s", err);

    int64_t before = rb_now_ms();
    int changed = -1;
    cr_assert_eq(store_execution_fail_unfinished(st, "runboxd restarted", &changed, err), RB_OK, "%s", err);
    cr_assert_eq(changed, 2);

    const char *ids[] = {"q", "r"};
    for (int i = 0; i < 2; i++) {
        json_t *got = NULL;
        cr_assert_eq(store_execution_get(st, ids[i], &got, err), RB_OK, "%s", err);
        cr_assert_str_eq(json_string_value(json_object_get(got, "status")), "error");
        cr_assert_geq(json_integer_value(json_object_get(got, "completed_at")), before);
        json_t *e = json_object_get(got, "error");
        cr_assert_str_eq(json_string_value(json_object_get(e, "ename")), "ServerRestarted");
        cr_assert_str_eq(json_string_value(json_object_get(e, "evalue")), "runboxd restarted");
        cr_assert(json_is_array(json_object_get(e, "traceback")) &&
                  json_array_size(json_object_get(e, "traceback")) == 0);
        cr_assert_str_eq(json_string_value(json_object_get(got, "code")), "print(1)", "other members kept");
        json_decref(got);
    }
    json_t *got = NULL;
    cr_assert_eq(store_execution_get(st, "r", &got, err), RB_OK, "%s", err);
    cr_assert_str_eq(json_string_value(json_object_get(got, "stdout")), "partial");
    cr_assert_eq(json_integer_value(json_object_get(got, "started_at")), 3);
    json_decref(got);
    cr_assert_eq(store_execution_get(st, "c", &got, err), RB_OK, "%s", err);
    assert_json_eq(got, c);
    json_decref(got);

    cr_assert_eq(store_execution_fail_unfinished(st, "again", &changed, err), RB_OK, "%s", err);
    cr_assert_eq(changed, 0);
    cr_assert_eq(store_execution_fail_unfinished(st, "again", NULL, err), RB_OK, "%s", err);
    for (int i = 0; i < 3; i++)
        json_decref(all[i]);
    store_close(st);
}

Test(store, prune)
{
    store *st = sup_store_open(err);
    /* Sessions: old ended (pruned), recently ended (kept), live (kept). */
    json_t *s[] = {session_doc("old", 10, json_integer(100)), session_doc("recent", 10, json_integer(5000)),
                   session_doc("live", 10, NULL)};
    for (int i = 0; i < 3; i++) {
        cr_assert_eq(store_session_put(st, s[i], err), RB_OK, "%s", err);
        json_decref(s[i]);
    }
    struct {
        const char *rid, *sid;
        json_t *completed;
        int kept;
    } ex[] = {
        {"e-old", "old", json_integer(50), 0},           /* ended session, old result */
        {"e-recent-old", "recent", json_integer(50), 0}, /* session ended (not yet pruned), old result */
        {"e-live-old", "live", json_integer(50), 1},     /* live session: its history stays */
        {"e-gone-old", "gone", json_integer(50), 0},     /* session row gone */
        {"e-gone-new", "gone", json_integer(5000), 1},   /* completed recently */
        {"e-gone-unfinished", "gone", NULL, 1},          /* never completed */
    };
    size_t n = sizeof(ex) / sizeof(ex[0]);
    for (size_t i = 0; i < n; i++) {
        json_t *d = exec_doc(ex[i].rid, ex[i].sid, ex[i].completed ? "completed" : "running", 1, ex[i].completed);
        cr_assert_eq(store_execution_put(st, d, err), RB_OK, "%s", err);
        json_decref(d);
    }
    int deleted = -1;
    cr_assert_eq(store_prune(st, 1000, &deleted, err), RB_OK, "%s", err);
    cr_assert_eq(deleted, 4, "3 executions + 1 session, got %d", deleted);

    json_t *got = NULL;
    cr_assert_eq(store_session_get(st, "old", &got, err), RB_ENOTFOUND);
    cr_assert_eq(store_session_get(st, "recent", &got, err), RB_OK, "%s", err);
    json_decref(got);
    cr_assert_eq(store_session_get(st, "live", &got, err), RB_OK, "%s", err);
    json_decref(got);
    for (size_t i = 0; i < n; i++) {
        rb_err e = store_execution_get(st, ex[i].rid, &got, err);
        cr_assert_eq(e, ex[i].kept ? RB_OK : RB_ENOTFOUND, "%s", ex[i].rid);
        json_decref(got);
        got = NULL;
    }
    cr_assert_eq(store_prune(st, 1000, &deleted, err), RB_OK, "%s", err);
    cr_assert_eq(deleted, 0);
    store_close(st);
}

Test(store, meta)
{
    store *st = sup_store_open(err);
    char *v = (char *)1;
    cr_assert_eq(store_meta_get(st, "instance_id", &v, err), RB_ENOTFOUND);
    cr_assert_null(v);
    cr_assert_eq(store_meta_put(st, "instance_id", "abc", err), RB_OK, "%s", err);
    cr_assert_eq(store_meta_get(st, "instance_id", &v, err), RB_OK, "%s", err);
    cr_assert_str_eq(v, "abc");
    free(v);
    cr_assert_eq(store_meta_put(st, "instance_id", "d\xc3\xa9", err), RB_OK, "%s", err);
    cr_assert_eq(store_meta_get(st, "instance_id", &v, err), RB_OK, "%s", err);
    cr_assert_str_eq(v, "d\xc3\xa9");
    free(v);
    cr_assert_eq(store_meta_put(st, "empty", "", err), RB_OK, "%s", err);
    cr_assert_eq(store_meta_get(st, "empty", &v, err), RB_OK, "%s", err);
    cr_assert_str_eq(v, "");
    free(v);
    store_close(st);
}

Test(store, reopen_keeps_data)
{
    store *st = sup_store_open(err);
    json_t *s = session_doc("s1", 1, NULL);
    json_t *x = exec_doc("r1", "s1", "completed", 2, json_integer(3));
    cr_assert_eq(store_session_put(st, s, err), RB_OK, "%s", err);
    cr_assert_eq(store_execution_put(st, x, err), RB_OK, "%s", err);
    cr_assert_eq(store_meta_put(st, "k", "v", err), RB_OK, "%s", err);
    store_checkpoint(st);
    store_close(st);

    st = sup_store_open(err);
    json_t *got = NULL;
    cr_assert_eq(store_session_get(st, "s1", &got, err), RB_OK, "%s", err);
    assert_json_eq(got, s);
    json_decref(got);
    cr_assert_eq(store_execution_get(st, "r1", &got, err), RB_OK, "%s", err);
    assert_json_eq(got, x);
    json_decref(got);
    char *v = NULL;
    cr_assert_eq(store_meta_get(st, "k", &v, err), RB_OK, "%s", err);
    cr_assert_str_eq(v, "v");
    free(v);
    store_close(st);

    /* The file is a real WAL-mode SQLite database with the schema version set. */
    sqlite3 *db = NULL;
    cr_assert_eq(sqlite3_open_v2(sup_db_path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    sqlite3_stmt *q = NULL;
    cr_assert_eq(sqlite3_prepare_v2(db, "PRAGMA journal_mode", -1, &q, NULL), SQLITE_OK);
    cr_assert_eq(sqlite3_step(q), SQLITE_ROW);
    cr_assert_str_eq((const char *)sqlite3_column_text(q, 0), "wal");
    sqlite3_finalize(q);
    cr_assert_eq(sqlite3_prepare_v2(db, "PRAGMA user_version", -1, &q, NULL), SQLITE_OK);
    cr_assert_eq(sqlite3_step(q), SQLITE_ROW);
    cr_assert_geq(sqlite3_column_int(q, 0), 1);
    sqlite3_finalize(q);
    sqlite3_close(db);
    json_decref(s);
    json_decref(x);
}

/* Counts executions as seen by a separate connection (committed data only). */
static int committed_executions(void)
{
    sqlite3 *db = NULL;
    cr_assert_eq(sqlite3_open_v2(sup_db_path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    sqlite3_stmt *q = NULL;
    cr_assert_eq(sqlite3_prepare_v2(db, "SELECT count(*) FROM executions", -1, &q, NULL), SQLITE_OK, "%s",
                 sqlite3_errmsg(db));
    cr_assert_eq(sqlite3_step(q), SQLITE_ROW);
    int n = sqlite3_column_int(q, 0);
    sqlite3_finalize(q);
    sqlite3_close(db);
    return n;
}

Test(store, begin_commit_nesting)
{
    store *st = sup_store_open(err);
    cr_assert_eq(store_commit(st, err), RB_EINTERNAL, "commit without begin");

    cr_assert_eq(store_begin(st, err), RB_OK, "%s", err);
    json_t *a = exec_doc("a", "s", "queued", 1, NULL);
    cr_assert_eq(store_execution_put(st, a, err), RB_OK, "%s", err);
    cr_assert_eq(store_begin(st, err), RB_OK, "%s", err);
    json_t *b = exec_doc("b", "s", "queued", 2, NULL);
    cr_assert_eq(store_execution_put(st, b, err), RB_OK, "%s", err);
    /* fail_unfinished uses its own savepoint inside the caller's transaction. */
    int changed = 0;
    cr_assert_eq(store_execution_fail_unfinished(st, "m", &changed, err), RB_OK, "%s", err);
    cr_assert_eq(changed, 2);
    cr_assert_eq(store_commit(st, err), RB_OK, "%s", err);

    /* Inner commit did nothing: our connection sees the rows, another does not. */
    json_t *got = NULL;
    cr_assert_eq(store_execution_get(st, "b", &got, err), RB_OK, "%s", err);
    json_decref(got);
    cr_assert_eq(committed_executions(), 0);

    cr_assert_eq(store_commit(st, err), RB_OK, "%s", err);
    cr_assert_eq(committed_executions(), 2);

    /* Outside any transaction each put commits by itself. */
    json_t *c = exec_doc("c", "s", "queued", 3, NULL);
    cr_assert_eq(store_execution_put(st, c, err), RB_OK, "%s", err);
    cr_assert_eq(committed_executions(), 3);
    cr_assert_eq(store_commit(st, err), RB_EINTERNAL);

    /* An unbalanced begin is rolled back at close. */
    cr_assert_eq(store_begin(st, err), RB_OK, "%s", err);
    json_t *d = exec_doc("d", "s", "queued", 4, NULL);
    cr_assert_eq(store_execution_put(st, d, err), RB_OK, "%s", err);
    store_close(st);
    cr_assert_eq(committed_executions(), 3);
    json_decref(a);
    json_decref(b);
    json_decref(c);
    json_decref(d);
}

Test(store, invalid_documents)
{
    store *st = sup_store_open(err);
    struct {
        const char *json, *member;
    } sessions[] = {
        {"[]", "object"},
        {"{\"status\":\"ready\",\"created_at\":1,\"last_used_at\":1}", "session_id"},
        {"{\"session_id\":5,\"status\":\"ready\",\"created_at\":1,\"last_used_at\":1}", "session_id"},
        {"{\"session_id\":\"\",\"status\":\"ready\",\"created_at\":1,\"last_used_at\":1}", "session_id"},
        {"{\"session_id\":\"s\",\"status\":null,\"created_at\":1,\"last_used_at\":1}", "status"},
        {"{\"session_id\":\"s\",\"status\":\"ready\",\"created_at\":\"1\",\"last_used_at\":1}", "created_at"},
        {"{\"session_id\":\"s\",\"status\":\"ready\",\"created_at\":1.5,\"last_used_at\":1}", "created_at"},
        {"{\"session_id\":\"s\",\"status\":\"ready\",\"created_at\":1}", "last_used_at"},
        {"{\"session_id\":\"s\",\"status\":\"ready\",\"created_at\":1,\"last_used_at\":1,\"container_id\":7}",
         "container_id"},
        {"{\"session_id\":\"s\",\"status\":\"ready\",\"created_at\":1,\"last_used_at\":1,\"ended_at\":\"x\"}",
         "ended_at"},
    };
    for (size_t i = 0; i < sizeof(sessions) / sizeof(sessions[0]); i++) {
        json_t *d = json_loads(sessions[i].json, JSON_DECODE_ANY, NULL);
        cr_assert_not_null(d);
        err[0] = '\0';
        cr_assert_eq(store_session_put(st, d, err), RB_EINVAL, "%s", sessions[i].json);
        cr_assert(strstr(err, sessions[i].member) != NULL, "error for %s does not name %s: %s", sessions[i].json,
                  sessions[i].member, err);
        json_decref(d);
    }
    cr_assert_eq(store_session_put(st, NULL, err), RB_EINVAL);

    struct {
        const char *json, *member;
    } execs[] = {
        {"\"str\"", "object"},
        {"{\"session_id\":\"s\",\"status\":\"queued\",\"created_at\":1}", "request_id"},
        {"{\"request_id\":\"r\",\"status\":\"queued\",\"created_at\":1}", "session_id"},
        {"{\"request_id\":\"r\",\"session_id\":\"s\",\"status\":[],\"created_at\":1}", "status"},
        {"{\"request_id\":\"r\",\"session_id\":\"s\",\"status\":\"queued\"}", "created_at"},
        {"{\"request_id\":\"r\",\"session_id\":\"s\",\"status\":\"queued\",\"created_at\":1,\"started_at\":true}",
         "started_at"},
        {"{\"request_id\":\"r\",\"session_id\":\"s\",\"status\":\"queued\",\"created_at\":1,\"completed_at\":{}}",
         "completed_at"},
        {"{\"request_id\":\"r\",\"session_id\":\"s\",\"status\":\"queued\",\"created_at\":1,\"code\":1}", "code"},
    };
    for (size_t i = 0; i < sizeof(execs) / sizeof(execs[0]); i++) {
        json_t *d = json_loads(execs[i].json, JSON_DECODE_ANY, NULL);
        cr_assert_not_null(d);
        err[0] = '\0';
        cr_assert_eq(store_execution_put(st, d, err), RB_EINVAL, "%s", execs[i].json);
        cr_assert(strstr(err, execs[i].member) != NULL, "error for %s does not name %s: %s", execs[i].json,
                  execs[i].member, err);
        json_decref(d);
    }
    /* A NUL inside an id would be cut by the column: refused. */
    json_t *d = exec_doc("r", "s", "queued", 1, NULL);
    json_object_set_new(d, "request_id", json_stringn("r\0x", 3));
    cr_assert_eq(store_execution_put(st, d, err), RB_EINVAL);
    cr_assert(strstr(err, "request_id") != NULL, "%s", err);
    json_decref(d);

    /* Nothing was written. */
    json_t *list = NULL;
    cr_assert_eq(store_session_list(st, 1, &list, err), RB_OK, "%s", err);
    cr_assert_eq(json_array_size(list), 0);
    json_decref(list);
    store_close(st);
}

Test(store, second_opener_is_refused)
{
    store *st = sup_store_open(err);
    store *st2 = (store *)1;
    cr_assert_eq(store_open(sup_db_path, &st2, err), RB_ESTORE);
    cr_assert_null(st2);
    char pid[32];
    snprintf(pid, sizeof(pid), "pid %ld", (long)getpid());
    cr_assert(strstr(err, "in use by another runboxd") != NULL, "%s", err);
    cr_assert(strstr(err, sup_db_path) != NULL, "%s", err);
    cr_assert(strstr(err, pid) != NULL, "%s", err);

    /* Another process is refused too. */
    fflush(NULL);
    pid_t child = fork();
    cr_assert_geq(child, 0);
    if (child == 0) {
        store *c = NULL;
        char cerr[RB_ERR_LEN];
        rb_err e = store_open(sup_db_path, &c, cerr);
        _exit(e == RB_ESTORE && c == NULL && strstr(cerr, "in use") != NULL ? 0 : 1);
    }
    int status = 0;
    cr_assert_eq(waitpid(child, &status, 0), child);
    cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child could open a locked database");

    /* Once the first closes, the database opens again. */
    store_close(st);
    st = sup_store_open(err);
    store_close(st);
}

Test(store, corrupt_and_foreign_files)
{
    /* A text file. */
    FILE *f = fopen(sup_db_path, "w");
    cr_assert_not_null(f);
    for (int i = 0; i < 200; i++)
        fputs("this is not a database at all, just some text\n", f);
    fclose(f);
    store *st = (store *)1;
    cr_assert_eq(store_open(sup_db_path, &st, err), RB_ESTORE);
    cr_assert_null(st);
    cr_assert(strstr(err, sup_db_path) != NULL, "%s", err);
    cr_assert(strstr(err, "not a database") != NULL, "%s", err);
    unlink(sup_db_path);

    /* A real runbox database whose schema page is overwritten. */
    st = sup_store_open(err);
    json_t *s = session_doc("s1", 1, NULL);
    cr_assert_eq(store_session_put(st, s, err), RB_OK, "%s", err);
    json_decref(s);
    store_close(st);
    int fd = open(sup_db_path, O_WRONLY);
    cr_assert_geq(fd, 0);
    char junk[3900];
    memset(junk, 0xA5, sizeof(junk));
    cr_assert_eq(pwrite(fd, junk, sizeof(junk), 100), (ssize_t)sizeof(junk));
    close(fd);
    rb_err e = store_open(sup_db_path, &st, err);
    cr_assert_eq(e, RB_ESTORE, "a corrupt schema page must fail at open");
    cr_assert(strstr(err, sup_db_path) != NULL, "%s", err);
    cr_log_info("corrupt file: %s", err);
    unlink(sup_db_path);

    /* Another program's SQLite database. */
    sqlite3 *db = NULL;
    cr_assert_eq(sqlite3_open(sup_db_path, &db), SQLITE_OK);
    cr_assert_eq(sqlite3_exec(db, "CREATE TABLE foo(x)", NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(db);
    cr_assert_eq(store_open(sup_db_path, &st, err), RB_ESTORE);
    cr_assert(strstr(err, "another program") != NULL, "%s", err);
    unlink(sup_db_path);

    /* A runbox database from a newer runboxd. */
    st = sup_store_open(err);
    store_close(st);
    cr_assert_eq(sqlite3_open(sup_db_path, &db), SQLITE_OK);
    cr_assert_eq(sqlite3_exec(db, "PRAGMA user_version=999", NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(db);
    cr_assert_eq(store_open(sup_db_path, &st, err), RB_ESTORE);
    cr_assert(strstr(err, "upgrade runboxd") != NULL, "%s", err);
}

Test(store, missing_directory_is_named)
{
    char path[256];
    snprintf(path, sizeof(path), "%s/no/such/runbox.db", sup_dir);
    store *st = (store *)1;
    cr_assert_eq(store_open(path, &st, err), RB_ESTORE);
    cr_assert_null(st);
    char missing[200];
    snprintf(missing, sizeof(missing), "directory %s/no/such ", sup_dir);
    cr_assert(strstr(err, missing) != NULL, "%s", err);
    struct stat sb;
    cr_assert_neq(stat(path, &sb), 0, "nothing created");

    cr_assert_eq(store_open("", &st, err), RB_EINVAL);
}

Test(store, memory_database)
{
    store *st = NULL;
    cr_assert_eq(store_open(":memory:", &st, err), RB_OK, "%s", err);
    json_t *s = session_doc("m", 1, NULL);
    cr_assert_eq(store_session_put(st, s, err), RB_OK, "%s", err);
    json_t *got = NULL;
    cr_assert_eq(store_session_get(st, "m", &got, err), RB_OK, "%s", err);
    assert_json_eq(got, s);
    json_decref(got);
    json_decref(s);
    store_checkpoint(st);
    store_close(st);
    store_close(NULL);
}

static off_t file_size(const char *path)
{
    struct stat sb;
    cr_assert_eq(stat(path, &sb), 0, "%s", path);
    return sb.st_size;
}

/* Autocheckpoint is off: writes stay in the WAL until store_checkpoint copies them back. */
Test(store, checkpoint_is_manual)
{
    store *st = sup_store_open(err);
    char wal[160];
    snprintf(wal, sizeof(wal), "%s-wal", sup_db_path);
    off_t before = file_size(sup_db_path);
    char rid[32];
    for (int i = 0; i < 1500; i++) { /* > 1000 pages: past SQLite's default autocheckpoint */
        snprintf(rid, sizeof(rid), "r%d", i);
        json_t *d = exec_doc(rid, "s", "queued", i, NULL);
        json_object_set_new(d, "pad", json_string("................................................................"));
        cr_assert_eq(store_execution_put(st, d, err), RB_OK, "%s", err);
        json_decref(d);
    }
    cr_assert_eq(file_size(sup_db_path), before, "the main file changed without a checkpoint");
    cr_assert_gt(file_size(wal), 1000 * 4096);
    store_checkpoint(st);
    cr_assert_gt(file_size(sup_db_path), before, "store_checkpoint did not copy the WAL back");
    store_close(st);
}

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

/* Prints put/get latency; asserts only correctness (the machine is noisy). */
Test(store, put_latency_benchmark)
{
    store *st = sup_store_open(err);
    enum { N = 2000 };
    char rid[32];
    json_t *doc = exec_doc("r", "s", "queued", 1, NULL);
    json_object_set_new(doc, "code", json_string("import math\nfor i in range(10):\n    print(math.sqrt(i))\n"));

    /* New executions, each its own transaction (the per-call path). */
    double t0 = now_us();
    for (int i = 0; i < N; i++) {
        snprintf(rid, sizeof(rid), "req-%08d", i);
        json_object_set_new(doc, "request_id", json_string(rid));
        json_object_set_new(doc, "created_at", json_integer(i));
        cr_assert_eq(store_execution_put(st, doc, err), RB_OK, "%s", err);
    }
    double t_insert = (now_us() - t0) / N;
    t0 = now_us();
    store_checkpoint(st); /* what core's timer does; timed apart from the puts */
    double t_ckpt = now_us() - t0;

    /* State changes of one execution: queued -> running -> output ... (updates in place). */
    json_object_set_new(doc, "request_id", json_string("req-00000007"));
    json_object_set_new(doc, "created_at", json_integer(7));
    json_object_set_new(doc, "status", json_string("running"));
    json_object_set_new(doc, "started_at", json_integer(5));
    t0 = now_us();
    for (int i = 0; i < N; i++) {
        json_object_set_new(doc, "stdout", json_integer(i));
        cr_assert_eq(store_execution_put(st, doc, err), RB_OK, "%s", err);
    }
    double t_update = (now_us() - t0) / N;

    t0 = now_us();
    for (int i = 0; i < N; i++) {
        json_t *got = NULL;
        snprintf(rid, sizeof(rid), "req-%08d", i);
        cr_assert_eq(store_execution_get(st, rid, &got, err), RB_OK, "%s", err);
        json_decref(got);
    }
    double t_get = (now_us() - t0) / N;

    json_t *got = NULL;
    cr_assert_eq(store_execution_get(st, "req-00000007", &got, err), RB_OK, "%s", err);
    assert_json_eq(got, doc);
    json_decref(got);
    char *text = json_dumps(doc, JSON_COMPACT);
    size_t doc_len = strlen(text);
    free(text);
    json_decref(doc);
    fprintf(stderr,
            "store benchmark (%d ops, %zu-byte doc): insert %.1f us/put, update %.1f us/put, get %.1f us, checkpoint "
            "of %d inserts %.0f us\n",
            N, doc_len, t_insert, t_update, t_get, N, t_ckpt);
    store_close(st);
}

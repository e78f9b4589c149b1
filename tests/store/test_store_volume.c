/*
 * test_store_volume.c: the volumes table of store/ (core/volumes/) against real SQLite files in
 * a fresh mkdtemp directory per test: round trip across a close and reopen, one name per owner,
 * the columns that cannot change, listing order, deletion, the migration of a version-2
 * database (made by the release before volumes).
 */
#include <criterion/criterion.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "store/store.h"
#include "support_store.h"

static char err[RB_ERR_LEN];

static void setup(void)
{
    sup_tmpdir_open("store-volume");
    err[0] = '\0';
}

TestSuite(store_volume, .init = setup, .fini = sup_tmpdir_close);

static json_t *vol(const char *id, const char *owner, const char *name, int64_t created)
{
    return json_pack("{s:s, s:s, s:s, s:I, s:I, s:I, s:b}", "volume_id", id, "owner", owner, "name", name,
                     "created_at", (json_int_t)created, "quota_bytes", (json_int_t)1000, "used_bytes",
                     (json_int_t)0, "over_quota", 0);
}

Test(store_volume, round_trip_survives_reopen_and_updates_keep_the_row)
{
    store *st = sup_store_open(err);
    json_t *d = vol("vol_1", "", "data", 1000);
    cr_assert_eq(store_volume_put(st, d, err), RB_OK, "%s", err);
    store_close(st);

    st = sup_store_open(err);
    json_t *got = NULL;
    cr_assert_eq(store_volume_get(st, "vol_1", &got, err), RB_OK, "%s", err);
    cr_assert(json_equal(got, d), "stored document differs");
    json_decref(got);
    json_object_set_new(d, "used_bytes", json_integer(1234));
    json_object_set_new(d, "over_quota", json_true());
    cr_assert_eq(store_volume_put(st, d, err), RB_OK, "%s", err);
    cr_assert_eq(store_volume_get(st, "vol_1", &got, err), RB_OK, "%s", err);
    cr_assert_eq(json_integer_value(json_object_get(got, "used_bytes")), 1234);
    cr_assert(json_is_true(json_object_get(got, "over_quota")));
    json_decref(got);

    /* owner, name and created_at are the row's identity */
    json_object_set_new(d, "name", json_string("renamed"));
    cr_assert_eq(store_volume_put(st, d, err), RB_EINVAL);
    cr_assert(strstr(err, "cannot change") != NULL, "%s", err);
    json_decref(d);

    cr_assert_eq(store_volume_delete(st, "vol_1", err), RB_OK, "%s", err);
    cr_assert_eq(store_volume_get(st, "vol_1", &got, err), RB_ENOTFOUND);
    cr_assert_eq(store_volume_delete(st, "vol_1", err), RB_OK, "deleting twice is no error");
    store_close(st);
}

Test(store_volume, one_name_per_owner_and_listing_oldest_first)
{
    store *st = sup_store_open(err);
    json_t *a = vol("vol_a", "alice", "data", 3000), *b = vol("vol_b", "bob", "data", 1000),
           *c = vol("vol_c", "alice", "data", 2000), *d = vol("vol_d", "alice", "other", 2000);
    cr_assert_eq(store_volume_put(st, a, err), RB_OK, "%s", err);
    cr_assert_eq(store_volume_put(st, b, err), RB_OK, "another owner may use the name: %s", err);
    cr_assert_eq(store_volume_put(st, c, err), RB_ECONFLICT);
    cr_assert(strstr(err, "'data' exists already") != NULL, "%s", err);
    cr_assert_eq(store_volume_put(st, d, err), RB_OK, "%s", err);
    json_t *list = NULL;
    cr_assert_eq(store_volume_list(st, &list, err), RB_OK, "%s", err);
    cr_assert_eq(json_array_size(list), 3);
    const char *want[] = {"vol_b", "vol_d", "vol_a"};
    for (size_t i = 0; i < 3; i++)
        cr_assert_str_eq(json_string_value(json_object_get(json_array_get(list, i), "volume_id")), want[i]);
    json_decref(list);
    json_decref(a);
    json_decref(b);
    json_decref(c);
    json_decref(d);
    store_close(st);
}

Test(store_volume, a_document_without_its_columns_is_refused)
{
    store *st = sup_store_open(err);
    json_t *d = json_pack("{s:s, s:s, s:I}", "volume_id", "vol_x", "name", "x", "created_at", (json_int_t)1);
    cr_assert_eq(store_volume_put(st, d, err), RB_EINVAL);
    cr_assert(strstr(err, "owner") != NULL, "%s", err);
    json_decref(d);
    store_close(st);
}

Test(store_volume, migrates_a_version_2_database)
{
    /* the schema of the release before volumes, as it wrote it */
    sqlite3 *db = NULL;
    cr_assert_eq(sqlite3_open(sup_db_path, &db), SQLITE_OK);
    store *st = sup_store_open(err);
    store_close(st);
    cr_assert_eq(sqlite3_exec(db, "DROP TABLE volumes; DROP TABLE audit; PRAGMA user_version=2;", NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(db);

    st = sup_store_open(err);
    json_t *d = vol("vol_m", "", "after", 5);
    cr_assert_eq(store_volume_put(st, d, err), RB_OK, "%s", err);
    json_decref(d);
    store_close(st);
    cr_assert_eq(sqlite3_open(sup_db_path, &db), SQLITE_OK);
    sqlite3_stmt *q = NULL;
    cr_assert_eq(sqlite3_prepare_v2(db, "PRAGMA user_version", -1, &q, NULL), SQLITE_OK);
    cr_assert_eq(sqlite3_step(q), SQLITE_ROW);
    cr_assert_geq(sqlite3_column_int(q, 0), 3);
    sqlite3_finalize(q);
    sqlite3_close(db);
}

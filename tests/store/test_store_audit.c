/*
 * test_store_audit.c: the audit table of store/ (core/audit/) against real SQLite files in a
 * fresh mkdtemp directory per test: events come back in order with their seq across a reopen,
 * each filter and their combination select, pages continue after the last seq, pruning by age
 * and by count, and malformed events are refused.
 */
#include <criterion/criterion.h>

#include <stdio.h>
#include <string.h>

#include "store/store.h"
#include "support_store.h"

static char err[RB_ERR_LEN];

static void setup(void)
{
    sup_tmpdir_open("store-audit");
    err[0] = '\0';
}

TestSuite(store_audit, .init = setup, .fini = sup_tmpdir_close);

static void add(store *st, int64_t at, const char *key, const char *session, const char *kind, int n)
{
    json_t *d = json_pack("{s:I, s:s, s:s, s:i}", "at", (json_int_t)at, "key", key, "kind", kind, "n", n);
    if (session != NULL)
        json_object_set_new(d, "session", json_string(session));
    cr_assert_eq(store_audit_add(st, d, err), RB_OK, "%s", err);
    json_decref(d);
}

static json_t *query(store *st, store_audit_filter f)
{
    json_t *out = NULL;
    if (f.limit == 0)
        f.limit = 100;
    cr_assert_eq(store_audit_query(st, &f, &out, err), RB_OK, "%s", err);
    return out;
}

static int n_of(json_t *a, size_t i)
{
    return (int)json_integer_value(json_object_get(json_array_get(a, i), "n"));
}

Test(store_audit, events_come_back_in_order_and_filters_select)
{
    store *st = sup_store_open(err);
    add(st, 1000, "alice", "s_1", "execution", 1);
    add(st, 2000, "bob", "s_2", "execution", 2);
    add(st, 3000, "alice", "s_1", "file_upload", 3);
    add(st, 4000, "alice", NULL, "session_created", 4);
    store_close(st);
    st = sup_store_open(err);
    json_t *all = query(st, (store_audit_filter){0});
    cr_assert_eq(json_array_size(all), 4);
    for (size_t i = 0; i < 4; i++)
        cr_assert_eq(n_of(all, i), (int)i + 1);
    int64_t seq1 = json_integer_value(json_object_get(json_array_get(all, 0), "seq"));
    cr_assert(seq1 > 0);
    cr_assert_str_eq(json_string_value(json_object_get(json_array_get(all, 1), "key")), "bob");
    json_decref(all);

    json_t *a = query(st, (store_audit_filter){.key = "alice"});
    cr_assert_eq(json_array_size(a), 3);
    json_decref(a);
    a = query(st, (store_audit_filter){.key = "alice", .session = "s_1", .kind = "file_upload"});
    cr_assert_eq(json_array_size(a), 1);
    cr_assert_eq(n_of(a, 0), 3);
    json_decref(a);
    a = query(st, (store_audit_filter){.since = 2000, .until = 4000});
    cr_assert_eq(json_array_size(a), 2, "since is inclusive, until exclusive");
    cr_assert_eq(n_of(a, 0), 2);
    json_decref(a);
    /* pages: two at a time, the next after the last seq */
    a = query(st, (store_audit_filter){.limit = 2});
    cr_assert_eq(json_array_size(a), 2);
    int64_t last = json_integer_value(json_object_get(json_array_get(a, 1), "seq"));
    json_decref(a);
    a = query(st, (store_audit_filter){.limit = 2, .after = last});
    cr_assert_eq(json_array_size(a), 2);
    cr_assert_eq(n_of(a, 0), 3);
    json_decref(a);
    a = query(st, (store_audit_filter){.key = "nobody"});
    cr_assert_eq(json_array_size(a), 0);
    json_decref(a);
    store_audit_filter bad = {.limit = 10001};
    cr_assert_eq(store_audit_query(st, &bad, &a, err), RB_EINVAL);
    store_close(st);
}

Test(store_audit, pruning_by_age_and_by_count)
{
    store *st = sup_store_open(err);
    for (int i = 1; i <= 10; i++)
        add(st, i * 1000, "k", NULL, "execution", i);
    int removed = -1;
    cr_assert_eq(store_audit_prune(st, 3500, 0, &removed, err), RB_OK, "%s", err);
    cr_assert_eq(removed, 3);
    cr_assert_eq(store_audit_prune(st, 0, 4, &removed, err), RB_OK, "%s", err);
    cr_assert_eq(removed, 3, "7 left, the newest 4 kept");
    json_t *a = query(st, (store_audit_filter){0});
    cr_assert_eq(json_array_size(a), 4);
    cr_assert_eq(n_of(a, 0), 7);
    cr_assert_eq(n_of(a, 3), 10);
    json_decref(a);
    /* seq goes on growing after pruning: a page cursor never meets an old number again */
    add(st, 11000, "k", NULL, "execution", 11);
    a = query(st, (store_audit_filter){0});
    cr_assert(json_integer_value(json_object_get(json_array_get(a, 4), "seq")) >
              json_integer_value(json_object_get(json_array_get(a, 3), "seq")));
    json_decref(a);
    store_close(st);
}

Test(store_audit, malformed_events_are_refused)
{
    store *st = sup_store_open(err);
    json_t *bad[] = {json_pack("{s:s, s:s}", "key", "k", "kind", "x"), json_pack("{s:I, s:s}", "at", 1, "kind", "x"),
                     json_pack("{s:I, s:s, s:s}", "at", 1, "key", "k", "kind", ""),
                     json_pack("{s:I, s:s, s:s, s:i}", "at", 1, "key", "k", "kind", "x", "session", 5),
                     json_array()};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        cr_assert_eq(store_audit_add(st, bad[i], err), RB_EINVAL, "accepted %zu", i);
        json_decref(bad[i]);
    }
    json_t *a = query(st, (store_audit_filter){0});
    cr_assert_eq(json_array_size(a), 0);
    json_decref(a);
    store_close(st);
}

/*
 * Tests of how core/execution.c saves a finished execution when the store misbehaves, against
 * the real Docker engine, the sandbox image and a real SQLite file. The store's transaction
 * calls are wrapped at link time (-Wl,--wrap=store_begin,--wrap=store_commit, set for this
 * binary in CMakeLists.txt): the wrappers fail store_begin on demand and count whether every
 * store_commit matches a store_begin that succeeded; everything else is the real store.
 */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "core/core.h"
#include "store/store.h"
#include "support_core.h"

rb_err __real_store_begin(store *st, char *err);
rb_err __real_store_commit(store *st, char *err);
rb_err __wrap_store_begin(store *st, char *err);
rb_err __wrap_store_commit(store *st, char *err);

static int failing;    /* store_begin fails while set */
static int failed;     /* store_begin calls that failed (injected) */
static int open_txs;   /* store_begin calls that succeeded and await their store_commit */
static int unbalanced; /* store_commit calls without a store_begin that succeeded */

rb_err __wrap_store_begin(store *st, char *err)
{
    if (failing) {
        failed++;
        return rb_fail(RB_ESTORE, err, "store: injected failure of BEGIN (the database is locked)");
    }
    rb_err e = __real_store_begin(st, err);
    open_txs += e == RB_OK;
    return e;
}

rb_err __wrap_store_commit(store *st, char *err)
{
    if (open_txs == 0)
        unbalanced++;
    else
        open_txs--;
    return __real_store_commit(st, err);
}

static void setup(void)
{
    sup_fixture_open("execution", RB_LOG_ERROR);
    failing = failed = open_txs = unbalanced = 0;
}

static void teardown(void)
{
    sup_fixture_close();
}

TestSuite(execution, .init = setup, .fini = teardown, .timeout = 120);

Test(execution, a_result_is_saved_without_a_transaction_when_store_begin_fails)
{
    char err[RB_ERR_LEN];
    rb_core *c = sup_core_open();
    char *sid = sup_session_create_id(c, NULL);

    failing = 1; /* the transaction the finished execution's row is written in cannot open */
    json_t *r = sup_run_code(c, sid, "print('kept')\n6 * 7", 0);
    failing = 0;
    cr_assert_str_eq(sup_str(r, "status"), "completed", "the caller hears the result as usual");
    cr_assert_str_eq(sup_str(r, "stdout"), "kept\n");
    char *rid = strdup(sup_str(r, "request_id"));
    json_decref(r);
    cr_assert_geq(failed, 1, "store_begin was never called while it failed");
    cr_expect_eq(unbalanced, 0, "store_commit ran %d time(s) for a transaction that never opened", unbalanced);

    /* the row was written on its own: a new core on the same database reads it */
    sup_core_close(c, 15000);
    c = sup_core_open();
    json_t *doc = NULL;
    cr_assert_eq(core_execution_results(c, NULL, rid, &doc, err), RB_OK, "%s", err);
    cr_expect_str_eq(sup_str(doc, "status"), "completed");
    cr_expect_str_eq(sup_str(doc, "stdout"), "kept\n");
    cr_expect_str_eq(sup_str(doc, "result"), "42");
    json_decref(doc);
    free(rid);
    sup_session_delete(c, sid);
    free(sid);
    sup_core_close(c, 15000);
}

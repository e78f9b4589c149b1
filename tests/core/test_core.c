/*
 * Tests of core/ against the real Docker engine, the real sandbox image and a real SQLite
 * file: sessions, executions, queueing, timeouts, cancel, watches, persistence and recovery
 * across a core_free/core_new cycle. Requires runbox-sandbox:latest (docker/build-images).
 */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/core.h"
#include "support_core.h"

static void setup(void)
{
    sup_fixture_open("core", RB_LOG_WARN);
}

static void teardown(void)
{
    sup_fixture_close();
}

TestSuite(core, .init = setup, .fini = teardown, .timeout = 120);

/* Stops the pool and frees the core; container removals get 15 s. */
static void close_core(rb_core *c)
{
    sup_core_close(c, 15000);
}

Test(core, state_persists_and_results_are_structured)
{
    char err[RB_ERR_LEN];
    rb_core *c = sup_core_open();
    char *sid = sup_session_create_id(c, NULL);

    json_t *r = sup_run_code(c, sid, "x = 42", 0);
    cr_assert_str_eq(sup_str(r, "status"), "completed");
    json_decref(r);
    r = sup_run_code(c, sid, "import sys\nprint(x)\nprint('oops', file=sys.stderr)\nx + 1", 0);
    cr_assert_str_eq(sup_str(r, "status"), "completed");
    cr_assert_str_eq(sup_str(r, "stdout"), "42\n");
    cr_assert_str_eq(sup_str(r, "stderr"), "oops\n");
    cr_assert_str_eq(sup_str(r, "result"), "43");
    json_decref(r);

    r = sup_run_code(c, sid, "1/0", 0);
    cr_assert_str_eq(sup_str(r, "status"), "error");
    json_t *e = json_object_get(r, "error");
    cr_assert_str_eq(sup_str(e, "ename"), "ZeroDivisionError");
    json_decref(r);

    json_t *out;
    cr_assert_eq(core_session_delete(c, NULL, sid, &out, err), RB_OK, "%s", err);
    cr_assert_str_eq(sup_str(out, "status"), "ended");
    json_decref(out);
    cr_assert_eq(core_session_delete(c, NULL, sid, &out, err), RB_ENOTFOUND);
    json_t *req = json_pack("{s:s, s:s}", "session_id", sid, "code", "1");
    cr_assert_eq(core_execute(c, NULL, req, &out, err), RB_ECONFLICT);
    json_decref(req);
    free(sid);
    close_core(c);
}

Test(core, timeout_interrupts_and_session_continues)
{
    rb_core *c = sup_core_open();
    char *sid = sup_session_create_id(c, NULL);
    json_t *r = sup_run_code(c, sid, "y = 7", 0);
    json_decref(r);
    r = sup_run_code(c, sid, "while True: pass", 1.5);
    cr_assert_str_eq(sup_str(r, "status"), "timeout");
    cr_assert(json_is_false(json_object_get(r, "reset")));
    json_decref(r);
    r = sup_run_code(c, sid, "print(y)", 0);
    cr_assert_str_eq(sup_str(r, "stdout"), "7\n");
    json_decref(r);
    r = sup_run_code(c, sid,
                     "import time\nwhile True:\n    try:\n        time.sleep(10)\n    except KeyboardInterrupt:\n"
                     "        pass",
                     1);
    cr_assert_str_eq(sup_str(r, "status"), "timeout");
    cr_assert(json_is_true(json_object_get(r, "reset")), "an uninterruptible loop must reset the worker");
    cr_assert(json_is_string(json_object_get(r, "reset_reason")));
    json_decref(r);
    r = sup_run_code(c, sid, "print('alive')", 0);
    cr_assert_str_eq(sup_str(r, "stdout"), "alive\n");
    json_decref(r);
    sup_session_delete(c, sid);
    free(sid);
    close_core(c);
}

Test(core, executions_queue_in_order_and_cancel)
{
    char err[RB_ERR_LEN];
    rb_core *c = sup_core_open();
    char *sid = sup_session_create_id(c, NULL);
    const char *codes[] = {"import time; time.sleep(0.5); seq = [1]", "seq.append(2)", "seq.append(3)", "print(seq)"};
    char ids[4][64];
    for (int i = 0; i < 4; i++) {
        json_t *req = json_pack("{s:s, s:s}", "session_id", sid, "code", codes[i]), *st;
        cr_assert_eq(core_execute(c, NULL, req, &st, err), RB_OK, "%s", err);
        snprintf(ids[i], sizeof(ids[i]), "%s", sup_str(st, "request_id"));
        json_decref(req);
        json_decref(st);
    }
    /* cancel the third while it is still queued */
    json_t *st;
    cr_assert_eq(core_execution_cancel(c, NULL, ids[2], &st, err), RB_OK, "%s", err);
    cr_assert_str_eq(sup_str(st, "status"), "cancelled");
    json_decref(st);
    sup_watch w = {0};
    cr_assert_eq(core_watch_start(c, NULL, ids[3], 1, sup_watch_cb, &w, NULL, err), RB_OK);
    sup_run_until(&w.done, 30000);
    cr_assert(w.done);
    cr_assert_str_eq(sup_str(w.final, "stdout"), "[1, 2]\n");
    json_decref(w.final);
    cr_assert_eq(core_execution_cancel(c, NULL, ids[3], &st, err), RB_ECONFLICT);
    sup_session_delete(c, sid);
    free(sid);
    close_core(c);
}

Test(core, validation_errors_name_the_field)
{
    char err[RB_ERR_LEN];
    rb_core *c = sup_core_open();
    sup_result r = {0};
    json_t *opts = json_loads("{\"language\": \"cobol\"}", 0, NULL);
    cr_assert_eq(core_session_create(c, NULL, opts, sup_op_cb, &r, NULL, err), RB_EINVAL);
    cr_assert(strstr(err, "language") != NULL, "%s", err);
    json_decref(opts);
    opts = json_loads("{\"execution_options\": {\"memory_limit\": \"lots\"}}", 0, NULL);
    cr_assert_eq(core_session_create(c, NULL, opts, sup_op_cb, &r, NULL, err), RB_EINVAL);
    cr_assert(strstr(err, "memory_limit") != NULL, "%s", err);
    json_decref(opts);
    json_t *req = json_pack("{s:s, s:i}", "session_id", "s_nope", "code", 1), *out;
    cr_assert_eq(core_execute(c, NULL, req, &out, err), RB_EINVAL);
    cr_assert(strstr(err, "code") != NULL, "%s", err);
    json_decref(req);
    req = json_pack("{s:s, s:s}", "session_id", "s_nope", "code", "1");
    cr_assert_eq(core_execute(c, NULL, req, &out, err), RB_ENOTFOUND);
    json_decref(req);
    cr_assert_eq(core_execution_status(c, NULL, "e_nope", &out, err), RB_ENOTFOUND);
    cr_assert_eq(r.done, 0, "a synchronous failure must not call back");
    close_core(c);
}

Test(core, sessions_survive_restart)
{
    char err[RB_ERR_LEN];
    rb_core *c = sup_core_open();
    char *sid = sup_session_create_id(c, NULL);
    json_t *r = sup_run_code(c, sid, "kept = 'yes'", 0);
    json_decref(r);
    /* a cell still running when the server goes away */
    json_t *req = json_pack("{s:s, s:s}", "session_id", sid, "code", "import time\ntime.sleep(60)"), *st;
    cr_assert_eq(core_execute(c, NULL, req, &st, err), RB_OK, "%s", err);
    json_decref(req);
    char stale[64];
    snprintf(stale, sizeof(stale), "%s", sup_str(st, "request_id"));
    json_decref(st);
    int never = 0;
    sup_run_until(&never, 300);
    core_stop(c);
    core_free(c);
    uv_run(&sup_loop, UV_RUN_DEFAULT);

    c = sup_core_open();
    /* the session reattaches in the background; an execution queues until it is ready */
    r = sup_run_code(c, sid, "print(kept)", 0);
    cr_assert_str_eq(sup_str(r, "status"), "completed", "%s", json_dumps(r, 0));
    cr_assert_str_eq(sup_str(r, "stdout"), "yes\n");
    json_decref(r);
    cr_assert_eq(core_execution_results(c, NULL, stale, &r, err), RB_OK, "%s", err);
    cr_assert_str_eq(sup_str(r, "status"), "error");
    cr_assert(strstr(sup_str(json_object_get(r, "error"), "evalue"), "server restarted") != NULL);
    json_decref(r);
    sup_session_delete(c, sid);
    free(sid);
    close_core(c);
}

Test(core, output_streams_plots_and_bash)
{
    char err[RB_ERR_LEN];
    rb_core *c = sup_core_open();
    char *sid = sup_session_create_id(c, NULL);
    /* output arrives as events while the cell runs, before done */
    json_t *req = json_pack("{s:s, s:s}", "session_id", sid, "code",
                            "import time\nfor i in range(3):\n    print(i, flush=True)\n    time.sleep(0.3)"),
           *st;
    cr_assert_eq(core_execute(c, NULL, req, &st, err), RB_OK, "%s", err);
    json_decref(req);
    sup_watch w = {0};
    cr_assert_eq(core_watch_start(c, NULL, sup_str(st, "request_id"), 0, sup_watch_cb, &w, NULL, err), RB_OK);
    json_decref(st);
    sup_run_until(&w.done, 30000);
    cr_assert(w.done);
    cr_assert_geq(w.outputs, 2, "expected separate output events while running, got %d", w.outputs);
    cr_assert_str_eq(sup_str(w.final, "stdout"), "0\n1\n2\n");
    json_decref(w.final);

    json_t *r = sup_run_code(c, sid, "import matplotlib.pyplot as plt\nplt.plot([1, 2, 3])\nNone", 0);
    cr_assert_str_eq(sup_str(r, "status"), "completed");
    json_t *files = json_object_get(r, "files");
    cr_assert_eq(json_array_size(files), 1);
    cr_assert(strncmp(json_string_value(json_array_get(files, 0)), "iVBORw0KGgo", 11) == 0, "not a base64 PNG");
    json_decref(r);
    sup_session_delete(c, sid);
    free(sid);

    sid = sup_session_create_id(c, "{\"language\": \"bash\"}");
    r = sup_run_code(c, sid, "cd /tmp && export GREETING=hi", 0);
    cr_assert_str_eq(sup_str(r, "status"), "completed");
    json_decref(r);
    r = sup_run_code(c, sid, "echo \"$GREETING from $(pwd)\"", 0);
    cr_assert_str_eq(sup_str(r, "stdout"), "hi from /tmp\n");
    json_decref(r);
    r = sup_run_code(c, sid, "false", 0);
    cr_assert_str_eq(sup_str(r, "status"), "error");
    json_decref(r);
    sup_session_delete(c, sid);
    free(sid);
    close_core(c);
}

Test(core, a_dead_sandbox_ends_the_session_plainly)
{
    char err[RB_ERR_LEN];
    rb_core *c = sup_core_open();
    char *sid = sup_session_create_id(c, NULL);
    /* kill the runner's supervisor: the container exits with it */
    json_t *r = sup_run_code_killing_the_runner(c, sid);
    cr_assert_str_eq(sup_str(r, "status"), "error");
    cr_assert(json_is_true(json_object_get(r, "reset")));
    json_decref(r);
    json_t *s;
    cr_assert_eq(core_session_get(c, NULL, sid, &s, err), RB_OK);
    cr_assert_str_eq(sup_str(s, "status"), "dead");
    cr_assert(strstr(sup_str(s, "end_reason"), "stopped") != NULL, "%s", sup_str(s, "end_reason"));
    json_decref(s);
    json_t *req = json_pack("{s:s, s:s}", "session_id", sid, "code", "1");
    cr_assert_eq(core_execute(c, NULL, req, &s, err), RB_ECONFLICT);
    cr_assert(strstr(err, "create a new session") != NULL, "%s", err);
    json_decref(req);
    free(sid);
    close_core(c);
}

Test(core, idle_sessions_expire)
{
    char err[RB_ERR_LEN];
    sup_cfg.idle_timeout = 1;
    rb_core *c = sup_core_open();
    char *sid = sup_session_create_id(c, NULL);
    int never = 0;
    sup_run_until(&never, 3500);
    json_t *s;
    cr_assert_eq(core_session_get(c, NULL, sid, &s, err), RB_OK);
    cr_assert_str_eq(sup_str(s, "status"), "ended");
    cr_assert(strstr(sup_str(s, "end_reason"), "idle") != NULL);
    json_decref(s);
    free(sid);
    close_core(c);
}

/* Each core prunes its own store for --retention: the time of the last pruning used to be a
 * function-scope static, shared by every core of the process, so a second core (here: the
 * same database reopened, as after a restart in one process) skipped pruning for an hour
 * after the first one had pruned. */
Test(core, every_core_prunes_its_own_store)
{
    char err[RB_ERR_LEN];
    sup_cfg.retention = 1;
    rb_core *c = sup_core_open();
    char *sid = sup_session_create_id(c, NULL);
    sup_session_delete(c, sid);
    int never = 0;
    sup_run_until(&never, 1500); /* the first sweep (after 1 s) prunes (nothing old yet) */
    json_t *s;
    cr_assert_eq(core_session_get(c, NULL, sid, &s, err), RB_OK, "ended moments ago, still retained: %s", err);
    json_decref(s);
    close_core(c);

    sleep(2); /* the session ended more than --retention ago */
    c = sup_core_open();
    sup_run_until(&never, 1500); /* this core's first sweep */
    cr_assert_eq(core_session_get(c, NULL, sid, &s, err), RB_ENOTFOUND, "the ended session was not pruned");
    free(sid);
    close_core(c);
}

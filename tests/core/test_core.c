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

static uv_loop_t loop;
static rb_config cfg;
static char dir[] = "/tmp/runbox-core-XXXXXX";
static char dbpath[256];

static void setup(void)
{
    cr_assert_not_null(mkdtemp(dir));
    snprintf(dbpath, sizeof(dbpath), "%s/test.db", dir);
    uv_loop_init(&loop);
    config_init(&cfg);
    free(cfg.db_path);
    cfg.db_path = strdup(dbpath);
    cfg.idle_timeout = 0;
    cfg.grace_ms = 1000;
    rb_log_set_level(RB_LOG_WARN);
}

static void teardown(void)
{
    uv_run(&loop, UV_RUN_DEFAULT); /* let handles close */
    uv_loop_close(&loop);
    config_dispose(&cfg);
    char cmd[512];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    (void)!system(cmd);
}

TestSuite(core, .init = setup, .fini = teardown, .timeout = 120);

/* Runs the loop until *flag is set or ms pass. */
static void run_until(int *flag, int ms)
{
    int64_t end = rb_mono_ms() + ms;
    while (!*flag && rb_mono_ms() < end)
        uv_run(&loop, UV_RUN_ONCE);
}

/* Stops the pool, lets background container removals finish, then frees the core. */
static void close_core(rb_core *c)
{
    core_stop(c); /* removes the warm pool's containers */
    int64_t end = rb_mono_ms() + 15000;
    while (core_pending(c) > 0 && rb_mono_ms() < end)
        uv_run(&loop, UV_RUN_ONCE);
    cr_expect_eq(core_pending(c), 0, "container removals did not finish");
    core_free(c);
}

static void wait_docker(rb_core *c)
{
    int64_t end = rb_mono_ms() + 10000;
    for (;;) {
        json_t *h = core_health(c);
        int ok = json_is_true(json_object_get(json_object_get(h, "docker"), "reachable"));
        json_decref(h);
        if (ok || rb_mono_ms() > end)
            break;
        uv_run(&loop, UV_RUN_NOWAIT);
        usleep(10000);
    }
}

struct result {
    int done;
    rb_err err;
    char msg[RB_ERR_LEN];
    json_t *body;
};

static void op_cb(void *data, rb_err err, const char *msg, json_t *body)
{
    struct result *r = data;
    r->done = 1;
    r->err = err;
    snprintf(r->msg, sizeof(r->msg), "%s", msg ? msg : "");
    r->body = body;
}

static char *create_session(rb_core *c, const char *opts_json)
{
    char err[RB_ERR_LEN];
    struct result r = {0};
    json_t *opts = opts_json ? json_loads(opts_json, 0, NULL) : NULL;
    rb_err e = core_session_create(c, opts, op_cb, &r, NULL, err);
    json_decref(opts);
    cr_assert_eq(e, RB_OK, "create: %s", err);
    run_until(&r.done, 60000);
    cr_assert(r.done, "session create did not finish");
    cr_assert_eq(r.err, RB_OK, "create failed: %s", r.msg);
    char *id = strdup(json_string_value(json_object_get(r.body, "session_id")));
    cr_assert_str_eq(json_string_value(json_object_get(r.body, "status")), "ready");
    json_decref(r.body);
    return id;
}

struct watch_result {
    int done;
    int outputs, statuses;
    json_t *final;
};

static void watch_cb(void *data, const char *event, json_t *payload)
{
    struct watch_result *w = data;
    if (strcmp(event, "done") == 0) {
        w->done = 1;
        w->final = json_incref(payload);
    } else if (strcmp(event, "output") == 0) {
        w->outputs++;
    } else {
        w->statuses++;
    }
}

/* Executes code and waits for the result document. */
static json_t *run_code(rb_core *c, const char *sid, const char *code, double timeout)
{
    char err[RB_ERR_LEN];
    json_t *req = json_pack("{s:s, s:s}", "session_id", sid, "code", code);
    if (timeout > 0)
        json_object_set_new(req, "timeout", json_real(timeout));
    json_t *st = NULL;
    rb_err e = core_execute(c, req, &st, err);
    json_decref(req);
    cr_assert_eq(e, RB_OK, "execute: %s", err);
    struct watch_result w = {0};
    e = core_watch_start(c, json_string_value(json_object_get(st, "request_id")), 1, watch_cb, &w, NULL, err);
    cr_assert_eq(e, RB_OK, "watch: %s", err);
    json_decref(st);
    run_until(&w.done, 60000);
    cr_assert(w.done, "execution did not finish");
    return w.final;
}

static const char *str(json_t *o, const char *k)
{
    const char *s = json_string_value(json_object_get(o, k));
    return s ? s : "(null)";
}

Test(core, state_persists_and_results_are_structured)
{
    char err[RB_ERR_LEN];
    rb_core *c;
    cr_assert_eq(core_new(&loop, &cfg, &c, err), RB_OK, "%s", err);
    wait_docker(c);
    char *sid = create_session(c, NULL);

    json_t *r = run_code(c, sid, "x = 42", 0);
    cr_assert_str_eq(str(r, "status"), "completed");
    json_decref(r);
    r = run_code(c, sid, "import sys\nprint(x)\nprint('oops', file=sys.stderr)\nx + 1", 0);
    cr_assert_str_eq(str(r, "status"), "completed");
    cr_assert_str_eq(str(r, "stdout"), "42\n");
    cr_assert_str_eq(str(r, "stderr"), "oops\n");
    cr_assert_str_eq(str(r, "result"), "43");
    json_decref(r);

    r = run_code(c, sid, "1/0", 0);
    cr_assert_str_eq(str(r, "status"), "error");
    json_t *e = json_object_get(r, "error");
    cr_assert_str_eq(str(e, "ename"), "ZeroDivisionError");
    json_decref(r);

    json_t *out;
    cr_assert_eq(core_session_delete(c, sid, &out, err), RB_OK, "%s", err);
    cr_assert_str_eq(str(out, "status"), "ended");
    json_decref(out);
    cr_assert_eq(core_session_delete(c, sid, &out, err), RB_ENOTFOUND);
    json_t *req = json_pack("{s:s, s:s}", "session_id", sid, "code", "1");
    cr_assert_eq(core_execute(c, req, &out, err), RB_ECONFLICT);
    json_decref(req);
    free(sid);
    close_core(c);
}

Test(core, timeout_interrupts_and_session_continues)
{
    char err[RB_ERR_LEN];
    rb_core *c;
    cr_assert_eq(core_new(&loop, &cfg, &c, err), RB_OK, "%s", err);
    wait_docker(c);
    char *sid = create_session(c, NULL);
    json_t *r = run_code(c, sid, "y = 7", 0);
    json_decref(r);
    r = run_code(c, sid, "while True: pass", 1.5);
    cr_assert_str_eq(str(r, "status"), "timeout");
    cr_assert(json_is_false(json_object_get(r, "reset")));
    json_decref(r);
    r = run_code(c, sid, "print(y)", 0);
    cr_assert_str_eq(str(r, "stdout"), "7\n");
    json_decref(r);
    r = run_code(c, sid, "import time\nwhile True:\n    try:\n        time.sleep(10)\n    except KeyboardInterrupt:\n        pass", 1);
    cr_assert_str_eq(str(r, "status"), "timeout");
    cr_assert(json_is_true(json_object_get(r, "reset")), "an uninterruptible loop must reset the worker");
    cr_assert(json_is_string(json_object_get(r, "reset_reason")));
    json_decref(r);
    r = run_code(c, sid, "print('alive')", 0);
    cr_assert_str_eq(str(r, "stdout"), "alive\n");
    json_decref(r);
    json_t *out;
    cr_assert_eq(core_session_delete(c, sid, &out, err), RB_OK);
    json_decref(out);
    free(sid);
    close_core(c);
}

Test(core, executions_queue_in_order_and_cancel)
{
    char err[RB_ERR_LEN];
    rb_core *c;
    cr_assert_eq(core_new(&loop, &cfg, &c, err), RB_OK, "%s", err);
    wait_docker(c);
    char *sid = create_session(c, NULL);
    const char *codes[] = {"import time; time.sleep(0.5); seq = [1]", "seq.append(2)", "seq.append(3)", "print(seq)"};
    char ids[4][64];
    for (int i = 0; i < 4; i++) {
        json_t *req = json_pack("{s:s, s:s}", "session_id", sid, "code", codes[i]), *st;
        cr_assert_eq(core_execute(c, req, &st, err), RB_OK, "%s", err);
        snprintf(ids[i], sizeof(ids[i]), "%s", str(st, "request_id"));
        json_decref(req);
        json_decref(st);
    }
    /* cancel the third while it is still queued */
    json_t *st;
    cr_assert_eq(core_execution_cancel(c, ids[2], &st, err), RB_OK, "%s", err);
    cr_assert_str_eq(str(st, "status"), "cancelled");
    json_decref(st);
    struct watch_result w = {0};
    cr_assert_eq(core_watch_start(c, ids[3], 1, watch_cb, &w, NULL, err), RB_OK);
    run_until(&w.done, 30000);
    cr_assert(w.done);
    cr_assert_str_eq(str(w.final, "stdout"), "[1, 2]\n");
    json_decref(w.final);
    cr_assert_eq(core_execution_cancel(c, ids[3], &st, err), RB_ECONFLICT);
    json_t *out;
    cr_assert_eq(core_session_delete(c, sid, &out, err), RB_OK);
    json_decref(out);
    free(sid);
    close_core(c);
}

Test(core, validation_errors_name_the_field)
{
    char err[RB_ERR_LEN];
    rb_core *c;
    cr_assert_eq(core_new(&loop, &cfg, &c, err), RB_OK, "%s", err);
    wait_docker(c);
    struct result r = {0};
    json_t *opts = json_loads("{\"language\": \"cobol\"}", 0, NULL);
    cr_assert_eq(core_session_create(c, opts, op_cb, &r, NULL, err), RB_EINVAL);
    cr_assert(strstr(err, "language") != NULL, "%s", err);
    json_decref(opts);
    opts = json_loads("{\"execution_options\": {\"memory_limit\": \"lots\"}}", 0, NULL);
    cr_assert_eq(core_session_create(c, opts, op_cb, &r, NULL, err), RB_EINVAL);
    cr_assert(strstr(err, "memory_limit") != NULL, "%s", err);
    json_decref(opts);
    json_t *req = json_pack("{s:s, s:i}", "session_id", "s_nope", "code", 1), *out;
    cr_assert_eq(core_execute(c, req, &out, err), RB_EINVAL);
    cr_assert(strstr(err, "code") != NULL, "%s", err);
    json_decref(req);
    req = json_pack("{s:s, s:s}", "session_id", "s_nope", "code", "1");
    cr_assert_eq(core_execute(c, req, &out, err), RB_ENOTFOUND);
    json_decref(req);
    cr_assert_eq(core_execution_status(c, "e_nope", &out, err), RB_ENOTFOUND);
    cr_assert_eq(r.done, 0, "a synchronous failure must not call back");
    close_core(c);
}

Test(core, sessions_survive_restart)
{
    char err[RB_ERR_LEN];
    rb_core *c;
    cr_assert_eq(core_new(&loop, &cfg, &c, err), RB_OK, "%s", err);
    wait_docker(c);
    char *sid = create_session(c, NULL);
    json_t *r = run_code(c, sid, "kept = 'yes'", 0);
    json_decref(r);
    /* a cell still running when the server goes away */
    json_t *req = json_pack("{s:s, s:s}", "session_id", sid, "code", "import time\ntime.sleep(60)"), *st;
    cr_assert_eq(core_execute(c, req, &st, err), RB_OK, "%s", err);
    json_decref(req);
    char stale[64];
    snprintf(stale, sizeof(stale), "%s", str(st, "request_id"));
    json_decref(st);
    int never = 0;
    run_until(&never, 300);
    core_stop(c);
    core_free(c);
    uv_run(&loop, UV_RUN_DEFAULT);

    cr_assert_eq(core_new(&loop, &cfg, &c, err), RB_OK, "%s", err);
    wait_docker(c);
    /* the session reattaches in the background; an execution queues until it is ready */
    r = run_code(c, sid, "print(kept)", 0);
    cr_assert_str_eq(str(r, "status"), "completed", "%s", json_dumps(r, 0));
    cr_assert_str_eq(str(r, "stdout"), "yes\n");
    json_decref(r);
    cr_assert_eq(core_execution_results(c, stale, &r, err), RB_OK, "%s", err);
    cr_assert_str_eq(str(r, "status"), "error");
    cr_assert(strstr(str(json_object_get(r, "error"), "evalue"), "server restarted") != NULL);
    json_decref(r);
    json_t *out;
    cr_assert_eq(core_session_delete(c, sid, &out, err), RB_OK);
    json_decref(out);
    free(sid);
    close_core(c);
}

Test(core, output_streams_plots_and_bash)
{
    char err[RB_ERR_LEN];
    rb_core *c;
    cr_assert_eq(core_new(&loop, &cfg, &c, err), RB_OK, "%s", err);
    wait_docker(c);
    char *sid = create_session(c, NULL);
    /* output arrives as events while the cell runs, before done */
    json_t *req = json_pack("{s:s, s:s}", "session_id", sid, "code",
                            "import time\nfor i in range(3):\n    print(i, flush=True)\n    time.sleep(0.3)"),
           *st;
    cr_assert_eq(core_execute(c, req, &st, err), RB_OK, "%s", err);
    json_decref(req);
    struct watch_result w = {0};
    cr_assert_eq(core_watch_start(c, str(st, "request_id"), 0, watch_cb, &w, NULL, err), RB_OK);
    json_decref(st);
    run_until(&w.done, 30000);
    cr_assert(w.done);
    cr_assert_geq(w.outputs, 2, "expected separate output events while running, got %d", w.outputs);
    cr_assert_str_eq(str(w.final, "stdout"), "0\n1\n2\n");
    json_decref(w.final);

    json_t *r = run_code(c, sid, "import matplotlib.pyplot as plt\nplt.plot([1, 2, 3])\nNone", 0);
    cr_assert_str_eq(str(r, "status"), "completed");
    json_t *files = json_object_get(r, "files");
    cr_assert_eq(json_array_size(files), 1);
    cr_assert(strncmp(json_string_value(json_array_get(files, 0)), "iVBORw0KGgo", 11) == 0, "not a base64 PNG");
    json_decref(r);
    json_t *out;
    cr_assert_eq(core_session_delete(c, sid, &out, err), RB_OK);
    json_decref(out);
    free(sid);

    sid = create_session(c, "{\"language\": \"bash\"}");
    r = run_code(c, sid, "cd /tmp && export GREETING=hi", 0);
    cr_assert_str_eq(str(r, "status"), "completed");
    json_decref(r);
    r = run_code(c, sid, "echo \"$GREETING from $(pwd)\"", 0);
    cr_assert_str_eq(str(r, "stdout"), "hi from /tmp\n");
    json_decref(r);
    r = run_code(c, sid, "false", 0);
    cr_assert_str_eq(str(r, "status"), "error");
    json_decref(r);
    cr_assert_eq(core_session_delete(c, sid, &out, err), RB_OK);
    json_decref(out);
    free(sid);
    close_core(c);
}

Test(core, a_dead_sandbox_ends_the_session_plainly)
{
    char err[RB_ERR_LEN];
    rb_core *c;
    cr_assert_eq(core_new(&loop, &cfg, &c, err), RB_OK, "%s", err);
    wait_docker(c);
    char *sid = create_session(c, NULL);
    /* kill the runner's supervisor: the container exits with it */
    json_t *r = run_code(c, sid, "import os, signal\nos.kill(os.getppid(), signal.SIGKILL)\nimport time; time.sleep(5)", 0);
    cr_assert_str_eq(str(r, "status"), "error");
    cr_assert(json_is_true(json_object_get(r, "reset")));
    json_decref(r);
    json_t *s;
    cr_assert_eq(core_session_get(c, sid, &s, err), RB_OK);
    cr_assert_str_eq(str(s, "status"), "dead");
    cr_assert(strstr(str(s, "end_reason"), "stopped") != NULL, "%s", str(s, "end_reason"));
    json_decref(s);
    json_t *req = json_pack("{s:s, s:s}", "session_id", sid, "code", "1");
    cr_assert_eq(core_execute(c, req, &s, err), RB_ECONFLICT);
    cr_assert(strstr(err, "create a new session") != NULL, "%s", err);
    json_decref(req);
    free(sid);
    close_core(c);
}

Test(core, idle_sessions_expire)
{
    char err[RB_ERR_LEN];
    rb_core *c;
    cfg.idle_timeout = 1;
    cr_assert_eq(core_new(&loop, &cfg, &c, err), RB_OK, "%s", err);
    wait_docker(c);
    char *sid = create_session(c, NULL);
    int never = 0;
    run_until(&never, 3500);
    json_t *s;
    cr_assert_eq(core_session_get(c, sid, &s, err), RB_OK);
    cr_assert_str_eq(str(s, "status"), "ended");
    cr_assert(strstr(str(s, "end_reason"), "idle") != NULL);
    json_decref(s);
    free(sid);
    close_core(c);
}

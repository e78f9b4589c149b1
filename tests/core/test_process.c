/*
 * Tests of core/process.c on the real engine: commands run in a session's sandbox with their
 * output streamed, their exit, signals, the list, a caller that goes away, and bad specs.
 * Requires runbox-sandbox:latest.
 */
#include <criterion/criterion.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "core/process.h"
#include "support_core.h"

typedef struct proc_rec {
    int started, ended;
    unsigned pid;
    char out[8192], err[8192];
    size_t out_len, err_len;
    size_t out_total; /* every stdout byte, kept or not */
    int outputs_before_start;
    rb_err end_err;
    char end_msg[RB_ERR_LEN];
    core_process_end end;
    char status[64];
    core_process_watch *p;
} proc_rec;

static void rec_start(void *data, unsigned pid)
{
    proc_rec *r = data;
    r->started = 1;
    r->pid = pid;
}

static void rec_output(void *data, int stream, const char *buf, size_t len)
{
    proc_rec *r = data;
    if (stream == CORE_PROCESS_TTY_STREAM)
        stream = 1;
    if (!r->started)
        r->outputs_before_start++;
    if (stream == 1)
        r->out_total += len;
    char *dst = stream == 1 ? r->out : r->err;
    size_t *n = stream == 1 ? &r->out_len : &r->err_len;
    if (*n + len < sizeof(r->out)) {
        memcpy(dst + *n, buf, len);
        *n += len;
        dst[*n] = '\0';
    }
}

static void rec_end(void *data, rb_err err, const char *msg, const core_process_end *end)
{
    proc_rec *r = data;
    r->ended = 1;
    r->end_err = err;
    snprintf(r->end_msg, sizeof(r->end_msg), "%s", msg ? msg : "");
    if (end != NULL) {
        r->end = *end;
        snprintf(r->status, sizeof(r->status), "%s", end->status);
    }
}

static const core_process_cbs rec_cbs = {rec_start, rec_output, rec_end};

/* A selector of pid x. */
#define SEL(x) (&(core_process_sel){.pid = (x)})

static rb_core *core;
static char *sid;

static void setup(void)
{
    sup_fixture_open("process", RB_LOG_WARN);
    core = sup_core_open();
    sid = sup_session_create_id(core, "{\"language\":\"python\"}");
}

static void teardown(void)
{
    sup_session_delete(core, sid);
    free(sid);
    sup_core_close(core, 30000);
    sup_fixture_close();
}

static void start(proc_rec *r, const char *cmd, const char *const *args, json_t *envs, const char *cwd)
{
    char err[RB_ERR_LEN];
    memset(r, 0, sizeof(*r));
    core_process_spec spec = {.cmd = cmd, .args = args, .envs = envs, .cwd = cwd};
    rb_err e = core_process_start(core, NULL, sid, &spec, &rec_cbs, r, &r->p, err);
    cr_assert_eq(e, RB_OK, "core_process_start: %s", err);
}

TestSuite(process, .init = setup, .fini = teardown, .timeout = 180);

Test(process, streams_both_outputs_and_the_exit_code)
{
    proc_rec r;
    const char *args[] = {"-c", "echo out; echo err >&2; id -u; exit 3", NULL};
    start(&r, "/bin/bash", args, NULL, NULL);
    sup_run_until(&r.ended, 60000);
    cr_assert(r.ended && r.started, "the process should start and end");
    cr_assert_eq(r.end_err, RB_OK, "%s", r.end_msg);
    cr_assert_gt(r.pid, 1);
    cr_assert_eq(r.outputs_before_start, 0);
    cr_assert_str_eq(r.out, "out\n1000\n", "stdout was '%s' (the sandbox user is 1000)", r.out);
    cr_assert_str_eq(r.err, "err\n", "stderr keeps only the command's own output, was '%s'", r.err);
    cr_assert_eq(r.end.exit_code, 3);
    cr_assert(r.end.exited);
    cr_assert_str_eq(r.status, "exit status 3");
}

Test(process, environment_and_folder)
{
    proc_rec r;
    const char *args[] = {"-c", "echo \"$FOO\"; pwd", NULL};
    json_t *envs = json_pack("{s:s}", "FOO", "bar baz");
    start(&r, "sh", args, envs, "/tmp");
    json_decref(envs);
    sup_run_until(&r.ended, 60000);
    cr_assert_eq(r.end_err, RB_OK, "%s", r.end_msg);
    cr_assert_str_eq(r.out, "bar baz\n/tmp\n", "stdout was '%s'", r.out);
    cr_assert_eq(r.end.exit_code, 0);
}

Test(process, a_missing_folder_is_refused)
{
    proc_rec r;
    start(&r, "/bin/true", NULL, NULL, "/no/such/folder");
    sup_run_until(&r.ended, 60000);
    cr_assert(r.ended);
    cr_assert(!r.started);
    cr_assert_eq(r.end_err, RB_EINVAL, "%s", r.end_msg);
    cr_assert(strstr(r.end_msg, "/no/such/folder") != NULL, "%s", r.end_msg);
}

Test(process, listed_then_killed_by_signal)
{
    proc_rec r;
    char err[RB_ERR_LEN];
    const char *args[] = {"-c", "echo ready; sleep 300", NULL};
    start(&r, "/bin/bash", args, NULL, NULL);
    /* started means its shell ran; wait for the command's own first line before killing it */
    for (int i = 0; i < 600 && r.out_len == 0; i++)
        sup_run_for(100);
    cr_assert(r.started);
    cr_assert_str_eq(r.out, "ready\n");

    json_t *list = NULL;
    cr_assert_eq(core_process_list(core, NULL, sid, &list, err), RB_OK, "%s", err);
    cr_assert_eq(json_array_size(list), 1);
    json_t *item = json_array_get(list, 0);
    cr_assert_eq(json_integer_value(json_object_get(item, "pid")), r.pid);
    cr_assert_str_eq(sup_str(item, "cmd"), "/bin/bash");
    cr_assert_str_eq(sup_str(item, "cwd"), "/workspace");
    json_decref(list);

    cr_assert_eq(core_process_signal(core, NULL, sid, SEL(r.pid + 100000), SIGKILL, sup_op_cb, NULL, NULL, err),
                 RB_ENOTFOUND);
    cr_assert_eq(core_process_signal(core, NULL, sid, SEL(r.pid), SIGINT, sup_op_cb, NULL, NULL, err), RB_EINVAL);
    sup_result res = {0};
    cr_assert_eq(core_process_signal(core, NULL, sid, SEL(r.pid), SIGKILL, sup_op_cb, &res, NULL, err), RB_OK, "%s",
                 err);
    sup_run_until(&res.done, 60000);
    cr_assert_eq(res.err, RB_OK, "%s", res.msg);
    json_decref(res.body);
    sup_run_until(&r.ended, 60000);
    cr_assert_eq(r.end_err, RB_OK, "%s", r.end_msg);
    cr_assert_eq(r.end.exit_code, -1);
    cr_assert(!r.end.exited);
    cr_assert_eq(r.end.signal, SIGKILL);
    cr_assert_str_eq(r.status, "signal: killed");
    cr_assert_str_eq(r.out, "ready\n");

    cr_assert_eq(core_process_list(core, NULL, sid, &list, err), RB_OK, "%s", err);
    cr_assert_eq(json_array_size(list), 0, "an ended process is not listed");
    json_decref(list);
}

Test(process, a_caller_that_goes_away_kills_the_process)
{
    proc_rec r;
    char err[RB_ERR_LEN];
    const char *args[] = {"-c", "sleep 300 & sleep 301; echo never", NULL};
    start(&r, "/bin/bash", args, NULL, NULL);
    sup_run_until(&r.started, 60000);
    cr_assert(r.started);
    core_process_detach(r.p);
    /* the process group goes: the list empties (polling, no fixed wait) */
    json_t *list = NULL;
    size_t n = 1;
    for (int i = 0; i < 600 && n > 0; i++) {
        sup_run_for(100);
        cr_assert_eq(core_process_list(core, NULL, sid, &list, err), RB_OK, "%s", err);
        n = json_array_size(list);
        json_decref(list);
    }
    cr_assert_eq(n, 0, "the detached process should have been killed");
    cr_assert(!r.ended, "no callback after detach");
    /* nothing of it is left in the sandbox: neither sleep runs */
    proc_rec check;
    const char *ps[] = {"-c", "ps -eo comm= | grep -c '^sleep$' || true", NULL};
    start(&check, "/bin/sh", ps, NULL, NULL);
    sup_run_until(&check.ended, 60000);
    cr_assert_eq(check.end_err, RB_OK, "%s", check.end_msg);
    cr_assert_str_eq(check.out, "0\n", "sleeps still running: %s", check.out);
}

Test(process, bad_specs_are_refused)
{
    char err[RB_ERR_LEN];
    core_process_watch *p = NULL;
    core_process_spec empty = {.cmd = ""};
    cr_assert_eq(core_process_start(core, NULL, sid, &empty, &rec_cbs, NULL, &p, err), RB_EINVAL);
    core_process_spec rel = {.cmd = "ls", .cwd = "relative"};
    cr_assert_eq(core_process_start(core, NULL, sid, &rel, &rec_cbs, NULL, &p, err), RB_EINVAL);
    json_t *envs = json_pack("{s:s}", "A=B", "x");
    core_process_spec badenv = {.cmd = "ls", .envs = envs};
    cr_assert_eq(core_process_start(core, NULL, sid, &badenv, &rec_cbs, NULL, &p, err), RB_EINVAL);
    json_decref(envs);
    core_process_spec ok = {.cmd = "ls"};
    cr_assert_eq(core_process_start(core, NULL, "s_nosuchsession", &ok, &rec_cbs, NULL, &p, err), RB_ENOTFOUND);
}

Test(process, stdout_that_overtakes_the_process_id_is_kept)
{
    /* Docker copies stdout and stderr apart: output written at once may reach runboxd before
     * the wrapper's line on stderr. Over several runs, every byte must arrive. */
    for (int i = 0; i < 5; i++) {
        proc_rec r;
        const char *args[] = {"-c", "head -c 300000 /dev/zero", NULL};
        start(&r, "/bin/sh", args, NULL, NULL);
        sup_run_until(&r.ended, 60000);
        cr_assert_eq(r.end_err, RB_OK, "%s", r.end_msg);
        cr_assert_eq(r.outputs_before_start, 0);
        cr_assert_eq(r.out_total, 300000, "run %d: %zu bytes of stdout", i, r.out_total);
    }
}

Test(process, standard_input_when_asked_for)
{
    char err[RB_ERR_LEN];
    proc_rec r;
    memset(&r, 0, sizeof(r));
    core_process_spec spec = {.cmd = "/bin/cat", .stdin_open = 1};
    cr_assert_eq(core_process_start(core, NULL, sid, &spec, &rec_cbs, &r, &r.p, err), RB_OK, "%s", err);
    sup_run_until(&r.started, 60000);
    cr_assert(r.started);
    cr_assert_eq(core_process_input(core, NULL, sid, SEL(r.pid), "hello ", 6, err), RB_OK, "%s", err);
    cr_assert_eq(core_process_input(core, NULL, sid, SEL(r.pid), "there\n", 6, err), RB_OK, "%s", err);
    cr_assert_eq(core_process_close_input(core, NULL, sid, SEL(r.pid), err), RB_OK, "%s", err);
    cr_assert_eq(core_process_input(core, NULL, sid, SEL(r.pid), "late", 4, err), RB_ECONFLICT, "closed input");
    sup_run_until(&r.ended, 60000);
    cr_assert_eq(r.end_err, RB_OK, "%s", r.end_msg);
    cr_assert_str_eq(r.out, "hello there\n", "cat read '%s'", r.out);
    cr_assert_eq(r.end.exit_code, 0, "cat ends at the end of its input");

    /* without asking, there is none: cat reads end of file at once */
    proc_rec n;
    start(&n, "/bin/sh", (const char *const[]){"-c", "cat; echo done", NULL}, NULL, NULL);
    sup_run_until(&n.started, 60000);
    if (!n.ended)
        cr_assert_eq(core_process_input(core, NULL, sid, SEL(n.pid), "x", 1, err), RB_ECONFLICT);
    sup_run_until(&n.ended, 60000);
    cr_assert_str_eq(n.out, "done\n");
    cr_assert_eq(core_process_input(core, NULL, sid, SEL(99999), "x", 1, err), RB_ENOTFOUND);
}

Test(process, at_most_core_process_max_at_once)
{
    char err[RB_ERR_LEN];
    static proc_rec r[CORE_PROCESS_MAX];
    const char *args[] = {"300", NULL};
    for (int i = 0; i < CORE_PROCESS_MAX; i++)
        start(&r[i], "sleep", args, NULL, NULL);
    proc_rec extra;
    memset(&extra, 0, sizeof(extra));
    core_process_spec spec = {.cmd = "true"};
    cr_assert_eq(core_process_start(core, NULL, sid, &spec, &rec_cbs, &extra, &extra.p, err), RB_EBUSY);
    cr_assert(strstr(err, "wait for one to end") != NULL, "%s", err);
    for (int i = 0; i < CORE_PROCESS_MAX; i++) {
        sup_run_until(&r[i].started, 60000);
        cr_assert(r[i].started, "process %d did not start", i);
    }
    for (int i = 0; i < CORE_PROCESS_MAX; i++)
        core_process_detach(r[i].p);
    /* once they are gone there is room again (polling, no fixed wait) */
    json_t *list = NULL;
    size_t n = CORE_PROCESS_MAX;
    for (int i = 0; i < 600 && n > 0; i++) {
        sup_run_for(100);
        cr_assert_eq(core_process_list(core, NULL, sid, &list, err), RB_OK, "%s", err);
        n = json_array_size(list);
        json_decref(list);
    }
    cr_assert_eq(n, 0);
    cr_assert_eq(core_process_start(core, NULL, sid, &spec, &rec_cbs, &extra, &extra.p, err), RB_OK, "%s", err);
    sup_run_until(&extra.ended, 60000);
    cr_assert_eq(extra.end_err, RB_OK, "%s", extra.end_msg);
}

Test(process, the_exit_after_the_output_ended_is_waited_for)
{
    /* Docker ends an exec's output when its stdout and stderr close, not when it exits: a
     * command that closes both and goes on must still end with its own exit code. */
    proc_rec r;
    const char *args[] = {"-c", "echo bye; exec >&- 2>&-; sleep 2; exit 5", NULL};
    start(&r, "/bin/bash", args, NULL, NULL);
    sup_run_until(&r.ended, 60000);
    cr_assert_eq(r.end_err, RB_OK, "%s", r.end_msg);
    cr_assert_str_eq(r.out, "bye\n");
    cr_assert_eq(r.end.exit_code, 5, "exit code %d (%s)", r.end.exit_code, r.status);
}

/* Runs the loop until r's stdout holds needle (or 60 s). */
static int wait_output(proc_rec *r, const char *needle)
{
    for (int i = 0; i < 600 && strstr(r->out, needle) == NULL && !r->ended; i++)
        sup_run_for(100);
    return strstr(r->out, needle) != NULL;
}

Test(process, a_terminal_has_its_size_takes_input_and_resizes)
{
    char err[RB_ERR_LEN];
    proc_rec r;
    memset(&r, 0, sizeof(r));
    const char *args[] = {"-c", "stty size; tty >/dev/null && echo on-a-tty; read line; echo \"got $line\"; "
                                "read again; stty size",
                          NULL};
    core_process_spec spec = {.cmd = "/bin/bash", .args = args, .tty_rows = 24, .tty_cols = 80};
    cr_assert_eq(core_process_start(core, NULL, sid, &spec, &rec_cbs, &r, &r.p, err), RB_OK, "%s", err);
    cr_assert(wait_output(&r, "on-a-tty"), "output was '%s'", r.out);
    cr_assert(strncmp(r.out, "24 80\r\n", 7) == 0, "the terminal's size first, was '%s'", r.out);
    cr_assert_eq(core_process_input(core, NULL, sid, SEL(r.pid), "hello\r", 6, err), RB_OK, "%s", err);
    cr_assert(wait_output(&r, "got hello"), "output was '%s'", r.out);
    sup_result res = {0};
    cr_assert_eq(core_process_resize(core, NULL, sid, SEL(r.pid), 40, 132, sup_op_cb, &res, NULL, err), RB_OK, "%s",
                 err);
    sup_run_until(&res.done, 60000);
    cr_assert_eq(res.err, RB_OK, "%s", res.msg);
    json_decref(res.body);
    cr_assert_eq(core_process_input(core, NULL, sid, SEL(r.pid), "\r", 1, err), RB_OK, "%s", err);
    sup_run_until(&r.ended, 60000);
    cr_assert_eq(r.end_err, RB_OK, "%s", r.end_msg);
    cr_assert(strstr(r.out, "40 132\r\n") != NULL, "the new size, output was '%s'", r.out);
    cr_assert_eq(r.err_len, 0, "a terminal has no stderr of its own");
    /* a process without a terminal has no size */
    proc_rec n;
    start(&n, "sleep", (const char *const[]){"30", NULL}, NULL, NULL);
    sup_run_until(&n.started, 60000);
    cr_assert_eq(core_process_resize(core, NULL, sid, SEL(n.pid), 10, 10, sup_op_cb, &res, NULL, err), RB_ECONFLICT);
    cr_assert_eq(core_process_resize(core, NULL, sid, SEL(99999), 10, 10, sup_op_cb, &res, NULL, err), RB_ENOTFOUND);
    core_process_detach(n.p);
}

Test(process, at_most_core_process_tty_max_terminals)
{
    char err[RB_ERR_LEN];
    static proc_rec r[CORE_PROCESS_TTY_MAX + 1];
    core_process_spec bad = {.cmd = "true", .tty_rows = 5, .tty_cols = 0};
    cr_assert_eq(core_process_start(core, NULL, sid, &bad, &rec_cbs, &r[0], &r[0].p, err), RB_EINVAL);
    core_process_spec spec = {.cmd = "sleep", .args = (const char *const[]){"300", NULL}, .tty_rows = 5, .tty_cols = 5};
    for (int i = 0; i < CORE_PROCESS_TTY_MAX; i++)
        cr_assert_eq(core_process_start(core, NULL, sid, &spec, &rec_cbs, &r[i], &r[i].p, err), RB_OK, "%s", err);
    cr_assert_eq(core_process_start(core, NULL, sid, &spec, &rec_cbs, &r[CORE_PROCESS_TTY_MAX],
                                    &r[CORE_PROCESS_TTY_MAX].p, err),
                 RB_EBUSY);
    cr_assert(strstr(err, "terminals") != NULL, "%s", err);
    for (int i = 0; i < CORE_PROCESS_TTY_MAX; i++)
        core_process_detach(r[i].p);
}

Test(process, a_kept_process_runs_on_and_is_watched_again_with_what_it_missed)
{
    char err[RB_ERR_LEN];
    proc_rec r;
    memset(&r, 0, sizeof(r));
    const char *args[] = {"-c", "echo first; read x; echo \"missed $x\"; read y; echo \"late $y\"", NULL};
    core_process_spec spec = {.cmd = "/bin/sh", .args = args, .tag = "mine", .stdin_open = 1, .keep = 1};
    cr_assert_eq(core_process_start(core, NULL, sid, &spec, &rec_cbs, &r, &r.p, err), RB_OK, "%s", err);
    cr_assert(wait_output(&r, "first"), "%s", r.out);
    unsigned pid = r.pid;
    core_process_detach(r.p);
    /* it runs on: input reaches it by tag, and what it writes meanwhile is kept */
    cr_assert_eq(core_process_input(core, NULL, sid, &(core_process_sel){.tag = "mine"}, "a\n", 2, err), RB_OK, "%s",
                 err);
    json_t *list = NULL;
    cr_assert_eq(core_process_list(core, NULL, sid, &list, err), RB_OK, "%s", err);
    cr_assert_eq(json_array_size(list), 1, "the kept process is listed");
    json_decref(list);
    sup_run_for(1500); /* the echo lands in the backlog (a later attach must see it either way) */
    proc_rec again;
    memset(&again, 0, sizeof(again));
    again.started = 1;
    unsigned got = 0;
    cr_assert_eq(core_process_attach(core, NULL, sid, &(core_process_sel){.tag = "nope"}, &rec_cbs, &again, &again.p,
                                     &got, err),
                 RB_ENOTFOUND);
    cr_assert_eq(core_process_attach(core, NULL, sid, SEL(pid), &rec_cbs, &again, &again.p, &got, err), RB_OK, "%s",
                 err);
    cr_assert_eq(got, pid);
    core_process_replay(again.p);
    cr_assert(wait_output(&again, "missed a"), "the output nobody watched is handed over: '%s'", again.out);
    cr_assert_eq(core_process_input(core, NULL, sid, SEL(pid), "b\n", 2, err), RB_OK, "%s", err);
    sup_run_until(&again.ended, 60000);
    cr_assert_eq(again.end_err, RB_OK, "%s", again.end_msg);
    cr_assert_str_eq(again.out, "missed a\nlate b\n");
    cr_assert(!r.ended, "the first watcher hears nothing after its detach");
}

Test(process, a_timeout_kills_a_kept_process)
{
    proc_rec r;
    char err[RB_ERR_LEN];
    memset(&r, 0, sizeof(r));
    core_process_spec spec = {.cmd = "sleep", .args = (const char *const[]){"300", NULL}, .keep = 1,
                              .timeout_ms = 1000};
    cr_assert_eq(core_process_start(core, NULL, sid, &spec, &rec_cbs, &r, &r.p, err), RB_OK, "%s", err);
    sup_run_until(&r.ended, 60000);
    cr_assert(r.ended);
    cr_assert_eq(r.end_err, RB_OK, "%s", r.end_msg);
    cr_assert_str_eq(r.status, "signal: killed");
}

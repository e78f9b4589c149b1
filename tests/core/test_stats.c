/*
 * Tests of core/stats.c against the real Docker engine and sandbox image: what the core counts
 * (sessions created and ended by reason class, executions finished by status with their
 * durations and bytes) and the gauges it reads from its state (live sessions by status,
 * executions running and queued, Docker reachability). Requires runbox-sandbox:latest.
 */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "core/stats.h"
#include "support_core.h"

static void setup(void)
{
    sup_fixture_open("stats", RB_LOG_WARN);
}

static void teardown(void)
{
    sup_fixture_close();
}

TestSuite(stats, .init = setup, .fini = teardown, .timeout = 120);

static const char *status_of(json_t *r)
{
    return sup_str(r, "status");
}

Test(stats, executions_and_deleted_sessions_are_counted)
{
    char err[RB_ERR_LEN];
    rb_core *c = sup_core_open();
    stats_snapshot a, b;
    stats_read(c, &a);
    cr_assert_eq(a.docker_reachable, 1);
    cr_assert_eq(a.total.sessions_created, 0);

    char *sid = sup_session_create_id(c, NULL);
    stats_read(c, &b);
    cr_assert_eq(b.total.sessions_created, 1);
    cr_assert_eq(b.sessions[STATS_LIVE_READY], 1);

    json_t *r = sup_run_code(c, sid, "print('x' * 99)", 0);
    cr_assert_str_eq(status_of(r), "completed");
    json_decref(r);
    r = sup_run_code(c, sid, "1/0", 0);
    cr_assert_str_eq(status_of(r), "error");
    json_decref(r);
    r = sup_run_code(c, sid, "while True: pass", 1);
    cr_assert_str_eq(status_of(r), "timeout");
    json_decref(r);

    /* One running and one queued behind it, then both stopped. */
    char ids[2][64];
    for (int i = 0; i < 2; i++) {
        json_t *req = json_pack("{s:s, s:s}", "session_id", sid, "code", "import time; time.sleep(30)"), *st;
        cr_assert_eq(core_execute(c, NULL, req, &st, err), RB_OK, "%s", err);
        snprintf(ids[i], sizeof(ids[i]), "%s", sup_str(st, "request_id"));
        json_decref(req);
        json_decref(st);
    }
    int never = 0;
    sup_run_until(&never, 500);
    stats_read(c, &b);
    cr_assert_eq(b.executions_running, 1);
    cr_assert_eq(b.executions_queued, 1);
    cr_assert_eq(b.sessions[STATS_LIVE_BUSY], 1);
    json_t *st;
    cr_assert_eq(core_execution_cancel(c, NULL, ids[1], &st, err), RB_OK, "%s", err); /* still queued */
    json_decref(st);
    sup_session_delete(c, sid); /* ends the running one with an error */

    stats_read(c, &b);
    cr_assert_eq(b.total.executions_finished[STATS_EXEC_COMPLETED], 1);
    cr_assert_eq(b.total.executions_finished[STATS_EXEC_ERROR], 2);
    cr_assert_eq(b.total.executions_finished[STATS_EXEC_TIMEOUT], 1);
    cr_assert_eq(b.total.executions_finished[STATS_EXEC_CANCELLED], 1);
    /* The cancelled one never ran: it has no duration. */
    cr_assert_eq(b.total.duration_count, 4);
    uint64_t n = 0;
    for (int i = 0; i <= STATS_DURATION_BUCKETS; i++)
        n += b.total.duration_bucket[i];
    cr_assert_eq(n, 4);
    cr_assert_geq(b.total.duration_sum, 1.0, "the timeout alone ran 1 s");
    cr_assert_geq(b.total.output_bytes, 100, "print('x' * 99) wrote 100 bytes");
    cr_assert_eq(b.total.sessions_ended[STATS_END_DELETED], 1);
    cr_assert_eq(b.sessions[STATS_LIVE_READY] + b.sessions[STATS_LIVE_BUSY] + b.sessions[STATS_LIVE_STARTING], 0);
    cr_assert_eq(b.executions_running + b.executions_queued, 0);
    free(sid);
    sup_core_close(c, 15000);
}

Test(stats, idle_and_dead_sessions_are_told_apart)
{
    sup_cfg.idle_timeout = 2;
    rb_core *c = sup_core_open();
    char *idle = sup_session_create_id(c, NULL);
    char *dead = sup_session_create_id(c, NULL);
    /* Kill the runner's supervisor: the container exits with it and the session is dead. */
    json_t *r = sup_run_code_killing_the_runner(c, dead);
    json_decref(r);
    int never = 0;
    sup_run_until(&never, 4000);
    stats_snapshot s;
    stats_read(c, &s);
    cr_assert_eq(s.total.sessions_created, 2);
    cr_assert_eq(s.total.sessions_ended[STATS_END_DEAD], 1);
    cr_assert_eq(s.total.sessions_ended[STATS_END_IDLE], 1);
    cr_assert_eq(s.total.sessions_ended[STATS_END_DELETED], 0);
    cr_assert_eq(s.total.sessions_ended[STATS_END_ERROR], 0);
    free(idle);
    free(dead);
    sup_core_close(c, 15000);
}

Test(stats, label_names_are_the_fixed_sets)
{
    cr_assert_str_eq(stats_end_name(STATS_END_IDLE), "idle");
    cr_assert_str_eq(stats_exec_name(STATS_EXEC_CANCELLED), "cancelled");
    cr_assert_str_eq(stats_live_name(STATS_LIVE_BUSY), "busy");
    cr_assert_str_eq(stats_end_name(STATS_END_MAX), "");
    for (int i = 1; i < STATS_DURATION_BUCKETS; i++)
        cr_assert_gt(stats_duration_bound(i), stats_duration_bound(i - 1));
}

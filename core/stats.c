/*
 * stats.c: the core's counters and the reading of its gauges (core/stats.h). The hooks are
 * called from session.c, execution.c, core.c and mcp_sessions.c where the counted thing
 * happens; everything else is derived from the live maps at read time, so that a gauge can
 * never drift from the state it describes.
 */
#include "core/stats.h"

#include <stdio.h>
#include <string.h>

#include "core/internal.h"
#include "core/pool.h"

void stats_session_created(rb_core *c)
{
    c->stats.sessions_created++;
}

void stats_session_ended(rb_core *c, const char *from, const char *status, const char *reason)
{
    stats_end e;
    if (strcmp(status, "dead") == 0)
        e = strcmp(from, "starting") == 0 ? STATS_END_ERROR : STATS_END_DEAD;
    else if (strncmp(reason, "idle ", 5) == 0)
        e = STATS_END_IDLE; /* the idle sweep's reason (core.c sweep_cb) */
    else
        e = STATS_END_DELETED;
    c->stats.sessions_ended[e]++;
}

void stats_execution_finished(rb_core *c, const struct execution *ex)
{
    stats_counters *t = &c->stats;
    stats_exec x = STATS_EXEC_ERROR; /* the final statuses are the four below; anything else failed */
    for (int i = 0; i < STATS_EXEC_MAX; i++)
        if (strcmp(ex->status, stats_exec_name((stats_exec)i)) == 0)
            x = (stats_exec)i;
    t->executions_finished[x]++;
    t->output_bytes += ex->stream_bytes + ex->display_bytes;
    t->dropped_bytes += ex->dropped > 0 ? (uint64_t)ex->dropped : 0;
    if (ex->started_at <= 0)
        return; /* cancelled while queued: it never ran, so it has no duration */
    double s = (double)(ex->duration_ms > 0 ? ex->duration_ms : 0) / 1000.0;
    int b = 0;
    while (b < STATS_DURATION_BUCKETS && s > stats_duration_bound(b))
        b++;
    t->duration_bucket[b]++;
    t->duration_count++;
    t->duration_sum += s;
}

void stats_mcp_sessions(rb_core *c, size_t n)
{
    c->stats.mcp_sessions = (int64_t)n;
}

static int pool_number(json_t *health, const char *key)
{
    return (int)json_integer_value(json_object_get(health, key));
}

void stats_read(rb_core *c, stats_snapshot *out)
{
    memset(out, 0, sizeof(*out));
    out->total = c->stats;
    size_t pos = 0;
    session *s;
    while ((s = map_next(&c->sessions, &pos)) != NULL) {
        for (int i = 0; i < STATS_LIVE_MAX; i++)
            if (strcmp(s->status, stats_live_name((stats_live)i)) == 0)
                out->sessions[i]++;
    }
    pos = 0;
    execution *ex;
    while ((ex = map_next(&c->executions, &pos)) != NULL) {
        if (strcmp(ex->status, "running") == 0)
            out->executions_running++;
        else
            out->executions_queued++;
    }
    json_t *ph = pool_health(c->pool);
    out->pool_size = pool_number(ph, "size");
    out->pool_ready = pool_number(ph, "ready");
    out->pool_starting = pool_number(ph, "starting");
    out->pool_target = pool_number(ph, "target");
    const char *why = json_string_value(json_object_get(ph, "reason"));
    snprintf(out->pool_reason, sizeof(out->pool_reason), "%s", why != NULL ? why : "minimum");
    out->pool_hits = json_integer_value(json_object_get(ph, "hits"));
    out->pool_misses = json_integer_value(json_object_get(ph, "misses"));
    json_decref(ph);
    egress_counts ec;
    egress_counts_read(c, &ec);
    out->egress_proxies = ec.proxies;
    out->egress_allowed = ec.allowed;
    for (int i = 0; i < EGRESS_REFUSALS && i < 8; i++)
        out->egress_refused[i] = ec.refused[i];
    out->egress_refusal_names = egress_refusal_names;
    out->n_egress_refusals = EGRESS_REFUSALS < 8 ? EGRESS_REFUSALS : 8;
    out->egress_unreachable = ec.unreachable;
    out->egress_restarts = ec.restarts;
    out->egress_bytes_up = ec.bytes_up;
    out->egress_bytes_down = ec.bytes_down;
    out->egress_secret_uses = ec.secret_uses;
    out->egress_secret_refusals = ec.secret_refusals;
    out->docker_reachable = c->docker_ok != 0;
    backend_stats_read(c->be, &out->engine);
}

/*
 * stats: the core's operating numbers, what GET /metrics exposes. It owns the counters that
 * only grow while runboxd runs (sessions created and ended by reason class, executions finished
 * by status, their duration histogram, output and dropped bytes) and reads the gauges (live
 * sessions by status, executions running and queued, the warm pool, Docker reachability, live
 * MCP sessions) from the core's state when asked, and passes on what the sandbox backend
 * counts of its calls to the engine (their latency and failures, core/backend/backend.h). Every label a reader sees comes from a fixed
 * set named here, never from what a caller sent, so the number of series stays bounded.
 *
 * It knows no output format (server/metrics/ renders Prometheus text) and keeps no history:
 * the counters start at zero with the process. The counters live in the rb_core
 * (core/internal.h) and are only touched on the core's loop.
 */
#ifndef RB_CORE_STATS_H
#define RB_CORE_STATS_H

#include <stddef.h>
#include <stdint.h>

#include "core/backend/backend.h"
#include "core/core.h"

/** Why a session ended, as a class: deleted (DELETE /sessions/{id}, or its MCP session ended),
 * idle (the idle timeout), dead (its sandbox stopped while the session was in use), error (its
 * sandbox never came up: the creation, or the reconnection after a restart, failed). */
typedef enum stats_end {
    STATS_END_DELETED,
    STATS_END_IDLE,
    STATS_END_DEAD,
    STATS_END_ERROR,
    STATS_END_MAX
} stats_end;

/** How an execution finished (the final statuses of core.h). */
typedef enum stats_exec {
    STATS_EXEC_COMPLETED,
    STATS_EXEC_ERROR,
    STATS_EXEC_TIMEOUT,
    STATS_EXEC_CANCELLED,
    STATS_EXEC_MAX
} stats_exec;

/** Live session statuses (ended and dead sessions are no longer live). */
typedef enum stats_live {
    STATS_LIVE_STARTING,
    STATS_LIVE_READY,
    STATS_LIVE_BUSY,
    STATS_LIVE_PAUSING,
    STATS_LIVE_SUSPENDED,
    STATS_LIVE_HIBERNATED,
    STATS_LIVE_RESUMING,
    STATS_LIVE_MAX
} stats_live;

/** Buckets of the execution duration histogram: upper bound i in seconds, ascending (from a
 * fast print() to the longest timeouts operators allow); a last bucket, +Inf, is implied. */
#define STATS_DURATION_BUCKETS 12
static inline double stats_duration_bound(int i)
{
    static const double bounds[STATS_DURATION_BUCKETS] = {0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300};
    return i >= 0 && i < STATS_DURATION_BUCKETS ? bounds[i] : 0;
}

/* The label value of each class ("deleted", "completed", "ready", ...): static strings, here so
 * that every reader (and the server tests' fake core) uses the same fixed sets. */
static inline const char *stats_end_name(stats_end e)
{
    static const char *const names[STATS_END_MAX] = {"deleted", "idle", "dead", "error"};
    return (unsigned)e < STATS_END_MAX ? names[e] : "";
}
static inline const char *stats_exec_name(stats_exec x)
{
    static const char *const names[STATS_EXEC_MAX] = {"completed", "error", "timeout", "cancelled"};
    return (unsigned)x < STATS_EXEC_MAX ? names[x] : "";
}
static inline const char *stats_live_name(stats_live l)
{
    static const char *const names[STATS_LIVE_MAX] = {"starting", "ready", "busy", "pausing", "suspended",
                                                              "hibernated", "resuming"};
    return (unsigned)l < STATS_LIVE_MAX ? names[l] : "";
}

/** The counters that only grow, since the core started. */
typedef struct stats_counters {
    uint64_t sessions_created; /* accepted by core_session_create (then starting) */
    uint64_t sessions_ended[STATS_END_MAX];
    uint64_t executions_finished[STATS_EXEC_MAX];
    /* Executions that ran (started), by duration: duration_bucket[i] counts those of at most
     * stats_duration_bound(i) seconds and more than the bound before (not cumulative); the
     * last one those beyond every bound. */
    uint64_t duration_bucket[STATS_DURATION_BUCKETS + 1];
    uint64_t duration_count;
    double duration_sum; /* seconds */
    uint64_t output_bytes;  /* output kept of finished executions (stream text and display data) */
    uint64_t dropped_bytes; /* output dropped by their caps */
    int64_t mcp_sessions;   /* live MCP client sessions (a gauge the MCP registry reports) */
} stats_counters;

/** A reading: the counters plus the gauges of the moment. */
typedef struct stats_snapshot {
    stats_counters total;
    int sessions[STATS_LIVE_MAX];
    int executions_running, executions_queued;
    int pool_size, pool_ready, pool_starting;
    int pool_target;         /* what the pool keeps now (follows demand, core/pool_demand.h) */
    char pool_reason[16];    /* why: "minimum", "rate", "maximum", "memory", "idle" */
    int64_t pool_hits, pool_misses;
    int docker_reachable; /* 1 when the last probe of the engine answered */
    backend_stats engine; /* the calls the sandbox engine answered, by operation (backend_stats_read) */
    /* networks by policy (core/network/egress.h): sessions with an egress proxy now, and what the
     * proxies did since start */
    int64_t egress_proxies, egress_allowed, egress_unreachable, egress_restarts;
    int64_t egress_refused[8]; /* by reason: egress_refusal_names (core/network/egress.h), n_egress_refusals */
    const char *const *egress_refusal_names;
    int n_egress_refusals;
    int64_t egress_bytes_up, egress_bytes_down;
    int64_t egress_secret_uses, egress_secret_refusals; /* secrets added to requests; refused (docs/network.md) */
} stats_snapshot;

/** Fills *out with the current numbers of c (cost: one pass over live sessions and executions). */
void stats_read(rb_core *c, stats_snapshot *out);

/*
 * For core/ only: the hooks that move the counters, one call at the place where it happens.
 */
struct execution;
/** A session was accepted (core_session_create). */
void stats_session_created(rb_core *c);
/** A live session in status from ends with status ("ended"|"dead") and reason (session_end). */
void stats_session_ended(rb_core *c, const char *from, const char *status, const char *reason);
/** ex has finished (execution_finish, after its status, duration and byte counts are final). */
void stats_execution_finished(rb_core *c, const struct execution *ex);
/** The MCP registry now holds n live sessions. */
void stats_mcp_sessions(rb_core *c, size_t n);

#endif

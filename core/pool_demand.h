/*
 * pool_demand: how many warm sandboxes the pool should keep, from what it has seen. Pure
 * functions of their arguments (no loop, no Docker, no clock), so that the sizing rule is unit
 * tested on its own (tests/core/test_pool_demand.c); core/pool.c feeds them its observations.
 *
 * The rule: a warm sandbox taken from the pool is replaced after one refill time, so the pool
 * covers a stream of creates when it holds what arrives during one refill (Little's law):
 * rate x refill time, rounded up, plus one. The target never goes below the configured minimum
 * (--pool-size), nor above the configured maximum (--pool-max), nor above what the memory left
 * on the engine holds (each warm sandbox counted at its expected size). After a quiet spell it
 * falls back to the minimum at once. Internal to core/.
 */
#ifndef RB_CORE_POOL_DEMAND_H
#define RB_CORE_POOL_DEMAND_H

#include <stdint.h>

/** Why the target is what it is (pool_demand_reason_name for /health and /metrics). */
typedef enum pool_demand_reason {
    POOL_DEMAND_MINIMUM, /* the demand is at most --pool-size */
    POOL_DEMAND_RATE,    /* the recent rate of creates asks for more than the minimum */
    POOL_DEMAND_MAXIMUM, /* the rate asks for more than --pool-max */
    POOL_DEMAND_MEMORY,  /* the rate asks for more than the memory left holds */
    POOL_DEMAND_IDLE,    /* no create for a while: back to the minimum */
} pool_demand_reason;

/** What pool_demand_target decides from. */
typedef struct pool_demand_in {
    int min, max;            /* --pool-size and --pool-max (max < min counts as min) */
    double rate_per_s;       /* recent creates per second (pool_demand_rate) */
    double refill_s;         /* seconds a warm sandbox takes to become ready (<= 0: 1 s) */
    int64_t idle_ms;         /* since the last create */
    int64_t idle_after_ms;   /* a quiet spell this long ends the demand (<= 0: never) */
    int memory_cap;          /* warm sandboxes the memory left holds (< 0: unknown, no bound) */
} pool_demand_in;

/** The number of warm sandboxes to keep (>= in->min, >= 0) and, through why (may be NULL), the
 * reason. */
int pool_demand_target(const pool_demand_in *in, pool_demand_reason *why);

/** The reason's name: "minimum", "rate", "maximum", "memory", "idle" (static). */
const char *pool_demand_reason_name(pool_demand_reason why);

/** An exponentially decaying rate of events per second with time constant tau_ms: the rate
 * elapsed_ms after the last reading `rate`, plus `events` new events now. Start from 0. */
double pool_demand_rate(double rate, int64_t elapsed_ms, int events, int64_t tau_ms);

/** Warm sandboxes that fit in avail_bytes of memory left when each takes per_sandbox bytes and
 * reserve_bytes stay free for sessions, on top of the held ones already counted in the memory
 * used (-1 when avail_bytes < 0: unknown). */
int pool_demand_memory_cap(int64_t avail_bytes, int64_t reserve_bytes, int64_t per_sandbox, int held);

#endif

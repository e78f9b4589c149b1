/*
 * pool_demand.c: the warm pool's sizing rule (core/pool_demand.h), pure functions only.
 */
#include <math.h>
#include <stddef.h>

#include "core/pool_demand.h"

#define RATE_CAP 1e6 /* creates per second: anything above is nonsense and would overflow an int */

int pool_demand_target(const pool_demand_in *in, pool_demand_reason *why)
{
    pool_demand_reason r = POOL_DEMAND_MINIMUM;
    int min = in->min > 0 ? in->min : 0;
    int max = in->max > min ? in->max : min;
    int target = min;
    if (in->idle_after_ms > 0 && in->idle_ms >= in->idle_after_ms) {
        r = min > 0 ? POOL_DEMAND_IDLE : POOL_DEMAND_MINIMUM;
        goto done;
    }
    double rate = in->rate_per_s > 0 && isfinite(in->rate_per_s) ? fmin(in->rate_per_s, RATE_CAP) : 0;
    double refill = in->refill_s > 0 && isfinite(in->refill_s) ? fmin(in->refill_s, 3600) : 1.0;
    /* What arrives while one refill runs, and one more so that a claim never finds it empty;
     * below one create per refill the minimum is enough. */
    double need = rate * refill;
    int want = need < 1.0 ? 0 : (int)fmin(ceil(need) + 1, (double)(max + 1));
    if (want <= min)
        goto done;
    target = want;
    r = POOL_DEMAND_RATE;
    if (target > max) {
        target = max;
        r = POOL_DEMAND_MAXIMUM;
    }
    if (in->memory_cap >= 0 && target > in->memory_cap) {
        target = in->memory_cap > min ? in->memory_cap : min;
        r = POOL_DEMAND_MEMORY;
    }
done:
    if (why != NULL)
        *why = r;
    return target;
}

const char *pool_demand_reason_name(pool_demand_reason why)
{
    switch (why) {
    case POOL_DEMAND_RATE:
        return "rate";
    case POOL_DEMAND_MAXIMUM:
        return "maximum";
    case POOL_DEMAND_MEMORY:
        return "memory";
    case POOL_DEMAND_IDLE:
        return "idle";
    case POOL_DEMAND_MINIMUM:
    default:
        return "minimum";
    }
}

double pool_demand_rate(double rate, int64_t elapsed_ms, int events, int64_t tau_ms)
{
    if (tau_ms <= 0)
        tau_ms = 1;
    if (!(rate > 0) || !isfinite(rate))
        rate = 0;
    if (elapsed_ms > 0)
        rate *= exp(-(double)elapsed_ms / (double)tau_ms);
    if (events > 0)
        rate += (double)events * 1000.0 / (double)tau_ms;
    return fmin(rate, RATE_CAP);
}

int pool_demand_memory_cap(int64_t avail_bytes, int64_t reserve_bytes, int64_t per_sandbox, int held)
{
    if (avail_bytes < 0)
        return -1;
    if (per_sandbox <= 0)
        per_sandbox = 1;
    int64_t spare = avail_bytes - (reserve_bytes > 0 ? reserve_bytes : 0);
    int64_t more = spare > 0 ? spare / per_sandbox : 0;
    if (more > 100000)
        more = 100000;
    return (held > 0 ? held : 0) + (int)more;
}

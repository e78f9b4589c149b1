/*
 * Tests of core/pool_demand.c: the warm pool's sizing rule, a pure function (no Docker): the
 * target follows the rate of creates between --pool-size and --pool-max, is bounded by the
 * memory left, falls back to the minimum when idle, and names its reason.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "core/pool_demand.h"

static pool_demand_in base(void)
{
    return (pool_demand_in){.min = 2, .max = 16, .rate_per_s = 0, .refill_s = 1.0, .idle_ms = 0,
                            .idle_after_ms = 60000, .memory_cap = -1};
}

Test(pool_demand, no_demand_keeps_the_minimum)
{
    pool_demand_in in = base();
    pool_demand_reason why = POOL_DEMAND_RATE;
    cr_assert_eq(pool_demand_target(&in, &why), 2);
    cr_assert_eq(why, POOL_DEMAND_MINIMUM);
    cr_assert_str_eq(pool_demand_reason_name(why), "minimum");
}

Test(pool_demand, a_slow_rate_stays_at_the_minimum)
{
    pool_demand_in in = base();
    in.rate_per_s = 0.5; /* one create every two refills */
    pool_demand_reason why;
    cr_assert_eq(pool_demand_target(&in, &why), 2);
    cr_assert_eq(why, POOL_DEMAND_MINIMUM);
}

Test(pool_demand, the_target_covers_what_arrives_during_a_refill)
{
    pool_demand_in in = base();
    in.rate_per_s = 5;  /* one every 200 ms */
    in.refill_s = 1.5;  /* 7.5 arrive during one refill */
    pool_demand_reason why;
    cr_assert_eq(pool_demand_target(&in, &why), 9);
    cr_assert_eq(why, POOL_DEMAND_RATE);
    cr_assert_str_eq(pool_demand_reason_name(why), "rate");
}

Test(pool_demand, the_maximum_bounds_it)
{
    pool_demand_in in = base();
    in.rate_per_s = 100;
    pool_demand_reason why;
    cr_assert_eq(pool_demand_target(&in, &why), 16);
    cr_assert_eq(why, POOL_DEMAND_MAXIMUM);
}

Test(pool_demand, the_memory_left_bounds_it_but_never_below_the_minimum)
{
    pool_demand_in in = base();
    in.rate_per_s = 100;
    in.memory_cap = 5;
    pool_demand_reason why;
    cr_assert_eq(pool_demand_target(&in, &why), 5);
    cr_assert_eq(why, POOL_DEMAND_MEMORY);
    in.memory_cap = 0;
    cr_assert_eq(pool_demand_target(&in, &why), 2);
    cr_assert_eq(why, POOL_DEMAND_MEMORY);
    cr_assert_str_eq(pool_demand_reason_name(why), "memory");
}

Test(pool_demand, idle_shrinks_to_the_minimum)
{
    pool_demand_in in = base();
    in.rate_per_s = 5;
    in.idle_ms = 60000;
    pool_demand_reason why;
    cr_assert_eq(pool_demand_target(&in, &why), 2);
    cr_assert_eq(why, POOL_DEMAND_IDLE);
    cr_assert_str_eq(pool_demand_reason_name(why), "idle");
    in.idle_after_ms = 0; /* never */
    cr_assert_eq(pool_demand_target(&in, &why), 6); /* 5 a second x 1 s refill, + 1 */
    cr_assert_eq(why, POOL_DEMAND_RATE);
}

Test(pool_demand, a_maximum_below_the_minimum_counts_as_the_minimum)
{
    pool_demand_in in = base();
    in.max = 0;
    in.rate_per_s = 50;
    cr_assert_eq(pool_demand_target(&in, NULL), 2);
    in.min = 0;
    cr_assert_eq(pool_demand_target(&in, NULL), 0);
}

Test(pool_demand, nonsense_inputs_give_a_bounded_answer)
{
    pool_demand_in in = base();
    in.rate_per_s = INFINITY;
    cr_assert_eq(pool_demand_target(&in, NULL), 2);
    in.rate_per_s = NAN;
    cr_assert_eq(pool_demand_target(&in, NULL), 2);
    in.rate_per_s = 1e300;
    in.refill_s = 1e300;
    cr_assert_eq(pool_demand_target(&in, NULL), 16);
    in.rate_per_s = -3;
    cr_assert_eq(pool_demand_target(&in, NULL), 2);
}

Test(pool_demand, the_rate_rises_with_creates_and_decays)
{
    double r = 0;
    for (int i = 0; i < 50; i++)
        r = pool_demand_rate(r, 200, 1, 10000); /* one every 200 ms for 10 s */
    cr_assert(r > 2.5 && r < 5.0, "rate %f", r);
    double later = pool_demand_rate(r, 30000, 0, 10000);
    cr_assert(later < r / 10, "decayed %f from %f", later, r);
    cr_assert_eq(pool_demand_rate(NAN, 0, 0, 10000), 0);
    cr_assert(pool_demand_rate(0, 0, 1, 0) > 0); /* tau 0 counts as 1 ms, no division by zero */
}

Test(pool_demand, memory_cap_counts_what_fits_beside_the_reserve)
{
    int64_t mib = 1024 * 1024;
    cr_assert_eq(pool_demand_memory_cap(-1, 0, 128 * mib, 3), -1);
    cr_assert_eq(pool_demand_memory_cap(1024 * mib, 512 * mib, 128 * mib, 3), 3 + 4);
    cr_assert_eq(pool_demand_memory_cap(100 * mib, 512 * mib, 128 * mib, 2), 2);
    cr_assert_eq(pool_demand_memory_cap(INT64_MAX, 0, 1, 0), 100000);
}

/*
 * test_latency.c: the call latency histogram (base/latency.h): bounds ascend, an observation
 * lands in the first bucket whose bound it does not exceed (a bound itself included), beyond
 * every bound in the last one, and negative durations count as zero.
 */
#include <criterion/criterion.h>

#include "base/latency.h"

Test(latency, bounds_ascend)
{
    for (int i = 1; i < RB_LATENCY_BUCKETS; i++)
        cr_expect_gt(rb_latency_bound(i), rb_latency_bound(i - 1), "bound %d", i);
    cr_expect_eq(rb_latency_bound(-1), 0);
    cr_expect_eq(rb_latency_bound(RB_LATENCY_BUCKETS), 0);
}

Test(latency, observations_land_in_their_bucket)
{
    rb_latency h = {0};
    rb_latency_add(&h, 0.001);                      /* the first bucket */
    rb_latency_add(&h, rb_latency_bound(3));        /* a bound itself: its bucket */
    rb_latency_add(&h, rb_latency_bound(3) + 1e-9); /* just over it: the next */
    rb_latency_add(&h, 1e6);                        /* beyond every bound */
    rb_latency_add(&h, -5);                         /* counts as 0 s */
    cr_expect_eq(h.bucket[0], 2);
    cr_expect_eq(h.bucket[3], 1);
    cr_expect_eq(h.bucket[4], 1);
    cr_expect_eq(h.bucket[RB_LATENCY_BUCKETS], 1);
    cr_expect_eq(h.count, 5);
    cr_expect_float_eq(h.sum, 0.001 + 2 * rb_latency_bound(3) + 1e-9 + 1e6, 1e-6);
}

/* Tests for core/usage/ring.c: the bounded ring of a session's usage samples. */
#include <criterion/criterion.h>

#include "core/usage/ring.h"

static usage_sample at(int64_t ms)
{
    usage_sample s = {0};
    s.at_ms = ms;
    s.mem_bytes = ms * 10;
    return s;
}

Test(usage_ring, empty_then_in_order)
{
    usage_ring *r = usage_ring_new(4);
    cr_assert_eq(usage_ring_count(r), 0);
    cr_assert_null(usage_ring_last(r));
    for (int i = 1; i <= 3; i++) {
        usage_sample s = at(i);
        usage_ring_push(r, &s);
    }
    cr_assert_eq(usage_ring_count(r), 3);
    for (size_t i = 0; i < 3; i++)
        cr_assert_eq(usage_ring_at(r, i)->at_ms, (int64_t)i + 1);
    cr_assert_eq(usage_ring_last(r)->at_ms, 3);
    cr_assert_eq(usage_ring_last(r)->mem_bytes, 30);
    usage_ring_free(r);
}

Test(usage_ring, bounded_and_wraps_around)
{
    usage_ring *r = usage_ring_new(4);
    for (int i = 1; i <= 11; i++) {
        usage_sample s = at(i);
        usage_ring_push(r, &s);
        cr_assert_leq(usage_ring_count(r), 4);
        cr_assert_eq(usage_ring_last(r)->at_ms, i);
    }
    /* the last four, oldest first, across the wrap */
    cr_assert_eq(usage_ring_count(r), 4);
    for (size_t i = 0; i < 4; i++)
        cr_assert_eq(usage_ring_at(r, i)->at_ms, (int64_t)(8 + i));
    usage_ring_free(r);
}

Test(usage_ring, exactly_full)
{
    usage_ring *r = usage_ring_new(3);
    for (int i = 1; i <= 3; i++) {
        usage_sample s = at(i);
        usage_ring_push(r, &s);
    }
    cr_assert_eq(usage_ring_count(r), 3);
    cr_assert_eq(usage_ring_at(r, 0)->at_ms, 1);
    cr_assert_eq(usage_ring_at(r, 2)->at_ms, 3);
    cr_assert_eq(usage_ring_last(r)->at_ms, 3);
    usage_ring_free(r);
}

Test(usage_ring, capacity_one)
{
    usage_ring *r = usage_ring_new(1);
    for (int i = 1; i <= 5; i++) {
        usage_sample s = at(i);
        usage_ring_push(r, &s);
        cr_assert_eq(usage_ring_count(r), 1);
        cr_assert_eq(usage_ring_at(r, 0)->at_ms, i);
    }
    usage_ring_free(r);
}

Test(usage_ring, free_accepts_null)
{
    usage_ring_free(NULL);
}

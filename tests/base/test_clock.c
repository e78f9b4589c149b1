/*
 * test_clock.c: base/clock.c: RFC 3339 formatting of epoch milliseconds, whatever the value
 * (times of files come from a sandbox: its runner's files_written, its file listings), and
 * random identifiers.
 */
#include <stdint.h>
#include <string.h>

#include <criterion/criterion.h>

#include "base/clock.h"

static const char *fmt(int64_t ms, char *buf, size_t len)
{
    memset(buf, 'Z', len); /* no NUL to find but the one the formatter writes */
    rb_time_format(ms, buf, len);
    return buf;
}

Test(clock, rfc3339_with_milliseconds)
{
    char buf[40];
    cr_expect_str_eq(fmt(0, buf, sizeof(buf)), "1970-01-01T00:00:00.000Z");
    cr_expect_str_eq(fmt(1700000000123, buf, sizeof(buf)), "2023-11-14T22:13:20.123Z");
    cr_expect_str_eq(fmt(253402300799999, buf, sizeof(buf)), "9999-12-31T23:59:59.999Z");
}

/* Before 1970 the milliseconds still count forward from the second before: -1 ms is
 * 23:59:59.999 of the last day of 1969 (it was "1970-01-01T00:00:00.-01Z"). */
Test(clock, before_the_epoch)
{
    char buf[40];
    cr_expect_str_eq(fmt(-1, buf, sizeof(buf)), "1969-12-31T23:59:59.999Z");
    cr_expect_str_eq(fmt(-500, buf, sizeof(buf)), "1969-12-31T23:59:59.500Z");
    cr_expect_str_eq(fmt(-86400000, buf, sizeof(buf)), "1969-12-31T00:00:00.000Z");
}

/* Years past 9999 (or before year 0) do not fit the form: strftime gave up half-way and left
 * its buffer without a NUL, which was then read as a string. Such times are clamped. */
Test(clock, out_of_range_times_are_clamped)
{
    char buf[40];
    cr_expect_str_eq(fmt(INT64_MAX, buf, sizeof(buf)), "9999-12-31T23:59:59.999Z");
    cr_expect_str_eq(fmt(3200000000000000000, buf, sizeof(buf)), "9999-12-31T23:59:59.999Z");
    cr_expect_str_eq(fmt(INT64_MIN, buf, sizeof(buf)), "0000-01-01T00:00:00.000Z");
    cr_expect_str_eq(fmt(-62167219200000, buf, sizeof(buf)), "0000-01-01T00:00:00.000Z");
    cr_expect_str_eq(fmt(-62135596800000, buf, sizeof(buf)), "0001-01-01T00:00:00.000Z");
}

Test(clock, short_buffer_is_cut_and_terminated)
{
    char buf[8];
    cr_expect_str_eq(fmt(0, buf, sizeof(buf)), "1970-01");
}

Test(clock, random_ids)
{
    char a[40], b[40];
    rb_random_id("e_", a, sizeof(a));
    rb_random_id("e_", b, sizeof(b));
    cr_expect_eq(strlen(a), 34);
    cr_expect_eq(strncmp(a, "e_", 2), 0);
    cr_expect_eq(strspn(a + 2, "0123456789abcdef"), 32);
    cr_expect_str_neq(a, b);
}

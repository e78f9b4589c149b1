/*
 * clock.c: clocks, time formatting and random ids (base/clock.h).
 */
#include "base/clock.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/random.h>

#include "base/codec.h"

int64_t rb_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t rb_mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* The times RFC 3339's four-digit years can show: 0000-01-01T00:00:00.000Z to
 * 9999-12-31T23:59:59.999Z. */
#define TIME_MIN_MS INT64_C(-62167219200000)
#define TIME_MAX_MS INT64_C(253402300799999)

void rb_time_format(int64_t ms, char *buf, size_t len)
{
    /* Times can come from a sandbox (file times): out of range they are clamped, and before
     * 1970 the milliseconds count from the second before (floor, not truncation). */
    ms = ms < TIME_MIN_MS ? TIME_MIN_MS : ms > TIME_MAX_MS ? TIME_MAX_MS : ms;
    int64_t frac = ms % 1000;
    if (frac < 0)
        frac += 1000;
    time_t secs = (time_t)((ms - frac) / 1000);
    struct tm tm;
    gmtime_r(&secs, &tm);
    snprintf(buf, len, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
             tm.tm_hour, tm.tm_min, tm.tm_sec, (int)frac);
}

void rb_random_id(const char *prefix, char *buf, size_t len)
{
    unsigned char raw[16];
    size_t got = 0;
    while (got < sizeof(raw)) {
        ssize_t r = getrandom(raw + got, sizeof(raw) - got, 0);
        if (r <= 0) {
            fprintf(stderr, "runbox: getrandom failed\n");
            abort();
        }
        got += (size_t)r;
    }
    size_t plen = strlen(prefix);
    if (len < plen + 33)
        abort();
    memcpy(buf, prefix, plen);
    codec_hex_encode(raw, sizeof(raw), buf + plen);
}

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

/* n digits at s as a number, or -1. */
static int digits(const char *s, int n)
{
    int v = 0;
    for (int i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -1;
        v = v * 10 + (s[i] - '0');
    }
    return v;
}

/* Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's days_from_civil). */
static int64_t days_from_civil(int64_t y, int m, int d)
{
    y -= m <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    int64_t yoe = y - era * 400;
    int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

int rb_time_parse(const char *s, int64_t *ms)
{
    static const int mdays[12] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    size_t n = strlen(s);
    if (n < 19 || s[4] != '-' || s[7] != '-' || (s[10] != 'T' && s[10] != 't' && s[10] != ' ') || s[13] != ':' ||
        s[16] != ':')
        return -1;
    int y = digits(s, 4), mo = digits(s + 5, 2), d = digits(s + 8, 2);
    int h = digits(s + 11, 2), mi = digits(s + 14, 2), se = digits(s + 17, 2);
    if (y < 0 || mo < 1 || mo > 12 || d < 1 || d > mdays[mo - 1] || h < 0 || h > 23 || mi < 0 || mi > 59 || se < 0 ||
        se > 60)
        return -1;
    if (mo == 2 && d == 29 && !((y % 4 == 0 && y % 100 != 0) || y % 400 == 0))
        return -1;
    const char *p = s + 19;
    int frac = 0, scale = 100;
    if (*p == '.') {
        p++;
        if (*p < '0' || *p > '9')
            return -1;
        for (; *p >= '0' && *p <= '9'; p++) {
            frac += (*p - '0') * scale;
            scale /= 10;
        }
    }
    int offset = 0; /* minutes east of UTC */
    if (*p == 'Z' || *p == 'z') {
        p++;
    } else if (*p == '+' || *p == '-') {
        int oh = digits(p + 1, 2), om = p[1] && p[2] && p[3] == ':' ? digits(p + 4, 2) : -1;
        if (oh < 0 || oh > 23 || om < 0 || om > 59)
            return -1;
        offset = (*p == '+' ? 1 : -1) * (oh * 60 + om);
        p += 6;
    }
    if (*p != '\0')
        return -1;
    int64_t secs = days_from_civil(y, mo, d) * 86400 + (int64_t)h * 3600 + mi * 60 + se - (int64_t)offset * 60;
    *ms = secs * 1000 + frac;
    return 0;
}


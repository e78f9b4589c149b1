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

void rb_time_format(int64_t ms, char *buf, size_t len)
{
    time_t secs = (time_t)(ms / 1000);
    struct tm tm;
    gmtime_r(&secs, &tm);
    char base[24];
    strftime(base, sizeof(base), "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(buf, len, "%s.%03dZ", base, (int)(ms % 1000));
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

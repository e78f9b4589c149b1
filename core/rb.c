/*
 * rb.c: shared helpers declared in rb.h (errors, allocation, clocks, ids, buffers, logging).
 */
#include "core/rb.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/random.h>

#include "core/codec.h"

static const char *const err_names[RB_ERR_MAX] = {
    [RB_OK] = "ok",
    [RB_EINVAL] = "invalid_request",
    [RB_ENOTFOUND] = "not_found",
    [RB_ECONFLICT] = "conflict",
    [RB_ETOOBIG] = "payload_too_large",
    [RB_EMEDIA] = "unsupported_media_type",
    [RB_EUNAVAILABLE] = "docker_unavailable",
    [RB_EBUSY] = "too_many_requests",
    [RB_ETIMEDOUT] = "timeout",
    [RB_ECANCELED] = "cancelled",
    [RB_EIO] = "upstream_error",
    [RB_ESTORE] = "store_error",
    [RB_EINTERNAL] = "internal_error",
    [RB_EFORBIDDEN] = "forbidden",
};

const char *rb_strerror(rb_err e)
{
    if ((unsigned)e >= RB_ERR_MAX)
        return "unknown_error";
    return err_names[e];
}

rb_err rb_fail(rb_err e, char *err, const char *fmt, ...)
{
    if (err != NULL) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, RB_ERR_LEN, fmt, ap);
        va_end(ap);
    }
    return e;
}

static void oom(size_t n)
{
    fprintf(stderr, "runbox: out of memory allocating %zu bytes\n", n);
    abort();
}

void *xmalloc(size_t n)
{
    void *p = malloc(n == 0 ? 1 : n);
    if (p == NULL)
        oom(n);
    return p;
}

void *xcalloc(size_t n, size_t size)
{
    void *p = calloc(n == 0 ? 1 : n, size == 0 ? 1 : size);
    if (p == NULL)
        oom(n * size);
    return p;
}

void *xrealloc(void *p, size_t n)
{
    p = realloc(p, n == 0 ? 1 : n);
    if (p == NULL)
        oom(n);
    return p;
}

char *xstrdup(const char *s)
{
    return xstrndup(s, strlen(s));
}

char *xstrndup(const char *s, size_t n)
{
    char *p = xmalloc(n + 1);
    memcpy(p, s, n);
    p[n] = '\0';
    return p;
}

char *xasprintf(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0)
        oom(0);
    char *p = xmalloc((size_t)n + 1);
    va_start(ap, fmt);
    vsnprintf(p, (size_t)n + 1, fmt, ap);
    va_end(ap);
    return p;
}

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

void rb_buf_init(rb_buf *b, size_t max)
{
    b->data = NULL;
    b->len = b->cap = 0;
    b->max = max;
}

void rb_buf_dispose(rb_buf *b)
{
    free(b->data);
    b->data = NULL;
    b->len = b->cap = 0;
}

rb_err rb_buf_append(rb_buf *b, const void *p, size_t n)
{
    if (n > b->max || b->len > b->max - n)
        return RB_ETOOBIG;
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->len + n + 1)
            cap *= 2;
        b->data = xrealloc(b->data, cap);
        b->cap = cap;
    }
    if (n > 0)
        memcpy(b->data + b->len, p, n);
    b->len += n;
    b->data[b->len] = '\0'; /* always NUL-terminated for convenience; not counted in len */
    return RB_OK;
}

void rb_buf_reset(rb_buf *b)
{
    b->len = 0;
    if (b->data != NULL)
        b->data[0] = '\0';
}

void rb_buf_consume(rb_buf *b, size_t n)
{
    if (n >= b->len) {
        rb_buf_reset(b);
        return;
    }
    memmove(b->data, b->data + n, b->len - n);
    b->len -= n;
    b->data[b->len] = '\0';
}

static rb_log_level log_level = RB_LOG_INFO;

void rb_log_set_level(rb_log_level lvl)
{
    log_level = lvl;
}

int rb_log_parse_level(const char *s, rb_log_level *out)
{
    static const char *const names[] = {"debug", "info", "warn", "error"};
    for (int i = 0; i < 4; i++) {
        if (strcmp(s, names[i]) == 0) {
            *out = (rb_log_level)i;
            return 0;
        }
    }
    return -1;
}

void rb_log(rb_log_level lvl, const char *fmt, ...)
{
    static const char *const tags[] = {"debug", "info", "warn", "error"};
    if (lvl < log_level)
        return;
    char ts[32], line[2048];
    rb_time_format(rb_now_ms(), ts, sizeof(ts));
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    /* One event, one line: fold any CR/LF that slipped into the message. */
    for (char *p = line; *p; p++)
        if (*p == '\n' || *p == '\r')
            *p = ' ';
    fprintf(stderr, "%s %s %s\n", ts, tags[lvl], line);
}

/*
 * query.c: see query.h.
 */
#include "server/query.h"

#include <string.h>

#include "base/clock.h"
#include "base/codec.h"

int query_find(const char *q, size_t n, const char *name, const char **value, size_t *len)
{
    const char *end = q + n;
    size_t nlen = strlen(name);
    while (q < end) {
        const char *amp = memchr(q, '&', (size_t)(end - q));
        const char *stop = amp ? amp : end;
        const char *eq = memchr(q, '=', (size_t)(stop - q));
        const char *kend = eq ? eq : stop;
        if ((size_t)(kend - q) == nlen && memcmp(q, name, nlen) == 0) {
            *value = eq ? eq + 1 : stop;
            *len = (size_t)(stop - *value);
            return 1;
        }
        q = stop + 1;
    }
    return 0;
}

size_t query_decode(const char *v, size_t n, char *out)
{
    const char *stop = v + n;
    size_t o = 0;
    for (const char *p = v; p < stop; p++) {
        if (*p == '%' && stop - p >= 3 && codec_hex_value(p[1]) >= 0 && codec_hex_value(p[2]) >= 0) {
            out[o++] = (char)(codec_hex_value(p[1]) * 16 + codec_hex_value(p[2]));
            p += 2;
        } else {
            out[o++] = *p;
        }
    }
    out[o] = '\0';
    return o;
}

int query_holds_nul(const char *q, size_t n)
{
    if (memchr(q, '\0', n) != NULL)
        return 1;
    for (size_t i = 0; i + 2 < n; i++)
        if (q[i] == '%' && q[i + 1] == '0' && q[i + 2] == '0')
            return 1;
    return 0;
}

int query_control(const char *q, size_t n, unsigned char *byte, size_t *pair, size_t *pair_len)
{
    size_t start = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)q[i];
        if (ch == '&') {
            start = i + 1;
            continue;
        }
        if (ch == '%' && n - i >= 3 && codec_hex_value(q[i + 1]) >= 0 && codec_hex_value(q[i + 2]) >= 0) {
            ch = (unsigned char)(codec_hex_value(q[i + 1]) * 16 + codec_hex_value(q[i + 2]));
            i += 2;
        }
        if (ch < 0x20 || ch == 0x7f) {
            const char *amp = memchr(q + i, '&', n - i);
            *byte = ch;
            *pair = start;
            *pair_len = (amp != NULL ? (size_t)(amp - q) : n) - start;
            return 1;
        }
    }
    return 0;
}

int query_whole(const char *s, int64_t max, int64_t *out)
{
    size_t n = strlen(s);
    if (n < 1 || n > 18 || strspn(s, "0123456789") != n)
        return 0;
    int64_t v = 0;
    for (size_t i = 0; i < n; i++)
        v = v * 10 + (s[i] - '0');
    if (v > max)
        return 0;
    *out = v;
    return 1;
}

int query_time(const char *s, int64_t *ms)
{
    if (strlen(s) <= 16 && query_whole(s, INT64_MAX, ms))
        return 1;
    int64_t t;
    if (rb_time_parse(s, &t) != 0 || t < 0)
        return 0;
    *ms = t;
    return 1;
}

/*
 * query.c: see query.h.
 */
#include "server/query.h"

#include <string.h>

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

/* n digits of s as a number into *v; 0 when one is not a digit. */
static int digits(const char *s, int n, int *v)
{
    *v = 0;
    for (int i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return 0;
        *v = *v * 10 + (s[i] - '0');
    }
    return 1;
}

/* Days from 1970-01-01 to y-m-d (proleptic Gregorian; Howard Hinnant's days_from_civil). */
static int64_t days_from_civil(int64_t y, int m, int d)
{
    y -= m <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    int64_t yoe = y - era * 400;
    int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

int query_time(const char *s, int64_t *ms)
{
    size_t n = strlen(s);
    if (n >= 1 && n <= 16 && strspn(s, "0123456789") == n) {
        int64_t v = 0;
        for (size_t i = 0; i < n; i++)
            v = v * 10 + (s[i] - '0');
        *ms = v;
        return 1;
    }
    int y, mo, d, h, mi, sec;
    if (n < 20 || !digits(s, 4, &y) || s[4] != '-' || !digits(s + 5, 2, &mo) || s[7] != '-' ||
        !digits(s + 8, 2, &d) || (s[10] != 'T' && s[10] != 't') || !digits(s + 11, 2, &h) || s[13] != ':' ||
        !digits(s + 14, 2, &mi) || s[16] != ':' || !digits(s + 17, 2, &sec))
        return 0;
    static const int mdays[] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    if (y < 1970 || mo < 1 || mo > 12 || d < 1 || d > mdays[mo - 1] || h > 23 || mi > 59 || sec > 60)
        return 0;
    const char *p = s + 19;
    int frac_ms = 0;
    if (*p == '.') {
        int k = 0;
        for (p++; *p >= '0' && *p <= '9'; p++, k++)
            if (k < 3)
                frac_ms = frac_ms * 10 + (*p - '0');
        if (k == 0 || k > 9)
            return 0;
        for (; k < 3; k++)
            frac_ms *= 10;
    }
    if (!(strcmp(p, "Z") == 0 || strcmp(p, "z") == 0 || strcmp(p, "+00:00") == 0))
        return 0;
    *ms = ((days_from_civil(y, mo, d) * 24 + h) * 60 + mi) * 60000 + (int64_t)sec * 1000 + frac_ms;
    return 1;
}

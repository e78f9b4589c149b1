/*
 * e2b_wire.c: E2B paths and the list's metadata filter (server/e2b/e2b_wire.h), pure
 * functions over untrusted bytes, fuzzed by tests/fuzz/fuzz_e2b.c.
 */
#include "server/e2b/e2b_wire.h"

#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "server/e2b/e2b.h"
#include "server/query.h"

const char *e2b_path_map(const char *path)
{
    static const char home[] = E2B_HOME;
    size_t nh = sizeof(home) - 1;
    if (path == NULL || path[0] == '\0')
        return NULL;
    if (path[0] != '/')
        return path;
    if (strncmp(path, home, nh) != 0 || (path[nh] != '\0' && path[nh] != '/'))
        return NULL;
    const char *rest = path + nh;
    while (*rest == '/')
        rest++;
    return *rest == '\0' ? E2B_WORKDIR : rest;
}

int e2b_metadata_match(const char *filter, size_t n, json_t *meta)
{
    size_t start = 0;
    int ok = 1;
    while (ok && start < n) {
        size_t stop = start;
        while (stop < n && filter[stop] != '&')
            stop++;
        if (stop > start) { /* "a=1&&b=2": empty pairs are skipped */
            const char *eq = memchr(filter + start, '=', stop - start);
            if (eq == NULL) {
                ok = 0;
                break;
            }
            size_t kn = (size_t)(eq - (filter + start)), vn = stop - start - kn - 1;
            char *key = xmalloc(kn + 1), *val = xmalloc(vn + 1);
            size_t klen = query_decode(filter + start, kn, key);
            size_t vlen = query_decode(eq + 1, vn, val);
            json_t *have = strlen(key) == klen ? json_object_get(meta, key) : NULL;
            ok = json_is_string(have) && json_string_length(have) == vlen &&
                 memcmp(json_string_value(have), val, vlen) == 0;
            free(key);
            free(val);
        }
        start = stop + 1;
    }
    return ok;
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

int e2b_time_parse(const char *s, int64_t *ms)
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

const char *e2b_language(const char *name)
{
    if (name == NULL)
        return NULL;
    if (strcmp(name, "js") == 0)
        return "javascript";
    if (strcmp(name, "ts") == 0)
        return "typescript";
    return name;
}

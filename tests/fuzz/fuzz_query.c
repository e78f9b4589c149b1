/*
 * fuzz_query.c: libFuzzer target for server/query.c, which reads the query string of every
 * request URI (untrusted, not NUL-terminated). The input is a query (what follows the '?'),
 * from a private exact-size copy so that any read past the end is caught. Checks:
 *   - query_find, for "path", "dir", "" and the input's own first name, agrees with a plain
 *     reference splitter (first pair of that name; a pair without '=' has an empty value) and
 *     gives a value inside the query;
 *   - query_decode of that value: never longer than the value, NUL-terminated, the same bytes
 *     as the strict codec_percent_decode wherever that one accepts the value, and without a
 *     NUL unless query_holds_nul refuses the query;
 *   - query_control: a value that holds a control character once decoded is always reported
 *     (the router refuses such a query), and what it reports is a control character that the
 *     pair it names, inside the query and without a '&', holds once decoded;
 *   - query_time and query_whole: a time is never negative, a whole number is the input's own
 *     digits and within its bound;
 *   - round trip: the input (up to its first NUL) percent-encoded by codec_percent_encode, as
 *     the value of path= after another pair, is found and decodes back to itself.
 * Built only with clang and -DRUNBOX_FUZZ=ON. The seed corpus (tests/fuzz/corpus/query/) is
 * replayed through these same checks by tests/server/test_query.c, which includes this file.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/codec.h"
#include "server/query.h"
#include "tests/fuzz/fuzz_check.h"

/* The first pair named name in q[0..n): the offset and length of its value. */
static int reference_find(const char *q, size_t n, const char *name, size_t *off, size_t *len)
{
    size_t nlen = strlen(name);
    for (size_t start = 0; start < n;) {
        size_t stop = start, eq;
        while (stop < n && q[stop] != '&')
            stop++;
        for (eq = start; eq < stop && q[eq] != '='; eq++)
            ;
        if (eq - start == nlen && memcmp(q + start, name, nlen) == 0) {
            *off = eq < stop ? eq + 1 : stop;
            *len = stop - *off;
            return 1;
        }
        start = stop + 1;
    }
    return 0;
}

static int has_control(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)s[i] < 0x20 || (unsigned char)s[i] == 0x7f)
            return 1;
    return 0;
}

static int control_reported(const char *q, size_t n)
{
    unsigned char byte = 0;
    size_t at = 0, plen = 0;
    return query_control(q, n, &byte, &at, &plen);
}

static void check_control(const char *q, size_t n)
{
    unsigned char byte = 0;
    size_t at = 0, plen = 0;
    if (!query_control(q, n, &byte, &at, &plen))
        return;
    FUZZ_CHECK(byte < 0x20 || byte == 0x7f);
    FUZZ_CHECK(at <= n && plen <= n - at && memchr(q + at, '&', plen) == NULL);
    char *out = malloc(plen + 1);
    size_t olen = query_decode(q + at, plen, out);
    FUZZ_CHECK(memchr(out, byte, olen) != NULL);
    free(out);
}

static void check_param(const char *q, size_t n, const char *name)
{
    const char *v = NULL;
    size_t len = 0, roff = 0, rlen = 0;
    int found = query_find(q, n, name, &v, &len);
    FUZZ_CHECK(found == reference_find(q, n, name, &roff, &rlen));
    if (!found)
        return;
    FUZZ_CHECK(v == q + roff && len == rlen);

    char *out = malloc(len + 1);
    size_t olen = query_decode(v, len, out);
    FUZZ_CHECK(olen <= len && out[olen] == '\0');
    FUZZ_CHECK(memchr(out, '\0', olen) == NULL || query_holds_nul(q, n));
    FUZZ_CHECK(!has_control(out, olen) || control_reported(q, n));
    /* where the strict decoder accepts the value, both agree */
    if (memchr(v, '\0', len) == NULL) {
        char *s = malloc(len + 1);
        memcpy(s, v, len);
        s[len] = '\0';
        char *strict = codec_percent_decode(s);
        FUZZ_CHECK(strict == NULL || (strlen(strict) == olen && memcmp(strict, out, olen) == 0));
        free(strict);
        free(s);
    }
    free(out);
}

static void check_round_trip(const char *s)
{
    char *enc = codec_percent_encode(s, "/");
    size_t elen = strlen(enc);
    char *q = malloc(elen + 16);
    memcpy(q, "dir=1&path=", 11);
    memcpy(q + 11, enc, elen);
    const char *v = NULL;
    size_t len = 0;
    FUZZ_CHECK(query_find(q, 11 + elen, "path", &v, &len));
    FUZZ_CHECK(v == q + 11 && len == elen);
    FUZZ_CHECK(!query_holds_nul(q, 11 + elen));
    char *out = malloc(len + 1);
    size_t olen = query_decode(v, len, out);
    FUZZ_CHECK(olen == strlen(s) && memcmp(out, s, olen) == 0);
    free(out);
    free(q);
    free(enc);
}

int LLVMFuzzerTestOneInput(const uint8_t *in, size_t n);

int LLVMFuzzerTestOneInput(const uint8_t *in, size_t n)
{
    char *copy = malloc(n > 0 ? n : 1);
    if (n > 0)
        memcpy(copy, in, n);
    else
        copy[0] = '\0'; /* never read: initialised for the compiler */
    check_param(copy, n, "path");
    check_param(copy, n, "dir");
    check_param(copy, n, "");
    /* the input's own first name, so that any name is looked up */
    char name[64];
    size_t k = 0;
    while (k < n && k < sizeof(name) - 1 && copy[k] != '=' && copy[k] != '&' && copy[k] != '\0') {
        name[k] = copy[k];
        k++;
    }
    name[k] = '\0';
    check_param(copy, n, name);
    FUZZ_CHECK(!query_holds_nul(copy, n) || control_reported(copy, n));
    check_control(copy, n);
    free(copy);

    char *str = malloc(n + 1);
    if (n > 0)
        memcpy(str, in, n);
    str[n] = '\0';
    check_round_trip(str);
    /* the times of GET /audit: never a read past the NUL, never a negative time */
    int64_t ms = -1;
    if (query_time(str, &ms))
        FUZZ_CHECK(ms >= 0);
    /* the whole numbers of limit=, after=, nextToken=: only digits, within the bound */
    int64_t w = -1;
    if (query_whole(str, 1000, &w))
        FUZZ_CHECK(w >= 0 && w <= 1000 && n >= 1 && strspn(str, "0123456789") == n);
    free(str);
    return 0;
}

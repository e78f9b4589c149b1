/*
 * test_query.c: server/query.c: finding a query parameter, decoding its value leniently, and
 * noticing an encoded NUL, and a replay of the libFuzzer seed corpus in tests/fuzz/corpus/query/
 * through the checks of tests/fuzz/fuzz_query.c.
 */
#include <criterion/criterion.h>
#include <string.h>

#include "server/query.h"
#include "tests/common/corpus.h"

/* The fuzz target, with its checks as Criterion assertions naming the seed. */
static const char *replay_seed = "";
#define FUZZ_CHECK(cond) cr_assert(cond, "%s: check failed: %s", replay_seed, #cond)
#include "tests/fuzz/fuzz_query.c"

/* The decoded value of name in q, "<none>" when absent. */
static const char *param(const char *q, const char *name, char *out, size_t cap)
{
    const char *v;
    size_t len;
    if (!query_find(q, strlen(q), name, &v, &len))
        return "<none>";
    cr_assert_lt(len, cap);
    cr_assert(v >= q && v + len <= q + strlen(q));
    size_t n = query_decode(v, len, out);
    cr_assert_eq(out[n], '\0');
    cr_assert_leq(n, len);
    return out;
}

Test(query, find_first_pair_of_a_name)
{
    char out[128];
    cr_expect_str_eq(param("path=a.csv&dir=x", "path", out, sizeof(out)), "a.csv");
    cr_expect_str_eq(param("path=a.csv&dir=x", "dir", out, sizeof(out)), "x");
    cr_expect_str_eq(param("path=1&path=2", "path", out, sizeof(out)), "1");
    cr_expect_str_eq(param("pathx=1&path=2", "path", out, sizeof(out)), "2");
    cr_expect_str_eq(param("pat=1", "path", out, sizeof(out)), "<none>");
    cr_expect_str_eq(param("path", "path", out, sizeof(out)), "");
    cr_expect_str_eq(param("path=", "path", out, sizeof(out)), "");
    cr_expect_str_eq(param("&&path=a=b&", "path", out, sizeof(out)), "a=b");
    cr_expect_str_eq(param("", "path", out, sizeof(out)), "<none>");
    cr_expect_str_eq(param("=x", "", out, sizeof(out)), "x");
    /* names are compared raw, not decoded */
    cr_expect_str_eq(param("p%61th=1", "path", out, sizeof(out)), "<none>");
}

Test(query, decode_is_lenient)
{
    char out[128];
    cr_expect_str_eq(param("path=out%2Fplot%20one.png", "path", out, sizeof(out)), "out/plot one.png");
    cr_expect_str_eq(param("path=%e2%82%ac", "path", out, sizeof(out)), "\xe2\x82\xac");
    cr_expect_str_eq(param("path=c++.txt", "path", out, sizeof(out)), "c++.txt");
    cr_expect_str_eq(param("path=100%", "path", out, sizeof(out)), "100%");
    cr_expect_str_eq(param("path=%4", "path", out, sizeof(out)), "%4");
    cr_expect_str_eq(param("path=%zz%41", "path", out, sizeof(out)), "%zzA");
    cr_expect_str_eq(param("path=%2541", "path", out, sizeof(out)), "%41");
}

Test(query, encoded_nul)
{
    char out[16];
    const char v[] = "a%00b";
    cr_assert_eq(query_decode(v, 5, out), 3);
    cr_assert_eq(memcmp(out, "a\0b", 4), 0);
    cr_expect(query_holds_nul("path=a%00b", 10));
    cr_expect(query_holds_nul("x=%00", 5));
    cr_expect(!query_holds_nul("x=%0", 4));
    cr_expect(!query_holds_nul("x=%2500", 7)); /* decodes to the text "%00" */
    cr_expect(!query_holds_nul("path=a%01b", 10));
    cr_expect(!query_holds_nul("", 0));
}

/* A NUL byte in the URI itself would be copied into the value just the same (h2o's HTTP/1
 * parser refuses control bytes in the request target; this does not rely on it). */
Test(query, raw_nul)
{
    cr_expect(query_holds_nul("path=a\0b", 8));
    cr_expect(query_holds_nul("=\0", 2));
    cr_expect(query_holds_nul("\0", 1));
}

/* Issue 37, "A NUL cuts a name": the router refuses a query that holds a control character,
 * raw or written %XX, naming the pair; "%2500" (the text "%00") and a lone "%0" are no such. */
Test(query, control_characters)
{
    unsigned char byte = 0;
    size_t at = 0, len = 0;
    const char q1[] = "limit=5&session=nulname%00junk&kind=x";
    cr_assert(query_control(q1, strlen(q1), &byte, &at, &len));
    cr_expect_eq(byte, 0);
    cr_expect_eq(at, 8);
    cr_expect_eq(len, strlen("session=nulname%00junk"));
    cr_assert(query_control("after=%00", 9, &byte, &at, &len));
    cr_expect(at == 0 && len == 9 && byte == 0);
    cr_assert(query_control("a=1&b=x%0ay", 11, &byte, &at, &len));
    cr_expect(byte == '\n' && at == 4 && len == 7);
    cr_assert(query_control("path=%7F", 8, &byte, &at, &len));
    cr_expect_eq(byte, 0x7f);
    cr_assert(query_control("%1f=1", 5, &byte, &at, &len));
    cr_expect_eq(byte, 0x1f);
    cr_assert(query_control("x=a\tb", 5, &byte, &at, &len));
    cr_expect_eq(byte, '\t');
    cr_expect(!query_control("x=%2500&y=%0&z=%20%7e%c3%a9", 27, &byte, &at, &len));
    cr_expect(!query_control("", 0, &byte, &at, &len));
}

static void check_query_seed(void *data, const char *seed, const char *path, const char *buf, size_t len)
{
    (void)data;
    (void)path;
    replay_seed = seed;
    LLVMFuzzerTestOneInput((const uint8_t *)buf, len);
}

Test(query, fuzz_corpus_replay)
{
    cr_assert_geq(corpus_each("query", check_query_seed, NULL), 10);
}

Test(query, times_in_epoch_ms_or_rfc3339_utc)
{
    int64_t ms = -1;
    cr_assert(query_time("0", &ms) && ms == 0);
    cr_assert(query_time("1764367500000", &ms) && ms == 1764367500000LL);
    cr_assert(query_time("2026-11-28T22:05:00Z", &ms));
    cr_assert_eq(ms, 1795903500000LL);
    cr_assert(query_time("2026-11-28T22:05:00.25Z", &ms) && ms == 1795903500250LL);
    cr_assert(query_time("2026-11-28t22:05:00.123456+00:00", &ms) && ms == 1795903500123LL);
    cr_assert(query_time("1970-01-01T00:00:00Z", &ms) && ms == 0);
    cr_assert(query_time("2024-02-29T00:00:00Z", &ms));
    cr_assert(query_time("2026-11-29T00:05:00+02:00", &ms) && ms == 1795903500000LL, "an offset is honoured");
    cr_assert(query_time("2026-11-28 22:05:00", &ms) && ms == 1795903500000LL, "no zone: UTC");
    const char *bad[] = {"", "-1", "12345678901234567", "1e3", "2026-11-28", "2026-11-28T22:05",
                         "2026-11-28T22:05:00+1:00", "2026-13-01T00:00:00Z", "2023-02-29T00:00:00Z", "2026-11-31T00:00:00Z",
                         "1969-12-31T23:59:59Z", "2026-11-28T24:00:00Z", "2026-11-28T22:05:00.Z",
                         "2026-11-28T22:05:00Zjunk", "２０２６-11-28T22:05:00Z"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        cr_assert(!query_time(bad[i], &ms), "accepted '%s'", bad[i]);
}

Test(query, whole_numbers_are_digits_only_and_bounded)
{
    int64_t v = -1;
    cr_assert(query_whole("0", 10, &v) && v == 0);
    cr_assert(query_whole("0010", 10, &v) && v == 10);
    cr_assert(query_whole("999999999999999999", INT64_MAX, &v) && v == 999999999999999999LL);
    /* strtol took a sign, blanks and a trailing newline: the old limit parsers let these through */
    const char *bad[] = {"", "+5", "-1", " 5", "5 ", "5\n", "0x10", "1e3", "11", "1000000000000000000", "５"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        cr_assert(!query_whole(bad[i], 10, &v), "accepted '%s'", bad[i]);
}

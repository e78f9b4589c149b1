/*
 * test_gzip.c: rb_gunzip (base/gzip.c): what gzip(1) makes comes back, several members join, the
 * bound holds however much a small body would inflate to, and bytes that are not gzip or end
 * early are refused; and a replay of the libFuzzer seed corpus in tests/fuzz/corpus/gzip/.
 */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "base/gzip.h"
#include "tests/common/corpus.h"

static const char *replay_seed = "";
#define FUZZ_CHECK(cond) cr_assert(cond, "%s: check failed: %s", replay_seed, #cond)
#include "tests/fuzz/fuzz_gzip.c"

/* src gzip'd with zlib (heap, *n bytes). */
static unsigned char *gz(const void *src, size_t len, size_t *n)
{
    z_stream z;
    memset(&z, 0, sizeof(z));
    cr_assert_eq(deflateInit2(&z, 9, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY), Z_OK);
    size_t cap = deflateBound(&z, len) + 64;
    unsigned char *out = malloc(cap);
    z.next_in = (unsigned char *)src;
    z.avail_in = (uInt)len;
    z.next_out = out;
    z.avail_out = (uInt)cap;
    cr_assert_eq(deflate(&z, Z_FINISH), Z_STREAM_END);
    *n = cap - z.avail_out;
    deflateEnd(&z);
    return out;
}

Test(gzip, round_trip_and_members)
{
    char err[RB_ERR_LEN], *out = NULL;
    size_t n1, n2, len;
    unsigned char *a = gz("hello ", 6, &n1), *b = gz("world", 5, &n2);
    cr_assert_eq(rb_gunzip(a, n1, 100, &out, &len, err), RB_OK, "%s", err);
    cr_assert(len == 6 && strcmp(out, "hello ") == 0);
    free(out);
    unsigned char *both = malloc(n1 + n2);
    memcpy(both, a, n1);
    memcpy(both + n1, b, n2);
    cr_assert_eq(rb_gunzip(both, n1 + n2, 100, &out, &len, err), RB_OK, "%s", err);
    cr_assert(len == 11 && strcmp(out, "hello world") == 0);
    free(out);
    free(both);
    free(a);
    free(b);
}

Test(gzip, the_bound_holds)
{
    char err[RB_ERR_LEN], *out = NULL;
    size_t n, len;
    char *zeros = calloc(1, 8 << 20);
    unsigned char *bomb = gz(zeros, 8 << 20, &n);
    cr_assert_lt(n, 64 * 1024);
    cr_assert_eq(rb_gunzip(bomb, n, 1 << 20, &out, &len, err), RB_ETOOBIG);
    cr_assert(out == NULL && strstr(err, "more than the 1048576 bytes") != NULL, "%s", err);
    cr_assert_eq(rb_gunzip(bomb, n, 8 << 20, &out, &len, err), RB_OK, "%s", err);
    cr_assert_eq(len, (size_t)8 << 20);
    free(out);
    free(bomb);
    free(zeros);
}

Test(gzip, refuses_what_is_not_gzip)
{
    char err[RB_ERR_LEN], *out = NULL;
    size_t n, len;
    cr_assert_eq(rb_gunzip("plain text", 10, 100, &out, &len, err), RB_EINVAL);
    cr_assert(out == NULL && strstr(err, "not gzip") != NULL, "%s", err);
    unsigned char *a = gz("abcdef", 6, &n);
    cr_assert_eq(rb_gunzip(a, n - 5, 100, &out, &len, err), RB_EINVAL);
    cr_assert(out == NULL && strstr(err, "ends before") != NULL, "%s", err);
    free(a);
}

static void check_seed(void *data, const char *seed, const char *path, const char *buf, size_t len)
{
    (void)data;
    (void)path;
    replay_seed = seed;
    LLVMFuzzerTestOneInput((const uint8_t *)buf, len);
}

Test(gzip, fuzz_corpus_replay)
{
    cr_assert_geq(corpus_each("gzip", check_seed, NULL), 10);
}

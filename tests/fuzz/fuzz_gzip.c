/*
 * fuzz_gzip.c: libFuzzer target for rb_gunzip (base/gzip.c), which inflates untrusted upload
 * bodies (E2B's files.write(gzip=True)). The input, from a private exact-size copy, is inflated
 * with a small bound: on success the output is NUL-terminated and within the bound; on failure
 * nothing is handed out and the message says why. Built only with clang and -DRUNBOX_FUZZ=ON; the
 * seed corpus (tests/fuzz/corpus/gzip/) is replayed by tests/base/test_gzip.c.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/gzip.h"
#include "tests/fuzz/fuzz_check.h"

#define FUZZ_MAX (64u * 1024)

int LLVMFuzzerTestOneInput(const uint8_t *in, size_t n);

int LLVMFuzzerTestOneInput(const uint8_t *in, size_t n)
{
    char *copy = malloc(n > 0 ? n : 1);
    if (n > 0)
        memcpy(copy, in, n);
    char err[RB_ERR_LEN] = "";
    char *out = NULL;
    size_t len = 0;
    rb_err e = rb_gunzip(copy, n, FUZZ_MAX, &out, &len, err);
    FUZZ_CHECK(e == RB_OK || e == RB_EINVAL || e == RB_ETOOBIG);
    FUZZ_CHECK((e == RB_OK) == (out != NULL));
    FUZZ_CHECK(e == RB_OK || err[0] != '\0');
    if (out != NULL) {
        FUZZ_CHECK(len <= FUZZ_MAX && out[len] == '\0');
        free(out);
    }
    free(copy);
    return 0;
}

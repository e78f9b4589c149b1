/*
 * fuzz_tar.c: libFuzzer target for tar_walk (base/tar.c), the parser of archives that come
 * back from the Docker archive API (bytes the sandbox controls). Checks memory safety and the
 * walker's promises: every name is non-empty, NUL-terminated within TAR_NAME_MAX, without a
 * leading "./" or '/', and a regular file's data lies inside the input. Built only with clang
 * and -DRUNBOX_FUZZ=ON; the seed corpus (tests/fuzz/corpus/tar/) is replayed by
 * tests/core/test_tar.c.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/tar.h"

typedef struct bounds {
    const char *base;
    size_t len;
} bounds;

static int check(void *data, const tar_entry *e)
{
    bounds *b = data;
    size_t n = strnlen(e->name, TAR_NAME_MAX + 1);
    if (n == 0 || n > TAR_NAME_MAX || e->name[0] == '/' || strncmp(e->name, "./", 2) == 0)
        abort();
    if (strnlen(e->link, TAR_NAME_MAX + 1) > TAR_NAME_MAX)
        abort();
    if (e->data != NULL) {
        if (e->data < b->base || e->size > b->len || (size_t)(e->data - b->base) > b->len - e->size)
            abort();
        volatile char sink = 0;
        for (uint64_t i = 0; i < e->size; i++)
            sink ^= e->data[i];
        (void)sink;
    }
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *in, size_t n);

int LLVMFuzzerTestOneInput(const uint8_t *in, size_t n)
{
    /* a private copy, so reads past the end are caught exactly */
    char *copy = malloc(n > 0 ? n : 1);
    if (n > 0)
        memcpy(copy, in, n);
    bounds b = {copy, n};
    char err[RB_ERR_LEN];
    tar_walk(copy, n, check, &b, err);
    free(copy);
    return 0;
}

/*
 * fuzz_multipart.c: libFuzzer target for server/rest/multipart.c, the parser of multipart/form-data
 * upload bodies (untrusted bytes from any HTTP client). The input is a Content-Type value, a
 * newline, then the body. Checks memory safety and that every part handed out lies inside the
 * body. Built only with clang and -DRUNBOX_FUZZ=ON; the seed corpus
 * (tests/fuzz/corpus/multipart/) is replayed by tests/server/test_multipart.c.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "server/rest/multipart.h"

typedef struct bounds {
    const char *base;
    size_t len;
} bounds;

static int inside(const bounds *b, const char *p, size_t n)
{
    return p >= b->base && n <= b->len && (size_t)(p - b->base) <= b->len - n;
}

static int check(void *data, const multipart_part *p)
{
    bounds *b = data;
    if (p->name == NULL || !inside(b, p->name, p->name_len) || !inside(b, p->data, p->len))
        abort();
    if (p->filename != NULL && !inside(b, p->filename, p->filename_len))
        abort();
    if (p->content_type != NULL && !inside(b, p->content_type, p->content_type_len))
        abort();
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *in, size_t n);

int LLVMFuzzerTestOneInput(const uint8_t *in, size_t n)
{
    const uint8_t *nl = memchr(in, '\n', n);
    if (nl == NULL)
        return 0;
    size_t clen = (size_t)(nl - in), blen = n - clen - 1;
    char *ctype = malloc(clen + 1), *body = malloc(blen + 1);
    memcpy(ctype, in, clen);
    memcpy(body, nl + 1, blen);
    char boundary[MULTIPART_BOUNDARY_MAX + 1], err[RB_ERR_LEN];
    if (multipart_boundary(ctype, clen, boundary, err) == RB_OK) {
        if (strlen(boundary) == 0 || strlen(boundary) > MULTIPART_BOUNDARY_MAX)
            abort();
        bounds b = {body, blen};
        multipart_parse(body, blen, boundary, check, &b, err);
    }
    free(ctype);
    free(body);
    return 0;
}

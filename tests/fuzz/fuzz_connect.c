/*
 * fuzz_connect.c: libFuzzer target for server/e2b/connect.c, which reads the body of every
 * Connect streaming call on the E2B front (untrusted). The input is a request body, from a
 * private exact-size copy so that any read past the end is caught. Checks:
 *   - connect_parse_request either accepts it with an object, or refuses it with RB_EINVAL or
 *     RB_ETOOBIG and a message, never both;
 *   - an accepted body re-encoded by connect_envelope (flags 0) parses back to an equal object,
 *     and with the end-of-stream flag it is refused;
 *   - connect_next_request walks the input as a client stream: each step accepts an object and
 *     moves past it, or refuses with a message and stays; it never reads past the end;
 *   - connect_end_stream with the input (up to its first NUL) as the error message writes an
 *     envelope whose length field matches its size.
 * Built only with clang and -DRUNBOX_FUZZ=ON. The seed corpus (tests/fuzz/corpus/connect/) is
 * replayed through these same checks by tests/server/test_connect.c, which includes this file.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "server/e2b/connect.h"
#include "tests/fuzz/fuzz_check.h"

#define FUZZ_MAX (64u * 1024)

int LLVMFuzzerTestOneInput(const uint8_t *in, size_t n);

int LLVMFuzzerTestOneInput(const uint8_t *in, size_t n)
{
    char *copy = malloc(n > 0 ? n : 1);
    if (n > 0)
        memcpy(copy, in, n);
    char err[RB_ERR_LEN] = "";
    json_t *v = NULL;
    rb_err e = connect_parse_request(copy, n, FUZZ_MAX, &v, err);
    FUZZ_CHECK((e == RB_OK) == (v != NULL));
    FUZZ_CHECK(e == RB_OK || e == RB_EINVAL || e == RB_ETOOBIG);
    FUZZ_CHECK(e == RB_OK || err[0] != '\0');
    if (v != NULL) {
        FUZZ_CHECK(json_is_object(v));
        rb_buf b;
        rb_buf_init(&b, 16u * 1024 * 1024);
        FUZZ_CHECK(connect_envelope(&b, 0, v) == RB_OK);
        json_t *again = NULL;
        rb_err e2 = connect_parse_request(b.data, b.len, 16u * 1024 * 1024, &again, err);
        FUZZ_CHECK(e2 == RB_OK && json_equal(v, again));
        json_decref(again);
        b.data[0] = CONNECT_FLAG_END_STREAM;
        FUZZ_CHECK(connect_parse_request(b.data, b.len, 16u * 1024 * 1024, &again, err) == RB_EINVAL);
        rb_buf_dispose(&b);
        json_decref(v);
    }
    for (size_t off = 0, last = 0; off < n;) {
        json_t *one = NULL;
        err[0] = '\0';
        rb_err es = connect_next_request(copy, n, &off, FUZZ_MAX, &one, err);
        FUZZ_CHECK((es == RB_OK) == (one != NULL));
        json_decref(one);
        if (es != RB_OK) {
            FUZZ_CHECK(off == last && err[0] != '\0');
            break;
        }
        FUZZ_CHECK(off > last && off <= n);
        last = off;
    }
    char *msg = malloc(n + 1);
    if (n > 0)
        memcpy(msg, in, n);
    msg[n] = '\0';
    rb_buf b;
    rb_buf_init(&b, 16u * 1024 * 1024);
    FUZZ_CHECK(connect_end_stream(&b, "internal", msg) == RB_OK);
    const unsigned char *h = (const unsigned char *)b.data;
    FUZZ_CHECK(h[0] == CONNECT_FLAG_END_STREAM);
    FUZZ_CHECK(((size_t)h[1] << 24 | (size_t)h[2] << 16 | (size_t)h[3] << 8 | h[4]) == b.len - CONNECT_HEADER_LEN);
    rb_buf_dispose(&b);
    free(msg);
    free(copy);
    return 0;
}

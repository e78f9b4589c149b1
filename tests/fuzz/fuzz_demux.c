/*
 * fuzz_demux.c: libFuzzer target for docker_demux_feed, the parser of the attach stream's
 * frame headers (untrusted bytes from the engine). Checks memory safety and that the result
 * does not depend on how the bytes are split across feeds: fed whole, or in pieces whose sizes
 * come from the input itself, it yields the same payload bytes per stream and the same error.
 * Built only with clang and -DRUNBOX_FUZZ=ON; the seed corpus (tests/fuzz/corpus/demux/) is
 * replayed by tests/docker/test_demux.c.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "docker/docker.h"

typedef struct sink {
    rb_buf out[3];
} sink;

static void collect(void *data, int stream, const char *buf, size_t len)
{
    sink *s = data;
    if (stream < 0 || stream > 2 || len == 0)
        abort();
    if (rb_buf_append(&s->out[stream], buf, len) != RB_OK)
        abort();
}

static rb_err run(const uint8_t *in, size_t n, int split, sink *s)
{
    docker_demux m;
    docker_demux_init(&m);
    for (int i = 0; i < 3; i++)
        rb_buf_init(&s->out[i], n + 1);
    size_t off = 0, k = 0;
    rb_err last = RB_OK;
    while (off < n) {
        size_t piece = split ? 1 + (in[k++ % n] % 13) : n;
        if (piece > n - off)
            piece = n - off;
        rb_err e = docker_demux_feed(&m, (const char *)in + off, piece, collect, s);
        off += piece;
        if (e != RB_OK) {
            last = e;
            break;
        }
    }
    return last;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    sink whole, parts;
    rb_err a = run(data, size, 0, &whole);
    rb_err b = run(data, size, 1, &parts);
    if (a != b)
        abort();
    for (int i = 0; i < 3; i++) {
        if (whole.out[i].len != parts.out[i].len)
            abort();
        if (whole.out[i].len > 0 && memcmp(whole.out[i].data, parts.out[i].data, whole.out[i].len) != 0)
            abort();
        rb_buf_dispose(&whole.out[i]);
        rb_buf_dispose(&parts.out[i]);
    }
    return 0;
}

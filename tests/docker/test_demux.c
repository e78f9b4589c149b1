/*
 * test_demux.c: the attach stream's frame demultiplexer (docker_demux_feed), without Docker:
 * frames split anywhere, several per buffer, zero-length frames, bad stream ids, huge lengths,
 * and a replay of the libFuzzer seed corpus in tests/fuzz/corpus/demux/.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "docker/docker.h"
#include "tests/common/corpus.h"

typedef struct sink {
    rb_buf out[3];
    int calls;
    int last_stream;
} sink;

static void sink_init(sink *s)
{
    memset(s, 0, sizeof(*s));
    for (int i = 0; i < 3; i++)
        rb_buf_init(&s->out[i], 64u * 1024 * 1024);
}

static void sink_dispose(sink *s)
{
    for (int i = 0; i < 3; i++)
        rb_buf_dispose(&s->out[i]);
}

static void collect(void *data, int stream, const char *buf, size_t len)
{
    sink *s = data;
    cr_assert(stream >= 0 && stream <= 2, "stream %d", stream);
    cr_assert_gt(len, 0, "empty payload delivered");
    s->calls++;
    s->last_stream = stream;
    cr_assert_eq(rb_buf_append(&s->out[stream], buf, len), RB_OK);
}

/* Appends one frame to b. */
static void frame(rb_buf *b, int stream, const char *payload, size_t len)
{
    unsigned char h[8] = {(unsigned char)stream,
                          0,
                          0,
                          0,
                          (unsigned char)(len >> 24),
                          (unsigned char)(len >> 16),
                          (unsigned char)(len >> 8),
                          (unsigned char)len};
    cr_assert_eq(rb_buf_append(b, h, 8), RB_OK);
    cr_assert_eq(rb_buf_append(b, payload, len), RB_OK);
}

/* Feeds in pieces of `step` bytes; returns the first error. */
static rb_err feed_steps(const char *buf, size_t len, size_t step, sink *s)
{
    docker_demux m;
    docker_demux_init(&m);
    for (size_t off = 0; off < len; off += step) {
        size_t n = len - off < step ? len - off : step;
        rb_err e = docker_demux_feed(&m, buf + off, n, collect, s);
        if (e != RB_OK)
            return e;
    }
    return RB_OK;
}

/* One frame to lay out: stream id and payload. */
typedef struct piece {
    int stream;
    const char *data;
    size_t len;
} piece;

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

/* Inits b and lays the n frames end to end in it. */
static void lay_frames(rb_buf *b, const piece *f, size_t n)
{
    rb_buf_init(b, 1 << 20);
    for (size_t i = 0; i < n; i++)
        frame(b, f[i].stream, f[i].data, f[i].len);
}

/* Inits s and feeds it the n frames in one buffer; returns the feed's result. */
static rb_err feed_frames(const piece *f, size_t n, sink *s)
{
    rb_buf b;
    lay_frames(&b, f, n);
    sink_init(s);
    rb_err e = feed_steps(b.data, b.len, b.len, s);
    rb_buf_dispose(&b);
    return e;
}

Test(demux, one_frame)
{
    static const piece f[] = {{1, "hello\n", 6}};
    sink s;
    cr_assert_eq(feed_frames(f, COUNT(f), &s), RB_OK);
    cr_assert_eq(s.calls, 1);
    cr_assert_str_eq(s.out[1].data, "hello\n");
    cr_assert_eq(s.out[2].len, 0);
    sink_dispose(&s);
}

Test(demux, multiple_frames_in_one_buffer)
{
    static const piece f[] = {{1, "out1\n", 5}, {2, "err1\n", 5}, {1, "out2\n", 5}, {0, "in\n", 3}};
    sink s;
    cr_assert_eq(feed_frames(f, COUNT(f), &s), RB_OK);
    cr_assert_eq(s.calls, 4);
    cr_assert_str_eq(s.out[1].data, "out1\nout2\n");
    cr_assert_str_eq(s.out[2].data, "err1\n");
    cr_assert_str_eq(s.out[0].data, "in\n");
    sink_dispose(&s);
}

Test(demux, split_anywhere_gives_same_bytes)
{
    char big[5000];
    for (size_t i = 0; i < sizeof(big); i++)
        big[i] = (char)('A' + i % 26);
    const piece f[] = {{1, "first", 5}, {2, big, sizeof(big)}, {1, "", 0}, {1, "last", 4}};
    rb_buf b;
    lay_frames(&b, f, COUNT(f));
    for (size_t step = 1; step <= 17; step++) {
        sink s;
        sink_init(&s);
        cr_assert_eq(feed_steps(b.data, b.len, step, &s), RB_OK, "step %zu", step);
        cr_assert_str_eq(s.out[1].data, "firstlast", "step %zu", step);
        cr_assert_eq(s.out[2].len, sizeof(big), "step %zu", step);
        cr_assert_eq(memcmp(s.out[2].data, big, sizeof(big)), 0, "step %zu", step);
        sink_dispose(&s);
    }
    rb_buf_dispose(&b);
}

Test(demux, header_split_across_feeds_keeps_state)
{
    docker_demux m;
    sink s;
    sink_init(&s);
    docker_demux_init(&m);
    const char h[] = {2, 0, 0, 0, 0, 0, 0, 3};
    cr_assert_eq(docker_demux_feed(&m, h, 3, collect, &s), RB_OK);
    cr_assert_eq(s.calls, 0);
    cr_assert_eq(docker_demux_feed(&m, h + 3, 5, collect, &s), RB_OK);
    cr_assert_eq(s.calls, 0);
    cr_assert_eq(docker_demux_feed(&m, "ab", 2, collect, &s), RB_OK);
    cr_assert_eq(docker_demux_feed(&m, "c", 1, collect, &s), RB_OK);
    cr_assert_str_eq(s.out[2].data, "abc");
    cr_assert_eq(s.calls, 2);
    sink_dispose(&s);
}

Test(demux, zero_length_frames_deliver_nothing)
{
    static const piece f[] = {{1, "", 0}, {2, "", 0}, {1, "x", 1}, {2, "", 0}};
    sink s;
    cr_assert_eq(feed_frames(f, COUNT(f), &s), RB_OK);
    cr_assert_eq(s.calls, 1);
    cr_assert_str_eq(s.out[1].data, "x");
    sink_dispose(&s);
}

Test(demux, bad_stream_id_is_an_error_and_sticky)
{
    static const piece f[] = {{1, "ok", 2}, {3, "sys", 3}, {1, "after", 5}};
    rb_buf b;
    sink s;
    lay_frames(&b, f, COUNT(f));
    sink_init(&s);
    docker_demux m;
    docker_demux_init(&m);
    cr_assert_eq(docker_demux_feed(&m, b.data, b.len, collect, &s), RB_EIO);
    cr_assert_str_eq(s.out[1].data, "ok", "bytes before the bad header are delivered, none after");
    cr_assert_eq(docker_demux_feed(&m, "\1\0\0\0\0\0\0\1z", 9, collect, &s), RB_EIO);
    cr_assert_eq(s.calls, 1);
    /* Garbage such as an HTTP status line where a frame should be. */
    docker_demux_init(&m);
    cr_assert_eq(docker_demux_feed(&m, "HTTP/1.1 200 OK\r\n", 17, collect, &s), RB_EIO);
    sink_dispose(&s);
    rb_buf_dispose(&b);
}

Test(demux, huge_length_is_an_error)
{
    docker_demux m;
    sink s;
    sink_init(&s);
    docker_demux_init(&m);
    cr_assert_eq(docker_demux_feed(&m, "\1\0\0\0\xff\xff\xff\xff", 8, collect, &s), RB_EIO);
    docker_demux_init(&m);
    cr_assert_eq(docker_demux_feed(&m, "\1\0\0\0\x01\x00\x00\x01", 8, collect, &s), RB_EIO, "16 MiB + 1");
    docker_demux_init(&m);
    cr_assert_eq(docker_demux_feed(&m,
                                   "\1\0\0\0\x01\x00\x00\x00"
                                   "abc",
                                   11, collect, &s),
                 RB_OK, "16 MiB exactly");
    cr_assert_str_eq(s.out[1].data, "abc");
    sink_dispose(&s);
}

/* The same invariant the fuzzer checks: whole or split, the same bytes and the same result. */
/* Feeding a seed whole and in steps of 1..9 bytes gives the same frames and the same error. */
static void replay(void *data, const char *seed, const char *path, const char *buf, size_t len)
{
    int *bad = data;
    if (strcmp(seed, "bad_stream") == 0 || strcmp(seed, "huge_length") == 0)
        (*bad)++;
    sink whole;
    sink_init(&whole);
    rb_err ew = feed_steps(buf, len, len > 0 ? len : 1, &whole);
    for (size_t step = 1; step <= 9; step++) {
        sink s;
        sink_init(&s);
        rb_err e = feed_steps(buf, len, step, &s);
        cr_assert_eq(e, ew, "%s: step %zu gives %s, whole gives %s", path, step, rb_strerror(e), rb_strerror(ew));
        for (int i = 0; i < 3; i++) {
            cr_assert_eq(s.out[i].len, whole.out[i].len, "%s: stream %d, step %zu", path, i, step);
            if (s.out[i].len > 0)
                cr_assert_eq(memcmp(s.out[i].data, whole.out[i].data, s.out[i].len), 0, "%s: step %zu", path, step);
        }
        sink_dispose(&s);
    }
    cr_assert_leq(whole.out[0].len + whole.out[1].len + whole.out[2].len, len);
    sink_dispose(&whole);
}

Test(demux, fuzz_corpus_replay)
{
    int bad = 0;
    int files = corpus_each("demux", replay, &bad);
    cr_assert_geq(files, 5, "only %d seeds in tests/fuzz/corpus/demux", files);
    cr_assert_eq(bad, 2, "expected seeds are missing");
}

/*
 * test_attach.c: docker/attach.c against the real engine: stdin to `cat` and back on stdout,
 * stderr as its own stream, on_close at container exit, open errors, closing at awkward points,
 * and a round-trip latency figure (printed, not asserted).
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "support_docker.h"

static void setup(void)
{
    sup_require_docker();
}

static void teardown(void)
{
    sup_cleanup();
}

TestSuite(attach, .init = setup, .fini = teardown, .timeout = 300);

/* What one attach stream reported. */
typedef struct watch {
    docker_attach *a;
    int opened, open_calls;
    rb_err open_err;
    char open_msg[RB_ERR_LEN];
    int closed, close_calls;
    rb_err close_err;
    rb_buf out, errb;
    size_t want; /* set `got` once out+err hold this many bytes */
    int got;
    int close_on_data; /* call docker_attach_close from inside on_data */
    int data_calls;
} watch;

static void watch_init(watch *w)
{
    memset(w, 0, sizeof(*w));
    rb_buf_init(&w->out, 64u * 1024 * 1024);
    rb_buf_init(&w->errb, 64u * 1024 * 1024);
}

static void watch_dispose(watch *w)
{
    rb_buf_dispose(&w->out);
    rb_buf_dispose(&w->errb);
}

static void on_open(void *data, rb_err err, const char *errmsg)
{
    watch *w = data;
    w->open_calls++;
    w->open_err = err;
    snprintf(w->open_msg, sizeof(w->open_msg), "%s", errmsg != NULL ? errmsg : "");
    w->opened = 1;
}

static void on_data(void *data, int stream, const char *buf, size_t len)
{
    watch *w = data;
    w->data_calls++;
    cr_assert(stream == 1 || stream == 2, "stream %d", stream);
    cr_assert_eq(rb_buf_append(stream == 1 ? &w->out : &w->errb, buf, len), RB_OK);
    if (w->want > 0 && w->out.len + w->errb.len >= w->want)
        w->got = 1;
    if (w->close_on_data) {
        docker_attach_close(w->a);
        w->got = 1;
    }
}

static void on_close(void *data, rb_err err, const char *errmsg)
{
    (void)errmsg;
    watch *w = data;
    w->close_calls++;
    w->close_err = err;
    w->closed = 1;
}

static const docker_attach_cbs cbs = {on_open, on_data, on_close};

/* Creates a container running argv, attaches before starting it (so no output is missed),
 * starts it. */
static void attach_started(uv_loop_t *loop, docker *d, const char *const *argv, watch *w, char *id, char *name,
                           size_t name_len)
{
    char err[RB_ERR_LEN];
    sup_container_create(loop, d, argv, NULL, id, name, name_len);
    cr_assert_eq(docker_attach_start(d, id, &cbs, w, &w->a, err), RB_OK, "%s", err);
    sup_run_until(loop, &w->opened);
    cr_assert_eq(w->open_err, RB_OK, "attach: %s", w->open_msg);
    sup_container_start(loop, d, id);
}

Test(attach, cat_echoes_stdin_on_stdout)
{
    uv_loop_t loop;
    docker *d;
    char err[RB_ERR_LEN], id[65], name[64];
    watch w;
    watch_init(&w);
    sup_open(&loop, &d);
    const char *argv[] = {"cat", NULL};
    attach_started(&loop, d, argv, &w, id, name, sizeof(name));
    w.want = 6;
    cr_assert_eq(docker_attach_write(w.a, "hello\n", 6, err), RB_OK, "%s", err);
    sup_run_until(&loop, &w.got);
    cr_assert_eq(w.out.len, 6);
    cr_assert_eq(memcmp(w.out.data, "hello\n", 6), 0);
    cr_assert_eq(w.errb.len, 0);

    /* Removing the container ends the stream: on_close with RB_OK (EOF). */
    sup_container_remove(&loop, d, id);
    sup_run_until(&loop, &w.closed);
    cr_assert_eq(w.close_err, RB_OK);
    cr_assert_eq(w.open_calls, 1);
    cr_assert_eq(w.close_calls, 1);
    watch_dispose(&w);
    sup_close(&loop, d);
}

Test(attach, stderr_is_a_separate_stream)
{
    uv_loop_t loop;
    docker *d;
    char err[RB_ERR_LEN], id[65], name[64];
    watch w;
    watch_init(&w);
    sup_open(&loop, &d);
    const char *argv[] = {"sh", "-c", "cat >&2", NULL};
    attach_started(&loop, d, argv, &w, id, name, sizeof(name));
    w.want = 12;
    cr_assert_eq(docker_attach_write(w.a, "to stderr 1\n", 12, err), RB_OK, "%s", err);
    sup_run_until(&loop, &w.got);
    cr_assert_eq(w.out.len, 0);
    cr_assert_eq(w.errb.len, 12);
    cr_assert_eq(memcmp(w.errb.data, "to stderr 1\n", 12), 0);
    docker_attach_close(w.a);
    docker_attach_close(w.a); /* idempotent until the loop releases it */
    sup_container_remove(&loop, d, id);
    sup_drain(&loop);
    cr_assert_eq(w.close_calls, 0, "on_close ran after docker_attach_close");
    watch_dispose(&w);
    sup_close(&loop, d);
}

Test(attach, on_close_at_container_exit_after_all_output)
{
    uv_loop_t loop;
    docker *d;
    char id[65], name[64];
    watch w;
    watch_init(&w);
    sup_open(&loop, &d);
    const char *argv[] = {"sh", "-c", "echo out1; echo err1 >&2; echo out2; exit 3", NULL};
    attach_started(&loop, d, argv, &w, id, name, sizeof(name));
    sup_run_until(&loop, &w.closed);
    cr_assert_eq(w.close_err, RB_OK);
    cr_assert_str_eq(w.out.data, "out1\nout2\n");
    cr_assert_str_eq(w.errb.data, "err1\n");
    sup_container_remove(&loop, d, id);
    watch_dispose(&w);
    sup_close(&loop, d);
}

Test(attach, large_payload_round_trip)
{
    uv_loop_t loop;
    docker *d;
    char err[RB_ERR_LEN], id[65], name[64];
    watch w;
    watch_init(&w);
    sup_open(&loop, &d);
    const char *argv[] = {"cat", NULL};
    attach_started(&loop, d, argv, &w, id, name, sizeof(name));
    size_t n = 4u * 1024 * 1024;
    char *big = xmalloc(n);
    for (size_t i = 0; i < n; i++)
        big[i] = (char)('a' + (i * 7 + i / 997) % 26);
    big[n - 1] = '\n';
    w.want = n;
    /* Several writes queued at once, sent in order. */
    for (size_t off = 0; off < n; off += n / 4)
        cr_assert_eq(docker_attach_write(w.a, big + off, n / 4, err), RB_OK, "%s", err);
    sup_run_until(&loop, &w.got);
    cr_assert_eq(w.out.len, n);
    cr_assert_eq(memcmp(w.out.data, big, n), 0, "echoed bytes differ");
    free(big);
    docker_attach_close(w.a);
    sup_container_remove(&loop, d, id);
    watch_dispose(&w);
    sup_close(&loop, d);
}

Test(attach, unknown_container_fails_open_with_not_found)
{
    uv_loop_t loop;
    docker *d;
    char err[RB_ERR_LEN];
    watch w;
    watch_init(&w);
    sup_open(&loop, &d);
    cr_assert_eq(docker_attach_start(d, "runbox-test-no-such-container", &cbs, &w, &w.a, err), RB_OK, "%s", err);
    sup_run_until(&loop, &w.opened);
    cr_assert_eq(w.open_err, RB_ENOTFOUND, "got %s: %s", rb_strerror(w.open_err), w.open_msg);
    cr_assert(strstr(w.open_msg, "No such container: runbox-test-no-such-container") != NULL, "message: %s",
              w.open_msg);
    sup_drain(&loop);
    cr_assert_eq(w.open_calls, 1);
    cr_assert_eq(w.close_calls, 0);
    watch_dispose(&w);
    sup_close(&loop, d);
}

Test(attach, paused_container_fails_open_with_conflict)
{
    uv_loop_t loop;
    docker *d;
    char err[RB_ERR_LEN], id[65], name[64];
    watch w;
    watch_init(&w);
    sup_open(&loop, &d);
    const char *argv[] = {"sleep", "600", NULL};
    sup_container_create(&loop, d, argv, NULL, id, name, sizeof(name));
    sup_container_start(&loop, d, id);
    sup_result r = {0};
    char path[128];
    snprintf(path, sizeof(path), "/containers/%s/pause", id);
    cr_assert_eq(docker_request(d, "POST", path, NULL, 0, sup_cb, &r, NULL, err), RB_OK, "%s", err);
    sup_run_until(&loop, &r.calls);
    cr_assert_eq(r.err, RB_OK, "pause: %s", r.msg);
    cr_assert_eq(docker_attach_start(d, id, &cbs, &w, &w.a, err), RB_OK, "%s", err);
    sup_run_until(&loop, &w.opened);
    cr_assert_eq(w.open_err, RB_ECONFLICT, "got %s: %s", rb_strerror(w.open_err), w.open_msg);
    cr_assert(strstr(w.open_msg, "is paused") != NULL, "message: %s", w.open_msg);
    sup_container_remove(&loop, d, id);
    watch_dispose(&w);
    sup_close(&loop, d);
}

Test(attach, unreachable_socket_fails_open_with_unavailable)
{
    uv_loop_t loop;
    docker *d;
    char err[RB_ERR_LEN];
    watch w;
    watch_init(&w);
    cr_assert_eq(uv_loop_init(&loop), 0);
    cr_assert_eq(docker_new(&loop, "/nonexistent/runbox-test.sock", &d, err), RB_OK, "%s", err);
    cr_assert_eq(docker_attach_start(d, "abc", &cbs, &w, &w.a, err), RB_OK, "%s", err);
    cr_assert_eq(docker_attach_write(w.a, "x", 1, err), RB_ECONFLICT, "write before open must fail");
    sup_run_until(&loop, &w.opened);
    cr_assert_eq(w.open_err, RB_EUNAVAILABLE, "got %s: %s", rb_strerror(w.open_err), w.open_msg);
    cr_assert(strstr(w.open_msg, "Docker is not reachable at /nonexistent/runbox-test.sock") != NULL, "message: %s",
              w.open_msg);
    watch_dispose(&w);
    sup_close(&loop, d);
}

Test(attach, invalid_id_fails_synchronously)
{
    uv_loop_t loop;
    docker *d;
    char err[RB_ERR_LEN];
    docker_attach *a = NULL;
    sup_open(&loop, &d);
    cr_assert_eq(docker_attach_start(d, "x HTTP/1.1\r\nEvil: 1", &cbs, NULL, &a, err), RB_EINVAL);
    cr_assert_null(a);
    sup_close(&loop, d);
}

Test(attach, close_before_open_completes)
{
    uv_loop_t loop;
    docker *d;
    char err[RB_ERR_LEN];
    watch w;
    watch_init(&w);
    sup_open(&loop, &d);
    cr_assert_eq(docker_attach_start(d, "runbox-test-whatever", &cbs, &w, &w.a, err), RB_OK, "%s", err);
    docker_attach_close(w.a);
    sup_drain(&loop);
    cr_assert_eq(w.open_calls, 0);
    cr_assert_eq(w.close_calls, 0);

    /* And after connecting but before the answer. */
    watch_init(&w);
    cr_assert_eq(docker_attach_start(d, "runbox-test-whatever", &cbs, &w, &w.a, err), RB_OK, "%s", err);
    uv_run(&loop, UV_RUN_NOWAIT);
    docker_attach_close(w.a);
    sup_drain(&loop);
    cr_assert_eq(w.open_calls, 0);
    watch_dispose(&w);
    sup_close(&loop, d);
}

Test(attach, close_inside_on_data)
{
    uv_loop_t loop;
    docker *d;
    char id[65], name[64];
    watch w;
    watch_init(&w);
    w.close_on_data = 1;
    sup_open(&loop, &d);
    /* Lots of output so more frames follow the one whose callback closes. */
    const char *argv[] = {"sh", "-c", "i=0; while [ $i -lt 2000 ]; do echo line $i; echo err $i >&2; i=$((i+1)); done",
                          NULL};
    attach_started(&loop, d, argv, &w, id, name, sizeof(name));
    sup_run_until(&loop, &w.got);
    sup_container_remove(&loop, d, id);
    sup_drain(&loop);
    cr_assert_eq(w.data_calls, 1, "on_data ran %d times", w.data_calls);
    cr_assert_eq(w.close_calls, 0);
    watch_dispose(&w);
    sup_close(&loop, d);
}

Test(attach, docker_free_closes_open_streams)
{
    uv_loop_t loop;
    docker *d;
    char id[65], name[64];
    watch w;
    watch_init(&w);
    sup_open(&loop, &d);
    const char *argv[] = {"cat", NULL};
    attach_started(&loop, d, argv, &w, id, name, sizeof(name));
    docker_free(d);
    sup_drain(&loop);
    cr_assert_eq(uv_loop_close(&loop), 0, "handles left open");
    cr_assert_eq(w.close_calls, 0);
    watch_dispose(&w);
    /* sup_cleanup (fini) removes the container. */
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

#define ROUNDS 1000

Test(attach, round_trip_latency)
{
    uv_loop_t loop;
    docker *d;
    char err[RB_ERR_LEN], id[65], name[64];
    watch w;
    watch_init(&w);
    sup_open(&loop, &d);
    const char *argv[] = {"cat", NULL};
    attach_started(&loop, d, argv, &w, id, name, sizeof(name));
    static double us[ROUNDS];
    const char line[] = "{\"op\":\"ping\",\"id\":\"r\"}\n";
    size_t ll = sizeof(line) - 1;
    for (int i = 0; i < ROUNDS; i++) {
        struct timespec t0, t1;
        w.got = 0;
        w.want = (size_t)(i + 1) * ll;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        cr_assert_eq(docker_attach_write(w.a, line, ll, err), RB_OK, "%s", err);
        sup_run_until(&loop, &w.got);
        clock_gettime(CLOCK_MONOTONIC, &t1);
        us[i] = (double)(t1.tv_sec - t0.tv_sec) * 1e6 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e3;
    }
    cr_assert_eq(w.out.len, (size_t)ROUNDS * ll);
    qsort(us, ROUNDS, sizeof(us[0]), cmp_double);
    printf("attach round trip via cat: median %.1f us, p90 %.1f us, p99 %.1f us over %d lines\n", us[ROUNDS / 2],
           us[ROUNDS * 9 / 10], us[ROUNDS * 99 / 100], ROUNDS);
    fflush(stdout);
    docker_attach_close(w.a);
    sup_container_remove(&loop, d, id);
    watch_dispose(&w);
    sup_close(&loop, d);
}

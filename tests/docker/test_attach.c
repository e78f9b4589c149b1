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

/* One test's loop, client, container and the stream attached to it. */
typedef struct rig {
    uv_loop_t loop;
    docker *d;
    char id[65], name[64];
    watch w;
} rig;

/* Inits the watch and opens a fresh loop and client. */
static void rig_open(rig *t)
{
    watch_init(&t->w);
    sup_open(&t->loop, &t->d);
}

/* Creates a container running argv, attaches before starting it (so no output is missed),
 * starts it. */
static void rig_start(rig *t, const char *const *argv)
{
    char err[RB_ERR_LEN];
    sup_container_create(&t->loop, t->d, argv, NULL, t->id, t->name, sizeof(t->name));
    cr_assert_eq(docker_attach_start(t->d, t->id, &cbs, &t->w, &t->w.a, err), RB_OK, "%s", err);
    sup_run_until(&t->loop, &t->w.opened);
    cr_assert_eq(t->w.open_err, RB_OK, "attach: %s", t->w.open_msg);
    sup_container_start(&t->loop, t->d, t->id);
}

/* Writes len bytes to the stream and runs the loop until stdout and stderr hold want bytes. */
static void rig_send(rig *t, const char *buf, size_t len, size_t want)
{
    char err[RB_ERR_LEN];
    t->w.got = 0;
    t->w.want = want;
    cr_assert_eq(docker_attach_write(t->w.a, buf, len, err), RB_OK, "%s", err);
    sup_run_until(&t->loop, &t->w.got);
}

static void rig_close(rig *t)
{
    watch_dispose(&t->w);
    sup_close(&t->loop, t->d);
}

Test(attach, cat_echoes_stdin_on_stdout)
{
    rig t;
    rig_open(&t);
    const char *argv[] = {"cat", NULL};
    rig_start(&t, argv);
    rig_send(&t, "hello\n", 6, 6);
    cr_assert_eq(t.w.out.len, 6);
    cr_assert_eq(memcmp(t.w.out.data, "hello\n", 6), 0);
    cr_assert_eq(t.w.errb.len, 0);

    /* Removing the container ends the stream: on_close with RB_OK (EOF). */
    sup_container_remove(&t.loop, t.d, t.id);
    sup_run_until(&t.loop, &t.w.closed);
    cr_assert_eq(t.w.close_err, RB_OK);
    cr_assert_eq(t.w.open_calls, 1);
    cr_assert_eq(t.w.close_calls, 1);
    rig_close(&t);
}

Test(attach, stderr_is_a_separate_stream)
{
    rig t;
    rig_open(&t);
    const char *argv[] = {"sh", "-c", "cat >&2", NULL};
    rig_start(&t, argv);
    rig_send(&t, "to stderr 1\n", 12, 12);
    cr_assert_eq(t.w.out.len, 0);
    cr_assert_eq(t.w.errb.len, 12);
    cr_assert_eq(memcmp(t.w.errb.data, "to stderr 1\n", 12), 0);
    docker_attach_close(t.w.a);
    docker_attach_close(t.w.a); /* idempotent until the loop releases it */
    sup_container_remove(&t.loop, t.d, t.id);
    sup_drain(&t.loop);
    cr_assert_eq(t.w.close_calls, 0, "on_close ran after docker_attach_close");
    rig_close(&t);
}

Test(attach, on_close_at_container_exit_after_all_output)
{
    rig t;
    rig_open(&t);
    const char *argv[] = {"sh", "-c", "echo out1; echo err1 >&2; echo out2; exit 3", NULL};
    rig_start(&t, argv);
    sup_run_until(&t.loop, &t.w.closed);
    cr_assert_eq(t.w.close_err, RB_OK);
    cr_assert_str_eq(t.w.out.data, "out1\nout2\n");
    cr_assert_str_eq(t.w.errb.data, "err1\n");
    sup_container_remove(&t.loop, t.d, t.id);
    rig_close(&t);
}

Test(attach, large_payload_round_trip)
{
    char err[RB_ERR_LEN];
    rig t;
    rig_open(&t);
    const char *argv[] = {"cat", NULL};
    rig_start(&t, argv);
    size_t n = 4u * 1024 * 1024;
    char *big = xmalloc(n);
    for (size_t i = 0; i < n; i++)
        big[i] = (char)('a' + (i * 7 + i / 997) % 26);
    big[n - 1] = '\n';
    t.w.want = n;
    /* Several writes queued at once, sent in order. */
    for (size_t off = 0; off < n; off += n / 4)
        cr_assert_eq(docker_attach_write(t.w.a, big + off, n / 4, err), RB_OK, "%s", err);
    sup_run_until(&t.loop, &t.w.got);
    cr_assert_eq(t.w.out.len, n);
    cr_assert_eq(memcmp(t.w.out.data, big, n), 0, "echoed bytes differ");
    free(big);
    docker_attach_close(t.w.a);
    sup_container_remove(&t.loop, t.d, t.id);
    rig_close(&t);
}

Test(attach, unknown_container_fails_open_with_not_found)
{
    char err[RB_ERR_LEN];
    rig t;
    rig_open(&t);
    cr_assert_eq(docker_attach_start(t.d, "runbox-test-no-such-container", &cbs, &t.w, &t.w.a, err), RB_OK, "%s", err);
    sup_run_until(&t.loop, &t.w.opened);
    cr_assert_eq(t.w.open_err, RB_ENOTFOUND, "got %s: %s", rb_strerror(t.w.open_err), t.w.open_msg);
    cr_assert(strstr(t.w.open_msg, "No such container: runbox-test-no-such-container") != NULL, "message: %s",
              t.w.open_msg);
    sup_drain(&t.loop);
    cr_assert_eq(t.w.open_calls, 1);
    cr_assert_eq(t.w.close_calls, 0);
    rig_close(&t);
}

Test(attach, paused_container_fails_open_with_conflict)
{
    char err[RB_ERR_LEN];
    rig t;
    rig_open(&t);
    const char *argv[] = {"sleep", "600", NULL};
    sup_container_create(&t.loop, t.d, argv, NULL, t.id, t.name, sizeof(t.name));
    sup_container_start(&t.loop, t.d, t.id);
    sup_result r = {0};
    char path[128];
    snprintf(path, sizeof(path), "/containers/%s/pause", t.id);
    cr_assert_eq(docker_request(t.d, "POST", path, NULL, 0, sup_cb, &r, NULL, err), RB_OK, "%s", err);
    sup_run_until(&t.loop, &r.calls);
    cr_assert_eq(r.err, RB_OK, "pause: %s", r.msg);
    cr_assert_eq(docker_attach_start(t.d, t.id, &cbs, &t.w, &t.w.a, err), RB_OK, "%s", err);
    sup_run_until(&t.loop, &t.w.opened);
    cr_assert_eq(t.w.open_err, RB_ECONFLICT, "got %s: %s", rb_strerror(t.w.open_err), t.w.open_msg);
    cr_assert(strstr(t.w.open_msg, "is paused") != NULL, "message: %s", t.w.open_msg);
    sup_container_remove(&t.loop, t.d, t.id);
    rig_close(&t);
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
    char err[RB_ERR_LEN];
    rig t;
    rig_open(&t);
    cr_assert_eq(docker_attach_start(t.d, "runbox-test-whatever", &cbs, &t.w, &t.w.a, err), RB_OK, "%s", err);
    docker_attach_close(t.w.a);
    sup_drain(&t.loop);
    cr_assert_eq(t.w.open_calls, 0);
    cr_assert_eq(t.w.close_calls, 0);

    /* And after connecting but before the answer. */
    watch_init(&t.w);
    cr_assert_eq(docker_attach_start(t.d, "runbox-test-whatever", &cbs, &t.w, &t.w.a, err), RB_OK, "%s", err);
    uv_run(&t.loop, UV_RUN_NOWAIT);
    docker_attach_close(t.w.a);
    sup_drain(&t.loop);
    cr_assert_eq(t.w.open_calls, 0);
    rig_close(&t);
}

Test(attach, close_inside_on_data)
{
    rig t;
    rig_open(&t);
    t.w.close_on_data = 1;
    /* Lots of output so more frames follow the one whose callback closes. */
    const char *argv[] = {"sh", "-c", "i=0; while [ $i -lt 2000 ]; do echo line $i; echo err $i >&2; i=$((i+1)); done",
                          NULL};
    rig_start(&t, argv);
    sup_run_until(&t.loop, &t.w.got);
    sup_container_remove(&t.loop, t.d, t.id);
    sup_drain(&t.loop);
    cr_assert_eq(t.w.data_calls, 1, "on_data ran %d times", t.w.data_calls);
    cr_assert_eq(t.w.close_calls, 0);
    rig_close(&t);
}

Test(attach, docker_free_closes_open_streams)
{
    rig t;
    rig_open(&t);
    const char *argv[] = {"cat", NULL};
    rig_start(&t, argv);
    docker_free(t.d);
    sup_drain(&t.loop);
    cr_assert_eq(uv_loop_close(&t.loop), 0, "handles left open");
    cr_assert_eq(t.w.close_calls, 0);
    watch_dispose(&t.w);
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
    rig t;
    rig_open(&t);
    const char *argv[] = {"cat", NULL};
    rig_start(&t, argv);
    static double us[ROUNDS];
    const char line[] = "{\"op\":\"ping\",\"id\":\"r\"}\n";
    size_t ll = sizeof(line) - 1;
    for (int i = 0; i < ROUNDS; i++) {
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        rig_send(&t, line, ll, (size_t)(i + 1) * ll);
        clock_gettime(CLOCK_MONOTONIC, &t1);
        us[i] = (double)(t1.tv_sec - t0.tv_sec) * 1e6 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e3;
    }
    cr_assert_eq(t.w.out.len, (size_t)ROUNDS * ll);
    qsort(us, ROUNDS, sizeof(us[0]), cmp_double);
    printf("attach round trip via cat: median %.1f us, p90 %.1f us, p99 %.1f us over %d lines\n", us[ROUNDS / 2],
           us[ROUNDS * 9 / 10], us[ROUNDS * 99 / 100], ROUNDS);
    fflush(stdout);
    docker_attach_close(t.w.a);
    sup_container_remove(&t.loop, t.d, t.id);
    rig_close(&t);
}

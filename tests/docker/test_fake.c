/*
 * test_fake.c: the docker client against a fake engine on a private unix socket (same loop),
 * for answers the real engine will not give on demand: oversized bodies, no answer at all,
 * odd API versions, and malformed or unusual attach handshakes and frames.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "docker/docker.h"
#include "support_docker.h"

/* The fake engine: answers every request on every connection with `reply` (then closes the
 * connection if close_after), or never answers if reply is NULL. */
typedef struct fake {
    uv_pipe_t server;
    char path[108];
    const char *reply;
    size_t reply_len;
    int close_after;
    int conns;
    uv_pipe_t *clients[8];
    char req[16384];
    size_t req_len;
} fake;

static fake F;

static void client_close_cb(uv_handle_t *h)
{
    free(h);
}

static void fake_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
    (void)h, (void)suggested;
    static char rbuf[65536];
    *buf = uv_buf_init(rbuf, sizeof(rbuf));
}

static void fake_written(uv_write_t *w, int status)
{
    (void)status;
    uv_stream_t *s = w->handle;
    free(w);
    if (F.close_after && !uv_is_closing((uv_handle_t *)s))
        uv_close((uv_handle_t *)s, client_close_cb);
}

static void fake_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf)
{
    if (nread < 0) {
        if (!uv_is_closing((uv_handle_t *)s))
            uv_close((uv_handle_t *)s, client_close_cb);
        return;
    }
    size_t room = sizeof(F.req) - 1 - F.req_len;
    size_t n = (size_t)nread < room ? (size_t)nread : room;
    memcpy(F.req + F.req_len, buf->base, n);
    F.req_len += n;
    F.req[F.req_len] = '\0';
    if (strstr(F.req, "\r\n\r\n") == NULL || F.reply == NULL)
        return;
    F.req_len = 0;
    uv_write_t *w = xmalloc(sizeof(*w));
    uv_buf_t b = uv_buf_init((char *)F.reply, (unsigned)F.reply_len);
    cr_assert_eq(uv_write(w, s, &b, 1, fake_written), 0);
}

static void fake_conn(uv_stream_t *server, int status)
{
    cr_assert_eq(status, 0);
    uv_pipe_t *c = xmalloc(sizeof(*c));
    uv_pipe_init(server->loop, c, 0);
    cr_assert_eq(uv_accept(server, (uv_stream_t *)c), 0);
    if (F.conns < 8)
        F.clients[F.conns] = c;
    F.conns++;
    uv_read_start((uv_stream_t *)c, fake_alloc, fake_read);
}

static void fake_start(uv_loop_t *loop, const char *reply, size_t len, int close_after)
{
    memset(&F, 0, sizeof(F));
    char id[64];
    rb_random_id("runbox-test-", id, sizeof(id));
    snprintf(F.path, sizeof(F.path), "/tmp/%s.sock", id);
    F.reply = reply;
    F.reply_len = len;
    F.close_after = close_after;
    cr_assert_eq(uv_pipe_init(loop, &F.server, 0), 0);
    cr_assert_eq(uv_pipe_bind(&F.server, F.path), 0);
    cr_assert_eq(uv_listen((uv_stream_t *)&F.server, 16, fake_conn), 0);
}

static void noop_close(uv_handle_t *h)
{
    (void)h;
}

static void walk_close(uv_handle_t *h, void *arg)
{
    (void)arg;
    if (!uv_is_closing(h))
        uv_close(h, h == (uv_handle_t *)&F.server ? noop_close : client_close_cb);
}

/* Frees the client, closes the fake engine and every connection it still holds. */
static void fake_stop(uv_loop_t *loop, docker *d)
{
    docker_free(d);
    uv_run(loop, UV_RUN_NOWAIT);
    uv_walk(loop, walk_close, NULL);
    uv_run(loop, UV_RUN_DEFAULT);
    unlink(F.path);
    cr_assert_eq(uv_loop_close(loop), 0);
}

static void open_client(uv_loop_t *loop, docker **d)
{
    char err[RB_ERR_LEN];
    cr_assert_eq(docker_new(loop, F.path, d, err), RB_OK, "%s", err);
}

static void request(uv_loop_t *loop, docker *d, const char *path, long timeout_ms, sup_result *r)
{
    char err[RB_ERR_LEN];
    cr_assert_eq(docker_request(d, "GET", path, NULL, timeout_ms, sup_cb, r, NULL, err), RB_OK, "%s", err);
    sup_run_until(loop, &r->calls);
}

Test(fake, body_over_limit_is_too_big)
{
    uv_loop_t loop;
    docker *d;
    size_t n = 9u * 1024 * 1024;
    char head[128];
    int hl = snprintf(head, sizeof(head),
                      "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %zu\r\n\r\n", n);
    char *reply = xmalloc((size_t)hl + n);
    memcpy(reply, head, (size_t)hl);
    memset(reply + hl, ' ', n);
    cr_assert_eq(uv_loop_init(&loop), 0);
    fake_start(&loop, reply, (size_t)hl + n, 1);
    open_client(&loop, &d);
    sup_result r = {0};
    request(&loop, d, "/info", 0, &r);
    cr_assert_eq(r.err, RB_ETOOBIG, "got %s: %s", rb_strerror(r.err), r.msg);
    fake_stop(&loop, d);
    free(reply);
}

Test(fake, no_answer_times_out)
{
    uv_loop_t loop;
    docker *d;
    cr_assert_eq(uv_loop_init(&loop), 0);
    fake_start(&loop, NULL, 0, 0);
    open_client(&loop, &d);
    sup_result r = {0};
    request(&loop, d, "/info", 200, &r);
    cr_assert_eq(r.err, RB_ETIMEDOUT, "got %s: %s", rb_strerror(r.err), r.msg);
    cr_assert(strstr(r.msg, "GET /info") != NULL, "message: %s", r.msg);
    fake_stop(&loop, d);
}

static void version_case(const char *json, rb_err want, const char *want_api)
{
    uv_loop_t loop;
    docker *d;
    char reply[512], err[RB_ERR_LEN];
    int n = snprintf(reply, sizeof(reply),
                     "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %zu\r\n\r\n%s", strlen(json),
                     json);
    cr_assert_eq(uv_loop_init(&loop), 0);
    fake_start(&loop, reply, (size_t)n, 0);
    open_client(&loop, &d);
    sup_result r = {0};
    cr_assert_eq(docker_ping_version(d, sup_cb, &r, err), RB_OK, "%s", err);
    sup_run_until(&loop, &r.calls);
    cr_assert_eq(r.err, want, "%s: got %s: %s", json, rb_strerror(r.err), r.msg);
    cr_assert_str_eq(docker_api_version(d), want_api, "%s", json);
    sup_result_dispose(&r);
    fake_stop(&loop, d);
}

Test(fake, api_version_is_capped)
{
    version_case("{\"ApiVersion\":\"1.50\"}", RB_OK, "1.47");
    version_case("{\"ApiVersion\":\"1.43\"}", RB_OK, "1.43");
    version_case("{\"ApiVersion\":\"1.30\"}", RB_EUNAVAILABLE, "1.41");
    version_case("{\"Version\":\"x\"}", RB_EIO, "1.41");
    version_case("not json", RB_EIO, "1.41");
}

Test(fake, server_error_carries_docker_message)
{
    uv_loop_t loop;
    docker *d;
    static const char reply[] = "HTTP/1.1 500 Internal Server Error\r\nContent-Type: application/json\r\n"
                                "Content-Length: 27\r\n\r\n{\"message\":\"disk is full!\"}";
    cr_assert_eq(uv_loop_init(&loop), 0);
    fake_start(&loop, reply, sizeof(reply) - 1, 0);
    open_client(&loop, &d);
    sup_result r = {0};
    request(&loop, d, "/info", 0, &r);
    cr_assert_eq(r.err, RB_EIO, "got %s: %s", rb_strerror(r.err), r.msg);
    cr_assert_eq(r.status, 500);
    cr_assert(strstr(r.msg, "disk is full!") != NULL, "message: %s", r.msg);
    sup_result_dispose(&r);
    fake_stop(&loop, d);
}

/* ---- attach against the fake ---- */

typedef struct watch {
    int opened;
    rb_err open_err;
    char open_msg[RB_ERR_LEN];
    int closed, close_calls;
    rb_err close_err;
    char out[256], errs[256];
    size_t out_len, err_len;
} watch;

static void w_open(void *data, rb_err err, const char *errmsg)
{
    watch *w = data;
    w->opened++;
    w->open_err = err;
    snprintf(w->open_msg, sizeof(w->open_msg), "%s", errmsg != NULL ? errmsg : "");
}

static void w_data(void *data, int stream, const char *buf, size_t len)
{
    watch *w = data;
    char *dst = stream == 1 ? w->out : w->errs;
    size_t *dl = stream == 1 ? &w->out_len : &w->err_len;
    cr_assert_lt(*dl + len, 256);
    memcpy(dst + *dl, buf, len);
    *dl += len;
}

static void w_close(void *data, rb_err err, const char *errmsg)
{
    (void)errmsg;
    watch *w = data;
    w->closed = 1;
    w->close_calls++;
    w->close_err = err;
}

static const docker_attach_cbs wcbs = {w_open, w_data, w_close};

static void attach_case(const char *reply, size_t len, int close_after, watch *w)
{
    uv_loop_t loop;
    docker *d;
    docker_attach *a;
    char err[RB_ERR_LEN];
    memset(w, 0, sizeof(*w));
    cr_assert_eq(uv_loop_init(&loop), 0);
    fake_start(&loop, reply, len, close_after);
    open_client(&loop, &d);
    cr_assert_eq(docker_attach_start(d, "c0ffee", &wcbs, w, &a, err), RB_OK, "%s", err);
    sup_run_until(&loop, &w->opened);
    if (w->open_err == RB_OK && close_after)
        sup_run_until(&loop, &w->closed);
    cr_assert(strstr(F.req, "POST /v1.41/containers/c0ffee/attach?stream=1&stdin=1&stdout=1&stderr=1 HTTP/1.1\r\n") ==
                      F.req ||
                  F.req[0] == '\0',
              "request: %s", F.req);
    fake_stop(&loop, d);
    cr_assert_eq(w->opened, 1);
}

#define UPGRADE                                                                                                        \
    "HTTP/1.1 101 UPGRADED\r\nContent-Type: application/vnd.docker.raw-stream\r\nConnection: Upgrade\r\n"              \
    "Upgrade: tcp\r\n\r\n"

Test(fake, upgrade_with_frames_in_the_same_packet)
{
    static const char reply[] = UPGRADE "\1\0\0\0\0\0\0\3out"
                                        "\2\0\0\0\0\0\0\3err"
                                        "\1\0\0\0\0\0\0\0";
    watch w;
    attach_case(reply, sizeof(reply) - 1, 1, &w);
    cr_assert_eq(w.open_err, RB_OK, "%s", w.open_msg);
    cr_assert_eq(w.close_err, RB_OK);
    cr_assert_eq(w.close_calls, 1);
    cr_assert_eq(w.out_len, 3);
    cr_assert_eq(memcmp(w.out, "out", 3), 0);
    cr_assert_eq(w.err_len, 3);
    cr_assert_eq(memcmp(w.errs, "err", 3), 0);
}

Test(fake, old_engine_200_raw_stream_is_accepted)
{
    static const char reply[] = "HTTP/1.1 200 OK\r\nContent-Type: application/vnd.docker.raw-stream\r\n\r\n"
                                "\1\0\0\0\0\0\0\2hi";
    watch w;
    attach_case(reply, sizeof(reply) - 1, 1, &w);
    cr_assert_eq(w.open_err, RB_OK, "%s", w.open_msg);
    cr_assert_eq(w.out_len, 2);
}

Test(fake, plain_200_json_is_not_an_upgrade)
{
    static const char reply[] = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}";
    watch w;
    attach_case(reply, sizeof(reply) - 1, 0, &w);
    cr_assert_eq(w.open_err, RB_EIO, "got %s: %s", rb_strerror(w.open_err), w.open_msg);
}

Test(fake, garbage_answer_is_an_error)
{
    static const char reply[] = "SSH-2.0-OpenSSH_9.2\r\n\r\n";
    watch w;
    attach_case(reply, sizeof(reply) - 1, 1, &w);
    cr_assert_eq(w.open_err, RB_EIO, "got %s: %s", rb_strerror(w.open_err), w.open_msg);
    cr_assert(strstr(w.open_msg, "not HTTP") != NULL, "message: %s", w.open_msg);
}

Test(fake, oversized_headers_are_an_error)
{
    size_t n = 40000;
    char *reply = xmalloc(n);
    memcpy(reply, "HTTP/1.1 101 UPGRADED\r\nX: ", 26);
    memset(reply + 26, 'a', n - 26);
    watch w;
    attach_case(reply, n, 0, &w);
    cr_assert_eq(w.open_err, RB_EIO, "got %s: %s", rb_strerror(w.open_err), w.open_msg);
    cr_assert(strstr(w.open_msg, "headers") != NULL, "message: %s", w.open_msg);
    free(reply);
}

Test(fake, closed_before_answer_is_an_error)
{
    watch w;
    attach_case("", 0, 1, &w); /* empty reply: the connection just closes */
    cr_assert_eq(w.open_err, RB_EIO, "got %s: %s", rb_strerror(w.open_err), w.open_msg);
}

Test(fake, bad_frame_after_open_closes_with_error)
{
    static const char reply[] = UPGRADE "\1\0\0\0\0\0\0\2ok"
                                        "\7\0\0\0\0\0\0\1x";
    watch w;
    attach_case(reply, sizeof(reply) - 1, 0, &w);
    cr_assert_eq(w.open_err, RB_OK, "%s", w.open_msg);
    cr_assert_eq(w.close_calls, 1);
    cr_assert_eq(w.close_err, RB_EIO);
    cr_assert_eq(w.out_len, 2);
}

/*
 * test_deadlines.c: the docker client's deadlines and connection budgets (docker/docker.h)
 * against a fake engine on a private unix socket (same loop) that answers some requests at once
 * and swallows others (never answers them): every kind of call ends with RB_ETIMEDOUT at its
 * deadline, calls waiting for a connection too, an attach handshake has a deadline, and long
 * calls that hang cannot take the connections of short ones (ping, create, start, inspect).
 * The client's statistics count every completed call under its operation, and failed ones
 * under their reason. Waits are bounded by a hang guard, never timed.
 */
#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "docker/docker.h"
#include "support_docker.h"

#define GUARD_MS 30000

/* ---- the fake engine --------------------------------------------------------------------- */

typedef struct fake_conn {
    uv_pipe_t pipe;
    size_t len;
    int swallowing; /* a swallowed request came in: nothing more is read or answered */
    char buf[16384];
} fake_conn;

/* Requests whose request line contains `swallow` get no answer; the rest a canned one. */
static struct {
    uv_pipe_t server;
    char path[108];
    const char *swallow;
    int swallowed;      /* requests swallowed so far */
    int open_swallowed; /* connections holding a swallowed request, still open */
    int max_open_swallowed;
    int answered;
} E;

static void conn_close_cb(uv_handle_t *h)
{
    free(h->data);
}

static void conn_close(fake_conn *c)
{
    if (uv_is_closing((uv_handle_t *)&c->pipe))
        return;
    if (c->swallowing)
        E.open_swallowed--;
    uv_close((uv_handle_t *)&c->pipe, conn_close_cb);
}

static void fake_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
    (void)suggested;
    fake_conn *c = h->data;
    *buf = uv_buf_init(c->buf + c->len, (unsigned)(sizeof(c->buf) - 1 - c->len));
}

static void fake_written(uv_write_t *w, int status)
{
    (void)status;
    free(w);
}

static void answer(fake_conn *c, const char *line)
{
    const char *status = "200 OK", *body = "{}";
    if (strstr(line, "/version") != NULL)
        body = "{\"ApiVersion\":\"1.41\"}";
    else if (strstr(line, "/broken") != NULL)
        status = "500 Internal Server Error", body = "{\"message\":\"broken\"}";
    else if (strstr(line, "/containers/create") != NULL)
        status = "201 Created", body = "{\"Id\":\"c0ffee\",\"Warnings\":[]}";
    size_t cap = 512;
    uv_write_t *w = xmalloc(sizeof(*w) + cap);
    char *text = (char *)(w + 1);
    int n = snprintf(text, cap, "HTTP/1.1 %s\r\nContent-Type: application/json\r\nContent-Length: %zu\r\n\r\n%s",
                     status, strlen(body), body);
    uv_buf_t b = uv_buf_init(text, (unsigned)n);
    cr_assert_eq(uv_write(w, (uv_stream_t *)&c->pipe, &b, 1, fake_written), 0);
    E.answered++;
}

/* Handles every complete request in c's buffer (headers and Content-Length bytes of body). */
static void serve(fake_conn *c)
{
    while (!c->swallowing) {
        c->buf[c->len] = '\0';
        char *end = strstr(c->buf, "\r\n\r\n");
        if (end == NULL)
            return;
        size_t head = (size_t)(end + 4 - c->buf), body = 0;
        for (char *p = c->buf; p < end; p++) {
            if ((p == c->buf || p[-1] == '\n') && strncasecmp(p, "Content-Length:", 15) == 0) {
                body = strtoul(p + 15, NULL, 10);
                break;
            }
        }
        if (c->len < head + body)
            return;
        char line[512];
        size_t ll = strcspn(c->buf, "\r");
        snprintf(line, sizeof(line), "%.*s", (int)(ll < sizeof(line) - 1 ? ll : sizeof(line) - 1), c->buf);
        memmove(c->buf, c->buf + head + body, c->len - head - body);
        c->len -= head + body;
        if (E.swallow != NULL && strstr(line, E.swallow) != NULL) {
            c->swallowing = 1;
            E.swallowed++;
            if (++E.open_swallowed > E.max_open_swallowed)
                E.max_open_swallowed = E.open_swallowed;
            return;
        }
        answer(c, line);
    }
}

static void fake_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf)
{
    (void)buf;
    fake_conn *c = s->data;
    if (nread < 0) {
        conn_close(c);
        return;
    }
    c->len += (size_t)nread;
    serve(c);
    if (c->len >= sizeof(c->buf) - 1)
        conn_close(c); /* not a request this fake understands */
}

static void fake_conn_cb(uv_stream_t *server, int status)
{
    cr_assert_eq(status, 0);
    fake_conn *c = xcalloc(1, sizeof(*c));
    uv_pipe_init(server->loop, &c->pipe, 0);
    c->pipe.data = c;
    cr_assert_eq(uv_accept(server, (uv_stream_t *)&c->pipe), 0);
    uv_read_start((uv_stream_t *)&c->pipe, fake_alloc, fake_read);
}

/* A loop, the fake engine swallowing requests that match swallow ("" for all), and a client. */
static void fake_open(uv_loop_t *loop, const char *swallow, docker **d)
{
    char id[64], err[RB_ERR_LEN];
    signal(SIGPIPE, SIG_IGN);
    memset(&E, 0, sizeof(E));
    E.swallow = swallow;
    rb_random_id("runbox-test-", id, sizeof(id));
    snprintf(E.path, sizeof(E.path), "/tmp/%.40s.sock", id);
    cr_assert_eq(uv_loop_init(loop), 0);
    cr_assert_eq(uv_pipe_init(loop, &E.server, 0), 0);
    cr_assert_eq(uv_pipe_bind(&E.server, E.path), 0);
    cr_assert_eq(uv_listen((uv_stream_t *)&E.server, 128, fake_conn_cb), 0);
    cr_assert_eq(docker_new(loop, E.path, d, err), RB_OK, "%s", err);
}

static void noop_close(uv_handle_t *h)
{
    (void)h;
}

static void walk_close(uv_handle_t *h, void *arg)
{
    (void)arg;
    if (uv_is_closing(h))
        return;
    if (h == (uv_handle_t *)&E.server)
        uv_close(h, noop_close);
    else if (h->type == UV_NAMED_PIPE)
        conn_close(h->data);
}

/* Frees the client, closes the fake engine and its connections, and checks nothing leaked. */
static void fake_close(uv_loop_t *loop, docker *d)
{
    docker_free(d);
    uv_run(loop, UV_RUN_NOWAIT);
    uv_walk(loop, walk_close, NULL);
    uv_run(loop, UV_RUN_DEFAULT);
    unlink(E.path);
    cr_assert_eq(uv_loop_close(loop), 0, "handles left open on the loop");
}

static void on_guard(uv_timer_t *t)
{
    *(int *)t->data = 1;
}

/* Runs the loop until *count reaches want; fails the test after GUARD_MS (a hang, not a timing). */
static void run_until(uv_loop_t *loop, const int *count, int want)
{
    uv_timer_t guard;
    int fired = 0;
    uv_timer_init(loop, &guard);
    guard.data = &fired;
    uv_timer_start(&guard, on_guard, GUARD_MS, 0);
    uv_unref((uv_handle_t *)&guard);
    while (*count < want && !fired)
        if (uv_run(loop, UV_RUN_ONCE) == 0)
            break;
    uv_close((uv_handle_t *)&guard, noop_close);
    uv_run(loop, UV_RUN_NOWAIT);
    cr_assert(!fired, "hang guard: %d of %d awaited events within %d ms", *count, want, GUARD_MS);
    cr_assert_geq(*count, want, "the loop ran out of work before the awaited event");
}

/* A call's outcome; `done` counts the callbacks of all calls sharing the counter. */
typedef struct outcome {
    int *done;
    rb_err err;
    char msg[RB_ERR_LEN];
} outcome;

static void json_cb(void *data, rb_err err, const char *errmsg, int status, json_t *body)
{
    outcome *o = data;
    (void)status, (void)body;
    o->err = err;
    snprintf(o->msg, sizeof(o->msg), "%s", errmsg ? errmsg : "");
    (*o->done)++;
}

static void raw_cb(void *data, rb_err err, const char *errmsg, int status, const char *body, size_t len)
{
    (void)body, (void)len;
    json_cb(data, err, errmsg, status, NULL);
}

static docker_timeouts all_ms(long ms)
{
    docker_timeouts t = {ms, ms, ms, ms, ms, ms};
    return t;
}

/* ---- tests ------------------------------------------------------------------------------- */

Test(deadlines, every_kind_of_call_times_out_by_default)
{
    uv_loop_t loop;
    docker *d;
    char err[RB_ERR_LEN];
    fake_open(&loop, "", &d); /* an engine that accepts and never answers */
    docker_timeouts t = all_ms(300);
    cr_assert_eq(docker_set_timeouts(d, &t, err), RB_OK, "%s", err);
    json_t *conf = json_object();
    int done = 0;
    outcome o[11];
    for (size_t i = 0; i < 11; i++)
        o[i] = (outcome){&done, RB_OK, ""};
    /* every call passes no timeout of its own: the client's defaults must apply */
    cr_assert_eq(docker_ping_version(d, json_cb, &o[0], err), RB_OK, "%s", err);
    cr_assert_eq(docker_container_create(d, "runbox-x", conf, json_cb, &o[1], err), RB_OK, "%s", err);
    cr_assert_eq(docker_container_start(d, "c0ffee", json_cb, &o[2], err), RB_OK, "%s", err);
    cr_assert_eq(docker_container_remove(d, "c0ffee", json_cb, &o[3], err), RB_OK, "%s", err);
    cr_assert_eq(docker_container_inspect(d, "c0ffee", json_cb, &o[4], err), RB_OK, "%s", err);
    cr_assert_eq(docker_container_list(d, "runbox.instance", json_cb, &o[5], err), RB_OK, "%s", err);
    cr_assert_eq(docker_container_wait(d, "c0ffee", 0, json_cb, &o[6], err), RB_OK, "%s", err);
    cr_assert_eq(docker_container_logs(d, "c0ffee", 0, raw_cb, &o[7], err), RB_OK, "%s", err);
    cr_assert_eq(docker_exec_start(d, "e0", 0, 0, raw_cb, &o[8], err), RB_OK, "%s", err);
    cr_assert_eq(docker_archive_get(d, "c0ffee", "/workspace", 0, raw_cb, &o[9], err), RB_OK, "%s", err);
    cr_assert_eq(docker_archive_put(d, "c0ffee", "/workspace", "x", 1, raw_cb, &o[10], err), RB_OK, "%s", err);
    json_decref(conf);
    run_until(&loop, &done, 11);
    for (size_t i = 0; i < 11; i++) {
        cr_expect_eq(o[i].err, RB_ETIMEDOUT, "call %zu: got %s: %s", i, rb_strerror(o[i].err), o[i].msg);
        cr_expect(strstr(o[i].msg, E.path) != NULL, "call %zu: the message should name the engine: %s", i,
                  o[i].msg);
    }
    cr_expect(strstr(o[1].msg, "POST /containers/create?name=runbox-x") != NULL, "message: %s", o[1].msg);
    cr_expect(strstr(o[1].msg, "300 ms") != NULL, "message: %s", o[1].msg);
    /* each timed out under its operation: list and logs are "other" */
    docker_stats st;
    docker_stats_read(d, &st);
    static const struct {
        docker_op op;
        uint64_t n;
    } want[] = {{DOCKER_OP_PING, 1},   {DOCKER_OP_CREATE, 1}, {DOCKER_OP_START, 1}, {DOCKER_OP_REMOVE, 1},
                {DOCKER_OP_INSPECT, 1}, {DOCKER_OP_OTHER, 2}, {DOCKER_OP_WAIT, 1},  {DOCKER_OP_EXEC, 1},
                {DOCKER_OP_ARCHIVE, 2}, {DOCKER_OP_ATTACH, 0}};
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
        const char *name = docker_op_name(want[i].op);
        cr_expect_eq(st.failures[want[i].op][DOCKER_FAIL_TIMEOUT], want[i].n, "%s: %llu timeouts", name,
                     (unsigned long long)st.failures[want[i].op][DOCKER_FAIL_TIMEOUT]);
        cr_expect_eq(st.latency[want[i].op].count, want[i].n, "%s: %llu calls", name,
                     (unsigned long long)st.latency[want[i].op].count);
        for (int f = DOCKER_FAIL_UNREACHABLE; f < DOCKER_FAIL_MAX; f++)
            cr_expect_eq(st.failures[want[i].op][f], 0, "%s: %s", name, docker_failure_name((docker_failure)f));
    }
    /* the calls took their 300 ms deadline, no bucket of 5 ms or less */
    cr_expect_eq(st.latency[DOCKER_OP_CREATE].bucket[0], 0);
    cr_expect_geq(st.latency[DOCKER_OP_CREATE].sum, 0.2);
    fake_close(&loop, d);
}

Test(deadlines, answered_calls_are_counted_and_failures_by_reason)
{
    uv_loop_t loop;
    docker *d, *nowhere;
    char err[RB_ERR_LEN];
    fake_open(&loop, NULL, &d); /* answers everything: 200, or 500 for /broken */
    cr_assert_eq(docker_new(&loop, "/nonexistent/runbox-test.sock", &nowhere, err), RB_OK, "%s", err);
    int done = 0;
    outcome o[6];
    for (size_t i = 0; i < 6; i++)
        o[i] = (outcome){&done, RB_OK, ""};
    json_t *conf = json_object();
    cr_assert_eq(docker_ping_version(d, json_cb, &o[0], err), RB_OK, "%s", err);
    cr_assert_eq(docker_container_create(d, "runbox-z", conf, json_cb, &o[1], err), RB_OK, "%s", err);
    cr_assert_eq(docker_container_inspect(d, "c0ffee", json_cb, &o[2], err), RB_OK, "%s", err);
    cr_assert_eq(docker_container_inspect(d, "broken", json_cb, &o[3], err), RB_OK, "%s", err);
    cr_assert_eq(docker_container_remove(d, "c0ffee", json_cb, &o[4], err), RB_OK, "%s", err);
    cr_assert_eq(docker_container_create(nowhere, NULL, conf, json_cb, &o[5], err), RB_OK, "%s", err);
    json_decref(conf);
    run_until(&loop, &done, 6);
    cr_expect_eq(o[3].err, RB_EIO, "%s", o[3].msg);
    cr_expect_eq(o[5].err, RB_EUNAVAILABLE, "%s", o[5].msg);
    docker_stats st, st2;
    docker_stats_read(d, &st);
    docker_stats_read(nowhere, &st2);
    cr_expect_eq(st.latency[DOCKER_OP_PING].count, 1);
    cr_expect_eq(st.latency[DOCKER_OP_CREATE].count, 1);
    cr_expect_eq(st.latency[DOCKER_OP_INSPECT].count, 2);
    cr_expect_eq(st.latency[DOCKER_OP_REMOVE].count, 1);
    cr_expect_eq(st.failures[DOCKER_OP_INSPECT][DOCKER_FAIL_HTTP_5XX], 1);
    uint64_t failed = 0;
    for (int op = 0; op < DOCKER_OP_MAX; op++)
        for (int f = 0; f < DOCKER_FAIL_MAX; f++)
            failed += st.failures[op][f];
    cr_expect_eq(failed, 1, "only the inspect of /broken failed");
    for (int op = 0; op < DOCKER_OP_MAX; op++) {
        uint64_t in_buckets = 0;
        for (int b = 0; b <= RB_LATENCY_BUCKETS; b++)
            in_buckets += st.latency[op].bucket[b];
        cr_expect_eq(in_buckets, st.latency[op].count, "%s: every call in one bucket", docker_op_name((docker_op)op));
    }
    cr_expect_eq(st2.failures[DOCKER_OP_CREATE][DOCKER_FAIL_UNREACHABLE], 1);
    cr_expect_str_eq(docker_op_name(DOCKER_OP_CREATE), "create");
    cr_expect_str_eq(docker_failure_name(DOCKER_FAIL_HTTP_5XX), "http_5xx");
    cr_expect_str_eq(docker_op_name(DOCKER_OP_MAX), "");
    docker_free(nowhere);
    fake_close(&loop, d);
}

Test(deadlines, calls_waiting_for_a_connection_time_out_too)
{
    uv_loop_t loop;
    docker *d;
    char err[RB_ERR_LEN];
    fake_open(&loop, "/containers/create", &d);
    docker_timeouts t;
    docker_timeouts_default(&t);
    t.short_ms = 300;
    cr_assert_eq(docker_set_timeouts(d, &t, err), RB_OK, "%s", err);
    enum { N = DOCKER_SHORT_CONNECTIONS + 4 };
    int done = 0;
    outcome o[N];
    json_t *conf = json_object();
    for (size_t i = 0; i < N; i++) {
        o[i] = (outcome){&done, RB_OK, ""};
        cr_assert_eq(docker_container_create(d, NULL, conf, json_cb, &o[i], err), RB_OK, "%s", err);
    }
    json_decref(conf);
    run_until(&loop, &done, N);
    for (size_t i = 0; i < N; i++)
        cr_expect_eq(o[i].err, RB_ETIMEDOUT, "create %zu: got %s: %s", i, rb_strerror(o[i].err), o[i].msg);
    cr_expect_leq(E.max_open_swallowed, DOCKER_SHORT_CONNECTIONS, "%d short calls held connections at once",
                  E.max_open_swallowed);
    fake_close(&loop, d);
}

Test(deadlines, ping_and_short_calls_complete_while_long_calls_hang)
{
    uv_loop_t loop;
    docker *d;
    char err[RB_ERR_LEN];
    fake_open(&loop, "/wait", &d); /* container waits hang (an install that takes forever) */
    enum { WAITS = 24 };
    int waits_done = 0;
    outcome w[WAITS];
    for (size_t i = 0; i < WAITS; i++) {
        w[i] = (outcome){&waits_done, RB_OK, ""};
        cr_assert_eq(docker_container_wait(d, "c0ffee", 0, json_cb, &w[i], err), RB_OK, "%s", err);
    }
    run_until(&loop, &E.swallowed, 16); /* the engine holds them */

    int done = 0;
    outcome o[4];
    for (size_t i = 0; i < 4; i++)
        o[i] = (outcome){&done, RB_OK, ""};
    json_t *conf = json_object();
    cr_assert_eq(docker_ping_version(d, json_cb, &o[0], err), RB_OK, "%s", err);
    cr_assert_eq(docker_container_create(d, "runbox-y", conf, json_cb, &o[1], err), RB_OK, "%s", err);
    cr_assert_eq(docker_container_start(d, "c0ffee", json_cb, &o[2], err), RB_OK, "%s", err);
    cr_assert_eq(docker_container_inspect(d, "c0ffee", json_cb, &o[3], err), RB_OK, "%s", err);
    json_decref(conf);
    run_until(&loop, &done, 4);
    for (size_t i = 0; i < 4; i++)
        cr_expect_eq(o[i].err, RB_OK, "short call %zu: got %s: %s", i, rb_strerror(o[i].err), o[i].msg);
    cr_expect_eq(waits_done, 0, "the waits are still waiting");
    cr_expect_leq(E.swallowed, DOCKER_LONG_CONNECTIONS, "%d long calls held connections at once", E.swallowed);
    fake_close(&loop, d);
    cr_expect_eq(waits_done, WAITS, "docker_free calls back every wait, held or queued");
    for (size_t i = 0; i < WAITS; i++)
        cr_expect_eq(w[i].err, RB_ECANCELED, "wait %zu: got %s", i, rb_strerror(w[i].err));
}

Test(deadlines, a_cancelled_waiting_call_gives_its_place_up)
{
    uv_loop_t loop;
    docker *d;
    char err[RB_ERR_LEN];
    fake_open(&loop, "/wait", &d);
    enum { WAITS = DOCKER_LONG_CONNECTIONS + 2 };
    int done = 0;
    outcome w[WAITS];
    docker_req *reqs[WAITS];
    /* more answered short calls than their budget: they take turns and all complete */
    for (size_t i = 0; i < WAITS; i++) {
        w[i] = (outcome){&done, RB_OK, ""};
        cr_assert_eq(docker_request(d, "GET", "/containers/c0ffee/json", NULL, 0, json_cb, &w[i], &reqs[i], err),
                     RB_OK, "%s", err);
    }
    run_until(&loop, &done, WAITS);
    for (size_t i = 0; i < WAITS; i++)
        cr_expect_eq(w[i].err, RB_OK, "call %zu: %s", i, w[i].msg);
    /* long calls that hang: cancelling a queued one and a held one calls each back once with
     * RB_ECANCELED, and the held one's connection goes to the first one waiting */
    done = 0;
    for (size_t i = 0; i < WAITS; i++) {
        w[i] = (outcome){&done, RB_OK, ""};
        cr_assert_eq(docker_request_raw(d, "POST", "/containers/c0ffee/wait", NULL, NULL, 0, 0, 0, raw_cb, &w[i],
                                        &reqs[i], err),
                     RB_OK, "%s", err);
    }
    run_until(&loop, &E.swallowed, DOCKER_LONG_CONNECTIONS);
    docker_req_cancel(reqs[WAITS - 1]);
    docker_req_cancel(reqs[0]);
    run_until(&loop, &done, 2);
    cr_expect_eq(w[0].err, RB_ECANCELED);
    cr_expect_eq(w[WAITS - 1].err, RB_ECANCELED);
    run_until(&loop, &E.swallowed, DOCKER_LONG_CONNECTIONS + 1);
    fake_close(&loop, d);
    cr_expect_eq(done, WAITS);
}

static void att_open(void *data, rb_err err, const char *errmsg)
{
    outcome *o = data;
    o->err = err;
    snprintf(o->msg, sizeof(o->msg), "%s", errmsg ? errmsg : "");
    (*o->done)++;
}

static void att_data(void *data, int stream, const char *buf, size_t len)
{
    (void)data, (void)stream, (void)buf, (void)len;
}

static void att_close(void *data, rb_err err, const char *errmsg)
{
    (void)data, (void)err, (void)errmsg;
    cr_assert_fail("on_close after a failed open");
}

Test(deadlines, an_unanswered_attach_times_out)
{
    uv_loop_t loop;
    docker *d;
    docker_attach *a;
    char err[RB_ERR_LEN];
    fake_open(&loop, "/attach", &d);
    docker_timeouts t;
    docker_timeouts_default(&t);
    t.attach_ms = 300;
    cr_assert_eq(docker_set_timeouts(d, &t, err), RB_OK, "%s", err);
    int done = 0;
    outcome o = {&done, RB_OK, ""};
    docker_attach_cbs cbs = {att_open, att_data, att_close};
    cr_assert_eq(docker_attach_start(d, "c0ffee", &cbs, &o, &a, err), RB_OK, "%s", err);
    run_until(&loop, &done, 1);
    cr_expect_eq(o.err, RB_ETIMEDOUT, "got %s: %s", rb_strerror(o.err), o.msg);
    cr_expect(strstr(o.msg, "attach") != NULL && strstr(o.msg, E.path) != NULL, "message: %s", o.msg);
    docker_stats st;
    docker_stats_read(d, &st);
    cr_expect_eq(st.failures[DOCKER_OP_ATTACH][DOCKER_FAIL_TIMEOUT], 1);
    cr_expect_eq(st.latency[DOCKER_OP_ATTACH].count, 1);
    fake_close(&loop, d);
}

Test(deadlines, timeouts_must_be_positive)
{
    uv_loop_t loop;
    docker *d;
    char err[RB_ERR_LEN];
    fake_open(&loop, NULL, &d);
    docker_timeouts t = all_ms(1000);
    t.short_ms = 0;
    cr_expect_eq(docker_set_timeouts(d, &t, err), RB_EINVAL);
    fake_close(&loop, d);
}

/*
 * support_harness.c: the server/ test harness (harness.h): the server runs on its own loop in
 * a thread; the tests talk to it over loopback with a blocking client.
 */
#include "tests/server/harness.h"
#include "server/agentrun/agentrun.h"
#include "server/console/console.h"
#include "server/dify/dify.h"
#include "server/mcp/mcp.h"
#include "server/metrics/metrics.h"
#include "server/rest/rest.h"

#include <arpa/inet.h>
#include <errno.h>
#include <signal.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <criterion/criterion.h>

static void on_stop(uv_async_t *a)
{
    harness *h = a->data;
    server_stop(h->server);
    core_free(h->core);
    h->core = NULL;
    uv_close((uv_handle_t *)&h->stop, NULL);
}

static void *loop_main(void *p)
{
    harness *h = p;
    char err[RB_ERR_LEN];
    uv_loop_init(&h->loop);
    uv_async_init(&h->loop, &h->stop, on_stop);
    h->stop.data = h;
    /* Assembled as runboxd's main does: the server, then each protocol registers itself. */
    rb_err e = core_new(&h->loop, &h->core_cfg, &h->core, err);
    if (e == RB_OK)
        e = server_start(&h->loop, &h->cfg, h->core, &h->server, err);
    if (e == RB_OK) {
        rest_register(h->server);
        metrics_register(h->server, h->core);
        dify_register(h->server);
        console_register(h->server);
        mcp_server *mcp = NULL;
        e = mcp_register(h->server, h->core, &h->cfg, &mcp, err);
        if (e == RB_OK)
            e = agentrun_register(h->server, mcp, err);
    }
    if (e != RB_OK) {
        fprintf(stderr, "harness: %s\n", err);
        h->port = -1;
        sem_post(&h->ready);
        return NULL;
    }
    h->port = server_port(h->server);
    sem_post(&h->ready);
    uv_run(&h->loop, UV_RUN_DEFAULT);
    server_free(h->server);
    h->close_rc = uv_loop_close(&h->loop);
    /* h2o keeps per-thread recycle caches (memory pool chunks, socket buffers) in thread-local
     * storage; the thread stays parked so they remain reachable rather than reported as leaks. */
    sem_post(&h->done);
    for (;;)
        pause();
    return NULL;
}

void harness_start(harness *h, size_t max_body)
{
    memset(h, 0, sizeof(*h));
    signal(SIGPIPE, SIG_IGN); /* as runboxd does: a vanished client must not kill the process */
    server_settings_init(&h->cfg);
    free(h->cfg.listen);
    h->cfg.listen = xstrdup("127.0.0.1:0");
    /* The fake core is linked instead of core/, so its settings are set by hand. */
    h->core_cfg.max_sessions = 3;
    rb_log_set_level(RB_LOG_WARN);
    if (max_body)
        h->cfg.max_body = max_body;
    sem_init(&h->ready, 0, 0);
    sem_init(&h->done, 0, 0);
    cr_assert_eq(pthread_create(&h->thread, NULL, loop_main, h), 0);
    sem_wait(&h->ready);
    cr_assert_gt(h->port, 0, "server did not start");
}

void harness_request_stop(harness *h)
{
    if (!h->stop_sent) {
        h->stop_sent = 1;
        uv_async_send(&h->stop);
    }
}

void harness_stop(harness *h)
{
    harness_request_stop(h);
    sem_wait(&h->done);
    cr_expect_eq(h->close_rc, 0, "the loop still had handles after the server stopped");
    sem_destroy(&h->ready);
    sem_destroy(&h->done);
    server_settings_dispose(&h->cfg);
}

int http_connect(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    /* A safety net against a hung test, not a timing assertion. */
    struct timeval tv = {60, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    struct sockaddr_in a;
    memset(&a, 0, sizeof(a));
    a.sin_family = AF_INET;
    a.sin_port = htons((uint16_t)port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, (struct sockaddr *)&a, sizeof(a)) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

static int write_all(int fd, const char *p, size_t n)
{
    while (n > 0) {
        ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

static size_t dechunk(char *b, size_t n)
{
    size_t in = 0, out = 0;
    while (in < n) {
        char *end;
        unsigned long len = strtoul(b + in, &end, 16);
        char *crlf = strstr(end, "\r\n");
        if (crlf == NULL)
            break;
        in = (size_t)(crlf + 2 - b);
        if (len == 0 || in + len > n)
            break;
        memmove(b + out, b + in, len);
        out += len;
        in += len + 2;
    }
    b[out] = '\0';
    return out;
}

int http_do(int port, const char *method, const char *path, const char *extra_headers, const char *body,
            size_t body_len, http_resp *out)
{
    memset(out, 0, sizeof(*out));
    int fd = http_connect(port);
    if (fd < 0)
        return -1;
    char cl[64] = "";
    if (body != NULL)
        snprintf(cl, sizeof(cl), "Content-Length: %zu\r\n", body_len);
    char *full = xasprintf("%s %s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nConnection: close\r\n%s%s\r\n", method, path, port,
                           extra_headers ? extra_headers : "", cl);
    int rc = write_all(fd, full, strlen(full));
    free(full);
    /* The server may answer (413) and close before taking the whole body: keep going to read. */
    if (rc == 0 && body != NULL)
        write_all(fd, body, body_len);
    rb_buf in;
    rb_buf_init(&in, 256u << 20);
    char chunk[65536];
    for (;;) {
        ssize_t r = recv(fd, chunk, sizeof(chunk), 0);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        rb_buf_append(&in, chunk, (size_t)r);
    }
    close(fd);
    if (in.len == 0) {
        rb_buf_dispose(&in);
        return -1;
    }
    char *sep = strstr(in.data, "\r\n\r\n");
    if (sep == NULL || sscanf(in.data, "HTTP/1.%*d %d", &out->status) != 1) {
        rb_buf_dispose(&in);
        return -1;
    }
    out->head = xstrndup(in.data, (size_t)(sep - in.data) + 2);
    out->body_len = in.len - (size_t)(sep + 4 - in.data);
    out->body = xstrndup(sep + 4, out->body_len);
    const char *te = http_header(out, "transfer-encoding");
    if (te != NULL && strcasecmp(te, "chunked") == 0)
        out->body_len = dechunk(out->body, out->body_len);
    out->json = json_loadb(out->body, out->body_len, 0, NULL);
    rb_buf_dispose(&in);
    return 0;
}

int http_json(int port, const char *method, const char *path, const char *body, http_resp *out)
{
    return http_do(port, method, path, body ? "Content-Type: application/json\r\n" : NULL, body,
                   body ? strlen(body) : 0, out);
}

const char *http_header(const http_resp *r, const char *name)
{
    static __thread char value[1024];
    size_t nlen = strlen(name);
    const char *p = r->head ? strstr(r->head, "\r\n") : NULL;
    while (p != NULL && p[2] != '\0') {
        p += 2;
        const char *eol = strstr(p, "\r\n");
        if (eol == NULL)
            break;
        if ((size_t)(eol - p) > nlen && strncasecmp(p, name, nlen) == 0 && p[nlen] == ':') {
            const char *v = p + nlen + 1;
            while (*v == ' ')
                v++;
            snprintf(value, sizeof(value), "%.*s", (int)(eol - v), v);
            return value;
        }
        p = eol;
    }
    return NULL;
}

void http_resp_dispose(http_resp *r)
{
    free(r->head);
    free(r->body);
    json_decref(r->json);
    memset(r, 0, sizeof(*r));
}

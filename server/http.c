/*
 * http.c: the listener of runboxd (server/http.h): the socket, the h2o configuration and
 * context, connections, the access log and counts, and the orderly stop. One h2o handler is
 * registered at "/" (router.c). Errors that h2o generates itself before any handler runs (413
 * for a body over the limit, 400 for broken framing) go through the host's fallback path; a
 * filter there rewrites them into the protocol's error document. Another filter, on both paths,
 * gives every 429 and 503 its Retry-After. No session logic.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "server/http_private.h"

/* ---- JSON for h2o's own errors (fallback path) ---------------------------------------- */

typedef struct jsonerr_ostream {
    h2o_ostream_t super;
    h2o_iovec_t body;
    int sent;
} jsonerr_ostream;

typedef struct jsonerr_filter {
    h2o_filter_t super;
    rb_server *server;
} jsonerr_filter;

static void jsonerr_do_send(h2o_ostream_t *self, h2o_req_t *req, h2o_iovec_t *bufs, size_t bufcnt,
                            h2o_send_state_t state)
{
    jsonerr_ostream *os = (jsonerr_ostream *)self;
    (void)bufs;
    (void)bufcnt;
    if (!os->sent) {
        os->sent = 1;
        h2o_ostream_send_next(&os->super, req, &os->body, 1, state);
    } else {
        h2o_ostream_send_next(&os->super, req, NULL, 0, state);
    }
}

static void jsonerr_on_setup_ostream(h2o_filter_t *self, h2o_req_t *req, h2o_ostream_t **slot)
{
    rb_server *s = ((jsonerr_filter *)self)->server;
    if (req->res.status >= 400) {
        char msg[RB_ERR_LEN];
        s->counts.refusals[req->res.status == 413 ? HTTP_REFUSED_BODY : HTTP_REFUSED_MALFORMED]++;
        if (req->res.status == 413)
            snprintf(msg, sizeof(msg),
                     "the request body is larger than the limit of %zu bytes (max-body for JSON, max-upload for "
                     "file uploads)",
                     (size_t)s->globalconf.max_request_entity_size);
        else
            snprintf(msg, sizeof(msg), "the HTTP request could not be read: %s", req->res.reason ? req->res.reason : "");
        json_t *doc = http__protocol_error_doc(s, req, req->res.status, http__code_of_status(req->res.status), msg);
        h2o_iovec_t body = http__encode(req, doc);
        json_decref(doc);
        h2o_set_header(&req->pool, &req->res.headers, H2O_TOKEN_CONTENT_TYPE, H2O_STRLIT("application/json"), 1);
        req->res.content_length = body.len;
        if (h2o_memis(req->input.method.base, req->input.method.len, H2O_STRLIT("HEAD")))
            body.len = 0;
        jsonerr_ostream *os = (jsonerr_ostream *)h2o_add_ostream(req, sizeof(*os), slot);
        os->super.do_send = jsonerr_do_send;
        os->body = body;
        os->sent = 0;
        slot = &os->super.next;
    }
    h2o_setup_next_ostream(req, slot);
}

/* RFC 6585 and 9110: a 429 or a 503 says when to come back. Every answer of every protocol
 * (REST, MCP, E2B, AgentRun, and h2o's own) passes this filter, so none can leave it out; an
 * answer that set its own (an rps budget's wait, download memory's 1 s) keeps it. */
static void retry_on_setup_ostream(h2o_filter_t *self, h2o_req_t *req, h2o_ostream_t **slot)
{
    (void)self;
    if ((req->res.status == 429 || req->res.status == 503) &&
        h2o_find_header(&req->res.headers, H2O_TOKEN_RETRY_AFTER, -1) == -1)
        h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_RETRY_AFTER, NULL, H2O_STRLIT(HTTP_RETRY_AFTER));
    h2o_setup_next_ostream(req, slot);
}

/* While stopping, every answer closes its HTTP/1.1 connection, so that the drain ends as soon
 * as requests in flight are answered instead of waiting for idle keep-alive clients. */
static void closing_on_setup_ostream(h2o_filter_t *self, h2o_req_t *req, h2o_ostream_t **slot)
{
    if (((jsonerr_filter *)self)->server->stopping)
        req->http1_is_persistent = 0;
    h2o_setup_next_ostream(req, slot);
}

/* ---- access log and counts ------------------------------------------------------------ */

static void log_access(h2o_logger_t *self, h2o_req_t *req)
{
    (void)self;
    http__count_request(http__server_of(req), req);
    struct timeval now;
    gettimeofday(&now, NULL);
    double ms = (double)(now.tv_sec - req->timestamps.request_begin_at.tv_sec) * 1000.0 +
                (double)(now.tv_usec - req->timestamps.request_begin_at.tv_usec) / 1000.0;
    if (req->timestamps.request_begin_at.tv_sec == 0)
        ms = 0;
    h2o_iovec_t m = req->input.method, p = req->input.path;
    rb_info("http %.*s %.*s %d %.1fms", m.len > 16 ? 16 : (int)m.len, m.base ? m.base : "",
            p.len > 300 ? 300 : (int)p.len, p.base ? p.base : "", req->res.status, ms);
}

/* ---- listener ------------------------------------------------------------------------- */

static void maybe_dispose(rb_server *s)
{
    if (!s->stopping || !s->listener_closed || s->conns > 0 || s->disposed)
        return;
    s->disposed = 1;
    /* h2o_context_request_shutdown armed HTTP/2's graceful-shutdown timer even without HTTP/2
     * connections; h2o_context_dispose asserts that no timer entry is left. */
    if (h2o_timeout_is_linked(&s->ctx.http2._graceful_shutdown_timeout))
        h2o_timeout_unlink(&s->ctx.http2._graceful_shutdown_timeout);
    h2o_context_dispose(&s->ctx);
}

static void on_conn_closed(uv_handle_t *h)
{
    server_conn *c = (server_conn *)h;
    rb_server *s = c->server;
    free(c);
    s->conns--;
    maybe_dispose(s);
}

/* ---- connections over max-connections ------------------------------------------------------
 *
 * h2o reads a whole request body (up to max(max-body, max-upload)) before any handler runs, so
 * the number of connections bounds that memory. One connection over the limit is answered 429 at
 * once, without reading its request, and closed once the client has closed its side or after
 * REFUSED_LINGER_MS (closing with its request unread would reset the connection, and the client
 * could lose the answer). */

#define REFUSED_LINGER_MS 2000
#define REFUSED_ANSWER                                                                                               \
    "HTTP/1.1 429 Too Many Requests\r\nContent-Type: application/json\r\nRetry-After: 1\r\nConnection: "        \
    "close\r\nContent-Length: %d\r\n\r\n%s"
#define REFUSED_BODY                                                                                                 \
    "{\"error\":{\"code\":\"too_many_requests\",\"message\":\"too many connections are open (max-connections "    \
    "%d): close idle ones or reuse them (keep-alive), then try again\"}}"

static void refused_closed(uv_handle_t *h)
{
    server_conn *c = h->data;
    uv_close((uv_handle_t *)c->linger, (uv_close_cb)free);
    on_conn_closed((uv_handle_t *)&c->tcp);
}

static void refused_end(server_conn *c)
{
    if (uv_is_closing((uv_handle_t *)&c->tcp))
        return;
    uv_timer_stop(c->linger);
    c->tcp.data = c;
    uv_close((uv_handle_t *)&c->tcp, refused_closed);
}

static void refused_timeout(uv_timer_t *t)
{
    refused_end(t->data);
}

static void refused_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
    server_conn *c = (server_conn *)h;
    (void)suggested;
    *buf = uv_buf_init(c->sink, sizeof(c->sink));
}

static void refused_read(uv_stream_t *stream, ssize_t n, const uv_buf_t *buf)
{
    (void)buf;
    if (n < 0) /* the client closed its side (or the connection broke) */
        refused_end((server_conn *)stream);
}

static void refused_shut(uv_shutdown_t *req, int status)
{
    (void)req;
    (void)status;
}

static void refuse_connection(rb_server *s, server_conn *c)
{
    char body[256], answer[512];
    int blen = snprintf(body, sizeof(body), REFUSED_BODY, s->cfg->max_connections);
    int alen = snprintf(answer, sizeof(answer), REFUSED_ANSWER, blen, body);
    uv_buf_t b = uv_buf_init(answer, (unsigned)alen);
    s->counts.refusals[HTTP_REFUSED_CONNECTIONS]++;
    int64_t now = rb_mono_ms();
    if (s->refused_conns++ == 0 || now - s->refused_logged >= 10000) {
        rb_warn("http: %zu connection(s) refused: max-connections %d are open", s->refused_conns,
                s->cfg->max_connections);
        s->refused_conns = 0;
        s->refused_logged = now;
    }
    c->linger = xmalloc(sizeof(*c->linger));
    uv_timer_init(s->loop, c->linger);
    c->linger->data = c;
    uv_timer_start(c->linger, refused_timeout, REFUSED_LINGER_MS, 0);
    /* a few hundred bytes fit the fresh socket's send buffer: written at once or not at all */
    if (uv_try_write((uv_stream_t *)&c->tcp, &b, 1) != alen ||
        uv_shutdown(&c->shutdown, (uv_stream_t *)&c->tcp, refused_shut) != 0 ||
        uv_read_start((uv_stream_t *)&c->tcp, refused_alloc, refused_read) != 0)
        refused_end(c);
}

static void on_accept(uv_stream_t *listener, int status)
{
    rb_server *s = listener->data;
    if (status != 0 || s->stopping)
        return;
    server_conn *c = xcalloc(1, sizeof(*c));
    c->server = s;
    uv_tcp_init(listener->loop, &c->tcp);
    s->conns++;
    if (uv_accept(listener, (uv_stream_t *)&c->tcp) != 0) {
        uv_close((uv_handle_t *)&c->tcp, on_conn_closed);
        return;
    }
    if (s->conns > (size_t)s->cfg->max_connections) {
        refuse_connection(s, c);
        return;
    }
    uv_tcp_nodelay(&c->tcp, 1);
    h2o_socket_t *sock = h2o_uv_socket_create((uv_stream_t *)&c->tcp, on_conn_closed);
    h2o_accept(&s->accept_ctx, sock);
}

static void on_listener_closed(uv_handle_t *h)
{
    rb_server *s = h->data;
    s->listener_closed = 1;
    maybe_dispose(s);
}

/* Splits "host:port" / "[v6]:port" / ":port" into a socket address. */
static rb_err parse_listen(const char *listen, struct sockaddr_storage *ss, char *err)
{
    const char *colon = strrchr(listen, ':');
    if (colon == NULL)
        return rb_fail(RB_EINVAL, err, "listen: '%s' is not HOST:PORT", listen);
    char host[64];
    const char *h = listen;
    size_t hlen = (size_t)(colon - listen);
    if (hlen >= 2 && h[0] == '[' && h[hlen - 1] == ']') {
        h++;
        hlen -= 2;
    }
    if (hlen >= sizeof(host))
        return rb_fail(RB_EINVAL, err, "listen: host '%s' is too long", listen);
    memcpy(host, h, hlen);
    host[hlen] = '\0';
    if (hlen == 0 || strcmp(host, "localhost") == 0)
        snprintf(host, sizeof(host), "127.0.0.1");
    char *end;
    long port = strtol(colon + 1, &end, 10);
    if (colon[1] == '\0' || *end != '\0' || port < 0 || port > 65535)
        return rb_fail(RB_EINVAL, err, "listen: '%s' has no valid port (0-65535)", listen);
    memset(ss, 0, sizeof(*ss));
    if (uv_ip4_addr(host, (int)port, (struct sockaddr_in *)ss) == 0)
        return RB_OK;
    if (uv_ip6_addr(host, (int)port, (struct sockaddr_in6 *)ss) == 0)
        return RB_OK;
    return rb_fail(RB_EINVAL, err, "listen: '%s' is not an IP address (use e.g. 127.0.0.1:8080 or [::1]:8080)", host);
}

/* Whether a listen address accepts loopback connections only. */
static int is_loopback(const struct sockaddr_storage *ss)
{
    if (ss->ss_family == AF_INET)
        return (ntohl(((const struct sockaddr_in *)ss)->sin_addr.s_addr) >> 24) == 127;
    if (ss->ss_family == AF_INET6) {
        const struct in6_addr *a = &((const struct sockaddr_in6 *)ss)->sin6_addr;
        return IN6_IS_ADDR_LOOPBACK(a) || (IN6_IS_ADDR_V4MAPPED(a) && a->s6_addr[12] == 127);
    }
    return 0;
}

rb_err server_start(uv_loop_t *loop, const server_settings *cfg, rb_core *core, rb_server **out, char *err)
{
    struct sockaddr_storage ss;
    rb_err e = parse_listen(cfg->listen, &ss, err);
    if (e != RB_OK)
        return e;
    auth *keys = NULL;
    auth_set_egress_check(core_egress_limit_check); /* egress= in the keys file (docs/network.md) */
    auth_set_shares_check(core_shares_key_check);   /* shares= in the keys file (docs/data.md) */
    auth_set_isolation_check(core_isolation_key_check);  /* isolation= (docs/security.md) */
    if (cfg->api_keys_file != NULL && (e = auth_new(cfg->api_keys_file, &keys, err)) != RB_OK)
        return e;
    if (keys == NULL && !is_loopback(&ss)) {
        if (!cfg->allow_unauthenticated)
            return rb_fail(RB_EINVAL, err,
                           "refusing to listen on %s without API keys: anyone who reaches it could run code and read "
                           "every session; give --api-keys-file (docs/security.md), listen on 127.0.0.1, or accept "
                           "the risk with --allow-unauthenticated",
                           cfg->listen);
        rb_warn("SECURITY: listening on %s WITHOUT API keys (--allow-unauthenticated): anyone who can reach this "
                "address can run code in sandboxes and read, use and delete every session; keep the port private",
                cfg->listen);
    }

    /* Bind synchronously so that a failure needs no loop turn to clean up. */
    int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int one = 1;
    if (fd < 0)
        return rb_fail(RB_EIO, err, "cannot create a socket: %s", strerror(errno));
    socklen_t slen = ss.ss_family == AF_INET6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in);
    if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) != 0 || bind(fd, (struct sockaddr *)&ss, slen) != 0 ||
        listen(fd, 128) != 0) {
        e = rb_fail(RB_EIO, err, "cannot listen on %s: %s", cfg->listen, strerror(errno));
        close(fd);
        auth_free(keys);
        return e;
    }

    rb_server *s = xcalloc(1, sizeof(*s));
    s->loop = loop;
    s->cfg = cfg;
    s->core = core;
    s->keys = keys;
    h2o_linklist_init_anchor(&s->streams);

    h2o_config_init(&s->globalconf);
    /* JSON handlers check max_body themselves; file uploads may be larger (max_upload). */
    s->globalconf.max_request_entity_size = cfg->max_body > cfg->max_upload ? cfg->max_body : cfg->max_upload;
    s->globalconf.server_name = h2o_iovec_init(H2O_STRLIT("runboxd/" RUNBOX_VERSION));
    h2o_hostconf_t *host = h2o_config_register_host(&s->globalconf, h2o_iovec_init(H2O_STRLIT("default")), 65535);

    /* Pointer from h2o_config_register_path is only valid until the next registration. */
    h2o_pathconf_t *root = h2o_config_register_path(host, "/", 0);
    route_handler *rh = (route_handler *)h2o_create_handler(root, sizeof(*rh));
    rh->super.on_req = http__on_req;
    rh->server = s;
    h2o_logger_t *lg = h2o_create_logger(root, sizeof(*lg));
    lg->log_access = log_access;
    jsonerr_filter *closing = (jsonerr_filter *)h2o_create_filter(root, sizeof(*closing));
    closing->super.on_setup_ostream = closing_on_setup_ostream;
    closing->server = s;
    h2o_create_filter(root, sizeof(h2o_filter_t))->on_setup_ostream = retry_on_setup_ostream;

    jsonerr_filter *f = (jsonerr_filter *)h2o_create_filter(&host->fallback_path, sizeof(*f));
    f->super.on_setup_ostream = jsonerr_on_setup_ostream;
    f->server = s;
    h2o_create_filter(&host->fallback_path, sizeof(h2o_filter_t))->on_setup_ostream = retry_on_setup_ostream;
    lg = h2o_create_logger(&host->fallback_path, sizeof(*lg));
    lg->log_access = log_access;

    h2o_context_init(&s->ctx, loop, &s->globalconf);
    s->accept_ctx.ctx = &s->ctx;
    s->accept_ctx.hosts = s->globalconf.hosts;

    uv_tcp_init(loop, &s->listener);
    s->listener.data = s;
    int r = uv_tcp_open(&s->listener, fd);
    if (r == 0)
        r = uv_listen((uv_stream_t *)&s->listener, 128, on_accept);
    if (r != 0) {
        /* Not expected after listen(2) succeeded. The handles close through the stop path;
         * the few bytes of the struct are left behind rather than freed under libuv's feet. */
        rb_fail(RB_EIO, err, "cannot listen on %s: %s", cfg->listen, uv_strerror(r));
        server_stop(s);
        return RB_EIO;
    }
    struct sockaddr_storage bound;
    int blen = sizeof(bound);
    uv_tcp_getsockname(&s->listener, (struct sockaddr *)&bound, &blen);
    char ip[48];
    if (bound.ss_family == AF_INET6) {
        uv_ip6_name((struct sockaddr_in6 *)&bound, ip, sizeof(ip));
        s->port = ntohs(((struct sockaddr_in6 *)&bound)->sin6_port);
        snprintf(s->address, sizeof(s->address), "[%s]:%d", ip, s->port);
    } else {
        uv_ip4_name((struct sockaddr_in *)&bound, ip, sizeof(ip));
        s->port = ntohs(((struct sockaddr_in *)&bound)->sin_port);
        snprintf(s->address, sizeof(s->address), "%s:%d", ip, s->port);
    }
    *out = s;
    return RB_OK;
}

int server_port(const rb_server *s)
{
    return s->port;
}

const char *server_address(const rb_server *s)
{
    return s->address;
}

void server_stop(rb_server *s)
{
    if (s == NULL || s->stopping)
        return;
    s->stopping = 1;
    h2o_context_request_shutdown(&s->ctx);
    while (!h2o_linklist_is_empty(&s->streams)) {
        http_stream_link *l = H2O_STRUCT_FROM_MEMBER(http_stream_link, link, s->streams.next);
        server_untrack_stream(l);
        l->shutdown(l);
    }
    for (size_t i = 0; i < s->nprotocols; i++)
        if (s->protocols[i].stop != NULL)
            s->protocols[i].stop(s->protocols[i].data);
    uv_close((uv_handle_t *)&s->listener, on_listener_closed);
}

void server_free(rb_server *s)
{
    if (s == NULL)
        return;
    if (!s->disposed) {
        /* Connections are still open (the loop was not run to completion): h2o cannot be torn
         * down safely, so the memory is left to process exit. */
        rb_warn("server: freed with %zu connection(s) still open", s->conns);
        return;
    }
    h2o_config_dispose(&s->globalconf);
    for (size_t i = 0; i < s->nprotocols; i++)
        if (s->protocols[i].free != NULL)
            s->protocols[i].free(s->protocols[i].data);
    free(s->routes);
    auth_free(s->keys);
    free(s);
}

rb_err server_reload_keys(rb_server *s, size_t *nkeys, char *err)
{
    if (s->keys == NULL)
        return rb_fail(RB_EINVAL, err, "runboxd runs without --api-keys-file: there are no keys to reload");
    return auth_reload(s->keys, nkeys, err);
}

int server_drained(const rb_server *s)
{
    return s->disposed;
}


/*
 * http.c: the listener, h2o setup, routing, error table, JSON bodies and access log of runboxd
 * (server/http.h). One h2o handler is registered at "/" and routes by the table that protocols
 * fill with server_register, so that REST and MCP share the 404/405 rules. Errors that h2o generates itself
 * before any handler runs (413 for a body over max-body, 400 for broken framing) go through
 * the host's fallback path; a filter there rewrites them into our JSON error document.
 * It contains no session logic.
 */
#include "server/http.h"

#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "server/admit.h"
#include "server/query.h"

struct rb_server {
    h2o_globalconf_t globalconf;
    h2o_context_t ctx;
    h2o_accept_ctx_t accept_ctx;
    uv_tcp_t listener;
    uv_loop_t *loop;
    const server_settings *cfg;
    rb_core *core;
    http_protocol protocols[HTTP_MAX_PROTOCOLS];
    size_t nprotocols;
    struct routed *routes; /* every protocol's routes in registration order (heap) */
    size_t nroutes;
    size_t conns;
    int stopping, listener_closed, disposed;
    h2o_linklist_t streams; /* http_stream_link.link of open event streams */
    size_t nstreams;
    http_stats counts; /* requests, refusals, bytes (server_stats fills in the rest) */
    int port;
    char address[80];
};

/* A registered route and the protocol it belongs to. */
struct routed {
    http_route route;
    const http_protocol *protocol;
};

typedef struct route_handler {
    h2o_handler_t super;
    rb_server *server;
} route_handler;

typedef struct server_conn {
    uv_tcp_t tcp;
    rb_server *server;
} server_conn;

/* The server a request came to: its h2o context is the one embedded in rb_server. */
static rb_server *server_of(h2o_req_t *req)
{
    return H2O_STRUCT_FROM_MEMBER(rb_server, ctx, req->conn->ctx);
}

/* ---- error table ---------------------------------------------------------------------- */

static const int status_of_err[RB_ERR_MAX] = {
    [RB_OK] = 200,
    [RB_EINVAL] = 400,
    [RB_ENOTFOUND] = 404,
    [RB_ECONFLICT] = 409,
    [RB_ETOOBIG] = 413,
    [RB_EMEDIA] = 415,
    [RB_EUNAVAILABLE] = 503,
    [RB_EBUSY] = 429,
    [RB_ETIMEDOUT] = 504,
    [RB_ECANCELED] = 409,
    [RB_EIO] = 502,
    [RB_ESTORE] = 500,
    [RB_EINTERNAL] = 500,
    [RB_EFORBIDDEN] = 403,
};

int http_status_of(rb_err e)
{
    if ((unsigned)e >= RB_ERR_MAX)
        return 500;
    return status_of_err[e];
}

static const char *reason_of(int status)
{
    switch (status) {
    case 200: return "OK";
    case 201: return "Created";
    case 202: return "Accepted";
    case 400: return "Bad Request";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 403: return "Forbidden";
    case 409: return "Conflict";
    case 413: return "Payload Too Large";
    case 415: return "Unsupported Media Type";
    case 429: return "Too Many Requests";
    case 500: return "Internal Server Error";
    case 502: return "Bad Gateway";
    case 503: return "Service Unavailable";
    case 504: return "Gateway Timeout";
    default: return "Unknown";
    }
}

/* The code for a status that h2o produced itself (no rb_err behind it). */
static const char *code_of_status(int status)
{
    switch (status) {
    case 400: return "invalid_request";
    case 404: return "not_found";
    case 405: return "method_not_allowed";
    case 413: return "payload_too_large";
    case 415: return "unsupported_media_type";
    case 417: return "invalid_request";
    case 429: return "too_many_requests";
    case 502: return "upstream_error";
    case 503: return "docker_unavailable";
    case 504: return "timeout";
    default: return "internal_error";
    }
}

/* ---- answers -------------------------------------------------------------------------- */

char *http_pool_strdup(h2o_req_t *req, const char *s, size_t len)
{
    char *p = h2o_mem_alloc_pool(&req->pool, len + 1);
    memcpy(p, s, len);
    p[len] = '\0';
    return p;
}

static void send_body(h2o_req_t *req, int status, const char *type, h2o_iovec_t body)
{
    static h2o_generator_t generator = {NULL, NULL};
    req->res.status = status;
    req->res.reason = reason_of(status);
    req->res.content_length = body.len;
    h2o_set_header(&req->pool, &req->res.headers, H2O_TOKEN_CONTENT_TYPE, type, strlen(type), 1);
    h2o_set_header(&req->pool, &req->res.headers, H2O_TOKEN_CACHE_CONTROL, H2O_STRLIT("no-store"), 1);
    h2o_start_response(req, &generator);
    h2o_send(req, &body, 1, H2O_SEND_STATE_FINAL);
}

static h2o_iovec_t encode(h2o_req_t *req, json_t *body)
{
    char *text = json_dumps(body, JSON_COMPACT | JSON_ENCODE_ANY);
    if (text == NULL)
        text = xstrdup("{\"error\":{\"code\":\"internal_error\",\"message\":\"the answer could not be encoded\"}}");
    size_t len = strlen(text);
    /* A trailing newline keeps terminals and line-based clients happy. */
    char *p = h2o_mem_alloc_pool(&req->pool, len + 1);
    memcpy(p, text, len);
    p[len] = '\n';
    free(text);
    return h2o_iovec_init(p, len + 1);
}

void http_send_json(h2o_req_t *req, int status, json_t *body)
{
    send_body(req, status, "application/json", encode(req, body));
}

static json_t *error_doc(const char *code, const char *message)
{
    return json_pack("{s:{s:s,s:s}}", "error", "code", code, "message", message ? message : "");
}

void http_send_error_as(h2o_req_t *req, int status, const char *code, const char *message)
{
    json_t *doc = error_doc(code, message);
    http_send_json(req, status, doc);
    json_decref(doc);
}

void http_send_error(h2o_req_t *req, rb_err e, const char *message)
{
    if (e == RB_OK)
        e = RB_EINTERNAL;
    http_send_error_as(req, http_status_of(e), rb_strerror(e), message && message[0] ? message : rb_strerror(e));
}

/* ---- request bodies ------------------------------------------------------------------- */

/* Content-Type is application/json, parameters (charset=...) allowed, case-insensitive. */
static int is_json_type(h2o_req_t *req)
{
    ssize_t i = h2o_find_header(&req->headers, H2O_TOKEN_CONTENT_TYPE, -1);
    if (i == -1)
        return 0;
    h2o_iovec_t v = req->headers.entries[i].value;
    size_t n = v.len;
    for (size_t k = 0; k < v.len; k++) {
        if (v.base[k] == ';') {
            n = k;
            break;
        }
    }
    while (n > 0 && (v.base[n - 1] == ' ' || v.base[n - 1] == '\t'))
        n--;
    size_t start = 0;
    while (start < n && (v.base[start] == ' ' || v.base[start] == '\t'))
        start++;
    return h2o_lcstris(v.base + start, n - start, H2O_STRLIT("application/json"));
}

static int all_blank(const char *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (p[i] != ' ' && p[i] != '\t' && p[i] != '\r' && p[i] != '\n')
            return 0;
    return 1;
}

static rb_err read_json(h2o_req_t *req, size_t max, int empty_ok, int any, json_t **out, char *err)
{
    *out = NULL;
    if (req->entity.base == NULL || all_blank(req->entity.base, req->entity.len)) {
        if (empty_ok)
            return RB_OK;
        return rb_fail(RB_EINVAL, err, "a JSON object body is required (Content-Type: application/json)");
    }
    if (!is_json_type(req))
        return rb_fail(RB_EMEDIA, err, "the body must be JSON: send it with Content-Type: application/json");
    if (req->entity.len > max) {
        server_of(req)->counts.refusals[HTTP_REFUSED_BODY]++;
        return rb_fail(RB_ETOOBIG, err, "the body is %zu bytes; the limit is %zu bytes (max-body)", req->entity.len, max);
    }
    json_error_t jerr;
    json_t *v = json_loadb(req->entity.base, req->entity.len, JSON_REJECT_DUPLICATES | (any ? JSON_DECODE_ANY : 0), &jerr);
    if (v == NULL)
        return rb_fail(RB_EINVAL, err, "malformed JSON at line %d, column %d: %s", jerr.line, jerr.column, jerr.text);
    if (!any && !json_is_object(v)) {
        json_decref(v);
        return rb_fail(RB_EINVAL, err, "the body must be a JSON object");
    }
    *out = v;
    return RB_OK;
}

rb_err http_read_json(h2o_req_t *req, size_t max, int empty_ok, json_t **out, char *err)
{
    return read_json(req, max, empty_ok, 0, out, err);
}

rb_err http_read_json_value(h2o_req_t *req, size_t max, json_t **out, char *err)
{
    return read_json(req, max, 0, 1, out, err);
}

const char *http_query_param(h2o_req_t *req, const char *name)
{
    if (req->query_at == SIZE_MAX || req->query_at >= req->path.len)
        return NULL;
    const char *v;
    size_t len;
    if (!query_find(req->path.base + req->query_at + 1, req->path.len - req->query_at - 1, name, &v, &len))
        return NULL;
    char *out = h2o_mem_alloc_pool(&req->pool, len + 1);
    query_decode(v, len, out);
    return out;
}

/* ---- routing -------------------------------------------------------------------------- */

/* Matches path against pattern; on success fills params (pool strings). */
static int match_route(h2o_req_t *req, const char *pattern, h2o_iovec_t path, const char **params)
{
    const char *p = pattern, *s = path.base, *send = path.base + path.len;
    int np = 0;
    while (*p != '\0') {
        if (s >= send || *s != '/' || *p != '/')
            return 0;
        p++;
        s++;
        const char *pseg_end = strchr(p, '/');
        if (pseg_end == NULL)
            pseg_end = p + strlen(p);
        const char *sseg_end = memchr(s, '/', (size_t)(send - s));
        if (sseg_end == NULL)
            sseg_end = send;
        size_t plen = (size_t)(pseg_end - p), slen = (size_t)(sseg_end - s);
        if (plen >= 2 && p[0] == '{' && p[plen - 1] == '}') {
            if (slen == 0 || np >= HTTP_MAX_PARAMS)
                return 0;
            if (params != NULL)
                params[np] = http_pool_strdup(req, s, slen);
            np++;
        } else if (plen != slen || memcmp(p, s, plen) != 0) {
            return 0;
        }
        p = pseg_end;
        s = sseg_end;
    }
    return s == send;
}

/* The error document for an error answered outside any handler: in the shape of the protocol
 * whose error_prefix the path starts with, else the JSON error document. New reference. */
static json_t *protocol_error_doc(rb_server *s, h2o_req_t *req, int status, const char *code, const char *msg)
{
    for (size_t i = 0; i < s->nprotocols; i++) {
        const http_protocol *p = &s->protocols[i];
        size_t n = p->error_prefix != NULL ? strlen(p->error_prefix) : 0;
        if (p->error_doc != NULL && n > 0 && req->input.path.len >= n &&
            memcmp(req->input.path.base, p->error_prefix, n) == 0)
            return p->error_doc(status, msg);
    }
    return error_doc(code, msg);
}

/* Answers an error decided before routing, in the shape of the path's protocol, and counts it
 * under why. Returns 0. */
static int refuse(rb_server *s, h2o_req_t *req, http_refusal why, int status, const char *code, const char *msg)
{
    s->counts.refusals[why]++;
    json_t *doc = protocol_error_doc(s, req, status, code, msg);
    http_send_json(req, status, doc);
    json_decref(doc);
    return 0;
}

static int on_req(h2o_handler_t *self, h2o_req_t *req)
{
    rb_server *s = ((route_handler *)self)->server;
    /* HTTP/1.0 may come without Host (h2o then names the default host); browsers, the clients DNS
     * rebinding drives, always speak HTTP/1.1 or later and send one. */
    int has_host = req->version >= 0x101;
    if (!admit_host(s->cfg, has_host ? req->input.authority.base : NULL, has_host ? req->input.authority.len : 0)) {
        char msg[RB_ERR_LEN];
        snprintf(msg, sizeof(msg),
                 "Host '%.*s' is not served here (a DNS-rebinding defence): use localhost or 127.0.0.1, or let the "
                 "operator allow this name with --allowed-hosts",
                 (int)(req->input.authority.len > 100 ? 100 : req->input.authority.len), req->input.authority.base);
        return refuse(s, req, HTTP_REFUSED_HOST, 403, "forbidden", msg);
    }
    ssize_t oi = h2o_find_header_by_str(&req->headers, H2O_STRLIT("origin"), -1);
    if (oi >= 0 && !admit_origin(s->cfg, req->headers.entries[oi].value.base, req->headers.entries[oi].value.len))
        return refuse(s, req, HTTP_REFUSED_ORIGIN, 403, "forbidden",
                      "Forbidden: this browser Origin may not call runboxd (the operator can allow it with "
                      "--allowed-origins)");
    if (s->stopping) {
        /* Requests that reach a keep-alive connection after server_stop: the core is still
         * there (it is freed after the server), but nothing new is started. */
        h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_RETRY_AFTER, NULL, H2O_STRLIT("5"));
        return refuse(s, req, HTTP_REFUSED_STOPPING, 503, "shutting_down",
                      "runboxd is stopping; retry in a few seconds, once it has restarted");
    }
    h2o_iovec_t path = req->path_normalized;
    char allow[128];
    size_t allow_len = 0;
    allow[0] = '\0';

    for (size_t i = 0; i < s->nroutes; i++) {
        const http_route *r = &s->routes[i].route;
        if (!match_route(req, r->pattern, path, NULL))
            continue;
        if (h2o_memis(req->method.base, req->method.len, r->method, strlen(r->method))) {
            http_call *call = h2o_mem_alloc_pool(&req->pool, sizeof(*call));
            memset(call, 0, sizeof(*call));
            call->server = s;
            call->data = s->routes[i].protocol->data;
            call->core = s->core;
            call->cfg = s->cfg;
            call->req = req;
            match_route(req, r->pattern, path, call->params);
            return r->handler(call);
        }
        size_t mlen = strlen(r->method);
        if (strstr(allow, r->method) == NULL && allow_len + mlen + 3 < sizeof(allow)) {
            if (allow_len > 0) {
                memcpy(allow + allow_len, ", ", 2);
                allow_len += 2;
            }
            memcpy(allow + allow_len, r->method, mlen);
            allow_len += mlen;
            allow[allow_len] = '\0';
        }
    }
    char msg[RB_ERR_LEN];
    int plen = path.len > 200 ? 200 : (int)path.len;
    int mlen = req->method.len > 16 ? 16 : (int)req->method.len;
    if (allow_len > 0) {
        h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_ALLOW, NULL, http_pool_strdup(req, allow, allow_len),
                       allow_len);
        snprintf(msg, sizeof(msg), "%.*s is not allowed on %.*s; use %s", mlen, req->method.base, plen, path.base,
                 allow);
        http_send_error_as(req, 405, "method_not_allowed", msg);
    } else {
        snprintf(msg, sizeof(msg), "no such endpoint: %.*s %.*s (see openapi.yaml for the routes)", mlen,
                 req->method.base, plen, path.base);
        http_send_error_as(req, 404, "not_found", msg);
    }
    return 0;
}

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
        json_t *doc = protocol_error_doc(s, req, req->res.status, code_of_status(req->res.status), msg);
        h2o_iovec_t body = encode(req, doc);
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

/* While stopping, every answer closes its HTTP/1.1 connection, so that the drain ends as soon
 * as requests in flight are answered instead of waiting for idle keep-alive clients. */
static void closing_on_setup_ostream(h2o_filter_t *self, h2o_req_t *req, h2o_ostream_t **slot)
{
    if (((jsonerr_filter *)self)->server->stopping)
        req->http1_is_persistent = 0;
    h2o_setup_next_ostream(req, slot);
}

/* ---- access log and counts ------------------------------------------------------------ */

/* Counts an answered request under the protocol whose route its path matches (any method). */
static void count_request(rb_server *s, h2o_req_t *req)
{
    if (req->res.status < 200 || req->res.status > 599)
        return; /* the client went away before an answer */
    h2o_iovec_t path = req->path_normalized;
    if (path.base == NULL) {
        /* h2o's own errors can come before the path is normalised: the raw path, no query */
        path = req->input.path;
        const char *q = path.base != NULL ? memchr(path.base, '?', path.len) : NULL;
        if (q != NULL)
            path.len = (size_t)(q - path.base);
    }
    size_t p = s->nprotocols;
    for (size_t i = 0; i < s->nroutes && path.base != NULL; i++) {
        if (match_route(req, s->routes[i].route.pattern, path, NULL)) {
            p = (size_t)(s->routes[i].protocol - s->protocols);
            break;
        }
    }
    s->counts.requests[p][req->res.status / 100 - 2]++;
    s->counts.body_bytes_in += req->entity.len;
    s->counts.body_bytes_out += req->bytes_sent;
}

static void log_access(h2o_logger_t *self, h2o_req_t *req)
{
    (void)self;
    count_request(server_of(req), req);
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

static void on_accept(uv_stream_t *listener, int status)
{
    rb_server *s = listener->data;
    if (status != 0 || s->stopping)
        return;
    server_conn *c = xmalloc(sizeof(*c));
    c->server = s;
    uv_tcp_init(listener->loop, &c->tcp);
    s->conns++;
    if (uv_accept(listener, (uv_stream_t *)&c->tcp) != 0) {
        uv_close((uv_handle_t *)&c->tcp, on_conn_closed);
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

rb_err server_start(uv_loop_t *loop, const server_settings *cfg, rb_core *core, rb_server **out, char *err)
{
    struct sockaddr_storage ss;
    rb_err e = parse_listen(cfg->listen, &ss, err);
    if (e != RB_OK)
        return e;

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
        return e;
    }

    rb_server *s = xcalloc(1, sizeof(*s));
    s->loop = loop;
    s->cfg = cfg;
    s->core = core;
    h2o_linklist_init_anchor(&s->streams);

    h2o_config_init(&s->globalconf);
    /* JSON handlers check max_body themselves; file uploads may be larger (max_upload). */
    s->globalconf.max_request_entity_size = cfg->max_body > cfg->max_upload ? cfg->max_body : cfg->max_upload;
    s->globalconf.server_name = h2o_iovec_init(H2O_STRLIT("runboxd/" RUNBOX_VERSION));
    h2o_hostconf_t *host = h2o_config_register_host(&s->globalconf, h2o_iovec_init(H2O_STRLIT("default")), 65535);

    /* Pointer from h2o_config_register_path is only valid until the next registration. */
    h2o_pathconf_t *root = h2o_config_register_path(host, "/", 0);
    route_handler *rh = (route_handler *)h2o_create_handler(root, sizeof(*rh));
    rh->super.on_req = on_req;
    rh->server = s;
    h2o_logger_t *lg = h2o_create_logger(root, sizeof(*lg));
    lg->log_access = log_access;
    jsonerr_filter *closing = (jsonerr_filter *)h2o_create_filter(root, sizeof(*closing));
    closing->super.on_setup_ostream = closing_on_setup_ostream;
    closing->server = s;

    jsonerr_filter *f = (jsonerr_filter *)h2o_create_filter(&host->fallback_path, sizeof(*f));
    f->super.on_setup_ostream = jsonerr_on_setup_ostream;
    f->server = s;
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
    free(s);
}

int server_drained(const rb_server *s)
{
    return s->disposed;
}

void server_register(rb_server *s, const http_protocol *p)
{
    assert(s->nprotocols < HTTP_MAX_PROTOCOLS);
    http_protocol *copy = &s->protocols[s->nprotocols++];
    *copy = *p;
    s->routes = xrealloc(s->routes, (s->nroutes + p->nroutes) * sizeof(*s->routes));
    for (size_t i = 0; i < p->nroutes; i++) {
        s->routes[s->nroutes + i].route = p->routes[i];
        s->routes[s->nroutes + i].protocol = copy;
    }
    s->nroutes += p->nroutes;
}

int server_stream_room(rb_server *s, char *err)
{
    if (s->nstreams < (size_t)s->cfg->max_streams)
        return 1;
    s->counts.refusals[HTTP_REFUSED_STREAMS]++;
    rb_fail(RB_EBUSY, err,
            "too many event streams are open (max-streams %d): close one, or poll the results instead of streaming "
            "them",
            s->cfg->max_streams);
    return 0;
}

void server_track_stream(rb_server *s, http_stream_link *l)
{
    h2o_linklist_insert(&s->streams, &l->link);
    l->server = s;
    s->nstreams++;
}

void server_untrack_stream(http_stream_link *l)
{
    if (h2o_linklist_is_linked(&l->link)) {
        h2o_linklist_unlink(&l->link);
        l->server->nstreams--;
    }
}

const char *http_refusal_name(http_refusal r)
{
    static const char *const names[HTTP_REFUSED_MAX] = {
        [HTTP_REFUSED_HOST] = "host",
        [HTTP_REFUSED_ORIGIN] = "origin",
        [HTTP_REFUSED_STOPPING] = "stopping",
        [HTTP_REFUSED_STREAMS] = "too_many_streams",
        [HTTP_REFUSED_BODY] = "body_too_large",
        [HTTP_REFUSED_MALFORMED] = "bad_request",
    };
    return (unsigned)r < HTTP_REFUSED_MAX ? names[r] : "";
}

void server_stats(const rb_server *s, http_stats *out)
{
    *out = s->counts;
    out->nprotocols = s->nprotocols;
    for (size_t i = 0; i < s->nprotocols; i++)
        out->protocol[i] = s->protocols[i].name;
    out->streams = s->nstreams;
}

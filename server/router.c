/*
 * router.c: the route table protocols register with (server_register) and the h2o handler at
 * "/" that serves it, so that REST, MCP and metrics share the 404/405 rules; before any route,
 * every request passes the Host and Origin checks (server/admit.h) and, while stopping, gets
 * 503. Also the tracking of long-lived streams that server_stop ends. No protocol is known here.
 */
#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/admit.h"
#include "server/query.h"
#include "server/http_private.h"

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
/* The protocol whose error_prefix req's path starts with, or NULL. */
static const http_protocol *protocol_of(rb_server *s, h2o_req_t *req)
{
    for (size_t i = 0; i < s->nprotocols; i++) {
        const http_protocol *p = &s->protocols[i];
        size_t n = p->error_prefix != NULL ? strlen(p->error_prefix) : 0;
        if (n > 0 && req->input.path.len >= n && memcmp(req->input.path.base, p->error_prefix, n) == 0)
            return p;
    }
    return NULL;
}

json_t *http__protocol_error_doc(rb_server *s, h2o_req_t *req, int status, const char *code, const char *msg)
{
    const http_protocol *p = protocol_of(s, req);
    if (p != NULL && p->error_doc != NULL)
        return p->error_doc(status, code, msg);
    return http__error_doc(code, msg);
}

/* Answers an error decided before routing, in the shape of the path's protocol, and counts it
 * under why. Returns 0. */
static int refuse(rb_server *s, h2o_req_t *req, http_refusal why, int status, const char *code, const char *msg)
{
    s->counts.refusals[why]++;
    json_t *doc = http__protocol_error_doc(s, req, status, code, msg);
    http_send_json(req, status, doc);
    json_decref(doc);
    return 0;
}

int http_require_admin(http_call *call, const char *doing)
{
    if (call->who == NULL || call->who->role == CORE_ROLE_ADMIN)
        return 1;
    char msg[RB_ERR_LEN];
    snprintf(msg, sizeof(msg), "only an admin key (role=admin in the api-keys file) may %s; the key '%s' is a %s",
             doing, call->who->owner, call->who->role == CORE_ROLE_VIEWER ? "viewer" : "user");
    refuse(call->server, call->req, HTTP_REFUSED_ROLE, 403, "forbidden", msg);
    return 0;
}

int http_require_change(http_call *call, const char *doing)
{
    if (call->who == NULL || call->who->role != CORE_ROLE_VIEWER)
        return 1;
    char msg[RB_ERR_LEN];
    snprintf(msg, sizeof(msg),
             "the API key '%s' is a viewer (role=viewer in the api-keys file): it reads, it changes nothing, so it "
             "may not %s; ask the operator for a user or admin key",
             call->who->owner, doing);
    refuse(call->server, call->req, HTTP_REFUSED_ROLE, 403, "forbidden", msg);
    return 0;
}

void server_count_refusal(rb_server *s, http_refusal why)
{
    s->counts.refusals[why]++;
}

/* Whether req only reads: GET or HEAD, and not a websocket (Jupyter's channels run code). */
static int reads_only(h2o_req_t *req)
{
    int get = h2o_memis(req->method.base, req->method.len, H2O_STRLIT("GET")) ||
              h2o_memis(req->method.base, req->method.len, H2O_STRLIT("HEAD"));
    return get && req->upgrade.base == NULL && h2o_find_header(&req->headers, H2O_TOKEN_UPGRADE, -1) < 0;
}

/* The API key of req (server/auth.h): 0 with *who set, or -1 when it answered 401, 403 (a
 * viewer's change) or 429. */
static int authenticate(rb_server *s, h2o_req_t *req, const core_caller **who)
{
    const char *tok = NULL;
    size_t toklen = 0;
    int presented = 0;
    ssize_t i = h2o_find_header(&req->headers, H2O_TOKEN_AUTHORIZATION, -1);
    if (i >= 0) {
        presented = 1;
        if (!auth_bearer_token(req->headers.entries[i].value.base, req->headers.entries[i].value.len, &tok, &toklen))
            tok = NULL;
    } else if ((i = h2o_find_header_by_str(&req->headers, H2O_STRLIT("x-api-key"), -1)) >= 0) {
        presented = 1;
        tok = req->headers.entries[i].value.base;
        toklen = req->headers.entries[i].value.len;
    } else {
        const http_protocol *p = protocol_of(s, req);
        if (p != NULL && p->credential != NULL && p->credential(p->data, req, &tok, &toklen))
            presented = 1;
    }
    int retry = 0;
    auth_result r = auth_check(s->keys, tok, toklen, (uint64_t)rb_now_ms(), who, &retry);
    if (r == AUTH_OK && *who != NULL && (*who)->role == CORE_ROLE_VIEWER && !reads_only(req)) {
        char msg[RB_ERR_LEN];
        snprintf(msg, sizeof(msg),
                 "the API key '%s' is a viewer (role=viewer in the api-keys file): it reads (GET), it changes "
                 "nothing; ask the operator for a user or admin key",
                 (*who)->owner);
        refuse(s, req, HTTP_REFUSED_ROLE, 403, "forbidden", msg);
        return -1;
    }
    if (r == AUTH_OK)
        return 0;
    if (r == AUTH_RATE) {
        char v[16], msg[RB_ERR_LEN];
        int n = snprintf(v, sizeof(v), "%d", retry);
        h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_RETRY_AFTER, NULL, http_pool_strdup(req, v, (size_t)n),
                       (size_t)n);
        snprintf(msg, sizeof(msg),
                 "the API key '%s' has used its request budget (rps= in the api-keys file); retry after %d s", (*who)->owner,
                 retry);
        refuse(s, req, HTTP_REFUSED_RATE, 429, "too_many_requests", msg);
        return -1;
    }
    if (r == AUTH_MISSING && !presented) {
        h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_WWW_AUTHENTICATE, NULL, H2O_STRLIT("Bearer realm=\"runbox\""));
        refuse(s, req, HTTP_REFUSED_AUTH, 401, "unauthorized",
               "this runboxd requires an API key: send it as Authorization: Bearer <key> (the operator lists keys in "
               "its --api-keys-file)");
    } else {
        h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_WWW_AUTHENTICATE, NULL,
                       H2O_STRLIT("Bearer realm=\"runbox\", error=\"invalid_token\""));
        refuse(s, req, HTTP_REFUSED_AUTH, 401, "unauthorized",
               "the API key is not valid: it is not (or no longer) in runboxd's key file; send Authorization: Bearer "
               "<key> with a key the operator gave you");
    }
    return -1;
}

/* Whether a protocol authenticates req itself (http_protocol.own_auth). */
static int own_auth(rb_server *s, h2o_req_t *req)
{
    for (size_t i = 0; i < s->nprotocols; i++)
        if (s->protocols[i].own_auth != NULL && s->protocols[i].own_auth(req))
            return 1;
    return 0;
}

/* s[0..n) for a message: at most 64 bytes, printable ASCII, anything else written %XX as a URI
 * would (a protocol's error document may not take bytes that are not UTF-8). */
static void printable(const char *s, size_t n, char *out, size_t cap)
{
    size_t o = 0;
    for (size_t i = 0; i < n && i < 64 && o + 4 < cap; i++) {
        unsigned char ch = (unsigned char)s[i];
        if (ch < 0x20 || ch >= 0x7f)
            o += (size_t)snprintf(out + o, cap - o, "%%%02X", ch);
        else
            out[o++] = (char)ch;
    }
    out[o] = '\0';
}

/* Refuses (400, and returns 1) a request whose path or query holds a NUL or another control
 * character: h2o decodes %XX into path_normalized, and the query's values are decoded as routes
 * read them (server/query.h), so a %00 would cut an id or a name short ("nulname%00junk" read as
 * "nulname") and no id, name, number or path runboxd takes holds a control character. Every
 * route of every protocol is covered here, before any reads a parameter. */
static int refuse_control(rb_server *s, h2o_req_t *req)
{
    char shown[300], msg[RB_ERR_LEN];
    h2o_iovec_t p = req->path_normalized;
    for (size_t i = 0; i < p.len; i++) {
        unsigned char ch = (unsigned char)p.base[i];
        if (ch >= 0x20 && ch != 0x7f)
            continue;
        size_t a = i, b = i;
        while (a > 0 && p.base[a - 1] != '/')
            a--;
        while (b < p.len && p.base[b] != '/')
            b++;
        printable(p.base + a, b - a, shown, sizeof(shown));
        snprintf(msg, sizeof(msg),
                 "the path segment '%s' holds a control character (%%%02X): ids and names never hold NUL or control "
                 "characters; send the id exactly as runboxd gave it",
                 shown, ch);
        refuse(s, req, HTTP_REFUSED_MALFORMED, 400, "invalid_request", msg);
        return 1;
    }
    unsigned char ch;
    size_t at, len;
    if (req->query_at == SIZE_MAX || req->query_at >= req->path.len ||
        !query_control(req->path.base + req->query_at + 1, req->path.len - req->query_at - 1, &ch, &at, &len))
        return 0;
    const char *pair = req->path.base + req->query_at + 1 + at;
    printable(pair, len, shown, sizeof(shown));
    snprintf(msg, sizeof(msg),
             "the query parameter '%s' holds a control character (%%%02X): ids, names, numbers and times never hold "
             "NUL or control characters, and a file path writes them as escapes \\xhh (a newline is \\x0a), as "
             "listings do",
             shown, ch);
    refuse(s, req, HTTP_REFUSED_MALFORMED, 400, "invalid_request", msg);
    return 1;
}

int server_key_valid(rb_server *s, const char *tok, size_t len)
{
    const core_caller *who = NULL;
    int retry = 0;
    return s->keys == NULL || auth_check(s->keys, tok, len, (uint64_t)rb_now_ms(), &who, &retry) == AUTH_OK;
}

int server_has_keys(const rb_server *s)
{
    return s->keys != NULL;
}

const core_caller *server_caller(rb_server *s, const char *owner)
{
    return auth_caller(s->keys, owner);
}

int http__on_req(h2o_handler_t *self, h2o_req_t *req)
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
         * there (it is freed after the server), but nothing new is started. (Retry-After: the
         * HTTP layer adds it to every 503.) */
        return refuse(s, req, HTTP_REFUSED_STOPPING, 503, "shutting_down",
                      "runboxd is stopping; retry in a few seconds, once it has restarted");
    }
    const core_caller *who = NULL;
    if (s->keys != NULL && !own_auth(s, req) && !(h2o_memis(req->method.base, req->method.len, H2O_STRLIT("GET")) &&
                             h2o_memis(req->path_normalized.base, req->path_normalized.len, H2O_STRLIT("/health"))))
        if (authenticate(s, req, &who) != 0)
            return 0;
    if (refuse_control(s, req))
        return 0;
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
            call->who = who;
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

/* Counts an answered request under the protocol whose route its path matches (any method). */
void http__count_request(rb_server *s, h2o_req_t *req)
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

int server_stream_memory_take(rb_server *s, size_t n, int force)
{
    if (!force && (n > s->cfg->max_stream_memory || s->stream_memory > s->cfg->max_stream_memory - n))
        return 0;
    s->stream_memory += n;
    return 1;
}

void server_stream_memory_give(rb_server *s, size_t n)
{
    assert(n <= s->stream_memory);
    s->stream_memory -= n;
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
        [HTTP_REFUSED_AUTH] = "unauthorized",
        [HTTP_REFUSED_RATE] = "rate_limited",
        [HTTP_REFUSED_CONNECTIONS] = "too_many_connections",
        [HTTP_REFUSED_ROLE] = "role",
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


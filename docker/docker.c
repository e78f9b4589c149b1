/*
 * docker.c: the Docker Engine API client itself: its lifetime (docker_new, docker_free), its
 * deadlines, and libcurl's multi socket API driven by the libuv loop (the pattern of curl's
 * docs/examples/multi-uv.c): a uv_poll_t per socket curl opens and one uv_timer_t for curl's
 * timeout. It does not build, queue or complete requests (request.c), nor know any Engine API
 * call (container.c, archive.c, attach.c).
 *
 * Handle memory (poll contexts, the client's timers and so the client itself) is released in
 * uv_close callbacks, once docker__finalize runs after the last callback.
 */
#include "docker/docker_private.h"

#include <openssl/err.h>
#include <stdlib.h>
#include <string.h>
#include <sys/un.h>

struct poll_ctx {
    uv_poll_t poll;
    curl_socket_t fd;
    docker *d;
    struct poll_ctx *prev, *next;
};
typedef struct poll_ctx poll_ctx;

uv_loop_t *docker__loop(docker *d)
{
    return d->loop;
}

const char *docker__socket_path(docker *d)
{
    return d->socket_path;
}

const char *docker__where(const docker *d)
{
    return d->where;
}

int docker__freeing(const docker *d)
{
    return d->freeing;
}

docker_attach **docker__attach_head(docker *d)
{
    return &d->attaches;
}

uv_loop_t *docker_loop(docker *d)
{
    return docker__loop(d);
}

const char *docker_api_version(const docker *d)
{
    return d->api;
}

void docker_timeouts_default(docker_timeouts *t)
{
    t->connect_ms = 3000;
    t->ping_ms = 5000;
    t->short_ms = 30000;
    t->transfer_ms = 120000;
    t->long_ms = 30L * 60 * 1000;
    t->attach_ms = 30000;
}

rb_err docker_set_timeouts(docker *d, const docker_timeouts *t, char *err)
{
    if (t->connect_ms <= 0 || t->ping_ms <= 0 || t->short_ms <= 0 || t->transfer_ms <= 0 || t->long_ms <= 0 ||
        t->attach_ms <= 0)
        return rb_fail(RB_EINVAL, err, "every Docker deadline must be a positive number of milliseconds");
    d->to = *t;
    return RB_OK;
}

const docker_timeouts *docker__timeouts(const docker *d)
{
    return &d->to;
}

/* ---- libcurl on libuv ---- */

static void poll_close_cb(uv_handle_t *h)
{
    free(h->data);
}

static void poll_ctx_close(docker *d, poll_ctx *c)
{
    uv_poll_stop(&c->poll);
    if (c->prev != NULL)
        c->prev->next = c->next;
    else
        d->polls = c->next;
    if (c->next != NULL)
        c->next->prev = c->prev;
    uv_close((uv_handle_t *)&c->poll, poll_close_cb);
}

static void on_poll(uv_poll_t *h, int status, int events)
{
    poll_ctx *c = h->data;
    docker *d = c->d;
    int flags = 0, running;
    if (status < 0)
        flags = CURL_CSELECT_ERR;
    if (events & UV_READABLE)
        flags |= CURL_CSELECT_IN;
    if (events & UV_WRITABLE)
        flags |= CURL_CSELECT_OUT;
    curl_multi_socket_action(d->multi, c->fd, flags, &running);
    docker__check_multi_info(d);
}

static void on_timer(uv_timer_t *t)
{
    docker *d = t->data;
    int running;
    curl_multi_socket_action(d->multi, CURL_SOCKET_TIMEOUT, 0, &running);
    docker__check_multi_info(d);
}

/* CURLMOPT_TIMERFUNCTION: runs inside curl, so it only arms the uv timer. */
static int timer_fn(CURLM *multi, long timeout_ms, void *userp)
{
    (void)multi;
    docker *d = userp;
    if (timeout_ms < 0)
        uv_timer_stop(&d->timer);
    else
        uv_timer_start(&d->timer, on_timer, (uint64_t)timeout_ms, 0);
    return 0;
}

/* CURLMOPT_SOCKETFUNCTION: runs inside curl; only (re)arms or closes poll handles. */
static int socket_fn(CURL *easy, curl_socket_t s, int action, void *userp, void *socketp)
{
    (void)easy;
    docker *d = userp;
    poll_ctx *c = socketp;
    if (action == CURL_POLL_REMOVE) {
        if (c != NULL) {
            curl_multi_assign(d->multi, s, NULL);
            poll_ctx_close(d, c);
        }
        return 0;
    }
    if (c == NULL) {
        c = xcalloc(1, sizeof(*c));
        if (uv_poll_init_socket(d->loop, &c->poll, s) != 0) {
            free(c);
            return -1;
        }
        c->fd = s;
        c->d = d;
        c->poll.data = c;
        c->next = d->polls;
        if (d->polls != NULL)
            d->polls->prev = c;
        d->polls = c;
        curl_multi_assign(d->multi, s, c);
    }
    int events = 0;
    if (action == CURL_POLL_IN || action == CURL_POLL_INOUT)
        events |= UV_READABLE;
    if (action == CURL_POLL_OUT || action == CURL_POLL_INOUT)
        events |= UV_WRITABLE;
    uv_poll_start(&c->poll, events, on_poll);
    return 0;
}

/* ---- lifetime ---- */

static void client_free(docker *d)
{
    free(d->socket_path);
    free(d->host);
    free(d->where);
    free(d->base_url);
    free(d->tls_ca);
    free(d->tls_cert);
    free(d->tls_key);
    if (d->ssl_ctx != NULL)
        SSL_CTX_free(d->ssl_ctx);
    free(d);
}

static void timer_close_cb(uv_handle_t *h)
{
    docker *d = h->data;
    if (--d->open_timers == 0)
        client_free(d);
}

/* Splits a tcp:// URL's HOST:PORT (text after the scheme) into host and port. */
static rb_err parse_tcp(const char *hp, char **host, int *port, char *err)
{
    const char *colon;
    const char *hs = hp, *he;
    if (hp[0] == '[') {
        const char *close = strchr(hp, ']');
        if (close == NULL || close[1] != ':')
            return rb_fail(RB_EINVAL, err, "tcp://%s: an IPv6 address is written [ADDRESS]:PORT", hp);
        hs = hp + 1;
        he = close;
        colon = close + 1;
    } else {
        colon = strrchr(hp, ':');
        if (colon == NULL || strchr(hp, ':') != colon)
            return rb_fail(RB_EINVAL, err, "tcp://%s: the engine's address needs a port (tcp://HOST:2376)", hp);
        he = colon;
    }
    if (he == hs || he - hs > 253)
        return rb_fail(RB_EINVAL, err, "tcp://%s: the host name is empty or too long", hp);
    for (const char *p = hs; p < he; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || *p == '.' ||
              *p == '-' || *p == '_' || *p == ':'))
            return rb_fail(RB_EINVAL, err, "tcp://%s: the host has a character that is not allowed", hp);
    long v = 0;
    const char *p = colon + 1;
    if (*p == '\0')
        return rb_fail(RB_EINVAL, err, "tcp://%s: the port is empty", hp);
    for (; *p; p++) {
        if (*p < '0' || *p > '9' || v > 65535)
            return rb_fail(RB_EINVAL, err, "tcp://%s: the port must be a number from 1 to 65535", hp);
        v = v * 10 + (*p - '0');
    }
    if (v < 1 || v > 65535)
        return rb_fail(RB_EINVAL, err, "tcp://%s: the port must be a number from 1 to 65535", hp);
    *host = xstrndup(hs, (size_t)(he - hs));
    *port = (int)v;
    return RB_OK;
}

/* The TLS context of attach streams: peers verified against ca, our certificate and key. */
static rb_err make_ssl_ctx(const docker_endpoint *ep, SSL_CTX **out, char *err)
{
    SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
    if (ctx == NULL)
        return rb_fail(RB_EINTERNAL, err, "OpenSSL could not make a TLS context");
    SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
    const char *bad = NULL, *what = NULL;
    if (SSL_CTX_load_verify_locations(ctx, ep->tls_ca, NULL) != 1)
        bad = ep->tls_ca, what = "the CA certificate (--docker-tls-ca)";
    else if (SSL_CTX_use_certificate_chain_file(ctx, ep->tls_cert) != 1)
        bad = ep->tls_cert, what = "the client certificate (--docker-tls-cert)";
    else if (SSL_CTX_use_PrivateKey_file(ctx, ep->tls_key, SSL_FILETYPE_PEM) != 1)
        bad = ep->tls_key, what = "the client key (--docker-tls-key)";
    else if (SSL_CTX_check_private_key(ctx) != 1)
        bad = ep->tls_key, what = "the client key, which does not match the client certificate";
    if (bad != NULL) {
        char detail[256];
        unsigned long e = ERR_get_error();
        ERR_error_string_n(e, detail, sizeof(detail));
        ERR_clear_error();
        SSL_CTX_free(ctx);
        return rb_fail(RB_EINVAL, err, "%s cannot be used: %.200s (%s)", what, bad, e ? detail : "unreadable");
    }
    *out = ctx;
    return RB_OK;
}

rb_err docker_endpoint_check(const docker_endpoint *ep, char *err)
{
    struct sockaddr_un sa;
    const char *url = ep != NULL ? ep->url : NULL;
    if (url == NULL || url[0] == '\0')
        return rb_fail(RB_EINVAL, err, "an engine needs an address: unix:///var/run/docker.sock or tcp://HOST:PORT");
    int tls = ep->tls_ca != NULL || ep->tls_cert != NULL || ep->tls_key != NULL;
    if (strncmp(url, "tcp://", 6) == 0) {
        char *host = NULL;
        int port;
        rb_err e = parse_tcp(url + 6, &host, &port, err);
        free(host);
        if (e != RB_OK)
            return e;
        if (tls && (ep->tls_ca == NULL || ep->tls_cert == NULL || ep->tls_key == NULL))
            return rb_fail(RB_EINVAL, err, "%s: TLS needs all three of the CA, the client certificate and its key",
                           url);
        if (tls) {
            SSL_CTX *ctx;
            if ((e = make_ssl_ctx(ep, &ctx, err)) != RB_OK)
                return e;
            SSL_CTX_free(ctx);
        }
        return RB_OK;
    }
    const char *path = strncmp(url, "unix://", 7) == 0 ? url + 7 : url;
    if (path[0] == '\0' || strlen(path) >= sizeof(sa.sun_path) || (path == url && strstr(url, "://") != NULL))
        return rb_fail(RB_EINVAL, err,
                       "'%.200s' is not an engine address: unix:///PATH (a socket path of at most %zu bytes) or "
                       "tcp://HOST:PORT",
                       url, sizeof(sa.sun_path) - 1);
    if (tls)
        return rb_fail(RB_EINVAL, err, "%s: TLS is for tcp:// engines, not a unix socket", url);
    return RB_OK;
}

rb_err docker_new(uv_loop_t *loop, const char *socket_path, docker **out, char *err)
{
    struct sockaddr_un sa;
    if (socket_path == NULL || socket_path[0] == '\0' || strlen(socket_path) >= sizeof(sa.sun_path))
        return rb_fail(RB_EINVAL, err, "Docker socket path must be 1 to %zu bytes long", sizeof(sa.sun_path) - 1);
    docker_endpoint ep = {socket_path, NULL, NULL, NULL};
    return docker_new_endpoint(loop, &ep, out, err);
}

rb_err docker_new_endpoint(uv_loop_t *loop, const docker_endpoint *ep, docker **out, char *err)
{
    rb_err e = docker_endpoint_check(ep, err);
    if (e != RB_OK)
        return e;
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
        return rb_fail(RB_EINTERNAL, err, "libcurl failed to initialise");
    docker *d = xcalloc(1, sizeof(*d));
    d->loop = loop;
    if (strncmp(ep->url, "tcp://", 6) == 0) {
        (void)parse_tcp(ep->url + 6, &d->host, &d->port, err); /* checked above */
        int tls = ep->tls_ca != NULL;
        int v6 = strchr(d->host, ':') != NULL;
        d->where = xasprintf("tcp://%s%s%s:%d", v6 ? "[" : "", d->host, v6 ? "]" : "", d->port);
        d->base_url = xasprintf("%s://%s%s%s:%d", tls ? "https" : "http", v6 ? "[" : "", d->host, v6 ? "]" : "",
                                d->port);
        if (tls) {
            d->tls_ca = xstrdup(ep->tls_ca);
            d->tls_cert = xstrdup(ep->tls_cert);
            d->tls_key = xstrdup(ep->tls_key);
            if ((e = make_ssl_ctx(ep, &d->ssl_ctx, err)) != RB_OK) {
                client_free(d);
                curl_global_cleanup();
                return e;
            }
        }
    } else {
        d->socket_path = xstrdup(strncmp(ep->url, "unix://", 7) == 0 ? ep->url + 7 : ep->url);
        d->where = xstrdup(d->socket_path);
        d->base_url = xstrdup("http://localhost");
    }
    snprintf(d->api, sizeof(d->api), "1.%d", DOCKER__API_MIN);
    docker_timeouts_default(&d->to);
    d->multi = curl_multi_init();
    if (d->multi == NULL) {
        client_free(d);
        curl_global_cleanup();
        return rb_fail(RB_EINTERNAL, err, "curl_multi_init failed");
    }
    curl_multi_setopt(d->multi, CURLMOPT_SOCKETFUNCTION, socket_fn);
    curl_multi_setopt(d->multi, CURLMOPT_SOCKETDATA, d);
    curl_multi_setopt(d->multi, CURLMOPT_TIMERFUNCTION, timer_fn);
    curl_multi_setopt(d->multi, CURLMOPT_TIMERDATA, d);
    /* No CURLMOPT_MAX_TOTAL_CONNECTIONS: connections are rationed per budget before curl sees a
     * request (admit), because curl would queue over its limit without any deadline. */
    uv_timer_init(loop, &d->timer);
    uv_timer_init(loop, &d->defer);
    uv_timer_init(loop, &d->queue_timer);
    d->timer.data = d;
    d->defer.data = d;
    d->queue_timer.data = d;
    d->open_timers = 3;
    *out = d;
    return RB_OK;
}

void docker__finalize(docker *d)
{
    if (d->multi == NULL)
        return;
    /* Every easy handle has left the multi handle by now; cleanup closes the cached
     * connections, which may call socket_fn with CURL_POLL_REMOVE. */
    curl_multi_cleanup(d->multi);
    d->multi = NULL;
    curl_global_cleanup();
    while (d->polls != NULL)
        poll_ctx_close(d, d->polls);
    uv_close((uv_handle_t *)&d->timer, timer_close_cb);
    uv_close((uv_handle_t *)&d->defer, timer_close_cb);
    uv_close((uv_handle_t *)&d->queue_timer, timer_close_cb);
}

void docker_free(docker *d)
{
    if (d == NULL || d->freeing)
        return;
    d->freeing = 1;
    while (d->attaches != NULL)
        docker__attach_abort(d->attaches);
    docker__req_cancel_all(d);
    uv_timer_stop(&d->timer);
    uv_timer_stop(&d->defer);
    uv_timer_stop(&d->queue_timer);
    /* Inside a callback the running dispatch loop delivers the cancellations and finalizes;
     * otherwise they are delivered here, before returning. */
    docker__dispatch_done(d);
}

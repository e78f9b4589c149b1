/*
 * request.c: the client's requests (docker_req): building a curl easy handle for a call,
 * rationing connections per budget, enforcing deadlines, and completing every request exactly
 * once. It drives no sockets or timers of curl's (docker.c) and knows no Engine API call
 * beyond GET /version (container.c, archive.c, attach.c).
 *
 * Every finished or cancelled request goes through one FIFO of completions that is drained
 * outside any curl callback, so a user callback may start requests, cancel others or free the
 * client.
 *
 * Deadlines and budgets (docker.h): a request is handed to curl only when a connection of its
 * budget is free (admit), with what is left of its deadline as CURLOPT_TIMEOUT_MS; until then it
 * waits in its budget's FIFO, and a timer fails it with RB_ETIMEDOUT if its deadline passes
 * there. curl's own connection limit is not used: transfers it queues have no deadline.
 */
#include "docker/docker_private.h"

#include <stdlib.h>
#include <string.h>

#define DOCKER_BODY_MAX (8u * 1024 * 1024)

enum req_state { REQ_QUEUED, REQ_INFLIGHT, REQ_DONE };

static const int budget_max[DOCKER__BUDGETS] = {DOCKER_SHORT_CONNECTIONS, DOCKER_LONG_CONNECTIONS};

struct docker_req {
    docker *d;
    CURL *easy;
    enum req_state state;
    int budget;              /* DOCKER__BUDGET_* it counts against, or -1 (a ping) */
    uint64_t deadline;       /* uv_now() at which it times out */
    long timeout_ms;         /* its total deadline, for messages */
    int queue_expired;       /* timed out before a connection of its budget was free */
    docker_req *prev, *next; /* in d->inflight while REQ_INFLIGHT, in its budget's queue while REQ_QUEUED */
    docker_req *done_next;   /* in d's completion FIFO while REQ_DONE */
    int version_probe;
    docker_cb cb;
    docker_raw_cb raw_cb; /* set instead of cb for docker_request_raw */
    void *data;
    char *what; /* "GET /containers/x/json", for messages */
    char *json_body;
    char *raw_body; /* docker_request_raw's body (copied), raw_len bytes */
    size_t raw_len, resp_max;
    struct curl_slist *headers;
    rb_buf resp;
    int toobig;
    CURLcode cres;
    int cancelled;
    long status;
    char curl_err[CURL_ERROR_SIZE];
    docker_op op;        /* its kind, for the statistics */
    uint64_t started_ns; /* uv_hrtime() when it was called */
};

/* ---- completions ---- */

static void free_req(docker_req *r)
{
    if (r->easy != NULL)
        curl_easy_cleanup(r->easy);
    curl_slist_free_all(r->headers);
    rb_buf_dispose(&r->resp);
    free(r->json_body);
    free(r->raw_body);
    free(r->what);
    free(r);
}

static void inflight_unlink(docker *d, docker_req *r)
{
    if (r->prev != NULL)
        r->prev->next = r->next;
    else
        d->inflight = r->next;
    if (r->next != NULL)
        r->next->prev = r->prev;
    r->prev = r->next = NULL;
}

static void queue_unlink(docker *d, docker_req *r)
{
    int b = r->budget;
    if (r->prev != NULL)
        r->prev->next = r->next;
    else
        d->queue_head[b] = r->next;
    if (r->next != NULL)
        r->next->prev = r->prev;
    else
        d->queue_tail[b] = r->prev;
    r->prev = r->next = NULL;
}

/* Appends a request that is in no list to the completion FIFO. */
static void push_done(docker *d, docker_req *r)
{
    r->state = REQ_DONE;
    r->done_next = NULL;
    if (d->done_tail != NULL)
        d->done_tail->done_next = r;
    else
        d->done_head = r;
    d->done_tail = r;
}

/* Moves a queued or in-flight request to the completion FIFO; for an in-flight one the caller
 * has already taken its easy handle out of the multi handle. Its connection, if it had one, is
 * free for the next request of its budget (admit). */
static void mark_done(docker *d, docker_req *r)
{
    if (r->state == REQ_QUEUED) {
        queue_unlink(d, r);
    } else {
        inflight_unlink(d, r);
        if (r->budget >= 0)
            d->active[r->budget]--;
    }
    push_done(d, r);
}

/* Parses "1.NN" into NN; -1 if it is not that shape. */
static int api_minor(const char *v)
{
    if (v[0] != '1' || v[1] != '.')
        return -1;
    int n = 0;
    const char *p = v + 2;
    if (*p == '\0')
        return -1;
    for (; *p; p++) {
        if (*p < '0' || *p > '9' || n > 1000)
            return -1;
        n = n * 10 + (*p - '0');
    }
    return n;
}

static rb_err status_err(long status)
{
    if (status == 404)
        return RB_ENOTFOUND;
    if (status == 409)
        return RB_ECONFLICT;
    return RB_EIO;
}

/* "30 s" or "250 ms": a deadline as a person would write it. */
static void format_span(long ms, char *buf, size_t n)
{
    if (ms % 1000 == 0)
        snprintf(buf, n, "%ld s", ms / 1000);
    else
        snprintf(buf, n, "%ld ms", ms);
}

/* The error of a request that was cancelled or failed below HTTP (curl: connect, timeout, a
 * body over its limit), with its text in msg; RB_OK when an HTTP answer arrived. */
static rb_err transport_err(const docker *d, const docker_req *r, char *msg)
{
    char span[32];
    format_span(r->timeout_ms, span, sizeof(span));
    if (r->cancelled)
        return rb_fail(RB_ECANCELED, msg, "Docker request %s was cancelled", r->what);
    if (r->queue_expired)
        return rb_fail(RB_ETIMEDOUT, msg,
                       "Docker at %s did not answer %s within %s: all %d connections for calls of its kind stayed "
                       "busy",
                       d->where, r->what, span, budget_max[r->budget]);
    if (r->cres == CURLE_OK)
        return RB_OK;
    const char *detail = r->curl_err[0] ? r->curl_err : curl_easy_strerror(r->cres);
    if (r->toobig)
        return rb_fail(RB_ETOOBIG, msg, "Docker's answer to %s exceeds %zu bytes", r->what, r->resp_max);
    if (r->cres == CURLE_OPERATION_TIMEDOUT)
        return rb_fail(RB_ETIMEDOUT, msg, "Docker at %s did not answer %s within %s (%s)", d->where, r->what,
                       span, detail);
    if (r->cres == CURLE_COULDNT_CONNECT || r->cres == CURLE_COULDNT_RESOLVE_HOST)
        return rb_fail(RB_EUNAVAILABLE, msg, "Docker is not reachable at %s: %s; %s", d->where, detail,
                       d->socket_path != NULL ? "is the daemon running and is the socket mounted?"
                                              : "is the engine up, and its address and port reachable from runboxd?");
    if (d->ssl_ctx != NULL && (r->cres == CURLE_SSL_CONNECT_ERROR || r->cres == CURLE_PEER_FAILED_VERIFICATION ||
                               r->cres == CURLE_SSL_CERTPROBLEM || r->cres == CURLE_SSL_CACERT_BADFILE))
        return rb_fail(RB_EUNAVAILABLE, msg,
                       "the TLS handshake with Docker at %s failed: %s; check that the engine's certificate is "
                       "signed by --docker-tls-ca for this address, and that it accepts runboxd's client certificate",
                       d->where, detail);
    return rb_fail(RB_EIO, msg, "Docker request %s failed: %s", r->what, detail);
}

/* ---- statistics ---- */

static const char *const op_names[DOCKER_OP_MAX] = {"create", "start", "attach", "exec", "archive",
                                                    "wait",   "remove", "inspect", "ping", "other"};
static const char *const failure_names[DOCKER_FAIL_MAX] = {"timeout", "unreachable", "connection", "http_4xx",
                                                           "http_5xx"};

const char *docker_op_name(docker_op op)
{
    return (unsigned)op < DOCKER_OP_MAX ? op_names[op] : "";
}

const char *docker_failure_name(docker_failure f)
{
    return (unsigned)f < DOCKER_FAIL_MAX ? failure_names[f] : "";
}

void docker_stats_read(const docker *d, docker_stats *out)
{
    *out = d->stats;
}

void docker__observe(docker *d, docker_op op, uint64_t started_ns, int failure)
{
    if ((unsigned)op >= DOCKER_OP_MAX)
        op = DOCKER_OP_OTHER;
    uint64_t now = uv_hrtime();
    rb_latency_add(&d->stats.latency[op], now > started_ns ? (double)(now - started_ns) / 1e9 : 0);
    if (failure >= 0 && failure < DOCKER_FAIL_MAX)
        d->stats.failures[op][failure]++;
}

/* Is the segment s (up to '/', '?' or the end) exactly word? */
static int segment_is(const char *s, const char *word)
{
    size_t n = strlen(word);
    return strncmp(s, word, n) == 0 && (s[n] == '\0' || s[n] == '/' || s[n] == '?');
}

docker_op docker__op_of(const char *method, const char *path)
{
    if (segment_is(path, "/version"))
        return DOCKER_OP_PING;
    if (segment_is(path, "/exec"))
        return DOCKER_OP_EXEC;
    if (strncmp(path, "/containers/", 12) != 0)
        return DOCKER_OP_OTHER;
    const char *rest = path + 12;
    if (segment_is(rest, "create"))
        return DOCKER_OP_CREATE;
    const char *tail = rest + strcspn(rest, "/?"); /* past the container's id (or "json", the list) */
    if (*tail != '/')
        return strcmp(method, "DELETE") == 0 ? DOCKER_OP_REMOVE : DOCKER_OP_OTHER;
    tail++;
    static const struct {
        const char *word;
        docker_op op;
    } ops[] = {{"start", DOCKER_OP_START},     {"attach", DOCKER_OP_ATTACH}, {"exec", DOCKER_OP_EXEC},
               {"archive", DOCKER_OP_ARCHIVE}, {"wait", DOCKER_OP_WAIT},     {"json", DOCKER_OP_INSPECT}};
    for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++)
        if (segment_is(tail, ops[i].word))
            return ops[i].op;
    return DOCKER_OP_OTHER;
}

/* Counts r's outcome (e: what its callback gets) unless it was cancelled. */
static void observe(docker *d, const docker_req *r, rb_err e)
{
    if (r->cancelled)
        return;
    int f = -1;
    if (r->queue_expired || r->cres == CURLE_OPERATION_TIMEDOUT)
        f = DOCKER_FAIL_TIMEOUT;
    else if (r->cres == CURLE_COULDNT_CONNECT || r->cres == CURLE_COULDNT_RESOLVE_HOST)
        f = DOCKER_FAIL_UNREACHABLE;
    else if (r->cres != CURLE_OK)
        f = DOCKER_FAIL_CONNECTION;
    else if (r->status >= 500)
        f = DOCKER_FAIL_HTTP_5XX;
    else if (r->status >= 400)
        f = DOCKER_FAIL_HTTP_4XX;
    else if (e != RB_OK)
        f = DOCKER_FAIL_CONNECTION; /* an answer that could not be used */
    docker__observe(d, r->op, r->started_ns, f);
}

/* The outcome of a finished docker_request_raw: bytes on success, Docker's message on an HTTP
 * error (its error bodies are JSON even where success bodies are not). */
static void deliver_raw(docker *d, docker_req *r)
{
    char msg[RB_ERR_LEN];
    rb_err e = transport_err(d, r, msg);
    if (e != RB_OK) {
        r->raw_cb(r->data, e, msg, r->cancelled ? 0 : (int)r->status, NULL, 0);
        return;
    }
    if (r->status >= 400) {
        json_t *body = json_loadb(r->resp.data ? r->resp.data : "", r->resp.len, 0, NULL);
        const char *dm = json_string_value(json_object_get(body, "message"));
        if (dm == NULL)
            dm = "no message";
        e = rb_fail(status_err(r->status), msg, "%s (Docker answered HTTP %ld to %s)", dm, r->status, r->what);
        json_decref(body);
        r->raw_cb(r->data, e, msg, (int)r->status, NULL, 0);
        return;
    }
    d->delivering = r;
    r->raw_cb(r->data, RB_OK, NULL, (int)r->status, r->resp.data ? r->resp.data : "", r->resp.len);
    d->delivering = NULL;
}

char *docker_raw_take(docker *d, const char *body)
{
    docker_req *r = d->delivering;
    if (r == NULL || body == NULL || body != r->resp.data)
        return NULL;
    char *owned = r->resp.data;
    r->resp.data = NULL;
    r->resp.len = r->resp.cap = 0;
    return owned;
}

/* Works out the outcome of a finished request and runs its callback. */
static void deliver(docker *d, docker_req *r)
{
    char msg[RB_ERR_LEN];
    rb_err e = RB_OK;
    json_t *body = NULL;
    msg[0] = '\0';

    if (r->raw_cb != NULL) {
        observe(d, r, RB_OK);
        deliver_raw(d, r);
        return;
    }
    e = transport_err(d, r, msg);
    if (e != RB_OK) {
        observe(d, r, e);
        r->cb(r->data, e, msg, r->cancelled ? 0 : (int)r->status, NULL);
        return;
    }
    if (r->resp.len > 0)
        body = json_loadb(r->resp.data, r->resp.len, JSON_DECODE_ANY, NULL);
    if (r->status >= 400) {
        const char *dm = json_string_value(json_object_get(body, "message"));
        if (dm == NULL)
            dm = body == NULL && r->resp.len > 0 && r->resp.len < 300 ? r->resp.data : "no message";
        e = rb_fail(status_err(r->status), msg, "%s (Docker answered HTTP %ld to %s)", dm, r->status, r->what);
    } else if (r->version_probe) {
        const char *v = json_string_value(json_object_get(body, "ApiVersion"));
        int minor = v != NULL ? api_minor(v) : -1;
        if (minor < 0)
            e = rb_fail(RB_EIO, msg, "Docker's /version answer has no usable ApiVersion");
        else if (minor < DOCKER__API_MIN)
            e = rb_fail(RB_EUNAVAILABLE, msg, "Docker Engine API %s is older than 1.%d, the oldest runbox supports", v,
                        DOCKER__API_MIN);
        else
            snprintf(d->api, sizeof(d->api), "1.%d", minor > DOCKER__API_MAX ? DOCKER__API_MAX : minor);
    }
    observe(d, r, e);
    r->cb(r->data, e, e == RB_OK ? NULL : msg, (int)r->status, body);
    json_decref(body);
}

static void admit(docker *d);

/* Runs the callbacks of completed requests in order. Re-entrant calls (from inside a callback)
 * return at once: the outermost loop picks up what they queued. */
void docker__dispatch_done(docker *d)
{
    if (d->dispatching)
        return;
    d->dispatching = 1;
    while (d->done_head != NULL) {
        docker_req *r = d->done_head;
        d->done_head = r->done_next;
        if (d->done_head == NULL)
            d->done_tail = NULL;
        deliver(d, r);
        free_req(r);
    }
    d->dispatching = 0;
    if (d->freeing)
        docker__finalize(d);
}

/* Drains curl's messages into the FIFO first (no user code runs while curl's message list is
 * being read), then dispatches. */
void docker__check_multi_info(docker *d)
{
    CURLMsg *m;
    int pending;
    while ((m = curl_multi_info_read(d->multi, &pending)) != NULL) {
        if (m->msg != CURLMSG_DONE)
            continue;
        char *priv = NULL;
        CURL *easy = m->easy_handle;
        CURLcode res = m->data.result;
        curl_easy_getinfo(easy, CURLINFO_PRIVATE, &priv);
        docker_req *r = (docker_req *)priv;
        curl_multi_remove_handle(d->multi, easy);
        r->cres = res;
        curl_easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &r->status);
        mark_done(d, r);
    }
    admit(d);
    docker__dispatch_done(d);
}

static size_t write_fn(char *ptr, size_t size, size_t nmemb, void *userp)
{
    docker_req *r = userp;
    size_t n = size * nmemb;
    if (rb_buf_append(&r->resp, ptr, n) != RB_OK) {
        r->toobig = 1;
        return 0; /* makes curl fail the transfer with CURLE_WRITE_ERROR */
    }
    return n;
}

/* ---- requests ---- */

static void on_defer(uv_timer_t *t)
{
    docker__dispatch_done(t->data);
}

/* Hands r to curl with what is left of its deadline; RB_EINTERNAL if curl refuses it. */
static rb_err begin_transfer(docker *d, docker_req *r)
{
    uint64_t now = uv_now(d->loop);
    long left = r->deadline > now ? (long)(r->deadline - now) : 1;
    curl_easy_setopt(r->easy, CURLOPT_TIMEOUT_MS, left);
    curl_easy_setopt(r->easy, CURLOPT_CONNECTTIMEOUT_MS, left < d->to.connect_ms ? left : d->to.connect_ms);
    if (curl_multi_add_handle(d->multi, r->easy) != CURLM_OK)
        return RB_EINTERNAL;
    r->state = REQ_INFLIGHT;
    r->prev = NULL;
    r->next = d->inflight;
    if (d->inflight != NULL)
        d->inflight->prev = r;
    d->inflight = r;
    if (r->budget >= 0)
        d->active[r->budget]++;
    return RB_OK;
}

static void on_queue_timer(uv_timer_t *t);

/* Arms the queue timer for the earliest deadline of a waiting request (stops it if none). */
static void arm_queue_timer(docker *d)
{
    uint64_t first = UINT64_MAX;
    for (int b = 0; b < DOCKER__BUDGETS; b++)
        for (docker_req *r = d->queue_head[b]; r != NULL; r = r->next)
            if (r->deadline < first)
                first = r->deadline;
    if (first == UINT64_MAX || d->freeing) {
        uv_timer_stop(&d->queue_timer);
        return;
    }
    uint64_t now = uv_now(d->loop);
    uv_timer_start(&d->queue_timer, on_queue_timer, first > now ? first - now : 0, 0);
}

/* Gives free connections to waiting requests, in order per budget; a request whose deadline
 * passed while it waited completes with RB_ETIMEDOUT instead. Never runs a callback. */
static void admit(docker *d)
{
    if (d->freeing)
        return;
    uint64_t now = uv_now(d->loop);
    for (int b = 0; b < DOCKER__BUDGETS; b++) {
        while (d->active[b] < budget_max[b] && d->queue_head[b] != NULL) {
            docker_req *r = d->queue_head[b];
            if (r->deadline <= now) {
                r->queue_expired = 1;
                mark_done(d, r);
                continue;
            }
            queue_unlink(d, r);
            if (begin_transfer(d, r) != RB_OK) {
                r->cres = CURLE_FAILED_INIT;
                snprintf(r->curl_err, sizeof(r->curl_err), "curl_multi_add_handle failed");
                push_done(d, r);
            }
        }
    }
    arm_queue_timer(d);
}

static void on_queue_timer(uv_timer_t *t)
{
    docker *d = t->data;
    uint64_t now = uv_now(d->loop);
    for (int b = 0; b < DOCKER__BUDGETS; b++) {
        docker_req *r = d->queue_head[b];
        while (r != NULL) {
            docker_req *next = r->next;
            if (r->deadline <= now) {
                r->queue_expired = 1;
                mark_done(d, r);
            }
            r = next;
        }
    }
    arm_queue_timer(d);
    docker__dispatch_done(d);
}

/* A raw (non-JSON) request's body and answer limit, for docker_request_raw. */
typedef struct raw_opts {
    const char *content_type;
    const void *body;
    size_t len;
    size_t max_resp;
    docker_raw_cb cb;
} raw_opts;

/* The deadline a call of kind gets when its caller passes none. */
static long default_timeout(const docker *d, docker__kind kind)
{
    switch (kind) {
    case DOCKER__PING:
        return d->to.ping_ms;
    case DOCKER__WAIT:
        return d->to.long_ms;
    case DOCKER__TRANSFER:
        return d->to.transfer_ms;
    case DOCKER__SHORT:
        break;
    }
    return d->to.short_ms;
}

static rb_err start_request(docker *d, docker__kind kind, const char *method, const char *url_path, int versioned,
                            json_t *body, const raw_opts *raw, long timeout_ms, docker_cb cb, void *data,
                            docker_req **out, char *err)
{
    if (raw != NULL)
        cb = NULL;
    if (d->freeing)
        return rb_fail(RB_ECANCELED, err, "the Docker client is shutting down");
    if (method == NULL || url_path == NULL || url_path[0] != '/' || (cb == NULL && (raw == NULL || raw->cb == NULL)))
        return rb_fail(RB_EINVAL, err, "a Docker request needs a method, a path starting with '/' and a callback");
    for (const char *p = url_path; *p; p++)
        if ((unsigned char)*p <= ' ' || *p == 0x7f)
            return rb_fail(RB_EINVAL, err, "Docker request path contains a space or control character");

    docker_req *r = xcalloc(1, sizeof(*r));
    r->d = d;
    r->cb = cb;
    r->data = data;
    r->op = docker__op_of(method, url_path);
    r->started_ns = uv_hrtime();
    r->version_probe = !versioned;
    r->budget = kind == DOCKER__PING ? -1 : kind == DOCKER__SHORT ? DOCKER__BUDGET_SHORT : DOCKER__BUDGET_LONG;
    r->timeout_ms = timeout_ms > 0 ? timeout_ms : default_timeout(d, kind);
    r->deadline = uv_now(d->loop) + (uint64_t)r->timeout_ms;
    r->resp_max = raw != NULL ? raw->max_resp : DOCKER_BODY_MAX;
    rb_buf_init(&r->resp, r->resp_max);
    if (raw != NULL) {
        r->raw_cb = raw->cb;
        if (raw->body != NULL) {
            r->raw_body = xmalloc(raw->len > 0 ? raw->len : 1);
            memcpy(r->raw_body, raw->body, raw->len);
            r->raw_len = raw->len;
        }
    }
    r->what = xasprintf("%s %s", method, url_path);
    if (body != NULL) {
        r->json_body = json_dumps(body, JSON_COMPACT | JSON_ENCODE_ANY);
        if (r->json_body == NULL) {
            free_req(r);
            return rb_fail(RB_EINVAL, err, "the JSON body of %s %s cannot be serialised", method, url_path);
        }
    }
    r->easy = curl_easy_init();
    if (r->easy == NULL) {
        free_req(r);
        return rb_fail(RB_EINTERNAL, err, "curl_easy_init failed");
    }
    char *url = versioned ? xasprintf("%s/v%s%s", d->base_url, d->api, url_path)
                          : xasprintf("%s%s", d->base_url, url_path);
    CURL *e = r->easy;
    curl_easy_setopt(e, CURLOPT_URL, url);
    free(url); /* curl copies string options */
    if (d->socket_path != NULL)
        curl_easy_setopt(e, CURLOPT_UNIX_SOCKET_PATH, d->socket_path);
    curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, d->ssl_ctx != NULL ? "https" : "http");
    if (d->ssl_ctx != NULL) { /* the engine's certificate checked against the CA and its address */
        curl_easy_setopt(e, CURLOPT_CAINFO, d->tls_ca);
        curl_easy_setopt(e, CURLOPT_CAPATH, NULL);
        curl_easy_setopt(e, CURLOPT_SSLCERT, d->tls_cert);
        curl_easy_setopt(e, CURLOPT_SSLKEY, d->tls_key);
        curl_easy_setopt(e, CURLOPT_SSL_VERIFYPEER, 1L);
        curl_easy_setopt(e, CURLOPT_SSL_VERIFYHOST, 2L);
    }
    curl_easy_setopt(e, CURLOPT_PROXY, ""); /* ignore *_proxy variables: straight to the engine */
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(e, CURLOPT_PRIVATE, (char *)r);
    curl_easy_setopt(e, CURLOPT_ERRORBUFFER, r->curl_err);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, write_fn);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, r);
    r->headers = curl_slist_append(r->headers, "Expect:");
    if (r->raw_body != NULL) {
        /* binary-safe: curl sends exactly raw_len bytes, with any method (CUSTOMREQUEST below) */
        curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)r->raw_len);
        curl_easy_setopt(e, CURLOPT_POSTFIELDS, r->raw_body);
        char *ct = xasprintf("Content-Type: %s", raw->content_type ? raw->content_type : "application/octet-stream");
        r->headers = curl_slist_append(r->headers, ct);
        free(ct);
    } else if (strcmp(method, "POST") == 0 || r->json_body != NULL) {
        const char *b = r->json_body != NULL ? r->json_body : "";
        curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE, (long)strlen(b));
        curl_easy_setopt(e, CURLOPT_POSTFIELDS, b);
        if (r->json_body != NULL)
            r->headers = curl_slist_append(r->headers, "Content-Type: application/json");
    }
    if (strcmp(method, "GET") != 0 && strcmp(method, "POST") != 0)
        curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, method);
    curl_easy_setopt(e, CURLOPT_HTTPHEADER, r->headers);

    if (r->budget >= 0 && (d->active[r->budget] >= budget_max[r->budget] || d->queue_head[r->budget] != NULL)) {
        /* every connection of its budget is busy: wait in order for one (admit) */
        int b = r->budget;
        r->state = REQ_QUEUED;
        r->prev = d->queue_tail[b];
        if (d->queue_tail[b] != NULL)
            d->queue_tail[b]->next = r;
        else
            d->queue_head[b] = r;
        d->queue_tail[b] = r;
        arm_queue_timer(d);
    } else if (begin_transfer(d, r) != RB_OK) {
        free_req(r);
        return rb_fail(RB_EINTERNAL, err, "curl_multi_add_handle failed");
    }
    if (out != NULL)
        *out = r;
    return RB_OK;
}

rb_err docker__request(docker *d, docker__kind kind, const char *method, const char *path, json_t *body,
                       long timeout_ms, docker_cb cb, void *data, docker_req **out, char *err)
{
    return start_request(d, kind, method, path, 1, body, NULL, timeout_ms, cb, data, out, err);
}

rb_err docker_request(docker *d, const char *method, const char *path, json_t *body, long timeout_ms, docker_cb cb,
                      void *data, docker_req **out, char *err)
{
    return start_request(d, DOCKER__SHORT, method, path, 1, body, NULL, timeout_ms, cb, data, out, err);
}

rb_err docker__request_raw(docker *d, docker__kind kind, const char *method, const char *path,
                           const char *content_type, const void *body, size_t len, size_t max_resp, long timeout_ms,
                           docker_raw_cb cb, void *data, docker_req **out, char *err)
{
    if (cb == NULL)
        return rb_fail(RB_EINVAL, err, "a raw Docker request needs a callback");
    raw_opts raw = {content_type, body, len, max_resp > 0 ? max_resp : DOCKER_BODY_MAX, cb};
    return start_request(d, kind, method, path, 1, NULL, &raw, timeout_ms, NULL, data, out, err);
}

rb_err docker_request_raw(docker *d, const char *method, const char *path, const char *content_type,
                          const void *body, size_t len, size_t max_resp, long timeout_ms, docker_raw_cb cb, void *data,
                          docker_req **out, char *err)
{
    return docker__request_raw(d, DOCKER__TRANSFER, method, path, content_type, body, len, max_resp, timeout_ms, cb,
                               data, out, err);
}

void docker_req_cancel(docker_req *r)
{
    if (r == NULL || r->cancelled)
        return;
    docker *d = r->d;
    r->cancelled = 1;
    if (r->state == REQ_INFLIGHT)
        curl_multi_remove_handle(d->multi, r->easy);
    if (r->state != REQ_DONE) {
        mark_done(d, r);
        admit(d); /* its connection (or place in the queue) goes to the next request */
    }
    /* The callback never runs from in here. */
    uv_timer_start(&d->defer, on_defer, 0, 0);
}

rb_err docker_ping_version(docker *d, docker_cb cb, void *data, char *err)
{
    return start_request(d, DOCKER__PING, "GET", "/version", 0, NULL, NULL, 0, cb, data, NULL, err);
}

void docker__req_cancel_all(docker *d)
{
    while (d->inflight != NULL) {
        docker_req *r = d->inflight;
        curl_multi_remove_handle(d->multi, r->easy);
        r->cancelled = 1;
        mark_done(d, r);
    }
    for (int b = 0; b < DOCKER__BUDGETS; b++) {
        while (d->queue_head[b] != NULL) {
            docker_req *r = d->queue_head[b];
            r->cancelled = 1;
            mark_done(d, r);
        }
    }
}

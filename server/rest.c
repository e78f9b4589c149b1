/*
 * rest.c: REST handlers (server/rest.h). Each handler parses, calls core/, encodes. Work that
 * outlives a call (session creation, wait=true, event streams) keeps a small context in
 * req->pool; a pool dispose hook detaches it from core (core_cancel / core_watch_stop) when
 * the request goes away first, so no core callback ever touches a dead request.
 */
#include "server/rest.h"

#include <string.h>

#include "server/sse.h"

/* Answers a synchronous core call: out on success (status), the error document otherwise. */
static int answer(http_call *call, rb_err e, const char *msg, json_t *out, int status)
{
    if (e != RB_OK)
        http_send_error(call->req, e, msg);
    else
        http_send_json(call->req, status, out);
    json_decref(out);
    return 0;
}

/* ---- sessions ------------------------------------------------------------------------- */

typedef struct create_ctx {
    h2o_req_t *req;
    core_op *op;
} create_ctx;

static void create_dispose(void *p)
{
    create_ctx *ctx = p;
    if (ctx->op != NULL)
        core_cancel(ctx->op);
    ctx->op = NULL;
    ctx->req = NULL;
}

static void on_created(void *data, rb_err e, const char *msg, json_t *body)
{
    create_ctx *ctx = data;
    ctx->op = NULL;
    if (ctx->req != NULL) {
        if (e != RB_OK)
            http_send_error(ctx->req, e, msg);
        else
            http_send_json(ctx->req, 201, body);
    }
    json_decref(body);
}

static int session_create(http_call *call)
{
    char err[RB_ERR_LEN];
    json_t *opts = NULL;
    rb_err e = http_read_json(call->req, call->cfg->max_body, 1, &opts, err);
    if (e != RB_OK)
        return answer(call, e, err, NULL, 0);
    if (opts == NULL)
        opts = json_object(); /* an empty body means {} */
    create_ctx *ctx = h2o_mem_alloc_shared(&call->req->pool, sizeof(*ctx), create_dispose);
    ctx->req = call->req;
    ctx->op = NULL;
    e = core_session_create(call->core, opts, on_created, ctx, &ctx->op, err);
    json_decref(opts);
    if (e != RB_OK) {
        ctx->op = NULL;
        return answer(call, e, err, NULL, 0);
    }
    return 0;
}

static int session_list(http_call *call)
{
    char err[RB_ERR_LEN];
    json_t *out = NULL;
    rb_err e = core_session_list(call->core, &out, err);
    return answer(call, e, err, out, 200);
}

static int session_get(http_call *call)
{
    char err[RB_ERR_LEN];
    json_t *out = NULL;
    rb_err e = core_session_get(call->core, call->params[0], &out, err);
    return answer(call, e, err, out, 200);
}

static int session_delete(http_call *call)
{
    char err[RB_ERR_LEN];
    json_t *out = NULL;
    rb_err e = core_session_delete(call->core, call->params[0], &out, err);
    return answer(call, e, err, out, 200);
}

/* ---- executions ----------------------------------------------------------------------- */

typedef struct wait_ctx {
    h2o_req_t *req;
    core_watch *watch;
} wait_ctx;

static void wait_dispose(void *p)
{
    wait_ctx *ctx = p;
    if (ctx->watch != NULL)
        core_watch_stop(ctx->watch);
    ctx->watch = NULL;
    ctx->req = NULL;
}

static void on_wait_event(void *data, const char *event, json_t *payload)
{
    wait_ctx *ctx = data;
    if (strcmp(event, "done") != 0)
        return;
    ctx->watch = NULL; /* finished: must not be stopped again */
    if (ctx->req != NULL)
        http_send_json(ctx->req, 200, payload);
}

static int execute(http_call *call)
{
    char err[RB_ERR_LEN];
    json_t *body = NULL, *out = NULL;
    rb_err e = http_read_json(call->req, call->cfg->max_body, 0, &body, err);
    if (e != RB_OK)
        return answer(call, e, err, NULL, 0);

    int wait = 0;
    json_t *w = json_object_get(body, "wait");
    if (w != NULL && !json_is_null(w)) {
        if (!json_is_boolean(w)) {
            json_decref(body);
            return answer(call, RB_EINVAL, "wait: must be a boolean (true to answer with the result when finished)",
                          NULL, 0);
        }
        wait = json_is_true(w);
    }
    /* wait is ours, not core's: hand core the request without it. */
    json_t *req = json_copy(body);
    json_decref(body);
    json_object_del(req, "wait");
    e = core_execute(call->core, req, &out, err);
    json_decref(req);
    if (e != RB_OK || !wait)
        return answer(call, e, err, out, 202);

    const char *id = json_string_value(json_object_get(out, "request_id"));
    if (id == NULL) {
        json_decref(out);
        return answer(call, RB_EINTERNAL, "the execution has no request_id", NULL, 0);
    }
    wait_ctx *ctx = h2o_mem_alloc_shared(&call->req->pool, sizeof(*ctx), wait_dispose);
    ctx->req = call->req;
    ctx->watch = NULL;
    e = core_watch_start(call->core, id, 1, on_wait_event, ctx, &ctx->watch, err);
    json_decref(out);
    if (e != RB_OK) {
        ctx->watch = NULL;
        return answer(call, e, err, NULL, 0);
    }
    return 0;
}

static int execution_status(http_call *call)
{
    char err[RB_ERR_LEN];
    json_t *out = NULL;
    rb_err e = core_execution_status(call->core, call->params[0], &out, err);
    return answer(call, e, err, out, 200);
}

static int execution_results(http_call *call)
{
    char err[RB_ERR_LEN];
    json_t *out = NULL;
    rb_err e = core_execution_results(call->core, call->params[0], &out, err);
    return answer(call, e, err, out, 200);
}

static int execution_cancel(http_call *call)
{
    char err[RB_ERR_LEN];
    json_t *out = NULL;
    rb_err e = core_execution_cancel(call->core, call->params[0], &out, err);
    return answer(call, e, err, out, 200);
}

typedef struct events_ctx {
    sse_stream *sse;
    core_watch *watch;
} events_ctx;

static void on_stream_closed(void *data)
{
    events_ctx *ctx = data;
    ctx->sse = NULL;
    if (ctx->watch != NULL)
        core_watch_stop(ctx->watch);
    ctx->watch = NULL;
}

static void on_stream_event(void *data, const char *event, json_t *payload)
{
    events_ctx *ctx = data;
    int done = strcmp(event, "done") == 0;
    if (done)
        ctx->watch = NULL;
    if (ctx->sse == NULL)
        return;
    sse_send(ctx->sse, event, payload);
    if (done) {
        sse_end(ctx->sse);
        ctx->sse = NULL;
    }
}

static int execution_events(http_call *call)
{
    char err[RB_ERR_LEN];
    /* The context lives in the pool; the stream's own dispose hook (which runs before the pool
     * memory goes) stops the watch through on_stream_closed. With replay, core sends the
     * current status and past output first, so the stream needs nothing of its own. */
    events_ctx *ctx = h2o_mem_alloc_pool(&call->req->pool, sizeof(*ctx));
    ctx->sse = NULL;
    ctx->watch = NULL;
    rb_err e = core_watch_start(call->core, call->params[0], 1, on_stream_event, ctx, &ctx->watch, err);
    if (e != RB_OK)
        return answer(call, e, err, NULL, 0);
    ctx->sse = sse_start(call->server, call->req, on_stream_closed, ctx);
    return 0;
}

/* ---- health --------------------------------------------------------------------------- */

static int health(http_call *call)
{
    json_t *out = core_health(call->core);
    if (out == NULL)
        return answer(call, RB_EINTERNAL, "health is not available", NULL, 0);
    return answer(call, RB_OK, NULL, out, 200);
}

static const http_route routes[] = {
    {"POST", "/sessions", session_create},
    {"GET", "/sessions", session_list},
    {"GET", "/sessions/{id}", session_get},
    {"DELETE", "/sessions/{id}", session_delete},
    {"POST", "/execute", execute},
    {"GET", "/execute/{id}/status", execution_status},
    {"GET", "/execute/{id}/results", execution_results},
    {"GET", "/execute/{id}/events", execution_events},
    {"DELETE", "/execute/{id}", execution_cancel},
    {"GET", "/health", health},
};

const http_route *rest_routes(size_t *n)
{
    *n = sizeof(routes) / sizeof(routes[0]);
    return routes;
}

/*
 * dify.c: the routes of runboxd's Dify surface (server/dify/dify.h) and the one operation of
 * several core calls behind POST /v1/sandbox/run: create a session, run the preload (if any)
 * then the code with the run's timeout, answer, delete the session. The shapes are
 * dify_wire.c's; this file knows HTTP and core, not dify-sandbox's strings.
 *
 * A run lives on the heap, apart from its request: the request's pool holds only a back-pointer
 * (dify_hold) that its dispose hook clears, so a request that h2o disposes early leaves the run
 * to delete its session (at once when it is running code; when its session comes up, if it is
 * being made). However a run ends, its session is deleted. server_stop cancels the code in flight
 * (the protocol's stop hook); each run then answers 503 "stopping" through its ordinary path,
 * while the core is still there, and deletes its session.
 */
#include "server/dify/dify.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "server/dify/dify_wire.h"

#define DIFY_PREFIX "/v1/sandbox/"
/* The least time the code gets after a slow preload. */
#define DIFY_MIN_TIMEOUT_S 0.05

/* The protocol's data: the runs in flight, which server_stop cancels. */
typedef struct dify_server {
    h2o_linklist_t runs;
    int stopping;
} dify_server;

typedef struct dify_run dify_run;

/* In the request's pool: its run, cleared by whichever of the two goes first. */
typedef struct dify_hold {
    dify_run *run;
} dify_hold;

struct dify_run {
    h2o_linklist_t link; /* in dify_server.runs */
    dify_server *srv;
    dify_hold *hold;     /* NULL once the client has gone (then req is NULL too) */
    h2o_req_t *req;
    rb_core *core;
    const core_caller *who;
    core_op *op;       /* the session's creation, while in flight */
    core_watch *watch; /* the execution in flight */
    char session_id[64];
    char request_id[64]; /* of the execution in flight */
    char *code, *preload;                /* heap */
    char *prior_stdout, *prior_stderr;   /* what the preload printed (heap), once it has run */
    char *note;                          /* the sealed run's note (heap), or NULL */
    const char *language;                /* "python" or "javascript" */
    int network;                         /* enable_network was asked */
    int in_preload;                      /* the execution in flight is the preload */
    double timeout;                      /* seconds for preload and code together */
    int64_t started_ms;                  /* when the first execution was queued (monotonic) */
};

/* ---- answers ------------------------------------------------------------------------------ */

/* Answers doc (stolen) with status. */
static int send_doc(h2o_req_t *req, int status, json_t *doc)
{
    http_send_json(req, status, doc);
    json_decref(doc);
    return 0;
}

/* Answers runbox's error e as dify-sandbox answers a failed run (dify_error_of). */
static int send_error(h2o_req_t *req, rb_err e, const char *msg)
{
    int status, code;
    dify_error_of(e == RB_OK ? RB_EINTERNAL : e, &status, &code);
    return send_doc(req, status, dify_envelope(code, msg && msg[0] ? msg : rb_strerror(e), NULL));
}

/* http_protocol.error_doc under /v1/sandbox/: the envelope with -status; for a 401 no body at
 * all, as middleware.Auth's c.AbortWithStatus(401). */
static json_t *error_doc(int status, const char *code, const char *message)
{
    (void)code;
    if (status == 401)
        return NULL;
    return dify_envelope(-status, message, NULL);
}

/* ---- runs ---------------------------------------------------------------------------------- */

static void hold_dispose(void *p);

/* Detaches r from its request (the request's pool may go on without it). */
static void run_detach(dify_run *r)
{
    if (r->hold != NULL)
        r->hold->run = NULL;
    r->hold = NULL;
    r->req = NULL;
}

static void run_free(dify_run *r)
{
    run_detach(r);
    if (h2o_linklist_is_linked(&r->link))
        h2o_linklist_unlink(&r->link);
    free(r->code);
    free(r->preload);
    free(r->prior_stdout);
    free(r->prior_stderr);
    free(r->note);
    free(r);
}

/* Stops what r has in flight, deletes its session and frees it. Its creation, if still in
 * flight, is only detached: the caller knows it may leave a session behind (server_free). */
static void run_end(dify_run *r)
{
    char err[RB_ERR_LEN];
    if (r->watch != NULL)
        core_watch_stop(r->watch);
    r->watch = NULL;
    if (r->op != NULL)
        core_cancel(r->op);
    r->op = NULL;
    if (r->session_id[0] != '\0') {
        json_t *gone = NULL;
        if (core_session_delete(r->core, r->who, r->session_id, &gone, err) != RB_OK)
            rb_warn("dify: session %s not deleted after its run: %s", r->session_id, err);
        json_decref(gone);
    }
    run_free(r);
}

/* Answers (when the client is still there) and ends the run. */
static void run_answer(dify_run *r, int status, json_t *doc)
{
    h2o_req_t *req = r->req;
    run_detach(r); /* before the answer: its request may be done with once it is sent */
    if (req != NULL)
        send_doc(req, status, doc);
    else
        json_decref(doc);
    run_end(r);
}

static void run_fail(dify_run *r, rb_err e, const char *msg)
{
    int status, code;
    dify_error_of(e == RB_OK ? RB_EINTERNAL : e, &status, &code);
    run_answer(r, status, dify_envelope(code, msg && msg[0] ? msg : rb_strerror(e), NULL));
}

static void hold_dispose(void *p)
{
    dify_hold *hold = p;
    dify_run *r = hold->run;
    if (r == NULL)
        return;
    r->hold = NULL;
    r->req = NULL;
    if (r->op == NULL) /* running code: stop it now; a session being made is deleted when it is up */
        run_end(r);
}

/* Answers a run that server_stop interrupted, as dify-sandbox's busy answer (Dify: "Code
 * execution service is unavailable"). */
static void run_stopped(dify_run *r)
{
    run_answer(r, 503, dify_envelope(-503, "runboxd is stopping: retry in a few seconds", NULL));
}

static void on_event(void *data, const char *event, json_t *payload);

/* Queues the preload or the code in r's session and watches it. */
static void run_next(dify_run *r)
{
    char err[RB_ERR_LEN];
    if (r->srv->stopping) {
        run_stopped(r);
        return;
    }
    double left = r->timeout;
    if (r->started_ms == 0)
        r->started_ms = rb_mono_ms();
    else
        left -= (double)(rb_mono_ms() - r->started_ms) / 1000.0;
    if (left < DIFY_MIN_TIMEOUT_S)
        left = DIFY_MIN_TIMEOUT_S;
    json_t *req = json_pack("{s:s, s:s, s:f}", "session_id", r->session_id, "code",
                            r->in_preload ? r->preload : r->code, "timeout", left);
    json_t *queued = NULL;
    rb_err e = core_execute(r->core, r->who, req, &queued, err);
    json_decref(req);
    if (e != RB_OK) {
        run_fail(r, e, err);
        return;
    }
    const char *rid = json_string_value(json_object_get(queued, "request_id"));
    snprintf(r->request_id, sizeof(r->request_id), "%s", rid != NULL ? rid : "");
    e = rid != NULL ? core_watch_start(r->core, r->who, rid, 0, on_event, r, &r->watch, err)
                    : rb_fail(RB_EINTERNAL, err, "the execution has no request_id");
    json_decref(queued);
    if (e != RB_OK) {
        r->watch = NULL;
        run_fail(r, e, err);
    }
}

static void on_event(void *data, const char *event, json_t *payload)
{
    dify_run *r = data;
    if (strcmp(event, "done") != 0)
        return;
    r->watch = NULL; /* finished: must not be stopped again */
    const char *status = json_string_value(json_object_get(payload, "status"));
    if (r->srv->stopping && status != NULL && strcmp(status, "cancelled") == 0) {
        run_stopped(r);
        return;
    }
    if (r->in_preload && status != NULL && strcmp(status, "completed") == 0) {
        /* dify-sandbox runs the preload in the code's process, before it: its output comes first */
        const char *out = json_string_value(json_object_get(payload, "stdout"));
        const char *err = json_string_value(json_object_get(payload, "stderr"));
        r->prior_stdout = xstrdup(out != NULL ? out : "");
        r->prior_stderr = xstrdup(err != NULL ? err : "");
        r->in_preload = 0;
        run_next(r);
        return;
    }
    /* the code's result, or a preload that failed (then the code never runs, as in dify-sandbox) */
    json_t *data_doc = dify_run_data(r->prior_stdout, r->prior_stderr, payload, strcmp(r->language, "python") == 0,
                                     r->note);
    run_answer(r, 200, dify_envelope(DIFY_SUCCESS, "success", data_doc));
}

static void on_created(void *data, rb_err e, const char *msg, json_t *body)
{
    dify_run *r = data;
    r->op = NULL;
    if (e != RB_OK) {
        run_fail(r, e, msg);
        return;
    }
    const char *sid = json_string_value(json_object_get(body, "session_id"));
    snprintf(r->session_id, sizeof(r->session_id), "%s", sid ? sid : "");
    json_decref(body);
    if (r->req == NULL) { /* the client went away meanwhile */
        run_end(r);
        return;
    }
    if (r->srv->stopping) {
        run_stopped(r);
        return;
    }
    r->in_preload = r->preload[0] != '\0';
    run_next(r);
}

/* Asks core for r's session: with the operator's default network when Dify asks for one and the
 * operator and the key allow it; otherwise sealed, with a note saying so. */
static rb_err run_create(dify_run *r, char *err)
{
    json_t *opts = json_pack("{s:s}", "language", r->language);
    rb_err e;
    if (r->network) {
        json_t *net = json_pack("{s:s, s:{s:b}}", "language", r->language, "execution_options", "network", 1);
        e = core_session_create(r->core, r->who, net, on_created, r, &r->op, err);
        json_decref(net);
        if (e != RB_EFORBIDDEN) { /* refused: networks are off, or beyond the key's egress limit */
            json_decref(opts);
            return e;
        }
        const char *why = err;
        static const char field[] = "'execution_options.network': "; /* core names REST's field */
        if (strncmp(why, field, sizeof(field) - 1) == 0)
            why += sizeof(field) - 1;
        r->note = xasprintf("[runbox: this run had no network although enable_network was asked: %s]", why);
        /* said once in the log (the runs that fail say it in their output) */
        static int logged;
        if (!logged) {
            logged = 1;
            rb_warn("dify: runs ask for a network (enable_network) and run without one: %s (said once; a run that "
                    "fails says it in its stderr)",
                    why);
        }
    }
    e = core_session_create(r->core, r->who, opts, on_created, r, &r->op, err);
    json_decref(opts);
    return e;
}

/* ---- routes -------------------------------------------------------------------------------- */

static int sandbox_run(http_call *call)
{
    h2o_req_t *req = call->req;
    char msg[RB_ERR_LEN];
    size_t len = req->entity.base != NULL ? req->entity.len : 0;
    if (len > call->cfg->max_body) {
        /* HTTP 200 with the reason, which Dify shows as it is (a 413 would read as "a network issue") */
        snprintf(msg, sizeof(msg),
                 "the request is %zu bytes; this runboxd takes at most %zu (its --max-body): send less code", len,
                 call->cfg->max_body);
        return send_doc(req, 200, dify_envelope(-413, msg, NULL));
    }
    dify_run_request rq;
    json_t *body = NULL;
    dify_parse p = dify_run_parse(len > 0 ? req->entity.base : "", len, &rq, &body, msg, sizeof(msg));
    if (p == DIFY_PARSE_LANGUAGE)
        return send_doc(req, 400, dify_envelope(-400, msg, NULL));
    if (p != DIFY_PARSE_OK) {
        ssize_t ct = h2o_find_header(&req->headers, H2O_TOKEN_CONTENT_TYPE, -1);
        int status = ct >= 0 ? dify_bind_status(req->headers.entries[ct].value.base, req->headers.entries[ct].value.len)
                             : dify_bind_status(NULL, 0);
        return send_doc(req, status, dify_envelope(-400, msg, NULL));
    }
    dify_server *srv = call->data;
    dify_run *r = xcalloc(1, sizeof(*r));
    r->srv = srv;
    r->core = call->core;
    r->who = call->who;
    r->req = req;
    r->language = rq.language;
    r->code = xstrdup(rq.code);
    r->preload = xstrdup(rq.preload);
    r->network = rq.enable_network;
    r->timeout = call->cfg->dify_timeout;
    json_decref(body);
    rb_err e = run_create(r, msg);
    if (e != RB_OK) {
        r->op = NULL;
        run_free(r);
        return send_error(req, e, msg);
    }
    h2o_linklist_insert(&srv->runs, &r->link);
    r->hold = h2o_mem_alloc_shared(&req->pool, sizeof(*r->hold), hold_dispose);
    r->hold->run = r;
    return 0;
}

/* The language of a dependencies call: ?language=, else a JSON body's "language" (gin binds
 * either); NULL when none is given. */
static const char *deps_language(h2o_req_t *req)
{
    const char *l = http_query_param(req, "language");
    if ((l == NULL || l[0] == '\0') && req->entity.base != NULL && req->entity.len > 0) {
        json_t *body = json_loadb(req->entity.base, req->entity.len, 0, NULL);
        const char *v = json_string_value(json_object_get(body, "language"));
        l = v != NULL ? http_pool_strdup(req, v, strlen(v)) : NULL;
        json_decref(body);
    }
    return l != NULL && l[0] != '\0' ? l : NULL;
}

/* Answers a dependencies call whose language is not python3 as controller/run.go does and
 * returns 1; 0 when it is python3. */
static int deps_refused(h2o_req_t *req)
{
    const char *l = deps_language(req);
    if (l == NULL) { /* ShouldBind: the validator's message, with the status left at 200 */
        send_doc(req, 200,
                 dify_envelope(-400,
                               "Key: 'Language' Error:Field validation for 'Language' failed on the 'required' tag",
                               NULL));
        return 1;
    }
    if (strcmp(l, "python3") != 0) {
        send_doc(req, 400, dify_envelope(-400, "unsupported language", NULL));
        return 1;
    }
    return 0;
}

typedef struct deps_ctx {
    h2o_req_t *req;
    core_op *op;
} deps_ctx;

static void deps_dispose(void *p)
{
    deps_ctx *ctx = p;
    if (ctx->op != NULL)
        core_cancel(ctx->op);
    ctx->op = NULL;
}

static void on_packages(void *data, rb_err e, const char *msg, json_t *body)
{
    deps_ctx *ctx = data;
    ctx->op = NULL;
    if (e != RB_OK)
        send_error(ctx->req, e, msg);
    else
        send_doc(ctx->req, 200, dify_envelope(DIFY_SUCCESS, "success", dify_dependencies(body)));
    json_decref(body);
}

/* GET dependencies and GET dependencies/refresh: the image's Python packages (runbox installs
 * none on its own, so refreshing finds what listing does). */
static int deps_list(http_call *call)
{
    char err[RB_ERR_LEN];
    if (deps_refused(call->req))
        return 0;
    deps_ctx *ctx = h2o_mem_alloc_shared(&call->req->pool, sizeof(*ctx), deps_dispose);
    ctx->req = call->req;
    ctx->op = NULL;
    rb_err e = core_packages(call->core, on_packages, ctx, &ctx->op, err);
    if (e != RB_OK) {
        ctx->op = NULL;
        return send_error(call->req, e, err);
    }
    return 0;
}

/* POST dependencies/update: dify-sandbox reinstalls its requirements file; runbox's sandboxes
 * come from an image, with nothing to update, so it answers as a successful update does. */
static int deps_update(http_call *call)
{
    if (deps_refused(call->req))
        return 0;
    return send_doc(call->req, 200, dify_envelope(DIFY_SUCCESS, "success", json_object()));
}

/* Literal paths: tests/integration/test_openapi.py reads this table against openapi.yaml. */
static const http_route routes[] = {
    {"POST", "/v1/sandbox/run", sandbox_run},
    {"GET", "/v1/sandbox/dependencies", deps_list},
    {"GET", "/v1/sandbox/dependencies/refresh", deps_list},
    {"POST", "/v1/sandbox/dependencies/update", deps_update},
};

/* server_stop: cancels the code the runs in flight are running, without answering here; each
 * run answers 503 when its execution ends (a session still being made: when it is up), and
 * deletes its session, while runboxd drains. */
static void dify_stop(void *data)
{
    dify_server *srv = data;
    char err[RB_ERR_LEN];
    srv->stopping = 1;
    for (h2o_linklist_t *l = srv->runs.next; l != &srv->runs; l = l->next) {
        dify_run *r = H2O_STRUCT_FROM_MEMBER(dify_run, link, l);
        json_t *st = NULL;
        if (r->watch != NULL && core_execution_cancel(r->core, r->who, r->request_id, &st, err) != RB_OK)
            rb_debug("dify: execution %s not cancelled: %s", r->request_id, err);
        json_decref(st);
    }
}

/* server_free (the connections have closed, the core is still there): a run whose client went
 * away while its session was being made is detached; that session ends at its idle timeout. */
static void dify_free(void *data)
{
    dify_server *srv = data;
    while (!h2o_linklist_is_empty(&srv->runs))
        run_end(H2O_STRUCT_FROM_MEMBER(dify_run, link, srv->runs.next));
    free(srv);
}

void dify_register(rb_server *s)
{
    dify_server *srv = xcalloc(1, sizeof(*srv));
    h2o_linklist_init_anchor(&srv->runs);
    /* Named "rest": /metrics counts Dify's routes with runbox's own REST API, as AgentRun's. */
    http_protocol p = {.name = "rest",
                       .routes = routes,
                       .nroutes = sizeof(routes) / sizeof(routes[0]),
                       .data = srv,
                       .stop = dify_stop,
                       .free = dify_free,
                       .error_prefix = DIFY_PREFIX,
                       .error_doc = error_doc};
    server_register(s, &p);
}

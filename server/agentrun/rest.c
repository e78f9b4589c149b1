/*
 * rest.c: the REST routes of runboxd's AgentRun-compatible surface under /agentrun
 * (server/agentrun/agentrun_internal.h; the shapes are agentrun.c's): what AgentRunAPIClient of
 * AgentRun+ calls, answered as AgentRun's FastAPI server answers, errors with FastAPI's "detail"
 * (which the client reads) beside runbox's error object. Sessions are runbox sessions, shared
 * with runbox's own routes and with MCP.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/codec.h"
#include "server/agentrun/agentrun_internal.h"
#include "server/rest/multipart.h"
#include "server/transfer.h"

/* ---- answers ---------------------------------------------------------------------------- */

/* Answers core's error e in FastAPI's shape, with runbox's error object beside it. */
static void ar_error(h2o_req_t *req, rb_err e, const char *msg)
{
    if (e == RB_OK)
        e = RB_EINTERNAL;
    const char *text = msg && msg[0] ? msg : rb_strerror(e);
    json_t *doc = agentrun__error_doc(rb_strerror(e), text);
    http_send_json(req, http_status_of(e), doc);
    json_decref(doc);
}

/* Answers out (stolen) with status, or the error. */
static int ar_answer(h2o_req_t *req, rb_err e, const char *msg, json_t *out, int status)
{
    if (e != RB_OK)
        ar_error(req, e, msg);
    else
        http_send_json(req, status, out);
    json_decref(out);
    return 0;
}

/* A pending call answered with a document made from core's answer. */
typedef json_t *(*ar_shape_fn)(json_t *body);

typedef struct ar_ctx {
    h2o_req_t *req;
    core_op *op;
    agentrun_op *create;
    core_watch *watch;
    ar_shape_fn shape;
} ar_ctx;

static void ar_dispose(void *p)
{
    ar_ctx *ctx = p;
    if (ctx->op != NULL)
        core_cancel(ctx->op);
    if (ctx->create != NULL)
        agentrun__cancel(ctx->create);
    if (ctx->watch != NULL)
        core_watch_stop(ctx->watch);
    memset(ctx, 0, sizeof(*ctx));
}

static ar_ctx *ar_ctx_new(http_call *call, ar_shape_fn shape)
{
    ar_ctx *ctx = h2o_mem_alloc_shared(&call->req->pool, sizeof(*ctx), ar_dispose);
    memset(ctx, 0, sizeof(*ctx));
    ctx->req = call->req;
    ctx->shape = shape;
    return ctx;
}

static void on_core_json(void *data, rb_err e, const char *msg, json_t *body)
{
    ar_ctx *ctx = data;
    ctx->op = NULL;
    ctx->create = NULL;
    if (ctx->req != NULL) {
        json_t *out = e == RB_OK && ctx->shape != NULL ? ctx->shape(body) : json_incref(body);
        ar_answer(ctx->req, e, msg, out, 200);
    }
    json_decref(body);
}

/* http_protocol.error_doc for paths under /agentrun: AgentRun's error document. */
static json_t *error_doc(int status, const char *code, const char *message)
{
    (void)status;
    return agentrun__error_doc(code, message);
}

/* ---- service ---------------------------------------------------------------------------- */

static int service_root(http_call *call)
{
    json_t *doc = json_pack(
        "{s:s, s:s, s:{s:s, s:s}, s:{s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s}}", "service",
        "runbox (AgentRun-compatible API)", "version", RUNBOX_VERSION, "protocols", "REST",
        "AgentRun's REST API under /agentrun (runbox's own REST API is at /)", "MCP",
        "Model Context Protocol server at /agentrun/mcp (AgentRun's tools); runbox's own tools are at /mcp",
        "endpoints", "POST /sessions", "Create a new session", "GET /sessions", "List active sessions",
        "GET /sessions/{session_id}", "Get session information", "DELETE /sessions/{session_id}", "Close a session",
        "POST /sessions/{session_id}/execute", "Execute Python code", "POST /sessions/{session_id}/copy-to",
        "Copy file to session", "POST /sessions/{session_id}/copy-from", "Copy file from session", "GET /packages",
        "Get installed Python packages", "GET /health", "Health check", "GET /", "This document", "MCP /mcp",
        "MCP server endpoint (Streamable HTTP transport)");
    return ar_answer(call->req, RB_OK, NULL, doc, 200);
}

static int service_health(http_call *call)
{
    char err[RB_ERR_LEN];
    json_t *list = NULL;
    rb_err e = core_session_list(call->core, call->who, &list, err);
    if (e != RB_OK)
        return ar_answer(call->req, e, err, NULL, 0);
    json_t *health = core_health(call->core);
    json_t *doc = agentrun__health(health, json_array_size(json_object_get(list, "sessions")));
    json_object_set_new(doc, "protocols", json_pack("[s, s]", "rest", "mcp"));
    json_object_set_new(doc, "version", json_string(RUNBOX_VERSION));
    json_decref(health);
    json_decref(list);
    return ar_answer(call->req, RB_OK, NULL, doc, 200);
}

static int service_packages(http_call *call)
{
    char err[RB_ERR_LEN];
    ar_ctx *ctx = ar_ctx_new(call, agentrun__packages);
    rb_err e = core_packages(call->core, on_core_json, ctx, &ctx->op, err);
    if (e != RB_OK) {
        ctx->op = NULL;
        return ar_answer(call->req, e, err, NULL, 0);
    }
    return 0;
}

/* ---- sessions ----------------------------------------------------------------------------- */

static int session_create(http_call *call)
{
    char err[RB_ERR_LEN];
    ar_ctx *ctx = ar_ctx_new(call, NULL);
    rb_err e = agentrun__session_create(call->core, call->who, on_core_json, ctx, &ctx->create, err);
    if (e != RB_OK) {
        ctx->create = NULL;
        return ar_answer(call->req, e, err, NULL, 0);
    }
    return 0;
}

static int session_list(http_call *call)
{
    char err[RB_ERR_LEN];
    json_t *list = NULL;
    rb_err e = core_session_list(call->core, call->who, &list, err);
    json_t *out = e == RB_OK ? agentrun__session_ids(list) : NULL;
    json_decref(list);
    return ar_answer(call->req, e, err, out, 200);
}

/* The session's object if it is live; RB_ENOTFOUND (as AgentRun, which forgets closed ones)
 * when it has ended. */
static rb_err live_session(http_call *call, json_t **out, char *err)
{
    rb_err e = core_session_get(call->core, call->who, call->params[0], out, err);
    if (e != RB_OK)
        return e;
    const char *status = json_string_value(json_object_get(*out, "status"));
    if (status != NULL && (strcmp(status, "ended") == 0 || strcmp(status, "dead") == 0)) {
        rb_fail(RB_ENOTFOUND, err,
                "no live session with id '%.64s' (it is %s); create one with POST /agentrun/sessions",
                call->params[0], status);
        json_decref(*out);
        *out = NULL;
        return RB_ENOTFOUND;
    }
    return RB_OK;
}

static int session_get(http_call *call)
{
    char err[RB_ERR_LEN];
    json_t *s = NULL;
    rb_err e = live_session(call, &s, err);
    json_t *out = NULL;
    if (e == RB_OK) {
        out = agentrun__session(call->params[0]);
        json_object_set(out, "status", json_object_get(s, "status"));
    }
    json_decref(s);
    return ar_answer(call->req, e, err, out, 200);
}

static int session_delete(http_call *call)
{
    char err[RB_ERR_LEN], text[160];
    json_t *s = NULL;
    rb_err e = core_session_delete(call->core, call->who, call->params[0], &s, err);
    json_decref(s);
    snprintf(text, sizeof(text), "Session %.64s closed successfully", call->params[0]);
    return ar_answer(call->req, e, err, e == RB_OK ? json_pack("{s:s}", "message", text) : NULL, 200);
}

/* ---- executions ------------------------------------------------------------------------- */

static void on_execution_event(void *data, const char *event, json_t *payload)
{
    ar_ctx *ctx = data;
    if (strcmp(event, "done") != 0)
        return;
    ctx->watch = NULL; /* finished: must not be stopped again */
    if (ctx->req != NULL)
        ar_answer(ctx->req, RB_OK, NULL, agentrun__execution(payload), 200);
}

static int execute(http_call *call)
{
    char err[RB_ERR_LEN];
    json_t *body = NULL, *queued = NULL;
    rb_err e = http_read_json(call->req, call->cfg->max_body, 0, &body, err);
    if (e != RB_OK)
        return ar_answer(call->req, e, err, NULL, 0);
    json_t *req = agentrun__execute_request(call->params[0], json_object_get(body, "python_code"),
                                           json_object_get(body, "ignore_dependencies"),
                                           json_object_get(body, "ignore_unsafe_functions"), err);
    json_decref(body);
    if (req == NULL)
        return ar_answer(call->req, RB_EINVAL, err, NULL, 0);
    e = core_execute(call->core, call->who, req, &queued, err);
    json_decref(req);
    if (e != RB_OK)
        return ar_answer(call->req, e, err, NULL, 0);
    const char *id = json_string_value(json_object_get(queued, "request_id"));
    char rid[64];
    snprintf(rid, sizeof(rid), "%s", id ? id : "");
    json_decref(queued);
    ar_ctx *ctx = ar_ctx_new(call, NULL);
    e = core_watch_start(call->core, call->who, rid, 1, on_execution_event, ctx, &ctx->watch, err);
    if (e != RB_OK) {
        ctx->watch = NULL;
        return ar_answer(call->req, e, err, NULL, 0);
    }
    return 0;
}

/* ---- files -------------------------------------------------------------------------------- */

typedef struct copy_form {
    h2o_req_t *req;
    const char *name;
    const char *data;
    size_t len;
    int files;
} copy_form;

static int on_copy_part(void *data, const multipart_part *p)
{
    copy_form *f = data;
    if (p->filename == NULL || !(p->name_len == 4 && memcmp(p->name, "file", 4) == 0))
        return 0;
    f->files++;
    f->name = http_pool_strdup(f->req, p->filename, p->filename_len);
    if (strlen(f->name) != p->filename_len)
        f->name = "\\"; /* a NUL in the name: refused as a bad name below */
    f->data = p->data;
    f->len = p->len;
    return 0;
}

static json_t *copied(json_t *body)
{
    const char *path = json_string_value(json_object_get(body, "path"));
    const char *name = path != NULL && strrchr(path, '/') != NULL ? strrchr(path, '/') + 1 : (path ? path : "");
    char *msg = xasprintf("File '%s' copied successfully", name);
    char *dest = xasprintf("%s/%s", AGENTRUN_WORKDIR, path ? path : "");
    json_t *out = json_pack("{s:s, s:s}", "message", msg, "destination_path", dest);
    free(msg);
    free(dest);
    return out;
}

static int copy_to(http_call *call)
{
    char err[RB_ERR_LEN];
    h2o_req_t *req = call->req;
    ssize_t ct = h2o_find_header(&req->headers, H2O_TOKEN_CONTENT_TYPE, -1);
    h2o_iovec_t ctype = ct >= 0 ? req->headers.entries[ct].value : h2o_iovec_init(H2O_STRLIT(""));
    char boundary[MULTIPART_BOUNDARY_MAX + 1];
    rb_err e = multipart_boundary(ctype.base, ctype.len, boundary, err);
    if (e != RB_OK)
        return ar_answer(req, e,
                         e == RB_EMEDIA ? "send the file as multipart/form-data in a part named 'file'" : err, NULL, 0);
    copy_form f = {.req = req};
    e = multipart_parse(req->entity.base ? req->entity.base : "", req->entity.base ? req->entity.len : 0, boundary,
                        on_copy_part, &f, err);
    if (e != RB_OK)
        return ar_answer(req, e, err, NULL, 0);
    if (f.files != 1)
        return ar_answer(req, RB_EINVAL, "send exactly one file, in a multipart part named 'file'", NULL, 0);
    e = agentrun__filename_check(f.name, err);
    if (e != RB_OK)
        return ar_answer(req, e, err, NULL, 0);
    char *path = xasprintf("src/%s", f.name);
    ar_ctx *ctx = ar_ctx_new(call, copied);
    e = core_file_upload(call->core, call->who, call->params[0], path, f.data, f.len, on_core_json, ctx, &ctx->op, err);
    free(path);
    if (e != RB_OK) {
        ctx->op = NULL;
        return ar_answer(req, e, err, NULL, 0);
    }
    return 0;
}

/* data: the name to answer with, or NULL. */
static void on_copied_from(void *data, h2o_req_t *req, rb_err e, const char *msg, const core_file *file)
{
    const char *filename = data;
    http_send_download(req, e, msg, file, "application/octet-stream", filename && filename[0] ? filename : NULL,
                       ar_error);
}

static int copy_from(http_call *call)
{
    char err[RB_ERR_LEN];
    json_t *body = NULL;
    rb_err e = http_read_json(call->req, call->cfg->max_body, 0, &body, err);
    if (e != RB_OK)
        return ar_answer(call->req, e, err, NULL, 0);
    json_t *src = json_object_get(body, "src_path"), *name = json_object_get(body, "filename");
    if (!json_is_string(src) || strlen(json_string_value(src)) != json_string_length(src) ||
        (name != NULL && !json_is_null(name) && !json_is_string(name))) {
        json_decref(body);
        return ar_answer(call->req, RB_EINVAL,
                         "send {\"src_path\": \"artifacts/out.csv\", \"filename\": \"out.csv\"}: src_path (a path "
                         "relative to /workspace, without NUL) and filename are strings",
                         NULL, 0);
    }
    e = agentrun__src_path_check(json_string_value(src), err);
    if (e != RB_OK) {
        json_decref(body);
        return ar_answer(call->req, e, err, NULL, 0);
    }
    const char *filename = NULL;
    if (json_is_string(name))
        filename = http_pool_strdup(call->req, json_string_value(name), strlen(json_string_value(name)));
    e = http_download(call->req, call->core, call->who, call->params[0], json_string_value(src), 0, on_copied_from,
                      (void *)filename, err);
    json_decref(body);
    if (e != RB_OK)
        return ar_answer(call->req, e, err, NULL, 0);
    return 0;
}

static const http_route routes[] = {
    {"GET", "/agentrun/", service_root},
    {"GET", "/agentrun/health", service_health},
    {"GET", "/agentrun/packages", service_packages},
    {"POST", "/agentrun/sessions", session_create},
    {"GET", "/agentrun/sessions", session_list},
    {"GET", "/agentrun/sessions/{id}", session_get},
    {"DELETE", "/agentrun/sessions/{id}", session_delete},
    {"POST", "/agentrun/sessions/{id}/execute", execute},
    {"POST", "/agentrun/sessions/{id}/copy-to", copy_to},
    {"POST", "/agentrun/sessions/{id}/copy-from", copy_from},
};

void agentrun__rest_register(rb_server *s)
{
    /* Named "rest": /metrics counts these routes with runbox's own REST API. Errors h2o raises
     * itself under /agentrun (401 without an API key, 403 Origin, 413, ...), /agentrun/mcp
     * included, carry FastAPI's "detail" too. */
    http_protocol p = {.name = "rest",
                       .routes = routes,
                       .nroutes = sizeof(routes) / sizeof(routes[0]),
                       .error_prefix = "/agentrun",
                       .error_doc = error_doc};
    server_register(s, &p);
}

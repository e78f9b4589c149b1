/*
 * rest.c: REST handlers (server/rest/rest.h). Each handler parses, calls core/, encodes. Work that
 * outlives a call (session creation, wait=true, event streams) keeps a small context in
 * req->pool; a pool dispose hook detaches it from core (core_cancel / core_watch_stop) when
 * the request goes away first, so no core callback ever touches a dead request.
 */
#include "server/rest/rest.h"

#include <stdlib.h>
#include <string.h>

#include "base/codec.h"
#include "server/query.h"
#include "server/rest/multipart.h"
#include "server/rest/rest_audit.h"
#include "server/rest/rest_contexts.h"
#include "server/rest/rest_volumes.h"
#include "server/transfer.h"
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
    e = core_session_create(call->core, call->who, opts, on_created, ctx, &ctx->op, err);
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
    rb_err e = core_session_list(call->core, call->who, &out, err);
    return answer(call, e, err, out, 200);
}

static int session_get(http_call *call)
{
    char err[RB_ERR_LEN];
    json_t *out = NULL;
    rb_err e = core_session_get(call->core, call->who, call->params[0], &out, err);
    return answer(call, e, err, out, 200);
}

/* GET /sessions/{id}/metrics: the session's usage samples (core/core.h, "Usage"). */
static int session_metrics(http_call *call)
{
    char err[RB_ERR_LEN];
    json_t *out = NULL;
    rb_err e = core_session_metrics(call->core, call->who, call->params[0], 0, 0, &out, err);
    return answer(call, e, err, out, 200);
}

static int session_delete(http_call *call)
{
    char err[RB_ERR_LEN];
    json_t *out = NULL;
    rb_err e = core_session_delete(call->core, call->who, call->params[0], &out, err);
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
    e = core_execute(call->core, call->who, req, &out, err);
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
    e = core_watch_start(call->core, call->who, id, 1, on_wait_event, ctx, &ctx->watch, err);
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
    rb_err e = core_execution_status(call->core, call->who, call->params[0], &out, err);
    return answer(call, e, err, out, 200);
}

static int execution_results(http_call *call)
{
    char err[RB_ERR_LEN];
    json_t *out = NULL;
    rb_err e = core_execution_results(call->core, call->who, call->params[0], &out, err);
    return answer(call, e, err, out, 200);
}

static int execution_cancel(http_call *call)
{
    char err[RB_ERR_LEN];
    json_t *out = NULL;
    rb_err e = core_execution_cancel(call->core, call->who, call->params[0], &out, err);
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
    if (!server_stream_room(call->server, err))
        return answer(call, RB_EBUSY, err, NULL, 0);
    events_ctx *ctx = h2o_mem_alloc_pool(&call->req->pool, sizeof(*ctx));
    ctx->sse = NULL;
    ctx->watch = NULL;
    rb_err e = core_watch_start(call->core, call->who, call->params[0], 1, on_stream_event, ctx, &ctx->watch, err);
    if (e != RB_OK)
        return answer(call, e, err, NULL, 0);
    ctx->sse = sse_start(call->server, call->req, on_stream_closed, ctx);
    char hint[160];
    snprintf(hint, sizeof(hint), "read the whole result with GET /execute/%.64s/results", call->params[0]);
    sse_set_hint(ctx->sse, hint);
    return 0;
}

/* ---- files in a session's /workspace ---------------------------------------------------- */

/* The path parameters are NUL-terminated once decoded: a %00 would silently cut them short, so
 * a query string with a NUL, encoded or raw, is refused (query_holds_nul). */
static int query_has_nul(h2o_req_t *req)
{
    if (req->query_at == SIZE_MAX)
        return 0;
    return query_holds_nul(req->path.base + req->query_at, req->path.len - req->query_at);
}

#define NUL_MSG "path: NUL characters are not allowed in file paths"

/* One upload request may carry several files (multipart): they are written one after another
 * (server/upload.h) and answered together; the first failure answers with its error. */
typedef struct upload_ctx {
    const char *session_id;
    size_t n;
    const char *paths[MULTIPART_MAX_PARTS];
    const char *data[MULTIPART_MAX_PARTS];
    size_t lens[MULTIPART_MAX_PARTS];
} upload_ctx;

static void on_uploaded(void *data, h2o_req_t *req, rb_err e, const char *msg, size_t failed, json_t *done)
{
    upload_ctx *ctx = data;
    char err[RB_ERR_LEN];
    if (e != RB_OK) {
        if (failed != HTTP_UPLOAD_NONE && ctx->n > 1)
            snprintf(err, sizeof(err), "%s: %s", ctx->paths[failed], msg);
        else
            snprintf(err, sizeof(err), "%s", msg);
        http_send_error(req, e, err);
        return;
    }
    json_t *out = json_pack("{s:s, s:O}", "session_id", ctx->session_id, "files", done);
    http_send_json(req, 201, out);
    json_decref(out);
}

typedef struct form {
    upload_ctx *ctx;
    h2o_req_t *req;
    const char *path, *dir; /* form fields */
    const char *names[MULTIPART_MAX_PARTS];
    int bad;
    char err[RB_ERR_LEN];
} form;

static int on_part(void *data, const multipart_part *p)
{
    form *f = data;
    if (p->filename == NULL) {
        if (((p->name_len == 4 && memcmp(p->name, "path", 4) == 0) ||
             (p->name_len == 3 && memcmp(p->name, "dir", 3) == 0)) &&
            memchr(p->data, '\0', p->len) != NULL) {
            snprintf(f->err, sizeof(f->err), "%s", NUL_MSG);
            f->bad = 1;
            return 1;
        }
        if (p->name_len == 4 && memcmp(p->name, "path", 4) == 0)
            f->path = http_pool_strdup(f->req, p->data, p->len);
        else if (p->name_len == 3 && memcmp(p->name, "dir", 3) == 0)
            f->dir = http_pool_strdup(f->req, p->data, p->len);
        return 0;
    }
    /* Browsers may send a client-side path: keep the last component only. */
    const char *fn = p->filename;
    size_t n = p->filename_len;
    for (size_t i = n; i > 0; i--) {
        if (p->filename[i - 1] == '/' || p->filename[i - 1] == '\\') {
            fn = p->filename + i;
            n = p->filename_len - i;
            break;
        }
    }
    if (n == 0 || (n == 1 && fn[0] == '.') || (n == 2 && fn[0] == '.' && fn[1] == '.') || memchr(fn, '"', n) ||
        memchr(fn, '\0', n)) {
        snprintf(f->err, sizeof(f->err), "the multipart file name '%.*s' is not a usable file name",
                 (int)(p->filename_len > 200 ? 200 : p->filename_len), p->filename);
        f->bad = 1;
        return 1;
    }
    upload_ctx *ctx = f->ctx;
    f->names[ctx->n] = http_pool_strdup(f->req, fn, n);
    ctx->data[ctx->n] = p->data;
    ctx->lens[ctx->n] = p->len;
    ctx->n++;
    return 0;
}

/* Whether text, a path or dir the caller gave (as a query parameter or a form field, used or
 * not), is one openapi.yaml's pattern takes: what the files API reads as a path (core_file_path:
 * no raw control characters, escapes well formed, names of at most CORE_NAME_MAX_BYTES bytes),
 * at most max characters in all as openapi.yaml's maxLength counts the JSON string, an escape as
 * its four (core_file_path counts it as one) (CORE_PATH_MAX_CHARS for a path,
 * which must not be empty; CORE_DIR_MAX_CHARS for a dir). Where it leads (403) is core's to
 * say when the path is used. Otherwise err says why. */
static int path_text_ok(const char *field, const char *text, size_t max, char *err)
{
    if (text[0] == '\0') {
        if (max == CORE_PATH_MAX_CHARS)
            snprintf(err, RB_ERR_LEN, "%s: empty; give a path relative to /workspace, e.g. \"data/input.csv\"",
                     field);
        return max != CORE_PATH_MAX_CHARS;
    }
    char *rel = NULL, why[RB_ERR_LEN];
    rb_err e = core_file_path(text, &rel, why);
    free(rel);
    if (e == RB_EINVAL) {
        const char *rest = strncmp(why, "path: ", 6) == 0 ? why + 6 : why;
        snprintf(err, RB_ERR_LEN, "%s: %.400s", field, rest);
        return 0;
    }
    /* characters as the JSON string has them (openapi.yaml's maxLength): a "\\xNN" of the name
     * form (docs/files.md) is four of them here, one byte on disk */
    size_t chars = 0;
    for (const char *p = text; *p; p++)
        if ((*p & 0xc0) != 0x80)
            chars++;
    if (chars > max) {
        snprintf(err, RB_ERR_LEN, "%s: longer than %zu characters", field, max);
        return 0;
    }
    return 1;
}

static int file_upload(http_call *call)
{
    char err[RB_ERR_LEN];
    h2o_req_t *req = call->req;
    upload_ctx *ctx = h2o_mem_alloc_pool(&req->pool, sizeof(*ctx));
    memset(ctx, 0, sizeof(*ctx));
    ctx->session_id = call->params[0];
    if (query_has_nul(req))
        return answer(call, RB_EINVAL, NUL_MSG, NULL, 0);
    const char *qpath = http_query_param(req, "path"), *qdir = http_query_param(req, "dir");
    if ((qpath != NULL && !path_text_ok("path", qpath, CORE_PATH_MAX_CHARS, err)) ||
        (qdir != NULL && !path_text_ok("dir", qdir, CORE_DIR_MAX_CHARS, err)))
        return answer(call, RB_EINVAL, err, NULL, 0);
    const char *body = req->entity.base != NULL ? req->entity.base : "";
    size_t len = req->entity.base != NULL ? req->entity.len : 0;

    ssize_t ct = h2o_find_header(&req->headers, H2O_TOKEN_CONTENT_TYPE, -1);
    h2o_iovec_t ctype = ct >= 0 ? req->headers.entries[ct].value : h2o_iovec_init(H2O_STRLIT(""));
    int is_multipart = ctype.len >= 10 && h2o_memis(ctype.base, 10, H2O_STRLIT("multipart/"));
    if (!is_multipart) {
        /* raw body: the bytes of one file, named by ?path= */
        if (qpath == NULL)
            return answer(call, RB_EINVAL,
                          "path: required as a query parameter for a raw upload (POST /sessions/{id}/files?path=data.csv "
                          "with the file as the body), or send multipart/form-data",
                          NULL, 0);
        ctx->paths[0] = qpath;
        ctx->data[0] = body;
        ctx->lens[0] = len;
        ctx->n = 1;
    } else {
        char boundary[MULTIPART_BOUNDARY_MAX + 1];
        rb_err e = multipart_boundary(ctype.base, ctype.len, boundary, err);
        if (e != RB_OK)
            return answer(call, e, err, NULL, 0);
        form f;
        memset(&f, 0, sizeof(f));
        f.ctx = ctx;
        f.req = req;
        e = multipart_parse(body, len, boundary, on_part, &f, err);
        if (e != RB_OK)
            return answer(call, e, err, NULL, 0);
        if (f.bad)
            return answer(call, RB_EINVAL, f.err, NULL, 0);
        if (ctx->n == 0)
            return answer(call, RB_EINVAL, "the multipart body has no file part (a part with a filename)", NULL, 0);
        if ((f.path != NULL && !path_text_ok("path", f.path, CORE_PATH_MAX_CHARS, err)) ||
            (f.dir != NULL && !path_text_ok("dir", f.dir, CORE_DIR_MAX_CHARS, err)))
            return answer(call, RB_EINVAL, err, NULL, 0);
        const char *path = qpath ? qpath : f.path, *dir = qdir ? qdir : f.dir;
        if (path != NULL && ctx->n > 1)
            return answer(call, RB_EINVAL, "path: names one file, but the body has several; use dir instead", NULL,
                          0);
        for (size_t i = 0; i < ctx->n; i++) {
            if (path != NULL) {
                ctx->paths[i] = path;
            } else if (dir != NULL && dir[0] != '\0') {
                size_t dl = strlen(dir), nl = strlen(f.names[i]);
                char *p = h2o_mem_alloc_pool(&req->pool, dl + nl + 2);
                memcpy(p, dir, dl);
                p[dl] = '/';
                memcpy(p + dl + 1, f.names[i], nl + 1);
                ctx->paths[i] = p;
            } else {
                ctx->paths[i] = f.names[i];
            }
        }
    }
    rb_err e = http_upload_files(req, call->core, call->who, ctx->session_id, ctx->n, ctx->paths, ctx->data, ctx->lens,
                                 on_uploaded, ctx, err);
    if (e != RB_OK)
        return answer(call, e, err, NULL, 0);
    return 0;
}

/* A pending core call answered with JSON (list, delete, packages, install). */
typedef struct json_ctx {
    h2o_req_t *req;
    core_op *op;
    int status;
} json_ctx;

static void json_dispose(void *p)
{
    json_ctx *ctx = p;
    if (ctx->op != NULL)
        core_cancel(ctx->op);
    ctx->op = NULL;
    ctx->req = NULL;
}

static void on_json(void *data, rb_err e, const char *msg, json_t *body)
{
    json_ctx *ctx = data;
    ctx->op = NULL;
    if (ctx->req != NULL) {
        if (e != RB_OK)
            http_send_error(ctx->req, e, msg);
        else
            http_send_json(ctx->req, ctx->status, body);
    }
    json_decref(body);
}

static json_ctx *json_ctx_new(http_call *call, int status)
{
    json_ctx *ctx = h2o_mem_alloc_shared(&call->req->pool, sizeof(*ctx), json_dispose);
    ctx->req = call->req;
    ctx->op = NULL;
    ctx->status = status;
    return ctx;
}

static int file_list(http_call *call)
{
    char err[RB_ERR_LEN];
    json_ctx *ctx = json_ctx_new(call, 200);
    rb_err e = core_file_list(call->core, call->who, call->params[0], on_json, ctx, &ctx->op, err);
    if (e != RB_OK) {
        ctx->op = NULL;
        return answer(call, e, err, NULL, 0);
    }
    return 0;
}

static int file_delete(http_call *call)
{
    char err[RB_ERR_LEN];
    if (query_has_nul(call->req))
        return answer(call, RB_EINVAL, NUL_MSG, NULL, 0);
    const char *path = http_query_param(call->req, "path");
    if (path == NULL)
        return answer(call, RB_EINVAL, "path: required as a query parameter (DELETE /sessions/{id}/files?path=x.csv)",
                      NULL, 0);
    json_ctx *ctx = json_ctx_new(call, 200);
    rb_err e = core_file_delete(call->core, call->who, call->params[0], path, on_json, ctx, &ctx->op, err);
    if (e != RB_OK) {
        ctx->op = NULL;
        return answer(call, e, err, NULL, 0);
    }
    return 0;
}

/* A download: the file is sent from where it lies (server/transfer.h holds it until the
 * response is done). */
static void on_downloaded(void *data, h2o_req_t *req, rb_err e, const char *msg, const core_file *file)
{
    (void)data;
    http_send_download(req, e, msg, file, NULL, NULL, http_send_error);
}

static int file_download(http_call *call)
{
    char err[RB_ERR_LEN];
    if (query_has_nul(call->req))
        return answer(call, RB_EINVAL, NUL_MSG, NULL, 0);
    const char *path = http_query_param(call->req, "path");
    if (path == NULL)
        return answer(call, RB_EINVAL,
                      "path: required as a query parameter (GET /sessions/{id}/files/download?path=out/plot.png)",
                      NULL, 0);
    rb_err e = http_download(call->req, call->core, call->who, call->params[0], path, 0, on_downloaded, NULL, err);
    if (e != RB_OK)
        return answer(call, e, err, NULL, 0);
    return 0;
}

/* ---- dependencies and packages --------------------------------------------------------- */

/* A core call on the session of the path with the request's JSON body, answered 200 with what
 * it gives (dependencies, network). */
typedef rb_err (*session_body_fn)(rb_core *c, const core_caller *who, const char *session_id, json_t *body,
                                  core_cb cb, void *data, core_op **handle, char *err);

static int session_body_call(http_call *call, session_body_fn fn)
{
    char err[RB_ERR_LEN];
    json_t *body = NULL;
    /* pause, resume and fork take an empty body too (core.h says what each takes) */
    int empty_ok = fn == core_session_pause || fn == core_session_resume || fn == core_session_fork;
    rb_err e = http_read_json(call->req, call->cfg->max_body, empty_ok, &body, err);
    if (e != RB_OK)
        return answer(call, e, err, NULL, 0);
    json_ctx *ctx = json_ctx_new(call, fn == core_session_fork ? 201 : 200); /* a fork makes a session */
    e = fn(call->core, call->who, call->params[0], body, on_json, ctx, &ctx->op, err);
    json_decref(body);
    if (e != RB_OK) {
        ctx->op = NULL;
        return answer(call, e, err, NULL, 0);
    }
    return 0;
}

static int dependencies_install(http_call *call)
{
    return session_body_call(call, core_dependencies_install);
}

static int session_network(http_call *call)
{
    return session_body_call(call, core_session_network);
}

static int session_pause(http_call *call)
{
    return session_body_call(call, core_session_pause);
}

static int session_resume(http_call *call)
{
    return session_body_call(call, core_session_resume);
}

static int session_fork(http_call *call)
{
    return session_body_call(call, core_session_fork);
}

static int packages(http_call *call)
{
    char err[RB_ERR_LEN];
    json_ctx *ctx = json_ctx_new(call, 200);
    rb_err e = core_packages(call->core, on_json, ctx, &ctx->op, err);
    if (e != RB_OK) {
        ctx->op = NULL;
        return answer(call, e, err, NULL, 0);
    }
    return 0;
}

/* ---- the web-page reader -------------------------------------------------------------- */

static int page_text(http_call *call)
{
    char err[RB_ERR_LEN];
    json_t *body = NULL;
    rb_err e = http_read_json(call->req, call->cfg->max_body, 0, &body, err);
    if (e != RB_OK)
        return answer(call, e, err, NULL, 0);
    json_ctx *ctx = json_ctx_new(call, 200);
    e = core_page_text(call->core, body, on_json, ctx, &ctx->op, err);
    json_decref(body);
    if (e != RB_OK) {
        ctx->op = NULL;
        return answer(call, e, err, NULL, 0);
    }
    return 0;
}

/* ---- engines -------------------------------------------------------------------------- */

static int engine_drain(http_call *call)
{
    char err[RB_ERR_LEN];
    json_t *out = NULL;
    int on = h2o_memis(call->req->method.base, call->req->method.len, H2O_STRLIT("POST")); /* DELETE: undo */
    if (!http_require_admin(call, on ? "drain an engine" : "undo an engine's drain"))
        return 0;
    rb_err e = core_engine_drain(call->core, call->params[0], on, &out, err);
    if (e != RB_OK)
        return answer(call, e, err, NULL, 0);
    return answer(call, RB_OK, NULL, out, 200);
}

/* GET /sessions/{id}/executions?limit=N: the session's history, oldest first. */
static int session_executions(http_call *call)
{
    char err[RB_ERR_LEN];
    json_t *out = NULL;
    const char *l = http_query_param(call->req, "limit");
    int64_t limit = 0;
    if (l != NULL && (!query_whole(l, 500, &limit) || limit < 1))
        return answer(call, RB_EINVAL, "'limit' is a whole number from 1 to 500", NULL, 0);
    rb_err e = core_session_executions(call->core, call->who, call->params[0], (int)limit, &out, err);
    return answer(call, e, err, out, 200);
}

/* POST /keys/reload: the keys file read again, as SIGHUP does (server/auth.h). */
static int keys_reload(http_call *call)
{
    char err[RB_ERR_LEN];
    size_t n = 0;
    if (!http_require_admin(call, "reload the keys"))
        return 0;
    rb_err e = server_reload_keys(call->server, &n, err);
    if (e != RB_OK)
        return answer(call, e, err, NULL, 0);
    rb_info("api keys reloaded by %s: %zu keys enabled", call->who ? call->who->owner : "the trusted caller", n);
    return answer(call, RB_OK, NULL, json_pack("{s:I}", "keys", (json_int_t)n), 200);
}

/* ---- health --------------------------------------------------------------------------- */

static int health(http_call *call)
{
    json_t *out = core_health(call->core);
    if (out == NULL)
        return answer(call, RB_EINTERNAL, "health is not available", NULL, 0);
    return answer(call, RB_OK, NULL, out, 200);
}

/* ---- code policy ---------------------------------------------------------------------- */

static int code_policy(http_call *call)
{
    json_t *out = core_policy(call->core);
    if (out == NULL)
        return answer(call, RB_EINTERNAL, "the code policy is not available", NULL, 0);
    return answer(call, RB_OK, NULL, out, 200);
}

/* ---- shared folders ------------------------------------------------------------------- */

static int shares_list(http_call *call)
{
    return answer(call, RB_OK, NULL, core_shares(call->core, call->who), 200);
}

static const http_route routes[] = {
    {"POST", "/sessions", session_create},
    {"GET", "/sessions", session_list},
    {"GET", "/sessions/{id}", session_get},
    {"DELETE", "/sessions/{id}", session_delete},
    {"GET", "/sessions/{id}/metrics", session_metrics},
    {"GET", "/sessions/{id}/executions", session_executions},
    {"GET", "/sessions/{id}/contexts", rest_contexts_list},
    {"POST", "/sessions/{id}/contexts", rest_context_create},
    {"DELETE", "/sessions/{id}/contexts/{id}", rest_context_delete},
    {"POST", "/execute", execute},
    {"GET", "/execute/{id}/status", execution_status},
    {"GET", "/execute/{id}/results", execution_results},
    {"GET", "/execute/{id}/events", execution_events},
    {"DELETE", "/execute/{id}", execution_cancel},
    {"GET", "/health", health},
    {"GET", "/policy", code_policy},
    {"GET", "/shares", shares_list},
    {"POST", "/volumes", rest_volume_create},
    {"GET", "/volumes", rest_volume_list},
    {"GET", "/volumes/{id}", rest_volume_get},
    {"DELETE", "/volumes/{id}", rest_volume_delete},
    {"POST", "/sessions/{id}/files", file_upload},
    {"PUT", "/sessions/{id}/files", file_upload},
    {"GET", "/sessions/{id}/files", file_list},
    {"DELETE", "/sessions/{id}/files", file_delete},
    {"GET", "/sessions/{id}/files/download", file_download},
    {"POST", "/sessions/{id}/dependencies", dependencies_install},
    {"PUT", "/sessions/{id}/network", session_network},
    {"POST", "/sessions/{id}/pause", session_pause},
    {"POST", "/sessions/{id}/resume", session_resume},
    {"POST", "/sessions/{id}/fork", session_fork},
    {"GET", "/packages", packages},
    {"POST", "/web/page-text", page_text},
    {"POST", "/engines/{id}/drain", engine_drain},
    {"DELETE", "/engines/{id}/drain", engine_drain},
    {"POST", "/keys/reload", keys_reload},
    {"GET", "/audit", rest_audit},
};

void rest_register(rb_server *s)
{
    http_protocol p = {.name = "rest", .routes = routes, .nroutes = sizeof(routes) / sizeof(routes[0])};
    server_register(s, &p);
}

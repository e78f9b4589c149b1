/*
 * e2b_envd.c: envd's HTTP side on a runbox session (E2B's port 49983): GET /health, and
 * GET/POST /files, which map /home/user onto the session's /workspace through core's file
 * calls. The Connect RPC paths (/process.Process/..., /filesystem.Filesystem/...) go to
 * e2b_rpc_handle once the sandbox and its access token are checked. A paused sandbox is not
 * running here (health 502) and its files and commands are refused until it is resumed.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/e2b/connect.h"
#include "server/e2b/e2b_internal.h"
#include "server/e2b/e2b_wire.h"
#include "server/query.h"
#include "server/rest/multipart.h"
#include "server/transfer.h"

/* envd's status for a core error: the SDK turns 400, 401, 404, 429, 502 and 507 into its
 * typed exceptions. */
static int envd_status(rb_err e)
{
    switch (e) {
    case RB_ENOTFOUND:
        return 404;
    case RB_EINVAL:
    case RB_EFORBIDDEN:
    case RB_ECONFLICT:
        return 400;
    default:
        return http_status_of(e);
    }
}

/* Whether the sandbox is paused (pausing, suspended or hibernated): 1 with msg saying so. runbox
 * resumes a paused session for an execution (run_code), not for files or commands. */
static int paused(const e2b_sandbox *sbx, char *msg)
{
    char err[RB_ERR_LEN];
    json_t *session = NULL;
    if (core_session_get(sbx->core, NULL, sbx->session_id, &session, err) != RB_OK)
        return 0;
    int p = e2b__state_of(json_string_value(json_object_get(session, "status"))) == E2B_STATE_PAUSED;
    json_decref(session);
    if (p)
        snprintf(msg, RB_ERR_LEN,
                 "sandbox %.64s is paused: Sandbox.connect() resumes it (runboxd resumes a paused sandbox for "
                 "run_code, not for files or commands)",
                 sbx->session_id);
    return p;
}

int e2b__health(http_call *call)
{
    char msg[RB_ERR_LEN];
    e2b_sandbox sbx;
    if (e2b__sandbox_of(call, E2B_READS, &sbx) != 0)
        return 0;
    /* A paused sandbox does not run: 502, as E2B's proxy answers, which is_running() reads as False. */
    if (paused(&sbx, msg)) {
        e2b__sandbox_error(call->req, 502, msg);
        return 0;
    }
    http_send_no_content(call->req);
    return 0;
}

/* The RPCs that only read the sandbox; every other one runs something or changes files. */
static int rpc_reads(const char *method)
{
    static const char *const reads[] = {"filesystem.Filesystem/Stat", "filesystem.Filesystem/ListDir",
                                        "process.Process/List", NULL};
    for (size_t i = 0; reads[i] != NULL; i++)
        if (strcmp(method, reads[i]) == 0)
            return 1;
    return 0;
}

int e2b__rpc(http_call *call)
{
    char msg[RB_ERR_LEN];
    e2b_sandbox sbx;
    h2o_iovec_t p = call->req->path_normalized;
    size_t np = strlen(E2B_PREFIX) + 1;
    const char *method = http_pool_strdup(call->req, p.base + np, p.len - np);
    if (e2b__sandbox_of(call, rpc_reads(method) ? E2B_READS : E2B_CHANGES, &sbx) != 0)
        return 0;
    if (paused(&sbx, msg)) { /* a Connect error, before any stream has started */
        json_t *doc = json_pack("{s:s, s:s}", "code", "failed_precondition", "message", msg);
        http_send_json(call->req, connect_http_status("failed_precondition"), doc);
        json_decref(doc);
        return 0;
    }
    return e2b_rpc_handle(call->req, &sbx, method);
}

/* The path query parameter, mapped (pool memory), or NULL after answering 400. */
static const char *query_path(http_call *call, int required)
{
    char err[RB_ERR_LEN];
    h2o_req_t *req = call->req;
    if (req->query_at != SIZE_MAX && query_holds_nul(req->path.base + req->query_at, req->path.len - req->query_at)) {
        e2b__sandbox_error(req, 400, "path: NUL characters are not allowed in file paths");
        return NULL;
    }
    const char *path = http_query_param(req, "path");
    if (path == NULL) {
        if (required)
            e2b__sandbox_error(req, 400, "path: required (a file under " E2B_HOME ")");
        return NULL;
    }
    const char *mapped = e2b__path(path, err);
    if (mapped == NULL)
        e2b__sandbox_error(req, 400, err);
    return mapped;
}

/* ---- download ------------------------------------------------------------------------------- */

/* The bytes alone (h2o copies them), as envd answers a read. */
static void on_read(void *data, h2o_req_t *req, rb_err e, const char *msg, const core_file *file)
{
    (void)data;
    if (e != RB_OK) {
        e2b__sandbox_error(req, envd_status(e), msg);
        return;
    }
    req->res.status = 200;
    req->res.reason = "OK";
    req->res.content_length = file->len;
    h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_CONTENT_TYPE, NULL, H2O_STRLIT("application/octet-stream"));
    h2o_send_inline(req, file->bytes, file->len);
}

int e2b__files_read(http_call *call)
{
    char err[RB_ERR_LEN];
    e2b_sandbox sbx;
    if (e2b__sandbox_of(call, E2B_READS, &sbx) != 0)
        return 0;
    if (paused(&sbx, err)) {
        e2b__sandbox_error(call->req, 400, err);
        return 0;
    }
    const char *path = query_path(call, 1);
    if (path == NULL)
        return 0;
    rb_err e = http_download(call->req, call->core, sbx.who, sbx.session_id, path, 0, on_read, NULL, err);
    if (e != RB_OK)
        e2b__sandbox_error(call->req, envd_status(e), err);
    return 0;
}

/* ---- upload --------------------------------------------------------------------------------- */

typedef struct write_ctx {
    h2o_req_t *req;
    e2b_sandbox sbx;
    size_t n;
    const char *paths[MULTIPART_MAX_PARTS]; /* as the caller named them */
    const char *mapped[MULTIPART_MAX_PARTS];
    const char *data[MULTIPART_MAX_PARTS];
    size_t lens[MULTIPART_MAX_PARTS];
    int bad;
    char err[RB_ERR_LEN];
} write_ctx;

/* The E2B path of an upload: absolute under /home/user. */
static json_t *write_info(const char *given)
{
    char *abs = given[0] == '/' ? xstrdup(given) : xasprintf("%s/%s", E2B_HOME, given);
    const char *slash = strrchr(abs, '/');
    json_t *o = json_pack("{s:s, s:s, s:s}", "name", slash ? slash + 1 : abs, "type", "file", "path", abs);
    free(abs);
    return o;
}

static void on_written(void *data, h2o_req_t *req, rb_err e, const char *msg, size_t failed, json_t *done)
{
    write_ctx *ctx = data;
    char err[RB_ERR_LEN];
    (void)done; /* E2B answers with the paths as the caller named them */
    if (e != RB_OK) {
        if (failed != HTTP_UPLOAD_NONE) {
            snprintf(err, sizeof(err), "%.300s: %s", ctx->paths[failed], msg);
            msg = err;
        }
        e2b__sandbox_error(req, envd_status(e), msg);
        return;
    }
    json_t *out = json_array();
    for (size_t i = 0; i < ctx->n; i++)
        json_array_append_new(out, write_info(ctx->paths[i]));
    http_send_json(req, 200, out);
    json_decref(out);
}

static int on_part(void *data, const multipart_part *p)
{
    write_ctx *ctx = data;
    if (!(p->name_len == 4 && memcmp(p->name, "file", 4) == 0))
        return 0;
    if (p->filename == NULL || p->filename_len == 0 || memchr(p->filename, '\0', p->filename_len) != NULL) {
        snprintf(ctx->err, sizeof(ctx->err), "each part named \"file\" needs a filename: the file's path");
        ctx->bad = 1;
        return 1;
    }
    ctx->paths[ctx->n] = http_pool_strdup(ctx->req, p->filename, p->filename_len);
    ctx->data[ctx->n] = p->data;
    ctx->lens[ctx->n] = p->len;
    ctx->n++;
    return 0;
}

int e2b__files_write(http_call *call)
{
    char err[RB_ERR_LEN];
    h2o_req_t *req = call->req;
    write_ctx *ctx = h2o_mem_alloc_pool(&req->pool, sizeof(*ctx));
    memset(ctx, 0, sizeof(*ctx));
    ctx->req = req;
    if (e2b__sandbox_of(call, E2B_CHANGES, &ctx->sbx) != 0)
        return 0;
    if (paused(&ctx->sbx, err)) {
        e2b__sandbox_error(req, 400, err);
        return 0;
    }
    const char *qpath = http_query_param(req, "path");
    if (qpath != NULL && query_path(call, 0) == NULL)
        return 0;
    if (h2o_find_header(&req->headers, H2O_TOKEN_CONTENT_ENCODING, -1) >= 0) {
        e2b__sandbox_error(req, 400, "compressed uploads are not supported: send the file uncompressed");
        return 0;
    }
    const char *body = req->entity.base != NULL ? req->entity.base : "";
    size_t len = req->entity.base != NULL ? req->entity.len : 0;
    ssize_t ct = h2o_find_header(&req->headers, H2O_TOKEN_CONTENT_TYPE, -1);
    h2o_iovec_t ctype = ct >= 0 ? req->headers.entries[ct].value : h2o_iovec_init(H2O_STRLIT(""));
    char boundary[MULTIPART_BOUNDARY_MAX + 1];
    rb_err e = multipart_boundary(ctype.base, ctype.len, boundary, err);
    if (e == RB_EMEDIA) {
        /* a raw body: one file, named by ?path= */
        if (qpath == NULL) {
            e2b__sandbox_error(req, 400, "path: required for an upload that is not multipart/form-data");
            return 0;
        }
        ctx->paths[0] = qpath;
        ctx->data[0] = body;
        ctx->lens[0] = len;
        ctx->n = 1;
    } else if (e != RB_OK || (e = multipart_parse(body, len, boundary, on_part, ctx, err)) != RB_OK) {
        e2b__sandbox_error(req, 400, err);
        return 0;
    } else if (ctx->bad || ctx->n == 0) {
        e2b__sandbox_error(req, 400, ctx->bad ? ctx->err : "the multipart body has no part named \"file\"");
        return 0;
    }
    if (qpath != NULL && ctx->n == 1)
        ctx->paths[0] = qpath;
    for (size_t i = 0; i < ctx->n; i++) {
        if ((ctx->mapped[i] = e2b__path(ctx->paths[i], err)) == NULL) {
            e2b__sandbox_error(req, 400, err);
            return 0;
        }
    }
    e = http_upload_files(req, ctx->sbx.core, ctx->sbx.who, ctx->sbx.session_id, ctx->n, ctx->mapped, ctx->data,
                          ctx->lens, on_written, ctx, err);
    if (e != RB_OK)
        e2b__sandbox_error(req, envd_status(e), err);
    return 0;
}

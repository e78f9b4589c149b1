/*
 * transfer.c: downloads held until their response is done, and uploads of several files one
 * after another (server/transfer.h).
 */
#include "server/transfer.h"

#include <string.h>

/* ---- downloads ------------------------------------------------------------------------- */

typedef struct download_ctx {
    h2o_req_t *req; /* NULL once the request is gone */
    core_op *op;
    core_file *file; /* freed with the request, after its bytes are sent */
    http_download_cb cb;
    void *cbdata;
} download_ctx;

static void download_dispose(void *p)
{
    download_ctx *ctx = p;
    if (ctx->op != NULL)
        core_cancel(ctx->op);
    ctx->op = NULL;
    ctx->req = NULL;
    core_file_free(ctx->file);
    ctx->file = NULL;
}

static void on_downloaded(void *data, rb_err e, const char *msg, core_file *file)
{
    download_ctx *ctx = data;
    ctx->op = NULL;
    if (ctx->req == NULL) {
        core_file_free(file);
        return;
    }
    ctx->file = file;
    ctx->cb(ctx->cbdata, ctx->req, e, msg, e == RB_OK ? file : NULL);
}

rb_err http_download(h2o_req_t *req, rb_core *core, const core_caller *who, const char *session_id, const char *path,
                     size_t max, http_download_cb cb, void *cbdata, char *err)
{
    download_ctx *ctx = h2o_mem_alloc_shared(&req->pool, sizeof(*ctx), download_dispose);
    memset(ctx, 0, sizeof(*ctx));
    ctx->req = req;
    ctx->cb = cb;
    ctx->cbdata = cbdata;
    rb_err e = core_file_download(core, who, session_id, path, max, on_downloaded, ctx, &ctx->op, err);
    if (e != RB_OK)
        ctx->op = NULL;
    return e;
}

/* ---- uploads --------------------------------------------------------------------------- */

typedef struct upload_seq {
    h2o_req_t *req; /* NULL once the request is gone */
    rb_core *core;
    const core_caller *who;
    const char *session_id;
    core_op *op;
    size_t n, next;
    const char *const *paths;
    const char *const *data;
    const size_t *lens;
    json_t *done;
    http_upload_cb cb;
    void *cbdata;
} upload_seq;

static void seq_dispose(void *p)
{
    upload_seq *u = p;
    if (u->op != NULL)
        core_cancel(u->op);
    u->op = NULL;
    u->req = NULL;
    json_decref(u->done);
    u->done = NULL;
}

static void on_uploaded(void *data, rb_err e, const char *msg, json_t *body);

static rb_err upload_next(upload_seq *u, char *err)
{
    size_t i = u->next;
    return core_file_upload(u->core, u->who, u->session_id, u->paths[i], u->data[i], u->lens[i], on_uploaded, u,
                            &u->op, err);
}

static void on_uploaded(void *data, rb_err e, const char *msg, json_t *body)
{
    upload_seq *u = data;
    char err[RB_ERR_LEN];
    u->op = NULL;
    if (u->req == NULL) {
        json_decref(body);
        return;
    }
    if (e != RB_OK) {
        json_decref(body);
        u->cb(u->cbdata, u->req, e, msg, u->next, NULL);
        return;
    }
    json_array_append_new(u->done, body);
    if (++u->next < u->n) {
        e = upload_next(u, err);
        if (e != RB_OK) {
            u->op = NULL;
            u->cb(u->cbdata, u->req, e, err, HTTP_UPLOAD_NONE, NULL);
        }
        return;
    }
    u->cb(u->cbdata, u->req, RB_OK, NULL, HTTP_UPLOAD_NONE, u->done);
}

rb_err http_upload_files(h2o_req_t *req, rb_core *core, const core_caller *who, const char *session_id, size_t n,
                         const char *const *paths, const char *const *data, const size_t *lens, http_upload_cb cb,
                         void *cbdata, char *err)
{
    upload_seq *u = h2o_mem_alloc_shared(&req->pool, sizeof(*u), seq_dispose);
    memset(u, 0, sizeof(*u));
    u->req = req;
    u->core = core;
    u->who = who;
    u->session_id = session_id;
    u->n = n;
    u->paths = paths;
    u->data = data;
    u->lens = lens;
    u->done = json_array();
    u->cb = cb;
    u->cbdata = cbdata;
    rb_err e = upload_next(u, err);
    if (e != RB_OK)
        u->op = NULL;
    return e;
}

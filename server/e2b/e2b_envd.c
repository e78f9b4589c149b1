/*
 * e2b_envd.c: envd's HTTP side on a runbox session (E2B's port 49983): GET /health, and
 * GET/POST /files, which map /home/user onto the session's /workspace through core's file
 * calls. The Connect RPC paths (/process.Process/..., /filesystem.Filesystem/...) go to
 * e2b_rpc_handle once the sandbox and its access token are checked. A paused sandbox is not
 * running here (health 502) and its files and commands are refused until it is resumed.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/clock.h"
#include "base/gzip.h"
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

/* Whether path names a place outside /home/user that core_sandbox_fs reaches (an absolute path,
 * or one from ~): those are read and written as the sandbox's user through core_sandbox_read and
 * a move, the rest through the files API on the workspace. */
static int elsewhere(const char *path)
{
    if (path == NULL || path[0] == '\0')
        return 0;
    if (e2b_path_map(path) == NULL)
        return 1;
    /* a '..' may lead out of /home/user: read as the sandbox reads it, not refused */
    for (const char *p = strstr(path, ".."); p != NULL; p = strstr(p + 2, ".."))
        if ((p == path || p[-1] == '/') && (p[2] == '\0' || p[2] == '/'))
            return 1;
    return 0;
}

/* The path query parameter, mapped (pool memory), or NULL after answering 400; a path outside
 * /home/user (elsewhere) comes back as it is. */
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
    if (elsewhere(path))
        return path;
    const char *mapped = e2b__path(path, err);
    if (mapped == NULL)
        e2b__sandbox_error(req, 400, err);
    return mapped;
}

/* ---- download ------------------------------------------------------------------------------- */

/* A read: the request (NULL once gone), the core call in flight, and the path as named. */
typedef struct read_ctx {
    h2o_req_t *req;
    core_op *op;
    e2b_sandbox sbx;
    const char *path;
} read_ctx;

static void read_disposed(void *p)
{
    read_ctx *r = p;
    if (r->op != NULL)
        core_cancel(r->op);
    r->op = NULL;
    r->req = NULL;
}

/* The bytes alone (h2o copies them), as envd answers a read. */
static void send_bytes(h2o_req_t *req, const char *bytes, size_t len)
{
    req->res.status = 200;
    req->res.reason = "OK";
    req->res.content_length = len;
    h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_CONTENT_TYPE, NULL, H2O_STRLIT("application/octet-stream"));
    h2o_send_inline(req, bytes, len);
}

static void on_read_elsewhere(void *data, rb_err e, const char *msg, const char *bytes, size_t len)
{
    read_ctx *r = data;
    r->op = NULL;
    if (e != RB_OK)
        e2b__sandbox_error(r->req, envd_status(e), msg);
    else
        send_bytes(r->req, bytes, len);
}

/* Reads r->path as the sandbox's user wherever it is. */
static void read_elsewhere(read_ctx *r)
{
    char err[RB_ERR_LEN];
    rb_err e = core_sandbox_read(r->sbx.core, r->sbx.who, r->sbx.session_id, r->path, on_read_elsewhere, r, &r->op,
                                 err);
    if (e != RB_OK) {
        r->op = NULL;
        e2b__sandbox_error(r->req, envd_status(e), err);
    }
}

static void on_read(void *data, h2o_req_t *req, rb_err e, const char *msg, const core_file *file)
{
    read_ctx *r = data;
    if (e == RB_EFORBIDDEN && r->req != NULL) { /* through a link out of the workspace: the user may read it there */
        read_elsewhere(r);
        return;
    }
    if (e != RB_OK) {
        e2b__sandbox_error(req, envd_status(e), msg);
        return;
    }
    send_bytes(req, file->bytes, file->len);
}

int e2b__files_read(http_call *call)
{
    char err[RB_ERR_LEN];
    e2b_sandbox sbx;
    if ((e2b__is_signed(call->req) ? e2b__signed_sandbox(call, E2B_READS, &sbx) : e2b__sandbox_of(call, E2B_READS, &sbx)) != 0)
        return 0;
    if (paused(&sbx, err)) {
        e2b__sandbox_error(call->req, 400, err);
        return 0;
    }
    const char *path = query_path(call, 1);
    if (path == NULL)
        return 0;
    read_ctx *r = h2o_mem_alloc_shared(&call->req->pool, sizeof(*r), read_disposed);
    memset(r, 0, sizeof(*r));
    r->req = call->req;
    r->sbx = sbx;
    r->sbx.session_id = http_pool_strdup(call->req, sbx.session_id, strlen(sbx.session_id));
    r->path = http_query_param(call->req, "path");
    if (elsewhere(path)) {
        read_elsewhere(r);
        return 0;
    }
    rb_err e = http_download(call->req, call->core, sbx.who, sbx.session_id, path, 0, on_read, r, err);
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
    const char *final[MULTIPART_MAX_PARTS]; /* a file outside /home/user: where its temporary file goes */
    size_t next;                            /* the next file to move into place */
    core_op *op;                            /* the move in flight */
    int fail_status;                        /* how a failed write is answered once cleaned up */
    json_t *meta;                           /* X-Metadata-* (a new reference, freed with the request), or NULL */
    char *meta_text;                        /* meta as JSON (heap, freed with the request) */
    char *inflated;                         /* a gzip'd body inflated (heap, freed with the request) */
    size_t meta_next;                       /* the next file to set it on */
    int bad;
    char err[RB_ERR_LEN];
} write_ctx;

static void write_disposed(void *p)
{
    write_ctx *ctx = p;
    json_decref(ctx->meta);
    free(ctx->meta_text);
    free(ctx->inflated);
    ctx->inflated = NULL;
    ctx->meta = NULL;
    ctx->meta_text = NULL;
    if (ctx->op != NULL)
        core_cancel(ctx->op);
    ctx->op = NULL;
    ctx->req = NULL;
}

/* The prefix of the temporary name a file for outside /home/user is uploaded under, in the
 * workspace, before the sandbox's user moves it into place. */
#define WRITE_TEMP_PREFIX ".runbox-e2b-"

static void drop_next(write_ctx *ctx);

static void on_dropped(void *data, rb_err e, const char *msg, json_t *body)
{
    write_ctx *ctx = data;
    (void)e;
    (void)msg;
    ctx->op = NULL;
    json_decref(body);
    drop_next(ctx);
}

/* Removes the temporary files of ctx from ctx->next on, one after the other, then answers the
 * error ctx holds (fail_status, err): the caller sees the failure once nothing of it is left. */
static void drop_next(write_ctx *ctx)
{
    char err[RB_ERR_LEN];
    while (ctx->next < ctx->n) {
        size_t i = ctx->next++;
        if (ctx->final[i] == NULL)
            continue;
        char *tmp = xasprintf("%s/%s", E2B_HOME, ctx->mapped[i]);
        rb_err e = core_sandbox_fs(ctx->sbx.core, ctx->sbx.who, ctx->sbx.session_id, CORE_FS_REMOVE, tmp, "", 1,
                                   on_dropped, ctx, &ctx->op, err);
        free(tmp);
        if (e == RB_OK)
            return;
        ctx->op = NULL;
    }
    e2b__sandbox_error(ctx->req, ctx->fail_status, ctx->err);
}

/* Fails the write with status and msg once its temporary files are gone. */
static void drop_temps(write_ctx *ctx, int status, const char *msg)
{
    ctx->fail_status = status;
    snprintf(ctx->err, sizeof(ctx->err), "%s", msg);
    drop_next(ctx);
}

static void answer_written(write_ctx *ctx);
static void move_next(write_ctx *ctx);

static void on_moved(void *data, rb_err e, const char *msg, json_t *body)
{
    write_ctx *ctx = data;
    char err[RB_ERR_LEN];
    ctx->op = NULL;
    json_decref(body);
    if (e != RB_OK) {
        ctx->next--; /* its temporary file is still there too */
        snprintf(err, sizeof(err), "%.300s: %s", ctx->paths[ctx->next], msg);
        drop_temps(ctx, envd_status(e), err);
        return;
    }
    move_next(ctx);
}

/* Moves the next uploaded temporary file to where it was meant to go, or answers when none is
 * left. */
static void move_next(write_ctx *ctx)
{
    char err[RB_ERR_LEN];
    while (ctx->next < ctx->n && ctx->final[ctx->next] == NULL)
        ctx->next++;
    if (ctx->next == ctx->n) {
        answer_written(ctx);
        return;
    }
    size_t i = ctx->next++;
    char *tmp = xasprintf("%s/%s", E2B_HOME, ctx->mapped[i]);
    rb_err e = core_sandbox_fs(ctx->sbx.core, ctx->sbx.who, ctx->sbx.session_id, CORE_FS_MOVE, tmp, ctx->final[i], 1,
                               on_moved, ctx, &ctx->op, err);
    free(tmp);
    if (e != RB_OK) {
        ctx->op = NULL;
        ctx->next--;
        drop_temps(ctx, envd_status(e), err);
    }
}

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
    (void)req; /* ctx->req */
    if (e != RB_OK) {
        if (failed != HTTP_UPLOAD_NONE) {
            snprintf(err, sizeof(err), "%.300s: %s", ctx->paths[failed], msg);
            msg = err;
        }
        drop_temps(ctx, envd_status(e), msg);
        return;
    }
    move_next(ctx);
}

static void meta_next(write_ctx *ctx);

static void on_meta(void *data, rb_err e, const char *msg, json_t *body)
{
    write_ctx *ctx = data;
    char err[RB_ERR_LEN];
    ctx->op = NULL;
    json_decref(body);
    if (e != RB_OK) {
        snprintf(err, sizeof(err), "%.300s was written, but its metadata could not be set: %s",
                 ctx->paths[ctx->meta_next - 1], msg);
        e2b__sandbox_error(ctx->req, envd_status(e), err);
        return;
    }
    meta_next(ctx);
}

/* Sets the request's metadata on the next written file, or answers when none is left: envd's
 * WriteInfo of each file as the caller named it, with the metadata. */
static void meta_next(write_ctx *ctx)
{
    char err[RB_ERR_LEN];
    if (ctx->meta != NULL && ctx->meta_next < ctx->n) {
        size_t i = ctx->meta_next++;
        rb_err e = core_sandbox_fs(ctx->sbx.core, ctx->sbx.who, ctx->sbx.session_id, CORE_FS_META, ctx->paths[i],
                                   ctx->meta_text, 1, on_meta, ctx, &ctx->op, err);
        if (e != RB_OK) {
            ctx->op = NULL;
            e2b__sandbox_error(ctx->req, envd_status(e), err);
        }
        return;
    }
    json_t *out = json_array();
    for (size_t i = 0; i < ctx->n; i++) {
        json_t *o = write_info(ctx->paths[i]);
        if (ctx->meta != NULL)
            json_object_set(o, "metadata", ctx->meta);
        json_array_append_new(out, o);
    }
    http_send_json(ctx->req, 200, out);
    json_decref(out);
}

static void answer_written(write_ctx *ctx)
{
    meta_next(ctx);
}

/* The request's X-Metadata-<key> headers as envd 0.6.2 takes them into ctx->meta ({key: value},
 * keys lowercased; none: NULL): 0, or -1 after answering 400 for a key or value envd refuses. */
static int read_metadata(write_ctx *ctx)
{
    static const char prefix[] = "x-metadata-";
    size_t np = sizeof(prefix) - 1, total = 0;
    h2o_req_t *req = ctx->req;
    for (size_t i = 0; i < req->headers.size; i++) {
        h2o_header_t *h = req->headers.entries + i;
        if (h->name->len <= np || strncasecmp(h->name->base, prefix, np) != 0)
            continue;
        char key[256];
        size_t klen = h->name->len - np;
        const char *bad = NULL;
        if (klen > 255 - strlen("user.e2b."))
            bad = "a metadata key is at most 246 bytes";
        for (size_t k = 0; bad == NULL && k < klen; k++) {
            char c = h->name->base[np + k];
            key[k] = (char)tolower((unsigned char)c);
            if (!(isalnum((unsigned char)c) || strchr("!#$%&'*+-.^_`|~", c) != NULL))
                bad = "metadata keys are HTTP token characters (letters, digits and !#$%&'*+-.^_`|~)";
        }
        for (size_t k = 0; bad == NULL && k < h->value.len; k++)
            if ((unsigned char)h->value.base[k] < 0x20 || (unsigned char)h->value.base[k] > 0x7e)
                bad = "metadata values are printable US-ASCII";
        total += strlen("user.e2b.") + klen + h->value.len;
        if (bad == NULL && total > 4096)
            bad = "a file's metadata is at most 4096 bytes (keys with their user.e2b. prefix, and values)";
        if (bad != NULL) {
            e2b__sandbox_error(req, 400, bad);
            return -1;
        }
        key[klen] = '\0';
        if (ctx->meta == NULL)
            ctx->meta = json_object();
        json_object_set_new(ctx->meta, key, json_stringn(h->value.base, h->value.len));
    }
    if (ctx->meta != NULL)
        ctx->meta_text = json_dumps(ctx->meta, JSON_COMPACT);
    return 0;
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
    write_ctx *ctx = h2o_mem_alloc_shared(&req->pool, sizeof(*ctx), write_disposed);
    memset(ctx, 0, sizeof(*ctx));
    ctx->req = req;
    if ((e2b__is_signed(req) ? e2b__signed_sandbox(call, E2B_CHANGES, &ctx->sbx)
                             : e2b__sandbox_of(call, E2B_CHANGES, &ctx->sbx)) != 0)
        return 0;
    if (paused(&ctx->sbx, err)) {
        e2b__sandbox_error(req, 400, err);
        return 0;
    }
    const char *qpath = http_query_param(req, "path");
    if (qpath != NULL && query_path(call, 0) == NULL)
        return 0;
    if (read_metadata(ctx) != 0)
        return 0;
    const char *body = req->entity.base != NULL ? req->entity.base : "";
    size_t len = req->entity.base != NULL ? req->entity.len : 0;
    rb_err e = RB_OK;
    ssize_t ce = h2o_find_header(&req->headers, H2O_TOKEN_CONTENT_ENCODING, -1);
    if (ce >= 0) { /* envd >= 0.5.7: files.write(gzip=True) sends the file gzip'd */
        h2o_iovec_t enc = req->headers.entries[ce].value;
        if (!h2o_lcstris(enc.base, enc.len, H2O_STRLIT("gzip")) && !h2o_lcstris(enc.base, enc.len, H2O_STRLIT("identity"))) {
            e2b__sandbox_error(req, 400, "Content-Encoding: only gzip (or identity) is taken");
            return 0;
        }
        if (h2o_lcstris(enc.base, enc.len, H2O_STRLIT("gzip"))) {
            e = rb_gunzip(body, len, call->cfg->max_upload, &ctx->inflated, &len, err);
            if (e != RB_OK) {
                e2b__sandbox_error(req, e == RB_ETOOBIG ? 413 : 400, err);
                return 0;
            }
            body = ctx->inflated;
        }
    }
    ssize_t ct = h2o_find_header(&req->headers, H2O_TOKEN_CONTENT_TYPE, -1);
    h2o_iovec_t ctype = ct >= 0 ? req->headers.entries[ct].value : h2o_iovec_init(H2O_STRLIT(""));
    char boundary[MULTIPART_BOUNDARY_MAX + 1];
    e = multipart_boundary(ctype.base, ctype.len, boundary, err);
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
        if (elsewhere(ctx->paths[i])) { /* uploaded beside the home folder, then moved there as the user */
            char name[64];
            rb_random_id(WRITE_TEMP_PREFIX, name, sizeof(name));
            ctx->final[i] = ctx->paths[i];
            ctx->mapped[i] = http_pool_strdup(req, name, strlen(name));
            continue;
        }
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

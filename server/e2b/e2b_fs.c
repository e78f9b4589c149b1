/*
 * e2b_fs.c: envd's filesystem service (Connect unary calls, plain JSON) on a runbox session's
 * files API: Stat, ListDir, MakeDir and Remove under E2B's /home/user, which is the session's
 * workspace (core_file_list, core_file_mkdir, core_file_delete). Entries are envd's EntryInfo
 * with enum names as strings; what the files API does not report (mode, permissions) is left
 * out, the owner is the sandbox user. Paths elsewhere are refused (permission_denied), as the
 * files calls refuse them. Move and the watchers answer `unimplemented` (e2b_rpc.c).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/e2b/e2b_fs.h"

#define FS_REQUEST_MAX (64u * 1024)

enum fs_op { FS_STAT, FS_LIST, FS_MKDIR, FS_REMOVE };

typedef struct fs_call {
    h2o_req_t *req; /* NULL once the request is gone */
    core_op *op;    /* the core call in flight */
    rb_core *core;
    const core_caller *who;
    const char *session_id;
    enum fs_op what;
    const char *rel; /* normalised, relative to the workspace ("" for /home/user itself) */
    unsigned depth;
} fs_call;

static void fs_error(h2o_req_t *req, const char *code, const char *message)
{
    json_t *doc = json_pack("{s:s, s:s?}", "code", code, "message", message);
    if (doc == NULL)
        doc = json_pack("{s:s}", "code", code);
    http_send_json(req, connect_http_status(code), doc);
    json_decref(doc);
}

static void disposed(void *p)
{
    fs_call *f = p;
    if (f->op != NULL)
        core_cancel(f->op);
    f->op = NULL;
    f->req = NULL;
}

/* envd's EntryInfo of a files-API entry ({path relative, type, size, modified, target?}); rel ""
 * with entry NULL is /home/user itself. New reference. */
static json_t *entry_info(const char *rel, json_t *entry)
{
    const char *type = entry != NULL ? json_string_value(json_object_get(entry, "type")) : "directory";
    const char *name = strrchr(rel, '/');
    name = name != NULL ? name + 1 : rel[0] != '\0' ? rel : "user";
    const char *ft = strcmp(type, "file") == 0        ? "FILE_TYPE_FILE"
                     : strcmp(type, "directory") == 0 ? "FILE_TYPE_DIRECTORY"
                     : strcmp(type, "symlink") == 0   ? "FILE_TYPE_SYMLINK"
                                                      : "FILE_TYPE_UNSPECIFIED";
    char *path = xasprintf("%s%s%s", E2B_HOME, rel[0] != '\0' ? "/" : "", rel);
    json_t *e = json_pack("{s:s, s:s, s:s, s:s, s:s}", "name", name, "type", ft, "path", path, "owner", "sandbox",
                          "group", "sandbox");
    free(path);
    if (e == NULL) /* not UTF-8: never from the files API, whose names are in name form */
        e = json_pack("{s:s}", "type", "FILE_TYPE_UNSPECIFIED");
    if (entry != NULL) {
        json_object_set(e, "size", json_object_get(entry, "size"));
        json_object_set(e, "modifiedTime", json_object_get(entry, "modified"));
        if (strcmp(type, "symlink") == 0) {
            json_object_set_new(e, "isSymlink", json_true());
            if (json_is_string(json_object_get(entry, "target")))
                json_object_set(e, "symlinkTarget", json_object_get(entry, "target"));
        }
    }
    return e;
}

/* The entry of rel in a files-API listing, or NULL. */
static json_t *find(json_t *files, const char *rel)
{
    size_t i;
    json_t *e;
    json_array_foreach(files, i, e)
    {
        const char *p = json_string_value(json_object_get(e, "path"));
        if (p != NULL && strcmp(p, rel) == 0)
            return e;
    }
    return NULL;
}

static void answer(fs_call *f, json_t *doc)
{
    http_send_json(f->req, 200, doc);
    json_decref(doc);
}

static void mkdir_done(void *data, rb_err err, const char *msg, json_t *body)
{
    fs_call *f = data;
    f->op = NULL;
    json_decref(body);
    if (err != RB_OK)
        fs_error(f->req, connect_code_of(err), msg);
    else
        answer(f, json_pack("{s:o}", "entry", entry_info(f->rel, NULL)));
}

static void removed(void *data, rb_err err, const char *msg, json_t *body)
{
    fs_call *f = data;
    f->op = NULL;
    json_decref(body);
    if (err != RB_OK)
        fs_error(f->req, connect_code_of(err), msg);
    else
        answer(f, json_object());
}

static void listed(void *data, rb_err err, const char *msg, json_t *body)
{
    fs_call *f = data;
    char text[RB_ERR_LEN];
    f->op = NULL;
    json_t *files = json_object_get(body, "files");
    json_t *entry = f->rel[0] != '\0' ? find(files, f->rel) : NULL;
    const char *type = entry != NULL ? json_string_value(json_object_get(entry, "type")) : "directory";
    int exists = f->rel[0] == '\0' || entry != NULL;
    if (err != RB_OK) {
        fs_error(f->req, connect_code_of(err), msg);
    } else if (f->what == FS_MKDIR) {
        if (exists) {
            snprintf(text, sizeof(text), "%s/%s already exists", E2B_HOME, f->rel);
            fs_error(f->req, "already_exists", text);
        } else {
            rb_err e = core_file_mkdir(f->core, f->who, f->session_id, f->rel, mkdir_done, f, &f->op, text);
            if (e != RB_OK)
                fs_error(f->req, connect_code_of(e), text);
        }
    } else if (!exists) {
        snprintf(text, sizeof(text), "no such file or folder: %s/%s", E2B_HOME, f->rel);
        fs_error(f->req, "not_found", text);
    } else if (f->what == FS_STAT) {
        answer(f, json_pack("{s:o}", "entry", entry_info(f->rel, entry)));
    } else if (strcmp(type, "directory") != 0) {
        snprintf(text, sizeof(text), "%s/%s is not a folder", E2B_HOME, f->rel);
        fs_error(f->req, "invalid_argument", text);
    } else {
        json_t *out = json_array();
        size_t i, plen = strlen(f->rel);
        json_t *e;
        json_array_foreach(files, i, e)
        {
            const char *p = json_string_value(json_object_get(e, "path"));
            if (p == NULL || (plen > 0 && (strncmp(p, f->rel, plen) != 0 || p[plen] != '/')))
                continue;
            unsigned level = 1;
            for (const char *q = p + (plen > 0 ? plen + 1 : 0); *q; q++)
                level += *q == '/';
            if (level <= f->depth)
                json_array_append_new(out, entry_info(p, e));
        }
        answer(f, json_pack("{s:o}", "entries", out));
    }
    json_decref(body);
}

/* The path E2B names, relative to the workspace ("" for /home/user itself), in req->pool; NULL
 * after answering. */
static const char *relative(h2o_req_t *req, json_t *body)
{
    char err[RB_ERR_LEN];
    const char *path = json_string_value(json_object_get(body, "path"));
    const char *mapped = e2b__path(path, err);
    if (mapped == NULL) {
        fs_error(req, path == NULL || path[0] == '\0' ? "invalid_argument" : "permission_denied", err);
        return NULL;
    }
    /* one reading of a path for every protocol: the files API's own (core_file_path) */
    char *rel = NULL;
    rb_err e = core_file_path(mapped, &rel, err);
    if (e != RB_OK) {
        fs_error(req, connect_code_of(e), err);
        return NULL;
    }
    char *copy = http_pool_strdup(req, rel, strlen(rel));
    free(rel);
    return copy;
}

int e2b_fs_handle(h2o_req_t *req, const e2b_sandbox *sbx, const char *name)
{
    char err[RB_ERR_LEN];
    enum fs_op what;
    if (strcmp(name, "Stat") == 0)
        what = FS_STAT;
    else if (strcmp(name, "ListDir") == 0)
        what = FS_LIST;
    else if (strcmp(name, "MakeDir") == 0)
        what = FS_MKDIR;
    else if (strcmp(name, "Remove") == 0)
        what = FS_REMOVE;
    else
        return -1;
    json_t *body = NULL;
    rb_err e = http_read_json(req, FS_REQUEST_MAX, 1, &body, err);
    if (e != RB_OK) {
        fs_error(req, connect_code_of(e), err);
        return 0;
    }
    const char *rel = relative(req, body);
    json_t *depth = json_object_get(body, "depth");
    if (rel != NULL && what == FS_REMOVE && rel[0] == '\0') {
        fs_error(req, "permission_denied", E2B_HOME " itself cannot be removed");
    } else if (rel != NULL && what == FS_MKDIR && rel[0] == '\0') {
        fs_error(req, "already_exists", E2B_HOME " already exists");
    } else if (rel != NULL && depth != NULL && !json_is_null(depth) &&
               (!json_is_integer(depth) || json_integer_value(depth) < 0 || json_integer_value(depth) > 1000)) {
        fs_error(req, "invalid_argument", "depth must be a whole number from 1 to 1000");
    } else if (rel != NULL) {
        fs_call *f = h2o_mem_alloc_shared(&req->pool, sizeof(*f), disposed);
        memset(f, 0, sizeof(*f));
        f->req = req;
        f->core = sbx->core;
        f->who = sbx->who;
        f->session_id = http_pool_strdup(req, sbx->session_id, strlen(sbx->session_id));
        f->what = what;
        f->rel = rel;
        f->depth = json_integer_value(depth) > 0 ? (unsigned)json_integer_value(depth) : 1;
        if (what == FS_REMOVE)
            e = core_file_delete(f->core, f->who, f->session_id, rel, removed, f, &f->op, err);
        else
            e = core_file_list(f->core, f->who, f->session_id, listed, f, &f->op, err);
        if (e != RB_OK) {
            f->op = NULL;
            fs_error(req, connect_code_of(e), err);
        }
    }
    json_decref(body);
    return 0;
}

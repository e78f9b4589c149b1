/*
 * e2b_fs.c: envd's filesystem service (Connect unary calls, plain JSON) on a runbox session:
 * Stat, ListDir, MakeDir, Remove and Move on the sandbox's own paths through core_sandbox_fs
 * (core/core.h), which does them as the sandbox's user and refuses runbox's own paths. E2B's
 * /home/user is the session's workspace. Entries are envd's EntryInfo with enum names as strings;
 * the sandbox's user (uid 1000, gid 1000) is reported as E2B names its default user, `user`
 * (the name the SDK sends for it too), every other owner by the image's names. The watchers
 * (WatchDir, CreateWatcher, GetWatcherEvents, RemoveWatcher) answer `unimplemented` naming what
 * to do instead.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/e2b/e2b_fs.h"

#define FS_REQUEST_MAX (64u * 1024)
#define E2B_USER_ID 1000 /* the sandbox's user, E2B's `user` */

typedef struct fs_call {
    h2o_req_t *req; /* NULL once the request is gone */
    core_op *op;    /* the core call in flight */
    core_fs_op what;
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

/* envd's EntryInfo of a core_sandbox_fs entry (borrowed). New reference. */
static json_t *entry_info(json_t *entry)
{
    const char *type = json_string_value(json_object_get(entry, "type"));
    const char *ft = type == NULL                     ? "FILE_TYPE_UNSPECIFIED"
                     : strcmp(type, "file") == 0      ? "FILE_TYPE_FILE"
                     : strcmp(type, "directory") == 0 ? "FILE_TYPE_DIRECTORY"
                     : strcmp(type, "symlink") == 0   ? "FILE_TYPE_SYMLINK"
                                                      : "FILE_TYPE_UNSPECIFIED";
    int own_user = json_integer_value(json_object_get(entry, "uid")) == E2B_USER_ID;
    int own_group = json_integer_value(json_object_get(entry, "gid")) == E2B_USER_ID;
    json_t *e = json_pack("{s:O, s:s, s:O, s:O, s:O, s:O, s:O, s:O, s:O}", "name", json_object_get(entry, "name"),
                          "type", ft, "path", json_object_get(entry, "path"), "size", json_object_get(entry, "size"),
                          "mode", json_object_get(entry, "mode"), "permissions", json_object_get(entry, "permissions"),
                          "owner", json_object_get(entry, "owner"), "group", json_object_get(entry, "group"),
                          "modifiedTime", json_object_get(entry, "modified"));
    if (e == NULL) /* never from core_sandbox_fs, whose entries have every member */
        return json_pack("{s:s}", "type", "FILE_TYPE_UNSPECIFIED");
    if (own_user)
        json_object_set_new(e, "owner", json_string("user"));
    if (own_group)
        json_object_set_new(e, "group", json_string("user"));
    if (json_object_get(entry, "target") != NULL)
        json_object_set(e, "symlinkTarget", json_object_get(entry, "target"));
    if (json_object_get(entry, "metadata") != NULL)
        json_object_set(e, "metadata", json_object_get(entry, "metadata"));
    return e;
}

static void done(void *data, rb_err err, const char *msg, json_t *body)
{
    fs_call *f = data;
    f->op = NULL;
    if (err != RB_OK) {
        const char *reason = json_string_value(json_object_get(body, "reason"));
        int exists = err == RB_ECONFLICT && reason != NULL && strcmp(reason, "exists") == 0;
        fs_error(f->req, exists ? "already_exists" : connect_code_of(err), msg);
        json_decref(body);
        return;
    }
    json_t *out = json_object();
    if (json_object_get(body, "entry") != NULL)
        json_object_set_new(out, "entry", entry_info(json_object_get(body, "entry")));
    if (f->what == CORE_FS_LIST) {
        json_t *list = json_array();
        size_t i;
        json_t *e;
        json_array_foreach(json_object_get(body, "entries"), i, e)
            json_array_append_new(list, entry_info(e));
        json_object_set_new(out, "entries", list);
    }
    http_send_json(f->req, 200, out);
    json_decref(out);
    json_decref(body);
}

/* A string member of body (borrowed): "" when absent or null, NULL when of another type. */
static const char *path_member(json_t *body, const char *name)
{
    json_t *v = json_object_get(body, name);
    if (v == NULL || json_is_null(v))
        return "";
    if (!json_is_string(v) || strlen(json_string_value(v)) != json_string_length(v))
        return NULL;
    return json_string_value(v);
}

int e2b_fs_handle(h2o_req_t *req, const e2b_sandbox *sbx, const char *name)
{
    char err[RB_ERR_LEN];
    core_fs_op what;
    if (strcmp(name, "Stat") == 0)
        what = CORE_FS_STAT;
    else if (strcmp(name, "ListDir") == 0)
        what = CORE_FS_LIST;
    else if (strcmp(name, "MakeDir") == 0)
        what = CORE_FS_MKDIR;
    else if (strcmp(name, "Remove") == 0)
        what = CORE_FS_REMOVE;
    else if (strcmp(name, "Move") == 0)
        what = CORE_FS_MOVE;
    else if (strcmp(name, "WatchDir") == 0 || strcmp(name, "CreateWatcher") == 0 ||
             strcmp(name, "GetWatcherEvents") == 0 || strcmp(name, "RemoveWatcher") == 0) {
        fs_error(req, "unimplemented",
                 "watch_dir is not supported by runbox yet: poll files.list (modified_time) or files.get_info "
                 "instead");
        return 0;
    } else
        return -1;
    json_t *body = NULL;
    rb_err e = http_read_json(req, FS_REQUEST_MAX, 1, &body, err);
    if (e != RB_OK) {
        fs_error(req, connect_code_of(e), err);
        return 0;
    }
    const char *path = path_member(body, what == CORE_FS_MOVE ? "source" : "path");
    const char *dest = what == CORE_FS_MOVE ? path_member(body, "destination") : "";
    json_t *depth = json_object_get(body, "depth");
    json_int_t levels = json_is_integer(depth) ? json_integer_value(depth) : 0;
    if (path == NULL || dest == NULL) {
        fs_error(req, "invalid_argument", "paths are strings without NUL characters");
    } else if (what == CORE_FS_MOVE && (path[0] == '\0' || dest[0] == '\0')) {
        fs_error(req, "invalid_argument", "Move needs a source and a destination");
    } else if (depth != NULL && !json_is_null(depth) && (!json_is_integer(depth) || levels < 0 || levels > 1000)) {
        fs_error(req, "invalid_argument", "depth must be a whole number from 1 to 1000");
    } else {
        fs_call *f = h2o_mem_alloc_shared(&req->pool, sizeof(*f), disposed);
        memset(f, 0, sizeof(*f));
        f->req = req;
        f->what = what;
        e = core_sandbox_fs(sbx->core, sbx->who, sbx->session_id, what, path, dest, levels > 0 ? (unsigned)levels : 1,
                            done, f, &f->op, err);
        if (e != RB_OK) {
            f->op = NULL;
            fs_error(req, connect_code_of(e), err);
        }
    }
    json_decref(body);
    return 0;
}

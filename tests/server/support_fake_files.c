/*
 * support_fake_files.c: the file calls of core/core.h for the server/ unit tests, beside the
 * fake core of support_fake_core.c. Files live in a process-global list keyed by session id
 * and normalised path; the session id "s_gone" is unknown (404). Unlike the real core, these
 * answer synchronously from inside the call with no handle (*handle = NULL), which the REST
 * handlers must also cope with; the real asynchronous path is covered by tests/files/.
 */
#include <stdlib.h>
#include <string.h>

#include "base/codec.h"
#include "core/core.h"
#include "tests/server/support_fake_files.h"

#define FAKE_FILES_MAX 64

typedef struct fake_file {
    char *session, *path;
    char *data;
    size_t len;
} fake_file;

static fake_file files[FAKE_FILES_MAX];
static int nfiles;

static rb_err check(const char *session_id, const char *path, char *err)
{
    if (strcmp(session_id, "s_gone") == 0)
        return rb_fail(RB_ENOTFOUND, err, "no live session with id '%s'", session_id);
    if (path != NULL && (strstr(path, "..") != NULL || (path[0] == '/' && strncmp(path, "/workspace/", 11) != 0)))
        return rb_fail(RB_EFORBIDDEN, err, "path '%s' is outside /workspace", path);
    return RB_OK;
}

static fake_file *find(const char *session_id, const char *path)
{
    for (int i = 0; i < nfiles; i++)
        if (strcmp(files[i].session, session_id) == 0 && strcmp(files[i].path, path) == 0)
            return &files[i];
    return NULL;
}

int fake_files_count(void)
{
    return nfiles;
}

const char *fake_files_get(const char *session_id, const char *path, size_t *len)
{
    fake_file *f = find(session_id, path);
    if (f == NULL)
        return NULL;
    *len = f->len;
    return f->data;
}

/* The real core's syntax rules for a path (core/files/files.c), without normalising it. */
rb_err core_file_path(const char *path, char **rel, char *err)
{
    *rel = NULL;
    for (const char *p = path; *p; p++) {
        unsigned char ch = (unsigned char)*p;
        if (ch < 0x20 || ch == 0x7f)
            return rb_fail(RB_EINVAL, err, "path: control characters are written as escapes \\xhh");
        if (ch == '\\' && !(p[1] == 'x' && codec_hex_value((unsigned char)p[2]) >= 0 &&
                             p[2] != '\0' && codec_hex_value((unsigned char)p[3]) >= 0))
            return rb_fail(RB_EINVAL, err, "path: a backslash starts an escape \\xhh of one byte");
    }
    rb_err e = check("s_fake", path, err);
    if (e == RB_OK)
        *rel = strdup(strncmp(path, "/workspace/", 11) == 0 ? path + 11 : path);
    return e;
}

rb_err core_file_upload(rb_core *c, const core_caller *who, const char *session_id, const char *path, const void *data, size_t len,
                        core_cb cb, void *cbdata, core_op **handle, char *err)
{
    (void)who;
    (void)c;
    rb_err e = check(session_id, path, err);
    if (e != RB_OK)
        return e;
    if (nfiles >= FAKE_FILES_MAX)
        return rb_fail(RB_EBUSY, err, "the fake holds %d files at most", FAKE_FILES_MAX);
    fake_file *f = find(session_id, path);
    if (f == NULL) {
        f = &files[nfiles++];
        f->session = xstrdup(session_id);
        f->path = xstrdup(path);
    } else {
        free(f->data);
    }
    f->data = xmalloc(len + 1);
    memcpy(f->data, data, len);
    f->len = len;
    if (handle != NULL)
        *handle = NULL;
    cb(cbdata, RB_OK, NULL, json_pack("{s:s, s:s, s:I}", "session_id", session_id, "path", path, "size",
                                      (json_int_t)len));
    return RB_OK;
}

rb_err core_file_list(rb_core *c, const core_caller *who, const char *session_id, core_cb cb, void *cbdata, core_op **handle, char *err)
{
    (void)who;
    (void)c;
    rb_err e = check(session_id, NULL, err);
    if (e != RB_OK)
        return e;
    json_t *arr = json_array();
    for (int i = 0; i < nfiles; i++)
        if (strcmp(files[i].session, session_id) == 0)
            json_array_append_new(arr, json_pack("{s:s, s:s, s:I}", "path", files[i].path, "type", "file", "size",
                                                 (json_int_t)files[i].len));
    if (handle != NULL)
        *handle = NULL;
    cb(cbdata, RB_OK, NULL, json_pack("{s:s, s:o, s:b}", "session_id", session_id, "files", arr, "truncated", 0));
    return RB_OK;
}

/* A file handed out by the fake download: a copy of the stored bytes, freed by core_file_free. */
typedef struct fake_held {
    core_file pub;
    char *bytes, *name;
} fake_held;

rb_err core_file_download(rb_core *c, const core_caller *who, const char *session_id, const char *path, size_t max, core_file_cb cb,
                          void *cbdata, core_op **handle, char *err)
{
    (void)who;
    (void)c;
    rb_err e = check(session_id, path, err);
    if (e != RB_OK)
        return e;
    fake_file *f = find(session_id, path);
    if (f == NULL)
        return rb_fail(RB_ENOTFOUND, err, "no file '%s'", path);
    if (max > 0 && f->len > max)
        return rb_fail(RB_ETOOBIG, err, "'%s' is %zu bytes, more than the %zu bytes this download may take", path,
                       f->len, max);
    if (handle != NULL)
        *handle = NULL;
    const char *name = strrchr(path, '/');
    name = name ? name + 1 : path;
    fake_held *h = xcalloc(1, sizeof(*h));
    h->bytes = xmalloc(f->len + 1);
    memcpy(h->bytes, f->data, f->len);
    h->name = xstrdup(name);
    h->pub = (core_file){h->bytes, f->len,
                         strstr(name, ".csv") ? "text/csv; charset=utf-8" : "application/octet-stream", h->name};
    cb(cbdata, RB_OK, NULL, &h->pub);
    return RB_OK;
}

void core_file_free(core_file *file)
{
    if (file == NULL)
        return;
    fake_held *h = (fake_held *)file;
    free(h->bytes);
    free(h->name);
    free(h);
}

rb_err core_file_delete(rb_core *c, const core_caller *who, const char *session_id, const char *path, core_cb cb, void *cbdata,
                        core_op **handle, char *err)
{
    (void)who;
    (void)c;
    rb_err e = check(session_id, path, err);
    if (e != RB_OK)
        return e;
    fake_file *f = find(session_id, path);
    if (f == NULL)
        return rb_fail(RB_ENOTFOUND, err, "no file '%s'", path);
    free(f->session);
    free(f->path);
    free(f->data);
    *f = files[--nfiles];
    if (handle != NULL)
        *handle = NULL;
    cb(cbdata, RB_OK, NULL, json_pack("{s:s, s:s, s:b}", "session_id", session_id, "path", path, "deleted", 1));
    return RB_OK;
}

rb_err core_dependencies_install(rb_core *c, const core_caller *who, const char *session_id, json_t *body, core_cb cb, void *data,
                                 core_op **handle, char *err)
{
    (void)who;
    (void)c;
    rb_err e = check(session_id, NULL, err);
    if (e != RB_OK)
        return e;
    json_t *list = json_object_get(body, "dependencies");
    if (!json_is_array(list) || json_array_size(list) == 0)
        return rb_fail(RB_EINVAL, err, "dependencies: give at least one package");
    if (handle != NULL)
        *handle = NULL;
    cb(data, RB_OK, NULL, json_pack("{s:s, s:O, s:b}", "session_id", session_id, "dependencies", list, "cached", 0));
    return RB_OK;
}

rb_err core_packages(rb_core *c, core_cb cb, void *data, core_op **handle, char *err)
{
    (void)c;
    (void)err;
    if (handle != NULL)
        *handle = NULL;
    cb(data, RB_OK, NULL,
       json_pack("{s:s, s:[{s:s, s:s}]}", "image", "fake", "packages", "name", "numpy", "version", "1.24.2"));
    return RB_OK;
}

rb_err core_file_mkdir(rb_core *c, const core_caller *who, const char *session_id, const char *path, core_cb cb,
                       void *cbdata, core_op **handle, char *err)
{
    (void)who;
    (void)c;
    rb_err e = check(session_id, path, err);
    if (e != RB_OK)
        return e;
    if (handle != NULL)
        *handle = NULL;
    cb(cbdata, RB_OK, NULL, json_pack("{s:s, s:s, s:s}", "session_id", session_id, "path", path, "type", "directory"));
    return RB_OK;
}

rb_err core_session_network(rb_core *c, const core_caller *who, const char *session_id, json_t *body, core_cb cb,
                            void *data, core_op **handle, char *err)
{
    (void)who;
    (void)c;
    (void)body;
    (void)cb;
    (void)data;
    if (handle != NULL)
        *handle = NULL;
    return rb_fail(RB_ECONFLICT, err, "session %s was created without a network", session_id);
}

/* Pause, resume and fork: the fake core has no sandboxes to freeze or copy. */
static rb_err no_sandbox(const char *session_id, core_op **handle, char *err)
{
    if (handle != NULL)
        *handle = NULL;
    return rb_fail(RB_ECONFLICT, err, "session %s has no sandbox in the fake core", session_id);
}

rb_err core_session_pause(rb_core *c, const core_caller *who, const char *session_id, json_t *body, core_cb cb,
                          void *data, core_op **handle, char *err)
{
    (void)c, (void)who, (void)body, (void)cb, (void)data;
    return no_sandbox(session_id, handle, err);
}

rb_err core_session_resume(rb_core *c, const core_caller *who, const char *session_id, json_t *body, core_cb cb,
                           void *data, core_op **handle, char *err)
{
    (void)c, (void)who, (void)body, (void)cb, (void)data;
    return no_sandbox(session_id, handle, err);
}

rb_err core_session_fork(rb_core *c, const core_caller *who, const char *session_id, json_t *body, core_cb cb,
                         void *data, core_op **handle, char *err)
{
    (void)c, (void)who, (void)body, (void)cb, (void)data;
    return no_sandbox(session_id, handle, err);
}

/* Shared folders (core/shares/): none declared, so MCP offers no list_mounts; GET /shares lists
 * none; a session's mounts are an empty list; a key's shares= value is refused when "BAD". */
int core_shares_enabled(const rb_core *c)
{
    (void)c;
    return 0;
}

json_t *core_shares(rb_core *c, const core_caller *who)
{
    (void)c;
    (void)who;
    return json_pack("{s:[]}", "shares");
}

rb_err core_shares_key_check(const char *list, char *err)
{
    if (strcmp(list, "BAD") == 0)
        return rb_fail(RB_EINVAL, err, "'%s' is not a share name", list);
    return RB_OK;
}

rb_err core_session_executions(rb_core *c, const core_caller *who, const char *session_id, int limit, json_t **out,
                               char *err)
{
    (void)c;
    (void)who;
    (void)limit;
    (void)err;
    *out = json_pack("{s:s, s:[]}", "session_id", session_id, "executions");
    return RB_OK;
}

rb_err core_audit_query(rb_core *c, const core_caller *who, const core_audit_filter *q, json_t **out, char *err)
{
    (void)c;
    (void)q;
    if (who != NULL && who->role == CORE_ROLE_USER)
        return rb_fail(RB_EFORBIDDEN, err, "only admin and viewer keys read the audit trail");
    *out = json_pack("{s:[], s:n}", "events", "next");
    return RB_OK;
}

rb_err core_isolation_key_check(const char *list, char *err)
{
    if (strcmp(list, "BAD") == 0)
        return rb_fail(RB_EINVAL, err, "isolation= takes * or isolations joined by ','");
    return RB_OK;
}

rb_err core_session_mounts(rb_core *c, const core_caller *who, const char *session_id, core_cb cb, void *data,
                           core_op **handle, char *err)
{
    (void)c;
    (void)who;
    rb_err e = check(session_id, NULL, err);
    if (e != RB_OK)
        return e;
    if (handle != NULL)
        *handle = NULL;
    cb(data, RB_OK, NULL, json_pack("{s:s, s:[]}", "session_id", session_id, "mounts"));
    return RB_OK;
}

rb_err core_file_list_dir(rb_core *c, const core_caller *who, const char *session_id, const char *path, size_t max,
                          core_cb cb, void *cbdata, core_op **handle, char *err)
{
    (void)max;
    (void)path;
    return core_file_list(c, who, session_id, cb, cbdata, handle, err);
}

/* Volumes (core/volumes/): the fake keeps none; a get or delete names an unknown volume, a
 * creation is refused as the real one refuses a bad name. */
rb_err core_volume_create(rb_core *c, const core_caller *who, json_t *body, core_cb cb, void *data, char *err)
{
    (void)c;
    (void)who;
    (void)body;
    (void)cb;
    (void)data;
    return rb_fail(RB_EINVAL, err, "'name' must be 1 to 63 of a-z, 0-9, '_' and '-'");
}

rb_err core_volume_list(rb_core *c, const core_caller *who, json_t **out, char *err)
{
    (void)c;
    (void)who;
    (void)err;
    *out = json_pack("{s:[]}", "volumes");
    return RB_OK;
}

rb_err core_volume_get(rb_core *c, const core_caller *who, const char *ref, json_t **out, char *err)
{
    (void)c;
    (void)who;
    *out = NULL;
    return rb_fail(RB_ENOTFOUND, err, "no volume '%.80s'", ref);
}

rb_err core_volume_delete(rb_core *c, const core_caller *who, const char *ref, core_cb cb, void *data, char *err)
{
    (void)c;
    (void)who;
    (void)cb;
    (void)data;
    return rb_fail(RB_ENOTFOUND, err, "no volume '%.80s'", ref);
}

rb_err core_session_metrics(rb_core *c, const core_caller *who, const char *session_id, int64_t since_ms,
                            int64_t until_ms, json_t **out, char *err)
{
    (void)c;
    (void)who;
    (void)since_ms;
    (void)until_ms;
    *out = NULL;
    return rb_fail(RB_ENOTFOUND, err, "no live session with id '%.64s'", session_id);
}

json_t *core_usage_latest(rb_core *c, const core_caller *who, size_t max, size_t *sampled)
{
    (void)c;
    (void)who;
    (void)max;
    *sampled = 0;
    return json_array();
}

/* Code contexts (core/contexts.c): the fake keeps none; every session is unknown to them. */
rb_err core_context_list(rb_core *c, const core_caller *who, const char *session_id, json_t **out, char *err)
{
    (void)c;
    (void)who;
    (void)out;
    return rb_fail(RB_ENOTFOUND, err, "no session with id '%.64s'", session_id);
}

rb_err core_context_create(rb_core *c, const core_caller *who, const char *session_id, json_t *req, json_t **out,
                           char *err)
{
    (void)req;
    return core_context_list(c, who, session_id, out, err);
}

rb_err core_context_remove(rb_core *c, const core_caller *who, const char *session_id, const char *context_id,
                           char *err)
{
    (void)context_id;
    return core_context_list(c, who, session_id, NULL, err);
}

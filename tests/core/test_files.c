/*
 * Tests of core/files/files.c on the real engine, with a spy between the core and the Docker backend:
 * it forwards every call, records what the archive calls were asked for and can replace the
 * file helper's answer. That is how a sandbox that has taken over its helper would answer, so
 * these tests check what the core does with an answer it must not trust (issue 9, finding 9):
 * a path that is not a normalised one under /workspace never reaches the archive calls.
 * Requires runbox-sandbox:latest.
 */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "core/backend/backend.h"
#include "core/backend/docker.h"
#include "core/core.h"
#include "support_core.h"

/* ---- the spy ---------------------------------------------------------------------------- */

typedef struct spy {
    backend *inner;
    const char *forged;   /* replaces the helper's stdout (exit code 0) when not NULL */
    int archive_gets, archive_puts;
    int put_fails_full;   /* archive_put writes, then answers as a full file system would */
    char last_path[4200]; /* the last archive call's path or folder */
    int exec_argv0_absolute;
    char exec_user[64];    /* the user the last exec asked for, "(null)" for the sandbox's */
    char create_user[64];  /* the user and added capabilities of the last sandbox created */
    char create_caps[128];
} spy;

static spy the_spy;

typedef struct spy_exec_call {
    backend_exec_cb cb;
    void *data;
} spy_exec_call;

static void spy_free(void *self)
{
    spy *s = self;
    backend_free(s->inner);
    s->inner = NULL;
}

static rb_err spy_ping(void *self, backend_ping_cb cb, void *data, char *err)
{
    return backend_ping(((spy *)self)->inner, cb, data, err);
}

static rb_err spy_create(void *self, const char *name, const backend_spec *spec, backend_create_cb cb, void *data,
                         char *err)
{
    spy *s = self;
    snprintf(s->create_user, sizeof(s->create_user), "%s", spec->user ? spec->user : "(null)");
    s->create_caps[0] = '\0';
    for (size_t i = 0; spec->cap_add != NULL && spec->cap_add[i] != NULL; i++)
        snprintf(s->create_caps + strlen(s->create_caps), sizeof(s->create_caps) - strlen(s->create_caps), "%s%s",
                 i ? "," : "", spec->cap_add[i]);
    return backend_create(s->inner, name, spec, cb, data, err);
}

static rb_err spy_start(void *self, const char *id, backend_cb cb, void *data, char *err)
{
    return backend_start(((spy *)self)->inner, id, cb, data, err);
}

static rb_err spy_remove(void *self, const char *id, backend_cb cb, void *data, char *err)
{
    return backend_remove(((spy *)self)->inner, id, cb, data, err);
}

static rb_err spy_list(void *self, const char *label, backend_list_cb cb, void *data, char *err)
{
    return backend_list(((spy *)self)->inner, label, cb, data, err);
}

static rb_err spy_attach_open(void *self, const char *id, const backend_attach_cbs *cbs, void *data,
                              backend_attach **out, char *err)
{
    return backend_attach_open(((spy *)self)->inner, id, cbs, data, out, err);
}

static rb_err spy_attach_write(void *self, backend_attach *a, const char *buf, size_t len, char *err)
{
    return backend_attach_write(((spy *)self)->inner, a, buf, len, err);
}

static void spy_attach_close(void *self, backend_attach *a)
{
    backend_attach_close(((spy *)self)->inner, a);
}

static void spy_attach_pause(void *self, backend_attach *a, int paused)
{
    backend_attach_pause(((spy *)self)->inner, a, paused);
}

static rb_err spy_run(void *self, const char *name, const backend_spec *spec, long timeout_ms, size_t max_output,
                      backend_exec_cb cb, void *data, char *err)
{
    return backend_run(((spy *)self)->inner, name, spec, timeout_ms, max_output, cb, data, err);
}

static rb_err spy_image_id(void *self, const char *image, backend_name_cb cb, void *data, char *err)
{
    return backend_image_id(((spy *)self)->inner, image, cb, data, err);
}

static rb_err spy_volume_create(void *self, const char *name, const backend_label *labels, size_t n_labels,
                                backend_cb cb, void *data, char *err)
{
    return backend_volume_create(((spy *)self)->inner, name, labels, n_labels, cb, data, err);
}

static rb_err spy_volume_remove(void *self, const char *name, backend_cb cb, void *data, char *err)
{
    return backend_volume_remove(((spy *)self)->inner, name, cb, data, err);
}

static rb_err spy_workspace_volume(void *self, const char *id, const char *path, backend_name_cb cb, void *data,
                                   char *err)
{
    return backend_workspace_volume(((spy *)self)->inner, id, path, cb, data, err);
}

static void spy_exec_done(void *data, rb_err err, const char *errmsg, const backend_exec_result *r)
{
    spy_exec_call *x = data;
    if (err == RB_OK && the_spy.forged != NULL) {
        backend_exec_result forged = {0, the_spy.forged, "", strlen(the_spy.forged), 0};
        x->cb(x->data, RB_OK, NULL, &forged);
    } else {
        x->cb(x->data, err, errmsg, r);
    }
    free(x);
}

static rb_err spy_exec(void *self, const char *id, const backend_exec_spec *spec, backend_exec_cb cb, void *data,
                       char *err)
{
    spy *s = self;
    s->exec_argv0_absolute = spec->argv[0][0] == '/';
    snprintf(s->exec_user, sizeof(s->exec_user), "%s", spec->user ? spec->user : "(null)");
    spy_exec_call *x = calloc(1, sizeof(*x));
    x->cb = cb;
    x->data = data;
    rb_err e = backend_exec(s->inner, id, spec, spy_exec_done, x, err);
    if (e != RB_OK)
        free(x);
    return e;
}

typedef struct spy_put_call {
    backend_cb cb;
    void *data;
} spy_put_call;

static void spy_put_done(void *data, rb_err err, const char *errmsg)
{
    spy_put_call *x = data;
    if (err == RB_OK)
        x->cb(x->data, RB_ENOSPC, "write /workspace/x: no space left on device");
    else
        x->cb(x->data, err, errmsg);
    free(x);
}

static rb_err spy_archive_put(void *self, const char *id, const char *dir, const void *tar, size_t len,
                              backend_cb cb, void *data, char *err)
{
    spy *s = self;
    s->archive_puts++;
    snprintf(s->last_path, sizeof(s->last_path), "%s", dir);
    if (!s->put_fails_full)
        return backend_archive_put(s->inner, id, dir, tar, len, cb, data, err);
    spy_put_call *x = calloc(1, sizeof(*x));
    x->cb = cb;
    x->data = data;
    rb_err e = backend_archive_put(s->inner, id, dir, tar, len, spy_put_done, x, err);
    if (e != RB_OK)
        free(x);
    return e;
}

static rb_err spy_archive_get(void *self, const char *id, const char *path, size_t max, backend_bytes_cb cb,
                              void *data, char *err)
{
    spy *s = self;
    s->archive_gets++;
    snprintf(s->last_path, sizeof(s->last_path), "%s", path);
    return backend_archive_get(s->inner, id, path, max, cb, data, err);
}

static const backend_ops spy_ops = {
    .name = "spy",
    .free = spy_free,
    .ping = spy_ping,
    .create = spy_create,
    .start = spy_start,
    .remove = spy_remove,
    .list = spy_list,
    .attach_open = spy_attach_open,
    .attach_write = spy_attach_write,
    .attach_close = spy_attach_close,
    .attach_pause = spy_attach_pause,
    .exec = spy_exec,
    .archive_put = spy_archive_put,
    .archive_get = spy_archive_get,
    .run = spy_run,
    .image_id = spy_image_id,
    .volume_create = spy_volume_create,
    .volume_remove = spy_volume_remove,
    .workspace_volume = spy_workspace_volume,
};

/* A core on the spy over the real Docker backend, once Docker answers. */
static rb_core *spy_core_open(void)
{
    char err[RB_ERR_LEN];
    memset(&the_spy, 0, sizeof(the_spy));
    cr_assert_eq(backend_docker_new(&sup_loop, sup_cfg.docker_socket, 0, 0, &the_spy.inner, err), RB_OK, "%s", err);
    rb_core *c;
    cr_assert_eq(core_new_with_backend(&sup_loop, &sup_cfg, backend_new(&spy_ops, &the_spy), &c, err), RB_OK, "%s",
                 err);
    sup_wait_docker(c);
    return c;
}

/* ---- synchronous wrappers ----------------------------------------------------------------- */

typedef struct got_file {
    int done;
    rb_err err;
    char msg[RB_ERR_LEN];
    char *bytes;
    size_t len;
} got_file;

static void got_file_cb(void *data, rb_err err, const char *msg, core_file *file)
{
    got_file *g = data;
    g->done = 1;
    g->err = err;
    snprintf(g->msg, sizeof(g->msg), "%s", msg ? msg : "");
    if (err == RB_OK) {
        g->bytes = malloc(file->len + 1);
        memcpy(g->bytes, file->bytes, file->len);
        g->bytes[file->len] = '\0';
        g->len = file->len;
    }
    core_file_free(file);
}

static got_file download(rb_core *c, const char *sid, const char *path)
{
    char err[RB_ERR_LEN];
    got_file g = {0};
    rb_err e = core_file_download(c, NULL, sid, path, 0, got_file_cb, &g, NULL, err);
    cr_assert_eq(e, RB_OK, "download %s: %s", path, err);
    sup_run_until(&g.done, 30000);
    cr_assert(g.done, "download %s did not finish", path);
    return g;
}

static sup_result upload(rb_core *c, const char *sid, const char *path, const char *text)
{
    char err[RB_ERR_LEN];
    sup_result r = {0};
    rb_err e = core_file_upload(c, NULL, sid, path, text, strlen(text), sup_op_cb, &r, NULL, err);
    cr_assert_eq(e, RB_OK, "upload %s: %s", path, err);
    sup_run_until(&r.done, 30000);
    cr_assert(r.done, "upload %s did not finish", path);
    return r;
}

/* ---- tests -------------------------------------------------------------------------------- */

static void setup(void)
{
    sup_fixture_open("files", RB_LOG_WARN);
    sup_cfg.pool_size = 0;
}

static void teardown(void)
{
    sup_fixture_close();
}

TestSuite(files, .init = setup, .fini = teardown, .timeout = 180);

Test(files, helper_answers_outside_the_workspace_are_refused)
{
    rb_core *c = spy_core_open();
    char *sid = sup_session_create_id(c, NULL);
    sup_result r = upload(c, sid, "real.txt", "the real file");
    cr_assert_eq(r.err, RB_OK, "%s", r.msg);
    json_decref(r.body);

    /* the spy is a faithful proxy, and the helper is not looked up through PATH */
    got_file g = download(c, sid, "real.txt");
    cr_assert_eq(g.err, RB_OK, "%s", g.msg);
    cr_assert_str_eq(g.bytes, "the real file");
    free(g.bytes);
    cr_assert_str_eq(the_spy.last_path, "/workspace/real.txt");

    /* a well-formed forged answer is followed (it names a file in the workspace) */
    the_spy.forged = "{\"real\":\"/workspace/real.txt\",\"size\":13,\"modified\":0}";
    g = download(c, sid, "other.txt");
    cr_assert_eq(g.err, RB_OK, "%s", g.msg);
    free(g.bytes);

    static const char *const bad[] = {
        "/workspace/../etc/passwd", "/workspace/a/../../etc/passwd", "/workspace/./real.txt", "/workspace//real.txt",
        "/workspace/real.txt/",     "/workspacex/real.txt",          "/workspace",            "/workspace/",
        "workspace/real.txt",       "/workspace/..",                 "/workspace/.",          "/etc/passwd",
        "",
    };
    char forged[512];
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        snprintf(forged, sizeof(forged), "{\"real\":\"%s\",\"size\":10,\"modified\":0}", bad[i]);
        the_spy.forged = forged;
        int gets = the_spy.archive_gets;
        g = download(c, sid, "real.txt");
        cr_expect_eq(g.err, RB_EIO, "answer %s: got %d (%s)", bad[i], g.err, g.msg);
        cr_expect_eq(the_spy.archive_gets, gets, "answer %s reached the archive call (%s)", bad[i],
                     the_spy.last_path);
        free(g.bytes);
    }
    the_spy.forged = "{\"real\":42}";
    g = download(c, sid, "real.txt");
    cr_expect_eq(g.err, RB_EIO, "%s", g.msg);
    free(g.bytes);

    static const char *const bad_dirs[][2] = {
        {"/workspace/../etc", "x"}, {"/workspace/./up", "x"}, {"/workspace/up/", "x"}, {"/tmp", "x"},
        {"/workspace", ".."},       {"/workspace", "."},      {"/workspace", "a/b"},   {"/workspace", ""},
    };
    for (size_t i = 0; i < sizeof(bad_dirs) / sizeof(bad_dirs[0]); i++) {
        snprintf(forged, sizeof(forged), "{\"dir\":\"%s\",\"name\":\"%s\",\"free\":1000000,\"total\":1000000}",
                 bad_dirs[i][0], bad_dirs[i][1]);
        the_spy.forged = forged;
        int puts = the_spy.archive_puts;
        r = upload(c, sid, "up/x", "data");
        cr_expect_eq(r.err, RB_EIO, "answer %s: got %d (%s)", forged, r.err, r.msg);
        cr_expect_eq(the_spy.archive_puts, puts, "answer %s reached the archive call (%s)", forged,
                     the_spy.last_path);
        json_decref(r.body);
    }

    the_spy.forged = NULL;
    sup_session_delete(c, sid);
    free(sid);
    sup_core_close(c, 15000);
}

Test(files, the_helper_runs_as_the_sandbox_user_not_as_the_containers_root)
{
    /* Issue 9, finding 3: the sandbox starts as root with only the capabilities the runner
     * needs to separate privileges; an exec naming no user would run as that root. */
    rb_core *c = spy_core_open();
    char *sid = sup_session_create_id(c, NULL);
    cr_assert_str_eq(the_spy.create_user, "0");
    cr_assert_str_eq(the_spy.create_caps, "KILL,SETGID,SETUID");
    sup_result r = upload(c, sid, "deep/er/file.txt", "text");
    cr_assert_eq(r.err, RB_OK, "%s", r.msg);
    json_decref(r.body);
    cr_assert_str_eq(the_spy.exec_user, "1000:1000");
    got_file g = download(c, sid, "deep/er/file.txt");
    cr_assert_eq(g.err, RB_OK, "%s", g.msg);
    free(g.bytes);
    cr_assert_str_eq(the_spy.exec_user, "1000:1000");
    sup_session_delete(c, sid);
    free(sid);
    sup_core_close(c, 15000);
}

/* The file of a finished download, kept (not freed) by the callback. */
typedef struct kept_file {
    int done;
    rb_err err;
    char msg[RB_ERR_LEN];
    core_file *file;
} kept_file;

static void kept_file_cb(void *data, rb_err err, const char *msg, core_file *file)
{
    kept_file *k = data;
    k->done = 1;
    k->err = err;
    snprintf(k->msg, sizeof(k->msg), "%s", msg ? msg : "");
    k->file = file;
}

static kept_file download_kept(rb_core *c, const char *sid, const char *path, size_t max)
{
    char err[RB_ERR_LEN];
    kept_file k = {0};
    cr_assert_eq(core_file_download(c, NULL, sid, path, max, kept_file_cb, &k, NULL, err), RB_OK, "%s", err);
    sup_run_until(&k.done, 30000);
    cr_assert(k.done, "download %s did not finish", path);
    return k;
}

Test(files, downloads_in_flight_share_max_download_memory)
{
    char err[RB_ERR_LEN];
    sup_cfg.max_download = 1024 * 1024;
    sup_cfg.max_download_memory = 1024 * 1024;
    rb_core *c = sup_core_open();
    char *sid = sup_session_create_id(c, NULL);
    size_t n = 600 * 1024;
    char *data = malloc(n + 1);
    memset(data, 'a', n);
    data[n] = '\0';
    sup_result r = upload(c, sid, "a.bin", data);
    cr_assert_eq(r.err, RB_OK, "%s", r.msg);
    json_decref(r.body);
    r = upload(c, sid, "b.bin", data);
    json_decref(r.body);

    /* a is held: its bytes are the file, and b does not fit beside it */
    kept_file a = download_kept(c, sid, "a.bin", 0);
    cr_assert_eq(a.err, RB_OK, "%s", a.msg);
    cr_assert_eq(a.file->len, n);
    cr_assert(memcmp(a.file->bytes, data, n) == 0);
    cr_assert_str_eq(a.file->name, "a.bin");
    kept_file b = download_kept(c, sid, "b.bin", 0);
    cr_assert_eq(b.err, RB_EBUSY, "%d %s", b.err, b.msg);
    cr_assert(strstr(b.msg, "max-download-memory") != NULL, "%s", b.msg);
    /* a caller's own limit is checked before anything is read or reserved */
    b = download_kept(c, sid, "b.bin", 1000);
    cr_assert_eq(b.err, RB_ETOOBIG, "%d %s", b.err, b.msg);
    cr_assert(strstr(b.msg, "614400 bytes") != NULL && strstr(b.msg, "1000 bytes") != NULL, "%s", b.msg);
    core_file_free(a.file);

    /* a cancelled download gives its memory back too */
    core_op *op = NULL;
    kept_file gone = {0};
    cr_assert_eq(core_file_download(c, NULL, sid, "a.bin", 0, kept_file_cb, &gone, &op, err), RB_OK, "%s", err);
    core_cancel(op);
    /* it runs on to its end in the background (a second or so), then lets go */
    for (int i = 0; i < 20; i++) {
        b = download_kept(c, sid, "b.bin", 0);
        if (b.err != RB_EBUSY)
            break;
        sup_run_for(500);
    }
    cr_assert_eq(b.err, RB_OK, "%s", b.msg);
    cr_assert(!gone.done, "a cancelled download called back");

    /* a file may outlive the core */
    sup_session_delete(c, sid);
    free(sid);
    free(data);
    sup_core_close(c, 15000);
    cr_assert_eq(b.file->len, n);
    core_file_free(b.file);
}

static sup_result mkdir_in(rb_core *c, const char *sid, const char *path)
{
    char err[RB_ERR_LEN];
    sup_result r = {0};
    rb_err e = core_file_mkdir(c, NULL, sid, path, sup_op_cb, &r, NULL, err);
    if (e != RB_OK) {
        r.done = 1;
        r.err = e;
        snprintf(r.msg, sizeof(r.msg), "%s", err);
        return r;
    }
    sup_run_until(&r.done, 30000);
    cr_assert(r.done, "mkdir %s did not finish", path);
    return r;
}

/* core_file_mkdir makes folders (with their parents) that code can write into, as the
 * sandbox user; an existing folder is fine, a file in the way and paths outside are refused. */
Test(files, mkdir_makes_folders_with_their_parents)
{
    rb_core *c = spy_core_open();
    char *sid = sup_session_create_id(c, NULL);
    sup_result r = mkdir_in(c, sid, "artifacts");
    cr_assert_eq(r.err, RB_OK, "%s", r.msg);
    cr_assert_str_eq(json_string_value(json_object_get(r.body, "path")), "artifacts");
    cr_assert_str_eq(json_string_value(json_object_get(r.body, "type")), "directory");
    json_decref(r.body);
    r = mkdir_in(c, sid, "/workspace/a/b/c");
    cr_assert_eq(r.err, RB_OK, "%s", r.msg);
    json_decref(r.body);
    r = mkdir_in(c, sid, "a/b"); /* exists already */
    cr_assert_eq(r.err, RB_OK, "%s", r.msg);
    json_decref(r.body);
    /* the folders belong to the sandbox user: a file can be written into them */
    r = upload(c, sid, "a/b/c/x.txt", "in the new folder");
    cr_assert_eq(r.err, RB_OK, "%s", r.msg);
    json_decref(r.body);
    sup_result l = {0};
    char err[RB_ERR_LEN];
    cr_assert_eq(core_file_list(c, NULL, sid, sup_op_cb, &l, NULL, err), RB_OK, "%s", err);
    sup_run_until(&l.done, 30000);
    cr_assert_eq(l.err, RB_OK, "%s", l.msg);
    int dirs = 0;
    size_t i;
    json_t *f;
    json_array_foreach(json_object_get(l.body, "files"), i, f)
    {
        const char *p = json_string_value(json_object_get(f, "path"));
        if (strcmp(json_string_value(json_object_get(f, "type")), "directory") == 0 &&
            (strcmp(p, "artifacts") == 0 || strcmp(p, "a/b/c") == 0))
            dirs++;
    }
    cr_assert_eq(dirs, 2, "%s", json_dumps(l.body, 0));
    json_decref(l.body);

    r = mkdir_in(c, sid, "a/b/c/x.txt"); /* a file is in the way */
    cr_assert_eq(r.err, RB_ECONFLICT, "%d %s", r.err, r.msg);
    cr_assert(strstr(r.msg, "a/b/c/x.txt") != NULL, "%s", r.msg);
    r = mkdir_in(c, sid, "a/b/c/x.txt/d");
    cr_assert_eq(r.err, RB_ECONFLICT, "%d %s", r.err, r.msg);
    r = mkdir_in(c, sid, "../etc/x");
    cr_assert_eq(r.err, RB_EFORBIDDEN, "%d %s", r.err, r.msg);
    r = mkdir_in(c, sid, "/tmp/x");
    cr_assert_eq(r.err, RB_EFORBIDDEN, "%d %s", r.err, r.msg);
    r = mkdir_in(c, sid, "");
    cr_assert_eq(r.err, RB_EINVAL, "%d %s", r.err, r.msg);
    /* a symbolic link out of the workspace is not followed */
    json_decref(sup_run_code(c, sid, "import os\nos.symlink('/tmp', 'out')", 30));
    r = mkdir_in(c, sid, "out/x");
    cr_assert_eq(r.err, RB_EFORBIDDEN, "%d %s", r.err, r.msg);
    sup_session_delete(c, sid);
    free(sid);
    sup_core_close(c, 15000);
}

/* The workspace's listing as one string of "path:type:size" lines. */
static char *list_text(rb_core *c, const char *sid)
{
    sup_result l = {0};
    char err[RB_ERR_LEN];
    cr_assert_eq(core_file_list(c, NULL, sid, sup_op_cb, &l, NULL, err), RB_OK, "%s", err);
    sup_run_until(&l.done, 30000);
    cr_assert_eq(l.err, RB_OK, "%s", l.msg);
    rb_buf b;
    rb_buf_init(&b, 256);
    size_t i;
    json_t *f;
    json_array_foreach(json_object_get(l.body, "files"), i, f)
    {
        char line[600];
        snprintf(line, sizeof(line), "%s:%s:%lld\n", json_string_value(json_object_get(f, "path")),
                 json_string_value(json_object_get(f, "type")), json_integer_value(json_object_get(f, "size")));
        rb_buf_append(&b, line, strlen(line));
    }
    rb_buf_append(&b, "", 1);
    json_decref(l.body);
    return b.data;
}

/* Issue 21, finding 1, at the depth of the archive call: the engine runs out of room while it
 * writes (after the helper saw enough free). The upload answers RB_ENOSPC, the existing file
 * keeps its content and the temporary file is removed. */
Test(files, an_upload_the_engine_cannot_finish_changes_nothing)
{
    rb_core *c = spy_core_open();
    char *sid = sup_session_create_id(c, NULL);
    sup_result r = upload(c, sid, "keep.txt", "the old content");
    cr_assert_eq(r.err, RB_OK, "%s", r.msg);
    json_decref(r.body);
    the_spy.put_fails_full = 1;
    r = upload(c, sid, "keep.txt", "the new content, which never arrives whole");
    cr_assert_eq(r.err, RB_ENOSPC, "%d %s", r.err, r.msg);
    cr_assert(strstr(r.msg, "workspace_size") != NULL && strstr(r.msg, "nothing was changed") != NULL, "%s", r.msg);
    r = upload(c, sid, "sub/new.txt", "a new file");
    cr_assert_eq(r.err, RB_ENOSPC, "%d %s", r.err, r.msg);
    the_spy.put_fails_full = 0;
    got_file g = download(c, sid, "keep.txt");
    cr_assert_eq(g.err, RB_OK, "%s", g.msg);
    cr_assert_str_eq(g.bytes, "the old content");
    free(g.bytes);
    char *list = list_text(c, sid);
    cr_assert_str_eq(list, "keep.txt:file:15\nsub:directory:0\n");
    free(list);
    sup_session_delete(c, sid);
    free(sid);
    sup_core_close(c, 15000);
}

/* Issue 21, finding 2: names that are not UTF-8 text travel in the name form both ways; one
 * that Docker's archive call cannot send is read through a temporary link, which is removed. */
Test(files, every_name_is_written_listed_read_and_deleted)
{
    rb_core *c = spy_core_open();
    char *sid = sup_session_create_id(c, NULL);
    static const char *const names[] = {"bad\\xff.bin", "d\\xfe/in\\x0a\\x1b.txt", "back\\x5cslash"};
    for (size_t i = 0; i < 3; i++) {
        sup_result r = upload(c, sid, names[i], names[i]);
        cr_assert_eq(r.err, RB_OK, "%s: %s", names[i], r.msg);
        cr_assert_str_eq(json_string_value(json_object_get(r.body, "path")), names[i]);
        json_decref(r.body);
    }
    json_t *res = sup_run_code(c, sid, "import os\nsorted(os.listdir(b'.') + os.listdir(b'd\\xfe'))", 30);
    cr_assert_str_eq(json_string_value(json_object_get(res, "result")),
                     "[b'back\\\\slash', b'bad\\xff.bin', b'd\\xfe', b'in\\n\\x1b.txt']",
                     "%s", json_dumps(res, 0));
    json_decref(res);
    for (size_t i = 0; i < 3; i++) {
        got_file g = download(c, sid, names[i]);
        cr_assert_eq(g.err, RB_OK, "%s: %s", names[i], g.msg);
        cr_assert_str_eq(g.bytes, names[i]);
        free(g.bytes);
    }
    /* the link the not-UTF-8 name was read through is gone */
    char *list = list_text(c, sid);
    cr_assert_str_eq(list, "back\\x5cslash:file:13\nbad\\xff.bin:file:11\nd\\xfe:directory:0\n"
                           "d\\xfe/in\\x0a\\x1b.txt:file:20\n");
    free(list);
    for (size_t i = 0; i < 3; i++) {
        sup_result r = {0};
        char err[RB_ERR_LEN];
        cr_assert_eq(core_file_delete(c, NULL, sid, names[i], sup_op_cb, &r, NULL, err), RB_OK, "%s", err);
        sup_run_until(&r.done, 30000);
        cr_assert_eq(r.err, RB_OK, "%s", r.msg);
        json_decref(r.body);
    }
    list = list_text(c, sid);
    cr_assert_str_eq(list, "d\\xfe:directory:0\n");
    free(list);
    sup_session_delete(c, sid);
    free(sid);
    sup_core_close(c, 15000);
}

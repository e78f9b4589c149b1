/*
 * files.c: files in a session's /workspace (core/core.h, "Files"). Bytes move through the
 * backend's archive calls (a one-file tar in, a tar out), so runboxd needs no shared folder
 * with the sandbox. /workspace is the sandbox's workspace mount (sandbox.c), which those calls
 * reach (core/backend/backend.h).
 *
 * Path rules: the caller's path is checked here first (relative to /workspace or absolute
 * under it; no "..", NUL or control characters). Symlinks can only be judged inside the
 * container, so each operation starts with a small Python helper run (backend_exec) as the
 * sandbox user: it resolves the path with realpath, refuses one that leaves /workspace
 * (RB_EFORBIDDEN), creates parent folders for uploads, and lists or deletes. The engine itself
 * resolves archive paths inside the container's root (Docker does), so even a symlink swapped
 * in between the check and the copy cannot reach the host.
 *
 * The helper runs where the session rules (issue 9, finding 9): how it is started so that
 * nothing of the session chooses what runs, and how its answers are checked (exactly, never by
 * prefix), is core/files/file_helper.h; its output is size-capped here. /workspace itself stays
 * executable: users run their own scripts there and the packages installed into
 * /workspace/.runbox load native code (a noexec mount would break both, and the helper does
 * not need it: nothing of it is read from there).
 *
 * Memory (issue 9, finding 6e): a download holds its file once. The engine's tar answer is
 * handed over, not copied (backend_bytes_cb), and the core_file given to the protocol points
 * at the entry's bytes inside it, so the protocol can send them from there and free the
 * archive when the answer is written. Downloads in flight share a budget
 * (max-download-memory): each reserves its size as soon as the helper has said it, before a
 * byte is read, and gives it back in core_file_free (or when it fails); one that does not fit
 * is refused with RB_EBUSY. The budget is refcounted, so a file may outlive the core.
 *
 * Not the path policy of uploads elsewhere (core/deps/); it keeps no files: bytes only pass through.
 */
#include <assert.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/files/files.h"

#include "base/codec.h"
#include "base/tar.h"
#include "core/audit/audit.h"
#include "core/files/file_helper.h"
#include "core/heart.h"
#include "core/volumes/volumes.h"

#define HELPER_OUTPUT_MAX (8u * 1024 * 1024)
#define HELPER_TIMEOUT_MS 60000L
/* What a one-file tar adds to the file: header, PAX records for long or non-ASCII names,
 * padding and the end blocks. A download reserves its size plus this, and Docker's answer may
 * be no larger, so a file that grows after the helper measured it is refused, not held. */
#define TAR_SLACK (64u * 1024)
#define LIST_MAX_ENTRIES 10000 /* file_helper_listing keeps no more either */
#define SANDBOX_UID 1000
/* The helper's user: the sandbox starts as root (sandbox.c), so an exec that named no user
 * would run as root with the runner's capabilities; as the sandbox user it has exactly user
 * code's rights, and the folders it makes for uploads are user code's to write in. */
#define SANDBOX_USER "1000:1000"

enum fop_kind { OP_LIST, OP_UPLOAD, OP_DOWNLOAD, OP_DELETE, OP_MKDIR };

/* The memory downloads in flight hold together (max-download-memory). The core holds one
 * reference, each download with a reservation and each core_file handed out one more. */
typedef struct download_budget {
    size_t used, max;
    int refs;
} download_budget;

static download_budget *budget_ref(download_budget *b)
{
    b->refs++;
    return b;
}

/* Gives back n reserved bytes and the reference that came with them. */
static void budget_release(download_budget *b, size_t n)
{
    assert(b->used >= n && b->refs > 0);
    b->used -= n;
    if (--b->refs == 0)
        free(b);
}

/* A core_file as handed out: the public part first, then what it keeps alive. */
typedef struct held_file {
    core_file pub;
    char *tar;  /* the engine's answer; pub.bytes points into it */
    char *name; /* pub.name */
    size_t reserved;
    download_budget *budget;
} held_file;

typedef struct file_op {
    rb_core *c;
    core_op *op; /* the caller's handle: only its cancelled flag is used */
    enum fop_kind kind;
    file_helper_op step; /* the helper run in flight */
    char *session_id;
    char *container;
    json_t *session_env; /* the session's variables, which every helper run removes */
    json_t *mounts;      /* the session's canonical mounts (its volumes are measured after a change) */
    char *rel;   /* path relative to /workspace in name form ("" = the workspace) */
    char *data;  /* upload bytes */
    size_t len;
    size_t max;  /* largest file a download accepts */
    size_t reserved; /* bytes of the download budget this download holds (from budget, a reference) */
    download_budget *budget;
    json_t *info; /* the helper's answer (file_helper_answer) */
    char temp[48]; /* an upload's temporary name beside its target */
    char *link;    /* a download's temporary link to its file (FILE_HELPER_GET's linked), or NULL */
    rb_err failed; /* how the operation ends once its temporary file is removed */
    char *failed_msg;
    core_file *file; /* a download's file, handed over then */
    audit_file_pending audit; /* its record in the audit trail, written when it ends */
    core_cb cb;
    core_file_cb fcb;
    void *cbdata;
} file_op;

static void file_op_free(file_op *f)
{
    if (f->budget != NULL)
        budget_release(f->budget, f->reserved);
    json_decref(f->info);
    json_decref(f->session_env);
    json_decref(f->mounts);
    free(f->container);
    free(f->session_id);
    free(f->rel);
    free(f->data);
    free(f->failed_msg);
    audit_file_dispose(&f->audit);
    free(f->link);
    core_file_free(f->file);
    free(f->op);
    free(f);
}

static void finish(file_op *f, rb_err e, const char *msg, json_t *body)
{
    audit_file_end(f->c, &f->audit, f->session_id, e, msg, f->kind == OP_UPLOAD ? (int64_t)f->len : -1);
    if (f->kind == OP_UPLOAD || f->kind == OP_DELETE) /* a volume's use changed: measured again */
        volumes_touched(f->c, f->mounts, f->rel);
    if (!f->op->cancelled && f->cb != NULL)
        f->cb(f->cbdata, e, e == RB_OK ? NULL : msg, body);
    else
        json_decref(body);
    file_op_free(f);
}

/* Ends a download: file (NULL on failure) goes to the caller with f's reservation, or is freed
 * when the caller has cancelled. */
static void finish_file(file_op *f, rb_err e, const char *msg, core_file *file)
{
    audit_file_end(f->c, &f->audit, f->session_id, e, msg, file != NULL ? (int64_t)file->len : -1);
    if (!f->op->cancelled && f->fcb != NULL)
        f->fcb(f->cbdata, e, e == RB_OK ? NULL : msg, file);
    else
        core_file_free(file);
    file_op_free(f);
}

static void fail(file_op *f, rb_err e, const char *msg)
{
    if (f->kind == OP_DOWNLOAD)
        finish_file(f, e, msg, NULL);
    else
        finish(f, e, msg, NULL);
}

void core_file_free(core_file *file)
{
    if (file == NULL)
        return;
    held_file *h = (held_file *)file;
    budget_release(h->budget, h->reserved);
    free(h->tar);
    free(h->name);
    free(h);
}

void files_dispose(rb_core *c)
{
    download_budget **slot = (download_budget **)core_heart_room(c, CORE_ROOM_FILES);
    if (*slot != NULL)
        budget_release(*slot, 0);
    *slot = NULL;
}

/* Reserves size bytes (plus the tar's slack) of c's download budget for f. RB_EBUSY when
 * downloads in flight hold so much that this one would take them past max-download-memory;
 * one download alone is always admitted. */
static rb_err reserve(file_op *f, size_t size, char *err)
{
    rb_core *c = f->c;
    download_budget **slot = (download_budget **)core_heart_room(c, CORE_ROOM_FILES);
    if (*slot == NULL) {
        *slot = xcalloc(1, sizeof(**slot));
        (*slot)->max = core_heart_settings(c)->max_download_memory;
        (*slot)->refs = 1;
    }
    download_budget *b = *slot;
    size_t n = size + TAR_SLACK;
    if (b->used > 0 && (n > b->max || b->used > b->max - n))
        return rb_fail(RB_EBUSY, err,
                       "downloads in flight hold %zu of the %zu MiB that downloads may hold together "
                       "(max-download-memory); this file of %zu bytes does not fit beside them: retry in a moment",
                       (b->used + 1024 * 1024 - 1) / (1024 * 1024), b->max / (1024 * 1024), size);
    b->used += n;
    f->budget = budget_ref(b);
    f->reserved = n;
    return RB_OK;
}

/* ---- the chain: exec helper, then the archive call ---------------------------------------- */

static rb_err run_helper(file_op *f, file_helper_op step, const char *rel, const char *arg, char *err);

/* The path of f's temporary file (f->temp beside the target, or a download's link), heap. */
static char *temp_path(const file_op *f)
{
    if (f->link != NULL)
        return xstrdup(f->link);
    const char *slash = strrchr(f->rel, '/');
    return slash ? xasprintf("%.*s/%s", (int)(slash - f->rel), f->rel, f->temp) : xstrdup(f->temp);
}

/* Ends an operation whose temporary file is removed (or could not be): with the outcome that
 * discard kept. */
static void discarded(file_op *f)
{
    if (f->kind == OP_DOWNLOAD && f->failed == RB_OK) {
        core_file *file = f->file;
        f->file = NULL;
        finish_file(f, RB_OK, NULL, file);
    } else {
        fail(f, f->failed, f->failed_msg);
    }
}

/* An operation that ends once its temporary file (an upload's, a download's link) is removed:
 * the helper removes it, then the caller gets e and msg (and a download its file). */
static void discard(file_op *f, rb_err e, const char *msg)
{
    char err[RB_ERR_LEN];
    f->failed = e;
    free(f->failed_msg);
    f->failed_msg = xstrdup(msg ? msg : "");
    char *tmp = temp_path(f);
    rb_err r = run_helper(f, FILE_HELPER_DISCARD, tmp, "-", err);
    free(tmp);
    if (r != RB_OK)
        discarded(f);
}

static void uploaded_cb(void *data, rb_err err, const char *errmsg)
{
    file_op *f = data;
    char msg[RB_ERR_LEN];
    if (err == RB_ECANCELED) {
        fail(f, err, errmsg);
        return;
    }
    if (err == RB_ENOSPC)
        snprintf(msg, sizeof(msg),
                 "could not write '%.200s': the session's /workspace is full (its size is the session's "
                 "workspace_size); nothing was changed. Delete files there or create the session with a larger "
                 "execution_options.workspace_size",
                 f->rel);
    else if (err != RB_OK)
        snprintf(msg, sizeof(msg), "could not copy the file into the sandbox: %s", errmsg);
    if (err != RB_OK) {
        discard(f, err == RB_ENOTFOUND ? RB_ECONFLICT : err, msg);
        return;
    }
    err = run_helper(f, FILE_HELPER_COMMIT, f->rel, f->temp, msg);
    if (err != RB_OK)
        discard(f, err, msg);
}

/* The archive's first entry: where its bytes lie (no copy), or that it is not a file. */
typedef struct find_ctx {
    const char *data;
    size_t len;
    int found, notfile;
} find_ctx;

static int find_first(void *data, const tar_entry *e)
{
    find_ctx *fc = data;
    if (e->type != TAR_FILE) {
        fc->notfile = 1;
        return 1;
    }
    fc->found = 1;
    fc->data = e->data;
    fc->len = e->size;
    return 1;
}

/* The last segment of f's path, as the caller named it (name form). */
static const char *base_name(const file_op *f)
{
    const char *name = strrchr(f->rel, '/');
    return name ? name + 1 : f->rel;
}

/* Ends download f with e, msg and file (NULL on failure), once its temporary link, if it has
 * one, is removed. */
static void end_download(file_op *f, rb_err e, const char *msg, core_file *file)
{
    if (f->link == NULL || e == RB_ECANCELED) {
        finish_file(f, e, msg, file);
        return;
    }
    f->file = file;
    discard(f, e, msg);
}

/* Docker's answer (tar, owned from here on) to the archive call of download f: hands the
 * first entry's bytes to the caller inside the tar, with f's reservation. */
static void downloaded_cb(void *data, rb_err err, const char *errmsg, char *tar, size_t len)
{
    file_op *f = data;
    char msg[RB_ERR_LEN];
    if (err != RB_OK) {
        /* f->c is not touched here: a cancellation may come after core_free */
        if (err == RB_ETOOBIG)
            snprintf(msg, sizeof(msg), "the file grew past the %zu bytes measured a moment before; try again",
                     f->reserved - TAR_SLACK);
        else
            snprintf(msg, sizeof(msg), "could not copy the file out of the sandbox: %s", errmsg);
        end_download(f, err == RB_ETOOBIG ? RB_ECONFLICT : err, err == RB_ECANCELED ? errmsg : msg, NULL);
        return;
    }
    find_ctx fc = {0};
    err = tar_walk(tar, len, find_first, &fc, msg);
    if (err == RB_OK && !fc.found)
        err = rb_fail(fc.notfile ? RB_EFORBIDDEN : RB_EIO, msg,
                      fc.notfile ? "the path changed into a link or folder while it was being read; try again"
                                 : "Docker's archive holds no file");
    if (err == RB_OK && fc.len > f->max)
        err = rb_fail(RB_ECONFLICT, msg, "the file grew past %zu bytes while it was being read; try again", f->max);
    if (err != RB_OK) {
        free(tar);
        end_download(f, err, msg, NULL);
        return;
    }
    held_file *h = xcalloc(1, sizeof(*h));
    h->tar = tar;
    h->name = xstrdup(base_name(f));
    h->pub = (core_file){fc.data, fc.len, files_content_type(h->name), h->name};
    h->budget = f->budget; /* the reservation moves to the file */
    h->reserved = f->reserved;
    f->budget = NULL;
    f->reserved = 0;
    end_download(f, RB_OK, NULL, &h->pub);
}

/* The message (in msg, returned) for download f of a file of size bytes, more than f->max. */
static const char *too_big(const file_op *f, json_int_t size, char *msg)
{
    const char *shown = f->rel[0] ? f->rel : ".";
    if (f->max == core_heart_settings(f->c)->max_download)
        snprintf(msg, RB_ERR_LEN, "'%.200s' is %lld bytes, more than the download limit of %zu bytes (max-download)",
                 shown, (long long)size, f->max);
    else
        snprintf(msg, RB_ERR_LEN, "'%.200s' is %lld bytes, more than the %zu bytes this download may take", shown,
                 (long long)size, f->max);
    return msg;
}

/* The bytes of a path in name form that file_helper_answer has checked (heap). */
static char *path_bytes(const char *form)
{
    char *raw = NULL;
    size_t n;
    rb_err e = codec_name_unescape(form, &raw, &n, NULL);
    assert(e == RB_OK);
    (void)e;
    return raw;
}

/* The room an upload of len bytes takes on a file system of blocks of block bytes (the helper's
 * statvfs f_frsize; 4 KiB when it did not say): its blocks and one more for its entry. */
static uint64_t room_for(size_t len, json_int_t block)
{
    uint64_t b = block >= 512 && block <= 1024 * 1024 ? (uint64_t)block : 4096; /* the helper's f_frsize */
    return ((uint64_t)len + b - 1) / b * b + b;
}

/* The helper made the upload's folders and said where it goes: writes the bytes beside the
 * target under a temporary name, unless they cannot fit. */
static void put_upload(file_op *f)
{
    char msg[RB_ERR_LEN];
    json_int_t avail = json_integer_value(json_object_get(f->info, "free"));
    json_int_t total = json_integer_value(json_object_get(f->info, "total"));
    if (room_for(f->len, json_integer_value(json_object_get(f->info, "block"))) > (uint64_t)avail) {
        /* nothing was written: only the folders the helper made */
        snprintf(msg, sizeof(msg),
                 "could not write '%.200s': the session's /workspace is full: the file needs %zu bytes, %lld of the "
                 "workspace's %lld bytes are free (workspace_size); nothing was changed. Delete files there or "
                 "create the session with a larger execution_options.workspace_size",
                 f->rel, f->len, (long long)avail, (long long)total);
        fail(f, RB_ENOSPC, msg);
        return;
    }
    rb_buf tar;
    rb_buf_init(&tar, f->len + 64 * 1024);
    rb_err e = tar_build_file(&tar, f->temp, f->data, f->len, 0644, SANDBOX_UID, SANDBOX_UID, rb_now_ms() / 1000, msg);
    free(f->data);
    f->data = NULL;
    char *dir = path_bytes(json_string_value(json_object_get(f->info, "dir")));
    if (e == RB_OK)
        e = backend_archive_put(core_heart_backend(f->c), f->container, dir, tar.data, tar.len, uploaded_cb, f, msg);
    free(dir);
    rb_buf_dispose(&tar);
    if (e != RB_OK)
        fail(f, e, msg);
}

/* Works out what the helper said (r: its exit code and output) and takes the next step (or
 * answers). */
static void helper_done(file_op *f, const backend_exec_result *r)
{
    char msg[RB_ERR_LEN];
    json_t *doc = NULL;
    rb_err e = file_helper_answer(f->step, f->rel[0] ? f->rel : ".", r->exit_code, r->out, r->out_len, &doc, msg);
    if (f->step == FILE_HELPER_DISCARD) {
        json_decref(doc);
        discarded(f);
        return;
    }
    if (e == RB_ETOOBIG) {
        fail(f, e, too_big(f, json_integer_value(json_object_get(doc, "size")), msg));
        json_decref(doc);
        return;
    }
    if (e != RB_OK) {
        if (f->step == FILE_HELPER_COMMIT)
            discard(f, e, msg); /* the helper removed it; this makes sure */
        else
            fail(f, e, msg);
        return;
    }
    json_decref(f->info);
    f->info = doc;
    switch (f->step) {
    case FILE_HELPER_LIST: {
        json_t *out = json_pack("{s:s, s:O, s:O}", "session_id", f->session_id, "files", json_object_get(doc, "files"),
                                "truncated", json_object_get(doc, "truncated"));
        if (json_object_get(doc, "total") != NULL) { /* core_file_list_dir */
            json_object_set_new(out, "path", json_string(f->rel[0] ? f->rel : "."));
            json_object_set(out, "total", json_object_get(doc, "total"));
        }
        finish(f, RB_OK, NULL, out);
        return;
    }
    case FILE_HELPER_MKDIR:
        finish(f, RB_OK, NULL, json_pack("{s:s, s:s, s:s}", "session_id", f->session_id, "path", f->rel, "type",
                                         "directory"));
        return;
    case FILE_HELPER_DELETE:
        finish(f, RB_OK, NULL, json_pack("{s:s, s:s, s:b}", "session_id", f->session_id, "path", f->rel, "deleted", 1));
        return;
    case FILE_HELPER_PUT:
        put_upload(f);
        return;
    case FILE_HELPER_COMMIT: {
        json_t *out = json_pack("{s:s, s:s%, s:I}", "session_id", f->session_id, "path", f->rel, strlen(f->rel),
                                "size", (json_int_t)f->len);
        core_json_time(out, "modified", rb_now_ms());
        finish(f, RB_OK, NULL, out);
        return;
    }
    default:
        break;
    }
    /* download */
    json_int_t size = json_integer_value(json_object_get(doc, "size"));
    const char *real_form = json_string_value(json_object_get(doc, "real"));
    if (json_is_true(json_object_get(doc, "linked")))
        f->link = xstrdup(real_form + strlen(FILES_WORKSPACE "/"));
    if ((uint64_t)size > f->max) {
        too_big(f, size, msg);
        e = RB_ETOOBIG;
    } else {
        e = reserve(f, (size_t)size, msg);
    }
    char *real = path_bytes(real_form);
    if (e == RB_OK)
        e = backend_archive_get(core_heart_backend(f->c), f->container, real, f->reserved, downloaded_cb, f, msg);
    free(real);
    if (e != RB_OK)
        end_download(f, e, msg, NULL);
}

static void helper_exited_cb(void *data, rb_err err, const char *errmsg, const backend_exec_result *r)
{
    file_op *f = data;
    char msg[RB_ERR_LEN];
    if (err != RB_OK) {
        /* RB_ECONFLICT: the container stopped, the session's sandbox is gone */
        snprintf(msg, sizeof(msg),
                 err == RB_ECONFLICT ? "could not run the file helper in the sandbox: %s"
                                     : "the sandbox's file helper failed: %s",
                 errmsg);
        if (f->step == FILE_HELPER_DISCARD)
            discarded(f);
        else if (f->step == FILE_HELPER_COMMIT && err != RB_ECANCELED)
            discard(f, err, msg);
        else
            fail(f, err, msg);
        return;
    }
    helper_done(f, r);
}

/* Runs the helper's step on f's path with arg in f's sandbox; helper_exited_cb follows. */
static rb_err run_helper(file_op *f, file_helper_op step, const char *rel, const char *arg, char *err)
{
    const char *argv[FILE_HELPER_ARGV_LEN];
    file_helper_argv(argv, step, rel, arg);
    const char **env = file_helper_env(f->session_env);
    backend_exec_spec spec = {.argv = argv,
                              .user = SANDBOX_USER,
                              .working_dir = FILES_WORKSPACE,
                              .max_output = HELPER_OUTPUT_MAX,
                              .timeout_ms = HELPER_TIMEOUT_MS,
                              .env = env};
    f->step = step;
    rb_err e = backend_exec(core_heart_backend(f->c), f->container, &spec, helper_exited_cb, f, err);
    free(env);
    return e;
}

/* Starts a file operation in session_id's sandbox: checks the session and path, then creates
 * the helper's exec. Its answer goes to cb (JSON answers) or fcb (downloads) with cbdata. On
 * success *handle (if not NULL) is the cancel handle and *out (if not NULL) the operation. */
static rb_err start(rb_core *c, const core_caller *who, enum fop_kind kind, const char *session_id, const char *path,
                    rb_err root, size_t max, size_t upload_len, core_cb cb, core_file_cb fcb, void *cbdata, core_op **handle,
                    file_op **out, char *err)
{
    core_session_view s;
    rb_err e = core_heart_session(c, who, session_id, &s, err);
    if (e != RB_OK)
        return e;
    char *rel = NULL;
    e = files_normalize_path(path, root, &rel, err);
    if (e != RB_OK)
        return e;
    /* an upload into a volume stays within its quota (core/volumes/volumes.h) */
    if (kind == OP_UPLOAD && (e = volumes_upload_check(c, s.mounts, rel, upload_len, err)) != RB_OK) {
        free(rel);
        return e;
    }
    file_op *f = xcalloc(1, sizeof(*f));
    f->c = c;
    f->kind = kind;
    f->mounts = json_incref(s.mounts);
    f->op = xcalloc(1, sizeof(*f->op));
    f->session_id = xstrdup(s.id);
    f->container = xstrdup(s.container_id);
    f->session_env = json_incref(s.env);
    f->rel = rel;
    size_t max_download = core_heart_settings(c)->max_download;
    f->max = max == 0 || max > max_download ? max_download : max;
    f->cb = cb;
    f->fcb = fcb;
    f->cbdata = cbdata;

    static const file_helper_op steps[] = {FILE_HELPER_LIST, FILE_HELPER_PUT, FILE_HELPER_GET, FILE_HELPER_DELETE,
                                           FILE_HELPER_MKDIR};
    char arg[48];
    if (kind == OP_UPLOAD) {
        file_helper_temp_name(f->temp);
        snprintf(arg, sizeof(arg), "%s", f->temp);
    } else if (kind == OP_LIST && max != (size_t)-1) { /* one folder (core_file_list_dir) */
        snprintf(arg, sizeof(arg), "dir:%zu", max < LIST_MAX_ENTRIES ? max : (size_t)LIST_MAX_ENTRIES);
    } else {
        snprintf(arg, sizeof(arg), "%zu", kind == OP_LIST ? (size_t)LIST_MAX_ENTRIES : f->max);
    }
    e = run_helper(f, steps[kind], rel, arg, err);
    if (e != RB_OK) {
        file_op_free(f);
        return e;
    }
    core_heart_touch(c, f->session_id);
    static const char *const audited[] = {NULL, "file_upload", "file_download", "file_delete", NULL}; /* fop_kind */
    audit_file_begin(&f->audit, audited[kind], who, path); /* recorded when it ends */
    if (handle != NULL)
        *handle = f->op;
    if (out != NULL)
        *out = f;
    return RB_OK;
}

/* ---- entry points ----------------------------------------------------------------------- */

rb_err core_file_upload(rb_core *c, const core_caller *who, const char *session_id, const char *path, const void *data, size_t len,
                        core_cb cb, void *cbdata, core_op **handle, char *err)
{
    size_t max_upload = core_heart_settings(c)->max_upload;
    if (len > max_upload)
        return rb_fail(RB_ETOOBIG, err, "the file is %zu bytes; the upload limit is %zu bytes (max-upload)", len,
                       max_upload);
    file_op *f = NULL;
    rb_err e = start(c, who, OP_UPLOAD, session_id, path, RB_ECONFLICT, 0, len, cb, NULL, cbdata, handle, &f, err);
    if (e != RB_OK)
        return e;
    f->data = xmalloc(len > 0 ? len : 1);
    if (len > 0)
        memcpy(f->data, data, len);
    f->len = len;
    return RB_OK;
}

rb_err core_file_list(rb_core *c, const core_caller *who, const char *session_id, core_cb cb, void *cbdata,
                      core_op **handle, char *err)
{
    /* max (size_t)-1: the whole tree; core_file_list_dir gives one folder's max */
    return start(c, who, OP_LIST, session_id, "/workspace", RB_OK, (size_t)-1, 0, cb, NULL, cbdata, handle, NULL, err);
}

rb_err core_file_list_dir(rb_core *c, const core_caller *who, const char *session_id, const char *path, size_t max,
                          core_cb cb, void *cbdata, core_op **handle, char *err)
{
    return start(c, who, OP_LIST, session_id, path, RB_OK, max < LIST_MAX_ENTRIES ? max : LIST_MAX_ENTRIES, 0, cb, NULL,
                 cbdata, handle, NULL, err);
}

rb_err core_file_download(rb_core *c, const core_caller *who, const char *session_id, const char *path, size_t max,
                          core_file_cb cb, void *cbdata, core_op **handle, char *err)
{
    return start(c, who, OP_DOWNLOAD, session_id, path, RB_ECONFLICT, max, 0, NULL, cb, cbdata, handle, NULL, err);
}

rb_err core_file_delete(rb_core *c, const core_caller *who, const char *session_id, const char *path, core_cb cb,
                        void *cbdata, core_op **handle, char *err)
{
    return start(c, who, OP_DELETE, session_id, path, RB_EFORBIDDEN, 0, 0, cb, NULL, cbdata, handle, NULL, err);
}

/* ---- files written by an execution -------------------------------------------------------- */

json_t *files_written_from_runner(json_t *list)
{
    json_t *out = json_array();
    size_t i;
    json_t *item;
    json_array_foreach(list, i, item)
    {
        json_t *path = json_object_get(item, "path"), *size = json_object_get(item, "size"),
               *mod = json_object_get(item, "modified");
        if (!json_is_string(path) || json_string_length(path) == 0 || json_string_length(path) > TAR_NAME_MAX ||
            !json_is_integer(size) || !json_is_integer(mod) || json_array_size(out) >= 100)
            continue;
        json_array_append_new(out, json_pack("{s:O, s:O, s:O}", "path", path, "size", size, "modified", mod));
    }
    return out;
}

json_t *files_written_api(json_t *list)
{
    json_t *out = json_array();
    size_t i;
    json_t *item;
    json_array_foreach(list, i, item)
    {
        json_t *o = json_pack("{s:O?, s:O?}", "path", json_object_get(item, "path"), "size",
                              json_object_get(item, "size"));
        if (o == NULL)
            continue;
        json_t *mod = json_object_get(item, "modified");
        if (json_is_integer(mod))
            core_json_time(o, "modified", json_integer_value(mod));
        json_array_append_new(out, o);
    }
    return out;
}

rb_err core_file_mkdir(rb_core *c, const core_caller *who, const char *session_id, const char *path, core_cb cb,
                       void *cbdata, core_op **handle, char *err)
{
    return start(c, who, OP_MKDIR, session_id, path, RB_ECONFLICT, 0, 0, cb, NULL, cbdata, handle, NULL, err);
}

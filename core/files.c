/*
 * files.c: files in a session's /workspace (core/core.h, "Files"). Bytes move through the
 * backend's archive calls (a one-file tar in, a tar out), so runboxd needs no shared folder
 * with the sandbox. /workspace is the sandbox's workspace mount (sandbox.c), which those calls
 * reach (core/backend.h).
 *
 * Path rules: the caller's path is checked here first (relative to /workspace or absolute
 * under it; no "..", NUL or control characters). Symlinks can only be judged inside the
 * container, so each operation starts with a small Python helper run (backend_exec) as the
 * sandbox user: it resolves the path with realpath, refuses one that leaves /workspace
 * (RB_EFORBIDDEN), creates parent folders for uploads, and lists or deletes. The engine itself
 * resolves archive paths inside the container's root (Docker does), so even a symlink swapped
 * in between the check and the copy cannot reach the host.
 *
 * The helper runs where the session rules (issue 9, finding 9), so nothing of the session
 * chooses what runs: its code travels in argv (nothing is read from /workspace), the programs
 * are named by absolute paths on the image's read-only root (no PATH lookup), every variable
 * the session set (execution_options.environment_variables: PATH, LD_PRELOAD, ...) is removed
 * by the engine before env(1) starts, and env -i hands python3 -I -S a fixed environment.
 * /workspace itself stays executable: users run their own scripts there and the packages
 * installed into /workspace/.runbox load native code (a noexec mount would break both, and
 * the helper does not need it). Its answer is still untrusted (user code may have changed
 * the sandbox): it is size-capped and validated like any input, paths exactly (normal form,
 * /workspace or under it, no "." or ".." segments), never by prefix.
 *
 * Memory (issue 9, finding 6e): a download holds its file once. The engine's tar answer is
 * handed over, not copied (backend_bytes_cb), and the core_file given to the protocol points
 * at the entry's bytes inside it, so the protocol can send them from there and free the
 * archive when the answer is written. Downloads in flight share a budget
 * (max-download-memory): each reserves its size as soon as the helper has said it, before a
 * byte is read, and gives it back in core_file_free (or when it fails); one that does not fit
 * is refused with RB_EBUSY. The budget is refcounted, so a file may outlive the core.
 *
 * This module is not the path policy of uploads in other places (deps.c) and does not keep
 * files anywhere: bytes pass through runboxd's memory only.
 */
#include <assert.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/internal.h"
#include "base/tar.h"

#define WORKSPACE "/workspace"
#define HELPER_OUTPUT_MAX (8u * 1024 * 1024)
#define HELPER_TIMEOUT_MS 60000L
/* What a one-file tar adds to the file: header, PAX records for long or non-ASCII names,
 * padding and the end blocks. A download reserves its size plus this, and Docker's answer may
 * be no larger, so a file that grows after the helper measured it is refused, not held. */
#define TAR_SLACK (64u * 1024)
#define LIST_MAX_ENTRIES 10000
#define SANDBOX_UID 1000
#define ANSWER_PATH_MAX 4096 /* longest path the helper may answer (Docker's archive calls take no more) */
#define NAME_MAX_BYTES 255   /* longest file name */
/* The helper's programs, on the image's read-only root (docker/sandbox/Dockerfile), and the
 * environment python gets: nothing the session can set. */
#define HELPER_ENV_PROGRAM "/usr/bin/env"
#define HELPER_PYTHON "/usr/bin/python3"
#define HELPER_PATH "PATH=/usr/bin:/bin"
#define HELPER_LANG "LANG=C.UTF-8"

/* Exit codes of the helper, each with its meaning for the API. */
enum { H_OK = 0, H_ESCAPE = 3, H_MISSING = 4, H_NOTFILE = 5, H_TOOBIG = 6 };

/* The helper: argv[1] is the operation, argv[2] the path relative to /workspace, argv[3] a
 * size limit. It prints one JSON object on stdout. */
static const char helper_py[] =
    "import json,os,shutil,stat,sys\n"
    "R='/workspace'\n"
    "op,rel,lim=sys.argv[1],sys.argv[2],int(sys.argv[3])\n"
    "def inside(x): return x==R or x.startswith(R+'/')\n"
    "def out(code,**k):\n"
    "  sys.stdout.write(json.dumps(k)); sys.stdout.flush(); os._exit(code)\n"
    "def kind(m):\n"
    "  return 'directory' if stat.S_ISDIR(m) else 'file' if stat.S_ISREG(m) else "
    "'symlink' if stat.S_ISLNK(m) else 'other'\n"
    "p=os.path.join(R,rel) if rel else R\n"
    "if op=='list':\n"
    "  fs=[];tr=False\n"
    "  for dp,dns,fns in os.walk(R):\n"
    "    if dp==R and '.runbox' in dns: dns.remove('.runbox')\n"
    "    dns.sort()\n"
    "    for n in sorted(dns+fns):\n"
    "      q=os.path.join(dp,n)\n"
    "      try: st=os.lstat(q)\n"
    "      except OSError: continue\n"
    "      t=kind(st.st_mode)\n"
    "      e={'path':os.path.relpath(q,R),'type':t,'size':st.st_size if t=='file' else 0,"
    "'modified':int(st.st_mtime*1000)}\n"
    "      if t=='symlink':\n"
    "        e['target']=os.readlink(q); e['escapes']=not inside(os.path.realpath(q))\n"
    "      fs.append(e)\n"
    "      if len(fs)>=lim: tr=True; break\n"
    "    if tr: break\n"
    "  out(0,files=fs,truncated=tr)\n"
    "if op=='put':\n"
    "  d=os.path.realpath(os.path.dirname(p))\n"
    "  if not inside(d): out(3,real=d)\n"
    "  try: os.makedirs(d,exist_ok=True)\n"
    "  except OSError as x: out(5,error=str(x))\n"
    "  d=os.path.realpath(d)\n"
    "  if not inside(d) or not os.path.isdir(d): out(3,real=d)\n"
    "  t=os.path.join(d,os.path.basename(p))\n"
    "  if os.path.isdir(t) and not os.path.islink(t): out(5,error='is a directory')\n"
    "  out(0,dir=d,name=os.path.basename(p))\n"
    "if op=='get':\n"
    "  r=os.path.realpath(p)\n"
    "  if not inside(r): out(3,real=r)\n"
    "  try: st=os.stat(r)\n"
    "  except OSError: out(4)\n"
    "  if not stat.S_ISREG(st.st_mode): out(5,type=kind(st.st_mode))\n"
    "  if st.st_size>lim: out(6,size=st.st_size)\n"
    "  out(0,real=r,size=st.st_size,modified=int(st.st_mtime*1000))\n"
    "if op=='delete':\n"
    "  d=os.path.realpath(os.path.dirname(p))\n"
    "  if not inside(d): out(3,real=d)\n"
    "  t=os.path.join(d,os.path.basename(p))\n"
    "  if t==R: out(3,real=t)\n"
    "  if not os.path.lexists(t): out(4)\n"
    "  if os.path.isdir(t) and not os.path.islink(t): shutil.rmtree(t)\n"
    "  else: os.unlink(t)\n"
    "  out(0)\n"
    "out(2,error='unknown operation')\n";

enum fop_kind { OP_LIST, OP_UPLOAD, OP_DOWNLOAD, OP_DELETE };

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

typedef struct fop {
    rb_core *c;
    core_op *op; /* the caller's handle: only its cancelled flag is used */
    enum fop_kind kind;
    char session_id[RB_ID_LEN];
    char *container;
    char *rel;   /* path relative to /workspace ("" = the workspace) */
    char *data;  /* upload bytes */
    size_t len;
    size_t max;  /* largest file a download accepts */
    size_t reserved; /* bytes of c->downloads this download holds (from budget, a reference) */
    download_budget *budget;
    json_t *info; /* the helper's answer */
    core_cb cb;
    core_file_cb fcb;
    void *cbdata;
} fop;

static void fop_free(fop *f)
{
    if (f->budget != NULL)
        budget_release(f->budget, f->reserved);
    json_decref(f->info);
    free(f->container);
    free(f->rel);
    free(f->data);
    free(f->op);
    free(f);
}

static void finish(fop *f, rb_err e, const char *msg, json_t *body)
{
    if (!f->op->cancelled && f->cb != NULL)
        f->cb(f->cbdata, e, e == RB_OK ? NULL : msg, body);
    else
        json_decref(body);
    fop_free(f);
}

/* Ends a download: file (NULL on failure) goes to the caller with f's reservation, or is freed
 * when the caller has cancelled. */
static void finish_file(fop *f, rb_err e, const char *msg, core_file *file)
{
    if (!f->op->cancelled && f->fcb != NULL)
        f->fcb(f->cbdata, e, e == RB_OK ? NULL : msg, file);
    else
        core_file_free(file);
    fop_free(f);
}

static void fail(fop *f, rb_err e, const char *msg)
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
    if (c->downloads != NULL)
        budget_release(c->downloads, 0);
    c->downloads = NULL;
}

/* Reserves size bytes (plus the tar's slack) of c's download budget for f. RB_EBUSY when
 * downloads in flight hold so much that this one would take them past max-download-memory;
 * one download alone is always admitted. */
static rb_err reserve(fop *f, size_t size, char *err)
{
    rb_core *c = f->c;
    if (c->downloads == NULL) {
        c->downloads = xcalloc(1, sizeof(*c->downloads));
        c->downloads->max = c->cfg->max_download_memory;
        c->downloads->refs = 1;
    }
    download_budget *b = c->downloads;
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

/* ---- paths ------------------------------------------------------------------------------ */

rb_err files_normalize_path(const char *path, int allow_root, char **out, char *err)
{
    *out = NULL;
    if (path == NULL)
        return rb_fail(RB_EINVAL, err, "path: required (a path relative to /workspace, e.g. \"data/input.csv\")");
    size_t n = strlen(path);
    if (n > TAR_NAME_MAX)
        return rb_fail(RB_EINVAL, err, "path: longer than %d bytes", TAR_NAME_MAX);
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)path[i];
        if (ch < 0x20 || ch == 0x7f)
            return rb_fail(RB_EINVAL, err, "path: control characters are not allowed");
        if (ch == '\\')
            return rb_fail(RB_EINVAL, err, "path: use '/' to separate folders, not '\\'");
    }
    const char *p = path;
    if (p[0] == '/') {
        size_t w = strlen(WORKSPACE);
        if (strncmp(p, WORKSPACE, w) != 0 || (p[w] != '\0' && p[w] != '/'))
            return rb_fail(RB_EFORBIDDEN, err,
                           "path: '%.200s' is outside /workspace; files can only be read or written under /workspace",
                           path);
        p += w;
    }
    rb_buf b;
    rb_buf_init(&b, n + 1);
    while (*p != '\0') {
        while (*p == '/')
            p++;
        if (*p == '\0')
            break;
        const char *end = strchr(p, '/');
        size_t seg = end ? (size_t)(end - p) : strlen(p);
        if (seg == 2 && p[0] == '.' && p[1] == '.') {
            rb_buf_dispose(&b);
            return rb_fail(RB_EFORBIDDEN, err, "path: '..' is not allowed; give a path inside /workspace");
        }
        if (!(seg == 1 && p[0] == '.')) {
            if (b.len > 0)
                rb_buf_append(&b, "/", 1);
            rb_buf_append(&b, p, seg);
        }
        p += seg;
    }
    rb_buf_append(&b, "", 1);
    if (b.len == 1 && !allow_root) {
        rb_buf_dispose(&b);
        return rb_fail(RB_EINVAL, err, "path: names /workspace itself; give a file inside it");
    }
    *out = b.data;
    return RB_OK;
}

/* Whether s[0..n) is a usable path segment: not empty, ".", ".." or longer than a file name,
 * without '/' or control characters. */
static int segment_ok(const char *s, size_t n)
{
    if (n == 0 || n > NAME_MAX_BYTES || (n == 1 && s[0] == '.') || (n == 2 && s[0] == '.' && s[1] == '.'))
        return 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)s[i];
        if (ch == '/' || ch < 0x20 || ch == 0x7f)
            return 0;
    }
    return 1;
}

/* Whether p is a path relative to /workspace in normal form: segments (segment_ok) separated
 * by single slashes, none leading or trailing. */
static int relative_path_ok(const char *p)
{
    if (strlen(p) > ANSWER_PATH_MAX)
        return 0;
    for (;;) {
        const char *end = strchr(p, '/');
        size_t n = end ? (size_t)(end - p) : strlen(p);
        if (!segment_ok(p, n))
            return 0;
        if (end == NULL)
            return 1;
        p = end + 1;
    }
}

/* Whether the helper's answer p names /workspace itself (only when allow_root) or a path under
 * it, exactly: absolute, in normal form (relative_path_ok after "/workspace/"). A prefix test
 * would let "/workspace/../etc/passwd" through. */
static int workspace_path_ok(const char *p, int allow_root)
{
    size_t w = strlen(WORKSPACE);
    if (p == NULL || strlen(p) > ANSWER_PATH_MAX || strncmp(p, WORKSPACE, w) != 0)
        return 0;
    if (p[w] == '\0')
        return allow_root;
    return p[w] == '/' && relative_path_ok(p + w + 1);
}

const char *files_content_type(const char *name)
{
    static const char *const types[][2] = {
        {".png", "image/png"},         {".jpg", "image/jpeg"},        {".jpeg", "image/jpeg"},
        {".gif", "image/gif"},         {".svg", "image/svg+xml"},     {".webp", "image/webp"},
        {".pdf", "application/pdf"},   {".json", "application/json"}, {".csv", "text/csv; charset=utf-8"},
        {".txt", "text/plain; charset=utf-8"}, {".md", "text/markdown; charset=utf-8"},
        {".html", "text/html; charset=utf-8"}, {".py", "text/x-python; charset=utf-8"},
        {".log", "text/plain; charset=utf-8"}, {".xml", "application/xml"}, {".zip", "application/zip"},
        {".gz", "application/gzip"},   {".tar", "application/x-tar"}, {".parquet", "application/vnd.apache.parquet"},
        {".xlsx", "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"},
    };
    const char *dot = strrchr(name, '.');
    if (dot != NULL)
        for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++)
            if (strcasecmp(dot, types[i][0]) == 0)
                return types[i][1];
    return "application/octet-stream";
}

/* ---- the chain: exec helper, then the archive call ---------------------------------------- */

static void uploaded_cb(void *data, rb_err err, const char *errmsg)
{
    fop *f = data;
    char msg[RB_ERR_LEN];
    if (err != RB_OK) {
        if (err != RB_ECANCELED)
            snprintf(msg, sizeof(msg), "could not copy the file into the sandbox: %s", errmsg);
        else
            snprintf(msg, sizeof(msg), "%s", errmsg);
        fail(f, err == RB_ENOTFOUND ? RB_ECONFLICT : err, msg);
        return;
    }
    json_t *out = json_pack("{s:s, s:s%, s:I}", "session_id", f->session_id, "path", f->rel, strlen(f->rel), "size",
                            (json_int_t)f->len);
    core_json_time(out, "modified", rb_now_ms());
    finish(f, RB_OK, NULL, out);
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

/* Docker's answer (tar, owned from here on) to the archive call of download f: hands the
 * first entry's bytes to the caller inside the tar, with f's reservation. */
static void downloaded_cb(void *data, rb_err err, const char *errmsg, char *tar, size_t len)
{
    fop *f = data;
    char msg[RB_ERR_LEN];
    if (err != RB_OK) {
        /* f->c is not touched here: a cancellation may come after core_free */
        if (err == RB_ETOOBIG)
            snprintf(msg, sizeof(msg), "the file grew past the %zu bytes measured a moment before; try again",
                     f->reserved - TAR_SLACK);
        else
            snprintf(msg, sizeof(msg), "could not copy the file out of the sandbox: %s", errmsg);
        fail(f, err == RB_ETOOBIG ? RB_ECONFLICT : err, msg);
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
        fail(f, err, msg);
        return;
    }
    const char *name = strrchr(f->rel, '/');
    name = name ? name + 1 : f->rel;
    held_file *h = xcalloc(1, sizeof(*h));
    h->tar = tar;
    h->name = xstrdup(name);
    h->pub = (core_file){fc.data, fc.len, files_content_type(name), h->name};
    h->budget = f->budget; /* the reservation moves to the file */
    h->reserved = f->reserved;
    f->budget = NULL;
    f->reserved = 0;
    finish_file(f, RB_OK, NULL, &h->pub);
}

/* The API form of the helper's file list (untrusted): entries with a path in normal form
 * (relative_path_ok), a known type, integer size and time (as RFC 3339), and for symlinks a
 * target and whether it escapes; anything else is left out. At most LIST_MAX_ENTRIES. */
static json_t *checked_listing(json_t *files)
{
    static const char *const types[] = {"file", "directory", "symlink", "other"};
    json_t *out = json_array();
    size_t i;
    json_t *item;
    json_array_foreach(files, i, item)
    {
        const char *path = json_string_value(json_object_get(item, "path"));
        const char *type = json_string_value(json_object_get(item, "type"));
        json_t *size = json_object_get(item, "size"), *mod = json_object_get(item, "modified");
        int known = 0;
        for (size_t t = 0; type != NULL && t < sizeof(types) / sizeof(types[0]); t++)
            known |= strcmp(type, types[t]) == 0;
        if (json_array_size(out) >= LIST_MAX_ENTRIES || path == NULL || !relative_path_ok(path) || !known ||
            !json_is_integer(size) || json_integer_value(size) < 0 || !json_is_integer(mod))
            continue;
        json_t *e = json_pack("{s:s, s:s, s:O}", "path", path, "type", type, "size", size);
        core_json_time(e, "modified", json_integer_value(mod));
        if (strcmp(type, "symlink") == 0) {
            const char *target = json_string_value(json_object_get(item, "target"));
            if (target != NULL && strlen(target) <= ANSWER_PATH_MAX)
                json_object_set_new(e, "target", json_string(target));
            json_object_set_new(e, "escapes", json_boolean(!json_is_false(json_object_get(item, "escapes"))));
        }
        json_array_append_new(out, e);
    }
    return out;
}

/* The message (in msg, returned) for download f of a file of size bytes, more than f->max. */
static const char *too_big(const fop *f, json_int_t size, char *msg)
{
    const char *shown = f->rel[0] ? f->rel : ".";
    if (f->max == f->c->cfg->max_download)
        snprintf(msg, RB_ERR_LEN, "'%.200s' is %lld bytes, more than the download limit of %zu bytes (max-download)",
                 shown, (long long)size, f->max);
    else
        snprintf(msg, RB_ERR_LEN, "'%.200s' is %lld bytes, more than the %zu bytes this download may take", shown,
                 (long long)size, f->max);
    return msg;
}

/* Works out what the helper said (r: its exit code and output) and starts the archive step (or
 * answers). */
static void helper_done(fop *f, const backend_exec_result *r)
{
    char msg[RB_ERR_LEN];
    rb_err e;
    json_error_t jerr;
    int code = r->exit_code;
    f->info = json_loadb(r->out, r->out_len, 0, &jerr);
    if (!json_is_object(f->info)) {
        snprintf(msg, sizeof(msg), "the sandbox's file helper failed (exit code %d): %.300s", code,
                 r->err_len > 0 ? r->err : "no output");
        for (char *p = msg; *p; p++)
            if (*p == '\n')
                *p = ' ';
        fail(f, RB_EIO, msg);
        return;
    }
    const char *shown = f->rel[0] ? f->rel : ".";
    switch (code) {
    case H_OK:
        break;
    case H_ESCAPE:
        snprintf(msg, sizeof(msg), "path '%.200s' leads outside /workspace (through a symbolic link); refused", shown);
        fail(f, RB_EFORBIDDEN, msg);
        return;
    case H_MISSING:
        snprintf(msg, sizeof(msg), "no file '%.200s' in the session's /workspace", shown);
        fail(f, RB_ENOTFOUND, msg);
        return;
    case H_NOTFILE:
        snprintf(msg, sizeof(msg), "'%.200s' is not a regular file (%s)", shown,
                 json_string_value(json_object_get(f->info, "type"))
                     ? json_string_value(json_object_get(f->info, "type"))
                     : (json_string_value(json_object_get(f->info, "error")) ? json_string_value(json_object_get(
                                                                                   f->info, "error"))
                                                                             : "a folder"));
        fail(f, f->kind == OP_UPLOAD ? RB_ECONFLICT : RB_EINVAL, msg);
        return;
    case H_TOOBIG:
        fail(f, RB_ETOOBIG, too_big(f, json_integer_value(json_object_get(f->info, "size")), msg));
        return;
    default:
        snprintf(msg, sizeof(msg), "the sandbox's file helper failed (exit code %d)", code);
        fail(f, RB_EIO, msg);
        return;
    }

    if (f->kind == OP_LIST) {
        json_t *files = json_object_get(f->info, "files");
        if (!json_is_array(files)) {
            fail(f, RB_EIO, "the sandbox's file helper gave no file list");
            return;
        }
        json_t *out = json_pack("{s:s, s:o, s:b}", "session_id", f->session_id, "files", checked_listing(files),
                                "truncated", json_is_true(json_object_get(f->info, "truncated")));
        finish(f, RB_OK, NULL, out);
        return;
    }
    if (f->kind == OP_DELETE) {
        finish(f, RB_OK, NULL, json_pack("{s:s, s:s, s:b}", "session_id", f->session_id, "path", f->rel, "deleted", 1));
        return;
    }
    if (f->kind == OP_UPLOAD) {
        const char *dir = json_string_value(json_object_get(f->info, "dir"));
        const char *name = json_string_value(json_object_get(f->info, "name"));
        if (!workspace_path_ok(dir, 1) || name == NULL || !segment_ok(name, strlen(name))) {
            fail(f, RB_EIO, "the sandbox's file helper gave an unusable folder");
            return;
        }
        rb_buf tar;
        rb_buf_init(&tar, f->len + 64 * 1024);
        e = tar_build_file(&tar, name, f->data, f->len, 0644, SANDBOX_UID, SANDBOX_UID, rb_now_ms() / 1000, msg);
        free(f->data);
        f->data = NULL;
        if (e == RB_OK)
            e = backend_archive_put(f->c->be, f->container, dir, tar.data, tar.len, uploaded_cb, f, msg);
        rb_buf_dispose(&tar);
        if (e != RB_OK)
            fail(f, e, msg);
        return;
    }
    /* download */
    const char *real = json_string_value(json_object_get(f->info, "real"));
    json_t *size = json_object_get(f->info, "size");
    if (!workspace_path_ok(real, 0) || !json_is_integer(size) || json_integer_value(size) < 0) {
        fail(f, RB_EIO, "the sandbox's file helper gave an unusable path or size");
        return;
    }
    if ((uint64_t)json_integer_value(size) > f->max) {
        fail(f, RB_ETOOBIG, too_big(f, json_integer_value(size), msg));
        return;
    }
    e = reserve(f, (size_t)json_integer_value(size), msg);
    if (e == RB_OK)
        e = backend_archive_get(f->c->be, f->container, real, f->reserved, downloaded_cb, f, msg);
    if (e != RB_OK)
        fail(f, e, msg);
}

static void helper_exited_cb(void *data, rb_err err, const char *errmsg, const backend_exec_result *r)
{
    fop *f = data;
    char msg[RB_ERR_LEN];
    if (err != RB_OK) {
        /* RB_ECONFLICT: the container stopped, the session's sandbox is gone */
        snprintf(msg, sizeof(msg),
                 err == RB_ECONFLICT ? "could not run the file helper in the sandbox: %s"
                                     : "the sandbox's file helper failed: %s",
                 errmsg);
        fail(f, err, msg);
        return;
    }
    helper_done(f, r);
}

/* The engine-side environment changes for s's helper (heap array, strings borrowed from
 * s->options): every variable the session set is removed, so that not even env(1), which
 * clears the rest, starts with the session's PATH or LD_PRELOAD; then PATH is fixed. */
static const char **helper_env(session *s)
{
    json_t *vars = json_object_get(s->options, "environment_variables");
    const char **env = xcalloc(json_object_size(vars) + 2, sizeof(*env));
    size_t n = 0;
    const char *k;
    json_t *v;
    json_object_foreach(vars, k, v)
        env[n++] = k;
    env[n++] = HELPER_PATH;
    return env;
}

/* Starts a file operation in session_id's sandbox: checks the session and path, then creates
 * the helper's exec. Its answer goes to cb (JSON answers) or fcb (downloads) with cbdata. On
 * success *handle (if not NULL) is the cancel handle and *out (if not NULL) the operation. */
static rb_err start(rb_core *c, enum fop_kind kind, const char *session_id, const char *path, int allow_root,
                    size_t max, core_cb cb, core_file_cb fcb, void *cbdata, core_op **handle, fop **out, char *err)
{
    session *s = map_get(&c->sessions, session_id);
    if (s == NULL)
        return rb_fail(RB_ENOTFOUND, err, "no live session with id '%.64s'; create one with POST /sessions",
                       session_id);
    if (strcmp(s->status, "ready") != 0 && strcmp(s->status, "busy") != 0)
        return rb_fail(RB_ECONFLICT, err, "session %s is %s; files are available once it is ready", s->id, s->status);
    if (s->container_id == NULL)
        return rb_fail(RB_ECONFLICT, err, "session %s has no sandbox container", s->id);
    char *rel = NULL;
    rb_err e = files_normalize_path(path, allow_root, &rel, err);
    if (e != RB_OK)
        return e;
    fop *f = xcalloc(1, sizeof(*f));
    f->c = c;
    f->kind = kind;
    f->op = xcalloc(1, sizeof(*f->op));
    snprintf(f->session_id, sizeof(f->session_id), "%s", s->id);
    f->container = xstrdup(s->container_id);
    f->rel = rel;
    f->max = max == 0 || max > c->cfg->max_download ? c->cfg->max_download : max;
    f->cb = cb;
    f->fcb = fcb;
    f->cbdata = cbdata;

    static const char *const ops[] = {"list", "put", "get", "delete"};
    char limit[32];
    snprintf(limit, sizeof(limit), "%zu", kind == OP_LIST ? (size_t)LIST_MAX_ENTRIES : f->max);
    const char *const argv[] = {HELPER_ENV_PROGRAM, "-i", HELPER_PATH, HELPER_LANG, HELPER_PYTHON, "-I", "-S", "-c",
                                helper_py, ops[kind], rel, limit, NULL};
    const char **env = helper_env(s);
    backend_exec_spec spec = {.argv = argv,
                              .working_dir = WORKSPACE,
                              .max_output = HELPER_OUTPUT_MAX,
                              .timeout_ms = HELPER_TIMEOUT_MS,
                              .env = env};
    e = backend_exec(c->be, f->container, &spec, helper_exited_cb, f, err);
    free(env);
    if (e != RB_OK) {
        fop_free(f);
        return e;
    }
    s->last_used_at = rb_now_ms();
    if (handle != NULL)
        *handle = f->op;
    if (out != NULL)
        *out = f;
    return RB_OK;
}

/* ---- entry points ----------------------------------------------------------------------- */

rb_err core_file_upload(rb_core *c, const char *session_id, const char *path, const void *data, size_t len,
                        core_cb cb, void *cbdata, core_op **handle, char *err)
{
    if (len > c->cfg->max_upload)
        return rb_fail(RB_ETOOBIG, err, "the file is %zu bytes; the upload limit is %zu bytes (max-upload)", len,
                       c->cfg->max_upload);
    fop *f = NULL;
    rb_err e = start(c, OP_UPLOAD, session_id, path, 0, 0, cb, NULL, cbdata, handle, &f, err);
    if (e != RB_OK)
        return e;
    f->data = xmalloc(len > 0 ? len : 1);
    if (len > 0)
        memcpy(f->data, data, len);
    f->len = len;
    return RB_OK;
}

rb_err core_file_list(rb_core *c, const char *session_id, core_cb cb, void *cbdata, core_op **handle, char *err)
{
    return start(c, OP_LIST, session_id, "", 1, 0, cb, NULL, cbdata, handle, NULL, err);
}

rb_err core_file_download(rb_core *c, const char *session_id, const char *path, size_t max, core_file_cb cb,
                          void *cbdata, core_op **handle, char *err)
{
    return start(c, OP_DOWNLOAD, session_id, path, 0, max, NULL, cb, cbdata, handle, NULL, err);
}

rb_err core_file_delete(rb_core *c, const char *session_id, const char *path, core_cb cb, void *cbdata,
                        core_op **handle, char *err)
{
    return start(c, OP_DELETE, session_id, path, 0, 0, cb, NULL, cbdata, handle, NULL, err);
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

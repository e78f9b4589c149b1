/*
 * file_helper.c: the program the files API runs in a sandbox, and the checks on its answers
 * (core/files/file_helper.h). The helper is Python source kept here and passed in argv, so that
 * runboxd and the helper it runs are always of one version and nothing of it lies where the
 * session could change it.
 */
#include "core/files/file_helper.h"

#include <string.h>

#include "base/clock.h"
#include "base/codec.h"
#include "base/mem.h"
#include "core/heart.h"

#define ANSWER_PATH_MAX 4096 /* longest path the helper may answer, decoded (Docker's archive calls take no more) */
#define NAME_MAX_BYTES 255   /* longest file name */
#define FILE_HELPER_LIST_MAX 10000
/* The helper's programs, on the image's read-only root (docker/sandbox/Dockerfile), and the
 * environment python gets: nothing the session can set. */
#define HELPER_ENV_PROGRAM "/usr/bin/env"
#define HELPER_PYTHON "/usr/bin/python3"
#define HELPER_PATH "PATH=/usr/bin:/bin"
#define HELPER_LANG "LANG=C.UTF-8"

/* The helper's exit codes; each comes with one JSON object on its stdout. */
enum {
    EXIT_OK = 0,
    EXIT_USAGE = 2,   /* runboxd asked for something it does not do: {error} */
    EXIT_ESCAPE = 3,  /* the path leads outside /workspace, or through a link it cannot resolve */
    EXIT_MISSING = 4, /* no such file */
    EXIT_NOTFILE = 5, /* not a regular file: {type} */
    EXIT_TOOBIG = 6,  /* larger than the limit: {size} */
    EXIT_OSERROR = 7, /* a system call failed: {errno (its name), error (its text)} */
    EXIT_FAILED = 8,  /* anything else: {error (the exception's class)} */
    EXIT_LINK = 9,    /* an upload's target is a symbolic link: {target (name form, or "")} */
};

/* The helper: argv[1] is the operation, argv[2] the path relative to /workspace in name form,
 * argv[3] the operation's argument. It works on bytes throughout (a name is whatever the kernel
 * allows), decodes the paths it gets (dec) and encodes those it answers (enc: base/codec.h's
 * name form), and prints one JSON object on stdout. realpath raises for a link the user cannot
 * read (/proc/1/root): real() answers None, which is never inside. A failed system call ends in
 * the errno's name, never a traceback. An upload is written by the engine beside its target
 * under a temporary name (put says where and how much room is left); commit renames it over
 * the target, so a failed upload leaves the old file as it was. An upload onto a symbolic link
 * is refused by both (exit 9): the rename would replace the link (made by code, perhaps in a
 * read-write share, where it lies on the host) and following it would write wherever it
 * points; docs/security.md says such links are refused. */
static const char helper_py[] =
    "import errno,json,os,re,shutil,stat,sys\n"
    "R=b'/workspace'\n"
    "op,rel,arg=sys.argv[1],sys.argv[2],sys.argv[3]\n"
    "PLAIN=re.compile(rb'[\\x20-\\x5b\\x5d-\\x7e]*')\n"
    "TEMP=re.compile(rb'\\.runbox-tmp-[0-9a-f]{16}')\n"
    "def dec(s):\n"
    "  return re.sub(rb'\\\\x([0-9a-fA-F]{2})',lambda m:bytes([int(m.group(1),16)]),os.fsencode(s))\n"
    "def enc(b):\n"
    "  if PLAIN.fullmatch(b): return b.decode()\n"
    "  o=[]\n"
    "  for ch in b.decode('utf-8','surrogateescape'):\n"
    "    c=ord(ch)\n"
    "    if 0xdc80<=c<=0xdcff: c-=0xdc00\n"
    "    elif c>=0x20 and c!=0x7f and c!=0x5c: o.append(ch); continue\n"
    "    o.append('\\\\x%02x'%c)\n"
    "  return ''.join(o)\n"
    "def out(code,**k):\n"
    "  sys.stdout.write(json.dumps(k)); sys.stdout.flush(); os._exit(code)\n"
    "def inside(x): return x is not None and (x==R or x.startswith(R+b'/'))\n"
    "def real(p):\n"
    "  try: return os.path.realpath(p)\n"
    "  except OSError: return None\n"
    "def isdir(t): return os.path.isdir(t) and not os.path.islink(t)\n"
    "def link(q):\n"
    "  try: g=enc(os.readlink(q))\n"
    "  except OSError: g=''\n"
    "  out(9,target=g)\n"
    "def kind(m):\n"
    "  return 'directory' if stat.S_ISDIR(m) else 'file' if stat.S_ISREG(m) else 'symlink' if stat.S_ISLNK(m) else 'other'\n"
    "def ent(q):\n"
    "  try: st=os.lstat(q)\n"
    "  except OSError: return None\n"
    "  t=kind(st.st_mode)\n"
    "  e={'path':enc(os.path.relpath(q,R)),'type':t,'size':st.st_size if t=='file' else 0,'modified':int(st.st_mtime*1000)}\n"
    "  if t=='symlink':\n"
    "    try: e['target']=enc(os.readlink(q))\n"
    "    except OSError: pass\n"
    "    e['escapes']=not inside(real(q))\n"
    "  return e\n";
/* The helper's main(): a literal of its own, as C11 promises no longer one than 4095 bytes. */
static const char helper_main_py[] =
    "def main():\n"
    "  p=os.path.join(R,dec(rel)) if rel else R\n"
    "  if op=='list' and arg[:4]=='dir:':\n"
    "    lim=int(arg[4:])\n"
    "    if not inside(real(p)): out(3)\n"
    "    try: ns=sorted(os.listdir(p))\n"
    "    except FileNotFoundError: out(4)\n"
    "    except NotADirectoryError: out(5,type='file')\n"
    "    fs=[e for e in (ent(os.path.join(p,n)) for n in ns[:lim]) if e]\n"
    "    out(0,files=fs,truncated=len(ns)>lim,total=len(ns))\n"
    "  if op=='list':\n"
    "    lim=int(arg); fs=[]\n"
    "    for dp,dns,fns in os.walk(R):\n"
    "      if dp==R and b'.runbox' in dns: dns.remove(b'.runbox')\n"
    "      dns.sort()\n"
    "      for n in sorted(dns+fns):\n"
    "        e=ent(os.path.join(dp,n))\n"
    "        if e is None: continue\n"
    "        fs.append(e)\n"
    "        if len(fs)>=lim: out(0,files=fs,truncated=True)\n"
    "    out(0,files=fs,truncated=False)\n"
    "  if op=='get':\n"
    "    r=real(p)\n"
    "    if not inside(r): out(3)\n"
    "    try: st=os.stat(r)\n"
    "    except (FileNotFoundError,NotADirectoryError): out(4)\n"
    "    if not stat.S_ISREG(st.st_mode): out(5,type=kind(st.st_mode))\n"
    "    if st.st_size>int(arg): out(6,size=st.st_size)\n"
    "    k={}\n"
    "    try: os.path.basename(r).decode()\n"
    "    except UnicodeDecodeError:\n"
    "      t=os.path.join(os.path.dirname(r),b'.runbox-tmp-'+os.urandom(8).hex().encode()); os.link(r,t); r=t; k['linked']=True\n"
    "    out(0,real=enc(r),size=st.st_size,modified=int(st.st_mtime*1000),**k)\n"
    "  d=real(os.path.dirname(p))\n"
    "  if not inside(d): out(3)\n"
    "  t=os.path.join(d,os.path.basename(p))\n"
    "  if op=='put':\n"
    "    os.makedirs(d,exist_ok=True)\n"
    "    d=real(d)\n"
    "    if not inside(d) or not os.path.isdir(d): out(3)\n"
    "    u=os.path.join(d,os.path.basename(p))\n"
    "    if isdir(u): out(5,type='directory')\n"
    "    if os.path.islink(u): link(u)\n"
    "    v=os.statvfs(d)\n"
    "    if v.f_flag&1: out(7,errno='EROFS')\n"
    "    out(0,dir=enc(d),name=enc(os.path.basename(p)),free=v.f_bavail*v.f_frsize,total=v.f_blocks*v.f_frsize,block=v.f_frsize)\n"
    "  if op=='commit':\n"
    "    if not TEMP.fullmatch(arg.encode()): out(2,error='bad temporary name')\n"
    "    tmp=os.path.join(d,arg.encode()); ln=os.path.islink(t)\n"
    "    try:\n"
    "      if not ln and not isdir(t): os.rename(tmp,t); out(0)\n"
    "    finally:\n"
    "      try: os.unlink(tmp)\n"
    "      except OSError: pass\n"
    "    if ln: link(t)\n"
    "    out(5,type='directory')\n"
    "  if op=='discard':\n"
    "    if not TEMP.fullmatch(os.path.basename(p)): out(2,error='bad temporary name')\n"
    "    try: os.unlink(t)\n"
    "    except FileNotFoundError: pass\n"
    "    out(0)\n"
    "  if op=='delete':\n"
    "    if t==R: out(3)\n"
    "    if not os.path.lexists(t): out(4)\n"
    "    if isdir(t): shutil.rmtree(t)\n"
    "    else: os.unlink(t)\n"
    "    out(0)\n"
    "  if op=='mkdir':\n"
    "    d=real(p)\n"
    "    if not inside(d) or d==R: out(3)\n"
    "    os.makedirs(d,exist_ok=True)\n"
    "    if not inside(real(d)): out(3)\n"
    "    out(0)\n"
    "  out(2,error='unknown operation')\n"
    "try: main()\n"
    "except OSError as x: out(7,errno=errno.errorcode.get(x.errno,'EIO'),error=x.strerror or '')\n"
    "except Exception as x: out(8,error=type(x).__name__)\n";

/* helper_py and helper_main_py joined, once (on the loop thread, like every caller). */
static const char *helper_source(void)
{
    static char joined[sizeof(helper_py) + sizeof(helper_main_py) - 1];
    if (joined[0] == '\0') {
        memcpy(joined, helper_py, sizeof(helper_py) - 1);
        memcpy(joined + sizeof(helper_py) - 1, helper_main_py, sizeof(helper_main_py));
    }
    return joined;
}

void file_helper_argv(const char **argv, file_helper_op op, const char *rel, const char *arg)
{
    static const char *const ops[] = {"list", "put", "get", "delete", "mkdir", "commit", "discard"};
    /* env -i: python gets only PATH and LANG; -I: no PYTHON* variables, user site or script
     * folder on sys.path; -S: no site module (nothing but the standard library is needed). */
    const char *const line[FILE_HELPER_ARGV_LEN] = {HELPER_ENV_PROGRAM, "-i", HELPER_PATH, HELPER_LANG, HELPER_PYTHON,
                                                    "-I", "-S", "-c", helper_source(), ops[op], rel, arg, NULL};
    memcpy(argv, line, sizeof(line));
}

int file_helper_temp_name_ok(const char *name)
{
    size_t n = strlen(FILE_HELPER_TEMP_PREFIX);
    if (name == NULL || strncmp(name, FILE_HELPER_TEMP_PREFIX, n) != 0 || strlen(name + n) != 16)
        return 0;
    for (const char *p = name + n; *p; p++)
        if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f')))
            return 0;
    return 1;
}

void file_helper_temp_name(char *out)
{
    char id[64];
    rb_random_id("", id, sizeof(id));
    snprintf(out, 48, "%s%.16s", FILE_HELPER_TEMP_PREFIX, id);
}

const char **file_helper_env(json_t *session_env)
{
    /* Removing the session's variables at the engine means not even env(1), which clears the
     * rest, starts with the session's PATH or LD_PRELOAD. */
    const char **env = xcalloc(json_object_size(session_env) + 2, sizeof(*env));
    size_t n = 0;
    const char *k;
    json_t *v;
    json_object_foreach(session_env, k, v)
        env[n++] = k;
    env[n++] = HELPER_PATH;
    return env;
}

/* ---- names ------------------------------------------------------------------------------ */

/* Whether raw[0..n) is a usable name: not empty, "." or "..", no longer than a file name,
 * without '/' or NUL. */
static int segment_ok(const char *s, size_t n)
{
    if (n == 0 || n > NAME_MAX_BYTES || (n == 1 && s[0] == '.') || (n == 2 && s[0] == '.' && s[1] == '.'))
        return 0;
    return memchr(s, '/', n) == NULL && memchr(s, '\0', n) == NULL;
}

/* The bytes of p, a path in name form, when p is the canonical form of them (every escape
 * needed and no other) and they are at most ANSWER_PATH_MAX bytes; else NULL. Heap. */
static char *canonical_bytes(const char *p, size_t *n)
{
    char *raw;
    if (strlen(p) > 4 * ANSWER_PATH_MAX || codec_name_unescape(p, &raw, n, NULL) != RB_OK)
        return NULL;
    char *again = codec_name_escape(raw, *n);
    int ok = *n <= ANSWER_PATH_MAX && strcmp(again, p) == 0;
    free(again);
    if (!ok) {
        free(raw);
        return NULL;
    }
    return raw;
}

/* Whether p is a path relative to /workspace in canonical name form: segments (segment_ok)
 * separated by single slashes, none leading or trailing. */
static int relative_path_ok(const char *p)
{
    size_t n;
    char *raw = canonical_bytes(p, &n);
    if (raw == NULL)
        return 0;
    int ok = 1;
    for (const char *s = raw, *end = raw + n; ok;) {
        const char *slash = memchr(s, '/', (size_t)(end - s));
        size_t len = slash ? (size_t)(slash - s) : (size_t)(end - s);
        ok = segment_ok(s, len);
        if (slash == NULL)
            break;
        s = slash + 1;
    }
    free(raw);
    return ok;
}

/* Exactly, not by prefix: a prefix test would let "/workspace/../etc/passwd" through. */
int file_helper_path_ok(const char *p, int allow_root)
{
    size_t w = strlen(FILES_WORKSPACE);
    if (p == NULL || strncmp(p, FILES_WORKSPACE, w) != 0)
        return 0;
    if (p[w] == '\0')
        return allow_root;
    return p[w] == '/' && relative_path_ok(p + w + 1);
}

int file_helper_name_ok(const char *name)
{
    size_t n;
    char *raw = name != NULL ? canonical_bytes(name, &n) : NULL;
    int ok = raw != NULL && segment_ok(raw, n);
    free(raw);
    return ok;
}

json_t *file_helper_listing(json_t *files)
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
        if (json_array_size(out) >= FILE_HELPER_LIST_MAX || path == NULL || !relative_path_ok(path) || !known ||
            !json_is_integer(size) || json_integer_value(size) < 0 || !json_is_integer(mod))
            continue;
        json_t *e = json_pack("{s:s, s:s, s:O}", "path", path, "type", type, "size", size);
        core_json_time(e, "modified", json_integer_value(mod));
        if (strchr(path, '\\') != NULL) {
            size_t n;
            char *raw = canonical_bytes(path, &n);
            char *b64 = codec_base64_encode(raw, n);
            json_object_set_new(e, "path_bytes", json_string(b64));
            free(b64);
            free(raw);
        }
        if (strcmp(type, "symlink") == 0) {
            const char *target = json_string_value(json_object_get(item, "target"));
            size_t n;
            char *raw = target != NULL ? canonical_bytes(target, &n) : NULL;
            if (raw != NULL)
                json_object_set_new(e, "target", json_string(target));
            free(raw);
            json_object_set_new(e, "escapes", json_boolean(!json_is_false(json_object_get(item, "escapes"))));
        }
        json_array_append_new(out, e);
    }
    return out;
}

/* ---- answers ---------------------------------------------------------------------------- */

/* The error of a system call that failed in the helper (errno's name), for op on shown. */
static rb_err os_error(file_helper_op op, const char *shown, const char *name, const char *text, char *err)
{
    static const char *const verbs[] = {"list the workspace", "write", "read", "delete", "make the folder",
                                        "write", "write"};
    char what[300];
    if (op == FILE_HELPER_LIST)
        snprintf(what, sizeof(what), "%s", verbs[op]);
    else
        snprintf(what, sizeof(what), "%s '%.200s'", verbs[op], shown);
    static const struct {
        const char *name;
        rb_err e;
        const char *why;
    } known[] = {
        {"ENOSPC", RB_ENOSPC,
         "the session's /workspace is full (its size is the session's workspace_size); delete files there or "
         "create the session with a larger execution_options.workspace_size"},
        {"EDQUOT", RB_ENOSPC, "the session's /workspace is over its quota (workspace_size)"},
        {"EACCES", RB_EFORBIDDEN, "permission denied in the sandbox"},
        {"EPERM", RB_EFORBIDDEN, "operation not permitted in the sandbox"},
        {"EROFS", RB_EFORBIDDEN, "the file system is read-only there"},
        {"ENOENT", RB_ENOTFOUND, "no such file or folder"},
        {"EEXIST", RB_ECONFLICT, "a file is in the way"},
        {"ENOTDIR", RB_ECONFLICT, "a file is in the way where a folder is needed"},
        {"EISDIR", RB_ECONFLICT, "a folder is in the way"},
        {"ENOTEMPTY", RB_ECONFLICT, "a folder that is not empty is in the way"},
        {"ENAMETOOLONG", RB_EINVAL, "a name is too long for the file system"},
        {"ELOOP", RB_EFORBIDDEN, "too many levels of symbolic links"},
    };
    for (size_t i = 0; name != NULL && i < sizeof(known) / sizeof(known[0]); i++)
        if (strcmp(name, known[i].name) == 0)
            return rb_fail(known[i].e, err, "could not %s: %s", what, known[i].why);
    /* The text is strerror's (a fixed set of words), but it comes from the sandbox: printable ASCII only. */
    char clean[120] = "";
    for (size_t i = 0; text != NULL && text[i] != '\0' && i + 1 < sizeof(clean); i++)
        clean[i] = text[i] >= 0x20 && text[i] < 0x7f ? text[i] : '?', clean[i + 1] = '\0';
    return rb_fail(RB_EIO, err, "could not %s: the sandbox's file system failed (%s)", what,
                   clean[0] ? clean : "unknown error");
}

/* Whether v is an integer >= 0. */
static int count_ok(json_t *v)
{
    return json_is_integer(v) && json_integer_value(v) >= 0;
}

rb_err file_helper_answer(file_helper_op op, const char *shown, int exit_code, const char *out, size_t len,
                          json_t **doc, char *err)
{
    *doc = NULL;
    json_t *info = json_loadb(out, len, JSON_REJECT_DUPLICATES, NULL);
    rb_err e = RB_OK;
    if (!json_is_object(info)) {
        e = rb_fail(RB_EIO, err, "the sandbox's file helper gave no answer (exit code %d): is the sandbox short of "
                                 "memory or processes?",
                    exit_code);
        goto done;
    }
    switch (exit_code) {
    case EXIT_OK:
        break;
    case EXIT_ESCAPE:
        e = rb_fail(RB_EFORBIDDEN, err, "path '%.200s' leads outside /workspace (through a symbolic link); refused",
                    shown);
        goto done;
    case EXIT_MISSING:
        e = rb_fail(RB_ENOTFOUND, err, "no file '%.200s' in the session's /workspace", shown);
        goto done;
    case EXIT_LINK: {
        /* the target comes from the sandbox: shown only when it is short printable ASCII */
        const char *to = json_string_value(json_object_get(info, "target"));
        int show = to != NULL && to[0] != '\0' && strlen(to) <= 200;
        for (size_t i = 0; show && to[i] != '\0'; i++)
            show = to[i] >= 0x20 && to[i] < 0x7f;
        e = rb_fail(RB_EFORBIDDEN, err,
                    "'%.200s' is a symbolic link%s%s%s: an upload neither replaces nor follows a link; delete the link "
                    "first (a delete removes the link, not what it points to) or write to a path that is no link",
                    shown, show ? " (to '" : "", show ? to : "", show ? "')" : "");
        goto done;
    }
    case EXIT_NOTFILE: {
        const char *type = json_string_value(json_object_get(info, "type"));
        int folder = type != NULL && strcmp(type, "directory") == 0;
        e = rb_fail(RB_ECONFLICT, err, "'%.200s' is %s", shown,
                    folder ? "a folder, not a regular file; give a file inside it" : "not a regular file");
        goto done;
    }
    case EXIT_TOOBIG:
        if (op != FILE_HELPER_GET || !count_ok(json_object_get(info, "size")))
            break;
        *doc = json_pack("{s:O}", "size", json_object_get(info, "size"));
        e = RB_ETOOBIG;
        goto done;
    case EXIT_OSERROR:
        e = os_error(op, shown, json_string_value(json_object_get(info, "errno")),
                     json_string_value(json_object_get(info, "error")), err);
        goto done;
    default:
        break;
    }
    if (exit_code != EXIT_OK) {
        e = rb_fail(RB_EIO, err, "the sandbox's file helper failed (exit code %d)", exit_code);
        goto done;
    }
    switch (op) {
    case FILE_HELPER_LIST: {
        json_t *files = json_object_get(info, "files");
        if (!json_is_array(files)) {
            e = rb_fail(RB_EIO, err, "the sandbox's file helper gave no file list");
            goto done;
        }
        *doc = json_pack("{s:o, s:b}", "files", file_helper_listing(files), "truncated",
                         json_is_true(json_object_get(info, "truncated")));
        if (count_ok(json_object_get(info, "total"))) /* one folder's listing: how many entries it holds */
            json_object_set(*doc, "total", json_object_get(info, "total"));
        break;
    }
    case FILE_HELPER_PUT: {
        const char *dir = json_string_value(json_object_get(info, "dir"));
        const char *name = json_string_value(json_object_get(info, "name"));
        json_t *free_ = json_object_get(info, "free"), *total = json_object_get(info, "total");
        if (!file_helper_path_ok(dir, 1) || !file_helper_name_ok(name) || !count_ok(free_) || !count_ok(total)) {
            e = rb_fail(RB_EIO, err, "the sandbox's file helper gave an unusable folder");
            goto done;
        }
        *doc = json_pack("{s:s, s:s, s:O, s:O}", "dir", dir, "name", name, "free", free_, "total", total);
        json_t *block = json_object_get(info, "block"); /* its file system's f_frsize (older helpers: none) */
        if (count_ok(block))
            json_object_set(*doc, "block", block);
        break;
    }
    case FILE_HELPER_GET: {
        const char *real = json_string_value(json_object_get(info, "real"));
        json_t *size = json_object_get(info, "size"), *mod = json_object_get(info, "modified");
        if (!file_helper_path_ok(real, 0) || !count_ok(size) || !json_is_integer(mod)) {
            e = rb_fail(RB_EIO, err, "the sandbox's file helper gave an unusable path or size");
            goto done;
        }
        json_t *linked = json_object_get(info, "linked");
        const char *base = real != NULL ? strrchr(real, '/') + 1 : NULL;
        if (linked != NULL && (!json_is_true(linked) || !file_helper_temp_name_ok(base))) {
            e = rb_fail(RB_EIO, err, "the sandbox's file helper gave an unusable path or size");
            goto done;
        }
        *doc = json_pack("{s:s, s:O, s:O, s:b}", "real", real, "size", size, "modified", mod, "linked",
                         linked != NULL);
        break;
    }
    default:
        *doc = json_object();
        break;
    }
done:
    json_decref(info);
    return e;
}

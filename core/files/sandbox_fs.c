/*
 * sandbox_fs.c: file-system calls on any path of a session's sandbox, as its user (core/core.h,
 * core_sandbox_fs): what E2B's envd offers (Stat, ListDir, MakeDir, Remove, Move), whose clients
 * name the sandbox's own paths rather than the workspace's. Not the files API (files.c: bytes,
 * /workspace only, the download budget); this moves no file contents.
 *
 * Like the files API it runs a small Python helper in the sandbox (backend_exec) as the sandbox
 * user (uid 1000, no capabilities), started as file_helper.h says (code in argv, env -i, python3
 * -I -S, the session's variables removed): the kernel decides what that user may read and write,
 * as it does for the user's own code, and the read-only root keeps the image as it is. On top,
 * the helper refuses what is runbox's and not the user's, whatever the permissions: /opt/runbox
 * and /opt/runbox-egress (the runner and the egress proxy), /workspace/.runbox (the packages the
 * dependency installer keeps) and /proc/<pid> of any process that is not the user's (the runner's
 * supervisor and init hold runboxd's control channel). The check is made on the path as named
 * and on where it leads once links are resolved (a link the user cannot resolve counts as
 * refused).
 *
 * E2B's home /home/user is a link to /workspace in the image; the helper works on /workspace for
 * it and names paths as the caller did, so a client never sees /workspace. Entries are envd's
 * (a link reports its target's type and permission bits, its own size and permission string, and
 * where it leads; ListDir walks depth first in name order); the helper's answer is checked field
 * by field here (entry_checked) and handed on in the form core_sandbox_fs documents.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/mem.h"
#include "core/files/file_helper.h"
#include "core/heart.h"
#include "core/volumes/volumes.h"

#define FS_OUTPUT_MAX (8u * 1024 * 1024)
#define FS_TIMEOUT_MS 60000L
#define FS_USER "1000:1000"
#define FS_LIST_MAX 10000
#define FS_PATH_MAX 4096
/* A read outside /home/user comes back as the helper's output: at most this large, and at most
 * this many at once (what they hold together is bounded). */
#define FS_READ_MAX (FS_OUTPUT_MAX - 1024)
#define FS_READS_MAX 8
#define FS_META_MAX 4096 /* bytes of a file's metadata, names with their prefix and values (envd's) */

/* The helper: argv[1] the operation, argv[2] the path, argv[3] the destination (move), argv[4]
 * the depth (list). Paths are absolute, "~/..." or relative to /home/user. One JSON object on
 * stdout: exit 0 the answer, exit 1 {reason, errno?}. */
static const char fs_py[] =
    "import errno,grp,json,os,posixpath as pp,pwd,re,shutil,stat,sys\n"
    "PLAIN=re.compile(rb'[\\x20-\\x5b\\x5d-\\x7e]*')\n"
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
    "op,P,D,depth=sys.argv[1],dec(sys.argv[2]),sys.argv[3],int(sys.argv[4])\n"
    "H=b'/home/user';W=b'/workspace';LIM=10000\n"  /* FS_LIST_MAX */
    "OWN=(b'/opt/runbox',b'/opt/runbox-egress',W+b'/.runbox')\n"
    "def out(c,**k):\n"
    "  sys.stdout.write(json.dumps(k));sys.stdout.flush();os._exit(c)\n"
    "def fail(r,**k): out(1,reason=r,**k)\n"
    "def under(p,r): return p==r or p.startswith(r+b'/')\n"
    "def M(p): return W+p[len(H):] if under(p,H) else p\n"
    "def back(p): return H+p[len(W):] if under(p,W) else p\n"
    "def absolute(p):\n"
    "  if p.startswith(b'~'):\n"
    "    if len(p)>1 and p[1:2]!=b'/': fail('usage')\n"
    "    p=H+p[1:]\n"
    "  return pp.normpath(p if p.startswith(b'/') else pp.join(H,p))\n"
    "def theirs(p):\n"
    "  p=M(pp.normpath(p))\n"
    "  if any(under(p,r) for r in OWN): return True\n"
    "  s=p.split(b'/')\n"
    "  if len(s)>2 and s[1]==b'proc' and s[2].isdigit():\n"
    "    try: return os.stat(b'/proc/'+s[2]).st_uid!=os.getuid()\n"
    "    except OSError: return True\n"
    "  return False\n"
    "def check(p,follow=True):\n"  /* follow: where the call leads through a last link too */
    "  q=M(p)\n"
    "  try: r=os.path.realpath(q) if follow else pp.join(os.path.realpath(pp.dirname(q)),pp.basename(q))\n"
    "  except OSError: fail('denied')\n"
    "  if theirs(p) or theirs(r): fail('denied')\n"
    "def perms(m):\n"
    "  f=stat.S_IFMT(m)\n"
    "  t=''.join(c for c,on in (('d',f==stat.S_IFDIR),('L',f==stat.S_IFLNK),('D',f in(stat.S_IFBLK,stat.S_IFCHR)),"
    "('p',f==stat.S_IFIFO),('S',f==stat.S_IFSOCK),('u',m&stat.S_ISUID),('g',m&stat.S_ISGID),('c',f==stat.S_IFCHR),"
    "('t',m&stat.S_ISVTX)) if on) or '-'\n"
    "  return t+''.join(c if m&(1<<(8-i)) else '-' for i,c in enumerate('rwxrwxrwx'))\n"
    "def kind(m): return 'directory' if stat.S_ISDIR(m) else 'file' if stat.S_ISREG(m) else "
    "'symlink' if stat.S_ISLNK(m) else 'other'\n"
    "def name(i,f):\n"
    "  try: return enc(os.fsencode(f(i)[0]))\n"
    "  except KeyError: return str(i)\n"
    "def meta(q):\n"
    "  m={}\n"
    "  try:\n"
    "    for n in os.listxattr(q):\n"
    "      if n.startswith('user.e2b.'):\n"
    "        try: m[enc(os.fsencode(n[9:]))]=os.getxattr(q,n).decode()\n"
    "        except (OSError,UnicodeDecodeError): pass\n"
    "  except OSError: pass\n"
    "  return m\n"
    "def ent(q,shown):\n"
    "  st=os.lstat(q);t=kind(st.st_mode);mode=st.st_mode&0o777;tg=None\n"
    "  if t=='symlink':\n"
    "    try: tg=back(os.path.realpath(q,strict=True))\n"
    "    except OSError: tg=shown\n"
    "    try: s2=os.stat(q);t=kind(s2.st_mode);mode=s2.st_mode&0o777\n"
    "    except OSError: t='other';mode=0\n"
    "  e={'name':enc(pp.basename(shown) or shown),'path':enc(shown),'type':t,'size':st.st_size,'mode':mode,"
    "'permissions':perms(st.st_mode),'uid':st.st_uid,'gid':st.st_gid,'owner':name(st.st_uid,pwd.getpwuid),"
    "'group':name(st.st_gid,grp.getgrgid),'modified_ns':st.st_mtime_ns}\n"
    "  if tg is not None: e['target']=enc(tg)\n"
    "  m=meta(q)\n"
    "  if m: e['metadata']=m\n"
    "  return e\n"
    "def walk(real,shown,lvl,acc):\n"
    "  try: ns=sorted(os.listdir(real))\n"
    "  except OSError:\n"
    "    if lvl==1: raise\n"
    "    return\n"
    "  for n in ns:\n"
    "    q=pp.join(real,n)\n"
    "    if q==W+b'/.runbox': continue\n"
    "    sh=pp.normpath(shown+b'/'+n)\n"
    "    try: e=ent(q,sh)\n"
    "    except FileNotFoundError: continue\n"
    "    acc.append(e)\n"
    "    if len(acc)>LIM: fail('toomany')\n"
    "    if lvl<depth and e['type']=='directory' and 'target' not in e: walk(q,sh,lvl+1,acc)\n";
/* main(): a literal of its own, as C11 promises no longer one than 4095 bytes. */
static const char fs_main_py[] =
    "def main():\n"
    "  p=absolute(P);check(p,op not in ('stat','remove','move'));q=M(p)\n"
    "  if op=='stat':\n"
    "    try: out(0,entry=ent(q,p))\n"
    "    except FileNotFoundError: fail('missing')\n"
    "  if op=='list':\n"
    "    try: r=os.path.realpath(q,strict=True)\n"
    "    except FileNotFoundError: fail('missing')\n"
    "    except OSError as x:\n"
    "      if x.errno==errno.ELOOP: fail('loop')\n"
    "      raise\n"
    "    if not os.path.isdir(r): fail('notdir')\n"
    "    acc=[];walk(r,p,1,acc);out(0,entries=acc)\n"
    "  if op=='mkdir':\n"
    "    if os.path.isdir(q): fail('exists')\n"
    "    if os.path.lexists(q): fail('notdir')\n"
    "    os.makedirs(q,exist_ok=True);out(0,entry=ent(q,p))\n"
    "  if op=='remove':\n"
    "    if q in (b'/',W) or p==b'/': fail('denied')\n"
    "    if not os.path.lexists(q): out(0)\n"
    "    if os.path.isdir(q) and not os.path.islink(q): shutil.rmtree(q)\n"
    "    else: os.unlink(q)\n"
    "    out(0)\n"
    "  if op=='move':\n"
    "    d=absolute(dec(D));check(d,False);e=M(d)\n"
    "    if q in (b'/',W) or e in (b'/',W): fail('denied')\n"
    "    if not os.path.lexists(q): fail('missing')\n"
    "    os.makedirs(pp.dirname(e),exist_ok=True);check(d,False)\n"
    "    try: os.rename(q,e)\n"
    "    except OSError as x:\n"
    "      if x.errno!=errno.EXDEV: raise\n"
    "      shutil.move(q,e)\n"
    "    out(0,entry=ent(e,d))\n"
    "  if op=='meta':\n"
    "    for k,v in json.loads(D).items(): os.setxattr(q,'user.e2b.'+k,v.encode())\n"
    "    out(0,entry=ent(q,p))\n"
    "  if op=='read':\n"
    "    try: fd=os.open(q,os.O_RDONLY|os.O_NONBLOCK)\n"
    "    except FileNotFoundError: fail('missing')\n"
    "    if not stat.S_ISREG(os.fstat(fd).st_mode): fail('notfile')\n"
    "    b=bytearray()\n"
    "    while len(b)<=depth:\n"
    "      c=os.read(fd,65536)\n"
    "      if not c: break\n"
    "      b+=c\n"
    "    if len(b)>depth: fail('toobig')\n"
    "    sys.stdout.buffer.write(b);sys.stdout.flush();os._exit(0)\n"
    "  fail('usage')\n"
    "try: main()\n"
    "except FileNotFoundError: fail('missing')\n"
    "except OSError as x: fail('oserror',errno=errno.errorcode.get(x.errno,'EIO'))\n"
    "except Exception as x: fail('failed',error=type(x).__name__)\n";

static const char *fs_source(void)
{
    static char joined[sizeof(fs_py) + sizeof(fs_main_py) - 1];
    if (joined[0] == '\0') {
        memcpy(joined, fs_py, sizeof(fs_py) - 1);
        memcpy(joined + sizeof(fs_py) - 1, fs_main_py, sizeof(fs_main_py));
    }
    return joined;
}

typedef struct fs_op {
    rb_core *c;
    core_op *op; /* the caller's handle: only its cancelled flag is used */
    core_fs_op what;
    size_t max;            /* a read's largest file */
    core_bytes_cb bytes_cb; /* a read's callback, else NULL */
    char *path; /* as the caller named it, for messages */
    json_t *mounts;
    core_cb cb;
    void *cbdata;
} fs_op;

/* Reads in flight, each holding up to its file in the engine's answer: bounded together. */
static unsigned reads_in_flight;

static void fs_op_free(fs_op *f)
{
    if (f->bytes_cb != NULL)
        reads_in_flight--;
    json_decref(f->mounts);
    free(f->path);
    free(f->op);
    free(f);
}

/* RFC 3339 with nanoseconds, as envd's timestamps read, of ns since the epoch (UTC). */
static json_t *rfc3339_ns(json_int_t ns)
{
    time_t secs = (time_t)(ns / 1000000000);
    long frac = (long)(ns % 1000000000);
    if (frac < 0) {
        frac += 1000000000;
        secs--;
    }
    struct tm tm;
    char buf[64];
    if (gmtime_r(&secs, &tm) == NULL)
        return json_null();
    size_t n = strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(buf + n, sizeof(buf) - n, ".%09ldZ", frac);
    return json_string(buf);
}

/* An entry of the helper's answer (untrusted) in core_sandbox_fs's form, or NULL when it is not
 * one: strings where strings belong, whole numbers where numbers do, metadata of strings only. */
static json_t *entry_checked(json_t *e)
{
    static const char *const strs[] = {"name", "path", "type", "permissions", "owner", "group"};
    static const char *const ints[] = {"size", "mode", "uid", "gid", "modified_ns"};
    if (!json_is_object(e))
        return NULL;
    json_t *o = json_object();
    for (size_t i = 0; i < sizeof(strs) / sizeof(strs[0]); i++) {
        json_t *v = json_object_get(e, strs[i]);
        if (!json_is_string(v) || json_string_length(v) > FS_PATH_MAX)
            goto bad;
        json_object_set(o, strs[i], v);
    }
    for (size_t i = 0; i < sizeof(ints) / sizeof(ints[0]); i++) {
        json_t *v = json_object_get(e, ints[i]);
        if (!json_is_integer(v))
            goto bad;
        if (strcmp(ints[i], "modified_ns") == 0)
            json_object_set_new(o, "modified", rfc3339_ns(json_integer_value(v)));
        else
            json_object_set(o, ints[i], v);
    }
    json_t *t = json_object_get(e, "target");
    if (json_is_string(t) && json_string_length(t) <= FS_PATH_MAX)
        json_object_set(o, "target", t);
    json_t *m = json_object_get(e, "metadata");
    if (json_is_object(m)) {
        json_t *meta = json_object();
        const char *k;
        json_t *v;
        json_object_foreach(m, k, v)
        {
            if (json_is_string(v) && json_object_size(meta) < 256)
                json_object_set(meta, k, v);
        }
        json_object_set_new(o, "metadata", meta);
    }
    return o;
bad:
    json_decref(o);
    return NULL;
}

/* The error of the helper's {reason, errno?} about f's path: its code, with msg. */
static rb_err helper_error(const fs_op *f, json_t *doc, char *msg)
{
    const char *reason = json_string_value(json_object_get(doc, "reason"));
    const char *en = json_string_value(json_object_get(doc, "errno"));
    const char *p = f->path;
    if (reason == NULL)
        return rb_fail(RB_EINTERNAL, msg, "the sandbox's file helper answered nonsense about '%.300s'", p);
    if (strcmp(reason, "missing") == 0)
        return rb_fail(RB_ENOTFOUND, msg, "no such file or folder: %.300s", p);
    if (strcmp(reason, "denied") == 0)
        return rb_fail(RB_EFORBIDDEN, msg,
                       "'%.300s' is runbox's, not the sandbox user's, or leads outside what the user may reach "
                       "(/opt/runbox, /workspace/.runbox, the runner's processes in /proc, the home folder itself): it "
                       "cannot be read or changed through this API",
                       p);
    if (strcmp(reason, "exists") == 0)
        return rb_fail(RB_ECONFLICT, msg, "'%.300s' already exists", p);
    if (strcmp(reason, "notdir") == 0)
        return rb_fail(RB_EINVAL, msg, "'%.300s' is not a folder", p);
    if (strcmp(reason, "loop") == 0)
        return rb_fail(RB_ECONFLICT, msg, "'%.300s' leads through a cycle of symbolic links", p);
    if (strcmp(reason, "toomany") == 0)
        return rb_fail(RB_ETOOBIG, msg, "'%.300s' holds more than %d entries at that depth: list it with a smaller depth",
                       p, FS_LIST_MAX);
    if (strcmp(reason, "notfile") == 0)
        return rb_fail(RB_EINVAL, msg, "'%.300s' is not a file (a folder, a device or a pipe cannot be read)", p);
    if (strcmp(reason, "toobig") == 0)
        return rb_fail(RB_ETOOBIG, msg,
                       "'%.300s' is larger than the %zu bytes a read outside /home/user may take; copy it into "
                       "/home/user first (commands.run), whose files have no such limit",
                       p, f->max);
    if (strcmp(reason, "usage") == 0)
        return rb_fail(RB_EINVAL, msg, "'%.300s': only the sandbox user's home (~ or ~/...) can be named with ~", p);
    if (strcmp(reason, "oserror") == 0 && en != NULL) {
        if (strcmp(en, "EACCES") == 0 || strcmp(en, "EPERM") == 0 || strcmp(en, "EROFS") == 0)
            return rb_fail(RB_EFORBIDDEN, msg,
                           "'%.300s': the sandbox's user (uid 1000) may not do that there (%s); the image's own "
                           "folders are read-only, /home/user and /tmp are the user's",
                           p, en);
        if (strcmp(en, "ENOTDIR") == 0)
            return rb_fail(RB_EINVAL, msg, "'%.300s': a part of the path is not a folder", p);
        if (strcmp(en, "EEXIST") == 0 || strcmp(en, "ENOTEMPTY") == 0 || strcmp(en, "EISDIR") == 0)
            return rb_fail(RB_ECONFLICT, msg, "'%.300s': %s (the destination is in the way)", p, en);
        if (strcmp(en, "ENOSPC") == 0 || strcmp(en, "EDQUOT") == 0)
            return rb_fail(RB_ENOSPC, msg, "'%.300s': the file system is full", p);
        if (strcmp(en, "ENAMETOOLONG") == 0)
            return rb_fail(RB_EINVAL, msg, "'%.300s': a name is too long", p);
        if (strcmp(en, "ELOOP") == 0)
            return rb_fail(RB_ECONFLICT, msg, "'%.300s' leads through a cycle of symbolic links", p);
        return rb_fail(RB_EINTERNAL, msg, "'%.300s': the file system answered %.40s", p, en);
    }
    return rb_fail(RB_EINTERNAL, msg, "the sandbox's file helper failed on '%.300s'", p);
}

static void finish(fs_op *f, rb_err e, const char *msg, json_t *body)
{
    if (f->what != CORE_FS_STAT && f->what != CORE_FS_LIST && e == RB_OK) /* a volume's use may have changed */
        volumes_touched(f->c, f->mounts, NULL);
    if (!f->op->cancelled && f->cb != NULL)
        f->cb(f->cbdata, e, e == RB_OK ? NULL : msg, body);
    else
        json_decref(body);
    fs_op_free(f);
}

static void finish_read(fs_op *f, rb_err e, const char *msg, const char *bytes, size_t len)
{
    if (!f->op->cancelled)
        f->bytes_cb(f->cbdata, e, e == RB_OK ? NULL : msg, bytes, len);
    fs_op_free(f);
}

static void exited_cb(void *data, rb_err err, const char *errmsg, const backend_exec_result *r)
{
    fs_op *f = data;
    char msg[RB_ERR_LEN];
    if (err != RB_OK) {
        snprintf(msg, sizeof(msg), "could not run the file helper in the sandbox: %s", errmsg);
        if (f->bytes_cb != NULL)
            finish_read(f, err, msg, NULL, 0);
        else
            finish(f, err, msg, NULL);
        return;
    }
    if (f->bytes_cb != NULL && r->exit_code == 0) {
        if (r->out_len > f->max)
            finish_read(f, RB_ETOOBIG, "the file grew while it was read; try again", NULL, 0);
        else
            finish_read(f, RB_OK, NULL, r->out, r->out_len);
        return;
    }
    json_t *doc = json_loadb(r->out, r->out_len, 0, NULL);
    if (!json_is_object(doc) || (r->exit_code != 0 && r->exit_code != 1)) {
        json_decref(doc);
        snprintf(msg, sizeof(msg),
                 "the sandbox's file helper failed (exit code %d; the sandbox may be out of memory or processes)",
                 r->exit_code);
        if (f->bytes_cb != NULL)
            finish_read(f, RB_EINTERNAL, msg, NULL, 0);
        else
            finish(f, RB_EINTERNAL, msg, NULL);
        return;
    }
    if (r->exit_code == 1) {
        rb_err e = helper_error(f, doc, msg);
        if (f->bytes_cb != NULL) {
            json_decref(doc);
            finish_read(f, e, msg, NULL, 0);
            return;
        }
        json_t *why = json_pack("{s:O?}", "reason", json_object_get(doc, "reason"));
        json_decref(doc);
        finish(f, e, msg, why); /* the body says why, for protocols that tell apart what core does not */
        return;
    }
    json_t *body = json_object();
    json_t *entry = json_object_get(doc, "entry");
    json_t *entries = json_object_get(doc, "entries");
    if (entry != NULL) {
        json_t *e = entry_checked(entry);
        if (e == NULL) {
            json_decref(doc);
            json_decref(body);
            finish(f, RB_EINTERNAL, "the sandbox's file helper answered nonsense", NULL);
            return;
        }
        json_object_set_new(body, "entry", e);
    }
    if (f->what == CORE_FS_LIST) {
        json_t *list = json_array();
        size_t i;
        json_t *item;
        json_array_foreach(entries, i, item)
        {
            json_t *e = entry_checked(item);
            if (e != NULL && json_array_size(list) < FS_LIST_MAX)
                json_array_append_new(list, e);
        }
        json_object_set_new(body, "entries", list);
    }
    json_decref(doc);
    finish(f, RB_OK, NULL, body);
}

/* Whether p is a path a caller may name: UTF-8 text (jansson's strings are) without NUL or
 * other control characters, at most FS_PATH_MAX bytes. */
static int path_ok(const char *p)
{
    if (p == NULL || strlen(p) > FS_PATH_MAX)
        return 0;
    for (const unsigned char *s = (const unsigned char *)p; *s; s++)
        if (*s < 0x20 || *s == 0x7f)
            return 0;
    return 1;
}

/* Starts the helper for what on path (dest, arg) in who's session; f is filled and owned from
 * here on (freed on failure). */
static rb_err start(rb_core *c, const core_caller *who, const char *session_id, fs_op *f, const char *path,
                    const char *dest, const char *arg, core_op **handle, char *err)
{
    static const char *const ops[] = {"stat", "list", "mkdir", "remove", "move", "meta", "read"};
    f->c = c;
    f->op = xcalloc(1, sizeof(*f->op));
    f->path = xstrdup(path);
    if (f->bytes_cb != NULL)
        reads_in_flight++;
    core_session_view s;
    rb_err e = core_heart_session(c, who, session_id, &s, err);
    if (e != RB_OK) {
        fs_op_free(f);
        return e;
    }
    f->mounts = json_incref(s.mounts);
    const char *op = f->bytes_cb != NULL ? ops[6] : ops[f->what];
    const char *argv[] = {"/usr/bin/env", "-i", "PATH=/usr/bin:/bin", "LANG=C.UTF-8", "/usr/bin/python3", "-I", "-S",
                          "-c", fs_source(), op, path, dest, arg, NULL};
    const char **env = file_helper_env(s.env);
    backend_exec_spec spec = {.argv = argv,
                              .user = FS_USER,
                              .working_dir = FILES_WORKSPACE,
                              .max_output = FS_OUTPUT_MAX,
                              .timeout_ms = FS_TIMEOUT_MS,
                              .env = env};
    e = backend_exec(core_heart_backend(c), s.container_id, &spec, exited_cb, f, err);
    free(env);
    if (e != RB_OK) {
        fs_op_free(f);
        return e;
    }
    core_heart_touch(c, s.id);
    if (handle != NULL)
        *handle = f->op;
    return RB_OK;
}

rb_err core_sandbox_fs(rb_core *c, const core_caller *who, const char *session_id, core_fs_op what, const char *path,
                       const char *dest, unsigned depth, core_cb cb, void *cbdata, core_op **handle, char *err)
{
    if (!path_ok(path) || (what == CORE_FS_MOVE && !path_ok(dest)))
        return rb_fail(RB_EINVAL, err, "a path is at most %d bytes of text without control characters", FS_PATH_MAX);
    if (what == CORE_FS_META && (dest == NULL || strlen(dest) > 2 * FS_META_MAX))
        return rb_fail(RB_EINVAL, err, "metadata is at most %d bytes", FS_META_MAX);
    if (what == CORE_FS_LIST && (depth < 1 || depth > 1000))
        return rb_fail(RB_EINVAL, err, "depth must be a whole number from 1 to 1000");
    char arg[16];
    snprintf(arg, sizeof(arg), "%u", what == CORE_FS_LIST ? depth : 1);
    fs_op *f = xcalloc(1, sizeof(*f));
    f->what = what;
    f->cb = cb;
    f->cbdata = cbdata;
    return start(c, who, session_id, f, path, what == CORE_FS_MOVE || what == CORE_FS_META ? dest : "", arg, handle,
                 err);
}

rb_err core_sandbox_read(rb_core *c, const core_caller *who, const char *session_id, const char *path,
                         core_bytes_cb cb, void *cbdata, core_op **handle, char *err)
{
    if (!path_ok(path))
        return rb_fail(RB_EINVAL, err, "a path is at most %d bytes of text without control characters", FS_PATH_MAX);
    if (reads_in_flight >= FS_READS_MAX)
        return rb_fail(RB_EBUSY, err, "%d reads outside /home/user are in flight, the most runboxd holds at once: retry "
                       "in a moment", FS_READS_MAX);
    char arg[32];
    fs_op *f = xcalloc(1, sizeof(*f));
    f->what = CORE_FS_STAT;
    f->max = FS_READ_MAX;
    f->bytes_cb = cb;
    f->cbdata = cbdata;
    snprintf(arg, sizeof(arg), "%zu", f->max);
    return start(c, who, session_id, f, path, "", arg, handle, err);
}

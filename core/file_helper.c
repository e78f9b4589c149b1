/*
 * file_helper.c: the program the files API runs in a sandbox, and the checks on its answers
 * (core/file_helper.h). The helper is Python source kept here and passed in argv, so that
 * runboxd and the helper it runs are always of one version and nothing of it lies where the
 * session could change it.
 */
#include "core/file_helper.h"

#include <string.h>

#include "core/internal.h"

#define WORKSPACE "/workspace"
#define ANSWER_PATH_MAX 4096 /* longest path the helper may answer (Docker's archive calls take no more) */
#define NAME_MAX_BYTES 255   /* longest file name */
#define FILE_HELPER_LIST_MAX 10000
/* The helper's programs, on the image's read-only root (docker/sandbox/Dockerfile), and the
 * environment python gets: nothing the session can set. */
#define HELPER_ENV_PROGRAM "/usr/bin/env"
#define HELPER_PYTHON "/usr/bin/python3"
#define HELPER_PATH "PATH=/usr/bin:/bin"
#define HELPER_LANG "LANG=C.UTF-8"

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
    "if op=='mkdir':\n"
    "  d=os.path.realpath(p)\n"
    "  if not inside(d) or d==R: out(3,real=d)\n"
    "  try: os.makedirs(d,exist_ok=True)\n"
    "  except OSError as x: out(5,error=str(x))\n"
    "  if not inside(os.path.realpath(d)): out(3,real=d)\n"
    "  out(0)\n"
    "out(2,error='unknown operation')\n";

void file_helper_argv(const char **argv, file_helper_op op, const char *rel, const char *limit)
{
    static const char *const ops[] = {"list", "put", "get", "delete", "mkdir"};
    /* env -i: python gets only PATH and LANG; -I: no PYTHON* variables, user site or script
     * folder on sys.path; -S: no site module (nothing but the standard library is needed). */
    const char *const line[FILE_HELPER_ARGV_LEN] = {HELPER_ENV_PROGRAM, "-i", HELPER_PATH, HELPER_LANG, HELPER_PYTHON,
                                                    "-I", "-S", "-c", helper_py, ops[op], rel, limit, NULL};
    memcpy(argv, line, sizeof(line));
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

/* Exactly, not by prefix: a prefix test would let "/workspace/../etc/passwd" through. */
int file_helper_path_ok(const char *p, int allow_root)
{
    size_t w = strlen(WORKSPACE);
    if (p == NULL || strlen(p) > ANSWER_PATH_MAX || strncmp(p, WORKSPACE, w) != 0)
        return 0;
    if (p[w] == '\0')
        return allow_root;
    return p[w] == '/' && relative_path_ok(p + w + 1);
}

int file_helper_name_ok(const char *name)
{
    return name != NULL && segment_ok(name, strlen(name));
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

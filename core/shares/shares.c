/*
 * shares.c: shared folders (core/shares/shares.h): the checks of a host folder, a session's
 * mounts and its sandbox's binds, what a caller may mount (core_shares) and what a session sees
 * in its mounts (core_session_mounts, through the files API's listing of one folder).
 */
#include "core/shares/shares.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "core/shares/sharespec.h"

/* Entries of each mount's folder that core_session_mounts shows. */
#define SHARES_LIST_MAX 200

/* Whether path a is b or lies under it. */
static int within(const char *a, const char *b)
{
    size_t lb = strlen(b);
    if (strncmp(a, b, lb) != 0)
        return 0;
    return a[lb] == '\0' || a[lb] == '/' || (lb == 1 && b[0] == '/');
}

/* The real absolute form of path (heap): realpath when it exists, else the path made absolute
 * against the working folder as it is written. */
static char *absolute(const char *path)
{
    char *r = realpath(path, NULL);
    if (r != NULL)
        return r;
    if (path[0] == '/')
        return xstrdup(path);
    char cwd[PATH_MAX];
    if (getcwd(cwd, sizeof(cwd)) == NULL)
        return xstrdup(path);
    return xasprintf("%s/%s", strcmp(cwd, "/") == 0 ? "" : cwd, path);
}

/* The folder of runboxd's database (heap): its own data, never shared. */
static char *data_folder(const core_settings *s)
{
    const char *db = s->db_path != NULL ? s->db_path : RB_DEFAULT_DB;
    const char *slash = strrchr(db, '/');
    char *dir = slash == NULL ? xstrdup(".") : slash == db ? xstrdup("/") : xstrndup(db, (size_t)(slash - db));
    char *abs = absolute(dir);
    free(dir);
    return abs;
}

/* Whether the sandbox user may make files in the folder path (of st) by its mode bits: the
 * owner's, else the group's, else the others'. A folder with an access ACL is left to its ACL
 * (setfacl -m u:1000:rwx, as docs/data.md suggests), which this does not evaluate. */
static int sandbox_may_write(const char *path, const struct stat *st)
{
    mode_t need = st->st_uid == SHARES_SANDBOX_UID   ? (S_IWUSR | S_IXUSR)
                  : st->st_gid == SHARES_SANDBOX_GID ? (S_IWGRP | S_IXGRP)
                                                      : (S_IWOTH | S_IXOTH);
    return (st->st_mode & need) == need || lgetxattr(path, "system.posix_acl_access", NULL, 0) > 0;
}

/* d's folder as the engine will bind it: every component of its path exists and is a folder,
 * none a symbolic link (lstat each prefix: realpath alone would follow a link the operator did
 * not mean), a :rw one the sandbox user may write in, its real path is the path given, and it holds neither runboxd's data nor the
 * Docker socket, nor lies in the data. e is the error to answer with. */
static rb_err check_folder(const core_settings *s, const sharespec_decl *d, rb_err e, char *err)
{
    const char *p = d->host_path;
    size_t len = strlen(p);
    char prefix[SHARESPEC_HOST_PATH_MAX + 1];
    struct stat st;
    for (size_t i = 1; i <= len; i++) {
        if (i < len && p[i] != '/')
            continue;
        memcpy(prefix, p, i);
        prefix[i] = '\0';
        if (lstat(prefix, &st) != 0)
            return rb_fail(e, err, "share %s: %s %s", d->name, prefix,
                           errno == ENOENT ? "does not exist" : strerror(errno));
        if (S_ISLNK(st.st_mode)) {
            char *real = realpath(prefix, NULL);
            rb_fail(e, err, "share %s: %s is a symbolic link (to %s); give the folder's real path, with no link on "
                            "the way",
                    d->name, prefix, real ? real : "nowhere");
            free(real);
            return e;
        }
        if (!S_ISDIR(st.st_mode))
            return rb_fail(e, err, "share %s: %s is not a folder", d->name, prefix);
    }
    if (d->rw && !sandbox_may_write(p, &st))
        return rb_fail(e, err,
                       "share %s: %s is owned by %lu:%lu with mode %04o, so the sandbox's user (uid %d, gid %d) cannot "
                       "write in it; run `chown %d:%d %s` (or `chmod o+wx %s`), or declare the share without :rw",
                       d->name, p, (unsigned long)st.st_uid, (unsigned long)st.st_gid, (unsigned)(st.st_mode & 07777),
                       SHARES_SANDBOX_UID, SHARES_SANDBOX_GID, SHARES_SANDBOX_UID, SHARES_SANDBOX_GID, p, p);
    char *real = realpath(p, NULL);
    int same = real != NULL && strcmp(real, p) == 0;
    free(real);
    if (!same)
        return rb_fail(e, err, "share %s: %s does not resolve to itself; give the folder's real path", d->name, p);
    char *data = data_folder(s);
    rb_err r = RB_OK;
    if (within(data, p))
        r = rb_fail(e, err, "share %s: %s holds runboxd's own data (%s, the folder of --db); share a folder apart "
                            "from it",
                    d->name, p, data);
    else if (within(p, data))
        r = rb_fail(e, err, "share %s: %s lies inside runboxd's own data (%s, the folder of --db)", d->name, p, data);
    free(data);
    if (r != RB_OK)
        return r;
    const char *sock = s->docker_socket;
    if (sock != NULL && strncmp(sock, "unix://", 7) == 0)
        sock += 7;
    if (sock != NULL && sock[0] == '/') {
        char *abs = absolute(sock);
        int held = within(abs, p) || within(sock, p);
        free(abs);
        if (held)
            return rb_fail(e, err, "share %s: %s holds the Docker socket (%s), which would give sandboxes the engine",
                           d->name, p, sock);
    }
    return RB_OK;
}

rb_err shares_check_settings(const core_settings *s, char *err)
{
    sharespec_list l;
    rb_err e = sharespec_parse(s->shares, &l, err);
    if (e != RB_OK)
        return e;
    json_t *defaults = NULL;
    if (l.n > 0 && (s->engines != NULL || (s->docker_socket != NULL && strncmp(s->docker_socket, "tcp://", 6) == 0)))
        e = rb_fail(RB_EINVAL, err,
                    "share: shared folders need the Docker engine on runboxd's own machine (a unix socket): the "
                    "folder is the engine's host's, and runboxd checks it (not with --engine or a tcp:// engine)");
    for (size_t i = 0; e == RB_OK && i < l.n; i++)
        e = check_folder(s, &l.v[i], RB_EINVAL, err);
    if (e == RB_OK)
        e = sharespec_defaults(&l, s->default_mounts, NULL, &defaults, err);
    json_decref(defaults);
    sharespec_list_dispose(&l);
    return e;
}

/* RB_ECONFLICT naming the share when a folder of mounts is no longer declared or fails its checks. */
static rb_err recheck(const core_settings *cfg, const sharespec_list *l, json_t *mounts, char *err)
{
    size_t i;
    json_t *m;
    json_array_foreach(mounts, i, m)
    {
        const char *name = json_string_value(json_object_get(m, "share"));
        const sharespec_decl *d = sharespec_find(l, name);
        if (d == NULL)
            return rb_fail(RB_ECONFLICT, err, "share '%s' is no longer declared by the operator (--share)",
                           name ? name : "?");
        if (!d->rw && !json_is_true(json_object_get(m, "readonly")))
            return rb_fail(RB_ECONFLICT, err, "share '%s' is now read-only (declared without :rw)", d->name);
        char why[RB_ERR_LEN];
        if (check_folder(cfg, d, RB_ECONFLICT, why) != RB_OK)
            return rb_fail(RB_ECONFLICT, err, "%s; ask the operator to mend it", why);
    }
    return RB_OK;
}

rb_err shares_mounts(const core_settings *cfg, const core_caller *who, json_t *v, json_t **out, char *err)
{
    *out = NULL;
    if ((v == NULL || json_is_null(v)) && (cfg->default_mounts == NULL || cfg->default_mounts[0] == '\0'))
        return RB_OK;
    sharespec_list l;
    rb_err e = sharespec_parse(cfg->shares, &l, err);
    if (e != RB_OK)
        return e;
    json_t *mounts = NULL;
    if (v == NULL || json_is_null(v))
        e = sharespec_defaults(&l, cfg->default_mounts, who, &mounts, err);
    else
        e = sharespec_mounts(&l, who, v, &mounts, err);
    /* a folder gone or replaced by a link since start-up is refused now rather than left to the
     * engine, which would make a missing one (as root) */
    if (e == RB_OK)
        e = recheck(cfg, &l, mounts, err);
    sharespec_list_dispose(&l);
    if (e != RB_OK || json_array_size(mounts) == 0) {
        json_decref(mounts);
        return e;
    }
    *out = mounts;
    return RB_OK;
}

rb_err shares_volumes(const core_settings *cfg, json_t *mounts, backend_volume **out, size_t *n, char *err)
{
    *out = NULL;
    *n = 0;
    if (json_array_size(mounts) == 0)
        return RB_OK;
    sharespec_list l;
    rb_err e = sharespec_parse(cfg->shares, &l, err);
    if (e == RB_OK)
        e = recheck(cfg, &l, mounts, err);
    if (e != RB_OK) {
        sharespec_list_dispose(&l);
        return e;
    }
    backend_volume *v = xcalloc(json_array_size(mounts), sizeof(*v));
    size_t i;
    json_t *m;
    json_array_foreach(mounts, i, m)
    {
        const sharespec_decl *d = sharespec_find(&l, json_string_value(json_object_get(m, "share")));
        v[i].host_path = xstrdup(d->host_path);
        v[i].path = xstrdup(json_string_value(json_object_get(m, "path")));
        v[i].readonly = json_is_true(json_object_get(m, "readonly")) || !d->rw;
    }
    sharespec_list_dispose(&l);
    *out = v;
    *n = json_array_size(mounts);
    return RB_OK;
}

void shares_volumes_free(backend_volume *v, size_t n)
{
    for (size_t i = 0; v != NULL && i < n; i++) {
        free((char *)v[i].name);
        free((char *)v[i].host_path);
        free((char *)v[i].path);
    }
    free(v);
}

/* ---- the public calls (core/core.h) ------------------------------------------------------ */

rb_err core_shares_key_check(const char *list, char *err)
{
    return sharespec_key_check(list, err);
}

int core_shares_enabled(const rb_core *c)
{
    const char *s = core_heart_settings(c)->shares;
    return s != NULL && s[0] != '\0';
}

json_t *core_shares(rb_core *c, const core_caller *who)
{
    const core_settings *cfg = core_heart_settings(c);
    json_t *list = json_array(), *defaults = NULL;
    sharespec_list l;
    char err[RB_ERR_LEN];
    if (sharespec_parse(cfg->shares, &l, err) != RB_OK) /* checked at start-up */
        return json_pack("{s:o}", "shares", list);
    if (sharespec_defaults(&l, cfg->default_mounts, who, &defaults, err) != RB_OK)
        defaults = json_array();
    for (size_t i = 0; i < l.n; i++) {
        if (!sharespec_allowed(who, l.v[i].name))
            continue;
        json_t *o = json_pack("{s:s, s:b}", "name", l.v[i].name, "readonly", !l.v[i].rw);
        size_t j;
        json_t *m;
        json_array_foreach(defaults, j, m)
        {
            if (strcmp(json_string_value(json_object_get(m, "share")), l.v[i].name) == 0)
                json_object_set(o, "default_path", json_object_get(m, "path"));
        }
        json_array_append_new(list, o);
    }
    json_decref(defaults);
    sharespec_list_dispose(&l);
    return json_pack("{s:o}", "shares", list);
}

/* core_session_mounts in flight: the session's mounts, listed one after the other. */
typedef struct mounts_op {
    rb_core *c;
    const core_caller *who;
    core_op *op; /* the caller's handle */
    char *session_id;
    json_t *mounts; /* the session's (its execution_options.mounts) */
    json_t *out;    /* the answer's list so far */
} mounts_op;

static void mounts_op_free(mounts_op *m)
{
    json_decref(m->mounts);
    json_decref(m->out);
    free(m->session_id);
    free(m->op);
    free(m);
}

static void mounts_finish(mounts_op *m, rb_err e, const char *msg)
{
    if (!m->op->cancelled) {
        json_t *body = e == RB_OK ? json_pack("{s:s, s:O}", "session_id", m->session_id, "mounts", m->out) : NULL;
        m->op->cb(m->op->data, e, msg, body);
    }
    mounts_op_free(m);
}

static rb_err list_next(mounts_op *m, char *err);

/* The listing of one mount's folder (or, for a session without mounts, of /workspace: the check
 * that the session is ready). */
static void listed_cb(void *data, rb_err e, const char *msg, json_t *body)
{
    mounts_op *m = data;
    char err[RB_ERR_LEN];
    size_t k = json_array_size(m->out);
    json_t *mount = json_array_get(m->mounts, k);
    if (m->op->cancelled || mount == NULL) {
        json_decref(body);
        mounts_finish(m, e, msg);
        return;
    }
    /* a shared folder's mount, or a volume's (core/volumes/) */
    json_t *o = json_pack("{s:O, s:O}", "path", json_object_get(mount, "path"), "readonly",
                          json_object_get(mount, "readonly"));
    const char *kind = json_object_get(mount, "volume") != NULL ? "volume" : "share";
    json_object_set(o, kind, json_object_get(mount, kind));
    if (e != RB_OK) {
        json_object_set_new(o, "error", json_string(msg));
    } else {
        json_t *entries = json_array();
        size_t i;
        json_t *f;
        json_array_foreach(json_object_get(body, "files"), i, f)
        {
            const char *rel = json_string_value(json_object_get(f, "path"));
            const char *slash = rel ? strrchr(rel, '/') : NULL;
            char *abs = xasprintf("%s/%s", SHARESPEC_ROOT, rel ? rel : "");
            json_t *ent = json_pack("{s:s, s:s, s:O, s:O}", "name", slash ? slash + 1 : rel ? rel : "", "path", abs,
                                    "type", json_object_get(f, "type"), "size", json_object_get(f, "size"));
            free(abs);
            if (ent != NULL)
                json_array_append_new(entries, ent);
        }
        json_int_t total = json_integer_value(json_object_get(body, "total"));
        json_int_t shown = (json_int_t)json_array_size(entries);
        json_object_set_new(o, "entries", entries);
        json_object_set_new(o, "total", json_integer(total > shown ? total : shown));
        json_object_set_new(o, "more", json_integer(total > shown ? total - shown : 0));
    }
    json_decref(body);
    json_array_append_new(m->out, o);
    if (json_array_size(m->out) == json_array_size(m->mounts)) {
        mounts_finish(m, RB_OK, NULL);
        return;
    }
    if ((e = list_next(m, err)) != RB_OK)
        mounts_finish(m, e, err);
}

static rb_err list_next(mounts_op *m, char *err)
{
    json_t *mount = json_array_get(m->mounts, json_array_size(m->out));
    const char *path = mount ? json_string_value(json_object_get(mount, "path")) : SHARESPEC_ROOT;
    core_op *inner = NULL;
    /* the listing's own handle is not kept: a cancelled call lets it finish and drops its answer */
    return core_file_list_dir(m->c, m->who, m->session_id, path, mount ? SHARES_LIST_MAX : 0, listed_cb, m, &inner,
                              err);
}

rb_err core_session_mounts(rb_core *c, const core_caller *who, const char *session_id, core_cb cb, void *data,
                           core_op **handle, char *err)
{
    json_t *s = NULL;
    rb_err e = core_session_get(c, who, session_id, &s, err);
    if (e != RB_OK)
        return e;
    json_t *mounts = json_object_get(json_object_get(s, "execution_options"), "mounts");
    mounts_op *m = xcalloc(1, sizeof(*m));
    m->c = c;
    m->who = who;
    m->op = xcalloc(1, sizeof(*m->op));
    m->op->cb = cb;
    m->op->data = data;
    m->session_id = xstrdup(json_string_value(json_object_get(s, "session_id")));
    m->mounts = json_is_array(mounts) ? json_incref(mounts) : json_array();
    m->out = json_array();
    json_decref(s);
    if ((e = list_next(m, err)) != RB_OK) {
        mounts_op_free(m);
        return e;
    }
    if (handle != NULL)
        *handle = m->op;
    return RB_OK;
}

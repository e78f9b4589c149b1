/*
 * deps.c: Python dependencies for sessions.
 *
 * User code never runs with network because of a dependency: an installer container (same
 * image, network on, no user code) runs pip into a cache volume per requirement set and
 * image, then copies the installed tree into the session's workspace volume at
 * /workspace/.runbox/site-packages, which the sandbox's Python has on its path (the image's
 * PYTHONPATH; the runner invalidates import caches before each cell). A later session asking
 * for the same set is served from the cache by an installer with no network at all.
 *
 * The installer is hardened like a sandbox (read-only root, all capabilities dropped but the
 * three needed to write as root and hand files to uid 1000, no-new-privileges, pids and memory
 * limits), runs pip isolated from the workspace (HOME and cwd in /tmp, PIP_CONFIG_FILE
 * /dev/null, python -I) so files user code left in /workspace cannot steer pip, and accepts
 * wheels only (--only-binary :all:: no setup.py runs). Requirements are checked first by
 * core/requirements.c against a strict syntax (no options, URLs or paths) and the operator's
 * policy (deps-allow, deps-block, with minimum versions); errors name the package and the rule.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/internal.h"
#include "core/oneshot.h"
#include "core/requirements.h"

#define INSTALL_TIMEOUT_MS (15L * 60 * 1000)
#define EXIT_CACHE_MISS 10
#define EXIT_PIP_FAILED 4
#define EXIT_COLLISION 3
#define SITE_DIR "/workspace/.runbox/site-packages"

/* ---- installing into a session ------------------------------------------------------------------ */

/* The installer: RUNBOX_REQS holds the requirements, one a line; /cache is the set's cache
 * volume, /target the session's workspace volume. Exit 10 = not cached (offline pass), 4 =
 * pip failed (its output on stderr), 3 = the cache volume holds another set. */
static const char install_sh[] =
    "set -u\n"
    "umask 022\n"
    "cd /tmp\n"
    "printf '%s\\n' \"$RUNBOX_REQS\" > /tmp/requirements.txt\n"
    "exec 9>/cache/.lock\n"
    "flock 9\n"
    "if [ -f /cache/.complete ]; then\n"
    "  cmp -s /cache/.requirements /tmp/requirements.txt || { echo 'runbox: the cache volume holds another "
    "requirement set' >&2; exit 3; }\n"
    "  echo cached\n"
    "else\n"
    "  [ \"${RUNBOX_OFFLINE:-0}\" = 1 ] && exit 10\n"
    "  rm -rf /cache/site\n"
    "  python3 -I -m pip install --no-input --disable-pip-version-check --no-cache-dir --no-warn-script-location "
    "--only-binary=:all: --target /cache/site -r /tmp/requirements.txt 1>&2 || exit 4\n"
    "  cp /tmp/requirements.txt /cache/.requirements\n"
    "  touch /cache/.complete\n"
    "  echo installed\n"
    "fi\n"
    "mkdir -p /target/.runbox/site-packages\n"
    "cp -R /cache/site/. /target/.runbox/site-packages/ || exit 5\n"
    "chown -R 1000:1000 /target/.runbox\n";

typedef struct inst {
    rb_core *c;
    core_op *op;
    sandbox_ready_cb scb; /* creation-time install: reports to the session */
    session *s;
    char session_id[RB_ID_LEN];
    char *container;
    json_t *reqs;
    char *workspace_volume;
    char *image_id;
    char cache_volume[96];
    int online;
    int64_t started;
} inst;

static void inst_done(inst *in, rb_err e, const char *msg, int cached)
{
    if (in->scb != NULL) {
        if (!in->op->cancelled)
            in->scb(in->s, e, msg);
    } else if (!in->op->cancelled) {
        json_t *body = NULL;
        if (e == RB_OK)
            body = json_pack("{s:s, s:O, s:b, s:s, s:I}", "session_id", in->session_id, "dependencies", in->reqs,
                             "cached", cached, "site_packages", SITE_DIR, "duration_ms",
                             (json_int_t)(rb_mono_ms() - in->started));
        in->op->cb(in->op->data, e, e == RB_OK ? NULL : msg, body);
    }
    json_decref(in->reqs);
    free(in->container);
    free(in->workspace_volume);
    free(in->image_id);
    free(in->op);
    free(in);
}

static rb_err run_installer(inst *in, char *err);

static void ignore_cb(void *data, rb_err err, const char *errmsg, int status, json_t *body)
{
    (void)data;
    (void)status;
    (void)body;
    if (err != RB_OK && err != RB_ECANCELED && err != RB_ENOTFOUND)
        rb_debug("dependency cache cleanup: %s", errmsg);
}

/* The last non-empty lines of pip's output, on one line, for the error message. */
static void tail_lines(const rb_buf *b, char *out, size_t outlen)
{
    size_t n = b->len, end = n, lines = 0;
    while (end > 0 && (b->data[end - 1] == '\n' || b->data[end - 1] == ' '))
        end--;
    size_t start = end;
    while (start > 0 && lines < 3) {
        start--;
        if (b->data[start] == '\n')
            lines++;
    }
    if (end - start > outlen - 1)
        start = end - (outlen - 1);
    size_t o = 0;
    for (size_t i = start; i < end && o + 1 < outlen; i++) {
        char ch = b->data[i];
        out[o++] = (ch == '\n' || ch == '\r' || ch == '\t') ? ' ' : ch;
    }
    out[o] = '\0';
}

static void installed_cb(void *data, rb_err err, const char *msg, int exit_code, rb_buf *out)
{
    inst *in = data;
    char m2[RB_ERR_LEN], tail[300];
    if (err != RB_OK) {
        snprintf(m2, sizeof(m2), "installing dependencies failed: %s", msg);
        inst_done(in, err, m2, 0);
        return;
    }
    if (exit_code == EXIT_CACHE_MISS && !in->online) {
        in->online = 1;
        if (run_installer(in, m2) != RB_OK)
            inst_done(in, RB_EIO, m2, 0);
        return;
    }
    if (exit_code != 0) {
        tail_lines(&out[2], tail, sizeof(tail));
        if (exit_code == EXIT_PIP_FAILED) /* nothing useful is cached: drop the volume (best effort) */
            docker_volume_remove(in->c->dk, in->cache_volume, ignore_cb, NULL, m2);
        if (exit_code == EXIT_PIP_FAILED)
            snprintf(m2, sizeof(m2), "pip could not install the dependencies (wheels only, from %s): %s",
                     in->c->cfg->deps_index_url ? in->c->cfg->deps_index_url : "the default index", tail);
        else
            snprintf(m2, sizeof(m2), "the dependency installer failed (exit code %d): %s", exit_code, tail);
        inst_done(in, exit_code == EXIT_PIP_FAILED ? RB_EINVAL : RB_EIO, m2, 0);
        return;
    }
    rb_info("session %s: dependencies installed (%s): %zu packages", in->session_id,
            in->online ? "downloaded" : "from cache", json_array_size(in->reqs));
    inst_done(in, RB_OK, NULL, !in->online);
}


/* The CA bundle the installer's pip trusts: the configured file; by default the Docker host's
 * own trust store when runboxd runs on that host (a unix socket), so a host behind a
 * TLS-inspecting proxy installs packages without extra settings; "none" uses the image's. */
static const char *installer_ca_file(const rb_config *cfg)
{
    static const char host_bundle[] = "/etc/ssl/certs/ca-certificates.crt";
    if (cfg->deps_ca_file != NULL && cfg->deps_ca_file[0] != '\0')
        return strcmp(cfg->deps_ca_file, "none") == 0 ? NULL : cfg->deps_ca_file;
    return access(host_bundle, R_OK) == 0 ? host_bundle : NULL;
}

static rb_err run_installer(inst *in, char *err)
{
    const rb_config *cfg = in->c->cfg;
    rb_buf reqs;
    rb_buf_init(&reqs, 64 * 1024);
    size_t i;
    json_t *v;
    json_array_foreach(in->reqs, i, v)
    {
        if (i > 0)
            rb_buf_append(&reqs, "\n", 1);
        rb_buf_append(&reqs, json_string_value(v), json_string_length(v));
    }
    rb_buf_append(&reqs, "", 1);
    json_t *env = json_array();
    json_array_append_new(env, json_sprintf("RUNBOX_REQS=%s", reqs.data));
    json_array_append_new(env, json_sprintf("RUNBOX_OFFLINE=%d", in->online ? 0 : 1));
    json_array_append_new(env, json_string("HOME=/tmp"));
    json_array_append_new(env, json_string("PIP_CONFIG_FILE=/dev/null"));
    json_array_append_new(env, json_string("PYTHONDONTWRITEBYTECODE=1"));
    rb_buf_dispose(&reqs);
    if (cfg->deps_index_url != NULL && cfg->deps_index_url[0] != '\0')
        json_array_append_new(env, json_sprintf("PIP_INDEX_URL=%s", cfg->deps_index_url));
    json_t *hc = oneshot_host_config(in->online ? cfg->deps_network : NULL);
    json_t *binds = json_array();
    json_array_append_new(binds, json_sprintf("%s:/cache", in->cache_volume));
    json_array_append_new(binds, json_sprintf("%s:/target", in->workspace_volume));
    const char *ca = installer_ca_file(cfg);
    if (ca != NULL) {
        json_array_append_new(binds, json_sprintf("%s:/etc/runbox-ca.pem:ro", ca));
        json_array_append_new(env, json_string("PIP_CERT=/etc/runbox-ca.pem"));
    }
    json_object_set_new(hc, "Binds", binds);
    json_t *conf = json_pack("{s:s, s:[s,s,s], s:s, s:o, s:s, s:{s:s, s:s, s:s}, s:b, s:o}", "Image", cfg->image,
                             "Cmd", "sh", "-c", install_sh, "User", "0", "Env", env, "WorkingDir", "/tmp", "Labels",
                             "runbox.instance", in->c->instance, "runbox.managed", "1", "runbox.deps-for",
                             in->session_id, "NetworkDisabled", !in->online, "HostConfig", hc);
    rb_err e = oneshot_run(in->c, "deps", conf, INSTALL_TIMEOUT_MS, installed_cb, in, err);
    json_decref(conf);
    return e;
}

/* FNV-1a, 64 bits, with a seed: two of them name a cache volume. Collisions cannot mix sets
 * up: the installer compares the stored requirement list before using a cache. */
static uint64_t fnv(const char *s, uint64_t seed)
{
    uint64_t h = 1469598103934665603ull ^ seed;
    for (; *s; s++) {
        h ^= (unsigned char)*s;
        h *= 1099511628211ull;
    }
    return h;
}

static void volume_ready(void *data, rb_err err, const char *errmsg, int status, json_t *body)
{
    inst *in = data;
    char msg[RB_ERR_LEN];
    (void)status;
    (void)body;
    if (err != RB_OK) {
        snprintf(msg, sizeof(msg), "cannot create the dependency cache volume: %s", errmsg);
        inst_done(in, err, msg, 0);
        return;
    }
    if (run_installer(in, msg) != RB_OK)
        inst_done(in, RB_EIO, msg, 0);
}

static void image_inspected(void *data, rb_err err, const char *errmsg, int status, json_t *body)
{
    inst *in = data;
    char msg[RB_ERR_LEN];
    (void)status;
    const char *id = json_string_value(json_object_get(body, "Id"));
    if (err != RB_OK || id == NULL) {
        snprintf(msg, sizeof(msg), "cannot inspect the sandbox image: %s", errmsg ? errmsg : "no id");
        inst_done(in, err != RB_OK ? err : RB_EIO, msg, 0);
        return;
    }
    char *text = json_dumps(in->reqs, JSON_COMPACT);
    char *key = xasprintf("%s\n%s", id, text);
    free(text);
    snprintf(in->cache_volume, sizeof(in->cache_volume), "runbox-deps-%016llx%016llx",
             (unsigned long long)fnv(key, 0), (unsigned long long)fnv(key, 0x9e3779b97f4a7c15ull));
    free(key);
    /* the set as a label, so that operators (and tests) can see what a cache holds */
    rb_buf set;
    rb_buf_init(&set, 2048);
    size_t i;
    json_t *v;
    json_array_foreach(in->reqs, i, v)
    {
        if ((i > 0 && rb_buf_append(&set, ",", 1) != RB_OK) ||
            rb_buf_append(&set, json_string_value(v), json_string_length(v)) != RB_OK)
            break;
    }
    json_t *vol = json_pack("{s:s, s:{s:s, s:s, s:s%, s:s}}", "Name", in->cache_volume, "Labels", "runbox.managed", "1",
                            "runbox.deps", "1", "runbox.deps.set", set.data ? set.data : "", set.len, "runbox.deps.image",
                            id);
    rb_buf_dispose(&set);
    rb_err e = docker_volume_create(in->c->dk, vol, volume_ready, in, msg);
    json_decref(vol);
    if (e != RB_OK)
        inst_done(in, e, msg, 0);
}

static int volume_name_ok(const char *s)
{
    static const char chars[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-";
    size_t n = strlen(s);
    return n > 0 && n <= 128 && strspn(s, chars) == n;
}

static void container_inspected(void *data, rb_err err, const char *errmsg, int status, json_t *body)
{
    inst *in = data;
    char msg[RB_ERR_LEN];
    (void)status;
    if (err != RB_OK) {
        snprintf(msg, sizeof(msg), "cannot inspect the session's sandbox: %s", errmsg);
        inst_done(in, err == RB_ENOTFOUND ? RB_ECONFLICT : err, msg, 0);
        return;
    }
    size_t i;
    json_t *m;
    json_array_foreach(json_object_get(body, "Mounts"), i, m)
    {
        const char *dst = json_string_value(json_object_get(m, "Destination"));
        const char *name = json_string_value(json_object_get(m, "Name"));
        const char *type = json_string_value(json_object_get(m, "Type"));
        if (dst && name && type && strcmp(dst, "/workspace") == 0 && strcmp(type, "volume") == 0)
            in->workspace_volume = xstrdup(name);
    }
    if (in->workspace_volume == NULL || !volume_name_ok(in->workspace_volume)) {
        inst_done(in, RB_ECONFLICT,
                  "the session's /workspace is not a Docker volume, so packages cannot be installed into it (the "
                  "session was created by an older runboxd); create a new session",
                  0);
        return;
    }
    if (docker_image_inspect(in->c->dk, in->c->cfg->image, image_inspected, in, msg) != RB_OK)
        inst_done(in, RB_EIO, msg, 0);
}

static rb_err install_start(rb_core *c, session *s, json_t *reqs, inst **out, char *err)
{
    if (s->container_id == NULL)
        return rb_fail(RB_ECONFLICT, err, "session %s has no sandbox container", s->id);
    inst *in = xcalloc(1, sizeof(*in));
    in->c = c;
    in->s = s;
    in->op = xcalloc(1, sizeof(*in->op));
    snprintf(in->session_id, sizeof(in->session_id), "%s", s->id);
    in->container = xstrdup(s->container_id);
    in->reqs = json_incref(reqs);
    in->started = rb_mono_ms();
    rb_err e = docker_container_inspect(c->dk, in->container, container_inspected, in, err);
    if (e != RB_OK) {
        json_decref(in->reqs);
        free(in->container);
        free(in->op);
        free(in);
        return e;
    }
    *out = in;
    return RB_OK;
}

rb_err deps_session_install(session *s, json_t *reqs, sandbox_ready_cb cb, core_op **handle, char *err)
{
    inst *in = NULL;
    rb_err e = install_start(s->core, s, reqs, &in, err);
    if (e != RB_OK)
        return e;
    in->scb = cb;
    if (handle != NULL)
        *handle = in->op;
    return RB_OK;
}

rb_err core_dependencies_install(rb_core *c, const char *session_id, json_t *body, core_cb cb, void *data,
                                 core_op **handle, char *err)
{
    session *s = map_get(&c->sessions, session_id);
    if (s == NULL)
        return rb_fail(RB_ENOTFOUND, err, "no live session with id '%.64s'; create one with POST /sessions",
                       session_id);
    if (strcmp(s->status, "ready") != 0 && strcmp(s->status, "busy") != 0)
        return rb_fail(RB_ECONFLICT, err, "session %s is %s; install packages once it is ready", s->id, s->status);
    if (strcmp(s->language, "python") != 0)
        return rb_fail(RB_EINVAL, err, "session %s runs %s; Python packages need a python session", s->id,
                       s->language);
    json_t *list = json_is_object(body) ? json_object_get(body, "dependencies") : NULL;
    if (list == NULL && json_is_object(body))
        list = json_object_get(body, "packages");
    json_t *reqs = NULL;
    rb_err e = requirements_parse(c->cfg, list, &reqs, err);
    if (e != RB_OK)
        return e;
    if (reqs == NULL)
        return rb_fail(RB_EINVAL, err, "dependencies: give at least one package, e.g. {\"dependencies\": "
                                       "[\"requests==2.32.3\"]}");
    inst *in = NULL;
    e = install_start(c, s, reqs, &in, err);
    json_decref(reqs);
    if (e != RB_OK)
        return e;
    in->s = NULL;
    in->op->cb = cb;
    in->op->data = data;
    if (handle != NULL)
        *handle = in->op;
    return RB_OK;
}

/*
 * deps.c: the dependency installer: Python packages a caller asks for, installed into a
 * session's workspace, at creation (deps_session_install, core/deps/deps.h) or later
 * (core_dependencies_install, core/core.h). npm packages of javascript and typescript sessions
 * go the same way, with their own filler and copier scripts (core/deps/deps_npm.c, a deps_kind
 * of core/deps/deps_internal.h; pip's kind is deps_pip below).
 *
 * User code never runs with network because of a dependency. Packages live in a cache volume
 * per requirement set and image, shared by every session that asks for the set, and reach a
 * session through two kinds of one-shot containers (core/deps/oneshot.h), both hardened like a
 * sandbox (read-only root, no capabilities at all, no-new-privileges, pids and memory limits):
 *   - the copier (no network, uid 1000 like the sandbox) mounts the cache read-only and the
 *     session's workspace volume, and copies the set into /workspace/.runbox/site-packages,
 *     which the sandbox's Python has on its path (the image's PYTHONPATH; the runner
 *     invalidates import caches before each cell). It exits 10 when the cache is not filled;
 *   - the filler (network on, root, which owns the volume) mounts the cache read-write and no
 *     workspace at all, and runs pip into it, constrained to the image's own package versions
 *     so that nothing the image has is replaced or broken. Then the copier runs again.
 * The workspace is a tree user code controls, with links anywhere (issue 9, finding 8): only
 * a process with no more rights than user code touches it, and the cache is read-only
 * wherever a session's tree is mounted. The copier still follows none of the user's links: it
 * builds a fresh folder (what earlier installs left, as hard links and without links, then the
 * set) and renames it into place. pip runs isolated (HOME and cwd in /tmp, PIP_CONFIG_FILE
 * /dev/null, python -I) and accepts wheels only (--only-binary :all:: no setup.py runs).
 *
 * Installs run --max-installs at a time (core_settings.max_installs); one more waits in a FIFO
 * queue for a free slot, its caller still waiting for the answer as before (issue 9, finding 5:
 * each one-shot container holds one of the Docker client's long connections through its
 * container wait, so unlimited installs could take them all and starve file transfers).
 *
 * Not here: the requirement syntax and the operator's deps-allow / deps-block policy
 * (core/deps/requirements.c, checked before anything starts), and the image's preinstalled
 * packages (core/deps/packages.c). The room reaches the heart only through core/heart.h.
 */
#include "core/audit/audit.h"
#include "core/deps/deps.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/deps/deps_internal.h"
#include "core/deps/oneshot.h"
#include "core/deps/requirements.h"
#include "core/heart.h"

#define INSTALL_TIMEOUT_MS (15L * 60 * 1000)
#define SITE_DIR "/workspace/.runbox/site-packages"

/* The image's own distributions as pip constraints, so that a session's packages never break
 * the image's: what the set pulls in must be the image's version (name==version: a numpy 2
 * pulled in beside the image's numpy would break what was built against it). A package the set
 * names itself and the image has may still be installed in another version on purpose, but only
 * within what the image's other packages require of it (their Requires-Dist specifiers on it
 * become constraints: asking for pandas<2 fails with pip's conflict instead of breaking seaborn
 * and statsmodels). Versions pip cannot parse (distribution packaging quirks) are left out
 * rather than fail the install. */
#define CONSTRAINTS_PY                                                                                               \
    "import re, importlib.metadata as md\n"                                                                           \
    "from pip._vendor.packaging.requirements import Requirement\n"                                                    \
    "from pip._vendor.packaging.version import Version\n"                                                             \
    "key = lambda n: re.sub(r\"[-_.]+\", \"-\", n).lower()\n"                                                         \
    "asked = set()\n"                                                                                                 \
    "for line in open(\"/tmp/requirements.txt\"):\n"                                                                  \
    "    m = re.match(r\"\\s*([A-Za-z0-9][A-Za-z0-9._-]*)\", line)\n"                                                 \
    "    if m: asked.add(key(m.group(1)))\n"                                                                          \
    "seen = set()\n"                                                                                                  \
    "for d in md.distributions():\n"                                                                                  \
    "    n = d.metadata[\"Name\"]\n"                                                                                  \
    "    if not n or key(n) in seen: continue\n"                                                                      \
    "    seen.add(key(n))\n"                                                                                          \
    "    if key(n) in asked:\n"                                                                                       \
    "        continue\n"                                                                                              \
    "    for r in d.requires or ():\n"                                                                                \
    "        try:\n"                                                                                                  \
    "            q = Requirement(r)\n"                                                                                \
    "            if key(q.name) in asked and str(q.specifier) and (q.marker is None or q.marker.evaluate({\"extra\": \"\"})):\n" \
    "                print(key(q.name) + str(q.specifier))\n"                                                         \
    "        except Exception: pass\n"                                                                                \
    "    try: Version(d.version)\n"                                                                                   \
    "    except Exception: continue\n"                                                                                \
    "    print(key(n) + \"==\" + d.version)\n"

/* Which requirements the image already satisfies (by name and version: the image has the name,
 * its version is in the specifier, no extras, and the session has no copy of its own in its
 * site folder, whose names only are listed, never read): printed as a JSON list of
 * name==version; exit 11 when that is all of them (nothing to install). */
#define SATISFIED_PY                                                                                                 \
    "import json, os, re, sys, importlib.metadata as md\n"                                                            \
    "from pip._vendor.packaging.requirements import Requirement\n"                                                    \
    "key = lambda n: re.sub(r\"[-_.]+\", \"-\", n).lower()\n"                                                         \
    "try: mine = {key(e.split(\"-\")[0]) for e in os.listdir(\"/target/.runbox/site-packages\") if e.endswith(\".dist-info\")}\n" \
    "except OSError: mine = set()\n"                                                                                  \
    "image = {}\n"                                                                                                    \
    "for d in md.distributions():\n"                                                                                  \
    "    n = d.metadata[\"Name\"]\n"                                                                                  \
    "    if n and key(n) not in image: image[key(n)] = d.version\n"                                                   \
    "ok, n = [], 0\n"                                                                                                 \
    "for line in open(\"/tmp/requirements.txt\"):\n"                                                                  \
    "    if not line.strip(): continue\n"                                                                             \
    "    n += 1\n"                                                                                                    \
    "    try: r = Requirement(line)\n"                                                                                \
    "    except Exception: continue\n"                                                                                \
    "    k = key(r.name)\n"                                                                                           \
    "    if k in image and k not in mine and not r.extras and r.specifier.contains(image[k], prereleases=True):\n"    \
    "        ok.append(k + \"==\" + image[k])\n"                                                                      \
    "print(json.dumps(ok))\n"                                                                                         \
    "sys.exit(11 if ok and len(ok) == n else 0)\n"

/* The filler (root, network, the cache read-write, no workspace). Exit 0 = the cache is
 * filled, 4 = pip failed (its output on stderr, ending with the cause of a resolver conflict on
 * one line, which the error message quotes), 3 = another set. pip runs twice. First it only
 * resolves (--dry-run --report) with --prefix, which takes what the image has into account: a
 * requirement the image already satisfies is left alone, and the constraints keep what is
 * pulled in compatible with the image (with --target pip would ignore the image and resolve
 * every dependency afresh: a new numpy over the image's). Then it installs exactly the
 * resolved list (--no-deps --ignore-installed): an image package asked for in another version
 * must not be uninstalled first (the image's wheels in /usr/local are pip's to remove, and the
 * root file system is read-only). The prefix's site folder (Debian's scheme puts it under
 * local/lib/python3.X/dist-packages) becomes the cache's site/. */
#define PIP_SH "python3 -I -m pip install --no-input --disable-pip-version-check --cache-dir /tmp/pip-cache " \
               "--no-warn-script-location --only-binary=:all: --prefix /cache/.prefix "
static const char fill_sh[] =
    FILL_START_SH
    "rm -rf /cache/site /cache/.prefix\n"
    "python3 -I -c '" CONSTRAINTS_PY "' > /tmp/constraints.txt || exit 4\n"
    PIP_SH "--dry-run --report /tmp/report.json -c /tmp/constraints.txt -r /tmp/requirements.txt >/tmp/pip.log 2>&1 "
    "|| {\n"
    "  cat /tmp/pip.log >&2\n"
    "  c=$(sed -n '/conflict is caused by/,/^ *$/p' /tmp/pip.log | tr -s ' \\n' ' ' | cut -c1-240)\n"
    "  [ -z \"$c\" ] || echo \"runbox: no version fits the image's packages (they are pip constraints). $c\" >&2\n"
    "  exit 4\n"
    "}\n"
    "python3 -I -c 'import json; [print(i[\"metadata\"][\"name\"] + \"==\" + i[\"metadata\"][\"version\"]) "
    "for i in json.load(open(\"/tmp/report.json\"))[\"install\"]]' > /tmp/resolved.txt || exit 4\n"
    "if [ -s /tmp/resolved.txt ]; then\n"
    "  " PIP_SH "--no-deps --ignore-installed -r /tmp/resolved.txt 1>&2 || exit 4\n"
    "fi\n"
    "mkdir -p /cache/site\n"
    "find /cache/.prefix -type d \\( -name site-packages -o -name dist-packages \\) -prune -print | while read -r d; do\n"
    "  cp -R -P \"$d/.\" /cache/site/ || exit 4\n"
    "done || exit 4\n"
    "rm -rf /cache/.prefix\n"
    FILL_DONE_SH;

/* The copier (uid 1000, no network, the cache read-only at /cache, the workspace at /target).
 * It first prints which requirements the image already satisfies (SATISFIED_PY, on stdout).
 * Exit 0 = copied, 11 = the image satisfies every requirement (nothing copied, the cache is not
 * looked at), else COPY_SH's (deps_internal.h). */
static const char copy_sh[] =
    REQS_SH
    "python3 -I -c '" SATISFIED_PY "'; [ $? -ne 11 ] || exit 11\n"
    COPY_SH("site-packages", "/cache/site/.");

static void pip_filler_env(const core_settings *cfg, int ca, char **env, size_t *n)
{
    env[(*n)++] = xstrdup("PIP_CONFIG_FILE=/dev/null");
    env[(*n)++] = xstrdup("PYTHONDONTWRITEBYTECODE=1");
    if (cfg->deps_index_url != NULL && cfg->deps_index_url[0] != '\0')
        env[(*n)++] = xasprintf("PIP_INDEX_URL=%s", cfg->deps_index_url);
    if (ca)
        env[(*n)++] = xstrdup("PIP_CERT=" DEPS_CA_PATH);
}

static const char *pip_source(const core_settings *cfg)
{
    return cfg->deps_index_url ? cfg->deps_index_url : "the default index";
}

const deps_kind deps_pip = {
    .tool = "pip",
    .fill_sh = fill_sh,
    .copy_sh = copy_sh,
    .dest = SITE_DIR,
    .dest_key = "site_packages",
    .volume_salt = "",
    .tool_rules = "wheels only",
    .filler_env = pip_filler_env,
    .source = pip_source,
    .parse = requirements_parse,
    .example = "\"requests==2.32.3\"",
};

const deps_kind *deps_kind_of(const char *language)
{
    if (strcmp(language, "python") == 0)
        return &deps_pip;
    if (strcmp(language, "javascript") == 0 || strcmp(language, "typescript") == 0)
        return &deps_npm;
    return NULL;
}

rb_err deps_check(const core_settings *cfg, const char *language, json_t *list, json_t **out, char *err)
{
    const deps_kind *kind = deps_kind_of(language);
    if (kind == NULL && list != NULL && !json_is_null(list) && !(json_is_array(list) && json_array_size(list) == 0))
        return rb_fail(RB_EINVAL, err,
                       "dependencies: packages need a python session (pip) or a javascript or typescript session "
                       "(npm); a %s session has none",
                       language);
    return kind != NULL ? kind->parse(cfg, list, out, err) : RB_OK;
}

deps_room *deps__room(rb_core *c)
{
    void **slot = core_heart_room(c, CORE_ROOM_DEPS);
    if (*slot == NULL)
        *slot = xcalloc(1, sizeof(deps_room));
    return *slot;
}

/* One install in flight: find the sandbox's workspace volume, the image's id (it keys the
 * cache), create the cache volume, run the copier, and when the cache misses the filler and the
 * copier again. */
typedef struct install_job {
    rb_core *c;
    core_op *op;               /* the caller's handle; cancelled = report to no one */
    deps_done_cb done;         /* creation-time install: reports to done(done_data) */
    void *done_data;           /* NULL done: core_dependencies_install, which reports through op */
    char session_id[RB_ID_LEN];
    char *owner;               /* its session's API key, for the audit trail */
    char *container;           /* the session's sandbox container */
    json_t *reqs;              /* the normalised requirement list (core/deps/requirements.h) */
    const deps_kind *kind;     /* pip or npm (deps_internal.h) */
    char *workspace_volume;
    char cache_volume[160];
    int filling;               /* the container running is the filler (else the copier) */
    int filled;                /* the filler ran: the cache missed, pip downloaded */
    json_t *satisfied;         /* requirements the image satisfies ("name==version"), as the copier said */
    int64_t started;
    struct install_job *next;  /* in the queue (deps_room: installs_head..tail) while it waits for a slot */
} install_job;

/* The answer's sentence: what the image already had, what was installed (borrowed lists). */
static json_t *result_message(json_t *reqs, json_t *satisfied)
{
    rb_buf b;
    rb_buf_init(&b, 8192);
    size_t n_sat = json_array_size(satisfied), i;
    json_t *v;
    if (n_sat > 0) {
        rb_buf_append(&b, "already satisfied by the image: ", 32);
        json_array_foreach(satisfied, i, v)
        {
            if (i > 0)
                rb_buf_append(&b, ", ", 2);
            rb_buf_append(&b, json_string_value(v), json_string_length(v));
        }
    }
    if (n_sat >= json_array_size(reqs)) {
        rb_buf_append(&b, " (nothing was installed)", 24);
    } else {
        rb_buf_append(&b, n_sat > 0 ? "; installed: " : "installed: ", n_sat > 0 ? 13 : 11);
        size_t k = 0;
        json_array_foreach(reqs, i, v)
        {
            if (k++ > 0)
                rb_buf_append(&b, ", ", 2);
            rb_buf_append(&b, json_string_value(v), json_string_length(v));
        }
        if (n_sat > 0)
            rb_buf_append(&b, " (pip left what the image has alone)", 36);
    }
    json_t *s = json_stringn(b.data != NULL ? b.data : "", b.len);
    rb_buf_dispose(&b);
    return s;
}

static void job_begin(install_job *job);

/* Gives the slot job held to the installs waiting, oldest first (none once runboxd is closing). */
static void slot_release(rb_core *c)
{
    deps_room *r = deps__room(c);
    int max = core_heart_settings(c)->max_installs;
    r->installs_running--;
    while (!core_heart_closing(c) && r->installs_head != NULL && r->installs_running < max) {
        install_job *next = r->installs_head;
        if ((r->installs_head = next->next) == NULL)
            r->installs_tail = NULL;
        next->next = NULL;
        r->installs_running++;
        rb_info("session %s: the dependency install waiting for a slot starts (%d running, max-installs %d)",
                next->session_id, r->installs_running, max);
        job_begin(next);
    }
}

/* Reports the outcome (unless cancelled) and frees job, which holds a slot unless queued. */
static void job_free(install_job *job, rb_err e, const char *msg, int cached)
{
    if (e != RB_ECANCELED) /* the audit trail (core/audit/): what was installed, or why not */
        audit_record(job->c, job->owner, job->session_id, "install",
                     json_pack("{s:O, s:s, s:o}", "dependencies", job->reqs, "outcome", e == RB_OK ? "installed" : "failed",
                               "message", audit_text(msg ? msg : "", msg ? strlen(msg) : 0, 1024)));
    if (job->done != NULL) {
        if (!job->op->cancelled)
            job->done(job->done_data, e, msg);
    } else if (!job->op->cancelled) {
        json_t *body = NULL;
        if (e == RB_OK) {
            json_t *sat = job->satisfied != NULL ? json_incref(job->satisfied) : json_array();
            body = json_pack("{s:s, s:O, s:b, s:s, s:I, s:o, s:o}", "session_id", job->session_id, "dependencies",
                             job->reqs, "cached", cached, job->kind->dest_key, job->kind->dest, "duration_ms",
                             (json_int_t)(rb_mono_ms() - job->started), "already_satisfied", sat, "message",
                             result_message(job->reqs, sat));
        }
        job->op->cb(job->op->data, e, e == RB_OK ? NULL : msg, body);
    }
    json_decref(job->satisfied);
    json_decref(job->reqs);
    free(job->container);
    free(job->owner);
    free(job->workspace_volume);
    free(job->op);
    free(job);
}

/* Reports the outcome of a job that holds a slot, frees it and lets the next one start. */
static void job_finish(install_job *job, rb_err e, const char *msg, int cached)
{
    rb_core *c = job->c;
    job_free(job, e, msg, cached);
    slot_release(c);
}

static rb_err run_installer(install_job *job, char *err);

static void on_cache_dropped(void *data, rb_err err, const char *errmsg)
{
    (void)data;
    if (err != RB_OK && err != RB_ECANCELED && err != RB_ENOTFOUND)
        rb_debug("dependency cache cleanup: %s", errmsg);
}

/* The last non-empty lines of pip's output text[0..n), on one line, for the error message. */
static void last_lines(const char *text, size_t n, char *out, size_t outlen)
{
    size_t end = n, lines = 0;
    while (end > 0 && (text[end - 1] == '\n' || text[end - 1] == ' '))
        end--;
    size_t start = end;
    while (start > 0 && lines < 3) {
        start--;
        if (text[start] == '\n')
            lines++;
    }
    if (end - start > outlen - 1)
        start = end - (outlen - 1);
    size_t o = 0;
    for (size_t i = start; i < end && o + 1 < outlen; i++) {
        char ch = text[i];
        out[o++] = (ch == '\n' || ch == '\r' || ch == '\t') ? ' ' : ch;
    }
    out[o] = '\0';
}

static void on_installer_exited(void *data, rb_err err, const char *msg, const backend_exec_result *r)
{
    install_job *job = data;
    char m2[RB_ERR_LEN], tail[300];
    if (err != RB_OK) {
        snprintf(m2, sizeof(m2), "installing dependencies failed: %s", msg);
        job_finish(job, err, m2, 0);
        return;
    }
    int exit_code = r->exit_code;
    if (!job->filling && job->satisfied == NULL) { /* the copier's first line: what the image satisfies */
        json_t *sat = json_loadb(r->out, r->out_len, JSON_DISABLE_EOF_CHECK, NULL);
        if (json_is_array(sat))
            job->satisfied = sat;
        else
            json_decref(sat);
    }
    if (exit_code == EXIT_SATISFIED && !job->filling && job->satisfied != NULL) {
        /* nothing to install: the cache volume made for the set is not needed (best effort) */
        backend_volume_remove(core_heart_backend(job->c), job->cache_volume, on_cache_dropped, NULL, m2);
        rb_info("session %s: dependencies already satisfied by the image: %zu packages", job->session_id,
                json_array_size(job->reqs));
        job_finish(job, RB_OK, NULL, 1);
        return;
    }
    if ((exit_code == EXIT_CACHE_MISS && !job->filling && !job->filled) || (exit_code == 0 && job->filling)) {
        job->filled |= job->filling;
        job->filling = !job->filling;
        if (run_installer(job, m2) != RB_OK)
            job_finish(job, RB_EIO, m2, 0);
        return;
    }
    if (exit_code != 0) {
        last_lines(r->err, r->err_len, tail, sizeof(tail));
        if (exit_code == EXIT_PIP_FAILED) /* nothing useful is cached: drop the volume (best effort) */
            backend_volume_remove(core_heart_backend(job->c), job->cache_volume, on_cache_dropped, NULL, m2);
        if (exit_code == EXIT_PIP_FAILED)
            snprintf(m2, sizeof(m2), "%s could not install the dependencies (%s, from %s): %s", job->kind->tool,
                     job->kind->tool_rules, job->kind->source(core_heart_settings(job->c)), tail);
        else if (exit_code == EXIT_COPY_FAILED)
            snprintf(m2, sizeof(m2), "copying the packages into the session's workspace failed: %s", tail);
        else
            snprintf(m2, sizeof(m2), "the dependency installer failed (exit code %d): %s", exit_code, tail);
        job_finish(job, exit_code == EXIT_PIP_FAILED ? RB_EINVAL : RB_EIO, m2, 0);
        return;
    }
    rb_info("session %s: dependencies installed (%s): %zu packages", job->session_id,
            job->filled ? "downloaded" : "from cache", json_array_size(job->reqs));
    job_finish(job, RB_OK, NULL, !job->filled);
}

/* The CA bundle the installer's pip trusts: the configured file; by default the Docker host's
 * own trust store when runboxd runs on that host (a unix socket), so a host behind a
 * TLS-inspecting proxy installs packages without extra settings; "none" uses the image's. */
static const char *installer_ca_file(const core_settings *cfg)
{
    static const char host_bundle[] = "/etc/ssl/certs/ca-certificates.crt";
    if (cfg->deps_ca_file != NULL && cfg->deps_ca_file[0] != '\0')
        return strcmp(cfg->deps_ca_file, "none") == 0 ? NULL : cfg->deps_ca_file;
    return access(host_bundle, R_OK) == 0 ? host_bundle : NULL;
}

/* Runs the filler or the copier (job->filling), which reports to on_installer_exited. */
static rb_err run_installer(install_job *job, char *err)
{
    const core_settings *cfg = core_heart_settings(job->c);
    char *env[4 + DEPS_FILLER_ENV_MAX];
    size_t n_env = 0;
    rb_buf reqs;
    rb_buf_init(&reqs, 64 * 1024);
    size_t i;
    json_t *v;
    json_array_foreach(job->reqs, i, v)
    {
        if (i > 0)
            rb_buf_append(&reqs, "\n", 1);
        rb_buf_append(&reqs, json_string_value(v), json_string_length(v));
    }
    rb_buf_append(&reqs, "", 1);
    env[n_env++] = xasprintf("RUNBOX_REQS=%s", reqs.data);
    env[n_env++] = xstrdup("HOME=/tmp");
    rb_buf_dispose(&reqs);
    backend_volume volumes[2];
    size_t n_volumes = 0;
    if (job->filling) {
        volumes[n_volumes++] = (backend_volume){job->cache_volume, NULL, "/cache", 0};
        const char *ca = installer_ca_file(cfg);
        if (ca != NULL)
            volumes[n_volumes++] = (backend_volume){NULL, ca, DEPS_CA_PATH, 1};
        job->kind->filler_env(cfg, ca != NULL, env, &n_env);
    } else {
        volumes[n_volumes++] = (backend_volume){job->cache_volume, NULL, "/cache", 1};
        volumes[n_volumes++] = (backend_volume){job->workspace_volume, NULL, "/target", 0};
    }
    env[n_env] = NULL;
    const char *const cmd[] = {"sh", "-c", job->filling ? job->kind->fill_sh : job->kind->copy_sh, NULL};
    const backend_label labels[] = {{"runbox.instance", core_heart_instance(job->c)},
                                    {"runbox.managed", "1"},
                                    {"runbox.deps-for", job->session_id}};
    backend_spec spec;
    oneshot_spec_init(&spec, cfg->image, job->filling ? cfg->deps_network : NULL);
    spec.cmd = cmd;
    /* the filler is root because Docker makes a volume's root folder root's; it needs no
     * capability in it. The copier has exactly the sandbox's rights over the workspace. */
    spec.user = job->filling ? "0" : "1000:1000";
    spec.env = (const char *const *)env;
    spec.working_dir = "/tmp";
    spec.labels = labels;
    spec.n_labels = 3;
    spec.volumes = volumes;
    spec.n_volumes = n_volumes;
    rb_err e = oneshot_run(job->c, "deps", &spec, INSTALL_TIMEOUT_MS, on_installer_exited, job, err);
    for (size_t k = 0; k < n_env; k++)
        free(env[k]);
    return e;
}

/* FNV-1a, 64 bits, with a seed: two of them name a cache volume. Collisions cannot mix sets
 * up: the installer compares the stored requirement list before using a cache. */
static uint64_t fnv1a64(const char *s, uint64_t seed)
{
    uint64_t h = 1469598103934665603ull ^ seed;
    for (; *s; s++) {
        h ^= (unsigned char)*s;
        h *= 1099511628211ull;
    }
    return h;
}

static void on_cache_volume_created(void *data, rb_err err, const char *errmsg)
{
    install_job *job = data;
    char msg[RB_ERR_LEN];
    if (err != RB_OK) {
        snprintf(msg, sizeof(msg), "cannot create the dependency cache volume: %s", errmsg);
        job_finish(job, err, msg, 0);
        return;
    }
    if (run_installer(job, msg) != RB_OK)
        job_finish(job, RB_EIO, msg, 0);
}

static void on_image_id(void *data, rb_err err, const char *errmsg, const char *id)
{
    install_job *job = data;
    char msg[RB_ERR_LEN];
    if (err != RB_OK) {
        snprintf(msg, sizeof(msg), "cannot inspect the sandbox image: %s", errmsg);
        job_finish(job, err, msg, 0);
        return;
    }
    char *text = json_dumps(job->reqs, JSON_COMPACT);
    char *key = xasprintf("%s\n%s%s", id, job->kind->volume_salt, text);
    free(text);
    char plain[64];
    snprintf(plain, sizeof(plain), "runbox-deps-%016llx%016llx", (unsigned long long)fnv1a64(key, 0),
             (unsigned long long)fnv1a64(key, 0x9e3779b97f4a7c15ull));
    free(key);
    /* the cache lives on the engine of the session (with several engines, each has its own) */
    char *pinned = backend_pin(core_heart_backend(job->c), job->container, plain);
    snprintf(job->cache_volume, sizeof(job->cache_volume), "%s", pinned);
    free(pinned);
    /* the set as a label, so that operators (and tests) can see what a cache holds */
    rb_buf set;
    rb_buf_init(&set, 2048);
    size_t i;
    json_t *v;
    json_array_foreach(job->reqs, i, v)
    {
        if ((i > 0 && rb_buf_append(&set, ",", 1) != RB_OK) ||
            rb_buf_append(&set, json_string_value(v), json_string_length(v)) != RB_OK)
            break;
    }
    const backend_label labels[] = {{"runbox.managed", "1"},
                                    {"runbox.deps", "1"},
                                    {"runbox.deps.set", set.data ? set.data : ""},
                                    {"runbox.deps.image", id},
                                    {"runbox.deps.tool", job->kind->tool}};
    rb_err e = backend_volume_create(core_heart_backend(job->c), job->cache_volume, labels, 5, on_cache_volume_created,
                                     job, msg);
    rb_buf_dispose(&set);
    if (e != RB_OK)
        job_finish(job, e, msg, 0);
}

static void on_workspace_volume(void *data, rb_err err, const char *errmsg, const char *name)
{
    install_job *job = data;
    char msg[RB_ERR_LEN];
    if (err != RB_OK && err != RB_ECONFLICT) {
        snprintf(msg, sizeof(msg), "cannot inspect the session's sandbox: %s", errmsg);
        job_finish(job, err == RB_ENOTFOUND ? RB_ECONFLICT : err, msg, 0);
        return;
    }
    if (err == RB_ECONFLICT) {
        job_finish(job, RB_ECONFLICT,
                   "the session's /workspace is not a Docker volume, so packages cannot be installed into it (the "
                   "session was created by an older runboxd); create a new session",
                   0);
        return;
    }
    job->workspace_volume = xstrdup(name);
    if (backend_image_id(core_heart_backend(job->c), core_heart_settings(job->c)->image, on_image_id, job, msg) !=
        RB_OK)
        job_finish(job, RB_EIO, msg, 0);
}

/* A job that was given a slot starts: it looks for the sandbox's workspace volume. A job whose
 * caller has gone meanwhile (cancelled while it waited) ends without starting. */
static void job_begin(install_job *job)
{
    char msg[RB_ERR_LEN];
    if (job->op->cancelled) {
        job_finish(job, RB_ECANCELED, "the install was cancelled while it waited", 0);
        return;
    }
    if (backend_workspace_volume(core_heart_backend(job->c), job->container, "/workspace", on_workspace_volume, job,
                                 msg) != RB_OK)
        job_finish(job, RB_EIO, msg, 0);
}

/* Starts installing reqs (borrowed) into the workspace of the session s (its view, copied), or
 * queues it when max_installs run already; on RB_OK *out is the job (it reports later, never
 * before this returns), whose caller sets how it reports (done, or op->cb). */
static rb_err job_start(rb_core *c, const core_session_view *s, json_t *reqs, install_job **out, char *err)
{
    if (s->container_id == NULL)
        return rb_fail(RB_ECONFLICT, err, "session %s has no sandbox container", s->id);
    if (core_heart_closing(c))
        return rb_fail(RB_EUNAVAILABLE, err, "runboxd is shutting down");
    deps_room *r = deps__room(c);
    int max = core_heart_settings(c)->max_installs;
    install_job *job = xcalloc(1, sizeof(*job));
    job->c = c;
    job->op = xcalloc(1, sizeof(*job->op));
    snprintf(job->session_id, sizeof(job->session_id), "%s", s->id);
    job->owner = xstrdup(s->owner != NULL ? s->owner : "");
    job->container = xstrdup(s->container_id);
    job->reqs = json_incref(reqs);
    job->started = rb_mono_ms();
    if (r->installs_running >= max) {
        if (r->installs_tail != NULL)
            r->installs_tail->next = job;
        else
            r->installs_head = job;
        r->installs_tail = job;
        rb_info("session %s: the dependency install waits for a slot (%d running, max-installs %d)", s->id,
                r->installs_running, max);
        *out = job;
        return RB_OK;
    }
    rb_err e = backend_workspace_volume(core_heart_backend(c), job->container, "/workspace", on_workspace_volume, job,
                                        err);
    if (e != RB_OK) {
        json_decref(job->reqs);
        free(job->container);
        free(job->op);
        free(job);
        return e;
    }
    r->installs_running++;
    *out = job;
    return RB_OK;
}

void deps_dispose(rb_core *c)
{
    void **slot = core_heart_room(c, CORE_ROOM_DEPS);
    deps_room *r = *slot;
    if (r == NULL)
        return;
    while (r->installs_head != NULL) {
        install_job *job = r->installs_head;
        if ((r->installs_head = job->next) == NULL)
            r->installs_tail = NULL;
        job_free(job, RB_ECANCELED, "runboxd is shutting down", 0);
    }
    json_decref(r->packages_cache);
    free(r);
    *slot = NULL;
}

rb_err deps_session_install(rb_core *c, const core_session_view *s, json_t *reqs, deps_done_cb cb, void *data,
                            core_op **handle, char *err)
{
    install_job *job = NULL;
    rb_err e = job_start(c, s, reqs, &job, err);
    if (e != RB_OK)
        return e;
    job->done = cb;
    job->done_data = data;
    job->kind = deps_kind_of(s->language);
    if (handle != NULL)
        *handle = job->op;
    return RB_OK;
}

rb_err core_dependencies_install(rb_core *c, const core_caller *who, const char *session_id, json_t *body,
                                 core_cb cb, void *data, core_op **handle, char *err)
{
    core_session_view s;
    rb_err e = core_heart_lookup(c, who, session_id, &s, err);
    if (e != RB_OK)
        return e;
    if (strcmp(s.status, "ready") != 0 && strcmp(s.status, "busy") != 0)
        return rb_fail(RB_ECONFLICT, err, "session %s is %s; install packages once it is ready", s.id, s.status);
    const deps_kind *kind = deps_kind_of(s.language);
    if (kind == NULL)
        return rb_fail(RB_ECONFLICT, err,
                       "session %s runs %s; packages need a python session (pip) or a javascript or typescript "
                       "session (npm)",
                       s.id, s.language);
    static const char *const keys[] = {"dependencies", "packages", NULL};
    if (!json_is_object(body))
        return rb_fail(RB_EINVAL, err, "the body must be a JSON object such as {\"dependencies\": [%s]}",
                       kind->example);
    e = core__check_keys(body, "the dependencies request", keys, err);
    if (e != RB_OK)
        return e;
    json_t *list = json_object_get(body, "dependencies");
    if (list == NULL && json_is_object(body))
        list = json_object_get(body, "packages");
    json_t *reqs = NULL;
    e = kind->parse(core_heart_settings(c), list, &reqs, err);
    if (e != RB_OK)
        return e;
    if (reqs == NULL)
        return rb_fail(RB_EINVAL, err, "dependencies: give at least one package, e.g. {\"dependencies\": [%s]}",
                       kind->example);
    install_job *job = NULL;
    e = job_start(c, &s, reqs, &job, err);
    json_decref(reqs);
    if (e != RB_OK)
        return e;
    job->kind = kind;
    job->op->cb = cb;
    job->op->data = data;
    if (handle != NULL)
        *handle = job->op;
    return RB_OK;
}

/*
 * sandbox.c: a session's container and its attach stream, from its spec to its removal. What a
 * sandbox looks like (limits, labels, hardening) is decided here and handed to the backend as a
 * backend_spec (core/backend/backend.h); then create + start + attach + ping for a new session,
 * attach + ping after a restart, a warm pool entry's claim, a cut stream's reconnect (or the
 * session's end, with the reason the backend gives) and close. Not here: what is said over the
 * stream (the runner protocol: requests, the bounded and throttled reading of the runner's lines
 * and their events), which is sandbox_runner.c; the two share core/sandbox_private.h.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/isolation/isolation.h"
#include "core/network/egress.h"
#include "core/sandbox_private.h"

/* Rounds (successful Docker probes, recovery.c) in which a container whose create failed is
 * looked for again when it is not there: the engine may carry a create out after its deadline. */
#define REMOVE_MISSING_TRIES 3

static void timer_close_cb(uv_handle_t *h)
{
    free(h);
}

static void release(sandbox *sb)
{
    if (sb->state != SB_CLOSED || sb->inflight > 0)
        return;
    if (sb->timer != NULL) {
        uv_timer_stop(sb->timer);
        uv_close((uv_handle_t *)sb->timer, timer_close_cb);
        sb->timer = NULL;
    }
    if (sb->resume != NULL) {
        uv_timer_stop(sb->resume);
        uv_close((uv_handle_t *)sb->resume, timer_close_cb);
        sb->resume = NULL;
    }
    runner_lines_dispose(&sb->lines);
    rb_buf_dispose(&sb->errline);
    free(sb->lost);
    free(sb->name);
    free(sb->container_id);
    free(sb);
}

void sandbox__finish_ready(sandbox *sb, rb_err err, const char *msg)
{
    if (sb->timer != NULL)
        uv_timer_stop(sb->timer);
    sandbox_ready_cb cb = sb->ready_cb;
    sb->ready_cb = NULL;
    if (err == RB_OK)
        sb->state = SB_READY;
    if (cb != NULL && sb->s != NULL)
        cb(sb->s, err, msg);
    else if (sb->s == NULL && sb->pool_cb != NULL && sb->state != SB_CLOSED)
        sb->pool_cb(sb->pool_data, sb, err, msg);
}

/* ---- attach ------------------------------------------------------------------------- */

static void handshake_timeout_cb(uv_timer_t *t)
{
    sandbox *sb = t->data;
    char msg[RB_ERR_LEN];
    if (sb->awaiting_warm) {
        /* The runner answers; its preload is only slow (a busy host): usable all the same. */
        rb_warn("container %.12s: the preload took more than %d s; the warm sandbox is used without waiting",
                sb->container_id, RB_WARM_WAIT_MS / 1000);
        sb->awaiting_warm = 0;
        sandbox__finish_ready(sb, RB_OK, NULL);
        return;
    }
    snprintf(msg, sizeof(msg),
             "the sandbox container started but its runner did not answer within %d s; check that image '%s' was "
             "built by docker/build-images",
             RB_HANDSHAKE_MS / 1000, sb->c->cfg->image);
    sandbox__finish_ready(sb, RB_ETIMEDOUT, msg);
}

void sandbox__await_warm(sandbox *sb)
{
    sb->awaiting_warm = 1;
    if (sb->timer != NULL)
        uv_timer_start(sb->timer, handshake_timeout_cb, RB_WARM_WAIT_MS, 0);
}

static void att_open(void *data, rb_err err, const char *errmsg)
{
    sandbox *sb = data;
    char msg[RB_ERR_LEN];
    sb->inflight--;
    sb->opening = 0;
    if (sb->state == SB_CLOSED) {
        release(sb);
        return;
    }
    if (err != RB_OK) {
        sb->att = NULL;
        snprintf(msg, sizeof(msg), "cannot attach to the sandbox container: %s", errmsg);
        sandbox__finish_ready(sb, err, msg);
        return;
    }
    sb->state = SB_HANDSHAKE;
    rb_random_id("p_", sb->ping_id, sizeof(sb->ping_id));
    json_t *ping = json_pack("{s:s, s:s}", "op", "ping", "id", sb->ping_id);
    err = sandbox__send_line(sb, ping, msg);
    json_decref(ping);
    if (err != RB_OK) {
        sandbox__finish_ready(sb, err, msg);
        return;
    }
    if (sb->timer == NULL) {
        sb->timer = xmalloc(sizeof(*sb->timer));
        uv_timer_init(sb->c->loop, sb->timer);
        sb->timer->data = sb;
    }
    uv_timer_start(sb->timer, handshake_timeout_cb, RB_HANDSHAKE_MS, 0);
}

static void att_data(void *data, int stream, const char *buf, size_t len)
{
    sandbox *sb = data;
    /* Handling a line can end the session and close this sandbox: hold it until we return. */
    sb->inflight++;
    if (stream == 1)
        sandbox__on_stdout(sb, buf, len);
    else
        sandbox__on_stderr(sb, buf, len);
    sb->inflight--;
    release(sb);
}

static rb_err start_attach(sandbox *sb, char *err);

/* Ready callback of a session reconnecting to its sandbox after its stream was cut. */
static void reconnected_cb(session *s, rb_err err, const char *msg)
{
    if (err != RB_OK) {
        char reason[RB_ERR_LEN];
        snprintf(reason, sizeof(reason),
                 "the connection to the sandbox (its Docker attach stream) was cut and reconnecting failed (%.300s): "
                 "create a new session",
                 msg);
        session_end(s, "dead", reason);
        return;
    }
    rb_info("session %s: reconnected to its sandbox after its stream was cut", s->id);
    session_pump(s);
}

/* The stream of a ready sandbox whose container still runs was cut: the cell it ran is given
 * up (what it printed meanwhile is lost), the line state starts afresh and the sandbox is
 * attached again; the handshake interrupts the cell if it still runs (stale_id) and the
 * session goes on, with its variables, at the runner's answer (reconnected_cb). */
static rb_err reconnect(sandbox *sb, char *err)
{
    if (sb->ex != NULL) {
        char why[RB_ERR_LEN];
        snprintf(why, sizeof(why),
                 "the connection to the sandbox (its Docker attach stream) was cut while this cell ran (%.100s): "
                 "what it printed from then on is lost, so it was given up; the session reconnects to its "
                 "sandbox and keeps its variables",
                 sb->lost);
        execution *ex = sb->ex;
        sb->ex = NULL;
        execution_fail(ex, "error", "ConnectionLost", why, 0, NULL);
    }
    runner_lines_dispose(&sb->lines);
    runner_lines_init(&sb->lines, RB_RUNNER_LINE_MAX);
    rb_buf_reset(&sb->errline);
    if (sb->resume != NULL)
        uv_timer_stop(sb->resume);
    sb->paused = 0;
    sb->ready_cb = reconnected_cb;
    return start_attach(sb, err);
}

/* Why the stream of a ready sandbox ended, from the backend's view of its container: a cut
 * stream of a running container is reconnected; otherwise the session ends with a reason that
 * says what happened. */
static void lost_state_cb(void *data, rb_err err, const char *errmsg, const backend_sandbox_state *st)
{
    sandbox *sb = data;
    char msg[RB_ERR_LEN];
    sb->inflight--;
    if (sb->state != SB_LOST || sb->s == NULL) {
        release(sb);
        return;
    }
    if (err != RB_OK && err != RB_ENOTFOUND && sb->c->be->ops->engine_down != NULL) {
        /* Several engines, and this one cannot say (it is going down, or away): the session is
         * unavailable until the probes have seen the engine answer again (core__engines_checked
         * then asks again and resumes it, or ends it if its container is gone). Nothing is re-run
         * elsewhere. */
        session *s = sb->s;
        if (s->engine_down == NULL)
            rb_warn("session %s: unavailable: its engine does not answer (%s)", s->id, errmsg);
        free(s->engine_down);
        s->engine_down = xasprintf("engine does not answer (%.400s)", errmsg);
        core__probe_soon(sb->c);
        return;
    }
    if (err == RB_ENOTFOUND) {
        snprintf(msg, sizeof(msg), "the sandbox container no longer exists (it was removed outside runboxd): create "
                                   "a new session");
    } else if (err != RB_OK) {
        snprintf(msg, sizeof(msg),
                 "the connection to the sandbox was lost (%.100s) and Docker could not say whether its container "
                 "still runs (%.200s); the session was ended: create a new session",
                 sb->lost, errmsg);
    } else if (st->running) {
        char e2[RB_ERR_LEN];
        if (reconnect(sb, e2) == RB_OK)
            return;
        snprintf(msg, sizeof(msg),
                 "the connection to the sandbox (its Docker attach stream) was cut while its container still ran "
                 "(%.100s), and it cannot be attached again (%.200s): create a new session",
                 sb->lost, e2);
    } else if (st->oom_killed) {
        snprintf(msg, sizeof(msg),
                 "the sandbox container was killed for exceeding its memory limit (%lld MiB): create a new "
                 "session, with a larger memory_limit if needed",
                 (long long)(sb->s->memory_bytes / (1024 * 1024)));
    } else {
        snprintf(msg, sizeof(msg),
                 "the sandbox container stopped (exit code %d): its runner was killed or crashed: create a new "
                 "session",
                 st->exit_code);
    }
    session_end(sb->s, "dead", msg); /* closes sb */
}

static void att_close(void *data, rb_err err, const char *errmsg)
{
    sandbox *sb = data;
    sb->att = NULL;
    char msg[RB_ERR_LEN];
    if (sb->state == SB_READY && sb->s == NULL && sb->pool_cb != NULL) {
        /* A warm pool entry whose runner died: its owner drops it. */
        snprintf(msg, sizeof(msg), "the warm sandbox stopped (%s)", err == RB_OK ? "its output stream ended" : errmsg);
        sb->pool_cb(sb->pool_data, sb, RB_EIO, msg);
        return;
    }
    if (sb->state == SB_CLOSED || (sb->s == NULL && sb->pool_cb == NULL))
        return;
    if (sb->state != SB_READY) {
        snprintf(msg, sizeof(msg), "the sandbox container exited during start-up (%s)",
                 err == RB_OK ? "its runner ended" : errmsg);
        sandbox__finish_ready(sb, RB_EIO, msg);
        return;
    }
    /* The container stopped, or the connection to the engine was cut: ask which. Meanwhile
     * nothing new is sent to it (session_pump waits) and the running execution stays running. */
    session *s = sb->s;
    free(sb->lost);
    sb->lost = xstrdup(err == RB_OK ? "its output stream ended" : errmsg);
    sb->state = SB_LOST;
    if (backend_state(sb->c->be, sb->container_id, lost_state_cb, sb, msg) == RB_OK) {
        sb->inflight++;
        return;
    }
    char reason[RB_ERR_LEN];
    snprintf(reason, sizeof(reason),
             "the sandbox's output stream ended (%.100s): its container stopped (killed for exceeding its memory "
             "limit, or its runner was killed) or the connection to Docker was cut (%.200s): create a new session",
             sb->lost, msg);
    session_end(s, "dead", reason); /* closes sb */
}

static rb_err start_attach(sandbox *sb, char *err)
{
    backend_attach_cbs cbs = {att_open, att_data, att_close};
    sb->state = SB_ATTACHING;
    rb_err e = backend_attach_open(sb->c->be, sb->container_id, &cbs, sb, &sb->att, err);
    if (e == RB_OK) {
        sb->inflight++;
        sb->opening = 1;
    }
    return e;
}

/* ---- create ------------------------------------------------------------------------- */

/* Container starts sent to the engine at once. A start is the engine's heavy step (runc, the
 * mounts, here a fuse-overlayfs process per container): 100 sent at once on a 2-core host queued
 * in the Docker client behind each other until their 30 s deadline passed (every session of the
 * burst failed, where the same 100 bare containers all started in 35-38 s). Beyond this many, a
 * created container waits here, without a deadline, for a start to answer; the engine is kept
 * as busy as it gets (measured: docs/benchmark.md, "Bursts"). */
#define SANDBOX_START_PARALLEL 4

static void started_cb(void *data, rb_err err, const char *errmsg);

static void start_unqueue(sandbox *sb)
{
    rb_core *c = sb->c;
    sandbox *prev = NULL;
    for (sandbox *q = c->start_head; q != NULL; prev = q, q = q->start_next) {
        if (q != sb)
            continue;
        if (prev != NULL)
            prev->start_next = sb->start_next;
        else
            c->start_head = sb->start_next;
        if (c->start_tail == sb)
            c->start_tail = prev;
        break;
    }
    sb->start_next = NULL;
    sb->start_queued = 0;
    sb->inflight--;
}

/* Sends sb's start, or queues it while SANDBOX_START_PARALLEL starts are in flight. */
static void start_container(sandbox *sb)
{
    char msg[RB_ERR_LEN];
    rb_core *c = sb->c;
    sb->state = SB_STARTING;
    if (c->starts_inflight >= SANDBOX_START_PARALLEL) {
        sb->start_queued = 1;
        sb->inflight++; /* held by the queue */
        if (c->start_tail != NULL)
            c->start_tail->start_next = sb;
        else
            c->start_head = sb;
        c->start_tail = sb;
        return;
    }
    if (backend_start(c->be, sb->container_id, started_cb, sb, msg) != RB_OK) {
        sandbox__finish_ready(sb, RB_EUNAVAILABLE, msg);
        return;
    }
    c->starts_inflight++;
    sb->inflight++;
}

static void started_cb(void *data, rb_err err, const char *errmsg)
{
    sandbox *sb = data;
    char msg[RB_ERR_LEN];
    sb->inflight--;
    rb_core *c = sb->c;
    c->starts_inflight--;
    while (c->start_head != NULL && c->starts_inflight < SANDBOX_START_PARALLEL) {
        sandbox *next = c->start_head;
        start_unqueue(next);
        start_container(next);
    }
    if (sb->state == SB_CLOSED) {
        release(sb);
        return;
    }
    if (err != RB_OK) {
        /* gVisor's KVM platform where the host cannot run it (kvm_pvm) hangs in the start */
        int hung = err == RB_ETIMEDOUT && sb->runtime != NULL && strcmp(sb->runtime, "runc") != 0;
        snprintf(msg, sizeof(msg), "cannot start the sandbox container: %s%s%s%s",
                 hung ? "the runtime '" : "", hung ? sb->runtime : "",
                 hung ? "' did not start it in time (a gVisor platform this host cannot run, such as --platform=kvm "
                        "without hardware virtualization, hangs there: docs/security.md, \"Under gVisor\"): "
                      : "",
                 errmsg);
        sandbox__finish_ready(sb, err, msg);
        return;
    }
    if (start_attach(sb, msg) != RB_OK)
        sandbox__finish_ready(sb, RB_EUNAVAILABLE, msg);
}

static void created_cb(void *data, rb_err err, const char *errmsg, const char *id)
{
    sandbox *sb = data;
    char msg[RB_ERR_LEN];
    sb->inflight--;
    sb->c->pending_ops--;
    if (err == RB_OK)
        sb->container_id = xstrdup(id);
    else if (err != RB_ENOTFOUND && err != RB_ECANCELED)
        /* Unless the image is missing, the engine may have made it anyway: its answer was lost,
         * cut short or late (it may even carry the create out after our deadline). Remove it by
         * name, and look for it again a few times. */
        removal_start(sb->c, sb->name, REMOVE_MISSING_TRIES);
    free(sb->name);
    sb->name = NULL;
    if (sb->state == SB_CLOSED) {
        /* Closed while its create was in flight (a session ended, the pool stopped): the
         * container is removed now that it exists. */
        if (sb->container_id != NULL)
            removal_start(sb->c, sb->container_id, 0);
        release(sb);
        return;
    }
    if (err != RB_OK) {
        if (err == RB_ENOTFOUND)
            snprintf(msg, sizeof(msg),
                     "the sandbox image '%s' does not exist; build it with docker/build-images (or point --image "
                     "at another image): %s",
                     sb->c->cfg->image, errmsg);
        else
            snprintf(msg, sizeof(msg), "cannot create the sandbox container: %s", errmsg);
        sandbox__finish_ready(sb, err == RB_ENOTFOUND ? RB_EUNAVAILABLE : err, msg);
        return;
    }
    session *s = sb->s;
    if (s != NULL) {
        free(s->container_id);
        s->container_id = xstrdup(id);
        session_persist(s); /* so a crash from here on finds the container by its session */
    }
    start_container(sb);
}

/* The sandbox of a session: owner is the session id, or "pool" for a warm pool entry (labels
 * cannot change after creation: a claimed pool container is found by its id). s gives the
 * session's sandbox limits; NULL means the server's defaults (pool). The defaults are the
 * hardening of issue 4: no network, read-only root, all capabilities dropped, no-new-privileges,
 * an init, pids/memory/CPU/open-file/file-size limits, and size-limited memory-backed /workspace
 * and /tmp. Their pages are charged to the sandbox's memory, so their sizes are added to the
 * memory limit: full disks never starve the interpreter of the memory the session asked for.
 *
 * The container starts as root with only CAP_KILL, CAP_SETUID and CAP_SETGID (issue 9, finding
 * 3): not to give anything to user code, but so that the runner separates privileges
 * (docker/runner/PROTOCOL.md, "Privilege separation"). Its supervisor becomes uid 999 keeping
 * those three (to signal the user's processes and start each worker), user code runs as the
 * sandbox user 1000 with no capabilities, and docker-init stays root: the container's stdout
 * (runboxd's control channel, their fd 1) and those processes are out of user code's reach.
 * Without the three capabilities the runner refuses to run user code as root. Everything runboxd
 * runs in the container names its user (files.c: SANDBOX_USER), since an exec would otherwise
 * run as root with those capabilities. */
/* Whether a session of this server may have a network that reaches PyPI: "off" (no networks,
 * --egress), "allowed" (pypi.org and files.pythonhosted.org within --egress-max), "refused". */
static const char *pip_index_reach(rb_core *c)
{
    if (!c->cfg->egress)
        return "off";
    json_t *ask = json_pack("{s:[s,s]}", "allow", "pypi.org", "files.pythonhosted.org");
    json_t *got = NULL;
    char why[RB_ERR_LEN];
    rb_err e = egress_policy(c, NULL, NULL, ask, "pip", &got, why);
    json_decref(ask);
    json_decref(got);
    return e == RB_OK ? "allowed" : "refused";
}

typedef struct sandbox_spec {
    backend_spec spec;
    char **env; /* owned, like each string in it */
    backend_label labels[3];
    backend_label volume_labels[2];
    backend_mount tmp;
    backend_ulimit ulimits[4];
} sandbox_spec;

static void sandbox_spec_init(sandbox_spec *ss, rb_core *c, const char *owner, const char *language,
                              int64_t memory_bytes, double cpus, json_t *env_vars, const session *s,
                              const char *isolation)
{
    static const char *const cap_drop[] = {"ALL", NULL};
    static const char *const cap_add[] = {"KILL", "SETGID", "SETUID", NULL}; /* the runner's, see above */
    static const char *const security_opt[] = {"no-new-privileges", NULL};
    const core_settings *cfg = c->cfg;
    int pids = s ? s->pids_limit : cfg->pids_limit;
    int64_t ws = s ? s->workspace_bytes : (int64_t)cfg->workspace_size;
    int64_t tmp = s ? s->tmp_bytes : (int64_t)cfg->tmp_size;
    const char *network = s ? s->egress_net : NULL;
    size_t n = 0;
    ss->env = xcalloc(10 + 12 + EGRESS_ENV_MAX + json_object_size(env_vars), sizeof(*ss->env));
    ss->env[n++] = xasprintf("RUNBOX_LANGUAGE=%s", language);
    /* Modules the runner's zygote imports (docker/runner/PROTOCOL.md, "Preload"): before the
     * first cell in a warm pool sandbox; in one made for a session (the cold path) only from its
     * first reset on, so that a burst of pool misses does not spend seconds of CPU each on
     * imports at start. */
    if (strcmp(language, "python") == 0) {
        ss->env[n++] = xasprintf("RUNBOX_PRELOAD=%s", cfg->preload ? cfg->preload : "");
        if (s != NULL)
            ss->env[n++] = xstrdup("RUNBOX_PRELOAD_LAZY=1");
    }
    ss->env[n++] = xasprintf("RUNBOX_GRACE_MS=%d", cfg->grace_ms);
    /* packages installed for the session (core/deps/), also for Python subprocesses of user code */
    ss->env[n++] = xstrdup("PYTHONPATH=/workspace/.runbox/site-packages");
    /* and npm's (core/deps/deps_npm.c), which `require` looks in before the image's Node modules */
    ss->env[n++] = xstrdup("NODE_PATH=/workspace/.runbox/node_modules");
    ss->env[n++] = xstrdup("RUNBOX_SANDBOX=1"); /* the runner may clean up stray processes */
    /* what pip's refusal in a sealed sandbox may suggest (docker/runner/runbox_runner/pipcheck.py): a
     * network policy with PyPI only when this server's limits allow one */
    ss->env[n++] = xasprintf("RUNBOX_PIP_INDEX=%s", pip_index_reach(c));
    ss->env[n++] = xasprintf("RUNBOX_MEMORY_MB=%lld", (long long)(memory_bytes / (1024 * 1024)));
    if (network != NULL) {
        /* its one way out (core/network/egress.h): every HTTP client that follows these goes through
         * the session's egress proxy (pip, npm, curl, requests, urllib); nothing else is reachable */
        static const char *const proxy_vars[] = {"HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy",
                                                 "npm_config_proxy", "npm_config_https_proxy"};
        for (size_t i = 0; i < sizeof(proxy_vars) / sizeof(proxy_vars[0]); i++)
            ss->env[n++] = xasprintf("%s=http://%s:%d", proxy_vars[i], EGRESS_PROXY_HOST, EGRESS_PROXY_PORT);
        ss->env[n++] = xstrdup("NO_PROXY=localhost,127.0.0.1,::1");
        ss->env[n++] = xstrdup("no_proxy=localhost,127.0.0.1,::1");
        /* pip retries a refused connection for about 15 s by default: a refusal is final */
        ss->env[n++] = xstrdup("PIP_RETRIES=1");
        ss->env[n++] = xstrdup("RUNBOX_NETWORK=policy");
        /* secrets (docs/network.md): their placeholders and the bundle with the session's CA */
        n += egress_sandbox_env(c, s->net_policy, ss->env + n, EGRESS_ENV_MAX);
    }
    /* HOME, MPLBACKEND, MPLCONFIGDIR and the rest come from the image (docker/build-images). */
    const char *k;
    json_t *v;
    json_object_foreach(env_vars, k, v)
        ss->env[n++] = xasprintf("%s=%s", k, json_string_value(v));

    ss->labels[0] = (backend_label){"runbox.session", owner};
    ss->labels[1] = (backend_label){"runbox.instance", c->instance};
    ss->labels[2] = (backend_label){"runbox.managed", "1"};
    /* what removal_sweep_volumes finds if a helper kept the volume past its sandbox */
    ss->volume_labels[0] = (backend_label){"runbox.managed", "1"};
    ss->volume_labels[1] = (backend_label){"runbox.workspace", c->instance};
    ss->tmp = (backend_mount){"/tmp", tmp, -1, -1, -1};
    ss->ulimits[0] = (backend_ulimit){"nofile", (int64_t)cfg->open_files, (int64_t)cfg->open_files};
    ss->ulimits[1] = (backend_ulimit){"fsize", (int64_t)cfg->file_size, (int64_t)cfg->file_size};
    ss->ulimits[2] = (backend_ulimit){"core", 0, 0};
    ss->spec = (backend_spec){
        .image = cfg->image,
        .user = "0", /* only until the runner separates privileges (above) */
        .env = (const char *const *)ss->env,
        .working_dir = "/workspace",
        .labels = ss->labels,
        .n_labels = 3,
        .memory = memory_bytes + ws + tmp,
        .nano_cpus = (int64_t)(cpus * 1e9),
        .pids_limit = pids,
        .readonly_root = 1,
        .tmpfs = &ss->tmp,
        .n_tmpfs = 1,
        /* the files API reaches /workspace (files.c) */
        .workspace = {"/workspace", ws, 1000, 1000, 0755},
        .workspace_labels = ss->volume_labels,
        .n_workspace_labels = 2,
        .ulimits = ss->ulimits,
        .n_ulimits = 3,
        .runtime = isolation_runtime(isolation, cfg->gvisor_runtime),
        .cap_drop = cap_drop,
        .cap_add = cap_add,
        .security_opt = security_opt,
        .init = 1,
        .network = network,
        .log_driver = "none",
    };
    if (strcmp(isolation, "gvisor") == 0) {
        /* core/isolation/isolation.h: the host's pids cgroup also counts gVisor's own threads and
         * stubs, so it gets room for them; the session's limit becomes RLIMIT_NPROC, which gVisor's
         * kernel holds per sandbox */
        int64_t nproc = isolation_gvisor_nproc(pids, memory_bytes);
        ss->ulimits[3] = (backend_ulimit){"nproc", nproc, nproc};
        ss->spec.n_ulimits = 4;
        ss->spec.pids_limit = isolation_gvisor_host_pids(nproc);
        /* no docker-init: the supervisor is PID 1, so orphans (the workers the zygote forks from a
         * child that exits) become its children, which PR_SET_CHILD_SUBREAPER does elsewhere but
         * this gVisor refuses (EINVAL) */
        ss->spec.init = 0;
    }
}

static void sandbox_spec_dispose(sandbox_spec *ss)
{
    for (size_t i = 0; ss->env[i] != NULL; i++)
        free(ss->env[i]);
    free(ss->env);
}

static sandbox *sandbox_alloc(rb_core *c, session *s, sandbox_ready_cb cb)
{
    sandbox *sb = xcalloc(1, sizeof(*sb));
    sb->c = c;
    sb->s = s;
    sb->ready_cb = cb;
    runner_lines_init(&sb->lines, RB_RUNNER_LINE_MAX);
    rb_buf_init(&sb->errline, 8192);
    return sb;
}

/* Starts creating sb's container name from ss (disposed here). On a synchronous failure sb is
 * released (the caller must not touch it) and the error returned. The create counts in
 * core_pending until it answers, so that a graceful stop waits to remove what it creates. */
static rb_err create_container(sandbox *sb, const char *name, sandbox_spec *ss, char *err)
{
    sb->state = SB_CREATING;
    sb->runtime = ss->spec.runtime;
    rb_err e = backend_create(sb->c->be, name, &ss->spec, created_cb, sb, err);
    sandbox_spec_dispose(ss);
    if (e != RB_OK) {
        sb->state = SB_CLOSED;
        release(sb);
        return e;
    }
    sb->name = xstrdup(name);
    sb->inflight++;
    sb->c->pending_ops++;
    return RB_OK;
}

rb_err sandbox_create(session *s, sandbox_ready_cb cb, char *err)
{
    /* its shared folders (core/shares/), bound read-only unless mounted rw; each checked again */
    backend_volume *binds = NULL;
    size_t nbinds = 0;
    json_t *mounts = json_object_get(s->options, "mounts"), *share_mounts = volumes_split(mounts, 0);
    rb_err e = shares_volumes(s->core->cfg, share_mounts, &binds, &nbinds, err);
    json_decref(share_mounts);
    /* and its volumes (core/volumes/): the binds name them pinned, so the sandbox goes where they are */
    if (e == RB_OK)
        e = volumes_binds(s->core, mounts, &binds, &nbinds, err);
    if (e != RB_OK) {
        shares_volumes_free(binds, nbinds);
        return e;
    }
    sandbox *sb = sandbox_alloc(s->core, s, cb);
    sandbox_spec ss;
    sandbox_spec_init(&ss, s->core, s->id, s->language, s->memory_bytes, s->cpus,
                      json_object_get(s->options, "environment_variables"), s, s->isolation);
    ss.spec.volumes = binds;
    ss.spec.n_volumes = nbinds;
    char name[80];
    if (s->incarnation > 0) /* a resumed hibernation: the old container's name may not be free yet */
        snprintf(name, sizeof(name), "runbox-%s-%d", s->id, s->incarnation);
    else
        snprintf(name, sizeof(name), "runbox-%s", s->id);
    /* beside what it must reach: its kept files, or the session it was forked from (several engines) */
    char *pinned = s->place_with != NULL ? backend_pin(s->core->be, s->place_with, name) : NULL;
    e = create_container(sb, pinned != NULL ? pinned : name, &ss, err);
    free(pinned);
    shares_volumes_free(binds, nbinds);
    if (e != RB_OK)
        return e;
    s->sb = sb;
    return RB_OK;
}

rb_err sandbox_resume(session *s, char *err)
{
    sandbox *sb = s->sb;
    if (sb == NULL || sb->state != SB_LOST)
        return RB_OK;
    return reconnect(sb, err);
}

rb_err sandbox_reattach(session *s, sandbox_ready_cb cb, char *err)
{
    if (s->container_id == NULL)
        return rb_fail(RB_ENOTFOUND, err, "the session has no container");
    sandbox *sb = sandbox_alloc(s->core, s, cb);
    sb->container_id = xstrdup(s->container_id);
    rb_err e = start_attach(sb, err);
    if (e != RB_OK) {
        sb->state = SB_CLOSED;
        release(sb);
        return e;
    }
    s->sb = sb;
    return RB_OK;
}

rb_err sandbox_create_pooled(rb_core *c, const char *language, const char *isolation, sandbox_pool_cb cb, void *data,
                             sandbox **out, char *err)
{
    sandbox *sb = sandbox_alloc(c, NULL, NULL);
    sb->pool_cb = cb;
    sb->pool_data = data;
    sandbox_spec ss;
    sandbox_spec_init(&ss, c, "pool", language, core_default_memory(c), c->cfg->cpus, NULL, NULL, isolation);
    /* Its start and preload yield to the cells of sessions while it waits (pool.c raises it at
     * its claim). */
    ss.spec.cpu_shares = c->cfg->pool_cpu_shares;
    char name[64], rnd[RB_ID_LEN];
    rb_random_id("", rnd, sizeof(rnd));
    snprintf(name, sizeof(name), "runbox-pool-%.16s", rnd);
    rb_err e = create_container(sb, name, &ss, err);
    if (e != RB_OK)
        return e;
    *out = sb;
    return RB_OK;
}

/* A claimed sandbox has been idle in the pool: a fresh ping proves its runner still answers
 * before the session is reported ready. */
#define CLAIM_PING_MS 5000

rb_err sandbox_claim(sandbox *sb, session *s, sandbox_ready_cb cb, char *err)
{
    if (sb->state != SB_READY || sb->s != NULL || sb->att == NULL)
        return rb_fail(RB_ECONFLICT, err, "the warm sandbox is not ready");
    char msg[RB_ERR_LEN];
    rb_random_id("p_", sb->ping_id, sizeof(sb->ping_id));
    /* claim: a runner whose first interpreter still waits for the preload starts it the plain way
     * (docker/runner/PROTOCOL.md, "Preload"): a session never waits for the imports */
    json_t *ping = json_pack("{s:s, s:s, s:b}", "op", "ping", "id", sb->ping_id, "claim", 1);
    rb_err e = sandbox__send_line(sb, ping, msg);
    json_decref(ping);
    if (e != RB_OK)
        return rb_fail(e, err, "the warm sandbox did not take a ping: %s", msg);
    sb->pool_cb = NULL;
    sb->pool_data = NULL;
    sb->s = s;
    sb->ready_cb = cb;
    sb->state = SB_HANDSHAKE;
    free(s->container_id);
    s->container_id = xstrdup(sb->container_id);
    s->sb = sb;
    uv_timer_start(sb->timer, handshake_timeout_cb, CLAIM_PING_MS, 0);
    return RB_OK;
}

const char *sandbox_container_id(const sandbox *sb)
{
    return sb->container_id;
}

int sandbox_ready(const sandbox *sb)
{
    return sb != NULL && sb->state == SB_READY;
}

void sandbox_close(sandbox *sb, int remove)
{
    if (sb == NULL || sb->state == SB_CLOSED)
        return;
    sb->state = SB_CLOSED;
    sb->s = NULL;
    sb->ex = NULL;
    sb->ready_cb = NULL;
    if (sb->start_queued)
        start_unqueue(sb); /* its container is removed below, never started */
    if (sb->att != NULL) {
        /* After backend_attach_close no callback runs, so a pending on_open never comes. */
        if (sb->opening) {
            sb->opening = 0;
            sb->inflight--;
        }
        backend_attach_close(sb->c->be, sb->att);
        sb->att = NULL;
    }
    if (remove && sb->container_id != NULL)
        removal_start(sb->c, sb->container_id, 0);
    release(sb);
}

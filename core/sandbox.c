/*
 * sandbox.c: a session's container and the runner protocol spoken over its attach stream
 * (docker/runner/PROTOCOL.md): create + start + attach + ping for a new session, attach +
 * ping after a restart, execute and interrupt requests, and turning the runner's JSON lines
 * into execution events. What a sandbox looks like (limits, labels, hardening) is decided here
 * and handed to the backend as a backend_spec (core/backend.h). Bytes from the container are
 * untrusted: lines are bounded and malformed ones are dropped (the pure part, lines and events,
 * is core/runner_frames.c).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "core/runner_frames.h"

/* SB_LOST: a ready sandbox's stream ended; the backend is asked why before the session
 * reconnects (its container still runs) or ends. */
enum { SB_CREATING, SB_STARTING, SB_ATTACHING, SB_HANDSHAKE, SB_READY, SB_LOST, SB_CLOSED };

/* Rounds (successful Docker probes, recovery.c) in which a container whose create failed is
 * looked for again when it is not there: the engine may carry a create out after its deadline. */
#define REMOVE_MISSING_TRIES 3

struct sandbox {
    rb_core *c;
    session *s;           /* NULL once closed */
    char *container_id;
    backend_attach *att;
    sandbox_ready_cb ready_cb;
    int state;
    int inflight;         /* backend calls whose callbacks still hold this sandbox */
    int opening;          /* attach started, on_open not yet reported */
    runner_lines lines;   /* stdout cut into lines (partial line, skipping an over-long one) */
    rb_buf errline;       /* partial stderr line (runner diagnostics, logged) */
    char *name;           /* the container name asked for, while its create is in flight */
    execution *ex;        /* the execution the runner is working on */
    char ping_id[RB_ID_LEN];
    char stale_id[RB_ID_LEN]; /* a cell left running by a previous runboxd, being interrupted */
    uv_timer_t *timer;    /* handshake deadline */
    /* Bytes from the sandbox are untrusted (privilege separation keeps user code out of the
     * runner's channel, but the runner shares its container): they are bounded per line
     * (RB_RUNNER_LINE_MAX), per execution and per second, and what is dropped is logged at a
     * limited rate. */
    int64_t window_start; /* the current one-second window of the rate limit (mono ms) */
    size_t window_bytes;  /* bytes read in it */
    int paused;           /* reading is stopped until the window ends */
    uv_timer_t *resume;   /* ends the pause */
    size_t ex_bytes;      /* protocol bytes received for the running execution */
    int64_t warned_at;    /* mono ms of the last warning logged, 0 = never */
    unsigned suppressed;  /* warnings not logged since */
    int awaiting_warm;    /* a pool entry whose runner answered while still importing the preload */
    sandbox_pool_cb pool_cb; /* owner while a warm pool entry (s == NULL); NULL once claimed */
    void *pool_data;
    char *lost;           /* SB_LOST: how the stream ended */
};

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

static void finish_ready(sandbox *sb, rb_err err, const char *msg)
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

static rb_err send_line(sandbox *sb, json_t *msg, char *err)
{
    char *text = json_dumps(msg, JSON_COMPACT | JSON_ENSURE_ASCII);
    if (text == NULL)
        return rb_fail(RB_EINTERNAL, err, "cannot encode a runner request");
    size_t n = strlen(text);
    text[n] = '\n'; /* replace the NUL: json_dumps output is NUL-terminated, we send n+1 bytes */
    rb_err e = sb->att ? backend_attach_write(sb->c->be, sb->att, text, n + 1, err)
                       : rb_fail(RB_ECONFLICT, err, "the sandbox is not connected");
    free(text);
    return e;
}

/* ---- runner events ------------------------------------------------------------------- */

static void handle_event(sandbox *sb, const runner_event *ev)
{
    const char *id = ev->id;
    if (ev->type == RUNNER_EV_NONE)
        return;
    if (ev->type == RUNNER_EV_PONG) {
        if (sb->state != SB_HANDSHAKE || id == NULL || strcmp(id, sb->ping_id) != 0)
            return;
        const char *busy = ev->busy;
        if (busy != NULL && strlen(busy) < sizeof(sb->stale_id)) {
            /* A cell from before a runboxd restart is still running: its result has nowhere
             * to go (the store marked it failed). Interrupt it and become ready at its done. */
            char msg[RB_ERR_LEN];
            snprintf(sb->stale_id, sizeof(sb->stale_id), "%s", busy);
            json_t *req = json_pack("{s:s, s:s}", "op", "interrupt", "id", busy);
            if (send_line(sb, req, msg) != RB_OK)
                rb_warn("container %.12s: cannot interrupt a stale cell: %s", sb->container_id, msg);
            json_decref(req);
            return;
        }
        if (ev->warming && sb->s == NULL && sb->pool_cb != NULL) {
            /* A warm pool entry is ready once its first interpreter has imported the preload
             * (--preload): the session that claims it pays nothing for the imports. */
            sb->awaiting_warm = 1;
            return;
        }
        finish_ready(sb, RB_OK, NULL);
        return;
    }
    if (ev->type == RUNNER_EV_WARM) {
        if (sb->state == SB_HANDSHAKE && sb->awaiting_warm) {
            sb->awaiting_warm = 0;
            finish_ready(sb, RB_OK, NULL);
        }
        return;
    }
    if (sb->state == SB_HANDSHAKE && sb->stale_id[0] != '\0') {
        if (ev->type == RUNNER_EV_DONE && id != NULL && strcmp(id, sb->stale_id) == 0) {
            sb->stale_id[0] = '\0';
            finish_ready(sb, RB_OK, NULL);
        }
        return;
    }
    if (ev->type == RUNNER_EV_READY)
        return;
    if (ev->type == RUNNER_EV_ERROR_REPLY) {
        rb_warn("container %.12s: runner: %s", sb->container_id, ev->message ? ev->message : "(no message)");
        return;
    }
    execution *ex = sb->ex;
    if (ex == NULL || id == NULL || strcmp(id, ex->id) != 0)
        return; /* late output of an execution already given up on */
    if (ev->type == RUNNER_EV_DONE) {
        sb->ex = NULL;
        ex->dropped += ev->dropped;
        json_decref(ex->files_written);
        ex->files_written = files_written_from_runner(ev->files_written);
        execution_finish(ex, ev->status, ev->reset_reason, ev->reset);
        return;
    }
    execution_add_event(ex, ev->json);
}

/* Logs a warning about what the sandbox sent, at most once per RUNNER_WARN_EVERY_MS per sandbox
 * (a flood of bad lines must not become a flood of log lines); the next one logged says how
 * many were left out. */
static void sb_warn(sandbox *sb, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void sb_warn(sandbox *sb, const char *fmt, ...)
{
    int64_t now = rb_mono_ms();
    if (sb->warned_at != 0 && now - sb->warned_at < RUNNER_WARN_EVERY_MS) {
        sb->suppressed++;
        return;
    }
    char text[RB_ERR_LEN];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof(text), fmt, ap);
    va_end(ap);
    if (sb->suppressed > 0)
        rb_warn("container %.12s: %s (and %u similar warnings in the last %d s)", sb->container_id, text,
                sb->suppressed, RUNNER_WARN_EVERY_MS / 1000);
    else
        rb_warn("container %.12s: %s", sb->container_id, text);
    sb->warned_at = now;
    sb->suppressed = 0;
}

/* The protocol bytes an execution may bring before runboxd stops parsing its large lines: all
 * its output kept (twice the output limit, as the runner may send head and tail), its figures,
 * one result and two errors at their cap, and slack for the small events. */
static size_t execution_budget(const sandbox *sb)
{
    return 2 * sb->c->cfg->output_limit + RB_DISPLAY_BYTES_MAX + 3 * (4u << 20) + (1u << 20);
}

static void handle_line(sandbox *sb, const char *p, size_t n)
{
    if (sb->ex != NULL) {
        sb->ex_bytes += n;
        if (sb->ex_bytes > execution_budget(sb) && n > RUNNER_SMALL_LINE) {
            /* Past what an honest runner sends for one cell: large lines are dropped unparsed
             * (small ones still are read, so the cell's done is never missed). */
            sb->ex->truncated = 1;
            sb->ex->dropped += (int64_t)n;
            sb_warn(sb, "execution %s: the sandbox sent more than %zu bytes; dropping its large lines", sb->ex->id,
                    execution_budget(sb));
            return;
        }
    }
    runner_event ev;
    char err[RB_ERR_LEN];
    if (runner_event_parse(p, n, &ev, err) != RB_OK) {
        sb_warn(sb, "dropped a malformed runner line (%zu bytes): %s", n, err);
        return;
    }
    handle_event(sb, &ev);
    runner_event_dispose(&ev);
}

static void resume_cb(uv_timer_t *t)
{
    sandbox *sb = t->data;
    sb->paused = 0;
    sb->window_start = rb_mono_ms();
    sb->window_bytes = 0;
    if (sb->att != NULL && sb->state != SB_CLOSED)
        backend_attach_pause(sb->c->be, sb->att, 0);
}

/* Counts len bytes against this second's budget; past it, stops reading until the second is
 * over, so a sandbox that writes faster than RUNNER_BYTES_PER_S blocks in its own writes. */
static void throttle(sandbox *sb, size_t len)
{
    int64_t now = rb_mono_ms();
    if (now - sb->window_start >= 1000) {
        sb->window_start = now;
        sb->window_bytes = 0;
    }
    sb->window_bytes += len;
    if (sb->window_bytes <= RUNNER_BYTES_PER_S || sb->paused || sb->att == NULL)
        return;
    if (sb->resume == NULL) {
        sb->resume = xmalloc(sizeof(*sb->resume));
        uv_timer_init(sb->c->loop, sb->resume);
        sb->resume->data = sb;
    }
    sb->paused = 1;
    backend_attach_pause(sb->c->be, sb->att, 1);
    int64_t left = 1000 - (now - sb->window_start);
    uv_timer_start(sb->resume, resume_cb, (uint64_t)(left > 0 ? left : 1), 0);
    sb_warn(sb, "the sandbox writes more than %u MiB/s to runboxd; reading is slowed down", RUNNER_BYTES_PER_S >> 20);
}

static void on_stdout(sandbox *sb, const char *buf, size_t len)
{
    throttle(sb, len);
    /* handle_line may close the sandbox (a finished execution can end the session) */
    while (sb->state != SB_CLOSED) {
        rb_buf line;
        size_t dropped = 0;
        runner_lines_status st = runner_lines_next(&sb->lines, &buf, &len, &line, &dropped);
        if (st == RUNNER_LINES_MORE)
            break;
        if (st == RUNNER_LINES_TOOLONG) {
            sb_warn(sb, "a runner line exceeded %u bytes; dropped", RB_RUNNER_LINE_MAX);
            if (sb->ex != NULL) {
                sb->ex->truncated = 1;
                sb->ex->dropped += (int64_t)dropped;
            }
            continue;
        }
        handle_line(sb, line.data ? line.data : "", line.len);
        rb_buf_dispose(&line);
    }
}

static void on_stderr(sandbox *sb, const char *buf, size_t len)
{
    for (size_t i = 0; i < len; i++) {
        if (buf[i] == '\n' || sb->errline.len >= 4096) {
            rb_debug("container %.12s: runner: %s", sb->container_id, sb->errline.data ? sb->errline.data : "");
            rb_buf_reset(&sb->errline);
            if (buf[i] == '\n')
                continue;
        }
        rb_buf_append(&sb->errline, &buf[i], 1);
    }
}

/* ---- attach ------------------------------------------------------------------------- */

static void handshake_timeout_cb(uv_timer_t *t)
{
    sandbox *sb = t->data;
    char msg[RB_ERR_LEN];
    if (sb->awaiting_warm) {
        /* The runner answers; its preload is only slow (a busy host): usable all the same. */
        rb_warn("container %.12s: the preload took more than %d s; the warm sandbox is used without waiting",
                sb->container_id, RB_HANDSHAKE_MS / 1000);
        sb->awaiting_warm = 0;
        finish_ready(sb, RB_OK, NULL);
        return;
    }
    snprintf(msg, sizeof(msg),
             "the sandbox container started but its runner did not answer within %d s; check that image '%s' was "
             "built by docker/build-images",
             RB_HANDSHAKE_MS / 1000, sb->c->cfg->image);
    finish_ready(sb, RB_ETIMEDOUT, msg);
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
        finish_ready(sb, err, msg);
        return;
    }
    sb->state = SB_HANDSHAKE;
    rb_random_id("p_", sb->ping_id, sizeof(sb->ping_id));
    json_t *ping = json_pack("{s:s, s:s}", "op", "ping", "id", sb->ping_id);
    err = send_line(sb, ping, msg);
    json_decref(ping);
    if (err != RB_OK) {
        finish_ready(sb, err, msg);
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
        on_stdout(sb, buf, len);
    else
        on_stderr(sb, buf, len);
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
        finish_ready(sb, RB_EIO, msg);
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

static void started_cb(void *data, rb_err err, const char *errmsg)
{
    sandbox *sb = data;
    char msg[RB_ERR_LEN];
    sb->inflight--;
    if (sb->state == SB_CLOSED) {
        release(sb);
        return;
    }
    if (err != RB_OK) {
        snprintf(msg, sizeof(msg), "cannot start the sandbox container: %s", errmsg);
        finish_ready(sb, err, msg);
        return;
    }
    if (start_attach(sb, msg) != RB_OK)
        finish_ready(sb, RB_EUNAVAILABLE, msg);
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
        finish_ready(sb, err == RB_ENOTFOUND ? RB_EUNAVAILABLE : err, msg);
        return;
    }
    session *s = sb->s;
    if (s != NULL) {
        free(s->container_id);
        s->container_id = xstrdup(id);
        session_persist(s); /* so a crash from here on finds the container by its session */
    }
    sb->state = SB_STARTING;
    if (backend_start(sb->c->be, id, started_cb, sb, msg) != RB_OK) {
        finish_ready(sb, RB_EUNAVAILABLE, msg);
        return;
    }
    sb->inflight++;
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
typedef struct sandbox_spec {
    backend_spec spec;
    char **env; /* owned, like each string in it */
    backend_label labels[3];
    backend_mount tmp;
    backend_ulimit ulimits[3];
} sandbox_spec;

static void sandbox_spec_init(sandbox_spec *ss, rb_core *c, const char *owner, const char *language,
                              int64_t memory_bytes, double cpus, json_t *env_vars, const session *s)
{
    static const char *const cap_drop[] = {"ALL", NULL};
    static const char *const cap_add[] = {"KILL", "SETGID", "SETUID", NULL}; /* the runner's, see above */
    static const char *const security_opt[] = {"no-new-privileges", NULL};
    static const backend_label volume_labels[] = {{"runbox.managed", "1"}};
    const core_settings *cfg = c->cfg;
    int pids = s ? s->pids_limit : cfg->pids_limit;
    int64_t ws = s ? s->workspace_bytes : (int64_t)cfg->workspace_size;
    int64_t tmp = s ? s->tmp_bytes : (int64_t)cfg->tmp_size;
    int network = s ? s->network : 0;
    size_t n = 0;
    ss->env = xcalloc(9 + json_object_size(env_vars), sizeof(*ss->env));
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
    /* packages installed for the session (deps.c), also for Python subprocesses of user code */
    ss->env[n++] = xstrdup("PYTHONPATH=/workspace/.runbox/site-packages");
    /* and npm's (deps_npm.c), which `require` looks in before the image's Node modules */
    ss->env[n++] = xstrdup("NODE_PATH=/workspace/.runbox/node_modules");
    ss->env[n++] = xstrdup("RUNBOX_SANDBOX=1"); /* the runner may clean up stray processes */
    ss->env[n++] = xasprintf("RUNBOX_MEMORY_MB=%lld", (long long)(memory_bytes / (1024 * 1024)));
    /* HOME, MPLBACKEND, MPLCONFIGDIR and the rest come from the image (docker/build-images). */
    const char *k;
    json_t *v;
    json_object_foreach(env_vars, k, v)
        ss->env[n++] = xasprintf("%s=%s", k, json_string_value(v));

    ss->labels[0] = (backend_label){"runbox.session", owner};
    ss->labels[1] = (backend_label){"runbox.instance", c->instance};
    ss->labels[2] = (backend_label){"runbox.managed", "1"};
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
        .workspace_labels = volume_labels,
        .n_workspace_labels = 1,
        .ulimits = ss->ulimits,
        .n_ulimits = 3,
        .cap_drop = cap_drop,
        .cap_add = cap_add,
        .security_opt = security_opt,
        .init = 1,
        .network = network ? cfg->egress_network : NULL,
        .log_driver = "none",
    };
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
    sandbox *sb = sandbox_alloc(s->core, s, cb);
    sandbox_spec ss;
    sandbox_spec_init(&ss, s->core, s->id, s->language, s->memory_bytes, s->cpus,
                      json_object_get(s->options, "environment_variables"), s);
    char name[64];
    snprintf(name, sizeof(name), "runbox-%s", s->id);
    rb_err e = create_container(sb, name, &ss, err);
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

rb_err sandbox_create_pooled(rb_core *c, const char *language, sandbox_pool_cb cb, void *data, sandbox **out,
                             char *err)
{
    sandbox *sb = sandbox_alloc(c, NULL, NULL);
    sb->pool_cb = cb;
    sb->pool_data = data;
    sandbox_spec ss;
    sandbox_spec_init(&ss, c, "pool", language, core_default_memory(c), c->cfg->cpus, NULL, NULL);
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
    json_t *ping = json_pack("{s:s, s:s}", "op", "ping", "id", sb->ping_id);
    rb_err e = send_line(sb, ping, msg);
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

rb_err sandbox_execute(sandbox *sb, execution *ex, char *err)
{
    if (sb->state != SB_READY)
        return rb_fail(RB_ECONFLICT, err, "the sandbox is not ready");
    json_t *req = json_pack("{s:s, s:s, s:s, s:f, s:I}", "op", "execute", "id", ex->id, "code", ex->code, "timeout",
                            ex->timeout, "max_output", (json_int_t)sb->c->cfg->output_limit);
    if (ex->policy_rules != NULL) /* the runner checks the cell first (docker/runner/runbox_policy.py) */
        json_object_set_new(req, "policy", json_pack("{s:O}", "rules", ex->policy_rules));
    rb_err e = send_line(sb, req, err);
    json_decref(req);
    if (e == RB_OK) {
        sb->ex = ex;
        sb->ex_bytes = 0;
    }
    return e;
}

void sandbox_interrupt(sandbox *sb, execution *ex)
{
    if (sb->ex != ex)
        return;
    json_t *req = json_pack("{s:s, s:s}", "op", "interrupt", "id", ex->id);
    char err[RB_ERR_LEN];
    if (send_line(sb, req, err) != RB_OK)
        rb_warn("execution %s: could not send the interrupt: %s", ex->id, err);
    json_decref(req);
}

void sandbox_close(sandbox *sb, int remove)
{
    if (sb == NULL || sb->state == SB_CLOSED)
        return;
    sb->state = SB_CLOSED;
    sb->s = NULL;
    sb->ex = NULL;
    sb->ready_cb = NULL;
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

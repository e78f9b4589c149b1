/*
 * sandbox_runner.c: the runner protocol spoken over a sandbox's attach stream
 * (docker/runner/PROTOCOL.md): the requests (execute, interrupt, and the lines sandbox.c sends
 * for its handshake) and turning the runner's JSON lines into handshake answers and execution
 * events. Bytes from the container are untrusted: lines are bounded, per execution and per
 * second as well, malformed ones are dropped, and warnings about them are rate-limited (the
 * pure part, lines and events, is core/runner_frames.c). Not here: the container and its
 * stream (create, attach, loss, reconnect, close), which are sandbox.c's; this file only writes
 * requests and reads what arrives.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/sandbox_private.h"

rb_err sandbox__send_line(sandbox *sb, json_t *msg, char *err)
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

static void handle_event(sandbox *sb, const runner_event *ev, size_t line_bytes)
{
    const char *id = ev->id;
    if (ev->type == RUNNER_EV_NONE)
        return;
    if (ev->type == RUNNER_EV_PONG) {
        if (sb->state == SB_READY && id != NULL && sb->probe_id[0] != '\0' && strcmp(id, sb->probe_id) == 0) {
            sb->probe_id[0] = '\0';
            if (sb->s != NULL)
                session_backstop_pong(sb->s);
            return;
        }
        if (sb->state != SB_HANDSHAKE || id == NULL || strcmp(id, sb->ping_id) != 0)
            return;
        const char *busy = ev->busy;
        if (busy != NULL && strlen(busy) < sizeof(sb->stale_id)) {
            /* A cell from before a runboxd restart is still running: its result has nowhere
             * to go (the store marked it failed). Interrupt it and become ready at its done. */
            char msg[RB_ERR_LEN];
            snprintf(sb->stale_id, sizeof(sb->stale_id), "%s", busy);
            json_t *req = json_pack("{s:s, s:s}", "op", "interrupt", "id", busy);
            if (sandbox__send_line(sb, req, msg) != RB_OK)
                rb_warn("container %.12s: cannot interrupt a stale cell: %s", sb->container_id, msg);
            json_decref(req);
            return;
        }
        if (ev->warming && sb->s == NULL && sb->pool_cb != NULL) {
            /* A warm pool entry is ready once its first interpreter has imported the preload
             * (--preload): the session that claims it pays nothing for the imports. */
            sandbox__await_warm(sb);
            return;
        }
        sandbox__finish_ready(sb, RB_OK, NULL);
        return;
    }
    if (ev->type == RUNNER_EV_WARM) {
        if (sb->state == SB_HANDSHAKE && sb->awaiting_warm) {
            sb->awaiting_warm = 0;
            sandbox__finish_ready(sb, RB_OK, NULL);
        }
        return;
    }
    if (sb->state == SB_HANDSHAKE && sb->stale_id[0] != '\0') {
        if (ev->type == RUNNER_EV_DONE && id != NULL && strcmp(id, sb->stale_id) == 0) {
            sb->stale_id[0] = '\0';
            sandbox__finish_ready(sb, RB_OK, NULL);
        }
        return;
    }
    if (ev->type == RUNNER_EV_READY)
        return;
    if (ev->type_name != NULL && strcmp(ev->type_name, "answer") == 0) { /* not a cell's: core/kernel_ask.c */
        kernel_ask__answered(sb->c, id, json_object_get(ev->json, "content"), line_bytes);
        return;
    }
    if (ev->type == RUNNER_EV_ERROR_REPLY && id != NULL && strncmp(id, "k_", 2) == 0) {
        /* a runner older than questions (an image built before them): the question is refused */
        kernel_ask__answered(sb->c, id, NULL, 0);
        return;
    }
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
    handle_event(sb, &ev, n);
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
        sb->errlog_lines = 0;
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

void sandbox__on_stdout(sandbox *sb, const char *buf, size_t len)
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

/* One stderr line (at most 4 KiB of one) at debug level, at most RUNNER_ERR_LINES_PER_S in
 * throttle's one-second window; the first one logged after some were left out says how many. */
static void log_stderr_line(sandbox *sb)
{
    if (sb->errlog_lines >= RUNNER_ERR_LINES_PER_S) {
        sb->errlog_skipped++;
        return;
    }
    sb->errlog_lines++;
    const char *text = sb->errline.data ? sb->errline.data : "";
    if (sb->errlog_skipped > 0)
        rb_debug("container %.12s: runner: %s (after %u lines not logged)", sb->container_id, text, sb->errlog_skipped);
    else
        rb_debug("container %.12s: runner: %s", sb->container_id, text);
    sb->errlog_skipped = 0;
}

/* The sandbox's stderr: the runner's diagnostics. Untrusted like stdout: its bytes count against
 * the same per-second budget (a hostile runner, or under gVisor a write to /proc/1/fd/1, which
 * reaches this stream there, must not make runboxd read as fast as it can write), and its lines
 * are cut at 4 KiB and logged at a limited rate. */
void sandbox__on_stderr(sandbox *sb, const char *buf, size_t len)
{
    throttle(sb, len);
    for (size_t i = 0; i < len; i++) {
        if (buf[i] == '\n' || sb->errline.len >= 4096) {
            log_stderr_line(sb);
            rb_buf_reset(&sb->errline);
            if (buf[i] == '\n')
                continue;
        }
        rb_buf_append(&sb->errline, &buf[i], 1);
    }
}

/* ---- requests ----------------------------------------------------------------------- */

rb_err sandbox_execute(sandbox *sb, execution *ex, char *err)
{
    if (sb->state != SB_READY)
        return rb_fail(RB_ECONFLICT, err, "the sandbox is not ready");
    json_t *req = json_pack("{s:s, s:s, s:s, s:f, s:I}", "op", "execute", "id", ex->id, "code", ex->code, "timeout",
                            ex->timeout, "max_output", (json_int_t)sb->c->cfg->output_limit);
    if (ex->restart) /* no code: the runner puts a fresh interpreter in place of the context's */
        json_object_set_new(req, "restart", json_true());
    if (ex->context != NULL) /* another context than the session's own interpreter (core/contexts.c) */
        json_object_set(req, "context", ex->context);
    if (ex->env != NULL)
        json_object_set(req, "env", ex->env);
    if (ex->policy_rules != NULL) /* the runner checks the cell first (docker/runner/runbox_policy.py) */
        json_object_set_new(req, "policy", json_pack("{s:O}", "rules", ex->policy_rules));
    rb_err e = sandbox__send_line(sb, req, err);
    json_decref(req);
    if (e == RB_OK) {
        sb->ex = ex;
        sb->ex_bytes = 0;
    }
    return e;
}

rb_err sandbox_probe(sandbox *sb, char *err)
{
    if (sb->state != SB_READY)
        return rb_fail(RB_ECONFLICT, err, "the sandbox is not connected");
    rb_random_id("p_", sb->probe_id, sizeof(sb->probe_id));
    json_t *ping = json_pack("{s:s, s:s}", "op", "ping", "id", sb->probe_id);
    rb_err e = sandbox__send_line(sb, ping, err);
    json_decref(ping);
    return e;
}

void sandbox_close_context(sandbox *sb, const char *id)
{
    if (sb->state != SB_READY)
        return; /* a sandbox made again starts without it */
    json_t *req = json_pack("{s:s, s:s, s:s}", "op", "close_context", "id", id, "context", id);
    char err[RB_ERR_LEN];
    if (sandbox__send_line(sb, req, err) != RB_OK)
        rb_warn("context %s: could not close it: %s", id, err);
    json_decref(req);
}

void sandbox_interrupt(sandbox *sb, execution *ex)
{
    if (sb->ex != ex)
        return;
    json_t *req = json_pack("{s:s, s:s}", "op", "interrupt", "id", ex->id);
    char err[RB_ERR_LEN];
    if (sandbox__send_line(sb, req, err) != RB_OK)
        rb_warn("execution %s: could not send the interrupt: %s", ex->id, err);
    json_decref(req);
}

rb_err sandbox_ask(sandbox *sb, json_t *line, char *err)
{
    if (sb->state != SB_READY)
        return rb_fail(RB_ECONFLICT, err, "the sandbox is not ready");
    return sandbox__send_line(sb, line, err);
}

/*
 * session_pause.c: pausing and resuming a live session, and forking one (docs/data.md).
 *
 *  - suspend: its sandbox is frozen (backend_pause: the cgroup freezer); CPU stops at once,
 *    memory stays, resume thaws it in milliseconds with every variable. After a restart of
 *    runboxd the frozen container is found again (recovery.c) and re-attached on resume.
 *  - hibernate: its sandbox is frozen, its /workspace copied into a disk volume
 *    (core/workspace/), and the sandbox removed: memory and CPU are released. Resume makes a
 *    new sandbox on the volume's engine, copies the files back, and the next execution says the
 *    interpreter was reset. The stored document keeps "pause" and "kept_volume" until the files
 *    are back, so a restart at any step loses nothing: the session is still hibernated.
 *  - fork: a new session of the same options, placed beside the source, gets a copy of its
 *    workspace (taken while the source is frozen, so of one moment); its interpreter is fresh.
 *
 * A pause or resume in flight is marked by the status ("pausing", "resuming"); its callers wait
 * for its outcome (struct pause_waiter). Pauses, resumes and fork copies asked while another is
 * in flight wait for it in the session's change queue (session_freeze.c) and then run in order.
 * Every freeze and thaw goes through core__freeze (a busy sandbox's freezer is tried again).
 * Callbacks find their session again by id: it may have ended meanwhile.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/crashpoint.h"
#include "core/internal.h"
#include "core/pool.h"

struct pause_waiter {
    core_op *op;
    struct pause_waiter *next;
};

static const char *pause_name(int p)
{
    return p == PAUSE_SUSPENDED ? "suspended" : p == PAUSE_HIBERNATED ? "hibernated" : "running";
}

/* ---- waiters --------------------------------------------------------------------------- */

static void wait_add(session *s, core_op *op)
{
    struct pause_waiter *w = xcalloc(1, sizeof(*w));
    w->op = op;
    w->next = s->waiters;
    s->waiters = w;
}

static core_op *op_new(core_cb cb, void *data)
{
    core_op *op = xcalloc(1, sizeof(*op));
    op->cb = cb;
    op->data = data;
    return op;
}

/* Answers every waiter of s: the session object with extra (borrowed) merged in, or the error. */
static void answer_all(session *s, rb_err err, const char *msg, json_t *extra)
{
    struct pause_waiter *w = s->waiters;
    s->waiters = NULL;
    while (w != NULL) {
        struct pause_waiter *next = w->next;
        if (!w->op->cancelled) {
            json_t *out = NULL;
            if (err == RB_OK) {
                out = session_to_api(s);
                if (extra != NULL)
                    json_object_update(out, extra);
            }
            w->op->cb(w->op->data, err, err == RB_OK ? NULL : msg, out);
        }
        free(w->op);
        free(w);
        w = next;
    }
    core__change_kick(s->core); /* the next pause, resume or fork copy of it may start */
}

void core__pause_session_end(session *s, const char *reason)
{
    answer_all(s, RB_ECONFLICT, reason, NULL);
    core__changes_end(s, reason);
}

/* The session of a callback: NULL if it ended meanwhile. */
static session *still(rb_core *c, const char *id)
{
    return map_get(&c->sessions, id);
}

typedef struct pause_call {
    rb_core *c;
    char id[RB_ID_LEN];
    int target;      /* PAUSE_SUSPENDED or PAUSE_HIBERNATED */
    int was;         /* the session's pause before the call */
    int64_t started; /* rb_now_ms() at the start, for the answer's "ms" */
    rb_err failed;   /* a hibernation that failed after the freeze: its error while the thaw runs */
    char *why;
} pause_call;

static pause_call *call_new(session *s, int target)
{
    pause_call *pc = xcalloc(1, sizeof(*pc));
    pc->c = s->core;
    snprintf(pc->id, sizeof(pc->id), "%s", s->id);
    pc->target = target;
    pc->was = s->pause;
    pc->started = rb_now_ms();
    return pc;
}

/* The session of a call's callback, or NULL (the call freed) when it ended meanwhile. */
static session *call_session(pause_call *pc)
{
    session *s = still(pc->c, pc->id);
    if (s == NULL)
        free(pc);
    return s;
}

/* ---- suspend and hibernate ------------------------------------------------------------- */

/* Back to how it was before a failed pause (thawed if the call froze it). */
static void pause_failed(session *s, pause_call *pc, rb_err err, const char *msg)
{
    char text[RB_ERR_LEN];
    snprintf(text, sizeof(text), "could not %s session %s: %.400s", pc->target == PAUSE_HIBERNATED ? "hibernate" : "suspend",
             s->id, msg);
    rb_warn("%s", text);
    s->status = s->pause == PAUSE_SUSPENDED ? "suspended" : "ready";
    answer_all(s, err == RB_ENOTFOUND ? RB_EUNAVAILABLE : err, text, NULL);
    if (s->pause == PAUSE_NONE)
        session_pump(s);
}

/* The thaw after a failed hibernation has answered: the callers hear the hibernation's error. A
 * failed thaw leaves it suspended (resume tries again). */
static void thawed_after_failure_cb(void *data, rb_err err, const char *msg)
{
    pause_call *pc = data;
    session *s = still(pc->c, pc->id);
    if (s != NULL) {
        if (err == RB_OK)
            s->pause = PAUSE_NONE;
        else
            rb_warn("session %s: could not thaw it after its failed hibernation: %s", s->id, msg);
        pause_failed(s, pc, pc->failed, pc->why);
    }
    free(pc->why);
    free(pc);
}

static void kept_cb(void *data, rb_err err, const char *msg, const char *volume, int64_t bytes)
{
    pause_call *pc = data;
    session *s = still(pc->c, pc->id);
    if (s == NULL) { /* ended meanwhile: its files go too */
        if (err == RB_OK)
            workspace_drop(pc->c, volume);
        free(pc);
        return;
    }
    if (err != RB_OK) {
        if (pc->was == PAUSE_NONE && s->container_id != NULL) { /* it was running: thawed before the answer */
            char e2[RB_ERR_LEN];
            pc->failed = err;
            pc->why = xstrdup(msg ? msg : "");
            if (core__freeze(pc->c, s->container_id, 0, thawed_after_failure_cb, pc, e2) == RB_OK)
                return;
            free(pc->why);
            rb_warn("session %s: could not thaw it after its failed hibernation: %s", s->id, e2);
        }
        pause_failed(s, pc, err, msg);
        free(pc);
        return;
    }
    rb_crash_point("hibernate:copied");
    process_session_end(s, "the session was hibernated");
    if (s->sb != NULL) {
        sandbox_close(s->sb, 1);
        s->sb = NULL;
    } else if (s->container_id != NULL) {
        removal_start(pc->c, s->container_id, 0);
    }
    free(s->container_id);
    s->container_id = NULL;
    free(s->kept_volume);
    s->kept_volume = xstrdup(volume);
    s->pause = PAUSE_HIBERNATED;
    s->paused_at = rb_now_ms();
    s->status = "hibernated";
    s->deadline = 0;
    session_persist(s);
    rb_crash_point("hibernate:stored");
    rb_info("session %s hibernated: %lld bytes of files kept in %s", s->id, (long long)bytes, volume);
    json_t *extra = json_pack("{s:{s:s, s:s, s:s, s:I, s:I}}", "pause", "mode", "hibernate", "memory", "released",
                              "files", "kept", "workspace_bytes", (json_int_t)bytes, "ms",
                              (json_int_t)(rb_now_ms() - pc->started));
    answer_all(s, RB_OK, NULL, extra);
    json_decref(extra);
    free(pc);
}

static void frozen_cb(void *data, rb_err err, const char *msg)
{
    pause_call *pc = data;
    session *s = call_session(pc);
    char e2[RB_ERR_LEN];
    if (s == NULL)
        return;
    if (err != RB_OK) {
        pause_failed(s, pc, err, msg);
        free(pc);
        return;
    }
    s->pause = PAUSE_SUSPENDED; /* frozen from here on, whatever follows */
    if (pc->target == PAUSE_HIBERNATED) {
        rb_crash_point("hibernate:frozen");
        if (workspace_keep(pc->c, s->id, s->container_id, kept_cb, pc, e2) != RB_OK)
            kept_cb(pc, RB_ECANCELED, e2, NULL, -1);
        return;
    }
    s->paused_at = rb_now_ms();
    s->status = "suspended";
    s->deadline = 0; /* a paused session waits for its resume, not a deadline (E2B's timeout) */
    session_persist(s);
    rb_info("session %s suspended", s->id);
    json_t *extra = json_pack("{s:{s:s, s:s, s:s, s:I}}", "pause", "mode", "suspend", "memory", "kept", "files",
                              "kept", "ms", (json_int_t)(rb_now_ms() - pc->started));
    answer_all(s, RB_OK, NULL, extra);
    json_decref(extra);
    free(pc);
}

/* Starts pausing s (checked by the caller) to target; the outcome reaches s's waiters. */
static rb_err pause_start(session *s, int target, char *err)
{
    pause_call *pc = call_new(s, target);
    s->pause_was = s->pause;
    s->status = "pausing";
    if (s->pause == PAUSE_SUSPENDED) { /* already frozen: only the files to keep */
        frozen_cb(pc, RB_OK, NULL);
        return RB_OK;
    }
    rb_err e = core__freeze(s->core, s->container_id, 1, frozen_cb, pc, err);
    if (e != RB_OK) {
        s->status = "ready";
        free(pc);
    }
    return e;
}

/* Why s cannot be paused now, or NULL. */
static const char *not_pausable(const session *s, int target)
{
    if (s->pause == PAUSE_HIBERNATED)
        return "it is hibernated already";
    if (s->pause == PAUSE_SUSPENDED && target == PAUSE_SUSPENDED)
        return NULL; /* nothing to do */
    if (strcmp(s->status, "pausing") == 0 || strcmp(s->status, "resuming") == 0)
        return "a pause or resume of it is in progress; retry when it has finished";
    if (s->forking > 0)
        return "a fork is copying its workspace; retry when it has finished";
    if (s->running != NULL || s->queue_head != NULL)
        return "an execution is running or queued in it; wait for it to finish or cancel it, then pause";
    if (s->deps_op != NULL)
        return "its dependencies are being installed; pause it once they are";
    if (s->container_id == NULL || (s->pause == PAUSE_NONE && strcmp(s->status, "ready") != 0))
        return "it is not ready (still starting)";
    if (s->engine_down != NULL)
        return "its Docker engine does not answer";
    return NULL;
}

/* Pauses s to target now for op's caller; when it is so already, op is answered as it is and
 * freed (*answered set). An error (op not answered, not freed) when it cannot be paused. */
static rb_err pause_now(session *s, int target, core_op *op, int *answered, char *err)
{
    const char *why = not_pausable(s, target);
    if (why != NULL)
        return rb_fail(RB_ECONFLICT, err, "session %s cannot be %s: %s", s->id,
                       target == PAUSE_HIBERNATED ? "hibernated" : "suspended", why);
    if (s->pause == target) { /* suspended already: answered as it is */
        wait_add(s, op);
        answer_all(s, RB_OK, NULL, NULL);
        *answered = 1;
        return RB_OK;
    }
    rb_err e = pause_start(s, target, err);
    if (e == RB_OK)
        wait_add(s, op);
    return e;
}

static rb_err resume_now(session *s, core_op *op, int *answered, char *err);

/* A pause (target) or resume (PAUSE_NONE) waiting in the session's change queue. */
typedef struct queued_call {
    core_op *op;
    int target;
} queued_call;

static void queued_start(session *s, void *data)
{
    queued_call *q = data;
    char err[RB_ERR_LEN];
    if (!q->op->cancelled) {
        int answered = 0;
        rb_err e = q->target == PAUSE_NONE ? resume_now(s, q->op, &answered, err)
                                           : pause_now(s, q->target, q->op, &answered, err);
        if (e == RB_OK) {
            free(q);
            return;
        }
        q->op->cb(q->op->data, e, err, NULL);
    }
    free(q->op);
    free(q);
}

static void queued_drop(void *data, const char *reason)
{
    queued_call *q = data;
    if (!q->op->cancelled)
        q->op->cb(q->op->data, RB_ECONFLICT, reason, NULL);
    free(q->op);
    free(q);
}

/* 1 when op's pause or resume waits behind the change in flight (answered once it has run). */
static int queue_change(session *s, core_op *op, int target)
{
    queued_call *q = xcalloc(1, sizeof(*q));
    q->op = op;
    q->target = target;
    if (core__change_add(s, queued_start, queued_drop, q))
        return 1;
    free(q);
    return 0;
}

rb_err core_session_pause(rb_core *c, const core_caller *who, const char *session_id, json_t *body, core_cb cb,
                          void *data, core_op **handle, char *err)
{
    static const char *const keys[] = {"mode", NULL};
    session *s = core__live_session(c, who, session_id, err);
    if (s == NULL)
        return RB_ENOTFOUND;
    rb_err e;
    if (body != NULL && !json_is_null(body) && !json_is_object(body))
        return rb_fail(RB_EINVAL, err, "the body must be {\"mode\": \"suspend\" | \"hibernate\"} or empty");
    if (json_is_object(body) && (e = core__check_keys(body, "the request", keys, err)) != RB_OK)
        return e;
    json_t *m = json_is_object(body) ? json_object_get(body, "mode") : NULL;
    const char *mode = m == NULL || json_is_null(m) ? "suspend" : json_string_value(m);
    int target;
    if (mode != NULL && strcmp(mode, "suspend") == 0)
        target = PAUSE_SUSPENDED;
    else if (mode != NULL && strcmp(mode, "hibernate") == 0)
        target = PAUSE_HIBERNATED;
    else
        return rb_fail(RB_EINVAL, err,
                       "'mode' must be \"suspend\" (freeze it: memory kept, resume in milliseconds) or \"hibernate\" "
                       "(keep its files on disk and release its memory: the interpreter restarts on resume)");
    core_op *op = op_new(cb, data);
    if (!queue_change(s, op, target)) {
        int answered = 0;
        if ((e = pause_now(s, target, op, &answered, err)) != RB_OK) {
            free(op);
            return e;
        }
        if (answered)
            return RB_OK; /* op is freed: no handle */
    }
    if (handle != NULL)
        *handle = op;
    return RB_OK;
}

/* ---- resume ---------------------------------------------------------------------------- */

/* A resume that failed: the session stays as it was, its queued executions fail. */
static void resume_failed(session *s, int was, rb_err err, const char *msg)
{
    char text[RB_ERR_LEN];
    snprintf(text, sizeof(text), "could not resume session %s (it is still %s): %.400s", s->id, pause_name(was), msg);
    rb_warn("%s", text);
    s->pause = was;
    s->status = pause_name(was);
    while (s->queue_head != NULL) {
        execution *ex = s->queue_head;
        s->queue_head = ex->next;
        ex->next = NULL;
        s->queued--;
        execution_fail(ex, "error", "ResumeFailed", text, 0, NULL);
    }
    s->queue_tail = NULL;
    answer_all(s, err == RB_ENOTFOUND ? RB_EUNAVAILABLE : err, text, NULL);
}

static void resumed(session *s, pause_call *pc)
{
    int was = pc->was;
    s->pause = PAUSE_NONE;
    s->status = "ready";
    s->last_used_at = rb_now_ms();
    if (s->deadline == 0 && s->deadline_span > 0) /* its timeout runs again from now (E2B's auto-resume) */
        s->deadline = s->last_used_at + s->deadline_span;
    session_persist(s);
    rb_info("session %s resumed from %s in %lld ms", s->id, pause_name(was), (long long)(rb_now_ms() - pc->started));
    json_t *extra = json_pack("{s:{s:s, s:s, s:I}}", "resume", "from", was == PAUSE_SUSPENDED ? "suspend" : "hibernate",
                              "interpreter", was == PAUSE_SUSPENDED ? "kept" : "restarted", "ms",
                              (json_int_t)(rb_now_ms() - pc->started));
    answer_all(s, RB_OK, NULL, extra);
    json_decref(extra);
    free(pc);
    session_pump(s);
}

/* Files back in the new sandbox: the kept volume goes, the session runs. */
static void restored_cb(void *data, rb_err err, const char *msg, const char *volume, int64_t bytes)
{
    pause_call *pc = data;
    (void)volume;
    (void)bytes;
    session *s = call_session(pc);
    if (s == NULL)
        return;
    if (err != RB_OK) {
        sandbox_close(s->sb, 1);
        s->sb = NULL;
        free(s->container_id);
        s->container_id = NULL;
        resume_failed(s, PAUSE_HIBERNATED, err, msg);
        free(pc);
        return;
    }
    rb_crash_point("resume:restored");
    /* stored as running first: a restart before the kept volume is gone never finds a session
     * that needs a volume no longer there */
    rb_core *c = pc->c;
    char *kept = s->kept_volume;
    s->kept_volume = NULL;
    free(s->place_with);
    s->place_with = NULL;
    s->fresh_interpreter = 1;
    resumed(s, pc);
    workspace_drop(c, kept);
    free(kept);
}

/* The new sandbox of a hibernated session is ready: its files go back in. The ready callback has
 * no data pointer; the session's waiting call is found by id. */
static pause_call *pending_restore(session *s);

static void new_sandbox_cb(session *s, rb_err err, const char *msg)
{
    char e2[RB_ERR_LEN];
    pause_call *pc = pending_restore(s);
    if (err != RB_OK) {
        if (s->sb != NULL) {
            sandbox_close(s->sb, 1);
            s->sb = NULL;
        }
        free(s->container_id);
        s->container_id = NULL;
        resume_failed(s, PAUSE_HIBERNATED, err, msg);
        free(pc);
        return;
    }
    rb_crash_point("resume:sandbox");
    if (workspace_restore(s->core, s->kept_volume, s->container_id, s->workspace_bytes, restored_cb, pc, e2) != RB_OK)
        restored_cb(pc, RB_ECANCELED, e2, NULL, -1);
}

/* The restores waiting for their new sandbox, by session id (one per session at most). */
static pause_call *pending_restore(session *s)
{
    void **slot = core_heart_room(s->core, CORE_ROOM_PAUSE);
    rb_map *m = *slot;
    pause_call *pc = m != NULL ? map_get(m, s->id) : NULL;
    if (pc != NULL)
        map_del(m, s->id);
    return pc != NULL ? pc : call_new(s, PAUSE_NONE);
}

static void remember_restore(session *s, pause_call *pc)
{
    void **slot = core_heart_room(s->core, CORE_ROOM_PAUSE);
    if (*slot == NULL) {
        rb_map *m = xcalloc(1, sizeof(*m));
        map_init(m);
        *slot = m;
    }
    map_put(*slot, s->id, pc);
}

void core__pause_dispose(rb_core *c)
{
    void **slot = core_heart_room(c, CORE_ROOM_PAUSE);
    rb_map *m = *slot;
    if (m == NULL)
        return;
    size_t pos = 0;
    pause_call *pc;
    while ((pc = map_next(m, &pos)) != NULL)
        free(pc);
    map_dispose(m);
    free(m);
    *slot = NULL;
}

static void reattached_cb(session *s, rb_err err, const char *msg)
{
    pause_call *pc = pending_restore(s);
    if (err != RB_OK) {
        char reason[RB_ERR_LEN];
        snprintf(reason, sizeof(reason), "could not reconnect to its sandbox on resume: %.400s", msg);
        free(pc);
        session_end(s, "dead", reason);
        return;
    }
    resumed(s, pc);
}

static void thawed_cb(void *data, rb_err err, const char *msg)
{
    pause_call *pc = data;
    session *s = call_session(pc);
    char e2[RB_ERR_LEN];
    if (s == NULL)
        return;
    if (err == RB_ENOTFOUND) {
        free(pc);
        session_end(s, "dead", "its suspended sandbox no longer exists (removed outside runboxd)");
        return;
    }
    if (err != RB_OK) {
        resume_failed(s, PAUSE_SUSPENDED, err, msg);
        free(pc);
        return;
    }
    if (s->sb != NULL) { /* its stream stayed open while frozen */
        resumed(s, pc);
        return;
    }
    /* frozen across a restart of runboxd: attach again now that it can be */
    remember_restore(s, pc);
    if (sandbox_reattach(s, reattached_cb, e2) != RB_OK) {
        pending_restore(s);
        s->pause = PAUSE_NONE;
        resume_failed(s, PAUSE_SUSPENDED, RB_EIO, e2);
        free(pc);
    }
}

/* Starts resuming s (suspended or hibernated, nothing in flight). */
static rb_err resume_start(session *s, char *err)
{
    rb_core *c = s->core;
    pause_call *pc = call_new(s, PAUSE_NONE);
    rb_err e;
    s->status = "resuming";
    if (s->pause == PAUSE_SUSPENDED) {
        e = core__freeze(c, s->container_id, 0, thawed_cb, pc, err);
    } else {
        /* it takes a sandbox again: within --max-sessions, like a create */
        int live = 0;
        size_t pos = 0;
        session *o;
        while ((o = map_next(&c->sessions, &pos)) != NULL)
            live += o->pause != PAUSE_HIBERNATED;
        if (live >= c->cfg->max_sessions) {
            free(pc);
            s->status = "hibernated";
            return rb_fail(RB_EBUSY, err,
                           "the server already runs %d sessions (its --max-sessions); session %s stays hibernated: "
                           "delete sessions you no longer need, then resume it",
                           c->cfg->max_sessions, s->id);
        }
        /* a new sandbox where its files are; a warm one when there is only one engine */
        char *pinned = backend_pin(c->be, s->kept_volume, "x");
        int one_engine = strcmp(pinned, "x") == 0;
        free(pinned);
        free(s->place_with);
        s->place_with = xstrdup(s->kept_volume);
        s->incarnation++;
        remember_restore(s, pc);
        if (one_engine && pool_claim(c->pool, s, new_sandbox_cb))
            return RB_OK;
        e = sandbox_create(s, new_sandbox_cb, err);
        if (e != RB_OK)
            pending_restore(s);
    }
    if (e != RB_OK) {
        s->status = pause_name(s->pause);
        free(pc);
    }
    return e;
}

rb_err core_session_resume(rb_core *c, const core_caller *who, const char *session_id, json_t *body, core_cb cb,
                           void *data, core_op **handle, char *err)
{
    session *s = core__live_session(c, who, session_id, err);
    if (s == NULL)
        return RB_ENOTFOUND;
    if (body != NULL && !json_is_null(body) && !(json_is_object(body) && json_object_size(body) == 0))
        return rb_fail(RB_EINVAL, err, "resume takes no options: send an empty body or {}");
    core_op *op = op_new(cb, data);
    if (!queue_change(s, op, PAUSE_NONE)) {
        int answered = 0;
        rb_err e = resume_now(s, op, &answered, err);
        if (e != RB_OK) {
            free(op);
            return e;
        }
        if (answered)
            return RB_OK; /* op is freed: no handle */
    }
    if (handle != NULL)
        *handle = op;
    return RB_OK;
}

/* Resumes s now for op's caller; when it runs already, op is answered as it is and freed
 * (*answered set). */
static rb_err resume_now(session *s, core_op *op, int *answered, char *err)
{
    if (s->pause == PAUSE_NONE) {
        wait_add(s, op);
        answer_all(s, RB_OK, NULL, NULL); /* running already */
        *answered = 1;
        return RB_OK;
    }
    rb_err e = resume_start(s, err);
    if (e == RB_OK)
        wait_add(s, op);
    return e;
}

void core__resume_for_queue(session *s)
{
    char e2[RB_ERR_LEN];
    /* a change in flight or waiting goes first; the queue resumes it after them (session_freeze.c) */
    if (s->pause == PAUSE_NONE || core__change_busy(s) || s->changes != NULL)
        return;
    if (resume_start(s, e2) != RB_OK)
        resume_failed(s, s->pause, RB_EIO, e2);
}

/* ---- idle ------------------------------------------------------------------------------ */

int core__pause_idle(session *s, int64_t now)
{
    const core_settings *cfg = s->core->cfg;
    char e2[RB_ERR_LEN];
    int64_t idle_ms = (int64_t)cfg->idle_timeout * 1000;
    if (s->pause == PAUSE_HIBERNATED) {
        if (strcmp(s->status, "hibernated") == 0 && cfg->hibernate_retention > 0 && now - s->paused_at >= (int64_t)cfg->hibernate_retention * 1000) {
            char reason[160];
            snprintf(reason, sizeof(reason), "hibernated for %d s (the --hibernate-retention); its files were removed",
                     cfg->hibernate_retention);
            session_end(s, "ended", reason);
        }
        return 1;
    }
    if (idle_ms <= 0)
        return 1;
    if (s->pause == PAUSE_SUSPENDED) { /* idle as long again while frozen: its memory goes too, not its files */
        if (strcmp(s->status, "suspended") == 0 && now - s->paused_at >= idle_ms &&
            not_pausable(s, PAUSE_HIBERNATED) == NULL &&
            pause_start(s, PAUSE_HIBERNATED, e2) != RB_OK)
            rb_warn("session %s: could not hibernate it after its idle time: %s", s->id, e2);
        return 1;
    }
    if (strcmp(cfg->idle_action, "end") == 0)
        return 0;
    int target = strcmp(cfg->idle_action, "hibernate") == 0 ? PAUSE_HIBERNATED : PAUSE_SUSPENDED;
    if (not_pausable(s, target) == NULL && pause_start(s, target, e2) != RB_OK)
        rb_warn("session %s: could not %s it after its idle time: %s", s->id, pause_name(target), e2);
    return 1;
}

void core__pause_for_deadline(session *s)
{
    char e2[RB_ERR_LEN];
    int target = s->deadline_pause;
    if (s->pause == target || s->pause == PAUSE_HIBERNATED) {
        s->deadline = 0; /* paused already */
        s->dirty = 1;
        return;
    }
    if (not_pausable(s, target) != NULL)
        return; /* busy, starting or changing: the next sweep tries again */
    if (pause_start(s, target, e2) != RB_OK) {
        rb_warn("session %s: could not pause it at its deadline: %s", s->id, e2);
        return;
    }
    s->deadline = 0;
}

int core__kept_wanted(rb_core *c, const char *session_id, const char *volume)
{
    session *s = map_get(&c->sessions, session_id);
    return s != NULL && s->kept_volume != NULL && strcmp(s->kept_volume, volume) == 0;
}

/*
 * session_fork.c: POST /sessions/{id}/fork (docs/data.md). A new session with the source's
 * language and options is made beside it (the same engine), then the source's /workspace is
 * copied into it (core/workspace/): from its frozen sandbox, so the copy is of one moment (a
 * cell running in it stalls for the copy and goes on), or from its kept volume when it is
 * hibernated. The new session's interpreter starts fresh; the answer says so. If the copy fails
 * the new session ends and the caller gets the error; the source is never changed. Until its
 * copy is done the new session is stored as a pending fork: a restart of runboxd meanwhile ends
 * it (recovery.c), and the source, frozen for the copy, is thawed there.
 *
 * The freeze, copy and thaw are one change of the source in its change queue (session_freeze.c):
 * they wait for a pause, resume or other fork of it in flight, and the next one starts only once
 * the source is thawed again (a freeze racing the thaw got Docker's "already paused").
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/crashpoint.h"
#include "core/internal.h"

typedef struct fork_call {
    rb_core *c;
    core_op *op;        /* the caller's */
    core_op *create_op; /* the new session's create */
    char src[RB_ID_LEN], dst[RB_ID_LEN];
    char *src_container;/* frozen by the fork (thawed at its end), or NULL */
    json_t *answer;     /* the new session's API object */
    int64_t started;
    int copying;        /* its copy is the source's change in flight (counted in src->forking) */
    rb_err copy_err;    /* the copy's outcome, kept while the source thaws */
    char *copy_msg;
    int64_t copy_bytes;
} fork_call;

static void fork_done(fork_call *fc, rb_err err, const char *msg, json_t *extra)
{
    session *src = map_get(&fc->c->sessions, fc->src);
    if (fc->copying && src != NULL && src->forking > 0)
        src->forking--;
    if (fc->copying)
        core__change_kick(fc->c); /* the source's next pause, resume or fork may start */
    if (err != RB_OK) {
        /* not while core_free ends the sessions: the new one then stays, as every session does */
        session *dst = fc->dst[0] && !fc->c->closing ? map_get(&fc->c->sessions, fc->dst) : NULL;
        if (dst != NULL)
            session_end(dst, "dead", "its fork could not copy the workspace");
        rb_warn("fork of session %s: %s", fc->src, msg);
    }
    if (!fc->op->cancelled) {
        json_t *out = NULL;
        if (err == RB_OK) {
            out = json_incref(fc->answer);
            json_object_update(out, extra);
        }
        fc->op->cb(fc->op->data, err, err == RB_OK ? NULL : msg, out);
    }
    free(fc->op);
    json_decref(fc->answer);
    free(fc->src_container);
    free(fc->copy_msg);
    free(fc);
}

/* The copy's outcome to the caller, once the source runs again. */
static void finish(fork_call *fc)
{
    rb_err err = fc->copy_err;
    int64_t bytes = fc->copy_bytes;
    const char *msg = fc->copy_msg != NULL ? fc->copy_msg : "";
    if (err != RB_OK) {
        char text[RB_ERR_LEN];
        snprintf(text, sizeof(text), "could not fork session %s: %.400s", fc->src, msg);
        fork_done(fc, err, text, NULL);
        return;
    }
    rb_crash_point("fork:copied");
    session *dst = map_get(&fc->c->sessions, fc->dst);
    if (dst != NULL && dst->fork_pending) { /* all its files are in: it is a session like any other */
        dst->fork_pending = 0;
        free(dst->fork_pending_from);
        dst->fork_pending_from = NULL;
        session_persist(dst);
    }
    json_t *extra = json_pack("{s:{s:s, s:s, s:I, s:I}}", "fork", "from", fc->src, "interpreter", "fresh",
                              "workspace_bytes", (json_int_t)bytes, "ms", (json_int_t)(rb_now_ms() - fc->started));
    rb_info("session %s forked from %s (%lld bytes of files)", fc->dst, fc->src, (long long)bytes);
    fork_done(fc, RB_OK, NULL, extra);
    json_decref(extra);
}

static void thawed_cb(void *data, rb_err err, const char *msg)
{
    fork_call *fc = data;
    if (err != RB_OK && err != RB_ENOTFOUND && err != RB_ECANCELED)
        rb_warn("fork: could not thaw the source sandbox %.12s: %s", fc->src_container, msg);
    free(fc->src_container);
    fc->src_container = NULL;
    finish(fc);
}

static void copied_cb(void *data, rb_err err, const char *msg, const char *volume, int64_t bytes)
{
    fork_call *fc = data;
    char e2[RB_ERR_LEN];
    (void)volume;
    fc->copy_err = err;
    fc->copy_msg = err != RB_OK ? xstrdup(msg ? msg : "") : NULL;
    fc->copy_bytes = bytes;
    if (fc->src_container == NULL) {
        finish(fc);
        return;
    }
    if (core__freeze(fc->c, fc->src_container, 0, thawed_cb, fc, e2) != RB_OK)
        thawed_cb(fc, RB_EIO, e2);
}

/* The copy from the frozen source (or its kept files) into the new session's sandbox. */
static void copy_start(fork_call *fc)
{
    char e2[RB_ERR_LEN];
    session *src = map_get(&fc->c->sessions, fc->src);
    session *dst = map_get(&fc->c->sessions, fc->dst);
    rb_err e;
    if (src == NULL || dst == NULL || dst->container_id == NULL) {
        fork_done(fc, RB_ECONFLICT, src == NULL ? "the source session ended during the fork" : "the new session ended",
                  NULL);
        return;
    }
    if (src->pause == PAUSE_HIBERNATED && src->kept_volume != NULL)
        e = workspace_restore(fc->c, src->kept_volume, dst->container_id, dst->workspace_bytes, copied_cb, fc, e2);
    else if (src->container_id != NULL)
        e = workspace_copy(fc->c, src->container_id, dst->container_id, dst->workspace_bytes, copied_cb, fc, e2);
    else
        e = rb_fail(RB_ECONFLICT, e2, "the source session has no sandbox");
    if (e != RB_OK)
        copied_cb(fc, e, e2, NULL, -1);
}

static void frozen_cb(void *data, rb_err err, const char *msg)
{
    fork_call *fc = data;
    if (err != RB_OK) {
        free(fc->src_container);
        fc->src_container = NULL;
        char text[RB_ERR_LEN];
        snprintf(text, sizeof(text), "could not freeze session %s for its copy: %.400s", fc->src, msg);
        fork_done(fc, err == RB_ENOTFOUND ? RB_ECONFLICT : err, text, NULL);
        return;
    }
    rb_crash_point("fork:frozen");
    copy_start(fc);
}

/* The source's turn: frozen (unless it is paused already), then copied. */
static void copy_turn(session *src, void *data)
{
    fork_call *fc = data;
    char e2[RB_ERR_LEN];
    fc->copying = 1;
    src->forking++;
    if (src->pause != PAUSE_NONE || src->container_id == NULL) {
        copy_start(fc); /* frozen already or hibernated: nothing to freeze */
        return;
    }
    fc->src_container = xstrdup(src->container_id);
    rb_err e = core__freeze(fc->c, src->container_id, 1, frozen_cb, fc, e2);
    if (e != RB_OK)
        frozen_cb(fc, e, e2);
}

static void copy_dropped(void *data, const char *reason)
{
    fork_call *fc = data;
    char text[RB_ERR_LEN];
    snprintf(text, sizeof(text), "could not fork session %s: it ended before its copy (%.400s)", fc->src, reason);
    fork_done(fc, RB_ECONFLICT, text, NULL);
}

static void created_cb(void *data, rb_err err, const char *msg, json_t *body)
{
    fork_call *fc = data;
    fc->create_op = NULL;
    if (err != RB_OK) {
        fork_done(fc, err, msg, NULL);
        return;
    }
    fc->answer = body;
    const char *id = json_string_value(json_object_get(body, "session_id"));
    snprintf(fc->dst, sizeof(fc->dst), "%s", id ? id : "");
    session *dst = map_get(&fc->c->sessions, fc->dst);
    if (dst != NULL) { /* stored as a pending fork until its files are in */
        dst->fork_pending = 1;
        dst->fork_pending_from = xstrdup(fc->src);
        session_persist(dst);
    }
    rb_crash_point("fork:created");
    session *src = map_get(&fc->c->sessions, fc->src);
    if (src == NULL) {
        copy_start(fc); /* it ended meanwhile: answered so */
        return;
    }
    if (!core__change_add(src, copy_turn, copy_dropped, fc))
        copy_turn(src, fc);
}

rb_err core_session_fork(rb_core *c, const core_caller *who, const char *session_id, json_t *body, core_cb cb,
                         void *data, core_op **handle, char *err)
{
    session *s = core__live_session(c, who, session_id, err);
    if (s == NULL)
        return RB_ENOTFOUND;
    if (body != NULL && !json_is_null(body) && !(json_is_object(body) && json_object_size(body) == 0))
        return rb_fail(RB_EINVAL, err, "fork takes no options: send an empty body or {} (the new session has the "
                                       "source's language and execution_options)");
    if (s->pause != PAUSE_HIBERNATED && (s->container_id == NULL || strcmp(s->status, "starting") == 0))
        return rb_fail(RB_ECONFLICT, err, "session %s is still starting; fork it once it is ready", s->id);
    if (s->engine_down != NULL)
        return rb_fail(RB_EUNAVAILABLE, err, "session %s is unavailable: its %s", s->id, s->engine_down);
    json_t *opts = json_pack("{s:s, s:O}", "language", s->language, "execution_options", s->options);
    fork_call *fc = xcalloc(1, sizeof(*fc));
    fc->c = c;
    fc->started = rb_now_ms();
    snprintf(fc->src, sizeof(fc->src), "%s", s->id);
    fc->op = xcalloc(1, sizeof(*fc->op));
    fc->op->cb = cb;
    fc->op->data = data;
    const char *near = s->pause == PAUSE_HIBERNATED ? s->kept_volume : s->container_id;
    rb_err e = core__session_create_near(c, who, opts, near, created_cb, fc, &fc->create_op, err);
    json_decref(opts);
    if (e != RB_OK) {
        free(fc->op);
        free(fc);
        return e;
    }
    if (handle != NULL)
        *handle = fc->op;
    return RB_OK;
}

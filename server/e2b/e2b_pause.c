/*
 * e2b_pause.c: E2B's pause, resume, connect and fork on runbox's own (core_session_pause,
 * core_session_resume, core_session_fork; docs/e2b.md "Pause, resume and fork"):
 *
 *  - pause (Sandbox.pause): memory true or absent suspends the session (frozen, memory kept),
 *    memory false hibernates it (its files kept on disk, its sandbox removed: it boots fresh, as
 *    E2B's filesystem snapshot). 204 once paused; 409 when it is paused already, which the SDK
 *    reads as False; 503 (the sandbox keeps running, retry) while runbox cannot pause it: an
 *    execution runs in it, it is still starting, or it is being resumed.
 *  - connect (Sandbox.connect) and the older resume: a paused sandbox is resumed (201), a running
 *    one answered as it is (200); either way its timeout becomes at least `timeout` from now, as
 *    a paused session has none. memory false on a suspended sandbox hibernates it first, so that
 *    it comes back with a fresh interpreter (E2B's on_resume="reboot").
 *  - fork (Sandbox.fork): count sessions made one after another by core_session_fork (a copy of
 *    the workspace, a fresh interpreter), each with its own access token, the source's template,
 *    metadata and lifecycle, and the request's timeout.
 *
 * Resumes and forks outlive their request: a client that goes away does not stop them, and
 * their sessions still get the deadline and E2B data they were asked for (struct req_link).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/e2b/e2b_internal.h"
#include "server/e2b/e2b_wire.h"

/* E2B's limits and defaults of a fork (SandboxForkRequest). */
#define E2B_FORK_MAX 20
#define E2B_FORK_TIMEOUT 15
/* The older resume's default timeout (ResumedSandbox). */
#define E2B_RESUME_TIMEOUT 15
/* How often connect resumes a sandbox that a pause in flight paused again before it gives up. */
#define E2B_WAKE_TRIES 4

/* ---- a call that outlives its request ------------------------------------------------------- */

/* The first member of a call's heap context: the request while its client waits. The request's
 * pool holds a guard whose dispose clears req, so that the call, finishing later, answers nobody
 * and touches no freed memory. */
typedef struct req_link {
    h2o_req_t *req;
    struct link_guard *guard;
} req_link;

typedef struct link_guard {
    req_link *l;
} link_guard;

static void guard_dispose(void *p)
{
    link_guard *g = p;
    if (g->l != NULL) {
        g->l->req = NULL;
        g->l->guard = NULL;
    }
}

static void link_open(req_link *l, h2o_req_t *req)
{
    l->req = req;
    l->guard = h2o_mem_alloc_shared(&req->pool, sizeof(*l->guard), guard_dispose);
    l->guard->l = l;
}

/* Lets go of the request (answered, or the call is over): call before freeing the context. */
static void link_close(req_link *l)
{
    if (l->guard != NULL)
        l->guard->l = NULL;
    l->guard = NULL;
    l->req = NULL;
}

/* The session object of a live session (trusted lookup: the caller's ownership was checked when
 * the call began), or NULL. New reference. */
static json_t *session_now(rb_core *core, const char *id)
{
    char err[RB_ERR_LEN];
    json_t *s = NULL;
    if (core_session_get(core, NULL, id, &s, err) != RB_OK)
        return NULL;
    const char *status = json_string_value(json_object_get(s, "status"));
    if (status == NULL || strcmp(status, "ended") == 0 || strcmp(status, "dead") == 0) {
        json_decref(s);
        return NULL;
    }
    return s;
}

/* ---- pause ---------------------------------------------------------------------------------- */

/* A pause core refused or could not finish: the sandbox keeps running (or is as it was). E2B
 * answers 503 for a sandbox it cannot pause right now, which the SDK raises as
 * ServiceBusyException; 409 would read as "paused already". */
static void pause_fail(h2o_req_t *req, const char *id, rb_err e, const char *msg)
{
    char text[RB_ERR_LEN];
    if (e == RB_ENOTFOUND) {
        e2b__api_not_found(req, id);
    } else if (e == RB_ECONFLICT) {
        snprintf(text, sizeof(text), "%.400s (the sandbox was not paused; retry once it is idle)", msg);
        e2b__api_error(req, 503, text);
    } else {
        e2b__api_fail(req, e, msg);
    }
}

int e2b__pause(http_call *call)
{
    char err[RB_ERR_LEN], msg[RB_ERR_LEN];
    const char *id = call->params[0], *mode = NULL;
    json_t *body = NULL, *session = NULL, *extra = NULL, *change = NULL;
    if (!e2b__authorised_body(call, &body))
        return 0;
    if (e2b_pause_mode(body, &mode, err) != RB_OK) {
        e2b__api_error(call->req, 400, err);
        goto done;
    }
    if (e2b__live_sandbox(call, &session, &extra) != 0)
        goto done;
    const char *status = json_string_value(json_object_get(session, "status"));
    if (e2b__state_of(status) == E2B_STATE_PAUSED) {
        snprintf(msg, sizeof(msg), "sandbox %.64s is %s already: Sandbox.connect() resumes it", id,
                 strcmp(status, "pausing") == 0 ? "being paused" : "paused");
        e2b__api_error(call->req, 409, msg);
        goto done;
    }
    if (strcmp(status, "resuming") == 0) {
        snprintf(msg, sizeof(msg), "sandbox %.64s is being resumed; pause it once that has finished", id);
        e2b__api_error(call->req, 503, msg);
        goto done;
    }
    change = json_pack("{s:s}", "mode", mode);
    e2b__call_no_content(call, id, change, core_session_pause, pause_fail);
done:
    json_decref(change);
    json_decref(session);
    json_decref(extra);
    json_decref(body);
    return 0;
}

/* ---- connect and resume --------------------------------------------------------------------- */

typedef struct wake_ctx {
    req_link l;
    rb_core *core;
    char *id;
    json_t *extra;          /* the sandbox's E2B data (its template for the answer) */
    char *token;            /* the caller's own access token, or NULL (xstrdup) */
    int64_t timeout_s;      /* its deadline becomes now + this */
    int only_extend;        /* connect: a running sandbox's deadline only moves later */
    int reboot;             /* memory false: a suspended sandbox is hibernated first, to boot fresh */
    int tries;              /* pause and resume calls made */
    int woken;              /* it was paused (the answer is 201) */
    const char *auto_pause; /* the older resume's autoPause: the deadline's new action, or NULL */
} wake_ctx;

static void wake_free(wake_ctx *ctx)
{
    link_close(&ctx->l);
    json_decref(ctx->extra);
    free(ctx->token);
    free(ctx->id);
    free(ctx);
}

static void wake_fail(wake_ctx *ctx, rb_err e, const char *msg)
{
    if (ctx->l.req != NULL) {
        if (e == RB_ENOTFOUND)
            e2b__api_not_found(ctx->l.req, ctx->id);
        else
            e2b__api_fail(ctx->l.req, e, msg);
    }
    wake_free(ctx);
}

/* Running: its deadline and (the older resume) its lifecycle as asked, then the answer. */
static void wake_done(wake_ctx *ctx)
{
    char err[RB_ERR_LEN];
    int64_t want = rb_now_ms() + ctx->timeout_s * 1000, deadline = 0;
    rb_err e = RB_OK;
    if (ctx->only_extend)
        e = core_session_deadline(ctx->core, NULL, ctx->id, &deadline, err);
    if (e == RB_OK && (!ctx->only_extend || deadline < want))
        e = core_session_set_deadline(ctx->core, NULL, ctx->id, want, err);
    if (e == RB_OK && ctx->auto_pause != NULL) {
        /* the stored data as it is now (another key may have been handed a token meanwhile) */
        json_t *now = NULL;
        e = core_session_extra(ctx->core, NULL, ctx->id, E2B_EXTRA, &now, err);
        json_t *extra = now != NULL ? json_deep_copy(now) : json_deep_copy(ctx->extra);
        json_decref(now);
        json_object_set_new(extra, "lifecycle",
                            json_pack("{s:s, s:b}", "onTimeout", strcmp(ctx->auto_pause, "end") == 0 ? "kill" : "pause",
                                      "autoResume", 0));
        json_object_set_new(extra, "timeoutAction", json_string(ctx->auto_pause));
        if (e == RB_OK)
            e = core_session_set_extra(ctx->core, NULL, ctx->id, E2B_EXTRA, extra, err);
        json_decref(extra);
        if (e == RB_OK)
            e = core_session_set_deadline_action(ctx->core, NULL, ctx->id, ctx->auto_pause, err);
    }
    if (e != RB_OK) {
        wake_fail(ctx, e, err);
        return;
    }
    if (ctx->l.req != NULL) {
        json_t *session = json_pack("{s:s}", "session_id", ctx->id);
        json_t *o = e2b__sandbox_object(session, ctx->extra, 0, ctx->token);
        http_send_json(ctx->l.req, ctx->woken ? 201 : 200, o);
        json_decref(o);
        json_decref(session);
    }
    wake_free(ctx);
}

static void wake_step(wake_ctx *ctx);

static void on_wake_step(void *data, rb_err e, const char *msg, json_t *body)
{
    wake_ctx *ctx = data;
    json_decref(body);
    if (e != RB_OK) {
        wake_fail(ctx, e, msg);
        return;
    }
    wake_step(ctx);
}

/* One step towards a running sandbox, from whatever it is now: done when it runs; else a resume
 * (which waits for a pause or resume in flight and answers its outcome, hence the loop), or, to
 * reboot a suspended sandbox, a hibernation first. */
static void wake_step(wake_ctx *ctx)
{
    char err[RB_ERR_LEN];
    json_t *session = session_now(ctx->core, ctx->id);
    if (session == NULL) {
        wake_fail(ctx, RB_ENOTFOUND, NULL);
        return;
    }
    const char *status = json_string_value(json_object_get(session, "status"));
    int paused = e2b__state_of(status) == E2B_STATE_PAUSED || strcmp(status, "resuming") == 0;
    int suspended = strcmp(status, "suspended") == 0;
    json_decref(session);
    if (!paused) {
        wake_done(ctx);
        return;
    }
    if (ctx->tries++ >= E2B_WAKE_TRIES) {
        snprintf(err, sizeof(err), "sandbox %.64s was paused again while it was being resumed; connect again", ctx->id);
        wake_fail(ctx, RB_EUNAVAILABLE, err);
        return;
    }
    ctx->woken = 1;
    rb_err e;
    if (ctx->reboot && suspended) {
        json_t *mode = json_pack("{s:s}", "mode", "hibernate");
        e = core_session_pause(ctx->core, NULL, ctx->id, mode, on_wake_step, ctx, NULL, err);
        json_decref(mode);
    } else {
        e = core_session_resume(ctx->core, NULL, ctx->id, NULL, on_wake_step, ctx, NULL, err);
    }
    if (e != RB_OK)
        wake_fail(ctx, e, err);
}

/* The memory field of a connect or resume body: 1 absent or true, 0 false, -1 after answering 400. */
static int memory_of(http_call *call, json_t *body)
{
    json_t *m = json_object_get(body, "memory");
    if (m == NULL)
        return 1;
    if (!json_is_boolean(m)) {
        e2b__api_error(call->req, 400,
                       "memory: must be true (resume where it was) or false (boot it fresh from its files)");
        return -1;
    }
    return json_is_true(m);
}

/* Connect (resume 0) or the older resume (1) of call->params[0]. */
static int wake(http_call *call, int resume)
{
    char msg[RB_ERR_LEN];
    json_t *body = NULL, *session = NULL, *extra = NULL;
    if (!e2b__authorised_body(call, &body))
        return 0;
    int64_t timeout = e2b__timeout_of(call, body);
    int memory = timeout >= 0 ? memory_of(call, body) : -1;
    json_t *ap = json_object_get(body, "autoPause");
    if (memory < 0)
        goto done;
    if (resume && ap != NULL && !json_is_boolean(ap)) {
        e2b__api_error(call->req, 400, "autoPause: must be true or false");
        goto done;
    }
    if (e2b__live_sandbox(call, &session, &extra) != 0)
        goto done;
    const char *status = json_string_value(json_object_get(session, "status"));
    if (resume && e2b__state_of(status) != E2B_STATE_PAUSED && strcmp(status, "resuming") != 0) {
        snprintf(msg, sizeof(msg), "sandbox %.64s is running already (only a paused sandbox can be resumed)",
                 call->params[0]);
        e2b__api_error(call->req, 409, msg);
        goto done;
    }
    wake_ctx *ctx = xcalloc(1, sizeof(*ctx));
    link_open(&ctx->l, call->req);
    ctx->core = call->core;
    ctx->id = xstrdup(call->params[0]);
    ctx->extra = json_incref(extra);
    const char *token = e2b__caller_token(call, session, extra); /* an admin's own, not the owner's */
    ctx->token = token != NULL ? xstrdup(token) : NULL;
    ctx->timeout_s = timeout > 0 ? timeout : resume ? E2B_RESUME_TIMEOUT : 300;
    ctx->only_extend = !resume;
    ctx->reboot = !memory;
    if (json_is_boolean(ap))
        ctx->auto_pause = json_is_true(ap) ? "suspend" : "end";
    wake_step(ctx);
done:
    json_decref(session);
    json_decref(extra);
    json_decref(body);
    return 0;
}

int e2b__connect(http_call *call)
{
    return wake(call, 0);
}

int e2b__resume(http_call *call)
{
    return wake(call, 1);
}

/* ---- fork ----------------------------------------------------------------------------------- */

typedef struct fork_ctx {
    req_link l;
    rb_core *core;
    const core_caller *who; /* valid while l.req is: no fork starts after the client went away */
    char *id;
    json_t *extra;   /* the source's E2B data: the forks' template, metadata and lifecycle */
    json_t *results; /* E2B's SandboxForkResult of each fork so far */
    int64_t timeout_s;
    int count;
} fork_ctx;

static void fork_free(fork_ctx *ctx)
{
    link_close(&ctx->l);
    json_decref(ctx->extra);
    json_decref(ctx->results);
    free(ctx->id);
    free(ctx);
}

static void fork_failed(fork_ctx *ctx, rb_err e, const char *msg)
{
    json_array_append_new(ctx->results,
                          json_pack("{s:{s:i, s:s}}", "error", "code", http_status_of(e), "message", msg ? msg : ""));
}

static void fork_next(fork_ctx *ctx);

/* A fork is ready: it becomes an E2B sandbox of its own (a new access token) with the source's
 * template, metadata and lifecycle, and the request's timeout. */
static void on_forked(void *data, rb_err e, const char *msg, json_t *body)
{
    fork_ctx *ctx = data;
    char err[RB_ERR_LEN];
    const char *id = json_string_value(json_object_get(body, "session_id"));
    if (e != RB_OK || id == NULL) {
        fork_failed(ctx, e != RB_OK ? e : RB_EINTERNAL, e != RB_OK ? msg : "the fork has no session id");
        json_decref(body);
        if (e == RB_ECANCELED) { /* runboxd is stopping: no more core calls, the forks so far are the answer */
            if (ctx->l.req != NULL)
                http_send_json(ctx->l.req, 201, ctx->results);
            fork_free(ctx);
            return;
        }
        fork_next(ctx);
        return;
    }
    const char *action = json_string_value(json_object_get(ctx->extra, "timeoutAction"));
    json_t *extra = json_deep_copy(ctx->extra);
    /* the source's tokens stay the source's: the fork's one token is its own owner's, the key that forked it */
    json_object_del(extra, "tokens");
    int minted = 0;
    const char *token = e2b__token_mint(extra, e2b__owner_of(body), &minted);
    e = core_session_set_extra(ctx->core, NULL, id, E2B_EXTRA, extra, err);
    if (e == RB_OK)
        e = core_session_set_deadline(ctx->core, NULL, id, rb_now_ms() + ctx->timeout_s * 1000, err);
    if (e == RB_OK)
        e = core_session_set_deadline_action(ctx->core, NULL, id, action != NULL ? action : "end", err);
    if (e != RB_OK)
        fork_failed(ctx, e, err);
    else
        json_array_append_new(ctx->results, json_pack("{s:o}", "sandbox", e2b__sandbox_object(body, extra, 0, token)));
    json_decref(extra);
    json_decref(body);
    fork_next(ctx);
}

/* Starts the next fork, or answers once all are made. One at a time: each copies the source's
 * workspace while it is frozen, and a second freeze during a copy would thaw it early. */
static void fork_next(fork_ctx *ctx)
{
    char err[RB_ERR_LEN];
    while (ctx->l.req != NULL && (int)json_array_size(ctx->results) < ctx->count) {
        rb_err e = core_session_fork(ctx->core, ctx->who, ctx->id, NULL, on_forked, ctx, NULL, err);
        if (e == RB_OK)
            return;
        if (json_array_size(ctx->results) == 0) { /* the source cannot be forked: the whole call fails */
            if (e == RB_ENOTFOUND)
                e2b__api_not_found(ctx->l.req, ctx->id);
            else
                e2b__api_fail(ctx->l.req, e, err);
            fork_free(ctx);
            return;
        }
        fork_failed(ctx, e, err);
    }
    if (ctx->l.req != NULL)
        http_send_json(ctx->l.req, 201, ctx->results);
    fork_free(ctx);
}

int e2b__fork(http_call *call)
{
    char msg[RB_ERR_LEN];
    json_t *body = NULL, *session = NULL, *extra = NULL;
    if (!e2b__authorised_body(call, &body))
        return 0;
    int64_t timeout = e2b__timeout_of(call, body);
    json_t *count = json_object_get(body, "count");
    if (timeout < 0)
        goto done;
    if (count != NULL &&
        (!json_is_integer(count) || json_integer_value(count) < 1 || json_integer_value(count) > E2B_FORK_MAX)) {
        snprintf(msg, sizeof(msg), "count: must be a whole number from 1 to %d", E2B_FORK_MAX);
        e2b__api_error(call->req, 400, msg);
        goto done;
    }
    if (e2b__live_sandbox(call, &session, &extra) != 0)
        goto done;
    fork_ctx *ctx = xcalloc(1, sizeof(*ctx));
    link_open(&ctx->l, call->req);
    ctx->core = call->core;
    ctx->who = call->who;
    ctx->id = xstrdup(call->params[0]);
    ctx->extra = json_deep_copy(extra);
    ctx->results = json_array();
    ctx->timeout_s = timeout > 0 ? timeout : E2B_FORK_TIMEOUT;
    ctx->count = json_is_integer(count) ? (int)json_integer_value(count) : 1;
    fork_next(ctx);
done:
    json_decref(session);
    json_decref(extra);
    json_decref(body);
    return 0;
}

/*
 * session_freeze.c: the two things every freeze of a session's sandbox goes through
 * (docs/data.md "Pause, resume and fork"):
 *
 *  - core__freeze: one freeze or thaw with a bounded retry. The cgroup v1 freezer gives up on
 *    processes that keep forking ("unable to freeze", RB_EBUSY from the backend; the sandbox
 *    runs on unfrozen); runboxd tries again a few times with a growing wait on the loop's
 *    timer. If it still fails, the caller gets RB_EUNAVAILABLE (503 with Retry-After in every
 *    protocol) with the cause, and the sandbox is left thawed.
 *  - the change queue: the suspends, hibernations, resumes and fork copies of one session run
 *    one after another, in the order they were asked, as its executions do. A change asked
 *    while another is in flight waits for it instead of being refused (or racing the engine:
 *    Docker's 409 "already paused" was a race of runboxd's own).
 *
 * Not here: what a pause, resume or fork does (session_pause.c, session_fork.c).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"

/* Freeze tries and the waits between them (ms, 4.5 s in all): runc itself tries for a moment
 * before it gives up (thawing again now and then), so eight tries span several seconds of a busy
 * sandbox; with five, one freeze in a few dozen still failed on a loaded 2-core host. */
#define FREEZE_TRIES 8
static const int freeze_wait_ms[FREEZE_TRIES - 1] = {100, 200, 400, 800, 1000, 1000, 1000};

struct session_change {
    core_change_fn start; /* runs the change (it then owns data) */
    core_change_drop_fn drop;
    void *data;
    struct session_change *next;
};

typedef struct freeze_call {
    rb_core *c;
    char *container;
    int on, tries;
    int64_t started; /* rb_mono_ms() of the first try */
    backend_cb cb;
    void *data;
    uv_timer_t *timer; /* waiting for the next try, or NULL */
    char last[RB_ERR_LEN];
    struct freeze_call *prev, *next; /* the room's waiting tries */
} freeze_call;

/* The room's state (CORE_ROOM_FREEZE). */
typedef struct freeze_room {
    freeze_call *waiting;
    uv_timer_t *kick; /* runs the sessions' next changes on the next loop turn */
    int kicked;
} freeze_room;

static freeze_room *room_of(rb_core *c)
{
    void **slot = core_heart_room(c, CORE_ROOM_FREEZE);
    if (*slot == NULL) {
        freeze_room *r = xcalloc(1, sizeof(*r));
        *slot = r;
    }
    return *slot;
}

static void timer_closed(uv_handle_t *h)
{
    free(h);
}

/* ---- freeze with a bounded retry ------------------------------------------------------- */

static void freeze_free(freeze_call *fc)
{
    free(fc->container);
    free(fc);
}

static void try_once(freeze_call *fc);

static void unlink_waiting(freeze_call *fc)
{
    freeze_room *r = room_of(fc->c);
    if (fc->prev != NULL)
        fc->prev->next = fc->next;
    else if (r->waiting == fc)
        r->waiting = fc->next;
    if (fc->next != NULL)
        fc->next->prev = fc->prev;
    fc->prev = fc->next = NULL;
}

static void retry_cb(uv_timer_t *t)
{
    freeze_call *fc = t->data;
    uv_close((uv_handle_t *)t, timer_closed);
    fc->timer = NULL;
    unlink_waiting(fc);
    try_once(fc);
}

static void thawed_back_cb(void *data, rb_err err, const char *msg)
{
    (void)err;
    (void)msg;
    free(data);
}

/* The last try failed as the others did: the caller hears why, with the sandbox thawed (the
 * runtime thaws it when it gives up; asking again costs nothing and covers one that does not). */
static void give_up(freeze_call *fc)
{
    char text[RB_ERR_LEN], e2[RB_ERR_LEN];
    snprintf(text, sizeof(text),
             "its sandbox could not be %s: its processes kept the cgroup freezer from stopping them in %d tries "
             "over %.1f s (%.200s); nothing was changed: retry in a moment, or stop the processes that keep forking",
             fc->on ? "frozen" : "thawed", fc->tries, (double)(rb_mono_ms() - fc->started) / 1000, fc->last);
    if (fc->on && !fc->c->closing) {
        char *id = xstrdup(fc->container);
        if (backend_pause(fc->c->be, id, 0, thawed_back_cb, id, e2) != RB_OK)
            free(id);
    }
    fc->cb(fc->data, RB_EUNAVAILABLE, text);
    freeze_free(fc);
}

static void tried_cb(void *data, rb_err err, const char *msg)
{
    freeze_call *fc = data;
    if (err != RB_EBUSY || fc->c->closing) {
        fc->cb(fc->data, err, msg);
        freeze_free(fc);
        return;
    }
    snprintf(fc->last, sizeof(fc->last), "%s", msg ? msg : "the freezer gave up");
    if (fc->tries >= FREEZE_TRIES) {
        give_up(fc);
        return;
    }
    rb_info("%s sandbox %.12s: try %d of %d failed, again in %d ms: %s", fc->on ? "freezing" : "thawing",
            fc->container, fc->tries, FREEZE_TRIES, freeze_wait_ms[fc->tries - 1], fc->last);
    freeze_room *r = room_of(fc->c);
    fc->timer = xmalloc(sizeof(*fc->timer));
    uv_timer_init(fc->c->loop, fc->timer);
    fc->timer->data = fc;
    uv_timer_start(fc->timer, retry_cb, (uint64_t)freeze_wait_ms[fc->tries - 1], 0);
    fc->next = r->waiting;
    if (r->waiting != NULL)
        r->waiting->prev = fc;
    r->waiting = fc;
}

static void try_once(freeze_call *fc)
{
    char e2[RB_ERR_LEN];
    fc->tries++;
    rb_err e = backend_pause(fc->c->be, fc->container, fc->on, tried_cb, fc, e2);
    if (e != RB_OK)
        tried_cb(fc, e, e2);
}

rb_err core__freeze(rb_core *c, const char *container, int on, backend_cb cb, void *data, char *err)
{
    if (c->closing)
        return rb_fail(RB_ECANCELED, err, "runboxd is stopping");
    if (container == NULL)
        return rb_fail(RB_ECONFLICT, err, "the session has no sandbox");
    freeze_call *fc = xcalloc(1, sizeof(*fc));
    fc->c = c;
    fc->container = xstrdup(container);
    fc->on = on;
    fc->cb = cb;
    fc->data = data;
    fc->tries = 1;
    fc->started = rb_mono_ms();
    rb_err e = backend_pause(c->be, container, on, tried_cb, fc, err);
    if (e != RB_OK)
        freeze_free(fc);
    return e;
}

/* ---- the change queue ------------------------------------------------------------------ */

int core__change_busy(const session *s)
{
    return strcmp(s->status, "pausing") == 0 || strcmp(s->status, "resuming") == 0 || s->forking > 0;
}

/* Starts s's waiting changes while nothing is in flight; a session left paused with executions
 * queued (they came during the pause) resumes for them. */
static void run_next(session *s)
{
    rb_core *c = s->core;
    char id[RB_ID_LEN];
    snprintf(id, sizeof(id), "%s", s->id);
    while (s->changes != NULL && !core__change_busy(s)) {
        struct session_change *ch = s->changes;
        s->changes = ch->next;
        ch->start(s, ch->data);
        free(ch);
        if (map_get(&c->sessions, id) != s)
            return; /* the change ended it (s may be freed) */
    }
    if (s->changes == NULL && !core__change_busy(s) && s->pause != PAUSE_NONE && s->queue_head != NULL)
        core__resume_for_queue(s);
}

static void kick_cb(uv_timer_t *t)
{
    rb_core *c = t->data;
    freeze_room *r = room_of(c);
    r->kicked = 0;
    size_t pos = 0;
    session *s;
    /* collected first: a change may end a session (and so change the map) */
    size_t n = 0, cap = 0;
    char (*ids)[RB_ID_LEN] = NULL;
    while ((s = map_next(&c->sessions, &pos)) != NULL) {
        if (s->changes == NULL && !(s->pause != PAUSE_NONE && s->queue_head != NULL))
            continue;
        if (n == cap) {
            cap = cap ? cap * 2 : 8;
            ids = xrealloc(ids, cap * sizeof(*ids));
        }
        snprintf(ids[n++], RB_ID_LEN, "%s", s->id);
    }
    for (size_t i = 0; i < n; i++)
        if ((s = map_get(&c->sessions, ids[i])) != NULL)
            run_next(s);
    free(ids);
}

void core__change_kick(rb_core *c)
{
    if (c->closing)
        return;
    freeze_room *r = room_of(c);
    if (r->kick == NULL) {
        r->kick = xmalloc(sizeof(*r->kick));
        uv_timer_init(c->loop, r->kick);
        r->kick->data = c;
    }
    if (!r->kicked) {
        r->kicked = 1;
        uv_timer_start(r->kick, kick_cb, 0, 0);
    }
}

int core__change_add(session *s, core_change_fn start, core_change_drop_fn drop, void *data)
{
    if (s->changes == NULL && !core__change_busy(s))
        return 0; /* nothing in the way: the caller starts it now */
    struct session_change *ch = xcalloc(1, sizeof(*ch));
    ch->start = start;
    ch->drop = drop;
    ch->data = data;
    struct session_change **tail = &s->changes;
    while (*tail != NULL)
        tail = &(*tail)->next;
    *tail = ch;
    return 1;
}

void core__changes_end(session *s, const char *reason)
{
    while (s->changes != NULL) {
        struct session_change *ch = s->changes;
        s->changes = ch->next;
        ch->drop(ch->data, reason);
        free(ch);
    }
}

void core__freeze_dispose(rb_core *c)
{
    void **slot = core_heart_room(c, CORE_ROOM_FREEZE);
    freeze_room *r = *slot;
    if (r == NULL)
        return;
    while (r->waiting != NULL) {
        freeze_call *fc = r->waiting;
        r->waiting = fc->next;
        uv_close((uv_handle_t *)fc->timer, timer_closed);
        fc->cb(fc->data, RB_ECANCELED, "runboxd is stopping");
        freeze_free(fc);
    }
    if (r->kick != NULL)
        uv_close((uv_handle_t *)r->kick, timer_closed);
    free(r);
    *slot = NULL;
}

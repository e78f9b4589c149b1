/*
 * recovery.c: finding runboxd's own containers again. The probe of the sandbox engine (the
 * backend's ping) runs at start-up and then periodically; the first time it answers, the
 * containers labelled with this instance are matched to stored sessions: live ones are
 * re-attached, the rest removed, and stored sessions whose container is gone are ended with a
 * plain reason. What a restart cut short is undone, never half kept (docs/data.md): a sandbox
 * frozen by a hibernation or fork in flight is thawed and goes on running; a fork's new session
 * whose copy had not finished ends; copiers and helpers are removed, and only then the volumes
 * no session needs (core__recovery_sweep).
 */
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "core/pool.h"

#define PROBE_MS_DOWN 2000
#define PROBE_MS_UP 10000


static void reattached_cb(session *s, rb_err err, const char *msg)
{
    if (err != RB_OK) {
        char reason[RB_ERR_LEN];
        snprintf(reason, sizeof(reason), "could not reconnect to its sandbox after a restart: %s", msg);
        session_end(s, "dead", reason);
        return;
    }
    rb_info("session %s: reconnected to its sandbox", s->id);
    s->status = "ready";
    session_persist(s);
    session_pump(s);
}

/* A sandbox frozen by an operation a restart cut short (a hibernation's or a fork's copy): thawed,
 * then attached again as any running one. */
typedef struct thaw {
    rb_core *c;
    char sid[RB_ID_LEN];
} thaw;

static void thawed_cb(void *data, rb_err err, const char *errmsg)
{
    thaw *t = data;
    session *s = map_get(&t->c->sessions, t->sid);
    char msg[RB_ERR_LEN];
    if (err == RB_ECANCELED || s == NULL || s->sb != NULL) {
        free(t);
        return;
    }
    if (err != RB_OK) {
        snprintf(msg, sizeof(msg),
                 "runboxd restarted while its sandbox was frozen for a copy, and it cannot be thawed: %.400s", errmsg);
        session_end(s, "dead", msg);
    } else if (sandbox_reattach(s, reattached_cb, msg) != RB_OK) {
        rb_warn("recovery: session %s: %s", s->id, msg);
    }
    free(t);
}

/* Returns 0 when the thaw could not start (then s has ended). */
static int thaw_start(rb_core *c, session *s)
{
    char e2[RB_ERR_LEN], msg[RB_ERR_LEN];
    thaw *t = xcalloc(1, sizeof(*t));
    t->c = c;
    snprintf(t->sid, sizeof(t->sid), "%s", s->id);
    rb_info("recovery: session %s: thawing its sandbox (a hibernation or fork was cut short)", s->id);
    if (backend_pause(c->be, s->container_id, 0, thawed_cb, t, e2) == RB_OK)
        return 1;
    free(t);
    snprintf(msg, sizeof(msg),
             "runboxd restarted while its sandbox was frozen for a copy, and it cannot be thawed: %.400s", e2);
    session_end(s, "dead", msg);
    return 0;
}

/* The live session whose stored container is id (a claimed pool container is labelled
 * runbox.session=pool, so only its id links it to its session). */
static session *session_by_container(rb_core *c, const char *id)
{
    size_t pos = 0;
    session *s;
    while ((s = map_next(&c->sessions, &pos)) != NULL)
        if (s->container_id != NULL && strcmp(s->container_id, id) == 0)
            return s;
    return NULL;
}

static void listed_cb(void *data, rb_err err, const char *errmsg, const backend_sandbox_info *items, size_t n)
{
    rb_core *c = data;
    char msg[RB_ERR_LEN];
    if (err == RB_ECANCELED)
        return;
    if (err != RB_OK) {
        rb_warn("recovery: cannot list runbox containers: %s (will retry)", errmsg);
        c->recovered = 0;
        return;
    }
    rb_map thawing; /* sessions whose frozen sandbox is being thawed: not gone */
    map_init(&thawing);
    for (size_t i = 0; i < n; i++) {
        const char *id = items[i].id;
        const char *state = items[i].state;
        const char *sid = json_string_value(json_object_get(items[i].labels, "runbox.session"));
        const char *role = json_string_value(json_object_get(items[i].labels, "runbox.role"));
        if (role != NULL && strcmp(role, "egress") == 0 && sid != NULL && map_get(&c->sessions, sid) != NULL)
            continue; /* a live session's egress proxy: core/network/ takes it over below */
        session *s = sid ? map_get(&c->sessions, sid) : NULL;
        if (s == NULL)
            s = session_by_container(c, id);
        if (s == NULL && pool_owns(c->pool, id))
            continue; /* warmed by this process since start-up */
        if (s == NULL) {
            rb_info("recovery: removing container %.12s: no live session owns it", id);
            removal_start_recovery(c, id);
            continue;
        }
        if (s->sb != NULL)
            continue; /* created by this process since start-up */
        if (s->pause == PAUSE_HIBERNATED) { /* a resume cut short: its files are still kept */
            rb_info("recovery: removing container %.12s of hibernated session %s", id, s->id);
            removal_start_recovery(c, id);
            continue;
        }
        if (s->fork_pending && s->container_id != NULL && strcmp(s->container_id, id) == 0)
            continue; /* a fork's copy cut short: the session ends below, its container with it */
        if (state != NULL && strcmp(state, "paused") == 0 && s->container_id != NULL &&
            strcmp(s->container_id, id) == 0 && s->pause != PAUSE_SUSPENDED) {
            /* frozen for a hibernation's or a fork's copy, never stored suspended: it goes on running */
            if (thaw_start(c, s))
                map_put(&thawing, s->id, s);
            continue;
        }
        if (state != NULL && strcmp(state, "paused") == 0 && s->container_id != NULL &&
            strcmp(s->container_id, id) == 0) { /* suspended: attached again on resume (session_pause.c) */
            s->pause = PAUSE_SUSPENDED;
            s->status = "suspended";
            if (s->paused_at <= 0)
                s->paused_at = rb_now_ms();
            session_persist(s);
            continue;
        }
        s->pause = PAUSE_NONE; /* running, whatever was stored: it goes on */
        if (state == NULL || strcmp(state, "running") != 0 || s->container_id == NULL ||
            strcmp(s->container_id, id) != 0) {
            rb_info("recovery: removing container %.12s of session %s (state %s)", id, s->id, state ? state : "?");
            removal_start_recovery(c, id);
            continue;
        }
        if (sandbox_reattach(s, reattached_cb, msg) != RB_OK)
            rb_warn("recovery: session %s: %s", s->id, msg);
    }
    /* Stored sessions whose container is gone cannot come back. */
    size_t pos = 0;
    session *s;
    while ((s = map_next(&c->sessions, &pos)) != NULL) {
        if (s->fork_pending) {
            char reason[RB_ERR_LEN];
            snprintf(reason, sizeof(reason),
                     "runboxd restarted while this session was being forked from session %.64s, before all its files "
                     "were copied; fork the source again",
                     s->fork_pending_from != NULL ? s->fork_pending_from : "?");
            session_end(s, "dead", reason);
        } else if (s->sb == NULL && strcmp(s->status, "starting") == 0 && s->create_op == NULL &&
                   map_get(&thawing, s->id) == NULL) {
            session_end(s, "dead",
                        "its sandbox container no longer exists (it was removed or Docker was reset while runboxd "
                        "was stopped); create a new session");
        }
    }
    map_dispose(&thawing);
    /* Live sessions with a way out take their egress proxies over; then what no live session
     * owns goes (core/network/egress.h). */
    pos = 0;
    while ((s = map_next(&c->sessions, &pos)) != NULL)
        if (s->egress_net != NULL && s->net_policy != NULL && s->create_op == NULL)
            egress_recover(c, s->id, s->egress_net, s->net_policy);
    egress_recovered(c);
    removal_recovered(c); /* then core__recovery_sweep */
    /* Only now: a pool container created before the listing could be taken for an orphan. */
    pool_start(c->pool);
}

void core__recovery_sweep(rb_core *c)
{
    removal_sweep_kept(c);                 /* kept files no hibernated session needs */
    volumes_sweep(c);                      /* volumes whose creation a restart cut short */
    removal_sweep_volumes(c, -1);          /* workspace volumes a removed helper held */
}

static void recover(rb_core *c)
{
    char err[RB_ERR_LEN];
    char label[80];
    snprintf(label, sizeof(label), "runbox.instance=%s", c->instance);
    c->recovered = 1;
    if (backend_list(c->be, label, listed_cb, c, err) != RB_OK) {
        rb_warn("recovery: %s", err);
        c->recovered = 0;
    }
}

static void probed_cb(void *data, rb_err err, const char *errmsg, const char *version)
{
    rb_core *c = data;
    c->probing = 0;
    if (err == RB_ECANCELED || c->closing)
        return;
    c->probed = 1;
    if (err != RB_OK) {
        if (c->docker_ok || c->docker_error[0] == '\0')
            rb_warn("Docker is unreachable: %s", errmsg);
        c->docker_ok = 0;
        snprintf(c->docker_error, sizeof(c->docker_error), "%s", errmsg);
        core__probe_start(c, PROBE_MS_DOWN);
        return;
    }
    snprintf(c->api_version, sizeof(c->api_version), "%s", version);
    if (!c->docker_ok)
        rb_info("Docker is reachable (API %s)", c->api_version);
    c->docker_ok = 1;
    c->docker_error[0] = '\0';
    if (!c->recovered)
        recover(c);
    core__engines_checked(c);
    /* Removals that failed go again; while there are some, the next probe comes sooner. */
    int retried = removal_retry_all(c);
    core__probe_start(c, retried > 0 ? PROBE_MS_DOWN : PROBE_MS_UP);
}

/* ---- sessions on an engine that went away ------------------------------------------------- */

typedef struct back_check {
    rb_core *c;
    char sid[RB_ID_LEN];
    char *container;
} back_check;

static void back_state_cb(void *data, rb_err err, const char *errmsg, const backend_sandbox_state *st)
{
    back_check *b = data;
    session *s = map_get(&b->c->sessions, b->sid);
    if (err != RB_ECANCELED && s != NULL && s->container_id != NULL && strcmp(s->container_id, b->container) == 0 &&
        s->engine_down == NULL) {
        char reason[RB_ERR_LEN];
        if (err == RB_ENOTFOUND || (err == RB_OK && !st->running)) {
            if (err == RB_OK)
                snprintf(reason, sizeof(reason),
                         "its sandbox container stopped (exit code %d) while its Docker engine did not answer: the "
                         "engine or its host restarted; create a new session",
                         st->exit_code);
            else
                snprintf(reason, sizeof(reason),
                         "its sandbox container is gone from its Docker engine, which did not answer for a while "
                         "(the engine was reset); create a new session");
            session_end(s, "dead", reason);
        } else if (err != RB_OK) {
            snprintf(reason, sizeof(reason),
                     "its Docker engine answers again but cannot say whether its sandbox still runs (%.300s): create "
                     "a new session",
                     errmsg);
            session_end(s, "dead", reason);
        } else {
            char e2[RB_ERR_LEN];
            if (sandbox_resume(s, e2) != RB_OK) {
                snprintf(reason, sizeof(reason),
                         "its Docker engine answers again and its sandbox still runs, but it cannot be attached "
                         "again (%.300s): create a new session",
                         e2);
                session_end(s, "dead", reason);
            } else {
                rb_info("session %s: its engine answers again; its sandbox kept its state", s->id);
                session_pump(s);
            }
        }
    }
    free(b->container);
    free(b);
}

void core__engines_checked(rb_core *c)
{
    size_t pos = 0;
    session *s;
    while ((s = map_next(&c->sessions, &pos)) != NULL) {
        if (s->container_id == NULL)
            continue;
        const char *down = backend_engine_down(c->be, s->container_id);
        if (down != NULL) {
            if (s->engine_down == NULL)
                rb_warn("session %s: unavailable: %s", s->id, down);
            free(s->engine_down);
            s->engine_down = xstrdup(down);
            continue;
        }
        if (s->engine_down == NULL)
            continue;
        free(s->engine_down);
        s->engine_down = NULL;
        back_check *b = xcalloc(1, sizeof(*b));
        b->c = c;
        snprintf(b->sid, sizeof(b->sid), "%s", s->id);
        b->container = xstrdup(s->container_id);
        char err[RB_ERR_LEN];
        if (backend_state(c->be, s->container_id, back_state_cb, b, err) != RB_OK) {
            rb_warn("session %s: cannot ask for its sandbox's state: %s", s->id, err);
            free(b->container);
            free(b);
        }
    }
}

void core__probe_soon(rb_core *c)
{
    if (c->closing || c->probe_timer == NULL || c->probing)
        return; /* a probe in flight arms the next one when it answers */
    if (!uv_is_active((uv_handle_t *)c->probe_timer) || uv_timer_get_due_in(c->probe_timer) > PROBE_MS_DOWN)
        core__probe_start(c, PROBE_MS_DOWN);
}

static void probe_timer_cb(uv_timer_t *t)
{
    rb_core *c = t->data;
    char err[RB_ERR_LEN];
    if (c->probing)
        return;
    if (backend_ping(c->be, probed_cb, c, err) != RB_OK) {
        c->docker_ok = 0;
        c->probed = 1;
        snprintf(c->docker_error, sizeof(c->docker_error), "%s", err);
        core__probe_start(c, PROBE_MS_DOWN);
        return;
    }
    c->probing = 1;
}

void core__probe_start(rb_core *c, uint64_t ms)
{
    uv_timer_start(c->probe_timer, probe_timer_cb, ms, 0);
}


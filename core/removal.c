/*
 * removal.c: removing containers, and trying again when the engine did not answer. A container
 * whose removal failed waits in c->removals (at most REMOVALS_PENDING_MAX; beyond, the next
 * start's recovery finds it) and is tried again after the next successful probe of the engine
 * (recovery.c). Not here: deciding which containers go (session.c, sandbox.c, recovery.c).
 * Also the workspace volumes that outlived their sandbox: an anonymous volume goes with its
 * container (removed with v=1) unless a helper (installer, file copier) that mounted it by name
 * still held it then; such a volume, labelled runbox.workspace=<instance> and used by no
 * container any more, is removed by removal_sweep_volumes.
 */
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"

/* Removals to retry at most; beyond, a container is left for the next start's recovery. */
#define REMOVALS_PENDING_MAX 4096
/* How often workspace volumes no container uses are looked for (removal_sweep_volumes). */
#define VOLUME_SWEEP_MS (30 * 1000)

/* A container to remove (by id or name): in flight, or waiting in c->removals for the next
 * retry (removal_retry_all). */
struct removal {
    rb_core *c;
    int missing_tries; /* retries left in which "no such container" is taken for "not there yet" */
    int recovery;      /* found by the recovery at start: the volume sweeps wait for its outcome (removal_recovered) */
    char id[];
};

/* A recovery removal has its first outcome (done, or failed and left for a retry): once every
 * one has, the volumes they held can be swept. */
static void recovery_removal_done(struct removal *r)
{
    if (!r->recovery)
        return;
    r->recovery = 0;
    rb_core *c = r->c;
    if (--c->recovery_removals == 0 && c->recovery_sweep_waiting && !c->closing) {
        c->recovery_sweep_waiting = 0;
        core__recovery_sweep(c);
    }
}

/* Keeps r (owned from here) for the next retry. */
static void remove_later(struct removal *r)
{
    rb_core *c = r->c;
    /* the start's sweeps wait for a first outcome only, not for an engine that keeps failing: a
     * volume the container still holds is left for a later sweep */
    recovery_removal_done(r);
    struct removal *old = map_get(&c->removals, r->id);
    if (old == NULL && c->removals.len >= REMOVALS_PENDING_MAX) {
        rb_warn("container %.12s: %d removals are waiting already; it is left for the next start's recovery",
                r->id, REMOVALS_PENDING_MAX);
        free(r);
        return;
    }
    free(old);
    map_put(&c->removals, r->id, r);
    core__probe_soon(c); /* the retry follows the next successful probe */
}

static void removed_cb(void *data, rb_err err, const char *msg)
{
    struct removal *r = data;
    r->c->pending_ops--;
    if (err == RB_ENOTFOUND && r->missing_tries > 0) {
        r->missing_tries--;
        remove_later(r);
        return;
    }
    if (err != RB_OK && err != RB_ENOTFOUND && err != RB_ECANCELED && !r->c->closing) {
        rb_warn("container %.12s: could not remove it (will try again once Docker answers): %s", r->id, msg);
        remove_later(r);
        return;
    }
    recovery_removal_done(r);
    free(r);
}

static void start(rb_core *c, const char *id, int missing_tries, int recovery)
{
    size_t n = strlen(id);
    struct removal *r = xmalloc(sizeof(*r) + n + 1);
    r->c = c;
    r->missing_tries = missing_tries;
    r->recovery = recovery;
    memcpy(r->id, id, n + 1);
    char err[RB_ERR_LEN];
    rb_err e = backend_remove(c->be, r->id, removed_cb, r, err);
    if (e != RB_OK) {
        if (e != RB_ECANCELED && e != RB_EINVAL && !c->closing) {
            rb_warn("container %.12s: could not remove it (will try again once Docker answers): %s", r->id, err);
            remove_later(r);
        } else {
            recovery_removal_done(r);
            free(r);
        }
        return;
    }
    c->pending_ops++;
}

void removal_start(rb_core *c, const char *id, int missing_tries)
{
    start(c, id, missing_tries, 0);
}

void removal_start_recovery(rb_core *c, const char *id)
{
    c->recovery_removals++;
    start(c, id, 0, 1);
}

void removal_recovered(rb_core *c)
{
    if (c->recovery_removals > 0)
        c->recovery_sweep_waiting = 1;
    else
        core__recovery_sweep(c);
}

/* ---- workspace volumes a helper kept past their sandbox ------------------------------------ */

typedef struct volume_removal {
    rb_core *c;
    char name[];
} volume_removal;

static void volume_removed_cb(void *data, rb_err err, const char *msg)
{
    volume_removal *v = data;
    const char *name = v->name;
    v->c->pending_ops--;
    if (err != RB_OK && err != RB_ENOTFOUND && err != RB_ECANCELED && err != RB_ECONFLICT)
        rb_warn("volume %.64s: could not remove it (tried again later): %s", name, msg);
    free(v);
}

static void volumes_listed_cb(void *data, rb_err err, const char *errmsg, const backend_sandbox_info *items, size_t n)
{
    rb_core *c = data;
    char e2[RB_ERR_LEN];
    c->pending_ops--;
    if (err != RB_OK) {
        if (err != RB_ECANCELED)
            rb_warn("cannot list unused workspace volumes: %s", errmsg);
        return;
    }
    if (c->closing)
        return;
    for (size_t i = 0; i < n; i++) {
        size_t len = strlen(items[i].id);
        volume_removal *v = xmalloc(sizeof(*v) + len + 1);
        v->c = c;
        memcpy(v->name, items[i].id, len + 1);
        rb_info("removing workspace volume %.64s: no container uses it any more", v->name);
        if (backend_volume_remove(c->be, v->name, volume_removed_cb, v, e2) != RB_OK)
            free(v);
        else
            c->pending_ops++; /* a graceful stop waits for it */
    }
}

/* A kept workspace some session still needs: its hibernated one, or any of a session whose
 * hibernation is in flight (its new volume is not yet named in the session, nor yet mounted). */
static int kept_wanted_now(rb_core *c, const char *session_id, const char *volume)
{
    session *s = map_get(&c->sessions, session_id);
    if (s != NULL && strcmp(s->status, "pausing") == 0)
        return 1;
    return core__kept_wanted(c, session_id, volume);
}

void removal_sweep_volumes(rb_core *c, int64_t now)
{
    char err[RB_ERR_LEN], label[80];
    if (c->be->ops->volume_list_unused == NULL || (now >= 0 && now - c->last_volume_sweep < VOLUME_SWEEP_MS))
        return;
    c->last_volume_sweep = now >= 0 ? now : rb_now_ms();
    snprintf(label, sizeof(label), "runbox.workspace=%s", c->instance);
    if (backend_volume_list_unused(c->be, label, volumes_listed_cb, c, err) != RB_OK)
        rb_warn("cannot list unused workspace volumes: %s", err);
    else
        c->pending_ops++; /* a graceful stop waits for the listing and its removals */
    if (now >= 0) /* kept workspaces whose removal failed when their session ended or resumed */
        removal_sweep_kept(c);
}

void removal_sweep_kept(rb_core *c)
{
    workspace_sweep(c, kept_wanted_now);
}

int removal_retry_all(rb_core *c)
{
    rb_map todo = c->removals;
    map_init(&c->removals); /* removals failing again are kept anew */
    size_t pos = 0;
    struct removal *r;
    int n = 0;
    while ((r = map_next(&todo, &pos)) != NULL) {
        start(c, r->id, r->missing_tries, 0);
        free(r);
        n++;
    }
    map_dispose(&todo);
    return n;
}

void removal_drop_all(rb_core *c)
{
    size_t pos = 0;
    struct removal *r;
    while ((r = map_next(&c->removals, &pos)) != NULL)
        free(r);
    map_dispose(&c->removals);
}

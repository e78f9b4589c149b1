/*
 * removal.c: removing containers, and trying again when the engine did not answer. A container
 * whose removal failed waits in c->removals (at most REMOVALS_PENDING_MAX; beyond, the next
 * start's recovery finds it) and is tried again after the next successful probe of the engine
 * (recovery.c). Not here: deciding which containers go (session.c, sandbox.c, recovery.c).
 */
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"

/* Removals to retry at most; beyond, a container is left for the next start's recovery. */
#define REMOVALS_PENDING_MAX 4096

/* A container to remove (by id or name): in flight, or waiting in c->removals for the next
 * retry (removal_retry_all). */
struct removal {
    rb_core *c;
    int missing_tries; /* retries left in which "no such container" is taken for "not there yet" */
    char id[];
};

/* Keeps r (owned from here) for the next retry. */
static void remove_later(struct removal *r)
{
    rb_core *c = r->c;
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
    free(r);
}

void removal_start(rb_core *c, const char *id, int missing_tries)
{
    size_t n = strlen(id);
    struct removal *r = xmalloc(sizeof(*r) + n + 1);
    r->c = c;
    r->missing_tries = missing_tries;
    memcpy(r->id, id, n + 1);
    char err[RB_ERR_LEN];
    rb_err e = backend_remove(c->be, r->id, removed_cb, r, err);
    if (e != RB_OK) {
        if (e != RB_ECANCELED && e != RB_EINVAL && !c->closing) {
            rb_warn("container %.12s: could not remove it (will try again once Docker answers): %s", r->id, err);
            remove_later(r);
        } else {
            free(r);
        }
        return;
    }
    c->pending_ops++;
}

int removal_retry_all(rb_core *c)
{
    rb_map todo = c->removals;
    map_init(&c->removals); /* removals failing again are kept anew */
    size_t pos = 0;
    struct removal *r;
    int n = 0;
    while ((r = map_next(&todo, &pos)) != NULL) {
        removal_start(c, r->id, r->missing_tries);
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

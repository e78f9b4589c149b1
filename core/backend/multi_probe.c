/*
 * multi_probe.c: the backend over several engines asks every engine at once: the probe
 * (each engine's ping, then whether it has the sandbox image and with which id: an engine whose
 * image differs from the first engine that has it is left out, with the command that loads it)
 * and the listing of what was placed on each (ids pinned to their engine); and the runtimes the
 * engines offer together.
 */
#include "core/backend/multi_private.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the probe ------------------------------------------------------------------------------ */

typedef struct probe {
    multi *m;
    backend_ping_cb cb;
    void *data;
    size_t pending;
} probe;

typedef struct engine_probe {
    probe *p;
    engine *e;
    int have_image;
    char image_id[IMAGE_ID_MAX];
} engine_probe;

static engine_probe *probes_of(probe *p); /* the per-engine part follows the probe in memory */

static void probe_finish(probe *p)
{
    multi *m = p->m;
    engine_probe *ep = probes_of(p);
    const char *ref = NULL, *ref_engine = NULL, *version = NULL;
    int cancelled = 0;
    for (size_t i = 0; i < m->n; i++) {
        if (ep[i].have_image && ref == NULL) {
            ref = ep[i].image_id;
            ref_engine = m->e[i].name;
        }
        if (ep[i].have_image < 0)
            cancelled = 1;
    }
    size_t up = 0;
    char down[RB_ERR_LEN] = "";
    size_t off = 0;
    for (size_t i = 0; i < m->n; i++) {
        engine *e = &m->e[i];
        if (!e->up) {
            int w = snprintf(down + off, sizeof(down) - off, "%s%s: %.150s", off ? "; " : "", e->name, e->error);
            if (w > 0 && (size_t)w < sizeof(down) - off)
                off += (size_t)w;
            continue;
        }
        up++;
        if (version == NULL)
            version = e->version;
        if (!ep[i].have_image) {
            e->image_ok = 0;
            snprintf(e->error, sizeof(e->error),
                     "it has no image %.100s; load it there: docker save %.100s | docker -H %.100s --tlsverify load",
                     m->image, m->image, e->url);
        } else if (strcmp(ep[i].image_id, ref) != 0) {
            e->image_ok = 0;
            snprintf(e->error, sizeof(e->error),
                     "its %.80s is %.24s, not %.24s as on %.32s; load the same image there: docker save %.80s | "
                     "docker -H %.80s --tlsverify load",
                     m->image, ep[i].image_id, ref, ref_engine, m->image, e->url);
        } else {
            e->image_ok = 1;
            e->error[0] = '\0';
        }
        snprintf(e->image_id, sizeof(e->image_id), "%s", ep[i].have_image ? ep[i].image_id : "");
    }
    if (cancelled)
        p->cb(p->data, RB_ECANCELED, "the Docker clients are shutting down", NULL);
    else if (up == 0)
        p->cb(p->data, RB_EUNAVAILABLE, down, NULL);
    else
        p->cb(p->data, RB_OK, NULL, version);
    free(p);
}

static void probe_done(engine_probe *ep)
{
    if (--ep->p->pending == 0)
        probe_finish(ep->p);
}

static void engine_image_cb(void *data, rb_err err, const char *errmsg, const char *id)
{
    engine_probe *ep = data;
    (void)errmsg;
    if (err == RB_OK) {
        ep->have_image = 1;
        snprintf(ep->image_id, sizeof(ep->image_id), "%s", id);
    } else if (err == RB_ECANCELED) {
        ep->have_image = -1;
    } else if (err != RB_ENOTFOUND) { /* the engine answered the ping, then not this */
        ep->e->up = 0;
        snprintf(ep->e->error, sizeof(ep->e->error), "%s", errmsg ? errmsg : "no answer about its image");
    }
    probe_done(ep);
}

static void engine_ping_cb(void *data, rb_err err, const char *errmsg, const char *version)
{
    engine_probe *ep = data;
    engine *e = ep->e;
    char msg[RB_ERR_LEN];
    e->pinged = 1;
    e->up = err == RB_OK;
    if (err != RB_OK) {
        if (err == RB_ECANCELED)
            ep->have_image = -1;
        snprintf(e->error, sizeof(e->error), "%s", errmsg ? errmsg : "no answer");
        probe_done(ep);
        return;
    }
    snprintf(e->version, sizeof(e->version), "%s", version);
    if (backend_image_id(e->be, e->m->image, engine_image_cb, ep, msg) != RB_OK) {
        e->up = 0;
        snprintf(e->error, sizeof(e->error), "%s", msg);
        probe_done(ep);
    }
}

static engine_probe *probes_of(probe *p)
{
    return (engine_probe *)(p + 1);
}

rb_err multi__ping(void *self, backend_ping_cb cb, void *data, char *err)
{
    multi *m = M(self);
    probe *p = xcalloc(1, sizeof(*p) + m->n * sizeof(engine_probe));
    p->m = m;
    p->cb = cb;
    p->data = data;
    p->pending = m->n + 1; /* held until every ping is started */
    engine_probe *ep = probes_of(p);
    for (size_t i = 0; i < m->n; i++) {
        ep[i].p = p;
        ep[i].e = &m->e[i];
        char e2[RB_ERR_LEN];
        if (backend_ping(m->e[i].be, engine_ping_cb, &ep[i], e2) != RB_OK) {
            m->e[i].pinged = 1;
            m->e[i].up = 0;
            snprintf(m->e[i].error, sizeof(m->e[i].error), "%s", e2);
            p->pending--;
        }
    }
    (void)err;
    if (--p->pending == 0)
        probe_finish(p);
    return RB_OK;
}

/* ---- listing: every engine's, ids pinned ---------------------------------------------------- */

typedef struct listing {
    multi *m;
    backend_list_cb cb;
    void *data;
    size_t pending;
    int instance; /* a listing of runboxd's own sandboxes: recounts each engine's */
    int networks;
    json_t *items; /* [{id, state, labels}] */
    rb_err err;
    char msg[RB_ERR_LEN];
} listing;

typedef struct engine_listing {
    listing *l;
    engine *e;
} engine_listing;

static void listing_finish(listing *l)
{
    size_t n = json_array_size(l->items);
    backend_sandbox_info *items = xcalloc(n + 1, sizeof(*items));
    for (size_t i = 0; i < n; i++) {
        json_t *it = json_array_get(l->items, i);
        items[i] = (backend_sandbox_info){json_string_value(json_object_get(it, "id")),
                                          json_string_value(json_object_get(it, "state")),
                                          json_object_get(it, "labels")};
    }
    if (l->err != RB_OK)
        l->cb(l->data, l->err, l->msg, NULL, 0);
    else
        l->cb(l->data, RB_OK, NULL, items, n);
    free(items);
    json_decref(l->items);
    free(l);
}

static void engine_listed_cb(void *data, rb_err err, const char *errmsg, const backend_sandbox_info *items, size_t n)
{
    engine_listing *el = data;
    listing *l = el->l;
    engine *e = el->e;
    free(el);
    if (err != RB_OK) {
        if (l->err == RB_OK || err == RB_ECANCELED) {
            l->err = err;
            snprintf(l->msg, sizeof(l->msg), "engine %s: %.400s", e->name, errmsg ? errmsg : "no answer");
        }
    } else {
        int counted = 0;
        for (size_t i = 0; i < n; i++) {
            /* only what runboxd placed on this engine (two names for one daemon list the same
             * containers; one made by a runboxd of one engine has no engine label: the first's) */
            const char *placed = json_string_value(json_object_get(items[i].labels, "runbox.engine"));
            if (!l->networks && (placed != NULL ? strcmp(placed, e->name) != 0 : e != &e->m->e[0]))
                continue;
            counted++;
            char *pid = multi__pin_name(e, items[i].id);
            json_t *it = json_pack("{s:s}", "id", pid);
            free(pid);
            if (items[i].state != NULL)
                json_object_set_new(it, "state", json_string(items[i].state));
            if (items[i].labels != NULL)
                json_object_set(it, "labels", items[i].labels);
            json_array_append_new(l->items, it);
        }
        if (l->instance)
            e->sandboxes = counted;
    }
    if (--l->pending == 0)
        listing_finish(l);
}

static rb_err list_all(multi *m, const char *label, int networks, backend_list_cb cb, void *data, char *err)
{
    listing *l = xcalloc(1, sizeof(*l));
    l->m = m;
    l->cb = cb;
    l->data = data;
    l->items = json_array();
    l->networks = networks;
    l->instance = !networks && strncmp(label, "runbox.instance=", 16) == 0;
    l->pending = m->n + 1;
    for (size_t i = 0; i < m->n; i++) {
        engine_listing *el = xcalloc(1, sizeof(*el));
        el->l = l;
        el->e = &m->e[i];
        char e2[RB_ERR_LEN];
        rb_err e = networks == 2 ? backend_volume_list_unused(m->e[i].be, label, engine_listed_cb, el, e2)
                   : networks ? backend_network_list(m->e[i].be, label, engine_listed_cb, el, e2)
                              : backend_list(m->e[i].be, label, engine_listed_cb, el, e2);
        if (e != RB_OK) {
            free(el);
            if (l->err == RB_OK) {
                l->err = e;
                snprintf(l->msg, sizeof(l->msg), "engine %s: %.400s", m->e[i].name, e2);
            }
            l->pending--;
        }
    }
    (void)err;
    if (--l->pending == 0)
        listing_finish(l);
    return RB_OK;
}

rb_err multi__list(void *self, const char *label, backend_list_cb cb, void *data, char *err)
{
    return list_all(M(self), label, 0, cb, data, err);
}

rb_err multi__network_list(void *self, const char *label, backend_list_cb cb, void *data, char *err)
{
    return list_all(M(self), label, 1, cb, data, err);
}

rb_err multi__volume_list_unused(void *self, const char *label, backend_list_cb cb, void *data, char *err)
{
    return list_all(M(self), label, 2, cb, data, err); /* 2: volumes, listed like networks */
}

/* ---- runtimes (the ops offers and runtimes) ------------------------------------------------------ */

int multi__offers(void *self, const char *runtime)
{
    multi *m = M(self);
    for (size_t i = 0; i < m->n; i++)
        if (backend_runtimes_has(m->e[i].runtimes, runtime))
            return 1;
    return 0;
}

json_t *multi__runtimes(void *self)
{
    multi *m = M(self);
    json_t *out = json_array();
    for (size_t i = 0; i < m->n; i++) {
        json_t *mine = backend_runtimes_json(m->e[i].runtimes), *name;
        size_t k, j;
        json_array_foreach(mine, k, name)
        {
            int seen = 0;
            json_t *have;
            json_array_foreach(out, j, have) seen |= json_equal(have, name);
            if (!seen)
                json_array_append(out, name);
        }
        json_decref(mine);
    }
    return out;
}

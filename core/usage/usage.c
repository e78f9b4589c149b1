/*
 * usage.c: the sessions' usage samples (core/usage/usage.h): the readings the sweep starts, the
 * ring each session keeps, and the answers of core_session_metrics and core_usage_latest
 * (core/core.h). A reading in flight is a probe that points at its session's track; a track
 * that goes (its session ended, or core_free) first unhooks its probe, which then frees itself
 * when the backend calls it back.
 */
#include "core/usage/usage.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

#include "base/clock.h"
#include "base/log.h"
#include "base/map.h"
#include "base/mem.h"
#include "core/usage/ring.h"

typedef struct probe probe;

/* A live session's samples and the state of its readings. */
typedef struct track {
    char session_id[RB_ID_LEN];
    char *container;   /* the sandbox the baseline was read from (heap); a new one starts a new baseline */
    usage_ring *ring;
    probe *inflight;   /* its reading in flight, or NULL */
    int64_t next_at;   /* when it is read next (epoch ms) */
    int fails;         /* readings that failed in a row */
    int have_base;     /* base_* hold the previous reading of container */
    int64_t base_cpu_ns;
    uint64_t base_at_ns; /* uv_hrtime of that reading */
    unsigned seen;     /* the sweep that last found its session live */
} track;

/* The room's state in the core (CORE_ROOM_USAGE). */
typedef struct room {
    rb_core *c;
    rb_map tracks; /* session id -> track */
    int inflight;  /* probes in flight, all tracks together */
    unsigned gen;  /* sweeps so far */
    int64_t now;   /* the running sweep's time */
} room;

struct probe {
    room *r;  /* NULL once the room is gone (core_free) */
    track *t; /* NULL once its track is gone */
};

static room *room_of(rb_core *c, int create)
{
    void **slot = core_heart_room(c, CORE_ROOM_USAGE);
    if (*slot == NULL && create) {
        room *r = xcalloc(1, sizeof(*r));
        r->c = c;
        map_init(&r->tracks);
        *slot = r;
    }
    return *slot;
}

static int64_t interval_ms(const room *r)
{
    return (int64_t)(core_heart_settings(r->c)->metrics_interval * 1000 + 0.5);
}

static void track_free(track *t)
{
    if (t->inflight != NULL)
        t->inflight->t = NULL;
    usage_ring_free(t->ring);
    free(t->container);
    free(t);
}

/* ---- readings ----------------------------------------------------------------------------- */

static void read_cb(void *data, rb_err err, const char *errmsg, const backend_usage *u)
{
    probe *p = data;
    room *r = p->r;
    track *t = p->t;
    free(p);
    if (r != NULL)
        r->inflight--;
    if (t == NULL)
        return; /* its session ended, or the core is going */
    t->inflight = NULL;
    if (err == RB_ECANCELED)
        return;
    if (err != RB_OK) {
        /* read again later and later: an engine that fails is not asked more often than it answers */
        int64_t k = (int64_t)1 << (t->fails < 4 ? t->fails + 1 : 4);
        t->fails++;
        t->next_at = rb_now_ms() + interval_ms(r) * (k < USAGE_BACKOFF_MAX ? k : USAGE_BACKOFF_MAX);
        rb_debug("session %s: usage not read (%d in a row): %s", t->session_id, t->fails, errmsg);
        return;
    }
    t->fails = 0;
    uint64_t at_ns = uv_hrtime();
    if (t->have_base && u->cpu_ns >= t->base_cpu_ns && at_ns > t->base_at_ns) {
        usage_sample s = {rb_now_ms(),
                          100.0 * (double)(u->cpu_ns - t->base_cpu_ns) / (double)(at_ns - t->base_at_ns),
                          u->mem_bytes,
                          u->mem_cache_bytes,
                          u->shmem_bytes,
                          u->mem_limit_bytes,
                          u->pids,
                          u->net_rx_bytes,
                          u->net_tx_bytes};
        usage_ring_push(t->ring, &s);
    }
    t->have_base = 1; /* the first reading of a sandbox is only the baseline of the next */
    t->base_cpu_ns = u->cpu_ns;
    t->base_at_ns = at_ns;
}

/* Starts a reading of t's sandbox container. */
static void read_start(room *r, track *t, const char *container)
{
    char err[RB_ERR_LEN];
    int64_t every = interval_ms(r);
    /* a little early rather than one sweep late: the sweep runs once a second */
    t->next_at = r->now + (every > 1000 ? every - 250 : every / 2);
    probe *p = xcalloc(1, sizeof(*p));
    p->r = r;
    p->t = t;
    if (backend_usage_read(core_heart_backend(r->c), container, read_cb, p, err) != RB_OK) {
        free(p);
        t->fails++;
        rb_debug("session %s: usage not read: %s", t->session_id, err);
        return;
    }
    t->inflight = p;
    r->inflight++;
}

/* The sweep's visit of one live session. */
static void visit(void *data, const core_session_view *v)
{
    room *r = data;
    int running = (strcmp(v->status, "ready") == 0 || strcmp(v->status, "busy") == 0) && v->container_id != NULL;
    track *t = map_get(&r->tracks, v->id);
    if (t == NULL) {
        if (!running)
            return;
        t = xcalloc(1, sizeof(*t));
        snprintf(t->session_id, sizeof(t->session_id), "%s", v->id);
        t->ring = usage_ring_new(USAGE_RING_SAMPLES);
        map_put(&r->tracks, t->session_id, t);
    }
    t->seen = r->gen;
    if (!running || t->inflight != NULL || r->now < t->next_at || r->inflight >= USAGE_INFLIGHT_MAX)
        return;
    if (t->container == NULL || strcmp(t->container, v->container_id) != 0) {
        free(t->container);
        t->container = xstrdup(v->container_id);
        t->have_base = 0;
    }
    read_start(r, t, v->container_id);
}

void usage_sweep(rb_core *c, int64_t now)
{
    room *r = room_of(c, 1);
    r->gen++;
    r->now = now;
    if (!core_heart_engine_ok(c, NULL)) { /* nothing is read while the engine does not answer */
        size_t pos = 0;
        track *t;
        while ((t = map_next(&r->tracks, &pos)) != NULL)
            t->seen = r->gen;
        return;
    }
    core_heart_each(c, visit, r);
    size_t pos = 0;
    track *t;
    while ((t = map_next(&r->tracks, &pos)) != NULL)
        if (t->seen != r->gen) { /* its session is no longer live */
            map_del(&r->tracks, t->session_id);
            track_free(t);
        }
}

void usage_forget(rb_core *c, const char *session_id)
{
    room *r = room_of(c, 0);
    track *t = r != NULL ? map_get(&r->tracks, session_id) : NULL;
    if (t == NULL)
        return;
    map_del(&r->tracks, session_id);
    track_free(t);
}

void usage_dispose(rb_core *c)
{
    room *r = room_of(c, 0);
    if (r == NULL)
        return;
    size_t pos = 0;
    track *t;
    while ((t = map_next(&r->tracks, &pos)) != NULL) {
        if (t->inflight != NULL)
            t->inflight->r = NULL;
        track_free(t);
    }
    map_dispose(&r->tracks);
    free(r);
    *core_heart_room(c, CORE_ROOM_USAGE) = NULL;
}

/* ---- answers ------------------------------------------------------------------------------ */

static json_t *sample_json(const usage_sample *s)
{
    json_t *o = json_object();
    core_json_time(o, "timestamp", s->at_ms);
    json_object_set_new(o, "cpu_pct", json_real(round(s->cpu_pct * 100) / 100));
    json_object_set_new(o, "mem_bytes", json_integer(s->mem_bytes));
    json_object_set_new(o, "mem_cache_bytes", json_integer(s->mem_cache_bytes));
    json_object_set_new(o, "files_bytes", json_integer(s->files_bytes));
    json_object_set_new(o, "mem_limit_bytes", json_integer(s->mem_limit_bytes));
    json_object_set_new(o, "pids", json_integer(s->pids));
    json_object_set_new(o, "net_rx_bytes", json_integer(s->net_rx_bytes));
    json_object_set_new(o, "net_tx_bytes", json_integer(s->net_tx_bytes));
    return o;
}

rb_err core_session_metrics(rb_core *c, const core_caller *who, const char *session_id, int64_t since_ms,
                            int64_t until_ms, json_t **out, char *err)
{
    core_session_view v;
    *out = NULL;
    rb_err e = core_heart_lookup(c, who, session_id, &v, err);
    if (e != RB_OK)
        return e;
    room *r = room_of(c, 1);
    track *t = map_get(&r->tracks, v.id);
    json_t *samples = json_array();
    for (size_t i = 0; t != NULL && i < usage_ring_count(t->ring); i++) {
        const usage_sample *s = usage_ring_at(t->ring, i);
        if ((since_ms <= 0 || s->at_ms >= since_ms) && (until_ms <= 0 || s->at_ms <= until_ms))
            json_array_append_new(samples, sample_json(s));
    }
    *out = json_pack("{s:s, s:I, s:f, s:I, s:o}", "session_id", v.id, "interval_ms", (json_int_t)interval_ms(r),
                     "cpu_limit", v.cpus, "workspace_limit_bytes", (json_int_t)v.workspace_bytes, "samples", samples);
    return RB_OK;
}

static int by_memory(const void *a, const void *b)
{
    const usage_sample *x = usage_ring_last((*(track *const *)a)->ring);
    const usage_sample *y = usage_ring_last((*(track *const *)b)->ring);
    return x->mem_bytes < y->mem_bytes ? 1 : x->mem_bytes > y->mem_bytes ? -1 : 0;
}

json_t *core_usage_latest(rb_core *c, const core_caller *who, size_t max, size_t *sampled)
{
    room *r = room_of(c, 0);
    json_t *out = json_array();
    *sampled = 0;
    if (r == NULL)
        return out;
    track **all = xcalloc(r->tracks.len + 1, sizeof(*all));
    size_t n = 0, pos = 0;
    track *t;
    core_session_view v;
    char err[RB_ERR_LEN];
    /* another key's session is unknown to a user key, here as on every route */
    while ((t = map_next(&r->tracks, &pos)) != NULL)
        if (usage_ring_count(t->ring) > 0 && core_heart_lookup(c, who, t->session_id, &v, err) == RB_OK)
            all[n++] = t;
    qsort(all, n, sizeof(*all), by_memory);
    for (size_t i = 0; i < n && i < max; i++) {
        json_t *o = sample_json(usage_ring_last(all[i]->ring));
        json_object_set_new(o, "session_id", json_string(all[i]->session_id));
        json_array_append_new(out, o);
    }
    *sampled = n;
    free(all);
    return out;
}

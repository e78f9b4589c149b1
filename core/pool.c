/*
 * pool.c: warm sandboxes (core/pool.h). Each profile keeps a list of entries; an entry owns
 * one sandbox from sandbox_create_pooled and is either starting or ready. Claiming hands the
 * sandbox to a session and frees the entry; a failed start or a dead runner drops the entry.
 * Refills run on the loop as async Docker calls, at most FILL_PARALLEL starts at once, with an
 * exponential back-off after failures so a missing image or a stopped Docker is not hammered.
 * The default python profile's size follows demand (core/pool_demand.h): each claim attempt
 * counts in a decaying rate of creates, each refill's time from create to ready in a moving
 * average, and a tick every TICK_MS recomputes the target, refills up to it and removes ready
 * sandboxes beyond it. Warm sandboxes start at cfg->pool_cpu_shares and are raised to
 * SESSION_CPU_SHARES when claimed, so refills yield the CPU to sessions' cells.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/isolation/isolation.h"
#include "core/pool.h"
#include "core/pool_demand.h"

#define FILL_PARALLEL 2
#define BACKOFF_MIN_MS 1000
#define BACKOFF_MAX_MS 60000
#define TICK_MS 2000                        /* how often the target is recomputed */
#define RATE_TAU_MS 30000                   /* the rate of creates forgets over about this */
#define IDLE_AFTER_MS 60000                 /* no create this long: back to --pool-size */
#define WARM_BYTES ((int64_t)128 << 20)     /* what a warm python sandbox holds (preload: ~100 MiB) */
#define RESERVE_BYTES ((int64_t)1 << 30)    /* memory the pool never takes, for sessions */
#define SESSION_CPU_SHARES 1024             /* a claimed sandbox's CPU weight, as any session's */

typedef struct entry entry;
typedef struct profile profile;

struct entry {
    pool *p;
    profile *prof;
    sandbox *sb;
    int ready;
    uint64_t started_ms;
    entry *next;
};

struct profile {
    const char *language;
    const char *isolation; /* core/isolation/ */
    int size;                 /* the configured minimum */
    int dynamic;              /* its target follows demand (the default python profile) */
    int target;               /* what it keeps now (size when not dynamic) */
    pool_demand_reason why;
    double rate;              /* creates per second, decaying (pool_demand_rate) */
    uint64_t rate_ms, last_create_ms;
    double refill_s;          /* moving average of a refill's create-to-ready time */
    int ready, starting;
    entry *head;
};

struct pool {
    rb_core *c;
    profile prof[3];
    int started, stopped;
    int64_t hits, misses;
    uv_timer_t *retry;    /* back-off before the next fill after a failure */
    uv_timer_t *tick;     /* recomputes the targets (retarget) */
    uint64_t backoff_ms;
};

static void fill(pool *p);
static void unlink_entry(entry *e);

/* Bytes of memory available on this host (MemAvailable), or -1. Read on the loop: a procfs
 * file answers at once. */
static int64_t mem_available(void)
{
    FILE *f = fopen("/proc/meminfo", "r");
    if (f == NULL)
        return -1;
    char line[128];
    int64_t kib = -1;
    while (fgets(line, sizeof(line), f) != NULL)
        if (sscanf(line, "MemAvailable: %" SCNd64 " kB", &kib) == 1)
            break;
    fclose(f);
    return kib < 0 ? -1 : kib * 1024;
}

/* Recomputes each dynamic profile's target and removes ready sandboxes beyond it. */
static void retarget(pool *p)
{
    uint64_t now = uv_now(p->c->loop);
    for (size_t i = 0; i < sizeof(p->prof) / sizeof(p->prof[0]); i++) {
        profile *prof = &p->prof[i];
        if (!prof->dynamic)
            continue;
        prof->rate = pool_demand_rate(prof->rate, (int64_t)(now - prof->rate_ms), 0, RATE_TAU_MS);
        prof->rate_ms = now;
        /* The memory left is this host's: right for the local engine; with several engines
         * (backend_engines) it says nothing of theirs, and only --pool-max bounds the pool. */
        json_t *engines = backend_engines(p->c->be);
        int64_t avail = engines == NULL ? mem_available() : -1;
        json_decref(engines);
        pool_demand_in in = {.min = prof->size, .max = p->c->cfg->pool_max, .rate_per_s = prof->rate,
                             .refill_s = prof->refill_s, .idle_ms = (int64_t)(now - prof->last_create_ms),
                             .idle_after_ms = IDLE_AFTER_MS,
                             .memory_cap = pool_demand_memory_cap(avail, RESERVE_BYTES, WARM_BYTES,
                                                                  prof->ready + prof->starting)};
        prof->target = pool_demand_target(&in, &prof->why);
        for (entry *e = prof->head, *next; e != NULL && prof->ready + prof->starting > prof->target; e = next) {
            next = e->next;
            if (!e->ready)
                continue;
            unlink_entry(e);
            sandbox_close(e->sb, 1);
            free(e);
        }
    }
}

static void tick_cb(uv_timer_t *t)
{
    pool *p = t->data;
    retarget(p);
    fill(p);
}

static void timer_close_cb(uv_handle_t *h)
{
    free(h);
}

static void unlink_entry(entry *e)
{
    for (entry **pp = &e->prof->head; *pp != NULL; pp = &(*pp)->next) {
        if (*pp == e) {
            *pp = e->next;
            break;
        }
    }
    if (e->ready)
        e->prof->ready--;
    else
        e->prof->starting--;
}

static void retry_cb(uv_timer_t *t)
{
    fill(t->data);
}

static void schedule_retry(pool *p)
{
    if (p->stopped || uv_is_active((uv_handle_t *)p->retry))
        return;
    p->backoff_ms = p->backoff_ms == 0 ? BACKOFF_MIN_MS : p->backoff_ms * 2;
    if (p->backoff_ms > BACKOFF_MAX_MS)
        p->backoff_ms = BACKOFF_MAX_MS;
    uv_timer_start(p->retry, retry_cb, p->backoff_ms, 0);
}

static void entry_cb(void *data, sandbox *sb, rb_err err, const char *msg)
{
    entry *e = data;
    pool *p = e->p;
    if (err == RB_OK) {
        e->prof->starting--;
        e->prof->ready++;
        e->ready = 1;
        p->backoff_ms = 0;
        double took = (double)(uv_now(p->c->loop) - e->started_ms) / 1000.0;
        e->prof->refill_s = 0.7 * e->prof->refill_s + 0.3 * took;
        rb_debug("pool: warm %s sandbox ready (%s, container %.12s)", e->prof->language, e->prof->isolation,
                 sandbox_container_id(sb));
        return;
    }
    int was_ready = e->ready;
    unlink_entry(e);
    free(e);
    sandbox_close(sb, 1);
    rb_warn("pool: %s", msg);
    if (was_ready)
        fill(p); /* a runner died: replace it at once */
    else
        schedule_retry(p);
}

static int total_starting(const pool *p)
{
    int n = 0;
    for (size_t i = 0; i < sizeof(p->prof) / sizeof(p->prof[0]); i++)
        n += p->prof[i].starting;
    return n;
}

static void fill(pool *p)
{
    char err[RB_ERR_LEN];
    if (!p->started || p->stopped || uv_is_active((uv_handle_t *)p->retry))
        return;
    for (size_t i = 0; i < sizeof(p->prof) / sizeof(p->prof[0]); i++) {
        profile *prof = &p->prof[i];
        while (prof->ready + prof->starting < prof->target && total_starting(p) < FILL_PARALLEL) {
            entry *e = xcalloc(1, sizeof(*e));
            e->p = p;
            e->prof = prof;
            e->started_ms = uv_now(p->c->loop);
            if (sandbox_create_pooled(p->c, prof->language, prof->isolation, entry_cb, e, &e->sb, err) != RB_OK) {
                rb_warn("pool: cannot start a warm %s sandbox (%s): %s", prof->language, prof->isolation, err);
                free(e);
                schedule_retry(p);
                return;
            }
            e->next = prof->head;
            prof->head = e;
            prof->starting++;
        }
    }
}

pool *pool_new(rb_core *c)
{
    pool *p = xcalloc(1, sizeof(*p));
    p->c = c;
    const char *dflt = c->cfg->isolation, *other = strcmp(dflt, "gvisor") == 0 ? "container" : "gvisor";
    p->prof[0] = (profile){.language = "python", .isolation = dflt, .size = c->cfg->pool_size};
    p->prof[1] = (profile){.language = "bash", .isolation = dflt, .size = c->cfg->pool_bash_size};
    /* the other isolation's, only where some engine offers it */
    p->prof[2] = (profile){.language = "python", .isolation = other, .size = c->cfg->pool_other_size};
    if (!backend_offers(c->be, isolation_runtime(other, c->cfg->gvisor_runtime)))
        p->prof[2].size = 0;
    p->prof[0].dynamic = p->prof[0].size > 0;
    for (size_t i = 0; i < sizeof(p->prof) / sizeof(p->prof[0]); i++) {
        p->prof[i].target = p->prof[i].size;
        p->prof[i].refill_s = 1.0;
    }
    p->retry = xmalloc(sizeof(*p->retry));
    uv_timer_init(c->loop, p->retry);
    p->retry->data = p;
    p->tick = xmalloc(sizeof(*p->tick));
    uv_timer_init(c->loop, p->tick);
    p->tick->data = p;
    return p;
}

void pool_start(pool *p)
{
    if (p->started || p->stopped)
        return;
    p->started = 1;
    if (p->prof[0].dynamic) {
        p->prof[0].last_create_ms = p->prof[0].rate_ms = uv_now(p->c->loop);
        uv_timer_start(p->tick, tick_cb, TICK_MS, TICK_MS);
        uv_unref((uv_handle_t *)p->tick);
    }
    fill(p);
}

void pool_stop(pool *p)
{
    if (p->stopped)
        return;
    p->stopped = 1;
    uv_timer_stop(p->retry);
    uv_timer_stop(p->tick);
    /* Every entry goes now, ready or not: a container that exists is removed at once, one whose
     * create is still in flight when the create answers (sandbox.c; core_pending counts both).
     * Waiting for a start to finish first would only delay the removal. */
    for (size_t i = 0; i < sizeof(p->prof) / sizeof(p->prof[0]); i++) {
        entry *e = p->prof[i].head;
        while (e != NULL) {
            entry *next = e->next;
            unlink_entry(e);
            sandbox_close(e->sb, 1);
            free(e);
            e = next;
        }
    }
}

void pool_free(pool *p)
{
    if (p == NULL)
        return;
    for (size_t i = 0; i < sizeof(p->prof) / sizeof(p->prof[0]); i++) {
        entry *e = p->prof[i].head;
        while (e != NULL) {
            entry *next = e->next;
            sandbox_close(e->sb, 0);
            free(e);
            e = next;
        }
        p->prof[i].head = NULL;
    }
    uv_timer_stop(p->retry);
    uv_close((uv_handle_t *)p->retry, timer_close_cb);
    uv_timer_stop(p->tick);
    uv_close((uv_handle_t *)p->tick, timer_close_cb);
    free(p);
}

/* The profile a new session fits, or NULL when it asks for anything but the defaults. */
static profile *profile_for(pool *p, const session *s)
{
    const core_settings *cfg = p->c->cfg;
    if (s->memory_bytes != core_default_memory(p->c) || s->cpus != cfg->cpus || s->custom_sandbox)
        return NULL;
    if (s->custom_sandbox) /* pids, tmpfs sizes or network differ from the defaults (parse_sandbox_limits) */
        return NULL;
    if (json_object_size(json_object_get(s->options, "environment_variables")) != 0)
        return NULL;
    for (size_t i = 0; i < sizeof(p->prof) / sizeof(p->prof[0]); i++)
        if (strcmp(p->prof[i].language, s->language) == 0 && strcmp(p->prof[i].isolation, s->isolation) == 0)
            return p->prof[i].size > 0 ? &p->prof[i] : NULL;
    return NULL;
}

static void shares_cb(void *data, rb_err err, const char *errmsg)
{
    (void)data;
    if (err != RB_OK && err != RB_ECANCELED && err != RB_ENOTFOUND)
        rb_warn("pool: a claimed sandbox keeps the warm pool's CPU weight: %s", errmsg ? errmsg : rb_strerror(err));
}

/* The claimed sandbox's CPU weight becomes a session's (it started low: sandbox_create_pooled). */
static void raise_shares(pool *p, sandbox *sb)
{
    char err[RB_ERR_LEN];
    const char *id = sandbox_container_id(sb);
    if (p->c->cfg->pool_cpu_shares <= 0 || id == NULL)
        return;
    if (backend_cpu_shares(p->c->be, id, SESSION_CPU_SHARES, shares_cb, NULL, err) != RB_OK)
        rb_warn("pool: a claimed sandbox keeps the warm pool's CPU weight: %s", err);
}

int pool_claim(pool *p, session *s, sandbox_ready_cb cb)
{
    char err[RB_ERR_LEN];
    profile *prof = p->stopped ? NULL : profile_for(p, s);
    if (prof == NULL)
        return 0;
    if (prof->dynamic) {
        uint64_t now = uv_now(p->c->loop);
        prof->rate = pool_demand_rate(prof->rate, (int64_t)(now - prof->rate_ms), 1, RATE_TAU_MS);
        prof->rate_ms = prof->last_create_ms = now;
        retarget(p);
    }
    entry *e = prof->head;
    while (e != NULL) {
        entry *next = e->next;
        if (e->ready) {
            unlink_entry(e);
            sandbox *sb = e->sb;
            free(e);
            if (sandbox_claim(sb, s, cb, err) == RB_OK) {
                raise_shares(p, sb);
                p->hits++;
                fill(p);
                return 1;
            }
            rb_warn("pool: dropping a warm sandbox: %s", err);
            sandbox_close(sb, 1);
        }
        e = next;
    }
    p->misses++;
    fill(p);
    return 0;
}

int pool_owns(const pool *p, const char *container_id)
{
    for (size_t i = 0; i < sizeof(p->prof) / sizeof(p->prof[0]); i++)
        for (const entry *e = p->prof[i].head; e != NULL; e = e->next) {
            const char *id = sandbox_container_id(e->sb);
            if (id != NULL && strcmp(id, container_id) == 0)
                return 1;
        }
    return 0;
}

json_t *pool_health(const pool *p)
{
    int size = 0, ready = 0, starting = 0, target = 0;
    json_t *profiles = json_array();
    for (size_t i = 0; i < sizeof(p->prof) / sizeof(p->prof[0]); i++) {
        const profile *pr = &p->prof[i];
        size += pr->size;
        target += pr->target;
        ready += pr->ready;
        starting += pr->starting;
        if (pr->size > 0)
            json_array_append_new(profiles, json_pack("{s:s, s:s, s:i, s:i, s:s, s:i, s:i}", "language",
                                                      pr->language, "isolation", pr->isolation, "size", pr->size,
                                                      "target", pr->target, "reason",
                                                      pool_demand_reason_name(pr->why), "ready", pr->ready,
                                                      "starting", pr->starting));
    }
    /* the reason of the profile that follows demand (the default python one) */
    return json_pack("{s:i, s:i, s:s, s:i, s:i, s:I, s:I, s:f, s:o}", "size", size, "target", target, "reason",
                     pool_demand_reason_name(p->prof[0].why), "ready", ready, "starting", starting, "hits",
                     (json_int_t)p->hits, "misses", (json_int_t)p->misses, "rate_per_min",
                     p->prof[0].rate * 60.0, "profiles", profiles);
}

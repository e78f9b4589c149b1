/*
 * pool.c: warm sandboxes (core/pool.h). Each profile keeps a list of entries; an entry owns
 * one sandbox from sandbox_create_pooled and is either starting or ready. Claiming hands the
 * sandbox to a session and frees the entry; a failed start or a dead runner drops the entry.
 * Refills run on the loop as async Docker calls, at most FILL_PARALLEL starts at once, with an
 * exponential back-off after failures so a missing image or a stopped Docker is not hammered.
 */
#include <stdlib.h>
#include <string.h>

#include "core/isolation/isolation.h"
#include "core/pool.h"

#define FILL_PARALLEL 2
#define BACKOFF_MIN_MS 1000
#define BACKOFF_MAX_MS 60000

typedef struct entry entry;
typedef struct profile profile;

struct entry {
    pool *p;
    profile *prof;
    sandbox *sb;
    int ready;
    entry *next;
};

struct profile {
    const char *language;
    const char *isolation; /* core/isolation/ */
    int size;
    int ready, starting;
    entry *head;
};

struct pool {
    rb_core *c;
    profile prof[3];
    int started, stopped;
    int64_t hits, misses;
    uv_timer_t *retry;    /* back-off before the next fill after a failure */
    uint64_t backoff_ms;
};

static void fill(pool *p);

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
        while (prof->ready + prof->starting < prof->size && total_starting(p) < FILL_PARALLEL) {
            entry *e = xcalloc(1, sizeof(*e));
            e->p = p;
            e->prof = prof;
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
    p->retry = xmalloc(sizeof(*p->retry));
    uv_timer_init(c->loop, p->retry);
    p->retry->data = p;
    return p;
}

void pool_start(pool *p)
{
    if (p->started || p->stopped)
        return;
    p->started = 1;
    fill(p);
}

void pool_stop(pool *p)
{
    if (p->stopped)
        return;
    p->stopped = 1;
    uv_timer_stop(p->retry);
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

int pool_claim(pool *p, session *s, sandbox_ready_cb cb)
{
    char err[RB_ERR_LEN];
    profile *prof = p->stopped ? NULL : profile_for(p, s);
    if (prof == NULL)
        return 0;
    entry *e = prof->head;
    while (e != NULL) {
        entry *next = e->next;
        if (e->ready) {
            unlink_entry(e);
            sandbox *sb = e->sb;
            free(e);
            if (sandbox_claim(sb, s, cb, err) == RB_OK) {
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
    int size = 0, ready = 0, starting = 0;
    json_t *profiles = json_array();
    for (size_t i = 0; i < sizeof(p->prof) / sizeof(p->prof[0]); i++) {
        const profile *pr = &p->prof[i];
        size += pr->size;
        ready += pr->ready;
        starting += pr->starting;
        if (pr->size > 0)
            json_array_append_new(profiles, json_pack("{s:s, s:s, s:i, s:i, s:i}", "language", pr->language,
                                                      "isolation", pr->isolation, "size", pr->size, "ready",
                                                      pr->ready, "starting", pr->starting));
    }
    return json_pack("{s:i, s:i, s:i, s:I, s:I, s:o}", "size", size, "ready", ready, "starting", starting, "hits",
                     (json_int_t)p->hits, "misses", (json_int_t)p->misses, "profiles", profiles);
}

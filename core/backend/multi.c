/*
 * multi.c: the sandbox backend over several Docker engines (core/backend/multi.h):
 * engine names in ids and names ("ENGINE@ID"), placement, the calls routed to the engine a name
 * points at, the engines' state and drain, and construction; the probe and the listing of every
 * engine are in multi_probe.c. Each engine is a backend_docker; this file holds no
 * Engine API and no runbox policy.
 */
#include "core/backend/multi_private.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- names ------------------------------------------------------------------------------ */

static int name_ok(const char *s, size_t n)
{
    if (n == 0 || n > ENGINE_NAME_MAX)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '_' || s[i] == '-'))
            return 0;
    return 1;
}

/* The engine a pinned name or id points at, and (in *rest) the engine's own name for it; NULL
 * when ref names no engine (then *rest is ref). */
static engine *pinned(multi *m, const char *ref, const char **rest)
{
    *rest = ref;
    const char *at = ref != NULL ? strchr(ref, '@') : NULL;
    if (at == NULL)
        return NULL;
    for (size_t i = 0; i < m->n; i++)
        if (strlen(m->e[i].name) == (size_t)(at - ref) && strncmp(ref, m->e[i].name, (size_t)(at - ref)) == 0) {
            *rest = at + 1;
            return &m->e[i];
        }
    return NULL;
}

/* The engine of a sandbox id: its pin, or the first engine for an id stored by a runboxd of one
 * engine. NULL (with err) for a pin naming no configured engine. */
static engine *engine_of(multi *m, const char *id, const char **raw, char *err)
{
    engine *e = pinned(m, id, raw);
    if (e != NULL)
        return e;
    if (id != NULL && strchr(id, '@') != NULL) {
        rb_fail(RB_ENOTFOUND, err, "'%.100s' is on an engine runboxd is not configured with (--engine)", id);
        return NULL;
    }
    return &m->e[0];
}

char *multi__pin_name(const engine *e, const char *raw)
{
    return xasprintf("%s@%s", e->name, raw);
}

/* ---- placement ---------------------------------------------------------------------------- */

/* Why e cannot take a new sandbox (of the runtime runtime, NULL: its default), or NULL. */
static const char *left_out(const engine *e, const char *runtime)
{
    if (!backend_runtimes_has(e->runtimes, runtime))
        return "does not offer the runtime";
    if (e->pinged && !e->up)
        return "does not answer";
    if (e->image_ok == 0)
        return "lacks the sandbox image";
    if (e->draining)
        return "is drained";
    if (e->sandboxes >= e->capacity)
        return "is full";
    return NULL;
}

/* The least loaded engine that can take a sandbox of runtime (NULL: the default); NULL with the
 * reasons in err. */
static engine *place(multi *m, const char *runtime, char *err)
{
    engine *best = NULL;
    for (size_t i = 0; i < m->n; i++) {
        engine *e = &m->e[i];
        if (left_out(e, runtime) != NULL)
            continue;
        /* e->sandboxes / e->capacity < best->sandboxes / best->capacity, without division */
        if (best == NULL || (long long)e->sandboxes * best->capacity < (long long)best->sandboxes * e->capacity)
            best = e;
    }
    if (best != NULL)
        return best;
    char why[RB_ERR_LEN] = "";
    size_t off = 0;
    for (size_t i = 0; i < m->n && off < sizeof(why) - 1; i++) {
        const engine *e = &m->e[i];
        int w = snprintf(why + off, sizeof(why) - off, "%s%s %s%s%.120s%s", i ? "; " : "", e->name,
                         left_out(e, runtime), e->error[0] ? " (" : "", e->error, e->error[0] ? ")" : "");
        if (w < 0)
            break;
        off += (size_t)w;
    }
    if (runtime != NULL)
        rb_fail(RB_EUNAVAILABLE, err, "no Docker engine can take a new sandbox of the runtime %.64s: %s", runtime, why);
    else
        rb_fail(RB_EUNAVAILABLE, err, "no Docker engine can take a new sandbox: %s", why);
    return NULL;
}

/* The engine a new sandbox or helper goes to: where its name, its network or one of its volumes
 * is pinned, else the least loaded. */
static engine *engine_for_spec(multi *m, const char *name, const backend_spec *spec, char *err)
{
    const char *raw;
    engine *e = pinned(m, name, &raw);
    if (e == NULL && spec != NULL)
        e = pinned(m, spec->network, &raw);
    for (size_t i = 0; e == NULL && spec != NULL && i < spec->n_volumes; i++)
        e = pinned(m, spec->volumes[i].name, &raw);
    return e != NULL ? e : place(m, spec != NULL ? spec->runtime : NULL, err);
}

/* spec with its pins taken off and a label naming engine e, into *copy (volumes into vols[max],
 * labels into labels[max]). */
static rb_err unpinned_spec(multi *m, const engine *e, const backend_spec *spec, backend_spec *copy,
                            backend_volume *vols, backend_label *labels, size_t max, char *err)
{
    const char *raw;
    *copy = *spec;
    if (spec->n_labels + 1 > max)
        return rb_fail(RB_EINVAL, err, "a sandbox may carry at most %zu labels", max - 1);
    for (size_t i = 0; i < spec->n_labels; i++)
        labels[i] = spec->labels[i];
    labels[spec->n_labels] = (backend_label){"runbox.engine", e->name};
    copy->labels = labels;
    copy->n_labels = spec->n_labels + 1;
    if (spec->network != NULL) {
        pinned(m, spec->network, &raw);
        copy->network = raw;
    }
    if (spec->n_volumes > max)
        return rb_fail(RB_EINVAL, err, "a sandbox may mount at most %zu volumes", max);
    for (size_t i = 0; i < spec->n_volumes; i++) {
        vols[i] = spec->volumes[i];
        if (vols[i].name != NULL) {
            pinned(m, vols[i].name, &raw);
            vols[i].name = raw;
        }
    }
    copy->volumes = spec->n_volumes > 0 ? vols : NULL;
    return RB_OK;
}

/* ---- calls that answer an id or a name: pinned on the way back ---------------------------- */

typedef struct mcall {
    engine *e;
    backend_create_cb created;
    backend_name_cb named;
    backend_cb done;
    void *data;
    int counts; /* a sandbox created: counted on its engine */
} mcall;

static mcall *mcall_new(engine *e, void *data)
{
    mcall *c = xcalloc(1, sizeof(*c));
    c->e = e;
    c->data = data;
    return c;
}

static void m_created_cb(void *data, rb_err err, const char *errmsg, const char *id)
{
    mcall *c = data;
    char *pid = err == RB_OK ? multi__pin_name(c->e, id) : NULL;
    if (err == RB_OK && c->counts)
        c->e->sandboxes++;
    c->created(c->data, err, errmsg, pid);
    free(pid);
    free(c);
}

static void m_named_cb(void *data, rb_err err, const char *errmsg, const char *name)
{
    mcall *c = data;
    char *pname = err == RB_OK ? multi__pin_name(c->e, name) : NULL;
    c->named(c->data, err, errmsg, pname);
    free(pname);
    free(c);
}

static void m_removed_cb(void *data, rb_err err, const char *errmsg)
{
    mcall *c = data;
    if ((err == RB_OK || err == RB_ENOTFOUND) && c->e->sandboxes > 0)
        c->e->sandboxes--;
    c->done(c->data, err, errmsg);
    free(c);
}

static rb_err started(mcall *c, rb_err e)
{
    if (e != RB_OK)
        free(c);
    return e;
}

/* ---- sandboxes -------------------------------------------------------------------------------- */

#define SPEC_VOLUMES_MAX 8

/* What a new sandbox or helper needs on its engine: the engine (*e), its spec without pins and
 * with the engine's label (*copy, over vols and labels) and its name without pin (*raw). */
typedef struct placed {
    engine *e;
    backend_spec copy;
    backend_volume vols[SPEC_VOLUMES_MAX];
    backend_label labels[SPEC_VOLUMES_MAX];
    const char *raw;
} placed;

static rb_err place_spec(multi *m, const char *name, const backend_spec *spec, placed *p, char *err)
{
    if ((p->e = engine_for_spec(m, name, spec, err)) == NULL)
        return RB_EUNAVAILABLE;
    pinned(m, name, &p->raw);
    return unpinned_spec(m, p->e, spec, &p->copy, p->vols, p->labels, SPEC_VOLUMES_MAX, err);
}

static rb_err m_create(void *self, const char *name, const backend_spec *spec, backend_create_cb cb, void *data,
                       char *err)
{
    placed p;
    rb_err r = place_spec(M(self), name, spec, &p, err);
    if (r != RB_OK)
        return r;
    mcall *c = mcall_new(p.e, data);
    c->created = cb;
    c->counts = 1;
    return started(c, backend_create(p.e->be, p.raw, &p.copy, m_created_cb, c, err));
}

static rb_err m_run(void *self, const char *name, const backend_spec *spec, long timeout_ms, size_t max_output,
                    backend_exec_cb cb, void *data, char *err)
{
    placed p;
    rb_err r = place_spec(M(self), name, spec, &p, err);
    if (r != RB_OK)
        return r;
    return backend_run(p.e->be, p.raw, &p.copy, timeout_ms, max_output, cb, data, err);
}

/* Routes a call about the sandbox id to its engine: declares e and raw, or returns. */
#define ROUTE(id)                                                                                                   \
    const char *raw;                                                                                                \
    engine *e = engine_of(M(self), (id), &raw, err);                                                                \
    if (e == NULL)                                                                                                  \
    return RB_ENOTFOUND

static rb_err m_start(void *self, const char *id, backend_cb cb, void *data, char *err)
{
    ROUTE(id);
    return backend_start(e->be, raw, cb, data, err);
}

static rb_err m_pause(void *self, const char *id, int on, backend_cb cb, void *data, char *err)
{
    ROUTE(id);
    return backend_pause(e->be, raw, on, cb, data, err);
}

static rb_err m_cpu_shares(void *self, const char *id, int64_t shares, backend_cb cb, void *data, char *err)
{
    ROUTE(id);
    return backend_cpu_shares(e->be, raw, shares, cb, data, err);
}

static rb_err m_remove(void *self, const char *id, backend_cb cb, void *data, char *err)
{
    ROUTE(id);
    mcall *c = mcall_new(e, data);
    c->done = cb;
    return started(c, backend_remove(e->be, raw, m_removed_cb, c, err));
}

static rb_err m_exec(void *self, const char *id, const backend_exec_spec *spec, backend_exec_cb cb, void *data,
                     char *err)
{
    ROUTE(id);
    return backend_exec(e->be, raw, spec, cb, data, err);
}

static rb_err m_archive_put(void *self, const char *id, const char *dir, const void *tar, size_t len, backend_cb cb,
                            void *data, char *err)
{
    ROUTE(id);
    return backend_archive_put(e->be, raw, dir, tar, len, cb, data, err);
}

static rb_err m_archive_get(void *self, const char *id, const char *path, size_t max, backend_bytes_cb cb,
                            void *data, char *err)
{
    ROUTE(id);
    return backend_archive_get(e->be, raw, path, max, cb, data, err);
}

static rb_err m_state(void *self, const char *id, backend_state_cb cb, void *data, char *err)
{
    ROUTE(id);
    return backend_state(e->be, raw, cb, data, err);
}

static rb_err m_usage(void *self, const char *id, backend_usage_cb cb, void *data, char *err)
{
    ROUTE(id);
    return backend_usage_read(e->be, raw, cb, data, err);
}

static rb_err m_workspace_volume(void *self, const char *id, const char *path, backend_name_cb cb, void *data,
                                 char *err)
{
    ROUTE(id);
    mcall *c = mcall_new(e, data);
    c->named = cb;
    return started(c, backend_workspace_volume(e->be, raw, path, m_named_cb, c, err));
}

/* ---- images, volumes, networks --------------------------------------------------------------- */

static rb_err m_image_id(void *self, const char *image, backend_name_cb cb, void *data, char *err)
{
    multi *m = M(self);
    for (size_t i = 0; i < m->n; i++) /* the first engine that is up: every engine's must match */
        if (!m->e[i].pinged || m->e[i].up)
            return backend_image_id(m->e[i].be, image, cb, data, err);
    return rb_fail(RB_EUNAVAILABLE, err, "no Docker engine answers");
}

static rb_err m_volume_create(void *self, const char *name, const backend_label *labels, size_t n_labels,
                              backend_cb cb, void *data, char *err)
{
    multi *m = M(self);
    const char *raw;
    engine *e = pinned(m, name, &raw);
    if (e == NULL && (e = place(m, NULL, err)) == NULL)
        return RB_EUNAVAILABLE;
    return backend_volume_create(e->be, raw, labels, n_labels, cb, data, err);
}

static rb_err m_volume_remove(void *self, const char *name, backend_cb cb, void *data, char *err)
{
    ROUTE(name);
    return backend_volume_remove(e->be, raw, cb, data, err);
}

static rb_err m_network_create(void *self, const char *name, int internal, const backend_label *labels,
                               size_t n_labels, backend_name_cb cb, void *data, char *err)
{
    multi *m = M(self);
    const char *raw;
    engine *e = pinned(m, name, &raw);
    if (e == NULL && (e = place(m, NULL, err)) == NULL)
        return RB_EUNAVAILABLE;
    mcall *c = mcall_new(e, data);
    c->named = cb;
    return started(c, backend_network_create(e->be, raw, internal, labels, n_labels, m_named_cb, c, err));
}

static rb_err m_network_connect(void *self, const char *network, const char *id, const char *alias, backend_cb cb,
                                void *data, char *err)
{
    ROUTE(id);
    const char *net_raw;
    pinned(M(self), network, &net_raw);
    return backend_network_connect(e->be, net_raw, raw, alias, cb, data, err);
}

static rb_err m_network_remove(void *self, const char *network, backend_cb cb, void *data, char *err)
{
    ROUTE(network);
    return backend_network_remove(e->be, raw, cb, data, err);
}

/* ---- streams: the handle remembers its engine ------------------------------------------------ */

typedef struct m_attach {
    engine *e;
    backend_attach *inner;
    backend_attach_cbs cbs;
    void *data;
} m_attach;

static void ma_open(void *data, rb_err err, const char *errmsg)
{
    m_attach *a = data;
    if (err != RB_OK) { /* the handle is gone with the error */
        backend_attach_cbs cbs = a->cbs;
        void *d = a->data;
        free(a);
        if (cbs.on_open != NULL)
            cbs.on_open(d, err, errmsg);
        return;
    }
    if (a->cbs.on_open != NULL)
        a->cbs.on_open(a->data, RB_OK, NULL); /* may close it: a is not touched afterwards */
}

static void ma_data(void *data, int stream, const char *buf, size_t len)
{
    m_attach *a = data;
    if (a->cbs.on_data != NULL)
        a->cbs.on_data(a->data, stream, buf, len);
}

static void ma_close(void *data, rb_err err, const char *errmsg)
{
    m_attach *a = data;
    backend_attach_cbs cbs = a->cbs;
    void *d = a->data;
    free(a);
    if (cbs.on_close != NULL)
        cbs.on_close(d, err, errmsg);
}

static rb_err m_attach_open(void *self, const char *id, const backend_attach_cbs *cbs, void *data,
                            backend_attach **out, char *err)
{
    ROUTE(id);
    m_attach *a = xcalloc(1, sizeof(*a));
    a->e = e;
    a->cbs = *cbs;
    a->data = data;
    const backend_attach_cbs mine = {ma_open, ma_data, ma_close};
    rb_err r = backend_attach_open(e->be, raw, &mine, a, &a->inner, err);
    if (r != RB_OK) {
        free(a);
        return r;
    }
    if (out != NULL)
        *out = (backend_attach *)a;
    return RB_OK;
}

static rb_err m_attach_write(void *self, backend_attach *h, const char *buf, size_t len, char *err)
{
    (void)self;
    m_attach *a = (m_attach *)h;
    return backend_attach_write(a->e->be, a->inner, buf, len, err);
}

static void m_attach_close(void *self, backend_attach *h)
{
    (void)self;
    m_attach *a = (m_attach *)h;
    backend_attach_close(a->e->be, a->inner);
    free(a);
}

static void m_attach_pause(void *self, backend_attach *h, int paused)
{
    (void)self;
    m_attach *a = (m_attach *)h;
    backend_attach_pause(a->e->be, a->inner, paused);
}

typedef struct m_stream {
    engine *e;
    backend_stream *inner;
    backend_stream_cbs cbs;
    void *data;
} m_stream;

static void ms_data(void *data, int stream, const char *buf, size_t len)
{
    m_stream *s = data;
    if (s->cbs.on_data != NULL)
        s->cbs.on_data(s->data, stream, buf, len);
}

static void ms_exit(void *data, rb_err err, const char *errmsg, int code)
{
    m_stream *s = data;
    backend_stream_cbs cbs = s->cbs;
    void *d = s->data;
    free(s);
    if (cbs.on_exit != NULL)
        cbs.on_exit(d, err, errmsg, code);
}

static rb_err m_exec_stream(void *self, const char *id, const backend_exec_spec *spec, const backend_stream_cbs *cbs,
                            void *data, backend_stream **out, char *err)
{
    ROUTE(id);
    m_stream *s = xcalloc(1, sizeof(*s));
    s->e = e;
    s->cbs = *cbs;
    s->data = data;
    const backend_stream_cbs mine = {ms_data, ms_exit};
    rb_err r = backend_exec_stream(e->be, raw, spec, &mine, s, &s->inner, err);
    if (r != RB_OK) {
        free(s);
        return r;
    }
    if (out != NULL)
        *out = (backend_stream *)s;
    return RB_OK;
}

static void m_stream_pause(void *self, backend_stream *h, int paused)
{
    (void)self;
    m_stream *s = (m_stream *)h;
    backend_stream_pause(s->e->be, s->inner, paused);
}

static rb_err m_stream_write(void *self, backend_stream *h, const char *buf, size_t len, char *err)
{
    (void)self;
    m_stream *s = (m_stream *)h;
    return backend_stream_write(s->e->be, s->inner, buf, len, err);
}

static rb_err m_stream_close_input(void *self, backend_stream *h, char *err)
{
    (void)self;
    m_stream *s = (m_stream *)h;
    return backend_stream_close_input(s->e->be, s->inner, err);
}

static rb_err m_stream_resize(void *self, backend_stream *h, unsigned rows, unsigned cols, backend_cb cb, void *data,
                              char *err)
{
    (void)self;
    m_stream *s = (m_stream *)h;
    return backend_stream_resize(s->e->be, s->inner, rows, cols, cb, data, err);
}

static void m_stream_close(void *self, backend_stream *h)
{
    (void)self;
    m_stream *s = (m_stream *)h;
    backend_stream_close(s->e->be, s->inner);
    free(s);
}

/* ---- engines: statistics, pins, state, drain -------------------------------------------------- */

static void m_stats(void *self, backend_stats *out)
{
    multi *m = M(self);
    memset(out, 0, sizeof(*out));
    for (size_t i = 0; i < m->n; i++) {
        backend_stats one;
        backend_stats_read(m->e[i].be, &one);
        if (out->n_ops == 0) {
            *out = one;
            continue;
        }
        for (size_t o = 0; o < one.n_ops && o < out->n_ops; o++) {
            rb_latency_merge(&out->latency[o], &one.latency[o]);
            for (size_t r = 0; r < one.n_reasons && r < out->n_reasons; r++)
                out->failures[o][r] += one.failures[o][r];
        }
    }
}

static char *m_pin(void *self, const char *ref, const char *name)
{
    multi *m = M(self);
    const char *raw;
    engine *e = engine_of(m, ref, &raw, NULL);
    return multi__pin_name(e != NULL ? e : &m->e[0], name);
}

static char *m_place(void *self, const char *name, char *err)
{
    engine *e = place(M(self), NULL, err);
    return e != NULL ? multi__pin_name(e, name) : NULL;
}

static json_t *m_engines(void *self)
{
    multi *m = M(self);
    json_t *out = json_array();
    for (size_t i = 0; i < m->n; i++) {
        const engine *e = &m->e[i];
        json_t *j = json_pack("{s:s, s:s, s:b, s:i, s:i, s:b, s:b}", "name", e->name, "url", e->url, "reachable",
                              e->up, "sandboxes", e->sandboxes, "capacity", e->capacity, "draining", e->draining,
                              "image_ok", e->image_ok == 1);
        if (!e->pinged)
            json_object_set_new(j, "reachable", json_null());
        if (e->image_id[0])
            json_object_set_new(j, "image_id", json_string(e->image_id));
        if (e->up && e->version[0])
            json_object_set_new(j, "api_version", json_string(e->version));
        json_object_set_new(j, "runtimes", backend_runtimes_json(e->runtimes));
        const char *why = left_out(e, NULL);
        json_object_set_new(j, "placing", json_boolean(why == NULL));
        if (e->error[0])
            json_object_set_new(j, "error", json_string(e->error));
        json_array_append_new(out, j);
    }
    return out;
}

static rb_err m_drain(void *self, const char *name, int on, char *err)
{
    multi *m = M(self);
    for (size_t i = 0; i < m->n; i++)
        if (strcmp(m->e[i].name, name) == 0) {
            m->e[i].draining = on != 0;
            return RB_OK;
        }
    return rb_fail(RB_ENOTFOUND, err, "no engine is named '%.64s' (see GET /health, engines)", name);
}

static const char *m_engine_down(void *self, const char *id)
{
    const char *raw;
    engine *e = engine_of(M(self), id, &raw, NULL);
    if (e == NULL || !e->pinged || e->up)
        return NULL;
    snprintf(e->down_text, sizeof(e->down_text), "engine %s does not answer (%.400s)", e->name, e->error);
    return e->down_text;
}

static void m_free(void *self)
{
    multi *m = M(self);
    for (size_t i = 0; i < m->n; i++) /* their callbacks (cancelled) run now, with m still there */
        backend_free(m->e[i].be);
    for (size_t i = 0; i < m->n; i++) {
        free(m->e[i].name);
        free(m->e[i].url);
        free(m->e[i].runtimes);
    }
    free(m->e);
    free(m->image);
    free(m);
}

static const backend_ops multi_ops = {
    .name = "docker (several engines)",
    .free = m_free,
    .ping = multi__ping,
    .create = m_create,
    .start = m_start,
    .remove = m_remove,
    .pause = m_pause,
    .cpu_shares = m_cpu_shares,
    .list = multi__list,
    .attach_open = m_attach_open,
    .attach_write = m_attach_write,
    .attach_close = m_attach_close,
    .attach_pause = m_attach_pause,
    .exec = m_exec,
    .archive_put = m_archive_put,
    .archive_get = m_archive_get,
    .run = m_run,
    .image_id = m_image_id,
    .volume_create = m_volume_create,
    .volume_remove = m_volume_remove,
    .workspace_volume = m_workspace_volume,
    .exec_stream = m_exec_stream,
    .stream_pause = m_stream_pause,
    .stream_write = m_stream_write,
    .stream_close_input = m_stream_close_input,
    .stream_resize = m_stream_resize,
    .stream_close = m_stream_close,
    .state = m_state,
    .stats = m_stats,
    .usage = m_usage,
    .network_create = m_network_create,
    .network_connect = m_network_connect,
    .network_remove = m_network_remove,
    .network_list = multi__network_list,
    .volume_list_unused = multi__volume_list_unused,
    .pin = m_pin,
    .place = m_place,
    .engines = m_engines,
    .drain = m_drain,
    .engine_down = m_engine_down,
    .offers = multi__offers,
    .runtimes = multi__runtimes,
};

/* ---- construction ----------------------------------------------------------------------------- */

rb_err backend_multi_parse(const char *text, const char *ca, const char *cert, const char *key,
                           backend_multi_engine *out, char **own, char *err)
{
    const char *eq = strchr(text, '=');
    if (eq == NULL || !name_ok(text, (size_t)(eq - text)))
        return rb_fail(RB_EINVAL, err,
                       "engine '%.100s': write NAME=URL with NAME 1 to %d of a-z, 0-9, _ and - (e.g. "
                       "node1=tcp://10.0.0.5:2376)",
                       text, ENGINE_NAME_MAX);
    char *copy = xstrdup(text);
    memset(out, 0, sizeof(*out));
    copy[eq - text] = '\0';
    out->name = copy;
    out->capacity = 100;
    out->at.tls_ca = ca;
    out->at.tls_cert = cert;
    out->at.tls_key = key;
    char *p = copy + (eq - text) + 1;
    char *comma = strchr(p, ',');
    if (comma != NULL)
        *comma = '\0';
    out->at.url = p;
    while (comma != NULL) {
        char *opt = comma + 1;
        comma = strchr(opt, ',');
        if (comma != NULL)
            *comma = '\0';
        char *v = strchr(opt, '=');
        if (v == NULL)
            goto bad;
        *v++ = '\0';
        if (strcmp(opt, "capacity") == 0) {
            char *end;
            long c = strtol(v, &end, 10);
            if (*v == '\0' || *end != '\0' || c < 1 || c > 100000) {
                free(copy);
                return rb_fail(RB_EINVAL, err, "engine %.32s: capacity must be a number of sandboxes from 1 to 100000",
                               text);
            }
            out->capacity = (int)c;
        } else if (strcmp(opt, "ca") == 0 && *v) {
            out->at.tls_ca = v;
        } else if (strcmp(opt, "cert") == 0 && *v) {
            out->at.tls_cert = v;
        } else if (strcmp(opt, "key") == 0 && *v) {
            out->at.tls_key = v;
        } else if (strcmp(opt, "runtimes") == 0) {
            char why[RB_ERR_LEN];
            if (backend_runtimes_check(v, why) != RB_OK) {
                rb_fail(RB_EINVAL, err, "engine %.32s: %s", out->name, why);
                free(copy);
                return RB_EINVAL;
            }
            out->at.runtimes = v;
        } else {
            goto bad;
        }
    }
    if (strncmp(out->at.url, "tcp://", 6) != 0) /* shared TLS files are for tcp:// engines */
        out->at.tls_ca = out->at.tls_cert = out->at.tls_key = NULL;
    *own = copy;
    return RB_OK;
bad:
    free(copy);
    return rb_fail(RB_EINVAL, err,
                   "engine '%.100s': options after the URL are capacity=N, runtimes=runc+runsc, ca=PATH, cert=PATH and "
                   "key=PATH, each after a comma",
                   text);
}

rb_err backend_multi_new(uv_loop_t *loop, const backend_multi_engine *engines, size_t n, const char *image,
                         long call_ms, long transfer_ms, backend **out, char *err)
{
    if (n == 0)
        return rb_fail(RB_EINVAL, err, "at least one engine is needed");
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < i; j++)
            if (strcmp(engines[i].name, engines[j].name) == 0)
                return rb_fail(RB_EINVAL, err, "two engines are named %s", engines[i].name);
    multi *m = xcalloc(1, sizeof(*m));
    m->e = xcalloc(n, sizeof(*m->e));
    m->image = xstrdup(image);
    for (size_t i = 0; i < n; i++) {
        engine *e = &m->e[i];
        char e2[RB_ERR_LEN];
        rb_err r = backend_docker_new_at(loop, &engines[i].at, call_ms, transfer_ms, &e->be, e2);
        if (r != RB_OK) {
            m->n = i;
            m_free(m);
            return rb_fail(r, err, "engine %s: %s", engines[i].name, e2);
        }
        m->n = i + 1;
        e->m = m;
        e->name = xstrdup(engines[i].name);
        e->url = xstrdup(engines[i].at.url);
        e->capacity = engines[i].capacity > 0 ? engines[i].capacity : 100;
        e->runtimes = xstrdup(engines[i].at.runtimes != NULL ? engines[i].at.runtimes : "runc");
        e->image_ok = -1;
    }
    *out = backend_new(&multi_ops, m);
    return RB_OK;
}

/*
 * volumes.c: named volumes as callers see them (core/core.h, "Volumes": create, list, get,
 * delete) and their measurement against the quota (core/volumes/volumes.h). The mounts of
 * sessions are volumes_mount.c's.
 */
#include "core/volumes/volumes_internal.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

#include "base/clock.h"
#include "base/crashpoint.h"
#include "base/log.h"
#include "base/map.h"
#include "base/mem.h"
#include "core/deps/oneshot.h"
#include "core/shares/sharespec.h"

/* measuring a large tree takes seconds; more is an engine that stopped answering */
#define MEASURE_TIMEOUT_MS (2L * 60 * 1000)
/* the label of the one-shot containers that hold a volume (its id): the chown of a new one, its measurement */
#define HOLDER_LABEL "runbox.volume-for"

/* ---- the rows ---------------------------------------------------------------------------- */

/* A volume is its key's alone, whatever the key's role: an admin's names would otherwise meet
 * other keys' (names are unique per key), and its sessions could mount them. */
static int volumes__mine(const core_caller *who, const char *owner)
{
    return who == NULL || strcmp(who->owner, owner ? owner : "") == 0;
}

rb_err volumes__find(rb_core *c, const core_caller *who, const char *ref, json_t **out, char *err)
{
    *out = NULL;
    json_t *all = NULL;
    rb_err e = store_volume_list(core_heart_store(c), &all, err);
    if (e != RB_OK)
        return e;
    size_t i;
    json_t *d;
    json_array_foreach(all, i, d)
    {
        const char *id = json_string_value(json_object_get(d, "volume_id"));
        const char *name = json_string_value(json_object_get(d, "name"));
        if (!volumes__mine(who, json_string_value(json_object_get(d, "owner"))))
            continue;
        if ((id != NULL && strcmp(id, ref) == 0) || (name != NULL && strcmp(name, ref) == 0)) {
            *out = json_incref(d);
            break;
        }
    }
    json_decref(all);
    if (*out == NULL)
        return rb_fail(RB_ENOTFOUND, err, "no volume '%.80s'; GET /volumes lists yours, POST /volumes makes one", ref);
    return RB_OK;
}

const char *volumes__engine(const char *docker_name, char *buf, size_t len)
{
    /* a volume on one of several engines has a pinned name, "ENGINE@runbox-vol-..." */
    const char *at = docker_name != NULL ? strchr(docker_name, '@') : NULL;
    if (at == NULL || (size_t)(at - docker_name) >= len)
        return NULL;
    memcpy(buf, docker_name, (size_t)(at - docker_name));
    buf[at - docker_name] = '\0';
    return buf;
}

json_t *volumes__api(rb_core *c, json_t *doc)
{
    json_t *o = json_pack("{s:O, s:O, s:O, s:O, s:b}", "volume_id", json_object_get(doc, "volume_id"), "name",
                          json_object_get(doc, "name"), "quota_bytes", json_object_get(doc, "quota_bytes"),
                          "used_bytes", json_object_get(doc, "used_bytes"), "over_quota",
                          json_is_true(json_object_get(doc, "over_quota")));
    core_json_time(o, "created_at", json_integer_value(json_object_get(doc, "created_at")));
    json_t *m = json_object_get(doc, "measured_at");
    if (json_is_integer(m))
        core_json_time(o, "measured_at", json_integer_value(m));
    else
        json_object_set_new(o, "measured_at", json_null());
    json_object_set_new(o, "mounted_by",
                        core_heart_mounting(c, json_string_value(json_object_get(doc, "volume_id"))));
    char engine[80];
    if (volumes__engine(json_string_value(json_object_get(doc, "docker")), engine, sizeof(engine)) != NULL)
        json_object_set_new(o, "engine", json_string(engine));
    return o;
}

/* ---- create ------------------------------------------------------------------------------ */

typedef struct vcreate {
    rb_core *c;
    json_t *doc;
    core_cb cb;
    void *data;
    int made; /* the engine made the volume (removed if a later step fails) */
} vcreate;

/* Runs a one-shot container of the volume docker (mounted at /v, read-only unless rw) as root
 * with only the capabilities caps, with no network: the chown of a new volume and its
 * measurement. cb as oneshot_run's; the hold of the graceful stop is the caller's. */
static rb_err run_holder(rb_core *c, const char *kind, const char *docker, const char *volume_id, int rw,
                         const char *const *cmd, const char *const *caps, int64_t memory, oneshot_done_cb cb,
                         void *data, char *err)
{
    backend_volume vol = {docker, NULL, "/v", !rw};
    const backend_label labels[] = {{"runbox.instance", core_heart_instance(c)},
                                    {"runbox.managed", "1"},
                                    {HOLDER_LABEL, volume_id}};
    backend_spec spec;
    oneshot_spec_root(&spec, core_heart_settings(c)->image, caps);
    spec.cmd = cmd;
    spec.labels = labels;
    spec.n_labels = 3;
    spec.volumes = &vol;
    spec.n_volumes = 1;
    spec.memory = memory;
    return oneshot_run(c, kind, &spec, MEASURE_TIMEOUT_MS, cb, data, err);
}

const char *volumes__creation_mark(void)
{
    static char mark[RB_ID_LEN];
    if (mark[0] == '\0')
        rb_random_id("", mark, sizeof(mark));
    return mark;
}

/* The end of a creation: the answer, or the row and the volume undone. */
static void create_end(vcreate *v, rb_err err, const char *step, const char *msg)
{
    rb_core *c = v->c;
    const char *id = json_string_value(json_object_get(v->doc, "volume_id"));
    char e3[RB_ERR_LEN];
    if (err == RB_OK) { /* made whole: no longer undone by a restart */
        json_object_del(v->doc, "creating");
        if ((err = store_volume_put(core_heart_store(c), v->doc, e3)) != RB_OK) {
            step = "store the new volume";
            msg = e3;
        }
    }
    if (err != RB_OK) {
        char e2[RB_ERR_LEN], text[RB_ERR_LEN];
        if (store_volume_delete(core_heart_store(c), id, e2) != RB_OK)
            rb_warn("volume %s: could not forget it: %s", id, e2);
        if (v->made)
            core_heart_drop_volume(c, json_string_value(json_object_get(v->doc, "docker")), "volume");
        snprintf(text, sizeof(text), "could not %s: %.400s", step, msg ? msg : "no reason given");
        v->cb(v->data, err, text, NULL);
    } else {
        rb_info("volume %s (%.63s) created for key '%.64s', quota %lld bytes", id,
                json_string_value(json_object_get(v->doc, "name")),
                json_string_value(json_object_get(v->doc, "owner")),
                (long long)json_integer_value(json_object_get(v->doc, "quota_bytes")));
        v->cb(v->data, RB_OK, NULL, volumes__api(c, v->doc));
    }
    json_decref(v->doc);
    free(v);
}

static void owned_cb(void *data, rb_err err, const char *msg, const backend_exec_result *r)
{
    vcreate *v = data;
    core_heart_hold(v->c, -1);
    if (err == RB_OK && r->exit_code != 0) {
        err = RB_EIO;
        msg = r->err_len > 0 ? r->err : "chown failed";
    }
    create_end(v, err, "give the new volume to the sandbox user", msg);
}

static void created_cb(void *data, rb_err err, const char *msg)
{
    vcreate *v = data;
    core_heart_hold(v->c, -1);
    if (err != RB_OK) {
        create_end(v, err, "create the volume", msg);
        return;
    }
    v->made = 1;
    rb_crash_point("volume:created");
    /* a new volume's root belongs to root: the sandbox user (uid 1000) gets it, as its workspace */
    static const char *const cmd[] = {"chown", "1000:1000", "/v", NULL};
    static const char *const caps[] = {"CHOWN", NULL};
    char e2[RB_ERR_LEN];
    core_heart_hold(v->c, 1);
    rb_err e = run_holder(v->c, "volume", json_string_value(json_object_get(v->doc, "docker")),
                          json_string_value(json_object_get(v->doc, "volume_id")), 1, cmd, caps, 64LL * 1024 * 1024,
                          owned_cb, v, e2);
    if (e != RB_OK) {
        core_heart_hold(v->c, -1);
        create_end(v, e, "give the new volume to the sandbox user", e2);
    }
}

static rb_err check_request(const core_settings *cfg, json_t *body, const char **name, int64_t *quota, char *err)
{
    static const char *const allowed[] = {"name", "quota_bytes", NULL};
    if (!json_is_object(body))
        return rb_fail(RB_EINVAL, err, "the body must be a JSON object: {\"name\": \"data\", \"quota_bytes\": N}");
    rb_err e = core__check_keys(body, "the volume", allowed, err);
    if (e != RB_OK)
        return e;
    json_t *n = json_object_get(body, "name");
    if (!json_is_string(n) || !sharespec_name_ok(json_string_value(n), json_string_length(n)) ||
        strncmp(json_string_value(n), "vol_", 4) == 0)
        return rb_fail(RB_EINVAL, err,
                       "'name' must be 1 to 63 of a-z, 0-9, '_' and '-', starting with a letter or digit, and not "
                       "starting with 'vol_' (the ids' prefix)");
    *name = json_string_value(n);
    json_t *q = json_object_get(body, "quota_bytes");
    *quota = (int64_t)cfg->volume_quota;
    if (q != NULL && !json_is_null(q)) {
        /* a whole number, written 100 or 100.0 (JSON does not tell them apart; nor does the schema) */
        double d = json_number_value(q);
        if (!json_is_number(q) || !(d >= 1) || d != floor(d))
            return rb_fail(RB_EINVAL, err, "'quota_bytes' must be a positive integer (bytes)");
        *quota = json_is_integer(q) ? json_integer_value(q) : d >= 9.0e18 ? INT64_MAX : (int64_t)d;
    }
    if (*quota > (int64_t)cfg->volume_quota_max)
        return rb_fail(RB_EINVAL, err, "'quota_bytes' is %lld; the most a volume may hold is %zu bytes (--volume-quota-max)",
                       (long long)*quota, cfg->volume_quota_max);
    return RB_OK;
}

rb_err core_volume_create(rb_core *c, const core_caller *who, json_t *body, core_cb cb, void *data, char *err)
{
    const core_settings *cfg = core_heart_settings(c);
    const char *name = NULL;
    int64_t quota = 0;
    rb_err e = check_request(cfg, body, &name, &quota, err);
    if (e != RB_OK)
        return e;
    if (core_heart_closing(c))
        return rb_fail(RB_EUNAVAILABLE, err, "runboxd is stopping");
    const char *owner = who != NULL ? who->owner : "";
    json_t *all = NULL;
    if ((e = store_volume_list(core_heart_store(c), &all, err)) != RB_OK)
        return e;
    int mine = 0;
    size_t i;
    json_t *d;
    json_array_foreach(all, i, d) mine += strcmp(json_string_value(json_object_get(d, "owner")), owner) == 0;
    json_decref(all);
    if (cfg->max_volumes > 0 && mine >= cfg->max_volumes)
        return rb_fail(RB_EQUOTA, err, "this key has %d volumes, the most it may keep (--max-volumes); delete one first",
                       mine);
    char id[RB_ID_LEN], raw[RB_ID_LEN + 16];
    rb_random_id("vol_", id, sizeof(id));
    snprintf(raw, sizeof(raw), "runbox-vol-%s", id);
    backend *be = core_heart_backend(c);
    char *docker = backend_place(be, raw, err);
    if (docker == NULL)
        return RB_EUNAVAILABLE;
    json_t *doc = json_pack("{s:s, s:s, s:s, s:I, s:I, s:i, s:n, s:b, s:s, s:s}", "volume_id", id, "owner", owner,
                            "name", name, "created_at", (json_int_t)rb_now_ms(), "quota_bytes", (json_int_t)quota,
                            "used_bytes", 0, "measured_at", "over_quota", 0, "docker", docker, "creating",
                            volumes__creation_mark());
    free(docker);
    /* the row first, marked as being created: the owner's names stay unique, and a restart
     * before the creation is answered leaves a mark that the next start undoes (volumes_sweep) */
    if ((e = store_volume_put(core_heart_store(c), doc, err)) != RB_OK) {
        json_decref(doc);
        return e;
    }
    rb_crash_point("volume:stored");
    vcreate *v = xcalloc(1, sizeof(*v));
    *v = (vcreate){c, doc, cb, data, 0};
    const backend_label labels[] = {{VOLUMES_LABEL, id}, {"runbox.instance", core_heart_instance(c)},
                                    {"runbox.managed", "1"}};
    core_heart_hold(c, 1);
    e = backend_volume_create(be, json_string_value(json_object_get(doc, "docker")), labels, 3, created_cb, v, err);
    if (e != RB_OK) {
        core_heart_hold(c, -1);
        char e2[RB_ERR_LEN];
        store_volume_delete(core_heart_store(c), id, e2);
        json_decref(doc);
        free(v);
    }
    return e;
}

/* ---- list, get --------------------------------------------------------------------------- */

rb_err core_volume_list(rb_core *c, const core_caller *who, json_t **out, char *err)
{
    json_t *all = NULL;
    rb_err e = store_volume_list(core_heart_store(c), &all, err);
    if (e != RB_OK)
        return e;
    json_t *list = json_array();
    size_t i;
    json_t *d;
    json_array_foreach(all, i, d) if (volumes__mine(who, json_string_value(json_object_get(d, "owner"))))
        json_array_append_new(list, volumes__api(c, d));
    json_decref(all);
    *out = json_pack("{s:o}", "volumes", list);
    return RB_OK;
}

rb_err core_volume_get(rb_core *c, const core_caller *who, const char *ref, json_t **out, char *err)
{
    json_t *doc = NULL;
    rb_err e = volumes__find(c, who, ref, &doc, err);
    if (e != RB_OK)
        return e;
    *out = volumes__api(c, doc);
    json_decref(doc);
    return RB_OK;
}

/* ---- the room's state ---------------------------------------------------------------------- */

typedef struct vdelete vdelete;

typedef struct vroom {
    rb_map busy;       /* volume id -> measure in flight */
    vdelete *retrying; /* deletions waiting to try again, linked by next */
} vroom;

static vroom *room(rb_core *c)
{
    void **slot = core_heart_room(c, CORE_ROOM_VOLUMES);
    if (*slot == NULL) {
        vroom *r = xcalloc(1, sizeof(*r));
        map_init(&r->busy);
        *slot = r;
    }
    return *slot;
}

/* ---- delete ------------------------------------------------------------------------------ */

/* A sandbox of a session that just ended may still hold the volume while the heart removes it:
 * the removal is tried again every RETRY_MS, RETRIES times, before the caller hears 409. */
#define RETRY_MS 250
#define RETRIES 40

struct vdelete {
    rb_core *c;
    char id[RB_ID_LEN];
    char name[VOLUMES_NAME_MAX + 1];
    char *docker;
    core_cb cb;
    void *data;
    int tries;
    uv_timer_t *timer; /* while waiting to try again */
    vdelete *next;
};

static void vdelete_free(vdelete *v)
{
    free(v->docker);
    free(v);
}

static void timer_closed(uv_handle_t *h)
{
    free(h);
}

static void unlink_retry(vdelete *v)
{
    vroom *r = room(v->c);
    for (vdelete **p = &r->retrying; *p != NULL; p = &(*p)->next)
        if (*p == v) {
            *p = v->next;
            break;
        }
    uv_close((uv_handle_t *)v->timer, timer_closed);
    v->timer = NULL;
}

static void remove_volume(vdelete *v);

static void holders_listed_cb(void *data, rb_err err, const char *msg, const backend_sandbox_info *items, size_t n)
{
    rb_core *c = data;
    core_heart_hold(c, -1);
    if (err != RB_OK) {
        if (err != RB_ECANCELED)
            rb_warn("cannot list the containers that hold a volume: %s", msg);
        return;
    }
    for (size_t i = 0; i < n; i++) {
        const char *id = json_string_value(json_object_get(items[i].labels, HOLDER_LABEL));
        rb_info("volume %s: removing container %.80s, a one-shot of an earlier runboxd that holds it",
                id != NULL ? id : "?", items[i].id);
        core_heart_remove(c, items[i].id);
    }
}

/* A one-shot container (chown, du) that a runboxd killed around its start left behind can
 * escape the recovery that removes such containers (the engine registered it after the
 * listing) and hold the volume for good: at a deletion's first conflict, the volume's one-shot
 * containers go, unless this process measures it now (that one ends by itself). */
static void remove_holders(vdelete *v)
{
    char label[96], e2[RB_ERR_LEN];
    if (map_get(&room(v->c)->busy, v->id) != NULL)
        return;
    snprintf(label, sizeof(label), "%s=%s", HOLDER_LABEL, v->id);
    core_heart_hold(v->c, 1);
    if (backend_list(core_heart_backend(v->c), label, holders_listed_cb, v->c, e2) != RB_OK) {
        core_heart_hold(v->c, -1);
        rb_warn("volume %s: cannot list the containers that hold it: %s", v->id, e2);
    }
}

static void retry_tick(uv_timer_t *t)
{
    vdelete *v = t->data;
    unlink_retry(v);
    remove_volume(v);
}

/* Tries v's removal again in RETRY_MS. */
static void retry_later(vdelete *v)
{
    vroom *r = room(v->c);
    v->timer = xcalloc(1, sizeof(*v->timer));
    uv_timer_init(core_heart_loop(v->c), v->timer);
    v->timer->data = v;
    v->next = r->retrying;
    r->retrying = v;
    uv_timer_start(v->timer, retry_tick, RETRY_MS, 0);
}

static void removed_cb(void *data, rb_err err, const char *msg)
{
    vdelete *v = data;
    core_heart_hold(v->c, -1);
    char e2[RB_ERR_LEN];
    if (err == RB_OK || err == RB_ENOTFOUND) {
        rb_err e = store_volume_delete(core_heart_store(v->c), v->id, e2);
        if (e == RB_OK)
            rb_info("volume %s (%s) deleted", v->id, v->name);
        v->cb(v->data, e, e2, NULL);
    } else if (err == RB_ECONFLICT && v->tries < RETRIES && !core_heart_closing(v->c)) {
        if (v->tries == 1)
            remove_holders(v);
        retry_later(v);
        return;
    } else if (err == RB_ECONFLICT) {
        snprintf(e2, sizeof(e2),
                 "volume '%s' is still used by a sandbox (one of a session that ended is being removed); try again "
                 "in a moment",
                 v->name);
        v->cb(v->data, RB_ECONFLICT, e2, NULL);
    } else {
        snprintf(e2, sizeof(e2), "could not remove volume '%s': %.400s", v->name, msg ? msg : "no reason given");
        v->cb(v->data, err, e2, NULL);
    }
    vdelete_free(v);
}

/* Removes v's volume once no measurement of it is in flight: a measuring container made after
 * the removal would have the engine make the volume again, empty (a named volume is created by
 * the first container that mounts it). RB_OK, or the engine's error (v is then the caller's). */
static rb_err try_remove(vdelete *v, char *err)
{
    v->tries++;
    if (map_get(&room(v->c)->busy, v->id) != NULL && v->tries < RETRIES && !core_heart_closing(v->c)) {
        retry_later(v);
        return RB_OK;
    }
    core_heart_hold(v->c, 1);
    rb_err e = backend_volume_remove(core_heart_backend(v->c), v->docker, removed_cb, v, err);
    if (e != RB_OK)
        core_heart_hold(v->c, -1);
    return e;
}

static void remove_volume(vdelete *v)
{
    char e2[RB_ERR_LEN];
    rb_err e = try_remove(v, e2);
    if (e != RB_OK) {
        v->cb(v->data, e, e2, NULL);
        vdelete_free(v);
    }
}

rb_err core_volume_delete(rb_core *c, const core_caller *who, const char *ref, core_cb cb, void *data, char *err)
{
    json_t *doc = NULL;
    rb_err e = volumes__find(c, who, ref, &doc, err);
    if (e != RB_OK)
        return e;
    const char *id = json_string_value(json_object_get(doc, "volume_id"));
    json_t *users = core_heart_mounting(c, id);
    if (json_array_size(users) > 0) {
        char list[256] = "";
        size_t i, at = 0;
        json_t *u;
        json_array_foreach(users, i, u) if (at < sizeof(list) - 1) at +=
            (size_t)snprintf(list + at, sizeof(list) - at, "%s%s", i ? ", " : "", json_string_value(u));
        e = rb_fail(RB_ECONFLICT, err, "volume '%s' is mounted by session %s; end %s first (DELETE /sessions/{id})",
                    json_string_value(json_object_get(doc, "name")), list, json_array_size(users) > 1 ? "them" : "it");
        json_decref(users);
        json_decref(doc);
        return e;
    }
    json_decref(users);
    vdelete *v = xcalloc(1, sizeof(*v));
    v->c = c;
    snprintf(v->id, sizeof(v->id), "%s", id);
    snprintf(v->name, sizeof(v->name), "%s", json_string_value(json_object_get(doc, "name")));
    v->docker = xstrdup(json_string_value(json_object_get(doc, "docker")));
    v->cb = cb;
    v->data = data;
    json_decref(doc);
    e = try_remove(v, err);
    if (e != RB_OK)
        vdelete_free(v);
    return e;
}

/* ---- measurement ------------------------------------------------------------------------- */


typedef struct measure {
    rb_core *c;
    char id[RB_ID_LEN];
    int again; /* touched again while measured: once more when done */
} measure;

static void run_measure(measure *m);

static void measure_end(measure *m)
{
    vroom *r = room(m->c);
    if (m->again && !core_heart_closing(m->c)) {
        m->again = 0;
        run_measure(m);
        return;
    }
    map_del(&r->busy, m->id);
    free(m);
}

static void measured_cb(void *data, rb_err err, const char *msg, const backend_exec_result *r)
{
    measure *m = data;
    core_heart_hold(m->c, -1);
    char e2[RB_ERR_LEN];
    json_t *doc = NULL;
    if (err != RB_OK || r->exit_code != 0 || r->out_len == 0) {
        if (err != RB_ECANCELED)
            rb_warn("volume %s: could not measure it: %.300s", m->id,
                    err != RB_OK ? msg : (r->err_len > 0 ? r->err : "the measuring command failed"));
    } else if (store_volume_get(core_heart_store(m->c), m->id, &doc, e2) == RB_OK) { /* else deleted meanwhile */
        int64_t used = strtoll(r->out, NULL, 10);
        int64_t quota = json_integer_value(json_object_get(doc, "quota_bytes"));
        int was = json_is_true(json_object_get(doc, "over_quota")), over = used > quota;
        json_object_set_new(doc, "used_bytes", json_integer(used));
        json_object_set_new(doc, "measured_at", json_integer(rb_now_ms()));
        json_object_set_new(doc, "over_quota", json_boolean(over));
        if (store_volume_put(core_heart_store(m->c), doc, e2) != RB_OK)
            rb_warn("volume %s: could not save its measurement: %s", m->id, e2);
        if (over != was)
            rb_info("volume %s (%s) %s its quota: %lld of %lld bytes", m->id,
                    json_string_value(json_object_get(doc, "name")), over ? "is over" : "is back under",
                    (long long)used, (long long)quota);
        json_decref(doc);
    }
    measure_end(m);
}

static void run_measure(measure *m)
{
    static const char *const cmd[] = {"sh", "-c", ONESHOT_BYTES_SH("/v"), NULL};
    /* root that may read every folder (code may have made one unreadable), and nothing else */
    static const char *const caps[] = {"DAC_READ_SEARCH", NULL};
    char e2[RB_ERR_LEN];
    json_t *doc = NULL;
    if (store_volume_get(core_heart_store(m->c), m->id, &doc, e2) != RB_OK) {
        measure_end(m);
        return;
    }
    core_heart_hold(m->c, 1);
    rb_err e = run_holder(m->c, "measure", json_string_value(json_object_get(doc, "docker")), m->id, 0, cmd, caps,
                          128LL * 1024 * 1024, measured_cb, m, e2);
    json_decref(doc);
    if (e != RB_OK) {
        core_heart_hold(m->c, -1);
        rb_warn("volume %s: could not measure it: %s", m->id, e2);
        m->again = 0;
        measure_end(m);
    }
}

void volumes__measure(rb_core *c, const char *volume_id)
{
    if (core_heart_closing(c))
        return;
    vroom *r = room(c);
    measure *m = map_get(&r->busy, volume_id);
    if (m != NULL) {
        m->again = 1;
        return;
    }
    m = xcalloc(1, sizeof(*m));
    m->c = c;
    snprintf(m->id, sizeof(m->id), "%s", volume_id);
    map_put(&r->busy, m->id, m);
    run_measure(m);
}

void volumes_dispose(rb_core *c)
{
    void **slot = core_heart_room(c, CORE_ROOM_VOLUMES);
    vroom *r = *slot;
    if (r == NULL)
        return;
    /* measurements still in flight were cancelled with the backend; they free themselves only if
     * their callbacks run, which they did before this (core_free closes the backend first) */
    size_t pos = 0;
    measure *m;
    while ((m = map_next(&r->busy, &pos)) != NULL)
        free(m);
    while (r->retrying != NULL) { /* deletions waiting to try again end unanswered by the engine */
        vdelete *v = r->retrying;
        r->retrying = v->next;
        uv_close((uv_handle_t *)v->timer, timer_closed);
        v->cb(v->data, RB_ECANCELED, "runboxd is stopping; delete the volume again once it is back", NULL);
        vdelete_free(v);
    }
    map_dispose(&r->busy);
    free(r);
    *slot = NULL;
}

/*
 * volumes_mount.c: volumes in sessions (core/volumes/volumes.h): the mounts a session asks for,
 * the binds of its sandbox, and the quota checks before code runs or a file is uploaded into one;
 * the sweep of disk volumes no row names.
 */
#include "core/volumes/volumes_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "base/mem.h"
#include "core/shares/sharespec.h"

json_t *volumes_split(json_t *mounts, int want)
{
    json_t *out = json_array();
    size_t i;
    json_t *m;
    json_array_foreach(mounts, i, m) if ((json_object_get(m, "volume") != NULL) == (want != 0))
        json_array_append(out, m);
    return out;
}

/* The text "'execution_options.mounts[i]'" naming an item. */
static const char *item_name(char *buf, size_t len, size_t i)
{
    snprintf(buf, len, "'execution_options.mounts' (volume item %zu)", i);
    return buf;
}

static rb_err one_mount(rb_core *c, const core_caller *who, json_t *item, size_t i, json_t **out, char *err)
{
    static const char *const allowed[] = {"volume", "path", "readonly", NULL};
    char what[96];
    item_name(what, sizeof(what), i);
    if (!json_is_object(item))
        return rb_fail(RB_EINVAL, err, "%s must be an object {\"volume\", \"path\", \"readonly\"}", what);
    rb_err e = core__check_keys(item, what, allowed, err);
    if (e != RB_OK)
        return e;
    json_t *ref = json_object_get(item, "volume"), *path = json_object_get(item, "path"),
           *ro = json_object_get(item, "readonly");
    /* null means the same as an absent member, as in the share items and the rest of the request */
    if (json_is_null(path))
        path = NULL;
    if (json_is_null(ro))
        ro = NULL;
    if (!json_is_string(ref) || json_string_length(ref) == 0 || json_string_length(ref) > 80)
        return rb_fail(RB_EINVAL, err, "%s: 'volume' must be a volume's name or id", what);
    if (path != NULL && !json_is_string(path))
        return rb_fail(RB_EINVAL, err, "%s: 'path' must be a string under /workspace", what);
    if (ro != NULL && !json_is_boolean(ro))
        return rb_fail(RB_EINVAL, err, "%s: 'readonly' must be true or false", what);
    json_t *doc = NULL;
    if ((e = volumes__find(c, who, json_string_value(ref), &doc, err)) != RB_OK)
        return e;
    const char *name = json_string_value(json_object_get(doc, "name"));
    char dflt[VOLUMES_NAME_MAX + 16];
    snprintf(dflt, sizeof(dflt), "/workspace/%s", name);
    const char *p = path != NULL ? json_string_value(path) : dflt;
    /* the length, not the NUL: a NUL inside the string is a control character, refused */
    size_t plen = path != NULL ? json_string_length(path) : strlen(dflt);
    char *canon = NULL;
    char pwhat[128];
    snprintf(pwhat, sizeof(pwhat), "%s.path", what);
    if ((e = sharespec_mount_path(p, plen, pwhat, &canon, err)) != RB_OK) {
        json_decref(doc);
        return e;
    }
    int readonly = json_is_true(ro);
    if (!readonly && json_is_true(json_object_get(doc, "over_quota")))
        e = rb_fail(RB_ENOSPC, err,
                    "volume '%s' holds %lld bytes, over its quota of %lld; mount it read-only, or delete files in it "
                    "first",
                    name, (long long)json_integer_value(json_object_get(doc, "used_bytes")),
                    (long long)json_integer_value(json_object_get(doc, "quota_bytes")));
    else
        *out = json_pack("{s:s, s:O, s:s, s:b, s:O}", "volume", name, "volume_id", json_object_get(doc, "volume_id"),
                         "path", canon, "readonly", readonly, "docker", json_object_get(doc, "docker"));
    free(canon);
    json_decref(doc);
    return e;
}

rb_err volumes_mounts(rb_core *c, const core_caller *who, json_t *items, json_t *taken, json_t **out, char *err)
{
    *out = NULL;
    if (json_array_size(items) == 0)
        return RB_OK;
    if (json_array_size(items) + json_array_size(taken) > SHARESPEC_MOUNTS_MAX)
        return rb_fail(RB_EINVAL, err, "'execution_options.mounts' has more than %d items", SHARESPEC_MOUNTS_MAX);
    json_t *list = json_array(), *all = json_array();
    json_array_extend(all, taken);
    rb_err e = RB_OK;
    backend *be = core_heart_backend(c);
    char *engine = NULL;
    size_t i;
    json_t *item;
    json_array_foreach(items, i, item)
    {
        json_t *m = NULL;
        if ((e = one_mount(c, who, item, i, &m, err)) != RB_OK)
            break;
        for (size_t j = 0; j < json_array_size(list); j++)
            if (strcmp(json_string_value(json_object_get(json_array_get(list, j), "volume_id")),
                       json_string_value(json_object_get(m, "volume_id"))) == 0)
                e = rb_fail(RB_EINVAL, err, "'execution_options.mounts': volume '%s' is mounted twice",
                            json_string_value(json_object_get(m, "volume")));
        /* every volume on one engine: the sandbox is placed there */
        char *here = backend_pin(be, json_string_value(json_object_get(m, "docker")), "x");
        if (e == RB_OK && engine != NULL && strcmp(engine, here) != 0)
            e = rb_fail(RB_ECONFLICT, err,
                        "volume '%s' lives on another engine than the session's other volumes; a session mounts "
                        "volumes of one engine only",
                        json_string_value(json_object_get(m, "volume")));
        if (engine == NULL)
            engine = here;
        else
            free(here);
        json_object_del(m, "docker"); /* the binds read it from the row, which outlives the session */
        json_array_append(all, m);
        json_array_append_new(list, m);
        if (e != RB_OK)
            break;
    }
    free(engine);
    if (e == RB_OK)
        e = sharespec_check_paths(all, "'execution_options.mounts'", err);
    json_decref(all);
    if (e != RB_OK) {
        json_decref(list);
        return e;
    }
    *out = list;
    return RB_OK;
}

rb_err volumes_binds(rb_core *c, json_t *mounts, backend_volume **v, size_t *n, char *err)
{
    size_t i;
    json_t *m;
    json_array_foreach(mounts, i, m)
    {
        const char *id = json_string_value(json_object_get(m, "volume_id"));
        if (id == NULL)
            continue;
        json_t *doc = NULL;
        char e2[RB_ERR_LEN];
        if (store_volume_get(core_heart_store(c), id, &doc, e2) != RB_OK)
            return rb_fail(RB_ENOTFOUND, err, "volume '%.63s' (%s) of the session no longer exists: %s",
                           json_string_value(json_object_get(m, "volume")), id, e2);
        *v = xrealloc(*v, (*n + 1) * sizeof(**v));
        /* shares_volumes_free frees name, host_path and path */
        (*v)[*n] = (backend_volume){.name = xstrdup(json_string_value(json_object_get(doc, "docker"))),
                                    .host_path = NULL,
                                    .path = xstrdup(json_string_value(json_object_get(m, "path"))),
                                    .readonly = json_is_true(json_object_get(m, "readonly"))};
        (*n)++;
        json_decref(doc);
    }
    return RB_OK;
}

/* The stored document of a volume mount's volume (new reference), or NULL. */
static json_t *row_of(rb_core *c, json_t *m)
{
    const char *id = json_string_value(json_object_get(m, "volume_id"));
    json_t *doc = NULL;
    char e2[RB_ERR_LEN];
    if (id == NULL || store_volume_get(core_heart_store(c), id, &doc, e2) != RB_OK)
        return NULL;
    return doc;
}

static rb_err over(json_t *doc, const char *doing, char *err)
{
    return rb_fail(RB_ENOSPC, err,
                   "volume '%s' holds %lld bytes, over its quota of %lld bytes; %s: delete files in it first "
                   "(DELETE /sessions/{id}/files?path=...), then try again",
                   json_string_value(json_object_get(doc, "name")),
                   (long long)json_integer_value(json_object_get(doc, "used_bytes")),
                   (long long)json_integer_value(json_object_get(doc, "quota_bytes")), doing);
}

rb_err volumes_exec_check(rb_core *c, json_t *mounts, char *err)
{
    size_t i;
    json_t *m;
    json_array_foreach(mounts, i, m)
    {
        if (json_is_true(json_object_get(m, "readonly")))
            continue;
        json_t *doc = row_of(c, m);
        rb_err e = RB_OK;
        if (doc != NULL && json_is_true(json_object_get(doc, "over_quota")))
            e = over(doc, "code in a session that mounts it read-write does not run", err);
        json_decref(doc);
        if (e != RB_OK)
            return e;
    }
    return RB_OK;
}

/* Whether rel (relative to /workspace) lies in the mount at path ("/workspace/a/b"). */
static int lies_in(const char *rel, const char *path)
{
    const char *p = path + strlen("/workspace/");
    size_t n = strlen(p);
    return strncmp(rel, p, n) == 0 && (rel[n] == '\0' || rel[n] == '/');
}

rb_err volumes_upload_check(rb_core *c, json_t *mounts, const char *rel, size_t len, char *err)
{
    size_t i;
    json_t *m;
    json_array_foreach(mounts, i, m)
    {
        const char *path = json_string_value(json_object_get(m, "path"));
        if (json_object_get(m, "volume_id") == NULL || path == NULL || !lies_in(rel, path))
            continue;
        json_t *doc = row_of(c, m);
        if (doc == NULL)
            return RB_OK;
        rb_err e = RB_OK;
        int64_t used = json_integer_value(json_object_get(doc, "used_bytes")),
                quota = json_integer_value(json_object_get(doc, "quota_bytes"));
        if (json_is_true(json_object_get(doc, "over_quota")))
            e = over(doc, "nothing more is uploaded into it", err);
        else if (used + (int64_t)len > quota)
            e = rb_fail(RB_ENOSPC, err,
                        "the file is %zu bytes and volume '%s' holds %lld of its quota of %lld bytes; delete files "
                        "in it or make a volume with a larger quota_bytes",
                        len, json_string_value(json_object_get(doc, "name")), (long long)used, (long long)quota);
        json_decref(doc);
        return e;
    }
    return RB_OK;
}

void volumes_touched(rb_core *c, json_t *mounts, const char *rel)
{
    size_t i;
    json_t *m;
    json_array_foreach(mounts, i, m)
    {
        const char *id = json_string_value(json_object_get(m, "volume_id"));
        const char *path = json_string_value(json_object_get(m, "path"));
        if (id == NULL || path == NULL)
            continue;
        if (rel == NULL ? !json_is_true(json_object_get(m, "readonly")) : lies_in(rel, path))
            volumes__measure(c, id);
    }
}

/* ---- the sweep at start ------------------------------------------------------------------- */

/* Rows whose creation a restart cut short (another process's mark): the row and the volume go. */
static void undo_cut_creations(rb_core *c)
{
    json_t *all = NULL;
    char e2[RB_ERR_LEN];
    if (store_volume_list(core_heart_store(c), &all, e2) != RB_OK) {
        rb_warn("cannot list volumes: %s", e2);
        return;
    }
    size_t i;
    json_t *d;
    json_array_foreach(all, i, d)
    {
        const char *mark = json_string_value(json_object_get(d, "creating"));
        const char *id = json_string_value(json_object_get(d, "volume_id"));
        const char *docker = json_string_value(json_object_get(d, "docker"));
        if (mark == NULL || id == NULL || strcmp(mark, volumes__creation_mark()) == 0)
            continue;
        rb_info("volume %s: runboxd restarted before its creation was answered; removing it", id);
        if (store_volume_delete(core_heart_store(c), id, e2) != RB_OK)
            rb_warn("volume %s: could not forget it: %s", id, e2);
        else if (docker != NULL)
            core_heart_drop_volume(c, docker, "volume");
    }
    json_decref(all);
}

static void sweep_listed_cb(void *data, rb_err err, const char *msg, const backend_sandbox_info *items, size_t n)
{
    rb_core *c = data;
    core_heart_hold(c, -1);
    if (err != RB_OK) {
        if (err != RB_ECANCELED)
            rb_warn("cannot list volumes: %s", msg);
        return;
    }
    for (size_t i = 0; i < n; i++) {
        const char *id = json_string_value(json_object_get(items[i].labels, VOLUMES_LABEL));
        json_t *doc = NULL;
        char e2[RB_ERR_LEN];
        if (id == NULL)
            continue;
        rb_err e = store_volume_get(core_heart_store(c), id, &doc, e2);
        json_decref(doc);
        if (e == RB_ENOTFOUND) {
            rb_info("volume %s: no row names it (its creation was cut short); removing it", id);
            core_heart_drop_volume(c, items[i].id, "volume");
        }
    }
}

void volumes_sweep(rb_core *c)
{
    char label[96], e2[RB_ERR_LEN];
    undo_cut_creations(c);
    snprintf(label, sizeof(label), "runbox.instance=%s", core_heart_instance(c));
    core_heart_hold(c, 1);
    if (backend_volume_list_unused(core_heart_backend(c), label, sweep_listed_cb, c, e2) != RB_OK) {
        core_heart_hold(c, -1);
        rb_warn("cannot list volumes: %s", e2);
    }
}

/*
 * heart.c: the door of core/heart.h, through which the rooms in core's sub-folders use the
 * session manager's heart. Thin on purpose: each function reads or marks one thing of the heart
 * (core/internal.h) for a room that may not include it.
 */
#include "core/heart.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "base/mem.h"

#include "core/internal.h"

void core__session_view(const session *s, core_session_view *out)
{
    *out = (core_session_view){s->id, s->status, s->container_id, json_object_get(s->options, "environment_variables"),
                               s->language, json_object_get(s->options, "mounts"), s->cpus, s->workspace_bytes,
                               s->owner};
}

void core_heart_each(rb_core *c, void (*fn)(void *data, const core_session_view *v), void *data)
{
    size_t pos = 0;
    session *s;
    while ((s = map_next(&c->sessions, &pos)) != NULL) {
        core_session_view v;
        core__session_view(s, &v);
        fn(data, &v);
    }
}

rb_err core_heart_lookup(rb_core *c, const core_caller *who, const char *session_id, core_session_view *out,
                         char *err)
{
    session *s = core__live_session(c, who, session_id, err);
    if (s == NULL)
        return RB_ENOTFOUND;
    core__session_view(s, out);
    return RB_OK;
}

rb_err core_heart_session(rb_core *c, const core_caller *who, const char *session_id, core_session_view *out,
                          char *err)
{
    rb_err e = core_heart_lookup(c, who, session_id, out, err);
    if (e != RB_OK)
        return e;
    if (strcmp(out->status, "suspended") == 0 || strcmp(out->status, "hibernated") == 0)
        return rb_fail(RB_ECONFLICT, err,
                       "session %s is %s; resume it first (POST /sessions/%s/resume, or run code in it: an execution "
                       "resumes it)",
                       out->id, out->status, out->id);
    if (strcmp(out->status, "ready") != 0 && strcmp(out->status, "busy") != 0)
        return rb_fail(RB_ECONFLICT, err, "session %s is %s; its sandbox can be used once it is ready", out->id,
                       out->status);
    if (out->container_id == NULL)
        return rb_fail(RB_ECONFLICT, err, "session %s has no sandbox container", out->id);
    return RB_OK;
}

void core_heart_touch(rb_core *c, const char *session_id)
{
    session *s = map_get(&c->sessions, session_id);
    if (s != NULL)
        s->last_used_at = rb_now_ms();
}

struct store *core_heart_store(rb_core *c)
{
    return c->st;
}

json_t *core_heart_mounting(rb_core *c, const char *volume_id)
{
    json_t *out = json_array();
    size_t pos = 0;
    session *s;
    while ((s = map_next(&c->sessions, &pos)) != NULL) {
        size_t i;
        json_t *m;
        json_array_foreach(json_object_get(s->options, "mounts"), i, m)
        {
            const char *v = json_string_value(json_object_get(m, "volume_id"));
            if (v != NULL && strcmp(v, volume_id) == 0) {
                json_array_append_new(out, json_string(s->id));
                break;
            }
        }
    }
    return out;
}

struct uv_loop_s *core_heart_loop(rb_core *c)
{
    return c->loop;
}

backend *core_heart_backend(rb_core *c)
{
    return c->be;
}

const core_settings *core_heart_settings(const rb_core *c)
{
    return c->cfg;
}

void **core_heart_room(rb_core *c, core_room room)
{
    return &c->rooms[room];
}

int core_heart_closing(const rb_core *c)
{
    return c->closing;
}

int core_heart_engine_ok(const rb_core *c, const char **why)
{
    if (why != NULL)
        *why = c->docker_error;
    return c->docker_ok;
}

const char *core_heart_instance(const rb_core *c)
{
    return c->instance;
}

void core_heart_hold(rb_core *c, int delta)
{
    c->pending_ops += delta;
}

void core_heart_remove(rb_core *c, const char *id)
{
    removal_start(c, id, 0);
}

typedef struct drop {
    rb_core *c;
    const char *what;
    char name[];
} drop;

static void dropped_cb(void *data, rb_err err, const char *msg)
{
    drop *d = data;
    core_heart_hold(d->c, -1);
    if (err != RB_OK && err != RB_ENOTFOUND && err != RB_ECANCELED)
        rb_warn("%s %.64s: could not remove it (the next start does): %s", d->what, d->name, msg);
    free(d);
}

void core_heart_drop_volume(rb_core *c, const char *volume, const char *what)
{
    char e2[RB_ERR_LEN];
    size_t n = strlen(volume);
    drop *d = xmalloc(sizeof(*d) + n + 1);
    d->c = c;
    d->what = what;
    memcpy(d->name, volume, n + 1);
    core_heart_hold(c, 1);
    if (backend_volume_remove(c->be, volume, dropped_cb, d, e2) != RB_OK) {
        core_heart_hold(c, -1);
        rb_warn("%s %.64s: could not remove it (the next start does): %s", what, volume, e2);
        free(d);
    }
}

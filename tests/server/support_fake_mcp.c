/*
 * support_fake_mcp.c: an in-memory stand-in for core/mcp_sessions.h over the fake core, so the server/
 * unit tests link and can drive /mcp without SQLite. Records live in a list; no idle expiry.
 * Bound sandboxes are created with the fake core's core_session_create.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/mcp_sessions.h"

typedef struct fake_rec {
    char id[MCP_SESSIONS_ID_LEN];
    json_t *doc;
    int ended;
    void *transport;
    struct fake_rec *next;
} fake_rec;

typedef struct fake_bind {
    mcp_sessions *m;
    char id[MCP_SESSIONS_ID_LEN];
    char lang[8];
    core_cb cb;
    void *data;
    struct fake_bind *next;
} fake_bind;

struct mcp_sessions {
    rb_core *core;
    fake_rec *recs;
    fake_bind *binds;
    mcp_sessions_detach_cb on_detach;
    void *on_detach_data;
};

rb_err mcp_sessions_new(rb_core *c, mcp_sessions **out, char *err)
{
    (void)err;
    mcp_sessions *m = xcalloc(1, sizeof(*m));
    m->core = c;
    *out = m;
    return RB_OK;
}

void mcp_sessions_free(mcp_sessions *m)
{
    if (m == NULL)
        return;
    while (m->recs != NULL) {
        fake_rec *r = m->recs;
        m->recs = r->next;
        if (r->transport != NULL && m->on_detach != NULL)
            m->on_detach(m->on_detach_data, r->id, r->transport);
        json_decref(r->doc);
        free(r);
    }
    while (m->binds != NULL) {
        fake_bind *b = m->binds;
        m->binds = b->next;
        free(b);
    }
    free(m);
}

void mcp_sessions_on_detach(mcp_sessions *m, mcp_sessions_detach_cb cb, void *data)
{
    m->on_detach = cb;
    m->on_detach_data = data;
}

rb_err mcp_sessions_create(mcp_sessions *m, const core_caller *who, json_t *info, json_t **out, char *err)
{
    (void)who;
    (void)err;
    fake_rec *r = xcalloc(1, sizeof(*r));
    rb_random_id("m_", r->id, sizeof(r->id));
    r->doc = json_pack("{s:s, s:O?, s:s, s:{}}", "mcp_session_id", r->id, "protocol_version",
                       json_object_get(info, "protocol_version"), "log_level", "warning", "bound");
    r->next = m->recs;
    m->recs = r;
    *out = json_deep_copy(r->doc);
    return RB_OK;
}

static fake_rec *find(mcp_sessions *m, const char *id, char *err)
{
    for (fake_rec *r = m->recs; r != NULL; r = r->next)
        if (strcmp(r->id, id) == 0) {
            if (r->ended) {
                rb_fail(RB_ENOTFOUND, err, "MCP session %s has ended", id);
                return NULL;
            }
            return r;
        }
    rb_fail(RB_ENOTFOUND, err, "no MCP session %.64s", id);
    return NULL;
}

rb_err mcp_sessions_touch(mcp_sessions *m, const core_caller *who, const char *id, json_t **out, char *err)
{
    (void)who;
    fake_rec *r = find(m, id, err);
    if (r == NULL)
        return RB_ENOTFOUND;
    if (out != NULL)
        *out = json_deep_copy(r->doc);
    return RB_OK;
}

rb_err mcp_sessions_set(mcp_sessions *m, const char *id, const char *key, json_t *value, char *err)
{
    fake_rec *r = find(m, id, err);
    if (r == NULL)
        return RB_ENOTFOUND;
    json_object_set(r->doc, key, value);
    return RB_OK;
}

void mcp_sessions_hold(mcp_sessions *m, const char *id, int delta)
{
    (void)m;
    (void)id;
    (void)delta;
}

rb_err mcp_sessions_end(mcp_sessions *m, const core_caller *who, const char *id, const char *reason, char *err)
{
    (void)who;
    (void)reason;
    fake_rec *r = find(m, id, err);
    if (r == NULL)
        return RB_ENOTFOUND;
    r->ended = 1;
    const char *lang;
    json_t *sid;
    json_object_foreach(json_object_get(r->doc, "bound"), lang, sid)
    {
        json_t *o = NULL;
        core_session_delete(m->core, NULL, json_string_value(sid), &o, NULL);
        json_decref(o);
    }
    void *transport = r->transport;
    r->transport = NULL;
    if (transport != NULL && m->on_detach != NULL)
        m->on_detach(m->on_detach_data, id, transport);
    return RB_OK;
}

void *mcp_sessions_transport(const mcp_sessions *m, const char *id)
{
    fake_rec *r = find((mcp_sessions *)m, id, NULL);
    return r != NULL ? r->transport : NULL;
}

rb_err mcp_sessions_attach(mcp_sessions *m, const char *id, void *transport, char *err)
{
    fake_rec *r = find(m, id, err);
    if (r == NULL)
        return RB_ENOTFOUND;
    if (r->transport != NULL)
        return rb_fail(RB_ECONFLICT, err, "MCP session %s has a transport attached already", id);
    r->transport = transport;
    return RB_OK;
}

static void bound_cb(void *data, rb_err e, const char *msg, json_t *body)
{
    fake_bind *b = data;
    mcp_sessions *m = b->m;
    for (fake_bind **pp = &m->binds; *pp != NULL; pp = &(*pp)->next)
        if (*pp == b) {
            *pp = b->next;
            break;
        }
    fake_rec *r = find(m, b->id, NULL);
    if (e == RB_OK && r != NULL)
        json_object_set(json_object_get(r->doc, "bound"), b->lang, json_object_get(body, "session_id"));
    json_decref(body);
    if (e == RB_OK)
        b->cb(b->data, RB_OK, NULL, json_pack("{s:O, s:b}", "session_id",
                                               json_object_get(json_object_get(r->doc, "bound"), b->lang), "replaced",
                                               0));
    else
        b->cb(b->data, e, msg, NULL);
    free(b);
}

rb_err mcp_sessions_bound_sandbox(mcp_sessions *m, const core_caller *who, const char *id, const char *language,
                                  json_t *mounts, char *session_id, core_cb cb, void *data, core_op **handle, char *err)
{
    (void)who;
    (void)mounts;
    session_id[0] = '\0';
    fake_rec *r = find(m, id, err);
    if (r == NULL)
        return RB_ENOTFOUND;
    const char *sid = json_string_value(json_object_get(json_object_get(r->doc, "bound"), language));
    if (sid != NULL) {
        snprintf(session_id, MCP_SESSIONS_ID_LEN, "%s", sid);
        return RB_OK;
    }
    fake_bind *b = xcalloc(1, sizeof(*b));
    b->m = m;
    snprintf(b->id, sizeof(b->id), "%s", id);
    snprintf(b->lang, sizeof(b->lang), "%s", language);
    b->cb = cb;
    b->data = data;
    json_t *opts = json_pack("{s:s}", "language", language);
    rb_err e = core_session_create(m->core, NULL, opts, bound_cb, b, handle, err);
    json_decref(opts);
    if (e != RB_OK) {
        free(b);
        return e;
    }
    b->next = m->binds;
    m->binds = b;
    return RB_OK;
}

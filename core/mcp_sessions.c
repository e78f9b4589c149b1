/*
 * core/mcp_sessions.c: MCP session records (core/mcp_sessions.h). Live records are kept in a map (loaded from the
 * store at start-up, so they survive restarts) and written through to the store; a touch is
 * written at most once a second per session (and flushed on mcp_sessions_free). A timer ends
 * sessions idle for the configured idle-timeout. The bound sandbox sessions are ordinary core
 * sessions created through core_session_create; concurrent first uses of one MCP session join
 * a single creation instead of starting two sandboxes.
 */
#include "core/mcp_sessions.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"

#define MCP_SWEEP_MS 2000
#define MCP_TOUCH_PERSIST_MS 1000
#define MCP_LANGS 4

static const char *const langs[MCP_LANGS] = {"python", "bash", "javascript", "typescript"};

typedef struct mcp_rec mcp_rec;

/* A bound-session creation under way, joined by every caller that asks meanwhile. */
typedef struct bind_wait {
    mcp_sessions *m;
    mcp_rec *rec; /* NULL once the MCP session ended */
    int lang;
    int replaced;
    core_op *create_op;
    core_op **waiters;
    size_t nwaiters;
    struct bind_wait *next; /* mcp_sessions's list */
} bind_wait;

struct mcp_rec {
    char id[MCP_SESSIONS_ID_LEN];
    json_t *doc;
    int holds;
    int dirty;
    int64_t persisted_at;
    bind_wait *pending[MCP_LANGS];
    void *transport; /* the transport layer's state for this session, or NULL */
};

struct mcp_sessions {
    rb_core *core;
    rb_map live; /* mcp_rec by id */
    uv_timer_t *sweep;
    bind_wait *waits;
    mcp_sessions_detach_cb on_detach;
    void *on_detach_data;
};

static int lang_index(const char *language)
{
    for (int i = 0; i < MCP_LANGS; i++)
        if (strcmp(langs[i], language) == 0)
            return i;
    return -1;
}

static rb_err persist(mcp_sessions *m, mcp_rec *r, char *err)
{
    rb_err e = store_mcp_session_put(m->core->st, r->doc, err);
    if (e == RB_OK) {
        r->dirty = 0;
        r->persisted_at = rb_now_ms();
    }
    return e;
}

static mcp_rec *rec_new(json_t *doc)
{
    mcp_rec *r = xcalloc(1, sizeof(*r));
    snprintf(r->id, sizeof(r->id), "%s", json_string_value(json_object_get(doc, "mcp_session_id")));
    r->doc = json_incref(doc);
    if (!json_is_object(json_object_get(doc, "bound")))
        json_object_set_new(doc, "bound", json_object());
    return r;
}

static void rec_free(mcp_rec *r)
{
    for (int i = 0; i < MCP_LANGS; i++)
        if (r->pending[i] != NULL)
            r->pending[i]->rec = NULL;
    json_decref(r->doc);
    free(r);
}

/* Whether the sandbox session sid is live (not ended or dead); *busy says if it is running code. */
static int sandbox_live(mcp_sessions *m, const char *sid, int *busy)
{
    json_t *s = NULL;
    if (busy != NULL)
        *busy = 0;
    if (core_session_get(m->core, NULL, sid, &s, NULL) != RB_OK)
        return 0;
    const char *st = json_string_value(json_object_get(s, "status"));
    int live = st != NULL && strcmp(st, "ended") != 0 && strcmp(st, "dead") != 0;
    if (busy != NULL && st != NULL && strcmp(st, "busy") == 0)
        *busy = 1;
    json_decref(s);
    return live;
}

static void end_rec(mcp_sessions *m, mcp_rec *r, const char *reason)
{
    char err[RB_ERR_LEN];
    json_object_set_new(r->doc, "ended_at", json_integer(rb_now_ms()));
    json_object_set_new(r->doc, "end_reason", json_string(reason));
    if (persist(m, r, err) != RB_OK)
        rb_error("mcp session %s: cannot save: %s", r->id, err);
    const char *lang;
    json_t *sid;
    json_object_foreach(json_object_get(r->doc, "bound"), lang, sid)
    {
        json_t *out = NULL;
        const char *id = json_string_value(sid);
        if (id != NULL && core_session_delete(m->core, NULL, id, &out, NULL) == RB_OK)
            rb_info("mcp session %s: ended its %s sandbox session %s", r->id, lang, id);
        json_decref(out);
    }
    rb_info("mcp session %s ended: %s", r->id, reason);
    map_del(&m->live, r->id);
    stats_mcp_sessions(m->core, m->live.len);
    char id[MCP_SESSIONS_ID_LEN];
    snprintf(id, sizeof(id), "%s", r->id);
    void *transport = r->transport;
    rec_free(r);
    if (transport != NULL && m->on_detach != NULL)
        m->on_detach(m->on_detach_data, id, transport);
}

static int expired(const mcp_sessions *m, const mcp_rec *r, int64_t now)
{
    int idle = m->core->cfg->idle_timeout;
    if (idle <= 0 || r->holds > 0)
        return 0;
    for (int i = 0; i < MCP_LANGS; i++)
        if (r->pending[i] != NULL)
            return 0;
    int64_t last = json_integer_value(json_object_get(r->doc, "last_used_at"));
    return now - last >= (int64_t)idle * 1000;
}

static void sweep_cb(uv_timer_t *t)
{
    mcp_sessions *m = t->data;
    int64_t now = rb_now_ms();
    size_t pos = 0;
    mcp_rec *r;
    while ((r = map_next(&m->live, &pos)) != NULL) {
        if (!expired(m, r, now))
            continue;
        /* Code still running in a bound sandbox counts as use. */
        int busy = 0, any_busy = 0;
        const char *lang;
        json_t *sid;
        json_object_foreach(json_object_get(r->doc, "bound"), lang, sid)
        {
            if (json_is_string(sid) && sandbox_live(m, json_string_value(sid), &busy) && busy)
                any_busy = 1;
        }
        if (any_busy)
            continue;
        char reason[128];
        snprintf(reason, sizeof(reason), "idle for %d s (the idle timeout)", m->core->cfg->idle_timeout);
        end_rec(m, r, reason);
    }
}

rb_err mcp_sessions_new(rb_core *c, mcp_sessions **out, char *err)
{
    json_t *list = NULL;
    rb_err e = store_mcp_session_list(c->st, 0, &list, err);
    if (e != RB_OK)
        return e;
    mcp_sessions *m = xcalloc(1, sizeof(*m));
    m->core = c;
    map_init(&m->live);
    size_t i;
    json_t *doc;
    json_array_foreach(list, i, doc)
    {
        const char *id = json_string_value(json_object_get(doc, "mcp_session_id"));
        if (id == NULL || strlen(id) >= MCP_SESSIONS_ID_LEN)
            continue;
        mcp_rec *r = rec_new(doc);
        r->persisted_at = rb_now_ms();
        map_put(&m->live, r->id, r);
    }
    json_decref(list);
    stats_mcp_sessions(c, m->live.len);
    m->sweep = xmalloc(sizeof(*m->sweep));
    uv_timer_init(c->loop, m->sweep);
    m->sweep->data = m;
    uv_timer_start(m->sweep, sweep_cb, MCP_SWEEP_MS, MCP_SWEEP_MS);
    *out = m;
    return RB_OK;
}

static void timer_closed(uv_handle_t *h)
{
    free(h);
}

static void wait_free(bind_wait *w)
{
    for (size_t i = 0; i < w->nwaiters; i++)
        free(w->waiters[i]);
    free(w->waiters);
    free(w);
}

static void wait_unlink(mcp_sessions *m, bind_wait *w)
{
    for (bind_wait **pp = &m->waits; *pp != NULL; pp = &(*pp)->next) {
        if (*pp == w) {
            *pp = w->next;
            break;
        }
    }
}

void mcp_sessions_free(mcp_sessions *m)
{
    if (m == NULL)
        return;
    uv_timer_stop(m->sweep);
    uv_close((uv_handle_t *)m->sweep, timer_closed);
    while (m->waits != NULL) {
        bind_wait *w = m->waits;
        m->waits = w->next;
        core_cancel(w->create_op);
        if (w->rec != NULL)
            w->rec->pending[w->lang] = NULL;
        wait_free(w);
    }
    size_t pos = 0;
    mcp_rec *r;
    while ((r = map_next(&m->live, &pos)) != NULL) {
        char err[RB_ERR_LEN];
        if (r->dirty && persist(m, r, err) != RB_OK)
            rb_error("mcp session %s: cannot save: %s", r->id, err);
        map_del(&m->live, r->id);
        if (r->transport != NULL && m->on_detach != NULL)
            m->on_detach(m->on_detach_data, r->id, r->transport);
        rec_free(r);
    }
    map_dispose(&m->live);
    free(m);
}

void mcp_sessions_on_detach(mcp_sessions *m, mcp_sessions_detach_cb cb, void *data)
{
    m->on_detach = cb;
    m->on_detach_data = data;
}

void *mcp_sessions_transport(const mcp_sessions *m, const char *id)
{
    mcp_rec *r = map_get(&m->live, id);
    return r != NULL ? r->transport : NULL;
}

rb_err mcp_sessions_attach(mcp_sessions *m, const char *id, void *transport, char *err)
{
    mcp_rec *r = map_get(&m->live, id);
    if (r == NULL)
        return rb_fail(RB_ENOTFOUND, err, "MCP session %s is not live", id);
    if (r->transport != NULL)
        return rb_fail(RB_ECONFLICT, err, "MCP session %s has a transport attached already", id);
    r->transport = transport;
    return RB_OK;
}

rb_err mcp_sessions_create(mcp_sessions *m, const core_caller *who, json_t *info, json_t **out, char *err)
{
    if (m->live.len >= (size_t)m->core->cfg->max_mcp_sessions)
        return rb_fail(RB_EBUSY, err,
                       "too many MCP sessions are open (max-mcp-sessions %d): end unused ones with DELETE /mcp, or "
                       "wait for them to expire after the idle timeout",
                       m->core->cfg->max_mcp_sessions);
    /* clientInfo and capabilities come from anyone who can reach the port and are kept for the
     * session's life: a few KiB is plenty for what clients send. */
    char *text = json_dumps(info, JSON_COMPACT);
    size_t len = text != NULL ? strlen(text) : 0;
    free(text);
    if (len > MCP_SESSIONS_INFO_MAX)
        return rb_fail(RB_EINVAL, err, "initialize: clientInfo and capabilities take %zu bytes; at most %d are kept",
                       len, MCP_SESSIONS_INFO_MAX);
    char id[MCP_SESSIONS_ID_LEN];
    rb_random_id("m_", id, sizeof(id));
    int64_t now = rb_now_ms();
    json_t *pv = json_object_get(info, "protocol_version");
    json_t *doc = json_pack("{s:s, s:I, s:I, s:n, s:O?, s:O?, s:O?, s:s, s:{}}", "mcp_session_id", id, "created_at",
                            (json_int_t)now, "last_used_at", (json_int_t)now, "ended_at", "protocol_version", pv,
                            "client_info", json_object_get(info, "client_info"), "client_capabilities",
                            json_object_get(info, "client_capabilities"), "log_level", "warning", "bound");
    if (doc == NULL)
        return rb_fail(RB_EINVAL, err, "the MCP session information is not valid JSON");
    if (who != NULL)
        json_object_set_new(doc, "owner", json_string(who->owner));
    mcp_rec *r = rec_new(doc);
    json_decref(doc);
    rb_err e = persist(m, r, err);
    if (e != RB_OK) {
        rec_free(r);
        return e;
    }
    map_put(&m->live, r->id, r);
    stats_mcp_sessions(m->core, m->live.len);
    *out = json_deep_copy(r->doc);
    return RB_OK;
}

/* The live record for id, or NULL with RB_ENOTFOUND text in err (ended or unknown). */
/* The live record id if who may use it (another key's session is "no MCP session", like an
 * unknown id); else NULL with err saying why. */
static mcp_rec *find(mcp_sessions *m, const core_caller *who, const char *id, char *err)
{
    mcp_rec *r = id != NULL ? map_get(&m->live, id) : NULL;
    if (r != NULL && core__doc_visible(who, r->doc))
        return r;
    json_t *doc = NULL;
    if (r == NULL && id != NULL && store_mcp_session_get(m->core->st, id, &doc, NULL) == RB_OK &&
        core__doc_visible(who, doc)) {
        const char *why = json_string_value(json_object_get(doc, "end_reason"));
        rb_fail(RB_ENOTFOUND, err, "MCP session %.64s has ended (%s); start a new one with initialize", id,
                why ? why : "no reason recorded");
        json_decref(doc);
        return NULL;
    }
    json_decref(doc);
    rb_fail(RB_ENOTFOUND, err, "no MCP session %.64s; start one with initialize", id ? id : "");
    return NULL;
}

rb_err mcp_sessions_touch(mcp_sessions *m, const core_caller *who, const char *id, json_t **out, char *err)
{
    mcp_rec *r = find(m, who, id, err);
    if (r == NULL)
        return RB_ENOTFOUND;
    /* Used by its own key only, whatever the role: its transport's calls run as that key (an admin
     * or a viewer that could see it would otherwise become the key of the owner's calls) */
    const char *owner = json_string_value(json_object_get(r->doc, "owner"));
    if (who != NULL && strcmp(who->owner, owner != NULL ? owner : "") != 0)
        return rb_fail(RB_ENOTFOUND, err,
                       "MCP session %.64s belongs to the key '%.64s': an MCP session serves only the key that started it; "
                       "start your own with initialize (an admin reaches other keys' sessions from it, by session_id)",
                       id, owner != NULL ? owner : "");
    int64_t now = rb_now_ms();
    if (expired(m, r, now)) {
        char reason[128];
        snprintf(reason, sizeof(reason), "idle for %d s (the idle timeout)", m->core->cfg->idle_timeout);
        end_rec(m, r, reason);
        return rb_fail(RB_ENOTFOUND, err, "MCP session %.64s has ended (%s); start a new one with initialize", id,
                       reason);
    }
    json_object_set_new(r->doc, "last_used_at", json_integer(now));
    r->dirty = 1;
    if (now - r->persisted_at >= MCP_TOUCH_PERSIST_MS) {
        char e2[RB_ERR_LEN];
        if (persist(m, r, e2) != RB_OK)
            rb_warn("mcp session %s: cannot save: %s", r->id, e2);
    }
    if (out != NULL)
        *out = json_deep_copy(r->doc);
    return RB_OK;
}

rb_err mcp_sessions_set(mcp_sessions *m, const char *id, const char *key, json_t *value, char *err)
{
    static const char *const reserved[] = {"mcp_session_id", "created_at", "last_used_at", "ended_at", "bound",
                                           "end_reason", NULL};
    mcp_rec *r = find(m, NULL, id, err); /* the transport has checked the caller (touch) */
    if (r == NULL)
        return RB_ENOTFOUND;
    for (const char *const *k = reserved; *k != NULL; k++)
        if (strcmp(*k, key) == 0)
            return rb_fail(RB_EINVAL, err, "the MCP session member '%s' cannot be set", key);
    json_object_set(r->doc, key, value);
    return persist(m, r, err);
}

void mcp_sessions_hold(mcp_sessions *m, const char *id, int delta)
{
    mcp_rec *r = id != NULL ? map_get(&m->live, id) : NULL;
    if (r == NULL)
        return;
    r->holds += delta;
    if (r->holds < 0)
        r->holds = 0;
    if (delta < 0) {
        /* The end of a long request counts as use. */
        json_object_set_new(r->doc, "last_used_at", json_integer(rb_now_ms()));
        r->dirty = 1;
    }
}

rb_err mcp_sessions_end(mcp_sessions *m, const core_caller *who, const char *id, const char *reason, char *err)
{
    mcp_rec *r = find(m, who, id, err);
    if (r == NULL)
        return RB_ENOTFOUND;
    end_rec(m, r, reason != NULL ? reason : "ended by request");
    return RB_OK;
}

/* ---- bound sandbox sessions ------------------------------------------------------------ */

static void bound_created_cb(void *data, rb_err e, const char *msg, json_t *body)
{
    bind_wait *w = data;
    mcp_sessions *m = w->m;
    char err[RB_ERR_LEN];
    wait_unlink(m, w);
    const char *sid = json_string_value(json_object_get(body, "session_id"));
    mcp_rec *r = w->rec;
    if (r != NULL)
        r->pending[w->lang] = NULL;
    if (e == RB_OK && sid == NULL) {
        e = RB_EINTERNAL;
        msg = "the new session has no session_id";
    }
    if (e == RB_OK && r == NULL) {
        /* The MCP session ended while its sandbox was starting: it goes too. */
        json_t *out = NULL;
        core_session_delete(m->core, NULL, sid, &out, NULL);
        json_decref(out);
        e = RB_ENOTFOUND;
        msg = "the MCP session ended while its sandbox was starting";
    }
    if (e == RB_OK) {
        json_object_set_new(json_object_get(r->doc, "bound"), langs[w->lang], json_string(sid));
        if (persist(m, r, err) != RB_OK)
            rb_error("mcp session %s: cannot save its bound session: %s", r->id, err);
        rb_info("mcp session %s: bound %s sandbox session %s", r->id, langs[w->lang], sid);
    }
    for (size_t i = 0; i < w->nwaiters; i++) {
        core_op *op = w->waiters[i];
        if (op->cancelled)
            continue;
        if (e == RB_OK)
            op->cb(op->data, RB_OK, NULL, json_pack("{s:s, s:b}", "session_id", sid, "replaced", w->replaced));
        else
            op->cb(op->data, e, msg, NULL);
    }
    json_decref(body);
    wait_free(w);
}

static core_op *wait_join(bind_wait *w, core_cb cb, void *data)
{
    core_op *op = xcalloc(1, sizeof(*op));
    op->cb = cb;
    op->data = data;
    w->waiters = xrealloc(w->waiters, (w->nwaiters + 1) * sizeof(*w->waiters));
    w->waiters[w->nwaiters++] = op;
    return op;
}

rb_err mcp_sessions_bound_sandbox(mcp_sessions *m, const core_caller *who, const char *id, const char *language,
                                  json_t *mounts, char *session_id, core_cb cb, void *data, core_op **handle,
                                  char *err)
{
    session_id[0] = '\0';
    if (handle != NULL)
        *handle = NULL;
    int li = language != NULL ? lang_index(language) : 0;
    if (li < 0)
        return rb_fail(RB_EINVAL, err, "'language' must be " CORE_LANGUAGES_TEXT);
    mcp_rec *r = find(m, who, id, err);
    if (r == NULL)
        return RB_ENOTFOUND;
    json_t *bound = json_object_get(r->doc, "bound");
    const char *sid = json_string_value(json_object_get(bound, langs[li]));
    int replaced = 0;
    if (sid != NULL) {
        if (sandbox_live(m, sid, NULL)) {
            snprintf(session_id, MCP_SESSIONS_ID_LEN, "%s", sid);
            return RB_OK;
        }
        replaced = 1;
    }
    if (r->pending[li] != NULL) {
        core_op *op = wait_join(r->pending[li], cb, data);
        if (handle != NULL)
            *handle = op;
        return RB_OK;
    }
    bind_wait *w = xcalloc(1, sizeof(*w));
    w->m = m;
    w->rec = r;
    w->lang = li;
    w->replaced = replaced;
    json_t *opts = json_pack("{s:s}", "language", langs[li]);
    if (mounts != NULL && !json_is_null(mounts))
        json_object_set_new(opts, "execution_options", json_pack("{s:O}", "mounts", mounts));
    rb_err e = core_session_create(m->core, who, opts, bound_created_cb, w, &w->create_op, err);
    json_decref(opts);
    if (e != RB_OK) {
        free(w);
        return e;
    }
    r->pending[li] = w;
    w->next = m->waits;
    m->waits = w;
    core_op *op = wait_join(w, cb, data);
    if (handle != NULL)
        *handle = op;
    return RB_OK;
}

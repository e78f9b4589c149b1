/*
 * core.c: the public face of the session manager (core/core.h): start-up and shutdown, idle
 * expiry and retention sweeps, and the session and execution entry points used by REST and
 * MCP alike. Validation of requests is in validate.c; who may see what and the quotas of API
 * keys in caller.c; the Docker probe and re-adoption of containers after a restart in recovery.c.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/backend/docker.h"
#include "core/backend/multi.h"
#include "core/internal.h"
#include "core/audit/audit.h"
#include "core/isolation/isolation.h"
#include "core/pool.h"

#define SWEEP_MS 1000
#define CHECKPOINT_MS 30000
#define PRUNE_EVERY_MS (3600 * 1000)

void core_json_time(json_t *obj, const char *key, int64_t ms)
{
    char buf[40];
    rb_time_format(ms, buf, sizeof(buf));
    json_object_set_new(obj, key, json_string(buf));
}

void core_json_ms(json_t *obj, const char *key, int64_t ms)
{
    json_object_set_new(obj, key, ms > 0 ? json_integer(ms) : json_null());
}

int64_t core_default_memory(const rb_core *c)
{
    return (int64_t)c->cfg->memory_mb * 1024 * 1024;
}

static uv_timer_t *new_timer(rb_core *c)
{
    uv_timer_t *t = xmalloc(sizeof(*t));
    uv_timer_init(c->loop, t);
    t->data = c;
    return t;
}

static void timer_close_cb(uv_handle_t *h)
{
    free(h);
}

static void close_timer(uv_timer_t *t)
{
    if (t == NULL)
        return;
    uv_timer_stop(t);
    uv_close((uv_handle_t *)t, timer_close_cb);
}

/* ---- sweeps ------------------------------------------------------------------------- */

/* Writes the sessions whose row is behind (see execution_finish) in one transaction. */
static void flush_sessions(rb_core *c)
{
    size_t pos = 0;
    session *s;
    int open = 0;
    while ((s = map_next(&c->sessions, &pos)) != NULL) {
        if (!s->dirty)
            continue;
        if (!open)
            open = store_begin(c->st, NULL) == RB_OK;
        session_persist(s);
    }
    if (open)
        store_commit(c->st, NULL);
}

static void sweep_cb(uv_timer_t *t)
{
    rb_core *c = t->data;
    int64_t now = rb_now_ms();
    flush_sessions(c);
    core__end_past_deadline(c, now);
    {
        int64_t idle_ms = (int64_t)c->cfg->idle_timeout * 1000;
        size_t pos = 0;
        session *s;
        while ((s = map_next(&c->sessions, &pos)) != NULL) {
            if (s->pause != PAUSE_NONE) { /* suspended or hibernated: the next step (session_pause.c) */
                core__pause_idle(s, now);
                continue;
            }
            if (idle_ms <= 0 || strcmp(s->status, "ready") != 0 || s->running != NULL || s->queue_head != NULL)
                continue;
            if (now - s->last_used_at >= idle_ms && !core__pause_idle(s, now)) {
                char reason[128];
                snprintf(reason, sizeof(reason), "idle for %d s (the idle timeout); its sandbox was removed",
                         c->cfg->idle_timeout);
                session_end(s, "ended", reason);
            }
        }
    }
    if (c->recovered) {
        web_sweep(c, now);
        egress_sweep(c, now);
        removal_sweep_volumes(c, now);
        usage_sweep(c, now);
    }
    if (now - c->last_prune >= PRUNE_EVERY_MS) {
        char err[RB_ERR_LEN];
        int n = 0;
        c->last_prune = now;
        if (store_prune(c->st, now - (int64_t)c->cfg->retention * 1000, &n, err) != RB_OK)
            rb_warn("retention: %s", err);
        else if (n > 0)
            rb_info("retention: removed %d old records", n);
        audit_prune(c);
    }
}

static void checkpoint_cb(uv_timer_t *t)
{
    rb_core *c = t->data;
    store_checkpoint(c->st);
}

/* ---- lifecycle ---------------------------------------------------------------------- */

rb_err core_new(uv_loop_t *loop, const core_settings *cfg, rb_core **out, char *err)
{
    return core_new_with_backend(loop, cfg, NULL, out, err);
}

/* The backend over the engines of cfg->engines (core/backend/multi.h). */
static rb_err engines_backend(uv_loop_t *loop, const core_settings *cfg, backend **out, char *err)
{
    enum { MAX_ENGINES = 64 };
    backend_multi_engine engines[MAX_ENGINES];
    char *own[MAX_ENGINES];
    size_t n = 0;
    rb_err e = RB_OK;
    const char *p = cfg->engines;
    while (e == RB_OK && p != NULL && *p && n < MAX_ENGINES) {
        const char *nl = strchr(p, '\n');
        char *line = xstrndup(p, nl ? (size_t)(nl - p) : strlen(p));
        e = backend_multi_parse(line, cfg->engine_tls_ca, cfg->engine_tls_cert, cfg->engine_tls_key, &engines[n],
                                &own[n], err);
        free(line);
        if (e == RB_OK)
            n++;
        p = nl ? nl + 1 : NULL;
    }
    if (e == RB_OK)
        e = backend_multi_new(loop, engines, n, cfg->image, (long)(cfg->docker_timeout * 1000),
                              (long)(cfg->docker_transfer_timeout * 1000), out, err);
    for (size_t i = 0; i < n; i++)
        free(own[i]);
    return e;
}

rb_err core_new_with_backend(uv_loop_t *loop, const core_settings *cfg, backend *be, rb_core **out, char *err)
{
    rb_core *c = xcalloc(1, sizeof(*c));
    rb_err e;
    c->loop = loop;
    c->cfg = cfg;
    map_init(&c->sessions);
    map_init(&c->executions);
    map_init(&c->removals);

    if ((e = policy_new(cfg, &c->policy, err)) != RB_OK)
        goto fail_free;
    if ((e = egress_init(c, err)) != RB_OK)
        goto fail_free;
    if ((e = store_open(cfg->db_path, &c->st, err)) != RB_OK)
        goto fail_free;
    char *stored_instance = NULL;
    e = store_meta_get(c->st, "instance", &stored_instance, err);
    if (e == RB_ENOTFOUND) {
        rb_random_id("i_", c->instance, sizeof(c->instance));
        if ((e = store_meta_put(c->st, "instance", c->instance, err)) != RB_OK)
            goto fail_store;
    } else if (e != RB_OK) {
        goto fail_store;
    } else {
        snprintf(c->instance, sizeof(c->instance), "%s", stored_instance);
        free(stored_instance);
    }
    int changed = 0;
    if ((e = store_execution_fail_unfinished(c->st,
                                             "server restarted: runboxd stopped while this execution was queued or "
                                             "running, so its outcome is unknown; run it again if needed",
                                             &changed, err)) != RB_OK)
        goto fail_store;
    if (changed > 0)
        rb_info("recovery: %d executions were unfinished when runboxd stopped; marked as error", changed);

    json_t *live = NULL;
    if ((e = store_session_list(c->st, 0, &live, err)) != RB_OK)
        goto fail_store;
    size_t i;
    json_t *doc;
    json_array_foreach(live, i, doc)
    {
        session *s = session_from_doc(c, doc);
        if (s != NULL)
            map_put(&c->sessions, s->id, s);
    }
    json_decref(live);

    /* the default backend (core/backend/backend.h): the Docker engine at cfg->docker_socket */
    if (be == NULL && cfg->engines != NULL && cfg->engines[0] != '\0' &&
        (e = engines_backend(loop, cfg, &be, err)) != RB_OK)
        goto fail_sessions;
    const backend_docker_engine eng = {cfg->docker_socket, cfg->docker_tls_ca, cfg->docker_tls_cert,
                                       cfg->docker_tls_key, cfg->docker_runtimes};
    if (be == NULL && (e = backend_docker_new_at(loop, &eng, (long)(cfg->docker_timeout * 1000),
                                              (long)(cfg->docker_transfer_timeout * 1000), &be, err)) != RB_OK)
        goto fail_sessions;
    c->be = be;
    if ((e = isolation_default_check(be, cfg, err)) != RB_OK) /* an engine offers the default's runtime */
        goto fail_sessions;
    snprintf(c->docker_error, sizeof(c->docker_error), "not probed yet");
    c->pool = pool_new(c);
    c->probe_timer = new_timer(c);
    c->sweep_timer = new_timer(c);
    c->checkpoint_timer = new_timer(c);
    c->dispatch_timer = new_timer(c);
    core__probe_start(c, 0);
    uv_timer_start(c->sweep_timer, sweep_cb, SWEEP_MS, SWEEP_MS);
    uv_timer_start(c->checkpoint_timer, checkpoint_cb, CHECKPOINT_MS, CHECKPOINT_MS);
    *out = c;
    return RB_OK;

fail_sessions : {
    size_t pos = 0;
    session *s;
    while ((s = map_next(&c->sessions, &pos)) != NULL)
        session_free(s);
}
fail_store:
    store_close(c->st);
fail_free:
    backend_free(be);
    egress_dispose(c);
    policy_free(c->policy);
    map_dispose(&c->sessions);
    map_dispose(&c->executions);
    free(c);
    return e;
}

int core_pending(const rb_core *c)
{
    return c->pending_ops;
}

void core_stop(rb_core *c)
{
    pool_stop(c->pool);
    if (c->recovered)
        removal_sweep_volumes(c, -1); /* what helpers held past their sandboxes, before leaving */
}

void core_free(rb_core *c)
{
    if (c == NULL)
        return;
    c->closing = 1;
    flush_sessions(c);
    size_t pos = 0;
    session *s;
    while ((s = map_next(&c->sessions, &pos)) != NULL) {
        /* Leave containers running: sessions survive a restart. Unfinished executions stay
         * "queued"/"running" in the store and are marked failed at the next start. */
        process_session_end(s, "runboxd is shutting down");
        if (s->sb != NULL)
            sandbox_close(s->sb, 0);
        for (execution *ex = s->queue_head, *next; ex != NULL; ex = next) {
            next = ex->next;
            execution_free(ex);
        }
        if (s->running)
            execution_free(s->running);
        if (s->create_op != NULL) {
            if (!s->create_op->cancelled)
                s->create_op->cb(s->create_op->data, RB_ECANCELED, "runboxd is shutting down", NULL);
            free(s->create_op);
        }
        session_free(s);
    }
    /* Emptied, so that calls cancelled below (a pause in flight) find their session gone. */
    map_dispose(&c->sessions);
    map_init(&c->sessions);
    /* Watches still registered belong to protocol handlers that stop them on their own
     * teardown; drop the dispatch list without delivering. */
    for (core_watch *w = c->pending_head, *next; w != NULL; w = next) {
        next = w->next_pending;
        w->queued = 0;
    }
    c->pending_head = c->pending_tail = NULL;
    pool_free(c->pool);
    close_timer(c->probe_timer);
    close_timer(c->sweep_timer);
    close_timer(c->checkpoint_timer);
    close_timer(c->dispatch_timer);
    c->dispatch_timer = NULL;
    backend_free(c->be);
    deps_dispose(c); /* installs waiting for a slot end with RB_ECANCELED */
    removal_drop_all(c);
    files_dispose(c); /* the budget itself lives on while cancelled downloads or held files count on it */
    volumes_dispose(c); /* after the backend: its cancelled measurements have ended */
    usage_dispose(c);
    web_dispose(c);
    core__pause_dispose(c);
    core__freeze_dispose(c);
    kernel_ask__dispose(c); /* questions waiting end with RB_ECANCELED */
    egress_dispose(c); /* after the backend: its cancelled calls may still come back */
    store_close(c->st);
    policy_free(c->policy);
    map_dispose(&c->sessions);
    map_dispose(&c->executions);
    free(c);
}

/* ---- sessions ----------------------------------------------------------------------- */

static void created_cb(session *s, rb_err err, const char *msg);

/* The creation-time install (core/deps/deps.h) reporting to its session. */
static void deps_installed_cb(void *data, rb_err err, const char *msg)
{
    created_cb(data, err, msg);
}

static void created_cb(session *s, rb_err err, const char *msg)
{
    if (s->deps_op != NULL && s->deps_installing) {
        s->deps_op = NULL; /* the install of core/deps/ reporting: it frees its op */
    } else if (err == RB_OK && s->dependencies != NULL && !s->deps_installing) {
        char e2[RB_ERR_LEN];
        core_session_view v;
        core__session_view(s, &v);
        s->deps_installing = 1;
        if ((err = deps_session_install(s->core, &v, s->dependencies, deps_installed_cb, s, &s->deps_op, e2)) ==
            RB_OK)
            return; /* created_cb runs again when the packages are in place */
        s->deps_op = NULL;
        created_cb(s, err, e2);
        return;
    }
    core_op *op = s->create_op;
    s->create_op = NULL;
    if (err != RB_OK) {
        char reason[RB_ERR_LEN];
        snprintf(reason, sizeof(reason), "%s", msg);
        rb_warn("session %s: could not start: %s", s->id, reason);
        session_end(s, "dead", reason);
        if (op != NULL && !op->cancelled)
            op->cb(op->data, err, reason, NULL);
        free(op);
        return;
    }
    s->status = "ready";
    s->last_used_at = rb_now_ms();
    session_persist(s);
    rb_info("session %s ready (container %.12s)", s->id, s->container_id ? s->container_id : "?");
    audit_record(s->core, s->owner, s->id, "session_created",
                 json_pack("{s:s, s:s, s:s?}", "language", s->language, "isolation", s->isolation, "container",
                           s->container_id));
    if (op != NULL && !op->cancelled)
        op->cb(op->data, RB_OK, NULL, session_to_api(s));
    free(op);
    session_pump(s);
}

/* Ready callback of a session given a warm sandbox: if the warm sandbox failed its ping, the
 * session falls back to a cold start instead of failing. */
static void claimed_cb(session *s, rb_err err, const char *msg)
{
    char e2[RB_ERR_LEN];
    if (err == RB_OK) {
        created_cb(s, RB_OK, NULL);
        return;
    }
    rb_warn("session %s: the warm sandbox failed (%s); starting a new one", s->id, msg);
    sandbox_close(s->sb, 1);
    s->sb = NULL;
    free(s->container_id);
    s->container_id = NULL;
    rb_err e = sandbox_create(s, created_cb, e2);
    if (e != RB_OK)
        created_cb(s, e, e2);
}

/* A networked session is ready once its sandbox and its egress proxy both are. */
static void proxy_ready_cb(void *data, rb_err err, const char *msg)
{
    session *s = data;
    if (err == RB_ECANCELED) /* its way out closed: the session is ending, which answers its caller */
        return;
    created_cb(s, err, msg);
}

static void networked_sandbox_cb(session *s, rb_err err, const char *msg)
{
    char e2[RB_ERR_LEN];
    if (err == RB_OK && egress_ready(s->core, s->id, s->container_id, proxy_ready_cb, s, e2) != RB_OK) {
        err = RB_EINTERNAL;
        msg = e2;
    }
    if (err != RB_OK)
        created_cb(s, err, msg);
}

/* A networked session's network exists (core/network/egress.h): its sandbox joins it while the proxy starts. */
static void egress_opened_cb(void *data, rb_err err, const char *msg, const char *net)
{
    session *s = data;
    char e2[RB_ERR_LEN];
    if (err != RB_OK) {
        created_cb(s, err, msg);
        return;
    }
    free(s->egress_net);
    s->egress_net = xstrdup(net);
    session_persist(s);
    rb_err e = sandbox_create(s, networked_sandbox_cb, e2);
    if (e != RB_OK)
        created_cb(s, e, e2);
}

static int live_count(rb_core *c, int *busy)
{
    size_t pos = 0;
    session *s;
    int n = 0, b = 0;
    while ((s = map_next(&c->sessions, &pos)) != NULL) {
        n += s->pause != PAUSE_HIBERNATED; /* it holds no sandbox */
        b += s->running != NULL;
    }
    if (busy)
        *busy = b;
    return n;
}

/* Whether a sandbox placed near ref (a container or volume) may be any warm one: one engine. */
static int near_anywhere(rb_core *c, const char *ref)
{
    if (ref == NULL)
        return 1;
    char *pinned = backend_pin(c->be, ref, "x");
    int same = strcmp(pinned, "x") == 0;
    free(pinned);
    return same;
}

rb_err core_session_create(rb_core *c, const core_caller *who, json_t *opts, core_cb cb, void *data, core_op **handle,
                           char *err)
{
    return core__session_create_near(c, who, opts, NULL, cb, data, handle, err);
}

rb_err core__session_create_near(rb_core *c, const core_caller *who, json_t *opts, const char *near, core_cb cb,
                                 void *data, core_op **handle, char *err)
{
    rb_err e;
    /* Before the first probe has answered, try: the create reports Docker's error itself. */
    if (!c->docker_ok && c->probed)
        return rb_fail(RB_EUNAVAILABLE, err,
                       "Docker is not reachable at %s (%s); start the Docker daemon or pass --docker-socket",
                       c->cfg->docker_socket, c->docker_error);
    if (live_count(c, NULL) >= c->cfg->max_sessions)
        return rb_fail(RB_EBUSY, err,
                       "the server already runs %d sessions (its --max-sessions); delete sessions you no longer need "
                       "or wait for idle ones to expire",
                       c->cfg->max_sessions);
    if ((e = core__check_session_quota(c, who, err)) != RB_OK)
        return e;
    session *s = xcalloc(1, sizeof(*s));
    s->core = c;
    s->owner = xstrdup(who ? who->owner : "");
    if ((e = core__parse_session_opts(c, who, s, opts, err)) != RB_OK) {
        session_free(s);
        return e;
    }
    rb_random_id("s_", s->id, sizeof(s->id));
    s->place_with = near != NULL ? xstrdup(near) : NULL;
    s->status = "starting";
    s->created_at = s->last_used_at = rb_now_ms();
    map_put(&c->sessions, s->id, s);
    session_persist(s);
    core_op *op = xcalloc(1, sizeof(*op));
    op->cb = cb;
    op->data = data;
    s->create_op = op;
    if (s->net_policy != NULL) {
        e = egress_open(c, s->id, s->net_policy, egress_opened_cb, s, err); /* then the sandbox */
    } else if (near_anywhere(c, near) && pool_claim(c->pool, s, claimed_cb)) {
        e = RB_OK; /* claimed_cb answers */
    } else {
        e = sandbox_create(s, created_cb, err);
    }
    if (e != RB_OK) {
        s->create_op = NULL;
        free(op);
        store_session_delete(c->st, s->id, NULL);
        map_del(&c->sessions, s->id);
        session_free(s);
        return e;
    }
    stats_session_created(c);
    if (handle != NULL)
        *handle = op;
    return RB_OK;
}

void core_cancel(core_op *op)
{
    if (op != NULL)
        op->cancelled = 1;
}

rb_err core_session_get(rb_core *c, const core_caller *who, const char *session_id, json_t **out, char *err)
{
    session *s = map_get(&c->sessions, session_id);
    if (s != NULL) {
        if (!core_caller_owns(who, s->owner))
            return rb_fail(RB_ENOTFOUND, err, "no session with id '%.64s'; create one with POST /sessions", session_id);
        *out = session_to_api(s);
        return RB_OK;
    }
    json_t *doc;
    rb_err e = core__stored_session(c, who, session_id, &doc, err);
    if (e == RB_ENOTFOUND)
        return rb_fail(RB_ENOTFOUND, err, "no session with id '%.64s'; create one with POST /sessions", session_id);
    if (e != RB_OK)
        return e;
    *out = session_doc_to_api(c, doc);
    json_decref(doc);
    return RB_OK;
}

rb_err core_session_list(rb_core *c, const core_caller *who, json_t **out, char *err)
{
    (void)err;
    json_t *arr = json_array();
    size_t pos = 0;
    session *s;
    while ((s = map_next(&c->sessions, &pos)) != NULL)
        if ((strcmp(s->status, "starting") != 0 || s->create_op == NULL) && core_caller_owns(who, s->owner))
            json_array_append_new(arr, session_to_api(s));
    *out = json_pack("{s:o}", "sessions", arr);
    return RB_OK;
}

rb_err core_session_delete(rb_core *c, const core_caller *who, const char *session_id, json_t **out, char *err)
{
    session *s = map_get(&c->sessions, session_id);
    if (s != NULL && !core_caller_owns(who, s->owner))
        return rb_fail(RB_ENOTFOUND, err, "no session with id '%.64s'", session_id);
    if (s == NULL || s->create_op != NULL) {
        json_t *doc = NULL;
        if (s == NULL && core__stored_session(c, who, session_id, &doc, NULL) == RB_OK) {
            json_decref(doc);
            return rb_fail(RB_ENOTFOUND, err, "session '%.64s' has already ended", session_id);
        }
        return rb_fail(RB_ENOTFOUND, err, "no session with id '%.64s'", session_id);
    }
    char id[RB_ID_LEN];
    snprintf(id, sizeof(id), "%s", s->id);
    session_end(s, "ended", "deleted by request");
    return core_session_get(c, who, id, out, err);
}

/* ---- executions --------------------------------------------------------------------- */

rb_err core_execute(rb_core *c, const core_caller *who, json_t *req, json_t **out, char *err)
{
    static const char *const keys[] = {"session_id", "code", "timeout", "wait", "language", "disabled_rules",
                                       "restart", "context", "env", NULL};
    rb_err e;
    if (!json_is_object(req))
        return rb_fail(RB_EINVAL, err, "the request body must be a JSON object like {\"session_id\": \"...\", \"code\": \"print(1)\"}");
    if ((e = core__check_keys(req, "the execute request", keys, err)) != RB_OK)
        return e;
    const char *sid = json_string_value(json_object_get(req, "session_id"));
    json_t *code = json_object_get(req, "code");
    if (sid == NULL)
        return rb_fail(RB_EINVAL, err, "'session_id' is required and must be a string (from POST /sessions)");
    if (!json_is_string(code))
        return rb_fail(RB_EINVAL, err, "'code' is required and must be a string");
    if (memchr(json_string_value(code), '\0', json_string_length(code)) != NULL)
        return rb_fail(RB_EINVAL, err, "'code' must not contain NUL characters");
    json_t *rs = json_object_get(req, "restart");
    if (rs != NULL && !json_is_boolean(rs) && !json_is_null(rs))
        return rb_fail(RB_EINVAL, err, "'restart' must be true or false");
    json_t *w = json_object_get(req, "wait");
    if (w != NULL && !json_is_boolean(w) && !json_is_null(w))
        return rb_fail(RB_EINVAL, err, "'wait' must be true or false");
    session *s = core__session_of(c, who, sid);
    if (s == NULL && map_get(&c->sessions, sid) != NULL)
        return rb_fail(RB_ENOTFOUND, err, "no session with id '%.64s'; create one with POST /sessions", sid);
    if (s == NULL || s->create_op != NULL) {
        if (s == NULL && core__session_ended(c, who, sid, RB_ECONFLICT, err))
            return RB_ECONFLICT;
        return rb_fail(RB_ENOTFOUND, err, "no session with id '%.64s'; create one with POST /sessions", sid);
    }
    const char *l; /* the language and context it runs in, env checked too (contexts.c) */
    json_t *context = NULL;
    if ((e = core__context_pick(s, req, &context, &l, err)) != RB_OK)
        return e;
    json_decref(context); /* picked again below, once nothing else can fail */
    if (s->engine_down != NULL)
        return rb_fail(RB_EUNAVAILABLE, err,
                       "session '%s' is unavailable: its %s. Its sandbox keeps its state and the session comes "
                       "back when the engine answers again; retry later",
                       s->id, s->engine_down);
    /* a read-write volume past its quota takes no more writes (core/volumes/volumes.h) */
    if ((e = volumes_exec_check(c, json_object_get(s->options, "mounts"), err)) != RB_OK)
        return e;
    double timeout = s->timeout;
    json_t *t = json_object_get(req, "timeout");
    if (t != NULL && !json_is_null(t) && (e = core__check_timeout(c, t, "timeout", &timeout, err)) != RB_OK)
        return e;
    /* The code policy applies to Python cells; bash is not checked (policy.h). */
    json_t *rules = NULL;
    if ((e = policy_rules_for(c->policy, json_object_get(req, "disabled_rules"), &rules, err)) != RB_OK)
        return e;
    if (strcmp(l, "python") != 0) {
        json_decref(rules);
        rules = NULL;
    }
    if ((e = core__check_execution_quota(c, who, err)) != RB_OK) {
        json_decref(rules);
        return e;
    }
    if (s->queued >= c->cfg->max_queue) {
        json_decref(rules);
        return rb_fail(RB_EBUSY, err, "session '%s' already has %d executions waiting (--max-queue); wait for them to finish",
                       s->id, s->queued);
    }

    execution *ex = execution_new(c, s, json_string_value(code), timeout);
    if (who != NULL && who->owner != NULL && strcmp(who->owner, ex->owner) != 0)
        ex->actor = xstrdup(who->owner); /* the audit trail names who ran it */
    ex->policy_rules = rules;
    ex->restart = json_is_true(json_object_get(req, "restart")); /* the code is then ignored */
    core__context_apply(ex, req);
    if (s->queue_tail)
        s->queue_tail->next = ex;
    else
        s->queue_head = ex;
    s->queue_tail = ex;
    s->queued++;
    s->executions++;
    s->last_used_at = rb_now_ms();
    map_put(&c->executions, ex->id, ex);
    json_t *doc = execution_to_doc(ex);
    if ((e = store_execution_put(c->st, doc, err)) != RB_OK)
        rb_error("execution %s: cannot save: %s", ex->id, err);
    json_decref(doc);
    *out = execution_status_api(ex);
    if (s->pause != PAUSE_NONE)
        core__resume_for_queue(s); /* a suspended or hibernated session resumes for it (session_pause.c) */
    session_pump(s);
    return RB_OK;
}

static rb_err load_doc(rb_core *c, const core_caller *who, const char *request_id, json_t **doc, char *err)
{
    rb_err e = store_execution_get(c->st, request_id, doc, err);
    if (e == RB_OK && !core__doc_visible(who, *doc)) {
        json_decref(*doc);
        *doc = NULL;
        e = RB_ENOTFOUND;
    }
    if (e == RB_ENOTFOUND)
        return rb_fail(RB_ENOTFOUND, err, "no execution with request_id '%.64s'; use the request_id returned by POST /execute",
                       request_id);
    return e;
}

/* Answers a view (status object or result document) of a live or stored execution: both are
 * built from the same stored-document form, so they cannot drift apart. */
static rb_err execution_view(rb_core *c, const core_caller *who, const char *request_id, json_t *(*view)(json_t *doc),
                             json_t **out, char *err)
{
    execution *ex = core__execution_of(c, who, request_id);
    json_t *doc;
    if (ex != NULL) {
        doc = execution_to_doc(ex);
    } else {
        rb_err e = load_doc(c, who, request_id, &doc, err);
        if (e != RB_OK)
            return e;
    }
    *out = view(doc);
    json_decref(doc);
    return RB_OK;
}

rb_err core_execution_status(rb_core *c, const core_caller *who, const char *request_id, json_t **out, char *err)
{
    return execution_view(c, who, request_id, execution_doc_status_api, out, err);
}

rb_err core_execution_results(rb_core *c, const core_caller *who, const char *request_id, json_t **out, char *err)
{
    return execution_view(c, who, request_id, execution_doc_result_api, out, err);
}

rb_err core_execution_cancel(rb_core *c, const core_caller *who, const char *request_id, json_t **out, char *err)
{
    execution *ex = core__execution_of(c, who, request_id);
    if (ex == NULL) {
        json_t *doc;
        rb_err e = load_doc(c, who, request_id, &doc, err);
        if (e != RB_OK)
            return e;
        const char *st = json_string_value(json_object_get(doc, "status"));
        e = rb_fail(RB_ECONFLICT, err, "execution '%.64s' has already finished with status '%s'", request_id,
                    st ? st : "?");
        json_decref(doc);
        return e;
    }
    session *s = ex->s;
    if (strcmp(ex->status, "queued") == 0) {
        for (execution **pp = &s->queue_head, *prev = NULL; *pp != NULL; prev = *pp, pp = &(*pp)->next) {
            if (*pp == ex) {
                *pp = ex->next;
                if (s->queue_tail == ex)
                    s->queue_tail = prev;
                s->queued--;
                break;
            }
        }
        ex->next = NULL;
        char id[RB_ID_LEN];
        snprintf(id, sizeof(id), "%s", ex->id);
        execution_fail(ex, "cancelled", "Cancelled", "cancelled by request before it started", 0, NULL);
        return core_execution_status(c, who, id, out, err);
    }
    *out = execution_status_api(ex);
    if (s != NULL && s->sb != NULL)
        sandbox_interrupt(s->sb, ex);
    return RB_OK;
}

json_t *core_policy(rb_core *c)
{
    return policy_describe(c->policy);
}

const char *core_instance(const rb_core *c)
{
    return c->instance;
}

json_t *core_health(rb_core *c)
{
    int busy = 0;
    int live = live_count(c, &busy);
    int running = 0, queued = 0;
    size_t pos = 0;
    execution *ex;
    while ((ex = map_next(&c->executions, &pos)) != NULL) {
        if (strcmp(ex->status, "running") == 0)
            running++;
        else
            queued++;
    }
    json_t *h = json_pack("{s:s, s:s, s:s, s:{s:b, s:s?, s:s?}, s:{s:i, s:i}, s:{s:i, s:i}, s:o}", "status",
                          c->docker_ok ? "ok" : "degraded", "version", RUNBOX_VERSION, "instance", c->instance,
                          "docker", "reachable",
                          c->docker_ok, "api_version", c->docker_ok ? c->api_version : NULL, "error",
                          c->docker_ok ? NULL : c->docker_error, "sessions", "live", live, "busy", busy,
                          "executions", "running", running, "queued", queued, "pool", pool_health(c->pool));
    json_t *engines = backend_engines(c->be); /* several engines: each one's state */
    if (engines != NULL)
        json_object_set_new(json_object_get(h, "docker"), "engines", engines);
    /* the runtimes the engines offer (several engines: each one's too) and the default isolation */
    json_object_set_new(json_object_get(h, "docker"), "runtimes", backend_runtimes(c->be));
    json_object_set_new(h, "isolation", json_pack("{s:s, s:s}", "default", c->cfg->isolation, "gvisor_runtime",
                                                  c->cfg->gvisor_runtime));
    return h;
}

rb_err core_engine_drain(rb_core *c, const char *engine, int on, json_t **out, char *err)
{
    rb_err e = backend_drain(c->be, engine, on, err);
    if (e != RB_OK)
        return e;
    rb_info("engine %s: %s", engine, on ? "drained: no new sandboxes are placed on it" : "placing sandboxes again");
    *out = json_pack("{s:o}", "engines", backend_engines(c->be));
    return RB_OK;
}

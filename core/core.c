/*
 * core.c: the public face of the session manager (core/core.h): start-up and recovery after
 * a restart, the Docker probe, idle expiry and retention sweeps, validation of requests, and
 * the session and execution entry points used by REST and MCP alike.
 */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "core/policy.h"
#include "core/pool.h"

#define PROBE_MS_DOWN 2000
#define PROBE_MS_UP 10000
#define SWEEP_MS 1000
#define CHECKPOINT_MS 30000
#define PRUNE_EVERY_MS (3600 * 1000)

json_t *core_session_doc_to_api(rb_core *c, json_t *doc);

void core_json_time(json_t *obj, const char *key, int64_t ms)
{
    char buf[40];
    rb_time_format(ms, buf, sizeof(buf));
    json_object_set_new(obj, key, json_string(buf));
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

/* ---- recovery ------------------------------------------------------------------------ */

static void reattached_cb(session *s, rb_err err, const char *msg)
{
    if (err != RB_OK) {
        char reason[RB_ERR_LEN];
        snprintf(reason, sizeof(reason), "could not reconnect to its sandbox after a restart: %s", msg);
        session_end(s, "dead", reason);
        return;
    }
    rb_info("session %s: reconnected to its sandbox", s->id);
    s->status = "ready";
    session_persist(s);
    session_pump(s);
}

/* The live session whose stored container is id (a claimed pool container is labelled
 * runbox.session=pool, so only its id links it to its session). */
static session *session_by_container(rb_core *c, const char *id)
{
    size_t pos = 0;
    session *s;
    while ((s = map_next(&c->sessions, &pos)) != NULL)
        if (s->container_id != NULL && strcmp(s->container_id, id) == 0)
            return s;
    return NULL;
}

static void listed_cb(void *data, rb_err err, const char *errmsg, int status, json_t *body)
{
    rb_core *c = data;
    char msg[RB_ERR_LEN];
    (void)status;
    if (err == RB_ECANCELED)
        return;
    if (err != RB_OK) {
        rb_warn("recovery: cannot list runbox containers: %s (will retry)", errmsg);
        c->recovered = 0;
        return;
    }
    size_t i;
    json_t *ct;
    json_array_foreach(body, i, ct)
    {
        const char *id = json_string_value(json_object_get(ct, "Id"));
        const char *state = json_string_value(json_object_get(ct, "State"));
        const char *sid = json_string_value(json_object_get(json_object_get(ct, "Labels"), "runbox.session"));
        if (id == NULL)
            continue;
        session *s = sid ? map_get(&c->sessions, sid) : NULL;
        if (s == NULL)
            s = session_by_container(c, id);
        if (s == NULL && pool_owns(c->pool, id))
            continue; /* warmed by this process since start-up */
        if (s == NULL) {
            rb_info("recovery: removing container %.12s: no live session owns it", id);
            sandbox_remove_container(c, id);
            continue;
        }
        if (s->sb != NULL)
            continue; /* created by this process since start-up */
        if (state == NULL || strcmp(state, "running") != 0 || s->container_id == NULL ||
            strcmp(s->container_id, id) != 0) {
            rb_info("recovery: removing container %.12s of session %s (state %s)", id, s->id, state ? state : "?");
            sandbox_remove_container(c, id);
            continue;
        }
        if (sandbox_reattach(s, reattached_cb, msg) != RB_OK)
            rb_warn("recovery: session %s: %s", s->id, msg);
    }
    /* Stored sessions whose container is gone cannot come back. */
    size_t pos = 0;
    session *s;
    while ((s = map_next(&c->sessions, &pos)) != NULL) {
        if (s->sb == NULL && strcmp(s->status, "starting") == 0 && s->create_op == NULL)
            session_end(s, "dead",
                        "its sandbox container no longer exists (it was removed or Docker was reset while runboxd "
                        "was stopped); create a new session");
    }
    /* Only now: a pool container created before the listing could be taken for an orphan. */
    pool_start(c->pool);
}

static void recover(rb_core *c)
{
    char err[RB_ERR_LEN];
    char label[80];
    snprintf(label, sizeof(label), "runbox.instance=%s", c->instance);
    c->recovered = 1;
    if (docker_container_list(c->dk, label, listed_cb, c, err) != RB_OK) {
        rb_warn("recovery: %s", err);
        c->recovered = 0;
    }
}

static void probe_start(rb_core *c, uint64_t ms);

static void probed_cb(void *data, rb_err err, const char *errmsg, int status, json_t *body)
{
    rb_core *c = data;
    (void)status;
    (void)body;
    c->probing = 0;
    if (err == RB_ECANCELED || c->closing)
        return;
    if (err != RB_OK) {
        if (c->docker_ok || c->docker_error[0] == '\0')
            rb_warn("Docker is unreachable: %s", errmsg);
        c->docker_ok = 0;
        snprintf(c->docker_error, sizeof(c->docker_error), "%s", errmsg);
        probe_start(c, PROBE_MS_DOWN);
        return;
    }
    if (!c->docker_ok)
        rb_info("Docker is reachable (API %s)", docker_api_version(c->dk));
    c->docker_ok = 1;
    c->docker_error[0] = '\0';
    if (!c->recovered)
        recover(c);
    probe_start(c, PROBE_MS_UP);
}

static void probe_timer_cb(uv_timer_t *t)
{
    rb_core *c = t->data;
    char err[RB_ERR_LEN];
    if (c->probing)
        return;
    if (docker_ping_version(c->dk, probed_cb, c, err) != RB_OK) {
        c->docker_ok = 0;
        snprintf(c->docker_error, sizeof(c->docker_error), "%s", err);
        probe_start(c, PROBE_MS_DOWN);
        return;
    }
    c->probing = 1;
}

static void probe_start(rb_core *c, uint64_t ms)
{
    uv_timer_start(c->probe_timer, probe_timer_cb, ms, 0);
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
    if (c->cfg->idle_timeout > 0) {
        int64_t idle_ms = (int64_t)c->cfg->idle_timeout * 1000;
        size_t pos = 0;
        session *s;
        while ((s = map_next(&c->sessions, &pos)) != NULL) {
            if (strcmp(s->status, "ready") != 0 || s->running != NULL || s->queue_head != NULL)
                continue;
            if (now - s->last_used_at >= idle_ms) {
                char reason[128];
                snprintf(reason, sizeof(reason), "idle for %d s (the idle timeout); its sandbox was removed",
                         c->cfg->idle_timeout);
                session_end(s, "ended", reason);
            }
        }
    }
    static int64_t last_prune;
    if (now - last_prune >= PRUNE_EVERY_MS) {
        char err[RB_ERR_LEN];
        int n = 0;
        last_prune = now;
        if (store_prune(c->st, now - (int64_t)c->cfg->retention * 1000, &n, err) != RB_OK)
            rb_warn("retention: %s", err);
        else if (n > 0)
            rb_info("retention: removed %d old records", n);
    }
}

static void checkpoint_cb(uv_timer_t *t)
{
    rb_core *c = t->data;
    store_checkpoint(c->st);
}

/* ---- lifecycle ---------------------------------------------------------------------- */

session *session_from_doc(rb_core *c, json_t *doc)
{
    const char *id = json_string_value(json_object_get(doc, "session_id"));
    const char *lang = json_string_value(json_object_get(doc, "language"));
    if (id == NULL || strlen(id) >= RB_ID_LEN)
        return NULL;
    session *s = xcalloc(1, sizeof(*s));
    s->core = c;
    snprintf(s->id, sizeof(s->id), "%s", id);
    snprintf(s->language, sizeof(s->language), "%s", lang && strcmp(lang, "bash") == 0 ? "bash" : "python");
    s->status = "starting";
    s->created_at = json_integer_value(json_object_get(doc, "created_at"));
    s->last_used_at = json_integer_value(json_object_get(doc, "last_used_at"));
    json_t *opts = json_object_get(doc, "execution_options");
    s->options = json_is_object(opts) ? json_incref(opts) : json_object();
    s->timeout = json_number_value(json_object_get(s->options, "timeout"));
    if (s->timeout <= 0)
        s->timeout = c->cfg->default_timeout;
    s->executions = (int)json_integer_value(json_object_get(doc, "executions"));
    const char *cid = json_string_value(json_object_get(doc, "container_id"));
    s->container_id = cid ? xstrdup(cid) : NULL;
    return s;
}

rb_err core_new(uv_loop_t *loop, const rb_config *cfg, rb_core **out, char *err)
{
    rb_core *c = xcalloc(1, sizeof(*c));
    rb_err e;
    c->loop = loop;
    c->cfg = cfg;
    map_init(&c->sessions);
    map_init(&c->executions);

    if ((e = policy_new(cfg, &c->policy, err)) != RB_OK)
        goto fail_free;
    if ((e = store_open(cfg->db_path, &c->st, err)) != RB_OK)
        goto fail_free;
    char *inst = NULL;
    e = store_meta_get(c->st, "instance", &inst, err);
    if (e == RB_ENOTFOUND) {
        rb_random_id("i_", c->instance, sizeof(c->instance));
        if ((e = store_meta_put(c->st, "instance", c->instance, err)) != RB_OK)
            goto fail_store;
    } else if (e != RB_OK) {
        goto fail_store;
    } else {
        snprintf(c->instance, sizeof(c->instance), "%s", inst);
        free(inst);
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

    if ((e = docker_new(loop, cfg->docker_socket, &c->dk, err)) != RB_OK)
        goto fail_sessions;
    snprintf(c->docker_error, sizeof(c->docker_error), "not probed yet");
    c->pool = pool_new(c);
    c->probe_timer = new_timer(c);
    c->sweep_timer = new_timer(c);
    c->checkpoint_timer = new_timer(c);
    c->dispatch_timer = new_timer(c);
    probe_start(c, 0);
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
    policy_free(c->policy);
    map_dispose(&c->sessions);
    map_dispose(&c->executions);
    free(c);
    return e;
}

int core_pending(const rb_core *c)
{
    return c->pending_ops + pool_pending(c->pool);
}

void core_stop(rb_core *c)
{
    pool_stop(c->pool);
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
    docker_free(c->dk);
    store_close(c->st);
    policy_free(c->policy);
    map_dispose(&c->sessions);
    map_dispose(&c->executions);
    free(c);
}

/* ---- validation --------------------------------------------------------------------- */

/* Parses "512m", "1g", "256MiB", "1048576" (bytes) or an integer. */
static int parse_memory(json_t *v, int64_t *out)
{
    if (json_is_integer(v)) {
        *out = json_integer_value(v);
        return *out > 0 ? 0 : -1;
    }
    const char *s = json_string_value(v);
    if (s == NULL || !isdigit((unsigned char)*s))
        return -1;
    errno = 0;
    char *end;
    double n = strtod(s, &end);
    if (errno != 0 || n <= 0)
        return -1;
    double mult = 1;
    char unit = (char)tolower((unsigned char)*end);
    if (unit == 'k')
        mult = 1024.0;
    else if (unit == 'm')
        mult = 1024.0 * 1024;
    else if (unit == 'g')
        mult = 1024.0 * 1024 * 1024;
    else if (unit == 'b' || unit == '\0')
        mult = 1;
    else
        return -1;
    if (*end != '\0') {
        end++;
        if (strcmp(end, "") != 0 && strcasecmp(end, "b") != 0 && strcasecmp(end, "ib") != 0)
            return -1;
    }
    *out = (int64_t)(n * mult);
    return 0;
}

static int valid_env_name(const char *k)
{
    if (!(isalpha((unsigned char)*k) || *k == '_'))
        return 0;
    for (const char *p = k; *p; p++)
        if (!(isalnum((unsigned char)*p) || *p == '_'))
            return 0;
    return strncmp(k, "RUNBOX_", 7) != 0;
}

static rb_err check_keys(json_t *obj, const char *where, const char *const *allowed, char *err)
{
    const char *k;
    json_t *v;
    json_object_foreach(obj, k, v)
    {
        int ok = 0;
        for (const char *const *a = allowed; *a; a++)
            ok |= strcmp(*a, k) == 0;
        if (!ok) {
            char list[256] = "";
            for (const char *const *a = allowed; *a; a++) {
                strncat(list, *a, sizeof(list) - strlen(list) - 3);
                if (a[1])
                    strncat(list, ", ", sizeof(list) - strlen(list) - 1);
            }
            return rb_fail(RB_EINVAL, err, "unknown field '%s' in %s; allowed fields: %s", k, where, list);
        }
    }
    return RB_OK;
}

static rb_err check_timeout(const rb_core *c, json_t *v, const char *field, double *out, char *err)
{
    if (!json_is_number(v))
        return rb_fail(RB_EINVAL, err, "'%s' must be a number of seconds, e.g. 30", field);
    double t = json_number_value(v);
    if (!(t > 0) || !isfinite(t) || t > c->cfg->max_timeout)
        return rb_fail(RB_EINVAL, err, "'%s' must be greater than 0 and at most %g seconds (the server's maximum), not %g",
                       field, c->cfg->max_timeout, t);
    *out = t;
    return RB_OK;
}

/* Fills s's language and options from a POST /sessions body. */
/* "512m", "1500k" or "12345": the shortest exact spelling of a size. */
static json_t *size_text(int64_t bytes)
{
    if (bytes % (1024 * 1024) == 0)
        return json_sprintf("%lldm", (long long)(bytes / (1024 * 1024)));
    if (bytes % 1024 == 0)
        return json_sprintf("%lldk", (long long)(bytes / 1024));
    return json_sprintf("%lld", (long long)bytes);
}

static rb_err parse_size_opt(json_t *eo, const char *key, int64_t min, int64_t max, int64_t *out, char *err)
{
    json_t *v = json_object_get(eo, key);
    if (v == NULL || json_is_null(v))
        return RB_OK;
    if (parse_memory(v, out) != 0 || *out < min || *out > max)
        return rb_fail(RB_EINVAL, err,
                       "'execution_options.%s' must be a size such as \"256m\" or \"1g\", between %lldm and %lldm (the "
                       "server's maximum)",
                       key, (long long)(min / (1024 * 1024)), (long long)(max / (1024 * 1024)));
    return RB_OK;
}

/* The sandbox limits of execution_options (eo may be NULL): pids_limit, workspace_size,
 * tmp_size within the server's maxima, and network only when the operator allows it. */
static rb_err parse_sandbox_limits(rb_core *c, session *s, json_t *eo, char *err)
{
    const rb_config *cfg = c->cfg;
    rb_err e;
    s->pids_limit = cfg->pids_limit;
    s->workspace_bytes = (int64_t)cfg->workspace_size;
    s->tmp_bytes = (int64_t)cfg->tmp_size;
    s->network = 0;
    json_t *v = json_object_get(eo, "pids_limit");
    if (v != NULL && !json_is_null(v)) {
        json_int_t n = json_integer_value(v);
        if (!json_is_integer(v) || n < 16 || n > cfg->max_pids_limit)
            return rb_fail(RB_EINVAL, err,
                           "'execution_options.pids_limit' must be a whole number of processes between 16 and %d (the "
                           "server's maximum)",
                           cfg->max_pids_limit);
        s->pids_limit = (int)n;
    }
    if ((e = parse_size_opt(eo, "workspace_size", 1024 * 1024, (int64_t)cfg->max_workspace_size, &s->workspace_bytes,
                            err)) != RB_OK)
        return e;
    if ((e = parse_size_opt(eo, "tmp_size", 4 * 1024 * 1024, (int64_t)cfg->max_tmp_size, &s->tmp_bytes, err)) != RB_OK)
        return e;
    v = json_object_get(eo, "network");
    if (v != NULL && !json_is_null(v)) {
        if (!json_is_boolean(v))
            return rb_fail(RB_EINVAL, err, "'execution_options.network' must be true or false");
        if (json_is_true(v) && !cfg->allow_network)
            return rb_fail(RB_EINVAL, err,
                           "'execution_options.network': this server does not allow network access from sandboxes "
                           "(the operator can turn it on with --allow-network=true)");
        s->network = json_is_true(v);
    }
    s->custom_sandbox = s->pids_limit != cfg->pids_limit || s->workspace_bytes != (int64_t)cfg->workspace_size ||
                        s->tmp_bytes != (int64_t)cfg->tmp_size || s->network;
    return RB_OK;
}

static rb_err parse_session_opts(rb_core *c, session *s, json_t *opts, char *err)
{
    static const char *const top[] = {"language", "execution_options", "dependencies", NULL};
    static const char *const eo_keys[] = {"timeout",    "memory_limit",   "cpu_limit", "environment_variables",
                                          "pids_limit", "workspace_size", "tmp_size",  "network",
                                          NULL};
    rb_err e;
    if (opts != NULL && !json_is_object(opts))
        return rb_fail(RB_EINVAL, err, "the request body must be a JSON object such as {\"language\": \"python\"}");
    if (opts != NULL && (e = check_keys(opts, "the session request", top, err)) != RB_OK)
        return e;
    json_t *lang = json_object_get(opts, "language");
    const char *l = "python";
    if (lang != NULL && !json_is_null(lang)) {
        l = json_string_value(lang);
        if (l == NULL || (strcmp(l, "python") != 0 && strcmp(l, "bash") != 0))
            return rb_fail(RB_EINVAL, err, "'language' must be \"python\" or \"bash\"");
    }
    snprintf(s->language, sizeof(s->language), "%s", l);
    /* dependencies are installed into the workspace once the sandbox is ready (deps.c) */
    if ((e = deps_parse(c->cfg, json_object_get(opts, "dependencies"), &s->dependencies, err)) != RB_OK)
        return e;
    if (s->dependencies != NULL && strcmp(l, "python") != 0)
        return rb_fail(RB_EINVAL, err, "dependencies: Python packages need a python session");

    s->timeout = c->cfg->default_timeout;
    s->memory_bytes = core_default_memory(c);
    s->cpus = c->cfg->cpus;
    json_t *env = json_object();
    json_t *eo = json_object_get(opts, "execution_options");
    if (eo != NULL && !json_is_null(eo)) {
        if (!json_is_object(eo))
            e = rb_fail(RB_EINVAL, err, "'execution_options' must be an object");
        else
            e = check_keys(eo, "execution_options", eo_keys, err);
        if (e != RB_OK)
            goto fail;
        json_t *v;
        if ((v = json_object_get(eo, "timeout")) != NULL && !json_is_null(v) &&
            (e = check_timeout(c, v, "execution_options.timeout", &s->timeout, err)) != RB_OK)
            goto fail;
        if ((v = json_object_get(eo, "memory_limit")) != NULL && !json_is_null(v)) {
            int64_t max = (int64_t)c->cfg->max_memory_mb * 1024 * 1024;
            if (parse_memory(v, &s->memory_bytes) != 0 || s->memory_bytes < 16 * 1024 * 1024 ||
                s->memory_bytes > max) {
                e = rb_fail(RB_EINVAL, err,
                            "'execution_options.memory_limit' must be a size such as \"512m\" or \"1g\", between 16m "
                            "and %dm (the server's maximum)",
                            c->cfg->max_memory_mb);
                goto fail;
            }
        }
        if ((v = json_object_get(eo, "cpu_limit")) != NULL && !json_is_null(v)) {
            double cpus = json_number_value(v);
            if (!json_is_number(v) || !(cpus >= 0.01) || cpus > c->cfg->max_cpus) {
                e = rb_fail(RB_EINVAL, err,
                            "'execution_options.cpu_limit' must be a number of CPUs between 0.01 and %g (the server's "
                            "maximum)",
                            c->cfg->max_cpus);
                goto fail;
            }
            s->cpus = cpus;
        }
        if ((v = json_object_get(eo, "environment_variables")) != NULL && !json_is_null(v)) {
            const char *k;
            json_t *val;
            if (!json_is_object(v)) {
                e = rb_fail(RB_EINVAL, err, "'execution_options.environment_variables' must be an object of strings");
                goto fail;
            }
            json_object_foreach(v, k, val)
            {
                if (!valid_env_name(k)) {
                    e = rb_fail(RB_EINVAL, err,
                                "environment variable name '%.64s' is invalid: use letters, digits and '_', not "
                                "starting with a digit or RUNBOX_",
                                k);
                    goto fail;
                }
                if (!json_is_string(val) || memchr(json_string_value(val), '\0', json_string_length(val))) {
                    e = rb_fail(RB_EINVAL, err, "environment variable '%.64s' must have a string value", k);
                    goto fail;
                }
                json_object_set(env, k, val);
            }
        }
    }
    char mem[32];
    snprintf(mem, sizeof(mem), "%lldm", (long long)(s->memory_bytes / (1024 * 1024)));
    if ((e = parse_sandbox_limits(c, s, eo != NULL && json_is_object(eo) ? eo : NULL, err)) != RB_OK)
        goto fail;
    s->options = json_pack("{s:f, s:s, s:f, s:o}", "timeout", s->timeout, "memory_limit", mem, "cpu_limit", s->cpus,
                           "environment_variables", env);
    json_object_set_new(s->options, "pids_limit", json_integer(s->pids_limit));
    json_object_set_new(s->options, "workspace_size", size_text(s->workspace_bytes));
    json_object_set_new(s->options, "tmp_size", size_text(s->tmp_bytes));
    json_object_set_new(s->options, "network", json_boolean(s->network));
    return RB_OK;
fail:
    json_decref(env);
    return e;
}

/* ---- sessions ----------------------------------------------------------------------- */

static void created_cb(session *s, rb_err err, const char *msg)
{
    if (s->deps_op != NULL && s->deps_installing) {
        s->deps_op = NULL; /* the install of deps.c reporting: it frees its op */
    } else if (err == RB_OK && s->dependencies != NULL && !s->deps_installing) {
        char e2[RB_ERR_LEN];
        s->deps_installing = 1;
        if ((err = deps_session_install(s, s->dependencies, created_cb, &s->deps_op, e2)) == RB_OK)
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

static int live_count(rb_core *c, int *busy)
{
    size_t pos = 0;
    session *s;
    int n = 0, b = 0;
    while ((s = map_next(&c->sessions, &pos)) != NULL) {
        n++;
        b += s->running != NULL;
    }
    if (busy)
        *busy = b;
    return n;
}

rb_err core_session_create(rb_core *c, json_t *opts, core_cb cb, void *data, core_op **handle, char *err)
{
    rb_err e;
    if (!c->docker_ok)
        return rb_fail(RB_EUNAVAILABLE, err,
                       "Docker is not reachable at %s (%s); start the Docker daemon or pass --docker-socket",
                       c->cfg->docker_socket, c->docker_error);
    if (live_count(c, NULL) >= c->cfg->max_sessions)
        return rb_fail(RB_EBUSY, err,
                       "the server already runs %d sessions (its --max-sessions); delete sessions you no longer need "
                       "or wait for idle ones to expire",
                       c->cfg->max_sessions);
    session *s = xcalloc(1, sizeof(*s));
    s->core = c;
    if ((e = parse_session_opts(c, s, opts, err)) != RB_OK) {
        session_free(s);
        return e;
    }
    rb_random_id("s_", s->id, sizeof(s->id));
    s->status = "starting";
    s->created_at = s->last_used_at = rb_now_ms();
    map_put(&c->sessions, s->id, s);
    session_persist(s);
    core_op *op = xcalloc(1, sizeof(*op));
    op->cb = cb;
    op->data = data;
    s->create_op = op;
    if (pool_claim(c->pool, s, claimed_cb)) {
        /* claimed_cb answers */
    } else if ((e = sandbox_create(s, created_cb, err)) != RB_OK) {
        s->create_op = NULL;
        free(op);
        store_session_delete(c->st, s->id, NULL);
        map_del(&c->sessions, s->id);
        session_free(s);
        return e;
    }
    if (handle != NULL)
        *handle = op;
    return RB_OK;
}

void core_cancel(core_op *op)
{
    if (op != NULL)
        op->cancelled = 1;
}

rb_err core_session_get(rb_core *c, const char *session_id, json_t **out, char *err)
{
    session *s = map_get(&c->sessions, session_id);
    if (s != NULL) {
        *out = session_to_api(s);
        return RB_OK;
    }
    json_t *doc;
    rb_err e = store_session_get(c->st, session_id, &doc, err);
    if (e == RB_ENOTFOUND)
        return rb_fail(RB_ENOTFOUND, err, "no session with id '%.64s'; create one with POST /sessions", session_id);
    if (e != RB_OK)
        return e;
    *out = core_session_doc_to_api(c, doc);
    json_decref(doc);
    return RB_OK;
}

rb_err core_session_list(rb_core *c, json_t **out, char *err)
{
    (void)err;
    json_t *arr = json_array();
    size_t pos = 0;
    session *s;
    while ((s = map_next(&c->sessions, &pos)) != NULL)
        if (strcmp(s->status, "starting") != 0 || s->create_op == NULL)
            json_array_append_new(arr, session_to_api(s));
    *out = json_pack("{s:o}", "sessions", arr);
    return RB_OK;
}

rb_err core_session_delete(rb_core *c, const char *session_id, json_t **out, char *err)
{
    session *s = map_get(&c->sessions, session_id);
    if (s == NULL || s->create_op != NULL) {
        json_t *doc = NULL;
        if (s == NULL && store_session_get(c->st, session_id, &doc, NULL) == RB_OK) {
            json_decref(doc);
            return rb_fail(RB_ENOTFOUND, err, "session '%.64s' has already ended", session_id);
        }
        return rb_fail(RB_ENOTFOUND, err, "no session with id '%.64s'", session_id);
    }
    char id[RB_ID_LEN];
    snprintf(id, sizeof(id), "%s", s->id);
    session_end(s, "ended", "deleted by request");
    return core_session_get(c, id, out, err);
}

/* ---- executions --------------------------------------------------------------------- */

rb_err core_execute(rb_core *c, json_t *req, json_t **out, char *err)
{
    static const char *const keys[] = {"session_id", "code", "timeout", "wait", "language", "disabled_rules", NULL};
    rb_err e;
    if (!json_is_object(req))
        return rb_fail(RB_EINVAL, err, "the request body must be a JSON object like {\"session_id\": \"...\", \"code\": \"print(1)\"}");
    if ((e = check_keys(req, "the execute request", keys, err)) != RB_OK)
        return e;
    const char *sid = json_string_value(json_object_get(req, "session_id"));
    json_t *code = json_object_get(req, "code");
    if (sid == NULL)
        return rb_fail(RB_EINVAL, err, "'session_id' is required and must be a string (from POST /sessions)");
    if (!json_is_string(code))
        return rb_fail(RB_EINVAL, err, "'code' is required and must be a string");
    if (memchr(json_string_value(code), '\0', json_string_length(code)) != NULL)
        return rb_fail(RB_EINVAL, err, "'code' must not contain NUL characters");
    json_t *w = json_object_get(req, "wait");
    if (w != NULL && !json_is_boolean(w) && !json_is_null(w))
        return rb_fail(RB_EINVAL, err, "'wait' must be true or false");
    session *s = map_get(&c->sessions, sid);
    if (s == NULL || s->create_op != NULL) {
        json_t *doc = NULL;
        if (s == NULL && store_session_get(c->st, sid, &doc, NULL) == RB_OK) {
            const char *reason = json_string_value(json_object_get(doc, "end_reason"));
            e = rb_fail(RB_ECONFLICT, err, "session '%.64s' has ended (%s); create a new session with POST /sessions",
                        sid, reason ? reason : "no reason recorded");
            json_decref(doc);
            return e;
        }
        return rb_fail(RB_ENOTFOUND, err, "no session with id '%.64s'; create one with POST /sessions", sid);
    }
    json_t *lang = json_object_get(req, "language");
    if (lang != NULL && !json_is_null(lang) &&
        (!json_is_string(lang) || strcmp(json_string_value(lang), s->language) != 0))
        return rb_fail(RB_EINVAL, err, "'language' must match the session's language (\"%s\") or be omitted",
                       s->language);
    double timeout = s->timeout;
    json_t *t = json_object_get(req, "timeout");
    if (t != NULL && !json_is_null(t) && (e = check_timeout(c, t, "timeout", &timeout, err)) != RB_OK)
        return e;
    /* The code policy applies to Python cells; bash is not checked (policy.h). */
    json_t *rules = NULL;
    if ((e = policy_rules_for(c->policy, json_object_get(req, "disabled_rules"), &rules, err)) != RB_OK)
        return e;
    if (strcmp(s->language, "python") != 0) {
        json_decref(rules);
        rules = NULL;
    }
    if (s->queued >= c->cfg->max_queue) {
        json_decref(rules);
        return rb_fail(RB_EBUSY, err, "session '%s' already has %d executions waiting (--max-queue); wait for them to finish",
                       s->id, s->queued);
    }

    execution *ex = execution_new(c, s, json_string_value(code), timeout);
    ex->policy_rules = rules;
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
    session_pump(s);
    return RB_OK;
}

static rb_err load_doc(rb_core *c, const char *request_id, json_t **doc, char *err)
{
    rb_err e = store_execution_get(c->st, request_id, doc, err);
    if (e == RB_ENOTFOUND)
        return rb_fail(RB_ENOTFOUND, err, "no execution with request_id '%.64s'; use the request_id returned by POST /execute",
                       request_id);
    return e;
}

/* Answers a view (status object or result document) of a live or stored execution: both are
 * built from the same stored-document form, so they cannot drift apart. */
static rb_err execution_view(rb_core *c, const char *request_id, json_t *(*view)(json_t *doc), json_t **out, char *err)
{
    execution *ex = map_get(&c->executions, request_id);
    json_t *doc;
    if (ex != NULL) {
        doc = execution_to_doc(ex);
    } else {
        rb_err e = load_doc(c, request_id, &doc, err);
        if (e != RB_OK)
            return e;
    }
    *out = view(doc);
    json_decref(doc);
    return RB_OK;
}

rb_err core_execution_status(rb_core *c, const char *request_id, json_t **out, char *err)
{
    return execution_view(c, request_id, execution_doc_status_api, out, err);
}

rb_err core_execution_results(rb_core *c, const char *request_id, json_t **out, char *err)
{
    return execution_view(c, request_id, execution_doc_result_api, out, err);
}

rb_err core_execution_cancel(rb_core *c, const char *request_id, json_t **out, char *err)
{
    execution *ex = map_get(&c->executions, request_id);
    if (ex == NULL) {
        json_t *doc;
        rb_err e = load_doc(c, request_id, &doc, err);
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
        return core_execution_status(c, id, out, err);
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
    return json_pack("{s:s, s:s, s:{s:b, s:s?, s:s?}, s:{s:i, s:i}, s:{s:i, s:i}, s:o}", "status",
                     c->docker_ok ? "ok" : "degraded", "version", RUNBOX_VERSION, "docker", "reachable", c->docker_ok,
                     "api_version", c->docker_ok ? docker_api_version(c->dk) : NULL, "error",
                     c->docker_ok ? NULL : c->docker_error, "sessions", "live", live, "busy", busy, "executions",
                     "running", running, "queued", queued, "pool", pool_health(c->pool));
}

/*
 * e2b_api.c: E2B's control plane on runbox sessions: create (POST /v2/sandboxes), list with
 * x-next-token paging and its state filter, get, kill, set_timeout; what runbox cannot do
 * (snapshots, metrics of several sandboxes at once, logs) answers 400 naming it. A sandbox's
 * template is one of the image's languages; its timeout is the session's deadline, and its
 * autoPause what that deadline does (suspend or hibernate instead of end); its access tokens (one
 * per key, e2b_token.c), template, metadata and lifecycle are the session's "e2b" extras; a paused
 * session (suspended or hibernated) is a "paused" sandbox. Pause, resume, connect and fork are
 * e2b_pause.c's; the network options e2b_network.c's; volumes and the mounts of a create
 * e2b_volumes.c's.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "server/e2b/e2b_internal.h"
#include "server/e2b/e2b_wire.h"
#include "server/query.h"

/* Templates and the runbox language each runs. */
static const struct {
    const char *template;
    const char *language;
} templates[] = {
    {"code-interpreter-v1", "python"}, {"code-interpreter", "python"}, {"base", "python"},
    {"python", "python"},              {"bash", "bash"},
    {"javascript", "javascript"},      {"typescript", "typescript"},
};

static const char *language_of(const char *template)
{
    for (size_t i = 0; i < sizeof(templates) / sizeof(templates[0]); i++)
        if (strcmp(templates[i].template, template) == 0)
            return templates[i].language;
    return NULL;
}

/* Control-plane calls need an API key's caller when runboxd checks keys (the router has
 * checked it; this guards a route that would be reached without). */
int e2b__authorised(http_call *call)
{
    if (server_has_keys(call->server) && call->who == NULL) {
        e2b__api_error(call->req, 401, "this runboxd requires an API key: set E2B_API_KEY to a key from its key file");
        return 0;
    }
    return 1;
}

int e2b__authorised_body(http_call *call, json_t **body)
{
    char err[RB_ERR_LEN];
    *body = NULL;
    if (!e2b__authorised(call))
        return 0;
    rb_err e = http_read_json(call->req, call->cfg->max_body, 1, body, err);
    if (e != RB_OK) {
        e2b__api_fail(call->req, e, err);
        return 0;
    }
    return 1;
}


/* A core call answered 204 (or by fail) while its client waits; its pool's dispose cancels the
 * answer if the client goes, not the call. */
typedef struct nc_ctx {
    h2o_req_t *req;
    core_op *op;
    const char *id; /* pool memory */
    e2b_fail_fn fail;
} nc_ctx;

static void nc_dispose(void *p)
{
    nc_ctx *ctx = p;
    if (ctx->op != NULL)
        core_cancel(ctx->op); /* the call goes on; nobody waits for its answer */
    ctx->op = NULL;
    ctx->req = NULL;
}

static void nc_done(void *data, rb_err e, const char *msg, json_t *body)
{
    nc_ctx *ctx = data;
    ctx->op = NULL;
    json_decref(body);
    if (ctx->req == NULL)
        return;
    if (e != RB_OK)
        ctx->fail(ctx->req, ctx->id, e, msg);
    else
        http_send_no_content(ctx->req);
}

void e2b__call_no_content(http_call *call, const char *id, json_t *change, e2b_session_call fn, e2b_fail_fn fail)
{
    char err[RB_ERR_LEN];
    nc_ctx *ctx = h2o_mem_alloc_shared(&call->req->pool, sizeof(*ctx), nc_dispose);
    memset(ctx, 0, sizeof(*ctx));
    ctx->req = call->req;
    ctx->id = http_pool_strdup(call->req, id, strlen(id));
    ctx->fail = fail;
    rb_err e = fn(call->core, call->who, id, change, nc_done, ctx, &ctx->op, err);
    if (e != RB_OK) {
        ctx->op = NULL;
        fail(call->req, id, e, err);
    }
}

int64_t e2b__timeout_of(http_call *call, json_t *body)
{
    json_t *t = json_object_get(body, "timeout");
    if (t == NULL)
        return 0;
    if (!json_is_integer(t) || json_integer_value(t) < 1 || json_integer_value(t) > E2B_TIMEOUT_MAX) {
        char msg[RB_ERR_LEN];
        snprintf(msg, sizeof(msg), "timeout: must be a whole number of seconds from 1 to %d", E2B_TIMEOUT_MAX);
        e2b__api_error(call->req, 400, msg);
        return -1;
    }
    return json_integer_value(t);
}

static void time_field(json_t *o, const char *key, int64_t ms)
{
    char buf[40];
    rb_time_format(ms, buf, sizeof(buf));
    json_object_set_new(o, key, json_string(buf));
}

/* Megabytes of a size such as "512m" or "1g". */
static int64_t megabytes(const char *size)
{
    if (size == NULL)
        return 0;
    char *end = NULL;
    double v = strtod(size, &end);
    int unit = end != NULL ? tolower((unsigned char)*end) : 0;
    double mb = unit == 'g' ? v * 1024 : unit == 'k' ? v / 1024 : unit == 'm' ? v : v / (1024.0 * 1024);
    return (int64_t)mb;
}

int e2b__state_of(const char *status)
{
    return status != NULL && (strcmp(status, "pausing") == 0 || strcmp(status, "suspended") == 0 ||
                              strcmp(status, "hibernated") == 0)
               ? E2B_STATE_PAUSED
               : E2B_STATE_RUNNING;
}

json_t *e2b__sandbox_object(json_t *session, json_t *extra, int detail, const char *token)
{
    const char *id = json_string_value(json_object_get(session, "session_id"));
    const char *template = json_string_value(json_object_get(extra, "template"));
    json_t *o = json_pack("{s:s, s:s, s:s, s:s}", "templateID", template ? template : "", "sandboxID", id ? id : "",
                          "clientID", "runbox", "envdVersion", E2B_ENVD_VERSION);
    if (detail != 1 && token != NULL)
        json_object_set_new(o, "envdAccessToken", json_string(token));
    if (detail == 0)
        return o;
    json_object_set(o, "startedAt", json_object_get(session, "created_at"));
    json_t *end = json_object_get(session, "expires_at");
    if (json_is_string(end))
        json_object_set(o, "endAt", end);
    else
        time_field(o, "endAt", rb_now_ms() + (int64_t)E2B_TIMEOUT_MAX * 1000);
    json_t *eo = json_object_get(session, "execution_options");
    double cpus = json_number_value(json_object_get(eo, "cpu_limit"));
    json_object_set_new(o, "cpuCount", json_integer(cpus >= 1 ? (json_int_t)(cpus + 0.999) : 1));
    json_object_set_new(o, "memoryMB", json_integer(megabytes(json_string_value(json_object_get(eo, "memory_limit")))));
    json_object_set_new(o, "diskSizeMB", json_integer(0));
    const char *status = json_string_value(json_object_get(session, "status"));
    int paused = e2b__state_of(status) == E2B_STATE_PAUSED;
    json_object_set_new(o, "state", json_string(paused ? "paused" : "running"));
    json_t *meta = json_object_get(extra, "metadata");
    json_object_set_new(o, "metadata", json_is_object(meta) ? json_incref(meta) : json_object());
    if (detail != 2) /* E2B's SandboxDetail has the network, lifecycle and pause mode; its ListedSandbox has not */
        return o;
    e2b__network_info(o, session);
    e2b__mounts_info(o, session);
    json_t *life = json_object_get(extra, "lifecycle");
    if (!json_is_object(life)) /* made through REST or MCP: its timeout ends it */
        life = json_pack("{s:s, s:b}", "onTimeout", "kill", "autoResume", 0);
    else
        json_incref(life);
    json_object_set_new(o, "lifecycle", life);
    /* what the pause kept, once it is done: a suspended session's memory goes too once it has
     * been idle long enough (runboxd hibernates it) */
    if (paused && strcmp(status, "pausing") != 0)
        json_object_set_new(o, "pauseMode", json_string(strcmp(status, "suspended") == 0 ? "full" : "filesystem"));
    return o;
}

/* The session's E2B data (a new reference, a copy), made when it has none (a session made through
 * REST or MCP becomes an E2B sandbox the first time it is reached through E2B), with the caller's
 * own access token when the caller may run code there. Stored when it changed, but only for such
 * a caller: a viewer's read stores nothing. NULL with *e and err. */
static json_t *extra_of(http_call *call, json_t *session, rb_err *e, char *err)
{
    const char *id = json_string_value(json_object_get(session, "session_id"));
    const char *language = json_string_value(json_object_get(session, "language"));
    const char *owner = e2b__owner_of(session);
    json_t *stored = NULL, *extra;
    int changed = 0;
    *e = core_session_extra(call->core, call->who, id, E2B_EXTRA, &stored, err);
    if (*e != RB_OK)
        return NULL;
    if (stored != NULL) {
        extra = json_deep_copy(stored);
        json_decref(stored);
    } else { /* a python session is the code interpreter's default template; the others' is their language */
        extra = json_pack("{s:s, s:{}}", "template",
                          language && strcmp(language, "python") != 0 ? language : "code-interpreter-v1", "metadata");
        changed = 1;
    }
    changed |= e2b__tokens_upgrade(extra, owner);
    if (!e2b__may_change(call->who, owner))
        return extra;
    e2b__token_mint(extra, e2b__key_name(call->who), &changed);
    if (changed && (*e = core_session_set_extra(call->core, call->who, id, E2B_EXTRA, extra, err)) != RB_OK) {
        json_decref(extra);
        return NULL;
    }
    return extra;
}

const char *e2b__caller_token(http_call *call, json_t *session, json_t *extra)
{
    if (!e2b__may_change(call->who, e2b__owner_of(session)))
        return NULL;
    return json_string_value(json_object_get(json_object_get(extra, "tokens"), e2b__key_name(call->who)));
}

/* ---- create --------------------------------------------------------------------------------- */

typedef struct create_ctx {
    h2o_req_t *req;
    core_op *op;
    rb_server *server;
    rb_core *core;
    const core_caller *who;
    json_t *extra; /* the E2B data to store once the session is ready */
    const char *token; /* the creator's access token (in extra) */
    int64_t timeout_s;
    const char *action; /* what its deadline does (e2b_lifecycle_map; static) */
} create_ctx;

static void create_dispose(void *p)
{
    create_ctx *ctx = p;
    if (ctx->op != NULL)
        core_cancel(ctx->op);
    ctx->op = NULL;
    ctx->req = NULL;
    json_decref(ctx->extra);
    ctx->extra = NULL;
}

static void on_created(void *data, rb_err e, const char *msg, json_t *body)
{
    create_ctx *ctx = data;
    ctx->op = NULL;
    if (ctx->req == NULL) {
        json_decref(body);
        return;
    }
    char err[RB_ERR_LEN];
    const char *id = json_string_value(json_object_get(body, "session_id"));
    if (e == RB_OK && id != NULL) {
        e = core_session_set_extra(ctx->core, ctx->who, id, E2B_EXTRA, ctx->extra, err);
        if (e == RB_OK)
            e = core_session_set_deadline(ctx->core, ctx->who, id, rb_now_ms() + ctx->timeout_s * 1000, err);
        if (e == RB_OK)
            e = core_session_set_deadline_action(ctx->core, ctx->who, id, ctx->action, err);
        msg = err;
    }
    if (e != RB_OK) {
        e2b__api_fail(ctx->req, e, msg);
    } else {
        json_t *o = e2b__sandbox_object(body, ctx->extra, 0, ctx->token);
        http_send_json(ctx->req, 201, o);
        json_decref(o);
    }
    json_decref(body);
}

/* Fields of the create body runbox cannot honour: answered 400 when set to anything but
 * their "off" value, never ignored. (allow_internet_access and network are e2b_network.c's,
 * volumeMounts e2b_volumes.c's, autoPause, autoPauseMemory and autoResume e2b_lifecycle_map's.) */
static const char *unsupported_create_field(json_t *body)
{
    static const char *const fields[] = {"mcp", "iam", "secure", NULL};
    for (size_t i = 0; fields[i] != NULL; i++) {
        json_t *v = json_object_get(body, fields[i]);
        if (v != NULL && !json_is_null(v) && !json_is_false(v) &&
            !(json_is_object(v) && json_object_size(v) == 0) && !(json_is_array(v) && json_array_size(v) == 0))
            return fields[i];
    }
    return NULL;
}

/* The first field of the create body with the wrong type, or NULL. */
static const char *mistyped_create_field(json_t *body)
{
    static const char *const flags[] = {"allow_internet_access", "allowInternetAccess", "secure", NULL};
    for (size_t i = 0; flags[i] != NULL; i++) {
        json_t *v = json_object_get(body, flags[i]);
        if (v != NULL && !json_is_boolean(v))
            return flags[i];
    }
    static const char *const maps[] = {"metadata", "envVars", NULL};
    for (size_t i = 0; maps[i] != NULL; i++) {
        json_t *m = json_object_get(body, maps[i]), *v;
        const char *k;
        if (m == NULL)
            continue;
        if (!json_is_object(m))
            return maps[i];
        json_object_foreach (m, k, v)
            if (!json_is_string(v))
                return maps[i];
    }
    return NULL;
}

int e2b__create(http_call *call)
{
    char err[RB_ERR_LEN], msg[RB_ERR_LEN];
    if (!e2b__authorised(call))
        return 0;
    json_t *body = NULL;
    rb_err e = http_read_json(call->req, call->cfg->max_body, 0, &body, err);
    if (e != RB_OK) {
        e2b__api_fail(call->req, e, err);
        return 0;
    }
    const char *template = json_string_value(json_object_get(body, "templateID"));
    const char *language = template != NULL ? language_of(template) : NULL;
    const char *bad = unsupported_create_field(body), *mistyped = mistyped_create_field(body);
    json_t *meta = json_object_get(body, "metadata");
    json_t *envs = json_object_get(body, "envVars");
    int64_t timeout = e2b__timeout_of(call, body);
    const char *action = "end";
    json_t *lifecycle = NULL;
    if (timeout < 0)
        goto done;
    if (template == NULL) {
        e2b__api_error(call->req, 400, "templateID: required, a string (e.g. \"code-interpreter-v1\")");
        goto done;
    }
    if (mistyped != NULL) {
        snprintf(msg, sizeof(msg), "%s: %s", mistyped,
                 strcmp(mistyped, "metadata") == 0 || strcmp(mistyped, "envVars") == 0
                     ? "must be an object of string values"
                     : "must be true or false");
        e2b__api_error(call->req, 400, msg);
        goto done;
    }
    if (language == NULL) {
        snprintf(msg, sizeof(msg),
                 "template '%.100s' is not available on runboxd: it runs its sandbox image's languages only, as the "
                 "templates code-interpreter-v1 (also base, python), javascript, typescript and bash",
                 template);
        e2b__api_error(call->req, 400, msg);
        goto done;
    }
    if (bad != NULL) {
        snprintf(msg, sizeof(msg), "%s: runboxd does not support this sandbox option (no MCP gateway or IAM)",
                 bad);
        e2b__api_error(call->req, 400, msg);
        goto done;
    }
    if (e2b_lifecycle_map(body, &action, &lifecycle, err) != RB_OK) {
        e2b__api_error(call->req, 400, err);
        goto done;
    }
    json_t *mounts = NULL, *network = NULL;
    if (e2b__mounts_create(call, body, &mounts) != 0)
        goto done;
    if (e2b__network_create(call, body, &network) != 0) {
        json_decref(mounts);
        goto done;
    }
    json_t *opts = json_pack("{s:s}", "language", language), *eo = json_object();
    if (json_is_object(envs) && json_object_size(envs) > 0)
        json_object_set(eo, "environment_variables", envs);
    if (network != NULL)
        json_object_set_new(eo, "network", network);
    if (mounts != NULL)
        json_object_set_new(eo, "mounts", mounts);
    /* metadata["runbox.isolation"]: "container" or "gvisor" (docs/e2b.md); core checks the word */
    json_t *iso = json_object_get(meta, "runbox.isolation");
    if (json_is_string(iso))
        json_object_set(eo, "isolation", iso);
    if (json_object_size(eo) > 0)
        json_object_set(opts, "execution_options", eo);
    json_decref(eo);
    create_ctx *ctx = h2o_mem_alloc_shared(&call->req->pool, sizeof(*ctx), create_dispose);
    memset(ctx, 0, sizeof(*ctx));
    ctx->req = call->req;
    ctx->server = call->server;
    ctx->core = call->core;
    ctx->who = call->who;
    ctx->timeout_s = timeout > 0 ? timeout : 300;
    ctx->action = action;
    ctx->extra = json_pack("{s:s, s:o, s:O, s:s}", "template", template, "metadata",
                           json_is_object(meta) ? json_deep_copy(meta) : json_object(), "lifecycle", lifecycle,
                           "timeoutAction", action);
    int minted = 0; /* the creator owns it: its token is the first */
    ctx->token = e2b__token_mint(ctx->extra, e2b__key_name(call->who), &minted);
    e = core_session_create(call->core, call->who, opts, on_created, ctx, &ctx->op, err);
    json_decref(opts);
    if (e != RB_OK) {
        ctx->op = NULL;
        e2b__api_fail(call->req, e, err);
    }
done:
    json_decref(lifecycle);
    json_decref(body);
    return 0;
}

/* ---- the other calls ------------------------------------------------------------------------ */

int e2b__live_sandbox(http_call *call, json_t **session, json_t **extra)
{
    char err[RB_ERR_LEN];
    const char *id = call->params[0];
    json_t *ended = NULL;
    const char *when = NULL, *reason = NULL;
    *session = *extra = NULL;
    rb_err e = core_session_get(call->core, call->who, id, session, err);
    if (e == RB_OK) {
        const char *status = json_string_value(json_object_get(*session, "status"));
        if (status == NULL || strcmp(status, "ended") == 0 || strcmp(status, "dead") == 0) {
            e = RB_ENOTFOUND;
            ended = json_incref(*session);
            when = json_string_value(json_object_get(ended, "ended_at"));
            reason = json_string_value(json_object_get(ended, "end_reason"));
        }
    }
    if (e == RB_OK)
        *extra = extra_of(call, *session, &e, err);
    if (e != RB_OK) { /* nothing to hand back */
        json_decref(*session);
        json_decref(*extra);
        *session = *extra = NULL;
    }
    if (e == RB_ENOTFOUND && ended != NULL) { /* the caller's own, ended: why, as REST says it */
        snprintf(err, sizeof(err), "sandbox %.64s not found: it has ended (%s%s%s): %.300s", id,
                 json_string_value(json_object_get(ended, "status")), when ? " at " : "", when ? when : "",
                 reason ? reason : "no reason was recorded");
        e2b__api_error(call->req, 404, err);
    } else if (e == RB_ENOTFOUND) {
        e2b__api_not_found(call->req, id);
    } else if (e != RB_OK) {
        e2b__api_fail(call->req, e, err);
    }
    json_decref(ended);
    return e == RB_OK ? 0 : -1;
}

int e2b__get(http_call *call)
{
    json_t *session = NULL, *extra = NULL;
    if (!e2b__authorised(call) || e2b__live_sandbox(call, &session, &extra) != 0)
        return 0;
    /* the caller's own token, only for a key that may run code there (never a viewer's) */
    json_t *o = e2b__sandbox_object(session, extra, 2, e2b__caller_token(call, session, extra));
    http_send_json(call->req, 200, o);
    json_decref(o);
    json_decref(session);
    json_decref(extra);
    return 0;
}

int e2b__kill(http_call *call)
{
    char err[RB_ERR_LEN], msg[RB_ERR_LEN];
    json_t *out = NULL;
    if (!e2b__authorised(call))
        return 0;
    rb_err e = core_session_delete(call->core, call->who, call->params[0], &out, err);
    json_decref(out);
    if (e == RB_ENOTFOUND) {
        snprintf(msg, sizeof(msg), "sandbox %.64s not found", call->params[0]);
        e2b__api_error(call->req, 404, msg);
    } else if (e != RB_OK) {
        e2b__api_fail(call->req, e, err);
    } else {
        http_send_no_content(call->req);
    }
    return 0;
}

int e2b__set_timeout(http_call *call)
{
    char err[RB_ERR_LEN];
    json_t *body = NULL, *session = NULL, *extra = NULL;
    if (!e2b__authorised(call))
        return 0;
    rb_err e = http_read_json(call->req, call->cfg->max_body, 0, &body, err);
    if (e != RB_OK) {
        e2b__api_fail(call->req, e, err);
        return 0;
    }
    int64_t timeout = e2b__timeout_of(call, body);
    if (timeout == 0)
        e2b__api_error(call->req, 400, "timeout: required, in seconds");
    else if (timeout > 0 && e2b__live_sandbox(call, &session, &extra) == 0) {
        e = core_session_set_deadline(call->core, call->who, call->params[0], rb_now_ms() + timeout * 1000, err);
        if (e != RB_OK) {
            e2b__api_fail(call->req, e, err);
        } else {
            http_send_no_content(call->req);
        }
        json_decref(session);
        json_decref(extra);
    }
    json_decref(body);
    return 0;
}

int e2b__unsupported(http_call *call)
{
    char msg[RB_ERR_LEN];
    h2o_iovec_t p = call->req->path_normalized;
    const char *what = "this call";
    if (h2o_strstr(p.base, p.len, H2O_STRLIT("/snapshots")) != SIZE_MAX)
        what = "snapshots (pause() and fork() are offered: a paused sandbox resumes with connect, a fork copies "
               "its files)";
    else if (h2o_strstr(p.base, p.len, H2O_STRLIT("/metrics")) != SIZE_MAX)
        what = "the metrics of several sandboxes at once (get_metrics() of one sandbox is offered; runboxd's own "
               "are at GET /metrics)";
    else if (h2o_strstr(p.base, p.len, H2O_STRLIT("/logs")) != SIZE_MAX)
        what = "sandbox logs";
    snprintf(msg, sizeof(msg), "runboxd does not support %s; see docs/e2b.md for what its E2B API offers", what);
    e2b__api_error(call->req, 400, msg);
    return 0;
}

/* ---- list ----------------------------------------------------------------------------------- */

static int by_start(const void *a, const void *b)
{
    json_t *x = *(json_t *const *)a, *y = *(json_t *const *)b;
    int c = strcmp(json_string_value(json_object_get(x, "startedAt")), json_string_value(json_object_get(y, "startedAt")));
    return c != 0 ? c : strcmp(json_string_value(json_object_get(x, "sandboxID")), json_string_value(json_object_get(y, "sandboxID")));
}

int e2b__list(http_call *call)
{
    char err[RB_ERR_LEN];
    if (!e2b__authorised(call))
        return 0;
    const char *limit_s = http_query_param(call->req, "limit");
    const char *next = http_query_param(call->req, "nextToken");
    const char *state = http_query_param(call->req, "state");
    const char *filter = http_query_param(call->req, "metadata");
    const char *order = http_query_param(call->req, "order");
    const char *template = http_query_param(call->req, "template");
    const char *after_s = http_query_param(call->req, "startedAfter");
    int64_t after = 0;
    if (after_s != NULL && rb_time_parse(after_s, &after) != 0) {
        e2b__api_error(call->req, 400, "startedAfter: an RFC 3339 time such as 2026-11-21T23:59:01Z");
        return 0;
    }
    int states = state != NULL ? e2b_state_filter(state, strlen(state)) : E2B_STATE_RUNNING | E2B_STATE_PAUSED;
    if (states < 0) {
        e2b__api_error(call->req, 400, "state: running and/or paused, separated by a comma");
        return 0;
    }
    if (order != NULL && strcmp(order, "asc") != 0 && strcmp(order, "desc") != 0) {
        e2b__api_error(call->req, 400, "order: asc or desc");
        return 0;
    }
    int64_t limit = 100, start = 0;
    if (limit_s != NULL) {
        if (!query_whole(limit_s, 1000, &limit) || limit < 1) {
            e2b__api_error(call->req, 400, "limit: must be a whole number from 1 to 1000");
            return 0;
        }
    }
    if (next != NULL) {
        if (!query_whole(next, INT64_MAX, &start)) {
            e2b__api_error(call->req, 400, "nextToken: not a token of this server's x-next-token header");
            return 0;
        }
    }
    json_t *list = NULL;
    rb_err e = core_session_list(call->core, call->who, &list, err);
    if (e != RB_OK) {
        e2b__api_fail(call->req, e, err);
        return 0;
    }
    json_t *sessions = json_object_get(list, "sessions");
    size_t n = json_array_size(sessions), kept = 0;
    json_t **all = xcalloc(n + 1, sizeof(*all));
    for (size_t i = 0; i < n; i++) {
        json_t *s = json_array_get(sessions, i);
        const char *id = json_string_value(json_object_get(s, "session_id"));
        json_t *extra = NULL;
        if (id == NULL || core_session_extra(call->core, call->who, id, E2B_EXTRA, &extra, err) != RB_OK)
            continue;
        if (!(states & e2b__state_of(json_string_value(json_object_get(s, "status"))))) {
            json_decref(extra);
            continue;
        }
        json_t *o = e2b__sandbox_object(s, extra, 1, NULL);
        if (extra == NULL) /* not yet connected through E2B: its template is its language */
            json_object_set(o, "templateID", json_object_get(s, "language"));
        json_decref(extra);
        int64_t started = 0;
        const char *started_s = json_string_value(json_object_get(o, "startedAt"));
        if ((filter != NULL && !e2b_metadata_match(filter, strlen(filter), json_object_get(o, "metadata"))) ||
            (template != NULL && strcmp(template, json_string_value(json_object_get(o, "templateID"))) != 0) ||
            (after_s != NULL && (started_s == NULL || rb_time_parse(started_s, &started) != 0 || started < after))) {
            json_decref(o);
            continue;
        }
        all[kept++] = o;
    }
    qsort(all, kept, sizeof(*all), by_start);
    int desc = order == NULL || strcmp(order, "desc") == 0; /* E2B lists newest first unless asked otherwise */
    json_t *page = json_array();
    size_t i;
    for (i = (size_t)start; i < kept && json_array_size(page) < (size_t)limit; i++)
        json_array_append(page, all[desc ? kept - 1 - i : i]);
    for (size_t j = 0; j < kept; j++)
        json_decref(all[j]);
    free(all);
    json_decref(list);
    if (i < kept) {
        char tok[32];
        int len = snprintf(tok, sizeof(tok), "%zu", i);
        h2o_add_header_by_str(&call->req->pool, &call->req->res.headers, H2O_STRLIT("x-next-token"), 0, NULL,
                              http_pool_strdup(call->req, tok, (size_t)len), (size_t)len);
    }
    http_send_json(call->req, 200, page);
    json_decref(page);
    return 0;
}

/*
 * jupyter.c: the kernel gateway's REST side (server/jupyter/jupyter.h): kernelspecs, kernels as
 * runbox sessions, interrupt and restart, and the protocol's registration. The answers follow
 * Jupyter Server's REST API (jupyter_server/services/api/api.yaml): a kernel is {id, name,
 * last_activity, execution_state, connections}; errors are {"message", "reason"}.
 */
#include "server/jupyter/jupyter_internal.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/mem.h"

/* ---- answers ---------------------------------------------------------------------------- */

static const char *reason_of(int status)
{
    switch (status) {
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 409: return "Conflict";
    case 413: return "Payload Too Large";
    case 429: return "Too Many Requests";
    case 503: return "Service Unavailable";
    default: return status >= 500 ? "Internal Server Error" : "Error";
    }
}

static json_t *error_doc(int status, const char *code, const char *message)
{
    (void)code;
    return json_pack("{s:s, s:s}", "message", message ? message : "", "reason", reason_of(status));
}

void jupyter__fail(h2o_req_t *req, rb_err e, const char *msg)
{
    int status = http_status_of(e);
    json_t *doc = error_doc(status, NULL, msg);
    http_send_json(req, status, doc);
    json_decref(doc);
}

static int answer(http_call *call, rb_err e, const char *msg, json_t *out, int status)
{
    if (e != RB_OK)
        jupyter__fail(call->req, e, msg);
    else
        http_send_json(call->req, status, out);
    json_decref(out);
    return 0;
}

/* ---- kernels' counts ---------------------------------------------------------------------- */

int64_t jupyter__next_count(jupyter *j, const char *id)
{
    intptr_t n = (intptr_t)map_get(&j->counts, id);
    map_put(&j->counts, id, (void *)(n + 1));
    return (int64_t)n + 1;
}

void jupyter__forget(jupyter *j, const char *id)
{
    map_del(&j->counts, id);
}

/* ---- kernel ids ---------------------------------------------------------------------------- */

static int is_hex(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
            return 0;
    return 1;
}

const char *jupyter__kernel_id(const char *sid, char *buf)
{
    if (strlen(sid) == 34 && sid[0] == 's' && sid[1] == '_' && is_hex(sid + 2, 32))
        snprintf(buf, JUPYTER_ID_MAX, "%.8s-%.4s-%.4s-%.4s-%.12s", sid + 2, sid + 10, sid + 14, sid + 18, sid + 22);
    else
        snprintf(buf, JUPYTER_ID_MAX, "%s", sid);
    return buf;
}

const char *jupyter__session_id(const char *kid, char *buf)
{
    static const size_t DASHES[] = {8, 13, 18, 23};
    int uuid = strlen(kid) == 36;
    for (size_t i = 0; uuid && i < 4; i++)
        uuid = kid[DASHES[i]] == '-';
    if (uuid && is_hex(kid, 8) && is_hex(kid + 9, 4) && is_hex(kid + 14, 4) && is_hex(kid + 19, 4) &&
        is_hex(kid + 24, 12))
        snprintf(buf, JUPYTER_ID_MAX, "s_%.8s%.4s%.4s%.4s%.12s", kid, kid + 9, kid + 14, kid + 19, kid + 24);
    else
        snprintf(buf, JUPYTER_ID_MAX, "%s", kid);
    return buf;
}

json_t *jupyter__kernel_model(jupyter *j, json_t *session)
{
    char kid[JUPYTER_ID_MAX];
    const char *id = json_string_value(json_object_get(session, "session_id"));
    const char *status = json_string_value(json_object_get(session, "status"));
    const char *state = status == NULL ? "unknown"
                        : strcmp(status, "busy") == 0 ? "busy"
                        : strcmp(status, "starting") == 0 || strcmp(status, "resuming") == 0 ? "starting"
                        : strcmp(status, "ended") == 0 || strcmp(status, "dead") == 0 ? "dead"
                                                                                       : "idle";
    json_t *last = json_object_get(session, "last_used_at");
    return json_pack("{s:s, s:s, s:O, s:s, s:i}", "id", id ? jupyter__kernel_id(id, kid) : "", "name",
                     jmsg_kernel_name(json_string_value(json_object_get(session, "language"))), "last_activity",
                     last != NULL ? last : json_null(), "execution_state", state, "connections",
                     id ? jupyter__connections(j, id) : 0);
}

/* ---- kernelspecs ---------------------------------------------------------------------------- */

static json_t *kernelspec(const char *language)
{
    static const struct {
        const char *language, *display;
    } SPECS[] = {{"python", "Python 3 (runbox)"},
                 {"bash", "Bash (runbox)"},
                 {"javascript", "JavaScript (Node.js, runbox)"},
                 {"typescript", "TypeScript (Node.js, runbox)"}};
    for (size_t i = 0; i < sizeof(SPECS) / sizeof(SPECS[0]); i++)
        if (strcmp(SPECS[i].language, language) == 0)
            return json_pack("{s:s, s:{s:[], s:s, s:s, s:s, s:{}, s:{}}, s:{}}", "name", jmsg_kernel_name(language),
                             "spec", "argv", "display_name", SPECS[i].display, "language", language, "interrupt_mode",
                             "signal", "env", "metadata", "resources");
    return NULL;
}

static const char *const LANGUAGES[] = {"python", "bash", "javascript", "typescript"};

static int kernelspecs(http_call *call)
{
    json_t *specs = json_object();
    for (size_t i = 0; i < sizeof(LANGUAGES) / sizeof(LANGUAGES[0]); i++)
        json_object_set_new(specs, jmsg_kernel_name(LANGUAGES[i]), kernelspec(LANGUAGES[i]));
    return answer(call, RB_OK, NULL, json_pack("{s:s, s:o}", "default", "python3", "kernelspecs", specs), 200);
}

static int kernelspec_get(http_call *call)
{
    const char *lang = jmsg_language_of(call->params[0]);
    json_t *spec = lang != NULL ? kernelspec(lang) : NULL;
    if (spec == NULL) {
        char msg[RB_ERR_LEN];
        snprintf(msg, sizeof(msg), "Kernel spec %.64s not found (runbox has python3, bash, javascript, typescript)",
                 call->params[0]);
        return answer(call, RB_ENOTFOUND, msg, NULL, 0);
    }
    return answer(call, RB_OK, NULL, spec, 200);
}

static int api_version(http_call *call)
{
    return answer(call, RB_OK, NULL, json_pack("{s:s}", "version", RUNBOX_VERSION), 200);
}

/* ---- kernels ------------------------------------------------------------------------------ */

static int kernels_list(http_call *call)
{
    jupyter *j = call->data;
    char err[RB_ERR_LEN];
    json_t *list = NULL;
    rb_err e = core_session_list(call->core, call->who, &list, err);
    if (e != RB_OK)
        return answer(call, e, err, NULL, 0);
    json_t *out = json_array();
    size_t i;
    json_t *s;
    json_array_foreach(json_object_get(list, "sessions"), i, s)
    {
        const char *st = json_string_value(json_object_get(s, "status"));
        if (st != NULL && strcmp(st, "ended") != 0 && strcmp(st, "dead") != 0)
            json_array_append_new(out, jupyter__kernel_model(j, s));
    }
    json_decref(list);
    return answer(call, RB_OK, NULL, out, 200);
}

rb_err jupyter__live_session(http_call *call, json_t **out, char *err)
{
    char sid[JUPYTER_ID_MAX];
    json_t *s = NULL;
    *out = NULL;
    rb_err e = core_session_get(call->core, call->who, jupyter__session_id(call->params[0], sid), &s, err);
    const char *st = e == RB_OK ? json_string_value(json_object_get(s, "status")) : NULL;
    if (e == RB_OK && st != NULL && (strcmp(st, "ended") == 0 || strcmp(st, "dead") == 0)) {
        snprintf(err, RB_ERR_LEN, "Kernel does not exist: %.64s (its session has ended)", call->params[0]);
        e = RB_ENOTFOUND;
    }
    if (e != RB_OK)
        json_decref(s);
    else
        *out = s;
    return e;
}

static int kernel_get(http_call *call)
{
    jupyter *j = call->data;
    char err[RB_ERR_LEN];
    json_t *s = NULL;
    rb_err e = jupyter__live_session(call, &s, err);
    if (e != RB_OK) {
        json_decref(s);
        return answer(call, e, err, NULL, 0);
    }
    json_t *out = jupyter__kernel_model(j, s);
    json_decref(s);
    return answer(call, RB_OK, NULL, out, 200);
}

typedef struct start_ctx {
    h2o_req_t *req;
    core_op *op;
    jupyter *j;
} start_ctx;

static void start_dispose(void *p)
{
    start_ctx *ctx = p;
    if (ctx->op != NULL)
        core_cancel(ctx->op);
    ctx->op = NULL;
    ctx->req = NULL;
}

static void on_started(void *data, rb_err e, const char *msg, json_t *body)
{
    start_ctx *ctx = data;
    ctx->op = NULL;
    if (ctx->req != NULL) {
        if (e != RB_OK) {
            jupyter__fail(ctx->req, e, msg);
        } else {
            json_t *model = jupyter__kernel_model(ctx->j, body);
            http_send_json(ctx->req, 201, model);
            json_decref(model);
        }
    }
    json_decref(body);
}

static int kernel_start(http_call *call)
{
    char err[RB_ERR_LEN];
    json_t *body = NULL;
    rb_err e = http_read_json(call->req, call->cfg->max_body, 1, &body, err);
    if (e != RB_OK)
        return answer(call, e, err, NULL, 0);
    json_t *name = json_object_get(body, "name");
    if (name != NULL && !json_is_null(name) && !json_is_string(name)) {
        json_decref(body);
        return answer(call, RB_EINVAL, "'name' must be a kernelspec's name (python3, bash, javascript, typescript)",
                      NULL, 0);
    }
    const char *lang = jmsg_language_of(json_string_value(name));
    if (lang == NULL) {
        snprintf(err, sizeof(err), "No such kernel named %.64s (runbox has python3, bash, javascript, typescript)",
                 json_string_value(name));
        json_decref(body);
        return answer(call, RB_ENOTFOUND, err, NULL, 0);
    }
    json_t *opts = json_pack("{s:s}", "language", lang);
    json_t *env = json_object_get(body, "env"); /* the kernel's environment: the session's variables */
    if (json_is_object(env) && json_object_size(env) > 0)
        json_object_set_new(opts, "execution_options", json_pack("{s:O}", "environment_variables", env));
    json_decref(body);
    start_ctx *ctx = h2o_mem_alloc_shared(&call->req->pool, sizeof(*ctx), start_dispose);
    *ctx = (start_ctx){call->req, NULL, call->data};
    e = core_session_create(call->core, call->who, opts, on_started, ctx, &ctx->op, err);
    json_decref(opts);
    if (e != RB_OK) {
        ctx->op = NULL;
        return answer(call, e, err, NULL, 0);
    }
    return 0;
}

static int kernel_delete(http_call *call)
{
    jupyter *j = call->data;
    char err[RB_ERR_LEN], sid[JUPYTER_ID_MAX];
    json_t *out = NULL;
    rb_err e = core_session_delete(call->core, call->who, jupyter__session_id(call->params[0], sid), &out, err);
    json_decref(out);
    if (e != RB_OK)
        return answer(call, e, err, NULL, 0);
    jupyter__forget(j, sid);
    jupyter__end_kernel(j, sid, NULL);
    http_send_no_content(call->req);
    return 0;
}

static int kernel_interrupt(http_call *call)
{
    char err[RB_ERR_LEN], sid[JUPYTER_ID_MAX];
    json_t *s = NULL;
    rb_err e = core_session_get(call->core, call->who, jupyter__session_id(call->params[0], sid), &s, err);
    json_decref(s);
    if (e != RB_OK)
        return answer(call, e, err, NULL, 0);
    jupyter__interrupt(call->data, call->who, sid);
    http_send_no_content(call->req);
    return 0;
}

/* A restart: the executions in flight interrupted, then an execution that replaces the
 * interpreter (core_execute with restart), answered once it is done. */
typedef struct restart_ctx {
    h2o_req_t *req;
    core_watch *watch;
    jupyter *j;
    const core_caller *who;
    char id[JUPYTER_ID_MAX]; /* the session's */
} restart_ctx;

static void restart_dispose(void *p)
{
    restart_ctx *ctx = p;
    if (ctx->watch != NULL)
        core_watch_stop(ctx->watch);
    ctx->watch = NULL;
    ctx->req = NULL;
}

static void on_restarted(void *data, const char *event, json_t *payload)
{
    restart_ctx *ctx = data;
    if (strcmp(event, "done") != 0 || ctx->req == NULL)
        return;
    ctx->watch = NULL;
    const char *st = json_string_value(json_object_get(payload, "status"));
    if (st == NULL || strcmp(st, "completed") != 0) {
        jupyter__fail(ctx->req, RB_EUNAVAILABLE, "the kernel could not be restarted; try again or start a new one");
        return;
    }
    char err[RB_ERR_LEN];
    json_t *s = NULL;
    if (core_session_get(ctx->j->core, ctx->who, ctx->id, &s, err) != RB_OK) {
        jupyter__fail(ctx->req, RB_ENOTFOUND, err);
        return;
    }
    json_t *model = jupyter__kernel_model(ctx->j, s);
    http_send_json(ctx->req, 200, model);
    json_decref(model);
    json_decref(s);
}

rb_err jupyter__restart(jupyter *j, const core_caller *who, const char *id, core_event_cb cb, void *data,
                        core_watch **watch, char *err)
{
    jupyter__interrupt(j, who, id);
    json_t *req = json_pack("{s:s, s:s, s:b}", "session_id", id, "code", "", "restart", 1), *out = NULL;
    rb_err e = core_execute(j->core, who, req, &out, err);
    json_decref(req);
    if (e != RB_OK)
        return e;
    const char *rid = json_string_value(json_object_get(out, "request_id"));
    e = core_watch_start(j->core, who, rid ? rid : "", 0, cb, data, watch, err);
    json_decref(out);
    if (e == RB_OK)
        jupyter__forget(j, id);
    return e;
}

static int kernel_restart(http_call *call)
{
    char err[RB_ERR_LEN];
    restart_ctx *ctx = h2o_mem_alloc_shared(&call->req->pool, sizeof(*ctx), restart_dispose);
    *ctx = (restart_ctx){call->req, NULL, call->data, call->who, ""};
    jupyter__session_id(call->params[0], ctx->id);
    rb_err e = jupyter__restart(call->data, call->who, ctx->id, on_restarted, ctx, &ctx->watch, err);
    if (e != RB_OK) {
        ctx->watch = NULL;
        return answer(call, e, err, NULL, 0);
    }
    return 0;
}

/* ---- registration ----------------------------------------------------------------------------- */

static const http_route routes[] = {
    {"GET", "/jupyter/api", api_version},
    {"GET", "/jupyter/api/kernelspecs", kernelspecs},
    {"GET", "/jupyter/api/kernelspecs/{name}", kernelspec_get},
    {"GET", "/jupyter/api/kernels", kernels_list},
    {"POST", "/jupyter/api/kernels", kernel_start},
    {"GET", "/jupyter/api/kernels/{id}", kernel_get},
    {"DELETE", "/jupyter/api/kernels/{id}", kernel_delete},
    {"POST", "/jupyter/api/kernels/{id}/interrupt", kernel_interrupt},
    {"POST", "/jupyter/api/kernels/{id}/restart", kernel_restart},
    {"GET", "/jupyter/api/kernels/{id}/channels", jupyter__channels},
    {"GET", "/jupyter/login", jupyter__login_page},
    {"POST", "/jupyter/login", jupyter__login},
};

static void on_stop(void *data)
{
    jupyter *j = data;
    j->stopping = 1;
    jupyter__close_all(j);
}

static void on_free(void *data)
{
    jupyter *j = data;
    for (size_t i = 0; i < JUPYTER_LOGINS_MAX; i++)
        free(j->logins[i].key);
    map_dispose(&j->counts);
    json_decref(j->python_info);
    free(j);
}

/* The login pages answer without a key: they are how password mode gets one. */
static int own_auth(h2o_req_t *req)
{
    static const char login[] = JUPYTER_PREFIX "/login";
    h2o_iovec_t p = req->path_normalized;
    return p.len == sizeof(login) - 1 && memcmp(p.base, login, p.len) == 0;
}

void jupyter_register(rb_server *s, rb_core *core)
{
    jupyter *j = xcalloc(1, sizeof(*j));
    j->server = s;
    j->core = core;
    map_init(&j->counts);
    http_protocol p = {.name = "jupyter",
                       .routes = routes,
                       .nroutes = sizeof(routes) / sizeof(routes[0]),
                       .data = j,
                       .stop = on_stop,
                       .free = on_free,
                       .error_prefix = JUPYTER_PREFIX "/",
                       .error_doc = error_doc,
                       .own_auth = own_auth,
                       .credential = jupyter__credential};
    server_register(s, &p);
}

/*
 * e2b_interp.c: E2B's code interpreter (port 49999) on a runbox session. POST /execute queues
 * an execution (core_execute), watches it (core_watch_start) and re-encodes its events as
 * E2B's JSON lines while it runs: stdout/stderr, results (text, png and the other MIME types
 * the runner produces), an error, the execution count and end_of_execution. A keepalive line
 * every second keeps the stream alive and shows when the client has gone: then the execution
 * is cancelled (E2B's SDK enforces its run timeout by dropping the connection). A run names a
 * language (its default context) or a context, and may carry env_vars for itself alone. The
 * contexts API lists, creates, removes and restarts the session's contexts (core/contexts.c);
 * their cwd is shown and taken in E2B's view, where the workspace is /home/user.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/e2b/e2b_internal.h"
#include "server/e2b/e2b_wire.h"
#include "server/sse.h"

#define KEEPALIVE_LINE "{\"type\":\"keepalive\"}\n"
#define KEEPALIVE_MS 1000

/* E2B's result key for each MIME type the runner can show. */
static const struct {
    const char *mime, *key;
} result_keys[] = {
    {"text/plain", "text"},         {"text/html", "html"},       {"text/markdown", "markdown"},
    {"image/svg+xml", "svg"},       {"image/png", "png"},        {"image/jpeg", "jpeg"},
    {"application/pdf", "pdf"},     {"text/latex", "latex"},     {"application/json", "json"},
    {"application/javascript", "javascript"},
};

typedef struct exec_ctx {
    sse_stream *out;
    core_watch *watch;
    rb_core *core;
    const core_caller *who;
    char request_id[64];
    char session_id[80];
} exec_ctx;

static void send_line(exec_ctx *ctx, json_t *line)
{
    char *text = json_dumps(line, JSON_COMPACT);
    if (text != NULL && ctx->out != NULL) {
        sse_send_line(ctx->out, text, strlen(text));
        sse_send_line(ctx->out, "\n", 1);
    }
    free(text);
}

static int64_t now_ns(void)
{
    return rb_now_ms() * 1000000;
}

/* A traceback array of lines as one string. New reference. */
static json_t *traceback_text(json_t *tb)
{
    if (json_is_string(tb))
        return json_incref(tb);
    rb_buf b;
    rb_buf_init(&b, 1u << 20);
    size_t i;
    json_t *line;
    json_array_foreach (tb, i, line) {
        const char *s = json_string_value(line);
        size_t n = json_string_length(line);
        if (s == NULL)
            continue;
        if (b.len > 0 && b.data[b.len - 1] != '\n')
            rb_buf_append(&b, "\n", 1);
        rb_buf_append(&b, s, n);
    }
    json_t *out = json_stringn(b.data ? b.data : "", b.len);
    rb_buf_dispose(&b);
    return out ? out : json_string("");
}

/* A result or display item as E2B's result line: a key per format (result_keys), the formats E2B
 * has no key for in extra, is_main_result for the cell's value. New reference. */
static json_t *result_line(json_t *item, int is_main)
{
    json_t *line = json_pack("{s:s, s:b, s:{}}", "type", "result", "is_main_result", is_main, "extra");
    json_t *bundle = core_output_bundle(item);
    const char *mime;
    json_t *value;
    json_object_foreach(bundle, mime, value)
    {
        const char *key = NULL;
        for (size_t i = 0; i < sizeof(result_keys) / sizeof(result_keys[0]) && key == NULL; i++)
            if (strcmp(result_keys[i].mime, mime) == 0)
                key = result_keys[i].key;
        if (key == NULL) {
            json_object_set(json_object_get(line, "extra"), mime, value);
            continue;
        }
        json_object_set(line, key, value);
    }
    json_decref(bundle);
    json_t *str = json_object_get(item, "str"); /* E2B shows a str value as the string, not its repr */
    if (is_main && json_is_string(str))
        json_object_set(line, "text", str);
    return line;
}

/* One runbox output item as an E2B line (new reference), or NULL for none. */
static json_t *line_of(json_t *item)
{
    const char *type = json_string_value(json_object_get(item, "type"));
    if (type == NULL)
        return NULL;
    if (strcmp(type, "stream") == 0) {
        const char *name = json_string_value(json_object_get(item, "name"));
        return json_pack("{s:s, s:O, s:I}", "type", name && strcmp(name, "stderr") == 0 ? "stderr" : "stdout", "text",
                         json_object_get(item, "text"), "timestamp", (json_int_t)now_ns());
    }
    if (strcmp(type, "result") == 0 || strcmp(type, "display") == 0)
        return result_line(item, strcmp(type, "result") == 0);
    if (strcmp(type, "error") == 0) {
        json_t *name = json_object_get(item, "ename"), *value = json_object_get(item, "evalue");
        return json_pack("{s:s, s:O, s:O, s:o}", "type", "error", "name", name ? name : json_string("Error"), "value",
                         value ? value : json_string(""), "traceback", traceback_text(json_object_get(item, "traceback")));
    }
    return NULL;
}

static void on_closed(void *data)
{
    exec_ctx *ctx = data;
    ctx->out = NULL;
    if (ctx->watch == NULL)
        return;
    /* The client went away (its run timeout, or it was stopped): stop the code too. */
    core_watch_stop(ctx->watch);
    ctx->watch = NULL;
    json_t *st = NULL;
    char err[RB_ERR_LEN];
    if (core_execution_cancel(ctx->core, ctx->who, ctx->request_id, &st, err) == RB_OK)
        rb_info("e2b: execution %s cancelled: its client disconnected", ctx->request_id);
    json_decref(st);
}

static void on_event(void *data, const char *event, json_t *payload)
{
    exec_ctx *ctx = data;
    if (strcmp(event, "output") == 0) {
        json_t *line = line_of(payload);
        if (line != NULL)
            send_line(ctx, line);
        json_decref(line);
        return;
    }
    if (strcmp(event, "done") != 0)
        return;
    ctx->watch = NULL; /* finished: must not be stopped again */
    if (ctx->out == NULL)
        return;
    const char *ename = json_string_value(json_object_get(json_object_get(payload, "error"), "ename"));
    if (ename != NULL && strcmp(ename, "SessionEnded") == 0) {
        /* The sandbox was killed or timed out while the code ran: on E2B the stream breaks and the
         * SDK, finding the sandbox gone, raises TimeoutException ("killed while the request was in
         * progress"), not an execution error. */
        sse_break(ctx->out);
        ctx->out = NULL;
        return;
    }
    json_t *session = NULL;
    char err[RB_ERR_LEN];
    json_int_t count = 0;
    if (core_session_get(ctx->core, ctx->who, ctx->session_id, &session, err) == RB_OK)
        count = json_integer_value(json_object_get(session, "executions"));
    json_decref(session);
    json_t *line = json_pack("{s:s, s:I}", "type", "number_of_executions", "execution_count", count);
    send_line(ctx, line);
    json_decref(line);
    line = json_pack("{s:s}", "type", "end_of_execution");
    send_line(ctx, line);
    json_decref(line);
    sse_end(ctx->out);
    ctx->out = NULL;
}

int e2b__execute(http_call *call)
{
    char err[RB_ERR_LEN], msg[RB_ERR_LEN];
    e2b_sandbox sbx;
    json_t *body = NULL, *session = NULL, *queued = NULL;
    if (e2b__sandbox_of(call, E2B_CHANGES, &sbx) != 0)
        return 0;
    rb_err e = http_read_json(call->req, call->cfg->max_body, 0, &body, err);
    if (e != RB_OK) {
        e2b__sandbox_error(call->req, http_status_of(e), err);
        return 0;
    }
    json_t *code = json_object_get(body, "code");
    const char *language = e2b_language(json_string_value(json_object_get(body, "language")));
    const char *context = json_string_value(json_object_get(body, "context_id"));
    json_t *envs = json_object_get(body, "env_vars");
    const char *have = NULL;
    if (core_session_get(call->core, sbx.who, sbx.session_id, &session, err) == RB_OK)
        have = json_string_value(json_object_get(session, "language"));
    if (!json_is_string(code)) {
        e2b__sandbox_error(call->req, 400, "code: required, a string");
    } else if (language != NULL && context != NULL) {
        e2b__sandbox_error(call->req, 400, "give context_id or language, not both (a context has its language)");
    } else if (language != NULL && !core_language_known(language)) {
        snprintf(msg, sizeof(msg),
                 "language '%.40s': runbox runs python, javascript (js), typescript (ts) and bash; no other kernel "
                 "is installed",
                 language);
        e2b__sandbox_error(call->req, 400, msg);
    } else if (!server_stream_room(call->server, err)) {
        e2b__sandbox_error(call->req, 429, err);
    } else {
        json_t *req = json_pack("{s:s, s:O}", "session_id", sbx.session_id, "code", code);
        if (language != NULL && strcmp(language, have != NULL ? have : "python") != 0)
            json_object_set_new(req, "language", json_string(language)); /* its default context (core/contexts.c) */
        if (context != NULL)
            json_object_set_new(req, "context", json_string(context));
        if (json_is_object(envs) && json_object_size(envs) > 0)
            json_object_set(req, "env", envs);
        else if (envs != NULL && !json_is_null(envs) && !json_is_object(envs))
            json_object_set(req, "env", envs); /* core says what is wrong with it */
        e = core_execute(call->core, sbx.who, req, &queued, err);
        json_decref(req);
        const char *rid = json_string_value(json_object_get(queued, "request_id"));
        exec_ctx *ctx = h2o_mem_alloc_pool(&call->req->pool, sizeof(*ctx));
        memset(ctx, 0, sizeof(*ctx));
        ctx->core = call->core;
        ctx->who = sbx.who;
        snprintf(ctx->request_id, sizeof(ctx->request_id), "%s", rid ? rid : "");
        snprintf(ctx->session_id, sizeof(ctx->session_id), "%s", sbx.session_id);
        if (e == RB_OK)
            e = core_watch_start(call->core, sbx.who, ctx->request_id, 1, on_event, ctx, &ctx->watch, err);
        if (e != RB_OK) {
            ctx->watch = NULL;
            e2b__sandbox_error(call->req, e == RB_ENOTFOUND ? 404 : e == RB_ECONFLICT ? 409 : http_status_of(e), err);
        } else {
            ctx->out = sse_start_lines(call->server, call->req, "application/json", KEEPALIVE_LINE, KEEPALIVE_MS,
                                       on_closed, ctx);
        }
    }
    json_decref(queued);
    json_decref(session);
    json_decref(body);
    return 0;
}

/* ---- contexts ------------------------------------------------------------------------------- */

/* A context's directory as E2B shows it: the workspace is /home/user (e2b_path_map's inverse),
 * none is the sandbox's working directory. Pool memory. */
static const char *e2b_cwd(h2o_req_t *req, const char *cwd)
{
    size_t nw = strlen(E2B_WORKDIR);
    if (cwd == NULL)
        return E2B_HOME;
    if (strncmp(cwd, E2B_WORKDIR, nw) != 0 || (cwd[nw] != '\0' && cwd[nw] != '/'))
        return cwd;
    size_t n = strlen(E2B_HOME) + strlen(cwd + nw) + 1;
    char *out = h2o_mem_alloc_pool(&req->pool, n);
    snprintf(out, n, "%s%s", E2B_HOME, cwd + nw);
    return out;
}

/* The context object as E2B's SDK reads it ({id, language, cwd}); new reference. */
static json_t *e2b_context(h2o_req_t *req, json_t *ctx)
{
    return json_pack("{s:O, s:O, s:s}", "id", json_object_get(ctx, "id"), "language", json_object_get(ctx, "language"),
                     "cwd", e2b_cwd(req, json_string_value(json_object_get(ctx, "cwd"))));
}

static void context_error(h2o_req_t *req, rb_err e, const char *err)
{
    e2b__sandbox_error(req, e == RB_ENOTFOUND ? 404 : http_status_of(e), err);
}

int e2b__contexts_list(http_call *call)
{
    e2b_sandbox sbx;
    char err[RB_ERR_LEN];
    json_t *list = NULL;
    /* The SDK sends no access token to /contexts: the sandbox's id is what names it. */
    if (e2b__sandbox_of(call, E2B_NO_TOKEN, &sbx) != 0)
        return 0;
    rb_err e = core_context_list(call->core, sbx.who, sbx.session_id, &list, err);
    if (e != RB_OK) {
        context_error(call->req, e, err);
        return 0;
    }
    json_t *out = json_array();
    size_t i;
    json_t *ctx;
    json_array_foreach (list, i, ctx)
        json_array_append_new(out, e2b_context(call->req, ctx));
    http_send_json(call->req, 200, out);
    json_decref(out);
    json_decref(list);
    return 0;
}

int e2b__contexts_create(http_call *call)
{
    e2b_sandbox sbx;
    char err[RB_ERR_LEN];
    json_t *body = NULL, *ctx = NULL;
    if (e2b__sandbox_of(call, E2B_NO_TOKEN, &sbx) != 0)
        return 0;
    rb_err e = http_read_json(call->req, call->cfg->max_body, 0, &body, err);
    if (e != RB_OK) {
        e2b__sandbox_error(call->req, http_status_of(e), err);
        return 0;
    }
    json_t *req = json_object();
    const char *language = e2b_language(json_string_value(json_object_get(body, "language")));
    json_t *lang = json_object_get(body, "language");
    if (language != NULL)
        json_object_set_new(req, "language", json_string(language));
    else if (lang != NULL && !json_is_null(lang))
        json_object_set(req, "language", lang); /* core names what is wrong with it */
    json_t *cwd = json_object_get(body, "cwd");
    const char *dir = json_string_value(cwd);
    if (dir != NULL && dir[0] == '/') {
        const char *rel = e2b_path_map(dir); /* /home/user is the workspace, as for files */
        char *mapped = rel == NULL ? xstrdup(dir)
                       : rel[0] == '/' ? xstrdup(rel)
                                       : xasprintf("%s/%s", E2B_WORKDIR, rel);
        json_object_set_new(req, "cwd", json_string(mapped));
        free(mapped);
    } else if (cwd != NULL && !json_is_null(cwd)) {
        json_object_set(req, "cwd", cwd);
    }
    e = core_context_create(call->core, sbx.who, sbx.session_id, req, &ctx, err);
    if (e != RB_OK) {
        if (e == RB_EINVAL && language != NULL && !core_language_known(language))
            snprintf(err, sizeof(err),
                     "language '%.40s': runbox runs python, javascript (js), typescript (ts) and bash; no other "
                     "kernel is installed",
                     language);
        context_error(call->req, e, err);
    } else {
        json_t *out = e2b_context(call->req, ctx);
        http_send_json(call->req, 200, out);
        json_decref(out);
    }
    json_decref(ctx);
    json_decref(req);
    json_decref(body);
    return 0;
}

int e2b__context_delete(http_call *call)
{
    e2b_sandbox sbx;
    char err[RB_ERR_LEN];
    if (e2b__sandbox_of(call, E2B_NO_TOKEN, &sbx) != 0)
        return 0;
    rb_err e = core_context_remove(call->core, sbx.who, sbx.session_id, call->params[0], err);
    if (e != RB_OK)
        context_error(call->req, e, err);
    else
        http_send_json(call->req, 200, json_null());
    return 0;
}

/* A restart waits for its execution's done (the new interpreter is there) before answering. */
typedef struct restart_ctx {
    h2o_req_t *req;
    core_watch *watch;
} restart_ctx;

static void restart_dispose(void *p)
{
    restart_ctx *ctx = p;
    if (ctx->watch != NULL)
        core_watch_stop(ctx->watch);
    ctx->watch = NULL;
}

static void on_restart_event(void *data, const char *event, json_t *payload)
{
    restart_ctx *ctx = data;
    (void)payload;
    if (strcmp(event, "done") != 0)
        return;
    ctx->watch = NULL;
    http_send_json(ctx->req, 200, json_null());
}

int e2b__context_restart(http_call *call)
{
    e2b_sandbox sbx;
    char err[RB_ERR_LEN];
    json_t *queued = NULL;
    if (e2b__sandbox_of(call, E2B_NO_TOKEN, &sbx) != 0)
        return 0;
    json_t *req = json_pack("{s:s, s:s, s:b, s:s}", "session_id", sbx.session_id, "code", "", "restart", 1, "context",
                            call->params[0]);
    rb_err e = core_execute(call->core, sbx.who, req, &queued, err);
    json_decref(req);
    const char *rid = json_string_value(json_object_get(queued, "request_id"));
    if (e == RB_OK && rid != NULL) {
        restart_ctx *ctx = h2o_mem_alloc_shared(&call->req->pool, sizeof(*ctx), restart_dispose);
        ctx->req = call->req;
        ctx->watch = NULL;
        e = core_watch_start(call->core, sbx.who, rid, 1, on_restart_event, ctx, &ctx->watch, err);
        if (e != RB_OK)
            ctx->watch = NULL;
    }
    if (e != RB_OK)
        context_error(call->req, e, err);
    json_decref(queued);
    return 0;
}

/*
 * mcp_tools.c: the MCP tools (server/mcp/mcp_internal.h): their definitions, the tool result
 * encodings (text blocks, errors, structured content, an execution's output and images),
 * execute_code with its progress notifications, the session tools, and running session-bound
 * tools in a given session or in the MCP connection's own sandbox. The file, package and
 * dependency tools are in mcp_files.c. Tools only translate: core does the work.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/mcp/mcp_internal.h"

/* ---- tool results ---------------------------------------------------------------------- */

static json_t *text_block(const char *text)
{
    return json_pack("{s:s, s:s}", "type", "text", "text", text);
}

json_t *mcp__tool_error(const char *fmt, ...)
{
    char text[RB_ERR_LEN];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof(text), fmt, ap);
    va_end(ap);
    return json_pack("{s:[o], s:b}", "content", text_block(text), "isError", 1);
}

json_t *mcp__tool_core_error(rb_err e, const char *msg)
{
    return mcp__tool_error("%s: %s", rb_strerror(e), msg && msg[0] ? msg : rb_strerror(e));
}

/* A successful result of a non-execute tool: the object as text and as structuredContent. */
json_t *mcp__tool_object(json_t *obj)
{
    char *text = json_dumps(obj, JSON_INDENT(2));
    json_t *r = json_pack("{s:[o], s:O, s:b}", "content", text_block(text ? text : "{}"), "structuredContent", obj,
                          "isError", 0);
    free(text);
    return r;
}

static int version_at_least(const mcp_rt *rt, const char *v)
{
    return strcmp(rt->version, v) >= 0;
}

/* The text of a display or result item a model reads (borrowed), or NULL: the first of its
 * text/markdown, text/html, text/latex, application/json and image/svg+xml; else its text/plain,
 * unless it is an image's (a plot's "<Figure size ...>") and the item not the cell's value. */
static const char *model_text(json_t *item, int is_result)
{
    static const char *const order[] = {"text/markdown", "text/html", "text/latex", "application/json",
                                        "image/svg+xml"};
    json_t *bundle = json_object_get(item, "bundle");
    if (!json_is_object(bundle)) /* stored before bundles */
        return is_result ? json_string_value(json_object_get(item, "text")) : NULL;
    for (size_t i = 0; i < sizeof(order) / sizeof(order[0]); i++) {
        const char *t = json_string_value(json_object_get(bundle, order[i]));
        if (t != NULL)
            return t;
    }
    int image = json_object_get(bundle, "image/png") != NULL || json_object_get(bundle, "image/jpeg") != NULL;
    return image && !is_result ? NULL : json_string_value(json_object_get(bundle, "text/plain"));
}

/* The tool result of a finished execution (result document doc, borrowed). */
static json_t *execution_tool_result(mcp_call *call, json_t *doc)
{
    json_t *content = json_array();
    const char *status = json_string_value(json_object_get(doc, "status"));
    const char *rid = json_string_value(json_object_get(doc, "request_id"));
    const char *out = json_string_value(json_object_get(doc, "stdout"));
    const char *errs = json_string_value(json_object_get(doc, "stderr"));
    const char *result = json_string_value(json_object_get(doc, "result"));
    json_t *error = json_object_get(doc, "error");
    if (call->new_session) {
        /* MCP 2026-07-28 has no MCP session to keep a sandbox in: the model must pass this on. */
        char *t = xasprintf("session_id: %s (a new %s session was started for this call; pass session_id \"%s\" to "
                            "execute_code and the file tools to keep its variables and files, and close_session "
                            "when done)",
                            call->session_id, call->language[0] ? call->language : "python", call->session_id);
        json_array_append_new(content, text_block(t));
        free(t);
    }
    if (call->replaced)
        json_array_append_new(content, text_block("note: the earlier sandbox of this MCP session had ended; this ran "
                                                  "in a new one, so earlier variables are gone"));
    if (out != NULL && out[0] != '\0')
        json_array_append_new(content, text_block(out));
    if (errs != NULL && errs[0] != '\0') {
        char *t = xasprintf("stderr:\n%s", errs);
        json_array_append_new(content, text_block(t));
        free(t);
    }
    /* display() outputs and the value, each as the text a model reads best (the HTML of a
     * DataFrame, a Markdown's source, ...); a plot's "<Figure ...>" text is left to its image */
    size_t i;
    json_t *item;
    int had_result = 0;
    json_array_foreach(json_object_get(doc, "outputs"), i, item)
    {
        const char *type = json_string_value(json_object_get(item, "type"));
        int is_result = type != NULL && strcmp(type, "result") == 0;
        if (type == NULL || (!is_result && strcmp(type, "display") != 0))
            continue;
        had_result |= is_result;
        const char *t = model_text(item, is_result);
        if (t != NULL)
            json_array_append_new(content, text_block(t));
    }
    if (!had_result && result != NULL) /* a document without its outputs */
        json_array_append_new(content, text_block(result));
    if (json_is_object(error)) {
        rb_buf tb;
        rb_buf_init(&tb, 4u * 1024 * 1024);
        json_t *line;
        json_array_foreach(json_object_get(error, "traceback"), i, line)
        {
            const char *l = json_string_value(line);
            if (l != NULL) {
                rb_buf_append(&tb, l, strlen(l));
                if (tb.len > 0 && tb.data[tb.len - 1] != '\n')
                    rb_buf_append(&tb, "\n", 1);
            }
        }
        const char *ename = json_string_value(json_object_get(error, "ename"));
        const char *evalue = json_string_value(json_object_get(error, "evalue"));
        char *t = tb.len > 0 ? xstrndup(tb.data, tb.len)
                             : xasprintf("%s: %s", ename ? ename : "Error", evalue ? evalue : "");
        json_array_append_new(content, text_block(t));
        free(t);
        rb_buf_dispose(&tb);
    }
    if (json_is_true(json_object_get(doc, "reset"))) {
        const char *why = json_string_value(json_object_get(doc, "reset_reason"));
        char *t = xasprintf("note: the interpreter was restarted (%s); variables from earlier calls are gone",
                            why ? why : "no reason given");
        json_array_append_new(content, text_block(t));
        free(t);
    }
    if (json_is_true(json_object_get(doc, "truncated"))) {
        char *t = xasprintf("note: output was truncated (%lld bytes dropped)",
                            (long long)json_integer_value(json_object_get(doc, "dropped_bytes")));
        json_array_append_new(content, text_block(t));
        free(t);
    }
    size_t images = 0;
    json_t *png;
    json_array_foreach(json_object_get(doc, "files"), i, png)
    {
        images++;
        size_t b64 = json_string_length(png);
        size_t bytes = b64 / 4 * 3;
        if (bytes > call->ms->cfg->mcp_image_limit && version_at_least(call->rt, "2025-06-18") && rid != NULL) {
            char *uri = xasprintf("runbox://executions/%s/files/%zu", rid, i);
            char *name = xasprintf("plot-%zu.png", i);
            json_array_append_new(content, json_pack("{s:s, s:s, s:s, s:s, s:I}", "type", "resource_link", "uri", uri,
                                                     "name", name, "mimeType", "image/png", "size",
                                                     (json_int_t)bytes));
            free(uri);
            free(name);
        } else {
            json_array_append_new(content,
                                  json_pack("{s:s, s:O, s:s}", "type", "image", "data", png, "mimeType", "image/png"));
        }
    }
    json_array_foreach(json_object_get(doc, "outputs"), i, item)
    {
        /* a JPEG shown without a PNG beside it (the PNGs are the files above) */
        json_t *bundle = json_object_get(item, "bundle");
        json_t *jpeg = json_object_get(bundle, "image/jpeg");
        if (json_is_string(jpeg) && json_object_get(bundle, "image/png") == NULL) {
            images++;
            json_t *block = json_pack("{s:s, s:O, s:s}", "type", "image", "data", jpeg, "mimeType", "image/jpeg");
            json_array_append_new(content, block);
        }
    }
    int is_error = status == NULL || strcmp(status, "completed") != 0;
    if (status != NULL && strcmp(status, "timeout") == 0) {
        char *t = xasprintf("the execution timed out and was interrupted (request %s); the session's variables are "
                            "kept unless a restart is noted above",
                            rid ? rid : "?");
        json_array_append_new(content, text_block(t));
        free(t);
    } else if (status != NULL && strcmp(status, "cancelled") == 0) {
        json_array_append_new(content, text_block("the execution was cancelled"));
    }
    size_t plots = images;
    if (json_array_size(content) == plots) {
        /* Nothing but plots (or nothing): a text block says so, since hosts that hand the model
         * text only (Chat Completions tool messages; the OpenAI Agents SDK there replaces such a
         * result by "[tool output omitted]") would otherwise tell it nothing happened. */
        char *t = plots == 0 ? xstrdup("(no output)")
                     : plots == json_array_size(json_object_get(doc, "files"))
                         ? xasprintf("(no text output; %zu plot%s as %s)", plots, plots == 1 ? "" : "s",
                                     plots == 1 ? "a PNG image" : "PNG images")
                         : xasprintf("(no text output; %zu image%s)", plots, plots == 1 ? "" : "s");
        json_array_append_new(content, text_block(t));
        free(t);
    }
    return json_pack("{s:o, s:O, s:b}", "content", content, "structuredContent", doc, "isError", is_error);
}

/* ---- execute_code ---------------------------------------------------------------------- */

static json_t *progress_message(json_t *item)
{
    const char *type = json_string_value(json_object_get(item, "type"));
    if (type == NULL)
        return NULL;
    if (strcmp(type, "stream") == 0 || strcmp(type, "result") == 0)
        return json_incref(json_object_get(item, "text"));
    if (strcmp(type, "display") == 0) {
        const char *mime = json_string_value(json_object_get(item, "mime"));
        char *t = xasprintf("[display: %s]", mime ? mime : "?");
        json_t *s = json_string(t);
        free(t);
        return s;
    }
    if (strcmp(type, "error") == 0) {
        const char *n = json_string_value(json_object_get(item, "ename"));
        const char *v = json_string_value(json_object_get(item, "evalue"));
        char *t = xasprintf("%s: %s", n ? n : "Error", v ? v : "");
        json_t *s = json_string(t);
        free(t);
        return s;
    }
    return NULL;
}

static void on_exec_event(void *data, const char *event, json_t *payload)
{
    mcp_call *call = data;
    if (strcmp(event, "done") == 0) {
        call->watch = NULL;
        json_t *res = execution_tool_result(call, payload);
        mcp__tool_finish(call, res);
        return;
    }
    if (strcmp(event, "output") == 0 && call->progress_token != NULL && !call->cancelled) {
        json_t *msg = progress_message(payload);
        if (msg == NULL || !json_is_string(msg)) {
            json_decref(msg);
            return;
        }
        call->progress += 1;
        mcp__call_notify(call, json_pack("{s:s, s:s, s:{s:O, s:f, s:o}}", "jsonrpc", "2.0", "method",
                                         "notifications/progress", "params", "progressToken", call->progress_token,
                                         "progress", call->progress, "message", msg));
    } else if (strcmp(event, "status") == 0) {
        const char *st = json_string_value(json_object_get(payload, "status"));
        if (st != NULL && strcmp(st, "running") == 0)
            mcp__call_log(call, 0, "execution %s is running", call->exec_id);
    }
}

static void execute_in(mcp_call *call, const char *session_id)
{
    char err[RB_ERR_LEN];
    json_t *req = json_pack("{s:s, s:O}", "session_id", session_id, "code", json_object_get(call->args, "code"));
    if (call->timeout != NULL)
        json_object_set(req, "timeout", call->timeout);
    if (call->language[0] != '\0')
        json_object_set_new(req, "language", json_string(call->language));
    /* a context of the session, or a language's default context, and variables for this call alone
     * (core/contexts.c checks both) */
    json_t *context = json_object_get(call->args, "context"), *env = json_object_get(call->args, "env");
    if (context != NULL && !json_is_null(context))
        json_object_set(req, "context", context);
    if (env != NULL && !json_is_null(env))
        json_object_set(req, "env", env);
    json_t *disabled = json_object_get(call->args, "disabled_rules"); /* checked by core (code policy) */
    if (disabled != NULL && !json_is_null(disabled))
        json_object_set(req, "disabled_rules", disabled);
    json_t *out = NULL;
    rb_err e = core_execute(call->ms->core, call->rt->who, req, &out, err);
    json_decref(req);
    if (e != RB_OK) {
        json_t *res = mcp__tool_core_error(e, err);
        mcp__tool_finish(call, res);
        return;
    }
    const char *rid = json_string_value(json_object_get(out, "request_id"));
    snprintf(call->exec_id, sizeof(call->exec_id), "%s", rid ? rid : "");
    json_decref(out);
    mcp__call_log(call, 1, "execution %s queued in session %s", call->exec_id, session_id);
    e = core_watch_start(call->ms->core, call->rt->who, call->exec_id, 1, on_exec_event, call, &call->watch, err);
    if (e != RB_OK) {
        call->watch = NULL;
        json_t *res = mcp__tool_core_error(e, err);
        mcp__tool_finish(call, res);
    }
}

/* ---- session-bound tools --------------------------------------------------------------- */

void mcp__session_ready(mcp_call *call, const char *session_id)
{
    if (strcmp(call->tool, "execute_code") == 0)
        execute_in(call, session_id);
    else if (strcmp(call->tool, "list_mounts") == 0)
        mcp__mounts_start(call, session_id);
    else
        mcp__files_start(call, session_id);
}

/* mcp_sessions_bound_sandbox's answer: this connection's sandbox is ready (or could not start). */
static void on_bound(void *data, rb_err e, const char *msg, json_t *body)
{
    mcp_call *call = data;
    call->op = NULL;
    if (e != RB_OK) {
        json_t *res = mcp__tool_core_error(e, msg);
        mcp__tool_finish(call, res);
        return;
    }
    call->replaced = json_is_true(json_object_get(body, "replaced"));
    if (call->replaced)
        mcp__call_log(call, 3, "the earlier sandbox of this MCP session had ended; a new one was started");
    const char *sid = json_string_value(json_object_get(body, "session_id"));
    char id[MCP_SESSIONS_ID_LEN];
    snprintf(id, sizeof(id), "%s", sid ? sid : "");
    json_decref(body);
    if (call->cancelled) {
        mcp__call_finish(call, mcp__rpc_error(call->id, MCP_ERR_CANCELLED, "the request was cancelled", NULL));
        return;
    }
    mcp__session_ready(call, id);
}

json_t *mcp__with_session(mcp_call *call, const char *language)
{
    char err[RB_ERR_LEN];
    json_t *sid = json_object_get(call->args, "session_id");
    if (sid != NULL && !json_is_null(sid) && !(json_is_string(sid) && json_string_length(sid) == 0)) {
        if (!json_is_string(sid))
            return mcp__tool_error("'session_id' must be a string from create_session or list_sessions");
        mcp__session_ready(call, json_string_value(sid));
        return NULL;
    }
    if (call->rt->modern)
        return mcp__modern_without_session(call, language);
    char bound[MCP_SESSIONS_ID_LEN];
    json_t *mounts = strcmp(call->tool, "execute_code") == 0 ? json_object_get(call->args, "mounts") : NULL;
    rb_err e = mcp_sessions_bound_sandbox(call->ms->cm, call->rt->who, call->rt->id, language, mounts, bound, on_bound,
                                          call, &call->op, err);
    if (e != RB_OK) {
        call->op = NULL;
        return mcp__tool_core_error(e, err);
    }
    if (bound[0] != '\0') {
        mcp__session_ready(call, bound);
    } else {
        mcp__call_log(call, 1, "starting a %s sandbox for this MCP session", language);
    }
    return NULL;
}

/* execute_code checks its arguments, then runs like every session-bound tool. */
static json_t *tool_execute(mcp_call *call)
{
    json_t *args = call->args;
    json_t *code = json_object_get(args, "code");
    if (!json_is_string(code))
        return mcp__tool_error("'code' is required and must be a string of source code in the session's language");
    json_t *lang = json_object_get(args, "language");
    if (lang != NULL && !json_is_null(lang)) {
        const char *l = json_string_value(lang);
        if (!core_language_known(l))
            return mcp__tool_error("'language' must be " CORE_LANGUAGES_TEXT);
        snprintf(call->language, sizeof(call->language), "%s", l);
    }
    json_t *t = json_object_get(args, "timeout");
    if (t != NULL && !json_is_null(t)) {
        if (!json_is_number(t) || !(json_number_value(t) > 0))
            return mcp__tool_error("'timeout' must be a number of seconds greater than 0");
        call->timeout = json_incref(t);
    }
    json_t *mounts = json_object_get(args, "mounts"), *sid = json_object_get(args, "session_id");
    if (mounts != NULL && !json_is_null(mounts)) { /* checked by core when the sandbox is made */
        if (!json_is_array(mounts))
            return mcp__tool_error("'mounts' must be an array of {\"share\": NAME} or {\"volume\": NAME} items");
        if (json_is_string(sid) && json_string_length(sid) > 0)
            return mcp__tool_error("'mounts' apply to a sandbox this call starts: omit session_id, or give the "
                                   "mounts to create_session (execution_options.mounts)");
    }
    return mcp__with_session(call, call->language[0] ? call->language : "python");
}

/* ---- the other tools ------------------------------------------------------------------- */

static void on_session_created(void *data, rb_err e, const char *msg, json_t *body)
{
    mcp_call *call = data;
    call->op = NULL;
    json_t *res = e == RB_OK ? mcp__tool_object(body) : mcp__tool_core_error(e, msg);
    json_decref(body);
    mcp__tool_finish(call, res);
}

static const char *arg_session_id(json_t *args)
{
    const char *sid = json_string_value(json_object_get(args, "session_id"));
    return sid != NULL && sid[0] != '\0' ? sid : NULL;
}

/* Runs a tool; returns the tool result now, or NULL when the call answers later. */
json_t *mcp__run_tool(mcp_call *call)
{
    char err[RB_ERR_LEN];
    rb_core *core = call->ms->core;
    json_t *out = NULL;
    rb_err e;
    const char *t = call->tool;
    if (strcmp(t, "execute_code") == 0)
        return tool_execute(call);
    if (strcmp(t, "upload_file") == 0 || strcmp(t, "download_file") == 0 || strcmp(t, "list_files") == 0 ||
        strcmp(t, "get_packages") == 0 || strcmp(t, "install_dependencies") == 0)
        return mcp__tool_files(call);
    if (strcmp(t, "get_page_text") == 0)
        return mcp__tool_page_text(call);
    if (strcmp(t, "list_mounts") == 0)
        return mcp__tool_mounts(call);
    if (strcmp(t, "pause_session") == 0 || strcmp(t, "resume_session") == 0 || strcmp(t, "fork_session") == 0)
        return mcp__tool_pause(call);
    if (strcmp(t, "create_session") == 0) {
        json_t *opts = json_object();
        json_t *v;
        if ((v = json_object_get(call->args, "language")) != NULL && !json_is_null(v))
            json_object_set(opts, "language", v);
        if ((v = json_object_get(call->args, "execution_options")) != NULL && !json_is_null(v))
            json_object_set(opts, "execution_options", v);
        if ((v = json_object_get(call->args, "dependencies")) != NULL && !json_is_null(v))
            json_object_set(opts, "dependencies", v);
        e = core_session_create(core, call->rt->who, opts, on_session_created, call, &call->op, err);
        json_decref(opts);
        if (e != RB_OK) {
            call->op = NULL;
            return mcp__tool_core_error(e, err);
        }
        mcp__call_log(call, 1, "starting a sandbox");
        return NULL;
    }
    if (strcmp(t, "list_sessions") == 0) {
        e = core_session_list(core, call->rt->who, &out, err);
    } else if (strcmp(t, "get_health") == 0) {
        out = core_health(core);
        e = out != NULL ? RB_OK : rb_fail(RB_EINTERNAL, err, "health is not available");
    } else {
        const char *sid = arg_session_id(call->args);
        if (sid == NULL)
            return mcp__tool_error("'session_id' is required (a string from create_session or list_sessions)");
        if (strcmp(t, "get_session_info") == 0)
            e = core_session_get(core, call->rt->who, sid, &out, err);
        else
            e = core_session_delete(core, call->rt->who, sid, &out, err);
    }
    json_t *res = e == RB_OK ? mcp__tool_object(out) : mcp__tool_core_error(e, err);
    json_decref(out);
    return res;
}

/* ---- tool definitions ------------------------------------------------------------------ */

#define SESSION_SCHEMA                                                                                              \
    "{\"type\":\"object\",\"properties\":{"                                                                         \
    "\"session_id\":{\"type\":\"string\"},\"language\":{\"type\":\"string\"},\"status\":{\"type\":\"string\"},"     \
    "\"created_at\":{\"type\":\"string\"},\"last_used_at\":{\"type\":\"string\"},"                                  \
    "\"expires_at\":{\"type\":[\"string\",\"null\"]},\"ended_at\":{\"type\":[\"string\",\"null\"]},"                 \
    "\"execution_options\":{\"type\":\"object\"},\"executions\":{\"type\":\"integer\"},"                             \
    "\"container_id\":{\"type\":[\"string\",\"null\"]}},\"required\":[\"session_id\",\"status\"]}"

#define RESULT_SCHEMA                                                                                               \
    "{\"type\":\"object\",\"properties\":{"                                                                         \
    "\"request_id\":{\"type\":\"string\"},\"session_id\":{\"type\":\"string\"},"                                    \
    "\"status\":{\"type\":\"string\",\"enum\":[\"queued\",\"running\",\"completed\",\"error\",\"timeout\","          \
    "\"cancelled\"]},"                                                                                              \
    "\"created_at\":{\"type\":\"string\"},\"started_at\":{\"type\":[\"string\",\"null\"]},"                          \
    "\"completed_at\":{\"type\":[\"string\",\"null\"]},"                                                            \
    "\"outputs\":{\"type\":\"array\",\"items\":{\"type\":\"object\"}},"                                             \
    "\"stdout\":{\"type\":\"string\"},\"stderr\":{\"type\":\"string\"},"                                            \
    "\"result\":{\"type\":[\"string\",\"null\"]},\"error\":{\"type\":[\"object\",\"null\"]},"                        \
    "\"files\":{\"type\":\"array\",\"items\":{\"type\":\"string\"}},"                                               \
    "\"duration_ms\":{\"type\":[\"integer\",\"null\"]},\"truncated\":{\"type\":\"boolean\"},"                        \
    "\"dropped_bytes\":{\"type\":\"integer\"},\"reset\":{\"type\":\"boolean\"},"                                    \
    "\"reset_reason\":{\"type\":[\"string\",\"null\"]},"                                                            \
    "\"output\":{\"type\":\"array\",\"items\":{\"type\":\"object\"}}},"                                             \
    "\"required\":[\"request_id\",\"session_id\",\"status\",\"stdout\",\"stderr\"]}"

#define SESSION_ID_ARG                                                                                              \
    "{\"type\":\"object\",\"properties\":{\"session_id\":{\"type\":\"string\",\"description\":\"The session's id "   \
    "(s_ followed by 32 hex digits), from create_session or list_sessions\"}},\"required\":[\"session_id\"]}"

static const char *const tool_defs[] = {
    "{\"name\":\"execute_code\",\"title\":\"Execute code\","
    "\"description\":\"Run Python (default), bash, JavaScript or TypeScript code in a persistent sandbox, like a "
    "Jupyter cell: variables, "
    "imports, files and the working directory persist between calls. Returns stdout, stderr, the value of the last "
    "expression, the traceback of an error, and matplotlib plots as images. Without session_id the code runs in a "
    "private sandbox of this MCP connection, created on first use and kept until the connection ends; pass a "
    "session_id from create_session to use a specific session (also shared with the REST API). The sandbox has no "
    "network access. Long outputs are truncated. A timeout interrupts the code (state is kept).\","
    "\"inputSchema\":{\"type\":\"object\",\"properties\":{"
    "\"code\":{\"type\":\"string\",\"description\":\"The source code to run. In Python, JavaScript and "
    "TypeScript the value of a final expression is returned as the result (top-level await works in "
    "JavaScript/TypeScript).\"},"
    "\"language\":{\"type\":\"string\",\"enum\":[\"python\",\"bash\",\"javascript\",\"typescript\"],\"default\":\"python\","
    "\"description\":\"python, bash, javascript or typescript (Node.js). With session_id: that language's default "
    "context in the session (its own interpreter, started when first used; files are shared); without: this "
    "connection's sandbox of that language\"},"
    "\"context\":{\"type\":\"string\",\"description\":\"With session_id: the context to run in (an id from POST "
    "/sessions/{id}/contexts, or a language's name for its default context)\"},"
    "\"env\":{\"type\":\"object\",\"additionalProperties\":{\"type\":\"string\"},\"description\":\"Environment "
    "variables for this call only (names of letters, digits and _)\"},"
    "\"session_id\":{\"type\":\"string\",\"description\":\"Optional session to run in (from create_session or "
    "list_sessions); omit to use this connection's own sandbox\"},"
    "\"timeout\":{\"type\":\"number\",\"exclusiveMinimum\":0,\"description\":\"Seconds before the code is "
    "interrupted (default: the session's timeout)\"},"
    "\"disabled_rules\":{\"type\":\"array\",\"items\":{\"type\":\"string\"},\"description\":\"Code policy "
    "rules to turn off for this call (e.g. [\\\"import:os\\\"], or [\\\"all\\\"]), when the server's optional code "
    "policy refused the code with PolicyViolation and the operator lets callers turn that rule off\"},"
    "\"mounts\":{\"type\":\"array\",\"items\":{\"type\":\"object\"},\"description\":\"Without session_id: "
    "folders to mount into the sandbox this call starts, under /workspace: shared folders of the user's machine "
    "([{\\\"share\\\": \\\"photos\\\"}], see list_mounts) or the user's volumes ([{\\\"volume\\\": \\\"data\\\"}]), "
    "each with an optional path and readonly. A sandbox that exists already keeps the mounts it was made with\"}},"
    "\"required\":[\"code\"]},"
    "\"outputSchema\":" RESULT_SCHEMA ","
    "\"annotations\":{\"title\":\"Execute code\",\"readOnlyHint\":false,\"destructiveHint\":false,"
    "\"idempotentHint\":false,\"openWorldHint\":false}}",
    "{\"name\":\"create_session\",\"title\":\"Create session\","
    "\"description\":\"Create a new persistent sandbox session and return it (with its session_id). Use it to "
    "keep several independent interpreters, to choose limits or to preinstall Python packages (dependencies); "
    "pass the session_id to execute_code and the file tools.\","
    "\"inputSchema\":{\"type\":\"object\",\"properties\":{"
    "\"language\":{\"type\":\"string\",\"enum\":[\"python\",\"bash\",\"javascript\",\"typescript\"],\"default\":\"python\"},"
    "\"execution_options\":{\"type\":\"object\",\"description\":\"Optional limits\",\"properties\":{"
    "\"timeout\":{\"type\":\"number\",\"description\":\"default seconds per execution\"},"
    "\"memory_limit\":{\"type\":\"string\",\"description\":\"e.g. 512m or 1g\"},"
    "\"cpu_limit\":{\"type\":\"number\",\"description\":\"CPUs, e.g. 1 or 0.5\"},"
    "\"environment_variables\":{\"type\":\"object\",\"additionalProperties\":{\"type\":\"string\"}},"
    "\"network\":{\"description\":\"false (default: no network), true (the server's default list of hosts, e.g. "
    "the package indexes) or {\\\"allow\\\": [\\\"pypi.org\\\", \\\"*.example.com\\\"], \\\"deny\\\": [...]}: HTTP and "
    "HTTPS to those hosts only, through a proxy, when the operator allows networks; \\\"secrets\\\": [names] "
    "adds the operator's secrets of those names to requests to their hosts (the code sees placeholders)\"},"
    "\"isolation\":{\"type\":\"string\",\"enum\":[\"container\",\"gvisor\"],\"description\":\"the sandbox's "
    "kernel boundary: container (runc) or gvisor (a user-space kernel between the code and the host's), where the "
    "server offers it; default: the server's or the key's\"}}},"
    "\"dependencies\":{\"type\":\"array\",\"items\":{\"type\":\"string\"},\"description\":\"packages "
    "to install before the session is ready: pip requirements for python, e.g. [\\\"requests==2.32.3\\\"], npm "
    "packages for javascript and typescript, e.g. [\\\"left-pad@1.3.0\\\"]\"}}},"
    "\"outputSchema\":" SESSION_SCHEMA "}",
    "{\"name\":\"list_sessions\",\"title\":\"List sessions\","
    "\"description\":\"List the live sandbox sessions (id, language, status, times, execution count).\","
    "\"inputSchema\":{\"type\":\"object\",\"properties\":{}},"
    "\"outputSchema\":{\"type\":\"object\",\"properties\":{\"sessions\":{\"type\":\"array\",\"items\":" SESSION_SCHEMA
    "}},\"required\":[\"sessions\"]},"
    "\"annotations\":{\"readOnlyHint\":true}}",
    "{\"name\":\"get_session_info\",\"title\":\"Get session info\","
    "\"description\":\"Describe one session: status (starting, ready, busy, ended, dead), language, limits, "
    "times and number of executions.\","
    "\"inputSchema\":" SESSION_ID_ARG ",\"outputSchema\":" SESSION_SCHEMA ",\"annotations\":{\"readOnlyHint\":true}}",
    "{\"name\":\"close_session\",\"title\":\"Close session\","
    "\"description\":\"End a session: stops running code and removes its sandbox; its variables are lost.\","
    "\"inputSchema\":" SESSION_ID_ARG ",\"outputSchema\":" SESSION_SCHEMA ","
    "\"annotations\":{\"destructiveHint\":true}}",
    "{\"name\":\"get_health\",\"title\":\"Server health\","
    "\"description\":\"Report whether the code-execution server and its Docker engine are working, with counts of "
    "sessions and executions.\","
    "\"inputSchema\":{\"type\":\"object\",\"properties\":{}},"
    "\"outputSchema\":{\"type\":\"object\",\"properties\":{\"status\":{\"type\":\"string\"},\"version\":{\"type\":"
    "\"string\"},\"docker\":{\"type\":\"object\"},\"sessions\":{\"type\":\"object\"},\"executions\":{\"type\":"
    "\"object\"}},\"required\":[\"status\"]},\"annotations\":{\"readOnlyHint\":true}}",
    "{\"name\":\"upload_file\",\"title\":\"Upload file\","
    "\"description\":\"Write a file into a sandbox's /workspace, the working directory of execute_code, so that code "
    "can open it (e.g. pd.read_csv('data.csv')). filename is a path relative to /workspace (folders are created) or "
    "an absolute path under /workspace; '..' and paths outside /workspace are refused. Give the bytes as "
    "content_base64 (standard base64), or a text file's text as content. An existing file is replaced. Without "
    "session_id the file goes to this connection's own sandbox (the one execute_code uses without session_id). "
    "Requests are limited in size (1 MiB by default), so send large files over the REST API instead.\","
    "\"inputSchema\":{\"type\":\"object\",\"properties\":{"
    "\"session_id\":{\"type\":\"string\",\"description\":\"Session to write into (from create_session or "
    "list_sessions); omit for this connection's own sandbox\"},"
    "\"filename\":{\"type\":\"string\",\"description\":\"Path under /workspace, e.g. data.csv or input/photo.png\"},"
    "\"content_base64\":{\"type\":\"string\",\"contentEncoding\":\"base64\",\"description\":\"The file's bytes in "
    "base64\"},"
    "\"content\":{\"type\":\"string\",\"description\":\"Instead of content_base64 for text files: the text itself "
    "(written as UTF-8)\"}},\"required\":[\"filename\"]},"
    "\"outputSchema\":{\"type\":\"object\",\"properties\":{\"session_id\":{\"type\":\"string\"},\"path\":{\"type\":"
    "\"string\",\"description\":\"relative to /workspace\"},\"size\":{\"type\":\"integer\"},\"modified\":{\"type\":"
    "\"string\"},\"uri\":{\"type\":\"string\",\"description\":\"the file as an MCP resource\"}},"
    "\"required\":[\"session_id\",\"path\",\"size\"]},"
    "\"annotations\":{\"readOnlyHint\":false,\"destructiveHint\":true,\"idempotentHint\":true,"
    "\"openWorldHint\":false}}",
    "{\"name\":\"download_file\",\"title\":\"Download file\","
    "\"description\":\"Read a file from a sandbox's /workspace, such as a CSV or a plot that code saved. A UTF-8 text "
    "file up to 256 KiB comes back as text; an image (PNG, JPEG, GIF, WebP) as image content; anything else as an "
    "embedded resource holding the bytes in base64, with its MIME type. Files over 8 MiB are refused: read a part "
    "with execute_code instead. src_path is relative to /workspace or absolute under it. Without session_id it reads "
    "from this connection's own sandbox.\","
    "\"inputSchema\":{\"type\":\"object\",\"properties\":{"
    "\"session_id\":{\"type\":\"string\",\"description\":\"Session to read from; omit for this connection's own "
    "sandbox\"},"
    "\"src_path\":{\"type\":\"string\",\"description\":\"Path under /workspace, e.g. results.csv or out/plot.png\"}},"
    "\"required\":[\"src_path\"]},"
    "\"outputSchema\":{\"type\":\"object\",\"properties\":{\"session_id\":{\"type\":\"string\"},\"path\":{\"type\":"
    "\"string\"},\"name\":{\"type\":\"string\"},\"mime_type\":{\"type\":\"string\"},\"size\":{\"type\":\"integer\"},"
    "\"encoding\":{\"type\":\"string\",\"enum\":[\"utf-8\",\"base64\"],\"description\":\"how the content block "
    "carries the bytes\"},\"uri\":{\"type\":\"string\"}},\"required\":[\"session_id\",\"path\",\"mime_type\","
    "\"size\"]},"
    "\"annotations\":{\"readOnlyHint\":true,\"openWorldHint\":false}}",
    "{\"name\":\"list_files\",\"title\":\"List files\","
    "\"description\":\"List everything under a sandbox's /workspace, recursively: path (relative to /workspace), "
    "type (file, directory, symlink), size in bytes and modification time. Files that code wrote (saved plots, CSVs) "
    "appear here. A name that is not UTF-8 text, or holds a control character or a backslash, has those bytes "
    "written as \\\\xhh (bad\\\\xff.bin): pass the path back exactly as listed. Without session_id it lists this "
    "connection's own sandbox.\","
    "\"inputSchema\":{\"type\":\"object\",\"properties\":{\"session_id\":{\"type\":\"string\",\"description\":"
    "\"Session to list; omit for this connection's own sandbox\"}}},"
    "\"outputSchema\":{\"type\":\"object\",\"properties\":{\"session_id\":{\"type\":\"string\"},\"files\":{\"type\":"
    "\"array\",\"items\":{\"type\":\"object\",\"properties\":{\"path\":{\"type\":\"string\"},\"type\":{\"type\":"
    "\"string\"},\"size\":{\"type\":\"integer\"},\"modified\":{\"type\":\"string\"},\"uri\":{\"type\":\"string\"}},"
    "\"required\":[\"path\"]}},\"truncated\":{\"type\":\"boolean\"}},\"required\":[\"session_id\",\"files\"]},"
    "\"annotations\":{\"readOnlyHint\":true,\"openWorldHint\":false}}",
    "{\"name\":\"get_packages\",\"title\":\"List preinstalled packages\","
    "\"description\":\"List the Python packages (packages: name, version and the modules to import) and Node "
    "modules (node_modules, for javascript and typescript sessions) preinstalled in the sandbox image, so you know "
    "what can be imported or required without installing anything.\","
    "\"inputSchema\":{\"type\":\"object\",\"properties\":{}},"
    "\"outputSchema\":{\"type\":\"object\",\"properties\":{\"image\":{\"type\":\"string\"},\"image_id\":{\"type\":"
    "\"string\"},\"packages\":{\"type\":\"array\",\"items\":{\"type\":\"object\",\"properties\":{\"name\":{\"type\":"
    "\"string\"},\"version\":{\"type\":\"string\"},\"modules\":{\"type\":\"array\",\"items\":{\"type\":"
    "\"string\"},\"description\":\"the names to import, e.g. sklearn for scikit-learn\"}},\"required\":[\"name\"]}},"
    "\"node\":{\"type\":[\"string\",\"null\"]},\"node_modules\":{\"type\":\"array\",\"items\":{\"type\":\"object\","
    "\"properties\":{\"name\":{\"type\":\"string\"},\"version\":{\"type\":\"string\"}},\"required\":[\"name\"]}}},"
    "\"required\":[\"packages\"]},"
    "\"annotations\":{\"readOnlyHint\":true,\"openWorldHint\":false}}",
    "{\"name\":\"install_dependencies\",\"title\":\"Install Python packages\","
    "\"description\":\"Install Python packages with pip into a python session, e.g. [\\\"requests\\\", "
    "\\\"tabulate==0.9.0\\\"]; they can be imported right after. Each item is a package name with at most one "
    "version specifier (==, >=, <=, ~=, !=, >, <); no URLs, options or extras. Into a javascript or typescript "
    "session (its session_id) it installs npm packages instead, e.g. [\\\"left-pad@1.3.0\\\", \\\"lodash@^4.17\\\"] "
    "(a name with an optional @version, @range or @tag), which require() finds right after. The server's policy may "
    "forbid some "
    "packages (the error names the package and the rule). Code in the sandbox still has no network. Without "
    "session_id it installs into this connection's own sandbox. Call get_packages first: many packages are already "
    "there (a requirement the image already satisfies installs nothing; the answer says so).\","
    "\"inputSchema\":{\"type\":\"object\",\"properties\":{"
    "\"session_id\":{\"type\":\"string\",\"description\":\"session to install into (python: pip; javascript or "
    "typescript: npm); omit for this connection's own python sandbox\"},"
    "\"dependencies\":{\"type\":\"array\",\"minItems\":1,\"items\":{\"type\":\"string\"},\"description\":\"pip "
    "requirements such as requests or pandas>=2.0 (npm packages such as lodash@^4.17 for a javascript or typescript "
    "session)\"}},\"required\":[\"dependencies\"]},"
    "\"outputSchema\":{\"type\":\"object\",\"properties\":{\"session_id\":{\"type\":\"string\"},\"dependencies\":{"
    "\"type\":\"array\",\"items\":{\"type\":\"string\"}},\"cached\":{\"type\":\"boolean\",\"description\":\"served "
    "from the server's cache without network\"},\"site_packages\":{\"type\":\"string\"},"
    "\"node_modules\":{\"type\":\"string\"},\"duration_ms\":{\"type\":"
    "\"integer\"},\"already_satisfied\":{\"type\":\"array\",\"items\":{\"type\":\"string\"},\"description\":"
    "\"requirements the sandbox image already satisfies, as name==version (nothing installed for them)\"},"
    "\"message\":{\"type\":\"string\"}},\"required\":[\"session_id\",\"dependencies\"]},"
    "\"annotations\":{\"readOnlyHint\":false,\"destructiveHint\":false,\"idempotentHint\":true,"
    "\"openWorldHint\":true}}",
};

const char mcp__instructions[] =
    "runbox runs code in persistent sandboxes. Call execute_code with Python code; variables and imports persist "
    "between calls in this connection's sandbox. Print values or end with an expression to see them; plots made "
    "with matplotlib come back as images. Use create_session/close_session to manage separate sessions. Move files in "
    "and out of the sandbox's /workspace with upload_file, list_files and download_file; get_packages lists what is "
    "installed and install_dependencies adds Python (or, in a javascript or typescript session, npm) "
    "packages.";

rb_err mcp__defs_load(const char *const *defs, size_t n, const char *what, json_t **out, char *err)
{
    json_error_t jerr;
    json_t *tools = json_array();
    for (size_t i = 0; i < n; i++) {
        json_t *t = json_loads(defs[i], 0, &jerr);
        if (t == NULL) {
            json_decref(tools);
            return rb_fail(RB_EINTERNAL, err, "mcp: %s definition %zu is not valid JSON: %s (column %d)", what, i,
                           jerr.text, jerr.column);
        }
        json_array_append_new(tools, t);
    }
    *out = tools;
    return RB_OK;
}

rb_err mcp__tools_load(json_t **out, char *err)
{
    return mcp__defs_load(tool_defs, sizeof(tool_defs) / sizeof(tool_defs[0]), "tool", out, err);
}

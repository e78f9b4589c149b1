/*
 * mcp_rpc.c: the JSON-RPC layer of MCP (server/mcp/mcp_internal.h): dispatching the methods of a
 * live session (ping, tools/..., resources/..., logging/setLevel) and client notifications
 * (cancellation), and reading the session and execution resources. Responses are built and
 * messages validated by mcp_wire.c, tools run in mcp_tools.c, file resources in mcp_files.c;
 * nothing here touches HTTP.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/mcp/mcp_internal.h"

/* ---- resources ------------------------------------------------------------------------- */

json_t *mcp__resource_text(const char *uri, json_t *obj)
{
    char *text = json_dumps(obj, JSON_INDENT(2));
    json_t *r = json_pack("{s:[{s:s, s:s, s:s}]}", "contents", "uri", uri, "mimeType", "application/json", "text",
                          text ? text : "null");
    free(text);
    return r;
}

/* resources/read; returns the result or NULL with *error set (a JSON-RPC error object). */
static json_t *read_resource(mcp_rt *rt, const char *uri, json_t **error)
{
    char err[RB_ERR_LEN];
    json_t *out = NULL, *res = NULL;
    rb_err e = RB_ENOTFOUND;
    const char *sid = NULL;
    if (strcmp(uri, "runbox://sessions") == 0 || strcmp(uri, "runbox://sessions/") == 0 ||
        strcmp(uri, "sessions://") == 0 || strcmp(uri, "sessions://list") == 0) {
        e = core_session_list(rt->ms->core, rt->who, &out, err);
    } else if (strncmp(uri, "runbox://sessions/", 18) == 0) {
        sid = uri + 18;
    } else if (strncmp(uri, "session://", 10) == 0) {
        sid = uri + 10;
    } else if (strncmp(uri, "runbox://executions/", 20) == 0) {
        const char *p = uri + 20, *slash = strchr(p, '/');
        if (slash != NULL && strncmp(slash, "/files/", 7) == 0 && slash - p < MCP_SESSIONS_ID_LEN) {
            char rid[MCP_SESSIONS_ID_LEN];
            snprintf(rid, sizeof(rid), "%.*s", (int)(slash - p), p);
            char *end;
            unsigned long idx = strtoul(slash + 7, &end, 10);
            if (*end == '\0' && slash[7] != '\0' && core_execution_results(rt->ms->core, rt->who, rid, &out, err) == RB_OK) {
                json_t *png = json_array_get(json_object_get(out, "files"), idx);
                if (json_is_string(png))
                    res = json_pack("{s:[{s:s, s:s, s:O}]}", "contents", "uri", uri, "mimeType", "image/png", "blob",
                                    png);
                json_decref(out);
                out = NULL;
            }
        }
        e = res != NULL ? RB_OK : RB_ENOTFOUND;
    }
    if (sid != NULL) {
        while (*sid == '/')
            sid++;
        e = core_session_get(rt->ms->core, rt->who, sid, &out, err);
    }
    if (res == NULL && e == RB_OK)
        res = mcp__resource_text(uri, out);
    json_decref(out);
    if (res == NULL)
        *error = json_pack("{s:i, s:s, s:{s:s}}", "code", MCP_ERR_RESOURCE, "message", "Resource not found", "data",
                           "uri", uri);
    return res;
}

static const char resources_json[] =
    "{\"resources\":["
    "{\"uri\":\"runbox://sessions\",\"name\":\"sessions\",\"title\":\"Live sandbox sessions\","
    "\"description\":\"JSON list of the live code-execution sessions (same as GET /sessions)\","
    "\"mimeType\":\"application/json\"},"
    "{\"uri\":\"sessions://\",\"name\":\"sessions-compat\",\"title\":\"Live sandbox sessions (CodeBox-AI name)\","
    "\"description\":\"Same as runbox://sessions\",\"mimeType\":\"application/json\"}]}";

static const char templates_json[] =
    "{\"resourceTemplates\":["
    "{\"uriTemplate\":\"runbox://sessions/{session_id}\",\"name\":\"session\",\"title\":\"One sandbox session\","
    "\"description\":\"JSON description of one session (status, options, execution count)\","
    "\"mimeType\":\"application/json\"},"
    "{\"uriTemplate\":\"session://{session_id}\",\"name\":\"session-compat\",\"title\":\"One sandbox session "
    "(CodeBox-AI name)\",\"description\":\"Same as runbox://sessions/{session_id}\",\"mimeType\":\"application/json\"},"
    "{\"uriTemplate\":\"runbox://executions/{request_id}/files/{index}\",\"name\":\"execution-image\","
    "\"title\":\"An image produced by an execution\",\"description\":\"PNG image number {index} (from 0) of an "
    "execution's display output\",\"mimeType\":\"image/png\"},"
    "{\"uriTemplate\":\"runbox://sessions/{session_id}/files/{path}\",\"name\":\"session-file\","
    "\"title\":\"A file in a session's /workspace\",\"description\":\"The bytes of a file under /workspace "
    "(path relative to it; '/' may stay unescaped): text for UTF-8 files, a base64 blob otherwise\"},"
    "{\"uriTemplate\":\"runbox://sessions/{session_id}/files\",\"name\":\"session-files\","
    "\"title\":\"The files of a session\",\"description\":\"JSON list of everything under the session's "
    "/workspace (as the list_files tool), each file with its resource URI\",\"mimeType\":\"application/json\"}]}";

/* ---- dispatch -------------------------------------------------------------------------- */

static int has_tool(json_t *tools, const char *name)
{
    size_t i;
    json_t *t;
    json_array_foreach(tools, i, t)
    {
        if (strcmp(json_string_value(json_object_get(t, "name")), name) == 0)
            return 1;
    }
    return 0;
}

/* Handles one request of a live session. Returns the response now (new reference) or NULL when
 * a call answers later (then post->outstanding counts it). */
json_t *mcp__dispatch(mcp_rt *rt, mcp_post *post, json_t *rec, json_t *id, const char *method, json_t *params)
{
    mcp_server *ms = rt->ms;
    if (strcmp(method, "ping") == 0)
        return mcp__rpc_result(id, json_object());
    if (strcmp(method, "initialize") == 0)
        return mcp__rpc_error(id, MCP_ERR_INVALID_REQUEST,
                              "initialize must be sent alone, without Mcp-Session-Id, to start a new MCP session",
                              NULL);
    if (strcmp(method, "tools/list") == 0) {
        json_t *tools = post->toolset != NULL ? post->toolset->tools : post->modern ? ms->modern_tools : ms->tools;
        json_t *r = json_pack("{s:O}", "tools", tools);
        if (post->modern) /* the same for every caller until runboxd is upgraded (2026-07-28 caching) */
            mcp__cacheable(r, MCP_LIST_TTL_MS, "public");
        return mcp__rpc_result(id, r);
    }
    if (strcmp(method, "resources/list") == 0 || strcmp(method, "resources/templates/list") == 0) {
        const char *text = strcmp(method, "resources/list") == 0 ? resources_json : templates_json;
        json_t *r = json_loads(text, 0, NULL);
        if (post->modern)
            mcp__cacheable(r, MCP_LIST_TTL_MS, "public");
        return mcp__rpc_result(id, r);
    }
    if (strcmp(method, "resources/read") == 0) {
        const char *uri = json_string_value(json_object_get(params, "uri"));
        if (uri == NULL)
            return mcp__rpc_error(id, MCP_ERR_PARAMS, "resources/read needs params.uri (a string)", NULL);
        if (mcp__is_file_uri(uri))
            return mcp__read_file_resource(rt, post, id, uri);
        json_t *error = NULL;
        json_t *res = read_resource(rt, uri, &error);
        if (res == NULL)
            return json_pack("{s:s, s:O, s:o}", "jsonrpc", "2.0", "id", id, "error", error);
        return mcp__rpc_result(id, res);
    }
    if (strcmp(method, "logging/setLevel") == 0) {
        const char *level = json_string_value(json_object_get(params, "level"));
        size_t i = 0;
        while (level != NULL && i < MCP_NLEVELS && strcmp(mcp__levels[i], level) != 0)
            i++;
        if (level == NULL || i == MCP_NLEVELS)
            return mcp__rpc_error(id, MCP_ERR_PARAMS,
                                  "params.level must be one of debug, info, notice, warning, error, critical, alert, "
                                  "emergency",
                                  NULL);
        char err[RB_ERR_LEN];
        json_t *v = json_string(level);
        rb_err e = mcp_sessions_set(ms->cm, rt->id, "log_level", v, err);
        json_decref(v);
        if (e != RB_OK)
            return mcp__rpc_error(id, MCP_ERR_INTERNAL, err, NULL);
        return mcp__rpc_result(id, json_object());
    }
    if (strcmp(method, "tools/call") == 0) {
        const char *name = json_string_value(json_object_get(params, "name"));
        json_t *args = json_object_get(params, "arguments");
        if (name == NULL)
            return mcp__rpc_error(id, MCP_ERR_PARAMS, "tools/call needs params.name (a string)", NULL);
        if (args != NULL && !json_is_null(args) && !json_is_object(args))
            return mcp__rpc_error(id, MCP_ERR_PARAMS, "tools/call: params.arguments must be an object", NULL);
        if (!has_tool(post->toolset != NULL ? post->toolset->tools : ms->tools, name)) {
            char msg[160];
            snprintf(msg, sizeof(msg), "Unknown tool: %.64s (see tools/list)", name);
            return mcp__rpc_error(id, MCP_ERR_PARAMS, msg, NULL);
        }
        mcp_call *call = mcp__call_new(rt, post, id);
        snprintf(call->tool, sizeof(call->tool), "%s", name);
        call->args = json_is_object(args) ? json_incref(args) : json_object();
        json_t *tok = json_object_get(json_object_get(params, "_meta"), "progressToken");
        if (json_is_string(tok) || json_is_integer(tok))
            call->progress_token = json_incref(tok);
        const char *lvl = json_string_value(json_object_get(rec, "log_level"));
        call->log_min = post->modern ? post->log_min : 3;
        for (size_t i = 0; lvl != NULL && i < MCP_NLEVELS; i++)
            if (strcmp(mcp__levels[i], lvl) == 0)
                call->log_min = (int)i;
        /* Without session_id, file tools use the sandbox execute_code has been using. */
        json_t *bound = json_object_get(rec, "bound");
        static const char *const order[] = {"python", "bash", "javascript", "typescript"};
        const char *bl = "python";
        for (size_t i = 0; i < sizeof(order) / sizeof(order[0]); i++)
            if (json_object_get(bound, order[i]) != NULL) {
                bl = order[i];
                break;
            }
        snprintf(call->bound_language, sizeof(call->bound_language), "%s", bl);
        post->outstanding++;
        json_t *res = post->toolset != NULL ? post->toolset->def.run(call) : mcp__run_tool(call);
        if (res != NULL) {
            mcp__call_finish(call, mcp__rpc_result_of(id, res));
            json_decref(res);
        }
        return NULL;
    }
    char msg[160];
    snprintf(msg, sizeof(msg), "Method not found: %.64s", method);
    return mcp__rpc_error(id, MCP_ERR_METHOD, msg, NULL);
}

void mcp__notification(mcp_rt *rt, const char *method, json_t *params)
{
    if (strcmp(method, "notifications/cancelled") != 0)
        return;
    json_t *rid = json_object_get(params, "requestId");
    if (rid == NULL)
        return;
    for (mcp_call *call = rt->calls; call != NULL; call = call->next) {
        if (!json_equal(call->id, rid) || call->cancelled)
            continue;
        mcp__call_cancel(call);
        return;
    }
}

void mcp__call_cancel(mcp_call *call)
{
    mcp_rt *rt = call->rt;
    if (call->cancelled)
        return;
    call->cancelled = 1;
    if (call->exec_id[0] != '\0') {
        char err[RB_ERR_LEN];
        json_t *out = NULL;
        if (core_execution_cancel(rt->ms->core, rt->who, call->exec_id, &out, err) != RB_OK)
            rb_debug("mcp %s: cancel of %s: %s", rt->modern ? "(2026-07-28)" : rt->id, call->exec_id, err);
        json_decref(out);
    } else if (call->op != NULL || call->work != NULL) {
        /* Still waiting for a sandbox: answer now; the sandbox stays for later calls. */
        mcp__call_finish(call, mcp__rpc_error(call->id, MCP_ERR_CANCELLED, "the request was cancelled", NULL));
    }
}

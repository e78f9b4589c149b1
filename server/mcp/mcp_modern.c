/*
 * mcp_modern.c: MCP 2026-07-28 (the "modern", stateless era) on the same /mcp as the
 * session-based revisions (server/mcp/mcp_internal.h). mcp.c picks the era of each POST
 * (mcp__envelope_is_modern); a modern POST is checked here (the envelope ladder of
 * mcp_envelope.c), then served without an MCP session: server/discover and subscriptions/listen
 * here, everything else by the same dispatch and tools as the legacy era, in a runtime (mcp_rt)
 * that belongs to this one POST and dies with it and its calls. What an MCP session gave the
 * legacy era (a sandbox of the connection) is a server-minted handle instead: execute_code
 * without session_id starts a session and returns its id (mcp_tools.c). Progress and log
 * messages (only at the _meta log level) go on the request's own SSE stream; closing it, or
 * notifications/cancelled for its id from the same caller, cancels the request. No event ids,
 * no replay, no Mcp-Session-Id: the revision removed them.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/mcp/mcp_internal.h"
#include "server/sse.h"

/* ---- results --------------------------------------------------------------------------- */

void mcp__cacheable(json_t *result, long ttl_ms, const char *scope)
{
    json_object_set_new(result, "ttlMs", json_integer(ttl_ms));
    json_object_set_new(result, "cacheScope", json_string(scope));
}

int mcp__modern_decorate(json_t *response)
{
    json_t *error = json_object_get(response, "error");
    if (error != NULL) {
        json_t *code = json_object_get(error, "code");
        /* 2026-07-28 answers a resource that does not exist with Invalid Params. */
        if (json_integer_value(code) == MCP_ERR_RESOURCE)
            json_object_set_new(error, "code", json_integer(MCP_ERR_PARAMS));
        return mcp__envelope_status((int)json_integer_value(json_object_get(error, "code")));
    }
    json_t *result = json_object_get(response, "result");
    if (!json_is_object(result))
        return 200;
    if (json_object_get(result, "resultType") == NULL)
        json_object_set_new(result, "resultType", json_string("complete"));
    /* resources/read: a session's state or files, per caller and changing: not to be cached. */
    if (json_is_array(json_object_get(result, "contents")) && json_object_get(result, "ttlMs") == NULL)
        mcp__cacheable(result, 0, "private");
    json_t *meta = json_object_get(result, "_meta");
    if (!json_is_object(meta)) {
        meta = json_object();
        json_object_set_new(result, "_meta", meta);
    }
    json_object_set_new(meta, MCP_META_SERVER, json_pack("{s:s, s:s}", "name", "runbox", "version", RUNBOX_VERSION));
    return 200;
}

/* ---- tool descriptions ----------------------------------------------------------------- */

#define EXECUTE_CODE_MODERN                                                                                            \
    "Run Python (default) or bash code in a persistent sandbox session, like a Jupyter cell: variables, imports, "   \
    "files and the working directory persist between calls in the same session. Returns stdout, stderr, the value "  \
    "of the last expression, the traceback of an error, and matplotlib plots as images. Without session_id a new "   \
    "session is started and its session_id is returned (in the result's text and structuredContent): pass that "     \
    "session_id on every later call to keep the variables and files (sessions are shared with the REST API), and "   \
    "call close_session when done. The sandbox has no network access. Long outputs are truncated. A timeout "        \
    "interrupts the code (state is kept)."

#define SESSION_ID_MODERN                                                                                              \
    "The session to use: the session_id that execute_code, create_session or list_sessions returned"

/* Cuts the sentence of text that starts at "Without session_id" (up to its ". "), if any. */
static json_t *without_connection_sandbox(const char *text)
{
    const char *at = strstr(text, "Without session_id");
    if (at == NULL)
        return json_string(text);
    const char *end = strstr(at, ". ");
    end = end != NULL ? end + 2 : at + strlen(at);
    char *t = xasprintf("%.*s%s session_id is required here (MCP 2026-07-28 has no connection sandbox): take it "
                        "from execute_code or create_session.",
                        (int)(at - text), text, end);
    json_t *s = json_string(t);
    free(t);
    return s;
}

json_t *mcp__modern_tools(json_t *tools)
{
    json_t *out = json_deep_copy(tools);
    size_t i;
    json_t *tool;
    json_array_foreach(out, i, tool)
    {
        const char *name = json_string_value(json_object_get(tool, "name"));
        json_t *sid = json_object_get(json_object_get(json_object_get(tool, "inputSchema"), "properties"), "session_id");
        if (sid == NULL || name == NULL)
            continue;
        json_object_set_new(sid, "description", json_string(SESSION_ID_MODERN));
        if (strcmp(name, "execute_code") == 0) {
            json_object_set_new(tool, "description", json_string(EXECUTE_CODE_MODERN));
        } else {
            const char *d = json_string_value(json_object_get(tool, "description"));
            if (d != NULL)
                json_object_set_new(tool, "description", without_connection_sandbox(d));
        }
    }
    return out;
}

/* ---- runtimes -------------------------------------------------------------------------- */

static mcp_rt *rt_new(mcp_server *ms, const core_caller *who)
{
    mcp_rt *rt = xcalloc(1, sizeof(*rt));
    rt->ms = ms;
    rt->who = who;
    rt->modern = 1;
    rt->linked = 1;
    snprintf(rt->version, sizeof(rt->version), "%s", MCP_MODERN_VERSION);
    rt->next_modern = ms->modern;
    ms->modern = rt;
    return rt;
}

void mcp__modern_unref(mcp_rt *rt)
{
    if (--rt->refs > 0)
        return;
    if (rt->linked)
        for (mcp_rt **pp = &rt->ms->modern; *pp != NULL; pp = &(*pp)->next_modern)
            if (*pp == rt) {
                *pp = rt->next_modern;
                break;
            }
    while (rt->streams != NULL) {
        mcp_stream *st = rt->streams;
        rt->streams = st->next;
        free(st);
    }
    while (rt->log_head != NULL) {
        mcp_event *e = rt->log_head;
        rt->log_head = e->next;
        free(e->text);
        free(e);
    }
    free(rt);
}

void mcp__modern_stop(mcp_server *ms)
{
    while (ms->modern != NULL) {
        mcp_rt *rt = ms->modern;
        ms->modern = rt->next_modern;
        rt->linked = 0;
        rt->refs++; /* dropping the calls must not free rt under this loop */
        while (rt->calls != NULL)
            mcp__call_drop(rt->calls);
        mcp__modern_unref(rt);
    }
}

/* notifications/cancelled: 2026-07-28 has no session to scope a request id, so the request is
 * looked up among the caller's own requests in flight. */
static void cancel_request(mcp_server *ms, const core_caller *who, json_t *params)
{
    json_t *rid = json_object_get(params, "requestId");
    if (rid == NULL)
        return;
    for (mcp_rt *rt = ms->modern; rt != NULL; rt = rt->next_modern) {
        if (rt->who != who)
            continue;
        for (mcp_call *call = rt->calls; call != NULL; call = call->next)
            if (json_equal(call->id, rid) && !call->cancelled) {
                mcp__call_cancel(call);
                return;
            }
    }
}

/* ---- session-bound tools without session_id ------------------------------------------- */

/* core_session_create's answer for a 2026-07-28 execute_code without session_id. */
static void on_new_session(void *data, rb_err e, const char *msg, json_t *body)
{
    mcp_call *call = data;
    call->op = NULL;
    if (e != RB_OK) {
        json_t *res = mcp__tool_core_error(e, msg);
        mcp__tool_finish(call, res);
        json_decref(body);
        return;
    }
    const char *sid = json_string_value(json_object_get(body, "session_id"));
    snprintf(call->session_id, sizeof(call->session_id), "%s", sid ? sid : "");
    json_decref(body);
    call->new_session = 1;
    mcp__call_log(call, 1, "started session %s for this call", call->session_id);
    if (call->cancelled) {
        mcp__call_finish(call, mcp__rpc_error(call->id, MCP_ERR_CANCELLED, "the request was cancelled", NULL));
        return;
    }
    mcp__session_ready(call, call->session_id);
}

/* A 2026-07-28 session-bound tool without session_id: there is no MCP session whose sandbox it
 * could use. execute_code starts a new session (its id goes back in the result); the file tools
 * need one named. */
json_t *mcp__modern_without_session(mcp_call *call, const char *language)
{
    char err[RB_ERR_LEN];
    if (strcmp(call->tool, "execute_code") != 0)
        return mcp__tool_error("'session_id' is required: MCP 2026-07-28 has no MCP session with a sandbox of its own; "
                               "pass the session_id that execute_code or create_session returned");
    json_t *opts = json_pack("{s:s}", "language", language), *mounts = json_object_get(call->args, "mounts");
    if (mounts != NULL && !json_is_null(mounts)) /* shares and volumes of the new sandbox */
        json_object_set_new(opts, "execution_options", json_pack("{s:O}", "mounts", mounts));
    rb_err e = core_session_create(call->ms->core, call->rt->who, opts, on_new_session, call, &call->op, err);
    json_decref(opts);
    if (e != RB_OK) {
        call->op = NULL;
        return mcp__tool_core_error(e, err);
    }
    mcp__call_log(call, 1, "starting a %s sandbox", language);
    return NULL;
}

/* ---- methods of the modern era only ---------------------------------------------------- */

static const char instructions[] =
    "runbox runs code in persistent sandbox sessions. Call execute_code with Python code; without session_id it "
    "starts a new session and returns its session_id: pass that session_id on later calls to keep variables, imports "
    "and files. Print values or end with an expression to see them; plots made with matplotlib come back as images. "
    "Move files in and out of a session's /workspace with upload_file, list_files and download_file; get_packages "
    "lists what is installed and install_dependencies adds Python (or, in a javascript or typescript session, npm) "
    "packages. Call close_session when done.";

static json_t *discover_result(json_t *id, const mcp_toolset *toolset)
{
    json_t *r = json_pack("{s:[s,s,s,s], s:{s:{s:b}, s:{s:b, s:b}, s:{}}, s:s}", "supportedVersions",
                          MCP_MODERN_VERSION, "2025-11-25", "2025-06-18", "2025-03-26", "capabilities", "tools",
                          "listChanged", 0, "resources", "listChanged", 0, "subscribe", 0, "logging", "instructions",
                          toolset != NULL ? toolset->def.instructions : instructions);
    mcp__cacheable(r, MCP_LIST_TTL_MS, "public");
    return mcp__rpc_result(id, r);
}

/* subscriptions/listen: the long-lived stream of change notifications. runboxd's tool and
 * resource lists never change while it runs, so the stream carries the acknowledgement (which
 * names the types honoured: list changes are, trivially; resource updates are not offered) and
 * heartbeats, until the client closes it. */
static int subscriptions_listen(http_call *hc, mcp_server *ms, json_t *id, json_t *params, int sse)
{
    h2o_req_t *req = hc->req;
    char err[RB_ERR_LEN];
    json_t *want = json_object_get(params, "notifications");
    if (!json_is_object(want))
        return mcp__reject(req, 400, id, MCP_ERR_PARAMS,
                           "Invalid params: subscriptions/listen needs params.notifications, an object such as "
                           "{\"toolsListChanged\": true}");
    if (!sse)
        return mcp__reject(req, 406, id, MCP_ERR_INVALID_REQUEST,
                           "Not Acceptable: subscriptions/listen answers with an event stream; send Accept: "
                           "application/json, text/event-stream");
    if (!server_stream_room(ms->server, err))
        return mcp__reject(req, 429, id, MCP_ERR_INVALID_REQUEST, err);
    json_t *honoured = json_object();
    if (json_is_true(json_object_get(want, "toolsListChanged")))
        json_object_set_new(honoured, "toolsListChanged", json_true());
    if (json_is_true(json_object_get(want, "resourcesListChanged")))
        json_object_set_new(honoured, "resourcesListChanged", json_true());
    mcp_rt *rt = rt_new(ms, hc->who);
    mcp_stream *st = mcp__stream_new(rt, 1);
    rt->refs++; /* held by the stream until its client goes (mcp__on_sink_closed) */
    h2o_add_header_by_str(&req->pool, &req->res.headers, H2O_STRLIT("x-accel-buffering"), 0, NULL, H2O_STRLIT("no"));
    st->sink = sse_start(ms->server, req, mcp__on_sink_closed, st);
    json_t *ack = json_pack("{s:s, s:s, s:{s:o, s:{s:O}}}", "jsonrpc", "2.0", "method",
                            "notifications/subscriptions/acknowledged", "params", "notifications", honoured, "_meta",
                            MCP_META_SUBSCRIPTION, id);
    mcp__stream_send(st, ack);
    json_decref(ack);
    return 0;
}

/* Whether method is one 2026-07-28 removed (answered Method not found, 404). */
static const char *removed(const char *method)
{
    static const char *const gone[] = {"ping", "logging/setLevel", "resources/subscribe", "resources/unsubscribe",
                                       "notifications/initialized", "tasks/result", "tasks/list"};
    for (size_t i = 0; i < sizeof(gone) / sizeof(gone[0]); i++)
        if (strcmp(method, gone[i]) == 0)
            return gone[i];
    return NULL;
}

/* ---- the POST -------------------------------------------------------------------------- */

/* The envelope headers of req, copied into its pool. */
static void headers_of(h2o_req_t *req, mcp_envelope_headers *h)
{
    memset(h, 0, sizeof(*h));
    h->version = mcp__header(req, "mcp-protocol-version", &h->version_len);
    h->method = mcp__header(req, "mcp-method", &h->method_len);
    h->name = mcp__header(req, "mcp-name", &h->name_len);
}

static int send_error(h2o_req_t *req, json_t *error)
{
    http_send_json(req, mcp__modern_decorate(error), error);
    json_decref(error);
    return 0;
}

int mcp__modern_post(http_call *hc, json_t *body, const mcp_toolset *toolset, int sse)
{
    mcp_server *ms = hc->data;
    h2o_req_t *req = hc->req;
    if (!json_is_object(body))
        return mcp__reject(req, 400, NULL, MCP_ERR_INVALID_REQUEST,
                           "Invalid Request: MCP 2026-07-28 takes one JSON-RPC message per POST, not a batch");
    char kind = 0;
    json_t *error = NULL;
    if (mcp__classify(body, &kind, &error) != 0)
        return send_error(req, error);
    const char *method = json_string_value(json_object_get(body, "method"));
    json_t *params = json_object_get(body, "params");
    if (kind == 'a')
        return mcp__reject(req, 400, NULL, MCP_ERR_INVALID_REQUEST,
                           "Invalid Request: under MCP 2026-07-28 clients send no JSON-RPC responses (the server "
                           "sends no requests)");
    if (kind == 'n') {
        if (strcmp(method, "notifications/cancelled") == 0)
            cancel_request(ms, hc->who, params);
        mcp__send_empty(req, 202, "Accepted");
        return 0;
    }
    json_t *id = json_object_get(body, "id");
    mcp_envelope_headers h;
    headers_of(req, &h);
    error = mcp__envelope_error(body, &h);
    if (error != NULL)
        return send_error(req, error);
    const char *gone = removed(method);
    if (gone != NULL) {
        char text[200];
        snprintf(text, sizeof(text),
                 "Method not found: %s is not part of MCP 2026-07-28 (send initialize to use it under 2025-11-25)",
                 gone);
        return send_error(req, mcp__rpc_error(id, MCP_ERR_METHOD, text, NULL));
    }
    if (strcmp(method, "server/discover") == 0) {
        json_t *resp = discover_result(id, toolset);
        int status = mcp__modern_decorate(resp);
        mcp__send_message(req, status, resp, sse);
        json_decref(resp);
        return 0;
    }
    if (strcmp(method, "subscriptions/listen") == 0)
        return subscriptions_listen(hc, ms, id, params, sse);
    mcp_rt *rt = rt_new(ms, hc->who);
    mcp_post *post = h2o_mem_alloc_shared(&req->pool, sizeof(*post), mcp__post_dispose);
    memset(post, 0, sizeof(*post));
    post->req = req;
    post->rt = rt;
    rt->refs++; /* held by the post until its request is disposed */
    post->sse = sse;
    post->toolset = toolset;
    post->modern = 1;
    post->log_min = mcp__envelope_log_level(params);
    post->outstanding = 1;
    json_t *resp = mcp__dispatch(rt, post, NULL, id, method, params);
    if (resp != NULL) {
        post->outstanding++;
        mcp__post_answer(post, resp);
    } else if (sse && post->ncalls > 0 && post->calls[0] != NULL) {
        /* A call in flight answers on an event stream at once: its heartbeats are how a client
         * that goes away is noticed, and that cancels the call (2026-07-28 cancellation). */
        h2o_add_header_by_str(&req->pool, &req->res.headers, H2O_STRLIT("x-accel-buffering"), 0, NULL,
                              H2O_STRLIT("no"));
        mcp__call_open_stream(post->calls[0]);
    }
    post->outstanding--;
    return 0;
}

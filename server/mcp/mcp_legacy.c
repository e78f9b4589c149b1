/*
 * mcp_legacy.c: the HTTP+SSE transport of MCP protocol 2024-11-05, still the only remote
 * transport of several hosts (Gemini CLI's "url": ".../sse", OpenAI Agents' MCPServerSse,
 * CodeRunner's configurations). It serves the same tools and sessions as /mcp:
 *
 *   GET /sse                      opens the session's one event stream; its first event is
 *                                 "endpoint" with data /messages?sessionId=<id>;
 *   POST /messages?sessionId=<id> takes a JSON-RPC message (or a batch of at most
 *                                 MCP_MAX_BATCH, as /mcp), answers 202 Accepted, and sends
 *                                 every response, progress and log message as an event
 *                                 "message" on that stream.
 *
 * The session is an ordinary MCP session (core/mcp_sessions.h) that lives while its stream is
 * open: the stream holds it (no idle expiry), and when the client closes it the session ends
 * with its bound sandboxes, as DELETE /mcp would. A runboxd that stops leaves it to expire,
 * since the client has lost the stream either way.
 */
#include <stdio.h>
#include <string.h>

#include "server/mcp/mcp_internal.h"
#include "server/sse.h"

#define LEGACY_VERSION "2024-11-05"

static void on_legacy_closed(void *data)
{
    mcp_stream *st = data;
    mcp_rt *rt = st->rt;
    mcp_server *ms = rt->ms;
    st->sink = NULL;
    if (ms->stopped)
        return;
    char id[MCP_SESSIONS_ID_LEN], err[RB_ERR_LEN];
    snprintf(id, sizeof(id), "%s", rt->id);
    mcp_sessions_hold(ms->cm, id, -1);
    /* Ends the session; its detach callback frees rt and this stream. */
    if (mcp_sessions_end(ms->cm, NULL, id, "the client closed its SSE stream (HTTP+SSE transport)", err) != RB_OK)
        rb_warn("mcp session %s: %s", id, err);
}

int mcp__legacy_sse_handler(http_call *hc)
{
    mcp_server *ms = mcp__admit(hc);
    if (ms == NULL)
        return 0;
    /* a GET that creates an MCP session, whose messages a viewer may not send anyway */
    if (!http_require_change(hc, "open an MCP session (GET /sse)"))
        return 0;
    h2o_req_t *req = hc->req;
    char err[RB_ERR_LEN];
    if (!server_stream_room(ms->server, err))
        return mcp__reject(req, 429, NULL, MCP_ERR_INVALID_REQUEST, err);
    json_t *info = json_pack("{s:s}", "protocol_version", LEGACY_VERSION);
    json_t *rec = NULL;
    rb_err e = mcp_sessions_create(ms->cm, hc->who, info, &rec, err);
    json_decref(info);
    if (e == RB_EBUSY) {
        h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_RETRY_AFTER, NULL, H2O_STRLIT("60"));
        return mcp__reject(req, 429, NULL, MCP_ERR_INVALID_REQUEST, err);
    }
    if (e != RB_OK)
        return mcp__reject(req, 500, NULL, MCP_ERR_INTERNAL, err);
    const char *sid = json_string_value(json_object_get(rec, "mcp_session_id"));
    mcp_rt *rt = mcp__rt_get(ms, sid, rec, hc->who);
    json_decref(rec);
    rt->legacy = mcp__stream_new(rt, 0);
    mcp_sessions_hold(ms->cm, rt->id, +1);
    rt->legacy->sink = sse_start(ms->server, req, on_legacy_closed, rt->legacy);
    char endpoint[96];
    int n = snprintf(endpoint, sizeof(endpoint), "/messages?sessionId=%s", rt->id);
    sse_send_text(rt->legacy->sink, NULL, "endpoint", endpoint, (size_t)n);
    rb_info("mcp session %s: opened over HTTP+SSE (protocol %s)", rt->id, LEGACY_VERSION);
    return 0;
}

/* initialize on an HTTP+SSE session (which GET /sse created): the version is the client's when
 * this server speaks it, else 2024-11-05. */
static json_t *legacy_initialize(mcp_rt *rt, json_t *msg)
{
    const char *asked = NULL;
    json_t *error = mcp__initialize_error(msg, &asked);
    if (error != NULL)
        return error;
    const char *v = asked != NULL && mcp__version_supported(asked) ? asked : LEGACY_VERSION;
    snprintf(rt->version, sizeof(rt->version), "%s", v);
    json_t *pv = json_string(v);
    char err[RB_ERR_LEN];
    if (mcp_sessions_set(rt->ms->cm, rt->id, "protocol_version", pv, err) != RB_OK)
        rb_warn("mcp session %s: %s", rt->id, err);
    json_decref(pv);
    json_t *params = json_object_get(msg, "params");
    json_t *ci = json_object_get(params, "clientInfo");
    if (json_is_object(ci) && mcp_sessions_set(rt->ms->cm, rt->id, "client_info", ci, err) != RB_OK)
        rb_warn("mcp session %s: %s", rt->id, err);
    return mcp__initialize_result(json_object_get(msg, "id"), v, 0);
}

int mcp__legacy_post_handler(http_call *hc)
{
    mcp_server *ms = mcp__admit(hc);
    if (ms == NULL)
        return 0;
    h2o_req_t *req = hc->req;
    const char *sid = http_query_param(req, "sessionId");
    if (sid == NULL)
        sid = http_query_param(req, "session_id");
    if (sid == NULL || sid[0] == '\0')
        return mcp__reject(req, 400, NULL, MCP_ERR_INVALID_REQUEST,
                           "Bad Request: the sessionId query parameter names the session; POST to the endpoint "
                           "that GET /sse announced");
    mcp_body_kind kind;
    json_t *body = mcp__read_message(hc, &kind);
    if (body == NULL)
        return 0;
    json_t *rec = NULL;
    mcp_rt *rt = mcp__session_by_id(hc, sid, &rec);
    if (rt == NULL) {
        json_decref(body);
        return 0;
    }
    if (rt->legacy == NULL || rt->legacy->sink == NULL) {
        json_decref(body);
        json_decref(rec);
        return mcp__reject(req, 400, NULL, MCP_ERR_INVALID_REQUEST,
                           "Bad Request: this MCP session has no open GET /sse stream to answer on; open one with "
                           "GET /sse (or use the streamable HTTP transport at /mcp)");
    }
    mcp_post *post = h2o_mem_alloc_shared(&req->pool, sizeof(*post), mcp__post_dispose);
    memset(post, 0, sizeof(*post));
    post->rt = rt;
    post->legacy = 1;
    post->outstanding = 1;
    int batch = kind == MCP_BODY_BATCH;
    size_t n = batch ? json_array_size(body) : 1;
    for (size_t i = 0; i < n && rt->legacy != NULL; i++) {
        json_t *msg = batch ? json_array_get(body, i) : body;
        char k = 0;
        json_t *out = NULL;
        if (mcp__classify(msg, &k, &out) != 0) {
            mcp__stream_send(rt->legacy, out);
            json_decref(out);
            continue;
        }
        const char *method = json_string_value(json_object_get(msg, "method"));
        if (k == 'a')
            continue;
        if (k == 'n') {
            mcp__notification(rt, method, json_object_get(msg, "params"));
            continue;
        }
        if (strcmp(method, "initialize") == 0)
            out = legacy_initialize(rt, msg);
        else
            out = mcp__dispatch(rt, post, rec, json_object_get(msg, "id"), method, json_object_get(msg, "params"));
        if (out != NULL) {
            mcp__stream_send(rt->legacy, out);
            json_decref(out);
        }
    }
    json_decref(body);
    json_decref(rec);
    mcp__send_empty(req, 202, "Accepted");
    return 0;
}

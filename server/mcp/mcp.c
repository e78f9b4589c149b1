/*
 * mcp.c: MCP over streamable HTTP at /mcp (server/mcp/mcp.h), the HTTP side. A POST carries one
 * JSON-RPC message (or, under 2025-03-26 only, a batch). A request is answered with one SSE
 * event when the client's Accept names text/event-stream (what the reference SDK servers send),
 * else as application/json; a batch's answers always as one JSON array. When a notification
 * (progress, log message) has to go before the answer, the answer becomes an SSE stream whose
 * events get ids "<boot>-<n>", unique per MCP session; those events are kept in a bounded log so
 * that a GET with Last-Event-ID replays what a client missed on that stream (and re-attaches to
 * it while its request is still running). This file checks Origin and Accept, runs initialize, looks sessions up by
 * Mcp-Session-Id, serves POST, GET and DELETE, and owns the server's lifecycle.
 *
 * The rest of the module (shared declarations in server/mcp/mcp_internal.h): mcp_rt.c keeps the
 * transport state of live MCP sessions (event logs, streams, posts, calls in flight),
 * mcp_rpc.c dispatches JSON-RPC messages and reads resources, mcp_wire.c reads and builds the
 * messages and event ids (pure), mcp_tools.c runs the tools and mcp_files.c the file, package
 * and dependency tools and file resources. The tool sets of other protocol families
 * (mcp_toolset_add) are served here too, at the paths their families route to mcp_toolset_serve.
 */
#include "server/mcp/mcp.h"

#include <assert.h>
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "server/mcp/mcp_internal.h"
#include "server/sse.h"

static const char *const versions[] = {"2025-11-25", "2025-06-18", "2025-03-26"};
#define NVERSIONS (sizeof(versions) / sizeof(versions[0]))

void mcp__send_empty(h2o_req_t *req, int status, const char *reason)
{
    static h2o_generator_t generator = {NULL, NULL};
    req->res.status = status;
    req->res.reason = reason;
    req->res.content_length = 0;
    h2o_start_response(req, &generator);
    h2o_send(req, NULL, 0, H2O_SEND_STATE_FINAL);
}

/* Answers an HTTP-level rejection with a JSON-RPC error body; msg steals nothing. */
int mcp__reject(h2o_req_t *req, int status, json_t *id, int code, const char *message)
{
    json_t *doc = mcp__rpc_error(id, code, message, NULL);
    http_send_json(req, status, doc);
    json_decref(doc);
    return 0;
}

const char *mcp__header(h2o_req_t *req, const char *name, size_t *len)
{
    ssize_t i = h2o_find_header_by_str(&req->headers, name, strlen(name), -1);
    if (i < 0)
        return NULL;
    *len = req->headers.entries[i].value.len;
    return http_pool_strdup(req, req->headers.entries[i].value.base, *len);
}

/* ---- Origin and Accept ----------------------------------------------------------------- */

/* Whether the Accept header admits type ("application/json"); no header admits everything. With
 * exact, only a media range that names type itself counts (not "* / *" nor "text/ *"). */
static int accepts_as(const char *accept, const char *type, int exact)
{
    if (accept == NULL)
        return !exact;
    const char *slash = strchr(type, '/');
    size_t major = (size_t)(slash - type);
    const char *p = accept;
    while (*p != '\0') {
        while (*p == ' ' || *p == ',' || *p == '\t')
            p++;
        const char *end = p;
        while (*end != '\0' && *end != ',' && *end != ';')
            end++;
        size_t n = (size_t)(end - p);
        while (n > 0 && p[n - 1] == ' ')
            n--;
        if ((!exact && n == 3 && strncmp(p, "*/*", 3) == 0) ||
            (!exact && n == major + 2 && strncasecmp(p, type, major + 1) == 0 && p[major + 1] == '*') ||
            (n == strlen(type) && strncasecmp(p, type, n) == 0))
            return 1;
        while (*end != '\0' && *end != ',')
            end++;
        p = end;
    }
    return 0;
}

static int accepts(const char *accept, const char *type)
{
    return accepts_as(accept, type, 0);
}

/* How a POST's answer is framed. A client that names text/event-stream in Accept (as the MCP
 * SDKs and most clients do) gets its answer as an SSE event, as the reference SDK servers send
 * it, so that clients written against those and reading only SSE work too; "* / *" (curl) or no
 * Accept gets plain JSON. Both are what the transport allows; conforming clients read either. */
static int answers_as_sse(const char *accept)
{
    return accepts_as(accept, "text/event-stream", 1);
}

void mcp__send_message(h2o_req_t *req, int status, json_t *msg, int sse)
{
    if (sse)
        http_send_event(req, status, msg);
    else
        http_send_json(req, status, msg);
}

/* ---- HTTP handlers --------------------------------------------------------------------- */

static mcp_server *server_of(http_call *hc)
{
    return hc->data;
}

/* The check every MCP request passes first: the server is running (503). (Host and Origin are
 * checked by the router for every route.) Returns the MCP server, or NULL when the request was
 * answered. */
mcp_server *mcp__admit(http_call *hc)
{
    mcp_server *ms = server_of(hc);
    if (ms == NULL || ms->stopped) {
        mcp__reject(hc->req, 503, NULL, MCP_ERR_INTERNAL, "the server is shutting down");
        return NULL;
    }
    return ms;
}

/* Answers 400 and returns 1 when the Mcp-Session-Id sid[0..len) holds a NUL (which would cut it
 * short) or another control character: no session id does. */
static int refuse_control(h2o_req_t *req, const char *sid, size_t len)
{
    int control = strlen(sid) != len;
    for (size_t i = 0; i < len; i++)
        control |= (unsigned char)sid[i] < 0x20 || sid[i] == 0x7f;
    if (control)
        mcp__reject(req, 400, NULL, MCP_ERR_INVALID_REQUEST,
                    "Bad Request: the Mcp-Session-Id header holds a control character, which no session id does; "
                    "send the one the initialize answer gave");
    return control;
}

/* Looks up the session named by Mcp-Session-Id. Returns the runtime, or NULL when the request
 * was answered (400 without the header, 404 unknown or ended). *rec is a new reference. */
static mcp_rt *session_of(http_call *hc, json_t **rec)
{
    size_t len = 0;
    const char *sid = mcp__header(hc->req, "mcp-session-id", &len);
    *rec = NULL;
    if (sid == NULL || len == 0) {
        mcp__reject(hc->req, 400, NULL, MCP_ERR_INVALID_REQUEST,
               "Bad Request: the Mcp-Session-Id header is required; send initialize first to get one");
        return NULL;
    }
    if (refuse_control(hc->req, sid, len))
        return NULL;
    return mcp__session_by_id(hc, sid, rec);
}

mcp_rt *mcp__session_by_id(http_call *hc, const char *sid, json_t **rec)
{
    mcp_server *ms = server_of(hc);
    char err[RB_ERR_LEN];
    *rec = NULL;
    if (mcp_sessions_touch(ms->cm, hc->who, sid, rec, err) != RB_OK) {
        mcp__reject(hc->req, 404, NULL, MCP_ERR_INVALID_REQUEST, err);
        return NULL;
    }
    return mcp__rt_get(ms, sid, *rec, hc->who);
}

static int version_supported(const char *v)
{
    for (size_t i = 0; i < NVERSIONS; i++)
        if (strcmp(versions[i], v) == 0)
            return 1;
    return 0;
}

json_t *mcp__read_message(http_call *hc, mcp_body_kind *kind)
{
    h2o_req_t *req = hc->req;
    char err[RB_ERR_LEN];
    json_t *body = NULL;
    rb_err e = http_read_json_value(req, hc->cfg->max_body, &body, err);
    if (e == RB_EMEDIA) {
        mcp__reject(req, 415, NULL, MCP_ERR_INVALID_REQUEST,
                    "Unsupported Media Type: send the JSON-RPC message with Content-Type: application/json");
        return NULL;
    }
    if (e == RB_ETOOBIG) {
        mcp__reject(req, 413, NULL, MCP_ERR_INVALID_REQUEST, err);
        return NULL;
    }
    if (e != RB_OK) {
        char msg[RB_ERR_LEN + 16];
        snprintf(msg, sizeof(msg), "Parse error: %s", err);
        mcp__reject(req, 400, NULL, MCP_ERR_PARSE, msg);
        return NULL;
    }
    *kind = mcp__body_kind(body);
    if (*kind == MCP_BODY_INVALID) {
        json_decref(body);
        mcp__reject(req, 400, NULL, MCP_ERR_INVALID_REQUEST,
                    "Invalid Request: the body must be a JSON-RPC message (an object) or a batch (an array)");
        return NULL;
    }
    /* Every transport's batches are bounded here, before any message of them runs: each message
     * costs loop time and an answer held in memory. */
    int status = 0;
    const char *why = *kind == MCP_BODY_BATCH ? mcp__batch_size_refusal(body, &status) : NULL;
    if (why != NULL) {
        json_decref(body);
        mcp__reject(req, status, NULL, MCP_ERR_INVALID_REQUEST, why);
        return NULL;
    }
    return body;
}

json_t *mcp__initialize_result(json_t *id, const char *version, const mcp_toolset *toolset)
{
    json_t *result = json_pack("{s:s, s:{s:{s:b}, s:{s:b, s:b}, s:{}}, s:{s:s, s:s, s:s}, s:s}", "protocolVersion",
                               version, "capabilities", "tools", "listChanged", 0, "resources", "listChanged", 0,
                               "subscribe", 0, "logging", "serverInfo", "name", "runbox", "title",
                               "runbox code interpreter", "version", RUNBOX_VERSION, "instructions",
                               toolset != NULL ? toolset->def.instructions : mcp__instructions);
    json_t *resp = mcp__rpc_result_of(id, result);
    json_decref(result);
    return resp;
}

int mcp__version_supported(const char *v)
{
    return v != NULL && version_supported(v);
}

static int handle_initialize(http_call *hc, json_t *msg, int sse, const mcp_toolset *toolset)
{
    mcp_server *ms = server_of(hc);
    json_t *id = json_object_get(msg, "id");
    json_t *params = json_object_get(msg, "params");
    const char *asked = NULL;
    json_t *error = mcp__initialize_error(msg, &asked);
    if (error != NULL) {
        http_send_json(hc->req, 400, error);
        json_decref(error);
        return 0;
    }
    const char *v = version_supported(asked) ? asked : versions[0];
    json_t *info = json_pack("{s:s, s:O?, s:O?}", "protocol_version", v, "client_info",
                             json_object_get(params, "clientInfo"), "client_capabilities",
                             json_object_get(params, "capabilities"));
    json_t *rec = NULL;
    char err[RB_ERR_LEN];
    rb_err e = mcp_sessions_create(ms->cm, hc->who, info, &rec, err);
    json_decref(info);
    if (e == RB_EBUSY)
        h2o_add_header(&hc->req->pool, &hc->req->res.headers, H2O_TOKEN_RETRY_AFTER, NULL, H2O_STRLIT("60"));
    if (e == RB_EBUSY || e == RB_EINVAL)
        return mcp__reject(hc->req, e == RB_EBUSY ? 429 : 400, id, e == RB_EBUSY ? MCP_ERR_INVALID_REQUEST : MCP_ERR_PARAMS,
                      err);
    if (e != RB_OK)
        return mcp__reject(hc->req, 500, id, MCP_ERR_INTERNAL, err);
    const char *sid = json_string_value(json_object_get(rec, "mcp_session_id"));
    rb_info("mcp session %s: initialized with protocol %s", sid, v);
    json_t *resp = mcp__initialize_result(id, v, toolset);
    char *hv = http_pool_strdup(hc->req, sid, strlen(sid));
    h2o_add_header_by_str(&hc->req->pool, &hc->req->res.headers, H2O_STRLIT("mcp-session-id"), 0, NULL, hv,
                          strlen(hv));
    mcp__send_message(hc->req, 200, resp, sse);
    json_decref(resp);
    json_decref(rec);
    return 0;
}

/* A POST to /mcp, or with toolset to that tool set's path (its tools; the same sessions). */
static int post_handler(http_call *hc, const mcp_toolset *toolset)
{
    mcp_server *ms = mcp__admit(hc);
    if (ms == NULL)
        return 0;
    h2o_req_t *req = hc->req;
    size_t len = 0;
    const char *accept = mcp__header(req, "accept", &len);
    if (!accepts(accept, "application/json") || !accepts(accept, "text/event-stream"))
        return mcp__reject(req, 406, NULL, MCP_ERR_INVALID_REQUEST,
                      "Not Acceptable: the Accept header must allow both application/json and text/event-stream");
    mcp_body_kind body_kind;
    json_t *body = mcp__read_message(hc, &body_kind);
    if (body == NULL)
        return 0;
    /* MCP 2026-07-28 requests are served statelessly (mcp_modern.c). */
    mcp_envelope_headers eh = {0};
    eh.version = mcp__header(req, "mcp-protocol-version", &eh.version_len);
    const char *sid = mcp__header(req, "mcp-session-id", &len);
    /* ?era=legacy pins the initialize era for clients that probe 2026-07-28 first and cannot be
     * told not to (the OpenAI Agents SDK), when they rely on a sandbox per MCP session. */
    const char *era = http_query_param(req, "era");
    int pinned = era != NULL && strcmp(era, "legacy") == 0;
    if (!pinned && mcp__envelope_is_modern(body, &eh, sid != NULL && len > 0)) {
        int r = mcp__modern_post(hc, body, toolset, answers_as_sse(accept));
        json_decref(body);
        return r;
    }
    /* initialize starts a session: it needs no Mcp-Session-Id (and ignores one). */
    if (body_kind == MCP_BODY_INITIALIZE) {
        int r = handle_initialize(hc, body, answers_as_sse(accept), toolset);
        json_decref(body);
        return r;
    }
    json_t *rec = NULL;
    mcp_rt *rt = session_of(hc, &rec);
    if (rt == NULL) {
        json_decref(body);
        return 0;
    }
    const char *pv = mcp__header(req, "mcp-protocol-version", &len);
    if (pv != NULL && !version_supported(pv)) {
        json_decref(body);
        json_decref(rec);
        char msg[200];
        snprintf(msg, sizeof(msg), "Bad Request: unsupported MCP-Protocol-Version '%.32s'; this server supports "
                                   "2025-11-25, 2025-06-18 and 2025-03-26",
                 pv);
        return mcp__reject(req, 400, NULL, MCP_ERR_INVALID_REQUEST, msg);
    }
    int batch = body_kind == MCP_BODY_BATCH;
    if (batch) {
        const char *why = mcp__batch_refusal(rt->version);
        if (why != NULL) {
            json_decref(body);
            json_decref(rec);
            return mcp__reject(req, 400, NULL, MCP_ERR_INVALID_REQUEST, why);
        }
    }
    mcp_post *post = h2o_mem_alloc_shared(&req->pool, sizeof(*post), mcp__post_dispose);
    memset(post, 0, sizeof(*post));
    post->req = req;
    post->rt = rt;
    post->batch = batch;
    post->sse = !batch && answers_as_sse(accept); /* a batch's answers go together, as JSON */
    post->toolset = toolset;
    post->answers = batch ? json_array() : NULL;
    /* While processing, hold one count so that answers given synchronously do not send the
     * batch before every message has been seen. */
    post->outstanding = 1;
    size_t n = batch ? json_array_size(body) : 1;
    int requests = 0;
    for (size_t i = 0; i < n; i++) {
        json_t *msg = batch ? json_array_get(body, i) : body;
        char kind = 0;
        json_t *error = NULL;
        if (mcp__classify(msg, &kind, &error) != 0) {
            if (!batch) {
                post->req = NULL;
                http_send_json(req, 400, error);
                json_decref(error);
                goto done;
            }
            json_array_append_new(post->answers, error);
            requests++;
            continue;
        }
        const char *method = json_string_value(json_object_get(msg, "method"));
        json_t *params = json_object_get(msg, "params");
        if (kind == 'a')
            continue;
        if (kind == 'n') {
            mcp__notification(rt, method, params);
            continue;
        }
        requests++;
        json_t *resp = mcp__dispatch(rt, post, rec, json_object_get(msg, "id"), method, params);
        if (resp != NULL) {
            post->outstanding++;
            mcp__post_answer(post, resp);
        }
    }
    if (requests == 0) {
        post->req = NULL;
        mcp__send_empty(req, 202, "Accepted");
        goto done;
    }
    if (batch) {
        if (--post->outstanding == 0)
            mcp__send_batch(post);
    } else {
        post->outstanding--;
    }
done:
    json_decref(body);
    json_decref(rec);
    return 0;
}

static int mcp_post_handler(http_call *hc)
{
    return post_handler(hc, NULL);
}

/* GET: a server-to-client stream, or with Last-Event-ID the replay of a stream. */
static int mcp_get_handler(http_call *hc)
{
    mcp_server *ms = mcp__admit(hc);
    if (ms == NULL)
        return 0;
    h2o_req_t *req = hc->req;
    size_t len = 0;
    const char *accept = mcp__header(req, "accept", &len);
    if (accept == NULL || !accepts(accept, "text/event-stream"))
        return mcp__reject(req, 406, NULL, MCP_ERR_INVALID_REQUEST,
                      "Not Acceptable: a GET on the MCP endpoint opens an event stream; send Accept: "
                      "text/event-stream");
    json_t *rec = NULL;
    mcp_rt *rt = session_of(hc, &rec);
    json_decref(rec);
    if (rt == NULL)
        return 0;
    char err[RB_ERR_LEN];
    size_t open_gets = 0;
    for (mcp_stream *o = rt->streams; o != NULL; o = o->next)
        open_gets += o->standalone && o->sink != NULL;
    if (open_gets >= MCP_MAX_GET_STREAMS)
        snprintf(err, sizeof(err),
                 "Too Many Requests: %d GET streams are already open on this MCP session; close one first",
                 MCP_MAX_GET_STREAMS);
    if (open_gets >= MCP_MAX_GET_STREAMS || !server_stream_room(ms->server, err))
        return mcp__reject(req, 429, NULL, MCP_ERR_INVALID_REQUEST, err);
    const char *last = mcp__header(req, "last-event-id", &len);
    uint64_t seq = 0;
    mcp_event *from = NULL;
    int ours = last != NULL && mcp__sse_id_parse(last, len, ms->boot, &seq) && seq >= 1 && seq <= rt->next_seq;
    if (ours)
        for (mcp_event *e = rt->log_head; e != NULL; e = e->next)
            if (e->seq == seq)
                from = e;
    if (ours && from == NULL) {
        /* An event this session sent (always on a request's stream: GET streams carry none) that
         * the bounded log no longer holds: what followed it is lost, and an empty stream would
         * leave the client waiting for its answer forever. */
        snprintf(err, sizeof(err),
                 "Gone: event %.40s is no longer kept for replay (an MCP session keeps its last %d messages, at most "
                 "%u MiB); what followed it cannot be sent again: send the request again",
                 last, MCP_LOG_MAX_EVENTS, MCP_LOG_MAX_BYTES >> 20);
        return mcp__reject(req, 410, NULL, MCP_ERR_INVALID_REQUEST, err);
    }
    if (last != NULL && mcp__sse_id_foreign(last, len, ms->boot)) {
        /* MCP sessions outlive a restart of runboxd; the events of their streams do not. */
        snprintf(err, sizeof(err),
                 "Gone: event %.40s was sent before runboxd restarted, and events are not kept across a restart; "
                 "send the request again",
                 last);
        return mcp__reject(req, 410, NULL, MCP_ERR_INVALID_REQUEST, err);
    }
    if (from == NULL) {
        mcp_stream *st = mcp__stream_new(rt, 1);
        st->sink = sse_start(ms->server, req, mcp__on_sink_closed, st);
        return 0;
    }
    uint64_t no = from->stream;
    mcp_stream *st = mcp__stream_find(rt, no);
    int attach = st != NULL && !st->done;
    if (attach && st->sink != NULL) {
        /* The request is still running: its further messages go to this client from now on. */
        sse_end(st->sink);
        st->sink = NULL;
    }
    sse_stream *sink = sse_start(ms->server, req, attach ? mcp__on_sink_closed : NULL, attach ? st : NULL);
    char id[48];
    for (mcp_event *e = from->next; e != NULL; e = e->next) {
        if (e->stream != no)
            continue;
        mcp__event_id(rt, e->seq, id, sizeof(id));
        sse_send_text(sink, id, "message", e->text, e->len);
    }
    if (attach)
        st->sink = sink;
    else
        sse_end(sink);
    return 0;
}

static int mcp_delete_handler(http_call *hc)
{
    mcp_server *ms = mcp__admit(hc);
    if (ms == NULL)
        return 0;
    h2o_req_t *req = hc->req;
    char err[RB_ERR_LEN];
    size_t len = 0;
    const char *sid = mcp__header(req, "mcp-session-id", &len);
    if (sid == NULL || len == 0)
        return mcp__reject(req, 400, NULL, MCP_ERR_INVALID_REQUEST,
                      "Bad Request: the Mcp-Session-Id header names the session to end");
    if (refuse_control(req, sid, len))
        return 0;
    if (mcp_sessions_end(ms->cm, hc->who, sid, "ended by the client (HTTP DELETE)", err) != RB_OK)
        return mcp__reject(req, 404, NULL, MCP_ERR_INVALID_REQUEST, err);
    mcp__send_empty(req, 204, "No Content");
    return 0;
}

static const http_route routes[] = {
    {"POST", "/mcp", mcp_post_handler},
    {"GET", "/mcp", mcp_get_handler},
    {"DELETE", "/mcp", mcp_delete_handler},
    /* the HTTP+SSE transport of protocol 2024-11-05 (mcp_legacy.c) */
    {"GET", "/sse", mcp__legacy_sse_handler},
    {"POST", "/messages", mcp__legacy_post_handler},
};

static rb_err mcp_server_new(rb_server *s, rb_core *core, const server_settings *cfg, mcp_server **out, char *err);
static void mcp_server_stop(mcp_server *ms);
static void mcp_server_free(mcp_server *ms);

/* JSON-RPC's error shape for HTTP errors h2o raises itself on /mcp (413, broken framing). */
static json_t *jsonrpc_http_error(int status, const char *code, const char *message)
{
    (void)status;
    (void)code;
    return json_pack("{s:s, s:n, s:{s:i, s:s}}", "jsonrpc", "2.0", "id", "error", "code", MCP_ERR_INVALID_REQUEST,
                     "message", message);
}

static void stop_cb(void *data)
{
    mcp_server_stop(data);
}

static void free_cb(void *data)
{
    mcp_server_free(data);
}

rb_err mcp_register(rb_server *s, rb_core *core, const server_settings *cfg, mcp_server **out, char *err)
{
    mcp_server *ms;
    rb_err e = mcp_server_new(s, core, cfg, &ms, err);
    if (e != RB_OK)
        return e;
    http_protocol p = {.name = "mcp",
                       .routes = routes,
                       .nroutes = sizeof(routes) / sizeof(routes[0]),
                       .data = ms,
                       .stop = stop_cb,
                       .free = free_cb,
                       .error_prefix = "/mcp",
                       .error_doc = jsonrpc_http_error};
    server_register(s, &p);
    if (out != NULL)
        *out = ms;
    return RB_OK;
}

/* ---- tool sets of other protocol families ---------------------------------------------- */

rb_err mcp_toolset_add(mcp_server *ms, const mcp_toolset_def *def, mcp_toolset **out, char *err)
{
    json_t *tools = NULL;
    rb_err e = mcp__defs_load(def->defs, def->ndefs, def->what, &tools, err);
    if (e != RB_OK)
        return e;
    mcp_toolset *set = xcalloc(1, sizeof(*set));
    set->ms = ms;
    set->def = *def;
    set->tools = tools;
    set->next = ms->toolsets;
    ms->toolsets = set;
    *out = set;
    return RB_OK;
}

int mcp_toolset_serve(mcp_toolset *set, http_call *hc)
{
    /* The family routed the request with its own data; the handlers of /mcp find the MCP server
     * in hc->data. */
    hc->data = set->ms;
    const h2o_iovec_t m = hc->req->method;
    if (h2o_memis(m.base, m.len, H2O_STRLIT("POST")))
        return post_handler(hc, set);
    if (h2o_memis(m.base, m.len, H2O_STRLIT("GET")))
        return mcp_get_handler(hc);
    assert(h2o_memis(m.base, m.len, H2O_STRLIT("DELETE"))); /* the family routes only these three */
    return mcp_delete_handler(hc);
}

/* ---- lifecycle -------------------------------------------------------------------------- */

static rb_err mcp_server_new(rb_server *s, rb_core *core, const server_settings *cfg, mcp_server **out, char *err)
{
    json_t *tools = NULL;
    rb_err e = mcp__tools_load(&tools, err);
    if (e != RB_OK)
        return e;
    /* the tools of the sessions' data, and of optional features when the operator turned them on */
    const char *optional[5];
    size_t nopt = 0;
    optional[nopt++] = mcp__pause_def; /* pausing and forking sessions (docs/data.md) */
    optional[nopt++] = mcp__resume_def;
    optional[nopt++] = mcp__fork_def;
    if (core_page_text_enabled(core))
        optional[nopt++] = mcp__page_text_def;
    if (core_shares_enabled(core))
        optional[nopt++] = mcp__mounts_def;
    if (nopt > 0) {
        json_t *more = NULL;
        if ((e = mcp__defs_load(optional, nopt, "tool", &more, err)) != RB_OK) {
            json_decref(tools);
            return e;
        }
        json_array_extend(tools, more);
        json_decref(more);
    }
    mcp_server *ms = xcalloc(1, sizeof(*ms));
    ms->server = s;
    ms->core = core;
    ms->cfg = cfg;
    ms->tools = tools;
    ms->modern_tools = mcp__modern_tools(tools);
    e = mcp_sessions_new(core, &ms->cm, err);
    if (e != RB_OK) {
        json_decref(tools);
        json_decref(ms->modern_tools);
        free(ms);
        return e;
    }
    mcp_sessions_on_detach(ms->cm, mcp__on_session_detached, ms);
    char rnd[40];
    rb_random_id("", rnd, sizeof(rnd));
    snprintf(ms->boot, sizeof(ms->boot), "%.8s", rnd);
    *out = ms;
    return RB_OK;
}

static void mcp_server_stop(mcp_server *ms)
{
    if (ms == NULL || ms->stopped)
        return;
    ms->stopped = 1;
    mcp__modern_stop(ms);
    /* Hands every session's transport state back (mcp__on_session_detached) to be dropped. */
    mcp_sessions_free(ms->cm);
    ms->cm = NULL;
}

static void mcp_server_free(mcp_server *ms)
{
    if (ms == NULL)
        return;
    mcp_server_stop(ms);
    json_decref(ms->tools);
    json_decref(ms->modern_tools);
    while (ms->toolsets != NULL) {
        mcp_toolset *set = ms->toolsets;
        ms->toolsets = set->next;
        json_decref(set->tools);
        free(set);
    }
    free(ms);
}

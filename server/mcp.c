/*
 * mcp.c: MCP over streamable HTTP at /mcp (server/mcp.h). A POST carries one JSON-RPC message
 * (or, under 2025-03-26 only, a batch). Requests are answered as application/json unless a
 * notification (progress, log message) has to go first, in which case the answer becomes an
 * SSE stream. Every SSE event gets an id "<boot>-<n>", unique per MCP session; the events of
 * a session are kept in a bounded log so that a GET with Last-Event-ID replays what a client
 * missed on that stream (and re-attaches to it while its request is still running).
 *
 * Objects: mcp_rt is the transport state of one live MCP session (heap, freed when the session
 * ends or the server stops); mcp_call is one JSON-RPC request in flight (heap, in its rt);
 * mcp_stream is one SSE stream of a session (heap, in its rt); mcp_post is one HTTP POST (in
 * req->pool, its dispose hook detaches the calls that still point at it).
 */
#include "server/mcp.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/mcp.h"
#include "server/sse.h"

#define MCP_LOG_MAX_EVENTS 4096
#define MCP_LOG_MAX_BYTES (32u * 1024 * 1024)
#define MCP_MAX_STREAMS 256
#define MCP_MAX_BATCH 64
#define MCP_ERR_PARSE -32700
#define MCP_ERR_INVALID_REQUEST -32600
#define MCP_ERR_METHOD -32601
#define MCP_ERR_PARAMS -32602
#define MCP_ERR_INTERNAL -32603
#define MCP_ERR_RESOURCE -32002
#define MCP_ERR_CANCELLED -32800
#define MCP_FILE_TEXT_MAX (256u * 1024)     /* download_file: UTF-8 files up to this come back as text */
#define MCP_FILE_MAX (8u * 1024 * 1024)     /* largest file download_file and resources/read return */

static const char *const versions[] = {"2025-11-25", "2025-06-18", "2025-03-26"};
#define NVERSIONS (sizeof(versions) / sizeof(versions[0]))

static const char *const levels[] = {"debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"};
#define NLEVELS (sizeof(levels) / sizeof(levels[0]))

typedef struct mcp_rt mcp_rt;
typedef struct mcp_call mcp_call;
typedef struct mcp_post mcp_post;

typedef struct mcp_event {
    uint64_t seq, stream;
    char *text;
    size_t len;
    struct mcp_event *next;
} mcp_event;

typedef struct mcp_stream {
    mcp_rt *rt;
    uint64_t no;
    sse_stream *sink; /* NULL while no client is connected */
    int done;         /* the final response went out (or into the log) */
    int standalone;   /* a GET stream: freed when its client goes */
    struct mcp_stream *next;
} mcp_stream;

struct mcp_rt {
    mcp_server *ms;
    char id[CORE_MCP_ID_LEN];
    char version[16];
    uint64_t next_seq, next_stream;
    mcp_event *log_head, *log_tail;
    size_t log_count, log_bytes;
    mcp_stream *streams;
    size_t nstreams;
    mcp_call *calls;
    mcp_rt *next;
};

struct mcp_post {
    h2o_req_t *req; /* NULL once the request is gone or answers as SSE */
    mcp_rt *rt;
    int batch;
    json_t *answers; /* batch: responses collected */
    int outstanding;
    mcp_call *calls[MCP_MAX_BATCH];
    int ncalls;
};

struct mcp_call {
    mcp_server *ms;
    mcp_rt *rt;
    mcp_post *post;
    mcp_stream *stream;
    json_t *id;
    json_t *args;
    json_t *progress_token;
    double progress;
    int log_min;
    char tool[32];
    char language[8];
    json_t *timeout;
    core_op *op;
    core_watch *watch;
    char exec_id[CORE_MCP_ID_LEN];
    int cancelled, replaced;
    /* file and dependency tools, and file resource reads */
    int resource;               /* answer as resources/read, not as a tool result */
    char *path;                 /* file path (relative to /workspace or absolute under it) */
    char *uri;                  /* resources/read: the URI asked for */
    char *upload;               /* upload_file: the decoded bytes */
    size_t upload_len;
    char session_id[CORE_MCP_ID_LEN]; /* the session the file operation runs in */
    char bound_language[8];     /* language of this connection's sandbox to use without session_id */
    mcp_call *next;
};

struct mcp_server {
    rb_server *server;
    rb_core *core;
    const rb_config *cfg;
    core_mcp *cm;
    mcp_rt *rts;
    json_t *tools;
    char boot[12];
    int stopped;
};

static json_t *rpc_error(json_t *id, int code, const char *message, json_t *data)
{
    json_t *err = json_pack("{s:i, s:s}", "code", code, "message", message);
    if (data != NULL)
        json_object_set_new(err, "data", data);
    return json_pack("{s:s, s:O, s:o}", "jsonrpc", "2.0", "id", id ? id : json_null(), "error", err);
}

/* A response with result (stolen). */
static json_t *rpc_result(json_t *id, json_t *result)
{
    return json_pack("{s:s, s:O, s:o}", "jsonrpc", "2.0", "id", id, "result", result);
}

/* A response with result (borrowed). */
static json_t *rpc_result_of(json_t *id, json_t *result)
{
    return json_pack("{s:s, s:O, s:O}", "jsonrpc", "2.0", "id", id, "result", result);
}

static void send_empty(h2o_req_t *req, int status, const char *reason)
{
    static h2o_generator_t generator = {NULL, NULL};
    req->res.status = status;
    req->res.reason = reason;
    req->res.content_length = 0;
    h2o_start_response(req, &generator);
    h2o_send(req, NULL, 0, H2O_SEND_STATE_FINAL);
}

/* Answers an HTTP-level rejection with a JSON-RPC error body; msg steals nothing. */
static int reject(h2o_req_t *req, int status, json_t *id, int code, const char *message)
{
    json_t *doc = rpc_error(id, code, message, NULL);
    http_send_json(req, status, doc);
    json_decref(doc);
    return 0;
}

static const char *header(h2o_req_t *req, const char *name, size_t *len)
{
    ssize_t i = h2o_find_header_by_str(&req->headers, name, strlen(name), -1);
    if (i < 0)
        return NULL;
    *len = req->headers.entries[i].value.len;
    return http_pool_strdup(req, req->headers.entries[i].value.base, *len);
}

/* ---- Origin and Accept ----------------------------------------------------------------- */

static int is_local_origin(const char *o)
{
    const char *p;
    if (strncasecmp(o, "http://", 7) == 0)
        p = o + 7;
    else if (strncasecmp(o, "https://", 8) == 0)
        p = o + 8;
    else
        return 0;
    static const char *const hosts[] = {"localhost", "127.0.0.1", "[::1]"};
    for (size_t i = 0; i < sizeof(hosts) / sizeof(hosts[0]); i++) {
        size_t n = strlen(hosts[i]);
        if (strncasecmp(p, hosts[i], n) != 0)
            continue;
        const char *rest = p + n;
        if (*rest == '\0' || (*rest == '/' && rest[1] == '\0'))
            return 1;
        if (*rest != ':' || rest[1] == '\0')
            continue;
        for (rest++; *rest != '\0' && *rest != '/'; rest++)
            if (!isdigit((unsigned char)*rest))
                return 0;
        return *rest == '\0' || rest[1] == '\0';
    }
    return 0;
}

static int origin_allowed(const rb_config *cfg, const char *origin, size_t len)
{
    if (origin == NULL)
        return 1;
    if (is_local_origin(origin))
        return 1;
    const char *list = cfg->allowed_origins;
    while (list != NULL && *list != '\0') {
        const char *comma = strchr(list, ',');
        const char *end = comma ? comma : list + strlen(list);
        const char *a = list;
        while (a < end && isspace((unsigned char)*a))
            a++;
        const char *b = end;
        while (b > a && (isspace((unsigned char)b[-1]) || b[-1] == '/'))
            b--;
        size_t olen = len;
        while (olen > 0 && origin[olen - 1] == '/')
            olen--;
        if ((b - a == 1 && *a == '*') || ((size_t)(b - a) == olen && strncasecmp(a, origin, olen) == 0))
            return 1;
        list = comma ? comma + 1 : NULL;
    }
    return 0;
}

/* Whether the Accept header admits type ("application/json"); no header admits everything. */
static int accepts(const char *accept, const char *type)
{
    if (accept == NULL)
        return 1;
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
        if ((n == 3 && strncmp(p, "*/*", 3) == 0) ||
            (n == major + 2 && strncasecmp(p, type, major + 1) == 0 && p[major + 1] == '*') ||
            (n == strlen(type) && strncasecmp(p, type, n) == 0))
            return 1;
        while (*end != '\0' && *end != ',')
            end++;
        p = end;
    }
    return 0;
}

/* ---- event log and streams ------------------------------------------------------------- */

static void event_id(const mcp_rt *rt, uint64_t seq, char *buf, size_t len)
{
    snprintf(buf, len, "%s-%llu", rt->ms->boot, (unsigned long long)seq);
}

static void log_trim(mcp_rt *rt)
{
    while (rt->log_head != NULL && (rt->log_count > MCP_LOG_MAX_EVENTS || rt->log_bytes > MCP_LOG_MAX_BYTES)) {
        mcp_event *e = rt->log_head;
        rt->log_head = e->next;
        if (rt->log_head == NULL)
            rt->log_tail = NULL;
        rt->log_count--;
        rt->log_bytes -= e->len;
        free(e->text);
        free(e);
    }
}

/* Sends msg on stream st (and keeps it in the log for replay). msg is borrowed. */
static void stream_send(mcp_stream *st, json_t *msg)
{
    mcp_rt *rt = st->rt;
    char *text = json_dumps(msg, JSON_COMPACT);
    if (text == NULL)
        return;
    mcp_event *e = xcalloc(1, sizeof(*e));
    e->seq = ++rt->next_seq;
    e->stream = st->no;
    e->text = text;
    e->len = strlen(text);
    if (rt->log_tail != NULL)
        rt->log_tail->next = e;
    else
        rt->log_head = e;
    rt->log_tail = e;
    rt->log_count++;
    rt->log_bytes += e->len;
    if (st->sink != NULL) {
        char id[48];
        event_id(rt, e->seq, id, sizeof(id));
        sse_send_text(st->sink, id, "message", e->text, e->len);
    }
    log_trim(rt);
}

static void stream_unlink_free(mcp_stream *st)
{
    mcp_rt *rt = st->rt;
    for (mcp_stream **pp = &rt->streams; *pp != NULL; pp = &(*pp)->next) {
        if (*pp == st) {
            *pp = st->next;
            rt->nstreams--;
            break;
        }
    }
    free(st);
}

static void on_sink_closed(void *data)
{
    mcp_stream *st = data;
    st->sink = NULL;
    if (st->standalone)
        stream_unlink_free(st);
}

static mcp_stream *stream_new(mcp_rt *rt, int standalone)
{
    /* Bound the records kept for replay: drop the oldest finished ones without a client. */
    if (rt->nstreams >= MCP_MAX_STREAMS) {
        mcp_stream *victim = NULL;
        for (mcp_stream *s = rt->streams; s != NULL; s = s->next)
            if (s->done && s->sink == NULL)
                victim = s; /* the list is newest first: the last match is the oldest */
        if (victim != NULL)
            stream_unlink_free(victim);
    }
    mcp_stream *st = xcalloc(1, sizeof(*st));
    st->rt = rt;
    st->no = ++rt->next_stream;
    st->standalone = standalone;
    st->next = rt->streams;
    rt->streams = st;
    rt->nstreams++;
    return st;
}

static mcp_stream *stream_find(mcp_rt *rt, uint64_t no)
{
    for (mcp_stream *s = rt->streams; s != NULL; s = s->next)
        if (s->no == no)
            return s;
    return NULL;
}

/* ---- runtimes -------------------------------------------------------------------------- */

static mcp_rt *rt_find(mcp_server *ms, const char *id)
{
    for (mcp_rt *rt = ms->rts; rt != NULL; rt = rt->next)
        if (strcmp(rt->id, id) == 0)
            return rt;
    return NULL;
}

static mcp_rt *rt_get(mcp_server *ms, const char *id, json_t *rec)
{
    mcp_rt *rt = rt_find(ms, id);
    if (rt == NULL) {
        rt = xcalloc(1, sizeof(*rt));
        rt->ms = ms;
        snprintf(rt->id, sizeof(rt->id), "%s", id);
        rt->next = ms->rts;
        ms->rts = rt;
    }
    const char *v = json_string_value(json_object_get(rec, "protocol_version"));
    snprintf(rt->version, sizeof(rt->version), "%s", v ? v : "2025-03-26");
    return rt;
}

static void call_detach(mcp_call *call);
static void call_finish(mcp_call *call, json_t *response);

/* Ends a runtime: calls in flight are answered with an error (deliver) or dropped silently
 * (server stopping), streams are ended, memory freed. */
static void rt_free(mcp_rt *rt, int deliver, const char *why)
{
    mcp_server *ms = rt->ms;
    for (mcp_rt **pp = &ms->rts; *pp != NULL; pp = &(*pp)->next) {
        if (*pp == rt) {
            *pp = rt->next;
            break;
        }
    }
    while (rt->calls != NULL) {
        mcp_call *call = rt->calls;
        if (deliver) {
            call_finish(call, rpc_error(call->id, MCP_ERR_INVALID_REQUEST, why, NULL));
        } else {
            call_detach(call);
        }
    }
    while (rt->streams != NULL) {
        mcp_stream *st = rt->streams;
        rt->streams = st->next;
        if (st->sink != NULL && deliver)
            sse_end(st->sink);
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

static void on_session_ended(void *data, const char *id)
{
    mcp_server *ms = data;
    mcp_rt *rt = rt_find(ms, id);
    if (rt != NULL)
        rt_free(rt, !ms->stopped, "the MCP session has ended");
}

/* ---- posts and calls ------------------------------------------------------------------- */

static void send_batch(mcp_post *post)
{
    if (post->req == NULL)
        return;
    h2o_req_t *req = post->req;
    post->req = NULL;
    if (json_array_size(post->answers) == 0)
        send_empty(req, 202, "Accepted");
    else
        http_send_json(req, 200, post->answers);
}

static void post_dispose(void *p)
{
    mcp_post *post = p;
    for (int i = 0; i < post->ncalls; i++)
        if (post->calls[i] != NULL)
            post->calls[i]->post = NULL;
    post->req = NULL;
    json_decref(post->answers);
    post->answers = NULL;
}

static void post_forget(mcp_post *post, mcp_call *call)
{
    for (int i = 0; i < post->ncalls; i++)
        if (post->calls[i] == call)
            post->calls[i] = NULL;
}

/* Delivers a response (stolen) for a request of post (call may be NULL for immediate ones). */
static void post_answer(mcp_post *post, json_t *response)
{
    if (!post->batch) {
        if (post->req != NULL) {
            h2o_req_t *req = post->req;
            post->req = NULL;
            http_send_json(req, 200, response);
        }
        json_decref(response);
        return;
    }
    if (post->answers != NULL)
        json_array_append_new(post->answers, response);
    else
        json_decref(response);
    if (--post->outstanding == 0)
        send_batch(post);
}

static mcp_call *call_new(mcp_rt *rt, mcp_post *post, json_t *id)
{
    mcp_call *call = xcalloc(1, sizeof(*call));
    call->ms = rt->ms;
    call->rt = rt;
    call->post = post;
    call->id = json_incref(id);
    call->next = rt->calls;
    rt->calls = call;
    if (post->ncalls < MCP_MAX_BATCH)
        post->calls[post->ncalls++] = call;
    core_mcp_session_hold(rt->ms->cm, rt->id, +1);
    return call;
}

/* Unlinks and frees call; stops its watch and detaches its pending operation. */
static void call_detach(mcp_call *call)
{
    mcp_rt *rt = call->rt;
    for (mcp_call **pp = &rt->calls; *pp != NULL; pp = &(*pp)->next) {
        if (*pp == call) {
            *pp = call->next;
            break;
        }
    }
    if (call->watch != NULL)
        core_watch_stop(call->watch);
    if (call->op != NULL)
        core_cancel(call->op);
    if (call->post != NULL)
        post_forget(call->post, call);
    if (!rt->ms->stopped)
        core_mcp_session_hold(rt->ms->cm, rt->id, -1);
    json_decref(call->id);
    json_decref(call->args);
    json_decref(call->progress_token);
    json_decref(call->timeout);
    free(call->path);
    free(call->uri);
    free(call->upload);
    free(call);
}

static void call_finish(mcp_call *call, json_t *response)
{
    if (call->stream != NULL) {
        mcp_stream *st = call->stream;
        stream_send(st, response);
        st->done = 1;
        if (st->sink != NULL) {
            sse_end(st->sink);
            st->sink = NULL;
        }
        json_decref(response);
    } else if (call->post != NULL) {
        mcp_post *post = call->post;
        post_forget(post, call);
        call->post = NULL;
        post_answer(post, response);
    } else {
        json_decref(response);
    }
    call_detach(call);
}

/* Sends a notification related to call: switches its answer to SSE first if needed. Dropped
 * for batches and when the client is gone. msg is stolen. */
static void call_notify(mcp_call *call, json_t *msg)
{
    if (call->stream == NULL) {
        mcp_post *post = call->post;
        if (post == NULL || post->batch || post->req == NULL) {
            json_decref(msg);
            return;
        }
        mcp_stream *st = stream_new(call->rt, 0);
        st->sink = sse_start(call->ms->server, post->req, on_sink_closed, st);
        post->req = NULL;
        post_forget(post, call);
        call->post = NULL;
        call->stream = st;
    }
    stream_send(call->stream, msg);
    json_decref(msg);
}

static void call_log(mcp_call *call, int level, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void call_log(mcp_call *call, int level, const char *fmt, ...)
{
    if (level < call->log_min)
        return;
    char text[RB_ERR_LEN];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof(text), fmt, ap);
    va_end(ap);
    call_notify(call, json_pack("{s:s, s:s, s:{s:s, s:s, s:s}}", "jsonrpc", "2.0", "method", "notifications/message",
                                "params", "level", levels[level], "logger", "runbox", "data", text));
}

/* ---- tool results ---------------------------------------------------------------------- */

static json_t *text_block(const char *text)
{
    return json_pack("{s:s, s:s}", "type", "text", "text", text);
}

static json_t *tool_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static json_t *tool_error(const char *fmt, ...)
{
    char text[RB_ERR_LEN];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof(text), fmt, ap);
    va_end(ap);
    return json_pack("{s:[o], s:b}", "content", text_block(text), "isError", 1);
}

static json_t *tool_core_error(rb_err e, const char *msg)
{
    return tool_error("%s: %s", rb_strerror(e), msg && msg[0] ? msg : rb_strerror(e));
}

/* A successful result of a non-execute tool: the object as text and as structuredContent. */
static json_t *tool_object(json_t *obj)
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
    if (result != NULL)
        json_array_append_new(content, text_block(result));
    if (json_is_object(error)) {
        rb_buf tb;
        rb_buf_init(&tb, 4u * 1024 * 1024);
        size_t i;
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
    size_t i;
    json_t *png;
    json_array_foreach(json_object_get(doc, "files"), i, png)
    {
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
    if (json_array_size(content) == 0)
        json_array_append_new(content, text_block("(no output)"));
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
        call_finish(call, rpc_result_of(call->id, res));
        json_decref(res);
        return;
    }
    if (strcmp(event, "output") == 0 && call->progress_token != NULL && !call->cancelled) {
        json_t *msg = progress_message(payload);
        if (msg == NULL || !json_is_string(msg)) {
            json_decref(msg);
            return;
        }
        call->progress += 1;
        call_notify(call, json_pack("{s:s, s:s, s:{s:O, s:f, s:o}}", "jsonrpc", "2.0", "method",
                                    "notifications/progress", "params", "progressToken", call->progress_token,
                                    "progress", call->progress, "message", msg));
    } else if (strcmp(event, "status") == 0) {
        const char *st = json_string_value(json_object_get(payload, "status"));
        if (st != NULL && strcmp(st, "running") == 0)
            call_log(call, 0, "execution %s is running", call->exec_id);
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
    json_t *disabled = json_object_get(call->args, "disabled_rules"); /* checked by core (code policy) */
    if (disabled != NULL && !json_is_null(disabled))
        json_object_set(req, "disabled_rules", disabled);
    json_t *out = NULL;
    rb_err e = core_execute(call->ms->core, req, &out, err);
    json_decref(req);
    if (e != RB_OK) {
        json_t *res = tool_core_error(e, err);
        call_finish(call, rpc_result_of(call->id, res));
        json_decref(res);
        return;
    }
    const char *rid = json_string_value(json_object_get(out, "request_id"));
    snprintf(call->exec_id, sizeof(call->exec_id), "%s", rid ? rid : "");
    json_decref(out);
    call_log(call, 1, "execution %s queued in session %s", call->exec_id, session_id);
    e = core_watch_start(call->ms->core, call->exec_id, 1, on_exec_event, call, &call->watch, err);
    if (e != RB_OK) {
        call->watch = NULL;
        json_t *res = tool_core_error(e, err);
        call_finish(call, rpc_result_of(call->id, res));
        json_decref(res);
    }
}

static void session_ready(mcp_call *call, const char *session_id);

static void on_bound(void *data, rb_err e, const char *msg, json_t *body)
{
    mcp_call *call = data;
    call->op = NULL;
    if (e != RB_OK) {
        json_t *res = tool_core_error(e, msg);
        call_finish(call, rpc_result_of(call->id, res));
        json_decref(res);
        return;
    }
    call->replaced = json_is_true(json_object_get(body, "replaced"));
    if (call->replaced)
        call_log(call, 3, "the earlier sandbox of this MCP session had ended; a new one was started");
    const char *sid = json_string_value(json_object_get(body, "session_id"));
    char id[CORE_MCP_ID_LEN];
    snprintf(id, sizeof(id), "%s", sid ? sid : "");
    json_decref(body);
    if (call->cancelled) {
        call_finish(call, rpc_error(call->id, MCP_ERR_CANCELLED, "the request was cancelled", NULL));
        return;
    }
    session_ready(call, id);
}

static json_t *tool_execute(mcp_call *call)
{
    char err[RB_ERR_LEN];
    json_t *args = call->args;
    json_t *code = json_object_get(args, "code");
    if (!json_is_string(code))
        return tool_error("'code' is required and must be a string of Python (or bash) source");
    json_t *lang = json_object_get(args, "language");
    if (lang != NULL && !json_is_null(lang)) {
        const char *l = json_string_value(lang);
        if (l == NULL || (strcmp(l, "python") != 0 && strcmp(l, "bash") != 0))
            return tool_error("'language' must be \"python\" or \"bash\"");
        snprintf(call->language, sizeof(call->language), "%s", l);
    }
    json_t *t = json_object_get(args, "timeout");
    if (t != NULL && !json_is_null(t)) {
        if (!json_is_number(t) || !(json_number_value(t) > 0))
            return tool_error("'timeout' must be a number of seconds greater than 0");
        call->timeout = json_incref(t);
    }
    json_t *sid = json_object_get(args, "session_id");
    if (sid != NULL && !json_is_null(sid) && !(json_is_string(sid) && json_string_length(sid) == 0)) {
        if (!json_is_string(sid))
            return tool_error("'session_id' must be a string from create_session or list_sessions");
        execute_in(call, json_string_value(sid));
        return NULL;
    }
    char bound[CORE_MCP_ID_LEN];
    const char *language = call->language[0] ? call->language : "python";
    rb_err e = core_mcp_bound_session(call->ms->cm, call->rt->id, language, bound, on_bound, call, &call->op, err);
    if (e != RB_OK) {
        call->op = NULL;
        return tool_core_error(e, err);
    }
    if (bound[0] != '\0') {
        execute_in(call, bound);
    } else {
        call_log(call, 1, "starting a %s sandbox for this MCP session", language);
    }
    return NULL;
}

/* ---- files, packages and dependencies -------------------------------------------------- */

/* Decodes standard or URL-safe base64; padding is optional, whitespace is ignored and a
 * "data:...;base64," prefix is skipped (models often send one). Returns 0 with *out (heap, NUL
 * after *outlen bytes), or -1 with why saying what is wrong and where. */
static int base64_decode(const char *in, size_t n, char **out, size_t *outlen, char *why, size_t whylen)
{
    if (n >= 5 && strncmp(in, "data:", 5) == 0) {
        const char *comma = memchr(in, ',', n);
        if (comma != NULL && comma - in >= 12 && strncmp(comma - 7, ";base64", 7) == 0) {
            n -= (size_t)(comma + 1 - in);
            in = comma + 1;
        }
    }
    char *buf = xmalloc(n / 4 * 3 + 4);
    size_t len = 0, digits = 0, pad = 0;
    uint32_t acc = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)in[i];
        int v;
        if (ch == ' ' || ch == '\t' || ch == '\r' || ch == '\n')
            continue;
        if (ch == '=') {
            pad++;
            continue;
        }
        if (ch >= 'A' && ch <= 'Z')
            v = ch - 'A';
        else if (ch >= 'a' && ch <= 'z')
            v = ch - 'a' + 26;
        else if (ch >= '0' && ch <= '9')
            v = ch - '0' + 52;
        else if (ch == '+' || ch == '-')
            v = 62;
        else if (ch == '/' || ch == '_')
            v = 63;
        else
            v = -1;
        if (v < 0 || pad > 0) {
            if (v >= 0)
                snprintf(why, whylen, "'=' padding in the middle (offset %zu); padding may only end the text", i);
            else if (ch >= 0x21 && ch < 0x7f)
                snprintf(why, whylen, "the character '%c' at offset %zu is not in the base64 alphabet", ch, i);
            else
                snprintf(why, whylen, "the byte 0x%02x at offset %zu is not in the base64 alphabet", ch, i);
            free(buf);
            return -1;
        }
        acc = (acc << 6) | (uint32_t)v;
        if (++digits % 4 == 0) {
            buf[len++] = (char)(acc >> 16);
            buf[len++] = (char)(acc >> 8);
            buf[len++] = (char)acc;
            acc = 0;
        }
    }
    size_t rest = digits % 4;
    if (rest == 1 || pad > 2 || (pad > 0 && (rest + pad) % 4 != 0)) {
        snprintf(why, whylen, "its length is wrong (%zu base64 digits and %zu '='): it was probably cut short", digits,
                 pad);
        free(buf);
        return -1;
    }
    if (rest == 2) {
        buf[len++] = (char)(acc >> 4);
    } else if (rest == 3) {
        buf[len++] = (char)(acc >> 10);
        buf[len++] = (char)(acc >> 2);
    }
    buf[len] = '\0';
    *out = buf;
    *outlen = len;
    return 0;
}

/* The standard base64 of bytes[0..len) (heap). */
static char *base64_encode(const char *bytes, size_t len)
{
    char *out = xmalloc(h2o_base64_encode_capacity(len));
    h2o_base64_encode(out, bytes, len, 0);
    return out;
}

/* Whether s[0..n) is valid UTF-8 without NUL bytes (so it can travel as a JSON text). */
static int is_utf8_text(const char *s, size_t n)
{
    const unsigned char *p = (const unsigned char *)s, *end = p + n;
    while (p < end) {
        unsigned c = *p;
        size_t k;
        unsigned min;
        if (c == 0)
            return 0;
        if (c < 0x80) {
            p++;
            continue;
        } else if ((c & 0xe0) == 0xc0) {
            k = 1, min = 0x80, c &= 0x1f;
        } else if ((c & 0xf0) == 0xe0) {
            k = 2, min = 0x800, c &= 0x0f;
        } else if ((c & 0xf8) == 0xf0) {
            k = 3, min = 0x10000, c &= 0x07;
        } else {
            return 0;
        }
        if ((size_t)(end - p) <= k)
            return 0;
        for (size_t i = 1; i <= k; i++) {
            if ((p[i] & 0xc0) != 0x80)
                return 0;
            c = (c << 6) | (p[i] & 0x3f);
        }
        if (c < min || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff))
            return 0;
        p += k + 1;
    }
    return 1;
}

/* Whether a file of this content type may be shown as text (when its bytes are UTF-8). */
static int mime_textual(const char *mime)
{
    static const char *const types[] = {"text/", "application/json", "application/xml", "image/svg+xml",
                                        "application/octet-stream"};
    for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++)
        if (strncmp(mime, types[i], strlen(types[i])) == 0)
            return 1;
    return 0;
}

/* Whether an image type that MCP clients show to the model as image content. */
static int mime_raster(const char *mime)
{
    return strcmp(mime, "image/png") == 0 || strcmp(mime, "image/jpeg") == 0 || strcmp(mime, "image/gif") == 0 ||
           strcmp(mime, "image/webp") == 0;
}

/* path relative to /workspace, as used in resource URIs ("/workspace/a/b" -> "a/b"). */
static const char *workspace_relative(const char *path)
{
    if (strncmp(path, "/workspace/", 11) == 0)
        path += 11;
    while (path[0] == '.' && path[1] == '/')
        path += 2;
    while (*path == '/')
        path++;
    return path;
}

/* runbox://sessions/{session_id}/files/{path} (heap); bytes outside the URI's unreserved set
 * (except '/') are percent-encoded. */
static char *file_uri(const char *session_id, const char *path)
{
    static const char hex[] = "0123456789ABCDEF";
    const char *rel = workspace_relative(path);
    size_t n = strlen(rel);
    char *enc = xmalloc(n * 3 + 1), *o = enc;
    for (const unsigned char *p = (const unsigned char *)rel; *p; p++) {
        if (isalnum(*p) || *p == '-' || *p == '.' || *p == '_' || *p == '~' || *p == '/') {
            *o++ = (char)*p;
        } else {
            *o++ = '%';
            *o++ = hex[*p >> 4];
            *o++ = hex[*p & 15];
        }
    }
    *o = '\0';
    char *uri = xasprintf("runbox://sessions/%s/files/%s", session_id, enc);
    free(enc);
    return uri;
}

static int hex_value(char ch)
{
    if (ch >= '0' && ch <= '9')
        return ch - '0';
    if (ch >= 'a' && ch <= 'f')
        return ch - 'a' + 10;
    if (ch >= 'A' && ch <= 'F')
        return ch - 'A' + 10;
    return -1;
}

/* Percent-decodes s (heap result), or NULL for a bad escape or an encoded NUL. */
static char *percent_decode(const char *s)
{
    char *out = xmalloc(strlen(s) + 1), *o = out;
    for (; *s; s++) {
        if (*s != '%') {
            *o++ = *s;
            continue;
        }
        int hi = hex_value(s[1]), lo = hi < 0 ? -1 : hex_value(s[2]);
        if (lo < 0 || (hi == 0 && lo == 0)) {
            free(out);
            return NULL;
        }
        *o++ = (char)(hi * 16 + lo);
        s += 2;
    }
    *o = '\0';
    return out;
}

static json_t *resource_text(const char *uri, json_t *obj);

/* A JSON-RPC error for a failed file resource read: unknown session or file -> -32002, a bad or
 * refused path or a file too big -> -32602, the rest -> -32603. */
static json_t *resource_error(json_t *id, rb_err e, const char *msg, const char *uri)
{
    int code = e == RB_ENOTFOUND                                           ? MCP_ERR_RESOURCE
               : (e == RB_EINVAL || e == RB_EFORBIDDEN || e == RB_ETOOBIG) ? MCP_ERR_PARAMS
                                                                           : MCP_ERR_INTERNAL;
    char text[RB_ERR_LEN + 32];
    snprintf(text, sizeof(text), "%s: %s", e == RB_ENOTFOUND ? "Resource not found" : rb_strerror(e),
             msg && msg[0] ? msg : rb_strerror(e));
    return rpc_error(id, code, text, json_pack("{s:s}", "uri", uri ? uri : ""));
}

/* Finishes a file call with core's error e. */
static void file_call_fail(mcp_call *call, rb_err e, const char *msg)
{
    if (call->resource) {
        call_finish(call, resource_error(call->id, e, msg, call->uri));
        return;
    }
    json_t *res = tool_core_error(e, msg);
    call_finish(call, rpc_result_of(call->id, res));
    json_decref(res);
}

/* Answers of upload_file, list_files, install_dependencies, get_packages and the listing
 * resource (body: core's JSON answer). Files get their resource URI beside them. */
static void on_file_json(void *data, rb_err e, const char *msg, json_t *body)
{
    mcp_call *call = data;
    call->op = NULL;
    if (e != RB_OK) {
        json_decref(body);
        file_call_fail(call, e, msg);
        return;
    }
    const char *sid = json_string_value(json_object_get(body, "session_id"));
    json_t *files = json_object_get(body, "files");
    size_t i;
    json_t *f;
    json_array_foreach(files, i, f)
    {
        const char *path = json_string_value(json_object_get(f, "path"));
        const char *type = json_string_value(json_object_get(f, "type"));
        if (sid != NULL && path != NULL && (type == NULL || strcmp(type, "file") == 0)) {
            char *uri = file_uri(sid, path);
            json_object_set_new(f, "uri", json_string(uri));
            free(uri);
        }
    }
    const char *path = json_string_value(json_object_get(body, "path"));
    if (strcmp(call->tool, "upload_file") == 0 && sid != NULL && path != NULL) {
        char *uri = file_uri(sid, path);
        json_object_set_new(body, "uri", json_string(uri));
        free(uri);
    }
    if (call->resource) {
        json_t *res = resource_text(call->uri, body);
        json_decref(body);
        call_finish(call, rpc_result(call->id, res));
        return;
    }
    json_t *res = tool_object(body);
    json_decref(body);
    call_finish(call, rpc_result_of(call->id, res));
    json_decref(res);
}

/* Answers of download_file and of a file resource read (bytes borrowed). */
static void on_file_bytes(void *data, rb_err e, const char *msg, const char *bytes, size_t len,
                          const char *content_type, const char *name)
{
    mcp_call *call = data;
    call->op = NULL;
    if (e != RB_OK) {
        file_call_fail(call, e, msg);
        return;
    }
    if (len > MCP_FILE_MAX) {
        char text[RB_ERR_LEN];
        snprintf(text, sizeof(text),
                 "'%.200s' is %zu bytes; MCP returns files of at most %u bytes: read a part of it with execute_code, "
                 "or download it over REST (GET /sessions/%s/files/download?path=...)",
                 call->path, len, (unsigned)MCP_FILE_MAX, call->session_id);
        file_call_fail(call, RB_ETOOBIG, text);
        return;
    }
    const char *mime = content_type ? content_type : "application/octet-stream";
    int text = mime_textual(mime) && is_utf8_text(bytes, len);
    if (text && strcmp(mime, "application/octet-stream") == 0)
        mime = "text/plain; charset=utf-8";
    char *uri = file_uri(call->session_id, call->path);
    char *b64 = text ? NULL : base64_encode(bytes, len);
    if (call->resource) {
        json_t *item = json_pack("{s:s, s:s}", "uri", call->uri, "mimeType", mime);
        json_object_set_new(item, text ? "text" : "blob", text ? json_stringn(bytes, len) : json_string(b64));
        call_finish(call, rpc_result(call->id, json_pack("{s:[o]}", "contents", item)));
        free(b64);
        free(uri);
        return;
    }
    /* Small UTF-8 text comes back as text the model reads directly; images as image content
     * clients show to the model; anything else as an embedded resource (base64 blob). */
    json_t *block;
    const char *encoding = "base64";
    if (text && len <= MCP_FILE_TEXT_MAX) {
        block = json_pack("{s:s, s:s%}", "type", "text", "text", bytes, len);
        encoding = "utf-8";
    } else {
        if (b64 == NULL)
            b64 = base64_encode(bytes, len);
        if (mime_raster(mime))
            block = json_pack("{s:s, s:s, s:s}", "type", "image", "data", b64, "mimeType", mime);
        else
            block = json_pack("{s:s, s:{s:s, s:s, s:s}}", "type", "resource", "resource", "uri", uri, "mimeType", mime,
                              "blob", b64);
    }
    json_t *sc = json_pack("{s:s, s:s, s:s, s:s, s:I, s:s, s:s}", "session_id", call->session_id, "path",
                           workspace_relative(call->path), "name", name ? name : "", "mime_type", mime, "size",
                           (json_int_t)len, "encoding", encoding, "uri", uri);
    json_t *res = json_pack("{s:[o], s:o, s:b}", "content", block, "structuredContent", sc, "isError", 0);
    call_finish(call, rpc_result_of(call->id, res));
    json_decref(res);
    free(b64);
    free(uri);
}

/* Starts the work of a session-bound tool in session_id (given, or this connection's sandbox
 * once bound). The call is answered later, or now (and freed) when core refuses at once. */
static void session_ready(mcp_call *call, const char *session_id)
{
    if (strcmp(call->tool, "execute_code") == 0) {
        execute_in(call, session_id);
        return;
    }
    char err[RB_ERR_LEN];
    rb_core *core = call->ms->core;
    snprintf(call->session_id, sizeof(call->session_id), "%s", session_id);
    const char *t = call->tool;
    rb_err e;
    if (strcmp(t, "upload_file") == 0) {
        e = core_file_upload(core, session_id, call->path, call->upload ? call->upload : "", call->upload_len,
                             on_file_json, call, &call->op, err);
    } else if (strcmp(t, "download_file") == 0) {
        e = core_file_download(core, session_id, call->path, on_file_bytes, call, &call->op, err);
    } else if (strcmp(t, "list_files") == 0) {
        e = core_file_list(core, session_id, on_file_json, call, &call->op, err);
    } else {
        json_t *body = json_pack("{s:O}", "dependencies", json_object_get(call->args, "dependencies"));
        e = core_dependencies_install(core, session_id, body, on_file_json, call, &call->op, err);
        json_decref(body);
    }
    /* On success call may already be answered and freed (a core that answers at once). */
    if (e != RB_OK) {
        call->op = NULL;
        file_call_fail(call, e, err);
    }
}

/* Runs a session-bound tool in the session named by session_id, or without one in this
 * connection's own sandbox of language (created on first use). Returns a tool result for a
 * bad session_id or a refusal, NULL when the call answers later. */
static json_t *with_session(mcp_call *call, const char *language)
{
    char err[RB_ERR_LEN];
    json_t *sid = json_object_get(call->args, "session_id");
    if (sid != NULL && !json_is_null(sid) && !(json_is_string(sid) && json_string_length(sid) == 0)) {
        if (!json_is_string(sid))
            return tool_error("'session_id' must be a string from create_session or list_sessions");
        session_ready(call, json_string_value(sid));
        return NULL;
    }
    char bound[CORE_MCP_ID_LEN];
    rb_err e = core_mcp_bound_session(call->ms->cm, call->rt->id, language, bound, on_bound, call, &call->op, err);
    if (e != RB_OK) {
        call->op = NULL;
        return tool_core_error(e, err);
    }
    if (bound[0] != '\0') {
        session_ready(call, bound);
    } else {
        call_log(call, 1, "starting a %s sandbox for this MCP session", language);
    }
    return NULL;
}

/* A required string argument that names a path; NULL with *res set to a tool error otherwise. */
static const char *arg_path(mcp_call *call, const char *name, json_t **res)
{
    json_t *v = json_object_get(call->args, name);
    if (!json_is_string(v) || json_string_length(v) == 0) {
        *res = tool_error("'%s' is required: a path under /workspace such as data.csv or out/plot.png", name);
        return NULL;
    }
    if (strlen(json_string_value(v)) != json_string_length(v)) {
        *res = tool_error("'%s' must not contain NUL characters", name);
        return NULL;
    }
    return json_string_value(v);
}

/* upload_file, download_file, list_files, install_dependencies, get_packages; returns the tool
 * result now, or NULL when the call answers later. */
static json_t *tool_files(mcp_call *call)
{
    char err[RB_ERR_LEN];
    const char *t = call->tool;
    json_t *res = NULL;
    const char *language = call->bound_language[0] ? call->bound_language : "python";
    if (strcmp(t, "get_packages") == 0) {
        rb_err e = core_packages(call->ms->core, on_file_json, call, &call->op, err);
        if (e != RB_OK) {
            call->op = NULL;
            return tool_core_error(e, err);
        }
        return NULL;
    }
    if (strcmp(t, "install_dependencies") == 0) {
        json_t *deps = json_object_get(call->args, "dependencies");
        if (!json_is_array(deps) || json_array_size(deps) == 0)
            return tool_error("'dependencies' is required: a list of pip requirements such as [\"requests\", "
                              "\"tabulate==0.9.0\"]");
        return with_session(call, "python");
    }
    if (strcmp(t, "list_files") == 0)
        return with_session(call, language);
    const char *path = arg_path(call, strcmp(t, "upload_file") == 0 ? "filename" : "src_path", &res);
    if (path == NULL)
        return res;
    call->path = xstrdup(path);
    if (strcmp(t, "upload_file") == 0) {
        json_t *b64 = json_object_get(call->args, "content_base64");
        json_t *text = json_object_get(call->args, "content");
        if (json_is_null(b64))
            b64 = NULL;
        if (json_is_null(text))
            text = NULL;
        if ((b64 == NULL) == (text == NULL))
            return tool_error("give the file's bytes as 'content_base64' (base64 text), or text as 'content' (exactly "
                              "one of the two)");
        if (b64 != NULL) {
            char why[160];
            if (!json_is_string(b64))
                return tool_error("'content_base64' must be a string of base64 text");
            if (base64_decode(json_string_value(b64), json_string_length(b64), &call->upload, &call->upload_len, why,
                              sizeof(why)) != 0)
                return tool_error("'content_base64' is not valid base64: %s. Encode the file's bytes with standard "
                                  "base64 (for example base64.b64encode(data).decode() in Python)",
                                  why);
        } else {
            if (!json_is_string(text))
                return tool_error("'content' must be a string (the text of the file)");
            call->upload_len = json_string_length(text);
            call->upload = xmalloc(call->upload_len + 1);
            memcpy(call->upload, json_string_value(text), call->upload_len + 1);
        }
        if (call->upload_len > call->ms->cfg->max_upload)
            return tool_error("the file is %zu bytes; the upload limit is %zu bytes (max-upload)", call->upload_len,
                              call->ms->cfg->max_upload);
    }
    return with_session(call, language);
}

/* resources/read of runbox://sessions/{session_id}/files[/{path}]: starts the read and returns
 * NULL (answered later), or returns an error response; uri must have the files form (see
 * is_file_uri). */
static json_t *read_file_resource(mcp_rt *rt, mcp_post *post, json_t *id, const char *uri)
{
    char err[RB_ERR_LEN];
    const char *sid = uri + 18, *slash = strchr(sid, '/');
    const char *rest = slash + 6; /* after "/files" */
    if (slash - sid >= CORE_MCP_ID_LEN)
        return resource_error(id, RB_ENOTFOUND, "no such session", uri);
    char *path = NULL;
    if (*rest == '/' && rest[1] != '\0') {
        path = percent_decode(rest + 1);
        if (path == NULL)
            return resource_error(id, RB_EINVAL, "the file path in the URI has a bad %-escape or an encoded NUL", uri);
    }
    mcp_call *call = call_new(rt, post, id);
    call->resource = 1;
    call->path = path;
    call->uri = xstrdup(uri);
    snprintf(call->session_id, sizeof(call->session_id), "%.*s", (int)(slash - sid), sid);
    snprintf(call->tool, sizeof(call->tool), "%s", path ? "download_file" : "list_files");
    post->outstanding++;
    rb_err e = path ? core_file_download(rt->ms->core, call->session_id, path, on_file_bytes, call, &call->op, err)
                    : core_file_list(rt->ms->core, call->session_id, on_file_json, call, &call->op, err);
    if (e != RB_OK) {
        call->op = NULL;
        file_call_fail(call, e, err);
    }
    return NULL;
}

/* Whether uri is runbox://sessions/{session_id}/files or .../files/{path}. */
static int is_file_uri(const char *uri)
{
    if (strncmp(uri, "runbox://sessions/", 18) != 0)
        return 0;
    const char *slash = strchr(uri + 18, '/');
    return slash != NULL && slash > uri + 18 && strncmp(slash, "/files", 6) == 0 && (slash[6] == '\0' || slash[6] == '/');
}

/* ---- the other tools ------------------------------------------------------------------- */

static void on_session_created(void *data, rb_err e, const char *msg, json_t *body)
{
    mcp_call *call = data;
    call->op = NULL;
    json_t *res = e == RB_OK ? tool_object(body) : tool_core_error(e, msg);
    json_decref(body);
    call_finish(call, rpc_result_of(call->id, res));
    json_decref(res);
}

static const char *arg_session_id(json_t *args)
{
    const char *sid = json_string_value(json_object_get(args, "session_id"));
    return sid != NULL && sid[0] != '\0' ? sid : NULL;
}

/* Runs a tool; returns the tool result now, or NULL when the call answers later. */
static json_t *run_tool(mcp_call *call)
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
        return tool_files(call);
    if (strcmp(t, "create_session") == 0) {
        json_t *opts = json_object();
        json_t *v;
        if ((v = json_object_get(call->args, "language")) != NULL && !json_is_null(v))
            json_object_set(opts, "language", v);
        if ((v = json_object_get(call->args, "execution_options")) != NULL && !json_is_null(v))
            json_object_set(opts, "execution_options", v);
        if ((v = json_object_get(call->args, "dependencies")) != NULL && !json_is_null(v))
            json_object_set(opts, "dependencies", v);
        e = core_session_create(core, opts, on_session_created, call, &call->op, err);
        json_decref(opts);
        if (e != RB_OK) {
            call->op = NULL;
            return tool_core_error(e, err);
        }
        call_log(call, 1, "starting a sandbox");
        return NULL;
    }
    if (strcmp(t, "list_sessions") == 0) {
        e = core_session_list(core, &out, err);
    } else if (strcmp(t, "get_health") == 0) {
        out = core_health(core);
        e = out != NULL ? RB_OK : rb_fail(RB_EINTERNAL, err, "health is not available");
    } else {
        const char *sid = arg_session_id(call->args);
        if (sid == NULL)
            return tool_error("'session_id' is required (a string from create_session or list_sessions)");
        if (strcmp(t, "get_session_info") == 0)
            e = core_session_get(core, sid, &out, err);
        else
            e = core_session_delete(core, sid, &out, err);
    }
    json_t *res = e == RB_OK ? tool_object(out) : tool_core_error(e, err);
    json_decref(out);
    return res;
}

/* ---- resources ------------------------------------------------------------------------- */

static json_t *resource_text(const char *uri, json_t *obj)
{
    char *text = json_dumps(obj, JSON_INDENT(2));
    json_t *r = json_pack("{s:[{s:s, s:s, s:s}]}", "contents", "uri", uri, "mimeType", "application/json", "text",
                          text ? text : "null");
    free(text);
    return r;
}

/* resources/read; returns the result or NULL with *error set (a JSON-RPC error object). */
static json_t *read_resource(mcp_server *ms, const char *uri, json_t **error)
{
    char err[RB_ERR_LEN];
    json_t *out = NULL, *res = NULL;
    rb_err e = RB_ENOTFOUND;
    const char *sid = NULL;
    if (strcmp(uri, "runbox://sessions") == 0 || strcmp(uri, "runbox://sessions/") == 0 ||
        strcmp(uri, "sessions://") == 0 || strcmp(uri, "sessions://list") == 0) {
        e = core_session_list(ms->core, &out, err);
    } else if (strncmp(uri, "runbox://sessions/", 18) == 0) {
        sid = uri + 18;
    } else if (strncmp(uri, "session://", 10) == 0) {
        sid = uri + 10;
    } else if (strncmp(uri, "runbox://executions/", 20) == 0) {
        const char *p = uri + 20, *slash = strchr(p, '/');
        if (slash != NULL && strncmp(slash, "/files/", 7) == 0 && slash - p < CORE_MCP_ID_LEN) {
            char rid[CORE_MCP_ID_LEN];
            snprintf(rid, sizeof(rid), "%.*s", (int)(slash - p), p);
            char *end;
            unsigned long idx = strtoul(slash + 7, &end, 10);
            if (*end == '\0' && slash[7] != '\0' && core_execution_results(ms->core, rid, &out, err) == RB_OK) {
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
        e = core_session_get(ms->core, sid, &out, err);
    }
    if (res == NULL && e == RB_OK)
        res = resource_text(uri, out);
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
    "\"description\":\"Run Python (default) or bash code in a persistent sandbox, like a Jupyter cell: variables, "
    "imports, files and the working directory persist between calls. Returns stdout, stderr, the value of the last "
    "expression, the traceback of an error, and matplotlib plots as images. Without session_id the code runs in a "
    "private sandbox of this MCP connection, created on first use and kept until the connection ends; pass a "
    "session_id from create_session to use a specific session (also shared with the REST API). The sandbox has no "
    "network access. Long outputs are truncated. A timeout interrupts the code (state is kept).\","
    "\"inputSchema\":{\"type\":\"object\",\"properties\":{"
    "\"code\":{\"type\":\"string\",\"description\":\"The source code to run. In Python the value of a final "
    "expression is returned as the result.\"},"
    "\"language\":{\"type\":\"string\",\"enum\":[\"python\",\"bash\"],\"default\":\"python\","
    "\"description\":\"python or bash; must match the session's language when session_id is given\"},"
    "\"session_id\":{\"type\":\"string\",\"description\":\"Optional session to run in (from create_session or "
    "list_sessions); omit to use this connection's own sandbox\"},"
    "\"timeout\":{\"type\":\"number\",\"exclusiveMinimum\":0,\"description\":\"Seconds before the code is "
    "interrupted (default: the session's timeout)\"},"
    "\"disabled_rules\":{\"type\":\"array\",\"items\":{\"type\":\"string\"},\"description\":\"Code policy "
    "rules to turn off for this call (e.g. [\\\"import:os\\\"], or [\\\"all\\\"]), when the server's optional code "
    "policy refused the code with PolicyViolation and the operator lets callers turn that rule off\"}},"
    "\"required\":[\"code\"]},"
    "\"outputSchema\":" RESULT_SCHEMA ","
    "\"annotations\":{\"title\":\"Execute code\",\"readOnlyHint\":false,\"destructiveHint\":false,"
    "\"idempotentHint\":false,\"openWorldHint\":false}}",
    "{\"name\":\"create_session\",\"title\":\"Create session\","
    "\"description\":\"Create a new persistent sandbox session and return it (with its session_id). Use it to "
    "keep several independent interpreters, to choose limits or to preinstall Python packages (dependencies); "
    "pass the session_id to execute_code and the file tools.\","
    "\"inputSchema\":{\"type\":\"object\",\"properties\":{"
    "\"language\":{\"type\":\"string\",\"enum\":[\"python\",\"bash\"],\"default\":\"python\"},"
    "\"execution_options\":{\"type\":\"object\",\"description\":\"Optional limits\",\"properties\":{"
    "\"timeout\":{\"type\":\"number\",\"description\":\"default seconds per execution\"},"
    "\"memory_limit\":{\"type\":\"string\",\"description\":\"e.g. 512m or 1g\"},"
    "\"cpu_limit\":{\"type\":\"number\",\"description\":\"CPUs, e.g. 1 or 0.5\"},"
    "\"environment_variables\":{\"type\":\"object\",\"additionalProperties\":{\"type\":\"string\"}}}},"
    "\"dependencies\":{\"type\":\"array\",\"items\":{\"type\":\"string\"},\"description\":\"Python "
    "packages to pip install before the session is ready, e.g. [\\\"requests==2.32.3\\\"] (python only)\"}}},"
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
    "appear here. Without session_id it lists this connection's own sandbox.\","
    "\"inputSchema\":{\"type\":\"object\",\"properties\":{\"session_id\":{\"type\":\"string\",\"description\":"
    "\"Session to list; omit for this connection's own sandbox\"}}},"
    "\"outputSchema\":{\"type\":\"object\",\"properties\":{\"session_id\":{\"type\":\"string\"},\"files\":{\"type\":"
    "\"array\",\"items\":{\"type\":\"object\",\"properties\":{\"path\":{\"type\":\"string\"},\"type\":{\"type\":"
    "\"string\"},\"size\":{\"type\":\"integer\"},\"modified\":{\"type\":\"string\"},\"uri\":{\"type\":\"string\"}},"
    "\"required\":[\"path\"]}},\"truncated\":{\"type\":\"boolean\"}},\"required\":[\"session_id\",\"files\"]},"
    "\"annotations\":{\"readOnlyHint\":true,\"openWorldHint\":false}}",
    "{\"name\":\"get_packages\",\"title\":\"List preinstalled packages\","
    "\"description\":\"List the Python packages preinstalled in the sandbox image (name and version), so you know "
    "what can be imported without installing anything.\","
    "\"inputSchema\":{\"type\":\"object\",\"properties\":{}},"
    "\"outputSchema\":{\"type\":\"object\",\"properties\":{\"image\":{\"type\":\"string\"},\"image_id\":{\"type\":"
    "\"string\"},\"packages\":{\"type\":\"array\",\"items\":{\"type\":\"object\",\"properties\":{\"name\":{\"type\":"
    "\"string\"},\"version\":{\"type\":\"string\"}},\"required\":[\"name\"]}}},\"required\":[\"packages\"]},"
    "\"annotations\":{\"readOnlyHint\":true,\"openWorldHint\":false}}",
    "{\"name\":\"install_dependencies\",\"title\":\"Install Python packages\","
    "\"description\":\"Install Python packages with pip into a python session, e.g. [\\\"requests\\\", "
    "\\\"tabulate==0.9.0\\\"]; they can be imported right after. Each item is a package name with at most one "
    "version specifier (==, >=, <=, ~=, !=, >, <); no URLs, options or extras. The server's policy may forbid some "
    "packages (the error names the package and the rule). Code in the sandbox still has no network. Without "
    "session_id it installs into this connection's own sandbox. Call get_packages first: many packages are already "
    "there.\","
    "\"inputSchema\":{\"type\":\"object\",\"properties\":{"
    "\"session_id\":{\"type\":\"string\",\"description\":\"Python session to install into; omit for this "
    "connection's own sandbox\"},"
    "\"dependencies\":{\"type\":\"array\",\"minItems\":1,\"items\":{\"type\":\"string\"},\"description\":\"pip "
    "requirements such as requests or pandas>=2.0\"}},\"required\":[\"dependencies\"]},"
    "\"outputSchema\":{\"type\":\"object\",\"properties\":{\"session_id\":{\"type\":\"string\"},\"dependencies\":{"
    "\"type\":\"array\",\"items\":{\"type\":\"string\"}},\"cached\":{\"type\":\"boolean\",\"description\":\"served "
    "from the server's cache without network\"},\"site_packages\":{\"type\":\"string\"},\"duration_ms\":{\"type\":"
    "\"integer\"}},\"required\":[\"session_id\",\"dependencies\"]},"
    "\"annotations\":{\"readOnlyHint\":false,\"destructiveHint\":false,\"idempotentHint\":true,"
    "\"openWorldHint\":true}}",
};

static const char instructions[] =
    "runbox runs code in persistent sandboxes. Call execute_code with Python code; variables and imports persist "
    "between calls in this connection's sandbox. Print values or end with an expression to see them; plots made "
    "with matplotlib come back as images. Use create_session/close_session to manage separate sessions. Move files in "
    "and out of the sandbox's /workspace with upload_file, list_files and download_file; get_packages lists what is "
    "installed and install_dependencies adds Python packages.";

/* ---- dispatch -------------------------------------------------------------------------- */

static int has_tool(mcp_server *ms, const char *name)
{
    size_t i;
    json_t *t;
    json_array_foreach(ms->tools, i, t)
    {
        if (strcmp(json_string_value(json_object_get(t, "name")), name) == 0)
            return 1;
    }
    return 0;
}

/* Handles one request of a live session. Returns the response now (new reference) or NULL when
 * a call answers later (then post->outstanding counts it). */
static json_t *dispatch(mcp_rt *rt, mcp_post *post, json_t *rec, json_t *id, const char *method, json_t *params)
{
    mcp_server *ms = rt->ms;
    if (strcmp(method, "ping") == 0)
        return rpc_result(id, json_object());
    if (strcmp(method, "initialize") == 0)
        return rpc_error(id, MCP_ERR_INVALID_REQUEST,
                         "initialize must be sent alone, without Mcp-Session-Id, to start a new MCP session", NULL);
    if (strcmp(method, "tools/list") == 0) {
        json_t *r = rpc_result(id, json_pack("{s:O}", "tools", ms->tools));
        return r;
    }
    if (strcmp(method, "resources/list") == 0 || strcmp(method, "resources/templates/list") == 0) {
        const char *text = strcmp(method, "resources/list") == 0 ? resources_json : templates_json;
        return rpc_result(id, json_loads(text, 0, NULL));
    }
    if (strcmp(method, "resources/read") == 0) {
        const char *uri = json_string_value(json_object_get(params, "uri"));
        if (uri == NULL)
            return rpc_error(id, MCP_ERR_PARAMS, "resources/read needs params.uri (a string)", NULL);
        if (is_file_uri(uri))
            return read_file_resource(rt, post, id, uri);
        json_t *error = NULL;
        json_t *res = read_resource(ms, uri, &error);
        if (res == NULL)
            return json_pack("{s:s, s:O, s:o}", "jsonrpc", "2.0", "id", id, "error", error);
        return rpc_result(id, res);
    }
    if (strcmp(method, "logging/setLevel") == 0) {
        const char *level = json_string_value(json_object_get(params, "level"));
        size_t i = 0;
        while (level != NULL && i < NLEVELS && strcmp(levels[i], level) != 0)
            i++;
        if (level == NULL || i == NLEVELS)
            return rpc_error(id, MCP_ERR_PARAMS,
                             "params.level must be one of debug, info, notice, warning, error, critical, alert, "
                             "emergency",
                             NULL);
        char err[RB_ERR_LEN];
        json_t *v = json_string(level);
        rb_err e = core_mcp_session_set(ms->cm, rt->id, "log_level", v, err);
        json_decref(v);
        if (e != RB_OK)
            return rpc_error(id, MCP_ERR_INTERNAL, err, NULL);
        return rpc_result(id, json_object());
    }
    if (strcmp(method, "tools/call") == 0) {
        const char *name = json_string_value(json_object_get(params, "name"));
        json_t *args = json_object_get(params, "arguments");
        if (name == NULL)
            return rpc_error(id, MCP_ERR_PARAMS, "tools/call needs params.name (a string)", NULL);
        if (args != NULL && !json_is_null(args) && !json_is_object(args))
            return rpc_error(id, MCP_ERR_PARAMS, "tools/call: params.arguments must be an object", NULL);
        if (!has_tool(ms, name)) {
            char msg[160];
            snprintf(msg, sizeof(msg), "Unknown tool: %.64s (see tools/list)", name);
            return rpc_error(id, MCP_ERR_PARAMS, msg, NULL);
        }
        mcp_call *call = call_new(rt, post, id);
        snprintf(call->tool, sizeof(call->tool), "%s", name);
        call->args = json_is_object(args) ? json_incref(args) : json_object();
        json_t *tok = json_object_get(json_object_get(params, "_meta"), "progressToken");
        if (json_is_string(tok) || json_is_integer(tok))
            call->progress_token = json_incref(tok);
        const char *lvl = json_string_value(json_object_get(rec, "log_level"));
        call->log_min = 3;
        for (size_t i = 0; lvl != NULL && i < NLEVELS; i++)
            if (strcmp(levels[i], lvl) == 0)
                call->log_min = (int)i;
        /* Without session_id, file tools use the sandbox execute_code has been using. */
        json_t *bound = json_object_get(rec, "bound");
        const char *bl = json_object_get(bound, "python") == NULL && json_object_get(bound, "bash") != NULL ? "bash"
                                                                                                            : "python";
        snprintf(call->bound_language, sizeof(call->bound_language), "%s", bl);
        post->outstanding++;
        json_t *res = run_tool(call);
        if (res != NULL) {
            call_finish(call, rpc_result_of(id, res));
            json_decref(res);
        }
        return NULL;
    }
    char msg[160];
    snprintf(msg, sizeof(msg), "Method not found: %.64s", method);
    return rpc_error(id, MCP_ERR_METHOD, msg, NULL);
}

static void notification(mcp_rt *rt, const char *method, json_t *params)
{
    if (strcmp(method, "notifications/cancelled") != 0)
        return;
    json_t *rid = json_object_get(params, "requestId");
    if (rid == NULL)
        return;
    for (mcp_call *call = rt->calls; call != NULL; call = call->next) {
        if (!json_equal(call->id, rid) || call->cancelled)
            continue;
        call->cancelled = 1;
        if (call->exec_id[0] != '\0') {
            char err[RB_ERR_LEN];
            json_t *out = NULL;
            if (core_execution_cancel(rt->ms->core, call->exec_id, &out, err) != RB_OK)
                rb_debug("mcp %s: cancel of %s: %s", rt->id, call->exec_id, err);
            json_decref(out);
        } else if (call->op != NULL) {
            /* Still waiting for a sandbox: answer now; the sandbox stays for later calls. */
            call_finish(call, rpc_error(call->id, MCP_ERR_CANCELLED, "the request was cancelled", NULL));
        }
        return;
    }
}

/* Validates a single message: 0 and *kind set ('r' request, 'n' notification, 'a' answer from
 * the client), or -1 with *error (a JSON-RPC error response) set. */
static int classify(json_t *msg, char *kind, json_t **error)
{
    if (!json_is_object(msg)) {
        *error = rpc_error(NULL, MCP_ERR_INVALID_REQUEST, "a JSON-RPC message must be an object", NULL);
        return -1;
    }
    json_t *id = json_object_get(msg, "id");
    const char *jv = json_string_value(json_object_get(msg, "jsonrpc"));
    json_t *valid_id = (json_is_string(id) || json_is_integer(id)) ? id : NULL;
    if (jv == NULL || strcmp(jv, "2.0") != 0) {
        *error = rpc_error(valid_id, MCP_ERR_INVALID_REQUEST, "\"jsonrpc\" must be \"2.0\"", NULL);
        return -1;
    }
    json_t *method = json_object_get(msg, "method");
    if (method == NULL && valid_id != NULL &&
        (json_object_get(msg, "result") != NULL || json_object_get(msg, "error") != NULL)) {
        *kind = 'a';
        return 0;
    }
    if (!json_is_string(method)) {
        *error = rpc_error(valid_id, MCP_ERR_INVALID_REQUEST, "\"method\" must be a string", NULL);
        return -1;
    }
    if (id != NULL && valid_id == NULL) {
        *error = rpc_error(NULL, MCP_ERR_INVALID_REQUEST, "\"id\" must be a string or an integer", NULL);
        return -1;
    }
    json_t *params = json_object_get(msg, "params");
    if (params != NULL && !json_is_object(params)) {
        *error = rpc_error(valid_id, MCP_ERR_PARAMS, "\"params\" must be an object", NULL);
        return -1;
    }
    *kind = id != NULL ? 'r' : 'n';
    return 0;
}

/* ---- HTTP handlers --------------------------------------------------------------------- */

static mcp_server *server_of(http_call *hc)
{
    return http__mcp(hc->server);
}

/* Common checks: Origin. Returns 0 to go on, 1 when the request was answered. */
static int check_origin(http_call *hc)
{
    size_t len = 0;
    const char *origin = header(hc->req, "origin", &len);
    if (!origin_allowed(hc->cfg, origin, len)) {
        reject(hc->req, 403, NULL, MCP_ERR_INVALID_REQUEST,
               "Forbidden: this Origin may not use the MCP endpoint (allow it with --allowed-origins)");
        return 1;
    }
    return 0;
}

/* Looks up the session named by Mcp-Session-Id. Returns the runtime, or NULL when the request
 * was answered (400 without the header, 404 unknown or ended). *rec is a new reference. */
static mcp_rt *session_of(http_call *hc, json_t **rec)
{
    mcp_server *ms = server_of(hc);
    size_t len = 0;
    const char *sid = header(hc->req, "mcp-session-id", &len);
    *rec = NULL;
    if (sid == NULL || len == 0) {
        reject(hc->req, 400, NULL, MCP_ERR_INVALID_REQUEST,
               "Bad Request: the Mcp-Session-Id header is required; send initialize first to get one");
        return NULL;
    }
    char err[RB_ERR_LEN];
    if (core_mcp_session_touch(ms->cm, sid, rec, err) != RB_OK) {
        reject(hc->req, 404, NULL, MCP_ERR_INVALID_REQUEST, err);
        return NULL;
    }
    return rt_get(ms, sid, *rec);
}

static int version_supported(const char *v)
{
    for (size_t i = 0; i < NVERSIONS; i++)
        if (strcmp(versions[i], v) == 0)
            return 1;
    return 0;
}

static int handle_initialize(http_call *hc, json_t *msg)
{
    mcp_server *ms = server_of(hc);
    json_t *id = json_object_get(msg, "id");
    json_t *params = json_object_get(msg, "params");
    const char *asked = json_string_value(json_object_get(params, "protocolVersion"));
    if (id == NULL)
        return reject(hc->req, 400, NULL, MCP_ERR_INVALID_REQUEST, "initialize must be a request (with an id)");
    if (asked == NULL)
        return reject(hc->req, 400, id, MCP_ERR_PARAMS, "initialize needs params.protocolVersion (a string)");
    const char *v = version_supported(asked) ? asked : versions[0];
    json_t *info = json_pack("{s:s, s:O?, s:O?}", "protocol_version", v, "client_info",
                             json_object_get(params, "clientInfo"), "client_capabilities",
                             json_object_get(params, "capabilities"));
    json_t *rec = NULL;
    char err[RB_ERR_LEN];
    rb_err e = core_mcp_session_create(ms->cm, info, &rec, err);
    json_decref(info);
    if (e != RB_OK)
        return reject(hc->req, 500, id, MCP_ERR_INTERNAL, err);
    const char *sid = json_string_value(json_object_get(rec, "mcp_session_id"));
    rb_info("mcp session %s: initialized with protocol %s", sid, v);
    json_t *result = json_pack("{s:s, s:{s:{s:b}, s:{s:b, s:b}, s:{}}, s:{s:s, s:s, s:s}, s:s}", "protocolVersion", v,
                               "capabilities", "tools", "listChanged", 0, "resources", "listChanged", 0, "subscribe", 0,
                               "logging", "serverInfo", "name", "runbox", "title", "runbox code interpreter", "version",
                               RUNBOX_VERSION, "instructions", instructions);
    json_t *resp = rpc_result_of(id, result);
    json_decref(result);
    char *hv = http_pool_strdup(hc->req, sid, strlen(sid));
    h2o_add_header_by_str(&hc->req->pool, &hc->req->res.headers, H2O_STRLIT("mcp-session-id"), 0, NULL, hv,
                          strlen(hv));
    http_send_json(hc->req, 200, resp);
    json_decref(resp);
    json_decref(rec);
    return 0;
}

static int mcp_post_handler(http_call *hc)
{
    mcp_server *ms = server_of(hc);
    h2o_req_t *req = hc->req;
    char err[RB_ERR_LEN];
    if (ms == NULL || ms->stopped)
        return reject(req, 503, NULL, MCP_ERR_INTERNAL, "the server is shutting down");
    if (check_origin(hc))
        return 0;
    size_t len = 0;
    const char *accept = header(req, "accept", &len);
    if (!accepts(accept, "application/json") || !accepts(accept, "text/event-stream"))
        return reject(req, 406, NULL, MCP_ERR_INVALID_REQUEST,
                      "Not Acceptable: the Accept header must allow both application/json and text/event-stream");
    json_t *body = NULL;
    rb_err e = http_read_json_value(req, hc->cfg->max_body, &body, err);
    if (e == RB_EMEDIA)
        return reject(req, 415, NULL, MCP_ERR_INVALID_REQUEST,
                      "Unsupported Media Type: send the JSON-RPC message with Content-Type: application/json");
    if (e == RB_ETOOBIG)
        return reject(req, 413, NULL, MCP_ERR_INVALID_REQUEST, err);
    if (e != RB_OK) {
        char msg[RB_ERR_LEN + 16];
        snprintf(msg, sizeof(msg), "Parse error: %s", err);
        return reject(req, 400, NULL, MCP_ERR_PARSE, msg);
    }
    if (!json_is_object(body) && !json_is_array(body)) {
        json_decref(body);
        return reject(req, 400, NULL, MCP_ERR_INVALID_REQUEST,
                      "Invalid Request: the body must be a JSON-RPC message (an object)");
    }
    /* initialize starts a session: it needs no Mcp-Session-Id (and ignores one). */
    if (json_is_object(body) && json_is_string(json_object_get(body, "method")) &&
        strcmp(json_string_value(json_object_get(body, "method")), "initialize") == 0) {
        int r = handle_initialize(hc, body);
        json_decref(body);
        return r;
    }
    json_t *rec = NULL;
    mcp_rt *rt = session_of(hc, &rec);
    if (rt == NULL) {
        json_decref(body);
        return 0;
    }
    const char *pv = header(req, "mcp-protocol-version", &len);
    if (pv != NULL && !version_supported(pv)) {
        json_decref(body);
        json_decref(rec);
        char msg[200];
        snprintf(msg, sizeof(msg), "Bad Request: unsupported MCP-Protocol-Version '%.32s'; this server supports "
                                   "2025-11-25, 2025-06-18 and 2025-03-26",
                 pv);
        return reject(req, 400, NULL, MCP_ERR_INVALID_REQUEST, msg);
    }
    int batch = json_is_array(body);
    if (batch) {
        const char *why = NULL;
        if (strcmp(rt->version, "2025-03-26") != 0)
            why = "Invalid Request: JSON-RPC batches are only accepted under protocol version 2025-03-26";
        else if (json_array_size(body) == 0)
            why = "Invalid Request: an empty batch";
        else if (json_array_size(body) > MCP_MAX_BATCH)
            why = "Invalid Request: a batch may hold at most 64 messages";
        if (why != NULL) {
            json_decref(body);
            json_decref(rec);
            return reject(req, 400, NULL, MCP_ERR_INVALID_REQUEST, why);
        }
    }
    mcp_post *post = h2o_mem_alloc_shared(&req->pool, sizeof(*post), post_dispose);
    memset(post, 0, sizeof(*post));
    post->req = req;
    post->rt = rt;
    post->batch = batch;
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
        if (classify(msg, &kind, &error) != 0) {
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
            notification(rt, method, params);
            continue;
        }
        requests++;
        json_t *resp = dispatch(rt, post, rec, json_object_get(msg, "id"), method, params);
        if (resp != NULL) {
            post->outstanding++;
            post_answer(post, resp);
        }
    }
    if (requests == 0) {
        post->req = NULL;
        send_empty(req, 202, "Accepted");
        goto done;
    }
    if (batch) {
        if (--post->outstanding == 0)
            send_batch(post);
    } else {
        post->outstanding--;
    }
done:
    json_decref(body);
    json_decref(rec);
    return 0;
}

/* GET: a server-to-client stream, or with Last-Event-ID the replay of a stream. */
static int mcp_get_handler(http_call *hc)
{
    mcp_server *ms = server_of(hc);
    h2o_req_t *req = hc->req;
    if (ms == NULL || ms->stopped)
        return reject(req, 503, NULL, MCP_ERR_INTERNAL, "the server is shutting down");
    if (check_origin(hc))
        return 0;
    size_t len = 0;
    const char *accept = header(req, "accept", &len);
    if (accept == NULL || !accepts(accept, "text/event-stream"))
        return reject(req, 406, NULL, MCP_ERR_INVALID_REQUEST,
                      "Not Acceptable: a GET on the MCP endpoint opens an event stream; send Accept: "
                      "text/event-stream");
    json_t *rec = NULL;
    mcp_rt *rt = session_of(hc, &rec);
    json_decref(rec);
    if (rt == NULL)
        return 0;
    const char *last = header(req, "last-event-id", &len);
    uint64_t seq = 0;
    mcp_event *from = NULL;
    size_t blen = strlen(ms->boot);
    if (last != NULL && len > blen + 1 && strncmp(last, ms->boot, blen) == 0 && last[blen] == '-') {
        char *end;
        seq = strtoull(last + blen + 1, &end, 10);
        if (*end == '\0')
            for (mcp_event *e = rt->log_head; e != NULL; e = e->next)
                if (e->seq == seq)
                    from = e;
    }
    if (from == NULL) {
        mcp_stream *st = stream_new(rt, 1);
        st->sink = sse_start(ms->server, req, on_sink_closed, st);
        return 0;
    }
    uint64_t no = from->stream;
    mcp_stream *st = stream_find(rt, no);
    int attach = st != NULL && !st->done;
    if (attach && st->sink != NULL) {
        /* The request is still running: its further messages go to this client from now on. */
        sse_end(st->sink);
        st->sink = NULL;
    }
    sse_stream *sink = sse_start(ms->server, req, attach ? on_sink_closed : NULL, attach ? st : NULL);
    char id[48];
    for (mcp_event *e = from->next; e != NULL; e = e->next) {
        if (e->stream != no)
            continue;
        event_id(rt, e->seq, id, sizeof(id));
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
    mcp_server *ms = server_of(hc);
    h2o_req_t *req = hc->req;
    char err[RB_ERR_LEN];
    if (ms == NULL || ms->stopped)
        return reject(req, 503, NULL, MCP_ERR_INTERNAL, "the server is shutting down");
    if (check_origin(hc))
        return 0;
    size_t len = 0;
    const char *sid = header(req, "mcp-session-id", &len);
    if (sid == NULL || len == 0)
        return reject(req, 400, NULL, MCP_ERR_INVALID_REQUEST,
                      "Bad Request: the Mcp-Session-Id header names the session to end");
    if (core_mcp_session_end(ms->cm, sid, "ended by the client (HTTP DELETE)", err) != RB_OK)
        return reject(req, 404, NULL, MCP_ERR_INVALID_REQUEST, err);
    send_empty(req, 204, "No Content");
    return 0;
}

static const http_route routes[] = {
    {"POST", "/mcp", mcp_post_handler},
    {"GET", "/mcp", mcp_get_handler},
    {"DELETE", "/mcp", mcp_delete_handler},
};

const http_route *mcp_routes(size_t *n)
{
    *n = sizeof(routes) / sizeof(routes[0]);
    return routes;
}

rb_err mcp_server_new(rb_server *s, rb_core *core, const rb_config *cfg, mcp_server **out, char *err)
{
    json_error_t jerr;
    json_t *tools = json_array();
    for (size_t i = 0; i < sizeof(tool_defs) / sizeof(tool_defs[0]); i++) {
        json_t *t = json_loads(tool_defs[i], 0, &jerr);
        if (t == NULL) {
            json_decref(tools);
            return rb_fail(RB_EINTERNAL, err, "mcp: tool definition %zu is not valid JSON: %s (column %d)", i,
                           jerr.text, jerr.column);
        }
        json_array_append_new(tools, t);
    }
    mcp_server *ms = xcalloc(1, sizeof(*ms));
    ms->server = s;
    ms->core = core;
    ms->cfg = cfg;
    ms->tools = tools;
    rb_err e = core_mcp_new(core, &ms->cm, err);
    if (e != RB_OK) {
        json_decref(tools);
        free(ms);
        return e;
    }
    core_mcp_on_end(ms->cm, on_session_ended, ms);
    char rnd[40];
    rb_random_id("", rnd, sizeof(rnd));
    snprintf(ms->boot, sizeof(ms->boot), "%.8s", rnd);
    *out = ms;
    return RB_OK;
}

void mcp_server_stop(mcp_server *ms)
{
    if (ms == NULL || ms->stopped)
        return;
    ms->stopped = 1;
    while (ms->rts != NULL)
        rt_free(ms->rts, 0, "the server is stopping");
    core_mcp_free(ms->cm);
    ms->cm = NULL;
}

void mcp_server_free(mcp_server *ms)
{
    if (ms == NULL)
        return;
    mcp_server_stop(ms);
    json_decref(ms->tools);
    free(ms);
}

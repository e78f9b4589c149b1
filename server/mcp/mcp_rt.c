/*
 * mcp_rt.c: the transport state of live MCP sessions (server/mcp/mcp_internal.h). mcp_rt is one
 * live MCP session (heap, freed when the session ends or the server stops); mcp_stream is one
 * SSE stream of it and mcp_event one message in its bounded replay log; mcp_post is one HTTP
 * POST (in req->pool, its dispose hook detaches the calls that still point at it); mcp_call is
 * one JSON-RPC request in flight (heap, in its rt). This file delivers answers and
 * notifications to whichever of a post or a stream a call is attached to, and gives a tool set
 * of another protocol family (mcp.h) what it may use of a call; it knows nothing of methods or
 * tools (mcp_rpc.c, mcp_tools.c) nor of HTTP routing (mcp.c).
 */
#include <stdio.h>
#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "server/mcp/mcp_internal.h"
#include "server/sse.h"

#define MCP_MAX_STREAMS 256

const char *const mcp__levels[MCP_NLEVELS] = {"debug", "info",     "notice", "warning",
                                              "error", "critical", "alert",  "emergency"};

/* ---- event log and streams ------------------------------------------------------------- */

void mcp__event_id(const mcp_rt *rt, uint64_t seq, char *buf, size_t len)
{
    mcp__sse_id_format(rt->ms->boot, seq, buf, len);
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

/* What the log keeps instead of msg, a message of len bytes, too large to keep (heap text):
 * for a response, an error response to the same request saying so; for anything else, a log
 * message notification. */
static char *stand_in(json_t *msg, size_t len)
{
    char text[RB_ERR_LEN];
    snprintf(text, sizeof(text),
             "this message was %zu bytes, more than the %u MiB an MCP session keeps for replay (Last-Event-ID), so "
             "it cannot be sent again",
             len, MCP_LOG_MAX_BYTES >> 20);
    json_t *id = json_object_get(msg, "id");
    json_t *in;
    if (id != NULL && json_object_get(msg, "method") == NULL) {
        char answer[RB_ERR_LEN + 64];
        snprintf(answer, sizeof(answer), "%s: send the request again (or read large files in parts)", text);
        in = mcp__rpc_error(id, MCP_ERR_INTERNAL, answer,
                            json_pack("{s:I, s:I}", "bytes", (json_int_t)len, "replay_limit",
                                      (json_int_t)MCP_LOG_MAX_BYTES));
    } else {
        in = json_pack("{s:s, s:s, s:{s:s, s:s, s:s}}", "jsonrpc", "2.0", "method", "notifications/message", "params",
                       "level", "warning", "logger", "runbox", "data", text);
    }
    char *out = json_dumps(in, JSON_COMPACT);
    json_decref(in);
    return out;
}

/* Sends msg on stream st and keeps it in the log for replay: the message itself, or a small
 * stand-in (stand_in) when it alone is larger than the log may hold, so that one large answer
 * neither empties the log nor vanishes from a replay. msg is borrowed. */
void mcp__stream_send(mcp_stream *st, json_t *msg)
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
    if (st->sink != NULL) {
        char id[48];
        mcp__event_id(rt, e->seq, id, sizeof(id));
        sse_send_text(st->sink, rt->modern ? NULL : id, "message", e->text, e->len);
    }
    if (e->len > MCP_LOG_MAX_BYTES) {
        char *small = stand_in(msg, e->len);
        free(e->text);
        e->text = small != NULL ? small : xstrdup("{}");
        e->len = strlen(e->text);
    }
    if (rt->log_tail != NULL)
        rt->log_tail->next = e;
    else
        rt->log_head = e;
    rt->log_tail = e;
    rt->log_count++;
    rt->log_bytes += e->len;
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

void mcp__on_sink_closed(void *data)
{
    mcp_stream *st = data;
    mcp_rt *rt = st->rt;
    st->sink = NULL;
    if (rt->modern && !st->standalone) {
        /* 2026-07-28: closing a request's response stream cancels the request. */
        for (mcp_call *call = rt->calls; call != NULL; call = call->next)
            if (call->stream == st && !call->cancelled) {
                mcp__call_cancel(call);
                break;
            }
        return;
    }
    if (!st->standalone)
        return;
    stream_unlink_free(st);
    if (rt->modern)
        mcp__modern_unref(rt); /* a subscriptions/listen stream held its runtime */
}

mcp_stream *mcp__stream_new(mcp_rt *rt, int standalone)
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

mcp_stream *mcp__stream_find(mcp_rt *rt, uint64_t no)
{
    for (mcp_stream *s = rt->streams; s != NULL; s = s->next)
        if (s->no == no)
            return s;
    return NULL;
}

/* ---- posts and calls ------------------------------------------------------------------- */

void mcp__send_batch(mcp_post *post)
{
    if (post->req == NULL)
        return;
    h2o_req_t *req = post->req;
    post->req = NULL;
    if (json_array_size(post->answers) == 0)
        mcp__send_empty(req, 202, "Accepted");
    else
        http_send_json(req, 200, post->answers);
}

void mcp__post_dispose(void *p)
{
    mcp_post *post = p;
    for (int i = 0; i < post->ncalls; i++) {
        mcp_call *call = post->calls[i];
        if (call == NULL)
            continue;
        call->post = NULL;
        /* 2026-07-28: the client is gone before its answer: that cancels the request. */
        if (post->modern && !call->cancelled && !post->rt->ms->stopped)
            mcp__call_cancel(call);
    }
    post->req = NULL;
    json_decref(post->answers);
    post->answers = NULL;
    if (post->modern)
        mcp__modern_unref(post->rt);
}

static void post_forget(mcp_post *post, mcp_call *call)
{
    for (int i = 0; i < post->ncalls; i++)
        if (post->calls[i] == call)
            post->calls[i] = NULL;
}

/* Delivers a response (stolen) for a request of post (call may be NULL for immediate ones). */
void mcp__post_answer(mcp_post *post, json_t *response)
{
    if (!post->batch) {
        int status = post->modern ? mcp__modern_decorate(response) : 200;
        if (post->req != NULL) {
            h2o_req_t *req = post->req;
            post->req = NULL;
            /* 2026-07-28: an error status goes with a plain JSON body clients can inspect */
            mcp__send_message(req, status, response, post->sse && status == 200);
        }
        json_decref(response);
        return;
    }
    if (post->answers != NULL)
        json_array_append_new(post->answers, response);
    else
        json_decref(response);
    if (--post->outstanding == 0)
        mcp__send_batch(post);
}

mcp_call *mcp__call_new(mcp_rt *rt, mcp_post *post, json_t *id)
{
    mcp_call *call = xcalloc(1, sizeof(*call));
    call->ms = rt->ms;
    call->rt = rt;
    call->id = json_incref(id);
    call->next = rt->calls;
    rt->calls = call;
    if (post->legacy) {
        /* HTTP+SSE: the POST was answered 202; progress and the response go to the SSE stream */
        call->stream = rt->legacy;
    } else {
        call->post = post;
        if (post->ncalls < MCP_MAX_BATCH)
            post->calls[post->ncalls++] = call;
    }
    if (rt->modern)
        rt->refs++;
    else
        mcp_sessions_hold(rt->ms->cm, rt->id, +1);
    return call;
}

void mcp__call_drop(mcp_call *call)
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
    if (call->work != NULL)
        call->work_cancel(call->work);
    if (call->post != NULL)
        post_forget(call->post, call);
    if (!rt->modern && !rt->ms->stopped)
        mcp_sessions_hold(rt->ms->cm, rt->id, -1);
    json_decref(call->id);
    json_decref(call->args);
    json_decref(call->progress_token);
    json_decref(call->timeout);
    free(call->path);
    free(call->uri);
    free(call->upload);
    free(call);
    if (rt->modern)
        mcp__modern_unref(rt);
}

void mcp__tool_finish(mcp_call *call, json_t *res)
{
    mcp__call_finish(call, mcp__rpc_result_of(call->id, res));
    json_decref(res);
}

void mcp__call_finish(mcp_call *call, json_t *response)
{
    if (call->rt->modern && call->post == NULL)
        mcp__modern_decorate(response); /* on a stream, or dropped; a post decorates its own */
    if (call->stream != NULL && call->stream == call->rt->legacy) {
        mcp__stream_send(call->stream, response); /* the session's one stream stays open */
        json_decref(response);
    } else if (call->stream != NULL) {
        mcp_stream *st = call->stream;
        mcp__stream_send(st, response);
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
        mcp__post_answer(post, response);
    } else {
        json_decref(response);
    }
    mcp__call_drop(call);
}

/* Sends a notification related to call: switches its answer to SSE first if needed. Dropped
 * for batches and when the client is gone. msg is stolen. */
int mcp__call_open_stream(mcp_call *call)
{
    if (call->stream != NULL)
        return 1;
    mcp_post *post = call->post;
    if (post == NULL || post->batch || post->req == NULL)
        return 0;
    mcp_stream *st = mcp__stream_new(call->rt, 0);
    st->sink = sse_start(call->ms->server, post->req, mcp__on_sink_closed, st);
    post->req = NULL;
    post_forget(post, call);
    call->post = NULL;
    call->stream = st;
    return 1;
}

void mcp__call_notify(mcp_call *call, json_t *msg)
{
    if (!mcp__call_open_stream(call)) {
        json_decref(msg);
        return;
    }
    mcp__stream_send(call->stream, msg);
    json_decref(msg);
}

void mcp__call_log(mcp_call *call, int level, const char *fmt, ...)
{
    if (level < call->log_min)
        return;
    char text[RB_ERR_LEN];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof(text), fmt, ap);
    va_end(ap);
    mcp__call_notify(call,
                     json_pack("{s:s, s:s, s:{s:s, s:s, s:s}}", "jsonrpc", "2.0", "method", "notifications/message",
                               "params", "level", mcp__levels[level], "logger", "runbox", "data", text));
}

/* ---- a call as a tool set sees it (mcp.h) ---------------------------------------------- */

const char *mcp_call_tool(const mcp_call *call)
{
    return call->tool;
}

json_t *mcp_call_args(const mcp_call *call)
{
    return call->args;
}

rb_core *mcp_call_core(const mcp_call *call)
{
    return call->ms->core;
}

const core_caller *mcp_call_who(const mcp_call *call)
{
    return call->rt->who;
}

const server_settings *mcp_call_settings(const mcp_call *call)
{
    return call->ms->cfg;
}

core_op **mcp_call_op(mcp_call *call)
{
    return &call->op;
}

void mcp_call_execution(mcp_call *call, const char *execution_id)
{
    snprintf(call->exec_id, sizeof(call->exec_id), "%s", execution_id ? execution_id : "");
}

core_watch **mcp_call_watch(mcp_call *call)
{
    return &call->watch;
}

void mcp_call_hold(mcp_call *call, void *work, mcp_cancel_cb cancel)
{
    assert(work == NULL || cancel != NULL);
    call->work = work;
    call->work_cancel = cancel;
}

void mcp_call_answer(mcp_call *call, json_t *result)
{
    mcp__call_finish(call, mcp__rpc_result(call->id, result));
}

/* ---- runtimes -------------------------------------------------------------------------- */

mcp_rt *mcp__rt_get(mcp_server *ms, const char *id, json_t *rec, const core_caller *who)
{
    mcp_rt *rt = mcp_sessions_transport(ms->cm, id);
    if (rt == NULL) {
        rt = xcalloc(1, sizeof(*rt));
        rt->ms = ms;
        snprintf(rt->id, sizeof(rt->id), "%s", id);
        char err[RB_ERR_LEN];
        /* The caller has just touched the live session, so this cannot fail. */
        rb_err e = mcp_sessions_attach(ms->cm, id, rt, err);
        assert(e == RB_OK);
        (void)e;
    }
    rt->who = who; /* the session's owner: mcp_sessions_touch checked that who is its key */
    const char *v = json_string_value(json_object_get(rec, "protocol_version"));
    snprintf(rt->version, sizeof(rt->version), "%s", v ? v : "2025-03-26");
    return rt;
}

/* Ends a runtime: calls in flight are answered with an error (deliver) or dropped silently
 * (server stopping), streams are ended, memory freed. */
void mcp__rt_free(mcp_rt *rt, int deliver, const char *why)
{
    while (rt->calls != NULL) {
        mcp_call *call = rt->calls;
        if (deliver) {
            mcp__call_finish(call, mcp__rpc_error(call->id, MCP_ERR_INVALID_REQUEST, why, NULL));
        } else {
            mcp__call_drop(call);
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

void mcp__on_session_detached(void *data, const char *id, void *transport)
{
    mcp_server *ms = data;
    (void)id;
    mcp__rt_free(transport, !ms->stopped, ms->stopped ? "the server is stopping" : "the MCP session has ended");
}

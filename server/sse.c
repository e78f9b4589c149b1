/*
 * sse.c: Server-Sent Events over h2o (server/sse.h). Two buffers (sse_writer, which E2B's Connect
 * streams use too): `pending` collects events, `sending` is what h2o is writing (it must stay
 * valid until the generator's proceed). The
 * stream object lives in req->pool with a dispose hook, so it goes away with the request;
 * the heartbeat timer is heap memory released in its close callback. What an event stream's
 * buffers hold counts against the memory all event streams share (max-stream-memory,
 * server_stream_memory_take): a stream that would pass it, or its own SSE_MAX_PENDING, ends as
 * too slow.
 */
#include "server/sse.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* An event stream carries at most this much unsent data; beyond it the client is too slow
 * and the stream is ended (the client can reconnect and replay). */
#define SSE_MAX_PENDING (64u * 1024 * 1024)

struct sse_stream {
    h2o_generator_t gen; /* first: h2o passes it back to proceed/stop */
    h2o_req_t *req;
    rb_server *server;
    http_stream_link link; /* tracked by the server, which ends the stream on server_stop */
    sse_writer w;
    size_t held; /* w.pending.len + w.sending.len, taken from the server's stream memory */
    uint64_t next_id;
    uv_timer_t *heartbeat;
    sse_close_cb on_close;
    void *data;
    const char *line;  /* lines mode (sse_start_lines): the heartbeat line, else NULL */
    const char *hint;  /* added to the comment that ends an overflowing stream (in req->pool), or NULL */
};

static void notify_close(sse_stream *s)
{
    sse_close_cb cb = s->on_close;
    s->on_close = NULL;
    if (cb != NULL)
        cb(s->data);
}

static void stop_heartbeat(sse_stream *s)
{
    if (s->heartbeat != NULL) {
        uv_timer_stop(s->heartbeat);
        uv_close((uv_handle_t *)s->heartbeat, (uv_close_cb)free);
        s->heartbeat = NULL;
    }
}

static void detach(sse_stream *s)
{
    server_untrack_stream(&s->link);
    stop_heartbeat(s);
}

/* ---- the writer ---------------------------------------------------------------------- */

void sse_writer_init(sse_writer *w, h2o_req_t *req, size_t max)
{
    w->req = req;
    rb_buf_init(&w->pending, max);
    rb_buf_init(&w->sending, max);
}

void sse_writer_flush(sse_writer *w, void (*on_final)(sse_writer *w))
{
    if (w->gone || w->finished || w->inflight)
        return;
    if (w->pending.len == 0 && !w->ending)
        return;
    rb_buf tmp = w->sending;
    w->sending = w->pending;
    w->pending = tmp;
    rb_buf_reset(&w->pending);
    h2o_iovec_t buf = h2o_iovec_init(w->sending.data, w->sending.len);
    h2o_send_state_t state = H2O_SEND_STATE_IN_PROGRESS;
    if (w->ending) {
        state = w->broken ? H2O_SEND_STATE_ERROR : H2O_SEND_STATE_FINAL;
        w->finished = 1;
        on_final(w);
    }
    w->inflight = 1;
    h2o_send(w->req, &buf, buf.len ? 1 : 0, state);
}

void sse_writer_proceed(sse_writer *w)
{
    w->inflight = 0;
    rb_buf_reset(&w->sending);
}

void sse_writer_dispose(sse_writer *w)
{
    rb_buf_dispose(&w->pending);
    rb_buf_dispose(&w->sending);
}

/* ---- event streams ---------------------------------------------------------------------- */

static void on_final(sse_writer *w)
{
    detach(H2O_STRUCT_FROM_MEMBER(sse_stream, w, w));
}

static void flush(sse_stream *s)
{
    sse_writer_flush(&s->w, on_final);
}

static void on_proceed(h2o_generator_t *gen, h2o_req_t *req)
{
    sse_stream *s = (sse_stream *)gen;
    (void)req;
    server_stream_memory_give(s->server, s->w.sending.len);
    s->held -= s->w.sending.len;
    if (s->w.sending.cap > 64 * 1024)
        rb_buf_dispose(&s->w.sending); /* a burst's memory goes back, not only its count */
    sse_writer_proceed(&s->w);
    flush(s);
}

static void on_stop(h2o_generator_t *gen, h2o_req_t *req)
{
    sse_stream *s = (sse_stream *)gen;
    (void)req;
    s->w.gone = 1;
    detach(s);
    notify_close(s);
}

static void on_dispose(void *p)
{
    sse_stream *s = p;
    s->w.gone = 1;
    detach(s);
    notify_close(s);
    server_stream_memory_give(s->server, s->held);
    s->held = 0;
    sse_writer_dispose(&s->w);
}

static void append(sse_stream *s, const char *p, size_t n)
{
    if (s->w.gone || s->w.finished || s->w.ending)
        return;
    int room = server_stream_memory_take(s->server, n, 0);
    if (room && rb_buf_append(&s->w.pending, p, n) == RB_OK) {
        s->held += n;
        return;
    }
    if (room)
        server_stream_memory_give(s->server, n);
    /* The client reads more slowly than events come (or the streams together hold all the
     * memory they may): what is unsent is dropped and the stream ends with a comment saying
     * so. The owner hears of it through on_close once the response is over, never from
     * inside the sse_* call it is making now. */
    size_t unsent = s->w.pending.len + n;
    const char *why = room ? "" : " within max-stream-memory, which all event streams share";
    rb_warn("sse: client too slow, %zu bytes unsent%s; ending the stream", unsent, why);
    server_stream_memory_give(s->server, s->w.pending.len);
    s->held -= s->w.pending.len;
    rb_buf_dispose(&s->w.pending);
    s->w.ending = 1;
    if (s->line != NULL)
        return; /* a note would not be a line of the stream's format */
    char note[512];
    int len = snprintf(note, sizeof(note),
                       ": runbox: the client read too slowly (%zu bytes could not be buffered%s); the stream "
                       "ends here%s%s\n\n",
                       unsent, why, s->hint != NULL ? "; " : "", s->hint != NULL ? s->hint : "");
    size_t nlen = len > 0 && (size_t)len < sizeof(note) ? (size_t)len : 0;
    if (rb_buf_append(&s->w.pending, note, nlen) == RB_OK) {
        server_stream_memory_take(s->server, nlen, 1); /* a short note, whatever the budget */
        s->held += nlen;
    }
}

static void on_heartbeat(uv_timer_t *t)
{
    sse_stream *s = t->data;
    if (s->line != NULL)
        sse_send_line(s, s->line, strlen(s->line));
    else
        sse_comment(s, "heartbeat");
}

/* The server is stopping (it has untracked the stream): tell the owner, then finish. */
static void on_server_stop(http_stream_link *l)
{
    sse_stream *s = H2O_STRUCT_FROM_MEMBER(sse_stream, link, l);
    notify_close(s);
    sse_comment(s, "server shutting down");
    s->w.ending = 1;
    flush(s);
}

/* The stream object, tracked, with its heartbeat running every ms; no headers yet. */
static sse_stream *stream_new(rb_server *server, h2o_req_t *req, uint64_t ms, sse_close_cb on_close, void *data)
{
    sse_stream *s = h2o_mem_alloc_shared(&req->pool, sizeof(*s), on_dispose);
    memset(s, 0, sizeof(*s));
    s->gen.proceed = on_proceed;
    s->gen.stop = on_stop;
    s->req = req;
    s->server = server;
    s->on_close = on_close;
    s->data = data;
    s->next_id = 1;
    sse_writer_init(&s->w, req, SSE_MAX_PENDING);
    s->link.shutdown = on_server_stop;
    server_track_stream(server, &s->link);

    s->heartbeat = xmalloc(sizeof(*s->heartbeat));
    uv_timer_init(req->conn->ctx->loop, s->heartbeat);
    s->heartbeat->data = s;
    uv_timer_start(s->heartbeat, on_heartbeat, ms, ms);
    return s;
}

sse_stream *sse_start_lines(rb_server *server, h2o_req_t *req, const char *ctype, const char *line, uint64_t heartbeat_ms,
                            sse_close_cb on_close, void *data)
{
    sse_stream *s = stream_new(server, req, heartbeat_ms, on_close, data);
    s->line = line;
    req->res.status = 200;
    req->res.reason = "OK";
    h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_CONTENT_TYPE, NULL, ctype, strlen(ctype));
    h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_CACHE_CONTROL, NULL, H2O_STRLIT("no-cache"));
    h2o_add_header_by_str(&req->pool, &req->res.headers, H2O_STRLIT("x-accel-buffering"), 0, NULL, H2O_STRLIT("no"));
    h2o_start_response(req, &s->gen);
    sse_send_line(s, line, strlen(line)); /* flushes the headers */
    return s;
}

void sse_send_line(sse_stream *s, const char *text, size_t len)
{
    append(s, text, len);
    flush(s);
}

sse_stream *sse_start(rb_server *server, h2o_req_t *req, sse_close_cb on_close, void *data)
{
    sse_stream *s = stream_new(server, req, SSE_HEARTBEAT_MS, on_close, data);
    req->res.status = 200;
    req->res.reason = "OK";
    h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_CONTENT_TYPE, NULL, H2O_STRLIT("text/event-stream"));
    h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_CACHE_CONTROL, NULL, H2O_STRLIT("no-cache"));
    h2o_add_header_by_str(&req->pool, &req->res.headers, H2O_STRLIT("x-accel-buffering"), 0, NULL, H2O_STRLIT("no"));
    h2o_start_response(req, &s->gen);
    /* A zero-length send would not flush the headers; a comment does. */
    sse_comment(s, "runbox event stream");
    return s;
}

void sse_comment(sse_stream *s, const char *text)
{
    if (s->line != NULL)
        return;
    append(s, ": ", 2);
    append(s, text, strlen(text));
    append(s, "\n\n", 2);
    flush(s);
}

void sse_send(sse_stream *s, const char *event, json_t *data)
{
    char *text = json_dumps(data, JSON_COMPACT | JSON_ENCODE_ANY);
    if (text == NULL)
        text = xstrdup("null");
    char head[128];
    int n = snprintf(head, sizeof(head), "id: %llu\nevent: %s\ndata: ", (unsigned long long)s->next_id++, event);
    append(s, head, (size_t)n < sizeof(head) ? (size_t)n : sizeof(head) - 1);
    append(s, text, strlen(text));
    append(s, "\n\n", 2);
    free(text);
    flush(s);
}

void sse_send_text(sse_stream *s, const char *id, const char *event, const char *data, size_t len)
{
    if (id != NULL) {
        append(s, "id: ", 4);
        append(s, id, strlen(id));
        append(s, "\n", 1);
    }
    if (event != NULL) {
        append(s, "event: ", 7);
        append(s, event, strlen(event));
        append(s, "\n", 1);
    }
    append(s, "data: ", 6);
    append(s, data, len);
    append(s, "\n\n", 2);
    flush(s);
}

void sse_set_hint(sse_stream *s, const char *hint)
{
    s->hint = h2o_mem_alloc_pool(&s->req->pool, strlen(hint) + 1);
    memcpy((char *)s->hint, hint, strlen(hint) + 1);
}

void sse_end(sse_stream *s)
{
    s->on_close = NULL;
    s->w.ending = 1;
    flush(s);
}

void sse_break(sse_stream *s)
{
    s->w.broken = 1;
    sse_end(s);
}

/*
 * sse: a Server-Sent Events response on h2o. It sends the headers with a first comment line
 * at once, buffers events while a write is in flight (h2o allows one h2o_send per proceed),
 * sends a heartbeat comment every 15 s (which is also how a vanished HTTP/1.1 client is
 * noticed), and tells its owner once when the stream ends without the owner asking (client
 * gone, server stopping, a client too slow to take what is queued), never from inside one of
 * the owner's own sse_* calls. It knows nothing of executions; REST and MCP both use it.
 */
#ifndef RB_SERVER_SSE_H
#define RB_SERVER_SSE_H

#include <h2o.h>
#include <jansson.h>

#include "server/http.h"

typedef struct sse_stream sse_stream;

/* The writer of a streamed answer, which the event streams here and E2B's Connect streams
 * (server/e2b/e2b_rpc.c) share: what is queued collects in pending while h2o writes sending
 * (which must stay valid until the generator's proceed: h2o allows one h2o_send per proceed).
 * The owner appends to pending and reads the flags; the functions below move the buffers. */
typedef struct sse_writer {
    h2o_req_t *req;
    rb_buf pending, sending;
    int inflight; /* an h2o_send awaits proceed */
    int ending;   /* finish once pending is written */
    int broken;   /* ...and end it as broken (the connection closed without the end of the body) */
    int finished; /* the final h2o_send was made */
    int gone;     /* stop or dispose ran: h2o must not be called again */
} sse_writer;

/** Sets w up (zeroed before) for req, each buffer holding at most max bytes. */
void sse_writer_init(sse_writer *w, h2o_req_t *req, size_t max);
/** Hands what is pending to h2o, unless a write is in flight, the answer is gone or finished,
 * or there is nothing to send and no end to make. When ending, that send is the final one and
 * on_final(w) runs just before it (the owner stops its timers and untracks the stream). */
void sse_writer_flush(sse_writer *w, void (*on_final)(sse_writer *w));
/** The generator's proceed: the write in flight is done (the owner flushes next). */
void sse_writer_proceed(sse_writer *w);
/** Frees both buffers (the request's dispose). */
void sse_writer_dispose(sse_writer *w);

/** Called once when the stream ends without sse_end (client disconnected, server stopping,
 * request disposed). After it returns the owner must not use the stream. */
typedef void (*sse_close_cb)(void *data);

#define SSE_HEARTBEAT_MS 15000

/** Starts a 200 text/event-stream answer on req. The stream lives in req->pool; server_stop
 * ends it (on_close runs, then the response finishes). */
sse_stream *sse_start(rb_server *server, h2o_req_t *req, sse_close_cb on_close, void *data);
/** Starts a 200 answer of lines instead of events (E2B's JSON lines): Content-Type ctype, line
 * (a whole line with its '\n', borrowed: a static string) sent at once and then every
 * heartbeat_ms as the heartbeat. Comments are dropped; a client too slow to read is cut off
 * without a note. Otherwise as sse_start; send lines with sse_send_line. */
sse_stream *sse_start_lines(rb_server *server, h2o_req_t *req, const char *ctype, const char *line, uint64_t heartbeat_ms,
                            sse_close_cb on_close, void *data);
/** Queues len bytes as they are (a stream of sse_start_lines: one line with its '\n'). */
void sse_send_line(sse_stream *s, const char *text, size_t len);
/** Queues one event "id: <n>\nevent: <event>\ndata: <compact JSON>\n\n"; data is borrowed. */
void sse_send(sse_stream *s, const char *event, json_t *data);
/** Queues one event with a caller-chosen id (NULL: none) and event name (NULL: none, which
 * SSE clients read as "message"); data is len bytes of text without newlines (MCP uses this
 * for its per-session event ids and replay). */
void sse_send_text(sse_stream *s, const char *id, const char *event, const char *data, size_t len);
/** Text (copied) added to the comment that ends the stream if its client reads too slowly
 * (more than 64 MiB waiting): where to fetch what the stream could not carry. */
void sse_set_hint(sse_stream *s, const char *hint);
/** Queues a comment line (": text"). */
void sse_comment(sse_stream *s, const char *text);
/** Ends the stream after what is queued; on_close is not called. The owner must not use s
 * afterwards. */
void sse_end(sse_stream *s);
/** Like sse_end, but the answer ends broken: what is queued is sent, then the connection is closed
 * without the end of the body, as when the server behind it went away (E2B's sandbox killed
 * during run_code: its SDK then raises what it raises on E2B). */
void sse_break(sse_stream *s);

#endif

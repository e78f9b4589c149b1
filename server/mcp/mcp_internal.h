/*
 * mcp_internal.h: what the files of the MCP module share, and nothing outside it may use: the
 * transport objects and the `mcp__` helpers. The module is mcp.c (HTTP side and lifecycle),
 * mcp_rt.c (live sessions, streams, posts and calls), mcp_rpc.c (dispatch and resources),
 * mcp_wire.c (JSON-RPC messages, error codes and SSE event ids: pure, see mcp_wire.h),
 * mcp_modern.c (the stateless 2026-07-28 era) with mcp_envelope.c (its checks: pure),
 * mcp_tools.c (tools), mcp_files.c (file, package and dependency tools, file resources), mcp_web.c
 * (get_page_text) and mcp_mounts.c (list_mounts).
 * Tool sets of other protocol families (mcp_toolset_add, mcp.h) are served by the same files,
 * with their own tools; their calls reach this module only through mcp.h's mcp_call_*.
 *
 * Ownership: an mcp_rt is attached to its MCP session in core's one registry of MCP sessions
 * (mcp_sessions_attach, found again with mcp_sessions_transport) and freed when the registry
 * hands it back (mcp__on_session_detached); an mcp_call and an mcp_stream are owned by their
 * mcp_rt; an mcp_post lives in its request's pool. JSON arguments are borrowed and
 * results are new references unless a contract says "stolen".
 */
#ifndef RB_SERVER_MCP_INTERNAL_H
#define RB_SERVER_MCP_INTERNAL_H

#include <stdint.h>

#include "core/mcp_sessions.h"
#include "server/mcp/mcp.h"
#include "server/mcp/mcp_envelope.h"
#include "server/mcp/mcp_wire.h"
#include "server/sse.h"

/* GET (standalone) event streams one MCP session may hold open at once. */
#define MCP_MAX_GET_STREAMS 4

/* MCP log levels, in order of severity (logging/setLevel, notifications/message). */
#define MCP_NLEVELS 8
extern const char *const mcp__levels[MCP_NLEVELS];

typedef struct mcp_rt mcp_rt;
typedef struct mcp_post mcp_post;

/* The replay log of one MCP session keeps its last MCP_LOG_MAX_EVENTS messages and at most
 * MCP_LOG_MAX_BYTES of them; a message larger than that alone is kept as a small stand-in (an
 * error answer to its request, or a log notification) saying it cannot be replayed. */
#define MCP_LOG_MAX_EVENTS 4096
#define MCP_LOG_MAX_BYTES (32u * 1024 * 1024)

/* One message of a session's replay log. */
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
    char id[MCP_SESSIONS_ID_LEN];
    const core_caller *who; /* the API key the session belongs to (NULL without keys) */
    mcp_stream *legacy;     /* the GET /sse stream of an HTTP+SSE (2024-11-05) session, else NULL */
    char version[16];
    uint64_t next_seq, next_stream;
    mcp_event *log_head, *log_tail;
    size_t log_count, log_bytes;
    mcp_stream *streams;
    size_t nstreams;
    mcp_call *calls;
    /* MCP 2026-07-28 (mcp_modern.c): the runtime of one stateless POST, no MCP session (id is
     * ""); freed when its post, its calls and its subscriptions/listen stream are all gone. */
    int modern;
    int refs;
    int linked;               /* in ms->modern (cleared when the server stops) */
    struct mcp_rt *next_modern;
};

struct mcp_post {
    h2o_req_t *req; /* NULL once the request is gone or answers as SSE */
    mcp_rt *rt;
    int legacy; /* a POST /messages: every answer goes to rt->legacy (mcp_legacy.c) */
    int batch;
    int sse;    /* the client named text/event-stream in Accept: a single answer goes as one event */
    const mcp_toolset *toolset; /* a POST to a tool set's path: its tools; NULL: runbox's own */
    int modern;   /* an MCP 2026-07-28 request (mcp_modern.c): rt is its own, stateless */
    int log_min;  /* modern: the lowest log level sent (MCP_NLEVELS: none), from _meta */
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
    char language[CORE_LANGUAGE_LEN];
    json_t *timeout;
    core_op *op;
    void *work;                /* a tool set's work in flight that is no core call (mcp_call_hold) */
    mcp_cancel_cb work_cancel; /* how a drop cancels it */
    core_watch *watch;
    char exec_id[MCP_SESSIONS_ID_LEN];
    int cancelled, replaced;
    int new_session; /* modern execute_code without session_id: session_id was created for it */
    /* file and dependency tools, and file resource reads */
    int resource;                     /* answer as resources/read, not as a tool result */
    char *path;                       /* file path (relative to /workspace or absolute under it) */
    char *uri;                        /* resources/read: the URI asked for */
    char *upload;                     /* upload_file: the decoded bytes */
    size_t upload_len;
    char session_id[MCP_SESSIONS_ID_LEN]; /* the session the file operation runs in */
    char bound_language[CORE_LANGUAGE_LEN];           /* language of this connection's sandbox to use without session_id */
    mcp_call *next;
};

struct mcp_server {
    rb_server *server;
    rb_core *core;
    const server_settings *cfg;
    mcp_sessions *cm;
    json_t *tools;
    mcp_toolset *toolsets; /* added by other protocol families (mcp_toolset_add) */
    json_t *modern_tools; /* tools with the descriptions of MCP 2026-07-28 (no MCP session) */
    mcp_rt *modern;       /* runtimes of modern requests in flight */
    char boot[12];
    int stopped;
};

/* A tool set another protocol family serves at its own path (mcp_toolset_add). */
struct mcp_toolset {
    mcp_server *ms;
    mcp_toolset_def def;
    json_t *tools; /* def's definitions, parsed */
    mcp_toolset *next;
};

/* ---- mcp.c ---- */

/** Answers req with an empty body. */
void mcp__send_empty(h2o_req_t *req, int status, const char *reason);
/** Answers an HTTP-level rejection with a JSON-RPC error body (id borrowed). Returns 0. */
int mcp__reject(h2o_req_t *req, int status, json_t *id, int code, const char *message);
/** A request header's value copied into req->pool (NUL-terminated), or NULL. */
const char *mcp__header(h2o_req_t *req, const char *name, size_t *len);
/** The MCP server of a call, or NULL when it is stopping (then the call was answered 503). */
mcp_server *mcp__admit(http_call *hc);
/** The runtime of live MCP session sid if the caller may use it (touched now), or NULL when the
 * request was answered 404. *rec is a new reference to the record (or NULL). */
mcp_rt *mcp__session_by_id(http_call *hc, const char *sid, json_t **rec);
/** Reads a request body as a JSON-RPC message or batch (*kind says which), or answers the
 * request itself (415, 413, 400 parse error, 400 not a message, and a batch of a size no
 * transport takes: mcp__batch_size_refusal) and returns NULL. Every JSON-RPC entry point reads
 * its body here. New reference. */
json_t *mcp__read_message(http_call *hc, mcp_body_kind *kind);
/** The JSON-RPC response to initialize (id borrowed) for protocol version (new reference), with
 * the instructions of toolset (NULL: runbox's own). */
json_t *mcp__initialize_result(json_t *id, const char *version, const mcp_toolset *toolset);
/** Answers req with one JSON-RPC message (borrowed): as an SSE event when sse, else as JSON. */
void mcp__send_message(h2o_req_t *req, int status, json_t *msg, int sse);
/** Whether the streamable HTTP transport speaks protocol version v. */
int mcp__version_supported(const char *v);
/** Sends msg (borrowed) on stream st and keeps it for replay (mcp_rt.c). */
void mcp__stream_send(mcp_stream *st, json_t *msg);
/** Parses n JSON texts (tool definitions; what names them in the error) into an array. */
rb_err mcp__defs_load(const char *const *defs, size_t n, const char *what, json_t **out, char *err);
/* mcp_legacy.c: the HTTP+SSE transport of 2024-11-05 (GET /sse, POST /messages?sessionId=) */
int mcp__legacy_sse_handler(http_call *hc);
int mcp__legacy_post_handler(http_call *hc);

/* ---- mcp_rt.c: event log and streams ---- */

/** Formats the SSE event id "<boot>-<seq>" of rt's event seq into buf. */
void mcp__event_id(const mcp_rt *rt, uint64_t seq, char *buf, size_t len);
/** A new stream of rt (the oldest finished stream without a client may make room for it); a
 * standalone (GET) stream is freed when its client goes. */
mcp_stream *mcp__stream_new(mcp_rt *rt, int standalone);
/** The stream of rt numbered no, or NULL. */
mcp_stream *mcp__stream_find(mcp_rt *rt, uint64_t no);
/** sse_start's close callback for a stream's sink (data: the mcp_stream). */
void mcp__on_sink_closed(void *data);

/* ---- mcp_rt.c: posts and calls ---- */

/** Sends the collected answers of a batch post (202 when there are none), once. */
void mcp__send_batch(mcp_post *post);
/** Pool dispose hook of an mcp_post: detaches the calls that still point at it. */
void mcp__post_dispose(void *p);
/** Delivers a response (stolen) for a request of post that has no call in flight. */
void mcp__post_answer(mcp_post *post, json_t *response);
/** A new call for request id (borrowed) of post, in rt; holds rt's MCP session while it lives. */
mcp_call *mcp__call_new(mcp_rt *rt, mcp_post *post, json_t *id);
/** Delivers call's final response (stolen) on its stream or post, then frees call. */
void mcp__call_finish(mcp_call *call, json_t *response);
/** Finishes call with the tool result res (taken: a new reference, released here). */
void mcp__tool_finish(mcp_call *call, json_t *res);
/** Unlinks and frees call without answering it: stops its watch, cancels its pending operation. */
void mcp__call_drop(mcp_call *call);
/** Switches call's answer to an SSE stream now (a no-op when it is one already). Returns 0 when
 * it cannot (a batch, or the client is gone). */
int mcp__call_open_stream(mcp_call *call);
/** Sends a notification (stolen) related to call, switching its answer to SSE first if needed;
 * dropped for batches and when the client is gone. */
void mcp__call_notify(mcp_call *call, json_t *msg);
/** Sends notifications/message at level (index into mcp__levels) if the session's log level
 * admits it. */
void mcp__call_log(mcp_call *call, int level, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* ---- mcp_rt.c: runtimes ---- */

/** The runtime of MCP session id, created on first use; its protocol version is taken from the
 * session record rec (borrowed). */
mcp_rt *mcp__rt_get(mcp_server *ms, const char *id, json_t *rec, const core_caller *who);
/** Ends a runtime: calls in flight are answered with an error why (deliver) or dropped silently
 * (server stopping), streams are ended, memory freed. */
void mcp__rt_free(mcp_rt *rt, int deliver, const char *why);
/** mcp_sessions_on_detach callback (data: the mcp_server, transport: an mcp_rt): frees the
 * runtime of a session that ended, answering its calls in flight, or dropping them silently
 * when the server is stopping. */
void mcp__on_session_detached(void *data, const char *id, void *transport);

/* ---- mcp_rpc.c ---- */

/** A resources/read result holding obj (borrowed) as JSON text under uri. */
json_t *mcp__resource_text(const char *uri, json_t *obj);
/** Handles one request of a live session (rec: its record, borrowed). Returns the response now
 * (new reference) or NULL when a call answers later (then post->outstanding counts it). */
json_t *mcp__dispatch(mcp_rt *rt, mcp_post *post, json_t *rec, json_t *id, const char *method, json_t *params);
/** Handles a client notification (only notifications/cancelled does anything). */
void mcp__notification(mcp_rt *rt, const char *method, json_t *params);
/** Cancels call (once): interrupts its execution, or answers it now when it still waits for a
 * sandbox. */
void mcp__call_cancel(mcp_call *call);

/* ---- mcp_modern.c: MCP 2026-07-28, stateless, on the same endpoint ---- */

/** Serves a POST that mcp__envelope_is_modern picked (body borrowed) with toolset's tools (NULL:
 * runbox's own); always answers. */
int mcp__modern_post(http_call *hc, json_t *body, const mcp_toolset *toolset, int sse);
/** Adds what 2026-07-28 wants on a response (in place, borrowed): resultType and the server's
 * identity on results, Invalid Params for a missing resource. Returns the HTTP status to send it
 * with while still unanswered. */
int mcp__modern_decorate(json_t *response);
/** Drops a reference to a modern runtime; the last one frees it. */
void mcp__modern_unref(mcp_rt *rt);
/** The server is stopping: drops the calls of modern runtimes silently, ends their streams. */
void mcp__modern_stop(mcp_server *ms);
/** How long (ms) a 2026-07-28 client may cache tools/list and resources/list: they change only
 * when runboxd is upgraded. */
#define MCP_LIST_TTL_MS 300000
/** Sets a result's caching directives (ttlMs, cacheScope "public" or "private"; in place). */
void mcp__cacheable(json_t *result, long ttl_ms, const char *scope);
/** A session-bound tool without session_id under 2026-07-28 (no MCP session, so no sandbox of
 * its own): execute_code starts a new session (call->new_session) and runs in it; the file tools
 * answer that session_id is required. Returns a tool result now, or NULL when answered later. */
json_t *mcp__modern_without_session(mcp_call *call, const char *language);
/** The tool definitions as MCP 2026-07-28 shows them (a new array from tools, borrowed). */
json_t *mcp__modern_tools(json_t *tools);

/* ---- mcp_tools.c ---- */

/** The tool definitions (a new JSON array), or RB_EINTERNAL if one does not parse. */
rb_err mcp__tools_load(json_t **out, char *err);
/** The instructions initialize returns. */
extern const char mcp__instructions[];
/** Runs call's tool; returns the tool result now (new reference), or NULL when the call
 * answers later (or already has). */
json_t *mcp__run_tool(mcp_call *call);
/** Starts the work of a session-bound tool (execute_code or a file tool) in session_id. The call
 * is answered later, or now (and freed) when core refuses at once. */
void mcp__session_ready(mcp_call *call, const char *session_id);
/** Runs a session-bound tool in the session named by the session_id argument, or without one
 * in this connection's own sandbox of language (created on first use). Returns a tool result
 * for a bad session_id or a refusal, NULL when the call answers later. */
json_t *mcp__with_session(mcp_call *call, const char *language);
/** An isError tool result with the formatted text. */
json_t *mcp__tool_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/** An isError tool result for core's error e and its message. */
json_t *mcp__tool_core_error(rb_err e, const char *msg);
/** A successful tool result: obj (borrowed) as text and as structuredContent. */
json_t *mcp__tool_object(json_t *obj);

/* ---- mcp_files.c ---- */

/** upload_file, download_file, list_files, install_dependencies, get_packages; returns the tool
 * result now, or NULL when the call answers later. */
json_t *mcp__tool_files(mcp_call *call);
/* mcp_web.c: get_page_text (offered only when core_page_text_enabled). */
extern const char mcp__page_text_def[];
json_t *mcp__tool_page_text(mcp_call *call);
/* mcp_mounts.c: list_mounts (offered only when core_shares_enabled). The tool checks its
 * arguments and finds the session (mcp__with_session); mcp__mounts_start lists it once known. */
/* mcp_pause.c: pause_session, resume_session and fork_session (core_session_pause, ...). */
extern const char mcp__pause_def[], mcp__resume_def[], mcp__fork_def[];
/** Runs one of them: NULL when it answers later (or has answered), else the tool's error. */
json_t *mcp__tool_pause(mcp_call *call);
extern const char mcp__mounts_def[];
json_t *mcp__tool_mounts(mcp_call *call);
void mcp__mounts_start(mcp_call *call, const char *session_id);
/** Starts the file or dependency work of call in session_id (the session is known now). The
 * call is answered later, or now (and freed) when core refuses at once. */
void mcp__files_start(mcp_call *call, const char *session_id);
/** Whether uri is runbox://sessions/{session_id}/files or .../files/{path}. */
int mcp__is_file_uri(const char *uri);
/** resources/read of a file URI (see mcp__is_file_uri): starts the read and returns NULL
 * (answered later, counted in post->outstanding), or returns an error response. */
json_t *mcp__read_file_resource(mcp_rt *rt, mcp_post *post, json_t *id, const char *uri);

#endif

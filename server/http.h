/*
 * http: runboxd's HTTP front door on libh2o (libuv flavour). It owns the listener, the h2o
 * configuration and context, the router (one table of method + pattern routes that protocols
 * register, sharing the 404/405 rules), the one error table (rb_err -> HTTP status + JSON error
 * body), the JSON request-body reader (Content-Type, size limit, parse errors with
 * line/column), JSON answers and the access log. It knows no protocol: REST (server/rest/),
 * MCP (server/mcp/) and any later one register themselves with server_register, and the
 * daemon's main calls their *_register functions in turn. It holds no session logic.
 */
#ifndef RB_SERVER_HTTP_H
#define RB_SERVER_HTTP_H

#include <h2o.h>
#include <jansson.h>
#include <uv.h>

#include "base/base.h"
#include "core/core.h"
#include "server/settings.h"

typedef struct rb_server rb_server;

/** Largest number of {name} parameters a route pattern may have. */
#define HTTP_MAX_PARAMS 4

/** What a route handler receives: the server, the request and the path parameters (NUL-terminated
 * strings in req->pool, in pattern order, without a NUL or other control character: the router
 * refuses such a path with 400). The handler must answer (now or later) and return 0. */
typedef struct http_call {
    rb_server *server;
    void *data; /* the registering protocol's data (http_protocol.data) */
    rb_core *core;
    const server_settings *cfg;
    h2o_req_t *req;
    const core_caller *who; /* the API key's caller (valid until server_free), or NULL without keys */
    const char *params[HTTP_MAX_PARAMS];
} http_call;

typedef int (*http_handler_cb)(http_call *call);

/** One route: method ("GET", ...) and a pattern of literal segments and {name} segments
 * ("/execute/{id}/status"). Unknown paths answer 404 not_found; known paths with another
 * method answer 405 method_not_allowed with an Allow header. */
typedef struct http_route {
    const char *method;
    const char *pattern;
    http_handler_cb handler;
} http_route;

/** What a protocol module registers: its routes, the data its handlers receive as call->data,
 * and optional hooks. stop runs from server_stop (in registration order; it must drop work in
 * flight without answering), free from server_free (both receive data). For HTTP errors that
 * h2o raises itself before any handler runs (413 over the body limit, 400 for broken framing)
 * on a path under error_prefix, error_doc (when set) gives the body to send instead of the
 * JSON error document (a new reference; code is the error document's code word); MCP answers in
 * JSON-RPC's error shape that way. For the router's own refusals (401, 403, 429, 503) it may
 * return NULL: the answer then has no body (Dify's bare 401). */
typedef struct http_protocol {
    const char *name;
    const http_route *routes;
    size_t nroutes;
    void *data;
    void (*stop)(void *data);
    void (*free)(void *data);
    const char *error_prefix;
    json_t *(*error_doc)(int status, const char *code, const char *message);
    /* When set and nonzero for a request, the router does not ask it for an API key: the
     * protocol's handler authenticates it itself (E2B's sandbox traffic carries a per-sandbox
     * access token instead) and call->who is NULL. */
    int (*own_auth)(h2o_req_t *req);
    /* When set: for a request under error_prefix that carries no Authorization or X-API-Key
     * header, where else its API key may be (Jupyter's ?token= and login cookie): 1 with
     * *tok[0..*len) (valid during the request), else 0. */
    int (*credential)(void *data, h2o_req_t *req, const char **tok, size_t *len);
} http_protocol;

/** Adds a protocol's routes after those registered before (the first matching route wins); p
 * and its route table are copied, the route strings and data are borrowed. Call after
 * server_start and before the loop runs, at most HTTP_MAX_PROTOCOLS times. */
#define HTTP_MAX_PROTOCOLS 12
void server_register(rb_server *s, const http_protocol *p);

/** Starts listening on cfg->listen ("host:port", port 0 = any) on loop, with no routes until
 * protocols register (server_register). cfg and core are borrowed and must outlive the server.
 * RB_EINVAL for a bad address, RB_EIO when it cannot bind (then *out is untouched, nothing
 * to free). On success *out is owned by the caller: server_stop, run the loop, server_free. */
rb_err server_start(uv_loop_t *loop, const server_settings *cfg, rb_core *core, rb_server **out, char *err);
/** Reads the API key file again (SIGHUP): RB_OK with *nkeys keys in force, or the error (the
 * keys in force are kept). RB_EINVAL when runboxd runs without --api-keys-file. */
rb_err server_reload_keys(rb_server *s, size_t *nkeys, char *err);
/** Whether runboxd checks API keys (--api-keys-file). */
int server_has_keys(const rb_server *s);
/** Whether tok[0..len) is an API key of s's key file (always, without keys): for a protocol that
 * takes a key in its own way first (Jupyter's password login). Spends one of the key's rps=. */
int server_key_valid(rb_server *s, const char *tok, size_t len);
/** The caller of the enabled API key named owner (valid until server_free), or NULL when there
 * is none (also without API keys, where NULL is the one trusted caller). */
const core_caller *server_caller(rb_server *s, const char *owner);

/** The port actually bound (useful with port 0). */
int server_port(const rb_server *s);
/** The address actually bound, as "host:port" (borrowed, valid until server_stop). */
const char *server_address(const rb_server *s);
/** Stops accepting and ends open event streams; h2o is torn down once the last connection
 * has closed, so run the loop afterwards. Accepts NULL; a second call does nothing. */
void server_stop(rb_server *s);
/** Whether the server has stopped and every connection has closed (then server_free frees it
 * all). After server_stop, requests that still arrive on open connections are answered 503
 * shutting_down with Retry-After. */
int server_drained(const rb_server *s);
/** Frees the server after server_stop and a loop run that closed its connections. If
 * connections were still open, h2o cannot be torn down safely and the memory is left to
 * process exit (a warning is logged). Accepts NULL. */
void server_free(rb_server *s);

/** Retry-After (seconds) of every 429 and 503 answer that does not set its own: the HTTP layer
 * adds it to the answers of every protocol (RFC 6585, RFC 9110), so handlers set the header only
 * when they know a better wait. */
#define HTTP_RETRY_AFTER "5"

/** HTTP status for an rb_err, per the contract (RB_EINVAL -> 400, ... RB_EINTERNAL -> 500). */
int http_status_of(rb_err e);

/** Answers with status and body encoded compactly as application/json, with a Content-Length.
 * body is borrowed; NULL answers with no body (Content-Length: 0, no Content-Type). */
void http_send_json(h2o_req_t *req, int status, json_t *body);
/** Answers 204 No Content. */
void http_send_no_content(h2o_req_t *req);
/** Answers with status and one Server-Sent Event carrying body (borrowed, compact JSON):
 * "event: message\ndata: <body>\n\n" as a complete text/event-stream response with a
 * Content-Length (MCP's answer to a client that asked for an event stream). */
void http_send_event(h2o_req_t *req, int status, json_t *body);
/** Answers 200 with bytes[0..len) (borrowed: they must stay valid until the response is done) as
 * a download: Content-Type type, Content-Disposition attachment named name (an ASCII fallback
 * and the exact UTF-8 name), no-store, nosniff. */
void http_send_attachment(h2o_req_t *req, const char *bytes, size_t len, const char *type, const char *name);
/** How a protocol answers an error in its own shape (http_send_error, AgentRun's, ...). */
typedef void (*http_fail_fn)(h2o_req_t *req, rb_err e, const char *message);
/** The answer to a finished download (server/transfer.h) as REST and AgentRun give it: on e,
 * the error through fail, with Retry-After: 1 when RB_EBUSY (download memory frees up once the
 * files in flight are sent); else file as http_send_attachment of type (NULL: the file's own)
 * named name (NULL: the file's own). */
void http_send_download(h2o_req_t *req, rb_err e, const char *msg, const core_file *file, const char *type,
                        const char *name, http_fail_fn fail);
/** Answers {"error": {"code": code, "message": message}} with status. */
void http_send_error_as(h2o_req_t *req, int status, const char *code, const char *message);
/** Answers the error document for e (status from http_status_of, code from rb_strerror). */
void http_send_error(h2o_req_t *req, rb_err e, const char *message);
/** For a route only an admin key may call (role=admin; without keys the one trusted caller is
 * one): 1 when call->who may, else 0 after answering 403 naming the key and its role (doing
 * what, in words, for the message). */
int http_require_admin(http_call *call, const char *doing);
/** For a GET that changes something (it opens a stream that stores state): 1 unless call->who is a
 * viewer key, else 0 after answering 403 naming the key and its role (doing what, in words). */
int http_require_change(http_call *call, const char *doing);

/** Reads the request body as one JSON object. An empty body gives NULL in *out when
 * empty_ok, else RB_EINVAL. RB_EMEDIA when a body comes with a Content-Type other than
 * application/json (parameters such as charset allowed), RB_ETOOBIG beyond max bytes,
 * RB_EINVAL with the parser's line and column for malformed JSON (a string with \u0000 is) or when
 * the value is not an object, or naming an id member (session_id, request_id, sandboxID, a mount's
 * volume or share, ... at any depth) that holds a control character. *out is a new reference. */
rb_err http_read_json(h2o_req_t *req, size_t max, int empty_ok, json_t **out, char *err);

/** Like http_read_json for any JSON value (an object, or an array for JSON-RPC batches); an
 * empty body is RB_EINVAL. *out is a new reference. */
rb_err http_read_json_value(h2o_req_t *req, size_t max, json_t **out, char *err);

/** Copies s into req->pool as a NUL-terminated string. */
char *http_pool_strdup(h2o_req_t *req, const char *s, size_t len);

/** Value of a query parameter of req (first occurrence), NUL-terminated in req->pool, or NULL.
 * %XX escapes are decoded; '+' stays a '+' (RFC 3986: "c++.txt" is that name; a space is %20).
 * It holds no NUL or other control character: the router refused such a query before any route
 * ran (and a path segment likewise: the path parameters hold none either). */
const char *http_query_param(h2o_req_t *req, const char *name);

/** A long-lived response (an event stream) that server_stop must end. The owner embeds one,
 * sets shutdown and tracks it; server_stop untracks each and calls shutdown(l) once. */
typedef struct http_stream_link {
    h2o_linklist_t link;
    rb_server *server; /* set by server_track_stream */
    void (*shutdown)(struct http_stream_link *l);
} http_stream_link;
/** Whether another long-lived stream may open (fewer than max-streams are tracked); when not,
 * returns 0 with err saying so and how to do without (the caller answers 429; it is counted
 * as a refusal, HTTP_REFUSED_STREAMS). */
int server_stream_room(rb_server *s, char *err);
/** Takes n bytes of the memory that event streams share for slow clients (max-stream-memory):
 * returns 1, or 0 (nothing taken) when they would pass it, unless force (a short note). */
int server_stream_memory_take(rb_server *s, size_t n, int force);
/** Gives back n bytes taken with server_stream_memory_take. */
void server_stream_memory_give(rb_server *s, size_t n);
/** Tracks l (its link must not be tracked already). */
void server_track_stream(rb_server *s, http_stream_link *l);
/** Stops tracking l; does nothing if it is not tracked. */
void server_untrack_stream(http_stream_link *l);

/** Why the HTTP layer refused a request itself (the reason label of runbox_http_refusals_total). */
typedef enum http_refusal {
    HTTP_REFUSED_HOST,      /* a Host that is not served (DNS-rebinding defence) */
    HTTP_REFUSED_ORIGIN,    /* a browser Origin that is not allowed */
    HTTP_REFUSED_STOPPING,  /* runboxd is shutting down */
    HTTP_REFUSED_STREAMS,   /* max-streams event streams are open */
    HTTP_REFUSED_BODY,      /* a body over max-body (JSON) or max-upload */
    HTTP_REFUSED_MALFORMED, /* h2o could not read the request */
    HTTP_REFUSED_AUTH,      /* no API key, or one that is not valid */
    HTTP_REFUSED_RATE,      /* an API key's rps quota */
    HTTP_REFUSED_CONNECTIONS, /* max-connections client connections are open */
    HTTP_REFUSED_ROLE,      /* a viewer key's change, or an admin's route asked by another key */
    HTTP_REFUSED_MAX
} http_refusal;
/** The label value of r ("host", "origin", "stopping", "too_many_streams", "body_too_large",
 * "bad_request", "unauthorized", "rate_limited", "too_many_connections", "role"); a static string. */
const char *http_refusal_name(http_refusal r);
/** Counts a refusal a protocol answered itself (e.g. a role refusal on traffic that carries no API
 * key), under why. */
void server_count_refusal(rb_server *s, http_refusal why);

/** Status classes counted: 2xx..5xx (index status / 100 - 2). */
#define HTTP_STATUS_CLASSES 4
/** What the HTTP layer has counted since server_start. */
typedef struct http_stats {
    size_t nprotocols;
    const char *protocol[HTTP_MAX_PROTOCOLS]; /* registered protocol names, borrowed */
    /* Answered requests by the protocol whose route the path matches (index into protocol;
     * nprotocols for paths that match no route) and status class. */
    uint64_t requests[HTTP_MAX_PROTOCOLS + 1][HTTP_STATUS_CLASSES];
    uint64_t refusals[HTTP_REFUSED_MAX];
    uint64_t body_bytes_in, body_bytes_out; /* request and response bodies (no headers) */
    size_t streams; /* open event streams (tracked with server_track_stream) */
} http_stats;
/** Fills *out with the server's counts. */
void server_stats(const rb_server *s, http_stats *out);

#endif

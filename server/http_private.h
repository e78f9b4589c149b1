/*
 * http_private.h: what the files of the HTTP layer share and nothing above it may use: the
 * server object, registered routes, and the helpers the listener (http.c), the router
 * (router.c) and the answers (reply.c) call across files.
 */
#ifndef RB_SERVER_HTTP_PRIVATE_H
#define RB_SERVER_HTTP_PRIVATE_H

#include "server/auth.h"
#include "server/http.h"

struct rb_server {
    h2o_globalconf_t globalconf;
    h2o_context_t ctx;
    h2o_accept_ctx_t accept_ctx;
    uv_tcp_t listener;
    uv_loop_t *loop;
    const server_settings *cfg;
    rb_core *core;
    auth *keys; /* the API keys, or NULL without --api-keys-file */
    http_protocol protocols[HTTP_MAX_PROTOCOLS];
    size_t nprotocols;
    struct routed *routes; /* every protocol's routes in registration order (heap) */
    size_t nroutes;
    size_t conns;         /* open client connections, refused ones included until they close */
    size_t refused_conns; /* connections refused since the last warning about it */
    int64_t refused_logged; /* when that warning was last logged (monotonic ms) */
    size_t stream_memory; /* bytes event streams hold unsent (sse.c), at most cfg->max_stream_memory */
    int stopping, listener_closed, disposed;
    h2o_linklist_t streams; /* http_stream_link.link of open event streams */
    size_t nstreams;
    http_stats counts; /* requests, refusals, bytes (server_stats fills in the rest) */
    int port;
    char address[80];
};

/* A registered route and the protocol it belongs to. */
struct routed {
    http_route route;
    const http_protocol *protocol;
};

typedef struct route_handler {
    h2o_handler_t super;
    rb_server *server;
} route_handler;

typedef struct server_conn {
    uv_tcp_t tcp;
    rb_server *server;
    /* A connection over max-connections: answered 429, then read until the client closes or
     * the timer fires; never handed to h2o. */
    uv_timer_t *linger;
    uv_shutdown_t shutdown;
    char sink[256];
} server_conn;

/* The server a request came to: its h2o context is the one embedded in rb_server. */
static inline rb_server *http__server_of(h2o_req_t *req)
{
    return H2O_STRUCT_FROM_MEMBER(rb_server, ctx, req->conn->ctx);
}

/** h2o's handler at "/": the Host/Origin/stopping checks, then the route table (router.c). */
int http__on_req(h2o_handler_t *self, h2o_req_t *req);
/** Counts an answered request under the protocol whose route its path matches (router.c). */
void http__count_request(rb_server *s, h2o_req_t *req);
/** The error code word for an HTTP status ("not_found", ...) (reply.c). */
const char *http__code_of_status(int status);
/** body encoded compactly into req->pool (reply.c). */
h2o_iovec_t http__encode(h2o_req_t *req, json_t *body);
/** {"error": {"code", "message"}} (new reference) (reply.c). */
json_t *http__error_doc(const char *code, const char *message);
/** The error document for an error answered outside any handler, in the shape of the
 * protocol whose error_prefix the path starts with, else http__error_doc (new reference)
 * (router.c). */
json_t *http__protocol_error_doc(rb_server *s, h2o_req_t *req, int status, const char *code, const char *msg);

#endif

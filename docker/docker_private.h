/*
 * docker_private.h: what the files of the docker module share: docker.c (the client's lifetime
 * and curl on the loop), request.c (requests, budgets, deadlines, completions), container.c
 * (container and image calls), archive.c and attach.c (the raw attach stream). Not part of the
 * module's interface: nothing outside docker/ includes it. The client's fields are defined here
 * for docker.c and request.c only; the Engine API calls use the accessors below.
 */
#ifndef RB_DOCKER_PRIVATE_H
#define RB_DOCKER_PRIVATE_H

#include <curl/curl.h>
#include <openssl/ssl.h>

#include "docker/docker.h"

/* The range of Engine API versions this client speaks (docker_ping_version caps to it). */
#define DOCKER__API_MIN 41
#define DOCKER__API_MAX 47

/* Connection budgets: short calls, long calls (waits and transfers). Pings have none. */
enum { DOCKER__BUDGET_SHORT, DOCKER__BUDGET_LONG, DOCKER__BUDGETS };

struct poll_ctx; /* one per socket curl watches (docker.c) */

/* The client. docker.c owns its lifetime, the multi handle, the poll handles and curl's timer;
 * request.c owns the request lists, the budgets, the completion FIFO and the other two timers. */
struct docker {
    uv_loop_t *loop;
    char *socket_path; /* the engine's unix socket; NULL for a tcp:// engine */
    char *host;        /* a tcp:// engine's host name or address ([] stripped), else NULL */
    int port;
    char *where;       /* how messages name the engine: the socket path or tcp://host:port */
    char *base_url;    /* what request URLs start with: http://localhost, http(s)://host:port */
    char *tls_ca, *tls_cert, *tls_key; /* PEM files of a TLS engine, else NULL */
    SSL_CTX *ssl_ctx;  /* attach streams to a TLS engine (curl makes its own) */
    char api[16];
    CURLM *multi;
    docker_timeouts to;
    uv_timer_t timer; /* curl's timeout */
    uv_timer_t defer; /* drains completions on the next loop turn (cancellations) */
    uv_timer_t queue_timer; /* the earliest deadline of a request waiting for a connection */
    int open_timers;
    int freeing;
    int dispatching;
    docker_req *inflight;
    int active[DOCKER__BUDGETS]; /* requests in flight per budget */
    docker_req *queue_head[DOCKER__BUDGETS], *queue_tail[DOCKER__BUDGETS];
    docker_req *done_head, *done_tail;
    docker_req *delivering; /* the raw request whose successful callback runs (docker_raw_take) */
    struct poll_ctx *polls;
    docker_attach *attaches;
    docker_stats stats; /* request.c and attach.c count, through docker__observe */
};

/** Drains curl's finished transfers into the completion FIFO, gives freed connections to
 * waiting requests and runs the completed callbacks (request.c; after curl_multi_socket_action). */
void docker__check_multi_info(docker *d);
/** Runs the callbacks of completed requests in order, then docker__finalize if the client is
 * being freed; a call from inside one of those callbacks returns at once (request.c). */
void docker__dispatch_done(docker *d);
/** Marks every request in flight or waiting for a connection as cancelled and moves it to the
 * completion FIFO, running no callback (request.c; for docker_free). */
void docker__req_cancel_all(docker *d);
/** Releases curl and starts closing the client's handles; the last close frees d (docker.c).
 * Called once every callback has run; does nothing the second time. */
void docker__finalize(docker *d);

/** The loop the client runs on. */
uv_loop_t *docker__loop(docker *d);
/** The engine's socket path (owned by d), or NULL for a tcp:// engine. */
const char *docker__socket_path(docker *d);
/** How messages name the engine: its socket path or tcp://host:port (owned by d). */
const char *docker__where(const docker *d);
/** Non-zero once docker_free has started: no new work is accepted. */
int docker__freeing(const docker *d);
/** Head of the client's list of live attach streams (attach.c links and unlinks them). */
docker_attach **docker__attach_head(docker *d);
/** Closes an attach stream on behalf of docker_free: unlinks it, no callback runs afterwards. */
void docker__attach_abort(docker_attach *a);
/** Non-zero if s is a plausible container id or name (no characters that need escaping). */
int docker__valid_ref(const char *s);
/** RB_OK if id (may be NULL) is a valid container or exec reference (docker__valid_ref), else
 * RB_EINVAL with the rule in err. */
rb_err docker__check_ref(const char *id, char *err);
/** The kind of a call, which decides its connection budget and default deadline (docker.h). */
typedef enum docker__kind {
    DOCKER__SHORT, /* short_ms; at most DOCKER_SHORT_CONNECTIONS at once */
    DOCKER__WAIT,  /* long_ms; shares the long budget (DOCKER_LONG_CONNECTIONS) with transfers */
    DOCKER__TRANSFER, /* transfer_ms; the long budget */
    DOCKER__PING,  /* ping_ms; never waits for a connection */
} docker__kind;
/** Counts a completed call of kind op started at started_ns (uv_hrtime) that succeeded
 * (failure < 0) or failed with failure (a docker_failure) (request.c). */
void docker__observe(docker *d, docker_op op, uint64_t started_ns, int failure);
/** The kind of operation of a call of method on path (the API version prefix left out). */
docker_op docker__op_of(const char *method, const char *path);
/** The client's deadlines (borrowed). */
const docker_timeouts *docker__timeouts(const docker *d);
/** docker_request as a call of the given kind (JSON answer). */
rb_err docker__request(docker *d, docker__kind kind, const char *method, const char *path, json_t *body,
                       long timeout_ms, docker_cb cb, void *data, docker_req **out, char *err);
/** docker_request_raw as a call of the given kind (DOCKER__WAIT or DOCKER__TRANSFER). */
rb_err docker__request_raw(docker *d, docker__kind kind, const char *method, const char *path,
                           const char *content_type, const void *body, size_t len, size_t max_resp, long timeout_ms,
                           docker_raw_cb cb, void *data, docker_req **out, char *err);
/** docker__request of method pre<id>post (body borrowed, may be NULL) after docker__check_ref(id). */
rb_err docker__ref_request(docker *d, docker__kind kind, const char *method, const char *pre, const char *id,
                           const char *post, json_t *body, long timeout_ms, docker_cb cb, void *data, char *err);

#endif

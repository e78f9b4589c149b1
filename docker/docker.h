/*
 * docker: a client for the Docker Engine API on its unix socket, running on the libuv loop.
 * The only module that includes curl/curl.h. JSON calls go through libcurl's multi socket API
 * driven by the loop (curl docs/examples/multi-uv.c); the attach stream that carries a
 * sandbox's stdin/stdout is a raw HTTP/1.1 Upgrade over a uv_pipe_t, because libcurl 7.88
 * cannot write to an upgraded connection. It knows nothing of sessions or runners.
 *
 * Async contract (libuv style): a call that fails synchronously returns an error and never
 * calls its callback; one that starts calls its callback exactly once, later, on the loop,
 * with RB_ECANCELED if it was cancelled or the client freed.
 */
#ifndef RB_DOCKER_H
#define RB_DOCKER_H

#include <stddef.h>
#include <jansson.h>
#include <uv.h>

#include "base/base.h"
#include "base/latency.h"

typedef struct docker docker;
typedef struct docker_req docker_req;

/** Creates a client for the engine at socket_path, with the deadlines of
 * docker_timeouts_default. Does no I/O. */
rb_err docker_new(uv_loop_t *loop, const char *socket_path, docker **out, char *err);
/** Where an engine listens and how to trust it. url is "unix:///path/to.sock" (or a plain path)
 * or "tcp://HOST:PORT" (HOST a name, an IPv4 address or [an IPv6 address]). For tcp://, the
 * three PEM files are all given (TLS: the engine's certificate is checked against tls_ca and
 * its name or address, and tls_cert/tls_key are runboxd's client certificate, as dockerd
 * --tlsverify requires) or all NULL (plain TCP: only for engines on a network of their own). */
typedef struct docker_endpoint {
    const char *url;
    const char *tls_ca, *tls_cert, *tls_key;
} docker_endpoint;
/** Checks an endpoint without I/O but reading the TLS files: RB_EINVAL naming what is wrong. */
rb_err docker_endpoint_check(const docker_endpoint *ep, char *err);
/** docker_new for the engine at ep (borrowed; copied). Reads the TLS files (RB_EINVAL naming one
 * that cannot be used); no other I/O. */
rb_err docker_new_endpoint(uv_loop_t *loop, const docker_endpoint *ep, docker **out, char *err);
/** Cancels every request in flight (their callbacks run with RB_ECANCELED before this returns
 * or on the next loop turn) and closes attach streams. Handles finish closing on the loop:
 * run the loop until it has no active handles before freeing it. Accepts NULL. */
void docker_free(docker *d);

/** The loop d runs on (for timers of its callers). */
uv_loop_t *docker_loop(docker *d);
/** The API version in use ("1.41"); set by docker_ping_version, defaults to "1.41". */
const char *docker_api_version(const docker *d);

/*
 * Deadlines and connections. No call waits without a deadline: each has a connect timeout and
 * a total deadline counted from the call (time spent waiting for a free connection included);
 * a call that passes timeout_ms 0 gets the default of its kind below. When a deadline passes
 * the callback runs with RB_ETIMEDOUT and a message naming the engine and the call; the engine
 * may still carry the call out (a container may appear after its create timed out).
 *
 * Calls are of two kinds with separate connection budgets, so that long calls cannot starve
 * short ones: long calls (container wait and logs, exec start, archive put and get: anything
 * sent with docker_request_raw) use at most DOCKER_LONG_CONNECTIONS connections, short calls
 * (everything else sent with docker_request: create, start, kill, remove, inspect, list, ...)
 * at most DOCKER_SHORT_CONNECTIONS; calls beyond a budget wait in order for a connection of
 * their kind. docker_ping_version never waits for a connection. Attach streams have their own
 * connections (one each) and a deadline only until the engine answers the upgrade.
 */
#define DOCKER_SHORT_CONNECTIONS 8
#define DOCKER_LONG_CONNECTIONS 16

/** Deadlines of a client's calls, in milliseconds (each must be > 0). */
typedef struct docker_timeouts {
    long connect_ms;  /* connecting to the engine's socket, every call and attach */
    long ping_ms;     /* docker_ping_version (the health probe) */
    long short_ms;    /* short calls passing timeout_ms 0 (create, start, remove, inspect, ...) */
    long transfer_ms; /* container logs and archive put/get (docker_request_raw with timeout_ms 0) */
    long long_ms;     /* container wait and exec start passing timeout_ms 0 */
    long attach_ms;   /* attach: from the call until the engine has answered the upgrade */
} docker_timeouts;

/** Fills t with the defaults: connect 3 s, ping 5 s, short calls 30 s, transfers 120 s, waits and
 * exec starts 30 min, attach handshakes 30 s. Never fails. */
void docker_timeouts_default(docker_timeouts *t);
/** Replaces d's deadlines with *t (copied) for calls started from now on. RB_EINVAL (nothing
 * changed) when a member is not positive. */
rb_err docker_set_timeouts(docker *d, const docker_timeouts *t, char *err);

/*
 * Statistics. Every call is counted once it completes (a cancelled one is not), by the kind of
 * Engine API operation, with the time from the call to its outcome (waiting for a connection
 * included) and, if it failed, why. An attach counts its handshake: from docker_attach_start
 * until the stream is open or has failed. The counters only grow while the client lives.
 */
typedef enum docker_op {
    DOCKER_OP_CREATE,  /* POST /containers/create */
    DOCKER_OP_START,   /* POST /containers/{id}/start */
    DOCKER_OP_ATTACH,  /* the attach handshake */
    DOCKER_OP_EXEC,    /* exec create, start and inspect */
    DOCKER_OP_ARCHIVE, /* archive put and get */
    DOCKER_OP_WAIT,    /* POST /containers/{id}/wait */
    DOCKER_OP_REMOVE,  /* DELETE /containers/{id} */
    DOCKER_OP_INSPECT, /* GET /containers/{id}/json */
    DOCKER_OP_PING,    /* GET /version */
    DOCKER_OP_OTHER,   /* the rest: list, kill, logs, stats, images, volumes */
    DOCKER_OP_MAX
} docker_op;

/** Why a call failed. */
typedef enum docker_failure {
    DOCKER_FAIL_TIMEOUT,     /* its deadline passed (docker_timeouts) */
    DOCKER_FAIL_UNREACHABLE, /* no connection to the engine's socket could be made */
    DOCKER_FAIL_CONNECTION,  /* the connection broke, or the answer was cut short, malformed or too big */
    DOCKER_FAIL_HTTP_4XX,    /* the engine answered 400 to 499 (404 and 409 included) */
    DOCKER_FAIL_HTTP_5XX,    /* the engine answered 500 or above */
    DOCKER_FAIL_MAX
} docker_failure;

/** Label values: "create", "start", ... "other"; "timeout", "unreachable", "connection",
 * "http_4xx", "http_5xx" (static strings; "" out of range). */
const char *docker_op_name(docker_op op);
const char *docker_failure_name(docker_failure f);

/** A client's counts: latency[op] of every completed call, failures[op][why] of failed ones. */
typedef struct docker_stats {
    rb_latency latency[DOCKER_OP_MAX];
    uint64_t failures[DOCKER_OP_MAX][DOCKER_FAIL_MAX];
} docker_stats;

/** Copies d's counts into *out. */
void docker_stats_read(const docker *d, docker_stats *out);

/**
 * Result of a JSON call. status is the HTTP status (0 if none was received). body is the
 * parsed JSON response (NULL when empty or not JSON), borrowed: valid only during the
 * callback (json_incref to keep it). For err != RB_OK, errmsg says what failed (for HTTP
 * errors, Docker's "message"). An HTTP status >= 400 is reported as err = RB_EIO except:
 * 404 -> RB_ENOTFOUND, 409 -> RB_ECONFLICT. Connection failures -> RB_EUNAVAILABLE.
 */
typedef void (*docker_cb)(void *data, rb_err err, const char *errmsg, int status, json_t *body);

/**
 * Sends `method` `/v<api>/<path>` (path starts with '/', includes any query string, already
 * URL-encoded) with an optional JSON body (borrowed; serialised before return) as a short call.
 * timeout_ms is its total deadline (0: the client's short_ms). *out (may be NULL) receives a
 * handle valid until the callback runs.
 */
rb_err docker_request(docker *d, const char *method, const char *path, json_t *body, long timeout_ms,
                      docker_cb cb, void *data, docker_req **out, char *err);
/**
 * Result of a raw (non-JSON) call: on success body/len are the response bytes (borrowed, valid
 * only during the callback unless taken with docker_raw_take; body is never NULL then). Errors as for docker_cb, with Docker's
 * "message" in errmsg for HTTP errors; RB_ETOOBIG when the answer exceeds max_resp.
 */
typedef void (*docker_raw_cb)(void *data, rb_err err, const char *errmsg, int status, const char *body, size_t len);

/**
 * Like docker_request, with a binary body (len bytes copied before return; NULL for none) sent
 * with Content-Type content_type (NULL: application/octet-stream) and a binary answer of at
 * most max_resp bytes (0: 8 MiB), as a long call (timeout_ms 0: the client's transfer_ms).
 * Used for the archive API (tar bodies), container logs and exec starts.
 */
rb_err docker_request_raw(docker *d, const char *method, const char *path, const char *content_type,
                          const void *body, size_t len, size_t max_resp, long timeout_ms, docker_raw_cb cb, void *data,
                          docker_req **out, char *err);

/**
 * Takes over the answer of the docker_request_raw whose callback is running: body must be the
 * pointer that callback received on success. The caller then owns it (free() it; it stays
 * NUL-terminated after len bytes) and the request no longer frees it, so a large answer need
 * not be copied to outlive the callback. Returns NULL (nothing taken) when called anywhere
 * else or with another pointer.
 */
char *docker_raw_take(docker *d, const char *body);

/** Cancels a request in flight: its callback runs once with RB_ECANCELED (not synchronously). */
void docker_req_cancel(docker_req *r);

/** GET /version (unversioned); on success stores the engine's ApiVersion, capped to the
 * range this client supports (1.41 .. 1.47), for later calls. body is the /version JSON.
 * Deadline: the client's ping_ms; it never waits behind other calls for a connection. */
rb_err docker_ping_version(docker *d, docker_cb cb, void *data, char *err);

/* Convenience wrappers over docker_request (same contract; the name says the Engine API call). */
/** POST /containers/create?name=name (name may be NULL) with config; the answer is {Id, Warnings}. */
rb_err docker_container_create(docker *d, const char *name, json_t *config, docker_cb cb, void *data, char *err);
/** POST /containers/{id}/start. */
rb_err docker_container_start(docker *d, const char *id, docker_cb cb, void *data, char *err);
/** POST /containers/{id}/update {"CpuShares": shares}: the container's relative CPU weight. */
rb_err docker_container_cpu_shares(docker *d, const char *id, int64_t shares, docker_cb cb, void *data, char *err);
/** POST /containers/{id}/pause (on != 0: the cgroup freezer stops every process) or /unpause.
 * RB_EBUSY when the freezer gave up on processes that kept changing (cgroup v1's "unable to
 * freeze"; the container runs on unfrozen): worth another try in a moment. */
rb_err docker_container_pause(docker *d, const char *id, int on, docker_cb cb, void *data, char *err);
/** POST /containers/{id}/kill?signal=signal ("KILL", "INT", ...). */
rb_err docker_container_kill(docker *d, const char *id, const char *signal, docker_cb cb, void *data, char *err);
/** DELETE /containers/{id}?force=1&v=1 */
rb_err docker_container_remove(docker *d, const char *id, docker_cb cb, void *data, char *err);
/** GET /containers/{id}/json. */
rb_err docker_container_inspect(docker *d, const char *id, docker_cb cb, void *data, char *err);
/** GET /containers/json?all=1&filters={"label":[label]} ; label like "runbox.instance" or "k=v". */
rb_err docker_container_list(docker *d, const char *label, docker_cb cb, void *data, char *err);
/** GET /containers/{id}/stats?stream=false&one-shot=true: one reading of the container's
 * cgroup counters ({read, cpu_stats, memory_stats, pids_stats, networks?}), at once rather than
 * after Docker's second reading (so precpu_stats is empty: a caller compares two readings). */
rb_err docker_container_stats(docker *d, const char *id, docker_cb cb, void *data, char *err);
/** GET /images/{name}/json (RB_ENOTFOUND when the engine lacks the image). */
rb_err docker_image_inspect(docker *d, const char *name, docker_cb cb, void *data, char *err);

/*
 * Networks (docker/container.c): names and ids are 1-256 characters of [A-Za-z0-9_.-].
 */
/** POST /networks/create {Name, Internal, Driver: bridge, Labels} (labels borrowed: an object of
 * strings, NULL for none); internal != 0 makes a network without a route out whose bridge has no
 * address of the host either (com.docker.network.bridge.inhibit_ipv4), so that its members reach
 * only each other. The answer is {Id}. */
rb_err docker_network_create(docker *d, const char *name, int internal, json_t *labels, docker_cb cb, void *data,
                             char *err);
/** POST /networks/{net}/connect: joins the container (created, running or not) to net, reachable there
 * under its name and alias (NULL: none). */
rb_err docker_network_connect(docker *d, const char *net, const char *container, const char *alias, docker_cb cb,
                              void *data, char *err);
/** DELETE /networks/{net}: RB_ENOTFOUND if it does not exist, RB_ECONFLICT/RB_EIO while a container uses it. */
rb_err docker_network_remove(docker *d, const char *net, docker_cb cb, void *data, char *err);
/** GET /volumes?filters={"label":[label],"dangling":["true"]}: {"Volumes": [{Name, Labels, ...}]},
 * the volumes with that label that no container (running or not) uses. */
rb_err docker_volume_list_dangling(docker *d, const char *label, docker_cb cb, void *data, char *err);
/** GET /networks?filters={"label":[label]}: an array of {Name, Id, Labels, ...}. */
rb_err docker_network_list(docker *d, const char *label, docker_cb cb, void *data, char *err);
/*
 * Archive API and friends (docker/archive.c). Paths inside the container are absolute, at most
 * 4096 bytes, and are URL-encoded here. The archive API sees a running container's volumes but
 * not its tmpfs mounts, and refuses writes to a read-only root file system outside volumes.
 */
/** PUT /containers/{id}/archive?path=dir: extracts the tar (len bytes, copied) into dir, which
 * must exist. cb's body is Docker's (empty) answer. */
rb_err docker_archive_put(docker *d, const char *id, const char *dir, const void *tar, size_t len, docker_raw_cb cb,
                          void *data, char *err);
/** GET /containers/{id}/archive?path=path: a tar of path (a file, or a directory and everything
 * under it, named by its last component). RB_ENOTFOUND when path does not exist; RB_ETOOBIG
 * when the tar exceeds max bytes. */
rb_err docker_archive_get(docker *d, const char *id, const char *path, size_t max, docker_raw_cb cb, void *data,
                          char *err);
/** POST /containers/{id}/wait (answers {StatusCode} when the container stops), a long call;
 * timeout_ms 0: the client's long_ms. */
rb_err docker_container_wait(docker *d, const char *id, long timeout_ms, docker_cb cb, void *data, char *err);
/** GET /containers/{id}/logs?stdout=1&stderr=1: multiplexed frames (feed them to docker_demux)
 * for a container created with Tty=false; at most max bytes. */
rb_err docker_container_logs(docker *d, const char *id, size_t max, docker_raw_cb cb, void *data, char *err);
/** POST /containers/{id}/exec with config ({Cmd, User, Env, WorkingDir, AttachStdout, ...});
 * the answer is {Id}. */
rb_err docker_exec_create(docker *d, const char *id, json_t *config, docker_cb cb, void *data, char *err);
/** POST /exec/{exec_id}/start {Detach:false, Tty:false}: runs the process and answers, once it
 * has exited, with its multiplexed output (feed it to docker_demux), at most max bytes. A long
 * call; timeout_ms 0: the client's long_ms. */
rb_err docker_exec_start(docker *d, const char *exec_id, size_t max, long timeout_ms, docker_raw_cb cb, void *data,
                         char *err);
/** GET /exec/{exec_id}/json ({Running, ExitCode, ...}). */
rb_err docker_exec_inspect(docker *d, const char *exec_id, docker_cb cb, void *data, char *err);
/** POST /volumes/create with config ({Name, Labels, Driver, DriverOpts}); creating an existing
 * name answers it again. */
rb_err docker_volume_create(docker *d, json_t *config, docker_cb cb, void *data, char *err);
/** DELETE /volumes/{name}: RB_ENOTFOUND if it does not exist, RB_ECONFLICT while a container uses it. */
rb_err docker_volume_remove(docker *d, const char *name, docker_cb cb, void *data, char *err);

/*
 * Attach: POST /containers/{id}/attach?stream=1&stdin=1&stdout=1&stderr=1 with
 * `Upgrade: tcp`, then raw bytes both ways. The container must be created with Tty=false and
 * OpenStdin=true, so output arrives multiplexed in 8-byte-header frames; the stream is
 * demultiplexed here and delivered as payload bytes per stream.
 */
typedef struct docker_attach docker_attach;
typedef struct docker_attach_cbs {
    /** Once: RB_OK when the upgrade succeeded (writes are accepted from then on), or the error
     * (then on_close is not called and the handle is released by the module). */
    void (*on_open)(void *data, rb_err err, const char *errmsg);
    /** Zero or more times after a successful open: stream is 1 (stdout) or 2 (stderr); buf is
     * valid only during the call. */
    void (*on_data)(void *data, int stream, const char *buf, size_t len);
    /** Once after a successful open, when the stream ends (RB_OK for EOF, else the error),
     * unless docker_attach_close was called first. */
    void (*on_close)(void *data, rb_err err, const char *errmsg);
} docker_attach_cbs;

/** Starts attaching; cbs is copied. on_open reports RB_ETIMEDOUT if the engine has not answered
 * the upgrade within the client's attach_ms. *out is valid until on_open reports an error,
 * on_close runs, or docker_attach_close is called. */
rb_err docker_attach_start(docker *d, const char *container_id, const docker_attach_cbs *cbs, void *data,
                           docker_attach **out, char *err);
/** Starts an exec created with docker_exec_create and streams its output while it runs:
 * POST /exec/{exec_id}/start {Detach:false, Tty:tty} with `Upgrade: tcp`, then the same
 * stream and callbacks as docker_attach_start (on_close with RB_OK once the command has exited
 * and its output is complete; read its exit code with docker_exec_inspect). tty must be what the
 * exec was created with: with a terminal the output is the terminal's raw bytes (on_data's
 * stream 1), else frames. Writes reach the command's stdin only if the exec was created with
 * AttachStdin. */
rb_err docker_exec_attach(docker *d, const char *exec_id, int tty, const docker_attach_cbs *cbs, void *data,
                          docker_attach **out, char *err);
/** POST /exec/{exec_id}/resize?h=rows&w=cols: the terminal of an exec created with Tty gets
 * that size (its process group gets SIGWINCH). */
rb_err docker_exec_resize(docker *d, const char *exec_id, unsigned rows, unsigned cols, docker_cb cb, void *data,
                          char *err);
/** Queues bytes for the container's stdin (copied). RB_ECONFLICT if not open or closed;
 * RB_ETOOBIG if more than 64 MiB is already queued. */
rb_err docker_attach_write(docker_attach *a, const char *buf, size_t len, char *err);
/** Ends the input after what is queued (shutdown(SHUT_WR)): the engine then closes the
 * command's stdin (an exec's; a container's with StdinOnce). Output goes on. RB_ECONFLICT if not
 * open or already ended. */
rb_err docker_attach_close_write(docker_attach *a, char *err);
/** Closes the stream; no callback runs after this returns. Memory is released on the loop. */
void docker_attach_close(docker_attach *a);
/** Stops (paused != 0) or resumes reading the container's output: while paused the container's
 * writes block once the pipe is full (back-pressure on a sandbox that writes too fast). Does
 * nothing unless the stream is open. */
void docker_attach_pause(docker_attach *a, int paused);

/*
 * The frame demultiplexer, exposed for tests and fuzzing: feed arbitrary bytes, get payloads.
 * A header with stream > 2 or a length over 16 MiB is a protocol error (RB_EIO).
 */
typedef struct docker_demux {
    unsigned char hdr[8];
    size_t hdr_len;
    uint32_t remaining;
    int stream;
} docker_demux;
typedef void (*docker_demux_cb)(void *data, int stream, const char *buf, size_t len);
/** Resets m to expect a frame header. */
void docker_demux_init(docker_demux *m);
/** Feeds len bytes of the multiplexed stream; cb runs once per payload piece (a frame may be
 * split over several calls and pieces). RB_EIO for a malformed header (m must then be reset). */
rb_err docker_demux_feed(docker_demux *m, const char *buf, size_t len, docker_demux_cb cb, void *data);

#endif

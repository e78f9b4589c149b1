/*
 * backend_docker: the sandbox backend (core/backend/backend.h) on one Docker Engine, over the client in
 * docker/. Its .c files (docker.c, docker_exec.c) are the only ones in core/ that
 * include that client's header; this one does not, so that core.c can make the default backend
 * without seeing the Engine API.
 */
#ifndef RB_CORE_BACKEND_DOCKER_H
#define RB_CORE_BACKEND_DOCKER_H

#include <jansson.h>
#include <uv.h>

#include "core/backend/backend.h"

/** Creates the Docker backend for the engine at socket_path, on loop. Does no I/O (the first
 * backend_ping says whether the engine answers). call_ms is the deadline of the calls that
 * should answer at once (create, start, remove, inspect, exec create, the attach handshake),
 * transfer_ms that of the calls that move files (archive, logs); 0 keeps the client's default
 * (docker_timeouts_default). RB_EINVAL for an unusable socket path or a negative deadline. *out
 * is owned by the caller (backend_free). */
rb_err backend_docker_new(uv_loop_t *loop, const char *socket_path, long call_ms, long transfer_ms, backend **out,
                          char *err);

/** Where a Docker engine listens and how to trust it: url is unix:///path (or a plain socket
 * path) or tcp://HOST:PORT; for tcp://, the CA, client certificate and key (PEM files) are all
 * set for TLS or all NULL (plain TCP). Borrowed by the calls below. */
typedef struct backend_docker_engine {
    const char *url;
    const char *tls_ca, *tls_cert, *tls_key;
    const char *runtimes; /* the OCI runtimes it offers, "runc+runsc" (backend_runtimes_check); NULL: runc */
} backend_docker_engine;
/** Checks an engine's address, its runtime list and reads its TLS files, without other I/O:
 * RB_EINVAL naming the problem. */
rb_err backend_docker_check(const backend_docker_engine *eng, char *err);
/** backend_docker_new for the engine eng (a unix socket or a tcp:// address, with TLS). */
rb_err backend_docker_new_at(uv_loop_t *loop, const backend_docker_engine *eng, long call_ms, long transfer_ms,
                             backend **out, char *err);
/** Exported for tests: the Engine API container configuration (POST /containers/create body)
 * that backend_create sends for spec. New reference. */
json_t *backend_docker__container_config(const backend_spec *spec);
/** Exported for tests: the same for backend_run (not attachable: no stdin, no attach flags).
 * New reference. */
json_t *backend_docker__run_config(const backend_spec *spec);

#endif

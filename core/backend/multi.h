/*
 * backend_multi: the sandbox backend (core/backend/backend.h) over several Docker engines, each a
 * backend_docker of its own (a unix socket, or tcp:// with TLS). It places every new sandbox on
 * one engine and names it "ENGINE@ID", so that every later call about it goes to that engine;
 * names of volumes and networks are pinned the same way (backend_pin), so that the dependency
 * installer runs where the session's workspace is and the web-page reader's three parts meet on
 * one engine. A sandbox id without "@" (stored by a runboxd of one engine) is the first engine's.
 *
 * Placement: the least loaded engine that can take the sandbox, by its sandboxes over its
 * capacity (ties to the engine listed first). One runboxd places every sandbox, so its counts
 * are exact and least-loaded needs no sampling (best-of-K exists to spread the choices of many
 * schedulers that each see stale load). An engine is left out while its last probe failed, while
 * it does not offer the runtime the sandbox asks for (runtimes=, default runc), while
 * it lacks the sandbox image or has another image under its name than the first engine that has
 * it (the message says which, and how to load it), while it is drained (backend_drain), and once
 * it holds its capacity. Nothing placed is ever moved or re-run elsewhere.
 *
 * The probe (backend_ping) asks every engine at once and answers RB_OK when at least one
 * answers; backend_engines tells each one's state. backend_list asks every engine and fails,
 * naming the engine, when one does not answer (so recovery waits instead of taking the
 * sandboxes of an unreachable engine for gone).
 */
#ifndef RB_CORE_BACKEND_MULTI_H
#define RB_CORE_BACKEND_MULTI_H

#include <uv.h>

#include "core/backend/backend.h"
#include "core/backend/docker.h"

/** One engine of backend_multi_new. */
typedef struct backend_multi_engine {
    const char *name;          /* 1-32 of [a-z0-9_-] */
    backend_docker_engine at;  /* where it listens, how to trust it */
    int capacity;              /* sandboxes it may hold (> 0) */
} backend_multi_engine;

/** Reads "NAME=URL[,capacity=N][,runtimes=runc+runsc][,ca=PATH][,cert=PATH][,key=PATH]" into *out, its strings
 * pointing into the heap copy *own (free() it after use); TLS files not given are taken from
 * the shared ca/cert/key (may be NULL). RB_EINVAL naming what is wrong. No I/O. */
rb_err backend_multi_parse(const char *text, const char *ca, const char *cert, const char *key,
                           backend_multi_engine *out, char **own, char *err);

/** The backend over engines[0..n) (n >= 1, names unique; borrowed for the call), whose
 * sandboxes run image; call_ms and transfer_ms as for backend_docker_new. *out is owned by the
 * caller (backend_free). */
rb_err backend_multi_new(uv_loop_t *loop, const backend_multi_engine *engines, size_t n, const char *image,
                         long call_ms, long transfer_ms, backend **out, char *err);

#endif

/*
 * docker_private.h: what the two files of the Docker backend share (docker.c:
 * containers, attach, files, one-shot runs; docker_exec.c: commands). Included by those
 * two only; like them, it sees the Engine API client in docker/.
 */
#ifndef RB_CORE_BACKEND_DOCKER_PRIVATE_H
#define RB_CORE_BACKEND_DOCKER_PRIVATE_H

#include <jansson.h>

#include "base/mem.h"
#include "core/backend/backend.h"

struct docker;
struct exit_wait;

/** The backend's self: the Engine API client and what the backend keeps beside it. Every op
 * of the table (core/backend/backend.h) gets it as self; nothing of it is process-wide. */
typedef struct backend_docker {
    struct docker *d;           /* owned */
    struct exit_wait *waiters;  /* the waits for an exec's exit code in progress (docker_exec.c) */
    char *runtimes;             /* the runtimes it offers ("runc+runsc"), owned */
} backend_docker;

/** self as the Docker client. */
#define DK(self) (((backend_docker *)(self))->d)

/** A JSON array of the NULL-terminated string list (an empty array for NULL). New reference. */
json_t *backend_docker__string_list(const char *const *list);
/** Sets obj[key] to the string list when list is not NULL. */
void backend_docker__set_list(json_t *obj, const char *key, const char *const *list);
/** A JSON object of the n labels (docker_spec.c). New reference. */
json_t *backend_docker__label_object(const backend_label *labels, size_t n);
/** RB_EUNAVAILABLE when the engine does not offer sp's runtime (docker_spec.c). */
rb_err backend_docker__runtime_check(const backend_docker *bd, const backend_spec *sp, char *err);
/** RB_EINVAL when a volume of sp names no volume or host path, or holds a ':' (docker_spec.c). */
rb_err backend_docker__volumes_check(const backend_spec *sp, char *err);
/** Reports a finished command or run to cb: on success its exit code and out[1], out[2] (stdout,
 * stderr); else err and errmsg. Then disposes of the buffers out[0..3). */
void backend_docker__report_output(backend_exec_cb cb, void *data, rb_err err, const char *errmsg, int exit_code,
                                   rb_buf *out);
/** Ends bd's waits for exit codes that are between two inspects, with RB_ECANCELED: the
 * backend is being freed. */
void backend_docker__exit_wait_drop(backend_docker *bd);

/* The exec members of the backend's ops table (core/backend/backend.h has their contracts). */
rb_err backend_docker__exec(void *self, const char *id, const backend_exec_spec *spec, backend_exec_cb cb, void *data,
                            char *err);
rb_err backend_docker__exec_stream(void *self, const char *id, const backend_exec_spec *spec,
                                   const backend_stream_cbs *cbs, void *data, backend_stream **out, char *err);
void backend_docker__stream_pause(void *self, backend_stream *x, int paused);
rb_err backend_docker__stream_write(void *self, backend_stream *x, const char *buf, size_t len, char *err);
rb_err backend_docker__stream_close_input(void *self, backend_stream *x, char *err);
void backend_docker__stream_close(void *self, backend_stream *x);
rb_err backend_docker__stream_resize(void *self, backend_stream *x, unsigned rows, unsigned cols, backend_cb cb,
                                     void *data, char *err);

#endif

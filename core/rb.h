/*
 * rb.h: the few things every runbox module shares: the project error enum, the error-text
 * buffer convention, the out-of-memory-aborting allocators, clocks, ids and the one logger.
 * It holds no policy and knows nothing of HTTP, SQL or Docker.
 */
#ifndef RB_H
#define RB_H

#include <stddef.h>
#include <stdint.h>
#include <stdarg.h>

/* Every fallible function returns an rb_err; detail text goes into a caller-supplied buffer of
 * RB_ERR_LEN bytes named `err` (may be NULL when the caller does not want it). The text says
 * what was wrong and, where possible, how to fix it; it is one line without a trailing dot. */
#define RB_ERR_LEN 512

typedef enum rb_err {
    RB_OK = 0,
    RB_EINVAL,       /* malformed input or wrong types (HTTP 400) */
    RB_ENOTFOUND,    /* unknown id (404) */
    RB_ECONFLICT,    /* the object is in the wrong state for this (409) */
    RB_ETOOBIG,      /* a size limit was exceeded (413) */
    RB_EMEDIA,       /* unsupported media type (415) */
    RB_EUNAVAILABLE, /* Docker (or another dependency) is unreachable (503) */
    RB_EBUSY,        /* a capacity limit was reached; retry later (429) */
    RB_ETIMEDOUT,    /* an operation did not finish in time */
    RB_ECANCELED,    /* an async operation was cancelled before it finished */
    RB_EIO,          /* I/O failure talking to a dependency (502 when it is Docker) */
    RB_ESTORE,       /* the SQLite store failed (500) */
    RB_EINTERNAL,    /* a bug or an impossible state (500) */
    RB_EFORBIDDEN,   /* the request is understood but not allowed: a path escaping the workspace, a
                        package the operator's policy forbids (403) */
    RB_ERR_MAX
} rb_err;

/** Stable lower-case name of an error code ("invalid_request", "not_found", ...). */
const char *rb_strerror(rb_err e);

/** Formats into err (if not NULL) and returns e, so callers can `return rb_fail(e, err, ...)`. */
rb_err rb_fail(rb_err e, char *err, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Allocators that abort the process on out-of-memory (h2o_mem_alloc style). */
void *xmalloc(size_t n);
void *xcalloc(size_t n, size_t size);
void *xrealloc(void *p, size_t n);
char *xstrdup(const char *s);
char *xstrndup(const char *s, size_t n);
/** snprintf into a new heap string; never returns NULL. */
char *xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/** Wall clock in milliseconds since the Unix epoch. */
int64_t rb_now_ms(void);
/** Monotonic clock in milliseconds. */
int64_t rb_mono_ms(void);
/** Formats epoch milliseconds as RFC 3339 UTC with milliseconds into buf (at least 32 bytes). */
void rb_time_format(int64_t ms, char *buf, size_t len);

/** Writes a random identifier `<prefix><32 lowercase hex chars>` (unguessable, from getrandom)
 * into buf, which must hold strlen(prefix) + 33 bytes. */
void rb_random_id(const char *prefix, char *buf, size_t len);

/* A growable byte buffer with a hard maximum (curl dynbuf style). */
typedef struct rb_buf {
    char *data;
    size_t len, cap, max;
} rb_buf;
void rb_buf_init(rb_buf *b, size_t max);
void rb_buf_dispose(rb_buf *b);
/** Appends; returns RB_ETOOBIG (and appends nothing) when len would exceed max. */
rb_err rb_buf_append(rb_buf *b, const void *p, size_t n);
void rb_buf_reset(rb_buf *b);
/** Removes the first n bytes. */
void rb_buf_consume(rb_buf *b, size_t n);

/* The one logger: one line per event, to stderr. Libraries return errors; the deciding layer logs. */
typedef enum rb_log_level { RB_LOG_DEBUG, RB_LOG_INFO, RB_LOG_WARN, RB_LOG_ERROR } rb_log_level;
void rb_log_set_level(rb_log_level lvl);
int rb_log_parse_level(const char *s, rb_log_level *out);
void rb_log(rb_log_level lvl, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
#define rb_debug(...) rb_log(RB_LOG_DEBUG, __VA_ARGS__)
#define rb_info(...) rb_log(RB_LOG_INFO, __VA_ARGS__)
#define rb_warn(...) rb_log(RB_LOG_WARN, __VA_ARGS__)
#define rb_error(...) rb_log(RB_LOG_ERROR, __VA_ARGS__)

#endif

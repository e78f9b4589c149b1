/*
 * err: the project's one error enum and the error-text convention. Every fallible function in
 * runbox returns an rb_err and writes a one-line explanation for the end user into a
 * caller-supplied buffer. No I/O, no allocation.
 */
#ifndef RB_BASE_ERR_H
#define RB_BASE_ERR_H

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
    RB_EQUOTA,       /* the caller's own quota (its API key's limit) was reached; retry later (429) */
    RB_ENOSPC,       /* the sandbox's storage (its workspace) is full (507) */
    RB_ERR_MAX
} rb_err;

/** Stable lower-case name of an error code ("invalid_request", "not_found", ...). */
const char *rb_strerror(rb_err e);

/** Formats into err (if not NULL) and returns e, so callers can `return rb_fail(e, err, ...)`. */
rb_err rb_fail(rb_err e, char *err, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#endif

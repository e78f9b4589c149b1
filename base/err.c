/*
 * err.c: names of the error codes and the formatter of error texts (base/err.h).
 */
#include "base/err.h"

#include <stdio.h>

static const char *const err_names[RB_ERR_MAX] = {
    [RB_OK] = "ok",
    [RB_EINVAL] = "invalid_request",
    [RB_ENOTFOUND] = "not_found",
    [RB_ECONFLICT] = "conflict",
    [RB_ETOOBIG] = "payload_too_large",
    [RB_EMEDIA] = "unsupported_media_type",
    [RB_EUNAVAILABLE] = "docker_unavailable",
    [RB_EBUSY] = "too_many_requests",
    [RB_ETIMEDOUT] = "timeout",
    [RB_ECANCELED] = "cancelled",
    [RB_EIO] = "upstream_error",
    [RB_ESTORE] = "store_error",
    [RB_EINTERNAL] = "internal_error",
    [RB_EFORBIDDEN] = "forbidden",
    [RB_EQUOTA] = "quota_exceeded",
    [RB_ENOSPC] = "insufficient_storage",
};

const char *rb_strerror(rb_err e)
{
    if ((unsigned)e >= RB_ERR_MAX)
        return "unknown_error";
    return err_names[e];
}

rb_err rb_fail(rb_err e, char *err, const char *fmt, ...)
{
    if (err != NULL) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, RB_ERR_LEN, fmt, ap);
        va_end(ap);
    }
    return e;
}

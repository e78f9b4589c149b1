/*
 * multipart: a bounded parser of multipart/form-data request bodies (RFC 7578), used by file
 * uploads. It works on a body already in memory and hands out parts as pointers into it; it
 * copies nothing and allocates nothing. The body is untrusted: every scan is bounded by the
 * body's length, header blocks and part counts have hard limits, and anything malformed is
 * RB_EINVAL with the reason. It knows nothing of h2o or of files (server/rest/rest.c decides).
 */
#ifndef RB_SERVER_MULTIPART_H
#define RB_SERVER_MULTIPART_H

#include <stddef.h>

#include "base/base.h"

#define MULTIPART_BOUNDARY_MAX 70 /* RFC 2046 */
#define MULTIPART_MAX_PARTS 64
#define MULTIPART_HEADERS_MAX 8192 /* bytes of one part's header block */

/** One part; every pointer is into the parsed body (not NUL-terminated), valid as long as it.
 * filename is NULL for a plain form field; content_type is NULL when the part has none. */
typedef struct multipart_part {
    const char *name;
    size_t name_len;
    const char *filename;
    size_t filename_len;
    const char *content_type;
    size_t content_type_len;
    const char *data;
    size_t len;
} multipart_part;

/** Called once per part, in order; return non-zero to stop (multipart_parse then returns RB_OK). */
typedef int (*multipart_part_cb)(void *data, const multipart_part *p);

/** Extracts the boundary parameter of a Content-Type value (len bytes) into out (at least
 * MULTIPART_BOUNDARY_MAX + 1 bytes). RB_EMEDIA when the type is not multipart/form-data,
 * RB_EINVAL when the boundary is missing or invalid. */
rb_err multipart_boundary(const char *ctype, size_t len, char *out, char *err);

/** Parses body[0..len) with the given boundary, calling cb per part. RB_EINVAL for a missing
 * opening or closing delimiter, a part without Content-Disposition: form-data and a name, an
 * over-long header block, or more than MULTIPART_MAX_PARTS parts. */
rb_err multipart_parse(const char *body, size_t len, const char *boundary, multipart_part_cb cb, void *data,
                       char *err);

#endif

/*
 * gzip.c: rb_gunzip (base/gzip.h) over zlib's inflate, growing its output in steps and never
 * past the caller's bound (a small body that inflates to gigabytes stops at the bound).
 */
#include "base/gzip.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "base/mem.h"

rb_err rb_gunzip(const void *in, size_t n, size_t max, char **out, size_t *len, char *err)
{
    z_stream z;
    memset(&z, 0, sizeof(z));
    *out = NULL;
    *len = 0;
    if (inflateInit2(&z, 16 + MAX_WBITS) != Z_OK) /* 16: gzip's header and trailer */
        return rb_fail(RB_EINTERNAL, err, "zlib could not start");
    size_t cap = n < 64 * 1024 ? 64 * 1024 : n * 2, used = 0;
    if (cap > max + 1)
        cap = max + 1;
    char *buf = xmalloc(cap + 1);
    const unsigned char *next = in;
    size_t left = n;
    rb_err e = RB_OK;
    int rc = Z_OK;
    while (e == RB_OK) {
        if (used == cap) {
            if (cap > max) {
                e = rb_fail(RB_ETOOBIG, err, "the body inflates to more than the %zu bytes a file may have", max);
                break;
            }
            cap = cap * 2 > max + 1 ? max + 1 : cap * 2;
            buf = xrealloc(buf, cap + 1);
        }
        z.next_in = (unsigned char *)next;
        z.avail_in = left > UINT32_MAX ? UINT32_MAX : (uInt)left;
        z.next_out = (unsigned char *)buf + used;
        z.avail_out = (uInt)(cap - used > UINT32_MAX ? UINT32_MAX : cap - used);
        uInt before_in = z.avail_in, before_out = z.avail_out;
        rc = inflate(&z, Z_NO_FLUSH);
        next += before_in - z.avail_in;
        left -= before_in - z.avail_in;
        used += before_out - z.avail_out;
        if (used > max) {
            e = rb_fail(RB_ETOOBIG, err, "the body inflates to more than the %zu bytes a file may have", max);
        } else if (rc == Z_STREAM_END) {
            if (left == 0)
                break;
            if (inflateReset(&z) != Z_OK) /* another member follows */
                e = rb_fail(RB_EINVAL, err, "the gzip body is not valid");
        } else if (rc == Z_BUF_ERROR && left == 0) {
            e = rb_fail(RB_EINVAL, err, "the gzip body ends before its end");
        } else if (rc != Z_OK && rc != Z_BUF_ERROR) {
            e = rb_fail(RB_EINVAL, err, "the body is not gzip: %s", z.msg != NULL ? z.msg : "bad data");
        }
    }
    inflateEnd(&z);
    if (e != RB_OK) {
        free(buf);
        return e;
    }
    buf[used] = '\0';
    *out = buf;
    *len = used;
    return RB_OK;
}

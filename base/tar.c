/*
 * tar.c: building and walking tar archives in memory (base/tar.h). Formats: POSIX ustar with
 * PAX extended headers ('x', 'g') as Go's archive/tar writes them for the Docker engine, and
 * the GNU long-name records ('L', 'K') some tools write. Numbers are octal text or GNU
 * base-256. Everything read from the buffer is bounds-checked before use.
 */
#include "base/tar.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BLOCK 512

/* Offsets of the ustar header fields. */
enum {
    H_NAME = 0,
    H_MODE = 100,
    H_UID = 108,
    H_GID = 116,
    H_SIZE = 124,
    H_MTIME = 136,
    H_CHKSUM = 148,
    H_TYPE = 156,
    H_LINK = 157,
    H_MAGIC = 257,
    H_VERSION = 263,
    H_UNAME = 265,
    H_GNAME = 297,
    H_PREFIX = 345,
};

/* ---- reading ---------------------------------------------------------------------------- */

/* Parses a numeric field: octal text (leading spaces, ended by NUL or space) or GNU base-256
 * (high bit of the first byte set; positive values up to 2^62 only). -1 if malformed. */
static int parse_num(const unsigned char *f, size_t n, uint64_t *out)
{
    uint64_t v = 0;
    if (f[0] & 0x80) {
        if (f[0] != 0x80)
            return -1; /* negative or huge */
        for (size_t i = 1; i < n; i++) {
            if (v >> 54)
                return -1;
            v = (v << 8) | f[i];
        }
        *out = v;
        return 0;
    }
    size_t i = 0;
    while (i < n && f[i] == ' ')
        i++;
    size_t digits = 0;
    for (; i < n && f[i] >= '0' && f[i] <= '7'; i++, digits++) {
        if (v >> 60)
            return -1;
        v = v * 8 + (uint64_t)(f[i] - '0');
    }
    for (; i < n; i++)
        if (f[i] != ' ' && f[i] != '\0')
            return -1;
    if (digits == 0 && f[0] != '\0' && f[0] != ' ')
        return -1;
    *out = v;
    return 0;
}

static int is_zero_block(const unsigned char *b)
{
    for (size_t i = 0; i < BLOCK; i++)
        if (b[i] != 0)
            return 0;
    return 1;
}

static int checksum_ok(const unsigned char *h)
{
    uint64_t want;
    if (parse_num(h + H_CHKSUM, 8, &want) != 0)
        return 0;
    uint64_t u = 0;
    int64_t s = 0;
    for (size_t i = 0; i < BLOCK; i++) {
        unsigned char c = (i >= H_CHKSUM && i < H_CHKSUM + 8) ? ' ' : h[i];
        u += c;
        s += (signed char)c;
    }
    return u == want || (s >= 0 && (uint64_t)s == want);
}

/* Copies a NUL-padded field of at most n bytes into dst (TAR_NAME_MAX + 1 bytes). */
static void field_str(char *dst, const unsigned char *f, size_t n)
{
    size_t k = 0;
    while (k < n && f[k] != '\0')
        k++;
    memcpy(dst, f, k);
    dst[k] = '\0';
}

/* Sets dst from len bytes that may contain a NUL terminator; -1 if too long or empty. */
static int set_name(char *dst, const char *src, size_t len)
{
    const char *nul = memchr(src, '\0', len);
    if (nul != NULL)
        len = (size_t)(nul - src);
    if (len > TAR_NAME_MAX)
        return -1;
    memcpy(dst, src, len);
    dst[len] = '\0';
    return 0;
}

/* Drops leading "./" and "/" and trailing '/' from a name, in place. */
static void tidy_name(char *s)
{
    size_t n = strlen(s), start = 0;
    for (;;) {
        if (n - start >= 2 && s[start] == '.' && s[start + 1] == '/')
            start += 2;
        else if (n - start >= 1 && s[start] == '/')
            start += 1;
        else
            break;
    }
    memmove(s, s + start, n - start + 1);
    n -= start;
    while (n > 0 && s[n - 1] == '/')
        s[--n] = '\0';
}

/* Overrides collected from PAX or GNU records for the next entry. */
typedef struct pending {
    int has_name, has_link, has_size;
    uint64_t size;
    char name[TAR_NAME_MAX + 1];
    char link[TAR_NAME_MAX + 1];
} pending;

/* Parses PAX records "<len> <key>=<value>\n" in p[0..n). -1 with *why on error. */
static int parse_pax(const char *p, size_t n, pending *pd, const char **why)
{
    size_t off = 0;
    while (off < n) {
        if (p[off] == '\0')
            break; /* NUL padding after the last record */
        size_t len = 0, i = off;
        while (i < n && p[i] >= '0' && p[i] <= '9') {
            if (len > n) {
                *why = "PAX record length too large";
                return -1;
            }
            len = len * 10 + (size_t)(p[i] - '0');
            i++;
        }
        if (i == off || i >= n || p[i] != ' ' || len <= i - off + 1 || len > n - off) {
            *why = "malformed PAX record length";
            return -1;
        }
        const char *kv = p + i + 1, *end = p + off + len - 1; /* end points at the '\n' */
        if (*end != '\n') {
            *why = "PAX record does not end with a newline";
            return -1;
        }
        const char *eq = memchr(kv, '=', (size_t)(end - kv));
        if (eq == NULL) {
            *why = "PAX record without '='";
            return -1;
        }
        size_t klen = (size_t)(eq - kv), vlen = (size_t)(end - eq - 1);
        const char *val = eq + 1;
        if (klen == 4 && memcmp(kv, "path", 4) == 0) {
            if (vlen > TAR_NAME_MAX || memchr(val, '\0', vlen) != NULL) {
                *why = "PAX path too long or contains NUL";
                return -1;
            }
            memcpy(pd->name, val, vlen);
            pd->name[vlen] = '\0';
            pd->has_name = 1;
        } else if (klen == 8 && memcmp(kv, "linkpath", 8) == 0) {
            if (vlen > TAR_NAME_MAX || memchr(val, '\0', vlen) != NULL) {
                *why = "PAX linkpath too long or contains NUL";
                return -1;
            }
            memcpy(pd->link, val, vlen);
            pd->link[vlen] = '\0';
            pd->has_link = 1;
        } else if (klen == 4 && memcmp(kv, "size", 4) == 0) {
            uint64_t v = 0;
            if (vlen == 0 || vlen > 18) {
                *why = "PAX size is not a number";
                return -1;
            }
            for (size_t k = 0; k < vlen; k++) {
                if (val[k] < '0' || val[k] > '9') {
                    *why = "PAX size is not a number";
                    return -1;
                }
                v = v * 10 + (uint64_t)(val[k] - '0');
            }
            pd->size = v;
            pd->has_size = 1;
        }
        off += len;
    }
    return 0;
}

rb_err tar_walk(const char *buf, size_t len, tar_entry_cb cb, void *data, char *err)
{
    const unsigned char *b = (const unsigned char *)buf;
    size_t off = 0;
    const char *why = NULL;
    tar_entry *e = xmalloc(sizeof(*e));
    pending *pd = xcalloc(1, sizeof(*pd));
    rb_err rc = RB_OK;

    while (len - off >= BLOCK) {
        const unsigned char *h = b + off;
        if (is_zero_block(h))
            break;
        if (!checksum_ok(h)) {
            why = "bad header checksum";
            goto fail;
        }
        uint64_t size, mode, mtime;
        if (parse_num(h + H_SIZE, 12, &size) != 0 || parse_num(h + H_MODE, 8, &mode) != 0 ||
            parse_num(h + H_MTIME, 12, &mtime) != 0) {
            why = "malformed numeric field";
            goto fail;
        }
        char type = h[H_TYPE] == '\0' ? TAR_FILE : (char)h[H_TYPE];
        if (pd->has_size && type != 'x' && type != 'g' && type != 'L' && type != 'K')
            size = pd->has_size ? pd->size : size;
        size_t room = len - off - BLOCK;
        if (size > room) {
            why = "entry data runs past the end of the archive";
            goto fail;
        }
        const char *payload = buf + off + BLOCK;
        size_t padded = (size_t)size + ((BLOCK - (size_t)size % BLOCK) % BLOCK);
        size_t next = padded > room ? len : off + BLOCK + padded;

        if (type == 'x') {
            if (parse_pax(payload, (size_t)size, pd, &why) != 0)
                goto fail;
        } else if (type == 'g') {
            /* global PAX header: nothing runbox needs */
        } else if (type == 'L' || type == 'K') {
            char *dst = type == 'L' ? pd->name : pd->link;
            if (size == 0 || set_name(dst, payload, (size_t)size) != 0) {
                why = "GNU long name empty or too long";
                goto fail;
            }
            if (type == 'L')
                pd->has_name = 1;
            else
                pd->has_link = 1;
        } else {
            if (pd->has_name) {
                memcpy(e->name, pd->name, strlen(pd->name) + 1);
            } else {
                char nm[101], px[156];
                field_str(nm, h + H_NAME, 100);
                field_str(px, h + H_PREFIX, 155);
                int ustar = memcmp(h + H_MAGIC, "ustar\0", 6) == 0;
                if (ustar && px[0] != '\0')
                    snprintf(e->name, sizeof(e->name), "%s/%s", px, nm);
                else
                    memcpy(e->name, nm, strlen(nm) + 1);
            }
            if (pd->has_link)
                memcpy(e->link, pd->link, strlen(pd->link) + 1);
            else
                field_str(e->link, h + H_LINK, 100);
            tidy_name(e->name);
            e->type = type;
            e->mode = (uint32_t)(mode & 07777);
            e->size = size;
            e->mtime = mtime > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)mtime;
            e->data = type == TAR_FILE || type == '7' ? payload : NULL;
            if (type == '7')
                e->type = TAR_FILE; /* contiguous file: a regular file */
            memset(pd, 0, sizeof(*pd));
            if (e->name[0] != '\0' && cb(data, e) != 0)
                break;
        }
        off = next;
    }
    goto done;

fail:
    rc = rb_fail(RB_EINVAL, err, "malformed tar archive at byte %zu: %s", off, why);
done:
    free(e);
    free(pd);
    return rc;
}

/* ---- writing ---------------------------------------------------------------------------- */

static void put_octal(unsigned char *f, size_t n, uint64_t v)
{
    /* n-1 octal digits and a NUL */
    f[n - 1] = '\0';
    for (size_t i = n - 1; i-- > 0;) {
        f[i] = (unsigned char)('0' + (v & 7));
        v >>= 3;
    }
}

static void put_size(unsigned char *f, uint64_t v)
{
    if (v < (1ull << 33)) {
        put_octal(f, 12, v);
        return;
    }
    memset(f, 0, 12); /* base-256 */
    f[0] = 0x80;
    for (size_t i = 11; i > 0 && v > 0; i--) {
        f[i] = (unsigned char)(v & 0xff);
        v >>= 8;
    }
}

static void make_header(unsigned char *h, const char *name, size_t nlen, char type, uint32_t mode, int uid, int gid,
                        uint64_t size, int64_t mtime)
{
    memset(h, 0, BLOCK);
    memcpy(h + H_NAME, name, nlen > 100 ? 100 : nlen);
    put_octal(h + H_MODE, 8, mode & 07777);
    put_octal(h + H_UID, 8, (uint64_t)(uid < 0 ? 0 : uid));
    put_octal(h + H_GID, 8, (uint64_t)(gid < 0 ? 0 : gid));
    put_size(h + H_SIZE, size);
    put_octal(h + H_MTIME, 12, (uint64_t)(mtime < 0 ? 0 : mtime));
    h[H_TYPE] = (unsigned char)type;
    memcpy(h + H_MAGIC, "ustar\0", 6);
    memcpy(h + H_VERSION, "00", 2);
    memcpy(h + H_UNAME, "sandbox", 7);
    memcpy(h + H_GNAME, "sandbox", 7);
    memset(h + H_CHKSUM, ' ', 8);
    unsigned sum = 0;
    for (size_t i = 0; i < BLOCK; i++)
        sum += h[i];
    put_octal(h + H_CHKSUM, 7, sum);
    h[H_CHKSUM + 7] = ' ';
}

static rb_err append_entry(rb_buf *out, const unsigned char *h, const void *data, size_t len)
{
    static const char zeros[BLOCK];
    rb_err e = rb_buf_append(out, h, BLOCK);
    if (e == RB_OK && len > 0)
        e = rb_buf_append(out, data, len);
    if (e == RB_OK && len % BLOCK != 0)
        e = rb_buf_append(out, zeros, BLOCK - len % BLOCK);
    return e;
}

rb_err tar_build_file(rb_buf *out, const char *name, const void *data, size_t len, uint32_t mode, int uid, int gid,
                      int64_t mtime, char *err)
{
    static const char zeros[2 * BLOCK];
    size_t nlen = name != NULL ? strlen(name) : 0;
    if (nlen == 0 || nlen > TAR_NAME_MAX)
        return rb_fail(RB_EINVAL, err, "a file name must be 1 to %d bytes", TAR_NAME_MAX);
    size_t start = out->len;
    unsigned char h[BLOCK];
    rb_err e = RB_OK;
    if (nlen > 100) {
        /* "<len> path=<name>\n" where <len> counts its own digits */
        size_t body = strlen(" path=\n") + nlen, total = body + 1;
        while (total != body + (size_t)snprintf(NULL, 0, "%zu", total))
            total = body + (size_t)snprintf(NULL, 0, "%zu", total);
        char *rec = xasprintf("%zu path=%s\n", total, name);
        make_header(h, "PaxHeader", 9, 'x', 0644, uid, gid, total, mtime);
        e = append_entry(out, h, rec, total);
        free(rec);
    }
    if (e == RB_OK) {
        make_header(h, name, nlen, TAR_FILE, mode, uid, gid, len, mtime);
        e = append_entry(out, h, data, len);
    }
    if (e == RB_OK)
        e = rb_buf_append(out, zeros, sizeof(zeros));
    if (e != RB_OK) {
        out->len = start;
        return rb_fail(RB_ETOOBIG, err, "the archive would exceed %zu bytes", out->max);
    }
    return RB_OK;
}

/*
 * multipart.c: multipart/form-data parsing (server/rest/multipart.h). Delimiters are found with
 * memmem bounded by the body's end; a header block must end within MULTIPART_HEADERS_MAX
 * bytes; only Content-Disposition (form-data, name, filename) and Content-Type are read.
 * Quoted parameter values are returned as they appear between the quotes and end at the next
 * quote: as browsers, curl and Python's clients write them (HTML's form encoding percent-encodes
 * a quote and leaves a backslash as it is), a backslash escapes nothing. A name ending in one
 * ("a\") used to read as an unterminated value.
 */
#include "server/rest/multipart.h"

#include <string.h>
#include <strings.h>

static int is_ws(char c)
{
    return c == ' ' || c == '\t';
}

static int ci_prefix(const char *p, size_t n, const char *lit)
{
    size_t k = strlen(lit);
    return n >= k && strncasecmp(p, lit, k) == 0;
}

/* RFC 2046 bchars */
static int is_bchar(char c)
{
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c != '\0' && strchr("'()+_,-./:=? ", c) != NULL);
}

/* Finds parameter `key` in "; k=v; k2=\"v2\"" (s[0..n)); the value goes to v and vlen. 1 found, 0 not, -1 malformed. */
static int find_param(const char *s, size_t n, const char *key, const char **v, size_t *vlen)
{
    size_t i = 0, klen = strlen(key);
    while (i < n) {
        while (i < n && (is_ws(s[i]) || s[i] == ';'))
            i++;
        size_t ks = i;
        while (i < n && s[i] != '=' && s[i] != ';')
            i++;
        size_t ke = i;
        while (ke > ks && is_ws(s[ke - 1]))
            ke--;
        const char *val = NULL;
        size_t vl = 0;
        if (i < n && s[i] == '=') {
            i++;
            while (i < n && is_ws(s[i]))
                i++;
            if (i < n && s[i] == '"') {
                size_t vs = ++i;
                while (i < n && s[i] != '"')
                    i++;
                if (i >= n)
                    return -1; /* unterminated quote */
                val = s + vs;
                vl = i - vs;
                i++;
            } else {
                size_t vs = i;
                while (i < n && s[i] != ';' && !is_ws(s[i]))
                    i++;
                val = s + vs;
                vl = i - vs;
            }
            while (i < n && s[i] != ';')
                i++;
        }
        if (ke - ks == klen && strncasecmp(s + ks, key, klen) == 0 && val != NULL) {
            *v = val;
            *vlen = vl;
            return 1;
        }
    }
    return 0;
}

rb_err multipart_boundary(const char *ctype, size_t len, char *out, char *err)
{
    size_t i = 0;
    while (i < len && is_ws(ctype[i]))
        i++;
    if (!ci_prefix(ctype + i, len - i, "multipart/form-data"))
        return rb_fail(RB_EMEDIA, err, "expected Content-Type: multipart/form-data");
    i += strlen("multipart/form-data");
    if (i < len && ctype[i] != ';' && !is_ws(ctype[i]))
        return rb_fail(RB_EMEDIA, err, "expected Content-Type: multipart/form-data");
    const char *v;
    size_t vl;
    int r = find_param(ctype + i, len - i, "boundary", &v, &vl);
    if (r <= 0)
        return rb_fail(RB_EINVAL, err, "multipart/form-data needs a boundary parameter in its Content-Type");
    if (vl == 0 || vl > MULTIPART_BOUNDARY_MAX || v[vl - 1] == ' ')
        return rb_fail(RB_EINVAL, err, "the multipart boundary must be 1 to %d characters", MULTIPART_BOUNDARY_MAX);
    for (size_t k = 0; k < vl; k++)
        if (!is_bchar(v[k]))
            return rb_fail(RB_EINVAL, err, "the multipart boundary contains a character RFC 2046 does not allow");
    memcpy(out, v, vl);
    out[vl] = '\0';
    return RB_OK;
}

/* Reads a part's header block [p, end); fills name/filename/content type. */
static rb_err parse_headers(const char *p, const char *end, multipart_part *part, char *err)
{
    int disposition = 0;
    while (p < end) {
        const char *eol = memmem(p, (size_t)(end - p), "\r\n", 2);
        if (eol == NULL)
            eol = end;
        const char *colon = memchr(p, ':', (size_t)(eol - p));
        if (colon == NULL)
            return rb_fail(RB_EINVAL, err, "a multipart header line has no ':'");
        const char *v = colon + 1;
        while (v < eol && is_ws(*v))
            v++;
        size_t vlen = (size_t)(eol - v);
        size_t nlen = (size_t)(colon - p);
        if (nlen == strlen("content-disposition") && strncasecmp(p, "content-disposition", nlen) == 0) {
            if (!ci_prefix(v, vlen, "form-data"))
                return rb_fail(RB_EINVAL, err, "a multipart part's Content-Disposition must be form-data");
            const char *rest = v + strlen("form-data");
            size_t rlen = vlen - strlen("form-data");
            int r1 = find_param(rest, rlen, "name", &part->name, &part->name_len);
            int r2 = find_param(rest, rlen, "filename", &part->filename, &part->filename_len);
            if (r1 < 0 || r2 < 0)
                return rb_fail(RB_EINVAL, err, "a multipart Content-Disposition has an unterminated quoted value");
            if (r1 == 0)
                return rb_fail(RB_EINVAL, err, "a multipart part has no name in its Content-Disposition");
            if (r2 == 0)
                part->filename = NULL;
            disposition = 1;
        } else if (nlen == strlen("content-type") && strncasecmp(p, "content-type", nlen) == 0) {
            part->content_type = v;
            part->content_type_len = vlen;
        }
        if (eol == end)
            break;
        p = eol + 2;
    }
    if (!disposition)
        return rb_fail(RB_EINVAL, err, "a multipart part has no Content-Disposition header");
    return RB_OK;
}

rb_err multipart_parse(const char *body, size_t len, const char *boundary, multipart_part_cb cb, void *data, char *err)
{
    char delim[MULTIPART_BOUNDARY_MAX + 5];
    size_t blen = strlen(boundary);
    if (blen == 0 || blen > MULTIPART_BOUNDARY_MAX)
        return rb_fail(RB_EINVAL, err, "the multipart boundary must be 1 to %d characters", MULTIPART_BOUNDARY_MAX);
    /* "\r\n--boundary"; the first delimiter may also start the body without the CRLF */
    delim[0] = '\r';
    delim[1] = '\n';
    delim[2] = '-';
    delim[3] = '-';
    memcpy(delim + 4, boundary, blen);
    size_t dlen = blen + 4;
    const char *end = body + len, *p;

    if (len >= dlen - 2 && memcmp(body, delim + 2, dlen - 2) == 0) {
        p = body + dlen - 2;
    } else {
        const char *d = memmem(body, len, delim, dlen);
        if (d == NULL)
            return rb_fail(RB_EINVAL, err, "the multipart body does not contain its boundary");
        p = d + dlen;
    }
    int parts = 0;
    for (;;) {
        /* p is just past a delimiter */
        if (end - p >= 2 && p[0] == '-' && p[1] == '-')
            return RB_OK; /* close delimiter; the epilogue is ignored */
        while (p < end && is_ws(*p))
            p++;
        if (end - p < 2 || p[0] != '\r' || p[1] != '\n')
            return rb_fail(RB_EINVAL, err, "a multipart delimiter is not followed by a line break");
        p += 2;
        if (++parts > MULTIPART_MAX_PARTS)
            return rb_fail(RB_EINVAL, err, "more than %d parts in a multipart body", MULTIPART_MAX_PARTS);
        multipart_part part;
        memset(&part, 0, sizeof(part));
        const char *hend, *ds;
        if (end - p >= 2 && p[0] == '\r' && p[1] == '\n') {
            hend = p;
            ds = p + 2;
        } else {
            size_t window = (size_t)(end - p);
            if (window > MULTIPART_HEADERS_MAX + 4)
                window = MULTIPART_HEADERS_MAX + 4;
            hend = memmem(p, window, "\r\n\r\n", 4);
            if (hend == NULL)
                return rb_fail(RB_EINVAL, err, "a multipart part's headers do not end within %d bytes",
                               MULTIPART_HEADERS_MAX);
            ds = hend + 4;
        }
        rb_err e = parse_headers(p, hend, &part, err);
        if (e != RB_OK)
            return e;
        const char *d = memmem(ds, (size_t)(end - ds), delim, dlen);
        if (d == NULL)
            return rb_fail(RB_EINVAL, err, "a multipart part is not closed by its boundary");
        part.data = ds;
        part.len = (size_t)(d - ds);
        if (cb(data, &part) != 0)
            return RB_OK;
        p = d + dlen;
    }
}

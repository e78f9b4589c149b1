/*
 * paths.c: a caller's path in the files API (files_normalize_path, core_file_path) and a file's
 * content type (files_content_type); see core/files/files.h and core/core.h. Split from files.c,
 * which runs the transfers.
 */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/files/files.h"

#include "base/codec.h"
#include "base/tar.h"
#include "core/files/file_helper.h"

/* Appends the segment seg[0..n) of a caller's path (name form, no '/') to b in canonical name
 * form, unless it is "." (nothing); RB_EFORBIDDEN for "..". */
static rb_err append_segment(rb_buf *b, const char *seg, size_t n, char *err)
{
    char *copy = xstrndup(seg, n), *raw;
    size_t len;
    rb_err e = codec_name_unescape(copy, &raw, &len, err);
    free(copy);
    if (e != RB_OK)
        return rb_fail(RB_EINVAL, err,
                       "path: a backslash starts an escape \\xhh of one byte, as listings write names that are "
                       "not UTF-8 text (a backslash itself is \\x5c)");
    if (memchr(raw, '/', len) != NULL || memchr(raw, '\0', len) != NULL)
        e = rb_fail(RB_EINVAL, err, "path: \\x2f ('/') and \\x00 cannot be part of a name");
    else if (len == 2 && raw[0] == '.' && raw[1] == '.')
        e = rb_fail(RB_EFORBIDDEN, err, "path: '..' is not allowed; give a path inside /workspace");
    else if (len > CORE_NAME_MAX_BYTES)
        e = rb_fail(RB_EINVAL, err,
                    "path: the name '%.40s...' is %zu bytes long; a file or folder name may have at most %d bytes",
                    seg, len, CORE_NAME_MAX_BYTES);
    if (e == RB_OK && !(len == 1 && raw[0] == '.')) {
        char *form = codec_name_escape(raw, len);
        if (b->len > 0)
            rb_buf_append(b, "/", 1);
        rb_buf_append(b, form, strlen(form));
        free(form);
    }
    free(raw);
    return e;
}

rb_err files_normalize_path(const char *path, rb_err root, char **out, char *err)
{
    *out = NULL;
    if (path == NULL || path[0] == '\0')
        return rb_fail(RB_EINVAL, err, "path: required (a path relative to /workspace, e.g. \"data/input.csv\")");
    size_t n = strlen(path), chars = 0, bytes = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)path[i];
        if (ch < 0x20 || ch == 0x7f)
            return rb_fail(RB_EINVAL, err,
                           "path: control characters are written as escapes \\xhh (a newline is \\x0a), as "
                           "listings write them");
        if (ch == '\\' && i + 3 < n && path[i + 1] == 'x')
            i += 3; /* an escape \xhh is one character and one byte of the name */
        chars += (ch & 0xc0) != 0x80;
        bytes++;
    }
    /* Characters of the names (an escape as one: a name of 255 bytes that are not text, 1020
     * characters in escape form, stays reachable; REST's path fields also keep openapi.yaml's
     * maxLength, which counts an escape's four characters of the JSON string: server/rest/rest.c);
     * the bytes within what the sandbox's file system and Docker's archive calls take. */
    if (chars > CORE_PATH_MAX_CHARS || bytes > TAR_NAME_MAX)
        return rb_fail(RB_EINVAL, err, "path: longer than %d characters", CORE_PATH_MAX_CHARS);
    const char *p = path;
    if (p[0] == '/') {
        size_t w = strlen(FILES_WORKSPACE);
        if (strncmp(p, FILES_WORKSPACE, w) != 0 || (p[w] != '\0' && p[w] != '/'))
            return rb_fail(RB_EFORBIDDEN, err,
                           "path: '%.200s' is outside /workspace; files can only be read or written under /workspace",
                           path);
        p += w;
    }
    rb_buf b;
    rb_buf_init(&b, n + 1);
    while (*p != '\0') {
        while (*p == '/')
            p++;
        if (*p == '\0')
            break;
        const char *end = strchr(p, '/');
        size_t seg = end ? (size_t)(end - p) : strlen(p);
        rb_err e = append_segment(&b, p, seg, err);
        if (e != RB_OK) {
            rb_buf_dispose(&b);
            return e;
        }
        p += seg;
    }
    rb_buf_append(&b, "", 1);
    if (b.len == 1 && root != RB_OK) {
        rb_buf_dispose(&b);
        const char *what = root == RB_EFORBIDDEN ? "which cannot be deleted; give a file or folder inside it"
                                                 : "a folder; give a file inside it";
        return rb_fail(root, err, "path: '%.200s' names /workspace itself, %s", path, what);
    }
    *out = b.data;
    return RB_OK;
}

rb_err core_file_path(const char *path, char **rel, char *err)
{
    return files_normalize_path(path, RB_OK, rel, err);
}

const char *files_content_type(const char *name)
{
    static const char *const types[][2] = {
        {".png", "image/png"},         {".jpg", "image/jpeg"},        {".jpeg", "image/jpeg"},
        {".gif", "image/gif"},         {".svg", "image/svg+xml"},     {".webp", "image/webp"},
        {".pdf", "application/pdf"},   {".json", "application/json"}, {".csv", "text/csv; charset=utf-8"},
        {".txt", "text/plain; charset=utf-8"}, {".md", "text/markdown; charset=utf-8"},
        {".html", "text/html; charset=utf-8"}, {".py", "text/x-python; charset=utf-8"},
        {".log", "text/plain; charset=utf-8"}, {".xml", "application/xml"}, {".zip", "application/zip"},
        {".gz", "application/gzip"},   {".tar", "application/x-tar"}, {".parquet", "application/vnd.apache.parquet"},
        {".xlsx", "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"},
    };
    const char *dot = strrchr(name, '.');
    if (dot != NULL)
        for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++)
            if (strcasecmp(dot, types[i][0]) == 0)
                return types[i][1];
    return "application/octet-stream";
}


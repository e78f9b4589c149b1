/*
 * sharespec.c: the operator's share declarations, a key's shares= list and a caller's mounts,
 * read and checked as text and JSON (core/shares/sharespec.h). No I/O.
 */
#include "core/shares/sharespec.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/codec.h"

int sharespec_name_ok(const char *name, size_t len)
{
    if (len == 0 || len > SHARESPEC_NAME_MAX)
        return 0;
    for (size_t i = 0; i < len; i++) {
        char ch = name[i];
        int ok = (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || (i > 0 && (ch == '_' || ch == '-'));
        if (!ok)
            return 0;
    }
    return 1;
}

/* The next item of text separated by newlines, commas or semicolons, blanks around it dropped
 * and empty items skipped (as codec_list_next, with more separators). */
static int next_item(const char **p, const char **item, size_t *len)
{
    const char *s = *p;
    if (s == NULL)
        return 0;
    for (;;) {
        while (*s == ' ' || *s == '\t' || *s == '\n' || *s == ',' || *s == ';' || *s == '\r')
            s++;
        if (*s == '\0') {
            *p = s;
            return 0;
        }
        const char *e = s;
        while (*e != '\0' && *e != '\n' && *e != ',' && *e != ';')
            e++;
        const char *end = e;
        while (end > s && (end[-1] == ' ' || end[-1] == '\t' || end[-1] == '\r'))
            end--;
        *p = e;
        if (end > s) {
            *item = s;
            *len = (size_t)(end - s);
            return 1;
        }
        s = e;
    }
}

/* Why the host path p[0..len) is not in plain absolute form, or NULL when it is. */
static const char *host_path_problem(const char *p, size_t len)
{
    if (len == 0 || p[0] != '/')
        return "the path must be absolute (start with /)";
    if (len > SHARESPEC_HOST_PATH_MAX)
        return "the path is too long";
    if (len > 1 && p[len - 1] == '/')
        return "the path must not end with /";
    for (size_t i = 0; i < len; i++) {
        unsigned char ch = (unsigned char)p[i];
        if (ch < 0x20 || ch == 0x7f)
            return "the path holds a control character";
        if (ch == ':' || ch == ',' || ch == ';')
            return "the path may not contain ':', ',' or ';' (Docker reads a bind's ':' as a separator)";
    }
    for (size_t i = 0; i < len;) {
        size_t j = i + 1;
        while (j < len && p[j] != '/')
            j++;
        size_t n = j - i - 1; /* the component after the '/' at i */
        if (n == 0 && len > 1)
            return "the path has an empty component (//)";
        if ((n == 1 && p[i + 1] == '.') || (n == 2 && p[i + 1] == '.' && p[i + 2] == '.'))
            return "the path may not have '.' or '..' components (give it in plain form)";
        i = j;
    }
    return NULL;
}

void sharespec_list_dispose(sharespec_list *l)
{
    if (l == NULL)
        return;
    for (size_t i = 0; i < l->n; i++)
        free(l->v[i].host_path);
    free(l->v);
    l->v = NULL;
    l->n = 0;
}

rb_err sharespec_parse(const char *text, sharespec_list *out, char *err)
{
    out->v = NULL;
    out->n = 0;
    const char *p = text, *item;
    size_t len;
    rb_err e = RB_OK;
    while (next_item(&p, &item, &len)) {
        int shown = (int)(len > 200 ? 200 : len);
        const char *eq = memchr(item, '=', len);
        if (eq == NULL) {
            e = rb_fail(RB_EINVAL, err, "share: '%.*s' is not NAME=/host/path[:ro|:rw]", shown, item);
            goto fail;
        }
        size_t nlen = (size_t)(eq - item);
        if (!sharespec_name_ok(item, nlen)) {
            e = rb_fail(RB_EINVAL, err,
                        "share: '%.*s': the name must be 1 to 63 lower-case letters, digits, '_' or '-', starting "
                        "with a letter or digit",
                        shown, item);
            goto fail;
        }
        const char *path = eq + 1, *end = item + len;
        const char *colon = memchr(path, ':', (size_t)(end - path));
        size_t plen = colon ? (size_t)(colon - path) : (size_t)(end - path);
        int rw = 0;
        if (colon != NULL) {
            size_t mlen = (size_t)(end - colon - 1);
            if (mlen == 2 && memcmp(colon + 1, "rw", 2) == 0)
                rw = 1;
            else if (!(mlen == 2 && memcmp(colon + 1, "ro", 2) == 0)) {
                e = rb_fail(RB_EINVAL, err, "share %.*s: '%.*s' is not a mode; use :ro (the default) or :rw",
                            (int)nlen, item, (int)(mlen > 40 ? 40 : mlen), colon + 1);
                goto fail;
            }
        }
        const char *why = host_path_problem(path, plen);
        if (why != NULL) {
            e = rb_fail(RB_EINVAL, err, "share %.*s: '%.*s': %s", (int)nlen, item, (int)(plen > 200 ? 200 : plen),
                        path, why);
            goto fail;
        }
        for (size_t i = 0; i < out->n; i++)
            if (strlen(out->v[i].name) == nlen && memcmp(out->v[i].name, item, nlen) == 0) {
                e = rb_fail(RB_EINVAL, err, "share %.*s: declared twice", (int)nlen, item);
                goto fail;
            }
        if (out->n == SHARESPEC_MAX) {
            e = rb_fail(RB_EINVAL, err, "share: at most %d shares", SHARESPEC_MAX);
            goto fail;
        }
        out->v = xrealloc(out->v, (out->n + 1) * sizeof(*out->v));
        sharespec_decl *d = &out->v[out->n++];
        memcpy(d->name, item, nlen);
        d->name[nlen] = '\0';
        d->host_path = xstrndup(path, plen);
        d->rw = rw;
    }
    return RB_OK;
fail:
    sharespec_list_dispose(out);
    return e;
}

const sharespec_decl *sharespec_find(const sharespec_list *l, const char *name)
{
    for (size_t i = 0; name != NULL && i < l->n; i++)
        if (strcmp(l->v[i].name, name) == 0)
            return &l->v[i];
    return NULL;
}

rb_err sharespec_key_check(const char *list, char *err)
{
    if (list == NULL || strcmp(list, "none") == 0 || strcmp(list, "*") == 0)
        return RB_OK;
    const char *p = list, *item;
    size_t len, n = 0;
    while (codec_list_next(&p, &item, &len)) {
        if (!sharespec_name_ok(item, len))
            return rb_fail(RB_EINVAL, err,
                           "'%.*s' is not a share name (lower-case letters, digits, '_' and '-'); shares= takes "
                           "none, * or names separated by commas",
                           (int)(len > 64 ? 64 : len), item);
        n++;
    }
    if (n == 0)
        return rb_fail(RB_EINVAL, err, "shares= takes none, * or share names separated by commas");
    return RB_OK;
}

int sharespec_allowed(const core_caller *who, const char *name)
{
    if (who == NULL)
        return 1;
    const char *list = who->shares;
    if (list == NULL || list[0] == '\0' || strcmp(list, "none") == 0)
        return 0;
    if (strcmp(list, "*") == 0)
        return 1;
    const char *p = list, *item;
    size_t len;
    while (codec_list_next(&p, &item, &len))
        if (strlen(name) == len && memcmp(name, item, len) == 0)
            return 1;
    return 0;
}

rb_err sharespec_mount_path(const char *path, size_t len, const char *what, char **out, char *err)
{
    static const char root[] = SHARESPEC_ROOT;
    int shown = (int)(len > 200 ? 200 : len);
    size_t rl = sizeof(root) - 1;
    const char *rel = path;
    size_t rlen = len;
    if (len > 0 && path[0] == '/') {
        if (len < rl || memcmp(path, root, rl) != 0 || (len > rl && path[rl] != '/'))
            return rb_fail(RB_EINVAL, err, "%s: '%.*s' is not under /workspace; mounts go in /workspace/NAME",
                           what, shown, path);
        rel = path + rl + (len > rl);
        rlen = len - rl - (len > rl);
    }
    if (rlen == 0)
        return rb_fail(RB_EINVAL, err, "%s: nothing can be mounted over /workspace itself; give /workspace/NAME",
                       what);
    if (len > SHARESPEC_PATH_MAX)
        return rb_fail(RB_EINVAL, err, "%s: longer than %d bytes", what, SHARESPEC_PATH_MAX);
    for (size_t i = 0; i < rlen; i++) {
        unsigned char ch = (unsigned char)rel[i];
        if (ch < 0x20 || ch == 0x7f || ch == ':' || ch == ',' || ch == '\\')
            return rb_fail(RB_EINVAL, err, "%s: '%.*s' holds a character a mount path may not have (a control "
                                           "character, ':', ',' or '\\')",
                           what, shown, path);
    }
    int first = 1;
    for (size_t i = 0; i <= rlen;) {
        size_t j = i;
        while (j < rlen && rel[j] != '/')
            j++;
        size_t n = j - i;
        if (n == 0 || (n == 1 && rel[i] == '.') || (n == 2 && rel[i] == '.' && rel[i + 1] == '.'))
            return rb_fail(RB_EINVAL, err, "%s: '%.*s' has an empty, '.' or '..' component; give a plain path "
                                           "such as /workspace/photos",
                           what, shown, path);
        if (n > 255)
            return rb_fail(RB_EINVAL, err, "%s: a name longer than 255 bytes", what);
        if (first && n == 7 && memcmp(rel + i, ".runbox", 7) == 0)
            return rb_fail(RB_EINVAL, err, "%s: /workspace/.runbox is runbox's own (installed packages)", what);
        first = 0;
        i = j + 1;
    }
    *out = xasprintf("%s/%.*s", root, (int)rlen, rel);
    return RB_OK;
}

/* The names of the shares of l who may mount, as "a, b" (or "none"), into buf. */
static void available(const sharespec_list *l, const core_caller *who, char *buf, size_t size)
{
    buf[0] = '\0';
    for (size_t i = 0; i < l->n; i++)
        if (sharespec_allowed(who, l->v[i].name))
            snprintf(buf + strlen(buf), size - strlen(buf), "%s%s", buf[0] ? ", " : "", l->v[i].name);
    if (buf[0] == '\0')
        snprintf(buf, size, "none");
}

rb_err sharespec_check_paths(json_t *mounts, const char *what, char *err)
{
    size_t i, j;
    json_t *a, *b;
    json_array_foreach(mounts, i, a)
    {
        const char *pa = json_string_value(json_object_get(a, "path"));
        json_array_foreach(mounts, j, b)
        {
            const char *pb = json_string_value(json_object_get(b, "path"));
            if (i == j)
                continue;
            size_t la = strlen(pa);
            if (strcmp(pa, pb) == 0)
                return rb_fail(RB_EINVAL, err, "%s: two mounts at %.200s", what, pa);
            if (strncmp(pa, pb, la) == 0 && pb[la] == '/')
                return rb_fail(RB_EINVAL, err, "%s: %.200s lies inside the mount at %.200s; mounts may not nest",
                               what, pb, pa);
        }
    }
    return RB_OK;
}

rb_err sharespec_mounts(const sharespec_list *l, const core_caller *who, json_t *v, json_t **out, char *err)
{
    static const char what[] = "'execution_options.mounts'";
    char avail[1024], field[64];
    *out = NULL;
    if (!json_is_array(v))
        return rb_fail(RB_EINVAL, err, "%s must be a list such as [{\"share\": \"photos\", \"path\": "
                                       "\"/workspace/photos\"}]", what);
    if (json_array_size(v) > SHARESPEC_MOUNTS_MAX)
        return rb_fail(RB_EINVAL, err, "%s: at most %d mounts", what, SHARESPEC_MOUNTS_MAX);
    json_t *list = json_array();
    size_t i;
    json_t *m;
    rb_err e = RB_OK;
    json_array_foreach(v, i, m)
    {
        const char *k;
        json_t *val;
        snprintf(field, sizeof(field), "'execution_options.mounts[%zu]'", i);
        if (!json_is_object(m)) {
            e = rb_fail(RB_EINVAL, err, "%s must be an object {\"share\", \"path\", \"readonly\"}", field);
            goto fail;
        }
        json_object_foreach(m, k, val)
        {
            if (strcmp(k, "share") != 0 && strcmp(k, "path") != 0 && strcmp(k, "readonly") != 0) {
                e = rb_fail(RB_EINVAL, err, "unknown field '%.64s' in %s; allowed fields: share, path, readonly", k,
                            field);
                goto fail;
            }
        }
        json_t *share = json_object_get(m, "share"), *path = json_object_get(m, "path");
        json_t *ro = json_object_get(m, "readonly");
        const char *name = json_string_value(share);
        if (name == NULL || !sharespec_name_ok(name, json_string_length(share))) {
            e = rb_fail(RB_EINVAL, err, "%s.share must be the name of a share (GET /shares lists them)", field);
            goto fail;
        }
        const sharespec_decl *d = sharespec_find(l, name);
        if (d == NULL || !sharespec_allowed(who, name)) {
            available(l, who, avail, sizeof(avail));
            e = rb_fail(RB_EFORBIDDEN, err, "%s: no share '%s' that this caller may mount; shares it may mount: %s",
                        field, name, avail);
            goto fail;
        }
        if (ro != NULL && !json_is_null(ro) && !json_is_boolean(ro)) {
            e = rb_fail(RB_EINVAL, err, "%s.readonly must be true or false", field);
            goto fail;
        }
        int readonly = ro == NULL || json_is_null(ro) ? !d->rw : json_is_true(ro);
        if (!readonly && !d->rw) {
            e = rb_fail(RB_EFORBIDDEN, err,
                        "%s: share '%s' is read-only (the operator declared it so); mount it with readonly: true or "
                        "leave readonly out",
                        field, name);
            goto fail;
        }
        char *canon = NULL;
        if (path == NULL || json_is_null(path)) {
            canon = xasprintf("%s/%s", SHARESPEC_ROOT, name);
        } else {
            char pf[80];
            snprintf(pf, sizeof(pf), "%s.path", field);
            if (!json_is_string(path)) {
                e = rb_fail(RB_EINVAL, err, "%s must be a path under /workspace, e.g. /workspace/%s", pf, name);
                goto fail;
            }
            /* the length, not the NUL: a NUL inside the string is a control character, refused */
            if ((e = sharespec_mount_path(json_string_value(path), json_string_length(path), pf, &canon, err)) != RB_OK)
                goto fail;
        }
        json_array_append_new(list, json_pack("{s:s, s:s, s:b}", "share", name, "path", canon, "readonly", readonly));
        free(canon);
    }
    if ((e = sharespec_check_paths(list, what, err)) != RB_OK)
        goto fail;
    *out = list;
    return RB_OK;
fail:
    json_decref(list);
    return e;
}

rb_err sharespec_defaults(const sharespec_list *l, const char *text, const core_caller *who, json_t **out, char *err)
{
    *out = json_array();
    const char *p = text, *item;
    size_t len;
    rb_err e = RB_OK;
    while (codec_list_next(&p, &item, &len)) {
        int shown = (int)(len > 200 ? 200 : len);
        /* SHARE, then an optional path, then an optional "ro", separated by ':' */
        const char *part[4];
        size_t plen[4], n = 0;
        for (const char *s = item, *end = item + len; n < 4;) {
            const char *c = memchr(s, ':', (size_t)(end - s));
            part[n] = s;
            plen[n++] = c ? (size_t)(c - s) : (size_t)(end - s);
            if (c == NULL)
                break;
            s = c + 1;
        }
        char name[SHARESPEC_NAME_MAX + 1];
        const sharespec_decl *d = NULL;
        if (sharespec_name_ok(part[0], plen[0])) {
            memcpy(name, part[0], plen[0]);
            name[plen[0]] = '\0';
            d = sharespec_find(l, name);
        }
        int ro_last = n > 1 && plen[n - 1] == 2 && memcmp(part[n - 1], "ro", 2) == 0;
        size_t npath = n - 1 - (size_t)ro_last;
        if (d == NULL || n > 3 || npath > 1) {
            e = rb_fail(RB_EINVAL, err,
                        "default-mounts: '%.*s' is not SHARE[:/workspace/PATH][:ro] naming a declared share "
                        "(--share NAME=/host/path)",
                        shown, item);
            goto fail;
        }
        char *canon = NULL;
        if (npath == 0)
            canon = xasprintf("%s/%s", SHARESPEC_ROOT, name);
        else if ((e = sharespec_mount_path(part[1], plen[1], "default-mounts", &canon, err)) != RB_OK)
            goto fail;
        if (sharespec_allowed(who, name))
            json_array_append_new(*out, json_pack("{s:s, s:s, s:b}", "share", name, "path", canon, "readonly",
                                                  ro_last || !d->rw));
        free(canon);
        if (json_array_size(*out) > SHARESPEC_MOUNTS_MAX) {
            e = rb_fail(RB_EINVAL, err, "default-mounts: at most %d mounts", SHARESPEC_MOUNTS_MAX);
            goto fail;
        }
    }
    if ((e = sharespec_check_paths(*out, "default-mounts", err)) != RB_OK)
        goto fail;
    return RB_OK;
fail:
    json_decref(*out);
    *out = NULL;
    return e;
}

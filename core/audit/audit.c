/*
 * audit.c: recording, excerpts and pruning of the audit trail (core/audit/audit.h); reading it
 * is core_audit_query's (audit_query.c).
 */
#include <stdio.h>
#include <string.h>

#include "base/clock.h"
#include "base/log.h"
#include "base/mem.h"
#include "core/audit/audit.h"
#include "core/heart.h"
#include "store/store.h"

void audit_record(rb_core *c, const char *owner, const char *session, const char *kind, json_t *detail)
{
    char err[RB_ERR_LEN];
    json_t *doc = json_object();
    json_object_set_new(doc, "at", json_integer(rb_now_ms()));
    json_object_set_new(doc, "key", json_string(owner != NULL ? owner : ""));
    json_object_set_new(doc, "kind", json_string(kind));
    if (session != NULL && session[0] != '\0')
        json_object_set_new(doc, "session", json_string(session));
    if (detail != NULL) {
        json_object_update_missing(doc, detail);
        json_decref(detail);
    }
    if (store_audit_add(core_heart_store(c), doc, err) != RB_OK)
        rb_error("audit: cannot record a %s event of session %s: %s", kind, session ? session : "-", err);
    json_decref(doc);
}

json_t *audit_text(const char *text, size_t len, size_t max)
{
    if (text == NULL)
        return json_string("");
    if (len <= max) {
        json_t *j = json_stringn(text, len);
        return j != NULL ? j : json_string("(not UTF-8)");
    }
    size_t cut = max;
    while (cut > 0 && ((unsigned char)text[cut] & 0xC0) == 0x80) /* not inside a UTF-8 sequence */
        cut--;
    char tail[48];
    snprintf(tail, sizeof(tail), "…[%zu more bytes]", len - cut);
    char *s = xmalloc(cut + sizeof(tail));
    memcpy(s, text, cut);
    memcpy(s + cut, tail, strlen(tail) + 1);
    json_t *j = json_string(s);
    free(s);
    return j != NULL ? j : json_string("(not UTF-8)");
}

/* Appends to b (at most max bytes in all) the text of the output items of stream what (stdout,
 * stderr) or, for "result", of results; *total counts all of it. */
static void excerpt_of(json_t *outputs, const char *what, char *b, size_t *len, size_t max, size_t *total)
{
    size_t i;
    json_t *o;
    json_array_foreach(outputs, i, o)
    {
        const char *t = json_string_value(json_object_get(o, "type"));
        const char *name = json_string_value(json_object_get(o, "name"));
        int mine = t != NULL && (strcmp(what, "result") == 0 ? strcmp(t, "result") == 0
                                                              : strcmp(t, "stream") == 0 && name != NULL &&
                                                                    strcmp(name, what) == 0);
        if (!mine)
            continue;
        const char *text = json_string_value(json_object_get(o, "text"));
        if (text == NULL)
            continue;
        size_t n = strlen(text);
        *total += n;
        size_t room = max - *len;
        memcpy(b + *len, text, n < room ? n : room);
        *len += n < room ? n : room;
    }
}

/* len less a UTF-8 sequence that text[0..len) ends inside (an excerpt cut at a byte count). */
static size_t utf8_whole(const char *text, size_t len)
{
    size_t start = len;
    while (start > 0 && ((unsigned char)text[start - 1] & 0xC0) == 0x80)
        start--;
    if (start == 0 || ((unsigned char)text[start - 1] & 0x80) == 0)
        return len; /* ASCII last (or nothing but continuation bytes: not UTF-8 anyway) */
    unsigned char lead = (unsigned char)text[start - 1];
    size_t need = lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : 2;
    return len - (start - 1) < need ? start - 1 : len;
}

json_t *audit_execution_detail(json_t *doc)
{
    static const char *const copied[] = {"execution_id", "request_id", "status", "duration_ms", "reset", NULL};
    json_t *d = json_object();
    for (size_t i = 0; copied[i] != NULL; i++) {
        json_t *v = json_object_get(doc, copied[i]);
        if (v != NULL && !json_is_null(v))
            json_object_set(d, copied[i], v);
    }
    const char *code = json_string_value(json_object_get(doc, "code"));
    json_object_set_new(d, "code", audit_text(code, code ? strlen(code) : 0, AUDIT_CODE_MAX));
    json_t *outputs = json_object_get(doc, "outputs");
    static const char *const streams[] = {"stdout", "stderr", "result"};
    for (size_t k = 0; k < 3; k++) {
        /* the excerpt, and when there was more, one note of how much in all (room kept for it) */
        char b[AUDIT_EXCERPT_MAX];
        size_t len = 0, total = 0;
        excerpt_of(outputs, streams[k], b, &len, AUDIT_EXCERPT_MAX - 64, &total);
        if (total == 0)
            continue;
        if (total > len) {
            len = utf8_whole(b, len);
            len += (size_t)snprintf(b + len, sizeof(b) - len, "…[%zu bytes in all]", total);
        }
        json_t *t = json_stringn(b, len);
        json_object_set_new(d, streams[k], t != NULL ? t : json_string("(not UTF-8)"));
    }
    size_t i, displays = 0;
    json_t *o;
    json_array_foreach(outputs, i, o)
    {
        const char *t = json_string_value(json_object_get(o, "type"));
        if (t != NULL && strcmp(t, "display") == 0)
            displays++;
        else if (t != NULL && strcmp(t, "error") == 0 && json_is_string(json_object_get(o, "ename")))
            json_object_set(d, "error", json_object_get(o, "ename"));
    }
    if (displays > 0)
        json_object_set_new(d, "displays", json_integer((json_int_t)displays));
    return d;
}

void audit_file_begin(audit_file_pending *p, const char *kind, const core_caller *who, const char *path)
{
    p->kind = kind;
    p->key = kind != NULL ? xstrdup(who != NULL ? who->owner : "") : NULL;
    p->path = kind != NULL ? xstrdup(path) : NULL;
}

void audit_file_end(rb_core *c, audit_file_pending *p, const char *session, rb_err e, const char *msg, int64_t bytes)
{
    if (p->kind == NULL)
        return;
    json_t *d = json_pack("{s:o}", "path", audit_text(p->path, strlen(p->path), 1024));
    if (bytes >= 0)
        json_object_set_new(d, "bytes", json_integer((json_int_t)bytes));
    if (e != RB_OK) {
        const char *why = msg != NULL ? msg : "failed";
        json_object_set_new(d, "error", audit_text(why, strlen(why), 1024));
    }
    audit_record(c, p->key, session, p->kind, d);
    p->kind = NULL;
}

void audit_file_dispose(audit_file_pending *p)
{
    free(p->key);
    free(p->path);
    p->key = p->path = NULL;
}

void audit_prune(rb_core *c)
{
    char err[RB_ERR_LEN];
    const core_settings *cfg = core_heart_settings(c);
    int removed = 0;
    int64_t before = cfg->audit_retention > 0 ? rb_now_ms() - (int64_t)cfg->audit_retention * 1000 : 0;
    if (store_audit_prune(core_heart_store(c), before, cfg->audit_max_events, &removed, err) != RB_OK)
        rb_error("audit: cannot prune the trail: %s", err);
    else if (removed > 0)
        rb_info("audit: %d events removed (past --audit-retention or beyond --audit-max-events)", removed);
}

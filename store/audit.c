/*
 * audit.c: the store's audit table (core/audit/): one row per event, its time, key, session and
 * kind as columns for the filters and the caller's document (document.c). What an event is and
 * when one is recorded is core's; the connection, statements and schema are store.c's.
 */
#include "store/store_private.h"

rb_err store_audit_add(store *st, json_t *doc, char *err)
{
    static const char what[] = "audit event";
    const char *kind;
    rb_err e;
    if (!json_is_object(doc))
        return rb_fail(RB_EINVAL, err, "audit event must be a JSON object");
    if ((e = store__need_int(doc, what, "at", err)) != RB_OK ||
        (e = store__need_string(doc, what, "kind", &kind, err)) != RB_OK ||
        (e = store__opt_string(doc, what, "session", err)) != RB_OK)
        return e;
    const char *key = json_string_value(json_object_get(doc, "key")); /* "" without API keys */
    if (key == NULL)
        return rb_fail(RB_EINVAL, err, "audit event: \"key\" must be a string");
    if ((e = store__doc_encode(st, doc, what, err)) != RB_OK)
        return e;
    sqlite3_stmt *s = store__stmt_get(st, STORE__STMT_AUDIT_ADD, err, &e);
    if (s != NULL) {
        const char *session = json_string_value(json_object_get(doc, "session"));
        sqlite3_bind_int64(s, 1, (sqlite3_int64)json_integer_value(json_object_get(doc, "at")));
        sqlite3_bind_text(s, 2, key, -1, SQLITE_STATIC);
        if (session != NULL)
            sqlite3_bind_text(s, 3, session, -1, SQLITE_STATIC);
        else
            sqlite3_bind_null(s, 3);
        sqlite3_bind_text(s, 4, kind, -1, SQLITE_STATIC);
        sqlite3_bind_text(s, 5, st->doc.data, (int)st->doc.len, SQLITE_STATIC);
        e = store__stmt_run(st, s, "saving an audit event", err);
    }
    store__doc_release(st);
    return e;
}

static void bind_opt_text(sqlite3_stmt *s, int i, const char *v)
{
    if (v != NULL)
        sqlite3_bind_text(s, i, v, -1, SQLITE_STATIC);
    else
        sqlite3_bind_null(s, i);
}

rb_err store_audit_query(store *st, const store_audit_filter *f, json_t **out, char *err)
{
    rb_err e;
    *out = NULL;
    if (f->limit < 1 || f->limit > 10000)
        return rb_fail(RB_EINVAL, err, "an audit query returns 1 to 10000 events");
    sqlite3_stmt *s = store__stmt_get(st, STORE__STMT_AUDIT_QUERY, err, &e);
    if (s == NULL)
        return e;
    bind_opt_text(s, 1, f->key);
    bind_opt_text(s, 2, f->session);
    bind_opt_text(s, 3, f->kind);
    sqlite3_bind_int64(s, 4, (sqlite3_int64)f->since);
    sqlite3_bind_int64(s, 5, (sqlite3_int64)(f->until > 0 ? f->until : INT64_MAX));
    sqlite3_bind_int64(s, 6, (sqlite3_int64)f->after);
    sqlite3_bind_int(s, 7, f->limit);
    return store__get_all(st, s, "audit event", out, err);
}

rb_err store_audit_prune(store *st, int64_t before, int64_t keep_rows, int *removed, char *err)
{
    rb_err e;
    int n = 0;
    sqlite3_stmt *s = store__stmt_get(st, STORE__STMT_AUDIT_PRUNE_AT, err, &e);
    if (s == NULL)
        return e;
    sqlite3_bind_int64(s, 1, (sqlite3_int64)before);
    if ((e = store__stmt_run(st, s, "pruning the audit trail", err)) != RB_OK)
        return e;
    n += sqlite3_changes(st->db);
    if (keep_rows > 0) {
        if ((s = store__stmt_get(st, STORE__STMT_AUDIT_PRUNE_ROWS, err, &e)) == NULL)
            return e;
        sqlite3_bind_int64(s, 1, (sqlite3_int64)keep_rows);
        if ((e = store__stmt_run(st, s, "pruning the audit trail", err)) != RB_OK)
            return e;
        n += sqlite3_changes(st->db);
    }
    if (removed != NULL)
        *removed = n;
    return RB_OK;
}

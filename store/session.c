/*
 * session.c: the store's sessions and MCP sessions tables: one row per sandbox session and per
 * MCP session, with the caller's document (document.c) and the members that are columns.
 * What a session is and when it changes is core's; the connection, statements and schema are
 * store.c's.
 */
#include "store/store_private.h"

/* ---- sessions ---- */

rb_err store_session_put(store *st, json_t *doc, char *err)
{
    static const char what[] = "session";
    const char *id, *status;
    rb_err e;
    if (!json_is_object(doc))
        return rb_fail(RB_EINVAL, err, "session document must be a JSON object");
    if ((e = store__need_string(doc, what, "session_id", &id, err)) != RB_OK ||
        (e = store__need_string(doc, what, "status", &status, err)) != RB_OK ||
        (e = store__need_int(doc, what, "created_at", err)) != RB_OK ||
        (e = store__need_int(doc, what, "last_used_at", err)) != RB_OK ||
        (e = store__opt_string(doc, what, "container_id", err)) != RB_OK ||
        (e = store__opt_int(doc, what, "ended_at", err)) != RB_OK)
        return e;
    if ((e = store__doc_encode(st, doc, what, err)) != RB_OK)
        return e;
    sqlite3_stmt *s = store__stmt_get(st, STORE__STMT_SESSION_PUT, err, &e);
    if (s != NULL) {
        json_t *cid = json_object_get(doc, "container_id");
        sqlite3_bind_text(s, 1, id, -1, SQLITE_STATIC);
        sqlite3_bind_text(s, 2, status, -1, SQLITE_STATIC);
        if (json_is_string(cid))
            sqlite3_bind_text(s, 3, json_string_value(cid), (int)json_string_length(cid), SQLITE_STATIC);
        else
            sqlite3_bind_null(s, 3);
        sqlite3_bind_int64(s, 4, (sqlite3_int64)json_integer_value(json_object_get(doc, "created_at")));
        sqlite3_bind_int64(s, 5, (sqlite3_int64)json_integer_value(json_object_get(doc, "last_used_at")));
        store__bind_opt_int(s, 6, json_object_get(doc, "ended_at"));
        sqlite3_bind_text(s, 7, st->doc.data, (int)st->doc.len, SQLITE_STATIC);
        e = store__stmt_run(st, s, "saving a session", err);
        if (e == RB_OK && sqlite3_changes(st->db) == 0)
            e = rb_fail(RB_EINVAL, err, "session document: \"created_at\" of existing session %s cannot change", id);
    }
    store__doc_release(st);
    return e;
}

rb_err store_session_get(store *st, const char *session_id, json_t **out, char *err)
{
    return store__get_one(st, STORE__STMT_SESSION_GET, session_id, "session", out, err);
}

rb_err store_session_list(store *st, int include_ended, json_t **out, char *err)
{
    rb_err e;
    *out = NULL;
    sqlite3_stmt *s =
        store__stmt_get(st, include_ended ? STORE__STMT_SESSION_LIST_ALL : STORE__STMT_SESSION_LIST_LIVE, err, &e);
    if (s == NULL)
        return e;
    return store__get_all(st, s, "session", out, err);
}

rb_err store_session_delete(store *st, const char *session_id, char *err)
{
    rb_err e;
    sqlite3_stmt *s = store__stmt_get(st, STORE__STMT_SESSION_DELETE, err, &e);
    if (s == NULL)
        return e;
    sqlite3_bind_text(s, 1, session_id, -1, SQLITE_STATIC);
    return store__stmt_run(st, s, "deleting a session", err);
}

/* ---- MCP sessions ---- */

rb_err store_mcp_session_put(store *st, json_t *doc, char *err)
{
    static const char what[] = "MCP session";
    const char *id;
    rb_err e;
    if (!json_is_object(doc))
        return rb_fail(RB_EINVAL, err, "MCP session document must be a JSON object");
    if ((e = store__need_string(doc, what, "mcp_session_id", &id, err)) != RB_OK ||
        (e = store__need_int(doc, what, "created_at", err)) != RB_OK ||
        (e = store__need_int(doc, what, "last_used_at", err)) != RB_OK ||
        (e = store__opt_int(doc, what, "ended_at", err)) != RB_OK)
        return e;
    if ((e = store__doc_encode(st, doc, what, err)) != RB_OK)
        return e;
    sqlite3_stmt *s = store__stmt_get(st, STORE__STMT_MCP_PUT, err, &e);
    if (s != NULL) {
        sqlite3_bind_text(s, 1, id, -1, SQLITE_STATIC);
        sqlite3_bind_int64(s, 2, (sqlite3_int64)json_integer_value(json_object_get(doc, "created_at")));
        sqlite3_bind_int64(s, 3, (sqlite3_int64)json_integer_value(json_object_get(doc, "last_used_at")));
        store__bind_opt_int(s, 4, json_object_get(doc, "ended_at"));
        sqlite3_bind_text(s, 5, st->doc.data, (int)st->doc.len, SQLITE_STATIC);
        e = store__stmt_run(st, s, "saving an MCP session", err);
        if (e == RB_OK && sqlite3_changes(st->db) == 0)
            e = rb_fail(RB_EINVAL, err, "MCP session document: \"created_at\" of existing MCP session %s cannot change",
                        id);
    }
    store__doc_release(st);
    return e;
}

rb_err store_mcp_session_get(store *st, const char *mcp_session_id, json_t **out, char *err)
{
    return store__get_one(st, STORE__STMT_MCP_GET, mcp_session_id, "MCP session", out, err);
}

rb_err store_mcp_session_list(store *st, int include_ended, json_t **out, char *err)
{
    rb_err e;
    *out = NULL;
    sqlite3_stmt *s =
        store__stmt_get(st, include_ended ? STORE__STMT_MCP_LIST_ALL : STORE__STMT_MCP_LIST_LIVE, err, &e);
    if (s == NULL)
        return e;
    return store__get_all(st, s, "MCP session", out, err);
}

rb_err store_mcp_session_delete(store *st, const char *mcp_session_id, char *err)
{
    rb_err e;
    sqlite3_stmt *s = store__stmt_get(st, STORE__STMT_MCP_DELETE, err, &e);
    if (s == NULL)
        return e;
    sqlite3_bind_text(s, 1, mcp_session_id, -1, SQLITE_STATIC);
    return store__stmt_run(st, s, "deleting an MCP session", err);
}

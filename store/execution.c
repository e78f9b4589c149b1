/*
 * execution.c: the store's executions table: one row per code execution (request), with the
 * caller's document (document.c) and the members that are columns, and the start-up sweep
 * that fails the executions a previous server left unfinished. Pruning old rows across tables
 * is store.c's (store_prune).
 */
#include "store/store_private.h"

rb_err store_execution_put(store *st, json_t *doc, char *err)
{
    static const char what[] = "execution";
    const char *rid = NULL, *sid = NULL, *status = NULL;
    rb_err e;
    if (!json_is_object(doc))
        return rb_fail(RB_EINVAL, err, "execution document must be a JSON object");
    if ((e = store__need_string(doc, what, "request_id", &rid, err)) != RB_OK ||
        (e = store__need_string(doc, what, "session_id", &sid, err)) != RB_OK ||
        (e = store__need_string(doc, what, "status", &status, err)) != RB_OK ||
        (e = store__need_int(doc, what, "created_at", err)) != RB_OK ||
        (e = store__opt_int(doc, what, "started_at", err)) != RB_OK ||
        (e = store__opt_int(doc, what, "completed_at", err)) != RB_OK ||
        (e = store__opt_string(doc, what, "code", err)) != RB_OK)
        return e;
    if ((e = store__doc_encode(st, doc, what, err)) != RB_OK)
        return e;
    sqlite3_stmt *s = store__stmt_get(st, STORE__STMT_EXEC_PUT, err, &e);
    if (s != NULL) {
        sqlite3_bind_text(s, 1, rid, -1, SQLITE_STATIC);
        sqlite3_bind_text(s, 2, sid, -1, SQLITE_STATIC);
        sqlite3_bind_text(s, 3, status, -1, SQLITE_STATIC);
        sqlite3_bind_int64(s, 4, (sqlite3_int64)json_integer_value(json_object_get(doc, "created_at")));
        store__bind_opt_int(s, 5, json_object_get(doc, "started_at"));
        store__bind_opt_int(s, 6, json_object_get(doc, "completed_at"));
        sqlite3_bind_text(s, 7, st->doc.data, (int)st->doc.len, SQLITE_STATIC);
        e = store__stmt_run(st, s, "saving an execution", err);
        if (e == RB_OK && sqlite3_changes(st->db) == 0)
            e = rb_fail(RB_EINVAL, err,
                        "execution document: \"session_id\" and \"created_at\" of existing execution %s cannot change",
                        rid);
    }
    store__doc_release(st);
    return e;
}

rb_err store_execution_get(store *st, const char *request_id, json_t **out, char *err)
{
    return store__get_one(st, STORE__STMT_EXEC_GET, request_id, "execution", out, err);
}

rb_err store_execution_list(store *st, const char *session_id, int limit, json_t **out, char *err)
{
    rb_err e;
    *out = NULL;
    sqlite3_stmt *s = store__stmt_get(st, STORE__STMT_EXEC_LIST, err, &e);
    if (s == NULL)
        return e;
    sqlite3_bind_text(s, 1, session_id, -1, SQLITE_STATIC);
    sqlite3_bind_int(s, 2, limit > 0 ? limit : -1);
    return store__get_all(st, s, "execution", out, err);
}

rb_err store_execution_fail_unfinished(store *st, const char *message, int *changed, char *err)
{
    rb_err e;
    int count = 0;
    json_t *docs = NULL;
    if (changed != NULL)
        *changed = 0;
    if ((e = store__op_begin(st, err)) != RB_OK)
        return e;
    /* Read first, write after: the scan must not see its own updates. */
    sqlite3_stmt *s = store__stmt_get(st, STORE__STMT_EXEC_UNFINISHED, err, &e);
    if (s == NULL)
        goto end;
    if ((e = store__get_all(st, s, "execution", &docs, err)) != RB_OK)
        goto end;
    int64_t now = rb_now_ms();
    size_t i;
    json_t *doc;
    json_array_foreach (docs, i, doc) {
        json_object_set_new(doc, "status", json_string("error"));
        json_object_set_new(doc, "completed_at", json_integer(now));
        json_object_set_new(doc, "error",
                            json_pack("{s:s, s:s, s:[]}", "ename", "ServerRestarted", "evalue",
                                      message != NULL ? message : "", "traceback"));
        if ((e = store_execution_put(st, doc, err)) != RB_OK)
            goto end;
        count++;
    }
end:
    json_decref(docs);
    e = store__op_end(st, e, err);
    if (e == RB_OK && changed != NULL)
        *changed = count;
    return e;
}

/*
 * volume.c: the store's volumes table (core/volumes/): one row per named volume, with its owner,
 * name and creation time as columns and the caller's document (document.c). What a volume is and
 * when it changes is core's; the connection, statements and schema are store.c's.
 */
#include "store/store_private.h"

rb_err store_volume_put(store *st, json_t *doc, char *err)
{
    static const char what[] = "volume";
    const char *id, *owner, *name;
    rb_err e;
    if (!json_is_object(doc))
        return rb_fail(RB_EINVAL, err, "volume document must be a JSON object");
    if ((e = store__need_string(doc, what, "volume_id", &id, err)) != RB_OK ||
        (e = store__need_string(doc, what, "name", &name, err)) != RB_OK ||
        (e = store__need_int(doc, what, "created_at", err)) != RB_OK)
        return e;
    owner = json_string_value(json_object_get(doc, "owner")); /* "" without API keys */
    if (owner == NULL)
        return rb_fail(RB_EINVAL, err, "volume document: \"owner\" must be a string");
    if ((e = store__doc_encode(st, doc, what, err)) != RB_OK)
        return e;
    sqlite3_stmt *s = store__stmt_get(st, STORE__STMT_VOLUME_PUT, err, &e);
    if (s != NULL) {
        sqlite3_bind_text(s, 1, id, -1, SQLITE_STATIC);
        sqlite3_bind_text(s, 2, owner, -1, SQLITE_STATIC);
        sqlite3_bind_text(s, 3, name, -1, SQLITE_STATIC);
        sqlite3_bind_int64(s, 4, (sqlite3_int64)json_integer_value(json_object_get(doc, "created_at")));
        sqlite3_bind_text(s, 5, st->doc.data, (int)st->doc.len, SQLITE_STATIC);
        int rc = sqlite3_step(s);
        if (rc == SQLITE_CONSTRAINT || (rc & 0xff) == SQLITE_CONSTRAINT)
            e = rb_fail(RB_ECONFLICT, err, "a volume named '%.63s' exists already", name);
        else if (rc != SQLITE_DONE)
            e = store__fail_sql(st, rc, "saving a volume", err);
        store__stmt_done(s);
        if (e == RB_OK && sqlite3_changes(st->db) == 0)
            e = rb_fail(RB_EINVAL, err, "volume document: the owner, name and created_at of volume %s cannot change", id);
    }
    store__doc_release(st);
    return e;
}

rb_err store_volume_get(store *st, const char *volume_id, json_t **out, char *err)
{
    return store__get_one(st, STORE__STMT_VOLUME_GET, volume_id, "volume", out, err);
}

rb_err store_volume_list(store *st, json_t **out, char *err)
{
    rb_err e;
    *out = NULL;
    sqlite3_stmt *s = store__stmt_get(st, STORE__STMT_VOLUME_LIST, err, &e);
    if (s == NULL)
        return e;
    return store__get_all(st, s, "volume", out, err);
}

rb_err store_volume_delete(store *st, const char *volume_id, char *err)
{
    rb_err e;
    sqlite3_stmt *s = store__stmt_get(st, STORE__STMT_VOLUME_DELETE, err, &e);
    if (s == NULL)
        return e;
    sqlite3_bind_text(s, 1, volume_id, -1, SQLITE_STATIC);
    return store__stmt_run(st, s, "deleting a volume", err);
}

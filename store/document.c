/*
 * document.c: the JSON document every row of the store keeps verbatim in its `doc` column:
 * checking a caller's document has the members that become columns, encoding it into the
 * store's reused buffer, and decoding rows back into new objects. It knows no table: the
 * per-table files (session.c, execution.c) name the statements and bind the columns.
 */
#include "store/store_private.h"

#include <string.h>

/* The encode buffer is kept between calls unless a big document made it larger than this. */
#define STORE_BUF_KEEP ((size_t)1024 * 1024)

void store__bind_opt_int(sqlite3_stmt *s, int i, json_t *v)
{
    if (json_is_integer(v))
        sqlite3_bind_int64(s, i, (sqlite3_int64)json_integer_value(v));
    else
        sqlite3_bind_null(s, i);
}

static int dump_cb(const char *p, size_t n, void *data)
{
    store *st = data;
    if (rb_buf_append(&st->doc, p, n) == RB_OK)
        return 0;
    st->doc_too_big = 1;
    return -1;
}

void store__doc_release(store *st)
{
    if (st->doc.cap > STORE_BUF_KEEP)
        rb_buf_dispose(&st->doc);
}

/* Encodes doc into st->doc (compact JSON, UTF-8 kept as is). */
rb_err store__doc_encode(store *st, json_t *doc, const char *what, char *err)
{
    rb_buf_reset(&st->doc);
    st->doc_too_big = 0;
    if (json_dump_callback(doc, dump_cb, st, JSON_COMPACT) != 0) {
        store__doc_release(st);
        if (st->doc_too_big)
            return rb_fail(RB_ETOOBIG, err, "%s document is larger than the store's limit of %zu bytes", what,
                           STORE_DOC_MAX);
        return rb_fail(RB_EINVAL, err, "%s document cannot be encoded as JSON", what);
    }
    return RB_OK;
}

/* Parses the doc column of the current row into a new object. */
static rb_err doc_decode(store *st, sqlite3_stmt *s, int col, const char *what, json_t **out, char *err)
{
    const char *text = (const char *)sqlite3_column_text(s, col);
    size_t len = (size_t)sqlite3_column_bytes(s, col);
    json_error_t je;
    json_t *doc = text != NULL ? json_loadb(text, len, JSON_ALLOW_NUL, &je) : NULL;
    if (doc == NULL || !json_is_object(doc)) {
        json_decref(doc);
        return rb_fail(RB_ESTORE, err, "store: a stored %s document in database %s is not a JSON object%s%s", what,
                       st->path, doc == NULL && text != NULL ? ": " : "", doc == NULL && text != NULL ? je.text : "");
    }
    *out = doc;
    return RB_OK;
}

/* Validation helpers: each names the member and the expected type. */
rb_err store__need_string(json_t *doc, const char *what, const char *key, const char **out, char *err)
{
    json_t *v = json_object_get(doc, key);
    if (!json_is_string(v) || json_string_length(v) == 0)
        return rb_fail(RB_EINVAL, err, "%s document: \"%s\" must be a non-empty string", what, key);
    if (strlen(json_string_value(v)) != json_string_length(v))
        return rb_fail(RB_EINVAL, err, "%s document: \"%s\" must not contain NUL characters", what, key);
    *out = json_string_value(v);
    return RB_OK;
}

rb_err store__need_int(json_t *doc, const char *what, const char *key, char *err)
{
    if (!json_is_integer(json_object_get(doc, key)))
        return rb_fail(RB_EINVAL, err, "%s document: \"%s\" must be an integer (epoch milliseconds)", what, key);
    return RB_OK;
}

rb_err store__opt_int(json_t *doc, const char *what, const char *key, char *err)
{
    json_t *v = json_object_get(doc, key);
    if (v != NULL && !json_is_null(v) && !json_is_integer(v))
        return rb_fail(RB_EINVAL, err, "%s document: \"%s\" must be an integer (epoch milliseconds) or null", what,
                       key);
    return RB_OK;
}

rb_err store__opt_string(json_t *doc, const char *what, const char *key, char *err)
{
    json_t *v = json_object_get(doc, key);
    if (v != NULL && !json_is_null(v) && !json_is_string(v))
        return rb_fail(RB_EINVAL, err, "%s document: \"%s\" must be a string or null", what, key);
    return RB_OK;
}

/* Runs a "SELECT doc ... WHERE key = ?1" statement; RB_ENOTFOUND without a row. */
rb_err store__get_one(store *st, int id, const char *key, const char *what, json_t **out, char *err)
{
    rb_err e;
    *out = NULL;
    if (key == NULL)
        return rb_fail(RB_EINVAL, err, "no %s id given", what);
    sqlite3_stmt *s = store__stmt_get(st, id, err, &e);
    if (s == NULL)
        return e;
    sqlite3_bind_text(s, 1, key, -1, SQLITE_STATIC);
    int rc = sqlite3_step(s);
    if (rc == SQLITE_ROW)
        e = doc_decode(st, s, 0, what, out, err);
    else if (rc == SQLITE_DONE)
        e = rb_fail(RB_ENOTFOUND, err, "no %s with id %s", what, key);
    else
        e = store__fail_sql(st, rc, "reading", err);
    store__stmt_done(s);
    return e;
}

/* Collects the doc column (column 0) of every row of a bound statement into a new array. */
rb_err store__get_all(store *st, sqlite3_stmt *s, const char *what, json_t **out, char *err)
{
    json_t *list = json_array();
    rb_err e = RB_OK;
    int rc;
    while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
        json_t *doc;
        if ((e = doc_decode(st, s, 0, what, &doc, err)) != RB_OK)
            break;
        json_array_append_new(list, doc);
    }
    if (e == RB_OK && rc != SQLITE_DONE)
        e = store__fail_sql(st, rc, "listing", err);
    store__stmt_done(s);
    if (e != RB_OK) {
        json_decref(list);
        return e;
    }
    *out = list;
    return RB_OK;
}

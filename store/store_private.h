/*
 * store_private.h: what the files of the store module share: store.c (the connection, the
 * schema and its migrations, the cached statements, transactions, meta, pruning), document.c
 * (the JSON document each row keeps, and reading rows back), session.c and execution.c (the
 * per-table operations). Not part of the module's interface: nothing outside store/ includes
 * it. Like store.h's functions, everything here runs on the loop thread on st's one connection.
 */
#ifndef RB_STORE_PRIVATE_H
#define RB_STORE_PRIVATE_H

#include <sqlite3.h>

#include "store/store.h"

/* Largest JSON document accepted (an execution with plots can be several MiB). */
#define STORE_DOC_MAX ((size_t)128 * 1024 * 1024)

/* The cached statements, one per call site; their SQL is store.c's stmt_sql. */
enum {
    STORE__STMT_BEGIN,
    STORE__STMT_COMMIT,
    STORE__STMT_ROLLBACK,
    STORE__STMT_SP_BEGIN,
    STORE__STMT_SP_RELEASE,
    STORE__STMT_SP_ROLLBACK,
    STORE__STMT_SESSION_PUT,
    STORE__STMT_SESSION_GET,
    STORE__STMT_SESSION_LIST_ALL,
    STORE__STMT_SESSION_LIST_LIVE,
    STORE__STMT_SESSION_DELETE,
    STORE__STMT_EXEC_PUT,
    STORE__STMT_EXEC_GET,
    STORE__STMT_EXEC_LIST,
    STORE__STMT_EXEC_UNFINISHED,
    STORE__STMT_PRUNE_EXECUTIONS,
    STORE__STMT_PRUNE_SESSIONS,
    STORE__STMT_META_GET,
    STORE__STMT_META_PUT,
    STORE__STMT_MCP_PUT,
    STORE__STMT_MCP_GET,
    STORE__STMT_MCP_LIST_ALL,
    STORE__STMT_MCP_LIST_LIVE,
    STORE__STMT_MCP_DELETE,
    STORE__STMT_PRUNE_MCP,
    STORE__STMT_VOLUME_PUT,
    STORE__STMT_VOLUME_GET,
    STORE__STMT_VOLUME_LIST,
    STORE__STMT_VOLUME_DELETE,
    STORE__STMT_AUDIT_ADD,
    STORE__STMT_AUDIT_QUERY,
    STORE__STMT_AUDIT_PRUNE_AT,
    STORE__STMT_AUDIT_PRUNE_ROWS,
    STORE__STMT_COUNT
};

struct store {
    sqlite3 *db;
    char *path;
    int lock_fd;     /* -1 for ":memory:" */
    int depth;       /* store_begin nesting */
    rb_buf doc;      /* reused JSON encode buffer */
    int doc_too_big; /* set by dump_cb when doc would exceed STORE_DOC_MAX */
    sqlite3_stmt *stmt[STORE__STMT_COUNT];
};

/** Formats "store: <what> failed on database <path>: <sqlite message>" into err, with a hint for
 * the codes users can act on (rc is the SQLite result code). Returns RB_ESTORE. */
rb_err store__fail_sql(store *st, int rc, const char *what, char *err);
/** The cached statement id (STORE__STMT_*), prepared on first use; owned by st. NULL with the
 * error in *rc_out and err when it cannot be prepared, else *rc_out = RB_OK. */
sqlite3_stmt *store__stmt_get(store *st, int id, char *err, rb_err *rc_out);
/** Resets s and clears its bindings, ready for the next call. */
void store__stmt_done(sqlite3_stmt *s);
/** Steps s, a statement that returns no rows (a row is ignored), then resets it (store__stmt_done).
 * RB_ESTORE naming what on failure. */
rb_err store__stmt_run(store *st, sqlite3_stmt *s, const char *what, char *err);
/** Opens the savepoint that makes a multi-statement operation atomic, whether or not a
 * store_begin is open. RB_ESTORE on failure (then no store__op_end). */
rb_err store__op_begin(store *st, char *err);
/** Closes store__op_begin's savepoint: releases it when result is RB_OK, else rolls back this
 * operation's writes and returns result with its text in err kept. */
rb_err store__op_end(store *st, rb_err result, char *err);

/** Binds v to parameter i of s when it is a JSON integer, else NULL. v borrowed. */
void store__bind_opt_int(sqlite3_stmt *s, int i, json_t *v);
/** Encodes doc (borrowed) as compact JSON into st->doc, which stays valid until the next
 * encode or store__doc_release. RB_ETOOBIG over STORE_DOC_MAX, RB_EINVAL if it cannot be
 * encoded; what ("session", ...) names the document in the message. */
rb_err store__doc_encode(store *st, json_t *doc, const char *what, char *err);
/** Gives back st->doc's memory when a big document grew it past what is worth keeping. */
void store__doc_release(store *st);
/** RB_OK with *out the value of string member key of doc (borrowed from doc) when it is
 * non-empty and has no NUL, else RB_EINVAL naming what and key. */
rb_err store__need_string(json_t *doc, const char *what, const char *key, const char **out, char *err);
/** RB_OK when member key of doc is an integer, else RB_EINVAL naming what and key. */
rb_err store__need_int(json_t *doc, const char *what, const char *key, char *err);
/** RB_OK when member key of doc is absent, null or an integer, else RB_EINVAL. */
rb_err store__opt_int(json_t *doc, const char *what, const char *key, char *err);
/** RB_OK when member key of doc is absent, null or a string, else RB_EINVAL. */
rb_err store__opt_string(json_t *doc, const char *what, const char *key, char *err);
/** Runs statement id, a "SELECT doc ... WHERE key = ?1" (key borrowed); *out is the row's
 * document (a new reference), else NULL. RB_EINVAL for a NULL key, RB_ENOTFOUND without a row,
 * RB_ESTORE for SQLite or a stored doc that is not an object. */
rb_err store__get_one(store *st, int id, const char *key, const char *what, json_t **out, char *err);
/** Steps s, a bound statement whose column 0 is doc, to the end and resets it; *out is a new
 * array of the documents (a new reference), untouched on error (RB_ESTORE). */
rb_err store__get_all(store *st, sqlite3_stmt *s, const char *what, json_t **out, char *err);

#endif

/*
 * store: runbox's durable state in one SQLite file (WAL). The only module that includes
 * sqlite3.h. It keeps sessions and executions (and later MCP sessions) as rows whose
 * searchable fields are columns and whose remaining fields are a JSON document. It holds no
 * policy: core/ decides what to write and when. One connection, used on the loop thread only.
 *
 * Objects cross this interface as jansson values. Every function that takes a json_t borrows
 * it; every json_t written to an out-parameter is a new reference the caller must json_decref.
 */
#ifndef RB_STORE_H
#define RB_STORE_H

#include <stdint.h>
#include <jansson.h>

#include "base/base.h"

typedef struct store store;

/** Opens (creating if needed) the database at path (":memory:" allowed), sets WAL,
 * synchronous=NORMAL, busy_timeout, and migrates the schema. Errors: RB_ESTORE with the
 * SQLite message and the path. */
rb_err store_open(const char *path, store **out, char *err);
/** Closes the database (runs a final passive checkpoint). Accepts NULL. */
void store_close(store *st);

/** Groups the writes that follow into one transaction until store_commit (nesting counted:
 * only the outermost pair acts). Used by core to batch an execution's writes. */
rb_err store_begin(store *st, char *err);
/** Ends the transaction store_begin opened (the outermost commit writes; RB_ESTORE on failure,
 * after which the writes since store_begin are rolled back). */
rb_err store_commit(store *st, char *err);

/*
 * Sessions. A session document is a JSON object that must have string "session_id" and
 * "status", and integer "created_at" and "last_used_at" (epoch ms); "container_id" (string or
 * null) and "ended_at" (integer or null) are also mapped to columns. All other members are
 * kept verbatim in the document.
 */
/** Inserts or replaces the session with doc's session_id. Its created_at cannot change once
 * stored (RB_EINVAL). */
rb_err store_session_put(store *st, json_t *doc, char *err);
/** RB_ENOTFOUND when there is no such session. */
rb_err store_session_get(store *st, const char *session_id, json_t **out, char *err);
/** All sessions, newest first; with include_ended=0 only those whose ended_at is null. Out is
 * a JSON array of documents. */
rb_err store_session_list(store *st, int include_ended, json_t **out, char *err);
/** Removes the session row. Its executions remain until pruned. */
rb_err store_session_delete(store *st, const char *session_id, char *err);

/*
 * Executions. A document has string "request_id", "session_id", "status", integer
 * "created_at", and may have integer "started_at", "completed_at", string "code" and any
 * other members (outputs, result, error, ...), kept verbatim.
 */
/** Inserts or replaces the execution with doc's request_id. Its session_id and created_at cannot
 * change once stored (RB_EINVAL). */
rb_err store_execution_put(store *st, json_t *doc, char *err);
/** The stored document of request_id (*out a new reference); RB_ENOTFOUND when absent. */
rb_err store_execution_get(store *st, const char *request_id, json_t **out, char *err);
/** Executions of one session in creation order, without "code"-independent filtering: out is
 * an array of documents (the full documents; limit caps the count, newest kept, 0 = all). */
rb_err store_execution_list(store *st, const char *session_id, int limit, json_t **out, char *err);
/** Marks every execution whose status is "queued" or "running" as status "error" with
 * error {ename:"ServerRestarted", evalue:message, traceback:[]} and completed_at=now.
 * Writes the number changed to *changed (may be NULL). */
rb_err store_execution_fail_unfinished(store *st, const char *message, int *changed, char *err);

/*
 * MCP sessions (records of core/mcp_sessions.c). A document must have string "mcp_session_id" and
 * integer "created_at" and "last_used_at" (epoch ms); "ended_at" (integer or null) is also
 * mapped to a column. All other members (protocol version, client info, bound sandbox
 * sessions, log level) are kept verbatim.
 */
/** Inserts or replaces the MCP session with doc's mcp_session_id; its created_at cannot change
 * once stored (RB_EINVAL). */
rb_err store_mcp_session_put(store *st, json_t *doc, char *err);
/** RB_ENOTFOUND when there is no such MCP session. */
rb_err store_mcp_session_get(store *st, const char *mcp_session_id, json_t **out, char *err);
/** All MCP sessions, newest first; with include_ended=0 only those whose ended_at is null. */
rb_err store_mcp_session_list(store *st, int include_ended, json_t **out, char *err);
/** Removes the MCP session row. */
rb_err store_mcp_session_delete(store *st, const char *mcp_session_id, char *err);

/** Deletes ended sessions and ended MCP sessions whose ended_at is older than before_ms and
 * executions whose completed_at is older than before_ms (and whose session is ended or gone). */
rb_err store_prune(store *st, int64_t before_ms, int *deleted, char *err);

/** A small key/value table for server-wide facts (the instance id that labels containers).
 * store_meta_get: RB_ENOTFOUND when absent; *out is a new heap string (free()). */
rb_err store_meta_get(store *st, const char *key, char **out, char *err);
/** Sets key to value (both copied), replacing an earlier value. */
rb_err store_meta_put(store *st, const char *key, const char *value, char *err);

/** Runs a passive WAL checkpoint (call from a timer so autocheckpoint never stalls a request). */
void store_checkpoint(store *st);

/*
 * Volumes (core/volumes/). A document must have string "volume_id", "owner" and "name" and
 * integer "created_at" (epoch ms); the owner's names are unique. All other members (quota, use)
 * are kept verbatim.
 */
/** Inserts or replaces the volume with doc's volume_id: RB_ECONFLICT when its owner has another
 * volume of that name; its owner, name and created_at cannot change once stored (RB_EINVAL). */
rb_err store_volume_put(store *st, json_t *doc, char *err);
/** RB_ENOTFOUND when there is no such volume. */
rb_err store_volume_get(store *st, const char *volume_id, json_t **out, char *err);
/** Every volume, oldest first (an array of documents). */
rb_err store_volume_list(store *st, json_t **out, char *err);
/** Removes the volume's row (nothing if there is none). */
rb_err store_volume_delete(store *st, const char *volume_id, char *err);

/*
 * The audit trail (core/audit/): one row per event, in the order they were added (seq). A
 * document must have integer "at" (epoch ms), string "key" (the API key's name, "" without keys)
 * and "kind", and may have string "session"; the rest is the event's.
 */
/** Appends the event doc (borrowed). */
rb_err store_audit_add(store *st, json_t *doc, char *err);
/** What store_audit_query selects: NULL strings and 0 numbers select everything. */
typedef struct store_audit_filter {
    const char *key, *session, *kind;
    int64_t since, until; /* at >= since, at < until (epoch ms; until 0: no end) */
    int64_t after;        /* seq > after: the page after the one that ended with it */
    int limit;            /* at most this many (1..10000) */
} store_audit_filter;
/** The events f selects, oldest first: a new array of their documents, each with "seq". */
rb_err store_audit_query(store *st, const store_audit_filter *f, json_t **out, char *err);
/** Removes the events before before (epoch ms), then all but the newest keep_rows (0: no cap);
 * *removed (may be NULL) counts them. */
rb_err store_audit_prune(store *st, int64_t before, int64_t keep_rows, int *removed, char *err);

#endif

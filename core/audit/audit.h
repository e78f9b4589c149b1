/*
 * audit: the audit trail (issue 27; docs/security.md, "Audit trail"). Every execution, file
 * transfer, install, network refusal and session event is recorded with the API key, the time
 * and the session, as one row of the store's audit table (store/audit.c), written on the loop
 * where the event happens (an execution's in the transaction that saves its result). An
 * execution's row holds its code (at most AUDIT_CODE_MAX bytes) and an excerpt of what came out
 * (at most AUDIT_EXCERPT_MAX bytes): the full result stays in its execution's row, kept for
 * --retention. Rows are kept for --audit-retention and at most --audit-max-events of them
 * (the oldest go first), pruned by core's sweep, so the table never grows without bound.
 *
 * Who reads it: admin and viewer keys (core_caller.role), through core_audit_query (core/core.h).
 */
#ifndef RB_CORE_AUDIT_H
#define RB_CORE_AUDIT_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "core/core.h"

#define AUDIT_CODE_MAX 8192
#define AUDIT_EXCERPT_MAX 2048

/** Records the event kind ("execution", "file_upload", "session_created", ...) of the key owner
 * ("" without keys) about session (NULL: none) now, with the fields of detail (stolen; NULL:
 * none). A store failure is logged, never returned: the event that is being recorded goes on. */
void audit_record(rb_core *c, const char *owner, const char *session, const char *kind, json_t *detail);

/** The detail of an execution's event from its stored document (borrowed): its id, status,
 * duration, code (bounded), an excerpt of its stdout, stderr and result, its error's name and
 * whether it was reset. A new reference. */
json_t *audit_execution_detail(json_t *doc);

/** text[0..len) as a JSON string of at most max bytes (cut on a UTF-8 boundary, with
 * "…[N more bytes]" after it when cut). */
json_t *audit_text(const char *text, size_t len, size_t max);

/** A file transfer's record while it runs: written when it ends (audit_file_end), with its outcome. */
typedef struct audit_file_pending {
    const char *kind; /* file_upload, file_download, file_delete; NULL: nothing to record */
    char *key;        /* the key that asked ("" for the trusted caller) */
    char *path;       /* as the caller gave it */
} audit_file_pending;

/** Starts the record of a transfer of kind (NULL: none) by who (NULL: the trusted caller) of path. */
void audit_file_begin(audit_file_pending *p, const char *kind, const core_caller *who, const char *path);
/** Records the transfer once it ended in session: its path, when bytes >= 0 its size, and when e
 * is not RB_OK why it failed (msg); whether or not its caller still waits, what was done was
 * done. Once only; then p records nothing. */
void audit_file_end(rb_core *c, audit_file_pending *p, const char *session, rb_err e, const char *msg, int64_t bytes);
/** Frees what p holds. */
void audit_file_dispose(audit_file_pending *p);

/** Removes what is past --audit-retention and beyond --audit-max-events (core's sweep). */
void audit_prune(rb_core *c);

#endif

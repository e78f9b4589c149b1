/*
 * mcp_sessions: the one registry of MCP client sessions (the Mcp-Session-Id of the streamable
 * HTTP transport), and their lifecycle. It creates a record with a random unguessable id on initialize, persists it in
 * the store so it survives a runboxd restart, marks it used on each request, ends it on DELETE
 * or after idle-timeout seconds without use, and owns the rule that ties sandbox sessions to it:
 * the sandbox used by execute_code without a session_id is created on first use (one per
 * language), kept for the MCP session's lifetime and ended with it.
 *
 * It knows nothing of HTTP or JSON-RPC (server/mcp/ translates); the transport's per-session
 * state (streams, replay log, calls in flight) is attached to the record here as an opaque
 * pointer, so there is one place to look a session up. A session belongs to the API key that
 * initialized it (who, core.h): touch, end and bound_sandbox answer RB_ENOTFOUND to another key. Everything runs on the core's loop. Records cross this interface as jansson objects:
 *   {mcp_session_id, created_at, last_used_at, ended_at (epoch ms or null), protocol_version,
 *    client_info, client_capabilities, log_level, bound: {language: session_id}, end_reason}.
 * json_t arguments are borrowed; json_t written to out-parameters are new references.
 */
#ifndef RB_CORE_MCP_SESSIONS_H
#define RB_CORE_MCP_SESSIONS_H

#include <jansson.h>

#include "core/core.h"

typedef struct mcp_sessions mcp_sessions;

/** Length of buffers that hold an MCP session id or a sandbox session id. */
#define MCP_SESSIONS_ID_LEN 40

/** Opens the MCP-session registry on core c: loads the live records from the store and starts
 * the idle-expiry timer. RB_ESTORE when the store cannot be read. c must outlive it. */
rb_err mcp_sessions_new(rb_core *c, mcp_sessions **out, char *err);
/** Stops the timer (closed on the next loop turn) and frees the registry; records stay stored,
 * pending bound-session creations are detached (their callbacks never run) and attached
 * transports are handed to the detach callback. Accepts NULL. */
void mcp_sessions_free(mcp_sessions *m);

/** Called once for every session that has a transport attached (mcp_sessions_attach) when the
 * session ends (DELETE or idle expiry, after it is stored as ended) or the registry is freed:
 * the owner releases transport then. id is borrowed for the call. */
typedef void (*mcp_sessions_detach_cb)(void *data, const char *mcp_session_id, void *transport);
/** Sets the detach callback (one per registry; the transport layer's). */
void mcp_sessions_on_detach(mcp_sessions *m, mcp_sessions_detach_cb cb, void *data);

/** The transport state attached to live session id, or NULL (none attached, or no such live
 * session). Borrowed: it belongs to whoever attached it. */
void *mcp_sessions_transport(const mcp_sessions *m, const char *id);
/** Attaches transport (not NULL) to live session id, replacing nothing: RB_ECONFLICT if one is
 * attached already, RB_ENOTFOUND for an unknown or ended session. The registry never frees it;
 * the detach callback hands it back. */
rb_err mcp_sessions_attach(mcp_sessions *m, const char *id, void *transport, char *err);

/** Largest serialised info (clientInfo and capabilities) a session keeps, in bytes. */
#define MCP_SESSIONS_INFO_MAX 16384

/** Creates an MCP session. info holds what initialize negotiated: {protocol_version,
 * client_info?, client_capabilities?}. *out is the new record. RB_EBUSY at max-mcp-sessions
 * live sessions, RB_EINVAL when info serialises to more than MCP_SESSIONS_INFO_MAX bytes,
 * RB_ESTORE if it cannot be saved. */
rb_err mcp_sessions_create(mcp_sessions *m, const core_caller *who, json_t *info, json_t **out, char *err);
/** Looks up a live MCP session of who's own key (whatever its role: a session serves only the key
 * that started it) and marks it used now. RB_ENOTFOUND for an unknown, ended, expired or another
 * key's id (err says which; for a user key, another key's reads as unknown). out may be NULL;
 * otherwise *out is a copy of the record. */
rb_err mcp_sessions_touch(mcp_sessions *m, const core_caller *who, const char *id, json_t **out, char *err);
/** Sets one member of a live record (e.g. "log_level") and persists it. RB_ENOTFOUND, RB_EINVAL
 * for the reserved members (ids, times, bound). value is borrowed. */
rb_err mcp_sessions_set(mcp_sessions *m, const char *id, const char *key, json_t *value, char *err);
/** Counts work in progress on a session (delta +1 when a request starts, -1 when it ends): a
 * session with work in progress never expires. Unknown ids are ignored. */
void mcp_sessions_hold(mcp_sessions *m, const char *id, int delta);
/** Ends a live MCP session: stores it as ended with reason, ends its bound sandbox sessions and
 * hands its transport (if any) to the detach callback. RB_ENOTFOUND when unknown or already ended. */
rb_err mcp_sessions_end(mcp_sessions *m, const core_caller *who, const char *id, const char *reason, char *err);

/** The sandbox session bound to MCP session id for language ("python" or "bash").
 * - When one is live, it is written to session_id (MCP_SESSIONS_ID_LEN bytes) and cb never runs.
 * - Otherwise session_id is set to "" and one is created (or a creation already under way is
 *   joined): cb runs exactly once, later, with body {session_id, replaced: bool} (replaced:
 *   an earlier bound sandbox had ended, so its state is gone) or an error. *handle (may be
 *   NULL) lets the caller detach with core_cancel.
 * mounts (borrowed, may be NULL): execution_options.mounts of a sandbox this call creates
 *   (shares and volumes); a live one keeps those it was made with.
 * Errors returned directly: RB_ENOTFOUND (MCP session), RB_EINVAL (language), and those of
 * core_session_create (RB_EUNAVAILABLE, RB_EBUSY, ...); then cb never runs. */
rb_err mcp_sessions_bound_sandbox(mcp_sessions *m, const core_caller *who, const char *id, const char *language,
                                  json_t *mounts, char *session_id, core_cb cb, void *data, core_op **handle,
                                  char *err);

#endif

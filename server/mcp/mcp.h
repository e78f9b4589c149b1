/*
 * mcp: the Model Context Protocol endpoint of runboxd at /mcp (streamable HTTP: the stateless
 * revision 2026-07-28, per request, and the session-based 2025-03-26, 2025-06-18 and 2025-11-25,
 * started by initialize). It translates JSON-RPC to core/ calls: tools
 * (execute_code, create_session, list_sessions, get_session_info, close_session, get_health,
 * upload_file, download_file, list_files, get_packages, install_dependencies), resources
 * (runbox://sessions, runbox://sessions/{id} and CodeBox-AI's aliases, a session's files as
 * runbox://sessions/{id}/files[/{path}]), ping,
 * logging, progress and cancellation. MCP session records and their bound sandboxes are
 * core/mcp_sessions.c's; what lives here is transport state only (SSE streams, the per-session event
 * log used for Last-Event-ID replay, requests in flight). Other protocol families serve tool sets
 * of their own with the same transport and sessions at paths of their own (mcp_toolset_add).
 */
#ifndef RB_SERVER_MCP_H
#define RB_SERVER_MCP_H

#include <stddef.h>

#include "server/http.h"

typedef struct mcp_server mcp_server;

/** Creates the MCP state of server s and registers the /mcp routes (POST, GET, DELETE) with
 * it; server_stop and server_free stop and free that state. *out is that state (owned by s),
 * for other protocol families to serve their tools with (mcp_toolset_add). RB_ESTORE when the
 * MCP session registry cannot be loaded (nothing is registered then). Borrowed pointers must
 * outlive s. */
rb_err mcp_register(rb_server *s, rb_core *core, const server_settings *cfg, mcp_server **out, char *err);

/* ---- tool sets of other protocol families ----------------------------------------------------
 * A protocol family with MCP tools of its own (AgentRun's at /agentrun/mcp, server/agentrun/)
 * serves them at a path of its own with this module's transport: the same MCP sessions, eras,
 * streams, cancellation and JSON-RPC answers as /mcp, only the tools, their instructions and
 * what runs a call are its own. It lists the path in its route table (POST, GET and DELETE) with
 * a handler that hands the request to mcp_toolset_serve. */

/** Largest file a tool returns inside its answer (JSON-RPC carries it whole in one message). */
#define MCP_FILE_MAX (8u * 1024 * 1024)

/** A tool set added to the MCP server (mcp_toolset_add); owned by it. */
typedef struct mcp_toolset mcp_toolset;
/** One tools/call in flight, owned by this module: valid until it is answered (its tool returns
 * a result, or mcp_call_answer), or until it is dropped unanswered (its MCP session ended, the
 * server stopped), which cancels the work it waits for (mcp_call_op, mcp_call_watch,
 * mcp_call_hold). */
typedef struct mcp_call mcp_call;

/** Runs call's tool: returns the tools/call result now (a new reference, isError for a failure),
 * or NULL when the call is answered later with mcp_call_answer. */
typedef json_t *(*mcp_tool_cb)(mcp_call *call);
/** Cancels work a call holds (mcp_call_hold) before it has reported back. */
typedef void (*mcp_cancel_cb)(void *work);

/** What a tool set is; the strings and the array are borrowed and must outlive the server. */
typedef struct mcp_toolset_def {
    const char *what;          /* names a definition in the error when one does not parse */
    const char *const *defs;   /* each tool's definition (tools/list), one JSON text each */
    size_t ndefs;
    const char *instructions;  /* what initialize and server/discover answer */
    mcp_tool_cb run;
} mcp_toolset_def;

/** Adds a tool set to ms: *out (owned by ms, freed with it) is what mcp_toolset_serve takes.
 * RB_EINTERNAL with err when a definition does not parse. */
rb_err mcp_toolset_add(mcp_server *ms, const mcp_toolset_def *def, mcp_toolset **out, char *err);
/** Serves a POST, GET or DELETE at the tool set's path as /mcp serves them, with its tools: an
 * http_handler_cb's body (the request is answered now or later; returns 0). */
int mcp_toolset_serve(mcp_toolset *set, http_call *hc);

/** The name of the tool called (borrowed, valid while the call lives). */
const char *mcp_call_tool(const mcp_call *call);
/** The call's arguments, an object (borrowed, valid while the call lives). */
json_t *mcp_call_args(const mcp_call *call);
/** The core, the caller (the API key of the call's MCP session; NULL without keys) and the
 * server's settings a call runs with (borrowed). */
rb_core *mcp_call_core(const mcp_call *call);
const core_caller *mcp_call_who(const mcp_call *call);
const server_settings *mcp_call_settings(const mcp_call *call);
/** Where a tool keeps the handle of the core call it waits for (pass it as the core function's
 * handle; set it to NULL when the callback runs): a notifications/cancelled answers the call at
 * once, and a drop cancels the core call (core_cancel). */
core_op **mcp_call_op(mcp_call *call);
/** Names the execution the call waits for: a notifications/cancelled then cancels it, and the
 * call is answered when it ends. */
void mcp_call_execution(mcp_call *call, const char *execution_id);
/** Where a tool keeps the handle of the watch of that execution (core_watch_start's; set it to
 * NULL when the watch reports done): a drop stops the watch. */
core_watch **mcp_call_watch(mcp_call *call);
/** Work the call waits for that is no core call (NULL: none any more): a notifications/cancelled
 * answers the call at once, and a drop calls cancel(work). */
void mcp_call_hold(mcp_call *call, void *work, mcp_cancel_cb cancel);
/** Answers call with a tools/call result (stolen) and frees it. */
void mcp_call_answer(mcp_call *call, json_t *result);

#endif

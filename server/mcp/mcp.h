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
 * log used for Last-Event-ID replay, requests in flight).
 */
#ifndef RB_SERVER_MCP_H
#define RB_SERVER_MCP_H

#include <stddef.h>

#include "server/http.h"

typedef struct mcp_server mcp_server;

/** Creates the MCP state of server s and registers the /mcp routes (POST, GET, DELETE) with
 * it; server_stop and server_free stop and free that state. RB_ESTORE when the MCP session
 * registry cannot be loaded (nothing is registered then). Borrowed pointers must outlive s. */
rb_err mcp_register(rb_server *s, rb_core *core, const server_settings *cfg, char *err);

#endif

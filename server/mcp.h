/*
 * mcp: the Model Context Protocol endpoint of runboxd at /mcp (streamable HTTP, revisions
 * 2025-03-26, 2025-06-18 and 2025-11-25). It translates JSON-RPC to core/ calls: tools
 * (execute_code, create_session, list_sessions, get_session_info, close_session, get_health,
 * upload_file, download_file, list_files, get_packages, install_dependencies), resources
 * (runbox://sessions, runbox://sessions/{id} and CodeBox-AI's aliases, a session's files as
 * runbox://sessions/{id}/files[/{path}]), ping,
 * logging, progress and cancellation. MCP session records and their bound sandboxes are
 * core/mcp.c's; what lives here is transport state only (SSE streams, the per-session event
 * log used for Last-Event-ID replay, requests in flight).
 */
#ifndef RB_SERVER_MCP_H
#define RB_SERVER_MCP_H

#include <stddef.h>

#include "server/http.h"

typedef struct mcp_server mcp_server;

/** The /mcp routes (POST, GET, DELETE); *n receives their count. */
const http_route *mcp_routes(size_t *n);

/** Creates the MCP state of server s (opens core/mcp's registry on core). RB_ESTORE when the
 * registry cannot be loaded. Borrowed pointers must outlive it. */
rb_err mcp_server_new(rb_server *s, rb_core *core, const server_settings *cfg, mcp_server **out, char *err);
/** Drops requests in flight without answering them and closes the registry (its timer closes
 * on the next loop turn). Call from server_stop, before core_free. A second call does nothing. */
void mcp_server_stop(mcp_server *ms);
/** Frees what mcp_server_stop left. Accepts NULL. */
void mcp_server_free(mcp_server *ms);

#endif

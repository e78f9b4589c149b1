/*
 * agentrun: runboxd's AgentRun-compatible surface, one protocol family in one folder. AgentRun+
 * (PyPI agentrun-plus) has two clients that promise to be interchangeable, AgentRunAPIClient
 * (REST) and AgentRunMCPClient (MCP); pointed at http://host:port/agentrun they work unmodified:
 * the REST routes under /agentrun (server/agentrun/rest.c) and AgentRun's MCP tools at
 * /agentrun/mcp (server/agentrun/mcp.c, served with server/mcp's transport through its public
 * header). Its sessions are runbox sessions, shared with runbox's REST API, MCP and E2B. What the
 * folder's files share (AgentRun's documents, its session creation) is agentrun_internal.h.
 */
#ifndef RB_SERVER_AGENTRUN_H
#define RB_SERVER_AGENTRUN_H

#include "server/http.h"
#include "server/mcp/mcp.h"

/** Registers AgentRun's routes on s: its REST API under /agentrun, and its MCP tools at
 * /agentrun/mcp, served by mcp (mcp_register's) with the same MCP sessions as /mcp. In /metrics
 * they count as protocol rest and mcp, as runbox's own routes of each kind. RB_EINTERNAL when a
 * tool definition does not parse (nothing is registered then). Borrowed pointers must outlive
 * s. */
rb_err agentrun_register(rb_server *s, mcp_server *mcp, char *err);

#endif

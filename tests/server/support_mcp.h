/*
 * support_mcp.h: what the /mcp tests (test_mcp.c, test_mcp_tools.c) share: the server over the
 * fake core (mcp_h, started and stopped by mcp_setup and mcp_teardown) and the JSON-RPC calls
 * they make of it.
 */
#ifndef RB_TEST_SERVER_SUPPORT_MCP_H
#define RB_TEST_SERVER_SUPPORT_MCP_H

#include "tests/server/harness.h"

#define ACCEPT "Accept: application/json, text/event-stream\r\n"

extern harness mcp_h;

void mcp_setup(void);
void mcp_teardown(void);
/** An answer that is an event stream holding exactly one message gets that message in r->json. */
void read_single_event(http_resp *r);
/** POSTs body to path with the session and version headers (either may be NULL) and extra. */
void mcp_post_to(const char *path, const char *sid, const char *version, const char *extra, const char *body,
                 http_resp *r);
void mcp_post(const char *sid, const char *version, const char *extra, const char *body, http_resp *r);
/** initialize at version; returns the session id (heap). */
char *initialize(const char *version);
void expect_rpc_error(const http_resp *r, int status, int code);
/** POSTs body as mcp_post does and expects a JSON-RPC error (expect_rpc_error). */
void post_expect_error(const char *sid, const char *version, const char *extra, const char *body, int status,
                       int code);
/** POSTs a tools/call of execute_code (request id id, arguments args, _meta meta or NULL). */
void post_execute(const char *sid, const char *version, const char *id, const char *args, const char *meta,
                  http_resp *r);
/** Fails the test unless the answer's Content-Type starts with type. */
void expect_content_type(const http_resp *r, const char *type);

#endif

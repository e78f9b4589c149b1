/*
 * support_mcp.c: the /mcp tests' server and JSON-RPC calls (support_mcp.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "base/mem.h"
#include "tests/server/support_mcp.h"

harness mcp_h;

void mcp_setup(void)
{
    harness_start(&mcp_h, 64 * 1024);
}

void mcp_teardown(void)
{
    harness_stop(&mcp_h);
}

/* An answer that is an event stream holding exactly one message ("data: " line) gets that
 * message in r->json, as a JSON answer has it: the transport lets the server answer a request
 * either way, and clients must read both. */
void read_single_event(http_resp *r)
{
    const char *ct = http_header(r, "content-type");
    if (r->json != NULL || ct == NULL || strncmp(ct, "text/event-stream", 17) != 0)
        return;
    const char *d = strstr(r->body, "data: ");
    if (d == NULL || strstr(d + 6, "data: ") != NULL)
        return;
    const char *e = strchr(d, '\n');
    r->json = json_loadb(d + 6, e ? (size_t)(e - d - 6) : strlen(d + 6), 0, NULL);
}

/* POSTs body to /mcp (or to path) with the session and version headers (either may be NULL)
 * and extra. */
void mcp_post_to(const char *path, const char *sid, const char *version, const char *extra, const char *body,
                 http_resp *r)
{
    char headers[1024];
    snprintf(headers, sizeof(headers), "Content-Type: application/json\r\n%s%s%s%s%s%s%s", extra ? extra : ACCEPT,
             sid ? "Mcp-Session-Id: " : "", sid ? sid : "", sid ? "\r\n" : "", version ? "MCP-Protocol-Version: " : "",
             version ? version : "", version ? "\r\n" : "");
    cr_assert_eq(http_do(mcp_h.port, "POST", path, headers, body, strlen(body), r), 0);
    read_single_event(r);
}

void mcp_post(const char *sid, const char *version, const char *extra, const char *body, http_resp *r)
{
    mcp_post_to("/mcp", sid, version, extra, body, r);
}

/* initialize at version; returns the session id (heap). */
char *initialize(const char *version)
{
    char body[512];
    snprintf(body, sizeof(body),
             "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"protocolVersion\":\"%s\","
             "\"capabilities\":{},\"clientInfo\":{\"name\":\"test\",\"version\":\"1\"}}}",
             version);
    http_resp r;
    mcp_post(NULL, NULL, NULL, body, &r);
    cr_assert_eq(r.status, 200, "%s", r.body);
    const char *sid = http_header(&r, "mcp-session-id");
    cr_assert_not_null(sid, "no Mcp-Session-Id: %s", r.head);
    char *id = xstrdup(sid);
    http_resp_dispose(&r);
    return id;
}

void expect_rpc_error(const http_resp *r, int status, int code)
{
    cr_assert_eq(r->status, status, "status %d, want %d: %s", r->status, status, r->body);
    cr_assert_not_null(r->json, "not JSON: %s", r->body);
    cr_assert_str_eq(json_string_value(json_object_get(r->json, "jsonrpc")), "2.0");
    json_t *e = json_object_get(r->json, "error");
    cr_assert(json_is_object(e), "%s", r->body);
    cr_assert_eq(json_integer_value(json_object_get(e, "code")), code, "%s", r->body);
    const char *msg = json_string_value(json_object_get(e, "message"));
    cr_assert(msg != NULL && msg[0] != '\0');
}

/* POSTs body as mcp_post does and expects a JSON-RPC error (expect_rpc_error). */
void post_expect_error(const char *sid, const char *version, const char *extra, const char *body, int status,
                       int code)
{
    http_resp r;
    mcp_post(sid, version, extra, body, &r);
    expect_rpc_error(&r, status, code);
    http_resp_dispose(&r);
}

/* POSTs a tools/call of execute_code: request id id, arguments args and _meta meta (JSON texts;
 * meta may be NULL). */
void post_execute(const char *sid, const char *version, const char *id, const char *args, const char *meta,
                  http_resp *r)
{
    char body[1024];
    snprintf(body, sizeof(body),
             "{\"jsonrpc\":\"2.0\",\"id\":%s,\"method\":\"tools/call\",\"params\":{\"name\":\"execute_code\","
             "\"arguments\":%s%s%s}}",
             id, args, meta ? ",\"_meta\":" : "", meta ? meta : "");
    mcp_post(sid, version, NULL, body, r);
}

/* Fails the test unless the answer's Content-Type starts with type. */
void expect_content_type(const http_resp *r, const char *type)
{
    const char *ct = http_header(r, "content-type");
    cr_assert(ct != NULL && strncmp(ct, type, strlen(type)) == 0, "%s", r->head);
}


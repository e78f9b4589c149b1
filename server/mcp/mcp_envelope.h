/*
 * mcp_envelope.h: the per-request envelope of MCP 2026-07-28 (the "modern", stateless era), part
 * of the MCP module (server/mcp/mcp_internal.h includes it; nothing outside the module uses it):
 * which era a POST belongs to, the validation ladder of a modern request (params._meta with the
 * protocol version and client capabilities, the MCP-Protocol-Version, Mcp-Method and Mcp-Name
 * headers against the body, the supported versions), the Base64 sentinel of header values, the
 * per-request log level, and the HTTP status of a JSON-RPC error code. Pure functions over parsed
 * JSON and header bytes (untrusted): no HTTP, no sessions, no I/O. Fuzzed by
 * tests/fuzz/fuzz_envelope.c. JSON arguments are borrowed and results are new references.
 */
#ifndef RB_SERVER_MCP_ENVELOPE_H
#define RB_SERVER_MCP_ENVELOPE_H

#include <jansson.h>
#include <stddef.h>

/* The one modern revision served. */
#define MCP_MODERN_VERSION "2026-07-28"

/* Error codes of 2026-07-28 (basic/index#error-codes: -32020..-32099 are the specification's). */
#define MCP_ERR_HEADER_MISMATCH -32020
#define MCP_ERR_MISSING_CAPABILITY -32021
#define MCP_ERR_UNSUPPORTED_VERSION -32022

/* Reserved _meta keys of 2026-07-28. */
#define MCP_META_VERSION "io.modelcontextprotocol/protocolVersion"
#define MCP_META_CAPABILITIES "io.modelcontextprotocol/clientCapabilities"
#define MCP_META_CLIENT "io.modelcontextprotocol/clientInfo"
#define MCP_META_LOG_LEVEL "io.modelcontextprotocol/logLevel"
#define MCP_META_SERVER "io.modelcontextprotocol/serverInfo"
#define MCP_META_SUBSCRIPTION "io.modelcontextprotocol/subscriptionId"

/* Longest decoded Mcp-Name value compared (tool names and resource URIs are far shorter). */
#define MCP_NAME_HEADER_MAX 4096

/** The request headers the envelope is checked against: each value[0..len) as received (not
 * NUL-terminated; NULL when the header is absent). */
typedef struct mcp_envelope_headers {
    const char *version, *method, *name;
    size_t version_len, method_len, name_len;
} mcp_envelope_headers;

/** Whether a POST body (any JSON value) with these headers is a modern (2026-07-28) request: a
 * server/discover; without an Mcp-Session-Id (has_session 0), one whose params._meta carries a
 * protocol version or whose MCP-Protocol-Version header names a version that is not one of the
 * initialize era (2025-03-26, 2025-06-18, 2025-11-25); with one, only when both hold.
 * initialize is never modern (the legacy lifecycle), nor is a batch. */
int mcp__envelope_is_modern(json_t *body, const mcp_envelope_headers *h, int has_session);

/** Runs the validation ladder of a modern request msg (a message mcp__classify accepted as a
 * request, 'r'), first failure wins: params._meta is an object holding a protocol version
 * (string) and client capabilities (object), else Invalid Params (-32602); the headers match the
 * body (MCP-Protocol-Version, Mcp-Method, and Mcp-Name for tools/call, prompts/get and
 * resources/read, Base64 sentinel decoded), else HeaderMismatch (-32020); the version is
 * MCP_MODERN_VERSION, else UnsupportedProtocolVersion (-32022) with data {supported,
 * requested}; the log level, when given, is one of the eight, else Invalid Params. Returns NULL
 * when the request passes, else the JSON-RPC error response to answer with status 400. */
json_t *mcp__envelope_error(json_t *msg, const mcp_envelope_headers *h);

/** Decodes a header value v[0..len): the Base64 sentinel "=?base64?...?=" to its bytes, any
 * other value as it is. Returns 0 with *out (heap, NUL-terminated, the caller frees it) and
 * *outlen, or -1 when the sentinel's Base64 is invalid or the value is longer than
 * MCP_NAME_HEADER_MAX. */
int mcp__header_decode(const char *v, size_t len, char **out, size_t *outlen);

/** The index (0 debug .. 7 emergency) of params._meta's log level, or 8 when the request asks
 * for no log messages (no level given: 2026-07-28 forbids notifications/message then). */
int mcp__envelope_log_level(json_t *params);

/** The HTTP status a modern request's JSON-RPC error code is answered with: 404 for Method not
 * found, 400 for parse, request, params, header, capability and version errors, else 200. */
int mcp__envelope_status(int code);

#endif

/*
 * mcp_wire.h: the pure wire formats of MCP over streamable HTTP, part of the MCP module
 * (server/mcp/mcp_internal.h includes it; nothing outside the module uses it): JSON-RPC
 * responses and errors, what a POST body is (one message, a batch, initialize) and whether a
 * message is a valid request, notification or answer, and the SSE event ids "<boot>-<seq>"
 * that a client sends back in Last-Event-ID. Functions over parsed JSON and header bytes
 * (untrusted): no HTTP, no sessions, no I/O. Fuzzed by tests/fuzz/fuzz_jsonrpc.c and
 * tests/fuzz/fuzz_sse_id.c. JSON arguments are borrowed and results are new references unless
 * a contract says "stolen".
 */
#ifndef RB_SERVER_MCP_WIRE_H
#define RB_SERVER_MCP_WIRE_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#define MCP_MAX_BATCH 64
#define MCP_ERR_PARSE -32700
#define MCP_ERR_INVALID_REQUEST -32600
#define MCP_ERR_METHOD -32601
#define MCP_ERR_PARAMS -32602
#define MCP_ERR_INTERNAL -32603
#define MCP_ERR_RESOURCE -32002
#define MCP_ERR_CANCELLED -32800

/* The protocol version under which a POST may carry a JSON-RPC batch. */
#define MCP_BATCH_VERSION "2025-03-26"

/* ---- responses ------------------------------------------------------------------------- */

/** A JSON-RPC error response; id (NULL for null) is borrowed, data (may be NULL) stolen. */
json_t *mcp__rpc_error(json_t *id, int code, const char *message, json_t *data);
/** A JSON-RPC response with result (stolen). */
json_t *mcp__rpc_result(json_t *id, json_t *result);
/** A JSON-RPC response with result (borrowed). */
json_t *mcp__rpc_result_of(json_t *id, json_t *result);

/* ---- POST bodies ----------------------------------------------------------------------- */

typedef enum mcp_body_kind {
    MCP_BODY_INVALID,    /* neither an object nor an array */
    MCP_BODY_INITIALIZE, /* an object whose method is "initialize": starts an MCP session */
    MCP_BODY_MESSAGE,    /* any other object: one message of a live session */
    MCP_BODY_BATCH,      /* an array: a batch (see mcp__batch_size_refusal) */
} mcp_body_kind;

/** What the POST body (any JSON value) is. */
mcp_body_kind mcp__body_kind(json_t *body);

/** Why no JSON-RPC entry point takes the batch (an array), as the text of an Invalid Request
 * error with *status the HTTP status to answer it with, or NULL when its size is right: a batch
 * holds 1 to MCP_MAX_BATCH messages (400 when empty, 413 above). Checked once for every
 * transport (mcp__read_message), before any message runs. */
const char *mcp__batch_size_refusal(json_t *batch, int *status);

/** Why a streamable-HTTP session of protocol version cannot take a batch, as the text of an
 * Invalid Request error, or NULL when it can: there, batches exist only under
 * MCP_BATCH_VERSION. */
const char *mcp__batch_refusal(const char *version);

/** Checks an initialize request (a body of kind MCP_BODY_INITIALIZE): a valid JSON-RPC request
 * (mcp__classify: "jsonrpc" "2.0", a string or integer id, object params) with a string
 * params.protocolVersion. Returns NULL with *version set to it (borrowed from msg), else the
 * JSON-RPC error response to answer (status 400). */
json_t *mcp__initialize_error(json_t *msg, const char **version);

/** Validates a single message: 0 and *kind set ('r' request, 'n' notification, 'a' answer from
 * the client), or -1 with *error (a JSON-RPC error response) set. */
int mcp__classify(json_t *msg, char *kind, json_t **error);

/* ---- SSE event ids --------------------------------------------------------------------- */

/** Formats the event id "<boot>-<seq>" into buf (len bytes, cut and NUL-terminated). */
void mcp__sse_id_format(const char *boot, uint64_t seq, char *buf, size_t len);

/** Reads a Last-Event-ID header value v[0..len) (not NUL-terminated) of this server's boot:
 * "<boot>-" followed by a number as strtoull reads it in base 10 (so leading blanks and a sign
 * pass), up to the end of the value or a NUL in it. Returns 1 with *seq, or 0 for any other
 * value (another boot, no number, trailing bytes). */
int mcp__sse_id_parse(const char *v, size_t len, const char *boot, uint64_t *seq);

/** Whether a Last-Event-ID value v[0..len) is an event id of another boot of runboxd (of the
 * same length as boot): "<lower-case hex>-<digits>" with another boot before the dash. */
int mcp__sse_id_foreign(const char *v, size_t len, const char *boot);

#endif

/*
 * mcp_wire.c: the pure wire formats of MCP (server/mcp/mcp_wire.h): JSON-RPC responses, POST
 * bodies and messages, SSE event ids.
 */
#include "server/mcp/mcp_wire.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/mem.h"

/* ---- responses ------------------------------------------------------------------------- */

json_t *mcp__rpc_error(json_t *id, int code, const char *message, json_t *data)
{
    json_t *err = json_pack("{s:i, s:s}", "code", code, "message", message);
    if (data != NULL)
        json_object_set_new(err, "data", data);
    return json_pack("{s:s, s:O, s:o}", "jsonrpc", "2.0", "id", id ? id : json_null(), "error", err);
}

json_t *mcp__rpc_result(json_t *id, json_t *result)
{
    return json_pack("{s:s, s:O, s:o}", "jsonrpc", "2.0", "id", id, "result", result);
}

json_t *mcp__rpc_result_of(json_t *id, json_t *result)
{
    return json_pack("{s:s, s:O, s:O}", "jsonrpc", "2.0", "id", id, "result", result);
}

/* ---- POST bodies ----------------------------------------------------------------------- */

mcp_body_kind mcp__body_kind(json_t *body)
{
    if (json_is_array(body))
        return MCP_BODY_BATCH;
    if (!json_is_object(body))
        return MCP_BODY_INVALID;
    const char *method = json_string_value(json_object_get(body, "method"));
    if (method != NULL && strcmp(method, "initialize") == 0)
        return MCP_BODY_INITIALIZE;
    return MCP_BODY_MESSAGE;
}

const char *mcp__batch_size_refusal(json_t *batch, int *status)
{
    if (json_array_size(batch) == 0) {
        *status = 400;
        return "Invalid Request: an empty batch";
    }
    if (json_array_size(batch) > MCP_MAX_BATCH) {
        *status = 413;
        return "Invalid Request: a batch may hold at most 64 messages; send the others in another POST";
    }
    return NULL;
}

const char *mcp__batch_refusal(const char *version)
{
    if (strcmp(version, MCP_BATCH_VERSION) != 0)
        return "Invalid Request: JSON-RPC batches are only accepted under protocol version " MCP_BATCH_VERSION;
    return NULL;
}

json_t *mcp__initialize_error(json_t *msg, const char **version)
{
    char kind = 0;
    json_t *error = NULL;
    if (mcp__classify(msg, &kind, &error) != 0)
        return error;
    json_t *id = json_object_get(msg, "id");
    json_t *params = json_object_get(msg, "params");
    const char *asked = json_string_value(json_object_get(params, "protocolVersion"));
    if (kind != 'r')
        return mcp__rpc_error(NULL, MCP_ERR_INVALID_REQUEST, "initialize must be a request (with an id)", NULL);
    if (asked == NULL)
        return mcp__rpc_error(id, MCP_ERR_PARAMS, "initialize needs params.protocolVersion (a string)", NULL);
    *version = asked;
    return NULL;
}

int mcp__classify(json_t *msg, char *kind, json_t **error)
{
    if (!json_is_object(msg)) {
        *error = mcp__rpc_error(NULL, MCP_ERR_INVALID_REQUEST, "a JSON-RPC message must be an object", NULL);
        return -1;
    }
    json_t *id = json_object_get(msg, "id");
    const char *jv = json_string_value(json_object_get(msg, "jsonrpc"));
    json_t *valid_id = (json_is_string(id) || json_is_integer(id)) ? id : NULL;
    if (jv == NULL || strcmp(jv, "2.0") != 0) {
        *error = mcp__rpc_error(valid_id, MCP_ERR_INVALID_REQUEST, "\"jsonrpc\" must be \"2.0\"", NULL);
        return -1;
    }
    json_t *method = json_object_get(msg, "method");
    if (method == NULL && valid_id != NULL &&
        (json_object_get(msg, "result") != NULL || json_object_get(msg, "error") != NULL)) {
        *kind = 'a';
        return 0;
    }
    if (!json_is_string(method)) {
        *error = mcp__rpc_error(valid_id, MCP_ERR_INVALID_REQUEST, "\"method\" must be a string", NULL);
        return -1;
    }
    if (id != NULL && valid_id == NULL) {
        *error = mcp__rpc_error(NULL, MCP_ERR_INVALID_REQUEST, "\"id\" must be a string or an integer", NULL);
        return -1;
    }
    json_t *params = json_object_get(msg, "params");
    if (params != NULL && !json_is_object(params)) {
        *error = mcp__rpc_error(valid_id, MCP_ERR_PARAMS, "\"params\" must be an object", NULL);
        return -1;
    }
    *kind = id != NULL ? 'r' : 'n';
    return 0;
}

/* ---- SSE event ids --------------------------------------------------------------------- */

void mcp__sse_id_format(const char *boot, uint64_t seq, char *buf, size_t len)
{
    snprintf(buf, len, "%s-%llu", boot, (unsigned long long)seq);
}

int mcp__sse_id_foreign(const char *v, size_t len, const char *boot)
{
    size_t blen = strlen(boot);
    if (len <= blen + 1 || v[blen] != '-' || memcmp(v, boot, blen) == 0)
        return 0;
    for (size_t i = 0; i < len; i++) {
        char c = v[i];
        int ok = i < blen ? (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') : i == blen || (c >= '0' && c <= '9');
        if (!ok)
            return 0;
    }
    return 1;
}

int mcp__sse_id_parse(const char *v, size_t len, const char *boot, uint64_t *seq)
{
    size_t blen = strlen(boot);
    if (len <= blen + 1 || memcmp(v, boot, blen) != 0 || v[blen] != '-')
        return 0;
    /* strtoull reads a NUL-terminated string: a copy of the number */
    size_t n = len - blen - 1;
    char *num = xmalloc(n + 1);
    memcpy(num, v + blen + 1, n);
    num[n] = '\0';
    char *end;
    unsigned long long x = strtoull(num, &end, 10);
    int ok = *end == '\0';
    free(num);
    if (ok)
        *seq = x;
    return ok;
}

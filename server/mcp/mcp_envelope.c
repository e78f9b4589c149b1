/*
 * mcp_envelope.c: the per-request envelope of MCP 2026-07-28 (server/mcp/mcp_envelope.h). The
 * ladder follows basic/transports/streamable-http.mdx ("Server Validation") and
 * basic/versioning.mdx: _meta shape first, then the headers against the body (a client that
 * disagrees with itself is told so before being told its version is unsupported), then the
 * version. Pure: nothing here knows HTTP or sessions.
 */
#include "server/mcp/mcp_envelope.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/codec.h"
#include "base/err.h"
#include "base/mem.h"
#include "server/mcp/mcp_wire.h"

static const char *const legacy_versions[] = {"2025-11-25", "2025-06-18", "2025-03-26"};
static const char *const log_levels[] = {"debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"};
#define NLEVELS (sizeof(log_levels) / sizeof(log_levels[0]))

static int is_legacy_version(const char *v, size_t len)
{
    for (size_t i = 0; i < sizeof(legacy_versions) / sizeof(legacy_versions[0]); i++)
        if (len == strlen(legacy_versions[i]) && memcmp(v, legacy_versions[i], len) == 0)
            return 1;
    return 0;
}

static json_t *meta_of(json_t *msg)
{
    return json_object_get(json_object_get(msg, "params"), "_meta");
}

int mcp__envelope_is_modern(json_t *body, const mcp_envelope_headers *h, int has_session)
{
    if (!json_is_object(body))
        return 0;
    const char *method = json_string_value(json_object_get(body, "method"));
    if (method != NULL && strcmp(method, "initialize") == 0)
        return 0;
    if (method != NULL && strcmp(method, "server/discover") == 0)
        return 1;
    int meta = json_object_get(meta_of(body), MCP_META_VERSION) != NULL;
    if (!has_session)
        return meta || (h->version != NULL && !is_legacy_version(h->version, h->version_len));
    /* Inside an MCP session, a request stays legacy (an unknown header version is that era's
     * 400) unless it carries the modern envelope under a version header of another era. */
    return meta && h->version != NULL && !is_legacy_version(h->version, h->version_len);
}

/* An error response for msg's id (NULL or absent: null); data stolen. */
static json_t *error_for(json_t *msg, int code, const char *text, json_t *data)
{
    json_t *id = json_object_get(msg, "id");
    return mcp__rpc_error(id, code, text, data);
}

/* The _meta rung and the log level: NULL, or the error response. */
static json_t *meta_error(json_t *msg)
{
    json_t *meta = meta_of(msg);
    if (!json_is_object(meta))
        return error_for(msg, MCP_ERR_PARAMS,
                         "Invalid params: MCP 2026-07-28 requests carry params._meta, an object with "
                         "\"" MCP_META_VERSION "\" and \"" MCP_META_CAPABILITIES "\" (or send initialize "
                         "first to use the session-based protocol 2025-11-25)",
                         NULL);
    json_t *v = json_object_get(meta, MCP_META_VERSION);
    json_t *caps = json_object_get(meta, MCP_META_CAPABILITIES);
    if (v == NULL || caps == NULL) {
        char text[300];
        snprintf(text, sizeof(text), "Invalid params: params._meta is missing the required key(s): %s%s%s",
                 v == NULL ? MCP_META_VERSION : "", v == NULL && caps == NULL ? ", " : "",
                 caps == NULL ? MCP_META_CAPABILITIES : "");
        return error_for(msg, MCP_ERR_PARAMS, text, NULL);
    }
    if (!json_is_string(v))
        return error_for(msg, MCP_ERR_PARAMS, "Invalid params: _meta[\"" MCP_META_VERSION "\"] must be a string",
                         NULL);
    if (!json_is_object(caps))
        return error_for(msg, MCP_ERR_PARAMS,
                         "Invalid params: _meta[\"" MCP_META_CAPABILITIES "\"] must be an object", NULL);
    json_t *info = json_object_get(meta, MCP_META_CLIENT);
    if (info != NULL && !json_is_object(info))
        return error_for(msg, MCP_ERR_PARAMS, "Invalid params: _meta[\"" MCP_META_CLIENT "\"] must be an object",
                         NULL);
    json_t *level = json_object_get(meta, MCP_META_LOG_LEVEL);
    if (level != NULL && mcp__envelope_log_level(json_object_get(msg, "params")) == (int)NLEVELS)
        return error_for(msg, MCP_ERR_PARAMS,
                         "Invalid params: _meta[\"" MCP_META_LOG_LEVEL "\"] must be one of debug, info, notice, "
                         "warning, error, critical, alert, emergency",
                         NULL);
    return NULL;
}

static json_t *version_error(json_t *msg)
{
    const char *v = json_string_value(json_object_get(meta_of(msg), MCP_META_VERSION));
    if (strcmp(v, MCP_MODERN_VERSION) == 0)
        return NULL;
    json_t *data = json_pack("{s:[s,s,s,s], s:s}", "supported", MCP_MODERN_VERSION, legacy_versions[0],
                             legacy_versions[1], legacy_versions[2], "requested", v);
    char text[200];
    snprintf(text, sizeof(text),
             "Unsupported protocol version '%.40s': send " MCP_MODERN_VERSION
             " in _meta, or initialize with 2025-11-25, 2025-06-18 or 2025-03-26",
             v);
    return error_for(msg, MCP_ERR_UNSUPPORTED_VERSION, text, data);
}

static int header_is(const char *h, size_t hlen, const char *body, size_t blen)
{
    return h != NULL && hlen == blen && memcmp(h, body, blen) == 0;
}

static json_t *mismatch(json_t *msg, const char *header, const char *what)
{
    char text[300];
    snprintf(text, sizeof(text), "Header mismatch: the %s header is missing or does not match %s in the body", header,
             what);
    return error_for(msg, MCP_ERR_HEADER_MISMATCH, text, NULL);
}

/* The body value Mcp-Name mirrors for method, or NULL when the method has none. */
static const char *name_key(const char *method)
{
    if (strcmp(method, "tools/call") == 0 || strcmp(method, "prompts/get") == 0)
        return "name";
    if (strcmp(method, "resources/read") == 0)
        return "uri";
    return NULL;
}

json_t *mcp__envelope_error(json_t *msg, const mcp_envelope_headers *h)
{
    json_t *error = meta_error(msg);
    if (error != NULL)
        return error;
    const char *v = json_string_value(json_object_get(meta_of(msg), MCP_META_VERSION));
    if (!header_is(h->version, h->version_len, v, strlen(v)))
        return mismatch(msg, "MCP-Protocol-Version", "_meta[\"" MCP_META_VERSION "\"]");
    const char *method = json_string_value(json_object_get(msg, "method"));
    if (method == NULL || !header_is(h->method, h->method_len, method, strlen(method)))
        return mismatch(msg, "Mcp-Method", "the method");
    const char *key = name_key(method);
    json_t *value = key != NULL ? json_object_get(json_object_get(msg, "params"), key) : NULL;
    if (value != NULL && !json_is_null(value)) {
        char *decoded = NULL;
        size_t dlen = 0;
        int same = h->name != NULL && mcp__header_decode(h->name, h->name_len, &decoded, &dlen) == 0 &&
                   json_is_string(value) && dlen == json_string_length(value) &&
                   memcmp(decoded, json_string_value(value), dlen) == 0;
        free(decoded);
        if (!same)
            return mismatch(msg, "Mcp-Name", strcmp(key, "uri") == 0 ? "params.uri" : "params.name");
    }
    return version_error(msg);
}

int mcp__header_decode(const char *v, size_t len, char **out, size_t *outlen)
{
    static const char pre[] = "=?base64?", post[] = "?=";
    size_t np = sizeof(pre) - 1, nq = sizeof(post) - 1;
    *out = NULL;
    *outlen = 0;
    if (len > MCP_NAME_HEADER_MAX * 2)
        return -1;
    if (len >= np + nq && memcmp(v, pre, np) == 0 && memcmp(v + len - nq, post, nq) == 0) {
        char err[RB_ERR_LEN];
        const char *b = v + np;
        size_t n = len - np - nq;
        /* codec_base64_decode forgives whitespace and a data: prefix; a header value has neither. */
        for (size_t i = 0; i < n; i++)
            if (b[i] == ' ' || b[i] == '\t' || b[i] == ':' || b[i] == ',')
                return -1;
        if (codec_base64_decode(b, n, out, outlen, err) != RB_OK)
            return -1;
    } else {
        *out = xstrndup(v, len);
        *outlen = len;
    }
    if (*outlen > MCP_NAME_HEADER_MAX) {
        free(*out);
        *out = NULL;
        *outlen = 0;
        return -1;
    }
    return 0;
}

int mcp__envelope_log_level(json_t *params)
{
    const char *level = json_string_value(json_object_get(json_object_get(params, "_meta"), MCP_META_LOG_LEVEL));
    for (size_t i = 0; level != NULL && i < NLEVELS; i++)
        if (strcmp(log_levels[i], level) == 0)
            return (int)i;
    return (int)NLEVELS;
}

int mcp__envelope_status(int code)
{
    switch (code) {
    case MCP_ERR_METHOD:
        return 404;
    case MCP_ERR_PARSE:
    case MCP_ERR_INVALID_REQUEST:
    case MCP_ERR_PARAMS:
    case MCP_ERR_HEADER_MISMATCH:
    case MCP_ERR_MISSING_CAPABILITY:
    case MCP_ERR_UNSUPPORTED_VERSION:
        return 400;
    default:
        return 200;
    }
}

/*
 * fuzz_envelope.c: libFuzzer target for the MCP 2026-07-28 envelope (server/mcp/mcp_envelope.c):
 * the era of a POST, the validation ladder of a modern request against its headers, the Base64
 * sentinel of header values and the per-request log level, as mcp.c and mcp_modern.c apply them
 * to untrusted bodies and headers. Input: three lines, the MCP-Protocol-Version, Mcp-Method and
 * Mcp-Name header values (a line of one byte 0x01 means the header is absent), then the body
 * bytes, parsed as http_read_json_value does. Checks:
 *   - a non-object, an initialize, never counts as modern;
 *   - mcp__header_decode either fails or gives a NUL-terminated value of at most
 *     MCP_NAME_HEADER_MAX bytes (the value itself when it is not the sentinel);
 *   - mcp__envelope_log_level is 0..8;
 *   - for a request (mcp__classify 'r'), mcp__envelope_error is NULL only when _meta holds the
 *     served version and the version and method headers equal the body; otherwise an error
 *     response with the message's id, code -32602, -32020 or -32022 (with data.supported and
 *     data.requested), answered 400 (mcp__envelope_status), encodable as JSON.
 * Built only with clang and -DRUNBOX_FUZZ=ON. The seed corpus (tests/fuzz/corpus/envelope/) is
 * replayed through these same checks by tests/server/test_mcp_envelope.c, which includes this file.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "server/mcp/mcp_envelope.h"
#include "server/mcp/mcp_wire.h"
#include "tests/fuzz/fuzz_check.h"

/* Takes the next line of in[*pos..n) as a header value: NULL for the absent marker. */
static const char *next_line(const uint8_t *in, size_t n, size_t *pos, size_t *len)
{
    const uint8_t *start = in + *pos;
    const uint8_t *nl = *pos < n ? memchr(start, '\n', n - *pos) : NULL;
    size_t l = nl != NULL ? (size_t)(nl - start) : n - *pos;
    *pos += l + (nl != NULL);
    *len = l;
    if (l == 1 && start[0] == 0x01)
        return NULL;
    return (const char *)start;
}

static void check_error(json_t *resp, json_t *msg)
{
    FUZZ_CHECK(json_is_object(resp));
    FUZZ_CHECK(json_equal(json_object_get(resp, "id"), json_object_get(msg, "id")));
    json_t *err = json_object_get(resp, "error");
    int code = (int)json_integer_value(json_object_get(err, "code"));
    FUZZ_CHECK(code == MCP_ERR_PARAMS || code == MCP_ERR_HEADER_MISMATCH || code == MCP_ERR_UNSUPPORTED_VERSION);
    FUZZ_CHECK(mcp__envelope_status(code) == 400);
    FUZZ_CHECK(json_string_length(json_object_get(err, "message")) > 0);
    if (code == MCP_ERR_UNSUPPORTED_VERSION) {
        json_t *data = json_object_get(err, "data");
        FUZZ_CHECK(json_array_size(json_object_get(data, "supported")) > 0);
        FUZZ_CHECK(json_is_string(json_object_get(data, "requested")));
    }
    char *text = json_dumps(resp, JSON_COMPACT);
    FUZZ_CHECK(text != NULL);
    free(text);
}

int LLVMFuzzerTestOneInput(const uint8_t *in, size_t n);

int LLVMFuzzerTestOneInput(const uint8_t *in, size_t n)
{
    size_t pos = 0;
    mcp_envelope_headers h;
    memset(&h, 0, sizeof(h));
    h.version = next_line(in, n, &pos, &h.version_len);
    h.method = next_line(in, n, &pos, &h.method_len);
    h.name = next_line(in, n, &pos, &h.name_len);
    if (h.name != NULL) {
        char *out = NULL;
        size_t outlen = 0;
        if (mcp__header_decode(h.name, h.name_len, &out, &outlen) == 0) {
            FUZZ_CHECK(out != NULL && out[outlen] == '\0' && outlen <= MCP_NAME_HEADER_MAX);
            if (!(h.name_len >= 11 && memcmp(h.name, "=?base64?", 9) == 0))
                FUZZ_CHECK(outlen == h.name_len && memcmp(out, h.name, outlen) == 0);
        } else {
            FUZZ_CHECK(out == NULL);
        }
        free(out);
    }
    json_error_t jerr;
    json_t *body = json_loadb((const char *)in + pos, n - pos, JSON_DECODE_ANY | JSON_REJECT_DUPLICATES, &jerr);
    if (body == NULL)
        return 0;
    const char *m = json_string_value(json_object_get(body, "method"));
    for (int session = 0; session < 2; session++) {
        int modern = mcp__envelope_is_modern(body, &h, session);
        if (!json_is_object(body) || (m != NULL && strcmp(m, "initialize") == 0))
            FUZZ_CHECK(!modern);
    }
    int level = mcp__envelope_log_level(json_object_get(body, "params"));
    FUZZ_CHECK(level >= 0 && level <= 8);
    char kind = 0;
    json_t *error = NULL;
    if (mcp__classify(body, &kind, &error) != 0) {
        json_decref(error);
        json_decref(body);
        return 0;
    }
    if (kind == 'r') {
        json_t *resp = mcp__envelope_error(body, &h);
        if (resp == NULL) {
            json_t *meta = json_object_get(json_object_get(body, "params"), "_meta");
            const char *v = json_string_value(json_object_get(meta, MCP_META_VERSION));
            FUZZ_CHECK(v != NULL && strcmp(v, MCP_MODERN_VERSION) == 0);
            FUZZ_CHECK(json_is_object(json_object_get(meta, MCP_META_CAPABILITIES)));
            FUZZ_CHECK(h.version != NULL && h.version_len == strlen(v) && memcmp(h.version, v, h.version_len) == 0);
            FUZZ_CHECK(h.method != NULL && h.method_len == strlen(m) && memcmp(h.method, m, h.method_len) == 0);
        } else {
            check_error(resp, body);
            json_decref(resp);
        }
    }
    json_decref(body);
    return 0;
}

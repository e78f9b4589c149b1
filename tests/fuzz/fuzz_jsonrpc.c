/*
 * fuzz_jsonrpc.c: libFuzzer target for the JSON-RPC side of MCP POST bodies
 * (server/mcp/mcp_wire.c): what a body is, batches, the initialize request and the
 * classification of single messages, as mcp_post_handler applies them before dispatch. The
 * input is used twice: parsed as a JSON value (json_loadb as http_read_json_value does), and as
 * the choices of a small generator of JSON-RPC-shaped bodies (fields present or not, of the
 * right or a wrong type, batches of up to 70 messages), which reaches the shapes a byte-level
 * mutation rarely keeps valid JSON for. Each body goes through the POST pipeline under the
 * batch version and a later one. Checks:
 *   - mcp__body_kind agrees with the body's JSON type and method;
 *   - mcp__batch_size_refusal refuses exactly the batches that are empty (400) or above
 *     MCP_MAX_BATCH (413), and mcp__batch_refusal exactly those of another version;
 *   - mcp__initialize_error either accepts, with the protocolVersion string and an id to answer
 *     with, or answers a well-formed JSON-RPC error;
 *   - mcp__classify either gives a kind whose message has the shape it stands for (a request: a
 *     string method, a string or integer id, object or no params; a notification: no id; an
 *     answer: a valid id and a result or error, no method), or a well-formed error response:
 *     jsonrpc "2.0", an id that is null or the message's own string or integer id, an error
 *     with a known code and a message, encodable as JSON;
 *   - every id a response would carry back is null, a string or an integer (JSON-RPC 2.0).
 * Built only with clang and -DRUNBOX_FUZZ=ON. The seed corpus (tests/fuzz/corpus/jsonrpc/) is
 * replayed through these same checks by tests/server/test_mcp_wire.c, which includes this file.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "server/mcp/mcp_wire.h"
#include "tests/fuzz/fuzz_check.h"

/* ---- checks ---------------------------------------------------------------------------- */

static int valid_id(json_t *id)
{
    return json_is_null(id) || json_is_string(id) || json_is_integer(id);
}

/* A JSON-RPC error response for msg (NULL: no message to compare ids with). */
static void check_error_response(json_t *resp, json_t *msg)
{
    FUZZ_CHECK(json_is_object(resp) && json_object_size(resp) == 3);
    const char *jv = json_string_value(json_object_get(resp, "jsonrpc"));
    FUZZ_CHECK(jv != NULL && strcmp(jv, "2.0") == 0);
    json_t *id = json_object_get(resp, "id");
    FUZZ_CHECK(id != NULL && valid_id(id));
    if (!json_is_null(id))
        FUZZ_CHECK(msg != NULL && json_equal(id, json_object_get(msg, "id")));
    json_t *err = json_object_get(resp, "error");
    json_int_t code = json_integer_value(json_object_get(err, "code"));
    FUZZ_CHECK(json_is_integer(json_object_get(err, "code")));
    FUZZ_CHECK(code == MCP_ERR_PARSE || code == MCP_ERR_INVALID_REQUEST || code == MCP_ERR_METHOD ||
               code == MCP_ERR_PARAMS || code == MCP_ERR_INTERNAL);
    FUZZ_CHECK(json_is_string(json_object_get(err, "message")) && json_string_length(json_object_get(err, "message")) > 0);
    char *text = json_dumps(resp, JSON_COMPACT);
    FUZZ_CHECK(text != NULL);
    free(text);
}

static void check_message(json_t *msg)
{
    char kind = 0;
    json_t *error = NULL;
    if (mcp__classify(msg, &kind, &error) != 0) {
        FUZZ_CHECK(error != NULL);
        check_error_response(error, json_is_object(msg) ? msg : NULL);
        json_decref(error);
        return;
    }
    FUZZ_CHECK(error == NULL && json_is_object(msg));
    const char *jv = json_string_value(json_object_get(msg, "jsonrpc"));
    FUZZ_CHECK(jv != NULL && strcmp(jv, "2.0") == 0);
    json_t *id = json_object_get(msg, "id"), *method = json_object_get(msg, "method");
    json_t *params = json_object_get(msg, "params");
    if (kind == 'a') {
        FUZZ_CHECK(method == NULL && (json_is_string(id) || json_is_integer(id)));
        FUZZ_CHECK(json_object_get(msg, "result") != NULL || json_object_get(msg, "error") != NULL);
        return;
    }
    FUZZ_CHECK(kind == 'r' || kind == 'n');
    FUZZ_CHECK(json_is_string(method));
    FUZZ_CHECK(params == NULL || json_is_object(params));
    if (kind == 'r') {
        FUZZ_CHECK(json_is_string(id) || json_is_integer(id));
        /* what dispatch answers with */
        json_t *resp = mcp__rpc_result(id, json_object());
        FUZZ_CHECK(resp != NULL && valid_id(json_object_get(resp, "id")));
        json_decref(resp);
    } else {
        FUZZ_CHECK(id == NULL);
    }
}

static void check_body(json_t *body, const char *version)
{
    mcp_body_kind kind = mcp__body_kind(body);
    const char *method = json_string_value(json_object_get(body, "method"));
    if (json_is_array(body))
        FUZZ_CHECK(kind == MCP_BODY_BATCH);
    else if (!json_is_object(body))
        FUZZ_CHECK(kind == MCP_BODY_INVALID);
    else if (method != NULL && strcmp(method, "initialize") == 0)
        FUZZ_CHECK(kind == MCP_BODY_INITIALIZE);
    else
        FUZZ_CHECK(kind == MCP_BODY_MESSAGE);

    if (kind == MCP_BODY_INITIALIZE) {
        const char *asked = NULL;
        json_t *error = mcp__initialize_error(body, &asked);
        if (error != NULL) {
            check_error_response(error, body);
            json_decref(error);
        } else {
            FUZZ_CHECK(asked != NULL &&
                       asked == json_string_value(json_object_get(json_object_get(body, "params"), "protocolVersion")));
            /* the id handle_initialize answers with */
            FUZZ_CHECK(valid_id(json_object_get(body, "id")));
        }
    } else if (kind == MCP_BODY_MESSAGE) {
        check_message(body);
    } else if (kind == MCP_BODY_BATCH) {
        int status = 0;
        size_t n = json_array_size(body);
        int bad_size = n == 0 || n > MCP_MAX_BATCH;
        const char *why = mcp__batch_size_refusal(body, &status);
        FUZZ_CHECK((why != NULL) == bad_size);
        FUZZ_CHECK(why == NULL || status == (n == 0 ? 400 : 413));
        if (why == NULL)
            why = mcp__batch_refusal(version);
        FUZZ_CHECK((why != NULL) == (bad_size || strcmp(version, MCP_BATCH_VERSION) != 0));
        if (why == NULL)
            for (size_t i = 0; i < n; i++)
                check_message(json_array_get(body, i));
    }
}

static void check_body_versions(json_t *body)
{
    check_body(body, MCP_BATCH_VERSION);
    check_body(body, "2025-11-25");
}

/* ---- a generator of JSON-RPC-shaped bodies --------------------------------------------- */

typedef struct reader {
    const uint8_t *p;
    size_t n;
} reader;

/* The next byte of choices; 0 once they run out (so every generated body is finite). */
static unsigned next(reader *r)
{
    if (r->n == 0)
        return 0;
    r->n--;
    return *r->p++;
}

/* A short string made of the next bytes (its length from one byte). */
static json_t *gen_string(reader *r)
{
    char buf[16];
    size_t len = next(r) % sizeof(buf), i;
    for (i = 0; i < len && r->n > 0; i++)
        buf[i] = (char)next(r);
    return json_stringn(buf, i); /* NULL for bytes that are not UTF-8 */
}

static json_t *gen_int(reader *r)
{
    uint64_t v = 0;
    unsigned len = next(r) % 9;
    for (unsigned i = 0; i < len; i++)
        v = v << 8 | next(r);
    return json_integer((json_int_t)v);
}

static json_t *gen_value(reader *r, int depth);

static json_t *gen_id(reader *r)
{
    switch (next(r) % 9) {
    case 0: return NULL;
    case 1: return json_integer(1);
    case 2: return gen_int(r);
    case 3: return json_string("req-1");
    case 4: return gen_string(r);
    case 5: return json_null();
    case 6: return json_real(1.5);
    case 7: return json_true();
    default: return gen_value(r, 1);
    }
}

static json_t *gen_method(reader *r)
{
    static const char *const methods[] = {"initialize", "ping", "tools/list", "tools/call", "resources/read",
                                          "resources/list", "logging/setLevel", "notifications/cancelled",
                                          "notifications/initialized", ""};
    unsigned c = next(r) % 14;
    if (c < sizeof(methods) / sizeof(methods[0]))
        return json_string(methods[c]);
    switch (c) {
    case 10: return NULL;
    case 11: return gen_string(r);
    case 12: return json_null();
    default: return gen_value(r, 1);
    }
}

static json_t *gen_params(reader *r)
{
    unsigned c = next(r) % 6;
    if (c == 0)
        return NULL;
    if (c > 2)
        return gen_value(r, 1);
    json_t *p = json_object();
    static const char *const keys[] = {"protocolVersion", "name", "arguments", "uri", "level", "requestId", "_meta",
                                       "clientInfo", "capabilities"};
    unsigned k = next(r);
    for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
        if (!(k & (1u << (i % 8))))
            continue;
        json_t *v = i == 0 && c == 1 ? json_string(next(r) & 1 ? "2025-03-26" : "2025-06-18") : gen_value(r, 2);
        if (v != NULL)
            json_object_set_new(p, keys[i], v);
    }
    return p;
}

static json_t *gen_value(reader *r, int depth)
{
    switch (next(r) % (depth < 3 ? 9 : 6)) {
    case 0: return json_null();
    case 1: return json_false();
    case 2: return gen_int(r);
    case 3: return json_real(-0.5);
    case 4: return gen_string(r);
    case 5: return json_string("2.0");
    case 6: return json_object();
    case 7: {
        json_t *a = json_array();
        for (unsigned i = next(r) % 4; i > 0; i--) {
            json_t *v = gen_value(r, depth + 1);
            if (v != NULL)
                json_array_append_new(a, v);
        }
        return a;
    }
    default: {
        json_t *o = json_object();
        json_t *v = gen_value(r, depth + 1);
        if (v != NULL)
            json_object_set_new(o, "k", v);
        return o;
    }
    }
}

static void set(json_t *obj, const char *key, json_t *v)
{
    if (v != NULL)
        json_object_set_new(obj, key, v);
}

static json_t *gen_message(reader *r)
{
    unsigned c = next(r);
    if (c % 16 == 15)
        return gen_value(r, 1); /* not an object at all */
    json_t *m = json_object();
    switch (c % 5) {
    case 0: break;
    case 1: set(m, "jsonrpc", json_string("1.0")); break;
    case 2: set(m, "jsonrpc", gen_value(r, 2)); break;
    default: set(m, "jsonrpc", json_string("2.0")); break;
    }
    set(m, "id", gen_id(r));
    set(m, "method", gen_method(r));
    set(m, "params", gen_params(r));
    unsigned a = next(r);
    if (a & 1)
        set(m, "result", a & 2 ? json_object() : gen_value(r, 2));
    if (a & 4)
        set(m, "error", json_pack("{s:i, s:s}", "code", -32000, "message", "client says no"));
    return m;
}

static json_t *gen_body(reader *r)
{
    unsigned c = next(r);
    if (c % 4 != 3)
        return gen_message(r);
    json_t *batch = json_array();
    /* up to 70 messages, past MCP_MAX_BATCH */
    for (unsigned i = next(r) % 71; i > 0; i--) {
        json_t *m = gen_message(r);
        json_array_append_new(batch, m != NULL ? m : json_null());
    }
    return batch;
}

int LLVMFuzzerTestOneInput(const uint8_t *in, size_t n);

int LLVMFuzzerTestOneInput(const uint8_t *in, size_t n)
{
    /* the bytes as a POST body */
    json_t *body = json_loadb((const char *)in, n, JSON_REJECT_DUPLICATES | JSON_DECODE_ANY, NULL);
    if (body != NULL) {
        check_body_versions(body);
        json_decref(body);
    }
    /* the bytes as choices */
    reader r = {in, n};
    body = gen_body(&r);
    if (body != NULL) {
        check_body_versions(body);
        json_decref(body);
    }
    return 0;
}

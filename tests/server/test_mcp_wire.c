/*
 * test_mcp_wire.c: server/mcp/mcp_wire.c without HTTP: what a POST body is, batches by
 * protocol version and size, the initialize request, single messages (request, notification,
 * answer, each Invalid Request and Invalid Params), and SSE event ids both ways; and replays of
 * the libFuzzer seed corpora in tests/fuzz/corpus/jsonrpc/ and sse_id/ through the checks of
 * tests/fuzz/fuzz_jsonrpc.c and fuzz_sse_id.c.
 */
#include <criterion/criterion.h>
#include <string.h>

#include "server/mcp/mcp_wire.h"
#include "tests/common/corpus.h"

/* The fuzz targets, with their checks as Criterion assertions naming the seed, and their entry
 * points renamed apart. */
static const char *replay_seed = "";
#define FUZZ_CHECK(cond) cr_assert(cond, "%s: check failed: %s", replay_seed, #cond)
#define LLVMFuzzerTestOneInput fuzz_jsonrpc_input
#include "tests/fuzz/fuzz_jsonrpc.c"
#undef LLVMFuzzerTestOneInput
#define LLVMFuzzerTestOneInput fuzz_sse_id_input
#include "tests/fuzz/fuzz_sse_id.c"
#undef LLVMFuzzerTestOneInput

static json_t *js(const char *text)
{
    json_error_t jerr;
    json_t *v = json_loads(text, JSON_DECODE_ANY, &jerr);
    cr_assert_not_null(v, "%s: %s", text, jerr.text);
    return v;
}

static mcp_body_kind kind_of(const char *text)
{
    json_t *v = js(text);
    mcp_body_kind k = mcp__body_kind(v);
    json_decref(v);
    return k;
}

Test(mcp_wire, body_kinds)
{
    cr_expect_eq(kind_of("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\"}"), MCP_BODY_INITIALIZE);
    cr_expect_eq(kind_of("{\"method\":\"initialize\"}"), MCP_BODY_INITIALIZE);
    cr_expect_eq(kind_of("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}"), MCP_BODY_MESSAGE);
    cr_expect_eq(kind_of("{\"method\":[\"initialize\"]}"), MCP_BODY_MESSAGE);
    cr_expect_eq(kind_of("{}"), MCP_BODY_MESSAGE);
    cr_expect_eq(kind_of("[]"), MCP_BODY_BATCH);
    cr_expect_eq(kind_of("[{\"method\":\"initialize\"}]"), MCP_BODY_BATCH);
    cr_expect_eq(kind_of("\"ping\""), MCP_BODY_INVALID);
    cr_expect_eq(kind_of("null"), MCP_BODY_INVALID);
    cr_expect_eq(kind_of("42"), MCP_BODY_INVALID);
}

Test(mcp_wire, batches_by_version_and_size)
{
    json_t *one = js("[{}]"), *none = js("[]"), *many = json_array();
    for (int i = 0; i < MCP_MAX_BATCH; i++)
        json_array_append_new(many, json_object());
    int status = 0;
    cr_expect_null(mcp__batch_refusal("2025-03-26"));
    cr_expect(strstr(mcp__batch_refusal("2025-06-18"), "2025-03-26") != NULL);
    cr_expect_null(mcp__batch_size_refusal(one, &status));
    cr_expect_null(mcp__batch_size_refusal(many, &status));
    cr_expect(strstr(mcp__batch_size_refusal(none, &status), "empty") != NULL);
    cr_expect_eq(status, 400);
    json_array_append_new(many, json_object());
    cr_expect(strstr(mcp__batch_size_refusal(many, &status), "at most 64") != NULL);
    cr_expect_eq(status, 413);
    json_decref(one);
    json_decref(none);
    json_decref(many);
}

/* The error response's code, and its id as compact JSON. */
static int error_code(json_t *resp, char *id, size_t cap)
{
    cr_assert(json_is_object(resp));
    cr_assert_str_eq(json_string_value(json_object_get(resp, "jsonrpc")), "2.0");
    char *t = json_dumps(json_object_get(resp, "id"), JSON_ENCODE_ANY | JSON_COMPACT);
    snprintf(id, cap, "%s", t);
    free(t);
    json_t *err = json_object_get(resp, "error");
    cr_assert(json_is_string(json_object_get(err, "message")));
    return (int)json_integer_value(json_object_get(err, "code"));
}

Test(mcp_wire, initialize)
{
    char id[64];
    const char *v = NULL;
    json_t *msg = js("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"protocolVersion\":\"2025-06-18\"}}");
    cr_assert_null(mcp__initialize_error(msg, &v));
    cr_expect_str_eq(v, "2025-06-18");
    json_decref(msg);

    msg = js("{\"jsonrpc\":\"2.0\",\"method\":\"initialize\",\"params\":{\"protocolVersion\":\"2025-06-18\"}}");
    json_t *e = mcp__initialize_error(msg, &v);
    cr_expect_eq(error_code(e, id, sizeof(id)), MCP_ERR_INVALID_REQUEST);
    cr_expect_str_eq(id, "null");
    json_decref(e);
    json_decref(msg);

    msg = js("{\"jsonrpc\":\"2.0\",\"id\":\"a\",\"method\":\"initialize\",\"params\":{\"protocolVersion\":5}}");
    e = mcp__initialize_error(msg, &v);
    cr_expect_eq(error_code(e, id, sizeof(id)), MCP_ERR_PARAMS);
    cr_expect_str_eq(id, "\"a\"");
    json_decref(e);
    json_decref(msg);
}

/* initialize was checked for an id and a version only: {"jsonrpc":"1.0","id":true} or an object id
 * started a session and the id went back into the answer, which JSON-RPC 2.0 does not allow
 * (found by fuzz_jsonrpc). It is a request like any other. */
Test(mcp_wire, initialize_is_a_json_rpc_request)
{
    static const char *const bad[] = {
        "{\"jsonrpc\":\"1.0\",\"id\":true,\"method\":\"initialize\",\"params\":{\"protocolVersion\":\"2025-06-18\"}}",
        "{\"jsonrpc\":\"2.0\",\"id\":{\"a\":1},\"method\":\"initialize\",\"params\":{\"protocolVersion\":\"2025-06-18\"}}",
        "{\"jsonrpc\":\"2.0\",\"id\":null,\"method\":\"initialize\",\"params\":{\"protocolVersion\":\"2025-06-18\"}}",
        "{\"jsonrpc\":\"2.0\",\"id\":1.5,\"method\":\"initialize\",\"params\":{\"protocolVersion\":\"2025-06-18\"}}",
        "{\"id\":1,\"method\":\"initialize\",\"params\":{\"protocolVersion\":\"2025-06-18\"}}",
    };
    char id[64];
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        json_t *msg = js(bad[i]);
        const char *v = NULL;
        json_t *e = mcp__initialize_error(msg, &v);
        cr_assert_not_null(e, "%s", bad[i]);
        cr_expect_eq(error_code(e, id, sizeof(id)), MCP_ERR_INVALID_REQUEST, "%s", bad[i]);
        cr_expect(strcmp(id, "null") == 0 || strcmp(id, "1") == 0, "%s: %s", bad[i], id);
        json_decref(e);
        json_decref(msg);
    }
    json_t *msg = js("{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"initialize\",\"params\":[\"2025-06-18\"]}");
    const char *v = NULL;
    json_t *e = mcp__initialize_error(msg, &v);
    cr_expect_eq(error_code(e, id, sizeof(id)), MCP_ERR_PARAMS);
    cr_expect_str_eq(id, "2");
    json_decref(e);
    json_decref(msg);
}

/* classify's answer for text: the kind, or "E<code> <id>" for an error. */
static const char *classify(const char *text, char *out, size_t cap)
{
    json_t *msg = js(text), *error = NULL;
    char kind = 0, id[64];
    if (mcp__classify(msg, &kind, &error) == 0) {
        cr_assert_null(error);
        snprintf(out, cap, "%c", kind);
    } else {
        int code = error_code(error, id, sizeof(id));
        snprintf(out, cap, "E%d %s", code, id);
        json_decref(error);
    }
    json_decref(msg);
    return out;
}

Test(mcp_wire, classify_messages)
{
    char o[96];
    cr_expect_str_eq(classify("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}", o, sizeof(o)), "r");
    cr_expect_str_eq(classify("{\"jsonrpc\":\"2.0\",\"id\":\"x\",\"method\":\"tools/call\",\"params\":{}}", o, sizeof(o)),
                     "r");
    cr_expect_str_eq(classify("{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}", o, sizeof(o)), "n");
    cr_expect_str_eq(classify("{\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{}}", o, sizeof(o)), "a");
    cr_expect_str_eq(classify("{\"jsonrpc\":\"2.0\",\"id\":3,\"error\":{\"code\":1}}", o, sizeof(o)), "a");
    /* errors carry the id when it is usable */
    cr_expect_str_eq(classify("[1]", o, sizeof(o)), "E-32600 null");
    cr_expect_str_eq(classify("{\"id\":7,\"method\":\"ping\"}", o, sizeof(o)), "E-32600 7");
    cr_expect_str_eq(classify("{\"jsonrpc\":\"1.0\",\"id\":\"a\",\"method\":\"ping\"}", o, sizeof(o)), "E-32600 \"a\"");
    cr_expect_str_eq(classify("{\"jsonrpc\":\"2.0\",\"id\":7}", o, sizeof(o)), "E-32600 7");
    cr_expect_str_eq(classify("{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":5}", o, sizeof(o)), "E-32600 7");
    cr_expect_str_eq(classify("{\"jsonrpc\":\"2.0\",\"id\":1.5,\"method\":\"ping\"}", o, sizeof(o)), "E-32600 null");
    cr_expect_str_eq(classify("{\"jsonrpc\":\"2.0\",\"id\":null,\"method\":\"ping\"}", o, sizeof(o)), "E-32600 null");
    cr_expect_str_eq(classify("{\"jsonrpc\":\"2.0\",\"id\":{},\"result\":1}", o, sizeof(o)), "E-32600 null");
    cr_expect_str_eq(classify("{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"ping\",\"params\":[1]}", o, sizeof(o)),
                     "E-32602 2");
}

static int parse(const char *v, size_t len, uint64_t *seq)
{
    return mcp__sse_id_parse(v, len, "0a1b2c3d", seq);
}

Test(mcp_wire, sse_ids)
{
    char buf[48];
    uint64_t seq = 0;
    mcp__sse_id_format("0a1b2c3d", 42, buf, sizeof(buf));
    cr_expect_str_eq(buf, "0a1b2c3d-42");
    cr_expect(parse(buf, strlen(buf), &seq) && seq == 42);
    mcp__sse_id_format("0a1b2c3d", UINT64_MAX, buf, sizeof(buf));
    cr_expect(parse(buf, strlen(buf), &seq) && seq == UINT64_MAX);
    cr_expect(!parse("ffffffff-42", 11, &seq), "another boot");
    cr_expect(!parse("0a1b2c3d-", 9, &seq), "no number");
    cr_expect(!parse("0a1b2c3d42", 10, &seq), "no dash");
    cr_expect(!parse("0a1b2c3d-4x", 11, &seq), "trailing bytes");
    cr_expect(!parse("0a1b2c3d- ", 10, &seq), "only a blank");
    cr_expect(!parse("0a1b", 4, &seq));
    /* read as strtoull reads it: blanks and a sign pass, a NUL ends the value */
    cr_expect(parse("0a1b2c3d- +7", 12, &seq) && seq == 7);
    cr_expect(parse("0a1b2c3d-9\0zz", 13, &seq) && seq == 9);
    /* only len bytes are read */
    cr_expect(parse("0a1b2c3d-123", 11, &seq) && seq == 12);

    /* ids of another boot (runboxd restarted since), told from anything else */
    cr_expect(mcp__sse_id_foreign("ffffffff-42", 11, "0a1b2c3d"));
    cr_expect(!mcp__sse_id_foreign("0a1b2c3d-42", 11, "0a1b2c3d"), "this boot");
    cr_expect(!mcp__sse_id_foreign("fffffff-42", 10, "0a1b2c3d"), "a shorter boot");
    cr_expect(!mcp__sse_id_foreign("FFFFFFFF-42", 11, "0a1b2c3d"), "upper case");
    cr_expect(!mcp__sse_id_foreign("ffffffff-", 9, "0a1b2c3d"), "no number");
    cr_expect(!mcp__sse_id_foreign("ffffffff-4x", 11, "0a1b2c3d"), "not a number");
    cr_expect(!mcp__sse_id_foreign("ffffffff-+4", 11, "0a1b2c3d"), "a sign");
    cr_expect(!mcp__sse_id_foreign("some-client-id", 14, "0a1b2c3d"));
}

static void check_jsonrpc_seed(void *data, const char *seed, const char *path, const char *buf, size_t len)
{
    (void)data;
    (void)path;
    replay_seed = seed;
    fuzz_jsonrpc_input((const uint8_t *)buf, len);
}

Test(mcp_wire, fuzz_corpus_replay_jsonrpc)
{
    cr_assert_geq(corpus_each("jsonrpc", check_jsonrpc_seed, NULL), 10);
}

static void check_sse_id_seed(void *data, const char *seed, const char *path, const char *buf, size_t len)
{
    (void)data;
    (void)path;
    replay_seed = seed;
    fuzz_sse_id_input((const uint8_t *)buf, len);
}

Test(mcp_wire, fuzz_corpus_replay_sse_id)
{
    cr_assert_geq(corpus_each("sse_id", check_sse_id_seed, NULL), 10);
}

/*
 * test_mcp_envelope.c: server/mcp/mcp_envelope.c without HTTP: the era of a POST, each rung of
 * the 2026-07-28 validation ladder (_meta, headers against the body, the version), the Base64
 * sentinel of Mcp-Name, the per-request log level and the HTTP status of error codes; and the
 * replay of the libFuzzer seed corpus tests/fuzz/corpus/envelope/ through the checks of
 * tests/fuzz/fuzz_envelope.c.
 */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "server/mcp/mcp_envelope.h"
#include "server/mcp/mcp_wire.h"
#include "tests/common/corpus.h"

static const char *replay_seed = "";
#define FUZZ_CHECK(cond) cr_assert(cond, "%s: check failed: %s", replay_seed, #cond)
#define LLVMFuzzerTestOneInput fuzz_envelope_input
#include "tests/fuzz/fuzz_envelope.c"
#undef LLVMFuzzerTestOneInput

#define META "\"_meta\":{\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\"," \
             "\"io.modelcontextprotocol/clientCapabilities\":{}}"

static json_t *js(const char *text)
{
    json_error_t jerr;
    json_t *v = json_loads(text, JSON_DECODE_ANY, &jerr);
    cr_assert_not_null(v, "%s: %s", text, jerr.text);
    return v;
}

static mcp_envelope_headers hdrs(const char *version, const char *method, const char *name)
{
    mcp_envelope_headers h = {version, method, name, version ? strlen(version) : 0, method ? strlen(method) : 0,
                              name ? strlen(name) : 0};
    return h;
}

/* The error code of msg's ladder under h, 0 when it passes. */
static int ladder(const char *msg, mcp_envelope_headers h)
{
    json_t *m = js(msg);
    json_t *e = mcp__envelope_error(m, &h);
    int code = e != NULL ? (int)json_integer_value(json_object_get(json_object_get(e, "error"), "code")) : 0;
    if (e != NULL)
        cr_expect(json_equal(json_object_get(e, "id"), json_object_get(m, "id")));
    json_decref(e);
    json_decref(m);
    return code;
}

Test(mcp_envelope, era)
{
    mcp_envelope_headers none = hdrs(NULL, NULL, NULL), legacy = hdrs("2025-11-25", NULL, NULL),
                         modern = hdrs("2026-07-28", NULL, NULL), future = hdrs("2099-01-01", NULL, NULL);
    json_t *plain = js("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\"}");
    json_t *meta = js("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\",\"params\":{" META "}}");
    json_t *disc = js("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"server/discover\"}");
    json_t *init = js("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{" META "}}");
    json_t *batch = js("[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\",\"params\":{" META "}}]");
    cr_expect(!mcp__envelope_is_modern(plain, &none, 0));
    cr_expect(!mcp__envelope_is_modern(plain, &legacy, 1));
    cr_expect(!mcp__envelope_is_modern(plain, &modern, 1), "a session without _meta stays legacy");
    cr_expect(mcp__envelope_is_modern(plain, &modern, 0));
    cr_expect(mcp__envelope_is_modern(plain, &future, 0), "an unknown version goes to the modern ladder");
    cr_expect(mcp__envelope_is_modern(meta, &none, 0));
    cr_expect(!mcp__envelope_is_modern(meta, &legacy, 1), "_meta inside a legacy session stays legacy");
    cr_expect(mcp__envelope_is_modern(meta, &modern, 1), "_meta and a modern header win over a session");
    cr_expect(mcp__envelope_is_modern(disc, &none, 1));
    cr_expect(!mcp__envelope_is_modern(init, &modern, 0), "initialize is always the legacy lifecycle");
    cr_expect(!mcp__envelope_is_modern(batch, &modern, 0));
    json_decref(plain);
    json_decref(meta);
    json_decref(disc);
    json_decref(init);
    json_decref(batch);
}

Test(mcp_envelope, ladder)
{
    const char *list = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\",\"params\":{" META "}}";
    const char *call = "{\"jsonrpc\":\"2.0\",\"id\":\"c\",\"method\":\"tools/call\",\"params\":{\"name\":\"get_health\"," META
                       "}}";
    cr_expect_eq(ladder(list, hdrs("2026-07-28", "tools/list", NULL)), 0);
    cr_expect_eq(ladder(list, hdrs("2025-11-25", "tools/list", NULL)), MCP_ERR_HEADER_MISMATCH);
    cr_expect_eq(ladder(list, hdrs(NULL, "tools/list", NULL)), MCP_ERR_HEADER_MISMATCH);
    cr_expect_eq(ladder(list, hdrs("2026-07-28", "tools/call", NULL)), MCP_ERR_HEADER_MISMATCH);
    cr_expect_eq(ladder(list, hdrs("2026-07-28", "Tools/List", NULL)), MCP_ERR_HEADER_MISMATCH, "values are case-sensitive");
    cr_expect_eq(ladder(call, hdrs("2026-07-28", "tools/call", "get_health")), 0);
    cr_expect_eq(ladder(call, hdrs("2026-07-28", "tools/call", "=?base64?Z2V0X2hlYWx0aA==?=")), 0);
    cr_expect_eq(ladder(call, hdrs("2026-07-28", "tools/call", NULL)), MCP_ERR_HEADER_MISMATCH);
    cr_expect_eq(ladder(call, hdrs("2026-07-28", "tools/call", "list_sessions")), MCP_ERR_HEADER_MISMATCH);
    cr_expect_eq(ladder("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\"}", hdrs("2026-07-28", "tools/list", NULL)),
                 MCP_ERR_PARAMS);
    cr_expect_eq(ladder("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\",\"params\":{\"_meta\":{"
                        "\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\"}}}",
                        hdrs("2026-07-28", "tools/list", NULL)),
                 MCP_ERR_PARAMS);
    const char *old = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\",\"params\":{\"_meta\":{"
                      "\"io.modelcontextprotocol/protocolVersion\":\"1900-01-01\","
                      "\"io.modelcontextprotocol/clientCapabilities\":{}}}}";
    cr_expect_eq(ladder(old, hdrs("1900-01-01", "tools/list", NULL)), MCP_ERR_UNSUPPORTED_VERSION);
    cr_expect_eq(ladder(old, hdrs("2026-07-28", "tools/list", NULL)), MCP_ERR_HEADER_MISMATCH,
                 "a client that disagrees with itself is told so first");
}

Test(mcp_envelope, header_decode_and_levels)
{
    char *out = NULL;
    size_t len = 0;
    cr_assert_eq(mcp__header_decode("=?base64?SGVsbG8sIOS4lueVjA==?=", 31, &out, &len), 0);
    cr_expect_eq(len, strlen("Hello, \xe4\xb8\x96\xe7\x95\x8c"));
    cr_expect_str_eq(out, "Hello, \xe4\xb8\x96\xe7\x95\x8c");
    free(out);
    cr_assert_eq(mcp__header_decode("plain", 5, &out, &len), 0);
    cr_expect_str_eq(out, "plain");
    free(out);
    cr_expect_eq(mcp__header_decode("=?base64?a b?=", 14, &out, &len), -1);
    cr_expect_null(out);
    json_t *p = js("{\"_meta\":{\"io.modelcontextprotocol/logLevel\":\"warning\"}}");
    cr_expect_eq(mcp__envelope_log_level(p), 3);
    json_decref(p);
    cr_expect_eq(mcp__envelope_log_level(NULL), 8);
    cr_expect_eq(mcp__envelope_status(MCP_ERR_METHOD), 404);
    cr_expect_eq(mcp__envelope_status(MCP_ERR_UNSUPPORTED_VERSION), 400);
    cr_expect_eq(mcp__envelope_status(MCP_ERR_INTERNAL), 200);
}

static void check_seed(void *data, const char *seed, const char *path, const char *buf, size_t len)
{
    (void)data;
    (void)path;
    replay_seed = seed;
    fuzz_envelope_input((const uint8_t *)buf, len);
}

Test(mcp_envelope, fuzz_corpus_replay_envelope)
{
    cr_assert_geq(corpus_each("envelope", check_seed, NULL), 10);
}

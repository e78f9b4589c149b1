/*
 * test_mcp.c: the /mcp endpoint over real HTTP on loopback against the fake core (and the fake
 * MCP registry of support_fake_mcp.c): every MUST of the transport that can be seen on the wire
 * (Origin, Mcp-Session-Id, MCP-Protocol-Version, 202, Accept, GET, DELETE, batches by version,
 * JSON-RPC errors for malformed input), tools with JSON and SSE answers, progress,
 * cancellation and Last-Event-ID replay. Resources and the file, package and page tools are in
 * test_mcp_tools.c.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "tests/server/harness.h"
#include "tests/server/support_fake_files.h"
#include "tests/server/support_mcp.h"

TestSuite(mcp, .init = mcp_setup, .fini = mcp_teardown, .timeout = 60);

Test(mcp, initialize_assigns_an_unguessable_session_and_negotiates)
{
    http_resp r;
    mcp_post(NULL, NULL, NULL,
             "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"initialize\",\"params\":{\"protocolVersion\":\"2025-06-18\","
             "\"capabilities\":{},\"clientInfo\":{\"name\":\"t\",\"version\":\"1\"}}}",
             &r);
    cr_assert_eq(r.status, 200, "%s", r.body);
    cr_assert(strncmp(http_header(&r, "content-type"), "text/event-stream", 17) == 0);
    const char *sid = http_header(&r, "mcp-session-id");
    cr_assert(sid != NULL && strlen(sid) == 34 && strncmp(sid, "m_", 2) == 0, "%s", sid ? sid : "(none)");
    json_t *res = json_object_get(r.json, "result");
    cr_assert_eq(json_integer_value(json_object_get(r.json, "id")), 7);
    cr_assert_str_eq(json_string_value(json_object_get(res, "protocolVersion")), "2025-06-18");
    cr_assert(json_is_object(json_object_get(json_object_get(res, "capabilities"), "tools")));
    cr_assert(json_is_object(json_object_get(json_object_get(res, "capabilities"), "logging")));
    cr_assert_str_eq(json_string_value(json_object_get(json_object_get(res, "serverInfo"), "name")), "runbox");
    char first[64];
    snprintf(first, sizeof(first), "%s", sid);
    http_resp_dispose(&r);

    /* An unknown version gets the newest one we speak; ids differ. */
    mcp_post(NULL, NULL, NULL,
             "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"protocolVersion\":\"1999-01-01\","
             "\"capabilities\":{}}}",
             &r);
    cr_assert_eq(r.status, 200, "%s", r.body);
    cr_assert_str_eq(json_string_value(json_object_get(json_object_get(r.json, "result"), "protocolVersion")),
                     "2025-11-25");
    cr_assert_str_neq(http_header(&r, "mcp-session-id"), first);
    http_resp_dispose(&r);
}

/* initialize is a JSON-RPC request like any other: an id of another type or another jsonrpc
 * used to start a session (and went back in the answer). */
Test(mcp, initialize_must_be_a_json_rpc_request)
{
    post_expect_error(NULL, NULL, NULL,
                      "{\"jsonrpc\":\"2.0\",\"id\":{\"a\":1},\"method\":\"initialize\",\"params\":{\"protocolVersion\":"
                      "\"2025-06-18\"}}",
                      400, -32600);
    post_expect_error(NULL, NULL, NULL,
                      "{\"jsonrpc\":\"1.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"protocolVersion\":"
                      "\"2025-06-18\"}}",
                      400, -32600);
}

Test(mcp, session_header_missing_is_400_unknown_is_404)
{
    post_expect_error(NULL, NULL, NULL, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\"}", 400, -32600);
    post_expect_error("m_00000000000000000000000000000000", NULL, NULL, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}",
                      404, -32600);
}

/* A 2026-07-28 client probes with server/discover; the answer must be a 400 whose body is not a
 * modern error, so that it falls back to initialize. */
Test(mcp, modern_probe_gets_a_fallback_answer)
{
    http_resp r;
    mcp_post(NULL, "2026-07-28", "Accept: application/json, text/event-stream\r\nMcp-Method: server/discover\r\n",
             "{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"server/discover\",\"params\":{\"_meta\":{"
             "\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\"}}}",
             &r);
    cr_assert_eq(r.status, 400, "%s", r.body);
    json_t *e = json_object_get(r.json, "error");
    cr_assert(json_is_object(e), "%s", r.body);
    cr_assert_neq(json_integer_value(json_object_get(e, "code")), -32022);
    http_resp_dispose(&r);
}

Test(mcp, origin_is_validated)
{
    char *sid = initialize("2025-06-18");
    http_resp r;
    const char *ping = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}";
    post_expect_error(sid, NULL, ACCEPT "Origin: https://evil.example\r\n", ping, 403, -32600);
    mcp_post(sid, NULL, ACCEPT "Origin: http://localhost.evil.example\r\n", ping, &r);
    cr_assert_eq(r.status, 403, "%s", r.body);
    http_resp_dispose(&r);
    mcp_post(sid, NULL, ACCEPT "Origin: http://localhost:5173\r\n", ping, &r);
    cr_assert_eq(r.status, 200, "%s", r.body);
    http_resp_dispose(&r);
    mcp_post(sid, NULL, ACCEPT "Origin: http://127.0.0.1\r\n", ping, &r);
    cr_assert_eq(r.status, 200, "%s", r.body);
    http_resp_dispose(&r);
    mcp_post(sid, NULL, ACCEPT "Origin: http://[::1]:8080\r\n", ping, &r);
    cr_assert_eq(r.status, 200, "%s", r.body);
    http_resp_dispose(&r);
    /* Configured origins are allowed too (cfg is read per request). */
    free(mcp_h.cfg.allowed_origins);
    mcp_h.cfg.allowed_origins = xstrdup("https://app.example.com, https://other.example");
    mcp_post(sid, NULL, ACCEPT "Origin: https://app.example.com\r\n", ping, &r);
    cr_assert_eq(r.status, 200, "%s", r.body);
    http_resp_dispose(&r);
    mcp_post(sid, NULL, ACCEPT "Origin: https://evil.example\r\n", ping, &r);
    cr_assert_eq(r.status, 403, "%s", r.body);
    http_resp_dispose(&r);
    /* The GET and DELETE of the endpoint check it as well. */
    cr_assert_eq(http_do(mcp_h.port, "DELETE", "/mcp", "Origin: https://evil.example\r\nMcp-Session-Id: x\r\n", NULL, 0, &r),
                 0);
    cr_assert_eq(r.status, 403);
    http_resp_dispose(&r);
    free(sid);
}

Test(mcp, protocol_version_header_is_checked)
{
    char *sid = initialize("2025-06-18");
    http_resp r;
    post_expect_error(sid, "2024-13-99", NULL, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}", 400, -32600);
    mcp_post(sid, "2025-06-18", NULL, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}", &r);
    cr_assert_eq(r.status, 200, "%s", r.body);
    cr_assert(json_is_object(json_object_get(r.json, "result")));
    http_resp_dispose(&r);
    free(sid);
}

Test(mcp, notifications_and_responses_get_202)
{
    char *sid = initialize("2025-11-25");
    http_resp r;
    mcp_post(sid, "2025-11-25", NULL, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}", &r);
    cr_assert_eq(r.status, 202, "%s", r.body);
    cr_assert_eq(r.body_len, 0);
    http_resp_dispose(&r);
    mcp_post(sid, "2025-11-25", NULL, "{\"jsonrpc\":\"2.0\",\"id\":\"x\",\"result\":{}}", &r);
    cr_assert_eq(r.status, 202, "%s", r.body);
    http_resp_dispose(&r);
    free(sid);
}

Test(mcp, accept_and_content_type_are_checked)
{
    char *sid = initialize("2025-06-18");
    http_resp r;
    const char *ping = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}";
    post_expect_error(sid, NULL, "Accept: text/html\r\n", ping, 406, -32600);
    mcp_post(sid, NULL, "Accept: application/json\r\n", ping, &r);
    cr_assert_eq(r.status, 406, "%s", r.body);
    http_resp_dispose(&r);
    mcp_post(sid, NULL, "Accept: */*\r\n", ping, &r);
    cr_assert_eq(r.status, 200, "%s", r.body);
    http_resp_dispose(&r);
    char headers[256];
    snprintf(headers, sizeof(headers), ACCEPT "Content-Type: text/plain\r\nMcp-Session-Id: %s\r\n", sid);
    cr_assert_eq(http_do(mcp_h.port, "POST", "/mcp", headers, ping, strlen(ping), &r), 0);
    expect_rpc_error(&r, 415, -32600);
    http_resp_dispose(&r);
    free(sid);
}

/* A client that names text/event-stream in Accept gets each answer as one SSE event (as the
 * reference SDK servers send it; some clients read nothing else); "* / *" or no Accept gets plain
 * JSON, and so do a batch's answers. Errors of HTTP itself (4xx) are always JSON. */
Test(mcp, answers_as_sse_when_the_client_names_event_stream)
{
    const char *init = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"protocolVersion\":"
                       "\"2025-03-26\",\"capabilities\":{}}}";
    http_resp r;
    mcp_post(NULL, NULL, "Accept: */*\r\n", init, &r);
    cr_assert_eq(r.status, 200, "%s", r.body);
    expect_content_type(&r, "application/json");
    char *sid = xstrdup(http_header(&r, "mcp-session-id"));
    http_resp_dispose(&r);

    const char *ping = "{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"ping\"}";
    mcp_post(sid, NULL, NULL, ping, &r);
    expect_content_type(&r, "text/event-stream");
    cr_assert_str_eq(r.body, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":9,\"result\":{}}\n\n");
    http_resp_dispose(&r);
    mcp_post(sid, NULL, "Accept: application/json, Text/Event-Stream;q=0.9\r\n", ping, &r);
    expect_content_type(&r, "text/event-stream");
    http_resp_dispose(&r);
    static const char *const json_accepts[] = {"Accept: */*\r\n", "Accept: application/json, text/*\r\n",
                                               "Accept: application/*, */*;q=0.5\r\n", ""};
    for (size_t i = 0; i < sizeof(json_accepts) / sizeof(json_accepts[0]); i++) {
        mcp_post(sid, NULL, json_accepts[i], ping, &r);
        cr_assert_eq(r.status, 200, "%s: %s", json_accepts[i], r.body);
        expect_content_type(&r, "application/json");
        cr_assert_eq(json_integer_value(json_object_get(r.json, "id")), 9, "%s", r.body);
        http_resp_dispose(&r);
    }
    /* an error answer to a request is an answer like any other */
    mcp_post(sid, NULL, NULL, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"no/such\"}", &r);
    expect_content_type(&r, "text/event-stream");
    expect_rpc_error(&r, 200, -32601);
    http_resp_dispose(&r);
    /* a batch (2025-03-26) is answered as one JSON array */
    mcp_post(sid, "2025-03-26", NULL, "[{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"ping\"}]", &r);
    expect_content_type(&r, "application/json");
    cr_assert(json_is_array(r.json), "%s", r.body);
    http_resp_dispose(&r);
    /* HTTP-level refusals stay JSON */
    mcp_post("m_unknown", NULL, NULL, ping, &r);
    cr_assert_eq(r.status, 404, "%s", r.body);
    expect_content_type(&r, "application/json");
    http_resp_dispose(&r);
    free(sid);
}

Test(mcp, malformed_input_gets_jsonrpc_errors)
{
    char *sid = initialize("2025-06-18");
    http_resp r;
    static const struct {
        const char *body;
        int status, code;
    } bad[] = {
        {"{\"jsonrpc\":\"2.0\",", 400, -32700},
        {"42", 400, -32600},
        {"{\"jsonrpc\":\"1.0\",\"id\":1,\"method\":\"ping\"}", 400, -32600},
        {"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"no/such\"}", 200, -32601},
        {"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":[1]}", 400, -32602},
        {"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"nope\"}}", 200, -32602},
        {"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"logging/setLevel\",\"params\":{\"level\":9}}", 200, -32602}};
    for (size_t k = 0; k < sizeof(bad) / sizeof(bad[0]); k++)
        post_expect_error(sid, NULL, NULL, bad[k].body, bad[k].status, bad[k].code);
    /* Over max-body: h2o's own 413 is rewritten into a JSON-RPC error. */
    size_t n = 100 * 1024;
    char *big = xmalloc(n + 1);
    memset(big, ' ', n);
    memcpy(big, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}", 39);
    big[n] = '\0';
    mcp_post(sid, NULL, NULL, big, &r);
    cr_assert_eq(r.status, 413, "%s", r.body);
    cr_assert_not_null(r.json, "%s", r.body);
    cr_assert(json_is_object(json_object_get(r.json, "error")), "%s", r.body);
    http_resp_dispose(&r);
    free(big);
    free(sid);
}

Test(mcp, batches_only_under_2025_03_26)
{
    const char *batch = "[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"},"
                        "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"},"
                        "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/list\"},"
                        "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/call\",\"params\":{\"name\":\"list_sessions\"}}]";
    char *modern = initialize("2025-06-18");
    http_resp r;
    post_expect_error(modern, NULL, NULL, batch, 400, -32600);

    char *old = initialize("2025-03-26");
    mcp_post(old, "2025-03-26", NULL, batch, &r);
    cr_assert_eq(r.status, 200, "%s", r.body);
    cr_assert(json_is_array(r.json), "%s", r.body);
    cr_assert_eq(json_array_size(r.json), 3, "%s", r.body);
    int seen = 0;
    size_t i;
    json_t *m;
    json_array_foreach(r.json, i, m)
    {
        seen |= 1 << json_integer_value(json_object_get(m, "id"));
        cr_assert(json_is_object(json_object_get(m, "result")), "%s", r.body);
    }
    cr_assert_eq(seen, 0xe);
    http_resp_dispose(&r);
    mcp_post(old, "2025-03-26", NULL, "[{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}]", &r);
    cr_assert_eq(r.status, 202, "%s", r.body);
    http_resp_dispose(&r);
    post_expect_error(old, "2025-03-26", NULL, "[]", 400, -32600);
    free(modern);
    free(old);
}

Test(mcp, tools_list_has_schemas)
{
    char *sid = initialize("2025-06-18");
    http_resp r;
    mcp_post(sid, "2025-06-18", NULL, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\"}", &r);
    cr_assert_eq(r.status, 200, "%s", r.body);
    json_t *tools = json_object_get(json_object_get(r.json, "result"), "tools");
    static const char *const names[] = {"execute_code",   "create_session",       "list_sessions",  "get_session_info",
                                        "close_session",  "get_health",           "upload_file",    "download_file",
                                        "list_files",     "get_packages",         "install_dependencies",
                                        "pause_session",  "resume_session",       "fork_session",   "get_page_text"};
    size_t count = sizeof(names) / sizeof(names[0]);
    cr_assert_eq(json_array_size(tools), count);
    for (size_t k = 0; k < count; k++) {
        json_t *t = json_array_get(tools, k);
        cr_assert_str_eq(json_string_value(json_object_get(t, "name")), names[k]);
        cr_assert(json_string_length(json_object_get(t, "description")) > 20);
        cr_assert_str_eq(json_string_value(json_object_get(json_object_get(t, "inputSchema"), "type")), "object");
        cr_assert_str_eq(json_string_value(json_object_get(json_object_get(t, "outputSchema"), "type")), "object");
    }
    http_resp_dispose(&r);
    free(sid);
}

Test(mcp, execute_code_answers_with_structured_content_and_image)
{
    char *sid = initialize("2025-06-18");
    http_resp r;
    post_execute(sid, "2025-06-18", "5", "{\"code\":\"print('hello')\"}", NULL, &r);
    cr_assert_eq(r.status, 200, "%s", r.body);
    expect_content_type(&r, "text/event-stream");
    json_t *res = json_object_get(r.json, "result");
    cr_assert(json_is_false(json_object_get(res, "isError")), "%s", r.body);
    json_t *sc = json_object_get(res, "structuredContent");
    cr_assert_str_eq(json_string_value(json_object_get(sc, "status")), "completed");
    cr_assert_str_eq(json_string_value(json_object_get(sc, "stdout")), "hello\n");
    cr_assert_str_eq(json_string_value(json_object_get(sc, "result")), "42");
    int texts = 0, images = 0;
    size_t i;
    json_t *c;
    json_array_foreach(json_object_get(res, "content"), i, c)
    {
        const char *type = json_string_value(json_object_get(c, "type"));
        texts += strcmp(type, "text") == 0;
        if (strcmp(type, "image") == 0) {
            images++;
            cr_assert_str_eq(json_string_value(json_object_get(c, "mimeType")), "image/png");
            cr_assert_str_eq(json_string_value(json_object_get(c, "data")), "iVBORw0KGgo=");
        }
    }
    cr_assert_geq(texts, 2);
    cr_assert_eq(images, 1);
    const char *bound = json_string_value(json_object_get(sc, "session_id"));
    char first[64];
    snprintf(first, sizeof(first), "%s", bound);
    http_resp_dispose(&r);

    /* The second call runs in the same bound session. */
    post_execute(sid, "2025-06-18", "6", "{\"code\":\"RAISE\"}", NULL, &r);
    res = json_object_get(r.json, "result");
    cr_assert(json_is_true(json_object_get(res, "isError")), "%s", r.body);
    cr_assert_str_eq(json_string_value(json_object_get(json_object_get(res, "structuredContent"), "session_id")), first);
    http_resp_dispose(&r);

    /* A session created over REST is usable with session_id. */
    cr_assert_eq(http_json(mcp_h.port, "POST", "/sessions", "{}", &r), 0);
    char *rest = xstrdup(json_string_value(json_object_get(r.json, "session_id")));
    http_resp_dispose(&r);
    char args[256];
    snprintf(args, sizeof(args), "{\"code\":\"x\",\"session_id\":\"%s\"}", rest);
    post_execute(sid, "2025-06-18", "7", args, NULL, &r);
    res = json_object_get(r.json, "result");
    cr_assert_str_eq(json_string_value(json_object_get(json_object_get(res, "structuredContent"), "session_id")), rest);
    http_resp_dispose(&r);
    free(rest);
    free(sid);
}

/* Parses the "data:" lines of an SSE body into an array of messages. */
static json_t *sse_messages(const char *body, json_t *ids)
{
    json_t *msgs = json_array();
    const char *p = body;
    while ((p = strstr(p, "\n")) != NULL) {
        p++;
        if (strncmp(p, "id: ", 4) == 0 && ids != NULL) {
            const char *e = strchr(p, '\n');
            json_array_append_new(ids, json_stringn(p + 4, (size_t)(e - p - 4)));
        }
        if (strncmp(p, "data: ", 6) == 0) {
            const char *e = strchr(p, '\n');
            json_t *m = json_loadb(p + 6, (size_t)(e - p - 6), 0, NULL);
            if (m != NULL)
                json_array_append_new(msgs, m);
        }
    }
    return msgs;
}

Test(mcp, progress_token_turns_the_answer_into_sse_and_replays)
{
    char *sid = initialize("2025-11-25");
    http_resp r;
    post_execute(sid, "2025-11-25", "9", "{\"code\":\"print('hello')\"}", "{\"progressToken\":\"tok\"}", &r);
    cr_assert_eq(r.status, 200, "%s", r.body);
    expect_content_type(&r, "text/event-stream");
    json_t *ids = json_array();
    json_t *msgs = sse_messages(r.body, ids);
    size_t n = json_array_size(msgs);
    cr_assert_geq(n, 3, "%s", r.body);
    json_t *first = json_array_get(msgs, 0);
    cr_assert_str_eq(json_string_value(json_object_get(first, "method")), "notifications/progress");
    cr_assert_str_eq(json_string_value(json_object_get(json_object_get(first, "params"), "progressToken")), "tok");
    cr_assert_str_eq(json_string_value(json_object_get(json_object_get(first, "params"), "message")), "hello\n");
    json_t *last = json_array_get(msgs, n - 1);
    cr_assert_eq(json_integer_value(json_object_get(last, "id")), 9);
    cr_assert(json_is_object(json_object_get(json_object_get(last, "result"), "structuredContent")));
    cr_assert_eq(json_array_size(ids), n);
    /* Event ids are unique. */
    for (size_t a = 0; a < n; a++)
        for (size_t b = a + 1; b < n; b++)
            cr_assert_str_neq(json_string_value(json_array_get(ids, a)), json_string_value(json_array_get(ids, b)));
    http_resp_dispose(&r);

    /* Reconnecting with Last-Event-ID gets what followed the first event, response included. */
    char headers[256];
    snprintf(headers, sizeof(headers), "Accept: text/event-stream\r\nMcp-Session-Id: %s\r\nLast-Event-ID: %s\r\n", sid,
             json_string_value(json_array_get(ids, 0)));
    cr_assert_eq(http_do(mcp_h.port, "GET", "/mcp", headers, NULL, 0, &r), 0);
    cr_assert_eq(r.status, 200, "%s", r.body);
    json_t *again = sse_messages(r.body, NULL);
    cr_assert_eq(json_array_size(again), n - 1, "%s", r.body);
    cr_assert(json_equal(json_array_get(again, n - 2), last));
    json_decref(again);
    http_resp_dispose(&r);
    json_decref(msgs);
    json_decref(ids);
    free(sid);
}

/* GETs /mcp with Last-Event-ID last on session sid into r. */
static void resume(const char *sid, const char *last, http_resp *r)
{
    char headers[256];
    snprintf(headers, sizeof(headers), "Accept: text/event-stream\r\nMcp-Session-Id: %s\r\nLast-Event-ID: %s\r\n", sid,
             last);
    cr_assert_eq(http_do(mcp_h.port, "GET", "/mcp", headers, NULL, 0, r), 0);
}

/* An answer larger than the replay log (32 MiB) goes out once; the log keeps an error answer to
 * the same request in its place. It used to empty the whole log, so that a client resuming
 * with Last-Event-ID got an empty stream and waited for its answer forever. */
Test(mcp, an_answer_over_the_replay_limit_is_replayed_as_an_error)
{
    char *sid = initialize("2025-11-25");
    http_resp r;
    post_execute(sid, "2025-11-25", "5", "{\"code\":\"HUGE\"}", "{\"progressToken\":\"t\"}", &r);
    cr_assert_eq(r.status, 200);
    json_t *ids = json_array();
    json_t *msgs = sse_messages(r.body, ids);
    size_t n = json_array_size(msgs);
    cr_assert_geq(n, 3, "%.300s", r.body);
    json_t *answer = json_array_get(msgs, n - 1);
    cr_assert_eq(json_integer_value(json_object_get(answer, "id")), 5);
    char *text = json_dumps(answer, JSON_COMPACT);
    cr_assert_gt(strlen(text), 32u << 20, "the live answer is whole");
    free(text);
    http_resp_dispose(&r);

    /* From the first notification (17 MiB: kept) on: the others as they were, then the
     * stand-in of the answer. */
    resume(sid, json_string_value(json_array_get(ids, 0)), &r);
    cr_assert_eq(r.status, 200, "%.300s", r.body);
    json_t *again = sse_messages(r.body, NULL);
    cr_assert_eq(json_array_size(again), n - 1, "%.300s", r.body);
    for (size_t i = 1; i + 1 < n; i++)
        cr_assert(json_equal(json_array_get(again, i - 1), json_array_get(msgs, i)));
    json_t *in = json_array_get(again, n - 2);
    cr_assert_eq(json_integer_value(json_object_get(in, "id")), 5, "%.300s", r.body);
    json_t *e = json_object_get(in, "error");
    cr_assert_eq(json_integer_value(json_object_get(e, "code")), -32603, "%.300s", r.body);
    const char *m = json_string_value(json_object_get(e, "message"));
    cr_assert(m != NULL && strstr(m, "32 MiB") != NULL && strstr(m, "send the request again") != NULL, "%s", m);
    cr_assert_gt(json_integer_value(json_object_get(json_object_get(e, "data"), "bytes")), 32 << 20);
    json_decref(again);
    http_resp_dispose(&r);
    json_decref(msgs);
    json_decref(ids);
    free(sid);
}

/* Resuming from an event the bounded log has dropped: 410 with a JSON-RPC error naming the
 * bound, not an empty stream that never brings the answer. */
Test(mcp, resuming_from_a_dropped_event_is_gone)
{
    char *sid = initialize("2025-11-25");
    http_resp r;
    /* Two calls with a 20 MiB notification each: the first no longer fits beside the second. */
    json_t *first = json_array(), *second = json_array();
    post_execute(sid, "2025-11-25", "6", "{\"code\":\"LARGE\"}", "{\"progressToken\":\"a\"}", &r);
    cr_assert_eq(r.status, 200);
    json_decref(sse_messages(r.body, first));
    http_resp_dispose(&r);
    post_execute(sid, "2025-11-25", "7", "{\"code\":\"LARGE\"}", "{\"progressToken\":\"b\"}", &r);
    cr_assert_eq(r.status, 200);
    json_decref(sse_messages(r.body, second));
    http_resp_dispose(&r);
    cr_assert_geq(json_array_size(first), 3);
    cr_assert_geq(json_array_size(second), 3);

    resume(sid, json_string_value(json_array_get(first, 0)), &r);
    expect_rpc_error(&r, 410, -32600);
    const char *m = json_string_value(json_object_get(json_object_get(r.json, "error"), "message"));
    cr_assert(strstr(m, "no longer kept") != NULL && strstr(m, "send the request again") != NULL, "%s", m);
    http_resp_dispose(&r);

    /* The second call's events are kept: its answer follows as its stand-in. */
    size_t n = json_array_size(second);
    resume(sid, json_string_value(json_array_get(second, n - 2)), &r);
    cr_assert_eq(r.status, 200, "%.300s", r.body);
    json_t *again = sse_messages(r.body, NULL);
    cr_assert_eq(json_array_size(again), 1, "%.300s", r.body);
    cr_assert_eq(json_integer_value(json_object_get(json_array_get(again, 0), "id")), 7);
    cr_assert(json_is_object(json_object_get(json_array_get(again, 0), "error")));
    json_decref(again);
    http_resp_dispose(&r);
    json_decref(first);
    json_decref(second);
    free(sid);
}

/* MCP sessions outlive a restart; the events of their streams do not. An event id of another
 * boot used to open an empty stream, where the client waited for its answer forever. */
Test(mcp, resuming_from_before_a_restart_is_gone)
{
    char *sid = initialize("2025-11-25");
    http_resp r;
    post_execute(sid, "2025-11-25", "8", "{\"code\":\"print('hello')\"}", "{\"progressToken\":\"t\"}", &r);
    cr_assert_eq(r.status, 200);
    json_t *ids = json_array();
    json_decref(sse_messages(r.body, ids));
    http_resp_dispose(&r);
    char other[64];
    snprintf(other, sizeof(other), "%s", json_string_value(json_array_get(ids, 0)));
    other[0] = other[0] == '0' ? '1' : '0'; /* the same event of another boot */
    resume(sid, other, &r);
    expect_rpc_error(&r, 410, -32600);
    const char *m = json_string_value(json_object_get(json_object_get(r.json, "error"), "message"));
    cr_assert(strstr(m, "restarted") != NULL, "%s", m);
    http_resp_dispose(&r);
    json_decref(ids);
    free(sid);
}

Test(mcp, log_messages_follow_set_level)
{
    char *sid = initialize("2025-06-18");
    http_resp r;
    mcp_post(sid, NULL, NULL, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"logging/setLevel\",\"params\":{\"level\":\"debug\"}}",
             &r);
    cr_assert_eq(r.status, 200, "%s", r.body);
    http_resp_dispose(&r);
    post_execute(sid, NULL, "2", "{\"code\":\"1\"}", NULL, &r);
    expect_content_type(&r, "text/event-stream");
    json_t *msgs = sse_messages(r.body, NULL);
    cr_assert_str_eq(json_string_value(json_object_get(json_array_get(msgs, 0), "method")), "notifications/message");
    cr_assert_eq(json_integer_value(json_object_get(json_array_get(msgs, json_array_size(msgs) - 1), "id")), 2);
    json_decref(msgs);
    http_resp_dispose(&r);
    free(sid);
}

typedef struct cancel_args {
    char sid[64];
    http_resp resp;
} cancel_args;

static void *run_forever(void *p)
{
    cancel_args *a = p;
    post_execute(a->sid, NULL, "\"long\"", "{\"code\":\"FOREVER\"}", "{\"progressToken\":1}", &a->resp);
    return NULL;
}

Test(mcp, cancelled_request_interrupts_the_execution)
{
    char *sid = initialize("2025-06-18");
    cancel_args a;
    memset(&a, 0, sizeof(a));
    snprintf(a.sid, sizeof(a.sid), "%s", sid);
    pthread_t t;
    cr_assert_eq(pthread_create(&t, NULL, run_forever, &a), 0);
    /* Wait until the execution runs (it shows up as busy work in the fake core's watches). */
    while (fake_core_live_watches(mcp_h.core) == 0)
        usleep(10000);
    http_resp r;
    mcp_post(sid, NULL, NULL,
             "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{\"requestId\":\"long\","
             "\"reason\":\"test\"}}",
             &r);
    cr_assert_eq(r.status, 202, "%s", r.body);
    http_resp_dispose(&r);
    pthread_join(t, NULL);
    /* JSON when nothing preceded the answer, SSE when progress did. */
    json_t *msgs = a.resp.json != NULL ? json_pack("[O]", a.resp.json) : sse_messages(a.resp.body, NULL);
    json_t *last = json_array_get(msgs, json_array_size(msgs) - 1);
    cr_assert_str_eq(json_string_value(json_object_get(last, "id")), "long", "%s", a.resp.body);
    json_t *sc = json_object_get(json_object_get(last, "result"), "structuredContent");
    cr_assert_str_eq(json_string_value(json_object_get(sc, "status")), "cancelled", "%s", a.resp.body);
    json_decref(msgs);
    http_resp_dispose(&a.resp);
    free(sid);
}

Test(mcp, get_opens_a_stream_and_delete_ends_the_session)
{
    char *sid = initialize("2025-06-18");
    int fd = http_connect(mcp_h.port);
    char req[256];
    int n = snprintf(req, sizeof(req),
                     "GET /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\nMcp-Session-Id: %s\r\n\r\n", sid);
    cr_assert_eq(write(fd, req, (size_t)n), n);
    char buf[1024];
    size_t got = 0;
    while (got < sizeof(buf) - 1 && strstr(buf, "\n\n: ") == NULL) {
        ssize_t k = read(fd, buf + got, sizeof(buf) - 1 - got);
        if (k <= 0)
            break;
        got += (size_t)k;
        buf[got] = '\0';
        if (strstr(buf, "event stream") != NULL)
            break;
    }
    cr_assert(strstr(buf, "200") != NULL && strstr(buf, "text/event-stream") != NULL, "%s", buf);

    http_resp r;
    char headers[128];
    snprintf(headers, sizeof(headers), "Mcp-Session-Id: %s\r\n", sid);
    cr_assert_eq(http_do(mcp_h.port, "GET", "/mcp", headers, NULL, 0, &r), 0);
    cr_assert_eq(r.status, 406, "%s", r.body); /* no Accept: text/event-stream */
    http_resp_dispose(&r);
    cr_assert_eq(http_do(mcp_h.port, "DELETE", "/mcp", headers, NULL, 0, &r), 0);
    cr_assert_eq(r.status, 204, "%s", r.body);
    http_resp_dispose(&r);
    /* The open GET stream ends with the session. */
    while (read(fd, buf, sizeof(buf)) > 0)
        ;
    close(fd);
    post_expect_error(sid, NULL, NULL, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}", 404, -32600);
    cr_assert_eq(http_do(mcp_h.port, "DELETE", "/mcp", headers, NULL, 0, &r), 0);
    cr_assert_eq(r.status, 404, "%s", r.body);
    http_resp_dispose(&r);
    free(sid);
}

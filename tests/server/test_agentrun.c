/*
 * test_agentrun.c: runboxd's AgentRun-compatible surface over real HTTP on loopback against the
 * fake core: the REST routes under /agentrun (AgentRun's shapes, FastAPI's "detail" on every
 * error, the checks on file names and paths, a hostile multipart body) and the MCP tools at
 * /agentrun/mcp (AgentRun's nine tools, answers as JSON text the client parses, failures as
 * readable isError results). tests/clients/test_agentrun.py runs AgentRun+'s real clients
 * against a real runboxd.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "tests/server/harness.h"
#include "tests/server/support_fake_files.h"

static harness h;

static void setup(void)
{
    harness_start(&h, 0);
}

static void teardown(void)
{
    harness_stop(&h);
}

TestSuite(agentrun, .init = setup, .fini = teardown, .timeout = 60);

/* An error in FastAPI's shape ({"detail": ...}) with runbox's error object beside it. */
static void expect_detail(const http_resp *r, int status, const char *code, const char *mention)
{
    cr_assert_eq(r->status, status, "status %d, want %d: %s", r->status, status, r->body);
    const char *detail = json_string_value(json_object_get(r->json, "detail"));
    cr_assert(detail != NULL && detail[0] != '\0', "%s", r->body);
    cr_assert_str_eq(json_string_value(json_object_get(json_object_get(r->json, "error"), "code")), code, "%s",
                     r->body);
    if (mention != NULL)
        cr_assert(strstr(detail, mention) != NULL, "'%s' not in %s", mention, detail);
}

static char *ar_session(void)
{
    http_resp r;
    cr_assert_eq(http_do(h.port, "POST", "/agentrun/sessions", NULL, NULL, 0, &r), 0);
    cr_assert_eq(r.status, 200, "%s", r.body);
    cr_assert_eq(json_object_size(r.json), 4, "%s", r.body); /* the client builds a dataclass of exactly these */
    cr_assert_str_eq(json_string_value(json_object_get(r.json, "workdir")), "/workspace");
    cr_assert_str_eq(json_string_value(json_object_get(r.json, "source_path")), "/workspace/src");
    cr_assert_str_eq(json_string_value(json_object_get(r.json, "artifact_path")), "/workspace/artifacts");
    char *sid = xstrdup(json_string_value(json_object_get(r.json, "session_id")));
    http_resp_dispose(&r);
    return sid;
}

/* POSTs a multipart body with one part (name, filename, bytes) to path. */
static void post_part(const char *path, const char *name, const char *filename, const char *bytes, http_resp *r)
{
    char body[1024];
    int n = snprintf(body, sizeof(body),
                     "--XyZ\r\nContent-Disposition: form-data; name=\"%s\"; filename=\"%s\"\r\n"
                     "Content-Type: application/octet-stream\r\n\r\n%s\r\n--XyZ--\r\n",
                     name, filename, bytes);
    cr_assert_eq(http_do(h.port, "POST", path, "Content-Type: multipart/form-data; boundary=XyZ\r\n", body, (size_t)n,
                         r),
                 0);
}

Test(agentrun, rest_routes_answer_agentruns_shapes)
{
    http_resp r;
    cr_assert_eq(http_do(h.port, "GET", "/agentrun/", NULL, NULL, 0, &r), 0);
    cr_assert_eq(r.status, 200, "%s", r.body);
    cr_assert(json_is_object(json_object_get(r.json, "endpoints")), "%s", r.body);
    http_resp_dispose(&r);
    cr_assert_eq(http_do(h.port, "GET", "/agentrun/packages", NULL, NULL, 0, &r), 0);
    cr_assert_eq(r.status, 200, "%s", r.body);
    cr_assert_str_eq(json_string_value(json_array_get(json_object_get(r.json, "packages"), 0)), "numpy");
    cr_assert_eq(json_integer_value(json_object_get(r.json, "count")), 1);
    http_resp_dispose(&r);

    char *sid = ar_session();
    char path[160];
    cr_assert_eq(http_do(h.port, "GET", "/agentrun/health", NULL, NULL, 0, &r), 0);
    cr_assert_str_eq(json_string_value(json_object_get(r.json, "status")), "healthy", "%s", r.body);
    cr_assert_eq(json_integer_value(json_object_get(r.json, "active_sessions")), 1, "%s", r.body);
    http_resp_dispose(&r);
    cr_assert_eq(http_do(h.port, "GET", "/agentrun/sessions", NULL, NULL, 0, &r), 0);
    cr_assert_str_eq(json_string_value(json_array_get(json_object_get(r.json, "active_sessions"), 0)), sid);
    cr_assert_eq(json_integer_value(json_object_get(r.json, "count")), 1, "%s", r.body);
    http_resp_dispose(&r);

    /* execute: output as a terminal shows it, success when it completed */
    snprintf(path, sizeof(path), "/agentrun/sessions/%s/execute", sid);
    cr_assert_eq(http_json(h.port, "POST", path,
                           "{\"python_code\":\"print('hello')\",\"ignore_dependencies\":null,"
                           "\"ignore_unsafe_functions\":[\"open\"]}",
                           &r),
                 0);
    cr_assert_eq(r.status, 200, "%s", r.body);
    cr_assert(json_is_true(json_object_get(r.json, "success")), "%s", r.body);
    cr_assert_str_eq(json_string_value(json_object_get(r.json, "output")), "hello\nwarn\n42\n");
    http_resp_dispose(&r);
    cr_assert_eq(http_json(h.port, "POST", path, "{\"python_code\":\"RAISE\"}", &r), 0);
    cr_assert_eq(r.status, 200, "%s", r.body);
    cr_assert(json_is_false(json_object_get(r.json, "success")), "%s", r.body);
    cr_assert_str_eq(json_string_value(json_object_get(r.json, "output")), "hello\nwarn\nValueError: bad\n");
    http_resp_dispose(&r);
    cr_assert_eq(http_json(h.port, "POST", path, "{\"code\":\"1\"}", &r), 0);
    expect_detail(&r, 400, "invalid_request", "code");
    http_resp_dispose(&r);
    cr_assert_eq(http_json(h.port, "POST", path, "{\"python_code\":\"1\",\"ignore_unsafe_functions\":[1]}", &r), 0);
    expect_detail(&r, 400, "invalid_request", "ignore_unsafe_functions[0]");
    http_resp_dispose(&r);

    /* copy-to puts the file into src/; copy-from reads it back under the asked name */
    snprintf(path, sizeof(path), "/agentrun/sessions/%s/copy-to", sid);
    post_part(path, "file", "data.csv", "x,y\n1,2\n", &r);
    cr_assert_eq(r.status, 200, "%s", r.body);
    cr_assert_str_eq(json_string_value(json_object_get(r.json, "destination_path")), "/workspace/src/data.csv");
    cr_assert_str_eq(json_string_value(json_object_get(r.json, "message")), "File 'data.csv' copied successfully");
    http_resp_dispose(&r);
    size_t len = 0;
    const char *stored = fake_files_get(sid, "src/data.csv", &len);
    cr_assert(stored != NULL && len == 8 && memcmp(stored, "x,y\n1,2\n", 8) == 0);
    snprintf(path, sizeof(path), "/agentrun/sessions/%s/copy-from", sid);
    cr_assert_eq(http_json(h.port, "POST", path, "{\"src_path\":\"src/data.csv\",\"filename\":\"back.csv\"}", &r), 0);
    cr_assert_eq(r.status, 200, "%s", r.body);
    cr_assert_eq(r.body_len, 8);
    cr_assert(strncmp(http_header(&r, "content-type"), "application/octet-stream", 24) == 0);
    cr_assert(strstr(http_header(&r, "content-disposition"), "filename=\"back.csv\"") != NULL);
    http_resp_dispose(&r);

    snprintf(path, sizeof(path), "/agentrun/sessions/%s", sid);
    cr_assert_eq(http_do(h.port, "GET", path, NULL, NULL, 0, &r), 0);
    cr_assert_eq(r.status, 200, "%s", r.body);
    cr_assert_str_eq(json_string_value(json_object_get(r.json, "source_path")), "/workspace/src");
    http_resp_dispose(&r);
    cr_assert_eq(http_do(h.port, "DELETE", path, NULL, NULL, 0, &r), 0);
    cr_assert_eq(r.status, 200, "%s", r.body);
    char msg[128];
    snprintf(msg, sizeof(msg), "Session %s closed successfully", sid);
    cr_assert_str_eq(json_string_value(json_object_get(r.json, "message")), msg);
    http_resp_dispose(&r);
    /* a closed session is gone for AgentRun, as in its server */
    cr_assert_eq(http_do(h.port, "GET", path, NULL, NULL, 0, &r), 0);
    expect_detail(&r, 404, "not_found", sid);
    http_resp_dispose(&r);
    cr_assert_eq(http_do(h.port, "DELETE", path, NULL, NULL, 0, &r), 0);
    expect_detail(&r, 404, "not_found", NULL);
    http_resp_dispose(&r);
    free(sid);
}

Test(agentrun, rest_refuses_bad_names_paths_and_bodies)
{
    char *sid = ar_session();
    char path[160];
    http_resp r;
    snprintf(path, sizeof(path), "/agentrun/sessions/%s/copy-to", sid);
    static const char *const traversal[] = {"../x", "a/b", "a\\\\b", ".."};
    for (size_t i = 0; i < sizeof(traversal) / sizeof(traversal[0]); i++) {
        post_part(path, "file", traversal[i], "x", &r);
        expect_detail(&r, 403, "forbidden", "not allowed");
        http_resp_dispose(&r);
    }
    post_part(path, "file", ".hidden", "x", &r);
    expect_detail(&r, 400, "invalid_request", "dot");
    http_resp_dispose(&r);
    post_part(path, "other", "a.txt", "x", &r); /* no part named file */
    expect_detail(&r, 400, "invalid_request", "'file'");
    http_resp_dispose(&r);
    cr_assert_eq(http_do(h.port, "POST", path, "Content-Type: application/json\r\n", "{}", 2, &r), 0);
    expect_detail(&r, 415, "unsupported_media_type", "multipart/form-data");
    http_resp_dispose(&r);
    const char *broken = "--XyZ\r\nbroken";
    cr_assert_eq(http_do(h.port, "POST", path, "Content-Type: multipart/form-data; boundary=XyZ\r\n", broken,
                         strlen(broken), &r),
                 0);
    expect_detail(&r, 400, "invalid_request", NULL);
    http_resp_dispose(&r);
    cr_assert_eq(fake_files_count(), 0);

    snprintf(path, sizeof(path), "/agentrun/sessions/%s/copy-from", sid);
    cr_assert_eq(
        http_json(h.port, "POST", path, "{\"src_path\":\"artifacts/../../etc/passwd\",\"filename\":\"p\"}", &r), 0);
    expect_detail(&r, 403, "forbidden", "traversal");
    http_resp_dispose(&r);
    cr_assert_eq(http_json(h.port, "POST", path, "{\"src_path\":\"/etc/passwd\",\"filename\":\"p\"}", &r), 0);
    expect_detail(&r, 403, "forbidden", NULL);
    http_resp_dispose(&r);
    cr_assert_eq(http_json(h.port, "POST", path, "{\"src_path\":\"artifacts/none.csv\",\"filename\":\"p\"}", &r), 0);
    expect_detail(&r, 404, "not_found", NULL);
    http_resp_dispose(&r);
    cr_assert_eq(http_json(h.port, "POST", path, "{\"src_path\":7}", &r), 0);
    expect_detail(&r, 400, "invalid_request", "src_path");
    http_resp_dispose(&r);

    cr_assert_eq(http_json(h.port, "POST", "/agentrun/sessions/s_gone/execute", "{\"python_code\":\"1\"}", &r), 0);
    expect_detail(&r, 404, "not_found", "s_gone");
    http_resp_dispose(&r);
    cr_assert_eq(http_json(h.port, "POST", "/agentrun/sessions/s_gone/execute", "{\"python_code\":", &r), 0);
    expect_detail(&r, 400, "invalid_request", "line 1");
    http_resp_dispose(&r);
    snprintf(path, sizeof(path), "/agentrun/sessions/%s/execute", sid);
    cr_assert_eq(http_json(h.port, "POST", path, "{\"python_code\":\"1\",\"ignore_dependencies\":\"numpy\"}", &r), 0);
    expect_detail(&r, 400, "invalid_request", "ignore_dependencies");
    http_resp_dispose(&r);
    size_t big = 2u << 20;
    char *body = xmalloc(big + 32);
    int n = snprintf(body, 32, "{\"python_code\":\"");
    memset(body + n, 'x', big);
    memcpy(body + n + big, "\"}", 3);
    cr_assert_eq(http_json(h.port, "POST", path, body, &r), 0);
    expect_detail(&r, 413, "payload_too_large", NULL);
    http_resp_dispose(&r);
    free(body);
    free(sid);
}

/* ---- MCP at /agentrun/mcp --------------------------------------------------------------- */

#define ACCEPT "Accept: application/json, text/event-stream\r\n"

/* POSTs body to /agentrun/mcp; the answer must be one SSE event, whose message is returned (new
 * reference). sid may be NULL (initialize). */
static json_t *ar_mcp(const char *sid, const char *body, http_resp *keep)
{
    char headers[256];
    snprintf(headers, sizeof(headers), "Content-Type: application/json\r\n" ACCEPT "%s%s%s",
             sid ? "Mcp-Session-Id: " : "", sid ? sid : "", sid ? "\r\n" : "");
    http_resp r;
    cr_assert_eq(http_do(h.port, "POST", "/agentrun/mcp", headers, body, strlen(body), &r), 0);
    cr_assert_eq(r.status, 200, "%s", r.body);
    cr_assert(strncmp(http_header(&r, "content-type"), "text/event-stream", 17) == 0, "%s", r.head);
    cr_assert(strncmp(r.body, "event: message\ndata: ", 21) == 0, "%s", r.body);
    json_t *msg = json_loads(r.body + 21, JSON_DISABLE_EOF_CHECK, NULL);
    cr_assert_not_null(msg, "%s", r.body);
    if (keep != NULL)
        *keep = r;
    else
        http_resp_dispose(&r);
    return msg;
}

/* tools/call name(args); returns the result (new reference). */
static json_t *ar_call(const char *sid, const char *name, const char *args)
{
    char body[1024];
    snprintf(body, sizeof(body),
             "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"%s\",\"arguments\":%s}}",
             name, args);
    json_t *msg = ar_mcp(sid, body, NULL);
    json_t *res = json_incref(json_object_get(msg, "result"));
    cr_assert(json_is_object(res), "%s", json_dumps(msg, 0));
    json_decref(msg);
    return res;
}

/* What AgentRunMCPClient reads: the first text block, parsed as JSON (new reference). */
static json_t *first_text_json(json_t *res)
{
    json_t *c = json_array_get(json_object_get(res, "content"), 0);
    cr_assert_str_eq(json_string_value(json_object_get(c, "type")), "text");
    json_t *obj = json_loads(json_string_value(json_object_get(c, "text")), 0, NULL);
    cr_assert(json_is_object(obj), "%s", json_string_value(json_object_get(c, "text")));
    cr_assert(json_equal(obj, json_object_get(res, "structuredContent")));
    return obj;
}

Test(agentrun, mcp_serves_agentruns_tools)
{
    http_resp r;
    json_t *init = ar_mcp(NULL,
                          "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"protocolVersion\":"
                          "\"2024-11-05\",\"capabilities\":{},\"clientInfo\":{\"name\":\"agentrun-mcp-client\","
                          "\"version\":\"0.4.0\"}}}",
                          &r);
    char *sid = xstrdup(http_header(&r, "mcp-session-id"));
    http_resp_dispose(&r);
    cr_assert(strstr(json_string_value(json_object_get(json_object_get(init, "result"), "instructions")), "src/") !=
              NULL);
    json_decref(init);

    json_t *list = ar_mcp(sid, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/list\"}", NULL);
    json_t *tools = json_object_get(json_object_get(list, "result"), "tools");
    cr_assert_eq(json_array_size(tools), 9, "%s", json_dumps(list, 0));
    json_decref(list);

    json_t *res = ar_call(sid, "create_session", "{}");
    json_t *obj = first_text_json(res);
    cr_assert_str_eq(json_string_value(json_object_get(obj, "artifact_path")), "/workspace/artifacts");
    char *session = xstrdup(json_string_value(json_object_get(obj, "session_id")));
    json_decref(obj);
    json_decref(res);

    char args[512];
    snprintf(args, sizeof(args), "{\"session_id\":\"%s\",\"code\":\"x\",\"ignore_dependencies\":null,"
                                 "\"ignore_unsafe_functions\":null}",
             session);
    res = ar_call(sid, "execute_code", args);
    obj = first_text_json(res);
    cr_assert(json_is_true(json_object_get(obj, "success")));
    cr_assert_str_eq(json_string_value(json_object_get(obj, "output")), "hello\nwarn\n42\n");
    json_t *image = json_array_get(json_object_get(res, "content"), 1); /* the plot, for hosts and models */
    cr_assert_str_eq(json_string_value(json_object_get(image, "type")), "image");
    cr_assert(json_is_false(json_object_get(res, "isError")));
    json_decref(obj);
    json_decref(res);

    snprintf(args, sizeof(args), "{\"session_id\":\"%s\",\"filename\":\"d.bin\",\"content_base64\":\"AAEC\"}",
             session);
    res = ar_call(sid, "upload_file", args);
    obj = first_text_json(res);
    cr_assert_str_eq(json_string_value(json_object_get(obj, "destination")), "/workspace/src/d.bin");
    json_decref(obj);
    json_decref(res);
    snprintf(args, sizeof(args), "{\"session_id\":\"%s\",\"src_path\":\"src/d.bin\"}", session);
    res = ar_call(sid, "download_file", args);
    obj = first_text_json(res);
    cr_assert_str_eq(json_string_value(json_object_get(obj, "content_base64")), "AAEC");
    cr_assert_eq(json_integer_value(json_object_get(obj, "size_bytes")), 3);
    json_decref(obj);
    json_decref(res);

    /* failures are results the client reads: {"success": false, "error": ...} */
    static const char *const bad[][2] = {
        {"upload_file", "{\"session_id\":\"SID\",\"filename\":\"../x\",\"content_base64\":\"AAEC\"}"},
        {"upload_file", "{\"session_id\":\"SID\",\"filename\":\"x\",\"content_base64\":\"!!\"}"},
        {"download_file", "{\"session_id\":\"SID\",\"src_path\":\"../etc/passwd\"}"},
        {"execute_code", "{\"session_id\":\"SID\"}"},
        {"execute_code", "{\"session_id\":\"SID\",\"code\":\"1\",\"ignore_unsafe_functions\":\"open\"}"},
        {"execute_code", "{\"session_id\":\"s_gone\",\"code\":\"1\"}"},
        {"get_session_info", "{\"nothing\":\"SID\"}"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        const char *at = strstr(bad[i][1], "SID");
        if (at != NULL)
            snprintf(args, sizeof(args), "%.*s%s%s", (int)(at - bad[i][1]), bad[i][1], session, at + 3);
        else
            snprintf(args, sizeof(args), "%s", bad[i][1]);
        res = ar_call(sid, bad[i][0], args);
        cr_assert(json_is_true(json_object_get(res, "isError")), "%s %s", bad[i][0], args);
        obj = first_text_json(res);
        cr_assert(json_is_false(json_object_get(obj, "success")), "%s", args);
        cr_assert(json_string_length(json_object_get(obj, "error")) > 0, "%s", args);
        if (strcmp(bad[i][0], "execute_code") == 0)
            cr_assert(json_is_string(json_object_get(obj, "output")), "%s", args);
        json_decref(obj);
        json_decref(res);
    }

    res = ar_call(sid, "get_packages", "{}");
    obj = first_text_json(res);
    cr_assert_eq(json_integer_value(json_object_get(obj, "count")), 1);
    json_decref(obj);
    json_decref(res);
    snprintf(args, sizeof(args), "{\"session_id\":\"%s\"}", session);
    res = ar_call(sid, "close_session", args);
    obj = first_text_json(res);
    cr_assert(json_is_true(json_object_get(obj, "success")));
    json_decref(obj);
    json_decref(res);
    res = ar_call(sid, "list_sessions", "{}");
    obj = first_text_json(res);
    cr_assert_eq(json_integer_value(json_object_get(obj, "count")), 0);
    json_decref(obj);
    json_decref(res);
    res = ar_call(sid, "get_health", "{}");
    obj = first_text_json(res);
    cr_assert_str_eq(json_string_value(json_object_get(obj, "status")), "healthy");
    json_decref(obj);
    json_decref(res);

    /* runbox's own tools are not served here */
    json_t *msg = ar_mcp(sid, "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/call\",\"params\":{\"name\":"
                              "\"list_files\",\"arguments\":{}}}",
                         NULL);
    cr_assert_eq(json_integer_value(json_object_get(json_object_get(msg, "error"), "code")), -32602);
    json_decref(msg);
    free(session);
    free(sid);
}

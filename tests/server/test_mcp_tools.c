/*
 * test_mcp_tools.c: the /mcp endpoint's resources and its file, package and web-page tools over
 * real HTTP on loopback against the fake core (support_mcp.h; the transport is test_mcp.c's).
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

TestSuite(mcp_tools, .init = mcp_setup, .fini = mcp_teardown, .timeout = 60);

Test(mcp_tools, resources_list_and_read)
{
    char *sid = initialize("2025-06-18");
    http_resp r;
    mcp_post(sid, NULL, NULL, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"resources/templates/list\"}", &r);
    cr_assert_eq(json_array_size(json_object_get(json_object_get(r.json, "result"), "resourceTemplates")), 5, "%s",
                 r.body);
    http_resp_dispose(&r);
    cr_assert_eq(http_json(mcp_h.port, "POST", "/sessions", "{}", &r), 0);
    char *rest = xstrdup(json_string_value(json_object_get(r.json, "session_id")));
    http_resp_dispose(&r);
    const char *prefixes[] = {"runbox://sessions/", "session://", NULL, NULL};
    const char *lists[] = {NULL, NULL, "runbox://sessions", "sessions://"};
    for (size_t i = 0; i < 4; i++) {
        char uri[128], body[256];
        if (prefixes[i] != NULL)
            snprintf(uri, sizeof(uri), "%s%s", prefixes[i], rest);
        else
            snprintf(uri, sizeof(uri), "%s", lists[i]);
        snprintf(body, sizeof(body),
                 "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"resources/read\",\"params\":{\"uri\":\"%s\"}}", uri);
        mcp_post(sid, NULL, NULL, body, &r);
        json_t *c = json_array_get(json_object_get(json_object_get(r.json, "result"), "contents"), 0);
        cr_assert_str_eq(json_string_value(json_object_get(c, "mimeType")), "application/json", "%s", r.body);
        cr_assert(strstr(json_string_value(json_object_get(c, "text")), rest) != NULL, "%s", r.body);
        http_resp_dispose(&r);
    }
    post_expect_error(sid, NULL, NULL,
                      "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"resources/read\",\"params\":{\"uri\":\"runbox://nope\"}}",
                      200, -32002);
    free(rest);
    free(sid);
}

/* tools/call of name with arguments args (a JSON object text); returns the result (new
 * reference), failing the test unless the answer is a JSON tools/call result. */
static json_t *call_tool(const char *sid, const char *name, const char *args)
{
    size_t n = strlen(name) + strlen(args) + 128;
    char *body = xmalloc(n);
    snprintf(body, n, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"%s\","
                      "\"arguments\":%s}}",
             name, args);
    http_resp r;
    mcp_post(sid, NULL, NULL, body, &r);
    free(body);
    cr_assert_eq(r.status, 200, "%s", r.body);
    json_t *res = json_incref(json_object_get(r.json, "result"));
    cr_assert(json_is_object(res), "%s", r.body);
    http_resp_dispose(&r);
    return res;
}

/* The text of the first content block of a tool result. */
static const char *first_text(json_t *res)
{
    return json_string_value(json_object_get(json_array_get(json_object_get(res, "content"), 0), "text"));
}

static const char *sc_string(json_t *res, const char *key)
{
    return json_string_value(json_object_get(json_object_get(res, "structuredContent"), key));
}

Test(mcp_tools, upload_and_download_files)
{
    char *sid = initialize("2025-06-18");
    /* Binary bytes in base64 (with a NUL and 0xff), into a folder. */
    json_t *res = call_tool(sid, "upload_file",
                            "{\"session_id\":\"s_files\",\"filename\":\"bin/x.dat\",\"content_base64\":\"AAH/YQ==\"}");
    cr_assert(json_is_false(json_object_get(res, "isError")), "%s", first_text(res));
    cr_assert_str_eq(sc_string(res, "path"), "bin/x.dat");
    cr_assert_str_eq(sc_string(res, "uri"), "runbox://sessions/s_files/files/bin/x.dat");
    size_t len = 0;
    const char *stored = fake_files_get("s_files", "bin/x.dat", &len);
    cr_assert(stored != NULL && len == 4 && memcmp(stored, "\x00\x01\xff" "a", 4) == 0);
    json_decref(res);

    /* Text as content, and as unpadded URL-safe base64 with line breaks. */
    res = call_tool(sid, "upload_file", "{\"session_id\":\"s_files\",\"filename\":\"data.csv\",\"content\":\"a,b\\n1,2\\n\"}");
    cr_assert(json_is_false(json_object_get(res, "isError")), "%s", first_text(res));
    json_decref(res);
    res = call_tool(sid, "upload_file", "{\"session_id\":\"s_files\",\"filename\":\"u.bin\",\"content_base64\":\"-_8\\n\"}");
    cr_assert(json_is_false(json_object_get(res, "isError")), "%s", first_text(res));
    stored = fake_files_get("s_files", "u.bin", &len);
    cr_assert(stored != NULL && len == 2 && memcmp(stored, "\xfb\xff", 2) == 0);
    json_decref(res);

    /* A small UTF-8 file comes back as text. */
    res = call_tool(sid, "download_file", "{\"session_id\":\"s_files\",\"src_path\":\"data.csv\"}");
    cr_assert(json_is_false(json_object_get(res, "isError")), "%s", first_text(res));
    cr_assert_str_eq(first_text(res), "a,b\n1,2\n");
    cr_assert_str_eq(sc_string(res, "encoding"), "utf-8");
    cr_assert_str_eq(sc_string(res, "mime_type"), "text/csv; charset=utf-8");
    json_decref(res);

    /* Binary bytes come back as an embedded resource with a base64 blob. */
    res = call_tool(sid, "download_file", "{\"session_id\":\"s_files\",\"src_path\":\"bin/x.dat\"}");
    cr_assert(json_is_false(json_object_get(res, "isError")), "%s", first_text(res));
    json_t *block = json_array_get(json_object_get(res, "content"), 0);
    cr_assert_str_eq(json_string_value(json_object_get(block, "type")), "resource");
    json_t *rsc = json_object_get(block, "resource");
    cr_assert_str_eq(json_string_value(json_object_get(rsc, "blob")), "AAH/YQ==");
    cr_assert_str_eq(json_string_value(json_object_get(rsc, "mimeType")), "application/octet-stream");
    cr_assert_str_eq(json_string_value(json_object_get(rsc, "uri")), "runbox://sessions/s_files/files/bin/x.dat");
    cr_assert_str_eq(sc_string(res, "encoding"), "base64");
    cr_assert_str_eq(sc_string(res, "path"), "bin/x.dat");
    json_decref(res);

    /* list_files gives every file with its resource URI. */
    res = call_tool(sid, "list_files", "{\"session_id\":\"s_files\"}");
    json_t *files = json_object_get(json_object_get(res, "structuredContent"), "files");
    cr_assert_eq(json_array_size(files), 3, "%s", first_text(res));
    int seen = 0;
    size_t i;
    json_t *f;
    json_array_foreach(files, i, f)
    {
        if (strcmp(json_string_value(json_object_get(f, "path")), "data.csv") == 0) {
            seen = 1;
            cr_assert_str_eq(json_string_value(json_object_get(f, "uri")), "runbox://sessions/s_files/files/data.csv");
        }
    }
    cr_assert(seen);
    json_decref(res);
    free(sid);
}

Test(mcp_tools, file_tool_errors_are_tool_results)
{
    char *sid = initialize("2025-06-18");
    static const char *const cases[][3] = {
        {"upload_file", "{\"session_id\":\"s_files\",\"filename\":\"x\",\"content_base64\":\"AA!A\"}", "not valid base64"},
        {"upload_file", "{\"session_id\":\"s_files\",\"filename\":\"x\",\"content_base64\":\"AAAAA\"}", "not valid base64"},
        {"upload_file", "{\"session_id\":\"s_files\",\"filename\":\"x\",\"content_base64\":\"AA=A\"}", "not valid base64"},
        {"upload_file", "{\"session_id\":\"s_files\",\"filename\":\"x\"}", "content_base64"},
        {"upload_file", "{\"session_id\":\"s_files\",\"filename\":\"x\",\"content\":\"a\",\"content_base64\":\"YQ==\"}",
         "exactly one"},
        {"upload_file", "{\"session_id\":\"s_files\",\"content\":\"a\"}", "'filename' is required"},
        {"upload_file", "{\"session_id\":\"s_files\",\"filename\":\"../../etc/passwd\",\"content\":\"a\"}",
         "outside /workspace"},
        {"upload_file", "{\"session_id\":\"s_gone\",\"filename\":\"a\",\"content\":\"a\"}", "no live session"},
        {"upload_file", "{\"session_id\":7,\"filename\":\"a\",\"content\":\"a\"}", "'session_id' must be a string"},
        {"download_file", "{\"session_id\":\"s_files\",\"src_path\":\"/etc/passwd\"}", "outside /workspace"},
        {"download_file", "{\"session_id\":\"s_files\",\"src_path\":\"missing.txt\"}", "no file"},
        {"download_file", "{\"session_id\":\"s_files\"}", "'src_path' is required"},
        {"list_files", "{\"session_id\":\"s_gone\"}", "no live session"},
        {"install_dependencies", "{\"session_id\":\"s_files\"}", "'dependencies' is required"},
        {"install_dependencies", "{\"session_id\":\"s_files\",\"dependencies\":[]}", "'dependencies' is required"},
    };
    for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
        json_t *res = call_tool(sid, cases[k][0], cases[k][1]);
        cr_assert(json_is_true(json_object_get(res, "isError")), "case %zu: %s", k, first_text(res));
        cr_assert(strstr(first_text(res), cases[k][2]) != NULL, "case %zu: %s", k, first_text(res));
        json_decref(res);
    }
    cr_assert_eq(fake_files_count(), 0);
    free(sid);
}

Test(mcp_tools, file_tools_default_to_the_connections_sandbox)
{
    char *sid = initialize("2025-06-18");
    json_t *res = call_tool(sid, "execute_code", "{\"code\":\"print(1)\"}");
    char bound[64];
    snprintf(bound, sizeof(bound), "%s", sc_string(res, "session_id"));
    json_decref(res);
    res = call_tool(sid, "upload_file", "{\"filename\":\"notes.txt\",\"content\":\"hi\"}");
    cr_assert(json_is_false(json_object_get(res, "isError")), "%s", first_text(res));
    cr_assert_str_eq(sc_string(res, "session_id"), bound);
    json_decref(res);
    res = call_tool(sid, "list_files", "{}");
    cr_assert_str_eq(sc_string(res, "session_id"), bound);
    cr_assert_eq(json_array_size(json_object_get(json_object_get(res, "structuredContent"), "files")), 1);
    json_decref(res);
    /* Also before any execute_code: a sandbox is made for the connection. */
    char *other = initialize("2025-06-18");
    res = call_tool(other, "list_files", "{}");
    cr_assert(json_is_false(json_object_get(res, "isError")), "%s", first_text(res));
    cr_assert(strncmp(sc_string(res, "session_id"), "s_", 2) == 0);
    cr_assert_str_neq(sc_string(res, "session_id"), bound);
    json_decref(res);
    free(other);
    free(sid);
}

Test(mcp_tools, packages_and_dependencies)
{
    char *sid = initialize("2025-06-18");
    json_t *res = call_tool(sid, "get_packages", "{}");
    cr_assert(json_is_false(json_object_get(res, "isError")), "%s", first_text(res));
    json_t *pk = json_array_get(json_object_get(json_object_get(res, "structuredContent"), "packages"), 0);
    cr_assert_str_eq(json_string_value(json_object_get(pk, "name")), "numpy");
    cr_assert(strstr(first_text(res), "numpy") != NULL);
    json_decref(res);
    res = call_tool(sid, "install_dependencies", "{\"session_id\":\"s_deps\",\"dependencies\":[\"tabulate==0.9.0\"]}");
    cr_assert(json_is_false(json_object_get(res, "isError")), "%s", first_text(res));
    cr_assert_str_eq(json_string_value(json_array_get(
                         json_object_get(json_object_get(res, "structuredContent"), "dependencies"), 0)),
                     "tabulate==0.9.0");
    json_decref(res);
    free(sid);
}

Test(mcp_tools, get_page_text_gives_text_an_image_and_clear_errors)
{
    char *sid = initialize("2025-06-18");
    json_t *res = call_tool(sid, "get_page_text", "{\"url\":\"https://example.test/a\",\"screenshot\":true}");
    cr_assert(json_is_false(json_object_get(res, "isError")), "%s", first_text(res));
    cr_assert(strstr(first_text(res), "Fake page\nhttps://example.test/a\n\nText of https://example.test/a") != NULL,
              "%s", first_text(res));
    json_t *img = json_array_get(json_object_get(res, "content"), 1);
    cr_assert_str_eq(json_string_value(json_object_get(img, "type")), "image");
    cr_assert_str_eq(json_string_value(json_object_get(img, "mimeType")), "image/png");
    cr_assert_str_eq(sc_string(res, "title"), "Fake page");
    cr_assert_null(json_object_get(json_object_get(res, "structuredContent"), "screenshot"),
                   "the screenshot travels once, as the image block");
    json_decref(res);
    res = call_tool(sid, "get_page_text", "{\"url\":\"http://refused.test/\"}");
    cr_assert(json_is_true(json_object_get(res, "isError")));
    cr_assert(strstr(first_text(res), "refused") != NULL && strstr(first_text(res), "127.0.0.1") != NULL, "%s",
              first_text(res));
    json_decref(res);
    res = call_tool(sid, "get_page_text", "{}");
    cr_assert(json_is_true(json_object_get(res, "isError")));
    cr_assert(strstr(first_text(res), "url") != NULL, "%s", first_text(res));
    json_decref(res);
    free(sid);
}

/* resources/read of uri: the response (new reference). */
static json_t *read_uri(const char *sid, const char *uri)
{
    char body[512];
    snprintf(body, sizeof(body), "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"resources/read\",\"params\":{\"uri\":\"%s\"}}",
             uri);
    http_resp r;
    mcp_post(sid, NULL, NULL, body, &r);
    cr_assert_eq(r.status, 200, "%s", r.body);
    json_t *doc = json_incref(r.json);
    cr_assert_not_null(doc, "%s", r.body);
    http_resp_dispose(&r);
    return doc;
}

Test(mcp_tools, files_as_resources)
{
    char *sid = initialize("2025-11-25");
    json_t *res = call_tool(sid, "upload_file", "{\"session_id\":\"s_res\",\"filename\":\"d/t.txt\",\"content\":\"h\\u00e9\"}");
    json_decref(res);
    res = call_tool(sid, "upload_file", "{\"session_id\":\"s_res\",\"filename\":\"b.bin\",\"content_base64\":\"/wA=\"}");
    json_decref(res);
    /* '/' escaped (RFC 6570 simple expansion) or not. */
    const char *uris[] = {"runbox://sessions/s_res/files/d/t.txt", "runbox://sessions/s_res/files/d%2Ft.txt"};
    for (size_t k = 0; k < 2; k++) {
        json_t *doc = read_uri(sid, uris[k]);
        json_t *c = json_array_get(json_object_get(json_object_get(doc, "result"), "contents"), 0);
        cr_assert_str_eq(json_string_value(json_object_get(c, "text")), "h\xc3\xa9", "%s", uris[k]);
        cr_assert_str_eq(json_string_value(json_object_get(c, "uri")), uris[k]);
        json_decref(doc);
    }
    json_t *doc = read_uri(sid, "runbox://sessions/s_res/files/b.bin");
    json_t *c = json_array_get(json_object_get(json_object_get(doc, "result"), "contents"), 0);
    cr_assert_str_eq(json_string_value(json_object_get(c, "blob")), "/wA=");
    cr_assert_null(json_object_get(c, "text"));
    json_decref(doc);
    doc = read_uri(sid, "runbox://sessions/s_res/files");
    c = json_array_get(json_object_get(json_object_get(doc, "result"), "contents"), 0);
    cr_assert_str_eq(json_string_value(json_object_get(c, "mimeType")), "application/json");
    cr_assert(strstr(json_string_value(json_object_get(c, "text")), "runbox://sessions/s_res/files/d/t.txt") != NULL);
    json_decref(doc);
    /* Errors: missing file or session -> -32002; a refused path or a bad escape -> -32602. */
    static const struct {
        const char *uri;
        int code;
    } bad[] = {{"runbox://sessions/s_res/files/nope", -32002},
               {"runbox://sessions/s_gone/files/t.txt", -32002},
               {"runbox://sessions/s_res/files/../../etc/passwd", -32602},
               {"runbox://sessions/s_res/files/a%00b", -32602},
               {"runbox://sessions/s_res/files/a%zz", -32602}};
    for (size_t k = 0; k < sizeof(bad) / sizeof(bad[0]); k++) {
        doc = read_uri(sid, bad[k].uri);
        json_t *e = json_object_get(doc, "error");
        cr_assert_eq(json_integer_value(json_object_get(e, "code")), bad[k].code, "%s", bad[k].uri);
        cr_assert_str_eq(json_string_value(json_object_get(json_object_get(e, "data"), "uri")), bad[k].uri);
        json_decref(doc);
    }
    free(sid);
}

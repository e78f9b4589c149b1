/*
 * mcp_web.c: the MCP tool get_page_text, offered only when runboxd runs with --web-tool
 * (core_page_text_enabled). It translates: the tool's arguments go to core_page_text as they
 * are, and its answer becomes a text block (title, final URL, then the page's text), an image
 * block when a screenshot was asked for, and the answer itself as structured content (without
 * the screenshot's base64, which the image block carries). The page is read by core/web/web.c.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/mcp/mcp_internal.h"

const char mcp__page_text_def[] =
    "{\"name\":\"get_page_text\",\"title\":\"Read a web page\","
    "\"description\":\"Open a web page (http or https) in a headless browser and return its visible text, title "
    "and final URL after redirects, as a person would read it: scripts run, so pages rendered by JavaScript work. "
    "It waits for the page to settle within a time limit; a page that keeps loading is returned as it was by then "
    "(settled: false). Only public addresses are read: private, loopback and internal addresses are refused (the "
    "error says which address and why). The text is capped (truncated: true). Set screenshot to also get a PNG "
    "image of the page. The code sandbox is not involved: it still has no network.\","
    "\"inputSchema\":{\"type\":\"object\",\"properties\":{"
    "\"url\":{\"type\":\"string\",\"description\":\"The page's address, e.g. https://example.com/docs\"},"
    "\"timeout\":{\"type\":\"number\",\"minimum\":1,\"description\":\"Seconds to wait for the page at most "
    "(default and maximum: the server's limit)\"},"
    "\"max_chars\":{\"type\":\"integer\",\"minimum\":1,\"description\":\"Characters of text to return at most "
    "(default and maximum: the server's limit)\"},"
    "\"screenshot\":{\"type\":\"boolean\",\"default\":false,\"description\":\"Also return a PNG screenshot of "
    "the visible part of the page\"}},\"required\":[\"url\"]},"
    "\"outputSchema\":{\"type\":\"object\",\"properties\":{\"url\":{\"type\":\"string\"},\"final_url\":{\"type\":"
    "[\"string\",\"null\"]},\"title\":{\"type\":\"string\"},\"status\":{\"type\":[\"integer\",\"null\"]},"
    "\"text\":{\"type\":\"string\"},\"truncated\":{\"type\":\"boolean\"},\"settled\":{\"type\":\"boolean\"},"
    "\"redirects\":{\"type\":\"integer\"},\"refused\":{\"type\":\"array\",\"items\":{\"type\":\"object\"},"
    "\"description\":\"resources of the page that were not fetched (their address or port is not allowed, or "
    "they did not answer)\"},\"byte_cap_reached\":{\"type\":\"boolean\"}},"
    "\"required\":[\"url\",\"text\"]},"
    "\"annotations\":{\"title\":\"Read a web page\",\"readOnlyHint\":true,\"destructiveHint\":false,"
    "\"idempotentHint\":true,\"openWorldHint\":true}}";

static void on_page(void *data, rb_err e, const char *msg, json_t *body)
{
    mcp_call *call = data;
    call->op = NULL;
    json_t *res;
    if (e != RB_OK) {
        res = mcp__tool_core_error(e, msg);
    } else {
        const char *title = json_string_value(json_object_get(body, "title"));
        const char *url = json_string_value(json_object_get(body, "final_url"));
        const char *text = json_string_value(json_object_get(body, "text"));
        char *head = xasprintf("%s\n%s%s\n\n", title && title[0] ? title : "(no title)", url ? url : "",
                               json_is_true(json_object_get(body, "truncated")) ? " (text truncated)" : "");
        size_t hn = strlen(head), tn = text ? json_string_length(json_object_get(body, "text")) : 0;
        char *all = xmalloc(hn + tn + 1);
        memcpy(all, head, hn);
        if (tn > 0)
            memcpy(all + hn, text, tn);
        all[hn + tn] = '\0';
        json_t *content = json_pack("[{s:s, s:s%}]", "type", "text", "text", all, hn + tn);
        free(all);
        free(head);
        json_t *shot = json_object_get(body, "screenshot");
        if (json_is_string(shot)) {
            json_array_append_new(content, json_pack("{s:s, s:O, s:s}", "type", "image", "data", shot, "mimeType",
                                                     "image/png"));
            json_object_del(body, "screenshot");
        }
        res = json_pack("{s:o, s:O, s:b}", "content", content, "structuredContent", body, "isError", 0);
    }
    json_decref(body);
    mcp__tool_finish(call, res);
}

json_t *mcp__tool_page_text(mcp_call *call)
{
    char err[RB_ERR_LEN];
    /* before the call: its answer may come at once, and the call is gone with it */
    mcp__call_log(call, 1, "opening the page in a browser");
    rb_err e = core_page_text(call->ms->core, call->args, on_page, call, &call->op, err);
    if (e != RB_OK) {
        call->op = NULL;
        return mcp__tool_core_error(e, err);
    }
    return NULL;
}

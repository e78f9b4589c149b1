/*
 * mcp_mounts.c: the MCP tool list_mounts, offered only when the operator declared shared folders
 * (core_shares_enabled). It says what a session sees of the host's folders mounted into it (each
 * mount's share, path, mode and the first entries of its folder), so a model can open
 * /workspace/photos/x.jpg with execute_code by name, without the file's bytes passing through
 * the conversation. It translates: core_session_mounts lists, this file writes the answer as a
 * text block and as structured content.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/mcp/mcp_internal.h"

const char mcp__mounts_def[] =
    "{\"name\":\"list_mounts\",\"title\":\"List mounted folders\","
    "\"description\":\"List the folders of the user's machine that are mounted into a sandbox (shared folders the "
    "server's operator set up), with the files and folders at the top of each: name, path, type and size. Open them "
    "by path with execute_code (e.g. open('/workspace/photos/cat.jpg', 'rb') or pandas.read_csv on a CSV there) "
    "instead of uploading their content; a read-only mount cannot be written to. Up to 200 entries per mount are "
    "listed (more: how many are not shown; list deeper folders with execute_code). Without session_id it lists "
    "this connection's own sandbox. Sessions get mounts at creation (create_session's execution_options.mounts: "
    "[{\\\"share\\\": NAME, \\\"path\\\": \\\"/workspace/NAME\\\"}], or {\\\"volume\\\": NAME} for a volume of the "
    "user's) or from the server's defaults.\","
    "\"inputSchema\":{\"type\":\"object\",\"properties\":{\"session_id\":{\"type\":\"string\",\"description\":"
    "\"Session to look at; omit for this connection's own sandbox\"}}},"
    "\"outputSchema\":{\"type\":\"object\",\"properties\":{\"session_id\":{\"type\":\"string\"},\"mounts\":{\"type\":"
    "\"array\",\"items\":{\"type\":\"object\",\"properties\":{\"share\":{\"type\":\"string\"},\"volume\":{\"type\":"
    "\"string\"},\"path\":{\"type\":"
    "\"string\"},\"readonly\":{\"type\":\"boolean\"},\"entries\":{\"type\":\"array\",\"items\":{\"type\":\"object\","
    "\"properties\":{\"name\":{\"type\":\"string\"},\"path\":{\"type\":\"string\"},\"type\":{\"type\":\"string\"},"
    "\"size\":{\"type\":\"integer\"}}}},\"total\":{\"type\":\"integer\"},\"more\":{\"type\":\"integer\"},"
    "\"error\":{\"type\":\"string\"}},\"required\":[\"path\",\"readonly\"]}}},"
    "\"required\":[\"session_id\",\"mounts\"]},"
    "\"annotations\":{\"title\":\"List mounted folders\",\"readOnlyHint\":true,\"destructiveHint\":false,"
    "\"idempotentHint\":true,\"openWorldHint\":false}}";

/* The answer as text: one paragraph per mount, one line per entry. */
static char *mounts_text(json_t *body)
{
    rb_buf b;
    rb_buf_init(&b, 1024u * 1024);
    json_t *mounts = json_object_get(body, "mounts");
    if (json_array_size(mounts) == 0) {
        const char *none = "no folders are mounted in this session (create a session with execution_options.mounts "
                           "to mount a shared folder)";
        rb_buf_append(&b, none, strlen(none));
    }
    size_t i, j;
    json_t *m, *e;
    json_array_foreach(mounts, i, m)
    {
        const char *path = json_string_value(json_object_get(m, "path"));
        const char *share = json_string_value(json_object_get(m, "share"));
        const char *volume = json_string_value(json_object_get(m, "volume"));
        const char *error = json_string_value(json_object_get(m, "error"));
        char *head = xasprintf("%s%s (%s %s, %s)", i > 0 ? "\n\n" : "", path ? path : "?",
                               volume != NULL ? "volume" : "shared folder", volume ? volume : share ? share : "?",
                               json_is_true(json_object_get(m, "readonly")) ? "read-only" : "read-write");
        rb_buf_append(&b, head, strlen(head));
        free(head);
        if (error != NULL) {
            char *t = xasprintf(": cannot be listed: %s", error);
            rb_buf_append(&b, t, strlen(t));
            free(t);
            continue;
        }
        char *t = xasprintf(": %lld entr%s", (long long)json_integer_value(json_object_get(m, "total")),
                            json_integer_value(json_object_get(m, "total")) == 1 ? "y" : "ies");
        rb_buf_append(&b, t, strlen(t));
        free(t);
        json_array_foreach(json_object_get(m, "entries"), j, e)
        {
            const char *type = json_string_value(json_object_get(e, "type"));
            const char *p = json_string_value(json_object_get(e, "path"));
            json_int_t size = json_integer_value(json_object_get(e, "size"));
            int folder = type != NULL && strcmp(type, "directory") == 0;
            t = type != NULL && strcmp(type, "file") == 0
                    ? xasprintf("\n  %s (%lld bytes)", p ? p : "?", (long long)size)
                    : xasprintf("\n  %s%s (%s)", p ? p : "?", folder ? "/" : "", type ? type : "?");
            rb_buf_append(&b, t, strlen(t));
            free(t);
        }
        json_int_t more = json_integer_value(json_object_get(m, "more"));
        if (more > 0) {
            t = xasprintf("\n  ... and %lld more (list them with execute_code)", (long long)more);
            rb_buf_append(&b, t, strlen(t));
            free(t);
        }
    }
    char *out = xstrndup(b.data ? b.data : "", b.len);
    rb_buf_dispose(&b);
    return out;
}

/* The tool result of a listing: one text block and the listing as structured content. */
static json_t *mounts_result(json_t *body)
{
    char *text = mounts_text(body);
    json_t *res = json_pack("{s:[{s:s, s:s}], s:O, s:b}", "content", "type", "text", "text", text,
                            "structuredContent", body, "isError", 0);
    free(text);
    return res;
}

static void on_mounts(void *data, rb_err e, const char *msg, json_t *body)
{
    mcp_call *call = data;
    call->op = NULL;
    mcp__tool_finish(call, e != RB_OK ? mcp__tool_core_error(e, msg) : mounts_result(body));
    json_decref(body);
}

void mcp__mounts_start(mcp_call *call, const char *session_id)
{
    char err[RB_ERR_LEN];
    rb_err e = core_session_mounts(call->ms->core, call->rt->who, session_id, on_mounts, call, &call->op, err);
    if (e != RB_OK) {
        call->op = NULL;
        json_t *res = mcp__tool_core_error(e, err);
        mcp__tool_finish(call, res);
    }
}

json_t *mcp__tool_mounts(mcp_call *call)
{
    return mcp__with_session(call, call->bound_language[0] ? call->bound_language : "python");
}

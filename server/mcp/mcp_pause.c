/*
 * mcp_pause.c: the MCP tools pause_session, resume_session and fork_session (docs/data.md). A
 * model that waits for its user pauses its session (suspend keeps every variable; hibernate
 * keeps the files and releases the memory), and one that wants to try two paths forks it: the
 * fork has a copy of the files and a fresh interpreter. They translate: core_session_pause,
 * core_session_resume and core_session_fork do the work; this file checks the arguments and
 * writes the answer as text and structured content.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/mcp/mcp_internal.h"

/* Their answer: the session (the new one for a fork) as GET /sessions/{id} has it, with what the
 * call did (pause, resume or fork). */
#define OUTPUT_SCHEMA                                                                                               \
    "\"outputSchema\":{\"type\":\"object\",\"properties\":{\"session_id\":{\"type\":\"string\"},"                 \
    "\"status\":{\"type\":\"string\"},\"pause\":{\"type\":\"object\"},\"resume\":{\"type\":\"object\"},"         \
    "\"fork\":{\"type\":\"object\"}},\"required\":[\"session_id\",\"status\"]},"

const char mcp__pause_def[] =
    "{\"name\":\"pause_session\",\"title\":\"Pause a session\","
    "\"description\":\"Pause a session while nobody needs it. mode suspend (the default) freezes it: its variables, "
    "imports and files stay and resume is instant, but it keeps its memory. mode hibernate keeps only its files (on "
    "disk) and releases its memory: after resume the interpreter starts fresh. Running code in a paused session (or "
    "resume_session) resumes it. A session with a cell running cannot be paused.\","
    "\"inputSchema\":{\"type\":\"object\",\"properties\":{\"session_id\":{\"type\":\"string\",\"description\":"
    "\"The session, from create_session or list_sessions\"},\"mode\":{\"type\":\"string\",\"enum\":[\"suspend\","
    "\"hibernate\"],\"default\":\"suspend\"}},\"required\":[\"session_id\"]}," OUTPUT_SCHEMA
    "\"annotations\":{\"title\":\"Pause a session\",\"readOnlyHint\":false,\"destructiveHint\":false,"
    "\"idempotentHint\":true,\"openWorldHint\":false}}";

const char mcp__resume_def[] =
    "{\"name\":\"resume_session\",\"title\":\"Resume a session\","
    "\"description\":\"Resume a suspended or hibernated session (running code in it does too). The answer says "
    "whether the interpreter was kept (suspended) or restarted (hibernated: files kept, variables gone).\","
    "\"inputSchema\":{\"type\":\"object\",\"properties\":{\"session_id\":{\"type\":\"string\",\"description\":"
    "\"The session, from create_session or list_sessions\"}},\"required\":[\"session_id\"]}," OUTPUT_SCHEMA
    "\"annotations\":{\"title\":\"Resume a session\",\"readOnlyHint\":false,\"destructiveHint\":false,"
    "\"idempotentHint\":true,\"openWorldHint\":false}}";

const char mcp__fork_def[] =
    "{\"name\":\"fork_session\",\"title\":\"Fork a session\","
    "\"description\":\"Make a new session with a copy of this session's /workspace files, to try another path from "
    "the same files without touching them. The new session has the same language and options; its interpreter "
    "starts fresh (variables are not copied: re-run what defines them). Answers the new session_id.\","
    "\"inputSchema\":{\"type\":\"object\",\"properties\":{\"session_id\":{\"type\":\"string\",\"description\":"
    "\"The session to copy, from create_session or list_sessions\"}},\"required\":[\"session_id\"]}," OUTPUT_SCHEMA
    "\"annotations\":{\"title\":\"Fork a session\",\"readOnlyHint\":false,\"destructiveHint\":false,"
    "\"idempotentHint\":false,\"openWorldHint\":false}}";

/* One line a model reads first, then the session object. */
static char *summary(const char *tool, json_t *body)
{
    const char *sid = json_string_value(json_object_get(body, "session_id"));
    json_t *p = json_object_get(body, "pause"), *r = json_object_get(body, "resume"), *f = json_object_get(body, "fork");
    if (strcmp(tool, "fork_session") == 0)
        return xasprintf("forked %s into a new session %s: the files were copied; its interpreter is fresh (run again "
                         "what defines your variables)",
                         f ? json_string_value(json_object_get(f, "from")) : "?", sid ? sid : "?");
    if (p != NULL)
        return xasprintf("session %s is %s: %s", sid ? sid : "?",
                         json_string_value(json_object_get(body, "status")),
                         strcmp(json_string_value(json_object_get(p, "mode")), "hibernate") == 0
                             ? "its files are kept, its memory released; the interpreter restarts on resume"
                             : "frozen with its variables; running code resumes it");
    if (r != NULL)
        return xasprintf("session %s resumed: %s", sid ? sid : "?",
                         strcmp(json_string_value(json_object_get(r, "interpreter")), "kept") == 0
                             ? "its variables are still there"
                             : "its files are back, but the interpreter started fresh (variables are gone)");
    return xasprintf("session %s is %s", sid ? sid : "?", json_string_value(json_object_get(body, "status")));
}

/* The tool result: the summary line, then the session object, also as structured content. */
static json_t *pause_result(const char *tool, json_t *body)
{
    char *text = summary(tool, body);
    char *doc = json_dumps(body, JSON_COMPACT);
    json_t *res = json_pack("{s:[{s:s, s:s}, {s:s, s:s}], s:O, s:b}", "content", "type", "text", "text", text, "type",
                            "text", "text", doc ? doc : "{}", "structuredContent", body, "isError", 0);
    free(doc);
    free(text);
    return res;
}

static void on_done(void *data, rb_err e, const char *msg, json_t *body)
{
    mcp_call *call = data;
    call->op = NULL;
    mcp__tool_finish(call, e != RB_OK ? mcp__tool_core_error(e, msg) : pause_result(call->tool, body));
    json_decref(body);
}

json_t *mcp__tool_pause(mcp_call *call)
{
    char err[RB_ERR_LEN];
    const char *sid = json_string_value(json_object_get(call->args, "session_id"));
    if (sid == NULL || sid[0] == '\0')
        return mcp__tool_error("'session_id' is required (a string from create_session or list_sessions)");
    json_t *body = NULL;
    rb_err e;
    if (strcmp(call->tool, "pause_session") == 0) {
        json_t *mode = json_object_get(call->args, "mode");
        if (mode != NULL && !json_is_null(mode) && !json_is_string(mode))
            return mcp__tool_error("'mode' must be \"suspend\" or \"hibernate\"");
        body = json_is_string(mode) ? json_pack("{s:O}", "mode", mode) : NULL;
        e = core_session_pause(call->ms->core, call->rt->who, sid, body, on_done, call, &call->op, err);
    } else if (strcmp(call->tool, "resume_session") == 0) {
        e = core_session_resume(call->ms->core, call->rt->who, sid, NULL, on_done, call, &call->op, err);
    } else {
        e = core_session_fork(call->ms->core, call->rt->who, sid, NULL, on_done, call, &call->op, err);
    }
    json_decref(body);
    if (e != RB_OK) {
        call->op = NULL;
        return mcp__tool_core_error(e, err);
    }
    return NULL;
}

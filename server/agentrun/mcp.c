/*
 * mcp.c: the MCP tools of runboxd's AgentRun-compatible surface, served at /agentrun/mcp with
 * server/mcp's transport (its public header, server/mcp/mcp.h: a tool set of this family; the
 * documents are agentrun.c's): AgentRun+'s nine tools with its arguments and answers, so that its
 * AgentRunMCPClient works unmodified.
 *
 * Answers are what AgentRun's FastMCP server gives: the tool's JSON object as the first text
 * block (the client parses that) and as structuredContent. execute_code adds its plots as image
 * blocks after it, for hosts that show them to a model. A failure is an isError result whose
 * object is {"success": false, "error": ...} (and "output" for execute_code), which the client
 * reads like any answer. Sessions are runbox sessions, shared with /mcp and REST; every tool
 * but the session-free ones needs a session_id (there is no per-connection sandbox here).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/codec.h"
#include "server/agentrun/agentrun_internal.h"
#include "server/mcp/mcp.h"

/* ---- answers ---------------------------------------------------------------------------- */

/* A tool result holding obj (stolen) as JSON text and as structuredContent. */
static json_t *ar_result(json_t *obj, int is_error)
{
    char *text = json_dumps(obj, JSON_INDENT(2));
    json_t *r = json_pack("{s:[{s:s, s:s}], s:o, s:b}", "content", "type", "text", "text", text ? text : "{}",
                          "structuredContent", obj, "isError", is_error);
    free(text);
    return r;
}

/* A failed tool's result: {"success": false, "error": msg} (and "output" for execute_code). */
static json_t *ar_failure(const mcp_call *call, rb_err e, const char *msg)
{
    char text[RB_ERR_LEN + 64];
    snprintf(text, sizeof(text), "%s: %s", rb_strerror(e), msg && msg[0] ? msg : rb_strerror(e));
    json_t *obj = json_pack("{s:b, s:s}", "success", 0, "error", text);
    if (strcmp(mcp_call_tool(call), "execute_code") == 0)
        json_object_set_new(obj, "output", json_string(text));
    return ar_result(obj, 1);
}

/* ---- tools ------------------------------------------------------------------------------ */

static void on_created(void *data, rb_err e, const char *msg, json_t *body)
{
    mcp_call *call = data;
    mcp_call_hold(call, NULL, NULL);
    mcp_call_answer(call, e == RB_OK ? ar_result(body, 0) : ar_failure(call, e, msg));
}

static void on_exec_event(void *data, const char *event, json_t *payload)
{
    mcp_call *call = data;
    if (strcmp(event, "done") != 0)
        return;
    *mcp_call_watch(call) = NULL; /* finished: must not be stopped again */
    json_t *obj = agentrun__execution(payload);
    json_t *res = ar_result(obj, !json_is_true(json_object_get(obj, "success")));
    json_t *content = json_object_get(res, "content");
    size_t i;
    json_t *png;
    json_array_foreach(json_object_get(payload, "files"), i, png)
        json_array_append_new(content, json_pack("{s:s, s:O, s:s}", "type", "image", "data", png, "mimeType",
                                                 "image/png"));
    mcp_call_answer(call, res);
}

static json_t *ar_execute(mcp_call *call, const char *sid)
{
    char err[RB_ERR_LEN];
    json_t *args = mcp_call_args(call);
    json_t *req = agentrun__execute_request(sid, json_object_get(args, "code"),
                                            json_object_get(args, "ignore_dependencies"),
                                            json_object_get(args, "ignore_unsafe_functions"), err);
    if (req == NULL)
        return ar_failure(call, RB_EINVAL, err);
    json_t *queued = NULL;
    rb_err e = core_execute(mcp_call_core(call), mcp_call_who(call), req, &queued, err);
    json_decref(req);
    if (e != RB_OK)
        return ar_failure(call, e, err);
    const char *id = json_string_value(json_object_get(queued, "request_id"));
    char rid[64];
    snprintf(rid, sizeof(rid), "%s", id ? id : "");
    json_decref(queued);
    mcp_call_execution(call, rid);
    core_watch **watch = mcp_call_watch(call);
    e = core_watch_start(mcp_call_core(call), mcp_call_who(call), rid, 1, on_exec_event, call, watch, err);
    if (e != RB_OK) {
        *watch = NULL;
        return ar_failure(call, e, err);
    }
    return NULL;
}

static void on_uploaded(void *data, rb_err e, const char *msg, json_t *body)
{
    mcp_call *call = data;
    *mcp_call_op(call) = NULL;
    if (e != RB_OK) {
        json_decref(body);
        mcp_call_answer(call, ar_failure(call, e, msg));
        return;
    }
    const char *path = json_string_value(json_object_get(body, "path"));
    const char *name = path != NULL && strrchr(path, '/') != NULL ? strrchr(path, '/') + 1 : (path ? path : "");
    char *dest = xasprintf("%s/%s", AGENTRUN_WORKDIR, path ? path : "");
    char *message = xasprintf("File '%s' uploaded successfully", name);
    json_t *obj = json_pack("{s:b, s:s, s:s, s:s, s:O?}", "success", 1, "destination", dest, "destination_path", dest,
                            "message", message, "size", json_object_get(body, "size"));
    free(dest);
    free(message);
    json_decref(body);
    mcp_call_answer(call, ar_result(obj, 0));
}

static json_t *ar_upload(mcp_call *call, const char *sid)
{
    char err[RB_ERR_LEN];
    json_t *args = mcp_call_args(call);
    const char *name = json_string_value(json_object_get(args, "filename"));
    json_t *b64 = json_object_get(args, "content_base64");
    if (name == NULL || strlen(name) != json_string_length(json_object_get(args, "filename")))
        return ar_failure(call, RB_EINVAL, "'filename' is required: the name of the file in src/, e.g. data.csv");
    rb_err e = agentrun__filename_check(name, err);
    if (e != RB_OK)
        return ar_failure(call, e, err);
    if (!json_is_string(b64))
        return ar_failure(call, RB_EINVAL, "'content_base64' is required: the file's bytes in standard base64");
    char *bytes = NULL;
    size_t len = 0;
    if (codec_base64_decode(json_string_value(b64), json_string_length(b64), &bytes, &len, err) != RB_OK) {
        char msg[RB_ERR_LEN + 64];
        snprintf(msg, sizeof(msg), "'content_base64' is not valid base64: %s", err);
        return ar_failure(call, RB_EINVAL, msg);
    }
    size_t max_upload = mcp_call_settings(call)->max_upload;
    if (len > max_upload) {
        free(bytes);
        snprintf(err, sizeof(err), "the file is %zu bytes; the upload limit is %zu bytes (max-upload)", len,
                 max_upload);
        return ar_failure(call, RB_ETOOBIG, err);
    }
    char *path = xasprintf("src/%s", name);
    e = core_file_upload(mcp_call_core(call), mcp_call_who(call), sid, path, bytes ? bytes : "", len, on_uploaded,
                         call, mcp_call_op(call), err);
    free(path);
    free(bytes);
    if (e != RB_OK) {
        *mcp_call_op(call) = NULL;
        return ar_failure(call, e, err);
    }
    return NULL;
}

static void on_downloaded(void *data, rb_err e, const char *msg, core_file *file)
{
    mcp_call *call = data;
    *mcp_call_op(call) = NULL;
    if (e != RB_OK) {
        char text[RB_ERR_LEN + 128];
        snprintf(text, sizeof(text), "%s%s", msg,
                 e == RB_ETOOBIG ? "; download it over REST instead (POST /agentrun/sessions/{id}/copy-from)" : "");
        mcp_call_answer(call, ar_failure(call, e, text));
        return;
    }
    char *b64 = codec_base64_encode(file->bytes, file->len);
    json_t *obj = json_pack("{s:b, s:s, s:s, s:I}", "success", 1, "filename", file->name ? file->name : "",
                            "content_base64", b64, "size_bytes", (json_int_t)file->len);
    free(b64);
    core_file_free(file);
    mcp_call_answer(call, ar_result(obj, 0));
}

static json_t *ar_download(mcp_call *call, const char *sid)
{
    char err[RB_ERR_LEN];
    json_t *src = json_object_get(mcp_call_args(call), "src_path");
    if (!json_is_string(src) || strlen(json_string_value(src)) != json_string_length(src))
        return ar_failure(call, RB_EINVAL, "'src_path' is required: a path such as artifacts/plot.png");
    rb_err e = agentrun__src_path_check(json_string_value(src), err);
    if (e != RB_OK)
        return ar_failure(call, e, err);
    e = core_file_download(mcp_call_core(call), mcp_call_who(call), sid, json_string_value(src), MCP_FILE_MAX,
                           on_downloaded, call, mcp_call_op(call), err);
    if (e != RB_OK) {
        *mcp_call_op(call) = NULL;
        return ar_failure(call, e, err);
    }
    return NULL;
}

static void on_packages(void *data, rb_err e, const char *msg, json_t *body)
{
    mcp_call *call = data;
    *mcp_call_op(call) = NULL;
    mcp_call_answer(call, e == RB_OK ? ar_result(agentrun__packages(body), 0) : ar_failure(call, e, msg));
    json_decref(body);
}

/* mcp_cancel_cb of a create_session in flight. */
static void cancel_create(void *work)
{
    agentrun__cancel(work);
}

/* The tool set's mcp_tool_cb: runs call's AgentRun tool; returns the tool result now, or NULL
 * when the call is answered later. */
static json_t *run_tool(mcp_call *call)
{
    char err[RB_ERR_LEN];
    rb_core *core = mcp_call_core(call);
    const core_caller *who = mcp_call_who(call);
    const char *t = mcp_call_tool(call);
    rb_err e;
    if (strcmp(t, "create_session") == 0) {
        agentrun_op *create = NULL;
        e = agentrun__session_create(core, who, on_created, call, &create, err);
        if (e != RB_OK)
            return ar_failure(call, e, err);
        mcp_call_hold(call, create, cancel_create);
        return NULL;
    }
    if (strcmp(t, "get_packages") == 0) {
        e = core_packages(core, on_packages, call, mcp_call_op(call), err);
        if (e != RB_OK) {
            *mcp_call_op(call) = NULL;
            return ar_failure(call, e, err);
        }
        return NULL;
    }
    if (strcmp(t, "list_sessions") == 0 || strcmp(t, "get_health") == 0) {
        json_t *list = NULL;
        e = core_session_list(core, who, &list, err);
        if (e != RB_OK)
            return ar_failure(call, e, err);
        json_t *obj;
        if (strcmp(t, "list_sessions") == 0) {
            obj = agentrun__session_ids(list);
        } else {
            json_t *health = core_health(core);
            obj = agentrun__health(health, json_array_size(json_object_get(list, "sessions")));
            json_decref(health);
        }
        json_decref(list);
        return ar_result(obj, 0);
    }
    /* the rest work on one session */
    json_t *sidv = json_object_get(mcp_call_args(call), "session_id");
    const char *sid = json_string_value(sidv);
    if (sid == NULL || sid[0] == '\0' || strlen(sid) != json_string_length(sidv))
        return ar_failure(call, RB_EINVAL, "'session_id' is required: the id create_session returned");
    if (strcmp(t, "execute_code") == 0)
        return ar_execute(call, sid);
    if (strcmp(t, "upload_file") == 0)
        return ar_upload(call, sid);
    if (strcmp(t, "download_file") == 0)
        return ar_download(call, sid);
    json_t *s = NULL;
    if (strcmp(t, "close_session") == 0) {
        e = core_session_delete(core, who, sid, &s, err);
        json_decref(s);
        if (e != RB_OK)
            return ar_failure(call, e, err);
        char *msg = xasprintf("Session %s closed successfully", sid);
        json_t *obj = json_pack("{s:b, s:s}", "success", 1, "message", msg);
        free(msg);
        return ar_result(obj, 0);
    }
    /* get_session_info */
    e = core_session_get(core, who, sid, &s, err);
    if (e != RB_OK)
        return ar_failure(call, e, err);
    const char *status = json_string_value(json_object_get(s, "status"));
    if (status != NULL && (strcmp(status, "ended") == 0 || strcmp(status, "dead") == 0)) {
        snprintf(err, sizeof(err), "Session %.64s not found (it is %s)", sid, status);
        json_decref(s);
        return ar_failure(call, RB_ENOTFOUND, err);
    }
    json_t *obj = agentrun__session(sid);
    json_object_set(obj, "status", json_object_get(s, "status"));
    json_decref(s);
    return ar_result(obj, 0);
}

/* ---- tool definitions ------------------------------------------------------------------- */

#define AR_SESSION_ID                                                                                               \
    "\"session_id\":{\"type\":\"string\",\"description\":\"The session ID returned by create_session\"}"
#define AR_NO_ARGS "{\"type\":\"object\",\"properties\":{}}"

static const char *const tool_defs[] = {
    "{\"name\":\"create_session\",\"description\":\"Create a new AgentRun session for code execution. Returns a "
    "session_id for all later calls, and its folders: code runs in workdir (/workspace); upload files go to "
    "source_path (src/, read them as 'src/name'); save files to download in artifact_path (artifacts/, e.g. "
    "'artifacts/plot.png').\",\"inputSchema\":" AR_NO_ARGS "}",
    "{\"name\":\"execute_code\",\"description\":\"Execute Python code in a session. The code runs in the session's "
    "working folder (uploads are in src/, save outputs to artifacts/); variables persist between calls of one "
    "session. Returns {success, output}: success is false when the code raised (the traceback is in output) or "
    "timed out. Plots come back as images too.\",\"inputSchema\":{\"type\":\"object\",\"properties\":{" AR_SESSION_ID
    ",\"code\":{\"type\":\"string\",\"description\":\"Python code to execute\"},"
    "\"ignore_dependencies\":{\"anyOf\":[{\"type\":\"array\",\"items\":{\"type\":\"string\"}},{\"type\":\"null\"}],"
    "\"default\":null,\"description\":\"Accepted for compatibility; packages are not installed automatically (the "
    "sandbox image has the common ones; see get_packages)\"},"
    "\"ignore_unsafe_functions\":{\"anyOf\":[{\"type\":\"array\",\"items\":{\"type\":\"string\"}},{\"type\":\"null\"}],"
    "\"default\":null,\"description\":\"Function names to allow when the server's optional code policy would refuse "
    "them, e.g. [\\\"open\\\"]\"}},\"required\":[\"session_id\",\"code\"]}}",
    "{\"name\":\"upload_file\",\"description\":\"Upload a file into a session's src/ folder; code reads it as "
    "'src/<filename>'. The content must be base64-encoded.\",\"inputSchema\":{\"type\":\"object\",\"properties\":{"
    AR_SESSION_ID ",\"filename\":{\"type\":\"string\",\"description\":\"Name of the file (no path separators)\"},"
    "\"content_base64\":{\"type\":\"string\",\"description\":\"Base64-encoded file content\"}},"
    "\"required\":[\"session_id\",\"filename\",\"content_base64\"]}}",
    "{\"name\":\"download_file\",\"description\":\"Download a file from a session, base64-encoded, e.g. "
    "artifacts/plot.png (paths are relative to the working folder, or absolute under /workspace).\","
    "\"inputSchema\":{\"type\":\"object\",\"properties\":{" AR_SESSION_ID ",\"src_path\":{\"type\":\"string\","
    "\"description\":\"Path of the file, e.g. artifacts/summary.csv\"}},\"required\":[\"session_id\",\"src_path\"]}}",
    "{\"name\":\"list_sessions\",\"description\":\"List the IDs of all active sessions (made over REST or MCP).\","
    "\"inputSchema\":" AR_NO_ARGS "}",
    "{\"name\":\"get_session_info\",\"description\":\"Get a session's folders (source_path, artifact_path).\","
    "\"inputSchema\":{\"type\":\"object\",\"properties\":{" AR_SESSION_ID "},\"required\":[\"session_id\"]}}",
    "{\"name\":\"close_session\",\"description\":\"Close a session and remove its sandbox and files.\","
    "\"inputSchema\":{\"type\":\"object\",\"properties\":{" AR_SESSION_ID "},\"required\":[\"session_id\"]}}",
    "{\"name\":\"get_packages\",\"description\":\"List the Python packages installed in the sandbox (no session "
    "needed), to write code that uses what is there.\",\"inputSchema\":" AR_NO_ARGS "}",
    "{\"name\":\"get_health\",\"description\":\"Check the server's health and count active sessions.\","
    "\"inputSchema\":" AR_NO_ARGS "}",
};

static const char instructions[] =
    "AgentRun-compatible code execution (runbox). Call create_session, then execute_code with its session_id. Upload "
    "files with upload_file (they land in src/, so read 'src/data.csv'); save outputs under artifacts/ and fetch them "
    "with download_file ('artifacts/plot.png'). get_packages lists the installed Python packages.";

/* ---- registration ----------------------------------------------------------------------- */

/* Every request to /agentrun/mcp goes to MCP's transport with this family's tool set (the
 * route's data). */
static int serve(http_call *hc)
{
    return mcp_toolset_serve(hc->data, hc);
}

static const http_route routes[] = {
    {"POST", "/agentrun/mcp", serve},
    {"GET", "/agentrun/mcp", serve},
    {"DELETE", "/agentrun/mcp", serve},
};

rb_err agentrun__mcp_register(rb_server *s, mcp_server *mcp, char *err)
{
    const mcp_toolset_def def = {.what = "AgentRun tool",
                                 .defs = tool_defs,
                                 .ndefs = sizeof(tool_defs) / sizeof(tool_defs[0]),
                                 .instructions = instructions,
                                 .run = run_tool};
    mcp_toolset *set = NULL;
    rb_err e = mcp_toolset_add(mcp, &def, &set, err);
    if (e != RB_OK)
        return e;
    /* Named "mcp": /metrics counts /agentrun/mcp with /mcp. No error_prefix: errors h2o raises
     * itself on /agentrun/mcp take AgentRun's shape (rest.c's /agentrun). */
    http_protocol p = {.name = "mcp", .routes = routes, .nroutes = sizeof(routes) / sizeof(routes[0]), .data = set};
    server_register(s, &p);
    return RB_OK;
}

/*
 * mcp_files.c: the MCP file, package and dependency tools (upload_file, download_file,
 * list_files, get_packages, install_dependencies) and the file resources
 * runbox://sessions/{session_id}/files[/{path}] (server/mcp/mcp_internal.h). Files travel as text
 * when they are small UTF-8, as image content or as base64 blobs otherwise (base/codec.h does
 * the encoding); core moves the bytes in and out of the sandbox. Downloads ask core for at most
 * MCP_FILE_MAX bytes, so a bigger file is refused before it is read, and give core's file (and
 * its share of max-download-memory) back as soon as it is encoded. JSON-RPC carries files as
 * text or base64 inside the answer, so unlike REST they are copied while the answer is built;
 * MCP_FILE_MAX bounds that.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/codec.h"
#include "server/mcp/mcp_internal.h"

#define MCP_FILE_TEXT_MAX (256u * 1024) /* download_file: UTF-8 files up to this come back as text */

/* ---- paths and URIs -------------------------------------------------------------------- */

/* Whether a file of this content type may be shown as text (when its bytes are UTF-8). */
static int mime_textual(const char *mime)
{
    static const char *const types[] = {"text/", "application/json", "application/xml", "image/svg+xml",
                                        "application/octet-stream"};
    for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++)
        if (strncmp(mime, types[i], strlen(types[i])) == 0)
            return 1;
    return 0;
}

/* Whether an image type that MCP clients show to the model as image content. */
static int mime_raster(const char *mime)
{
    return strcmp(mime, "image/png") == 0 || strcmp(mime, "image/jpeg") == 0 || strcmp(mime, "image/gif") == 0 ||
           strcmp(mime, "image/webp") == 0;
}

/* path relative to /workspace, as used in resource URIs ("/workspace/a/b" -> "a/b"). */
static const char *workspace_relative(const char *path)
{
    if (strncmp(path, "/workspace/", 11) == 0)
        path += 11;
    while (path[0] == '.' && path[1] == '/')
        path += 2;
    while (*path == '/')
        path++;
    return path;
}

/* runbox://sessions/{session_id}/files/{path} (heap); bytes outside the URI's unreserved set
 * (except '/') are percent-encoded. */
static char *file_uri(const char *session_id, const char *path)
{
    char *enc = codec_percent_encode(workspace_relative(path), "/");
    char *uri = xasprintf("runbox://sessions/%s/files/%s", session_id, enc);
    free(enc);
    return uri;
}

/* ---- answers --------------------------------------------------------------------------- */

/* A JSON-RPC error for a failed file resource read: unknown session or file -> -32002, a bad or
 * refused path or a file too big -> -32602, the rest -> -32603. */
static json_t *resource_error(json_t *id, rb_err e, const char *msg, const char *uri)
{
    int code = e == RB_ENOTFOUND                                           ? MCP_ERR_RESOURCE
               : (e == RB_EINVAL || e == RB_EFORBIDDEN || e == RB_ETOOBIG) ? MCP_ERR_PARAMS
                                                                           : MCP_ERR_INTERNAL;
    char text[RB_ERR_LEN + 32];
    snprintf(text, sizeof(text), "%s: %s", e == RB_ENOTFOUND ? "Resource not found" : rb_strerror(e),
             msg && msg[0] ? msg : rb_strerror(e));
    return mcp__rpc_error(id, code, text, json_pack("{s:s}", "uri", uri ? uri : ""));
}

/* Finishes a file call with core's error e. */
static void file_call_fail(mcp_call *call, rb_err e, const char *msg)
{
    if (call->resource) {
        mcp__call_finish(call, resource_error(call->id, e, msg, call->uri));
        return;
    }
    json_t *res = mcp__tool_core_error(e, msg);
    mcp__tool_finish(call, res);
}

/* Answers of upload_file, list_files, install_dependencies, get_packages and the listing
 * resource (body: core's JSON answer). Files get their resource URI beside them. */
static void on_file_json(void *data, rb_err e, const char *msg, json_t *body)
{
    mcp_call *call = data;
    call->op = NULL;
    if (e != RB_OK) {
        json_decref(body);
        file_call_fail(call, e, msg);
        return;
    }
    const char *sid = json_string_value(json_object_get(body, "session_id"));
    json_t *files = json_object_get(body, "files");
    size_t i;
    json_t *f;
    json_array_foreach(files, i, f)
    {
        const char *path = json_string_value(json_object_get(f, "path"));
        const char *type = json_string_value(json_object_get(f, "type"));
        if (sid != NULL && path != NULL && (type == NULL || strcmp(type, "file") == 0)) {
            char *uri = file_uri(sid, path);
            json_object_set_new(f, "uri", json_string(uri));
            free(uri);
        }
    }
    const char *path = json_string_value(json_object_get(body, "path"));
    if (strcmp(call->tool, "upload_file") == 0 && sid != NULL && path != NULL) {
        char *uri = file_uri(sid, path);
        json_object_set_new(body, "uri", json_string(uri));
        free(uri);
    }
    if (call->resource) {
        json_t *res = mcp__resource_text(call->uri, body);
        json_decref(body);
        mcp__call_finish(call, mcp__rpc_result(call->id, res));
        return;
    }
    json_t *res = mcp__tool_object(body);
    json_decref(body);
    mcp__tool_finish(call, res);
}

/* Answers of download_file and of a file resource read (file owned: freed here once encoded). */
static void on_file_bytes(void *data, rb_err e, const char *msg, core_file *file)
{
    mcp_call *call = data;
    call->op = NULL;
    if (e == RB_ETOOBIG) {
        char text[RB_ERR_LEN];
        snprintf(text, sizeof(text),
                 "%.300s; MCP returns files of at most %u bytes: read a part of it with execute_code, or download it "
                 "over REST (GET /sessions/%s/files/download?path=...)",
                 msg, (unsigned)MCP_FILE_MAX, call->session_id);
        file_call_fail(call, RB_ETOOBIG, text);
        return;
    }
    if (e != RB_OK) {
        file_call_fail(call, e, msg);
        return;
    }
    const char *bytes = file->bytes;
    size_t len = file->len;
    const char *name = file->name;
    const char *mime = file->content_type ? file->content_type : "application/octet-stream";
    int text = mime_textual(mime) && codec_utf8_text(bytes, len);
    if (text && strcmp(mime, "application/octet-stream") == 0)
        mime = "text/plain; charset=utf-8";
    char *uri = file_uri(call->session_id, call->path);
    char *b64 = text ? NULL : codec_base64_encode(bytes, len);
    if (call->resource) {
        json_t *item = json_pack("{s:s, s:s}", "uri", call->uri, "mimeType", mime);
        json_object_set_new(item, text ? "text" : "blob", text ? json_stringn(bytes, len) : json_string(b64));
        free(b64);
        core_file_free(file); /* item holds its own copy */
        mcp__call_finish(call, mcp__rpc_result(call->id, json_pack("{s:[o]}", "contents", item)));
        free(uri);
        return;
    }
    /* Small UTF-8 text comes back as text the model reads directly; images as image content
     * clients show to the model; anything else as an embedded resource (base64 blob). */
    json_t *block;
    const char *encoding = "base64";
    if (text && len <= MCP_FILE_TEXT_MAX) {
        block = json_pack("{s:s, s:s%}", "type", "text", "text", bytes, len);
        encoding = "utf-8";
    } else {
        if (b64 == NULL)
            b64 = codec_base64_encode(bytes, len);
        if (mime_raster(mime))
            block = json_pack("{s:s, s:s, s:s}", "type", "image", "data", b64, "mimeType", mime);
        else
            block = json_pack("{s:s, s:{s:s, s:s, s:s}}", "type", "resource", "resource", "uri", uri, "mimeType", mime,
                              "blob", b64);
    }
    json_t *sc = json_pack("{s:s, s:s, s:s, s:s, s:I, s:s, s:s}", "session_id", call->session_id, "path",
                           workspace_relative(call->path), "name", name ? name : "", "mime_type", mime, "size",
                           (json_int_t)len, "encoding", encoding, "uri", uri);
    json_t *res = json_pack("{s:[o], s:o, s:b}", "content", block, "structuredContent", sc, "isError", 0);
    if (strcmp(json_string_value(json_object_get(block, "type")), "image") == 0) {
        /* The image, and a line of text for hosts that hand the model text only (Chat
         * Completions tool messages), which would otherwise pass on nothing. */
        char *t = xasprintf("%s: %s, %zu bytes", workspace_relative(call->path), mime, len);
        json_array_append_new(json_object_get(res, "content"), json_pack("{s:s, s:s}", "type", "text", "text", t));
        free(t);
    }
    free(b64);
    free(uri);
    core_file_free(file); /* the answer holds its own copies now */
    mcp__tool_finish(call, res);
}

/* ---- tools and resources --------------------------------------------------------------- */

void mcp__files_start(mcp_call *call, const char *session_id)
{
    char err[RB_ERR_LEN];
    rb_core *core = call->ms->core;
    snprintf(call->session_id, sizeof(call->session_id), "%s", session_id);
    const char *t = call->tool;
    rb_err e;
    if (strcmp(t, "upload_file") == 0) {
        e = core_file_upload(core, call->rt->who, session_id, call->path, call->upload ? call->upload : "", call->upload_len,
                             on_file_json, call, &call->op, err);
    } else if (strcmp(t, "download_file") == 0) {
        e = core_file_download(core, call->rt->who, session_id, call->path, MCP_FILE_MAX, on_file_bytes, call, &call->op, err);
    } else if (strcmp(t, "list_files") == 0) {
        e = core_file_list(core, call->rt->who, session_id, on_file_json, call, &call->op, err);
    } else {
        json_t *body = json_pack("{s:O}", "dependencies", json_object_get(call->args, "dependencies"));
        e = core_dependencies_install(core, call->rt->who, session_id, body, on_file_json, call, &call->op, err);
        json_decref(body);
    }
    /* On success call may already be answered and freed (a core that answers at once). */
    if (e != RB_OK) {
        call->op = NULL;
        file_call_fail(call, e, err);
    }
}

/* A required string argument that names a path; NULL with *res set to a tool error otherwise. */
static const char *arg_path(mcp_call *call, const char *name, json_t **res)
{
    json_t *v = json_object_get(call->args, name);
    if (!json_is_string(v) || json_string_length(v) == 0) {
        *res = mcp__tool_error("'%s' is required: a path under /workspace such as data.csv or out/plot.png", name);
        return NULL;
    }
    if (strlen(json_string_value(v)) != json_string_length(v)) {
        *res = mcp__tool_error("'%s' must not contain NUL characters", name);
        return NULL;
    }
    return json_string_value(v);
}

/* upload_file, download_file, list_files, install_dependencies, get_packages; returns the tool
 * result now, or NULL when the call answers later. */
json_t *mcp__tool_files(mcp_call *call)
{
    char err[RB_ERR_LEN];
    const char *t = call->tool;
    json_t *res = NULL;
    const char *language = call->bound_language[0] ? call->bound_language : "python";
    if (strcmp(t, "get_packages") == 0) {
        rb_err e = core_packages(call->ms->core, on_file_json, call, &call->op, err);
        if (e != RB_OK) {
            call->op = NULL;
            return mcp__tool_core_error(e, err);
        }
        return NULL;
    }
    if (strcmp(t, "install_dependencies") == 0) {
        json_t *deps = json_object_get(call->args, "dependencies");
        if (!json_is_array(deps) || json_array_size(deps) == 0)
            return mcp__tool_error("'dependencies' is required: a list of pip requirements such as [\"requests\", "
                                   "\"tabulate==0.9.0\"] (npm packages such as [\"left-pad@1.3.0\"] for a "
                                   "javascript or typescript session)");
        return mcp__with_session(call, "python");
    }
    if (strcmp(t, "list_files") == 0)
        return mcp__with_session(call, language);
    const char *path = arg_path(call, strcmp(t, "upload_file") == 0 ? "filename" : "src_path", &res);
    if (path == NULL)
        return res;
    call->path = xstrdup(path);
    if (strcmp(t, "upload_file") == 0) {
        json_t *b64 = json_object_get(call->args, "content_base64");
        json_t *text = json_object_get(call->args, "content");
        if (json_is_null(b64))
            b64 = NULL;
        if (json_is_null(text))
            text = NULL;
        if ((b64 == NULL) == (text == NULL))
            return mcp__tool_error(
                "give the file's bytes as 'content_base64' (base64 text), or text as 'content' (exactly "
                "one of the two)");
        if (b64 != NULL) {
            if (!json_is_string(b64))
                return mcp__tool_error("'content_base64' must be a string of base64 text");
            if (codec_base64_decode(json_string_value(b64), json_string_length(b64), &call->upload, &call->upload_len,
                                    err) != RB_OK)
                return mcp__tool_error(
                    "'content_base64' is not valid base64: %s. Encode the file's bytes with standard "
                    "base64 (for example base64.b64encode(data).decode() in Python)",
                    err);
        } else {
            if (!json_is_string(text))
                return mcp__tool_error("'content' must be a string (the text of the file)");
            call->upload_len = json_string_length(text);
            call->upload = xmalloc(call->upload_len + 1);
            memcpy(call->upload, json_string_value(text), call->upload_len + 1);
        }
        if (call->upload_len > call->ms->cfg->max_upload)
            return mcp__tool_error("the file is %zu bytes; the upload limit is %zu bytes (max-upload)",
                                   call->upload_len, call->ms->cfg->max_upload);
    }
    return mcp__with_session(call, language);
}

/* resources/read of runbox://sessions/{session_id}/files[/{path}]: starts the read and returns
 * NULL (answered later), or returns an error response; uri must have the files form (see
 * mcp__is_file_uri). */
json_t *mcp__read_file_resource(mcp_rt *rt, mcp_post *post, json_t *id, const char *uri)
{
    char err[RB_ERR_LEN];
    const char *sid = uri + 18, *slash = strchr(sid, '/');
    const char *rest = slash + 6; /* after "/files" */
    if (slash - sid >= MCP_SESSIONS_ID_LEN)
        return resource_error(id, RB_ENOTFOUND, "no such session", uri);
    char *path = NULL;
    if (*rest == '/' && rest[1] != '\0') {
        path = codec_percent_decode(rest + 1);
        if (path == NULL)
            return resource_error(id, RB_EINVAL, "the file path in the URI has a bad %-escape or an encoded NUL", uri);
    }
    mcp_call *call = mcp__call_new(rt, post, id);
    call->resource = 1;
    call->path = path;
    call->uri = xstrdup(uri);
    snprintf(call->session_id, sizeof(call->session_id), "%.*s", (int)(slash - sid), sid);
    snprintf(call->tool, sizeof(call->tool), "%s", path ? "download_file" : "list_files");
    post->outstanding++;
    rb_err e = path ? core_file_download(rt->ms->core, rt->who, call->session_id, path, MCP_FILE_MAX, on_file_bytes, call,
                                         &call->op, err)
                    : core_file_list(rt->ms->core, rt->who, call->session_id, on_file_json, call, &call->op, err);
    if (e != RB_OK) {
        call->op = NULL;
        file_call_fail(call, e, err);
    }
    return NULL;
}

/* Whether uri is runbox://sessions/{session_id}/files or .../files/{path}. */
int mcp__is_file_uri(const char *uri)
{
    if (strncmp(uri, "runbox://sessions/", 18) != 0)
        return 0;
    const char *slash = strchr(uri + 18, '/');
    return slash != NULL && slash > uri + 18 && strncmp(slash, "/files", 6) == 0 && (slash[6] == '\0' || slash[6] == '/');
}

/*
 * agentrun.c: the AgentRun family's heart (server/agentrun/agentrun_internal.h): AgentRun's
 * documents and its session creation, which its REST routes (rest.c) and its MCP tools (mcp.c)
 * share, and agentrun_register (server/agentrun/agentrun.h), which registers both.
 */
#include "server/agentrun/agentrun_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Output an execution may put into one AgentRun answer: runbox caps output itself, this only
 * bounds the copy. */
#define AGENTRUN_OUTPUT_MAX (64u * 1024 * 1024)

json_t *agentrun__error_doc(const char *code, const char *message)
{
    return json_pack("{s:s, s:{s:s, s:s}}", "detail", message, "error", "code", code, "message", message);
}

json_t *agentrun__session(const char *session_id)
{
    return json_pack("{s:s, s:s, s:s, s:s}", "session_id", session_id, "workdir", AGENTRUN_WORKDIR, "source_path",
                     AGENTRUN_SOURCE_PATH, "artifact_path", AGENTRUN_ARTIFACT_PATH);
}

json_t *agentrun__session_ids(json_t *list)
{
    json_t *ids = json_array();
    size_t i;
    json_t *s;
    json_array_foreach(json_object_get(list, "sessions"), i, s)
    {
        json_t *id = json_object_get(s, "session_id");
        if (json_is_string(id))
            json_array_append(ids, id);
    }
    return json_pack("{s:o, s:I}", "active_sessions", ids, "count", (json_int_t)json_array_size(ids));
}

json_t *agentrun__packages(json_t *packages)
{
    json_t *names = json_array();
    size_t i;
    json_t *p;
    json_array_foreach(json_object_get(packages, "packages"), i, p)
    {
        json_t *name = json_is_string(p) ? p : json_object_get(p, "name");
        if (json_is_string(name))
            json_array_append(names, name);
    }
    return json_pack("{s:o, s:I}", "packages", names, "count", (json_int_t)json_array_size(names));
}

json_t *agentrun__health(json_t *health, size_t active_sessions)
{
    const char *status = json_string_value(json_object_get(health, "status"));
    return json_pack("{s:s, s:I}", "status", status != NULL && strcmp(status, "ok") == 0 ? "healthy" : "unhealthy",
                     "active_sessions", (json_int_t)active_sessions);
}

/* ---- executions ------------------------------------------------------------------------- */

/* Whether s is a name the code policy's rules can hold: an identifier, dots between parts
 * (module names). */
static int rule_name_ok(const char *s)
{
    int start = 1;
    size_t n = 0;
    for (; *s != '\0'; s++, n++) {
        char ch = *s;
        int alpha = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || ch == '_';
        if (alpha || (!start && ch >= '0' && ch <= '9')) {
            start = 0;
        } else if (ch == '.' && !start) {
            start = 1;
        } else {
            return 0;
        }
    }
    return n > 0 && n <= 100 && !start;
}

/* Whether v is absent, null or a list of at most 1000 strings; else err names the field. */
static int names_ok(json_t *v, const char *field, char *err)
{
    if (v == NULL || json_is_null(v))
        return 1;
    if (!json_is_array(v) || json_array_size(v) > 1000) {
        rb_fail(RB_EINVAL, err, "%s: must be a list of at most 1000 names (or null)", field);
        return 0;
    }
    size_t i;
    json_t *item;
    json_array_foreach(v, i, item)
    {
        if (!json_is_string(item)) {
            rb_fail(RB_EINVAL, err, "%s[%zu]: must be a name (a string)", field, i);
            return 0;
        }
    }
    return 1;
}

json_t *agentrun__execute_request(const char *session_id, json_t *code, json_t *ignore_dependencies,
                                  json_t *ignore_unsafe_functions, char *err)
{
    if (!json_is_string(code)) {
        rb_fail(RB_EINVAL, err, "the code to run is required, as a string of Python source");
        return NULL;
    }
    if (!names_ok(ignore_dependencies, "ignore_dependencies", err) ||
        !names_ok(ignore_unsafe_functions, "ignore_unsafe_functions", err))
        return NULL;
    json_t *req = json_pack("{s:s, s:O}", "session_id", session_id, "code", code);
    if (ignore_unsafe_functions == NULL || json_is_null(ignore_unsafe_functions))
        return req;
    json_t *rules = json_array();
    size_t i;
    json_t *v;
    json_array_foreach(ignore_unsafe_functions, i, v)
    {
        const char *name = json_string_value(v);
        if (!rule_name_ok(name))
            continue; /* no rule of runbox's code policy can name it */
        static const char *const kinds[] = {"builtin:", "name:", "import:"};
        for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++) {
            if (k < 2 && strchr(name, '.') != NULL)
                continue;
            char *rule = xasprintf("%s%s", kinds[k], name);
            json_array_append_new(rules, json_string(rule));
            free(rule);
        }
        if (strcmp(name, "open") == 0)
            json_array_append_new(rules, json_string("open:write"));
    }
    if (json_array_size(rules) > 0)
        json_object_set(req, "disabled_rules", rules);
    json_decref(rules);
    return req;
}

static void append_str(rb_buf *b, const char *s)
{
    if (s != NULL)
        rb_buf_append(b, s, strlen(s));
}

static void append_line(rb_buf *b, const char *s)
{
    append_str(b, s);
    if (b->len > 0 && b->data[b->len - 1] != '\n')
        rb_buf_append(b, "\n", 1);
}

/* The traceback of an error item (or of the document's stored error), one line per entry. */
static void append_error(rb_buf *b, json_t *error)
{
    json_t *tb = json_object_get(error, "traceback");
    if (json_array_size(tb) > 0) {
        size_t i;
        json_t *line;
        json_array_foreach(tb, i, line) append_line(b, json_string_value(line));
        return;
    }
    const char *ename = json_string_value(json_object_get(error, "ename"));
    const char *evalue = json_string_value(json_object_get(error, "evalue"));
    char *t = xasprintf("%s: %s", ename ? ename : "Error", evalue ? evalue : "");
    append_line(b, t);
    free(t);
}

json_t *agentrun__execution(json_t *doc)
{
    rb_buf b;
    rb_buf_init(&b, AGENTRUN_OUTPUT_MAX);
    int had_error = 0;
    size_t i;
    json_t *item;
    json_array_foreach(json_object_get(doc, "outputs"), i, item)
    {
        const char *type = json_string_value(json_object_get(item, "type"));
        if (type == NULL)
            continue;
        if (strcmp(type, "stream") == 0) {
            append_str(&b, json_string_value(json_object_get(item, "text")));
        } else if (strcmp(type, "result") == 0) {
            if (b.len > 0 && b.data[b.len - 1] != '\n')
                rb_buf_append(&b, "\n", 1);
            append_line(&b, json_string_value(json_object_get(item, "text")));
        } else if (strcmp(type, "error") == 0) {
            if (b.len > 0 && b.data[b.len - 1] != '\n')
                rb_buf_append(&b, "\n", 1);
            append_error(&b, item);
            had_error = 1;
        }
    }
    json_t *stored = json_object_get(doc, "error");
    if (!had_error && json_is_object(stored))
        append_error(&b, stored);
    const char *status = json_string_value(json_object_get(doc, "status"));
    const char *rid = json_string_value(json_object_get(doc, "request_id"));
    char note[256];
    note[0] = '\0';
    if (json_is_true(json_object_get(doc, "truncated")))
        snprintf(note, sizeof(note), "[output truncated: %lld bytes dropped]",
                 (long long)json_integer_value(json_object_get(doc, "dropped_bytes")));
    if (note[0] != '\0')
        append_line(&b, note);
    if (json_is_true(json_object_get(doc, "reset"))) {
        const char *why = json_string_value(json_object_get(doc, "reset_reason"));
        snprintf(note, sizeof(note), "[the interpreter was restarted (%.150s); variables from earlier calls are gone]",
                 why ? why : "no reason given");
        append_line(&b, note);
    }
    if (status != NULL && strcmp(status, "timeout") == 0)
        append_line(&b, "Error: Execution timed out.");
    else if (status != NULL && strcmp(status, "cancelled") == 0)
        append_line(&b, "Error: Execution was cancelled.");
    int success = status != NULL && strcmp(status, "completed") == 0;
    json_t *out = json_pack("{s:b, s:s%, s:O?, s:O?, s:O?}", "success", success, "output", b.data ? b.data : "", b.len,
                            "session_id", json_object_get(doc, "session_id"), "request_id",
                            rid ? json_object_get(doc, "request_id") : NULL, "status", json_object_get(doc, "status"));
    rb_buf_dispose(&b);
    return out;
}

/* ---- paths -------------------------------------------------------------------------------- */

rb_err agentrun__filename_check(const char *name, char *err)
{
    if (strstr(name, "..") != NULL || strchr(name, '/') != NULL || strchr(name, '\\') != NULL)
        return rb_fail(RB_EFORBIDDEN, err,
                       "Access denied: Invalid filename. Path separators and traversal attempts are not allowed "
                       "(files go to %s)",
                       AGENTRUN_SOURCE_PATH);
    if (name[0] == '\0' || name[0] == '.')
        return rb_fail(RB_EINVAL, err, "Invalid filename: Filename cannot be empty or start with a dot");
    return RB_OK;
}

rb_err agentrun__src_path_check(const char *src_path, char *err)
{
    if (strstr(src_path, "..") != NULL)
        return rb_fail(RB_EFORBIDDEN, err,
                       "Access denied: Path traversal attempts %.200s are not allowed (paths are relative to %s)",
                       src_path, AGENTRUN_WORKDIR);
    if (src_path[0] == '\0')
        return rb_fail(RB_EINVAL, err, "src_path: required, e.g. artifacts/summary.csv");
    return RB_OK;
}

/* ---- creating a session ----------------------------------------------------------------- */

struct agentrun_op {
    rb_core *c;
    const core_caller *who;
    core_cb cb;
    void *data;
    core_op *op; /* the core call in flight */
    int step;    /* 0: creating the session; 1, 2: making src/, artifacts/ */
    char session_id[64];
};

static const char *const folders[] = {"src", "artifacts"};

static void op_finish(agentrun_op *op, rb_err e, const char *msg, json_t *body)
{
    op->cb(op->data, e, msg, body);
    free(op);
}

static void on_folder(void *data, rb_err e, const char *msg, json_t *body);

/* Makes the next folder, or answers once both are there. */
static void next_folder(agentrun_op *op)
{
    char err[RB_ERR_LEN];
    if (op->step > (int)(sizeof(folders) / sizeof(folders[0]))) {
        op_finish(op, RB_OK, NULL, agentrun__session(op->session_id));
        return;
    }
    rb_err e = core_file_mkdir(op->c, op->who, op->session_id, folders[op->step - 1], on_folder, op, &op->op, err);
    if (e != RB_OK) {
        op->op = NULL;
        on_folder(op, e, err, NULL);
    }
    /* op may be gone here (a core that answers at once) */
}

static void on_folder(void *data, rb_err e, const char *msg, json_t *body)
{
    agentrun_op *op = data;
    op->op = NULL;
    json_decref(body);
    if (e != RB_OK) {
        char err[RB_ERR_LEN], text[RB_ERR_LEN];
        json_t *gone = NULL;
        if (core_session_delete(op->c, op->who, op->session_id, &gone, err) != RB_OK)
            rb_warn("agentrun: session %s kept after its folders failed: %s", op->session_id, err);
        json_decref(gone);
        snprintf(text, sizeof(text), "could not make the session's %s folder: %.400s", folders[op->step - 1], msg);
        op_finish(op, e, text, NULL);
        return;
    }
    op->step++;
    next_folder(op);
}

static void on_created(void *data, rb_err e, const char *msg, json_t *body)
{
    agentrun_op *op = data;
    op->op = NULL;
    if (e != RB_OK) {
        op_finish(op, e, msg, NULL);
        return;
    }
    const char *sid = json_string_value(json_object_get(body, "session_id"));
    snprintf(op->session_id, sizeof(op->session_id), "%s", sid ? sid : "");
    json_decref(body);
    op->step = 1;
    next_folder(op);
}

rb_err agentrun__session_create(rb_core *c, const core_caller *who, core_cb cb, void *data, agentrun_op **handle,
                                char *err)
{
    agentrun_op *op = xcalloc(1, sizeof(*op));
    op->c = c;
    op->who = who;
    op->cb = cb;
    op->data = data;
    json_t *opts = json_pack("{s:s}", "language", "python");
    rb_err e = core_session_create(c, who, opts, on_created, op, &op->op, err);
    json_decref(opts);
    if (e != RB_OK) {
        free(op);
        return e;
    }
    if (handle != NULL)
        *handle = op;
    return RB_OK;
}

void agentrun__cancel(agentrun_op *op)
{
    if (op == NULL)
        return;
    if (op->op != NULL)
        core_cancel(op->op);
    free(op);
}

/* ---- registration ----------------------------------------------------------------------- */

rb_err agentrun_register(rb_server *s, mcp_server *mcp, char *err)
{
    /* The MCP tools first: they are what can fail, and then nothing is registered. */
    rb_err e = agentrun__mcp_register(s, mcp, err);
    if (e != RB_OK)
        return e;
    agentrun__rest_register(s);
    return RB_OK;
}

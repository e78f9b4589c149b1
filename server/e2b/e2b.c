/*
 * e2b.c: the E2B protocol's registration: its routes under /e2b, which of them authenticate
 * with a sandbox's access token instead of an API key (sandbox traffic) and what that token's
 * key may do there (access tokens themselves are e2b_token.c's), the error shapes
 * E2B's SDK reads, the sandbox a request addresses, and the /home/user path mapping. The
 * handlers are in e2b_api.c (control plane), e2b_pause.c (pause, resume, connect, fork),
 * e2b_network.c (network options), e2b_volumes.c (volumes), e2b_envd.c (envd) and e2b_interp.c
 * (the code interpreter);
 * the Connect RPC in e2b_rpc.c.
 */
#include <stdio.h>
#include <string.h>

#include "server/e2b/e2b_internal.h"
#include "server/e2b/e2b_wire.h"

/* ---- errors --------------------------------------------------------------------------------- */

static void send_error(h2o_req_t *req, int status, const char *message)
{
    json_t *doc = json_pack("{s:i, s:s}", "code", status, "message", message ? message : "");
    http_send_json(req, status, doc);
    json_decref(doc);
}

void e2b__api_error(h2o_req_t *req, int status, const char *message)
{
    send_error(req, status, message);
}

void e2b__api_not_found(h2o_req_t *req, const char *id)
{
    char msg[RB_ERR_LEN];
    snprintf(msg, sizeof(msg), "sandbox %.64s not found: it was killed, timed out or never existed", id);
    send_error(req, 404, msg);
}

void e2b__api_fail(h2o_req_t *req, rb_err e, const char *message)
{
    send_error(req, http_status_of(e), message);
}

void e2b__sandbox_error(h2o_req_t *req, int status, const char *message)
{
    send_error(req, status, message);
}

/* Errors h2o or the router answers before a handler (401 without a key, 413, ...) in E2B's shape. */
static json_t *error_doc(int status, const char *code, const char *message)
{
    (void)code;
    return json_pack("{s:i, s:s}", "code", status, "message", message ? message : "");
}

/* ---- sandbox traffic ------------------------------------------------------------------------ */

/* The paths of envd and the code interpreter (after /e2b); everything else is the control plane. */
static const char *const sandbox_paths[] = {"/health", "/files", "/execute", "/contexts", "/process.Process/",
                                            "/filesystem.Filesystem/", NULL};

static int is_sandbox_path(h2o_iovec_t path)
{
    size_t np = strlen(E2B_PREFIX);
    if (path.len <= np || memcmp(path.base, E2B_PREFIX, np) != 0)
        return 0;
    const char *rest = path.base + np;
    size_t n = path.len - np;
    for (size_t i = 0; sandbox_paths[i] != NULL; i++) {
        size_t k = strlen(sandbox_paths[i]);
        if (n >= k && memcmp(rest, sandbox_paths[i], k) == 0 &&
            (sandbox_paths[i][k - 1] == '/' || n == k || rest[k] == '/'))
            return 1;
    }
    return 0;
}

/* Sandbox traffic carries no API key: its handlers check the sandbox's access token. Nor does
 * the volume content API (the token of a VolumeAndToken instead), which answers 501 to anyone. */
static int own_auth(h2o_req_t *req)
{
    h2o_iovec_t p = req->path_normalized;
    if (p.len > strlen(E2B_PREFIX "/volumecontent/") &&
        memcmp(p.base, H2O_STRLIT(E2B_PREFIX "/volumecontent/")) == 0)
        return 1;
    if (is_sandbox_path(p) && h2o_find_header_by_str(&req->headers, H2O_STRLIT("e2b-sandbox-id"), -1) >= 0)
        return 1;
    /* a presigned file URL (e2b_sign.c) carries its signature, and no header, to /files */
    return (h2o_memis(p.base, p.len, H2O_STRLIT(E2B_PREFIX "/files")) || h2o_memis(p.base, p.len, H2O_STRLIT("/files"))) &&
           e2b__is_signed(req);
}

static const char *header(h2o_req_t *req, const char *name, size_t len)
{
    ssize_t i = h2o_find_header_by_str(&req->headers, name, len, -1);
    if (i < 0)
        return NULL;
    return http_pool_strdup(req, req->headers.entries[i].value.base, req->headers.entries[i].value.len);
}

/* Answers why the token's key may not do what it asked (403), naming the key and its role. */
static void refuse_role(rb_server *server, h2o_req_t *req, const core_caller *who, int what)
{
    char msg[RB_ERR_LEN];
    if (who->role == CORE_ROLE_VIEWER)
        snprintf(msg, sizeof(msg),
                 "the access token was handed to the API key '%s', which is a viewer (role=viewer in the api-keys "
                 "file): it reads, it runs no code and changes no file in a sandbox; ask the operator for a user or "
                 "admin key",
                 who->owner);
    else
        snprintf(msg, sizeof(msg),
                 "the access token was handed to the API key '%s', a user key, and this sandbox is another key's: "
                 "only its owner or an admin key (role=admin) may %s it",
                 who->owner, what == E2B_CHANGES ? "run code or change files in" : "read");
    e2b__sandbox_error(req, 403, msg);
    server_count_refusal(server, HTTP_REFUSED_ROLE);
}

/* The message (into msg, RB_ERR_LEN bytes) of sandbox traffic for id, which is not live: why it
 * ended, as REST says it (its status, when, and the reason runbox recorded, such as the
 * sandbox's exit code), or that it was not found. */
static void ended_reason(http_call *call, const char *id, char *msg)
{
    char err[RB_ERR_LEN];
    json_t *session = NULL;
    if (core_session_get(call->core, NULL, id, &session, err) == RB_OK &&
        e2b__state_of(json_string_value(json_object_get(session, "status"))) != E2B_STATE_PAUSED) {
        const char *status = json_string_value(json_object_get(session, "status"));
        const char *when = json_string_value(json_object_get(session, "ended_at"));
        const char *reason = json_string_value(json_object_get(session, "end_reason"));
        /* "was not found" is what E2B's proxy says and what the SDK reads as SandboxNotRunningException */
        snprintf(msg, RB_ERR_LEN, "The sandbox %.64s was not found: it has ended (%s%s%s): %.300s; create a new one", id,
                 status ? status : "ended", when ? " at " : "", when ? when : "",
                 reason ? reason : "no reason was recorded");
    } else {
        snprintf(msg, RB_ERR_LEN, "The sandbox %.64s was not found: it was killed, timed out or never existed", id);
    }
    json_decref(session);
}

int e2b__sandbox_of(http_call *call, int what, e2b_sandbox *out)
{
    h2o_req_t *req = call->req;
    char msg[RB_ERR_LEN];
    const char *id = header(req, H2O_STRLIT("e2b-sandbox-id"));
    if (id == NULL || id[0] == '\0' || strlen(id) > 64) {
        e2b__sandbox_error(req, 400,
                           "sandbox traffic needs the E2b-Sandbox-Id header: set E2B_SANDBOX_URL to runboxd's /e2b "
                           "(the SDK then sends it)");
        return -1;
    }
    ssize_t hi = h2o_find_header_by_str(&req->headers, H2O_STRLIT("e2b-sandbox-id"), -1);
    int control = strlen(id) != req->headers.entries[hi].value.len; /* a NUL: HTTP/1 carries none, HTTP/2 might */
    for (const char *p = id; *p != '\0'; p++)
        control |= (unsigned char)*p < 0x20 || *p == 0x7f;
    if (control) {
        e2b__sandbox_error(req, 400,
                           "the E2b-Sandbox-Id header holds a control character: a sandbox id never does; send the "
                           "sandboxID of the create or connect answer (the SDK does)");
        return -1;
    }
    const char *given = header(req, H2O_STRLIT("x-access-token"));
    if (what != E2B_NO_TOKEN && given == NULL) {
        /* before any lookup: a caller without a token learns nothing of which sandboxes exist */
        e2b__sandbox_error(req, 401,
                           "sandbox traffic needs an access token in X-Access-Token: the envdAccessToken that create, "
                           "connect and get_info hand to a key that may run code in the sandbox (its owner or an admin "
                           "key; the SDK sends it). A viewer key (role=viewer) is handed none: it runs no code and "
                           "changes no file in a sandbox");
        return -1;
    }
    json_t *extra = NULL, *session = NULL;
    char err[RB_ERR_LEN];
    /* Trusted lookups (who NULL): the access token decides who may use the sandbox. */
    if (core_session_extra(call->core, NULL, id, E2B_EXTRA, &extra, err) != RB_OK ||
        core_session_get(call->core, NULL, id, &session, err) != RB_OK) {
        json_decref(extra);
        ended_reason(call, id, msg);
        json_decref(session);
        e2b__sandbox_error(req, 502, msg);
        return -1;
    }
    const char *owner = e2b__owner_of(session);
    json_t *tokens = extra != NULL ? json_deep_copy(extra) : json_object();
    json_decref(extra);
    e2b__tokens_upgrade(tokens, owner);
    const char *key = e2b__token_holder(tokens, given);
    const core_caller *who = NULL;
    int status = 0;
    if (key == NULL) {
        status = 401;
        snprintf(msg, sizeof(msg), "%s",
                 given == NULL
                     ? "this sandbox needs an access token in X-Access-Token: the envdAccessToken that create, connect "
                       "and get_info hand to a key that may run code in it (its owner or an admin key; the SDK sends "
                       "it). A viewer key (role=viewer) is handed none: it runs no code and changes no file in a "
                       "sandbox"
                     : "the X-Access-Token does not belong to this sandbox (use the envdAccessToken of its create, "
                       "connect or get_info answer)");
    } else if (server_has_keys(call->server) && (who = server_caller(call->server, key)) == NULL) {
        status = 401;
        snprintf(msg, sizeof(msg),
                 "the access token was handed to the API key '%.64s', which is no longer in runboxd's key file", key);
    }
    int allowed = who == NULL || (what == E2B_CHANGES ? e2b__may_change(who, owner) : core_caller_owns(who, owner));
    json_decref(tokens);
    json_decref(session);
    if (what != E2B_NO_TOKEN && status != 0) {
        e2b__sandbox_error(req, status, msg);
        return -1;
    }
    if (what != E2B_NO_TOKEN && !allowed) {
        refuse_role(call->server, req, who, what);
        return -1;
    }
    out->server = call->server;
    out->core = call->core;
    out->cfg = call->cfg;
    out->who = status == 0 && allowed ? who : NULL;
    out->session_id = id;
    out->workdir = E2B_WORKDIR;
    return 0;
}

/* ---- paths ---------------------------------------------------------------------------------- */

const char *e2b__path(const char *path, char *err)
{
    const char *mapped = e2b_path_map(path);
    if (mapped == NULL) {
        if (path == NULL || path[0] == '\0')
            rb_fail(RB_EINVAL, err, "path: give a file path under %s", E2B_HOME);
        else
            rb_fail(RB_EFORBIDDEN, err,
                    "path '%.200s' is outside %s: runbox sandboxes expose only the user's home folder (its "
                    "workspace) to file calls",
                    path, E2B_HOME);
        return NULL;
    }
    return mapped;
}

/* ---- registration --------------------------------------------------------------------------- */

void e2b_register(rb_server *s)
{
    /* Literal paths (E2B_PREFIX spelt out) so that tests/integration/test_openapi.py reads them. */
    static const http_route routes[] = {
        /* control plane (API key) */
        {"POST", "/e2b/v2/sandboxes", e2b__create},
        {"POST", "/e2b/sandboxes", e2b__create},
        {"GET", "/e2b/v2/sandboxes", e2b__list},
        {"GET", "/e2b/sandboxes", e2b__list},
        {"GET", "/e2b/sandboxes/metrics", e2b__unsupported},
        {"DELETE", "/e2b/sandboxes/metrics", e2b__unsupported},
        {"POST", "/e2b/v2/sandboxes/{id}/connect", e2b__connect},
        {"POST", "/e2b/sandboxes/{id}/connect", e2b__connect},
        {"GET", "/e2b/sandboxes/{id}", e2b__get},
        {"DELETE", "/e2b/sandboxes/{id}", e2b__kill},
        {"POST", "/e2b/sandboxes/{id}/timeout", e2b__set_timeout},
        {"POST", "/e2b/sandboxes/{id}/pause", e2b__pause},
        {"POST", "/e2b/sandboxes/{id}/resume", e2b__resume},
        {"POST", "/e2b/sandboxes/{id}/snapshots", e2b__unsupported},
        {"POST", "/e2b/sandboxes/{id}/fork", e2b__fork},
        {"POST", "/e2b/sandboxes/{id}/refreshes", e2b__unsupported},
        {"GET", "/e2b/sandboxes/{id}/metrics", e2b__metrics},
        {"GET", "/e2b/sandboxes/{id}/logs", e2b__unsupported},
        {"GET", "/e2b/v2/sandboxes/{id}/logs", e2b__unsupported},
        {"PUT", "/e2b/sandboxes/{id}/network", e2b__network_update},
        {"POST", "/e2b/volumes", e2b__volume_create},
        {"GET", "/e2b/volumes", e2b__volume_list},
        {"GET", "/e2b/volumes/{id}", e2b__volume_get},
        {"DELETE", "/e2b/volumes/{id}", e2b__volume_delete},
        /* the volume content API (a bearer token of its own; not served: 501) */
        {"GET", "/e2b/volumecontent/{id}/file", e2b__volume_content},
        {"PUT", "/e2b/volumecontent/{id}/file", e2b__volume_content},
        {"GET", "/e2b/volumecontent/{id}/dir", e2b__volume_content},
        {"POST", "/e2b/volumecontent/{id}/dir", e2b__volume_content},
        {"GET", "/e2b/volumecontent/{id}/path", e2b__volume_content},
        {"PATCH", "/e2b/volumecontent/{id}/path", e2b__volume_content},
        {"DELETE", "/e2b/volumecontent/{id}/path", e2b__volume_content},
        /* envd (port 49983; access token) */
        {"GET", "/e2b/health", e2b__health},
        {"GET", "/e2b/files", e2b__files_read},
        {"POST", "/e2b/files", e2b__files_write},
        /* presigned URLs: the SDK joins "/files" to E2B_SANDBOX_URL, which drops its /e2b */
        {"GET", "/files", e2b__files_read},
        {"POST", "/files", e2b__files_write},
        {"POST", "/e2b/process.Process/{method}", e2b__rpc},
        {"POST", "/e2b/filesystem.Filesystem/{method}", e2b__rpc},
        /* the code interpreter (port 49999) */
        {"POST", "/e2b/execute", e2b__execute},
        {"GET", "/e2b/contexts", e2b__contexts_list},
        {"POST", "/e2b/contexts", e2b__contexts_create},
        {"DELETE", "/e2b/contexts/{id}", e2b__context_delete},
        {"POST", "/e2b/contexts/{id}/restart", e2b__context_restart},
    };
    http_protocol p = {.name = "e2b",
                       .routes = routes,
                       .nroutes = sizeof(routes) / sizeof(routes[0]),
                       .error_prefix = "/e2b/",
                       .error_doc = error_doc,
                       .own_auth = own_auth};
    server_register(s, &p);
}

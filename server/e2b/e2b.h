/*
 * e2b: E2B's API and sandbox protocols on runboxd, so that E2B's SDKs (e2b,
 * e2b-code-interpreter) run unchanged against it with E2B_API_URL and E2B_SANDBOX_URL both set
 * to http://HOST:PORT/e2b. An E2B sandbox is a runbox session (same id space, visible through
 * REST and MCP). Routes live under /e2b: the control plane (/e2b/v2/sandboxes, /e2b/sandboxes)
 * authenticates with runbox's API keys (X-API-KEY); sandbox traffic carries E2b-Sandbox-Id and
 * E2b-Sandbox-Port (49983 envd, 49999 the code interpreter) and authenticates with the
 * access token the sandbox's answers handed to the caller's key (X-Access-Token). docs/e2b.md
 * says what is supported.
 */
#ifndef RB_SERVER_E2B_H
#define RB_SERVER_E2B_H

#include "server/http.h"

/** The path prefix of every E2B route. */
#define E2B_PREFIX "/e2b"
/** The ports E2B's SDK names in E2b-Sandbox-Port. */
#define E2B_ENVD_PORT 49983
#define E2B_INTERP_PORT 49999
/** What /home/user (the E2B user's home) maps to inside the session's container. */
#define E2B_HOME "/home/user"
#define E2B_WORKDIR "/workspace"

/** Registers the E2B routes on s. */
void e2b_register(rb_server *s);

/* A sandbox a request is addressed to, after e2b.c has checked it: the session exists, is
 * live, and the request carried an access token of it whose key may make the call. Everything is
 * borrowed and valid for the request's life. */
typedef struct e2b_sandbox {
    rb_server *server;
    rb_core *core;
    const server_settings *cfg;
    const core_caller *who;  /* the key the access token was handed to (the owner or an admin), for
                                core calls (NULL: runboxd without keys, or a call that needs no token) */
    const char *session_id;  /* runbox session id == E2B sandboxID */
    const char *workdir;     /* E2B_WORKDIR: what /home/user maps to */
} e2b_sandbox;

/** Answers (now or later) a Connect RPC on envd's port (server/e2b/e2b_rpc.c): method is the
 * path after the /e2b prefix without its leading '/', e.g. "process.Process/Start". Returns 0. */
int e2b_rpc_handle(h2o_req_t *req, const e2b_sandbox *sbx, const char *method);

#endif

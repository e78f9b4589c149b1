/*
 * agentrun_internal.h: what the files of server/agentrun share, and nothing outside the folder
 * may use: AgentRun's documents, which its REST routes (rest.c) and its MCP tools (mcp.c) both
 * answer with, and the one operation of several core calls, creating a session with its folders
 * (agentrun.c); and each protocol's registration, which agentrun_register (agentrun.h) calls.
 * Its shapes cannot live beside runbox's own on the same routes (AgentRun's client builds a
 * dataclass from exactly four keys of POST /sessions, and its packages are names where runbox
 * lists {name, version}), hence the /agentrun prefix.
 *
 * AgentRun's layout: code runs in a working folder holding src/ (where uploads go) and artifacts/
 * (where code saves what is to be downloaded). Here that folder is the session's /workspace, so
 * code reads 'src/data.csv' and saves 'artifacts/plot.png'; sessions made here get both folders.
 *
 * The documents are built from core's (pure); no HTTP and no JSON-RPC in agentrun.c. JSON
 * arguments are borrowed, results new references.
 */
#ifndef RB_SERVER_AGENTRUN_INTERNAL_H
#define RB_SERVER_AGENTRUN_INTERNAL_H

#include <jansson.h>

#include "core/core.h"
#include "server/agentrun/agentrun.h"

#define AGENTRUN_WORKDIR "/workspace"
#define AGENTRUN_SOURCE_PATH "/workspace/src"
#define AGENTRUN_ARTIFACT_PATH "/workspace/artifacts"

/** An error document in FastAPI's shape, which AgentRun's REST client reads ("detail"), with
 * runbox's error object beside it: {detail: message, error: {code, message}}. */
json_t *agentrun__error_doc(const char *code, const char *message);

/** {session_id, workdir, source_path, artifact_path} of a session. */
json_t *agentrun__session(const char *session_id);
/** {active_sessions: [ids], count} from core's session list ({sessions: [...]}). */
json_t *agentrun__session_ids(json_t *list);
/** {packages: [names], count} from core_packages' answer ({packages: [{name, version}]}). */
json_t *agentrun__packages(json_t *packages);
/** {status: "healthy" | "unhealthy", active_sessions} from core_health's document and the
 * number of live sessions the caller has. */
json_t *agentrun__health(json_t *health, size_t active_sessions);

/** The core_execute request for AgentRun's execute (code: the code; ignore_dependencies and
 * ignore_unsafe_functions: AgentRun's lists of names, each may be NULL or null): {session_id,
 * code, disabled_rules?}, where each function name n turns off the code policy rules builtin:n,
 * name:n and import:n (and open:write for open). ignore_dependencies is only checked: runbox
 * installs nothing on its own, so there is nothing to leave out. NULL with err when code is not
 * a string or a list is not a list of strings. */
json_t *agentrun__execute_request(const char *session_id, json_t *code, json_t *ignore_dependencies,
                                  json_t *ignore_unsafe_functions, char *err);
/** {success, output, session_id, request_id, status} from an execution's result document:
 * success when it completed; output is what a terminal would show, in order (stdout and
 * stderr, the repr of a final expression, the traceback, and notes on timeouts, truncation and
 * restarts). */
json_t *agentrun__execution(json_t *doc);

/** Checks a file name for src/ as AgentRun does: RB_EFORBIDDEN for '/', '\\' or "..", RB_EINVAL
 * for an empty name or one that starts with '.' (err says which); RB_OK otherwise. */
rb_err agentrun__filename_check(const char *name, char *err);
/** Checks a download's src_path as AgentRun does: RB_EFORBIDDEN for "..", RB_EINVAL for an empty
 * path; RB_OK otherwise (relative paths are relative to the working folder, /workspace). */
rb_err agentrun__src_path_check(const char *src_path, char *err);

/** A session creation in progress (agentrun__session_create). */
typedef struct agentrun_op agentrun_op;
/** Creates a python session and its src/ and artifacts/ folders, then answers cb with
 * agentrun__session's document (or an error; a session whose folders could not be made is
 * deleted again). Async like core_session_create: cb runs once, unless agentrun__cancel. */
rb_err agentrun__session_create(rb_core *c, const core_caller *who, core_cb cb, void *data, agentrun_op **handle,
                                char *err);
/** Detaches cb from a creation in progress and frees it (the session may still come up, as
 * with core_cancel, perhaps without its folders). Not from inside cb. Accepts NULL. */
void agentrun__cancel(agentrun_op *op);

/** Registers the REST routes under /agentrun on s (rest.c). */
void agentrun__rest_register(rb_server *s);
/** Adds AgentRun's tools to mcp and registers /agentrun/mcp on s (mcp.c); RB_EINTERNAL when a
 * tool definition does not parse (nothing is registered then). */
rb_err agentrun__mcp_register(rb_server *s, mcp_server *mcp, char *err);

#endif

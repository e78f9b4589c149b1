/*
 * agentrun: what runboxd's AgentRun-compatible surface shares between its two protocols, the
 * REST routes under /agentrun (server/rest/agentrun.c) and the MCP tools at /agentrun/mcp
 * (server/mcp/mcp_agentrun.c). AgentRun+ (PyPI agentrun-plus) has two clients that promise to be
 * interchangeable, AgentRunAPIClient (REST) and AgentRunMCPClient (MCP); pointed at
 * http://host:port/agentrun they work unmodified. Its shapes cannot live beside runbox's own on
 * the same routes (its client builds a dataclass from exactly four keys of POST /sessions, and
 * its packages are names where runbox lists {name, version}), hence the prefix.
 *
 * AgentRun's layout: code runs in a working folder holding src/ (where uploads go) and artifacts/
 * (where code saves what is to be downloaded). Here that folder is the session's /workspace, so
 * code reads 'src/data.csv' and saves 'artifacts/plot.png'; sessions made here get both folders.
 *
 * This module builds AgentRun's documents from core's (pure) and runs the one operation of
 * several core calls, creating a session with its folders. No HTTP and no JSON-RPC. JSON
 * arguments are borrowed, results new references.
 */
#ifndef RB_SERVER_AGENTRUN_H
#define RB_SERVER_AGENTRUN_H

#include <jansson.h>

#include "core/core.h"

#define AGENTRUN_WORKDIR "/workspace"
#define AGENTRUN_SOURCE_PATH "/workspace/src"
#define AGENTRUN_ARTIFACT_PATH "/workspace/artifacts"

/** An error document in FastAPI's shape, which AgentRun's REST client reads ("detail"), with
 * runbox's error object beside it: {detail: message, error: {code, message}}. */
json_t *agentrun_error_doc(const char *code, const char *message);

/** {session_id, workdir, source_path, artifact_path} of a session. */
json_t *agentrun_session(const char *session_id);
/** {active_sessions: [ids], count} from core's session list ({sessions: [...]}). */
json_t *agentrun_session_ids(json_t *list);
/** {packages: [names], count} from core_packages' answer ({packages: [{name, version}]}). */
json_t *agentrun_packages(json_t *packages);
/** {status: "healthy" | "unhealthy", active_sessions} from core_health's document and the
 * number of live sessions the caller has. */
json_t *agentrun_health(json_t *health, size_t active_sessions);

/** The core_execute request for AgentRun's execute (code: the code; ignore_dependencies and
 * ignore_unsafe_functions: AgentRun's lists of names, each may be NULL or null): {session_id,
 * code, disabled_rules?}, where each function name n turns off the code policy rules builtin:n,
 * name:n and import:n (and open:write for open). ignore_dependencies is only checked: runbox
 * installs nothing on its own, so there is nothing to leave out. NULL with err when code is not
 * a string or a list is not a list of strings. */
json_t *agentrun_execute_request(const char *session_id, json_t *code, json_t *ignore_dependencies,
                                 json_t *ignore_unsafe_functions, char *err);
/** {success, output, session_id, request_id, status} from an execution's result document:
 * success when it completed; output is what a terminal would show, in order (stdout and
 * stderr, the repr of a final expression, the traceback, and notes on timeouts, truncation and
 * restarts). */
json_t *agentrun_execution(json_t *doc);

/** Checks a file name for src/ as AgentRun does: RB_EFORBIDDEN for '/', '\\' or "..", RB_EINVAL
 * for an empty name or one that starts with '.' (err says which); RB_OK otherwise. */
rb_err agentrun_filename_check(const char *name, char *err);
/** Checks a download's src_path as AgentRun does: RB_EFORBIDDEN for "..", RB_EINVAL for an empty
 * path; RB_OK otherwise (relative paths are relative to the working folder, /workspace). */
rb_err agentrun_src_path_check(const char *src_path, char *err);

/** A session creation in progress (agentrun_session_create). */
typedef struct agentrun_op agentrun_op;
/** Creates a python session and its src/ and artifacts/ folders, then answers cb with
 * agentrun_session's document (or an error; a session whose folders could not be made is
 * deleted again). Async like core_session_create: cb runs once, unless agentrun_cancel. */
rb_err agentrun_session_create(rb_core *c, const core_caller *who, core_cb cb, void *data, agentrun_op **handle,
                               char *err);
/** Detaches cb from a creation in progress and frees it (the session may still come up, as
 * with core_cancel, perhaps without its folders). Not from inside cb. Accepts NULL. */
void agentrun_cancel(agentrun_op *op);

#endif

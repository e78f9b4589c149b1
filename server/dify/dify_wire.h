/*
 * dify_wire: what runboxd's Dify surface (server/dify/dify.h) reads and writes, kept free of HTTP
 * and of core so that a unit test and a fuzz target reach it alone: the body of
 * POST /v1/sandbox/run read as dify-sandbox's controller binds it, dify-sandbox's answer envelope,
 * the run's data built from a runbox execution's result document, and the one table from runbox's
 * errors to dify-sandbox's codes. Sources it follows (github.com/langgenius/dify-sandbox):
 * internal/controller/base.go (BindRequest), internal/controller/run.go (the request and its
 * answers), internal/types/response.go (the envelope), internal/service/run_code.go (the run's
 * data), internal/core/runner/output_capture.go (timeouts) and internal/core/runner/python/
 * prescript.py (what an uncaught exception does). What Dify parses of it is
 * api/core/helper/code_executor/code_executor.py in github.com/langgenius/dify.
 *
 * JSON arguments are borrowed; returned documents are new references.
 */
#ifndef RB_SERVER_DIFY_WIRE_H
#define RB_SERVER_DIFY_WIRE_H

#include <stddef.h>

#include <jansson.h>

#include "base/base.h"

/** dify-sandbox's "success" code and message (types.SuccessResponse). */
#define DIFY_SUCCESS 0
/** Exit codes dify-sandbox reports: an uncaught Python exception (prescript.py's excepthook calls
 * sys.exit(-1): 255), an uncaught JavaScript one (node: 1), and a process it killed (-1). */
#define DIFY_EXIT_PYTHON_ERROR 255
#define DIFY_EXIT_NODE_ERROR 1
#define DIFY_EXIT_KILLED (-1)

/** POST /v1/sandbox/run's body, as read. Pointers borrow from the parsed document. */
typedef struct dify_run_request {
    const char *language; /* runbox's name: "python" (Dify's "python3") or "javascript" ("nodejs") */
    const char *code;     /* never empty */
    const char *preload;  /* "" when none */
    int enable_network;
} dify_run_request;

/** What reading a run request decided. */
typedef enum dify_parse {
    DIFY_PARSE_OK,
    DIFY_PARSE_BIND,     /* the body does not bind (gin's message in msg): HTTP 400, or 200 (see below) */
    DIFY_PARSE_LANGUAGE, /* a language other than python3 and nodejs: HTTP 400 "unsupported language" */
} dify_parse;

/** Reads a run request from bytes[0..len) as dify-sandbox binds it: a JSON object whose
 * "language" and "code" are non-empty strings (gin's `binding:"required"`), "preload" a string
 * and "enable_network" a boolean (absent or null: "" and false); other keys are ignored. On
 * DIFY_PARSE_OK, *doc (a new reference the caller decrefs) holds what out borrows. Otherwise
 * *doc is NULL and msg[0..msglen) says why, in gin's words where gin has them ("Key: 'Language'
 * Error:Field validation for 'Language' failed on the 'required' tag", "json: cannot unmarshal
 * number into Go struct field .code of type string", "EOF"), or "unsupported language". */
dify_parse dify_run_parse(const char *bytes, size_t len, dify_run_request *out, json_t **doc, char *msg,
                          size_t msglen);

/** The HTTP status of a body that does not bind: gin's BindJSON answers 400 when Content-Type is
 * exactly "application/json" (what Dify sends), while ShouldBind, used for any other type, leaves
 * the status at the 200 of the answer written after it. content_type may be NULL. */
int dify_bind_status(const char *content_type, size_t len);

/** dify-sandbox's envelope {"code", "message", "data"}; data is stolen (NULL: null). For an error
 * code >= 0 becomes -1, as types.ErrorResponse does. */
json_t *dify_envelope(int code, const char *message, json_t *data);

/** The HTTP status and dify-sandbox code of a runbox error e: capacity (RB_EBUSY, RB_EUNAVAILABLE)
 * is HTTP 503 -503, what Dify reports as "Code execution service is unavailable"; everything else
 * is HTTP 200 with a negative code (-400 bad input, -403 refused, -413 too large, -429 the key's
 * quota, -500 a failure), which Dify reports with the message, as dify-sandbox answers a failed
 * run. */
void dify_error_of(rb_err e, int *status, int *code);

/** The run's data {stdout, stderr, error, exit_code} (service/run_code.go's RunCodeResponse) from
 * a runbox execution's result document doc (core's: stdout, stderr, status, error{ename, evalue,
 * traceback}, truncated, dropped_bytes, reset_reason). prior_stdout and prior_stderr (may be
 * NULL) come first: what the preload printed. python says which interpreter ran it (its exit
 * codes differ). note (may be NULL) is added to stderr and error when the run failed (only then: a
 * note on every node's output of a workflow would be noise).
 *   completed -> exit_code 0, error "";
 *   error -> the traceback goes to stderr as the interpreter prints it, exit_code 255 (python) or
 *     1 (node), error "process exited with code N\n" + stderr; Python's SystemExit exits with its
 *     code as the process would (0 or None: a success);
 *   timeout -> exit_code -1, error "process exited with code -1\nerror: timeout\n" + stderr;
 *   cancelled, or an interpreter that died -> exit_code -1, "error: <why>". */
json_t *dify_run_data(const char *prior_stdout, const char *prior_stderr, json_t *doc, int python, const char *note);

/** {"dependencies": [{name, version}]} from core_packages' answer ({packages: [{name, version}]}). */
json_t *dify_dependencies(json_t *packages);

#endif

/*
 * dify: runboxd's Dify-compatible surface, one protocol family in one folder. Dify's code nodes
 * (api/core/helper/code_executor/code_executor.py in github.com/langgenius/dify) send their code
 * to dify-sandbox (github.com/langgenius/dify-sandbox); pointed at runboxd instead
 * (CODE_EXECUTION_ENDPOINT=http://host:port, CODE_EXECUTION_API_KEY=<a runbox API key>) they run
 * unchanged. Served: POST /v1/sandbox/run, GET /v1/sandbox/dependencies, POST
 * /v1/sandbox/dependencies/update and GET /v1/sandbox/dependencies/refresh, answered in
 * dify-sandbox's shapes (server/dify/dify_wire.h). GET /health stays runbox's own (REST): Dify
 * never calls it, and dify-sandbox's container health check only needs a 200.
 *
 * Each run is a fresh runbox session (from the warm pool when nothing but the language is asked),
 * deleted when the run has answered: Dify's nodes are stateless. Its sessions belong to the API
 * key Dify sends as X-Api-Key, and are runbox sessions like any other while they run.
 */
#ifndef RB_SERVER_DIFY_H
#define RB_SERVER_DIFY_H

#include "server/http.h"

/** Registers the routes under /v1/sandbox/ on s; a run's timeout is cfg->dify_timeout (the
 * server's settings). Errors h2o or the router answer under that prefix come in dify-sandbox's
 * envelope, and a 401 (no API key, or one that is not valid) with no body, as dify-sandbox's
 * middleware.Auth answers. When the server stops, the code of runs in flight is cancelled: they
 * answer 503 (Dify: "Code execution service is unavailable") and delete their sessions. */
void dify_register(rb_server *s);

#endif

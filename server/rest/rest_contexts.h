/*
 * rest_contexts: the REST handlers of a session's code contexts (GET/POST
 * /sessions/{id}/contexts, DELETE /sessions/{id}/contexts/{context}; core/core.h "Code
 * contexts"); rest.c routes to them. A context's restart is an execution (POST /execute with
 * "restart": true and "context"). Private to server/rest/.
 */
#ifndef RB_SERVER_REST_CONTEXTS_H
#define RB_SERVER_REST_CONTEXTS_H

#include "server/http.h"

int rest_contexts_list(http_call *call);
int rest_context_create(http_call *call);
int rest_context_delete(http_call *call);

#endif

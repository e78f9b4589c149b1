/*
 * agentrun (REST): the route handlers of runboxd's AgentRun-compatible REST API under /agentrun
 * (server/rest/agentrun.c), listed in rest.c's route table beside runbox's own routes. The
 * documents they answer are server/agentrun.h's.
 */
#ifndef RB_SERVER_REST_AGENTRUN_H
#define RB_SERVER_REST_AGENTRUN_H

#include "server/http.h"

int agentrun_route_root(http_call *call);           /* GET /agentrun/ */
int agentrun_route_health(http_call *call);         /* GET /agentrun/health */
int agentrun_route_packages(http_call *call);       /* GET /agentrun/packages */
int agentrun_route_session_create(http_call *call); /* POST /agentrun/sessions */
int agentrun_route_session_list(http_call *call);   /* GET /agentrun/sessions */
int agentrun_route_session_get(http_call *call);    /* GET /agentrun/sessions/{id} */
int agentrun_route_session_delete(http_call *call); /* DELETE /agentrun/sessions/{id} */
int agentrun_route_execute(http_call *call);        /* POST /agentrun/sessions/{id}/execute */
int agentrun_route_copy_to(http_call *call);        /* POST /agentrun/sessions/{id}/copy-to */
int agentrun_route_copy_from(http_call *call);      /* POST /agentrun/sessions/{id}/copy-from */

/** http_protocol.error_doc for paths under /agentrun: errors the HTTP layer answers itself
 * (401 without an API key, 403 Origin, 413, ...) carry FastAPI's "detail" too. */
json_t *agentrun_route_error_doc(int status, const char *code, const char *message);

#endif

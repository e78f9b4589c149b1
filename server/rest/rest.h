/*
 * rest: the REST API of runboxd (openapi.yaml): each handler reads the request, calls one
 * core/ function and encodes its answer or error. No session logic lives here.
 */
#ifndef RB_SERVER_REST_H
#define RB_SERVER_REST_H

#include <stddef.h>

#include "server/http.h"

/** Registers the REST routes on s (server_register); they need no state of their own. */
void rest_register(rb_server *s);

#endif

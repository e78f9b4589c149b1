/*
 * rest: the REST API of runboxd (openapi.yaml): each handler reads the request, calls one
 * core/ function and encodes its answer or error. No session logic lives here.
 */
#ifndef RB_SERVER_REST_H
#define RB_SERVER_REST_H

#include <stddef.h>

#include "server/http.h"

/** The REST routes (static table); *n receives their count. */
const http_route *rest_routes(size_t *n);

#endif

/*
 * rest_volumes: the REST handlers of named volumes (POST/GET/DELETE /volumes, core/core.h
 * "Volumes"); rest.c routes to them. Private to server/rest/.
 */
#ifndef RB_SERVER_REST_VOLUMES_H
#define RB_SERVER_REST_VOLUMES_H

#include "server/http.h"

int rest_volume_create(http_call *call);
int rest_volume_list(http_call *call);
int rest_volume_get(http_call *call);
int rest_volume_delete(http_call *call);

#endif

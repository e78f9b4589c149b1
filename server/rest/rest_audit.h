/*
 * rest_audit: GET /audit, the audit trail (core/core.h "The audit trail"); rest.c routes to it.
 * Private to server/rest/.
 */
#ifndef RB_SERVER_REST_AUDIT_H
#define RB_SERVER_REST_AUDIT_H

#include "server/http.h"

int rest_audit(http_call *call);

#endif

/*
 * metrics: GET /metrics, runboxd's numbers in the Prometheus text exposition format (0.0.4),
 * the way operators watch a service. It only translates: the numbers come from core/stats.h
 * (sessions, executions, the warm pool, Docker), server_stats (HTTP requests, refusals, event
 * streams) and /proc/self/statm (resident memory). Label values come from fixed sets only.
 * The route is an ordinary one: the router's Host and Origin checks apply to it.
 */
#ifndef RB_SERVER_METRICS_H
#define RB_SERVER_METRICS_H

#include "core/core.h"
#include "server/http.h"

/** Registers GET /metrics on s (server_register), exposing core's numbers and s's own; core is
 * borrowed and must outlive the server. */
void metrics_register(rb_server *s, rb_core *core);

#endif

/*
 * jupyter: a Jupyter Kernel Gateway in front of runbox's sessions (issue 25; docs/jupyter.md),
 * under /jupyter, so that http://HOST:PORT/jupyter is the URL Open WebUI, AutoGen's Jupyter
 * executor, Jupyter Server's --gateway-url and notebook runners take. A kernel is a runbox
 * session (limits, owner, restart survival; visible through REST and MCP); its id is the
 * session's 32 hex digits as a UUID (s_0123...ef is 01234567-89ab-...), the shape Jupyter Server
 * routes, and the session's own id is taken too:
 * /api/kernelspecs, /api/kernels (list, start, get, delete, interrupt, restart) and the
 * websocket /api/kernels/{id}/channels speaking the messaging protocol 5.3 in its JSON form.
 * API keys come as ?token=, Authorization: token or Bearer, or a login cookie (password mode).
 */
#ifndef RB_SERVER_JUPYTER_H
#define RB_SERVER_JUPYTER_H

#include "server/http.h"

/** Registers the Jupyter routes on s (server_register). */
void jupyter_register(rb_server *s, rb_core *core);

#endif

/*
 * console: the operator's console at /console, a web page runboxd serves itself (docs/console.md).
 * This module only serves its three static files (index.html, console.js, console.css), embedded
 * in the binary at build time (cmake/embed_console.cmake turns server/console/static/ into byte
 * arrays), with a strict Content-Security-Policy. The files hold no data and need no API key;
 * the page reads and changes everything through the REST API with the key the operator types in,
 * sent as Authorization: Bearer, so keys, roles and the Host/Origin checks apply as to any client.
 * It sets no cookie. It is not a second API: it has no route but the files.
 */
#ifndef RB_SERVER_CONSOLE_H
#define RB_SERVER_CONSOLE_H

#include "server/http.h"

/** Registers GET /console, /console/ (index.html) and /console/{file} on s (server_register);
 * any other name under /console answers 404. */
void console_register(rb_server *s);

#endif

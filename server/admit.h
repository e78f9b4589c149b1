/*
 * admit: whether a request may reach runboxd at all, judged from its Host and Origin headers
 * before any route runs. It is the defence against DNS rebinding (a web page the operator
 * visits rebinds its own name to 127.0.0.1 and drives the API: its requests carry that name in
 * Host) and against cross-origin calls from browsers (Origin). Pure functions over the header
 * bytes (untrusted, not NUL-terminated); the router answers 403 when they say no.
 *
 * Host: loopback names (localhost, 127.0.0.1, [::1]) are always allowed, and so is the host of
 * the listen address unless it is a wildcard (0.0.0.0, [::]); anything else must be listed in
 * allowed-hosts (names, optionally with a port, which is ignored; "*" allows any). A request
 * without Host (HTTP/1.0) is allowed: browsers always send one.
 * Origin: absent (not a browser), or http(s)://localhost, 127.0.0.1 or [::1] with any port,
 * or one of allowed-origins ("*" allows any).
 */
#ifndef RB_SERVER_ADMIT_H
#define RB_SERVER_ADMIT_H

#include <stddef.h>

#include "server/settings.h"

/** Whether the Host header value host[0..len) may be served (host NULL: no header). */
int admit_host(const server_settings *cfg, const char *host, size_t len);
/** Whether the Origin header value origin[0..len) may be served (origin NULL: no header). */
int admit_origin(const server_settings *cfg, const char *origin, size_t len);

#endif

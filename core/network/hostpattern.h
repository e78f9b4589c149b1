/*
 * hostpattern: one host pattern of a network policy, as runbox's egress proxy reads it
 * (docker/web/egress_policy.py, whose grammar this follows exactly): `pypi.org` (that name),
 * `*.pythonhosted.org` (any name below it, not the bare name), either with an optional `:PORT`.
 * Names are compared in lower case without a trailing dot; an IP address is never a pattern.
 * Pure functions on caller-owned structs: no allocation, no I/O.
 *
 * Part of the network room (core/network/), public: the heart checks a caller's request
 * against the operator's lists with it.
 */
#ifndef RB_CORE_NETWORK_HOSTPATTERN_H
#define RB_CORE_NETWORK_HOSTPATTERN_H

#include <stddef.h>

#define HOSTPATTERN_NAME_MAX 253  /* characters of a DNS name, without its trailing dot */
#define HOSTPATTERN_LABEL_MAX 63  /* characters of one label */
#define HOSTPATTERN_TEXT_MAX 264  /* bytes of a pattern's canonical text with its NUL: "*." name ":65535" */
#define HOSTPATTERN_WHY_MAX 160   /* bytes of the reason a pattern is refused */

typedef struct hostpattern {
    char domain[HOSTPATTERN_NAME_MAX + 1]; /* lower case, no trailing dot, no "*." */
    int wildcard;                          /* `*.domain`: the names below domain */
    int port;                              /* 1..65535, or 0 when the pattern names no port */
} hostpattern;

/** Parses text[0..len) (any bytes) into *out. Returns 0, or -1 with why (a phrase such as "the
 * port is not a number") in why[0..HOSTPATTERN_WHY_MAX). */
int hostpattern_parse(const char *text, size_t len, hostpattern *out, char *why);
/** The canonical spelling of p ("*.example.org:8080") in out[0..HOSTPATTERN_TEXT_MAX). */
void hostpattern_text(const hostpattern *p, char *out);
/** Whether every host and port that allow pattern req lets through is also let through by allow
 * pattern max, given the proxy's default ports (a pattern without a port allows those):
 * `a.b.org` is within `*.b.org`, `*.c.b.org` within `*.b.org`, `x:8080` within `x:8080` only,
 * `x:443` within `x`. */
int hostpattern_within(const hostpattern *req, const hostpattern *max, const int *default_ports, size_t n_ports);

#endif

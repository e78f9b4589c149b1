/*
 * query: the query string of a request URI ("name=value&..." after the '?'), read as runboxd's
 * routes read it: the first pair with the name asked for, its value percent-decoded leniently
 * (a '%' not followed by two hex digits stays itself; '+' stays a '+', RFC 3986), and whether
 * the query carries a NUL that a decoded value would hide. Pure functions over the bytes of the
 * URI (untrusted, not NUL-terminated); http_query_param puts them on h2o. Fuzzed by
 * tests/fuzz/fuzz_query.c.
 */
#ifndef RB_SERVER_QUERY_H
#define RB_SERVER_QUERY_H

#include <stddef.h>
#include <stdint.h>

/**
 * Finds the first pair of the query q[0..n) (without the '?') whose name is name, compared byte
 * for byte (names are not decoded). Pairs are separated by '&'; a pair without '=' has an empty
 * value. Returns 1 and the raw value as *value (inside q) and *len, or 0 when there is none.
 */
int query_find(const char *q, size_t n, const char *name, const char **value, size_t *len);

/**
 * Decodes the raw value v[0..n) into out, which has room for n + 1 bytes: every %XX (hex, either
 * case) becomes its byte, %00 included (see query_holds_nul); anything else is copied. Returns
 * the decoded length (at most n); out[length] is a NUL.
 */
size_t query_decode(const char *v, size_t n, char *out);

/** Whether the query q[0..n) holds "%00" or a NUL byte: a NUL in a decoded value would cut
 * the NUL-terminated string short, so routes that read values refuse such a query. */
int query_holds_nul(const char *q, size_t n);

/**
 * Finds the first control character of the query q[0..n) as query_decode reads it: a byte below
 * 0x20 or 0x7f (NUL included), raw or written %XX, in a name or a value. No id, name, number or
 * path runboxd takes holds one (a NUL would cut the value short; file paths write control
 * characters as escapes \xhh), so the router refuses such a query before any route reads it.
 * Returns 1 with the byte in *byte and the pair that holds it as q[*pair .. *pair + *pair_len)
 * (without its '&'), or 0 when there is none.
 */
int query_control(const char *q, size_t n, unsigned char *byte, size_t *pair, size_t *pair_len);

/** Reads a whole number a caller wrote in a query value (NUL-terminated, untrusted): 1 to 18
 * ASCII digits and nothing else (no sign, blank or base prefix, which strtol would take), at
 * most max. Returns 1 with *out, or 0. */
int query_whole(const char *s, int64_t max, int64_t *out);

/** Reads a time a caller wrote in a query value (NUL-terminated, untrusted): milliseconds since
 * the epoch (1 to 16 digits), or RFC 3339 (rb_time_parse: "2026-11-28T22:05:00Z", with a
 * fraction, an offset or none for UTC), not before 1970. Returns 1 with *ms, or 0. */
int query_time(const char *s, int64_t *ms);

#endif

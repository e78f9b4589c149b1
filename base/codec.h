/*
 * codec: the byte-level encodings several layers share: base64 (the MCP tools carry file bytes
 * in it), UTF-8 validation (whether bytes can travel as a JSON text), hexadecimal and URI
 * percent-encoding (Docker API paths, MCP resource URIs, Content-Disposition), the name form
 * of file names that are not UTF-8 text, and the items of the operator's comma-separated lists. Pure functions
 * over memory: no I/O, no HTTP and no policy; callers decide what the bytes mean. It lives in base/,
 * so every layer (server/, core/, docker/) may use it.
 */
#ifndef RB_BASE_CODEC_H
#define RB_BASE_CODEC_H

#include <stddef.h>

#include "base/err.h"

/** The standard base64 (RFC 4648, '+' '/' and '=' padding) of bytes[0..len), NUL-terminated;
 * the caller frees it. Never returns NULL. */
char *codec_base64_encode(const void *bytes, size_t len);

/**
 * Decodes standard or URL-safe base64 in[0..n): padding is optional, whitespace is ignored and
 * a "data:...;base64," prefix is skipped. Returns RB_OK with *out (heap, the caller frees it,
 * NUL after *outlen bytes), or RB_EINVAL with err saying what is wrong and at which offset
 * (*out untouched).
 */
rb_err codec_base64_decode(const char *in, size_t n, char **out, size_t *outlen, char *err);

/** Whether s[0..n) is valid UTF-8 (no overlongs, surrogates or code points past U+10FFFF)
 * without NUL bytes, so that it can travel as a JSON text. */
int codec_utf8_text(const char *s, size_t n);

/** The name form of bytes[0..n) (a file name or path as a sandbox's file system holds it): valid
 * UTF-8 stays as it is, except the control characters U+0000..U+001F and U+007F and the
 * backslash; those, and every byte that is not part of valid UTF-8, become "\\xhh" (two
 * lower-case hex digits). So every byte string has one name form, which is valid UTF-8 without
 * NUL (a JSON text), and codec_name_unescape gives the bytes back. The caller frees it; never
 * NULL. */
char *codec_name_escape(const void *bytes, size_t n);

/** Decodes the name form s (NUL-terminated): "\\xhh" (hex digits in either case) becomes the
 * byte hh, every other byte stays. RB_OK with *out (heap, NUL after *outlen bytes; the bytes
 * may hold NUL or '/': what they may be is the caller's rule), or RB_EINVAL naming the offset
 * of a backslash that does not start such an escape (*out untouched). */
rb_err codec_name_unescape(const char *s, char **out, size_t *outlen, char *err);

/** The value of one hexadecimal digit (either case), or -1 if ch is not one. */
int codec_hex_value(int ch);

/** Writes the lowercase hex of bytes[0..n) and a NUL into out, which holds 2 * n + 1 bytes. */
void codec_hex_encode(const void *bytes, size_t n, char *out);

/** Percent-encodes (upper-case hex) every byte of s except the RFC 3986 unreserved characters
 * (A-Z a-z 0-9 - . _ ~) and those in keep; the caller frees the result. Never returns NULL. */
char *codec_percent_encode(const char *s, const char *keep);

/** Percent-decodes s strictly (no '+' for space); the caller frees the result. Returns NULL for
 * a malformed %-escape or an encoded NUL byte. */
char *codec_percent_decode(const char *s);

/** The next item of a comma-separated list (an operator's --web-allow, --egress-allow, ...):
 * spaces and tabs around an item are dropped and empty items skipped. Start with *p = the list
 * (NULL: no items); each call sets [*item, *item + *len) to the next item and moves *p past it,
 * and returns 0 once there is none. The items point into the list. */
int codec_list_next(const char **p, const char **item, size_t *len);

/** Calls ok() on each item of the comma-separated list (codec_list_next); the first item it
 * refuses is copied to bad (at most 64 characters). Returns whether all passed. */
int codec_list_all(const char *list, int (*ok)(const char *, size_t), char *bad, size_t badn);

/** Whether s[0..n) is an IPv4 or IPv6 address, optionally with /prefix (10.1.2.3, 172.18.0.0/16,
 * fd00::/8): an operator's --web-allow or --egress-cidr entry. */
int codec_cidr_ok(const char *s, size_t n);

#endif

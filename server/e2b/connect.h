/*
 * connect: the Connect protocol's framing with its JSON codec, as E2B's envd speaks it
 * (connectrpc.com/docs/protocol): the envelope of a streaming call (one flag byte, a 4-byte
 * big-endian length, then that many bytes of JSON), the end-of-stream envelope, and the error
 * codes with their HTTP statuses. Pure: no I/O, no h2o; the bytes it parses are untrusted
 * (tests/fuzz/fuzz_connect.c). Binary protobuf and compression are not supported: the E2B SDKs
 * send JSON and never compress.
 */
#ifndef RB_SERVER_E2B_CONNECT_H
#define RB_SERVER_E2B_CONNECT_H

#include <jansson.h>
#include <stddef.h>

#include "base/base.h"

#define CONNECT_FLAG_COMPRESSED 0x01u
#define CONNECT_FLAG_END_STREAM 0x02u
#define CONNECT_HEADER_LEN 5

/** Reads the request of a server-streaming call: body[0..len) must be exactly one envelope with
 * flags 0 holding a JSON object of at most max bytes. On RB_OK *out is that object (a new
 * reference). RB_EINVAL names what is wrong (too short, a length that disagrees with the body,
 * bytes after the envelope, a compressed or end-of-stream flag, JSON that does not parse or is
 * not an object, with its line and column); RB_ETOOBIG beyond max. */
rb_err connect_parse_request(const char *body, size_t len, size_t max, json_t **out, char *err);

/** Reads the next envelope of a client stream's body[*off..len) as connect_parse_request reads
 * one (same errors, a cut envelope included) and moves *off past it. Call while *off < len. */
rb_err connect_next_request(const char *body, size_t len, size_t *off, size_t max, json_t **out, char *err);

/** Appends one envelope with flags and the compact JSON of msg (borrowed) to b. RB_ETOOBIG (b
 * unchanged) when b cannot hold it. */
rb_err connect_envelope(rb_buf *b, unsigned flags, json_t *msg);

/** Appends the end-of-stream envelope: {} for code NULL, else {"error": {"code", "message"}}. */
rb_err connect_end_stream(rb_buf *b, const char *code, const char *message);

/** The Connect error code for e ("invalid_argument", "not_found", ...). */
const char *connect_code_of(rb_err e);
/** The HTTP status Connect gives code (400, 404, ...; 500 for unknown ones). */
int connect_http_status(const char *code);

#endif

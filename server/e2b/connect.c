/*
 * connect.c: the Connect envelope and error codes (server/e2b/connect.h). The status table is
 * the Connect protocol's ("Error Codes" of connectrpc.com/docs/protocol).
 */
#include "server/e2b/connect.h"

#include <stdlib.h>
#include <string.h>

rb_err connect_parse_request(const char *body, size_t len, size_t max, json_t **out, char *err)
{
    if (len < CONNECT_HEADER_LEN)
        return rb_fail(RB_EINVAL, err,
                       "the body of a streaming call is one Connect envelope (a flag byte, a 4-byte length, then "
                       "JSON); %zu bytes are too few",
                       len);
    const unsigned char *h = (const unsigned char *)body;
    size_t n = (size_t)h[1] << 24 | (size_t)h[2] << 16 | (size_t)h[3] << 8 | (size_t)h[4];
    if (h[0] & CONNECT_FLAG_COMPRESSED)
        return rb_fail(RB_EINVAL, err, "compressed Connect messages are not supported: send them uncompressed");
    if (h[0] != 0)
        return rb_fail(RB_EINVAL, err, "the request envelope has flags 0x%02x; a request message has flags 0", h[0]);
    if (n > max)
        return rb_fail(RB_ETOOBIG, err, "the request message has %zu bytes, more than the %zu allowed", n, max);
    if (n != len - CONNECT_HEADER_LEN)
        return rb_fail(RB_EINVAL, err, "the envelope announces %zu bytes of message but %zu follow", n,
                       len - CONNECT_HEADER_LEN);
    json_error_t je;
    json_t *v = json_loadb(body + CONNECT_HEADER_LEN, n, JSON_REJECT_DUPLICATES, &je);
    if (v == NULL)
        return rb_fail(RB_EINVAL, err, "the request message is not JSON: %s (line %d, column %d)", je.text, je.line,
                       je.column);
    if (!json_is_object(v)) {
        json_decref(v);
        return rb_fail(RB_EINVAL, err, "the request message must be a JSON object");
    }
    *out = v;
    return RB_OK;
}

rb_err connect_next_request(const char *body, size_t len, size_t *off, size_t max, json_t **out, char *err)
{
    size_t n = len - *off;
    if (n >= CONNECT_HEADER_LEN) { /* this envelope only: its header's length, checked by the parser */
        const unsigned char *h = (const unsigned char *)body + *off;
        size_t announced = (size_t)h[1] << 24 | (size_t)h[2] << 16 | (size_t)h[3] << 8 | (size_t)h[4];
        if (announced <= n - CONNECT_HEADER_LEN)
            n = CONNECT_HEADER_LEN + announced;
    }
    rb_err e = connect_parse_request(body + *off, n, max, out, err);
    if (e == RB_OK)
        *off += n;
    return e;
}

rb_err connect_envelope(rb_buf *b, unsigned flags, json_t *msg)
{
    char *text = json_dumps(msg, JSON_COMPACT);
    if (text == NULL)
        return RB_EINVAL;
    size_t n = strlen(text);
    rb_err e = RB_ETOOBIG;
    if (n <= 0xffffffffu && b->len + CONNECT_HEADER_LEN + n <= b->max) {
        unsigned char h[CONNECT_HEADER_LEN] = {(unsigned char)flags, (unsigned char)(n >> 24),
                                               (unsigned char)(n >> 16), (unsigned char)(n >> 8), (unsigned char)n};
        rb_buf_append(b, h, sizeof(h));
        rb_buf_append(b, text, n);
        e = RB_OK;
    }
    free(text);
    return e;
}

rb_err connect_end_stream(rb_buf *b, const char *code, const char *message)
{
    json_t *m = code == NULL ? json_object()
                             : json_pack("{s:{s:s, s:s}}", "error", "code", code, "message", message ? message : "");
    if (m == NULL) /* a message that is not UTF-8 */
        m = json_pack("{s:{s:s}}", "error", "code", code);
    rb_err e = connect_envelope(b, CONNECT_FLAG_END_STREAM, m);
    json_decref(m);
    return e;
}

const char *connect_code_of(rb_err e)
{
    switch (e) {
    case RB_OK:
        return "ok";
    case RB_EINVAL:
    case RB_EMEDIA:
        return "invalid_argument";
    case RB_ENOTFOUND:
        return "not_found";
    case RB_ECONFLICT:
        return "failed_precondition";
    case RB_ETOOBIG:
    case RB_EBUSY:
    case RB_EQUOTA:
    case RB_ENOSPC:
        return "resource_exhausted";
    case RB_EUNAVAILABLE:
    case RB_EIO:
        return "unavailable";
    case RB_ETIMEDOUT:
        return "deadline_exceeded";
    case RB_ECANCELED:
        return "canceled";
    case RB_EFORBIDDEN:
        return "permission_denied";
    default:
        return "internal";
    }
}

int connect_http_status(const char *code)
{
    static const struct {
        const char *code;
        int status;
    } table[] = {
        {"canceled", 499},          {"unknown", 500},           {"invalid_argument", 400}, {"deadline_exceeded", 504},
        {"not_found", 404},         {"already_exists", 409},    {"permission_denied", 403},
        {"resource_exhausted", 429}, {"failed_precondition", 400}, {"aborted", 409},        {"out_of_range", 400},
        {"unimplemented", 501},     {"internal", 500},          {"unavailable", 503},      {"data_loss", 500},
        {"unauthenticated", 401},
    };
    for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++)
        if (strcmp(table[i].code, code) == 0)
            return table[i].status;
    return 500;
}

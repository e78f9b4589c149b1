/*
 * reply.c: the answers and request bodies every protocol's handlers share (server/http.h): the
 * one error table (rb_err -> HTTP status and code word), JSON answers and error documents,
 * the JSON body reader (Content-Type, size limit, parse errors with line and column) and
 * query parameters. Per-request work only: no listener, no routing.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/codec.h"
#include "base/mem.h"
#include "server/http_private.h"
#include "server/query.h"

/* ---- error table ---------------------------------------------------------------------- */

static const int status_of_err[RB_ERR_MAX] = {
    [RB_OK] = 200,
    [RB_EINVAL] = 400,
    [RB_ENOTFOUND] = 404,
    [RB_ECONFLICT] = 409,
    [RB_ETOOBIG] = 413,
    [RB_EMEDIA] = 415,
    [RB_EUNAVAILABLE] = 503,
    [RB_EBUSY] = 429,
    [RB_ETIMEDOUT] = 504,
    [RB_ECANCELED] = 409,
    [RB_EIO] = 502,
    [RB_ESTORE] = 500,
    [RB_EINTERNAL] = 500,
    [RB_EFORBIDDEN] = 403,
    [RB_EQUOTA] = 429,
    [RB_ENOSPC] = 507,
};

int http_status_of(rb_err e)
{
    if ((unsigned)e >= RB_ERR_MAX)
        return 500;
    return status_of_err[e];
}

static const char *reason_of(int status)
{
    switch (status) {
    case 200: return "OK";
    case 201: return "Created";
    case 202: return "Accepted";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 404: return "Not Found";
    case 403: return "Forbidden";
    case 405: return "Method Not Allowed";
    case 406: return "Not Acceptable";
    case 409: return "Conflict";
    case 410: return "Gone";
    case 413: return "Payload Too Large";
    case 415: return "Unsupported Media Type";
    case 429: return "Too Many Requests";
    case 500: return "Internal Server Error";
    case 501: return "Not Implemented";
    case 502: return "Bad Gateway";
    case 503: return "Service Unavailable";
    case 504: return "Gateway Timeout";
    case 507: return "Insufficient Storage";
    default: return "Unknown";
    }
}

/* The code for a status that h2o produced itself (no rb_err behind it). */
const char *http__code_of_status(int status)
{
    switch (status) {
    case 400: return "invalid_request";
    case 401: return "unauthorized";
    case 404: return "not_found";
    case 405: return "method_not_allowed";
    case 413: return "payload_too_large";
    case 415: return "unsupported_media_type";
    case 417: return "invalid_request";
    case 429: return "too_many_requests";
    case 502: return "upstream_error";
    case 503: return "docker_unavailable";
    case 504: return "timeout";
    case 507: return "insufficient_storage";
    default: return "internal_error";
    }
}

/* ---- answers -------------------------------------------------------------------------- */

char *http_pool_strdup(h2o_req_t *req, const char *s, size_t len)
{
    char *p = h2o_mem_alloc_pool(&req->pool, len + 1);
    memcpy(p, s, len);
    p[len] = '\0';
    return p;
}

static void send_body(h2o_req_t *req, int status, const char *type, h2o_iovec_t body)
{
    static h2o_generator_t generator = {NULL, NULL};
    req->res.status = status;
    req->res.reason = reason_of(status);
    req->res.content_length = body.len;
    h2o_set_header(&req->pool, &req->res.headers, H2O_TOKEN_CONTENT_TYPE, type, strlen(type), 1);
    h2o_set_header(&req->pool, &req->res.headers, H2O_TOKEN_CACHE_CONTROL, H2O_STRLIT("no-store"), 1);
    h2o_start_response(req, &generator);
    h2o_send(req, &body, 1, H2O_SEND_STATE_FINAL);
}

h2o_iovec_t http__encode(h2o_req_t *req, json_t *body)
{
    char *text = json_dumps(body, JSON_COMPACT | JSON_ENCODE_ANY);
    if (text == NULL)
        text = xstrdup("{\"error\":{\"code\":\"internal_error\",\"message\":\"the answer could not be encoded\"}}");
    size_t len = strlen(text);
    /* A trailing newline keeps terminals and line-based clients happy. */
    char *p = h2o_mem_alloc_pool(&req->pool, len + 1);
    memcpy(p, text, len);
    p[len] = '\n';
    free(text);
    return h2o_iovec_init(p, len + 1);
}

void http_send_json(h2o_req_t *req, int status, json_t *body)
{
    if (body == NULL) { /* no body at all (a protocol's error_doc may ask for it: Dify's bare 401) */
        static h2o_generator_t generator = {NULL, NULL};
        req->res.status = status;
        req->res.reason = reason_of(status);
        req->res.content_length = 0;
        h2o_start_response(req, &generator);
        h2o_send(req, NULL, 0, H2O_SEND_STATE_FINAL);
        return;
    }
    send_body(req, status, "application/json", http__encode(req, body));
}

void http_send_no_content(h2o_req_t *req)
{
    req->res.status = 204;
    req->res.reason = "No Content";
    h2o_send_inline(req, NULL, 0);
}

void http_send_event(h2o_req_t *req, int status, json_t *body)
{
    char *text = json_dumps(body, JSON_COMPACT | JSON_ENCODE_ANY);
    if (text == NULL)
        text = xstrdup("{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32603,\"message\":\"the answer "
                       "could not be encoded\"}}");
    static const char head[] = "event: message\ndata: ";
    size_t hl = sizeof(head) - 1, len = strlen(text);
    char *p = h2o_mem_alloc_pool(&req->pool, hl + len + 2);
    memcpy(p, head, hl);
    memcpy(p + hl, text, len); /* compact JSON has no raw newline: one data line */
    memcpy(p + hl + len, "\n\n", 2);
    free(text);
    send_body(req, status, "text/event-stream", h2o_iovec_init(p, hl + len + 2));
}

/* Content-Disposition: attachment with an ASCII fallback name and the exact UTF-8 name. */
static h2o_iovec_t disposition(h2o_req_t *req, const char *name)
{
    size_t n = strlen(name);
    char *enc = codec_percent_encode(name, "");
    size_t elen = strlen(enc);
    char *out = h2o_mem_alloc_pool(&req->pool, 64 + n + elen);
    size_t o = 0;
    memcpy(out, "attachment; filename=\"", 22);
    o = 22;
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)name[i];
        out[o++] = (ch < 0x20 || ch >= 0x7f || ch == '"' || ch == '\\') ? '_' : (char)ch;
    }
    memcpy(out + o, "\"; filename*=UTF-8''", 20);
    o += 20;
    memcpy(out + o, enc, elen);
    o += elen;
    free(enc);
    return h2o_iovec_init(out, o);
}

void http_send_attachment(h2o_req_t *req, const char *bytes, size_t len, const char *type, const char *name)
{
    static h2o_generator_t generator = {NULL, NULL};
    h2o_iovec_t body = h2o_iovec_init(bytes, len);
    req->res.status = 200;
    req->res.reason = "OK";
    req->res.content_length = len;
    h2o_set_header(&req->pool, &req->res.headers, H2O_TOKEN_CONTENT_TYPE, type, strlen(type), 1);
    h2o_iovec_t cd = disposition(req, name);
    h2o_set_header(&req->pool, &req->res.headers, H2O_TOKEN_CONTENT_DISPOSITION, cd.base, cd.len, 1);
    h2o_set_header(&req->pool, &req->res.headers, H2O_TOKEN_CACHE_CONTROL, H2O_STRLIT("no-store"), 1);
    h2o_set_header_by_str(&req->pool, &req->res.headers, H2O_STRLIT("x-content-type-options"), 0,
                          H2O_STRLIT("nosniff"), 1);
    h2o_start_response(req, &generator);
    h2o_send(req, &body, 1, H2O_SEND_STATE_FINAL);
}

void http_send_download(h2o_req_t *req, rb_err e, const char *msg, const core_file *file, const char *type,
                        const char *name, http_fail_fn fail)
{
    if (e != RB_OK) {
        if (e == RB_EBUSY)
            h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_RETRY_AFTER, NULL, H2O_STRLIT("1"));
        fail(req, e, msg);
        return;
    }
    http_send_attachment(req, file->bytes, file->len, type != NULL ? type : file->content_type,
                         name != NULL ? name : file->name);
}

/* message with each byte that is not part of valid UTF-8 replaced by '?' (heap), or NULL when it
 * is valid: a message quoting the caller's text cut at a byte count ('%.200s') can end that text
 * inside a character, and jansson refuses a whole string that is not UTF-8 (the answer would be
 * sent without its body). */
static char *utf8_marked(const char *s)
{
    size_t n = strlen(s);
    if (codec_utf8_text(s, n))
        return NULL;
    char *out = xmalloc(n + 1), *o = out;
    for (size_t i = 0; i < n;) {
        unsigned char ch = (unsigned char)s[i];
        size_t len = ch < 0x80 ? 1 : ch >= 0xf0 ? 4 : ch >= 0xe0 ? 3 : 2;
        if (i + len <= n && codec_utf8_text(s + i, len)) {
            memcpy(o, s + i, len);
            o += len;
            i += len;
        } else {
            *o++ = '?';
            i++;
        }
    }
    *o = '\0';
    return out;
}

json_t *http__error_doc(const char *code, const char *message)
{
    char *marked = message != NULL ? utf8_marked(message) : NULL;
    json_t *doc = json_pack("{s:{s:s,s:s}}", "error", "code", code, "message",
                            marked != NULL ? marked : message != NULL ? message : "");
    free(marked);
    return doc;
}

void http_send_error_as(h2o_req_t *req, int status, const char *code, const char *message)
{
    json_t *doc = http__error_doc(code, message);
    http_send_json(req, status, doc);
    json_decref(doc);
}

void http_send_error(h2o_req_t *req, rb_err e, const char *message)
{
    if (e == RB_OK)
        e = RB_EINTERNAL;
    /* a 429 or 503 gets its Retry-After from the HTTP layer's filter (server/http.c) */
    http_send_error_as(req, http_status_of(e), rb_strerror(e), message && message[0] ? message : rb_strerror(e));
}

/* ---- request bodies ------------------------------------------------------------------- */

/* Content-Type is application/json, parameters (charset=...) allowed, case-insensitive. */
static int is_json_type(h2o_req_t *req)
{
    ssize_t i = h2o_find_header(&req->headers, H2O_TOKEN_CONTENT_TYPE, -1);
    if (i == -1)
        return 0;
    h2o_iovec_t v = req->headers.entries[i].value;
    size_t n = v.len;
    for (size_t k = 0; k < v.len; k++) {
        if (v.base[k] == ';') {
            n = k;
            break;
        }
    }
    while (n > 0 && (v.base[n - 1] == ' ' || v.base[n - 1] == '\t'))
        n--;
    size_t start = 0;
    while (start < n && (v.base[start] == ' ' || v.base[start] == '\t'))
        start++;
    return h2o_lcstris(v.base + start, n - start, H2O_STRLIT("application/json"));
}

static int all_blank(const char *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (p[i] != ' ' && p[i] != '\t' && p[i] != '\r' && p[i] != '\n')
            return 0;
    return 1;
}

/* The member of v (at any depth) that carries an id or a name (session_id, request_id, a mount's
 * volume and share, ... of any protocol) and holds a control character, with that character in
 * *byte; or NULL. jansson already refuses \u0000 (no JSON_ALLOW_NUL), which json_string_value
 * would cut at; no id or name runboxd makes holds any other control character either, so such a
 * member is refused rather than looked up. */
static const char *control_in_id(json_t *v, unsigned char *byte)
{
    static const char *const ids[] = {"session_id", "request_id", "sessionId", "sandboxID", "sandboxId",
                                      "volume_id", "kernel_id", "volume", "share", NULL};
    const char *key, *found = NULL;
    json_t *m;
    size_t i;
    json_array_foreach(v, i, m)
    {
        if ((found = control_in_id(m, byte)) != NULL)
            return found;
    }
    json_object_foreach(v, key, m)
    {
        if (!json_is_string(m)) {
            if ((found = control_in_id(m, byte)) != NULL)
                return found;
            continue;
        }
        size_t k = 0;
        while (ids[k] != NULL && strcmp(ids[k], key) != 0)
            k++;
        const char *s = json_string_value(m);
        for (size_t j = 0; ids[k] != NULL && j < json_string_length(m); j++)
            if ((unsigned char)s[j] < 0x20 || s[j] == 0x7f) {
                *byte = (unsigned char)s[j];
                return key;
            }
    }
    return NULL;
}

static rb_err read_json(h2o_req_t *req, size_t max, int empty_ok, int any, json_t **out, char *err)
{
    *out = NULL;
    if (req->entity.base == NULL || all_blank(req->entity.base, req->entity.len)) {
        if (empty_ok)
            return RB_OK;
        return rb_fail(RB_EINVAL, err, "a JSON object body is required (Content-Type: application/json)");
    }
    if (!is_json_type(req))
        return rb_fail(RB_EMEDIA, err, "the body must be JSON: send it with Content-Type: application/json");
    if (req->entity.len > max) {
        http__server_of(req)->counts.refusals[HTTP_REFUSED_BODY]++;
        return rb_fail(RB_ETOOBIG, err, "the body is %zu bytes; the limit is %zu bytes (max-body)", req->entity.len, max);
    }
    json_error_t jerr;
    size_t flags = JSON_REJECT_DUPLICATES | (any ? JSON_DECODE_ANY : 0);
    json_t *v = json_loadb(req->entity.base, req->entity.len, flags, &jerr);
    /* An integer beyond 64 bits is valid JSON: read the numbers as reals then (such a value is
     * out of every range runbox takes, and validation says so by field). */
    if (v == NULL && strncmp(jerr.text, "too big ", 8) == 0)
        v = json_loadb(req->entity.base, req->entity.len, flags | JSON_DECODE_INT_AS_REAL, &jerr);
    if (v == NULL)
        return rb_fail(RB_EINVAL, err, "malformed JSON at line %d, column %d: %s", jerr.line, jerr.column, jerr.text);
    if (!any && !json_is_object(v)) {
        json_decref(v);
        return rb_fail(RB_EINVAL, err, "the body must be a JSON object");
    }
    unsigned char byte = 0;
    const char *id = control_in_id(v, &byte);
    if (id != NULL) { /* id is v's key: said before v goes */
        rb_err e = rb_fail(RB_EINVAL, err,
                           "'%s' holds a control character (\\u%04x): an id never does; send it exactly as runboxd gave "
                           "it",
                           id, byte);
        json_decref(v);
        return e;
    }
    *out = v;
    return RB_OK;
}

rb_err http_read_json(h2o_req_t *req, size_t max, int empty_ok, json_t **out, char *err)
{
    return read_json(req, max, empty_ok, 0, out, err);
}

rb_err http_read_json_value(h2o_req_t *req, size_t max, json_t **out, char *err)
{
    return read_json(req, max, 0, 1, out, err);
}

const char *http_query_param(h2o_req_t *req, const char *name)
{
    if (req->query_at == SIZE_MAX || req->query_at >= req->path.len)
        return NULL;
    const char *v;
    size_t len;
    if (!query_find(req->path.base + req->query_at + 1, req->path.len - req->query_at - 1, name, &v, &len))
        return NULL;
    char *out = h2o_mem_alloc_pool(&req->pool, len + 1);
    query_decode(v, len, out);
    return out;
}


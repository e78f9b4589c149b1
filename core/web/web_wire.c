/*
 * web_wire.c: the web-page reader's pure parts (core/web/web_wire.h): URL and settings checks, and
 * the reading of the browser's answer and the proxy's events. It never looks at a page itself.
 */
#include "core/web/web_wire.h"

#include "base/codec.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define TITLE_MAX_CHARS 1000
#define FINAL_URL_MAX 8192
#define MESSAGE_MAX 300
#define EVENT_STR_MAX 256

/* ---- the caller's URL ------------------------------------------------------------------- */

rb_err web_url_check(const char *url, size_t len, char *err)
{
    if (url == NULL || len == 0)
        return rb_fail(RB_EINVAL, err, "'url' is required: an http:// or https:// address");
    if (len > WEB_URL_MAX)
        return rb_fail(RB_EINVAL, err, "'url' is %zu bytes; at most %d are accepted", len, WEB_URL_MAX);
    for (size_t i = 0; i < len; i++) {
        unsigned char ch = (unsigned char)url[i];
        if (ch <= 0x20 || ch >= 0x7f)
            return rb_fail(RB_EINVAL, err,
                           "'url' has a space, control or non-ASCII character at byte %zu; percent-encode it (as "
                           "a browser's address bar does)",
                           i);
    }
    size_t scheme;
    if (len >= 7 && strncasecmp(url, "http://", 7) == 0)
        scheme = 7;
    else if (len >= 8 && strncasecmp(url, "https://", 8) == 0)
        scheme = 8;
    else
        return rb_fail(RB_EINVAL, err, "'url' must start with http:// or https:// (other schemes are not read)");
    size_t end = scheme;
    while (end < len && url[end] != '/' && url[end] != '?' && url[end] != '#')
        end++;
    if (memchr(url + scheme, '@', end - scheme) != NULL || memchr(url + scheme, '\\', end - scheme) != NULL)
        return rb_fail(RB_EINVAL, err, "'url' must not carry a user name or password (user:password@host)");
    size_t host_end = end;
    if (end > scheme && url[scheme] == '[') { /* [IPv6]:port */
        const char *close = memchr(url + scheme, ']', end - scheme);
        if (close == NULL)
            return rb_fail(RB_EINVAL, err, "'url' has an IPv6 address without its closing ']'");
        host_end = (size_t)(close - url) + 1;
        if (host_end < end && url[host_end] != ':')
            return rb_fail(RB_EINVAL, err, "'url' has characters after the IPv6 address that are not a :port");
    } else {
        const char *colon = memchr(url + scheme, ':', end - scheme);
        if (colon != NULL)
            host_end = (size_t)(colon - url);
    }
    if (host_end == scheme || (host_end == scheme + 2 && url[scheme] == '['))
        return rb_fail(RB_EINVAL, err, "'url' has no host name");
    if (host_end < end) { /* a port: 1 to 65535 digits-only */
        size_t p = host_end + 1;
        long port = 0;
        if (p == end)
            return rb_fail(RB_EINVAL, err, "'url' has an empty port after ':'");
        for (; p < end; p++) {
            if (url[p] < '0' || url[p] > '9' || port > 65535)
                return rb_fail(RB_EINVAL, err, "'url' has a port that is not a number from 1 to 65535");
            port = port * 10 + (url[p] - '0');
        }
        if (port < 1 || port > 65535)
            return rb_fail(RB_EINVAL, err, "'url' has a port that is not a number from 1 to 65535");
    }
    return RB_OK;
}

/* ---- the operator's settings ------------------------------------------------------------ */

static int port_ok(const char *s, size_t n)
{
    long v = 0;
    if (n == 0 || n > 5)
        return 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return 0;
        v = v * 10 + (s[i] - '0');
    }
    return v >= 1 && v <= 65535;
}

static int ref_ok(const char *s)
{
    size_t n = s ? strlen(s) : 0;
    if (n == 0 || n > 256)
        return 0;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '.' ||
              c == '-'))
            return 0;
    }
    return 1;
}

rb_err web_check_settings(const core_settings *s, char *err)
{
    char bad[80];
    if (s->web_image == NULL || s->web_image[0] == '\0')
        return rb_fail(RB_EINVAL, err, "web-image: an image name is required");
    if (!ref_ok(s->web_network))
        return rb_fail(RB_EINVAL, err, "web-network: '%.100s' is not a Docker network name",
                       s->web_network ? s->web_network : "");
    if (!codec_list_all(s->web_allow, codec_cidr_ok, bad, sizeof(bad)))
        return rb_fail(RB_EINVAL, err,
                       "web-allow: '%s' is not an IP address or CIDR range (e.g. 10.1.2.3, 172.18.0.0/16, fd00::/8)",
                       bad);
    if (s->web_ports == NULL || s->web_ports[0] == '\0' || !codec_list_all(s->web_ports, port_ok, bad, sizeof(bad)))
        return rb_fail(RB_EINVAL, err, "web-ports: '%s' is not a TCP port from 1 to 65535",
                       s->web_ports && s->web_ports[0] ? bad : "");
    if (!(s->web_timeout >= 1) || s->web_timeout > 600)
        return rb_fail(RB_EINVAL, err, "web-timeout: must be between 1 and 600 seconds");
    if (s->web_max_bytes < 64 * 1024)
        return rb_fail(RB_EINVAL, err, "web-max-bytes: must be at least 64k");
    if (s->web_max_chars < 1 || s->web_max_chars > 10 * 1000 * 1000)
        return rb_fail(RB_EINVAL, err, "web-max-chars: must be between 1 and 10000000");
    if (s->web_max_redirects < 0 || s->web_max_redirects > 50)
        return rb_fail(RB_EINVAL, err, "web-max-redirects: must be between 0 and 50");
    if (s->web_max_concurrent < 1 || s->web_max_concurrent > 16)
        return rb_fail(RB_EINVAL, err, "web-max-concurrent: must be between 1 and 16");
    return RB_OK;
}

/* ---- what the containers print ---------------------------------------------------------- */

/* The first max_chars characters of UTF-8 s[0..n) (jansson checked it is UTF-8) as a new JSON
 * string; *cut says whether anything was left out. */
static json_t *string_capped(const char *s, size_t n, size_t max_chars, int *cut)
{
    size_t i = 0, chars = 0;
    while (i < n && chars < max_chars) {
        unsigned char ch = (unsigned char)s[i];
        size_t w = ch < 0x80 ? 1 : ch < 0xe0 ? 2 : ch < 0xf0 ? 3 : 4;
        if (i + w > n)
            break;
        i += w;
        chars++;
    }
    if (cut != NULL)
        *cut = i < n;
    return json_stringn(s, i);
}

/* Member key of o as a capped string, or NULL when absent or not a string. */
static json_t *str_member(json_t *o, const char *key, size_t max_chars, int *cut)
{
    json_t *v = json_object_get(o, key);
    if (!json_is_string(v))
        return NULL;
    return string_capped(json_string_value(v), json_string_length(v), max_chars, cut);
}

/* The last non-blank line of out[0..len). */
static const char *last_line(const char *out, size_t len, size_t *n)
{
    size_t e = len;
    while (e > 0 && (out[e - 1] == '\n' || out[e - 1] == '\r' || out[e - 1] == ' '))
        e--;
    size_t b = e;
    while (b > 0 && out[b - 1] != '\n')
        b--;
    *n = e - b;
    return out + b;
}

/* A message from the browser, made safe to show: printable, capped. */
static void message_of(json_t *doc, const char *fallback, char *buf, size_t bufn)
{
    const char *m = json_string_value(json_object_get(doc, "message"));
    if (m == NULL || m[0] == '\0')
        m = fallback;
    size_t j = 0;
    for (size_t i = 0; m[i] && j + 1 < bufn && i < MESSAGE_MAX; i++)
        buf[j++] = ((unsigned char)m[i] < 0x20 || m[i] == 0x7f) ? ' ' : m[i];
    buf[j] = '\0';
}

json_t *web_result_parse(const char *out, size_t len, const web_limits *lim, rb_err *code, int *net_error, char *msg)
{
    size_t n;
    const char *line = last_line(out != NULL ? out : "", out != NULL ? len : 0, &n);
    *net_error = 0;
    json_t *doc = n > 0 ? json_loadb(line, n, JSON_ALLOW_NUL | JSON_REJECT_DUPLICATES, NULL) : NULL;
    if (!json_is_object(doc) || !json_is_boolean(json_object_get(doc, "ok"))) {
        json_decref(doc);
        *code = RB_EUNAVAILABLE;
        rb_fail(RB_EUNAVAILABLE, msg, "the browser gave no answer (it may have crashed or run out of memory)");
        return NULL;
    }
    if (!json_is_true(json_object_get(doc, "ok"))) {
        const char *e = json_string_value(json_object_get(doc, "error"));
        char m[MESSAGE_MAX + 1];
        message_of(doc, "no detail", m, sizeof(m));
        if (e != NULL && strcmp(e, "refused") == 0) {
            *code = RB_EFORBIDDEN;
            *net_error = 1;
            rb_fail(*code, msg, "the page's address is refused: %s", m);
        } else if (e != NULL && strcmp(e, "timeout") == 0) {
            *code = RB_ETIMEDOUT;
            rb_fail(*code, msg, "the page did not load in time: %s", m);
        } else if (e != NULL && strcmp(e, "too_many_redirects") == 0) {
            *code = RB_EIO;
            rb_fail(*code, msg, "too many redirects: %s", m);
        } else if (e != NULL && strcmp(e, "navigation_failed") == 0) {
            *code = RB_EIO;
            *net_error = 1;
            rb_fail(*code, msg, "the page could not be loaded: %s", m);
        } else {
            *code = RB_EUNAVAILABLE;
            rb_fail(*code, msg, "the browser failed: %s", m);
        }
        json_decref(doc);
        return NULL;
    }
    int cut = 0, ignored;
    json_t *r = json_object();
    json_t *v;
    if ((v = str_member(doc, "url", FINAL_URL_MAX, &ignored)) != NULL)
        json_object_set_new(r, "url", v);
    json_object_set_new(r, "final_url", (v = str_member(doc, "final_url", FINAL_URL_MAX, &ignored)) ? v : json_null());
    json_object_set_new(r, "title", (v = str_member(doc, "title", TITLE_MAX_CHARS, &ignored)) ? v : json_string(""));
    json_t *st = json_object_get(doc, "status");
    json_object_set_new(r, "status",
                        json_is_integer(st) && json_integer_value(st) >= 100 && json_integer_value(st) <= 999
                            ? json_integer(json_integer_value(st))
                            : json_null());
    json_object_set_new(r, "text", (v = str_member(doc, "text", lim->max_chars, &cut)) ? v : json_string(""));
    /* the browser saw the proxy's byte cap reached: the page it read was cut */
    int byte_cap = json_is_true(json_object_get(doc, "byte_cap"));
    json_object_set_new(r, "truncated",
                        json_boolean(cut || byte_cap || json_is_true(json_object_get(doc, "truncated"))));
    json_object_set_new(r, "byte_cap_reached", json_boolean(byte_cap));
    json_object_set_new(r, "settled", json_boolean(!json_is_false(json_object_get(doc, "settled"))));
    json_t *rd = json_object_get(doc, "redirects");
    json_object_set_new(r, "redirects",
                        json_integer(json_is_integer(rd) && json_integer_value(rd) >= 0 && json_integer_value(rd) < 1000
                                         ? json_integer_value(rd)
                                         : 0));
    json_t *shot = json_object_get(doc, "screenshot");
    if (json_is_string(shot) && json_string_length(shot) <= lim->max_screenshot)
        json_object_set(r, "screenshot", shot);
    json_decref(doc);
    return r;
}

json_t *web_event_parse(const char *line, size_t len)
{
    if (line == NULL || len == 0 || len > WEB_EVENT_LINE_MAX)
        return NULL;
    json_t *doc = json_loadb(line, len, JSON_REJECT_DUPLICATES, NULL);
    const char *ev = json_string_value(json_object_get(doc, "event"));
    if (!json_is_object(doc) || ev == NULL ||
        (strcmp(ev, "ready") != 0 && strcmp(ev, "refused") != 0 && strcmp(ev, "unreachable") != 0 &&
         strcmp(ev, "byte_cap") != 0)) {
        json_decref(doc);
        return NULL;
    }
    json_t *r = json_pack("{s:s}", "event", ev);
    static const char *const strs[] = {"host", "address", "reason"};
    for (size_t i = 0; i < sizeof(strs) / sizeof(strs[0]); i++) {
        json_t *v = str_member(doc, strs[i], EVENT_STR_MAX, NULL);
        if (v != NULL)
            json_object_set_new(r, strs[i], v);
    }
    static const char *const ints[] = {"port", "max_bytes"};
    for (size_t i = 0; i < sizeof(ints) / sizeof(ints[0]); i++) {
        json_t *v = json_object_get(doc, ints[i]);
        if (json_is_integer(v) && json_integer_value(v) >= 0)
            json_object_set_new(r, ints[i], json_integer(json_integer_value(v)));
    }
    json_decref(doc);
    return r;
}

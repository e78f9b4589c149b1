/*
 * codec.c: base64, UTF-8 validation, hexadecimal and percent-encoding (base/codec.h). Every
 * decoder here reads untrusted bytes (model-supplied base64, URIs from clients) and checks each
 * one; none reads past the length or NUL it is given.
 */
#include "base/codec.h"

#include "base/mem.h"

#include <arpa/inet.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char hex_upper[] = "0123456789ABCDEF";

char *codec_base64_encode(const void *bytes, size_t len)
{
    static const char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    const unsigned char *p = bytes;
    char *out = xmalloc((len + 2) / 3 * 4 + 1), *o = out;
    size_t i = 0;
    for (; i + 3 <= len; i += 3) {
        uint32_t v = (uint32_t)p[i] << 16 | (uint32_t)p[i + 1] << 8 | p[i + 2];
        *o++ = alphabet[v >> 18];
        *o++ = alphabet[(v >> 12) & 63];
        *o++ = alphabet[(v >> 6) & 63];
        *o++ = alphabet[v & 63];
    }
    if (i < len) {
        uint32_t v = (uint32_t)p[i] << 16 | (i + 1 < len ? (uint32_t)p[i + 1] << 8 : 0);
        *o++ = alphabet[v >> 18];
        *o++ = alphabet[(v >> 12) & 63];
        *o++ = i + 1 < len ? alphabet[(v >> 6) & 63] : '=';
        *o++ = '=';
    }
    *o = '\0';
    return out;
}

/* The value of a base64 digit of either alphabet, or -1. */
static int base64_value(unsigned char ch)
{
    if (ch >= 'A' && ch <= 'Z')
        return ch - 'A';
    if (ch >= 'a' && ch <= 'z')
        return ch - 'a' + 26;
    if (ch >= '0' && ch <= '9')
        return ch - '0' + 52;
    if (ch == '+' || ch == '-')
        return 62;
    if (ch == '/' || ch == '_')
        return 63;
    return -1;
}

rb_err codec_base64_decode(const char *in, size_t n, char **out, size_t *outlen, char *err)
{
    /* Models often send a data URI rather than bare base64. */
    if (n >= 5 && strncmp(in, "data:", 5) == 0) {
        const char *comma = memchr(in, ',', n);
        if (comma != NULL && comma - in >= 12 && strncmp(comma - 7, ";base64", 7) == 0) {
            n -= (size_t)(comma + 1 - in);
            in = comma + 1;
        }
    }
    char *buf = xmalloc(n / 4 * 3 + 4);
    size_t len = 0, digits = 0, pad = 0;
    uint32_t acc = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)in[i];
        if (ch == ' ' || ch == '\t' || ch == '\r' || ch == '\n')
            continue;
        if (ch == '=') {
            pad++;
            continue;
        }
        int v = base64_value(ch);
        if (v < 0 || pad > 0) {
            rb_err e;
            if (v >= 0)
                e = rb_fail(RB_EINVAL, err, "'=' padding in the middle (offset %zu); padding may only end the text", i);
            else if (ch >= 0x21 && ch < 0x7f)
                e = rb_fail(RB_EINVAL, err, "the character '%c' at offset %zu is not in the base64 alphabet", ch, i);
            else
                e = rb_fail(RB_EINVAL, err, "the byte 0x%02x at offset %zu is not in the base64 alphabet", ch, i);
            free(buf);
            return e;
        }
        acc = (acc << 6) | (uint32_t)v;
        if (++digits % 4 == 0) {
            buf[len++] = (char)(acc >> 16);
            buf[len++] = (char)(acc >> 8);
            buf[len++] = (char)acc;
            acc = 0;
        }
    }
    size_t rest = digits % 4;
    if (rest == 1 || pad > 2 || (pad > 0 && (rest + pad) % 4 != 0)) {
        free(buf);
        return rb_fail(RB_EINVAL, err, "its length is wrong (%zu base64 digits and %zu '='): it was probably cut short",
                       digits, pad);
    }
    if (rest == 2) {
        buf[len++] = (char)(acc >> 4);
    } else if (rest == 3) {
        buf[len++] = (char)(acc >> 10);
        buf[len++] = (char)(acc >> 2);
    }
    buf[len] = '\0';
    *out = buf;
    *outlen = len;
    return RB_OK;
}

/* The length of the valid UTF-8 sequence (no overlong form, surrogate or code point past
 * U+10FFFF) at p[0..n), n >= 1, or 0 when p does not start one. */
static size_t utf8_sequence(const unsigned char *p, size_t n)
{
    unsigned c = p[0];
    size_t k;
    unsigned min;
    if (c < 0x80)
        return 1;
    if ((c & 0xe0) == 0xc0)
        k = 1, min = 0x80, c &= 0x1f;
    else if ((c & 0xf0) == 0xe0)
        k = 2, min = 0x800, c &= 0x0f;
    else if ((c & 0xf8) == 0xf0)
        k = 3, min = 0x10000, c &= 0x07;
    else
        return 0;
    if (n <= k)
        return 0;
    for (size_t i = 1; i <= k; i++) {
        if ((p[i] & 0xc0) != 0x80)
            return 0;
        c = (c << 6) | (p[i] & 0x3f);
    }
    if (c < min || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff))
        return 0;
    return k + 1;
}

int codec_utf8_text(const char *s, size_t n)
{
    const unsigned char *p = (const unsigned char *)s, *end = p + n;
    while (p < end) {
        size_t k = *p == 0 ? 0 : utf8_sequence(p, (size_t)(end - p));
        if (k == 0)
            return 0;
        p += k;
    }
    return 1;
}

char *codec_name_escape(const void *bytes, size_t n)
{
    static const char digits[] = "0123456789abcdef";
    const unsigned char *p = bytes, *end = p + n;
    char *out = xmalloc(4 * n + 1), *o = out;
    while (p < end) {
        size_t k = utf8_sequence(p, (size_t)(end - p));
        if (k == 1 && (*p < 0x20 || *p == 0x7f || *p == '\\'))
            k = 0;
        if (k == 0) {
            *o++ = '\\', *o++ = 'x', *o++ = digits[*p >> 4], *o++ = digits[*p & 15];
            p++;
            continue;
        }
        memcpy(o, p, k);
        o += k, p += k;
    }
    *o = '\0';
    return out;
}

rb_err codec_name_unescape(const char *s, char **out, size_t *outlen, char *err)
{
    size_t n = strlen(s), len = 0;
    char *buf = xmalloc(n + 1);
    for (size_t i = 0; i < n; i++) {
        if (s[i] != '\\') {
            buf[len++] = s[i];
            continue;
        }
        int hi = i + 3 < n && s[i + 1] == 'x' ? codec_hex_value((unsigned char)s[i + 2]) : -1;
        int lo = hi >= 0 ? codec_hex_value((unsigned char)s[i + 3]) : -1;
        if (lo < 0) {
            free(buf);
            return rb_fail(RB_EINVAL, err,
                           "a backslash at byte %zu does not start an escape \\xhh of one byte (a backslash "
                           "itself is written \\x5c)",
                           i);
        }
        buf[len++] = (char)(hi << 4 | lo);
        i += 3;
    }
    buf[len] = '\0';
    *out = buf;
    *outlen = len;
    return RB_OK;
}

int codec_hex_value(int ch)
{
    if (ch >= '0' && ch <= '9')
        return ch - '0';
    if (ch >= 'a' && ch <= 'f')
        return ch - 'a' + 10;
    if (ch >= 'A' && ch <= 'F')
        return ch - 'A' + 10;
    return -1;
}

void codec_hex_encode(const void *bytes, size_t n, char *out)
{
    static const char hex_lower[] = "0123456789abcdef";
    const unsigned char *p = bytes;
    for (size_t i = 0; i < n; i++) {
        out[2 * i] = hex_lower[p[i] >> 4];
        out[2 * i + 1] = hex_lower[p[i] & 15];
    }
    out[2 * n] = '\0';
}

char *codec_percent_encode(const char *s, const char *keep)
{
    char *out = xmalloc(3 * strlen(s) + 1), *o = out;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        int plain = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || *p == '-' ||
                    *p == '_' || *p == '.' || *p == '~' || strchr(keep, *p) != NULL;
        if (plain) {
            *o++ = (char)*p;
        } else {
            *o++ = '%';
            *o++ = hex_upper[*p >> 4];
            *o++ = hex_upper[*p & 15];
        }
    }
    *o = '\0';
    return out;
}

char *codec_percent_decode(const char *s)
{
    char *out = xmalloc(strlen(s) + 1), *o = out;
    for (; *s; s++) {
        if (*s != '%') {
            *o++ = *s;
            continue;
        }
        /* s[1] == NUL gives hi < 0, so s[2] is only read inside the string */
        int hi = codec_hex_value(s[1]), lo = hi < 0 ? -1 : codec_hex_value(s[2]);
        if (lo < 0 || (hi == 0 && lo == 0)) {
            free(out);
            return NULL;
        }
        *o++ = (char)(hi * 16 + lo);
        s += 2;
    }
    *o = '\0';
    return out;
}

int codec_list_next(const char **p, const char **item, size_t *len)
{
    while (*p != NULL && **p) {
        const char *comma = strchr(*p, ',');
        const char *a = *p, *b = comma ? comma : *p + strlen(*p);
        *p = comma ? comma + 1 : NULL;
        while (a < b && (*a == ' ' || *a == '\t'))
            a++;
        while (b > a && (b[-1] == ' ' || b[-1] == '\t'))
            b--;
        if (b > a) {
            *item = a;
            *len = (size_t)(b - a);
            return 1;
        }
    }
    return 0;
}

int codec_cidr_ok(const char *s, size_t n)
{
    char buf[64];
    if (n == 0 || n >= sizeof(buf))
        return 0;
    memcpy(buf, s, n);
    buf[n] = '\0';
    char *slash = strchr(buf, '/');
    long prefix = -1;
    if (slash != NULL) {
        *slash = '\0';
        const char *p = slash + 1;
        if (*p == '\0' || strlen(p) > 3)
            return 0;
        prefix = 0;
        for (; *p; p++) {
            if (*p < '0' || *p > '9')
                return 0;
            prefix = prefix * 10 + (*p - '0');
        }
    }
    unsigned char addr[16];
    if (inet_pton(AF_INET, buf, addr) == 1)
        return prefix <= 32;
    if (inet_pton(AF_INET6, buf, addr) == 1)
        return prefix <= 128;
    return 0;
}

int codec_list_all(const char *list, int (*ok)(const char *, size_t), char *bad, size_t badn)
{
    const char *p = list, *item;
    size_t len;
    while (codec_list_next(&p, &item, &len)) {
        if (!ok(item, len)) {
            snprintf(bad, badn, "%.*s", (int)(len > 64 ? 64 : len), item);
            return 0;
        }
    }
    return 1;
}

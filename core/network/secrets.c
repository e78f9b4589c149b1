/*
 * secrets.c: the operator's secrets file (core/network/secrets.h). Parsing is pure and bounded;
 * resolving reads runboxd's environment and the files the lines name. Errors name the line, the
 * secret and the source, never a value.
 */
#include "core/network/secrets.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/codec.h"

static int name_char(char c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '.' ||
           c == '-';
}

static int token_char(char c) /* an HTTP header name's characters (RFC 9110 token) */
{
    return name_char(c) || (c != '\0' && strchr("!#$%&'*+^`|~", c) != NULL);
}

static int var_ok(const char *s, size_t n)
{
    if (n == 0 || n > SECRET_VAR_MAX || (s[0] >= '0' && s[0] <= '9'))
        return 0;
    for (size_t i = 0; i < n; i++)
        if (!((s[i] >= 'A' && s[i] <= 'Z') || (s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') ||
              s[i] == '_'))
            return 0;
    return 1;
}

static void wipe_free(char *p)
{
    if (p == NULL)
        return;
    volatile char *v = p;
    while (*v)
        *v++ = '\0';
    free(p);
}

static void def_dispose(secret_def *d)
{
    free(d->keys);
    wipe_free(d->source_text);
    wipe_free(d->value);
    d->keys = d->source_text = d->value = NULL;
}

void secrets_dispose(secret_set *s)
{
    if (s == NULL)
        return;
    for (size_t i = 0; i < s->n; i++)
        def_dispose(&s->items[i]);
    free(s->items);
    s->items = NULL;
    s->n = 0;
}

/* Whether the value v[0..n) can travel in a header: SECRET_VALUE_MIN..MAX visible ASCII
 * characters; why says what is wrong otherwise (never the value). */
static int value_ok(const char *v, size_t n, secret_kind kind, const char **why)
{
    if (n < SECRET_VALUE_MIN || n > SECRET_VALUE_MAX) {
        *why = n == 0 ? "is empty" : n < SECRET_VALUE_MIN ? "is shorter than 8 characters" : "is longer than 4096 characters";
        return 0;
    }
    for (size_t i = 0; i < n; i++) {
        if (v[i] < 0x21 || v[i] > 0x7e) {
            *why = "holds a character a header cannot carry (visible ASCII only: no spaces, control characters or "
                   "non-ASCII)";
            return 0;
        }
    }
    if (kind == SECRET_BASIC && memchr(v, ':', n) == NULL) {
        *why = "is not user:password (as=basic)";
        return 0;
    }
    return 1;
}

/* Parses one key=value word of the line into d; sets what it saw in *seen (bit per key). */
enum { K_HOSTS = 1, K_AS = 2, K_KEYS = 4, K_SOURCE = 8, K_VAR = 16 };

/* Errors quote no word of the line but key names: a word may be (or hold) a value, as when a
 * space slipped in (value= sk-...). word is the word's position on the line, for the message. */
static rb_err parse_word(secret_def *d, const char *w, size_t n, int word, int *seen, char *why, size_t whyn)
{
    const char *eq = memchr(w, '=', n);
    if (eq == NULL) {
        snprintf(why, whyn, "word %d is not key=value (hosts=, as=, keys=, value=, from-env=, from-file=, var=)",
                 word);
        return RB_EINVAL;
    }
    size_t kl = (size_t)(eq - w);
    const char *v = eq + 1;
    size_t vl = n - kl - 1;
#define IS(k) (kl == sizeof(k) - 1 && memcmp(w, k, kl) == 0)
    int bit = IS("hosts") ? K_HOSTS : IS("as") ? K_AS : IS("keys") ? K_KEYS : IS("var") ? K_VAR
            : (IS("value") || IS("from-env") || IS("from-file")) ? K_SOURCE : 0;
    if (bit == 0) {
        snprintf(why, whyn, "word %d: unknown key (hosts, as, keys, value, from-env, from-file, var)", word);
        return RB_EINVAL;
    }
    if (*seen & bit) {
        snprintf(why, whyn, "%s twice", bit == K_SOURCE ? "a source (value=, from-env=, from-file=)" : "a key");
        return RB_EINVAL;
    }
    *seen |= bit;
    if (bit == K_HOSTS) {
        const char *p = v, *item;
        size_t len;
        char *list = xstrndup(v, vl);
        p = list;
        while (codec_list_next(&p, &item, &len)) {
            char pwhy[HOSTPATTERN_WHY_MAX];
            if (d->n_hosts == SECRET_HOSTS_MAX) {
                snprintf(why, whyn, "more than %d host patterns", SECRET_HOSTS_MAX);
                free(list);
                return RB_EINVAL;
            }
            if (hostpattern_parse(item, len, &d->hosts[d->n_hosts], pwhy) != 0) {
                snprintf(why, whyn, "hosts=: host pattern %zu: %s", d->n_hosts + 1, pwhy);
                free(list);
                return RB_EINVAL;
            }
            d->n_hosts++;
        }
        free(list);
        if (d->n_hosts == 0) {
            snprintf(why, whyn, "hosts= names no host pattern");
            return RB_EINVAL;
        }
    } else if (bit == K_AS) {
        if (vl == 6 && memcmp(v, "bearer", 6) == 0) {
            d->kind = SECRET_BEARER;
        } else if (vl == 5 && memcmp(v, "basic", 5) == 0) {
            d->kind = SECRET_BASIC;
        } else if (vl > 7 && memcmp(v, "header:", 7) == 0 && vl - 7 <= SECRET_HEADER_MAX) {
            for (size_t i = 7; i < vl; i++) {
                if (!token_char(v[i])) {
                    snprintf(why, whyn, "as=header:NAME: NAME is not a header name");
                    return RB_EINVAL;
                }
            }
            d->kind = SECRET_HEADER;
            snprintf(d->header, sizeof(d->header), "%.*s", (int)(vl - 7), v + 7);
            const char *h = d->header;
            if (strcasecmp(h, "host") == 0 || strcasecmp(h, "content-length") == 0 ||
                strcasecmp(h, "transfer-encoding") == 0 || strcasecmp(h, "connection") == 0 ||
                strncasecmp(h, "proxy-", 6) == 0) {
                snprintf(why, whyn, "as=header:NAME: a header the proxy must set itself (Host, Content-Length, "
                                    "Transfer-Encoding, Connection, Proxy-*)");
                return RB_EINVAL;
            }
            return RB_OK;
        } else {
            snprintf(why, whyn, "as= is bearer, basic or header:NAME");
            return RB_EINVAL;
        }
        snprintf(d->header, sizeof(d->header), "Authorization");
    } else if (bit == K_KEYS) {
        const char *p, *item;
        size_t len;
        char *list = xstrndup(v, vl);
        p = list;
        int any = 0, count = 0;
        while (codec_list_next(&p, &item, &len)) {
            count++;
            if (len == 1 && item[0] == '*') {
                any = 1;
                continue;
            }
            for (size_t i = 0; i < len; i++) {
                if (!name_char(item[i]) || len > 64) {
                    snprintf(why, whyn, "keys=: item %d is not a key name ([A-Za-z0-9._-], or * for every key)",
                             count);
                    free(list);
                    return RB_EINVAL;
                }
            }
        }
        if (count == 0 || (any && count > 1)) {
            snprintf(why, whyn, "keys= names API keys by name, joined by ',', or is * (every key)");
            free(list);
            return RB_EINVAL;
        }
        d->keys = list;
    } else if (bit == K_VAR) {
        if (!var_ok(v, vl)) {
            snprintf(why, whyn, "var= is not an environment variable name ([A-Za-z_][A-Za-z0-9_]*)");
            return RB_EINVAL;
        }
        snprintf(d->var, sizeof(d->var), "%.*s", (int)vl, v);
    } else { /* the source */
        d->source = IS("value") ? SECRET_FROM_VALUE : IS("from-env") ? SECRET_FROM_ENV : SECRET_FROM_FILE;
        if (vl == 0) {
            snprintf(why, whyn, "%.*s= is empty", (int)kl, w);
            return RB_EINVAL;
        }
        if (d->source == SECRET_FROM_ENV && !var_ok(v, vl)) {
            snprintf(why, whyn, "from-env= is not an environment variable name");
            return RB_EINVAL;
        }
        if (d->source == SECRET_FROM_FILE && (v[0] != '/' || vl > 1024)) {
            snprintf(why, whyn, "from-file= needs an absolute path");
            return RB_EINVAL;
        }
        if (d->source == SECRET_FROM_VALUE && vl > SECRET_VALUE_MAX) {
            snprintf(why, whyn, "value= is longer than %d characters", SECRET_VALUE_MAX);
            return RB_EINVAL;
        }
        d->source_text = xstrndup(v, vl);
    }
#undef IS
    return RB_OK;
}

/* Parses one line's words (no comment, not blank) into d. */
static rb_err parse_line(secret_def *d, const char *s, size_t n, char *why, size_t whyn)
{
    size_t i = 0;
    int seen = 0, word = 1;
    while (i < n && (s[i] == ' ' || s[i] == '\t'))
        i++;
    size_t b = i;
    while (i < n && s[i] != ' ' && s[i] != '\t')
        i++;
    if (i - b > SECRET_NAME_MAX) {
        snprintf(why, whyn, "the name is longer than %d characters", SECRET_NAME_MAX);
        return RB_EINVAL;
    }
    for (size_t k = b; k < i; k++) {
        if (!name_char(s[k])) {
            snprintf(why, whyn, "the first word is not a secret name ([A-Za-z0-9._-], then key=value words)");
            return RB_EINVAL;
        }
    }
    snprintf(d->name, sizeof(d->name), "%.*s", (int)(i - b), s + b);
    while (i < n) {
        while (i < n && (s[i] == ' ' || s[i] == '\t'))
            i++;
        b = i;
        while (i < n && s[i] != ' ' && s[i] != '\t')
            i++;
        if (i > b && parse_word(d, s + b, i - b, ++word, &seen, why, whyn) != RB_OK)
            return RB_EINVAL;
    }
    const char *missing = !(seen & K_HOSTS) ? "hosts=" : !(seen & K_AS) ? "as=" : !(seen & K_KEYS) ? "keys="
                        : !(seen & K_SOURCE) ? "a source (value=, from-env= or from-file=)" : NULL;
    if (missing != NULL) {
        snprintf(why, whyn, "secret \"%s\" has no %s", d->name, missing);
        return RB_EINVAL;
    }
    if (d->source == SECRET_FROM_VALUE) {
        const char *bad;
        if (!value_ok(d->source_text, strlen(d->source_text), d->kind, &bad)) {
            snprintf(why, whyn, "secret \"%s\": its value %s", d->name, bad);
            return RB_EINVAL;
        }
    }
    if (!(seen & K_VAR)) {
        size_t k;
        for (k = 0; d->name[k] && k < SECRET_VAR_MAX; k++) {
            char c = d->name[k];
            d->var[k] = (c >= 'a' && c <= 'z') ? (char)(c - 32) : (c == '.' || c == '-') ? '_' : c;
        }
        d->var[k] = '\0';
        if (!var_ok(d->var, k)) {
            snprintf(why, whyn, "secret \"%s\": its name is no environment variable name: give one with var=",
                     d->name);
            return RB_EINVAL;
        }
    }
    return RB_OK;
}

rb_err secrets_parse(const char *text, size_t len, secret_set *out, char *err)
{
    out->items = NULL;
    out->n = 0;
    if (len > SECRETS_FILE_MAX)
        return rb_fail(RB_EINVAL, err, "larger than %d bytes", SECRETS_FILE_MAX);
    if (memchr(text, '\0', len) != NULL)
        return rb_fail(RB_EINVAL, err, "holds a NUL byte (not a text file)");
    size_t cap = 0, pos = 0;
    int line = 0;
    while (pos < len) {
        const char *s = text + pos;
        const char *nl = memchr(s, '\n', len - pos);
        size_t n = nl ? (size_t)(nl - s) : len - pos;
        pos += n + (nl != NULL);
        line++;
        if (n > 0 && s[n - 1] == '\r')
            n--;
        if (n > SECRETS_LINE_MAX) {
            secrets_dispose(out);
            return rb_fail(RB_EINVAL, err, "line %d: longer than %d bytes", line, SECRETS_LINE_MAX);
        }
        size_t i = 0;
        while (i < n && (s[i] == ' ' || s[i] == '\t'))
            i++;
        if (i == n || s[i] == '#')
            continue;
        for (size_t k = i; k < n; k++) {
            if ((unsigned char)s[k] < 0x20 && s[k] != '\t') {
                secrets_dispose(out);
                return rb_fail(RB_EINVAL, err, "line %d: a control character", line);
            }
        }
        if (out->n == SECRETS_MAX) {
            secrets_dispose(out);
            return rb_fail(RB_EINVAL, err, "line %d: more than %d secrets", line, SECRETS_MAX);
        }
        if (out->n == cap) {
            cap = cap ? cap * 2 : 8;
            out->items = xrealloc(out->items, cap * sizeof(*out->items));
        }
        secret_def *d = &out->items[out->n];
        memset(d, 0, sizeof(*d));
        d->line = line;
        char why[400];
        if (parse_line(d, s + i, n - i, why, sizeof(why)) != RB_OK) {
            def_dispose(d);
            secrets_dispose(out);
            return rb_fail(RB_EINVAL, err, "line %d: %s", line, why);
        }
        out->n++;
        for (size_t k = 0; k + 1 < out->n; k++) {
            rb_err dup = RB_OK;
            if (strcmp(out->items[k].name, d->name) == 0)
                dup = rb_fail(RB_EINVAL, err, "line %d: secret \"%s\" again (first on line %d)", line,
                              out->items[k].name, out->items[k].line);
            else if (strcmp(out->items[k].var, d->var) == 0)
                dup = rb_fail(RB_EINVAL, err, "line %d: the variable %s again (of secret \"%s\"): give one with var=",
                              line, d->var, out->items[k].name);
            if (dup != RB_OK) {
                secrets_dispose(out);
                return dup;
            }
        }
    }
    return RB_OK;
}

/* Reads at most max bytes of path into a new NUL-terminated buffer. */
static rb_err read_small(const char *path, size_t max, char **out, size_t *len, char *err)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        return rb_fail(RB_EIO, err, "cannot read %s: %s", path, strerror(errno));
    char *buf = xmalloc(max + 2);
    size_t n = fread(buf, 1, max + 1, f);
    int bad = ferror(f);
    fclose(f);
    if (bad || n > max) {
        memset(buf, 0, max + 2);
        free(buf);
        return rb_fail(bad ? RB_EIO : RB_EINVAL, err, "%s: %s", path, bad ? "read error" : "too large");
    }
    buf[n] = '\0';
    *out = buf;
    *len = n;
    return RB_OK;
}

rb_err secrets_resolve(secret_set *s, char *err)
{
    for (size_t i = 0; i < s->n; i++) {
        secret_def *d = &s->items[i];
        char *v = NULL;
        size_t n = 0;
        const char *why = NULL;
        char src[200];
        if (d->source == SECRET_FROM_VALUE) {
            v = xstrdup(d->source_text);
            n = strlen(v);
            snprintf(src, sizeof(src), "value=");
        } else if (d->source == SECRET_FROM_ENV) {
            const char *e = getenv(d->source_text);
            snprintf(src, sizeof(src), "from-env=%s", d->source_text);
            if (e == NULL)
                return rb_fail(RB_EINVAL, err, "secret \"%s\" (line %d): %s: runboxd has no such environment variable",
                               d->name, d->line, src);
            v = xstrdup(e);
            n = strlen(v);
        } else {
            char rerr[RB_ERR_LEN];
            snprintf(src, sizeof(src), "from-file=%.180s", d->source_text);
            if (read_small(d->source_text, SECRET_VALUE_MAX + 2, &v, &n, rerr) != RB_OK)
                return rb_fail(RB_EINVAL, err, "secret \"%s\" (line %d): %s", d->name, d->line, rerr);
            if (n > 0 && v[n - 1] == '\n')
                v[--n] = '\0';
            if (n > 0 && v[n - 1] == '\r')
                v[--n] = '\0';
            if (memchr(v, '\0', n) != NULL) {
                wipe_free(v);
                return rb_fail(RB_EINVAL, err, "secret \"%s\" (line %d): %s holds a NUL byte", d->name, d->line, src);
            }
        }
        if (!value_ok(v, n, d->kind, &why)) {
            wipe_free(v);
            return rb_fail(RB_EINVAL, err, "secret \"%s\" (line %d): its value (%s) %s", d->name, d->line, src, why);
        }
        wipe_free(d->value);
        d->value = v;
    }
    return RB_OK;
}

rb_err secrets_load(const char *path, secret_set *out, char *err)
{
    char *text;
    size_t len;
    char e2[RB_ERR_LEN];
    out->items = NULL;
    out->n = 0;
    rb_err e = read_small(path, SECRETS_FILE_MAX, &text, &len, e2);
    if (e != RB_OK)
        return rb_fail(e, err, "%s", e2);
    e = secrets_parse(text, len, out, e2);
    wipe_free(text);
    if (e == RB_OK)
        e = secrets_resolve(out, e2);
    if (e != RB_OK) {
        secrets_dispose(out);
        return rb_fail(e, err, "%s: %s", path, e2);
    }
    return RB_OK;
}

const secret_def *secrets_find(const secret_set *s, const char *name)
{
    for (size_t i = 0; s != NULL && i < s->n; i++)
        if (strcmp(s->items[i].name, name) == 0)
            return &s->items[i];
    return NULL;
}

int secret_key_allowed(const secret_def *d, const char *owner)
{
    if (owner == NULL || strcmp(d->keys, "*") == 0)
        return 1;
    const char *p = d->keys, *item;
    size_t len;
    while (codec_list_next(&p, &item, &len))
        if (len == strlen(owner) && memcmp(item, owner, len) == 0)
            return 1;
    return 0;
}

void secret_placeholder(const secret_def *d, char *out, size_t n)
{
    snprintf(out, n, SECRET_PLACEHOLDER_PREFIX "%s", d->name);
}

json_t *secret_proxy_entry(const secret_def *d)
{
    json_t *hosts = json_array(), *scrub = json_array();
    for (size_t i = 0; i < d->n_hosts; i++) {
        char t[HOSTPATTERN_TEXT_MAX];
        hostpattern_text(&d->hosts[i], t);
        json_array_append_new(hosts, json_string(t));
    }
    char *header_value;
    json_array_append_new(scrub, json_string(d->value));
    if (d->kind == SECRET_BEARER) {
        header_value = xasprintf("Bearer %s", d->value);
    } else if (d->kind == SECRET_BASIC) {
        char *b64 = codec_base64_encode(d->value, strlen(d->value));
        header_value = xasprintf("Basic %s", b64);
        json_array_append_new(scrub, json_string(b64));
        const char *pw = strchr(d->value, ':') + 1;
        if (strlen(pw) >= SECRET_VALUE_MIN)
            json_array_append_new(scrub, json_string(pw));
        wipe_free(b64);
    } else {
        header_value = xstrdup(d->value);
    }
    json_t *out = json_pack("{s:s, s:o, s:s, s:s, s:o}", "name", d->name, "hosts", hosts, "header", d->header, "value",
                            header_value, "scrub", scrub);
    wipe_free(header_value);
    return out;
}

/*
 * auth.c: API keys (server/auth.h): the key file's parser, the principals that outlive
 * reloads, and the per-key request budget (a token bucket).
 */
#include "server/auth.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define AUTH_FILE_MAX (1024 * 1024)
#define AUTH_LINE_MAX 1024
#define AUTH_QUOTA_MAX 1000000

typedef struct principal {
    core_caller caller; /* owner points at name */
    char name[AUTH_NAME_MAX + 1];
    uint8_t hash[32];
    int enabled;
    int rps;
    char egress[AUTH_EGRESS_MAX + 1]; /* caller.egress points here */
    char shares[AUTH_SHARES_MAX + 1]; /* caller.shares points here */
    char isolation[AUTH_ISOLATION_MAX + 1]; /* caller.isolation points here */
    double tokens;    /* the rate budget left */
    uint64_t last_ms; /* when tokens was last topped up */
} principal;

struct auth {
    char *path;
    principal **p; /* every name ever loaded, in order (never shrinks: see auth.h) */
    size_t n;
};

/* ---- the file ------------------------------------------------------------------------------ */

static int hexval(int c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* Splits line[0..len) into at most max whitespace-separated fields. Returns the count, or
 * max + 1 when there are more. */
static size_t fields(const char *line, size_t len, const char **f, size_t *flen, size_t max)
{
    size_t n = 0, i = 0;
    while (i < len) {
        while (i < len && (line[i] == ' ' || line[i] == '\t'))
            i++;
        if (i == len)
            break;
        size_t start = i;
        while (i < len && line[i] != ' ' && line[i] != '\t')
            i++;
        if (n == max)
            return max + 1;
        f[n] = line + start;
        flen[n] = i - start;
        n++;
    }
    return n;
}

/* The check of egress= values (core_egress_limit_check, set by the daemon: auth_set_egress_check). */
static rb_err (*egress_check)(const char *list, char *err);

void auth_set_egress_check(rb_err (*check)(const char *list, char *err))
{
    egress_check = check;
}

/* The check of shares= values (core_shares_key_check, set by the daemon: auth_set_shares_check). */
static rb_err (*shares_check)(const char *list, char *err);

void auth_set_shares_check(rb_err (*check)(const char *list, char *err))
{
    shares_check = check;
}

/* The check of isolation= values (isolation_key_check, set by the daemon: auth_set_isolation_check). */
static rb_err (*isolation_check)(const char *list, char *err);

void auth_set_isolation_check(rb_err (*check)(const char *list, char *err))
{
    isolation_check = check;
}

static rb_err parse_quota(const char *f, size_t len, auth_key *k, int lineno, char *err)
{
    if (len >= 5 && memcmp(f, "role=", 5) == 0) { /* what it may see and do (docs/security.md, Roles) */
        static const char *const roles[] = {"user", "admin", "viewer"};
        static const int values[] = {CORE_ROLE_USER, CORE_ROLE_ADMIN, CORE_ROLE_VIEWER};
        for (size_t i = 0; i < sizeof(roles) / sizeof(roles[0]); i++)
            if (len - 5 == strlen(roles[i]) && memcmp(f + 5, roles[i], len - 5) == 0) {
                k->role = values[i];
                return RB_OK;
            }
        return rb_fail(RB_EINVAL, err, "line %d: role= is user, admin or viewer", lineno);
    }
    if (len >= 10 && memcmp(f, "isolation=", 10) == 0) { /* the isolations it may use (docs/security.md) */
        char why[RB_ERR_LEN];
        if (len - 10 == 0 || len - 10 > AUTH_ISOLATION_MAX)
            return rb_fail(RB_EINVAL, err, "line %d: isolation= takes * or isolations joined by ',' "
                                           "(container,gvisor), at most %d characters", lineno, AUTH_ISOLATION_MAX);
        memcpy(k->isolation, f + 10, len - 10);
        k->isolation[len - 10] = '\0';
        if (isolation_check != NULL && isolation_check(k->isolation, why) != RB_OK)
            return rb_fail(RB_EINVAL, err, "line %d: %s", lineno, why);
        return RB_OK;
    }
    if (len >= 7 && memcmp(f, "shares=", 7) == 0) { /* the shared folders it may mount (docs/data.md) */
        char why[RB_ERR_LEN];
        if (len - 7 == 0 || len - 7 > AUTH_SHARES_MAX)
            return rb_fail(RB_EINVAL, err, "line %d: shares= takes none, * or share names (photos,data), at most %d "
                                           "characters", lineno, AUTH_SHARES_MAX);
        memcpy(k->shares, f + 7, len - 7);
        k->shares[len - 7] = '\0';
        if (shares_check != NULL && shares_check(k->shares, why) != RB_OK)
            return rb_fail(RB_EINVAL, err, "line %d: shares=: %s", lineno, why);
        return RB_OK;
    }
    if (len >= 7 && memcmp(f, "egress=", 7) == 0) { /* the key's network limit (docs/network.md) */
        char why[RB_ERR_LEN];
        if (len - 7 == 0 || len - 7 > AUTH_EGRESS_MAX)
            return rb_fail(RB_EINVAL, err, "line %d: egress= takes none, * or host patterns (pypi.org,*.example.com), "
                                           "at most %d characters", lineno, AUTH_EGRESS_MAX);
        memcpy(k->egress, f + 7, len - 7);
        k->egress[len - 7] = '\0';
        if (egress_check != NULL && egress_check(k->egress, why) != RB_OK)
            return rb_fail(RB_EINVAL, err, "line %d: egress=: %s", lineno, why);
        return RB_OK;
    }
    static const char *const names[] = {"sessions", "executions", "rps"};
    int *slots[] = {&k->sessions, &k->executions, &k->rps};
    const char *eq = memchr(f, '=', len);
    for (size_t i = 0; eq != NULL && i < 3; i++) {
        size_t nl = strlen(names[i]);
        if ((size_t)(eq - f) != nl || memcmp(f, names[i], nl) != 0)
            continue;
        const char *v = eq + 1, *end = f + len;
        long val = 0;
        if (v == end)
            break;
        for (; v < end; v++) {
            if (*v < '0' || *v > '9' || val > AUTH_QUOTA_MAX)
                return rb_fail(RB_EINVAL, err, "line %d: %.*s: a quota is a whole number from 0 to %d", lineno,
                               (int)(len > 64 ? 64 : len), f, AUTH_QUOTA_MAX);
            val = val * 10 + (*v - '0');
        }
        if (val > AUTH_QUOTA_MAX)
            return rb_fail(RB_EINVAL, err, "line %d: %.*s: a quota is a whole number from 0 to %d", lineno,
                           (int)(len > 64 ? 64 : len), f, AUTH_QUOTA_MAX);
        *slots[i] = (int)val;
        return RB_OK;
    }
    return rb_fail(RB_EINVAL, err,
                   "line %d: '%.*s' is not a quota; use sessions=N, executions=N or rps=N (0 = no limit), egress=LIST, "
                   "shares=LIST, isolation=LIST or role=user|admin|viewer",
                   lineno,
                   (int)(len > 64 ? 64 : len), f);
}

static rb_err parse_line(const char *line, size_t len, auth_key *k, int lineno, char *err)
{
    const char *f[10];
    size_t fl[10];
    size_t n = fields(line, len, f, fl, 9);
    if (n > 9)
        return rb_fail(RB_EINVAL, err, "line %d: too many fields; a line is: name sha256:<64 hex digits> "
                                       "[sessions=N] [executions=N] [rps=N] [egress=LIST] [shares=LIST] "
                                       "[isolation=LIST] [role=user|admin|viewer]", lineno);
    if (n < 2)
        return rb_fail(RB_EINVAL, err, "line %d: a line is: name sha256:<64 hex digits> [sessions=N] "
                                       "[executions=N] [rps=N]", lineno);
    memset(k, 0, sizeof(*k));
    if (fl[0] > AUTH_NAME_MAX)
        return rb_fail(RB_EINVAL, err, "line %d: the name is longer than %d characters", lineno, AUTH_NAME_MAX);
    for (size_t i = 0; i < fl[0]; i++) {
        unsigned char ch = (unsigned char)f[0][i];
        if (!isalnum(ch) && ch != '.' && ch != '_' && ch != '-')
            return rb_fail(RB_EINVAL, err, "line %d: a name has only letters, digits, '.', '_' and '-'", lineno);
    }
    memcpy(k->name, f[0], fl[0]);
    if (fl[1] != 7 + 64 || memcmp(f[1], "sha256:", 7) != 0)
        return rb_fail(RB_EINVAL, err,
                       "line %d: the second field is the key's hash, sha256:<64 hex digits> (printf %%s \"$KEY\" | "
                       "sha256sum); the key itself is never written to the file",
                       lineno);
    for (size_t i = 0; i < 32; i++) {
        int hi = hexval(f[1][7 + 2 * i]), lo = hexval(f[1][8 + 2 * i]);
        if (hi < 0 || lo < 0)
            return rb_fail(RB_EINVAL, err, "line %d: the hash has a character that is not a hex digit", lineno);
        k->hash[i] = (uint8_t)(hi << 4 | lo);
    }
    for (size_t i = 2; i < n; i++) {
        rb_err e = parse_quota(f[i], fl[i], k, lineno, err);
        if (e != RB_OK)
            return e;
    }
    return RB_OK;
}

rb_err auth_parse(const char *text, size_t len, auth_key **keys, size_t *n, char *err)
{
    auth_key *out = NULL;
    size_t count = 0;
    int lineno = 0;
    rb_err e = RB_OK;
    *keys = NULL;
    *n = 0;
    if (memchr(text, '\0', len) != NULL)
        return rb_fail(RB_EINVAL, err, "the key file holds a NUL byte; it is a text file of lines");
    for (size_t pos = 0; pos < len && e == RB_OK;) {
        const char *nl = memchr(text + pos, '\n', len - pos);
        size_t end = nl != NULL ? (size_t)(nl - text) : len;
        const char *line = text + pos;
        size_t ll = end - pos;
        pos = end + 1;
        lineno++;
        if (ll > 0 && line[ll - 1] == '\r')
            ll--;
        if (ll > AUTH_LINE_MAX) {
            e = rb_fail(RB_EINVAL, err, "line %d is longer than %d bytes", lineno, AUTH_LINE_MAX);
            break;
        }
        size_t i = 0;
        while (i < ll && (line[i] == ' ' || line[i] == '\t'))
            i++;
        if (i == ll || line[i] == '#')
            continue;
        if (count == AUTH_KEYS_MAX) {
            e = rb_fail(RB_EINVAL, err, "more than %d keys", AUTH_KEYS_MAX);
            break;
        }
        auth_key k;
        if ((e = parse_line(line, ll, &k, lineno, err)) != RB_OK)
            break;
        for (size_t j = 0; j < count && e == RB_OK; j++) {
            if (strcmp(out[j].name, k.name) == 0)
                e = rb_fail(RB_EINVAL, err, "line %d: the name '%s' is listed twice", lineno, k.name);
            else if (CRYPTO_memcmp(out[j].hash, k.hash, 32) == 0)
                e = rb_fail(RB_EINVAL, err, "line %d: '%s' has the same key as '%s'; give each caller its own key",
                            lineno, k.name, out[j].name);
        }
        if (e != RB_OK)
            break;
        if ((count & (count - 1)) == 0)
            out = xrealloc(out, (count == 0 ? 1 : count * 2) * sizeof(*out));
        out[count++] = k;
    }
    if (e == RB_OK && count == 0)
        e = rb_fail(RB_EINVAL, err, "the key file lists no key; add a line: name sha256:<hash of the key>");
    if (e != RB_OK) {
        free(out);
        return e;
    }
    *keys = out;
    *n = count;
    return RB_OK;
}

int auth_bearer_token(const char *value, size_t len, const char **tok, size_t *toklen)
{
    while (len > 0 && (*value == ' ' || *value == '\t')) {
        value++;
        len--;
    }
    /* "Bearer KEY", or Jupyter's "token KEY" (its clients: server/jupyter/) */
    size_t scheme = len >= 7 && strncasecmp(value, "bearer", 6) == 0 ? 6 : len >= 6 && strncasecmp(value, "token", 5) == 0 ? 5 : 0;
    if (scheme == 0 || (value[scheme] != ' ' && value[scheme] != '\t'))
        return 0;
    value += scheme + 1;
    len -= scheme + 1;
    while (len > 0 && (*value == ' ' || *value == '\t')) {
        value++;
        len--;
    }
    while (len > 0 && (value[len - 1] == ' ' || value[len - 1] == '\t'))
        len--;
    if (len == 0)
        return 0;
    *tok = value;
    *toklen = len;
    return 1;
}

/* ---- the table ----------------------------------------------------------------------------- */

static rb_err read_file(const char *path, char **text, size_t *len, char *err)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        return rb_fail(RB_EIO, err, "cannot open the API key file %s: %s", path, strerror(errno));
    char *buf = xmalloc(AUTH_FILE_MAX + 1);
    size_t n = fread(buf, 1, AUTH_FILE_MAX + 1, f);
    int bad = ferror(f);
    fclose(f);
    if (bad) {
        free(buf);
        return rb_fail(RB_EIO, err, "cannot read the API key file %s", path);
    }
    if (n > AUTH_FILE_MAX) {
        free(buf);
        return rb_fail(RB_EINVAL, err, "the API key file %s is larger than %d bytes", path, AUTH_FILE_MAX);
    }
    *text = buf;
    *len = n;
    return RB_OK;
}

static principal *lookup(auth *a, const char *name)
{
    for (size_t i = 0; i < a->n; i++)
        if (strcmp(a->p[i]->name, name) == 0)
            return a->p[i];
    return NULL;
}

rb_err auth_reload(auth *a, size_t *nkeys, char *err)
{
    char *text = NULL;
    size_t len = 0, n = 0;
    auth_key *keys = NULL;
    char why[RB_ERR_LEN];
    rb_err e = read_file(a->path, &text, &len, err);
    if (e != RB_OK)
        return e;
    e = auth_parse(text, len, &keys, &n, why);
    free(text);
    if (e != RB_OK)
        return rb_fail(e, err, "%s: %s", a->path, why);
    for (size_t i = 0; i < a->n; i++)
        a->p[i]->enabled = 0;
    for (size_t i = 0; i < n; i++) {
        principal *p = lookup(a, keys[i].name);
        if (p == NULL) {
            p = xcalloc(1, sizeof(*p));
            memcpy(p->name, keys[i].name, sizeof(p->name));
            p->caller.owner = p->name;
            a->p = xrealloc(a->p, (a->n + 1) * sizeof(*a->p));
            a->p[a->n++] = p;
        }
        memcpy(p->hash, keys[i].hash, sizeof(p->hash));
        p->caller.max_sessions = keys[i].sessions;
        p->caller.max_executions = keys[i].executions;
        memcpy(p->egress, keys[i].egress, sizeof(p->egress));
        p->caller.egress = p->egress;
        memcpy(p->shares, keys[i].shares, sizeof(p->shares));
        p->caller.shares = p->shares;
        memcpy(p->isolation, keys[i].isolation, sizeof(p->isolation));
        p->caller.isolation = p->isolation;
        p->caller.role = keys[i].role;
        if (p->rps != keys[i].rps)
            p->tokens = keys[i].rps; /* a new budget starts full */
        p->rps = keys[i].rps;
        p->enabled = 1;
    }
    free(keys);
    if (nkeys != NULL)
        *nkeys = n;
    return RB_OK;
}

rb_err auth_new(const char *path, auth **out, char *err)
{
    auth *a = xcalloc(1, sizeof(*a));
    a->path = xstrdup(path);
    rb_err e = auth_reload(a, NULL, err);
    if (e != RB_OK) {
        auth_free(a);
        return e;
    }
    *out = a;
    return RB_OK;
}

void auth_free(auth *a)
{
    if (a == NULL)
        return;
    for (size_t i = 0; i < a->n; i++)
        free(a->p[i]);
    free(a->p);
    free(a->path);
    free(a);
}

/* ---- checking a request -------------------------------------------------------------------- */

auth_result auth_check(auth *a, const char *token, size_t len, uint64_t now_ms, const core_caller **who,
                       int *retry_after)
{
    *who = NULL;
    *retry_after = 0;
    if (token == NULL || len == 0)
        return AUTH_MISSING;
    uint8_t hash[32];
    unsigned int hlen = 0;
    if (!EVP_Digest(token, len, hash, &hlen, EVP_sha256(), NULL) || hlen != sizeof(hash))
        return AUTH_INVALID;
    principal *found = NULL;
    /* Every enabled key is compared, in constant time, whatever matched before. */
    for (size_t i = 0; i < a->n; i++)
        if (a->p[i]->enabled && CRYPTO_memcmp(a->p[i]->hash, hash, sizeof(hash)) == 0)
            found = a->p[i];
    if (found == NULL)
        return AUTH_INVALID;
    if (found->rps > 0) {
        double cap = found->rps;
        if (now_ms > found->last_ms) {
            found->tokens += (double)(now_ms - found->last_ms) * cap / 1000.0;
            if (found->tokens > cap)
                found->tokens = cap;
        }
        found->last_ms = now_ms;
        if (found->tokens < 1.0) {
            int s = (int)ceil((1.0 - found->tokens) / cap);
            *retry_after = s < 1 ? 1 : s;
            *who = &found->caller;
            return AUTH_RATE;
        }
        found->tokens -= 1.0;
    }
    *who = &found->caller;
    return AUTH_OK;
}

const core_caller *auth_caller(auth *a, const char *name)
{
    principal *p = a != NULL && name != NULL ? lookup(a, name) : NULL;
    return p != NULL && p->enabled ? &p->caller : NULL;
}

/*
 * secrets: credentials that sandbox code can use but never see (docs/network.md, "Secrets").
 *
 * The operator defines them in a file (--secrets-file), one a line:
 *
 *     # name  hosts=PATTERNS            as=HOW              keys=KEYS      source
 *     openai  hosts=api.openai.com      as=bearer           keys=alice,bob from-env=OPENAI_API_KEY
 *     gh      hosts=api.github.com:443  as=header:X-Api-Key keys=*         from-file=/run/secrets/gh
 *     db      hosts=db.example.com      as=basic            keys=ci-bot    value=user:pa55word
 *
 * - hosts: host patterns (core/network/hostpattern.h), comma-separated: where the value may go;
 * - as: bearer (`Authorization: Bearer VALUE`), basic (VALUE is `user:password`, sent as
 *   `Authorization: Basic base64`) or header:NAME (`NAME: VALUE`);
 * - keys: the API keys (by name, server/auth.h) whose sessions may name it, or `*`;
 * - exactly one source: value=TEXT (in the file), from-env=VAR (runboxd's environment) or
 *   from-file=PATH (the file's contents, one trailing newline dropped);
 * - optional var=NAME: the environment variable that holds the placeholder in the sandbox
 *   (default: the name in upper case, other characters as '_').
 *
 * A value is 8 to 4096 visible ASCII characters (what a header can carry). Parsing is pure
 * (secrets_parse: untrusted-ish bytes, fuzzed); secrets_resolve reads the environment and files.
 * No function here puts a value into an error message: they name the line, the secret and the
 * source, never the value.
 */
#ifndef RB_CORE_NETWORK_SECRETS_H
#define RB_CORE_NETWORK_SECRETS_H

#include <jansson.h>
#include <stddef.h>

#include "base/base.h"
#include "core/network/hostpattern.h"

#define SECRETS_MAX 256             /* secrets in one file */
#define SECRETS_FILE_MAX (1 << 20)  /* bytes of the file */
#define SECRETS_LINE_MAX 8192       /* bytes of one line */
#define SECRET_NAME_MAX 64          /* [A-Za-z0-9_.-] */
#define SECRET_HOSTS_MAX 32         /* host patterns of one secret */
#define SECRET_HEADER_MAX 64        /* characters of a header name */
#define SECRET_VAR_MAX 64           /* characters of the sandbox variable's name */
#define SECRET_VALUE_MIN 8
#define SECRET_VALUE_MAX 4096
#define SECRET_PLACEHOLDER_PREFIX "runbox-secret-placeholder-"

typedef enum secret_kind { SECRET_BEARER, SECRET_BASIC, SECRET_HEADER } secret_kind;
typedef enum secret_source { SECRET_FROM_VALUE, SECRET_FROM_ENV, SECRET_FROM_FILE } secret_source;

typedef struct secret_def {
    char name[SECRET_NAME_MAX + 1];
    hostpattern hosts[SECRET_HOSTS_MAX];
    size_t n_hosts;
    secret_kind kind;
    char header[SECRET_HEADER_MAX + 1]; /* the header it is sent in ("Authorization" but for as=header:NAME) */
    char var[SECRET_VAR_MAX + 1];       /* the sandbox's variable holding the placeholder */
    char *keys;                         /* "*" or key names joined by ',' (heap) */
    secret_source source;
    char *source_text; /* the value (value=), the variable's name or the path (heap) */
    char *value;       /* the value once resolved (heap; NULL before secrets_resolve) */
    int line;          /* its line in the file */
} secret_def;

typedef struct secret_set {
    secret_def *items;
    size_t n;
} secret_set;

/** Parses a secrets file's text[0..len) (any bytes) into *out (the caller's: secrets_dispose).
 * RB_EINVAL naming the line and what is wrong (never a value); then *out is empty. A file
 * without any secret is valid. */
rb_err secrets_parse(const char *text, size_t len, secret_set *out, char *err);
/** Reads each secret's value from its source (the environment, a file) and checks it. RB_EINVAL
 * naming the secret and its source. */
rb_err secrets_resolve(secret_set *s, char *err);
/** Reads path (at most SECRETS_FILE_MAX bytes), parses and resolves it. RB_EIO when it cannot be
 * read, RB_EINVAL as above ("PATH: line N: ..."). */
rb_err secrets_load(const char *path, secret_set *out, char *err);
/** Frees what s holds (the values wiped first). Accepts NULL. */
void secrets_dispose(secret_set *s);

/** The secret named name, or NULL. */
const secret_def *secrets_find(const secret_set *s, const char *name);
/** Whether the sessions of API key owner may name d (owner NULL: the one trusted caller of a
 * runboxd without keys, which may name every secret). */
int secret_key_allowed(const secret_def *d, const char *owner);
/** What the egress proxy needs of d (new): {name, hosts: [...], header, value (the header's
 * value: "Bearer ...", "Basic ..."), scrub: [strings replaced in answers]}. */
json_t *secret_proxy_entry(const secret_def *d);
/** The placeholder the sandbox sees for d: SECRET_PLACEHOLDER_PREFIX NAME, in out[0..n). */
void secret_placeholder(const secret_def *d, char *out, size_t n);

#endif

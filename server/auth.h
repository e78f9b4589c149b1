/*
 * auth: API keys. Who may call runboxd, which sessions are theirs, and how much they may use.
 *
 * The operator lists keys in a file (--api-keys-file), one per line, by name and SHA-256 hash
 * (the key itself is never stored), with optional quotas:
 *
 *     # name   hash                                                                     quotas
 *     alice    sha256:2c26b46b68ffc68ff99b453c1d30413413422d706483bfa0f98a5e886266e7ae  sessions=5 rps=20
 *     ci-bot   sha256:fcde2b2edba56bf408601fb721fe9b5c338d10ee429ea04fae5511b68fbf8fb9  executions=2
 *
 * Quotas: sessions (live sessions at once), executions (queued + running at once), rps
 * (requests per second, with a burst of one second's worth); absent or 0 means no limit of its
 * own. shares=NAME,...|*|none names the shared folders (--share) the key's sessions may mount;
 * without it, none. isolation=container,gvisor|gvisor|* names the isolations its sessions may have
 * (docs/security.md); the first it allows of --isolation's and the list's is its default;
 * without it, every one. role=user|admin|viewer (default user): an admin sees and ends every key's
 * sessions, drains engines and reloads the keys; a viewer sees everything and changes nothing
 * (core_caller.role). A caller presents the key as `Authorization: Bearer <key>` (or `X-API-Key: <key>`, what
 * E2B's SDKs send). The file is read at start and again on SIGHUP (auth_reload); a file that
 * does not parse leaves the keys in force unchanged.
 *
 * Each name is a principal that lives as long as the auth object, across reloads, so that
 * pointers to its core_caller stay valid for work in flight: a key removed from the file is
 * disabled, not freed, and a key whose hash changes (rotation) keeps its sessions.
 */
#ifndef RB_SERVER_AUTH_H
#define RB_SERVER_AUTH_H

#include <stddef.h>
#include <stdint.h>

#include "base/base.h"
#include "core/core.h"

typedef struct auth auth;

/** Longest key name; names are [A-Za-z0-9._-]. */
#define AUTH_NAME_MAX 64
/** Most keys a file may list. */
#define AUTH_KEYS_MAX 4096

/* Characters of a key's egress limit (egress=LIST). */
#define AUTH_EGRESS_MAX 2048
/* Characters of a key's shares (shares=LIST). */
#define AUTH_SHARES_MAX 1024
/* Characters of a key's isolations (isolation=LIST). */
#define AUTH_ISOLATION_MAX 64

/** One line of a key file, as parsed. */
typedef struct auth_key {
    char name[AUTH_NAME_MAX + 1];
    uint8_t hash[32];
    int sessions, executions, rps;
    char egress[AUTH_EGRESS_MAX + 1]; /* egress=...: the key's network limit ("" : the server's) */
    char shares[AUTH_SHARES_MAX + 1]; /* shares=...: the shared folders it may mount ("": none) */
    char isolation[AUTH_ISOLATION_MAX + 1]; /* isolation=...: the isolations it may use ("": every one) */
    int role; /* role=user|admin|viewer: CORE_ROLE_* (default user) */
} auth_key;

/** The check of a key's egress= value (core_egress_limit_check) the parser applies from now on
 * (NULL: none). The daemon sets it before loading the file. */
void auth_set_egress_check(rb_err (*check)(const char *list, char *err));

/** The check of a key's shares= value (core_shares_key_check) the parser applies from now on
 * (NULL: none). The daemon sets it before loading the file. */
void auth_set_shares_check(rb_err (*check)(const char *list, char *err));

/** The check of a key's isolation= value (isolation_key_check) the parser applies from now on
 * (NULL: none). The daemon sets it before loading the file. */
void auth_set_isolation_check(rb_err (*check)(const char *list, char *err));

/** Parses a key file's text (untrusted bytes: NUL, overlong lines and anything unexpected are
 * errors naming the line). On success *keys (heap, free() it) holds *n keys; an empty file (no
 * key) is RB_EINVAL: it would lock everyone out. */
rb_err auth_parse(const char *text, size_t len, auth_key **keys, size_t *n, char *err);

/** The token of an Authorization header value ("Bearer <token>", or Jupyter's "token <token>";
 * scheme case-insensitive) in tok and toklen (pointing into value); 0 when value is neither. */
int auth_bearer_token(const char *value, size_t len, const char **tok, size_t *toklen);

/** Reads path (at most 1 MiB) and builds the key table. RB_EIO when it cannot be read,
 * RB_EINVAL when it does not parse. */
rb_err auth_new(const char *path, auth **out, char *err);
/** Reads the file again: new names are added, changed hashes and quotas take effect, names no
 * longer listed are disabled. On error nothing changes. *nkeys (if not NULL) is the number of
 * keys now enabled. */
rb_err auth_reload(auth *a, size_t *nkeys, char *err);
/** Accepts NULL. */
void auth_free(auth *a);

/** What auth_check decided. */
typedef enum auth_result {
    AUTH_OK,         /* *who is the caller */
    AUTH_MISSING,    /* no credential: 401 */
    AUTH_INVALID,    /* a credential that is no enabled key's: 401 */
    AUTH_RATE,       /* the key's rps quota is spent: 429, *retry_after seconds */
} auth_result;

/** Checks the credential token[0..len) (NULL: none) at time now_ms and takes one request from
 * its key's rate budget. */
auth_result auth_check(auth *a, const char *token, size_t len, uint64_t now_ms, const core_caller **who,
                       int *retry_after);

/** The caller of the enabled key named name (valid as long as a), or NULL when no enabled key
 * has that name (removed from the file: its sessions are then out of reach, as for REST). */
const core_caller *auth_caller(auth *a, const char *name);

#endif

/*
 * e2b_sign.c: presigned file URLs (Sandbox.download_url, upload_url): GET or POST /files with
 * `signature` (and `signature_expiration`) in the query instead of X-Access-Token, as envd takes
 * them. The SDK signs "path:operation:user:token[:expiration]" (operation read or write, user ""
 * for the default) with SHA-256, base64 without padding, behind "v1_", using the sandbox's
 * envdAccessToken. Such a URL carries no E2b-Sandbox-Id when the SDK builds it from
 * E2B_SANDBOX_URL, so the sandbox is the live E2B sandbox one of whose tokens signs it (checked in
 * constant time); with the header, only that sandbox is tried. An expired URL is 401, and so is a
 * signature no token makes. The URL then acts as the token it was signed with: the key that token
 * was handed to, with that key's role now.
 */
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "base/codec.h"
#include "server/e2b/e2b_internal.h"

#define SIGN_SESSIONS_MAX 10000 /* live sessions tried for a URL without a sandbox id */

/* Whether token signs raw (path:op:user:token[:exp]) into given ("v1_" + base64). */
static int signs(const char *path, const char *op, const char *user, const char *token, const char *exp,
                 const char *given)
{
    char *raw = exp != NULL ? xasprintf("%s:%s:%s:%s:%s", path, op, user, token, exp)
                            : xasprintf("%s:%s:%s:%s", path, op, user, token);
    unsigned char digest[EVP_MAX_MD_SIZE];
    unsigned int n = 0;
    int ok = EVP_Digest(raw, strlen(raw), digest, &n, EVP_sha256(), NULL) == 1;
    free(raw);
    if (!ok)
        return 0;
    char *b64 = codec_base64_encode(digest, n);
    size_t len = strlen(b64);
    while (len > 0 && b64[len - 1] == '=')
        len--;
    int match = strlen(given) == 3 + len && CRYPTO_memcmp(given + 3, b64, len) == 0;
    free(b64);
    return match;
}

/* The key (borrowed from tokens) whose token signs the URL, or NULL. */
static const char *signer(json_t *tokens, const char *path, const char *op, const char *user, const char *exp,
                          const char *given)
{
    const char *key;
    json_t *t;
    json_object_foreach(tokens, key, t)
    {
        if (json_is_string(t) && signs(path, op, user, json_string_value(t), exp, given))
            return key;
    }
    return NULL;
}

int e2b__signed_sandbox(http_call *call, int what, e2b_sandbox *out)
{
    h2o_req_t *req = call->req;
    char err[RB_ERR_LEN];
    const char *op = what == E2B_CHANGES ? "write" : "read";
    const char *given = http_query_param(req, "signature");
    const char *path = http_query_param(req, "path");
    const char *user = http_query_param(req, "username");
    const char *exp = http_query_param(req, "signature_expiration");
    if (given == NULL || strncmp(given, "v1_", 3) != 0 || path == NULL) {
        e2b__sandbox_error(req, 401, "a signed file URL has path and a v1_ signature (Sandbox.download_url, upload_url)");
        return -1;
    }
    if (exp != NULL) {
        char *end = NULL;
        long long when = strtoll(exp, &end, 10);
        if (end == exp || *end != '\0' || when <= 0) {
            e2b__sandbox_error(req, 401, "signature_expiration: a Unix time in seconds");
            return -1;
        }
        if (rb_now_ms() / 1000 > when) {
            snprintf(err, sizeof(err), "this signed URL expired at %lld (Unix time): ask the sandbox for a new one", when);
            e2b__sandbox_error(req, 401, err);
            return -1;
        }
    }
    ssize_t hi = h2o_find_header_by_str(&req->headers, H2O_STRLIT("e2b-sandbox-id"), -1);
    const char *only = hi >= 0 ? http_pool_strdup(req, req->headers.entries[hi].value.base,
                                                  req->headers.entries[hi].value.len)
                               : NULL;
    json_t *list = NULL;
    if (core_session_list(call->core, NULL, &list, err) != RB_OK) {
        e2b__sandbox_error(req, 503, err);
        return -1;
    }
    const char *key = NULL, *id = NULL, *owner = NULL;
    json_t *session = NULL, *tokens = NULL;
    size_t i;
    json_t *s;
    json_array_foreach(json_object_get(list, "sessions"), i, s)
    {
        const char *sid = json_string_value(json_object_get(s, "session_id"));
        json_t *extra = NULL;
        if (i >= SIGN_SESSIONS_MAX || sid == NULL || (only != NULL && strcmp(only, sid) != 0) ||
            core_session_extra(call->core, NULL, sid, E2B_EXTRA, &extra, err) != RB_OK || extra == NULL)
            continue;
        tokens = json_deep_copy(extra);
        json_decref(extra);
        e2b__tokens_upgrade(tokens, e2b__owner_of(s));
        key = signer(json_object_get(tokens, "tokens"), path, op, user != NULL ? user : "", exp, given);
        if (key != NULL) {
            id = http_pool_strdup(req, sid, strlen(sid));
            key = http_pool_strdup(req, key, strlen(key));
            owner = http_pool_strdup(req, e2b__owner_of(s), strlen(e2b__owner_of(s)));
            session = s;
            json_decref(tokens);
            break;
        }
        json_decref(tokens);
    }
    json_decref(list);
    if (session == NULL) {
        e2b__sandbox_error(req, 401,
                           "this signature matches no running sandbox's file URL: a wrong path, operation (a download "
                           "URL does not upload) or user, or the sandbox has ended");
        return -1;
    }
    const core_caller *who = NULL;
    if (server_has_keys(call->server) && (who = server_caller(call->server, key)) == NULL) {
        snprintf(err, sizeof(err),
                 "the URL was signed with the token of the API key '%.64s', which is no longer in runboxd's key file", key);
        e2b__sandbox_error(req, 401, err);
        return -1;
    }
    int allowed = who == NULL || (what == E2B_CHANGES ? e2b__may_change(who, owner) : core_caller_owns(who, owner));
    if (!allowed) {
        e2b__sandbox_error(req, 403, "the key this URL was signed for may no longer do that in this sandbox");
        return -1;
    }
    out->server = call->server;
    out->core = call->core;
    out->cfg = call->cfg;
    out->who = who;
    out->session_id = id;
    out->workdir = E2B_WORKDIR;
    return 0;
}

int e2b__is_signed(h2o_req_t *req)
{
    return h2o_find_header_by_str(&req->headers, H2O_STRLIT("x-access-token"), -1) < 0 &&
           http_query_param(req, "signature") != NULL;
}

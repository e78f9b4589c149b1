/*
 * e2b_token.c: a sandbox's access tokens (E2B's envdAccessToken, sent back as X-Access-Token on
 * sandbox traffic). A token is bound to the API key it was handed to: each key that may run code
 * in the sandbox (its owner, or an admin key) gets its own, and the sandbox traffic that carries
 * it acts as that key, with the key's role and rights as they are at each call (e2b.c,
 * e2b__sandbox_of). A viewer key is handed none. The tokens are kept in the sandbox's E2B data as
 * "tokens": {key name: token}, "" naming the one caller of a runboxd without keys. Not here: who
 * owns a session (core) and the checks of the calls themselves (e2b.c).
 */
#include <string.h>

#include "server/e2b/e2b_internal.h"

int e2b__may_change(const core_caller *who, const char *owner)
{
    if (who == NULL || who->role == CORE_ROLE_ADMIN)
        return 1;
    return who->role == CORE_ROLE_USER && strcmp(who->owner, owner != NULL ? owner : "") == 0;
}

const char *e2b__key_name(const core_caller *who)
{
    return who != NULL && who->owner != NULL ? who->owner : "";
}

const char *e2b__owner_of(json_t *session)
{
    const char *owner = json_string_value(json_object_get(session, "owner"));
    return owner != NULL ? owner : "";
}

int e2b__tokens_upgrade(json_t *extra, const char *owner)
{
    json_t *token = json_object_get(extra, "token");
    const char *was = json_string_value(json_object_get(extra, "owner"));
    int changed = token != NULL || was != NULL;
    /* The older form: one token, handed to whichever key first reached the sandbox through E2B
     * and recorded as its "owner". It stays the real owner's; another key's is void. */
    if (json_is_string(token) && was != NULL && strcmp(was, owner) == 0) {
        json_t *tokens = json_object_get(extra, "tokens");
        if (!json_is_object(tokens)) {
            tokens = json_object();
            json_object_set_new(extra, "tokens", tokens);
        }
        if (json_object_get(tokens, owner) == NULL)
            json_object_set(tokens, owner, token);
    }
    json_object_del(extra, "token");
    json_object_del(extra, "owner");
    return changed;
}

const char *e2b__token_mint(json_t *extra, const char *key, int *changed)
{
    json_t *tokens = json_object_get(extra, "tokens");
    if (!json_is_object(tokens)) {
        tokens = json_object();
        json_object_set_new(extra, "tokens", tokens);
    }
    const char *have = json_string_value(json_object_get(tokens, key));
    if (have != NULL)
        return have;
    char token[40];
    rb_random_id("", token, sizeof(token));
    json_object_set_new(tokens, key, json_string(token));
    *changed = 1;
    return json_string_value(json_object_get(tokens, key));
}

/* Compares a presented token with a stored one without an early exit. */
static int token_equal(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    unsigned char diff = la != lb;
    for (size_t i = 0; i < lb; i++)
        diff |= (unsigned char)(a[i % (la ? la : 1)] ^ b[i]);
    return diff == 0;
}

const char *e2b__token_holder(json_t *extra, const char *given)
{
    const char *found = NULL, *key;
    json_t *v;
    if (given == NULL)
        return NULL;
    /* every token is compared, whatever matched before */
    json_object_foreach (json_object_get(extra, "tokens"), key, v)
        if (json_is_string(v) && token_equal(given, json_string_value(v)))
            found = key;
    return found;
}

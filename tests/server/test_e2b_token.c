/*
 * test_e2b_token.c: server/e2b/e2b_token.c: a sandbox's access tokens, one per API key. Who may
 * be handed one (the owner, an admin; never a viewer or another user), which key a presented
 * token belongs to, and the older stored form (one "token" with the "owner" that first reached
 * the sandbox through E2B), which stays the real owner's and is void for any other key.
 */
#include <criterion/criterion.h>
#include <string.h>

#include "server/e2b/e2b_internal.h"

static const core_caller alice = {.owner = "alice", .role = CORE_ROLE_USER};
static const core_caller bob = {.owner = "bob", .role = CORE_ROLE_USER};
static const core_caller boss = {.owner = "boss", .role = CORE_ROLE_ADMIN};
static const core_caller auditor = {.owner = "auditor", .role = CORE_ROLE_VIEWER};

Test(e2b_token, only_the_owner_and_admins_may_change_a_sandbox)
{
    cr_expect(e2b__may_change(&alice, "alice"));
    cr_expect(e2b__may_change(&boss, "alice"));
    cr_expect(e2b__may_change(NULL, "")); /* the one caller of a runboxd without keys */
    cr_expect(!e2b__may_change(&bob, "alice"));
    cr_expect(!e2b__may_change(&auditor, "alice"));
    cr_expect(!e2b__may_change(&auditor, "auditor"), "a viewer changes nothing, even what it would own");
    cr_expect(!e2b__may_change(&alice, NULL));
}

Test(e2b_token, each_key_gets_its_own_token_and_a_token_names_its_key)
{
    json_t *extra = json_pack("{s:s}", "template", "code-interpreter-v1");
    int changed = 0;
    const char *a = e2b__token_mint(extra, "alice", &changed);
    cr_assert(changed && a != NULL && strlen(a) >= 16);
    char mine[64];
    snprintf(mine, sizeof(mine), "%s", a);
    changed = 0;
    cr_expect_str_eq(e2b__token_mint(extra, "alice", &changed), mine, "minted once, then kept");
    cr_expect(!changed);
    const char *b = e2b__token_mint(extra, "boss", &changed);
    cr_assert(changed && strcmp(b, mine) != 0);
    cr_expect_str_eq(e2b__token_holder(extra, mine), "alice");
    cr_expect_str_eq(e2b__token_holder(extra, b), "boss");
    cr_expect_null(e2b__token_holder(extra, "0000"));
    cr_expect_null(e2b__token_holder(extra, ""));
    cr_expect_null(e2b__token_holder(extra, NULL));
    char longer[80];
    snprintf(longer, sizeof(longer), "%sx", mine);
    cr_expect_null(e2b__token_holder(extra, longer));
    cr_expect_null(e2b__token_holder(json_object_get(extra, "template"), mine), "no tokens: no holder");
    json_decref(extra);
}

Test(e2b_token, the_older_form_stays_the_real_owners)
{
    json_t *extra = json_pack("{s:s, s:s, s:s}", "token", "t-owner", "owner", "alice", "template", "bash");
    cr_expect(e2b__tokens_upgrade(extra, "alice"));
    cr_expect_null(json_object_get(extra, "token"));
    cr_expect_null(json_object_get(extra, "owner"));
    cr_expect_str_eq(e2b__token_holder(extra, "t-owner"), "alice");
    cr_expect_str_eq(json_string_value(json_object_get(extra, "template")), "bash");
    cr_expect(!e2b__tokens_upgrade(extra, "alice"), "already upgraded: nothing changes");
    json_decref(extra);
}

Test(e2b_token, the_older_form_minted_for_another_key_is_void)
{
    /* a REST session of alice's that a viewer first read through E2B: the token was the viewer's */
    json_t *extra = json_pack("{s:s, s:s}", "token", "t-viewer", "owner", "auditor");
    cr_expect(e2b__tokens_upgrade(extra, "alice"));
    cr_expect_null(e2b__token_holder(extra, "t-viewer"));
    cr_expect_null(json_object_get(json_object_get(extra, "tokens"), "auditor"));
    json_decref(extra);
    /* without keys the owner is "" on both sides */
    extra = json_pack("{s:s, s:s}", "token", "t", "owner", "");
    e2b__tokens_upgrade(extra, "");
    cr_expect_str_eq(e2b__token_holder(extra, "t"), "");
    json_decref(extra);
}

Test(e2b_token, the_owner_of_a_session_object)
{
    json_t *s = json_pack("{s:s, s:s}", "session_id", "s_1", "owner", "alice");
    cr_expect_str_eq(e2b__owner_of(s), "alice");
    json_object_del(s, "owner");
    cr_expect_str_eq(e2b__owner_of(s), "");
    json_decref(s);
    cr_expect_str_eq(e2b__key_name(&boss), "boss");
    cr_expect_str_eq(e2b__key_name(NULL), "");
}

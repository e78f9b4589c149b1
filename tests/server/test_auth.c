/*
 * test_auth.c: server/auth.c's key file parser, Authorization header parser, key table (reload
 * keeps principals, rotation, removal) and rate budget, as functions; the seed corpus of
 * fuzz_auth is replayed. The HTTP side (401, 404 to other keys, quotas) is tested end to end in
 * tests/integration/test_auth.py.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "server/auth.h"
#include "tests/common/corpus.h"

/* sha256("alice-key") */
#define H_ALICE "sha256:72ee9d4355ccb9d3a4c9dbf37382e38e75c1b1a225b5bd1f729ee91bbda30c20"
#define ALICE_KEY "alice-key"

static char hash_line[256];

/* "name sha256:<hash of key>" computed with the same digest the server uses. */
static const char *line_for(const char *name, const char *key, const char *extra)
{
    char cmd[256];
    snprintf(cmd, sizeof(cmd), "printf %%s '%s' | sha256sum", key);
    FILE *p = popen(cmd, "r");
    cr_assert_not_null(p);
    char hex[65] = {0};
    cr_assert_eq(fread(hex, 1, 64, p), 64);
    pclose(p);
    snprintf(hash_line, sizeof(hash_line), "%s sha256:%s %s\n", name, hex, extra);
    return hash_line;
}

static rb_err parse(const char *text, auth_key **keys, size_t *n, char *err)
{
    return auth_parse(text, strlen(text), keys, n, err);
}

Test(auth, parses_names_hashes_quotas_comments_and_crlf)
{
    char text[1024], err[RB_ERR_LEN];
    snprintf(text, sizeof(text), "# comment\n\n  %s", line_for("alice", ALICE_KEY, "sessions=5 executions=2 rps=20 egress=pypi.org,*.example.com "
                                                                "shares=photos,data isolation=gvisor role=viewer"));
    strcat(text, line_for("bob.ci-1", "bob-key", "\r"));
    auth_key *k;
    size_t n;
    cr_assert_eq(parse(text, &k, &n, err), RB_OK, "%s", err);
    cr_assert_eq(n, 2);
    cr_assert_str_eq(k[0].name, "alice");
    cr_assert_eq(k[0].sessions, 5);
    cr_assert_eq(k[0].executions, 2);
    cr_assert_eq(k[0].rps, 20);
    cr_assert_str_eq(k[0].egress, "pypi.org,*.example.com");
    cr_assert_str_eq(k[0].shares, "photos,data");
    cr_assert_str_eq(k[0].isolation, "gvisor");
    cr_assert_eq(k[0].role, CORE_ROLE_VIEWER);
    cr_assert_eq(k[1].role, CORE_ROLE_USER, "no role=: a user, as before roles");
    cr_assert_str_eq(k[1].name, "bob.ci-1");
    cr_assert_eq(k[1].sessions + k[1].executions + k[1].rps, 0);
    cr_assert_str_eq(k[1].egress, "", "no egress=: the server's limit");
    cr_assert_str_eq(k[1].shares, "", "no shares=: no shared folder");
    free(k);
}

Test(auth, refuses_what_is_wrong_naming_the_line)
{
    static const struct {
        const char *text, *words;
    } bad[] = {
        {"", "no key"},
        {"# only a comment\n", "no key"},
        {"alice\n", "line 1"},
        {"alice b6f2\n", "sha256:"},
        {"\nalice sha256:zz\n", "line 2"},
        {"alice sha256:b6f2f1b7f33b7b0f12b4b3a6fea4cdf1a3bf8e4c57a2e33b91c0bb23d0b8bbzz\n", "hex digit"},
        {"al/ice " H_ALICE "\n", "letters, digits"},
        {"alice " H_ALICE " seats=3\n", "not a quota"},
        {"alice " H_ALICE " rps=-1\n", "whole number"},
        {"alice " H_ALICE " rps=\n", "not a quota"},
        {"alice " H_ALICE " rps=99999999999999999999\n", "whole number"},
        {"alice " H_ALICE " a=1 b=2 c=3 d=4 e=5 f=6 g=7 h=8\n", "too many fields"},
        {"alice " H_ALICE " isolation=\n", "isolation="},
        {"alice " H_ALICE " role=root\n", "role= is user, admin or viewer"},
        {"alice " H_ALICE " role=\n", "role="},
        {"alice " H_ALICE " role=adminx\n", "role="},
        {"alice " H_ALICE " egress=\n", "egress="},
        {"alice " H_ALICE " shares=\n", "shares="},
        {"alice " H_ALICE "\nalice " H_ALICE "\n", "listed twice"},
        {"alice " H_ALICE "\nbob " H_ALICE "\n", "same key"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        char err[RB_ERR_LEN] = "";
        auth_key *k = (auth_key *)1;
        size_t n = 7;
        cr_assert_eq(parse(bad[i].text, &k, &n, err), RB_EINVAL, "accepted: %s", bad[i].text);
        cr_assert_null(k);
        cr_assert_eq(n, 0);
        cr_assert(strstr(err, bad[i].words) != NULL, "'%s' -> '%s' (want '%s')", bad[i].text, err, bad[i].words);
    }
    char err[RB_ERR_LEN];
    auth_key *k;
    size_t n;
    cr_assert_eq(auth_parse("alice\0x", 7, &k, &n, err), RB_EINVAL);
    cr_assert(strstr(err, "NUL") != NULL, "%s", err);
    char *longline = malloc(4000);
    memset(longline, 'a', 3999);
    longline[3999] = '\0';
    cr_assert_eq(parse(longline, &k, &n, err), RB_EINVAL);
    cr_assert(strstr(err, "longer than") != NULL, "%s", err);
    free(longline);
}

Test(auth, shares_values_are_checked_by_core)
{
    char err[RB_ERR_LEN] = "";
    auth_key *k = NULL;
    size_t n = 0;
    auth_set_shares_check(core_shares_key_check); /* the fake refuses "BAD" */
    cr_assert_eq(parse("alice " H_ALICE " shares=BAD\n", &k, &n, err), RB_EINVAL);
    cr_assert(strstr(err, "line 1: shares=") != NULL && strstr(err, "BAD") != NULL, "%s", err);
    cr_assert_eq(parse("alice " H_ALICE " shares=*\n", &k, &n, err), RB_OK, "%s", err);
    cr_assert_str_eq(k[0].shares, "*");
    free(k);
    auth_set_shares_check(NULL);
}

Test(auth, isolation_values_are_checked_by_core)
{
    char err[RB_ERR_LEN] = "";
    auth_key *k = NULL;
    size_t n = 0;
    auth_set_isolation_check(core_isolation_key_check); /* the fake refuses "BAD" */
    cr_assert_eq(parse("alice " H_ALICE " isolation=BAD\n", &k, &n, err), RB_EINVAL);
    cr_assert(strstr(err, "line 1: isolation=") != NULL, "%s", err);
    cr_assert_eq(parse("alice " H_ALICE " isolation=container,gvisor\n", &k, &n, err), RB_OK, "%s", err);
    cr_assert_str_eq(k[0].isolation, "container,gvisor");
    free(k);
    auth_set_isolation_check(NULL);
}

Test(auth, bearer_tokens)
{
    const char *t;
    size_t len;
    cr_assert(auth_bearer_token("Bearer abc", 10, &t, &len));
    cr_assert_eq(len, 3);
    cr_assert(memcmp(t, "abc", 3) == 0);
    cr_assert(auth_bearer_token("  bEaReR \t abc.def  ", 20, &t, &len));
    cr_assert_eq(len, 7);
    cr_assert(!auth_bearer_token("Bearer", 6, &t, &len));
    cr_assert(!auth_bearer_token("Bearer   ", 9, &t, &len));
    cr_assert(!auth_bearer_token("Bearerabc", 9, &t, &len));
    cr_assert(!auth_bearer_token("Basic YWxpY2U6", 14, &t, &len));
    /* Jupyter's scheme (server/jupyter/) */
    cr_assert(auth_bearer_token("token abc", 9, &t, &len));
    cr_assert(len == 3 && memcmp(t, "abc", 3) == 0);
    cr_assert(!auth_bearer_token("tokenabc", 8, &t, &len));
    cr_assert(!auth_bearer_token("token ", 6, &t, &len));
    cr_assert(!auth_bearer_token("", 0, &t, &len));
}

static char keyfile[64];

static void write_keys(const char *text)
{
    FILE *f = fopen(keyfile, "w");
    cr_assert_not_null(f);
    fputs(text, f);
    fclose(f);
}

static auth_result check(auth *a, const char *key, uint64_t now, const core_caller **who)
{
    int retry;
    return auth_check(a, key, key ? strlen(key) : 0, now, who, &retry);
}

Test(auth, reload_rotates_adds_and_disables_keeping_principals)
{
    snprintf(keyfile, sizeof(keyfile), "/tmp/runbox-test-keys-%d", (int)getpid());
    char text[512], err[RB_ERR_LEN];
    snprintf(text, sizeof(text), "%s", line_for("alice", ALICE_KEY, "sessions=1"));
    strcat(text, line_for("bob", "bob-key", ""));
    write_keys(text);
    auth *a;
    cr_assert_eq(auth_new(keyfile, &a, err), RB_OK, "%s", err);
    const core_caller *alice, *who;
    cr_assert_eq(check(a, ALICE_KEY, 1, &alice), AUTH_OK);
    cr_assert_str_eq(alice->owner, "alice");
    cr_assert_eq(alice->max_sessions, 1);
    cr_assert_eq(check(a, NULL, 1, &who), AUTH_MISSING);
    cr_assert_eq(check(a, "alice-ke", 1, &who), AUTH_INVALID);
    cr_assert_null(who);

    /* alice rotated with a new quota, bob removed, carol added */
    snprintf(text, sizeof(text), "%s", line_for("alice", "alice-new", "sessions=3"));
    strcat(text, line_for("carol", "carol-key", ""));
    write_keys(text);
    size_t n = 0;
    cr_assert_eq(auth_reload(a, &n, err), RB_OK, "%s", err);
    cr_assert_eq(n, 2);
    cr_assert_eq(check(a, ALICE_KEY, 2, &who), AUTH_INVALID);
    cr_assert_eq(check(a, "bob-key", 2, &who), AUTH_INVALID);
    cr_assert_eq(check(a, "alice-new", 2, &who), AUTH_OK);
    cr_assert_eq(who, alice, "the same principal: pointers held by work in flight stay valid");
    cr_assert_eq(alice->max_sessions, 3);
    cr_assert_eq(check(a, "carol-key", 2, &who), AUTH_OK);

    /* a broken file changes nothing */
    write_keys("carol sha256:nothex\n");
    cr_assert_eq(auth_reload(a, &n, err), RB_EINVAL);
    cr_assert(strstr(err, keyfile) != NULL && strstr(err, "line 1") != NULL, "%s", err);
    cr_assert_eq(check(a, "alice-new", 3, &who), AUTH_OK);
    unlink(keyfile);
    cr_assert_eq(auth_reload(a, &n, err), RB_EIO);
    cr_assert_eq(check(a, "carol-key", 3, &who), AUTH_OK);
    auth_free(a);
}

Test(auth, rate_budget_refills_with_time)
{
    snprintf(keyfile, sizeof(keyfile), "/tmp/runbox-test-keys-r%d", (int)getpid());
    write_keys(line_for("alice", ALICE_KEY, "rps=2"));
    char err[RB_ERR_LEN];
    auth *a;
    cr_assert_eq(auth_new(keyfile, &a, err), RB_OK, "%s", err);
    unlink(keyfile);
    const core_caller *who;
    int retry = 0;
    uint64_t t = 1000000;
    cr_assert_eq(auth_check(a, ALICE_KEY, 9, t, &who, &retry), AUTH_OK);
    cr_assert_eq(auth_check(a, ALICE_KEY, 9, t, &who, &retry), AUTH_OK);
    cr_assert_eq(auth_check(a, ALICE_KEY, 9, t, &who, &retry), AUTH_RATE);
    cr_assert_eq(retry, 1);
    cr_assert_str_eq(who->owner, "alice");
    cr_assert_eq(auth_check(a, ALICE_KEY, 9, t + 499, &who, &retry), AUTH_RATE);
    cr_assert_eq(auth_check(a, ALICE_KEY, 9, t + 1000, &who, &retry), AUTH_OK);
    /* a long pause refills to one second's worth, not more */
    t += 100000;
    cr_assert_eq(auth_check(a, ALICE_KEY, 9, t, &who, &retry), AUTH_OK);
    cr_assert_eq(auth_check(a, ALICE_KEY, 9, t, &who, &retry), AUTH_OK);
    cr_assert_eq(auth_check(a, ALICE_KEY, 9, t, &who, &retry), AUTH_RATE);
    auth_free(a);
}

static void check_seed(void *data, const char *seed, const char *path, const char *buf, size_t len)
{
    (void)seed;
    (void)path;
    int *n = data;
    auth_key *k = NULL;
    size_t nk = 0;
    if (auth_parse(buf, len, &k, &nk, NULL) == RB_OK)
        cr_assert_gt(nk, 0);
    free(k);
    const char *t;
    size_t tl;
    if (auth_bearer_token(buf, len, &t, &tl))
        cr_assert(t >= buf && t + tl <= buf + len && tl > 0);
    (*n)++;
}

Test(auth, fuzz_corpus_replay)
{
    int n = 0;
    corpus_each("auth", check_seed, &n);
    cr_assert_gt(n, 0, "no seeds in tests/fuzz/corpus/auth");
}

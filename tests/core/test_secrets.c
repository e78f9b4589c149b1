/*
 * test_secrets.c: the operator's secrets file (core/network/secrets.c) without Docker: the line
 * format, what each bad line is told (its line, never a value), the sources (value=, from-env=,
 * from-file=), which keys may use a secret, and what the proxy is given. Also replays the
 * libFuzzer seed corpus (tests/fuzz/corpus/secrets/, fuzz_secrets.c).
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/network/secrets.h"
#include "tests/common/corpus.h"

static rb_err parse(const char *text, secret_set *s, char *err)
{
    return secrets_parse(text, strlen(text), s, err);
}

Test(secrets, parses_the_documented_lines)
{
    secret_set s;
    char err[RB_ERR_LEN];
    const char *text = "# name hosts as keys source\n"
                       "openai  hosts=api.openai.com  as=bearer  keys=alice,bob  value=sk-0123456789abcdef\n"
                       "\n"
                       "gh\thosts=api.github.com:443,*.GitHub.test\tas=header:X-Api-Key keys=* from-env=GH_TOKEN "
                       "var=GITHUB_TOKEN\r\n"
                       "db.main hosts=db.example.com as=basic keys=ci-bot from-file=/run/secrets/db\n";
    cr_assert_eq(parse(text, &s, err), RB_OK, "%s", err);
    cr_assert_eq(s.n, 3);
    const secret_def *a = secrets_find(&s, "openai"), *g = secrets_find(&s, "gh"), *d = secrets_find(&s, "db.main");
    cr_assert(a && g && d);
    cr_expect_eq(a->kind, SECRET_BEARER);
    cr_expect_str_eq(a->header, "Authorization");
    cr_expect_str_eq(a->var, "OPENAI");
    cr_expect_eq(g->kind, SECRET_HEADER);
    cr_expect_str_eq(g->header, "X-Api-Key");
    cr_expect_str_eq(g->var, "GITHUB_TOKEN");
    cr_expect_eq(g->n_hosts, 2);
    char t[HOSTPATTERN_TEXT_MAX];
    hostpattern_text(&g->hosts[1], t);
    cr_expect_str_eq(t, "*.github.test");
    cr_expect_eq(d->kind, SECRET_BASIC);
    cr_expect_str_eq(d->var, "DB_MAIN");
    cr_expect_eq(d->source, SECRET_FROM_FILE);
    cr_expect(secret_key_allowed(a, "alice") && secret_key_allowed(a, "bob") && !secret_key_allowed(a, "al"));
    cr_expect(!secret_key_allowed(a, "mallory") && secret_key_allowed(a, NULL));
    cr_expect(secret_key_allowed(g, "anyone"));
    cr_expect_null(secrets_find(&s, "nope"));
    secrets_dispose(&s);
}

static void expect_bad(const char *text, const char *want)
{
    secret_set s;
    char err[RB_ERR_LEN];
    cr_assert_eq(parse(text, &s, err), RB_EINVAL, "%s: accepted", text);
    cr_expect(strstr(err, want) != NULL, "%s: %s (want %s)", text, err, want);
    cr_expect(strstr(err, "VALUEMARK") == NULL, "a value in the message: %s", err);
    cr_expect_eq(s.n, 0);
    cr_expect_null(s.items);
}

Test(secrets, bad_lines_are_named_without_their_value)
{
    expect_bad("a hosts=x.test as=bearer keys=* value=VALUEMA\n", "line 1");
    expect_bad("\na hosts=x.test as=bearer keys=* value=VALUEM\n", "line 2: secret \"a\": its value is shorter than 8");
    expect_bad("a hosts=x.test as=basic keys=* value=VALUEMARKnocolon\n", "is not user:password");
    expect_bad("a hosts=x.test as=bearer keys=* value=VALUEMARK\x01x\n", "line 1: a control character");
    expect_bad("a hosts=10.0.0.1 as=bearer keys=* value=VALUEMARK1\n", "hosts=: host pattern 1: an IP address");
    expect_bad("a hosts=x.test as=bearer keys=* value= VALUEMARK1\n", "value= is empty");
    expect_bad("a hosts=x.test as=bearer keys=alice,VALUEMARK!1 value=VALUEMARK1\n", "keys=: item 2 is not a key name");
    expect_bad("a hosts=x.test as=header:Host keys=* value=VALUEMARK1\n", "a header the proxy must set itself");
    expect_bad("a hosts=x.test as=bearer keys=*,alice value=VALUEMARK1\n", "or is *");
    expect_bad("a hosts=x.test as=bearer keys=* value=VALUEMARK1\na hosts=y.test as=bearer keys=* value=VALUEMARK2\n",
               "line 2: secret \"a\" again (first on line 1)");
    expect_bad("a hosts=x.test as=bearer keys=* value=VALUEMARK1 from-env=X\n", "a source");
    expect_bad("a as=bearer keys=* value=VALUEMARK1\n", "has no hosts=");
    expect_bad("a hosts=x.test keys=* value=VALUEMARK1\n", "has no as=");
    expect_bad("a hosts=x.test as=bearer value=VALUEMARK1\n", "has no keys=");
    expect_bad("a hosts=x.test as=bearer keys=*\n", "has no a source");
    expect_bad("a hosts=x.test as=bearer keys=* value=VALUEMARK1 colour=blue\n", "word 6: unknown key");
    expect_bad("a hosts=x.test as=bearer keys=* from-file=relative\n", "absolute path");
    expect_bad("9a hosts=x.test as=bearer keys=* value=VALUEMARK1\n", "give one with var=");
    expect_bad("a-b hosts=x.test as=bearer keys=* value=VALUEMARK1\na.b hosts=x.test as=bearer keys=* value=VALUEMARK2\n",
               "the variable A_B again");
    expect_bad("bad! hosts=x.test\n", "is not a secret name");
    secret_set s;
    char err[RB_ERR_LEN];
    cr_expect_eq(secrets_parse("a\0b", 3, &s, err), RB_EINVAL);
    cr_expect(strstr(err, "NUL") != NULL, "%s", err);
}

Test(secrets, sources_are_resolved_and_checked)
{
    char path[] = "/tmp/rbtest-secret-XXXXXX";
    int fd = mkstemp(path);
    cr_assert_geq(fd, 0);
    cr_assert_eq(write(fd, "user:from-file-pw\n", 18), 18);
    close(fd);
    setenv("RBTEST_SECRET_ENV", "env-value-0123456789", 1);
    char text[512];
    snprintf(text, sizeof(text),
             "e hosts=x.test as=bearer keys=* from-env=RBTEST_SECRET_ENV\n"
             "f hosts=x.test as=basic keys=* from-file=%s\n"
             "h hosts=x.test as=header:X-Key keys=* value=inline-value-42\n",
             path);
    secret_set s;
    char err[RB_ERR_LEN];
    cr_assert_eq(parse(text, &s, err), RB_OK, "%s", err);
    cr_assert_eq(secrets_resolve(&s, err), RB_OK, "%s", err);
    cr_expect_str_eq(secrets_find(&s, "e")->value, "env-value-0123456789");
    cr_expect_str_eq(secrets_find(&s, "f")->value, "user:from-file-pw");
    json_t *pe = secret_proxy_entry(secrets_find(&s, "e"));
    cr_expect_str_eq(json_string_value(json_object_get(pe, "value")), "Bearer env-value-0123456789");
    cr_expect_str_eq(json_string_value(json_object_get(pe, "header")), "Authorization");
    json_decref(pe);
    json_t *pf = secret_proxy_entry(secrets_find(&s, "f"));
    cr_expect_str_eq(json_string_value(json_object_get(pf, "value")), "Basic dXNlcjpmcm9tLWZpbGUtcHc=");
    cr_expect_eq(json_array_size(json_object_get(pf, "scrub")), 3); /* user:pw, its base64, the password */
    json_decref(pf);
    json_t *ph = secret_proxy_entry(secrets_find(&s, "h"));
    cr_expect_str_eq(json_string_value(json_object_get(ph, "header")), "X-Key");
    cr_expect_str_eq(json_string_value(json_object_get(ph, "value")), "inline-value-42");
    json_decref(ph);
    char placeholder[128];
    secret_placeholder(secrets_find(&s, "h"), placeholder, sizeof(placeholder));
    cr_expect_str_eq(placeholder, "runbox-secret-placeholder-h");
    secrets_dispose(&s);

    unsetenv("RBTEST_SECRET_ENV");
    cr_assert_eq(parse("e hosts=x.test as=bearer keys=* from-env=RBTEST_SECRET_ENV\n", &s, err), RB_OK, "%s", err);
    cr_expect_eq(secrets_resolve(&s, err), RB_EINVAL);
    cr_expect(strstr(err, "from-env=RBTEST_SECRET_ENV: runboxd has no such environment variable") != NULL, "%s", err);
    secrets_dispose(&s);
    setenv("RBTEST_SECRET_ENV", "has a space in it", 1);
    cr_assert_eq(parse("e hosts=x.test as=bearer keys=* from-env=RBTEST_SECRET_ENV\n", &s, err), RB_OK, "%s", err);
    cr_expect_eq(secrets_resolve(&s, err), RB_EINVAL);
    cr_expect(strstr(err, "a character a header cannot carry") != NULL && strstr(err, "space in it") == NULL, "%s",
              err);
    secrets_dispose(&s);
    unlink(path);
    cr_expect_eq(secrets_load(path, &s, err), RB_EIO);
}

static void check_seed(void *data, const char *seed, const char *path, const char *buf, size_t len)
{
    (void)path;
    int *accepted = data;
    secret_set s;
    char err[RB_ERR_LEN];
    rb_err e = secrets_parse(buf, len, &s, err);
    cr_expect(e == RB_OK || e == RB_EINVAL, "%s: %s", seed, rb_strerror(e));
    if (e == RB_OK)
        (*accepted)++;
    else
        cr_expect(strstr(err, "FUZZVALUE") == NULL, "%s: a value in %s", seed, err);
    secrets_dispose(&s);
}

Test(secrets, fuzz_corpus_replay)
{
    int accepted = 0;
    int files = corpus_each("secrets", check_seed, &accepted);
    cr_assert_geq(files, 10);
    cr_assert_gt(accepted, 0);
}

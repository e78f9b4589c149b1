/*
 * test_netpolicy.c: core/network/ without Docker: host patterns (the same table as the egress
 * proxy's own tests, tests/web/test_egress_policy.py, so that runboxd and the proxy agree on
 * every pattern and every reason), a pattern within another, the operator's limits and a
 * caller's request turned into a policy. Also replays the libFuzzer seed corpus of requests
 * (tests/fuzz/corpus/netpolicy/, fuzz_netpolicy.c).
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "core/network/hostpattern.h"
#include "core/network/netpolicy.h"
#include "tests/common/corpus.h"

static const char *const FLAGS[3] = {"--egress-allow", "--egress-max", "--egress-deny"};

static void expect_pattern(const char *text, const char *canonical, int wildcard, int port)
{
    hostpattern p;
    char why[HOSTPATTERN_WHY_MAX], t[HOSTPATTERN_TEXT_MAX];
    cr_assert_eq(hostpattern_parse(text, strlen(text), &p, why), 0, "%s: %s", text, why);
    hostpattern_text(&p, t);
    cr_expect_str_eq(t, canonical, "%s", text);
    cr_expect_eq(p.wildcard, wildcard, "%s", text);
    cr_expect_eq(p.port, port, "%s", text);
}

Test(hostpattern, parses_names_wildcards_and_ports)
{
    expect_pattern("pypi.org", "pypi.org", 0, 0);
    expect_pattern("PyPI.ORG.", "pypi.org", 0, 0);
    expect_pattern("*.pythonhosted.org", "*.pythonhosted.org", 1, 0);
    expect_pattern("*.PythonHosted.org.:443", "*.pythonhosted.org:443", 1, 443);
    expect_pattern("pypi.org:8443", "pypi.org:8443", 0, 8443);
    expect_pattern("a-b_c.example.test:1", "a-b_c.example.test:1", 0, 1);
    expect_pattern("xn--bcher-kva.example", "xn--bcher-kva.example", 0, 0);
    expect_pattern("localhost", "localhost", 0, 0);
}

Test(hostpattern, refuses_what_the_proxy_refuses_with_its_words)
{
    static const char *const cases[][2] = {
        {"", "empty"},
        {"   ", "empty"},
        {".", "empty"},
        {"pypi.org..", "empty label"},
        {"*", "'*' only as the whole first label"},
        {"*.", "a wildcard needs a domain after it"},
        {"*.*.org", "'*' only as the whole first label"},
        {"a*.org", "'*' only as the whole first label"},
        {"**.org", "'*' only as the whole first label"},
        {"pypi.*", "'*' only as the whole first label"},
        {"*.:443", "a wildcard needs a domain after it"},
        {"pypi.org:0", "port out of range"},
        {"pypi.org:65536", "port out of range"},
        {"pypi.org:", "the port is not a number"},
        {"pypi.org:https", "the port is not a number"},
        {"pypi.org:\xc2\xb2", "the port is not a number"},
        {"py pi.org", "bad characters"},
        {"pypi.org/simple", "bad characters"},
        {"user@pypi.org", "bad characters"},
        {"p\xc3\xbcpi.org", "bad characters"},
        {"pypi..org", "empty label"},
        {".pypi.org", "empty label"},
        {"1.2.3.4", "an IP address"},
        {"127.0.0.1:443", "an IP address"},
        {"2130706433", "an IP address"},
        {"0x7f.1", "an IP address"},
        {"*.0.0.1", "an IP address"},
        {"::1", "an IP address"},
        {"[::1]:443", "an IP address"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        hostpattern p;
        char why[HOSTPATTERN_WHY_MAX];
        cr_expect_eq(hostpattern_parse(cases[i][0], strlen(cases[i][0]), &p, why), -1, "%s", cases[i][0]);
        cr_expect(strstr(why, cases[i][1]) == why, "%s: %s", cases[i][0], why);
    }
    char label[80], name[600];
    memset(label, 'x', 64);
    snprintf(label + 64, sizeof(label) - 64, ".org");
    hostpattern p;
    char why[HOSTPATTERN_WHY_MAX];
    cr_expect_eq(hostpattern_parse(label, strlen(label), &p, why), -1);
    cr_expect(strstr(why, "a label is longer than 63") != NULL, "%s", why);
    name[0] = '\0';
    for (int i = 0; i < 127; i++)
        strcat(name, "a.");
    strcat(name, "org");
    cr_expect_eq(hostpattern_parse(name, strlen(name), &p, why), -1);
    cr_expect(strstr(why, "too long") != NULL, "%s", why);
    /* a NUL inside is a bad character, not the end of the pattern */
    cr_expect_eq(hostpattern_parse("pypi.org\0.evil", 14, &p, why), -1);
}

static int within(const char *req, const char *max)
{
    hostpattern a, b;
    char why[HOSTPATTERN_WHY_MAX];
    static const int ports[] = {80, 443};
    cr_assert_eq(hostpattern_parse(req, strlen(req), &a, why), 0, "%s", why);
    cr_assert_eq(hostpattern_parse(max, strlen(max), &b, why), 0, "%s", why);
    return hostpattern_within(&a, &b, ports, 2);
}

Test(hostpattern, within)
{
    cr_expect(within("pypi.org", "pypi.org"));
    cr_expect(within("files.pythonhosted.org", "*.pythonhosted.org"));
    cr_expect(within("a.b.pythonhosted.org", "*.pythonhosted.org"));
    cr_expect(within("*.b.pythonhosted.org", "*.pythonhosted.org"));
    cr_expect(within("*.pythonhosted.org", "*.pythonhosted.org"));
    cr_expect(within("pypi.org:443", "pypi.org"));
    cr_expect(within("pypi.org:8443", "pypi.org:8443"));
    cr_expect(!within("pythonhosted.org", "*.pythonhosted.org"));
    cr_expect(!within("*.pythonhosted.org", "files.pythonhosted.org"));
    cr_expect(!within("www.pypi.org", "pypi.org"));
    cr_expect(!within("xpythonhosted.org", "*.pythonhosted.org"));
    cr_expect(!within("pypi.org:8443", "pypi.org"));
    cr_expect(!within("pypi.org", "pypi.org:443"));
    cr_expect(!within("pypi.org:80", "pypi.org:443"));
}

static json_t *request(const netpolicy_limits *l, const char *json, rb_err want, char *err)
{
    json_error_t je;
    json_t *v = json_loads(json, JSON_DECODE_ANY, &je);
    cr_assert(v != NULL, "%s", je.text);
    json_t *out = (json_t *)1;
    rb_err e = netpolicy_request(l, v, "'network'", &out, err);
    json_decref(v);
    cr_assert_eq(e, want, "%s: %s", json, err);
    if (e != RB_OK)
        cr_assert_null(out);
    return out;
}

static void expect_policy(json_t *p, const char *want)
{
    char *got = json_dumps(p, JSON_COMPACT);
    cr_expect_str_eq(got, want);
    free(got);
    json_decref(p);
}

Test(netpolicy, requests_within_the_operators_limits)
{
    netpolicy_limits l;
    char err[RB_ERR_LEN];
    cr_assert_eq(netpolicy_limits_init(&l, 1, "pypi.org, *.pythonhosted.org", "pypi.org,*.pythonhosted.org,*.example.test",
                                       "evil.example.test", FLAGS, err),
                 RB_OK, "%s", err);
    cr_expect_null(request(&l, "false", RB_OK, err));
    cr_expect_null(request(&l, "null", RB_OK, err));
    expect_policy(request(&l, "true", RB_OK, err),
                  "{\"allow\":[\"pypi.org\",\"*.pythonhosted.org\"],\"deny\":[\"evil.example.test\"]}");
    expect_policy(request(&l, "{\"allow\":[\"API.example.test.\",\"api.example.test\",\"pypi.org:443\"],\"deny\":[\"x.example.test\"]}",
                          RB_OK, err),
                  "{\"allow\":[\"api.example.test\",\"pypi.org:443\"],\"deny\":[\"x.example.test\",\"evil.example.test\"]}");
    expect_policy(request(&l, "{}", RB_OK, err), "{\"allow\":[],\"deny\":[\"evil.example.test\"]}");

    request(&l, "{\"allow\":[\"pypi.org\",\"github.com\"]}", RB_EFORBIDDEN, err);
    cr_expect(strstr(err, "'network'.allow: 'github.com' is beyond what this server allows (its maximum, --egress-max: "
                          "pypi.org, *.pythonhosted.org, *.example.test)") != NULL,
              "%s", err);
    request(&l, "{\"allow\":[\"pypi.org:8080\"]}", RB_EFORBIDDEN, err);
    request(&l, "{\"allow\":[\"bad name\"]}", RB_EINVAL, err);
    cr_expect(strstr(err, "'network'.allow[0]: host pattern \"bad name\": bad characters") != NULL, "%s", err);
    request(&l, "{\"allow\":\"pypi.org\"}", RB_EINVAL, err);
    request(&l, "{\"allow\":[1]}", RB_EINVAL, err);
    request(&l, "{\"alow\":[]}", RB_EINVAL, err);
    cr_expect(strstr(err, "unknown key \"alow\"") != NULL, "%s", err);
    request(&l, "\"yes\"", RB_EINVAL, err);
    cr_expect(strstr(err, "must be false (no network), true") != NULL, "%s", err);
    netpolicy_limits_dispose(&l);
}

Test(netpolicy, off_unless_the_operator_turns_it_on)
{
    netpolicy_limits l;
    char err[RB_ERR_LEN];
    cr_assert_eq(netpolicy_limits_init(&l, 0, "pypi.org", NULL, NULL, FLAGS, err), RB_OK, "%s", err);
    cr_expect_null(request(&l, "false", RB_OK, err));
    request(&l, "true", RB_EFORBIDDEN, err);
    cr_expect(strstr(err, "--egress") != NULL, "%s", err);
    request(&l, "{\"allow\":[\"pypi.org\"]}", RB_EFORBIDDEN, err);
    netpolicy_limits_dispose(&l);
}

Test(netpolicy, the_maximum_defaults_to_the_default_list_and_star_is_any_name)
{
    netpolicy_limits l;
    char err[RB_ERR_LEN];
    cr_assert_eq(netpolicy_limits_init(&l, 1, "pypi.org", NULL, NULL, FLAGS, err), RB_OK, "%s", err);
    request(&l, "{\"allow\":[\"example.test\"]}", RB_EFORBIDDEN, err);
    cr_expect(strstr(err, "(its maximum, --egress-allow: pypi.org)") != NULL, "%s", err);
    netpolicy_limits_dispose(&l);
    cr_assert_eq(netpolicy_limits_init(&l, 1, "", "*", NULL, FLAGS, err), RB_OK, "%s", err);
    expect_policy(request(&l, "{\"allow\":[\"anything.example.test:9999\"]}", RB_OK, err),
                  "{\"allow\":[\"anything.example.test:9999\"],\"deny\":[]}");
    expect_policy(request(&l, "true", RB_OK, err), "{\"allow\":[],\"deny\":[]}");
    netpolicy_limits_dispose(&l);
}

Test(netpolicy, operator_lists_are_checked_at_start)
{
    netpolicy_limits l;
    char err[RB_ERR_LEN];
    cr_expect_eq(netpolicy_limits_init(&l, 1, "pypi.org,bad name", NULL, NULL, FLAGS, err), RB_EINVAL);
    cr_expect(strstr(err, "--egress-allow: host pattern \"bad name\": bad characters") != NULL, "%s", err);
    cr_expect_eq(netpolicy_limits_init(&l, 1, "github.com", "pypi.org", NULL, FLAGS, err), RB_EINVAL);
    cr_expect(strstr(err, "--egress-allow: 'github.com' is beyond --egress-max") != NULL, "%s", err);
    cr_expect_eq(netpolicy_limits_init(&l, 1, NULL, NULL, "*", FLAGS, err), RB_EINVAL);
    cr_expect(strstr(err, "--egress-deny: host pattern \"*\"") != NULL, "%s", err);
}

Test(netpolicy, lists_are_bounded)
{
    netpolicy_limits l;
    char err[RB_ERR_LEN];
    cr_assert_eq(netpolicy_limits_init(&l, 1, NULL, "*", NULL, FLAGS, err), RB_OK, "%s", err);
    json_t *v = json_object(), *allow = json_array();
    for (int i = 0; i < NETPOLICY_PATTERNS_MAX + 1; i++) {
        char name[32];
        snprintf(name, sizeof(name), "h%d.example.test", i);
        json_array_append_new(allow, json_string(name));
    }
    json_object_set_new(v, "allow", allow);
    json_t *out = NULL;
    cr_expect_eq(netpolicy_request(&l, v, "'network'", &out, err), RB_EINVAL);
    cr_expect(strstr(err, "257 host patterns, at most 256") != NULL, "%s", err);
    json_array_remove(allow, 0);
    cr_expect_eq(netpolicy_request(&l, v, "'network'", &out, err), RB_OK, "%s", err);
    cr_expect_eq(json_array_size(json_object_get(out, "allow")), NETPOLICY_PATTERNS_MAX);
    json_decref(out);
    json_decref(v);
    netpolicy_limits_dispose(&l);
}

static void check_seed(void *data, const char *seed, const char *path, const char *buf, size_t len)
{
    (void)path;
    int *accepted = data;
    netpolicy_limits l;
    char err[RB_ERR_LEN];
    cr_assert_eq(netpolicy_limits_init(&l, 1, "pypi.org", "*.example.test,pypi.org", "bad.example.test", FLAGS, err),
                 RB_OK);
    json_t *v = json_loadb(buf, len, JSON_DECODE_ANY, NULL);
    if (v != NULL) {
        json_t *out = NULL;
        rb_err e = netpolicy_request(&l, v, "'network'", &out, err);
        cr_expect(e == RB_OK || e == RB_EINVAL || e == RB_EFORBIDDEN, "%s: %s", seed, rb_strerror(e));
        if (e == RB_OK && out != NULL) {
            (*accepted)++;
            cr_expect(json_array_size(json_object_get(out, "deny")) >= 1, "%s", seed);
        }
        json_decref(out);
        json_decref(v);
    }
    netpolicy_limits_dispose(&l);
}

Test(netpolicy, fuzz_corpus_replay)
{
    int accepted = 0;
    int files = corpus_each("netpolicy", check_seed, &accepted);
    cr_assert_geq(files, 8);
    cr_assert_gt(accepted, 0);
}

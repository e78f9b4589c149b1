/*
 * test_requirements.c: core/deps/requirements.c without Docker: the syntax of one requirement
 * (accepted forms, normalisation, limits), version comparison, the operator's deps-allow /
 * deps-block rules with minimum versions, and the checks on a caller's whole list; then the
 * same for npm packages (names, scopes, versions, ranges, dist-tags, and what is refused: URLs,
 * paths, git and alias specs, "||"; the "npm:" rules, kept apart from the Python ones).
 */
#include <criterion/criterion.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "core/deps/requirements.h"
#include "tests/core/support_core.h"

/* ---- one requirement -------------------------------------------------------------------- */

static void accepts(const char *text, const char *name, const char *op, const char *version)
{
    requirement r;
    cr_assert_eq(requirements_parse_one(text, &r), RB_OK, "'%s' was refused", text);
    cr_assert_str_eq(r.name, name, "'%s'", text);
    cr_assert_str_eq(r.op, op, "'%s'", text);
    cr_assert_str_eq(r.version, version, "'%s'", text);
}

static void refuses(const char *text)
{
    requirement r;
    cr_assert_eq(requirements_parse_one(text, &r), RB_EINVAL, "'%s' was accepted", text);
}

/* A string of n copies of c followed by tail (the caller frees it). */
static char *repeat(char c, size_t n, const char *tail)
{
    size_t t = strlen(tail);
    char *s = malloc(n + t + 1);
    cr_assert_not_null(s);
    memset(s, c, n);
    memcpy(s + n, tail, t + 1);
    return s;
}

Test(requirement, accepted_forms)
{
    accepts("requests", "requests", "", "");
    accepts("requests==2.32.3", "requests", "==", "2.32.3");
    accepts("numpy>=1.26", "numpy", ">=", "1.26");
    accepts("numpy<=1.26", "numpy", "<=", "1.26");
    accepts("numpy~=1.26", "numpy", "~=", "1.26");
    accepts("numpy!=1.26", "numpy", "!=", "1.26");
    accepts("numpy>1", "numpy", ">", "1");
    accepts("numpy<2", "numpy", "<", "2");
    /* the characters of PEP 440 versions: wildcards, local versions, epochs, pre-releases */
    accepts("numpy==1.26.*", "numpy", "==", "1.26.*");
    accepts("torch==2.3.0+cpu", "torch", "==", "2.3.0+cpu");
    accepts("pkg==1!2.0", "pkg", "==", "1!2.0");
    accepts("pkg==1.0rc1", "pkg", "==", "1.0rc1");
    accepts("pkg==1.0-post_1", "pkg", "==", "1.0-post_1");
    accepts("3to2", "3to2", "", "");
}

Test(requirement, spaces_around_the_parts)
{
    accepts("  requests", "requests", "", "");
    accepts("requests   ", "requests", "", "");
    accepts("requests == 2.32.3", "requests", "==", "2.32.3");
    accepts("  requests==  2.32.3  ", "requests", "==", "2.32.3");
    accepts("numpy >1", "numpy", ">", "1");
    refuses("requests == 2 .3");  /* a space inside the version */
    refuses("requests = = 2");    /* or inside the operator */
    refuses("\trequests");        /* only spaces, not tabs or newlines */
    refuses("requests\t==1");
    refuses("requests==1\n");
    refuses("requests==1 \n b");
}

Test(requirement, names_are_normalised)
{
    accepts("Requests", "requests", "", "");
    accepts("PyYAML==6.0", "pyyaml", "==", "6.0");
    accepts("tomli_w", "tomli-w", "", "");
    accepts("Zope.Interface~=6.0", "zope-interface", "~=", "6.0");
    accepts("a-_.b", "a-b", "", "");  /* a run of separators is one '-' */
    accepts("a__b..c", "a-b-c", "", "");
    accepts("numpy-", "numpy", "", ""); /* separators at the end are dropped */
    accepts("numpy._ >= 1", "numpy", ">=", "1");
    accepts("Pkg==1.0RC1", "pkg", "==", "1.0RC1"); /* versions are kept as written */
}

Test(requirement, empty_or_malformed_names)
{
    refuses("");
    refuses("   ");
    refuses("==1.0");
    refuses("-r requirements.txt");
    refuses("--index-url=https://evil.example/simple");
    refuses("_private");
    refuses(".hidden");
    refuses("./dir");
    refuses("/abs/path");
    refuses("https://x/y.whl");
    refuses("pkg @ https://x/y.whl");
    refuses("pkg[extra]");
    refuses("pkg[extra]==1");
    refuses("pkg;python_version<'3'");
    refuses("a==1;python_version<'3'");
    refuses("pkg name");
    refuses("p\xc3\xa9kg");
}

Test(requirement, bad_specifiers)
{
    refuses("a==");
    refuses("a == ");
    refuses("a=1");
    refuses("a===1");
    refuses("a=>1");
    refuses("a>>2");
    refuses("a<<2");
    refuses("a=<1");
    refuses("a~1");
    refuses("a!1");
    refuses("a==1,<2"); /* one specifier only */
    refuses("a>=1 <2");
    refuses("a == 1 2");
    refuses("a==1;b");
    refuses("a==1#x");
    refuses("a==*'");
}

Test(requirement, length_limits)
{
    char *s = repeat('a', REQUIREMENTS_NAME_MAX, "");
    accepts(s, s, "", "");
    free(s);
    s = repeat('a', REQUIREMENTS_NAME_MAX - 2, "-b");
    accepts(s, s, "", "");
    free(s);
    s = repeat('a', REQUIREMENTS_NAME_MAX + 1, "");
    refuses(s);
    free(s);
    s = repeat('a', REQUIREMENTS_NAME_MAX - 1, "-b");
    refuses(s);
    free(s);
    s = repeat('a', REQUIREMENTS_NAME_MAX, "___"); /* separators at the end do not count */
    requirement r;
    cr_assert_eq(requirements_parse_one(s, &r), RB_OK);
    cr_assert_eq(strlen(r.name), REQUIREMENTS_NAME_MAX);
    free(s);
    s = repeat('a', 5000, "==1");
    refuses(s);
    free(s);

    char *v = repeat('1', REQUIREMENTS_VERSION_MAX, "");
    char text[REQUIREMENTS_VERSION_MAX + 16];
    snprintf(text, sizeof(text), "a==%s", v);
    accepts(text, "a", "==", v);
    free(v);
    v = repeat('1', REQUIREMENTS_VERSION_MAX + 1, "");
    snprintf(text, sizeof(text), "a==%s", v);
    refuses(text);
    free(v);
}

/* ---- versions ----------------------------------------------------------------------------- */

Test(version, numeric_parts_compare_as_numbers)
{
    cr_assert_eq(requirements_version_compare("1.0", "1.0"), 0);
    cr_assert_eq(requirements_version_compare("", ""), 0);
    cr_assert_gt(requirements_version_compare("2.10", "2.9"), 0);
    cr_assert_lt(requirements_version_compare("2.9", "2.10"), 0);
    cr_assert_gt(requirements_version_compare("1.100", "1.20"), 0);
    cr_assert_gt(requirements_version_compare("1.20", "1.19.9"), 0);
    cr_assert_lt(requirements_version_compare("1.19.9", "1.20"), 0);
    cr_assert_gt(requirements_version_compare("1.0.1", "1.0"), 0);
    cr_assert_lt(requirements_version_compare("1.0", "1.0.1"), 0);
    cr_assert_gt(requirements_version_compare("10", "9"), 0);
    cr_assert_lt(requirements_version_compare("1.a", "1.2"), 0); /* a letter where the other has a number */
    cr_assert_lt(requirements_version_compare("1.0a", "1.0b"), 0);
}

/* ---- the operator's policy over a caller's list ------------------------------------------- */

static core_settings cfg;

static void rules_setup(void)
{
    core_settings_init(&cfg);
}

static void rules_teardown(void)
{
    core_settings_dispose(&cfg);
}

TestSuite(rules, .init = rules_setup, .fini = rules_teardown);

/* Sets one of the policy settings by its flag name (the daemon's spelling). */
static void set(const char *key, const char *value)
{
    char **field = strcmp(key, "deps-allow") == 0   ? &cfg.deps_allow
                   : strcmp(key, "deps-block") == 0 ? &cfg.deps_block
                   : strcmp(key, "deps-network") == 0 ? &cfg.deps_network
                                                      : NULL;
    cr_assert_not_null(field, "test sets unknown key %s", key);
    sup_set(field, value);
}

/* Parses the JSON list; on RB_OK writes the resulting lines joined by " " into out, otherwise
 * the error text. */
/* The list parser under test and the separator of its lines in parse's text (npm's lines may
 * hold a space): pip's by default, npm's in the npm_rules suite. */
static rb_err (*list_parser)(const core_settings *, json_t *, json_t **, char *) = requirements_parse;
static const char *line_sep = " ";

static rb_err parse(const char *json, char *out, size_t outlen)
{
    json_t *list = json_loads(json, JSON_DECODE_ANY, NULL);
    cr_assert_not_null(list, "bad test JSON %s", json);
    json_t *res = (json_t *)1;
    char err[RB_ERR_LEN] = "";
    rb_err e = list_parser(&cfg, list, &res, err);
    json_decref(list);
    if (e != RB_OK) {
        cr_assert_null(res, "%s: *out set on an error", json);
        snprintf(out, outlen, "%s", err);
        return e;
    }
    out[0] = '\0';
    size_t i;
    json_t *v;
    json_array_foreach(res, i, v)
    {
        size_t len = strlen(out);
        snprintf(out + len, outlen - len, "%s%s", i ? line_sep : "", json_string_value(v));
    }
    json_decref(res);
    return RB_OK;
}

static void gives(const char *json, const char *lines)
{
    char out[4096];
    cr_assert_eq(parse(json, out, sizeof(out)), RB_OK, "%s: %s", json, out);
    cr_assert_str_eq(out, lines, "%s", json);
}

/* Expects error e with each of the NULL-terminated fragments in its text. */
static void fails(const char *json, rb_err e, ...)
{
    char out[4096];
    rb_err got = parse(json, out, sizeof(out));
    cr_assert_eq(got, e, "%s: got %d (%s)", json, (int)got, out);
    va_list ap;
    va_start(ap, e);
    for (const char *frag = va_arg(ap, const char *); frag != NULL; frag = va_arg(ap, const char *))
        cr_assert(strstr(out, frag) != NULL, "%s: '%s' not in: %s", json, frag, out);
    va_end(ap);
}

Test(rules, nothing_asked_gives_no_list)
{
    json_t *out = (json_t *)1;
    char err[RB_ERR_LEN];
    cr_assert_eq(requirements_parse(&cfg, NULL, &out, err), RB_OK);
    cr_assert_null(out);
    gives("null", "");
    gives("[]", "");
    /* even with installs disabled: nothing is to be installed */
    set("deps-network", "none");
    out = (json_t *)1;
    json_t *empty = json_array();
    cr_assert_eq(requirements_parse(&cfg, empty, &out, err), RB_OK);
    cr_assert_null(out);
    json_decref(empty);
}

Test(rules, the_list_itself)
{
    gives("[\"Requests == 2.32.3\", \"numpy>=1.26\", \"tomli_w\"]", "numpy>=1.26 requests==2.32.3 tomli-w");
    fails("\"requests\"", RB_EINVAL, "must be a list", NULL);
    fails("{\"requests\": \"1\"}", RB_EINVAL, "must be a list", NULL);
    fails("[7]", RB_EINVAL, "dependencies[0]", "(not a string)", NULL);
    fails("[\"ok\", \"pkg[extra]\"]", RB_EINVAL, "dependencies[1]", "'pkg[extra]'", NULL);
    fails("[\"\"]", RB_EINVAL, "dependencies[0]", NULL);
    /* the same package twice, however it is spelt */
    fails("[\"a\", \"A\"]", RB_EINVAL, "'a' is listed twice", NULL);
    fails("[\"tomli_w\", \"Tomli.W==1\"]", RB_EINVAL, "'tomli-w' is listed twice", NULL);
    fails("[\"a==1\", \"b\", \"a>=2\"]", RB_EINVAL, "'a' is listed twice", NULL);
}

Test(rules, list_limits)
{
    char json[8192] = "[";
    for (int i = 0; i < REQUIREMENTS_MAX; i++) {
        size_t len = strlen(json);
        snprintf(json + len, sizeof(json) - len, "%s\"p%02d\"", i ? "," : "", i);
    }
    char full[8192 + 16]; /* room for json and its end, so that no snprintf below can cut */
    snprintf(full, sizeof(full), "%s]", json);
    char out[4096];
    cr_assert_eq(parse(full, out, sizeof(out)), RB_OK, "%s", out);
    snprintf(full, sizeof(full), "%s,\"extra\"]", json);
    fails(full, RB_EINVAL, "at most 50 packages", NULL);

    /* the caller's text is limited before it is parsed: padding counts */
    char *pad = repeat(' ', REQUIREMENTS_TEXT_MAX - 1, "");
    snprintf(full, sizeof(full), "[\"a%s\"]", pad);
    gives(full, "a");
    snprintf(full, sizeof(full), "[\"a%s \"]", pad);
    fails(full, RB_EINVAL, "dependencies[0]", NULL);
    free(pad);
}

Test(rules, installs_disabled)
{
    set("deps-network", "none");
    fails("[\"requests\"]", RB_EFORBIDDEN, "disabled", "deps-network", NULL);
    free(cfg.deps_network);
    cfg.deps_network = NULL;
    fails("[\"requests\"]", RB_EFORBIDDEN, "disabled", NULL);
    cfg.deps_network = strdup("");
    fails("[\"requests\"]", RB_EFORBIDDEN, "disabled", NULL);
    /* the list is still checked before the setting */
    fails("\"requests\"", RB_EINVAL, "must be a list", NULL);
}

Test(rules, blocklist)
{
    set("deps-block", "evil, Bad_Pkg,, ");
    fails("[\"EVIL==1.0\"]", RB_EFORBIDDEN, "'evil'", "deps-block", NULL);
    fails("[\"evil\"]", RB_EFORBIDDEN, "'evil'", "deps-block rule 'evil'", NULL);
    fails("[\"bad.pkg\"]", RB_EFORBIDDEN, "'bad-pkg'", "deps-block", NULL); /* rules are normalised too */
    fails("[\"requests\", \"evil>=2\"]", RB_EFORBIDDEN, "'evil'", NULL);
    gives("[\"evil2\", \"requests\"]", "evil2 requests");
}

Test(rules, blocklist_minimum_versions)
{
    set("deps-block", "numpy<1.20");
    /* unpinned or open requests get the minimum added for pip */
    gives("[\"numpy\"]", "numpy>=1.20");
    gives("[\"numpy>=1.0\"]", "numpy>=1.0,>=1.20");
    gives("[\"numpy!=1.21\"]", "numpy!=1.21,>=1.20");
    gives("[\"numpy~=1.0\"]", "numpy~=1.0,>=1.20");
    gives("[\"numpy>1.0\"]", "numpy>1.0,>=1.20");
    /* pins and upper bounds below the minimum are refused with the rule named */
    fails("[\"numpy==1.19.9\"]", RB_EFORBIDDEN, "'numpy==1.19.9'", "minimum version 1.20",
          "deps-block rule 'numpy<1.20'", NULL);
    fails("[\"numpy<1.20\"]", RB_EFORBIDDEN, "1.20", NULL);
    fails("[\"numpy<=1.19\"]", RB_EFORBIDDEN, "1.20", NULL);
    gives("[\"numpy==1.20\"]", "numpy==1.20,>=1.20");
    gives("[\"numpy<=1.20\"]", "numpy<=1.20,>=1.20");
    gives("[\"numpy<1.21\"]", "numpy<1.21,>=1.20");
    gives("[\"numpy==1.100\"]", "numpy==1.100,>=1.20"); /* numeric, not text, comparison */
    /* a wildcard pin is left to pip, with the minimum added */
    gives("[\"numpy==1.19.*\"]", "numpy==1.19.*,>=1.20");
    gives("[\"scipy==0.1\"]", "scipy==0.1");
}

Test(rules, allowlist_and_minimum_versions)
{
    set("deps-allow", "requests>=2.31, NumPy, tomli_w");
    fails("[\"flask\"]", RB_EFORBIDDEN, "'flask'", "allowlist", "deps-allow", NULL);
    fails("[\"numpy\", \"flask\"]", RB_EFORBIDDEN, "'flask'", NULL);
    gives("[\"numpy==1.0\", \"Tomli-W\"]", "numpy==1.0 tomli-w");
    gives("[\"requests\"]", "requests>=2.31");
    gives("[\"requests==2.32.3\"]", "requests==2.32.3,>=2.31");
    fails("[\"requests==2.30.9\"]", RB_EFORBIDDEN, "2.31", "deps-allow rule 'requests>=2.31'", NULL);
}

Test(rules, the_larger_minimum_wins)
{
    set("deps-allow", "numpy>=1.22, pandas>=1.0");
    set("deps-block", "numpy<1.20, pandas<2.0");
    gives("[\"numpy\"]", "numpy>=1.22");
    fails("[\"numpy==1.21\"]", RB_EFORBIDDEN, "minimum version 1.22", "deps-allow rule 'numpy>=1.22'", NULL);
    gives("[\"pandas\"]", "pandas>=2.0");
    fails("[\"pandas==1.5\"]", RB_EFORBIDDEN, "minimum version 2.0", "deps-block rule 'pandas<2.0'", NULL);
}

Test(rules, a_block_beats_an_allow)
{
    set("deps-allow", "evil, requests");
    set("deps-block", "evil");
    fails("[\"evil\"]", RB_EFORBIDDEN, "deps-block", NULL);
    gives("[\"requests\"]", "requests");
}

Test(rules, malformed_settings_are_named)
{
    set("deps-allow", "requests>>2");
    fails("[\"requests\"]", RB_EINVAL, "deps-allow", "malformed", NULL);
    set("deps-allow", "requests");
    set("deps-block", "numpy==1.0");
    fails("[\"requests\"]", RB_EINVAL, "deps-block", "malformed", NULL);
    set("deps-block", "numpy<1.0 2");
    fails("[\"requests\"]", RB_EINVAL, "deps-block", NULL);
    set("deps-block", "pkg[x]");
    fails("[\"requests\"]", RB_EINVAL, "deps-block", NULL);
}

/* Each entry must mean something in its list: a rule the policy would silently ignore (an
 * operator it does not apply there, a second rule for the same package, an entry too long to
 * read) is reported, not skipped. */
Test(rules, rules_that_would_be_ignored_are_malformed)
{
    set("deps-block", "numpy>=2"); /* "not from 2 on" is not a rule deps-block applies */
    fails("[\"numpy==3.0\"]", RB_EINVAL, "deps-block", "malformed", NULL);
    set("deps-block", "numpy");
    set("deps-allow", "numpy<2"); /* nor is an upper bound on the allowlist */
    fails("[\"requests\"]", RB_EINVAL, "deps-allow", "malformed", NULL);
    set("deps-allow", "requests");

    set("deps-block", "evil<2, evil"); /* the second rule would never be read */
    fails("[\"evil==3\"]", RB_EINVAL, "deps-block", "malformed", NULL);
    set("deps-block", "numpy");
    set("deps-allow", "requests, Requests>=2.31");
    fails("[\"requests==2.0\"]", RB_EINVAL, "deps-allow", "malformed", NULL);
    set("deps-allow", "requests");

    char *entry = repeat(' ', 300, "evil");
    set("deps-block", entry);
    fails("[\"evil\"]", RB_EINVAL, "deps-block", "malformed", NULL);
    free(entry);
    entry = repeat(' ', 300, "requests");
    set("deps-block", "evil");
    set("deps-allow", entry);
    fails("[\"requests\"]", RB_EINVAL, "deps-allow", "malformed", NULL);
    free(entry);
}

/* ---- one npm requirement------------------------------------------------------------------ */

static void npm_accepts(const char *text, const char *name, const char *spec, int n_cmp)
{
    npm_requirement r;
    cr_assert_eq(requirements_npm_parse_one(text, &r), RB_OK, "'%s' was refused", text);
    cr_assert_str_eq(r.name, name, "'%s'", text);
    cr_assert_str_eq(r.spec, spec, "'%s'", text);
    cr_assert_eq(r.n_cmp, n_cmp, "'%s': %d comparators", text, r.n_cmp);
}

static void npm_refuses(const char *text)
{
    npm_requirement r;
    cr_assert_eq(requirements_npm_parse_one(text, &r), RB_EINVAL, "'%s' was accepted", text);
}

Test(npm_requirement, names)
{
    npm_accepts("left-pad", "left-pad", "", 0);
    npm_accepts("lodash.merge", "lodash.merge", "", 0);
    npm_accepts("socket_io", "socket_io", "", 0);
    npm_accepts("@types/node", "@types/node", "", 0);
    npm_accepts("@babel/core@7.24.0", "@babel/core", "7.24.0", 1);
    npm_accepts("JSONStream", "JSONStream", "", 0); /* legacy names with capitals are real packages */
    npm_accepts("3d-view", "3d-view", "", 0);
    npm_refuses("");
    npm_refuses("@");
    npm_refuses("@scope");
    npm_refuses("@scope/");
    npm_refuses("@/name");
    npm_refuses(".hidden");
    npm_refuses("_private");
    npm_refuses("-dash");
    npm_refuses("a/b");      /* GitHub shorthand */
    npm_refuses("@a/b/c");
    npm_refuses(" left-pad"); /* no spaces around the parts */
    npm_refuses("left-pad ");
    npm_refuses("left pad");
    npm_refuses("na~me");
    npm_refuses("name!");
    char *long_name = malloc(REQUIREMENTS_NPM_NAME_MAX + 2);
    cr_assert_not_null(long_name);
    memset(long_name, 'a', REQUIREMENTS_NPM_NAME_MAX);
    long_name[REQUIREMENTS_NPM_NAME_MAX] = '\0';
    npm_requirement r;
    cr_assert_eq(requirements_npm_parse_one(long_name, &r), RB_OK);
    long_name[REQUIREMENTS_NPM_NAME_MAX] = 'a';
    long_name[REQUIREMENTS_NPM_NAME_MAX + 1] = '\0';
    npm_refuses(long_name);
    free(long_name);
}

Test(npm_requirement, versions_ranges_and_tags)
{
    npm_accepts("left-pad@1.3.0", "left-pad", "1.3.0", 1);
    npm_accepts("left-pad@v1.3.0", "left-pad", "v1.3.0", 1);
    npm_accepts("lodash@^4.17.21", "lodash", "^4.17.21", 1);
    npm_accepts("lodash@~4.17", "lodash", "~4.17", 1);
    npm_accepts("lodash@4", "lodash", "4", 1);
    npm_accepts("lodash@4.x", "lodash", "4.x", 1);
    npm_accepts("lodash@*", "lodash", "*", 1);
    npm_accepts("lodash@x", "lodash", "x", 1);
    npm_accepts("x@>=1.2.3 <2", "x", ">=1.2.3 <2", 2);
    npm_accepts("x@=1.0.0", "x", "=1.0.0", 1);
    npm_accepts("x@1.0.0-beta.1+build-7", "x", "1.0.0-beta.1+build-7", 1);
    npm_accepts("x@latest", "x", "latest", 0);
    npm_accepts("x@next-11.x", "x", "next-11.x", 0);
    npm_accepts("x@xyz", "x", "xyz", 0);
    npm_refuses("x@");
    npm_refuses("x@@1");
    npm_refuses("x@1 || 2");            /* no unions */
    npm_refuses("x@>=1 <2 <3");         /* at most two comparators */
    npm_refuses("x@>=1  <2");           /* one space between them */
    npm_refuses("x@1.2.3.4");
    npm_refuses("x@1.0.0-");
    npm_refuses("x@1 - 2");             /* no hyphen ranges */
    npm_refuses("x@file:../y");         /* no paths, URLs, git or aliases */
    npm_refuses("x@../y");
    npm_refuses("x@/tmp/y.tgz");
    npm_refuses("x@https://example.invalid/x.tgz");
    npm_refuses("x@git+https://example.invalid/x.git");
    npm_refuses("x@github:a/b");
    npm_refuses("x@npm:other@1");
    npm_refuses("x@user/repo");
    npm_refuses("x@1.0.0#frag");
    npm_refuses("x@latest!");
    npm_refuses("x@1.0\n");
    npm_refuses("--registry=http://evil.invalid/");
    npm_refuses("x@--ignore-scripts=false");
}

/* ---- npm's lists and the "npm:" rules ------------------------------------------------------ */

static void npm_rules_setup(void)
{
    core_settings_init(&cfg);
    list_parser = requirements_npm_parse;
    line_sep = " | ";
}

TestSuite(npm_rules, .init = npm_rules_setup, .fini = rules_teardown);

Test(npm_rules, the_list_itself)
{
    gives("null", "");
    gives("[]", "");
    gives("[\"lodash@^4.17.21\", \"@types/node\", \"left-pad\"]", "@types/node | left-pad | lodash@^4.17.21");
    fails("\"left-pad\"", RB_EINVAL, "must be a list", "left-pad@1.3.0", NULL);
    fails("[7]", RB_EINVAL, "dependencies[0]", "(not a string)", NULL);
    fails("[\"ok\", \"x@file:y\"]", RB_EINVAL, "dependencies[1]", "'x@file:y'", "npm package name", NULL);
    fails("[\"requests==2.32.3\"]", RB_EINVAL, "dependencies[0]", NULL); /* Python's syntax is not npm's */
    fails("[\"a\", \"a@1\"]", RB_EINVAL, "'a' is listed twice", NULL);
    gives("[\"a\", \"A\"]", "A | a"); /* npm names are case-sensitive: two packages */
}

Test(npm_rules, installs_disabled)
{
    sup_set(&cfg.deps_network, "none");
    fails("[\"left-pad\"]", RB_EFORBIDDEN, "disabled", "deps-network", NULL);
}

Test(npm_rules, blocklist_and_minimum_versions)
{
    sup_set(&cfg.deps_block, "npm:event-stream, npm:@evil/pkg, npm:lodash<4.17.21, left-pad");
    fails("[\"event-stream@3.3.6\"]", RB_EFORBIDDEN, "'event-stream'", "deps-block rule 'npm:event-stream'", NULL);
    fails("[\"@evil/pkg\"]", RB_EFORBIDDEN, "'@evil/pkg'", NULL);
    gives("[\"left-pad\"]", "left-pad"); /* a Python rule does not touch npm's package of the same name */
    gives("[\"lodash\"]", "lodash@>=4.17.21");
    gives("[\"lodash@^4.0.0\"]", "lodash@^4.0.0 >=4.17.21");
    gives("[\"lodash@4.17.21\"]", "lodash@4.17.21 >=4.17.21");
    gives("[\"lodash@4\"]", "lodash@4 >=4.17.21"); /* a partial version is a range: npm decides */
    fails("[\"lodash@4.17.20\"]", RB_EFORBIDDEN, "'lodash@4.17.20'", "minimum version 4.17.21",
          "deps-block rule 'npm:lodash<4.17.21'", NULL);
    fails("[\"lodash@>=4 <4.17.21\"]", RB_EFORBIDDEN, "minimum version 4.17.21", NULL);
    fails("[\"lodash@<=4.17.20\"]", RB_EFORBIDDEN, "minimum version 4.17.21", NULL);
    fails("[\"lodash@latest\"]", RB_EFORBIDDEN, "dist-tag", "4.17.21", NULL);
    gives("[\"underscore@latest\"]", "underscore@latest");
}

Test(npm_rules, allowlist)
{
    sup_set(&cfg.deps_allow, "requests, npm:left-pad, npm:@types/node>=20.0.0");
    fails("[\"lodash\"]", RB_EFORBIDDEN, "'lodash'", "allowlist", "npm:NAME", NULL);
    fails("[\"requests\"]", RB_EFORBIDDEN, "'requests'", NULL); /* the Python entry */
    gives("[\"left-pad@1.3.0\", \"@types/node\"]", "@types/node@>=20.0.0 | left-pad@1.3.0");
    fails("[\"@types/node@18.0.0\"]", RB_EFORBIDDEN, "minimum version 20.0.0", "deps-allow rule 'npm:@types/node>=20.0.0'",
          NULL);
    /* and the Python side ignores the npm entries */
    json_t *list = json_loads("[\"left-pad\"]", 0, NULL), *out = NULL;
    char err[RB_ERR_LEN] = "";
    cr_assert_eq(requirements_parse(&cfg, list, &out, err), RB_EFORBIDDEN, "%s", err);
    json_decref(list);
    list = json_loads("[\"requests\"]", 0, NULL);
    cr_assert_eq(requirements_parse(&cfg, list, &out, err), RB_OK, "%s", err);
    json_decref(out);
    json_decref(list);
}

Test(npm_rules, malformed_npm_entries_are_named)
{
    static const char *const bad[] = {"npm:",          "npm:x>=",      "npm:x==1",       "npm:x@1",
                                      "npm:@s",        "npm:x<1.x",    "npm:x, npm:x<2", "npm:a/b"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        sup_set(&cfg.deps_block, bad[i]);
        fails("[\"y\"]", RB_EINVAL, "deps-block", "malformed", "npm:name", NULL);
        char err[RB_ERR_LEN];
        cr_assert_eq(requirements_check_settings(&cfg, err), RB_EINVAL, "%s accepted", bad[i]);
    }
    sup_set(&cfg.deps_block, "npm:x<2");
    sup_set(&cfg.deps_allow, "npm:x<2"); /* an upper bound on the allowlist is not a rule */
    fails("[\"y\"]", RB_EINVAL, "deps-allow", "malformed", NULL);
    sup_set(&cfg.deps_allow, " npm:x >= 1.0 , npm:@s/y, numpy>=1");
    char err[RB_ERR_LEN];
    cr_assert_eq(requirements_check_settings(&cfg, err), RB_OK, "%s", err);
    gives("[\"x\"]", "x@>=2"); /* the block rule's minimum is the larger */
}

/*
 * test_requirements_npm.c: the npm side of core/requirements.c without Docker: the syntax of
 * one npm requirement (names, scopes, versions, ranges, dist-tags, and what is refused: URLs,
 * paths, git and alias specs, "||"), and the operator's "npm:" rules in deps-allow / deps-block
 * over a caller's list, kept apart from the Python rules.
 */
#include <criterion/criterion.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "core/requirements.h"
#include "tests/core/support_core.h"

/* ---- one requirement -------------------------------------------------------------------- */

static void accepts(const char *text, const char *name, const char *spec, int n_cmp)
{
    npm_requirement r;
    cr_assert_eq(requirements_npm_parse_one(text, &r), RB_OK, "'%s' was refused", text);
    cr_assert_str_eq(r.name, name, "'%s'", text);
    cr_assert_str_eq(r.spec, spec, "'%s'", text);
    cr_assert_eq(r.n_cmp, n_cmp, "'%s': %d comparators", text, r.n_cmp);
}

static void refuses(const char *text)
{
    npm_requirement r;
    cr_assert_eq(requirements_npm_parse_one(text, &r), RB_EINVAL, "'%s' was accepted", text);
}

Test(npm_requirement, names)
{
    accepts("left-pad", "left-pad", "", 0);
    accepts("lodash.merge", "lodash.merge", "", 0);
    accepts("socket_io", "socket_io", "", 0);
    accepts("@types/node", "@types/node", "", 0);
    accepts("@babel/core@7.24.0", "@babel/core", "7.24.0", 1);
    accepts("JSONStream", "JSONStream", "", 0); /* legacy names with capitals are real packages */
    accepts("3d-view", "3d-view", "", 0);
    refuses("");
    refuses("@");
    refuses("@scope");
    refuses("@scope/");
    refuses("@/name");
    refuses(".hidden");
    refuses("_private");
    refuses("-dash");
    refuses("a/b");      /* GitHub shorthand */
    refuses("@a/b/c");
    refuses(" left-pad"); /* no spaces around the parts */
    refuses("left-pad ");
    refuses("left pad");
    refuses("na~me");
    refuses("name!");
    char *long_name = malloc(REQUIREMENTS_NPM_NAME_MAX + 2);
    cr_assert_not_null(long_name);
    memset(long_name, 'a', REQUIREMENTS_NPM_NAME_MAX);
    long_name[REQUIREMENTS_NPM_NAME_MAX] = '\0';
    npm_requirement r;
    cr_assert_eq(requirements_npm_parse_one(long_name, &r), RB_OK);
    long_name[REQUIREMENTS_NPM_NAME_MAX] = 'a';
    long_name[REQUIREMENTS_NPM_NAME_MAX + 1] = '\0';
    refuses(long_name);
    free(long_name);
}

Test(npm_requirement, versions_ranges_and_tags)
{
    accepts("left-pad@1.3.0", "left-pad", "1.3.0", 1);
    accepts("left-pad@v1.3.0", "left-pad", "v1.3.0", 1);
    accepts("lodash@^4.17.21", "lodash", "^4.17.21", 1);
    accepts("lodash@~4.17", "lodash", "~4.17", 1);
    accepts("lodash@4", "lodash", "4", 1);
    accepts("lodash@4.x", "lodash", "4.x", 1);
    accepts("lodash@*", "lodash", "*", 1);
    accepts("lodash@x", "lodash", "x", 1);
    accepts("x@>=1.2.3 <2", "x", ">=1.2.3 <2", 2);
    accepts("x@=1.0.0", "x", "=1.0.0", 1);
    accepts("x@1.0.0-beta.1+build-7", "x", "1.0.0-beta.1+build-7", 1);
    accepts("x@latest", "x", "latest", 0);
    accepts("x@next-11.x", "x", "next-11.x", 0);
    accepts("x@xyz", "x", "xyz", 0);
    refuses("x@");
    refuses("x@@1");
    refuses("x@1 || 2");            /* no unions */
    refuses("x@>=1 <2 <3");         /* at most two comparators */
    refuses("x@>=1  <2");           /* one space between them */
    refuses("x@1.2.3.4");
    refuses("x@1.0.0-");
    refuses("x@1 - 2");             /* no hyphen ranges */
    refuses("x@file:../y");         /* no paths, URLs, git or aliases */
    refuses("x@../y");
    refuses("x@/tmp/y.tgz");
    refuses("x@https://example.invalid/x.tgz");
    refuses("x@git+https://example.invalid/x.git");
    refuses("x@github:a/b");
    refuses("x@npm:other@1");
    refuses("x@user/repo");
    refuses("x@1.0.0#frag");
    refuses("x@latest!");
    refuses("x@1.0\n");
    refuses("--registry=http://evil.invalid/");
    refuses("x@--ignore-scripts=false");
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

TestSuite(npm_rules, .init = rules_setup, .fini = rules_teardown);

static rb_err parse(const char *json, char *out, size_t outlen)
{
    json_t *list = json_loads(json, JSON_DECODE_ANY, NULL);
    cr_assert_not_null(list, "bad test JSON %s", json);
    json_t *res = (json_t *)1;
    char err[RB_ERR_LEN] = "";
    rb_err e = requirements_npm_parse(&cfg, list, &res, err);
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
        snprintf(out + len, outlen - len, "%s%s", i ? " | " : "", json_string_value(v));
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

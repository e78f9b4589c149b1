/*
 * test_paths_policy.c: the pure rules of core/files.c and core/requirements.c, without Docker: path
 * normalisation and confinement (files_normalize_path), content types, the validation of a
 * runner's files_written list, and dependency requirements against the operator's policy
 * (requirements_parse: syntax, blocklist, allowlist, minimum versions, sorting, duplicates).
 */
#include <criterion/criterion.h>
#include <string.h>

#include "core/internal.h"
#include "tests/core/support_core.h"
#include "core/requirements.h"

static rb_err norm(const char *in, int root, char *out, size_t outlen)
{
    char *p = NULL, err[RB_ERR_LEN];
    rb_err e = files_normalize_path(in, root, &p, err);
    snprintf(out, outlen, "%s", e == RB_OK ? p : err);
    free(p);
    return e;
}

Test(paths, normalisation)
{
    char out[RB_ERR_LEN];
    cr_assert_eq(norm("data/x.csv", 0, out, sizeof(out)), RB_OK);
    cr_assert_str_eq(out, "data/x.csv");
    cr_assert_eq(norm("./data//./x.csv/", 0, out, sizeof(out)), RB_OK);
    cr_assert_str_eq(out, "data/x.csv");
    cr_assert_eq(norm("/workspace/out/p.png", 0, out, sizeof(out)), RB_OK);
    cr_assert_str_eq(out, "out/p.png");
    cr_assert_eq(norm("/workspace", 1, out, sizeof(out)), RB_OK);
    cr_assert_str_eq(out, "");
    cr_assert_eq(norm("a..b/..c", 0, out, sizeof(out)), RB_OK); /* dots inside names are fine */
    cr_assert_str_eq(out, "a..b/..c");
}

Test(paths, confinement)
{
    char out[RB_ERR_LEN];
    cr_assert_eq(norm("../x", 0, out, sizeof(out)), RB_EFORBIDDEN);
    cr_assert(strstr(out, "..") != NULL, "%s", out);
    cr_assert_eq(norm("a/../../x", 0, out, sizeof(out)), RB_EFORBIDDEN);
    cr_assert_eq(norm("a/..", 0, out, sizeof(out)), RB_EFORBIDDEN);
    cr_assert_eq(norm("/etc/passwd", 0, out, sizeof(out)), RB_EFORBIDDEN);
    cr_assert(strstr(out, "/workspace") != NULL, "%s", out);
    cr_assert_eq(norm("/workspacex/y", 0, out, sizeof(out)), RB_EFORBIDDEN);
    cr_assert_eq(norm("/workspace/../etc", 0, out, sizeof(out)), RB_EFORBIDDEN);
    cr_assert_eq(norm("", 0, out, sizeof(out)), RB_EINVAL);
    cr_assert_eq(norm("/workspace/", 0, out, sizeof(out)), RB_EINVAL);
    cr_assert_eq(norm(".", 0, out, sizeof(out)), RB_EINVAL);
    cr_assert_eq(norm("a\nb", 0, out, sizeof(out)), RB_EINVAL);
    cr_assert_eq(norm("a\\b", 0, out, sizeof(out)), RB_EINVAL);
    char *p = NULL, err[RB_ERR_LEN];
    cr_assert_eq(files_normalize_path(NULL, 0, &p, err), RB_EINVAL);
    char longp[5000];
    memset(longp, 'a', sizeof(longp) - 1);
    longp[sizeof(longp) - 1] = '\0';
    cr_assert_eq(files_normalize_path(longp, 0, &p, err), RB_EINVAL);
    cr_assert_null(p);
}

Test(paths, content_types)
{
    cr_assert_str_eq(files_content_type("plot.PNG"), "image/png");
    cr_assert_str_eq(files_content_type("a.csv"), "text/csv; charset=utf-8");
    cr_assert_str_eq(files_content_type("noext"), "application/octet-stream");
    cr_assert_str_eq(files_content_type("x.tar.gz"), "application/gzip");
}

Test(paths, files_written_from_an_untrusted_runner)
{
    json_t *in = json_loads("[{\"path\":\"a.png\",\"size\":3,\"modified\":1700000000000},"
                            "{\"path\":\"\",\"size\":1,\"modified\":1},{\"path\":5},\"junk\","
                            "{\"path\":\"b\",\"size\":\"big\",\"modified\":1},"
                            "{\"path\":\"c\",\"size\":1,\"modified\":2,\"extra\":true}]",
                            0, NULL);
    cr_assert_not_null(in);
    json_t *out = files_written_from_runner(in);
    cr_assert_eq(json_array_size(out), 2);
    cr_assert_str_eq(json_string_value(json_object_get(json_array_get(out, 0), "path")), "a.png");
    cr_assert_null(json_object_get(json_array_get(out, 1), "extra"));
    json_t *api = files_written_api(out);
    cr_assert_str_eq(json_string_value(json_object_get(json_array_get(api, 0), "modified")),
                     "2023-11-14T22:13:20.000Z");
    json_decref(api);
    json_decref(out);
    json_decref(in);
    out = files_written_from_runner(NULL);
    cr_assert_eq(json_array_size(out), 0);
    json_decref(out);
}

/* ---- dependencies ---------------------------------------------------------------------- */

static core_settings cfg;

static void deps_setup(void)
{
    core_settings_init(&cfg);
}

static void deps_teardown(void)
{
    core_settings_dispose(&cfg);
}

TestSuite(deps, .init = deps_setup, .fini = deps_teardown);

static rb_err parse(const char *json, json_t **out, char *err)
{
    json_t *list = json_loads(json, JSON_DECODE_ANY, NULL);
    cr_assert_not_null(list, "bad test JSON %s", json);
    rb_err e = requirements_parse(&cfg, list, out, err);
    json_decref(list);
    return e;
}

Test(deps, syntax_and_normalisation)
{
    json_t *out = NULL;
    char err[RB_ERR_LEN];
    cr_assert_eq(parse("[\"Requests == 2.32.3\", \"numpy>=1.26\", \"tomli_w\", \"zope.interface~=6.0\"]", &out, err),
                 RB_OK, "%s", err);
    cr_assert_eq(json_array_size(out), 4);
    cr_assert_str_eq(json_string_value(json_array_get(out, 0)), "numpy>=1.26");
    cr_assert_str_eq(json_string_value(json_array_get(out, 1)), "requests==2.32.3");
    cr_assert_str_eq(json_string_value(json_array_get(out, 2)), "tomli-w");
    cr_assert_str_eq(json_string_value(json_array_get(out, 3)), "zope-interface~=6.0");
    json_decref(out);

    cr_assert_eq(parse("[]", &out, err), RB_OK);
    cr_assert_null(out);
    const char *bad[] = {"[\"-r req.txt\"]", "[\"--index-url=x\"]", "[\"https://x/y.whl\"]", "[\"pkg[extra]\"]",
                         "[\"a==1;python_version<'3'\"]", "[\"a==\"]", "[\"a=1\"]", "[\"a == 1 2\"]", "[7]",
                         "[\"\"]", "[\"./dir\"]", "\"requests\"", "[\"a\", \"A\"]", "[\"a==1 \\n b\"]"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        cr_assert_eq(parse(bad[i], &out, err), RB_EINVAL, "%s was accepted", bad[i]);
        cr_assert_null(out);
    }
}

Test(deps, blocklist_allowlist_and_minimum_versions)
{
    json_t *out = NULL;
    char err[RB_ERR_LEN];
    sup_set(&cfg.deps_block, "evil, numpy<1.20");
    cr_assert_eq(parse("[\"EVIL==1.0\"]", &out, err), RB_EFORBIDDEN);
    cr_assert(strstr(err, "'evil'") && strstr(err, "deps-block"), "%s", err);
    cr_assert_eq(parse("[\"numpy==1.19.9\"]", &out, err), RB_EFORBIDDEN);
    cr_assert(strstr(err, "numpy") && strstr(err, "1.20"), "%s", err);
    cr_assert_eq(parse("[\"numpy<1.20\"]", &out, err), RB_EFORBIDDEN);
    /* unpinned or open requests get the minimum added for pip */
    cr_assert_eq(parse("[\"numpy\"]", &out, err), RB_OK, "%s", err);
    cr_assert_str_eq(json_string_value(json_array_get(out, 0)), "numpy>=1.20");
    json_decref(out);
    cr_assert_eq(parse("[\"numpy==1.26.4\"]", &out, err), RB_OK, "%s", err);
    cr_assert_str_eq(json_string_value(json_array_get(out, 0)), "numpy==1.26.4,>=1.20");
    json_decref(out);
    cr_assert_eq(parse("[\"numpy==1.100\"]", &out, err), RB_OK, "numeric, not text, comparison: %s", err);
    json_decref(out);

    sup_set(&cfg.deps_allow, "requests>=2.31, numpy");
    cr_assert_eq(parse("[\"flask\"]", &out, err), RB_EFORBIDDEN);
    cr_assert(strstr(err, "'flask'") && strstr(err, "allowlist"), "%s", err);
    cr_assert_eq(parse("[\"requests==2.30.9\"]", &out, err), RB_EFORBIDDEN);
    cr_assert(strstr(err, "2.31") && strstr(err, "deps-allow"), "%s", err);
    cr_assert_eq(parse("[\"requests==2.31\", \"numpy==1.24\"]", &out, err), RB_OK, "%s", err);
    json_decref(out);

    sup_set(&cfg.deps_allow, "requests>>2");
    cr_assert_eq(parse("[\"requests\"]", &out, err), RB_EINVAL);
    cr_assert(strstr(err, "deps-allow") != NULL, "%s", err);

    free(cfg.deps_allow);
    cfg.deps_allow = NULL;
    sup_set(&cfg.deps_network, "none");
    cr_assert_eq(parse("[\"requests\"]", &out, err), RB_EFORBIDDEN);
    cr_assert(strstr(err, "disabled") != NULL, "%s", err);
}

/* ---- sizes given by callers ------------------------------------------------------------- */

static int size_of(const char *text, int64_t *out)
{
    json_t *v = json_string(text);
    int r = core__parse_size(v, out);
    json_decref(v);
    return r;
}

Test(sizes, parsed_or_refused_never_undefined)
{
    int64_t n = 0;
    cr_assert_eq(size_of("512m", &n), 0);
    cr_assert_eq(n, 512 * 1024 * 1024);
    cr_assert_eq(size_of("1.5k", &n), 0);
    cr_assert_eq(n, 1536);
    cr_assert_eq(size_of("256MiB", &n), 0);
    cr_assert_eq(n, 256 * 1024 * 1024);
    /* past int64: refused, not cast (the cast is undefined behaviour; UBSan flags it) */
    cr_assert_eq(size_of("1e300g", &n), -1);
    cr_assert_eq(size_of("9e18", &n), -1);
    cr_assert_eq(size_of("1e999", &n), -1);
    cr_assert_eq(size_of("8e18", &n), 0);
    cr_assert_eq(size_of("0", &n), -1);
    cr_assert_eq(size_of("12x", &n), -1);
}

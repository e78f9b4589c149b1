/*
 * test_paths_policy.c: the pure rules of core/files/files.c and core/deps/requirements.c, without Docker: path
 * normalisation and confinement (files_normalize_path), content types, the validation of a
 * runner's files_written list, and dependency requirements against the operator's policy
 * (requirements_parse: syntax, blocklist, allowlist, minimum versions, sorting, duplicates).
 */
#include <criterion/criterion.h>
#include <string.h>

#include "core/internal.h"
#include "tests/core/support_core.h"
#include "core/deps/requirements.h"

static rb_err norm(const char *in, rb_err root, char *out, size_t outlen)
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
    cr_assert_eq(norm("data/x.csv", RB_ECONFLICT, out, sizeof(out)), RB_OK);
    cr_assert_str_eq(out, "data/x.csv");
    cr_assert_eq(norm("./data//./x.csv/", RB_ECONFLICT, out, sizeof(out)), RB_OK);
    cr_assert_str_eq(out, "data/x.csv");
    cr_assert_eq(norm("/workspace/out/p.png", RB_ECONFLICT, out, sizeof(out)), RB_OK);
    cr_assert_str_eq(out, "out/p.png");
    cr_assert_eq(norm("/workspace", RB_OK, out, sizeof(out)), RB_OK);
    cr_assert_str_eq(out, "");
    cr_assert_eq(norm("a..b/..c", RB_ECONFLICT, out, sizeof(out)), RB_OK); /* dots inside names are fine */
    cr_assert_str_eq(out, "a..b/..c");
}

/* Names in the name form (base/codec.h): escapes are read, written back canonically, and
 * judged by the bytes they stand for (issue 21). */
Test(paths, names_that_are_not_text)
{
    char out[RB_ERR_LEN];
    cr_assert_eq(norm("d\\xfe/bad\\xff.bin", RB_ECONFLICT, out, sizeof(out)), RB_OK, "%s", out);
    cr_assert_str_eq(out, "d\\xfe/bad\\xff.bin");
    cr_assert_eq(norm("/workspace/A\\x41\\xFF\\x0a\\x5c", RB_ECONFLICT, out, sizeof(out)), RB_OK, "%s", out);
    cr_assert_str_eq(out, "AA\\xff\\x0a\\x5c"); /* canonical: no needless escape, lower case */
    cr_assert_eq(norm("caf\xc3\xa9\\xc3\\xa9", RB_ECONFLICT, out, sizeof(out)), RB_OK, "%s", out);
    cr_assert_str_eq(out, "caf\xc3\xa9\xc3\xa9"); /* escaped UTF-8 text is text */
    cr_assert_eq(norm("\\x2e/x", RB_ECONFLICT, out, sizeof(out)), RB_OK, "%s", out);
    cr_assert_str_eq(out, "x");
    cr_assert_eq(norm("\\x2e\\x2e/etc/passwd", RB_ECONFLICT, out, sizeof(out)), RB_EFORBIDDEN, "%s", out);
    cr_assert_eq(norm("a/\\x2E.", RB_ECONFLICT, out, sizeof(out)), RB_EFORBIDDEN, "%s", out);
    static const char *const bad[] = {"a\\x2fb", "a\\x2f..\\x2fetc", "a\\x00", "a\\q", "a\\", "a\\x4", "a\\X41"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        cr_expect_eq(norm(bad[i], RB_ECONFLICT, out, sizeof(out)), RB_EINVAL, "%s: %s", bad[i], out);
        cr_expect(strstr(out, "\\x") != NULL, "%s: %s", bad[i], out);
    }
    /* a name's length is its bytes: 255 escapes are 255 bytes, 256 are too many */
    char path[1100] = "";
    for (int i = 0; i < 255; i++)
        strcat(path, "\\xff");
    cr_assert_eq(norm(path, RB_ECONFLICT, out, sizeof(out)), RB_OK, "%s", out);
    strcat(path, "\\xff");
    cr_assert_eq(norm(path, RB_ECONFLICT, out, sizeof(out)), RB_EINVAL);
    cr_assert(strstr(out, "255 bytes") != NULL, "%s", out);
}

Test(paths, confinement)
{
    char out[RB_ERR_LEN];
    cr_assert_eq(norm("../x", RB_ECONFLICT, out, sizeof(out)), RB_EFORBIDDEN);
    cr_assert(strstr(out, "..") != NULL, "%s", out);
    cr_assert_eq(norm("a/../../x", RB_ECONFLICT, out, sizeof(out)), RB_EFORBIDDEN);
    cr_assert_eq(norm("a/..", RB_ECONFLICT, out, sizeof(out)), RB_EFORBIDDEN);
    cr_assert_eq(norm("/etc/passwd", RB_ECONFLICT, out, sizeof(out)), RB_EFORBIDDEN);
    cr_assert(strstr(out, "/workspace") != NULL, "%s", out);
    cr_assert_eq(norm("/workspacex/y", RB_ECONFLICT, out, sizeof(out)), RB_EFORBIDDEN);
    cr_assert_eq(norm("/workspace/../etc", RB_ECONFLICT, out, sizeof(out)), RB_EFORBIDDEN);
    cr_assert_eq(norm("", RB_ECONFLICT, out, sizeof(out)), RB_EINVAL);
    /* /workspace itself: a folder (409) to write or read, not to be deleted (403) */
    cr_assert_eq(norm("/workspace/", RB_ECONFLICT, out, sizeof(out)), RB_ECONFLICT);
    cr_assert_eq(norm(".", RB_ECONFLICT, out, sizeof(out)), RB_ECONFLICT);
    cr_assert(strstr(out, "/workspace itself") != NULL, "%s", out);
    cr_assert_eq(norm("//./", RB_EFORBIDDEN, out, sizeof(out)), RB_EFORBIDDEN);
    cr_assert_eq(norm("a\nb", RB_ECONFLICT, out, sizeof(out)), RB_EINVAL);
    cr_assert_eq(norm("a\\b", RB_ECONFLICT, out, sizeof(out)), RB_EINVAL);
    char *p = NULL, err[RB_ERR_LEN];
    cr_assert_eq(files_normalize_path(NULL, RB_ECONFLICT, &p, err), RB_EINVAL);
    char longp[5000];
    memset(longp, 'a', sizeof(longp) - 1);
    longp[sizeof(longp) - 1] = '\0';
    cr_assert_eq(files_normalize_path(longp, RB_ECONFLICT, &p, err), RB_EINVAL);
    cr_assert_null(p);
}

/* openapi.yaml's pattern and maxLength for a path: names of at most 255 characters, 1000
 * characters in all. A name the sandbox's file system cannot hold (over 255 bytes) is the
 * caller's error (400), not the sandbox's (it used to answer 502 "unusable folder"). */
Test(paths, lengths)
{
    char out[RB_ERR_LEN], path[4200];
    memset(path, 'a', 255);
    path[255] = '\0';
    cr_assert_eq(norm(path, RB_ECONFLICT, out, sizeof(out)), RB_OK);
    path[255] = 'a';
    path[256] = '\0';
    cr_assert_eq(norm(path, RB_ECONFLICT, out, sizeof(out)), RB_EINVAL);
    cr_assert(strstr(out, "255 bytes") != NULL, "%s", out);
    /* 1000 characters of 4 bytes each, in names of 50 characters (200 bytes) */
    size_t n = 0;
    for (int i = 0; i < 1000; i++) {
        if (i > 0 && i % 50 == 0)
            path[n - 4] = '/', n -= 3; /* replace the last character by a separator */
        memcpy(path + n, "\xf0\x9f\x98\x80", 4);
        n += 4;
    }
    path[n] = '\0';
    cr_assert_eq(norm(path, RB_ECONFLICT, out, sizeof(out)), RB_OK, "%s", out);
    memcpy(path + n, "x", 2);
    cr_assert_eq(norm(path, RB_ECONFLICT, out, sizeof(out)), RB_EINVAL);
    cr_assert(strstr(out, "1000 characters") != NULL, "%s", out);
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
    cr_assert_eq(size_of("2Gb", &n), 0);
    cr_assert_eq(n, 2LL * 1024 * 1024 * 1024);
    cr_assert_eq(size_of("100b", &n), 0);
    cr_assert_eq(n, 100);
    /* a size, however small or large, parses (the caller checks the range: 403 outside it);
     * past int64 it reads as the largest, never as an undefined cast (UBSan flags those) */
    cr_assert_eq(size_of("0", &n), 0);
    cr_assert_eq(n, 0);
    cr_assert_eq(size_of("99999999999999999999999g", &n), 0);
    cr_assert_eq(n, INT64_MAX);
    /* only openapi.yaml's pattern is a size: no exponents, hex, signs, spaces or other units */
    const char *const bad[] = {"1e300g", "9e18", "0x10m", "-1", "+1", " 1", "1 ", "1.", ".5", "12x", "1mi", "1ib",
                               "1bb", "", "m"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        cr_assert_eq(size_of(bad[i], &n), -1, "%s", bad[i]);
    json_t *nul = json_stringn("512m\0x", 6);
    cr_assert_eq(core__parse_size(nul, &n), -1);
    json_decref(nul);
}

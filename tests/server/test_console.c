/*
 * test_console.c: the console's static files (server/console/console.c) over real HTTP against
 * the fake core: each file with its type and the console's headers (CSP, nosniff, no Referer, no
 * caching, no cookie), HEAD, the icon at /favicon.ico too, and 404 for every other name under
 * /console.
 */
#include <string.h>

#include <criterion/criterion.h>

#include "tests/server/harness.h"

#define CSP                                                                                                           \
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "           \
    "base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

static harness h;

static void setup(void)
{
    harness_start(&h, 4096);
}

static void teardown(void)
{
    harness_stop(&h);
}

TestSuite(console, .init = setup, .fini = teardown, .timeout = 60);

static void expect_file(const char *method, const char *path, const char *type, const char *needle)
{
    http_resp r;
    cr_assert_eq(http_do(h.port, method, path, NULL, NULL, 0, &r), 0);
    cr_assert_eq(r.status, 200, "%s %s: %d", method, path, r.status);
    cr_assert_str_eq(http_header(&r, "content-type"), type);
    cr_assert_str_eq(http_header(&r, "content-security-policy"), CSP);
    cr_assert_str_eq(http_header(&r, "x-content-type-options"), "nosniff");
    cr_assert_str_eq(http_header(&r, "referrer-policy"), "no-referrer");
    cr_assert_str_eq(http_header(&r, "cache-control"), "no-store");
    cr_assert_null(http_header(&r, "set-cookie"));
    if (needle != NULL)
        cr_assert_not_null(strstr(r.body, needle), "%s", path);
    else
        cr_assert_eq(r.body_len, 0);
    http_resp_dispose(&r);
}

Test(console, serves_its_files)
{
    expect_file("GET", "/console", "text/html; charset=utf-8", "<script src=\"/console/console.js\"");
    expect_file("GET", "/console/", "text/html; charset=utf-8", "<title>runbox console</title>");
    expect_file("GET", "/console/console.js", "text/javascript; charset=utf-8", "textContent");
    expect_file("GET", "/console/console.css", "text/css; charset=utf-8", "@media");
    expect_file("HEAD", "/console/console.js", "text/javascript; charset=utf-8", NULL);
    expect_file("GET", "/console/favicon.svg", "image/svg+xml", "<svg");
    expect_file("GET", "/favicon.ico", "image/svg+xml", "<svg"); /* where browsers look, without a key */
    expect_file("HEAD", "/favicon.ico", "image/svg+xml", NULL);
}

Test(console, any_other_name_is_not_found)
{
    const char *paths[] = {"/console/index.html", "/console/nope.js", "/console/static/console.js", "/console/a/b",
                           "/console/..%2fetc%2fpasswd", "/console/console.js/", "/consolex"};
    for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
        http_resp r;
        cr_assert_eq(http_do(h.port, "GET", paths[i], NULL, NULL, 0, &r), 0);
        cr_assert_eq(r.status, 404, "%s: %d", paths[i], r.status);
        cr_assert_null(strstr(r.body, "root:"));
        http_resp_dispose(&r);
    }
    http_resp r;
    cr_assert_eq(http_do(h.port, "POST", "/console", NULL, "", 0, &r), 0);
    cr_assert_eq(r.status, 405);
    http_resp_dispose(&r);
}

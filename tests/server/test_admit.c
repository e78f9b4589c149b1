/*
 * test_admit.c: server/admit.c (which Host and Origin values are served) as pure functions,
 * and the router applying them to every route over real HTTP against the fake core: a
 * rebound name or a foreign browser Origin gets 403 on REST and MCP alike (DNS rebinding).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "server/admit.h"
#include "tests/common/corpus.h"
#include "tests/server/harness.h"

static int host_ok(const char *listen, const char *allowed, const char *host)
{
    server_settings cfg;
    memset(&cfg, 0, sizeof(cfg));
    cfg.listen = (char *)listen;
    cfg.allowed_hosts = (char *)allowed;
    return admit_host(&cfg, host, host != NULL ? strlen(host) : 0);
}

static int origin_ok(const char *allowed, const char *origin)
{
    server_settings cfg;
    memset(&cfg, 0, sizeof(cfg));
    cfg.allowed_origins = (char *)allowed;
    return admit_origin(&cfg, origin, origin != NULL ? strlen(origin) : 0);
}

Test(admit, loopback_names_and_the_listen_host)
{
    cr_assert(host_ok("127.0.0.1:8080", NULL, "127.0.0.1:8080"));
    cr_assert(host_ok("127.0.0.1:8080", NULL, "localhost:8080"));
    cr_assert(host_ok("127.0.0.1:8080", NULL, "LOCALHOST"));
    cr_assert(host_ok("127.0.0.1:8080", NULL, "[::1]:8080"));
    cr_assert(host_ok("127.0.0.1:8080", NULL, NULL), "HTTP/1.0 without Host");
    cr_assert(host_ok("10.1.2.3:8080", NULL, "10.1.2.3:8080"), "the listen address itself");
    cr_assert_not(host_ok("0.0.0.0:8080", NULL, "0.0.0.0:8080"), "a wildcard listen address names no host");
    cr_assert_not(host_ok("127.0.0.1:8080", NULL, "evil.example:8080"));
    cr_assert_not(host_ok("127.0.0.1:8080", NULL, "localhost.evil.example"));
    cr_assert_not(host_ok("127.0.0.1:8080", NULL, "127.0.0.1.nip.io"));
}

Test(admit, allowed_hosts_list)
{
    cr_assert(host_ok("0.0.0.0:8080", "runbox.internal, Other.Example:9000", "runbox.internal:8080"));
    cr_assert(host_ok("0.0.0.0:8080", "runbox.internal, Other.Example:9000", "other.example"));
    cr_assert_not(host_ok("0.0.0.0:8080", "runbox.internal", "runbox.internal.evil"));
    cr_assert(host_ok("0.0.0.0:8080", "*", "anything.example"));
}

Test(admit, malformed_hosts_are_refused)
{
    static const char *const bad[] = {"",  ":8080", "localhost:", "localhost:80x", "localhost:80:80", "[::1",
                                      "user@localhost", "localhost/x", "local host", "localhost\t"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        cr_expect_not(host_ok("127.0.0.1:8080", "*x", bad[i]), "'%s'", bad[i]);
    char big[400];
    memset(big, 'a', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    cr_assert_not(host_ok("127.0.0.1:8080", "*x", big));
}

Test(admit, origins)
{
    cr_assert(origin_ok(NULL, NULL), "no Origin: not a browser");
    cr_assert(origin_ok(NULL, "http://localhost:5173"));
    cr_assert(origin_ok(NULL, "https://127.0.0.1"));
    cr_assert(origin_ok(NULL, "http://[::1]:8080/"));
    cr_assert_not(origin_ok(NULL, "http://localhost.evil.example"));
    cr_assert_not(origin_ok(NULL, "null"));
    cr_assert_not(origin_ok(NULL, "https://evil.example"));
    cr_assert(origin_ok("https://app.example.com, https://other.example/", "https://other.example"));
    cr_assert(origin_ok("*", "https://evil.example"));
}

/* Every seed of the fuzz corpus is judged without a crash (the fuzzer checks the same). */
static void check_seed(void *data, const char *seed, const char *path, const char *buf, size_t len)
{
    (void)seed;
    (void)path;
    int *n = data;
    server_settings cfg;
    memset(&cfg, 0, sizeof(cfg));
    cfg.listen = (char *)"127.0.0.1:8080";
    cfg.allowed_hosts = (char *)"runbox.internal";
    cfg.allowed_origins = (char *)"https://app.example.com";
    (void)admit_host(&cfg, buf, len);
    (void)admit_origin(&cfg, buf, len);
    (*n)++;
}

Test(admit, fuzz_corpus_replay)
{
    int n = 0;
    corpus_each("admit", check_seed, &n);
    cr_assert_gt(n, 0, "no seeds in tests/fuzz/corpus/admit");
}

/* ---- the router ---------------------------------------------------------------------------- */

static harness h;

static void setup(void)
{
    harness_start(&h, 0);
}

static void teardown(void)
{
    harness_stop(&h);
}

/* Sends a raw request with the given Host (NULL: none, HTTP/1.0) and extra header lines. */
static void raw(const char *method, const char *path, const char *host, const char *extra, http_resp *r)
{
    char head[1024];
    if (host != NULL)
        snprintf(head, sizeof(head), "Host: %s\r\n%s", host, extra ? extra : "");
    else
        snprintf(head, sizeof(head), "%s", extra ? extra : "");
    int fd = http_connect(h.port);
    cr_assert_geq(fd, 0);
    char req[2048];
    int n = snprintf(req, sizeof(req), "%s %s HTTP/1.%d\r\n%sConnection: close\r\nContent-Length: 0\r\n\r\n", method,
                     path, host != NULL ? 1 : 0, head);
    cr_assert_eq(write(fd, req, (size_t)n), n);
    char buf[16384];
    size_t got = 0;
    ssize_t k;
    while (got < sizeof(buf) - 1 && (k = read(fd, buf + got, sizeof(buf) - 1 - got)) > 0)
        got += (size_t)k;
    buf[got] = '\0';
    close(fd);
    memset(r, 0, sizeof(*r));
    cr_assert_eq(sscanf(buf, "HTTP/1.1 %d", &r->status), 1, "%s", buf);
    char *body = strstr(buf, "\r\n\r\n");
    r->body = strdup(body != NULL ? body + 4 : "");
    r->json = json_loads(r->body, 0, NULL);
}

static void expect_forbidden(http_resp *r, const char *mention)
{
    cr_assert_eq(r->status, 403, "%d %s", r->status, r->body);
    const char *msg = json_string_value(json_object_get(json_object_get(r->json, "error"), "message"));
    cr_assert(msg != NULL && strstr(msg, mention) != NULL, "%s", r->body);
    cr_assert_str_eq(json_string_value(json_object_get(json_object_get(r->json, "error"), "code")), "forbidden");
    json_decref(r->json);
    free(r->body);
}

static void expect_status(http_resp *r, int status)
{
    cr_assert_eq(r->status, status, "%d %s", r->status, r->body);
    json_decref(r->json);
    free(r->body);
}

Test(admit_http, rebound_host_is_refused_on_every_route, .init = setup, .fini = teardown, .timeout = 30)
{
    http_resp r;
    raw("GET", "/health", "attacker.example:8080", NULL, &r);
    expect_forbidden(&r, "--allowed-hosts");
    raw("POST", "/sessions", "attacker.example", NULL, &r);
    expect_forbidden(&r, "attacker.example");
    raw("GET", "/sessions", "localhost:8080", NULL, &r);
    expect_status(&r, 200);
    raw("GET", "/health", NULL, NULL, &r);
    expect_status(&r, 200);
    /* MCP answers in JSON-RPC's shape */
    raw("POST", "/mcp", "attacker.example", NULL, &r);
    cr_assert_eq(r.status, 403, "%s", r.body);
    cr_assert(json_is_object(json_object_get(r.json, "error")) && json_object_get(r.json, "jsonrpc") != NULL, "%s",
              r.body);
    expect_status(&r, 403);
}

Test(admit_http, foreign_origin_is_refused_on_rest_too, .init = setup, .fini = teardown, .timeout = 30)
{
    http_resp r;
    raw("GET", "/sessions", "127.0.0.1", "Origin: https://attacker.example\r\n", &r);
    expect_forbidden(&r, "--allowed-origins");
    raw("POST", "/sessions", "127.0.0.1", "Origin: https://attacker.example\r\n", &r);
    expect_forbidden(&r, "Origin");
    raw("GET", "/sessions", "127.0.0.1", "Origin: http://localhost:5173\r\n", &r);
    expect_status(&r, 200);
}

Test(admit_http, allowed_hosts_setting_is_read_per_request, .init = setup, .fini = teardown, .timeout = 30)
{
    http_resp r;
    raw("GET", "/health", "runbox.internal:8080", NULL, &r);
    expect_forbidden(&r, "runbox.internal");
    h.cfg.allowed_hosts = strdup("runbox.internal");
    raw("GET", "/health", "runbox.internal:8080", NULL, &r);
    expect_status(&r, 200);
}

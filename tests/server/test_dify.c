/*
 * test_dify.c: runboxd's Dify surface (server/dify/dify.c) over real HTTP on loopback against the
 * fake core: a run is a session made, its code run (after its preload), its answer in
 * dify-sandbox's envelope and the session deleted; refusals with dify-sandbox's statuses; a
 * client that goes away mid-run leaves no session behind; the dependencies routes.
 * tests/clients/test_dify.py sends what Dify sends to a real runboxd.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "tests/server/harness.h"

#define MAX_BODY 4096

static harness h;

static void setup(void)
{
    harness_start(&h, MAX_BODY);
}

static void teardown(void)
{
    harness_stop(&h);
}

TestSuite(dify, .init = setup, .fini = teardown, .timeout = 60);

static void run(const char *body, http_resp *r)
{
    cr_assert_eq(http_json(h.port, "POST", "/v1/sandbox/run", body, r), 0);
}

/* The number of live sessions (REST's list). */
static size_t live_sessions(void)
{
    http_resp r;
    cr_assert_eq(http_json(h.port, "GET", "/sessions", NULL, &r), 0);
    size_t n = json_array_size(json_object_get(r.json, "sessions"));
    http_resp_dispose(&r);
    return n;
}

static json_t *data_of(const http_resp *r)
{
    cr_assert_eq(r->status, 200, "%s", r->body);
    cr_assert_eq(json_integer_value(json_object_get(r->json, "code")), 0, "%s", r->body);
    cr_assert_str_eq(json_string_value(json_object_get(r->json, "message")), "success");
    return json_object_get(r->json, "data");
}

Test(dify, a_run_answers_and_deletes_its_session)
{
    http_resp r;
    run("{\"language\": \"python3\", \"code\": \"print(1)\", \"preload\": \"\", \"enable_network\": false}", &r);
    json_t *d = data_of(&r);
    cr_expect_str_eq(json_string_value(json_object_get(d, "stdout")), "hello\n"); /* the fake core's */
    cr_expect_str_eq(json_string_value(json_object_get(d, "stderr")), "warn\n");
    cr_expect_str_eq(json_string_value(json_object_get(d, "error")), "");
    cr_expect_eq(json_integer_value(json_object_get(d, "exit_code")), 0);
    http_resp_dispose(&r);
    cr_expect_eq(live_sessions(), 0);

    /* the preload runs first, in the same session: its output comes first */
    run("{\"language\": \"python3\", \"code\": \"print(1)\", \"preload\": \"x = 1\"}", &r);
    d = data_of(&r);
    cr_expect_str_eq(json_string_value(json_object_get(d, "stdout")), "hello\nhello\n");
    http_resp_dispose(&r);

    /* code that raises: still HTTP 200 and code 0; the failure is data.error */
    run("{\"language\": \"python3\", \"code\": \"RAISE\"}", &r);
    d = data_of(&r);
    cr_expect_eq(json_integer_value(json_object_get(d, "exit_code")), 255);
    const char *error = json_string_value(json_object_get(d, "error"));
    cr_expect(strncmp(error, "process exited with code 255\n", 29) == 0, "%s", error);
    cr_expect(strstr(error, "ValueError: bad") != NULL, "%s", error);
    http_resp_dispose(&r);

    /* a preload that raises stops the run before the code, as in dify-sandbox */
    run("{\"language\": \"python3\", \"code\": \"print(1)\", \"preload\": \"RAISE\"}", &r);
    d = data_of(&r);
    cr_expect_eq(json_integer_value(json_object_get(d, "exit_code")), 255);
    cr_expect_str_eq(json_string_value(json_object_get(d, "stdout")), "hello\n");
    http_resp_dispose(&r);
    cr_expect_eq(live_sessions(), 0);
}

Test(dify, refusals_keep_dify_sandboxs_statuses)
{
    http_resp r;
    run("{\"language\": \"ruby\", \"code\": \"1\"}", &r);
    cr_expect_eq(r.status, 400);
    cr_expect_str_eq(r.body, "{\"code\":-400,\"message\":\"unsupported language\",\"data\":null}\n");
    http_resp_dispose(&r);
    /* Content-Type: application/json (BindJSON): 400 */
    run("{\"language\": \"python3\"}", &r);
    cr_expect_eq(r.status, 400);
    cr_expect_str_eq(json_string_value(json_object_get(r.json, "message")),
                     "Key: 'Code' Error:Field validation for 'Code' failed on the 'required' tag");
    http_resp_dispose(&r);
    /* another type (ShouldBind): the same message at 200 */
    const char *body = "{\"language\": \"python3\"}";
    cr_assert_eq(http_do(h.port, "POST", "/v1/sandbox/run", "Content-Type: text/plain\r\n", body, strlen(body), &r), 0);
    cr_expect_eq(r.status, 200);
    cr_expect_eq(json_integer_value(json_object_get(r.json, "code")), -400);
    http_resp_dispose(&r);
    /* more than --max-body: 200 with the reason, which Dify shows as it is */
    char big[MAX_BODY + 200];
    int n = snprintf(big, sizeof(big), "{\"language\": \"python3\", \"code\": \"");
    memset(big + n, 'x', MAX_BODY);
    snprintf(big + n + MAX_BODY, sizeof(big) - (size_t)n - MAX_BODY, "\"}");
    run(big, &r);
    cr_expect_eq(r.status, 200, "%s", r.body);
    cr_expect_eq(json_integer_value(json_object_get(r.json, "code")), -413);
    cr_expect(strstr(json_string_value(json_object_get(r.json, "message")), "--max-body") != NULL, "%s", r.body);
    http_resp_dispose(&r);
    cr_expect_eq(live_sessions(), 0);
}

/* h2o 2.2 sees an HTTP/1.1 client go only when it writes to it: the run goes on to its end (its
 * timeout at most), then deletes its session all the same. */
Test(dify, a_client_that_goes_away_leaves_no_session)
{
    const char *body = "{\"language\": \"python3\", \"code\": \"print(1)\", \"preload\": \"x = 1\"}";
    char req[512];
    int n = snprintf(req, sizeof(req),
                     "POST /v1/sandbox/run HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                     "Content-Length: %zu\r\n\r\n%s",
                     strlen(body), body);
    int fd = http_connect(h.port);
    cr_assert_geq(fd, 0);
    cr_assert_eq(write(fd, req, (size_t)n), n);
    close(fd);
    for (int i = 0; i < 400 && (live_sessions() > 0 || fake_core_live_watches(h.core) > 0); i++)
        usleep(5000);
    cr_expect_eq(live_sessions(), 0);
    cr_expect_eq(fake_core_live_watches(h.core), 0);
}

Test(dify, dependencies)
{
    http_resp r;
    cr_assert_eq(http_json(h.port, "GET", "/v1/sandbox/dependencies?language=python3", NULL, &r), 0);
    json_t *d = data_of(&r);
    json_t *first = json_array_get(json_object_get(d, "dependencies"), 0);
    cr_expect_str_eq(json_string_value(json_object_get(first, "name")), "numpy");
    cr_expect_str_eq(json_string_value(json_object_get(first, "version")), "1.24.2");
    http_resp_dispose(&r);
    cr_assert_eq(http_json(h.port, "GET", "/v1/sandbox/dependencies/refresh?language=python3", NULL, &r), 0);
    data_of(&r);
    http_resp_dispose(&r);
    cr_assert_eq(http_json(h.port, "POST", "/v1/sandbox/dependencies/update?language=python3", NULL, &r), 0);
    cr_expect_str_eq(r.body, "{\"code\":0,\"message\":\"success\",\"data\":{}}\n");
    http_resp_dispose(&r);
    cr_assert_eq(http_json(h.port, "GET", "/v1/sandbox/dependencies?language=nodejs", NULL, &r), 0);
    cr_expect_eq(r.status, 400);
    cr_expect_str_eq(json_string_value(json_object_get(r.json, "message")), "unsupported language");
    http_resp_dispose(&r);
    cr_assert_eq(http_json(h.port, "GET", "/v1/sandbox/dependencies", NULL, &r), 0);
    cr_expect_eq(r.status, 200);
    cr_expect_eq(json_integer_value(json_object_get(r.json, "code")), -400);
    http_resp_dispose(&r);
}

Test(dify, runbox_health_stays_runboxs)
{
    http_resp r;
    cr_assert_eq(http_json(h.port, "GET", "/v1/sandbox/run", NULL, &r), 0);
    cr_expect_eq(r.status, 405, "%s", r.body);
    http_resp_dispose(&r);
    /* runbox's own health stays what its clients read */
    cr_assert_eq(http_json(h.port, "GET", "/health", NULL, &r), 0);
    cr_expect_eq(r.status, 200);
    cr_expect(json_is_string(json_object_get(r.json, "status")), "%s", r.body);
    http_resp_dispose(&r);
}

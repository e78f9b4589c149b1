/*
 * test_docker.c: the JSON calls of docker/docker.c against the real engine: version probe,
 * container lifecycle, error mapping, cancellation, concurrency and freeing with work in flight.
 */
#include <criterion/criterion.h>
#include <string.h>

#include "support_docker.h"

static void setup(void)
{
    sup_require_docker();
}

static void teardown(void)
{
    sup_cleanup();
}

TestSuite(docker, .init = setup, .fini = teardown, .timeout = 300);

Test(docker, ping_version_sets_api_version)
{
    uv_loop_t loop;
    docker *d;
    char err[RB_ERR_LEN];
    sup_result r = {0};
    sup_open(&loop, &d);
    cr_assert_str_eq(docker_api_version(d), "1.41");
    cr_assert_eq(docker_ping_version(d, sup_cb, &r, err), RB_OK, "%s", err);
    cr_assert_eq(r.calls, 0, "callback ran synchronously");
    sup_run_until(&loop, &r.calls);
    cr_assert_eq(r.err, RB_OK, "%s", r.msg);
    cr_assert_eq(r.status, 200);
    const char *v = json_string_value(json_object_get(r.body, "ApiVersion"));
    cr_assert_not_null(v);
    cr_assert_not_null(json_object_get(r.body, "Version"));
    /* 20.10 speaks 1.41; a newer engine is capped to 1.47. */
    const char *used = docker_api_version(d);
    cr_assert(strcmp(used, v) == 0 || strcmp(used, "1.47") == 0, "api %s for engine %s", used, v);
    sup_result_dispose(&r);
    sup_close(&loop, d);
}

Test(docker, container_lifecycle_and_not_found)
{
    uv_loop_t loop;
    docker *d;
    char err[RB_ERR_LEN], id[65], name[64];
    sup_open(&loop, &d);
    const char *argv[] = {"sleep", "600", NULL};
    sup_container_create(&loop, d, argv, NULL, id, name, sizeof(name));
    sup_container_start(&loop, d, id);

    sup_result r = {0};
    cr_assert_eq(docker_container_inspect(d, name, sup_cb, &r, err), RB_OK, "%s", err);
    sup_run_until(&loop, &r.calls);
    cr_assert_eq(r.err, RB_OK, "%s", r.msg);
    cr_assert_str_eq(json_string_value(json_object_get(r.body, "Id")), id);
    json_t *state = json_object_get(r.body, "State");
    cr_assert(json_is_true(json_object_get(state, "Running")));
    json_t *hc = json_object_get(r.body, "HostConfig");
    cr_assert_str_eq(json_string_value(json_object_get(hc, "NetworkMode")), "none");
    sup_result_dispose(&r);

    sup_container_remove(&loop, d, id);

    sup_result r2 = {0};
    cr_assert_eq(docker_container_inspect(d, id, sup_cb, &r2, err), RB_OK, "%s", err);
    sup_run_until(&loop, &r2.calls);
    cr_assert_eq(r2.err, RB_ENOTFOUND, "got %s: %s", rb_strerror(r2.err), r2.msg);
    cr_assert_eq(r2.status, 404);
    cr_assert(strstr(r2.msg, "No such container") != NULL, "message: %s", r2.msg);
    sup_result_dispose(&r2);
    sup_close(&loop, d);
}

Test(docker, unknown_container_is_not_found_with_message)
{
    uv_loop_t loop;
    docker *d;
    char err[RB_ERR_LEN];
    sup_result r = {0};
    sup_open(&loop, &d);
    cr_assert_eq(docker_container_inspect(d, "runbox-test-does-not-exist", sup_cb, &r, err), RB_OK, "%s", err);
    sup_run_until(&loop, &r.calls);
    cr_assert_eq(r.calls, 1);
    cr_assert_eq(r.err, RB_ENOTFOUND, "got %s: %s", rb_strerror(r.err), r.msg);
    cr_assert(strstr(r.msg, "No such container: runbox-test-does-not-exist") != NULL, "message: %s", r.msg);
    sup_result_dispose(&r);
    sup_close(&loop, d);
}

Test(docker, kill_of_stopped_container_is_conflict)
{
    uv_loop_t loop;
    docker *d;
    char err[RB_ERR_LEN], id[65], name[64];
    sup_open(&loop, &d);
    const char *argv[] = {"true", NULL};
    sup_container_create(&loop, d, argv, NULL, id, name, sizeof(name));
    sup_result r = {0};
    cr_assert_eq(docker_container_kill(d, id, "SIGKILL", sup_cb, &r, err), RB_OK, "%s", err);
    sup_run_until(&loop, &r.calls);
    cr_assert_eq(r.err, RB_ECONFLICT, "got %s: %s", rb_strerror(r.err), r.msg);
    cr_assert(strstr(r.msg, "is not running") != NULL, "message: %s", r.msg);
    sup_result_dispose(&r);
    sup_container_remove(&loop, d, id);
    sup_close(&loop, d);
}

Test(docker, image_inspect)
{
    uv_loop_t loop;
    docker *d;
    char err[RB_ERR_LEN];
    sup_result r = {0}, r2 = {0};
    sup_open(&loop, &d);
    cr_assert_eq(docker_image_inspect(d, SUP_IMAGE, sup_cb, &r, err), RB_OK, "%s", err);
    cr_assert_eq(docker_image_inspect(d, "runbox-test-no-such-image:latest", sup_cb, &r2, err), RB_OK, "%s", err);
    sup_run_until(&loop, &r.calls);
    sup_run_until(&loop, &r2.calls);
    cr_assert_eq(r.err, RB_OK, "%s", r.msg);
    cr_assert_not_null(json_object_get(r.body, "Id"));
    cr_assert_eq(r2.err, RB_ENOTFOUND, "got %s: %s", rb_strerror(r2.err), r2.msg);
    cr_assert(strstr(r2.msg, "No such image") != NULL, "message: %s", r2.msg);
    sup_result_dispose(&r);
    sup_result_dispose(&r2);
    sup_close(&loop, d);
}

Test(docker, unreachable_socket_is_unavailable)
{
    uv_loop_t loop;
    docker *d;
    char err[RB_ERR_LEN];
    sup_result r = {0};
    cr_assert_eq(uv_loop_init(&loop), 0);
    cr_assert_eq(docker_new(&loop, "/nonexistent/runbox-test.sock", &d, err), RB_OK, "%s", err);
    cr_assert_eq(docker_ping_version(d, sup_cb, &r, err), RB_OK, "%s", err);
    sup_run_until(&loop, &r.calls);
    cr_assert_eq(r.err, RB_EUNAVAILABLE, "got %s: %s", rb_strerror(r.err), r.msg);
    cr_assert(strstr(r.msg, "Docker is not reachable at /nonexistent/runbox-test.sock") != NULL, "message: %s", r.msg);
    cr_assert(strstr(r.msg, "is the daemon running") != NULL, "message: %s", r.msg);
    cr_assert_eq(r.status, 0);
    sup_close(&loop, d);
}

Test(docker, invalid_arguments_fail_synchronously)
{
    uv_loop_t loop;
    docker *d;
    char err[RB_ERR_LEN];
    sup_result r = {0};
    sup_open(&loop, &d);
    cr_assert_eq(docker_container_inspect(d, "../images/x", sup_cb, &r, err), RB_EINVAL);
    cr_assert_eq(docker_container_start(d, "", sup_cb, &r, err), RB_EINVAL);
    cr_assert_eq(docker_request(d, "GET", "/info x", NULL, 0, sup_cb, &r, NULL, err), RB_EINVAL);
    cr_assert_eq(docker_request(d, "GET", "info", NULL, 0, sup_cb, &r, NULL, err), RB_EINVAL);
    cr_assert_eq(docker_container_kill(d, "abc", "KILL\r\nX", sup_cb, &r, err), RB_EINVAL);
    sup_drain(&loop);
    cr_assert_eq(r.calls, 0, "a synchronously failed call ran its callback");
    sup_close(&loop, d);
}

Test(docker, list_with_label_filter)
{
    uv_loop_t loop;
    docker *d;
    char err[RB_ERR_LEN], id[65], name[64], tag[64], label[96];
    sup_open(&loop, &d);
    rb_random_id("", tag, sizeof(tag));
    snprintf(label, sizeof(label), "runbox.test.tag=%s", tag);
    const char *argv[] = {"true", NULL};
    sup_container_create(&loop, d, argv, label, id, name, sizeof(name));

    sup_result r = {0};
    cr_assert_eq(docker_container_list(d, label, sup_cb, &r, err), RB_OK, "%s", err);
    sup_run_until(&loop, &r.calls);
    cr_assert_eq(r.err, RB_OK, "%s", r.msg);
    cr_assert(json_is_array(r.body));
    cr_assert_eq(json_array_size(r.body), 1, "filter matched %zu containers", json_array_size(r.body));
    cr_assert_str_eq(json_string_value(json_object_get(json_array_get(r.body, 0), "Id")), id);
    sup_result_dispose(&r);

    /* A key-only filter matches too, and other values do not. */
    sup_result r2 = {0};
    cr_assert_eq(docker_container_list(d, "runbox.test.tag=runbox-none", sup_cb, &r2, err), RB_OK, "%s", err);
    sup_run_until(&loop, &r2.calls);
    cr_assert_eq(r2.err, RB_OK, "%s", r2.msg);
    cr_assert_eq(json_array_size(r2.body), 0);
    sup_result_dispose(&r2);

    sup_container_remove(&loop, d, id);
    sup_close(&loop, d);
}

#define NCONC 50

Test(docker, many_concurrent_requests_complete)
{
    uv_loop_t loop;
    docker *d;
    char err[RB_ERR_LEN];
    static sup_result rs[NCONC];
    memset(rs, 0, sizeof(rs));
    sup_open(&loop, &d);
    for (int i = 0; i < NCONC; i++) {
        if (i % 2 == 0)
            cr_assert_eq(docker_image_inspect(d, SUP_IMAGE, sup_cb, &rs[i], err), RB_OK, "%s", err);
        else
            cr_assert_eq(docker_container_inspect(d, "runbox-test-missing", sup_cb, &rs[i], err), RB_OK, "%s", err);
    }
    for (int i = 0; i < NCONC; i++)
        sup_run_until(&loop, &rs[i].calls);
    sup_drain(&loop);
    for (int i = 0; i < NCONC; i++) {
        cr_assert_eq(rs[i].calls, 1, "request %d ran its callback %d times", i, rs[i].calls);
        cr_assert_eq(rs[i].err, i % 2 == 0 ? RB_OK : RB_ENOTFOUND, "request %d: %s", i, rs[i].msg);
        sup_result_dispose(&rs[i]);
    }
    sup_close(&loop, d);
}

Test(docker, cancel_runs_callback_once_later)
{
    uv_loop_t loop;
    docker *d;
    docker_req *req = NULL;
    char err[RB_ERR_LEN];
    sup_result r = {0}, other = {0};
    sup_open(&loop, &d);
    cr_assert_eq(docker_request(d, "GET", "/info", NULL, 0, sup_cb, &r, &req, err), RB_OK, "%s", err);
    cr_assert_eq(docker_ping_version(d, sup_cb, &other, err), RB_OK, "%s", err);
    cr_assert_not_null(req);
    docker_req_cancel(req);
    cr_assert_eq(r.calls, 0, "cancel ran the callback synchronously");
    sup_run_until(&loop, &r.calls);
    sup_run_until(&loop, &other.calls);
    sup_drain(&loop);
    cr_assert_eq(r.calls, 1);
    cr_assert_eq(r.err, RB_ECANCELED, "got %s: %s", rb_strerror(r.err), r.msg);
    cr_assert_null(r.body);
    cr_assert_eq(other.err, RB_OK, "the other request: %s", other.msg);
    sup_result_dispose(&other);
    sup_close(&loop, d);
}

typedef struct cancel_other {
    docker_req *victim;
    int calls;
} cancel_other;

static void cancel_other_cb(void *data, rb_err err, const char *errmsg, int status, json_t *body)
{
    (void)err, (void)errmsg, (void)status, (void)body;
    cancel_other *c = data;
    c->calls++;
    docker_req_cancel(c->victim); /* may already be done: then it is still valid until its callback */
}

Test(docker, cancel_from_inside_another_callback)
{
    uv_loop_t loop;
    docker *d;
    char err[RB_ERR_LEN];
    cancel_other c = {0};
    sup_result victim = {0};
    sup_open(&loop, &d);
    cr_assert_eq(docker_request(d, "GET", "/_ping", NULL, 0, cancel_other_cb, &c, NULL, err), RB_OK, "%s", err);
    cr_assert_eq(docker_request(d, "GET", "/events?until=4102444800", NULL, 0, sup_cb, &victim, &c.victim, err), RB_OK,
                 "%s", err);
    sup_run_until(&loop, &victim.calls);
    sup_drain(&loop);
    cr_assert_eq(c.calls, 1);
    cr_assert_eq(victim.calls, 1);
    cr_assert_eq(victim.err, RB_ECANCELED, "got %s: %s", rb_strerror(victim.err), victim.msg);
    sup_close(&loop, d);
}

Test(docker, free_with_requests_in_flight)
{
    uv_loop_t loop;
    docker *d;
    char err[RB_ERR_LEN];
    sup_result rs[10];
    memset(rs, 0, sizeof(rs));
    sup_open(&loop, &d);
    /* /events streams until the far-off `until`: these cannot finish on their own. */
    for (int i = 0; i < 10; i++)
        cr_assert_eq(docker_request(d, "GET", "/events?until=4102444800", NULL, 0, sup_cb, &rs[i], NULL, err), RB_OK,
                     "%s", err);
    /* Let them get connected and under way before freeing. */
    for (int i = 0; i < 5; i++)
        uv_run(&loop, UV_RUN_NOWAIT);
    docker_free(d);
    for (int i = 0; i < 10; i++) {
        cr_assert_eq(rs[i].calls, 1, "request %d: %d callbacks by the time docker_free returned", i, rs[i].calls);
        cr_assert_eq(rs[i].err, RB_ECANCELED);
    }
    sup_drain(&loop);
    cr_assert_eq(uv_loop_close(&loop), 0, "handles left open after docker_free");
    for (int i = 0; i < 10; i++)
        cr_assert_eq(rs[i].calls, 1);
}

typedef struct free_inside {
    docker *d;
    int calls;
    sup_result *others;
} free_inside;

static void free_inside_cb(void *data, rb_err err, const char *errmsg, int status, json_t *body)
{
    (void)err, (void)errmsg, (void)status, (void)body;
    free_inside *f = data;
    f->calls++;
    docker_free(f->d);
    char e[RB_ERR_LEN];
    cr_assert_eq(docker_request(f->d, "GET", "/info", NULL, 0, sup_cb, f->others, NULL, e), RB_ECANCELED);
}

Test(docker, free_from_inside_a_callback)
{
    uv_loop_t loop;
    docker *d;
    char err[RB_ERR_LEN];
    sup_result slow = {0};
    sup_open(&loop, &d);
    free_inside f = {d, 0, &slow};
    cr_assert_eq(docker_request(d, "GET", "/events?until=4102444800", NULL, 0, sup_cb, &slow, NULL, err), RB_OK, "%s",
                 err);
    cr_assert_eq(docker_request(d, "GET", "/_ping", NULL, 0, free_inside_cb, &f, NULL, err), RB_OK, "%s", err);
    sup_drain(&loop);
    cr_assert_eq(f.calls, 1);
    cr_assert_eq(slow.calls, 1);
    cr_assert_eq(slow.err, RB_ECANCELED, "got %s: %s", rb_strerror(slow.err), slow.msg);
    cr_assert_eq(uv_loop_close(&loop), 0, "handles left open after docker_free");
}

Test(docker, free_null_is_fine)
{
    docker_free(NULL);
}

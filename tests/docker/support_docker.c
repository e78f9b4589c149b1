/*
 * support_docker.c: helpers for the docker/ tests (see support_docker.h).
 */
#include "support_docker.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <unistd.h>

#define SUP_HANG_GUARD_MS 120000
#define SUP_MAX_NAMES 16

static char created[SUP_MAX_NAMES][64];
static int ncreated;

void sup_require_docker(void)
{
    if (access(SUP_SOCKET, R_OK | W_OK) != 0)
        cr_skip_test("no Docker socket at %s", SUP_SOCKET);
    int rc = system(RB_SOURCE_DIR "/tests/docker/make-test-image");
    cr_assert_eq(rc, 0, "make-test-image failed (exit %d)", rc);
}

void sup_open(uv_loop_t *loop, docker **d)
{
    char err[RB_ERR_LEN];
    signal(SIGPIPE, SIG_IGN); /* as runboxd does: attach writes to a dropped stream get EPIPE */
    cr_assert_eq(uv_loop_init(loop), 0);
    cr_assert_eq(docker_new(loop, SUP_SOCKET, d, err), RB_OK, "docker_new: %s", err);
}

void sup_drain(uv_loop_t *loop)
{
    uv_run(loop, UV_RUN_DEFAULT);
}

void sup_close(uv_loop_t *loop, docker *d)
{
    docker_free(d);
    sup_drain(loop);
    cr_assert_eq(uv_loop_close(loop), 0, "handles left open on the loop after docker_free");
}

static void on_guard(uv_timer_t *t)
{
    int *fired = t->data;
    *fired = 1;
}

static void guard_close_cb(uv_handle_t *h)
{
    (void)h;
}

void sup_run_until(uv_loop_t *loop, const int *flag)
{
    uv_timer_t guard;
    int fired = 0;
    uv_timer_init(loop, &guard);
    guard.data = &fired;
    uv_timer_start(&guard, on_guard, SUP_HANG_GUARD_MS, 0);
    uv_unref((uv_handle_t *)&guard);
    while (!*flag && !fired) {
        if (uv_run(loop, UV_RUN_ONCE) == 0 && !*flag)
            break; /* nothing left that could set the flag */
    }
    uv_close((uv_handle_t *)&guard, guard_close_cb);
    uv_run(loop, UV_RUN_NOWAIT);
    cr_assert(!fired, "hang guard: the awaited event did not happen within %d ms", SUP_HANG_GUARD_MS);
    cr_assert(*flag, "the loop ran out of work before the awaited event");
}

void sup_cb(void *data, rb_err err, const char *errmsg, int status, json_t *body)
{
    sup_result *r = data;
    r->calls++;
    r->err = err;
    r->status = status;
    snprintf(r->msg, sizeof(r->msg), "%s", errmsg != NULL ? errmsg : "");
    json_decref(r->body);
    r->body = body != NULL ? json_incref(body) : NULL;
}

void sup_result_dispose(sup_result *r)
{
    json_decref(r->body);
    r->body = NULL;
}

void sup_container_create(uv_loop_t *loop, docker *d, const char *const *argv, const char *extra_label, char *id,
                          char *name, size_t name_len)
{
    char err[RB_ERR_LEN];
    sup_result res = {0};
    json_t *cmd = json_array();
    for (size_t i = 0; argv[i] != NULL; i++)
        json_array_append_new(cmd, json_string(argv[i]));
    json_t *labels = json_pack("{s:s}", "runbox.test", "1");
    if (extra_label != NULL) {
        const char *eq = strchr(extra_label, '=');
        cr_assert_not_null(eq);
        char key[128];
        snprintf(key, sizeof(key), "%.*s", (int)(eq - extra_label), extra_label);
        json_object_set_new(labels, key, json_string(eq + 1));
    }
    json_t *cfg = json_pack("{s:s, s:o, s:o, s:b, s:b, s:b, s:b, s:b, s:b, s:{s:s}}", "Image", SUP_IMAGE, "Cmd", cmd,
                            "Labels", labels, "Tty", 0, "OpenStdin", 1, "StdinOnce", 0, "AttachStdin", 1,
                            "AttachStdout", 1, "AttachStderr", 1, "HostConfig", "NetworkMode", "none");
    cr_assert_not_null(cfg);
    rb_random_id("runbox-test-", name, name_len);
    cr_assert_lt(ncreated, SUP_MAX_NAMES);
    snprintf(created[ncreated++], sizeof(created[0]), "%s", name);
    cr_assert_eq(docker_container_create(d, name, cfg, sup_cb, &res, err), RB_OK, "%s", err);
    json_decref(cfg);
    sup_run_until(loop, &res.calls);
    cr_assert_eq(res.err, RB_OK, "create: %s", res.msg);
    cr_assert_eq(res.status, 201);
    const char *cid = json_string_value(json_object_get(res.body, "Id"));
    cr_assert_not_null(cid);
    snprintf(id, 65, "%s", cid);
    sup_result_dispose(&res);
}

void sup_container_start(uv_loop_t *loop, docker *d, const char *id)
{
    char err[RB_ERR_LEN];
    sup_result res = {0};
    cr_assert_eq(docker_container_start(d, id, sup_cb, &res, err), RB_OK, "%s", err);
    sup_run_until(loop, &res.calls);
    cr_assert_eq(res.err, RB_OK, "start: %s", res.msg);
    sup_result_dispose(&res);
}

void sup_container_remove(uv_loop_t *loop, docker *d, const char *id)
{
    char err[RB_ERR_LEN];
    sup_result res = {0};
    cr_assert_eq(docker_container_remove(d, id, sup_cb, &res, err), RB_OK, "%s", err);
    sup_run_until(loop, &res.calls);
    cr_assert_eq(res.err, RB_OK, "remove: %s", res.msg);
    cr_assert_eq(res.status, 204);
    sup_result_dispose(&res);
}

void sup_cleanup(void)
{
    for (int i = 0; i < ncreated; i++) {
        char cmd[256];
        snprintf(cmd, sizeof(cmd), "docker rm -f %.63s >/dev/null 2>&1", created[i]);
        if (system(cmd) == -1)
            fprintf(stderr, "cannot run docker rm -f %s\n", created[i]);
    }
    ncreated = 0;
}

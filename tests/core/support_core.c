/*
 * support_core.c: helpers for the Docker-backed core/ tests (see support_core.h).
 */
#include "support_core.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "docker/docker.h"

uv_loop_t sup_loop;
core_settings sup_cfg;
static char dir[64];

void sup_set(char **field, const char *value)
{
    free(*field);
    *field = value != NULL ? strdup(value) : NULL;
}

void sup_fixture_open(const char *name, rb_log_level level)
{
    char dbpath[128];
    snprintf(dir, sizeof(dir), "/tmp/runbox-%s-XXXXXX", name);
    cr_assert_not_null(mkdtemp(dir));
    snprintf(dbpath, sizeof(dbpath), "%s/test.db", dir);
    uv_loop_init(&sup_loop);
    core_settings_init(&sup_cfg);
    free(sup_cfg.db_path);
    sup_cfg.db_path = strdup(dbpath);
    sup_cfg.idle_timeout = 0;
    sup_cfg.grace_ms = 1000;
    rb_log_set_level(level);
}

void sup_fixture_close(void)
{
    uv_run(&sup_loop, UV_RUN_DEFAULT); /* let handles close */
    uv_loop_close(&sup_loop);
    core_settings_dispose(&sup_cfg);
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    (void)!system(cmd);
}

void sup_run_until(int *flag, int ms)
{
    int64_t end = rb_mono_ms() + ms;
    while (!*flag && rb_mono_ms() < end)
        uv_run(&sup_loop, UV_RUN_ONCE);
}

void sup_run_for(int ms)
{
    int64_t end = rb_mono_ms() + ms;
    while (rb_mono_ms() < end) {
        uv_run(&sup_loop, UV_RUN_NOWAIT);
        usleep(5000);
    }
}

void sup_wait_docker(rb_core *c)
{
    int64_t end = rb_mono_ms() + 10000;
    for (;;) {
        json_t *h = core_health(c);
        int ok = json_is_true(json_object_get(json_object_get(h, "docker"), "reachable"));
        json_decref(h);
        if (ok || rb_mono_ms() > end)
            break;
        sup_run_for(10);
    }
}

rb_core *sup_core_open(void)
{
    char err[RB_ERR_LEN];
    rb_core *c;
    cr_assert_eq(core_new(&sup_loop, &sup_cfg, &c, err), RB_OK, "%s", err);
    sup_wait_docker(c);
    return c;
}

void sup_wait_pending(rb_core *c, int ms)
{
    int64_t end = rb_mono_ms() + ms;
    while (core_pending(c) > 0 && rb_mono_ms() < end)
        uv_run(&sup_loop, UV_RUN_ONCE);
}

void sup_core_close(rb_core *c, int removal_ms)
{
    core_stop(c); /* removes the warm pool's containers */
    sup_wait_pending(c, removal_ms);
    cr_expect_eq(core_pending(c), 0, "container removals did not finish");
    core_free(c);
    uv_run(&sup_loop, UV_RUN_DEFAULT);
}

void sup_op_cb(void *data, rb_err err, const char *msg, json_t *body)
{
    sup_result *r = data;
    r->done = 1;
    r->err = err;
    snprintf(r->msg, sizeof(r->msg), "%s", msg ? msg : "");
    r->body = body;
}

json_t *sup_session_create(rb_core *c, const char *opts_json)
{
    char err[RB_ERR_LEN];
    sup_result r = {0};
    json_t *opts = opts_json ? json_loads(opts_json, 0, NULL) : NULL;
    rb_err e = core_session_create(c, NULL, opts, sup_op_cb, &r, NULL, err);
    json_decref(opts);
    cr_assert_eq(e, RB_OK, "create: %s", err);
    sup_run_until(&r.done, 60000);
    cr_assert(r.done, "session create did not finish");
    cr_assert_eq(r.err, RB_OK, "create failed: %s", r.msg);
    cr_assert_str_eq(json_string_value(json_object_get(r.body, "status")), "ready");
    return r.body;
}

char *sup_session_create_id(rb_core *c, const char *opts_json)
{
    json_t *s = sup_session_create(c, opts_json);
    char *id = strdup(json_string_value(json_object_get(s, "session_id")));
    json_decref(s);
    return id;
}

void sup_session_delete(rb_core *c, const char *sid)
{
    char err[RB_ERR_LEN];
    json_t *out;
    cr_assert_eq(core_session_delete(c, NULL, sid, &out, err), RB_OK, "%s", err);
    json_decref(out);
}

void sup_watch_cb(void *data, const char *event, json_t *payload)
{
    sup_watch *w = data;
    if (strcmp(event, "done") == 0) {
        w->done = 1;
        w->final = json_incref(payload);
    } else if (strcmp(event, "output") == 0) {
        w->outputs++;
    } else {
        w->statuses++;
    }
}

/* Queues code (timeout seconds when > 0) in session sid and watches it into *w. */
static void start_watched(rb_core *c, const char *sid, const char *code, double timeout, sup_watch *w)
{
    char err[RB_ERR_LEN];
    json_t *req = json_pack("{s:s, s:s}", "session_id", sid, "code", code);
    if (timeout > 0)
        json_object_set_new(req, "timeout", json_real(timeout));
    json_t *st = NULL;
    rb_err e = core_execute(c, NULL, req, &st, err);
    json_decref(req);
    cr_assert_eq(e, RB_OK, "execute: %s", err);
    e = core_watch_start(c, NULL, json_string_value(json_object_get(st, "request_id")), 1, sup_watch_cb, w, NULL, err);
    cr_assert_eq(e, RB_OK, "watch: %s", err);
    json_decref(st);
}

json_t *sup_run_code(rb_core *c, const char *sid, const char *code, double timeout)
{
    sup_watch w = {0};
    start_watched(c, sid, code, timeout, &w);
    sup_run_until(&w.done, 60000);
    cr_assert(w.done, "execution did not finish");
    return w.final;
}

json_t *sup_run_code_killing_the_runner(rb_core *c, const char *sid)
{
    char err[RB_ERR_LEN];
    json_t *sess;
    cr_assert_eq(core_session_get(c, NULL, sid, &sess, err), RB_OK, "%s", err);
    char cmd[512];
    /* the supervisor is docker-init's only child */
    snprintf(cmd, sizeof(cmd),
             "docker exec -u 0 %.100s sh -c 'kill -KILL $(cat /proc/1/task/1/children)' >/dev/null 2>&1",
             sup_str(sess, "container_id"));
    json_decref(sess);
    sup_watch w = {0};
    start_watched(c, sid, "import time; time.sleep(30)", 0, &w);
    sup_run_for(1000);
    (void)!system(cmd);
    sup_run_until(&w.done, 60000);
    cr_assert(w.done, "execution did not finish");
    return w.final;
}

char *sup_run_stdout(rb_core *c, const char *sid, const char *code)
{
    json_t *r = sup_run_code(c, sid, code, 0);
    cr_assert_str_eq(sup_str(r, "status"), "completed", "%s", json_dumps(r, 0));
    char *out = strdup(sup_str(r, "stdout"));
    json_decref(r);
    return out;
}

const char *sup_str(json_t *o, const char *k)
{
    const char *s = json_string_value(json_object_get(o, k));
    return s ? s : "(null)";
}

struct sup_answer {
    int done;
    json_t *body;
};

static void sup_answer_cb(void *data, rb_err err, const char *msg, int status, json_t *body)
{
    struct sup_answer *a = data;
    (void)err, (void)msg, (void)status;
    a->done = 1;
    a->body = json_incref(body);
}

static void close_leftover(uv_handle_t *h, void *arg)
{
    (void)arg;
    if (!uv_is_closing(h))
        uv_close(h, NULL);
}

void sup_sweep_instance(const char *instance)
{
    char err[RB_ERR_LEN], label[80];
    docker *dk;
    if (instance != NULL && instance[0] != '\0' && docker_new(&sup_loop, sup_cfg.docker_socket, &dk, err) == RB_OK) {
        snprintf(label, sizeof(label), "runbox.instance=%s", instance);
        struct sup_answer list = {0};
        if (docker_container_list(dk, label, sup_answer_cb, &list, err) == RB_OK)
            sup_run_until(&list.done, 20000);
        size_t i;
        json_t *ct;
        json_array_foreach(list.body, i, ct)
        {
            struct sup_answer r = {0};
            if (docker_container_remove(dk, json_string_value(json_object_get(ct, "Id")), sup_answer_cb, &r, err) ==
                RB_OK)
                sup_run_until(&r.done, 30000);
            json_decref(r.body);
        }
        json_decref(list.body);
        docker_free(dk);
    }
    uv_walk(&sup_loop, close_leftover, NULL); /* a Docker client of the test's own left by a failed assertion */
}

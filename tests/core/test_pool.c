/*
 * Tests of the warm pool (core/pool.c) against the real Docker engine, the real sandbox image
 * and a real SQLite file: claiming a warm sandbox, refilling, the cold path for non-default
 * options, never handing out a dead or unresponsive sandbox, removal on core_stop, removal of
 * leftovers after a crash, and sessions on claimed containers surviving a restart.
 * White-box where it must be: core/internal.h gives the instance id that labels containers, the
 * Docker client (docker/) looks at and spoils containers behind core's back, and a backend
 * wrapped around the Docker one holds answers back, as a slow or hung engine would.
 */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/backend/docker.h"
#include "core/core.h"
#include "core/internal.h"
#include "docker/docker.h"
#include "support_core.h"

/* The test's core while it is open, and the instance that labels its containers: the fixture's
 * end frees a core a failed assertion left open and removes whatever containers are left, so that
 * a failing test leaks nothing (and its loop, still holding the core's timers, cannot hang). */
static rb_core *live_core;
static char live_instance[RB_ID_LEN];

static rb_core *open_core(rb_core *c)
{
    live_core = c;
    snprintf(live_instance, sizeof(live_instance), "%s", c->instance);
    return c;
}

/* core_free without core_stop: a crash as far as the containers are concerned. */
static void crash_core(rb_core *c)
{
    live_core = NULL;
    core_free(c);
    uv_run(&sup_loop, UV_RUN_DEFAULT);
}

static void setup(void)
{
    sup_fixture_open("pool", RB_LOG_ERROR);
    sup_cfg.pool_size = 1;
}

static void teardown(void)
{
    if (live_core != NULL) { /* an assertion failed with it open */
        core_stop(live_core);
        sup_wait_pending(live_core, 20000);
        core_free(live_core);
        live_core = NULL;
    }
    sup_sweep_instance(live_instance);
    sup_fixture_close();
}

TestSuite(pool, .init = setup, .fini = teardown, .timeout = 150);

/* Stops the pool and frees the core; container removals get 20 s. */
static void close_core(rb_core *c)
{
    live_core = NULL;
    sup_core_close(c, 20000);
}

static int health_int(rb_core *c, const char *group, const char *key)
{
    json_t *h = core_health(c);
    int v = (int)json_integer_value(json_object_get(json_object_get(h, group), key));
    json_decref(h);
    return v;
}

/* Waits until the pool reports `ready` warm sandboxes. */
static void wait_pool_ready(rb_core *c, int ready)
{
    int64_t end = rb_mono_ms() + 60000;
    while (health_int(c, "pool", "ready") < ready && rb_mono_ms() < end)
        sup_run_for(10);
    cr_assert_eq(health_int(c, "pool", "ready"), ready, "the pool did not fill");
}

/* ---- a Docker client of the test's own, to look at and tamper with containers -------- */

struct dk_result {
    int done;
    rb_err err;
    char msg[RB_ERR_LEN];
    json_t *body;
};

static void dk_cb(void *data, rb_err err, const char *msg, int status, json_t *body)
{
    struct dk_result *r = data;
    (void)status;
    r->done = 1;
    r->err = err;
    snprintf(r->msg, sizeof(r->msg), "%s", msg ? msg : "");
    r->body = json_incref(body);
}

/* Ids of the instance's containers, those labelled runbox.session=pool when pool_only. */
static json_t *list_containers(rb_core *c, int pool_only)
{
    char err[RB_ERR_LEN], label[80];
    docker *dk;
    cr_assert_eq(docker_new(&sup_loop, sup_cfg.docker_socket, &dk, err), RB_OK, "%s", err);
    snprintf(label, sizeof(label), "runbox.instance=%s", c->instance);
    struct dk_result r = {0};
    cr_assert_eq(docker_container_list(dk, label, dk_cb, &r, err), RB_OK, "%s", err);
    sup_run_until(&r.done, 20000);
    cr_assert_eq(r.err, RB_OK, "list failed");
    json_t *ids = json_array();
    size_t i;
    json_t *ct;
    json_array_foreach(r.body, i, ct)
    {
        const char *owner = json_string_value(json_object_get(json_object_get(ct, "Labels"), "runbox.session"));
        if (!pool_only || (owner != NULL && strcmp(owner, "pool") == 0))
            json_array_append(ids, json_object_get(ct, "Id"));
    }
    json_decref(r.body);
    docker_free(dk);
    return ids;
}

static int contains(json_t *ids, const char *id)
{
    size_t i;
    json_t *v;
    json_array_foreach(ids, i, v) if (strcmp(json_string_value(v), id) == 0) return 1;
    return 0;
}

/* The engine's answer to method /containers/id/action (RB_OK, or its error with msg). A pause
 * goes through docker_container_pause, tried again while the freezer gives up (RB_EBUSY: a
 * loaded host's cgroup v1 freezer does, now and then, even on an idle sandbox). */
static rb_err container_call(const char *method, const char *id, const char *action, char *msg)
{
    char err[RB_ERR_LEN], path[256];
    docker *dk;
    cr_assert_eq(docker_new(&sup_loop, sup_cfg.docker_socket, &dk, err), RB_OK, "%s", err);
    snprintf(path, sizeof(path), "/containers/%s/%s", id, action);
    int pause = strcmp(action, "pause") == 0;
    struct dk_result r = {0};
    for (int tries = 0; tries < 8; tries++) {
        json_decref(r.body);
        memset(&r, 0, sizeof(r));
        if (pause)
            cr_assert_eq(docker_container_pause(dk, id, 1, dk_cb, &r, err), RB_OK, "%s", err);
        else
            cr_assert_eq(docker_request(dk, method, path, NULL, 0, dk_cb, &r, NULL, err), RB_OK, "%s", err);
        sup_run_until(&r.done, 20000);
        cr_assert(r.done, "%s %s: no answer in 20 s", method, path);
        if (r.err != RB_EBUSY)
            break;
        sup_run_for(300);
    }
    snprintf(msg, RB_ERR_LEN, "%s %.200s: %.250s", method, path, r.msg);
    json_decref(r.body);
    docker_free(dk);
    return r.err;
}

/* Waits for the one warm sandbox, spoils it with a POST of action and creates a session at
 * once: the session must come up on another, live container, where code prints want. Returns
 * the session's API object (json_decref it) and the spoiled container's id in *spoiled (heap). */
static json_t *spoil_warm_then_claim(rb_core *c, const char *action, char **spoiled, const char *code,
                                     const char *want)
{
    char msg[RB_ERR_LEN] = "";
    rb_err e = RB_EINTERNAL;
    /* the warm container listed may be on its way out (the pool replaces one that failed under
     * load: "not running", "no such container"); then the next one is spoiled */
    for (int tries = 0; tries < 5 && e != RB_OK; tries++) {
        wait_pool_ready(c, 1);
        json_t *warm = list_containers(c, 1);
        *spoiled = strdup(json_string_value(json_array_get(warm, 0)));
        json_decref(warm);
        if ((e = container_call("POST", *spoiled, action, msg)) != RB_OK) {
            cr_assert(e == RB_ECONFLICT || e == RB_ENOTFOUND, "%s", msg);
            free(*spoiled);
            *spoiled = NULL;
        }
    }
    cr_assert_eq(e, RB_OK, "%s", msg);
    json_t *s = sup_session_create(c, NULL);
    cr_assert_str_neq(sup_str(s, "container_id"), *spoiled);
    char *out = sup_run_stdout(c, sup_str(s, "session_id"), code);
    cr_assert_str_eq(out, want);
    free(out);
    return s;
}

/* ---- the Docker backend with answers held back (a slow or hung engine) ------------------ */

#define HELD_MAX 16

/* A held answer: a start's (never passed on), or a create's (passed on by release_creates). */
typedef struct held {
    backend_cb started;
    backend_create_cb created;
    void *data;
    int answered; /* the engine has answered the create */
    rb_err err;
    char msg[RB_ERR_LEN];
    char id[80];
} held;

typedef struct slow_backend {
    backend *inner;
    int hold_creates;
    held starts[HELD_MAX], creates[HELD_MAX];
    int n_starts, n_creates;
} slow_backend;

static void slow_free(void *self)
{
    slow_backend *sb = self;
    backend_free(sb->inner);
    /* backend.h: what is still in flight is called back with RB_ECANCELED */
    for (int i = 0; i < sb->n_starts; i++)
        sb->starts[i].started(sb->starts[i].data, RB_ECANCELED, "the backend was freed");
    for (int i = 0; i < sb->n_creates; i++)
        if (sb->creates[i].created != NULL)
            sb->creates[i].created(sb->creates[i].data, RB_ECANCELED, "the backend was freed", NULL);
    free(sb);
}

static rb_err slow_start(void *self, const char *id, backend_cb cb, void *data, char *err)
{
    slow_backend *sb = self;
    (void)id, (void)err;
    cr_assert_lt(sb->n_starts, HELD_MAX);
    sb->starts[sb->n_starts++] = (held){.started = cb, .data = data};
    return RB_OK;
}

/* The engine's answer to a held create: kept until release_creates passes it on. */
static void slow_created(void *data, rb_err err, const char *errmsg, const char *id)
{
    held *h = data;
    h->answered = 1;
    h->err = err;
    snprintf(h->msg, sizeof(h->msg), "%s", errmsg ? errmsg : "");
    snprintf(h->id, sizeof(h->id), "%s", id ? id : "");
}

/* Passes the held create answers on, in order. */
static void release_creates(slow_backend *sb)
{
    for (int i = 0; i < sb->n_creates; i++) {
        held *h = &sb->creates[i];
        backend_create_cb cb = h->created;
        h->created = NULL;
        cb(h->data, h->err, h->err == RB_OK ? NULL : h->msg, h->err == RB_OK ? h->id : NULL);
    }
}

static int creates_answered(const slow_backend *sb)
{
    int n = 0;
    for (int i = 0; i < sb->n_creates; i++)
        n += sb->creates[i].answered;
    return n;
}

static rb_err slow_create(void *self, const char *name, const backend_spec *spec, backend_create_cb cb, void *data,
                          char *err)
{
    slow_backend *sb = self;
    if (!sb->hold_creates)
        return backend_create(sb->inner, name, spec, cb, data, err);
    cr_assert_lt(sb->n_creates, HELD_MAX);
    held *h = &sb->creates[sb->n_creates];
    *h = (held){.created = cb, .data = data};
    rb_err e = backend_create(sb->inner, name, spec, slow_created, h, err);
    if (e == RB_OK)
        sb->n_creates++;
    return e;
}

static rb_err slow_ping(void *self, backend_ping_cb cb, void *data, char *err)
{
    return backend_ping(((slow_backend *)self)->inner, cb, data, err);
}

static rb_err slow_remove(void *self, const char *id, backend_cb cb, void *data, char *err)
{
    return backend_remove(((slow_backend *)self)->inner, id, cb, data, err);
}

static rb_err slow_list(void *self, const char *label, backend_list_cb cb, void *data, char *err)
{
    return backend_list(((slow_backend *)self)->inner, label, cb, data, err);
}

static rb_err slow_attach_open(void *self, const char *id, const backend_attach_cbs *cbs, void *data,
                               backend_attach **out, char *err)
{
    return backend_attach_open(((slow_backend *)self)->inner, id, cbs, data, out, err);
}

static rb_err slow_attach_write(void *self, backend_attach *a, const char *buf, size_t len, char *err)
{
    return backend_attach_write(((slow_backend *)self)->inner, a, buf, len, err);
}

static void slow_attach_close(void *self, backend_attach *a)
{
    backend_attach_close(((slow_backend *)self)->inner, a);
}

static const backend_ops slow_ops = {
    .name = "slow-docker",
    .free = slow_free,
    .ping = slow_ping,
    .create = slow_create,
    .start = slow_start,
    .remove = slow_remove,
    .list = slow_list,
    .attach_open = slow_attach_open,
    .attach_write = slow_attach_write,
    .attach_close = slow_attach_close,
};

/* A core on the Docker backend wrapped by *out (owned by the core: gone after core_free). */
static rb_core *slow_core_open(slow_backend **out)
{
    char err[RB_ERR_LEN];
    slow_backend *sb = xcalloc(1, sizeof(*sb));
    cr_assert_eq(backend_docker_new(&sup_loop, sup_cfg.docker_socket, 0, 0, &sb->inner, err), RB_OK, "%s", err);
    rb_core *c;
    cr_assert_eq(core_new_with_backend(&sup_loop, &sup_cfg, backend_new(&slow_ops, sb), &c, err), RB_OK, "%s", err);
    *out = sb;
    return c;
}

/* Removes whatever containers of c's instance are left (so that a failing test leaks nothing)
 * and returns how many there were. */
static size_t remove_leftovers(rb_core *c)
{
    json_t *left = list_containers(c, 0);
    size_t i, n = json_array_size(left);
    json_t *v;
    char err[RB_ERR_LEN];
    docker *dk;
    cr_assert_eq(docker_new(&sup_loop, sup_cfg.docker_socket, &dk, err), RB_OK, "%s", err);
    json_array_foreach(left, i, v)
    {
        struct dk_result r = {0};
        cr_assert_eq(docker_container_remove(dk, json_string_value(v), dk_cb, &r, err), RB_OK, "%s", err);
        sup_run_until(&r.done, 30000);
        json_decref(r.body);
    }
    docker_free(dk);
    json_decref(left);
    return n;
}

/* ---- tests ----------------------------------------------------------------------------- */

Test(pool, warm_sandbox_is_claimed_refilled_and_removed_on_stop)
{
    rb_core *c = open_core(sup_core_open());
    wait_pool_ready(c, 1);
    json_t *warm = list_containers(c, 1);
    cr_assert_eq(json_array_size(warm), 1);
    const char *warm_id = json_string_value(json_array_get(warm, 0));

    json_t *s1 =
        sup_session_create(c, "{\"language\": \"python\", \"execution_options\": {\"memory_limit\": \"512m\"}}");
    cr_assert_str_eq(sup_str(s1, "container_id"), warm_id, "a default session must get the warm container");
    cr_assert_eq(health_int(c, "pool", "hits"), 1);
    char *out = sup_run_stdout(c, sup_str(s1, "session_id"), "x = 41\nprint(x + 1)");
    cr_assert_str_eq(out, "42\n");
    free(out);

    /* refilled in the background with a new container */
    wait_pool_ready(c, 1);
    json_t *warm2 = list_containers(c, 1);
    cr_assert_eq(json_array_size(warm2), 2, "claimed + new warm container");

    /* non-default options take the cold path and leave the warm sandbox alone */
    json_t *s2 = sup_session_create(c, "{\"execution_options\": {\"environment_variables\": {\"GREETING\": \"hi\"}}}");
    cr_assert(!contains(warm2, sup_str(s2, "container_id")), "a session with env vars must not get a warm sandbox");
    cr_assert_eq(health_int(c, "pool", "hits"), 1);
    cr_assert_eq(health_int(c, "pool", "ready"), 1);
    out = sup_run_stdout(c, sup_str(s2, "session_id"), "import os; print(os.environ['GREETING'])");
    cr_assert_str_eq(out, "hi\n");
    free(out);
    json_t *s3 = sup_session_create(c, "{\"language\": \"bash\"}");
    cr_assert(!contains(warm2, sup_str(s3, "container_id")), "bash is not pooled by default");

    sup_session_delete(c, sup_str(s1, "session_id"));
    sup_session_delete(c, sup_str(s2, "session_id"));
    sup_session_delete(c, sup_str(s3, "session_id"));
    json_decref(s1);
    json_decref(s2);
    json_decref(s3);
    json_decref(warm);
    json_decref(warm2);

    core_stop(c);
    cr_assert_eq(health_int(c, "pool", "ready"), 0);
    sup_wait_pending(c, 20000);
    json_t *left = list_containers(c, 0);
    cr_assert_eq(json_array_size(left), 0, "core_stop must remove the warm containers: %s", json_dumps(left, 0));
    json_decref(left);
    close_core(c);
}

Test(pool, a_killed_warm_sandbox_is_not_handed_out)
{
    rb_core *c = open_core(sup_core_open());
    char *dead;
    /* Claim at once: whether the stream's end was seen yet or the claim ping fails, the
     * session must come up on a live container. */
    json_t *s = spoil_warm_then_claim(c, "kill?signal=KILL", &dead, "print('alive')", "alive\n");
    wait_pool_ready(c, 1);
    sup_session_delete(c, sup_str(s, "session_id"));
    json_decref(s);
    close_core(c);
    free(dead);
}

Test(pool, an_unresponsive_warm_sandbox_falls_back_to_a_cold_start)
{
    char err[RB_ERR_LEN];
    rb_core *c = open_core(sup_core_open());
    char *frozen;
    /* Paused: the attach stream stays open but the runner cannot answer the claim ping. */
    json_t *s = spoil_warm_then_claim(c, "pause", &frozen, "print(2 + 2)", "4\n");
    sup_session_delete(c, sup_str(s, "session_id"));
    json_decref(s);
    close_core(c);
    /* the frozen container was removed, not leaked */
    docker *dk;
    cr_assert_eq(docker_new(&sup_loop, sup_cfg.docker_socket, &dk, err), RB_OK, "%s", err);
    struct dk_result r = {0};
    cr_assert_eq(docker_container_inspect(dk, frozen, dk_cb, &r, err), RB_OK, "%s", err);
    sup_run_until(&r.done, 20000);
    cr_assert_eq(r.err, RB_ENOTFOUND, "the unresponsive warm container must be removed");
    json_decref(r.body);
    docker_free(dk);
    uv_run(&sup_loop, UV_RUN_DEFAULT);
    free(frozen);
}

Test(pool, leftovers_of_a_crash_are_removed_and_claimed_sessions_survive_a_restart)
{
    sup_cfg.pool_size = 2;
    rb_core *c = open_core(sup_core_open());
    wait_pool_ready(c, 2);
    json_t *s = sup_session_create(c, NULL);
    char *sid = strdup(sup_str(s, "session_id"));
    char *cid = strdup(sup_str(s, "container_id"));
    json_decref(s);
    cr_assert_eq(health_int(c, "pool", "hits"), 1);
    char *out = sup_run_stdout(c, sid, "kept = 'yes'");
    free(out);
    wait_pool_ready(c, 2);
    json_t *before = list_containers(c, 1); /* the claimed one and two warm ones */
    cr_assert_eq(json_array_size(before), 3);

    /* a crash: no core_stop, the warm containers stay behind */
    crash_core(c);

    c = open_core(sup_core_open());
    /* the session on the claimed container (labelled "pool") is found by its container id */
    out = sup_run_stdout(c, sid, "print(kept)");
    cr_assert_str_eq(out, "yes\n");
    free(out);
    wait_pool_ready(c, 2);
    int64_t end = rb_mono_ms() + 20000;
    json_t *after = NULL;
    for (;;) {
        json_decref(after);
        after = list_containers(c, 1);
        size_t i;
        json_t *v;
        int stale = 0;
        json_array_foreach(before, i, v) stale += strcmp(json_string_value(v), cid) != 0 &&
                                                  contains(after, json_string_value(v));
        if (stale == 0 || rb_mono_ms() > end)
            break;
        sup_run_for(50);
    }
    cr_assert(contains(after, cid), "the claimed container must be kept");
    cr_assert_eq(json_array_size(after), 3, "leftover warm containers must be removed at start: %s",
                 json_dumps(after, 0));
    json_decref(before);
    json_decref(after);
    sup_session_delete(c, sid);
    close_core(c);
    free(sid);
    free(cid);
}

Test(pool, size_zero_disables_the_pool)
{
    sup_cfg.pool_size = 0;
    rb_core *c = open_core(sup_core_open());
    json_t *s = sup_session_create(c, NULL);
    cr_assert_eq(health_int(c, "pool", "size"), 0);
    cr_assert_eq(health_int(c, "pool", "ready") + health_int(c, "pool", "starting"), 0);
    json_t *ids = list_containers(c, 1);
    cr_assert_eq(json_array_size(ids), 0);
    json_decref(ids);
    sup_session_delete(c, sup_str(s, "session_id"));
    json_decref(s);
    close_core(c);
}

Test(pool, core_stop_removes_warm_containers_whose_start_hangs)
{
    sup_cfg.pool_size = 2;
    slow_backend *sb;
    rb_core *c = open_core(slow_core_open(&sb));
    int64_t end = rb_mono_ms() + 60000;
    while (sb->n_starts < 2 && rb_mono_ms() < end)
        sup_run_for(10);
    cr_assert_eq(sb->n_starts, 2, "the pool should have created two containers and asked to start them");
    json_t *ids = list_containers(c, 1);
    cr_assert_eq(json_array_size(ids), 2);
    json_decref(ids);

    core_stop(c); /* the starts never answer: the containers must go anyway */
    sup_wait_pending(c, 20000);
    cr_expect_eq(core_pending(c), 0, "core_stop must not wait for starts that hang");
    size_t left = remove_leftovers(c);
    cr_expect_eq(left, 0, "core_stop left %zu warm containers behind", left);
    crash_core(c);
}

Test(pool, core_stop_waits_for_creates_in_flight_and_removes_their_containers)
{
    sup_cfg.pool_size = 2;
    slow_backend *sb;
    rb_core *c = open_core(slow_core_open(&sb));
    sb->hold_creates = 1;
    int64_t end = rb_mono_ms() + 60000;
    while (creates_answered(sb) < 2 && rb_mono_ms() < end)
        sup_run_for(10);
    cr_assert_eq(creates_answered(sb), 2, "the engine should have created the pool's two containers");

    core_stop(c); /* while the answers to both creates are still on their way */
    cr_expect_eq(core_pending(c), 2, "core_pending must count the creates in flight");
    release_creates(sb);
    sup_wait_pending(c, 20000);
    cr_expect_eq(core_pending(c), 0);
    cr_expect_eq(sb->n_starts, 0, "a container created after core_stop is removed, not started");
    size_t left = remove_leftovers(c);
    cr_expect_eq(left, 0, "core_stop left %zu containers behind", left);
    crash_core(c);
}

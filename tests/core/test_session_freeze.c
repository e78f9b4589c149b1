/*
 * Tests of the freezes of core/session_freeze.c against the real Docker engine, the real sandbox
 * image and a real SQLite file, with the Docker backend's pause wrapped so that the freezer
 * refuses as cgroup v1's does under busy processes (RB_EBUSY "unable to freeze", the container
 * untouched) a chosen number of times: a few refusals are tried past; refusals that do not end
 * give the caller RB_EUNAVAILABLE naming the freezer, and the session is as it was (running, not
 * frozen, its fork removed). Every container of the test's instance is removed at its end,
 * whatever happened.
 */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "core/backend/docker.h"
#include "core/core.h"
#include "core/internal.h"
#include "docker/docker.h"
#include "support_core.h"

/* ---- the Docker backend whose freezer refuses ------------------------------------------- */

static backend *inner;          /* the real Docker backend (its ops run with its own self) */
static backend_ops stubborn_ops; /* its ops, with pause wrapped */
static int refusals_left;       /* freezes still to refuse (-1: all of them) */
static int refused;             /* freezes refused so far */

typedef struct refusal {
    uv_timer_t timer;
    backend_cb cb;
    void *data;
} refusal;

static void refusal_closed(uv_handle_t *h)
{
    free(h);
}

static void refuse_cb(uv_timer_t *t)
{
    refusal *r = t->data;
    r->cb(r->data, RB_EBUSY,
          "the cgroup freezer could not stop the sandbox's processes (Cannot pause container: OCI runtime pause "
          "failed: unable to freeze: unknown)");
    uv_close((uv_handle_t *)t, refusal_closed);
}

static rb_err stubborn_pause(void *self, const char *id, int on, backend_cb cb, void *data, char *err)
{
    if (!on || refusals_left == 0)
        return inner->ops->pause(self, id, on, cb, data, err);
    if (refusals_left > 0)
        refusals_left--;
    refused++;
    refusal *r = xcalloc(1, sizeof(*r));
    r->cb = cb;
    r->data = data;
    uv_timer_init(&sup_loop, &r->timer);
    r->timer.data = r;
    uv_timer_start(&r->timer, refuse_cb, 20, 0); /* answered later, as the engine would */
    return RB_OK;
}

static rb_err stubborn_open(rb_core **out)
{
    char err[RB_ERR_LEN];
    cr_assert_eq(backend_docker_new(&sup_loop, sup_cfg.docker_socket, 0, 0, &inner, err), RB_OK, "%s", err);
    stubborn_ops = *inner->ops;
    stubborn_ops.pause = stubborn_pause;
    return core_new_with_backend(&sup_loop, &sup_cfg, backend_new(&stubborn_ops, inner->self), out, err);
}

/* ---- the fixture: the core and its containers go whatever happens ----------------------- */

static rb_core *live_core;
static char live_instance[RB_ID_LEN];

static rb_core *open_core(void)
{
    rb_core *c;
    cr_assert_eq(stubborn_open(&c), RB_OK);
    live_core = c;
    snprintf(live_instance, sizeof(live_instance), "%s", c->instance);
    sup_wait_docker(c);
    return c;
}

static void setup(void)
{
    sup_fixture_open("freeze", RB_LOG_ERROR);
    sup_cfg.pool_size = 0;
}

struct answer {
    int done;
    json_t *body;
};

static void answer_cb(void *data, rb_err err, const char *msg, int status, json_t *body)
{
    struct answer *a = data;
    (void)err, (void)msg, (void)status;
    a->done = 1;
    a->body = json_incref(body);
}

static void teardown(void)
{
    if (live_core != NULL) {
        core_stop(live_core);
        sup_wait_pending(live_core, 20000);
        core_free(live_core);
        live_core = NULL;
    }
    free(inner); /* its self went with the core's backend */
    inner = NULL;
    sup_sweep_instance(live_instance);
    sup_fixture_close();
}

TestSuite(freeze, .init = setup, .fini = teardown, .timeout = 150);

/* ---- helpers ---------------------------------------------------------------------------- */

static sup_result call_pause(rb_core *c, const char *sid, const char *mode)
{
    char err[RB_ERR_LEN];
    sup_result r = {0};
    json_t *body = mode != NULL ? json_pack("{s:s}", "mode", mode) : NULL;
    rb_err e = core_session_pause(c, NULL, sid, body, sup_op_cb, &r, NULL, err);
    json_decref(body);
    cr_assert_eq(e, RB_OK, "pause: %s", err);
    sup_run_until(&r.done, 60000);
    cr_assert(r.done, "the pause did not finish");
    return r;
}

static const char *status_of(rb_core *c, const char *sid)
{
    static char status[32];
    char err[RB_ERR_LEN];
    json_t *s = NULL;
    cr_assert_eq(core_session_get(c, NULL, sid, &s, err), RB_OK, "%s", err);
    snprintf(status, sizeof(status), "%s", sup_str(s, "status"));
    json_decref(s);
    return status;
}

/* Whether the engine says container id is paused. */
static int engine_paused(const char *id)
{
    char err[RB_ERR_LEN];
    docker *dk;
    cr_assert_eq(docker_new(&sup_loop, sup_cfg.docker_socket, &dk, err), RB_OK, "%s", err);
    struct answer a = {0};
    cr_assert_eq(docker_container_inspect(dk, id, answer_cb, &a, err), RB_OK, "%s", err);
    sup_run_until(&a.done, 20000);
    cr_assert(a.body != NULL, "no inspect answer for %s", id);
    int paused = json_is_true(json_object_get(json_object_get(a.body, "State"), "Paused"));
    json_decref(a.body);
    docker_free(dk);
    return paused;
}

/* ---- tests ------------------------------------------------------------------------------ */

Test(freeze, a_few_refusals_of_the_freezer_are_tried_past)
{
    rb_core *c = open_core();
    json_t *s = sup_session_create(c, NULL);
    const char *sid = sup_str(s, "session_id");
    char *out = sup_run_stdout(c, sid, "x = 41");
    free(out);
    refusals_left = 2;
    sup_result r = call_pause(c, sid, NULL);
    cr_assert_eq(r.err, RB_OK, "a freeze refused twice must go through on a later try: %s", r.msg);
    cr_assert_eq(refused, 2);
    cr_assert_str_eq(status_of(c, sid), "suspended");
    cr_assert(engine_paused(sup_str(s, "container_id")));
    json_decref(r.body);
    out = sup_run_stdout(c, sid, "print(x + 1)"); /* resumes it */
    cr_assert_str_eq(out, "42\n");
    free(out);
    json_decref(s);
}

Test(freeze, a_freezer_that_keeps_refusing_is_unavailable_and_changes_nothing)
{
    char err[RB_ERR_LEN];
    rb_core *c = open_core();
    json_t *s = sup_session_create(c, NULL);
    const char *sid = sup_str(s, "session_id");
    char *out = sup_run_stdout(c, sid, "x = 41");
    free(out);
    refusals_left = -1;

    const char *modes[] = {NULL, "hibernate"};
    for (int i = 0; i < 2; i++) {
        refused = 0;
        sup_result r = call_pause(c, sid, modes[i]);
        cr_assert_eq(r.err, RB_EUNAVAILABLE, "%s: %s %s", modes[i] ? modes[i] : "suspend", rb_strerror(r.err),
                     r.msg);
        cr_assert(strstr(r.msg, "freezer") != NULL && strstr(r.msg, "8 tries") != NULL &&
                      strstr(r.msg, "unable to freeze") != NULL && strstr(r.msg, "retry") != NULL,
                  "the message must name the cause: %s", r.msg);
        cr_assert_eq(refused, 8, "eight tries, then the answer");
        cr_assert_str_eq(status_of(c, sid), "ready");
        cr_assert(!engine_paused(sup_str(s, "container_id")));
    }

    /* a fork: the same answer, and its new session is gone */
    refused = 0;
    sup_result f = {0};
    cr_assert_eq(core_session_fork(c, NULL, sid, NULL, sup_op_cb, &f, NULL, err), RB_OK, "%s", err);
    sup_run_until(&f.done, 60000);
    cr_assert(f.done, "the fork did not finish");
    cr_assert_eq(f.err, RB_EUNAVAILABLE, "fork: %s %s", rb_strerror(f.err), f.msg);
    cr_assert(strstr(f.msg, "freezer") != NULL, "%s", f.msg);
    json_t *list = NULL;
    cr_assert_eq(core_session_list(c, NULL, &list, err), RB_OK, "%s", err);
    size_t i, live = 0;
    json_t *o;
    json_array_foreach(json_object_get(list, "sessions"), i, o) live += strcmp(sup_str(o, "status"), "ended") != 0 &&
                                                                        strcmp(sup_str(o, "status"), "dead") != 0;
    cr_assert_eq(live, 1, "only the source is live: %s", json_dumps(list, 0));
    json_decref(list);

    refusals_left = 0;
    out = sup_run_stdout(c, sid, "print(x + 1)");
    cr_assert_str_eq(out, "42\n", "the session runs on with its variables");
    free(out);
    json_decref(s);
}

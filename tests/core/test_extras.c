/*
 * Tests of core/extras.c against the real Docker engine and a real SQLite file: a protocol's
 * extras are kept with a live session, hidden from the session object, owned like it, and
 * survive a core_free/core_new cycle; a deadline ends a session, busy or not, and shows as
 * its expires_at. Requires runbox-sandbox:latest (docker/build-images).
 */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "core/core.h"
#include "support_core.h"

static void setup(void)
{
    sup_fixture_open("extras", RB_LOG_WARN);
}

static void teardown(void)
{
    sup_fixture_close();
}

TestSuite(extras, .init = setup, .fini = teardown, .timeout = 180);

Test(extras, kept_hidden_owned_and_persistent)
{
    char err[RB_ERR_LEN];
    rb_core *c = sup_core_open();
    char *sid = sup_session_create_id(c, NULL);
    json_t *v = json_pack("{s:s, s:{s:s}}", "token", "t0ken", "metadata", "k", "v"), *out = NULL;
    cr_assert_eq(core_session_set_extra(c, NULL, sid, "e2b", v, err), RB_OK, "%s", err);
    json_decref(v);
    cr_assert_eq(core_session_extra(c, NULL, sid, "e2b", &out, err), RB_OK, "%s", err);
    cr_assert_str_eq(sup_str(out, "token"), "t0ken");
    json_decref(out);
    cr_assert_eq(core_session_extra(c, NULL, sid, "other", &out, err), RB_OK, "%s", err);
    cr_assert_null(out);

    /* never in the session object */
    json_t *s = NULL;
    cr_assert_eq(core_session_get(c, NULL, sid, &s, err), RB_OK, "%s", err);
    char *text = json_dumps(s, 0);
    cr_assert(strstr(text, "t0ken") == NULL && json_object_get(s, "extras") == NULL, "%s", text);
    free(text);
    json_decref(s);

    /* another key's caller does not find it */
    core_caller bob = {.owner = "bob"};
    cr_assert_eq(core_session_extra(c, &bob, sid, "e2b", &out, err), RB_ENOTFOUND);
    cr_assert_eq(core_session_set_extra(c, &bob, sid, "e2b", NULL, err), RB_ENOTFOUND);
    cr_assert_eq(core_session_extra(c, NULL, "s_00000000000000000000000000000000", "e2b", &out, err), RB_ENOTFOUND);

    /* a restart keeps extras and the deadline */
    int64_t deadline = rb_now_ms() + 3600 * 1000;
    cr_assert_eq(core_session_set_deadline(c, NULL, sid, deadline, err), RB_OK, "%s", err);
    core_stop(c);
    core_free(c);
    uv_run(&sup_loop, UV_RUN_DEFAULT);
    c = sup_core_open();
    cr_assert_eq(core_session_extra(c, NULL, sid, "e2b", &out, err), RB_OK, "%s", err);
    cr_assert_str_eq(sup_str(out, "token"), "t0ken");
    cr_assert_str_eq(sup_str(json_object_get(out, "metadata"), "k"), "v");
    json_decref(out);
    int64_t got = 0;
    cr_assert_eq(core_session_deadline(c, NULL, sid, &got, err), RB_OK, "%s", err);
    cr_assert_eq(got, deadline);

    /* removing it */
    cr_assert_eq(core_session_set_extra(c, NULL, sid, "e2b", NULL, err), RB_OK, "%s", err);
    cr_assert_eq(core_session_extra(c, NULL, sid, "e2b", &out, err), RB_OK, "%s", err);
    cr_assert_null(out);

    /* an ended session has none */
    sup_session_delete(c, sid);
    cr_assert_eq(core_session_extra(c, NULL, sid, "e2b", &out, err), RB_ENOTFOUND);
    free(sid);
    sup_core_close(c, 15000);
}

Test(extras, a_deadline_ends_a_busy_session)
{
    char err[RB_ERR_LEN];
    rb_core *c = sup_core_open();
    char *sid = sup_session_create_id(c, NULL);
    json_t *req = json_pack("{s:s, s:s}", "session_id", sid, "code", "import time\ntime.sleep(120)"), *st = NULL;
    cr_assert_eq(core_execute(c, NULL, req, &st, err), RB_OK, "%s", err);
    json_decref(req);
    json_decref(st);
    int64_t deadline = rb_now_ms() + 1500;
    cr_assert_eq(core_session_set_deadline(c, NULL, sid, deadline, err), RB_OK, "%s", err);
    json_t *s = NULL;
    cr_assert_eq(core_session_get(c, NULL, sid, &s, err), RB_OK, "%s", err);
    char when[40];
    rb_time_format(deadline, when, sizeof(when));
    cr_assert_str_eq(sup_str(s, "expires_at"), when); /* before the idle expiry */
    json_decref(s);
    s = NULL;
    const char *status = "";
    for (int i = 0; i < 300 && strcmp(status, "ended") != 0; i++) {
        sup_run_for(200);
        json_decref(s);
        s = NULL;
        cr_assert_eq(core_session_get(c, NULL, sid, &s, err), RB_OK, "%s", err);
        status = sup_str(s, "status");
    }
    cr_assert_str_eq(status, "ended");
    cr_assert(strstr(sup_str(s, "end_reason"), "timeout") != NULL, "%s", sup_str(s, "end_reason"));
    json_decref(s);
    free(sid);
    sup_core_close(c, 15000);
}

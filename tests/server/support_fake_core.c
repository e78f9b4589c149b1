/*
 * support_fake_core.c: an in-memory stand-in for core/core.h, used only by the server/ unit
 * tests so they exercise real HTTP without Docker or SQLite. Sessions are created after a
 * short uv timer; executions run a fixed script on a per-execution timer (status running,
 * stdout, stderr, a PNG, a result, completed). Code containing "FOREVER" keeps printing
 * "tick" until cancelled; code containing "RAISE" ends with an error item; code containing
 * "LARGE" prints 20 MiB, "HUGE" 17 MiB on stdout (what the MCP tests need to go past the 32 MiB
 * of the replay log: the result document carries the text twice).
 */
#include <stdlib.h>
#include <string.h>

#include "core/core.h"
#include "core/stats.h"
#include "tests/server/harness.h"

#define STEP_MS 5

typedef struct fake_exec fake_exec;
typedef struct fake_session fake_session;

struct core_op {
    rb_core *core;
    uv_timer_t timer;
    core_cb cb;
    void *data;
    json_t *session;
    core_op *next;
};

struct core_watch {
    rb_core *core;
    fake_exec *exec;
    core_event_cb cb;
    void *data;
    size_t cursor;
    char last_status[16];
    uv_timer_t timer; /* replay */
    int stopped;
    core_watch *next;
};

struct fake_session {
    char id[40];
    json_t *obj;
    int ended;
    fake_session *next;
};

struct fake_exec {
    rb_core *core;
    char id[40];
    char session_id[40];
    int forever, raise;
    size_t out_bytes, err_bytes; /* the sizes of the stdout and stderr texts ("LARGE", "HUGE"), or 0 */
    int step;
    char status[16];
    int64_t created, started, completed;
    json_t *outputs;
    rb_buf out, errb;
    uv_timer_t timer;
    int timer_active;
    fake_exec *next;
};

struct rb_core {
    uv_loop_t *loop;
    const core_settings *cfg;
    fake_session *sessions;
    fake_exec *execs;
    core_op *ops;
    core_watch *watches;
    int live_watches;
    int cancelled_ops;
};

static json_t *time_or_null(int64_t ms)
{
    if (ms == 0)
        return json_null();
    char buf[32];
    rb_time_format(ms, buf, sizeof(buf));
    return json_string(buf);
}

rb_err core_new(uv_loop_t *loop, const core_settings *cfg, rb_core **out, char *err)
{
    (void)err;
    rb_core *c = xcalloc(1, sizeof(*c));
    c->loop = loop;
    c->cfg = cfg;
    *out = c;
    return RB_OK;
}

static void free_handle_owner(uv_handle_t *h)
{
    free(h->data);
}

static void exec_stop_timer(fake_exec *x)
{
    if (x->timer_active) {
        x->timer_active = 0;
        uv_timer_stop(&x->timer);
    }
}

void core_free(rb_core *c)
{
    if (c == NULL)
        return;
    for (fake_session *s = c->sessions, *n; s; s = n) {
        n = s->next;
        json_decref(s->obj);
        free(s);
    }
    for (core_watch *w = c->watches, *n; w; w = n) {
        n = w->next;
        uv_close((uv_handle_t *)&w->timer, free_handle_owner);
    }
    for (core_op *op = c->ops, *n; op; op = n) {
        n = op->next;
        json_decref(op->session);
        uv_close((uv_handle_t *)&op->timer, free_handle_owner);
    }
    for (fake_exec *x = c->execs, *n; x; x = n) {
        n = x->next;
        json_decref(x->outputs);
        rb_buf_dispose(&x->out);
        rb_buf_dispose(&x->errb);
        uv_close((uv_handle_t *)&x->timer, free_handle_owner);
    }
    free(c);
}

int fake_core_live_watches(rb_core *c)
{
    return __atomic_load_n(&c->live_watches, __ATOMIC_SEQ_CST);
}

int fake_core_cancelled_ops(rb_core *c)
{
    return __atomic_load_n(&c->cancelled_ops, __ATOMIC_SEQ_CST);
}

/* ---- sessions ---- */

static fake_session *find_session(rb_core *c, const char *id)
{
    for (fake_session *s = c->sessions; s; s = s->next)
        if (strcmp(s->id, id) == 0)
            return s;
    return NULL;
}

static rb_err check_opts(json_t *opts, char *err)
{
    json_t *lang = json_object_get(opts, "language");
    if (lang != NULL && (!json_is_string(lang) || (strcmp(json_string_value(lang), "python") != 0 &&
                                                   strcmp(json_string_value(lang), "bash") != 0)))
        return rb_fail(RB_EINVAL, err, "language: must be \"python\" or \"bash\"");
    json_t *eo = json_object_get(opts, "execution_options");
    if (eo == NULL)
        return RB_OK;
    if (!json_is_object(eo))
        return rb_fail(RB_EINVAL, err, "execution_options: must be an object");
    json_t *t = json_object_get(eo, "timeout");
    if (t != NULL && (!json_is_number(t) || json_number_value(t) <= 0))
        return rb_fail(RB_EINVAL, err, "execution_options.timeout: must be a number of seconds > 0");
    json_t *m = json_object_get(eo, "memory_limit");
    if (m != NULL && !json_is_string(m))
        return rb_fail(RB_EINVAL, err, "execution_options.memory_limit: must be a string such as \"512m\"");
    return RB_OK;
}

static void on_op_timer(uv_timer_t *t)
{
    core_op *op = t->data;
    rb_core *c = op->core;
    for (core_op **pp = &c->ops; *pp; pp = &(*pp)->next) {
        if (*pp == op) {
            *pp = op->next;
            break;
        }
    }
    json_t *sess = op->session;
    op->session = NULL;
    if (op->cb != NULL) {
        json_object_set_new(sess, "status", json_string("ready"));
        op->cb(op->data, RB_OK, NULL, json_incref(sess));
    }
    json_decref(sess);
    uv_close((uv_handle_t *)&op->timer, free_handle_owner);
}

rb_err core_session_create(rb_core *c, const core_caller *who, json_t *opts, core_cb cb, void *data, core_op **handle, char *err)
{
    (void)who;
    rb_err e = check_opts(opts, err);
    if (e != RB_OK)
        return e;
    int live = 0;
    for (fake_session *s = c->sessions; s; s = s->next)
        live += !s->ended;
    if (live >= c->cfg->max_sessions)
        return rb_fail(RB_EBUSY, err, "%d sessions are live, the maximum; delete one or retry later", live);

    fake_session *s = xcalloc(1, sizeof(*s));
    rb_random_id("s_", s->id, sizeof(s->id));
    json_t *lang = json_object_get(opts, "language");
    json_t *eo = json_object_get(opts, "execution_options");
    json_t *t = eo ? json_object_get(eo, "timeout") : NULL;
    int64_t now = rb_now_ms();
    s->obj = json_pack("{s:s,s:s,s:s,s:o,s:o,s:n,s:n,s:{s:f,s:s,s:f,s:o},s:i,s:s}", "session_id", s->id, "language",
                       lang ? json_string_value(lang) : "python", "status", "starting", "created_at", time_or_null(now),
                       "last_used_at", time_or_null(now), "expires_at", "ended_at", "execution_options", "timeout",
                       t ? json_number_value(t) : 30.0, "memory_limit", "512m", "cpu_limit", 1.0,
                       "environment_variables", json_object(), "executions", 0, "container_id", "c0ffee");
    s->next = c->sessions;
    c->sessions = s;
    json_object_set_new(s->obj, "status", json_string("ready"));

    core_op *op = xcalloc(1, sizeof(*op));
    op->core = c;
    op->cb = cb;
    op->data = data;
    op->session = json_deep_copy(s->obj);
    json_object_set_new(op->session, "status", json_string("starting"));
    uv_timer_init(c->loop, &op->timer);
    op->timer.data = op;
    uv_timer_start(&op->timer, on_op_timer, STEP_MS, 0);
    op->next = c->ops;
    c->ops = op;
    if (handle != NULL)
        *handle = op;
    return RB_OK;
}

void core_cancel(core_op *op)
{
    if (op == NULL)
        return;
    op->cb = NULL;
    __atomic_add_fetch(&op->core->cancelled_ops, 1, __ATOMIC_SEQ_CST);
}

rb_err core_session_get(rb_core *c, const core_caller *who, const char *session_id, json_t **out, char *err)
{
    (void)who;
    fake_session *s = find_session(c, session_id);
    if (s == NULL)
        return rb_fail(RB_ENOTFOUND, err, "no session %s", session_id);
    *out = json_deep_copy(s->obj);
    return RB_OK;
}

rb_err core_session_list(rb_core *c, const core_caller *who, json_t **out, char *err)
{
    (void)who;
    (void)err;
    json_t *arr = json_array();
    for (fake_session *s = c->sessions; s; s = s->next)
        if (!s->ended)
            json_array_append_new(arr, json_deep_copy(s->obj));
    *out = json_pack("{s:o}", "sessions", arr);
    return RB_OK;
}

rb_err core_session_delete(rb_core *c, const core_caller *who, const char *session_id, json_t **out, char *err)
{
    (void)who;
    fake_session *s = find_session(c, session_id);
    if (s == NULL || s->ended)
        return rb_fail(RB_ENOTFOUND, err, "no live session %s", session_id);
    s->ended = 1;
    json_object_set_new(s->obj, "status", json_string("ended"));
    json_object_set_new(s->obj, "ended_at", time_or_null(rb_now_ms()));
    *out = json_deep_copy(s->obj);
    return RB_OK;
}

/* ---- executions ---- */

static fake_exec *find_exec(rb_core *c, const char *id)
{
    for (fake_exec *x = c->execs; x; x = x->next)
        if (strcmp(x->id, id) == 0)
            return x;
    return NULL;
}

static int finished(const fake_exec *x)
{
    return strcmp(x->status, "queued") != 0 && strcmp(x->status, "running") != 0;
}

static json_t *status_doc(const fake_exec *x)
{
    return json_pack("{s:s,s:s,s:s,s:o,s:o,s:o}", "request_id", x->id, "session_id", x->session_id, "status", x->status,
                     "created_at", time_or_null(x->created), "started_at", time_or_null(x->started), "completed_at",
                     time_or_null(x->completed));
}

static json_t *result_doc(const fake_exec *x)
{
    json_t *d = status_doc(x);
    json_t *result = json_null(), *error = json_null(), *files = json_array(), *compat = json_array();
    size_t i;
    json_t *it;
    json_array_foreach(x->outputs, i, it)
    {
        const char *type = json_string_value(json_object_get(it, "type"));
        if (strcmp(type, "result") == 0) {
            json_decref(result);
            result = json_incref(json_object_get(it, "text"));
            json_array_append_new(compat, json_pack("{s:s,s:O}", "type", "result", "content", json_object_get(it, "text")));
        } else if (strcmp(type, "error") == 0) {
            json_decref(error);
            error = json_pack("{s:O,s:O,s:O}", "ename", json_object_get(it, "ename"), "evalue",
                              json_object_get(it, "evalue"), "traceback", json_object_get(it, "traceback"));
        } else if (strcmp(type, "display") == 0) {
            json_array_append(files, json_object_get(it, "data"));
        } else {
            json_array_append_new(compat, json_pack("{s:s,s:O}", "type", "stream", "content", json_object_get(it, "text")));
        }
    }
    json_object_set(d, "outputs", x->outputs);
    json_object_set_new(d, "stdout", json_stringn(x->out.data ? x->out.data : "", x->out.len));
    json_object_set_new(d, "stderr", json_stringn(x->errb.data ? x->errb.data : "", x->errb.len));
    json_object_set_new(d, "result", result);
    json_object_set_new(d, "error", error);
    json_object_set_new(d, "files", files);
    json_object_set_new(d, "duration_ms", x->completed ? json_integer(x->completed - x->started) : json_null());
    json_object_set_new(d, "truncated", json_false());
    json_object_set_new(d, "dropped_bytes", json_integer(0));
    json_object_set_new(d, "reset", json_false());
    json_object_set_new(d, "reset_reason", json_null());
    json_object_set_new(d, "output", compat);
    return d;
}

/* Delivers to w whatever it has not seen. Returns 0 when w was stopped or finished. */
static int pump(core_watch *w)
{
    fake_exec *x = w->exec;
    /* Like the real core: the current status first (also for a finished execution), then
     * each change. */
    if (strcmp(w->last_status, x->status) != 0 && (!finished(x) || w->last_status[0] == '\0')) {
        snprintf(w->last_status, sizeof(w->last_status), "%s", x->status);
        json_t *ev = json_pack("{s:s,s:s}", "request_id", x->id, "status", x->status);
        w->cb(w->data, "status", ev);
        json_decref(ev);
        if (w->stopped)
            return 0;
    }
    while (w->cursor < json_array_size(x->outputs)) {
        w->cb(w->data, "output", json_array_get(x->outputs, w->cursor++));
        if (w->stopped)
            return 0;
    }
    if (finished(x)) {
        json_t *doc = result_doc(x);
        core_watch_stop(w); /* finished: taken out before the callback, which must not stop it */
        w->cb(w->data, "done", doc);
        json_decref(doc);
        return 0;
    }
    return 1;
}

static void pump_all(fake_exec *x)
{
    core_watch *list[64];
    size_t n = 0;
    for (core_watch *w = x->core->watches; w && n < 64; w = w->next)
        if (w->exec == x && !w->stopped)
            list[n++] = w;
    for (size_t i = 0; i < n; i++)
        if (!list[i]->stopped)
            pump(list[i]);
}

static void add_output(fake_exec *x, json_t *item)
{
    const char *type = json_string_value(json_object_get(item, "type"));
    if (strcmp(type, "stream") == 0) {
        const char *text = json_string_value(json_object_get(item, "text"));
        const char *name = json_string_value(json_object_get(item, "name"));
        rb_buf_append(strcmp(name, "stdout") == 0 ? &x->out : &x->errb, text, strlen(text));
    }
    json_array_append_new(x->outputs, item);
}

static void finish(fake_exec *x, const char *status)
{
    snprintf(x->status, sizeof(x->status), "%s", status);
    x->completed = rb_now_ms();
    if (x->started == 0)
        x->started = x->completed;
    exec_stop_timer(x);
}

static void on_exec_step(uv_timer_t *t)
{
    fake_exec *x = t->data;
    int step = x->step++;
    if (step == 0) {
        snprintf(x->status, sizeof(x->status), "running");
        x->started = rb_now_ms();
    } else if (x->forever) {
        /* Keep the "tick" history short; a long-running stream is what matters. */
        if (json_array_size(x->outputs) < 4)
            add_output(x, json_pack("{s:s,s:s,s:s}", "type", "stream", "name", "stdout", "text", "tick\n"));
        else {
            json_t *ev = json_pack("{s:s,s:s,s:s}", "type", "stream", "name", "stdout", "text", "tick\n");
            for (core_watch *w = x->core->watches; w; w = w->next)
                if (w->exec == x && !w->stopped && w->cursor == json_array_size(x->outputs))
                    w->cb(w->data, "output", ev);
            json_decref(ev);
            return;
        }
    } else if (step == 1 || step == 2) {
        size_t n = step == 1 ? x->out_bytes : x->err_bytes;
        json_t *text = json_string(step == 1 ? "hello\n" : "warn\n");
        if (n > 0) {
            char *big = xmalloc(n);
            memset(big, 'x', n);
            json_decref(text);
            text = json_stringn_nocheck(big, n);
            free(big);
        }
        add_output(x, json_pack("{s:s,s:s,s:o}", "type", "stream", "name", step == 1 ? "stdout" : "stderr", "text", text));
    } else if (step == 3) {
        add_output(x, json_pack("{s:s,s:s,s:s}", "type", "display", "mime", "image/png", "data", "iVBORw0KGgo="));
    } else if (step == 4) {
        if (x->raise)
            add_output(x, json_pack("{s:s,s:s,s:s,s:[s]}", "type", "error", "ename", "ValueError", "evalue", "bad",
                                    "traceback", "ValueError: bad"));
        else
            add_output(x, json_pack("{s:s,s:s}", "type", "result", "text", "42"));
    } else {
        finish(x, x->raise ? "error" : "completed");
    }
    pump_all(x);
}

rb_err core_execute(rb_core *c, const core_caller *who, json_t *req, json_t **out, char *err)
{
    (void)who;
    json_t *sid = json_object_get(req, "session_id"), *code = json_object_get(req, "code");
    json_t *timeout = json_object_get(req, "timeout");
    if (!json_is_string(sid))
        return rb_fail(RB_EINVAL, err, "session_id: must be a string");
    if (!json_is_string(code))
        return rb_fail(RB_EINVAL, err, "code: must be a string");
    if (timeout != NULL && (!json_is_number(timeout) || json_number_value(timeout) <= 0))
        return rb_fail(RB_EINVAL, err, "timeout: must be a number of seconds > 0");
    json_t *rules = json_object_get(req, "disabled_rules");
    if (rules != NULL && !json_is_array(rules))
        return rb_fail(RB_EINVAL, err, "disabled_rules: must be an array of rule names");
    if (json_object_size(req) > 2 + (size_t)(timeout != NULL) + (size_t)(rules != NULL))
        return rb_fail(RB_EINVAL, err, "unknown field in the execute request");
    fake_session *s = find_session(c, json_string_value(sid));
    if (s == NULL)
        return rb_fail(RB_ENOTFOUND, err, "no session %s", json_string_value(sid));
    if (s->ended)
        return rb_fail(RB_ECONFLICT, err, "session %s has ended", s->id);

    fake_exec *x = xcalloc(1, sizeof(*x));
    x->core = c;
    rb_random_id("e_", x->id, sizeof(x->id));
    snprintf(x->session_id, sizeof(x->session_id), "%s", s->id);
    snprintf(x->status, sizeof(x->status), "queued");
    x->forever = strstr(json_string_value(code), "FOREVER") != NULL;
    x->raise = strstr(json_string_value(code), "RAISE") != NULL;
    if (strstr(json_string_value(code), "LARGE") != NULL)
        x->out_bytes = (size_t)20 << 20;
    if (strstr(json_string_value(code), "HUGE") != NULL)
        x->out_bytes = (size_t)17 << 20;
    x->created = rb_now_ms();
    x->outputs = json_array();
    rb_buf_init(&x->out, 1 << 20);
    rb_buf_init(&x->errb, 1 << 20);
    uv_timer_init(c->loop, &x->timer);
    x->timer.data = x;
    x->timer_active = 1;
    uv_timer_start(&x->timer, on_exec_step, STEP_MS, STEP_MS);
    x->next = c->execs;
    c->execs = x;
    json_object_set_new(s->obj, "executions", json_integer(json_integer_value(json_object_get(s->obj, "executions")) + 1));
    *out = status_doc(x);
    return RB_OK;
}

rb_err core_execution_status(rb_core *c, const core_caller *who, const char *request_id, json_t **out, char *err)
{
    (void)who;
    fake_exec *x = find_exec(c, request_id);
    if (x == NULL)
        return rb_fail(RB_ENOTFOUND, err, "no execution %s", request_id);
    *out = status_doc(x);
    return RB_OK;
}

rb_err core_execution_results(rb_core *c, const core_caller *who, const char *request_id, json_t **out, char *err)
{
    (void)who;
    fake_exec *x = find_exec(c, request_id);
    if (x == NULL)
        return rb_fail(RB_ENOTFOUND, err, "no execution %s", request_id);
    *out = result_doc(x);
    return RB_OK;
}

static void on_cancel_pump(uv_timer_t *t)
{
    pump_all(t->data);
}

rb_err core_execution_cancel(rb_core *c, const core_caller *who, const char *request_id, json_t **out, char *err)
{
    (void)who;
    fake_exec *x = find_exec(c, request_id);
    if (x == NULL)
        return rb_fail(RB_ENOTFOUND, err, "no execution %s", request_id);
    if (finished(x))
        return rb_fail(RB_ECONFLICT, err, "execution %s has already finished (%s)", x->id, x->status);
    finish(x, "cancelled");
    /* Watchers hear "done" on the loop, not from inside this call. */
    x->timer_active = 1;
    uv_timer_start(&x->timer, on_cancel_pump, 0, 0);
    *out = status_doc(x);
    return RB_OK;
}

/* ---- watches ---- */

static void on_replay(uv_timer_t *t)
{
    core_watch *w = t->data;
    if (!w->stopped)
        pump(w);
}

rb_err core_watch_start(rb_core *c, const core_caller *who, const char *request_id, int replay, core_event_cb cb, void *data, core_watch **out,
                        char *err)
{
    (void)who;
    fake_exec *x = find_exec(c, request_id);
    if (x == NULL)
        return rb_fail(RB_ENOTFOUND, err, "no execution %s", request_id);
    core_watch *w = xcalloc(1, sizeof(*w));
    w->core = c;
    w->exec = x;
    w->cb = cb;
    w->data = data;
    w->cursor = replay ? 0 : json_array_size(x->outputs);
    uv_timer_init(c->loop, &w->timer);
    w->timer.data = w;
    uv_timer_start(&w->timer, on_replay, 0, 0);
    w->next = c->watches;
    c->watches = w;
    __atomic_add_fetch(&c->live_watches, 1, __ATOMIC_SEQ_CST);
    *out = w;
    return RB_OK;
}

void core_watch_stop(core_watch *w)
{
    rb_core *c = w->core;
    w->stopped = 1;
    for (core_watch **pp = &c->watches; *pp; pp = &(*pp)->next) {
        if (*pp == w) {
            *pp = w->next;
            __atomic_sub_fetch(&c->live_watches, 1, __ATOMIC_SEQ_CST);
            uv_timer_stop(&w->timer);
            uv_close((uv_handle_t *)&w->timer, free_handle_owner);
            return;
        }
    }
}

json_t *core_policy(rb_core *c)
{
    (void)c;
    return json_pack("{s:b, s:s, s:[], s:s, s:s}", "enabled", 0, "mode", "off", "rules", "overridable", "*", "note",
                     "fake core");
}

json_t *core_health(rb_core *c)
{
    int live = 0, running = 0, queued = 0;
    for (fake_session *s = c->sessions; s; s = s->next)
        live += !s->ended;
    for (fake_exec *x = c->execs; x; x = x->next) {
        running += strcmp(x->status, "running") == 0;
        queued += strcmp(x->status, "queued") == 0;
    }
    return json_pack("{s:s,s:s,s:{s:b,s:s,s:n},s:{s:i,s:i},s:{s:i,s:i}}", "status", "ok", "version", RUNBOX_VERSION,
                     "docker", "reachable", 1, "api_version", "1.41", "error", "sessions", "live", live, "busy", running,
                     "executions", "running", running, "queued", queued);
}

/* The numbers of core/stats.h, derived from the fake's lists (which never shrink, so the
 * counters only grow): created sessions, ended ones as deleted, executions by status. */
void stats_read(rb_core *c, stats_snapshot *out)
{
    memset(out, 0, sizeof(*out));
    for (fake_session *s = c->sessions; s; s = s->next) {
        out->total.sessions_created++;
        if (s->ended) {
            out->total.sessions_ended[STATS_END_DELETED]++;
            continue;
        }
        const char *st = json_string_value(json_object_get(s->obj, "status"));
        for (int i = 0; i < STATS_LIVE_MAX; i++)
            if (st != NULL && strcmp(st, stats_live_name((stats_live)i)) == 0)
                out->sessions[i]++;
    }
    for (fake_exec *x = c->execs; x; x = x->next) {
        out->executions_running += strcmp(x->status, "running") == 0;
        out->executions_queued += strcmp(x->status, "queued") == 0;
        if (!finished(x))
            continue;
        for (int i = 0; i < STATS_EXEC_MAX; i++)
            if (strcmp(x->status, stats_exec_name((stats_exec)i)) == 0)
                out->total.executions_finished[i]++;
        double secs = (double)(x->completed - x->started) / 1000.0;
        int b = 0;
        while (b < STATS_DURATION_BUCKETS && secs > stats_duration_bound(b))
            b++;
        out->total.duration_bucket[b]++;
        out->total.duration_count++;
        out->total.duration_sum += secs;
        out->total.output_bytes += x->out.len + x->errb.len;
    }
    out->docker_reachable = 1;
}

/* ---- the web-page reader: on, answering by the URL's host ------------------------------- */

int core_page_text_enabled(const rb_core *c)
{
    (void)c;
    return 1;
}

/* refused.test: 403; slow.test: 504; anything else: a page whose text names the URL, with a
 * one-pixel screenshot when asked. */
rb_err core_page_text(rb_core *c, json_t *args, core_cb cb, void *data, core_op **handle, char *err)
{
    (void)c;
    const char *url = json_string_value(json_object_get(args, "url"));
    if (url == NULL)
        return rb_fail(RB_EINVAL, err, "'url' is required");
    if (handle != NULL)
        *handle = NULL;
    if (strstr(url, "://refused.test") != NULL) {
        cb(data, RB_EFORBIDDEN, "the page's address is refused: refused.test (127.0.0.1) port 80: loopback address",
           NULL);
        return RB_OK;
    }
    if (strstr(url, "://slow.test") != NULL) {
        cb(data, RB_ETIMEDOUT, "the page did not load in time", NULL);
        return RB_OK;
    }
    json_t *doc = json_pack("{s:s, s:s, s:s, s:i, s:s+, s:b, s:b, s:i, s:[], s:b}", "url", url, "final_url", url,
                            "title", "Fake page", "status", 200, "text", "Text of ", url, "truncated", 0, "settled", 1,
                            "redirects", 0, "refused", "byte_cap_reached", 0);
    if (json_is_true(json_object_get(args, "screenshot")))
        json_object_set_new(doc, "screenshot",
                            json_string("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAA"
                                        "AABJRU5ErkJggg=="));
    cb(data, RB_OK, NULL, doc);
    return RB_OK;
}

/* ---- engines: one named "local" ----------------------------------------------------------- */

rb_err core_engine_drain(rb_core *c, const char *engine, int on, json_t **out, char *err)
{
    (void)c;
    if (strcmp(engine, "local") != 0)
        return rb_fail(RB_ENOTFOUND, err, "no engine is named '%s'", engine);
    *out = json_pack("{s:[{s:s, s:b}]}", "engines", "name", "local", "draining", on);
    return RB_OK;
}


/* The keys file's egress= check (core/validate.c): a fake that refuses one value, so that a test
 * can see a malformed limit refused. */
rb_err core_egress_limit_check(const char *list, char *err)
{
    if (strcmp(list, "bad..pattern") == 0)
        return rb_fail(RB_EINVAL, err, "host pattern \"%s\": not a host name", list);
    return RB_OK;
}

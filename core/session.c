/*
 * session.c: a session's in-memory state and its persistence: the stored document, the API
 * object, the queue of executions (one at a time, in submission order), the backstop timer
 * that catches a sandbox that stopped answering, and ending a session. Container work is in
 * sandbox.c; the public entry points are in core.c.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/audit/audit.h"
#include "core/internal.h"

json_t *session_to_doc(const session *s)
{
    json_t *doc = json_object();
    json_object_set_new(doc, "session_id", json_string(s->id));
    json_object_set_new(doc, "language", json_string(s->language));
    if (s->owner != NULL && s->owner[0] != '\0')
        json_object_set_new(doc, "owner", json_string(s->owner));
    json_object_set_new(doc, "status", json_string(s->status));
    json_object_set_new(doc, "created_at", json_integer(s->created_at));
    json_object_set_new(doc, "last_used_at", json_integer(s->last_used_at));
    core_json_ms(doc, "ended_at", s->ended_at);
    json_object_set_new(doc, "end_reason", s->end_reason ? json_string(s->end_reason) : json_null());
    json_object_set_new(doc, "container_id", s->container_id ? json_string(s->container_id) : json_null());
    json_object_set(doc, "execution_options", s->options);
    json_object_set_new(doc, "executions", json_integer(s->executions));
    if (s->extras != NULL && json_object_size(s->extras) > 0)
        json_object_set(doc, "extras", s->extras);
    if (s->contexts != NULL && json_array_size(s->contexts) > 0)
        json_object_set(doc, "contexts", s->contexts);
    if (s->deadline > 0)
        json_object_set_new(doc, "deadline", json_integer(s->deadline));
    if (s->egress_net != NULL)
        json_object_set_new(doc, "egress_network", json_string(s->egress_net));
    /* a pause in flight is stored as what it was before: a restart finds it so (recovery.c) */
    int pause = strcmp(s->status, "pausing") == 0 ? s->pause_was : s->pause;
    if (pause != PAUSE_NONE) {
        json_object_set_new(doc, "pause", json_string(pause == PAUSE_SUSPENDED ? "suspended" : "hibernated"));
        json_object_set_new(doc, "paused_at", json_integer(s->paused_at));
    }
    if (s->kept_volume != NULL)
        json_object_set_new(doc, "kept_volume", json_string(s->kept_volume));
    if (s->incarnation > 0)
        json_object_set_new(doc, "incarnation", json_integer(s->incarnation));
    if (s->fresh_interpreter)
        json_object_set_new(doc, "fresh_interpreter", json_true());
    if (s->fork_pending)
        json_object_set_new(doc, "fork_pending", json_string(s->fork_pending_from ? s->fork_pending_from : ""));
    if (s->deadline_pause != PAUSE_NONE)
        json_object_set_new(doc, "deadline_pause", json_integer(s->deadline_pause));
    if (s->deadline_span > 0)
        json_object_set_new(doc, "deadline_span", json_integer(s->deadline_span));
    return doc;
}

session *session_from_doc(rb_core *c, json_t *doc)
{
    const char *id = json_string_value(json_object_get(doc, "session_id"));
    const char *lang = json_string_value(json_object_get(doc, "language"));
    if (id == NULL || strlen(id) >= RB_ID_LEN)
        return NULL;
    session *s = xcalloc(1, sizeof(*s));
    s->core = c;
    snprintf(s->id, sizeof(s->id), "%s", id);
    snprintf(s->language, sizeof(s->language), "%s", core_language_known(lang) ? lang : "python");
    const char *owner = json_string_value(json_object_get(doc, "owner"));
    s->owner = xstrdup(owner ? owner : "");
    s->status = "starting";
    s->created_at = json_integer_value(json_object_get(doc, "created_at"));
    s->last_used_at = json_integer_value(json_object_get(doc, "last_used_at"));
    json_t *opts = json_object_get(doc, "execution_options");
    s->options = json_is_object(opts) ? json_incref(opts) : json_object();
    s->timeout = json_number_value(json_object_get(s->options, "timeout"));
    if (s->timeout <= 0)
        s->timeout = c->cfg->default_timeout;
    s->executions = (int)json_integer_value(json_object_get(doc, "executions"));
    const char *cid = json_string_value(json_object_get(doc, "container_id"));
    s->container_id = cid ? xstrdup(cid) : NULL;
    json_t *extras = json_object_get(doc, "extras");
    s->extras = json_is_object(extras) ? json_deep_copy(extras) : NULL;
    json_t *contexts = json_object_get(doc, "contexts");
    s->contexts = json_is_array(contexts) ? json_deep_copy(contexts) : NULL;
    s->deadline = json_integer_value(json_object_get(doc, "deadline"));
    json_t *net = json_object_get(s->options, "network");
    s->net_policy = json_is_object(net) ? json_deep_copy(net) : NULL;
    core__session_limits_restore(c, s);
    const char *enet = json_string_value(json_object_get(doc, "egress_network"));
    s->egress_net = enet ? xstrdup(enet) : NULL;
    const char *pause = json_string_value(json_object_get(doc, "pause"));
    const char *kept = json_string_value(json_object_get(doc, "kept_volume"));
    s->incarnation = (int)json_integer_value(json_object_get(doc, "incarnation"));
    s->paused_at = json_integer_value(json_object_get(doc, "paused_at"));
    s->fresh_interpreter = json_is_true(json_object_get(doc, "fresh_interpreter"));
    const char *fork_from = json_string_value(json_object_get(doc, "fork_pending"));
    if (fork_from != NULL) { /* a fork a restart cut short: recovery.c ends it */
        s->fork_pending = 1;
        s->fork_pending_from = xstrdup(fork_from);
    }
    s->deadline_pause = (int)json_integer_value(json_object_get(doc, "deadline_pause"));
    s->deadline_span = json_integer_value(json_object_get(doc, "deadline_span"));
    if (s->deadline_pause != PAUSE_SUSPENDED && s->deadline_pause != PAUSE_HIBERNATED)
        s->deadline_pause = PAUSE_NONE;
    if (pause != NULL && strcmp(pause, "hibernated") == 0 && kept != NULL) {
        s->pause = PAUSE_HIBERNATED; /* no sandbox to find: it stays as it was (recovery.c) */
        s->kept_volume = xstrdup(kept);
        s->status = "hibernated";
    } else if (pause != NULL && strcmp(pause, "suspended") == 0) {
        s->pause = PAUSE_SUSPENDED; /* "suspended" once recovery finds its frozen container */
    }
    return s;
}

/* The API object is derived from the stored document, so live and ended sessions look alike. */
json_t *session_doc_to_api(rb_core *c, json_t *doc)
{
    json_t *out = json_object();
    json_object_set(out, "session_id", json_object_get(doc, "session_id"));
    json_object_set(out, "language", json_object_get(doc, "language"));
    json_object_set(out, "status", json_object_get(doc, "status"));
    int64_t created = json_integer_value(json_object_get(doc, "created_at"));
    int64_t used = json_integer_value(json_object_get(doc, "last_used_at"));
    json_t *ended = json_object_get(doc, "ended_at");
    core_json_time(out, "created_at", created);
    core_json_time(out, "last_used_at", used);
    if (json_is_integer(ended) && json_integer_value(ended) > 0) {
        json_object_set_new(out, "expires_at", json_null());
        core_json_time(out, "ended_at", json_integer_value(ended));
    } else {
        int64_t expires = c->cfg->idle_timeout > 0 ? used + (int64_t)c->cfg->idle_timeout * 1000 : 0;
        int64_t deadline = json_integer_value(json_object_get(doc, "deadline"));
        if (deadline > 0 && (expires == 0 || deadline < expires))
            expires = deadline;
        if (expires > 0)
            core_json_time(out, "expires_at", expires);
        else
            json_object_set_new(out, "expires_at", json_null());
        json_object_set_new(out, "ended_at", json_null());
    }
    json_t *reason = json_object_get(doc, "end_reason");
    json_object_set(out, "end_reason", json_is_string(reason) ? reason : json_null());
    json_object_set(out, "execution_options", json_object_get(doc, "execution_options"));
    json_t *owner = json_object_get(doc, "owner"); /* the key that made it (absent without keys) */
    if (json_is_string(owner))
        json_object_set(out, "owner", owner);
    json_t *n = json_object_get(doc, "executions");
    json_object_set_new(out, "executions", json_integer(json_is_integer(n) ? json_integer_value(n) : 0));
    json_t *cid = json_object_get(doc, "container_id");
    json_object_set(out, "container_id", json_is_string(cid) ? cid : json_null());
    json_t *paused = json_object_get(doc, "paused_at");
    if (json_is_string(json_object_get(doc, "pause")) && json_integer_value(paused) > 0 && !json_is_integer(ended))
        core_json_time(out, "paused_at", json_integer_value(paused));
    return out;
}

json_t *session_to_api(const session *s)
{
    json_t *doc = session_to_doc(s);
    json_t *out = session_doc_to_api(s->core, doc);
    json_decref(doc);
    if (s->engine_down != NULL) { /* for now: it comes back with its state when its engine does */
        json_object_set_new(out, "status", json_string("unavailable"));
        json_object_set_new(out, "unavailable_reason", json_string(s->engine_down));
    }
    return out;
}

void session_persist(session *s)
{
    char err[RB_ERR_LEN];
    s->dirty = 0;
    json_t *doc = session_to_doc(s);
    if (store_session_put(s->core->st, doc, err) != RB_OK)
        rb_error("session %s: cannot save: %s", s->id, err);
    json_decref(doc);
}

void session_free(session *s)
{
    if (s == NULL)
        return;
    json_decref(s->options);
    json_decref(s->dependencies);
    json_decref(s->extras);
    json_decref(s->contexts);
    json_decref(s->net_policy);
    free(s->egress_net);
    if (s->deps_op != NULL)
        core_cancel(s->deps_op); /* core/deps/ frees it when its install ends */
    free(s->owner);
    free(s->container_id);
    free(s->end_reason);
    free(s->engine_down);
    free(s->kept_volume);
    free(s->fork_pending_from);
    free(s->place_with);
    core__pause_session_end(s, "runboxd is shutting down"); /* none left but at core_free */
    free(s);
}

static void backstop_cb(uv_timer_t *t)
{
    execution *ex = t->data;
    session *s = ex->s;
    char err[RB_ERR_LEN];
    if (!ex->backstop_waiting && ex->backstop_pings < RB_BACKSTOP_PINGS && s->sb != NULL &&
        sandbox_probe(s->sb, err) == RB_OK) {
        ex->backstop_pings++;
        ex->backstop_waiting = 1;
        rb_warn("session %s: execution %s: no answer from the sandbox long after the timeout; pinging it (%d of %d)",
                s->id, ex->id, ex->backstop_pings, RB_BACKSTOP_PINGS);
        uv_timer_start(ex->backstop, backstop_cb, RB_BACKSTOP_PONG_MS, 0);
        return;
    }
    if (ex->backstop_pings == 0)
        rb_warn("session %s: execution %s: the sandbox gave no answer %d s after the timeout and cannot be pinged; "
                "ending the session",
                s->id, ex->id, RB_BACKSTOP_EXTRA_MS / 1000);
    else if (ex->backstop_waiting)
        rb_warn("session %s: execution %s: the sandbox gave no answer after the timeout and none to a ping in %d s; "
                "ending the session",
                s->id, ex->id, RB_BACKSTOP_PONG_MS / 1000);
    else
        rb_warn("session %s: execution %s: the sandbox answered pings but gave no result in %d s after the timeout; "
                "ending the session",
                s->id, ex->id, (RB_BACKSTOP_PINGS + 1) * RB_BACKSTOP_EXTRA_MS / 1000);
    session_end(s, "dead",
                "the sandbox stopped answering (no reply long after the execution's timeout); the session was "
                "ended and its container removed: create a new session");
}

void session_backstop_pong(session *s)
{
    execution *ex = s->running;
    if (ex == NULL || ex->backstop == NULL || !ex->backstop_waiting)
        return;
    ex->backstop_waiting = 0;
    rb_warn("session %s: execution %s: the sandbox is slow (no result yet after the timeout) but answers; waiting "
            "%d s more",
            s->id, ex->id, RB_BACKSTOP_EXTRA_MS / 1000);
    uv_timer_start(ex->backstop, backstop_cb, RB_BACKSTOP_EXTRA_MS, 0);
}

void session_pump(session *s)
{
    rb_core *c = s->core;
    char err[RB_ERR_LEN];
    while (s->running == NULL && s->queue_head != NULL && strcmp(s->status, "ready") == 0 && sandbox_ready(s->sb)) {
        execution *ex = s->queue_head;
        s->queue_head = ex->next;
        if (s->queue_head == NULL)
            s->queue_tail = NULL;
        ex->next = NULL;
        s->queued--;
        s->running = ex;
        s->status = "busy";
        if (s->egress_net != NULL) /* its report holds what this execution reaches, not what came before */
            json_decref(egress_take_report(c, s->id));
        execution_set_running(ex);
        if (s->fresh_interpreter) { /* its first cell since a hibernation: the variables are gone (docs/data.md) */
            s->fresh_interpreter = 0;
            s->dirty = 1;
            ex->reset = 1;
            free(ex->reset_reason);
            ex->reset_reason = xstrdup("the session was hibernated: its files were kept, but its interpreter started "
                                       "fresh on resume (variables and imports are gone)");
        }
        if (sandbox_execute(s->sb, ex, err) != RB_OK) {
            execution_fail(ex, "error", "SandboxError", err, 0, NULL);
            continue; /* execution_finish re-pumps, but the loop condition handles it too */
        }
        int64_t ms = (int64_t)(ex->timeout * 1000) + c->cfg->grace_ms + RB_BACKSTOP_EXTRA_MS;
        ex->backstop = xmalloc(sizeof(*ex->backstop));
        uv_timer_init(c->loop, ex->backstop);
        ex->backstop->data = ex;
        uv_timer_start(ex->backstop, backstop_cb, (uint64_t)ms, 0);
        return;
    }
}

void session_end(session *s, const char *status, const char *reason)
{
    rb_core *c = s->core;
    rb_info("session %s %s: %s", s->id, status, reason);
    audit_record(c, s->owner, s->id, "session_ended", json_pack("{s:s, s:o}", "status", status, "reason",
                                                                audit_text(reason, strlen(reason), 1024)));
    stats_session_ended(c, s->status, status, reason);
    s->status = status; /* before failing executions, so finishing them does not re-pump */
    if (s->deps_op != NULL) {
        core_cancel(s->deps_op); /* a creation-time install (core/deps/) must not call back */
        s->deps_op = NULL;
    }
    free(s->end_reason);
    s->end_reason = xstrdup(reason);
    s->ended_at = rb_now_ms();

    while (s->queue_head != NULL) {
        execution *ex = s->queue_head;
        s->queue_head = ex->next;
        ex->next = NULL;
        s->queued--;
        ex->s = NULL; /* the session is going away; finishing must not touch it */
        execution_fail(ex, "cancelled", "SessionEnded", reason, 0, NULL);
    }
    s->queue_tail = NULL;
    if (s->running != NULL) {
        execution *ex = s->running;
        s->running = NULL;
        ex->s = NULL;
        execution_fail(ex, "error", "SessionEnded", reason, 1, reason);
    }
    process_session_end(s, reason);
    if (s->sb != NULL) {
        sandbox_close(s->sb, 1);
        s->sb = NULL;
    } else if (s->container_id != NULL) {
        removal_start(c, s->container_id, 0);
    }
    egress_close(c, s->id); /* its proxy, then its network once the sandbox has left it */
    usage_forget(c, s->id); /* its samples */
    core__pause_session_end(s, reason);
    if (s->kept_volume != NULL) { /* hibernated: its files go with it */
        workspace_drop(c, s->kept_volume);
        free(s->kept_volume);
        s->kept_volume = NULL;
    }
    s->pause = PAUSE_NONE;
    session_persist(s);
    map_del(&c->sessions, s->id);
    if (s->create_op != NULL) {
        /* A create still in flight: sandbox.c reports through the ready callback, which
         * finds the session gone; answer the caller now. */
        core_op *op = s->create_op;
        s->create_op = NULL;
        if (!op->cancelled)
            op->cb(op->data, RB_EUNAVAILABLE, reason, NULL);
        free(op);
    }
    session_free(s);
}

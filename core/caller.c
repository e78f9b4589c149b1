/*
 * caller.c: who may see what, and how much one API key may hold (core/core.h, "Callers"): the
 * ownership checks the entry points make on a live session or execution, or on a stored
 * document, before they answer (another key's is RB_ENOTFOUND, like an unknown id), and the
 * quotas of a key on live sessions and on queued and running executions. Not here: mapping a
 * request to its caller (server/auth.h) and the entry points themselves (core.c and the other
 * files of core/).
 */
#include <string.h>

#include "core/internal.h"

int core_caller_owns(const core_caller *who, const char *owner)
{
    return who == NULL || who->role != CORE_ROLE_USER || strcmp(who->owner, owner ? owner : "") == 0;
}

session *core__session_of(rb_core *c, const core_caller *who, const char *session_id)
{
    session *s = map_get(&c->sessions, session_id);
    return s != NULL && core_caller_owns(who, s->owner) ? s : NULL;
}

int core__session_ended(rb_core *c, const core_caller *who, const char *session_id, rb_err e, char *err)
{
    json_t *doc = NULL;
    if (map_get(&c->sessions, session_id) != NULL || core__stored_session(c, who, session_id, &doc, NULL) != RB_OK)
        return 0;
    const char *status = json_string_value(json_object_get(doc, "status"));
    const char *reason = json_string_value(json_object_get(doc, "end_reason"));
    char when[40] = "";
    int64_t ended = json_integer_value(json_object_get(doc, "ended_at"));
    if (ended > 0)
        rb_time_format(ended, when, sizeof(when));
    /* most reasons of a dead sandbox end with that advice already */
    int advised = reason != NULL && strstr(reason, "create a new session") != NULL;
    rb_fail(e, err, "session '%.64s' has ended (%s%s%s): %.400s%s", session_id, status ? status : "ended",
            when[0] ? " at " : "", when, reason ? reason : "no reason was recorded",
            advised ? "" : "; create a new session with POST /sessions");
    json_decref(doc);
    return 1;
}

session *core__live_session(rb_core *c, const core_caller *who, const char *session_id, char *err)
{
    session *s = core__session_of(c, who, session_id);
    if (s == NULL && !core__session_ended(c, who, session_id, RB_ENOTFOUND, err))
        rb_fail(RB_ENOTFOUND, err, "no live session with id '%.64s'; create one with POST /sessions", session_id);
    return s;
}

execution *core__execution_of(rb_core *c, const core_caller *who, const char *request_id)
{
    execution *ex = map_get(&c->executions, request_id);
    return ex != NULL && core_caller_owns(who, ex->owner) ? ex : NULL;
}

int core__doc_visible(const core_caller *who, json_t *doc)
{
    return core_caller_owns(who, json_string_value(json_object_get(doc, "owner")));
}

/* A stored session document of who's (RB_ENOTFOUND for another key's, like an unknown id). */
rb_err core__stored_session(rb_core *c, const core_caller *who, const char *session_id, json_t **doc, char *err)
{
    rb_err e = store_session_get(c->st, session_id, doc, err);
    if (e == RB_OK && !core__doc_visible(who, *doc)) {
        json_decref(*doc);
        *doc = NULL;
        e = RB_ENOTFOUND;
    }
    return e;
}

/* The quota of who's key on live sessions (RB_EQUOTA at its limit). */
rb_err core__check_session_quota(rb_core *c, const core_caller *who, char *err)
{
    if (who == NULL || who->max_sessions <= 0)
        return RB_OK;
    size_t pos = 0;
    session *s;
    int n = 0;
    while ((s = map_next(&c->sessions, &pos)) != NULL)
        n += strcmp(s->owner, who->owner) == 0;
    if (n >= who->max_sessions)
        return rb_fail(RB_EQUOTA, err,
                       "the API key '%s' already has %d live sessions, its limit (sessions= in the api-keys file); "
                       "delete sessions it no longer needs (DELETE /sessions/{id}) or ask the operator to raise it",
                       who->owner, n);
    return RB_OK;
}

/* The quota of who's key on queued + running executions (RB_EQUOTA at its limit). */
rb_err core__check_execution_quota(rb_core *c, const core_caller *who, char *err)
{
    if (who == NULL || who->max_executions <= 0)
        return RB_OK;
    size_t pos = 0;
    execution *ex;
    int n = 0;
    while ((ex = map_next(&c->executions, &pos)) != NULL)
        n += strcmp(ex->owner, who->owner) == 0;
    if (n >= who->max_executions)
        return rb_fail(RB_EQUOTA, err,
                       "the API key '%s' already has %d executions queued or running, its limit (executions= in the "
                       "api-keys file); wait for one to finish or cancel one (POST /execute/{id}/cancel)",
                       who->owner, n);
    return RB_OK;
}

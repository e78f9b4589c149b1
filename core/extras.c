/*
 * extras.c: what a protocol keeps with a live session beside the public session object (its
 * extras, by name) and a session's deadline, the moment it ends whatever it is doing (E2B's
 * sandbox timeout). Both are stored in the session's document so that they survive a restart.
 * It does not interpret the extras: their meaning belongs to the protocol that set them.
 */
#include <stdio.h>
#include <string.h>

#include "core/internal.h"

rb_err core_session_extra(rb_core *c, const core_caller *who, const char *session_id, const char *name, json_t **out,
                          char *err)
{
    session *s = core__live_session(c, who, session_id, err);
    if (s == NULL)
        return RB_ENOTFOUND;
    json_t *v = s->extras != NULL ? json_object_get(s->extras, name) : NULL;
    *out = v != NULL ? json_incref(v) : NULL;
    return RB_OK;
}

rb_err core_session_set_extra(rb_core *c, const core_caller *who, const char *session_id, const char *name, json_t *value,
                              char *err)
{
    session *s = core__live_session(c, who, session_id, err);
    if (s == NULL)
        return RB_ENOTFOUND;
    if (value == NULL) {
        if (s->extras != NULL)
            json_object_del(s->extras, name);
    } else {
        if (s->extras == NULL)
            s->extras = json_object();
        json_object_set_new(s->extras, name, json_deep_copy(value));
    }
    session_persist(s);
    return RB_OK;
}

rb_err core_session_set_deadline(rb_core *c, const core_caller *who, const char *session_id, int64_t deadline_ms,
                                 char *err)
{
    session *s = core__live_session(c, who, session_id, err);
    if (s == NULL)
        return RB_ENOTFOUND;
    s->deadline = deadline_ms > 0 ? deadline_ms : 0;
    /* what a resume gives it again (session_pause.c: E2B resumes with the sandbox's timeout) */
    s->deadline_span = s->deadline > 0 ? s->deadline - rb_now_ms() : 0;
    session_persist(s);
    return RB_OK;
}

rb_err core_session_set_deadline_action(rb_core *c, const core_caller *who, const char *session_id,
                                        const char *action, char *err)
{
    session *s = core__live_session(c, who, session_id, err);
    if (s == NULL)
        return RB_ENOTFOUND;
    if (action == NULL || strcmp(action, "end") == 0)
        s->deadline_pause = PAUSE_NONE;
    else if (strcmp(action, "suspend") == 0)
        s->deadline_pause = PAUSE_SUSPENDED;
    else if (strcmp(action, "hibernate") == 0)
        s->deadline_pause = PAUSE_HIBERNATED;
    else
        return rb_fail(RB_EINVAL, err, "a deadline's action is end, suspend or hibernate");
    session_persist(s);
    return RB_OK;
}

rb_err core_session_deadline(rb_core *c, const core_caller *who, const char *session_id, int64_t *deadline_ms, char *err)
{
    session *s = core__live_session(c, who, session_id, err);
    if (s == NULL)
        return RB_ENOTFOUND;
    *deadline_ms = s->deadline;
    return RB_OK;
}

void core__end_past_deadline(rb_core *c, int64_t now)
{
    size_t pos = 0;
    session *s;
    while ((s = map_next(&c->sessions, &pos)) != NULL) {
        if (s->deadline <= 0 || now < s->deadline || s->create_op != NULL)
            continue;
        if (s->deadline_pause != PAUSE_NONE) { /* E2B's auto-pause: paused instead (session_pause.c) */
            core__pause_for_deadline(s);
            continue;
        }
        session_end(s, "ended", "its timeout passed (the deadline set when it was created or with set_timeout); "
                                "its sandbox was removed");
    }
}

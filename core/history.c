/*
 * history.c: a session's executions, oldest first, as results (core_session_executions,
 * core/core.h): what the console's session page and a caller that lost its request ids read.
 */
#include "core/internal.h"

#define HISTORY_DEFAULT 50
#define HISTORY_MAX 500

rb_err core_session_executions(rb_core *c, const core_caller *who, const char *session_id, int limit, json_t **out,
                               char *err)
{
    *out = NULL;
    if (limit == 0)
        limit = HISTORY_DEFAULT;
    if (limit < 1 || limit > HISTORY_MAX)
        return rb_fail(RB_EINVAL, err, "'limit' is 1 to %d executions (the newest; %d when absent)", HISTORY_MAX,
                       HISTORY_DEFAULT);
    json_t *view = NULL; /* the session as who may see it, live or ended (404 otherwise) */
    rb_err e = core_session_get(c, who, session_id, &view, err);
    if (e != RB_OK)
        return e;
    json_decref(view);
    json_t *docs = NULL;
    if ((e = store_execution_list(c->st, session_id, limit, &docs, err)) != RB_OK)
        return e;
    json_t *list = json_array();
    size_t i;
    json_t *doc;
    json_array_foreach(docs, i, doc)
    {
        /* one still queued or running is live: its stored row may be behind */
        execution *ex = core__execution_of(c, who, json_string_value(json_object_get(doc, "request_id")));
        json_t *now = ex != NULL ? execution_to_doc(ex) : json_incref(doc);
        json_array_append_new(list, execution_doc_result_api(now));
        json_decref(now);
    }
    json_decref(docs);
    *out = json_pack("{s:s, s:o}", "session_id", session_id, "executions", list);
    return RB_OK;
}

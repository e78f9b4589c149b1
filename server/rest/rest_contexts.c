/*
 * rest_contexts.c: GET /sessions/{id}/contexts (the session's contexts, its default ones
 * first), POST /sessions/{id}/contexts ({language?, cwd?}: 201 with the new context) and
 * DELETE /sessions/{id}/contexts/{context} (204), each one call of core's contexts API.
 */
#include "server/rest/rest_contexts.h"

#include "core/core.h"

static int answer(http_call *call, rb_err e, const char *msg, json_t *out, int status)
{
    if (e != RB_OK)
        http_send_error(call->req, e, msg);
    else if (out == NULL)
        http_send_no_content(call->req);
    else
        http_send_json(call->req, status, out);
    json_decref(out);
    return 0;
}

int rest_contexts_list(http_call *call)
{
    char err[RB_ERR_LEN];
    json_t *list = NULL, *out = NULL;
    rb_err e = core_context_list(call->core, call->who, call->params[0], &list, err);
    if (e == RB_OK)
        out = json_pack("{s:o}", "contexts", list);
    return answer(call, e, err, out, 200);
}

int rest_context_create(http_call *call)
{
    char err[RB_ERR_LEN];
    json_t *body = NULL, *out = NULL;
    rb_err e = http_read_json(call->req, call->cfg->max_body, 1, &body, err);
    if (e == RB_OK && body == NULL)
        body = json_object(); /* no body: a Python context in the sandbox's working directory */
    if (e == RB_OK)
        e = core_context_create(call->core, call->who, call->params[0], body, &out, err);
    json_decref(body);
    return answer(call, e, err, out, 201);
}

int rest_context_delete(http_call *call)
{
    char err[RB_ERR_LEN];
    rb_err e = core_context_remove(call->core, call->who, call->params[0], call->params[1], err);
    return answer(call, e, err, NULL, 204);
}

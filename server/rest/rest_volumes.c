/*
 * rest_volumes.c: POST /volumes (201 with the volume), GET /volumes, GET /volumes/{id} and
 * DELETE /volumes/{id} (204), each a call of core/'s volumes API (docs/data.md). A creation or
 * deletion waits for the engine; its context lives in req->pool and is detached when the
 * request goes away first.
 */
#include "server/rest/rest_volumes.h"

#include <stdlib.h>

#include "base/mem.h"

/* A call that waits for the engine: the wait is on the heap (core calls back once, whatever
 * happens), tied to the request by a hook in req->pool that the pool's end unties. */
typedef struct vol_hook vol_hook;
typedef struct vol_wait {
    h2o_req_t *req; /* NULL once the request went away */
    int status;
    vol_hook *hook;
} vol_wait;
struct vol_hook {
    vol_wait *w;
};

static void hook_dispose(void *p)
{
    vol_hook *h = p;
    if (h->w != NULL) { /* the client went first: core's call goes on, its answer is dropped */
        h->w->req = NULL;
        h->w->hook = NULL;
    }
}

static void on_done(void *data, rb_err e, const char *msg, json_t *body)
{
    vol_wait *w = data;
    if (w->req != NULL) {
        w->hook->w = NULL;
        if (e != RB_OK)
            http_send_error(w->req, e, msg);
        else if (w->status == 204)
            http_send_no_content(w->req);
        else
            http_send_json(w->req, w->status, body);
    }
    json_decref(body);
    free(w);
}

static vol_wait *wait_new(http_call *call, int status)
{
    vol_wait *w = xcalloc(1, sizeof(*w));
    w->req = call->req;
    w->status = status;
    w->hook = h2o_mem_alloc_shared(&call->req->pool, sizeof(*w->hook), hook_dispose);
    w->hook->w = w;
    return w;
}

/* A call that failed at once: its wait is untied and freed. */
static void wait_drop(vol_wait *w)
{
    w->hook->w = NULL;
    free(w);
}

static int sync_answer(http_call *call, rb_err e, const char *msg, json_t *out)
{
    if (e != RB_OK)
        http_send_error(call->req, e, msg);
    else
        http_send_json(call->req, 200, out);
    json_decref(out);
    return 0;
}

int rest_volume_create(http_call *call)
{
    char err[RB_ERR_LEN];
    json_t *body = NULL;
    rb_err e = http_read_json(call->req, call->cfg->max_body, 0, &body, err);
    if (e != RB_OK)
        return sync_answer(call, e, err, NULL);
    vol_wait *w = wait_new(call, 201);
    e = core_volume_create(call->core, call->who, body, on_done, w, err);
    json_decref(body);
    if (e != RB_OK) {
        wait_drop(w);
        return sync_answer(call, e, err, NULL);
    }
    return 0;
}

int rest_volume_list(http_call *call)
{
    char err[RB_ERR_LEN];
    json_t *out = NULL;
    rb_err e = core_volume_list(call->core, call->who, &out, err);
    return sync_answer(call, e, err, out);
}

int rest_volume_get(http_call *call)
{
    char err[RB_ERR_LEN];
    json_t *out = NULL;
    rb_err e = core_volume_get(call->core, call->who, call->params[0], &out, err);
    return sync_answer(call, e, err, out);
}

int rest_volume_delete(http_call *call)
{
    char err[RB_ERR_LEN];
    vol_wait *w = wait_new(call, 204);
    rb_err e = core_volume_delete(call->core, call->who, call->params[0], on_done, w, err);
    if (e != RB_OK) {
        wait_drop(w);
        return sync_answer(call, e, err, NULL);
    }
    return 0;
}

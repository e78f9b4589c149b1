/*
 * e2b_volumes.c: E2B's volumes on runbox's own (core_volume_*; docs/e2b.md "Volumes"):
 *
 *  - the control plane of the SDK's Volume class: POST /volumes (Volume.create: 201 with E2B's
 *    VolumeAndToken), GET /volumes (Volume.list: a list of E2B's Volume), GET /volumes/{id}
 *    (Volume.get_info, Volume.connect: VolumeAndToken; 404, which the SDK raises as
 *    VolumeNotFoundException) and DELETE /volumes/{id} (Volume.destroy: 204; 404 reads as
 *    False). {id} is a runbox volume id or name; a volume belongs to the key that made it.
 *  - a create body's volumeMounts (Sandbox.create(volume_mounts=...)) as execution_options.mounts
 *    items {"volume", "path"}, beside the shares of metadata["runbox.mounts"]; get_info shows them.
 *  - E2B's volume content API (/volumecontent/{id}/file, /dir, /path: Volume.read_file,
 *    write_file, list, make_dir, get_info(path), update_metadata, remove), which runbox does not
 *    offer: 501 naming the alternative, a sandbox that mounts the volume. The SDK sends those
 *    calls to E2B_VOLUME_API_URL, else to https://api.<domain>; the domain of runboxd's answers
 *    (VOLUME_DOMAIN) never resolves, so that without the variable they fail on the client and
 *    nothing of the volume goes to E2B's cloud.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/e2b/e2b_internal.h"
#include "server/e2b/e2b_wire.h"

/* The token of a VolumeAndToken: E2B's volume content API takes it; runboxd has none, so it is
 * no secret, and says so where the SDK shows it. */
#define VOLUME_TOKEN "runboxd-has-no-volume-content-api"
/* The domain of a VolumeAndToken: the SDK sends content calls to https://api.<it> unless
 * E2B_VOLUME_API_URL is set (RFC 2606: .invalid never resolves). */
#define VOLUME_DOMAIN "runboxd-has-no-volume-content-api.invalid"

/* E2B's VolumeAndToken (token 1) or Volume (0) of a runbox volume object (borrowed). New reference. */
static json_t *volume_object(json_t *v, int token)
{
    const char *id = json_string_value(json_object_get(v, "volume_id"));
    const char *name = json_string_value(json_object_get(v, "name"));
    json_t *o = json_pack("{s:s, s:s}", "volumeID", id ? id : "", "name", name ? name : "");
    if (token) {
        json_object_set_new(o, "token", json_string(VOLUME_TOKEN));
        json_object_set_new(o, "domain", json_string(VOLUME_DOMAIN));
    }
    return o;
}

/* Answers core's refusal of a call on volume ref (deleting: of its deletion). */
static void volume_fail(h2o_req_t *req, const char *ref, int deleting, rb_err e, const char *msg)
{
    char text[RB_ERR_LEN];
    if (e == RB_ENOTFOUND) {
        snprintf(text, sizeof(text), "volume %.80s not found", ref);
        e2b__api_error(req, 404, text);
    } else if (e == RB_ECONFLICT && deleting) { /* sessions mount it: what that means to E2B's user */
        snprintf(text, sizeof(text), "%.380s; through E2B: kill the sandboxes that mount it (a sandbox's id is its "
                                     "session's)",
                 msg);
        e2b__api_error(req, 409, text);
    } else {
        e2b__api_fail(req, e, msg);
    }
}

/* ---- a call that waits for the engine ------------------------------------------------------- */

/* Core calls back once, whatever happens, maybe after the request went away: the wait is on the
 * heap, tied to the request by a hook in its pool whose dispose unties it. */
typedef struct vol_hook vol_hook;
typedef struct vol_wait {
    h2o_req_t *req; /* NULL once the request went away */
    vol_hook *hook;
    char *ref;      /* the volume asked for (a delete's 404) */
    int status;     /* 201 (create) or 204 (delete) */
} vol_wait;
struct vol_hook {
    vol_wait *w;
};

static void hook_dispose(void *p)
{
    vol_hook *h = p;
    if (h->w != NULL) { /* the client went first: the call goes on, its answer is dropped */
        h->w->req = NULL;
        h->w->hook = NULL;
    }
}

static vol_wait *wait_new(http_call *call, const char *ref, int status)
{
    vol_wait *w = xcalloc(1, sizeof(*w));
    w->req = call->req;
    w->ref = xstrdup(ref);
    w->status = status;
    w->hook = h2o_mem_alloc_shared(&call->req->pool, sizeof(*w->hook), hook_dispose);
    w->hook->w = w;
    return w;
}

static void wait_free(vol_wait *w)
{
    if (w->hook != NULL)
        w->hook->w = NULL;
    free(w->ref);
    free(w);
}

static void on_done(void *data, rb_err e, const char *msg, json_t *body)
{
    vol_wait *w = data;
    if (w->req != NULL) {
        if (e != RB_OK) {
            volume_fail(w->req, w->ref, w->status == 204, e, msg);
        } else if (w->status == 204) {
            http_send_no_content(w->req);
        } else {
            json_t *o = volume_object(body, 1);
            http_send_json(w->req, w->status, o);
            json_decref(o);
        }
    }
    json_decref(body);
    wait_free(w);
}

/* ---- the control plane ---------------------------------------------------------------------- */

int e2b__volume_create(http_call *call)
{
    char err[RB_ERR_LEN], msg[RB_ERR_LEN];
    json_t *body = NULL, *name, *v;
    const char *key;
    if (!e2b__authorised_body(call, &body))
        return 0;
    name = json_object_get(body, "name");
    if (!json_is_string(name)) {
        e2b__api_error(call->req, 400, "name: required, the volume's name (a-z, 0-9, '_' and '-', at most 63)");
        goto done;
    }
    json_object_foreach (body, key, v)
        if (strcmp(key, "name") != 0) {
            snprintf(msg, sizeof(msg), "%.60s: not a field of E2B's new volume (name)", key);
            e2b__api_error(call->req, 400, msg);
            goto done;
        }
    vol_wait *w = wait_new(call, json_string_value(name), 201);
    rb_err e = core_volume_create(call->core, call->who, body, on_done, w, err);
    if (e != RB_OK) {
        wait_free(w);
        e2b__api_fail(call->req, e, err);
    }
done:
    json_decref(body);
    return 0;
}

int e2b__volume_list(http_call *call)
{
    char err[RB_ERR_LEN];
    json_t *out = NULL, *v;
    size_t i;
    if (!e2b__authorised(call))
        return 0;
    rb_err e = core_volume_list(call->core, call->who, &out, err);
    if (e != RB_OK) {
        e2b__api_fail(call->req, e, err);
        return 0;
    }
    json_t *list = json_array();
    json_array_foreach(json_object_get(out, "volumes"), i, v) json_array_append_new(list, volume_object(v, 0));
    http_send_json(call->req, 200, list);
    json_decref(list);
    json_decref(out);
    return 0;
}

int e2b__volume_get(http_call *call)
{
    char err[RB_ERR_LEN];
    json_t *out = NULL;
    if (!e2b__authorised(call))
        return 0;
    rb_err e = core_volume_get(call->core, call->who, call->params[0], &out, err);
    if (e != RB_OK) {
        volume_fail(call->req, call->params[0], 0, e, err);
        return 0;
    }
    json_t *o = volume_object(out, 1);
    http_send_json(call->req, 200, o);
    json_decref(o);
    json_decref(out);
    return 0;
}

int e2b__volume_delete(http_call *call)
{
    char err[RB_ERR_LEN];
    if (!e2b__authorised(call))
        return 0;
    vol_wait *w = wait_new(call, call->params[0], 204);
    rb_err e = core_volume_delete(call->core, call->who, call->params[0], on_done, w, err);
    if (e != RB_OK) {
        wait_free(w);
        volume_fail(call->req, call->params[0], 1, e, err);
    }
    return 0;
}

/* ---- volumes in sandboxes ------------------------------------------------------------------- */

int e2b__mounts_create(http_call *call, json_t *body, json_t **out)
{
    char err[RB_ERR_LEN];
    json_t *vols = NULL, *mounts = NULL;
    *out = NULL;
    if (e2b_volume_mounts_map(json_object_get(body, "volumeMounts"), &vols, err) != RB_OK) {
        e2b__api_error(call->req, 400, err);
        return -1;
    }
    /* runboxd's shared folders (docs/data.md): E2B has no such option, so a metadata entry holds
     * execution_options.mounts as JSON text, which core checks; volumeMounts join its list */
    const char *text = json_string_value(json_object_get(json_object_get(body, "metadata"), "runbox.mounts"));
    if (text != NULL)
        mounts = json_loads(text, JSON_REJECT_DUPLICATES, NULL);
    if (text != NULL && (mounts == NULL || (vols != NULL && !json_is_array(mounts)))) {
        json_decref(mounts);
        json_decref(vols);
        e2b__api_error(call->req, 400, "metadata[\"runbox.mounts\"]: must be JSON text of a list of mounts, e.g. "
                                       "[{\"share\": \"data\", \"path\": \"/workspace/data\"}] (docs/data.md)");
        return -1;
    }
    if (vols != NULL && mounts == NULL)
        mounts = json_array();
    if (vols != NULL)
        json_array_extend(mounts, vols);
    json_decref(vols);
    *out = mounts;
    return 0;
}

void e2b__mounts_info(json_t *o, json_t *session)
{
    json_t *mounts = json_object_get(json_object_get(session, "execution_options"), "mounts"), *m;
    json_t *list = json_array();
    size_t i;
    json_array_foreach(mounts, i, m)
    {
        json_t *name = json_object_get(m, "volume"), *path = json_object_get(m, "path");
        if (json_is_string(name) && json_is_string(path))
            json_array_append_new(list, json_pack("{s:O, s:O}", "name", name, "path", path));
    }
    json_object_set_new(o, "volumeMounts", list);
}

/* ---- the volume content API ----------------------------------------------------------------- */

int e2b__volume_content(http_call *call)
{
    e2b__api_error(call->req, 501,
                   "runboxd does not serve E2B's volume content API (Volume.read_file, write_file, list, make_dir, "
                   "get_info(path), update_metadata, remove): read and write a volume's files through a sandbox "
                   "that mounts it, e.g. Sandbox.create(volume_mounts={\"/workspace/data\": volume}) then "
                   "sbx.files.write(\"/home/user/data/a.txt\", ...) or code that opens /workspace/data/a.txt "
                   "(docs/e2b.md, Volumes)");
    return 0;
}

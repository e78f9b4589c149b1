/*
 * packages.c: what the sandbox image has preinstalled, for GET /packages and the MCP tool
 * (core_packages in core/core.h). One one-shot container (core/oneshot.h) without network,
 * capabilities or user code lists the image's Python distributions with importlib.metadata;
 * the answer is kept per image id, so that it is listed again only after the image changed.
 * It does not install anything (core/deps.c does) and does not see a session's own packages.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "core/oneshot.h"

#define LISTING_TIMEOUT_MS (2L * 60 * 1000)

/* Prints {python, packages: [{name, version}]} sorted by name, one entry per distribution. */
static const char packages_py[] =
    "import json,sys,importlib.metadata as m\n"
    "seen={}\n"
    "for d in m.distributions():\n"
    "  n=d.metadata['Name']\n"
    "  if n and n.lower() not in seen: seen[n.lower()]={'name':n,'version':d.version}\n"
    "print(json.dumps({'python':sys.version.split()[0],"
    "'packages':sorted(seen.values(),key=lambda p:p['name'].lower())}))\n";

/* {image_id, answer} of the last listing; one process serves one image, so one entry does. */
static json_t *listing_cache;

/* One core_packages call in flight. */
typedef struct listing {
    rb_core *c;
    core_op *op;
    char *image_id;
} listing;

/* Answers (unless cancelled) and frees l; body is handed over. */
static void listing_finish(listing *l, rb_err e, const char *msg, json_t *body)
{
    if (!l->op->cancelled)
        l->op->cb(l->op->data, e, e == RB_OK ? NULL : msg, body);
    else
        json_decref(body);
    free(l->op);
    free(l->image_id);
    free(l);
}

static void on_listed(void *data, rb_err err, const char *msg, int exit_code, rb_buf *out)
{
    listing *l = data;
    char m2[RB_ERR_LEN];
    if (err != RB_OK) {
        listing_finish(l, err, msg, NULL);
        return;
    }
    json_t *doc = json_loadb(out[1].data ? out[1].data : "", out[1].len, 0, NULL);
    if (exit_code != 0 || !json_is_array(json_object_get(doc, "packages"))) {
        snprintf(m2, sizeof(m2), "listing the image's packages failed (exit code %d): %.200s", exit_code,
                 out[2].data ? out[2].data : "");
        json_decref(doc);
        listing_finish(l, RB_EIO, m2, NULL);
        return;
    }
    json_object_set_new(doc, "image", json_string(l->c->cfg->image));
    json_object_set_new(doc, "image_id", json_string(l->image_id));
    json_decref(listing_cache);
    listing_cache = json_pack("{s:s, s:O}", "image_id", l->image_id, "answer", doc);
    listing_finish(l, RB_OK, NULL, doc);
}

static void on_image_inspected(void *data, rb_err err, const char *errmsg, int status, json_t *body)
{
    listing *l = data;
    char msg[RB_ERR_LEN];
    (void)status;
    const char *id = json_string_value(json_object_get(body, "Id"));
    if (err != RB_OK || id == NULL) {
        snprintf(msg, sizeof(msg), "cannot inspect the sandbox image '%s': %s", l->c->cfg->image,
                 errmsg ? errmsg : "no id");
        listing_finish(l, err == RB_ENOTFOUND || err == RB_OK ? RB_EUNAVAILABLE : err, msg, NULL);
        return;
    }
    l->image_id = xstrdup(id);
    const char *cached = json_string_value(json_object_get(listing_cache, "image_id"));
    if (cached != NULL && strcmp(cached, id) == 0) {
        listing_finish(l, RB_OK, NULL, json_deep_copy(json_object_get(listing_cache, "answer")));
        return;
    }
    json_t *cfg = json_pack("{s:s, s:[s,s,s,s], s:s, s:{s:s, s:s}, s:b, s:o}", "Image", l->c->cfg->image, "Cmd",
                            "python3", "-I", "-c", packages_py, "User", "1000", "Labels", "runbox.instance",
                            l->c->instance, "runbox.managed", "1", "NetworkDisabled", 1, "HostConfig",
                            oneshot_host_config(NULL));
    /* reading metadata as uid 1000 needs none of the capabilities an installer keeps */
    json_array_clear(json_object_get(json_object_get(cfg, "HostConfig"), "CapAdd"));
    rb_err e = oneshot_run(l->c, "packages", cfg, LISTING_TIMEOUT_MS, on_listed, l, msg);
    json_decref(cfg);
    if (e != RB_OK)
        listing_finish(l, e, msg, NULL);
}

rb_err core_packages(rb_core *c, core_cb cb, void *data, core_op **handle, char *err)
{
    if (!c->docker_ok)
        return rb_fail(RB_EUNAVAILABLE, err, "Docker is not reachable (%s)", c->docker_error);
    listing *l = xcalloc(1, sizeof(*l));
    l->c = c;
    l->op = xcalloc(1, sizeof(*l->op));
    l->op->cb = cb;
    l->op->data = data;
    rb_err e = docker_image_inspect(c->dk, c->cfg->image, on_image_inspected, l, err);
    if (e != RB_OK) {
        free(l->op);
        free(l);
        return e;
    }
    if (handle != NULL)
        *handle = l->op;
    return RB_OK;
}

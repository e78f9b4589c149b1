/*
 * workspace.c: a session's /workspace copied out of its sandbox into a kept disk volume, back
 * into a new sandbox, or into another session's sandbox (core/workspace/workspace.h). Each copy
 * is a chain of backend calls: the workspace volumes' names, the kept volume's create, then one
 * one-shot container with both mounted that runs `cp -a` and reports the bytes copied.
 *
 * The copier is root with only CAP_CHOWN, CAP_FOWNER and CAP_DAC_OVERRIDE (to keep owners and
 * modes, and to read a file its owner made unreadable: nothing written is lost), no network,
 * a read-only root and no-new-privileges; its source is mounted read-only. `cp -a` never follows
 * a link of the source, and the destination is a volume of its own, so a link made by the
 * session's code points into the copier's read-only file system at worst.
 */
#include "core/workspace/workspace.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "base/log.h"
#include "base/mem.h"
#include "core/deps/oneshot.h"

/* A copy of a 1 GB workspace takes seconds; more than this is an engine that stopped answering. */
#define COPY_TIMEOUT_MS (10L * 60 * 1000)
#define WORKSPACE_PATH "/workspace"
/* The copier's own memory beside the files it writes into a memory-backed workspace. */
#define COPY_MEMORY_MARGIN (256LL * 1024 * 1024)

typedef enum { COPY_KEEP, COPY_RESTORE, COPY_FORK } copy_kind;

typedef struct copy {
    rb_core *c;
    copy_kind kind;
    workspace_cb cb;
    void *data;
    char session_id[RB_ID_LEN];
    char *from, *to;          /* containers (KEEP: from; RESTORE: to; FORK: both) */
    char *from_vol, *to_vol;  /* the volumes the copier mounts */
    int made_volume;          /* KEEP: the kept volume exists (removed on failure) */
    int64_t room;             /* RESTORE, FORK: what the destination workspace holds at most */
} copy;

static void copy_free(copy *cp)
{
    free(cp->from);
    free(cp->to);
    free(cp->from_vol);
    free(cp->to_vol);
    free(cp);
}

void workspace_drop(rb_core *c, const char *volume)
{
    core_heart_drop_volume(c, volume, "kept workspace");
}

static void finish(copy *cp, rb_err err, const char *msg, int64_t bytes)
{
    core_heart_hold(cp->c, -1);
    if (err != RB_OK && cp->made_volume)
        workspace_drop(cp->c, cp->to_vol);
    cp->cb(cp->data, err, msg, err == RB_OK && cp->kind == COPY_KEEP ? cp->to_vol : NULL, bytes);
    copy_free(cp);
}

static void failed(copy *cp, rb_err err, const char *step, const char *msg)
{
    char text[RB_ERR_LEN];
    snprintf(text, sizeof(text), "could not %s: %.400s", step, msg ? msg : "no reason given");
    finish(cp, err, text, -1);
}

static void copied_cb(void *data, rb_err err, const char *msg, const backend_exec_result *r)
{
    copy *cp = data;
    if (err != RB_OK) {
        failed(cp, err, "copy the workspace", msg);
        return;
    }
    if (r->exit_code != 0) {
        char text[RB_ERR_LEN];
        snprintf(text, sizeof(text), "cp exited with %d%s: %.300s", r->exit_code,
                 r->exit_code == 137 ? " (killed: out of its memory?)" : "", r->err_len > 0 ? r->err : "no message");
        failed(cp, RB_EIO, "copy the workspace", text);
        return;
    }
    int64_t bytes = r->out_len > 0 ? strtoll(r->out, NULL, 10) : -1;
    finish(cp, RB_OK, NULL, bytes > 0 ? bytes : (bytes == 0 ? 0 : -1));
}

static void run_copier(copy *cp)
{
    static const char *const cmd[] = {"sh", "-c", "cp -a /from/. /to/ && " ONESHOT_BYTES_SH("/to"), NULL};
    static const char *const caps[] = {"CHOWN", "FOWNER", "DAC_OVERRIDE", NULL};
    char e2[RB_ERR_LEN];
    backend_volume vols[2] = {{cp->from_vol, NULL, "/from", 1}, {cp->to_vol, NULL, "/to", 0}};
    const backend_label labels[] = {{"runbox.instance", core_heart_instance(cp->c)},
                                    {"runbox.managed", "1"},
                                    {"runbox.copy-for", cp->session_id}};
    backend_spec spec;
    oneshot_spec_root(&spec, core_heart_settings(cp->c)->image, caps);
    spec.cmd = cmd;
    spec.labels = labels;
    spec.n_labels = 3;
    spec.volumes = vols;
    spec.n_volumes = 2;
    /* a memory-backed destination's pages are charged to the copier: room for all of it */
    if (cp->room > 0 && cp->room + COPY_MEMORY_MARGIN > spec.memory)
        spec.memory = cp->room + COPY_MEMORY_MARGIN;
    rb_err e = oneshot_run(cp->c, "copy", &spec, COPY_TIMEOUT_MS, copied_cb, cp, e2);
    if (e != RB_OK)
        failed(cp, e, "start the copier", e2);
}

static void next_step(copy *cp);

static void volume_made_cb(void *data, rb_err err, const char *msg)
{
    copy *cp = data;
    if (err != RB_OK) {
        failed(cp, err, "create the volume that keeps the workspace", msg);
        return;
    }
    cp->made_volume = 1;
    next_step(cp);
}

static void named_cb(void *data, rb_err err, const char *msg, const char *name)
{
    copy *cp = data;
    if (err != RB_OK) {
        failed(cp, err, "find the sandbox's workspace", msg);
        return;
    }
    if (cp->from_vol == NULL)
        cp->from_vol = xstrdup(name);
    else
        cp->to_vol = xstrdup(name);
    next_step(cp);
}

/* The volumes first (the source's, then the destination's or a new kept one), then the copy. */
static void next_step(copy *cp)
{
    char e2[RB_ERR_LEN];
    backend *be = core_heart_backend(cp->c);
    rb_err e = RB_OK;
    if (core_heart_closing(cp->c)) {
        failed(cp, RB_ECANCELED, "copy the workspace", "runboxd is stopping");
        return;
    }
    if (cp->from_vol == NULL) {
        e = backend_workspace_volume(be, cp->from, WORKSPACE_PATH, named_cb, cp, e2);
    } else if (cp->to_vol == NULL && cp->kind == COPY_KEEP) {
        /* a name of its own for each hibernation: a copy never lands in a volume an earlier one
         * left behind (a removal that failed), mixing old files into the kept ones */
        char raw[128], rnd[RB_ID_LEN];
        rb_random_id("", rnd, sizeof(rnd));
        snprintf(raw, sizeof(raw), "runbox-keep-%s-%.12s", cp->session_id, rnd);
        cp->to_vol = backend_pin(be, cp->from, raw);
        const backend_label labels[] = {{WORKSPACE_KEEP_LABEL, core_heart_instance(cp->c)},
                                        {WORKSPACE_SESSION_LABEL, cp->session_id},
                                        {"runbox.managed", "1"}};
        e = backend_volume_create(be, cp->to_vol, labels, 3, volume_made_cb, cp, e2);
    } else if (cp->to_vol == NULL) {
        e = backend_workspace_volume(be, cp->to, WORKSPACE_PATH, named_cb, cp, e2);
    } else {
        run_copier(cp);
        return;
    }
    if (e != RB_OK)
        failed(cp, e, "find the workspace volumes", e2);
}

static rb_err start(rb_core *c, copy_kind kind, const char *sid, const char *from, const char *from_vol,
                    const char *to, int64_t room, workspace_cb cb, void *data, char *err)
{
    if (core_heart_closing(c))
        return rb_fail(RB_ECANCELED, err, "runboxd is stopping");
    copy *cp = xcalloc(1, sizeof(*cp));
    cp->c = c;
    cp->kind = kind;
    cp->cb = cb;
    cp->data = data;
    snprintf(cp->session_id, sizeof(cp->session_id), "%s", sid ? sid : "");
    cp->from = from ? xstrdup(from) : NULL;
    cp->from_vol = from_vol ? xstrdup(from_vol) : NULL;
    cp->to = to ? xstrdup(to) : NULL;
    cp->room = room;
    core_heart_hold(c, 1);
    next_step(cp); /* reports through cb, also a failure of its first call */
    return RB_OK;
}

rb_err workspace_keep(rb_core *c, const char *session_id, const char *container, workspace_cb cb, void *data,
                      char *err)
{
    return start(c, COPY_KEEP, session_id, container, NULL, NULL, 0, cb, data, err);
}

rb_err workspace_restore(rb_core *c, const char *volume, const char *container, int64_t room, workspace_cb cb,
                         void *data, char *err)
{
    return start(c, COPY_RESTORE, "", NULL, volume, container, room, cb, data, err);
}

rb_err workspace_copy(rb_core *c, const char *from, const char *to, int64_t room, workspace_cb cb, void *data,
                      char *err)
{
    return start(c, COPY_FORK, "", from, NULL, to, room, cb, data, err);
}

/* ---- the sweep of kept volumes no session needs -------------------------------------------- */

typedef struct sweep {
    rb_core *c;
    workspace_wanted_fn wanted;
} sweep;

static void kept_listed_cb(void *data, rb_err err, const char *errmsg, const backend_sandbox_info *items, size_t n)
{
    sweep *sw = data;
    core_heart_hold(sw->c, -1);
    if (err != RB_OK) {
        if (err != RB_ECANCELED)
            rb_warn("cannot list kept workspaces: %s", errmsg);
        free(sw);
        return;
    }
    for (size_t i = 0; i < n; i++) {
        const char *sid = json_string_value(json_object_get(items[i].labels, WORKSPACE_SESSION_LABEL));
        if (sid != NULL && sw->wanted(sw->c, sid, items[i].id))
            continue;
        rb_info("removing kept workspace %.64s: no hibernated session needs it", items[i].id);
        workspace_drop(sw->c, items[i].id);
    }
    free(sw);
}

void workspace_sweep(rb_core *c, workspace_wanted_fn wanted)
{
    char label[96], e2[RB_ERR_LEN];
    snprintf(label, sizeof(label), "%s=%s", WORKSPACE_KEEP_LABEL, core_heart_instance(c));
    sweep *sw = xcalloc(1, sizeof(*sw));
    sw->c = c;
    sw->wanted = wanted;
    core_heart_hold(c, 1);
    if (backend_volume_list_unused(core_heart_backend(c), label, kept_listed_cb, sw, e2) != RB_OK) {
        core_heart_hold(c, -1);
        rb_warn("cannot list kept workspaces: %s", e2);
        free(sw);
    }
}

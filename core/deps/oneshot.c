/*
 * oneshot.c: one-shot helper containers (core/deps/oneshot.h) over backend_run, which creates,
 * starts, waits for, reads and removes them. Here: their names, the hardened spec they share,
 * and the wording of failures for the end user. It does not interpret the command's exit code
 * or output. The heart is reached only through core/heart.h.
 */
#include "core/deps/oneshot.h"

#include <stdio.h>
#include <stdlib.h>

#include "core/heart.h"

#define ONESHOT_MEMORY ((int64_t)1024 * 1024 * 1024)
#define ONESHOT_TMP ((int64_t)1024 * 1024 * 1024)
#define ONESHOT_PIDS 256

/* One run in flight. */
typedef struct oneshot {
    rb_core *c;
    oneshot_done_cb cb;
    void *data;
} oneshot;

static void on_run(void *data, rb_err err, const char *errmsg, const backend_exec_result *r)
{
    oneshot *o = data;
    char msg[RB_ERR_LEN];
    if (err == RB_ENOTFOUND) /* the backend's word for a missing image */
        snprintf(msg, sizeof(msg), "the image '%.200s' does not exist; build it with docker/build-images",
                 core_heart_settings(o->c)->image);
    else if (err != RB_OK)
        snprintf(msg, sizeof(msg), "helper container: %.480s", errmsg ? errmsg : "no detail");
    o->cb(o->data, err == RB_ENOTFOUND ? RB_EUNAVAILABLE : err, err == RB_OK ? NULL : msg, r);
    free(o);
}

rb_err oneshot_run(rb_core *c, const char *kind, const backend_spec *spec, long timeout_ms, oneshot_done_cb cb,
                   void *data, char *err)
{
    oneshot *o = xcalloc(1, sizeof(*o));
    o->c = c;
    o->cb = cb;
    o->data = data;
    char name[80], rnd[RB_ID_LEN];
    rb_random_id("", rnd, sizeof(rnd));
    snprintf(name, sizeof(name), "runbox-%s-%.16s", kind, rnd);
    rb_err e = backend_run(core_heart_backend(c), name, spec, timeout_ms, ONESHOT_OUTPUT_MAX, on_run, o, err);
    if (e != RB_OK)
        free(o);
    return e;
}

void oneshot_spec_init(backend_spec *spec, const char *image, const char *network)
{
    static const char *const cap_drop[] = {"ALL", NULL};
    static const char *const security_opt[] = {"no-new-privileges", NULL};
    static const backend_mount tmp = {"/tmp", ONESHOT_TMP, -1, -1, -1};
    *spec = (backend_spec){
        .image = image,
        .memory = ONESHOT_MEMORY,
        .pids_limit = ONESHOT_PIDS,
        .readonly_root = 1,
        .tmpfs = &tmp,
        .n_tmpfs = 1,
        .cap_drop = cap_drop,
        .security_opt = security_opt,
        .init = 1,
        .network = network,
        /* backend_run reads the output once the container has exited */
        .log_driver = "json-file",
    };
}

void oneshot_spec_root(backend_spec *spec, const char *image, const char *const *caps)
{
    oneshot_spec_init(spec, image, NULL);
    spec->user = "0:0";
    spec->cap_add = caps;
    spec->working_dir = "/tmp";
}

/*
 * multi_private.h: what the two files of the backend over several engines share:
 * multi.c (names, placement, the routed calls, construction) and multi_probe.c
 * (the probe of every engine with its image check, the listing of every engine's
 * sandboxes, the runtimes they offer). Nothing else includes it.
 */
#ifndef RB_CORE_BACKEND_MULTI_PRIVATE_H
#define RB_CORE_BACKEND_MULTI_PRIVATE_H

#include "core/backend/multi.h"

#define ENGINE_NAME_MAX 32
#define IMAGE_ID_MAX 96

typedef struct multi multi;

typedef struct engine {
    multi *m;
    char *name, *url;
    char *runtimes; /* the OCI runtimes it offers, "runc+runsc" */
    backend *be;
    int capacity;
    int pinged;   /* a probe has answered (or failed) */
    int up;       /* the last probe answered */
    int draining;
    int image_ok; /* -1 not known yet, 0 missing or another image, 1 the sandbox image */
    char image_id[IMAGE_ID_MAX];
    char error[RB_ERR_LEN]; /* why it is down or left out; "" when neither */
    char down_text[RB_ERR_LEN]; /* backend_engine_down's answer */
    char version[16];
    int sandboxes; /* placed by this runboxd, or found by the last listing of its instance */
} engine;

struct multi {
    engine *e;
    size_t n;
    char *image;
};

#define M(self) ((multi *)(self))

/** The name or id raw pinned to engine e: "ENGINE@raw" (a new heap string). */
char *multi__pin_name(const engine *e, const char *raw);

/* multi_probe.c: the ops of the same names. */
rb_err multi__ping(void *self, backend_ping_cb cb, void *data, char *err);
rb_err multi__list(void *self, const char *label, backend_list_cb cb, void *data, char *err);
rb_err multi__network_list(void *self, const char *label, backend_list_cb cb, void *data, char *err);
rb_err multi__volume_list_unused(void *self, const char *label, backend_list_cb cb, void *data, char *err);
int multi__offers(void *self, const char *runtime);
json_t *multi__runtimes(void *self);

#endif

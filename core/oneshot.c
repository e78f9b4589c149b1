/*
 * oneshot.c: one-shot helper containers (core/oneshot.h): the chain create -> start -> wait ->
 * logs -> remove on the loop, each step a Docker call whose callback starts the next, and the
 * hardened HostConfig they share. Whatever fails, a container that was created is removed
 * before the caller hears the outcome. It does not interpret the command's exit code or output.
 */
#include "core/oneshot.h"

#include <stdio.h>
#include <stdlib.h>

#include "core/internal.h"

#define ONESHOT_MEMORY ((json_int_t)1024 * 1024 * 1024)
#define ONESHOT_PIDS ((json_int_t)256)

/* One run in flight. */
typedef struct oneshot {
    rb_core *c;
    char *id; /* the container's, once created */
    long timeout_ms;
    int exit_code;
    rb_err err; /* the outcome so far, with its text in msg */
    char msg[RB_ERR_LEN];
    rb_buf out[3]; /* indexed by Docker's stream number: 1 stdout, 2 stderr */
    oneshot_done_cb cb;
    void *data;
} oneshot;

static void oneshot_free(oneshot *o)
{
    for (int i = 0; i < 3; i++)
        rb_buf_dispose(&o->out[i]);
    free(o->id);
    free(o);
}

static void report(oneshot *o)
{
    o->cb(o->data, o->err, o->err == RB_OK ? NULL : o->msg, o->exit_code, o->out);
    oneshot_free(o);
}

static void on_removed(void *data, rb_err err, const char *errmsg, int status, json_t *body)
{
    oneshot *o = data;
    (void)status;
    (void)body;
    if (err != RB_OK && err != RB_ENOTFOUND && err != RB_ECANCELED)
        rb_warn("container %.12s: could not remove it: %s", o->id, errmsg);
    if (o->err == RB_OK && err == RB_ECANCELED)
        o->err = rb_fail(RB_ECANCELED, o->msg, "runboxd is shutting down");
    report(o);
}

/* Removes the container (if it exists), then reports o's outcome. */
static void finish(oneshot *o)
{
    char err[RB_ERR_LEN];
    if (o->id == NULL || docker_container_remove(o->c->dk, o->id, on_removed, o, err) != RB_OK)
        report(o);
}

static void fail(oneshot *o, rb_err e, const char *what, const char *errmsg)
{
    o->err = e;
    snprintf(o->msg, sizeof(o->msg), "%.60s: %.440s", what, errmsg ? errmsg : "no detail");
    finish(o);
}

static void collect_frame(void *data, int stream, const char *buf, size_t len)
{
    oneshot *o = data;
    if (stream >= 1 && stream <= 2 && rb_buf_append(&o->out[stream], buf, len) != RB_OK) {
        /* keep the tail of stderr (pip's error is at the end) */
        rb_buf *b = &o->out[stream];
        size_t drop = b->len / 2;
        rb_buf_consume(b, drop);
        rb_buf_append(b, buf, len < b->max - b->len ? len : b->max - b->len);
    }
}

static void on_logs(void *data, rb_err err, const char *errmsg, int status, const char *body, size_t len)
{
    oneshot *o = data;
    (void)status;
    if (err == RB_OK) {
        docker_demux dm;
        docker_demux_init(&dm);
        docker_demux_feed(&dm, body, len, collect_frame, o);
    } else if (err != RB_ETOOBIG) {
        fail(o, err, "cannot read the helper container's output", errmsg);
        return;
    }
    finish(o);
}

static void on_exited(void *data, rb_err err, const char *errmsg, int status, json_t *body)
{
    oneshot *o = data;
    char e2[RB_ERR_LEN];
    (void)status;
    if (err != RB_OK) {
        fail(o, err, "the helper container did not finish", errmsg);
        return;
    }
    json_t *code = json_object_get(body, "StatusCode");
    o->exit_code = json_is_integer(code) ? (int)json_integer_value(code) : -1;
    if (docker_container_logs(o->c->dk, o->id, ONESHOT_OUTPUT_MAX * 2, on_logs, o, e2) != RB_OK)
        fail(o, RB_EIO, "cannot read the helper container's output", e2);
}

static void on_started(void *data, rb_err err, const char *errmsg, int status, json_t *body)
{
    oneshot *o = data;
    char e2[RB_ERR_LEN];
    (void)status;
    (void)body;
    if (err != RB_OK) {
        fail(o, err, "cannot start the helper container", errmsg);
        return;
    }
    if (docker_container_wait(o->c->dk, o->id, o->timeout_ms, on_exited, o, e2) != RB_OK)
        fail(o, RB_EIO, "cannot wait for the helper container", e2);
}

static void on_created(void *data, rb_err err, const char *errmsg, int status, json_t *body)
{
    oneshot *o = data;
    char e2[RB_ERR_LEN];
    (void)status;
    const char *id = json_string_value(json_object_get(body, "Id"));
    if (err != RB_OK || id == NULL) {
        if (err == RB_ENOTFOUND)
            snprintf(e2, sizeof(e2), "the image '%s' does not exist; build it with docker/build-images",
                     o->c->cfg->image);
        fail(o, err == RB_ENOTFOUND ? RB_EUNAVAILABLE : (err != RB_OK ? err : RB_EIO),
             "cannot create the helper container", err == RB_ENOTFOUND ? e2 : errmsg);
        return;
    }
    o->id = xstrdup(id);
    if (docker_container_start(o->c->dk, o->id, on_started, o, e2) != RB_OK)
        fail(o, RB_EIO, "cannot start the helper container", e2);
}

rb_err oneshot_run(rb_core *c, const char *kind, json_t *config, long timeout_ms, oneshot_done_cb cb, void *data,
                   char *err)
{
    oneshot *o = xcalloc(1, sizeof(*o));
    o->c = c;
    o->cb = cb;
    o->data = data;
    o->timeout_ms = timeout_ms;
    o->exit_code = -1;
    for (int i = 0; i < 3; i++)
        rb_buf_init(&o->out[i], ONESHOT_OUTPUT_MAX);
    char name[80], rnd[RB_ID_LEN];
    rb_random_id("", rnd, sizeof(rnd));
    snprintf(name, sizeof(name), "runbox-%s-%.16s", kind, rnd);
    rb_err e = docker_container_create(c->dk, name, config, on_created, o, err);
    if (e != RB_OK)
        oneshot_free(o);
    return e;
}

json_t *oneshot_host_config(const char *network)
{
    return json_pack("{s:s, s:I, s:I, s:I, s:b, s:[s], s:[s,s,s], s:[s], s:{s:s}, s:b, s:{s:s}}", "NetworkMode",
                     network ? network : "none", "Memory", ONESHOT_MEMORY, "MemorySwap", ONESHOT_MEMORY, "PidsLimit",
                     ONESHOT_PIDS, "ReadonlyRootfs", 1, "CapDrop", "ALL", "CapAdd", "CHOWN", "DAC_OVERRIDE", "FOWNER",
                     "SecurityOpt", "no-new-privileges", "Tmpfs", "/tmp", "rw,nosuid,nodev,size=1g", "Init", 1,
                     "LogConfig", "Type", "json-file");
}

/*
 * docker_exec.c: commands in a Docker sandbox, the part of the Docker backend
 * (core/backend/docker.c) that runs processes beside the runner: backend_exec (create, start with
 * the output in frames, then the exit code) and backend_exec_stream (the output as it comes, input,
 * pause, close), with the wait for an exec's exit code both share. Not here: containers, attach,
 * files and one-shot runs (docker.c).
 */
#include <stdlib.h>
#include <string.h>

#include "core/backend/docker.h"
#include "core/backend/docker_private.h"
#include "docker/docker.h"

#define EXEC_OUTPUT_MAX_DEFAULT (8u * 1024 * 1024)
/* How long backend_exec waits for a command whose output has ended to be reported exited. */
#define EXEC_EXIT_WAIT_MS 10000

/* ---- waiting for an exec's exit code ---------------------------------------------------------
 *
 * Docker ends an exec's output once the command's stdout and stderr are closed, and records its
 * exit a moment later (or much later: a command may close both and go on): an inspect right
 * after the output ended may still say Running. So the exit code is asked for again, 10 ms
 * later, then twice as long each time up to 1 s apart, until the command has exited or the
 * budget has passed. */

typedef void (*exit_cb)(void *data, rb_err err, const char *errmsg, int exit_code);

typedef struct exit_wait exit_wait;

struct exit_wait {
    backend_docker *bd;
    uv_timer_t *timer;  /* between two inspects */
    exit_cb cb;
    void *data;
    long budget_ms;     /* 0: no limit */
    long waited_ms;
    unsigned delay_ms;
    int in_flight;      /* an inspect awaits its answer */
    int cancelled;      /* exit_wait_cancel ran: no callback */
    struct exit_wait *prev, *next; /* every waiter, so that d_free can end those between inspects */
    char id[80];
};

static void exit_wait_answer_cb(void *data, rb_err err, const char *errmsg, int status, json_t *body);

static void exit_wait_free(exit_wait *w)
{
    if (w->prev != NULL)
        w->prev->next = w->next;
    else
        w->bd->waiters = w->next;
    if (w->next != NULL)
        w->next->prev = w->prev;
    if (w->timer != NULL)
        uv_close((uv_handle_t *)w->timer, (uv_close_cb)free);
    free(w);
}

static rb_err exit_wait_ask(exit_wait *w, char *err)
{
    rb_err e = docker_exec_inspect(w->bd->d, w->id, exit_wait_answer_cb, w, err);
    w->in_flight = e == RB_OK;
    return e;
}

static void exit_wait_tick(uv_timer_t *t)
{
    exit_wait *w = t->data;
    char msg[RB_ERR_LEN];
    if (exit_wait_ask(w, msg) != RB_OK) {
        w->cb(w->data, RB_EIO, msg, -1);
        exit_wait_free(w);
    }
}

/* bd is being freed: waiters between two inspects end now with RB_ECANCELED (those with an
 * inspect in flight hear it from the client). */
void backend_docker__exit_wait_drop(backend_docker *bd)
{
    for (exit_wait *w = bd->waiters, *next; w != NULL; w = next) {
        next = w->next;
        if (w->in_flight)
            continue;
        if (!w->cancelled)
            w->cb(w->data, RB_ECANCELED, "the Docker client is shutting down", -1);
        exit_wait_free(w);
    }
}

static void exit_wait_answer_cb(void *data, rb_err err, const char *errmsg, int status, json_t *body)
{
    exit_wait *w = data;
    char msg[RB_ERR_LEN];
    (void)status;
    w->in_flight = 0;
    if (w->cancelled) {
        exit_wait_free(w);
        return;
    }
    if (err == RB_OK && json_is_true(json_object_get(body, "Running")) &&
        (w->budget_ms == 0 || w->waited_ms < w->budget_ms)) {
        w->delay_ms = w->delay_ms == 0 ? 10 : w->delay_ms >= 500 ? 1000 : w->delay_ms * 2;
        w->waited_ms += (long)w->delay_ms;
        if (w->timer == NULL) {
            w->timer = xmalloc(sizeof(*w->timer));
            uv_timer_init(docker_loop(w->bd->d), w->timer);
            w->timer->data = w;
        }
        uv_timer_start(w->timer, exit_wait_tick, w->delay_ms, 0);
        return;
    }
    if (err != RB_OK) {
        snprintf(msg, sizeof(msg), "could not read the command's exit code: %s", errmsg);
    } else if (json_is_true(json_object_get(body, "Running"))) {
        err = RB_EIO;
        snprintf(msg, sizeof(msg), "the command's output ended but it had not exited %ld ms later", w->waited_ms);
    }
    json_t *code = json_object_get(body, "ExitCode"); /* body is NULL after an error */
    w->cb(w->data, err, err == RB_OK ? NULL : msg, json_is_integer(code) ? (int)json_integer_value(code) : -1);
    exit_wait_free(w);
}

/* Waits for exec id's exit code (budget_ms 0: as long as it runs); cb runs once, later, unless
 * exit_wait_cancel is called first. Returns the waiter (owned by this module), or NULL with err
 * when the first inspect cannot be sent (then cb never runs). */
static exit_wait *exit_wait_start(backend_docker *bd, const char *id, long budget_ms, exit_cb cb, void *data,
                                  char *err)
{
    exit_wait *w = xcalloc(1, sizeof(*w));
    w->bd = bd;
    w->cb = cb;
    w->data = data;
    w->budget_ms = budget_ms;
    snprintf(w->id, sizeof(w->id), "%s", id);
    w->next = bd->waiters;
    if (bd->waiters != NULL)
        bd->waiters->prev = w;
    bd->waiters = w;
    if (exit_wait_ask(w, err) != RB_OK) {
        exit_wait_free(w);
        return NULL;
    }
    return w;
}

/* Its callback will not run; the memory goes once nothing refers to it. */
static void exit_wait_cancel(exit_wait *w)
{
    w->cancelled = 1;
    if (!w->in_flight)
        exit_wait_free(w); /* between two inspects, or already finished (not reached: cb frees) */
}

/* ---- exec: create, start (output in frames), inspect (exit code) ------------------------------ */

typedef struct exec_op {
    backend_docker *bd;
    backend_exec_cb cb;
    void *data;
    size_t max;
    long timeout_ms;
    char id[80];
    rb_buf out[3]; /* by stream: stdin (unused), stdout, stderr */
} exec_op;

/* Reports a finished command or run: on success its exit code and out[1], out[2]; then frees
 * the buffers out[0..3). */
void backend_docker__report_output(backend_exec_cb cb, void *data, rb_err err, const char *errmsg, int exit_code, rb_buf *out)
{
    if (err == RB_OK) {
        backend_exec_result r = {exit_code, out[1].data ? out[1].data : "", out[2].data ? out[2].data : "",
                                 out[1].len, out[2].len};
        cb(data, RB_OK, NULL, &r);
    } else {
        cb(data, err, errmsg, NULL);
    }
    for (int i = 0; i < 3; i++)
        rb_buf_dispose(&out[i]);
}

static void exec_finish(exec_op *x, rb_err err, const char *errmsg, int exit_code)
{
    backend_docker__report_output(x->cb, x->data, err, errmsg, exit_code, x->out);
    free(x);
}

static void exec_demux_cb(void *data, int stream, const char *buf, size_t len)
{
    exec_op *x = data;
    if (stream >= 0 && stream <= 2)
        rb_buf_append(&x->out[stream], buf, len);
}

static void exec_exited_cb(void *data, rb_err err, const char *errmsg, int exit_code)
{
    exec_finish(data, err, errmsg, exit_code);
}

static void exec_started_cb(void *data, rb_err err, const char *errmsg, int status, const char *body, size_t len)
{
    exec_op *x = data;
    char msg[RB_ERR_LEN];
    (void)status;
    if (err != RB_OK) {
        exec_finish(x, err, errmsg, -1);
        return;
    }
    docker_demux dm;
    docker_demux_init(&dm);
    if (docker_demux_feed(&dm, body, len, exec_demux_cb, x) != RB_OK) {
        exec_finish(x, RB_EIO, "Docker's answer to the exec start is malformed (a bad output frame)", -1);
        return;
    }
    if (dm.hdr_len > 0 || dm.remaining > 0) {
        exec_finish(x, RB_EIO,
                    "Docker's answer to the exec start was cut short in the middle of an output frame (the "
                    "connection to the engine broke)",
                    -1);
        return;
    }
    /* the output ended: the command has exited, or does so in a moment (an end much later was a cut) */
    if (exit_wait_start(x->bd, x->id, EXEC_EXIT_WAIT_MS, exec_exited_cb, x, msg) == NULL)
        exec_finish(x, RB_EIO, msg, -1);
}

static void exec_created_cb(void *data, rb_err err, const char *errmsg, int status, json_t *body)
{
    exec_op *x = data;
    char msg[RB_ERR_LEN];
    (void)status;
    const char *id = json_string_value(json_object_get(body, "Id"));
    if (err != RB_OK || id == NULL || strlen(id) >= sizeof(x->id)) {
        /* a stopped container answers 409, a removed one 404: the sandbox is not running */
        exec_finish(x, err == RB_ECONFLICT || err == RB_ENOTFOUND ? RB_ECONFLICT : (err != RB_OK ? err : RB_EIO),
                    errmsg ? errmsg : "Docker returned no exec id", -1);
        return;
    }
    snprintf(x->id, sizeof(x->id), "%s", id);
    if (docker_exec_start(x->bd->d, x->id, x->max, x->timeout_ms, exec_started_cb, x, msg) != RB_OK)
        exec_finish(x, RB_EIO, msg, -1);
}

/* The exec create body of spec, output attached, stdin only if spec->input, a terminal only if
 * spec->tty. */
static json_t *exec_config(const backend_exec_spec *spec)
{
    json_t *conf = json_pack("{s:o, s:b, s:b, s:b, s:b}", "Cmd", backend_docker__string_list(spec->argv),
                             "AttachStdin", spec->input != 0, "AttachStdout", 1, "AttachStderr", 1, "Tty",
                             spec->tty != 0);
    if (spec->user != NULL)
        json_object_set_new(conf, "User", json_string(spec->user));
    if (spec->working_dir != NULL)
        json_object_set_new(conf, "WorkingDir", json_string(spec->working_dir));
    backend_docker__set_list(conf, "Env", spec->env); /* the Engine API's exec Env: "NAME" alone unsets NAME */
    return conf;
}

rb_err backend_docker__exec(void *self, const char *id, const backend_exec_spec *spec, backend_exec_cb cb, void *data,
                     char *err)
{
    exec_op *x = xcalloc(1, sizeof(*x));
    x->bd = self;
    x->cb = cb;
    x->data = data;
    x->max = spec->max_output > 0 ? spec->max_output : EXEC_OUTPUT_MAX_DEFAULT;
    x->timeout_ms = spec->timeout_ms;
    for (int i = 0; i < 3; i++)
        rb_buf_init(&x->out[i], x->max);
    json_t *conf = exec_config(spec);
    rb_err e = docker_exec_create(x->bd->d, id, conf, exec_created_cb, x, err);
    json_decref(conf);
    if (e != RB_OK) {
        for (int i = 0; i < 3; i++)
            rb_buf_dispose(&x->out[i]);
        free(x);
    }
    return e;
}

/* ---- exec_stream: create, start upgraded (output as it comes), inspect (exit code) -------------- */

/* A streamed command. While a JSON call (create, inspect) is in flight the struct waits for its
 * callback even after stream_close (closed set), since the client calls back exactly once; while
 * the output stream is open, closing it releases the struct at once (the attach runs no
 * callback after docker_attach_close). */
struct backend_stream {
    backend_docker *bd;
    backend_stream_cbs cbs;
    void *data;
    docker_attach *a; /* the output stream while open */
    exit_wait *wait;  /* waiting for the exit code once the output ended */
    int input;        /* the command's stdin is attached (spec->input) */
    int tty;          /* it runs on a terminal (spec->tty) */
    int closed;       /* stream_close ran: no callback, free when the call in flight answers */
    char id[80];      /* the exec's */
};

static void xs_exit(backend_stream *x, rb_err err, const char *errmsg, int exit_code)
{
    if (!x->closed)
        x->cbs.on_exit(x->data, err, errmsg, exit_code);
    free(x);
}

static void xs_exited_cb(void *data, rb_err err, const char *errmsg, int exit_code)
{
    backend_stream *x = data;
    x->wait = NULL;
    xs_exit(x, err, errmsg, exit_code);
}

static void xs_open_cb(void *data, rb_err err, const char *errmsg)
{
    backend_stream *x = data;
    if (err != RB_OK) {
        x->a = NULL; /* the attach is gone */
        xs_exit(x, err == RB_ENOTFOUND ? RB_ECONFLICT : err, errmsg, -1);
    }
}

static void xs_data_cb(void *data, int stream, const char *buf, size_t len)
{
    backend_stream *x = data;
    x->cbs.on_data(x->data, stream, buf, len);
}

static void xs_close_cb(void *data, rb_err err, const char *errmsg)
{
    backend_stream *x = data;
    char msg[RB_ERR_LEN];
    x->a = NULL;
    if (err != RB_OK) {
        xs_exit(x, err, errmsg, -1);
        return;
    }
    /* the output ended; the command has exited or will (it may have closed both and go on) */
    if ((x->wait = exit_wait_start(x->bd, x->id, 0, xs_exited_cb, x, msg)) == NULL)
        xs_exit(x, RB_EIO, msg, -1);
}

static void xs_created_cb(void *data, rb_err err, const char *errmsg, int status, json_t *body)
{
    backend_stream *x = data;
    char msg[RB_ERR_LEN];
    (void)status;
    const char *id = json_string_value(json_object_get(body, "Id"));
    if (x->closed) {
        free(x); /* the exec was never started: nothing runs */
        return;
    }
    if (err != RB_OK || id == NULL || strlen(id) >= sizeof(x->id)) {
        xs_exit(x, err == RB_ECONFLICT || err == RB_ENOTFOUND ? RB_ECONFLICT : (err != RB_OK ? err : RB_EIO),
                errmsg ? errmsg : "Docker returned no exec id", -1);
        return;
    }
    snprintf(x->id, sizeof(x->id), "%s", id);
    docker_attach_cbs cbs = {xs_open_cb, xs_data_cb, xs_close_cb};
    if (docker_exec_attach(x->bd->d, x->id, x->tty, &cbs, x, &x->a, msg) != RB_OK) {
        x->a = NULL;
        xs_exit(x, RB_EIO, msg, -1);
    }
}

rb_err backend_docker__exec_stream(void *self, const char *id, const backend_exec_spec *spec, const backend_stream_cbs *cbs,
                            void *data, backend_stream **out, char *err)
{
    backend_stream *x = xcalloc(1, sizeof(*x));
    x->bd = self;
    x->cbs = *cbs;
    x->data = data;
    x->input = spec->input != 0;
    x->tty = spec->tty != 0;
    json_t *conf = exec_config(spec);
    rb_err e = docker_exec_create(x->bd->d, id, conf, xs_created_cb, x, err);
    json_decref(conf);
    if (e != RB_OK) {
        free(x);
        return e;
    }
    *out = x;
    return RB_OK;
}

void backend_docker__stream_pause(void *self, backend_stream *x, int paused)
{
    (void)self;
    if (x->a != NULL)
        docker_attach_pause(x->a, paused);
}

rb_err backend_docker__stream_write(void *self, backend_stream *x, const char *buf, size_t len, char *err)
{
    (void)self;
    if (!x->input)
        return rb_fail(RB_ECONFLICT, err, "the command was started without standard input");
    return docker_attach_write(x->a, buf, len, err);
}

rb_err backend_docker__stream_close_input(void *self, backend_stream *x, char *err)
{
    (void)self;
    if (!x->input)
        return rb_fail(RB_ECONFLICT, err, "the command was started without standard input");
    return docker_attach_close_write(x->a, err);
}

void backend_docker__stream_close(void *self, backend_stream *x)
{
    (void)self;
    if (x->a != NULL) { /* no call in flight: nothing will call back */
        docker_attach_close(x->a);
        free(x);
        return;
    }
    if (x->wait != NULL) { /* waiting for the exit: the waiter lets go of x */
        exit_wait_cancel(x->wait);
        free(x);
        return;
    }
    x->closed = 1;
}

/* ---- a terminal's size ------------------------------------------------------------------------ */

typedef struct resize_op {
    backend_cb cb;
    void *data;
} resize_op;

static void resized_cb(void *data, rb_err err, const char *errmsg, int status, json_t *body)
{
    resize_op *r = data;
    (void)status;
    (void)body;
    r->cb(r->data, err, errmsg);
    free(r);
}

rb_err backend_docker__stream_resize(void *self, backend_stream *x, unsigned rows, unsigned cols, backend_cb cb,
                                     void *data, char *err)
{
    (void)self;
    if (!x->tty)
        return rb_fail(RB_ECONFLICT, err, "the command was started without a terminal");
    if (x->a == NULL || x->id[0] == '\0')
        return rb_fail(RB_ECONFLICT, err, "the command's terminal is not open (it has not started or has ended)");
    resize_op *r = xmalloc(sizeof(*r));
    r->cb = cb;
    r->data = data;
    rb_err e = docker_exec_resize(x->bd->d, x->id, rows, cols, resized_cb, r, err);
    if (e != RB_OK)
        free(r);
    return e;
}

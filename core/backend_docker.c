/*
 * backend_docker.c: the sandbox backend (core/backend.h) on one Docker Engine. It turns a
 * backend_spec into the Engine API container configuration, runs a command as exec create +
 * start + inspect with Docker's 8-byte stream frames demultiplexed here, and passes the other
 * calls to the client in docker/ with their callbacks translated; a one-shot run is create,
 * start, wait, logs (frames demultiplexed here too) and remove. The only file in core/ that
 * includes docker/docker.h. It decides nothing about sandboxes: limits, labels and hardening
 * come in the spec (core/sandbox.c).
 *
 * The workspace is a tmpfs-backed anonymous volume rather than a tmpfs mount because the
 * archive API sees a running container's volumes but not its tmpfs mounts, and refuses writes
 * elsewhere on a read-only root; the local driver mounts a tmpfs with the same options, and the
 * volume goes with its container (DELETE ?v=1).
 */
#include <stdlib.h>
#include <string.h>

#include "core/backend_docker.h"
#include "docker/docker.h"

#define EXEC_OUTPUT_MAX_DEFAULT (8u * 1024 * 1024)
#define RUN_OUTPUT_MAX_DEFAULT (2u * 1024 * 1024)
/* How long backend_exec waits for a command whose output has ended to be reported exited. */
#define EXEC_EXIT_WAIT_MS 10000

/* ---- spec -> Engine API JSON ---------------------------------------------------------------- */

static json_t *string_list(const char *const *list)
{
    json_t *a = json_array();
    for (size_t i = 0; list != NULL && list[i] != NULL; i++)
        json_array_append_new(a, json_string(list[i]));
    return a;
}

/* obj[key] = the list, unless list is NULL (not set). */
static void set_list(json_t *obj, const char *key, const char *const *list)
{
    if (list != NULL)
        json_object_set_new(obj, key, string_list(list));
}

static json_t *label_object(const backend_label *labels, size_t n)
{
    json_t *o = json_object();
    for (size_t i = 0; i < n; i++)
        json_object_set_new(o, labels[i].key, json_string(labels[i].value));
    return o;
}

/* Docker's mount options for a memory-backed mount: "rw,nosuid,nodev,size=N[,uid=U][,gid=G][,mode=M]". */
static json_t *mount_options(const backend_mount *m)
{
    char uid[24] = "", gid[24] = "", mode[24] = "";
    if (m->uid >= 0)
        snprintf(uid, sizeof(uid), ",uid=%d", m->uid);
    if (m->gid >= 0)
        snprintf(gid, sizeof(gid), ",gid=%d", m->gid);
    if (m->mode >= 0)
        snprintf(mode, sizeof(mode), ",mode=%04o", (unsigned)m->mode);
    return json_sprintf("rw,nosuid,nodev,size=%lld%s%s%s", (long long)m->size, uid, gid, mode);
}

/* Binds entries: "name:/path" or "/host/path:/path", with ":ro" when read-only. */
static json_t *binds(const backend_volume *v, size_t n)
{
    json_t *a = json_array();
    for (size_t i = 0; i < n; i++)
        json_array_append_new(a, json_sprintf("%s:%s%s", v[i].name ? v[i].name : v[i].host_path, v[i].path,
                                              v[i].readonly ? ":ro" : ""));
    return a;
}

/* A Binds entry is split on ':', so a colon would move a mount elsewhere or change its mode. */
static rb_err volumes_check(const backend_spec *sp, char *err)
{
    for (size_t i = 0; i < sp->n_volumes; i++) {
        const backend_volume *v = &sp->volumes[i];
        const char *src = v->name ? v->name : v->host_path;
        if (src == NULL || src[0] == '\0' || (v->name == NULL && src[0] != '/') || strchr(src, ':') != NULL ||
            v->path == NULL || v->path[0] != '/' || strchr(v->path, ':') != NULL)
            return rb_fail(RB_EINVAL, err, "volume '%.200s' at '%.200s' cannot be mounted", src ? src : "(none)",
                           v->path ? v->path : "(none)");
    }
    return RB_OK;
}

static json_t *host_config(const backend_spec *sp)
{
    json_t *hc = json_pack("{s:s, s:I, s:I, s:I, s:b, s:b}", "NetworkMode", sp->network ? sp->network : "none",
                           "Memory", (json_int_t)sp->memory, "MemorySwap", (json_int_t)(sp->memory + sp->swap),
                           "PidsLimit", (json_int_t)sp->pids_limit, "ReadonlyRootfs", sp->readonly_root != 0, "Init",
                           sp->init != 0);
    if (sp->nano_cpus > 0)
        json_object_set_new(hc, "NanoCpus", json_integer((json_int_t)sp->nano_cpus));
    set_list(hc, "CapDrop", sp->cap_drop);
    set_list(hc, "CapAdd", sp->cap_add);
    set_list(hc, "SecurityOpt", sp->security_opt);
    if (sp->n_tmpfs > 0) {
        json_t *tmpfs = json_object();
        for (size_t i = 0; i < sp->n_tmpfs; i++)
            json_object_set_new(tmpfs, sp->tmpfs[i].path, mount_options(&sp->tmpfs[i]));
        json_object_set_new(hc, "Tmpfs", tmpfs);
    }
    if (sp->workspace.path != NULL)
        json_object_set_new(hc, "Mounts",
                            json_pack("[{s:s, s:s, s:{s:o, s:{s:s, s:{s:s, s:s, s:o}}}}]", "Type", "volume", "Target",
                                      sp->workspace.path, "VolumeOptions", "Labels",
                                      label_object(sp->workspace_labels, sp->n_workspace_labels), "DriverConfig",
                                      "Name", "local", "Options", "type", "tmpfs", "device", "tmpfs", "o",
                                      mount_options(&sp->workspace)));
    if (sp->n_volumes > 0)
        json_object_set_new(hc, "Binds", binds(sp->volumes, sp->n_volumes));
    if (sp->log_driver != NULL)
        json_object_set_new(hc, "LogConfig", json_pack("{s:s}", "Type", sp->log_driver));
    if (sp->n_ulimits > 0) {
        json_t *ul = json_array();
        for (size_t i = 0; i < sp->n_ulimits; i++)
            json_array_append_new(ul, json_pack("{s:s, s:I, s:I}", "Name", sp->ulimits[i].name, "Soft",
                                                (json_int_t)sp->ulimits[i].soft, "Hard",
                                                (json_int_t)sp->ulimits[i].hard));
        json_object_set_new(hc, "Ulimits", ul);
    }
    return hc;
}

json_t *backend_docker__run_config(const backend_spec *sp)
{
    /* no Tty: the logs come in frames, stdout apart from stderr */
    json_t *conf = json_pack("{s:s, s:o, s:b, s:o}", "Image", sp->image, "Labels",
                             label_object(sp->labels, sp->n_labels), "NetworkDisabled", sp->network == NULL,
                             "HostConfig", host_config(sp));
    set_list(conf, "Cmd", sp->cmd);
    set_list(conf, "Env", sp->env);
    if (sp->user != NULL)
        json_object_set_new(conf, "User", json_string(sp->user));
    if (sp->working_dir != NULL)
        json_object_set_new(conf, "WorkingDir", json_string(sp->working_dir));
    return conf;
}

json_t *backend_docker__container_config(const backend_spec *sp)
{
    /* Attachable (backend_attach_open): stdin open, no TTY, so output arrives in frames. */
    json_t *conf = backend_docker__run_config(sp);
    json_t *attach = json_pack("{s:b, s:b, s:b, s:b, s:b, s:b}", "AttachStdin", 1, "AttachStdout", 1, "AttachStderr",
                               1, "OpenStdin", 1, "StdinOnce", 0, "Tty", 0);
    json_object_update(conf, attach);
    json_decref(attach);
    return conf;
}

/* ---- calls with their callbacks translated --------------------------------------------------- */

/* One call in flight: the caller's callback (the member its kind uses) and data. */
typedef struct call {
    backend_cb done;
    backend_create_cb created;
    backend_ping_cb ping;
    backend_bytes_cb bytes;
    backend_list_cb list;
    backend_name_cb name;
    backend_state_cb state;
    void *data;
    docker *d;
    char *path; /* workspace_volume: the mount point asked for */
} call;

static call *call_new(docker *d, void *data)
{
    call *c = xcalloc(1, sizeof(*c));
    c->d = d;
    c->data = data;
    return c;
}

/* What every call does with the client's answer to starting it: on a synchronous failure the
 * client will not call back, so the call is dropped. */
static void call_free(call *c)
{
    free(c->path);
    free(c);
}

static rb_err call_started(call *c, rb_err e)
{
    if (e != RB_OK)
        call_free(c);
    return e;
}

static void done_cb(void *data, rb_err err, const char *errmsg, int status, json_t *body)
{
    call *c = data;
    (void)status;
    (void)body;
    c->done(c->data, err, errmsg);
    call_free(c);
}

/* A raw answer: the tar of archive_get (handed over, not copied: it may be as large as
 * max-download), or nothing worth passing on (archive_put). */
static void raw_cb(void *data, rb_err err, const char *errmsg, int status, const char *body, size_t len)
{
    call *c = data;
    (void)status;
    if (c->bytes != NULL) {
        char *owned = NULL;
        if (err == RB_OK && (owned = docker_raw_take(c->d, body)) == NULL) {
            owned = xmalloc(len + 1); /* an empty answer has no buffer to take */
            memcpy(owned, body, len);
            owned[len] = '\0';
        }
        c->bytes(c->data, err, errmsg, owned, err == RB_OK ? len : 0);
    } else {
        c->done(c->data, err, errmsg);
    }
    call_free(c);
}

static void created_cb(void *data, rb_err err, const char *errmsg, int status, json_t *body)
{
    call *c = data;
    (void)status;
    const char *id = err == RB_OK ? json_string_value(json_object_get(body, "Id")) : NULL;
    if (err == RB_OK && id == NULL)
        c->created(c->data, RB_EIO,
                   "Docker's answer to the container create has no container id (an answer cut short or malformed)",
                   NULL);
    else
        c->created(c->data, err, errmsg, id);
    call_free(c);
}

static void pinged_cb(void *data, rb_err err, const char *errmsg, int status, json_t *body)
{
    call *c = data;
    (void)status;
    (void)body;
    c->ping(c->data, err, errmsg, err == RB_OK ? docker_api_version(c->d) : NULL);
    call_free(c);
}

static void listed_cb(void *data, rb_err err, const char *errmsg, int status, json_t *body)
{
    call *c = data;
    (void)status;
    backend_sandbox_info *items = NULL;
    size_t n = 0;
    if (err == RB_OK)
        items = xcalloc(json_array_size(body) + 1, sizeof(*items));
    /* containers without an id are skipped: nothing could be done with them */
    for (size_t i = 0; err == RB_OK && i < json_array_size(body); i++) {
        json_t *ct = json_array_get(body, i), *labels = json_object_get(ct, "Labels");
        items[n] = (backend_sandbox_info){json_string_value(json_object_get(ct, "Id")),
                                          json_string_value(json_object_get(ct, "State")),
                                          json_is_object(labels) ? labels : NULL};
        n += items[n].id != NULL;
    }
    c->list(c->data, err, errmsg, items, n);
    free(items);
    call_free(c);
}

/* The image's Id. */
static void image_inspected_cb(void *data, rb_err err, const char *errmsg, int status, json_t *body)
{
    call *c = data;
    (void)status;
    const char *id = json_string_value(json_object_get(body, "Id"));
    if (err == RB_OK && id == NULL)
        c->name(c->data, RB_EIO, "Docker returned no image id", NULL);
    else
        c->name(c->data, err, errmsg, err == RB_OK ? id : NULL);
    call_free(c);
}

static int volume_name_ok(const char *s)
{
    static const char chars[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-";
    size_t n = strlen(s);
    return n > 0 && n <= 128 && strspn(s, chars) == n;
}

/* The name of the volume mounted at c->path, from the container's Mounts. */
static void sandbox_inspected_cb(void *data, rb_err err, const char *errmsg, int status, json_t *body)
{
    call *c = data;
    char msg[RB_ERR_LEN];
    const char *found = NULL;
    size_t i;
    json_t *m;
    (void)status;
    json_array_foreach(json_object_get(body, "Mounts"), i, m)
    {
        const char *dst = json_string_value(json_object_get(m, "Destination"));
        const char *name = json_string_value(json_object_get(m, "Name"));
        const char *type = json_string_value(json_object_get(m, "Type"));
        if (dst && name && type && strcmp(dst, c->path) == 0 && strcmp(type, "volume") == 0)
            found = name;
    }
    if (err != RB_OK) {
        c->name(c->data, err, errmsg, NULL);
    } else if (found == NULL || !volume_name_ok(found)) {
        snprintf(msg, sizeof(msg), "no Docker volume is mounted at %.200s in the container", c->path);
        c->name(c->data, RB_ECONFLICT, msg, NULL);
    } else {
        c->name(c->data, RB_OK, NULL, found);
    }
    call_free(c);
}

/* A sandbox's state from its inspect answer. */
static void state_inspected_cb(void *data, rb_err err, const char *errmsg, int status, json_t *body)
{
    call *c = data;
    (void)status;
    json_t *st = json_object_get(body, "State");
    json_t *running = json_object_get(st, "Running"), *code = json_object_get(st, "ExitCode");
    if (err == RB_OK && !json_is_boolean(running)) {
        c->state(c->data, RB_EIO, "Docker's answer to the container inspect has no State.Running", NULL);
    } else if (err != RB_OK) {
        c->state(c->data, err, errmsg, NULL);
    } else {
        backend_sandbox_state s = {json_is_true(running), json_is_true(json_object_get(st, "OOMKilled")), -1};
        if (!s.running && json_is_integer(code))
            s.exit_code = (int)json_integer_value(code);
        c->state(c->data, RB_OK, NULL, &s);
    }
    call_free(c);
}

static rb_err d_state(void *self, const char *id, backend_state_cb cb, void *data, char *err)
{
    call *c = call_new(self, data);
    c->state = cb;
    return call_started(c, docker_container_inspect(self, id, state_inspected_cb, c, err));
}

/* The client's counts under its own names (docker_op_name, docker_failure_name). */
static void d_stats(void *self, backend_stats *out)
{
    _Static_assert(DOCKER_OP_MAX <= BACKEND_STATS_OPS && DOCKER_FAIL_MAX <= BACKEND_STATS_REASONS,
                   "backend_stats has room for every Docker operation and failure reason");
    docker_stats ds;
    docker_stats_read(self, &ds);
    out->n_ops = DOCKER_OP_MAX;
    out->n_reasons = DOCKER_FAIL_MAX;
    for (int f = 0; f < DOCKER_FAIL_MAX; f++)
        out->reason[f] = docker_failure_name((docker_failure)f);
    for (int op = 0; op < DOCKER_OP_MAX; op++) {
        out->op[op] = docker_op_name((docker_op)op);
        out->latency[op] = ds.latency[op];
        for (int f = 0; f < DOCKER_FAIL_MAX; f++)
            out->failures[op][f] = ds.failures[op][f];
    }
}

static rb_err d_image_id(void *self, const char *image, backend_name_cb cb, void *data, char *err)
{
    call *c = call_new(self, data);
    c->name = cb;
    return call_started(c, docker_image_inspect(self, image, image_inspected_cb, c, err));
}

static rb_err d_workspace_volume(void *self, const char *id, const char *path, backend_name_cb cb, void *data,
                                 char *err)
{
    call *c = call_new(self, data);
    c->name = cb;
    c->path = xstrdup(path);
    return call_started(c, docker_container_inspect(self, id, sandbox_inspected_cb, c, err));
}

static rb_err d_volume_create(void *self, const char *name, const backend_label *labels, size_t n_labels,
                              backend_cb cb, void *data, char *err)
{
    if (!volume_name_ok(name))
        return rb_fail(RB_EINVAL, err, "'%.200s' is not a volume name", name);
    call *c = call_new(self, data);
    c->done = cb;
    json_t *conf = json_pack("{s:s, s:o}", "Name", name, "Labels", label_object(labels, n_labels));
    rb_err e = docker_volume_create(self, conf, done_cb, c, err);
    json_decref(conf);
    return call_started(c, e);
}

static rb_err d_volume_remove(void *self, const char *name, backend_cb cb, void *data, char *err)
{
    call *c = call_new(self, data);
    c->done = cb;
    return call_started(c, docker_volume_remove(self, name, done_cb, c, err));
}

static rb_err d_ping(void *self, backend_ping_cb cb, void *data, char *err)
{
    call *c = call_new(self, data);
    c->ping = cb;
    return call_started(c, docker_ping_version(self, pinged_cb, c, err));
}

static rb_err d_create(void *self, const char *name, const backend_spec *spec, backend_create_cb cb, void *data,
                       char *err)
{
    rb_err e = volumes_check(spec, err);
    if (e != RB_OK)
        return e;
    call *c = call_new(self, data);
    c->created = cb;
    json_t *conf = backend_docker__container_config(spec);
    e = docker_container_create(self, name, conf, created_cb, c, err);
    json_decref(conf);
    return call_started(c, e);
}

static rb_err d_start(void *self, const char *id, backend_cb cb, void *data, char *err)
{
    call *c = call_new(self, data);
    c->done = cb;
    return call_started(c, docker_container_start(self, id, done_cb, c, err));
}

static rb_err d_remove(void *self, const char *id, backend_cb cb, void *data, char *err)
{
    call *c = call_new(self, data);
    c->done = cb;
    return call_started(c, docker_container_remove(self, id, done_cb, c, err));
}

static rb_err d_list(void *self, const char *label, backend_list_cb cb, void *data, char *err)
{
    call *c = call_new(self, data);
    c->list = cb;
    return call_started(c, docker_container_list(self, label, listed_cb, c, err));
}

static rb_err d_archive_put(void *self, const char *id, const char *dir, const void *tar, size_t len, backend_cb cb,
                            void *data, char *err)
{
    call *c = call_new(self, data);
    c->done = cb;
    return call_started(c, docker_archive_put(self, id, dir, tar, len, raw_cb, c, err));
}

static rb_err d_archive_get(void *self, const char *id, const char *path, size_t max, backend_bytes_cb cb,
                            void *data, char *err)
{
    call *c = call_new(self, data);
    c->bytes = cb;
    return call_started(c, docker_archive_get(self, id, path, max, raw_cb, c, err));
}

/* ---- attach: the client's stream, with the same callbacks ------------------------------------ */

static rb_err d_attach_open(void *self, const char *id, const backend_attach_cbs *cbs, void *data,
                            backend_attach **out, char *err)
{
    docker_attach_cbs dcbs = {cbs->on_open, cbs->on_data, cbs->on_close};
    docker_attach *a = NULL;
    rb_err e = docker_attach_start(self, id, &dcbs, data, &a, err);
    if (e == RB_OK)
        *out = (backend_attach *)a;
    return e;
}

static rb_err d_attach_write(void *self, backend_attach *a, const char *buf, size_t len, char *err)
{
    (void)self;
    return docker_attach_write((docker_attach *)a, buf, len, err);
}

static void d_attach_pause(void *self, backend_attach *a, int paused)
{
    (void)self;
    docker_attach_pause((docker_attach *)a, paused);
}

static void d_attach_close(void *self, backend_attach *a)
{
    (void)self;
    docker_attach_close((docker_attach *)a);
}

/* ---- waiting for an exec's exit code ---------------------------------------------------------
 *
 * Docker ends an exec's output once the command's stdout and stderr are closed, and records its
 * exit a moment later (or much later: a command may close both and go on): an inspect right
 * after the output ended may still say Running. So the exit code is asked for again, 10 ms
 * later, then twice as long each time up to 1 s apart, until the command has exited or the
 * budget has passed. */

typedef void (*exit_cb)(void *data, rb_err err, const char *errmsg, int exit_code);

typedef struct exit_wait {
    docker *d;
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
} exit_wait;

static exit_wait *waiters;

static void exit_wait_answer_cb(void *data, rb_err err, const char *errmsg, int status, json_t *body);

static void exit_wait_free(exit_wait *w)
{
    if (w->prev != NULL)
        w->prev->next = w->next;
    else
        waiters = w->next;
    if (w->next != NULL)
        w->next->prev = w->prev;
    if (w->timer != NULL)
        uv_close((uv_handle_t *)w->timer, (uv_close_cb)free);
    free(w);
}

static rb_err exit_wait_ask(exit_wait *w, char *err)
{
    rb_err e = docker_exec_inspect(w->d, w->id, exit_wait_answer_cb, w, err);
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

/* d is being freed: waiters between two inspects end now with RB_ECANCELED (those with an
 * inspect in flight hear it from the client). */
static void exit_wait_drop(docker *d)
{
    for (exit_wait *w = waiters, *next; w != NULL; w = next) {
        next = w->next;
        if (w->d != d || w->in_flight)
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
            uv_timer_init(docker_loop(w->d), w->timer);
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
static exit_wait *exit_wait_start(docker *d, const char *id, long budget_ms, exit_cb cb, void *data, char *err)
{
    exit_wait *w = xcalloc(1, sizeof(*w));
    w->d = d;
    w->cb = cb;
    w->data = data;
    w->budget_ms = budget_ms;
    snprintf(w->id, sizeof(w->id), "%s", id);
    w->next = waiters;
    if (waiters != NULL)
        waiters->prev = w;
    waiters = w;
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
    docker *d;
    backend_exec_cb cb;
    void *data;
    size_t max;
    long timeout_ms;
    char id[80];
    rb_buf out[3]; /* by stream: stdin (unused), stdout, stderr */
} exec_op;

/* Reports a finished command or run: on success its exit code and out[1], out[2]; then frees
 * the buffers out[0..3). */
static void report_output(backend_exec_cb cb, void *data, rb_err err, const char *errmsg, int exit_code, rb_buf *out)
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
    report_output(x->cb, x->data, err, errmsg, exit_code, x->out);
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
    if (exit_wait_start(x->d, x->id, EXEC_EXIT_WAIT_MS, exec_exited_cb, x, msg) == NULL)
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
    if (docker_exec_start(x->d, x->id, x->max, x->timeout_ms, exec_started_cb, x, msg) != RB_OK)
        exec_finish(x, RB_EIO, msg, -1);
}

/* The exec create body of spec, output attached, stdin only if spec->input, no TTY. */
static json_t *exec_config(const backend_exec_spec *spec)
{
    json_t *conf = json_pack("{s:o, s:b, s:b, s:b}", "Cmd", string_list(spec->argv), "AttachStdin",
                             spec->input != 0, "AttachStdout", 1, "AttachStderr", 1);
    if (spec->user != NULL)
        json_object_set_new(conf, "User", json_string(spec->user));
    if (spec->working_dir != NULL)
        json_object_set_new(conf, "WorkingDir", json_string(spec->working_dir));
    set_list(conf, "Env", spec->env); /* the Engine API's exec Env: "NAME" alone unsets NAME */
    return conf;
}

static rb_err d_exec(void *self, const char *id, const backend_exec_spec *spec, backend_exec_cb cb, void *data,
                     char *err)
{
    exec_op *x = xcalloc(1, sizeof(*x));
    x->d = self;
    x->cb = cb;
    x->data = data;
    x->max = spec->max_output > 0 ? spec->max_output : EXEC_OUTPUT_MAX_DEFAULT;
    x->timeout_ms = spec->timeout_ms;
    for (int i = 0; i < 3; i++)
        rb_buf_init(&x->out[i], x->max);
    json_t *conf = exec_config(spec);
    rb_err e = docker_exec_create(self, id, conf, exec_created_cb, x, err);
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
    docker *d;
    backend_stream_cbs cbs;
    void *data;
    docker_attach *a; /* the output stream while open */
    exit_wait *wait;  /* waiting for the exit code once the output ended */
    int input;        /* the command's stdin is attached (spec->input) */
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
    if ((x->wait = exit_wait_start(x->d, x->id, 0, xs_exited_cb, x, msg)) == NULL)
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
    if (docker_exec_attach(x->d, x->id, &cbs, x, &x->a, msg) != RB_OK) {
        x->a = NULL;
        xs_exit(x, RB_EIO, msg, -1);
    }
}

static rb_err d_exec_stream(void *self, const char *id, const backend_exec_spec *spec, const backend_stream_cbs *cbs,
                            void *data, backend_stream **out, char *err)
{
    backend_stream *x = xcalloc(1, sizeof(*x));
    x->d = self;
    x->cbs = *cbs;
    x->data = data;
    x->input = spec->input != 0;
    json_t *conf = exec_config(spec);
    rb_err e = docker_exec_create(self, id, conf, xs_created_cb, x, err);
    json_decref(conf);
    if (e != RB_OK) {
        free(x);
        return e;
    }
    *out = x;
    return RB_OK;
}

static void d_stream_pause(void *self, backend_stream *x, int paused)
{
    (void)self;
    if (x->a != NULL)
        docker_attach_pause(x->a, paused);
}

static rb_err d_stream_write(void *self, backend_stream *x, const char *buf, size_t len, char *err)
{
    (void)self;
    if (!x->input)
        return rb_fail(RB_ECONFLICT, err, "the command was started without standard input");
    return docker_attach_write(x->a, buf, len, err);
}

static rb_err d_stream_close_input(void *self, backend_stream *x, char *err)
{
    (void)self;
    if (!x->input)
        return rb_fail(RB_ECONFLICT, err, "the command was started without standard input");
    return docker_attach_close_write(x->a, err);
}

static void d_stream_close(void *self, backend_stream *x)
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

/* ---- run: create, start, wait, logs (output in frames), remove --------------------------------- */

typedef struct run_op {
    docker *d;
    backend_exec_cb cb;
    void *data;
    long timeout_ms;
    size_t max;
    char *name; /* the container's name asked for */
    char *id;   /* the container's, once created */
    int exit_code;
    rb_err err; /* the outcome so far, with its text in msg */
    char msg[RB_ERR_LEN];
    rb_buf out[3]; /* by stream: stdin (unused), stdout, stderr */
} run_op;

static void run_report(run_op *r)
{
    report_output(r->cb, r->data, r->err, r->msg, r->exit_code, r->out);
    free(r->name);
    free(r->id);
    free(r);
}

static void run_removed_cb(void *data, rb_err err, const char *errmsg, int status, json_t *body)
{
    run_op *r = data;
    (void)status;
    (void)body;
    /* a container left behind keeps its labels: recovery and operators find it */
    if (r->err == RB_OK && err == RB_ECANCELED)
        r->err = rb_fail(RB_ECANCELED, r->msg, "the Docker client is shutting down");
    else if (err != RB_OK && err != RB_ENOTFOUND && err != RB_ECANCELED)
        rb_warn("container %.12s: could not remove it: %s", r->id ? r->id : r->name, errmsg);
    run_report(r);
}

/* Removes the container (if it exists), then reports r's outcome. A create that failed other
 * than for a missing image may still have made the container (its answer lost or late): it
 * is removed by name. */
static void run_finish(run_op *r)
{
    char err[RB_ERR_LEN];
    const char *ref = r->id != NULL ? r->id : r->err != RB_ENOTFOUND ? r->name : NULL;
    if (ref == NULL || docker_container_remove(r->d, ref, run_removed_cb, r, err) != RB_OK)
        run_report(r);
}

static void run_fail(run_op *r, rb_err e, const char *what, const char *errmsg)
{
    /* once created, a missing container is not a missing image */
    r->err = e == RB_ENOTFOUND && r->id != NULL ? RB_EIO : e;
    snprintf(r->msg, sizeof(r->msg), "%.60s: %.440s", what, errmsg ? errmsg : "no detail");
    run_finish(r);
}

/* Keeps what came last of each stream: a full buffer drops at least its older half. */
static void run_collect(void *data, int stream, const char *buf, size_t len)
{
    run_op *r = data;
    if (stream < 1 || stream > 2)
        return;
    rb_buf *b = &r->out[stream];
    if (len >= b->max) {
        rb_buf_reset(b);
        rb_buf_append(b, buf + (len - b->max), b->max);
        return;
    }
    if (b->len + len > b->max) {
        size_t need = b->len + len - b->max;
        rb_buf_consume(b, need > b->len / 2 ? need : b->len / 2);
    }
    rb_buf_append(b, buf, len);
}

static void run_logs_cb(void *data, rb_err err, const char *errmsg, int status, const char *body, size_t len)
{
    run_op *r = data;
    (void)status;
    if (err == RB_OK) {
        docker_demux dm;
        docker_demux_init(&dm);
        if (docker_demux_feed(&dm, body, len, run_collect, r) != RB_OK) {
            run_fail(r, RB_EIO, "cannot read the container's output", "malformed frames");
            return;
        }
    } else if (err != RB_ETOOBIG) { /* too much output: both streams stay empty */
        run_fail(r, err, "cannot read the container's output", errmsg);
        return;
    }
    run_finish(r);
}

static void run_exited_cb(void *data, rb_err err, const char *errmsg, int status, json_t *body)
{
    run_op *r = data;
    char e2[RB_ERR_LEN];
    (void)status;
    if (err != RB_OK) {
        run_fail(r, err, "the container did not finish", errmsg);
        return;
    }
    json_t *code = json_object_get(body, "StatusCode");
    r->exit_code = json_is_integer(code) ? (int)json_integer_value(code) : -1;
    if (docker_container_logs(r->d, r->id, r->max * 2, run_logs_cb, r, e2) != RB_OK)
        run_fail(r, RB_EIO, "cannot read the container's output", e2);
}

static void run_started_cb(void *data, rb_err err, const char *errmsg, int status, json_t *body)
{
    run_op *r = data;
    char e2[RB_ERR_LEN];
    (void)status;
    (void)body;
    if (err != RB_OK) {
        run_fail(r, err, "cannot start the container", errmsg);
        return;
    }
    if (docker_container_wait(r->d, r->id, r->timeout_ms, run_exited_cb, r, e2) != RB_OK)
        run_fail(r, RB_EIO, "cannot wait for the container", e2);
}

static void run_created_cb(void *data, rb_err err, const char *errmsg, int status, json_t *body)
{
    run_op *r = data;
    char e2[RB_ERR_LEN];
    (void)status;
    const char *id = json_string_value(json_object_get(body, "Id"));
    if (err != RB_OK || id == NULL) {
        run_fail(r, err != RB_OK ? err : RB_EIO, "cannot create the container", errmsg);
        return;
    }
    r->id = xstrdup(id);
    if (docker_container_start(r->d, r->id, run_started_cb, r, e2) != RB_OK)
        run_fail(r, RB_EIO, "cannot start the container", e2);
}

static rb_err d_run(void *self, const char *name, const backend_spec *spec, long timeout_ms, size_t max_output,
                    backend_exec_cb cb, void *data, char *err)
{
    rb_err e = volumes_check(spec, err);
    if (e != RB_OK)
        return e;
    run_op *r = xcalloc(1, sizeof(*r));
    r->d = self;
    r->cb = cb;
    r->data = data;
    r->timeout_ms = timeout_ms;
    r->name = xstrdup(name);
    r->max = max_output > 0 ? max_output : RUN_OUTPUT_MAX_DEFAULT;
    r->exit_code = -1;
    for (int i = 0; i < 3; i++)
        rb_buf_init(&r->out[i], r->max);
    json_t *conf = backend_docker__run_config(spec);
    e = docker_container_create(self, name, conf, run_created_cb, r, err);
    json_decref(conf);
    if (e != RB_OK) {
        for (int i = 0; i < 3; i++)
            rb_buf_dispose(&r->out[i]);
        free(r->name);
        free(r);
    }
    return e;
}

/* ---- the backend -------------------------------------------------------------------------- */

static void d_free(void *self)
{
    exit_wait_drop(self);
    docker_free(self);
}

static const backend_ops docker_ops = {
    .name = "docker",
    .free = d_free,
    .ping = d_ping,
    .create = d_create,
    .start = d_start,
    .remove = d_remove,
    .list = d_list,
    .attach_open = d_attach_open,
    .attach_write = d_attach_write,
    .attach_close = d_attach_close,
    .attach_pause = d_attach_pause,
    .exec = d_exec,
    .archive_put = d_archive_put,
    .archive_get = d_archive_get,
    .run = d_run,
    .image_id = d_image_id,
    .volume_create = d_volume_create,
    .volume_remove = d_volume_remove,
    .workspace_volume = d_workspace_volume,
    .exec_stream = d_exec_stream,
    .stream_pause = d_stream_pause,
    .stream_write = d_stream_write,
    .stream_close_input = d_stream_close_input,
    .stream_close = d_stream_close,
    .state = d_state,
    .stats = d_stats,
};

rb_err backend_docker_new(uv_loop_t *loop, const char *socket_path, long call_ms, long transfer_ms, backend **out,
                          char *err)
{
    docker *d;
    if (call_ms < 0 || transfer_ms < 0)
        return rb_fail(RB_EINVAL, err, "Docker deadlines must not be negative");
    rb_err e = docker_new(loop, socket_path, &d, err);
    if (e != RB_OK)
        return e;
    docker_timeouts to;
    docker_timeouts_default(&to);
    if (call_ms > 0)
        to.short_ms = to.attach_ms = call_ms;
    if (transfer_ms > 0)
        to.transfer_ms = transfer_ms;
    if ((e = docker_set_timeouts(d, &to, err)) != RB_OK) {
        docker_free(d);
        return e;
    }
    *out = backend_new(&docker_ops, d);
    return RB_OK;
}


/*
 * docker.c: the sandbox backend (core/backend/backend.h) on one Docker Engine. It turns a
 * backend_spec into the Engine API container configuration and passes the calls to the client in
 * docker/ with their callbacks translated (the spec's Engine API form is docker_spec.c); a one-shot run is create, start, wait, logs (Docker's
 * 8-byte stream frames demultiplexed here) and remove. Commands beside the runner (exec,
 * exec_stream) are in docker_exec.c; these two are the only files in core/ that include
 * docker/docker.h. It decides nothing about sandboxes: limits, labels and hardening come in the
 * spec (core/sandbox.c).
 *
 * The workspace is a tmpfs-backed anonymous volume rather than a tmpfs mount because the
 * archive API sees a running container's volumes but not its tmpfs mounts, and refuses writes
 * elsewhere on a read-only root; the local driver mounts a tmpfs with the same options, and the
 * volume goes with its container (DELETE ?v=1).
 */
#include <stdlib.h>
#include <string.h>

#include "base/crashpoint.h"
#include "core/backend/docker.h"
#include "core/backend/docker_private.h"
#include "docker/docker.h"

#define RUN_OUTPUT_MAX_DEFAULT (2u * 1024 * 1024)

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
    backend_usage_cb usage;
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
        /* Docker's words for a full file system under an archive it extracts (a workspace at its size) */
        if (err != RB_OK && errmsg != NULL && strstr(errmsg, "no space left on device") != NULL)
            err = RB_ENOSPC;
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

/* A listing's answer as backend_sandbox_info: each item's id_key (items without one are
 * skipped: nothing could be done with them), state_key (NULL: no state) and labels. */
static void report_list(call *c, rb_err err, const char *errmsg, json_t *body, const char *id_key,
                        const char *state_key)
{
    backend_sandbox_info *items = NULL;
    size_t n = 0;
    if (err == RB_OK)
        items = xcalloc(json_array_size(body) + 1, sizeof(*items));
    for (size_t i = 0; err == RB_OK && i < json_array_size(body); i++) {
        json_t *it = json_array_get(body, i), *labels = json_object_get(it, "Labels");
        items[n] = (backend_sandbox_info){json_string_value(json_object_get(it, id_key)),
                                          state_key ? json_string_value(json_object_get(it, state_key)) : NULL,
                                          json_is_object(labels) ? labels : NULL};
        n += items[n].id != NULL;
    }
    c->list(c->data, err, errmsg, items, n);
    free(items);
    call_free(c);
}

static void listed_cb(void *data, rb_err err, const char *errmsg, int status, json_t *body)
{
    (void)status;
    report_list(data, err, errmsg, body, "Id", "State");
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
    call *c = call_new(DK(self), data);
    c->state = cb;
    return call_started(c, docker_container_inspect(DK(self), id, state_inspected_cb, c, err));
}

/* A whole number member of obj (0 when absent or not a number). */
static int64_t num(json_t *obj, const char *key)
{
    json_t *v = json_object_get(obj, key);
    return json_is_integer(v) ? (int64_t)json_integer_value(v) : json_is_real(v) ? (int64_t)json_real_value(v) : 0;
}

/* A reading from Docker's stats answer: memory as docker stats shows it (usage less the
 * inactive page cache: inactive_file on cgroup v2, total_inactive_file on v1). */
static void usage_read_cb(void *data, rb_err err, const char *errmsg, int status, json_t *body)
{
    call *c = data;
    (void)status;
    json_t *cpu = json_object_get(json_object_get(body, "cpu_stats"), "cpu_usage");
    json_t *mem = json_object_get(body, "memory_stats"), *ms = json_object_get(mem, "stats");
    if (err == RB_OK && !json_is_object(cpu)) {
        c->usage(c->data, RB_EIO, "Docker's stats answer has no cpu_stats.cpu_usage", NULL);
    } else if (err != RB_OK) {
        c->usage(c->data, err, errmsg, NULL);
    } else {
        backend_usage u = {num(cpu, "total_usage"), num(mem, "usage"), 0, 0, num(mem, "limit"),
                           num(json_object_get(body, "pids_stats"), "current"), 0, 0};
        /* tmpfs pages: cgroup v2 counts them as shmem; v1 only within cache, which is them and
         * the file pages (active_file + inactive_file) */
        if (json_object_get(ms, "shmem") != NULL)
            u.shmem_bytes = num(ms, "shmem");
        else if (json_object_get(ms, "cache") != NULL)
            u.shmem_bytes = num(ms, "cache") - num(ms, "active_file") - num(ms, "inactive_file");
        if (u.shmem_bytes < 0)
            u.shmem_bytes = 0;
        u.mem_cache_bytes = json_object_get(ms, "inactive_file") ? num(ms, "inactive_file")
                                                                  : num(ms, "total_inactive_file");
        if (u.mem_cache_bytes > u.mem_bytes)
            u.mem_cache_bytes = u.mem_bytes;
        u.mem_bytes -= u.mem_cache_bytes;
        const char *ifname;
        json_t *net;
        json_object_foreach(json_object_get(body, "networks"), ifname, net)
        {
            u.net_rx_bytes += num(net, "rx_bytes");
            u.net_tx_bytes += num(net, "tx_bytes");
        }
        c->usage(c->data, RB_OK, NULL, &u);
    }
    call_free(c);
}

static rb_err d_usage(void *self, const char *id, backend_usage_cb cb, void *data, char *err)
{
    call *c = call_new(DK(self), data);
    c->usage = cb;
    return call_started(c, docker_container_stats(DK(self), id, usage_read_cb, c, err));
}

/* The client's counts under its own names (docker_op_name, docker_failure_name). */
static void d_stats(void *self, backend_stats *out)
{
    _Static_assert(DOCKER_OP_MAX <= BACKEND_STATS_OPS && DOCKER_FAIL_MAX <= BACKEND_STATS_REASONS,
                   "backend_stats has room for every Docker operation and failure reason");
    docker_stats ds;
    docker_stats_read(DK(self), &ds);
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
    call *c = call_new(DK(self), data);
    c->name = cb;
    return call_started(c, docker_image_inspect(DK(self), image, image_inspected_cb, c, err));
}

static rb_err d_workspace_volume(void *self, const char *id, const char *path, backend_name_cb cb, void *data,
                                 char *err)
{
    call *c = call_new(DK(self), data);
    c->name = cb;
    c->path = xstrdup(path);
    return call_started(c, docker_container_inspect(DK(self), id, sandbox_inspected_cb, c, err));
}

static rb_err d_volume_create(void *self, const char *name, const backend_label *labels, size_t n_labels,
                              backend_cb cb, void *data, char *err)
{
    if (!volume_name_ok(name))
        return rb_fail(RB_EINVAL, err, "'%.200s' is not a volume name", name);
    call *c = call_new(DK(self), data);
    c->done = cb;
    json_t *conf = json_pack("{s:s, s:o}", "Name", name, "Labels", backend_docker__label_object(labels, n_labels));
    rb_err e = docker_volume_create(DK(self), conf, done_cb, c, err);
    json_decref(conf);
    return call_started(c, e);
}

static rb_err d_volume_remove(void *self, const char *name, backend_cb cb, void *data, char *err)
{
    call *c = call_new(DK(self), data);
    c->done = cb;
    return call_started(c, docker_volume_remove(DK(self), name, done_cb, c, err));
}

static rb_err d_ping(void *self, backend_ping_cb cb, void *data, char *err)
{
    call *c = call_new(DK(self), data);
    c->ping = cb;
    return call_started(c, docker_ping_version(DK(self), pinged_cb, c, err));
}

static rb_err d_create(void *self, const char *name, const backend_spec *spec, backend_create_cb cb, void *data,
                       char *err)
{
    rb_err e = backend_docker__volumes_check(spec, err);
    if (e == RB_OK)
        e = backend_docker__runtime_check(self, spec, err);
    if (e != RB_OK)
        return e;
    call *c = call_new(DK(self), data);
    c->created = cb;
    json_t *conf = backend_docker__container_config(spec);
    e = docker_container_create(DK(self), name, conf, created_cb, c, err);
    json_decref(conf);
    return call_started(c, e);
}

static rb_err d_start(void *self, const char *id, backend_cb cb, void *data, char *err)
{
    call *c = call_new(DK(self), data);
    c->done = cb;
    return call_started(c, docker_container_start(DK(self), id, done_cb, c, err));
}

static rb_err d_pause(void *self, const char *id, int on, backend_cb cb, void *data, char *err)
{
    call *c = call_new(DK(self), data);
    c->done = cb;
    return call_started(c, docker_container_pause(DK(self), id, on, done_cb, c, err));
}

static rb_err d_cpu_shares(void *self, const char *id, int64_t shares, backend_cb cb, void *data, char *err)
{
    call *c = call_new(DK(self), data);
    c->done = cb;
    return call_started(c, docker_container_cpu_shares(DK(self), id, shares, done_cb, c, err));
}

static rb_err d_remove(void *self, const char *id, backend_cb cb, void *data, char *err)
{
    call *c = call_new(DK(self), data);
    c->done = cb;
    return call_started(c, docker_container_remove(DK(self), id, done_cb, c, err));
}

static rb_err d_list(void *self, const char *label, backend_list_cb cb, void *data, char *err)
{
    call *c = call_new(DK(self), data);
    c->list = cb;
    return call_started(c, docker_container_list(DK(self), label, listed_cb, c, err));
}

static rb_err d_archive_put(void *self, const char *id, const char *dir, const void *tar, size_t len, backend_cb cb,
                            void *data, char *err)
{
    call *c = call_new(DK(self), data);
    c->done = cb;
    return call_started(c, docker_archive_put(DK(self), id, dir, tar, len, raw_cb, c, err));
}

static rb_err d_archive_get(void *self, const char *id, const char *path, size_t max, backend_bytes_cb cb,
                            void *data, char *err)
{
    call *c = call_new(DK(self), data);
    c->bytes = cb;
    return call_started(c, docker_archive_get(DK(self), id, path, max, raw_cb, c, err));
}

/* ---- networks -------------------------------------------------------------------------------- */

/* Networks and volumes as backend_sandbox_info: their name as id (what the other calls take), no
 * state; networks come as an array, volumes as {"Volumes": [...]}. */
static void named_listed_cb(void *data, rb_err err, const char *errmsg, int status, json_t *body)
{
    (void)status;
    report_list(data, err, errmsg, json_is_object(body) ? json_object_get(body, "Volumes") : body, "Name", NULL);
}

static rb_err d_volume_list_unused(void *self, const char *label, backend_list_cb cb, void *data, char *err)
{
    call *c = call_new(DK(self), data);
    c->list = cb;
    return call_started(c, docker_volume_list_dangling(DK(self), label, named_listed_cb, c, err));
}

/* A network made: its name is the one asked for. */
static void network_created_cb(void *data, rb_err err, const char *errmsg, int status, json_t *body)
{
    call *c = data;
    (void)status;
    (void)body;
    c->name(c->data, err, errmsg, err == RB_OK ? c->path : NULL);
    call_free(c);
}

static rb_err d_network_create(void *self, const char *name, int internal, const backend_label *labels,
                               size_t n_labels, backend_name_cb cb, void *data, char *err)
{
    call *c = call_new(DK(self), data);
    c->name = cb;
    c->path = xstrdup(name);
    json_t *lab = backend_docker__label_object(labels, n_labels);
    rb_err e = docker_network_create(DK(self), name, internal, lab, network_created_cb, c, err);
    json_decref(lab);
    return call_started(c, e);
}

static rb_err d_network_connect(void *self, const char *network, const char *id, const char *alias, backend_cb cb,
                                void *data, char *err)
{
    call *c = call_new(DK(self), data);
    c->done = cb;
    return call_started(c, docker_network_connect(DK(self), network, id, alias, done_cb, c, err));
}

static rb_err d_network_remove(void *self, const char *network, backend_cb cb, void *data, char *err)
{
    call *c = call_new(DK(self), data);
    c->done = cb;
    return call_started(c, docker_network_remove(DK(self), network, done_cb, c, err));
}

static rb_err d_network_list(void *self, const char *label, backend_list_cb cb, void *data, char *err)
{
    call *c = call_new(DK(self), data);
    c->list = cb;
    return call_started(c, docker_network_list(DK(self), label, named_listed_cb, c, err));
}

/* ---- attach: the client's stream, with the same callbacks ------------------------------------ */

static rb_err d_attach_open(void *self, const char *id, const backend_attach_cbs *cbs, void *data,
                            backend_attach **out, char *err)
{
    docker_attach_cbs dcbs = {cbs->on_open, cbs->on_data, cbs->on_close};
    docker_attach *a = NULL;
    rb_err e = docker_attach_start(DK(self), id, &dcbs, data, &a, err);
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
    backend_docker__report_output(r->cb, r->data, r->err, r->msg, r->exit_code, r->out);
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
    if (rb_crash_armed()) { /* "helper-copy:exited" for runbox-copy-<random> (docs/testing.md) */
        char step[80];
        const char *kind = strncmp(r->name, "runbox-", 7) == 0 ? r->name + 7 : r->name;
        const char *dash = strrchr(kind, '-');
        int len = (int)(dash != NULL ? (size_t)(dash - kind) : strlen(kind));
        snprintf(step, sizeof(step), "helper-%.*s:exited", len, kind);
        rb_crash_point(step);
    }
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
    rb_err e = backend_docker__volumes_check(spec, err);
    if (e == RB_OK)
        e = backend_docker__runtime_check(self, spec, err);
    if (e != RB_OK)
        return e;
    run_op *r = xcalloc(1, sizeof(*r));
    r->d = DK(self);
    r->cb = cb;
    r->data = data;
    r->timeout_ms = timeout_ms;
    r->name = xstrdup(name);
    r->max = max_output > 0 ? max_output : RUN_OUTPUT_MAX_DEFAULT;
    r->exit_code = -1;
    for (int i = 0; i < 3; i++)
        rb_buf_init(&r->out[i], r->max);
    json_t *conf = backend_docker__run_config(spec);
    e = docker_container_create(DK(self), name, conf, run_created_cb, r, err);
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
    backend_docker *bd = self;
    backend_docker__exit_wait_drop(bd);
    docker_free(bd->d);
    free(bd->runtimes);
    free(bd);
}

static int d_offers(void *self, const char *runtime)
{
    return backend_runtimes_has(((backend_docker *)self)->runtimes, runtime);
}

static json_t *d_runtimes(void *self)
{
    return backend_runtimes_json(((backend_docker *)self)->runtimes);
}

static const backend_ops docker_ops = {
    .name = "docker",
    .free = d_free,
    .ping = d_ping,
    .create = d_create,
    .start = d_start,
    .remove = d_remove,
    .pause = d_pause,
    .cpu_shares = d_cpu_shares,
    .list = d_list,
    .attach_open = d_attach_open,
    .attach_write = d_attach_write,
    .attach_close = d_attach_close,
    .attach_pause = d_attach_pause,
    .exec = backend_docker__exec,
    .archive_put = d_archive_put,
    .archive_get = d_archive_get,
    .run = d_run,
    .image_id = d_image_id,
    .volume_create = d_volume_create,
    .volume_remove = d_volume_remove,
    .volume_list_unused = d_volume_list_unused,
    .workspace_volume = d_workspace_volume,
    .exec_stream = backend_docker__exec_stream,
    .stream_pause = backend_docker__stream_pause,
    .stream_write = backend_docker__stream_write,
    .stream_close_input = backend_docker__stream_close_input,
    .stream_resize = backend_docker__stream_resize,
    .stream_close = backend_docker__stream_close,
    .state = d_state,
    .stats = d_stats,
    .usage = d_usage,
    .network_create = d_network_create,
    .network_connect = d_network_connect,
    .network_remove = d_network_remove,
    .network_list = d_network_list,
    .offers = d_offers,
    .runtimes = d_runtimes,
};

rb_err backend_docker_check(const backend_docker_engine *eng, char *err)
{
    if (eng->runtimes != NULL && backend_runtimes_check(eng->runtimes, err) != RB_OK)
        return RB_EINVAL;
    docker_endpoint ep = {eng->url, eng->tls_ca, eng->tls_cert, eng->tls_key};
    return docker_endpoint_check(&ep, err);
}

rb_err backend_docker_new(uv_loop_t *loop, const char *socket_path, long call_ms, long transfer_ms, backend **out,
                          char *err)
{
    backend_docker_engine eng = {socket_path, NULL, NULL, NULL, NULL};
    return backend_docker_new_at(loop, &eng, call_ms, transfer_ms, out, err);
}

rb_err backend_docker_new_at(uv_loop_t *loop, const backend_docker_engine *eng, long call_ms, long transfer_ms,
                             backend **out, char *err)
{
    docker *d;
    if (call_ms < 0 || transfer_ms < 0)
        return rb_fail(RB_EINVAL, err, "Docker deadlines must not be negative");
    if (eng->runtimes != NULL && backend_runtimes_check(eng->runtimes, err) != RB_OK)
        return RB_EINVAL;
    docker_endpoint ep = {eng->url, eng->tls_ca, eng->tls_cert, eng->tls_key};
    rb_err e = docker_new_endpoint(loop, &ep, &d, err);
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
    backend_docker *bd = xcalloc(1, sizeof(*bd));
    bd->d = d;
    bd->runtimes = xstrdup(eng->runtimes != NULL ? eng->runtimes : "runc");
    *out = backend_new(&docker_ops, bd);
    return RB_OK;
}


/*
 * backend.c: the calls of core/backend/backend.h, each passed on to the implementation's ops. Holds no
 * state and no engine knowledge of its own; the contracts are in backend.h.
 */
#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "core/backend/backend.h"

backend *backend_new(const backend_ops *ops, void *self)
{
    backend *b = xmalloc(sizeof(*b));
    b->ops = ops;
    b->self = self;
    return b;
}

void backend_free(backend *b)
{
    if (b == NULL)
        return;
    b->ops->free(b->self);
    free(b);
}

rb_err backend_ping(backend *b, backend_ping_cb cb, void *data, char *err)
{
    assert(cb != NULL);
    return b->ops->ping(b->self, cb, data, err);
}

rb_err backend_create(backend *b, const char *name, const backend_spec *spec, backend_create_cb cb, void *data,
                      char *err)
{
    assert(spec != NULL && spec->image != NULL && cb != NULL);
    return b->ops->create(b->self, name, spec, cb, data, err);
}

rb_err backend_start(backend *b, const char *id, backend_cb cb, void *data, char *err)
{
    assert(cb != NULL);
    return b->ops->start(b->self, id, cb, data, err);
}

rb_err backend_pause(backend *b, const char *id, int on, backend_cb cb, void *data, char *err)
{
    assert(cb != NULL);
    if (b->ops->pause == NULL)
        return rb_fail(RB_ECONFLICT, err, "the %s backend cannot freeze a sandbox", b->ops->name);
    return b->ops->pause(b->self, id, on, cb, data, err);
}

rb_err backend_cpu_shares(backend *b, const char *id, int64_t shares, backend_cb cb, void *data, char *err)
{
    assert(cb != NULL);
    if (b->ops->cpu_shares == NULL)
        return rb_fail(RB_EINTERNAL, err, "the %s backend cannot change a sandbox's CPU weight", b->ops->name);
    return b->ops->cpu_shares(b->self, id, shares, cb, data, err);
}

rb_err backend_remove(backend *b, const char *id, backend_cb cb, void *data, char *err)
{
    assert(cb != NULL);
    return b->ops->remove(b->self, id, cb, data, err);
}

rb_err backend_list(backend *b, const char *label, backend_list_cb cb, void *data, char *err)
{
    assert(label != NULL && cb != NULL);
    return b->ops->list(b->self, label, cb, data, err);
}

rb_err backend_attach_open(backend *b, const char *id, const backend_attach_cbs *cbs, void *data,
                           backend_attach **out, char *err)
{
    assert(cbs != NULL && out != NULL);
    return b->ops->attach_open(b->self, id, cbs, data, out, err);
}

rb_err backend_attach_write(backend *b, backend_attach *a, const char *buf, size_t len, char *err)
{
    return b->ops->attach_write(b->self, a, buf, len, err);
}

void backend_attach_close(backend *b, backend_attach *a)
{
    b->ops->attach_close(b->self, a);
}

void backend_attach_pause(backend *b, backend_attach *a, int paused)
{
    b->ops->attach_pause(b->self, a, paused);
}

rb_err backend_exec(backend *b, const char *id, const backend_exec_spec *spec, backend_exec_cb cb, void *data,
                    char *err)
{
    assert(spec != NULL && spec->argv != NULL && spec->argv[0] != NULL && cb != NULL);
    return b->ops->exec(b->self, id, spec, cb, data, err);
}

rb_err backend_archive_put(backend *b, const char *id, const char *dir, const void *tar, size_t len, backend_cb cb,
                           void *data, char *err)
{
    assert(cb != NULL);
    return b->ops->archive_put(b->self, id, dir, tar, len, cb, data, err);
}

rb_err backend_archive_get(backend *b, const char *id, const char *path, size_t max, backend_bytes_cb cb,
                           void *data, char *err)
{
    assert(cb != NULL);
    return b->ops->archive_get(b->self, id, path, max, cb, data, err);
}

rb_err backend_run(backend *b, const char *name, const backend_spec *spec, long timeout_ms, size_t max_output,
                   backend_exec_cb cb, void *data, char *err)
{
    assert(name != NULL && spec != NULL && spec->image != NULL && cb != NULL);
    return b->ops->run(b->self, name, spec, timeout_ms, max_output, cb, data, err);
}

rb_err backend_image_id(backend *b, const char *image, backend_name_cb cb, void *data, char *err)
{
    assert(image != NULL && cb != NULL);
    return b->ops->image_id(b->self, image, cb, data, err);
}

rb_err backend_volume_create(backend *b, const char *name, const backend_label *labels, size_t n_labels,
                             backend_cb cb, void *data, char *err)
{
    assert(name != NULL && cb != NULL);
    return b->ops->volume_create(b->self, name, labels, n_labels, cb, data, err);
}

rb_err backend_volume_remove(backend *b, const char *name, backend_cb cb, void *data, char *err)
{
    assert(name != NULL && cb != NULL);
    return b->ops->volume_remove(b->self, name, cb, data, err);
}

rb_err backend_workspace_volume(backend *b, const char *id, const char *path, backend_name_cb cb, void *data,
                                char *err)
{
    assert(id != NULL && path != NULL && cb != NULL);
    return b->ops->workspace_volume(b->self, id, path, cb, data, err);
}

rb_err backend_state(backend *b, const char *id, backend_state_cb cb, void *data, char *err)
{
    assert(id != NULL && cb != NULL);
    if (b->ops->state == NULL)
        return rb_fail(RB_EINTERNAL, err, "the %s backend cannot tell a sandbox's state", b->ops->name);
    return b->ops->state(b->self, id, cb, data, err);
}

rb_err backend_usage_read(backend *b, const char *id, backend_usage_cb cb, void *data, char *err)
{
    assert(id != NULL && cb != NULL);
    if (b->ops->usage == NULL)
        return rb_fail(RB_EINTERNAL, err, "the %s backend cannot read a sandbox's use of resources", b->ops->name);
    return b->ops->usage(b->self, id, cb, data, err);
}

void backend_stats_read(backend *b, backend_stats *out)
{
    memset(out, 0, sizeof(*out));
    if (b != NULL && b->ops->stats != NULL)
        b->ops->stats(b->self, out);
}

rb_err backend_exec_stream(backend *b, const char *id, const backend_exec_spec *spec, const backend_stream_cbs *cbs,
                           void *data, backend_stream **out, char *err)
{
    assert(spec != NULL && spec->argv != NULL && spec->argv[0] != NULL && cbs != NULL && out != NULL);
    if (b->ops->exec_stream == NULL)
        return rb_fail(RB_EINTERNAL, err, "the %s backend cannot stream a command's output", b->ops->name);
    return b->ops->exec_stream(b->self, id, spec, cbs, data, out, err);
}

void backend_stream_pause(backend *b, backend_stream *st, int paused)
{
    if (b->ops->stream_pause != NULL)
        b->ops->stream_pause(b->self, st, paused);
}

void backend_stream_close(backend *b, backend_stream *st)
{
    if (b->ops->stream_close != NULL)
        b->ops->stream_close(b->self, st);
}

rb_err backend_stream_write(backend *b, backend_stream *st, const char *buf, size_t len, char *err)
{
    if (b->ops->stream_write == NULL)
        return rb_fail(RB_ECONFLICT, err, "the %s backend cannot write to a command's input", b->ops->name);
    return b->ops->stream_write(b->self, st, buf, len, err);
}

rb_err backend_stream_resize(backend *b, backend_stream *st, unsigned rows, unsigned cols, backend_cb cb, void *data,
                             char *err)
{
    if (b->ops->stream_resize == NULL)
        return rb_fail(RB_EINTERNAL, err, "the %s backend cannot resize a command's terminal", b->ops->name);
    return b->ops->stream_resize(b->self, st, rows, cols, cb, data, err);
}

rb_err backend_stream_close_input(backend *b, backend_stream *st, char *err)
{
    if (b->ops->stream_close_input == NULL)
        return rb_fail(RB_ECONFLICT, err, "the %s backend cannot close a command's input", b->ops->name);
    return b->ops->stream_close_input(b->self, st, err);
}

rb_err backend_network_create(backend *b, const char *name, int internal, const backend_label *labels,
                              size_t n_labels, backend_name_cb cb, void *data, char *err)
{
    assert(name != NULL && cb != NULL);
    if (b->ops->network_create == NULL)
        return rb_fail(RB_EINTERNAL, err, "the %s backend cannot make networks", b->ops->name);
    return b->ops->network_create(b->self, name, internal, labels, n_labels, cb, data, err);
}

rb_err backend_network_connect(backend *b, const char *network, const char *id, const char *alias, backend_cb cb,
                               void *data, char *err)
{
    assert(network != NULL && id != NULL && cb != NULL);
    if (b->ops->network_connect == NULL)
        return rb_fail(RB_EINTERNAL, err, "the %s backend cannot join sandboxes to networks", b->ops->name);
    return b->ops->network_connect(b->self, network, id, alias, cb, data, err);
}

rb_err backend_network_remove(backend *b, const char *network, backend_cb cb, void *data, char *err)
{
    assert(network != NULL && cb != NULL);
    if (b->ops->network_remove == NULL)
        return rb_fail(RB_EINTERNAL, err, "the %s backend cannot remove networks", b->ops->name);
    return b->ops->network_remove(b->self, network, cb, data, err);
}

rb_err backend_volume_list_unused(backend *b, const char *label, backend_list_cb cb, void *data, char *err)
{
    assert(label != NULL && cb != NULL);
    if (b->ops->volume_list_unused == NULL)
        return rb_fail(RB_EINTERNAL, err, "the %s backend cannot list volumes", b->ops->name);
    return b->ops->volume_list_unused(b->self, label, cb, data, err);
}

rb_err backend_network_list(backend *b, const char *label, backend_list_cb cb, void *data, char *err)
{
    assert(label != NULL && cb != NULL);
    if (b->ops->network_list == NULL)
        return rb_fail(RB_EINTERNAL, err, "the %s backend cannot list networks", b->ops->name);
    return b->ops->network_list(b->self, label, cb, data, err);
}

char *backend_pin(backend *b, const char *ref, const char *name)
{
    assert(name != NULL);
    if (b->ops->pin == NULL || ref == NULL)
        return xstrdup(name);
    return b->ops->pin(b->self, ref, name);
}

char *backend_place(backend *b, const char *name, char *err)
{
    assert(name != NULL);
    if (b->ops->place == NULL)
        return xstrdup(name);
    return b->ops->place(b->self, name, err);
}

json_t *backend_engines(backend *b)
{
    return b->ops->engines != NULL ? b->ops->engines(b->self) : NULL;
}

rb_err backend_drain(backend *b, const char *engine, int on, char *err)
{
    if (b->ops->drain == NULL)
        return rb_fail(RB_ENOTFOUND, err,
                       "no engine is named '%.64s': runboxd drives the one Docker engine of --docker-socket; engines "
                       "have names, and can be drained, when runboxd is given several (--engine NAME=URL, more than "
                       "once)",
                       engine);
    return b->ops->drain(b->self, engine, on, err);
}

const char *backend_engine_down(backend *b, const char *id)
{
    return b->ops->engine_down != NULL && id != NULL ? b->ops->engine_down(b->self, id) : NULL;
}

int backend_offers(backend *b, const char *runtime)
{
    if (b->ops->offers == NULL) /* a backend that declares nothing offers runc */
        return backend_runtimes_has(NULL, runtime);
    return b->ops->offers(b->self, runtime);
}

json_t *backend_runtimes(backend *b)
{
    return b->ops->runtimes != NULL ? b->ops->runtimes(b->self) : backend_runtimes_json(NULL);
}

#define RUNTIME_NAME_MAX 64

static int runtime_char(char ch)
{
    return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '.' ||
           ch == '_' || ch == '-';
}

rb_err backend_runtimes_check(const char *list, char *err)
{
    const char *p = list;
    if (p == NULL || *p == '\0')
        return rb_fail(RB_EINVAL, err, "a runtime list names at least one runtime (e.g. runc+runsc)");
    for (;;) {
        size_t n = 0;
        while (p[n] != '\0' && p[n] != '+') {
            if (!runtime_char(p[n]))
                return rb_fail(RB_EINVAL, err,
                               "runtimes '%.100s': a runtime's name is letters, digits, '.', '_' and '-'; join "
                               "several with '+' (runc+runsc)",
                               list);
            n++;
        }
        if (n == 0 || n > RUNTIME_NAME_MAX)
            return rb_fail(RB_EINVAL, err, "runtimes '%.100s': each name is 1 to %d characters, joined by '+'", list,
                           RUNTIME_NAME_MAX);
        if (p[n] == '\0')
            return RB_OK;
        p += n + 1;
    }
}

int backend_runtimes_has(const char *list, const char *runtime)
{
    if (runtime == NULL)
        return 1;
    const char *p = list != NULL ? list : "runc";
    size_t want = strlen(runtime);
    while (*p) {
        size_t n = strcspn(p, "+");
        if (n == want && strncmp(p, runtime, n) == 0)
            return 1;
        p += n;
        if (*p == '+')
            p++;
    }
    return 0;
}

json_t *backend_runtimes_json(const char *list)
{
    json_t *a = json_array();
    const char *p = list != NULL ? list : "runc";
    while (*p) {
        size_t n = strcspn(p, "+");
        if (n > 0)
            json_array_append_new(a, json_stringn(p, n));
        p += n;
        if (*p == '+')
            p++;
    }
    return a;
}

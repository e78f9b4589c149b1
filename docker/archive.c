/*
 * archive.c: the Engine API calls that move bytes rather than JSON: the archive API (tar in,
 * tar out) used to move files in and out of sandboxes without a shared folder, container logs
 * and waits (used by the dependency installer), exec (short helper commands inside a sandbox)
 * and volumes. Thin wrappers over docker_request
 * and docker_request_raw: they check and escape their arguments and build the path. Tar
 * building and parsing live in base/tar.c; this file never looks inside the bytes.
 */
#include "docker/docker_private.h"

#include <stdlib.h>
#include <string.h>

#include "base/codec.h"

#define ARCHIVE_PATH_MAX 4096

static rb_err check_path(const char *path, char *err)
{
    if (path == NULL || path[0] != '/' || strlen(path) > ARCHIVE_PATH_MAX)
        return rb_fail(RB_EINVAL, err, "a container path must be absolute and at most %d bytes", ARCHIVE_PATH_MAX);
    return RB_OK;
}

static char *archive_url(const char *id, const char *path)
{
    char *esc = codec_percent_encode(path, "/");
    char *url = xasprintf("/containers/%s/archive?path=%s", id, esc);
    free(esc);
    return url;
}

rb_err docker_archive_put(docker *d, const char *id, const char *dir, const void *tar, size_t len, docker_raw_cb cb,
                          void *data, char *err)
{
    rb_err e = docker__check_ref(id, err);
    if (e == RB_OK)
        e = check_path(dir, err);
    if (e != RB_OK)
        return e;
    if (tar == NULL || len == 0)
        return rb_fail(RB_EINVAL, err, "an archive upload needs a tar body");
    char *url = archive_url(id, dir);
    e = docker_request_raw(d, "PUT", url, "application/x-tar", tar, len, 64 * 1024, 0, cb, data, NULL, err);
    free(url);
    return e;
}

rb_err docker_archive_get(docker *d, const char *id, const char *path, size_t max, docker_raw_cb cb, void *data,
                          char *err)
{
    rb_err e = docker__check_ref(id, err);
    if (e == RB_OK)
        e = check_path(path, err);
    if (e != RB_OK)
        return e;
    char *url = archive_url(id, path);
    e = docker_request_raw(d, "GET", url, NULL, NULL, 0, max, 0, cb, data, NULL, err);
    free(url);
    return e;
}

rb_err docker_container_wait(docker *d, const char *id, long timeout_ms, docker_cb cb, void *data, char *err)
{
    return docker__ref_request(d, DOCKER__WAIT, "POST", "/containers/", id, "/wait", NULL, timeout_ms, cb, data, err);
}

rb_err docker_container_logs(docker *d, const char *id, size_t max, docker_raw_cb cb, void *data, char *err)
{
    rb_err e = docker__check_ref(id, err);
    if (e != RB_OK)
        return e;
    char *url = xasprintf("/containers/%s/logs?stdout=1&stderr=1", id);
    e = docker_request_raw(d, "GET", url, NULL, NULL, 0, max, 0, cb, data, NULL, err);
    free(url);
    return e;
}

rb_err docker_exec_create(docker *d, const char *id, json_t *config, docker_cb cb, void *data, char *err)
{
    rb_err e = docker__check_ref(id, err);
    if (e != RB_OK)
        return e;
    if (!json_is_object(config))
        return rb_fail(RB_EINVAL, err, "exec create needs a config object");
    char *url = xasprintf("/containers/%s/exec", id);
    e = docker_request(d, "POST", url, config, 0, cb, data, NULL, err);
    free(url);
    return e;
}

rb_err docker_exec_start(docker *d, const char *exec_id, size_t max, long timeout_ms, docker_raw_cb cb, void *data,
                         char *err)
{
    static const char body[] = "{\"Detach\":false,\"Tty\":false}";
    rb_err e = docker__check_ref(exec_id, err);
    if (e != RB_OK)
        return e;
    /* Docker answers with the raw stream and closes the connection when the process exits. */
    char *url = xasprintf("/exec/%s/start", exec_id);
    e = docker__request_raw(d, DOCKER__WAIT, "POST", url, "application/json", body, sizeof(body) - 1, max, timeout_ms,
                            cb, data, NULL, err);
    free(url);
    return e;
}

rb_err docker_exec_inspect(docker *d, const char *exec_id, docker_cb cb, void *data, char *err)
{
    return docker__ref_request(d, DOCKER__SHORT, "GET", "/exec/", exec_id, "/json", NULL, 0, cb, data, err);
}

rb_err docker_exec_resize(docker *d, const char *exec_id, unsigned rows, unsigned cols, docker_cb cb, void *data,
                          char *err)
{
    char post[64];
    snprintf(post, sizeof(post), "/resize?h=%u&w=%u", rows, cols);
    return docker__ref_request(d, DOCKER__SHORT, "POST", "/exec/", exec_id, post, NULL, 0, cb, data, err);
}

rb_err docker_volume_create(docker *d, json_t *config, docker_cb cb, void *data, char *err)
{
    if (!json_is_object(config))
        return rb_fail(RB_EINVAL, err, "volume create needs a config object");
    return docker_request(d, "POST", "/volumes/create", config, 0, cb, data, NULL, err);
}

rb_err docker_volume_remove(docker *d, const char *name, docker_cb cb, void *data, char *err)
{
    if (name == NULL || !docker__valid_ref(name))
        return rb_fail(RB_EINVAL, err, "invalid volume name: it must be 1-256 characters of [A-Za-z0-9_.-]");
    char *url = xasprintf("/volumes/%s", name);
    rb_err e = docker_request(d, "DELETE", url, NULL, 0, cb, data, NULL, err);
    free(url);
    return e;
}

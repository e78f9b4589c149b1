/*
 * container.c: the Engine API calls on containers and images that answer JSON (create, start,
 * kill, remove, inspect, list; image inspect), and the rule for container and exec references
 * the whole module checks against. Thin wrappers over docker__request: they check and escape
 * their arguments and build the path; connections, deadlines and completions are the request
 * engine's (docker.c). The byte-moving calls (archive, logs, wait, exec, volumes) live in archive.c.
 */
#include "docker/docker_private.h"

#include <stdlib.h>
#include <string.h>

#include "base/codec.h"

int docker__valid_ref(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > 256)
        return 0;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '.' ||
                 c == '-';
        if (!ok)
            return 0;
    }
    return 1;
}

rb_err docker__check_ref(const char *id, char *err)
{
    if (id == NULL || !docker__valid_ref(id))
        return rb_fail(RB_EINVAL, err, "invalid container id or name: it must be 1-256 characters of [A-Za-z0-9_.-]");
    return RB_OK;
}

rb_err docker__ref_request(docker *d, docker__kind kind, const char *method, const char *pre, const char *id,
                           const char *post, json_t *body, long timeout_ms, docker_cb cb, void *data, char *err)
{
    rb_err e = docker__check_ref(id, err);
    if (e != RB_OK)
        return e;
    char *path = xasprintf("%s%s%s", pre, id, post);
    e = docker__request(d, kind, method, path, body, timeout_ms, cb, data, NULL, err);
    free(path);
    return e;
}

rb_err docker_container_create(docker *d, const char *name, json_t *config, docker_cb cb, void *data, char *err)
{
    if (config == NULL)
        return rb_fail(RB_EINVAL, err, "container create needs a config object");
    if (name == NULL)
        return docker_request(d, "POST", "/containers/create", config, 0, cb, data, NULL, err);
    return docker__ref_request(d, DOCKER__SHORT, "POST", "/containers/create?name=", name, "", config, 0, cb, data,
                               err);
}

rb_err docker_container_start(docker *d, const char *id, docker_cb cb, void *data, char *err)
{
    return docker__ref_request(d, DOCKER__SHORT, "POST", "/containers/", id, "/start", NULL, 0, cb, data, err);
}

/* A pause call's caller, for the translation of the freezer's transient refusal. */
typedef struct pause_call {
    docker_cb cb;
    void *data;
} pause_call;

/* The engine answers 500 when the cgroup freezer gave up (runc: "unable to freeze", after its
 * own tries, the cgroup thawed again): tasks that keep forking can outrun it on cgroup v1. That
 * is worth another try in a moment, hence RB_EBUSY; every other answer passes as it is. */
static void paused_cb(void *data, rb_err err, const char *errmsg, int status, json_t *body)
{
    pause_call *pc = data;
    char text[RB_ERR_LEN];
    if (err == RB_EIO && status >= 500 && errmsg != NULL && (strstr(errmsg, "unable to freeze") != NULL ||
                                                             strstr(errmsg, "freezing") != NULL)) {
        err = rb_fail(RB_EBUSY, text, "the cgroup freezer could not stop the sandbox's processes (%.400s)", errmsg);
        errmsg = text;
    }
    pc->cb(pc->data, err, errmsg, status, body);
    free(pc);
}

rb_err docker_container_pause(docker *d, const char *id, int on, docker_cb cb, void *data, char *err)
{
    pause_call *pc = xmalloc(sizeof(*pc));
    pc->cb = cb;
    pc->data = data;
    rb_err e = docker__ref_request(d, DOCKER__SHORT, "POST", "/containers/", id, on ? "/pause" : "/unpause", NULL, 0,
                                   paused_cb, pc, err);
    if (e != RB_OK)
        free(pc);
    return e;
}

rb_err docker_container_cpu_shares(docker *d, const char *id, int64_t shares, docker_cb cb, void *data, char *err)
{
    json_t *body = json_pack("{s:I}", "CpuShares", (json_int_t)shares);
    rb_err e = docker__ref_request(d, DOCKER__SHORT, "POST", "/containers/", id, "/update", body, 0, cb, data, err);
    json_decref(body);
    return e;
}

rb_err docker_container_kill(docker *d, const char *id, const char *signal, docker_cb cb, void *data, char *err)
{
    rb_err e = docker__check_ref(id, err);
    if (e != RB_OK)
        return e;
    if (signal == NULL)
        signal = "SIGKILL";
    if (!docker__valid_ref(signal) || strlen(signal) > 16)
        return rb_fail(RB_EINVAL, err, "invalid signal name \"%.32s\"", signal);
    char *path = xasprintf("/containers/%s/kill?signal=%s", id, signal);
    e = docker_request(d, "POST", path, NULL, 0, cb, data, NULL, err);
    free(path);
    return e;
}

rb_err docker_container_remove(docker *d, const char *id, docker_cb cb, void *data, char *err)
{
    return docker__ref_request(d, DOCKER__SHORT, "DELETE", "/containers/", id, "?force=1&v=1", NULL, 0, cb, data, err);
}

rb_err docker_container_inspect(docker *d, const char *id, docker_cb cb, void *data, char *err)
{
    return docker__ref_request(d, DOCKER__SHORT, "GET", "/containers/", id, "/json", NULL, 0, cb, data, err);
}

rb_err docker_container_stats(docker *d, const char *id, docker_cb cb, void *data, char *err)
{
    return docker__ref_request(d, DOCKER__SHORT, "GET", "/containers/", id, "/stats?stream=false&one-shot=true", NULL,
                               0, cb, data, err);
}

/* GET prefix with a label filter: prefix + "filters={"label":[label]}" (and "dangling":["true"]
 * when dangling), URL-encoded. */
static rb_err list_filtered(docker *d, const char *prefix, const char *label, int dangling, docker_cb cb, void *data,
                            char *err)
{
    json_t *f = json_pack("{s:[s]}", "label", label);
    if (f == NULL)
        return rb_fail(RB_EINVAL, err, "label filter is not valid UTF-8");
    if (dangling)
        json_object_set_new(f, "dangling", json_pack("[s]", "true"));
    char *fj = json_dumps(f, JSON_COMPACT);
    json_decref(f);
    char *esc = codec_percent_encode(fj, "");
    free(fj);
    char *path = xasprintf("%sfilters=%s", prefix, esc);
    free(esc);
    rb_err e = docker_request(d, "GET", path, NULL, 0, cb, data, NULL, err);
    free(path);
    return e;
}

rb_err docker_container_list(docker *d, const char *label, docker_cb cb, void *data, char *err)
{
    if (label == NULL || label[0] == '\0')
        return docker_request(d, "GET", "/containers/json?all=1", NULL, 0, cb, data, NULL, err);
    return list_filtered(d, "/containers/json?all=1&", label, 0, cb, data, err);
}

rb_err docker_image_inspect(docker *d, const char *name, docker_cb cb, void *data, char *err)
{
    if (name == NULL || name[0] == '\0' || strlen(name) > 512)
        return rb_fail(RB_EINVAL, err, "image name must be 1-512 characters");
    char *esc = codec_percent_encode(name, "/:@");
    char *path = xasprintf("/images/%s/json", esc);
    free(esc);
    rb_err e = docker_request(d, "GET", path, NULL, 0, cb, data, NULL, err);
    free(path);
    return e;
}

/* ---- networks ------------------------------------------------------------------------------- */

rb_err docker_network_create(docker *d, const char *name, int internal, json_t *labels, docker_cb cb, void *data,
                             char *err)
{
    if (name == NULL || !docker__valid_ref(name))
        return rb_fail(RB_EINVAL, err, "invalid network name: it must be 1-256 characters of [A-Za-z0-9_.-]");
    json_t *conf = json_pack("{s:s, s:b, s:b, s:s, s:o}", "Name", name, "CheckDuplicate", 1, "Internal",
                             internal != 0, "Driver", "bridge", "Labels",
                             labels != NULL ? json_incref(labels) : json_object());
    /* On Linux the host's own address on a bridge is reachable from an internal network (only
     * forwarding is dropped); without it the members reach each other and nothing else. */
    if (internal)
        json_object_set_new(conf, "Options", json_pack("{s:s}", "com.docker.network.bridge.inhibit_ipv4", "true"));
    rb_err e = docker_request(d, "POST", "/networks/create", conf, 0, cb, data, NULL, err);
    json_decref(conf);
    return e;
}

rb_err docker_network_connect(docker *d, const char *net, const char *container, const char *alias, docker_cb cb,
                              void *data, char *err)
{
    rb_err e = docker__check_ref(container, err);
    if (e != RB_OK)
        return e;
    if (alias != NULL && !docker__valid_ref(alias))
        return rb_fail(RB_EINVAL, err, "invalid network alias \"%.64s\"", alias);
    json_t *body = json_pack("{s:s, s:{}}", "Container", container, "EndpointConfig");
    if (alias != NULL)
        json_object_set_new(json_object_get(body, "EndpointConfig"), "Aliases", json_pack("[s]", alias));
    e = docker__ref_request(d, DOCKER__SHORT, "POST", "/networks/", net, "/connect", body, 0, cb, data, err);
    json_decref(body);
    return e;
}

rb_err docker_network_remove(docker *d, const char *net, docker_cb cb, void *data, char *err)
{
    return docker__ref_request(d, DOCKER__SHORT, "DELETE", "/networks/", net, "", NULL, 0, cb, data, err);
}

rb_err docker_volume_list_dangling(docker *d, const char *label, docker_cb cb, void *data, char *err)
{
    if (label == NULL || label[0] == '\0')
        return rb_fail(RB_EINVAL, err, "listing volumes needs a label to filter by");
    return list_filtered(d, "/volumes?", label, 1, cb, data, err);
}

rb_err docker_network_list(docker *d, const char *label, docker_cb cb, void *data, char *err)
{
    if (label == NULL || label[0] == '\0')
        return rb_fail(RB_EINVAL, err, "listing networks needs a label to filter by");
    return list_filtered(d, "/networks?", label, 0, cb, data, err);
}

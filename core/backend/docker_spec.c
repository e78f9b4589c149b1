/*
 * docker_spec.c: a backend_spec as the Engine API's container configuration (core/backend/docker.h):
 * limits, hardening, mounts, labels. The calls that use it are in docker.c.
 */
#include <stdlib.h>
#include <string.h>

#include "core/backend/docker.h"
#include "core/backend/docker_private.h"

/* ---- spec -> Engine API JSON ---------------------------------------------------------------- */

json_t *backend_docker__string_list(const char *const *list)
{
    json_t *a = json_array();
    for (size_t i = 0; list != NULL && list[i] != NULL; i++)
        json_array_append_new(a, json_string(list[i]));
    return a;
}

/* obj[key] = the list, unless list is NULL (not set). */
void backend_docker__set_list(json_t *obj, const char *key, const char *const *list)
{
    if (list != NULL)
        json_object_set_new(obj, key, backend_docker__string_list(list));
}

json_t *backend_docker__label_object(const backend_label *labels, size_t n)
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
rb_err backend_docker__volumes_check(const backend_spec *sp, char *err)
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

rb_err backend_docker__runtime_check(const backend_docker *bd, const backend_spec *sp, char *err)
{
    if (backend_runtimes_has(bd->runtimes, sp->runtime))
        return RB_OK;
    return rb_fail(RB_EUNAVAILABLE, err,
                   "this Docker engine does not offer the runtime %.64s (it offers %.200s): register it in the "
                   "engine's daemon.json and declare it (--docker-runtimes, or runtimes= on --engine)",
                   sp->runtime, bd->runtimes);
}

static json_t *host_config(const backend_spec *sp)
{
    json_t *hc = json_pack("{s:s, s:I, s:I, s:I, s:b, s:b}", "NetworkMode", sp->network ? sp->network : "none",
                           "Memory", (json_int_t)sp->memory, "MemorySwap", (json_int_t)(sp->memory + sp->swap),
                           "PidsLimit", (json_int_t)sp->pids_limit, "ReadonlyRootfs", sp->readonly_root != 0, "Init",
                           sp->init != 0);
    if (sp->nano_cpus > 0)
        json_object_set_new(hc, "NanoCpus", json_integer((json_int_t)sp->nano_cpus));
    if (sp->cpu_shares > 0)
        json_object_set_new(hc, "CpuShares", json_integer((json_int_t)sp->cpu_shares));
    backend_docker__set_list(hc, "CapDrop", sp->cap_drop);
    backend_docker__set_list(hc, "CapAdd", sp->cap_add);
    backend_docker__set_list(hc, "SecurityOpt", sp->security_opt);
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
                                      backend_docker__label_object(sp->workspace_labels, sp->n_workspace_labels), "DriverConfig",
                                      "Name", "local", "Options", "type", "tmpfs", "device", "tmpfs", "o",
                                      mount_options(&sp->workspace)));
    if (sp->n_volumes > 0)
        json_object_set_new(hc, "Binds", binds(sp->volumes, sp->n_volumes));
    if (sp->log_driver != NULL)
        json_object_set_new(hc, "LogConfig", json_pack("{s:s}", "Type", sp->log_driver));
    if (sp->runtime != NULL)
        json_object_set_new(hc, "Runtime", json_string(sp->runtime));
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
                             backend_docker__label_object(sp->labels, sp->n_labels), "NetworkDisabled", sp->network == NULL,
                             "HostConfig", host_config(sp));
    backend_docker__set_list(conf, "Cmd", sp->cmd);
    backend_docker__set_list(conf, "Env", sp->env);
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

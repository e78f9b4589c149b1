/*
 * Unit tests of the Docker backend's translation of a neutral sandbox spec into the Engine API
 * container configuration (core/backend_docker.c, backend_docker__container_config), without
 * Docker: the fields the security model relies on (no network, read-only root, all capabilities
 * dropped, no-new-privileges, no swap, a pids limit, the image's non-root user) and the whole
 * document for the spec of a default sandbox, as sandbox.c builds it.
 */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "core/backend_docker.h"

static const char *const cap_drop[] = {"ALL", NULL};
static const char *const security_opt[] = {"no-new-privileges", NULL};
static const char *const env[] = {"RUNBOX_LANGUAGE=python", "RUNBOX_SANDBOX=1", NULL};
static const backend_label labels[] = {{"runbox.session", "pool"}, {"runbox.managed", "1"}};
static const backend_label volume_labels[] = {{"runbox.managed", "1"}};
static const backend_mount tmp = {"/tmp", 268435456, -1, -1, -1};
static const backend_ulimit ulimits[] = {{"nofile", 1024, 1024}, {"core", 0, 0}};

/* A default sandbox: 512 MiB for the interpreter plus the 512 MiB workspace and 256 MiB /tmp. */
static backend_spec sandbox_spec(void)
{
    return (backend_spec){
        .image = "runbox-sandbox:latest",
        .env = env,
        .working_dir = "/workspace",
        .labels = labels,
        .n_labels = 2,
        .memory = 1342177280,
        .nano_cpus = 1000000000,
        .pids_limit = 256,
        .readonly_root = 1,
        .tmpfs = &tmp,
        .n_tmpfs = 1,
        .workspace = {"/workspace", 536870912, 1000, 1000, 0755},
        .workspace_labels = volume_labels,
        .n_workspace_labels = 1,
        .ulimits = ulimits,
        .n_ulimits = 2,
        .cap_drop = cap_drop,
        .security_opt = security_opt,
        .init = 1,
        .log_driver = "none",
    };
}

static json_t *host_config(json_t *conf)
{
    json_t *hc = json_object_get(conf, "HostConfig");
    cr_assert(json_is_object(hc), "no HostConfig");
    return hc;
}

Test(backend_docker, the_security_model_reaches_the_engine)
{
    backend_spec sp = sandbox_spec();
    json_t *conf = backend_docker__container_config(&sp);
    json_t *hc = host_config(conf);
    cr_assert_str_eq(json_string_value(json_object_get(hc, "NetworkMode")), "none");
    cr_assert(json_is_true(json_object_get(conf, "NetworkDisabled")));
    cr_assert(json_is_true(json_object_get(hc, "ReadonlyRootfs")));
    json_t *caps = json_object_get(hc, "CapDrop");
    cr_assert_eq(json_array_size(caps), 1);
    cr_assert_str_eq(json_string_value(json_array_get(caps, 0)), "ALL");
    cr_assert_null(json_object_get(hc, "CapAdd"));
    json_t *sec = json_object_get(hc, "SecurityOpt");
    cr_assert_eq(json_array_size(sec), 1);
    cr_assert_str_eq(json_string_value(json_array_get(sec, 0)), "no-new-privileges");
    cr_assert_eq(json_integer_value(json_object_get(hc, "Memory")), 1342177280);
    cr_assert_eq(json_integer_value(json_object_get(hc, "MemorySwap")), 1342177280, "no swap: MemorySwap == Memory");
    cr_assert_eq(json_integer_value(json_object_get(hc, "PidsLimit")), 256);
    cr_assert(json_is_true(json_object_get(hc, "Init")));
    cr_assert_null(json_object_get(conf, "User"), "no User: the image's non-root user applies");
    cr_assert_null(json_object_get(conf, "Cmd"), "no Cmd: the image's entry point (the runner) runs");
    json_decref(conf);
}

Test(backend_docker, a_default_sandbox_gives_todays_engine_config)
{
    /* The configuration runboxd sent before the backend interface, for the same sandbox. */
    static const char want[] =
        "{\"Image\":\"runbox-sandbox:latest\",\"Env\":[\"RUNBOX_LANGUAGE=python\",\"RUNBOX_SANDBOX=1\"],"
        "\"Labels\":{\"runbox.session\":\"pool\",\"runbox.managed\":\"1\"},\"AttachStdin\":true,"
        "\"AttachStdout\":true,\"AttachStderr\":true,\"OpenStdin\":true,\"StdinOnce\":false,\"Tty\":false,"
        "\"WorkingDir\":\"/workspace\",\"NetworkDisabled\":true,\"HostConfig\":{\"NetworkMode\":\"none\","
        "\"Memory\":1342177280,\"MemorySwap\":1342177280,\"NanoCpus\":1000000000,\"PidsLimit\":256,"
        "\"ReadonlyRootfs\":true,\"CapDrop\":[\"ALL\"],\"SecurityOpt\":[\"no-new-privileges\"],"
        "\"Tmpfs\":{\"/tmp\":\"rw,nosuid,nodev,size=268435456\"},\"Init\":true,\"LogConfig\":{\"Type\":\"none\"},"
        "\"Ulimits\":[{\"Name\":\"nofile\",\"Soft\":1024,\"Hard\":1024},{\"Name\":\"core\",\"Soft\":0,\"Hard\":0}],"
        "\"Mounts\":[{\"Type\":\"volume\",\"Target\":\"/workspace\",\"VolumeOptions\":{\"Labels\":"
        "{\"runbox.managed\":\"1\"},\"DriverConfig\":{\"Name\":\"local\",\"Options\":{\"type\":\"tmpfs\","
        "\"device\":\"tmpfs\",\"o\":\"rw,nosuid,nodev,size=536870912,uid=1000,gid=1000,mode=0755\"}}}}]}}";
    json_error_t jerr;
    json_t *expected = json_loads(want, 0, &jerr);
    cr_assert_not_null(expected, "%s", jerr.text);
    backend_spec sp = sandbox_spec();
    json_t *conf = backend_docker__container_config(&sp);
    char *got = json_dumps(conf, JSON_SORT_KEYS);
    cr_assert(json_equal(conf, expected), "got %s", got);
    free(got);
    json_decref(conf);
    json_decref(expected);
}

Test(backend_docker, network_user_command_and_swap_when_asked)
{
    static const char *const cmd[] = {"python3", "-I", "-c", "print(1)", NULL};
    static const char *const cap_add[] = {"CHOWN", NULL};
    backend_spec sp = sandbox_spec();
    sp.network = "runbox-egress";
    sp.user = "1000";
    sp.cmd = cmd;
    sp.cap_add = cap_add;
    sp.swap = 1024;
    json_t *conf = backend_docker__container_config(&sp);
    json_t *hc = host_config(conf);
    cr_assert_str_eq(json_string_value(json_object_get(hc, "NetworkMode")), "runbox-egress");
    cr_assert(json_is_false(json_object_get(conf, "NetworkDisabled")));
    cr_assert_str_eq(json_string_value(json_object_get(conf, "User")), "1000");
    cr_assert_eq(json_array_size(json_object_get(conf, "Cmd")), 4);
    cr_assert_str_eq(json_string_value(json_array_get(json_object_get(conf, "Cmd"), 3)), "print(1)");
    cr_assert_str_eq(json_string_value(json_array_get(json_object_get(hc, "CapAdd"), 0)), "CHOWN");
    cr_assert_eq(json_integer_value(json_object_get(hc, "MemorySwap")), 1342177280 + 1024);
    json_decref(conf);
}

Test(backend_docker, no_workspace_no_mounts)
{
    backend_spec sp = sandbox_spec();
    sp.workspace.path = NULL;
    sp.n_tmpfs = 0;
    sp.log_driver = NULL;
    json_t *conf = backend_docker__container_config(&sp);
    json_t *hc = host_config(conf);
    cr_assert_null(json_object_get(hc, "Mounts"));
    cr_assert_null(json_object_get(hc, "Tmpfs"));
    cr_assert_null(json_object_get(hc, "LogConfig"));
    json_decref(conf);
}

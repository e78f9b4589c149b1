/*
 * Tests of the Docker backend (core/backend/docker.c). Without Docker: its translation of a
 * neutral sandbox spec into the Engine API container configuration (the fields the security
 * model relies on: no network, read-only root, all capabilities dropped, no-new-privileges, no
 * swap, a pids limit, the image's non-root user; the whole document for a default sandbox, as
 * sandbox.c builds it, and for the dependency copier's one-shot run, as deps.c builds it),
 * and mounts it refuses. With the real engine and image: one-shot runs (exit code, streams kept
 * apart, output tails, deadlines, nothing left behind), image ids and named volumes.
 */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "core/backend/docker.h"
#include "core/deps/oneshot.h"
#include "tests/core/support_core.h"

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

/* The dependency copier as deps.c builds it: one-shot defaults (no capability at all), the
 * sandbox's uid, the shared cache read-only, the session's workspace read-write. */
Test(backend_docker, the_dependency_copier_reaches_the_engine_unprivileged_with_the_cache_read_only)
{
    /* The body of the installer before issue 9's finding 8 differed in User ("0"), CapAdd
     * (["CHOWN","DAC_OVERRIDE","FOWNER"]), the cache's mode (read-write) and /tmp's size ("1g",
     * the same 1 GiB); with its CA bundle it is now the filler's, which has no workspace. */
    static const char want[] =
        "{\"Image\":\"runbox-sandbox:latest\",\"Cmd\":[\"sh\",\"-c\",\"true\"],\"User\":\"1000:1000\","
        "\"Env\":[\"RUNBOX_REQS=x\",\"HOME=/tmp\"],\"WorkingDir\":\"/tmp\",\"Labels\":{\"runbox.instance\":\"i1\","
        "\"runbox.managed\":\"1\",\"runbox.deps-for\":\"s_1\"},\"NetworkDisabled\":true,\"HostConfig\":{"
        "\"NetworkMode\":\"none\",\"Memory\":1073741824,\"MemorySwap\":1073741824,\"PidsLimit\":256,"
        "\"ReadonlyRootfs\":true,\"CapDrop\":[\"ALL\"],\"SecurityOpt\":[\"no-new-privileges\"],"
        "\"Tmpfs\":{\"/tmp\":\"rw,nosuid,nodev,size=1073741824\"},\"Init\":true,\"LogConfig\":{\"Type\":"
        "\"json-file\"},\"Binds\":[\"runbox-deps-x:/cache:ro\",\"ws1:/target\"]}}";
    static const char *const cmd[] = {"sh", "-c", "true", NULL};
    static const char *const renv[] = {"RUNBOX_REQS=x", "HOME=/tmp", NULL};
    static const backend_label rlabels[] = {
        {"runbox.instance", "i1"}, {"runbox.managed", "1"}, {"runbox.deps-for", "s_1"}};
    static const backend_volume vols[] = {{"runbox-deps-x", NULL, "/cache", 1}, {"ws1", NULL, "/target", 0}};
    backend_spec sp;
    oneshot_spec_init(&sp, "runbox-sandbox:latest", NULL);
    sp.cmd = cmd;
    sp.user = "1000:1000";
    sp.env = renv;
    sp.working_dir = "/tmp";
    sp.labels = rlabels;
    sp.n_labels = 3;
    sp.volumes = vols;
    sp.n_volumes = 2;
    json_error_t jerr;
    json_t *expected = json_loads(want, 0, &jerr);
    cr_assert_not_null(expected, "%s", jerr.text);
    json_t *conf = backend_docker__run_config(&sp);
    char *got = json_dumps(conf, JSON_SORT_KEYS);
    cr_assert(json_equal(conf, expected), "got %s", got);
    free(got);
    json_decref(conf);
    json_decref(expected);
}

/* ---- with the real engine ------------------------------------------------------------------ */

typedef struct outcome {
    int done;
    rb_err err;
    char msg[RB_ERR_LEN];
    int exit_code;
    char *out, *errout;
    size_t out_len;
    char *name;
    size_t n;
} outcome;

static void outcome_dispose(outcome *o)
{
    free(o->out);
    free(o->errout);
    free(o->name);
}

static void record(outcome *o, rb_err err, const char *errmsg)
{
    o->done = 1;
    o->err = err;
    snprintf(o->msg, sizeof(o->msg), "%s", errmsg ? errmsg : "");
}

static void run_cb(void *data, rb_err err, const char *errmsg, const backend_exec_result *r)
{
    outcome *o = data;
    record(o, err, errmsg);
    if (r != NULL) {
        o->exit_code = r->exit_code;
        o->out = strndup(r->out, r->out_len);
        o->out_len = r->out_len;
        o->errout = strndup(r->err, r->err_len);
    }
}

static void name_cb(void *data, rb_err err, const char *errmsg, const char *name)
{
    outcome *o = data;
    record(o, err, errmsg);
    o->name = name ? strdup(name) : NULL;
}

static void done_cb(void *data, rb_err err, const char *errmsg)
{
    record(data, err, errmsg);
}

static void list_cb(void *data, rb_err err, const char *errmsg, const backend_sandbox_info *items, size_t n)
{
    outcome *o = data;
    (void)items;
    record(o, err, errmsg);
    o->n = n;
}

static backend *be;
static char tag[40];

/* A one-shot container of the sandbox image: read-only root, no capabilities, its output kept
 * by the engine for backend_run to read. */
static void test_spec_init(backend_spec *sp, const char *image)
{
    *sp = (backend_spec){.image = image,
                         .memory = 256 * 1024 * 1024,
                         .pids_limit = 64,
                         .readonly_root = 1,
                         .cap_drop = cap_drop,
                         .security_opt = security_opt,
                         .init = 1,
                         .log_driver = "json-file"};
}

static void engine_open(void)
{
    char err[RB_ERR_LEN];
    sup_fixture_open("backend", RB_LOG_WARN);
    cr_assert_eq(backend_docker_new(&sup_loop, sup_cfg.docker_socket, 0, 0, &be, err), RB_OK, "%s", err);
    rb_random_id("t", tag, sizeof(tag));
}

static void engine_close(void)
{
    backend_free(be);
    sup_fixture_close();
}

/* Runs script with sh as uid 1000, labelled runbox.test=tag. */
static void run_script(const char *script, const backend_volume *vols, size_t n_vols, long timeout_ms, size_t max,
                       outcome *o)
{
    const char *const cmd[] = {"sh", "-c", script, NULL};
    const backend_label test_labels[] = {{"runbox.test", tag}};
    char name[80], err[RB_ERR_LEN];
    backend_spec sp;
    test_spec_init(&sp, sup_cfg.image);
    sp.cmd = cmd;
    sp.user = "1000";
    sp.labels = test_labels;
    sp.n_labels = 1;
    sp.volumes = vols;
    sp.n_volumes = n_vols;
    rb_random_id("runbox-test-", name, sizeof(name));
    *o = (outcome){0};
    cr_assert_eq(backend_run(be, name, &sp, timeout_ms, max, run_cb, o, err), RB_OK, "%s", err);
    sup_run_until(&o->done, 60000);
    cr_assert(o->done, "the run did not finish");
}

static size_t containers_left(void)
{
    char label[80], err[RB_ERR_LEN];
    outcome o = {0};
    snprintf(label, sizeof(label), "runbox.test=%s", tag);
    cr_assert_eq(backend_list(be, label, list_cb, &o, err), RB_OK, "%s", err);
    sup_run_until(&o.done, 10000);
    cr_assert_eq(o.err, RB_OK, "%s", o.msg);
    return o.n;
}

Test(backend_docker, a_run_reports_its_exit_code_and_streams_and_leaves_nothing, .init = engine_open,
     .fini = engine_close)
{
    outcome o;
    run_script("echo out; echo err >&2; id -u; exit 3", NULL, 0, 60000, 0, &o);
    cr_assert_eq(o.err, RB_OK, "%s", o.msg);
    cr_assert_eq(o.exit_code, 3);
    cr_assert_str_eq(o.out, "out\n1000\n");
    cr_assert_str_eq(o.errout, "err\n");
    outcome_dispose(&o);
    cr_assert_eq(containers_left(), 0);
}

Test(backend_docker, a_run_keeps_the_tail_of_its_output, .init = engine_open, .fini = engine_close)
{
    static const char script[] = "i=0; while [ $i -lt 1600 ]; do "
                                 "echo 0123456789012345678901234567890123456789012345678901234567890; "
                                 "i=$((i+1)); done; echo END";
    outcome o;
    /* about 100 KiB of lines, then the end: at most 64 KiB are kept, ending with the end */
    run_script(script, NULL, 0, 60000, 65536, &o);
    cr_assert_eq(o.err, RB_OK, "%s", o.msg);
    cr_assert_eq(o.exit_code, 0);
    cr_assert(o.out_len >= 32768 && o.out_len <= 65536, "%zu bytes kept", o.out_len);
    cr_assert(strcmp(o.out + o.out_len - 4, "END\n") == 0, "the tail is kept");
    outcome_dispose(&o);
    /* more than twice the cap: nothing is read, and the run still reports its exit */
    run_script(script, NULL, 0, 60000, 4096, &o);
    cr_assert_eq(o.err, RB_OK, "%s", o.msg);
    cr_assert_eq(o.exit_code, 0);
    cr_assert_eq(o.out_len, 0);
    outcome_dispose(&o);
}

Test(backend_docker, a_run_past_its_deadline_is_stopped_and_removed, .init = engine_open, .fini = engine_close)
{
    outcome o;
    run_script("sleep 60", NULL, 0, 1500, 0, &o);
    cr_assert_eq(o.err, RB_ETIMEDOUT, "%s: %s", rb_strerror(o.err), o.msg);
    outcome_dispose(&o);
    cr_assert_eq(containers_left(), 0);
}

Test(backend_docker, volumes_outlive_runs_and_mount_read_only_when_asked, .init = engine_open, .fini = engine_close)
{
    char vol[64], err[RB_ERR_LEN];
    snprintf(vol, sizeof(vol), "runbox-test-%s", tag);
    const backend_label test_labels[] = {{"runbox.test", tag}};
    outcome o = {0};
    cr_assert_eq(backend_volume_create(be, vol, test_labels, 1, done_cb, &o, err), RB_OK, "%s", err);
    sup_run_until(&o.done, 10000);
    cr_assert_eq(o.err, RB_OK, "%s", o.msg);

    /* a fresh volume belongs to root: the writer runs as root, without capabilities (it owns it) */
    backend_volume rw = {vol, NULL, "/v", 0}, ro = {vol, NULL, "/v", 1};
    const char *const cmd[] = {"sh", "-c", "echo kept > /v/f", NULL};
    backend_spec sp;
    test_spec_init(&sp, sup_cfg.image);
    sp.cmd = cmd;
    sp.user = "0";
    sp.labels = test_labels;
    sp.n_labels = 1;
    sp.volumes = &rw;
    sp.n_volumes = 1;
    o = (outcome){0};
    cr_assert_eq(backend_run(be, "runbox-test-writer", &sp, 60000, 0, run_cb, &o, err), RB_OK, "%s", err);
    sup_run_until(&o.done, 60000);
    cr_assert_eq(o.err, RB_OK, "%s", o.msg);
    cr_assert_eq(o.exit_code, 0, "%s", o.errout);
    outcome_dispose(&o);

    run_script("cat /v/f; touch /v/g 2>/dev/null && echo wrote", &ro, 1, 60000, 0, &o);
    cr_assert_eq(o.err, RB_OK, "%s", o.msg);
    cr_assert_str_eq(o.out, "kept\n");
    outcome_dispose(&o);

    o = (outcome){0};
    cr_assert_eq(backend_volume_remove(be, vol, done_cb, &o, err), RB_OK, "%s", err);
    sup_run_until(&o.done, 10000);
    cr_assert_eq(o.err, RB_OK, "%s", o.msg);
    o = (outcome){0};
    cr_assert_eq(backend_volume_remove(be, vol, done_cb, &o, err), RB_OK, "%s", err);
    sup_run_until(&o.done, 10000);
    cr_assert_eq(o.err, RB_ENOTFOUND, "%s", o.msg);
}

Test(backend_docker, image_ids_and_what_is_not_there, .init = engine_open, .fini = engine_close)
{
    char err[RB_ERR_LEN];
    outcome o = {0};
    cr_assert_eq(backend_image_id(be, sup_cfg.image, name_cb, &o, err), RB_OK, "%s", err);
    sup_run_until(&o.done, 10000);
    cr_assert_eq(o.err, RB_OK, "%s", o.msg);
    cr_assert(strncmp(o.name, "sha256:", 7) == 0, "%s", o.name);
    outcome_dispose(&o);

    o = (outcome){0};
    cr_assert_eq(backend_image_id(be, "runbox-no-such-image:none", name_cb, &o, err), RB_OK, "%s", err);
    sup_run_until(&o.done, 10000);
    cr_assert_eq(o.err, RB_ENOTFOUND, "%s", o.msg);
    outcome_dispose(&o);

    o = (outcome){0};
    cr_assert_eq(backend_workspace_volume(be, "runbox-no-such-container", "/workspace", name_cb, &o, err), RB_OK,
                 "%s", err);
    sup_run_until(&o.done, 10000);
    cr_assert_eq(o.err, RB_ENOTFOUND, "%s", o.msg);
    outcome_dispose(&o);

    /* a missing image is RB_ENOTFOUND, and nothing is left */
    static const char *const cmd[] = {"true", NULL};
    backend_spec sp;
    test_spec_init(&sp, "runbox-no-such-image:none");
    sp.cmd = cmd;
    o = (outcome){0};
    cr_assert_eq(backend_run(be, "runbox-test-noimage", &sp, 10000, 0, run_cb, &o, err), RB_OK, "%s", err);
    sup_run_until(&o.done, 10000);
    cr_assert_eq(o.err, RB_ENOTFOUND, "%s", o.msg);
    outcome_dispose(&o);
}

Test(backend_docker, mounts_that_would_be_misread_are_refused, .init = engine_open, .fini = engine_close)
{
    static const backend_volume bad[][1] = {{{"a:b", NULL, "/v", 0}},
                                            {{"vol", NULL, "/v:ro", 0}},
                                            {{NULL, "relative/path", "/v", 1}},
                                            {{"vol", NULL, "v", 0}},
                                            {{NULL, NULL, "/v", 0}}};
    char err[RB_ERR_LEN];
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        backend_spec sp;
        test_spec_init(&sp, sup_cfg.image);
        sp.volumes = bad[i];
        sp.n_volumes = 1;
        outcome o = {0};
        cr_assert_eq(backend_run(be, "runbox-test-bad", &sp, 1000, 0, run_cb, &o, err), RB_EINVAL, "mount %zu", i);
        cr_assert_eq(backend_volume_create(be, "bad:name", NULL, 0, done_cb, &o, err), RB_EINVAL);
        cr_assert_not(o.done);
    }
}

/* Runtimes: the spec's runtime reaches the engine as HostConfig.Runtime; an engine refuses, before
 * any call, a runtime it was not declared to offer, naming it and the way to declare it. */
Test(backend_docker, runtimes_reach_the_engine_and_an_undeclared_one_is_refused)
{
    backend_spec sp = sandbox_spec();
    json_t *conf = backend_docker__container_config(&sp);
    cr_assert_null(json_object_get(host_config(conf), "Runtime"), "no runtime: the engine's default");
    json_decref(conf);
    sp.runtime = "runsc";
    conf = backend_docker__container_config(&sp);
    cr_assert_str_eq(json_string_value(json_object_get(host_config(conf), "Runtime")), "runsc");
    json_decref(conf);

    char err[RB_ERR_LEN];
    uv_loop_t loop;
    uv_loop_init(&loop);
    backend *b;
    backend_docker_engine eng = {"/nonexistent/docker.sock", NULL, NULL, NULL, "runc"};
    cr_assert_eq(backend_docker_new_at(&loop, &eng, 0, 0, &b, err), RB_OK, "%s", err);
    cr_assert(backend_offers(b, NULL) && backend_offers(b, "runc") && !backend_offers(b, "runsc"));
    cr_assert_eq(backend_create(b, "runbox-test-runtime", &sp, NULL, NULL, err), RB_EUNAVAILABLE);
    cr_assert(strstr(err, "runsc") != NULL && strstr(err, "--docker-runtimes") != NULL, "%s", err);
    json_t *rt = backend_runtimes(b);
    cr_assert_eq(json_array_size(rt), 1);
    json_decref(rt);
    backend_free(b);
    eng.runtimes = "runc+runsc";
    cr_assert_eq(backend_docker_new_at(&loop, &eng, 0, 0, &b, err), RB_OK, "%s", err);
    cr_assert(backend_offers(b, "runsc") && !backend_offers(b, "runs"));
    backend_free(b);
    eng.runtimes = "runc+";
    cr_assert_eq(backend_docker_check(&eng, err), RB_EINVAL);
    eng.runtimes = "runc runsc";
    cr_assert_eq(backend_docker_new_at(&loop, &eng, 0, 0, &b, err), RB_EINVAL);
    cr_assert(strstr(err, "runc+runsc") != NULL, "%s", err);
    uv_run(&loop, UV_RUN_DEFAULT);
    cr_assert_eq(uv_loop_close(&loop), 0);
}

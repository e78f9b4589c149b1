/*
 * test_config.c: daemon/config.c: defaults validate, sizes and durations with suffixes, bad
 * values and unknown keys name the key, the environment is read, and flags applied after the
 * environment win.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "daemon/config.h"

Test(config, defaults_are_valid)
{
    rb_config c;
    char err[RB_ERR_LEN];
    config_init(&c);
    cr_assert_eq(config_validate(&c, err), RB_OK, "%s", err);
    cr_assert_str_eq(c.server.listen, RB_DEFAULT_LISTEN);
    cr_assert_eq(c.server.max_body, (size_t)RB_DEFAULT_MAX_BODY);
    config_dispose(&c);
}

Test(config, sizes_accept_suffixes)
{
    rb_config c;
    char err[RB_ERR_LEN];
    config_init(&c);
    cr_assert_eq(config_set(&c, "max-body", "2048", err), RB_OK);
    cr_assert_eq(c.server.max_body, 2048u);
    cr_assert_eq(config_set(&c, "max-body", "512k", err), RB_OK);
    cr_assert_eq(c.server.max_body, 512u * 1024);
    cr_assert_eq(config_set(&c, "max-body", "2M", err), RB_OK);
    cr_assert_eq(c.server.max_body, 2u << 20);
    cr_assert_eq(config_set(&c, "output-limit", "1g", err), RB_OK);
    cr_assert_eq(c.core.output_limit, (size_t)1 << 30);
    cr_assert_eq(config_set(&c, "output-limit", "64KiB", err), RB_OK);
    cr_assert_eq(c.core.output_limit, 64u * 1024);
    cr_assert_eq(config_set(&c, "memory", "1g", err), RB_OK);
    cr_assert_eq(c.core.memory_mb, 1024);
    cr_assert_eq(config_set(&c, "memory", "256", err), RB_OK);
    cr_assert_eq(c.core.memory_mb, 256);
    cr_assert_eq(config_set(&c, "max-body", "12x", err), RB_EINVAL);
    cr_assert(strstr(err, "max-body") != NULL, "%s", err);
    cr_assert_eq(config_set(&c, "max-body", "-1", err), RB_EINVAL);
    cr_assert_eq(config_set(&c, "max-body", "", err), RB_EINVAL);
    config_dispose(&c);
}

Test(config, durations_and_numbers)
{
    rb_config c;
    char err[RB_ERR_LEN];
    config_init(&c);
    cr_assert_eq(config_set(&c, "timeout", "2.5", err), RB_OK);
    cr_assert_float_eq(c.core.default_timeout, 2.5, 1e-9);
    cr_assert_eq(config_set(&c, "max-timeout", "2h", err), RB_OK);
    cr_assert_float_eq(c.core.max_timeout, 7200.0, 1e-9);
    cr_assert_eq(config_set(&c, "idle-timeout", "5m", err), RB_OK);
    cr_assert_eq(c.core.idle_timeout, 300);
    cr_assert_eq(config_set(&c, "retention", "1d", err), RB_OK);
    cr_assert_eq(c.core.retention, 86400);
    cr_assert_eq(config_set(&c, "cpus", "1.5", err), RB_OK);
    cr_assert_float_eq(c.core.cpus, 1.5, 1e-9);
    cr_assert_eq(config_set(&c, "max-sessions", "7", err), RB_OK);
    cr_assert_eq(c.core.max_sessions, 7);
    cr_assert_eq(config_set(&c, "max-sessions", "7.5", err), RB_EINVAL);
    cr_assert(strstr(err, "max-sessions") != NULL);
    cr_assert_eq(config_set(&c, "timeout", "soon", err), RB_EINVAL);
    cr_assert(strstr(err, "timeout") != NULL);
    cr_assert_eq(config_set(&c, "cpus", "nan", err), RB_EINVAL);
    cr_assert_eq(config_set(&c, "log-level", "loud", err), RB_EINVAL);
    cr_assert_eq(config_set(&c, "grace-ms", "500", err), RB_OK);
    cr_assert_eq(c.core.grace_ms, 500);
    config_dispose(&c);
}

Test(config, docker_deadlines)
{
    rb_config c;
    char err[RB_ERR_LEN];
    config_init(&c);
    cr_assert_float_eq(c.core.docker_timeout, 30.0, 1e-9);
    cr_assert_float_eq(c.core.docker_transfer_timeout, 120.0, 1e-9);
    cr_assert_eq(config_set(&c, "docker-timeout", "2.5", err), RB_OK);
    cr_assert_float_eq(c.core.docker_timeout, 2.5, 1e-9);
    cr_assert_eq(config_set(&c, "docker-transfer-timeout", "5m", err), RB_OK);
    cr_assert_float_eq(c.core.docker_transfer_timeout, 300.0, 1e-9);
    cr_assert_eq(config_validate(&c, err), RB_OK, "%s", err);
    cr_assert_eq(config_set(&c, "docker-timeout", "0", err), RB_OK);
    cr_assert_eq(config_validate(&c, err), RB_EINVAL);
    cr_assert(strncmp(err, "docker-timeout", 14) == 0, "%s", err);
    cr_assert_eq(config_set(&c, "docker-timeout", "30", err), RB_OK);
    cr_assert_eq(config_set(&c, "docker-transfer-timeout", "2d", err), RB_OK);
    cr_assert_eq(config_validate(&c, err), RB_EINVAL);
    cr_assert(strncmp(err, "docker-transfer-timeout", 23) == 0, "%s", err);
    config_dispose(&c);
}

Test(config, unknown_key_is_named)
{
    rb_config c;
    char err[RB_ERR_LEN];
    config_init(&c);
    cr_assert_eq(config_set(&c, "max-bodies", "1", err), RB_EINVAL);
    cr_assert(strstr(err, "max-bodies") != NULL, "%s", err);
    config_dispose(&c);
}

Test(config, validate_names_the_key)
{
    rb_config c;
    char err[RB_ERR_LEN];
    config_init(&c);
    cr_assert_eq(config_set(&c, "timeout", "7200", err), RB_OK);
    cr_assert_eq(config_validate(&c, err), RB_EINVAL);
    cr_assert(strncmp(err, "timeout", 7) == 0, "%s", err);
    config_dispose(&c);

    config_init(&c);
    cr_assert_eq(config_set(&c, "listen", "localhost", err), RB_OK);
    cr_assert_eq(config_validate(&c, err), RB_EINVAL);
    cr_assert(strncmp(err, "listen", 6) == 0, "%s", err);
    cr_assert_eq(config_set(&c, "listen", "127.0.0.1:0", err), RB_OK);
    cr_assert_eq(config_validate(&c, err), RB_OK, "%s", err);
    cr_assert_eq(config_set(&c, "listen", "[::1]:70000", err), RB_OK);
    cr_assert_eq(config_validate(&c, err), RB_EINVAL);
    cr_assert_eq(config_set(&c, "memory", "8g", err), RB_OK);
    cr_assert_eq(config_set(&c, "listen", "[::1]:8080", err), RB_OK);
    cr_assert_eq(config_validate(&c, err), RB_EINVAL);
    cr_assert(strncmp(err, "memory", 6) == 0, "%s", err);
    config_dispose(&c);

    /* downloads in flight must have room for one file of the largest size */
    config_init(&c);
    cr_assert_eq(config_set(&c, "max-download", "100m", err), RB_OK);
    cr_assert_eq(config_set(&c, "max-download-memory", "99m", err), RB_OK);
    cr_assert_eq(config_validate(&c, err), RB_EINVAL);
    cr_assert(strncmp(err, "max-download-memory", 19) == 0, "%s", err);
    cr_assert_eq(config_set(&c, "max-download-memory", "100m", err), RB_OK);
    cr_assert_eq(config_validate(&c, err), RB_OK, "%s", err);
    config_dispose(&c);
}

Test(config, env_then_flags_win)
{
    rb_config c;
    char err[RB_ERR_LEN];
    setenv("RUNBOX_MAX_BODY", "4k", 1);
    setenv("RUNBOX_IMAGE", "from-env", 1);
    setenv("RUNBOX_GRACE_MS", "250", 1);
    config_init(&c);
    cr_assert_eq(config_load_env(&c, err), RB_OK, "%s", err);
    cr_assert_eq(c.server.max_body, 4096u);
    cr_assert_str_eq(c.core.image, "from-env");
    cr_assert_eq(c.core.grace_ms, 250);
    /* flags are applied after the environment */
    cr_assert_eq(config_set(&c, "image", "from-flag", err), RB_OK);
    cr_assert_str_eq(c.core.image, "from-flag");
    config_dispose(&c);

    setenv("RUNBOX_MAX_SESSIONS", "many", 1);
    config_init(&c);
    cr_assert_eq(config_load_env(&c, err), RB_EINVAL);
    cr_assert(strstr(err, "RUNBOX_MAX_SESSIONS") != NULL && strstr(err, "max-sessions") != NULL, "%s", err);
    config_dispose(&c);
    unsetenv("RUNBOX_MAX_SESSIONS");
}

static void count_key(void *data, const char *key, const char *env, const char *value, const char *help)
{
    (void)value;
    cr_assert(strncmp(env, "RUNBOX_", 7) == 0);
    cr_assert(key[0] != '\0' && help[0] != '\0');
    (*(int *)data)++;
}

Test(config, each_lists_every_key)
{
    rb_config c;
    config_init(&c);
    int n = 0;
    config_each(&c, count_key, &n);
    cr_assert_eq(n, 97); /* every key of daemon/config.c (keys table) */
    config_dispose(&c);
}

Test(config, switches_are_the_boolean_keys)
{
    cr_assert(config_is_switch("allow-unauthenticated"));
    cr_assert(config_is_switch("allow-network"));
    cr_assert(!config_is_switch("api-keys-file"));
    cr_assert(!config_is_switch("listen"));
    cr_assert(!config_is_switch("no-such-key"));
}

/* Moved from the policy and pool tests when configuration moved to daemon/. */
Test(config, code_policy_keys)
{
    char err[RB_ERR_LEN];
    rb_config cfg;
    config_init(&cfg);
    cr_assert_str_eq(cfg.core.code_policy, "off");
    cr_assert_eq(config_validate(&cfg, err), RB_OK, "%s", err);
    cr_assert_eq(config_set(&cfg, "code-policy", "lenient", err), RB_OK);
    cr_assert_eq(config_validate(&cfg, err), RB_EINVAL);
    cr_assert(strstr(err, "code-policy") != NULL, "%s", err);
    cr_assert_eq(config_set(&cfg, "code-policy", "custom", err), RB_OK);
    cr_assert_eq(config_validate(&cfg, err), RB_EINVAL, "custom needs a file");
    cr_assert_eq(config_set(&cfg, "code-policy-file", "/etc/runbox/rules", err), RB_OK);
    cr_assert_eq(config_validate(&cfg, err), RB_OK, "%s", err);
    cr_assert_eq(config_set(&cfg, "code-policy", "off", err), RB_OK);
    cr_assert_eq(config_validate(&cfg, err), RB_EINVAL, "a file with the policy off is a mistake");
    config_dispose(&cfg);
}

Test(config, pool_keys_are_validated)
{
    char err[RB_ERR_LEN];
    rb_config k;
    config_init(&k);
    cr_assert_eq(k.core.pool_size, RB_DEFAULT_POOL_SIZE);
    cr_assert_eq(config_set(&k, "pool-size", "5", err), RB_OK, "%s", err);
    cr_assert_eq(k.core.pool_size, 5);
    cr_assert_eq(config_validate(&k, err), RB_OK, "%s", err);
    cr_assert_eq(config_set(&k, "pool-size", "-1", err), RB_OK, "%s", err);
    cr_assert_eq(config_validate(&k, err), RB_EINVAL);
    cr_assert(strstr(err, "pool-size") != NULL, "%s", err);
    cr_assert_eq(config_set(&k, "pool-size", "many", err), RB_EINVAL);
    config_dispose(&k);
    /* the pool that follows demand: its maximum and its warm sandboxes' CPU weight */
    config_init(&k);
    cr_assert_eq(k.core.pool_max, RB_DEFAULT_POOL_MAX);
    cr_assert_eq(k.core.pool_cpu_shares, RB_DEFAULT_POOL_CPU_SHARES);
    cr_assert_eq(config_set(&k, "pool-max", "300", err), RB_OK, "%s", err);
    cr_assert_eq(config_validate(&k, err), RB_EINVAL);
    cr_assert(strstr(err, "pool-max") != NULL, "%s", err);
    cr_assert_eq(config_set(&k, "pool-max", "8", err), RB_OK, "%s", err);
    cr_assert_eq(config_set(&k, "pool-cpu-shares", "1", err), RB_OK, "%s", err);
    cr_assert_eq(config_validate(&k, err), RB_EINVAL);
    cr_assert(strstr(err, "pool-cpu-shares") != NULL, "%s", err);
    cr_assert_eq(config_set(&k, "pool-cpu-shares", "0", err), RB_OK, "%s", err);
    cr_assert_eq(config_validate(&k, err), RB_OK, "%s", err);
    config_dispose(&k);
}

Test(config, malformed_dependency_policy_stops_start_up)
{
    char err[RB_ERR_LEN];
    rb_config c;
    config_init(&c);
    cr_assert_eq(config_set(&c, "deps-block", "evil<2, evil", err), RB_OK, "%s", err);
    cr_assert_eq(config_validate(&c, err), RB_EINVAL, "a second rule for one package is refused");
    cr_assert(strstr(err, "deps-block") != NULL, "%s", err);
    cr_assert_eq(config_set(&c, "deps-block", "evil<2", err), RB_OK, "%s", err);
    cr_assert_eq(config_set(&c, "deps-allow", "requests<2", err), RB_OK, "%s", err);
    cr_assert_eq(config_validate(&c, err), RB_EINVAL, "deps-allow takes name>=V, not name<V");
    cr_assert(strstr(err, "deps-allow") != NULL, "%s", err);
    cr_assert_eq(config_set(&c, "deps-allow", "requests>=2.31, numpy", err), RB_OK, "%s", err);
    cr_assert_eq(config_validate(&c, err), RB_OK, "%s", err);
    config_dispose(&c);
}

Test(config, preload_is_a_list_of_module_names_or_empty)
{
    rb_config c;
    char err[RB_ERR_LEN];
    config_init(&c);
    cr_assert_str_eq(c.core.preload, "numpy,pandas,matplotlib.pyplot");
    const char *good[] = {"", "numpy", " numpy , pandas,matplotlib.pyplot ", "_priv.mod2", "a,,b"};
    for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
        cr_assert_eq(config_set(&c, "preload", good[i], err), RB_OK, "%s: %s", good[i], err);
        cr_assert_eq(config_validate(&c, err), RB_OK, "'%s': %s", good[i], err);
    }
    cr_assert_str_eq(c.core.preload, "a,,b");
    const char *bad[] = {"9lives", "a..b", "numpy.", ".numpy", "os;import sys", "numpy pandas", "pan-das", "a,b$"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        cr_assert_eq(config_set(&c, "preload", bad[i], err), RB_OK);
        cr_assert_eq(config_validate(&c, err), RB_EINVAL, "'%s' passed", bad[i]);
        cr_assert(strstr(err, "preload") != NULL, "%s", err);
    }
    config_dispose(&c);
}

Test(config, npm_registry_is_an_http_url)
{
    rb_config c;
    char err[RB_ERR_LEN];
    config_init(&c);
    cr_assert_str_eq(c.core.deps_npm_registry, "https://registry.npmjs.org/");
    const char *good[] = {"http://registry:4873/", "https://npm.example.internal/path/"};
    for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
        cr_assert_eq(config_set(&c, "deps-npm-registry", good[i], err), RB_OK, "%s: %s", good[i], err);
        cr_assert_eq(config_validate(&c, err), RB_OK, "'%s': %s", good[i], err);
    }
    const char *bad[] = {"", "registry.npmjs.org", "file:///tmp/x", "http://a b/", "http://a/\n--x"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        if (config_set(&c, "deps-npm-registry", bad[i], err) == RB_OK)
            cr_assert_eq(config_validate(&c, err), RB_EINVAL, "'%s' passed", bad[i]);
        cr_assert(strstr(err, "deps-npm-registry") != NULL, "%s", err);
    }
    config_dispose(&c);
}

Test(config, web_settings_are_checked)
{
    rb_config c;
    char err[RB_ERR_LEN];
    config_init(&c);
    cr_assert_eq(c.core.web_tool, 0, "the web-page reader is off by default");
    cr_assert_str_eq(c.core.web_ports, "80,443");
    const char *good[][2] = {{"web-allow", "172.18.0.5"},       {"web-allow", "10.0.0.0/8, fd00::/8"},
                             {"web-allow", ""},                 {"web-ports", "80,443,8000"},
                             {"web-timeout", "2m"},             {"web-max-bytes", "1m"},
                             {"web-network", "runbox_test-net"}, {"web-max-concurrent", "4"}};
    for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
        cr_assert_eq(config_set(&c, good[i][0], good[i][1], err), RB_OK, "%s=%s: %s", good[i][0], good[i][1], err);
        cr_assert_eq(config_validate(&c, err), RB_OK, "%s=%s: %s", good[i][0], good[i][1], err);
    }
    const char *bad[][2] = {{"web-allow", "localhost"},    {"web-allow", "10.0.0.0/33"}, {"web-allow", "::1/129"},
                            {"web-allow", "1.2.3.4/"},     {"web-ports", "0"},           {"web-ports", "80,x"},
                            {"web-ports", "65536"},        {"web-ports", ""},            {"web-timeout", "0.5"},
                            {"web-timeout", "11m"},        {"web-max-bytes", "1k"},      {"web-network", "a b"},
                            {"web-max-concurrent", "0"},   {"web-max-redirects", "51"},  {"web-max-chars", "0"}};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        rb_config b;
        config_init(&b);
        if (config_set(&b, bad[i][0], bad[i][1], err) == RB_OK)
            cr_assert_eq(config_validate(&b, err), RB_EINVAL, "%s=%s passed", bad[i][0], bad[i][1]);
        cr_assert(strstr(err, bad[i][0]) != NULL, "%s=%s: %s", bad[i][0], bad[i][1], err);
        config_dispose(&b);
    }
    config_dispose(&c);
}

Test(config, egress_settings_are_checked)
{
    rb_config c;
    char err[RB_ERR_LEN];
    config_init(&c);
    cr_assert_eq(c.core.egress, 0, "sandboxes have no network by default");
    cr_assert_str_eq(c.core.egress_network, "bridge");
    cr_assert_eq(config_set(&c, "allow-network", "true", err), RB_OK, "%s", err);
    cr_assert_eq(c.core.egress, 1, "--allow-network is the old name of --egress");
    const char *good[][2] = {{"egress-allow", "pypi.org, *.pythonhosted.org, api.example.com:8443"},
                             {"egress-max", "*"},
                             {"egress-max", "*.example.com:8443,pypi.org,*.pythonhosted.org"},
                             {"egress-deny", "evil.example.com"},
                             {"egress-cidr", "172.18.0.5, 10.0.0.0/8, fd00::/8"},
                             {"egress-network", "runbox_test-net"}};
    for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
        cr_assert_eq(config_set(&c, good[i][0], good[i][1], err), RB_OK, "%s=%s: %s", good[i][0], good[i][1], err);
        cr_assert_eq(config_validate(&c, err), RB_OK, "%s=%s: %s", good[i][0], good[i][1], err);
    }
    /* each bad value fails start-up naming its setting (and the entry) */
    const char *bad[][3] = {{"egress-allow", "pypi..org", "pypi..org"},  {"egress-allow", "10.0.0.1", "10.0.0.1"},
                            {"egress-allow", "*", "*"},                  {"egress-deny", "a b", "a b"},
                            {"egress-max", "*.", "*."},                  {"egress-cidr", "localhost", "localhost"},
                            {"egress-cidr", "10.0.0.0/33", "10.0.0.0/33"}, {"egress-network", "none", "none"},
                            {"egress-network", "host", "host"}};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        rb_config b;
        config_init(&b);
        if (config_set(&b, bad[i][0], bad[i][1], err) == RB_OK)
            cr_assert_eq(config_validate(&b, err), RB_EINVAL, "%s=%s passed", bad[i][0], bad[i][1]);
        cr_assert(strstr(err, bad[i][0]) != NULL && strstr(err, bad[i][2]) != NULL, "%s=%s: %s", bad[i][0],
                  bad[i][1], err);
        config_dispose(&b);
    }
    config_dispose(&c);
}

Test(config, docker_engine_addresses_and_tls_files_are_checked)
{
    char err[RB_ERR_LEN];
    const char *good[] = {"/var/run/docker.sock", "unix:///var/run/docker.sock", "relative.sock",
                          "tcp://10.0.0.5:2376", "tcp://engine-1.internal:2375", "tcp://[fd00::5]:2376"};
    for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
        rb_config c;
        config_init(&c);
        cr_assert_eq(config_set(&c, "docker-socket", good[i], err), RB_OK, "%s", err);
        cr_assert_eq(config_validate(&c, err), RB_OK, "%s: %s", good[i], err);
        config_dispose(&c);
    }
    const char *bad[][2] = {{"tcp://10.0.0.5", "port"},          {"tcp://10.0.0.5:0", "port"},
                            {"tcp://10.0.0.5:99999", "port"},    {"tcp://:2376", "host"},
                            {"tcp://a b:2376", "character"},     {"tcp://[fd00::5:2376", "IPv6"},
                            {"http://10.0.0.5:2376", "tcp://"},  {"tcp://fd00::5:2376", "port"}};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        rb_config c;
        config_init(&c);
        cr_assert_eq(config_set(&c, "docker-socket", bad[i][0], err), RB_OK, "%s", err);
        cr_assert_eq(config_validate(&c, err), RB_EINVAL, "'%s' passed", bad[i][0]);
        cr_assert(strstr(err, "docker-socket") != NULL && strstr(err, bad[i][1]) != NULL, "%s: %s", bad[i][0], err);
        config_dispose(&c);
    }
    /* TLS: all three files, readable, only for tcp:// */
    rb_config c;
    config_init(&c);
    cr_assert_eq(config_set(&c, "docker-socket", "tcp://10.0.0.5:2376", err), RB_OK);
    cr_assert_eq(config_set(&c, "docker-tls-ca", "/nonexistent/ca.pem", err), RB_OK);
    cr_assert_eq(config_validate(&c, err), RB_EINVAL);
    cr_assert(strstr(err, "all three") != NULL, "%s", err);
    cr_assert_eq(config_set(&c, "docker-tls-cert", "/nonexistent/cert.pem", err), RB_OK);
    cr_assert_eq(config_set(&c, "docker-tls-key", "/nonexistent/key.pem", err), RB_OK);
    cr_assert_eq(config_validate(&c, err), RB_EINVAL);
    cr_assert(strstr(err, "/nonexistent/ca.pem") != NULL && strstr(err, "--docker-tls-ca") != NULL, "%s", err);
    cr_assert_eq(config_set(&c, "docker-socket", "/var/run/docker.sock", err), RB_OK);
    cr_assert_eq(config_validate(&c, err), RB_EINVAL);
    cr_assert(strstr(err, "unix socket") != NULL, "%s", err);
    config_dispose(&c);
}

Test(config, engines_are_repeatable_and_checked)
{
    char err[RB_ERR_LEN];
    rb_config c;
    config_init(&c);
    cr_assert_null(c.core.engines, "one engine (--docker-socket) unless --engine is given");
    cr_assert_eq(config_set(&c, "engine", "local=unix:///var/run/docker.sock", err), RB_OK, "%s", err);
    cr_assert_eq(config_set(&c, "engine", "node-1=tcp://10.0.0.5:2375,capacity=50 node_2=tcp://[fd00::2]:2375", err),
                 RB_OK, "%s", err);
    cr_assert_str_eq(c.core.engines,
                     "local=unix:///var/run/docker.sock\nnode-1=tcp://10.0.0.5:2375,capacity=50\nnode_2=tcp://[fd00::2]:2375");
    cr_assert_eq(config_validate(&c, err), RB_OK, "%s", err);
    config_dispose(&c);
    const char *bad[][2] = {{"tcp://10.0.0.5:2375", "NAME=URL"},
                            {"Node=tcp://10.0.0.5:2375", "NAME=URL"},
                            {"n=tcp://10.0.0.5", "port"},
                            {"n=tcp://10.0.0.5:2375,capacity=0", "capacity"},
                            {"n=tcp://10.0.0.5:2375,weight=2", "options"},
                            {"n=tcp://10.0.0.5:2375,ca=/nonexistent/ca.pem", "all three"},
                            {"n=tcp://10.0.0.5:2375,ca=/x/ca.pem,cert=/x/c.pem,key=/x/k.pem", "/x/ca.pem"},
                            {"n=unix:///a.sock n=unix:///b.sock", "two engines are named n"}};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        config_init(&c);
        cr_assert_eq(config_set(&c, "engine", bad[i][0], err), RB_OK, "%s", err);
        cr_assert_eq(config_validate(&c, err), RB_EINVAL, "'%s' passed", bad[i][0]);
        cr_assert(strstr(err, "engine") != NULL && strstr(err, bad[i][1]) != NULL, "%s: %s", bad[i][0], err);
        config_dispose(&c);
    }
}

/* --share is repeatable, each use one more declaration (blanks kept: paths may have them); the
 * environment separates with commas or semicolons; start-up checks every folder and names the
 * share (the checks themselves: tests/core/test_shares.c). */
Test(config, shares_are_repeatable_and_checked)
{
    rb_config c;
    char err[RB_ERR_LEN], dir[] = "/tmp/rb-config-share-XXXXXX";
    cr_assert_not_null(mkdtemp(dir));
    cr_assert_eq(chmod(dir, 0777), 0); /* :rw needs a folder the sandbox user may write in */
    config_init(&c);
    char *one = xasprintf("photos=%s", dir), *two = xasprintf("out=%s:rw", dir);
    cr_assert_eq(config_set(&c, "share", one, err), RB_OK, "%s", err);
    cr_assert_eq(config_set(&c, "share", two, err), RB_OK, "%s", err);
    char *both = xasprintf("%s\n%s", one, two);
    cr_assert_str_eq(c.core.shares, both);
    cr_assert_eq(config_set(&c, "default-mounts", "photos,out:/workspace/results", err), RB_OK, "%s", err);
    cr_assert_eq(config_validate(&c, err), RB_OK, "%s", err);
    cr_assert_eq(config_set(&c, "default-mounts", "nosuch", err), RB_OK, "%s", err);
    cr_assert_eq(config_validate(&c, err), RB_EINVAL);
    cr_assert(strstr(err, "default-mounts") != NULL && strstr(err, "nosuch") != NULL, "%s", err);
    config_dispose(&c);

    char *env = xasprintf("photos=%s;more=%s/missing", dir, dir);
    setenv("RUNBOX_SHARE", env, 1);
    config_init(&c);
    cr_assert_eq(config_load_env(&c, err), RB_OK, "%s", err);
    cr_assert_eq(config_validate(&c, err), RB_EINVAL);
    cr_assert(strstr(err, "share more") != NULL && strstr(err, "does not exist") != NULL, "%s", err);
    config_dispose(&c);
    unsetenv("RUNBOX_SHARE");
    free(env);
    free(both);
    free(one);
    free(two);
    rmdir(dir);
}

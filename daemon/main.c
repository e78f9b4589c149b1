/*
 * main.c: runboxd, the runbox server process. Reads the configuration (defaults, then
 * RUNBOX_* environment variables, then flags), opens the core and the HTTP server on one
 * libuv loop and runs until SIGINT/SIGTERM. No logic of its own beyond start-up and shutdown.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "core/core.h"
#include "daemon/config.h"
#include "server/agentrun/agentrun.h"
#include "server/console/console.h"
#include "server/dify/dify.h"
#include "server/e2b/e2b.h"
#include "server/jupyter/jupyter.h"
#include "server/http.h"
#include "server/mcp/mcp.h"
#include "server/metrics/metrics.h"
#include "server/rest/rest.h"

/* After a stop signal, open connections get this long to finish what they are doing. */
#define DRAIN_MS 3000
/* After a stop signal, the core's container creates and removals in flight (the warm pool's)
 * get this long, whether or not connections are still open. */
#define SETTLE_MS 5000

typedef struct daemon_state {
    uv_loop_t *loop;
    rb_core *core;
    rb_server *server;
    uv_signal_t sigint, sigterm, sighup;
    uv_timer_t settle;
    int64_t drain_deadline, settle_deadline;
    int stopping;
    int drain_expired; /* connections outlived DRAIN_MS: exit as soon as the core is settled */
} daemon_state;

static void print_key(void *data, const char *key, const char *env, const char *value, const char *help)
{
    FILE *f = data;
    char flag[48];
    snprintf(flag, sizeof(flag), "--%s VALUE", key);
    fprintf(f, "  %-26s %s\n  %-26s default: %s; environment: %s\n", flag, help, "", value[0] ? value : "(empty)", env);
}

static void usage(FILE *f)
{
    rb_config defaults;
    config_init(&defaults);
    fprintf(f, "usage: runboxd [options]\n\n"
               "runbox: a self-hosted code interpreter for LLM agents (REST API and MCP).\n"
               "Each option is also read from its environment variable; flags win.\n"
               "Options take `--key value` or `--key=value`. Sizes accept k/m/g suffixes, durations s/m/h/d.\n\n");
    config_each(&defaults, print_key, f);
    fprintf(f, "  %-26s show this help\n  %-26s print the version\n", "--help", "--version");
    config_dispose(&defaults);
}

/*
 * Shutdown, in this order, so that nothing is freed under something still using it:
 *   1. stop: the server stops accepting, ends event streams and answers 503 to requests that
 *      still arrive on open connections; the core stops refilling its pool;
 *   2. drain: requests in flight finish (the core is still there to answer them) and the
 *      connections close, for at most DRAIN_MS;
 *   3. free the server, then let the core's creates and removals in flight settle (SETTLE_MS),
 *      then free the core (which persists what is dirty), and the loop ends.
 * Connections still open at the drain deadline (idle keep-alive clients, long waits) are not
 * waited for, but the core's pending work still is (until SETTLE_MS): then the core is freed
 * and the process exits, so nothing runs after it.
 */
static void on_settle(uv_timer_t *t)
{
    daemon_state *d = t->data;
    int64_t now = rb_mono_ms();
    if (d->server != NULL) {
        if (!server_drained(d->server)) {
            if (now < d->drain_deadline)
                return;
            if (!d->drain_expired)
                rb_warn("runboxd: connections still open after %d ms; exiting once the core's Docker work is done",
                        DRAIN_MS);
            d->drain_expired = 1;
            if (core_pending(d->core) > 0 && now < d->settle_deadline)
                return; /* a container created now is removed only if runboxd is still there */
            core_free(d->core);
            exit(0);
        }
        server_free(d->server);
        d->server = NULL;
    }
    if (core_pending(d->core) > 0 && now < d->settle_deadline)
        return;
    uv_timer_stop(t);
    uv_close((uv_handle_t *)t, NULL);
    core_free(d->core);
    d->core = NULL;
    uv_close((uv_handle_t *)&d->sigint, NULL);
    uv_close((uv_handle_t *)&d->sigterm, NULL);
    uv_close((uv_handle_t *)&d->sighup, NULL);
}

/* Starts the shutdown (idempotent). */
static void begin_shutdown(daemon_state *d)
{
    if (d->stopping)
        return;
    d->stopping = 1;
    server_stop(d->server);
    core_stop(d->core);
    d->drain_deadline = rb_mono_ms() + DRAIN_MS;
    d->settle_deadline = rb_mono_ms() + SETTLE_MS;
    uv_timer_start(&d->settle, on_settle, 0, 10);
}

static void on_signal(uv_signal_t *sig, int signum)
{
    daemon_state *d = sig->data;
    if (!d->stopping)
        rb_info("runboxd: %s received, shutting down", signum == SIGINT ? "SIGINT" : "SIGTERM");
    begin_shutdown(d);
}

/* SIGHUP: the API key file and the secrets file are read again; a file that does not parse leaves what it
 * defines as it was. */
static void on_hangup(uv_signal_t *sig, int signum)
{
    (void)signum;
    daemon_state *d = sig->data;
    char err[RB_ERR_LEN];
    size_t n = 0;
    if (d->stopping)
        return;
    if (server_reload_keys(d->server, &n, err) == RB_OK)
        rb_info("runboxd: SIGHUP: API keys reloaded, %zu in force", n);
    else
        rb_error("runboxd: SIGHUP: API keys not reloaded (the keys in force are kept): %s", err);
    rb_err e = core_reload_secrets(d->core, &n, err);
    if (e == RB_OK)
        rb_info("runboxd: SIGHUP: secrets reloaded, %zu in force", n);
    else if (e != RB_ENOTFOUND)
        rb_error("runboxd: SIGHUP: secrets not reloaded (the secrets in force are kept): %s", err);
}

/* Parses argv into cfg; returns 0 to run, 1 when --help/--version was handled, -1 on error. */
static int parse_args(int argc, char **argv, rb_config *cfg)
{
    char err[RB_ERR_LEN];
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            usage(stdout);
            return 1;
        }
        if (strcmp(a, "--version") == 0) {
            printf("runboxd %s\n", RUNBOX_VERSION);
            return 1;
        }
        if (strncmp(a, "--", 2) != 0 || a[2] == '\0') {
            fprintf(stderr, "runboxd: unexpected argument '%s' (see --help)\n", a);
            return -1;
        }
        char key[64];
        const char *value;
        const char *eq = strchr(a + 2, '=');
        size_t klen = eq ? (size_t)(eq - (a + 2)) : strlen(a + 2);
        if (klen >= sizeof(key)) {
            fprintf(stderr, "runboxd: unknown option '%s' (see --help)\n", a);
            return -1;
        }
        memcpy(key, a + 2, klen);
        key[klen] = '\0';
        if (eq != NULL) {
            value = eq + 1;
        } else if (config_is_switch(key) && (i + 1 == argc || strncmp(argv[i + 1], "--", 2) == 0)) {
            value = "true";
        } else if (i + 1 < argc) {
            value = argv[++i];
        } else {
            fprintf(stderr, "runboxd: option --%s needs a value (see --help)\n", key);
            return -1;
        }
        if (config_set(cfg, key, value, err) != RB_OK) {
            fprintf(stderr, "runboxd: %s\n", err);
            return -1;
        }
    }
    return 0;
}

int main(int argc, char **argv)
{
    char err[RB_ERR_LEN];
    rb_config cfg;
    int status = 1;
    signal(SIGPIPE, SIG_IGN);
    config_init(&cfg);

    if (config_load_env(&cfg, err) != RB_OK) {
        fprintf(stderr, "runboxd: %s\n", err);
        status = 2;
        goto dispose_config;
    }
    int r = parse_args(argc, argv, &cfg);
    if (r != 0) {
        status = r > 0 ? 0 : 2;
        goto dispose_config;
    }
    if (config_validate(&cfg, err) != RB_OK) {
        fprintf(stderr, "runboxd: %s\n", err);
        status = 2;
        goto dispose_config;
    }
    /* The HTTP layer sizes upload bodies by core's limit, so that the two agree. */
    cfg.server.max_upload = cfg.core.max_upload;
    rb_log_level lvl;
    if (rb_log_parse_level(cfg.log_level, &lvl) == 0)
        rb_log_set_level(lvl);

    daemon_state d;
    memset(&d, 0, sizeof(d));
    d.loop = uv_default_loop();
    if (core_new(d.loop, &cfg.core, &d.core, err) != RB_OK) {
        fprintf(stderr, "runboxd: %s\n", err);
        rb_error("runboxd: cannot start the core: %s", err);
        goto dispose_config;
    }
    if (server_start(d.loop, &cfg.server, d.core, &d.server, err) != RB_OK) {
        fprintf(stderr, "runboxd: %s\n", err);
        rb_error("runboxd: %s", err);
        core_free(d.core);
        uv_run(d.loop, UV_RUN_NOWAIT);
        goto dispose_config;
    }
    uv_signal_init(d.loop, &d.sigint);
    uv_signal_init(d.loop, &d.sigterm);
    d.sigint.data = d.sigterm.data = &d;
    uv_signal_start(&d.sigint, on_signal, SIGINT);
    uv_signal_start(&d.sigterm, on_signal, SIGTERM);
    uv_signal_init(d.loop, &d.sighup);
    d.sighup.data = &d;
    uv_signal_start(&d.sighup, on_hangup, SIGHUP);
    uv_timer_init(d.loop, &d.settle);
    d.settle.data = &d;

    /* Each protocol registers its own routes on the server. */
    rest_register(d.server);
    metrics_register(d.server, d.core);
    e2b_register(d.server);
    dify_register(d.server);
    jupyter_register(d.server, d.core);
    console_register(d.server);
    mcp_server *mcp = NULL;
    const char *what = "MCP";
    int failed = mcp_register(d.server, d.core, &cfg.server, &mcp, err) != RB_OK;
    if (!failed && agentrun_register(d.server, mcp, err) != RB_OK) { /* its MCP tools are served by mcp */
        failed = 1;
        what = "AgentRun's API";
    }
    if (failed) {
        /* Wind down through the ordinary shutdown path, then exit with an error. */
        fprintf(stderr, "runboxd: %s\n", err);
        rb_error("runboxd: cannot start %s: %s", what, err);
        begin_shutdown(&d);
    } else {
        rb_info("runboxd %s listening on http://%s (db %s, image %s, instance %s: its containers, volumes and networks "
                "carry the label runbox.instance=%s)",
                RUNBOX_VERSION, server_address(d.server), cfg.core.db_path, cfg.core.image, core_instance(d.core),
                core_instance(d.core));
    }
    uv_run(d.loop, UV_RUN_DEFAULT); /* until on_settle has freed the server and the core */
    uv_loop_close(d.loop);
    rb_info("runboxd: stopped");
    status = failed ? 1 : 0;

dispose_config:
    config_dispose(&cfg);
    return status;
}

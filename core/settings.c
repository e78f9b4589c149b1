/*
 * settings.c: defaults of the session manager's settings (core/settings.h).
 */
#include "core/settings.h"

#include <stdlib.h>
#include <string.h>

#include "base/mem.h"

void core_settings_init(core_settings *s)
{
    memset(s, 0, sizeof(*s));
    s->db_path = xstrdup(RB_DEFAULT_DB);
    s->image = xstrdup(RB_DEFAULT_IMAGE);
    s->docker_socket = xstrdup(RB_DEFAULT_DOCKER_SOCKET);
    s->docker_timeout = RB_DEFAULT_DOCKER_TIMEOUT_S;
    s->docker_transfer_timeout = RB_DEFAULT_DOCKER_TRANSFER_TIMEOUT_S;
    s->output_limit = RB_DEFAULT_OUTPUT_LIMIT;
    s->default_timeout = RB_DEFAULT_TIMEOUT_S;
    s->max_timeout = RB_DEFAULT_MAX_TIMEOUT_S;
    s->idle_timeout = RB_DEFAULT_IDLE_TIMEOUT_S;
    s->idle_action = xstrdup("end");
    s->hibernate_retention = 7 * 24 * 3600;
    s->retention = RB_DEFAULT_RETENTION_S;
    s->audit_retention = 30 * 24 * 3600;
    s->audit_max_events = 1000000;
    s->memory_mb = RB_DEFAULT_MEMORY_MB;
    s->metrics_interval = RB_DEFAULT_METRICS_INTERVAL_S;
    s->max_memory_mb = RB_DEFAULT_MAX_MEMORY_MB;
    s->cpus = RB_DEFAULT_CPUS;
    s->max_cpus = RB_DEFAULT_MAX_CPUS;
    s->pids_limit = RB_DEFAULT_PIDS_LIMIT;
    s->max_sessions = RB_DEFAULT_MAX_SESSIONS;
    s->grace_ms = RB_DEFAULT_GRACE_MS;
    s->max_queue = RB_DEFAULT_MAX_QUEUE;
    s->max_mcp_sessions = RB_DEFAULT_MAX_MCP_SESSIONS;
    s->max_upload = RB_DEFAULT_MAX_UPLOAD;
    s->volume_quota = (size_t)1 << 30;
    s->volume_quota_max = (size_t)10 << 30;
    s->max_volumes = 20;
    s->deps_network = xstrdup("bridge");
    s->deps_npm_registry = xstrdup(RB_DEFAULT_DEPS_NPM_REGISTRY);
    s->max_installs = RB_DEFAULT_MAX_INSTALLS;
    s->max_download = RB_DEFAULT_MAX_DOWNLOAD;
    s->max_download_memory = RB_DEFAULT_MAX_DOWNLOAD_MEMORY;
    s->pool_size = RB_DEFAULT_POOL_SIZE;
    s->pool_bash_size = RB_DEFAULT_POOL_BASH_SIZE;
    s->pool_max = RB_DEFAULT_POOL_MAX;
    s->pool_cpu_shares = RB_DEFAULT_POOL_CPU_SHARES;
    s->max_pids_limit = RB_DEFAULT_MAX_PIDS_LIMIT;
    s->workspace_size = RB_DEFAULT_WORKSPACE_SIZE;
    s->max_workspace_size = RB_DEFAULT_MAX_WORKSPACE_SIZE;
    s->tmp_size = RB_DEFAULT_TMP_SIZE;
    s->max_tmp_size = RB_DEFAULT_MAX_TMP_SIZE;
    s->open_files = RB_DEFAULT_OPEN_FILES;
    s->file_size = RB_DEFAULT_FILE_SIZE;
    s->egress = 0;
    s->egress_network = xstrdup(RB_DEFAULT_EGRESS_NETWORK);
    s->egress_allow = xstrdup(RB_DEFAULT_EGRESS_ALLOW);
    s->egress_max = NULL;
    s->egress_deny = NULL;
    s->egress_cidr = NULL;
    s->secrets_file = NULL;
    s->egress_ca_file = NULL;
    s->code_policy = xstrdup(RB_DEFAULT_CODE_POLICY);
    s->code_policy_file = NULL;
    s->code_policy_overridable = xstrdup(RB_DEFAULT_CODE_POLICY_OVERRIDABLE);
    s->preload = xstrdup(RB_DEFAULT_PRELOAD);
    s->docker_runtimes = xstrdup("runc");
    s->isolation = xstrdup("container");
    s->gvisor_runtime = xstrdup("runsc");
    s->web_tool = 0;
    s->web_image = xstrdup(RB_DEFAULT_WEB_IMAGE);
    s->web_network = xstrdup(RB_DEFAULT_WEB_NETWORK);
    s->web_allow = NULL;
    s->web_ports = xstrdup(RB_DEFAULT_WEB_PORTS);
    s->web_timeout = RB_DEFAULT_WEB_TIMEOUT_S;
    s->web_max_bytes = RB_DEFAULT_WEB_MAX_BYTES;
    s->web_max_chars = RB_DEFAULT_WEB_MAX_CHARS;
    s->web_max_redirects = RB_DEFAULT_WEB_MAX_REDIRECTS;
    s->web_max_concurrent = RB_DEFAULT_WEB_MAX_CONCURRENT;
}

void core_settings_dispose(core_settings *s)
{
    if (s == NULL)
        return;
    char **strs[] = {&s->idle_action, &s->db_path, &s->image, &s->docker_socket, &s->egress_network, &s->egress_allow, &s->egress_max, &s->egress_deny, &s->egress_cidr, &s->secrets_file, &s->egress_ca_file, &s->deps_network, &s->deps_allow, &s->deps_block, &s->deps_index_url, &s->deps_npm_registry, &s->deps_ca_file, &s->code_policy, &s->code_policy_file, &s->code_policy_overridable, &s->preload, &s->web_image, &s->web_network, &s->web_allow, &s->web_ports, &s->docker_tls_ca, &s->docker_tls_cert, &s->docker_tls_key, &s->engines, &s->docker_runtimes, &s->isolation, &s->gvisor_runtime, &s->engine_tls_ca, &s->engine_tls_cert, &s->engine_tls_key, &s->shares, &s->default_mounts};
    for (size_t i = 0; i < sizeof(strs) / sizeof(strs[0]); i++) {
        free(*strs[i]);
        *strs[i] = NULL;
    }
}

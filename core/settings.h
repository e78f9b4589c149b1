/*
 * settings: what the session manager needs to know from its operator: the sandbox image and
 * Docker socket, the store's path, default and maximum limits per sandbox, timeouts, pool
 * sizes, dependency installs and the code policy. core_new borrows one core_settings for its
 * lifetime and reads it only. Where the values come from (flags, environment, a file) is the
 * daemon's business (daemon/config.c), so core/ can be linked and tested without it: a test
 * calls core_settings_init and changes the fields it cares about.
 */
#ifndef RB_CORE_SETTINGS_H
#define RB_CORE_SETTINGS_H

#include <stddef.h>

#define RB_DEFAULT_DB "runbox.db"
#define RB_DEFAULT_IMAGE "runbox-sandbox:latest"
#define RB_DEFAULT_DOCKER_SOCKET "/var/run/docker.sock"
#define RB_DEFAULT_DEPS_NPM_REGISTRY "https://registry.npmjs.org/"
#define RB_DEFAULT_DOCKER_TIMEOUT_S 30.0
#define RB_DEFAULT_DOCKER_TRANSFER_TIMEOUT_S 120.0
#define RB_DEFAULT_OUTPUT_LIMIT (1024 * 1024)
#define RB_DEFAULT_TIMEOUT_S 30.0
#define RB_DEFAULT_MAX_TIMEOUT_S 3600.0
#define RB_DEFAULT_IDLE_TIMEOUT_S 1800
#define RB_DEFAULT_RETENTION_S (7 * 24 * 3600)
#define RB_DEFAULT_MEMORY_MB 512
#define RB_DEFAULT_MAX_MEMORY_MB 4096
#define RB_DEFAULT_CPUS 1.0
#define RB_DEFAULT_MAX_CPUS 2.0
#define RB_DEFAULT_PIDS_LIMIT 256
#define RB_DEFAULT_METRICS_INTERVAL_S 5.0
#define RB_DEFAULT_MAX_SESSIONS 100
#define RB_DEFAULT_GRACE_MS 2000
#define RB_DEFAULT_MAX_QUEUE 100
#define RB_DEFAULT_MAX_MCP_SESSIONS 1000
#define RB_DEFAULT_POOL_SIZE 2
#define RB_DEFAULT_POOL_BASH_SIZE 0
#define RB_DEFAULT_POOL_MAX 16          /* the python pool grows with demand up to this (core/pool_demand.h) */
#define RB_DEFAULT_POOL_CPU_SHARES 256  /* a warm sandbox's CPU weight until claimed (user sandboxes: 1024) */
#define RB_DEFAULT_MAX_PIDS_LIMIT 1024
#define RB_DEFAULT_WORKSPACE_SIZE (512 * 1024 * 1024)
#define RB_DEFAULT_MAX_WORKSPACE_SIZE ((size_t)4 * 1024 * 1024 * 1024)
#define RB_DEFAULT_TMP_SIZE (256 * 1024 * 1024)
#define RB_DEFAULT_MAX_TMP_SIZE ((size_t)2 * 1024 * 1024 * 1024)
#define RB_DEFAULT_OPEN_FILES 1024
#define RB_DEFAULT_FILE_SIZE ((size_t)4 * 1024 * 1024 * 1024)
#define RB_DEFAULT_EGRESS_NETWORK "bridge"
/* what network: true allows: the Python and npm package indexes */
#define RB_DEFAULT_EGRESS_ALLOW "pypi.org,files.pythonhosted.org,registry.npmjs.org"
#define RB_DEFAULT_MAX_UPLOAD (64 * 1024 * 1024)
#define RB_DEFAULT_MAX_DOWNLOAD (64 * 1024 * 1024)
#define RB_DEFAULT_MAX_DOWNLOAD_MEMORY (256 * 1024 * 1024)
#define RB_DEFAULT_MAX_INSTALLS 4
#define RB_DEFAULT_CODE_POLICY "off"
#define RB_DEFAULT_CODE_POLICY_OVERRIDABLE "*"
#define RB_DEFAULT_PRELOAD "numpy,pandas,matplotlib.pyplot"
#define RB_DEFAULT_WEB_IMAGE "runbox-browser:latest"
#define RB_DEFAULT_WEB_NETWORK "bridge"
#define RB_DEFAULT_WEB_PORTS "80,443"
#define RB_DEFAULT_WEB_TIMEOUT_S 30.0
#define RB_DEFAULT_WEB_MAX_BYTES (32 * 1024 * 1024)
#define RB_DEFAULT_WEB_MAX_CHARS 100000
#define RB_DEFAULT_WEB_MAX_REDIRECTS 10
#define RB_DEFAULT_WEB_MAX_CONCURRENT 2

/* Field comments name the daemon's flag and environment variable that set each one. */
typedef struct core_settings {
    char *db_path;         /* --db / RUNBOX_DB */
    char *image;           /* --image / RUNBOX_IMAGE */
    char *docker_socket;   /* --docker-socket / RUNBOX_DOCKER_SOCKET: a unix socket path (or unix:///path), or the
                              engine's tcp://HOST:PORT */
    char *docker_tls_ca;   /* --docker-tls-ca / RUNBOX_DOCKER_TLS_CA: with a tcp:// engine, the CA its certificate is
                              checked against (TLS needs all three files; NULL: plain TCP) */
    char *docker_tls_cert; /* --docker-tls-cert / RUNBOX_DOCKER_TLS_CERT: runboxd's client certificate */
    char *docker_tls_key;  /* --docker-tls-key / RUNBOX_DOCKER_TLS_KEY: its key */
    char *engines;         /* --engine (repeated) / RUNBOX_ENGINES: engines to place sessions on, one
                              "NAME=URL[,capacity=N][,ca=..,cert=..,key=..]" a line; NULL: the one of docker_socket */
    char *docker_runtimes; /* --docker-runtimes / RUNBOX_DOCKER_RUNTIMES: the OCI runtimes the engine of docker_socket
                              offers, "runc+runsc" (engines of --engine say runtimes=) */
    char *isolation;       /* --isolation / RUNBOX_ISOLATION: a session's isolation unless it or its key says
                              otherwise: "container" (runc) or "gvisor" (core/isolation/) */
    int gvisor_network;    /* --gvisor-network / RUNBOX_GVISOR_NETWORK: gVisor sessions may have a network (their runsc
                              is registered without --network=none, which Debian's needs on recent kernels) */
    char *gvisor_runtime;  /* --gvisor-runtime / RUNBOX_GVISOR_RUNTIME: the runtime name gVisor is registered under
                              in the engines' daemon.json ("runsc") */
    char *engine_tls_ca;   /* --engine-tls-ca / RUNBOX_ENGINE_TLS_CA: shared TLS files of tcp:// engines */
    char *engine_tls_cert; /* --engine-tls-cert / RUNBOX_ENGINE_TLS_CERT */
    char *engine_tls_key;  /* --engine-tls-key / RUNBOX_ENGINE_TLS_KEY */
    double docker_timeout; /* --docker-timeout / RUNBOX_DOCKER_TIMEOUT: seconds a Docker call that should answer at
                              once may take (create, start, remove, inspect, the attach handshake) */
    double docker_transfer_timeout; /* --docker-transfer-timeout / RUNBOX_DOCKER_TRANSFER_TIMEOUT: seconds a Docker
                              call that moves files may take (archive upload and download, logs) */
    size_t output_limit;   /* --output-limit / RUNBOX_OUTPUT_LIMIT: bytes of stdout+stderr kept per execution */
    double default_timeout;/* --timeout / RUNBOX_TIMEOUT: seconds per execution unless the session/call says */
    double max_timeout;    /* --max-timeout / RUNBOX_MAX_TIMEOUT */
    int idle_timeout;      /* --idle-timeout / RUNBOX_IDLE_TIMEOUT: seconds before an idle session is removed; 0 = never */
    char *idle_action;     /* --idle-action / RUNBOX_IDLE_ACTION: what the idle timeout does to a session: "end",
                              "suspend" (frozen; idle as long again: hibernated) or "hibernate" (docs/data.md) */
    int hibernate_retention; /* --hibernate-retention / RUNBOX_HIBERNATE_RETENTION: seconds a hibernated session is
                              kept before it ends (0 = until deleted) */
    int retention;         /* --retention / RUNBOX_RETENTION: seconds that ended sessions and results are kept */
    int audit_retention;   /* --audit-retention / RUNBOX_AUDIT_RETENTION: seconds audit events are kept (core/audit/) */
    int audit_max_events;  /* --audit-max-events / RUNBOX_AUDIT_MAX_EVENTS: audit events kept at most (oldest go) */
    int memory_mb;         /* --memory / RUNBOX_MEMORY: default sandbox memory (MiB) */
    int max_memory_mb;     /* --max-memory / RUNBOX_MAX_MEMORY */
    double cpus;           /* --cpus / RUNBOX_CPUS */
    double max_cpus;       /* --max-cpus / RUNBOX_MAX_CPUS */
    int pids_limit;        /* --pids-limit / RUNBOX_PIDS_LIMIT */
    double metrics_interval; /* --metrics-interval / RUNBOX_METRICS_INTERVAL: seconds between two usage samples of a
                              session's sandbox (core/usage/), 1 to 3600 */
    int max_sessions;      /* --max-sessions / RUNBOX_MAX_SESSIONS: live sessions at once */
    int grace_ms;          /* --grace / RUNBOX_GRACE_MS: after an interrupt, how long before the worker is killed */
    int max_mcp_sessions;  /* --max-mcp-sessions / RUNBOX_MAX_MCP_SESSIONS: live MCP client sessions at once */
    int max_queue;         /* --max-queue / RUNBOX_MAX_QUEUE: queued executions per session */
    int pool_size;         /* --pool-size / RUNBOX_POOL_SIZE: warm python sandboxes (default profile) kept ready; 0 = no pool */
    int pool_max;          /* --pool-max / RUNBOX_POOL_MAX: the python pool's size follows demand up to this
                              (never below pool_size; memory left bounds it too) */
    int pool_cpu_shares;   /* --pool-cpu-shares / RUNBOX_POOL_CPU_SHARES: warm sandboxes' CPU weight until
                              claimed (Docker CpuShares; sessions have 1024); 0 = the same as sessions */
    int pool_bash_size;    /* --pool-bash-size / RUNBOX_POOL_BASH_SIZE: warm bash sandboxes kept ready */
    int pool_other_size;   /* --pool-other-isolation-size / RUNBOX_POOL_OTHER_ISOLATION_SIZE: warm python sandboxes
                              of the isolation that is not the default (gvisor when --isolation is container) */
    char *preload;         /* --preload / RUNBOX_PRELOAD: "module,module.sub,..." imported by every python sandbox
                              before its first cell (docker/runner: the zygote); "" = none */
    /* Sandbox limits (each session may ask for less, or more up to the max-* value). /workspace
     * and /tmp are tmpfs: their sizes are added to the container's memory limit so that files
     * never eat into the memory the session asked for. */
    int max_pids_limit;    /* --max-pids-limit / RUNBOX_MAX_PIDS_LIMIT */
    size_t workspace_size; /* --workspace-size / RUNBOX_WORKSPACE_SIZE: bytes of /workspace */
    size_t max_workspace_size; /* --max-workspace-size / RUNBOX_MAX_WORKSPACE_SIZE */
    size_t tmp_size;       /* --tmp-size / RUNBOX_TMP_SIZE: bytes of /tmp */
    size_t max_tmp_size;   /* --max-tmp-size / RUNBOX_MAX_TMP_SIZE */
    int open_files;        /* --open-files / RUNBOX_OPEN_FILES: RLIMIT_NOFILE of sandbox processes */
    size_t file_size;      /* --file-size / RUNBOX_FILE_SIZE: RLIMIT_FSIZE (largest file a process may write) */
    int egress;            /* --egress / RUNBOX_EGRESS (old name --allow-network): sessions may have a network,
                              by policy, through an egress proxy of their own (core/network/) */
    char *egress_network;  /* --egress-network / RUNBOX_EGRESS_NETWORK: Docker network the sessions' egress
                              proxies reach the outside on */
    char *egress_allow;    /* --egress-allow / RUNBOX_EGRESS_ALLOW: host patterns of network: true */
    char *egress_max;      /* --egress-max / RUNBOX_EGRESS_MAX: the most a caller may ask for (NULL: egress_allow;
                              "*": any name) */
    char *egress_deny;     /* --egress-deny / RUNBOX_EGRESS_DENY: host patterns denied to every session */
    char *egress_cidr;     /* --egress-cidr / RUNBOX_EGRESS_CIDR: addresses proxies may reach although not public */
    char *secrets_file;    /* --secrets-file / RUNBOX_SECRETS_FILE: the operator's secrets (core/network/secrets.h),
                              reloaded on SIGHUP; NULL: none */
    char *egress_ca_file;  /* --egress-ca-file / RUNBOX_EGRESS_CA_FILE: CA certificates (PEM) the proxies trust beside
                              the image's when they open TLS to a host a secret is bound to; NULL: none */
    char *shares;          /* --share (repeated) / RUNBOX_SHARE: folders of the Docker host sessions may mount,
                              "NAME=/host/path[:ro|:rw]" separated by newlines, ',' or ';' (core/shares/) */
    char *default_mounts;  /* --default-mounts / RUNBOX_DEFAULT_MOUNTS: "SHARE[:/workspace/PATH][:ro],..." mounted
                              into sessions that ask for no mounts (of the shares their key may mount) */
    char *deps_network;    /* --deps-network / RUNBOX_DEPS_NETWORK: Docker network of the dependency installer
                              ("none" or "" disables installs) */
    char *deps_allow;      /* --deps-allow / RUNBOX_DEPS_ALLOW: "name[>=min],..." only these may be installed */
    char *deps_block;      /* --deps-block / RUNBOX_DEPS_BLOCK: "name" never, "name<V" not below V */
    char *deps_index_url;  /* --deps-index-url / RUNBOX_DEPS_INDEX_URL: pip's index (PIP_INDEX_URL) */
    char *deps_npm_registry; /* --deps-npm-registry / RUNBOX_DEPS_NPM_REGISTRY: npm's registry (--registry) */
    char *deps_ca_file;    /* --deps-ca-file / RUNBOX_DEPS_CA_FILE: CA bundle on the Docker host for pip (PIP_CERT) */
    int max_installs;      /* --max-installs / RUNBOX_MAX_INSTALLS: dependency installs running at once; more wait
                              their turn (FIFO) */
    size_t volume_quota;   /* --volume-quota / RUNBOX_VOLUME_QUOTA: a new volume's quota unless it asks (bytes) */
    size_t volume_quota_max; /* --volume-quota-max / RUNBOX_VOLUME_QUOTA_MAX: the largest quota a volume may ask */
    int max_volumes;       /* --max-volumes / RUNBOX_MAX_VOLUMES: volumes one key keeps at once (0: no limit) */
    size_t max_upload;     /* --max-upload / RUNBOX_MAX_UPLOAD: bytes of one uploaded file (413 beyond) */
    size_t max_download;   /* --max-download / RUNBOX_MAX_DOWNLOAD: bytes of one downloaded file (413 beyond) */
    size_t max_download_memory; /* --max-download-memory / RUNBOX_MAX_DOWNLOAD_MEMORY: bytes that downloads in
                              flight (read from a sandbox, not yet sent) hold together; one more gets 429. At
                              least max_download */
    /* Optional code policy (core/policy/policy.c, checked in the sandbox by docker/runner/runbox_policy.py):
     * a guard rail for Python cells, not a security boundary. */
    char *code_policy;     /* --code-policy / RUNBOX_CODE_POLICY: off | default | strict | custom */
    char *code_policy_file;/* --code-policy-file / RUNBOX_CODE_POLICY_FILE: rules to add ("import:requests") or,
                              with a leading '-', remove from the preset, one per line; NULL = none */
    char *code_policy_overridable; /* --code-policy-overridable / RUNBOX_CODE_POLICY_OVERRIDABLE: rules callers may
                              turn off with disabled_rules: "*" (any), "none", or a comma list (a trailing '*' is a
                              prefix: "import:*") */

    /* The web-page reader (core/web/web.c): off unless web_tool. Pages are opened by headless
     * Chromium in a container of its own whose only way out is an egress proxy container that
     * checks every destination address after name resolution. */
    int web_tool;          /* --web-tool / RUNBOX_WEB_TOOL: offer get_page_text and POST /web/page-text */
    char *web_image;       /* --web-image / RUNBOX_WEB_IMAGE: image of the browser and its proxy */
    char *web_network;     /* --web-network / RUNBOX_WEB_NETWORK: Docker network the egress proxy reaches pages on */
    char *web_allow;       /* --web-allow / RUNBOX_WEB_ALLOW: "CIDR,..." addresses allowed although not public */
    char *web_ports;       /* --web-ports / RUNBOX_WEB_PORTS: "80,443,..." ports pages may be fetched from */
    double web_timeout;    /* --web-timeout / RUNBOX_WEB_TIMEOUT: seconds a page may take at most (and the default) */
    size_t web_max_bytes;  /* --web-max-bytes / RUNBOX_WEB_MAX_BYTES: bytes one page read may download */
    int web_max_chars;     /* --web-max-chars / RUNBOX_WEB_MAX_CHARS: characters of text returned at most */
    int web_max_redirects; /* --web-max-redirects / RUNBOX_WEB_MAX_REDIRECTS */
    int web_max_concurrent;/* --web-max-concurrent / RUNBOX_WEB_MAX_CONCURRENT: page reads at once; more get 429 */
} core_settings;

/** Fills s with the defaults above; the string fields are heap copies owned by s (or NULL). */
void core_settings_init(core_settings *s);
/** Frees the string fields (each may have been replaced by another heap string or NULL) and
 * sets them to NULL. Accepts NULL. */
void core_settings_dispose(core_settings *s);

#endif

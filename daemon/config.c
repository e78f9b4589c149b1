/*
 * config.c: runboxd's configuration (daemon/config.h). One table describes every key: its flag
 * name, environment variable, help text and how its text is parsed into the struct. Sizes take
 * plain bytes or k/m/g suffixes (powers of 1024); durations take seconds (floats allowed) or
 * s/m/h/d suffixes. This module reads only the strings it is given and the environment; it
 * does no other I/O and holds no state of its own.
 */
#include "daemon/config.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/backend/docker.h"
#include "core/backend/multi.h"
#include "core/deps/requirements.h"
#include "core/isolation/isolation.h"
#include "core/network/egress.h"
#include "core/shares/shares.h"
#include "core/web/web_wire.h"

typedef enum key_kind {
    K_STR, K_LIST, K_SIZE, K_SECS, K_ISECS, K_MIB, K_INT, K_NUM, K_LEVEL, K_BOOL, K_MULTI,
    K_ITEMS /* like K_MULTI, but the value is added as it is (blanks kept): its reader splits it */
} key_kind;

typedef struct key_def {
    const char *key;
    const char *env;
    key_kind kind;
    size_t offset;
    const char *help;
} key_def;

#define OFF(f) offsetof(rb_config, f)

static const key_def keys[] = {
    {"listen", "RUNBOX_LISTEN", K_STR, OFF(server.listen), "HOST:PORT to listen on (port 0 picks a free port)"},
    {"db", "RUNBOX_DB", K_STR, OFF(core.db_path), "path of the SQLite database file"},
    {"image", "RUNBOX_IMAGE", K_STR, OFF(core.image), "Docker image of the sandboxes"},
    {"docker-socket", "RUNBOX_DOCKER_SOCKET", K_STR, OFF(core.docker_socket),
     "the Docker engine: the path of its unix socket (or unix:///path), or tcp://HOST:PORT for an engine on another "
     "machine (with --docker-tls-ca/-cert/-key for TLS)"},
    {"engine", "RUNBOX_ENGINES", K_MULTI, OFF(core.engines),
     "a Docker engine to place sessions on, NAME=URL[,capacity=N][,runtimes=runc+runsc][,ca=PATH,cert=PATH,key=PATH] "
     "(URL unix:///path or tcp://HOST:PORT; capacity: sandboxes it may hold, default 100; runtimes: the OCI runtimes it "
     "offers, default runc); give it once per engine (in the environment: "
     "separated by spaces); with it, --docker-socket is not used"},
    {"engine-tls-ca", "RUNBOX_ENGINE_TLS_CA", K_STR, OFF(core.engine_tls_ca),
     "the CA certificate (PEM) of the tcp:// engines of --engine that do not name their own (ca=)"},
    {"engine-tls-cert", "RUNBOX_ENGINE_TLS_CERT", K_STR, OFF(core.engine_tls_cert),
     "runboxd's client certificate (PEM) for the tcp:// engines of --engine that do not name their own (cert=)"},
    {"engine-tls-key", "RUNBOX_ENGINE_TLS_KEY", K_STR, OFF(core.engine_tls_key),
     "the key of --engine-tls-cert (PEM)"},
    {"docker-tls-ca", "RUNBOX_DOCKER_TLS_CA", K_STR, OFF(core.docker_tls_ca),
     "with a tcp:// engine: the CA certificate (PEM) its certificate must be signed by, for its address or name"},
    {"docker-tls-cert", "RUNBOX_DOCKER_TLS_CERT", K_STR, OFF(core.docker_tls_cert),
     "with a tcp:// engine: runboxd's client certificate (PEM), which dockerd --tlsverify requires"},
    {"docker-tls-key", "RUNBOX_DOCKER_TLS_KEY", K_STR, OFF(core.docker_tls_key), "the key of --docker-tls-cert (PEM)"},
    {"docker-runtimes", "RUNBOX_DOCKER_RUNTIMES", K_STR, OFF(core.docker_runtimes),
     "the OCI runtimes the engine of --docker-socket offers, joined by '+' (runc+runsc once gVisor is registered in "
     "its daemon.json, docs/security.md); engines of --engine say runtimes= instead"},
    {"isolation", "RUNBOX_ISOLATION", K_STR, OFF(core.isolation),
     "a session's isolation unless it asks (execution_options.isolation) or its key says (isolation= in the keys "
     "file): container (runc: namespaces, cgroups, seccomp) or gvisor (a user-space kernel between the code and the "
     "host's)"},
    {"gvisor-network", "RUNBOX_GVISOR_NETWORK", K_BOOL, OFF(core.gvisor_network),
     "gVisor sessions may have a network by policy (--egress): only when the engines' runsc is registered without "
     "--network=none, which Debian's runsc needs on recent kernels (docs/security.md); off: a gVisor session that "
     "asks for a network is refused (400)"},
    {"gvisor-runtime", "RUNBOX_GVISOR_RUNTIME", K_STR, OFF(core.gvisor_runtime),
     "the name gVisor's runsc is registered under in the engines' daemon.json"},
    {"docker-timeout", "RUNBOX_DOCKER_TIMEOUT", K_SECS, OFF(core.docker_timeout),
     "deadline of a Docker call that should answer at once (create, start, remove, inspect, exec create, the "
     "attach handshake); seconds"},
    {"docker-transfer-timeout", "RUNBOX_DOCKER_TRANSFER_TIMEOUT", K_SECS, OFF(core.docker_transfer_timeout),
     "deadline of a Docker call that moves files (archive upload and download, container logs); seconds"},
    {"max-body", "RUNBOX_MAX_BODY", K_SIZE, OFF(server.max_body), "largest request body (bytes, or k/m/g suffix)"},
    {"output-limit", "RUNBOX_OUTPUT_LIMIT", K_SIZE, OFF(core.output_limit),
     "stdout+stderr bytes kept per execution (bytes, or k/m/g suffix)"},
    {"timeout", "RUNBOX_TIMEOUT", K_SECS, OFF(core.default_timeout), "default execution timeout (seconds)"},
    {"max-timeout", "RUNBOX_MAX_TIMEOUT", K_SECS, OFF(core.max_timeout), "largest execution timeout a caller may ask (seconds)"},
    {"idle-timeout", "RUNBOX_IDLE_TIMEOUT", K_ISECS, OFF(core.idle_timeout),
     "seconds before an idle session is removed (0 = never)"},
    {"idle-action", "RUNBOX_IDLE_ACTION", K_STR, OFF(core.idle_action),
     "what the idle timeout does to a session: end (remove it), suspend (freeze it; idle as long again: "
     "hibernate it) or hibernate (keep its files on disk, release its memory)"},
    {"hibernate-retention", "RUNBOX_HIBERNATE_RETENTION", K_ISECS, OFF(core.hibernate_retention),
     "seconds a hibernated session is kept before it ends and its files go (0 = until deleted)"},
    {"retention", "RUNBOX_RETENTION", K_ISECS, OFF(core.retention), "seconds that ended sessions and results are kept"},
    {"audit-retention", "RUNBOX_AUDIT_RETENTION", K_ISECS, OFF(core.audit_retention),
     "seconds the audit trail keeps an event (GET /audit; docs/security.md); 0 = by count alone"},
    {"audit-max-events", "RUNBOX_AUDIT_MAX_EVENTS", K_INT, OFF(core.audit_max_events),
     "audit events kept at most, the oldest removed first (1000 to 100000000)"},
    {"memory", "RUNBOX_MEMORY", K_MIB, OFF(core.memory_mb), "default sandbox memory (MiB, or k/m/g suffix)"},
    {"max-memory", "RUNBOX_MAX_MEMORY", K_MIB, OFF(core.max_memory_mb), "largest sandbox memory a caller may ask (MiB)"},
    {"cpus", "RUNBOX_CPUS", K_NUM, OFF(core.cpus), "default CPUs per sandbox"},
    {"max-cpus", "RUNBOX_MAX_CPUS", K_NUM, OFF(core.max_cpus), "largest CPUs per sandbox a caller may ask"},
    {"pids-limit", "RUNBOX_PIDS_LIMIT", K_INT, OFF(core.pids_limit), "processes per sandbox"},
    {"metrics-interval", "RUNBOX_METRICS_INTERVAL", K_SECS, OFF(core.metrics_interval),
     "seconds between two usage samples of a session's sandbox (GET /sessions/{id}/metrics keeps the last 120); "
     "1 to 3600"},
    {"max-sessions", "RUNBOX_MAX_SESSIONS", K_INT, OFF(core.max_sessions), "live sessions at once"},
    {"grace", "RUNBOX_GRACE_MS", K_INT, OFF(core.grace_ms),
     "milliseconds an interrupted worker gets before it is killed"},
    {"max-queue", "RUNBOX_MAX_QUEUE", K_INT, OFF(core.max_queue), "queued executions per session"},
    {"log-level", "RUNBOX_LOG_LEVEL", K_LEVEL, OFF(log_level), "debug, info, warn or error"},
    {"allowed-origins", "RUNBOX_ALLOWED_ORIGINS", K_STR, OFF(server.allowed_origins),
     "comma-separated browser Origins (e.g. https://app.example.com) allowed to call runboxd besides localhost; "
     "* = any"},
    {"max-connections", "RUNBOX_MAX_CONNECTIONS", K_INT, OFF(server.max_connections),
     "client connections open at once (each may buffer one request body before it is handled); one more gets 429 "
     "and is closed"},
    {"max-stream-memory", "RUNBOX_MAX_STREAM_MEMORY", K_SIZE, OFF(server.max_stream_memory),
     "memory that event streams hold together for clients that read slowly; a stream that would pass it ends with a "
     "comment saying so (bytes, or k/m/g suffix)"},
    {"max-streams", "RUNBOX_MAX_STREAMS", K_INT, OFF(server.max_streams),
     "event streams (GET /execute/{id}/events, GET /mcp) open at once; more get 429"},
    {"max-mcp-sessions", "RUNBOX_MAX_MCP_SESSIONS", K_INT, OFF(core.max_mcp_sessions),
     "MCP client sessions kept at once (each ends on DELETE /mcp or after idle-timeout); initialize beyond gets 429"},
    {"api-keys-file", "RUNBOX_API_KEYS_FILE", K_STR, OFF(server.api_keys_file),
     "file of API keys (lines: name sha256:<hash of the key> [sessions=N] [executions=N] [rps=N] [egress=LIST] "
     "[shares=LIST]); callers send "
     "Authorization: Bearer <key> and see only their own sessions; reloaded on SIGHUP; unset = no keys (loopback only)"},
    {"allow-unauthenticated", "RUNBOX_ALLOW_UNAUTHENTICATED", K_BOOL, OFF(server.allow_unauthenticated),
     "listen on a non-loopback address without API keys (anyone who reaches the port controls every session); "
     "logged as a warning at start"},
    {"allowed-hosts", "RUNBOX_ALLOWED_HOSTS", K_STR, OFF(server.allowed_hosts),
     "comma-separated Host names runboxd answers to besides localhost, 127.0.0.1, [::1] and the listen address "
     "(e.g. runbox.internal when behind a proxy or in compose); * = any (no DNS-rebinding defence)"},
    {"deps-network", "RUNBOX_DEPS_NETWORK", K_STR, OFF(core.deps_network),
     "Docker network of the dependency installer (no user code runs there); none disables package installs"},
    {"deps-allow", "RUNBOX_DEPS_ALLOW", K_STR, OFF(core.deps_allow),
     "comma-separated packages that may be installed, each optionally with a minimum (name>=version; npm packages: "
     "npm:name, npm:name>=version); empty = any"},
    {"deps-block", "RUNBOX_DEPS_BLOCK", K_STR, OFF(core.deps_block),
     "comma-separated packages that may not be installed (name), or not below a version (name<version; npm "
     "packages: npm:name, npm:name<version)"},
    {"deps-index-url", "RUNBOX_DEPS_INDEX_URL", K_STR, OFF(core.deps_index_url), "pip index URL for the installer"},
    {"deps-npm-registry", "RUNBOX_DEPS_NPM_REGISTRY", K_STR, OFF(core.deps_npm_registry),
     "npm registry URL (http or https) the installer uses for javascript and typescript sessions"},
    {"deps-ca-file", "RUNBOX_DEPS_CA_FILE", K_STR, OFF(core.deps_ca_file),
     "CA bundle (a path on the Docker host) the installer's pip trusts; empty = the host's "
     "/etc/ssl/certs/ca-certificates.crt when present, none = the image's own"},
    {"max-installs", "RUNBOX_MAX_INSTALLS", K_INT, OFF(core.max_installs),
     "dependency installs running at once (each holds one of the Docker client's 16 long connections); more wait "
     "their turn, oldest first"},
    {"volume-quota", "RUNBOX_VOLUME_QUOTA", K_SIZE, OFF(core.volume_quota),
     "quota of a new volume that asks for none (bytes, or k/m/g suffix; docs/data.md)"},
    {"volume-quota-max", "RUNBOX_VOLUME_QUOTA_MAX", K_SIZE, OFF(core.volume_quota_max),
     "the largest quota a volume may ask for (bytes, or k/m/g suffix)"},
    {"max-volumes", "RUNBOX_MAX_VOLUMES", K_INT, OFF(core.max_volumes),
     "volumes one API key keeps at once (0 = no limit)"},
    {"max-upload", "RUNBOX_MAX_UPLOAD", K_SIZE, OFF(core.max_upload),
     "largest file upload to a session's /workspace (bytes, or k/m/g suffix)"},
    {"max-download", "RUNBOX_MAX_DOWNLOAD", K_SIZE, OFF(core.max_download),
     "largest file download from a session's /workspace (bytes, or k/m/g suffix)"},
    {"max-download-memory", "RUNBOX_MAX_DOWNLOAD_MEMORY", K_SIZE, OFF(core.max_download_memory),
     "memory that file downloads in flight hold together (each holds its file until it is sent); one more gets "
     "429 (bytes, or k/m/g suffix; at least max-download)"},
    {"dify-timeout", "RUNBOX_DIFY_TIMEOUT", K_SECS, OFF(server.dify_timeout),
     "seconds a Dify code node's run (POST /v1/sandbox/run) may take, preload and code together: dify-sandbox's "
     "WORKER_TIMEOUT (docs/dify.md); at most max-timeout"},
    {"mcp-image-limit", "RUNBOX_MCP_IMAGE_LIMIT", K_SIZE, OFF(server.mcp_image_limit),
     "PNG size above which MCP results link to the image instead of inlining it (bytes, or k/m/g suffix)"},
    {"pool-size", "RUNBOX_POOL_SIZE", K_INT, OFF(core.pool_size),
     "warm python sandboxes (default limits) kept started for fast session creation; 0 disables the pool"},
    {"pool-max", "RUNBOX_POOL_MAX", K_INT, OFF(core.pool_max),
     "the python pool grows with the rate of creates up to this many (never below --pool-size; memory left bounds it)"},
    {"pool-cpu-shares", "RUNBOX_POOL_CPU_SHARES", K_INT, OFF(core.pool_cpu_shares),
     "CPU weight of warm sandboxes until claimed (sessions: 1024), so refills yield to cells; 0: as sessions"},
    {"pool-bash-size", "RUNBOX_POOL_BASH_SIZE", K_INT, OFF(core.pool_bash_size), "warm bash sandboxes kept started"},
    {"pool-other-isolation-size", "RUNBOX_POOL_OTHER_ISOLATION_SIZE", K_INT, OFF(core.pool_other_size),
     "warm python sandboxes of the isolation that is not --isolation's (gvisor ones when it is container), for keys "
     "and sessions that ask for it"},
    {"preload", "RUNBOX_PRELOAD", K_LIST, OFF(core.preload),
     "comma-separated Python modules warm pool sandboxes import before their first cell and keep imported across "
     "interpreter resets (a sandbox made for a session: from its first reset on); empty = none"},
    {"max-pids-limit", "RUNBOX_MAX_PIDS_LIMIT", K_INT, OFF(core.max_pids_limit),
     "largest processes per sandbox a caller may ask"},
    {"workspace-size", "RUNBOX_WORKSPACE_SIZE", K_SIZE, OFF(core.workspace_size),
     "size of each sandbox's /workspace (in memory; bytes, or k/m/g suffix)"},
    {"max-workspace-size", "RUNBOX_MAX_WORKSPACE_SIZE", K_SIZE, OFF(core.max_workspace_size),
     "largest /workspace a caller may ask"},
    {"tmp-size", "RUNBOX_TMP_SIZE", K_SIZE, OFF(core.tmp_size), "size of each sandbox's /tmp (in memory)"},
    {"max-tmp-size", "RUNBOX_MAX_TMP_SIZE", K_SIZE, OFF(core.max_tmp_size), "largest /tmp a caller may ask"},
    {"open-files", "RUNBOX_OPEN_FILES", K_INT, OFF(core.open_files), "open files per sandbox process (RLIMIT_NOFILE)"},
    {"file-size", "RUNBOX_FILE_SIZE", K_SIZE, OFF(core.file_size),
     "largest file a sandbox process may write (RLIMIT_FSIZE; bytes, or k/m/g suffix)"},
    {"code-policy", "RUNBOX_CODE_POLICY", K_STR, OFF(core.code_policy),
     "optional check of Python cells before they run: off, default, strict or custom (only --code-policy-file); "
     "a guard rail, not a security boundary"},
    {"code-policy-file", "RUNBOX_CODE_POLICY_FILE", K_STR, OFF(core.code_policy_file),
     "file of code policy rules, one per line: a rule name (import:requests) adds it, -name removes it; # comments"},
    {"code-policy-overridable", "RUNBOX_CODE_POLICY_OVERRIDABLE", K_STR, OFF(core.code_policy_overridable),
     "code policy rules callers may turn off per execution (disabled_rules): *, none, or a comma list "
     "(a trailing * matches a prefix, e.g. import:*)"},
    {"egress", "RUNBOX_EGRESS", K_BOOL, OFF(core.egress),
     "let sessions have a network by policy (execution_options.network: true or {allow, deny}): each such sandbox "
     "reaches only an egress proxy of its own, which connects to allowed host names on public addresses; off: every "
     "sandbox has none (docs/network.md)"},
    {"allow-network", "RUNBOX_ALLOW_NETWORK", K_BOOL, OFF(core.egress), "old name of --egress"},
    {"egress-network", "RUNBOX_EGRESS_NETWORK", K_STR, OFF(core.egress_network),
     "Docker network the sessions' egress proxies reach the outside on (sandboxes never join it)"},
    {"egress-allow", "RUNBOX_EGRESS_ALLOW", K_LIST, OFF(core.egress_allow),
     "host patterns a session with network: true may reach (pypi.org, *.example.com, host:port), comma-separated"},
    {"egress-max", "RUNBOX_EGRESS_MAX", K_LIST, OFF(core.egress_max),
     "the most a session may ask for in network.allow: host patterns, or * for any name (default: --egress-allow)"},
    {"egress-deny", "RUNBOX_EGRESS_DENY", K_LIST, OFF(core.egress_deny),
     "host patterns no session may reach, added to every session's deny list"},
    {"egress-cidr", "RUNBOX_EGRESS_CIDR", K_LIST, OFF(core.egress_cidr),
     "addresses or CIDR ranges proxies may connect to although not public (loopback, private, link-local ... are "
     "refused otherwise, whatever a name resolves to)"},
    {"secrets-file", "RUNBOX_SECRETS_FILE", K_STR, OFF(core.secrets_file),
     "file of secrets sandbox code can use but never see (lines: name hosts=PATTERNS as=bearer|basic|header:NAME "
     "keys=KEYS|* value=TEXT|from-env=VAR|from-file=PATH [var=NAME]); the session's egress proxy adds the value to "
     "requests to those hosts; reloaded on SIGHUP (docs/network.md, Secrets)"},
    {"egress-ca-file", "RUNBOX_EGRESS_CA_FILE", K_STR, OFF(core.egress_ca_file),
     "CA certificates (PEM) the egress proxies trust beside the image's when they open TLS to a host a secret is "
     "bound to (a private API's CA); sandboxes with secrets trust them too"},
    {"share", "RUNBOX_SHARE", K_ITEMS, OFF(core.shares),
     "a folder of the Docker host that sessions may mount, NAME=/host/path[:ro|:rw] (read-only unless :rw; what code "
     "writes there belongs to uid 1000, the sandbox user); give it once per share (in the environment: separated "
     "by commas or semicolons); the path must exist, be no symbolic link nor pass through one, and lie apart from "
     "runboxd's data (docs/data.md)"},
    {"default-mounts", "RUNBOX_DEFAULT_MOUNTS", K_LIST, OFF(core.default_mounts),
     "shares mounted into every session that asks for no mounts, SHARE[:/workspace/PATH][:ro] separated by "
     "commas (default path /workspace/SHARE), of the shares the caller's key may mount"},
    {"web-tool", "RUNBOX_WEB_TOOL", K_BOOL, OFF(core.web_tool),
     "offer the web-page reader (MCP get_page_text, POST /web/page-text): headless Chromium in a container of its "
     "own, reaching pages only through a proxy that refuses non-public addresses; off by default"},
    {"web-image", "RUNBOX_WEB_IMAGE", K_STR, OFF(core.web_image),
     "Docker image of the web-page reader's browser and proxy (docker/build-images --browser builds it)"},
    {"web-network", "RUNBOX_WEB_NETWORK", K_STR, OFF(core.web_network),
     "Docker network the web-page reader's proxy reaches pages on"},
    {"web-allow", "RUNBOX_WEB_ALLOW", K_LIST, OFF(core.web_allow),
     "comma-separated addresses or CIDR ranges (10.1.2.3, 10.1.0.0/16, fd00::/8) pages may be read from although "
     "they are not public (loopback, private, link-local ... are refused otherwise)"},
    {"web-ports", "RUNBOX_WEB_PORTS", K_LIST, OFF(core.web_ports),
     "comma-separated TCP ports pages and their resources may be fetched from"},
    {"web-timeout", "RUNBOX_WEB_TIMEOUT", K_SECS, OFF(core.web_timeout),
     "seconds a page read may take at most (and the default for a call that does not say); seconds"},
    {"web-max-bytes", "RUNBOX_WEB_MAX_BYTES", K_SIZE, OFF(core.web_max_bytes),
     "bytes one page read may download, its resources included (bytes, or k/m/g suffix)"},
    {"web-max-chars", "RUNBOX_WEB_MAX_CHARS", K_INT, OFF(core.web_max_chars),
     "characters of a page's text returned at most (and the default)"},
    {"web-max-redirects", "RUNBOX_WEB_MAX_REDIRECTS", K_INT, OFF(core.web_max_redirects),
     "redirects a page read follows at most"},
    {"web-max-concurrent", "RUNBOX_WEB_MAX_CONCURRENT", K_INT, OFF(core.web_max_concurrent),
     "page reads at once (each runs a browser of up to 1 GiB); one more gets 429"},
};

#define NKEYS (sizeof(keys) / sizeof(keys[0]))

void config_init(rb_config *cfg)
{
    server_settings_init(&cfg->server);
    core_settings_init(&cfg->core);
    cfg->log_level = xstrdup("info");
}

void config_dispose(rb_config *cfg)
{
    if (cfg == NULL)
        return;
    server_settings_dispose(&cfg->server);
    core_settings_dispose(&cfg->core);
    free(cfg->log_level);
    cfg->log_level = NULL;
}

static const key_def *find_key(const char *key)
{
    for (size_t i = 0; i < NKEYS; i++)
        if (strcmp(keys[i].key, key) == 0)
            return &keys[i];
    if (strcmp(key, "grace-ms") == 0) /* the env name suggests this spelling; accept it too */
        return find_key("grace");
    return NULL;
}

/* A finite number with an optional suffix left in *rest (trailing spaces skipped). */
static int parse_number(const char *s, double *out, const char **rest)
{
    while (*s == ' ' || *s == '\t')
        s++;
    if (*s == '\0')
        return -1;
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (end == s || errno != 0 || !isfinite(v))
        return -1;
    while (*end == ' ' || *end == '\t')
        end++;
    *out = v;
    *rest = end;
    return 0;
}

static int trailing_blank(const char *s)
{
    while (*s == ' ' || *s == '\t')
        s++;
    return *s == '\0';
}

/* Bytes: "1048576", "512k", "1m", "2G", "1.5m", "64kb", "64KiB". */
static int parse_size(const char *s, double *bytes)
{
    double v;
    const char *rest;
    if (parse_number(s, &v, &rest) != 0 || v < 0)
        return -1;
    double mult = 1;
    switch (*rest) {
    case 'k': case 'K': mult = 1024.0; rest++; break;
    case 'm': case 'M': mult = 1024.0 * 1024; rest++; break;
    case 'g': case 'G': mult = 1024.0 * 1024 * 1024; rest++; break;
    case 'b': case 'B': rest++; break;
    default: break;
    }
    if (mult > 1 && (*rest == 'i' || *rest == 'I'))
        rest++;
    if (mult > 1 && (*rest == 'b' || *rest == 'B'))
        rest++;
    if (!trailing_blank(rest))
        return -1;
    *bytes = v * mult;
    return 0;
}

/* Seconds: "30", "0.5", "30s", "5m", "2h", "7d". */
static int parse_secs(const char *s, double *secs)
{
    double v;
    const char *rest;
    if (parse_number(s, &v, &rest) != 0 || v < 0)
        return -1;
    double mult = 1;
    switch (*rest) {
    case 's': rest++; break;
    case 'm': mult = 60; rest++; break;
    case 'h': mult = 3600; rest++; break;
    case 'd': mult = 86400; rest++; break;
    default: break;
    }
    if (!trailing_blank(rest))
        return -1;
    *secs = v * mult;
    return 0;
}

static int parse_int(const char *s, long *out)
{
    while (*s == ' ' || *s == '\t')
        s++;
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (end == s || errno != 0 || !trailing_blank(end) || v < INT32_MIN || v > INT32_MAX)
        return -1;
    *out = v;
    return 0;
}

int config_is_switch(const char *key)
{
    const key_def *k = find_key(key);
    return k != NULL && k->kind == K_BOOL;
}

rb_err config_set(rb_config *cfg, const char *key, const char *value, char *err)
{
    const key_def *k = find_key(key);
    if (k == NULL)
        return rb_fail(RB_EINVAL, err, "unknown configuration key '%s' (see --help for the list)", key);
    if (value == NULL)
        return rb_fail(RB_EINVAL, err, "%s: a value is required", k->key);
    void *field = (char *)cfg + k->offset;
    double d;
    long l;
    switch (k->kind) {
    case K_STR:
        if (value[0] == '\0')
            return rb_fail(RB_EINVAL, err, "%s: the value must not be empty", k->key);
        free(*(char **)field);
        *(char **)field = xstrdup(value);
        return RB_OK;
    case K_MULTI: { /* each use adds to the list (one item a line); spaces separate items too */
        char *cur = *(char **)field;
        const char *p = value;
        while (*p) {
            while (*p == ' ' || *p == '\t' || *p == '\n')
                p++;
            const char *e = p;
            while (*e && *e != ' ' && *e != '\t' && *e != '\n')
                e++;
            if (e > p) {
                char *next = cur ? xasprintf("%s\n%.*s", cur, (int)(e - p), p) : xstrndup(p, (size_t)(e - p));
                free(cur);
                cur = next;
            }
            p = e;
        }
        *(char **)field = cur;
        return RB_OK;
    }
    case K_ITEMS: { /* each use adds its value as one more line */
        char *cur = *(char **)field;
        *(char **)field = cur ? xasprintf("%s\n%s", cur, value) : xstrdup(value);
        free(cur);
        return RB_OK;
    }
    case K_LIST: /* a list that may be empty (= none) */
        free(*(char **)field);
        *(char **)field = xstrdup(value);
        return RB_OK;
    case K_LEVEL: {
        rb_log_level lvl;
        if (rb_log_parse_level(value, &lvl) != 0)
            return rb_fail(RB_EINVAL, err, "%s: '%s' is not one of debug, info, warn, error", k->key, value);
        free(*(char **)field);
        *(char **)field = xstrdup(value);
        return RB_OK;
    }
    case K_SIZE:
        if (parse_size(value, &d) != 0 || d > (double)SIZE_MAX / 2)
            return rb_fail(RB_EINVAL, err, "%s: '%s' is not a size (bytes, or a number with a k/m/g suffix)", k->key,
                           value);
        *(size_t *)field = (size_t)d;
        return RB_OK;
    case K_MIB:
        /* A plain number is MiB here (the field's unit); a suffix converts. */
        if (parse_int(value, &l) == 0) {
            if (l < 0)
                return rb_fail(RB_EINVAL, err, "%s: '%s' must not be negative", k->key, value);
            *(int *)field = (int)l;
            return RB_OK;
        }
        if (parse_size(value, &d) != 0 || d / (1024.0 * 1024) > INT32_MAX)
            return rb_fail(RB_EINVAL, err, "%s: '%s' is not a memory size (MiB, or a number with a k/m/g suffix)",
                           k->key, value);
        *(int *)field = (int)(d / (1024.0 * 1024));
        return RB_OK;
    case K_SECS:
        if (parse_secs(value, &d) != 0)
            return rb_fail(RB_EINVAL, err, "%s: '%s' is not a duration (seconds, or a number with s/m/h/d)", k->key,
                           value);
        *(double *)field = d;
        return RB_OK;
    case K_ISECS:
        if (parse_secs(value, &d) != 0 || d > INT32_MAX)
            return rb_fail(RB_EINVAL, err, "%s: '%s' is not a duration (seconds, or a number with s/m/h/d)", k->key,
                           value);
        *(int *)field = (int)(d + 0.5); /* round; d >= 0 */
        return RB_OK;
    case K_INT:
        if (parse_int(value, &l) != 0)
            return rb_fail(RB_EINVAL, err, "%s: '%s' is not an integer", k->key, value);
        *(int *)field = (int)l;
        return RB_OK;
    case K_BOOL:
        if (strcasecmp(value, "1") == 0 || strcasecmp(value, "true") == 0 || strcasecmp(value, "yes") == 0 ||
            strcasecmp(value, "on") == 0)
            *(int *)field = 1;
        else if (strcasecmp(value, "0") == 0 || strcasecmp(value, "false") == 0 || strcasecmp(value, "no") == 0 ||
                 strcasecmp(value, "off") == 0)
            *(int *)field = 0;
        else
            return rb_fail(RB_EINVAL, err, "%s: '%s' is not true or false (1/0, yes/no, on/off)", k->key, value);
        return RB_OK;
    case K_NUM: {
        const char *rest;
        if (parse_number(value, &d, &rest) != 0 || !trailing_blank(rest))
            return rb_fail(RB_EINVAL, err, "%s: '%s' is not a number", k->key, value);
        *(double *)field = d;
        return RB_OK;
    }
    }
    return rb_fail(RB_EINTERNAL, err, "%s: unhandled key kind", k->key);
}

rb_err config_load_env(rb_config *cfg, char *err)
{
    for (size_t i = 0; i < NKEYS; i++) {
        const char *v = getenv(keys[i].env);
        if (v == NULL)
            continue;
        char sub[RB_ERR_LEN];
        rb_err e = config_set(cfg, keys[i].key, v, sub);
        if (e != RB_OK)
            return rb_fail(e, err, "%s (from %s)", sub, keys[i].env);
    }
    return RB_OK;
}

/* "host:port", "[v6]:port" or ":port"; port 0..65535. */
static int listen_ok(const char *s)
{
    const char *colon = strrchr(s, ':');
    if (colon == NULL || colon[1] == '\0')
        return 0;
    if (s[0] == '[' && (colon == s || colon[-1] != ']'))
        return 0;
    long port;
    for (const char *p = colon + 1; *p; p++)
        if (*p < '0' || *p > '9')
            return 0;
    if (parse_int(colon + 1, &port) != 0 || port < 0 || port > 65535)
        return 0;
    return 1;
}

/* --deps-npm-registry: an http(s) URL without blanks or control characters (it becomes npm's
 * --registry in the installer's environment). */
static rb_err check_registry(const char *url, char *err)
{
    if (url == NULL || (strncmp(url, "http://", 7) != 0 && strncmp(url, "https://", 8) != 0) || strlen(url) > 1024)
        return rb_fail(RB_EINVAL, err,
                       "deps-npm-registry: '%.80s' is not an http:// or https:// URL (e.g. the default "
                       "https://registry.npmjs.org/)",
                       url ? url : "");
    for (const char *p = url; *p; p++)
        if ((unsigned char)*p <= ' ' || *p == 0x7f)
            return rb_fail(RB_EINVAL, err, "deps-npm-registry: the URL may not contain blanks or control characters");
    return RB_OK;
}

/* --preload: module names (dotted Python identifiers) separated by commas; blanks around them
 * are allowed, an empty list turns the preload off. */
static rb_err check_preload(const char *list, char *err)
{
    if (list == NULL)
        return RB_OK;
    if (strlen(list) > 4096)
        return rb_fail(RB_EINVAL, err, "preload: longer than 4096 characters");
    const char *p = list;
    while (*p != '\0') {
        while (*p == ' ' || *p == ',')
            p++;
        const char *start = p;
        int at_start = 1; /* of a dotted part */
        while (*p != '\0' && *p != ',' && *p != ' ') {
            char ch = *p;
            int ok = ch == '_' || (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
                     (!at_start && ((ch >= '0' && ch <= '9') || ch == '.'));
            if (ch == '.' && (at_start || p[1] == '\0' || p[1] == ',' || p[1] == ' ' || p[1] == '.'))
                ok = 0;
            if (!ok)
                return rb_fail(RB_EINVAL, err,
                               "preload: '%.*s' is not a Python module name (give names like numpy,pandas,"
                               "matplotlib.pyplot separated by commas, or an empty string for none)",
                               (int)strcspn(start, ", "), start);
            at_start = ch == '.';
            p++;
        }
        while (*p == ' ')
            p++;
        if (*p != '\0' && *p != ',')
            return rb_fail(RB_EINVAL, err, "preload: module names must be separated by commas (near '%.20s')", p);
    }
    return RB_OK;
}

/* --isolation, --gvisor-runtime and --docker-runtimes (core/isolation/isolation.h). */
static rb_err check_isolation(const core_settings *c, char *err)
{
    char e2[RB_ERR_LEN];
    if (c->docker_runtimes == NULL || backend_runtimes_check(c->docker_runtimes, e2) != RB_OK)
        return rb_fail(RB_EINVAL, err, "docker-runtimes: %s", c->docker_runtimes ? e2 : "a list is required (runc)");
    if (c->gvisor_runtime == NULL || strchr(c->gvisor_runtime, '+') != NULL ||
        backend_runtimes_check(c->gvisor_runtime, e2) != RB_OK)
        return rb_fail(RB_EINVAL, err, "gvisor-runtime: one runtime name, as registered in daemon.json (runsc)");
    if (!isolation_known(c->isolation))
        return rb_fail(RB_EINVAL, err, "isolation: must be %s", ISOLATION_TEXT);
    return RB_OK;
}

/* Every --engine: its syntax, its address and TLS files, names unique. */
static rb_err check_engines(const core_settings *c, char *err)
{
    char names[64][40];
    size_t n = 0;
    const char *p = c->engines;
    while (p != NULL && *p) {
        const char *nl = strchr(p, '\n');
        char *line = xstrndup(p, nl ? (size_t)(nl - p) : strlen(p));
        backend_multi_engine eng;
        char *own = NULL, e2[RB_ERR_LEN];
        rb_err e = backend_multi_parse(line, c->engine_tls_ca, c->engine_tls_cert, c->engine_tls_key, &eng, &own, e2);
        if (e == RB_OK && (e = backend_docker_check(&eng.at, e2)) != RB_OK)
            snprintf(e2 + strlen(e2), sizeof(e2) - strlen(e2), " (engine %s)", eng.name);
        for (size_t i = 0; e == RB_OK && i < n; i++)
            if (strcmp(names[i], eng.name) == 0)
                e = rb_fail(RB_EINVAL, e2, "two engines are named %s", eng.name);
        if (e == RB_OK && n == sizeof(names) / sizeof(names[0]))
            e = rb_fail(RB_EINVAL, e2, "at most %zu engines", sizeof(names) / sizeof(names[0]));
        if (e == RB_OK)
            snprintf(names[n++], sizeof(names[0]), "%s", eng.name);
        free(own);
        free(line);
        if (e != RB_OK)
            return rb_fail(RB_EINVAL, err, "engine: %s", e2);
        p = nl ? nl + 1 : NULL;
    }
    return RB_OK;
}

rb_err config_validate(const rb_config *cfg, char *err)
{
    rb_log_level lvl;
    if (cfg->server.listen == NULL || !listen_ok(cfg->server.listen))
        return rb_fail(RB_EINVAL, err, "listen: '%s' is not HOST:PORT (e.g. 127.0.0.1:8080)",
                       cfg->server.listen ? cfg->server.listen : "");
    if (cfg->core.db_path == NULL || cfg->core.db_path[0] == '\0')
        return rb_fail(RB_EINVAL, err, "db: a database path is required");
    if (cfg->core.image == NULL || cfg->core.image[0] == '\0')
        return rb_fail(RB_EINVAL, err, "image: an image name is required");
    if (cfg->core.docker_socket == NULL || cfg->core.docker_socket[0] == '\0')
        return rb_fail(RB_EINVAL, err, "docker-socket: a socket path is required");
    const backend_docker_engine eng = {cfg->core.docker_socket, cfg->core.docker_tls_ca, cfg->core.docker_tls_cert,
                                       cfg->core.docker_tls_key, NULL};
    char e2[RB_ERR_LEN];
    if (backend_docker_check(&eng, e2) != RB_OK)
        return rb_fail(RB_EINVAL, err, "docker-socket: %s", e2);
    if (!(cfg->core.docker_timeout >= 0.1) || cfg->core.docker_timeout > 3600)
        return rb_fail(RB_EINVAL, err, "docker-timeout: must be between 0.1 and 3600 seconds");
    if (!(cfg->core.docker_transfer_timeout >= 0.1) || cfg->core.docker_transfer_timeout > 86400)
        return rb_fail(RB_EINVAL, err, "docker-transfer-timeout: must be between 0.1 and 86400 seconds");
    if (cfg->server.max_body == 0)
        return rb_fail(RB_EINVAL, err, "max-body: must be at least 1 byte");
    if (cfg->core.output_limit == 0)
        return rb_fail(RB_EINVAL, err, "output-limit: must be at least 1 byte");
    if (!(cfg->core.max_timeout > 0))
        return rb_fail(RB_EINVAL, err, "max-timeout: must be more than 0 seconds");
    if (!(cfg->core.default_timeout > 0) || cfg->core.default_timeout > cfg->core.max_timeout)
        return rb_fail(RB_EINVAL, err, "timeout: must be more than 0 and at most max-timeout (%g s)", cfg->core.max_timeout);
    if (!(cfg->server.dify_timeout > 0) || cfg->server.dify_timeout > cfg->core.max_timeout)
        return rb_fail(RB_EINVAL, err, "dify-timeout: must be more than 0 and at most max-timeout (%g s)",
                       cfg->core.max_timeout);
    if (cfg->core.idle_timeout < 0)
        return rb_fail(RB_EINVAL, err, "idle-timeout: must not be negative");
    if (cfg->core.retention < 0)
        return rb_fail(RB_EINVAL, err, "retention: must not be negative");
    if (cfg->core.audit_retention < 0)
        return rb_fail(RB_EINVAL, err, "audit-retention: must not be negative");
    if (cfg->core.audit_max_events < 1000 || cfg->core.audit_max_events > 100000000)
        return rb_fail(RB_EINVAL, err, "audit-max-events: must be between 1000 and 100000000");
    if (cfg->core.hibernate_retention < 0)
        return rb_fail(RB_EINVAL, err, "hibernate-retention: must not be negative");
    if (cfg->core.volume_quota == 0 || cfg->core.volume_quota > cfg->core.volume_quota_max)
        return rb_fail(RB_EINVAL, err, "volume-quota: must be at least 1 byte and at most volume-quota-max (%zu)",
                       cfg->core.volume_quota_max);
    if (cfg->core.max_volumes < 0)
        return rb_fail(RB_EINVAL, err, "max-volumes: must not be negative");
    if (cfg->core.idle_action == NULL || (strcmp(cfg->core.idle_action, "end") != 0 &&
                                          strcmp(cfg->core.idle_action, "suspend") != 0 &&
                                          strcmp(cfg->core.idle_action, "hibernate") != 0))
        return rb_fail(RB_EINVAL, err, "idle-action: must be end, suspend or hibernate (got '%.32s')",
                       cfg->core.idle_action ? cfg->core.idle_action : "");
    if (cfg->core.max_memory_mb <= 0)
        return rb_fail(RB_EINVAL, err, "max-memory: must be at least 1 MiB");
    if (cfg->core.memory_mb <= 0 || cfg->core.memory_mb > cfg->core.max_memory_mb)
        return rb_fail(RB_EINVAL, err, "memory: must be at least 1 MiB and at most max-memory (%d MiB)",
                       cfg->core.max_memory_mb);
    if (!(cfg->core.max_cpus > 0))
        return rb_fail(RB_EINVAL, err, "max-cpus: must be more than 0");
    if (!(cfg->core.cpus > 0) || cfg->core.cpus > cfg->core.max_cpus)
        return rb_fail(RB_EINVAL, err, "cpus: must be more than 0 and at most max-cpus (%g)", cfg->core.max_cpus);
    if (cfg->core.pids_limit <= 0)
        return rb_fail(RB_EINVAL, err, "pids-limit: must be at least 1");
    if (!(cfg->core.metrics_interval >= 1) || cfg->core.metrics_interval > 3600)
        return rb_fail(RB_EINVAL, err, "metrics-interval: must be between 1 and 3600 seconds");
    if (cfg->core.max_sessions <= 0)
        return rb_fail(RB_EINVAL, err, "max-sessions: must be at least 1");
    if (cfg->core.grace_ms < 0)
        return rb_fail(RB_EINVAL, err, "grace: must not be negative");
    if (cfg->core.max_queue <= 0)
        return rb_fail(RB_EINVAL, err, "max-queue: must be at least 1");
    if (cfg->log_level == NULL || rb_log_parse_level(cfg->log_level, &lvl) != 0)
        return rb_fail(RB_EINVAL, err, "log-level: must be one of debug, info, warn, error");
    if (cfg->core.pool_size < 0 || cfg->core.pool_size > 64)
        return rb_fail(RB_EINVAL, err, "pool-size: must be between 0 and 64");
    if (cfg->core.pool_max < 0 || cfg->core.pool_max > 256)
        return rb_fail(RB_EINVAL, err, "pool-max: must be between 0 and 256");
    if (cfg->core.pool_cpu_shares != 0 && (cfg->core.pool_cpu_shares < 2 || cfg->core.pool_cpu_shares > 1024))
        return rb_fail(RB_EINVAL, err, "pool-cpu-shares: must be 0 or between 2 and 1024");
    if (cfg->core.pool_bash_size < 0 || cfg->core.pool_bash_size > 64)
        return rb_fail(RB_EINVAL, err, "pool-bash-size: must be between 0 and 64");
    if (cfg->core.pool_other_size < 0 || cfg->core.pool_other_size > 64)
        return rb_fail(RB_EINVAL, err, "pool-other-isolation-size: must be between 0 and 64");
    if (check_isolation(&cfg->core, err) != RB_OK)
        return RB_EINVAL;
    if (cfg->core.max_pids_limit < cfg->core.pids_limit)
        return rb_fail(RB_EINVAL, err, "max-pids-limit: must be at least pids-limit (%d)", cfg->core.pids_limit);
    if (cfg->core.workspace_size < 1024 * 1024 || cfg->core.workspace_size > cfg->core.max_workspace_size)
        return rb_fail(RB_EINVAL, err, "workspace-size: must be at least 1m and at most max-workspace-size (%zu bytes)",
                       cfg->core.max_workspace_size);
    if (cfg->core.tmp_size < 1024 * 1024 || cfg->core.tmp_size > cfg->core.max_tmp_size)
        return rb_fail(RB_EINVAL, err, "tmp-size: must be at least 1m and at most max-tmp-size (%zu bytes)",
                       cfg->core.max_tmp_size);
    if (cfg->core.open_files < 64)
        return rb_fail(RB_EINVAL, err, "open-files: must be at least 64 (the runner needs a few)");
    if (cfg->core.file_size < 1024 * 1024)
        return rb_fail(RB_EINVAL, err, "file-size: must be at least 1m");
    if (cfg->core.code_policy == NULL ||
        (strcmp(cfg->core.code_policy, "off") != 0 && strcmp(cfg->core.code_policy, "default") != 0 &&
         strcmp(cfg->core.code_policy, "strict") != 0 && strcmp(cfg->core.code_policy, "custom") != 0))
        return rb_fail(RB_EINVAL, err, "code-policy: '%s' is not one of off, default, strict, custom",
                       cfg->core.code_policy ? cfg->core.code_policy : "");
    if (strcmp(cfg->core.code_policy, "custom") == 0 && cfg->core.code_policy_file == NULL)
        return rb_fail(RB_EINVAL, err, "code-policy: custom needs --code-policy-file (the rules to apply)");
    if (cfg->server.max_connections < 4)
        return rb_fail(RB_EINVAL, err, "max-connections: must be at least 4");
    if (cfg->server.max_stream_memory < 1024 * 1024)
        return rb_fail(RB_EINVAL, err, "max-stream-memory: must be at least 1m");
    if (cfg->server.max_streams < 1)
        return rb_fail(RB_EINVAL, err, "max-streams: must be at least 1");
    if (cfg->core.max_download_memory < cfg->core.max_download)
        return rb_fail(RB_EINVAL, err,
                       "max-download-memory: must be at least max-download (%zu bytes), or no file of that size "
                       "could ever be downloaded",
                       cfg->core.max_download);
    if (cfg->core.max_installs < 1 || cfg->core.max_installs > 8)
        return rb_fail(RB_EINVAL, err,
                       "max-installs: must be 1 to 8 (each install holds one of the Docker client's 16 long "
                       "connections, which file transfers need too)");
    if (cfg->core.max_mcp_sessions < 1)
        return rb_fail(RB_EINVAL, err, "max-mcp-sessions: must be at least 1");
    if (requirements_check_settings(&cfg->core, err) != RB_OK)
        return RB_EINVAL;
    if (check_registry(cfg->core.deps_npm_registry, err) != RB_OK)
        return RB_EINVAL;
    if (check_preload(cfg->core.preload, err) != RB_OK)
        return RB_EINVAL;
    if (web_check_settings(&cfg->core, err) != RB_OK)
        return RB_EINVAL;
    if (egress_check_settings(&cfg->core, err) != RB_OK)
        return RB_EINVAL;
    if (shares_check_settings(&cfg->core, err) != RB_OK)
        return RB_EINVAL;
    if (check_engines(&cfg->core, err) != RB_OK)
        return RB_EINVAL;
    if (strcmp(cfg->core.code_policy, "off") == 0 && cfg->core.code_policy_file != NULL)
        return rb_fail(RB_EINVAL, err,
                       "code-policy-file: set --code-policy to default, strict or custom too (it is off)");
    return RB_OK;
}

void config_each(const rb_config *cfg, config_key_cb cb, void *data)
{
    for (size_t i = 0; i < NKEYS; i++) {
        const void *field = (const char *)cfg + keys[i].offset;
        char v[64];
        switch (keys[i].kind) {
        case K_STR:
        case K_LIST:
        case K_MULTI:
        case K_ITEMS:
        case K_LEVEL: {
            const char *s = *(char *const *)field;
            cb(data, keys[i].key, keys[i].env, s ? s : "", keys[i].help);
            continue;
        }
        case K_SIZE:
            snprintf(v, sizeof(v), "%zu", *(const size_t *)field);
            break;
        case K_SECS:
        case K_NUM:
            snprintf(v, sizeof(v), "%g", *(const double *)field);
            break;
        case K_ISECS:
        case K_MIB:
        case K_INT:
            snprintf(v, sizeof(v), "%d", *(const int *)field);
            break;
        case K_BOOL:
            snprintf(v, sizeof(v), "%s", *(const int *)field ? "true" : "false");
            break;
        }
        cb(data, keys[i].key, keys[i].env, v, keys[i].help);
    }
}

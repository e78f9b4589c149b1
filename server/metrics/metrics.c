/*
 * metrics.c: GET /metrics (server/metrics/metrics.h). Each scrape reads the core's stats and the
 * server's counts, renders every family (HELP and TYPE lines, then its samples) into one
 * bounded buffer and answers it as text/plain version 0.0.4. Every family is always present
 * with all of its label values, zeros included, so that rates work from the first scrape.
 */
#include "server/metrics/metrics.h"

#include <assert.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "core/stats.h"

/* The exposition is some 20 KiB; the cap only stops a bug from growing it without end. */
#define METRICS_MAX (1u << 20)
#define METRICS_CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"

/* The protocol label: the registered protocols runbox documents, and everything else. */
enum { PROTO_REST, PROTO_MCP, PROTO_E2B, PROTO_OTHER, PROTO_MAX };
static const char *const proto_names[PROTO_MAX] = {"rest", "mcp", "e2b", "other"};
static const char *const class_names[HTTP_STATUS_CLASSES] = {"2xx", "3xx", "4xx", "5xx"};

static void put(rb_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Appends one formatted line (or lines) to b. */
static void put(rb_buf *b, const char *fmt, ...)
{
    char line[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    assert(n >= 0 && (size_t)n < sizeof(line)); /* names and labels are fixed and short */
    rb_err e = rb_buf_append(b, line, (size_t)n);
    assert(e == RB_OK);
    (void)e;
}

/* The HELP and TYPE lines that open a family (help holds no backslash or newline). */
static void family(rb_buf *b, const char *name, const char *type, const char *help)
{
    put(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void counter(rb_buf *b, const char *name, const char *help, uint64_t v)
{
    family(b, name, "counter", help);
    put(b, "%s %" PRIu64 "\n", name, v);
}

static void gauge(rb_buf *b, const char *name, const char *help, int64_t v)
{
    family(b, name, "gauge", help);
    put(b, "%s %" PRId64 "\n", name, v);
}

/* runboxd's resident memory in bytes from /proc/self/statm (its second field, in pages), or -1. */
static int64_t resident_bytes(void)
{
    FILE *f = fopen("/proc/self/statm", "re");
    if (f == NULL)
        return -1;
    long long size = 0, resident = -1;
    int n = fscanf(f, "%lld %lld", &size, &resident);
    fclose(f);
    long page = sysconf(_SC_PAGESIZE);
    if (n != 2 || resident < 0 || page <= 0)
        return -1;
    return (int64_t)resident * page;
}

static void render_sessions(rb_buf *b, const stats_snapshot *st)
{
    family(b, "runbox_sessions_live", "gauge", "Live sessions (not ended) by status.");
    for (int i = 0; i < STATS_LIVE_MAX; i++)
        put(b, "runbox_sessions_live{status=\"%s\"} %d\n", stats_live_name((stats_live)i), st->sessions[i]);
    counter(b, "runbox_sessions_created_total", "Sessions accepted by POST /sessions (or an MCP tool).",
            st->total.sessions_created);
    family(b, "runbox_sessions_ended_total", "counter",
           "Sessions ended, by reason: deleted (DELETE or its MCP session ended), idle (idle timeout), dead (its "
           "sandbox stopped), error (its sandbox never came up).");
    for (int i = 0; i < STATS_END_MAX; i++)
        put(b, "runbox_sessions_ended_total{reason=\"%s\"} %" PRIu64 "\n", stats_end_name((stats_end)i),
            st->total.sessions_ended[i]);
    gauge(b, "runbox_pool_size", "Warm sandboxes the pool keeps at least (--pool-size and the other profiles).",
          st->pool_size);
    family(b, "runbox_pool_target", "gauge",
           "Warm sandboxes the pool keeps now (it follows the rate of creates up to --pool-max), labelled by why: "
           "minimum, rate, maximum, memory, idle.");
    put(b, "runbox_pool_target{reason=\"%s\"} %d\n", st->pool_reason[0] ? st->pool_reason : "minimum", st->pool_target);
    gauge(b, "runbox_pool_ready", "Warm sandboxes ready to be claimed.", st->pool_ready);
    gauge(b, "runbox_pool_starting", "Warm sandboxes being started.", st->pool_starting);
    counter(b, "runbox_pool_hits_total", "Sessions that got a warm sandbox.", (uint64_t)st->pool_hits);
    counter(b, "runbox_pool_misses_total", "Sessions that had to start a sandbox of their own.",
            (uint64_t)st->pool_misses);
}

static void render_executions(rb_buf *b, const stats_snapshot *st)
{
    gauge(b, "runbox_executions_running", "Executions running now.", st->executions_running);
    gauge(b, "runbox_executions_queued", "Executions waiting for their session.", st->executions_queued);
    family(b, "runbox_executions_finished_total", "counter", "Executions finished, by final status.");
    for (int i = 0; i < STATS_EXEC_MAX; i++)
        put(b, "runbox_executions_finished_total{status=\"%s\"} %" PRIu64 "\n", stats_exec_name((stats_exec)i),
            st->total.executions_finished[i]);
    family(b, "runbox_execution_duration_seconds", "histogram",
           "Run time of finished executions that started (from running to finished).");
    uint64_t acc = 0;
    for (int i = 0; i < STATS_DURATION_BUCKETS; i++) {
        acc += st->total.duration_bucket[i];
        put(b, "runbox_execution_duration_seconds_bucket{le=\"%g\"} %" PRIu64 "\n", stats_duration_bound(i), acc);
    }
    acc += st->total.duration_bucket[STATS_DURATION_BUCKETS];
    put(b, "runbox_execution_duration_seconds_bucket{le=\"+Inf\"} %" PRIu64 "\n", acc);
    put(b, "runbox_execution_duration_seconds_sum %.17g\n", st->total.duration_sum);
    put(b, "runbox_execution_duration_seconds_count %" PRIu64 "\n", st->total.duration_count);
    counter(b, "runbox_execution_output_bytes_total",
            "Output bytes kept by finished executions (stream text and display data).", st->total.output_bytes);
    counter(b, "runbox_execution_dropped_bytes_total", "Output bytes finished executions dropped at their caps.",
            st->total.dropped_bytes);
    gauge(b, "runbox_docker_reachable", "1 when the last probe of the Docker engine answered, else 0.",
          st->docker_reachable);
}

/* The Docker engine's calls (the backend's operations and failure reasons, its fixed sets). */
static void render_engine(rb_buf *b, const backend_stats *e)
{
    family(b, "runbox_docker_call_duration_seconds", "histogram",
           "Docker Engine API calls by operation, from the call to its answer (waiting for a connection "
           "included; an attach until its stream is open), failed ones too.");
    for (size_t op = 0; op < e->n_ops; op++) {
        const rb_latency *h = &e->latency[op];
        uint64_t acc = 0;
        for (int i = 0; i < RB_LATENCY_BUCKETS; i++) {
            acc += h->bucket[i];
            put(b, "runbox_docker_call_duration_seconds_bucket{operation=\"%s\",le=\"%g\"} %" PRIu64 "\n", e->op[op],
                rb_latency_bound(i), acc);
        }
        acc += h->bucket[RB_LATENCY_BUCKETS];
        put(b, "runbox_docker_call_duration_seconds_bucket{operation=\"%s\",le=\"+Inf\"} %" PRIu64 "\n", e->op[op],
            acc);
        put(b, "runbox_docker_call_duration_seconds_sum{operation=\"%s\"} %.17g\n", e->op[op], h->sum);
        put(b, "runbox_docker_call_duration_seconds_count{operation=\"%s\"} %" PRIu64 "\n", e->op[op], h->count);
    }
    family(b, "runbox_docker_call_failures_total", "counter",
           "Docker Engine API calls that failed, by operation and reason: timeout (a deadline passed), unreachable "
           "(no connection to the socket), connection (it broke, or the answer was cut short or malformed), "
           "http_4xx and http_5xx (the engine's answer).");
    for (size_t op = 0; op < e->n_ops; op++)
        for (size_t r = 0; r < e->n_reasons; r++)
            put(b, "runbox_docker_call_failures_total{operation=\"%s\",reason=\"%s\"} %" PRIu64 "\n", e->op[op],
                e->reason[r], e->failures[op][r]);
}

static void render_http(rb_buf *b, const http_stats *hs)
{
    uint64_t req[PROTO_MAX][HTTP_STATUS_CLASSES];
    memset(req, 0, sizeof(req));
    for (size_t p = 0; p <= hs->nprotocols; p++) {
        const char *name = p < hs->nprotocols ? hs->protocol[p] : "";
        int k = strcmp(name, "rest") == 0  ? PROTO_REST
                : strcmp(name, "mcp") == 0 ? PROTO_MCP
                : strcmp(name, "e2b") == 0 ? PROTO_E2B
                                           : PROTO_OTHER;
        for (int c = 0; c < HTTP_STATUS_CLASSES; c++)
            req[k][c] += hs->requests[p][c];
    }
    family(b, "runbox_http_requests_total", "counter",
           "Answered HTTP requests by protocol (rest, mcp, e2b, other: /metrics and unknown paths) and status class.");
    for (int k = 0; k < PROTO_MAX; k++)
        for (int c = 0; c < HTTP_STATUS_CLASSES; c++)
            put(b, "runbox_http_requests_total{protocol=\"%s\",status_class=\"%s\"} %" PRIu64 "\n", proto_names[k],
                class_names[c], req[k][c]);
    family(b, "runbox_http_refusals_total", "counter",
           "Requests the HTTP layer refused itself, by reason (they are counted in the requests too).");
    for (int i = 0; i < HTTP_REFUSED_MAX; i++)
        put(b, "runbox_http_refusals_total{reason=\"%s\"} %" PRIu64 "\n", http_refusal_name((http_refusal)i),
            hs->refusals[i]);
    counter(b, "runbox_http_request_body_bytes_total", "Bytes of request bodies received.", hs->body_bytes_in);
    counter(b, "runbox_http_response_body_bytes_total", "Bytes of response bodies sent (no headers).",
            hs->body_bytes_out);
    gauge(b, "runbox_event_streams_open", "Open event streams (REST SSE and MCP GET streams).", (int64_t)hs->streams);
}

/* With several engines: each one's state, labelled by its name (the operator's, [a-z0-9_-]). */
static void render_engines(rb_buf *b, rb_core *core)
{
    json_t *h = core_health(core);
    json_t *engines = json_object_get(json_object_get(h, "docker"), "engines");
    static const struct {
        const char *metric, *key, *help;
    } g[] = {
        {"runbox_engine_reachable", "reachable", "1 when the engine answered its last probe (several engines)."},
        {"runbox_engine_sandboxes", "sandboxes", "Sandboxes runboxd placed on the engine."},
        {"runbox_engine_capacity", "capacity", "Sandboxes the engine may hold (--engine ...,capacity=N)."},
        {"runbox_engine_draining", "draining", "1 while the engine is drained (POST /engines/{name}/drain)."},
        {"runbox_engine_image_ok", "image_ok", "1 when the engine has the sandbox image with the expected id."},
        {"runbox_engine_placing", "placing", "1 when new sessions may be placed on the engine now."},
    };
    for (size_t k = 0; json_is_array(engines) && k < sizeof(g) / sizeof(g[0]); k++) {
        family(b, g[k].metric, "gauge", g[k].help);
        size_t i;
        json_t *e;
        json_array_foreach(engines, i, e)
        {
            json_t *v = json_object_get(e, g[k].key);
            long long n = json_is_integer(v) ? (long long)json_integer_value(v) : json_is_true(v) ? 1 : 0;
            put(b, "%s{engine=\"%s\"} %lld\n", g[k].metric, json_string_value(json_object_get(e, "name")), n);
        }
    }
    /* the runtimes each engine offers (names checked at start: [A-Za-z0-9._-]) */
    family(b, "runbox_engine_runtime", "gauge",
           "1 for each OCI runtime an engine offers (--docker-runtimes, --engine ...,runtimes=); engine \"local\" "
           "with a single engine.");
    json_t *runtimes = json_object_get(json_object_get(h, "docker"), "runtimes"), *r;
    size_t i;
    if (json_is_array(engines)) {
        json_t *e;
        json_array_foreach(engines, i, e)
        {
            size_t j;
            json_array_foreach(json_object_get(e, "runtimes"), j, r)
            put(b, "runbox_engine_runtime{engine=\"%s\",runtime=\"%s\"} 1\n",
                json_string_value(json_object_get(e, "name")), json_string_value(r));
        }
    } else {
        json_array_foreach(runtimes, i, r)
        put(b, "runbox_engine_runtime{engine=\"local\",runtime=\"%s\"} 1\n", json_string_value(r));
    }
    json_decref(h);
}

/* Networks by policy: the sessions' egress proxies (docs/network.md). */
static void render_egress(rb_buf *b, const stats_snapshot *st)
{
    gauge(b, "runbox_egress_proxies", "Sessions with a network by policy (each has an egress proxy).",
          st->egress_proxies);
    family(b, "runbox_egress_connections_total", "counter",
           "Connections egress proxies opened for sandboxes, by outcome (allowed: opened; unreachable: allowed but "
           "the connection failed).");
    put(b, "runbox_egress_connections_total{outcome=\"allowed\"} %" PRId64 "\n", st->egress_allowed);
    put(b, "runbox_egress_connections_total{outcome=\"unreachable\"} %" PRId64 "\n", st->egress_unreachable);
    family(b, "runbox_egress_refusals_total", "counter",
           "Connections egress proxies refused, by cause (not_allowed, denied, port, ip_literal, address: the name "
           "resolves to a refused address or to none, other).");
    for (int i = 0; i < st->n_egress_refusals; i++)
        put(b, "runbox_egress_refusals_total{cause=\"%s\"} %" PRId64 "\n", st->egress_refusal_names[i],
            st->egress_refused[i]);
    family(b, "runbox_egress_bytes_total", "counter", "Bytes relayed by egress proxies, by direction.");
    put(b, "runbox_egress_bytes_total{direction=\"up\"} %" PRId64 "\n", st->egress_bytes_up);
    put(b, "runbox_egress_bytes_total{direction=\"down\"} %" PRId64 "\n", st->egress_bytes_down);
    counter(b, "runbox_egress_proxy_restarts_total", "Egress proxies started again after they stopped.",
            (uint64_t)st->egress_restarts);
    counter(b, "runbox_egress_secret_uses_total",
            "Requests an egress proxy added an operator's secret to (--secrets-file; never the value).",
            (uint64_t)st->egress_secret_uses);
    counter(b, "runbox_egress_secret_refusals_total",
            "Secrets refused: a session naming one its key may not use, or a request to a secret's host whose Host "
            "header disagrees with its target.",
            (uint64_t)st->egress_secret_refusals);
}

/* Per-session usage (core_usage_latest): the newest sample of at most USAGE_SERIES_MAX sessions
 * the caller may see (a user key its own; an admin or viewer all), those using the most memory,
 * labelled by session id; how many of them have samples in all. */
#define USAGE_SERIES_MAX 100
#define USAGE_STR_(x) #x
#define USAGE_STR(x) USAGE_STR_(x) /* the number, as text of the help line */

static int session_label_ok(const char *id)
{
    size_t n = id != NULL ? strlen(id) : 0;
    return n > 0 && n < 64 &&
           strspn(id, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-") == n;
}

static void render_usage(rb_buf *b, rb_core *core, const core_caller *who)
{
    static const struct {
        const char *metric, *key, *help;
    } g[] = {
        {"runbox_session_cpu_percent", "cpu_pct", "CPU a session's sandbox used, in percent of one CPU (last sample)."},
        {"runbox_session_memory_bytes", "mem_bytes", "Memory a session's sandbox uses, page cache left out."},
        {"runbox_session_memory_limit_bytes", "mem_limit_bytes", "A session's sandbox's memory limit."},
        {"runbox_session_pids", "pids", "Processes and threads in a session's sandbox."},
        {"runbox_session_network_receive_bytes", "net_rx_bytes", "Bytes a session's sandbox received since it started."},
        {"runbox_session_network_transmit_bytes", "net_tx_bytes", "Bytes a session's sandbox sent since it started."},
    };
    size_t sampled = 0;
    json_t *latest = core_usage_latest(core, who, USAGE_SERIES_MAX, &sampled);
    gauge(b, "runbox_sessions_sampled",
          "Live sessions with a usage sample; the runbox_session_* gauges show the " USAGE_STR(USAGE_SERIES_MAX)
          " using the most memory.",
          (int64_t)sampled);
    for (size_t k = 0; k < sizeof(g) / sizeof(g[0]); k++) {
        family(b, g[k].metric, "gauge", g[k].help);
        size_t i;
        json_t *s;
        json_array_foreach(latest, i, s)
        {
            const char *id = json_string_value(json_object_get(s, "session_id"));
            json_t *v = json_object_get(s, g[k].key);
            if (!session_label_ok(id))
                continue;
            if (json_is_real(v))
                put(b, "%s{session=\"%s\"} %.2f\n", g[k].metric, id, json_real_value(v));
            else
                put(b, "%s{session=\"%s\"} %" PRId64 "\n", g[k].metric, id, (int64_t)json_integer_value(v));
        }
    }
    json_decref(latest);
}

static void render(rb_buf *b, rb_core *core, const rb_server *server, const core_caller *who)
{
    stats_snapshot st;
    http_stats hs;
    stats_read(core, &st);
    server_stats(server, &hs);
    family(b, "runbox_build_info", "gauge", "runboxd's version, as a label (the value is always 1).");
    put(b, "runbox_build_info{version=\"%s\"} 1\n", RUNBOX_VERSION);
    render_sessions(b, &st);
    render_executions(b, &st);
    render_engine(b, &st.engine);
    render_engines(b, core);
    render_http(b, &hs);
    gauge(b, "runbox_mcp_sessions_live", "Live MCP client sessions.", st.total.mcp_sessions);
    render_egress(b, &st);
    render_usage(b, core, who);
    int64_t rss = resident_bytes();
    if (rss >= 0)
        gauge(b, "runbox_process_resident_memory_bytes", "runboxd's resident memory (from /proc/self/statm).", rss);
}

static int metrics_get(http_call *call)
{
    static h2o_generator_t generator = {NULL, NULL};
    h2o_req_t *req = call->req;
    rb_buf b;
    rb_buf_init(&b, METRICS_MAX);
    render(&b, call->data, call->server, call->who);
    h2o_iovec_t body = h2o_iovec_init(http_pool_strdup(req, b.data, b.len), b.len);
    rb_buf_dispose(&b);
    req->res.status = 200;
    req->res.reason = "OK";
    req->res.content_length = body.len;
    h2o_set_header(&req->pool, &req->res.headers, H2O_TOKEN_CONTENT_TYPE, H2O_STRLIT(METRICS_CONTENT_TYPE), 1);
    h2o_set_header(&req->pool, &req->res.headers, H2O_TOKEN_CACHE_CONTROL, H2O_STRLIT("no-store"), 1);
    h2o_start_response(req, &generator);
    h2o_send(req, &body, 1, H2O_SEND_STATE_FINAL);
    return 0;
}

static const http_route routes[] = {
    {"GET", "/metrics", metrics_get},
};

void metrics_register(rb_server *s, rb_core *core)
{
    http_protocol p = {.name = "metrics", .routes = routes, .nroutes = sizeof(routes) / sizeof(routes[0]), .data = core};
    server_register(s, &p);
}

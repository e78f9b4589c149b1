/*
 * test_metrics.c: GET /metrics (server/metrics/metrics.c) over real HTTP against the fake core.
 * Every scrape is checked as a Prometheus text exposition (0.0.4): each line is a HELP, a TYPE
 * or a sample that parses; HELP and TYPE open each family once, before its samples; counters
 * end in _total; histograms are cumulative; label names and values come from the fixed sets.
 * Then: counters never go down between scrapes, and refusals and requests are counted.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "tests/server/harness.h"

#define CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"

static harness h;

static void setup(void)
{
    harness_start(&h, 4096);
}

static void teardown(void)
{
    harness_stop(&h);
}

TestSuite(metrics, .init = setup, .fini = teardown, .timeout = 60);

/* A parsed scrape: samples {"name{labels}": value} and families {name: type}. */
typedef struct scrape {
    json_t *samples, *types;
} scrape;

static void scrape_dispose(scrape *s)
{
    json_decref(s->samples);
    json_decref(s->types);
}

static int in_set(const char *v, const char *const *set)
{
    for (; *set != NULL; set++)
        if (strcmp(v, *set) == 0)
            return 1;
    return 0;
}

/* Whether a label value is in the fixed set of its label name. */
static int label_ok(const char *name, const char *value)
{
    static const char *const status[] = {"starting",  "ready",    "busy",      "pausing", "suspended",
                                         "hibernated", "resuming", "completed", "error",   "timeout",
                                         "cancelled",  NULL};
    static const char *const reason[] = {"deleted",        "idle",         "dead",        "error",
                                         "host",           "origin",       "stopping",    "too_many_streams",
                                         "body_too_large", "bad_request",  "unauthorized", "rate_limited",
                                         "too_many_connections", "role",
                                         /* runbox_pool_target's (core/pool_demand.h) */
                                         "minimum", "rate", "maximum", "memory", NULL};
    static const char *const protocol[] = {"rest", "mcp", "e2b", "other", NULL};
    static const char *const status_class[] = {"2xx", "3xx", "4xx", "5xx", NULL};
    static const char *const outcome[] = {"allowed", "unreachable", NULL};
    static const char *const cause[] = {"not_allowed", "denied", "port", "ip_literal", "address", "other", NULL};
    static const char *const direction[] = {"up", "down", NULL};
    if (strcmp(name, "outcome") == 0)
        return in_set(value, outcome);
    if (strcmp(name, "cause") == 0)
        return in_set(value, cause);
    if (strcmp(name, "direction") == 0)
        return in_set(value, direction);
    if (strcmp(name, "status") == 0)
        return in_set(value, status);
    if (strcmp(name, "reason") == 0)
        return in_set(value, reason);
    if (strcmp(name, "protocol") == 0)
        return in_set(value, protocol);
    if (strcmp(name, "status_class") == 0)
        return in_set(value, status_class);
    if (strcmp(name, "version") == 0)
        return strcmp(value, RUNBOX_VERSION) == 0;
    if (strcmp(name, "le") == 0) {
        char *end;
        if (strcmp(value, "+Inf") == 0)
            return 1;
        strtod(value, &end);
        return end != value && *end == '\0';
    }
    return 0;
}

static int name_char(char c, int first)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':' || (!first && c >= '0' && c <= '9');
}

/* Length of the metric or label name at p (0 if there is none). */
static size_t name_len(const char *p)
{
    size_t n = 0;
    while (name_char(p[n], n == 0))
        n++;
    return n;
}

static int ends_with(const char *s, const char *suffix)
{
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && strcmp(s + a - b, suffix) == 0;
}

/* Parses one sample line into samples, checking it against the family being read (cur, type). */
static void parse_sample(const char *line, const char *cur, const char *type, scrape *out)
{
    size_t n = name_len(line);
    cr_assert_gt(n, 0, "not a sample: '%s'", line);
    char name[128];
    cr_assert_lt(n, sizeof(name));
    memcpy(name, line, n);
    name[n] = '\0';
    cr_assert_not_null(cur, "sample before any TYPE: '%s'", line);
    if (strcmp(type, "histogram") == 0) {
        char want[3][160];
        snprintf(want[0], sizeof(want[0]), "%s_bucket", cur);
        snprintf(want[1], sizeof(want[1]), "%s_sum", cur);
        snprintf(want[2], sizeof(want[2]), "%s_count", cur);
        cr_assert(strcmp(name, want[0]) == 0 || strcmp(name, want[1]) == 0 || strcmp(name, want[2]) == 0,
                  "'%s' in histogram %s", name, cur);
        cr_assert_eq(strstr(line, "le=\"") != NULL, strcmp(name, want[0]) == 0, "le on buckets only: '%s'", line);
    } else {
        cr_assert_str_eq(name, cur, "sample of another family than its TYPE: '%s'", line);
    }
    const char *p = line + n;
    if (*p == '{') {
        p++;
        while (*p != '}') {
            size_t ln = name_len(p);
            cr_assert_gt(ln, 0, "bad label in '%s'", line);
            char lname[64], lvalue[128];
            cr_assert_lt(ln, sizeof(lname));
            memcpy(lname, p, ln);
            lname[ln] = '\0';
            p += ln;
            cr_assert(p[0] == '=' && p[1] == '"', "bad label in '%s'", line);
            p += 2;
            const char *q = strchr(p, '"');
            cr_assert_not_null(q, "unterminated label value in '%s'", line);
            cr_assert_lt((size_t)(q - p), sizeof(lvalue));
            memcpy(lvalue, p, (size_t)(q - p));
            lvalue[q - p] = '\0';
            cr_assert(strchr(lvalue, '\\') == NULL, "escapes are never needed: '%s'", line);
            cr_assert(label_ok(lname, lvalue), "label %s=\"%s\" is outside its fixed set: '%s'", lname, lvalue, line);
            p = q + 1;
            if (*p == ',')
                p++;
            else
                cr_assert_eq(*p, '}', "bad label list in '%s'", line);
        }
        p++;
    }
    cr_assert_eq(*p, ' ', "no value in '%s'", line);
    p++;
    char *end;
    double v = strtod(p, &end);
    cr_assert(end != p && *end == '\0', "value does not parse (or a timestamp follows) in '%s'", line);
    cr_assert_geq(v, 0, "negative: '%s'", line);
    char key[256];
    snprintf(key, sizeof(key), "%.*s", (int)(p - 1 - line), line);
    cr_assert_null(json_object_get(out->samples, key), "series twice: '%s'", key);
    json_object_set_new(out->samples, key, json_real(v));
}

/* GET /metrics and a check of the whole exposition. */
static void get_metrics(scrape *out)
{
    http_resp r;
    cr_assert_eq(http_json(h.port, "GET", "/metrics", NULL, &r), 0);
    cr_assert_eq(r.status, 200, "%s", r.body);
    const char *ct = http_header(&r, "content-type");
    cr_assert(ct != NULL && strcmp(ct, CONTENT_TYPE) == 0, "Content-Type %s", ct ? ct : "(none)");
    cr_assert_gt(r.body_len, 0);
    cr_assert_eq(r.body[r.body_len - 1], '\n', "the exposition ends with a newline");
    out->samples = json_object();
    out->types = json_object();
    char cur[128] = "", help[128] = "";
    const char *type = NULL;
    for (char *line = r.body, *eol; *line != '\0'; line = eol + 1) {
        eol = strchr(line, '\n');
        cr_assert_not_null(eol);
        *eol = '\0';
        cr_assert_neq(line[0], '\0', "empty line in the exposition");
        char name[128], word[32];
        if (strncmp(line, "# HELP ", 7) == 0) {
            cr_assert_eq(sscanf(line, "# HELP %127s %31s", name, word), 2, "HELP without text: '%s'", line);
            cr_assert_null(json_object_get(out->types, name), "family %s declared twice", name);
            snprintf(help, sizeof(help), "%s", name);
        } else if (strncmp(line, "# TYPE ", 7) == 0) {
            cr_assert_eq(sscanf(line, "# TYPE %127s %31s", name, word), 2, "'%s'", line);
            cr_assert_str_eq(name, help, "TYPE %s does not follow its HELP", name);
            cr_assert(strcmp(word, "counter") == 0 || strcmp(word, "gauge") == 0 || strcmp(word, "histogram") == 0,
                      "'%s'", line);
            cr_assert_eq(strncmp(name, "runbox_", 7), 0, "%s", name);
            cr_assert_eq(strcmp(word, "counter") == 0, ends_with(name, "_total"), "counters (only) end in _total: %s",
                         name);
            json_object_set_new(out->types, name, json_string(word));
            snprintf(cur, sizeof(cur), "%s", name);
            help[0] = '\0';
            type = json_string_value(json_object_get(out->types, name));
        } else {
            cr_assert_neq(line[0], '#', "unexpected comment '%s'", line);
            parse_sample(line, cur[0] ? cur : NULL, type, out);
        }
    }
    http_resp_dispose(&r);
}

static double value(const scrape *s, const char *key)
{
    json_t *v = json_object_get(s->samples, key);
    cr_assert_not_null(v, "no series %s", key);
    return json_real_value(v);
}

/* Whether series key belongs to a family that only grows (a counter or a histogram's parts). */
static int grows(const scrape *s, const char *key)
{
    char name[128];
    size_t n = name_len(key);
    snprintf(name, sizeof(name), "%.*s", (int)n, key);
    const char *t = json_string_value(json_object_get(s->types, name));
    if (t != NULL)
        return strcmp(t, "counter") == 0;
    static const char *const parts[] = {"_bucket", "_sum", "_count"};
    for (size_t i = 0; i < 3; i++) {
        if (ends_with(name, parts[i])) {
            name[strlen(name) - strlen(parts[i])] = '\0';
            t = json_string_value(json_object_get(s->types, name));
            return t != NULL && strcmp(t, "histogram") == 0;
        }
    }
    cr_assert_fail("series %s of no family", key);
    return 0;
}

static char *new_session(void)
{
    http_resp r;
    cr_assert_eq(http_json(h.port, "POST", "/sessions", "{}", &r), 0);
    cr_assert_eq(r.status, 201, "%s", r.body);
    char *id = xstrdup(json_string_value(json_object_get(r.json, "session_id")));
    http_resp_dispose(&r);
    return id;
}

static void run_cell(const char *sid, const char *code, const char *status)
{
    char body[256];
    http_resp r;
    snprintf(body, sizeof(body), "{\"session_id\":\"%s\",\"code\":\"%s\",\"wait\":true}", sid, code);
    cr_assert_eq(http_json(h.port, "POST", "/execute", body, &r), 0);
    cr_assert_eq(r.status, 200, "%s", r.body);
    cr_assert_str_eq(json_string_value(json_object_get(r.json, "status")), status);
    http_resp_dispose(&r);
}

/* A request with the given Host header (http_do always sends its own). Returns the status. */
static int with_host(const char *path, const char *host)
{
    int fd = http_connect(h.port);
    cr_assert_geq(fd, 0);
    char req[512];
    int n = snprintf(req, sizeof(req), "GET %s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", path, host);
    cr_assert_eq(write(fd, req, (size_t)n), n);
    char buf[8192];
    size_t got = 0;
    ssize_t k;
    while (got < sizeof(buf) - 1 && (k = read(fd, buf + got, sizeof(buf) - 1 - got)) > 0)
        got += (size_t)k;
    buf[got] = '\0';
    close(fd);
    int status = 0;
    cr_assert_eq(sscanf(buf, "HTTP/1.1 %d", &status), 1, "%s", buf);
    return status;
}

Test(metrics, exposition_parses_and_counters_only_grow)
{
    scrape a, b;
    get_metrics(&a);
    char *sid = new_session();
    run_cell(sid, "1", "completed");
    run_cell(sid, "RAISE", "error");
    http_resp r;
    cr_assert_eq(http_json(h.port, "GET", "/nope", NULL, &r), 0);
    http_resp_dispose(&r);
    get_metrics(&b);

    /* The same series in both, counters never lower, the work above visible. */
    cr_assert_eq(json_object_size(a.samples), json_object_size(b.samples));
    const char *key;
    json_t *v;
    json_object_foreach(a.samples, key, v)
    {
        cr_assert_not_null(json_object_get(b.samples, key), "series %s disappeared", key);
        if (grows(&a, key))
            cr_assert_geq(value(&b, key), json_real_value(v), "counter %s went down", key);
    }
    cr_assert_geq(value(&b, "runbox_executions_finished_total{status=\"error\"}"), 1);
    cr_assert_geq(value(&b, "runbox_executions_finished_total{status=\"completed\"}"), 1);
    cr_assert_geq(value(&b, "runbox_sessions_created_total"), value(&a, "runbox_sessions_created_total") + 1);
    cr_assert_geq(value(&b, "runbox_sessions_live{status=\"ready\"}"), 1);
    cr_assert_eq(value(&b, "runbox_docker_reachable"), 1);
    cr_assert_gt(value(&b, "runbox_process_resident_memory_bytes"), 0);
    cr_assert_gt(value(&b, "runbox_execution_output_bytes_total"), 0);

    /* The histogram is cumulative and its +Inf bucket is its count. */
    double prev = 0;
    static const char *const les[] = {"0.01", "0.05", "0.1", "0.25", "0.5", "1", "2.5", "5", "10", "30", "60", "300",
                                      "+Inf"};
    for (size_t i = 0; i < sizeof(les) / sizeof(les[0]); i++) {
        char k[128];
        snprintf(k, sizeof(k), "runbox_execution_duration_seconds_bucket{le=\"%s\"}", les[i]);
        cr_assert_geq(value(&b, k), prev, "%s is below the bucket before", k);
        prev = value(&b, k);
    }
    cr_assert_eq(prev, value(&b, "runbox_execution_duration_seconds_count"));
    cr_assert_geq(prev, 2);

    free(sid);
    scrape_dispose(&a);
    scrape_dispose(&b);
}

Test(metrics, refusals_and_requests_are_counted)
{
    scrape a, b;
    get_metrics(&a);
    /* The router's Host and Origin checks apply to /metrics like every route. */
    cr_assert_eq(with_host("/metrics", "attacker.example:8080"), 403);
    http_resp r;
    cr_assert_eq(http_do(h.port, "GET", "/metrics", "Origin: https://attacker.example\r\n", NULL, 0, &r), 0);
    cr_assert_eq(r.status, 403, "%s", r.body);
    http_resp_dispose(&r);
    /* A JSON body over max-body (4096 here), refused by the handler once read. */
    char big[8192];
    memset(big, ' ', sizeof(big));
    big[0] = '{';
    big[sizeof(big) - 1] = '}';
    cr_assert_eq(http_do(h.port, "POST", "/sessions", "Content-Type: application/json\r\n", big, sizeof(big), &r), 0);
    cr_assert_eq(r.status, 413, "%s", r.body);
    http_resp_dispose(&r);
    cr_assert_eq(http_json(h.port, "GET", "/health", NULL, &r), 0);
    http_resp_dispose(&r);
    get_metrics(&b);

    cr_assert_eq(value(&b, "runbox_http_refusals_total{reason=\"host\"}"),
                 value(&a, "runbox_http_refusals_total{reason=\"host\"}") + 1);
    cr_assert_eq(value(&b, "runbox_http_refusals_total{reason=\"origin\"}"),
                 value(&a, "runbox_http_refusals_total{reason=\"origin\"}") + 1);
    cr_assert_eq(value(&b, "runbox_http_refusals_total{reason=\"body_too_large\"}"),
                 value(&a, "runbox_http_refusals_total{reason=\"body_too_large\"}") + 1);
    cr_assert_eq(value(&b, "runbox_http_refusals_total{reason=\"stopping\"}"), 0);
    /* /metrics is "other": the first scrape (2xx) and the two refused ones (4xx). */
    cr_assert_geq(value(&b, "runbox_http_requests_total{protocol=\"other\",status_class=\"2xx\"}"),
                  value(&a, "runbox_http_requests_total{protocol=\"other\",status_class=\"2xx\"}") + 1);
    cr_assert_geq(value(&b, "runbox_http_requests_total{protocol=\"other\",status_class=\"4xx\"}"),
                  value(&a, "runbox_http_requests_total{protocol=\"other\",status_class=\"4xx\"}") + 2);
    cr_assert_geq(value(&b, "runbox_http_requests_total{protocol=\"rest\",status_class=\"4xx\"}"),
                  value(&a, "runbox_http_requests_total{protocol=\"rest\",status_class=\"4xx\"}") + 1);
    cr_assert_geq(value(&b, "runbox_http_requests_total{protocol=\"rest\",status_class=\"2xx\"}"),
                  value(&a, "runbox_http_requests_total{protocol=\"rest\",status_class=\"2xx\"}") + 1);
    cr_assert_geq(value(&b, "runbox_http_request_body_bytes_total"),
                  value(&a, "runbox_http_request_body_bytes_total") + sizeof(big));
    cr_assert_gt(value(&b, "runbox_http_response_body_bytes_total"), value(&a, "runbox_http_response_body_bytes_total"));
    scrape_dispose(&a);
    scrape_dispose(&b);
}

Test(metrics, only_get)
{
    http_resp r;
    cr_assert_eq(http_json(h.port, "POST", "/metrics", "{}", &r), 0);
    cr_assert_eq(r.status, 405, "%s", r.body);
    cr_assert_str_eq(http_header(&r, "allow"), "GET");
    http_resp_dispose(&r);
}

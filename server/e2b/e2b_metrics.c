/*
 * e2b_metrics.c: GET /sandboxes/{id}/metrics (Sandbox.get_metrics) from the session's usage
 * samples (core_session_metrics, core/core.h): each sample as E2B's SandboxMetric {timestamp,
 * timestampUnix, cpuCount, cpuUsedPct, memUsed, memTotal, memCache, diskUsed, diskTotal}, oldest
 * first, within the query's start and end (Unix seconds). Translation only; docs/e2b.md says
 * what each field holds on runboxd.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "base/clock.h"
#include "server/e2b/e2b_internal.h"
#include "server/e2b/e2b_wire.h"
#include "server/query.h"

/* The query parameter name as epoch ms (0 when absent); -1 after answering 400. */
static int64_t unix_param(http_call *call, const char *name)
{
    const char *v = http_query_param(call->req, name);
    if (v == NULL)
        return 0;
    char msg[128];
    int64_t s = 0;
    if (!query_whole(v, 253402300799LL, &s)) {
        snprintf(msg, sizeof(msg), "%s: a time in Unix seconds", name);
        e2b__api_error(call->req, 400, msg);
        return -1;
    }
    return (int64_t)s * 1000;
}

/* E2B's SandboxMetric of one runbox sample; cpus is the sandbox's CPU count. */
static json_t *metric_of(json_t *s, int cpus, json_int_t disk_total)
{
    int64_t at = 0;
    const char *ts = json_string_value(json_object_get(s, "timestamp"));
    if (ts == NULL || rb_time_parse(ts, &at) != 0)
        at = 0;
    /* runbox counts percent of one CPU; E2B's cpuUsedPct is of all cpuCount of them */
    double pct = json_number_value(json_object_get(s, "cpu_pct")) / cpus;
    /* E2B's disk is runbox's memory-backed workspace and /tmp: their files */
    return json_pack("{s:O, s:I, s:i, s:f, s:O, s:O, s:O, s:O, s:I}", "timestamp", json_object_get(s, "timestamp"),
                     "timestampUnix", (json_int_t)(at / 1000), "cpuCount", cpus, "cpuUsedPct", round(pct * 100) / 100,
                     "memUsed", json_object_get(s, "mem_bytes"), "memTotal", json_object_get(s, "mem_limit_bytes"),
                     "memCache", json_object_get(s, "mem_cache_bytes"), "diskUsed", json_object_get(s, "files_bytes"),
                     "diskTotal", disk_total);
}

int e2b__metrics(http_call *call)
{
    char err[RB_ERR_LEN];
    json_t *out = NULL;
    if (!e2b__authorised(call))
        return 0;
    int64_t start = unix_param(call, "start"), end = start < 0 ? 0 : unix_param(call, "end");
    if (start < 0 || end < 0)
        return 0;
    /* end names a whole second: every sample within it */
    rb_err e = core_session_metrics(call->core, call->who, call->params[0], start, end > 0 ? end + 999 : 0, &out, err);
    if (e == RB_ENOTFOUND) {
        e2b__api_not_found(call->req, call->params[0]);
        return 0;
    }
    if (e != RB_OK) {
        e2b__api_fail(call->req, e, err);
        return 0;
    }
    double limit = json_number_value(json_object_get(out, "cpu_limit"));
    int cpus = limit >= 1 ? (int)ceil(limit) : 1;
    json_int_t disk = json_integer_value(json_object_get(out, "workspace_limit_bytes"));
    json_t *list = json_array(), *s;
    size_t i;
    json_array_foreach(json_object_get(out, "samples"), i, s)
    {
        json_array_append_new(list, metric_of(s, cpus, disk));
    }
    http_send_json(call->req, 200, list);
    json_decref(list);
    json_decref(out);
    return 0;
}

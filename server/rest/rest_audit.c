/*
 * rest_audit.c: GET /audit?key=&session=&kind=&since=&until=&after=&limit=&format= (docs/security.md,
 * "Audit trail"): a page of the audit trail as JSON ({events, next}), or as JSON lines
 * (format=jsonl, or Accept: application/x-ndjson; an attachment, audit.jsonl), one event a
 * line, with the next page's cursor in the X-Next-After header (absent on the last page).
 */
#include "server/rest/rest_audit.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/mem.h"
#include "server/query.h"

/* The time of query parameter name into *ms (0 when absent); 0 on success, else -1 after a 400. */
static int time_param(http_call *call, const char *name, int64_t *ms)
{
    const char *v = http_query_param(call->req, name);
    *ms = 0;
    if (v == NULL || v[0] == '\0')
        return 0;
    if (query_time(v, ms))
        return 0;
    char msg[RB_ERR_LEN];
    snprintf(msg, sizeof(msg),
             "'%s' is a time: milliseconds since the epoch, or RFC 3339 such as 2026-11-28T22:05:00Z", name);
    http_send_error(call->req, RB_EINVAL, msg);
    return -1;
}

/* A whole number parameter from 0 to max into *out (dflt when absent); -1 after a 400. */
static int int_param(http_call *call, const char *name, int64_t max, int64_t dflt, int64_t *out)
{
    const char *v = http_query_param(call->req, name);
    *out = dflt;
    if (v == NULL || v[0] == '\0')
        return 0;
    if (query_whole(v, max, out))
        return 0;
    char msg[RB_ERR_LEN];
    snprintf(msg, sizeof(msg), "'%s' must be a whole number from 0 to %lld", name, (long long)max);
    http_send_error(call->req, RB_EINVAL, msg);
    return -1;
}

/* JSON lines: format (the query's, or NULL) says so, or the Accept header does. */
static int wants_lines(http_call *call, const char *f)
{
    if (f != NULL)
        return strcmp(f, "jsonl") == 0 || strcmp(f, "ndjson") == 0;
    ssize_t i = h2o_find_header(&call->req->headers, H2O_TOKEN_ACCEPT, -1);
    return i >= 0 && h2o_strstr(call->req->headers.entries[i].value.base, call->req->headers.entries[i].value.len,
                                H2O_STRLIT("application/x-ndjson")) != SIZE_MAX;
}

int rest_audit(http_call *call)
{
    char err[RB_ERR_LEN];
    core_audit_filter q = {0};
    int64_t limit = 0, after = 0;
    const char *format = http_query_param(call->req, "format");
    if (format != NULL && strcmp(format, "json") != 0 && strcmp(format, "jsonl") != 0 && strcmp(format, "ndjson") != 0) {
        http_send_error(call->req, RB_EINVAL, "'format' is json (the default) or jsonl (JSON lines)");
        return 0;
    }
    if (time_param(call, "since", &q.since) != 0 || time_param(call, "until", &q.until) != 0 ||
        int_param(call, "after", INT64_MAX / 2, 0, &after) != 0)
        return 0;
    const char *lim = http_query_param(call->req, "limit");
    if (lim != NULL && (!query_whole(lim, 1000, &limit) || limit < 1)) {
        http_send_error(call->req, RB_EINVAL, "'limit' is a whole number of events a page, 1 to 1000 (100 when absent)");
        return 0;
    }
    static const char *const kinds[] = {"execution", "file_upload", "file_download", "file_delete", "install",
                                        "network_refused", "secret_used", "secret_refused", "session_created",
                                        "session_ended", NULL};
    const char *kind = http_query_param(call->req, "kind");
    size_t k = 0;
    while (kind != NULL && kinds[k] != NULL && strcmp(kinds[k], kind) != 0)
        k++;
    if (kind != NULL && kinds[k] == NULL) {
        http_send_error(call->req, RB_EINVAL,
                        "'kind' is execution, file_upload, file_download, file_delete, install, network_refused, "
                        "secret_used, secret_refused, session_created or session_ended");
        return 0;
    }
    q.key = http_query_param(call->req, "key");
    q.session = http_query_param(call->req, "session");
    q.kind = kind;
    q.limit = (int)limit;
    q.after = after;
    json_t *out = NULL;
    rb_err e = core_audit_query(call->core, call->who, &q, &out, err);
    if (e != RB_OK) {
        http_send_error(call->req, e, err);
        return 0;
    }
    json_t *next = json_object_get(out, "next");
    if (json_is_integer(next)) {
        char v[32];
        int n = snprintf(v, sizeof(v), "%lld", (long long)json_integer_value(next));
        h2o_add_header_by_str(&call->req->pool, &call->req->res.headers, H2O_STRLIT("x-next-after"), 0, NULL,
                              http_pool_strdup(call->req, v, (size_t)n), (size_t)n);
    }
    if (!wants_lines(call, format)) {
        http_send_json(call->req, 200, out);
        json_decref(out);
        return 0;
    }
    rb_buf b;
    rb_buf_init(&b, 64 * 1024 * 1024); /* a page: at most 1000 events of bounded size */
    size_t i;
    json_t *ev;
    rb_err ae = RB_OK;
    json_array_foreach(json_object_get(out, "events"), i, ev)
    {
        char *line = json_dumps(ev, JSON_COMPACT);
        if (line == NULL)
            ae = RB_EINTERNAL;
        if (ae == RB_OK)
            ae = rb_buf_append(&b, line, strlen(line));
        if (ae == RB_OK)
            ae = rb_buf_append(&b, "\n", 1);
        free(line);
    }
    json_decref(out);
    if (ae != RB_OK) { /* never cut a page short: the client would take it for the whole of it */
        rb_buf_dispose(&b);
        http_send_error(call->req, RB_EINTERNAL, "the page of events could not be written out as JSON lines; ask "
                                                 "for fewer (limit) or for JSON (format=json)");
        return 0;
    }
    /* the bytes go out after this returns: they live in the request's pool */
    size_t len = b.len;
    char *body = http_pool_strdup(call->req, b.data != NULL ? b.data : "", len);
    rb_buf_dispose(&b);
    http_send_attachment(call->req, body, len, "application/x-ndjson", "audit.jsonl");
    return 0;
}

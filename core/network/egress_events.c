/*
 * egress_events.c: a session proxy's JSON event lines (core/network/egress.h), read from its
 * attach stream: "ready" opens the session's way out, allowed/refused/closed/unreachable are
 * counted for /metrics and gathered, bounded, into the report of the execution that caused them
 * (egress_take_report); refusals are logged at a bounded rate. The proxy's end is seen here too.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/audit/audit.h"
#include "core/network/egress_internal.h"

/* The item of host:port in the report map m ("host:port" -> {host, port, connections, ...}), one
 * connection added when opened; NULL when full, or when absent and not opened here. */
static json_t *report_item(json_t **m, const char *host, json_int_t port, int opened)
{
    char key[300];
    snprintf(key, sizeof(key), "%.250s:%lld", host, (long long)port);
    json_t *it = *m != NULL ? json_object_get(*m, key) : NULL;
    if (it == NULL && !opened)
        return NULL;
    if (it != NULL && !opened)
        return it;
    if (*m == NULL)
        *m = json_object();
    if (it == NULL) {
        if (json_object_size(*m) >= EGRESS_REPORT_MAX)
            return NULL;
        it = json_pack("{s:s, s:I, s:i}", "host", host, "port", port, "connections", 0);
        json_object_set_new(*m, key, it);
    }
    json_object_set_new(it, "connections", json_integer(json_integer_value(json_object_get(it, "connections")) + 1));
    return it;
}

const char *const egress_refusal_names[EGRESS_REFUSALS] = {"not_allowed", "denied",  "port",
                                                            "ip_literal",  "address", "other"};

/* The class of a refusal's reason (docker/web/egress_policy.py, Policy.decide; egress_proxy.py). */
static egress_refusal refusal_of(const char *why)
{
    if (why == NULL)
        return EGRESS_OTHER;
    if (strncmp(why, "an IP address", 13) == 0)
        return EGRESS_IP_LITERAL;
    if (strncmp(why, "denied by", 9) == 0)
        return EGRESS_DENIED;
    if (strncmp(why, "port ", 5) == 0)
        return EGRESS_PORT;
    if (strncmp(why, "not in the allow list", 21) == 0)
        return EGRESS_NOT_ALLOWED;
    if (strstr(why, "address") != NULL || strstr(why, "resolve") != NULL)
        return EGRESS_ADDRESS;
    return EGRESS_OTHER;
}

/* Logs a refusal, at most LOG_REFUSALS a minute for the whole room, and records those in the
 * audit trail (core/audit/); the rest are counted (/metrics) and reported with the execution. */
static void log_refusal(room *r, const entry *e, const char *host, json_int_t port, const char *why)
{
    int64_t now = rb_now_ms();
    if (now - r->log_window >= 60000) {
        if (r->log_dropped > 0)
            rb_info("egress: %d more refusals in the last minute were not logged", r->log_dropped);
        r->log_window = now;
        r->logged = r->log_dropped = 0;
    }
    if (r->logged++ < LOG_REFUSALS) {
        rb_info("session %s: egress refused %.200s:%lld: %.300s", e->sid, host, (long long)port, why ? why : "?");
        core_session_view v;
        char err[RB_ERR_LEN];
        const char *owner = core_heart_lookup(e->c, NULL, e->sid, &v, err) == RB_OK ? v.owner : "";
        audit_record(e->c, owner, e->sid, "network_refused",
                     json_pack("{s:o, s:I, s:o}", "host", audit_text(host, strlen(host), 260), "port", port, "reason",
                               audit_text(why ? why : "", why ? strlen(why) : 0, 300)));
    } else {
        r->log_dropped++;
    }
}

static void add_int(json_t *it, const char *key, json_int_t n)
{
    json_object_set_new(it, key, json_integer(json_integer_value(json_object_get(it, key)) + n));
}

static void proxy_line(entry *e, const char *line, size_t len)
{
    room *r = egress__room(e->c);
    json_t *ev = json_loadb(line, len, JSON_REJECT_DUPLICATES, NULL);
    const char *kind = json_string_value(json_object_get(ev, "event"));
    const char *host = json_string_value(json_object_get(ev, "host"));
    json_int_t port = json_integer_value(json_object_get(ev, "port"));
    if (kind == NULL) {
        json_decref(ev);
        return;
    }
    if (strcmp(kind, "ready") == 0) {
        e->ready = 1;
        egress__ca_recopy(e); /* after a restart: a proxy made anew has a new CA */
        egress__maybe_open(e);
    } else if (strcmp(kind, "allowed") == 0 && host != NULL) {
        r->counts.allowed++;
        json_t *it = report_item(&e->reached, host, port, 1);
        if (it != NULL && json_object_get(it, "bytes_up") == NULL) {
            json_object_set_new(it, "bytes_up", json_integer(0));
            json_object_set_new(it, "bytes_down", json_integer(0));
        }
    } else if (strcmp(kind, "closed") == 0 && host != NULL) {
        json_int_t up = json_integer_value(json_object_get(ev, "bytes_up"));
        json_int_t down = json_integer_value(json_object_get(ev, "bytes_down"));
        r->counts.bytes_up += up;
        r->counts.bytes_down += down;
        /* counted where the connection was opened, if that report is still being gathered */
        json_t *it = report_item(&e->reached, host, port, 0);
        if (it != NULL) {
            add_int(it, "bytes_up", up);
            add_int(it, "bytes_down", down);
        }
    } else if ((strcmp(kind, "refused") == 0 || strcmp(kind, "unreachable") == 0) && host != NULL) {
        const char *why = json_string_value(json_object_get(ev, "reason"));
        if (strcmp(kind, "refused") == 0) {
            r->counts.refused[refusal_of(why)]++;
            log_refusal(r, e, host, port, why);
        } else {
            r->counts.unreachable++;
        }
        json_t *it = report_item(&e->refused, host, port, 1);
        if (it != NULL && why != NULL && json_object_get(it, "reason") == NULL)
            json_object_set_new(it, "reason",
                                json_sprintf("%s%.300s", strcmp(kind, "unreachable") == 0 ? "unreachable: " : "", why));
    } else if (strcmp(kind, "secret_used") == 0 || strcmp(kind, "secret_refused") == 0) {
        egress__secret_event(e, ev, kind);
    } else if (strcmp(kind, "policy_error") == 0 && e->written) {
        const char *why = json_string_value(json_object_get(ev, "error"));
        rb_warn("session %s: its egress proxy cannot read its policy: %.300s", e->sid, why ? why : "?");
    }
    json_decref(ev);
}

void egress__proxy_data(void *data, int stream, const char *buf, size_t len)
{
    entry *e = data;
    if (stream != 1)
        return;
    e->refs++; /* a line may make the proxy ready, and a waiter end the session */
    for (size_t i = 0; i < len && e->state != E_CLOSED;) {
        const char *nl = memchr(buf + i, '\n', len - i);
        size_t n = nl ? (size_t)(nl - (buf + i)) : len - i;
        if (!e->line_skip && rb_buf_append(&e->line, buf + i, n) != RB_OK)
            e->line_skip = 1;
        if (nl != NULL) {
            if (!e->line_skip)
                proxy_line(e, e->line.data ? e->line.data : "", e->line.len);
            rb_buf_reset(&e->line);
            e->line_skip = 0;
            n++;
        }
        i += n;
    }
    egress__unref(e);
}

/* The proxy's output ended: it stopped (or the engine's stream broke). The sweep starts it again. */
void egress__proxy_closed(void *data, rb_err err, const char *errmsg)
{
    entry *e = data;
    e->att = NULL;
    (void)err;
    if (e->state == E_CLOSED || core_heart_closing(e->c))
        return;
    if (e->chain) { /* it exited as it started (or was stopped then) */
        e->ready = 0;
        egress__chain_failed(e, RB_EUNAVAILABLE, "starting it",
                     "it exited at once (an image without /opt/runbox-egress? rebuild it with docker/build-images)");
        return;
    }
    rb_warn("session %s: its egress proxy stopped (%s); starting it again", e->sid, errmsg ? errmsg : "its output ended");
    e->state = E_DOWN;
    e->ready = e->written = 0;
    e->next_try = rb_now_ms();
}

json_t *egress_take_report(rb_core *c, const char *session_id)
{
    entry *e = map_get(&egress__room(c)->entries, session_id);
    if (e == NULL || (e->reached == NULL && e->refused == NULL))
        return NULL;
    json_t *out = json_object();
    json_t *m[2] = {e->reached, e->refused};
    const char *names[2] = {"reached", "refused"};
    for (int i = 0; i < 2; i++) {
        json_t *arr = json_array();
        const char *k;
        json_t *v;
        json_object_foreach (m[i], k, v)
            json_array_append(arr, v);
        json_object_set_new(out, names[i], arr);
        json_decref(m[i]);
    }
    e->reached = e->refused = NULL;
    return out;
}

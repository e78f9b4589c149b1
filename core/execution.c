/*
 * execution.c: one execution of code in a session. Collects the runner's output items in
 * order (coalescing stream chunks, enforcing runboxd's own backstop cap on top of the
 * runner's), builds the status and result documents of the public API, persists the final
 * state, and delivers events to watchers. It does not talk to Docker: sandbox.c feeds it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/audit/audit.h"
#include "core/internal.h"
#include "core/mime_bundle.h"

execution *execution_new(rb_core *c, session *s, const char *code, double timeout)
{
    execution *ex = xcalloc(1, sizeof(*ex));
    ex->core = c;
    ex->s = s;
    rb_random_id("e_", ex->id, sizeof(ex->id));
    snprintf(ex->session_id, sizeof(ex->session_id), "%s", s->id);
    ex->owner = xstrdup(s->owner ? s->owner : "");
    ex->code = xstrdup(code);
    ex->timeout = timeout;
    ex->status = "queued";
    ex->created_at = rb_now_ms();
    ex->outputs = json_array();
    rb_buf_init(&ex->tail, SIZE_MAX / 2);
    ex->duration_ms = -1;
    return ex;
}

static void backstop_close_cb(uv_handle_t *h)
{
    free(h);
}

void execution_free(execution *ex)
{
    if (ex == NULL)
        return;
    if (ex->backstop != NULL) {
        uv_timer_stop(ex->backstop);
        uv_close((uv_handle_t *)ex->backstop, backstop_close_cb);
    }
    free(ex->owner);
    free(ex->actor);
    free(ex->code);
    free(ex->reset_reason);
    json_decref(ex->context);
    json_decref(ex->env);
    json_decref(ex->outputs);
    rb_buf_dispose(&ex->tail);
    json_decref(ex->error);
    json_decref(ex->files_written);
    json_decref(ex->network);
    json_decref(ex->policy_rules);
    free(ex);
}

static json_t *tail_item(const execution *ex)
{
    return json_pack("{s:s, s:s, s:s%}", "type", "stream", "name", ex->tail_name, "text",
                     ex->tail.data ? ex->tail.data : "", ex->tail.len);
}

/* Moves the growing stream item into the finished outputs. */
static void flush_tail(execution *ex)
{
    if (ex->tail_name == NULL)
        return;
    json_array_append_new(ex->outputs, tail_item(ex));
    ex->tail_name = NULL;
    rb_buf_reset(&ex->tail);
}

json_t *execution_outputs(const execution *ex)
{
    json_t *arr = json_array();
    json_array_extend(arr, ex->outputs);
    if (ex->tail_name != NULL)
        json_array_append_new(arr, tail_item(ex));
    return arr;
}

/* ---- documents ---------------------------------------------------------------------- */

json_t *execution_to_doc(const execution *ex)
{
    json_t *doc = json_object();
    json_object_set_new(doc, "request_id", json_string(ex->id));
    json_object_set_new(doc, "session_id", json_string(ex->session_id));
    if (ex->owner != NULL && ex->owner[0] != '\0')
        json_object_set_new(doc, "owner", json_string(ex->owner));
    json_object_set_new(doc, "status", json_string(ex->status));
    json_object_set_new(doc, "created_at", json_integer(ex->created_at));
    core_json_ms(doc, "started_at", ex->started_at);
    core_json_ms(doc, "completed_at", ex->completed_at);
    json_object_set_new(doc, "code", json_string(ex->code));
    json_object_set_new(doc, "timeout", json_real(ex->timeout));
    json_object_set_new(doc, "outputs", execution_outputs(ex));
    json_object_set_new(doc, "truncated", json_boolean(ex->truncated));
    json_object_set_new(doc, "dropped_bytes", json_integer(ex->dropped));
    json_object_set_new(doc, "reset", json_boolean(ex->reset));
    json_object_set_new(doc, "reset_reason", ex->reset_reason ? json_string(ex->reset_reason) : json_null());
    json_object_set_new(doc, "duration_ms", ex->duration_ms >= 0 ? json_integer(ex->duration_ms) : json_null());
    if (ex->files_written != NULL)
        json_object_set(doc, "files_written", ex->files_written);
    if (ex->network != NULL)
        json_object_set(doc, "network", ex->network);
    return doc;
}

static void copy_time(json_t *out, json_t *doc, const char *key)
{
    json_t *v = json_object_get(doc, key);
    if (json_is_integer(v) && json_integer_value(v) > 0)
        core_json_time(out, key, json_integer_value(v));
    else
        json_object_set_new(out, key, json_null());
}

json_t *execution_doc_status_api(json_t *doc)
{
    json_t *out = json_object();
    json_object_set(out, "request_id", json_object_get(doc, "request_id"));
    json_object_set(out, "session_id", json_object_get(doc, "session_id"));
    json_object_set(out, "status", json_object_get(doc, "status"));
    copy_time(out, doc, "created_at");
    copy_time(out, doc, "started_at");
    copy_time(out, doc, "completed_at");
    return out;
}

json_t *execution_doc_result_api(json_t *doc)
{
    json_t *out = execution_doc_status_api(doc);
    json_t *outputs = json_object_get(doc, "outputs");
    if (!json_is_array(outputs))
        outputs = NULL;
    rb_buf so, se;
    rb_buf_init(&so, SIZE_MAX / 2);
    rb_buf_init(&se, SIZE_MAX / 2);
    json_t *files = json_array(), *compat = json_array(), *result = json_null(), *error = json_null();
    size_t i;
    json_t *item;
    json_array_foreach(outputs, i, item)
    {
        const char *type = json_string_value(json_object_get(item, "type"));
        if (type == NULL)
            continue;
        if (strcmp(type, "stream") == 0) {
            const char *name = json_string_value(json_object_get(item, "name"));
            json_t *text = json_object_get(item, "text");
            rb_buf *b = (name && strcmp(name, "stderr") == 0) ? &se : &so;
            rb_buf_append(b, json_string_value(text), json_string_length(text));
            json_array_append_new(compat, json_pack("{s:s, s:O}", "type", "stream", "content", text));
        } else if (strcmp(type, "display") == 0) {
            /* every PNG shown (an item stored before bundles has only mime and data) */
            json_t *png = json_object_get(json_object_get(item, "bundle"), "image/png");
            if (png == NULL && json_is_string(json_object_get(item, "mime")) &&
                strcmp(json_string_value(json_object_get(item, "mime")), "image/png") == 0)
                png = json_object_get(item, "data");
            if (json_is_string(png))
                json_array_append(files, png);
        } else if (strcmp(type, "result") == 0) {
            json_t *png = json_object_get(json_object_get(item, "bundle"), "image/png");
            if (json_is_string(png))
                json_array_append(files, png);
            json_decref(result);
            result = json_incref(json_object_get(item, "text"));
            json_array_append_new(compat, json_pack("{s:s, s:O}", "type", "result", "content", result));
        } else if (strcmp(type, "page") == 0) {
            /* stdout shows the pager's text, as IPython in a terminal prints it (Jupyter: a payload) */
            json_t *text = json_object_get(json_object_get(item, "data"), "text/plain");
            rb_buf_append(&so, json_string_value(text), json_string_length(text));
            if (json_string_length(text) > 0)
                rb_buf_append(&so, "\n", 1);
        } else if (strcmp(type, "error") == 0) {
            json_decref(error);
            error = json_pack("{s:O?, s:O?, s:O?}", "ename", json_object_get(item, "ename"), "evalue",
                              json_object_get(item, "evalue"), "traceback", json_object_get(item, "traceback"));
        }
    }
    if (outputs != NULL)
        json_object_set(out, "outputs", outputs);
    else
        json_object_set_new(out, "outputs", json_array());
    json_object_set_new(out, "stdout", json_stringn(so.data ? so.data : "", so.len));
    json_object_set_new(out, "stderr", json_stringn(se.data ? se.data : "", se.len));
    rb_buf_dispose(&so);
    rb_buf_dispose(&se);
    json_object_set_new(out, "result", result ? result : json_null());
    /* An execution failed by the store at start-up ("server restarted") has its error in the
     * document rather than in its outputs. */
    json_t *stored = json_object_get(doc, "error");
    if (json_is_null(error) && json_is_object(stored)) {
        json_decref(error);
        error = json_incref(stored);
    }
    json_object_set_new(out, "error", error ? error : json_null());
    json_object_set_new(out, "files", files);
    json_t *v;
    v = json_object_get(doc, "duration_ms");
    json_object_set(out, "duration_ms", json_is_integer(v) ? v : json_null());
    v = json_object_get(doc, "truncated");
    json_object_set_new(out, "truncated", json_boolean(json_is_true(v)));
    v = json_object_get(doc, "dropped_bytes");
    json_object_set_new(out, "dropped_bytes", json_integer(json_is_integer(v) ? json_integer_value(v) : 0));
    v = json_object_get(doc, "reset");
    json_object_set_new(out, "reset", json_boolean(json_is_true(v)));
    v = json_object_get(doc, "reset_reason");
    json_object_set(out, "reset_reason", json_is_string(v) ? v : json_null());
    json_object_set_new(out, "output", compat);
    json_object_set_new(out, "files_written", files_written_api(json_object_get(doc, "files_written")));
    v = json_object_get(doc, "network");
    json_object_set(out, "network", json_is_object(v) ? v : json_null());
    return out;
}

json_t *execution_status_api(const execution *ex)
{
    json_t *doc = execution_to_doc(ex);
    json_t *out = execution_doc_status_api(doc);
    json_decref(doc);
    return out;
}

/* ---- output ------------------------------------------------------------------------- */

void execution_set_running(execution *ex)
{
    ex->status = "running";
    ex->started_at = rb_now_ms();
    json_t *st = json_pack("{s:s, s:s}", "request_id", ex->id, "status", "running");
    watches_emit(ex, "status", st);
    json_decref(st);
}

/* The most bytes any one result or error text may carry. The runner clips them to the cell's
 * output limit within [4 KiB, 4 MiB] in characters (PROTOCOL.md), which UTF-8 spells in at most
 * four bytes each, plus its marker: runboxd's bound is that, so an honest runner's text is
 * never clipped twice, while a forged one is still bounded. */
static size_t item_cap(const execution *ex)
{
    size_t chars = ex->core->cfg->output_limit;
    chars = chars < 4096 ? 4096 : chars > (4u << 20) ? (4u << 20) : chars;
    return 4 * chars + 4096;
}

/* The largest n' <= n such that s[0..n') ends on a UTF-8 character boundary (s[n] readable). */
static size_t utf8_floor(const char *s, size_t n)
{
    while (n > 0 && ((unsigned char)s[n] & 0xC0) == 0x80)
        n--;
    return n;
}

/* text (a JSON string) kept whole when within item_cap, else its head and tail around a marker
 * "[... N bytes of the <what> dropped ...]" (counted in ex->dropped). New reference. */
static json_t *clip_text(execution *ex, json_t *text, const char *what)
{
    const char *s = json_string_value(text);
    size_t n = json_string_length(text), cap = item_cap(ex);
    if (n <= cap)
        return json_incref(text);
    size_t head = utf8_floor(s, cap / 2), tail_from = n - cap / 2;
    while (tail_from < n && ((unsigned char)s[tail_from] & 0xC0) == 0x80)
        tail_from++;
    size_t gone = tail_from - head;
    char marker[96];
    int m = snprintf(marker, sizeof(marker), "\n[... %zu bytes of the %s dropped ...]\n", gone, what);
    rb_buf b;
    rb_buf_init(&b, SIZE_MAX / 2);
    rb_buf_append(&b, s, head);
    rb_buf_append(&b, marker, (size_t)m);
    rb_buf_append(&b, s + tail_from, n - tail_from);
    json_t *out = json_stringn(b.data, b.len);
    rb_buf_dispose(&b);
    ex->truncated = 1;
    ex->dropped += (int64_t)gone;
    return out != NULL ? out : json_string("");
}

static json_t *line_or_empty(json_t *line)
{
    return json_is_string(line) ? json_incref(line) : json_string("");
}

/* A traceback (a JSON array of strings; anything else gives []) of at most item_cap bytes and
 * EXECUTION_TRACEBACK_LINES_MAX lines: beyond that the first and last lines are kept around a
 * marker line. New reference. */
static json_t *clip_traceback(execution *ex, json_t *tb)
{
    json_t *out = json_array();
    if (!json_is_array(tb))
        return out;
    size_t n = json_array_size(tb), cap = item_cap(ex), total = 0;
    for (size_t i = 0; i < n; i++)
        total += json_string_length(json_array_get(tb, i));
    if (total <= cap && n <= EXECUTION_TRACEBACK_LINES_MAX) {
        for (size_t i = 0; i < n; i++)
            json_array_append_new(out, line_or_empty(json_array_get(tb, i)));
        return out;
    }
    /* Head lines up to half the budget, tail lines up to the other half. */
    size_t budget = cap / 2, lines = EXECUTION_TRACEBACK_LINES_MAX / 2, used = 0, head = 0, tail = 0;
    while (head < n && head < lines && used + json_string_length(json_array_get(tb, head)) <= budget)
        used += json_string_length(json_array_get(tb, head++));
    used = 0;
    while (tail < n - head && tail < lines && used + json_string_length(json_array_get(tb, n - 1 - tail)) <= budget)
        used += json_string_length(json_array_get(tb, n - 1 - (tail++)));
    size_t gone = 0;
    for (size_t i = head; i < n - tail; i++)
        gone += json_string_length(json_array_get(tb, i));
    for (size_t i = 0; i < head; i++)
        json_array_append_new(out, line_or_empty(json_array_get(tb, i)));
    json_array_append_new(out,
                          json_sprintf("[... %zu lines (%zu bytes) of the traceback dropped ...]\n", n - head - tail, gone));
    for (size_t i = n - tail; i < n; i++)
        json_array_append_new(out, line_or_empty(json_array_get(tb, i)));
    ex->truncated = 1;
    ex->dropped += (int64_t)gone;
    return out;
}

/* Appends stream text to the outputs, merging with the previous item when it is the same
 * stream, and applies runboxd's backstop cap (the runner caps first; this only guards
 * against a runner that does not). */
static void add_stream(execution *ex, json_t *event)
{
    const char *name = json_string_value(json_object_get(event, "name"));
    json_t *text = json_object_get(event, "text");
    if (name == NULL || !json_is_string(text) || (strcmp(name, "stdout") != 0 && strcmp(name, "stderr") != 0))
        return;
    size_t len = json_string_length(text);
    size_t limit = ex->core->cfg->output_limit * 2 + 65536;
    if (ex->stream_bytes + len > limit) {
        ex->truncated = 1;
        ex->dropped += (int64_t)len;
        return;
    }
    ex->stream_bytes += len;
    if (ex->tail_name == NULL || strcmp(ex->tail_name, name) != 0) {
        flush_tail(ex);
        ex->tail_name = strcmp(name, "stdout") == 0 ? "stdout" : "stderr";
    }
    rb_buf_append(&ex->tail, json_string_value(text), len);
    json_t *item = json_pack("{s:s, s:s, s:O}", "type", "stream", "name", name, "text", text);
    watches_emit(ex, "output", item);
    json_decref(item);
}

/* A runner bundle as kept (new reference): mime_bundle_read within the execution's display
 * budget, its text/plain clipped as a result's text is. */
static json_t *read_bundle(execution *ex, json_t *in)
{
    int64_t gone = 0;
    json_t *bundle = mime_bundle_read(in, item_cap(ex), &ex->display_bytes, RB_DISPLAY_BYTES_MAX, &gone);
    if (gone > 0) {
        ex->truncated = 1;
        ex->dropped += gone;
    }
    json_t *text = json_object_get(bundle, "text/plain");
    if (text != NULL)
        json_object_set_new(bundle, "text/plain", clip_text(ex, text, "output"));
    return bundle;
}

/* The output item of a display event (new reference), or NULL when it shows nothing or comes
 * past the execution's budgets: {type, mime, data, bundle, metadata, display_id?, update?}, with
 * mime and data its main format (mime_bundle_main: what a client that shows one thing shows).
 * A runner older than bundles sends {mime, data}: a bundle of that one format. */
static json_t *display_item(execution *ex, json_t *event)
{
    json_t *in = json_object_get(event, "bundle"), *legacy = NULL;
    const char *mime = json_string_value(json_object_get(event, "mime"));
    if (!json_is_object(in) && mime != NULL && json_is_string(json_object_get(event, "data")))
        in = legacy = json_pack("{s:O}", mime, json_object_get(event, "data"));
    if (ex->displays >= EXECUTION_DISPLAYS_MAX) {
        ex->truncated = 1;
        const char *k;
        json_t *v;
        json_object_foreach(in, k, v) ex->dropped += (int64_t)json_string_length(v);
        json_decref(legacy);
        return NULL;
    }
    json_t *bundle = read_bundle(ex, in);
    json_decref(legacy);
    const char *main_mime = mime_bundle_main(bundle);
    if (main_mime == NULL) {
        json_decref(bundle);
        return NULL;
    }
    ex->displays++;
    json_t *item = json_pack("{s:s, s:s, s:O, s:o, s:o}", "type", "display", "mime", main_mime, "data",
                             json_object_get(bundle, main_mime), "bundle", bundle, "metadata",
                             mime_bundle_metadata(json_object_get(event, "metadata")));
    const char *id = json_string_value(json_object_get(event, "display_id"));
    if (id != NULL && id[0] != '\0' && strlen(id) <= MIME_BUNDLE_DISPLAY_ID_MAX) {
        json_object_set_new(item, "display_id", json_string(id));
        if (json_is_true(json_object_get(event, "update")))
            json_object_set_new(item, "update", json_true());
    }
    return item;
}

void execution_add_event(execution *ex, json_t *event)
{
    const char *type = json_string_value(json_object_get(event, "type"));
    if (type == NULL)
        return;
    json_t *item = NULL;
    if (strcmp(type, "stream") == 0) {
        add_stream(ex, event);
        return;
    } else if (strcmp(type, "display") == 0) {
        item = display_item(ex, event);
        if (item == NULL)
            return;
    } else if (strcmp(type, "clear_output") == 0) {
        if (ex->displays >= EXECUTION_DISPLAYS_MAX)
            return;
        ex->displays++;
        item = json_pack("{s:s, s:b}", "type", "clear_output", "wait", json_is_true(json_object_get(event, "wait")));
    } else if (strcmp(type, "result") == 0) {
        json_t *text = json_object_get(event, "text");
        if (!json_is_string(text))
            return;
        /* A cell has one result; the runner's worker is user code, so more are a flood. */
        if (ex->results > 0) {
            ex->truncated = 1;
            ex->dropped += (int64_t)json_string_length(text);
            return;
        }
        ex->results++;
        item = json_pack("{s:s, s:o}", "type", "result", "text", clip_text(ex, text, "result"));
        json_t *str = json_object_get(event, "str"); /* a str value itself, whole (E2B shows it) */
        if (json_is_string(str) && json_string_length(str) <= item_cap(ex))
            json_object_set(item, "str", str);
        json_t *in = json_object_get(event, "bundle");
        if (json_is_object(in)) { /* its other formats; its text/plain is the text */
            json_t *others = json_copy(in);
            json_object_del(others, "text/plain");
            json_t *bundle = read_bundle(ex, others);
            json_decref(others);
            if (json_object_size(bundle) > 0) {
                json_t *full = json_pack("{s:O}", "text/plain", json_object_get(item, "text"));
                json_object_update(full, bundle);
                json_decref(bundle);
                json_object_set_new(item, "bundle", full);
                json_object_set_new(item, "metadata", mime_bundle_metadata(json_object_get(event, "metadata")));
            } else {
                json_decref(bundle);
            }
        }
    } else if (strcmp(type, "error") == 0) {
        json_t *tb = json_object_get(event, "traceback");
        json_t *ename = json_object_get(event, "ename"), *evalue = json_object_get(event, "evalue");
        /* The runner's error and one of runboxd's own (a timeout, a reset) at most. */
        if (ex->errors >= EXECUTION_ERRORS_MAX) {
            ex->truncated = 1;
            ex->dropped += (int64_t)(json_string_length(evalue) + json_string_length(ename));
            return;
        }
        ex->errors++;
        item = json_pack("{s:s, s:o, s:o, s:o}", "type", "error", "ename",
                         json_is_string(ename) ? clip_text(ex, ename, "name") : json_string("Error"), "evalue",
                         json_is_string(evalue) ? clip_text(ex, evalue, "message") : json_string(""), "traceback",
                         clip_traceback(ex, tb));
        json_decref(ex->error);
        ex->error = json_incref(item);
    } else if (strcmp(type, "page") == 0) {
        /* IPython's pager (`obj?`): one per execution, the last (ipykernel's payload keeps one) */
        json_t *data = json_object_get(event, "data"), *start = json_object_get(event, "start");
        if (!json_is_object(data) || !json_is_string(json_object_get(data, "text/plain")))
            return;
        json_t *page = json_object();
        const char *mime;
        json_t *v;
        json_object_foreach(data, mime, v)
        {
            if ((strcmp(mime, "text/plain") == 0 || strcmp(mime, "text/html") == 0) && json_is_string(v))
                json_object_set_new(page, mime, clip_text(ex, v, "page"));
        }
        json_int_t line = json_is_integer(start) ? json_integer_value(start) : 0;
        item = json_pack("{s:s, s:o, s:I}", "type", "page", "data", page, "start",
                         line > 0 && line < 2147483647 ? line : (json_int_t)0);
        size_t i;
        json_t *old;
        json_array_foreach(ex->outputs, i, old)
        {
            if (json_equal(json_object_get(old, "type"), json_object_get(item, "type"))) {
                json_array_remove(ex->outputs, i);
                break;
            }
        }
    } else {
        return;
    }
    flush_tail(ex);
    json_array_append(ex->outputs, item);
    watches_emit(ex, "output", item);
    json_decref(item);
}

void execution_fail(execution *ex, const char *status, const char *ename, const char *evalue, int reset,
                    const char *reset_reason)
{
    json_t *ev = json_pack("{s:s, s:s, s:s, s:[]}", "type", "error", "ename", ename, "evalue", evalue, "traceback");
    execution_add_event(ex, ev);
    json_decref(ev);
    execution_finish(ex, status, reset_reason, reset);
}

void execution_finish(execution *ex, const char *status, const char *reset_reason, int reset)
{
    rb_core *c = ex->core;
    session *s = ex->s;
    char err[RB_ERR_LEN];

    ex->status = status;
    ex->completed_at = rb_now_ms();
    ex->duration_ms = ex->started_at > 0 ? ex->completed_at - ex->started_at : 0;
    if (reset) {
        ex->reset = 1;
        free(ex->reset_reason);
        ex->reset_reason = reset_reason ? xstrdup(reset_reason) : NULL;
    }
    if (ex->dropped > 0)
        ex->truncated = 1;
    if (s != NULL) {
        if (s->running == ex)
            s->running = NULL;
        s->last_used_at = ex->completed_at;
        volumes_touched(c, json_object_get(s->options, "mounts"), NULL); /* what the code wrote, measured */
        if (s->egress_net != NULL && ex->network == NULL) /* what its egress proxy saw meanwhile */
            ex->network = egress_take_report(c, s->id);
        if (strcmp(s->status, "busy") == 0)
            s->status = "ready";
    }

    json_t *doc = execution_to_doc(ex);
    /* Without a transaction the row is still written, on its own. */
    int in_tx = store_begin(c->st, err) == RB_OK;
    if (!in_tx)
        rb_warn("execution %s: cannot open a transaction (%s); saving without one", ex->id, err);
    if (store_execution_put(c->st, doc, err) != RB_OK)
        rb_error("execution %s: cannot save its result: %s", ex->id, err);
    json_t *detail = audit_execution_detail(doc);
    if (ex->actor != NULL) /* run by another key than the session's (an admin): both are named */
        json_object_set_new(detail, "session_owner", json_string(ex->owner));
    audit_record(c, ex->actor != NULL ? ex->actor : ex->owner, ex->session_id, "execution", detail);
    /* The session row (last_used_at, executions) is written by the next sweep, batched with
     * other sessions': losing a second of it in a crash costs nothing, and the execute path
     * writes one row instead of two. */
    if (s != NULL && strcmp(s->status, "ended") != 0)
        s->dirty = 1;
    if (in_tx && store_commit(c->st, err) != RB_OK)
        rb_error("execution %s: cannot commit its result: %s", ex->id, err);

    json_t *result = execution_doc_result_api(doc);
    json_decref(doc);
    watches_emit(ex, "done", result);
    json_decref(result);
    for (core_watch *w = ex->watches; w != NULL; w = w->next_in_ex)
        w->ex = NULL;
    ex->watches = NULL;
    map_del(&c->executions, ex->id);
    stats_execution_finished(c, ex);
    rb_debug("execution %s finished: %s", ex->id, status);
    execution_free(ex);
    if (s != NULL)
        session_pump(s);
}

/* ---- watches ------------------------------------------------------------------------ */

static void watch_free(core_watch *w)
{
    json_decref(w->pending);
    free(w);
}

static void unlink_from_execution(core_watch *w)
{
    if (w->ex == NULL)
        return;
    for (core_watch **pp = &w->ex->watches; *pp != NULL; pp = &(*pp)->next_in_ex) {
        if (*pp == w) {
            *pp = w->next_in_ex;
            break;
        }
    }
    w->ex = NULL;
}

static void unlink_pending(rb_core *c, core_watch *w)
{
    core_watch *prev = NULL;
    for (core_watch *p = c->pending_head; p != NULL; prev = p, p = p->next_pending) {
        if (p == w) {
            if (prev)
                prev->next_pending = p->next_pending;
            else
                c->pending_head = p->next_pending;
            if (c->pending_tail == p)
                c->pending_tail = prev;
            break;
        }
    }
    w->queued = 0;
}

void watch_emit(core_watch *w, const char *event, json_t *payload)
{
    if (w->stopped)
        return;
    json_array_append_new(w->pending, json_pack("[s, O]", event, payload));
    if (!w->queued) {
        w->queued = 1;
        w->next_pending = NULL;
        if (w->core->pending_tail)
            w->core->pending_tail->next_pending = w;
        else
            w->core->pending_head = w;
        w->core->pending_tail = w;
    }
    watch_dispatch_schedule(w->core);
}

void watches_emit(execution *ex, const char *event, json_t *payload)
{
    for (core_watch *w = ex->watches; w != NULL; w = w->next_in_ex)
        watch_emit(w, event, payload);
}

/* Delivers queued events to their watchers. Runs from a zero-delay timer so that no event is
 * ever delivered from inside a core call. */
static void dispatch_cb(uv_timer_t *t)
{
    rb_core *c = t->data;
    while (c->pending_head != NULL) {
        core_watch *w = c->pending_head;
        unlink_pending(c, w);
        json_t *events = w->pending;
        w->pending = json_array();
        int done = 0;
        size_t i;
        json_t *e;
        w->in_dispatch = 1;
        json_array_foreach(events, i, e)
        {
            if (w->stopped)
                break;
            const char *name = json_string_value(json_array_get(e, 0));
            done = strcmp(name, "done") == 0;
            w->cb(w->data, name, json_array_get(e, 1));
            if (done)
                break;
        }
        w->in_dispatch = 0;
        json_decref(events);
        if (done || w->stopped) {
            unlink_from_execution(w);
            if (w->queued)
                unlink_pending(c, w);
            watch_free(w);
        }
    }
}

void watch_dispatch_schedule(rb_core *c)
{
    if (c->dispatch_timer == NULL || c->closing)
        return;
    if (!uv_is_active((uv_handle_t *)c->dispatch_timer)) {
        c->dispatch_timer->data = c;
        uv_timer_start(c->dispatch_timer, dispatch_cb, 0, 0);
    }
}

rb_err core_watch_start(rb_core *c, const core_caller *who, const char *request_id, int replay, core_event_cb cb,
                        void *data, core_watch **out, char *err)
{
    execution *ex = core__execution_of(c, who, request_id);
    json_t *doc = NULL;
    if (ex == NULL) {
        rb_err e = store_execution_get(c->st, request_id, &doc, err);
        if (e == RB_OK && !core__doc_visible(who, doc)) {
            json_decref(doc);
            doc = NULL;
            e = RB_ENOTFOUND;
        }
        if (e == RB_ENOTFOUND)
            return rb_fail(RB_ENOTFOUND, err, "no execution with request_id '%s'; use the request_id returned by POST /execute",
                           request_id);
        if (e != RB_OK)
            return e;
    }
    core_watch *w = xcalloc(1, sizeof(*w));
    w->core = c;
    w->cb = cb;
    w->data = data;
    w->pending = json_array();
    if (ex != NULL) {
        if (replay) {
            json_t *st = json_pack("{s:s, s:s}", "request_id", ex->id, "status", ex->status);
            watch_emit(w, "status", st);
            json_decref(st);
            size_t i;
            json_t *item;
            json_t *outs = execution_outputs(ex);
            json_array_foreach(outs, i, item) watch_emit(w, "output", item);
            json_decref(outs);
        }
        w->ex = ex;
        w->next_in_ex = ex->watches;
        ex->watches = w;
    } else {
        json_t *result = execution_doc_result_api(doc);
        if (replay) {
            json_t *st = json_pack("{s:O, s:O}", "request_id", json_object_get(result, "request_id"), "status",
                                   json_object_get(result, "status"));
            watch_emit(w, "status", st);
            json_decref(st);
            size_t i;
            json_t *item;
            json_array_foreach(json_object_get(result, "outputs"), i, item) watch_emit(w, "output", item);
        }
        watch_emit(w, "done", result);
        json_decref(result);
        json_decref(doc);
    }
    watch_dispatch_schedule(c);
    if (out != NULL)
        *out = w;
    return RB_OK;
}

void core_watch_stop(core_watch *w)
{
    if (w == NULL)
        return;
    w->stopped = 1;
    if (w->in_dispatch)
        return; /* dispatch_cb frees it once the callback returns */
    unlink_from_execution(w);
    if (w->queued)
        unlink_pending(w->core, w);
    watch_free(w);
}

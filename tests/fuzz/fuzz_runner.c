/*
 * fuzz_runner.c: libFuzzer target for what runboxd reads from a sandbox's runner: the input is
 * the bytes of the runner's stdout (docker/runner/PROTOCOL.md), which user code can forge.
 * Checks:
 *   - runner_lines_next (core/runner_frames.c), fed the input whole under the real maximum
 *     (RB_RUNNER_LINE_MAX), and in pieces of 7 bytes and of 1 byte under a 64-byte maximum,
 *     gives exactly the lines and over-long lines of a plain reference splitter, whatever the
 *     pieces; every dropped count is above the maximum and at most its line's length;
 *   - runner_event_parse reads each whole line into an event whose typed fields agree with its
 *     JSON (done: one of the four statuses, 0 <= dropped <= RUNNER_DROPPED_MAX), or refuses it
 *     with a reason;
 *   - the events go, as sandbox_runner.c hands them over (ids are not matched), to an execution
 *     (core/execution.c) with a small output limit: output events through execution_add_event,
 *     and a done event's files_written through files_written_from_runner (core/files/files.c: at most
 *     100 entries of {path, size, modified}, well typed) and dropped into the execution, which
 *     then ends (a new one takes the next events). Each execution keeps at most one result and
 *     EXECUTION_ERRORS_MAX errors, texts within their cap, streams within their backstop and
 *     coalesced; its stored document and API result document encode as JSON, with every time
 *     of a written file in RFC 3339 form.
 * Built only with clang and -DRUNBOX_FUZZ=ON. The seed corpus (tests/fuzz/corpus/runner/) is
 * replayed through these same checks by tests/core/test_runner_frames.c, which includes this file.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/tar.h"
#include "core/internal.h"
#include "core/mime_bundle.h"
#include "core/runner_frames.h"
#include "tests/fuzz/fuzz_check.h"

#define SMALL_MAX 64
/* The execution's output limit: small, so that short inputs reach the caps. */
#define OUTPUT_LIMIT 1024
/* item_cap of execution.c for OUTPUT_LIMIT: 4 bytes per character of the clamped limit ([4 KiB,
 * 4 MiB]) plus 4 KiB for the runner's marker, and room for runboxd's own marker */
#define ITEM_CAP (4 * 4096 + 4096)
#define MARKER_MAX 96

/* One line of the input as the reference splitter sees it. */
typedef struct ref_line {
    int toolong;
    size_t off, len;
} ref_line;

/* The lines of in[0..n) under max: every '\n'-terminated line, and the over-long ones, the
 * unterminated rest included. out has room for n + 1 pieces. */
static size_t reference_lines(const char *in, size_t n, size_t max, ref_line *out)
{
    size_t k = 0, start = 0;
    for (size_t i = 0; i <= n; i++) {
        if (i < n && in[i] != '\n')
            continue;
        size_t len = i - start;
        if (len > max)
            out[k++] = (ref_line){1, start, len};
        else if (i < n)
            out[k++] = (ref_line){0, start, len};
        start = i + 1;
    }
    return k;
}

typedef void (*line_cb)(void *data, const char *line, size_t len);

/* Feeds in[0..n) to runner_lines_next in pieces of step bytes under max, checking what comes
 * out against the reference; cb (may be NULL) gets every whole line. */
static void check_lines(const char *in, size_t n, size_t max, size_t step, line_cb cb, void *data)
{
    ref_line *ref = malloc((n + 1) * sizeof(*ref));
    size_t nref = reference_lines(in, n, max, ref), k = 0;
    runner_lines rl;
    runner_lines_init(&rl, max);
    for (size_t off = 0; off < n; off += step) {
        const char *buf = in + off;
        size_t len = n - off < step ? n - off : step;
        for (;;) {
            rb_buf line;
            size_t dropped = 0;
            const char *before = buf;
            runner_lines_status st = runner_lines_next(&rl, &buf, &len, &line, &dropped);
            FUZZ_CHECK(buf >= before && buf + len == in + off + (n - off < step ? n - off : step));
            if (st == RUNNER_LINES_MORE) {
                FUZZ_CHECK(len == 0);
                break;
            }
            FUZZ_CHECK(k < nref);
            if (st == RUNNER_LINES_TOOLONG) {
                FUZZ_CHECK(ref[k].toolong);
                FUZZ_CHECK(dropped > max && dropped <= ref[k].len);
            } else {
                FUZZ_CHECK(st == RUNNER_LINES_LINE);
                FUZZ_CHECK(!ref[k].toolong && line.len == ref[k].len);
                FUZZ_CHECK(line.len == 0 || (memcmp(line.data, in + ref[k].off, line.len) == 0 &&
                                             line.data[line.len] == '\0'));
                if (cb != NULL)
                    cb(data, line.data != NULL ? line.data : "", line.len);
                rb_buf_dispose(&line);
            }
            k++;
        }
    }
    FUZZ_CHECK(k == nref);
    FUZZ_CHECK(rl.line.len <= max);
    runner_lines_dispose(&rl);
    free(ref);
}

/* ---- events into an execution --------------------------------------------------------- */

typedef struct run {
    rb_core core;
    core_settings cfg;
    session s;
    execution *ex;
} run;

static void check_text(json_t *text)
{
    FUZZ_CHECK(json_is_string(text));
    FUZZ_CHECK(json_string_length(text) <= ITEM_CAP + MARKER_MAX);
}

/* A display's or result's bundle (core/mime_bundle.c): well-formed mime names with string
 * values, at most MIME_BUNDLE_FORMATS_MAX (a display always has one: its main format, whose
 * value is its data), text formats but text/plain within the cap, metadata an object; and the
 * bundle Jupyter and E2B send (core_output_bundle) has the same formats. */
static void check_bundle(json_t *item, int display)
{
    json_t *bundle = json_object_get(item, "bundle");
    if (bundle == NULL) {
        FUZZ_CHECK(!display && json_object_get(item, "metadata") == NULL);
        return;
    }
    FUZZ_CHECK(json_is_object(bundle) && json_object_size(bundle) <= MIME_BUNDLE_FORMATS_MAX + !display);
    FUZZ_CHECK(json_is_object(json_object_get(item, "metadata")));
    const char *mime;
    json_t *value;
    json_object_foreach(bundle, mime, value)
    {
        FUZZ_CHECK(mime_bundle_name_ok(mime) && json_is_string(value));
        FUZZ_CHECK(mime_bundle_is_binary(mime) || json_string_length(value) <= ITEM_CAP + MARKER_MAX);
    }
    if (display) {
        const char *main_mime = json_string_value(json_object_get(item, "mime"));
        FUZZ_CHECK(json_object_get(bundle, main_mime) == json_object_get(item, "data"));
        const char *id = json_string_value(json_object_get(item, "display_id"));
        FUZZ_CHECK(id == NULL || strlen(id) <= MIME_BUNDLE_DISPLAY_ID_MAX);
    }
    json_t *sent = core_output_bundle(item);
    FUZZ_CHECK(json_object_size(sent) == json_object_size(bundle));
    json_decref(sent);
}

/* A time of the API: RFC 3339 in UTC with milliseconds, "YYYY-MM-DDTHH:MM:SS.mmmZ". */
static void check_time_text(json_t *t)
{
    static const char shape[] = "0000-00-00T00:00:00.000Z";
    const char *s = json_string_value(t);
    FUZZ_CHECK(s != NULL && strlen(s) == sizeof(shape) - 1);
    for (size_t i = 0; i < sizeof(shape) - 1; i++)
        FUZZ_CHECK(shape[i] == '0' ? s[i] >= '0' && s[i] <= '9' : s[i] == shape[i]);
}

/* The execution's invariants and documents; then it ends (is freed). */
static void check_execution(execution *ex)
{
    FUZZ_CHECK(ex->results <= 1 && ex->errors <= EXECUTION_ERRORS_MAX && ex->dropped >= 0);
    FUZZ_CHECK(ex->stream_bytes <= (size_t)OUTPUT_LIMIT * 2 + 65536);
    FUZZ_CHECK(ex->display_bytes <= RB_DISPLAY_BYTES_MAX && ex->displays <= EXECUTION_DISPLAYS_MAX);
    json_t *outs = execution_outputs(ex);
    const char *prev_stream = NULL;
    size_t i;
    json_t *item;
    json_array_foreach(outs, i, item)
    {
        const char *type = json_string_value(json_object_get(item, "type"));
        FUZZ_CHECK(type != NULL);
        const char *name = NULL;
        if (strcmp(type, "stream") == 0) {
            name = json_string_value(json_object_get(item, "name"));
            FUZZ_CHECK(name != NULL && (strcmp(name, "stdout") == 0 || strcmp(name, "stderr") == 0));
            FUZZ_CHECK(prev_stream == NULL || strcmp(prev_stream, name) != 0); /* coalesced */
            FUZZ_CHECK(json_is_string(json_object_get(item, "text")));
        } else if (strcmp(type, "display") == 0) {
            FUZZ_CHECK(json_is_string(json_object_get(item, "mime")) && json_is_string(json_object_get(item, "data")));
            check_bundle(item, 1);
        } else if (strcmp(type, "result") == 0) {
            check_text(json_object_get(item, "text"));
            check_bundle(item, 0);
        } else if (strcmp(type, "clear_output") == 0) {
            FUZZ_CHECK(json_is_boolean(json_object_get(item, "wait")));
        } else {
            FUZZ_CHECK(strcmp(type, "error") == 0);
            check_text(json_object_get(item, "ename"));
            check_text(json_object_get(item, "evalue"));
            json_t *tb = json_object_get(item, "traceback"), *line;
            size_t j;
            FUZZ_CHECK(json_is_array(tb) && json_array_size(tb) <= EXECUTION_TRACEBACK_LINES_MAX + 1);
            json_array_foreach(tb, j, line) FUZZ_CHECK(json_is_string(line));
        }
        prev_stream = name;
    }
    json_decref(outs);
    json_t *doc = execution_to_doc(ex);
    json_t *api = execution_doc_result_api(doc);
    FUZZ_CHECK(json_array_size(json_object_get(api, "files_written")) == json_array_size(ex->files_written));
    json_array_foreach(json_object_get(api, "files_written"), i, item) check_time_text(json_object_get(item, "modified"));
    char *text = json_dumps(api, JSON_COMPACT);
    FUZZ_CHECK(text != NULL);
    free(text);
    json_decref(api);
    json_decref(doc);
    execution_free(ex);
}

static void check_files_written(json_t *fw)
{
    FUZZ_CHECK(json_is_array(fw) && json_array_size(fw) <= 100);
    size_t i;
    json_t *f;
    json_array_foreach(fw, i, f)
    {
        json_t *path = json_object_get(f, "path");
        FUZZ_CHECK(json_object_size(f) == 3 && json_is_string(path));
        FUZZ_CHECK(json_string_length(path) > 0 && json_string_length(path) <= TAR_NAME_MAX);
        FUZZ_CHECK(json_is_integer(json_object_get(f, "size")) && json_is_integer(json_object_get(f, "modified")));
    }
}

static void check_event(const runner_event *ev)
{
    json_t *j = ev->json;
    FUZZ_CHECK(json_is_object(j));
    FUZZ_CHECK(ev->type_name == json_string_value(json_object_get(j, "type")));
    FUZZ_CHECK(ev->id == json_string_value(json_object_get(j, "id")));
    static const char *const names[] = {NULL, "pong", "ready", "error_reply", "done", "warm"};
    if (ev->type != RUNNER_EV_OUTPUT) {
        FUZZ_CHECK((size_t)ev->type < sizeof(names) / sizeof(names[0]));
        FUZZ_CHECK(names[ev->type] == NULL ? ev->type_name == NULL
                                           : ev->type_name != NULL && strcmp(ev->type_name, names[ev->type]) == 0);
    } else {
        FUZZ_CHECK(ev->type_name != NULL);
        for (size_t i = 1; i < sizeof(names) / sizeof(names[0]); i++)
            FUZZ_CHECK(strcmp(ev->type_name, names[i]) != 0);
    }
    FUZZ_CHECK(ev->warming == (ev->type == RUNNER_EV_PONG && json_is_true(json_object_get(j, "warming"))));
    if (ev->type == RUNNER_EV_DONE) {
        FUZZ_CHECK(strcmp(ev->status, "completed") == 0 || strcmp(ev->status, "error") == 0 ||
                   strcmp(ev->status, "timeout") == 0 || strcmp(ev->status, "cancelled") == 0);
        FUZZ_CHECK(ev->dropped >= 0 && ev->dropped <= RUNNER_DROPPED_MAX);
        FUZZ_CHECK(ev->reset == json_is_true(json_object_get(j, "reset")));
        FUZZ_CHECK(ev->files_written == json_object_get(j, "files_written"));
    } else {
        FUZZ_CHECK(ev->status == NULL && ev->dropped == 0 && ev->files_written == NULL);
    }
}

static void on_line(void *data, const char *line, size_t len)
{
    run *r = data;
    runner_event ev;
    char err[RB_ERR_LEN];
    err[0] = '\0';
    if (runner_event_parse(line, len, &ev, err) != RB_OK) {
        FUZZ_CHECK(ev.json == NULL && err[0] != '\0' && memchr(err, '\0', sizeof(err)) != NULL);
        return;
    }
    check_event(&ev);
    if (ev.type == RUNNER_EV_DONE) {
        json_t *fw = files_written_from_runner(ev.files_written);
        check_files_written(fw);
        /* as sandbox_runner.c does before execution_finish */
        r->ex->dropped += ev.dropped;
        json_decref(r->ex->files_written);
        r->ex->files_written = fw;
        check_execution(r->ex);
        r->ex = execution_new(&r->core, &r->s, "print(1)", 5.0);
    } else if (ev.type == RUNNER_EV_OUTPUT) {
        execution_add_event(r->ex, ev.json);
    }
    runner_event_dispose(&ev);
}

int LLVMFuzzerTestOneInput(const uint8_t *in, size_t n);

int LLVMFuzzerTestOneInput(const uint8_t *in, size_t n)
{
    /* a private copy of exactly n bytes, so reads past the end are caught exactly */
    char *copy = malloc(n > 0 ? n : 1);
    if (n > 0)
        memcpy(copy, in, n);

    run *r = calloc(1, sizeof(*r));
    r->cfg.output_limit = OUTPUT_LIMIT;
    r->core.cfg = &r->cfg;
    snprintf(r->s.id, sizeof(r->s.id), "s_fuzz");
    r->ex = execution_new(&r->core, &r->s, "print(1)", 5.0);
    check_lines(copy, n, RB_RUNNER_LINE_MAX, n > 0 ? n : 1, on_line, r);
    check_execution(r->ex);
    free(r);

    check_lines(copy, n, SMALL_MAX, 7, NULL, NULL);
    check_lines(copy, n, SMALL_MAX, 1, NULL, NULL);
    free(copy);
    return 0;
}

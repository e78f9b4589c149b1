/*
 * runner_frames.c: see runner_frames.h.
 */
#include "core/runner_frames.h"

#include <string.h>

/* ---- lines ---------------------------------------------------------------------------- */

void runner_lines_init(runner_lines *rl, size_t max)
{
    rb_buf_init(&rl->line, max);
    rl->skipping = 0;
}

void runner_lines_dispose(runner_lines *rl)
{
    rb_buf_dispose(&rl->line);
    rl->skipping = 0;
}

runner_lines_status runner_lines_next(runner_lines *rl, const char **buf, size_t *len, rb_buf *line,
                                      size_t *dropped)
{
    while (*len > 0) {
        const char *p = *buf;
        const char *nl = memchr(p, '\n', *len);
        size_t take = nl != NULL ? (size_t)(nl - p) : *len;
        *buf = p + take + (nl != NULL);
        *len -= take + (nl != NULL);
        if (rl->skipping) {
            if (nl != NULL)
                rl->skipping = 0;
            continue;
        }
        if (rb_buf_append(&rl->line, p, take) != RB_OK) {
            *dropped = rl->line.len + take;
            rb_buf_reset(&rl->line);
            rl->skipping = nl == NULL;
            return RUNNER_LINES_TOOLONG;
        }
        if (nl != NULL) {
            *line = rl->line;
            rb_buf_init(&rl->line, line->max);
            return RUNNER_LINES_LINE;
        }
    }
    return RUNNER_LINES_MORE;
}

/* ---- events --------------------------------------------------------------------------- */

static const char *done_status(const char *s)
{
    static const char *const ok[] = {"completed", "error", "timeout", "cancelled"};
    for (size_t i = 0; s && i < sizeof(ok) / sizeof(ok[0]); i++)
        if (strcmp(s, ok[i]) == 0)
            return ok[i];
    return "error";
}

static const char *string_of(json_t *obj, const char *key)
{
    return json_string_value(json_object_get(obj, key));
}

rb_err runner_event_parse(const char *p, size_t n, runner_event *ev, char *err)
{
    memset(ev, 0, sizeof(*ev));
    json_error_t jerr;
    json_t *json = json_loadb(p, n, JSON_REJECT_DUPLICATES, &jerr);
    if (json == NULL)
        return rb_fail(RB_EINVAL, err, "%s", jerr.text);
    if (!json_is_object(json)) {
        json_decref(json);
        return rb_fail(RB_EINVAL, err, "not a JSON object");
    }
    ev->json = json;
    ev->type_name = string_of(json, "type");
    ev->id = string_of(json, "id");
    const char *t = ev->type_name;
    if (t == NULL) {
        ev->type = RUNNER_EV_NONE;
    } else if (strcmp(t, "pong") == 0) {
        ev->type = RUNNER_EV_PONG;
        ev->busy = string_of(json, "busy");
        ev->warming = json_is_true(json_object_get(json, "warming"));
    } else if (strcmp(t, "ready") == 0) {
        ev->type = RUNNER_EV_READY;
    } else if (strcmp(t, "warm") == 0) {
        ev->type = RUNNER_EV_WARM;
    } else if (strcmp(t, "error_reply") == 0) {
        ev->type = RUNNER_EV_ERROR_REPLY;
        ev->message = string_of(json, "message");
    } else if (strcmp(t, "done") == 0) {
        ev->type = RUNNER_EV_DONE;
        ev->status = done_status(string_of(json, "status"));
        json_t *dropped = json_object_get(json, "dropped");
        if (json_is_integer(dropped) && json_integer_value(dropped) > 0)
            ev->dropped = json_integer_value(dropped) < RUNNER_DROPPED_MAX ? json_integer_value(dropped)
                                                                            : RUNNER_DROPPED_MAX;
        ev->reset = json_is_true(json_object_get(json, "reset"));
        ev->reset_reason = string_of(json, "reset_reason");
        ev->files_written = json_object_get(json, "files_written");
    } else {
        ev->type = RUNNER_EV_OUTPUT;
    }
    return RB_OK;
}

void runner_event_dispose(runner_event *ev)
{
    json_decref(ev->json);
    memset(ev, 0, sizeof(*ev));
}

/*
 * runner_frames: the pure half of what runboxd reads from a sandbox's runner
 * (docker/runner/PROTOCOL.md): cutting the bytes of its stdout into lines under a hard maximum,
 * and reading one line into a typed event. It keeps no sandbox state and does no I/O, logging
 * or timing: sandbox_runner.c rate-limits the bytes, decides what an event means for the sandbox in
 * its state (handshake, the running execution) and logs what is dropped; execution.c checks
 * the shapes of output events. Every byte is untrusted: user code can reach the runner's
 * channel. Fuzzed by tests/fuzz/fuzz_runner.c.
 */
#ifndef RB_CORE_RUNNER_FRAMES_H
#define RB_CORE_RUNNER_FRAMES_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "base/err.h"
#include "base/mem.h"

/* The largest "dropped" count a done event is read with: far more than any sandbox can write,
 * and small enough that adding it to an execution's own count (bytes it really dropped) cannot
 * overflow an int64_t. */
#define RUNNER_DROPPED_MAX ((int64_t)1 << 62)

/* ---- lines ---------------------------------------------------------------------------- */

/** Line assembly state of one stdout stream (caller-allocated: runner_lines_init/dispose). */
typedef struct runner_lines {
    rb_buf line;  /* the partial line */
    int skipping; /* dropping the rest of an over-long line */
} runner_lines;

typedef enum runner_lines_status {
    RUNNER_LINES_MORE,    /* the input is used up; a partial line is kept for the next bytes */
    RUNNER_LINES_LINE,    /* *line holds one whole line, without its '\n' */
    RUNNER_LINES_TOOLONG, /* a line went past the maximum: *dropped of its bytes were thrown away, and
                             the rest of it, up to its '\n', will be skipped without being counted */
} runner_lines_status;

/** Empty state for lines of at most max bytes (without the '\n'). Allocates nothing. */
void runner_lines_init(runner_lines *rl, size_t max);
/** Frees the partial line. */
void runner_lines_dispose(runner_lines *rl);

/**
 * Reads from the bytes (*buf, *len) until a line is complete, a line goes past the maximum or
 * the bytes run out, and advances *buf and *len past what it used (the '\n' included). Call it
 * again with the same (*buf, *len) until it returns RUNNER_LINES_MORE; lines split across calls
 * are joined. On RUNNER_LINES_LINE, *line receives the line (ownership passes to the caller,
 * who rb_buf_dispose()s it; data is NULL for an empty line, else NUL-terminated after len
 * bytes). On RUNNER_LINES_TOOLONG, *dropped is the number of the line's bytes thrown away (more
 * than the maximum). How the bytes are split into calls changes only that count.
 */
runner_lines_status runner_lines_next(runner_lines *rl, const char **buf, size_t *len, rb_buf *line,
                                      size_t *dropped);

/* ---- events --------------------------------------------------------------------------- */

typedef enum runner_event_type {
    RUNNER_EV_NONE,        /* no string "type": ignored */
    RUNNER_EV_PONG,        /* the answer to a ping: id, busy, warming */
    RUNNER_EV_READY,       /* the runner started (ignored: the handshake is ping/pong) */
    RUNNER_EV_ERROR_REPLY, /* the runner did not understand a request: message */
    RUNNER_EV_DONE,        /* the end of a cell: id, status, dropped, reset, reset_reason, files_written */
    RUNNER_EV_WARM,        /* the first interpreter is up, with the preload (after a pong with warming) */
    RUNNER_EV_OUTPUT,      /* any other type (stream, display, result, error, unknown ones): the running
                              execution's business, see execution_add_event */
} runner_event_type;

/** One event read from a runner line. Every pointer is borrowed from json and lives as long as
 * the event (runner_event_dispose). Fields that do not apply to the type are NULL or 0. */
typedef struct runner_event {
    json_t *json;             /* the whole object, owned */
    runner_event_type type;
    const char *type_name;    /* "type" when a string, else NULL */
    const char *id;           /* "id" when a string, else NULL */
    const char *busy;         /* pong: "busy" when a string (a cell still running), else NULL */
    int warming;              /* pong: "warming" is true (the first interpreter is still importing the preload) */
    const char *message;      /* error_reply: "message" when a string, else NULL */
    const char *status;       /* done: "completed", "error", "timeout" or "cancelled" (anything else is
                                 read as "error"); a static string */
    int64_t dropped;          /* done: "dropped" when a positive integer, at most RUNNER_DROPPED_MAX; else 0 */
    int reset;                /* done: "reset" is true */
    const char *reset_reason; /* done: "reset_reason" when a string, else NULL */
    json_t *files_written;    /* done: "files_written" as sent (any JSON type, or NULL): see
                                 files_written_from_runner */
} runner_event;

/**
 * Reads the line p[0..n) (not NUL-terminated) as one event: a JSON object (duplicate keys
 * refused). Returns RB_OK with *ev filled (runner_event_dispose it), or RB_EINVAL with err
 * saying why (*ev then holds nothing to dispose).
 */
rb_err runner_event_parse(const char *p, size_t n, runner_event *ev, char *err);
/** Releases ev's JSON; ev is empty afterwards. Accepts an empty event. */
void runner_event_dispose(runner_event *ev);

#endif

/*
 * sandbox_private.h: what the two files of the sandbox module share (sandbox.c: the container
 * and its attach stream, from the spec to the removal; sandbox_runner.c: the runner protocol
 * spoken over that stream). Included by those two only: the rest of core/ sees a sandbox
 * through the sandbox_* functions of core/internal.h, never its fields.
 */
#ifndef RB_CORE_SANDBOX_PRIVATE_H
#define RB_CORE_SANDBOX_PRIVATE_H

#include <jansson.h>
#include <stddef.h>

#include "core/internal.h"
#include "core/runner_frames.h"

/* SB_LOST: a ready sandbox's stream ended; the backend is asked why before the session
 * reconnects (its container still runs) or ends. */
enum { SB_CREATING, SB_STARTING, SB_ATTACHING, SB_HANDSHAKE, SB_READY, SB_LOST, SB_CLOSED };

struct sandbox {
    rb_core *c;
    session *s;           /* NULL once closed */
    char *container_id;
    const char *runtime;  /* the container's OCI runtime (isolation_runtime: "runc" or the settings' string) */
    backend_attach *att;
    sandbox_ready_cb ready_cb;
    int state;
    int inflight;         /* backend calls whose callbacks still hold this sandbox */
    int opening;          /* attach started, on_open not yet reported */
    runner_lines lines;   /* stdout cut into lines (partial line, skipping an over-long one) */
    rb_buf errline;       /* partial stderr line (runner diagnostics, logged) */
    char *name;           /* the container name asked for, while its create is in flight */
    execution *ex;        /* the execution the runner is working on */
    char ping_id[RB_ID_LEN];
    char probe_id[RB_ID_LEN]; /* the backstop's ping while a cell runs (sandbox_probe) */
    char stale_id[RB_ID_LEN]; /* a cell left running by a previous runboxd, being interrupted */
    uv_timer_t *timer;    /* handshake deadline */
    /* Bytes from the sandbox are untrusted (privilege separation keeps user code out of the
     * runner's channel, but the runner shares its container): they are bounded per line
     * (RB_RUNNER_LINE_MAX), per execution and per second, and what is dropped is logged at a
     * limited rate. */
    int64_t window_start; /* the current one-second window of the rate limit (mono ms) */
    size_t window_bytes;  /* bytes read in it */
    int paused;           /* reading is stopped until the window ends */
    uv_timer_t *resume;   /* ends the pause */
    size_t ex_bytes;      /* protocol bytes received for the running execution */
    int64_t warned_at;    /* mono ms of the last warning logged, 0 = never */
    unsigned suppressed;  /* warnings not logged since */
    unsigned errlog_lines;   /* stderr lines logged in the current window */
    unsigned errlog_skipped; /* stderr lines not logged since the last one logged */
    int awaiting_warm;    /* a pool entry whose runner answered while still importing the preload */
    sandbox_pool_cb pool_cb; /* owner while a warm pool entry (s == NULL); NULL once claimed */
    void *pool_data;
    char *lost;           /* SB_LOST: how the stream ended */
    int start_queued;     /* created, waiting in c->start_head's queue for a start slot */
    sandbox *start_next;
};

/* sandbox.c */
/** Ends the wait for sb to become ready: stops the handshake deadline, marks sb ready when err
 * is RB_OK, and reports to the session's ready callback (once: it is cleared) or, for a warm pool
 * entry (no session), to its owner; to no one once sb is closed. msg (borrowed) says why. */
void sandbox__finish_ready(sandbox *sb, rb_err err, const char *msg);
/** A warm pool entry's runner answered while its preload is still importing: it becomes ready at
 * the runner's "warm" event, or after RB_WARM_WAIT_MS all the same. */
void sandbox__await_warm(sandbox *sb);

/* sandbox_runner.c */
/** Writes msg (borrowed) to sb's runner as one line of compact JSON. RB_ECONFLICT when the stream
 * is not open, RB_EINTERNAL when msg cannot be encoded, else the stream's error. */
rb_err sandbox__send_line(sandbox *sb, json_t *msg, char *err);
/** Reads len bytes of the runner's stdout: counted against the per-second budget (reading pauses
 * past it), cut into bounded lines, each parsed and handed over as a handshake answer or to the
 * running execution. May close sb (a finished execution can end its session), so the caller
 * holds it (inflight) across the call. */
void sandbox__on_stdout(sandbox *sb, const char *buf, size_t len);
/** Logs the runner's stderr (its diagnostics) at debug level, one line at a time (cut at 4 KiB). */
void sandbox__on_stderr(sandbox *sb, const char *buf, size_t len);

#endif

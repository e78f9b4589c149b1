/*
 * process: commands run in a session's sandbox beside its interpreter, with their output
 * streamed while they run (what E2B's `commands.run` and `pty` need). A process runs as the
 * sandbox user (uid 1000, like user code) with the session's environment plus its own variables,
 * in a folder of the sandbox, optionally on a terminal of its own (a pseudo-terminal with a size
 * that can change); its output reaches its watchers as it comes, then its exit. Each has an id in
 * its session (its process id inside the sandbox) and optionally a tag, by which it can be
 * signalled, written to, resized, listed and watched again. A session runs at most
 * CORE_PROCESS_MAX processes at once, CORE_PROCESS_TTY_MAX of them on terminals.
 *
 * Watchers: the caller that starts a process watches it (core_process_start); others may watch a
 * running one too (core_process_attach), at most CORE_PROCESS_WATCH_MAX at once. A process started
 * with keep 0 is killed (with its process group) when its last watcher goes away
 * (core_process_detach), so that nothing runs on that nobody waits for; with keep it runs on until
 * it ends, is signalled, its timeout passes (timeout_ms) or its session ends, and output that
 * comes while nobody watches is kept, at most CORE_PROCESS_BACKLOG bytes (the latest), for the
 * next watcher (core_process_replay); such a process is read at most 1 MiB a second while nobody
 * watches (its output paused for the rest of the second). Output is not buffered otherwise: a
 * watcher that cannot keep up pauses the process's output (core_process_pause), and the process
 * then blocks in its writes (back-pressure).
 *
 * It is not the interpreter (executions, core/execution.c) and knows no protocol; the E2B
 * Connect RPC (server/e2b/e2b_rpc.c) translates it. Without a terminal a process's standard
 * input is open only when asked for (core_process_input). A runner reset (a cell interrupted
 * without effect, an out-of-memory kill) kills every process of the sandbox, these included.
 */
#ifndef RB_CORE_PROCESS_H
#define RB_CORE_PROCESS_H

#include <jansson.h>

#include "core/core.h"

/* Processes one session runs at once, and those of them on a terminal; more are RB_EBUSY. */
#define CORE_PROCESS_MAX 16
#define CORE_PROCESS_TTY_MAX 4
/* Watchers of one process at once; more are RB_EBUSY. */
#define CORE_PROCESS_WATCH_MAX 8
/* Output kept for the next watcher while a process that runs on has none (the latest bytes). */
#define CORE_PROCESS_BACKLOG (64u * 1024)
/* on_output's stream for what a process on a terminal writes to it. */
#define CORE_PROCESS_TTY_STREAM 3
/* A terminal's rows and columns: 1 to this. */
#define CORE_PROCESS_TTY_SIZE_MAX 1000
/* Arguments and environment variables of one process, and the bytes of all its strings. */
#define CORE_PROCESS_ARGS_MAX 1024
#define CORE_PROCESS_BYTES_MAX (256u * 1024)

typedef struct core_process core_process;
/* One watcher of a process: what core_process_start and core_process_attach hand out. */
typedef struct core_process_watch core_process_watch;

/** Names a running process of a session: by pid, or (pid 0) by the tag it was started with. */
typedef struct core_process_sel {
    unsigned pid;
    const char *tag;
} core_process_sel;

/** What to run; borrowed for the call of core_process_start. */
typedef struct core_process_spec {
    const char *cmd;          /* the program: an absolute path, or a name looked up on PATH */
    const char *const *args;  /* its arguments after argv[0], ending with NULL (NULL: none) */
    json_t *envs;             /* object of name -> string added to the session's environment, or NULL */
    const char *cwd;          /* absolute folder to run in; NULL: /workspace */
    const char *tag;          /* the caller's label for the process (shown by core_process_list), or NULL */
    int stdin_open;           /* its standard input stays open for core_process_input (0: it has none;
                                 always open on a terminal) */
    unsigned tty_rows, tty_cols; /* non-zero: it runs on a terminal of this size (1..CORE_PROCESS_TTY_SIZE_MAX) */
    int keep;                 /* it runs on when its watchers go (see above); 0: killed with the last */
    long timeout_ms;          /* > 0: it is killed this long after its start, watched or not */
} core_process_spec;

/** How a process ended. */
typedef struct core_process_end {
    int exit_code; /* its exit status, or -1 when a signal ended it */
    int exited;    /* it exited by itself (not by a signal) */
    int signal;    /* the signal that ended it, else 0 */
    const char *status; /* "exit status 3", "signal: killed" (borrowed for the call) */
} core_process_end;

/** A watcher's callbacks (copied). None runs from inside a core_process_* call but
 * core_process_replay. */
typedef struct core_process_cbs {
    /** Once, when the process runs: pid is its id in the session. */
    void (*on_start)(void *data, unsigned pid);
    /** Zero or more times after on_start: stream 1 (stdout), 2 (stderr) or CORE_PROCESS_TTY_STREAM
     * (a terminal's bytes), buf valid only during the call. */
    void (*on_output)(void *data, int stream, const char *buf, size_t len);
    /** Once, last: RB_OK with how it ended, or an error (RB_EINVAL: cwd is not a folder;
     * RB_ECANCELED: the session ended or runboxd stops; RB_EIO: the sandbox engine failed),
     * end then NULL. The watch is gone after it. */
    void (*on_end)(void *data, rb_err err, const char *msg, const core_process_end *end);
} core_process_cbs;

/** Starts spec in session_id's sandbox, watched by cbs/data. RB_ENOTFOUND: no such live session of
 * who; RB_ECONFLICT: its sandbox is not ready; RB_EBUSY: CORE_PROCESS_MAX run already (or
 * CORE_PROCESS_TTY_MAX on terminals); RB_EINVAL: a bad spec (empty cmd, a variable name with '=',
 * a relative cwd, too many or too long strings, a terminal size out of range). On RB_OK the
 * callbacks report the rest and *out is the watch until on_end runs or core_process_detach. */
rb_err core_process_start(rb_core *c, const core_caller *who, const char *session_id, const core_process_spec *spec,
                          const core_process_cbs *cbs, void *data, core_process_watch **out, char *err);
/** Watches the running process sel of session_id as well: *pid is its id; on_start does not run,
 * the rest as for core_process_start. RB_ENOTFOUND: no such live session of who or running
 * process; RB_EBUSY: CORE_PROCESS_WATCH_MAX watch it already. */
rb_err core_process_attach(rb_core *c, const core_caller *who, const char *session_id, const core_process_sel *sel,
                           const core_process_cbs *cbs, void *data, core_process_watch **out, unsigned *pid, char *err);
/** Hands w the output kept while its process had no watcher (through on_output, from inside this
 * call), and forgets it. */
void core_process_replay(core_process_watch *w);
/** Stops (paused != 0) or resumes w's share of the process's output while it catches up: the
 * output is read while no watcher has paused it. */
void core_process_pause(core_process_watch *w, int paused);
/** The watcher goes away: no callback of w runs after this returns. A process started without
 * keep is killed (with its process group) once its last watcher has gone and it runs. */
void core_process_detach(core_process_watch *w);

/** Sends signal sig (SIGKILL or SIGTERM) to process sel of session_id and its process group (on a
 * terminal, its whole session); cb answers {} once sent (or the error). RB_ENOTFOUND: no such
 * running process; RB_EINVAL: another signal. *handle (may be NULL) lets the caller detach with
 * core_cancel. */
rb_err core_process_signal(rb_core *c, const core_caller *who, const char *session_id, const core_process_sel *sel,
                           int sig, core_cb cb, void *data, core_op **handle, char *err);
/** Queues len bytes (copied) for the standard input of process sel of session_id (started with
 * stdin_open, or on a terminal: what is typed). RB_ENOTFOUND: no such running process;
 * RB_ECONFLICT: it has no standard input (or it was closed); RB_ETOOBIG: too much is queued
 * already. */
rb_err core_process_input(rb_core *c, const core_caller *who, const char *session_id, const core_process_sel *sel,
                          const char *buf, size_t len, char *err);
/** Closes the standard input of process sel (it reads end of file after what is queued). Errors
 * as for core_process_input. */
rb_err core_process_close_input(rb_core *c, const core_caller *who, const char *session_id,
                                const core_process_sel *sel, char *err);
/** Sets the size of the terminal of process sel; cb answers {} once the engine has (or the error).
 * RB_ENOTFOUND as above; RB_ECONFLICT: it has no terminal; RB_EINVAL: a size out of range.
 * *handle (may be NULL) lets the caller detach with core_cancel. */
rb_err core_process_resize(rb_core *c, const core_caller *who, const char *session_id, const core_process_sel *sel,
                           unsigned rows, unsigned cols, core_cb cb, void *data, core_op **handle, char *err);
/** [{pid, cmd, args, envs, cwd, tag?, tty?}] of session_id's running processes (*out a new
 * reference; tty is {rows, cols}). RB_ENOTFOUND: no such live session of who. */
rb_err core_process_list(rb_core *c, const core_caller *who, const char *session_id, json_t **out, char *err);

#endif

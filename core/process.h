/*
 * process: commands run in a session's sandbox beside its interpreter, with their output
 * streamed while they run (what E2B's `commands.run` needs). A process runs as the sandbox user
 * (uid 1000, like user code) with the session's environment plus its own variables, in a
 * folder of the sandbox; its standard output and error reach the caller as they come, then its
 * exit. Each has an id in its session (its process id inside the sandbox) by which it can be
 * signalled and listed. A session runs at most CORE_PROCESS_MAX processes at once.
 *
 * The caller owns the stream: when it goes away (core_process_detach) the process and its
 * process group are killed, so that nothing runs on that nobody waits for. Output is not
 * buffered here: a caller that cannot keep up pauses the process's output
 * (core_process_pause), and the process then blocks in its writes (back-pressure).
 *
 * It is not the interpreter (executions, core/execution.c) and knows no protocol; the E2B
 * Connect RPC (server/e2b/e2b_rpc.c) translates it. A process has no terminal; its standard
 * input is open only when asked for (core_process_input). A runner reset (a cell interrupted without
 * effect, an out-of-memory kill) kills every process of the sandbox, these included.
 */
#ifndef RB_CORE_PROCESS_H
#define RB_CORE_PROCESS_H

#include <jansson.h>

#include "core/core.h"

/* Processes one session runs at once; more are RB_EBUSY. */
#define CORE_PROCESS_MAX 16
/* Arguments and environment variables of one process, and the bytes of all its strings. */
#define CORE_PROCESS_ARGS_MAX 1024
#define CORE_PROCESS_BYTES_MAX (256u * 1024)

typedef struct core_process core_process;

/** What to run; borrowed for the call of core_process_start. */
typedef struct core_process_spec {
    const char *cmd;          /* the program: an absolute path, or a name looked up on PATH */
    const char *const *args;  /* its arguments after argv[0], ending with NULL (NULL: none) */
    json_t *envs;             /* object of name -> string added to the session's environment, or NULL */
    const char *cwd;          /* absolute folder to run in; NULL: /workspace */
    const char *tag;          /* the caller's label for the process (shown by core_process_list), or NULL */
    int stdin_open;           /* its standard input stays open for core_process_input (0: it has none) */
} core_process_spec;

/** How a process ended. */
typedef struct core_process_end {
    int exit_code; /* its exit status, or -1 when a signal ended it */
    int exited;    /* it exited by itself (not by a signal) */
    int signal;    /* the signal that ended it, else 0 */
    const char *status; /* "exit status 3", "signal: killed" (borrowed for the call) */
} core_process_end;

/** The caller's callbacks (copied). None runs from inside a core_process_* call. */
typedef struct core_process_cbs {
    /** Once, when the process runs: pid is its id in the session. */
    void (*on_start)(void *data, unsigned pid);
    /** Zero or more times after on_start: stream 1 (stdout) or 2 (stderr), buf valid only during the call. */
    void (*on_output)(void *data, int stream, const char *buf, size_t len);
    /** Once, last: RB_OK with how it ended, or an error (RB_EINVAL: cwd is not a folder;
     * RB_ECANCELED: the session ended or runboxd stops; RB_EIO: the sandbox engine failed),
     * end then NULL. The handle is gone after it. */
    void (*on_end)(void *data, rb_err err, const char *msg, const core_process_end *end);
} core_process_cbs;

/** Starts spec in session_id's sandbox. RB_ENOTFOUND: no such live session of who; RB_ECONFLICT:
 * its sandbox is not ready; RB_EBUSY: CORE_PROCESS_MAX run already; RB_EINVAL: a bad spec
 * (empty cmd, a variable name with '=', a relative cwd, too many or too long strings). On
 * RB_OK the callbacks report the rest and *out is the handle until on_end runs or
 * core_process_detach is called. */
rb_err core_process_start(rb_core *c, const core_caller *who, const char *session_id, const core_process_spec *spec,
                          const core_process_cbs *cbs, void *data, core_process **out, char *err);
/** Stops (paused != 0) or resumes the process's output while its caller catches up. */
void core_process_pause(core_process *p, int paused);
/** The caller goes away: no callback runs after this returns, and the process (with its process
 * group) is killed once it runs. */
void core_process_detach(core_process *p);

/** Sends signal sig (SIGKILL or SIGTERM) to process pid of session_id and its process group;
 * cb answers {} once sent (or the error). RB_ENOTFOUND: no such running process; RB_EINVAL:
 * another signal. *handle (may be NULL) lets the caller detach with core_cancel. */
rb_err core_process_signal(rb_core *c, const core_caller *who, const char *session_id, unsigned pid, int sig,
                           core_cb cb, void *data, core_op **handle, char *err);
/** Queues len bytes (copied) for the standard input of process pid of session_id, started with
 * stdin_open. RB_ENOTFOUND: no such running process; RB_ECONFLICT: it has no standard input
 * (or it was closed); RB_ETOOBIG: too much is queued already. */
rb_err core_process_input(rb_core *c, const core_caller *who, const char *session_id, unsigned pid, const char *buf,
                          size_t len, char *err);
/** Closes the standard input of process pid (it reads end of file after what is queued). Errors
 * as for core_process_input. */
rb_err core_process_close_input(rb_core *c, const core_caller *who, const char *session_id, unsigned pid, char *err);
/** [{pid, cmd, args, envs, cwd, tag?}] of session_id's running processes (*out a new reference).
 * RB_ENOTFOUND: no such live session of who. */
rb_err core_process_list(rb_core *c, const core_caller *who, const char *session_id, json_t **out, char *err);

#endif

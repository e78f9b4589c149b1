/*
 * backend: the one narrow interface through which core/ drives sandboxes. A backend creates
 * and starts a sandbox from a backend_spec, attaches to its runner (a byte stream both ways),
 * runs a command in it and collects the output and exit code, copies tar archives in and out,
 * removes it, lists sandboxes by label and tells whether its engine is healthy; for helpers that
 * are not sessions (the dependency installer, the package listing) it also runs a one-shot
 * sandbox to completion, names an image's content and keeps named volumes. It is a struct
 * of function pointers (backend_ops) plus an opaque instance, behind the backend_* functions
 * below; core/ calls nothing else to reach a sandbox engine. It is not a client of any engine:
 * each implementation is an adapter file in core/ over a client folder of its own (the Docker
 * one is core/backend/docker.c over docker/, the only file in core/ that includes docker/),
 * and it holds no runbox policy: what a sandbox looks like (limits, labels, hardening) is
 * decided by core/sandbox.c and handed over in the spec.
 *
 * Adding a backend (several Docker hosts, Kubernetes): a client folder, one adapter file that
 * fills a backend_ops and returns backend_new(&ops, instance) from its constructor, and a
 * registration: a daemon builds it and hands it to core_new_with_backend (core/core.h), which
 * takes ownership. core_new uses the Docker backend on cfg->docker_socket
 * (backend_docker_new, core/backend/docker.h).
 *
 * Async contract (libuv style), for every function that takes a callback: a call that fails
 * synchronously returns the error (text in err[RB_ERR_LEN], may be NULL) and never calls its
 * callback; one that starts returns RB_OK and calls its callback exactly once, later, on the
 * loop, with RB_ECANCELED if the backend was freed first. Errors in callbacks come with errmsg,
 * the engine's own words (borrowed, valid during the call). Common codes: RB_EUNAVAILABLE (the
 * engine is unreachable), RB_ENOTFOUND (no such sandbox or image), RB_ECONFLICT (the sandbox
 * is in the wrong state), RB_EIO (the engine failed or answered nonsense), RB_ETOOBIG (an
 * answer exceeded its cap), RB_ENOSPC (backend_archive_put: the file system it writes to is full). Strings and buffers passed in are borrowed for the call only
 * (copied if kept); whatever a callback receives is borrowed for that call only, except the
 * tar of backend_archive_get (backend_bytes_cb).
 */
#ifndef RB_CORE_BACKEND_H
#define RB_CORE_BACKEND_H

#include <stddef.h>
#include <stdint.h>
#include <jansson.h>

#include "base/base.h"
#include "base/latency.h"

typedef struct backend backend;
/** An open attach stream (backend_attach_open); opaque, owned by the backend. */
typedef struct backend_attach backend_attach;

/* ---- the sandbox spec --------------------------------------------------------------------- */

/** A label on a sandbox or volume. */
typedef struct backend_label {
    const char *key, *value;
} backend_label;

/** A memory-backed file system mounted rw, nosuid, nodev at path, of at most size bytes, its
 * root owned by uid:gid (-1: the engine's default) with permission bits mode (-1: default). */
typedef struct backend_mount {
    const char *path;
    int64_t size;
    int uid, gid, mode;
} backend_mount;

/** Storage that outlives a sandbox, mounted at path: the named volume name (backend_volume_create,
 * or the answer of backend_workspace_volume), or else the file or folder host_path of the
 * engine's host. Neither may contain ':' (RB_EINVAL). */
typedef struct backend_volume {
    const char *name;
    const char *host_path;
    const char *path;
    int readonly;
} backend_volume;

/** A resource limit (setrlimit name without RLIMIT_, lower case: "nofile", "fsize", "core"). */
typedef struct backend_ulimit {
    const char *name;
    int64_t soft, hard;
} backend_ulimit;

/**
 * What to run. Every sandbox has its standard input open and no terminal, so that it can be
 * attached (backend_attach_open). Lists of strings end with NULL; NULL members mean "not set"
 * (the image's or engine's default) unless said otherwise. All of it is borrowed by
 * backend_create for the call only.
 */
typedef struct backend_spec {
    const char *image;
    const char *const *cmd;         /* argv; NULL: the image's entry point */
    const char *user;               /* "uid" or "uid:gid"; NULL: the image's user */
    const char *const *env;         /* "NAME=value" */
    const char *working_dir;
    const backend_label *labels;    /* n_labels of them; how backend_list finds sandboxes */
    size_t n_labels;
    int64_t memory;                 /* bytes of memory (0: no limit) ... */
    int64_t swap;                   /* ... plus bytes of swap on top of it (0: none) */
    int64_t nano_cpus;              /* CPU time in billionths of a CPU (0: no limit) */
    int64_t cpu_shares;             /* relative CPU weight against other sandboxes when the CPUs are
                                       busy (Docker's CpuShares, 1024 as usual; 0: the default) */
    int64_t pids_limit;             /* processes and threads (0: no limit) */
    int readonly_root;              /* the image's file system is read-only */
    const backend_mount *tmpfs;     /* n_tmpfs scratch mounts, gone with the sandbox */
    size_t n_tmpfs;
    /* The workspace: a memory-backed mount (path NULL: none) that, unlike tmpfs, the archive
     * calls reach while the sandbox runs, and writable even with readonly_root; removed with
     * the sandbox. Its volume (if the engine makes one) carries workspace_labels. */
    backend_mount workspace;
    const backend_label *workspace_labels;
    size_t n_workspace_labels;
    const backend_volume *volumes;  /* n_volumes of them */
    size_t n_volumes;
    const backend_ulimit *ulimits;  /* n_ulimits of them */
    size_t n_ulimits;
    const char *const *cap_drop;    /* capabilities removed ("ALL") */
    const char *const *cap_add;     /* capabilities added back after cap_drop */
    const char *const *security_opt;/* engine security options ("no-new-privileges") */
    int init;                       /* an init process reaps zombies and forwards signals */
    const char *network;            /* NULL: no network at all; else the network to join */
    const char *log_driver;         /* what happens to the sandbox's output besides attach
                                       ("none": nothing kept); NULL: the engine's default */
    const char *runtime;            /* the engine's OCI runtime ("runc", "runsc" for gVisor); NULL: its
                                       default. Only engines that offer it take the sandbox
                                       (backend_offers); elsewhere RB_EUNAVAILABLE names it. */
} backend_spec;

/* ---- callbacks ---------------------------------------------------------------------------- */

/** Completion of a call that answers nothing but success or failure. */
typedef void (*backend_cb)(void *data, rb_err err, const char *errmsg);
/** Completion of backend_create: on success id names the new sandbox (borrowed). */
typedef void (*backend_create_cb)(void *data, rb_err err, const char *errmsg, const char *id);
/** Completion of a call that answers a name (backend_image_id, backend_workspace_volume): on
 * success name is it (borrowed, never NULL). */
typedef void (*backend_name_cb)(void *data, rb_err err, const char *errmsg, const char *name);
/** Completion of backend_ping: on success version is the engine API version in use ("1.41"). */
typedef void (*backend_ping_cb)(void *data, rb_err err, const char *errmsg, const char *version);
/** Completion of backend_archive_get: on success bytes[0..len) is the tar (never NULL), owned
 * by the callback from then on (free() it), so that it can outlive the call without a copy;
 * NULL on failure. */
typedef void (*backend_bytes_cb)(void *data, rb_err err, const char *errmsg, char *bytes, size_t len);

/** One sandbox found by backend_list. */
typedef struct backend_sandbox_info {
    const char *id;
    const char *state;  /* "running" when it runs; other words (engine-specific) otherwise; may be NULL */
    json_t *labels;     /* object of label -> string (may be NULL) */
} backend_sandbox_info;
/** Completion of backend_list: on success items[0..n) (n may be 0). */
typedef void (*backend_list_cb)(void *data, rb_err err, const char *errmsg, const backend_sandbox_info *items,
                                size_t n);

/** A command for backend_exec. */
typedef struct backend_exec_spec {
    const char *const *argv;   /* argv[0] is looked up on the PATH of the command's environment
                                  unless it is absolute; ends with NULL */
    const char *user;          /* NULL: the sandbox's user */
    const char *working_dir;   /* NULL: the sandbox's */
    size_t max_output;         /* cap on the output, both streams together (0: 8 MiB) */
    long timeout_ms;           /* 0: none */
    /* Changes to the environment the command inherits from the sandbox's spec (backend_spec.env
     * and the image's): "NAME=value" sets NAME, "NAME" alone removes it; ends with NULL. NULL:
     * the sandbox's environment unchanged. */
    const char *const *env;
    /* backend_exec_stream only: the command's standard input is open for backend_stream_write
     * until backend_stream_close_input (0: it has none) */
    int input;
    /* backend_exec_stream only: the command runs on a terminal of its own (its controlling
     * terminal, standard input, output and error); its output is the terminal's bytes, all as
     * stream 1; backend_stream_resize sets its size */
    int tty;
} backend_exec_spec;
/** What a finished command (backend_exec) or one-shot sandbox (backend_run) left: its exit code
 * (-1 if the engine did not say) and its output, separated by stream (each NUL-terminated after
 * its length). */
typedef struct backend_exec_result {
    int exit_code;
    const char *out, *err;
    size_t out_len, err_len;
} backend_exec_result;
/** Completion of backend_exec and backend_run: on success r is the result; on failure r is NULL. */
typedef void (*backend_exec_cb)(void *data, rb_err err, const char *errmsg, const backend_exec_result *r);

/** What backend_state found: whether a sandbox runs and, if it stopped, how. */
typedef struct backend_sandbox_state {
    int running;    /* its command runs */
    int oom_killed; /* the engine killed it for exceeding its memory limit */
    int exit_code;  /* of its command once stopped; -1 while running or unknown */
} backend_sandbox_state;
/** Completion of backend_state: on success st describes the sandbox; NULL on failure. */
typedef void (*backend_state_cb)(void *data, rb_err err, const char *errmsg, const backend_sandbox_state *st);

/** One reading of a sandbox's use of its resources (backend_usage_read), as its engine counts them. */
typedef struct backend_usage {
    int64_t cpu_ns;          /* CPU time its processes used since it started, in nanoseconds */
    int64_t mem_bytes;       /* memory in use, page cache the kernel may reclaim left out */
    int64_t mem_cache_bytes; /* that reclaimable page cache */
    int64_t shmem_bytes;     /* files in its memory-backed folders (tmpfs: /workspace, /tmp), in mem_bytes */
    int64_t mem_limit_bytes; /* its memory limit (0: not known) */
    int64_t pids;            /* processes and threads */
    int64_t net_rx_bytes, net_tx_bytes; /* bytes received and sent on its networks (0: it has none) */
} backend_usage;
/** Completion of backend_usage_read: on success u is the reading (borrowed); NULL on failure. */
typedef void (*backend_usage_cb)(void *data, rb_err err, const char *errmsg, const backend_usage *u);

/**
 * The calls an engine answered, as backend_stats_read reports them: by kind of operation (the
 * implementation's fixed set of names, e.g. "create", "start", "attach", ..., "other") the time
 * each call took and, for failed ones, by reason (again a fixed set, e.g. "timeout",
 * "unreachable", "connection", "http_4xx", "http_5xx"). Names are static strings; label values
 * for /metrics, so they never come from anything a caller sent.
 */
#define BACKEND_STATS_OPS 12
#define BACKEND_STATS_REASONS 6
typedef struct backend_stats {
    size_t n_ops, n_reasons;
    const char *op[BACKEND_STATS_OPS];
    const char *reason[BACKEND_STATS_REASONS];
    rb_latency latency[BACKEND_STATS_OPS];                  /* completed calls (failed ones too) */
    uint64_t failures[BACKEND_STATS_OPS][BACKEND_STATS_REASONS];
} backend_stats;

/** The callbacks of an attach stream (copied by backend_attach_open). */
typedef struct backend_attach_cbs {
    /** Once: RB_OK when the stream is open (writes are accepted from then on), or the error
     * (then on_close does not run and the handle is gone). */
    void (*on_open)(void *data, rb_err err, const char *errmsg);
    /** Zero or more times after a successful open: stream is 1 (stdout) or 2 (stderr); buf is
     * valid only during the call. */
    void (*on_data)(void *data, int stream, const char *buf, size_t len);
    /** Once after a successful open, when the stream ends (RB_OK for end of stream, else the
     * error), unless backend_attach_close was called first. */
    void (*on_close)(void *data, rb_err err, const char *errmsg);
} backend_attach_cbs;

/** A command running in a sandbox with its output streamed (backend_exec_stream); opaque, owned
 * by the backend. */
typedef struct backend_stream backend_stream;
/** The callbacks of a streamed command (copied by backend_exec_stream). */
typedef struct backend_stream_cbs {
    /** Zero or more times: stream is 1 (stdout) or 2 (stderr); buf is valid only during the call. */
    void (*on_data)(void *data, int stream, const char *buf, size_t len);
    /** Once, unless backend_stream_close was called first: RB_OK with the command's exit code
     * (-1 if the engine did not say) once it has exited and its output is complete, or the
     * error (RB_ECONFLICT: the sandbox is not running). The handle is gone after it. */
    void (*on_exit)(void *data, rb_err err, const char *errmsg, int exit_code);
} backend_stream_cbs;

/* ---- implementing a backend --------------------------------------------------------------- */

/** What an implementation provides: each member implements the backend_* function of the same
 * name, with its contract, on the instance self. */
typedef struct backend_ops {
    const char *name; /* "docker" */
    void (*free)(void *self);
    rb_err (*ping)(void *self, backend_ping_cb cb, void *data, char *err);
    rb_err (*create)(void *self, const char *name, const backend_spec *spec, backend_create_cb cb, void *data,
                     char *err);
    rb_err (*start)(void *self, const char *id, backend_cb cb, void *data, char *err);
    rb_err (*remove)(void *self, const char *id, backend_cb cb, void *data, char *err);
    rb_err (*pause)(void *self, const char *id, int on, backend_cb cb, void *data, char *err);
    rb_err (*list)(void *self, const char *label, backend_list_cb cb, void *data, char *err);
    rb_err (*attach_open)(void *self, const char *id, const backend_attach_cbs *cbs, void *data,
                          backend_attach **out, char *err);
    rb_err (*attach_write)(void *self, backend_attach *a, const char *buf, size_t len, char *err);
    void (*attach_close)(void *self, backend_attach *a);
    void (*attach_pause)(void *self, backend_attach *a, int paused);
    rb_err (*exec)(void *self, const char *id, const backend_exec_spec *spec, backend_exec_cb cb, void *data,
                   char *err);
    rb_err (*archive_put)(void *self, const char *id, const char *dir, const void *tar, size_t len, backend_cb cb,
                          void *data, char *err);
    rb_err (*archive_get)(void *self, const char *id, const char *path, size_t max, backend_bytes_cb cb, void *data,
                          char *err);
    rb_err (*run)(void *self, const char *name, const backend_spec *spec, long timeout_ms, size_t max_output,
                  backend_exec_cb cb, void *data, char *err);
    rb_err (*image_id)(void *self, const char *image, backend_name_cb cb, void *data, char *err);
    rb_err (*volume_create)(void *self, const char *name, const backend_label *labels, size_t n_labels,
                            backend_cb cb, void *data, char *err);
    rb_err (*volume_remove)(void *self, const char *name, backend_cb cb, void *data, char *err);
    rb_err (*workspace_volume)(void *self, const char *id, const char *path, backend_name_cb cb, void *data,
                               char *err);
    /* Optional (NULL: RB_EINTERNAL, "not supported"). */
    rb_err (*exec_stream)(void *self, const char *id, const backend_exec_spec *spec, const backend_stream_cbs *cbs,
                          void *data, backend_stream **out, char *err);
    void (*stream_pause)(void *self, backend_stream *st, int paused);
    rb_err (*stream_write)(void *self, backend_stream *st, const char *buf, size_t len, char *err);
    rb_err (*stream_close_input)(void *self, backend_stream *st, char *err);
    void (*stream_close)(void *self, backend_stream *st);
    /* Optional (NULL: RB_EINTERNAL, "not supported"): backend_stream_resize. */
    rb_err (*stream_resize)(void *self, backend_stream *st, unsigned rows, unsigned cols, backend_cb cb, void *data,
                            char *err);
    /* Optional (NULL: RB_EINTERNAL, "not supported"). */
    rb_err (*state)(void *self, const char *id, backend_state_cb cb, void *data, char *err);
    /* Optional (NULL: no operations, nothing counted). */
    void (*stats)(void *self, backend_stats *out);
    /* Optional (NULL: RB_EINTERNAL, "not supported"): backend_usage_read. */
    rb_err (*usage)(void *self, const char *id, backend_usage_cb cb, void *data, char *err);
    /* Optional (NULL: RB_EINTERNAL, "not supported"): networks for helpers (core/web/web.c). */
    rb_err (*network_create)(void *self, const char *name, int internal, const backend_label *labels,
                             size_t n_labels, backend_name_cb cb, void *data, char *err);
    rb_err (*network_connect)(void *self, const char *network, const char *id, const char *alias, backend_cb cb,
                              void *data, char *err);
    rb_err (*network_remove)(void *self, const char *network, backend_cb cb, void *data, char *err);
    rb_err (*network_list)(void *self, const char *label, backend_list_cb cb, void *data, char *err);
    /* Optional (NULL: RB_EINTERNAL, "not supported"): backend_volume_list_unused. */
    rb_err (*volume_list_unused)(void *self, const char *label, backend_list_cb cb, void *data, char *err);
    /* Optional (NULL: name as it is): backend_pin. */
    char *(*pin)(void *self, const char *ref, const char *name);
    /* Optional (NULL: name as it is): backend_place. */
    char *(*place)(void *self, const char *name, char *err);
    /* Optional (NULL: none): backend_engines and backend_drain, for backends over several engines. */
    json_t *(*engines)(void *self);
    rb_err (*drain)(void *self, const char *engine, int on, char *err);
    /* Optional (NULL: never): backend_engine_down. */
    const char *(*engine_down)(void *self, const char *id);
    /* Optional (NULL: runc only): backend_offers and backend_runtimes. */
    int (*offers)(void *self, const char *runtime);
    json_t *(*runtimes)(void *self);
    /* Optional (NULL: RB_EINTERNAL, "not supported"): backend_cpu_shares. */
    rb_err (*cpu_shares)(void *self, const char *id, int64_t shares, backend_cb cb, void *data, char *err);
} backend_ops;

/** A backend: an implementation's ops and its instance. Read-only after backend_new. */
struct backend {
    const backend_ops *ops;
    void *self;
};

/** For implementations: wraps ops (static, borrowed for the backend's lifetime) and the
 * instance self (owned: ops->free releases it in backend_free). Never fails. */
backend *backend_new(const backend_ops *ops, void *self);

/* ---- what core calls ---------------------------------------------------------------------- */

/** Cancels every call in flight (their callbacks run with RB_ECANCELED, before this returns or
 * on the next loop turn), closes attach streams without callbacks and releases the backend.
 * Handles finish closing on the loop: run it until it has no active handles before closing
 * it. Sandboxes are left as they are. Accepts NULL. */
void backend_free(backend *b);

/** Asks the engine whether it is healthy; cb gets the API version in use. */
rb_err backend_ping(backend *b, backend_ping_cb cb, void *data, char *err);

/** Creates (does not start) a sandbox named name (unique; letters, digits, '-', '_', '.')
 * from spec. RB_ENOTFOUND: spec->image does not exist; RB_ECONFLICT: the name is taken. cb's id
 * names it in every later call; from then on it exists until backend_remove, so the caller
 * records the id before starting it. */
rb_err backend_create(backend *b, const char *name, const backend_spec *spec, backend_create_cb cb, void *data,
                      char *err);
/** Starts a created sandbox: its command runs when cb reports RB_OK. */
rb_err backend_start(backend *b, const char *id, backend_cb cb, void *data, char *err);
/** Freezes every process of a running sandbox (on != 0; its memory stays, its CPU use stops at
 * once) or thaws it (on == 0). A frozen sandbox takes no attach, exec or archive call until it is
 * thawed; backend_state and backend_list say "paused". RB_ENOTFOUND when it no longer exists,
 * RB_ECONFLICT when it is not running (or, on == 0, not frozen), RB_EBUSY when the freezer gave
 * up on processes that kept changing (the sandbox runs on unfrozen: try again in a moment; core's
 * core__freeze does). */
rb_err backend_pause(backend *b, const char *id, int on, backend_cb cb, void *data, char *err);
/** Changes a running sandbox's relative CPU weight (backend_spec.cpu_shares; 1024 as usual): the
 * warm pool starts its sandboxes low and raises a claimed one. Optional. RB_ENOTFOUND when it
 * no longer exists. */
rb_err backend_cpu_shares(backend *b, const char *id, int64_t shares, backend_cb cb, void *data, char *err);
/** Stops and removes a sandbox with its workspace, whatever its state. RB_ENOTFOUND when it
 * no longer exists. */
rb_err backend_remove(backend *b, const char *id, backend_cb cb, void *data, char *err);
/** Tells whether sandbox id runs and, if it stopped, how (its exit code, whether the engine
 * killed it for its memory limit). RB_ENOTFOUND when it no longer exists. */
rb_err backend_state(backend *b, const char *id, backend_state_cb cb, void *data, char *err);
/** Reads what running sandbox id uses now (CPU time, memory, processes, network bytes): one
 * quick reading, no waiting for a second one. RB_ENOTFOUND when it no longer exists. Optional:
 * RB_EINTERNAL for a backend that cannot tell. */
rb_err backend_usage_read(backend *b, const char *id, backend_usage_cb cb, void *data, char *err);
/** Fills *out with the calls the engine answered so far (all zero for a backend that counts
 * nothing). Synchronous; never fails. */
void backend_stats_read(backend *b, backend_stats *out);

/** Lists the sandboxes, running or not, that carry label: "key" (any value) or "key=value". */
rb_err backend_list(backend *b, const char *label, backend_list_cb cb, void *data, char *err);

/** Opens a stream to a running sandbox's command: what backend_attach_write sends is its
 * standard input; its standard output and error arrive through cbs->on_data. *out is valid
 * until on_open reports an error, on_close runs, or backend_attach_close is called. The
 * callbacks follow backend_attach_cbs rather than the one-callback contract above. */
rb_err backend_attach_open(backend *b, const char *id, const backend_attach_cbs *cbs, void *data,
                           backend_attach **out, char *err);
/** Queues len bytes (copied) for the sandbox's standard input. RB_ECONFLICT if the stream is not
 * open or has ended; RB_ETOOBIG if too much is already queued (64 MiB for Docker). */
rb_err backend_attach_write(backend *b, backend_attach *a, const char *buf, size_t len, char *err);
/** Closes a stream: no callback of it runs after this returns; memory is released on the loop. */
void backend_attach_close(backend *b, backend_attach *a);
/** Stops (paused != 0) or resumes reading a stream's output, so that a sandbox writing faster
 * than runboxd will take it blocks in its writes (back-pressure). Does nothing unless open. */
void backend_attach_pause(backend *b, backend_attach *a, int paused);

/** Runs a command in a running sandbox and waits for it to exit; cb gets its exit code and
 * output (RB_ETOOBIG beyond spec->max_output, RB_ETIMEDOUT after spec->timeout_ms).
 * RB_ECONFLICT: the sandbox is not running (stopped or gone). */
rb_err backend_exec(backend *b, const char *id, const backend_exec_spec *spec, backend_exec_cb cb, void *data,
                    char *err);

/** Runs a command in a running sandbox like backend_exec (spec's max_output and timeout_ms are
 * not used: the caller bounds what it keeps and how long it waits) but streams its output as it
 * comes through cbs->on_data, and its exit through cbs->on_exit. *out is valid until on_exit
 * runs or backend_stream_close is called. The command has a standard input only with
 * spec->input (backend_stream_write). The callbacks
 * follow backend_stream_cbs rather than the one-callback contract above. Optional:
 * RB_EINTERNAL for a backend that cannot stream. */
rb_err backend_exec_stream(backend *b, const char *id, const backend_exec_spec *spec, const backend_stream_cbs *cbs,
                           void *data, backend_stream **out, char *err);
/** Stops (paused != 0) or resumes reading a streamed command's output: a command that writes
 * faster than its reader takes blocks in its writes (back-pressure). */
void backend_stream_pause(backend *b, backend_stream *st, int paused);
/** Queues len bytes (copied) for the standard input of a streamed command started with
 * spec->input. RB_ECONFLICT when it has no input (not asked for, closed, not running yet or
 * any more); RB_ETOOBIG when too much is queued already (64 MiB for Docker). */
rb_err backend_stream_write(backend *b, backend_stream *st, const char *buf, size_t len, char *err);
/** Ends a streamed command's standard input after what is queued (it reads end of file).
 * RB_ECONFLICT as for backend_stream_write. */
rb_err backend_stream_close_input(backend *b, backend_stream *st, char *err);
/** Sets the size of the terminal of a streamed command started with spec->tty (its process group
 * gets SIGWINCH); cb reports the engine's answer. RB_ECONFLICT when it has no terminal or has not
 * started yet; RB_EINTERNAL for a backend that cannot. cb may run after st is gone. */
rb_err backend_stream_resize(backend *b, backend_stream *st, unsigned rows, unsigned cols, backend_cb cb, void *data,
                             char *err);
/** Detaches from a streamed command: no callback runs after this returns; the command itself
 * is not stopped (signal it from inside the sandbox). Memory is released on the loop. */
void backend_stream_close(backend *b, backend_stream *st);

/** Unpacks the tar tar[0..len) (copied) into the folder dir of a running sandbox, which must
 * exist and lie in its workspace (tmpfs mounts are out of reach). Paths are absolute, at most
 * 4096 bytes. */
/** The volumes labelled label ("key=value") that no sandbox or helper uses (items' id: the name
 * backend_volume_remove takes; no state). */
rb_err backend_volume_list_unused(backend *b, const char *label, backend_list_cb cb, void *data, char *err);

rb_err backend_archive_put(backend *b, const char *id, const char *dir, const void *tar, size_t len, backend_cb cb,
                           void *data, char *err);
/** Packs path (a file, or a folder with everything under it, named by its last component) of
 * a running sandbox into a tar of at most max bytes (RB_ETOOBIG beyond). RB_ENOTFOUND when path
 * does not exist. */
rb_err backend_archive_get(backend *b, const char *id, const char *path, size_t max, backend_bytes_cb cb,
                           void *data, char *err);

/* ---- one-shot sandboxes, images and volumes ------------------------------------------------
 *
 * What helpers that are not sessions need (core/deps/oneshot.c for the dependency installer of
 * core/deps/deps.c and the listing of core/deps/packages.c). A one-shot sandbox is one call, backend_run,
 * rather than wait, logs and remove on top of create and start, because that is narrower and
 * what every engine can do natively (a Kubernetes Job; Docker's create, start, wait, logs,
 * remove): core/ only ever wants "run this to completion and tell me how it exited and what it
 * printed". Separate calls would carry Docker's model into core/ (output kept after exit only
 * with a logging driver, in 8-byte frames to demultiplex, a wait that answers before the logs
 * are complete) and make each caller repeat the promise that nothing is left behind; here the
 * adapter keeps that promise once. Volumes are the one piece of state a spec cannot describe:
 * a cache that outlives runs (created, removed) and the workspace of a session's sandbox,
 * mounted into a one-shot sandbox to reach the session's files. The image's identity keys such
 * caches, so that a rebuilt image never sees packages built for the old one.
 */

/** Runs a one-shot sandbox named name (as for backend_create) from spec, to completion: creates
 * it with standard input closed (it cannot be attached), starts it, waits at most timeout_ms
 * (0: no deadline) for it to exit, and removes it with its workspace whatever happened once it
 * exists. cb gets its exit code and output: of each stream the last max_output bytes (0:
 * 2 MiB), both empty when the engine holds more than twice that. Errors: RB_ENOTFOUND when
 * spec->image does not exist, RB_ECONFLICT when the name is taken, RB_ETIMEDOUT past the
 * deadline, RB_EINVAL for a volume that cannot be mounted; errmsg says which step failed. */
rb_err backend_run(backend *b, const char *name, const backend_spec *spec, long timeout_ms, size_t max_output,
                   backend_exec_cb cb, void *data, char *err);

/** The identity of image's content (for Docker its id, "sha256:..."): the same for the same
 * content, different once the image is rebuilt. RB_ENOTFOUND: the engine lacks the image. */
rb_err backend_image_id(backend *b, const char *image, backend_name_cb cb, void *data, char *err);

/** Creates the named volume name (letters, digits, '_', '.', '-'), empty and kept until
 * backend_volume_remove, carrying labels; a name that exists already is kept as it is, with
 * its content, and reported as created. */
rb_err backend_volume_create(backend *b, const char *name, const backend_label *labels, size_t n_labels,
                             backend_cb cb, void *data, char *err);
/** Removes the named volume name: RB_ENOTFOUND if it does not exist, RB_ECONFLICT while a
 * sandbox uses it. */
rb_err backend_volume_remove(backend *b, const char *name, backend_cb cb, void *data, char *err);

/** The name of the volume mounted at path in sandbox id (its workspace: backend_spec.workspace
 * .path), for a one-shot sandbox to mount too (backend_volume.name); the volume is removed with
 * the sandbox. RB_ENOTFOUND: no such sandbox; RB_ECONFLICT: no volume is mounted at path (a
 * sandbox created without a workspace volume). */
rb_err backend_workspace_volume(backend *b, const char *id, const char *path, backend_name_cb cb, void *data,
                                char *err);

/*
 * Networks: a sandbox joins the network named in its spec when it is created; these calls make
 * a network of its own for a group of helper containers (the web-page reader's browser and its
 * egress proxy, core/web/web.c) and join a created container to a second one. Optional for a
 * backend: without them the helpers that need them answer RB_EINTERNAL ("not supported").
 */
/** Makes a network from name carrying labels; internal != 0: it has no route out of the engine's
 * host (its members reach only each other). cb gets the name to use for it from then on (with
 * several engines it says which engine it is on; a sandbox created on it goes there too). */
rb_err backend_network_create(backend *b, const char *name, int internal, const backend_label *labels,
                              size_t n_labels, backend_name_cb cb, void *data, char *err);
/** Joins the created sandbox id to network as well, where the others find it under alias too
 * (NULL: only its name). */
rb_err backend_network_connect(backend *b, const char *network, const char *id, const char *alias, backend_cb cb,
                               void *data, char *err);
/** Removes network (RB_ENOTFOUND if there is none; it fails while a sandbox is still on it). */
rb_err backend_network_remove(backend *b, const char *network, backend_cb cb, void *data, char *err);
/** Lists the networks carrying label ("key=value"): each item's id is the network's name, its
 * state NULL. */
rb_err backend_network_list(backend *b, const char *label, backend_list_cb cb, void *data, char *err);

/*
 * Several engines. A backend over several engines (core/backend/multi.c) places each new
 * sandbox on one of them and names it so that every later call reaches the same engine. Names of
 * volumes and networks are pinned to an engine the same way, so that a helper runs where the
 * session's files and caches are.
 */
/** The name (a volume's, a network's, a sandbox's) to use for name on the engine that holds ref
 * (a sandbox id, or an already pinned name): a new heap string (free() it). A backend of one
 * engine returns name as it is. */
char *backend_pin(backend *b, const char *ref, const char *name);
/** The name for name on the engine a new sandbox would be placed on now (the least loaded that
 * can take one): a new heap string, or NULL with err (RB_EUNAVAILABLE: no engine can) . A backend
 * of one engine returns name as it is. For something placed first that sandboxes follow later (a
 * volume). */
char *backend_place(backend *b, const char *name, char *err);
/** The engines, for GET /health: [{name, url, reachable, error?, sandboxes, capacity, draining,
 * image_id?, image_ok}] (new reference), or NULL for a backend of one engine. */
json_t *backend_engines(backend *b);
/** Stops (on != 0) or resumes placing new sandboxes on engine; its sandboxes go on. RB_ENOTFOUND
 * for an unknown engine, and for any name with a backend of one engine (its engine has none). */
rb_err backend_drain(backend *b, const char *engine, int on, char *err);
/** Whether some engine of b offers the OCI runtime runtime (NULL, the engine's default: always),
 * by what the operator declared for it (--docker-runtimes, --engine ...,runtimes=). */
int backend_offers(backend *b, const char *runtime);
/** The runtimes b's engines offer, every name once: a new JSON array of strings. */
json_t *backend_runtimes(backend *b);
/** Checks a runtime list as an operator writes it ("runc+runsc": names of 1 to 64 of a-z, A-Z,
 * 0-9, '.', '_', '-', joined by '+'): RB_EINVAL naming the problem. */
rb_err backend_runtimes_check(const char *list, char *err);
/** Whether the list (as for backend_runtimes_check; NULL: "runc") names runtime. */
int backend_runtimes_has(const char *list, const char *runtime);
/** The list's names as a new JSON array (NULL list: ["runc"]). */
json_t *backend_runtimes_json(const char *list);

/** Why the engine holding sandbox id did not answer its last probe ("ENGINE: reason", borrowed
 * until the next probe), or NULL while it answers (or for a backend of one engine, whose state
 * is the backend's own). */
const char *backend_engine_down(backend *b, const char *id);

#endif

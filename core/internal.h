/*
 * internal.h: the structures and functions shared by the files of core/ (core.c, session.c,
 * execution.c, sandbox.c, files.c, pool.c, ...). Nothing outside core/ includes this; it is
 * not an interface (core/core.h is), and its layouts may change with any of those files.
 */
#ifndef RB_CORE_INTERNAL_H
#define RB_CORE_INTERNAL_H

#include <jansson.h>
#include <uv.h>

#include "base/map.h"
#include "core/backend/backend.h"
#include "core/core.h"
#include "core/deps/deps.h"
#include "core/files/files.h"
#include "core/heart.h"
#include "core/policy/policy.h"
#include "core/network/egress.h"
#include "core/shares/shares.h"
#include "core/volumes/volumes.h"
#include "core/workspace/workspace.h"
#include "core/web/web.h"
#include "core/stats.h"
#include "core/usage/usage.h"
#include "store/store.h"

#define RB_RUNNER_LINE_MAX (16u * 1024 * 1024)
#define RB_DISPLAY_BYTES_MAX (32u * 1024 * 1024)
/* Bytes per second runboxd reads from one sandbox before it stops reading for the rest of the
 * second (back-pressure), and the longest line always parsed, even past an execution's budget. */
#define RUNNER_BYTES_PER_S (32u * 1024 * 1024)
#define RUNNER_SMALL_LINE (64u * 1024)
/* At most one warning about one sandbox's bytes per this many ms (the rest are counted). */
#define RUNNER_WARN_EVERY_MS 10000
/* Lines of a sandbox's stderr (the runner's diagnostics) logged per second at most; the rest are
 * counted. */
#define RUNNER_ERR_LINES_PER_S 20
/* How long a new sandbox's runner has to answer its first ping once attached: a broken image
 * fails here. 20 s was too short for a burst of cold starts on a loaded 2-core host (98 of 100
 * sessions created one every 200 ms failed, docs/benchmark.md "Bursts"); a runner that starts
 * answers within it, one that never does is rare (an image that exits ends the attach first). */
#define RB_HANDSHAKE_MS 60000
/* How long a warm pool sandbox whose runner answered waits for its preload before it counts as
 * ready all the same (a busy host; its first cell then waits for the imports). */
#define RB_WARM_WAIT_MS 20000
/* How long after an execution's timeout and grace runboxd waits for the sandbox's answer before ending
 * the session as unresponsive: a fork bomb on a busy 2-core host kept the runner from restarting the
 * interpreter for more than 10 s (CI), and a false verdict destroys a session that was fine. */
#define RB_BACKSTOP_EXTRA_MS 30000
/* At the backstop runboxd pings the runner before judging: a sandbox whose supervisor answers
 * within RB_BACKSTOP_PONG_MS is slow (a host at a load of 100 on 2 cores took more than a minute
 * for `1/0` in CI), not dead, and gets another RB_BACKSTOP_EXTRA_MS, at most RB_BACKSTOP_PINGS
 * times; no answer, or still no result after the last, ends the session. */
#define RB_BACKSTOP_PONG_MS 30000
#define RB_BACKSTOP_PINGS 10
/* Error items kept per execution (the runner's and one of runboxd's own); more are a flood. */
#define EXECUTION_ERRORS_MAX 2
/* Traceback lines kept per error item (the first and last halves around a marker). */
#define EXECUTION_TRACEBACK_LINES_MAX 1000
/* Display and clear_output items kept per execution (the runner sends at most 2000). */
#define EXECUTION_DISPLAYS_MAX 2000


typedef struct session session;
typedef struct execution execution;
typedef struct sandbox sandbox;

struct core_watch {
    rb_core *core;
    execution *ex; /* NULL once detached from a live execution */
    core_event_cb cb;
    void *data;
    json_t *pending; /* array of [event, payload] not yet delivered */
    int stopped, queued, in_dispatch;
    core_watch *next_in_ex;    /* execution's watch list */
    core_watch *next_pending;  /* core's dispatch list */
};

struct execution {
    rb_core *core;
    session *s;
    char id[RB_ID_LEN];
    char session_id[RB_ID_LEN];
    char *owner;          /* the session's owner (core_caller.owner; "" without API keys), heap */
    char *actor;          /* the key that asked for it (an admin may run code in a user's session);
                           * NULL: the owner (a restored execution), heap */
    char *code;
    double timeout;
    const char *status;
    int64_t created_at, started_at, completed_at;
    json_t *outputs;      /* finished output items, in order */
    const char *tail_name;/* "stdout"/"stderr" while a stream item is still growing, else NULL */
    rb_buf tail;          /* text of that growing stream item (kept out of jansson: appends are O(1)) */
    json_t *error;        /* error item or NULL */
    size_t stream_bytes;  /* stream text received, for the backstop cap */
    size_t display_bytes;
    int results, errors;  /* result and error items kept so far (at most 1 and EXECUTION_ERRORS_MAX) */
    int displays;         /* display and clear_output items kept so far (at most EXECUTION_DISPLAYS_MAX) */
    int truncated, reset;
    int64_t dropped;
    char *reset_reason;
    int64_t duration_ms;  /* -1 until done */
    json_t *network;      /* {reached, refused} of its session's egress proxy while it ran, or NULL (core/network/) */
    json_t *files_written;/* [{path, size, modified (ms)}] from the runner's done event, or NULL (files.c) */
    json_t *policy_rules; /* code policy rule names the runner checks the cell against, or NULL (core/policy/) */
    int restart;          /* not code: a fresh interpreter in place of the session's (Jupyter's restart) */
    json_t *context;      /* {id, language, cwd} of the context it runs in (contexts.c), or NULL: the session's own */
    json_t *env;          /* environment variables for this execution only, or NULL */
    uv_timer_t *backstop;
    int backstop_pings;   /* pings sent at the backstop (RB_BACKSTOP_PINGS) */
    int backstop_waiting; /* one of them not answered yet */
    core_watch *watches;
    execution *next;      /* session queue */
};

struct session {
    rb_core *core;
    char id[RB_ID_LEN];
    char language[CORE_LANGUAGE_LEN];
    char *owner;          /* the API key that created it (core_caller.owner), "" without keys; heap */
    const char *status;   /* "starting" "ready" "busy" "ended" "dead" */
    char *end_reason;
    int64_t created_at, last_used_at, ended_at;
    json_t *options;      /* normalised execution_options */
    double timeout;
    int64_t memory_bytes;
    double cpus;
    int pids_limit;       /* sandbox limits (parse_session_opts; the server's defaults unless asked) */
    int64_t workspace_bytes, tmp_bytes;
    json_t *net_policy;   /* its network policy {"allow", "deny"} (core/network/), or NULL: no network at all */
    char *egress_net;     /* the internal network its sandbox joins (core/network/egress.h), or NULL */
    int custom_sandbox;   /* a limit above differs from the server's default: no warm pool container fits */
    char isolation[16];   /* "container" or "gvisor" (core/isolation/), in options too */
    int executions;
    int dirty;            /* changed since last stored: execution_finish leaves the write to the sweep */
    json_t *dependencies; /* normalised requirement list asked at creation, or NULL (core/deps/) */
    int deps_installing;  /* the creation-time install has started */
    core_op *deps_op;     /* that install while it runs (cancelled by session_end) */
    char *container_id;
    sandbox *sb;
    core_op *create_op;
    execution *queue_head, *queue_tail;
    int queued;
    execution *running;
    struct core_process *procs; /* commands running beside the interpreter (process.c) */
    int nprocs;
    json_t *extras;       /* a protocol's own data by name (core_session_set_extra), or NULL */
    json_t *contexts;     /* [{id, language, cwd}] made with core_context_create (contexts.c), or NULL */
    int64_t deadline;     /* epoch ms at which the session ends whatever it does (0: none) */
    char *engine_down;    /* why its Docker engine did not answer the last probe (several engines), or NULL */
    /* pause and resume (session_pause.c) */
    int pause;            /* PAUSE_NONE, PAUSE_SUSPENDED (frozen), PAUSE_HIBERNATED (files kept, no sandbox) */
    int64_t paused_at;    /* when it was suspended or hibernated (epoch ms) */
    int pause_was;        /* while "pausing": the pause before the call, which is what is stored until it ends */
    char *kept_volume;    /* hibernated: the volume that keeps its workspace (core/workspace/), or NULL */
    int incarnation;      /* sandboxes made for it after the first (each resumed hibernation): names them */
    char *place_with;     /* a new sandbox goes on the engine of this container or volume, or NULL */
    int64_t deadline_span;/* ms from when its deadline was last set to it: a resume sets it again so far ahead */
    int deadline_pause;   /* what its deadline does: PAUSE_NONE ends it, else pauses it so (E2B's autoPause) */
    int forking;          /* forks copying its workspace (session_fork.c): a pause waits for them */
    int fork_pending;     /* a fork's new session whose files are not all copied yet (stored: a restart ends it) */
    char *fork_pending_from; /* then the source's id, or NULL */
    int fresh_interpreter;/* resumed from hibernation: its next execution says the interpreter was reset */
    struct pause_waiter *waiters; /* callers of the pause or resume in flight */
    struct session_change *changes; /* changes waiting for the one in flight (session_freeze.c) */
};

enum { PAUSE_NONE, PAUSE_SUSPENDED, PAUSE_HIBERNATED };

struct rb_core {
    uv_loop_t *loop;
    const core_settings *cfg;
    store *st;
    backend *be;          /* the sandbox backend (backend.h), owned */
    char instance[RB_ID_LEN];
    rb_map sessions;      /* live sessions (not ended) by id */
    rb_map executions;    /* queued and running executions by id */
    int docker_ok, recovered, probing;
    int probed;           /* the first Docker probe has answered (until then, creates are tried) */
    char docker_error[RB_ERR_LEN];
    char api_version[32]; /* the engine API version the last successful probe reported */
    uv_timer_t *probe_timer, *sweep_timer, *checkpoint_timer, *dispatch_timer;
    core_watch *pending_head, *pending_tail;
    int closing;
    int pending_ops;      /* Docker work a graceful stop waits for: container creates and removals in flight */
    int starts_inflight;  /* container starts sent to the engine (sandbox.c: at most SANDBOX_START_PARALLEL) */
    struct sandbox *start_head, *start_tail; /* created containers waiting for a start slot, in order */
    rb_map removals;      /* containers whose removal failed, to retry (removal.c): id or name -> struct removal */
    struct pool *pool;    /* warm sandboxes (pool.c) */
    struct policy *policy;/* the optional code policy (core/policy/) */
    stats_counters stats; /* what GET /metrics counts (stats.c) */
    void *rooms[CORE_ROOMS]; /* the state of core's rooms (core/heart.h: core_heart_room) */
    int64_t last_volume_sweep; /* when unused workspace volumes were last looked for (removal.c) */
    int recovery_removals; /* removals of the recovery at start not yet ended (removal.c) */
    int recovery_sweep_waiting; /* core__recovery_sweep runs when they have */
    int64_t last_prune;   /* when the sweep last pruned the store for --retention (epoch ms; 0: not yet) */
};

/* recovery.c */
/** After a probe: marks the live sessions whose engine does not answer as unavailable, and
 * checks those whose engine is back: their sandbox goes on if it still runs, else the session
 * ends dead with the reason. */
void core__engines_checked(rb_core *c);
/** The sweeps of volumes no live session needs (kept workspaces, volumes whose creation a
 * restart cut short, workspace volumes): once the recovery's removals have ended. */
void core__recovery_sweep(rb_core *c);

/* heart.c */
/** Fills *out with s as a room sees it (core/heart.h; the pointers borrow from s). */
void core__session_view(const session *s, core_session_view *out);

/* session.c */
/** The API object of s ({session_id, language, status, created_at, ..., expires_at}; new
 * reference), derived from its stored document so that live and ended sessions look alike. */
json_t *session_to_api(const session *s);
/** The document stored for s (times as epoch ms; new reference). */
json_t *session_to_doc(const session *s);
/** The API object of a stored session document (doc is borrowed; new reference). */
json_t *session_doc_to_api(rb_core *c, json_t *doc);
/** A session rebuilt from its stored document after a restart (not yet in the live map, no
 * sandbox); NULL when doc lacks a usable session_id. The caller owns it (session_free). */
session *session_from_doc(rb_core *c, json_t *doc);
/** Writes s's document to the store now and clears its dirty flag; a store failure is logged
 * (the in-memory state stays authoritative). */
void session_persist(session *s);
/** Frees s's memory (cancelling its dependency install's callback); the caller has already
 * unlinked it from the maps and closed its sandbox. Accepts NULL. */
void session_free(session *s);
/** Ends s: cancels its queue, fails its running execution with reason, closes the sandbox,
 * removes the container in the background, persists and drops it from the live map. */
void session_end(session *s, const char *status, const char *reason);
/** Starts the next queued execution if the session is idle and its sandbox ready. */
void session_pump(session *s);
/** The runner answered the backstop's ping (sandbox_probe): the running execution gets another
 * RB_BACKSTOP_EXTRA_MS. */
void session_backstop_pong(session *s);

/* session_freeze.c */
/** Freezes (on != 0) or thaws container like backend_pause, trying again a few times with a wait
 * on the loop when the freezer gives up on busy processes (RB_EBUSY). After the last try cb gets
 * RB_EUNAVAILABLE with the cause, the sandbox thawed. RB_ECANCELED (cb not called) once core_free
 * has begun. Every freeze of a session's sandbox goes through here. */
rb_err core__freeze(rb_core *c, const char *container, int on, backend_cb cb, void *data, char *err);
/** Runs a change of s (a pause, resume or fork copy) now or after the changes before it. */
typedef void (*core_change_fn)(session *s, void *data);
/** A waiting change whose session ended first: data is answered with reason and freed. */
typedef void (*core_change_drop_fn)(void *data, const char *reason);
/** Whether a change of s is in flight (status "pausing" or "resuming", or a fork copying). */
int core__change_busy(const session *s);
/** 0 when nothing of s is in flight or waiting (the caller starts its change now); else queues
 * start(s, data) behind them and returns 1 (drop(data, reason) if s ends first). */
int core__change_add(session *s, core_change_fn start, core_change_drop_fn drop, void *data);
/** A change ended: the next waiting ones start on the next turn of the loop. */
void core__change_kick(rb_core *c);
/** Drops s's waiting changes with reason (session_end). */
void core__changes_end(session *s, const char *reason);
/** Cancels the freezes waiting to try again (core_free, after the backend). */
void core__freeze_dispose(rb_core *c);

/* session_pause.c */
/** Resumes s (suspended or hibernated) for an execution queued on it: the queue runs once it is
 * ready again; a failure fails the queued executions. Nothing if a resume is in flight. */
void core__resume_for_queue(session *s);
/** The idle timeout's action on s (--idle-action): suspend or hibernate it, or hibernate a
 * suspended one idle as long again; ends a hibernated one past --hibernate-retention. Returns 1
 * if it acted (or s needs nothing), 0 when the caller should end s as before. */
int core__pause_idle(session *s, int64_t now);
/** Its deadline passed and it pauses instead of ending (deadline_pause): starts the pause when s
 * can be paused (the deadline is then cleared), else leaves it for the next sweep. */
void core__pause_for_deadline(session *s);
/** After a restart: whether the kept volume of session_id is still needed (workspace_sweep). */
int core__kept_wanted(rb_core *c, const char *session_id, const char *volume);
/** Frees what resumes in flight hold (core_free). */
void core__pause_dispose(rb_core *c);
/** Fails every pause and resume waiter of s with reason (session_end). */
void core__pause_session_end(session *s, const char *reason);
/** A live session of who's key like session_id's, placed near container (or volume) near, from
 * opts as POST /sessions takes them (core.c). */
rb_err core__session_create_near(rb_core *c, const core_caller *who, json_t *opts, const char *near, core_cb cb,
                                 void *data, core_op **handle, char *err);

/* extras.c */
/** Ends every live session whose deadline (core_session_set_deadline) is at or before now. */
void core__end_past_deadline(rb_core *c, int64_t now);

/* caller.c: callers (core_caller): who may see what, and the quotas of their keys */
/** The live session session_id if who may see it, else NULL. */
session *core__session_of(rb_core *c, const core_caller *who, const char *session_id);
/** Whether session_id is no longer live but stored as one of who's: then err holds e and words
 * that say so (its status, when it ended and the reason the store keeps, e.g. the sandbox's exit
 * code). Another key's, or an unknown id: 0, err untouched. */
int core__session_ended(rb_core *c, const core_caller *who, const char *session_id, rb_err e, char *err);
/** The live session session_id if who may see it; else NULL with RB_ENOTFOUND in err, whose words
 * say why when it has ended (core__session_ended), and otherwise that no such session lives
 * (another key's reads as unknown). */
session *core__live_session(rb_core *c, const core_caller *who, const char *session_id, char *err);
/** The live (queued or running) execution request_id if who may see it, else NULL. */
execution *core__execution_of(rb_core *c, const core_caller *who, const char *request_id);
/** Whether who may see a stored session or execution document (its "owner"). */
int core__doc_visible(const core_caller *who, json_t *doc);
/** Reads the stored document of session session_id into *doc (new reference) if who may see it:
 * RB_ENOTFOUND for another key's, like an unknown id, or the store's error (err then says why). */
rb_err core__stored_session(rb_core *c, const core_caller *who, const char *session_id, json_t **doc, char *err);
/** RB_EQUOTA when who's key already has its limit of live sessions (none without keys or limit). */
rb_err core__check_session_quota(rb_core *c, const core_caller *who, char *err);
/** RB_EQUOTA when who's key already has its limit of queued + running executions (none without
 * keys or limit). */
rb_err core__check_execution_quota(rb_core *c, const core_caller *who, char *err);

/* execution.c */
/** A new queued execution of code (copied) in s with timeout seconds and a fresh e_ id; not yet
 * in any map or queue. The caller owns it until execution_finish. */
execution *execution_new(rb_core *c, session *s, const char *code, double timeout);
/** Frees ex and closes its backstop timer (its watches must be gone). Accepts NULL. */
void execution_free(execution *ex);
/** {request_id, session_id, status, created_at, started_at, completed_at} of a live execution
 * (new reference). */
json_t *execution_status_api(const execution *ex);
/** The API status object of a stored execution document (doc borrowed; new reference). */
json_t *execution_doc_status_api(json_t *doc);
/** The API result document of a stored execution document (doc borrowed; new reference). */
json_t *execution_doc_result_api(json_t *doc);
/** The document stored for ex: status, times, outputs, error, flags (new reference). */
json_t *execution_to_doc(const execution *ex);
/** All output items so far, including the growing stream item (new reference). */
json_t *execution_outputs(const execution *ex);
/** Marks ex running now and tells its watchers ("status" event). */
void execution_set_running(execution *ex);
/** Adds a runner event (stream/display/result/error) to the outputs and tells watchers. */
void execution_add_event(execution *ex, json_t *event);
/** Finishes: status, persists (with the session in one transaction), delivers "done",
 * unlinks from maps and frees. */
void execution_finish(execution *ex, const char *status, const char *reset_reason, int reset);
/** Finishes with an error item {ename, evalue}. */
void execution_fail(execution *ex, const char *status, const char *ename, const char *evalue, int reset,
                    const char *reset_reason);
/** Queues event (payload borrowed, a reference is kept) for w and schedules delivery on the
 * loop; nothing is delivered from inside this call. Does nothing once w is stopped. */
void watch_emit(core_watch *w, const char *event, json_t *payload);
/** watch_emit to every watch of ex. */
void watches_emit(execution *ex, const char *event, json_t *payload);
/** Starts the zero-delay timer that delivers queued watch events, unless it is running or the
 * core is closing. */
void watch_dispatch_schedule(rb_core *c);

/* sandbox.c: a session's container and its attach stream; sandbox_runner.c: the runner protocol
 * over that stream (sandbox_execute, sandbox_interrupt). */
typedef void (*sandbox_ready_cb)(session *s, rb_err err, const char *msg);
/** Creates and starts a container for s, attaches, handshakes; cb once. */
rb_err sandbox_create(session *s, sandbox_ready_cb cb, char *err);
/** Re-attaches to an existing container (after a restart); cb once. */
rb_err sandbox_reattach(session *s, sandbox_ready_cb cb, char *err);
/** Attaches again to the sandbox of s if its stream was lost while its engine did not answer
 * (several engines); nothing when its stream is open. */
rb_err sandbox_resume(session *s, char *err);
/** Owner callback of a warm pool sandbox (no session): err == RB_OK once it is ready; an error
 * when it failed to start or (after ready) its runner stopped. After an error the owner must
 * sandbox_close(sb, 1) it. Never called after sandbox_claim or sandbox_close. */
typedef void (*sandbox_pool_cb)(void *data, sandbox *sb, rb_err err, const char *msg);
/** Creates and starts a container of the default profile for language, labelled
 * runbox.session=pool, attaches and handshakes; reports through cb. *out is owned by the caller
 * (close it with sandbox_close). */
rb_err sandbox_create_pooled(rb_core *c, const char *language, const char *isolation, sandbox_pool_cb cb, void *data, sandbox **out,
                             char *err);
/** Binds a ready pool sandbox to s (sets s->sb and s->container_id) and pings its runner; cb(s)
 * runs once with the outcome, like sandbox_create's. On a synchronous error nothing changed
 * and the caller still owns sb. */
rb_err sandbox_claim(sandbox *sb, session *s, sandbox_ready_cb cb, char *err);
/** The container id (NULL before the container exists); borrowed. */
const char *sandbox_container_id(const sandbox *sb);
/** Sends ex's code to the runner (one cell at a time); its events then reach ex through
 * execution_add_event and its "done" finishes it. RB_ECONFLICT when the sandbox is not ready,
 * or the stream's error when the request cannot be written (ex is then not started). */
rb_err sandbox_execute(sandbox *sb, execution *ex, char *err);
/** Sends a question's line ({"op": "ask", "id", "kind", "content"}, borrowed: core/kernel_ask.c) to
 * the runner; its answer comes back through kernel_ask__answered. RB_ECONFLICT when the sandbox is
 * not ready, or the stream's error. */
rb_err sandbox_ask(sandbox *sb, json_t *line, char *err);
/** Asks the runner to interrupt ex if it is the cell running (a timeout or cancel); the
 * runner answers with ex's done (status cancelled, or reset if it had to kill the worker). */
void sandbox_interrupt(sandbox *sb, execution *ex);
/** Pings the runner of a ready sandbox while a cell runs; its pong reaches
 * session_backstop_pong. The stream's error when the ping cannot be written. */
rb_err sandbox_probe(sandbox *sb, char *err);
/** Asks the runner to end the worker of context id (contexts.c); nothing when not connected. */
void sandbox_close_context(sandbox *sb, const char *id);
/** Closes the stream; removes the container when remove != 0. Frees sb. */
void sandbox_close(sandbox *sb, int remove);
/* ---- removal.c ---- */
/** Removes a container (by id or name) in the background, counted by core_pending until the
 * engine answers; a failure is logged and the removal tried again after the next successful
 * probe of the engine (removal_retry_all), where "no such container" counts as "not there yet"
 * missing_tries more times (a create the engine may still carry out); the next start's recovery
 * removes whatever is left. */
void removal_start(rb_core *c, const char *id, int missing_tries);
/** removal_start for a container the recovery at start found: the volume sweeps of the start
 * (core__recovery_sweep) wait until every such removal has ended, since the container may hold
 * a volume (a copier cut short by a restart holds the kept workspace it was writing). */
void removal_start_recovery(rb_core *c, const char *id);
/** The recovery's listing is done: runs core__recovery_sweep now, or once the last
 * removal_start_recovery has ended. */
void removal_recovered(rb_core *c);
/** Starts again the removals that failed (the engine did not answer, or a container whose
 * create failed may still surface); those failing again wait for the next call. Returns how
 * many were started. Called after each successful probe of the engine (recovery.c). */
int removal_retry_all(rb_core *c);
/** Frees the removals still waiting (core_free). */
void removal_drop_all(rb_core *c);
/** Removes this instance's workspace volumes that no container uses (left when a helper held one
 * as its sandbox was removed); at most once per 30 s (now: epoch ms), with the kept workspaces
 * no session needs (removal_sweep_kept); or at once (now < 0: a graceful stop, which waits for
 * it, or the start), without them. */
void removal_sweep_volumes(rb_core *c, int64_t now);
/** Removes the kept workspaces (core/workspace/) that no session needs: neither a hibernated
 * session's, nor one of a session whose hibernation is in flight. */
void removal_sweep_kept(rb_core *c);
/** Non-zero if sb's runner is attached and takes executions. */
int sandbox_ready(const sandbox *sb);

/* kernel_ask.c */
/** The runner's answer (content borrowed; the line was line_bytes long) to question id, if one
 * of c's waits for it; anything else is ignored. content NULL: the runner did not know the op. */
void kernel_ask__answered(rb_core *c, const char *id, json_t *content, size_t line_bytes);
/** Ends the questions waiting with RB_ECANCELED (core_free). */
void kernel_ask__dispose(rb_core *c);

/* process.c */
/** Ends s's processes (session end, core_free): their callers hear RB_ECANCELED with reason;
 * the processes are left to the container's fate. */
void process_session_end(session *s, const char *reason);

/* contexts.c */
/** The context an execute request names ("context": an id, "default", or a language's name;
 * "language": that language's default context): *spec is the runner's {id, language, cwd} for
 * it (new reference), or NULL for the session's own interpreter (neither named, or the session's
 * language); *language the language the cell runs in. RB_ENOTFOUND for an id the session does not
 * have, RB_EINVAL for a bad field, RB_ECONFLICT for a language that is not the context's. */
rb_err core__context_pick(session *s, json_t *req, json_t **spec, const char **language, char *err);
/* (The request's "env" is checked there too: RB_EINVAL naming what is wrong, RB_ETOOBIG past 256 KiB.) */
/** The same, after its checks: sets ex->context and ex->env (new references) from req, which
 * core__context_pick accepted for ex->s. */
void core__context_apply(execution *ex, json_t *req);

/* validate.c: request validation (messages name the field; core__check_keys is in core/heart.h,
 * for the rooms too) */
/** Reads a timeout in seconds from v into *out: RB_EINVAL naming field unless v is a number
 * greater than 0 and at most the server's max-timeout. */
rb_err core__check_timeout(const rb_core *c, json_t *v, const char *field, double *out, char *err);
/** Whether v is a whole number as JSON Schema's "integer" means it (an integer, or a real with
 * no fraction such as 64.0 or 1e30); its value goes to *out. */
int core__whole_number(json_t *v, double *out);
/** Parses a size given by a caller: a positive whole number (bytes) or a string such as "512m",
 * "1.5g", "256MiB", "1048576" (openapi.yaml's pattern). Returns 0 with *out in bytes (INT64_MAX
 * for sizes of 9e18 bytes or more: the caller's range check refuses them), or -1 for anything
 * else. */
int core__parse_size(json_t *v, int64_t *out);
/** Sets s's sandbox limits (memory, CPUs, processes, workspace and /tmp sizes) from its stored
 * options after a restart, the server's defaults for what is missing: a sandbox made for it again
 * (a resume from hibernation) has the limits it was created with. */
void core__session_limits_restore(rb_core *c, session *s);
/** Fills s's language, options and limits from a POST /sessions body. */
rb_err core__parse_session_opts(rb_core *c, const core_caller *who, session *s, json_t *opts, char *err);

/* recovery.c: the Docker probe and re-adoption of containers after a restart */
/** (Re)arms the Docker probe to run in ms milliseconds; the probe pings the engine, records
 * whether it answers (core_health) and, on the first answer, recovers the stored sessions. */
void core__probe_start(rb_core *c, uint64_t ms);
/** Brings the next probe forward to within a couple of seconds (unless one is due sooner or
 * in flight): removals waiting for a retry go after it (removal_retry_all). */
void core__probe_soon(rb_core *c);

/* core.c */
/** Sets obj[key] to epoch milliseconds ms as an integer, or to null when ms <= 0 (not yet or
 * never: the form of optional times in stored documents). */
void core_json_ms(json_t *obj, const char *key, int64_t ms);
/** The server's default sandbox memory in bytes (settings memory_mb). */
int64_t core_default_memory(const rb_core *c);

#endif

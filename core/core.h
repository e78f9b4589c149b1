/*
 * core: the session manager. Owns every rule of runbox: session lifecycle (create, claim,
 * expire, delete, recover after restart), executions (queue of one at a time per session,
 * timeouts, interrupts, output caps), and what is persisted when. REST and MCP handlers in
 * server/ call only this interface; it never sees HTTP, JSON-RPC, SQL or curl.
 *
 * Data crosses this interface as jansson values shaped exactly as the public API documents
 * them (openapi.yaml), so protocol layers only encode. Ownership: json_t arguments are
 * borrowed; json_t written to out-parameters or passed to callbacks are new references the
 * receiver must json_decref. Everything runs on the one libuv loop given to core_new.
 *
 * Errors: functions return rb_err with text in err[RB_ERR_LEN] meant for the end user (what
 * was wrong and how to fix it). Async calls follow the libuv contract: synchronous failure
 * means no callback; otherwise the callback runs exactly once, never from inside the call.
 */
#ifndef RB_CORE_H
#define RB_CORE_H

#include <string.h>

#include <jansson.h>
#include <uv.h>

#include "base/base.h"
#include "core/settings.h"

typedef struct rb_core rb_core;

/** Opens the store at cfg->db_path, recovers state (marks unfinished executions as failed
 * with "server restarted", re-attaches to live containers of stored sessions, removes
 * containers labelled as runbox's that no session owns) and starts background timers.
 * cfg is borrowed and must outlive the core. Docker being unreachable is not an error:
 * core keeps retrying and reports it in core_health. */
rb_err core_new(uv_loop_t *loop, const core_settings *cfg, rb_core **out, char *err);
/** Number of Docker operations a graceful stop waits for (container creates and removals in
 * flight; a container whose create answers after core_stop is removed then). A graceful
 * shutdown runs the loop until this is 0 (or a deadline passes) before core_free, which
 * cancels what is left; containers left behind are removed at the next start. */
int core_pending(const rb_core *c);
/** Begins a graceful shutdown: stops refilling the warm pool and removes its containers in the
 * background (counted by core_pending). Run the loop until core_pending is 0, then core_free.
 * Sessions and their containers are kept. Idempotent. */
void core_stop(rb_core *c);

/** Stops timers, closes attach streams and the store. Containers are left running so that
 * sessions survive a restart. Run the loop afterwards until its handles have closed. Accepts NULL. */
void core_free(rb_core *c);

struct backend;
/** core_new with the sandbox backend be (core/backend/backend.h) instead of the Docker engine at
 * cfg->docker_socket, or that default when be is NULL: how a daemon plugs in another backend.
 * The core owns be from the call on, even when it fails (then be is freed). */
rb_err core_new_with_backend(uv_loop_t *loop, const core_settings *cfg, struct backend *be, rb_core **out, char *err);

/*
 * Callers. Every call that names a session, an execution or a file takes `who`: the API key
 * that asks (server/auth.h maps an Authorization header to one). Sessions, their executions and
 * files belong to the key that created the session; another key gets RB_ENOTFOUND, exactly as
 * for an id that does not exist, so ids cannot be probed. who == NULL is the runboxd without
 * API keys: one trusted caller that sees everything. Quotas (0 = none) are checked when a
 * session is created and when an execution is queued: RB_EQUOTA names the key and the limit.
 */
typedef struct core_caller {
    const char *owner;  /* the key's name ("" never matches a key) */
    int max_sessions;   /* live sessions of this key at once */
    int max_executions; /* queued + running executions of this key at once */
    const char *egress; /* the most this key's sessions may reach (host patterns, comma-separated;
                           "none": no network), or NULL/"": the server's --egress-max */
    const char *shares; /* the shared folders this key's sessions may mount (core/shares/): names,
                           comma-separated, or "*" (all); NULL, "" or "none": none */
    const char *isolation; /* the isolations this key's sessions may have (core/isolation/):
                              "container,gvisor", "*"; NULL or "": every one */
    int role;           /* CORE_ROLE_*: what the key may see and do beyond its own sessions */
} core_caller;

/** A key's role (role= in the keys file; docs/security.md, "Roles"). A user sees and changes its
 * own sessions; an admin sees and ends every key's sessions, drains engines and reloads the
 * keys; a viewer sees every key's sessions and changes nothing (the server refuses its writes). */
enum { CORE_ROLE_USER = 0, CORE_ROLE_ADMIN = 1, CORE_ROLE_VIEWER = 2 };

/** Checks a key's egress limit (core_caller.egress): "none", "*" or host patterns. RB_EINVAL
 * naming the bad pattern otherwise. */
rb_err core_egress_limit_check(const char *list, char *err);

/** Reads --secrets-file again (SIGHUP; docs/network.md, "Secrets"): the next request of each
 * session's proxy uses the new values, and none of a secret no longer there. RB_ENOTFOUND when
 * runboxd has no --secrets-file; RB_EINVAL naming the line (never a value): nothing changes.
 * *n: the secrets in force. */
rb_err core_reload_secrets(rb_core *c, size_t *n, char *err);

/** Checks a key's shares= value (core_caller.shares): "none", "*" or share names. RB_EINVAL
 * naming the bad name otherwise. */
rb_err core_shares_key_check(const char *list, char *err);

/** Checks a key's isolation= value (core_caller.isolation): "*" or isolations joined by ','.
 * RB_EINVAL naming the bad word otherwise. */
rb_err core_isolation_key_check(const char *list, char *err);

/*
 * The audit trail (core/audit/audit.h; docs/security.md, "Audit trail"): what each key did.
 */
/** What core_audit_query selects: NULL or 0 selects everything of that kind. */
typedef struct core_audit_filter {
    const char *key, *session, *kind;
    int64_t since, until; /* epoch ms: since <= at < until (until 0: now) */
    int64_t after;        /* the events after this seq (the "next" of the page before) */
    int limit;            /* 1..1000 (0: 100) */
} core_audit_filter;
/** {events: [{seq, at (RFC 3339), key, session?, kind, ...}], next: seq or null} of the events q
 * selects, oldest first; next is the seq to ask after for the following page (null at the end).
 * Only admin and viewer keys (and the trusted caller without keys) may read it: RB_EFORBIDDEN
 * naming the role for a user key. */
rb_err core_audit_query(rb_core *c, const core_caller *who, const core_audit_filter *q, json_t **out, char *err);

/** Whether who may see something that belongs to owner (NULL owner: ""): its own, or anything for
 * an admin or viewer (and for NULL: the one trusted caller of a server without keys). */
int core_caller_owns(const core_caller *who, const char *owner);

/** Callback for async calls: on success err == RB_OK and body is the JSON answer (owned by
 * the callee: json_decref it); on failure body is NULL and msg explains. */
typedef void (*core_cb)(void *data, rb_err err, const char *msg, json_t *body);

/*
 * Sessions. A session object: {session_id, language, status, created_at, last_used_at,
 * expires_at, execution_options: {timeout, memory_limit, cpu_limit, environment_variables},
 * executions: count, container_id}; times are RFC 3339 strings.
 * status: "starting" | "ready" | "busy" | "ended" | "dead".
 */

/** The languages a session may run: "python", "bash", "javascript" and "typescript". */
#define CORE_LANGUAGES_TEXT "\"python\", \"bash\", \"javascript\" or \"typescript\""
/** Longest language name, with its NUL. */
#define CORE_LANGUAGE_LEN 16
/** Whether l (NULL allowed) names a language a session may run (CORE_LANGUAGES_TEXT); inline,
 * so that the server's unit tests with a fake core have it too. */
static inline int core_language_known(const char *l)
{
    return l != NULL && (strcmp(l, "python") == 0 || strcmp(l, "bash") == 0 || strcmp(l, "javascript") == 0 ||
                         strcmp(l, "typescript") == 0);
}

/*
 * Code contexts (contexts.c): interpreters of their own (language, variables, working directory)
 * in one session's sandbox. Every session has a default context per language, whose id is the
 * language's name (the session's own language's is its interpreter; "default" names it too);
 * created ones have ids "ctx_...". A context object: {id, language, cwd (null: the sandbox's
 * working directory), default}. An execution picks one with "context" or "language".
 */
/** Contexts a session may have beside its default ones. */
#define CORE_CONTEXTS_MAX 8
/** [context objects] of session_id: the default ones (the session's language first), then those
 * created, oldest first. RB_ENOTFOUND for an unknown or another key's session. */
rb_err core_context_list(rb_core *c, const core_caller *who, const char *session_id, json_t **out, char *err);
/** Creates a context from req {language? (python), cwd? (absolute path)}; *out its object.
 * RB_EINVAL naming the field, RB_ECONFLICT past CORE_CONTEXTS_MAX, RB_ENOTFOUND for the session.
 * Its interpreter starts with its first execution (or a restart). */
rb_err core_context_create(rb_core *c, const core_caller *who, const char *session_id, json_t *req, json_t **out,
                           char *err);
/** Removes a created context and ends its interpreter (a cell it runs ends cancelled). RB_ENOTFOUND
 * for an id the session does not have, RB_ECONFLICT for a default context (restart it instead).
 * A restart is an execution: core_execute with "restart": true and "context". */
rb_err core_context_remove(rb_core *c, const core_caller *who, const char *session_id, const char *context_id,
                           char *err);

/** A pending asynchronous operation, owned by core; see core_cancel. */
typedef struct core_op core_op;

/** Creates a session: opts is the POST /sessions body ({language?, execution_options?}),
 * validated here (RB_EINVAL says which field). Answers with the session object once its
 * sandbox is ready. RB_EUNAVAILABLE when Docker is unreachable, RB_EBUSY at max_sessions.
 * *handle (may be NULL) lets the caller detach with core_cancel if it goes away. */
rb_err core_session_create(rb_core *c, const core_caller *who, json_t *opts, core_cb cb, void *data, core_op **handle, char *err);
/** Detaches the callback of a pending operation (the work itself goes on; cb never runs). */
void core_cancel(core_op *op);

/** The session object of session_id, live or ended (*out a new reference); RB_ENOTFOUND for an
 * unknown id (or one past retention). */
rb_err core_session_get(rb_core *c, const core_caller *who, const char *session_id, json_t **out, char *err);
/** {sessions: [...]} of who's live sessions (not ended). */
rb_err core_session_list(rb_core *c, const core_caller *who, json_t **out, char *err);
/** Ends a session: interrupts and cancels its executions, removes its container (in the
 * background), keeps its results readable. Answers with the ended session object.
 * RB_ENOTFOUND for unknown or already ended sessions. */
rb_err core_session_delete(rb_core *c, const core_caller *who, const char *session_id, json_t **out, char *err);

/*
 * A protocol's own per-session data (core/extras.c): E2B keeps a sandbox's access token,
 * template and metadata this way. Extras are stored with the session (they survive a
 * restart) but are never part of the session object REST and MCP show. Only live sessions
 * (not ended) have them; an ended or unknown session, or another key's, is RB_ENOTFOUND.
 */
/** *out: a new reference to the value stored under name, or NULL when there is none. */
rb_err core_session_extra(rb_core *c, const core_caller *who, const char *session_id, const char *name, json_t **out,
                          char *err);
/** Stores value (borrowed; copied) under name, replacing what was there; NULL removes it. */
rb_err core_session_set_extra(rb_core *c, const core_caller *who, const char *session_id, const char *name, json_t *value,
                              char *err);
/** Ends the session at deadline_ms (epoch ms), busy or not, with a reason saying so; 0 removes
 * the deadline (the idle timeout alone applies). *session_id's deadline is shown as its
 * expires_at when it comes before the idle expiry. */
rb_err core_session_set_deadline(rb_core *c, const core_caller *who, const char *session_id, int64_t deadline_ms,
                                 char *err);
/** What the deadline does to session_id: "end" (the default), or "suspend" / "hibernate" it
 * (E2B's autoPause; the deadline is then cleared, and set again by whoever resumes it). */
rb_err core_session_set_deadline_action(rb_core *c, const core_caller *who, const char *session_id,
                                        const char *action, char *err);
/** The deadline of a live session (0: none). */
rb_err core_session_deadline(rb_core *c, const core_caller *who, const char *session_id, int64_t *deadline_ms, char *err);

/*
 * Executions. Request body: {session_id, code, timeout?, disabled_rules?}. Answer (queued):
 * {request_id, session_id, status, created_at}.
 * status: "queued" | "running" | "completed" | "error" | "timeout" | "cancelled".
 */
rb_err core_execute(rb_core *c, const core_caller *who, json_t *req, json_t **out, char *err);
/** {request_id, session_id, status, created_at, started_at, completed_at} (null when not yet). */
rb_err core_execution_status(rb_core *c, const core_caller *who, const char *request_id, json_t **out, char *err);
/** The full result document: status fields plus {outputs, stdout, stderr, result, error,
 * files, duration_ms, output, truncated, reset}. For a queued/running execution it holds what
 * has been produced so far. */
rb_err core_execution_results(rb_core *c, const core_caller *who, const char *request_id, json_t **out, char *err);
/** {session_id, executions: [results, oldest first]} of the newest limit (0: 50; at most 500)
 * executions of a session who may see, live or ended; RB_ENOTFOUND as for core_session_get. */
rb_err core_session_executions(rb_core *c, const core_caller *who, const char *session_id, int limit, json_t **out,
                               char *err);
/** Interrupts a running execution or cancels a queued one; answers with its status object.
 * RB_ECONFLICT if it has already finished. */
rb_err core_execution_cancel(rb_core *c, const core_caller *who, const char *request_id, json_t **out, char *err);

/*
 * Watching an execution (for wait=true, SSE, MCP progress). Events, in order:
 *   "output": one output item as it is produced ({type:"stream",name,text} |
 *             {type:"display",mime,data,bundle,metadata,display_id?,update?} |
 *             {type:"clear_output",wait} | {type:"result",text,bundle?,metadata?} |
 *             {type:"error",...}; core_output_bundle reads the bundle of a display or result);
 *   "status": {request_id,status} when it changes (queued -> running);
 *   "done":   the full result document; the last event, after which the watch is finished
 *             and must not be stopped again.
 * With replay != 0, output already produced is sent first. Events are delivered on the loop,
 * never from inside core_watch_start or core_watch_stop. payload is borrowed (valid during the
 * call only).
 */
typedef struct core_watch core_watch;
/**
 * The Jupyter mime bundle of an output item (a display or a result, borrowed) as the Jupyter
 * messaging protocol carries it: {mime: value}, base64 for binary formats, application/json and
 * the other +json formats parsed into JSON values (one whose text does not parse stays a
 * string). A result without a bundle gives {"text/plain": text}; a display stored before
 * bundles, {mime: data}. New reference; an empty object for any other item.
 */
json_t *core_output_bundle(json_t *item);
typedef void (*core_event_cb)(void *data, const char *event, json_t *payload);
/** Starts watching request_id (live or stored): events go to cb with data until "done" or
 * core_watch_stop. *out (if out is not NULL; owned by the core) is valid until then.
 * RB_ENOTFOUND for an unknown request_id; a store error as the store reports it. A finished
 * execution delivers its replay (if asked) and "done" on the next loop turn. */
rb_err core_watch_start(rb_core *c, const core_caller *who, const char *request_id, int replay, core_event_cb cb, void *data,
                        core_watch **out, char *err);
/** Stops a watch before its "done"; no event is delivered after this returns. */
void core_watch_stop(core_watch *w);

/** The optional code policy for GET /policy: {enabled, mode ("off"|"default"|"strict"|"custom"),
 * rules: [{name, description, overridable}], overridable, note} (new reference). Executions
 * take `disabled_rules: [rule names]` (or ["all"]) to turn off rules the operator lets callers
 * turn off; a cell that breaks an active rule ends with status "error" and an error item with
 * ename "PolicyViolation" naming the rule and the line, and nothing of it runs. */
json_t *core_policy(rb_core *c);

/** This runboxd's instance id (kept in the store across restarts): every container, volume and network it
 * makes carries the label runbox.instance=<it>. Borrowed, valid for the core's life. */
const char *core_instance(const rb_core *c);

/** {status: "ok"|"degraded", version, instance, docker: {reachable, api_version, error?},
 * sessions: {live, busy}, executions: {running, queued},
 * pool: {size, ready, starting, hits, misses}} (pool: warm sandboxes not yet bound to a session). */
json_t *core_health(rb_core *c);

/** Pauses a live session (core/session_pause.c, docs/data.md): body is empty or {"mode":
 * "suspend" | "hibernate"} (default suspend). suspend freezes its sandbox (memory kept, CPU
 * released); hibernate keeps its files on disk and removes its sandbox (memory released; the
 * interpreter restarts on resume). Answers the session object with "pause": {mode, memory,
 * files, ms[, workspace_bytes]}; RB_ECONFLICT while an execution runs or it is not ready. */
rb_err core_session_pause(rb_core *c, const core_caller *who, const char *session_id, json_t *body, core_cb cb,
                          void *data, core_op **handle, char *err);
/** Resumes a suspended or hibernated session (an execution does too): answers the session object
 * with "resume": {from, interpreter ("kept" or "restarted"), ms}; a running session is answered
 * as it is. */
rb_err core_session_resume(rb_core *c, const core_caller *who, const char *session_id, json_t *body, core_cb cb,
                           void *data, core_op **handle, char *err);
/** Forks a live session (core/session_fork.c): a new session with its language and options and a
 * copy of its /workspace, answered as the new session's object with "fork": {from, interpreter
 * ("fresh"), workspace_bytes, ms}. */
rb_err core_session_fork(rb_core *c, const core_caller *who, const char *session_id, json_t *body, core_cb cb,
                         void *data, core_op **handle, char *err);

/** Changes a live networked session's policy (core/session_network.c): body is {"network": false
 * | true | {"allow": [...], "deny": [...]}} within the operator's limits (RB_EFORBIDDEN names the
 * pattern and the limit). Answers the session once its egress proxy's next connection obeys the
 * new policy; RB_ECONFLICT for a session created without a network. */
rb_err core_session_network(rb_core *c, const core_caller *who, const char *session_id, json_t *body, core_cb cb,
                            void *data, core_op **handle, char *err);

/*
 * Dependencies and packages (core/deps/deps.c). Requirements are strings "name", "name==1.2" (one
 * specifier of == >= <= ~= != > <; no options, URLs, extras or markers), checked against the
 * operator's deps-allow / deps-block policy: RB_EFORBIDDEN names the package and the rule.
 */
/** Installs packages into a running python session: body is {dependencies: [...]} (or
 * {packages: [...]}). Answers {session_id, dependencies (as given to pip), cached (served from
 * the cache without network), site_packages, duration_ms}. pip's own failure (no such package
 * or version, no wheel) is RB_EINVAL with pip's last lines. */
rb_err core_dependencies_install(rb_core *c, const core_caller *who, const char *session_id, json_t *body, core_cb cb, void *data,
                                 core_op **handle, char *err);
/** What the sandbox image has preinstalled: {image, image_id, python, packages: [{name,
 * version}]}; listed once per image id by a short container without network, then cached. */
rb_err core_packages(rb_core *c, core_cb cb, void *data, core_op **handle, char *err);

/**
 * The web-page reader (core/web/web.c; only with settings' web_tool, else RB_ENOTFOUND): opens
 * args.url (http or https) in headless Chromium, in a container of its own whose only way out
 * is an egress proxy that refuses non-public addresses after name resolution, on every redirect
 * and subresource, and answers {url, final_url, title, status, text, truncated, settled,
 * redirects, screenshot? (base64 PNG), refused: [{event, host, port, address, reason}],
 * byte_cap_reached}. args: {url, timeout? (seconds, at most web_timeout), max_chars? (at most
 * web_max_chars), screenshot? (bool)}; RB_EINVAL names a bad one. Errors in cb: RB_EFORBIDDEN
 * (the page's address is refused), RB_ETIMEDOUT, RB_EIO (the page could not be loaded),
 * RB_EUNAVAILABLE (the browser or its image is missing or failed). RB_EBUSY beyond
 * web_max_concurrent reads at once.
 */
rb_err core_page_text(rb_core *c, json_t *args, core_cb cb, void *data, core_op **handle, char *err);
/** Stops (on != 0) or resumes placing new sessions on the Docker engine named engine (with
 * several engines, settings' engines): its sessions go on. *out: {engines: [...]} as in
 * core_health. RB_ENOTFOUND for an unknown engine (any name with one engine only). */
rb_err core_engine_drain(rb_core *c, const char *engine, int on, json_t **out, char *err);

/** Whether the web-page reader is on (settings' web_tool). */
int core_page_text_enabled(const rb_core *c);

/*
 * Shared folders (core/shares/shares.h): folders of the Docker host the operator declares
 * (--share), mounted into a session at creation by execution_options.mounts: [{share, path?,
 * readonly?}] (path under /workspace, default /workspace/NAME; readonly defaults to the share's
 * mode), or by the operator's --default-mounts when the request has no mounts. The session object
 * shows them as execution_options.mounts [{share, path, readonly}].
 */
/*
 * Volumes (core/volumes/volumes.h, docs/data.md): named disk volumes owned by a key, kept until
 * it deletes them, mounted by sessions (execution_options.mounts items {volume, path?, readonly?}).
 * A volume object: {volume_id, name, quota_bytes, used_bytes, over_quota, created_at, measured_at
 * (null before the first measurement), mounted_by: [session ids], engine (several engines only)}.
 */
/** Creates a volume for who from body {name, quota_bytes?}; cb gets its object. RB_EINVAL for a
 * bad name or quota, RB_ECONFLICT for a name who has already, RB_EQUOTA past --max-volumes. */
rb_err core_volume_create(rb_core *c, const core_caller *who, json_t *body, core_cb cb, void *data, char *err);
/** {volumes: [...]}: who's volumes, oldest first (new reference). */
rb_err core_volume_list(rb_core *c, const core_caller *who, json_t **out, char *err);
/** The object of who's volume ref (its id or name); RB_ENOTFOUND otherwise. */
rb_err core_volume_get(rb_core *c, const core_caller *who, const char *ref, json_t **out, char *err);
/** Deletes who's volume ref with its files; cb gets RB_OK and no body once the engine removed it.
 * RB_ECONFLICT naming the sessions while live (or paused) sessions mount it. */
rb_err core_volume_delete(rb_core *c, const core_caller *who, const char *ref, core_cb cb, void *data, char *err);

/*
 * Usage (core/usage/, docs/operations.md): what a live session's sandbox used over time, sampled
 * from its engine every --metrics-interval and kept for the last USAGE_RING_SAMPLES samples. A
 * sample: {timestamp, cpu_pct (percent of one CPU since the sample before), mem_bytes (page cache
 * left out), mem_cache_bytes, mem_limit_bytes, pids, net_rx_bytes, net_tx_bytes (0 without a
 * network)}.
 */
/** {session_id, interval_ms, cpu_limit, workspace_limit_bytes, samples: [...]} of who's live session
 * session_id (paused too; they are not sampled meanwhile), oldest first, those taken at or after
 * since_ms and at or before until_ms (epoch ms; 0: no bound). RB_ENOTFOUND for an unknown, ended or
 * another key's session. */
rb_err core_session_metrics(rb_core *c, const core_caller *who, const char *session_id, int64_t since_ms,
                            int64_t until_ms, json_t **out, char *err);
/** The newest sample of at most max live sessions that who may see (core_caller_owns: a user key
 * its own, an admin or viewer every key's), the most memory first, each with its session_id: a
 * new array; *sampled is how many of those sessions have a sample (may be more than max). */
json_t *core_usage_latest(rb_core *c, const core_caller *who, size_t max, size_t *sampled);

/** Whether the operator declared shares. */
int core_shares_enabled(const rb_core *c);
/** {shares: [{name, readonly, default_path?}]}: the shares who may mount (new reference). */
json_t *core_shares(rb_core *c, const core_caller *who);
/** What a session sees in its mounts: {session_id, mounts: [{share, path, readonly, entries:
 * [{name, path, type, size}], total, more} or {share, path, readonly, error}]}, the entries of
 * each mount's folder (at most 200, sorted by name; more: how many are not shown). Errors as
 * core_file_list's. */
rb_err core_session_mounts(rb_core *c, const core_caller *who, const char *session_id, core_cb cb, void *data,
                           core_op **handle, char *err);

/*
 * Files in a session's /workspace (core/files/files.c), moved with the Docker archive API. path is
 * relative to /workspace ("out/plot.png") or absolute under it ("/workspace/out/plot.png"), in
 * name form (base/codec.h): a name that is not UTF-8 text, or holds control characters or '\',
 * has those bytes as "\xhh" escapes, as listings give them, so every name the kernel allows can
 * be read, written and deleted. Errors: RB_EINVAL for an empty path, raw control characters, a
 * '\' that starts no escape, an escaped '/' or NUL, more than CORE_PATH_MAX_CHARS characters or
 * a name over CORE_NAME_MAX_BYTES; RB_EFORBIDDEN for "..", an absolute path elsewhere, a path
 * that leads outside /workspace through a symlink (or one the sandbox cannot resolve, such as
 * /proc/1/root), what the sandbox's file system denies, or deleting /workspace itself;
 * RB_ENOTFOUND for an unknown session or a missing file; RB_ECONFLICT while the session is not
 * ready (starting, ended) or when the path is a folder (/workspace itself included) where a file
 * is meant; RB_ETOOBIG beyond max-upload / max-download; RB_ENOSPC when the workspace is full.
 * Messages never carry the sandbox's own output. Times are RFC 3339. Async like
 * core_session_create: the callback runs once unless the op is core_cancel'ed.
 */
/* A caller's path: at most this many characters (UTF-8 code points, as openapi.yaml's maxLength
 * counts them), each file or folder name at most this many bytes (the file system's limit). */
#define CORE_PATH_MAX_CHARS 1000
#define CORE_NAME_MAX_BYTES 255
/* An upload's dir: short enough that dir + '/' + a name of CORE_NAME_MAX_BYTES fits a path. */
#define CORE_DIR_MAX_CHARS (CORE_PATH_MAX_CHARS - CORE_NAME_MAX_BYTES - 1)
/** The normal form of a caller's path as the calls below take it: relative to /workspace ("" for
 * /workspace itself), "." and empty segments dropped, escapes in canonical form (as listings
 * give paths). *rel is heap. Errors as above. For protocols that match a path against a
 * listing, so that every protocol reads a path one way. */
rb_err core_file_path(const char *path, char **rel, char *err);
/** Writes len bytes (copied) to path, creating parent folders, replacing an existing file;
 * answers {session_id, path, size, modified}. The file belongs to the sandbox user (mode 0644).
 * All or nothing: the bytes are written beside the target under a temporary name and renamed
 * over it, so on any failure an existing file keeps its content and no partial file is left.
 * RB_ENOSPC, before anything is written when the helper sees it, names the bytes needed and
 * free: an upload needs room for the whole new file beside the one it replaces. */
rb_err core_file_upload(rb_core *c, const core_caller *who, const char *session_id, const char *path, const void *data, size_t len,
                        core_cb cb, void *cbdata, core_op **handle, char *err);
/** Answers {session_id, files: [{path, type: "file"|"directory"|"symlink"|"other", size,
 * modified, path_bytes?, target?, escapes?}], truncated} for everything under /workspace (at
 * most 10000 entries; symlinks are listed, not followed; escapes says a link points outside or
 * cannot be resolved) except /workspace/.runbox, where installed packages live. Every name is
 * listed, in name form; path_bytes (base64 of the path's bytes) comes with a path that holds an
 * escape. */
rb_err core_file_list(rb_core *c, const core_caller *who, const char *session_id, core_cb cb, void *cbdata, core_op **handle, char *err);
/** The entries of one folder path (not what lies below them): {session_id, path, files: [as
 * core_file_list's], truncated, total}, at most max entries (0: only the count), sorted by name;
 * total counts them all. A path that leads outside /workspace through a symbolic link is
 * RB_EFORBIDDEN, a missing one RB_ENOTFOUND, a file RB_ECONFLICT. */
rb_err core_file_list_dir(rb_core *c, const core_caller *who, const char *session_id, const char *path, size_t max,
                          core_cb cb, void *cbdata, core_op **handle, char *err);
/** A file read by core_file_download. bytes[0..len) is the file where it lies in the sandbox
 * engine's answer: runboxd holds it once, with no copy between the engine and here, so a
 * protocol should send it from there too. content_type is guessed from the name's extension;
 * name is the last path component. Read-only; everything stays valid until core_file_free. */
typedef struct core_file {
    const char *bytes;
    size_t len;
    const char *content_type;
    const char *name;
} core_file;
/** Callback of core_file_download: on success file is the file, owned by the callee from then
 * on (core_file_free it once its bytes are sent); on failure file is NULL and msg explains. */
typedef void (*core_file_cb)(void *data, rb_err err, const char *msg, core_file *file);
/** Reads a regular file (symlinks inside /workspace are followed) of at most max bytes (0 or
 * more than max-download: max-download); a bigger one is RB_ETOOBIG before any byte is read,
 * the message naming both sizes (and max-download when that was the limit). Memory: files in
 * flight (from the moment their size is known until core_file_free) hold together at most
 * max-download-memory; a file that does not fit beside them is RB_EBUSY ("retry"), while one
 * file alone is always admitted. */
rb_err core_file_download(rb_core *c, const core_caller *who, const char *session_id, const char *path, size_t max, core_file_cb cb,
                          void *cbdata, core_op **handle, char *err);
/** Releases a file of core_file_download: its bytes and its share of max-download-memory. May
 * be called after core_free. Accepts NULL. */
void core_file_free(core_file *file);
/** Makes the folder path and any missing parents (like mkdir -p; an existing folder is fine);
 * answers {session_id, path, type: "directory"}. RB_ECONFLICT when path (or a parent) exists
 * and is not a folder. */
rb_err core_file_mkdir(rb_core *c, const core_caller *who, const char *session_id, const char *path, core_cb cb,
                       void *cbdata, core_op **handle, char *err);
/** Deletes a file, a symlink (not its target) or a folder with everything in it; answers
 * {session_id, path, deleted: true}. */
rb_err core_file_delete(rb_core *c, const core_caller *who, const char *session_id, const char *path, core_cb cb, void *cbdata,
                        core_op **handle, char *err);

/*
 * The sandbox's own file system, as its user sees it (core/files/sandbox_fs.c), for protocols whose
 * clients name the sandbox's paths (E2B's envd) rather than the workspace's. A path is absolute,
 * "~" or "~/..." (the user's home, /home/user: the workspace) or relative to /home/user; paths
 * are answered as the caller named them (/home/user, never /workspace). The sandbox's user
 * (uid 1000) does the work, so the kernel's permissions hold (the image's folders are read-only);
 * runbox's own paths are refused whatever they allow: /opt/runbox, /opt/runbox-egress,
 * /workspace/.runbox and /proc/<pid> of processes not the user's.
 *
 * An entry is {name, path, type: "file"|"directory"|"symlink"|"other", size, mode (permission
 * bits), permissions (Go's FileMode string, as envd gives it: "-rw-r--r--", "drwxr-xr-x",
 * "Lrwxrwxrwx"), uid, gid, owner, group (names from the image's /etc/passwd and /etc/group, else
 * the number), modified (RFC 3339, nanoseconds), target? (where a symbolic link leads, or the link
 * itself when it leads nowhere), metadata? ({key: value} of the file's user.e2b.* extended
 * attributes)}; a symbolic link reports its target's type and mode, and "other" when it leads
 * nowhere.
 */
typedef enum core_fs_op {
    CORE_FS_STAT,   /* {entry}; RB_ENOTFOUND */
    CORE_FS_LIST,   /* {entries}: depth first, in name order, down to depth levels (1..1000); a link to a
                       folder is listed, not entered; /workspace/.runbox left out; at most 10000
                       entries (RB_ETOOBIG beyond); RB_ENOTFOUND, RB_EINVAL (not a folder) */
    CORE_FS_MKDIR,  /* {entry}, parents made; RB_ECONFLICT with body {reason: "exists"} when it is a
                       folder already, RB_EINVAL when something else is there */
    CORE_FS_REMOVE, /* {}: a file, link or folder with what it holds; a missing path is no error (as
                       envd's RemoveAll); the home folder itself and / are refused */
    CORE_FS_MOVE,   /* {entry} of dest: rename (a copy across file systems), parents of dest made;
                       RB_ENOTFOUND for a missing source */
    CORE_FS_META,   /* {entry}: dest is a JSON object {key: value} (checked by the caller: printable
                       ASCII) set as the file's user.e2b.<key> extended attributes (envd's metadata) */
} core_fs_op;
/** Does what on path (and dest for CORE_FS_MOVE; depth for CORE_FS_LIST) in who's live session
 * session_id, answering as core_fs_op says. Errors: RB_EINVAL for a path over 4096 bytes or with
 * control characters; RB_ENOTFOUND, RB_ECONFLICT as core_file_*; RB_EFORBIDDEN for runbox's own
 * paths and what the user may not do (EACCES, EPERM, EROFS); on failure the body, when there is
 * one, is {reason} naming the cause in the helper's words. Async like core_file_list. */
rb_err core_sandbox_fs(rb_core *c, const core_caller *who, const char *session_id, core_fs_op what, const char *path,
                       const char *dest, unsigned depth, core_cb cb, void *cbdata, core_op **handle, char *err);

/** Callback of core_sandbox_read: bytes[0..len) is the file, valid only during the call. */
typedef void (*core_bytes_cb)(void *data, rb_err err, const char *msg, const char *bytes, size_t len);
/** Reads the regular file path (named as for core_sandbox_fs) of who's live session as its user,
 * whatever file system it lies on (/proc and /sys too, whose sizes are not known before reading):
 * at most 8 MiB (RB_ETOOBIG beyond: the files API reads larger ones in /workspace), at most 8 such
 * reads in flight (RB_EBUSY beyond). RB_EINVAL for a folder, device or pipe; otherwise errors as
 * core_sandbox_fs. Async like core_file_download. */
rb_err core_sandbox_read(rb_core *c, const core_caller *who, const char *session_id, const char *path,
                         core_bytes_cb cb, void *cbdata, core_op **handle, char *err);

#endif

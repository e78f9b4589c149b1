/*
 * e2b_internal.h: what the files of server/e2b share: the error answers in E2B's shapes, the
 * sandbox a request addresses, the stored E2B data of a session, and the route handlers.
 */
#ifndef RB_SERVER_E2B_INTERNAL_H
#define RB_SERVER_E2B_INTERNAL_H

#include "server/e2b/e2b.h"

/* The envd version runboxd reports, and what the SDK (e2b 2.63) does from it: at or above 0.4.0
 * it sends no username; from 0.5.7 file-like uploads are raw octet-streams, gzip'd when asked
 * (e2b_envd.c takes both); from 0.6.2 files.write(metadata=) sends X-Metadata-* headers, kept as
 * user.e2b.* extended attributes and returned in entries. 0.6.3 (entries in watch events) and
 * 0.6.4 (watchers on network mounts) would claim watchers, which runbox does not offer. */
#define E2B_ENVD_VERSION "0.6.2"
/* The name under which a session's E2B data is kept (core_session_set_extra). */
#define E2B_EXTRA "e2b"
/* The sandbox timeout E2B's API allows (seconds). */
#define E2B_TIMEOUT_MAX 86400

/** Answers a control-plane error: status and {"code": status, "message": message}. */
void e2b__api_error(h2o_req_t *req, int status, const char *message);
/** Answers the control-plane 404 of a sandbox id that is not (or no longer) there. */
void e2b__api_not_found(h2o_req_t *req, const char *id);
/** Answers the control-plane error of a core error e. */
void e2b__api_fail(h2o_req_t *req, rb_err e, const char *message);
/** Answers an envd / interpreter error: status and {"code": status, "message": message}
 * (the SDK reads "message"). */
void e2b__sandbox_error(h2o_req_t *req, int status, const char *message);

/** What a sandbox-traffic call does, for e2b__sandbox_of: nothing that needs a token (the
 * code interpreter's /contexts, which the SDK sends none), read the sandbox (files, listings,
 * health), or change it (run code or commands, write, move or remove files). */
enum { E2B_NO_TOKEN = 0, E2B_READS = 1, E2B_CHANGES = 2 };
/** The sandbox a sandbox-traffic request addresses (E2b-Sandbox-Id) and, unless what is
 * E2B_NO_TOKEN, the key its access token was handed to, checked now: that key must still be in the
 * key file and may, by its current role, do what (change: the sandbox's owner or an admin key;
 * read: the owner, an admin or a viewer). 0 with *out filled (pool memory; out->who the token's
 * key, for the core calls), or -1 after answering 401 (missing or wrong token, the key removed),
 * 403 (the key's role or ownership does not allow it) or 502 (no such live sandbox, as E2B's
 * proxy answers). */
int e2b__sandbox_of(http_call *call, int what, e2b_sandbox *out);

/** The sandbox of a presigned file URL (e2b_sign.c): GET or POST /files whose query has `signature`
 * (and maybe `signature_expiration`) instead of an X-Access-Token; what is E2B_READS (a download
 * URL) or E2B_CHANGES (an upload URL). 0 with *out filled as e2b__sandbox_of fills it, or -1 after
 * answering 401 (expired, or no live sandbox's token signs it) or 403. */
int e2b__signed_sandbox(http_call *call, int what, e2b_sandbox *out);
/** Whether a sandbox-traffic request is a presigned URL's: a `signature` in the query and no
 * X-Access-Token. */
int e2b__is_signed(h2o_req_t *req);

/* Access tokens (e2b_token.c): one per API key in the E2B data's "tokens" ({key name: token}). */
/** Whether who may run code and change files in a session of owner: the owner (a user key), an
 * admin key, or the one caller of a runboxd without keys (who NULL); never a viewer. */
int e2b__may_change(const core_caller *who, const char *owner);
/** The name who's tokens are kept under ("" for the caller of a runboxd without keys). Borrowed. */
const char *e2b__key_name(const core_caller *who);
/** The owner of a runbox session object (borrowed; "" when it has none). Borrowed. */
const char *e2b__owner_of(json_t *session);
/** Brings E2B data (modified in place) of the older form, one "token" recorded with the "owner"
 * that first reached it through E2B, to "tokens": kept as owner's when that is the session's real
 * owner, dropped otherwise. Returns whether extra changed. */
int e2b__tokens_upgrade(json_t *extra, const char *owner);
/** key's token in extra, minted (and *changed set) when it has none. Borrowed from extra. */
const char *e2b__token_mint(json_t *extra, const char *key, int *changed);
/** The key whose token in extra is given (compared with every token in constant time), or NULL.
 * Borrowed from extra. */
const char *e2b__token_holder(json_t *extra, const char *given);

/** Maps an E2B path (absolute under /home/user, or relative to it) to a
 * runbox workspace path (e2b_path_map; valid as long as path); NULL with err when it is empty
 * or elsewhere (the caller answers 400). */
const char *e2b__path(const char *path, char *err);

/** Whether a control-plane call may go on: 1, or 0 after answering 401 (runboxd checks keys and
 * the call has no caller). */
int e2b__authorised(http_call *call);
/** e2b__authorised, then the body read as JSON into *body (NULL when empty; a new reference):
 * 1, or 0 after answering (401, or the body's 4xx). */
int e2b__authorised_body(http_call *call, json_t **body);
/** A core call on a session as core_session_network's (core/core.h). */
typedef rb_err (*e2b_session_call)(rb_core *c, const core_caller *who, const char *session_id, json_t *body,
                                   core_cb cb, void *data, core_op **handle, char *err);
/** How such a call's failure is answered (the sandbox id, the error and its message). */
typedef void (*e2b_fail_fn)(h2o_req_t *req, const char *id, rb_err e, const char *msg);
/** Makes fn(id, change) (change borrowed) and answers 204 when it succeeds, else fail: now or
 * when it ends. A client that goes away cancels the answer, not the call. */
void e2b__call_no_content(http_call *call, const char *id, json_t *change, e2b_session_call fn, e2b_fail_fn fail);

/* Control plane (e2b_api.c). */
int e2b__create(http_call *call);
int e2b__list(http_call *call);
int e2b__get(http_call *call);
int e2b__kill(http_call *call);
int e2b__set_timeout(http_call *call);
int e2b__unsupported(http_call *call);
/** GET /sandboxes/{id}/metrics (e2b_metrics.c). */
int e2b__metrics(http_call *call);

/** The timeout field (seconds) of body (borrowed): 0 when absent, -1 after answering 400 (not a
 * whole number from 1 to E2B_TIMEOUT_MAX). */
int64_t e2b__timeout_of(http_call *call, json_t *body);
/** The live session call->params[0] (*session a new reference) with its E2B data (*extra a new
 * reference; made for a session made through REST or MCP), holding the caller's own access token
 * when the caller may run code there (e2b__may_change: minted and stored if it had none; for
 * anyone else nothing is stored): 0, or -1 with both NULL after answering 404 (unknown, ended,
 * another key's) or the core error. */
int e2b__live_sandbox(http_call *call, json_t **session, json_t **extra);
/** The caller's access token of a sandbox e2b__live_sandbox answered (session and extra
 * borrowed), or NULL when the caller may not run code there (a viewer, say). Borrowed. */
const char *e2b__caller_token(http_call *call, json_t *session, json_t *extra);
/** The E2B object of a runbox session object (borrowed) and its E2B data (borrowed): detail 0 the
 * create/connect answer (E2B's Sandbox), 1 a listed sandbox, 2 a detailed one (with the network);
 * token, unless NULL, its envdAccessToken (never in a listed one). New reference. */
json_t *e2b__sandbox_object(json_t *session, json_t *extra, int detail, const char *token);
/** E2B's state of a runbox session status: E2B_STATE_PAUSED while it is pausing, suspended or
 * hibernated, else E2B_STATE_RUNNING. */
int e2b__state_of(const char *status);

/* Pause, resume, connect and fork (e2b_pause.c). */
/** POST /sandboxes/{id}/pause (Sandbox.pause): 204 once paused, 409 when it is paused already. */
int e2b__pause(http_call *call);
/** POST /sandboxes/{id}/resume (older SDKs): 201 once resumed, 409 when it runs. */
int e2b__resume(http_call *call);
/** POST /v2/sandboxes/{id}/connect and /sandboxes/{id}/connect (Sandbox.connect): resumes a
 * paused sandbox (201), extends a running one's timeout (200). */
int e2b__connect(http_call *call);
/** POST /sandboxes/{id}/fork (Sandbox.fork): 201 with one SandboxForkResult per fork. */
int e2b__fork(http_call *call);

/* Network options (e2b_network.c). */
/** The runbox network of a create body (its allow_internet_access and network, e2b_network_map):
 * 0 with *out NULL (no network) or a new reference for execution_options.network, or -1 after
 * answering 400. */
int e2b__network_create(http_call *call, json_t *body, json_t **out);
/** Adds a detailed sandbox's allowInternetAccess and network (E2B's SandboxDetail) to o, from
 * session's execution_options.network (borrowed). */
void e2b__network_info(json_t *o, json_t *session);
/** PUT /sandboxes/{id}/network (Sandbox.update_network): 204 once the running sandbox's egress
 * proxy obeys the new policy. */
int e2b__network_update(http_call *call);

/* Volumes (e2b_volumes.c). */
/** POST /volumes (Volume.create): 201 with E2B's VolumeAndToken. */
int e2b__volume_create(http_call *call);
/** GET /volumes (Volume.list): the key's volumes as E2B's Volume, oldest first. */
int e2b__volume_list(http_call *call);
/** GET /volumes/{id} (Volume.get_info, Volume.connect; an id or a name): VolumeAndToken, or 404. */
int e2b__volume_get(http_call *call);
/** DELETE /volumes/{id} (Volume.destroy): 204 once removed; 404, 409 while a sandbox mounts it. */
int e2b__volume_delete(http_call *call);
/** The volume content API (/volumecontent/{id}/...): 501 naming the alternative. */
int e2b__volume_content(http_call *call);
/** The execution_options.mounts of a create body (borrowed): the shares of metadata["runbox.mounts"]
 * and the volumes of volumeMounts (e2b_volume_mounts_map) in one list: 0 with *out NULL (no
 * mounts) or a new reference, or -1 after answering 400. */
int e2b__mounts_create(http_call *call, json_t *body, json_t **out);
/** Adds a detailed sandbox's volumeMounts (E2B's SandboxVolumeMount: name, path) to o, from
 * session's execution_options.mounts (borrowed). */
void e2b__mounts_info(json_t *o, json_t *session);

/* envd (e2b_envd.c). */
int e2b__health(http_call *call);
int e2b__files_read(http_call *call);
int e2b__files_write(http_call *call);
int e2b__rpc(http_call *call);

/* The code interpreter (e2b_interp.c). */
int e2b__execute(http_call *call);
int e2b__contexts_list(http_call *call);
int e2b__contexts_create(http_call *call);
int e2b__context_delete(http_call *call);
int e2b__context_restart(http_call *call);

#endif

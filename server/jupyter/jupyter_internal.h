/*
 * jupyter_internal.h: what the files of server/jupyter/ share: the protocol's state (kernels as
 * runbox sessions, the websockets open on them, the logins of password mode) and the helpers
 * every handler uses. Private to server/jupyter/.
 */
#ifndef RB_SERVER_JUPYTER_INTERNAL_H
#define RB_SERVER_JUPYTER_INTERNAL_H

#include <h2o.h>
#include <h2o/websocket.h>

#include "base/map.h"
#include "server/http.h"
#include "server/jupyter/jupyter.h"
#include "server/jupyter/jupyter_msg.h"

#define JUPYTER_PREFIX "/jupyter"
/* Bytes one websocket may have queued for a client that does not read before it is closed. */
#define JUPYTER_WS_QUEUE_MAX ((size_t)64 * 1024 * 1024)
/* Logins (password mode) remembered at once; the oldest goes first. */
#define JUPYTER_LOGINS_MAX 1024
#define JUPYTER_COOKIE "runbox-jupyter"

typedef struct jconn jconn;

/* Executions whose websocket closed before they ended, remembered (a ring, the oldest forgotten
 * first) so that an interrupt or restart of their kernel from a new socket still stops them. */
#define JUPYTER_ORPHANS_MAX 256

/* One login of password mode: the cookie's value and the API key it stands for. */
typedef struct jlogin {
    char cookie[48];
    char *key;
    int64_t at;
} jlogin;

/* Bytes of a kernel or session id kept (a runbox session id is s_ and 32 hex digits). */
#define JUPYTER_ID_MAX 64

/* An execution of kernel (its session id) whose websocket closed: request id rid ("" once done). */
typedef struct jorphan {
    char kernel[JUPYTER_ID_MAX];
    char rid[64];
} jorphan;

/* What the kernels' REST and websocket handlers share (call->data). */
typedef struct jupyter {
    rb_server *server;
    rb_core *core;
    rb_map counts;        /* kernel id -> (execution count, as intptr_t): Jupyter's execution_count */
    jconn *conns;         /* the websockets open, linked by next */
    jlogin logins[JUPYTER_LOGINS_MAX];
    jorphan orphans[JUPYTER_ORPHANS_MAX];
    size_t next_orphan; /* the slot the next orphan takes */
    json_t *python_info;  /* the language_info a Python kernel gave last (its real version), or NULL */
    int stopping;
} jupyter;

/** Answers Jupyter's error shape {"message", "reason"} with status (http_status_of(e)). */
void jupyter__fail(h2o_req_t *req, rb_err e, const char *msg);

/** The kernel id of session id sid, into buf (JUPYTER_ID_MAX bytes): a session id's 32 hex digits
 * as a UUID (8-4-4-4-12), since Jupyter Server routes only kernel ids of that shape
 * (\w+-\w+-\w+-\w+-\w+); any other id as it is. Returns buf. */
const char *jupyter__kernel_id(const char *sid, char *buf);
/** The session id of kernel id kid (the UUID form above, or a session id as it is), into buf
 * (JUPYTER_ID_MAX bytes). Returns buf. */
const char *jupyter__session_id(const char *kid, char *buf);

/** The kernel model of a session object (borrowed): {id (jupyter__kernel_id), name,
 * last_activity, execution_state, connections} (new reference). */
json_t *jupyter__kernel_model(jupyter *j, json_t *session);

/** The next execution_count of kernel id (1, 2, ...). */
int64_t jupyter__next_count(jupyter *j, const char *id);
/** Forgets kernel id's count (its session ended or restarted). */
void jupyter__forget(jupyter *j, const char *id);

/** Websockets open on kernel id. */
int jupyter__connections(jupyter *j, const char *id);
/** Interrupts the executions the websockets of kernel id started, those open and those closed
 * since (orphans): 1 if one was running. */
int jupyter__interrupt(jupyter *j, const core_caller *who, const char *id);

/** Restarts kernel id's interpreter: what runs is interrupted, then an execution with restart
 * (core_execute) is watched with cb (its "done" says it is over). */
rb_err jupyter__restart(jupyter *j, const core_caller *who, const char *id, core_event_cb cb, void *data,
                        core_watch **watch, char *err);

/** The session of the kernel call->params[0] (a UUID or a session id) as call->who may see it,
 * live (*out a new reference): RB_ENOTFOUND, in Jupyter's words, for an unknown, ended or another
 * key's kernel. */
rb_err jupyter__live_session(http_call *call, json_t **out, char *err);

/** GET /api/kernels/{id}/channels: the websocket (jupyter_ws.c). */
int jupyter__channels(http_call *call);
/** Closes the websockets of kernel id (its session ended) but except (NULL: all) with a close
 * frame (1000), as a kernel gateway does when its kernel goes. */
void jupyter__end_kernel(jupyter *j, const char *id, const jconn *except);
/** Closes every websocket (server_stop). */
void jupyter__close_all(jupyter *j);

/** A socket as jupyter_ask.c uses it (jupyter_ws.c): sends msg (stolen) to its client (which may
 * close the socket: hold it across), sends a status of execution_state state answering parent,
 * holds (delta 1) or lets go (-1, which frees a socket closed meanwhile) of it, and what it
 * belongs to (borrowed). */
typedef struct jasks jasks;
void jupyter__conn_send(jconn *c, json_t *msg);
void jupyter__conn_status(jconn *c, json_t *parent, const char *state);
void jupyter__conn_hold(jconn *c, int delta);
jupyter *jupyter__conn_j(jconn *c);
const core_caller *jupyter__conn_who(jconn *c);
const char *jupyter__conn_kernel(jconn *c);
const char *jupyter__conn_language(jconn *c);
/** The slot of the socket's questions (jupyter_ask.c's state; NULL until the first). */
jasks **jupyter__conn_asks(jconn *c);

/** A Python kernel's complete, inspect, is_complete, history or kernel_info request on socket c,
 * answered by its interpreter (core/kernel_ask.h) as ipykernel answers it (jupyter_ask.c): now, or
 * after the socket's executions in flight (execs_in_flight > 0) end. 0 (nothing done) for another
 * request or language. */
int jupyter__ask(jconn *c, json_t *msg, int execs_in_flight);
/** The socket's executions have ended: the questions waiting for them are asked. */
void jupyter__asks_resume(jconn *c);
/** The socket closes: the answers in flight go nowhere, the questions waiting are dropped. */
void jupyter__asks_close(jconn *c);

/** Password mode's login (jupyter_login.c): GET and POST /login; the API key a request's cookie
 * stands for. */
int jupyter__login_page(http_call *call);
int jupyter__login(http_call *call);
int jupyter__credential(void *data, h2o_req_t *req, const char **tok, size_t *len);

#endif

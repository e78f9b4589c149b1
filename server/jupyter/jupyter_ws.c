/*
 * jupyter_ws.c: a kernel's websocket (GET /jupyter/api/kernels/{id}/channels): Jupyter messages
 * in their JSON form (server/jupyter/jupyter_msg.h) over h2o's websocket (wslay). An
 * execute_request becomes a runbox execution of the kernel's session, watched: status busy,
 * execute_input, its outputs as stream / display_data / execute_result / error on iopub as they
 * come, execute_reply on shell, status idle last. kernel_info, complete, inspect, is_complete,
 * comm_info and history get honest replies; shutdown ends the session (or restarts its
 * interpreter); interrupt stops what runs.
 *
 * The kernel is the session, not the socket: a socket that drops leaves the session and what
 * runs in it as they are, and a new socket on the same id finds it with its variables (and can
 * interrupt what the dropped one started: jupyter__interrupt's orphans). A kernel that ends
 * (DELETE, shutdown_request) closes the other sockets on it (1000).
 *
 * Bounds: a message over the server's body limit closes the socket (1009, wslay); a client that
 * does not read what it is sent is closed past JUPYTER_WS_QUEUE_MAX bytes queued (1008); one
 * socket has at most EXECS_MAX executions of its own in flight (more get an error reply), and
 * the session's queue (--max-queue) bounds them too; each socket counts as a stream
 * (--max-streams).
 *
 * h2o calls on_message from inside h2o_websocket_proceed, so nothing there calls proceed again;
 * a socket closed from inside a send is freed only once nothing of it is on the stack (refs).
 */
#include "server/jupyter/jupyter_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "base/mem.h"

#define EXECS_MAX 64

static const char *str_or(json_t *v, const char *dflt)
{
    const char *s = json_string_value(v);
    return s != NULL ? s : dflt;
}

typedef struct jexec jexec;

struct jconn {
    jupyter *j;
    h2o_websocket_conn_t *ws; /* NULL once closed */
    http_stream_link link;
    const core_caller *who;
    char kernel[JUPYTER_ID_MAX]; /* the session's id */
    char language[16];
    jexec *execs;
    int nexecs;
    int refs;     /* calls of this file on the stack that use it */
    int in_recv;  /* inside on_message (h2o's proceed): no proceed now */
    int closed;
    int ending;   /* its kernel ended: a close frame was queued */
    jasks *asks;  /* questions to its kernel (jupyter_ask.c) */
    jconn *next;
};

struct jexec {
    jconn *c;
    json_t *msg;  /* the request */
    core_watch *watch;
    char rid[64];
    int64_t count;
    int restart;  /* a shutdown_request with restart: its reply when done */
    json_t *page; /* what IPython's pager showed ({type: "page", data, start}), for the reply's payload */
    jexec *next;
};

/* ---- sending ------------------------------------------------------------------------------ */

static void conn_free_if_done(jconn *c)
{
    if (c->closed && c->refs == 0)
        free(c);
}

static void conn_close(jconn *c);

/* Sends msg (stolen) to the client, unless the socket is closed or closing. */
static void send_msg(jconn *c, json_t *msg)
{
    if (c->closed || c->ws == NULL || c->ending) {
        json_decref(msg);
        return;
    }
    char *text = json_dumps(msg, JSON_COMPACT);
    json_decref(msg);
    if (text == NULL)
        return;
    struct wslay_event_msg m = {WSLAY_TEXT_FRAME, (const uint8_t *)text, strlen(text)};
    int rc = wslay_event_queue_msg(c->ws->ws_ctx, &m); /* wslay copies it */
    free(text);
    if (rc != 0 || wslay_event_get_queued_msg_length(c->ws->ws_ctx) > JUPYTER_WS_QUEUE_MAX) {
        rb_warn("jupyter: kernel %s: a websocket that does not read what it is sent is closed", c->kernel);
        const char why[] = "the client does not read its messages";
        wslay_event_queue_close(c->ws->ws_ctx, 1008, (const uint8_t *)why, sizeof(why) - 1);
    }
    if (!c->in_recv && c->ws->sock != NULL) {
        c->refs++;
        h2o_websocket_proceed(c->ws); /* may close it: on_message(NULL) */
        c->refs--;
    }
}

static void send_status(jconn *c, json_t *parent, const char *state)
{
    send_msg(c, jmsg_make(parent, "iopub", "status", json_pack("{s:s}", "execution_state", state), c->kernel));
}

void jupyter__conn_send(jconn *c, json_t *msg)
{
    send_msg(c, msg);
}

void jupyter__conn_status(jconn *c, json_t *parent, const char *state)
{
    send_status(c, parent, state);
}

void jupyter__conn_hold(jconn *c, int delta)
{
    c->refs += delta;
    if (delta < 0)
        conn_free_if_done(c);
}

jupyter *jupyter__conn_j(jconn *c)
{
    return c->j;
}

const core_caller *jupyter__conn_who(jconn *c)
{
    return c->who;
}

const char *jupyter__conn_kernel(jconn *c)
{
    return c->kernel;
}

const char *jupyter__conn_language(jconn *c)
{
    return c->language;
}

jasks **jupyter__conn_asks(jconn *c)
{
    return &c->asks;
}

/* ---- executions --------------------------------------------------------------------------- */

static void exec_unlink(jexec *x)
{
    jconn *c = x->c;
    for (jexec **p = &c->execs; *p != NULL; p = &(*p)->next)
        if (*p == x) {
            *p = x->next;
            break;
        }
    c->nexecs--;
}

static void exec_free(jexec *x)
{
    json_decref(x->msg);
    json_decref(x->page);
    free(x);
}

/* A traceback as Jupyter frontends join it (with "\n"): its lines without their own newline
 * (new reference). */
static json_t *traceback_of(json_t *tb)
{
    json_t *out = json_array();
    size_t i;
    json_t *line;
    json_array_foreach(tb, i, line)
    {
        const char *s = json_string_value(line);
        if (s == NULL)
            continue;
        size_t n = strlen(s);
        while (n > 0 && s[n - 1] == '\n')
            n--;
        json_array_append_new(out, json_stringn(s, n));
    }
    return out;
}

/* A traceback as traceback_of gives it, in colour as ipykernel's (new reference). */
static json_t *coloured(json_t *tb, json_t *ename)
{
    json_t *plain = traceback_of(tb);
    json_t *out = jmsg_colour_traceback(plain, json_string_value(ename));
    json_decref(plain);
    return out;
}

/* An output item of core's watch as the iopub message Jupyter clients expect. */
static json_t *iopub_of(jexec *x, json_t *item)
{
    const char *type = json_string_value(json_object_get(item, "type"));
    const char *k = x->c->kernel;
    if (type == NULL)
        return NULL;
    if (strcmp(type, "stream") == 0)
        return jmsg_make(x->msg, "iopub", "stream",
                         json_pack("{s:O, s:O}", "name", json_object_get(item, "name"), "text",
                                   json_object_get(item, "text")),
                         k);
    if (strcmp(type, "display") == 0) {
        /* display() and update_display: the whole bundle, its metadata, and its display_id as
         * transient (which update_display_data needs to find the output it replaces) */
        json_t *id = json_object_get(item, "display_id"), *md = json_object_get(item, "metadata");
        json_t *transient = json_is_string(id) ? json_pack("{s:O}", "display_id", id) : json_object();
        int update = json_is_string(id) && json_is_true(json_object_get(item, "update"));
        return jmsg_make(x->msg, "iopub", update ? "update_display_data" : "display_data",
                         json_pack("{s:o, s:o, s:o}", "data", core_output_bundle(item), "metadata",
                                   json_is_object(md) ? json_incref(md) : json_object(), "transient", transient),
                         k);
    }
    if (strcmp(type, "clear_output") == 0)
        return jmsg_make(x->msg, "iopub", "clear_output",
                         json_pack("{s:b}", "wait", json_is_true(json_object_get(item, "wait"))), k);
    if (strcmp(type, "result") == 0) {
        json_t *md = json_object_get(item, "metadata");
        return jmsg_make(x->msg, "iopub", "execute_result",
                         json_pack("{s:I, s:o, s:o}", "execution_count", (json_int_t)x->count, "data",
                                   core_output_bundle(item), "metadata",
                                   json_is_object(md) ? json_incref(md) : json_object()),
                         k);
    }
    if (strcmp(type, "error") == 0) {
        json_t *tb = json_object_get(item, "traceback");
        return jmsg_make(x->msg, "iopub", "error",
                         json_pack("{s:s, s:s, s:o}", "ename",
                                   str_or(json_object_get(item, "ename"), "Error"), "evalue",
                                   str_or(json_object_get(item, "evalue"), ""), "traceback",
                                   coloured(tb, json_object_get(item, "ename"))),
                         k);
    }
    return NULL;
}

/* The execute_reply of a finished execution (its result document, borrowed). */
static json_t *execute_reply(jexec *x, json_t *doc)
{
    const char *st = json_string_value(json_object_get(doc, "status"));
    json_t *err = json_object_get(doc, "error");
    /* IPython's pager (`obj?`) as ipykernel's payloadpage gives it */
    json_t *payload = json_array();
    if (x->page != NULL)
        json_array_append_new(payload, json_pack("{s:s, s:O, s:O}", "source", "page", "data",
                                                 json_object_get(x->page, "data"), "start",
                                                 json_object_get(x->page, "start")));
    if (st != NULL && strcmp(st, "completed") == 0 && !json_is_object(err))
        return json_pack("{s:s, s:I, s:{}, s:o}", "status", "ok", "execution_count", (json_int_t)x->count,
                         "user_expressions", "payload", payload);
    json_decref(payload);
    const char *ename = json_string_value(json_object_get(err, "ename"));
    json_t *tb = json_object_get(err, "traceback");
    /* "aborted" is a request that never ran (cancelled in the queue); one interrupted while it ran
     * ended in an error (KeyboardInterrupt), as ipykernel answers it */
    int aborted = st != NULL && strcmp(st, "cancelled") == 0 && !json_is_object(err);
    return json_pack("{s:s, s:I, s:s, s:s, s:o}", "status", aborted ? "aborted" : "error", "execution_count",
                     (json_int_t)x->count, "ename", ename ? ename : st ? st : "Error", "evalue",
                     str_or(json_object_get(err, "evalue"), ""), "traceback",
                     coloured(tb, json_object_get(err, "ename")));
}

static void on_exec_event(void *data, const char *event, json_t *payload)
{
    jexec *x = data;
    jconn *c = x->c;
    c->refs++;
    if (strcmp(event, "output") == 0 && !x->restart &&
        strcmp(str_or(json_object_get(payload, "type"), ""), "page") == 0) {
        json_decref(x->page); /* the reply's payload, the last one (ipykernel's is single) */
        x->page = json_incref(payload);
    } else if (strcmp(event, "output") == 0 && !x->restart) {
        json_t *m = iopub_of(x, payload);
        if (m != NULL)
            send_msg(c, m);
    } else if (strcmp(event, "done") == 0) {
        x->watch = NULL;
        if (x->restart) {
            send_msg(c, jmsg_make(x->msg, "control", "shutdown_reply",
                                  json_pack("{s:s, s:b}", "status", "ok", "restart", 1), c->kernel));
            send_status(c, x->msg, "restarting");
        } else {
            send_msg(c, jmsg_make(x->msg, "shell", "execute_reply", execute_reply(x, payload), c->kernel));
        }
        send_status(c, x->msg, "idle");
        exec_unlink(x);
        exec_free(x);
        if (c->nexecs == 0 && !c->closed) /* the questions that waited for them, in order */
            jupyter__asks_resume(c);
    }
    c->refs--;
    conn_free_if_done(c);
}

/* An error reply to an execute_request that could not start (the busy status was sent). */
static void exec_refused(jconn *c, json_t *msg, int64_t count, const char *ename, const char *evalue)
{
    json_t *tb = json_pack("[s]", evalue);
    send_msg(c, jmsg_make(msg, "iopub", "error", json_pack("{s:s, s:s, s:O}", "ename", ename, "evalue", evalue,
                                                            "traceback", tb),
                          c->kernel));
    send_msg(c, jmsg_make(msg, "shell", "execute_reply",
                          json_pack("{s:s, s:I, s:s, s:s, s:o}", "status", "error", "execution_count",
                                    (json_int_t)count, "ename", ename, "evalue", evalue, "traceback", tb),
                          c->kernel));
    send_status(c, msg, "idle");
}

static void execute(jconn *c, json_t *msg)
{
    json_t *content = json_object_get(msg, "content");
    json_t *code = json_object_get(content, "code");
    int silent = json_is_true(json_object_get(content, "silent"));
    send_status(c, msg, "busy");
    if (!json_is_string(code)) {
        exec_refused(c, msg, 0, "ValueError", "execute_request needs content.code, a string");
        return;
    }
    int64_t count = silent ? 0 : jupyter__next_count(c->j, c->kernel);
    if (!silent)
        send_msg(c, jmsg_make(msg, "iopub", "execute_input",
                              json_pack("{s:O, s:I}", "code", code, "execution_count", (json_int_t)count), c->kernel));
    if (c->nexecs >= EXECS_MAX) {
        exec_refused(c, msg, count, "QueueFull",
                     "this connection has too many executions waiting; wait for their replies");
        return;
    }
    char err[RB_ERR_LEN];
    json_t *req = json_pack("{s:s, s:O}", "session_id", c->kernel, "code", code), *out = NULL;
    rb_err e = core_execute(c->j->core, c->who, req, &out, err);
    json_decref(req);
    if (e != RB_OK) {
        exec_refused(c, msg, count, e == RB_EBUSY ? "QueueFull" : "KernelError", err);
        return;
    }
    jexec *x = xcalloc(1, sizeof(*x));
    x->c = c;
    x->msg = json_incref(msg);
    x->count = count;
    snprintf(x->rid, sizeof(x->rid), "%s", str_or(json_object_get(out, "request_id"), ""));
    json_decref(out);
    x->next = c->execs;
    c->execs = x;
    c->nexecs++;
    if (core_watch_start(c->j->core, c->who, x->rid, 1, on_exec_event, x, &x->watch, err) != RB_OK) {
        x->watch = NULL;
        exec_unlink(x);
        exec_free(x);
        exec_refused(c, msg, count, "KernelError", err);
    }
}

static int cancel(jupyter *j, const core_caller *who, const char *rid)
{
    char err[RB_ERR_LEN];
    json_t *out = NULL;
    int ok = core_execution_cancel(j->core, who, rid, &out, err) == RB_OK;
    json_decref(out);
    return ok;
}

int jupyter__interrupt(jupyter *j, const core_caller *who, const char *id)
{
    int any = 0;
    for (jconn *c = j->conns; c != NULL; c = c->next)
        for (jexec *x = c->execs; x != NULL; x = x->next)
            if (strcmp(c->kernel, id) == 0 && !x->restart)
                any |= cancel(j, who, x->rid);
    /* a socket that dropped while its cell ran: the client reconnected and asks to stop it (an
     * execution that has ended since is not cancelled: core answers a conflict) */
    for (size_t i = 0; i < JUPYTER_ORPHANS_MAX; i++)
        if (j->orphans[i].rid[0] != '\0' && strcmp(j->orphans[i].kernel, id) == 0) {
            any |= cancel(j, who, j->orphans[i].rid);
            j->orphans[i].rid[0] = '\0';
        }
    return any;
}

/* Remembers an execution of c's kernel still in flight as its socket closes. */
static void orphan(jconn *c, jexec *x)
{
    jorphan *o = &c->j->orphans[c->j->next_orphan];
    c->j->next_orphan = (c->j->next_orphan + 1) % JUPYTER_ORPHANS_MAX;
    snprintf(o->kernel, sizeof(o->kernel), "%s", c->kernel);
    snprintf(o->rid, sizeof(o->rid), "%s", x->rid);
}

int jupyter__connections(jupyter *j, const char *id)
{
    int n = 0;
    for (jconn *c = j->conns; c != NULL; c = c->next)
        n += !c->closed && strcmp(c->kernel, id) == 0;
    return n;
}

void jupyter__end_kernel(jupyter *j, const char *id, const jconn *except)
{
    for (;;) { /* from the head each time: a proceed may close and unlink a socket */
        jconn *c = j->conns;
        while (c != NULL && (c == except || c->ending || c->closed || c->ws == NULL || strcmp(c->kernel, id) != 0))
            c = c->next;
        if (c == NULL)
            return;
        c->ending = 1;
        static const char why[] = "the kernel was shut down";
        wslay_event_queue_close(c->ws->ws_ctx, 1000, (const uint8_t *)why, sizeof(why) - 1);
        if (!c->in_recv && c->ws->sock != NULL) {
            c->refs++;
            h2o_websocket_proceed(c->ws); /* may close it: on_message(NULL) */
            c->refs--;
            conn_free_if_done(c);
        }
    }
}

/* shutdown_request: the session ends, or its interpreter restarts (content.restart). */
static void kernel_shutdown(jconn *c, json_t *msg)
{
    int restart = json_is_true(json_object_get(json_object_get(msg, "content"), "restart"));
    send_status(c, msg, "busy");
    if (restart) {
        char err[RB_ERR_LEN];
        jexec *x = xcalloc(1, sizeof(*x));
        x->c = c;
        x->msg = json_incref(msg);
        x->restart = 1;
        x->next = c->execs;
        c->execs = x;
        c->nexecs++;
        if (jupyter__restart(c->j, c->who, c->kernel, on_exec_event, x, &x->watch, err) != RB_OK) {
            exec_unlink(x);
            exec_free(x);
            send_msg(c, jmsg_make(msg, "control", "shutdown_reply",
                                  json_pack("{s:s, s:b, s:s}", "status", "error", "restart", 1, "evalue", err),
                                  c->kernel));
            send_status(c, msg, "idle");
        }
        return;
    }
    char err[RB_ERR_LEN];
    json_t *out = NULL;
    rb_err e = core_session_delete(c->j->core, c->who, c->kernel, &out, err);
    json_decref(out);
    jupyter__forget(c->j, c->kernel);
    if (e == RB_OK) /* the others on the kernel; this one gets its replies, then the client closes it */
        jupyter__end_kernel(c->j, c->kernel, c);
    send_msg(c, jmsg_make(msg, "control", "shutdown_reply",
                          e == RB_OK ? json_pack("{s:s, s:b}", "status", "ok", "restart", 0)
                                     : json_pack("{s:s, s:b, s:s}", "status", "error", "restart", 0, "evalue", err),
                          c->kernel));
    send_status(c, msg, "dead");
}

/* Whether the socket's key may still run code in its kernel as the key is now: the key file may
 * have been reloaded since the socket opened, and a key removed or demoted loses what it could do
 * (the router checked the key once, at the upgrade). 1, or 0 with why. */
static int key_may_run(jconn *c, char *why)
{
    if (c->who == NULL) /* runboxd without keys */
        return 1;
    const core_caller *now = server_caller(c->j->server, c->who->owner);
    json_t *s = NULL;
    char err[RB_ERR_LEN];
    if (now == NULL)
        snprintf(why, RB_ERR_LEN, "the API key '%s' is no longer in runboxd's key file: this socket runs nothing more",
                 c->who->owner);
    else if (now->role == CORE_ROLE_VIEWER)
        snprintf(why, RB_ERR_LEN,
                 "the API key '%s' is a viewer now (role=viewer in the api-keys file): it runs no code; ask the "
                 "operator for a user or admin key",
                 c->who->owner);
    else if (core_session_get(c->j->core, now, c->kernel, &s, err) != RB_OK)
        snprintf(why, RB_ERR_LEN, "the API key '%s' is a user key now and this kernel is another key's",
                 c->who->owner);
    else {
        json_decref(s);
        return 1;
    }
    return 0;
}

static void dispatch(jconn *c, json_t *msg)
{
    const char *t = jmsg_type(msg);
    const char *channel = jmsg_channel(msg);
    char why[RB_ERR_LEN];
    /* a completion or inspection runs the user's objects' code too (a __repr__, a property) */
    int change = strcmp(t, "execute_request") == 0 || strcmp(t, "shutdown_request") == 0 ||
                 strcmp(t, "interrupt_request") == 0 || strcmp(t, "complete_request") == 0 ||
                 strcmp(t, "inspect_request") == 0;
    if (change && !key_may_run(c, why)) {
        send_status(c, msg, "busy");
        if (strcmp(t, "execute_request") == 0) {
            exec_refused(c, msg, 0, "PermissionError", why);
            return;
        }
        char reply[JMSG_NAME_MAX + 8];
        snprintf(reply, sizeof(reply), "%.*s_reply", (int)(strlen(t) - strlen("_request")), t);
        send_msg(c, jmsg_make(msg, strcmp(channel, "control") == 0 ? "control" : "shell", reply,
                              json_pack("{s:s, s:s, s:s}", "status", "error", "ename", "PermissionError", "evalue", why),
                              c->kernel));
        send_status(c, msg, "idle");
        return;
    }
    if (strcmp(t, "execute_request") == 0) {
        execute(c, msg);
    } else if (strcmp(t, "shutdown_request") == 0) {
        kernel_shutdown(c, msg);
    } else if (strcmp(t, "interrupt_request") == 0) {
        jupyter__interrupt(c->j, c->who, c->kernel);
        send_msg(c, jmsg_make(msg, "control", "interrupt_reply", json_pack("{s:s}", "status", "ok"), c->kernel));
    } else if (jupyter__ask(c, msg, c->nexecs)) {
        /* answered by the kernel's interpreter (jupyter_ask.c) */
    } else {
        json_t *content = jmsg_simple_reply(msg, c->language);
        if (content == NULL) /* unknown or unsupported (input_reply, comm_*): ignored, as kernels do */
            return;
        char reply[JMSG_NAME_MAX + 8];
        size_t n = strlen(t) - strlen("_request");
        snprintf(reply, sizeof(reply), "%.*s_reply", (int)n, t);
        send_status(c, msg, "busy");
        send_msg(c, jmsg_make(msg, strcmp(channel, "control") == 0 ? "control" : "shell", reply, content,
                              c->kernel));
        send_status(c, msg, "idle");
    }
}

/* ---- the socket ----------------------------------------------------------------------------- */

static void conn_close(jconn *c)
{
    if (c->closed)
        return;
    c->closed = 1;
    server_untrack_stream(&c->link);
    for (jconn **p = &c->j->conns; *p != NULL; p = &(*p)->next)
        if (*p == c) {
            *p = c->next;
            break;
        }
    while (c->execs != NULL) { /* what runs goes on in the session; its messages go nowhere */
        jexec *x = c->execs;
        c->execs = x->next;
        if (x->watch != NULL && !x->restart)
            orphan(c, x);
        if (x->watch != NULL)
            core_watch_stop(x->watch);
        exec_free(x);
    }
    c->nexecs = 0;
    jupyter__asks_close(c);
    if (c->ws != NULL)
        h2o_websocket_close(c->ws);
    c->ws = NULL;
}

static void on_message(h2o_websocket_conn_t *ws, const struct wslay_event_on_msg_recv_arg *arg)
{
    jconn *c = ws->data;
    if (arg == NULL) {
        conn_close(c);
        conn_free_if_done(c);
        return;
    }
    if (arg->opcode != WSLAY_TEXT_FRAME && arg->opcode != WSLAY_BINARY_FRAME)
        return; /* control frames: wslay answers them */
    json_t *msg = NULL;
    char err[RB_ERR_LEN];
    if (arg->opcode == WSLAY_BINARY_FRAME || jmsg_parse((const char *)arg->msg, arg->msg_length, &msg, err) != RB_OK) {
        rb_info("jupyter: kernel %s: a message was ignored: %s", c->kernel,
                arg->opcode == WSLAY_BINARY_FRAME ? "binary frames (the v1 subprotocol) are not spoken here" : err);
        return;
    }
    c->refs++;
    c->in_recv++;
    dispatch(c, msg);
    c->in_recv--;
    c->refs--;
    json_decref(msg);
}

static void shutdown_link(http_stream_link *l)
{
    jconn *c = (jconn *)((char *)l - offsetof(jconn, link));
    c->refs++;
    conn_close(c);
    c->refs--;
    conn_free_if_done(c);
}

void jupyter__close_all(jupyter *j)
{
    while (j->conns != NULL)
        shutdown_link(&j->conns->link);
}

int jupyter__channels(http_call *call)
{
    jupyter *j = call->data;
    char err[RB_ERR_LEN];
    json_t *s = NULL;
    rb_err e = jupyter__live_session(call, &s, err);
    const char *client_key = NULL;
    if (e == RB_OK && (h2o_is_websocket_handshake(call->req, &client_key) != 0 || client_key == NULL ||
                       call->req->version >= 0x200)) {
        snprintf(err, sizeof(err), "this is a websocket (HTTP/1.1 Upgrade: websocket) for the kernel's channels");
        e = RB_EINVAL;
    }
    if (e == RB_OK && (j->stopping || !server_stream_room(call->server, err)))
        e = j->stopping ? rb_fail(RB_EUNAVAILABLE, err, "runboxd is stopping") : RB_EBUSY;
    if (e != RB_OK) {
        json_decref(s);
        jupyter__fail(call->req, e, err);
        return 0;
    }
    jconn *c = xcalloc(1, sizeof(*c));
    c->j = j;
    c->who = call->who;
    snprintf(c->kernel, sizeof(c->kernel), "%s", str_or(json_object_get(s, "session_id"), ""));
    snprintf(c->language, sizeof(c->language), "%s", str_or(json_object_get(s, "language"), "python"));
    json_decref(s);
    c->link.shutdown = shutdown_link;
    server_track_stream(call->server, &c->link);
    c->next = j->conns;
    j->conns = c;
    c->ws = h2o_upgrade_to_websocket(call->req, client_key, c, on_message);
    /* a message over the body limit closes the socket (1009), as a request body over it is 413 */
    wslay_event_config_set_max_recv_msg_length(c->ws->ws_ctx, call->cfg->max_body);
    return 0;
}

/*
 * jupyter_ask.c: a kernel's answers that are not cells, as ipykernel gives them: complete_request,
 * inspect_request, is_complete_request, history_request and kernel_info_request of a Python
 * kernel become questions to its interpreter (core/kernel_ask.h), answered on shell between a busy
 * and an idle status. Like ipykernel, which reads its shell channel one message at a time, a
 * question that comes while this socket's own executions run waits for them (at most WAIT_MAX;
 * more are answered as errors); one the kernel cannot take because another client's code runs
 * gets a reply with status "error" (ename KernelBusy), and kernel_info then says what it knows
 * without the interpreter (the language's version last heard, else "3"). Other languages keep the
 * honest empty replies of jmsg_simple_reply.
 */
#include "server/jupyter/jupyter_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "base/mem.h"
#include "core/kernel_ask.h"

/* Questions of one socket waiting for its executions, and in flight. */
#define WAIT_MAX 32

typedef struct jask {
    jconn *c;
    json_t *msg; /* the request */
    core_op *op;
    struct jask *next;
} jask;

struct jasks {
    json_t *waiting; /* requests waiting for the socket's executions to end, in order */
    jask *inflight;
};

/* The kind of question a request is, or NULL. */
static const char *kind_of(const char *msg_type)
{
    static const char *const TYPES[][2] = {{"complete_request", "complete"},
                                           {"inspect_request", "inspect"},
                                           {"is_complete_request", "is_complete"},
                                           {"history_request", "history"},
                                           {"kernel_info_request", "kernel_info"}};
    for (size_t i = 0; i < sizeof(TYPES) / sizeof(TYPES[0]); i++)
        if (strcmp(msg_type, TYPES[i][0]) == 0)
            return TYPES[i][1];
    return NULL;
}

static void reply_name(json_t *msg, char *buf, size_t len)
{
    const char *t = jmsg_type(msg);
    snprintf(buf, len, "%.*s_reply", (int)(strlen(t) - strlen("_request")), t);
}

/* Sends the reply content (stolen) to msg, then idle. */
static void reply(jconn *c, json_t *msg, json_t *content)
{
    char name[JMSG_NAME_MAX + 8];
    reply_name(msg, name, sizeof(name));
    jupyter__conn_send(c, jmsg_make(msg, strcmp(jmsg_channel(msg), "control") == 0 ? "control" : "shell", name,
                                    content, jupyter__conn_kernel(c)));
    jupyter__conn_status(c, msg, "idle");
}

/* kernel_info_reply's content: runbox's, with the interpreter's language_info and banner when
 * it answered (answer borrowed, or NULL). */
static json_t *kernel_info(jconn *c, json_t *msg, json_t *answer)
{
    jupyter *j = jupyter__conn_j(c);
    json_t *content = jmsg_simple_reply(msg, "python");
    json_t *li = json_object_get(answer, "language_info");
    if (json_is_object(li) && json_is_string(json_object_get(li, "version"))) {
        json_decref(j->python_info);
        j->python_info = json_deep_copy(li);
    }
    if (j->python_info != NULL)
        json_object_set(content, "language_info", j->python_info);
    json_t *banner = json_object_get(answer, "banner");
    if (json_is_string(banner))
        json_object_set(content, "banner", banner);
    return content;
}

static void on_answer(void *data, rb_err e, const char *why, json_t *answer)
{
    jask *q = data;
    jconn *c = q->c;
    jasks *st = *jupyter__conn_asks(c);
    for (jask **p = &st->inflight; *p != NULL; p = &(*p)->next)
        if (*p == q) {
            *p = q->next;
            break;
        }
    const char *kind = kind_of(jmsg_type(q->msg));
    json_t *content;
    if (strcmp(kind, "kernel_info") == 0) {
        content = kernel_info(c, q->msg, e == RB_OK ? answer : NULL);
    } else if (e == RB_OK) {
        content = json_incref(answer);
    } else {
        content = json_pack("{s:s, s:s, s:s, s:[]}", "status", "error", "ename",
                            e == RB_ETIMEDOUT ? "TimeoutError" : "KernelError", "evalue", why ? why : "", "traceback");
    }
    jupyter__conn_hold(c, 1); /* the reply may close the socket */
    reply(c, q->msg, content);
    jupyter__conn_hold(c, -1);
    json_decref(answer);
    json_decref(q->msg);
    free(q);
}

/* Asks the kernel msg's question now. */
static void ask_now(jconn *c, json_t *msg)
{
    const char *kind = kind_of(jmsg_type(msg));
    jasks *st = *jupyter__conn_asks(c);
    char err[RB_ERR_LEN];
    jask *q = xcalloc(1, sizeof(*q));
    q->c = c;
    q->msg = json_incref(msg);
    jupyter__conn_status(c, msg, "busy");
    rb_err e = core_kernel_ask(jupyter__conn_j(c)->core, jupyter__conn_who(c), jupyter__conn_kernel(c), kind,
                               json_object_get(msg, "content"), on_answer, q, &q->op, err);
    if (e == RB_OK) {
        q->next = st->inflight;
        st->inflight = q;
        return;
    }
    json_t *content;
    if (strcmp(kind, "kernel_info") == 0)
        content = kernel_info(c, msg, NULL);
    else
        content = json_pack("{s:s, s:s, s:s, s:[]}", "status", "error", "ename",
                            e == RB_EBUSY ? "KernelBusy" : e == RB_EINVAL ? "ValueError" : "KernelError", "evalue", err,
                            "traceback");
    reply(c, msg, content);
    json_decref(q->msg);
    free(q);
}

int jupyter__ask(jconn *c, json_t *msg, int execs_in_flight)
{
    const char *kind = kind_of(jmsg_type(msg));
    if (kind == NULL || strcmp(jupyter__conn_language(c), "python") != 0)
        return 0;
    jasks **slot = jupyter__conn_asks(c);
    if (*slot == NULL) {
        *slot = xcalloc(1, sizeof(**slot));
        (*slot)->waiting = json_array();
    }
    if (strcmp(kind, "kernel_info") == 0 && (execs_in_flight > 0 || json_array_size((*slot)->waiting) > 0)) {
        jupyter__conn_status(c, msg, "busy"); /* at once, as ipykernel answers it on control: what it knows */
        reply(c, msg, kernel_info(c, msg, NULL));
    } else if (execs_in_flight == 0 && json_array_size((*slot)->waiting) == 0) {
        ask_now(c, msg);
    } else if (json_array_size((*slot)->waiting) < WAIT_MAX) {
        json_array_append((*slot)->waiting, msg); /* after this socket's executions, as ipykernel */
    } else {
        jupyter__conn_status(c, msg, "busy");
        reply(c, msg, json_pack("{s:s, s:s, s:s, s:[]}", "status", "error", "ename", "KernelBusy", "evalue",
                                "too many requests wait for this connection's executions", "traceback"));
    }
    return 1;
}

void jupyter__asks_resume(jconn *c)
{
    jasks *st;
    /* each time afresh: a reply that closes the socket drops the state (jupyter__asks_close) */
    while ((st = *jupyter__conn_asks(c)) != NULL && json_array_size(st->waiting) > 0) {
        json_t *msg = json_incref(json_array_get(st->waiting, 0));
        json_array_remove(st->waiting, 0);
        ask_now(c, msg);
        json_decref(msg);
    }
}

void jupyter__asks_close(jconn *c)
{
    jasks **slot = jupyter__conn_asks(c);
    jasks *st = *slot;
    if (st == NULL)
        return;
    while (st->inflight != NULL) { /* their answers go nowhere */
        jask *q = st->inflight;
        st->inflight = q->next;
        core_cancel(q->op);
        json_decref(q->msg);
        free(q);
    }
    json_decref(st->waiting);
    free(st);
    *slot = NULL;
}

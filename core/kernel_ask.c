/*
 * kernel_ask.c: questions to a session's interpreter that are not cells (core/kernel_ask.h).
 * A question gets an id (k_...), goes to the runner as {"op": "ask"} (sandbox_ask) and waits,
 * with its deadline, in the core's list (the CORE_ROOM_ASKS slot) until the runner's "answer"
 * event with its id (kernel_ask__answered, from sandbox_runner.c) or the deadline. The caller hears
 * on a zero timer, never from inside the runner's line handling nor from core_kernel_ask. A
 * session that ends while a question waits leaves it to its deadline.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "base/mem.h"
#include "core/internal.h"
#include "core/kernel_ask.h"

typedef struct kask {
    rb_core *c;
    char id[RB_ID_LEN];
    char session_id[RB_ID_LEN];
    core_op op;        /* the caller's cb and data; cancelled by core_cancel */
    uv_timer_t *timer; /* the deadline, then the delivery */
    json_t *answer;    /* the content, once answered */
    rb_err e;          /* RB_OK, or why there is no answer */
    char msg[RB_ERR_LEN];
    int ended;         /* answered, timed out or cancelled by core_free: delivery is due */
    struct kask *next;
} kask;

typedef struct kasks {
    kask *head;
} kasks;

static const char *const KINDS[] = {"complete", "inspect", "is_complete", "history", "kernel_info"};

int core_ask_kind_known(const char *kind)
{
    for (size_t i = 0; kind != NULL && i < sizeof(KINDS) / sizeof(KINDS[0]); i++)
        if (strcmp(kind, KINDS[i]) == 0)
            return 1;
    return 0;
}

static kasks *room(rb_core *c, int make)
{
    void **slot = core_heart_room(c, CORE_ROOM_ASKS);
    if (*slot == NULL && make)
        *slot = xcalloc(1, sizeof(kasks));
    return *slot;
}

static void unlink_ask(rb_core *c, kask *k)
{
    kasks *r = room(c, 0);
    for (kask **p = r != NULL ? &r->head : NULL; p != NULL && *p != NULL; p = &(*p)->next)
        if (*p == k) {
            *p = k->next;
            return;
        }
}

static void timer_freed(uv_handle_t *h)
{
    kask *k = h->data;
    json_decref(k->answer);
    free(k);
    free(h);
}

static void deliver(kask *k)
{
    unlink_ask(k->c, k);
    if (!k->op.cancelled)
        k->op.cb(k->op.data, k->e, k->e == RB_OK ? NULL : k->msg, k->e == RB_OK ? json_incref(k->answer) : NULL);
    uv_close((uv_handle_t *)k->timer, timer_freed);
}

static void on_timer(uv_timer_t *t)
{
    kask *k = t->data;
    if (!k->ended) {
        k->ended = 1;
        k->e = rb_fail(RB_ETIMEDOUT, k->msg,
                       "the kernel did not answer within %d s; it may be busy with a slow answer, try again",
                       CORE_ASK_TIMEOUT_MS / 1000);
    }
    deliver(k);
}

/* Ends k with its answer or error, delivered on the next turn of the loop. */
static void end_ask(kask *k)
{
    k->ended = 1;
    uv_timer_stop(k->timer);
    uv_timer_start(k->timer, on_timer, 0, 0);
}

void kernel_ask__answered(rb_core *c, const char *id, json_t *content, size_t line_bytes)
{
    kasks *r = room(c, 0);
    kask *k = r != NULL ? r->head : NULL;
    while (k != NULL && (k->ended || id == NULL || strcmp(k->id, id) != 0))
        k = k->next;
    if (k == NULL)
        return; /* late (given up on) or never asked: the sandbox is not trusted */
    if (line_bytes > CORE_ASK_ANSWER_MAX)
        k->e = rb_fail(RB_ETOOBIG, k->msg, "the kernel's answer is larger than %u bytes", CORE_ASK_ANSWER_MAX);
    else if (content == NULL)
        k->e = rb_fail(RB_EUNAVAILABLE, k->msg, "this sandbox's runner answers no questions (its image was built "
                       "before them: rebuild it with docker/build-images)");
    else if (!json_is_object(content))
        k->e = rb_fail(RB_EIO, k->msg, "the kernel's answer was not an object");
    else
        k->answer = json_incref(content);
    end_ask(k);
}

void kernel_ask__dispose(rb_core *c)
{
    kasks *r = room(c, 0);
    if (r == NULL)
        return;
    while (r->head != NULL) {
        kask *k = r->head;
        r->head = k->next;
        if (!k->op.cancelled)
            k->op.cb(k->op.data, RB_ECANCELED, "runboxd is shutting down", NULL);
        uv_timer_stop(k->timer);
        uv_close((uv_handle_t *)k->timer, timer_freed);
    }
    free(r);
    *core_heart_room(c, CORE_ROOM_ASKS) = NULL;
}

static int asks_of(rb_core *c, const char *session_id)
{
    int n = 0;
    kasks *r = room(c, 0);
    for (kask *k = r != NULL ? r->head : NULL; k != NULL; k = k->next)
        n += !k->ended && strcmp(k->session_id, session_id) == 0;
    return n;
}

rb_err core_kernel_ask(rb_core *c, const core_caller *who, const char *session_id, const char *kind, json_t *content,
                       core_cb cb, void *data, core_op **handle, char *err)
{
    if (handle != NULL)
        *handle = NULL;
    if (c->closing)
        return rb_fail(RB_EUNAVAILABLE, err, "runboxd is stopping");
    if (!core_ask_kind_known(kind))
        return rb_fail(RB_EINVAL, err, "a question's kind is %s, not '%.64s'", CORE_ASK_KINDS_TEXT, kind ? kind : "");
    if (content != NULL && !json_is_object(content))
        return rb_fail(RB_EINVAL, err, "a question's content must be an object");
    session *s = core__live_session(c, who, session_id, err);
    if (s == NULL)
        return RB_ENOTFOUND;
    if (strcmp(s->language, "python") != 0)
        return rb_fail(RB_EINVAL, err, "only Python sessions answer %s questions; session %s runs %s", kind, s->id,
                       s->language);
    if (s->pause != PAUSE_NONE || s->sb == NULL || !sandbox_ready(s->sb))
        return rb_fail(RB_ECONFLICT, err, "session %s is %s; it answers questions once it is ready", s->id,
                       s->pause != PAUSE_NONE ? "paused" : s->status);
    if (s->running != NULL || s->queue_head != NULL)
        return rb_fail(RB_EBUSY, err, "session %s is running code; ask again when it is idle", s->id);
    if (asks_of(c, s->id) >= CORE_ASK_MAX)
        return rb_fail(RB_EBUSY, err, "session %s has %d questions waiting for their answers", s->id, CORE_ASK_MAX);
    json_t *line = json_pack("{s:s, s:s, s:s, s:o}", "op", "ask", "id", "", "kind", kind, "content",
                             content != NULL ? json_incref(content) : json_object());
    char *text = json_dumps(json_object_get(line, "content"), JSON_COMPACT);
    size_t size = text != NULL ? strlen(text) : 0;
    free(text);
    if (size > CORE_ASK_CONTENT_MAX) {
        json_decref(line);
        return rb_fail(RB_EINVAL, err, "a question's content is larger than %u bytes", CORE_ASK_CONTENT_MAX);
    }
    kask *k = xcalloc(1, sizeof(*k));
    k->c = c;
    rb_random_id("k_", k->id, sizeof(k->id));
    snprintf(k->session_id, sizeof(k->session_id), "%s", s->id);
    json_object_set_new(line, "id", json_string(k->id));
    rb_err e = sandbox_ask(s->sb, line, err);
    json_decref(line);
    if (e != RB_OK) {
        free(k);
        return e;
    }
    k->op = (core_op){cb, data, 0};
    k->timer = xmalloc(sizeof(*k->timer));
    uv_timer_init(c->loop, k->timer);
    k->timer->data = k;
    uv_timer_start(k->timer, on_timer, CORE_ASK_TIMEOUT_MS, 0);
    kasks *r = room(c, 1);
    k->next = r->head;
    r->head = k;
    if (handle != NULL)
        *handle = &k->op;
    return RB_OK;
}

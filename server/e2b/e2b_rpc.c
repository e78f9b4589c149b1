/*
 * e2b_rpc.c: envd's Connect RPC (E2B's port 49983) on a runbox session: the process service,
 * which E2B's `sandbox.commands` and `sandbox.pty` drive, over core/process.h.
 * process.Process/Start and Connect are server streams (Connect envelopes, JSON codec:
 * server/e2b/connect.h): a start event with the process's id once it runs, data events with its
 * stdout and stderr, or its terminal's bytes ("pty"), base64, as they come, keepalives, then its
 * end event and the end-of-stream envelope. SendSignal (SIGKILL, SIGTERM), List, SendInput,
 * CloseStdin and Update (a terminal's size) are unary calls (plain JSON); they name a process by
 * pid or by tag. Errors take Connect's shape, {"code", "message"} with the status Connect gives
 * the code, before a stream has started, and the end-of-stream envelope's error after.
 *
 * As in envd, a process outlives its stream: a client that goes away (a failed write, the
 * stream's deadline, handle.disconnect()) leaves it running, and Connect watches it again from
 * any client of the sandbox's key. What bounds it is the Start call's Connect-Timeout-Ms (the
 * SDK's `timeout`, after which core kills it), the session's end, and core/process.h's limits
 * (processes, terminals and watchers per sandbox; output kept while nobody watches). A client
 * that reads slowly pauses the process's output (back-pressure) instead of buffering it here.
 * The filesystem service's Stat, ListDir, MakeDir and Remove are e2b_fs.c's. What envd offers
 * and runbox does not (Move, watchers) answers `unimplemented` with a message
 * that names it. Commands run as the sandbox user; a cwd under /home/user runs in the same
 * folder of the session's workspace.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/codec.h"
#include "core/process.h"
#include "server/e2b/connect.h"
#include "server/e2b/e2b_fs.h"
#include "server/e2b/e2b_internal.h"
#include "server/sse.h"

#define RPC_REQUEST_MAX (1024u * 1024)
/* Bytes waiting for the client beyond which the process's output is paused, and the hard cap. */
#define RPC_PAUSE_AT (1024u * 1024)
#define RPC_PENDING_MAX (16u * 1024 * 1024)
/* Keepalive events: at the client's Keepalive-Ping-Interval, at most this often apart (they are
 * also how a vanished HTTP/1.1 client is noticed). */
#define RPC_KEEPALIVE_MAX_MS 15000

/* ---- errors -------------------------------------------------------------------------------- */

static void send_error(h2o_req_t *req, const char *code, const char *message)
{
    json_t *doc = json_pack("{s:s, s:s?}", "code", code, "message", message);
    if (doc == NULL)
        doc = json_pack("{s:s}", "code", code);
    http_send_json(req, connect_http_status(code), doc);
    json_decref(doc);
}

static void send_fail(h2o_req_t *req, rb_err e, const char *message)
{
    send_error(req, connect_code_of(e), message);
}

/* A header's value as a string in req->pool, or NULL. */
static const char *header(h2o_req_t *req, const char *name)
{
    ssize_t i = h2o_find_header_by_str(&req->headers, name, strlen(name), -1);
    if (i < 0)
        return NULL;
    h2o_iovec_t v = req->headers.entries[i].value;
    return http_pool_strdup(req, v.base, v.len);
}

/* Whether the request names a user other than the sandbox user (Authorization: Basic user:):
 * runbox runs commands as the sandbox user only; "user" (E2B's default) is that user. */
static int other_user(h2o_req_t *req, char *name, size_t cap)
{
    const char *auth = header(req, "authorization");
    if (auth == NULL || strncasecmp(auth, "Basic ", 6) != 0)
        return 0;
    char *dec = NULL, err[RB_ERR_LEN];
    size_t n = 0;
    if (codec_base64_decode(auth + 6, strlen(auth + 6), &dec, &n, err) != RB_OK) {
        snprintf(name, cap, "(undecodable)");
        return 1;
    }
    char *colon = memchr(dec, ':', n);
    size_t ulen = colon != NULL ? (size_t)(colon - dec) : n;
    int other = !(ulen == 0 || (ulen == 4 && memcmp(dec, "user", 4) == 0));
    snprintf(name, cap, "%.*s", (int)(ulen < 64 ? ulen : 64), dec);
    free(dec);
    return other;
}

/* The folder a command runs in: E2B's home (/home/user) is the session's workspace; a relative
 * cwd is relative to it; other absolute folders are the sandbox's own. In req->pool. */
static const char *command_cwd(h2o_req_t *req, const e2b_sandbox *sbx, const char *cwd)
{
    static const char home[] = E2B_HOME;
    size_t nh = sizeof(home) - 1;
    if (cwd == NULL || cwd[0] == '\0')
        return sbx->workdir;
    if (cwd[0] == '/' && (strncmp(cwd, home, nh) != 0 || (cwd[nh] != '\0' && cwd[nh] != '/')))
        return cwd;
    const char *rest = cwd[0] == '/' ? cwd + nh : cwd;
    char *out = h2o_mem_alloc_pool(&req->pool, strlen(sbx->workdir) + strlen(rest) + 2);
    sprintf(out, "%s%s%s", sbx->workdir, rest[0] == '/' || rest[0] == '\0' ? "" : "/", rest);
    return out;
}

/* The call's Connect-Timeout-Ms (0: none). */
static long long timeout_ms(h2o_req_t *req)
{
    const char *to = header(req, "connect-timeout-ms");
    long long ms = to != NULL ? strtoll(to, NULL, 10) : 0;
    return ms > 0 ? ms : 0;
}

/* ---- process.Process/Start and Connect: the stream ------------------------------------------- */

typedef struct rpc_stream {
    h2o_generator_t gen; /* first: h2o passes it back to proceed/stop */
    h2o_req_t *req;
    http_stream_link link;
    core_process_watch *proc; /* until it ends or is detached */
    sse_writer w;
    uv_timer_t *keepalive, *deadline;
    uint64_t keepalive_ms;
    int started;  /* the response has begun (after the start event) */
    int paused;   /* the process's output is paused for the client to catch up */
    int attached; /* Connect's (watching a process another call started) */
} rpc_stream;

static void close_timer(uv_timer_t **t)
{
    if (*t != NULL) {
        uv_timer_stop(*t);
        uv_close((uv_handle_t *)*t, (uv_close_cb)free);
        *t = NULL;
    }
}

/* The process is no longer the stream's watch (it runs on: core_process_detach). */
static void drop_process(rpc_stream *s)
{
    if (s->proc != NULL) {
        core_process_detach(s->proc);
        s->proc = NULL;
    }
}

static void detach(rpc_stream *s)
{
    server_untrack_stream(&s->link);
    close_timer(&s->keepalive);
    close_timer(&s->deadline);
}

static void on_final(sse_writer *w)
{
    detach(H2O_STRUCT_FROM_MEMBER(rpc_stream, w, w));
}

static void flush(rpc_stream *s)
{
    if (s->w.gone || s->w.finished || s->w.inflight || !s->started)
        return;
    if (s->paused && s->w.pending.len < RPC_PAUSE_AT / 2 && s->proc != NULL) {
        s->paused = 0;
        core_process_pause(s->proc, 0);
    }
    sse_writer_flush(&s->w, on_final);
}

/* Queues one envelope; a client that let RPC_PENDING_MAX pile up is cut off. */
static void queue(rpc_stream *s, unsigned flags, json_t *msg)
{
    if (s->w.gone || s->w.finished || s->w.ending)
        return;
    if (connect_envelope(&s->w.pending, flags, msg) != RB_OK) {
        rb_warn("e2b: a command's client reads too slowly (%zu bytes waiting); ending its stream", s->w.pending.len);
        rb_buf_reset(&s->w.pending);
        connect_end_stream(&s->w.pending, "resource_exhausted", "the client read the command's output too slowly");
        s->w.ending = 1;
        drop_process(s);
    } else if (!s->paused && s->w.pending.len >= RPC_PAUSE_AT && s->proc != NULL) {
        s->paused = 1;
        core_process_pause(s->proc, 1);
    }
    flush(s);
}

static void queue_event(rpc_stream *s, json_t *event)
{
    json_t *msg = json_pack("{s:o}", "event", event);
    queue(s, 0, msg);
    json_decref(msg);
}

/* Ends the stream: with the end-of-stream envelope (error code NULL: success) once it has
 * started, else with a plain Connect error answer. */
static void end_stream(rpc_stream *s, const char *code, const char *message)
{
    if (s->w.gone || s->w.finished || s->w.ending)
        return;
    if (!s->started) {
        detach(s);
        s->w.finished = 1;
        send_error(s->req, code != NULL ? code : "internal", message);
        return;
    }
    if (connect_end_stream(&s->w.pending, code, message) != RB_OK) {
        rb_buf_reset(&s->w.pending);
        connect_end_stream(&s->w.pending, code, message);
    }
    s->w.ending = 1;
    flush(s);
}

static void on_proceed(h2o_generator_t *gen, h2o_req_t *req)
{
    rpc_stream *s = (rpc_stream *)gen;
    (void)req;
    sse_writer_proceed(&s->w);
    flush(s);
}

static void on_stop(h2o_generator_t *gen, h2o_req_t *req)
{
    rpc_stream *s = (rpc_stream *)gen;
    (void)req;
    s->w.gone = 1;
    detach(s);
    drop_process(s);
}

static void on_dispose(void *p)
{
    rpc_stream *s = p;
    s->w.gone = 1;
    detach(s);
    drop_process(s);
    sse_writer_dispose(&s->w);
}

static void on_server_stop(http_stream_link *l)
{
    rpc_stream *s = H2O_STRUCT_FROM_MEMBER(rpc_stream, link, l);
    drop_process(s);
    end_stream(s, "unavailable", "runboxd is shutting down");
}

static void on_keepalive(uv_timer_t *t)
{
    rpc_stream *s = t->data;
    if (s->started)
        queue_event(s, json_pack("{s:{}}", "keepalive"));
}

static void on_deadline(uv_timer_t *t)
{
    rpc_stream *s = t->data;
    drop_process(s);
    end_stream(s, "deadline_exceeded",
               s->attached ? "the call's timeout passed; the command runs on (Connect again to watch it)"
                           : "the command ran past the call's timeout and was killed");
}

static void proc_start(void *data, unsigned pid)
{
    rpc_stream *s = data;
    s->started = 1;
    s->req->res.status = 200;
    s->req->res.reason = "OK";
    h2o_add_header(&s->req->pool, &s->req->res.headers, H2O_TOKEN_CONTENT_TYPE, NULL,
                   H2O_STRLIT("application/connect+json"));
    h2o_start_response(s->req, &s->gen);
    uv_timer_start(s->keepalive, on_keepalive, s->keepalive_ms, s->keepalive_ms);
    queue_event(s, json_pack("{s:{s:I}}", "start", "pid", (json_int_t)pid));
}

static void proc_output(void *data, int stream, const char *buf, size_t len)
{
    rpc_stream *s = data;
    char *b64 = codec_base64_encode(buf, len);
    const char *name = stream == CORE_PROCESS_TTY_STREAM ? "pty" : stream == 2 ? "stderr" : "stdout";
    queue_event(s, json_pack("{s:{s:s}}", "data", name, b64));
    free(b64);
}

static void proc_end(void *data, rb_err err, const char *msg, const core_process_end *end)
{
    rpc_stream *s = data;
    s->proc = NULL; /* it is gone */
    if (err != RB_OK) {
        /* its sandbox ended (killed, timed out, runboxd stopping): envd's proxy says unavailable,
         * after which the SDK asks /health and reports the sandbox gone */
        end_stream(s, err == RB_ECANCELED ? "unavailable" : connect_code_of(err), msg);
        return;
    }
    queue_event(s, json_pack("{s:{s:i, s:b, s:s}}", "end", "exitCode", end->exit_code, "exited", end->exited,
                             "status", end->status));
    end_stream(s, NULL, NULL);
}

static const core_process_cbs stream_cbs = {proc_start, proc_output, proc_end};

/* A JSON array of strings as a NULL-terminated list in req->pool; NULL (with err) otherwise. */
static const char **string_list(h2o_req_t *req, json_t *a, char *err)
{
    if (a != NULL && !json_is_array(a)) {
        rb_fail(RB_EINVAL, err, "process.args must be a list of strings");
        return NULL;
    }
    const char **list = h2o_mem_alloc_pool(&req->pool, (json_array_size(a) + 1) * sizeof(*list));
    size_t i;
    json_t *v;
    json_array_foreach(a, i, v)
    {
        if (!json_is_string(v)) {
            rb_fail(RB_EINVAL, err, "process.args[%zu] must be a string", i);
            return NULL;
        }
        list[i] = json_string_value(v);
    }
    list[json_array_size(a)] = NULL;
    return list;
}

/* A new stream for req (in req->pool), not yet begun. */
static rpc_stream *stream_new(h2o_req_t *req)
{
    rpc_stream *s = h2o_mem_alloc_shared(&req->pool, sizeof(*s), on_dispose);
    memset(s, 0, sizeof(*s));
    s->gen.proceed = on_proceed;
    s->gen.stop = on_stop;
    s->req = req;
    sse_writer_init(&s->w, req, RPC_PENDING_MAX);
    return s;
}

/* The stream watches its process: tracked for runboxd's stop, keepalives at the client's
 * Keepalive-Ping-Interval, and the deadline of its Connect-Timeout-Ms. */
static void stream_begin(rpc_stream *s, const e2b_sandbox *sbx)
{
    h2o_req_t *req = s->req;
    s->link.shutdown = on_server_stop;
    server_track_stream(sbx->server, &s->link);
    const char *ka = header(req, "keepalive-ping-interval");
    long ka_s = ka != NULL ? strtol(ka, NULL, 10) : 0;
    s->keepalive_ms = ka_s > 0 && ka_s * 1000 < RPC_KEEPALIVE_MAX_MS ? (uint64_t)ka_s * 1000 : RPC_KEEPALIVE_MAX_MS;
    s->keepalive = xmalloc(sizeof(*s->keepalive));
    uv_timer_init(req->conn->ctx->loop, s->keepalive);
    s->keepalive->data = s;
    long long to_ms = timeout_ms(req);
    if (to_ms > 0) {
        s->deadline = xmalloc(sizeof(*s->deadline));
        uv_timer_init(req->conn->ctx->loop, s->deadline);
        s->deadline->data = s;
        uv_timer_start(s->deadline, on_deadline, (uint64_t)to_ms, 0);
    }
}

/* A terminal's size {"size": {"rows", "cols"}} (pty may be NULL: none) into rows and cols; 0
 * after answering a bad one. */
static int pty_size(h2o_req_t *req, json_t *pty, unsigned *rows, unsigned *cols)
{
    *rows = *cols = 0;
    if (pty == NULL || json_is_null(pty))
        return 1;
    json_t *size = json_object_get(pty, "size");
    json_int_t r = json_integer_value(json_object_get(size, "rows"));
    json_int_t c = json_integer_value(json_object_get(size, "cols"));
    if (r < 1 || c < 1 || r > CORE_PROCESS_TTY_SIZE_MAX || c > CORE_PROCESS_TTY_SIZE_MAX) {
        char msg[RB_ERR_LEN];
        snprintf(msg, sizeof(msg), "pty.size needs rows and cols, each from 1 to %d", CORE_PROCESS_TTY_SIZE_MAX);
        send_error(req, "invalid_argument", msg);
        return 0;
    }
    *rows = (unsigned)r;
    *cols = (unsigned)c;
    return 1;
}

/* A streaming call's request message (Content-Type application/connect+json, one envelope), or
 * NULL after answering. */
static json_t *stream_body(h2o_req_t *req, const char *method)
{
    char err[RB_ERR_LEN];
    const char *ctype = header(req, "content-type");
    if (ctype == NULL || strncasecmp(ctype, "application/connect+json", 24) != 0) {
        snprintf(err, sizeof(err),
                 "process.Process/%s takes the Connect streaming protocol with the JSON codec "
                 "(Content-Type: application/connect+json)",
                 method);
        send_error(req, "unimplemented", err);
        return NULL;
    }
    json_t *body = NULL;
    rb_err e = connect_parse_request(req->entity.base, req->entity.len, RPC_REQUEST_MAX, &body, err);
    if (e != RB_OK) {
        send_fail(req, e, err);
        return NULL;
    }
    return body;
}

static int rpc_start(h2o_req_t *req, const e2b_sandbox *sbx)
{
    char err[RB_ERR_LEN], user[80];
    json_t *body = stream_body(req, "Start");
    if (body == NULL)
        return 0;
    json_t *proc = json_object_get(body, "process");
    const char *cmd = json_string_value(json_object_get(proc, "cmd"));
    const char **args = NULL;
    unsigned rows = 0, cols = 0;
    if (!json_is_object(proc) || cmd == NULL) {
        send_error(req, "invalid_argument", "process.cmd is required: the program to run, e.g. /bin/bash");
    } else if (!pty_size(req, json_object_get(body, "pty"), &rows, &cols)) {
        /* answered */
    } else if (other_user(req, user, sizeof(user))) {
        snprintf(err, sizeof(err), "runbox runs commands as the sandbox user only, not as '%s'", user);
        send_error(req, "permission_denied", err);
    } else if ((args = string_list(req, json_object_get(proc, "args"), err)) == NULL) {
        send_error(req, "invalid_argument", err);
    } else if (!server_stream_room(sbx->server, err)) {
        send_error(req, "resource_exhausted", err);
    } else {
        rpc_stream *s = stream_new(req);
        core_process_spec spec = {.cmd = cmd,
                                  .args = args,
                                  .envs = json_object_get(proc, "envs"),
                                  .cwd = command_cwd(req, sbx, json_string_value(json_object_get(proc, "cwd"))),
                                  .tag = json_string_value(json_object_get(body, "tag")),
                                  .stdin_open = json_is_true(json_object_get(body, "stdin")),
                                  .tty_rows = rows,
                                  .tty_cols = cols,
                                  .keep = 1,
                                  .timeout_ms = (long)timeout_ms(req)};
        if (json_is_null(spec.envs))
            spec.envs = NULL;
        rb_err e = core_process_start(sbx->core, sbx->who, sbx->session_id, &spec, &stream_cbs, s, &s->proc, err);
        if (e != RB_OK) {
            s->w.finished = 1;
            send_fail(req, e, err);
        } else {
            stream_begin(s, sbx);
        }
    }
    json_decref(body);
    return 0;
}

/* The process a call names ({"process": {"pid"} or {"tag"}}) into *sel, or 0 after answering. */
static int selector(h2o_req_t *req, json_t *body, core_process_sel *sel)
{
    json_t *proc = json_object_get(body, "process");
    json_t *pid = json_object_get(proc, "pid");
    const char *tag = json_string_value(json_object_get(proc, "tag"));
    memset(sel, 0, sizeof(*sel));
    if (json_is_integer(pid) && json_integer_value(pid) > 0 && json_integer_value(pid) <= 0xffffffffLL) {
        sel->pid = (unsigned)json_integer_value(pid);
        return 1;
    }
    if (pid == NULL && tag != NULL) {
        sel->tag = tag;
        return 1;
    }
    send_error(req, "invalid_argument",
               "process.pid or process.tag is required: the pid of a command this sandbox runs, or its tag");
    return 0;
}

/* process.Process/Connect {"process": {"pid"} or {"tag"}}: the stream of a running process from
 * now on (what came while nobody watched it first), as Start's from its start event. */
static int rpc_connect(h2o_req_t *req, const e2b_sandbox *sbx)
{
    char err[RB_ERR_LEN];
    json_t *body = stream_body(req, "Connect");
    if (body == NULL)
        return 0;
    core_process_sel sel;
    if (!selector(req, body, &sel)) {
        /* answered */
    } else if (!server_stream_room(sbx->server, err)) {
        send_error(req, "resource_exhausted", err);
    } else {
        rpc_stream *s = stream_new(req);
        s->attached = 1;
        unsigned pid = 0;
        rb_err e = core_process_attach(sbx->core, sbx->who, sbx->session_id, &sel, &stream_cbs, s, &s->proc, &pid, err);
        if (e != RB_OK) {
            s->w.finished = 1;
            send_fail(req, e, err);
        } else {
            stream_begin(s, sbx);
            proc_start(s, pid);
            core_process_replay(s->proc);
        }
    }
    json_decref(body);
    return 0;
}

/* ---- unary calls ----------------------------------------------------------------------------- */

/* A unary call's body (plain JSON, Content-Type application/json) or NULL after answering. */
static json_t *unary_body(h2o_req_t *req)
{
    char err[RB_ERR_LEN];
    json_t *body = NULL;
    rb_err e = http_read_json(req, RPC_REQUEST_MAX, 1, &body, err);
    if (e != RB_OK) {
        send_fail(req, e, err);
        return NULL;
    }
    return body != NULL ? body : json_object();
}

typedef struct signal_call {
    h2o_req_t *req; /* NULL once the request is gone */
    core_op *op;
} signal_call;

static void signal_disposed(void *p)
{
    signal_call *sc = p;
    if (sc->req != NULL && sc->op != NULL)
        core_cancel(sc->op);
    sc->req = NULL;
}

static void signalled_cb(void *data, rb_err err, const char *msg, json_t *body)
{
    signal_call *sc = data;
    sc->op = NULL;
    if (err != RB_OK)
        send_fail(sc->req, err, msg);
    else
        http_send_json(sc->req, 200, body);
    json_decref(body);
}

/* SendSignal {"process": {"pid"} or {"tag"}, "signal": "SIGNAL_SIGKILL" | 9 | ...}. */
static int rpc_send_signal(h2o_req_t *req, const e2b_sandbox *sbx)
{
    char err[RB_ERR_LEN];
    json_t *body = unary_body(req);
    if (body == NULL)
        return 0;
    core_process_sel sel;
    json_t *sig = json_object_get(body, "signal");
    const char *name = json_string_value(sig);
    int signo = name != NULL ? (strcmp(name, "SIGNAL_SIGKILL") == 0 ? SIGKILL
                                : strcmp(name, "SIGNAL_SIGTERM") == 0 ? SIGTERM
                                                                       : 0)
                             : (int)json_integer_value(sig);
    if (!selector(req, body, &sel)) {
        /* answered */
    } else if (signo != SIGKILL && signo != SIGTERM) {
        send_error(req, "invalid_argument", "signal must be SIGNAL_SIGKILL or SIGNAL_SIGTERM");
    } else {
        signal_call *sc = h2o_mem_alloc_shared(&req->pool, sizeof(*sc), signal_disposed);
        sc->req = req;
        sc->op = NULL;
        rb_err e = core_process_signal(sbx->core, sbx->who, sbx->session_id, &sel, signo, signalled_cb, sc, &sc->op,
                                       err);
        if (e != RB_OK) {
            sc->op = NULL;
            send_fail(req, e, err);
        }
    }
    json_decref(body);
    return 0;
}

/* SendInput {"process": {"pid"} or {"tag"}, "input": {"stdin" or "pty": base64}} and CloseStdin
 * {"process": ...}. */
static int rpc_input(h2o_req_t *req, const e2b_sandbox *sbx, int close)
{
    char err[RB_ERR_LEN];
    json_t *body = unary_body(req);
    if (body == NULL)
        return 0;
    core_process_sel sel;
    json_t *input = json_object_get(body, "input");
    const char *b64 = json_string_value(json_object_get(input, "stdin"));
    if (b64 == NULL)
        b64 = json_string_value(json_object_get(input, "pty"));
    char *bytes = NULL;
    size_t len = 0;
    rb_err e = RB_OK;
    int answered = 0;
    if (!selector(req, body, &sel)) {
        answered = 1;
    } else if (close) {
        e = core_process_close_input(sbx->core, sbx->who, sbx->session_id, &sel, err);
    } else if (b64 == NULL) {
        send_error(req, "invalid_argument",
                   "input.stdin (or input.pty for a terminal) is required: the bytes for the command's input (base64)");
        answered = 1;
    } else if (codec_base64_decode(b64, strlen(b64), &bytes, &len, err) != RB_OK) {
        send_error(req, "invalid_argument", err);
        answered = 1;
    } else {
        e = core_process_input(sbx->core, sbx->who, sbx->session_id, &sel, bytes, len, err);
    }
    if (!answered && e != RB_OK) {
        send_fail(req, e, err);
    } else if (!answered) {
        json_t *empty = json_object();
        http_send_json(req, 200, empty);
        json_decref(empty);
    }
    free(bytes);
    json_decref(body);
    return 0;
}

/* Update {"process": {"pid"} or {"tag"}, "pty": {"size": {"rows", "cols"}}}: a terminal's size. */
static int rpc_update(h2o_req_t *req, const e2b_sandbox *sbx)
{
    char err[RB_ERR_LEN];
    json_t *body = unary_body(req);
    if (body == NULL)
        return 0;
    core_process_sel sel;
    unsigned rows = 0, cols = 0;
    if (!selector(req, body, &sel) || !pty_size(req, json_object_get(body, "pty"), &rows, &cols)) {
        /* answered */
    } else if (rows == 0) {
        send_error(req, "invalid_argument", "pty.size is required: the terminal's new rows and cols");
    } else {
        signal_call *sc = h2o_mem_alloc_shared(&req->pool, sizeof(*sc), signal_disposed);
        sc->req = req;
        sc->op = NULL;
        rb_err e = core_process_resize(sbx->core, sbx->who, sbx->session_id, &sel, rows, cols, signalled_cb, sc,
                                       &sc->op, err);
        if (e != RB_OK) {
            sc->op = NULL;
            send_fail(req, e, err);
        }
    }
    json_decref(body);
    return 0;
}

/* StreamInput, a client stream: envelopes {"start": {"process": {"pid"} or {"tag"}}}, then
 * {"data": {"input": {"stdin" or "pty": base64}}} and {"keepalive": {}} in any number. runboxd
 * reads the whole request before answering (it is bounded like any body), so the input reaches
 * the process when the client ends its stream, in order; the answer is one empty message and the
 * end of the stream. */
static int rpc_stream_input(h2o_req_t *req, const e2b_sandbox *sbx)
{
    char err[RB_ERR_LEN];
    const char *ctype = header(req, "content-type");
    if (ctype == NULL || strncasecmp(ctype, "application/connect+json", 24) != 0) {
        send_error(req, "unimplemented",
                   "process.Process/StreamInput takes the Connect streaming protocol with the JSON codec "
                   "(Content-Type: application/connect+json)");
        return 0;
    }
    const char *body = req->entity.base;
    size_t len = req->entity.len, off = 0;
    core_process_sel sel = {0};
    int started = 0;
    rb_err e = RB_OK;
    json_t *start = NULL;
    while (e == RB_OK && off < len) {
        json_t *msg = NULL;
        if ((e = connect_next_request(body, len, &off, RPC_REQUEST_MAX, &msg, err)) != RB_OK)
            break;
        json_t *ev = json_object_get(msg, "event");
        if (ev == NULL)
            ev = msg; /* the oneof's members may come at the top */
        if (!started) {
            start = json_incref(json_object_get(ev, "start"));
            json_decref(msg);
            if (start == NULL) {
                e = rb_fail(RB_EINVAL, err, "the input stream must begin with a start event naming the process");
            } else if (!selector(req, start, &sel)) {
                json_decref(start);
                return 0; /* answered */
            }
            started = 1;
            continue;
        }
        json_t *input = json_object_get(json_object_get(ev, "data"), "input");
        const char *b64 = json_string_value(json_object_get(input, "stdin"));
        if (b64 == NULL)
            b64 = json_string_value(json_object_get(input, "pty"));
        char *bytes = NULL;
        size_t blen = 0;
        if (b64 != NULL && (e = codec_base64_decode(b64, strlen(b64), &bytes, &blen, err)) == RB_OK && blen > 0)
            e = core_process_input(sbx->core, sbx->who, sbx->session_id, &sel, bytes, blen, err);
        free(bytes);
        json_decref(msg);
    }
    json_decref(start);
    if (e == RB_OK && !started)
        e = rb_fail(RB_EINVAL, err, "the input stream is empty: it must begin with a start event naming the process");
    if (e != RB_OK) {
        send_fail(req, e, err);
        return 0;
    }
    rb_buf out;
    rb_buf_init(&out, 64);
    json_t *empty = json_object();
    connect_envelope(&out, 0, empty);
    connect_end_stream(&out, NULL, NULL);
    json_decref(empty);
    req->res.status = 200;
    req->res.reason = "OK";
    req->res.content_length = out.len;
    h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_CONTENT_TYPE, NULL, H2O_STRLIT("application/connect+json"));
    char *copy = h2o_mem_alloc_pool(&req->pool, out.len);
    memcpy(copy, out.data, out.len);
    rb_buf_dispose(&out);
    h2o_send_inline(req, copy, req->res.content_length);
    return 0;
}

/* List {} -> {"processes": [{"config": {cmd, args, envs, cwd}, "pid", "tag"?}]}. */
static int rpc_list(h2o_req_t *req, const e2b_sandbox *sbx)
{
    char err[RB_ERR_LEN];
    json_t *body = unary_body(req), *list = NULL;
    if (body == NULL)
        return 0;
    json_decref(body);
    rb_err e = core_process_list(sbx->core, sbx->who, sbx->session_id, &list, err);
    if (e != RB_OK) {
        send_fail(req, e, err);
        return 0;
    }
    json_t *procs = json_array();
    size_t i;
    json_t *p;
    json_array_foreach(list, i, p)
    {
        json_t *info = json_pack("{s:{s:O, s:O, s:O, s:O}, s:O}", "config", "cmd", json_object_get(p, "cmd"), "args",
                                 json_object_get(p, "args"), "envs", json_object_get(p, "envs"), "cwd",
                                 json_object_get(p, "cwd"), "pid", json_object_get(p, "pid"));
        if (json_object_get(p, "tag") != NULL)
            json_object_set(info, "tag", json_object_get(p, "tag"));
        if (json_object_get(p, "tty") != NULL) /* envd lists a PTY as its shell (the SDK ignores more) */
            json_object_set(json_object_get(info, "config"), "pty", json_object_get(p, "tty"));
        json_array_append_new(procs, info);
    }
    json_decref(list);
    json_t *answer = json_pack("{s:o}", "processes", procs);
    http_send_json(req, 200, answer);
    json_decref(answer);
    return 0;
}

int e2b_rpc_handle(h2o_req_t *req, const e2b_sandbox *sbx, const char *method)
{
    char msg[RB_ERR_LEN];
    if (strcmp(method, "process.Process/Start") == 0)
        return rpc_start(req, sbx);
    if (strcmp(method, "process.Process/Connect") == 0)
        return rpc_connect(req, sbx);
    if (strcmp(method, "process.Process/Update") == 0)
        return rpc_update(req, sbx);
    if (strcmp(method, "process.Process/StreamInput") == 0)
        return rpc_stream_input(req, sbx);
    if (strcmp(method, "process.Process/SendSignal") == 0)
        return rpc_send_signal(req, sbx);
    if (strcmp(method, "process.Process/List") == 0)
        return rpc_list(req, sbx);
    if (strcmp(method, "process.Process/SendInput") == 0)
        return rpc_input(req, sbx, 0);
    if (strcmp(method, "process.Process/CloseStdin") == 0)
        return rpc_input(req, sbx, 1);
    if (strncmp(method, "filesystem.Filesystem/", 22) == 0 && e2b_fs_handle(req, sbx, method + 22) == 0)
        return 0;
    if (strncmp(method, "process.Process/", 16) == 0)
        snprintf(msg, sizeof(msg),
                 "%.100s is not a method of envd's process service that runbox offers (Start, Connect, List, "
                 "SendInput, StreamInput, CloseStdin, Update, SendSignal)",
                 method);
    else if (strncmp(method, "filesystem.Filesystem/", 22) == 0)
        snprintf(msg, sizeof(msg),
                 "%.100s is not supported by runbox: run a command (commands.run) to move files or watch "
                 "a folder",
                 method);
    else
        snprintf(msg, sizeof(msg), "no Connect method %.100s in this sandbox", method);
    send_error(req, "unimplemented", msg);
    return 0;
}

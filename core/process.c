/*
 * process.c: commands run in a session's sandbox with their output streamed (core/process.h),
 * over the backend's streamed exec (backend_exec_stream).
 *
 * An engine such as Docker can start a command in a container but neither tell its process id
 * inside the container nor signal it. So each command starts under a small /bin/sh wrapper
 * that changes to the folder asked for, writes one line "rbpid <pid>" (or "rbcwd" when the
 * folder is missing) to its stderr before anything else can, and then execs the command, which
 * keeps that pid. The line is taken off stderr here; the pid is the process's id in the
 * session, and signals are sent from inside the sandbox as the sandbox user
 * (the shell's `kill -s SIG -- -pid`: an exec'd command leads its own session and process group, so its
 * children go with it). The wrapper runs as the sandbox user too, in user code's environment:
 * it can only fail its own start, and an answer that is not the line ends the process with an
 * error. On a terminal the wrapper first sets the terminal's size (stty), and its line comes on
 * the terminal like everything else ("\r\n" ending it).
 *
 * A process is watched by a list of watchers (core_process_watch): its output goes to each; a
 * watcher that pauses pauses the stream for all (the slowest sets the pace). Output that comes
 * while a kept process has none goes into a small ring (CORE_PROCESS_BACKLOG) for the next.
 */
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "core/process.h"

#define SANDBOX_USER "1000:1000"
#define MARKER_MAX 32
#define EARLY_MAX (4u * 1024 * 1024)
/* Bytes a second read from a process nobody watches (its output goes to the backlog and beyond
 * it nowhere): past them its output is paused for the rest of the second, so that a detached
 * flood costs runboxd and the engine little. */
#define UNWATCHED_BYTES_PER_S (1u * 1024 * 1024)

#define WRAPPER_BODY                                                                                                   \
    "cd -- \"$1\" 2>/dev/null || { printf 'rbcwd\\n' >&2; exit 126; }; "                                             \
    "printf 'rbpid %d\\n' \"$$\" >&2; shift; exec \"$@\""
static const char WRAPPER[] = WRAPPER_BODY;
/* on a terminal: its size first (rows, cols), then as above */
static const char WRAPPER_TTY[] = "stty rows \"$1\" cols \"$2\" 2>/dev/null; shift 2; " WRAPPER_BODY;

enum { P_STARTING, P_RUNNING };

struct core_process_watch {
    core_process *p;
    core_process_watch *next; /* p's watchers */
    core_process_cbs cbs;
    void *data;
    int paused;
};

struct core_process {
    rb_core *c;
    session *s;           /* NULL once the session ended */
    core_process *next;   /* the session's list */
    backend_stream *st;   /* NULL once it has ended */
    core_process_watch *watches;
    int nwatches, npaused;
    int state;
    int keep;             /* runs on without watchers */
    int tty;              /* on a terminal */
    int doomed;           /* to be killed once its pid is known (no watcher left, or its timeout passed) */
    int signalled;        /* the last signal sent, for the end's status */
    unsigned pid;         /* inside the sandbox; 0 until known */
    char container[RB_ID_LEN * 2];
    json_t *info;         /* {cmd, args, envs, cwd, tag?, tty?} for core_process_list */
    uv_timer_t *timeout;  /* its timeout_ms, or NULL */
    uv_timer_t *throttle; /* ends a pause for UNWATCHED_BYTES_PER_S, or NULL */
    int throttled;        /* paused for that */
    int backend_paused;   /* what the stream was last told */
    int64_t window_ms;    /* the second the unwatched bytes are counted in */
    size_t window_bytes;
    rb_buf early;         /* stdout that came before the line on stderr (Docker copies the two
                             streams apart, so their order is not kept); bounded by EARLY_MAX */
    rb_buf backlog;       /* output no watcher took: records [stream][len BE32][bytes], the latest
                             CORE_PROCESS_BACKLOG bytes */
    size_t marker_len;
    char marker[MARKER_MAX];
};

static void unlink_process(core_process *p)
{
    if (p->s == NULL)
        return;
    for (core_process **pp = &p->s->procs; *pp != NULL; pp = &(*pp)->next) {
        if (*pp == p) {
            *pp = p->next;
            break;
        }
    }
    p->s->nprocs--;
    p->s->last_used_at = rb_now_ms();
    p->s = NULL;
}

static void process_free(core_process *p)
{
    if (p->timeout != NULL) {
        uv_timer_stop(p->timeout);
        uv_close((uv_handle_t *)p->timeout, (uv_close_cb)free);
    }
    if (p->throttle != NULL) {
        uv_timer_stop(p->throttle);
        uv_close((uv_handle_t *)p->throttle, (uv_close_cb)free);
    }
    rb_buf_dispose(&p->early);
    rb_buf_dispose(&p->backlog);
    json_decref(p->info);
    free(p);
}

/* Ends p with exactly one on_end per watcher and frees it. */
static void finish(core_process *p, rb_err err, const char *msg, const core_process_end *end)
{
    unlink_process(p);
    if (p->st != NULL) {
        backend_stream_close(p->c->be, p->st);
        p->st = NULL;
    }
    while (p->watches != NULL) {
        core_process_watch *w = p->watches;
        p->watches = w->next;
        w->cbs.on_end(w->data, err, msg, err == RB_OK ? end : NULL);
        free(w);
    }
    process_free(p);
}

/* ---- signals, sent by a kill run in the sandbox ---------------------------------------------- */

typedef struct kill_op {
    core_op *op; /* the caller's, or NULL */
} kill_op;

static void killed_cb(void *data, rb_err err, const char *errmsg, const backend_exec_result *r)
{
    kill_op *k = data;
    char msg[RB_ERR_LEN];
    core_op *op = k->op;
    free(k);
    if (op == NULL)
        return;
    if (err == RB_OK && r->exit_code != 0) {
        /* kill found no process: it ended in the meantime */
        err = RB_ENOTFOUND;
        snprintf(msg, sizeof(msg), "the process ended before the signal reached it");
        errmsg = msg;
    }
    if (!op->cancelled)
        op->cb(op->data, err, err == RB_OK ? NULL : errmsg, err == RB_OK ? json_object() : NULL);
    free(op);
}

/* Sends sig to p's process group from inside the sandbox (on a terminal, to every process of its
 * session too: an interactive shell puts its jobs in groups of their own); op (may be NULL)
 * hears the outcome. */
static rb_err send_signal(core_process *p, int sig, core_op *op, char *err)
{
    char pid[24];
    snprintf(pid, sizeof(pid), "%u", p->pid);
    /* the shell's kill: procps' /bin/kill takes no "--" before a negative (group) id */
    const char *script = p->tty ? "kill -s \"$1\" -- \"-$2\" 2>/dev/null; a=$?; pkill --signal \"$1\" -s \"$2\"; b=$?; "
                                  "[ $a = 0 ] || [ $b = 0 ]"
                                : "kill -s \"$1\" -- \"-$2\"";
    const char *argv[] = {"/bin/sh", "-c", script, "sh", sig == SIGKILL ? "KILL" : "TERM", pid, NULL};
    backend_exec_spec spec = {.argv = argv, .user = SANDBOX_USER, .max_output = 4096, .timeout_ms = 30000};
    kill_op *k = xcalloc(1, sizeof(*k));
    k->op = op;
    rb_err e = backend_exec(p->c->be, p->container, &spec, killed_cb, k, err);
    if (e != RB_OK) {
        free(k);
        return e;
    }
    p->signalled = sig;
    return RB_OK;
}

/* Tells the stream whether to read: not while a watcher or the throttle holds it, always once doomed. */
static void apply_pause(core_process *p)
{
    int want = !p->doomed && (p->npaused > 0 || p->throttled);
    if (p->st != NULL && want != p->backend_paused)
        backend_stream_pause(p->c->be, p->st, want);
    p->backend_paused = want;
}

static void on_throttle_end(uv_timer_t *t)
{
    core_process *p = t->data;
    p->throttled = 0;
    apply_pause(p);
}

/* Counts bytes read while nobody watches; past UNWATCHED_BYTES_PER_S in this second, pauses. */
static void throttle_unwatched(core_process *p, size_t len)
{
    int64_t now = rb_now_ms();
    if (now - p->window_ms >= 1000) {
        p->window_ms = now;
        p->window_bytes = 0;
    }
    p->window_bytes += len;
    if (p->window_bytes <= UNWATCHED_BYTES_PER_S || p->throttled)
        return;
    if (p->throttle == NULL) {
        p->throttle = xmalloc(sizeof(*p->throttle));
        uv_timer_init(p->c->loop, p->throttle);
        p->throttle->data = p;
    }
    p->throttled = 1;
    apply_pause(p);
    int64_t left = 1000 - (now - p->window_ms);
    uv_timer_start(p->throttle, on_throttle_end, (uint64_t)(left > 0 ? left : 1), 0);
}

/* Kills p now if it runs, else once its pid is known. */
static void doom(core_process *p)
{
    char err[RB_ERR_LEN];
    if (p->doomed || p->st == NULL)
        return;
    p->doomed = 1;
    apply_pause(p); /* let it run into the kill */
    if (p->state == P_RUNNING && send_signal(p, SIGKILL, NULL, err) != RB_OK)
        rb_warn("session %s: could not kill process %u: %s", p->s ? p->s->id : "?", p->pid, err);
}

static void on_timeout(uv_timer_t *t)
{
    doom(t->data);
}

/* ---- the stream --------------------------------------------------------------------------- */

/* The wrapper's line, complete: RB_OK (running), or the error that ends the start. */
static rb_err take_marker(core_process *p, char *err)
{
    if (p->marker_len >= 2 && p->marker[p->marker_len - 2] == '\r') { /* a terminal's line end */
        p->marker[p->marker_len - 2] = '\n';
        p->marker_len--;
    }
    if (p->marker_len == 6 && memcmp(p->marker, "rbcwd\n", 6) == 0)
        return rb_fail(RB_EINVAL, err, "cwd '%.200s' is not a folder the sandbox user can enter",
                       json_string_value(json_object_get(p->info, "cwd")));
    unsigned long pid = 0;
    size_t i = 6;
    if (p->marker_len < 8 || memcmp(p->marker, "rbpid ", 6) != 0)
        return rb_fail(RB_EIO, err, "the process did not start (its shell answered something else)");
    for (; i < p->marker_len - 1 && p->marker[i] >= '0' && p->marker[i] <= '9' && pid < 100000000; i++)
        pid = pid * 10 + (unsigned long)(p->marker[i] - '0');
    if (i != p->marker_len - 1 || pid == 0)
        return rb_fail(RB_EIO, err, "the process did not start (its shell answered something else)");
    p->pid = (unsigned)pid;
    p->state = P_RUNNING;
    return RB_OK;
}

/* Keeps len bytes of stream for the next watcher, dropping the oldest records beyond the cap. */
static void keep_backlog(core_process *p, int stream, const char *buf, size_t len)
{
    if (len > CORE_PROCESS_BACKLOG - 5) {
        buf += len - (CORE_PROCESS_BACKLOG - 5);
        len = CORE_PROCESS_BACKLOG - 5;
    }
    size_t drop = 0;
    while (p->backlog.len - drop + len + 5 > CORE_PROCESS_BACKLOG) {
        const unsigned char *r = (const unsigned char *)p->backlog.data + drop;
        drop += 5 + ((size_t)r[1] << 24 | (size_t)r[2] << 16 | (size_t)r[3] << 8 | r[4]);
    }
    if (drop > 0) {
        memmove(p->backlog.data, p->backlog.data + drop, p->backlog.len - drop);
        p->backlog.len -= drop;
    }
    unsigned char hdr[5] = {(unsigned char)stream, (unsigned char)(len >> 24), (unsigned char)(len >> 16),
                            (unsigned char)(len >> 8), (unsigned char)len};
    rb_buf_append(&p->backlog, (const char *)hdr, 5);
    rb_buf_append(&p->backlog, buf, len);
}

/* Hands output to every watcher (or the backlog); a watcher may detach itself meanwhile. */
static void deliver(core_process *p, int stream, const char *buf, size_t len)
{
    if (p->watches == NULL) {
        if (p->keep && !p->doomed) {
            keep_backlog(p, stream, buf, len);
            throttle_unwatched(p, len);
        }
        return;
    }
    for (core_process_watch *w = p->watches, *next; w != NULL; w = next) {
        next = w->next;
        w->cbs.on_output(w->data, stream, buf, len);
    }
}

static void on_data(void *data, int stream, const char *buf, size_t len)
{
    core_process *p = data;
    char msg[RB_ERR_LEN];
    if (p->state == P_STARTING) {
        if (stream != (p->tty ? 1 : 2)) {
            if (rb_buf_append(&p->early, buf, len) != RB_OK)
                finish(p, RB_EIO, "the process did not start (its shell wrote no process id)", NULL);
            return;
        }
        const char *nl = memchr(buf, '\n', len);
        size_t take = nl != NULL ? (size_t)(nl - buf) + 1 : len;
        if (p->marker_len + take > sizeof(p->marker)) {
            take = sizeof(p->marker) - p->marker_len;
            nl = NULL;
            memcpy(p->marker + p->marker_len, buf, take);
            p->marker_len = sizeof(p->marker);
        } else {
            memcpy(p->marker + p->marker_len, buf, take);
            p->marker_len += take;
        }
        if (nl == NULL && p->marker_len < sizeof(p->marker))
            return;
        rb_err e = nl != NULL ? take_marker(p, msg)
                              : rb_fail(RB_EIO, msg, "the process did not start (its shell answered too much)");
        if (e != RB_OK) {
            /* a bad folder exits by itself; anything else may run on unobserved: the session's end removes it */
            finish(p, e, msg, NULL);
            return;
        }
        if (p->doomed) {
            if (send_signal(p, SIGKILL, NULL, msg) != RB_OK)
                rb_warn("session %s: could not kill process %u: %s", p->s ? p->s->id : "?", p->pid, msg);
        } else {
            for (core_process_watch *w = p->watches, *next; w != NULL; w = next) {
                next = w->next;
                w->cbs.on_start(w->data, p->pid);
            }
            if (p->early.len > 0 && p->st != NULL)
                deliver(p, 1, p->early.data, p->early.len);
        }
        rb_buf_dispose(&p->early);
        buf += take;
        len -= take;
        if (len == 0 || p->st == NULL)
            return;
    }
    deliver(p, p->tty ? CORE_PROCESS_TTY_STREAM : stream, buf, len);
}

static void on_exit_cb(void *data, rb_err err, const char *errmsg, int exit_code)
{
    core_process *p = data;
    char status[64];
    p->st = NULL; /* the backend has let go of it */
    if (err != RB_OK) {
        finish(p, err, errmsg, NULL);
        return;
    }
    if (p->state == P_STARTING) {
        char msg[RB_ERR_LEN];
        snprintf(msg, sizeof(msg), "the process did not start (exit code %d before it ran)", exit_code);
        finish(p, RB_EIO, msg, NULL);
        return;
    }
    core_process_end end = {exit_code, 1, 0, status};
    /* Docker reports a command a signal ended as 128 + the signal; only a signal sent here is
     * taken for one, since an exit status of 137 is an ordinary one too. */
    if (p->signalled != 0 && exit_code == 128 + p->signalled) {
        end = (core_process_end){-1, 0, p->signalled, status};
        snprintf(status, sizeof(status), "signal: %s", p->signalled == SIGKILL ? "killed" : "terminated");
    } else {
        snprintf(status, sizeof(status), "exit status %d", exit_code);
    }
    finish(p, RB_OK, NULL, &end);
}

/* ---- the calls ---------------------------------------------------------------------------- */

/* The argv and environment changes of spec, checked; NULL with err on a bad spec. The strings
 * are borrowed from spec, but for the terminal's size (in rows and cols); the arrays are heap
 * (free() them). */
static rb_err build(const core_process_spec *spec, const char *cwd, char *rows, char *cols, const char ***argv_out,
                    const char ***env_out, char *err)
{
    size_t nargs = 0, bytes = strlen(cwd), nenv = json_object_size(spec->envs);
    if (spec->cmd == NULL || spec->cmd[0] == '\0')
        return rb_fail(RB_EINVAL, err, "cmd is empty: name the program to run, e.g. /bin/bash");
    if (spec->envs != NULL && !json_is_object(spec->envs))
        return rb_fail(RB_EINVAL, err, "envs must be an object of name -> value");
    if ((spec->tty_rows != 0 || spec->tty_cols != 0) &&
        (spec->tty_rows == 0 || spec->tty_cols == 0 || spec->tty_rows > CORE_PROCESS_TTY_SIZE_MAX ||
         spec->tty_cols > CORE_PROCESS_TTY_SIZE_MAX))
        return rb_fail(RB_EINVAL, err, "a terminal's rows and cols must be 1 to %d (were %u and %u)",
                       CORE_PROCESS_TTY_SIZE_MAX, spec->tty_rows, spec->tty_cols);
    while (spec->args != NULL && spec->args[nargs] != NULL)
        bytes += strlen(spec->args[nargs++]);
    if (nargs + nenv > CORE_PROCESS_ARGS_MAX)
        return rb_fail(RB_EINVAL, err, "more than %d arguments and environment variables", CORE_PROCESS_ARGS_MAX);
    const char *k;
    json_t *v;
    json_object_foreach(spec->envs, k, v)
    {
        if (k[0] == '\0' || strchr(k, '=') != NULL || !json_is_string(v))
            return rb_fail(RB_EINVAL, err, "environment variable '%.100s' needs a name without '=' and a string value",
                           k);
        bytes += strlen(k) + json_string_length(v) + 1;
    }
    if (bytes + strlen(spec->cmd) > CORE_PROCESS_BYTES_MAX)
        return rb_fail(RB_EINVAL, err, "the command line and environment exceed %u bytes", CORE_PROCESS_BYTES_MAX);
    const char **argv = xcalloc(nargs + 9, sizeof(*argv));
    size_t n = 0;
    argv[n++] = "/bin/sh";
    argv[n++] = "-c";
    argv[n++] = spec->tty_rows != 0 ? WRAPPER_TTY : WRAPPER;
    argv[n++] = "sh";
    if (spec->tty_rows != 0) {
        snprintf(rows, 12, "%u", spec->tty_rows);
        snprintf(cols, 12, "%u", spec->tty_cols);
        argv[n++] = rows;
        argv[n++] = cols;
    }
    argv[n++] = cwd;
    argv[n++] = spec->cmd;
    for (size_t i = 0; i < nargs; i++)
        argv[n++] = spec->args[i];
    argv[n] = NULL;
    const char **env = NULL;
    if (nenv > 0) {
        env = xcalloc(nenv + 1, sizeof(*env));
        n = 0;
        json_object_foreach(spec->envs, k, v)
            env[n++] = xasprintf("%s=%s", k, json_string_value(v));
        env[n] = NULL;
    }
    *argv_out = argv;
    *env_out = env;
    return RB_OK;
}

static json_t *describe(const core_process_spec *spec, const char *cwd)
{
    json_t *args = json_array();
    for (size_t i = 0; spec->args != NULL && spec->args[i] != NULL; i++)
        json_array_append_new(args, json_string(spec->args[i]));
    json_t *info = json_pack("{s:s, s:o, s:o, s:s}", "cmd", spec->cmd, "args", args, "envs",
                             spec->envs != NULL ? json_deep_copy(spec->envs) : json_object(), "cwd", cwd);
    if (spec->tag != NULL)
        json_object_set_new(info, "tag", json_string(spec->tag));
    if (spec->tty_rows != 0)
        json_object_set_new(info, "tty", json_pack("{s:I, s:I}", "rows", (json_int_t)spec->tty_rows, "cols",
                                                   (json_int_t)spec->tty_cols));
    return info;
}

static core_process_watch *watch_new(core_process *p, const core_process_cbs *cbs, void *data)
{
    core_process_watch *w = xcalloc(1, sizeof(*w));
    w->p = p;
    w->cbs = *cbs;
    w->data = data;
    w->next = p->watches;
    p->watches = w;
    p->nwatches++;
    if (p->throttled) { /* someone reads again: at its pace */
        uv_timer_stop(p->throttle);
        p->throttled = 0;
        apply_pause(p);
    }
    return w;
}

rb_err core_process_start(rb_core *c, const core_caller *who, const char *session_id, const core_process_spec *spec,
                          const core_process_cbs *cbs, void *data, core_process_watch **out, char *err)
{
    session *s = core__live_session(c, who, session_id, err);
    if (s == NULL)
        return RB_ENOTFOUND;
    if (s->sb == NULL || !sandbox_ready(s->sb) || s->container_id == NULL)
        return rb_fail(RB_ECONFLICT, err, "session %s is %s: its sandbox does not run commands now", s->id, s->status);
    if (s->nprocs >= CORE_PROCESS_MAX)
        return rb_fail(RB_EBUSY, err, "session %s runs %d processes already, the most it may; wait for one to end",
                       s->id, CORE_PROCESS_MAX);
    if (spec->tty_rows != 0) {
        int ttys = 0;
        for (core_process *q = s->procs; q != NULL; q = q->next)
            ttys += q->tty;
        if (ttys >= CORE_PROCESS_TTY_MAX)
            return rb_fail(RB_EBUSY, err,
                           "session %s has %d terminals open already, the most it may; kill one (pty.kill) first",
                           s->id, CORE_PROCESS_TTY_MAX);
    }
    const char *cwd = spec->cwd != NULL && spec->cwd[0] != '\0' ? spec->cwd : "/workspace";
    if (cwd[0] != '/')
        return rb_fail(RB_EINVAL, err, "cwd '%.200s' must be an absolute path", cwd);
    const char **argv = NULL, **env = NULL;
    char rows[12], cols[12];
    rb_err e = build(spec, cwd, rows, cols, &argv, &env, err);
    if (e != RB_OK)
        return e;
    core_process *p = xcalloc(1, sizeof(*p));
    p->c = c;
    p->keep = spec->keep != 0;
    p->tty = spec->tty_rows != 0;
    p->info = describe(spec, cwd);
    rb_buf_init(&p->early, EARLY_MAX);
    rb_buf_init(&p->backlog, CORE_PROCESS_BACKLOG);
    snprintf(p->container, sizeof(p->container), "%s", s->container_id);
    backend_exec_spec xs = {.argv = argv, .user = SANDBOX_USER, .env = env, .input = spec->stdin_open != 0 || p->tty,
                            .tty = p->tty};
    backend_stream_cbs bcbs = {on_data, on_exit_cb};
    e = backend_exec_stream(c->be, p->container, &xs, &bcbs, p, &p->st, err);
    free(argv);
    for (size_t i = 0; env != NULL && env[i] != NULL; i++)
        free((char *)env[i]);
    free(env);
    if (e != RB_OK) {
        process_free(p);
        return e;
    }
    if (spec->timeout_ms > 0) {
        p->timeout = xmalloc(sizeof(*p->timeout));
        uv_timer_init(c->loop, p->timeout);
        p->timeout->data = p;
        uv_timer_start(p->timeout, on_timeout, (uint64_t)spec->timeout_ms, 0);
    }
    p->s = s;
    p->next = s->procs;
    s->procs = p;
    s->nprocs++;
    s->last_used_at = rb_now_ms();
    *out = watch_new(p, cbs, data);
    return RB_OK;
}

void core_process_pause(core_process_watch *w, int paused)
{
    core_process *p = w->p;
    if (w->paused == !!paused)
        return;
    w->paused = !!paused;
    p->npaused += w->paused ? 1 : -1;
    apply_pause(p);
}

void core_process_detach(core_process_watch *w)
{
    core_process *p = w->p;
    if (w->paused)
        core_process_pause(w, 0);
    for (core_process_watch **pp = &p->watches; *pp != NULL; pp = &(*pp)->next) {
        if (*pp == w) {
            *pp = w->next;
            break;
        }
    }
    p->nwatches--;
    free(w);
    if (p->watches == NULL && !p->keep)
        doom(p);
}

static int tagged(const core_process *p, const char *tag)
{
    const char *mine = json_string_value(json_object_get(p->info, "tag"));
    return mine != NULL && strcmp(mine, tag) == 0;
}

/* The running process sel of who's session_id, or NULL with err. */
static core_process *running(rb_core *c, const core_caller *who, const char *session_id, const core_process_sel *sel,
                             char *err)
{
    session *s = core__live_session(c, who, session_id, err);
    core_process *p = s != NULL ? s->procs : NULL;
    while (p != NULL && !(p->state == P_RUNNING && p->st != NULL &&
                          (sel->pid != 0 ? p->pid == sel->pid
                                         : sel->tag != NULL && tagged(p, sel->tag))))
        p = p->next;
    if (s != NULL && p == NULL) {
        if (sel->pid != 0)
            rb_fail(RB_ENOTFOUND, err, "no running process %u in session %s", sel->pid, s->id);
        else
            rb_fail(RB_ENOTFOUND, err, "no running process tagged '%.100s' in session %s", sel->tag ? sel->tag : "",
                    s->id);
    }
    return p;
}

rb_err core_process_attach(rb_core *c, const core_caller *who, const char *session_id, const core_process_sel *sel,
                           const core_process_cbs *cbs, void *data, core_process_watch **out, unsigned *pid, char *err)
{
    core_process *p = running(c, who, session_id, sel, err);
    if (p == NULL)
        return RB_ENOTFOUND;
    if (p->nwatches >= CORE_PROCESS_WATCH_MAX)
        return rb_fail(RB_EBUSY, err, "process %u has %d watchers already, the most it may", p->pid,
                       CORE_PROCESS_WATCH_MAX);
    *out = watch_new(p, cbs, data);
    *pid = p->pid;
    return RB_OK;
}

void core_process_replay(core_process_watch *w)
{
    core_process *p = w->p;
    if (p->backlog.len == 0)
        return;
    rb_buf kept = p->backlog;
    rb_buf_init(&p->backlog, CORE_PROCESS_BACKLOG);
    for (size_t off = 0; off + 5 <= kept.len;) {
        const unsigned char *r = (const unsigned char *)kept.data + off;
        size_t n = (size_t)r[1] << 24 | (size_t)r[2] << 16 | (size_t)r[3] << 8 | r[4];
        w->cbs.on_output(w->data, r[0], kept.data + off + 5, n);
        off += 5 + n;
    }
    rb_buf_dispose(&kept);
}

rb_err core_process_input(rb_core *c, const core_caller *who, const char *session_id, const core_process_sel *sel,
                          const char *buf, size_t len, char *err)
{
    core_process *p = running(c, who, session_id, sel, err);
    if (p == NULL)
        return RB_ENOTFOUND;
    return backend_stream_write(c->be, p->st, buf, len, err);
}

rb_err core_process_close_input(rb_core *c, const core_caller *who, const char *session_id,
                                const core_process_sel *sel, char *err)
{
    core_process *p = running(c, who, session_id, sel, err);
    if (p == NULL)
        return RB_ENOTFOUND;
    return backend_stream_close_input(c->be, p->st, err);
}

rb_err core_process_signal(rb_core *c, const core_caller *who, const char *session_id, const core_process_sel *sel,
                           int sig, core_cb cb, void *data, core_op **handle, char *err)
{
    if (core__live_session(c, who, session_id, err) == NULL)
        return RB_ENOTFOUND;
    if (sig != SIGKILL && sig != SIGTERM)
        return rb_fail(RB_EINVAL, err, "signal %d cannot be sent: only SIGKILL and SIGTERM", sig);
    core_process *p = running(c, who, session_id, sel, err);
    if (p == NULL)
        return RB_ENOTFOUND;
    core_op *op = xcalloc(1, sizeof(*op));
    op->cb = cb;
    op->data = data;
    rb_err e = send_signal(p, sig, op, err);
    if (e != RB_OK) {
        free(op);
        return e;
    }
    if (handle != NULL)
        *handle = op;
    return RB_OK;
}

static void resized_cb(void *data, rb_err err, const char *errmsg)
{
    core_op *op = data;
    if (!op->cancelled)
        op->cb(op->data, err, err == RB_OK ? NULL : errmsg, err == RB_OK ? json_object() : NULL);
    free(op);
}

rb_err core_process_resize(rb_core *c, const core_caller *who, const char *session_id, const core_process_sel *sel,
                           unsigned rows, unsigned cols, core_cb cb, void *data, core_op **handle, char *err)
{
    core_process *p = running(c, who, session_id, sel, err);
    if (p == NULL)
        return RB_ENOTFOUND;
    if (!p->tty)
        return rb_fail(RB_ECONFLICT, err, "process %u runs without a terminal: it has no size", p->pid);
    if (rows == 0 || cols == 0 || rows > CORE_PROCESS_TTY_SIZE_MAX || cols > CORE_PROCESS_TTY_SIZE_MAX)
        return rb_fail(RB_EINVAL, err, "a terminal's rows and cols must be 1 to %d (were %u and %u)",
                       CORE_PROCESS_TTY_SIZE_MAX, rows, cols);
    core_op *op = xcalloc(1, sizeof(*op));
    op->cb = cb;
    op->data = data;
    rb_err e = backend_stream_resize(c->be, p->st, rows, cols, resized_cb, op, err);
    if (e != RB_OK) {
        free(op);
        return e;
    }
    if (handle != NULL)
        *handle = op;
    json_object_set_new(p->info, "tty", json_pack("{s:I, s:I}", "rows", (json_int_t)rows, "cols", (json_int_t)cols));
    return RB_OK;
}

rb_err core_process_list(rb_core *c, const core_caller *who, const char *session_id, json_t **out, char *err)
{
    session *s = core__live_session(c, who, session_id, err);
    if (s == NULL)
        return RB_ENOTFOUND;
    json_t *list = json_array();
    for (core_process *p = s->procs; p != NULL; p = p->next) {
        if (p->state != P_RUNNING)
            continue;
        json_t *item = json_deep_copy(p->info);
        json_object_set_new(item, "pid", json_integer(p->pid));
        json_array_append_new(list, item);
    }
    *out = list;
    return RB_OK;
}

void process_session_end(session *s, const char *reason)
{
    while (s->procs != NULL)
        finish(s->procs, RB_ECANCELED, reason, NULL);
}

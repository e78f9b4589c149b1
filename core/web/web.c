/*
 * web.c: the web-page reader (core_page_text in core/core.h), off unless --web-tool. One read
 * opens a page in headless Chromium and answers with its visible text, title and final URL (and
 * a PNG screenshot when asked). It never runs in a session's sandbox and never gives a page a
 * way around the address checks:
 *
 *   1. a fresh internal network (no route out) for this read alone;
 *   2. an egress proxy container (docker/web/egress_proxy.py) on the operator's --web-network and
 *      on that internal network, as "egress": it resolves every host a page asks for and refuses
 *      loopback, private, link-local, metadata and other non-public addresses (unless listed in
 *      --web-allow) and ports not in --web-ports, then connects to the address it checked;
 *   3. the browser container (docker/web/fetch_page.py) only on the internal network, so the
 *      proxy is the one thing it can reach, for the page, its redirects and every subresource;
 *   4. the browser's one JSON line is the answer; the proxy's events (refused destinations, the
 *      byte cap) are added to it; both containers and the network are removed afterwards.
 *
 * Both containers are hardened like the dependency installer's helpers (read-only root, no
 * capabilities, no-new-privileges, uid 1000, memory and process limits). Reads beyond
 * --web-max-concurrent get RB_EBUSY. The pure parts (URL check, the containers' output) are in
 * web_wire.c.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/web/web.h"

#include "base/codec.h"
#include "core/deps/oneshot.h"
#include "core/heart.h"
#include "core/web/web_wire.h"

#define PROXY_PORT "3128"
#define PROXY_MEMORY ((int64_t)128 * 1024 * 1024)
#define PROXY_TMP ((int64_t)16 * 1024 * 1024)
#define PROXY_PIDS 64
#define PROXY_CONNECTIONS "64"
#define BROWSER_MEMORY ((int64_t)1536 * 1024 * 1024)
#define BROWSER_TMP ((int64_t)512 * 1024 * 1024)
#define BROWSER_PIDS 512
#define SCREENSHOT_MAX ((size_t)12 * 1024 * 1024)
/* Beyond the page's own time: Chromium's start (fetch_page.py's STARTUP_S, 40 s, before the
 * page's timeout starts) and the browser container's start and end (20 s). */
#define BROWSER_SLACK_MS 60000L
#define PROXY_LINE_MAX WEB_EVENT_LINE_MAX
#define SETTLE_MS "500"
/* How often networks left by page reads are looked for. */
#define WEB_SWEEP_MS (60 * 1000)

/* One page read. */
typedef struct web_op {
    rb_core *c;
    core_op *op;           /* the caller's callback; NULL once answered */
    char *url;
    double timeout;        /* seconds */
    int max_chars;
    int screenshot;
    char net[128];         /* the internal network's name */
    int net_made;
    char *proxy_id;
    backend_attach *att;   /* the proxy's output */
    rb_buf line;           /* the proxy's line being read */
    int line_skip;         /* the line being read is too long: skipped up to its newline */
    json_t *events;        /* the proxy's events, at most WEB_EVENTS_MAX */
    int byte_cap;          /* the proxy reported its byte cap reached */
} web_op;

/* What the web reader keeps in the core (core_heart_room): page reads not yet answered (at most
 * web_max_concurrent), reads whose containers and network are not yet removed, and when networks
 * left by reads were last looked for. */
typedef struct web_room {
    int running, cleaning;
    int64_t last_sweep;
} web_room;

static web_room *room_of(rb_core *c)
{
    void **slot = core_heart_room(c, CORE_ROOM_WEB);
    if (*slot == NULL)
        *slot = xcalloc(1, sizeof(web_room));
    return *slot;
}

void web_dispose(rb_core *c)
{
    void **slot = core_heart_room(c, CORE_ROOM_WEB);
    free(*slot);
    *slot = NULL;
}

/* ---- the end: answer, then clean up -------------------------------------------------------- */

static void op_free(web_op *w)
{
    if (w->op != NULL) /* never answered: runboxd is closing */
        room_of(w->c)->running--;
    room_of(w->c)->cleaning--;
    core_heart_hold(w->c, -1);
    free(w->url);
    free(w->proxy_id);
    rb_buf_dispose(&w->line);
    json_decref(w->events);
    free(w);
}

static void net_removed_cb(void *data, rb_err err, const char *msg)
{
    web_op *w = data;
    if (err != RB_OK && err != RB_ENOTFOUND && err != RB_ECANCELED)
        rb_warn("web: could not remove network %s (removed at the next start): %s", w->net, msg);
    op_free(w);
}

static void remove_network(web_op *w)
{
    char err[RB_ERR_LEN];
    if (!w->net_made || backend_network_remove(core_heart_backend(w->c), w->net, net_removed_cb, w, err) != RB_OK)
        op_free(w);
}

static void proxy_removed_cb(void *data, rb_err err, const char *msg)
{
    web_op *w = data;
    if (err != RB_OK && err != RB_ENOTFOUND && err != RB_ECANCELED) {
        rb_warn("web: could not remove the egress proxy %.12s: %s", w->proxy_id, msg);
        core_heart_remove(w->c, w->proxy_id); /* retried; the network goes at the next start */
        op_free(w);
        return;
    }
    remove_network(w);
}

/* Answers the caller (once) with e/msg or body (handed over). */
static void answer(web_op *w, rb_err e, const char *msg, json_t *body)
{
    if (w->op != NULL) {
        room_of(w->c)->running--; /* the slot is free once answered; removing the proxy goes on */
        if (!w->op->cancelled)
            w->op->cb(w->op->data, e, e == RB_OK ? NULL : msg, body);
        else
            json_decref(body);
        free(w->op);
        w->op = NULL;
    } else {
        json_decref(body);
    }
}

/* Answers (if not yet), then removes the proxy and the network. */
static void finish(web_op *w, rb_err e, const char *msg, json_t *body)
{
    char err[RB_ERR_LEN];
    answer(w, e, msg, body);
    if (core_heart_closing(w->c)) { /* the backend is being freed: what is left is removed at the next start */
        w->att = NULL;
        op_free(w);
        return;
    }
    if (w->att != NULL) {
        backend_attach_close(core_heart_backend(w->c), w->att);
        w->att = NULL;
    }
    if (w->proxy_id == NULL || backend_remove(core_heart_backend(w->c), w->proxy_id, proxy_removed_cb, w, err) != RB_OK)
        remove_network(w);
}

/* A step failed: what the caller reads. */
static void fail(web_op *w, rb_err e, const char *step, const char *errmsg)
{
    char msg[RB_ERR_LEN];
    if (e == RB_ENOTFOUND) {
        snprintf(msg, sizeof(msg),
                 "the web-page reader's image '%.200s' does not exist on the Docker engine; build it with "
                 "docker/build-images --browser",
                 core_heart_settings(w->c)->web_image);
        e = RB_EUNAVAILABLE;
    } else {
        snprintf(msg, sizeof(msg), "web-page reader: %s: %.400s", step, errmsg ? errmsg : "no detail");
        if (e != RB_ECANCELED && e != RB_ETIMEDOUT)
            e = RB_EUNAVAILABLE;
    }
    finish(w, e, msg, NULL);
}

/* ---- the proxy's events --------------------------------------------------------------------- */

static void proxy_line(web_op *w, const char *line, size_t len)
{
    json_t *ev = web_event_parse(line, len);
    if (ev == NULL)
        return;
    const char *kind = json_string_value(json_object_get(ev, "event"));
    if (strcmp(kind, "byte_cap") == 0)
        w->byte_cap = 1;
    if ((strcmp(kind, "refused") == 0 || strcmp(kind, "unreachable") == 0) &&
        json_array_size(w->events) < WEB_EVENTS_MAX) {
        size_t i;
        json_t *seen;
        int dup = 0;
        json_array_foreach(w->events, i, seen) /* Chromium tries a refused tunnel three times */
            dup |= json_equal(seen, ev);
        if (!dup)
            json_array_append(w->events, ev);
    }
    json_decref(ev);
}

static void proxy_data(void *data, int stream, const char *buf, size_t len)
{
    web_op *w = data;
    if (stream != 1)
        return;
    for (size_t i = 0; i < len;) {
        const char *nl = memchr(buf + i, '\n', len - i);
        size_t n = nl ? (size_t)(nl - (buf + i)) : len - i;
        if (!w->line_skip && rb_buf_append(&w->line, buf + i, n) != RB_OK)
            w->line_skip = 1;
        if (nl != NULL) {
            if (!w->line_skip)
                proxy_line(w, w->line.data ? w->line.data : "", w->line.len);
            rb_buf_reset(&w->line);
            w->line_skip = 0;
            n++;
        }
        i += n;
    }
}

static void proxy_closed(void *data, rb_err err, const char *errmsg)
{
    web_op *w = data;
    (void)err;
    (void)errmsg;
    w->att = NULL; /* the handle is gone after on_close */
}

/* ---- the browser ---------------------------------------------------------------------------- */

/* The first refused event, as a sentence, into buf; 0 if there is none. */
static int refused_reason(web_op *w, char *buf, size_t n)
{
    size_t i;
    json_t *ev;
    json_array_foreach(w->events, i, ev)
    {
        if (strcmp(json_string_value(json_object_get(ev, "event")), "refused") != 0)
            continue;
        const char *host = json_string_value(json_object_get(ev, "host"));
        const char *addr = json_string_value(json_object_get(ev, "address"));
        const char *why = json_string_value(json_object_get(ev, "reason"));
        char where[300];
        if (addr != NULL && (host == NULL || strcmp(addr, host) != 0))
            snprintf(where, sizeof(where), "%s (%s)", host ? host : "?", addr);
        else
            snprintf(where, sizeof(where), "%s", host ? host : addr ? addr : "?");
        snprintf(buf, n,
                 "the page's address is refused: %s port %lld: %s. Only public addresses on the allowed ports are "
                 "read; the operator can allow others with --web-allow and --web-ports",
                 where, (long long)json_integer_value(json_object_get(ev, "port")), why ? why : "not allowed");
        return 1;
    }
    return 0;
}

static void browser_done(void *data, rb_err err, const char *errmsg, const backend_exec_result *r)
{
    web_op *w = data;
    char msg[RB_ERR_LEN];
    if (err != RB_OK) {
        if (err == RB_ETIMEDOUT)
            errmsg = "the browser did not finish within its deadline";
        fail(w, err, "running the browser", errmsg);
        return;
    }
    web_limits lim = {(size_t)w->max_chars, SCREENSHOT_MAX};
    rb_err code;
    int net_error;
    json_t *doc = web_result_parse(r->out, r->out_len, &lim, &code, &net_error, msg);
    if (doc == NULL) {
        if (net_error && refused_reason(w, msg, sizeof(msg)))
            code = RB_EFORBIDDEN;
        else if (code == RB_EUNAVAILABLE && r->err_len > 0)
            snprintf(msg + strlen(msg), sizeof(msg) - strlen(msg), " (exit code %d: %.200s)", r->exit_code,
                     r->err_len > 200 ? r->err + r->err_len - 200 : r->err);
        finish(w, code, msg, NULL);
        return;
    }
    json_object_set_new(doc, "url", json_string(w->url));
    json_object_set(doc, "refused", w->events);
    /* The cap as the proxy reported it, or as the browser saw it (the proxy's line may still be on
     * its way); either way the page was cut */
    if (w->byte_cap || json_is_true(json_object_get(doc, "byte_cap_reached"))) {
        json_object_set_new(doc, "byte_cap_reached", json_true());
        json_object_set_new(doc, "truncated", json_true());
    }
    finish(w, RB_OK, NULL, doc);
}

static void run_browser(web_op *w)
{
    char err[RB_ERR_LEN];
    rb_core *c = w->c;
    char timeout[32], chars[32], redirects[32], proxy[96];
    snprintf(timeout, sizeof(timeout), "%g", w->timeout);
    snprintf(chars, sizeof(chars), "%d", w->max_chars);
    snprintf(redirects, sizeof(redirects), "%d", core_heart_settings(c)->web_max_redirects);
    snprintf(proxy, sizeof(proxy), "http://egress:%s", PROXY_PORT);
    const char *cmd[20] = {"python3",     "-I",        "/opt/runbox-web/fetch_page.py",
                           "--url",       w->url,      "--proxy",
                           proxy,         "--timeout", timeout,
                           "--settle-ms", SETTLE_MS,   "--max-chars",
                           chars,         "--max-redirects", redirects};
    size_t n = 15;
    if (w->screenshot)
        cmd[n++] = "--screenshot";
    cmd[n] = NULL;
    const backend_label labels[] = {{"runbox.instance", core_heart_instance(c)}, {"runbox.managed", "1"}, {"runbox.web", "1"}};
    backend_mount tmp = {"/tmp", BROWSER_TMP, -1, -1, -1};
    static const char *const env[] = {"HOME=/tmp", "XDG_CONFIG_HOME=/tmp/.config", "XDG_CACHE_HOME=/tmp/.cache", NULL};
    backend_spec spec;
    oneshot_spec_init(&spec, core_heart_settings(c)->web_image, w->net);
    spec.cmd = cmd;
    spec.user = "1000:1000";
    spec.env = env;
    spec.labels = labels;
    spec.n_labels = 3;
    spec.memory = BROWSER_MEMORY + BROWSER_TMP; /* files in /tmp count as memory */
    spec.pids_limit = BROWSER_PIDS;
    spec.nano_cpus = 1000000000;
    spec.tmpfs = &tmp;
    char name[80], rnd[48];
    rb_random_id("", rnd, sizeof(rnd));
    snprintf(name, sizeof(name), "runbox-web-browser-%.16s", rnd);
    size_t max_out = (size_t)w->max_chars * 12 + SCREENSHOT_MAX + 64 * 1024;
    long deadline = (long)(w->timeout * 1000) + BROWSER_SLACK_MS;
    rb_err e = backend_run(core_heart_backend(c), name, &spec, deadline, max_out, browser_done, w, err);
    if (e != RB_OK)
        fail(w, e, "starting the browser", err);
}

/* ---- the egress proxy ----------------------------------------------------------------------- */

static void proxy_started(void *data, rb_err err, const char *errmsg)
{
    web_op *w = data;
    if (err != RB_OK) {
        fail(w, err, "starting the egress proxy", errmsg);
        return;
    }
    /* The browser waits until the proxy accepts connections before it opens the page. */
    run_browser(w);
}

static void proxy_attached(void *data, rb_err err, const char *errmsg)
{
    web_op *w = data;
    char e2[RB_ERR_LEN];
    if (err != RB_OK) {
        w->att = NULL;
        fail(w, err, "reading the egress proxy's output", errmsg);
        return;
    }
    if (backend_start(core_heart_backend(w->c), w->proxy_id, proxy_started, w, e2) != RB_OK)
        fail(w, RB_EIO, "starting the egress proxy", e2);
}

static void proxy_connected(void *data, rb_err err, const char *errmsg)
{
    web_op *w = data;
    char e2[RB_ERR_LEN];
    if (err != RB_OK) {
        fail(w, err, "joining the egress proxy to the browser's network", errmsg);
        return;
    }
    const backend_attach_cbs cbs = {proxy_attached, proxy_data, proxy_closed};
    if (backend_attach_open(core_heart_backend(w->c), w->proxy_id, &cbs, w, &w->att, e2) != RB_OK) {
        w->att = NULL;
        fail(w, RB_EIO, "reading the egress proxy's output", e2);
    }
}

static void proxy_created(void *data, rb_err err, const char *errmsg, const char *id)
{
    web_op *w = data;
    char e2[RB_ERR_LEN];
    if (err != RB_OK) {
        fail(w, err, "creating the egress proxy", errmsg);
        return;
    }
    w->proxy_id = xstrdup(id);
    if (backend_network_connect(core_heart_backend(w->c), w->net, w->proxy_id, "egress", proxy_connected, w, e2) != RB_OK)
        fail(w, RB_EIO, "joining the egress proxy to the browser's network", e2);
}

/* Appends "--flag item" for each comma-separated item of list to argv (at most max entries). */
static void add_items(const char **argv, size_t *n, size_t max, const char *flag, const char *list, char **own,
                      size_t *n_own)
{
    const char *p = list, *item;
    size_t len;
    while (*n + 2 < max && codec_list_next(&p, &item, &len)) {
        own[*n_own] = xstrndup(item, len);
        argv[(*n)++] = flag;
        argv[(*n)++] = own[(*n_own)++];
    }
}

static void net_created(void *data, rb_err err, const char *errmsg, const char *net)
{
    web_op *w = data;
    char e2[RB_ERR_LEN];
    rb_core *c = w->c;
    if (err != RB_OK) {
        fail(w, err, "creating the browser's network", errmsg);
        return;
    }
    /* the name to use from now on (with several engines: pinned to the one it is on, where the
     * proxy and the browser then go too) */
    snprintf(w->net, sizeof(w->net), "%s", net);
    w->net_made = 1;
    enum { ARGV_MAX = 160 };
    const char *argv[ARGV_MAX];
    char *own[ARGV_MAX];
    size_t n = 0, n_own = 0;
    char max_bytes[32], deadline[32];
    snprintf(max_bytes, sizeof(max_bytes), "%zu", core_heart_settings(c)->web_max_bytes);
    snprintf(deadline, sizeof(deadline), "%g", w->timeout + (double)BROWSER_SLACK_MS / 1000 + 10);
    const char *fixed[] = {"python3", "-I", "/opt/runbox-web/egress_proxy.py", "--listen", "0.0.0.0:" PROXY_PORT,
                           "--max-bytes", max_bytes, "--max-connections", PROXY_CONNECTIONS, "--connect-timeout", "5",
                           "--deadline", deadline};
    for (size_t i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++)
        argv[n++] = fixed[i];
    add_items(argv, &n, ARGV_MAX, "--allow", core_heart_settings(c)->web_allow, own, &n_own);
    add_items(argv, &n, ARGV_MAX, "--allow-port", core_heart_settings(c)->web_ports, own, &n_own);
    argv[n] = NULL;
    const backend_label labels[] = {{"runbox.instance", core_heart_instance(c)}, {"runbox.managed", "1"}, {"runbox.web", "1"}};
    backend_mount tmp = {"/tmp", PROXY_TMP, -1, -1, -1};
    backend_spec spec;
    oneshot_spec_init(&spec, core_heart_settings(c)->web_image, core_heart_settings(c)->web_network);
    spec.cmd = argv;
    spec.user = "1000:1000";
    spec.labels = labels;
    spec.n_labels = 3;
    spec.memory = PROXY_MEMORY + PROXY_TMP;
    spec.pids_limit = PROXY_PIDS;
    spec.nano_cpus = 500000000;
    spec.tmpfs = &tmp;
    spec.log_driver = "none"; /* its output is read from the attach stream */
    char name[160];
    snprintf(name, sizeof(name), "%s-proxy", w->net);
    rb_err e = backend_create(core_heart_backend(c), name, &spec, proxy_created, w, e2);
    for (size_t i = 0; i < n_own; i++)
        free(own[i]);
    if (e != RB_OK)
        fail(w, e, "creating the egress proxy", e2);
}

/* ---- the call ------------------------------------------------------------------------------- */

/* Reads the call's arguments into w; RB_EINVAL names the bad one. */
static rb_err read_args(web_op *w, json_t *args, char *err)
{
    const core_settings *cfg = core_heart_settings(w->c);
    json_t *url = json_object_get(args, "url");
    if (!json_is_string(url))
        return rb_fail(RB_EINVAL, err, "'url' is required: the http:// or https:// address of the page to read");
    rb_err e = web_url_check(json_string_value(url), json_string_length(url), err);
    if (e != RB_OK)
        return e;
    w->url = xstrdup(json_string_value(url));
    json_t *v = json_object_get(args, "timeout");
    w->timeout = cfg->web_timeout;
    if (v != NULL && !json_is_null(v)) {
        if (!json_is_number(v) || !(json_number_value(v) >= 1) || json_number_value(v) > cfg->web_timeout)
            return rb_fail(RB_EINVAL, err, "'timeout' must be a number of seconds from 1 to %g (--web-timeout)",
                           cfg->web_timeout);
        w->timeout = json_number_value(v);
    }
    w->max_chars = cfg->web_max_chars;
    v = json_object_get(args, "max_chars");
    if (v != NULL && !json_is_null(v)) {
        if (!json_is_integer(v) || json_integer_value(v) < 1 || json_integer_value(v) > cfg->web_max_chars)
            return rb_fail(RB_EINVAL, err, "'max_chars' must be an integer from 1 to %d (--web-max-chars)",
                           cfg->web_max_chars);
        w->max_chars = (int)json_integer_value(v);
    }
    v = json_object_get(args, "screenshot");
    if (v != NULL && !json_is_null(v)) {
        if (!json_is_boolean(v))
            return rb_fail(RB_EINVAL, err, "'screenshot' must be true or false");
        w->screenshot = json_is_true(v);
    }
    return RB_OK;
}

rb_err core_page_text(rb_core *c, json_t *args, core_cb cb, void *data, core_op **handle, char *err)
{
    if (!core_heart_settings(c)->web_tool)
        return rb_fail(RB_ENOTFOUND, err, "the web-page reader is off; the operator turns it on with --web-tool");
    if (!json_is_object(args))
        return rb_fail(RB_EINVAL, err, "the arguments must be an object: {\"url\": \"https://...\"}");
    const char *why = NULL;
    if (!core_heart_engine_ok(c, &why))
        return rb_fail(RB_EUNAVAILABLE, err, "Docker is not reachable (%s)", why);
    if (core_heart_closing(c))
        return rb_fail(RB_EUNAVAILABLE, err, "runboxd is shutting down");
    web_op *w = xcalloc(1, sizeof(*w));
    w->c = c;
    rb_err e = read_args(w, args, err);
    if (e == RB_OK && room_of(c)->running >= core_heart_settings(c)->web_max_concurrent)
        e = rb_fail(RB_EBUSY, err, "%d page reads are running, the most at once (--web-max-concurrent); retry shortly",
                    room_of(c)->running);
    if (e != RB_OK) {
        free(w->url);
        free(w);
        return e;
    }
    rb_buf_init(&w->line, PROXY_LINE_MAX);
    w->events = json_array();
    char rnd[48];
    rb_random_id("", rnd, sizeof(rnd));
    snprintf(w->net, sizeof(w->net), "runbox-web-%.16s", rnd);
    const backend_label labels[] = {{"runbox.instance", core_heart_instance(c)}, {"runbox.managed", "1"}, {"runbox.web", "1"}};
    e = backend_network_create(core_heart_backend(c), w->net, 1, labels, 3, net_created, w, err);
    if (e != RB_OK) {
        free(w->url);
        rb_buf_dispose(&w->line);
        json_decref(w->events);
        free(w);
        return e;
    }
    room_of(c)->running++;
    room_of(c)->cleaning++;
    core_heart_hold(c, 1);
    w->op = xcalloc(1, sizeof(*w->op));
    w->op->cb = cb;
    w->op->data = data;
    if (handle != NULL)
        *handle = w->op;
    return RB_OK;
}

int core_page_text_enabled(const rb_core *c)
{
    return core_heart_settings(c)->web_tool;
}

/* ---- networks left by an earlier runboxd ------------------------------------------------------ */

static void stale_removed_cb(void *data, rb_err err, const char *msg)
{
    char *name = data;
    if (err != RB_OK && err != RB_ENOTFOUND && err != RB_ECANCELED)
        rb_warn("web: could not remove the stale network %s: %s", name, msg);
    free(name);
}

static void stale_listed_cb(void *data, rb_err err, const char *errmsg, const backend_sandbox_info *items, size_t n)
{
    rb_core *c = data;
    char e2[RB_ERR_LEN];
    if (err != RB_OK) {
        if (err != RB_ECANCELED)
            rb_warn("web: cannot list stale networks: %s", errmsg);
        return;
    }
    if (room_of(c)->cleaning > 0 || core_heart_closing(c))
        return; /* a read started since the listing: its network is among these */
    for (size_t i = 0; i < n; i++) {
        const char *web = json_string_value(json_object_get(items[i].labels, "runbox.web"));
        if (web == NULL || strcmp(web, "1") != 0)
            continue; /* not a page read's (a session's network: core/network/) */
        char *name = xstrdup(items[i].id);
        rb_info("web: removing network %s left by an earlier runboxd", name);
        if (backend_network_remove(core_heart_backend(c), name, stale_removed_cb, name, e2) != RB_OK)
            free(name);
    }
}

void web_sweep(rb_core *c, int64_t now)
{
    char err[RB_ERR_LEN], label[80];
    web_room *r = room_of(c);
    if (!core_heart_settings(c)->web_tool || now - r->last_sweep < WEB_SWEEP_MS)
        return;
    r->last_sweep = now;
    if (r->cleaning > 0 || !core_heart_engine_ok(c, NULL))
        return; /* this process's own networks are in use */
    snprintf(label, sizeof(label), "runbox.instance=%s", core_heart_instance(c));
    if (backend_network_list(core_heart_backend(c), label, stale_listed_cb, c, err) != RB_OK &&
        core_heart_backend(c)->ops->network_list != NULL)
        rb_warn("web: cannot list stale networks: %s", err);
}

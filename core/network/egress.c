/*
 * egress.c: each networked session's internal network and egress proxy (core/network/egress.h).
 *
 * One entry per session with a way out, in the room's map by session id. Opening is a chain of
 * engine calls: network create -> proxy create (on --egress-network) -> join the network as
 * "egress" -> attach to its output -> start -> write the policy file; the entry is open once the
 * policy is written and the proxy said "ready". The same chain from "attach" (from "create" when
 * the proxy is gone) brings a stopped proxy back: the sweep runs it for an entry whose output
 * stream closed, at most once per RESTART_MS. An entry is freed when it is closed and no engine
 * call of its is in flight (refs). The proxy's output (readiness, counts, reports) is read in
 * egress_events.c; what both share is in egress_internal.h.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/network/egress_internal.h"

#include "base/codec.h"
#include "base/map.h"
#include "base/tar.h"
#include "core/deps/oneshot.h"
#include "core/network/netpolicy.h"

room *egress__room(rb_core *c)
{
    void **slot = core_heart_room(c, CORE_ROOM_NET);
    if (*slot == NULL) {
        room *r = xcalloc(1, sizeof(room));
        map_init(&r->entries);
        map_init(&r->closing);
        *slot = r;
    }
    return *slot;
}

static const char *const LIMIT_FLAGS[3] = {"--egress-allow", "--egress-max", "--egress-deny"};

rb_err egress_check_settings(const core_settings *s, char *err)
{
    char bad[80];
    netpolicy_limits l;
    rb_err e = netpolicy_limits_init(&l, s->egress, s->egress_allow, s->egress_max, s->egress_deny, LIMIT_FLAGS, err);
    if (e != RB_OK)
        return e;
    netpolicy_limits_dispose(&l);
    if (!codec_list_all(s->egress_cidr, codec_cidr_ok, bad, sizeof(bad)))
        return rb_fail(RB_EINVAL, err,
                       "egress-cidr: '%s' is not an IP address or CIDR range (e.g. 10.1.2.3, 172.18.0.0/16, fd00::/8)",
                       bad);
    if (s->egress_network == NULL || s->egress_network[0] == '\0' || strcmp(s->egress_network, "none") == 0 ||
        strcmp(s->egress_network, "host") == 0)
        return rb_fail(RB_EINVAL, err,
                       "egress-network: a Docker network the proxies reach the outside on is required (bridge or a "
                       "network of yours; not none or host)");
    return RB_OK;
}

rb_err egress_init(rb_core *c, char *err)
{
    const core_settings *s = core_heart_settings(c);
    room *r = egress__room(c);
    rb_err e = netpolicy_limits_init(&r->limits, s->egress, s->egress_allow, s->egress_max, s->egress_deny,
                                     LIMIT_FLAGS, err);
    if (e == RB_OK)
        e = egress__secrets_init(c, r, err);
    return e;
}

static void entry_free(entry *e)
{
    json_decref(e->policy);
    json_decref(e->reached);
    json_decref(e->refused);
    rb_buf_dispose(&e->line);
    free(e);
}

void egress_dispose(rb_core *c)
{
    void **slot = core_heart_room(c, CORE_ROOM_NET);
    room *r = *slot;
    if (r == NULL)
        return;
    size_t pos = 0;
    entry *e;
    /* the backend is freed (its attach streams closed without callbacks); calls still in flight
     * come back with RB_ECANCELED, on this loop turn or the next: their entries wait for them */
    rb_map *maps[2] = {&r->entries, &r->closing};
    for (int m = 0; m < 2; m++) {
        pos = 0;
        while ((e = map_next(maps[m], &pos)) != NULL) {
            while (e->updates != NULL) {
                update *u = e->updates;
                e->updates = u->next;
                free(u);
            }
            e->att = NULL;
            e->orphaned = 1;
            egress__ca_copy_orphan(e);
            if (e->refs == 0)
                entry_free(e);
        }
    }
    map_dispose(&r->entries);
    map_dispose(&r->closing);
    netpolicy_limits_dispose(&r->limits);
    egress__secrets_dispose(r);
    free(r);
    *slot = NULL;
}

rb_err egress_key_limit_check(const char *list, char *err)
{
    static const char *const flags[3] = {"--egress-allow", "the key's egress", "--egress-deny"};
    if (list == NULL || list[0] == '\0' || strcmp(list, "none") == 0)
        return RB_OK;
    netpolicy_limits l;
    rb_err e = netpolicy_limits_init(&l, 1, NULL, list, NULL, flags, err);
    if (e == RB_OK)
        netpolicy_limits_dispose(&l);
    return e;
}

static rb_err policy_of(rb_core *c, const char *key_limit, json_t *v, const char *what, json_t **out, char *err);

rb_err egress_policy(rb_core *c, const char *key_limit, const char *owner, json_t *v, const char *what, json_t **out,
                     char *err)
{
    json_t *names = json_is_object(v) ? json_object_get(v, "secrets") : NULL;
    if (names == NULL)
        return policy_of(c, key_limit, v, what, out, err);
    json_t *rest = json_copy(v); /* netpolicy knows allow and deny only */
    json_object_del(rest, "secrets");
    rb_err e = policy_of(c, key_limit, rest, what, out, err);
    json_decref(rest);
    if (e == RB_OK && *out != NULL && (e = egress__policy_add_secrets(c, owner, names, what, *out, err)) != RB_OK) {
        json_decref(*out);
        *out = NULL;
    }
    return e;
}

static rb_err policy_of(rb_core *c, const char *key_limit, json_t *v, const char *what, json_t **out, char *err)
{
    room *r = egress__room(c);
    *out = NULL;
    if (key_limit == NULL || key_limit[0] == '\0' || v == NULL || json_is_null(v) || json_is_false(v))
        return netpolicy_request(&r->limits, v, what, out, err);
    if (!r->limits.enabled || (!json_is_true(v) && !json_is_object(v))) /* 403 naming --egress, or 400 */
        return netpolicy_request(&r->limits, v, what, out, err);
    if (strcmp(key_limit, "none") == 0)
        return rb_fail(RB_EFORBIDDEN, err,
                       "%s: this API key may not give its sandboxes a network (egress=none in the keys file)", what);
    /* the key's maximum in place of --egress-max; the default list only for `true` */
    const core_settings *s = core_heart_settings(c);
    static const char *const flags[3] = {"--egress-allow", "this API key's egress limit (keys file)", "--egress-deny"};
    netpolicy_limits l;
    char why[RB_ERR_LEN];
    if (netpolicy_limits_init(&l, 1, json_is_true(v) ? s->egress_allow : NULL, key_limit, s->egress_deny, flags, why) !=
        RB_OK)
        return rb_fail(RB_EFORBIDDEN, err,
                       "%s: true (the server's default list) is beyond this API key's egress limit (%.200s); ask for "
                       "{\"allow\": [...]} within it",
                       what, key_limit);
    rb_err e = netpolicy_request(&l, v, what, out, err);
    netpolicy_limits_dispose(&l);
    return e;
}

void egress_counts_read(rb_core *c, egress_counts *out)
{
    room *r = egress__room(c);
    *out = r->counts;
    out->proxies = (int64_t)r->entries.len;
}

/* ---- the chain ------------------------------------------------------------------------------- */

static void chain_step(entry *e, int step);
void egress__chain_failed(entry *e, rb_err err, const char *what, const char *msg);

static void close_step(entry *e);

/* Drops one reference. Returns 1 when e is closed (the caller must not go on with its chain: the
 * removal goes on, and may have freed e). */
int egress__unref(entry *e)
{
    e->refs--;
    if (e->orphaned) { /* the room is gone (egress_dispose): only this entry's memory is left */
        if (e->refs == 0)
            entry_free(e);
        return 1;
    }
    if (e->state == E_CLOSED) {
        close_step(e);
        return 1;
    }
    return 0;
}

static void finish_updates(entry *e, rb_err err, const char *msg)
{
    while (e->updates != NULL) {
        update *u = e->updates;
        e->updates = u->next;
        u->cb(u->data, err, msg);
        free(u);
    }
}

/* The chain reached its end: the proxy runs with its policy. */
void egress__maybe_open(entry *e)
{
    if (!e->written || !(e->ready || e->recovering) || e->state == E_CLOSED)
        return;
    e->chain = 0;
    if (e->state == E_DOWN)
        rb_info("session %s: its egress proxy is back", e->sid);
    e->state = E_OPEN;
    e->refs++; /* a waiter may end the session */
    finish_updates(e, RB_OK, NULL);
    egress__unref(e);
}

void egress__chain_failed(entry *e, rb_err err, const char *what, const char *msg)
{
    char text[RB_ERR_LEN];
    snprintf(text, sizeof(text), "the session's egress proxy: %s: %.300s", what, msg ? msg : "no detail");
    e->chain = 0;
    if (err == RB_ENOTFOUND && strstr(what, "creating") != NULL)
        snprintf(text, sizeof(text),
                 "the session's egress proxy: the image '%.200s' (which holds it) or the network '%.100s' does not "
                 "exist on the Docker engine: build the image with docker/build-images, create the network or set "
                 "--egress-network",
                 core_heart_settings(e->c)->image, core_heart_settings(e->c)->egress_network);
    if (e->open_cb != NULL) {
        egress_open_cb cb = e->open_cb;
        e->open_cb = NULL;
        cb(e->open_data, err == RB_ECANCELED ? err : RB_EUNAVAILABLE, text, NULL);
        return; /* the caller closes it */
    }
    e->refs++; /* a waiter may end the session (and close e) */
    finish_updates(e, RB_EUNAVAILABLE, text);
    if (egress__unref(e))
        return;
    if (e->state != E_CLOSED) {
        rb_warn("session %s: %s (tried again in %d ms)", e->sid, text, RESTART_MS);
        e->state = E_DOWN;
        e->next_try = rb_now_ms() + RESTART_MS;
    }
}

/* ---- chain steps ------------------------------------------------------------------------------- */

enum { S_NET, S_CREATE, S_CONNECT, S_ATTACH, S_START, S_WRITE, S_REPLACE };

static void write_policy(entry *e);

static void policy_written(void *data, rb_err err, const char *msg)
{
    entry *e = data;
    e->writing = 0;
    if (egress__unref(e) || (!e->chain && e->state != E_OPEN)) /* closed, or a chain that failed meanwhile */
        return;
    if (err != RB_OK) {
        egress__chain_failed(e, err, "writing its policy", msg);
        return;
    }
    if (e->dirty) { /* changed while it was being written */
        write_policy(e);
        return;
    }
    e->written = 1;
    egress__maybe_open(e);
}

/* Writes e's policy file into the proxy: {"clients": {"*": {session, allow, deny}}}; one write
 * at a time (a change meanwhile is written next). */
static void write_policy(entry *e)
{
    char err[RB_ERR_LEN];
    e->dirty = 0;
    e->writing = 1;
    e->refs++;
    json_t *client = json_pack("{s:s, s:O, s:O}", "session", e->sid, "allow", json_object_get(e->policy, "allow"),
                               "deny", json_object_get(e->policy, "deny"));
    if (e->intercept) /* the values: only in the proxy's file, never in a log or the store */
        json_object_set_new(client, "secrets", egress__proxy_secrets(e));
    json_t *doc = json_pack("{s:{s:o}}", "clients", "*", client);
    char *text = json_dumps(doc, JSON_COMPACT);
    json_decref(doc);
    rb_buf tar;
    rb_buf_init(&tar, PROXY_POLICY_SIZE);
    rb_err rc = text == NULL ? rb_fail(RB_EINTERNAL, err, "out of memory")
                             : tar_build_file(&tar, "policy.json", text, strlen(text), 0644, 1000, 1000,
                                              rb_now_ms() / 1000, err);
    free(text);
    if (rc == RB_OK)
        rc = backend_archive_put(core_heart_backend(e->c), e->proxy, PROXY_POLICY_DIR, tar.data, tar.len,
                                 policy_written, e, err);
    rb_buf_dispose(&tar);
    if (rc != RB_OK)
        policy_written(e, rc, err);
}

static void step_done(void *data, rb_err err, const char *msg, int step)
{
    entry *e = data;
    if (egress__unref(e) || !e->chain) /* closed, or a step of a chain that failed meanwhile */
        return;
    static const char *const what[] = {"creating its network", "creating it", "joining it to the session's network",
                                       "reading its output", "starting it", "writing its policy"};
    if (err == RB_ENOTFOUND && step == S_ATTACH) { /* gone: made anew on its network */
        chain_step(e, S_CREATE);
        return;
    }
    if (err == RB_ECONFLICT && step == S_CREATE && !e->replacing) { /* one left by an earlier try */
        e->replacing = 1;
        chain_step(e, S_REPLACE);
        return;
    }
    if (err != RB_OK) {
        egress__chain_failed(e, err, what[step == S_REPLACE ? S_CREATE : step], msg);
        return;
    }
    if (step == S_NET && e->open_cb != NULL) { /* the sandbox can be made on it while the proxy starts */
        egress_open_cb cb = e->open_cb;
        e->open_cb = NULL;
        e->refs++; /* the caller may end the session in its callback */
        cb(e->open_data, RB_OK, NULL, e->net);
        if (egress__unref(e))
            return;
    }
    chain_step(e, step == S_REPLACE ? S_CREATE : step + 1);
}

static void net_created(void *data, rb_err err, const char *msg, const char *net)
{
    entry *e = data;
    if (err == RB_OK) { /* kept even when closed meanwhile: the removal needs it */
        snprintf(e->net, sizeof(e->net), "%s", net);
        snprintf(e->proxy, sizeof(e->proxy), "%s-proxy", net);
    }
    step_done(e, err, msg, S_NET);
}
static void proxy_created(void *data, rb_err err, const char *msg, const char *id)
{
    (void)id;
    step_done(data, err, msg, S_CREATE);
}
static void proxy_connected(void *data, rb_err err, const char *msg)
{
    step_done(data, err, msg, S_CONNECT);
}
static void proxy_attached(void *data, rb_err err, const char *msg)
{
    entry *e = data;
    e->att_opening = 0;
    if (err != RB_OK)
        e->att = NULL;
    step_done(data, err, msg, S_ATTACH);
}
static void proxy_started(void *data, rb_err err, const char *msg)
{
    step_done(data, err, msg, S_START);
}
static void proxy_replaced(void *data, rb_err err, const char *msg)
{
    step_done(data, err == RB_ENOTFOUND ? RB_OK : err, msg, S_REPLACE);
}

/* Appends "--allow CIDR" for each --egress-cidr entry. */
static size_t add_cidrs(const char **argv, size_t n, size_t max, const char *list, char **own, size_t *n_own)
{
    const char *p = list, *item;
    size_t len;
    while (n + 2 < max && codec_list_next(&p, &item, &len)) {
        own[*n_own] = xstrndup(item, len);
        argv[n++] = "--allow";
        argv[n++] = own[(*n_own)++];
    }
    return n;
}

static rb_err create_proxy(entry *e, char *err)
{
    rb_core *c = e->c;
    const core_settings *cfg = core_heart_settings(c);
    enum { ARGV_MAX = 160 };
    const char *argv[ARGV_MAX];
    char *own[ARGV_MAX];
    size_t n = 0, n_own = 0;
    const char *fixed[] = {"python3", "-I", PROXY_SCRIPT, "--listen", "0.0.0.0:3128", "--policy-file",
                           PROXY_POLICY_DIR "/policy.json", "--max-connections", PROXY_CONNECTIONS,
                           "--connect-timeout", "10", "--deadline", "0"};
    for (size_t i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++)
        argv[n++] = fixed[i];
    n = add_cidrs(argv, n, ARGV_MAX, cfg->egress_cidr, own, &n_own);
    if (e->intercept) { /* a CA of its own, made by the proxy in its policy folder: the key never leaves it */
        argv[n++] = "--ca-dir";
        argv[n++] = PROXY_CA_DIR;
        if (egress__room(c)->upstream_ca != NULL) {
            argv[n++] = "--upstream-ca-pem";
            argv[n++] = egress__room(c)->upstream_ca;
        }
    }
    argv[n] = NULL;
    const backend_label labels[] = {{"runbox.instance", core_heart_instance(c)},
                                    {"runbox.managed", "1"},
                                    {"runbox.session", e->sid},
                                    {"runbox.role", "egress"}};
    backend_mount tmp = {"/tmp", PROXY_TMP, -1, -1, -1};
    backend_spec spec;
    oneshot_spec_init(&spec, cfg->image, cfg->egress_network);
    spec.cmd = argv;
    spec.user = "1000:1000";
    spec.labels = labels;
    spec.n_labels = 4;
    spec.memory = PROXY_MEMORY + PROXY_TMP + PROXY_POLICY_SIZE;
    spec.pids_limit = PROXY_PIDS;
    spec.nano_cpus = 1000000000; /* one CPU, as a sandbox's default: relaying is CPU-bound at ~200 MB/s */
    spec.tmpfs = &tmp;
    spec.n_tmpfs = 1;
    spec.workspace = (backend_mount){PROXY_POLICY_DIR, PROXY_POLICY_SIZE, 1000, 1000, 0755};
    spec.workspace_labels = labels;
    spec.n_workspace_labels = 4;
    spec.log_driver = "none"; /* its output is read from the attach stream */
    e->refs++;
    rb_err rc = backend_create(core_heart_backend(c), e->proxy, &spec, proxy_created, e, err);
    if (rc != RB_OK)
        e->refs--;
    for (size_t i = 0; i < n_own; i++)
        free(own[i]);
    return rc;
}

static void chain_step(entry *e, int step)
{
    char err[RB_ERR_LEN];
    rb_err rc = RB_OK;
    backend *be = core_heart_backend(e->c);
    if (!e->chain)
        e->chain_started = rb_now_ms();
    e->chain = 1;
    switch (step) {
    case S_NET: {
        const backend_label labels[] = {{"runbox.instance", core_heart_instance(e->c)},
                                        {"runbox.managed", "1"},
                                        {"runbox.session", e->sid},
                                        {"runbox.role", "egress"}};
        char name[80];
        snprintf(name, sizeof(name), "runbox-net-%s", e->sid);
        e->refs++;
        rc = backend_network_create(be, name, 1, labels, 4, net_created, e, err);
        break;
    }
    case S_CREATE:
        if ((rc = create_proxy(e, err)) != RB_OK) /* its reference is its own */
            egress__chain_failed(e, rc, "creating it", err);
        return;
    case S_REPLACE:
        e->refs++;
        rc = backend_remove(be, e->proxy, proxy_replaced, e, err);
        break;
    case S_CONNECT:
        e->refs++;
        rc = backend_network_connect(be, e->net, e->proxy, EGRESS_PROXY_HOST, proxy_connected, e, err);
        break;
    case S_ATTACH: {
        const backend_attach_cbs cbs = {proxy_attached, egress__proxy_data, egress__proxy_closed};
        e->ready = e->written = 0;
        rb_buf_reset(&e->line);
        e->line_skip = 0;
        e->refs++;
        e->att_opening = 1;
        rc = backend_attach_open(be, e->proxy, &cbs, e, &e->att, err);
        if (rc != RB_OK) {
            e->att = NULL;
            e->att_opening = 0;
        }
        break;
    }
    case S_START:
        e->refs++;
        rc = backend_start(be, e->proxy, proxy_started, e, err);
        break;
    case S_WRITE:
        write_policy(e);
        return;
    default:
        return;
    }
    if (rc != RB_OK) {
        e->refs--;
        egress__chain_failed(e, rc, "calling the engine", err);
    }
}

/* ---- the calls --------------------------------------------------------------------------------- */

static entry *entry_new(rb_core *c, const char *session_id, json_t *policy)
{
    entry *e = xcalloc(1, sizeof(*e));
    e->c = c;
    snprintf(e->sid, sizeof(e->sid), "%s", session_id);
    e->policy = json_deep_copy(policy);
    e->intercept = egress__policy_intercepts(policy);
    rb_buf_init(&e->line, LINE_MAX_BYTES);
    map_put(&egress__room(c)->entries, e->sid, e);
    return e;
}

rb_err egress_open(rb_core *c, const char *session_id, json_t *policy, egress_open_cb cb, void *data, char *err)
{
    room *r = egress__room(c);
    if (!json_is_object(policy))
        return rb_fail(RB_EINVAL, err, "no network policy");
    if (map_get(&r->entries, session_id) != NULL || map_get(&r->closing, session_id) != NULL)
        return rb_fail(RB_ECONFLICT, err, "session %s has a way out already", session_id);
    entry *e = entry_new(c, session_id, policy);
    e->open_cb = cb;
    e->open_data = data;
    chain_step(e, S_NET);
    return RB_OK;
}

void egress_recover(rb_core *c, const char *session_id, const char *net, json_t *policy)
{
    room *r = egress__room(c);
    if (net == NULL || net[0] == '\0' || !json_is_object(policy) || map_get(&r->entries, session_id) != NULL)
        return;
    entry *e = entry_new(c, session_id, policy);
    snprintf(e->net, sizeof(e->net), "%s", net);
    snprintf(e->proxy, sizeof(e->proxy), "%s-proxy", net);
    e->recovering = 1;
    e->ca_copied = e->intercept; /* its sandbox has the bundle; a proxy made anew copies it again */
    rb_info("session %s: taking over its egress proxy %s", e->sid, e->proxy);
    chain_step(e, S_ATTACH);
}

rb_err egress__wait_open(entry *e, egress_done_cb cb, void *data, char *err)
{
    (void)err;
    if (e->state == E_OPEN) {
        cb(data, RB_OK, NULL);
        return RB_OK;
    }
    update *u = xcalloc(1, sizeof(*u));
    u->e = e;
    u->cb = cb;
    u->data = data;
    u->next = e->updates;
    e->updates = u;
    return RB_OK;
}

rb_err egress_ready(rb_core *c, const char *session_id, const char *container, egress_done_cb cb, void *data,
                    char *err)
{
    entry *e = map_get(&egress__room(c)->entries, session_id);
    if (e == NULL)
        return rb_fail(RB_ENOTFOUND, err, "session %s has no way out", session_id);
    if (e->intercept && container != NULL)
        return egress__ca_copy_start(e, container, cb, data, err);
    return egress__wait_open(e, cb, data, err);
}

void egress__policy_changed(entry *e)
{
    e->dirty = 1;
    if (e->state == E_OPEN && !e->writing)
        write_policy(e);
}

rb_err egress_update(rb_core *c, const char *session_id, json_t *policy, egress_done_cb cb, void *data, char *err)
{
    entry *e = map_get(&egress__room(c)->entries, session_id);
    if (e == NULL)
        return rb_fail(RB_ECONFLICT, err,
                       "session %s was created without a network: its sandbox has no network interface to give a "
                       "policy to; create a new session with execution_options.network",
                       session_id);
    if (!json_is_object(policy))
        return rb_fail(RB_EINVAL, err, "no network policy");
    json_decref(e->policy);
    e->policy = json_deep_copy(policy);
    update *u = xcalloc(1, sizeof(*u));
    u->e = e;
    u->cb = cb;
    u->data = data;
    u->next = e->updates;
    e->updates = u;
    e->dirty = 1;
    if (e->state == E_OPEN && !e->writing)
        write_policy(e);
    /* else: the write in flight or the running chain writes it next, and answers once done */
    return RB_OK;
}

/* A removal call of a closed entry came back: 1 when the room is gone (e then freed by its last
 * call); else its reference dropped, close_step's to call. */
static int closed_back(entry *e)
{
    if (e->orphaned) {
        egress__unref(e);
        return 1;
    }
    e->refs--;
    return 0;
}

static void closed_net_cb(void *data, rb_err err, const char *msg)
{
    entry *e = data;
    if (closed_back(e))
        return;
    if (err == RB_OK || err == RB_ENOTFOUND || err == RB_ECANCELED || ++e->net_tries >= NET_REMOVE_TRIES) {
        if (err != RB_OK && err != RB_ENOTFOUND && err != RB_ECANCELED)
            rb_warn("session %s: could not remove its network %s (the next start removes it): %s", e->sid, e->net,
                    msg);
        e->net[0] = '\0';
    } else {
        e->next_try = rb_now_ms() + NET_RETRY_MS; /* its sandbox is still being removed: the sweep tries again */
        return;
    }
    close_step(e);
}

static void closed_proxy_cb(void *data, rb_err err, const char *msg)
{
    entry *e = data;
    if (closed_back(e))
        return;
    if (err != RB_OK && err != RB_ENOTFOUND && err != RB_ECANCELED) {
        rb_warn("session %s: could not remove its egress proxy %s: %s", e->sid, e->proxy, msg);
        core_heart_remove(e->c, e->proxy); /* retried by the heart */
    }
    e->proxy_gone = 1;
    close_step(e);
}

/* Removes what a closed entry left, one engine call at a time; frees it at the end. */
static void close_step(entry *e)
{
    char err[RB_ERR_LEN];
    room *r = egress__room(e->c);
    if (e->refs > 0)
        return; /* the call in flight comes back here */
    if (core_heart_closing(e->c)) /* left for the next start */
        return;
    backend *be = core_heart_backend(e->c);
    if (e->net[0] != '\0' && !e->proxy_gone) {
        e->refs++;
        if (backend_remove(be, e->proxy, closed_proxy_cb, e, err) == RB_OK)
            return;
        e->refs--;
        e->proxy_gone = 1;
    }
    if (e->net[0] != '\0') {
        if (rb_now_ms() < e->next_try)
            return; /* the sweep comes back */
        e->refs++;
        if (backend_network_remove(be, e->net, closed_net_cb, e, err) == RB_OK)
            return;
        e->refs--;
        rb_warn("session %s: could not remove its network %s (the next start removes it): %s", e->sid, e->net, err);
    }
    map_del(&r->closing, e->sid);
    core_heart_hold(e->c, -1);
    entry_free(e);
}

void egress_close(rb_core *c, const char *session_id)
{
    room *r = egress__room(c);
    entry *e = map_get(&r->entries, session_id);
    if (e == NULL)
        return;
    map_del(&r->entries, session_id);
    e->state = E_CLOSED;
    e->open_cb = NULL;
    core_heart_hold(c, 1); /* a graceful stop waits for the removal (close_step lets go) */
    finish_updates(e, RB_ECANCELED, "the session ended");
    egress__ca_copy_cancel(e);
    if (e->att != NULL) {
        /* no callback comes after this, not even a pending on_open: its reference goes here */
        int opening = e->att_opening;
        backend_attach_close(core_heart_backend(c), e->att);
        e->att = NULL;
        if (opening) {
            e->att_opening = 0;
            e->refs--;
        }
    }
    map_put(&r->closing, e->sid, e);
    close_step(e);
}

void egress_sweep(rb_core *c, int64_t now)
{
    room *r = egress__room(c);
    if (core_heart_closing(c))
        return;
    size_t pos = 0;
    entry *e;
    while ((e = map_next(&r->entries, &pos)) != NULL) { /* a proxy that never says it is ready */
        if (e->chain && now - e->chain_started > CHAIN_MAX_MS) {
            egress__chain_failed(e, RB_ETIMEDOUT, "starting it", "it did not say it was ready within 30 s");
            pos = 0; /* the map may have changed (the session ended) */
        }
    }
    pos = 0;
    while ((e = map_next(&r->entries, &pos)) != NULL) {
        if (e->state != E_DOWN || e->chain || e->refs > 0 || now < e->next_try || !core_heart_engine_ok(c, NULL))
            continue;
        r->counts.restarts++;
        e->next_try = now + RESTART_MS;
        chain_step(e, S_ATTACH);
    }
    /* closed entries waiting to remove their network: close_step may free them (and change the
     * map), so their ids are taken first */
    enum { DUE_MAX = 64 };
    char due[DUE_MAX][RB_ID_LEN];
    size_t n_due = 0;
    pos = 0;
    while (n_due < DUE_MAX && (e = map_next(&r->closing, &pos)) != NULL)
        if (e->refs == 0 && now >= e->next_try)
            snprintf(due[n_due++], RB_ID_LEN, "%s", e->sid);
    for (size_t i = 0; i < n_due; i++)
        if ((e = map_get(&r->closing, due[i])) != NULL)
            close_step(e);
}

static void orphans_listed(void *data, rb_err err, const char *msg, const backend_sandbox_info *items, size_t n)
{
    rb_core *c = data;
    room *r = egress__room(c);
    if (err != RB_OK) {
        if (err != RB_ECANCELED)
            rb_warn("egress: cannot list the networks of earlier sessions: %s", msg);
        return;
    }
    if (core_heart_closing(c))
        return;
    for (size_t i = 0; i < n; i++) {
        const char *role = json_string_value(json_object_get(items[i].labels, "runbox.role"));
        const char *sid = json_string_value(json_object_get(items[i].labels, "runbox.session"));
        if (role == NULL || strcmp(role, "egress") != 0 || sid == NULL || strlen(sid) >= RB_ID_LEN ||
            map_get(&r->entries, sid) != NULL || map_get(&r->closing, sid) != NULL)
            continue;
        rb_info("egress: removing the network %s of session %s, which is no longer live", items[i].id, sid);
        entry *e = xcalloc(1, sizeof(*e));
        e->c = c;
        snprintf(e->sid, sizeof(e->sid), "%s", sid);
        snprintf(e->net, sizeof(e->net), "%s", items[i].id);
        snprintf(e->proxy, sizeof(e->proxy), "%s-proxy", items[i].id);
        rb_buf_init(&e->line, LINE_MAX_BYTES);
        e->state = E_CLOSED;
        core_heart_hold(c, 1);
        map_put(&r->closing, e->sid, e);
    }
}

void egress_recovered(rb_core *c)
{
    char err[RB_ERR_LEN], label[80];
    snprintf(label, sizeof(label), "runbox.instance=%s", core_heart_instance(c));
    if (core_heart_backend(c)->ops->network_list == NULL)
        return;
    if (backend_network_list(core_heart_backend(c), label, orphans_listed, c, err) != RB_OK)
        rb_warn("egress: cannot list the networks of earlier sessions: %s", err);
}

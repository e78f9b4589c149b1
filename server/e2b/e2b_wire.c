/*
 * e2b_wire.c: E2B paths, the list's metadata filter, the network, pause, lifecycle and volume
 * mount options' mapping (server/e2b/e2b_wire.h), pure functions over untrusted input; the byte
 * parsers are fuzzed by tests/fuzz/fuzz_e2b.c.
 */
#include "server/e2b/e2b_wire.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "server/e2b/e2b.h"
#include "server/query.h"

const char *e2b_path_map(const char *path)
{
    static const char home[] = E2B_HOME;
    size_t nh = sizeof(home) - 1;
    if (path == NULL || path[0] == '\0')
        return NULL;
    if (path[0] != '/')
        return path;
    if (strncmp(path, home, nh) != 0 || (path[nh] != '\0' && path[nh] != '/'))
        return NULL;
    const char *rest = path + nh;
    while (*rest == '/')
        rest++;
    return *rest == '\0' ? E2B_WORKDIR : rest;
}

int e2b_metadata_match(const char *filter, size_t n, json_t *meta)
{
    size_t start = 0;
    int ok = 1;
    while (ok && start < n) {
        size_t stop = start;
        while (stop < n && filter[stop] != '&')
            stop++;
        if (stop > start) { /* "a=1&&b=2": empty pairs are skipped */
            const char *eq = memchr(filter + start, '=', stop - start);
            if (eq == NULL) {
                ok = 0;
                break;
            }
            size_t kn = (size_t)(eq - (filter + start)), vn = stop - start - kn - 1;
            char *key = xmalloc(kn + 1), *val = xmalloc(vn + 1);
            size_t klen = query_decode(filter + start, kn, key);
            size_t vlen = query_decode(eq + 1, vn, val);
            json_t *have = strlen(key) == klen ? json_object_get(meta, key) : NULL;
            ok = json_is_string(have) && json_string_length(have) == vlen &&
                 memcmp(json_string_value(have), val, vlen) == 0;
            free(key);
            free(val);
        }
        start = stop + 1;
    }
    return ok;
}

const char *e2b_language(const char *name)
{
    if (name == NULL)
        return NULL;
    if (strcmp(name, "js") == 0)
        return "javascript";
    if (strcmp(name, "ts") == 0)
        return "typescript";
    return name;
}

/* ---- network options ----------------------------------------------------------------------- */

static int is_digit(char c)
{
    return c >= '0' && c <= '9';
}

static int is_hex(char c)
{
    return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

/* Whether an entry of allowOut/denyOut names addresses rather than hosts: a CIDR, an IPv6
 * literal, or a name whose last label is a number (1.2.3.4, also 127.1 and 0x7f.1, which
 * resolvers read as IPv4), as runbox's host patterns (core/network/hostpattern.c) see them. */
static int is_address(const char *s, size_t n)
{
    size_t colons = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '/')
            return 1;
        colons += s[i] == ':';
    }
    if ((n > 0 && s[0] == '[') || colons > 1)
        return 1;
    const char *colon = memchr(s, ':', n);
    size_t end = colon != NULL ? (size_t)(colon - s) : n;
    if (end > 0 && s[end - 1] == '.')
        end--;
    size_t b = end;
    while (b > 0 && s[b - 1] != '.')
        b--;
    if (b == end)
        return 0;
    int hex = end - b >= 2 && s[b] == '0' && (s[b + 1] == 'x' || s[b + 1] == 'X');
    for (size_t i = b + (hex ? 2 : 0); i < end; i++)
        if (!(hex ? is_hex(s[i]) : is_digit(s[i])))
            return 0;
    return 1;
}

/* Reads the list key of net into hosts (a new array; left NULL when absent). *all is set when
 * the list holds E2B_ALL_TRAFFIC (or "::/0"), which only denyOut may hold and which is not
 * kept. RB_EINVAL naming the entry. */
static rb_err read_hosts(json_t *net, const char *key, const char *pre, int deny, json_t **hosts, int *all, char *err)
{
    json_t *v = json_object_get(net, key), *item;
    size_t i;
    *hosts = NULL;
    if (v == NULL)
        return RB_OK;
    if (!json_is_array(v))
        return rb_fail(RB_EINVAL, err, "%s%s: must be a list of host names such as [\"pypi.org\", \"*.example.com\"]",
                       pre, key);
    *hosts = json_array();
    json_array_foreach (v, i, item) {
        if (!json_is_string(item)) {
            rb_fail(RB_EINVAL, err, "%s%s[%zu]: not a string (a host name such as \"pypi.org\")", pre, key, i);
            goto fail;
        }
        const char *s = json_string_value(item);
        size_t n = json_string_length(item);
        if (deny && (strcmp(s, E2B_ALL_TRAFFIC) == 0 || strcmp(s, "::/0") == 0)) {
            *all = 1;
            continue;
        }
        if (is_address(s, n)) {
            rb_fail(RB_EINVAL, err,
                    "%s%s[%zu]: '%.*s' is an IP address or range: runbox's network policies name hosts "
                    "(pypi.org, *.example.com, optionally with :port), and which addresses sandboxes may reach is "
                    "the operator's to decide (runboxd --egress-cidr)",
                    pre, key, i, (int)(n > 80 ? 80 : n), s);
            goto fail;
        }
        json_array_append(*hosts, item);
    }
    return RB_OK;
fail:
    json_decref(*hosts);
    *hosts = NULL;
    return RB_EINVAL;
}

/* The keys of E2B's network objects: where each may appear and its "off" value, the only one
 * runbox honours for the options it has no equivalent of (null only where E2B's schema allows
 * it; OFF_ABSENT: any value is refused). */
enum { IN_CREATE = 1, IN_UPDATE = 2 };
enum { OFF_NONE, OFF_NULL, OFF_EMPTY_LIST, OFF_EMPTY_OBJECT, OFF_FALSE, OFF_ABSENT, OFF_SKIP };
static const struct {
    const char *key;
    int where;
    int off;
    const char *why; /* why anything else is refused */
} net_keys[] = {
    {"allowOut", IN_CREATE | IN_UPDATE, OFF_NONE, NULL},
    {"denyOut", IN_CREATE | IN_UPDATE, OFF_NONE, NULL},
    {"allow_internet_access", IN_UPDATE, OFF_SKIP, NULL},
    {"allowInternetAccess", IN_UPDATE, OFF_SKIP, NULL},
    {"dnsServers", IN_CREATE | IN_UPDATE, OFF_EMPTY_LIST,
     "sandboxes resolve no names themselves: their egress proxy resolves the hosts it lets through, so there "
     "is no DNS server to allow"},
    {"egressProxy", IN_CREATE | IN_UPDATE, OFF_NULL,
     "runboxd tunnels no sandbox traffic through a proxy of yours: a sandbox reaches the outside only through "
     "its own egress proxy, run by runboxd"},
    {"rules", IN_CREATE | IN_UPDATE, OFF_EMPTY_OBJECT,
     "runboxd's egress proxy does not rewrite requests (no header transforms); allowOut alone decides what a "
     "sandbox reaches"},
    {"allowPublicTraffic", IN_CREATE, OFF_FALSE,
     "runboxd gives sandboxes no URLs to be reached at from outside (no inbound traffic), public or not"},
    {"maskRequestHost", IN_CREATE, OFF_ABSENT, "runboxd gives sandboxes no URLs to be reached at from outside"},
    {"httpsPorts", IN_CREATE, OFF_EMPTY_LIST, "runboxd gives sandboxes no URLs to be reached at from outside"},
};

/* RB_EINVAL when net has a key E2B's object of this call does not have, or an option runbox
 * cannot honour set to anything but its "off" value. */
static rb_err check_keys(json_t *net, int where, const char *pre, char *err)
{
    const char *key;
    json_t *v;
    json_object_foreach (net, key, v) {
        size_t i, n = sizeof(net_keys) / sizeof(net_keys[0]);
        for (i = 0; i < n; i++)
            if ((net_keys[i].where & where) && strcmp(net_keys[i].key, key) == 0)
                break;
        if (i == n)
            return rb_fail(RB_EINVAL, err,
                           "%s\"%.60s\": not a network option of E2B's %s (allowOut, denyOut, and the ones runboxd "
                           "refuses: dnsServers, egressProxy, rules%s)",
                           pre, key, where == IN_CREATE ? "create call" : "network update",
                           where == IN_CREATE ? ", allowPublicTraffic, maskRequestHost, httpsPorts" : "");
        int off = net_keys[i].off, ok = 1;
        if (off == OFF_NULL)
            ok = json_is_null(v);
        else if (off == OFF_EMPTY_LIST)
            ok = json_is_array(v) && json_array_size(v) == 0;
        else if (off == OFF_EMPTY_OBJECT)
            ok = json_is_object(v) && json_object_size(v) == 0;
        else if (off == OFF_FALSE)
            ok = json_is_null(v) || json_is_false(v);
        else if (off == OFF_ABSENT)
            ok = 0;
        if (!ok)
            return rb_fail(RB_EINVAL, err, "%s%s: runboxd does not support this option: %s", pre, key,
                           net_keys[i].why);
    }
    return RB_OK;
}

rb_err e2b_network_map(json_t *internet, json_t *net, int update, json_t **out, char *err)
{
    const char *pre = update ? "" : "network.";
    json_t *allow = NULL, *deny = NULL;
    int all = 0;
    rb_err e;
    *out = NULL;
    if (internet != NULL && !json_is_boolean(internet))
        return rb_fail(RB_EINVAL, err, "allow_internet_access: must be true or false");
    if (net != NULL && !json_is_object(net))
        return rb_fail(RB_EINVAL, err,
                       "network: must be an object such as {\"allowOut\": [\"pypi.org\"], \"denyOut\": [\"%s\"]}",
                       E2B_ALL_TRAFFIC);
    if (json_is_object(net)) {
        if ((e = check_keys(net, update ? IN_UPDATE : IN_CREATE, pre, err)) != RB_OK ||
            (e = read_hosts(net, "allowOut", pre, 0, &allow, &all, err)) != RB_OK ||
            (e = read_hosts(net, "denyOut", pre, 1, &deny, &all, err)) != RB_OK)
            goto done;
    }
    size_t n_allow = json_array_size(allow), n_deny = json_array_size(deny);
    if (n_allow > 0) {
        if (json_is_false(internet)) {
            e = rb_fail(RB_EINVAL, err,
                        "%sallowOut lists hosts for the sandbox to reach, but allow_internet_access is false, which "
                        "gives it no network: drop one of the two (allowOut with denyOut [\"%s\"] is a sandbox that "
                        "reaches those hosts only)",
                        pre, E2B_ALL_TRAFFIC);
            goto done;
        }
        *out = json_pack("{s:O, s:o}", "allow", allow, "deny", deny != NULL ? json_incref(deny) : json_array());
    } else if (json_is_true(internet)) {
        if (n_deny > 0) {
            e = rb_fail(RB_EINVAL, err,
                        "%sdenyOut: host names to deny ('%s') need allowOut: runboxd cannot take hosts out of the "
                        "operator's default list; list the hosts the sandbox may reach in allowOut instead",
                        pre, json_string_value(json_array_get(deny, 0)));
            goto done;
        }
        /* denyOut ALL_TRAFFIC with nothing allowed: a network on which nothing is reachable yet */
        *out = all ? json_pack("{s:[], s:[]}", "allow", "deny") : json_true();
    }
    e = RB_OK;
done:
    json_decref(allow);
    json_decref(deny);
    return e;
}

/* ---- states, pause and lifecycle ------------------------------------------------------------ */

int e2b_state_filter(const char *s, size_t n)
{
    int mask = 0;
    size_t start = 0;
    if (n == 0)
        return -1;
    while (start <= n) {
        size_t stop = start;
        while (stop < n && s[stop] != ',')
            stop++;
        size_t len = stop - start;
        if (len == 7 && memcmp(s + start, "running", 7) == 0)
            mask |= E2B_STATE_RUNNING;
        else if (len == 6 && memcmp(s + start, "paused", 6) == 0)
            mask |= E2B_STATE_PAUSED;
        else
            return -1;
        start = stop + 1;
    }
    return mask;
}

/* A boolean field of body: 0 absent, 1 set (*v its value), -1 another type (null too: E2B's
 * schema has no null for these). */
static int flag_of(json_t *body, const char *key, int *v)
{
    json_t *f = json_object_get(body, key);
    if (f == NULL)
        return 0;
    if (!json_is_boolean(f))
        return -1;
    *v = json_is_true(f);
    return 1;
}

rb_err e2b_pause_mode(json_t *body, const char **mode, char *err)
{
    const char *key;
    json_t *v;
    int memory = 1, healthy = 0;
    *mode = "suspend";
    if (body == NULL || json_is_null(body))
        return RB_OK;
    if (!json_is_object(body))
        return rb_fail(RB_EINVAL, err, "the pause request must be an object such as {\"memory\": false}");
    json_object_foreach (body, key, v) {
        if (strcmp(key, "memory") != 0 && strcmp(key, "requireHealthyGuest") != 0)
            return rb_fail(RB_EINVAL, err,
                           "\"%.60s\": not an option of E2B's pause (memory: false pauses the files only, "
                           "requireHealthyGuest)",
                           key);
    }
    if (flag_of(body, "memory", &memory) < 0)
        return rb_fail(RB_EINVAL, err,
                       "memory: must be true (keep memory and files: the sandbox resumes where it was) or false (keep "
                       "the files only: the sandbox boots fresh on resume)");
    if (flag_of(body, "requireHealthyGuest", &healthy) < 0)
        return rb_fail(RB_EINVAL, err, "requireHealthyGuest: must be true or false");
    *mode = memory ? "suspend" : "hibernate";
    return RB_OK;
}

rb_err e2b_lifecycle_map(json_t *body, const char **action, json_t **lifecycle, char *err)
{
    int pause = 0, memory = 1, resume = 0;
    *action = "end";
    *lifecycle = NULL;
    if (flag_of(body, "autoPause", &pause) < 0)
        return rb_fail(RB_EINVAL, err, "autoPause: must be true or false");
    if (flag_of(body, "autoPauseMemory", &memory) < 0)
        return rb_fail(RB_EINVAL, err, "autoPauseMemory: must be true or false");
    json_t *r = json_object_get(body, "autoResume");
    if (json_is_object(r)) { /* the SDK's SandboxAutoResumeConfig */
        const char *key;
        json_t *v;
        json_object_foreach (r, key, v)
            if (strcmp(key, "enabled") != 0)
                return rb_fail(RB_EINVAL, err, "autoResume.%.60s: not an option of E2B's auto-resume (enabled)", key);
        if (flag_of(r, "enabled", &resume) <= 0)
            return rb_fail(RB_EINVAL, err, "autoResume.enabled: required, true or false");
    } else if (flag_of(body, "autoResume", &resume) < 0) {
        return rb_fail(RB_EINVAL, err, "autoResume: must be {\"enabled\": true | false} or a boolean");
    }
    if (resume && !pause)
        return rb_fail(RB_EINVAL, err,
                       "autoResume: only with autoPause true (a sandbox killed at its timeout has nothing to resume)");
    if (pause)
        *action = memory ? "suspend" : "hibernate";
    *lifecycle = json_pack("{s:s, s:b}", "onTimeout", pause ? "pause" : "kill", "autoResume", resume);
    return RB_OK;
}

/* The rest of path after root ("" for root itself, else from its '/'), or NULL when path is
 * neither root nor under it. */
static const char *under(const char *path, const char *root)
{
    size_t n = strlen(root);
    if (strncmp(path, root, n) != 0 || (path[n] != '\0' && path[n] != '/'))
        return NULL;
    return path + n;
}

rb_err e2b_volume_mounts_map(json_t *mounts, json_t **out, char *err)
{
    *out = NULL;
    if (mounts == NULL || json_is_null(mounts))
        return RB_OK;
    if (!json_is_array(mounts))
        return rb_fail(RB_EINVAL, err, "volumeMounts: must be a list of {\"name\": a volume's name, \"path\"}");
    json_t *list = json_array(), *m;
    size_t i;
    json_array_foreach(mounts, i, m)
    {
        json_t *name = json_object_get(m, "name"), *path = json_object_get(m, "path");
        const char *key, *p, *rest;
        json_t *v;
        if (!json_is_object(m) || !json_is_string(name) || !json_is_string(path)) {
            json_decref(list);
            return rb_fail(RB_EINVAL, err,
                           "volumeMounts[%zu]: must be {\"name\": a volume's name, \"path\": where the sandbox sees "
                           "it}",
                           i);
        }
        json_object_foreach (m, key, v)
            if (strcmp(key, "name") != 0 && strcmp(key, "path") != 0) {
                json_decref(list);
                return rb_fail(RB_EINVAL, err,
                               "volumeMounts[%zu].%.60s: not a field of E2B's volume mount (name, path)", i, key);
            }
        p = json_string_value(path);
        if ((rest = under(p, E2B_WORKDIR)) == NULL && (rest = under(p, E2B_HOME)) == NULL) {
            json_decref(list);
            return rb_fail(RB_EINVAL, err,
                           "volumeMounts[%zu].path '%.200s' is outside /workspace: runbox mounts volumes only in the "
                           "sandbox's workspace, /workspace (which /home/user is too), e.g. "
                           "volume_mounts={\"/workspace/data\": volume}",
                           i, p);
        }
        if (rest[strspn(rest, "/")] == '\0') {
            json_decref(list);
            return rb_fail(RB_EINVAL, err,
                           "volumeMounts[%zu].path '%.200s' is the whole workspace: mount a volume in a folder of it, "
                           "e.g. /workspace/data",
                           i, p);
        }
        size_t len = strlen(E2B_WORKDIR) + strlen(rest) + 1;
        char *canon = xmalloc(len);
        snprintf(canon, len, "%s%s", E2B_WORKDIR, rest);
        json_array_append_new(list, json_pack("{s:O, s:s}", "volume", name, "path", canon));
        free(canon);
    }
    if (json_array_size(list) == 0) {
        json_decref(list);
        list = NULL;
    }
    *out = list;
    return RB_OK;
}

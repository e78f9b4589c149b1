/*
 * egress_secrets.c: the secrets of the sessions' egress proxies (core/network/secrets.h,
 * docs/network.md "Secrets"): the operator's file loaded and reloaded, a caller's names checked
 * against its key, what each proxy is given (values only there: never in the store, logs, the
 * audit trail or answers), the sandbox's placeholders and CA variables, the copy of the
 * session's CA bundle into the sandbox, and the proxies' use events counted and audited.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/audit/audit.h"
#include "core/network/egress_internal.h"

#define SECRETS_NAMED_MAX 32 /* secrets one session may name */
#define CA_BUNDLE_MAX ((size_t)4 << 20)

rb_err egress__secrets_init(rb_core *c, room *r, char *err)
{
    const core_settings *s = core_heart_settings(c);
    if (s->secrets_file != NULL && s->secrets_file[0] != '\0') {
        char e2[RB_ERR_LEN];
        if (secrets_load(s->secrets_file, &r->secrets, e2) != RB_OK)
            return rb_fail(RB_EINVAL, err, "--secrets-file %.900s", e2);
        if (r->secrets.n > 0 && !s->egress)
            rb_warn("--secrets-file: %zu secrets defined, but sessions have no network without --egress", r->secrets.n);
    }
    if (s->egress_ca_file != NULL && s->egress_ca_file[0] != '\0') {
        FILE *f = fopen(s->egress_ca_file, "rb");
        if (f == NULL)
            return rb_fail(RB_EINVAL, err, "--egress-ca-file %s: cannot be read", s->egress_ca_file);
        char *buf = xmalloc(256 * 1024 + 1);
        size_t n = fread(buf, 1, 256 * 1024 + 1, f);
        fclose(f);
        buf[n > 256 * 1024 ? 256 * 1024 : n] = '\0';
        if (n > 256 * 1024 || strstr(buf, "-----BEGIN CERTIFICATE-----") == NULL || memchr(buf, '\0', n) != NULL) {
            free(buf);
            return rb_fail(RB_EINVAL, err,
                           "--egress-ca-file %s: not PEM certificates (-----BEGIN CERTIFICATE-----), at most 256 KiB",
                           s->egress_ca_file);
        }
        r->upstream_ca = buf;
    }
    return RB_OK;
}

void egress__secrets_dispose(room *r)
{
    secrets_dispose(&r->secrets);
    free(r->upstream_ca);
    r->upstream_ca = NULL;
}

int egress__policy_intercepts(json_t *policy)
{
    return json_is_array(json_object_get(policy, "secrets"));
}

rb_err egress__policy_add_secrets(rb_core *c, const char *owner, json_t *names, const char *what, json_t *pol,
                                  char *err)
{
    room *r = egress__room(c);
    if (!json_is_array(names) || json_array_size(names) > SECRETS_NAMED_MAX)
        return rb_fail(RB_EINVAL, err, "%s.secrets must be a list of at most %d secret names such as [\"openai\"]",
                       what, SECRETS_NAMED_MAX);
    json_t *out = json_array(), *allow = json_object_get(pol, "allow");
    size_t i;
    json_t *v;
    json_array_foreach (names, i, v) {
        const char *name = json_string_value(v);
        const secret_def *d = name != NULL ? secrets_find(&r->secrets, name) : NULL;
        if (name == NULL) {
            json_decref(out);
            return rb_fail(RB_EINVAL, err, "%s.secrets[%zu]: not a string (a secret's name)", what, i);
        }
        if (d == NULL || !secret_key_allowed(d, owner && owner[0] ? owner : NULL)) {
            json_decref(out);
            r->counts.secret_refusals++;
            return rb_fail(RB_EFORBIDDEN, err,
                           "%s.secrets: no secret named \"%.64s\" is available to this API key (the operator defines "
                           "secrets and the keys that may use them in --secrets-file)",
                           what, name);
        }
        size_t k;
        json_t *w;
        int dup = 0;
        json_array_foreach (out, k, w)
            dup |= strcmp(json_string_value(w), d->name) == 0;
        if (dup)
            continue;
        json_array_append_new(out, json_string(d->name));
        for (size_t h = 0; h < d->n_hosts; h++) { /* its hosts are reachable: the operator bound them */
            char t[HOSTPATTERN_TEXT_MAX];
            hostpattern_text(&d->hosts[h], t);
            int have = 0;
            json_array_foreach (allow, k, w)
                have |= strcmp(json_string_value(w), t) == 0;
            if (have)
                continue;
            if (json_array_size(allow) >= NETPOLICY_PATTERNS_MAX) {
                json_decref(out);
                return rb_fail(RB_EINVAL, err, "%s.allow: with the secrets' hosts, more than %d host patterns", what,
                               NETPOLICY_PATTERNS_MAX);
            }
            json_array_append_new(allow, json_string(t));
        }
    }
    json_object_set_new(pol, "secrets", out);
    return RB_OK;
}

/* The owner of e's session ("" without keys), or NULL when it cannot be found (then no secret). */
static const char *entry_owner(entry *e, core_session_view *v)
{
    char err[RB_ERR_LEN];
    return core_heart_lookup(e->c, NULL, e->sid, v, err) == RB_OK ? v->owner : NULL;
}

json_t *egress__proxy_secrets(entry *e)
{
    room *r = egress__room(e->c);
    json_t *out = json_array(), *names = json_object_get(e->policy, "secrets");
    core_session_view v;
    const char *owner = json_array_size(names) > 0 ? entry_owner(e, &v) : NULL;
    if (owner == NULL)
        return out;
    size_t i;
    json_t *n;
    json_array_foreach (names, i, n) {
        const secret_def *d = secrets_find(&r->secrets, json_string_value(n));
        if (d != NULL && d->value != NULL && secret_key_allowed(d, owner[0] ? owner : NULL))
            json_array_append_new(out, secret_proxy_entry(d));
    }
    return out;
}

size_t egress_sandbox_env(rb_core *c, json_t *policy, char **env, size_t max)
{
    room *r = egress__room(c);
    size_t n = 0;
    if (!egress__policy_intercepts(policy) || max < 5)
        return 0;
    static const char *const ca_vars[] = {"SSL_CERT_FILE", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "PIP_CERT",
                                          "NODE_EXTRA_CA_CERTS"};
    for (size_t i = 0; i < sizeof(ca_vars) / sizeof(ca_vars[0]); i++)
        env[n++] = xasprintf("%s=%s", ca_vars[i], SANDBOX_CA_BUNDLE);
    size_t i;
    json_t *name;
    json_array_foreach (json_object_get(policy, "secrets"), i, name) {
        const secret_def *d = secrets_find(&r->secrets, json_string_value(name));
        if (d == NULL || n == max)
            continue;
        char ph[SECRET_NAME_MAX + 40];
        secret_placeholder(d, ph, sizeof(ph));
        env[n++] = xasprintf("%s=%s", d->var, ph);
    }
    return n;
}

rb_err egress_secrets_reload(rb_core *c, size_t *n, char *err)
{
    room *r = egress__room(c);
    const core_settings *s = core_heart_settings(c);
    if (s->secrets_file == NULL || s->secrets_file[0] == '\0')
        return rb_fail(RB_EINVAL, err, "no --secrets-file");
    secret_set fresh;
    char e2[RB_ERR_LEN];
    if (secrets_load(s->secrets_file, &fresh, e2) != RB_OK)
        return rb_fail(RB_EINVAL, err, "%.900s", e2);
    secrets_dispose(&r->secrets);
    r->secrets = fresh;
    if (n != NULL)
        *n = fresh.n;
    size_t pos = 0;
    entry *e;
    while ((e = map_next(&r->entries, &pos)) != NULL)
        if (e->intercept)
            egress__policy_changed(e);
    return RB_OK;
}

/* ---- the CA bundle, copied into the sandbox ------------------------------------------------- */

typedef struct ca_copy {
    rb_core *c;
    entry *e; /* NULL once cancelled */
    char proxy[200];
    char *container;
    egress_done_cb cb;
    void *data;
    int in_flight; /* an engine call of its is in flight */
} ca_copy;

static void ca_finish(ca_copy *cc, rb_err err, const char *what, const char *msg)
{
    char text[RB_ERR_LEN];
    if (cc->e != NULL) {
        cc->e->ca_copy = NULL;
        cc->e->ca_copied |= err == RB_OK;
        if (err != RB_OK && err != RB_ECANCELED)
            snprintf(text, sizeof(text), "the session's egress proxy: %s: %.300s", what, msg ? msg : "no detail");
        if (cc->cb != NULL)
            cc->cb(cc->data, err == RB_OK || err == RB_ECANCELED ? err : RB_EUNAVAILABLE,
                   err == RB_OK ? NULL : err == RB_ECANCELED ? msg : text);
        else if (err != RB_OK && err != RB_ECANCELED)
            rb_warn("session %s: %s", cc->e->sid, text);
    }
    free(cc->container);
    free(cc);
}

static void ca_put(void *data, rb_err err, const char *msg)
{
    ca_finish(data, err, "copying its CA into the sandbox", msg);
}

static void ca_got(void *data, rb_err err, const char *msg, char *bytes, size_t len)
{
    ca_copy *cc = data;
    char e2[RB_ERR_LEN];
    if (cc->e == NULL || err != RB_OK) {
        free(bytes);
        ca_finish(cc, cc->e == NULL ? RB_ECANCELED : err, "reading its CA", msg);
        return;
    }
    rb_err rc = backend_archive_put(core_heart_backend(cc->c), cc->container, "/workspace", bytes, len, ca_put, cc, e2);
    free(bytes);
    if (rc != RB_OK)
        ca_finish(cc, rc, "copying its CA into the sandbox", e2);
}

static void ca_ready(void *data, rb_err err, const char *msg)
{
    ca_copy *cc = data;
    char e2[RB_ERR_LEN];
    if (err != RB_OK || cc->e == NULL) {
        ca_finish(cc, cc->e == NULL ? RB_ECANCELED : err, "starting it", msg);
        return;
    }
    cc->in_flight = 1;
    rb_err rc = backend_archive_get(core_heart_backend(cc->c), cc->proxy, PROXY_CA_DIR "/" PROXY_CA_BUNDLE,
                                    CA_BUNDLE_MAX, ca_got, cc, e2);
    if (rc != RB_OK)
        ca_finish(cc, rc, "reading its CA", e2);
}

rb_err egress__ca_copy_start(entry *e, const char *container, egress_done_cb cb, void *data, char *err)
{
    if (e->ca_copy != NULL)
        return rb_fail(RB_ECONFLICT, err, "session %s: its CA is being copied already", e->sid);
    ca_copy *cc = xcalloc(1, sizeof(*cc));
    cc->c = e->c;
    cc->e = e;
    snprintf(cc->proxy, sizeof(cc->proxy), "%s", e->proxy);
    cc->container = xstrdup(container);
    cc->cb = cb;
    cc->data = data;
    e->ca_copy = cc;
    return egress__wait_open(e, ca_ready, cc, err);
}

void egress__ca_copy_orphan(entry *e)
{
    ca_copy *cc = e->ca_copy;
    if (cc == NULL)
        return;
    e->ca_copy = NULL;
    cc->e = NULL;
    if (!cc->in_flight) { /* it waited in e's updates, which are gone */
        free(cc->container);
        free(cc);
    }
}

void egress__ca_copy_cancel(entry *e)
{
    ca_copy *cc = e->ca_copy;
    if (cc == NULL)
        return;
    e->ca_copy = NULL;
    cc->e = NULL; /* the engine call in flight frees it */
    if (cc->cb != NULL)
        cc->cb(cc->data, RB_ECANCELED, "the session ended");
}

void egress__ca_recopy(entry *e)
{
    char err[RB_ERR_LEN];
    core_session_view v;
    if (!e->intercept || !e->ca_copied || e->ca_copy != NULL ||
        core_heart_lookup(e->c, NULL, e->sid, &v, err) != RB_OK || v.container_id == NULL)
        return;
    if (egress__ca_copy_start(e, v.container_id, NULL, NULL, err) != RB_OK)
        rb_warn("session %s: cannot copy its proxy's CA into the sandbox again: %s", e->sid, err);
}

/* ---- the proxies' events ---------------------------------------------------------------------- */

void egress__secret_event(entry *e, json_t *ev, const char *kind)
{
    room *r = egress__room(e->c);
    const char *secret = json_string_value(json_object_get(ev, "secret"));
    const char *host = json_string_value(json_object_get(ev, "host"));
    json_int_t port = json_integer_value(json_object_get(ev, "port"));
    if (secret == NULL || host == NULL)
        return;
    int used = strcmp(kind, "secret_used") == 0;
    if (used)
        r->counts.secret_uses++;
    else
        r->counts.secret_refusals++;
    core_session_view v;
    const char *owner = entry_owner(e, &v);
    const char *why = json_string_value(json_object_get(ev, "reason"));
    json_t *detail = json_pack("{s:o, s:o, s:I}", "secret", audit_text(secret, strlen(secret), 64), "host",
                               audit_text(host, strlen(host), 260), "port", port);
    if (!used && why != NULL)
        json_object_set_new(detail, "reason", audit_text(why, strlen(why), 300));
    audit_record(e->c, owner ? owner : "", e->sid, used ? "secret_used" : "secret_refused", detail);
    if (!used)
        rb_info("session %s: egress proxy did not add secret %.64s to a request to %.200s:%lld: %.300s", e->sid, secret,
                host, (long long)port, why ? why : "?");
}

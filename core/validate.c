/*
 * validate.c: validation of what callers ask for when they create sessions and run code:
 * languages, execution options and sandbox limits within the server's maxima, environment
 * variables, sizes and timeouts. Every message names the field and says what is accepted.
 */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/internal.h"
#include "core/isolation/isolation.h"


int core__whole_number(json_t *v, double *out)
{
    if (json_is_integer(v)) {
        *out = (double)json_integer_value(v);
        return 1;
    }
    double d = json_real_value(v);
    if (!json_is_real(v) || !isfinite(d) || d != floor(d))
        return 0;
    *out = d;
    return 1;
}

int core__parse_size(json_t *v, int64_t *out)
{
    double whole;
    if (core__whole_number(v, &whole)) {
        if (!(whole > 0))
            return -1;
        *out = whole < 9.0e18 ? (int64_t)whole : INT64_MAX;
        return 0;
    }
    /* DIGITS[.DIGITS][k|m|g][[i]b] or DIGITS[.DIGITS]b: the pattern openapi.yaml declares. */
    const char *s = json_string_value(v);
    if (s == NULL || strlen(s) != json_string_length(v) || !isdigit((unsigned char)*s))
        return -1;
    double n = 0;
    while (isdigit((unsigned char)*s))
        n = n * 10 + (*s++ - '0');
    if (*s == '.') {
        s++;
        if (!isdigit((unsigned char)*s))
            return -1;
        for (double scale = 0.1; isdigit((unsigned char)*s); scale /= 10)
            n += (*s++ - '0') * scale;
    }
    double mult = 1;
    char unit = (char)tolower((unsigned char)*s);
    if (unit == 'k' || unit == 'm' || unit == 'g') {
        mult = unit == 'k' ? 1024.0 : unit == 'm' ? 1024.0 * 1024 : 1024.0 * 1024 * 1024;
        s++;
        if (tolower((unsigned char)*s) == 'i')
            s++;
        if (tolower((unsigned char)*s) == 'b')
            s++;
        else if (tolower((unsigned char)s[-1]) == 'i')
            return -1;
    } else if (unit == 'b') {
        s++;
    }
    if (*s != '\0')
        return -1;
    /* Beyond what int64 holds the cast would be undefined: such a size reads as the largest. */
    double bytes = n * mult;
    *out = bytes < 9.0e18 ? (int64_t)bytes : INT64_MAX;
    return 0;
}

static int valid_env_name(const char *k)
{
    if (!(isalpha((unsigned char)*k) || *k == '_'))
        return 0;
    for (const char *p = k; *p; p++)
        if (!(isalnum((unsigned char)*p) || *p == '_'))
            return 0;
    return strncmp(k, "RUNBOX_", 7) != 0;
}

rb_err core__check_keys(json_t *obj, const char *where, const char *const *allowed, char *err)
{
    const char *k;
    json_t *v;
    json_object_foreach(obj, k, v)
    {
        int ok = 0;
        for (const char *const *a = allowed; *a; a++)
            ok |= strcmp(*a, k) == 0;
        if (!ok) {
            char list[256] = "";
            for (const char *const *a = allowed; *a; a++) {
                strncat(list, *a, sizeof(list) - strlen(list) - 3);
                if (a[1])
                    strncat(list, ", ", sizeof(list) - strlen(list) - 1);
            }
            return rb_fail(RB_EINVAL, err, "unknown field '%s' in %s; allowed fields: %s", k, where, list);
        }
    }
    return RB_OK;
}

rb_err core__check_timeout(const rb_core *c, json_t *v, const char *field, double *out, char *err)
{
    if (!json_is_number(v))
        return rb_fail(RB_EINVAL, err, "'%s' must be a number of seconds, e.g. 30", field);
    double t = json_number_value(v);
    if (!(t > 0) || !isfinite(t))
        return rb_fail(RB_EINVAL, err, "'%s' must be a number of seconds greater than 0, not %g", field, t);
    if (t > c->cfg->max_timeout)
        return rb_fail(RB_EFORBIDDEN, err,
                       "'%s' may be at most %g seconds on this server (its maximum, --max-timeout), not %g", field,
                       c->cfg->max_timeout, t);
    *out = t;
    return RB_OK;
}

/* Fills s's language and options from a POST /sessions body. */
/* "512m", "1500k" or "12345": the shortest exact spelling of a size. */
static json_t *size_text(int64_t bytes)
{
    if (bytes % (1024 * 1024) == 0)
        return json_sprintf("%lldm", (long long)(bytes / (1024 * 1024)));
    if (bytes % 1024 == 0)
        return json_sprintf("%lldk", (long long)(bytes / 1024));
    return json_sprintf("%lld", (long long)bytes);
}

/* A size field of execution_options: RB_EINVAL when it is not a size, RB_EFORBIDDEN when it is
 * one outside [min, max] (this server's range; flag names the setting of the maximum). */
static rb_err check_size(json_t *v, const char *key, int64_t min, int64_t max, const char *flag, int64_t *out,
                         char *err)
{
    if (core__parse_size(v, out) != 0)
        return rb_fail(RB_EINVAL, err,
                       "'execution_options.%s' must be a size such as \"256m\" or \"1g\" (digits, an optional "
                       "fraction, then k, m or g)",
                       key);
    if (*out < min || *out > max)
        return rb_fail(RB_EFORBIDDEN, err,
                       "'execution_options.%s' must be between %lldm and %lldm on this server (the maximum is its %s)",
                       key, (long long)(min / (1024 * 1024)), (long long)(max / (1024 * 1024)), flag);
    return RB_OK;
}

static rb_err parse_size_opt(json_t *eo, const char *key, int64_t min, int64_t max, const char *flag, int64_t *out,
                             char *err)
{
    json_t *v = json_object_get(eo, key);
    if (v == NULL || json_is_null(v))
        return RB_OK;
    return check_size(v, key, min, max, flag, out, err);
}

/* execution_options.isolation (v: NULL when not asked) into s->isolation: the key's default unless
 * asked; one the key may use and some engine offers. */
static rb_err parse_isolation(rb_core *c, const core_caller *who, session *s, json_t *v, char *err)
{
    const char *keys = who != NULL ? who->isolation : NULL;
    const char *want = isolation_key_default(keys, c->cfg->isolation);
    if (v != NULL && !json_is_null(v)) {
        want = json_string_value(v);
        if (!isolation_known(want))
            return rb_fail(RB_EINVAL, err, "'execution_options.isolation' must be " ISOLATION_TEXT);
        if (!isolation_key_allows(keys, want))
            return rb_fail(RB_EFORBIDDEN, err,
                           "this API key may not use the isolation %s (the keys file allows it isolation=%.100s)",
                           want, keys);
    }
    const char *runtime = isolation_runtime(want, c->cfg->gvisor_runtime);
    if (!backend_offers(c->be, runtime))
        return rb_fail(RB_EUNAVAILABLE, err,
                       "no Docker engine of this server offers the isolation %s (the runtime %.64s): the operator "
                       "registers it in an engine's daemon.json and declares it with --docker-runtimes or runtimes= "
                       "on --engine (docs/security.md)",
                       want, runtime);
    snprintf(s->isolation, sizeof(s->isolation), "%s", want);
    return RB_OK;
}

/* The sandbox limits of execution_options (eo may be NULL): pids_limit, workspace_size,
 * tmp_size within the server's maxima, and network only when the operator allows it. */
static rb_err parse_sandbox_limits(rb_core *c, const core_caller *who, session *s, json_t *eo, char *err)
{
    const core_settings *cfg = c->cfg;
    rb_err e;
    s->pids_limit = cfg->pids_limit;
    s->workspace_bytes = (int64_t)cfg->workspace_size;
    s->tmp_bytes = (int64_t)cfg->tmp_size;
    json_t *v = json_object_get(eo, "pids_limit");
    if (v != NULL && !json_is_null(v)) {
        double n;
        if (!core__whole_number(v, &n) || n < 16)
            return rb_fail(RB_EINVAL, err,
                           "'execution_options.pids_limit' must be a whole number of processes, at least 16");
        if (n > cfg->max_pids_limit)
            return rb_fail(RB_EFORBIDDEN, err,
                           "'execution_options.pids_limit' may be at most %d on this server (its maximum, "
                           "--max-pids-limit)",
                           cfg->max_pids_limit);
        s->pids_limit = (int)n;
    }
    if ((e = parse_size_opt(eo, "workspace_size", 1024 * 1024, (int64_t)cfg->max_workspace_size, "--max-workspace-size",
                            &s->workspace_bytes, err)) != RB_OK)
        return e;
    if ((e = parse_size_opt(eo, "tmp_size", 4 * 1024 * 1024, (int64_t)cfg->max_tmp_size, "--max-tmp-size",
                            &s->tmp_bytes, err)) != RB_OK)
        return e;
    if ((e = parse_isolation(c, who, s, json_object_get(eo, "isolation"), err)) != RB_OK)
        return e;
    json_decref(s->net_policy);
    s->net_policy = NULL;
    if ((e = egress_policy(c, who ? who->egress : NULL, who ? who->owner : NULL, json_object_get(eo, "network"), "'execution_options.network'",
                           &s->net_policy, err)) != RB_OK)
        return e;
    if (s->net_policy != NULL && strcmp(s->isolation, "gvisor") == 0 && !c->cfg->gvisor_network) {
        json_decref(s->net_policy);
        s->net_policy = NULL;
        return rb_fail(RB_EINVAL, err,
                       "a gvisor session has no network on this server: its engines' runsc runs with --network=none "
                       "(the operator allows it with --gvisor-network once runsc has a network, docs/security.md); "
                       "ask for isolation \"container\" or no 'execution_options.network'");
    }
    s->custom_sandbox = s->pids_limit != cfg->pids_limit || s->workspace_bytes != (int64_t)cfg->workspace_size ||
                        s->tmp_bytes != (int64_t)cfg->tmp_size || s->net_policy != NULL;
    return RB_OK;
}

rb_err core_egress_limit_check(const char *list, char *err)
{
    return egress_key_limit_check(list, err);
}

rb_err core_reload_secrets(rb_core *c, size_t *n, char *err)
{
    if (c->cfg->secrets_file == NULL || c->cfg->secrets_file[0] == '\0')
        return rb_fail(RB_ENOTFOUND, err, "no --secrets-file");
    return egress_secrets_reload(c, n, err);
}

rb_err core__parse_session_opts(rb_core *c, const core_caller *who, session *s, json_t *opts, char *err)
{
    static const char *const top[] = {"language", "execution_options", "dependencies", NULL};
    static const char *const eo_keys[] = {"timeout",    "memory_limit",   "cpu_limit", "environment_variables",
                                          "pids_limit", "workspace_size", "tmp_size",  "network",
                                          "mounts",     "isolation",      NULL};
    rb_err e;
    if (opts != NULL && !json_is_object(opts))
        return rb_fail(RB_EINVAL, err, "the request body must be a JSON object such as {\"language\": \"python\"}");
    if (opts != NULL && (e = core__check_keys(opts, "the session request", top, err)) != RB_OK)
        return e;
    json_t *lang = json_object_get(opts, "language");
    const char *l = "python";
    if (lang != NULL && !json_is_null(lang)) {
        l = json_string_value(lang);
        if (!core_language_known(l))
            return rb_fail(RB_EINVAL, err, "'language' must be " CORE_LANGUAGES_TEXT);
    }
    snprintf(s->language, sizeof(s->language), "%s", l);
    /* dependencies are installed into the workspace once the sandbox is ready (core/deps/): pip's
     * for python, npm's for javascript and typescript */
    if ((e = deps_check(c->cfg, l, json_object_get(opts, "dependencies"), &s->dependencies, err)) != RB_OK)
        return e;

    s->timeout = c->cfg->default_timeout;
    s->memory_bytes = core_default_memory(c);
    s->cpus = c->cfg->cpus;
    json_t *env = json_object();
    json_t *eo = json_object_get(opts, "execution_options");
    if (eo != NULL && !json_is_null(eo)) {
        if (!json_is_object(eo))
            e = rb_fail(RB_EINVAL, err, "'execution_options' must be an object");
        else
            e = core__check_keys(eo, "execution_options", eo_keys, err);
        if (e != RB_OK)
            goto fail;
        json_t *v;
        if ((v = json_object_get(eo, "timeout")) != NULL && !json_is_null(v) &&
            (e = core__check_timeout(c, v, "execution_options.timeout", &s->timeout, err)) != RB_OK)
            goto fail;
        if ((v = json_object_get(eo, "memory_limit")) != NULL && !json_is_null(v)) {
            int64_t max = (int64_t)c->cfg->max_memory_mb * 1024 * 1024;
            if ((e = check_size(v, "memory_limit", 16 * 1024 * 1024, max, "--max-memory", &s->memory_bytes, err)) !=
                RB_OK)
                goto fail;
        }
        if ((v = json_object_get(eo, "cpu_limit")) != NULL && !json_is_null(v)) {
            double cpus = json_number_value(v);
            if (!json_is_number(v) || !(cpus >= 0.01)) {
                e = rb_fail(RB_EINVAL, err, "'execution_options.cpu_limit' must be a number of CPUs, at least 0.01");
                goto fail;
            }
            if (cpus > c->cfg->max_cpus) {
                e = rb_fail(RB_EFORBIDDEN, err,
                            "'execution_options.cpu_limit' may be at most %g CPUs on this server (its maximum, "
                            "--max-cpus)",
                            c->cfg->max_cpus);
                goto fail;
            }
            s->cpus = cpus;
        }
        if ((v = json_object_get(eo, "environment_variables")) != NULL && !json_is_null(v)) {
            const char *k;
            json_t *val;
            if (!json_is_object(v)) {
                e = rb_fail(RB_EINVAL, err, "'execution_options.environment_variables' must be an object of strings");
                goto fail;
            }
            json_object_foreach(v, k, val)
            {
                if (!valid_env_name(k)) {
                    e = rb_fail(RB_EINVAL, err,
                                "environment variable name '%.64s' is invalid: use letters, digits and '_', not "
                                "starting with a digit or RUNBOX_",
                                k);
                    goto fail;
                }
                if (!json_is_string(val) || memchr(json_string_value(val), '\0', json_string_length(val))) {
                    e = rb_fail(RB_EINVAL, err, "environment variable '%.64s' must have a string value", k);
                    goto fail;
                }
                json_object_set(env, k, val);
            }
        }
    }
    char mem[32];
    snprintf(mem, sizeof(mem), "%lldm", (long long)(s->memory_bytes / (1024 * 1024)));
    if ((e = parse_sandbox_limits(c, who, s, eo != NULL && json_is_object(eo) ? eo : NULL, err)) != RB_OK)
        goto fail;
    /* shared folders (core/shares/): the ones asked for, else the operator's default mounts */
    json_t *mounts = NULL, *asked = json_object_get(eo, "mounts");
    if (asked != NULL && !json_is_null(asked) && !json_is_array(asked)) {
        e = rb_fail(RB_EINVAL, err, "'execution_options.mounts' must be an array of {share|volume, path, readonly}");
        goto fail;
    }
    /* ... and volumes (core/volumes/): items with "volume", beside the shares */
    json_t *share_items = asked != NULL && !json_is_null(asked) ? volumes_split(asked, 0) : NULL;
    e = shares_mounts(c->cfg, who, share_items, &mounts, err);
    json_decref(share_items);
    if (e != RB_OK)
        goto fail;
    if (asked != NULL && !json_is_null(asked)) {
        json_t *vol_items = volumes_split(asked, 1), *vols = NULL;
        e = volumes_mounts(c, who, vol_items, mounts, &vols, err);
        json_decref(vol_items);
        if (e != RB_OK) {
            json_decref(mounts);
            goto fail;
        }
        if (vols != NULL) {
            if (mounts == NULL)
                mounts = json_array();
            json_array_extend(mounts, vols);
            json_decref(vols);
        }
    }
    s->options = json_pack("{s:f, s:s, s:f, s:o}", "timeout", s->timeout, "memory_limit", mem, "cpu_limit", s->cpus,
                           "environment_variables", env);
    json_object_set_new(s->options, "pids_limit", json_integer(s->pids_limit));
    json_object_set_new(s->options, "workspace_size", size_text(s->workspace_bytes));
    json_object_set_new(s->options, "tmp_size", size_text(s->tmp_bytes));
    json_object_set_new(s->options, "network", s->net_policy ? json_incref(s->net_policy) : json_false());
    json_object_set_new(s->options, "isolation", json_string(s->isolation));
    if (mounts != NULL) { /* binds of host folders and volumes: no warm pool container has them */
        json_object_set_new(s->options, "mounts", mounts);
        s->custom_sandbox = 1;
    }
    return RB_OK;
fail:
    json_decref(env);
    return e;
}


/* A stored size ("512m", "1g", a number): its bytes, or dflt when missing or unreadable. */
static int64_t stored_size(json_t *v, int64_t dflt)
{
    int64_t n;
    return v != NULL && core__parse_size(v, &n) == 0 && n > 0 && n < INT64_MAX ? n : dflt;
}

void core__session_limits_restore(rb_core *c, session *s)
{
    const core_settings *cfg = c->cfg;
    json_t *o = s->options;
    s->memory_bytes = stored_size(json_object_get(o, "memory_limit"), core_default_memory(c));
    double cpus = json_number_value(json_object_get(o, "cpu_limit"));
    s->cpus = cpus >= 0.01 ? cpus : cfg->cpus;
    json_int_t pids = json_integer_value(json_object_get(o, "pids_limit"));
    s->pids_limit = pids >= 16 && pids <= INT32_MAX ? (int)pids : cfg->pids_limit;
    s->workspace_bytes = stored_size(json_object_get(o, "workspace_size"), (int64_t)cfg->workspace_size);
    s->tmp_bytes = stored_size(json_object_get(o, "tmp_size"), (int64_t)cfg->tmp_size);
    /* sessions stored before isolations existed ran under runc */
    const char *iso = json_string_value(json_object_get(o, "isolation"));
    snprintf(s->isolation, sizeof(s->isolation), "%s", isolation_known(iso) ? iso : "container");
    s->custom_sandbox = s->memory_bytes != core_default_memory(c) || s->cpus != cfg->cpus ||
                        s->pids_limit != cfg->pids_limit || s->workspace_bytes != (int64_t)cfg->workspace_size ||
                        s->tmp_bytes != (int64_t)cfg->tmp_size || s->net_policy != NULL ||
                        json_object_get(o, "mounts") != NULL;
}

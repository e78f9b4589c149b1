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
#include "core/requirements.h"


int core__parse_size(json_t *v, int64_t *out)
{
    if (json_is_integer(v)) {
        *out = json_integer_value(v);
        return *out > 0 ? 0 : -1;
    }
    const char *s = json_string_value(v);
    if (s == NULL || !isdigit((unsigned char)*s))
        return -1;
    errno = 0;
    char *end;
    double n = strtod(s, &end);
    if (errno != 0 || n <= 0)
        return -1;
    double mult = 1;
    char unit = (char)tolower((unsigned char)*end);
    if (unit == 'k')
        mult = 1024.0;
    else if (unit == 'm')
        mult = 1024.0 * 1024;
    else if (unit == 'g')
        mult = 1024.0 * 1024 * 1024;
    else if (unit == 'b' || unit == '\0')
        mult = 1;
    else
        return -1;
    if (*end != '\0') {
        end++;
        if (strcmp(end, "") != 0 && strcasecmp(end, "b") != 0 && strcasecmp(end, "ib") != 0)
            return -1;
    }
    /* Beyond what int64 holds the cast would be undefined ("1e300g"): such a size is refused. */
    double bytes = n * mult;
    if (!(bytes < 9.0e18))
        return -1;
    *out = (int64_t)bytes;
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
    if (!(t > 0) || !isfinite(t) || t > c->cfg->max_timeout)
        return rb_fail(RB_EINVAL, err, "'%s' must be greater than 0 and at most %g seconds (the server's maximum), not %g",
                       field, c->cfg->max_timeout, t);
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

static rb_err parse_size_opt(json_t *eo, const char *key, int64_t min, int64_t max, int64_t *out, char *err)
{
    json_t *v = json_object_get(eo, key);
    if (v == NULL || json_is_null(v))
        return RB_OK;
    if (core__parse_size(v, out) != 0 || *out < min || *out > max)
        return rb_fail(RB_EINVAL, err,
                       "'execution_options.%s' must be a size such as \"256m\" or \"1g\", between %lldm and %lldm (the "
                       "server's maximum)",
                       key, (long long)(min / (1024 * 1024)), (long long)(max / (1024 * 1024)));
    return RB_OK;
}

/* The sandbox limits of execution_options (eo may be NULL): pids_limit, workspace_size,
 * tmp_size within the server's maxima, and network only when the operator allows it. */
static rb_err parse_sandbox_limits(rb_core *c, session *s, json_t *eo, char *err)
{
    const core_settings *cfg = c->cfg;
    rb_err e;
    s->pids_limit = cfg->pids_limit;
    s->workspace_bytes = (int64_t)cfg->workspace_size;
    s->tmp_bytes = (int64_t)cfg->tmp_size;
    s->network = 0;
    json_t *v = json_object_get(eo, "pids_limit");
    if (v != NULL && !json_is_null(v)) {
        json_int_t n = json_integer_value(v);
        if (!json_is_integer(v) || n < 16 || n > cfg->max_pids_limit)
            return rb_fail(RB_EINVAL, err,
                           "'execution_options.pids_limit' must be a whole number of processes between 16 and %d (the "
                           "server's maximum)",
                           cfg->max_pids_limit);
        s->pids_limit = (int)n;
    }
    if ((e = parse_size_opt(eo, "workspace_size", 1024 * 1024, (int64_t)cfg->max_workspace_size, &s->workspace_bytes,
                            err)) != RB_OK)
        return e;
    if ((e = parse_size_opt(eo, "tmp_size", 4 * 1024 * 1024, (int64_t)cfg->max_tmp_size, &s->tmp_bytes, err)) != RB_OK)
        return e;
    v = json_object_get(eo, "network");
    if (v != NULL && !json_is_null(v)) {
        if (!json_is_boolean(v))
            return rb_fail(RB_EINVAL, err, "'execution_options.network' must be true or false");
        if (json_is_true(v) && !cfg->allow_network)
            return rb_fail(RB_EINVAL, err,
                           "'execution_options.network': this server does not allow network access from sandboxes "
                           "(the operator can turn it on with --allow-network=true)");
        s->network = json_is_true(v);
    }
    s->custom_sandbox = s->pids_limit != cfg->pids_limit || s->workspace_bytes != (int64_t)cfg->workspace_size ||
                        s->tmp_bytes != (int64_t)cfg->tmp_size || s->network;
    return RB_OK;
}

rb_err core__parse_session_opts(rb_core *c, session *s, json_t *opts, char *err)
{
    static const char *const top[] = {"language", "execution_options", "dependencies", NULL};
    static const char *const eo_keys[] = {"timeout",    "memory_limit",   "cpu_limit", "environment_variables",
                                          "pids_limit", "workspace_size", "tmp_size",  "network",
                                          NULL};
    rb_err e;
    if (opts != NULL && !json_is_object(opts))
        return rb_fail(RB_EINVAL, err, "the request body must be a JSON object such as {\"language\": \"python\"}");
    if (opts != NULL && (e = core__check_keys(opts, "the session request", top, err)) != RB_OK)
        return e;
    json_t *lang = json_object_get(opts, "language");
    const char *l = "python";
    if (lang != NULL && !json_is_null(lang)) {
        l = json_string_value(lang);
        if (l == NULL || (strcmp(l, "python") != 0 && strcmp(l, "bash") != 0))
            return rb_fail(RB_EINVAL, err, "'language' must be \"python\" or \"bash\"");
    }
    snprintf(s->language, sizeof(s->language), "%s", l);
    /* dependencies are installed into the workspace once the sandbox is ready (deps.c) */
    if ((e = requirements_parse(c->cfg, json_object_get(opts, "dependencies"), &s->dependencies, err)) != RB_OK)
        return e;
    if (s->dependencies != NULL && strcmp(l, "python") != 0)
        return rb_fail(RB_EINVAL, err, "dependencies: Python packages need a python session");

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
            if (core__parse_size(v, &s->memory_bytes) != 0 || s->memory_bytes < 16 * 1024 * 1024 ||
                s->memory_bytes > max) {
                e = rb_fail(RB_EINVAL, err,
                            "'execution_options.memory_limit' must be a size such as \"512m\" or \"1g\", between 16m "
                            "and %dm (the server's maximum)",
                            c->cfg->max_memory_mb);
                goto fail;
            }
        }
        if ((v = json_object_get(eo, "cpu_limit")) != NULL && !json_is_null(v)) {
            double cpus = json_number_value(v);
            if (!json_is_number(v) || !(cpus >= 0.01) || cpus > c->cfg->max_cpus) {
                e = rb_fail(RB_EINVAL, err,
                            "'execution_options.cpu_limit' must be a number of CPUs between 0.01 and %g (the server's "
                            "maximum)",
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
    if ((e = parse_sandbox_limits(c, s, eo != NULL && json_is_object(eo) ? eo : NULL, err)) != RB_OK)
        goto fail;
    s->options = json_pack("{s:f, s:s, s:f, s:o}", "timeout", s->timeout, "memory_limit", mem, "cpu_limit", s->cpus,
                           "environment_variables", env);
    json_object_set_new(s->options, "pids_limit", json_integer(s->pids_limit));
    json_object_set_new(s->options, "workspace_size", size_text(s->workspace_bytes));
    json_object_set_new(s->options, "tmp_size", size_text(s->tmp_bytes));
    json_object_set_new(s->options, "network", json_boolean(s->network));
    return RB_OK;
fail:
    json_decref(env);
    return e;
}


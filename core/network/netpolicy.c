/*
 * netpolicy.c: a caller's network request against the operator's limits (core/network/netpolicy.h).
 * It only reads and writes JSON and host patterns; enforcing a policy is the egress proxy's job.
 */
#include "core/network/netpolicy.h"

#include "base/codec.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Parses the comma-separated list text into a new array (*out, *n); "*" items set *any when
 * any is not NULL (else they are refused as patterns). RB_EINVAL naming flag and the item. */
static rb_err parse_list(const char *text, const char *flag, hostpattern **out, size_t *n, int *any, char *err)
{
    *out = NULL;
    *n = 0;
    if (text == NULL)
        return RB_OK;
    size_t cap = 0, len;
    const char *p = text, *b;
    while (codec_list_next(&p, &b, &len)) {
        if (any != NULL && len == 1 && *b == '*') {
            *any = 1;
            continue;
        }
        hostpattern hp;
        char why[HOSTPATTERN_WHY_MAX];
        if (hostpattern_parse(b, len, &hp, why) != 0) {
            free(*out);
            *out = NULL;
            *n = 0;
            return rb_fail(RB_EINVAL, err, "%s: host pattern \"%.*s\": %s", flag, (int)(len > 120 ? 120 : len), b, why);
        }
        if (*n == NETPOLICY_PATTERNS_MAX) {
            free(*out);
            *out = NULL;
            *n = 0;
            return rb_fail(RB_EINVAL, err, "%s: more than %d host patterns", flag, NETPOLICY_PATTERNS_MAX);
        }
        if (*n == cap) {
            cap = cap ? cap * 2 : 8;
            *out = xrealloc(*out, cap * sizeof(**out));
        }
        (*out)[(*n)++] = hp;
    }
    return RB_OK;
}

/* Whether allow pattern p is within the maximum of l (any name when max_any). */
static int within_max(const netpolicy_limits *l, const hostpattern *p)
{
    if (l->max_any)
        return 1;
    for (size_t j = 0; j < l->n_max; j++)
        if (hostpattern_within(p, &l->max[j], l->ports, l->n_ports))
            return 1;
    return 0;
}

rb_err netpolicy_limits_init(netpolicy_limits *out, int enabled, const char *allow, const char *max,
                             const char *deny, const char *const flags[3], char *err)
{
    rb_err e;
    memset(out, 0, sizeof(*out));
    out->enabled = enabled;
    out->ports[0] = 80;
    out->ports[1] = 443;
    out->n_ports = 2;
    out->max_flag = max != NULL ? flags[1] : flags[0];
    if ((e = parse_list(allow, flags[0], &out->allow, &out->n_allow, NULL, err)) != RB_OK)
        goto fail;
    if ((e = parse_list(max != NULL ? max : allow, out->max_flag, &out->max, &out->n_max, &out->max_any, err)) !=
        RB_OK)
        goto fail;
    if ((e = parse_list(deny, flags[2], &out->deny, &out->n_deny, NULL, err)) != RB_OK)
        goto fail;
    /* The default list must be one a caller could ask for. */
    for (size_t i = 0; i < out->n_allow; i++) {
        if (!within_max(out, &out->allow[i])) {
            char t[HOSTPATTERN_TEXT_MAX];
            hostpattern_text(&out->allow[i], t);
            e = rb_fail(RB_EINVAL, err, "%s: '%s' is beyond %s", flags[0], t, flags[1]);
            goto fail;
        }
    }
    return RB_OK;
fail:
    netpolicy_limits_dispose(out);
    return e;
}

void netpolicy_limits_dispose(netpolicy_limits *l)
{
    if (l == NULL)
        return;
    free(l->allow);
    free(l->max);
    free(l->deny);
    l->allow = l->max = l->deny = NULL;
    l->n_allow = l->n_max = l->n_deny = 0;
}

/* Appends pattern p's text to arr unless it is there already. */
static void add_unique(json_t *arr, const hostpattern *p)
{
    char t[HOSTPATTERN_TEXT_MAX];
    hostpattern_text(p, t);
    size_t i;
    json_t *v;
    json_array_foreach (arr, i, v)
        if (strcmp(json_string_value(v), t) == 0)
            return;
    json_array_append_new(arr, json_string(t));
}

/* The text of the maximum, as a refusal quotes it (at most ~300 characters). */
static void max_text(const netpolicy_limits *l, char *out, size_t n)
{
    size_t len = 0;
    out[0] = '\0';
    if (l->n_max == 0) {
        snprintf(out, n, "none");
        return;
    }
    for (size_t i = 0; i < l->n_max; i++) {
        char t[HOSTPATTERN_TEXT_MAX];
        hostpattern_text(&l->max[i], t);
        if (len > 0 && len + strlen(t) > 300) {
            snprintf(out + len, n - len, ", ... (%zu more)", l->n_max - i);
            return;
        }
        int w = snprintf(out + len, n - len, "%s%s", len ? ", " : "", t);
        if (w < 0 || (size_t)w >= n - len)
            return;
        len += (size_t)w;
    }
}

/* Reads the list v (NULL: none) of request field what.key into arr; max checks allow patterns. */
static rb_err read_patterns(const netpolicy_limits *l, json_t *v, const char *what, const char *key, int check_max,
                            json_t *arr, char *err)
{
    if (v == NULL || json_is_null(v))
        return RB_OK;
    if (!json_is_array(v))
        return rb_fail(RB_EINVAL, err, "%s.%s must be a list of host patterns such as [\"pypi.org\", "
                                       "\"*.pythonhosted.org\"]", what, key);
    if (json_array_size(v) > NETPOLICY_PATTERNS_MAX)
        return rb_fail(RB_EINVAL, err, "%s.%s: %zu host patterns, at most %d", what, key, json_array_size(v),
                       NETPOLICY_PATTERNS_MAX);
    size_t i;
    json_t *item;
    json_array_foreach (v, i, item) {
        hostpattern hp;
        char why[HOSTPATTERN_WHY_MAX];
        if (!json_is_string(item))
            return rb_fail(RB_EINVAL, err, "%s.%s[%zu]: not a string (a host pattern such as \"pypi.org\")", what,
                           key, i);
        const char *s = json_string_value(item);
        size_t len = json_string_length(item);
        if (hostpattern_parse(s, len, &hp, why) != 0)
            return rb_fail(RB_EINVAL, err, "%s.%s[%zu]: host pattern \"%.*s\": %s", what, key, i,
                           (int)(len > 120 ? 120 : len), s, why);
        if (check_max && !within_max(l, &hp)) {
            char t[HOSTPATTERN_TEXT_MAX], m[400];
            hostpattern_text(&hp, t);
            max_text(l, m, sizeof(m));
            return rb_fail(RB_EFORBIDDEN, err, "%s.%s: '%s' is beyond what this server allows (its maximum, %s: %s)",
                           what, key, t, l->max_flag, m);
        }
        add_unique(arr, &hp);
    }
    return RB_OK;
}

rb_err netpolicy_request(const netpolicy_limits *l, json_t *v, const char *what, json_t **out, char *err)
{
    *out = NULL;
    if (v == NULL || json_is_null(v) || json_is_false(v))
        return RB_OK;
    if (!json_is_true(v) && !json_is_object(v))
        return rb_fail(RB_EINVAL, err,
                       "%s must be false (no network), true (the server's default list) or {\"allow\": [host "
                       "patterns], \"deny\": [host patterns]}",
                       what);
    if (!l->enabled)
        return rb_fail(RB_EFORBIDDEN, err,
                       "%s: this server gives sandboxes no network (the operator can allow listed hosts with "
                       "--egress)",
                       what);
    rb_err e;
    json_t *allow = json_array(), *deny = json_array();
    if (json_is_true(v)) {
        for (size_t i = 0; i < l->n_allow; i++)
            add_unique(allow, &l->allow[i]);
    } else {
        const char *key;
        json_t *item;
        json_object_foreach (v, key, item) {
            if (strcmp(key, "allow") != 0 && strcmp(key, "deny") != 0) {
                e = rb_fail(RB_EINVAL, err, "%s: unknown key \"%.60s\" (allow and deny only)", what, key);
                goto fail;
            }
        }
        if ((e = read_patterns(l, json_object_get(v, "allow"), what, "allow", 1, allow, err)) != RB_OK ||
            (e = read_patterns(l, json_object_get(v, "deny"), what, "deny", 0, deny, err)) != RB_OK)
            goto fail;
    }
    for (size_t i = 0; i < l->n_deny; i++) {
        if (json_array_size(deny) == NETPOLICY_PATTERNS_MAX) {
            e = rb_fail(RB_EINVAL, err, "%s.deny: with the server's own deny list, more than %d host patterns", what,
                        NETPOLICY_PATTERNS_MAX);
            goto fail;
        }
        add_unique(deny, &l->deny[i]);
    }
    *out = json_pack("{s:o,s:o}", "allow", allow, "deny", deny);
    return RB_OK;
fail:
    json_decref(allow);
    json_decref(deny);
    return e;
}

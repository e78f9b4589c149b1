/*
 * requirements.c: the requirement syntax runbox accepts and the operator's deps-allow /
 * deps-block policy (core/requirements.h). It turns what a caller asked for into the lines pip
 * will see, or into an error naming the package and the rule. It does not install anything
 * (core/deps.c) and does not read the configuration (it is handed the validated struct).
 */
#include "core/requirements.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int is_alnum(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

rb_err requirements_parse_one(const char *s, requirement *r)
{
    memset(r, 0, sizeof(*r));
    while (*s == ' ')
        s++;
    size_t n = 0;
    if (!is_alnum(*s))
        return RB_EINVAL;
    int sep = 0;
    for (; is_alnum(*s) || *s == '-' || *s == '_' || *s == '.'; s++) {
        if (!is_alnum(*s)) {
            sep = 1;
            continue;
        }
        int dash = sep && n > 0;
        if (n + (size_t)dash + 1 > REQUIREMENTS_NAME_MAX)
            return RB_EINVAL;
        if (dash)
            r->name[n++] = '-';
        sep = 0;
        r->name[n++] = (*s >= 'A' && *s <= 'Z') ? (char)(*s - 'A' + 'a') : *s;
    }
    r->name[n] = '\0';
    while (*s == ' ')
        s++;
    if (*s == '\0')
        return RB_OK;
    static const char *const ops[] = {"==", ">=", "<=", "~=", "!=", ">", "<"};
    for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++) {
        size_t k = strlen(ops[i]);
        if (strncmp(s, ops[i], k) == 0 && (k == 2 || s[1] != '=')) {
            memcpy(r->op, ops[i], k + 1);
            s += k;
            break;
        }
    }
    if (r->op[0] == '\0')
        return RB_EINVAL;
    while (*s == ' ')
        s++;
    size_t v = 0;
    for (; *s && *s != ' '; s++) {
        if (!(is_alnum(*s) || *s == '.' || *s == '*' || *s == '+' || *s == '!' || *s == '-' || *s == '_') ||
            v >= REQUIREMENTS_VERSION_MAX)
            return RB_EINVAL;
        r->version[v++] = *s;
    }
    r->version[v] = '\0';
    while (*s == ' ')
        s++;
    return (v == 0 || *s != '\0') ? RB_EINVAL : RB_OK;
}

int requirements_version_compare(const char *a, const char *b)
{
    while (*a || *b) {
        long x = 0, y = 0;
        int dx = 0, dy = 0;
        while (*a >= '0' && *a <= '9' && x < 100000000) {
            x = x * 10 + (*a++ - '0');
            dx = 1;
        }
        while (*b >= '0' && *b <= '9' && y < 100000000) {
            y = y * 10 + (*b++ - '0');
            dy = 1;
        }
        if (dx && dy && x != y)
            return x < y ? -1 : 1;
        if (!dx && dy)
            return -1; /* "1.0rc1" vs "1.0.1": treat the shorter release as older */
        if (dx && !dy && *b)
            return 1;
        if (*a != *b) {
            if (*a == '.' && *b == '\0')
                return 1;
            if (*b == '.' && *a == '\0')
                return -1;
            return (unsigned char)*a < (unsigned char)*b ? -1 : 1;
        }
        if (*a)
            a++;
        if (*b)
            b++;
    }
    return 0;
}

/* ---- the operator's policy lists ----------------------------------------------------------- */

/* Calls fn for each non-empty comma-separated entry of a policy list ("a, b>=1.2, c<3"), with
 * NULL for an entry too long to be a rule; stops when fn returns non-zero and returns that
 * value. */
static int each_rule(const char *list, int (*fn)(void *data, const char *entry), void *data)
{
    if (list == NULL)
        return 0;
    char tok[REQUIREMENTS_NAME_MAX + REQUIREMENTS_VERSION_MAX + 16];
    while (*list) {
        size_t n = strcspn(list, ",");
        int r = 0;
        if (n >= sizeof(tok)) {
            r = fn(data, NULL);
        } else if (n > 0) {
            memcpy(tok, list, n);
            tok[n] = '\0';
            r = fn(data, tok);
        }
        if (r != 0)
            return r;
        list += n;
        if (*list == ',')
            list++;
    }
    return 0;
}

typedef struct rule_search {
    const char *name;
    requirement *hit;
} rule_search;

static int match_rule(void *data, const char *entry)
{
    rule_search *f = data;
    requirement r;
    if (entry == NULL || requirements_parse_one(entry, &r) != RB_OK || strcmp(r.name, f->name) != 0)
        return 0;
    *f->hit = r;
    return 1;
}

/* Finds name's rule in a policy list: 1 and *hit, or 0. */
static int find_rule(const char *list, const char *name, requirement *hit)
{
    rule_search f = {name, hit};
    return each_rule(list, match_rule, &f);
}

typedef struct rule_check {
    const char *list;
    const char *op; /* the operator this list applies besides a bare name */
    const char *name;
    int count;
} rule_check;

static int count_rule(void *data, const char *entry)
{
    rule_check *k = data;
    requirement r;
    if (entry != NULL && requirements_parse_one(entry, &r) == RB_OK && strcmp(r.name, k->name) == 0)
        k->count++;
    return 0;
}

/* Whether an entry is one the policy would not apply as written: too long, not a requirement,
 * an operator other than the list's, or a second rule for a package (only the first is read). */
static int bad_rule(void *data, const char *entry)
{
    rule_check *k = data;
    requirement r;
    if (entry == NULL)
        return 1;
    while (*entry == ' ')
        entry++;
    if (*entry == '\0')
        return 0;
    if (requirements_parse_one(entry, &r) != RB_OK || (r.op[0] && strcmp(r.op, k->op) != 0))
        return 1;
    k->name = r.name;
    k->count = 0;
    each_rule(k->list, count_rule, k);
    return k->count != 1;
}

/* RB_EINVAL naming key when a policy list has an entry that is not "name" or "name<op>V", or
 * two rules for one package. */
static rb_err check_rules(const char *list, const char *key, const char *op, char *err)
{
    rule_check k = {list, op, NULL, 0};
    if (each_rule(list, bad_rule, &k) != 0)
        return rb_fail(RB_EINVAL, err,
                       "the server's %s setting is malformed: entries must be 'name' or 'name%sversion', one per "
                       "package, separated by commas; ask the operator to fix it",
                       key, op);
    return RB_OK;
}

/* Checks one request against the policy; writes the requirement pip will see into out. */
static rb_err apply_rules(const core_settings *cfg, const requirement *r, char *out, size_t outlen, char *err)
{
    requirement rule;
    char blockmin[REQUIREMENTS_VERSION_MAX + 1];
    /* blocklist: "name" blocks it; "name<V" blocks versions below V (a minimum version) */
    if (find_rule(cfg->deps_block, r->name, &rule)) {
        if (rule.op[0] == '\0')
            return rb_fail(RB_EFORBIDDEN, err, "package '%s' is blocked by the server's policy (deps-block rule '%s')",
                           r->name, rule.name);
    }
    int allowed = cfg->deps_allow == NULL || cfg->deps_allow[0] == '\0';
    requirement arule;
    int has_allow = find_rule(cfg->deps_allow, r->name, &arule);
    if (!allowed && !has_allow)
        return rb_fail(RB_EFORBIDDEN, err,
                       "package '%s' is not on the server's allowlist (deps-allow); ask the operator to add it",
                       r->name);
    /* the minimum version: the larger of the allow rule's ">=V" and the block rule's "<V" */
    const char *min = NULL;
    char rulebuf[REQUIREMENTS_NAME_MAX + REQUIREMENTS_VERSION_MAX + 32] = "";
    if (has_allow && strcmp(arule.op, ">=") == 0) {
        min = arule.version;
        snprintf(rulebuf, sizeof(rulebuf), "deps-allow rule '%s>=%s'", arule.name, arule.version);
    }
    if (find_rule(cfg->deps_block, r->name, &rule) && strcmp(rule.op, "<") == 0 &&
        (min == NULL || requirements_version_compare(rule.version, min) > 0)) {
        snprintf(blockmin, sizeof(blockmin), "%s", rule.version);
        min = blockmin;
        snprintf(rulebuf, sizeof(rulebuf), "deps-block rule '%s<%s'", rule.name, rule.version);
    }
    if (min != NULL && (strcmp(r->op, "==") == 0 || strcmp(r->op, "<=") == 0 || strcmp(r->op, "<") == 0) &&
        strchr(r->version, '*') == NULL &&
        requirements_version_compare(r->version, min) < (strcmp(r->op, "<") == 0 ? 1 : 0))
        return rb_fail(RB_EFORBIDDEN, err, "package '%s%s%s' is older than the minimum version %s set by the %s",
                       r->name, r->op, r->version, min, rulebuf);
    if (min != NULL && r->op[0] != '\0')
        snprintf(out, outlen, "%s%s%s,>=%s", r->name, r->op, r->version, min);
    else if (min != NULL)
        snprintf(out, outlen, "%s>=%s", r->name, min);
    else
        snprintf(out, outlen, "%s%s%s", r->name, r->op, r->version);
    return RB_OK;
}

/* ---- a caller's list ------------------------------------------------------------------------ */

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

rb_err requirements_parse(const core_settings *cfg, json_t *list, json_t **out, char *err)
{
    *out = NULL;
    if (list == NULL || json_is_null(list))
        return RB_OK;
    if (!json_is_array(list))
        return rb_fail(RB_EINVAL, err,
                       "dependencies: must be a list of requirement strings such as \"requests==2.32.3\"");
    size_t n = json_array_size(list);
    if (n == 0)
        return RB_OK;
    if (n > REQUIREMENTS_MAX)
        return rb_fail(RB_EINVAL, err, "dependencies: at most %d packages", REQUIREMENTS_MAX);
    if (cfg->deps_network == NULL || cfg->deps_network[0] == '\0' || strcmp(cfg->deps_network, "none") == 0)
        return rb_fail(RB_EFORBIDDEN, err,
                       "installing packages is disabled on this server (deps-network is none); use the preinstalled "
                       "packages (GET /packages)");
    rb_err e = requirements_check_settings(cfg, err);
    if (e != RB_OK)
        return e;
    requirement *parsed = xcalloc(n, sizeof(*parsed));
    char **lines = xcalloc(n, sizeof(char *));
    size_t i;
    json_t *v;
    json_array_foreach(list, i, v)
    {
        const char *s = json_string_value(v);
        requirement *r = &parsed[i];
        if (s == NULL || strlen(s) > REQUIREMENTS_TEXT_MAX || requirements_parse_one(s, r) != RB_OK) {
            e = rb_fail(RB_EINVAL, err,
                        "dependencies[%zu]: '%.80s' is not a requirement runbox accepts: give a package name with at "
                        "most one version specifier, e.g. \"requests==2.32.3\" or \"numpy>=1.26\" (no options, URLs, "
                        "extras or markers)",
                        i, s ? s : "(not a string)");
            break;
        }
        for (size_t k = 0; k < i; k++) {
            if (strcmp(parsed[k].name, r->name) == 0) {
                e = rb_fail(RB_EINVAL, err, "dependencies: package '%s' is listed twice", r->name);
                break;
            }
        }
        if (e != RB_OK)
            break;
        char line[REQUIREMENTS_NAME_MAX + 2 * REQUIREMENTS_VERSION_MAX + 16];
        if ((e = apply_rules(cfg, r, line, sizeof(line), err)) != RB_OK)
            break;
        lines[i] = xstrdup(line);
    }
    if (e == RB_OK) {
        qsort(lines, n, sizeof(char *), cmp_str);
        *out = json_array();
        for (i = 0; i < n; i++)
            json_array_append_new(*out, json_string(lines[i]));
    }
    for (i = 0; i < n; i++)
        free(lines[i]);
    free(lines);
    free(parsed);
    return e;
}

rb_err requirements_check_settings(const core_settings *cfg, char *err)
{
    rb_err e = check_rules(cfg->deps_allow, "deps-allow", ">=", err);
    return e != RB_OK ? e : check_rules(cfg->deps_block, "deps-block", "<", err);
}

/*
 * requirements.c: the requirement syntax runbox accepts and the operator's deps-allow /
 * deps-block policy (core/deps/requirements.h). It turns what a caller asked for into the lines pip
 * will see, or into an error naming the package and the rule. It does not install anything
 * (core/deps/deps.c) and does not read the configuration (it is handed the validated struct).
 */
#include "core/deps/requirements.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NPM_RULE_PREFIX "npm:"

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

/* An npm entry of a policy list ("npm:NAME", "npm:NAME>=V", "npm:NAME<V"). */
typedef struct requirement_npm_rule {
    char name[REQUIREMENTS_NPM_NAME_MAX + 1];
    char op[3];
    char version[REQUIREMENTS_VERSION_MAX + 1];
} requirement_npm_rule;

static int bad_npm_rule(rule_check *k, const char *entry);

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
    if (strncmp(entry, NPM_RULE_PREFIX, strlen(NPM_RULE_PREFIX)) == 0)
        return bad_npm_rule(k, entry);
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
                       "the server's %s setting is malformed: entries must be 'name' or 'name%sversion' (npm "
                       "packages: 'npm:name' or 'npm:name%sversion'), one per package, separated by commas; ask the "
                       "operator to fix it",
                       key, op, op);
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

/* ---- npm ----------------------------------------------------------------------------------- */

/* A part of an npm name (the scope or the base) at s: letters, digits and -._, first a letter or
 * digit. Returns its length, 0 when there is none. */
static size_t npm_name_part(const char *s)
{
    size_t n = 0;
    if (!is_alnum(s[0]))
        return 0;
    while (is_alnum(s[n]) || s[n] == '-' || s[n] == '.' || s[n] == '_')
        n++;
    return n;
}

/* Reads "[@SCOPE/]BASE" at s into out (REQUIREMENTS_NPM_NAME_MAX + 1 bytes). Returns the
 * characters read, 0 when there is no such name or it is too long. */
static size_t npm_name(const char *s, char *out)
{
    size_t n = 0, k;
    if (s[0] == '@') {
        if ((k = npm_name_part(s + 1)) == 0 || s[1 + k] != '/')
            return 0;
        n = k + 2;
    }
    if ((k = npm_name_part(s + n)) == 0 || n + k > REQUIREMENTS_NPM_NAME_MAX)
        return 0;
    n += k;
    memcpy(out, s, n);
    out[n] = '\0';
    return n;
}

static int is_digit(char c)
{
    return c >= '0' && c <= '9';
}

/* Reads a version at s ([v]PART[.PART[.PART]][-PRE][+BUILD]; PART digits, x, X or *; PRE and
 * BUILD letters, digits, . and -) into out (REQUIREMENTS_VERSION_MAX + 1 bytes, without the v).
 * Returns the characters read, 0 when malformed or too long. */
static size_t npm_version(const char *s, char *out)
{
    const char *p = s + (s[0] == 'v' && is_digit(s[1]));
    const char *start = p;
    for (int part = 0; part < 3; part++) {
        if (part > 0 && *p != '.')
            break;
        if (part > 0)
            p++;
        if (*p == 'x' || *p == 'X' || *p == '*')
            p++;
        else if (is_digit(*p))
            while (is_digit(*p))
                p++;
        else
            return 0;
    }
    for (const char *mark = "-+"; *mark; mark++) {
        if (*p != *mark)
            continue;
        const char *q = ++p;
        while (is_alnum(*p) || *p == '.' || *p == '-')
            p++;
        if (p == q)
            return 0;
    }
    size_t n = (size_t)(p - start);
    if (n > REQUIREMENTS_VERSION_MAX)
        return 0;
    memcpy(out, start, n);
    out[n] = '\0';
    return (size_t)(p - s);
}

/* Whether a version is one exact release (three numeric parts), which an early check can compare. */
static int npm_exact(const char *v)
{
    int dots = 0;
    for (; *v && *v != '-' && *v != '+'; v++) {
        if (*v == '.')
            dots++;
        else if (!is_digit(*v))
            return 0;
    }
    return dots == 2;
}

/* The spec after NAME@: a dist-tag, or one or two comparators separated by one space. */
static rb_err npm_spec(const char *s, npm_requirement *r)
{
    size_t len = strlen(s);
    if (len == 0 || len > REQUIREMENTS_VERSION_MAX)
        return RB_EINVAL;
    memcpy(r->spec, s, len + 1);
    int version_like = is_digit(s[0]) || ((s[0] == 'v' || s[0] == 'x' || s[0] == 'X') && (is_digit(s[1]) ||
                                         s[1] == '\0' || s[1] == '.' || s[1] == ' ')) ||
                       strchr("*=^~<>", s[0]) != NULL;
    if (!version_like) { /* a dist-tag: a letter, then letters, digits and -._ */
        for (const char *p = s; *p; p++)
            if (!(is_alnum(*p) || *p == '-' || *p == '.' || *p == '_'))
                return RB_EINVAL;
        return RB_OK;
    }
    static const char *const ops[] = {">=", "<=", ">", "<", "=", "^", "~"};
    const char *p = s;
    for (int i = 0; i < 2; i++) {
        for (size_t k = 0; k < sizeof(ops) / sizeof(ops[0]); k++) {
            size_t kl = strlen(ops[k]);
            if (strncmp(p, ops[k], kl) == 0) {
                memcpy(r->cmp_op[i], ops[k], kl + 1);
                p += kl;
                break;
            }
        }
        size_t k = npm_version(p, r->cmp_version[i]);
        if (k == 0)
            return RB_EINVAL;
        p += k;
        r->n_cmp = i + 1;
        if (*p == '\0')
            return RB_OK;
        if (*p != ' ' || i == 1)
            return RB_EINVAL;
        p++;
    }
    return RB_EINVAL;
}

rb_err requirements_npm_parse_one(const char *s, npm_requirement *r)
{
    memset(r, 0, sizeof(*r));
    size_t n = npm_name(s, r->name);
    if (n == 0)
        return RB_EINVAL;
    if (s[n] == '\0')
        return RB_OK;
    return s[n] == '@' ? npm_spec(s + n + 1, r) : RB_EINVAL;
}

/* An npm policy entry: "npm:NAME", "npm:NAME>=V" or "npm:NAME<V" (V an exact or partial
 * numeric version; spaces around the parts). Returns 1 and fills r (name, op, version), or 0. */
static int npm_rule_parse(const char *entry, requirement_npm_rule *r)
{
    while (*entry == ' ')
        entry++;
    if (strncmp(entry, NPM_RULE_PREFIX, strlen(NPM_RULE_PREFIX)) != 0)
        return 0;
    entry += strlen(NPM_RULE_PREFIX);
    size_t n = npm_name(entry, r->name);
    if (n == 0)
        return 0;
    entry += n;
    while (*entry == ' ')
        entry++;
    r->op[0] = r->version[0] = '\0';
    if (*entry == '\0')
        return 1;
    if (strncmp(entry, ">=", 2) == 0 || (entry[0] == '<' && entry[1] != '=')) {
        size_t k = entry[0] == '<' ? 1 : 2;
        memcpy(r->op, entry, k);
        r->op[k] = '\0';
        entry += k;
    } else {
        return 0;
    }
    while (*entry == ' ')
        entry++;
    size_t k = npm_version(entry, r->version);
    if (k == 0 || strcspn(r->version, "xX*") < strcspn(r->version, "-+"))
        return 0;
    entry += k;
    while (*entry == ' ')
        entry++;
    return *entry == '\0';
}

typedef struct npm_rule_search {
    const char *name;
    requirement_npm_rule *hit;
    int count;
} npm_rule_search;

static int match_npm_rule(void *data, const char *entry)
{
    npm_rule_search *f = data;
    requirement_npm_rule r;
    if (entry == NULL || !npm_rule_parse(entry, &r) || strcmp(r.name, f->name) != 0)
        return 0;
    f->count++;
    if (f->hit != NULL) {
        *f->hit = r;
        return 1;
    }
    return 0;
}

/* Finds the npm rule for name in a policy list: 1 and *hit, or 0. */
static int find_npm_rule(const char *list, const char *name, requirement_npm_rule *hit)
{
    npm_rule_search f = {name, hit, 0};
    return each_rule(list, match_npm_rule, &f);
}

/* bad_rule for an entry starting with "npm:". */
static int bad_npm_rule(rule_check *k, const char *entry)
{
    requirement_npm_rule r;
    if (!npm_rule_parse(entry, &r) || (r.op[0] && strcmp(r.op, k->op) != 0))
        return 1;
    npm_rule_search f = {r.name, NULL, 0};
    each_rule(k->list, match_npm_rule, &f);
    return f.count != 1;
}

/* Checks one npm request against the policy; writes the argument npm will see into out. */
static rb_err npm_apply_rules(const core_settings *cfg, const npm_requirement *r, char *out, size_t outlen,
                              char *err)
{
    requirement_npm_rule block, allow;
    int has_block = find_npm_rule(cfg->deps_block, r->name, &block);
    if (has_block && block.op[0] == '\0')
        return rb_fail(RB_EFORBIDDEN, err,
                       "npm package '%s' is blocked by the server's policy (deps-block rule 'npm:%s')", r->name,
                       block.name);
    int has_allow = find_npm_rule(cfg->deps_allow, r->name, &allow);
    if (cfg->deps_allow != NULL && cfg->deps_allow[0] != '\0' && !has_allow)
        return rb_fail(RB_EFORBIDDEN, err,
                       "npm package '%s' is not on the server's allowlist (deps-allow, whose npm entries read "
                       "'npm:NAME'); ask the operator to add it",
                       r->name);
    const char *min = NULL;
    char rulebuf[REQUIREMENTS_NPM_NAME_MAX + REQUIREMENTS_VERSION_MAX + 40] = "";
    if (has_allow && strcmp(allow.op, ">=") == 0) {
        min = allow.version;
        snprintf(rulebuf, sizeof(rulebuf), "deps-allow rule 'npm:%s>=%s'", allow.name, allow.version);
    }
    if (has_block && strcmp(block.op, "<") == 0 && (min == NULL || requirements_version_compare(block.version, min) > 0)) {
        min = block.version;
        snprintf(rulebuf, sizeof(rulebuf), "deps-block rule 'npm:%s<%s'", block.name, block.version);
    }
    if (min == NULL) {
        snprintf(out, outlen, "%s%s%s", r->name, r->spec[0] ? "@" : "", r->spec);
        return RB_OK;
    }
    if (r->spec[0] != '\0' && r->n_cmp == 0)
        return rb_fail(RB_EFORBIDDEN, err,
                       "npm package '%s@%s' names a dist-tag, which cannot be held to the minimum version %s set by "
                       "the %s; give a version or a range",
                       r->name, r->spec, min, rulebuf);
    for (int i = 0; i < r->n_cmp; i++) {
        const char *op = r->cmp_op[i];
        int upper = op[0] == '\0' || strcmp(op, "=") == 0 || strcmp(op, "<=") == 0 || strcmp(op, "<") == 0;
        if (upper && npm_exact(r->cmp_version[i]) &&
            requirements_version_compare(r->cmp_version[i], min) < (strcmp(op, "<") == 0 ? 1 : 0))
            return rb_fail(RB_EFORBIDDEN, err,
                           "npm package '%s@%s' is older than the minimum version %s set by the %s", r->name, r->spec,
                           min, rulebuf);
    }
    snprintf(out, outlen, "%s@%s%s>=%s", r->name, r->spec, r->spec[0] ? " " : "", min);
    return RB_OK;
}

/* ---- a caller's list ------------------------------------------------------------------------ */

/* What differs between the ecosystems' lists: the syntax, the policy and the words. */
typedef struct list_kind {
    size_t text_max;
    const char *example; /* "such as ..." */
    const char *accepts; /* what a malformed entry is told */
    /* Parses text into name (REQUIREMENTS_NPM_NAME_MAX + 1 bytes) and applies the policy,
     * writing the installer's line: RB_EINVAL with *syntax set (no message) when text is not a
     * requirement, otherwise the policy's answer. */
    rb_err (*one)(const core_settings *cfg, const char *text, char *name, char *line, size_t linelen, int *syntax,
                  char *err);
} list_kind;

static rb_err pip_one(const core_settings *cfg, const char *text, char *name, char *line, size_t linelen,
                      int *syntax, char *err)
{
    requirement r;
    if (requirements_parse_one(text, &r) != RB_OK) {
        *syntax = 1;
        return RB_EINVAL;
    }
    snprintf(name, REQUIREMENTS_NPM_NAME_MAX + 1, "%s", r.name);
    return apply_rules(cfg, &r, line, linelen, err);
}

static rb_err npm_one(const core_settings *cfg, const char *text, char *name, char *line, size_t linelen,
                      int *syntax, char *err)
{
    npm_requirement r;
    if (requirements_npm_parse_one(text, &r) != RB_OK) {
        *syntax = 1;
        return RB_EINVAL;
    }
    snprintf(name, REQUIREMENTS_NPM_NAME_MAX + 1, "%s", r.name);
    return npm_apply_rules(cfg, &r, line, linelen, err);
}

static const list_kind pip_list = {
    REQUIREMENTS_TEXT_MAX, "\"requests==2.32.3\"",
    "give a package name with at most one version specifier, e.g. \"requests==2.32.3\" or \"numpy>=1.26\" (no "
    "options, URLs, extras or markers)",
    pip_one};
static const list_kind npm_list = {
    REQUIREMENTS_NPM_TEXT_MAX, "\"left-pad@1.3.0\"",
    "give an npm package name with an optional @version, @range or @tag, e.g. \"left-pad\", \"lodash@^4.17.21\" or "
    "\"@scope/name@1.2.3\" (no URLs, paths, git, aliases or '||')",
    npm_one};

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static rb_err parse_list(const list_kind *kind, const core_settings *cfg, json_t *list, json_t **out, char *err)
{
    *out = NULL;
    if (list == NULL || json_is_null(list))
        return RB_OK;
    if (!json_is_array(list))
        return rb_fail(RB_EINVAL, err, "dependencies: must be a list of requirement strings such as %s",
                       kind->example);
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
    typedef char name_buf[REQUIREMENTS_NPM_NAME_MAX + 1];
    name_buf *names = xcalloc(n, sizeof(*names));
    char **lines = xcalloc(n, sizeof(char *));
    size_t i;
    json_t *v;
    json_array_foreach(list, i, v)
    {
        const char *s = json_string_value(v);
        int syntax = 0;
        char line[REQUIREMENTS_NPM_NAME_MAX + 2 * REQUIREMENTS_VERSION_MAX + 16];
        if (s == NULL || strlen(s) > kind->text_max ||
            ((e = kind->one(cfg, s, names[i], line, sizeof(line), &syntax, err)) != RB_OK && syntax)) {
            e = rb_fail(RB_EINVAL, err, "dependencies[%zu]: '%.80s' is not a requirement runbox accepts: %s", i,
                        s ? s : "(not a string)", kind->accepts);
            break;
        }
        for (size_t k = 0; k < i && e == RB_OK; k++)
            if (strcmp(names[k], names[i]) == 0)
                e = rb_fail(RB_EINVAL, err, "dependencies: package '%s' is listed twice", names[i]);
        if (e != RB_OK)
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
    free(names);
    return e;
}

rb_err requirements_parse(const core_settings *cfg, json_t *list, json_t **out, char *err)
{
    return parse_list(&pip_list, cfg, list, out, err);
}

rb_err requirements_npm_parse(const core_settings *cfg, json_t *list, json_t **out, char *err)
{
    return parse_list(&npm_list, cfg, list, out, err);
}

rb_err requirements_check_settings(const core_settings *cfg, char *err)
{
    rb_err e = check_rules(cfg->deps_allow, "deps-allow", ">=", err);
    return e != RB_OK ? e : check_rules(cfg->deps_block, "deps-block", "<", err);
}

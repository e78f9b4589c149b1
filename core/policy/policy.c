/*
 * policy.c: the optional code policy (core/policy/policy.h). Holds the presets (named after what they
 * stop, in the spirit of CodeBox-AI's dangerous imports, builtins and patterns), reads the
 * operator's rules file once, and answers per execution which rules the runner must check. It
 * does not check code itself: the runner does that inside the sandbox with Python's parser.
 */
#include "core/policy/policy.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define POLICY_FILE_MAX (1024 * 1024) /* bytes of a rules file */
#define POLICY_RULES_MAX 10000        /* rules in the active set */
#define POLICY_DISABLED_MAX 10000     /* entries of one request's disabled_rules */
#define POLICY_NAME_MAX 200           /* characters of one rule name */

struct policy {
    char *mode;        /* "off" "default" "strict" "custom" */
    json_t *rules;     /* array of active rule names, in order, without duplicates */
    char *overridable; /* the operator's --code-policy-overridable text */
};

/* The default preset: what code running in a sandbox rarely needs and careless or hostile code
 * uses first (process and network access, native code, unpickling, dynamic evaluation, writing
 * files, walking from an object to the interpreter's internals). */
static const char *const preset_default[] = {
    "import:os", "import:subprocess", "import:socket", "import:ctypes", "import:multiprocessing", "import:pty",
    "import:pickle", "import:marshal", "import:shelve", "import:pdb",
    "builtin:eval", "builtin:exec", "builtin:compile", "builtin:__import__", "builtin:globals", "builtin:locals",
    "builtin:breakpoint",
    "name:__builtins__",
    "attr:__globals__", "attr:__builtins__", "attr:__subclasses__", "attr:__bases__", "attr:__base__", "attr:__mro__",
    "attr:__code__",
    "open:write",
    NULL,
};

/* strict = default + these: the interpreter and the process (sys, signals, threads), the
 * network stack and clients, introspection and every file access. */
static const char *const preset_strict[] = {
    "import:sys", "import:importlib", "import:builtins", "import:shutil", "import:signal", "import:resource",
    "import:inspect", "import:gc", "import:code", "import:codeop", "import:runpy", "import:mmap", "import:fcntl",
    "import:posix", "import:select", "import:selectors", "import:asyncio", "import:threading", "import:_thread",
    "import:http", "import:urllib", "import:urllib3", "import:requests", "import:ftplib", "import:smtplib",
    "import:telnetlib", "import:ssl", "import:cffi",
    "builtin:open", "builtin:getattr", "builtin:setattr", "builtin:delattr", "builtin:vars", "builtin:dir",
    "builtin:input", "builtin:exit", "builtin:quit",
    "attr:__dict__", "attr:__class__", "attr:__getattribute__", "attr:__reduce__", "attr:__reduce_ex__",
    "attr:__loader__", "attr:__spec__", "attr:__self__", "attr:__func__", "attr:f_globals", "attr:f_locals",
    "attr:f_back", "attr:f_builtins", "attr:gi_frame", "attr:cr_frame", "attr:tb_frame", "attr:co_code",
    NULL,
};

static int ident_char(char ch, int first)
{
    if ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || ch == '_')
        return 1;
    return !first && ch >= '0' && ch <= '9';
}

/* s[0..n) is a (dotted when dots != 0) ASCII identifier. */
static int ident_ok(const char *s, size_t n, int dots)
{
    int first = 1;
    if (n == 0)
        return 0;
    for (size_t i = 0; i < n; i++) {
        if (dots && s[i] == '.') {
            if (first)
                return 0;
            first = 1;
            continue;
        }
        if (!ident_char(s[i], first))
            return 0;
        first = 0;
    }
    return !first;
}

int policy_rule_name_ok(const char *name)
{
    if (name == NULL)
        return 0;
    size_t len = strlen(name);
    const char *colon = strchr(name, ':');
    if (colon == NULL || len > POLICY_NAME_MAX)
        return 0;
    size_t kl = (size_t)(colon - name);
    const char *t = colon + 1;
    size_t tl = len - kl - 1;
    if (kl == 6 && memcmp(name, "import", 6) == 0)
        return ident_ok(t, tl, 1);
    if ((kl == 7 && memcmp(name, "builtin", 7) == 0) || (kl == 4 && memcmp(name, "name", 4) == 0) ||
        (kl == 4 && memcmp(name, "attr", 4) == 0))
        return ident_ok(t, tl, 0);
    if (kl == 4 && memcmp(name, "open", 4) == 0)
        return strcmp(t, "write") == 0;
    return 0;
}

static int rules_index(json_t *rules, const char *name)
{
    size_t i;
    json_t *v;
    json_array_foreach(rules, i, v)
    {
        if (strcmp(json_string_value(v), name) == 0)
            return (int)i;
    }
    return -1;
}

static void rules_add(json_t *rules, const char *name)
{
    if (rules_index(rules, name) < 0)
        json_array_append_new(rules, json_string(name));
}

/* Reads the rules file at path into b (whose maximum is POLICY_FILE_MAX). */
static rb_err read_file(const char *path, rb_buf *b, char *err)
{
    rb_err e = RB_OK;
    FILE *f = fopen(path, "r");
    if (f == NULL)
        return rb_fail(RB_EIO, err, "code-policy-file: cannot open '%s': %s", path, strerror(errno));
    char chunk[8192];
    size_t n;
    while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0) {
        if (rb_buf_append(b, chunk, n) != RB_OK) {
            e = rb_fail(RB_EINVAL, err, "code-policy-file: '%s' is larger than %d bytes", path, POLICY_FILE_MAX);
            goto cleanup;
        }
    }
    if (ferror(f))
        e = rb_fail(RB_EIO, err, "code-policy-file: cannot read '%s'", path);
cleanup:
    fclose(f);
    return e;
}

/* Applies the rules file's text[0..len) (untrusted: any bytes): "name" adds, "-name" removes,
 * '#' starts a comment. path only names the file in err. */
static rb_err parse_rules(policy *p, const char *text, size_t len_all, const char *path, char *err)
{
    size_t pos = 0;
    int lineno = 0;
    while (pos < len_all) {
        lineno++;
        const char *line = text + pos;
        const char *nl = memchr(line, '\n', len_all - pos);
        size_t len = nl ? (size_t)(nl - line) : len_all - pos;
        pos += len + (nl ? 1 : 0);
        const char *hash = memchr(line, '#', len);
        if (hash != NULL)
            len = (size_t)(hash - line);
        while (len > 0 && (line[0] == ' ' || line[0] == '\t')) {
            line++;
            len--;
        }
        while (len > 0 && (line[len - 1] == ' ' || line[len - 1] == '\t' || line[len - 1] == '\r'))
            len--;
        if (len == 0)
            continue;
        if (memchr(line, '\0', len) != NULL)
            return rb_fail(RB_EINVAL, err, "code-policy-file: %s line %d contains a NUL byte; is it a text file?",
                           path, lineno);
        int remove = line[0] == '-';
        char *name = xstrndup(line + remove, len - (size_t)remove);
        if (!policy_rule_name_ok(name)) {
            rb_err e = rb_fail(RB_EINVAL, err,
                               "code-policy-file: %s line %d: '%.100s' is not a rule name (import:MODULE, "
                               "builtin:NAME, name:NAME, attr:NAME or open:write)",
                               path, lineno, name);
            free(name);
            return e;
        }
        if (remove) {
            int i = rules_index(p->rules, name);
            if (i >= 0)
                json_array_remove(p->rules, (size_t)i);
        } else if (json_array_size(p->rules) >= POLICY_RULES_MAX) {
            free(name);
            return rb_fail(RB_EINVAL, err, "code-policy-file: %s has more than %d rules", path, POLICY_RULES_MAX);
        } else {
            rules_add(p->rules, name);
        }
        free(name);
    }
    return RB_OK;
}

/* Each item of --code-policy-overridable is a rule name or a prefix ending in '*'. */
static rb_err check_overridable(const char *s, char *err)
{
    if (strcmp(s, "none") == 0 || strcmp(s, "*") == 0)
        return RB_OK;
    while (*s != '\0') {
        const char *end = strchr(s, ',');
        size_t len = end ? (size_t)(end - s) : strlen(s);
        char *item = xstrndup(s, len);
        s += len + (end ? 1 : 0);
        char *a = item, *z = item + strlen(item);
        while (*a == ' ' || *a == '\t')
            a++;
        while (z > a && (z[-1] == ' ' || z[-1] == '\t'))
            *--z = '\0';
        int ok = *a == '\0' || (z > a && z[-1] == '*') || policy_rule_name_ok(a);
        if (!ok) {
            rb_err e = rb_fail(RB_EINVAL, err,
                               "code-policy-overridable: '%.100s' is not a rule name or a prefix ending in * "
                               "(e.g. import:*), nor * or none",
                               a);
            free(item);
            return e;
        }
        free(item);
    }
    return RB_OK;
}

rb_err policy__new_text(const core_settings *cfg, const char *rules, size_t len, const char *path, policy **out,
                        char *err)
{
    policy *p = xcalloc(1, sizeof(*p));
    p->mode = xstrdup(cfg->code_policy ? cfg->code_policy : "off");
    p->overridable = xstrdup(cfg->code_policy_overridable ? cfg->code_policy_overridable : "*");
    p->rules = json_array();
    int strict = strcmp(p->mode, "strict") == 0;
    if (strict || strcmp(p->mode, "default") == 0)
        for (size_t i = 0; preset_default[i] != NULL; i++)
            rules_add(p->rules, preset_default[i]);
    if (strict)
        for (size_t i = 0; preset_strict[i] != NULL; i++)
            rules_add(p->rules, preset_strict[i]);
    if (strcmp(p->mode, "off") != 0 && rules != NULL) {
        rb_err e = parse_rules(p, rules, len, path ? path : "(rules)", err);
        if (e != RB_OK) {
            policy_free(p);
            return e;
        }
    }
    if (strcmp(p->mode, "off") == 0)
        json_array_clear(p->rules);
    rb_err e = check_overridable(p->overridable, err);
    if (e != RB_OK) {
        policy_free(p);
        return e;
    }
    *out = p;
    return RB_OK;
}

rb_err policy_new(const core_settings *cfg, policy **out, char *err)
{
    const char *path = cfg->code_policy_file;
    /* an "off" policy never reads its file, so a missing one is not an error */
    if (path == NULL || cfg->code_policy == NULL || strcmp(cfg->code_policy, "off") == 0)
        return policy__new_text(cfg, NULL, 0, NULL, out, err);
    rb_buf b;
    rb_buf_init(&b, POLICY_FILE_MAX);
    rb_err e = read_file(path, &b, err);
    if (e == RB_OK)
        e = policy__new_text(cfg, b.data != NULL ? b.data : "", b.len, path, out, err);
    rb_buf_dispose(&b);
    return e;
}

void policy_free(policy *p)
{
    if (p == NULL)
        return;
    free(p->mode);
    free(p->overridable);
    json_decref(p->rules);
    free(p);
}

/* Whether callers may turn off rule name (the operator's comma list; "*" any, "none" none). */
static int overridable(const policy *p, const char *name)
{
    const char *s = p->overridable;
    if (strcmp(s, "none") == 0)
        return 0;
    size_t nl = strlen(name);
    while (*s != '\0') {
        const char *end = strchr(s, ',');
        size_t len = end ? (size_t)(end - s) : strlen(s);
        const char *item = s;
        s += len + (end ? 1 : 0);
        while (len > 0 && (item[0] == ' ' || item[0] == '\t')) {
            item++;
            len--;
        }
        while (len > 0 && (item[len - 1] == ' ' || item[len - 1] == '\t'))
            len--;
        if (len == 0)
            continue;
        if (item[len - 1] == '*') {
            if (len - 1 <= nl && memcmp(item, name, len - 1) == 0)
                return 1;
        } else if (len == nl && memcmp(item, name, nl) == 0) {
            return 1;
        }
    }
    return 0;
}

rb_err policy_rules_for(const policy *p, json_t *disabled, json_t **out, char *err)
{
    *out = NULL;
    int all = 0;
    if (disabled != NULL && !json_is_null(disabled)) {
        if (!json_is_array(disabled))
            return rb_fail(RB_EINVAL, err,
                           "'disabled_rules' must be an array of rule names like [\"import:os\"] (see GET /policy)");
        if (json_array_size(disabled) > POLICY_DISABLED_MAX)
            return rb_fail(RB_EINVAL, err, "'disabled_rules' has more than %d entries", POLICY_DISABLED_MAX);
        size_t i;
        json_t *v;
        json_array_foreach(disabled, i, v)
        {
            const char *name = json_string_value(v);
            if (name == NULL || strlen(name) != json_string_length(v))
                return rb_fail(RB_EINVAL, err,
                               "'disabled_rules[%zu]' must be a string without NUL (a rule name from GET /policy)", i);
            if (strcmp(name, "all") == 0) {
                all = 1;
                continue;
            }
            if (!policy_rule_name_ok(name))
                return rb_fail(RB_EINVAL, err,
                               "'disabled_rules[%zu]': '%.100s' is not a rule name (import:MODULE, builtin:NAME, "
                               "name:NAME, attr:NAME, open:write or all; GET /policy lists the active rules)",
                               i, name);
        }
    }
    if (json_array_size(p->rules) == 0)
        return RB_OK;
    json_t *rules = json_array();
    size_t i;
    json_t *v;
    json_array_foreach(p->rules, i, v)
    {
        const char *name = json_string_value(v);
        int off = all;
        if (!off && disabled != NULL && json_is_array(disabled)) {
            size_t j;
            json_t *d;
            json_array_foreach(disabled, j, d)
            {
                if (strcmp(json_string_value(d), name) == 0) {
                    off = 1;
                    break;
                }
            }
        }
        if (!off) {
            json_array_append(rules, v);
            continue;
        }
        if (!overridable(p, name)) {
            json_decref(rules);
            return rb_fail(RB_EFORBIDDEN, err,
                           "'disabled_rules': the operator does not let callers turn off the code policy rule '%s' "
                           "(GET /policy shows which rules are overridable)",
                           name);
        }
    }
    if (json_array_size(rules) == 0) {
        json_decref(rules);
        return RB_OK;
    }
    *out = rules;
    return RB_OK;
}

static char *describe(const char *name)
{
    const char *t = strchr(name, ':') + 1;
    if (strncmp(name, "import:", 7) == 0)
        return xasprintf("importing %s (or a submodule) is not allowed", t);
    if (strncmp(name, "builtin:", 8) == 0)
        return xasprintf("using the builtin %s is not allowed", t);
    if (strncmp(name, "name:", 5) == 0)
        return xasprintf("using the name %s is not allowed", t);
    if (strncmp(name, "attr:", 5) == 0)
        return xasprintf("accessing the attribute %s is not allowed", t);
    return xstrdup("opening files for writing is not allowed");
}

json_t *policy_describe(const policy *p)
{
    json_t *rules = json_array();
    size_t i;
    json_t *v;
    json_array_foreach(p->rules, i, v)
    {
        const char *name = json_string_value(v);
        char *d = describe(name);
        json_array_append_new(rules, json_pack("{s:s, s:s, s:b}", "name", name, "description", d, "overridable",
                                               overridable(p, name)));
        free(d);
    }
    return json_pack("{s:b, s:s, s:o, s:s, s:s}", "enabled", json_array_size(p->rules) > 0, "mode", p->mode, "rules",
                     rules, "overridable", p->overridable, "note",
                     "The code policy checks Python cells with Python's parser before they run and refuses a cell "
                     "that breaks a rule (error PolicyViolation). It is a guard rail, not a security boundary: the "
                     "sandbox container is. Bash cells are not checked.");
}

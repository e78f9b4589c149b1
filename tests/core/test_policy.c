/*
 * test_policy.c: core/policy/policy.c without Docker: the presets, the operator's rules file (adding,
 * removing, bad lines named by line), which rules callers may turn off (--code-policy-overridable)
 * and the rule list sent with an execution (policy_rules_for), plus the config keys' validation.
 * The check itself runs in the runner and is tested in tests/runner/test_policy.py. Also replays
 * the libFuzzer seed corpus of the rules-file parser (tests/fuzz/corpus/policy/, fuzz_policy.c).
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/policy/policy.h"
#include "tests/core/support_core.h"
#include "tests/common/corpus.h"

static char rules_path[64];

static void write_rules(const char *text)
{
    snprintf(rules_path, sizeof(rules_path), "/tmp/runbox-test-policy-XXXXXX");
    int fd = mkstemp(rules_path);
    cr_assert(fd >= 0);
    size_t len = strlen(text);
    cr_assert_eq(write(fd, text, len), (ssize_t)len);
    close(fd);
}

static void remove_rules(void)
{
    if (rules_path[0] != '\0')
        unlink(rules_path);
    rules_path[0] = '\0';
}

static policy *make(const char *mode, const char *file_text, const char *overridable, rb_err want, char *err)
{
    core_settings cfg;
    core_settings_init(&cfg);
    sup_set(&cfg.code_policy, mode);
    if (file_text != NULL) {
        write_rules(file_text);
        sup_set(&cfg.code_policy_file, rules_path);
    }
    if (overridable != NULL)
        sup_set(&cfg.code_policy_overridable, overridable);
    policy *p = NULL;
    rb_err e = policy_new(&cfg, &p, err);
    cr_assert_eq(e, want, "policy_new: %d %s", e, e ? err : "");
    core_settings_dispose(&cfg);
    remove_rules();
    return p;
}

/* The names of the active rules, as sent for an execution without disabled_rules. */
static json_t *active(policy *p)
{
    json_t *rules = NULL;
    char err[RB_ERR_LEN];
    cr_assert_eq(policy_rules_for(p, NULL, &rules, err), RB_OK, "%s", err);
    return rules;
}

static int has(json_t *rules, const char *name)
{
    size_t i;
    json_t *v;
    json_array_foreach(rules, i, v)
    {
        if (strcmp(json_string_value(v), name) == 0)
            return 1;
    }
    return 0;
}

Test(policy, rule_names)
{
    const char *good[] = {"import:os", "import:os.path", "builtin:eval", "name:__builtins__", "attr:__globals__",
                          "open:write", "import:_thread"};
    const char *bad[] = {"os", "import:", "import:os path", "import:.os", "import:os.", "import:1a", "attr:a.b",
                         "open:read", "call:eval", ":os", "builtin:eval()", ""};
    for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
        cr_assert(policy_rule_name_ok(good[i]), "%s", good[i]);
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        cr_assert(!policy_rule_name_ok(bad[i]), "%s", bad[i]);
    cr_assert(!policy_rule_name_ok(NULL));
}

Test(policy, off_sends_nothing)
{
    char err[RB_ERR_LEN];
    policy *p = make("off", NULL, NULL, RB_OK, err);
    cr_assert_null(active(p));
    /* disabled_rules is accepted (and checked) even when the policy is off. */
    json_t *d = json_pack("[s]", "import:os"), *rules = NULL;
    cr_assert_eq(policy_rules_for(p, d, &rules, err), RB_OK);
    cr_assert_null(rules);
    json_decref(d);
    json_t *desc = policy_describe(p);
    cr_assert(json_is_false(json_object_get(desc, "enabled")));
    cr_assert_str_eq(json_string_value(json_object_get(desc, "mode")), "off");
    cr_assert_eq(json_array_size(json_object_get(desc, "rules")), 0);
    json_decref(desc);
    policy_free(p);
}

Test(policy, presets)
{
    char err[RB_ERR_LEN];
    policy *def = make("default", NULL, NULL, RB_OK, err);
    policy *strict = make("strict", NULL, NULL, RB_OK, err);
    json_t *d = active(def), *s = active(strict);
    const char *in_default[] = {"import:os", "import:subprocess", "import:socket", "import:ctypes", "builtin:eval",
                                "builtin:exec", "builtin:__import__", "name:__builtins__", "attr:__globals__",
                                "attr:__subclasses__", "open:write"};
    for (size_t i = 0; i < sizeof(in_default) / sizeof(in_default[0]); i++) {
        cr_assert(has(d, in_default[i]), "default lacks %s", in_default[i]);
        cr_assert(has(s, in_default[i]), "strict lacks %s", in_default[i]);
    }
    cr_assert(!has(d, "import:sys") && has(s, "import:sys"));
    cr_assert(json_array_size(s) > json_array_size(d));
    size_t i;
    json_t *v;
    json_array_foreach(s, i, v) cr_assert(policy_rule_name_ok(json_string_value(v)), "%s", json_string_value(v));
    json_decref(d);
    json_decref(s);
    policy_free(def);
    policy_free(strict);
}

Test(policy, file_adds_and_removes)
{
    char err[RB_ERR_LEN];
    policy *p = make("default", "# site rules\nimport:requests\n  -import:os   # we need os\n\n-open:write\r\n"
                     "attr:__dict__\nimport:requests\n", NULL, RB_OK, err);
    json_t *r = active(p);
    cr_assert(has(r, "import:requests") && has(r, "attr:__dict__") && has(r, "import:subprocess"));
    cr_assert(!has(r, "import:os") && !has(r, "open:write"));
    size_t n = 0, i;
    json_t *v;
    json_array_foreach(r, i, v) n += strcmp(json_string_value(v), "import:requests") == 0;
    cr_assert_eq(n, 1, "duplicates are kept once");
    json_decref(r);
    policy_free(p);

    p = make("custom", "import:os\n", NULL, RB_OK, err);
    r = active(p);
    cr_assert_eq(json_array_size(r), 1);
    cr_assert(has(r, "import:os"));
    json_decref(r);
    json_t *desc = policy_describe(p);
    cr_assert_str_eq(json_string_value(json_object_get(desc, "mode")), "custom");
    json_decref(desc);
    policy_free(p);
}

Test(policy, file_errors_name_the_line)
{
    char err[RB_ERR_LEN];
    policy *p = make("default", "import:os\nimport os\n", NULL, RB_EINVAL, err);
    cr_assert_null(p);
    cr_assert(strstr(err, "line 2") != NULL && strstr(err, "import os") != NULL, "%s", err);

    core_settings cfg;
    core_settings_init(&cfg);
    sup_set(&cfg.code_policy, "strict");
    sup_set(&cfg.code_policy_file, "/nonexistent/runbox-rules");
    cr_assert_eq(policy_new(&cfg, &p, err), RB_EIO);
    cr_assert(strstr(err, "/nonexistent/runbox-rules") != NULL, "%s", err);
    core_settings_dispose(&cfg);
}

Test(policy, disabling_rules)
{
    char err[RB_ERR_LEN];
    policy *p = make("default", NULL, "import:*, builtin:eval", RB_OK, err);
    json_t *rules = NULL, *all = active(p);

    json_t *d = json_pack("[s, s, s]", "import:os", "builtin:eval", "import:notarule");
    cr_assert_eq(policy_rules_for(p, d, &rules, err), RB_OK, "%s", err);
    cr_assert(!has(rules, "import:os") && !has(rules, "builtin:eval") && has(rules, "import:socket"));
    cr_assert_eq(json_array_size(rules), json_array_size(all) - 2);
    json_decref(rules);
    json_decref(d);

    d = json_pack("[s]", "builtin:exec");
    cr_assert_eq(policy_rules_for(p, d, &rules, err), RB_EFORBIDDEN);
    cr_assert_null(rules);
    cr_assert(strstr(err, "builtin:exec") != NULL, "%s", err);
    json_decref(d);

    d = json_pack("[s]", "all");
    cr_assert_eq(policy_rules_for(p, d, &rules, err), RB_EFORBIDDEN, "all includes rules that are not overridable");
    json_decref(d);

    const char *bad[] = {"[1]", "[\"eval\"]", "\"import:os\"", "{}"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        d = json_loads(bad[i], JSON_DECODE_ANY, NULL);
        cr_assert_eq(policy_rules_for(p, d, &rules, err), RB_EINVAL, "%s", bad[i]);
        cr_assert(strstr(err, "disabled_rules") != NULL, "%s", err);
        json_decref(d);
    }
    cr_assert_eq(policy_rules_for(p, json_null(), &rules, err), RB_OK);
    cr_assert_eq(json_array_size(rules), json_array_size(all));
    json_decref(rules);

    json_t *desc = policy_describe(p);
    size_t i;
    json_t *v;
    json_array_foreach(json_object_get(desc, "rules"), i, v)
    {
        const char *name = json_string_value(json_object_get(v, "name"));
        int want = strncmp(name, "import:", 7) == 0 || strcmp(name, "builtin:eval") == 0;
        cr_assert_eq(json_is_true(json_object_get(v, "overridable")), want, "%s", name);
        cr_assert(json_string_length(json_object_get(v, "description")) > 0);
    }
    json_decref(desc);
    json_decref(all);
    policy_free(p);
}

Test(policy, all_and_none)
{
    char err[RB_ERR_LEN];
    policy *p = make("strict", NULL, "*", RB_OK, err);
    json_t *rules = NULL, *d = json_pack("[s]", "all");
    cr_assert_eq(policy_rules_for(p, d, &rules, err), RB_OK, "%s", err);
    cr_assert_null(rules, "every rule off: nothing to check");
    policy_free(p);

    p = make("strict", NULL, "none", RB_OK, err);
    json_t *one = json_pack("[s]", "import:os");
    cr_assert_eq(policy_rules_for(p, one, &rules, err), RB_EFORBIDDEN);
    json_decref(one);
    json_decref(d);
    policy_free(p);

    cr_assert_null(make("default", NULL, "import:os, eval", RB_EINVAL, err));
    cr_assert(strstr(err, "eval") != NULL, "%s", err);
}

Test(policy, rules_text_matches_file)
{
    /* the buffer entry point behind policy_new: same rules, same errors (named by path) */
    char err[RB_ERR_LEN];
    core_settings cfg;
    core_settings_init(&cfg);
    sup_set(&cfg.code_policy, "custom");
    policy *p = NULL;
    static const char text[] = "import:requests\n-import:requests\nbuiltin:print # c\r\n";
    cr_assert_eq(policy__new_text(&cfg, text, sizeof(text) - 1, "r.txt", &p, err), RB_OK, "%s", err);
    json_t *rules = active(p);
    cr_assert_eq(json_array_size(rules), 1);
    cr_assert(has(rules, "builtin:print"));
    json_decref(rules);
    policy_free(p);
    p = NULL;
    cr_assert_eq(policy__new_text(&cfg, "x\nimport os", 11, "r.txt", &p, err), RB_EINVAL);
    cr_assert_null(p);
    cr_assert(strstr(err, "r.txt line 1") != NULL, "%s", err);
    /* a NUL inside a line is refused, not read as a shorter rule */
    static const char nul[] = "builtin:print\nimport:os\0junk\n";
    cr_assert_eq(policy__new_text(&cfg, nul, sizeof(nul) - 1, "r.txt", &p, err), RB_EINVAL);
    cr_assert_null(p);
    cr_assert(strstr(err, "line 2 contains a NUL") != NULL, "%s", err);
    core_settings_dispose(&cfg);
}

/* Every mode loads a seed as a rules file: valid rules or a clean RB_EINVAL naming the file. */
static void check_policy_seed(void *data, const char *seed, const char *path, const char *buf, size_t len)
{
    int *accepted = data;
    (void)buf;
    (void)len;
    static const char *const modes[] = {"custom", "default", "strict", "off"};
    for (size_t m = 0; m < sizeof(modes) / sizeof(modes[0]); m++) {
        char err[RB_ERR_LEN];
        core_settings cfg;
        core_settings_init(&cfg);
        sup_set(&cfg.code_policy, modes[m]);
        sup_set(&cfg.code_policy_file, path);
        policy *p = NULL;
        rb_err e = policy_new(&cfg, &p, err);
        cr_assert(e == RB_OK || e == RB_EINVAL, "%s (%s): %s", seed, modes[m], rb_strerror(e));
        if (e == RB_OK) {
            json_t *rules = active(p);
            size_t i;
            json_t *v;
            json_array_foreach(rules, i, v)
            {
                cr_expect(policy_rule_name_ok(json_string_value(v)), "%s: %s", seed, json_string_value(v));
            }
            json_decref(rules);
            json_decref(policy_describe(p));
            policy_free(p);
            (*accepted)++;
        } else {
            cr_expect(strstr(err, seed) != NULL, "%s: %s", seed, err);
        }
        core_settings_dispose(&cfg);
    }
}

Test(policy, fuzz_corpus_replay)
{
    int accepted = 0;
    int files = corpus_each("policy", check_policy_seed, &accepted);
    cr_assert_geq(files, 10);
    cr_assert_gt(accepted, 0);
}

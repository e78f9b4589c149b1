/*
 * fuzz_policy.c: libFuzzer target for the code-policy rules-file parser of core/policy/policy.c (the
 * operator's --code-policy-file, any bytes). The input is the file's text, from a private
 * exact-size copy so any read past the end is caught, given to policy__new_text under each
 * preset and overridable setting. Checks memory safety and the parser's promises: it succeeds
 * or fails with RB_EINVAL and a message; on success every active rule is a well-formed rule
 * name, appears once, and policy_rules_for and policy_describe work on the result. Built only
 * with clang and -DRUNBOX_FUZZ=ON; the seed corpus (tests/fuzz/corpus/policy/) is replayed by
 * tests/core/test_policy.c.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/settings.h"
#include "core/policy/policy.h"

static void check_rules(const policy *p)
{
    char err[RB_ERR_LEN];
    json_t *rules = NULL;
    if (policy_rules_for(p, NULL, &rules, err) != RB_OK)
        abort();
    size_t i;
    json_t *v;
    json_array_foreach(rules, i, v)
    {
        const char *name = json_string_value(v);
        if (name == NULL || !policy_rule_name_ok(name))
            abort();
        for (size_t j = 0; j < i; j++)
            if (strcmp(json_string_value(json_array_get(rules, j)), name) == 0)
                abort();
    }
    /* turning every rule off is allowed when the operator allows it ("*") */
    json_t *all = json_pack("[s]", "all");
    json_t *none = NULL;
    if (policy_rules_for(p, all, &none, err) != RB_OK || none != NULL)
        abort();
    json_decref(all);
    json_decref(policy_describe(p));
    json_decref(rules);
}

int LLVMFuzzerTestOneInput(const uint8_t *in, size_t n);

int LLVMFuzzerTestOneInput(const uint8_t *in, size_t n)
{
    char *copy = malloc(n > 0 ? n : 1);
    if (n > 0)
        memcpy(copy, in, n);
    static const char *const modes[] = {"custom", "default", "strict", "off"};
    for (size_t m = 0; m < sizeof(modes) / sizeof(modes[0]); m++) {
        core_settings cfg;
        memset(&cfg, 0, sizeof(cfg));
        cfg.code_policy = (char *)modes[m];
        cfg.code_policy_overridable = (char *)"*";
        policy *p = NULL;
        char err[RB_ERR_LEN];
        err[0] = '\0';
        rb_err e = policy__new_text(&cfg, copy, n, "fuzz.rules", &p, err);
        if (e == RB_OK) {
            if (p == NULL)
                abort();
            check_rules(p);
            policy_free(p);
        } else if (e != RB_EINVAL || p != NULL || err[0] == '\0' || memchr(err, '\0', RB_ERR_LEN) == NULL) {
            abort();
        }
    }
    free(copy);
    return 0;
}

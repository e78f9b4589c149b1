/*
 * policy: the optional code policy, a guard rail for Python cells (not a security boundary: the
 * sandbox container is). The operator picks a preset (--code-policy off|default|strict|custom),
 * may add or remove rules with a file (--code-policy-file) and says which rules callers may turn
 * off per execution (--code-policy-overridable). This module turns that into the list of rule
 * names sent with each execute request; the runner (docker/runner/runbox_policy.py) checks the
 * cell with Python's own parser before running it and refuses it with a PolicyViolation.
 *
 * A rule is named "<kind>:<target>" and its name alone defines it: import:<module>,
 * builtin:<name>, name:<name>, attr:<name>, open:write. No Docker, no I/O beyond reading the
 * rules file once in policy_new.
 *
 * The public header of the policy room (core/policy/): the heart builds the policy at core_new
 * (core/internal.h includes this) and asks it for each execution's rules and for GET /policy.
 * The room needs nothing of the heart.
 */
#ifndef RB_CORE_POLICY_POLICY_H
#define RB_CORE_POLICY_POLICY_H

#include <jansson.h>

#include "base/base.h"
#include "core/settings.h"

typedef struct policy policy;

/** Builds the active rule set from cfg (preset, then the rules file, read here). RB_EINVAL naming
 * the file and line of a bad rule, or RB_EIO when the file cannot be read. *out is owned by the
 * caller (policy_free). A policy that is off is a valid object with no rules. */
rb_err policy_new(const core_settings *cfg, policy **out, char *err);
/** policy_new with the rules file's text given as rules[0..len) (any bytes; NULL for no file)
 * instead of read from cfg->code_policy_file; path names it in err (NULL: "(rules)"). Errors
 * and ownership as policy_new. policy_new reads the file and calls this; the fuzzer
 * (tests/fuzz/fuzz_policy.c) and tests call it directly. */
rb_err policy__new_text(const core_settings *cfg, const char *rules, size_t len, const char *path, policy **out,
                        char *err);
/** Accepts NULL. */
void policy_free(policy *p);
/** Whether name is a well-formed rule name ("import:os", "attr:__globals__", "open:write"). */
int policy_rule_name_ok(const char *name);
/** The rules to send with one execution, given the request's disabled_rules (borrowed; NULL,
 * JSON null or an array of rule names, or "all"). *out is a new array of rule names, or NULL
 * when nothing is to be checked (policy off, or every rule disabled). RB_EINVAL for a malformed
 * list or name; RB_EFORBIDDEN naming an active rule the operator does not let callers turn
 * off. Names that are not active rules are ignored. */
rb_err policy_rules_for(const policy *p, json_t *disabled, json_t **out, char *err);
/** {enabled, mode, rules: [{name, description, overridable}], overridable, note} for GET /policy
 * (new reference). */
json_t *policy_describe(const policy *p);

#endif

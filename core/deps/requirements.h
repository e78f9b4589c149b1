/*
 * requirements: the Python requirements runbox accepts and the operator's policy over them.
 * A requirement is a package name with at most one version specifier ("requests",
 * "numpy>=1.26", "zope.interface ~= 6.0"): a strict subset of PEP 508 with no options, URLs,
 * paths, extras or markers, so that nothing a caller writes can steer pip beyond choosing a
 * package and a version. The policy is the server's deps-network (none refuses every install),
 * deps-allow ("name" or "name>=min": only these) and deps-block ("name": never; "name<V": not
 * below V); errors name the package and the rule.
 *
 * npm packages (javascript and typescript sessions) have a syntax of their own: a name
 * ("left-pad", "@scope/name") with an optional "@" and a version, range or dist-tag
 * ("left-pad@1.3.0", "lodash@^4.17", "x@>=1.2 <2", "y@latest"): no URLs, paths, git or alias
 * specs, no "||". Policy entries for npm are written "npm:NAME" (deps-block, deps-allow),
 * "npm:NAME>=V" (deps-allow) and "npm:NAME<V" (deps-block) in the same lists; entries without
 * that prefix are Python's, so neither ecosystem's rules touch the other's packages (a
 * deps-allow with no npm: entries allows no npm package).
 *
 * Pure code: no Docker, no pip, no I/O. Installing is core/deps/deps.c's job (and
 * core/deps/deps_npm.c's). A public header of the installers' room (core/deps/): the daemon
 * checks the settings with it at start-up.
 */
#ifndef RB_CORE_DEPS_REQUIREMENTS_H
#define RB_CORE_DEPS_REQUIREMENTS_H

#include <jansson.h>
#include <stddef.h>

#include "base/base.h"
#include "core/settings.h"

#define REQUIREMENTS_MAX 50          /* requirements in one request */
#define REQUIREMENTS_TEXT_MAX 200    /* characters of one requirement as the caller wrote it */
#define REQUIREMENTS_NAME_MAX 200    /* characters of a normalised name (as many as a requirement may have) */
#define REQUIREMENTS_VERSION_MAX 60  /* characters of a version */

/** One parsed requirement. */
typedef struct requirement {
    char name[REQUIREMENTS_NAME_MAX + 1];       /* normalised: lower case, runs of -_. as one '-' */
    char op[3];                                 /* "", "==", ">=", "<=", "~=", "!=", ">", "<" */
    char version[REQUIREMENTS_VERSION_MAX + 1]; /* "" exactly when op is "" */
} requirement;

#define REQUIREMENTS_NPM_TEXT_MAX 280 /* characters of one npm requirement as the caller wrote it */
#define REQUIREMENTS_NPM_NAME_MAX 214 /* npm's own limit on a name, scope included */

/** One parsed npm requirement. */
typedef struct npm_requirement {
    char name[REQUIREMENTS_NPM_NAME_MAX + 1];     /* as written (npm names are case-sensitive) */
    char spec[REQUIREMENTS_VERSION_MAX + 1];      /* "" (any version), a version, range or dist-tag */
    int n_cmp;                                    /* comparators in spec: 0 (none, or a dist-tag), 1 or 2 */
    char cmp_op[2][3];                            /* each comparator's operator: "", "=", "^", "~", ">=", ... */
    char cmp_version[2][REQUIREMENTS_VERSION_MAX + 1]; /* and its version, without a leading 'v' */
} npm_requirement;

/** Parses one requirement: a name (starting with a letter or digit, then letters, digits and
 * -_.; separators at the end are dropped), optionally followed by one operator and a version
 * (letters, digits and .*+!-_), with spaces allowed around each part. Returns RB_OK and fills
 * *out, or RB_EINVAL (no message: the caller words it) for anything else, including a name
 * over REQUIREMENTS_NAME_MAX or a version over REQUIREMENTS_VERSION_MAX characters. *out is
 * written even on failure; its content then means nothing. */
rb_err requirements_parse_one(const char *text, requirement *out);

/** Compares two versions by their dotted numeric release parts ("2.10" > "2.9", "1.0.1" >
 * "1.0"); where a part is not a number the texts compare byte by byte. Returns <0, 0 or >0. Not
 * PEP 440 ordering (pre-releases are not recognised): it only words early errors, pip gets the
 * minimum version as a specifier and enforces it. */
int requirements_version_compare(const char *a, const char *b);

/** Checks a caller's dependencies list (borrowed: NULL, JSON null, or an array of at most
 * REQUIREMENTS_MAX strings of at most REQUIREMENTS_TEXT_MAX characters) against the syntax
 * above and cfg's policy. On RB_OK *out is NULL for NULL, null or [], otherwise a new array
 * (owned by the caller) of the requirements pip will see, normalised, with the policy's minimum
 * version added (",>=V"), sorted. Errors (with *out NULL): RB_EINVAL for a malformed list,
 * requirement or duplicate package, or a malformed deps-allow/deps-block setting, naming it (an
 * entry the policy would not apply as written: not "name" or the list's "name>=V" / "name<V",
 * a second rule for one package, or too long to read); RB_EFORBIDDEN when installs are
 * disabled, or naming the package and the rule that forbids it. */
rb_err requirements_parse(const core_settings *cfg, json_t *list, json_t **out, char *err);

/** Parses one npm requirement: NAME or NAME@SPEC, where NAME is "[@SCOPE/]BASE" (SCOPE and
 * BASE: letters, digits and -._, starting with a letter or digit; at most
 * REQUIREMENTS_NPM_NAME_MAX characters in all) and SPEC is a dist-tag (a letter, then letters,
 * digits and -._) or one or two comparators separated by one space, each an optional operator
 * (= ^ ~ >= <= > <) and a version of at most three dot-separated parts (digits, x, X or *) with
 * an optional -prerelease and +build (letters, digits, . and -); a leading 'v' is allowed.
 * Nothing else: no spaces around the parts, no "||", URLs, paths, "file:", "npm:" or git specs.
 * Returns RB_OK and fills *out, or RB_EINVAL (no message) for anything else; *out then means
 * nothing. */
rb_err requirements_npm_parse_one(const char *text, npm_requirement *out);

/** requirements_parse for npm packages: the same list limits and deps-network check, each entry
 * parsed by requirements_npm_parse_one (at most REQUIREMENTS_NPM_TEXT_MAX characters), the
 * "npm:" rules of deps-allow / deps-block applied by exact name, a minimum version added as a
 * comparator (">=V", or " >=V" after the caller's range; a dist-tag cannot take one and is
 * refused then). On RB_OK *out is NULL or a new sorted array of "name" / "name@spec" lines,
 * one per argument of `npm install`. */
rb_err requirements_npm_parse(const core_settings *cfg, json_t *list, json_t **out, char *err);

/** Checks cfg's deps-allow and deps-block settings alone (the daemon calls it at start-up, so
 * that a malformed policy stops runboxd instead of failing every install): RB_EINVAL naming
 * the setting, as requirements_parse would. */
rb_err requirements_check_settings(const core_settings *cfg, char *err);

#endif

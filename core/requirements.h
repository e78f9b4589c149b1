/*
 * requirements: the Python requirements runbox accepts and the operator's policy over them.
 * A requirement is a package name with at most one version specifier ("requests",
 * "numpy>=1.26", "zope.interface ~= 6.0"): a strict subset of PEP 508 with no options, URLs,
 * paths, extras or markers, so that nothing a caller writes can steer pip beyond choosing a
 * package and a version. The policy is the server's deps-network (none refuses every install),
 * deps-allow ("name" or "name>=min": only these) and deps-block ("name": never; "name<V": not
 * below V); errors name the package and the rule.
 *
 * Pure code: no Docker, no pip, no I/O. Installing is core/deps.c's job.
 */
#ifndef RB_CORE_REQUIREMENTS_H
#define RB_CORE_REQUIREMENTS_H

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

/** Checks cfg's deps-allow and deps-block settings alone (the daemon calls it at start-up, so
 * that a malformed policy stops runboxd instead of failing every install): RB_EINVAL naming
 * the setting, as requirements_parse would. */
rb_err requirements_check_settings(const core_settings *cfg, char *err);

#endif

/*
 * deps_internal.h: what the files of the installers' room (core/deps/) share. The dependency
 * installer (deps.c: the jobs, the cache volumes, the filler and copier containers) shares with
 * the installer of each package ecosystem a deps_kind that describes one (pip in deps.c, npm in
 * deps_npm.c), and the parts of the containers' scripts that are the same for all (the set, the
 * cache check, the copy into the workspace); with the listing of the image's packages
 * (packages.c), the room's state in the core.
 * Private to core/deps/: nothing outside the folder includes this (what the room offers the
 * rest of core is deps.h).
 */
#ifndef RB_CORE_DEPS_DEPS_INTERNAL_H
#define RB_CORE_DEPS_DEPS_INTERNAL_H

#include <jansson.h>
#include <stddef.h>

#include "base/base.h"
#include "core/core.h"
#include "core/settings.h"

/* The scripts' exit codes, which deps.c reads. */
#define EXIT_CACHE_MISS 10
#define EXIT_SATISFIED 11 /* SATISFIED_PY's and copy_sh's */
#define EXIT_COPY_FAILED 5
#define EXIT_PIP_FAILED 4 /* the ecosystem's tool (pip, npm) failed */
#define EXIT_COLLISION 3

/* Both scripts: RUNBOX_REQS holds the requirements, one a line, and /cache is the set's cache
 * volume: site/ (what the tool installed), .requirements (the set, compared before use: a hash
 * collision of volume names cannot mix sets up), .complete (written last; never removed). */
#define REQS_SH                                                                                                      \
    "set -u\n"                                                                                                       \
    "umask 022\n"                                                                                                    \
    "cd /tmp\n"                                                                                                      \
    "printf '%s\\n' \"$RUNBOX_REQS\" > /tmp/requirements.txt\n"
#define SAME_SET_SH                                                                                                  \
    "cmp -s /cache/.requirements /tmp/requirements.txt || { echo 'runbox: the cache volume holds another "           \
    "requirement set' >&2; exit 3; }\n"

/* The filler's start (the set, the cache's lock, and an exit 0 when another filler completed
 * the cache meanwhile) and end (the set stored, then .complete). */
#define FILL_START_SH                                                                                                \
    REQS_SH "exec 9>/cache/.lock\n"                                                                                  \
            "flock 9\n"                                                                                              \
            "if [ -f /cache/.complete ]; then\n"                                                                     \
            "  " SAME_SET_SH "  exit 0\n"                                                                            \
            "fi\n"
#define FILL_DONE_SH                                                                                                 \
    "cp /tmp/requirements.txt /cache/.requirements\n"                                                                \
    "touch /cache/.complete\n"

/* The copier's copy (uid 1000, no network, the cache read-only at /cache, the workspace at
 * /target): the folder FROM of the cache (with a trailing "/.") becomes
 * /target/.runbox/DEST. Exit 10 = not cached, 3 = another set, 5 = the copy failed. It needs
 * no lock: the filler writes .complete after everything else and never changes a complete
 * cache. A link or file where .runbox should be is dropped; links in what earlier installs
 * left are dropped; cp -P copies the set's own links as links; mv renames links, rm -r does not
 * follow them. What user code does to the folder meanwhile (it runs as the same uid) can only
 * change its own files: this container can write nowhere else but its /tmp. */
#define COPY_SH(DEST, FROM)                                                                                          \
    "[ -f /cache/.complete ] || exit 10\n" SAME_SET_SH "sp=/target/.runbox/" DEST " new= old=\n"                     \
    "trap 'rm -rf \"$new\" \"$old\"' EXIT\n"                                                                         \
    "if [ -L /target/.runbox ] || { [ -e /target/.runbox ] && [ ! -d /target/.runbox ]; }; then\n"                   \
    "  rm -f /target/.runbox || exit 5\n"                                                                            \
    "fi\n"                                                                                                           \
    "mkdir -p /target/.runbox || exit 5\n"                                                                           \
    "new=$(mktemp -d /target/.runbox/.install-XXXXXXXX) && chmod 755 \"$new\" || exit 5\n"                           \
    "if [ -d \"$sp\" ] && [ ! -L \"$sp\" ]; then\n"                                                                  \
    "  cp -R -P -l \"$sp/.\" \"$new/\" && find \"$new\" -type l -delete || exit 5\n"                                 \
    "fi\n"                                                                                                           \
    "cp -R -P --remove-destination " FROM " \"$new/\" || exit 5\n"                                                   \
    "old=$(mktemp -d /target/.runbox/.old-XXXXXXXX) || exit 5\n"                                                     \
    "if [ -e \"$sp\" ] || [ -L \"$sp\" ]; then mv -T \"$sp\" \"$old/" DEST "\" || exit 5; fi\n"                      \
    "mv -T \"$new\" \"$sp\" || exit 5\n"                                                                             \
    "new=\n"

/* One package ecosystem's installer. */
typedef struct deps_kind {
    const char *tool;        /* "pip", "npm": named in messages and the cache volume's labels */
    const char *fill_sh;     /* the filler's script (root, network, /cache read-write, no workspace):
                                exit 0 = the cache is filled, 4 = the tool failed, 3 = another set */
    const char *copy_sh;     /* the copier's: first a JSON list on stdout of the requirements the image
                                already satisfies, then COPY_SH (or exit 11: nothing to copy) */
    const char *dest;        /* the folder the copier fills, as the session sees it */
    const char *dest_key;    /* the answer's key for it ("site_packages", "node_modules") */
    const char *volume_salt; /* mixed into the cache volume's name ("" keeps pip's names) */
    const char *tool_rules;  /* what the tool was told, for its failure: "wheels only" */
    /* Appends the filler's environment (new strings) at env[*n], at most DEPS_FILLER_ENV_MAX;
     * ca: the CA bundle is mounted at DEPS_CA_PATH. */
    void (*filler_env)(const core_settings *cfg, int ca, char **env, size_t *n);
    /* Where the tool downloads from, for its failure ("https://pypi.org/simple"). */
    const char *(*source)(const core_settings *cfg);
    /* The caller's list checked and normalised: requirements_parse or requirements_npm_parse. */
    rb_err (*parse)(const core_settings *cfg, json_t *list, json_t **out, char *err);
    const char *example;     /* a requirement for messages: "\"requests==2.32.3\"" */
} deps_kind;

#define DEPS_FILLER_ENV_MAX 8
#define DEPS_CA_PATH "/etc/runbox-ca.pem"

extern const deps_kind deps_pip; /* deps.c */
extern const deps_kind deps_npm; /* deps_npm.c */

/** The installer of a session language: &deps_pip for python, &deps_npm for javascript and
 * typescript, NULL for a language without packages (bash). */
const deps_kind *deps_kind_of(const char *language);

/* What the room keeps in the core (core_heart_room, CORE_ROOM_DEPS). */
typedef struct deps_room {
    int installs_running; /* dependency installs holding a slot (deps.c; at most cfg->max_installs) */
    struct install_job *installs_head, *installs_tail; /* installs waiting for a slot, oldest first (deps.c) */
    json_t *packages_cache; /* {image_id, answer} of the last GET /packages listing (packages.c), or NULL */
} deps_room;

/** The room's state in c, made on first use (deps_dispose frees it; deps.c). */
deps_room *deps__room(rb_core *c);

#endif

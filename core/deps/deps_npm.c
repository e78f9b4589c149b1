/*
 * deps_npm.c: the npm installer of javascript and typescript sessions, in the installer design
 * of core/deps/deps.c (which runs it: a cache volume per requirement set and image, a filler with
 * network that never sees a workspace, a copier without network as uid 1000 that copies the set
 * into a fresh folder and renames it into place; read deps.c's header).
 *
 * The filler runs the image's npm (Debian's, root, HOME and cache in /tmp, no npmrc read)
 * into the cache: `npm install --prefix /cache/site --ignore-scripts --no-audit --no-fund
 * --omit=dev --registry R` with the set as its arguments (one requirement each, checked by
 * core/deps/requirements.c: names and versions or ranges, never URLs, paths or git specs). No
 * lifecycle script of any package runs (--ignore-scripts): packages that need a native build
 * install without it and fail when required. The copier copies /cache/site/node_modules into
 * /workspace/.runbox/node_modules, which the sandbox's NODE_PATH names (core/sandbox.c), so
 * `require` finds the packages from the next cell on. The image's own Node modules are left
 * alone: the session's folder comes first on the path, as pip's site folder does for Python.
 *
 * Not here: the jobs, volumes and containers (core/deps/deps.c); the syntax and policy
 * (core/deps/requirements.c).
 */
#include <stdlib.h>

#include "base/base.h"
#include "core/deps/deps_internal.h"
#include "core/deps/requirements.h"

/* The filler (root, network, the cache read-write, no workspace). Exit 0 = the cache is
 * filled, 4 = npm failed (its output on stderr, ending with a line of its first two error lines,
 * which the error message quotes), 3 = another set. The requirements become
 * npm's arguments one a line (a range such as ">=1 <2" stays one argument). */
static const char fill_sh[] =
    FILL_START_SH
    "rm -rf /cache/site\n"
    "mkdir -p /cache/site /tmp/npm-cache || exit 4\n"
    "printf '%s\\n' '{\"name\": \"runbox-session\", \"version\": \"0.0.0\", \"private\": true}' "
    "> /cache/site/package.json || exit 4\n"
    "set --\n"
    "while IFS= read -r line; do [ -z \"$line\" ] || set -- \"$@\" \"$line\"; done < /tmp/requirements.txt\n"
    "npm install --prefix /cache/site --ignore-scripts --no-audit --no-fund --omit=dev --no-update-notifier "
    "--registry \"$RUNBOX_NPM_REGISTRY\" -- \"$@\" >/tmp/npm.log 2>&1 || {\n"
    "  cat /tmp/npm.log >&2\n"
    "  c=$(sed -n -e '/^npm \\(ERR!\\|error\\) *\\(code\\|errno\\|A complete log\\|  *\\/\\)/d' "
    "-e 's/^npm \\(ERR!\\|error\\) *//p' /tmp/npm.log | sed -e '/^ *[0-9]* *$/d' | head -n 2 | tr -s ' \\n' ' ' "
    "| cut -c1-240)\n"
    "  echo \"runbox: npm failed: $c\" >&2\n"
    "  exit 4\n"
    "}\n"
    "[ -d /cache/site/node_modules ] || { echo 'runbox: npm installed nothing' >&2; exit 4; }\n"
    FILL_DONE_SH;

/* The copier: the image satisfies no npm requirement by itself (its Node modules are Debian's,
 * for its own tools), so the list it reports is always empty. */
static const char copy_sh[] = REQS_SH "echo '[]'\n" COPY_SH("node_modules", "/cache/site/node_modules/.");

static void filler_env(const core_settings *cfg, int ca, char **env, size_t *n)
{
    env[(*n)++] = xasprintf("RUNBOX_NPM_REGISTRY=%s", cfg->deps_npm_registry ? cfg->deps_npm_registry
                                                                             : RB_DEFAULT_DEPS_NPM_REGISTRY);
    /* no user or global npmrc (Debian's /etc/npmrc): files that do not exist (npm refuses to read
     * one file as both), a cache of its own, no phoning home */
    env[(*n)++] = xstrdup("npm_config_userconfig=/tmp/runbox-no-npmrc");
    env[(*n)++] = xstrdup("npm_config_globalconfig=/tmp/runbox-no-global-npmrc");
    env[(*n)++] = xstrdup("npm_config_cache=/tmp/npm-cache");
    env[(*n)++] = xstrdup("npm_config_update_notifier=false");
    if (ca)
        env[(*n)++] = xstrdup("npm_config_cafile=" DEPS_CA_PATH);
}

static const char *source(const core_settings *cfg)
{
    return cfg->deps_npm_registry ? cfg->deps_npm_registry : RB_DEFAULT_DEPS_NPM_REGISTRY;
}

const deps_kind deps_npm = {
    .tool = "npm",
    .fill_sh = fill_sh,
    .copy_sh = copy_sh,
    .dest = "/workspace/.runbox/node_modules",
    .dest_key = "node_modules",
    .volume_salt = "npm\n",
    .tool_rules = "no install scripts",
    .filler_env = filler_env,
    .source = source,
    .parse = requirements_npm_parse,
    .example = "\"left-pad@1.3.0\"",
};

/*
 * deps.h: what the installers' room (core/deps/) offers the rest of core: the check of the
 * dependencies a new session asks for, their install once its sandbox is ready, and the room's
 * release at core_free. Installing into a live session (core_dependencies_install) and listing
 * the image's packages (core_packages) are core's public API, in core/core.h. The room's other
 * public headers: requirements.h (the pure syntax and policy of requirements, which the daemon
 * checks at start-up) and oneshot.h (one-shot helper containers, which the web reader runs
 * too). How each package ecosystem installs, and what the room keeps in the core, is its own
 * (deps_internal.h).
 *
 * The room reaches the heart only through core/heart.h.
 */
#ifndef RB_CORE_DEPS_DEPS_H
#define RB_CORE_DEPS_DEPS_H

#include <jansson.h>

#include "base/err.h"
#include "core/core.h"
#include "core/heart.h"
#include "core/settings.h"

/** Reports a creation-time install, exactly once unless its op is cancelled: RB_OK once the
 * packages are in place, else the error and msg (borrowed for the call) saying what failed. */
typedef void (*deps_done_cb)(void *data, rb_err err, const char *msg);

/** Checks the dependencies a new session of language asks for (list borrowed: NULL, JSON null
 * or a list; a POST /sessions body's "dependencies") with the parse of the language's installer:
 * requirements_parse for python, requirements_npm_parse for javascript and typescript
 * (requirements.h). On RB_OK *out is NULL or a new normalised list (owned by the caller), which
 * deps_session_install takes. RB_EINVAL naming the language for packages asked of one without
 * any (bash), else the parse's errors. *out is not written for a language without packages. */
rb_err deps_check(const core_settings *cfg, const char *language, json_t *list, json_t **out, char *err);

/** Installs reqs (borrowed; a list from deps_check for s's language) into the workspace of the
 * session s (its view, copied here) at its creation, after its sandbox is ready; cb(data) once
 * unless the returned op is cancelled (session_end does that through its deps_op). RB_ECONFLICT
 * when s has no container, RB_EUNAVAILABLE when runboxd is closing, or the backend's code; then
 * cb is never called. *handle stays owned by the room, valid until cb runs or the install ends. */
rb_err deps_session_install(rb_core *c, const core_session_view *s, json_t *reqs, deps_done_cb cb, void *data,
                            core_op **handle, char *err);

/** Lets go of what the room keeps in c (core_free, after the backend is freed): the installs
 * still waiting for a slot end with RB_ECANCELED (to callers not cancelled), and the package
 * listing kept is dropped. */
void deps_dispose(rb_core *c);

#endif

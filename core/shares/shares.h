/*
 * shares: folders of the Docker host that sessions may mount (issue 24, "Shared folders").
 *
 * The operator declares them (--share NAME=/host/path[:ro|:rw]); the keys file says which keys
 * may mount which (shares=); a session asks for mounts at creation (execution_options.mounts) or
 * gets the operator's default mounts (--default-mounts) of the shares its key may mount. The
 * canonical list (core/shares/sharespec.h) is stored in the session's execution_options, so a
 * sandbox made for the session again (after a restart) mounts the same folders.
 *
 * Every host folder is checked at start-up and again whenever a sandbox mounts it: it must
 * exist, be a folder, be reached through no symbolic link (each component of its path is looked
 * at with lstat), be writable by the sandbox user when declared :rw, and lie apart from runboxd's own data (the database's folder) and the Docker
 * socket. It is bound into the sandbox read-only unless declared :rw and mounted so. Code in the
 * sandbox runs as the sandbox user (uid 1000, gid 1000): what it writes in a rw share belongs to
 * 1000:1000 on the host, and it reads only what that user may read. The sandbox has all
 * capabilities dropped and no-new-privileges, so a setuid file in a share runs with no more
 * rights, and device nodes there cannot be opened.
 *
 * The host path is the engine's: shares need the engine on runboxd's machine (a unix socket) and
 * see the same paths; with tcp:// or several engines, declaring a share is refused.
 *
 * The room keeps no state: the declarations are read from the settings when needed. It reaches
 * the heart only through core/heart.h.
 */
#ifndef RB_CORE_SHARES_SHARES_H
#define RB_CORE_SHARES_SHARES_H

#include <jansson.h>

#include "base/base.h"
#include "core/heart.h"

/** The uid and gid of the sandbox user, the owner of what code writes in a rw share. */
#define SHARES_SANDBOX_UID 1000
#define SHARES_SANDBOX_GID 1000

/** Checks the operator's --share and --default-mounts (s->shares, s->default_mounts): their
 * syntax, and every host folder as above. RB_EINVAL naming the share and the reason. Reads the
 * file system (lstat, realpath). */
rb_err shares_check_settings(const core_settings *s, char *err);

/** The mounts of a new session for who: v is the request's execution_options.mounts (borrowed;
 * NULL or JSON null: the operator's default mounts that who may mount). *out: the canonical list
 * (a new array), or NULL when there are none. Errors of sharespec_mounts, and RB_EUNAVAILABLE
 * naming the share when its folder no longer passes the start-up checks. */
rb_err shares_mounts(const core_settings *cfg, const core_caller *who, json_t *v, json_t **out, char *err);

/** The binds of a sandbox with the canonical mounts (borrowed; NULL: none): *out a heap array of
 * *n backend_volume (free with shares_volumes_free), the host folders checked again. RB_EUNAVAILABLE
 * naming the share when it is no longer declared or its folder fails the checks. */
rb_err shares_volumes(const core_settings *cfg, json_t *mounts, backend_volume **out, size_t *n, char *err);
/** Frees what shares_volumes made (and volumes_binds added: each entry's name, host_path and
 * path). Accepts NULL. */
void shares_volumes_free(backend_volume *v, size_t n);

#endif

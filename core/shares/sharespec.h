/*
 * sharespec: shared folders as the operator declares them and as callers ask for them, read as
 * text and JSON only.
 *
 * The operator declares shares (--share NAME=/host/path[:ro|:rw], ro by default), optionally
 * mounts some into every session (--default-mounts SHARE[:/workspace/PATH][:ro],...), and says
 * per API key which shares it may mount (shares=NAME,...|*|none in the keys file). A caller asks
 * for mounts when it creates a session: execution_options.mounts = [{"share": NAME, "path":
 * "/workspace/...", "readonly": bool}]. sharespec_mounts turns that into the canonical list
 * stored with the session: [{"share", "path" (absolute, under /workspace), "readonly"}].
 *
 * Pure: no I/O, no Docker. Whether a host folder exists, is no symbolic link and lies apart from
 * runboxd's own data is core/shares/shares.h's business. Part of the shares room, public.
 */
#ifndef RB_CORE_SHARES_SHARESPEC_H
#define RB_CORE_SHARES_SHARESPEC_H

#include <jansson.h>
#include <stddef.h>

#include "base/base.h"
#include "core/core.h"

#define SHARESPEC_MAX 64          /* shares one runboxd declares */
#define SHARESPEC_NAME_MAX 63     /* characters of a share's name: [a-z0-9][a-z0-9_-]{0,62} */
#define SHARESPEC_MOUNTS_MAX 16   /* mounts of one session */
#define SHARESPEC_PATH_MAX 1024   /* bytes of a mount's path in the sandbox */
#define SHARESPEC_HOST_PATH_MAX 4095
#define SHARESPEC_ROOT "/workspace"

/** One declared share: its name, its folder on the Docker host (absolute, in plain form: no
 * "." or ".." component, no "//", no trailing '/') and whether sessions may write in it. */
typedef struct sharespec_decl {
    char name[SHARESPEC_NAME_MAX + 1];
    char *host_path; /* heap, owned by the list */
    int rw;
} sharespec_decl;

typedef struct sharespec_list {
    sharespec_decl *v;
    size_t n;
} sharespec_list;

/** Whether name[0..len) is a share name: [a-z0-9][a-z0-9_-]{0,62}. */
int sharespec_name_ok(const char *name, size_t len);

/** Parses the operator's declarations: items NAME=/host/path[:ro|:rw] separated by newlines,
 * commas or semicolons (NULL or "" : none). Syntax only. RB_EINVAL naming the item and what is
 * wrong (a bad name, a path that is not absolute or holds '.', '..', '//', ':', ',', ';' or a
 * control character, an unknown mode, a name given twice, more than SHARESPEC_MAX). On success
 * the caller owns *out (sharespec_list_dispose); on failure *out is empty. */
rb_err sharespec_parse(const char *text, sharespec_list *out, char *err);
/** Frees the list's memory and empties it. Accepts NULL. */
void sharespec_list_dispose(sharespec_list *l);
/** The declaration named name, or NULL. */
const sharespec_decl *sharespec_find(const sharespec_list *l, const char *name);

/** Checks a key's shares= value: "none", "*" or names separated by commas. RB_EINVAL naming the
 * bad item. */
rb_err sharespec_key_check(const char *list, char *err);
/** Whether who may mount the share name: without API keys (who NULL) every share; a key only
 * those its shares= names ("*": every one; absent, "" or "none": none). */
int sharespec_allowed(const core_caller *who, const char *name);

/** The canonical path of a mount asked for as path (absolute under /workspace, or relative to
 * it): "/workspace/a/b" in *out (heap). RB_EINVAL naming what (e.g. "'execution_options.mounts[0]
 * .path'") when it is /workspace itself, lies outside it or in /workspace/.runbox, has an empty,
 * "." or ".." component, a ':', ',', '\\' or control character, or is longer than
 * SHARESPEC_PATH_MAX. */
rb_err sharespec_mount_path(const char *path, size_t len, const char *what, char **out, char *err);

/** A caller's mounts v (borrowed: a JSON array of {share, path?, readonly?}) against the
 * declarations l for who: *out a new array of {share, path, readonly} (path defaults to
 * /workspace/NAME, readonly to the share's mode). RB_EINVAL for a malformed list or item (naming
 * it), a path given twice or one inside another mount's; RB_EFORBIDDEN naming the share for one
 * who may not mount (or that is not declared: the message is the same, and lists the shares who
 * may mount), and for readonly: false on a read-only share. */
rb_err sharespec_mounts(const sharespec_list *l, const core_caller *who, json_t *v, json_t **out, char *err);

/** RB_EINVAL when a path of the list mounts (an array of {path, ...}: shares and volumes alike)
 * is given twice or lies inside another's; what names the list. */
rb_err sharespec_check_paths(json_t *mounts, const char *what, char *err);

/** The operator's default mounts text (SHARE[:/workspace/PATH][:ro] separated by commas; NULL
 * or "": none) for who: *out a new array as sharespec_mounts makes, of the shares who may mount
 * (the others are left out). RB_EINVAL naming the item for bad syntax, an undeclared share, a
 * path given twice or nested. */
rb_err sharespec_defaults(const sharespec_list *l, const char *text, const core_caller *who, json_t **out, char *err);

#endif

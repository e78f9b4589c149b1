/*
 * volumes: named volumes owned by an API key (issue 24, "Volumes"; docs/data.md).
 *
 * A volume is a disk volume of the engine ("runbox-vol-<id>", labelled runbox.volume=<id> and
 * runbox.instance) and a row of the store (store_volume_*) with its owner, name, quota and last
 * measured use. It outlives every session and runboxd itself, until its owner deletes it.
 * Sessions mount volumes at creation beside shared folders (execution_options.mounts items
 * {"volume", "path"?, "readonly"?}); several may mount one at once and see each other's writes.
 * With several engines a volume lives on one, chosen when it is made (the least loaded), and a
 * sandbox that mounts it is placed there (its bind names the pinned volume).
 *
 * The quota: this engine's file systems cannot limit a directory's size (no project quotas;
 * Docker's local driver cannot loop-mount an image), so runbox measures a volume (du -sb in a
 * one-shot container on its engine, with the right to read every folder) after every upload or
 * delete into it and after every execution of a session that mounts it read-write. An upload
 * that would pass the quota is refused; a volume found over it refuses uploads, read-write
 * mounts and executions of sessions that mount it read-write (RB_ENOSPC, 507, naming the volume,
 * its use and its quota) until a delete brings it under. Between two measurements code can
 * write past the quota by what one execution writes: the engine's disk is the hard bound.
 *
 * A public header of the room core/volumes/; core/internal.h includes it.
 */
#ifndef RB_CORE_VOLUMES_VOLUMES_H
#define RB_CORE_VOLUMES_VOLUMES_H

#include <jansson.h>

#include "base/base.h"
#include "core/heart.h"

#define VOLUMES_LABEL "runbox.volume"
#define VOLUMES_NAME_MAX 63

/** The items of mounts (an array of canonical or requested mounts; borrowed) that are volumes
 * (want 1: those with a "volume" member) or not (want 0): a new array, possibly empty. */
json_t *volumes_split(json_t *mounts, int want);

/** The volume mounts of a new session for who: items (borrowed; an array of {volume, path?,
 * readonly?}) against who's volumes, their paths apart from taken (the canonical share mounts,
 * borrowed, or NULL). *out: the canonical list [{volume (name), volume_id, path, readonly}] (a new
 * array), NULL when items is empty. RB_EINVAL naming the item for a malformed one, a path given
 * twice or inside another mount; RB_ENOTFOUND naming a volume who has not; RB_ENOSPC for a
 * read-write mount of a volume over its quota; RB_ECONFLICT for volumes on different engines. */
rb_err volumes_mounts(rb_core *c, const core_caller *who, json_t *items, json_t *taken, json_t **out, char *err);

/** The binds of a sandbox with the canonical mounts (borrowed; its volume items count, others are
 * skipped), appended to the heap array *v of *n (shares_volumes_free frees both). RB_ENOTFOUND
 * naming a volume that no longer exists. */
rb_err volumes_binds(rb_core *c, json_t *mounts, backend_volume **v, size_t *n, char *err);

/** RB_ENOSPC naming the volume when a session with the canonical mounts (borrowed) may not run
 * code now: one of its read-write volumes is over its quota. */
rb_err volumes_exec_check(rb_core *c, json_t *mounts, char *err);

/** RB_ENOSPC naming the volume, its use and its quota when an upload of len bytes to rel (relative
 * to /workspace, name form) lies in a volume of the canonical mounts that it would take past its
 * quota, or that is over it already. */
rb_err volumes_upload_check(rb_core *c, json_t *mounts, const char *rel, size_t len, char *err);

/** Measures again, in the background, the volumes of the canonical mounts (borrowed) that rel
 * (relative to /workspace; NULL: every read-write one) lies in. */
void volumes_touched(rb_core *c, json_t *mounts, const char *rel);

/** Undoes the creations a restart cut short: a row still marked as being created by another
 * process goes with its volume, and this instance's disk volumes that no row names go. Once, at
 * start, after the recovery's removals (a helper cut short may hold the volume). */
void volumes_sweep(rb_core *c);

/** Lets go of what the room keeps in c (core_free). */
void volumes_dispose(rb_core *c);

#endif

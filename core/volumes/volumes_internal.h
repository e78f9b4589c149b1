/*
 * volumes_internal.h: what the files of core/volumes/ share: the rows as the room reads them and
 * the measurement against the quota. Private to the room.
 */
#ifndef RB_CORE_VOLUMES_INTERNAL_H
#define RB_CORE_VOLUMES_INTERNAL_H

#include "core/volumes/volumes.h"
#include "store/store.h"

/** The stored document of who's volume ref (its id or name; *out a new reference). RB_ENOTFOUND
 * naming ref (another key's volume too). */
rb_err volumes__find(rb_core *c, const core_caller *who, const char *ref, json_t **out, char *err);
/** The API object of a stored document (new reference). */
json_t *volumes__api(rb_core *c, json_t *doc);
/** The engine a volume's engine name pins it to (into buf), or NULL for a single engine. */
const char *volumes__engine(const char *docker_name, char *buf, size_t len);
/** The mark of a row whose creation this process has not finished ("creating": it): a row with
 * another mark was left by a restart during its creation, and the sweep at start undoes it. */
const char *volumes__creation_mark(void);
/** Measures the volume again in the background (once more after the one in flight, if any). */
void volumes__measure(rb_core *c, const char *volume_id);

#endif

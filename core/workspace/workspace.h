/*
 * workspace: a session's /workspace beyond its sandbox. A sandbox's workspace is a memory-backed
 * volume that goes with its container (core/backend/backend.h); to hibernate a session its files
 * are copied into a disk volume that outlives the container ("kept"), and copied back into the
 * next sandbox on resume; to fork a session they are copied from one sandbox into another. The
 * copies run in a one-shot container (core/deps/oneshot.h) on the engine that holds both volumes,
 * with `cp -a` (owners, modes, times, links as links), so the bytes never pass through runboxd.
 * A public header of the room core/workspace/; core/internal.h includes it.
 */
#ifndef RB_CORE_WORKSPACE_H
#define RB_CORE_WORKSPACE_H

#include "base/base.h"
#include "core/heart.h"

/* The label of every kept volume (its value: the instance), and of its session (the id). */
#define WORKSPACE_KEEP_LABEL "runbox.keep"
#define WORKSPACE_SESSION_LABEL "runbox.session"

/** Reports a copy once: RB_OK with the bytes the copied files take (ONESHOT_BYTES_SH; -1 if unknown), or
 * the error with msg saying which step failed and why (borrowed for the call). volume is the
 * kept volume's name for workspace_keep (borrowed), NULL otherwise. */
typedef void (*workspace_cb)(void *data, rb_err err, const char *msg, const char *volume, int64_t bytes);

/** Copies the workspace of container (the backend's id) into a new disk volume for session_id,
 * on the same engine; cb gets its name. The container should be frozen (backend_pause) so that
 * the copy is of one moment. On failure the new volume is removed. */
rb_err workspace_keep(rb_core *c, const char *session_id, const char *container, workspace_cb cb, void *data,
                      char *err);

/** Copies the kept volume into the workspace of container (a new sandbox on the volume's
 * engine: backend_pin), which holds room bytes at most. The volume stays; workspace_drop removes
 * it. (The files written into a memory-backed workspace are charged to the copier's memory:
 * it may use room bytes and a margin.) */
rb_err workspace_restore(rb_core *c, const char *volume, const char *container, int64_t room, workspace_cb cb,
                         void *data, char *err);

/** Copies the workspace of container from into that of container to (same engine), which holds
 * room bytes at most. */
rb_err workspace_copy(rb_core *c, const char *from, const char *to, int64_t room, workspace_cb cb, void *data,
                      char *err);

/** Removes a kept volume in the background (a failure is logged; workspace_sweep removes it
 * at the next start). */
void workspace_drop(rb_core *c, const char *volume);

/** Whether volume_session may still need its kept volume: the caller's answer for one session. */
typedef int (*workspace_wanted_fn)(rb_core *c, const char *session_id, const char *volume);
/** Lists this instance's kept volumes and removes those wanted() says no session needs (left by
 * a restart during a hibernation or by a failed removal). */
void workspace_sweep(rb_core *c, workspace_wanted_fn wanted);

#endif

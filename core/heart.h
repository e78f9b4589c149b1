/*
 * heart.h: the narrow door through which a concern in a sub-folder of core/ (core/files/, and
 * the rooms that follow: network policies, shares and volumes, checkpoints) uses the session
 * manager's heart, instead of core/internal.h. A room sees a session only as a view of what
 * work in its sandbox needs (never the session itself, so it cannot change its state), the
 * sandbox backend, the settings, one slot in the core for its own state, the checks every
 * request shares, and the time format every answer uses. What a room offers the heart is in the
 * room's own public header (core/files/files.h, core/web/web.h, core/deps/deps.h), which
 * internal.h includes.
 *
 * It is not the API of core (core/core.h) and holds no policy of its own.
 */
#ifndef RB_CORE_HEART_H
#define RB_CORE_HEART_H

#include <jansson.h>
#include <stdint.h>

#include "core/backend/backend.h"
#include "core/core.h"
#include "core/settings.h"

/* The size of a buffer that holds an id of runbox (a session's, an execution's, the instance's),
 * its NUL included. */
#define RB_ID_LEN 40

/** A live session as a room sees it. Every pointer borrows from the session: valid during the
 * call that filled it, until the loop runs again; copy what must last longer. */
typedef struct core_session_view {
    const char *id;
    const char *status;       /* "ready" or "busy" from core_heart_session; also "starting" from core_heart_lookup */
    const char *container_id; /* its sandbox (the backend's id; NULL before it exists: core_heart_lookup) */
    json_t *env;              /* its execution_options.environment_variables (an object), or NULL */
    const char *language;     /* "python", "javascript", ... (core/core.h, CORE_LANGUAGES_TEXT) */
    json_t *mounts;           /* its canonical mounts (shares and volumes: execution_options.mounts), or NULL */
    double cpus;              /* its sandbox's CPU limit */
    int64_t workspace_bytes;  /* the size of its workspace */
    const char *owner;        /* the API key that made it ("" without keys) */
} core_session_view;

/** The live session session_id as who may see it, ready for work in its sandbox: RB_OK with
 * *out; RB_ENOTFOUND (unknown, ended or another key's: "create one with POST /sessions"),
 * RB_ECONFLICT (starting or without a sandbox), with err naming the session. */
rb_err core_heart_session(rb_core *c, const core_caller *who, const char *session_id, core_session_view *out,
                          char *err);

/** The live session session_id as who may see it, whatever its state (status "starting" too,
 * container_id NULL before its sandbox exists): RB_OK with *out; RB_ENOTFOUND as
 * core_heart_session, with err naming the session. For a room that words its own refusal of a
 * session not ready (the dependency installer). */
rb_err core_heart_lookup(rb_core *c, const core_caller *who, const char *session_id, core_session_view *out,
                         char *err);

/** Calls fn(data, view) for every live session (paused ones too: their status says so, and
 * container_id is NULL while it has no sandbox). fn must not end sessions. */
void core_heart_each(rb_core *c, void (*fn)(void *data, const core_session_view *v), void *data);

/** Marks session_id as used now (its idle timeout starts again); nothing if it is not live. */
void core_heart_touch(rb_core *c, const char *session_id);

/** Whether the core is closing (core_free has begun: start nothing; what is left is removed at
 * the next start). */
int core_heart_closing(const rb_core *c);

/** Whether the Docker engine answered the last probe; if not and why is not NULL, *why says what
 * failed (borrowed). */
int core_heart_engine_ok(const rb_core *c, const char **why);

/** Removes the container id (the backend's), retried while the engine does not answer, as the
 * heart removes a session's sandbox. */
void core_heart_remove(rb_core *c, const char *id);

/** Removes the engine's volume in the background; a failure is logged, naming it as what (a
 * static text: "kept workspace", "volume"), for the next start's sweep to retry. */
void core_heart_drop_volume(rb_core *c, const char *volume, const char *what);

/** This runboxd's instance id, the label (runbox.instance) of everything it makes (borrowed). */
const char *core_heart_instance(const rb_core *c);

/** Holds (delta 1) or lets go (-1) of the graceful stop: core_close waits for Docker work held. */
void core_heart_hold(rb_core *c, int delta);

/** The store of c (borrowed, for c's lifetime): for a room that keeps rows of its own (volumes). */
struct store *core_heart_store(rb_core *c);

/** The ids of the live sessions (paused ones too) whose mounts name the volume volume_id: a new
 * array of strings, possibly empty. */
json_t *core_heart_mounting(rb_core *c, const char *volume_id);

/** The loop c runs on (borrowed): for a room's own timers, closed in its dispose call. */
struct uv_loop_s *core_heart_loop(rb_core *c);

/** The sandbox backend and the settings of c (borrowed, for c's lifetime). */
backend *core_heart_backend(rb_core *c);
const core_settings *core_heart_settings(const rb_core *c);

/** The cancel handle of an asynchronous call (core_cancel sets cancelled, and the callback is
 * then not made); a room allocates it with its call and frees it when the call ends. */
struct core_op {
    core_cb cb;
    void *data;
    int cancelled;
};

/** The rooms that keep state in the core. */
typedef enum core_room {
    CORE_ROOM_FILES, /* core/files/: the download budget */
    CORE_ROOM_WEB,   /* core/web/: page reads in flight and being cleaned up */
    CORE_ROOM_DEPS,  /* core/deps/: installs holding a slot and waiting for one, the package listing */
    CORE_ROOM_NET,   /* core/network/: the operator's limits, the sessions' egress proxies and networks */
    CORE_ROOM_PAUSE, /* core/session_pause.c: resumes of hibernated sessions waiting for their new sandbox */
    CORE_ROOM_VOLUMES, /* core/volumes/: measurements in flight */
    CORE_ROOM_USAGE,   /* core/usage/: the sessions' usage samples and the readings in flight */
    CORE_ROOM_FREEZE,  /* core/session_freeze.c: freezes waiting to try again, the change queues' kick */
    CORE_ROOM_ASKS,    /* core/kernel_ask.c: questions waiting for their answers */
    CORE_ROOMS
} core_room;

/** The slot of room in c: NULL until the room sets it; the room releases it in its dispose call,
 * which core_free makes (files_dispose). */
void **core_heart_room(rb_core *c, core_room room);

/** RB_EINVAL naming the first member of obj that is not in allowed (a NULL-terminated list) and
 * where it was (e.g. "execution_options"), listing the allowed ones (core/validate.c). */
rb_err core__check_keys(json_t *obj, const char *where, const char *const *allowed, char *err);

/** Sets obj[key] to ms (epoch milliseconds) as RFC 3339 UTC with milliseconds, the form of every
 * time in runbox's answers. */
void core_json_time(json_t *obj, const char *key, int64_t ms);

#endif

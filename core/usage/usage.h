/*
 * usage: what each live session's sandbox uses over time (issue 27, "Per-sandbox metrics";
 * docs/operations.md). Every --metrics-interval the room reads each running session's sandbox
 * from its engine (backend_usage_read: CPU time, memory, processes, network bytes) and keeps the
 * samples in a ring of USAGE_RING_SAMPLES per session (core/usage/ring.h), freed when the
 * session ends. REST's GET /sessions/{id}/metrics, E2B's get_metrics() and the gauges of
 * /metrics read the rings through core/core.h (core_session_metrics, core_usage_latest).
 *
 * Readings never hold the loop: each is an asynchronous backend call, at most one per session
 * and USAGE_INFLIGHT_MAX in all at once; sessions that are paused, hibernated, starting or
 * without a sandbox are skipped, and none are read while the engine does not answer its probe;
 * a session whose readings fail is read less often (up to USAGE_BACKOFF_MAX intervals apart).
 * CPU is a percentage of one CPU between two readings, so a sandbox's first reading (a new
 * sandbox, or a new one after a resume from hibernation) is kept as the baseline, not as a
 * sample. The workspace's bytes are not measured here (it would take a command in the sandbox
 * per reading): the volumes room measures named volumes, and docs say so.
 *
 * A public header of the room core/usage/; core/internal.h includes it.
 */
#ifndef RB_CORE_USAGE_USAGE_H
#define RB_CORE_USAGE_USAGE_H

#include <stdint.h>

#include "core/heart.h"

/* Samples kept per session: 120 at the default interval of 5 s is the last 10 minutes, some
 * 8 KiB per session. */
#define USAGE_RING_SAMPLES 120
/* Readings in flight at once, all sessions together: at most half of the Docker client's
 * connections for short calls (DOCKER_SHORT_CONNECTIONS). */
#define USAGE_INFLIGHT_MAX 4
/* After failed readings a session is read again after 2, 4, ... up to this many intervals. */
#define USAGE_BACKOFF_MAX 12

/** Reads the sessions that are due (now: epoch ms), and lets go of the rings of sessions that
 * are no longer live. Called by the sweep, once a second. */
void usage_sweep(rb_core *c, int64_t now);

/** Frees the ring of session_id (it ended); a reading in flight for it is dropped when it
 * answers. Nothing if it has none. */
void usage_forget(rb_core *c, const char *session_id);

/** Lets go of every ring (core_free, after the backend: readings still in flight are orphaned
 * and free themselves when their cancelled callback runs). */
void usage_dispose(rb_core *c);

#endif

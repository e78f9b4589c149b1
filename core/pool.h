/*
 * pool: warm sandboxes for fast session creation. For each profile (language with the
 * server's default image and limits) the pool keeps cfg->pool_size (python) and
 * cfg->pool_bash_size (bash) containers created, started, attached and handshaken but bound to
 * no session. Creating a session with default options claims one (a fresh ping proves its
 * runner still answers); any other request takes the cold path. The pool refills in the
 * background on the loop, backs off when Docker fails, drops entries whose runner died, and
 * removes its containers on core_stop. Pool containers carry the label runbox.session=pool; a
 * claimed one is found after a restart by the container id stored in its session's row.
 * Internal to core/: nothing outside core/ includes this.
 */
#ifndef RB_CORE_POOL_H
#define RB_CORE_POOL_H

#include <jansson.h>

#include "core/internal.h"

typedef struct pool pool;

/** Creates an idle pool for c (no Docker work until pool_start). Never fails. */
pool *pool_new(rb_core *c);
/** Starts filling (call once recovery has listed the instance's containers). Idempotent. */
void pool_start(pool *p);
/** Stops refilling and removes every warm container in the background, ready or still starting
 * (one whose create is in flight when the create answers); core_pending counts the removals
 * and creates still in flight. Idempotent. */
void pool_stop(pool *p);
/** Closes what is left without removing containers (the next start removes them). Accepts NULL. */
void pool_free(pool *p);

/** Binds a warm sandbox to s if s asks for a pooled profile (default limits, no environment
 * variables) and one is ready: returns 1 and cb(s, ...) runs later exactly once, as for
 * sandbox_create. Returns 0 on a miss (nothing changed; take the cold path). */
int pool_claim(pool *p, session *s, sandbox_ready_cb cb);
/** 1 if container_id belongs to a warm (unclaimed) pool entry. */
int pool_owns(const pool *p, const char *container_id);
/** {size, ready, starting, hits, misses} for /health (new reference). */
json_t *pool_health(const pool *p);

#endif

/*
 * ring: a fixed number of a sandbox's latest usage samples (core/usage/), oldest overwritten
 * first. Allocated once at its full size, so a session's samples never take more than
 * cap * sizeof(usage_sample) bytes however long it lives; nothing here knows of sessions,
 * engines or time.
 */
#ifndef RB_CORE_USAGE_RING_H
#define RB_CORE_USAGE_RING_H

#include <stddef.h>
#include <stdint.h>

/** One sample: what a sandbox used at at_ms (epoch ms). */
typedef struct usage_sample {
    int64_t at_ms;
    double cpu_pct;          /* percent of one CPU since the sample before (200: two CPUs busy) */
    int64_t mem_bytes;       /* memory in use, reclaimable page cache left out */
    int64_t mem_cache_bytes; /* that page cache */
    int64_t files_bytes;     /* files in the memory-backed /workspace and /tmp (in mem_bytes) */
    int64_t mem_limit_bytes;
    int64_t pids;
    int64_t net_rx_bytes, net_tx_bytes; /* since the sandbox started */
} usage_sample;

typedef struct usage_ring {
    usage_sample *items; /* cap of them */
    size_t cap;
    size_t next; /* where the next sample goes */
    size_t n;    /* samples held (at most cap) */
} usage_ring;

/** A new empty ring of cap (> 0) samples; owned by the caller (usage_ring_free). Aborts when out
 * of memory, like xmalloc. */
usage_ring *usage_ring_new(size_t cap);
/** Frees r. Accepts NULL. */
void usage_ring_free(usage_ring *r);
/** Adds a copy of *s as the newest sample, dropping the oldest when r is full. */
void usage_ring_push(usage_ring *r, const usage_sample *s);
/** The samples held (at most r->cap). */
size_t usage_ring_count(const usage_ring *r);
/** The i-th sample held, oldest first (i < usage_ring_count), borrowed until the next push. */
const usage_sample *usage_ring_at(const usage_ring *r, size_t i);
/** The newest sample, or NULL when r is empty; borrowed until the next push. */
const usage_sample *usage_ring_last(const usage_ring *r);

#endif

/*
 * latency: a histogram of how long calls to another program took, with one fixed set of bucket
 * bounds (from a few milliseconds to minutes), so that a layer that measures (docker/) and the
 * layers that pass the numbers on (core/) and render them (server/metrics/) agree on them
 * without including one another. Plain counters: no locking, no allocation.
 */
#ifndef RB_BASE_LATENCY_H
#define RB_BASE_LATENCY_H

#include <stdint.h>

/** Buckets of the histogram: upper bound i in seconds, ascending; a last bucket, +Inf, is
 * implied. */
#define RB_LATENCY_BUCKETS 13

/** The upper bound of bucket i in seconds (0 outside 0 .. RB_LATENCY_BUCKETS - 1). */
double rb_latency_bound(int i);

/** Observations: bucket[i] counts those of at most rb_latency_bound(i) seconds and more than
 * the bound before (not cumulative); bucket[RB_LATENCY_BUCKETS] those beyond every bound. */
typedef struct rb_latency {
    uint64_t bucket[RB_LATENCY_BUCKETS + 1];
    uint64_t count;
    double sum; /* seconds */
} rb_latency;

/** Counts one observation of seconds (negative counts as 0). */
void rb_latency_add(rb_latency *h, double seconds);
/** Adds the observations of from to into (the histograms of several engines as one). */
void rb_latency_merge(rb_latency *into, const rb_latency *from);

#endif

/*
 * base: what every layer of runbox may use, and nothing else. It includes nothing of the
 * project above it (store/, docker/, core/, server/, daemon/). This umbrella header brings in
 * the pieces almost every module needs; the others (codec, map, tar, latency) are included by name.
 *   err.h    the rb_err enum and the error-text convention
 *   mem.h    aborting allocators and the bounded byte buffer
 *   clock.h  clocks, RFC 3339 times, random ids
 *   log.h    the one logger
 *   codec.h  base64, UTF-8, hex, percent-encoding
 *   map.h    a string-keyed hash map
 *   tar.h    just enough tar for the Docker archive API
 *   latency.h  the histogram of call durations (Docker calls in /metrics)
 */
#ifndef RB_BASE_H
#define RB_BASE_H

#include "base/clock.h"
#include "base/err.h"
#include "base/log.h"
#include "base/mem.h"

#endif

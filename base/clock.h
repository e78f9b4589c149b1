/*
 * clock: wall and monotonic clocks in milliseconds, RFC 3339 formatting, and unguessable
 * random identifiers (session, execution and MCP session ids). Thin wrappers over
 * clock_gettime, gmtime_r and getrandom.
 */
#ifndef RB_BASE_CLOCK_H
#define RB_BASE_CLOCK_H

#include <stddef.h>
#include <stdint.h>

/** Wall clock in milliseconds since the Unix epoch. */
int64_t rb_now_ms(void);
/** Monotonic clock in milliseconds. */
int64_t rb_mono_ms(void);
/** Formats epoch milliseconds as RFC 3339 UTC with milliseconds ("2023-11-14T22:13:20.123Z") into
 * buf (at least 32 bytes; a shorter one gets a cut, NUL-terminated text). Times before year 0
 * or after 9999 are clamped to its first or last millisecond. */
void rb_time_format(int64_t ms, char *buf, size_t len);

/** Reads an RFC 3339 time ("2026-11-21T23:59:01.123Z", "...+01:00"; 'T', 't' or a space between
 * date and time; without a zone it is UTC) into epoch milliseconds: 0, or -1 when s is not one
 * (untrusted bytes, NUL-terminated). */
int rb_time_parse(const char *s, int64_t *ms);

/** Writes a random identifier `<prefix><32 lowercase hex chars>` (unguessable, from getrandom)
 * into buf, which must hold strlen(prefix) + 33 bytes. */
void rb_random_id(const char *prefix, char *buf, size_t len);

#endif

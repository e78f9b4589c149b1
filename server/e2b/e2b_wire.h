/*
 * e2b_wire: the pure parts of E2B's requests that runboxd reads from untrusted bytes: a file
 * path of the E2B user mapped onto the session's workspace, and the metadata filter of
 * GET /v2/sandboxes. No h2o, no core: tests/fuzz/fuzz_e2b.c drives them directly.
 */
#ifndef RB_SERVER_E2B_WIRE_H
#define RB_SERVER_E2B_WIRE_H

#include <jansson.h>
#include <stdint.h>

/** The runbox path for an E2B path (NUL-terminated): a relative path as it is (relative to the
 * home folder, which is the workspace), the rest of an absolute path under /home/user (leading
 * '/' removed; the workspace itself for /home/user), or NULL for an empty path or an absolute
 * one elsewhere. The result points into path, or is the static "/workspace". */
const char *e2b_path_map(const char *path);

/** Whether meta (an object of strings) holds every key=value pair of filter[0..n) (pairs
 * separated by '&', each key and value percent-encoded, as E2B's SDK sends the metadata
 * query); a pair without '=' never matches. An empty filter matches everything. */
int e2b_metadata_match(const char *filter, size_t n, json_t *meta);

/** Parses an ISO 8601 / RFC 3339 time as E2B's SDK sends it (Python's isoformat():
 * "YYYY-MM-DDTHH:MM:SS[.digits](Z|+HH:MM|-HH:MM)", or no offset: UTC) into epoch
 * milliseconds. Returns 0, or -1 for anything else (out-of-range fields included). */
int e2b_time_parse(const char *s, int64_t *ms);

/** The runbox language for a language name of run_code: the E2B documentation's short names
 * "js" and "ts" become "javascript" and "typescript"; any other name (NULL included) is
 * returned as it is, for the caller to compare with the sandbox's language. */
const char *e2b_language(const char *name);

#endif

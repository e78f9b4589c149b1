/*
 * files.h: what the files room (core/files/) offers the rest of core: the reading of a caller's
 * path, the files an execution wrote as the runner reports them and as answers show them, the
 * content type of a name, and its release at core_free. The files API itself (core_file_*) is
 * core's public API, in core/core.h; the helper that runs in a sandbox and the checks on its
 * answers are the room's own (file_helper.h).
 *
 * The room reaches the heart only through core/heart.h.
 */
#ifndef RB_CORE_FILES_FILES_H
#define RB_CORE_FILES_FILES_H

#include <jansson.h>

#include "base/err.h"
#include "core/core.h"

/** Checks a caller's path and writes the normalised path relative to /workspace ("" for the
 * workspace itself) into *out (heap). A path naming the workspace itself is refused with root
 * unless root is RB_OK. The path is in name form (core/core.h, "Files") and so is *out, in
 * canonical form. Errors as for core_file_*: RB_EINVAL for an empty or malformed path (raw
 * control characters, a '\\' that starts no escape, an escaped '/' or NUL, too long, a name over
 * CORE_NAME_MAX_BYTES), RB_EFORBIDDEN for one leading outside /workspace. */
rb_err files_normalize_path(const char *path, rb_err root, char **out, char *err);

/** Validated copy of a runner's files_written list (untrusted: entries that are not
 * {path: string, size: int, modified: int} are dropped, at most 100 kept); never NULL. */
json_t *files_written_from_runner(json_t *list);

/** The API form of a stored files_written list (modified as RFC 3339); [] for NULL. */
json_t *files_written_api(json_t *list);

/** A Content-Type for a file name, from its extension (application/octet-stream by default). */
const char *files_content_type(const char *name);

/** Lets go of what the room keeps in c (core_free): the download budget lives on until the last
 * file handed out is freed. */
void files_dispose(rb_core *c);

#endif

/*
 * file_helper: the small program the files API (core/files.c) runs inside a session's sandbox
 * to resolve paths, list, delete and make folders as the sandbox user, and the boundary
 * around it: how it is started (file_helper_argv, file_helper_env) and what runboxd accepts
 * of its answer (file_helper_path_ok, file_helper_name_ok, file_helper_listing).
 *
 * The helper runs where the session rules (issue 9, finding 9): code in the sandbox may have
 * changed anything it can write, and the session chose part of the sandbox's environment
 * (execution_options.environment_variables). So the helper's code travels in argv (nothing is
 * read from /workspace), its programs are absolute paths on the image's read-only root (no
 * PATH lookup), the session's variables are removed before the first program starts, and
 * python3 -I -S gets a fixed environment from env -i. Its answers are still untrusted: paths
 * are accepted only in normal form under /workspace, never by prefix.
 *
 * It is not the files API (sessions, archive calls, the download budget: files.c) and does no
 * I/O; the answer's JSON is the caller's to parse.
 */
#ifndef RB_CORE_FILE_HELPER_H
#define RB_CORE_FILE_HELPER_H

#include <jansson.h>

/** What the helper is asked to do, with the path relative to /workspace ("" = /workspace). */
typedef enum file_helper_op {
    FILE_HELPER_LIST,   /* everything under /workspace but .runbox: {files: [...], truncated} */
    FILE_HELPER_PUT,    /* make the parent folders of a file to write: {dir, name} */
    FILE_HELPER_GET,    /* resolve a file to read: {real, size, modified} */
    FILE_HELPER_DELETE, /* delete a file, link or folder: {} */
    FILE_HELPER_MKDIR,  /* make a folder and its parents: {} */
} file_helper_op;

/** The helper's exit codes; each comes with one JSON object on its stdout. */
enum {
    FILE_HELPER_OK = 0,
    FILE_HELPER_ESCAPE = 3,  /* the path leads outside /workspace: {real} */
    FILE_HELPER_MISSING = 4, /* no such file */
    FILE_HELPER_NOTFILE = 5, /* not a regular file: {type} or {error} */
    FILE_HELPER_TOOBIG = 6,  /* larger than the limit: {size} */
};

/** Entries file_helper_argv writes, its NULL included. */
#define FILE_HELPER_ARGV_LEN 13

/** Fills argv[0..FILE_HELPER_ARGV_LEN) with the helper's command line for op on rel (relative
 * to /workspace, normalised by files_normalize_path) with limit (decimal: the largest file for
 * FILE_HELPER_GET, the most entries for FILE_HELPER_LIST), ending with NULL. Run it with
 * /workspace as working folder and file_helper_env's changes. The strings are static or
 * borrowed from rel and limit. */
void file_helper_argv(const char **argv, file_helper_op op, const char *rel, const char *limit);

/** The environment changes (backend_exec_spec.env) for the helper of a session whose own
 * variables are session_env (an object of name -> value, may be NULL): each of them removed,
 * PATH fixed. A heap array ending with NULL (free() it) of strings borrowed from session_env
 * or static. */
const char **file_helper_env(json_t *session_env);

/** Whether the answer p names /workspace itself (only when allow_root) or a path under it in
 * normal form: absolute, segments separated by single '/', none empty, "." or "..", no
 * trailing '/', no control characters, at most 4096 bytes. NULL is not. */
int file_helper_path_ok(const char *p, int allow_root);

/** Whether name (NULL is not) is a usable file name: 1..255 bytes, not "." or "..", without
 * '/' or control characters. */
int file_helper_name_ok(const char *name);

/** The API form of the helper's file list files (borrowed, untrusted): a new array of
 * {path, type, size, modified (RFC 3339)[, target, escapes]} for the entries whose path is in
 * normal form relative to /workspace, type is file, directory, symlink or other, and size and
 * modified are integers; the rest are left out, and at most 10000 kept. Never NULL. */
json_t *file_helper_listing(json_t *files);

#endif

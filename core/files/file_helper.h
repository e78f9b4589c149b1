/*
 * file_helper: the small program the files API (core/files/files.c) runs inside a session's sandbox
 * to resolve paths, list, delete, make folders and put uploads in place as the sandbox user,
 * and the boundary around it: how it is started (file_helper_argv, file_helper_env) and what
 * runboxd accepts of its answer (file_helper_answer, file_helper_path_ok, file_helper_listing).
 *
 * The helper runs where the session rules (issue 9, finding 9): code in the sandbox may have
 * changed anything it can write, and the session chose part of the sandbox's environment
 * (execution_options.environment_variables). So the helper's code travels in argv (nothing is
 * read from /workspace), its programs are absolute paths on the image's read-only root (no
 * PATH lookup), the session's variables are removed before the first program starts, and
 * python3 -I -S gets a fixed environment from env -i. Its answers are still untrusted: paths
 * are accepted only in normal form under /workspace, never by prefix.
 *
 * Names (issue 21): a file name is whatever bytes the kernel allows, so paths travel in both
 * directions in the name form of base/codec.h (valid UTF-8 as it is; control characters, '\'
 * and bytes that are not UTF-8 as "\xhh"). The helper decodes the paths it is given and
 * encodes every path it answers; runboxd accepts only the canonical form. A link the sandbox
 * user cannot resolve (/proc/1/root) counts as leading outside /workspace, and the helper never
 * answers with a traceback: a failed system call comes back as its errno name, which
 * file_helper_answer maps to one error for every protocol.
 *
 * It is not the files API (sessions, archive calls, the download budget: files.c) and does no
 * I/O.
 */
#ifndef RB_CORE_FILE_HELPER_H
#define RB_CORE_FILE_HELPER_H

#include <jansson.h>

#include "base/err.h"

/* Where a sandbox's files are: the files API's paths are relative to it. */
#define FILES_WORKSPACE "/workspace"

/** What the helper is asked to do, with the path relative to /workspace ("" = /workspace). */
typedef enum file_helper_op {
    FILE_HELPER_LIST,    /* everything under /workspace but .runbox (arg: the most entries), or with arg
                            "dir:N" the first N entries of the folder rel alone and their total */
    FILE_HELPER_PUT,     /* make the parent folders of a file to write, say where it goes and how
                            much room is left (arg: the temporary name the upload is written to) */
    FILE_HELPER_GET,     /* resolve a file to read (arg: the largest size accepted); a file whose
                            name is not UTF-8, which Docker's archive call cannot send, gets a
                            temporary hard link beside it to be read through and discarded */
    FILE_HELPER_DELETE,  /* delete a file, link or folder */
    FILE_HELPER_MKDIR,   /* make a folder and its parents */
    FILE_HELPER_COMMIT,  /* rename the upload's temporary file (arg) over the path; removes it
                            whatever happens */
    FILE_HELPER_DISCARD, /* remove a temporary file: the path is the file's own (arg unused) */
} file_helper_op;

/** Entries file_helper_argv writes, its NULL included. */
#define FILE_HELPER_ARGV_LEN 13

/** The prefix of a temporary name (file_helper_temp_name): an upload's beside its target, a
 * download's link beside its file. */
#define FILE_HELPER_TEMP_PREFIX ".runbox-tmp-"

/** Fills argv[0..FILE_HELPER_ARGV_LEN) with the helper's command line for op on rel (relative
 * to /workspace, normalised by files_normalize_path) with arg (see file_helper_op), ending with
 * NULL. Run it with /workspace as working folder and file_helper_env's changes. The strings are
 * static or borrowed from rel and arg. */
void file_helper_argv(const char **argv, file_helper_op op, const char *rel, const char *arg);

/** Writes a new temporary name for an upload (FILE_HELPER_TEMP_PREFIX and 16 random hex
 * digits) into out, which holds 48 bytes. */
void file_helper_temp_name(char *out);

/** Whether name is a temporary name as file_helper_temp_name makes them (NULL is not). */
int file_helper_temp_name_ok(const char *name);

/** The environment changes (backend_exec_spec.env) for the helper of a session whose own
 * variables are session_env (an object of name -> value, may be NULL): each of them removed,
 * PATH fixed. A heap array ending with NULL (free() it) of strings borrowed from session_env
 * or static. */
const char **file_helper_env(json_t *session_env);

/**
 * What the helper of op answered: its exit code and standard output out[0..len) (untrusted).
 * shown is the path as the caller should read it in a message (the normalised path, "." for
 * /workspace). RB_OK with *doc (new reference), checked and in the API's form:
 *   FILE_HELPER_LIST: {files: file_helper_listing's array, truncated: bool, total?: one folder's
 *     entries (arg "dir:N")};
 *   FILE_HELPER_PUT: {dir, name, free, total} (dir and name checked: file_helper_path_ok and
 *     file_helper_name_ok; free and total the bytes the folder's file system has left and holds);
 *   FILE_HELPER_GET: {real, size, modified, linked} (real checked, not /workspace itself;
 *     linked: real is a temporary link to the file, to be discarded once read);
 *   others: {}.
 * RB_ETOOBIG (FILE_HELPER_GET only) with *doc {size}: the file is larger than the limit asked.
 * Otherwise the error, with err naming shown and the cause, and *doc NULL: RB_EFORBIDDEN (the
 * path leads outside /workspace, or the sandbox's file system denies it), RB_ENOTFOUND,
 * RB_ECONFLICT (a folder where a file is meant, a file in the way of a folder), RB_ENOSPC (the
 * workspace is full), RB_EINVAL (a name too long for the file system), RB_EIO (anything else:
 * the helper failed or answered nonsense; never its own output or a traceback).
 */
rb_err file_helper_answer(file_helper_op op, const char *shown, int exit_code, const char *out, size_t len,
                          json_t **doc, char *err);

/** Whether the answer p names /workspace itself (only when allow_root) or a path under it in
 * canonical name form: absolute, segments separated by single '/', none empty, "." or "..",
 * every escape needed and none other, at most 4096 bytes once decoded. NULL is not. */
int file_helper_path_ok(const char *p, int allow_root);

/** Whether name (NULL is not) is a usable file name in canonical name form: 1..255 bytes once
 * decoded, not "." or "..", without '/'. */
int file_helper_name_ok(const char *name);

/** The API form of the helper's file list files (borrowed, untrusted): a new array of
 * {path, type, size, modified (RFC 3339)[, path_bytes][, target, escapes]} for the entries whose
 * path is in canonical name form relative to /workspace, type is file, directory, symlink or
 * other, and size and modified are integers; the rest are left out, and at most 10000 kept.
 * path_bytes (the name's bytes in base64) is there when the path holds an escape. Never NULL. */
json_t *file_helper_listing(json_t *files);

#endif

/*
 * tar: just enough of the tar format for the Docker archive API, in memory. It builds a
 * one-file ustar archive (an upload) and walks an archive (a download) entry by entry. The
 * parser reads untrusted bytes (whatever the engine, and so the sandbox, put in the archive):
 * every field is bounds-checked, header checksums are verified, sizes may not run past the
 * buffer, and PAX ('x') and GNU long-name ('L', 'K') records are accepted with hard limits.
 * It does no I/O and knows nothing of containers or path policy (its callers decide).
 */
#ifndef RB_BASE_TAR_H
#define RB_BASE_TAR_H

#include <stddef.h>
#include <stdint.h>

#include "base/mem.h"

/** Longest entry name or link target accepted (bytes, without the NUL). */
#define TAR_NAME_MAX 4096

/** Entry types as tar spells them. */
#define TAR_FILE '0'
#define TAR_HARDLINK '1'
#define TAR_SYMLINK '2'
#define TAR_DIR '5'

/** One entry of an archive, valid only during the tar_walk callback. name has no leading
 * "./" and no trailing '/'; data points at the entry's size bytes inside the walked buffer
 * (regular files only, else NULL). */
typedef struct tar_entry {
    char name[TAR_NAME_MAX + 1];
    char link[TAR_NAME_MAX + 1];
    char type; /* TAR_FILE, TAR_DIR, TAR_SYMLINK, TAR_HARDLINK or another tar type byte */
    uint32_t mode;
    uint64_t size;
    int64_t mtime; /* seconds since the epoch */
    const char *data;
} tar_entry;

/** Called once per entry in archive order; return non-zero to stop the walk early (tar_walk
 * then returns RB_OK). */
typedef int (*tar_entry_cb)(void *data, const tar_entry *e);

/** Walks the archive in buf[0..len). RB_EINVAL (with the offset and the reason in err) for a
 * malformed archive: bad checksum, a size or name field that is not a number or runs past the
 * buffer, a name longer than TAR_NAME_MAX, an unterminated PAX record. Entries seen before the
 * error have been reported. An archive may end with zero blocks or at the end of buf. */
rb_err tar_walk(const char *buf, size_t len, tar_entry_cb cb, void *data, char *err);

/** Appends to out a complete ustar archive holding one regular file `name` (relative, at most
 * TAR_NAME_MAX bytes; names over 100 bytes get a PAX header) with len bytes of data, the given
 * mode (e.g. 0644), owner uid/gid and mtime (seconds). RB_EINVAL for an empty or over-long name,
 * RB_ETOOBIG when out's maximum would be exceeded. */
rb_err tar_build_file(rb_buf *out, const char *name, const void *data, size_t len, uint32_t mode, int uid, int gid,
                      int64_t mtime, char *err);

#endif

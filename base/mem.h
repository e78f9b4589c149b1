/*
 * mem: allocation that aborts the process on out-of-memory (h2o_mem_alloc style), so that no
 * caller has to handle NULL from an allocator, and rb_buf, a growable byte buffer with a hard
 * maximum (curl dynbuf style) for everything that grows from untrusted input.
 */
#ifndef RB_BASE_MEM_H
#define RB_BASE_MEM_H

#include <stddef.h>

#include "base/err.h"

/** Allocators that abort the process on out-of-memory; a size of 0 is allocated as 1 byte.
 * Ownership: the caller frees what they return with free(). */
void *xmalloc(size_t n);
void *xcalloc(size_t n, size_t size);
void *xrealloc(void *p, size_t n);
/** Heap copy of s (NUL-terminated) / of the first n bytes of s plus a NUL. */
char *xstrdup(const char *s);
char *xstrndup(const char *s, size_t n);
/** snprintf into a new heap string; never returns NULL. */
char *xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/** A growable byte buffer with a hard maximum. data is NUL-terminated after len bytes whenever
 * it is not NULL (the NUL is not counted); the buffer owns data. */
typedef struct rb_buf {
    char *data;
    size_t len, cap, max;
} rb_buf;
/** Initialises an empty buffer that may hold at most max bytes. Allocates nothing. */
void rb_buf_init(rb_buf *b, size_t max);
/** Frees the data; the buffer is empty (and usable) afterwards. */
void rb_buf_dispose(rb_buf *b);
/** Appends n bytes of p; returns RB_ETOOBIG (and appends nothing) when len would exceed max. */
rb_err rb_buf_append(rb_buf *b, const void *p, size_t n);
/** Empties the buffer, keeping its memory. */
void rb_buf_reset(rb_buf *b);
/** Removes the first n bytes (all of them when n >= len). */
void rb_buf_consume(rb_buf *b, size_t n);

#endif

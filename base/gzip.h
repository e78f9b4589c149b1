/*
 * gzip: undoing a gzip'd request body (Content-Encoding: gzip) with zlib, bounded. The only
 * module that includes zlib.h. Not compression (runboxd sends nothing compressed).
 */
#ifndef RB_BASE_GZIP_H
#define RB_BASE_GZIP_H

#include <stddef.h>

#include "base/err.h"

/** Inflates the gzip stream in[0..n) (untrusted; one member, or several one after the other as
 * gzip allows) into *out (heap, NUL-terminated after its *len bytes). RB_ETOOBIG as soon as it
 * would exceed max bytes (nothing beyond max + a little is ever held), RB_EINVAL for bytes that
 * are not gzip or end early; err says which. */
rb_err rb_gunzip(const void *in, size_t n, size_t max, char **out, size_t *len, char *err);

#endif

/*
 * console_static: the console's files as the build embeds them (private to server/console/). The
 * definitions are generated into the build folder by cmake/embed_console.cmake from
 * server/console/static/; this header is all console.c knows of them.
 */
#ifndef RB_SERVER_CONSOLE_STATIC_H
#define RB_SERVER_CONSOLE_STATIC_H

#include <stddef.h>

/** One embedded file: its name (no folder), its bytes and their number. Static storage. */
typedef struct console_static_file {
    const char *name;
    const unsigned char *bytes;
    size_t len;
} console_static_file;

/** The embedded files, console_static_nfiles of them, sorted by name. */
extern const console_static_file console_static_files[];
extern const size_t console_static_nfiles;

#endif

/*
 * web.h: what the web-page reader (core/web/) offers the rest of core: its periodic sweep of
 * what earlier page reads left, and its release at core_free. The reader itself is core's public
 * API (core_page_text, core/core.h); how a read is contained is web.c's, and the pure reading of
 * a URL and of the containers' output is web_wire.h's (which server/ uses too).
 *
 * The room reaches the heart only through core/heart.h.
 */
#ifndef RB_CORE_WEB_WEB_H
#define RB_CORE_WEB_WEB_H

#include <stdint.h>

#include "core/core.h"

/** Called by the heart's sweep at now (epoch ms) once recovery is done: at most once a minute,
 * and only when no page read is in flight, removes the networks of this instance's page reads
 * that are left over (from an earlier runboxd, or whose removal failed). */
void web_sweep(rb_core *c, int64_t now);

/** Lets go of what the reader keeps in c (core_free, after the backend is freed). */
void web_dispose(rb_core *c);

#endif

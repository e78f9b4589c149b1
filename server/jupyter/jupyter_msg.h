/*
 * jupyter_msg: Jupyter's messaging protocol (5.3) in its JSON form, as a kernel gateway's
 * websocket carries it (/api/kernels/{id}/channels): reading a client's message (untrusted
 * bytes) and writing the kernel's answers. A message is {header: {msg_id, msg_type, session,
 * username, date, version}, parent_header, metadata, content, channel, buffers}; clients send the
 * channel ("shell", "control", "stdin") in the message or leave it out (then "shell").
 *
 * Pure: no I/O, no core. The websocket and the kernel's work are jupyter_ws.c's.
 */
#ifndef RB_SERVER_JUPYTER_MSG_H
#define RB_SERVER_JUPYTER_MSG_H

#include <jansson.h>
#include <stddef.h>

#include "base/base.h"

/* The protocol version runbox's kernels speak. */
#define JMSG_PROTOCOL "5.3"
/* Bytes of a msg_type or channel name accepted. */
#define JMSG_NAME_MAX 64
/* Bytes of a header's msg_id, session or username kept. */
#define JMSG_ID_MAX 256

/** Reads a client's message from buf[0..len) (a websocket text frame): a JSON object with a
 * header object whose msg_type is a name of at most JMSG_NAME_MAX bytes; content an object
 * (absent or null: {}); channel absent, null or a name. *out: the message with channel filled
 * in ("shell" by default) and content an object (new reference). RB_EINVAL saying what is wrong
 * otherwise. */
rb_err jmsg_parse(const char *buf, size_t len, json_t **out, char *err);

/** The kernel's message of msg_type on channel with content (stolen), answering parent (a
 * message from jmsg_parse, borrowed; NULL: none) in session (the kernel's session name): a new
 * header (msg_id a fresh id, date now, version JMSG_PROTOCOL), its msg_id and msg_type also at the
 * top level (as Jupyter Server's websocket sends them), parent's header as parent_header ({}
 * without parent), metadata {}, buffers []. New reference. */
json_t *jmsg_make(json_t *parent, const char *channel, const char *msg_type, json_t *content, const char *session);

/** The msg_type of a message (borrowed), or "". */
const char *jmsg_type(json_t *msg);
/** The channel of a message from jmsg_parse (borrowed). */
const char *jmsg_channel(json_t *msg);

/** The reply to a request runbox answers without running anything, or NULL when msg_type is not
 * one of them: kernel_info, complete, inspect, is_complete, comm_info, history (content of the
 * "<type>_reply", new reference). language names the kernel's language (the session's). */
json_t *jmsg_simple_reply(json_t *msg, const char *language);

/** A traceback (lines of Python's format, borrowed) in colour, as Jupyter frontends show
 * ipykernel's (ANSI escapes): the "File ..." line of each frame green, ename red where the last
 * line names it. Items that are not strings are left out. New reference. */
json_t *jmsg_colour_traceback(json_t *lines, const char *ename);

/** The Jupyter kernelspec name of a runbox language ("python" -> "python3"), and back (NULL for a
 * name runbox has no kernel of). */
const char *jmsg_kernel_name(const char *language);
const char *jmsg_language_of(const char *kernel_name);

#endif

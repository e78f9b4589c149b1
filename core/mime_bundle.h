/*
 * mime_bundle: the Jupyter mime bundles of a runner's display and result events ({mime: text},
 * docker/runner/PROTOCOL.md), read as untrusted input into the bundles of runboxd's output items,
 * and the one format a client that shows one thing shows. Values are strings: base64 for the
 * binary formats (image/png, image/jpeg, application/pdf, ...), the text itself for the others
 * (application/json too: its JSON text; the protocols that want a JSON value parse it as they
 * send it). It keeps no state and does no I/O; execution.c applies the execution's budgets.
 */
#ifndef RB_CORE_MIME_BUNDLE_H
#define RB_CORE_MIME_BUNDLE_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

/* Formats kept of one bundle; characters of one output's metadata (as compact JSON); of a display_id. */
#define MIME_BUNDLE_FORMATS_MAX 16
#define MIME_BUNDLE_METADATA_MAX (64u * 1024)
#define MIME_BUNDLE_DISPLAY_ID_MAX 256

/** Whether mime is a base64 format (never cut; bounded only by the execution's display budget). */
int mime_bundle_is_binary(const char *mime);

/** Whether name is a mime type as RFC 6838 spells one: type/subtype, each 1-63 characters. */
int mime_bundle_name_ok(const char *name);

/**
 * The format of bundle (an object) a client that shows one thing shows: the first present of
 * image/png, image/jpeg, image/svg+xml, text/html, text/markdown, text/latex, application/json,
 * application/javascript, application/pdf, text/plain; else its first key; NULL when empty.
 * Borrowed from bundle.
 */
const char *mime_bundle_main(json_t *bundle);

/**
 * Reads a runner's bundle (any JSON value; anything but an object gives an empty bundle) into
 * a checked one (new reference): well-formed mime names with string values, at most
 * MIME_BUNDLE_FORMATS_MAX, text formats other than text/plain past text_cap bytes left out (a
 * cut HTML or JSON is no longer one; text/plain is kept whatever its size: the caller clips it),
 * and nothing that would take *bytes past bytes_max. What is kept is added to *bytes, what is
 * left out to *dropped (bytes).
 */
json_t *mime_bundle_read(json_t *in, size_t text_cap, size_t *bytes, size_t bytes_max, int64_t *dropped);

/** A runner's metadata as kept (new reference): an object of at most MIME_BUNDLE_METADATA_MAX
 * characters as compact JSON, else an empty object. */
json_t *mime_bundle_metadata(json_t *in);

#endif

/*
 * web_wire: the pure parts of the web-page reader (core/web/web.c): the check of a caller's URL,
 * of the operator's --web-* settings, and the reading of what the browser container and the
 * egress proxy container print (docker/web/fetch_page.py, docker/web/egress_proxy.py). Every
 * input here is untrusted bytes (a caller's URL; the output of containers that load hostile
 * pages), so each function bounds what it keeps and never trusts a type or a length it did not
 * check. No I/O, no state; fuzzed by tests/fuzz/fuzz_web.c.
 */
#ifndef RB_CORE_WEB_WIRE_H
#define RB_CORE_WEB_WIRE_H

#include <stddef.h>

#include <jansson.h>

#include "base/base.h"
#include "core/settings.h"

/* Longest URL a caller may ask for (bytes). */
#define WEB_URL_MAX 2048
/* Events of the proxy kept for one page read (refused destinations, the byte cap). */
#define WEB_EVENTS_MAX 20
/* Longest line of the proxy's output that is read (longer ones are skipped). */
#define WEB_EVENT_LINE_MAX 2048

/** Checks a URL a caller asked to read (url[0..len), not NUL-terminated): http or https (any
 * case), a host, at most WEB_URL_MAX bytes of printable ASCII without spaces (a browser's address
 * bar percent-encodes the rest), no user:password@. RB_EINVAL with the reason in err otherwise.
 * Whether the host's addresses may be reached is decided later, after name resolution, by the
 * egress proxy. */
rb_err web_url_check(const char *url, size_t len, char *err);

/** Checks the --web-* settings (ranges; --web-allow entries are IPv4/IPv6 addresses or CIDR
 * ranges; --web-ports are 1 to 65535). RB_EINVAL naming the setting otherwise. */
rb_err web_check_settings(const core_settings *s, char *err);

/** What one page read may return, for web_result_parse. */
typedef struct web_limits {
    size_t max_chars;       /* characters of text (the browser caps them; checked again here) */
    size_t max_screenshot;  /* bytes of the screenshot's base64 text */
} web_limits;

/**
 * Reads the browser container's stdout (out[0..len), its last non-blank line being one JSON
 * object) into the answer of a page read: a new object of the known members only, each of its
 * documented type ({url, final_url, title, status, text, truncated, settled, redirects,
 * byte_cap_reached, screenshot?}; byte_cap_reached when the browser saw the proxy's byte cap
 * reached, which makes truncated true as well). When the browser reported a failure, or printed
 * nothing usable, returns NULL with *code the error (RB_EFORBIDDEN a refused destination,
 * RB_ETIMEDOUT no page in time, RB_EIO the page could not be loaded, RB_EUNAVAILABLE the browser
 * failed) and a plain sentence in msg[RB_ERR_LEN]; *net_error is set to 1 when the failure was a
 * navigation error (a refused address may be its cause: core/web/web.c then looks at the proxy's
 * events).
 */
json_t *web_result_parse(const char *out, size_t len, const web_limits *lim, rb_err *code, int *net_error, char *msg);

/** Reads one line of the proxy's output (line[0..len), no newline): returns {event, host?, port?,
 * address?, reason?, max_bytes?} with strings capped, or NULL for a line that is not an event. */
json_t *web_event_parse(const char *line, size_t len);

#endif

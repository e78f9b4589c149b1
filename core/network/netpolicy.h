/*
 * netpolicy: a session's network policy as a caller asks for it and as the operator bounds it.
 *
 * A caller's `network` is false (no network: the default), true (the operator's default allow
 * list) or {"allow": [host patterns], "deny": [host patterns]} (core/network/hostpattern.h). The
 * operator's limits (netpolicy_limits) say whether sessions may have a network at all, the
 * default allow list, the maximum allow list a request must stay within (`*`: any name) and a
 * deny list added to every session's. netpolicy_request turns a request into the policy the
 * egress proxy enforces, in canonical form: {"allow": [...], "deny": [...]}, each pattern in its
 * canonical spelling, without duplicates, at most NETPOLICY_PATTERNS_MAX per list.
 *
 * Pure: no Docker, no I/O. Part of the network room (core/network/), public.
 */
#ifndef RB_CORE_NETWORK_NETPOLICY_H
#define RB_CORE_NETWORK_NETPOLICY_H

#include <jansson.h>

#include "base/base.h"
#include "core/network/hostpattern.h"

#define NETPOLICY_PATTERNS_MAX 256 /* patterns in one list (egress_policy.MAX_PATTERNS) */

typedef struct netpolicy_limits {
    int enabled;               /* sessions may have a network (--egress) */
    hostpattern *allow;        /* the default allow list (--egress-allow), n_allow of them */
    size_t n_allow;
    hostpattern *max;          /* the maximum (--egress-max), n_max of them; any name when max_any */
    size_t n_max;
    int max_any;
    const char *max_flag;      /* the flag that set max, as refusals name it (borrowed: flags of init) */
    hostpattern *deny;         /* denied for every session (--egress-deny), n_deny of them */
    size_t n_deny;
    int ports[8];              /* the proxy's default ports (80, 443), n_ports of them */
    size_t n_ports;
} netpolicy_limits;

/** Reads the operator's lists (comma-separated host patterns; NULL or "" for none) into *out;
 * max NULL means "the default allow list", and `*` in it any name. RB_EINVAL naming the flag
 * (flags[0..2]: the names of allow, max and deny as the operator spells them) and the pattern.
 * On success the caller owns *out (netpolicy_limits_dispose); on failure nothing is kept. */
rb_err netpolicy_limits_init(netpolicy_limits *out, int enabled, const char *allow, const char *max,
                             const char *deny, const char *const flags[3], char *err);
void netpolicy_limits_dispose(netpolicy_limits *l);

/** The policy of a request v (borrowed: JSON false, true or {"allow", "deny"}; what names it in
 * errors, e.g. "'execution_options.network'"). *out: NULL for no network, else a new
 * {"allow": [...], "deny": [...]} with the operator's deny list added. RB_EINVAL for a
 * malformed value or pattern (naming it), RB_EFORBIDDEN when the operator gives sessions no
 * network, or for an allow pattern beyond the maximum (naming it and the maximum). */
rb_err netpolicy_request(const netpolicy_limits *l, json_t *v, const char *what, json_t **out, char *err);

#endif

/*
 * egress: a session's one way out of its sandbox, when the operator allows networks (--egress)
 * and the session has a policy (core/network/netpolicy.h).
 *
 * Each such session gets an internal Docker network of its own (no route anywhere; the host's
 * address on its bridge removed) and an egress proxy container (docker/web/egress_proxy.py in
 * the sandbox image, policy mode) on that network as "egress" and on the operator's
 * --egress-network. The sandbox joins only the internal network, so the proxy is the one thing
 * it can reach: HTTP and HTTPS (CONNECT) to the host names its policy allows, at addresses that
 * are public or in --egress-cidr, checked by the proxy after it resolves each name itself. Raw
 * TCP, UDP and outside DNS have nowhere to go.
 *
 * The policy lives in a file of the proxy's (a memory-backed mount written through the engine's
 * archive API); the proxy looks at it on every new connection, so a change applies to the next
 * connection. A proxy that stops is started again (and given its policy again) by the sweep; a
 * restarted runboxd finds the proxies of its live sessions by name and does the same. The
 * proxy's JSON events (allowed, refused, closed) are counted for /metrics and kept, bounded,
 * for the execution that caused them.
 *
 * Names: the network "runbox-net-<session id>" (as the backend answers it: with several engines
 * pinned to one), the proxy "<network>-proxy". Both carry runbox.instance, runbox.managed,
 * runbox.session and runbox.role=egress, and go when the session ends (the network once the
 * sandbox has left it).
 */
#ifndef RB_CORE_NETWORK_EGRESS_H
#define RB_CORE_NETWORK_EGRESS_H

#include <jansson.h>

#include "base/base.h"
#include "core/heart.h"

/* The proxy's address as sandboxes see it (its alias on the session's network) and port. */
#define EGRESS_PROXY_HOST "egress"
#define EGRESS_PROXY_PORT 3128

/** Checks the operator's --egress-* settings (patterns, CIDRs, the network's name); RB_EINVAL
 * naming the setting and the bad entry. */
rb_err egress_check_settings(const core_settings *s, char *err);

/** Reads the operator's limits into c's network room (after egress_check_settings passed). */
rb_err egress_init(rb_core *c, char *err);
/** Releases the room (core_free); proxies and networks stay for the next start. */
void egress_dispose(rb_core *c);

/** The policy of a caller's request v (false, true or {"allow", "deny", "secrets"}; what names it
 * in errors): *out NULL for none, else the canonical {"allow": [...], "deny": [...]}
 * (netpolicy_request with the operator's limits), with "secrets": [names] when v names secrets
 * (each one's host patterns are then added to allow). key_limit (NULL or "": none) is the
 * caller's API key's own maximum from the keys file ("none": no network; `*`; host patterns),
 * which replaces --egress-max for it; `true` then needs the default list within it. owner is the
 * caller's key name (NULL: the trusted caller of a runboxd without keys): a secret it may not use
 * is RB_EFORBIDDEN, worded as for one that does not exist. */
rb_err egress_policy(rb_core *c, const char *key_limit, const char *owner, json_t *v, const char *what, json_t **out,
                     char *err);

/** Reads --secrets-file again (SIGHUP): the next request of every session obeys the new values
 * (rotation) and the secrets no longer there or no longer allowed to its key (revocation). On
 * error nothing changes. *n: the secrets now in force. */
rb_err egress_secrets_reload(rb_core *c, size_t *n, char *err);

/** The environment a sandbox with policy gets beside the proxy's (new strings into env[0..max),
 * returns how many): for a policy that names secrets, the variables holding their placeholders
 * and SSL_CERT_FILE, REQUESTS_CA_BUNDLE, CURL_CA_BUNDLE, PIP_CERT and NODE_EXTRA_CA_CERTS naming
 * the bundle with the session's CA. */
#define EGRESS_ENV_MAX 40
size_t egress_sandbox_env(rb_core *c, json_t *policy, char **env, size_t max);

/** Checks a key's limit as egress_policy takes it; RB_EINVAL naming the pattern. */
rb_err egress_key_limit_check(const char *list, char *err);

/** Reports egress_open: on RB_OK net is the network the sandbox joins (borrowed for the call). */
typedef void (*egress_open_cb)(void *data, rb_err err, const char *msg, const char *net);

/** Opens session_id's way out with policy (borrowed; copied): its network, then its proxy, started
 * with the policy in place. cb once the network exists (the sandbox can join it while the proxy
 * starts: egress_ready says when it runs), or with the error of the network's creation; never
 * after egress_close. */
rb_err egress_open(rb_core *c, const char *session_id, json_t *policy, egress_open_cb cb, void *data, char *err);

/** Reports egress_ready and egress_update. */
typedef void (*egress_done_cb)(void *data, rb_err err, const char *msg);

/** cb once session_id's proxy runs with its policy (at once if it does): RB_EUNAVAILABLE naming
 * the step when its start failed, RB_ECANCELED when the session's way out is closed first. For a
 * session with secrets, the bundle with its CA is copied into sandbox container's /workspace
 * first. */
rb_err egress_ready(rb_core *c, const char *session_id, const char *container, egress_done_cb cb, void *data,
                    char *err);

/** After a restart: takes over session_id's network net (as stored) and its proxy, started again
 * if it stopped (recreated if gone) and given policy again. */
void egress_recover(rb_core *c, const char *session_id, const char *net, json_t *policy);

/** Replaces session_id's policy (borrowed; copied): cb once the proxy's next connection obeys it
 * (RB_ECONFLICT when the session has no way out). */
rb_err egress_update(rb_core *c, const char *session_id, json_t *policy, egress_done_cb cb, void *data, char *err);

/** Ends session_id's way out: its proxy is removed, then its network (retried until the sandbox
 * has left it). Nothing if it has none. */
void egress_close(rb_core *c, const char *session_id);

/** The network traffic of session_id since the last take, or NULL if none: {"reached": [{host,
 * port, connections, bytes_up, bytes_down}], "refused": [{host, port, reason, connections}]}
 * (new; at most EGRESS_REPORT_MAX entries each). For the execution that just ended. */
#define EGRESS_REPORT_MAX 32
json_t *egress_take_report(rb_core *c, const char *session_id);

/** Why a proxy refused a connection, as /metrics counts it. */
typedef enum egress_refusal {
    EGRESS_NOT_ALLOWED, /* the name is not in the allow list */
    EGRESS_DENIED,      /* a deny pattern matched */
    EGRESS_PORT,        /* the name is allowed, not on that port */
    EGRESS_IP_LITERAL,  /* an IP address instead of a name */
    EGRESS_ADDRESS,     /* the name resolves to a refused address (private, loopback, ...) or not at all */
    EGRESS_OTHER,
    EGRESS_REFUSALS
} egress_refusal;
extern const char *const egress_refusal_names[EGRESS_REFUSALS];

/** The room's counters for /metrics. */
typedef struct egress_counts {
    int64_t proxies;        /* sessions with a way out now */
    int64_t allowed;        /* connections the proxies opened */
    int64_t refused[EGRESS_REFUSALS]; /* connections the proxies refused, by reason */
    int64_t unreachable;    /* connections allowed but failed */
    int64_t restarts;       /* proxies started again after they stopped */
    int64_t bytes_up, bytes_down;
    int64_t secret_uses;     /* requests a proxy added a secret to */
    int64_t secret_refusals; /* requests to a secret's host a proxy refused (a Host that disagrees with the target),
                                and sessions refused a secret their key may not use */
} egress_counts;
void egress_counts_read(rb_core *c, egress_counts *out);

/** Called every second by the core: restarts stopped proxies and retries network removals. */
void egress_sweep(rb_core *c, int64_t now);

/** Called once the heart has matched its containers after a start (and egress_recover was called
 * for each live session with a way out): removes this instance's networks and proxies that no
 * live session owns. */
void egress_recovered(rb_core *c);

#endif

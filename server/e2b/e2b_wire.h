/*
 * e2b_wire: the pure parts of E2B's requests that runboxd reads from untrusted bytes: a file
 * path of the E2B user mapped onto the session's workspace, the metadata and state filters of
 * GET /v2/sandboxes, E2B's network options translated into a runbox network policy, and its pause
 * and lifecycle options translated into runbox's pause modes and deadline actions. No h2o,
 * no core: tests/fuzz/fuzz_e2b.c drives the byte parsers directly, tests/server/test_e2b_wire.c
 * all of them.
 */
#ifndef RB_SERVER_E2B_WIRE_H
#define RB_SERVER_E2B_WIRE_H

#include <jansson.h>
#include <stdint.h>

#include "base/base.h"

/** E2B's ALL_TRAFFIC (e2b/sandbox/network.py): in denyOut, "nothing but what allowOut lists". */
#define E2B_ALL_TRAFFIC "0.0.0.0/0"

/** The runbox path for an E2B path (NUL-terminated): a relative path as it is (relative to the
 * home folder, which is the workspace), the rest of an absolute path under /home/user (leading
 * '/' removed; the workspace itself for /home/user), or NULL for an empty path or an absolute
 * one elsewhere. The result points into path, or is the static "/workspace". */
const char *e2b_path_map(const char *path);

/** Whether meta (an object of strings) holds every key=value pair of filter[0..n) (pairs
 * separated by '&', each key and value percent-encoded, as E2B's SDK sends the metadata
 * query); a pair without '=' never matches. An empty filter matches everything. */
int e2b_metadata_match(const char *filter, size_t n, json_t *meta);

/** The runbox language for a language name of run_code: the E2B documentation's short names
 * "js" and "ts" become "javascript" and "typescript"; any other name (NULL included) is
 * returned as it is, for the caller to compare with the sandbox's language. */
const char *e2b_language(const char *name);

/** The runbox network policy (a session's execution_options.network) of E2B's network options.
 * internet is allow_internet_access (NULL when absent); net is the `network` object of the
 * create body (SandboxNetworkConfig; update 0) or the whole body of PUT /sandboxes/{id}/network
 * (SandboxNetworkUpdateConfig; update 1: its allow_internet_access keys are internet's, not
 * net's), NULL when absent; both borrowed. JSON null is refused where E2B's schema refuses it
 * (everywhere but egressProxy and allowPublicTraffic). The mapping: the host names of allowOut are the allow
 * patterns, those of denyOut the deny patterns; E2B_ALL_TRAFFIC in denyOut is dropped (runbox
 * lets through nothing but the allow list anyway); with no allowOut, allow_internet_access true
 * is JSON true (the operator's default list; with ALL_TRAFFIC denied, an empty allow list) and
 * anything else no network. The patterns are left for core to check (grammar, --egress-max).
 * *out: NULL (no network), JSON true, or a new {"allow": [...], "deny": [...]}.
 * RB_EINVAL, the message naming the field: an IP address or CIDR in either list (addresses are
 * the operator's, --egress-cidr), allowOut with allow_internet_access false, denyOut host names
 * with allow_internet_access true but no allowOut, an unknown key, a wrong type, or an option
 * runbox has no equivalent of set to anything but its "off" value (egressProxy, rules,
 * dnsServers, and the inbound allowPublicTraffic: true, maskRequestHost, httpsPorts). */
rb_err e2b_network_map(json_t *internet, json_t *net, int update, json_t **out, char *err);

/** E2B's sandbox states (SandboxState), as bits of a state filter. */
#define E2B_STATE_RUNNING 1
#define E2B_STATE_PAUSED 2

/** The states named by s[0..n), the state query of GET /v2/sandboxes: "running" and "paused"
 * separated by commas, as the SDK sends them ("running,paused"). Returns a mask of E2B_STATE_*,
 * or -1 for an empty value or an entry that is neither. */
int e2b_state_filter(const char *s, size_t n);

/** The runbox pause mode of E2B's SandboxPauseRequest body (borrowed; NULL or JSON null: no body):
 * "suspend" when memory is true or absent (E2B's full snapshot: memory and files), "hibernate"
 * when it is false (E2B's filesystem snapshot: the sandbox boots fresh on resume).
 * requireHealthyGuest (a boolean) is accepted: runbox pauses only a sandbox that is ready.
 * *mode is a static string. RB_EINVAL naming the field: not an object, a wrong type, a key E2B's
 * request does not have; a field's null is a wrong type. */
rb_err e2b_pause_mode(json_t *body, const char **mode, char *err);

/** What a create body's autoPause, autoPauseMemory and autoResume (E2B's lifecycle; body
 * borrowed) make of the sandbox's timeout: *action "end" (no autoPause: the sandbox is killed),
 * "suspend" (autoPause with memory) or "hibernate" (autoPause with autoPauseMemory false), a
 * static string for core_session_set_deadline_action; *lifecycle a new {"onTimeout": "kill" |
 * "pause", "autoResume": bool}, E2B's SandboxLifecycle as get_info shows it. autoResume is a
 * boolean or {"enabled": bool} (the SDK's SandboxAutoResumeConfig). RB_EINVAL naming the
 * field: a wrong type (null included), or autoResume true without autoPause (nothing would be
 * paused to resume). */
rb_err e2b_lifecycle_map(json_t *body, const char **action, json_t **lifecycle, char *err);

/** The runbox mount items of a create body's volumeMounts (E2B's list of SandboxVolumeMount;
 * borrowed; NULL or JSON null: none): *out a new array of {"volume": name, "path": path}, NULL
 * when there are none. A path under /home/user is given as the same place under /workspace (the
 * sandbox's /home/user is its workspace); the name and the rest of the path ('..', length) are
 * left for core to check. RB_EINVAL naming the item: not a list of objects {name, path} of strings, an unknown key,
 * a path that is not under /workspace or /home/user (runbox mounts volumes in the workspace
 * only), or one of those two itself. */
rb_err e2b_volume_mounts_map(json_t *mounts, json_t **out, char *err);

#endif

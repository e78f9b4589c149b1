/*
 * isolation: which kernel boundary a session's sandbox has (docs/security.md, "Choosing the
 * isolation"). "container" is Docker's default runtime, runc: the sandbox's processes are the
 * host kernel's, fenced by namespaces, cgroups, seccomp and no capabilities. "gvisor" runs it
 * under gVisor's runsc: a user-space kernel (the Sentry) answers the sandbox's system calls, so a
 * kernel bug the code reaches is the Sentry's, not the host's.
 *
 * The operator registers runsc in an engine's daemon.json and declares it (--docker-runtimes, or
 * runtimes= on --engine); --isolation sets the server's default, --gvisor-runtime the name runsc
 * is registered under; a key's isolation= (the keys file) what it may use. A session asks with
 * execution_options.isolation; placement puts it only on engines that offer its runtime. The
 * choice is stored with the session's options, so it survives restarts, forks and hibernation.
 *
 * What gVisor changes for a sandbox, and how runbox meets it (isolation_spec):
 *   - pids: gVisor's own threads and, on the ptrace platform, stub processes are the host's and
 *     count in the container's pids cgroup: about 80 for an idle sandbox, and 6 (sleeping) to 30
 *     (running) more per sandbox process (measured by tests/security under gVisor). A fork bomb
 *     under a PidsLimit sized for runc would fill it and end the whole sandbox (the Sentry exits
 *     with code 2). So the session's pids limit becomes the sandbox user's RLIMIT_NPROC, which
 *     gVisor's kernel holds per sandbox (under runc the same limit would count that uid's
 *     processes in every container of the host), and the host's limit is
 *     ISOLATION_GVISOR_PIDS_BASE + ISOLATION_GVISOR_PIDS_PER_PROC per process of it. Each process
 *     also costs about 6 MiB of the sandbox's memory (50 sleeping forks of a worker: 306 MiB;
 *     150: 935 MiB), so RLIMIT_NPROC is at most one process per ISOLATION_GVISOR_PROC_MEMORY of
 *     the session's memory_limit (not of /workspace and /tmp, which are in memory too): a fork
 *     bomb then meets EAGAIN, not the memory limit.
 *   - an out-of-memory is the host's: the cgroup's killer ends the Sentry, so the whole sandbox
 *     and the session with it ("the sandbox ran out of memory"), where runc kills only the worker.
 */
#ifndef RB_CORE_ISOLATION_H
#define RB_CORE_ISOLATION_H

#include <jansson.h>
#include <stdint.h>

#include "base/base.h"

/** The isolations a session may ask for, as an error message names them. */
#define ISOLATION_TEXT "\"container\" or \"gvisor\""
/** Longest isolation name, with its NUL. */
#define ISOLATION_LEN 16
/** A gVisor sandbox's host pids limit: a base for the Sentry and room per sandbox process (above). */
#define ISOLATION_GVISOR_PIDS_BASE 256
#define ISOLATION_GVISOR_PIDS_PER_PROC 32
/** Session memory per process a gVisor sandbox's RLIMIT_NPROC allows (see above). */
#define ISOLATION_GVISOR_PROC_MEMORY (8 * 1024 * 1024)

/** The RLIMIT_NPROC of a gVisor sandbox with the pids limit pids and memory_limit memory (bytes):
 * min(pids, memory / ISOLATION_GVISOR_PROC_MEMORY), at least 16. */
int64_t isolation_gvisor_nproc(int64_t pids, int64_t memory);
/** The host pids limit of a gVisor sandbox whose RLIMIT_NPROC is nproc. */
int64_t isolation_gvisor_host_pids(int64_t nproc);

/** Whether name (NULL allowed) is "container" or "gvisor". */
int isolation_known(const char *name);

/** The engine runtime of isolation (known): "runc", or the gVisor runtime's name gvisor_runtime. */
const char *isolation_runtime(const char *isolation, const char *gvisor_runtime);

struct backend;
struct core_settings;
/** RB_EINVAL naming the flags when no engine of be offers the runtime of cfg's default isolation
 * (runboxd then does not start). */
rb_err isolation_default_check(struct backend *be, const struct core_settings *cfg, char *err);

/** Checks a key's isolation= value: "*", or isolations joined by ',' ("gvisor", "container,gvisor").
 * RB_EINVAL naming the bad word. */
rb_err isolation_key_check(const char *list, char *err);
/** Whether the key's list (NULL or "": every isolation) allows isolation. */
int isolation_key_allows(const char *list, const char *isolation);
/** The isolation of a session that does not ask: the server's default when the key's list allows
 * it, else the first the list names. */
const char *isolation_key_default(const char *list, const char *server_default);

#endif

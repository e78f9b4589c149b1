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
 *   - pids: gVisor's own threads and, on the ptrace platform, one stub process per address space
 *     are the host's and count in the container's pids cgroup, so a fork bomb under a small
 *     PidsLimit would end the whole sandbox. The host limit gets room for them
 *     (ISOLATION_GVISOR_PIDS_ROOM per process) and the session's pids limit becomes the sandbox
 *     user's RLIMIT_NPROC, which gVisor's kernel enforces per sandbox (under runc the same limit
 *     would count that uid's processes in every container of the host). Each process also costs
 *     about 6 MiB of the sandbox's memory there (measured: 50 sleeping forks of a worker 306 MiB,
 *     150 of them 935 MiB), so the limit is at most one process per ISOLATION_GVISOR_PROC_MEMORY
 *     of the sandbox's memory: a fork bomb then meets EAGAIN, not the memory limit, which would
 *     end the whole sandbox.
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
/** Host processes and threads allowed in a gVisor sandbox's pids cgroup per process of its pids
 * limit (the Sentry's threads and the ptrace platform's stubs). */
#define ISOLATION_GVISOR_PIDS_ROOM 8
/** Sandbox memory per process a gVisor sandbox's RLIMIT_NPROC allows (see above). */
#define ISOLATION_GVISOR_PROC_MEMORY (8 * 1024 * 1024)

/** The RLIMIT_NPROC of a gVisor sandbox with the pids limit pids and memory bytes of memory:
 * min(pids, memory / ISOLATION_GVISOR_PROC_MEMORY), at least 16. */
int64_t isolation_gvisor_nproc(int64_t pids, int64_t memory);

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

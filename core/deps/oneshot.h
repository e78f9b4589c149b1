/*
 * oneshot: one-shot helper containers. A one-shot container runs one command to completion
 * and is gone (backend_run, core/backend/backend.h). The dependency installer (deps.c) and the listing
 * of the image's packages (packages.c) run in them, never user code; the web reader's
 * containers (core/web/web.c) start from the same hardened spec. Not the sandbox:
 * sandbox.c keeps a long-lived container attached to a runner for a session. This module
 * names them, gives them their hardened starting point and words their failures; what runs,
 * with which rights and mounts, is the caller's spec.
 * A public header of the installers' room (core/deps/): the web reader includes it too; nothing
 * outside core/ includes it.
 */
#ifndef RB_CORE_DEPS_ONESHOT_H
#define RB_CORE_DEPS_ONESHOT_H

#include "base/base.h"
#include "core/heart.h"

/* Bytes kept of each of stdout and stderr (the last ones written). */
#define ONESHOT_OUTPUT_MAX (2u * 1024 * 1024)

/** Reports a one-shot run, exactly once. err == RB_OK: the container ran; r holds its exit
 * code (-1 when the engine did not say) and the last ONESHOT_OUTPUT_MAX bytes at most of each
 * of its stdout and stderr (both empty when they were more than twice that). Otherwise r is
 * NULL and msg says which step failed: RB_ETIMEDOUT when the container did not exit within
 * the deadline, RB_EUNAVAILABLE when the image does not exist, RB_ECANCELED when runboxd is
 * shutting down, the backend's code else. msg and r are borrowed for the call. */
typedef void (*oneshot_done_cb)(void *data, rb_err err, const char *msg, const backend_exec_result *r);

/** Runs a container named "runbox-<kind>-<random>" from spec (borrowed for the call) to
 * completion, waiting at most timeout_ms for it to exit, and removes it whatever happened once
 * it exists. Returns RB_OK and calls cb later exactly once; on a synchronous error (detail in
 * err) nothing was created and cb is never called. */
rb_err oneshot_run(rb_core *c, const char *kind, const backend_spec *spec, long timeout_ms, oneshot_done_cb cb,
                   void *data, char *err);

/** Sets *spec to a one-shot container of image, hardened like a sandbox: read-only root with a
 * 1 GiB /tmp tmpfs, every capability dropped (even for root), no-new-privileges, 1 GiB of
 * memory without swap, 256 processes, an init process, its output kept for reading once it
 * exits. network is the network to join; NULL means none. The lists it points to are static;
 * the caller sets the command, user, environment, labels and volumes. */
void oneshot_spec_init(backend_spec *spec, const char *image, const char *network);

/** oneshot_spec_init without a network, run as root (0:0) in /tmp with only the capabilities caps
 * (a static NULL-terminated list) added back: a helper that must reach every file of a volume
 * (the workspace's copier, a volume's chown and measurement). */
void oneshot_spec_root(backend_spec *spec, const char *image, const char *const *caps);

/* The shell command that prints the bytes of the files under the folder dir (a string literal):
 * the apparent sizes of its files and links, each inode once, folders counting nothing, so that an
 * empty tree is 0 on any file system (du counts a folder's own blocks: 4,096 on ext4, other sizes on
 * tmpfs). The one measure of what a user wrote, run in one-shot containers: a hibernated workspace,
 * a fork's copy, a volume. */
#define ONESHOT_BYTES_SH(dir)                                                                                       \
    "find " dir " -xdev ! -type d -printf '%i %s\\n' | awk '!seen[$1]++ {n += $2} END {print n + 0}'"

#endif

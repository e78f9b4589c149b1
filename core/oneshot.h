/*
 * oneshot: one-shot helper containers. A one-shot container runs one command to completion
 * and is gone: create, start, wait (with a deadline), read its output from the logs, remove.
 * The dependency installer (deps.c) and the listing of the image's packages (packages.c) run
 * in them, never user code. Not the sandbox: sandbox.c keeps a long-lived container attached
 * to a runner for a session. This module decides nothing about what runs or with which rights:
 * the caller's container config does (oneshot_host_config is the hardened starting point).
 * Internal to core/: nothing outside core/ includes this.
 */
#ifndef RB_CORE_ONESHOT_H
#define RB_CORE_ONESHOT_H

#include <jansson.h>

#include "base/base.h"
#include "core/core.h"

/* Bytes kept of each of stdout and stderr; beyond it the older half is dropped. */
#define ONESHOT_OUTPUT_MAX (2u * 1024 * 1024)

/** Reports a one-shot run, exactly once. err == RB_OK: the container ran and exited with
 * exit_code (-1 when Docker did not say); out[1] is its stdout and out[2] its stderr (out[0]
 * is unused), each at most ONESHOT_OUTPUT_MAX bytes, keeping what came last (both empty when
 * the logs as a whole exceed 2 * ONESHOT_OUTPUT_MAX). Otherwise msg says which step failed:
 * RB_ETIMEDOUT when the container did not exit within the deadline, RB_EUNAVAILABLE when the
 * image does not exist, RB_ECANCELED when runboxd is shutting down, Docker's own code else.
 * msg and out are borrowed for the duration of the call. */
typedef void (*oneshot_done_cb)(void *data, rb_err err, const char *msg, int exit_code, rb_buf *out);

/** Runs a container named "runbox-<kind>-<random>" from config (a Docker create body,
 * borrowed: the caller still owns it after the call) to completion, waiting at most
 * timeout_ms for it to exit, and removes it (with its anonymous volumes) whatever happened
 * once it exists. Returns RB_OK and calls cb later exactly once; on a synchronous error
 * (Docker's code, detail in err) nothing was created and cb is never called. */
rb_err oneshot_run(rb_core *c, const char *kind, json_t *config, long timeout_ms, oneshot_done_cb cb, void *data,
                   char *err);

/** A new HostConfig (owned by the caller) for one-shot containers, hardened like a sandbox:
 * read-only root with a 1 GiB /tmp tmpfs, every capability dropped but CHOWN, DAC_OVERRIDE and
 * FOWNER (remove them from "CapAdd" when the command needs none), no-new-privileges, 1 GiB of
 * memory without swap, 256 processes, an init process. network is the Docker network to join;
 * NULL means none. */
json_t *oneshot_host_config(const char *network);

#endif

/*
 * e2b_fs: envd's filesystem service (Stat, ListDir, MakeDir, Remove) on a session's files API;
 * called by e2b_rpc_handle (server/e2b/e2b_rpc.c) for /filesystem.Filesystem/<name>.
 */
#ifndef RB_SERVER_E2B_FS_H
#define RB_SERVER_E2B_FS_H

#include "server/e2b/connect.h"
#include "server/e2b/e2b_internal.h"

/** Answers (now or later) filesystem.Filesystem/<name> for the sandbox sbx (borrowed for the
 * call only) and returns 0, or returns -1 without answering for a method it does not serve. */
int e2b_fs_handle(h2o_req_t *req, const e2b_sandbox *sbx, const char *name);

#endif

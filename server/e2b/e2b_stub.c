/*
 * e2b_stub.c: a stand-in for e2b_rpc.c (E2B's Connect RPC: commands and the filesystem
 * service) until it is merged; then this file is deleted. It answers 501 in Connect's error
 * shape so that the SDK raises a readable exception.
 */
#include <stdio.h>

#include "server/e2b/e2b.h"

int e2b_rpc_handle(h2o_req_t *req, const e2b_sandbox *sbx, const char *method)
{
    (void)sbx;
    char msg[RB_ERR_LEN];
    snprintf(msg, sizeof(msg), "%.100s: this runboxd does not offer E2B's commands and filesystem RPC yet", method);
    json_t *doc = json_pack("{s:s, s:s}", "code", "unimplemented", "message", msg);
    http_send_json(req, 501, doc);
    json_decref(doc);
    return 0;
}

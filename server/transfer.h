/*
 * transfer: files moved between a request and a session's workspace, the plumbing every
 * protocol's file routes share. A download (core_file_download) is held until its response is
 * done, so that it is sent from where it lies; an upload request that carries several files
 * (REST's and E2B's multipart uploads) writes them one after another (core_file_upload in
 * turn). Both live in the request's pool: when the request goes away, the call in flight is
 * detached from core (core_cancel), no further one starts and the callback is not called.
 */
#ifndef RB_SERVER_TRANSFER_H
#define RB_SERVER_TRANSFER_H

#include <h2o.h>
#include <jansson.h>

#include "core/core.h"

/** Called once with a download's outcome, unless the request went away first: on e, msg says
 * why and file is NULL; else file is the file (borrowed: held until the response is done, so
 * the answer may send its bytes from where they lie). */
typedef void (*http_download_cb)(void *data, h2o_req_t *req, rb_err e, const char *msg, const core_file *file);

/** Reads path of session_id, at most max bytes (core_file_download), for cb to answer req. who
 * and session_id are borrowed for the call. RB_OK, or the error in err (cb is not called then). */
rb_err http_download(h2o_req_t *req, rb_core *core, const core_caller *who, const char *session_id, const char *path,
                     size_t max, http_download_cb cb, void *cbdata, char *err);

/* failed when the error is not one file's answer: the next write could not start. */
#define HTTP_UPLOAD_NONE ((size_t)-1)

/** Called once, unless the request went away first: e == RB_OK with done, core's answer for
 * each file in order (borrowed); or e, msg and failed, the index of the file core refused
 * (the files before it are written), or HTTP_UPLOAD_NONE when a later write could not start
 * (msg is then core's reason as it is). */
typedef void (*http_upload_cb)(void *data, h2o_req_t *req, rb_err e, const char *msg, size_t failed, json_t *done);

/** Writes n files (n >= 1) into session_id: paths[i] gets lens[i] bytes of data[i]. The arrays,
 * what they point to, who and session_id are borrowed and must live as long as req. RB_OK, or
 * the first write's error in err (cb is not called then). */
rb_err http_upload_files(h2o_req_t *req, rb_core *core, const core_caller *who, const char *session_id, size_t n,
                         const char *const *paths, const char *const *data, const size_t *lens, http_upload_cb cb,
                         void *cbdata, char *err);

#endif

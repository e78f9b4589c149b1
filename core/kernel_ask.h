/*
 * kernel_ask: questions to a session's interpreter that are not code to run: completion,
 * inspection, whether code is complete, its history, and what it says of its language (Jupyter's
 * complete, inspect, is_complete, history and kernel_info requests; docker/runner/PROTOCOL.md,
 * "Questions"). The interpreter answers from IPython (its completer with jedi, its inspector, its
 * TransformerManager, its history), as ipykernel does.
 *
 * A question is not an execution: no execution record, no history entry, no execution count, no
 * output, nothing stored, and it does not touch the session's idle time. It is asked only of an
 * idle Python session (ipykernel answers these on its shell channel between cells): a session
 * whose executions run or wait is RB_EBUSY, and so is one past CORE_ASK_MAX questions at once.
 * The answer is bounded (CORE_ASK_ANSWER_MAX) and comes within CORE_ASK_TIMEOUT_MS or not at all
 * (RB_ETIMEDOUT). It knows no protocol: server/jupyter translates it, and any other protocol may.
 */
#ifndef RB_CORE_KERNEL_ASK_H
#define RB_CORE_KERNEL_ASK_H

#include <jansson.h>

#include "core/core.h"

/* Questions in flight to one session at once; more are RB_EBUSY. */
#define CORE_ASK_MAX 8
/* How long an answer may take (the runner interrupts its interpreter's answer a little before).
 * Answers take milliseconds; an inspection runs the object's __repr__, which may take longer. */
#define CORE_ASK_TIMEOUT_MS 35000
/* Bytes of a question's content and of an answer's line. */
#define CORE_ASK_CONTENT_MAX (1024u * 1024)
#define CORE_ASK_ANSWER_MAX (1024u * 1024 + 4096)

/** The kinds of question, and whether kind (NULL allowed) is one. */
#define CORE_ASK_KINDS_TEXT "complete, inspect, is_complete, history or kernel_info"
int core_ask_kind_known(const char *kind);

/**
 * Asks session_id's interpreter the question kind with content (borrowed; the Jupyter request's
 * content: {code, cursor_pos} for complete, {code, cursor_pos, detail_level} for inspect, {code}
 * for is_complete, {hist_access_type, raw, output, session, start, stop, n, pattern, unique} for
 * history, {} for kernel_info). cb gets, once and never from inside this call, RB_OK with the
 * content of the Jupyter reply (status "ok", or status "error" with ename and evalue when the
 * interpreter could not answer it: KernelBusy, TimeoutError, KernelRestarted, ...), or an error:
 * RB_ETIMEDOUT (no answer within CORE_ASK_TIMEOUT_MS), RB_ETOOBIG (an answer over
 * CORE_ASK_ANSWER_MAX), RB_ECANCELED (runboxd stops).
 * Synchronous errors (no callback): RB_ENOTFOUND (no live session of who), RB_EINVAL (an unknown
 * kind, content not an object or over CORE_ASK_CONTENT_MAX, a session that is not Python),
 * RB_ECONFLICT (not ready: starting, paused, without a sandbox), RB_EBUSY (an execution runs or
 * waits, or CORE_ASK_MAX questions are in flight). *handle (may be NULL) lets the caller detach
 * with core_cancel.
 */
rb_err core_kernel_ask(rb_core *c, const core_caller *who, const char *session_id, const char *kind, json_t *content,
                       core_cb cb, void *data, core_op **handle, char *err);

#endif

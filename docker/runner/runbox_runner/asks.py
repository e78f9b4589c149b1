"""Questions to the interpreter that are not cells (PROTOCOL.md, "Questions"): the supervisor's side.

Runs on the trusted side, inside the supervisor. runboxd sends {"op": "ask", "id", "kind",
"content"} (kind: complete, inspect, is_complete, history, kernel_info); the question goes to an
idle Python worker (one still starting answers once it is up), which answers from IPython (kernel_requests), and the answer goes back as
{"type": "answer", "id", "content"}. A question is refused at once (an answer whose content has
status "error") when a cell runs or waits, for another language,
or past ASKS_MAX at once; one the worker does not answer within ASK_TIMEOUT_S is answered so and
its worker interrupted (SIGINT stops only the answer, never a cell). The worker is untrusted: an
answer for no question asked is ignored, and one over ANSWER_MAX bytes becomes an error.
"""

import json
import os
import signal
import time

KINDS = ("complete", "inspect", "is_complete", "history", "kernel_info")
ASKS_MAX = 8                  # questions in the worker at once
ASK_TIMEOUT_S = 30.0          # the first completion loads jedi: 17 s on this 2-core host at load 40 (runboxd waits 35 s)
ANSWER_MAX = 1024 * 1024      # bytes of an answer's content as JSON
CONTENT_MAX = 2 * 1024 * 1024  # bytes of a question's content as JSON


def _error(ename, evalue):
    return {"status": "error", "ename": ename, "evalue": evalue, "traceback": []}


class Asks:
    """The questions in the worker, by id, with their deadlines."""

    def __init__(self, emit):
        self.emit = emit
        self.pending = {}             # id -> deadline (monotonic)

    def refuse(self, rid, ename, evalue):
        self.emit({"type": "answer", "id": rid, "content": _error(ename, evalue)})

    def ask(self, sup, rid, req):
        """A question from runboxd; sup is the Supervisor (its language, cell and worker)."""
        kind, content = req.get("kind"), req.get("content")
        if not isinstance(rid, str) or not rid or len(rid) > 64:
            self.emit({"type": "error_reply", "id": rid, "message": "ask needs a string 'id' of at most 64 characters"})
            return
        if kind not in KINDS:
            self.refuse(rid, "ValueError", "'kind' must be one of %s" % ", ".join(KINDS))
            return
        if content is None:
            content = {}
        if not isinstance(content, dict) or len(json.dumps(content)) > CONTENT_MAX:
            self.refuse(rid, "ValueError", "'content' must be an object of at most %d bytes" % CONTENT_MAX)
            return
        w = sup.worker
        if sup.language != "python":
            self.refuse(rid, "NotSupported", "only Python kernels answer %s questions" % kind)
        elif sup.cell is not None:
            self.refuse(rid, "KernelBusy", "a cell is running; ask again when the kernel is idle")
        elif w is None:
            self.refuse(rid, "KernelStarting", "the interpreter is starting; ask again in a moment")
        elif rid in self.pending or len(self.pending) >= ASKS_MAX:
            self.refuse(rid, "KernelBusy", "%d questions are waiting for their answers" % len(self.pending))
        else:
            self.pending[rid] = time.monotonic() + ASK_TIMEOUT_S
            w.send_msg({"ask": rid, "kind": kind, "content": content})

    def answered(self, msg):
        """The worker's {"t": "answer", "id", "content"}."""
        rid = msg.get("id")
        if not isinstance(rid, str) or self.pending.pop(rid, None) is None:
            return  # late (given up on) or never asked
        content = msg.get("content")
        if not isinstance(content, dict):
            content = _error("ValueError", "the interpreter's answer was not an object")
        elif len(json.dumps(content)) > ANSWER_MAX:
            content = _error("AnswerTooLarge", "the answer is larger than %d bytes" % ANSWER_MAX)
        self.emit({"type": "answer", "id": rid, "content": content})

    def deadline(self):
        return min(self.pending.values()) if self.pending else None

    def check(self, now, worker, cell_sent):
        """Answers the questions past their deadline and interrupts worker's answer (not once a
        cell was sent after it: the cell's own timeout then interrupts both)."""
        late = [rid for rid, t in self.pending.items() if t <= now]
        for rid in late:
            del self.pending[rid]
            self.refuse(rid, "TimeoutError", "the interpreter did not answer within %g s" % ASK_TIMEOUT_S)
        if late and not cell_sent and worker is not None and worker.pid is not None and worker.hello:
            try:
                os.kill(worker.pid, signal.SIGINT)
            except OSError:
                pass

    def drop_all(self, why):
        """The worker went (a reset or a restart): its questions will not be answered."""
        for rid in list(self.pending):
            self.refuse(rid, "KernelRestarted", why)
        self.pending.clear()

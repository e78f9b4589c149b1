"""Control channel between the supervisor and a worker: framing that both sides use.

This is not runboxd's protocol (that one is in PROTOCOL.md and spoken only by the supervisor);
it is the private channel over the two pipes between the supervisor and the worker process. It
runs on both sides of the trust boundary, so it holds framing only, imports nothing of the
runner and keeps no state.

One JSON object per line, ASCII (json's escaping), on the worker's control pipe:
  worker -> supervisor  {"t": "hello", "pid"}, {"t": "sync", "seq"}, {"t": "result", "text"},
                        {"t": "display", "mime", "data"}, {"t": "error", "ename", "evalue",
                        "traceback"}, {"t": "done", "n", "status" | "rc"}
  supervisor -> worker  {"n", "code", "limit", "out", "err"} runs cell n (output to the FIFOs
                        out and err); {"interrupt": n} precedes the SIGINT of cell n;
                        {"reap": true} collects exited children; {"ack": seq} answers a sync
                        (a bash worker gets bash text instead, see bash_worker)
The worker flushes its stdout/stderr before every message and the supervisor drains the output
pipes before acting on one, which keeps output and messages in order. The supervisor treats
every message from the worker as untrusted input.
"""

import json
import os


def write_all(fd, data):
    """Writes all of data (bytes) to fd, retrying short writes; OSError goes to the caller."""
    view = memoryview(data)
    while view:
        try:
            n = os.write(fd, view)
        except InterruptedError:
            continue
        view = view[n:]


def encode(msg):
    """One control message as its line (bytes, newline-terminated)."""
    return (json.dumps(msg) + "\n").encode("ascii")

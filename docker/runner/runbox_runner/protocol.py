"""Control channel between the supervisor and a worker: framing that both sides use.

This is not runboxd's protocol (that one is in PROTOCOL.md and spoken only by the supervisor);
it is the private channel over the two pipes between the supervisor and the worker process. It
runs on both sides of the trust boundary, so it holds framing (and `clip` and `bounded_lines`, the rules for how
large a text or traceback of a message may be, which the worker applies to spare the pipe and the supervisor
applies again as the boundary) only, imports nothing of the runner and keeps no state.

One JSON object per line, ASCII (json's escaping), on the worker's control pipe:
  worker -> supervisor  {"t": "hello", "pid"}, {"t": "sync", "seq"},
                        {"t": "result", "text", "data"?, "metadata"?}, {"t": "display",
                        "data", "metadata"?, "display_id"?, "update"?} (data: a mime bundle,
                        {mime: str}), {"t": "clear", "wait"}, {"t": "error", "ename", "evalue",
                        "traceback"}, {"t": "done", "n", "status" | "rc"}
  supervisor -> worker  {"n", "code", "limit", "out", "err"} runs cell n (output to the FIFOs
                        out and err); {"interrupt": n} precedes the SIGINT of cell n;
                        {"reap": [pid, ...]} collects those children (killed by the
                        supervisor) now or before a later cell; {"ack": seq} answers a sync
                        (a bash worker gets bash text instead, see bash_worker)
The worker flushes its stdout/stderr before every message and the supervisor drains the output
pipes before acting on one, which keeps output and messages in order. The supervisor treats
every message from the worker as untrusted input.
"""

import collections
import json
import os

MARKER_ROOM = 100  # bytes of a cap left for the marker of a clipped text
# Formats of a mime bundle that are base64 (bounded by the displays' budget, never by the text
# cap, never cut); every other format is text.
BINARY_MIMES = frozenset(("image/png", "image/jpeg", "image/gif", "image/webp", "application/pdf"))


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


def fits(text, cap):
    """Whether text is within cap bytes of UTF-8."""
    return len(text) * 4 <= cap or len(text.encode("utf-8", "surrogatepass")) <= cap


def clip(text, cap, what):
    """text within cap bytes of UTF-8, marker included (runboxd holds every text to the cell's
    output limit in bytes): head and tail around a marker counting the characters cut."""
    if len(text) * 4 <= cap:
        return text
    data = text.encode("utf-8", "surrogatepass")
    if len(data) <= cap:
        return text
    half = max(0, cap - MARKER_ROOM) // 2
    h, t = half, len(data) - half
    while h > 0 and (data[h] & 0xC0) == 0x80:
        h -= 1  # do not split a character
    while t < len(data) and (data[t] & 0xC0) == 0x80:
        t += 1
    head, tail = data[:h].decode("utf-8", "surrogatepass"), data[t:].decode("utf-8", "surrogatepass")
    return "%s\n[... %d characters of the %s dropped ...]\n%s" % (head, len(text) - len(head) - len(tail), what, tail)


def bounded_lines(lines, cap):
    """A traceback's lines (strings; anything else is left out) within about cap characters: the
    first lines up to half of it, a marker, then the last lines."""
    head, head_size = [], 0
    tail, tail_size = collections.deque(), 0
    dropped_lines = dropped_chars = 0
    line_cap = max(256, cap // 8)
    for line in lines:
        if not isinstance(line, str):
            continue
        line = clip(line, line_cap, "line")
        if head_size + len(line) <= cap // 2 and not tail and not dropped_lines:
            head.append(line)
            head_size += len(line)
            continue
        tail.append(line)
        tail_size += len(line)
        while tail and tail_size > cap // 2:
            old = tail.popleft()
            tail_size -= len(old)
            dropped_lines += 1
            dropped_chars += len(old)
    if dropped_lines:
        head.append("  [... %d lines (%d characters) of the traceback dropped ...]\n" % (dropped_lines, dropped_chars))
    return head + list(tail)

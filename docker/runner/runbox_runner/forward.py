"""What the supervisor forwards to runboxd of the worker's control messages, bounded.

Runs on the trusted side, inside the supervisor. The worker clips its results and tracebacks
itself, but the worker is the user's process: user code can write any line to its control pipe
(the fd number is in its argv), so that clipping is no boundary. Here every message is checked
again before it becomes an event: per cell at most one `result` and one `error`, texts clipped to
the cell's cap (its max_output within [TEXT_CAP_MIN, TEXT_CAP_MAX], as PROTOCOL.md says), fields of
the wrong type replaced, `display` only for known types and within DISPLAY_BYTES_MAX per cell.
What is refused counts as dropped output of the cell. It does not read the control pipe
(supervisor) and knows nothing of stream output (capture).
"""

from runbox_runner import protocol

TEXT_CAP_MIN = 4096            # the least a result text / traceback may keep, whatever max_output says
TEXT_CAP_MAX = 4 * 1024 * 1024  # ... and the most
NAME_CAP = 256                 # characters of an exception's name
DISPLAY_BYTES_MAX = 32 * 1024 * 1024  # base64 bytes of displays per cell (runboxd keeps as much)
DISPLAY_MIMES = ("image/png",)
PAGE_MIMES = ("text/plain", "text/html")  # what a page (IPython's pager) may carry
PAGES_MAX = 4                  # pages per cell (the reply shows the last one)




def _size(value):
    """Characters a refused field would have carried (for the dropped count)."""
    if isinstance(value, str):
        return len(value)
    if isinstance(value, list):
        return sum(_size(v) for v in value)
    return 0


class CellForward:
    """The bounds of one cell's forwarded messages."""

    def __init__(self, max_output):
        self.cap = max(TEXT_CAP_MIN, min(max_output, TEXT_CAP_MAX))
        self.results = 0
        self.errors = 0
        self.display_bytes = 0
        self.pages = 0
        self.dropped = 0

    def result(self, msg):
        """The fields of a `result` event for the worker's message, or None if it is refused."""
        text = msg.get("text")
        if not isinstance(text, str) or self.results:
            self.dropped += _size(text)
            return None
        self.results += 1
        return {"text": protocol.clip(text, self.cap, "result")}

    def error(self, msg):
        """The fields of an `error` event, or None: only the first error of a cell goes out."""
        ename, evalue, tb = msg.get("ename"), msg.get("evalue"), msg.get("traceback")
        if self.errors:
            self.dropped += _size(ename) + _size(evalue) + _size(tb)
            return None
        self.errors += 1
        return {"ename": protocol.clip(ename, NAME_CAP, "name") if isinstance(ename, str) else "Error",
                "evalue": protocol.clip(evalue, self.cap // 4, "message") if isinstance(evalue, str) else "",
                "traceback": protocol.bounded_lines(tb, self.cap) if isinstance(tb, list) else []}

    def display(self, msg):
        """The fields of a `display` event, or None (no known type, or past the cell's budget).
        The worker sends a mime bundle (`data`: {mime: text}); the event carries its image/png."""
        bundle = msg.get("data")
        data = bundle.get("image/png") if isinstance(bundle, dict) else None
        mime = "image/png"
        if not isinstance(data, str) or self.display_bytes + len(data) > DISPLAY_BYTES_MAX:
            self.dropped += _size(data)
            return None
        self.display_bytes += len(data)
        return {"mime": mime, "data": data}

    def page(self, msg):
        """The fields of a `page` event (IPython's pager: `obj?`), or None past PAGES_MAX a cell:
        its bundle's text formats clipped to the cell's cap, `start` a line number."""
        bundle, start = msg.get("data"), msg.get("start")
        if not isinstance(bundle, dict) or self.pages >= PAGES_MAX:
            self.dropped += sum(_size(v) for v in bundle.values()) if isinstance(bundle, dict) else 0
            return None
        self.pages += 1
        data = {m: protocol.clip(v, self.cap, "page") for m, v in bundle.items()
                if m in PAGE_MIMES and isinstance(v, str)}
        if "text/plain" not in data:
            data["text/plain"] = ""
        ok = isinstance(start, int) and not isinstance(start, bool) and 0 <= start < (1 << 31)
        return {"data": data, "start": start if ok else 0}

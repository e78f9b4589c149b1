"""What the supervisor forwards to runboxd of the worker's control messages, bounded.

Runs on the trusted side, inside the supervisor. The worker clips its results and tracebacks
itself, but the worker is the user's process: user code can write any line to its control pipe
(the fd number is in its argv), so that clipping is no boundary. Here every message is checked
again before it becomes an event: per cell at most one `result` and one `error`, texts clipped to
the cell's cap (its max_output within [TEXT_CAP_MIN, TEXT_CAP_MAX], as PROTOCOL.md says), fields of
the wrong type replaced, mime bundles of `display` and `result` bounded (their formats, names,
sizes, metadata) and within DISPLAY_BYTES_MAX and DISPLAYS_MAX per cell.
What is refused counts as dropped output of the cell. It does not read the control pipe
(supervisor) and knows nothing of stream output (capture).
"""

import json

from runbox_runner import protocol

TEXT_CAP_MIN = 4096            # the least a result text / traceback may keep, whatever max_output says
TEXT_CAP_MAX = 4 * 1024 * 1024  # ... and the most
NAME_CAP = 256                 # characters of an exception's name
DISPLAY_BYTES_MAX = 32 * 1024 * 1024  # characters of mime bundles per cell (runboxd keeps as much)
DISPLAYS_MAX = 2000            # display and clear_output events per cell
FORMATS_MAX = 16               # formats of one bundle
METADATA_MAX = 16 * 1024       # characters of one output's metadata, as JSON
DISPLAY_ID_MAX = 256           # characters of a display_id
_MIME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789!#$&^_.+-")
PAGE_MIMES = ("text/plain", "text/html")  # what a page (IPython's pager) may carry
PAGES_MAX = 4                  # pages per cell (the reply shows the last one)


def _mime_ok(name):
    """Whether name is a mime type as RFC 6838 spells one (type/subtype, each 1-63 characters)."""
    parts = name.split("/")
    return len(parts) == 2 and all(0 < len(p) < 64 and p[0].isalnum() and _MIME_CHARS.issuperset(p) for p in parts)


def _size(value):
    """Characters a refused field would have carried (for the dropped count)."""
    if isinstance(value, str):
        return len(value)
    if isinstance(value, list):
        return sum(_size(v) for v in value)
    if isinstance(value, dict):
        return sum(_size(v) for v in value.values())
    return 0


def _metadata(value):
    """A display's metadata as forwarded: a JSON object of at most METADATA_MAX characters, or None."""
    if not isinstance(value, dict) or not value:
        return None
    try:
        text = json.dumps(value)
    except (TypeError, ValueError, RecursionError):
        return None
    return value if len(text) <= METADATA_MAX else None


class CellForward:
    """The bounds of one cell's forwarded messages."""

    def __init__(self, max_output):
        self.cap = max(TEXT_CAP_MIN, min(max_output, TEXT_CAP_MAX))
        self.results = 0
        self.errors = 0
        self.displays = 0
        self.display_bytes = 0
        self.pages = 0
        self.dropped = 0

    def bundle(self, data, what):
        """A mime bundle ({mime: str}) within the bounds: known-shaped mime names, at most
        FORMATS_MAX formats, text/plain clipped to the cap, other text formats past it left out
        (a cut HTML or JSON is no longer one), base64 ones (protocol.BINARY_MIMES) only within
        the cell's DISPLAY_BYTES_MAX. What is left out counts as dropped."""
        out = {}
        if not isinstance(data, dict):
            return out
        for mime, value in data.items():
            ok = isinstance(mime, str) and isinstance(value, str) and len(out) < FORMATS_MAX and _mime_ok(mime)
            if ok and mime == "text/plain":
                value = protocol.clip(value, self.cap, what)
            elif ok and mime not in protocol.BINARY_MIMES:
                ok = protocol.fits(value, self.cap)
            if not ok or self.display_bytes + len(value) > DISPLAY_BYTES_MAX:
                self.dropped += _size(value)
                continue
            self.display_bytes += len(value)
            out[mime] = value
        return out

    def result(self, msg):
        """The fields of a `result` event for the worker's message, or None if it is refused:
        its text/plain as text and, when it has other formats, its whole bundle and metadata."""
        text = msg.get("text")
        if not isinstance(text, str) or self.results:
            self.dropped += _size(text) + _size(msg.get("data"))
            return None
        self.results += 1
        fields = {"text": protocol.clip(text, self.cap, "result")}
        value = msg.get("str")
        if isinstance(value, str) and protocol.fits(value, self.cap):  # a str value, whole or not at all
            fields["str"] = value
        data = msg.get("data")
        if isinstance(data, dict):
            bundle = self.bundle(data, "result")
            if set(bundle) - {"text/plain"}:
                bundle["text/plain"] = fields["text"]
                fields["bundle"] = bundle
                metadata = _metadata(msg.get("metadata"))
                if metadata is not None:
                    fields["metadata"] = metadata
        return fields

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
        """The fields of a `display` event (a bundle, its metadata, display_id and update), or
        None: an empty bundle, or past the cell's DISPLAYS_MAX."""
        if self.displays >= DISPLAYS_MAX:
            self.dropped += _size(msg.get("data"))
            return None
        bundle = self.bundle(msg.get("data"), "output")
        if not bundle:
            return None
        self.displays += 1
        fields = {"bundle": bundle}
        metadata = _metadata(msg.get("metadata"))
        if metadata is not None:
            fields["metadata"] = metadata
        display_id = msg.get("display_id")
        if isinstance(display_id, str) and 0 < len(display_id) <= DISPLAY_ID_MAX:
            fields["display_id"] = display_id
            if msg.get("update") is True:
                fields["update"] = True
        return fields

    def clear(self, msg):
        """The fields of a `clear_output` event ({"wait"}), or None past the cell's DISPLAYS_MAX."""
        if self.displays >= DISPLAYS_MAX:
            return None
        self.displays += 1
        return {"wait": msg.get("wait") is True}

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

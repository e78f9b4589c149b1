"""Output capture: the worker's stdout/stderr bytes as runboxd's stream events.

Runs on the trusted side, inside the supervisor, which reads the worker's output pipes and
hands every chunk here (take). It decodes UTF-8 incrementally (invalid bytes become U+FFFD),
gathers small writes for COALESCE_S, sends stream events of at most CHUNK bytes in the order
the bytes arrived, and enforces the cell's max_output in bounded memory: the first half of the
budget as head, the last part as a tail window, a marker line in place of the middle. Output
written between cells is kept (up to IDLE_KEEP) for the next cell. It does not read pipes,
know the worker or decide when a cell ends; the supervisor tells it (start, stop).
"""

import codecs
import time

CHUNK = 64 * 1024              # largest stream event text (UTF-8 bytes)
COALESCE_S = 0.02              # small writes are gathered for this long
IDLE_KEEP = 1024 * 1024        # output written between cells that is kept for the next one


class _CellOutput:
    """The output budget of one cell: head left, the tail window and what was dropped."""

    def __init__(self, rid, max_output):
        self.id = rid
        self.head_left = max_output // 2
        self.tail_cap = max_output - max_output // 2
        self.tail = []                # [name, bytearray] segments
        self.tail_size = 0
        self.tail_mode = False
        self.dropped = 0
        self.first_drop_stream = None
        self.reported = 0             # dropped bytes already announced by a marker


class Capture:
    """The output of the current worker; emit(event) sends one stream event to runboxd."""

    def __init__(self, emit):
        self.emit = emit
        self.cell = None              # _CellOutput of the running cell
        self.pending = []             # [name, str] stream text not yet sent
        self.pending_size = 0
        self.pending_since = None
        self.decoders = {}
        self.last_char = {"stdout": "\n", "stderr": "\n"}
        self.idle_out = []            # output written between cells: [name, bytes]
        self.idle_size = 0
        self.idle_dropped = 0

    def start(self, rid, max_output):
        """Cell rid starts with a budget of max_output bytes; output kept since the last cell
        becomes its first output (and what could not be kept counts as dropped)."""
        self.cell = _CellOutput(rid, max_output)
        self.last_char = {"stdout": "\n", "stderr": "\n"}
        idle, self.idle_out, self.idle_size = self.idle_out, [], 0
        self.cell.dropped += self.idle_dropped
        self.idle_dropped = 0
        for name, data in idle:
            self.take(name, data)

    def dropped(self):
        """Bytes of the running cell's output not sent."""
        return self.cell.dropped

    def stop(self):
        """The cell is over (its output flushed, its done sent): output is idle again."""
        self.cell = None
        self.decoders = {}

    def reset_decoders(self):
        """A new worker: bytes of a character the old one left half written are forgotten."""
        self.decoders = {}

    def flush_at(self):
        """When gathered text is due to be sent (monotonic time), or a false value if none."""
        return self.pending_since and self.pending_since + COALESCE_S

    def flush_if_due(self, now):
        if self.pending_since is not None and now - self.pending_since >= COALESCE_S:
            self.flush_pending()

    def take(self, name, data):
        """Takes bytes the worker wrote to stream name ("stdout" or "stderr")."""
        cell = self.cell
        if cell is None:
            room = IDLE_KEEP - self.idle_size
            if room < len(data):
                self.idle_dropped += len(data) - max(room, 0)
                data = data[:max(room, 0)]
            if data:
                self.idle_out.append((name, data))
                self.idle_size += len(data)
            return
        if not cell.tail_mode:
            if len(data) <= cell.head_left:
                cell.head_left -= len(data)
                self.queue_text(name, data)
                return
            cut = cell.head_left
            while cut > 0 and (data[cut] & 0xC0) == 0x80:
                cut -= 1  # do not split a UTF-8 character
            if cut:
                self.queue_text(name, data[:cut])
            data = data[cut:]
            cell.head_left = 0
            cell.tail_mode = True
        self.add_tail(cell, name, data)

    def add_tail(self, cell, name, data):
        if cell.tail and cell.tail[-1][0] == name:
            cell.tail[-1][1].extend(data)
        else:
            cell.tail.append([name, bytearray(data)])
        cell.tail_size += len(data)
        excess = cell.tail_size - cell.tail_cap
        while excess > 0 and cell.tail:
            seg_name, seg = cell.tail[0]
            if cell.first_drop_stream is None:
                cell.first_drop_stream = seg_name
            if len(seg) <= excess:
                cell.tail.pop(0)
                cut = len(seg)
            else:
                cut = excess
                while cut < len(seg) and (seg[cut] & 0xC0) == 0x80:
                    cut += 1
                del seg[:cut]
                if not seg:
                    cell.tail.pop(0)
            cell.tail_size -= cut
            cell.dropped += cut
            excess -= cut

    def flush_tail(self):
        cell = self.cell
        if cell is None or not cell.tail_mode:
            return
        if cell.dropped > cell.reported:
            name = cell.first_drop_stream or "stdout"
            self.finish_decoders()
            prefix = "" if self.last_char_of(name) == "\n" else "\n"
            self.queue_str(name, "%s[... %d bytes of output dropped ...]\n" % (prefix, cell.dropped - cell.reported))
            self.decoders = {}
        for name, seg in cell.tail:
            self.queue_text(name, bytes(seg))
        cell.tail = []
        cell.tail_size = 0
        cell.first_drop_stream = None
        # Bytes already reported stay counted in cell.dropped; a later overflow adds to them.
        cell.reported = cell.dropped

    def last_char_of(self, name):
        for seg_name, text in reversed(self.pending):
            if seg_name == name and text:
                return text[-1]
        return self.last_char[name]

    def queue_text(self, name, data):
        dec = self.decoders.get(name)
        if dec is None:
            dec = self.decoders[name] = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self.queue_str(name, dec.decode(data))

    def finish_decoders(self):
        for name, dec in list(self.decoders.items()):
            self.queue_str(name, dec.decode(b"", final=True))
            dec.reset()

    def queue_str(self, name, text):
        if not text:
            return
        if self.pending and self.pending[-1][0] == name:
            self.pending[-1][1] += text
        else:
            self.pending.append([name, text])
        self.pending_size += len(text)
        if self.pending_since is None:
            self.pending_since = time.monotonic()
        if self.pending_size >= CHUNK:
            self.flush_pending()

    def flush_pending(self):
        cell = self.cell
        for name, text in self.pending:
            data = text.encode("utf-8", "surrogatepass")
            start = 0
            while start < len(data):
                end = min(start + CHUNK, len(data))
                while end < len(data) and (data[end] & 0xC0) == 0x80:
                    end -= 1
                piece = data[start:end].decode("utf-8", "replace")
                if cell is not None:
                    self.emit({"type": "stream", "id": cell.id, "name": name, "text": piece})
                start = end
            self.last_char[name] = text[-1]
        self.pending = []
        self.pending_size = 0
        self.pending_since = None

    def flush_all(self):
        self.flush_tail()
        self.flush_pending()

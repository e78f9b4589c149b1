"""Output capture: the worker's stdout/stderr bytes as runboxd's stream events.

Runs on the trusted side, inside the supervisor, which reads the worker's output pipes and
hands every chunk here (take). It decodes UTF-8 incrementally (invalid bytes become U+FFFD),
gathers small writes for COALESCE_S, sends stream events of at most CHUNK bytes in the order
the bytes arrived, and enforces the cell's max_output in bounded memory: the first half of the
budget as head, the last part as a tail window, a marker line in place of the middle.

Output of an earlier cell (a thread or process it started that writes on after its done, which
the supervisor tells apart by the pipe it arrives on) is never passed off as the running
cell's: it is delivered line by line, each line prefixed with the cell it came from, at most
FOREIGN_KEEP bytes per cell (kept between cells for the next one); past that it is dropped and
counted, with a marker line at the end of the cell. It does not read pipes, know the worker or
decide when a cell ends; the supervisor tells it (start, stop).
"""

import codecs
import time

CHUNK = 64 * 1024              # largest stream event text (UTF-8 bytes)
COALESCE_S = 0.02              # small writes are gathered for this long
PARTIAL_LINE_S = 0.2           # ... and a line not yet ended waits this long for its end
FOREIGN_KEEP = 64 * 1024       # bytes of earlier cells' output delivered with one cell (or kept for it)
FOREIGN_LINE = 4096            # a longer line of an earlier cell is cut into lines of this size


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


class Foreign:
    """One pipe that carries output of earlier cells: the label of the cell it belongs to (its
    request id, or None when unknown) and the start of a line not yet complete."""

    def __init__(self, label):
        self.label = label
        self.partial = bytearray()

    def prefix(self):
        if self.label is None:
            return b"[from an earlier cell] "
        label = str(self.label)[:128].encode("utf-8", "replace")
        return b"[from earlier execution " + label + b"] "


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
        self.foreign_out = []         # marked lines of earlier cells kept for the next cell: [name, bytes]
        self.foreign_left = FOREIGN_KEEP
        self.foreign_dropped = 0
        self.foreign_drop_stream = "stdout"
        self.own_open = {"stdout": False, "stderr": False}  # the running cell's last line unfinished
        self.deferred = []            # marked lines waiting for the end of such a line: [name, bytes]

    def start(self, rid, max_output):
        """Cell rid starts with a budget of max_output bytes; the marked lines of earlier cells
        kept since the last cell become its first output."""
        self.cell = _CellOutput(rid, max_output)
        self.last_char = {"stdout": "\n", "stderr": "\n"}
        self.own_open = {"stdout": False, "stderr": False}
        kept, self.foreign_out = self.foreign_out, []
        for name, data in kept:
            self.add(name, data)

    def dropped(self):
        """Bytes of the running cell's output not sent (earlier cells' output included)."""
        return self.cell.dropped + self.foreign_dropped

    def stop(self):
        """The cell is over (its output flushed, its done sent): output is idle again."""
        self.cell = None
        self.decoders = {}
        self.foreign_left = FOREIGN_KEEP
        self.foreign_dropped = 0
        self.deferred = []

    def take_foreign(self, src, name, data):
        """Takes bytes that src (a Foreign) got on stream name: each complete line goes out
        marked; an incomplete one waits for the rest (up to FOREIGN_LINE bytes)."""
        buf = src.partial
        buf.extend(data)
        start = 0
        while True:
            i = buf.find(b"\n", start, start + FOREIGN_LINE)
            if i >= 0:
                end = i + 1
            elif len(buf) - start > FOREIGN_LINE:
                end = start + FOREIGN_LINE
                while end > start + 1 and (buf[end] & 0xC0) == 0x80:
                    end -= 1  # do not split a UTF-8 character
            else:
                break
            line = bytes(buf[start:end])
            self.foreign_line(src, name, line if line.endswith(b"\n") else line + b"\n")
            start = end
        del buf[:start]

    def end_foreign(self, src, name):
        """src will get nothing more: its incomplete line goes out as it is."""
        if src.partial:
            line, src.partial = bytes(src.partial), bytearray()
            self.foreign_line(src, name, line + b"\n")

    def foreign_line(self, src, name, line):
        text = src.prefix() + line
        if len(text) > self.foreign_left:
            if not self.foreign_dropped:
                self.foreign_drop_stream = name
            self.foreign_dropped += len(line)
            return
        self.foreign_left -= len(text)
        if self.cell is None:
            self.foreign_out.append((name, text))
        elif self.own_open[name]:
            self.deferred.append((name, text))  # not inside a line the running cell is writing
        else:
            self.add(name, text)

    def release_deferred(self, name=None):
        """Marked lines held back for stream name (every stream: None) go out."""
        keep = []
        for seg_name, text in self.deferred:
            if name is None or seg_name == name:
                if self.own_open[seg_name]:
                    text = b"\n" + text
                    self.own_open[seg_name] = False
                self.add(seg_name, text)
            else:
                keep.append((seg_name, text))
        self.deferred = keep

    def end_cell_foreign(self):
        """At the end of a cell: the marked lines held back go out, then a marker line for the
        output of earlier cells that was dropped."""
        if self.cell is None:
            return
        self.release_deferred()
        if self.foreign_dropped:
            name = self.foreign_drop_stream
            prefix = b"\n" if self.own_open[name] else b""
            self.add(name, b"%s[... %d bytes of output from earlier cells dropped ...]\n" % (prefix, self.foreign_dropped))

    def reset_decoders(self):
        """A new worker: bytes of a character the old one left half written are forgotten."""
        self.decoders = {}

    def hold(self):
        """How long gathered text waits: COALESCE_S, or PARTIAL_LINE_S while its last line is
        open. print() writes its text and its newline apart, and a busy host can put more than
        COALESCE_S between them: clients that show a message per stream event (E2B's on_stdout)
        then got '6' and '\n' apart. ipykernel's output flush interval is 0.2 s too."""
        if self.pending and not self.pending[-1][1].endswith("\n"):
            return PARTIAL_LINE_S
        return COALESCE_S

    def flush_at(self):
        """When gathered text is due to be sent (monotonic time), or a false value if none."""
        return self.pending_since and self.pending_since + self.hold()

    def flush_if_due(self, now):
        if self.pending_since is not None and now - self.pending_since >= self.hold():
            self.flush_pending()

    def take(self, name, data):
        """Takes bytes the running cell wrote to stream name ("stdout" or "stderr")."""
        if self.cell is None or not data:
            return
        self.add(name, data)
        self.own_open[name] = not data.endswith(b"\n")
        if self.deferred and not self.own_open[name]:
            self.release_deferred(name)

    def add(self, name, data):
        """Adds bytes to stream name within the running cell's budget."""
        cell = self.cell
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

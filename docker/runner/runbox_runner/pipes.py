"""The worker's output pipes as the supervisor reads them, and which cell each one belongs to.

Runs on the trusted side, inside the supervisor. Every cell gets a pipe pair of its own for its
stdout and stderr: FIFOs in a private folder under /tmp, which the worker opens by path (the
control channel is a pair of plain pipes, with no way to pass descriptors) and puts on its fd
1/2 for the cell. Whatever the cell starts inherits them: subprocesses, forked copies, bash
background jobs; the Python worker also sends the writes of a thread to the pipes of the cell
that started the thread. They keep writing there after the cell's done, so the pipe a chunk
arrives on tells whose output it is: the running cell's own pipes carry its output, any other
pipe (an earlier cell's, or the stdout/stderr the worker got at start, where only writers of no
cell are left) carries output of an earlier cell, which capture delivers marked as such.

The supervisor keeps write ends of the running cell's FIFOs itself, so they cannot reach end
of file before the worker has opened them; it closes them and removes the paths when the
cell is over. An earlier cell's pipes are read until nothing holds them any more; at most
MAX_OLD of them stay open (the oldest are closed first: what still writes there gets EPIPE).
It decides nothing about the text (capture) and starts no process (supervisor).
"""

import os
import shutil
import tempfile

from runbox_runner import capture

MAX_OLD = 64                   # read ends of earlier cells' pipes kept open
PIPE_SIZE = 1024 * 1024        # F_SETPIPE_SZ of every output pipe


class Source:
    """One output pipe: stream name, the cell it belongs to (a supervisor Cell, or None for the
    worker's own stdout/stderr) and, for capture, its marked-output state."""

    def __init__(self, fd, name, cell):
        self.fd = fd
        self.name = name
        self.cell = cell
        self.foreign = capture.Foreign(cell.id if cell is not None else None)


class CellPipes:
    """The FIFOs of one cell: paths (for the worker) and the supervisor's own write ends."""

    def __init__(self):
        self.paths = {}               # name -> path
        self.writers = []             # fds, closed when the cell is over


def set_pipe_size(fd):
    try:
        import fcntl
        fcntl.fcntl(fd, fcntl.F_SETPIPE_SZ, PIPE_SIZE)
    except (OSError, AttributeError, ImportError):
        pass


class Pipes:
    """Every output pipe the supervisor reads; register(fd) and unregister(fd) add and remove
    one from the supervisor's selector, ended(source) lets capture end its last line."""

    def __init__(self, register, unregister, ended, shared=False):
        """shared: the worker runs as another user (privilege separation), who must be able to
        open the FIFOs for writing (but not list, remove or read them)."""
        self.shared = shared
        self.register = register
        self.unregister = unregister
        self.ended = ended            # ended(source) when an earlier cell's pipe is given up
        self.sources = {}             # fd -> Source
        self.old = []                 # fds of earlier cells' pipes, oldest first
        self.dir = None
        self.seq = 0

    # ---- the worker's own stdout/stderr ----
    def add_worker(self, fd, name):
        self.sources[fd] = Source(fd, name, None)
        self.register(fd)

    def drop_worker(self, fd):
        """The worker is gone: its own pipes are closed by whoever owns them (the caller)."""
        if self.sources.pop(fd, None) is not None:
            self.unregister(fd)

    # ---- a cell's pipes ----
    def open_cell(self, cell):
        """FIFOs for cell (a supervisor Cell): a CellPipes, or None when none could be made
        (then the worker's own pipes carry the cell's output, as before there were any)."""
        pipes = CellPipes()
        made = []
        try:
            if self.dir is None or not os.path.isdir(self.dir):
                self.dir = tempfile.mkdtemp(prefix="runbox-pipes-", dir="/tmp")
                if self.shared:
                    os.chmod(self.dir, 0o711)
            self.seq += 1
            for name in ("stdout", "stderr"):
                path = os.path.join(self.dir, "%d-%s" % (self.seq, name))
                os.mkfifo(path, 0o600)
                if self.shared:
                    os.chmod(path, 0o622)
                pipes.paths[name] = path
                r = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
                made.append((r, name))
                pipes.writers.append(os.open(path, os.O_WRONLY | os.O_NONBLOCK | os.O_CLOEXEC))
                set_pipe_size(r)
        except OSError:
            for fd, _ in made:
                os.close(fd)
            self.close_cell(pipes)
            return None
        for r, name in made:
            self.sources[r] = Source(r, name, cell)
            self.register(r)
        while len(self.old) > MAX_OLD - len(made):
            self.ended(self.forget(self.old[0]))
        return pipes

    def close_cell(self, pipes):
        """The cell is over: its FIFOs lose their paths and the supervisor's write ends; they
        become earlier pipes, read until nothing holds them."""
        for fd in pipes.writers:
            os.close(fd)
        pipes.writers = []
        for path in pipes.paths.values():
            try:
                os.unlink(path)
            except OSError:
                pass
        for fd, src in self.sources.items():
            if src.cell is not None and src.cell.pipes is pipes and fd not in self.old:
                self.old.append(fd)

    def forget(self, fd):
        """Stops reading fd (end of file, or too many earlier pipes) and closes it."""
        src = self.sources.pop(fd, None)
        if src is None:
            return None
        self.unregister(fd)
        if fd in self.old:
            self.old.remove(fd)
        if src.cell is not None:
            os.close(fd)
        return src

    def get(self, fd):
        return self.sources.get(fd)

    def fds(self):
        return list(self.sources)

    def cleanup(self):
        if self.dir is not None:
            shutil.rmtree(self.dir, ignore_errors=True)

"""The Python worker: the interpreter that runs the user's cells, in the user's own process.

This module runs on the untrusted side of the trust boundary: everything in this process
(this code included) is within reach of the user's code. It imports nothing of the supervisor
(only protocol, for the control channel) and holds no secret; the supervisor enforces timeouts,
output caps and restarts from outside, and the code policy is checked there before a cell gets
here. It is started by runbox_worker.py with the two control pipes; its fd 1/2 are pipes read
by the supervisor (for each cell, that cell's own pair: see pipes) and its stdin is /dev/null.

What it does: runs each cell in one persistent __main__ namespace through IPython's
InteractiveShell (runbox_runner.shell: IPython's transformations, magics and display machinery),
sends the value of a last expression (its mime bundle), display() outputs, the exception that
ended a cell (traceback without the runner's or IPython's frames, a SyntaxError as Python prints
it) and the matplotlib figures left open (PNG); keeps stdout and stderr of Python code in write
order; puts each cell's pipes on fd 1/2 (repairing them and
sys.stdout/sys.stderr) and sends what a thread writes to the pipes of the cell that started
it; makes a process forked by user code exit at the end of its cell. Imports IPython (through
runbox_runner.shell; the zygote has it imported before it forks) and otherwise the standard
library, lazily.
"""

import json
import os
import signal
import sys

from runbox_runner import protocol

DEPS_SITE = "/workspace/.runbox/site-packages"  # where core/deps.c installs session packages
TEXT_CAP_MAX = 4 * 1024 * 1024 # largest result text / traceback sent for one cell (characters)
TEXT_CAP_MIN = 4096            # ... and the least, whatever max_output says
PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))  # frames from here are the runner's
FOLLOW = "follow"              # a thread that writes for whichever cell runs (IPython's script magics)
DISPLAY_MAX = 32 * 1024 * 1024  # largest mime bundle of one display or result (characters, all formats)


class _OrderedStream:
    """sys.stdout/sys.stderr of the worker: before a write to the other stream than the last
    one, it waits until the supervisor has read everything written so far (a sync round trip
    on the control pipes), so stdout and stderr text of Python code arrive in write order. A
    thread started by an earlier cell writes to that cell's pipes instead (as Jupyter shows
    it in the cell that started it), so that it is not taken for the running cell's output."""

    def __init__(self, inner, name, worker):
        self._inner = inner
        self._name = name
        self._worker = worker

    def write(self, s):
        w = self._worker
        fd = w.thread_fd(self._name)
        if fd is not None:
            protocol.write_all(fd, s.encode("utf-8", "backslashreplace"))
            return len(s)
        if w.running and w.last_stream not in (None, self._name) and os.getpid() == w.pid:
            w.sync()
        w.last_stream = self._name
        return self._inner.write(s)

    def writelines(self, lines):
        for line in lines:
            self.write(line)

    def __getattr__(self, name):
        return getattr(self._inner, name)


class _Worker:
    """The Python interpreter that runs cells in one persistent __main__ namespace."""

    def __init__(self, ctrl_in, ctrl_out, entry):
        import builtins
        import warnings
        self.entry = entry
        self.ctrl_in = os.fdopen(ctrl_in, "rb", buffering=0)
        self.ctrl_out = ctrl_out
        self.pid = os.getpid()
        self.running = False
        self.last_stream = None
        self.sync_seq = 0
        self.text_cap = 1024 * 1024
        self.cell_n = None            # the cell that runs, or ran last
        self.follow_threads = 0       # > 0 while threads started are FOLLOW (runbox_runner.shell)
        self.last_error = None        # the last error sent (fields of its message), for IPython's history
        self.cell_error = False       # the running cell sent an error
        self.answering = False        # a question (kernel_requests) is being answered: SIGINT stops it
        self.reap_pending = set()     # killed children not collected yet (reap_zombies)
        self.cell_fds = {}            # n -> {1: fd, 2: fd}: the pipes of cell n, for its threads
        # Copies of the worker's own output pipes: fd 1/2 when a cell has no pipes of its own
        # (and after code that closed or replaced them), and where a thread of no known cell
        # writes.
        self.saved_fds = {}
        for fd in (1, 2):
            try:
                self.saved_fds[fd] = os.dup(fd)
            except OSError:
                pass
        sys.stdout = _OrderedStream(sys.stdout, "stdout", self)
        sys.stderr = _OrderedStream(sys.stderr, "stderr", self)
        from runbox_runner import shell
        self.shell_dir = shell.IPYTHON_DIR
        self.shell = shell.make_shell(self)
        main = self.shell.user_module
        main.__dict__["__builtins__"] = builtins
        sys.modules["__main__"] = main
        self.ns = main.__dict__
        # plt.show() cannot show anything with Agg; figures are sent at the end of the cell.
        warnings.filterwarnings("ignore", message=".*non-GUI backend.*")
        warnings.filterwarnings("ignore", message=".*is non-interactive, and thus cannot be shown.*")
        signal.signal(signal.SIGINT, self._on_sigint)
        self._track_threads()

    def _track_threads(self):
        """Every thread remembers the cell that started it (a thread started by a thread, its
        starter's): thread_fd sends its writes to that cell's pipes."""
        import threading
        worker, start = self, threading.Thread.start
        self.threading = threading

        def tracked_start(thread):
            parent = threading.current_thread()
            if worker.follow_threads:
                cell = FOLLOW
            elif parent is threading.main_thread():
                cell = worker.cell_n if worker.running else None
            else:
                cell = getattr(parent, "_runbox_cell", None)
            try:
                thread._runbox_cell = cell
            except AttributeError:
                pass
            return start(thread)

        tracked_start.__doc__ = start.__doc__
        threading.Thread.start = tracked_start

    def thread_fd(self, name):
        """For a write to stream name ("stdout"/"stderr") by a thread: the fd of the pipe of the
        cell that started the thread (the worker's own pipe when that cell is not known), even
        while that cell runs, so that a write racing the switch to the next cell's pipes still
        lands in its own cell's. None for the main thread: fd 1/2 through sys.stdout/stderr."""
        t = self.threading.current_thread()
        if t is self.threading.main_thread():
            return None
        cell = getattr(t, "_runbox_cell", None)
        if cell == FOLLOW:
            return None
        fd = 1 if name == "stdout" else 2
        own = self.cell_fds.get(cell, {}).get(fd)
        if own is not None:
            return own
        if cell is not None and cell == self.cell_n:
            return None  # the running cell has no pipes of its own
        return self.saved_fds.get(fd)

    def enter_cell(self, n, out, err):
        """Before cell n: its pipes (FIFOs out and err, opened by path) become fd 1/2, or the
        worker's own pipes when there are none; the pipes of earlier cells whose threads are all
        gone are closed (what the cells started may hold them still)."""
        opened = {}
        for fd, path in ((1, out), (2, err)):
            if isinstance(path, str):
                try:
                    opened[fd] = os.open(path, os.O_WRONLY | os.O_CLOEXEC)
                except OSError:
                    pass
        live = {getattr(t, "_runbox_cell", None) for t in self.threading.enumerate()}
        for k in [k for k in self.cell_fds if k not in live]:
            for fd in self.cell_fds.pop(k).values():
                os.close(fd)
        for fd in (1, 2):
            target = opened.get(fd)
            if target is None:
                target = self.saved_fds.get(fd)
            if target is not None:
                try:
                    os.dup2(target, fd)
                except OSError:
                    pass
        self.cell_fds[n] = opened
        self.cell_n = n

    def _on_sigint(self, signum, frame):
        if self.running or self.answering:
            raise KeyboardInterrupt

    def answer(self, msg):
        """A question between cells ({"ask": id, "kind", "content"}: kernel_requests), answered
        {"t": "answer", "id", "content"}; the supervisor interrupts one that takes too long."""
        from runbox_runner import kernel_requests
        content = None
        self.answering = True
        try:
            content = kernel_requests.answer(self.shell, msg.get("kind"), msg.get("content"))
        except KeyboardInterrupt:
            pass
        finally:
            self.answering = False
        if content is None:
            content = {"status": "error", "ename": "KeyboardInterrupt", "evalue": "the answer took too long",
                       "traceback": []}
        try:
            text = json.dumps({"t": "answer", "id": msg.get("ask"), "content": content}, default=str)
        except (TypeError, ValueError, RecursionError) as e:
            text = json.dumps({"t": "answer", "id": msg.get("ask"),
                               "content": {"status": "error", "ename": type(e).__name__, "evalue": str(e)[:1000],
                                           "traceback": []}})
        self.send(json.loads(text))

    def send(self, msg):
        if os.getpid() != self.pid:
            self.child_exit(1)
        for f in (sys.stdout, sys.stderr):
            try:
                f.flush()
            except Exception:
                pass
        protocol.write_all(self.ctrl_out, protocol.encode(msg))

    def sync(self):
        self.sync_seq += 1
        self.send({"t": "sync", "seq": self.sync_seq})
        while True:
            line = self.ctrl_in.readline()
            if not line:
                return
            try:
                if json.loads(line).get("ack") == self.sync_seq:
                    return
            except (ValueError, AttributeError):
                pass

    def child_exit(self, code):
        """A process forked by user code that ran off the end of its cell (or raised) must not
        go on as a second worker: it flushes its output and exits."""
        for f in (sys.stdout, sys.stderr):
            try:
                f.flush()
            except BaseException:
                pass
        os._exit(code)

    def repair_stdio(self):
        """Before each cell (after enter_cell, which put fd 1/2 back): sys.stdout/sys.stderr
        back to the runner's streams if earlier code closed or replaced them."""
        import io
        for name, fd in (("stdout", 1), ("stderr", 2)):
            cur = getattr(sys, name)
            if isinstance(cur, _OrderedStream) and not cur._inner.closed:
                continue
            try:
                raw = io.FileIO(fd, "w", closefd=False)
                inner = io.TextIOWrapper(raw, encoding="utf-8", errors="backslashreplace", write_through=True)
                setattr(sys, name, _OrderedStream(inner, name, self))
            except (OSError, ValueError):
                pass

    def reap_zombies(self, pids=()):
        """Collects the children the supervisor killed (it names them after an interrupted cell:
        their zombies would hold pids of the sandbox's limit). One that has not died yet (a
        killed fork bomb copy can take seconds) is tried again before each later cell. No other
        child is waited for: the user's own are the user's to wait for."""
        for pid in pids:
            ok = isinstance(pid, int) and not isinstance(pid, bool) and 1 < pid < (1 << 22)  # PID_MAX_LIMIT
            if ok and len(self.reap_pending) < 4096:
                self.reap_pending.add(pid)
        for pid in list(self.reap_pending):
            try:
                done, _ = os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                done = pid  # not ours (a grandchild: its reaper is the supervisor), or collected
            except OSError:
                continue
            if done == pid:
                self.reap_pending.discard(pid)

    def serve(self):
        self.send({"t": "hello", "pid": os.getpid()})
        while True:
            msg = None
            try:
                line = self.ctrl_in.readline()
            except KeyboardInterrupt:
                continue
            if not line:
                return
            try:
                msg = json.loads(line)
                if "ack" in msg:
                    msg = None  # a sync answer that came after its write was interrupted
                    continue
                if "n" not in msg:
                    if "ask" in msg:
                        self.answer(msg)
                    elif isinstance(msg.get("reap"), list):
                        self.reap_zombies(msg["reap"])
                    msg = None
                    continue
                if self.reap_pending:
                    self.reap_zombies()
                self.last_stream = None
                limit = msg.get("limit")
                if isinstance(limit, int) and not isinstance(limit, bool):
                    self.text_cap = max(TEXT_CAP_MIN, min(limit, TEXT_CAP_MAX))
                self.enter_cell(msg["n"], msg.get("out"), msg.get("err"))
                self.repair_stdio()
                if isinstance(msg.get("cwd"), str):
                    _change_dir(msg["cwd"])
                saved = _set_env(msg.get("env"))
                try:
                    self.run_cell(msg["n"], msg["code"])
                finally:
                    _restore_env(saved)
            except KeyboardInterrupt:
                # An interrupt that arrived just as a cell ended; the done was sent or is lost
                # and the supervisor copes with both.
                self.running = False
                if msg is not None:
                    try:
                        self.send({"t": "done", "n": msg["n"], "status": "error"})
                    except Exception:
                        pass

    def run_cell(self, n, code):
        import importlib
        # Packages installed while the session runs land in DEPS_SITE (runboxd's installer,
        # core/deps.c); finders that looked there before must look again.
        if DEPS_SITE not in sys.path:
            sys.path.insert(0, DEPS_SITE)
        importlib.invalidate_caches()
        self.cell_error = False
        try:
            try:
                self.shell.run_cell(code, store_history=True)  # running while its code runs (shell.run_code)
                if os.getpid() != self.pid:
                    self.child_exit(0)
            except BaseException as e:
                self.running = False
                if os.getpid() != self.pid:
                    self.child_exit(1)
                self.send_error(e, None)
            self.send_figures()
        finally:
            self.running = False
        self.send({"t": "done", "n": n, "status": "error" if self.cell_error else "completed"})

    def interrupted_before_start(self, n):
        """Whether the supervisor interrupted cell n before its code began (its SIGINT then found
        running False): it writes {"interrupt": n} to the command pipe before the signal, and
        nothing else is sent between a cell's command and its code. Asked by the shell each time
        the cell's code is about to run (shell.RunboxShell.run_code)."""
        import select
        fd = self.ctrl_in.fileno()
        while select.select([fd], [], [], 0)[0]:
            line = self.ctrl_in.readline()
            if not line:
                return False
            try:
                msg = json.loads(line)
            except ValueError:
                continue
            if isinstance(msg, dict) and msg.get("interrupt") == n:
                return True
        return False

    def bundle(self, data, what="output"):
        """A mime bundle as sent: string values only (a JSON value as its JSON text, bytes of a
        binary format in base64), text/plain
        clipped to the cell's cap (the marker names what was cut: PROTOCOL.md), any other text
        format past the cap left out (a cut HTML or JSON is no longer one), at most DISPLAY_MAX
        characters in all (a format past it is left out). The supervisor checks it again
        (forward)."""
        out, size = {}, 0
        if not isinstance(data, dict):
            return out
        for mime, value in data.items():
            if not isinstance(mime, str):
                continue
            if isinstance(value, (bytes, bytearray)):  # a _repr_png_ and the like: base64, as ipykernel sends it
                if mime in protocol.BINARY_MIMES:
                    import base64
                    value = base64.b64encode(value).decode("ascii")
                else:
                    value = bytes(value).decode("utf-8", "replace")
            elif not isinstance(value, str):
                try:
                    value = json.dumps(value)
                except (TypeError, ValueError):
                    continue
            if mime == "text/plain":
                value = protocol.clip(value, self.text_cap, what)
            elif mime not in protocol.BINARY_MIMES and not protocol.fits(value, self.text_cap):
                continue
            if size + len(value) > DISPLAY_MAX:
                continue
            size += len(value)
            out[mime] = value
        return out

    def send_result(self, data, metadata, str_value=None):
        """The value of the cell's last expression, as the display formatter gave it (and, when
        it is a str, the string itself: E2B shows that)."""
        if os.getpid() != self.pid:
            self.child_exit(0)
        bundle = self.bundle(data, "result")
        msg = {"t": "result", "text": bundle.get("text/plain", "")}
        if isinstance(str_value, str) and protocol.fits(str_value, self.text_cap):  # never a message past the cap
            msg["str"] = str_value
        if set(bundle) != {"text/plain"}:
            msg["data"] = bundle
        if metadata:
            msg["metadata"] = _plain(metadata)
        self.send(msg)

    def send_display(self, data, metadata, transient, update):
        """A display() output, its whole mime bundle (or update_display when update: the output
        shown under the same display_id is replaced)."""
        if os.getpid() != self.pid:
            self.child_exit(0)
        msg = {"t": "display", "data": self.bundle(data)}
        if metadata:
            msg["metadata"] = _plain(metadata)
        display_id = (transient or {}).get("display_id") if isinstance(transient, dict) else None
        if isinstance(display_id, str):
            msg["display_id"] = display_id
            if update:
                msg["update"] = True
        self.send(msg)

    def send_page(self, data, start):
        """What IPython's pager shows (shell._show_in_pager): a mime bundle and the line to start at."""
        start = start if isinstance(start, int) and not isinstance(start, bool) and start > 0 else 0
        self.send({"t": "page", "data": self.bundle(data, "page"), "start": start})

    def send_clear(self, wait):
        self.send({"t": "clear", "wait": wait})

    def send_error(self, e, stb, usage=False):
        """The exception that ended the cell: Python's traceback without the runner's and
        IPython's frames, and IPython's (coloured) one, STB, when it made one."""
        import traceback
        if os.getpid() != self.pid:
            if not isinstance(e, SystemExit):
                try:
                    te = traceback.TracebackException(type(e), e, e.__traceback__, compact=True)
                    self._drop_runner_frames(te, set())
                    sys.stderr.write("".join(te.format()))
                except BaseException:
                    pass
            self.child_exit(0 if isinstance(e, SystemExit) and not e.code else 1)
        self.cell_error = True
        cap = self.text_cap
        ename = "UsageError" if usage else type(e).__name__
        try:
            if usage:
                lines = ["UsageError: %s\n" % protocol.clip(str(e), cap // 2, "message")]
            else:
                te = traceback.TracebackException(type(e), e, e.__traceback__, compact=True)
                self._drop_runner_frames(te, set())
                lines = self._bounded_lines(te.format(), cap)
        except BaseException:
            lines = ["%s: <traceback formatting failed>\n" % ename]
        try:
            evalue = protocol.clip(str(e), cap // 4, "message")
        except BaseException:
            evalue = "<str() failed>"
        msg = {"t": "error", "ename": ename, "evalue": evalue, "traceback": lines}
        self.last_error = {"ename": ename, "evalue": evalue, "traceback": lines}
        if isinstance(stb, list) and all(isinstance(x, str) for x in stb):
            msg["ansi"] = self._bounded_lines(iter(stb), cap)
        self.send(msg)

    def _bounded_lines(self, gen, cap):
        """The traceback's lines within about cap characters (protocol.bounded_lines)."""
        return protocol.bounded_lines(gen, cap)

    def _drop_runner_frames(self, te, seen):
        import traceback
        if te is None or id(te) in seen:
            return
        seen.add(id(te))
        te.stack = traceback.StackSummary.from_list(
            [f for f in te.stack if not self._is_runner_file(f.filename)])

        self._drop_runner_frames(te.__cause__, seen)
        self._drop_runner_frames(te.__context__, seen)
        for sub in te.exceptions or ():
            self._drop_runner_frames(sub, seen)

    def _is_runner_file(self, filename):
        if filename.startswith("<") or not filename:
            return False
        path = os.path.abspath(filename)
        return path == self.entry or os.path.dirname(path) == PACKAGE_DIR or \
            path.startswith(self.shell_dir + os.sep)

    def send_figures(self):
        """The matplotlib figures left open, as the inline backend shows them at the end of a
        cell: each one's bundle from the display formatter (a PNG cut to the drawing, its
        text/plain), with the inline backend's metadata; then they are closed."""
        plt = sys.modules.get("matplotlib.pyplot")
        if plt is None:
            return
        try:
            try:
                from matplotlib_inline.backend_inline import _fetch_figure_metadata
            except Exception:
                _fetch_figure_metadata = None
            for num in plt.get_fignums():
                fig = plt.figure(num)
                data, metadata = self.shell.display_formatter.format(fig)
                if _fetch_figure_metadata is not None:
                    try:
                        extra = _fetch_figure_metadata(fig)
                    except Exception:
                        extra = None
                    if extra:
                        metadata = dict(metadata or {}, **{"image/png": extra})
                self.send_display(data, metadata, None, False)
            plt.close("all")
        except Exception as e:
            sys.stderr.write("runbox: could not render the figures: %s: %s\n" % (type(e).__name__, e))


def _change_dir(path):
    """A context's working directory, set before its first cell; a path that cannot be used is
    said on the cell's stderr and the worker stays where it is."""
    try:
        os.chdir(path)
    except OSError as e:
        print("cannot change to the context's directory %s: %s" % (path, e.strerror), file=sys.stderr)


def _set_env(env):
    """Sets the cell's own environment variables; returns what they were (None: unset)."""
    if not isinstance(env, dict):
        return {}
    saved = {}
    for k, v in env.items():
        if isinstance(k, str) and isinstance(v, str):
            saved[k] = os.environ.get(k)
            os.environ[k] = v
    return saved


def _restore_env(saved):
    for k, v in saved.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v


def _plain(value):
    """VALUE (display metadata) as JSON can carry it, or {}."""
    try:
        return json.loads(json.dumps(value, default=str))
    except (TypeError, ValueError, RecursionError):
        return {}


def seed_matplotlib():
    """Copies the font cache built at image build time into MPLCONFIGDIR (a tmpfs); the zygote
    (runbox_runner.zygote) does it before its imports."""
    seed = os.environ.get("RUNBOX_MPL_SEED")
    dest = os.environ.get("MPLCONFIGDIR")
    if not seed or not dest or not os.path.isdir(seed):
        return
    try:
        os.makedirs(dest, exist_ok=True)
        for name in os.listdir(seed):
            target = os.path.join(dest, name)
            if not os.path.exists(target):
                with open(os.path.join(seed, name), "rb") as src, open(target, "wb") as out:
                    out.write(src.read())
    except OSError:
        pass


def _first_to_go():
    """The worker (and what it starts), not the supervisor, is the one the OOM killer should
    choose. Done here, since the supervisor may run as another user (privilege separation)."""
    try:
        with open("/proc/self/oom_score_adj", "w") as f:
            f.write("1000")
    except OSError:
        pass


def main(argv, entry):
    """Runs the worker on the control pipes named by argv (command fd, control fd) until the
    command pipe closes; entry is the path of the entry script (its frames are the runner's)."""
    if len(argv) != 2 or not all(a.isdigit() for a in argv):
        sys.stderr.write("usage: runbox_worker.py COMMAND_FD CONTROL_FD (started by the runner's supervisor)\n")
        sys.exit(2)
    ctrl_in, ctrl_out = int(argv[0]), int(argv[1])
    os.set_inheritable(ctrl_in, False)
    os.set_inheritable(ctrl_out, False)
    _first_to_go()
    seed_matplotlib()
    _Worker(ctrl_in, ctrl_out, entry).serve()

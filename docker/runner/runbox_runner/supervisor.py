"""The supervisor: the sandbox container's main process, runboxd's side of the sandbox.

It reads JSON-line requests on stdin and writes JSON-line events on stdout (PROTOCOL.md); its
own diagnostics go to stderr. It runs user code in a worker process that holds the session's
state: a Python interpreter (runbox_worker.py, see python_worker) or a persistent interactive
bash (RUNBOX_LANGUAGE=bash, see bash_worker) or a Node.js process (javascript/typescript, see
js_worker.js); with RUNBOX_PRELOAD, Python workers are forked
from a zygote that imported those modules once (preload). The worker's fd 1/2 are pipes read here (so
subprocess output is captured too), its stdin is /dev/null, and a separate pipe pair carries
control messages (protocol); worker_process starts one worker and handles its pipes and signals,
and worker_keeper (the Supervisor's base class WorkerKeeper) starts, replaces and reaps the
workers and keeps the zygote.

The supervisor enforces the cell's timeout (SIGINT to the worker's process group, then after a
grace period SIGKILL and a fresh worker), the output cap (capture) and the optional code policy
(runbox_policy), and restarts a worker that dies (what it knows of the container around it is
in container). This module runs on the trusted side of the trust boundary: it never imports or
runs user code, and treats everything the worker sends as untrusted. It is not the worker:
python_worker runs in a process of its own and never imports this module. Python standard
library only; imports are kept lazy so that the runner starts fast.
"""

import json
import os
import signal
import sys
import time

from runbox_runner import asks, capture, contexts, forward, pipes, preload, protocol
from runbox_runner.container import (files_written, in_sandbox, make_undumpable, separate_privileges,
                                     workspace_snapshot)
from runbox_runner.protocol import write_all
from runbox_runner.worker_keeper import WorkerKeeper
from runbox_runner.worker_process import READ_SIZE, RUNNER_HOME

VERSION = 1
LANGUAGES = contexts.LANGUAGES
DEFAULT_MAX_OUTPUT = 1024 * 1024
CLEAR_AFTER_S = 0.5            # after an interrupt, the cell's other processes get this long
DRAIN_READS = 4                # reads per stream when draining the worker's pipes


def log(msg):
    try:
        os.write(2, ("runner: %s\n" % msg).encode("utf-8", "replace"))
    except OSError:
        pass


def _no_nul(obj):
    """obj with every NUL character in its strings replaced by U+FFFD."""
    if isinstance(obj, str):
        return obj.replace("\x00", "\ufffd")
    if isinstance(obj, list):
        return [_no_nul(v) for v in obj]
    if isinstance(obj, dict):
        return {k: _no_nul(v) for k, v in obj.items()}
    return obj


class Cell:
    """The running cell as the supervisor times it (its output budget is in capture)."""

    def __init__(self, rid, n, timeout, code, limit):
        self.id = rid
        self.n = n
        self.start = time.monotonic()
        self.timeout = timeout
        self.code = code              # until it is sent to the worker
        self.limit = limit
        self.sent = False             # the worker has it (a forked worker's pid may not be known yet)
        self.deadline = None          # its timeout runs from when it is sent
        self.kill_at = None
        self.clear_at = None          # when what the cell started is killed if it is still running
        self.forced = None            # "timeout" / "cancelled" once interrupted
        self.files_before = None      # workspace_snapshot() when the cell started
        self.pipes = None             # its output pipes (pipes.CellPipes), if it got any
        self.forward = None           # forward.CellForward: bounds of what the worker sends
        self.ctx = None               # the context (contexts.Ctx) it runs in
        self.env = None               # environment variables for this cell only


class Supervisor(WorkerKeeper):
    """The supervisor's state and its main loop; starting, replacing and reaping the workers and
    keeping the zygote are in WorkerKeeper (worker_keeper). The worker and what goes with it
    are the focused context's (contexts): the running cell's while one runs."""

    worker = contexts.ctx_attr("worker")
    language = contexts.ctx_attr("language")
    lost_state = contexts.ctx_attr("lost_state")
    worker_started = contexts.ctx_attr("worker_started")
    worker_failures = contexts.ctx_attr("worker_failures")
    oom_base = contexts.ctx_attr("oom_base")
    cmd_watched = contexts.ctx_attr("cmd_watched")

    def __init__(self, worker_user=None):
        """worker_user: (uid, gid) of the workers when privileges are separated, else None."""
        import selectors
        self.worker_user = worker_user
        language = os.environ.get("RUNBOX_LANGUAGE", "python").strip().lower() or "python"
        if language not in LANGUAGES:
            log("unknown RUNBOX_LANGUAGE %r; using python" % language)
            language = "python"
        self.main = contexts.Ctx("", language)
        self.ctx = self.main          # the context in focus
        self.contexts = {"": self.main}
        grace = os.environ.get("RUNBOX_GRACE_MS", "")
        try:
            self.grace = max(0, int(grace)) / 1000.0 if grace else 2.0
        except ValueError:
            self.grace = 2.0
        self.env = dict(os.environ)
        self.env.setdefault("MPLBACKEND", "Agg")
        self.env["PYTHONUNBUFFERED"] = "1"
        self.env.pop("RUNBOX_GRACE_MS", None)
        self.sel = selectors.DefaultSelector()
        self.out = sys.stdout.fileno()
        self.inbuf = b""
        self.stdin_eof = False
        self.cell = None
        self.n = 0
        self.capture = capture.Capture(self.emit)
        self.asks = asks.Asks(self.emit)  # questions between cells (complete, inspect, ...)
        self.pipes = pipes.Pipes(lambda fd: self.sel.register(fd, 1), self.sel.unregister, self.end_source,
                                 shared=worker_user is not None)
        # The preload (RUNBOX_PRELOAD, python only): Python workers are forked from a zygote that
        # imported it (preload.py). `warming` until the first interpreter is up (PROTOCOL.md).
        self.preload = preload.names(os.environ) if self.language == "python" else []
        # RUNBOX_PRELOAD_LAZY=1 (runboxd's cold path): the first interpreter starts the plain way
        # and the zygote only at the first reset, so that a burst of new sandboxes does not spend
        # seconds of CPU each on imports their first cells may not need.
        self.preload_lazy = os.environ.get("RUNBOX_PRELOAD_LAZY") == "1"
        self.zygote = None
        self.zygote_failures = 0
        self.shadows = preload.Shadows()
        self.warming = bool(self.preload) and not self.preload_lazy
        self.started = time.monotonic()

    # ---- output to runboxd ----
    def emit(self, obj):
        text = json.dumps(obj, ensure_ascii=False)
        if "\\u0000" in text:
            text = json.dumps(_no_nul(obj), ensure_ascii=False)
        write_all(self.out, (text + "\n").encode("utf-8", "replace"))

    # ---- the cell to the worker ----
    def dispatch(self):
        """Sends the waiting cell to the worker once its pid is known. A worker forked from the
        zygote that has run nothing yet is first replaced by a plain one if the session's own
        packages now shadow the preload (installed at session creation)."""
        cell, w = self.cell, self.worker
        if cell is None or cell.sent or cell.ctx is not self.ctx or w is None or w.pid is None:
            return
        if w.zygote is not None and w.cells == 0 and self.preload_shadowed(w.zygote):
            self.stop_worker()
            self.start_worker()  # plain now: dispatches
            return
        cell.sent = True
        if cell.timeout and (w.hello or self.language not in ("javascript", "typescript")):
            # A Node.js worker that has not said hello is still starting (seconds on a busy
            # host, plus the TypeScript compiler); a SIGINT then would end it: its cell's
            # timeout starts at the hello (on_ctrl).
            cell.deadline = time.monotonic() + cell.timeout
        w.cells += 1
        code, cell.code = cell.code, None
        # A context's working directory is set by its worker's first cell; env holds for this cell.
        cwd = self.ctx.cwd if w.cells == 1 else None
        w.execute(cell.n, code, cell.limit, cell.pipes and cell.pipes.paths, cwd=cwd, env=cell.env)

    # ---- output handling ----
    def read_stream(self, fd):
        """Reads one chunk from an output pipe; returns False at EOF or when nothing was there."""
        src = self.pipes.get(fd)
        if src is None:
            return False
        try:
            data = os.read(fd, READ_SIZE)
        except BlockingIOError:
            return False
        except OSError:
            data = b""
        if not data:
            self.end_source(src)
            if src.cell is None:
                self.pipes.drop_worker(fd)
            else:
                self.pipes.forget(fd)
            return False
        owner = self.worker_of_fd(fd) if src.cell is None else None
        if owner is not None and owner.worker.startup is not None:
            data = owner.worker.startup.filter(src.name, data)
            if not data:
                return True
        cell = self.cell
        if cell is not None and (src.cell is cell or (src.cell is None and cell.pipes is None and owner is cell.ctx)):
            self.capture.take(src.name, data)
        else:
            # Not the running cell's pipe: a thread or process of an earlier cell wrote it.
            self.capture.take_foreign(src.foreign, src.name, data)
        return True

    def worker_of_fd(self, fd):
        """The context whose worker's own stdout or stderr fd is, or None."""
        for ctx in self.contexts.values():
            w = ctx.worker
            if w is not None and fd in (w.out_fd, w.err_fd):
                return ctx
        return None

    def end_source(self, src):
        """An output pipe will be read no more: the last line of an earlier cell goes out."""
        if src is not None:
            self.capture.end_foreign(src.foreign, src.name)

    def drain(self):
        for fd in self.pipes.fds():
            # What the worker wrote before its last message is in the pipe (at most READ_SIZE);
            # more reads would chase writers that never stop (the copies of a fork bomb).
            for _ in range(DRAIN_READS):
                if not self.read_stream(fd):
                    break

    # ---- requests ----
    def handle_line(self, line):
        try:
            req = json.loads(line)
        except ValueError as e:
            self.emit({"type": "error_reply", "id": None, "message": "invalid JSON: %s" % e})
            return
        if not isinstance(req, dict):
            self.emit({"type": "error_reply", "id": None, "message": "a request must be a JSON object"})
            return
        rid = req.get("id")
        op = req.get("op")
        if op == "ping":
            if req.get("claim") is True:
                self.claimed()
            # "busy" names a cell still running, e.g. one whose runboxd restarted: the new
            # runboxd interrupts it and waits for its "done" before sending work.
            # "warming": the first interpreter is still importing the preload (a warm pool
            # entry is ready at the "warm" event).
            m = self.main.worker
            self.emit({"type": "pong", "id": rid, "language": self.main.language, "version": VERSION,
                       "worker_pid": m.pid if m else None, "contexts": sorted(k for k in self.contexts if k),
                       "busy": self.cell.id if self.cell is not None else None, "warming": self.warming})
        elif op == "execute":
            self.handle_execute(rid, req)
        elif op == "ask":
            self.asks.ask(self, rid, req)
        elif op == "interrupt":
            if self.cell is not None and self.cell.id == rid and self.cell.forced is None:
                self.ctx = self.cell.ctx
                self.interrupt("cancelled")
        elif op == "close_context":
            self.close_context(req.get("context"))
        else:
            self.emit({"type": "error_reply", "id": rid, "message": "unknown op %r" % (op,)})

    def handle_execute(self, rid, req):
        code = req.get("code")
        timeout = req.get("timeout")
        max_output = req.get("max_output", DEFAULT_MAX_OUTPUT)
        if not isinstance(code, str):
            self.emit({"type": "error_reply", "id": rid, "message": "execute needs a string 'code'"})
            return
        if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, (int, float))
                                    or timeout < 0):
            self.emit({"type": "error_reply", "id": rid, "message": "'timeout' must be a number of seconds >= 0"})
            return
        if max_output is None:
            max_output = DEFAULT_MAX_OUTPUT
        if isinstance(max_output, bool) or not isinstance(max_output, int) or max_output < 0:
            self.emit({"type": "error_reply", "id": rid, "message": "'max_output' must be an integer >= 0"})
            return
        if self.cell is not None:
            self.refuse(rid, "RunnerBusy", "another execution is running")
            return
        try:
            key, language, cwd = contexts.parse_context(req.get("context"))
            env = contexts.parse_env(req.get("env"))
        except ValueError as e:
            self.refuse(rid, "BadRequest", str(e))
            return
        ctx = self.contexts.get(key)
        if ctx is not None and language is not None and ctx.language != language:
            self.refuse(rid, "ContextLanguage", "context %r runs %s, not %s" % (key, ctx.language, language))
            return
        if ctx is None and len(self.contexts) >= contexts.MAX_CONTEXTS:
            self.refuse(rid, "TooManyContexts", "this sandbox holds %d contexts already; remove one first"
                        % contexts.MAX_CONTEXTS)
            return
        fresh = ctx is None
        if fresh:
            ctx = self.contexts[key] = contexts.Ctx(key, language, cwd)
        self.ctx = ctx
        if req.get("restart") is True:
            # Not code: a fresh interpreter in place of this one, its variables gone (Jupyter's
            # restart). Cells that follow wait for it as they wait after a timeout's reset.
            started = time.monotonic()
            if fresh:
                self.start_worker()
            else:
                self.replace_worker()
            self.emit({"type": "done", "id": rid, "status": "completed", "reset": True,
                       "reset_reason": "the interpreter was restarted on request; its variables are gone",
                       "duration_ms": int((time.monotonic() - started) * 1000), "dropped": 0,
                       "files_written": []})
            return
        if self.language == "python" and not self.policy_allows(rid, code, req.get("policy")):
            if fresh:
                del self.contexts[key]
                self.ctx = self.main
            return
        self.n += 1
        self.cell = Cell(rid, self.n, timeout, code, max_output)
        self.cell.ctx = ctx
        self.cell.env = env
        self.capture.start(rid, max_output)
        self.cell.forward = forward.CellForward(max_output)
        self.cell.files_before = workspace_snapshot()
        self.cell.pipes = self.pipes.open_cell(self.cell)
        if fresh:
            self.start_worker()  # dispatches once it is there
        else:
            self.dispatch()

    def refuse(self, rid, ename, evalue):
        """Answers an execute that runs nothing with an error and its done."""
        self.emit({"type": "error", "id": rid, "ename": ename, "evalue": evalue, "traceback": []})
        self.emit({"type": "done", "id": rid, "status": "error", "reset": False, "reset_reason": None,
                   "duration_ms": 0, "dropped": 0, "files_written": []})

    def close_context(self, key):
        """Ends a context runboxd removed: its worker is killed and its state gone; the cell it
        runs, if any, ends cancelled. The main context cannot be closed."""
        ctx = self.contexts.get(key) if isinstance(key, str) and key else None
        if ctx is None:
            return
        self.ctx = ctx
        if self.cell is not None and self.cell.ctx is ctx:
            self.drain()
            self.stop_worker()
            self.finish_cell(self.cell.forced or "cancelled", True, "its context was removed")
        else:
            self.stop_worker()
        del self.contexts[key]
        self.ctx = self.main

    # ---- optional code policy (runbox_policy.py beside the entry scripts) ----
    def policy_allows(self, rid, code, policy):
        """Checks a Python cell against the request's rule set ({"rules": [names]}; absent, null
        or no rules: nothing to check). A refused cell never reaches the worker: the answer is an
        error PolicyViolation (or PolicyError when the rule set itself is unusable) and a done
        with status error. The check runs here in the supervisor, out of the user's reach."""
        if policy is None:
            return True
        started = time.monotonic()
        ename = "PolicyError"
        try:
            rules = policy.get("rules") if isinstance(policy, dict) else None
            if not isinstance(rules, list):
                raise ValueError("'policy' must be an object like {\"rules\": [\"import:os\"]}")
            if not rules:
                return True
            if RUNNER_HOME not in sys.path:
                sys.path.insert(0, RUNNER_HOME)
            import runbox_policy
            try:
                found = runbox_policy.check(code, rules)
            except (RecursionError, MemoryError) as e:
                raise ValueError("the cell is too deeply nested or too large to be checked (%s)"
                                 % type(e).__name__) from None
            if not found:
                return True
            ename = "PolicyViolation"
            evalue, tb = runbox_policy.report(code, found, "<cell-%d>" % (self.n + 1))
        except Exception as e:  # an unusable rule set refuses the cell (fail closed)
            evalue = "the code policy could not be applied: %s" % e
            tb = ["%s: %s\n" % (ename, evalue)]
        self.emit({"type": "error", "id": rid, "ename": ename, "evalue": evalue, "traceback": tb})
        self.emit({"type": "done", "id": rid, "status": "error", "reset": False, "reset_reason": None,
                   "duration_ms": int((time.monotonic() - started) * 1000), "dropped": 0, "files_written": []})
        return False

    def interrupt(self, status):
        cell = self.cell
        if not cell.sent:
            # The worker never got it (a fresh interpreter was still on its way): nothing to stop.
            cell.forced = status
            self.finish_cell(status)
            return
        cell.forced = status
        self.worker.before_interrupt(cell.n)
        # The message goes into the pipe before the signal: a worker that gets the SIGINT before
        # its cell's code runs finds the message when it starts it.
        self.worker.flush_commands()
        if self.worker.hello or self.language not in ("javascript", "typescript"):
            self.signal_interrupt(cell)  # else at the hello: Node.js dies of a SIGINT while it starts

    def signal_interrupt(self, cell):
        cell.kill_at = time.monotonic() + self.grace
        cell.clear_at = time.monotonic() + min(CLEAR_AFTER_S, self.grace / 2)
        self.worker.signal_group(signal.SIGINT)
        self.worker.after_interrupt(cell.n)

    # ---- cell end ----
    def finish_cell(self, status, reset=False, reason=None):
        cell = self.cell
        self.capture.finish_decoders()
        self.capture.end_cell_foreign()
        self.capture.flush_all()
        if self.lost_state and not reset:
            reset, reason = True, self.lost_state
        self.lost_state = None
        self.emit({"type": "done", "id": cell.id, "status": status, "reset": reset,
                   "reset_reason": reason, "duration_ms": int((time.monotonic() - cell.start) * 1000),
                   "dropped": self.capture.dropped() + cell.forward.dropped,
                   "files_written": files_written(cell.files_before)})
        if cell.pipes is not None:
            self.pipes.close_cell(cell.pipes)
        self.cell = None
        self.capture.stop()

    def on_ctrl(self, msg):
        t = msg.get("t")
        w = self.worker
        mine = self.cell is not None and self.cell.ctx is self.ctx
        if t == "hello":
            if not w.hello and mine and self.cell.sent and self.cell.timeout:
                # The cell's timeout counts from when the interpreter has it: one sent while a
                # fresh interpreter was still loading (a TypeScript worker loads the compiler
                # first) starts now. Only the first hello counts; later ones are user code's.
                self.cell.deadline = time.monotonic() + self.cell.timeout
            w.hello = True
            if mine and self.cell.forced is not None and self.cell.kill_at is None:
                self.signal_interrupt(self.cell)  # interrupted while Node.js was starting
            self.worker_failures = 0
            if self.warming and self.ctx is self.main:
                self.warming = False
                z = w.zygote
                failed = z.ready.get("failed") if z is not None and isinstance(z.ready, dict) else None
                loaded = [n for n in self.preload if not (isinstance(failed, dict) and n in failed)] if z else []
                self.emit({"type": "warm", "preload": loaded,
                           "ms": int((time.monotonic() - self.started) * 1000)})
            return
        if t == "sync":
            seq = msg.get("seq")
            if isinstance(seq, int) and not isinstance(seq, bool):
                w.send_bytes(protocol.encode({"ack": seq}), droppable=True)  # output was drained first
            return
        if t == "answer":
            self.asks.answered(msg)
            return
        cell = self.cell
        if not mine:
            return
        if t == "done":
            if msg.get("n") != cell.n:
                return  # a stale done (bash after an interrupt)
            if self.language == "bash":
                rc = msg.get("rc", 0)
                status = "completed"
                if rc != 0:
                    status = "error"
                    fields = cell.forward.error({"ename": "ExitCode", "evalue": str(rc), "traceback": []})
                    if cell.forced is None and fields is not None:
                        self.capture.flush_all()
                        self.emit(dict(fields, type="error", id=cell.id))
            else:
                status = msg.get("status")
                if status not in ("completed", "error"):
                    status = "error"
            if cell.forced is not None:
                w.kill_group_except_leader()
                w.collect_children()
            self.finish_cell(cell.forced or status)
            return
        take = {"result": cell.forward.result, "display": cell.forward.display, "error": cell.forward.error,
                "page": cell.forward.page, "clear": cell.forward.clear}.get(t)
        fields = take(msg) if take is not None else None
        if fields is None:
            return
        self.capture.finish_decoders()
        self.capture.flush_all()
        self.emit(dict(fields, type="clear_output" if t == "clear" else t, id=cell.id))

    # ---- main loop ----
    def run(self):
        make_undumpable()
        # User code can signal PID 1 (docker-init forwards SIGTERM here) or this process: neither
        # may end the session. The container ends when its stdin closes or runboxd removes it
        # (SIGKILL); `docker stop` takes its grace period.
        signal.signal(signal.SIGTERM, (lambda s, f: sys.exit(0)) if not in_sandbox() else (lambda s, f: None))
        if in_sandbox():
            # The same for the other signals whose default is to end the process. Handlers, not
            # SIG_IGN, which the worker would inherit; SIGPIPE then shows as EPIPE on a write.
            for name in ("SIGHUP", "SIGQUIT", "SIGUSR1", "SIGUSR2", "SIGALRM", "SIGVTALRM", "SIGPROF", "SIGPIPE",
                         "SIGIO", "SIGPWR", "SIGSYS", "SIGTRAP", "SIGXCPU", "SIGXFSZ", "SIGSTKFLT"):
                sig = getattr(signal, name, None)
                if sig is not None:
                    try:
                        signal.signal(sig, lambda s, f: None)
                    except (OSError, ValueError):
                        pass
        # A handler, not SIG_IGN: an ignored SIGINT would be inherited by the worker's children.
        signal.signal(signal.SIGINT, lambda s, f: None)
        if not in_sandbox():
            signal.signal(signal.SIGPIPE, signal.SIG_DFL)
        if self.preload:
            # The zygote's workers are forked from a child that exits at once: they become ours.
            preload.become_subreaper()
        self.start_worker()
        self.emit({"type": "ready", "language": self.language, "version": VERSION})
        stdin = sys.stdin.fileno()
        os.set_blocking(stdin, False)
        self.sel.register(stdin, 1)
        try:
            while not self.stdin_eof or self.cell is not None:
                self.step(stdin)
        finally:
            for ctx in list(self.contexts.values()):
                self.ctx = ctx
                self.stop_worker()
            self.drop_zygote()
            self.pipes.cleanup()

    def watch_commands(self):
        """Selects each worker's command pipe for writing while commands wait for it."""
        for ctx in self.contexts.values():
            w = ctx.worker
            want = w.cmd_fd if w is not None and w.cmd_pending else None
            if want != ctx.cmd_watched:
                if ctx.cmd_watched is not None:
                    self.sel.unregister(ctx.cmd_watched)
                if want is not None:
                    self.sel.register(want, 2)  # EVENT_WRITE
                ctx.cmd_watched = want

    def step(self, stdin):
        now = time.monotonic()
        cell = self.cell
        timeout = 1.0
        for t in (cell and cell.deadline if cell and not cell.forced else None,
                  cell and cell.kill_at, cell and cell.clear_at, self.capture.flush_at(), self.asks.deadline()):
            if t:
                timeout = min(timeout, max(0.0, t - now))
        if cell is not None:
            timeout = min(timeout, 0.1)  # notice a dead worker even if a child holds its pipes
        self.watch_commands()
        events = self.sel.select(timeout)
        ctrl, cmd = {}, {}
        for ctx in self.contexts.values():
            if ctx.worker is not None:
                ctrl[ctx.worker.ctrl_fd] = ctx
                cmd[ctx.worker.cmd_fd] = ctx
        ctrl_msgs = []
        for key, _ in events:
            fd = key.fd
            if fd == stdin:
                self.read_requests(stdin)
            elif fd in ctrl and ctrl[fd].worker is not None and ctrl[fd].worker.ctrl_fd == fd:
                ctrl_msgs.extend((ctrl[fd], m) for m in ctrl[fd].worker.read_ctrl())
            elif fd in cmd and cmd[fd].worker is not None and cmd[fd].worker.cmd_fd == fd:
                cmd[fd].worker.flush_commands()
            elif self.zygote is not None and fd == self.zygote.fileno():
                self.ctx = self.main  # only the main context's workers come from the zygote
                self.on_zygote()
            else:
                self.read_stream(fd)
        if ctrl_msgs:
            self.drain()
            for ctx, msg in ctrl_msgs:
                if ctx.worker is not None and self.contexts.get(ctx.key) is ctx:
                    self.ctx = ctx
                    self.on_ctrl(msg)
        self.reap()
        if self.zygote is not None and self.zygote.overdue(time.monotonic()):
            self.ctx = self.main
            self.zygote_failed("it did not answer in time")
        for ctx in list(self.contexts.values()):
            w = ctx.worker
            if w is not None and (w.exit_status is not None or w.ctrl_eof):
                if w.ctrl_eof:
                    try:
                        self.sel.unregister(w.ctrl_fd)
                    except (KeyError, ValueError):
                        pass
                self.ctx = ctx
                self.worker_gone()
                return
        now = time.monotonic()
        cell = self.cell
        if self.asks.pending:
            self.asks.check(now, self.worker, cell is not None and cell.sent)
        if cell is not None:
            self.ctx = cell.ctx
            w = self.worker
            if cell.forced is None and cell.deadline is not None and now >= cell.deadline:
                self.interrupt("timeout")
            elif cell.clear_at is not None and now >= cell.clear_at:
                # The processes the cell started had their SIGINT; if they are still there (a
                # fork bomb forks on), they go, so that the interpreter gets the CPU to stop.
                cell.clear_at = None
                w.kill_group_except_leader()
            elif cell.kill_at is not None and now >= cell.kill_at:
                # The cell's answer goes first: a new interpreter may wait for pids and memory
                # (START_RETRY_S: the killed copies of a fork bomb die slowly), and runboxd, which
                # hears nothing meanwhile, would give up on the sandbox.
                self.drain()
                self.stop_worker()
                self.finish_cell(cell.forced, True,
                                 "the code did not stop within %g s of the interrupt; the interpreter was "
                                 "restarted and its variables are lost" % self.grace)
                self.replace_worker()
                return
        self.capture.flush_if_due(now)

    def read_requests(self, stdin):
        try:
            data = os.read(stdin, READ_SIZE)
        except BlockingIOError:
            return
        if not data:
            self.stdin_eof = True
            self.sel.unregister(stdin)
            if self.inbuf.strip():
                self.handle_line(self.inbuf)
            self.inbuf = b""
            return
        self.inbuf += data
        while True:
            i = self.inbuf.find(b"\n")
            if i < 0:
                break
            line, self.inbuf = self.inbuf[:i], self.inbuf[i + 1:]
            if line.strip():
                self.handle_line(line)


def main():
    """Runs the supervisor until its stdin closes and the last cell is over."""
    worker_user = separate_privileges()
    # Keep the protocol stream private: nothing but the supervisor writes to the real stdout.
    out = os.dup(1)
    os.dup2(2, 1)
    sup = Supervisor(worker_user)
    sup.out = out
    sup.run()

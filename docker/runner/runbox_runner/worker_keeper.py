"""The supervisor's keeping of its workers: which one comes next, and its end.

Runs on the trusted side, inside the supervisor: WorkerKeeper is a base class of
supervisor.Supervisor and holds the part of it that starts, stops, replaces and reaps the
worker process (one per context, the focused context's: contexts; worker_process.WorkerProc starts it and
holds its pipes) and
keeps the zygote (preload): a Python worker is forked from the zygote while it is usable, else
started the plain way. A zygote that dies, hangs, answers nonsense or whose preload the session's
own packages shadow is given up; after ZYGOTE_TRIES, fresh interpreters start without the
preload. A worker that cannot be started (no pids left, no memory) is retried for START_RETRY_S
while stray processes are killed and collected; a worker that ends is described in plain words
(container) and replaced. It uses the state Supervisor.__init__ sets (worker, zygote, sel,
pipes, capture, cell, ...) and calls back into the supervisor to send the waiting cell
(dispatch), to drain the worker's output (drain, end_source) and to end the cell (finish_cell).
It never imports or runs user code, and imports nothing of supervisor.
"""

import os
import signal
import time

from runbox_runner import preload
from runbox_runner.container import describe_exit, in_sandbox, kill_strays, oom_kills
from runbox_runner.worker_process import WORKER_ENTRY, WorkerProc, lowest_cpu_priority

ZYGOTE_TRIES = 3               # zygotes that may fail before fresh interpreters start without the preload
START_RETRY_S = 20.0           # how long a new interpreter that cannot be started (no pids, memory) is retried


def log(msg):
    try:
        os.write(2, ("runner: %s\n" % msg).encode("utf-8", "replace"))
    except OSError:
        pass


class WorkerKeeper:
    """The worker and zygote handling of the Supervisor, its subclass (which sets the state and
    has dispatch, drain, end_source and finish_cell)."""

    # ---- starting a worker ----
    def start_worker(self):
        give_up = time.monotonic() + START_RETRY_S
        while True:
            try:
                self.worker = self.new_worker()
                break
            except OSError as e:
                # Out of processes (a fork bomb) or memory: free them and try again. The killed
                # copies of a bomb hold their pids until they are collected, and the supervisor,
                # their subreaper, collects most of them; each one may take seconds to die.
                log("cannot start the interpreter: %s" % e)
                if time.monotonic() >= give_up:
                    raise SystemExit("runner: cannot start the interpreter: %s" % e)
                if in_sandbox():
                    self.kill_strays()
                time.sleep(0.1)
                self.reap()
        self.oom_base = oom_kills()
        self.worker_started = time.monotonic()
        self.capture.reset_decoders()
        self.sel.register(self.worker.ctrl_fd, 1)  # EVENT_READ
        self.pipes.add_worker(self.worker.out_fd, "stdout")
        self.pipes.add_worker(self.worker.err_fd, "stderr")
        self.dispatch()

    def new_worker(self):
        """A worker forked from the zygote when there is a usable one, else one started here."""
        z = self.usable_zygote() if self.ctx is self.main else None  # other contexts start plain
        if z is not None:
            try:
                return WorkerProc(self.language, self.env, self.worker_user, zygote=z)
            except OSError as e:
                self.zygote_failed("cannot ask it for an interpreter (%s)" % e)
        return WorkerProc(self.language, self.env, self.worker_user)

    # ---- the zygote ----
    def usable_zygote(self):
        """The zygote (started when there is none), or None: no preload, it failed too often, or
        packages installed into the session have the names of modules it imported (a worker
        forked from it would give the user the image's version of them)."""
        if not self.preload or self.preload_lazy or self.zygote_failures >= ZYGOTE_TRIES:
            return None
        z = self.zygote
        if z is not None and z.dead:
            self.zygote_failed("it exited")
            return self.usable_zygote()
        if self.preload_shadowed(z):
            return None
        if z is None:
            try:
                z = preload.Zygote(WORKER_ENTRY, self.env, self.worker_user, lowest_cpu_priority)
            except OSError as e:
                log("cannot start the zygote: %s" % e)
                self.zygote_failures += 1
                return None
            self.zygote = z
            self.sel.register(z.fileno(), 1)
        return z

    def claimed(self):
        """runboxd handed this sandbox to a session (the ping of a warm pool sandbox's claim). If
        the first interpreter still waits for the zygote's imports (runboxd hands out a warm
        sandbox whose preload is slow on a busy host), no cell may wait for them (issue 41): the
        zygote goes, the first interpreter starts the plain way now, and the preload comes back
        from the first reset on, as in a sandbox made for a session (RUNBOX_PRELOAD_LAZY)."""
        w, z = self.worker, self.zygote
        if w is None or w.zygote is None or w.pid is not None or w.cells or z is None or z.ready is not None:
            return
        log("claimed while the preload is still importing: the first interpreter starts without it")
        self.stop_worker()
        self.drop_zygote()
        self.preload_lazy = True
        self.start_worker()

    def preload_shadowed(self, z):
        """Whether the session's own packages shadow the preload; then the zygote is given up."""
        mods = z.modules if z is not None and z.ready is not None else frozenset(
            n.partition(".")[0] for n in self.preload)
        found = self.shadows.check(mods)
        if not found:
            return False
        log("packages installed into the session (%s) have the names of preloaded modules; fresh interpreters "
            "start without the preload" % ", ".join(found[:10]))
        self.zygote_failures = ZYGOTE_TRIES
        self.drop_zygote()
        return True

    def drop_zygote(self):
        z = self.zygote
        if z is None:
            return
        self.zygote = None
        try:
            self.sel.unregister(z.fileno())
        except (KeyError, ValueError, OSError):
            pass
        z.kill()

    def zygote_failed(self, reason):
        """The zygote is given up (dead, hung, nonsense); after ZYGOTE_TRIES, for good."""
        self.zygote_failures += 1
        log("the zygote failed: %s%s" % (reason, "; fresh interpreters start without the preload"
                                                  if self.zygote_failures >= ZYGOTE_TRIES else ""))
        self.drop_zygote()
        w = self.worker
        if w is not None and w.zygote is not None and w.pid is None:
            # Its worker will not come: another one, the plain way if need be (nothing was lost).
            self.stop_worker()
            self.start_worker()

    def on_zygote(self):
        z = self.zygote
        for msg in z.read():
            t = msg.get("t")
            if t == "ready":
                failed = msg.get("failed")
                if isinstance(failed, dict) and failed:
                    log("preload: could not import %s" % "; ".join("%s (%s)" % (str(k)[:100], str(v)[:300])
                                                               for k, v in list(failed.items())[:10]))
            elif t in ("forked", "failed"):
                w = self.worker
                if w is not None and w.zygote is z and w.pid is None and msg.get("seq") == w.seq:
                    pid = z.take_pid(msg) if t == "forked" else None
                    if pid is None:
                        self.zygote_failed(str(msg.get("error"))[:300] if t == "failed" else
                                           "it named a process that is not a fresh interpreter")
                        return
                    self.attach(w, pid)
                elif t == "forked":
                    self.kill_stale(msg.get("pid"))
        if z.dead and self.zygote is z:
            self.zygote_failed("it exited")

    def attach(self, w, pid):
        """The forked worker's pid is known: it can be signalled, and the waiting cell goes."""
        w.pid = pid
        w.seq = None
        self.dispatch()

    def kill_stale(self, pid):
        """A worker forked for a request nobody waits for any more: killed if it is ours."""
        if isinstance(pid, int) and not isinstance(pid, bool) and pid > 1 and \
                preload.is_our_worker(pid, self.worker_user):
            try:
                os.killpg(pid, signal.SIGKILL)
            except OSError:
                pass

    # ---- stopping and replacing a worker ----
    def kill_strays(self):
        """Kills what escaped the focused worker, sparing the zygote and the other contexts'
        workers with their process groups."""
        groups = tuple(c.worker.pid for c in self.contexts.values()
                       if c is not self.ctx and c.worker is not None and c.worker.pid is not None)
        kill_strays(spare=(self.zygote.pid,) if self.zygote is not None and not self.zygote.dead else (),
                    groups=groups)

    def stop_worker(self):
        """Kills the worker and its process group and forgets it, without waiting for it to
        exit: reap() collects it. A killed process may take seconds to die: the copies of a fork
        bomb forked from a zygote's big interpreter share one anon_vma tree, and each fork and
        exit locks its root, so the worker sat in the kernel (D state, unlink_anon_vmas) for
        4 s and more on a busy host, and a blocking waitpid here kept the cell's done from
        runboxd until it gave up on the sandbox."""
        self.asks.drop_all("the interpreter was replaced before it answered")
        w = self.worker
        if w is None:
            return
        if w.pid is not None:
            w.signal_group(signal.SIGKILL)
            try:
                os.kill(w.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        elif w.zygote is not None and w.zygote.pending is not None and w.zygote.pending[0] == w.seq:
            w.zygote.pending = None   # what it forks for this request is killed when it answers
        try:
            self.sel.unregister(w.ctrl_fd)
        except (KeyError, ValueError):
            pass
        if self.cmd_watched is not None:
            self.sel.unregister(self.cmd_watched)
            self.cmd_watched = None
        for fd in (w.out_fd, w.err_fd):
            self.end_source(self.pipes.get(fd))
            self.pipes.drop_worker(fd)
        w.close()
        self.worker = None

    def replace_worker(self):
        self.preload_lazy = False  # from the first reset on, interpreters come from the zygote
        self.stop_worker()
        if in_sandbox():
            self.kill_strays()
            self.reap()
        quick = time.monotonic() - self.worker_started < 1.0
        self.worker_failures = self.worker_failures + 1 if quick else 0
        if self.worker_failures > 3:
            time.sleep(min(5.0, 0.2 * self.worker_failures))
        self.start_worker()

    def reap(self):
        """Collects exited children (the runner may be PID 1); notes the worker's status."""
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            for ctx in self.contexts.values():
                if ctx.worker is not None and pid == ctx.worker.pid:
                    ctx.worker.exit_status = os.waitstatus_to_exitcode(status)
            if self.zygote is not None and pid == self.zygote.pid:
                self.zygote.exit_status = os.waitstatus_to_exitcode(status)

    def worker_gone(self):
        """The worker exited or closed its control pipe."""
        w = self.worker
        self.drain()
        if w.cells == 0:
            # It never got a cell: nothing of the user's was lost. One forked from the zygote
            # that did not come up counts against the zygote.
            if w.zygote is not None and not w.hello:
                self.stop_worker()
                self.zygote_failed("its interpreter ended before it started (%s)"
                                   % describe_exit(w.exit_status))
                if self.worker is None:
                    self.start_worker()
            else:
                self.replace_worker()
            return
        # The control pipe closes a moment before the process can be reaped.
        give_up = time.monotonic() + 1.0
        while w.exit_status is None and time.monotonic() < give_up:
            try:
                pid, status = os.waitpid(w.pid, os.WNOHANG)
            except ChildProcessError:
                break
            if pid:
                w.exit_status = os.waitstatus_to_exitcode(status)
            else:
                time.sleep(0.005)
        now_oom = oom_kills()
        what = describe_exit(w.exit_status, now_oom is not None and self.oom_base is not None
                             and now_oom > self.oom_base)
        log("%s (pid %d)" % (what, w.pid))
        reason = "%s; it was restarted and its variables are lost" % what
        # The cell's answer before the new interpreter, which may wait for pids and memory.
        self.stop_worker()
        if self.cell is not None and self.cell.ctx is self.ctx:
            self.finish_cell(self.cell.forced or "error", True, reason)
        else:
            self.lost_state = reason
        self.replace_worker()

"""One worker process as the supervisor sees it: started, its pipes, its signals.

Runs on the trusted side, inside the supervisor (supervisor.py, worker_keeper.py), which decides
when a worker starts, is interrupted or replaced; this module does what that takes for one
worker. WorkerProc starts the worker (a Python interpreter, runbox_worker.py; a persistent bash, bash_worker; a
Node.js process, js_worker.js) as the workers' user with subprocess.Popen, or asks the zygote
(preload) to fork one, and holds its four pipes: the command pipe (written without ever
blocking: the worker is user code and may stop reading), the control pipe (read here and split
into messages, bounded: everything the worker sends is untrusted), its own stdout and stderr. It
signals the worker's process group (SIGINT at an interrupt) and kills what an interrupted cell
left in it. It never imports or runs user code. Python standard library only.
"""

import json
import os
import signal
import sys

from runbox_runner import bash_worker, pipes, protocol
from runbox_runner.container import proc_pids, proc_read

RUNNER_HOME = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # the entry scripts
WORKER_ENTRY = os.path.join(RUNNER_HOME, "runbox_worker.py")  # runbox_policy.py ships there too
JS_WORKER = os.path.join(RUNNER_HOME, "js_worker.js")  # the JavaScript/TypeScript worker (Node.js)
READ_SIZE = 1024 * 1024        # bytes per read from the worker's pipes
KILLED_KEPT = 1024             # pids of killed group members a reap message names at most
CMD_PENDING_MAX = 64 * 1024    # bytes waiting for the command pipe past which sync answers are dropped
CTRL_LINE_MAX = 32 * 1024 * 1024  # longest control message from the worker; longer ones are dropped


def log(msg):
    try:
        os.write(2, ("runner: %s\n" % msg).encode("utf-8", "replace"))
    except OSError:
        pass


class WorkerProc:
    """One worker process with its pipes: started here (Popen), or forked by the zygote, whose
    pid is then known only once it answers (pid None until attach)."""

    def __init__(self, language, env, user, zygote=None):
        """user: (uid, gid) to start the worker as (privilege separation), or None; zygote: a
        preload.Zygote to fork the worker from instead (python only). OSError when no process
        or pipe could be made, or the zygote could not be asked."""
        import subprocess
        self.language = language
        self.hello = False
        self.startup = bash_worker.StartupFilter() if language == "bash" else None
        self.exit_status = None
        self.proc = None
        self.pid = None
        self.zygote = zygote          # the zygote it comes from (forked workers), else None
        self.seq = None               # the zygote's request number, until it answers
        self.cells = 0                # cells sent to it
        self.killed = set()           # members of its group killed since collect_children
        made = []
        try:
            for _ in range(4):
                made.extend(os.pipe())
        except OSError:
            for fd in made:
                os.close(fd)
            raise
        c2w_r, c2w_w, w2c_r, w2c_w, out_r, out_w, err_r, err_w = made
        for fd in (c2w_w, w2c_r, out_r, err_r):
            os.set_inheritable(fd, False)
        theirs = (c2w_r, w2c_w, out_w, err_w)
        try:
            if zygote is not None:
                self.seq = zygote.request(list(theirs))
                if self.seq is None:
                    raise OSError("the zygote did not take the request")
            else:
                if language == "bash":
                    argv = bash_worker.ARGV
                    stdin = c2w_r
                elif language in ("javascript", "typescript"):
                    # --expose-internals: the worker uses the REPL's top-level await transform
                    argv = ["node", "--expose-internals", JS_WORKER, str(c2w_r), str(w2c_w)]
                    if language == "typescript":
                        argv.append("--typescript")
                    stdin = subprocess.DEVNULL
                else:
                    argv = [sys.executable, WORKER_ENTRY, str(c2w_r), str(w2c_w)]
                    stdin = subprocess.DEVNULL
                ids = {"user": user[0], "group": user[1], "extra_groups": []} if user else {}
                self.proc = subprocess.Popen(
                    argv, stdin=stdin, stdout=out_w, stderr=err_w,
                    pass_fds=(c2w_r, w2c_w), start_new_session=True, env=env, cwd=None,
                    preexec_fn=lowest_cpu_priority, **ids)
                self.pid = self.proc.pid
        except BaseException:
            for fd in made:
                os.close(fd)
            raise
        for fd in theirs:
            os.close(fd)
        self.cmd_fd = c2w_w
        self.cmd_pending = bytearray()  # commands the pipe did not take yet
        os.set_blocking(c2w_w, False)
        self.ctrl_fd = w2c_r
        self.out_fd = out_r
        self.err_fd = err_r
        self.ctrl_buf = bytearray()
        self.ctrl_scanned = 0         # bytes of ctrl_buf known to hold no newline
        self.ctrl_skip = False        # inside a line too long to keep: dropped up to its newline
        self.ctrl_dropped = 0         # bytes of such lines
        self.ctrl_eof = False
        for fd in (self.out_fd, self.err_fd, self.ctrl_fd):
            os.set_blocking(fd, False)
            pipes.set_pipe_size(fd)
        if language == "bash":
            self.send_raw(bash_worker.init_text(c2w_r, w2c_w))

    def send_raw(self, text):
        self.send_bytes(text.encode("utf-8", "surrogateescape"))

    def send_msg(self, msg):
        self.send_bytes(protocol.encode(msg))

    def send_bytes(self, data, droppable=False):
        """Queues data for the worker's command pipe and writes what the pipe takes now: the
        worker is user code and may stop reading, which must never block the supervisor. A
        droppable message (a sync answer) is dropped when CMD_PENDING_MAX bytes already wait."""
        if droppable and len(self.cmd_pending) > CMD_PENDING_MAX:
            return
        self.cmd_pending += data
        self.flush_commands()

    def flush_commands(self):
        while self.cmd_pending and self.cmd_fd is not None:
            try:
                n = os.write(self.cmd_fd, self.cmd_pending)
            except (BlockingIOError, InterruptedError):
                return
            except OSError as e:
                log("cannot write to the worker: %s" % e)
                self.cmd_pending.clear()
                return
            del self.cmd_pending[:n]

    def execute(self, n, code, limit, paths, cwd=None, env=None):
        """Runs cell n; paths: {"stdout", "stderr"} FIFOs for the cell's output, or None; cwd: the
        directory to change to first (a context's first cell), env: variables for this cell only."""
        paths = paths or {}
        if self.language == "bash":
            self.send_raw(bash_worker.execute_text(n, code, paths.get("stdout"), paths.get("stderr"), cwd, env))
        else:
            msg = {"n": n, "code": code, "limit": limit, "out": paths.get("stdout"), "err": paths.get("stderr")}
            if cwd:
                msg["cwd"] = cwd
            if env:
                msg["env"] = env
            self.send_msg(msg)

    def collect_children(self):
        """Asks an idle Python worker to collect the children that were killed after an
        interrupt: they stay zombies, holding pids of the sandbox's pids limit, until their parent
        waits for them (bash does so by itself). A killed copy of a fork bomb can take seconds to
        die on a busy host, so the worker keeps the pids it could not collect yet and tries again
        before each cell; it waits for no other child (the user's own are the user's)."""
        if self.language != "bash" and self.killed:
            self.send_msg({"reap": sorted(self.killed)})
        self.killed.clear()

    def before_interrupt(self, n):
        """Tells a Python worker, ahead of the SIGINT, that cell n is interrupted: a SIGINT that
        arrives before the cell's code runs finds no code to stop, and the worker looks for this
        message when it starts the code."""
        if self.language != "bash":
            self.send_msg({"interrupt": n})

    def after_interrupt(self, n):
        if self.language == "bash":
            self.send_raw(bash_worker.interrupt_text(n))

    def kill_group_except_leader(self):
        """SIGKILL the processes of the worker's process group but the worker: what a cell
        that was interrupted left running (forked copies, subprocesses). The group is stopped
        first: one signal reaches every member and a stopped process cannot fork, so a scan of
        /proc finds them all even while a fork bomb refills every pid that a kill frees (scans
        that chased it took seconds each on a CPU shared with the bomb). Then the worker goes on."""
        if self.pid is None:
            return
        self.signal_group(signal.SIGSTOP)
        try:
            for _ in range(5):  # again only if something was continued (SIGCONT) behind our back
                if not self._kill_members():
                    return
        finally:
            try:
                os.kill(self.pid, signal.SIGCONT)
            except ProcessLookupError:
                pass

    def _kill_members(self):
        """One scan of /proc: SIGKILL every live member of the group but the leader; the count."""
        try:
            names = proc_pids()
        except OSError:
            return 0
        killed = 0
        for name in names:
            if int(name) == self.pid:
                continue
            try:
                fields = proc_read(name + "/stat").rsplit(b")", 1)[1].split()
                if fields[0] != b"Z" and int(fields[2]) == self.pid:  # state, pgrp
                    os.kill(int(name), signal.SIGKILL)
                    killed += 1
                    if len(self.killed) < KILLED_KEPT:
                        self.killed.add(int(name))
            except (OSError, IndexError, ValueError):
                pass
        return killed

    def signal_group(self, sig):
        if self.pid is None:
            return
        try:
            os.killpg(self.pid, sig)
        except (ProcessLookupError, PermissionError):
            pass

    def read_ctrl(self):
        """Reads what is available; returns the complete messages."""
        try:
            data = os.read(self.ctrl_fd, READ_SIZE)
        except BlockingIOError:
            return []
        except OSError:
            data = b""
        if not data:
            self.ctrl_eof = True
            return []
        # The worker is user code: whatever it writes here is bounded and checked (on_ctrl).
        buf = self.ctrl_buf
        buf += data
        msgs = []
        start = 0
        while True:
            i = buf.find(b"\n", max(start, self.ctrl_scanned))
            if i < 0:
                break
            if self.ctrl_skip:
                self.ctrl_skip = False
                self.ctrl_dropped += i - start
            else:
                try:
                    msg = json.loads(bytes(buf[start:i]))
                except (ValueError, RecursionError):
                    msg = None
                if isinstance(msg, dict):
                    msgs.append(msg)
                else:
                    log("bad control message from the worker: %r" % bytes(buf[start:min(i, start + 200)]))
            start = i + 1
        del buf[:start]
        self.ctrl_scanned = len(buf)
        if len(buf) > CTRL_LINE_MAX:
            log("a control message from the worker longer than %d bytes was dropped" % CTRL_LINE_MAX)
            self.ctrl_skip = True
            self.ctrl_dropped += len(buf)
            del buf[:]
            self.ctrl_scanned = 0
        return msgs

    def close(self):
        for fd in (self.cmd_fd, self.ctrl_fd, self.out_fd, self.err_fd):
            try:
                os.close(fd)
            except OSError:
                pass
        if self.proc is not None:
            self.proc.returncode = self.exit_status if self.exit_status is not None else -9


def lowest_cpu_priority():
    """In the worker's process before exec: nice 19. User code shares the sandbox's CPU quota
    with the supervisor, and up to pids_limit busy copies of a fork bomb at the same priority left
    it a few milliseconds a second, too little to stop them before runboxd gave up on the
    sandbox. The nice value is inherited by everything the worker starts, and without
    CAP_SYS_NICE user code cannot lower it again."""
    try:
        os.setpriority(os.PRIO_PROCESS, 0, 19)
    except OSError:
        pass

"""The supervisor's side of the preload: the zygote process, asked for every fresh Python worker.

Runs on the trusted side, inside the supervisor. When RUNBOX_PRELOAD names modules (runboxd's
--preload), the supervisor starts one zygote per sandbox (runbox_worker.py --zygote, as the
sandbox user, see runbox_runner.zygote), which imports them once; every Python worker (the first
one and each one after a reset) is then forked from it, so a fresh interpreter has them at the
cost of a fork. The zygote is user-side code: what it answers is bounded and checked here, and a
worker pid it names is taken only when that process is this supervisor's child (the zygote forks
it from a child that exits, and the supervisor is a child subreaper, PR_SET_CHILD_SUBREAPER),
runs as the workers' user and leads its own process group. A zygote that dies, hangs, answers
nonsense or found its preload shadowed by packages installed into the session is given up, and
the supervisor starts workers the plain way (worker_process.WorkerProc), without the preload.
It starts no worker itself and never reads the user's files beyond a listing of the session's
package folder.
"""

import json
import os
import socket
import subprocess
import sys
import time

from runbox_runner.container import proc_read

MSG_MAX = 65536                # largest datagram from the zygote
NAMES_MAX = 5000               # module names kept from its ready message
FORK_ANSWER_S = 5.0            # a ready zygote answers a fork request within this, or is given up
START_S = 120.0                # ... and gets this long for its imports
DEPS_SITE = "/workspace/.runbox/site-packages"  # where runboxd installs a session's packages
DEPS_SCAN_MAX = 2000           # entries of it looked at
PR_SET_CHILD_SUBREAPER = 36


def log(msg):
    try:
        os.write(2, ("runner: %s\n" % msg).encode("utf-8", "replace"))
    except OSError:
        pass


def names(env):
    """The modules to preload (RUNBOX_PRELOAD, comma-separated); empty: no zygote."""
    return [n.strip() for n in env.get("RUNBOX_PRELOAD", "").split(",") if n.strip()]


def become_subreaper():
    """Orphaned descendants (a worker whose zygote child exited) become this process's children."""
    try:
        import ctypes
        return ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


class Zygote:
    """One zygote process and the socket to it."""

    def __init__(self, entry, env, user, preexec_fn):
        """Starts `python3 entry --zygote FD` as user ((uid, gid) or None)."""
        mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        mine.set_inheritable(False)
        ids = {"user": user[0], "group": user[1], "extra_groups": []} if user else {}
        try:
            self.proc = subprocess.Popen(
                [sys.executable, entry, "--zygote", str(theirs.fileno())], stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, pass_fds=(theirs.fileno(),),
                start_new_session=True, env=env, preexec_fn=preexec_fn, **ids)
        except BaseException:
            mine.close()
            raise
        finally:
            theirs.close()
        self.sock = mine
        self.sock.setblocking(False)
        self.pid = self.proc.pid
        self.user = user
        self.started = time.monotonic()
        self.ready = None             # the ready message, once it came
        self.modules = frozenset()    # top-level modules it holds
        self.seq = 0
        self.pending = None           # (seq, asked at) of the fork request not answered yet
        self.dead = False
        self.exit_status = None

    def fileno(self):
        return self.sock.fileno()

    def request(self, fds):
        """Asks for a worker on fds (command in, control out, stdout, stderr); returns the seq
        the answer will carry, or None when the request could not be sent."""
        self.seq += 1
        try:
            socket.send_fds(self.sock, [json.dumps({"fork": self.seq}).encode("ascii")], fds)
        except OSError as e:
            log("cannot ask the zygote for a worker: %s" % e)
            return None
        self.pending = (self.seq, time.monotonic())
        return self.seq

    def overdue(self, now):
        """Whether the pending request waits longer than the zygote may take."""
        if self.pending is None:
            return False
        limit = FORK_ANSWER_S if self.ready is not None else START_S
        return now - (self.pending[1] if self.ready is not None else self.started) > limit

    def read(self):
        """The messages that came (dicts); sets dead at end of file."""
        msgs = []
        for _ in range(16):
            try:
                data = self.sock.recv(MSG_MAX)
            except (BlockingIOError, InterruptedError):
                break
            except OSError:
                data = b""
            if not data:
                self.dead = True
                break
            try:
                msg = json.loads(data)
            except (ValueError, RecursionError):
                msg = None
            if not isinstance(msg, dict):
                log("bad message from the zygote: %r" % data[:200])
                continue
            if msg.get("t") == "ready" and self.ready is None:
                self.ready = msg
                if self.pending is not None:
                    self.pending = (self.pending[0], time.monotonic())  # served from now on
                mods = msg.get("modules")
                if isinstance(mods, list):
                    self.modules = frozenset(m for m in mods[:NAMES_MAX] if isinstance(m, str) and m.isidentifier())
            msgs.append(msg)
        return msgs

    def take_pid(self, msg):
        """The worker pid of a "forked" answer to the pending request, once checked; else None."""
        if self.pending is None or msg.get("seq") != self.pending[0]:
            return None
        self.pending = None
        pid = msg.get("pid")
        if isinstance(pid, bool) or not isinstance(pid, int) or pid <= 1:
            return None
        return pid if is_our_worker(pid, self.user) else None

    def kill(self):
        try:
            self.sock.close()
        except OSError:
            pass
        self.dead = True
        try:
            os.kill(self.pid, 9)
        except (ProcessLookupError, PermissionError):
            pass
        # The supervisor's reap() collects it (waitpid(-1)); Popen must not wait for it too.
        self.proc.returncode = self.exit_status if self.exit_status is not None else -9


def is_our_worker(pid, user):
    """pid is this process's child, leads its own process group and runs as user (when given)."""
    try:
        fields = proc_read("%d/stat" % pid).rsplit(b")", 1)[1].split()
        ppid, pgrp = int(fields[1]), int(fields[2])
        if ppid != os.getpid() or pgrp != pid:
            return False
        if user is not None:
            for line in proc_read("%d/status" % pid).decode("ascii", "replace").splitlines():
                if line.startswith("Uid:"):
                    return all(int(x) == user[0] for x in line.split()[1:5])
            return False
        return True
    except (OSError, IndexError, ValueError):
        return False


class Shadows:
    """Whether packages installed into the session (DEPS_SITE) have the names of modules the
    zygote imported: a worker forked from it would give the user the image's version of them.
    Looks again only when the folder changed."""

    def __init__(self):
        self.key = None
        self.found = frozenset()

    def check(self, modules):
        try:
            st = os.stat(DEPS_SITE)
            key = (st.st_ino, st.st_mtime_ns)
        except OSError:
            key = None
        if key != self.key:
            self.key = key
            self.found = frozenset(_top_level_names())
        return sorted(self.found & modules)


def _top_level_names():
    out = set()
    if not os.path.isdir(DEPS_SITE):
        return out
    try:
        with os.scandir(DEPS_SITE) as it:
            for i, entry in enumerate(it):
                if i >= DEPS_SCAN_MAX:
                    break
                name = entry.name
                if name.endswith((".dist-info", ".egg-info", ".pth", ".data")):
                    continue
                base = name.split(".", 1)[0]
                if base.isidentifier():
                    out.add(base)
    except OSError:
        pass
    return out

"""The Python worker collects the children the supervisor killed after an interrupted cell
(docker/runner/runbox_runner/python_worker.py, reap_zombies), and only those.

A killed copy of a fork bomb can take seconds to die on a busy host (worker_keeper.stop_worker),
so it may still be alive when the supervisor's {"reap": [pids]} arrives: the worker keeps such a
pid and collects it before a later cell. Before, it collected what had exited at that moment
only, and a copy that died later stayed a zombie of the worker for the session's life, holding a
pid of the sandbox's limit (tests/security's fork bomb test saw the count never fall on a loaded
CI host). The worker runs alone here, over its two pipes, as a plain subprocess (no Docker).

Run: python3 -m pytest tests/runner/test_reap.py -q
"""

import json
import os
import subprocess
import sys
import time

RUNNER_DIR = os.path.join(os.path.dirname(__file__), "..", "..", "docker", "runner")
WORKER_ENTRY = os.path.join(RUNNER_DIR, "runbox_worker.py")


class Worker:
    """runbox_worker.py over its command and control pipes."""

    def __init__(self):
        cmd_r, self.cmd_w = os.pipe()
        ctrl_r, ctrl_w = os.pipe()
        self.proc = subprocess.Popen([sys.executable, WORKER_ENTRY, str(cmd_r), str(ctrl_w)], pass_fds=(cmd_r, ctrl_w),
                                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, start_new_session=True)
        os.close(cmd_r)
        os.close(ctrl_w)
        self.ctrl = os.fdopen(ctrl_r, "rb")
        assert json.loads(self.ctrl.readline())["t"] == "hello"
        self.n = 0

    def send(self, msg: dict) -> None:
        os.write(self.cmd_w, (json.dumps(msg) + "\n").encode())

    def value(self, code: str) -> str:
        self.n += 1
        self.send({"n": self.n, "code": code, "limit": 4096})
        result = None
        while True:
            m = json.loads(self.ctrl.readline())
            if m["t"] == "result":
                result = m["text"]
            elif m["t"] == "error":
                raise AssertionError(m)
            elif m["t"] == "done":
                assert m["status"] == "completed", m
                return result

    def close(self) -> None:
        os.close(self.cmd_w)
        assert self.proc.wait(timeout=30) == 0
        self.ctrl.close()


def zombie(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[1].split()[0] == b"Z"
    except FileNotFoundError:
        return False


def test_a_killed_child_that_dies_after_the_reap_is_collected_before_the_next_cell():
    w = Worker()
    try:
        # a child that is still alive when the reap message comes, and exits a moment later
        slow = int(w.value("import os, time\npid = os.fork()\nif pid == 0:\n    time.sleep(1.5)\n    os._exit(0)\npid"))
        # and a child of the user's own, which exits at once and is the user's to wait for
        own = int(w.value("own = os.fork()\nif own == 0:\n    os._exit(7)\nown"))
        w.send({"reap": [slow]})
        deadline = time.monotonic() + 30
        while not zombie(slow):
            assert time.monotonic() < deadline, f"the child {slow} never exited"
            time.sleep(0.05)
        assert zombie(own)
        # the next cell starts after the worker collected the late one, and only that one
        assert w.value(f"import os\nos.path.exists('/proc/{slow}')") == "False"
        assert w.value("os.waitstatus_to_exitcode(os.waitpid(own, 0)[1])") == "7"
        # names that are no child of the worker, or no pid at all, are ignored
        w.send({"reap": [1, os.getpid(), -5, "x", True, 2 ** 40]})
        assert w.value("1 + 1") == "2"
    finally:
        w.close()

"""Code that kills or cripples the sandbox's own machinery: signals to PID 1, os._exit, a
SIGKILL of the interpreter or of its supervisor, closed stdout/stderr, forged protocol lines
written into the container's output stream, forked copies of the interpreter, and background
processes left running after a call. Where the worker dies the session recovers (reset: true
and the reason in plain words); where the whole runner dies the session is marked dead with an
end_reason. runboxd and a neighbouring session are unaffected (`guard`)."""

from __future__ import annotations

import os
import signal
import time

import pytest

import sectest
from sectest import poll, short


def test_kill_pid_1_is_ignored(guard):
    sid = guard.create_session()["session_id"]
    assert guard.value(sid, "kept = 5") is None
    # SIGKILL to PID 1 is ignored by the kernel; the rest docker-init forwards to the runner,
    # which must not die of them. The same signals sent to the runner (the worker's parent).
    # With privilege separation (docker/runner/PROTOCOL.md) user code may not signal them at all.
    sigs = "signal.SIGKILL, signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1, " \
           "signal.SIGUSR2, signal.SIGPIPE, signal.SIGALRM"
    send = "def send(pid, sig):\n    try:\n        os.kill(pid, sig)\n    except PermissionError:\n        pass\n"
    assert guard.value(sid, f"import os, signal, time\n{send}for sig in ({sigs}):\n    send(1, sig)\n"
                            f"time.sleep(0.5)\n'sent'") == "'sent'"
    assert guard.value(sid, f"import os, signal, time\n{send}for sig in ({sigs}):\n"
                            f"    if sig != signal.SIGKILL:\n        send(os.getppid(), sig)\n"
                            f"time.sleep(0.5)\n'sent'") == "'sent'"
    assert guard.value(sid, "kept") == "5"
    assert guard.session(sid)["status"] == "ready"


def test_os_exit_and_sigkill_of_the_interpreter_recover(guard):
    sid = guard.create_session()["session_id"]
    assert guard.value(sid, "kept = 5") is None
    doc = guard.run(sid, "import os\nprint('bye', flush=True)\nos._exit(3)")
    assert doc["status"] == "error" and doc["reset"] is True, short(doc)
    assert doc["stdout"] == "bye\n"
    assert "exited with code 3" in doc["reset_reason"] and "variables are lost" in doc["reset_reason"]
    assert guard.run(sid, "kept")["error"]["ename"] == "NameError"
    assert guard.value(sid, "kept = 6") is None
    doc = guard.run(sid, "import os, signal\nos.kill(os.getpid(), signal.SIGKILL)")
    assert doc["status"] == "error" and doc["reset"] is True, short(doc)
    assert "SIGKILL" in doc["reset_reason"]
    doc = guard.run(sid, "import os, signal\nos.kill(os.getpid(), signal.SIGSEGV)")
    assert doc["status"] == "error" and doc["reset"] is True and "crashed" in doc["reset_reason"], short(doc)
    assert guard.value(sid, "'alive again'") == "'alive again'"
    assert guard.session(sid)["status"] == "ready"


def test_closing_stdout_and_stderr(guard):
    sid = guard.create_session()["session_id"]
    assert guard.value(sid, "kept = 5") is None
    doc = guard.run(sid, "import sys\nsys.stdout.close()\nsys.stderr.close()\n'closed'")
    assert doc["status"] == "completed" and doc["result"] == "'closed'", short(doc)
    doc = guard.run(sid, "print('back on stdout')\nimport sys; print('and stderr', file=sys.stderr)")
    assert doc["status"] == "completed" and doc["stdout"] == "back on stdout\n", short(doc)
    assert doc["stderr"] == "and stderr\n"
    doc = guard.run(sid, "import os\nos.close(1)\nos.close(2)\nos.open('/dev/null', os.O_WRONLY)\n'fds closed'")
    assert doc["status"] == "completed", short(doc)
    doc = guard.run(sid, "import subprocess\nprint('py', flush=True)\nsubprocess.run(['echo', 'child'])\nkept")
    assert doc["status"] == "completed" and doc["stdout"] == "py\nchild\n" and doc["result"] == "5", short(doc)


def test_forked_copies_do_not_become_second_interpreters(guard):
    sid = guard.create_session()["session_id"]
    doc = guard.run(sid, "import os\npid = os.fork()\nif pid == 0:\n    print('child says hi', flush=True)\n"
                         "else:\n    os.waitpid(pid, 0)\n'parent value'")
    assert doc["status"] == "completed" and doc["result"] == "'parent value'", short(doc)
    assert "child says hi" in doc["stdout"]
    doc = guard.run(sid, "import os\npid = os.fork()\nif pid == 0:\n    raise ValueError('in the child')\n"
                         "os.waitpid(pid, 0)\n'parent only'")
    assert doc["status"] == "completed" and doc["result"] == "'parent only'", short(doc)
    assert "ValueError: in the child" in doc["stderr"] and "runner.py" not in doc["stderr"]
    for i in range(3):
        assert guard.value(sid, f"{i} * 2") == str(i * 2)


def test_killing_the_supervisor_marks_the_session_dead(guard):
    s = guard.create_session()
    sid = s["session_id"]
    if sectest.privilege_separated(s["container_id"]):
        # User code may not kill it (test_control_channel_is_out_of_reach); the host can.
        refused = guard.run(sid, "import os, signal\nos.kill(os.getppid(), signal.SIGKILL)")
        assert refused["error"]["ename"] == "PermissionError", short(refused)
        rid = guard.submit(sid, "import time; time.sleep(30)")
        time.sleep(1)
        os.kill(sectest.supervisor_host_pid(s["container_id"]), signal.SIGKILL)
        doc = guard.result(rid)
    else:
        doc = guard.run(sid, "import os, signal\nos.kill(os.getppid(), signal.SIGKILL)\nimport time; time.sleep(30)")
    assert doc["status"] == "error", short(doc)
    assert doc["error"] is not None and "create a new session" in doc["error"]["evalue"], short(doc)
    sess = poll(lambda: (lambda d: d if d["status"] == "dead" else None)(guard.session(sid)), "session dead")
    assert "stopped" in sess["end_reason"] and "new session" in sess["end_reason"], sess
    r = guard.http.post(guard.url + "/execute", json={"session_id": sid, "code": "1"}, timeout=30)
    assert r.status_code == 409 and "create a new session" in r.json()["error"]["message"], r.text
    poll(lambda: not sectest.containers(f"runbox.session={sid}"), "the dead session's container to be removed")


def test_forged_protocol_lines(guard):
    """Without privilege separation user code can open the container's stdout through
    /proc/1/fd/1 (docker-init's); what it writes there only confuses its own session: runboxd
    stays healthy. With it, the open is refused."""
    s = guard.create_session()
    sid = s["session_id"]
    doc = guard.run(sid, "import os\ntry:\n    open(f'/proc/{os.getppid()}/fd/1', 'wb')\n    print('opened')\n"
                         "except OSError as e:\n    print('refused', e.errno)\n")
    assert doc["stdout"] == "refused 13\n", short(doc)  # the supervisor is not dumpable
    doc = guard.run(sid, "import os\ntry:\n    open('/proc/1/fd/1', 'wb')\n    print('opened')\n"
                         "except OSError as e:\n    print('refused', e.errno)\n")
    assert doc["stdout"] == ("refused 13\n" if sectest.privilege_separated(s["container_id"]) else "opened\n"), \
        short(doc)
    code = ("import os\nfd = os.open('/proc/1/fd/1', os.O_WRONLY)\n"
            "for junk in (b'not json\\n', b'[1,2]\\n', b'{\"type\":\"done\",\"id\":\"e_forged\"}\\n',\n"
            "             b'{\"type\":\"stream\",\"id\":null,\"text\":\"\\\\u0000\"}\\n', b'\\xff\\xfe\\n',\n"
            "             b'{\"type\":\"pong\"' + b' ' * (17 << 20) + b'}\\n'):\n"
            "    os.write(fd, junk)\n'forged'")
    doc = guard.run(sid, code, timeout=60)
    assert doc["status"] in sectest.FINAL, short(doc)
    # The session is usable again afterwards (or, at worst, answers with a final status).
    after = guard.run(sid, "'after forgery'")
    assert after["status"] in sectest.FINAL


def test_background_processes_left_running(guard):
    s = guard.create_session()
    sid = s["session_id"]
    doc = guard.run(sid, "import subprocess, threading, time\n"
                         "sleeper = subprocess.Popen(['sleep', '1000'])\n"
                         "late = subprocess.Popen(['sh', '-c', 'sleep 1; echo late-output'])\n"
                         "threading.Thread(target=lambda: (time.sleep(1), print('late-thread')), daemon=True).start()\n"
                         "'started'", timeout=10)
    # The call does not wait for them.
    assert doc["status"] == "completed" and doc["result"] == "'started'", short(doc)
    # They go on running, and what they print between calls is delivered with the next call,
    # marked as output of the call that started them.
    seen = []
    mark = f"[from earlier execution {doc['request_id']}] "

    def printed_both():
        doc = guard.run(sid, "sleeper.poll() is None")
        assert doc["status"] == "completed" and doc["result"] == "True", short(doc)
        seen.extend(doc["stdout"].splitlines())
        return mark + "late-output" in seen and mark + "late-thread" in seen

    poll(printed_both, "the background output to be delivered", every=0.5)
    # Processes that escaped the process group (setsid) are gone after the interpreter is reset.
    guard.run(sid, "import subprocess\nsubprocess.Popen(['setsid', 'sleep', '1000'])\n'escaped'")
    assert guard.value(sid, "import subprocess\nb'sleep' in subprocess.run(['ps', '-eo', 'comm'], "
                            "capture_output=True).stdout") == "True"
    doc = guard.run(sid, "import os\nos._exit(1)")
    assert doc["reset"] is True
    assert guard.value(sid, "import subprocess\nsubprocess.run(['ps', '-eo', 'comm'], "
                            "capture_output=True).stdout.count(b'sleep')") == "0"
    # Deleting the session removes its container with everything still running in it.
    r = guard.http.delete(f"{guard.url}/sessions/{sid}", timeout=30)
    assert r.status_code == 200, r.text
    poll(lambda: not sectest.containers(f"runbox.session={sid}"), "the container to be removed")


PROBE = r"""
import errno, os, resource, signal
sup = os.getppid()
def refused(f):
    try:
        f()
    except OSError as e:
        return errno.errorcode[e.errno]
    return 'ALLOWED'
def uid(pid):
    return [l.split()[1] for l in open('/proc/%s/status' % pid) if l.startswith('Uid')][0]
caps = [l.split()[1] for l in open('/proc/self/status') if l.startswith(('CapPrm', 'CapEff'))]
[uid('self'), caps, uid(sup), uid(1),
 refused(lambda: os.open('/proc/1/fd/1', os.O_WRONLY)), refused(lambda: os.open('/proc/%d/fd/1' % sup, os.O_WRONLY)),
 refused(lambda: os.kill(sup, signal.SIGSTOP)), refused(lambda: os.kill(1, signal.SIGTERM)),
 refused(lambda: os.setpriority(os.PRIO_PROCESS, sup, 19)),
 refused(lambda: resource.prlimit(sup, resource.RLIMIT_CPU, (1, 1))), refused(lambda: os.setuid(0))]
"""


def test_control_channel_is_out_of_reach(guard):
    """Issue 9: the container's stdout (the protocol stream, docker-init's and the supervisor's
    fd 1) is out of user code's reach, and so are those processes (docker/runner/PROTOCOL.md,
    "Privilege separation")."""
    s = guard.create_session()
    if not sectest.privilege_separated(s["container_id"]):
        pytest.xfail("privilege separation is off: runboxd starts sandboxes as the sandbox user (core/sandbox.c)")
    got = eval(guard.value(s["session_id"], PROBE))
    assert got[:4] == ["1000", ["0000000000000000", "0000000000000000"], "999", "0"], got
    assert got[4:] == ["EACCES", "EACCES", "EPERM", "EPERM", "EPERM", "EPERM", "EPERM"], got
    assert guard.value(s["session_id"], "import os\nos.getuid(), os.getgid(), os.getgroups()") == "(1000, 1000, [])"

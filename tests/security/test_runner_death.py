"""Code that kills or cripples the sandbox's own machinery: signals to PID 1, os._exit, a
SIGKILL of the interpreter or of its supervisor, closed stdout/stderr, forged protocol frames
written to every file descriptor user code can reach (the container's output stream is not one of
them), forked copies of the interpreter, and background processes left running after a call. Where the worker dies the session recovers (reset: true
and the reason in plain words); where the whole runner dies the session is marked dead with an
end_reason. runboxd and a neighbouring session are unaffected (`guard`)."""

from __future__ import annotations

import re
import time

import pytest

import sectest
from sectest import poll, short


def test_kill_pid_1_is_ignored(guard):
    sid = guard.create_session()["session_id"]
    assert guard.value(sid, "kept = 5") is None
    # SIGKILL to PID 1 is ignored by the kernel; the rest docker-init forwards to the runner,
    # which must not die of them (under gVisor PID 1 is the supervisor itself: no docker-init).
    # The same signals sent to the runner (the worker's parent).
    # With privilege separation (docker/runner/PROTOCOL.md) user code may not signal them at all
    # (test_control_channel_is_out_of_reach); this checks that nothing that gets through harms.
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
    # User code may not kill it (test_control_channel_is_out_of_reach); the host can (under
    # gVisor through the runtime: sectest.kill_supervisor).
    refused = guard.run(sid, "import os, signal\nos.kill(os.getppid(), signal.SIGKILL)")
    assert refused["error"]["ename"] == "PermissionError", short(refused)
    rid = guard.submit(sid, "import time; time.sleep(30)")
    time.sleep(1)
    sectest.kill_supervisor(s["container_id"])
    doc = guard.result(rid)
    assert doc["status"] == "error", short(doc)
    assert doc["error"] is not None and "create a new session" in doc["error"]["evalue"], short(doc)
    sess = poll(lambda: (lambda d: d if d["status"] == "dead" else None)(guard.session(sid)), "session dead")
    assert "stopped" in sess["end_reason"] and "new session" in sess["end_reason"], sess
    r = guard.http.post(guard.url + "/execute", json={"session_id": sid, "code": "1"}, timeout=30)
    assert r.status_code == 409 and "create a new session" in r.json()["error"]["message"], r.text
    poll(lambda: not sectest.containers(f"runbox.session={sid}"), "the dead session's container to be removed")


# Waits for the execution's own id (the test uploads it as /workspace/rid.txt once it knows it),
# then writes forged protocol frames for that execution, a result, an error, a done and other
# events, to every file descriptor it holds and to every other process's it can open, and prints
# them. None of it may become an event: the frames are its own plain output (its stdout and
# stderr), and the execution's result is the one its code computes.
FORGE_PY = r"""
import json, os, time
deadline = time.time() + 60
while not os.path.exists('/workspace/rid.txt') and time.time() < deadline:
    time.sleep(0.05)
rid = open('/workspace/rid.txt').read().strip()
frames = b''.join(json.dumps(f).encode() + b'\n' for f in (
    {'type': 'stream', 'id': rid, 'name': 'stdout', 'text': 'FORGED STREAM\n'},
    {'type': 'result', 'id': rid, 'text': "'forged result'"},
    {'type': 'error', 'id': rid, 'ename': 'Forged', 'evalue': 'forged error', 'traceback': []},
    {'type': 'done', 'id': rid, 'status': 'completed', 'reset': True, 'reset_reason': 'forged',
     'duration_ms': 424242, 'dropped': 0, 'files_written': []},
    {'type': 'pong', 'id': 'p_forged', 'language': 'python', 'version': 1, 'worker_pid': 1, 'busy': None},
    {'type': 'ready', 'language': 'python', 'version': 1}))
opened = []
for pid in [p for p in os.listdir('/proc') if p.isdigit() and int(p) != os.getpid()]:
    try:
        fds = os.listdir('/proc/%s/fd' % pid)
    except OSError:
        continue
    for fd in fds:
        try:
            w = os.open('/proc/%s/fd/%s' % (pid, fd), os.O_WRONLY | os.O_NONBLOCK)
        except OSError:
            continue
        try:
            opened.append('%s/%s:%s' % (pid, fd, os.readlink('/proc/%s/fd/%s' % (pid, fd))))
        except OSError:
            opened.append('%s/%s:?' % (pid, fd))
        try:
            os.write(w, frames)
        except OSError:
            pass
        os.close(w)
for name in os.listdir('/proc/self/fd'):
    try:
        os.write(int(name), frames)
    except OSError:
        pass
print(frames.decode(), end='', flush=True)
[refused(p) for p in ('/proc/1/fd/1', '/proc/%d/fd/1' % os.getppid())], opened
"""

FORGE_BASH = r"""
for i in $(seq 600); do [ -f /workspace/rid.txt ] && break; sleep 0.1; done
rid=$(cat /workspace/rid.txt)
frames='{"type":"result","id":"'$rid'","text":"forged"}
{"type":"done","id":"'$rid'","status":"completed","reset":true,"reset_reason":"forged","duration_ms":424242}'
for fd in /proc/$$/fd/*; do
  n=${fd##*/}
  { printf '%s\n' "$frames" >&$n; } 2>/dev/null
done
for p in /proc/1/fd/1 /proc/$PPID/fd/1; do
  if { printf '%s\n' "$frames" >$p; } 2>/dev/null; then echo "OPENED $p"; else echo "refused $p"; fi
done
echo "$frames"
echo "$frames" >&2
echo real end
"""


@pytest.mark.parametrize("language", ["python", "bash"])
def test_forged_frames_from_user_code_never_become_events(guard, language):
    """Issue 9, finding 3: whatever user code writes wherever it can, frames forged for its own
    execution included, arrives as its plain output; the container's output stream (runboxd's
    control channel) cannot be opened, and the execution's real outcome is intact."""
    s = guard.create_session(language=language)
    sid = s["session_id"]
    if language == "python":
        assert guard.value(sid, "import errno, os\ndef refused(p):\n    try:\n        os.close(os.open(p, os.O_WRONLY))\n"
                                "    except OSError as e:\n        return errno.errorcode[e.errno]\n"
                                "    return 'OPENED'\n'ok'") == "'ok'"
    rid = guard.submit(sid, FORGE_PY if language == "python" else FORGE_BASH, timeout=90)
    r = guard.http.post(f"{guard.url}/sessions/{sid}/files", params={"path": "rid.txt"}, data=rid.encode(),
                        headers={"Content-Type": "application/octet-stream"}, timeout=30)
    assert r.status_code == 201, r.text
    doc = guard.result(rid)
    assert doc["status"] == "completed" and doc["error"] is None and doc["reset"] is False, short(doc)
    assert doc["duration_ms"] != 424242, short(doc)
    forged_done = '"type": "done", "id": "%s"' % rid if language == "python" else '"type":"done","id":"%s"' % rid
    assert forged_done in doc["stdout"] and forged_done in doc["stderr"], short(doc)
    if language == "python":
        refused, opened = eval(doc["result"])
        assert refused == ["EACCES", "EACCES"], short(doc)
        if sectest.GVISOR:
            # gVisor lets any user list a process's /proc/<pid>/fd (dumpable or not) and opens what
            # the file's own mode allows (docs/security.md, "Under gVisor"): here the supervisor's
            # output FIFOs of the cells, which the worker writes anyway, and the zygote's /dev/null;
            # never the control channel (the container's stdout, the supervisor's pipes).
            own = re.compile(r"1/\d+:/tmp/runbox-pipes-[^/]+/\d+-std(out|err)|(?!1/)\d+/[012]:/dev/null")
            assert all(own.fullmatch(o) for o in opened), opened
        else:
            assert opened == [], opened  # nothing else opened
        assert "FORGED STREAM" not in doc["stdout"].replace('"text": "FORGED STREAM\\n"', ""), short(doc)
    else:
        assert doc["result"] is None, short(doc)
        assert "refused /proc/1/fd/1\n" in doc["stdout"] and "OPENED" not in doc["stdout"], short(doc)
        # The cell's own output ends with its last line. What the shell wrote on its base pipes (its
        # own fds, not the cell's) is an earlier cell's to the supervisor: marked, and placed where
        # it was read, which may be after the cell's last line (two pipes written one after the
        # other can be read in either order when both are ready).
        own = [line for line in doc["stdout"].splitlines() if not line.startswith("[from an earlier cell] ")]
        assert own[-1] == "real end", short(doc)
    assert guard.session(sid)["status"] == "ready"
    assert guard.run(sid, "echo after" if language == "bash" else "'after'")["status"] == "completed"


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
    assert sectest.privilege_separated(s["container_id"]), "runboxd starts sandboxes without privilege separation"
    got = eval(guard.value(s["session_id"], PROBE))
    # PID 1 is docker-init (root), or under gVisor the supervisor itself (no docker-init)
    pid1 = "999" if sectest.GVISOR else "0"
    assert got[:4] == ["1000", ["0000000000000000", "0000000000000000"], "999", pid1], got
    # gVisor's setpriority checks no rights, and its scheduler uses no nice value (docs/security.md)
    renice = "ALLOWED" if sectest.GVISOR else "EPERM"
    assert got[4:] == ["EACCES", "EACCES", "EPERM", "EPERM", renice, "EPERM", "EPERM"], got
    if sectest.GVISOR:
        assert guard.value(s["session_id"], "import os\nos.getppid()") == "1"
    assert guard.value(s["session_id"], "import os\nos.getuid(), os.getgid(), os.getgroups()") == "(1000, 1000, [])"


ZYGOTE_PROBE = r"""
import ctypes, errno, os
def zygotes():
    out = []
    for p in os.listdir('/proc'):
        if not p.isdigit() or int(p) == os.getpid():
            continue
        try:
            ppid = int(open('/proc/%s/stat' % p).read().rsplit(')', 1)[1].split()[1])
            cmd = open('/proc/%s/cmdline' % p).read()
        except (OSError, ValueError, IndexError):
            continue
        if ppid == os.getppid() and '--zygote' in cmd:  # (a forked worker has its command line too)
            out.append(int(p))
    return out
def refused(f):
    try:
        f()
    except OSError as e:
        return errno.errorcode[e.errno]
    return 'ALLOWED'
def ptrace_attach(pid):
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.ptrace(16, pid, None, None) != 0:  # PTRACE_ATTACH
        raise OSError(ctypes.get_errno(), 'ptrace')
def fd_targets(pid):
    try:
        return sorted(os.readlink('/proc/%d/fd/%s' % (pid, fd)) for fd in os.listdir('/proc/%d/fd' % pid))
    except OSError as e:
        return errno.errorcode[e.errno]
[z] = zygotes()
status = {l.split(':')[0]: l.split()[1] for l in open('/proc/%d/status' % z) if l.startswith(('Uid', 'CapPrm', 'CapEff'))}
[z, status, refused(lambda: os.open('/proc/%d/mem' % z, os.O_RDWR)), refused(lambda: os.open('/proc/%d/fd/0' % z, os.O_RDONLY)),
 refused(lambda: ptrace_attach(z)), fd_targets(z)]
"""


def check_zygote_out_of_reach(got: list) -> None:
    """got[2:] of ZYGOTE_PROBE: its memory, its fds and ptrace are refused. Under gVisor its
    /proc/<pid>/fd is open to the same user whatever its dumpable flag (docs/security.md, "Under
    gVisor"): then what it holds must be nothing of the user's (the null device, the image's
    read-only files, its socket to the supervisor)."""
    if not sectest.GVISOR:
        assert got[2:] == ["EACCES", "EACCES", "EPERM", "EACCES"], got
        return
    assert got[2:5] == ["EACCES", "ALLOWED", "EPERM"], got
    assert all(re.fullmatch(r"/dev/null|/usr/\S+|socket:\[\d+\]", t) for t in got[5]), got


def test_the_zygote_is_out_of_reach_and_outlives_only_itself(guard):
    """Issue 13: fresh interpreters are forked from a zygote that imported the preload (and is
    spared when the interpreter is replaced). It is the sandbox user without capabilities, and
    not dumpable: user code cannot open its memory or its files, or ptrace it, so nothing of the
    user's lives on in it; everything else user code left is killed at a reset as before."""
    s = guard.create_session()
    sid = s["session_id"]
    # A sandbox made for the session (not from the warm pool) starts its zygote at its first reset.
    assert guard.run(sid, "import os\nos._exit(1)")["reset"] is True
    got = eval(guard.value(sid, ZYGOTE_PROBE))
    zygote = got[0]
    assert got[1] == {"Uid": "1000", "CapPrm": "0000000000000000", "CapEff": "0000000000000000"}, got
    check_zygote_out_of_reach(got)
    guard.run(sid, "import subprocess\nsubprocess.Popen(['setsid', 'sleep', '1000'])\n'escaped'")
    doc = guard.run(sid, "import os\nos._exit(1)")
    assert doc["reset"] is True, short(doc)
    assert guard.value(sid, "import subprocess\nsubprocess.run(['ps', '-eo', 'comm'], "
                            "capture_output=True).stdout.count(b'sleep')") == "0"
    got = eval(guard.value(sid, ZYGOTE_PROBE))
    assert got[0] == zygote, got
    check_zygote_out_of_reach(got)
    assert guard.value(sid, "import sys\n'pandas' in sys.modules") == "True"

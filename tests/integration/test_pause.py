"""Pause, resume and fork (issue 24, docs/data.md), against the real engine: suspend freezes the
sandbox (its CPU stops, its variables stay), hibernate keeps the files on disk and releases the
sandbox (the interpreter restarts), fork copies a workspace into a new session; all of it across
a kill -9 of runboxd, and nothing left behind."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import rbtest
from rbtest import check_error, check_schema

# Files of every kind a workspace may hold; their digest is compared after each step.
WRITE_FILES = r"""
import hashlib, os
os.makedirs('/workspace/deep/er', exist_ok=True)
open('/workspace/deep/er/big.bin', 'wb').write(os.urandom(5 * 1024 * 1024))
open('/workspace/notes.txt', 'w').write('written before the pause\n')
open('/workspace/secret.txt', 'w').write('mode 600')
os.chmod('/workspace/secret.txt', 0o600)
os.symlink('notes.txt', '/workspace/link')
"""
DIGEST = r"""
import hashlib, os, stat
out = []
for root, dirs, files in sorted(os.walk('/workspace')):
    dirs[:] = sorted(d for d in dirs if d != '.runbox')
    for f in sorted(files):
        p = os.path.join(root, f)
        st = os.lstat(p)
        if stat.S_ISLNK(st.st_mode):
            out.append((p, 'link', os.readlink(p)))
        else:
            out.append((p, oct(st.st_mode), hashlib.sha256(open(p, 'rb').read()).hexdigest()))
print(hashlib.sha256(repr(out).encode()).hexdigest(), len(out))
"""


def _pause(srv, sid, mode=None, expect=200):
    r = srv.post(f"/sessions/{sid}/pause", {"mode": mode} if mode else None)
    assert r.status_code == expect, f"{r.status_code} {r.text}\n{srv.log_tail(20)}"
    if expect == 200:
        check_schema(r.json(), "Session")
    return r.json()


def _resume(srv, sid, expect=200):
    r = srv.post(f"/sessions/{sid}/resume")
    assert r.status_code == expect, f"{r.status_code} {r.text}\n{srv.log_tail(20)}"
    if expect == 200:
        check_schema(r.json(), "Session")
    return r.json()


def _out(srv, sid, code):
    r = srv.execute(sid, code)
    assert r["status"] == "completed", r
    return r["stdout"]


def _cpu_ns(container_id: str) -> int:
    """The container's CPU time so far, from its cgroup (v1 cpuacct, as on this machine's engine)."""
    for p in (f"/sys/fs/cgroup/cpuacct/docker/{container_id}/cpuacct.usage",
              f"/sys/fs/cgroup/cpu,cpuacct/docker/{container_id}/cpuacct.usage"):
        if Path(p).exists():
            return int(Path(p).read_text())
    st = rbtest.docker("stats", "--no-stream", "--format", "{{.CPUPerc}}", container_id)
    raise AssertionError(f"no cpuacct cgroup for {container_id} (docker stats: {st})")


def _uses_cpu(container_id: str, what: str, ns: int = 50_000_000) -> None:
    """Waits until the container has used ns more CPU time: a spinning thread gets it within a
    second on an idle host and within some seconds on one whose two cores run many suites (a fixed
    half second was too short there: 'the thread goes on after the resume' failed under load)."""
    start = _cpu_ns(container_id)
    rbtest.wait_until(lambda: _cpu_ns(container_id) - start > ns, what, deadline=60)


def _kept_volumes(srv) -> list[str]:
    inst = srv.db_instance()
    return rbtest.docker("volume", "ls", "-q", "--filter", f"label=runbox.keep={inst}").split()


def test_suspend_stops_cpu_keeps_variables_and_an_execution_resumes(sandbox_image, make_server):
    srv = make_server()
    s = srv.create_session()
    sid, cid = s["session_id"], s["container_id"]
    # a thread that spins after its cell ended: the sandbox uses CPU while nothing runs
    _out(srv, sid, "import threading\nx = 41\nspin = True\n"
                   "def burn():\n    while spin: pass\nthreading.Thread(target=burn, daemon=True).start()")
    _uses_cpu(cid, "the spinning thread to use CPU before the pause")

    p = _pause(srv, sid)
    assert p["status"] == "suspended" and p["pause"]["mode"] == "suspend" and p["pause"]["memory"] == "kept"
    assert rbtest.inspect(cid)["State"]["Paused"] is True
    assert srv.session(sid)["status"] == "suspended" and srv.session(sid)["paused_at"]
    a = _cpu_ns(cid)
    time.sleep(1.0)
    assert _cpu_ns(cid) - a < 5_000_000, "a suspended sandbox must use no CPU"
    # the files API says how to resume; a second suspend answers as it is
    check_error(srv.get(f"/sessions/{sid}/files"), 409, "resume")
    assert _pause(srv, sid)["status"] == "suspended"

    r = _resume(srv, sid)
    assert r["status"] == "ready" and r["resume"] == {"from": "suspend", "interpreter": "kept", "ms": r["resume"]["ms"]}
    assert _out(srv, sid, "print(x + 1)") == "42\n"
    _uses_cpu(cid, "the thread to go on after the resume")

    # an execution resumes a suspended session by itself, with its variables
    _pause(srv, sid)
    r = srv.execute(sid, "spin = False\nprint(x)")
    assert r["status"] == "completed" and r["stdout"] == "41\n" and not r.get("reset"), r
    assert srv.session(sid)["status"] == "ready"


def test_pause_refusals_name_the_cause(sandbox_image, make_server):
    srv = make_server()
    sid = srv.create_session()["session_id"]
    check_error(srv.post(f"/sessions/{sid}/pause", {"mode": "sleep"}), 400, "hibernate")
    check_error(srv.post(f"/sessions/{sid}/pause", {"mode": "suspend", "x": 1}), 400, "x")
    check_error(srv.post(f"/sessions/{sid}/resume", {"mode": "suspend"}), 400, "no options")
    check_error(srv.post(f"/sessions/{sid}/fork", {"language": "bash"}), 400, "no options")
    check_error(srv.post("/sessions/s_nosuchsession/pause"), 404)
    running = srv.execute(sid, "import time\ntime.sleep(3)", wait=False)
    srv.wait_status(running["request_id"], "running")
    check_error(srv.post(f"/sessions/{sid}/pause"), 409, "execution")
    srv.wait_done(running["request_id"])
    assert _resume(srv, sid)["status"] == "ready", "resuming a running session answers it as it is"
    # deleting a suspended session removes its frozen container
    cid = _pause(srv, sid)["container_id"]
    assert srv.delete_session(sid)["status"] == "ended"
    rbtest.wait_until(lambda: not rbtest.container_exists(cid), "the frozen container to be removed")


def test_a_hibernated_session_resumes_within_max_sessions(sandbox_image, make_server):
    srv = make_server(["--max-sessions", "1"])
    a = srv.create_session()["session_id"]
    _out(srv, a, "open('/workspace/f', 'w').write('kept')")
    _pause(srv, a, "hibernate")
    b = srv.create_session()["session_id"]  # a hibernated session holds no sandbox
    check_error(srv.post(f"/sessions/{a}/resume"), 429, "max-sessions")
    assert srv.session(a)["status"] == "hibernated"
    r = srv.execute(a, "print(1)")
    assert r["status"] == "error" and "max-sessions" in str(r), r
    srv.delete_session(b)
    assert _out(srv, a, "print(open('/workspace/f').read())") == "kept\n"


def test_hibernate_releases_the_sandbox_and_keeps_every_file(sandbox_image, make_server):
    srv = make_server()
    s = srv.create_session()
    sid, cid = s["session_id"], s["container_id"]
    _out(srv, sid, WRITE_FILES + "\nkeep_me = 1")
    before = _out(srv, sid, DIGEST)
    mem = rbtest.docker("stats", "--no-stream", "--format", "{{.MemUsage}}", cid)

    p = _pause(srv, sid, "hibernate")
    assert p["status"] == "hibernated" and p["container_id"] is None
    metrics = srv.get("/metrics").text
    assert 'runbox_sessions_live{status="hibernated"} 1' in metrics, metrics
    assert p["pause"]["memory"] == "released" and p["pause"]["workspace_bytes"] >= 5 * 1024 * 1024, p
    rbtest.wait_until(lambda: not rbtest.container_exists(cid), "the hibernated sandbox to be removed")
    assert len(_kept_volumes(srv)) == 1
    print(f"\nhibernate: sandbox memory before {mem}, after 0 (container removed); "
          f"{p['pause']['workspace_bytes']} bytes kept in {p['pause']['ms']} ms")

    r = _resume(srv, sid)
    assert r["status"] == "ready" and r["resume"]["interpreter"] == "restarted" and r["container_id"] != cid
    first = srv.execute(sid, "print(keep_me)")
    assert first["status"] == "error" and first["reset"] is True and "hibernated" in first["reset_reason"], first
    assert _out(srv, sid, DIGEST) == before, "every file, mode and link must come back"
    assert _out(srv, sid, "print(open('/workspace/notes.txt').read(), end='')") == "written before the pause\n"
    assert not srv.execute(sid, "1").get("reset"), "only the first execution after the resume says reset"
    rbtest.wait_until(lambda: not _kept_volumes(srv), "the kept volume to go once the files are back")

    # an execution resumes a hibernated session too; delete removes what a hibernation keeps
    _pause(srv, sid, "hibernate")
    r = srv.execute(sid, "print(open('/workspace/notes.txt').read(), end='')")
    assert r["status"] == "completed" and r["stdout"] == "written before the pause\n" and r["reset"] is True, r
    _pause(srv, sid, "hibernate")
    assert len(_kept_volumes(srv)) == 1
    srv.delete_session(sid)
    rbtest.wait_until(lambda: not _kept_volumes(srv), "the kept volume to go with its session")


def test_pauses_survive_kill9_of_runboxd(sandbox_image, make_server):
    srv = make_server()
    a = srv.create_session()["session_id"]
    sb = srv.create_session({"execution_options": {"memory_limit": "300m", "workspace_size": "64m",
                                                   "pids_limit": 100}})
    b = sb["session_id"]
    limits = {k: rbtest.inspect(sb["container_id"])["HostConfig"][k] for k in ("Memory", "NanoCpus", "PidsLimit")}
    _out(srv, a, "v = 'frozen variable'\n" + WRITE_FILES)
    _out(srv, b, WRITE_FILES)
    da, db = _out(srv, a, DIGEST), _out(srv, b, DIGEST)
    _pause(srv, a, "suspend")
    _pause(srv, b, "hibernate")

    srv.kill9()
    srv.start()
    rbtest.wait_until(lambda: srv.session(a)["status"] == "suspended", "the suspended session to be found again")
    assert srv.session(b)["status"] == "hibernated"
    ra = _resume(srv, a)
    assert ra["resume"]["interpreter"] == "kept"
    assert _out(srv, a, "print(v)") == "frozen variable\n"
    assert _out(srv, a, DIGEST) == da
    rb = _resume(srv, b)
    assert rb["resume"]["interpreter"] == "restarted"
    assert _out(srv, b, DIGEST) == db
    # the new sandbox, made after the restart, has the limits the session was created with
    hc = rbtest.inspect(rb["container_id"])["HostConfig"]
    assert {k: hc[k] for k in limits} == limits and hc["PidsLimit"] == 100, hc
    assert _out(srv, b, "import os\ns = os.statvfs('/workspace')\nprint(s.f_blocks * s.f_frsize)") == \
        f"{64 * 1024 * 1024}\n"

    # kill -9 while hibernated, then resume through an execution after the restart
    _pause(srv, b, "hibernate")
    srv.kill9()
    srv.start()
    r = srv.execute(b, DIGEST)
    assert r["status"] == "completed" and r["stdout"] == db and r["reset"] is True, r


def test_fork_copies_the_workspace_and_both_diverge(sandbox_image, make_server):
    srv = make_server()
    src = srv.create_session()["session_id"]
    _out(srv, src, WRITE_FILES + "\nonly_in_source = 1")
    digest = _out(srv, src, DIGEST)
    r = srv.post(f"/sessions/{src}/fork")
    assert r.status_code == 201, r.text
    f = r.json()
    check_schema(f, "Session")
    srv.track(f)
    dst = f["session_id"]
    assert dst != src and f["fork"]["from"] == src and f["fork"]["interpreter"] == "fresh"
    assert f["fork"]["workspace_bytes"] >= 5 * 1024 * 1024
    assert _out(srv, dst, DIGEST) == digest
    assert srv.execute(dst, "only_in_source")["status"] == "error", "the fork's interpreter is fresh"
    assert _out(srv, src, "print(only_in_source)") == "1\n", "the source keeps its interpreter"

    _out(srv, dst, "open('/workspace/notes.txt', 'w').write('fork')\nopen('/workspace/fork.txt', 'w').write('f')")
    _out(srv, src, "open('/workspace/notes.txt', 'w').write('source')\nopen('/workspace/src.txt', 'w').write('s')")
    ls = "import os\nprint(open('/workspace/notes.txt').read(), sorted(f for f in os.listdir('/workspace') if f.endswith('.txt')))"
    assert _out(srv, src, ls) == "source ['notes.txt', 'secret.txt', 'src.txt']\n"
    assert _out(srv, dst, ls) == "fork ['fork.txt', 'notes.txt', 'secret.txt']\n"

    # a hibernated session forks from its kept files
    _pause(srv, src, "hibernate")
    r = srv.post(f"/sessions/{src}/fork")
    assert r.status_code == 201, r.text
    srv.track(r.json())
    assert _out(srv, r.json()["session_id"], ls) == "source ['notes.txt', 'secret.txt', 'src.txt']\n"
    assert srv.session(src)["status"] == "hibernated", "forking does not resume the source"


def test_idle_sessions_suspend_then_hibernate_then_end(sandbox_image, make_server):
    srv = make_server(["--idle-timeout", "2", "--idle-action", "suspend", "--hibernate-retention", "6"])
    sid = srv.create_session()["session_id"]
    _out(srv, sid, "open('/workspace/kept.txt', 'w').write('idle')\nv = 5")
    rbtest.wait_until(lambda: srv.session(sid)["status"] == "suspended", "the idle session to be suspended")
    rbtest.wait_until(lambda: srv.session(sid)["status"] == "hibernated", "the suspended session to hibernate")
    r = srv.execute(sid, "print(open('/workspace/kept.txt').read())")
    assert r["status"] == "completed" and r["stdout"] == "idle\n" and r["reset"] is True, r
    # idle again: suspended, hibernated, then past the retention ended with its files
    rbtest.wait_until(lambda: srv.get(f"/sessions/{sid}").json()["status"] == "ended",
                      "the hibernated session to end after --hibernate-retention", deadline=60)
    assert "hibernate-retention" in srv.get(f"/sessions/{sid}").json()["end_reason"]
    rbtest.wait_until(lambda: not _kept_volumes(srv), "its kept files to go")


def test_idle_action_is_checked_at_start(tmp_path):
    p = subprocess.run([str(rbtest.RUNBOX_BIN), "--db", str(tmp_path / "runbox.db"), "--listen",
                        f"127.0.0.1:{rbtest.free_port()}", "--idle-action", "sleep"],
                       capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert p.returncode != 0 and "idle-action" in p.stderr and "hibernate" in p.stderr, p.stderr


# Background loops that keep forking short processes after their cell has ended: a cgroup the v1
# freezer has trouble stopping ("unable to freeze"). They stop by themselves after `secs` seconds
# or when /tmp/stop exists, and each forks one child at a time (within the session's pids limit).
BUSY = r"""
import subprocess
loop = 'end=$((SECONDS+{secs})); while [ $SECONDS -lt $end ] && [ ! -e /tmp/stop ]; do /bin/true; done'
busy = [subprocess.Popen(['bash', '-c', loop]) for _ in range({n})]
print(len(busy))
"""


def _freezer_refusal(r, what: str) -> None:
    """A 503 of a freeze the busy sandbox's freezer refused: Retry-After, and words naming it."""
    assert r.status_code == 503, f"{what}: {r.status_code} {r.text}"
    assert r.headers.get("Retry-After"), f"{what}: a 503 without Retry-After"
    err = check_error(r, 503)
    assert "freezer" in err["message"] and "retry" in err["message"], err


def test_a_busy_sandbox_is_paused_forked_and_hibernated_or_told_to_retry(sandbox_image, make_server):
    """Pause, fork and hibernate land on a sandbox whose processes keep forking: each answer is a
    success or a 503 with Retry-After naming the freezer (never 502), and the session runs after."""
    srv = make_server()
    sid = srv.create_session()["session_id"]
    tally = {"ok": 0, "503": 0}

    def land(r, ok: int, what: str) -> bool:
        if r.status_code == ok:
            tally["ok"] += 1
            return True
        _freezer_refusal(r, what)
        tally["503"] += 1
        assert srv.session(sid)["status"] in ("ready", "busy"), f"{what}: a refused freeze leaves it running"
        return False

    assert _out(srv, sid, "x = 41\n" + BUSY.format(secs=240, n=8)) == "8\n"
    for _ in range(4):
        if land(srv.post(f"/sessions/{sid}/pause"), 200, "suspend"):
            assert _resume(srv, sid)["status"] == "ready"
        r = srv.post(f"/sessions/{sid}/fork")
        if land(r, 201, "fork"):
            srv.track(r.json())
            assert srv.delete_session(r.json()["session_id"])["status"] == "ended"
        assert _out(srv, sid, "print(x + 1)") == "42\n", "the source keeps its interpreter"
    while not land(srv.post(f"/sessions/{sid}/pause", {"mode": "hibernate"}), 200, "hibernate"):
        time.sleep(1)
    assert srv.session(sid)["status"] == "hibernated"
    assert _out(srv, sid, "print('after')") == "after\n"
    print("busy sandbox:", tally, "freezes tried again:", srv.log_text().count("failed, again in"))


def test_concurrent_pauses_resumes_and_forks_of_one_session_are_all_served(sandbox_image, make_server):
    """Pauses, resumes and forks of one session sent at once wait for each other in runboxd: none is
    refused for a race of runboxd's own (409), none reaches the engine as one (Docker's 409)."""
    import concurrent.futures

    srv = make_server()
    sid = srv.create_session()["session_id"]
    _out(srv, sid, "x = 7\nopen('/workspace/f.txt', 'w').write('f')")
    calls = [("POST", f"/sessions/{sid}/pause"), ("POST", f"/sessions/{sid}/fork"),
             ("POST", f"/sessions/{sid}/resume"), ("POST", f"/sessions/{sid}/fork"),
             ("POST", f"/sessions/{sid}/pause"), ("POST", f"/sessions/{sid}/fork"),
             ("POST", f"/sessions/{sid}/resume"), ("POST", f"/sessions/{sid}/pause")] * 2
    with concurrent.futures.ThreadPoolExecutor(len(calls)) as pool:
        answers = list(pool.map(lambda c: srv.request(*c), calls))
    forks = 0
    for (_, path), r in zip(calls, answers):
        if r.status_code == 503:
            _freezer_refusal(r, path)  # the host's freezer, not runboxd
            continue
        assert r.status_code == (201 if path.endswith("fork") else 200), f"{path}: {r.status_code} {r.text}"
        if path.endswith("fork"):
            forks += 1
            srv.track(r.json())
            assert r.json()["fork"]["from"] == sid
            assert _out(srv, r.json()["session_id"], "print(open('/workspace/f.txt').read())") == "f\n"
    assert forks > 0
    assert _out(srv, sid, "print(x)") == "7\n", "the source keeps its interpreter"

"""runboxd killed with SIGKILL at each step of hibernate, resume, fork and volume creation (issue
37, item 3; docs/data.md "What a crash leaves"): after a restart on the same database the engine
holds exactly what the session's stored state says, the session is usable or ended with a reason,
and once it is deleted nothing of it remains.

Each step is hit deterministically by the test-only hook RUNBOX_TEST_CRASH_AT (docs/testing.md):
runboxd raises SIGKILL on itself there. One restart per step, a workspace of two small files."""

from __future__ import annotations

import sqlite3

import pytest
import requests

import rbtest

ARGS = ["--pool-size", "0"]
FILES = ("import os\nos.makedirs('/workspace/d', exist_ok=True)\n"
         "open('/workspace/d/a.txt', 'w').write('alpha')\nopen('/workspace/b.bin', 'wb').write(bytes(range(256)) * 64)\n"
         "v = 'interpreter kept'")
READ = "print(open('/workspace/d/a.txt').read(), len(open('/workspace/b.bin', 'rb').read()))"
READ_OUT = "alpha 16384\n"


def _crashing(srv: rbtest.Server, monkeypatch, step: str) -> rbtest.Server:
    """Starts srv with the hook armed at step (only this process: the restart has no hook)."""
    monkeypatch.setenv("RUNBOX_TEST_CRASH_AT", step)
    try:
        return srv.start()
    finally:
        monkeypatch.delenv("RUNBOX_TEST_CRASH_AT")


def _call_until_killed(srv: rbtest.Server, method: str, path: str, body=None) -> None:
    """The request whose handling reaches the crash step: runboxd dies before answering."""
    try:
        r = srv.request(method, path, json=body, timeout=120)
        raise AssertionError(f"runboxd answered {r.status_code} {r.text[:300]} instead of dying at its crash step\n"
                             f"{srv.log_tail(30)}")
    except requests.ConnectionError:
        pass
    srv.proc.wait(30)
    assert srv.proc.returncode == -9, f"runboxd exited with {srv.proc.returncode}\n{srv.log_tail(30)}"
    assert "RUNBOX_TEST_CRASH_AT: killing runboxd at" in srv.log_text()
    srv.kill9()  # forget the dead process
    srv.start()


def _out(srv: rbtest.Server, sid: str, code: str) -> str:
    r = srv.execute(sid, code)
    assert r["status"] == "completed", r
    return r["stdout"]


def _engine(inst: str) -> dict[str, set[str]]:
    """What the engine holds of the instance: containers (all states), kept workspaces, unused
    workspace volumes, named volumes."""
    def ls(*args: str) -> set[str]:
        return set(rbtest.docker(*args).split())

    return {
        "containers": ls("ps", "-aq", "--no-trunc", "--filter", f"label=runbox.instance={inst}"),
        "kept": ls("volume", "ls", "-q", "--filter", f"label=runbox.keep={inst}"),
        "unused_workspaces": ls("volume", "ls", "-q", "--filter", f"label=runbox.workspace={inst}",
                                "--filter", "dangling=true"),
        "volumes": ls("volume", "ls", "-q", "--filter", "label=runbox.volume", "--filter",
                      f"label=runbox.instance={inst}"),
    }


def _settles(srv: rbtest.Server, containers: set[str], kept: int, volumes: int = 0) -> dict[str, set[str]]:
    """Waits until the engine holds exactly the given containers, kept count of kept workspaces,
    no unused workspace volume and volumes named volumes; returns what it holds."""
    inst = srv.db_instance()
    seen = {}

    def check() -> bool:
        seen.update(_engine(inst))
        return (seen["containers"] == containers and len(seen["kept"]) == kept and not seen["unused_workspaces"]
                and len(seen["volumes"]) == volumes)

    try:
        rbtest.wait_until(check, "the engine to hold exactly what the stored sessions need")
    except AssertionError as e:
        raise AssertionError(f"{e}: expected containers {containers}, {kept} kept, {volumes} volumes; the engine "
                             f"holds {seen}\n{srv.log_tail(40)}") from None
    return seen


def _deleted_leaves_nothing(srv: rbtest.Server, *sids: str, volumes: int = 0) -> None:
    for sid in sids:
        r = srv.delete(f"/sessions/{sid}")
        assert r.status_code in (200, 404), r.text
    _settles(srv, set(), 0, volumes)


def _stored_session_ids(srv: rbtest.Server) -> set[str]:
    con = sqlite3.connect(f"file:{srv.db}?mode=ro", uri=True, timeout=5)
    try:
        return {row[0] for row in con.execute("SELECT session_id FROM sessions")}
    finally:
        con.close()


# ---- hibernate ---------------------------------------------------------------------------------

@pytest.mark.parametrize("step,hibernated", [
    ("hibernate:frozen", False),        # frozen, nothing copied yet
    ("helper-copy:exited", False),      # the copy is made, its copier still holds the kept volume
    ("hibernate:copied", False),        # the copier is gone; the session not yet stored as hibernated
    ("hibernate:stored", True),         # stored as hibernated; its sandbox not yet removed
])
def test_kill9_during_hibernate(sandbox_image, make_server, monkeypatch, step, hibernated):
    srv = _crashing(make_server(ARGS, start=False), monkeypatch, step)
    s = srv.create_session()
    sid = s["session_id"]
    _out(srv, sid, FILES)
    _call_until_killed(srv, "POST", f"/sessions/{sid}/pause", {"mode": "hibernate"})

    after = srv.session(sid)
    if hibernated:  # one complete kept volume, no sandbox
        assert after["status"] == "hibernated", after
        _settles(srv, set(), 1)
        r = srv.execute(sid, READ)
        assert r["status"] == "completed" and r["stdout"] == READ_OUT and r["reset"] is True, r
    else:  # still running in its own sandbox, thawed, its interpreter kept; no kept volume
        _settles(srv, {s["container_id"]}, 0)
        rbtest.wait_until(lambda: srv.session(sid)["status"] == "ready", "the session to run again")
        assert _out(srv, sid, READ + "\nprint(v)") == READ_OUT + "interpreter kept\n"
        assert srv.post(f"/sessions/{sid}/pause", {"mode": "hibernate"}).status_code == 200
        _settles(srv, set(), 1)
    _deleted_leaves_nothing(srv, sid)


# ---- resume ------------------------------------------------------------------------------------

@pytest.mark.parametrize("step", [
    "resume:sandbox",         # its new sandbox is up, no file copied back
    "helper-copy:exited#2",   # the files are back (the first copy was the hibernation's); copier not removed
    "resume:restored",        # the files are back, the session not yet stored as running
])
def test_kill9_during_resume(sandbox_image, make_server, monkeypatch, step):
    srv = _crashing(make_server(ARGS, start=False), monkeypatch, step)
    sid = srv.create_session()["session_id"]
    _out(srv, sid, FILES)
    assert srv.post(f"/sessions/{sid}/pause", {"mode": "hibernate"}).status_code == 200
    _call_until_killed(srv, "POST", f"/sessions/{sid}/resume")

    assert srv.session(sid)["status"] == "hibernated", "a resume cut short leaves it hibernated"
    _settles(srv, set(), 1)
    r = srv.post(f"/sessions/{sid}/resume")
    assert r.status_code == 200, r.text
    assert _out(srv, sid, READ) == READ_OUT
    _settles(srv, {srv.session(sid)["container_id"]}, 0)
    _deleted_leaves_nothing(srv, sid)


# ---- fork --------------------------------------------------------------------------------------

@pytest.mark.parametrize("step", [
    "fork:created",         # the new session runs, the source not yet frozen
    "fork:frozen",          # the source frozen for the copy
    "helper-copy:exited",   # the copy made, its copier not removed
    "fork:copied",          # every file in, the fork not yet answered
])
def test_kill9_during_fork(sandbox_image, make_server, monkeypatch, step):
    srv = _crashing(make_server(ARGS, start=False), monkeypatch, step)
    src = srv.create_session()
    sid = src["session_id"]
    _out(srv, sid, FILES)
    _call_until_killed(srv, "POST", f"/sessions/{sid}/fork")

    # the source runs on, thawed, its interpreter kept; the unanswered fork ended with a reason
    rbtest.wait_until(lambda: srv.session(sid)["status"] == "ready", "the source to run again")
    forks = _stored_session_ids(srv) - {sid}
    assert len(forks) == 1, forks
    dst = forks.pop()
    ended = srv.session(dst)
    assert ended["status"] == "dead" and "forked from session " + sid in ended["end_reason"], ended
    _settles(srv, {src["container_id"]}, 0)
    assert _out(srv, sid, READ + "\nprint(v)") == READ_OUT + "interpreter kept\n"
    r = srv.post(f"/sessions/{sid}/fork")
    assert r.status_code == 201, r.text
    assert _out(srv, r.json()["session_id"], READ) == READ_OUT
    _deleted_leaves_nothing(srv, sid, r.json()["session_id"])


# ---- volume creation ---------------------------------------------------------------------------

@pytest.mark.parametrize("step", [
    "volume:stored",           # its row stored, the engine's volume not made
    "volume:created",          # the engine's volume made, not yet given to the sandbox user
    "helper-volume:exited",    # given to it, the helper not removed, the creation not answered
])
def test_kill9_during_volume_creation(sandbox_image, make_server, monkeypatch, step):
    srv = _crashing(make_server(ARGS, start=False), monkeypatch, step)
    _call_until_killed(srv, "POST", "/volumes", {"name": "data"})

    # an unanswered creation is undone: no row, no engine volume, the name free again
    rbtest.wait_until(lambda: srv.get("/volumes").json()["volumes"] == [], "the cut creation's row to go")
    _settles(srv, set(), 0, volumes=0)
    r = srv.post("/volumes", {"name": "data"})
    assert r.status_code == 201, r.text
    s = srv.create_session({"execution_options": {"mounts": [{"volume": "data"}]}})
    assert _out(srv, s["session_id"], "open('/workspace/data/x', 'w').write('x'); print('ok')") == "ok\n"
    _deleted_leaves_nothing(srv, s["session_id"], volumes=1)
    assert srv.delete("/volumes/data").status_code == 204
    _settles(srv, set(), 0, volumes=0)

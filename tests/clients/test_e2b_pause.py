"""E2B's pause, connect-resume, auto-pause and fork (issue 24, docs/e2b.md "Pause, resume and
fork") with E2B's own SDK, unmodified, against a real runboxd and real sandboxes: pause() keeps
memory and files (runbox suspends the session), pause(mode="filesystem") keeps the files only
(runbox hibernates it: the interpreter boots fresh), Sandbox.connect() resumes either, a timeout
with lifecycle on_timeout "pause" pauses instead of killing, and fork() copies the files into new
sandboxes.
"""

from __future__ import annotations

import datetime

import threading
import time

import pytest
import requests

import rbtest
from rbfixtures import keyed_server_fixture, point_e2b_sdk_at

from e2b import (InvalidArgumentException, SandboxException, SandboxNotFoundException, SandboxQuery, SandboxState,
                 ServiceBusyException)
from e2b_code_interpreter import Sandbox

KEYS = {"alice": "e2b_" + "c3" * 20}

pause_server = keyed_server_fixture("runboxd-e2b-pause", KEYS, name="pause_server")


@pytest.fixture
def e2b_env(pause_server, monkeypatch):
    point_e2b_sdk_at(monkeypatch, pause_server, KEYS["alice"])
    return pause_server


def _api(server: rbtest.Server, method: str, path: str, body=None) -> requests.Response:
    return requests.request(method, server.url + "/e2b" + path, json=body, timeout=120,
                            headers={"X-API-KEY": KEYS["alice"]})


def _status(server: rbtest.Server, sid: str) -> str:
    return server.get(f"/sessions/{sid}").json()["status"]


def _listed(state: SandboxState) -> set[str]:
    return {s.sandbox_id for s in Sandbox.list(query=SandboxQuery(state=[state])).next_items()}


def test_pause_keeps_memory_and_files_and_connect_resumes(e2b_env):
    sbx = Sandbox.create(timeout=600)
    sid = sbx.sandbox_id
    e2b_env.session_ids.add(sid)
    try:
        assert sbx.run_code("x = 41").error is None
        sbx.files.write("/home/user/p.txt", "kept")

        assert sbx.pause() is True
        assert sbx.pause() is False  # paused already: E2B's 409
        assert _status(e2b_env, sid) == "suspended"
        info = Sandbox.get_info(sid)
        assert info.state == SandboxState.PAUSED, info
        assert not sbx.is_running()
        assert sid in _listed(SandboxState.PAUSED) and sid not in _listed(SandboxState.RUNNING)
        assert sid in {s.sandbox_id for s in Sandbox.list().next_items()}  # both states by default
        assert _api(e2b_env, "GET", f"/sandboxes/{sid}").json()["pauseMode"] == "full"
        # files and commands wait for connect (run_code resumes by itself: see below)
        with pytest.raises(InvalidArgumentException, match="is paused: Sandbox.connect"):
            sbx.files.read("/home/user/p.txt")
        with pytest.raises(SandboxException, match="FAILED_PRECONDITION.*is paused"):
            sbx.commands.run("ls")

        before = time.time()
        again = Sandbox.connect(sid, timeout=600)
        assert again.sandbox_id == sid and again._envd_access_token == sbx._envd_access_token
        assert _status(e2b_env, sid) in ("ready", "busy")
        info = again.get_info()
        assert info.state == SandboxState.RUNNING
        assert "pauseMode" not in _api(e2b_env, "GET", f"/sandboxes/{sid}").json()
        # a paused sandbox has no timeout; connect gives it the one asked for
        assert info.end_at.timestamp() >= before + 590, info.end_at
        assert again.run_code("x + 1").text == "42"
        assert again.files.read("/home/user/p.txt") == "kept"
        assert sid in _listed(SandboxState.RUNNING)
        # connecting to a running sandbox changes nothing (200)
        r = _api(e2b_env, "POST", f"/v2/sandboxes/{sid}/connect", {"timeout": 60})
        assert r.status_code == 200, r.text
    finally:
        sbx.kill()


def test_pause_of_the_files_only_boots_fresh(e2b_env):
    """mode="filesystem" (memory false): runbox hibernates the session; on resume its files are
    there and its interpreter is new."""
    with Sandbox.create(timeout=600) as sbx:
        sid = sbx.sandbox_id
        e2b_env.session_ids.add(sid)
        sbx.run_code("x = 1")
        sbx.files.write("/home/user/f.txt", "on disk")
        assert sbx.pause(mode="filesystem") is True
        assert _status(e2b_env, sid) == "hibernated"
        assert Sandbox.get_info(sid).state == SandboxState.PAUSED
        assert _api(e2b_env, "GET", f"/sandboxes/{sid}").json()["pauseMode"] == "filesystem"
        assert Sandbox.pause(sid, keep_memory=False) is False

        again = Sandbox.connect(sid, timeout=600)
        assert again.files.read("/home/user/f.txt") == "on disk"
        ex = again.run_code("x")
        assert ex.error is not None and ex.error.name == "NameError", ex
        assert again.run_code("open('f.txt').read()").text == "on disk"


def test_connect_with_reboot_restarts_a_suspended_sandbox(e2b_env):
    """on_resume="reboot" (memory false): the sandbox comes back from its files alone."""
    with Sandbox.create(timeout=600) as sbx:
        e2b_env.session_ids.add(sbx.sandbox_id)
        sbx.run_code("y = 2")
        sbx.files.write("/home/user/r.txt", "r")
        assert sbx.pause() is True
        again = Sandbox.connect(sbx.sandbox_id, on_resume="reboot")
        assert again.run_code("'y' in globals()").text == "False"
        assert again.files.read("/home/user/r.txt") == "r"


def test_run_code_resumes_a_paused_sandbox(e2b_env):
    """runbox resumes a paused session for an execution, whatever autoResume says; a paused
    sandbox can be killed."""
    with Sandbox.create(timeout=600) as sbx:
        e2b_env.session_ids.add(sbx.sandbox_id)
        sbx.run_code("z = 3")
        assert sbx.pause() is True
        assert sbx.run_code("z * 2", timeout=120).text == "6"
        info = Sandbox.get_info(sbx.sandbox_id)
        assert info.state == SandboxState.RUNNING
        # its timeout runs again from the resume, as E2B's auto-resume does
        left = (info.end_at - datetime.datetime.now(datetime.timezone.utc)).total_seconds()
        assert 500 < left <= 600, info.end_at
        assert sbx.pause(mode="filesystem") is True
        ex = sbx.run_code("z", timeout=120)
        assert ex.error is not None and ex.error.name == "NameError", ex
        assert sbx.run_code("2 + 2").text == "4"
        assert sbx.pause(mode="filesystem") is True
        assert sbx.kill() is True
        with pytest.raises(SandboxNotFoundException):
            Sandbox.get_info(sbx.sandbox_id)


def test_a_busy_sandbox_is_not_paused(e2b_env):
    """E2B pauses a sandbox whatever runs in it; runbox pauses an idle one only. The refusal is a
    503 with Retry-After (ServiceBusyException: the sandbox keeps running), not the 409 the SDK
    reads as "paused already"; the SDK retries a 503, so a pause asked for during a cell that ends
    soon goes through."""
    with Sandbox.create(timeout=600) as sbx:
        sid = sbx.sandbox_id
        e2b_env.session_ids.add(sid)
        sbx.run_code("kept = 'yes'")
        errors: list = []

        def cell() -> None:
            try:  # the SDK drops the connection at its timeout, and runbox cancels the cell
                sbx.run_code("import time; time.sleep(600)", timeout=6)
            except Exception as e:  # noqa: BLE001 - checked below
                errors.append(e)

        t = threading.Thread(target=cell)
        t.start()
        rbtest.wait_until(lambda: _status(e2b_env, sid) == "busy", "the cell runs", deadline=60)
        with pytest.raises(ServiceBusyException, match="execution is running"):
            sbx.pause(retries=0)
        r = _api(e2b_env, "POST", f"/sandboxes/{sid}/pause")
        assert r.status_code == 503 and int(r.headers["Retry-After"]) >= 1, (r.text, dict(r.headers))
        assert _status(e2b_env, sid) == "busy"
        assert sbx.pause() is True  # retried until the cell was cancelled
        t.join(60)
        assert len(errors) == 1, errors
        assert _status(e2b_env, sid) == "suspended"
        assert Sandbox.connect(sid).run_code("kept").text == "yes"


def test_the_timeout_pauses_a_sandbox_with_auto_pause(e2b_env):
    """lifecycle on_timeout "pause": at its timeout the sandbox is paused, not killed, and connect
    resumes it with its state (suspended) or its files (mode "filesystem": hibernated)."""
    full = Sandbox.create(timeout=3, lifecycle={"on_timeout": "pause", "auto_resume": True})
    disk = Sandbox.create(timeout=3, lifecycle={"on_timeout": {"action": "pause", "mode": "filesystem"}})
    plain = Sandbox.create(timeout=600)
    for b in (full, disk, plain):
        e2b_env.session_ids.add(b.sandbox_id)
    try:
        full.run_code("kept = 'memory'")
        disk.files.write("/home/user/d.txt", "disk")
        assert full.get_info().lifecycle == {"on_timeout": "pause", "auto_resume": True}
        assert disk.get_info().lifecycle == {"on_timeout": "pause", "auto_resume": False}
        assert plain.get_info().lifecycle == {"on_timeout": "kill", "auto_resume": False}
        for b, status in ((full, "suspended"), (disk, "hibernated")):
            rbtest.wait_until(lambda: Sandbox.get_info(b.sandbox_id).state == SandboxState.PAUSED,
                              "the sandbox paused at its timeout", deadline=120)
            rbtest.wait_until(lambda: _status(e2b_env, b.sandbox_id) == status, status, deadline=120)
        time.sleep(2)  # paused, it has no timeout: it stays
        assert _status(e2b_env, full.sandbox_id) == "suspended"

        again = Sandbox.connect(full.sandbox_id, timeout=600)
        assert again.run_code("kept").text == "memory"
        again = Sandbox.connect(disk.sandbox_id, timeout=600)
        assert again.files.read("/home/user/d.txt") == "disk"
    finally:
        for b in (full, disk, plain):
            b.kill()


def test_fork_copies_the_files_into_new_sandboxes(e2b_env):
    with Sandbox.create(timeout=600, metadata={"who": "source"}) as sbx:
        e2b_env.session_ids.add(sbx.sandbox_id)
        sbx.run_code("v = 7")
        sbx.files.write("/home/user/shared.txt", "from the source")
        forks = sbx.fork(count=2, timeout=600)
        assert len(forks) == 2 and all(isinstance(f, Sandbox) for f in forks), forks
        try:
            ids = {f.sandbox_id for f in forks}
            for f in forks:
                e2b_env.session_ids.add(f.sandbox_id)
            assert len(ids) == 2 and sbx.sandbox_id not in ids
            assert len({f._envd_access_token for f in forks} | {sbx._envd_access_token}) == 3
            for f in forks:
                assert f.files.read("/home/user/shared.txt") == "from the source"
                assert f.run_code("'v' in globals()").text == "False"  # a fresh interpreter
                assert f.get_info().metadata == {"who": "source"}
            forks[0].files.write("/home/user/shared.txt", "changed in a fork")
            assert sbx.files.read("/home/user/shared.txt") == "from the source"
            assert sbx.run_code("v").text == "7"
            # a paused sandbox forks too, and stays paused
            assert sbx.pause() is True
            (late,) = Sandbox.fork(sbx.sandbox_id, timeout=600)
            forks.append(late)
            e2b_env.session_ids.add(late.sandbox_id)
            assert late.files.read("/home/user/shared.txt") == "from the source"
            assert _status(e2b_env, sbx.sandbox_id) == "suspended"
        finally:
            for f in forks:
                if isinstance(f, Sandbox):
                    f.kill()


BUSY = r"""
import subprocess
loop = 'end=$((SECONDS+180)); while [ $SECONDS -lt $end ] && [ ! -e /tmp/stop ]; do /bin/true; done'
busy = [subprocess.Popen(['bash', '-c', loop]) for _ in range(6)]
"""


def test_fork_of_a_busy_sandbox_gets_every_fork_and_pauses_after(e2b_env):
    """fork(count=2) of a sandbox whose processes keep forking: runboxd freezes the source for each
    copy one after another (trying the freezer again while it gives up), and the thaw of one copy
    ends before the next freeze (the second fork was once lost to Docker's "already paused")."""
    with Sandbox.create(timeout=600) as sbx:
        e2b_env.session_ids.add(sbx.sandbox_id)
        assert sbx.run_code(BUSY).error is None
        sbx.files.write("/home/user/shared.txt", "busy source")
        made = []
        try:
            for _ in range(2):
                forks = sbx.fork(count=2, timeout=600)
                ok = [f for f in forks if isinstance(f, Sandbox)]
                made += ok
                for f in ok:
                    e2b_env.session_ids.add(f.sandbox_id)
                assert len(forks) == 2, forks
                # a fork whose freezes all failed (the host's freezer, after runboxd's tries) says so;
                # none is lost to a race of runboxd's own or answered 502
                assert all(isinstance(f, Sandbox) or ("503" in str(f) and "freezer" in str(f)) for f in forks), forks
                for f in ok:
                    assert f.files.read("/home/user/shared.txt") == "busy source"
                assert sbx.pause() is True
                assert _status(e2b_env, sbx.sandbox_id) == "suspended"
                again = Sandbox.connect(sbx.sandbox_id, timeout=600)
                assert again.run_code("print(len(busy))").logs.stdout == ["6\n"]
        finally:
            for f in made:
                f.kill()


def test_the_older_resume_and_refusals(e2b_env):
    """POST /sandboxes/{id}/resume (older SDKs) resumes a paused sandbox and answers 409 for a
    running one; what runbox cannot take is 400 naming it."""
    with Sandbox.create(timeout=600) as sbx:
        sid = sbx.sandbox_id
        e2b_env.session_ids.add(sid)
        r = _api(e2b_env, "POST", f"/sandboxes/{sid}/resume", {"timeout": 60})
        assert r.status_code == 409 and "running already" in r.json()["message"], r.text
        r = _api(e2b_env, "POST", f"/sandboxes/{sid}/pause", {"memory": "no"})
        assert r.status_code == 400 and "memory" in r.json()["message"], r.text
        r = _api(e2b_env, "POST", f"/sandboxes/{sid}/pause", {"snapshot": True})
        assert r.status_code == 400 and "snapshot" in r.json()["message"], r.text
        r = _api(e2b_env, "POST", f"/sandboxes/{sid}/pause", {"requireHealthyGuest": True})
        assert r.status_code == 204, r.text
        r = _api(e2b_env, "POST", f"/sandboxes/{sid}/resume", {"timeout": 60, "autoPause": True})
        assert r.status_code == 201 and r.json()["sandboxID"] == sid, r.text
        assert _status(e2b_env, sid) in ("ready", "busy")
        assert sbx.get_info().lifecycle["on_timeout"] == "pause"
        r = _api(e2b_env, "POST", f"/sandboxes/{sid}/fork", {"count": 21})
        assert r.status_code == 400 and "count" in r.json()["message"], r.text
        r = _api(e2b_env, "GET", "/v2/sandboxes?state=sleeping")
        assert r.status_code == 400 and "state" in r.json()["message"], r.text
        # whole numbers are digits only (strtol took '+1' and ' 1')
        for q, word in (("limit=%2B1", "limit"), ("limit=%201", "limit"), ("nextToken=-0", "nextToken")):
            r = _api(e2b_env, "GET", "/v2/sandboxes?" + q)
            assert r.status_code == 400 and word in r.json()["message"], (q, r.text)
        r = _api(e2b_env, "GET", f"/sandboxes/{sid}/metrics?start=%2B1")
        assert r.status_code == 400 and "start" in r.json()["message"], r.text
        with pytest.raises(SandboxException, match="snapshots"):
            sbx.create_snapshot()
        r = _api(e2b_env, "POST", "/v2/sandboxes", {"templateID": "base", "autoResume": {"enabled": True}})
        assert r.status_code == 400 and "autoResume" in r.json()["message"], r.text
    r = _api(e2b_env, "POST", f"/sandboxes/{sid}/pause")
    assert r.status_code == 404, r.text


"""Lifecycle across time and restarts: idle expiry, kill -9 and restart on the same db, orphan
container removal, and behaviour when Docker is unreachable."""

from __future__ import annotations

import json
import secrets
import subprocess

import rbtest
from rbtest import check_error, check_schema


def test_idle_session_expires_and_container_goes(sandbox_image, make_server):
    srv = make_server(["--idle-timeout", "3"])
    s = srv.create_session()
    sid = s["session_id"]
    assert s["expires_at"] is not None, "with --idle-timeout the session must say when it expires"
    cid = s["container_id"]
    assert rbtest.container_exists(cid)

    def ended():
        r = srv.get(f"/sessions/{sid}")
        return r.status_code == 404 or r.json()["status"] == "ended"

    rbtest.wait_until(ended, "the idle session to end")
    rbtest.wait_until(lambda: not rbtest.container_exists(cid), "the idle session's container to be removed")
    assert sid not in [x["session_id"] for x in srv.get("/sessions").json()["sessions"]]
    check_error(srv.post("/execute", {"session_id": sid, "code": "1"}), 409 if
                srv.get(f"/sessions/{sid}").status_code == 200 else 404)


def test_activity_keeps_session_alive(sandbox_image, make_server):
    srv = make_server(["--idle-timeout", "3"])
    sid = srv.create_session()["session_id"]
    # A running execution is not idleness: a 6 s cell outlives the 3 s idle timeout.
    r = srv.execute(sid, "import time\ntime.sleep(6)\nprint('alive')")
    assert r["status"] == "completed" and r["stdout"] == "alive\n"


def test_restart_after_kill9_keeps_sessions(sandbox_image, make_server):
    srv = make_server()
    s = srv.create_session()
    sid = s["session_id"]
    assert srv.execute(sid, "x = 41")["status"] == "completed"
    done = srv.execute(sid, "print('finished before the crash')")
    running = srv.execute(sid, "import time\nfor _ in range(3000):\n    time.sleep(0.01)", wait=False)
    srv.wait_status(running["request_id"], "running")

    srv.kill9()
    assert rbtest.container_exists(s["container_id"]), "the sandbox must outlive runboxd"
    srv.start()

    st = srv.status(running["request_id"])
    assert st["status"] == "error", st
    assert st["completed_at"] is not None
    doc = srv.results(running["request_id"])
    assert "server restarted" in json.dumps(doc).lower(), doc
    # Results from before the crash are still there.
    assert srv.results(done["request_id"])["stdout"] == "finished before the crash\n"
    # The session is still usable and kept its variables. Re-adopting it (re-attach, interrupt the
    # cell left running) happens in the background after start, so it may still be "starting".
    got = rbtest.wait_until(lambda: (lambda g: g if g["status"] != "starting" else None)(srv.session(sid)),
                            f"session {sid} to be re-adopted", rbtest.DEADLINE_S)
    assert got["status"] in ("ready", "busy"), got
    r = srv.execute(sid, "print(x + 1)")
    assert r["status"] == "completed", r
    assert r["stdout"] == "42\n"
    assert sid in [x["session_id"] for x in srv.get("/sessions").json()["sessions"]]


def test_graceful_restart_keeps_sessions(sandbox_image, make_server):
    srv = make_server()
    sid = srv.create_session()["session_id"]
    srv.execute(sid, "kept = [1, 2, 3]")
    srv.restart()
    assert srv.execute(sid, "sum(kept)")["result"] == "6"


def test_orphan_containers_are_removed_at_start(sandbox_image, make_server):
    srv = make_server()
    s = srv.create_session()
    labels = rbtest.inspect(s["container_id"])["Config"]["Labels"]
    instance = labels["runbox.instance"]
    srv.stop()

    orphan_name = "runbox-test-orphan-" + secrets.token_hex(4)
    orphan_sid = "s_" + secrets.token_hex(16)
    try:
        rbtest.docker("create", "--name", orphan_name, "--network", "none",
                      "--label", "runbox.test=1", "--label", f"runbox.instance={instance}",
                      "--label", f"runbox.session={orphan_sid}", sandbox_image)
        rbtest.docker("start", orphan_name)
        srv.start()
        rbtest.wait_until(lambda: not rbtest.containers_with_label(f"runbox.session={orphan_sid}"),
                          "runboxd to remove the orphan container")
        # Its own session's container is not an orphan.
        assert rbtest.container_exists(s["container_id"])
        assert srv.execute(s["session_id"], "1 + 1")["result"] == "2"
    finally:
        subprocess.run(["docker", "rm", "-f", orphan_name], capture_output=True)


def test_docker_unreachable(make_server):
    srv = make_server(["--docker-socket", "/nonexistent/docker.sock"], wait_docker=False)
    r = srv.get("/health")
    assert r.status_code == 200
    h = r.json()
    check_schema(h, "Health")
    assert h["status"] == "degraded"
    assert h["docker"]["reachable"] is False
    assert h["docker"]["error"]
    err = check_error(srv.post("/sessions", {}), 503)
    assert err["code"] == "docker_unavailable"
    # Everything that does not need Docker still answers.
    assert srv.get("/sessions").json() == {"sessions": []}
    check_error(srv.get("/sessions/s_" + "0" * 32), 404)


def test_a_workspace_volume_a_helper_held_goes_once_unused(sandbox_image, make_server):
    """A session's workspace is an anonymous volume, removed with its container; but one that a
    helper (installer, file copier) mounted by name was still holding when the container went is
    kept by Docker, and not removed with the helper. runboxd looks for such volumes (labelled
    with its instance, used by no container) and removes them."""
    srv = make_server()
    s = srv.create_session()
    mounts = [m for m in rbtest.inspect(s["container_id"])["Mounts"] if m["Destination"] == "/workspace"]
    assert len(mounts) == 1 and mounts[0]["Type"] == "volume", mounts
    volume = mounts[0]["Name"]
    vlabels = json.loads(rbtest.docker("volume", "inspect", volume, "--format", "{{json .Labels}}"))
    assert vlabels.get("runbox.workspace") == srv.db_instance(), vlabels
    holder = "runbox-test-holder-" + secrets.token_hex(4)
    try:
        # a helper holding the volume by name while the session ends
        rbtest.docker("run", "-d", "--name", holder, "--network", "none", "--label", "runbox.test=1",
                      "-v", f"{volume}:/w", "--entrypoint", "sleep", sandbox_image, "600")
        srv.delete_session(s["session_id"])
        rbtest.wait_until(lambda: not rbtest.container_exists(s["container_id"]), "the sandbox removed")
        assert rbtest.docker("volume", "ls", "-q", "--filter", f"name={volume}").strip(), "kept while held"
        rbtest.docker("rm", "-f", holder)
        rbtest.wait_until(lambda: not rbtest.docker("volume", "ls", "-q", "--filter", f"name={volume}").strip(),
                          "runboxd to remove the volume no container uses", deadline=max(rbtest.DEADLINE_S, 75))
        # and one let go just before a graceful stop goes with that stop (the sweep ran just now)
        s2 = srv.create_session()
        volume = [m for m in rbtest.inspect(s2["container_id"])["Mounts"] if m["Destination"] == "/workspace"][0]["Name"]
        rbtest.docker("run", "-d", "--name", holder, "--network", "none", "--label", "runbox.test=1",
                      "-v", f"{volume}:/w", "--entrypoint", "sleep", sandbox_image, "600")
        srv.delete_session(s2["session_id"])
        rbtest.wait_until(lambda: not rbtest.container_exists(s2["container_id"]), "the sandbox removed")
        rbtest.docker("rm", "-f", holder)
        srv.stop()
        assert not rbtest.docker("volume", "ls", "-q", "--filter", f"name={volume}").strip(), "left after the stop"
    finally:
        subprocess.run(["docker", "rm", "-f", holder], capture_output=True)
        subprocess.run(["docker", "volume", "rm", volume], capture_output=True)


def test_the_instance_label_is_shown_in_the_log_and_health(sandbox_image, make_server):
    """An operator finds runboxd's containers by its instance label without reading SQLite: the
    start line of the log and GET /health name it, and it is the label of the sandboxes."""
    srv = make_server()
    h = srv.get("/health").json()
    check_schema(h, "Health")
    instance = h["instance"]
    assert instance == srv.db_instance()
    assert f"instance {instance}" in srv.log_text() and f"runbox.instance={instance}" in srv.log_text()
    s = srv.create_session()
    labels = rbtest.inspect(s["container_id"])["Config"]["Labels"]
    assert labels["runbox.instance"] == instance
    assert s["container_id"] in rbtest.containers_with_label(f"runbox.instance={instance}")
    # The same after a restart on the same database.
    srv.restart()
    assert srv.get("/health").json()["instance"] == instance

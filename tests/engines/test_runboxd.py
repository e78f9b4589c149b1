"""One runboxd over three Docker engines of their own (issue 15): nested dockerd containers on an
internal network the test makes, each serving its Engine API over TLS with client certificates
(enginehub.EngineCluster), runboxd started with --engine NAME=tcp://IP:2376 for each and the
cluster's CA and client certificate (--engine-tls-*).

What is checked: placement spreads 30 sessions by load; a paused node's sessions are unavailable
(503 with Retry-After on execute) while the other nodes serve, and come back with their variables;
a stopped node's sessions are unavailable, new sessions go elsewhere, and once it is back they end
dead with the reason (their containers did not survive); an engine without the sandbox image is
left out with a message naming it and the command that loads it; a kill -9 and restart of
runboxd finds every session on every engine again; drain; MCP tools and the files API on a
session of a remote engine. Every request goes from the host to the
nodes' addresses on the test's own network, or to runboxd on loopback.
"""

from __future__ import annotations

import collections
import json
import sys
import time
from pathlib import Path

import pytest

from enginehub import EngineCluster

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "integration"))

import rbtest  # noqa: E402

# The image runboxd is told to use: the sandbox image under a second name of the test's own,
# given on some nodes only (see the image test); the host's tag is never touched.
TEST_IMAGE = "runbox-test-engines-sandbox:latest"


@pytest.fixture(scope="module")
def cluster(node_image, sandbox_image):
    with EngineCluster(n=3, image=node_image, sandbox_image=sandbox_image) as c:
        for i in range(3):
            tag(c, i)
        print("cluster up: %s" % json.dumps(c.timings))
        yield c


def tag(c: EngineCluster, i: int) -> None:
    repo, t = TEST_IMAGE.rsplit(":", 1)
    r = c.api(i, "POST", f"/images/{c.sandbox_image_id}/tag?repo={repo}&tag={t}")
    assert r.status_code == 201, r.text


def untag(c: EngineCluster, i: int) -> None:
    r = c.api(i, "DELETE", f"/images/{TEST_IMAGE}?noprune=1")
    assert r.status_code in (200, 404), r.text


def engine_args(c: EngineCluster) -> list[str]:
    args = []
    for i, n in enumerate(c.nodes):
        args += ["--engine", f"n{i + 1}={n.url}"]
    return args + ["--engine-tls-ca", str(c.ca_pem), "--engine-tls-cert", str(c.client_cert), "--engine-tls-key",
                   str(c.client_key), "--image", TEST_IMAGE, "--pool-size", "0", "--preload", "",
                   "--docker-timeout", "10"]


@pytest.fixture
def runboxd(cluster, start_runboxd):
    return lambda extra=None: start_runboxd(engine_args(cluster) + list(extra or []))


def engines(srv) -> dict:
    return {e["name"]: e for e in srv.get("/health").json()["docker"]["engines"]}


def wait_placing(srv, names) -> None:
    rbtest.wait_until(lambda: all(engines(srv)[n]["placing"] for n in names), f"engines {names} placing", 60)


def engine_of(s: dict) -> str:
    return s["container_id"].split("@", 1)[0]


def status(srv, sid: str) -> str:
    return srv.session(sid)["status"]


def test_thirty_sessions_spread_by_load_and_a_paused_node_comes_back(runboxd, cluster):
    srv = runboxd()
    wait_placing(srv, ["n1", "n2", "n3"])
    h = engines(srv)
    assert all(e["reachable"] and e["image_ok"] and e["api_version"] for e in h.values()), h
    sessions = [srv.create_session(timeout=rbtest.DEADLINE_S) for _ in range(30)]
    placed = collections.Counter(engine_of(s) for s in sessions)
    assert placed == {"n1": 10, "n2": 10, "n3": 10}, placed
    assert {e["name"]: e["sandboxes"] for e in engines(srv).values()} == {"n1": 10, "n2": 10, "n3": 10}
    for s in sessions:
        assert srv.execute(s["session_id"], f"v = '{s['session_id'][-6:]}'\nv")["result"] == repr(s["session_id"][-6:])
    # n2 paused for 20 s: its sessions say unavailable, the others serve
    on = {n: [s for s in sessions if engine_of(s) == n] for n in ("n1", "n2", "n3")}
    paused_at = time.monotonic()
    cluster.pause(1)
    try:
        rbtest.wait_until(lambda: engines(srv)["n2"]["reachable"] is False, "n2 seen down", 60)
        for s in on["n2"]:
            rbtest.wait_until(lambda: status(srv, s["session_id"]) == "unavailable", "n2's sessions unavailable", 30)
        r = srv.post("/execute", {"session_id": on["n2"][0]["session_id"], "code": "v", "wait": True})
        err = rbtest.check_error(r, 503, "n2")
        assert r.headers.get("Retry-After"), r.headers
        for s in on["n1"][:3] + on["n3"][:3]:
            assert srv.execute(s["session_id"], "v")["result"] == repr(s["session_id"][-6:])
        new = srv.create_session(timeout=rbtest.DEADLINE_S)
        assert engine_of(new) in ("n1", "n3")
        time.sleep(max(0.0, 20 - (time.monotonic() - paused_at)))
    finally:
        cluster.unpause(1)
    # back: the same sandboxes, with their variables
    for s in on["n2"]:
        rbtest.wait_until(lambda: status(srv, s["session_id"]) == "ready", "n2's sessions back", 60)
        assert srv.execute(s["session_id"], "v")["result"] == repr(s["session_id"][-6:])


def test_a_stopped_nodes_sessions_end_dead_once_it_is_back(runboxd, cluster):
    srv = runboxd()
    wait_placing(srv, ["n1", "n2", "n3"])
    sessions = [srv.create_session(timeout=rbtest.DEADLINE_S) for _ in range(3)]
    assert sorted(engine_of(s) for s in sessions) == ["n1", "n2", "n3"]
    victim = next(s for s in sessions if engine_of(s) == "n3")
    cluster.stop(2)
    try:
        # dockerd stops its containers on the way down (the runner's stream ends and the engine
        # still says so: dead at once), or runboxd sees only that the engine does not answer
        # (unavailable until it is back)
        rbtest.wait_until(lambda: status(srv, victim["session_id"]) in ("unavailable", "dead"),
                          "n3's session unavailable or dead", 60)
        rbtest.wait_until(lambda: engines(srv)["n3"]["reachable"] is False, "n3 seen down", 60)
        placed = [engine_of(srv.create_session(timeout=rbtest.DEADLINE_S)) for _ in range(2)]
        assert "n3" not in placed, placed
    finally:
        cluster.start(2)
    rbtest.wait_until(lambda: status(srv, victim["session_id"]) == "dead", "n3's session dead after its return", 60)
    doc = srv.session(victim["session_id"])
    assert "stopped (exit code" in doc["end_reason"] and "engine" in doc["end_reason"], doc
    for s in sessions:
        if s is not victim:
            assert srv.execute(s["session_id"], "1 + 1")["result"] == "2"


def test_an_engine_without_the_image_is_left_out_and_named(runboxd, cluster):
    untag(cluster, 2)
    try:
        srv = runboxd()
        rbtest.wait_until(lambda: engines(srv)["n3"]["image_ok"] is False and engines(srv)["n1"]["placing"],
                          "n3 probed without the image", 60)
        n3 = engines(srv)["n3"]
        assert n3["placing"] is False and TEST_IMAGE in n3["error"] and "load" in n3["error"], n3
        placed = collections.Counter(engine_of(srv.create_session(timeout=rbtest.DEADLINE_S)) for _ in range(4))
        assert placed == {"n1": 2, "n2": 2}, placed
        # drained as well: n1 only
        assert srv.post("/engines/n2/drain").status_code == 200
        assert engine_of(srv.create_session(timeout=rbtest.DEADLINE_S)) == "n1"
        assert srv.post("/engines/n1/drain").status_code == 200
        err = rbtest.check_error(srv.post("/sessions", {}), 503, "n3 lacks the sandbox image")
        assert "n1 is drained" in err["message"] and "n2 is drained" in err["message"], err
    finally:
        tag(cluster, 2)


def test_kill_9_and_restart_finds_every_session_on_every_engine(runboxd, cluster):
    srv = runboxd()
    wait_placing(srv, ["n1", "n2", "n3"])
    sessions = [srv.create_session(timeout=rbtest.DEADLINE_S) for _ in range(6)]
    assert collections.Counter(engine_of(s) for s in sessions) == {"n1": 2, "n2": 2, "n3": 2}
    for s in sessions:
        srv.execute(s["session_id"], f"w = {len(s['session_id'])} * 2")
    srv.kill9()
    srv.start()
    for s in sessions:
        rbtest.wait_until(lambda: status(srv, s["session_id"]) == "ready", "the session found again", 60)
        assert srv.execute(s["session_id"], "w")["result"] == str(2 * len(s["session_id"]))


def test_mcp_and_files_on_a_remote_engine(runboxd, cluster):
    import anyio
    from mcp import Client

    srv = runboxd()
    wait_placing(srv, ["n1", "n2", "n3"])
    srv.post("/engines/n1/drain")
    srv.post("/engines/n3/drain")
    sid = srv.create_session(timeout=rbtest.DEADLINE_S)["session_id"]
    assert engine_of(srv.session(sid)) == "n2"

    async def go():
        async with Client(srv.url + "/mcp", mode="legacy") as c:
            up = await c.call_tool("upload_file", {"session_id": sid, "filename": "in.txt", "content": "remote"})
            run = await c.call_tool("execute_code", {"session_id": sid, "code": "open('in.txt').read().upper()"})
            down = await c.call_tool("download_file", {"session_id": sid, "src_path": "in.txt"})
            return up, run, down

    up, run, down = anyio.run(go)
    assert not up.is_error and not run.is_error and not down.is_error, (up.content, run.content, down.content)
    assert run.structured_content["result"] == "'REMOTE'", run.structured_content
    assert "remote" in down.content[0].text
    r = srv.get(f"/sessions/{sid}/files/download?path=in.txt")
    assert r.status_code == 200 and r.content == b"remote"


def test_hibernate_resume_and_fork_stay_on_the_engine_that_holds_the_files(runboxd, cluster):
    srv = runboxd()
    wait_placing(srv, ["n1", "n2", "n3"])
    srv.post("/engines/n1/drain")
    srv.post("/engines/n2/drain")
    s = srv.create_session(timeout=rbtest.DEADLINE_S)
    sid = s["session_id"]
    assert engine_of(s) == "n3"
    assert srv.execute(sid, "open('/workspace/f.txt', 'w').write('on n3')")["status"] == "completed"
    # new sessions would go to n1 now: what a hibernated or forked session needs is on n3
    srv.delete("/engines/n1/drain")
    srv.post("/engines/n3/drain")
    wait_placing(srv, ["n1"])
    r = srv.post(f"/sessions/{sid}/pause", {"mode": "hibernate"})
    assert r.status_code == 200 and r.json()["status"] == "hibernated", r.text
    kept = cluster.api(2, "GET", "/volumes?filters=" + json.dumps({"label": ["runbox.keep"]})).json()["Volumes"]
    assert len(kept) == 1, kept
    r = srv.post(f"/sessions/{sid}/resume")
    assert r.status_code == 200, r.text
    assert engine_of(r.json()) == "n3", "a resume goes where the kept files are"
    f = srv.post(f"/sessions/{sid}/fork")
    assert f.status_code == 201, f.text
    srv.track(f.json())
    assert engine_of(f.json()) == "n3", "a fork goes where its source's files are"
    for x in (sid, f.json()["session_id"]):
        assert srv.execute(x, "print(open('/workspace/f.txt').read())")["stdout"] == "on n3\n"


def delete_volume(srv, ref: str) -> None:
    """DELETE /volumes/{ref}, again while a sandbox that mounted it is still being removed (409)."""
    last = {}

    def gone() -> bool:
        r = srv.delete(f"/volumes/{ref}")
        last["r"] = r
        return r.status_code == 204

    rbtest.wait_until(gone, f"volume {ref} deleted (last: {last.get('r') and last['r'].text})", 30)


def engine_volumes(cluster, i: int) -> list:
    return cluster.api(i, "GET", "/volumes?filters=" + json.dumps({"label": ["runbox.volume"]})).json()["Volumes"]


def test_a_volume_lives_on_one_engine_and_its_sessions_are_placed_there(runboxd, cluster):
    # the nodes' data outlives a run (their volumes are kept): what a failed run left goes first
    for i in range(3):
        for v in engine_volumes(cluster, i):
            cluster.api(i, "DELETE", f"/volumes/{v['Name']}")
    srv = runboxd()
    wait_placing(srv, ["n1", "n2", "n3"])
    srv.post("/engines/n1/drain")
    srv.post("/engines/n3/drain")
    r = srv.post("/volumes", {"name": "data"})
    assert r.status_code == 201, r.text
    assert r.json()["engine"] == "n2", r.json()
    # new sessions would go to n1 now; one that mounts the volume goes to n2, where its files are
    srv.delete("/engines/n1/drain")
    srv.post("/engines/n2/drain")
    wait_placing(srv, ["n1"])
    r = srv.post("/volumes", {"name": "other"})
    assert r.status_code == 201 and r.json()["engine"] == "n1", r.text
    a = srv.create_session({"language": "python", "execution_options": {"mounts": [{"volume": "data"}]}},
                           timeout=rbtest.DEADLINE_S)
    b = srv.create_session(timeout=rbtest.DEADLINE_S)
    assert engine_of(a) == "n2", "a session goes where its volume is"
    assert engine_of(b) == "n1"
    assert srv.execute(a["session_id"], "open('/workspace/data/f.txt', 'w').write('on n2')")["status"] == "completed"
    on_n2 = engine_volumes(cluster, 1)
    assert [v["Labels"]["runbox.volume"] for v in on_n2] == [srv.get("/volumes/data").json()["volume_id"]], on_n2
    # two volumes on two engines cannot be mounted together
    r = srv.post("/sessions", {"language": "python",
                               "execution_options": {"mounts": [{"volume": "data"}, {"volume": "other"}]}})
    assert r.status_code == 409 and "another engine" in r.text, r.text
    for s in (a, b):
        srv.delete(f"/sessions/{s['session_id']}")
    c = srv.create_session({"language": "python", "execution_options": {"mounts": [{"volume": "data"}]}},
                           timeout=rbtest.DEADLINE_S)
    assert engine_of(c) == "n2"
    assert srv.execute(c["session_id"], "print(open('/workspace/data/f.txt').read())")["stdout"] == "on n2\n"
    srv.delete(f"/sessions/{c['session_id']}")
    srv.delete("/engines/n2/drain")
    srv.delete("/engines/n3/drain")
    for name in ("data", "other"):
        delete_volume(srv, name)
    for i in range(3):
        left = engine_volumes(cluster, i)
        assert not left, f"n{i + 1} keeps {left}"

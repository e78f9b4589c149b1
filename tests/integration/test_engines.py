"""runboxd placing sessions over several Docker engines (--engine NAME=URL, core/backend/multi.c).

Two engines here are two ways into the machine's one real engine: "a" its unix socket, "b"
tcp://127.0.0.1:PORT through dockerproxy.py's loopback relay, so placement, the engine names in
container ids, routing, draining, an engine that goes away and a restart are all real without a
second machine. Engines of their own (nested dockerd with TLS) are tests/engines' business.
"""

from __future__ import annotations

import collections

import dockerproxy as dp
import rbtest


def engine_of(session: dict) -> str:
    cid = session["container_id"]
    assert "@" in cid, cid
    return cid.split("@", 1)[0]


def engines(srv) -> dict:
    h = srv.get("/health").json()
    return {e["name"]: e for e in h["docker"]["engines"]}


def test_sessions_spread_over_engines_drain_and_restart(sandbox_image, make_server):
    proxy = dp.DockerProxy(tcp=True)
    srv = None
    try:
        srv = make_server(["--engine", "a=unix:///var/run/docker.sock", "--engine", f"b={proxy.url},capacity=100",
                           "--pool-size", "0"])
        rbtest.wait_until(lambda: all(e["reachable"] and e["image_ok"] for e in engines(srv).values()),
                          "both engines probed, with the sandbox image")
        eng = engines(srv)
        assert set(eng) == {"a", "b"}, eng
        metrics = srv.get("/metrics").text
        assert 'runbox_engine_reachable{engine="a"} 1' in metrics and 'runbox_engine_image_ok{engine="b"} 1' in metrics
        assert eng["a"]["image_id"] == eng["b"]["image_id"], eng
        # six sessions: three on each engine (least loaded first, ties to the first listed)
        sessions = [srv.create_session(timeout=rbtest.DEADLINE_S) for _ in range(6)]
        placed = collections.Counter(engine_of(s) for s in sessions)
        assert placed == {"a": 3, "b": 3}, placed
        for s in sessions:
            assert srv.execute(s["session_id"], f"x = '{s['session_id']}'\nx")["result"] == repr(s["session_id"])
        on_b = next(s for s in sessions if engine_of(s) == "b")
        r = srv.request("PUT", f"/sessions/{on_b['session_id']}/files?path=f.txt", data=b"on b")
        assert r.status_code in (200, 201), r.text
        assert srv.execute(on_b["session_id"], "open('f.txt').read()")["result"] == "'on b'"
        assert proxy.seen(dp.ATTACH) >= 3, "the sessions on b are attached through b"
        # drain b: new sessions go to a only; b's sessions go on
        r = srv.post("/engines/b/drain")
        assert r.status_code == 200 and {e["name"]: e["draining"] for e in r.json()["engines"]} == {"a": False,
                                                                                                   "b": True}, r.text
        more = [srv.create_session(timeout=rbtest.DEADLINE_S) for _ in range(2)]
        assert [engine_of(s) for s in more] == ["a", "a"]
        assert srv.execute(on_b["session_id"], "x")["result"] == repr(on_b["session_id"])
        assert srv.delete("/engines/b/drain").status_code == 200
        rbtest.check_error(srv.post("/engines/nope/drain"), 404, "nope")
        # kill -9 and restart: every session is found again on its engine, with its state
        srv.kill9()
        srv.start()
        for s in sessions:
            rbtest.wait_until(lambda: srv.session(s["session_id"])["status"] == "ready", "the session back")
            assert srv.execute(s["session_id"], "x")["result"] == repr(s["session_id"])
        # engine b goes away (every connection to it cut, new ones refused): its sessions are
        # unavailable, not dead; execute says so with 503 and Retry-After; a's sessions and new
        # sessions carry on
        proxy.down()
        rbtest.wait_until(lambda: engines(srv)["b"]["reachable"] is False, "b seen down", deadline=60)
        assert "127.0.0.1" in engines(srv)["b"]["error"], engines(srv)["b"]
        on_b_all = [s for s in sessions if engine_of(s) == "b"]
        for s in on_b_all:
            rbtest.wait_until(lambda: srv.session(s["session_id"])["status"] == "unavailable", "b's session unavailable")
        doc = srv.session(on_b["session_id"])
        assert "engine" in doc["unavailable_reason"], doc
        r = srv.post("/execute", {"session_id": on_b["session_id"], "code": "x", "wait": True})
        err = rbtest.check_error(r, 503, "unavailable")
        assert r.headers.get("Retry-After"), r.headers
        s = srv.create_session(timeout=rbtest.DEADLINE_S)
        assert engine_of(s) == "a"
        assert srv.execute(s["session_id"], "1 + 1")["result"] == "2"
        on_a = next(x for x in sessions if engine_of(x) == "a")
        assert srv.execute(on_a["session_id"], "x")["result"] == repr(on_a["session_id"])
        # b is back: its sessions are attached again and kept their variables
        proxy.up()
        rbtest.wait_until(lambda: engines(srv)["b"]["reachable"] is True, "b back", deadline=60)
        for s in on_b_all:
            rbtest.wait_until(lambda: srv.session(s["session_id"])["status"] == "ready", "b's session back")
            assert srv.execute(s["session_id"], "x")["result"] == repr(s["session_id"])
    finally:
        if srv is not None:
            srv.stop()
        proxy.close()


def test_no_engine_can_take_a_session_says_why(sandbox_image, make_server):
    proxy = dp.DockerProxy(tcp=True)
    url = proxy.url
    proxy.close()
    srv = make_server(["--engine", f"only={url}", "--pool-size", "0"], wait_docker=False)
    rbtest.wait_until(lambda: engines(srv)["only"]["reachable"] is False, "the engine probed")
    err = rbtest.check_error(srv.post("/sessions", {}), 503)
    assert "only" in err["message"], err

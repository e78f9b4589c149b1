"""A session whose sandbox died says why on every route that names it (issue 42, item 10): the
reason GET /sessions/{id} keeps (the container's exit code, its runner killed) is in the answer of
an execution, a pause, a resume, a fork, a network change, a file call and MCP's tools, not a bare
"no live session". Another key's ended session still reads as unknown."""

from __future__ import annotations

import hashlib

import anyio
from mcp import Client

import rbtest
from rbtest import check_error


def kill_and_wait_dead(srv: rbtest.Server, session: dict) -> str:
    rbtest.docker("kill", session["container_id"])
    sid = session["session_id"]
    rbtest.wait_until(lambda: srv.get(f"/sessions/{sid}").json()["status"] == "dead", "the session to be dead")
    reason = srv.get(f"/sessions/{sid}").json()["end_reason"]
    assert "exit code 137" in reason, reason
    return reason


def test_every_route_says_why_a_dead_session_ended(sandbox_image, make_server):
    srv = make_server(["--pool-size", "0"])
    s = srv.create_session()
    sid = s["session_id"]
    kill_and_wait_dead(srv, s)

    answers = {
        "execute": (srv.post("/execute", {"session_id": sid, "code": "1", "wait": True}), 409),
        "pause": (srv.post(f"/sessions/{sid}/pause", {}), 404),
        "resume": (srv.post(f"/sessions/{sid}/resume", {}), 404),
        "fork": (srv.post(f"/sessions/{sid}/fork", {}), 404),
        "network": (srv.request("PUT", f"/sessions/{sid}/network", json={"network": {"allow": []}}), 404),
        "files": (srv.get(f"/sessions/{sid}/files"), 404),
    }
    for route, (r, status) in answers.items():
        err = check_error(r, status)
        assert "exit code 137" in err["message"] and "has ended (dead at " in err["message"], (route, err)
        assert "create a new session" in err["message"], (route, err)

    async def mcp():
        async with Client(srv.url + "/mcp", mode="legacy") as c:
            r = await c.call_tool("execute_code", {"session_id": sid, "code": "1"})
            text = "".join(getattr(x, "text", "") for x in r.content)
            assert r.is_error and "exit code 137" in text, text
            r = await c.call_tool("pause_session", {"session_id": sid})
            text = "".join(getattr(x, "text", "") for x in r.content)
            assert r.is_error and "exit code 137" in text, text

    anyio.run(mcp)


def test_another_keys_ended_session_still_reads_as_unknown(sandbox_image, make_server, tmp_path):
    keys = {"alice": "k-alice-0123456789", "bob": "k-bob-0123456789"}
    path = tmp_path / "keys"
    path.write_text("".join(f"{n} sha256:{hashlib.sha256(k.encode()).hexdigest()}\n" for n, k in keys.items()))
    srv = make_server(["--api-keys-file", str(path), "--pool-size", "0"])
    alice = {"Authorization": f"Bearer {keys['alice']}"}
    bob = {"Authorization": f"Bearer {keys['bob']}"}
    r = srv.post("/sessions", {}, headers=alice)
    assert r.status_code == 201, r.text
    s = r.json()
    srv.track(s)
    rbtest.docker("kill", s["container_id"])
    sid = s["session_id"]
    rbtest.wait_until(lambda: srv.get(f"/sessions/{sid}", headers=alice).json()["status"] == "dead",
                      "the session to be dead")
    for r in (srv.post(f"/sessions/{sid}/pause", {}, headers=bob),
              srv.post("/execute", {"session_id": sid, "code": "1"}, headers=bob)):
        err = check_error(r, 404)
        assert "exit code" not in err["message"] and "ended" not in err["message"], err
    err = check_error(srv.post(f"/sessions/{sid}/pause", {}, headers=alice), 404)
    assert "exit code 137" in err["message"], err

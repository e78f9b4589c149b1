"""Roles (issue 27; docs/security.md "Roles"): role=user|admin|viewer in the keys file, against a
real runboxd and real sandboxes. A user key sees its own sessions only; an admin key sees and ends
every key's sessions, drains engines and reloads the keys; a viewer key reads everything and
changes nothing: every write, MCP call and websocket is 403 naming its role. Key files without
role= keep working (their keys are users)."""

from __future__ import annotations

import hashlib
import json
import uuid

import pytest
import requests
import websocket

import rbtest

KEYS = {"alice": "alice-key-" + "1" * 20, "bob": "bob-key-" + "2" * 20, "boss": "boss-key-" + "3" * 20,
        "auditor": "auditor-key-" + "4" * 20}
ROLES = {"boss": " role=admin", "auditor": " role=viewer", "bob": " role=user"}


def line(name: str, key: str) -> str:
    return f"{name} sha256:{hashlib.sha256(key.encode()).hexdigest()}{ROLES.get(name, '')}\n"


@pytest.fixture(scope="module")
def srv(sandbox_image, tmp_path_factory):
    work = tmp_path_factory.mktemp("runboxd-roles")
    (work / "api-keys").write_text("".join(line(n, k) for n, k in KEYS.items()))
    s = rbtest.Server(work, ["--api-keys-file", str(work / "api-keys"), "--pool-size", "0"])
    s.start()
    s.http.headers["Authorization"] = f"Bearer {KEYS['boss']}"  # teardown sees every key's sessions
    yield s
    rbtest.finish_servers([s])


def as_(name: str) -> dict:
    return {"Authorization": f"Bearer {KEYS[name]}"}


def test_users_see_their_own_admins_and_viewers_see_all(srv):
    r = srv.post("/sessions", {}, headers=as_("alice"))
    assert r.status_code == 201, r.text
    sid = r.json()["session_id"]
    srv.track(r.json())
    assert r.json()["owner"] == "alice"
    r = srv.post("/execute", {"session_id": sid, "code": "x = 41", "wait": True}, headers=as_("alice"))
    assert r.status_code == 200 and r.json()["status"] == "completed", r.text
    # bob, a user, sees nothing of it
    assert srv.get(f"/sessions/{sid}", headers=as_("bob")).status_code == 404
    assert sid not in {s["session_id"] for s in srv.get("/sessions", headers=as_("bob")).json()["sessions"]}
    # the viewer and the admin see it, with its key's name
    for who in ("auditor", "boss"):
        listed = {s["session_id"]: s for s in srv.get("/sessions", headers=as_(who)).json()["sessions"]}
        assert listed[sid]["owner"] == "alice", (who, listed)
        rbtest.check_schema(listed[sid], "Session")
        assert srv.get(f"/sessions/{sid}", headers=as_(who)).status_code == 200
        rid = r.json()["request_id"]
        assert srv.get(f"/execute/{rid}/results", headers=as_(who)).status_code == 200, who
    # the history, oldest first: the owner's and the admin's and viewer's, not another user's
    for who in ("alice", "boss", "auditor"):
        h = srv.get(f"/sessions/{sid}/executions", headers=as_(who))
        assert h.status_code == 200, (who, h.text)
        assert [x["status"] for x in h.json()["executions"]] == ["completed"] and h.json()["session_id"] == sid
        rbtest.check_schema(h.json()["executions"][0], "Result")
    assert srv.get(f"/sessions/{sid}/executions", headers=as_("bob")).status_code == 404
    # limit is digits only (strtol took a sign or a blank: '+1' and ' 1' were answered as 1)
    for bad in ("0", "501", "%2B1", "%201", "1%0A", "0x1"):
        r = srv.get(f"/sessions/{sid}/executions?limit={bad}", headers=as_("alice"))
        assert r.status_code == 400 and "limit" in r.text, (bad, r.status_code, r.text)
    assert len(srv.get(f"/sessions/{sid}/executions?limit=1", headers=as_("alice")).json()["executions"]) == 1
    # the viewer changes nothing, and is told why
    for method, path, body in (("POST", "/execute", {"session_id": sid, "code": "x = 0"}),
                               ("DELETE", f"/sessions/{sid}", None), ("POST", "/sessions", {}),
                               ("POST", "/mcp", {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}),
                               ("POST", f"/sessions/{sid}/files", None)):
        r = srv.request(method, path, json=body, headers=as_("auditor"))
        assert r.status_code == 403 and "viewer" in r.text and "auditor" in r.text, (method, path, r.text)
    # a websocket (Jupyter's channels run code) is a change too
    r = srv.get(f"/jupyter/api/kernels/{sid}/channels", headers={**as_("auditor"), "Upgrade": "websocket",
                                                                  "Connection": "Upgrade"})
    assert r.status_code == 403, r.text
    r = srv.post("/execute", {"session_id": sid, "code": "x", "wait": True}, headers=as_("alice"))
    assert r.json()["result"] == "41", "the viewer's tries changed nothing"
    # the admin ends another key's session
    r = srv.delete(f"/sessions/{sid}", headers=as_("boss"))
    assert r.status_code == 200 and r.json()["status"] == "ended", r.text
    metrics = srv.get("/metrics", headers=as_("auditor")).text
    assert 'runbox_http_refusals_total{reason="role"} 6' in metrics, [m for m in metrics.splitlines() if "role" in m]


def test_admin_routes(srv):
    # draining engines and reloading keys are the admin's
    for who in ("alice", "bob"):
        r = srv.post("/engines/n1/drain", headers=as_(who))
        assert r.status_code == 403 and "role=admin" in r.text and "user" in r.text, r.text
        r = srv.post("/keys/reload", headers=as_(who))
        assert r.status_code == 403 and "role=admin" in r.text, r.text
    r = srv.post("/engines/n1/drain", headers=as_("boss"))
    assert r.status_code == 404, "past the role check: one engine has no names to drain: %s" % r.text
    # a new key, added to the file, works once an admin reloads it
    carol = "carol-key-" + "5" * 20
    with open(srv.workdir / "api-keys", "a") as f:
        f.write(f"carol sha256:{hashlib.sha256(carol.encode()).hexdigest()}\n")
    assert srv.get("/sessions", headers={"Authorization": f"Bearer {carol}"}).status_code == 401
    r = srv.post("/keys/reload", headers=as_("boss"))
    assert r.status_code == 200 and r.json() == {"keys": 5}, r.text
    assert srv.get("/sessions", headers={"Authorization": f"Bearer {carol}"}).status_code == 200
    # a file that does not parse changes nothing, and says which line
    with open(srv.workdir / "api-keys", "a") as f:
        f.write("dave sha256:00 role=superuser\n")
    r = srv.post("/keys/reload", headers=as_("boss"))
    assert r.status_code == 400 and "line 6" in r.text, r.text
    assert srv.get("/sessions", headers={"Authorization": f"Bearer {carol}"}).status_code == 200


def test_a_bad_role_stops_the_start(sandbox_image, tmp_path):
    (tmp_path / "api-keys").write_text(line("alice", KEYS["alice"]).rstrip("\n") + " role=root\n")
    s = rbtest.Server(tmp_path, ["--api-keys-file", str(tmp_path / "api-keys"), "--pool-size", "0"])
    with pytest.raises(AssertionError):
        s.start()
    assert "role= is user, admin or viewer" in s.log_text()


def test_an_mcp_session_serves_only_its_own_key(srv):
    """An MCP client session's calls run as its key (its bound sandbox, its executions): an admin
    or viewer that may see it does not take it over (issue 37). Before, an admin's execute_code in
    alice's Mcp-Session-Id made the session's sandbox the admin's and ran as the admin there, and a
    viewer's GET stream on it made the viewer the key of alice's calls still in flight."""
    h = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json",
         "MCP-Protocol-Version": "2025-06-18"}
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}
    r = srv.post("/mcp", init, headers={**h, **as_("alice")})
    assert r.status_code == 200, r.text
    mid = {"Mcp-Session-Id": r.headers["Mcp-Session-Id"]}
    assert srv.post("/mcp", {"jsonrpc": "2.0", "method": "notifications/initialized"},
                    headers={**h, **as_("alice"), **mid}).status_code == 202

    def run(who: str, code: str) -> requests.Response:
        call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                "params": {"name": "execute_code", "arguments": {"code": code}}}
        return srv.post("/mcp", call, headers={**h, **as_(who), **mid})

    r = run("boss", "print('by boss')")
    assert r.status_code == 404 and "alice" in r.text, r.text
    r = srv.get("/mcp", headers={**h, **as_("auditor"), **mid, "Accept": "text/event-stream"}, stream=True)
    assert r.status_code == 404 and "alice" in r.text, r.text
    r.close()
    # nor does a viewer open an MCP session of its own through the older transport's GET /sse
    r = srv.get("/sse", headers={**as_("auditor"), "Accept": "text/event-stream"}, stream=True, timeout=30)
    assert r.status_code == 403 and "viewer" in r.text and "auditor" in r.text, r.text
    r.close()
    # alice's own session is untouched: its sandbox and its executions are alice's
    r = run("alice", "print('by alice')")
    assert r.status_code == 200 and "by alice" in r.text, r.text
    events = srv.get("/audit?kind=execution&limit=1000").json()["events"]
    assert [e["key"] for e in events if e["code"] == "print('by alice')"] == ["alice"], events
    assert not [e for e in events if e["code"] == "print('by boss')"], events
    assert srv.delete("/mcp", headers={**as_("alice"), **mid}).status_code in (200, 204)


def test_a_jupyter_socket_loses_what_its_key_loses(srv):
    """A kernel's websocket runs cells as its key as the key is now (issue 37): an admin's socket on
    alice's kernel runs cells as the admin; once the admin is demoted to viewer, the same open
    socket runs nothing more, and once its key is removed, neither."""
    eve = "eve-key-" + "6" * 20

    def write(eve_role: str | None) -> None:
        text = "".join(line(n, k) for n, k in KEYS.items())
        if eve_role is not None:
            text += f"eve sha256:{hashlib.sha256(eve.encode()).hexdigest()} role={eve_role}\n"
        (srv.workdir / "api-keys").write_text(text)
        r = srv.post("/keys/reload", headers=as_("boss"))
        assert r.status_code == 200, r.text

    def cell(ws, code: str) -> tuple[dict, str]:
        mid = uuid.uuid4().hex
        ws.send(json.dumps({"header": {"msg_id": mid, "msg_type": "execute_request", "session": mid, "username": "t",
                                       "date": "", "version": "5.3"}, "parent_header": {}, "metadata": {},
                            "content": {"code": code, "silent": False}, "channel": "shell"}))
        reply, out = None, ""
        while True:
            m = json.loads(ws.recv())
            if m["parent_header"].get("msg_id") != mid:
                continue
            if m["msg_type"] == "execute_reply":
                reply = m["content"]
            if m["msg_type"] == "stream":
                out += m["content"]["text"]
            if m["msg_type"] == "status" and m["content"]["execution_state"] == "idle" and reply is not None:
                return reply, out

    r = srv.post("/sessions", {}, headers=as_("alice"))
    assert r.status_code == 201, r.text
    srv.track(r.json())
    sid = r.json()["session_id"]
    assert srv.post("/execute", {"session_id": sid, "code": "x = 1", "wait": True},
                    headers=as_("alice")).json()["status"] == "completed"
    write("admin")
    try:
        ws = websocket.create_connection(f"ws://127.0.0.1:{srv.port}/jupyter/api/kernels/{sid}/channels",
                                         header=[f"Authorization: Bearer {eve}"], timeout=120)
        reply, out = cell(ws, "x = x + 1; print('eve', x)")
        assert reply["status"] == "ok" and out == "eve 2\n", (reply, out)
        write("viewer")
        reply, out = cell(ws, "x = 100; print('eve again')")
        assert reply["status"] == "error" and "viewer" in reply["evalue"] and "eve" in reply["evalue"], reply
        write(None)
        reply, _ = cell(ws, "x = 200")
        assert reply["status"] == "error" and "no longer" in reply["evalue"], reply
        ws.close()
    finally:
        write(None)
    r = srv.post("/execute", {"session_id": sid, "code": "x", "wait": True}, headers=as_("alice"))
    assert r.json()["result"] == "2", r.text
    runs = srv.get(f"/audit?session={sid}&kind=execution", headers=as_("boss")).json()["events"]
    assert [(e["key"], e.get("session_owner")) for e in runs] == [("alice", None), ("eve", "alice"), ("alice", None)]

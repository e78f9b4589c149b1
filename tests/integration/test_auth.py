"""API keys, ownership and quotas (issue 9, "Who may do what"), against a real runboxd with a real
key file, the real Docker engine, and fastmcp's real client for MCP.

Keys are stored hashed (sha256:<hex>): the file never holds a key. A key sees only what it made;
another key's ids answer 404 exactly like unknown ones."""

from __future__ import annotations

import hashlib
import os
import signal
import subprocess
import time
from pathlib import Path

import anyio
import pytest
import requests
from fastmcp import Client as FastMCPClient

import rbtest

KEYS = {"alice": "alice-" + "a" * 40, "bob": "bob-" + "b" * 40, "carol": "carol-" + "c" * 40}


def key_line(name: str, extra: str = "") -> str:
    return f"{name} sha256:{hashlib.sha256(KEYS[name].encode()).hexdigest()} {extra}".rstrip() + "\n"


def auth(name: str) -> dict:
    return {"Authorization": f"Bearer {KEYS[name]}"}


@pytest.fixture
def keyed(make_server, tmp_path):
    """A runboxd with keys alice (sessions=2, executions=1) and bob (no quota)."""
    path = tmp_path / "api-keys"
    path.write_text("# runbox API keys\n" + key_line("alice", "sessions=2 executions=1") + "\n" + key_line("bob"))
    s = make_server(["--api-keys-file", str(path), "--pool-size", "0"])
    s.keys_path = path
    return s


def create(s: rbtest.Server, who: str, **body) -> dict:
    r = s.post("/sessions", body, headers=auth(who))
    assert r.status_code == 201, r.text
    s.track(r.json())
    return r.json()


def test_every_route_but_health_needs_a_key(keyed):
    s = keyed
    assert s.get("/health").status_code == 200  # liveness probes need no key
    for method, path in [("GET", "/sessions"), ("POST", "/sessions"), ("GET", "/metrics"), ("GET", "/packages"),
                         ("POST", "/mcp"), ("GET", "/no/such/route"), ("POST", "/agentrun/sessions"),
                         ("POST", "/agentrun/mcp")]:
        r = s.request(method, path, json={})
        assert r.status_code == 401, (path, r.text)
        assert r.headers["WWW-Authenticate"] == 'Bearer realm="runbox"', (path, r.headers)
        if path == "/mcp":  # JSON-RPC's error shape on the MCP endpoint
            assert "Authorization: Bearer" in r.json()["error"]["message"], r.text
        elif path.startswith("/agentrun/"):  # FastAPI's detail, which AgentRun's client reads
            assert "Authorization: Bearer" in r.json()["detail"], r.text
            assert r.json()["error"]["code"] == "unauthorized", r.text
        else:
            assert rbtest.check_error(r, 401, "Authorization: Bearer")["code"] == "unauthorized"
    for bad in ["Bearer nope", "Basic YWxpY2U6eA==", "Bearer", f"Bearer {KEYS['carol']}"]:
        r = s.get("/sessions", headers={"Authorization": bad})
        rbtest.check_error(r, 401, "not valid")
        assert 'error="invalid_token"' in r.headers["WWW-Authenticate"]
    # Both header forms, and the scheme is case-insensitive (RFC 7235).
    assert s.get("/sessions", headers=auth("alice")).status_code == 200
    assert s.get("/sessions", headers={"X-API-Key": KEYS["alice"]}).status_code == 200
    assert s.get("/sessions", headers={"Authorization": "bearer " + KEYS["alice"]}).status_code == 200
    m = s.get("/metrics", headers=auth("bob")).text
    assert 'runbox_http_refusals_total{reason="unauthorized"}' in m


def test_a_key_sees_only_its_own_sessions_executions_and_files(keyed):
    s = keyed
    a = create(s, "alice")["session_id"]
    b = create(s, "bob")["session_id"]
    r = s.post("/execute", {"session_id": a, "code": "secret = 42\nopen('note.txt', 'w').write('alice')\nsecret",
                            "wait": True}, headers=auth("alice"))
    assert r.status_code == 200 and r.json()["result"] == "42", r.text
    rid = r.json()["request_id"]

    assert [x["session_id"] for x in s.get("/sessions", headers=auth("alice")).json()["sessions"]] == [a]
    assert [x["session_id"] for x in s.get("/sessions", headers=auth("bob")).json()["sessions"]] == [b]
    # Every way of reaching alice's things with bob's key answers 404, as for an id that does not exist.
    bob = auth("bob")
    for method, path, body in [
        ("GET", f"/sessions/{a}", None), ("DELETE", f"/sessions/{a}", None),
        ("POST", "/execute", {"session_id": a, "code": "secret"}),
        ("GET", f"/execute/{rid}/status", None), ("GET", f"/execute/{rid}/results", None),
        ("GET", f"/execute/{rid}/events", None), ("DELETE", f"/execute/{rid}", None),
        ("GET", f"/sessions/{a}/files", None), ("GET", f"/sessions/{a}/files/download?path=note.txt", None),
        ("DELETE", f"/sessions/{a}/files?path=note.txt", None),
        ("POST", f"/sessions/{a}/dependencies", {"dependencies": ["six"]}),
    ]:
        r = s.request(method, path, json=body, headers=bob)
        rbtest.check_error(r, 404)
        unknown = path.replace(a, "s_doesnotexist00000000000000000").replace(rid, "e_doesnotexist000000000000000000")
        if body is not None and "session_id" in body:
            body = {**body, "session_id": "s_doesnotexist00000000000000000"}
        r2 = s.request(method, unknown, json=body, headers=bob)
        assert r2.status_code == 404, (unknown, r2.text)
        assert r.json()["error"]["message"].replace(a, "X").replace(rid, "X") == \
            r2.json()["error"]["message"].replace("s_doesnotexist00000000000000000", "X").replace(
                "e_doesnotexist000000000000000000", "X"), "another key's id must look like an unknown one"
    r = s.post("/sessions/" + a + "/files", files={"file": ("x.txt", b"bob was here")},
               data={"path": "x.txt"}, headers=bob)
    rbtest.check_error(r, 404)
    # Alice still has everything, untouched.
    r = s.post("/execute", {"session_id": a, "code": "secret, open('note.txt').read(), "
                            "__import__('os').path.exists('x.txt')", "wait": True}, headers=auth("alice"))
    assert r.json()["result"] == "(42, 'alice', False)", r.text
    assert s.get(f"/execute/{rid}/results", headers=auth("alice")).json()["result"] == "42"

    # Ownership is stored: after a restart bob still sees nothing of alice's.
    s.restart()
    rbtest.check_error(s.get(f"/sessions/{a}", headers=bob), 404)
    rbtest.check_error(s.get(f"/execute/{rid}/results", headers=bob), 404)
    assert s.get(f"/execute/{rid}/results", headers=auth("alice")).json()["result"] == "42"
    rbtest.wait_until(lambda: s.get(f"/sessions/{a}", headers=auth("alice")).json()["status"] == "ready",
                      "alice's session to be re-adopted")


def test_mcp_sessions_belong_to_their_key(keyed):
    s = keyed
    url = s.url + "/mcp"
    a = create(s, "alice")["session_id"]

    async def main():
        async with FastMCPClient(url, auth=KEYS["bob"]) as c:
            r = await c.call_tool("execute_code", {"code": "6 * 7"})
            assert r.structured_content["result"] == "42"
            bound = r.structured_content["session_id"]
            r = await c.call_tool("execute_code", {"code": "1", "session_id": a}, raise_on_error=False)
            assert r.is_error and "no session" in r.content[0].text.lower(), r.content
            r = await c.call_tool("list_sessions", {})
            ids = [x["session_id"] for x in r.structured_content["sessions"]]
            assert a not in ids and bound in ids, ids
            return bound

    bound = anyio.run(main)
    # bob's bound sandbox session is bob's, not alice's
    rbtest.check_error(s.get(f"/sessions/{bound}", headers=auth("alice")), 404)
    # An MCP session id is no use to another key.
    h = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}
    r = requests.post(url, json=init, headers={**h, **auth("alice")}, timeout=30)
    assert r.status_code == 200, r.text
    mid = r.headers["Mcp-Session-Id"]
    ping = {"jsonrpc": "2.0", "id": 2, "method": "ping"}
    r = requests.post(url, json=ping, headers={**h, **auth("bob"), "Mcp-Session-Id": mid}, timeout=30)
    assert r.status_code == 404, r.text
    r = requests.delete(url, headers={**auth("bob"), "Mcp-Session-Id": mid}, timeout=30)
    assert r.status_code == 404, r.text
    r = requests.post(url, json=ping, headers={**h, **auth("alice"), "Mcp-Session-Id": mid}, timeout=30)
    assert r.status_code == 200, r.text


def test_quotas_answer_429_with_retry_after(keyed):
    s = keyed
    alice = auth("alice")
    first = create(s, "alice")["session_id"]
    create(s, "alice")
    r = s.post("/sessions", {}, headers=alice)
    err = rbtest.check_error(r, 429, "alice")
    assert err["code"] == "quota_exceeded" and "sessions=" in err["message"]
    assert int(r.headers["Retry-After"]) >= 1
    create(s, "bob")  # bob's quota is his own
    # executions=1: a second cell while the first runs is refused, and accepted once it is done.
    r = s.post("/execute", {"session_id": first, "code": "import time; time.sleep(3)"}, headers=alice)
    assert r.status_code == 202, r.text
    rid = r.json()["request_id"]
    r = s.post("/execute", {"session_id": first, "code": "1"}, headers=alice)
    err = rbtest.check_error(r, 429, "executions=")
    assert err["code"] == "quota_exceeded" and r.headers.get("Retry-After")
    rbtest.wait_until(lambda: s.get(f"/execute/{rid}/status", headers=alice).json()["status"] == "completed",
                      "the first cell to finish")
    r = s.post("/execute", {"session_id": first, "code": "1", "wait": True}, headers=alice)
    assert r.status_code == 200 and r.json()["result"] == "1", r.text


def test_rate_limit_per_key(make_server, tmp_path):
    path = tmp_path / "api-keys"
    path.write_text(key_line("alice", "rps=3") + key_line("bob"))
    s = make_server(["--api-keys-file", str(path), "--pool-size", "0"])
    codes = [s.get("/sessions", headers=auth("alice")) for _ in range(12)]
    limited = [r for r in codes if r.status_code == 429]
    assert limited, [r.status_code for r in codes]
    err = rbtest.check_error(limited[0], 429, "rps=")
    assert err["code"] == "too_many_requests" and int(limited[0].headers["Retry-After"]) >= 1
    # bob is not slowed down by alice's budget
    assert all(s.get("/sessions", headers=auth("bob")).status_code == 200 for _ in range(12))
    rbtest.wait_until(lambda: s.get("/sessions", headers=auth("alice")).status_code == 200,
                      "alice's budget to refill", deadline=10)
    assert 'runbox_http_refusals_total{reason="rate_limited"}' in s.get("/metrics", headers=auth("bob")).text


def test_keys_reload_on_sighup_and_a_broken_file_keeps_the_old_keys(keyed):
    s = keyed
    path: Path = s.keys_path
    a = create(s, "alice")["session_id"]
    assert s.get("/sessions", headers=auth("carol")).status_code == 401
    # Rotation: alice gets a new key (same name), bob is removed, carol is added.
    old_alice = KEYS["alice"]
    KEYS["alice"] = "alice-rotated-" + "z" * 30
    try:
        path.write_text(key_line("alice") + key_line("carol"))
        os.kill(s.pid, signal.SIGHUP)
        rbtest.wait_until(lambda: s.get("/sessions", headers=auth("carol")).status_code == 200, "carol's key to work")
        assert s.get("/sessions", headers=auth("bob")).status_code == 401
        assert s.get("/sessions", headers={"Authorization": "Bearer " + old_alice}).status_code == 401
        # the rotated key still owns alice's session
        assert [x["session_id"] for x in s.get("/sessions", headers=auth("alice")).json()["sessions"]] == [a]
        # A file that does not parse: logged, and the keys in force stay.
        path.write_text("carol sha256:not-a-hash\n")
        os.kill(s.pid, signal.SIGHUP)
        rbtest.wait_until(lambda: "API keys not reloaded" in s.log_text(), "the reload error in the log")
        assert "line 1" in s.log_text().split("API keys not reloaded")[-1].splitlines()[0]
        assert s.get("/sessions", headers=auth("carol")).status_code == 200
    finally:
        KEYS["alice"] = old_alice


def run_daemon(tmp_path: Path, *args: str) -> subprocess.Popen:
    return subprocess.Popen([str(rbtest.RUNBOX_BIN), "--db", str(tmp_path / "x.db"), "--image", rbtest.IMAGE,
                             "--pool-size", "0", *args], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            stdin=subprocess.DEVNULL, text=True)


def test_no_keys_means_loopback_only_unless_explicitly_opted_out(tmp_path):
    port = rbtest.free_port()
    # Binding the wildcard address sends no traffic anywhere; no request is made to it.
    p = run_daemon(tmp_path, "--listen", f"0.0.0.0:{port}")
    out, _ = p.communicate(timeout=60)
    assert p.returncode != 0, out
    assert "without API keys" in out and "--api-keys-file" in out and "--allow-unauthenticated" in out, out
    # A key file that does not parse stops the start too, naming the line.
    bad = tmp_path / "keys"
    bad.write_text("# one key\nalice sha256:1234\n")
    p = run_daemon(tmp_path, "--listen", f"127.0.0.1:{port}", "--api-keys-file", str(bad))
    out, _ = p.communicate(timeout=60)
    assert p.returncode != 0 and "line 2" in out, out
    # With the opt-out it starts, and says so loudly.
    p = run_daemon(tmp_path, "--listen", f"0.0.0.0:{port}", "--allow-unauthenticated")
    try:
        deadline = time.monotonic() + 60
        seen = ""
        while time.monotonic() < deadline and "listening on" not in seen:
            line = p.stdout.readline()
            if not line:
                break
            seen += line
        assert "WITHOUT API keys" in seen, seen
        assert p.poll() is None, seen
    finally:
        p.send_signal(signal.SIGTERM)
        p.communicate(timeout=30)

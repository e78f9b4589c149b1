"""A NUL or another control character in an id or a name (issue 37, "A NUL cuts a name"), against
a real runboxd and the real Docker engine, over every protocol that takes ids: h2o decodes %00
in a path into a NUL, and C strings ended there, so `GET /volumes/nulname%00junk` answered the
volume `nulname` and `DELETE` deleted it; a query's `after=%00` read as absent. Now the router
refuses a path or query that holds one (400, or the protocol's own error shape) before any route
reads it, E2B's E2b-Sandbox-Id header likewise, a JSON body with \\u0000 is malformed JSON, and
one whose id member (session_id, ...) holds another control character is refused by the reader:
each time the real object is untouched afterwards (the volume, the session and the kernel are
still there)."""

from __future__ import annotations

import socket

import pytest

import rbtest
from rbtest import check_error

MCP_HEADERS = {"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call",
               "Accept": "application/json, text/event-stream"}
META = {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}}
CUTS = ["%00junk", "%00", "%0A", "%01x", "%7F", "%09"]


@pytest.fixture(scope="module")
def server(sandbox_image, tmp_path_factory):
    s = rbtest.Server(tmp_path_factory.mktemp("names"), ["--pool-size", "0"])
    s.start()
    yield s
    rbtest.finish_servers([s])


@pytest.fixture(scope="module")
def sid(server):
    return server.create_session()["session_id"]


def alive(server, sid: str) -> None:
    r = server.get(f"/sessions/{sid}")
    assert r.status_code == 200 and r.json()["status"] in ("ready", "busy"), r.text


def refused(r, words: str = "control character") -> None:
    err = check_error(r, 400)
    assert words in err["message"], err


def test_a_volume_named_through_a_nul_is_refused_and_kept(server):
    r = server.post("/volumes", {"name": "nulname"})
    assert r.status_code == 201, r.text
    vid = r.json()["volume_id"]
    try:
        for cut in CUTS:
            refused(server.get(f"/volumes/nulname{cut}"))
            refused(server.delete(f"/volumes/nulname{cut}"))
            refused(server.delete(f"/volumes/{vid}{cut}"))
        err = check_error(server.delete("/volumes/nulname%00junk"), 400)
        assert "'nulname%00junk'" in err["message"], err  # the segment, shown as it was sent
        r = server.get("/volumes/nulname")
        assert r.status_code == 200 and r.json()["volume_id"] == vid, r.text
        # a body with \u0000 is malformed JSON: no volume "other" is made
        r = server.post("/volumes", data='{"name": "other\\u0000junk"}', headers={"Content-Type": "application/json"})
        check_error(r, 400)
        assert [v["name"] for v in server.get("/volumes").json()["volumes"]] == ["nulname"]
        # a mount's volume or share named with a control character: refused, no session made
        before = len(server.get("/sessions").json()["sessions"])
        for mount in ({"volume": "nulname\n"}, {"volume": "nulname\x01"}, {"share": "photos\t"}):
            refused(server.post("/sessions", {"execution_options": {"mounts": [mount]}}),
                    f"'{next(iter(mount))}' holds a control character")
        r = server.post("/sessions", data='{"execution_options": {"mounts": [{"volume": "nulname\\u0000x"}]}}',
                        headers={"Content-Type": "application/json"})
        check_error(r, 400)
        assert len(server.get("/sessions").json()["sessions"]) == before
    finally:
        assert server.delete(f"/volumes/{vid}").status_code in (200, 204)


def test_session_and_execution_ids_through_a_nul_are_refused(server, sid):
    r = server.post("/execute", {"session_id": sid, "code": "x = 41", "wait": True})
    assert r.status_code == 200 and r.json()["status"] == "completed", r.text
    rid = r.json()["request_id"]
    for cut in CUTS:
        refused(server.get(f"/sessions/{sid}{cut}"))
        refused(server.delete(f"/sessions/{sid}{cut}"))
        refused(server.get(f"/sessions/{sid}{cut}/metrics"))
        refused(server.get(f"/sessions/{sid}{cut}/executions"))
        refused(server.get(f"/sessions/{sid}{cut}/files"))
        refused(server.get(f"/execute/{rid}{cut}/status"))
        refused(server.get(f"/execute/{rid}{cut}/results"))
        refused(server.delete(f"/execute/{rid}{cut}"))
    # in a JSON body: \u0000 is malformed JSON, never a shorter id
    r = server.post("/execute", data='{"session_id": "%s\\u0000junk", "code": "x = 1", "wait": true}' % sid,
                    headers={"Content-Type": "application/json"})
    check_error(r, 400)
    for bad in (sid + "\n", sid + "\t", sid + "\x1b"):
        refused(server.post("/execute", {"session_id": bad, "code": "x = 1", "wait": True}),
                "'session_id' holds a control character")
    alive(server, sid)
    r = server.post("/execute", {"session_id": sid, "code": "x", "wait": True})
    assert r.json()["result"] == "41", r.text  # the session's state is its own still


def test_query_values_with_a_control_character_are_refused(server, sid):
    for q in ("after=%00", "after=5%00", "session=" + sid + "%00junk", "key=a%0Ab", "limit=%00",
              "since=%00", "kind=execution%00", "format=json%00"):
        err = check_error(server.get(f"/audit?{q}"), 400)
        assert q.split("=")[0] in err["message"], err
    assert server.get("/audit?after=0").status_code == 200
    # file paths write control characters as escapes: a raw one in the query is refused the same
    refused(server.get(f"/sessions/{sid}/files/download?path=a%0Ab"), "\\x0a")
    r = server.request("PUT", f"/sessions/{sid}/files?path=nul%00cut.txt", data=b"x",
                       headers={"Content-Type": "application/octet-stream"})
    refused(r)
    r = server.execute(sid, "import os; os.path.exists('nul')")
    assert r["result"] == "False", r


def test_e2b_ids_in_path_and_header(server, sid):
    for cut in CUTS:
        for method in ("GET", "DELETE"):
            r = server.request(method, f"/e2b/sandboxes/{sid}{cut}")
            assert r.status_code == 400 and "control character" in r.json()["message"], r.text
        r = server.post(f"/e2b/sandboxes/{sid}{cut}/timeout", {"timeout": 1})
        assert r.status_code == 400, r.text
    # bytes that are not UTF-8 beside it: E2B's error document still carries the message
    r = server.get(f"/e2b/sandboxes/{sid}%FF%00")
    assert r.status_code == 400 and f"'{sid}%FF%00'" in r.json()["message"], r.text
    r = server.get(f"/e2b/sandboxes/{sid}")
    assert r.status_code == 200 and r.json()["sandboxID"] == sid, r.text
    # the header: HTTP/1 lets a tab through (no other control character), so it is sent raw
    with socket.create_connection(("127.0.0.1", server.port)) as c:
        c.sendall(f"GET /e2b/files?path=x HTTP/1.1\r\nHost: localhost\r\nE2b-Sandbox-Id: {sid}\tjunk\r\n"
                  "X-Access-Token: x\r\nConnection: close\r\n\r\n".encode())
        answer = b""
        while chunk := c.recv(65536):
            answer += chunk
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 400"), answer[:300]
    assert b"E2b-Sandbox-Id header holds a control character" in body, body
    alive(server, sid)


def test_jupyter_kernel_ids(server):
    r = server.post("/jupyter/api/kernels", {"name": "python3"})
    assert r.status_code == 201, r.text
    kid = r.json()["id"]
    for cut in CUTS:
        for method in ("GET", "DELETE"):
            r = server.request(method, f"/jupyter/api/kernels/{kid}{cut}")
            assert r.status_code == 400 and "control character" in r.text, r.text
        assert server.post(f"/jupyter/api/kernels/{kid}{cut}/interrupt", {}).status_code == 400
    assert server.get(f"/jupyter/api/kernels/{kid}").status_code == 200
    assert server.delete(f"/jupyter/api/kernels/{kid}").status_code == 204


@pytest.mark.parametrize("endpoint", ["/mcp", "/agentrun/mcp"])
def test_mcp_session_id_arguments(server, sid, endpoint):
    # the tool's session_id with \u0000: malformed JSON (parse error), nothing closed
    raw = ('{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "close_session", '
           '"arguments": {"session_id": "%s\\u0000junk"}, "_meta": {"io.modelcontextprotocol/protocolVersion": '
           '"2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}}}}' % sid)
    r = server.request("POST", endpoint, data=raw, headers={**MCP_HEADERS, "Mcp-Name": "close_session",
                                                            "Content-Type": "application/json"})
    assert r.status_code == 400, r.text
    assert rbtest.mcp_answer(r)["error"]["code"] == -32700, r.text
    # with another control character: refused by the JSON reader, naming the member
    for bad in (sid + "\n", sid + "\x01", "\x7f" + sid):
        body = {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                "params": {"name": "close_session", "arguments": {"session_id": bad}, "_meta": META}}
        r = server.post(endpoint, body, headers={**MCP_HEADERS, "Mcp-Name": "close_session"})
        assert r.status_code == 400, r.text
        assert "'session_id' holds a control character" in rbtest.mcp_answer(r)["error"]["message"], r.text
    # a query on the endpoint
    r = server.request("POST", endpoint + "?x=%00", json=body, headers={**MCP_HEADERS, "Mcp-Name": "close_session"})
    assert r.status_code == 400 and "control character" in r.text, r.text
    alive(server, sid)


def test_agentrun_and_dify(server, sid):
    for cut in CUTS:
        r = server.get(f"/agentrun/sessions/{sid}{cut}")
        assert r.status_code == 400 and "control character" in r.text, r.text
        r = server.delete(f"/agentrun/sessions/{sid}{cut}")
        assert r.status_code == 400 and "control character" in r.text, r.text
    assert server.get(f"/agentrun/sessions/{sid}").status_code == 200
    # Dify answers its own envelope; the language is the only name it reads from a query
    r = server.get("/v1/sandbox/dependencies?language=python3%00junk")
    assert r.status_code == 400 and "control character" in r.text, r.text
    alive(server, sid)


def test_mcp_session_header(server):
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                       "clientInfo": {"name": "names-test", "version": "1"}}}
    accept = {"Accept": "application/json, text/event-stream"}
    r = server.post("/mcp", init, headers=accept)
    assert r.status_code == 200, r.text
    msid = r.headers["Mcp-Session-Id"]
    hdr = {**accept, "MCP-Protocol-Version": "2025-06-18"}
    listing = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}
    for bad in (msid + "\tjunk", "x\t" + msid):  # HTTP/1 lets a tab through, no other control character
        r = server.post("/mcp", listing, headers={**hdr, "Mcp-Session-Id": bad})
        assert r.status_code == 400 and "control character" in r.text, r.text
        r = server.delete("/mcp", headers={**hdr, "Mcp-Session-Id": bad})
        assert r.status_code == 400 and "control character" in r.text, r.text
    r = server.post("/mcp", listing, headers={**hdr, "Mcp-Session-Id": msid})
    assert r.status_code == 200 and rbtest.mcp_answer(r, 2)["result"]["tools"], r.text
    assert server.delete("/mcp", headers={**hdr, "Mcp-Session-Id": msid}).status_code == 204

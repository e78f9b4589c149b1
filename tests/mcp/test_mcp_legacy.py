"""The HTTP+SSE transport of MCP 2024-11-05 (GET /sse + POST /messages?sessionId=), with the `mcp`
SDK's own sse_client against a real runboxd and real sandboxes (issue 10, "Older MCP hosts"):
same tools, same sessions as /mcp and REST."""

from __future__ import annotations

import base64
import json

import anyio
import requests
from mcp import ClientSession
from mcp.client.sse import sse_client

import rbtest

PLOT = ("import matplotlib\nmatplotlib.use('Agg')\nimport matplotlib.pyplot as plt\n"
        "plt.plot([1, 2, 3], [1, 4, 9])\nplt.show()\n")


def texts(result) -> str:
    return "".join(getattr(c, "text", "") for c in result.content)


def test_sse_transport_tools_state_plot_and_shared_sessions(server):
    rest = server.create_session()["session_id"]

    async def main():
        async with sse_client(server.url + "/sse") as (read, write):
            async with ClientSession(read, write) as c:
                init = await c.initialize()
                assert init.server_info.name == "runbox"
                names = {t.name for t in (await c.list_tools()).tools}
                assert {"execute_code", "create_session", "list_sessions", "upload_file"} <= names
                r = await c.call_tool("execute_code", {"code": "x = 21\nprint('set')"})
                assert not r.is_error and "set" in texts(r), texts(r)
                r = await c.call_tool("execute_code", {"code": "x * 2"})
                assert "42" in texts(r), texts(r)
                bound = r.structured_content["session_id"] if r.structured_content else None
                r = await c.call_tool("execute_code", {"code": PLOT})
                images = [b for b in r.content if b.type == "image"]
                assert len(images) == 1 and base64.b64decode(images[0].data).startswith(rbtest.PNG_SIGNATURE)
                # a REST session is usable from here, and the other way round
                r = await c.call_tool("execute_code", {"code": "y = 'from sse'", "session_id": rest})
                assert not r.is_error, texts(r)
                r = await c.call_tool("execute_code", {"code": "1/0"})
                assert r.is_error and "ZeroDivisionError" in texts(r)
                sessions = await c.call_tool("list_sessions", {})
                return bound, texts(sessions)

    bound, listed = anyio.run(main)
    assert rest in listed
    assert server.execute(rest, "y")["result"] == "'from sse'"
    if bound is None:  # 2024-11-05 has no structuredContent: find the bound session by its state
        bound = next(s["session_id"] for s in server.get("/sessions").json()["sessions"] if s["session_id"] != rest)
    # closing the SSE stream ends the MCP session and its bound sandbox, as DELETE /mcp does
    rbtest.wait_until(lambda: server.get(f"/sessions/{bound}").json()["status"] == "ended",
                      "the bound session to end with the SSE stream")
    assert server.get(f"/sessions/{rest}").json()["status"] in ("ready", "busy")


def test_messages_endpoint_errors(server):
    h = {"Content-Type": "application/json"}
    ping = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    r = requests.post(server.url + "/messages", json=ping, headers=h, timeout=30)
    assert r.status_code == 400 and "sessionId" in r.json()["error"]["message"], r.text
    r = requests.post(server.url + "/messages?sessionId=m_nope", json=ping, headers=h, timeout=30)
    assert r.status_code == 404, r.text
    # a streamable-HTTP session has no SSE stream to answer on
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}
    r = requests.post(server.url + "/mcp", json=init,
                      headers={**h, "Accept": "application/json, text/event-stream"}, timeout=30)
    mid = r.headers["Mcp-Session-Id"]
    r = requests.post(server.url + f"/messages?sessionId={mid}", json=ping, headers=h, timeout=30)
    assert r.status_code == 400 and "GET /sse" in r.json()["error"]["message"], r.text
    # the stream announces its endpoint first; a message posted there is answered on the stream
    with requests.get(server.url + "/sse", stream=True, timeout=(10, 30),
                      headers={"Accept": "text/event-stream"}) as resp:
        assert resp.status_code == 200
        assert resp.headers["Content-Type"].startswith("text/event-stream")
        lines = resp.iter_lines(decode_unicode=True)
        endpoint = None
        for line in lines:
            if line.startswith("data: /messages?sessionId="):
                endpoint = line[len("data: "):]
                break
        assert endpoint is not None
        r = requests.post(server.url + endpoint, data=b"{not json", headers=h, timeout=30)
        assert r.status_code == 400 and r.json()["error"]["code"] == -32700, r.text
        r = requests.post(server.url + endpoint, json=ping, headers=h, timeout=30)
        assert r.status_code == 202 and r.content == b""
        for line in lines:
            if line.startswith("data: {"):
                assert '"id":1' in line and '"result":{}' in line, line
                break


def test_messages_batches_have_the_cap_and_answer_of_mcp(server):
    """Issue 21 #5: /messages takes at most 64 messages per batch, as /mcp does, and refuses a
    larger one with the same answer (413, JSON-RPC -32600) before running any of it."""
    h = {"Content-Type": "application/json"}

    def batch(n: int) -> list[dict]:
        return [{"jsonrpc": "2.0", "id": i, "method": "tools/list"} for i in range(n)]

    # /mcp's answer, in a 2025-03-26 session (the version that has batches)
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-03-26", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}
    mh = {**h, "Accept": "application/json, text/event-stream"}
    r = requests.post(server.url + "/mcp", json=init, headers=mh, timeout=30)
    assert r.status_code == 200, r.text
    mh = {**mh, "Mcp-Session-Id": r.headers["Mcp-Session-Id"], "MCP-Protocol-Version": "2025-03-26"}
    over_mcp = requests.post(server.url + "/mcp", json=batch(65), headers=mh, timeout=30)
    assert over_mcp.status_code == 413, over_mcp.text
    assert over_mcp.json()["error"]["code"] == -32600 and "64" in over_mcp.json()["error"]["message"], over_mcp.text

    with requests.get(server.url + "/sse", stream=True, timeout=(10, 60),
                      headers={"Accept": "text/event-stream"}) as resp:
        assert resp.status_code == 200
        lines = resp.iter_lines(decode_unicode=True)
        endpoint = next(line[len("data: "):] for line in lines if line.startswith("data: /messages?sessionId="))
        r = requests.post(server.url + endpoint, json=batch(65), headers=h, timeout=30)
        assert (r.status_code, r.json()) == (413, over_mcp.json()), r.text
        r = requests.post(server.url + endpoint, json=batch(64), headers=h, timeout=30)
        assert r.status_code == 202, r.text
        ids = set()
        for line in lines:
            if line.startswith("data: {"):
                answer = json.loads(line[len("data: "):])
                assert answer["result"]["tools"], line[:200]
                ids.add(answer["id"])
                if len(ids) == 64:
                    break
        # every message of the batch is answered on the stream
        assert ids == set(range(64)), sorted(ids)

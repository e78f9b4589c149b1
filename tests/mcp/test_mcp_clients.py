"""MCP at /mcp with real clients from PyPI against a real runboxd and real Docker sandboxes:
the official `mcp` SDK (its `Client`, which probes server/discover and falls back, and its
streamable HTTP transport under a plain `ClientSession`) and fastmcp's `Client`.
"""

from __future__ import annotations

import base64
import time

import anyio
import requests
from fastmcp import Client as FastMCPClient
from mcp import Client, ClientSession
from mcp.client.streamable_http import streamable_http_client

import rbtest

PLOT = (
    "import matplotlib\nmatplotlib.use('Agg')\nimport matplotlib.pyplot as plt\n"
    "plt.plot([1, 2, 3], [1, 4, 9])\nplt.show()\n"
)
TOOLS = {"execute_code", "create_session", "list_sessions", "get_session_info", "close_session", "get_health"}


def url(server: rbtest.Server) -> str:
    return server.url + "/mcp"


def session_status(server: rbtest.Server, sid: str) -> str:
    """The session's status over REST (schema checks are the integration suite's job)."""
    r = server.get(f"/sessions/{sid}")
    assert r.status_code == 200, r.text
    return r.json()["status"]


def texts(result) -> str:
    return "".join(getattr(c, "text", "") for c in result.content)


def test_sdk_client_tools_state_and_plot(server):
    async def main():
        async with Client(url(server), mode="legacy") as c:
            names = {t.name for t in (await c.list_tools()).tools}
            assert TOOLS <= names
            r = await c.call_tool("execute_code", {"code": "x = 21\nprint('set x')"})
            assert not r.is_error, texts(r)
            assert "set x" in texts(r)
            r = await c.call_tool("execute_code", {"code": "x * 2"})
            assert not r.is_error, texts(r)
            assert r.structured_content["result"] == "42"
            assert r.structured_content["status"] == "completed"
            sid = r.structured_content["session_id"]
            r = await c.call_tool("execute_code", {"code": PLOT})
            images = [b for b in r.content if b.type == "image"]
            assert len(images) == 1, r.content
            assert images[0].mime_type == "image/png"
            assert base64.b64decode(images[0].data).startswith(rbtest.PNG_SIGNATURE)
            # A text block says so too: hosts that pass only text on to the model (Chat
            # Completions tool messages, the OpenAI Agents SDK there) would otherwise hand it nothing.
            assert texts(r) == "(no text output; 1 plot as a PNG image)", r.content
            r = await c.call_tool("execute_code", {"code": "1/0"})
            assert r.is_error
            assert "ZeroDivisionError" in texts(r)
            # The bound session is an ordinary session: visible over REST.
            assert session_status(server, sid) in ("ready", "busy")
            return sid

    sid = anyio.run(main)
    # Closing the client (DELETE) ends its bound sandbox.
    rbtest.wait_until(lambda: session_status(server, sid) == "ended", "the bound session to end")


def test_sdk_progress_streams_during_a_loop(server):
    async def main():
        events: list[tuple[float, str | None, float]] = []

        async def progress(p: float, total: float | None, message: str | None) -> None:
            events.append((p, message, time.monotonic()))

        async with Client(url(server), mode="legacy") as c:
            code = "import time\nfor i in range(3):\n    print('tick', i, flush=True)\n    time.sleep(1)\n"
            start = time.monotonic()
            r = await c.call_tool("execute_code", {"code": code}, progress_callback=progress)
            end = time.monotonic()
            assert not r.is_error, texts(r)
        messages = "".join(m or "" for _, m, _ in events)
        assert "tick 0" in messages and "tick 2" in messages, events
        # The first tick arrived while the code was still running (before the result).
        first = next(t for _, m, t in events if m and "tick 0" in m)
        assert first < end
        assert [p for p, _, _ in events] == sorted(p for p, _, _ in events)
        del start

    anyio.run(main)


def test_sdk_cancel_interrupts_the_code_and_keeps_state(server):
    async def main():
        async with streamable_http_client(url(server)) as (read, write):
            async with ClientSession(read, write) as s:
                await s.initialize()
                r = await s.call_tool("execute_code", {"code": "kept = 'yes'"})
                assert not r.is_error
                sid = r.structured_content["session_id"]
                with anyio.move_on_after(3):
                    await s.call_tool("execute_code", {"code": "import time\nwhile True:\n    time.sleep(0.1)\n"})
                # The cancelled call was interrupted: the session becomes free and keeps state.
                rbtest.wait_until(lambda: session_status(server, sid) == "ready", "the session to be idle")
                r = await s.call_tool("execute_code", {"code": "kept"})
                assert r.structured_content["result"] == "'yes'", texts(r)

    anyio.run(main)


def test_rich_outputs_reach_the_model(server):
    """Issue 38: an HTML value (a DataFrame) and a Markdown display as text the model reads,
    images shown by display() (PIL: a PNG) as image content, and the whole bundles in
    structuredContent beside today's fields."""
    async def main():
        async with Client(url(server), mode="legacy") as c:
            r = await c.call_tool("execute_code", {"code": (
                "from IPython.display import display, Markdown\nfrom PIL import Image\nimport pandas as pd\n"
                "print('before')\ndisplay(Markdown('**bold** words'))\ndisplay(Image.new('RGB', (4, 4), 'blue'))\n"
                "pd.DataFrame({'col': [7, 8]})"), "timeout": 600})  # pandas' first import, on a busy host
            assert not r.is_error, texts(r)
            server.session_ids.add(r.structured_content["session_id"])
            blocks = [(b.type, getattr(b, "text", None) or getattr(b, "mime_type", None)) for b in r.content]
            assert blocks[0] == ("text", "before\n") and blocks[1] == ("text", "**bold** words"), blocks
            assert blocks[2][0] == "text" and "<table" in blocks[2][1] and "<td>7</td>" in blocks[2][1], blocks
            assert blocks[3:] == [("image", "image/png")], blocks
            assert base64.b64decode(r.content[3].data).startswith(rbtest.PNG_SIGNATURE)
            sc = r.structured_content
            assert sc["result"].split() == ["col", "0", "7", "1", "8"]  # today's text/plain stays
            value = [o for o in sc["outputs"] if o["type"] == "result"][0]
            assert "<table" in value["bundle"]["text/html"]

    anyio.run(main)


def test_delete_then_404(server):
    async def main():
        async with streamable_http_client(url(server), terminate_on_close=False) as (read, write):
            async with ClientSession(read, write) as s:
                init = await s.initialize()
                assert init.protocol_version in ("2025-11-25", "2025-06-18", "2025-03-26")
                await s.send_ping()

    anyio.run(main)
    # Raw HTTP for the rest: initialize, DELETE, then 404.
    h = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    r = requests.post(url(server), headers=h, json={"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}})
    assert r.status_code == 200
    sid = r.headers["mcp-session-id"]
    h2 = dict(h, **{"Mcp-Session-Id": sid, "MCP-Protocol-Version": "2025-06-18"})
    assert requests.post(url(server), headers=h2, json={"jsonrpc": "2.0", "id": 2, "method": "ping"}).status_code == 200
    assert requests.delete(url(server), headers=h2).status_code in (200, 204)
    r = requests.post(url(server), headers=h2, json={"jsonrpc": "2.0", "id": 3, "method": "ping"})
    assert r.status_code == 404
    assert r.json()["error"]["code"] == -32600


def test_fastmcp_client(server):
    async def main():
        async with FastMCPClient(url(server), mode="legacy") as c:
            tools = await c.list_tools()
            assert TOOLS <= {t.name for t in tools}
            r = await c.call_tool("execute_code", {"code": "y = [1, 2, 3]"})
            r = await c.call_tool("execute_code", {"code": "sum(y)"})
            assert r.structured_content["result"] == "6"
            h = await c.call_tool("get_health", {})
            assert h.structured_content["status"] == "ok"
            res = await c.read_resource("runbox://sessions")
            assert "sessions" in res[0].text

    anyio.run(main)


def test_rest_and_mcp_share_sessions(server):
    r = server.post("/sessions", {})
    assert r.status_code == 201, r.text
    rest = r.json()
    server.session_ids.add(rest["session_id"])
    r = server.post("/execute", {"session_id": rest["session_id"], "code": "shared = 'from rest'", "wait": True})
    assert r.status_code == 200 and r.json()["status"] == "completed", r.text

    async def main():
        async with Client(url(server), mode="legacy") as c:
            r = await c.call_tool("execute_code", {"code": "shared", "session_id": rest["session_id"]})
            assert r.structured_content["result"] == "'from rest'", texts(r)
            r = await c.call_tool("create_session", {})
            made = r.structured_content["session_id"]
            await c.call_tool("execute_code", {"code": "other = 7", "session_id": made})
            listed = await c.call_tool("list_sessions", {})
            assert made in {s["session_id"] for s in listed.structured_content["sessions"]}
            return made

    made = anyio.run(main)
    server.session_ids.add(made)
    r = server.post("/execute", {"session_id": made, "code": "other * 6", "wait": True})
    assert r.status_code == 200 and r.json()["result"] == "42", r.text


def test_mcp_session_survives_a_restart(make_server):
    srv = make_server()
    h = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    r = requests.post(url(srv), headers=h, json={"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}})
    sid = r.headers["mcp-session-id"]
    h2 = dict(h, **{"Mcp-Session-Id": sid, "MCP-Protocol-Version": "2025-06-18"})

    def call(code: str, rid: int) -> dict:
        r = requests.post(url(srv), headers=h2, timeout=120, json={
            "jsonrpc": "2.0", "id": rid, "method": "tools/call",
            "params": {"name": "execute_code", "arguments": {"code": code}}})
        assert r.status_code == 200, r.text
        return rbtest.mcp_answer(r)["result"]

    first = call("survivor = 'still here'", 2)
    assert not first["isError"], first
    srv.session_ids.add(first["structuredContent"]["session_id"])
    srv.stop()
    srv.start()
    again = call("survivor", 3)
    assert again["structuredContent"]["result"] == "'still here'", again
    assert again["structuredContent"]["session_id"] == first["structuredContent"]["session_id"]

"""MCP 2026-07-28 (stateless, per-request _meta) on /mcp beside the initialize era, against a real
runboxd and real sandboxes. Raw HTTP where a client library hides the wire; each test named
`test_req_*` covers the server requirement of modelcontextprotocol/conformance's
requirements/2026-07-28.yaml whose id it names (the suite itself runs on Node, which CI lacks).
Requirements that do not apply to runbox (it offers no prompts, audio, completions, and never
asks the client for input) are listed in NOT_APPLICABLE with the reason. The last tests drive
the `mcp` SDK's `Client` in its default `auto` mode, which must negotiate 2026-07-28.
"""

from __future__ import annotations

import base64
import json
import threading

import anyio
import pytest
import requests
from mcp import Client

import rbtest

V = "2026-07-28"
PLOT = (
    "import matplotlib\nmatplotlib.use('Agg')\nimport matplotlib.pyplot as plt\n"
    "plt.plot([1, 2, 3], [1, 4, 9])\nplt.show()\n"
)
NOT_APPLICABLE = {
    "completion-complete": "no prompts or resource templates with completable arguments; not advertised",
    "tools-call-audio": "no tool returns audio",
    "tools-call-embedded-resource": "no tool returns an embedded resource (large plots are resource links)",
    "prompts-list": "runbox offers no prompts",
    "prompts-get-simple": "runbox offers no prompts",
    "prompts-get-with-args": "runbox offers no prompts",
    "prompts-get-embedded-resource": "runbox offers no prompts",
    "prompts-get-with-image": "runbox offers no prompts",
    "input-required-result-basic-elicitation": "runbox never asks the client for input (no InputRequiredResult)",
    "input-required-result-basic-sampling": "as above",
    "input-required-result-basic-list-roots": "as above",
    "input-required-result-request-state": "as above",
    "input-required-result-multiple-input-requests": "as above",
    "input-required-result-multi-round": "as above",
    "input-required-result-missing-input-response": "as above",
    "input-required-result-non-tool-request": "as above",
    "input-required-result-result-type": "as above (resultType 'complete' is checked on every result instead)",
    "input-required-result-unsupported-methods": "as above",
    "input-required-result-tampered-state": "as above",
    "input-required-result-capability-check": "as above",
    "input-required-result-validate-input": "as above",
}


def url(server: rbtest.Server) -> str:
    return server.url + "/mcp"


def meta(**extra) -> dict:
    m = {"io.modelcontextprotocol/protocolVersion": V, "io.modelcontextprotocol/clientCapabilities": {},
         "io.modelcontextprotocol/clientInfo": {"name": "raw-test", "version": "1"}}
    m.update(extra)
    return m


def headers(method: str, name: str | None = None, version: str = V, sse: bool = True) -> dict:
    h = {"Content-Type": "application/json", "MCP-Protocol-Version": version, "Mcp-Method": method,
         "Accept": "application/json, text/event-stream" if sse else "application/json, */*"}
    if name is not None:
        h["Mcp-Name"] = name
    return h


def post(server, method: str, params: dict | None = None, *, rid=1, name: str | None = None, hdrs=None,
         sse: bool = True, stream: bool = False) -> requests.Response:
    p = dict(params or {})
    p.setdefault("_meta", meta())
    body = {"jsonrpc": "2.0", "id": rid, "method": method, "params": p}
    return requests.post(url(server), json=body, headers=hdrs or headers(method, name, sse=sse), timeout=120,
                         stream=stream)


def events(resp: requests.Response) -> list[dict]:
    """Every JSON-RPC message of an answer (one JSON body, or the data lines of an event stream)."""
    if not resp.headers.get("Content-Type", "").startswith("text/event-stream"):
        return [resp.json()]
    return [json.loads(line[5:]) for line in resp.text.splitlines() if line.startswith("data:") and line[5:].strip()]


def result(resp: requests.Response, rid=1) -> dict:
    assert resp.status_code == 200, resp.text[:2000]
    answer = rbtest.mcp_answer(resp, rid)
    assert "result" in answer, answer
    r = answer["result"]
    assert r["resultType"] == "complete", r
    assert r["_meta"]["io.modelcontextprotocol/serverInfo"]["name"] == "runbox", r
    return r


def error(resp: requests.Response, status: int, code: int) -> dict:
    assert resp.status_code == status, resp.text[:2000]
    e = resp.json()["error"]
    assert e["code"] == code, e
    assert e["message"], e
    return e


def call(server, tool: str, args: dict, rid=1, **kw) -> requests.Response:
    return post(server, "tools/call", {"name": tool, "arguments": args, **kw.pop("params", {})}, rid=rid, name=tool,
                **kw)


@pytest.fixture(scope="module")
def session(server) -> str:
    """One session made by a 2026-07-28 execute_code without session_id, shared by the tests."""
    r = result(call(server, "execute_code", {"code": "shared = 'kept'"}))
    sid = r["structuredContent"]["session_id"]
    server.session_ids.add(sid)
    return sid


# ---- server-stateless and the envelope ----------------------------------------------------


def test_req_server_stateless_no_initialize_no_session_header(server):
    r = post(server, "tools/list")
    result(r)
    assert "mcp-session-id" not in {k.lower() for k in r.headers}
    # An Mcp-Session-Id that names nothing is ignored on a modern request.
    h = dict(headers("tools/list"), **{"Mcp-Session-Id": "not-a-session"})
    result(post(server, "tools/list", hdrs=h))
    # Lists do not vary per connection or with other requests in between (SEP-2567).
    before = [x["uri"] for x in result(post(server, "resources/list"))["resources"]]
    result(call(server, "get_health", {}))
    result(post(server, "server/discover"))
    assert [x["uri"] for x in result(post(server, "resources/list"))["resources"]] == before


def test_req_server_stateless_meta_is_required(server):
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    r = requests.post(url(server), json=body, headers=headers("tools/list"), timeout=30)
    assert "_meta" in error(r, 400, -32602)["message"]
    r = post(server, "tools/list", {"_meta": {"io.modelcontextprotocol/protocolVersion": V}})
    assert "clientCapabilities" in error(r, 400, -32602)["message"]
    r = post(server, "tools/list", {"_meta": meta(**{"io.modelcontextprotocol/logLevel": "loud"})})
    error(r, 400, -32602)


def test_req_server_stateless_discover(server):
    r = result(post(server, "server/discover"))
    assert V in r["supportedVersions"] and "2025-11-25" in r["supportedVersions"]
    assert "tools" in r["capabilities"] and "completions" not in r["capabilities"]
    assert "prompts" not in r["capabilities"]
    assert "session_id" in r["instructions"]


def test_req_server_stateless_unsupported_version(server):
    body = {"jsonrpc": "2.0", "id": 5, "method": "tools/list",
            "params": {"_meta": meta(**{"io.modelcontextprotocol/protocolVersion": "1900-01-01"})}}
    r = requests.post(url(server), json=body, headers=headers("tools/list", version="1900-01-01"), timeout=30)
    e = error(r, 400, -32022)
    assert e["data"]["requested"] == "1900-01-01"
    assert V in e["data"]["supported"] and "2025-11-25" in e["data"]["supported"]
    assert r.json()["id"] == 5


@pytest.mark.parametrize("bad", [
    {"MCP-Protocol-Version": "2025-11-25"},  # disagrees with _meta
    {"Mcp-Method": "tools/call"},  # disagrees with the method
    {"Mcp-Method": None},  # missing
    {"MCP-Protocol-Version": None},  # missing
])
def test_req_server_stateless_headers_match_the_body(server, bad):
    h = headers("tools/list")
    for k, v in bad.items():
        if v is None:
            del h[k]
        else:
            h[k] = v
    # Without MCP-Protocol-Version, _meta (and no Mcp-Session-Id) still makes the request modern.
    error(post(server, "tools/list", hdrs=h), 400, -32020)


def test_req_server_stateless_mcp_name(server):
    args = {"name": "get_health", "arguments": {}}
    error(post(server, "tools/call", args, name="list_sessions"), 400, -32020)
    error(post(server, "tools/call", args), 400, -32020)  # no Mcp-Name
    enc = "=?base64?" + base64.b64encode(b"get_health").decode() + "?="
    assert result(post(server, "tools/call", args, name=enc))["isError"] is False
    error(post(server, "tools/call", args, name="=?base64?!!!?="), 400, -32020)
    uri = "runbox://sessions"
    error(post(server, "resources/read", {"uri": uri}, name="runbox://other"), 400, -32020)
    result(post(server, "resources/read", {"uri": uri}, name=uri))


def test_req_server_stateless_removed_methods_are_404(server):
    for m in ("ping", "logging/setLevel", "resources/subscribe", "resources/unsubscribe"):
        e = error(post(server, m, {"uri": "runbox://sessions"} if "subscribe" in m else {}), 404, -32601)
        assert m in e["message"]
    error(post(server, "no/such/method"), 404, -32601)


def test_req_server_stateless_batches_and_notifications(server):
    body = [{"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": meta()}}]
    r = requests.post(url(server), json=body, headers=headers("tools/list"), timeout=30)
    assert r.status_code == 400
    note = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 99, "_meta": meta()}}
    r = requests.post(url(server), json=note, headers=headers("notifications/cancelled"), timeout=30)
    assert r.status_code == 202 and r.content == b""


def test_legacy_initialize_still_works_beside_the_modern_era(server):
    h = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    r = requests.post(url(server), headers=h, timeout=30, json={"jsonrpc": "2.0", "id": 1, "method": "initialize",
                      "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                                 "clientInfo": {"name": "raw", "version": "1"}}})
    assert r.status_code == 200 and r.headers["mcp-session-id"]
    res = rbtest.mcp_answer(r)["result"]
    assert res["protocolVersion"] == "2025-11-25" and "resultType" not in res
    h2 = dict(h, **{"Mcp-Session-Id": r.headers["mcp-session-id"], "MCP-Protocol-Version": "2025-11-25"})
    r = requests.post(url(server), headers=h2, json={"jsonrpc": "2.0", "id": 2, "method": "ping"}, timeout=30)
    assert r.status_code == 200 and rbtest.mcp_answer(r)["result"] == {}
    # A legacy request without a session is still told to initialize (what dual-era clients fall back on).
    r = requests.post(url(server), headers=h, json={"jsonrpc": "2.0", "id": 3, "method": "tools/list"}, timeout=30)
    assert r.status_code == 400 and r.json()["error"]["code"] == -32600


# ---- tools ---------------------------------------------------------------------------------


def test_req_tools_list(server):
    first = result(post(server, "tools/list"))
    names = [t["name"] for t in first["tools"]]
    assert "execute_code" in names and "upload_file" in names
    for t in first["tools"]:
        assert t["inputSchema"]["type"] == "object"
    # Deterministic order, and the descriptions say what a stateless client must do.
    assert [t["name"] for t in result(post(server, "tools/list", rid=2), 2)["tools"]] == names
    ex = next(t for t in first["tools"] if t["name"] == "execute_code")
    assert "Without session_id a new session is started" in ex["description"]
    assert "connection" not in ex["description"]
    up = next(t for t in first["tools"] if t["name"] == "upload_file")
    assert "session_id is required" in up["description"]


def test_req_caching(server, session):
    for method in ("tools/list", "resources/list", "resources/templates/list", "server/discover"):
        r = result(post(server, method))
        assert r["ttlMs"] > 0 and r["cacheScope"] == "public", (method, r)
    uri = f"runbox://sessions/{session}"
    r = result(post(server, "resources/read", {"uri": uri}, name=uri))
    assert r["ttlMs"] == 0 and r["cacheScope"] == "private"


def test_req_tools_call_simple_text_and_state_through_session_id(server):
    r = result(call(server, "execute_code", {"code": "x = 20\nprint('hello')"}))
    sid = r["structuredContent"]["session_id"]
    server.session_ids.add(sid)
    text = "".join(c.get("text", "") for c in r["content"])
    assert "hello" in text and sid in text and "session_id" in text
    r = result(call(server, "execute_code", {"code": "x + 22", "session_id": sid}, rid=2), 2)
    assert r["structuredContent"]["result"] == "42" and r["structuredContent"]["session_id"] == sid
    assert sid not in "".join(c.get("text", "") for c in r["content"])  # nothing new to tell


def test_req_tools_call_image_and_mixed_content(server, session):
    r = result(call(server, "execute_code", {"code": "print('plotting')\n" + PLOT, "session_id": session}))
    kinds = [c["type"] for c in r["content"]]
    assert "text" in kinds and "image" in kinds, kinds
    img = next(c for c in r["content"] if c["type"] == "image")
    assert img["mimeType"] == "image/png"
    assert base64.b64decode(img["data"]).startswith(rbtest.PNG_SIGNATURE)


def test_req_tools_call_error(server, session):
    r = result(call(server, "execute_code", {"code": "1/0", "session_id": session}))
    assert r["isError"] is True
    assert "ZeroDivisionError" in "".join(c.get("text", "") for c in r["content"])
    error(call(server, "no_such_tool", {}), 400, -32602)
    r = result(call(server, "list_files", {}))  # no session to fall back on
    assert r["isError"] is True and "session_id" in r["content"][0]["text"]


def test_req_tools_call_with_progress(server, session):
    code = "import time\nfor i in range(3):\n    print('tick', i, flush=True)\n    time.sleep(1)\n"
    r = call(server, "execute_code", {"code": code, "session_id": session},
             params={"_meta": meta(progressToken="tok-1")})
    assert r.status_code == 200 and r.headers["Content-Type"].startswith("text/event-stream")
    msgs = events(r)
    progress = [m for m in msgs if m.get("method") == "notifications/progress"]
    assert progress and all(m["params"]["progressToken"] == "tok-1" for m in progress)
    assert "tick 0" in "".join(m["params"].get("message", "") for m in progress)
    assert "id" in msgs[-1] and msgs[-1]["result"]["resultType"] == "complete"
    # No log level in _meta: no notifications/message (2026-07-28 forbids them then).
    assert not [m for m in msgs if m.get("method") == "notifications/message"]
    assert "id:" not in r.text  # no SSE event ids: the revision removed resumption


def test_log_level_per_request(server, session):
    r = call(server, "execute_code", {"code": "1", "session_id": session},
             params={"_meta": meta(**{"io.modelcontextprotocol/logLevel": "debug"})})
    logs = [m for m in events(r) if m.get("method") == "notifications/message"]
    assert logs and any("queued" in m["params"]["data"] for m in logs)


def test_req_server_sse_multiple_streams(server, session):
    """Two requests at once, each answered on its own stream with its own progress."""
    other = result(call(server, "create_session", {}))["structuredContent"]["session_id"]
    server.session_ids.add(other)
    out: dict[str, requests.Response] = {}

    def run(tag: str, sid: str) -> None:
        code = f"import time\nfor i in range(2):\n    print('{tag}', i, flush=True)\n    time.sleep(0.5)\n"
        out[tag] = call(server, "execute_code", {"code": code, "session_id": sid}, rid=tag,
                        params={"_meta": meta(progressToken=tag)})

    threads = [threading.Thread(target=run, args=(t, s)) for t, s in (("a", session), ("b", other))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    for tag in ("a", "b"):
        msgs = events(out[tag])
        assert {m["params"]["progressToken"] for m in msgs if m.get("method") == "notifications/progress"} == {tag}
        assert msgs[-1]["id"] == tag and not msgs[-1]["result"]["isError"]


def test_cancel_when_the_stream_closes(server, session):
    code = "import time\nprint('started', flush=True)\nwhile True:\n    time.sleep(0.1)\n"
    r = call(server, "execute_code", {"code": code, "session_id": session}, stream=True,
             params={"_meta": meta(progressToken="c")})
    for line in r.iter_lines():
        if b"started" in line:
            break
    r.close()  # closing the response stream cancels the request
    rbtest.wait_until(lambda: server.session(session)["status"] == "ready", "the session to become idle")
    r = result(call(server, "execute_code", {"code": "shared", "session_id": session}))
    assert r["structuredContent"]["result"] == "'kept'"  # interrupted, not reset


def test_cancel_with_notifications_cancelled(server, session):
    code = "import time\nprint('started', flush=True)\nwhile True:\n    time.sleep(0.1)\n"
    r = call(server, "execute_code", {"code": code, "session_id": session}, rid="to-cancel", stream=True,
             params={"_meta": meta(progressToken="c")})
    lines = r.iter_lines(chunk_size=1)  # one generator for the whole stream: it buffers
    for line in lines:
        if b"started" in line:
            break
    note = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": "to-cancel",
                                                                               "_meta": meta()}}
    n = requests.post(url(server), json=note, headers=headers("notifications/cancelled"), timeout=30)
    assert n.status_code == 202
    rest = [line.decode() for line in lines]
    final = [json.loads(line[5:]) for line in rest if line.startswith("data:") and '"id"' in line]
    assert final and final[-1]["result"]["structuredContent"]["status"] == "cancelled", rest[-20:]


# ---- resources -----------------------------------------------------------------------------


def test_req_resources_list(server):
    r = result(post(server, "resources/list"))
    assert "runbox://sessions" in {x["uri"] for x in r["resources"]}


def test_req_resources_read_text(server, session):
    uri = "runbox://sessions"
    r = result(post(server, "resources/read", {"uri": uri}, name=uri))
    c = r["contents"][0]
    assert c["uri"] == uri and c["mimeType"] == "application/json"
    assert session in c["text"]


def test_req_resources_read_binary(server, session):
    r = result(call(server, "execute_code", {"code": PLOT, "session_id": session}))
    rid = r["structuredContent"]["request_id"]
    uri = f"runbox://executions/{rid}/files/0"
    c = result(post(server, "resources/read", {"uri": uri}, name=uri))["contents"][0]
    assert c["mimeType"] == "image/png" and base64.b64decode(c["blob"]).startswith(rbtest.PNG_SIGNATURE)


def test_req_resources_templates_read(server, session):
    r = result(post(server, "resources/templates/list"))
    assert "runbox://sessions/{session_id}" in {t["uriTemplate"] for t in r["resourceTemplates"]}
    uri = f"runbox://sessions/{session}"
    c = result(post(server, "resources/read", {"uri": uri}, name=uri))["contents"][0]
    assert json.loads(c["text"])["session_id"] == session


def test_req_sep_2164_resource_not_found(server):
    uri = "runbox://sessions/s_00000000000000000000000000000000"
    e = error(post(server, "resources/read", {"uri": uri}, name=uri), 400, -32602)
    assert "not found" in e["message"].lower()


# ---- subscriptions/listen, Origin, extra params --------------------------------------------


def test_subscriptions_listen_acknowledges_and_stays_open(server):
    r = post(server, "subscriptions/listen", {"notifications": {"toolsListChanged": True,
                                                                 "resourceSubscriptions": ["runbox://sessions"]}},
             rid=77, stream=True)
    assert r.status_code == 200 and r.headers["Content-Type"].startswith("text/event-stream")
    for line in r.iter_lines():
        if line.startswith(b"data:"):
            ack = json.loads(line[5:])
            break
    r.close()
    assert ack["method"] == "notifications/subscriptions/acknowledged"
    assert ack["params"]["notifications"] == {"toolsListChanged": True}  # resource updates are not offered
    assert ack["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"] == 77
    error(post(server, "subscriptions/listen", {}), 400, -32602)


def test_req_dns_rebinding_protection(server):
    for extra in ({"Origin": "http://evil.example"}, {"Host": "evil.example"}):
        r = post(server, "tools/list", hdrs=dict(headers("tools/list"), **extra))
        assert r.status_code == 403, r.text
    r = post(server, "tools/list", hdrs=dict(headers("tools/list"), Origin="http://localhost:3000"))
    result(r)


def test_req_input_required_result_ignore_extra_params(server):
    """runbox never asks for input; a retry's inputResponses/requestState are ignored, not refused."""
    r = result(post(server, "tools/call", {"name": "get_health", "arguments": {}, "inputResponses": {"x": {}},
                                           "requestState": "opaque"}, name="get_health"))
    assert r["isError"] is False


def test_not_applicable_requirements_are_listed():
    assert len(NOT_APPLICABLE) == 21  # of the 37 server requirements of 2026-07-28


# ---- the mcp SDK in auto mode ----------------------------------------------------------------


def texts(res) -> str:
    return "".join(getattr(c, "text", "") for c in res.content)


def test_sdk_auto_mode_negotiates_2026(server):
    r = server.post("/sessions", {})
    assert r.status_code == 201, r.text
    rest = r.json()["session_id"]
    server.session_ids.add(rest)
    assert server.post("/execute", {"session_id": rest, "code": "from_rest = 5", "wait": True}).status_code == 200

    async def main():
        ticks: list[str] = []

        async def progress(p: float, total: float | None, message: str | None) -> None:
            ticks.append(message or "")

        async with Client(url(server)) as c:
            assert c.protocol_version == V  # negotiated the modern era, not the initialize fallback
            assert c.session.discover_result is not None and c.session.initialize_result is None
            names = [t.name for t in (await c.list_tools()).tools]
            assert "execute_code" in names
            r = await c.call_tool("execute_code", {"code": "y = 6"})
            assert not r.is_error, texts(r)
            sid = r.structured_content["session_id"]
            assert sid in texts(r)
            r = await c.call_tool("execute_code", {"code": "y * 7", "session_id": sid})
            assert r.structured_content["result"] == "42", texts(r)
            r = await c.call_tool("execute_code", {"code": PLOT, "session_id": sid})
            assert [b.mime_type for b in r.content if b.type == "image"] == ["image/png"]
            code = "import time\nfor i in range(3):\n    print('tick', i, flush=True)\n    time.sleep(1)\n"
            r = await c.call_tool("execute_code", {"code": code, "session_id": sid}, progress_callback=progress)
            assert not r.is_error and "tick 2" in "".join(ticks), ticks
            with anyio.move_on_after(3):
                await c.call_tool("execute_code", {"code": "import time\nwhile True:\n    time.sleep(0.1)\n",
                                                   "session_id": sid})
            rbtest.wait_until(lambda: server.session(sid)["status"] == "ready", "the cancelled code to stop")
            r = await c.call_tool("execute_code", {"code": "y", "session_id": sid})
            assert r.structured_content["result"] == "6", texts(r)
            r = await c.call_tool("execute_code", {"code": "from_rest * 2", "session_id": rest})
            assert r.structured_content["result"] == "10", texts(r)
            return sid

    server.session_ids.add(anyio.run(main))


def test_sdk_legacy_mode_still_initializes(server):
    async def main():
        async with Client(url(server), mode="legacy") as c:
            assert c.protocol_version == "2025-11-25"
            r = await c.call_tool("execute_code", {"code": "z = 1"})
            r = await c.call_tool("execute_code", {"code": "z + 1"})  # the connection's own sandbox
            assert r.structured_content["result"] == "2", texts(r)
            return r.structured_content["session_id"]

    server.session_ids.add(anyio.run(main))


def test_era_legacy_query_pins_the_initialize_era(server):
    """/mcp?era=legacy: for clients that always probe 2026-07-28 first (the OpenAI Agents SDK) but
    rely on one sandbox per MCP session."""
    r = requests.post(url(server) + "?era=legacy", json={"jsonrpc": "2.0", "id": 1, "method": "server/discover",
                                                          "params": {"_meta": meta()}},
                      headers=headers("server/discover"), timeout=30)
    assert r.status_code == 400 and r.json()["error"]["code"] == -32600  # not a modern error: clients fall back

    async def main():
        async with Client(url(server) + "?era=legacy") as c:
            assert c.protocol_version == "2025-11-25"
            await c.call_tool("execute_code", {"code": "w = 3"})
            r = await c.call_tool("execute_code", {"code": "w * 2"})
            assert r.structured_content["result"] == "6", texts(r)
            return r.structured_content["session_id"]

    server.session_ids.add(anyio.run(main))


def test_fastmcp_auto_mode_negotiates_2026(server):
    from fastmcp import Client as FastMCPClient

    async def main():
        async with FastMCPClient(url(server)) as c:
            assert c.session.protocol_version == V
            assert "execute_code" in {t.name for t in await c.list_tools()}
            r = await c.call_tool("execute_code", {"code": "v = [1, 2, 3]"})
            sid = r.structured_content["session_id"]
            r = await c.call_tool("execute_code", {"code": "sum(v)", "session_id": sid})
            assert r.structured_content["result"] == "6"
            return sid

    server.session_ids.add(anyio.run(main))

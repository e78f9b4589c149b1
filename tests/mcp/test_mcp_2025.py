"""The server requirements of modelcontextprotocol/conformance's requirements/2025-11-25.yaml, one
test per requirement id that applies to runbox (`test_req_*`), over raw HTTP in the
session-based era (initialize, Mcp-Session-Id) against a real runboxd and real sandboxes. The
requirements that do not apply are in NOT_APPLICABLE with the reason. (The same ids of the
2026-07-28 list are test_mcp_2026.py's: the suite runs a scenario once per era.)
"""

from __future__ import annotations

import base64
import json
import threading

import pytest
import requests

import rbtest

V = "2025-11-25"
PLOT = (
    "import matplotlib\nmatplotlib.use('Agg')\nimport matplotlib.pyplot as plt\n"
    "plt.plot([1, 2, 3], [1, 4, 9])\nplt.show()\n"
)
NOT_APPLICABLE = {
    "completion-complete": "no prompts or resource templates with completable arguments; not advertised",
    "tools-call-audio": "no tool returns audio",
    "tools-call-embedded-resource": "no tool returns an embedded resource (large plots are resource links)",
    "tools-call-sampling": "runbox never asks the client's model (no sampling)",
    "tools-call-elicitation": "runbox never asks the user (no elicitation)",
    "elicitation-sep1034-defaults": "as above",
    "elicitation-sep1330-enums": "as above",
    "resources-subscribe": "resources change with every execution; subscribe is advertised as false",
    "resources-unsubscribe": "as above",
    "prompts-list": "runbox offers no prompts",
    "prompts-get-simple": "runbox offers no prompts",
    "prompts-get-with-args": "runbox offers no prompts",
    "prompts-get-embedded-resource": "runbox offers no prompts",
    "prompts-get-with-image": "runbox offers no prompts",
}


class Legacy:
    """One MCP session over raw HTTP."""

    def __init__(self, server: rbtest.Server):
        self.url = server.url + "/mcp"
        self.h = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
        r = requests.post(self.url, headers=self.h, timeout=60, json={
            "jsonrpc": "2.0", "id": 0, "method": "initialize",
            "params": {"protocolVersion": V, "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}})
        assert r.status_code == 200, r.text
        self.init = rbtest.mcp_answer(r)["result"]
        self.h = dict(self.h, **{"Mcp-Session-Id": r.headers["mcp-session-id"], "MCP-Protocol-Version": V})
        n = requests.post(self.url, headers=self.h, timeout=60,
                          json={"jsonrpc": "2.0", "method": "notifications/initialized"})
        assert n.status_code == 202

    def post(self, method: str, params: dict | None = None, rid=1, **kw) -> requests.Response:
        body = {"jsonrpc": "2.0", "id": rid, "method": method}
        if params is not None:
            body["params"] = params
        return requests.post(self.url, headers=kw.pop("headers", self.h), json=body, timeout=120, **kw)

    def result(self, method: str, params: dict | None = None, rid=1) -> dict:
        r = self.post(method, params, rid)
        assert r.status_code == 200, r.text[:2000]
        answer = rbtest.mcp_answer(r, rid)
        assert "result" in answer, answer
        assert "resultType" not in answer["result"]  # a 2026-07-28 field: not in this era
        return answer["result"]

    def call(self, tool: str, args: dict, rid=1, meta: dict | None = None) -> requests.Response:
        params = {"name": tool, "arguments": args}
        if meta:
            params["_meta"] = meta
        return self.post("tools/call", params, rid)

    def close(self) -> None:
        requests.delete(self.url, headers=self.h, timeout=60)


def msgs(resp: requests.Response) -> list[dict]:
    if not resp.headers.get("Content-Type", "").startswith("text/event-stream"):
        return [resp.json()]
    return [json.loads(line[5:]) for line in resp.text.splitlines() if line.startswith("data:") and line[5:].strip()]


@pytest.fixture(scope="module")
def mcp(server):
    c = Legacy(server)
    yield c
    c.close()


@pytest.fixture(scope="module")
def sid(server, mcp) -> str:
    r = rbtest.mcp_answer(mcp.call("execute_code", {"code": "kept = 1"}))["result"]
    s = r["structuredContent"]["session_id"]
    server.session_ids.add(s)
    return s


def test_req_server_initialize(server, mcp):
    assert mcp.init["protocolVersion"] == V
    assert mcp.init["serverInfo"]["name"] == "runbox"
    caps = mcp.init["capabilities"]
    assert "tools" in caps and "resources" in caps and "logging" in caps
    assert caps["resources"]["subscribe"] is False and "prompts" not in caps and "completions" not in caps


def test_req_ping(mcp):
    assert mcp.result("ping") == {}


def test_req_logging_set_level(mcp):
    assert mcp.result("logging/setLevel", {"level": "debug"}) == {}
    r = mcp.post("logging/setLevel", {"level": "loud"})
    assert r.status_code in (200, 400) and rbtest.mcp_answer(r)["error"]["code"] == -32602


def test_req_tools_call_with_logging(server):
    c = Legacy(server)
    try:
        c.result("logging/setLevel", {"level": "debug"})
        r = c.call("execute_code", {"code": "1"})
        logs = [m for m in msgs(r) if m.get("method") == "notifications/message"]
        assert logs and all(m["params"]["level"] in ("debug", "info") for m in logs), msgs(r)
        server.session_ids.add(rbtest.mcp_answer(r, 1)["result"]["structuredContent"]["session_id"])
    finally:
        c.close()


def test_req_tools_list(mcp):
    tools = mcp.result("tools/list")["tools"]
    names = [t["name"] for t in tools]
    assert "execute_code" in names and all(t["inputSchema"]["type"] == "object" for t in tools)
    assert [t["name"] for t in mcp.result("tools/list", rid=2)["tools"]] == names
    ex = next(t for t in tools if t["name"] == "execute_code")
    assert "private sandbox of this MCP connection" in ex["description"]


def test_req_tools_call_simple_text(mcp, sid):
    r = rbtest.mcp_answer(mcp.call("execute_code", {"code": "print('hello')"}))["result"]
    assert r["isError"] is False and r["content"][0] == {"type": "text", "text": "hello\n"}
    assert r["structuredContent"]["session_id"] == sid  # the MCP session's own sandbox


def test_req_tools_call_image_and_mixed_content(mcp, sid):
    r = rbtest.mcp_answer(mcp.call("execute_code", {"code": "print('plot')\n" + PLOT}))["result"]
    kinds = [c["type"] for c in r["content"]]
    assert "text" in kinds and "image" in kinds, kinds
    img = next(c for c in r["content"] if c["type"] == "image")
    assert base64.b64decode(img["data"]).startswith(rbtest.PNG_SIGNATURE)


def test_req_tools_call_error(mcp, sid):
    r = rbtest.mcp_answer(mcp.call("execute_code", {"code": "1/0"}))["result"]
    assert r["isError"] is True and "ZeroDivisionError" in "".join(c.get("text", "") for c in r["content"])
    r = mcp.call("no_such_tool", {})
    assert rbtest.mcp_answer(r)["error"]["code"] == -32602


def test_req_tools_call_with_progress(mcp, sid):
    code = "import time\nfor i in range(3):\n    print('tick', i, flush=True)\n    time.sleep(0.5)\n"
    r = mcp.call("execute_code", {"code": code}, meta={"progressToken": 17})
    progress = [m for m in msgs(r) if m.get("method") == "notifications/progress"]
    assert progress and all(m["params"]["progressToken"] == 17 for m in progress)
    values = [m["params"]["progress"] for m in progress]
    assert values == sorted(values) and len(set(values)) == len(values)


def test_req_server_sse_multiple_streams(server, mcp, sid):
    other = rbtest.mcp_answer(mcp.call("create_session", {}))["result"]["structuredContent"]["session_id"]
    server.session_ids.add(other)
    out: dict[str, requests.Response] = {}

    def run(tag: str, session: str) -> None:
        code = f"import time\nfor i in range(2):\n    print('{tag}', i, flush=True)\n    time.sleep(0.5)\n"
        out[tag] = mcp.call("execute_code", {"code": code, "session_id": session}, rid=tag,
                            meta={"progressToken": tag})

    threads = [threading.Thread(target=run, args=(t, s)) for t, s in (("a", sid), ("b", other))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    for tag in ("a", "b"):
        m = msgs(out[tag])
        assert {x["params"]["progressToken"] for x in m if x.get("method") == "notifications/progress"} == {tag}
        assert m[-1]["id"] == tag and m[-1]["result"]["isError"] is False


def test_req_resources_list(mcp):
    assert "runbox://sessions" in {r["uri"] for r in mcp.result("resources/list")["resources"]}


def test_req_resources_read_text(mcp, sid):
    c = mcp.result("resources/read", {"uri": "runbox://sessions"})["contents"][0]
    assert c["mimeType"] == "application/json" and sid in c["text"]


def test_req_resources_read_binary(mcp, sid):
    r = rbtest.mcp_answer(mcp.call("execute_code", {"code": PLOT}))["result"]
    uri = f"runbox://executions/{r['structuredContent']['request_id']}/files/0"
    c = mcp.result("resources/read", {"uri": uri})["contents"][0]
    assert c["mimeType"] == "image/png" and base64.b64decode(c["blob"]).startswith(rbtest.PNG_SIGNATURE)


def test_req_resources_templates_read(mcp, sid):
    templates = {t["uriTemplate"] for t in mcp.result("resources/templates/list")["resourceTemplates"]}
    assert "runbox://sessions/{session_id}" in templates
    c = mcp.result("resources/read", {"uri": f"runbox://sessions/{sid}"})["contents"][0]
    assert json.loads(c["text"])["session_id"] == sid
    r = mcp.post("resources/read", {"uri": "runbox://sessions/s_00000000000000000000000000000000"})
    assert rbtest.mcp_answer(r)["error"]["code"] == -32002  # this era's "resource not found"


def test_req_dns_rebinding_protection(mcp):
    for extra in ({"Origin": "http://evil.example"}, {"Host": "evil.example"}):
        assert mcp.post("ping", headers=dict(mcp.h, **extra)).status_code == 403
    assert mcp.post("ping", headers=dict(mcp.h, Origin="http://127.0.0.1:5173")).status_code == 200


def test_not_applicable_requirements_are_listed():
    assert len(NOT_APPLICABLE) == 14  # of the 30 server requirements of 2025-11-25

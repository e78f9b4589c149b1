"""Code contexts and per-execution environment variables on runbox's own protocols (REST and
MCP), against a real runboxd and real Docker sandboxes: an execution names a language (its
default context) or a context; contexts are made, listed, restarted and removed under the
session; env holds for one execution; what names nothing runs as always. Hostile cases get a
clear 4xx: a ninth context, an unknown id, a default context to remove, another key's session.
Contexts are kept with the session: they survive a restart of runboxd. (E2B's side, with its
SDK: tests/clients/test_e2b_contexts.py; the runner's: tests/runner/test_contexts.py.)
"""

from __future__ import annotations

import anyio
import pytest

import rbtest
from rbfixtures import keyed_server_fixture

from mcp import Client

KEYS = {"alice": "rb_" + "e5" * 20, "bob": "rb_" + "f6" * 20}
CONTEXTS_MAX = 8

keyed = keyed_server_fixture("runboxd-contexts-keys", KEYS, name="keyed")


def run(server, body: dict, expect: int = 200) -> dict:
    r = server.post("/execute", dict(body, wait=True))
    assert r.status_code == expect, r.text
    doc = r.json()
    if expect == 200:
        rbtest.check_schema(doc, "Result")
    return doc


def test_languages_contexts_and_env_over_rest(server):
    sid = server.create_session()["session_id"]
    assert run(server, {"session_id": sid, "code": "x = 'py'; x"})["result"] == "'py'"
    doc = run(server, {"session_id": sid, "code": "const x = 6 * 7; console.log(x)", "language": "javascript"})
    assert doc["stdout"] == "42\n", doc
    doc = run(server, {"session_id": sid, "code": 'echo "$G from $(pwd)"', "context": "bash", "env": {"G": "hi"}})
    assert doc["stdout"] == "hi from /workspace\n", doc
    assert run(server, {"session_id": sid, "code": 'echo "${G:-unset}"', "language": "bash"})["stdout"] == "unset\n"
    # the session's own interpreter, named or not, kept its state
    assert run(server, {"session_id": sid, "code": "x"})["result"] == "'py'"
    assert run(server, {"session_id": sid, "code": "x", "context": "default"})["result"] == "'py'"
    assert run(server, {"session_id": sid, "code": "x", "language": "python"})["result"] == "'py'"
    # null is the same as absent (openapi.yaml), for restart as for the new fields
    doc = run(server, {"session_id": sid, "code": "x", "restart": None, "context": None, "env": None})
    assert doc["result"] == "'py'", doc
    doc = run(server, {"session_id": sid, "code": "import os; os.environ.get('G', 'unset')", "env": {"G": "py"}})
    assert doc["result"] == "'py'"
    assert run(server, {"session_id": sid, "code": "os.environ.get('G', 'unset')"})["result"] == "'unset'"

    r = server.get(f"/sessions/{sid}/contexts")
    assert r.status_code == 200, r.text
    listed = r.json()["contexts"]
    assert [c["id"] for c in listed][:1] == ["python"] and all(c["default"] for c in listed), listed
    assert {c["language"] for c in listed} == {"python", "javascript", "typescript", "bash"}

    server.post(f"/sessions/{sid}/files", params={"path": "sub/keep.txt"}, data=b"k",
                headers={"Content-Type": "application/octet-stream"})
    r = server.post(f"/sessions/{sid}/contexts", {"language": "python", "cwd": "/workspace/sub"})
    assert r.status_code == 201, r.text
    ctx = r.json()
    rbtest.check_schema(ctx, "Context")
    assert ctx["id"].startswith("ctx_") and ctx["cwd"] == "/workspace/sub" and ctx["default"] is False
    doc = run(server, {"session_id": sid, "code": "import os; x = 'ctx'; os.getcwd(), open('keep.txt').read()",
                       "context": ctx["id"]})
    assert doc["result"] == "('/workspace/sub', 'k')", doc
    assert run(server, {"session_id": sid, "code": "x"})["result"] == "'py'"
    assert server.get(f"/sessions/{sid}/contexts").json()["contexts"][-1]["id"] == ctx["id"]

    # a restart is an execution: that context's variables are gone, the others' kept
    doc = run(server, {"session_id": sid, "code": "", "context": ctx["id"], "restart": True})
    assert doc["reset"] is True, doc
    assert run(server, {"session_id": sid, "code": "x", "context": ctx["id"]})["error"]["ename"] == "NameError"
    assert run(server, {"session_id": sid, "code": "x"})["result"] == "'py'"

    r = server.delete(f"/sessions/{sid}/contexts/{ctx['id']}")
    assert r.status_code == 204, r.text
    assert ctx["id"] not in [c["id"] for c in server.get(f"/sessions/{sid}/contexts").json()["contexts"]]
    run(server, {"session_id": sid, "code": "1", "context": ctx["id"]}, expect=404)
    assert server.delete(f"/sessions/{sid}/contexts/{ctx['id']}").status_code == 404


def test_hostile_requests_get_a_clear_4xx(server):
    sid = server.create_session({"language": "bash"})["session_id"]
    made = []
    for _ in range(CONTEXTS_MAX):
        r = server.post(f"/sessions/{sid}/contexts", {"language": "bash"})
        assert r.status_code == 201, r.text
        made.append(r.json()["id"])
    r = server.post(f"/sessions/{sid}/contexts", {})
    assert r.status_code == 409 and "remove one first" in r.json()["error"]["message"], r.text
    r = server.delete(f"/sessions/{sid}/contexts/bash")
    assert r.status_code == 409 and "default context" in r.json()["error"]["message"], r.text
    for body, status, words in (
            ({"language": "cobol"}, 400, "language"),
            ({"cwd": "relative"}, 400, "absolute path"),
            ({"cwd": "/x", "color": "red"}, 400, "color")):
        r = server.post(f"/sessions/{sid}/contexts", body)
        assert r.status_code == status and words in r.json()["error"]["message"], r.text
    for body, status, words in (
            ({"context": "ctx_nope"}, 404, "ctx_nope"),
            ({"context": made[0], "language": "python"}, 409, "give one of the two"),
            ({"context": 5}, 400, "context"),
            ({"env": {"1A": "x"}}, 400, "not a variable name"),
            ({"env": {"A": 1}}, 400, "must be a string"),
            ({"env": ["A"]}, 400, "env"),
            ({"env": {"A": "x" * (300 * 1024)}}, 413, "larger")):
        r = server.post("/execute", dict({"session_id": sid, "code": "true"}, **body))
        assert r.status_code == status and words in r.json()["error"]["message"], (body, r.text)
    r = server.get("/sessions/s_nope/contexts")
    assert r.status_code == 404, r.text
    assert server.session(sid)["executions"] == 0


def test_another_keys_session_and_its_contexts_are_unknown(keyed):
    alice = {"Authorization": f"Bearer {KEYS['alice']}"}
    bob = {"Authorization": f"Bearer {KEYS['bob']}"}
    r = keyed.post("/sessions", {}, headers=alice)
    assert r.status_code == 201, r.text
    sid = r.json()["session_id"]
    keyed.session_ids.add(sid)
    ctx = keyed.post(f"/sessions/{sid}/contexts", {"language": "bash"}, headers=alice).json()
    assert keyed.get(f"/sessions/{sid}/contexts", headers=bob).status_code == 404
    assert keyed.post(f"/sessions/{sid}/contexts", {}, headers=bob).status_code == 404
    assert keyed.delete(f"/sessions/{sid}/contexts/{ctx['id']}", headers=bob).status_code == 404
    r = keyed.post("/execute", {"session_id": sid, "code": "true", "context": ctx["id"], "wait": True}, headers=bob)
    assert r.status_code == 404, r.text
    r = keyed.post("/execute", {"session_id": sid, "code": "echo mine", "context": ctx["id"], "wait": True},
                   headers=alice)
    assert r.status_code == 200 and r.json()["stdout"] == "mine\n", r.text


def test_contexts_survive_a_restart_of_runboxd(make_server):
    server = make_server()
    sid = server.create_session()["session_id"]
    ctx = server.post(f"/sessions/{sid}/contexts", {"language": "javascript"}).json()
    run(server, {"session_id": sid, "code": "var kept = 41", "context": ctx["id"]})
    server.restart()
    assert ctx["id"] in [c["id"] for c in server.get(f"/sessions/{sid}/contexts").json()["contexts"]]
    doc = run(server, {"session_id": sid, "code": "kept + 1", "context": ctx["id"]})
    assert doc["result"] == "42", doc


def test_mcp_execute_code_names_a_language_context_and_env(server):
    sid = server.create_session()["session_id"]
    ctx = server.post(f"/sessions/{sid}/contexts", {"language": "bash"}).json()

    async def main():
        async with Client(server.url + "/mcp") as c:
            r = await c.call_tool("execute_code", {"code": "let n = 6; n * 7", "language": "javascript",
                                                   "session_id": sid})
            assert not r.is_error and r.structured_content["result"] == "42", r.content
            r = await c.call_tool("execute_code", {"code": "echo $W", "context": ctx["id"], "session_id": sid,
                                                   "env": {"W": "mcp"}})
            assert not r.is_error and r.structured_content["stdout"] == "mcp\n", r.content
            r = await c.call_tool("execute_code", {"code": "1", "context": "ctx_nope", "session_id": sid})
            assert r.is_error and "ctx_nope" in "".join(getattr(b, "text", "") for b in r.content)
            r = await c.call_tool("execute_code", {"code": "n", "language": "javascript", "session_id": sid})
            assert r.structured_content["result"] == "6", r.content

    anyio.run(main)


@pytest.mark.parametrize("language", ["python", "bash"])
def test_what_names_nothing_runs_as_always(server, language):
    sid = server.create_session({"language": language})["session_id"]
    code = "v = 1" if language == "python" else "v=1"
    assert run(server, {"session_id": sid, "code": code})["status"] == "completed"
    check = "v" if language == "python" else "echo $v"
    doc = run(server, {"session_id": sid, "code": check})
    assert (doc["result"] if language == "python" else doc["stdout"]) in ("1", "1\n"), doc

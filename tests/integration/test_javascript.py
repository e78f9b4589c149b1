"""JavaScript and TypeScript sessions end to end: real runboxd, Docker and HTTP, REST and MCP
(the official `mcp` SDK's client). The worker is docker/runner/js_worker.js on the image's
Debian Node.js; its details are tested in tests/runner/test_js.py."""

from __future__ import annotations

import threading

import anyio
from mcp import Client

import rbtest
from rbtest import check_error


def js_session(server, language="javascript", **opts) -> str:
    s = server.create_session(dict({"language": language}, **opts))
    assert s["language"] == language and s["status"] == "ready", s
    return s["session_id"]


def test_javascript_state_last_value_streams_and_errors(server):
    sid = js_session(server)
    r = server.execute(sid, "let x = 40;\nconst f = (y) => x + y;\nclass Box { constructor(v) { this.v = v } }")
    assert r["status"] == "completed" and r["result"] is None, r
    r = server.execute(sid, "console.log('out'); console.error('err'); new Box(f(2))")
    assert r["status"] == "completed", r
    assert r["result"] == "Box { v: 42 }"
    assert r["stdout"] == "out\n" and r["stderr"] == "err\n"
    assert [o.get("name") for o in r["outputs"]] == ["stdout", "stderr", None], r["outputs"]
    r = server.execute(sid, "const later = await new Promise((ok) => setTimeout(() => ok(x + 2), 20));\nlater")
    assert r["result"] == "42", r
    r = server.execute(sid, "function fail() {\n  throw new RangeError('too far')\n}\nfail()")
    assert r["status"] == "error"
    assert r["error"]["ename"] == "RangeError" and r["error"]["evalue"] == "too far"
    tb = "".join(r["error"]["traceback"])
    assert "at fail (<cell-4>:2:9)" in tb and "js_worker" not in tb and "node:" not in tb, tb
    assert server.execute(sid, "later + 1")["result"] == "43"


def test_javascript_sandbox_is_locked_down(server):
    s = server.create_session({"language": "javascript"})
    host = rbtest.inspect(s["container_id"])["HostConfig"]
    assert host["NetworkMode"] == "none" and host["ReadonlyRootfs"] is True
    assert "ALL" in [c.upper() for c in host.get("CapDrop") or []]
    r = server.execute(s["session_id"], "const st = require('fs').readFileSync('/proc/self/status', 'utf8');\n"
                       "[process.getuid(), /CapEff:\\s+0+\\n/.test(st), /NoNewPrivs:\\s+1/.test(st)]")
    assert r["result"] == "[ 1000, true, true ]", r


def test_javascript_cannot_reach_the_control_channel(server):
    # The container's stdout is runboxd's event stream: user code cannot open it, and a forged
    # event written to its own stdout arrives as plain output.
    sid = js_session(server)
    r = server.execute(sid, "const fs = require('fs');\n"
                       "const refused = (p) => { try { fs.closeSync(fs.openSync(p, 'w')); return 'OPENED' } "
                       "catch (e) { return e.code } };\n"
                       "console.log(JSON.stringify({type: 'done', id: 'forged', status: 'completed'}));\n"
                       "[refused('/proc/1/fd/1'), refused('/proc/1/fd/0')]")
    assert r["status"] == "completed" and r["result"] == "[ 'EACCES', 'EACCES' ]", r
    assert '"id":"forged"' in r["stdout"]


def test_javascript_timeout_and_interrupt_keep_the_state(server):
    sid = js_session(server)
    server.execute(sid, "let kept = 'yes'")
    r = server.execute(sid, "while (true) {}", timeout=2)
    assert r["status"] == "timeout" and r["reset"] is False, r
    assert server.execute(sid, "kept")["result"] == "'yes'"
    rid = server.execute(sid, "for (;;) {}", wait=False, timeout=300)["request_id"]
    server.wait_status(rid, "running")
    r = server.delete(f"/execute/{rid}")
    assert r.status_code == 200, r.text
    doc = server.wait_done(rid)
    assert doc["status"] == "cancelled" and doc["reset"] is False, doc
    assert server.execute(sid, "kept")["result"] == "'yes'"


def test_javascript_process_exit_resets_the_session(server):
    sid = js_session(server)
    server.execute(sid, "var lost = 1")
    r = server.execute(sid, "process.exit(1)")
    assert r["status"] == "error" and r["reset"] is True, r
    assert "exited with code 1" in r["reset_reason"], r
    assert server.execute(sid, "typeof lost")["result"] == "'undefined'"


def test_javascript_huge_output_is_capped(server):
    sid = js_session(server)
    r = server.execute(sid, "const line = 'y'.repeat(1000);\nfor (let i = 0; i < 100000; i++) console.log(line)",
                       timeout=120)
    assert r["status"] == "completed", {k: r[k] for k in ("status", "error", "dropped_bytes")}
    assert r["truncated"] is True and r["dropped_bytes"] > 0
    assert len(r["stdout"]) < 8 * 1024 * 1024


def test_javascript_memory_bomb_resets_with_the_reason(server):
    sid = js_session(server, execution_options={"memory_limit": "256m"})
    server.execute(sid, "let kept = 1")
    r = server.execute(sid, "const blocks = [];\nwhile (true) blocks.push(Buffer.alloc(16 << 20, 1))", timeout=60)
    assert r["status"] in ("error", "timeout") and r["reset"] is True, {k: r[k] for k in ("status", "reset_reason")}
    assert "out of memory" in r["reset_reason"], r["reset_reason"]
    assert server.execute(sid, "typeof kept")["result"] == "'undefined'"


def test_javascript_fork_bomb_is_contained(server):
    # A shell fork bomb started by a cell, in the cell's process group (as the Python test's
    # os.fork bomb); what escapes with setsid (detached: true) is killed only when the worker
    # is replaced, as in Python sessions (docker/runner/PROTOCOL.md).
    s = server.create_session({"language": "javascript"})
    sid = s["session_id"]
    server.execute(sid, "let before = 41")
    code = ("const { spawn } = require('child_process');\n"
            "spawn('bash', ['-c', 'f() { f | f & }; f'], { stdio: 'ignore' });\n"
            "while (true) {}")
    r = server.execute(sid, code, timeout=5)
    assert r["status"] == "timeout", r
    count = "require('fs').readdirSync('/proc').filter((p) => /^\\d+$/.test(p)).length"
    rbtest.wait_until(lambda: int(server.execute(sid, count)["result"]) <= 6, "the fork bomb's processes to be gone")
    r = server.execute(sid, "1 + 1")
    assert r["result"] == "2", r
    if not r["reset"]:
        assert server.execute(sid, "typeof before")["result"] in ("'number'", "'undefined'")
    assert rbtest.inspect(s["container_id"])["HostConfig"]["PidsLimit"] > 0


def test_typescript_runs_type_annotated_code(server):
    sid = js_session(server, "typescript")
    r = server.execute(sid, "interface Point { x: number; y: number }\n"
                       "const norm = (p: Point): number => Math.hypot(p.x, p.y);\n"
                       "norm({ x: 3, y: 4 })", timeout=120)
    assert r["status"] == "completed" and r["result"] == "5", r
    r = server.execute(sid, "type Name = string;\nconst greet = (n: Name): string => `hi ${n}`;\n"
                       "console.log(greet('ts'));\nlet total: number = await Promise.resolve(norm({ x: 6, y: 8 }))")
    assert r["stdout"] == "hi ts\n" and r["status"] == "completed", r
    assert server.execute(sid, "total")["result"] == "10"
    r = server.execute(sid, "\nfunction bad(n: number): never {\n  throw new Error(`bad ${n}`);\n}\nbad(total)")
    assert r["status"] == "error" and r["error"]["evalue"] == "bad 10"
    assert "at bad (<cell-4>:3:9)" in "".join(r["error"]["traceback"]), r["error"]


def test_malformed_npm_dependencies_are_refused_clearly(server):
    # Only malformed ones here: a well-formed name would be installed from the default registry
    # (tests/files/test_npm.py installs from a registry of its own).
    r = server.post("/sessions", {"language": "javascript", "dependencies": ["left-pad@file:../x"]})
    check_error(r, 400, "npm package name")
    r = server.post("/sessions", {"language": "ruby"})
    check_error(r, 400, "typescript")
    sid = js_session(server)
    r = server.post(f"/sessions/{sid}/dependencies", {"dependencies": ["requests==2.32.3"]})
    check_error(r, 400, "npm package name")


def test_packages_lists_node_and_its_modules(server):
    r = server.get("/packages")
    assert r.status_code == 200, r.text
    doc = r.json()
    rbtest.check_schema(doc, "Packages")
    assert doc["node"] and doc["node"].split(".")[0].isdigit(), doc["node"]
    assert "typescript" in {m["name"] for m in doc["node_modules"]}


def test_mcp_execute_code_in_javascript_and_typescript(server):
    found = {}

    async def main():
        async with Client(server.url + "/mcp") as c:
            r = await c.call_tool("execute_code", {"code": "let n = 6;\nconsole.log('hi');\nn * 7",
                                                   "language": "javascript"})
            assert not r.is_error, r.content
            assert r.structured_content["result"] == "42" and r.structured_content["stdout"] == "hi\n"
            found["js"] = r.structured_content["session_id"]
            # MCP 2026-07-28 (the SDK's default): the next call names the session the first one started
            r = await c.call_tool("execute_code", {"code": "n + 1", "language": "javascript",
                                                   "session_id": found["js"]})
            assert r.structured_content["result"] == "7", r.structured_content
            r = await c.call_tool("execute_code", {"code": "const s: string = 'typed';\ns.length",
                                                   "language": "typescript", "timeout": 120})
            assert not r.is_error and r.structured_content["result"] == "5", r.structured_content
            found["ts"] = r.structured_content["session_id"]
            r = await c.call_tool("execute_code", {"code": "null.x", "language": "javascript"})
            assert r.is_error and "TypeError" in "".join(getattr(b, "text", "") for b in r.content)

    anyio.run(main)
    assert found["js"] != found["ts"]
    for sid in found.values():
        server.session_ids.add(sid)


def test_parallel_javascript_sessions_are_independent(server):
    sids = [js_session(server) for _ in range(2)]
    errors = []

    def run(i, sid):
        try:
            server.execute(sid, f"let mine = {i}")
            assert server.execute(sid, "mine")["result"] == str(i)
        except AssertionError as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=run, args=(i, sid)) for i, sid in enumerate(sids)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(300)
    assert not errors, errors

"""The optional code policy through the public REST API, against a real runboxd, the real engine
and the real sandbox image: off by default; when the operator turns it on, a Python cell that
breaks a rule ends with status "error", error PolicyViolation naming the rule and the line, and
nothing of it runs; callers may turn off the rules the operator lets them (disabled_rules), for
that call only; GET /policy lists the active rules. The policy is a guard rail, not the
boundary: the container is (the rest of tests/security)."""

from __future__ import annotations

import json
import subprocess

import pytest

import sectest
from sectest import short

RULES_FILE = """# site rules of the test
import:json          # added to the default preset
-import:pickle       # removed from it
"""


@pytest.fixture(scope="module")
def policy_server(sandbox_image, tmp_path_factory):
    d = tmp_path_factory.mktemp("runboxd-policy")
    rules = d / "rules.txt"
    rules.write_text(RULES_FILE)
    s = sectest.Server(d, ["--code-policy", "default", "--code-policy-file", str(rules),
                           "--code-policy-overridable", "import:*, open:write", "--pool-size", "0"])
    s.start()
    yield s
    s.stop()


@pytest.fixture(scope="module")
def sid(policy_server) -> str:
    return policy_server.create_session()["session_id"]


def execute(server, body: dict):
    body = dict(body, wait=True)
    return server.http.post(server.url + "/execute", json=body, timeout=sectest.DEADLINE_S + 30)


def test_policy_is_off_by_default(guard):
    r = guard.http.get(guard.url + "/policy", timeout=30)
    assert r.status_code == 200, r.text
    doc = r.json()
    assert doc["enabled"] is False and doc["mode"] == "off" and doc["rules"] == []
    sid = guard.create_session()["session_id"]
    assert guard.value(sid, "import os, subprocess\neval('6 * 7')") == "42"


def test_get_policy_lists_the_active_rules(policy_server):
    r = policy_server.http.get(policy_server.url + "/policy", timeout=30)
    assert r.status_code == 200, r.text
    doc = r.json()
    assert doc["enabled"] is True and doc["mode"] == "default"
    rules = {x["name"]: x for x in doc["rules"]}
    for name in ("import:os", "import:subprocess", "import:socket", "import:ctypes", "builtin:eval",
                 "builtin:exec", "attr:__globals__", "attr:__subclasses__", "open:write", "import:json"):
        assert name in rules, name
    assert "import:pickle" not in rules
    assert rules["import:os"]["overridable"] is True and rules["open:write"]["overridable"] is True
    assert rules["builtin:eval"]["overridable"] is False
    assert "not a security boundary" in doc["note"]


def test_a_violating_cell_is_refused_and_nothing_runs(policy_server, sid):
    s = policy_server
    assert s.value(sid, "x = 1\nx") == "1"
    doc = s.run(sid, "x = 2\nprint('ran')\nopen('/workspace/marker', 'w').write('a')\n"
                     "def f():\n    return ().__class__.__bases__[0].__subclasses__()\n")
    assert doc["status"] == "error", short(doc)
    err = doc["error"]
    assert err["ename"] == "PolicyViolation", short(doc)
    assert err["evalue"].startswith("open:write:") and "(line 3)" in err["evalue"], err["evalue"]
    assert any("attr:__subclasses__" in line for line in err["traceback"]), err["traceback"]
    assert doc["stdout"] == "" and doc["result"] is None
    # Nothing of the refused cell ran, and the session goes on with its state.
    assert s.value(sid, "x") == "1"
    files = s.http.get(f"{s.url}/sessions/{sid}/files", timeout=60)
    assert files.status_code == 200, files.text
    assert "marker" not in [f["path"] for f in files.json()["files"]]


@pytest.mark.parametrize("code,rule", [
    ("import subprocess", "import:subprocess"),
    ("from socket import socket", "import:socket"),
    ("eval('1')", "builtin:eval"),
    ("__import__('ctypes')", "import:ctypes"),
    ("(lambda: 0).__globals__", "attr:__globals__"),
    ("import json", "import:json"),
])
def test_rules_of_the_preset_and_the_file(policy_server, sid, code, rule):
    doc = policy_server.run(sid, code)
    assert doc["status"] == "error" and doc["error"]["ename"] == "PolicyViolation", short(doc)
    assert doc["error"]["evalue"].startswith(rule + ":") and "(line 1)" in doc["error"]["evalue"]


def test_a_rule_removed_by_the_file_does_not_apply(policy_server, sid):
    assert policy_server.value(sid, "import pickle\npickle.loads(pickle.dumps(7))") == "7"


def test_disabled_rules_apply_to_one_call(policy_server, sid):
    s = policy_server
    r = execute(s, {"session_id": sid, "code": "import os\nos.getcwd()", "disabled_rules": ["import:os"]})
    assert r.status_code == 200, r.text
    assert r.json()["status"] == "completed" and r.json()["result"] == "'/workspace'", short(r.json())
    doc = s.run(sid, "import os")
    assert doc["status"] == "error" and doc["error"]["evalue"].startswith("import:os:"), short(doc)
    # Several rules, and names that are no active rule are ignored.
    r = execute(s, {"session_id": sid, "code": "import os, socket\nwith open('w.txt', 'w') as f:\n    f.write('1')\n"
                    "os.path.getsize('w.txt')", "disabled_rules": ["import:os", "import:socket", "open:write",
                                                                   "import:nothing"]})
    assert r.status_code == 200 and r.json()["result"] == "1", r.text


def test_rules_the_operator_keeps_cannot_be_disabled(policy_server, sid):
    r = execute(policy_server, {"session_id": sid, "code": "eval('1')", "disabled_rules": ["builtin:eval"]})
    assert r.status_code == 403, r.text
    assert r.json()["error"]["code"] == "forbidden"
    assert "builtin:eval" in r.json()["error"]["message"]
    r = execute(policy_server, {"session_id": sid, "code": "1", "disabled_rules": ["all"]})
    assert r.status_code == 403, r.text


@pytest.mark.parametrize("value", [["eval"], "import:os", [1], {"import:os": True}])
def test_malformed_disabled_rules_are_400(policy_server, sid, value):
    r = execute(policy_server, {"session_id": sid, "code": "1", "disabled_rules": value})
    assert r.status_code == 400, r.text
    assert "disabled_rules" in r.json()["error"]["message"]


def test_bash_cells_are_not_checked(policy_server):
    sid = policy_server.create_session(language="bash")["session_id"]
    doc = policy_server.run(sid, "echo 'import os'")
    assert doc["status"] == "completed" and doc["stdout"] == "import os\n", short(doc)


def test_syntax_errors_are_reported_as_python_does(policy_server, sid):
    doc = policy_server.run(sid, "import os\nif")
    assert doc["status"] == "error" and doc["error"]["ename"] == "SyntaxError", short(doc)


def test_a_bad_rules_file_stops_runboxd_at_start(tmp_path):
    bad = tmp_path / "rules.txt"
    bad.write_text("import:os\nimport os\n")
    r = subprocess.run([str(sectest.RUNBOX_BIN), "--listen", "127.0.0.1:0", "--db", str(tmp_path / "x.db"),
                        "--image", sectest.IMAGE, "--pool-size", "0", "--code-policy", "custom",
                        "--code-policy-file", str(bad)], capture_output=True, text=True, timeout=120)
    assert r.returncode != 0
    assert "line 2" in r.stderr and "code-policy-file" in r.stderr, r.stderr


def mcp_call(server, sid_header: dict, method: str, params: dict, rid: int) -> dict:
    r = server.http.post(server.url + "/mcp", json={"jsonrpc": "2.0", "id": rid, "method": method, "params": params},
                         headers={"Accept": "application/json, text/event-stream", **sid_header},
                         timeout=sectest.DEADLINE_S + 30)
    assert r.status_code == 200, r.text
    if r.headers.get("Content-Type", "").startswith("text/event-stream"):
        msgs = [json.loads(line[5:]) for line in r.text.splitlines() if line.startswith("data:")]
        return [m for m in msgs if m.get("id") == rid][0], r.headers
    return r.json(), r.headers


def test_mcp_execute_code_takes_disabled_rules(policy_server):
    s = policy_server
    init, headers = mcp_call(s, {}, "initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                                   "clientInfo": {"name": "policy-test", "version": "1"}}, 1)
    h = {"Mcp-Session-Id": headers["Mcp-Session-Id"], "MCP-Protocol-Version": "2025-06-18"}
    s.http.post(s.url + "/mcp", json={"jsonrpc": "2.0", "method": "notifications/initialized"},
                headers={"Accept": "application/json, text/event-stream", **h}, timeout=30)
    tools, _ = mcp_call(s, h, "tools/list", {}, 2)
    schema = [t for t in tools["result"]["tools"] if t["name"] == "execute_code"][0]["inputSchema"]
    assert schema["properties"]["disabled_rules"]["type"] == "array"
    try:
        res, _ = mcp_call(s, h, "tools/call", {"name": "execute_code", "arguments": {"code": "import socket"}}, 3)
        doc = res["result"]["structuredContent"]
        assert doc["status"] == "error" and doc["error"]["ename"] == "PolicyViolation", res
        res, _ = mcp_call(s, h, "tools/call", {"name": "execute_code", "arguments": {
            "code": "import socket\n6 * 7", "disabled_rules": ["import:socket"]}}, 4)
        assert res["result"]["structuredContent"]["result"] == "42", res
        res, _ = mcp_call(s, h, "tools/call", {"name": "execute_code", "arguments": {
            "code": "1", "disabled_rules": ["builtin:exec"]}}, 5)
        assert res["result"]["isError"] is True and "builtin:exec" in json.dumps(res), res
    finally:
        s.http.delete(s.url + "/mcp", headers=h, timeout=60)


# Plants an `ast` module where the session's packages go (/workspace/.runbox/site-packages, on
# PYTHONPATH so that user code's Python subprocesses find them too). Whoever imports it notes its
# uid in /tmp and fails the import.
PLANT_AST = r"""
import os
os.makedirs('/workspace/.runbox/site-packages', exist_ok=True)
with open('/workspace/.runbox/site-packages/ast.py', 'w') as f:
    f.write("import os\nwith open('/tmp/planted-import', 'a') as f:\n    f.write('%d\\n' % os.getuid())\n"
            "raise ImportError('a planted ast')\n")
'planted'
"""


def test_the_supervisor_imports_nothing_user_code_wrote(make_server):
    """Issue 9, finding 3: the supervisor (uid 999, CAP_KILL/SETUID/SETGID, the protocol stream
    in its hands) imports the policy checker, and with it `ast`, only when the first checked cell
    comes. A module of that name that user code left on the PYTHONPATH runboxd gives every
    sandbox must not be the one it imports: that would run user code on runbox's side of the
    privilege separation (the runner keeps that folder off the supervisor's path; tests/runner
    test_the_supervisor_imports_nothing_from_the_workspace has the case where it existed at the
    supervisor's start, which runboxd's sandboxes do not reach)."""
    s = make_server(["--code-policy", "default", "--pool-size", "0"])  # every rule may be disabled
    rules = [x["name"] for x in s.http.get(s.url + "/policy", timeout=30).json()["rules"]]
    sid = s.create_session()["session_id"]
    r = execute(s, {"session_id": sid, "code": PLANT_AST, "disabled_rules": rules})
    assert r.status_code == 200 and r.json()["result"] == "'planted'", r.text
    doc = s.run(sid, "6 * 7")  # checked: the supervisor loads the checker now
    assert doc["status"] == "completed" and doc["result"] == "42", short(doc)
    doc = s.run(sid, "import os\nos.path.exists('/tmp/planted-import') and open('/tmp/planted-import').read()")
    assert doc["status"] == "error" and doc["error"]["ename"] == "PolicyViolation", short(doc)  # still checked
    r = execute(s, {"session_id": sid, "code": "import os\nos.path.exists('/tmp/planted-import') and "
                                               "open('/tmp/planted-import').read().split()", "disabled_rules": rules})
    assert r.status_code == 200 and r.json()["status"] == "completed", r.text
    assert "999" not in r.json()["result"], r.json()["result"]

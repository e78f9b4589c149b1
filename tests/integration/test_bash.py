"""Bash sessions: a persistent shell whose cwd, variables and functions carry over."""

from __future__ import annotations


def test_bash_keeps_cwd_variables_and_functions(server):
    s = server.create_session({"language": "bash"})
    sid = s["session_id"]
    assert s["language"] == "bash" and s["status"] == "ready"
    r = server.execute(sid, "cd /tmp\nexport FOO=bar\nx=5\ngreet() { echo \"hi $1\"; }")
    assert r["status"] == "completed", r
    r = server.execute(sid, "pwd\necho $FOO $x\ngreet you")
    assert r["status"] == "completed"
    assert r["stdout"] == "/tmp\nbar 5\nhi you\n"
    assert r["result"] is None


def test_bash_stderr_and_exit_status(server):
    sid = server.create_session({"language": "bash"})["session_id"]
    r = server.execute(sid, "echo out; echo err >&2")
    assert r["stdout"] == "out\n" and r["stderr"] == "err\n"
    r = server.execute(sid, "false")
    assert r["status"] == "error"
    assert r["error"]["ename"] == "ExitCode" and r["error"]["evalue"] == "1"
    # The shell survives a failing command and keeps going.
    assert server.execute(sid, "echo still here")["stdout"] == "still here\n"


def test_bash_timeout(server):
    sid = server.create_session({"language": "bash"})["session_id"]
    server.execute(sid, "v=kept")
    r = server.execute(sid, "while true; do :; done", timeout=2)
    assert r["status"] == "timeout"
    r = server.execute(sid, "echo ${v:-lost}")
    assert r["status"] == "completed"
    if not r["reset"]:
        assert r["stdout"] == "kept\n"

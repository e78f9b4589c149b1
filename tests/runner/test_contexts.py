"""Tests of the runner's code contexts (docker/runner/runbox_runner/contexts.py): several workers
in one runner, each with its own language, state and working directory, per-cell environment
variables, restart and close of one context, and the bound on how many there are. The runner
runs as a plain subprocess (no Docker), as in test_runner.py.
"""

import os
import shutil
import signal
import uuid

import pytest

from test_runner import RUNNER, Result, Runner

HAVE_NODE = shutil.which("node") is not None


def run(r, code, context=None, env=None, restart=False, timeout=60):
    rid = uuid.uuid4().hex
    req = {"op": "execute", "id": rid, "code": code, "timeout": timeout, "max_output": 1 << 20}
    if context is not None:
        req["context"] = context
    if env is not None:
        req["env"] = env
    if restart:
        req["restart"] = True
    r.send(req)
    events = []
    while True:
        ev = r.event()
        assert ev.get("id") == rid, ev
        events.append(ev)
        if ev["type"] == "done":
            return Result(events)


def ctx(cid, language="python", cwd=None):
    return {"id": cid, "language": language, "cwd": cwd}


@pytest.fixture
def py():
    r = Runner()
    yield r
    r.close()


def test_contexts_keep_their_own_state_beside_the_main_one(py):
    assert run(py, "x = 'main'").status == "completed"
    assert run(py, "x = 'a'", ctx("a")).status == "completed"
    assert run(py, "x").result == "'main'"
    assert run(py, "x", ctx("a")).result == "'a'"
    r = run(py, "x", ctx("b"))
    assert r.status == "error" and r.error["ename"] == "NameError"


def test_a_context_starts_in_its_directory_and_keeps_it_apart(py, tmp_path):
    (tmp_path / "sub").mkdir()
    r = run(py, "import os; os.getcwd()", ctx("c", cwd=str(tmp_path / "sub")))
    assert r.result == repr(str(tmp_path / "sub"))
    main = run(py, "import os; os.getcwd()").result
    assert main != repr(str(tmp_path / "sub"))
    r = run(py, "1", ctx("d", cwd=str(tmp_path / "missing")))
    assert r.status == "completed" and "cannot change to the context's directory" in r.text("stderr")


def test_restart_of_one_context_keeps_the_others(py):
    run(py, "y = 1")
    run(py, "y = 2", ctx("a"))
    r = run(py, "", ctx("a"), restart=True)
    assert r.status == "completed" and r.done["reset"] is True
    assert run(py, "y", ctx("a")).error["ename"] == "NameError"
    assert run(py, "y").result == "1"
    # a restart of a context that has no worker yet starts it
    assert run(py, "", ctx("fresh"), restart=True).status == "completed"
    assert run(py, "2 + 2", ctx("fresh")).result == "4"


def test_a_context_that_dies_or_times_out_is_replaced_alone(py):
    run(py, "z = 'kept'")
    run(py, "z = 'lost'", ctx("a"))
    r = run(py, "import os; os._exit(3)", ctx("a"))
    assert r.status == "error" and r.done["reset"] is True
    assert run(py, "z").result == "'kept'"
    assert run(py, "z", ctx("a")).error["ename"] == "NameError"
    r = run(py, "import time\nwhile True: time.sleep(0.01)", ctx("a"), timeout=1)
    assert r.status == "timeout"
    assert run(py, "z").result == "'kept'"


def test_close_ends_a_context_and_its_name_can_be_used_again(py):
    run(py, "v = 5", ctx("a"))
    py.send({"op": "close_context", "id": "x", "context": "a"})
    assert run(py, "v", ctx("a")).error["ename"] == "NameError"
    py.send({"op": "close_context", "id": "x", "context": ""})  # the main one stays
    py.send({"op": "close_context", "id": "x", "context": "nope"})
    assert run(py, "1 + 1").result == "2"


def test_env_holds_for_one_cell_in_python_and_bash(py):
    import os as _os
    code = "import os; os.environ.get('RB_FOO', 'unset')"
    assert run(py, code, env={"RB_FOO": "bar"}).result == "'bar'"
    assert run(py, code).result == "'unset'"
    home = run(py, "os.environ.get('HOME')").result
    assert run(py, "os.environ['HOME']", env={"HOME": "/elsewhere"}).result == "'/elsewhere'"
    assert run(py, "os.environ.get('HOME')").result == home
    sh = ctx("sh", "bash")
    r = run(py, "echo \"$RB_FOO|$RB_Q\"", sh, env={"RB_FOO": "b a r", "RB_Q": "it's"})
    assert r.text("stdout") == "b a r|it's\n"
    assert run(py, "echo \"${RB_FOO:-unset}\"", sh).text("stdout") == "unset\n"
    assert run(py, "export KEEP=1; cd /", sh, env={"RB_FOO": "x"}).status == "completed"
    assert run(py, "echo $KEEP; pwd", sh).text("stdout") == "1\n/\n"
    assert _os.environ.get("RB_FOO") is None


def test_bad_context_or_env_is_refused_without_running(py):
    for bad in ({"id": "a b", "language": "python"}, {"id": "a", "language": "cobol"}, "a",
                {"id": "a", "language": "python", "cwd": "relative"}):
        r = run(py, "1", bad)
        assert r.status == "error" and r.error["ename"] == "BadRequest"
    for bad in ({"1X": "v"}, {"A": 1}, ["A"], {"A=B": "v"}):
        r = run(py, "1", env=bad)
        assert r.status == "error" and r.error["ename"] == "BadRequest"
    run(py, "1", ctx("a"))
    r = run(py, "1", ctx("a", "bash"))
    assert r.error["ename"] == "ContextLanguage"
    assert run(py, "1 + 1").result == "2"


def test_contexts_are_bounded(py):
    import sys
    sys.path.insert(0, os.path.dirname(RUNNER))
    from runbox_runner import contexts
    for i in range(contexts.MAX_CONTEXTS - 1):
        r = run(py, "true", ctx("c%d" % i, "bash"))
        assert r.status == "completed", (i, r.events)
    r = run(py, "true", ctx("one-too-many", "bash"))
    assert r.status == "error" and r.error["ename"] == "TooManyContexts"
    py.send({"op": "close_context", "id": "x", "context": "c0"})
    assert run(py, "echo ok", ctx("one-too-many", "bash")).text("stdout") == "ok\n"
    pong_id = uuid.uuid4().hex
    py.send({"op": "ping", "id": pong_id})
    pong = py.event()
    assert pong["type"] == "pong" and "one-too-many" in pong["contexts"] and "c0" not in pong["contexts"]


@pytest.mark.skipif(not HAVE_NODE, reason="node is not installed")
def test_javascript_beside_python_with_env_and_interrupt(py):
    js = ctx("js", "javascript")
    assert run(py, "const a = 40; a + 2", js).result == "42"
    assert run(py, "process.env.RB_X", js, env={"RB_X": "y"}).result == "'y'"
    assert run(py, "process.env.RB_X", js).result is None
    r = run(py, "while (true) {}", js, timeout=1)
    assert r.status == "timeout"
    assert run(py, "a", js).result == "40"
    assert run(py, "1 + 1").result == "2"


def test_interrupt_reaches_the_cell_of_its_context(py):
    run(py, "w = 1")
    rid = uuid.uuid4().hex
    py.send({"op": "execute", "id": rid, "code": "import time; time.sleep(60)", "timeout": 120,
             "max_output": 1 << 20, "context": ctx("a")})
    py.send({"op": "interrupt", "id": rid})
    while True:
        ev = py.event()
        if ev["type"] == "done":
            break
    assert ev["status"] == "cancelled"
    assert run(py, "w").result == "1"
    assert signal.SIGINT  # the main worker was not interrupted: its state is there
    assert os.getpid()

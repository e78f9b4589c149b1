"""Python sessions end to end: real runboxd, real Docker, real HTTP on loopback."""

from __future__ import annotations

import base64
import threading

import pytest

import rbtest
from rbtest import check_error, check_schema


def size_bytes(text) -> int:
    """ "512m" -> bytes (k/m/g suffixes, as execution_options writes sizes)."""
    text = str(text).strip().lower()
    mult = {"k": 1024, "m": 1024 ** 2, "g": 1024 ** 3}.get(text[-1:], 1)
    return int(float(text.rstrip("kmgb") or 0) * mult)


def assert_memory_limit(host: dict, opts: dict, mib: int) -> None:
    """The container's memory limit is the session's memory_limit, plus the sizes of its
    in-memory /workspace and /tmp when the server reports them (tmpfs pages are charged to the
    container), and swap does not extend it."""
    want = mib * 1024 * 1024
    assert size_bytes(opts["memory_limit"]) == want
    extra = sum(size_bytes(opts[k]) for k in ("workspace_size", "tmp_size") if k in opts)
    assert want <= host["Memory"] <= want + extra, (host["Memory"], opts)
    assert host["MemorySwap"] == host["Memory"], "swap must not extend the memory limit"


def test_create_session_is_ready_and_listed(server):
    s = server.create_session({})
    sid = s["session_id"]
    assert rbtest.SESSION_ID_RE.match(sid)
    assert s["language"] == "python"
    assert s["status"] == "ready"
    assert s["executions"] == 0
    assert s["ended_at"] is None
    assert isinstance(s["container_id"], str) and s["container_id"]
    opts = s["execution_options"]
    assert opts["timeout"] == 30 and opts["memory_limit"] == "512m" and opts["cpu_limit"] == 1
    assert opts["environment_variables"] == {}

    assert server.session(sid)["session_id"] == sid
    listed = server.get("/sessions").json()
    check_schema(listed, "SessionList")
    assert sid in [x["session_id"] for x in listed["sessions"]]
    assert rbtest.container_exists(s["container_id"])
    server.delete_session(sid)


def test_sandbox_is_locked_down(server, session):
    info = rbtest.inspect(session["container_id"])
    host = info["HostConfig"]
    assert host["NetworkMode"] == "none"
    assert host["ReadonlyRootfs"] is True
    assert "ALL" in [c.upper() for c in (host.get("CapDrop") or [])]
    assert any("no-new-privileges" in o for o in (host.get("SecurityOpt") or []))
    assert_memory_limit(host, session["execution_options"], 512)
    assert host["NanoCpus"] == 1_000_000_000
    assert host["PidsLimit"] and host["PidsLimit"] > 0
    # Started as root with only the capabilities its runner needs to drop privileges: the
    # supervisor becomes uid 999 and runs user code as uid 1000 (docker/runner/PROTOCOL.md).
    assert info["Config"]["User"] == "0", info["Config"]["User"]
    assert sorted(c.upper() for c in host.get("CapAdd") or []) == ["KILL", "SETGID", "SETUID"], host.get("CapAdd")
    # Labelled so that runboxd finds its own containers after a crash (a warm-pool container's
    # runbox.session label names the pool rather than the session).
    labels = info["Config"]["Labels"]
    assert labels.get("runbox.session") and labels.get("runbox.instance")
    # And from the inside: no network interface but loopback, the sandbox user without any
    # capability, its supervisor another user, read-only /.
    r = server.execute(session["session_id"], (
        "import os, socket\n"
        "ifaces = sorted(n for _, n in socket.if_nameindex())\n"
        "try:\n"
        "    open('/etc/runbox-probe', 'w'); ro = False\n"
        "except OSError:\n"
        "    ro = True\n"
        "def status(pid, key):\n"
        "    return [l.split()[1] for l in open('/proc/%s/status' % pid) if l.startswith(key + ':')][0]\n"
        "(ifaces, os.getuid(), status('self', 'CapEff'), status(os.getppid(), 'Uid'), ro)"))
    assert r["status"] == "completed", r
    assert r["result"] == "(['lo'], 1000, '0000000000000000', '999', True)"


def test_session_with_options(server):
    s = server.create_session({"execution_options": {
        "timeout": 5, "memory_limit": "256m", "cpu_limit": 0.5, "environment_variables": {"GREETING": "hi"}}})
    opts = s["execution_options"]
    assert opts["timeout"] == 5 and opts["memory_limit"] == "256m" and opts["cpu_limit"] == 0.5
    assert opts["environment_variables"] == {"GREETING": "hi"}
    host = rbtest.inspect(s["container_id"])["HostConfig"]
    assert_memory_limit(host, opts, 256)
    assert host["NanoCpus"] == 500_000_000
    r = server.execute(s["session_id"], "import os\nos.environ['GREETING']")
    assert r["result"] == "'hi'"
    # The session's own timeout applies when the call gives none.
    r = server.execute(s["session_id"], "while True: pass")
    assert r["status"] == "timeout"
    server.delete_session(s["session_id"])


def test_charset_parameter_and_empty_body(server):
    r = server.post("/sessions", data=b"", headers={"Content-Type": "application/json"})
    assert r.status_code == 201, r.text
    check_schema(r.json(), "Session")
    server.track(r.json())
    sid = r.json()["session_id"]
    r = server.post("/execute", data=f'{{"session_id":"{sid}","code":"print(1)","wait":true}}'.encode(),
                    headers={"Content-Type": "application/json; charset=utf-8"})
    assert r.status_code == 200, r.text
    assert r.json()["stdout"] == "1\n"
    server.delete_session(sid)


def test_variables_persist(server, session):
    sid = session["session_id"]
    r = server.execute(sid, "x = 42")
    assert r["status"] == "completed" and r["result"] is None and r["error"] is None
    r = server.execute(sid, "print(x)")
    assert r["status"] == "completed"
    assert r["stdout"] == "42\n"
    assert r["stderr"] == ""
    assert r["outputs"] == [{"type": "stream", "name": "stdout", "text": "42\n"}]
    assert r["output"] == [{"type": "stream", "content": "42\n"}]
    assert rbtest.REQUEST_ID_RE.match(r["request_id"]) and r["session_id"] == sid
    assert r["started_at"] and r["completed_at"] and r["duration_ms"] is not None
    assert r["truncated"] is False and r["dropped_bytes"] == 0 and r["reset"] is False
    assert server.session(sid)["executions"] == 2


def test_last_expression(server, session):
    sid = session["session_id"]
    r = server.execute(sid, "a = 20\nb = 22\na + b")
    assert r["result"] == "42"
    assert {"type": "result", "text": "42"} in r["outputs"]
    assert {"type": "result", "content": "42"} in r["output"]
    assert server.execute(sid, "'a' * 3")["result"] == "'aaa'"
    assert server.execute(sid, "None")["result"] is None
    assert server.execute(sid, "y = 1")["result"] is None
    assert server.execute(sid, "print('p')\n[1, 2]")["result"] == "[1, 2]"


def test_stdout_and_stderr_are_separate(server, session):
    r = server.execute(session["session_id"],
                       "import sys\nprint('out1')\nprint('err1', file=sys.stderr)\nprint('out2')")
    assert r["stdout"] == "out1\nout2\n"
    assert r["stderr"] == "err1\n"
    streams = [(o["name"], o["text"]) for o in r["outputs"] if o["type"] == "stream"]
    assert "".join(t for n, t in streams if n == "stdout") == "out1\nout2\n"
    assert "".join(t for n, t in streams if n == "stderr") == "err1\n"


def test_exception_traceback(server, session):
    r = server.execute(session["session_id"],
                       "print('before')\ndef f():\n    return 1 / 0\nf()")
    assert r["status"] == "error"
    assert r["stdout"] == "before\n"
    err = r["error"]
    assert err["ename"] == "ZeroDivisionError"
    assert err["evalue"] == "division by zero"
    tb = "".join(err["traceback"])
    assert "Traceback (most recent call last)" in tb
    assert "ZeroDivisionError: division by zero" in tb
    assert "return 1 / 0" in tb and "in f" in tb
    assert "runner" not in tb and "/opt/runbox" not in tb, f"runner frames leak into the traceback:\n{tb}"
    items = [o for o in r["outputs"] if o["type"] == "error"]
    assert items and items[-1]["ename"] == "ZeroDivisionError"
    # The session goes on.
    assert server.execute(session["session_id"], "1 + 1")["result"] == "2"


def test_syntax_error(server, session):
    r = server.execute(session["session_id"], "def (:\n    pass")
    assert r["status"] == "error"
    assert r["error"]["ename"] == "SyntaxError"
    tb = "".join(r["error"]["traceback"])
    assert "SyntaxError" in tb
    assert "runner" not in tb and "/opt/runbox" not in tb, tb


def test_matplotlib_plot_is_png(server, session):
    r = server.execute(session["session_id"], (
        "import matplotlib.pyplot as plt\n"
        "plt.plot([1, 2, 3], [1, 4, 9])\n"
        "plt.title('squares')\n"))
    assert r["status"] == "completed", r["error"]
    assert len(r["files"]) == 1
    png = base64.b64decode(r["files"][0], validate=True)
    assert png.startswith(rbtest.PNG_SIGNATURE)
    assert len(png) > 1000
    displays = [o for o in r["outputs"] if o["type"] == "display"]
    assert len(displays) == 1 and displays[0]["mime"] == "image/png" and displays[0]["data"] == r["files"][0]
    # Figures are closed after the cell: the next cell has none.
    assert server.execute(session["session_id"], "1")["files"] == []


def test_rich_outputs_are_mime_bundles(server, session):
    """Issue 38: every format IPython's display formatter gives, beside today's fields: a
    DataFrame's value has its HTML, display() keeps its bundle, metadata and display_id,
    update_display and clear_output are outputs of their own, and the schema says so."""
    sid = session["session_id"]
    r = server.execute(sid, "import pandas as pd\npd.DataFrame({'a': [1, 2], 'b': ['x', 'y']})",
                       timeout=600)  # pandas' first import in a new sandbox, on a host that may be busy
    assert r["status"] == "completed", r["error"]
    value = [o for o in r["outputs"] if o["type"] == "result"][0]
    assert r["result"] == value["text"] == value["bundle"]["text/plain"]  # today's fields stay
    assert value["bundle"]["text/html"].lstrip().startswith("<div>") and "<table" in value["bundle"]["text/html"]
    assert value["metadata"] == {}
    r = server.execute(sid, "from IPython.display import Markdown, JSON, display, clear_output\n"
                            "display(Markdown('# Title'))\n"
                            "h = display(JSON({'k': [1]}), display_id='j')\n"
                            "h.update(Markdown('*done*'))\n"
                            "clear_output(wait=True)")
    assert r["status"] == "completed", r["error"]
    for o in r["outputs"]:
        check_schema(o, "OutputItem")
    check_schema(r, "Result")
    md, js, upd, clear = r["outputs"]
    assert (md["type"], md["mime"], md["data"]) == ("display", "text/markdown", "# Title")
    assert md["bundle"] == {"text/plain": "<IPython.core.display.Markdown object>", "text/markdown": "# Title"}
    assert (js["mime"], js["bundle"]["application/json"], js["display_id"]) == ("application/json", '{"k": [1]}', "j")
    assert js["metadata"] == {"application/json": {"expanded": False, "root": "root"}} and "update" not in js
    assert (upd["display_id"], upd["update"], upd["data"]) == ("j", True, "*done*")
    assert clear == {"type": "clear_output", "wait": True}
    assert r["stdout"] == "" and r["result"] is None and r["files"] == []
    # a PNG shown by display() is in files as a plot is
    r = server.execute(sid, "from PIL import Image\ndisplay(Image.new('RGB', (2, 2)))")
    shown = [o for o in r["outputs"] if o["type"] == "display"]
    assert len(shown) == 1 and shown[0]["mime"] == "image/png" and r["files"] == [shown[0]["data"]]
    assert "image/jpeg" in shown[0]["bundle"], shown[0]["bundle"].keys()


def test_timeout_interrupts_and_keeps_state(server, session):
    sid = session["session_id"]
    server.execute(sid, "y = 7")
    r = server.execute(sid, "while True: pass", timeout=2)
    assert r["status"] == "timeout"
    assert r["reset"] is False, r["reset_reason"]
    r = server.execute(sid, "print(y)")
    assert r["status"] == "completed" and r["stdout"] == "7\n"


def test_timeout_that_swallows_interrupts_resets(server, session):
    sid = session["session_id"]
    server.execute(sid, "z = 1")
    r = server.execute(sid, (
        "while True:\n"
        "    try:\n"
        "        while True:\n"
        "            pass\n"
        "    except KeyboardInterrupt:\n"
        "        pass\n"), timeout=2)
    assert r["status"] == "timeout"
    assert r["reset"] is True
    reason = (r["reset_reason"] or "").lower()
    assert any(w in reason for w in ("reset", "restart", "fresh", "lost", "kill")), r["reset_reason"]
    r = server.execute(sid, "'z' in globals()")
    assert r["status"] == "completed" and r["result"] == "False"


def test_output_cap(server, session):
    r = server.execute(session["session_id"], "print('a' * 50_000_000)\nprint('end')")
    assert r["status"] == "completed"
    assert r["truncated"] is True
    assert r["dropped_bytes"] > 40_000_000
    assert "bytes of output dropped" in r["stdout"]
    assert r["stdout"].startswith("aaaa") and r["stdout"].endswith("end\n")
    assert len(r["stdout"].encode()) < 2 * 1024 * 1024
    again = server.results(r["request_id"])
    assert again["truncated"] is True and again["stdout"] == r["stdout"]
    rss = rbtest.peak_rss_mb(server.pid)
    assert rss < rbtest.RSS_LIMIT_MB, f"runboxd peak RSS {rss:.0f} MiB >= {rbtest.RSS_LIMIT_MB} MiB"


def test_two_sessions_in_parallel(server):
    a = server.create_session()["session_id"]
    b = server.create_session()["session_id"]
    # A runs long; B must finish meanwhile (A is still running when B is done).
    long = server.execute(a, "import time\nfor _ in range(600):\n    time.sleep(0.1)", wait=False)
    server.wait_status(long["request_id"], "running")
    r = server.execute(b, "print('b')")
    assert r["stdout"] == "b\n"
    assert server.status(long["request_id"])["status"] == "running"
    assert server.delete(f"/execute/{long['request_id']}").status_code == 200
    server.wait_status(long["request_id"], "cancelled")
    # And two waiting calls at once, from two threads.
    out: dict[str, dict] = {}

    def run(sid):
        out[sid] = server.execute(sid, f"import time\ntime.sleep(1)\nprint('{sid}')")

    threads = [threading.Thread(target=run, args=(sid,)) for sid in (a, b)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(180)
    assert out[a]["stdout"] == f"{a}\n" and out[b]["stdout"] == f"{b}\n"
    server.delete_session(a)
    server.delete_session(b)


def test_executions_in_one_session_run_in_order(server, session):
    sid = session["session_id"]
    server.execute(sid, "seq = []")
    ids = [server.execute(sid, f"import time\ntime.sleep(0.2)\nseq.append({i})", wait=False)["request_id"]
           for i in range(5)]
    last = server.execute(sid, "seq")
    assert last["result"] == "[0, 1, 2, 3, 4]"
    docs = [server.results(i) for i in ids]
    assert all(d["status"] == "completed" for d in docs)
    for prev, nxt in zip(docs, docs[1:]):
        assert prev["completed_at"] <= nxt["started_at"], "executions of one session overlapped"
    assert docs[-1]["completed_at"] <= last["started_at"]


def test_async_execute_and_poll(server, session):
    st = server.execute(session["session_id"], "import time\ntime.sleep(0.5)\nprint('done')\n6 * 7", wait=False)
    assert st["status"] == "queued"
    assert rbtest.REQUEST_ID_RE.match(st["request_id"])
    assert st["session_id"] == session["session_id"]
    assert st["completed_at"] is None
    rid = st["request_id"]
    partial = server.results(rid)  # allowed while running: partial document
    assert partial["request_id"] == rid
    final = server.wait_status(rid, rbtest.FINAL_STATUSES)
    assert final["status"] == "completed" and final["started_at"] and final["completed_at"]
    doc = server.results(rid)
    assert doc["stdout"] == "done\n" and doc["result"] == "42"


def test_events_stream(server, session):
    sid = session["session_id"]
    # Queue the watched execution behind a blocker, so its whole life is seen live.
    blocker = server.execute(sid, "import time\ntime.sleep(2)", wait=False)
    st = server.execute(sid, "import sys, time\nprint('one')\ntime.sleep(0.3)\nprint('two', file=sys.stderr)\n3",
                        wait=False)
    rid = st["request_id"]
    with server.get(f"/execute/{rid}/events", stream=True, timeout=(10, 120)) as resp:
        assert resp.status_code == 200, resp.text
        assert resp.headers["content-type"].startswith("text/event-stream")
        comments, events = rbtest.read_sse(resp)
    assert comments, "the stream must start with a comment line"
    names = [e.event for e in events]
    assert names[0] == "status", names
    assert names[-1] == "done", names
    assert names.count("done") == 1
    assert set(names) <= {"status", "output", "done"}, names
    ids = [int(e.id) for e in events]
    assert ids == sorted(ids) and len(set(ids)) == len(ids), ids
    statuses = [e.json()["status"] for e in events if e.event == "status"]
    assert "running" in statuses
    first_output = names.index("output")
    assert "status" in names[:first_output]
    outputs = [e.json() for e in events if e.event == "output"]
    for o in outputs:
        check_schema(o, "OutputItem")
    done = events[-1].json()
    check_schema(done, "Result")
    assert done["status"] == "completed"
    assert done["stdout"] == "one\n" and done["stderr"] == "two\n" and done["result"] == "3"
    assert outputs == done["outputs"]
    # After the end, the same URL replays everything and ends with done.
    with server.get(f"/execute/{rid}/events", stream=True, timeout=(10, 60)) as resp:
        _, replay = rbtest.read_sse(resp)
    assert [e.json() for e in replay if e.event == "output"] == done["outputs"]
    assert replay[-1].event == "done"
    server.wait_status(blocker["request_id"], "completed")


def test_interrupt_running_and_cancel_queued(server, session):
    sid = session["session_id"]
    server.execute(sid, "keep = 'kept'")
    running = server.execute(sid, "import time\nfor _ in range(600):\n    time.sleep(0.1)", wait=False)
    queued = server.execute(sid, "print('never')", wait=False)
    server.wait_status(running["request_id"], "running")

    r = server.delete(f"/execute/{queued['request_id']}")
    assert r.status_code == 200, r.text
    check_schema(r.json(), "ExecutionStatus")
    assert r.json()["status"] == "cancelled"

    r = server.delete(f"/execute/{running['request_id']}")
    assert r.status_code == 200, r.text
    check_schema(r.json(), "ExecutionStatus")
    assert r.json()["status"] in ("running", "cancelled")
    doc = server.wait_done(running["request_id"])
    assert doc["status"] == "cancelled"
    assert doc["reset"] is False
    assert server.results(queued["request_id"])["stdout"] == ""
    # Finished executions cannot be cancelled again.
    check_error(server.delete(f"/execute/{running['request_id']}"), 409)
    check_error(server.delete(f"/execute/{queued['request_id']}"), 409)
    assert server.execute(sid, "keep")["result"] == "'kept'"


def test_delete_session_removes_container(server):
    s = server.create_session()
    sid = s["session_id"]
    queued_behind = server.execute(sid, "import time\ntime.sleep(60)", wait=False)
    waiting = server.execute(sid, "print(1)", wait=False)
    ended = server.delete_session(sid)
    assert ended["status"] == "ended" and ended["ended_at"]
    rbtest.wait_until(lambda: not rbtest.container_exists(s["container_id"]),
                      "the session's container to be removed")
    got = server.session(sid)
    assert got["status"] == "ended"
    assert sid not in [x["session_id"] for x in server.get("/sessions").json()["sessions"]]
    # The running execution is interrupted (cancelled, or error "SessionEnded"); the queued one
    # never runs.
    st = server.wait_status(queued_behind["request_id"], rbtest.FINAL_STATUSES)
    assert st["status"] in ("cancelled", "error"), st
    assert server.wait_status(waiting["request_id"], rbtest.FINAL_STATUSES)["status"] == "cancelled"
    assert server.results(waiting["request_id"])["stdout"] == ""
    check_error(server.post("/execute", {"session_id": sid, "code": "1"}), 409)
    check_error(server.delete(f"/sessions/{sid}"), 404)


def test_health(server):
    r = server.get("/health")
    assert r.status_code == 200
    h = r.json()
    check_schema(h, "Health")
    assert h["status"] == "ok"
    assert h["docker"]["reachable"] is True
    assert h["docker"]["api_version"] and h["docker"]["error"] is None
    assert h["version"]


# ---- the preload (issue 13, --preload): every python sandbox imports the common stack before
# its first cell, and keeps it across interpreter resets (docker/runner: the zygote).

PRELOADED = ("numpy", "pandas", "matplotlib.pyplot")
LOADED = "import sys\n[m in sys.modules for m in %r]" % (PRELOADED,)
STUBBORN = ("import signal, time\nsignal.signal(signal.SIGINT, lambda *a: None)\n"
            "while True:\n    time.sleep(0.05)\n")
DRAW = "import numpy as np, random\n(float(np.random.random()), random.random())"


def pool_hit(srv) -> str:
    """A session claimed from the warm pool (ready means the preload is imported); its id."""
    def pool():
        p = srv.get("/health").json()["pool"]
        return p if p["ready"] >= 1 else None

    hits = rbtest.wait_until(pool, "a warm pool sandbox", 120)["hits"]
    sid = srv.create_session({})["session_id"]
    assert srv.get("/health").json()["pool"]["hits"] == hits + 1
    return sid


def test_a_new_session_has_the_stack_imported_and_a_reset_keeps_it(server):
    sid = pool_hit(server)
    r = server.execute(sid, LOADED)
    assert r["status"] == "completed" and r["result"] == "[True, True, True]", r
    # Imported, not named: the user's own import binds the name (and costs nothing).
    for name in ("pd", "np", "plt", "pandas"):
        r = server.execute(sid, name)
        assert r["status"] == "error" and r["error"]["ename"] == "NameError", r
    r = server.execute(sid, "import pandas as pd, matplotlib.pyplot as plt\npd.DataFrame({'a': [1, 2, 3]}).plot()\n"
                            "plt.show()")
    assert r["status"] == "completed" and len(r["files"]) == 1, r
    assert base64.b64decode(r["files"][0]).startswith(rbtest.PNG_SIGNATURE)
    # A reset (code that ignores the interrupt of its timeout) gives a fresh interpreter that has
    # the stack again, and a random state of its own.
    draws = [tuple(eval(server.execute(sid, DRAW)["result"]))]
    for _ in range(2):
        r = server.execute(sid, STUBBORN, timeout=1)
        assert r["status"] == "timeout" and r["reset"] is True, r
        r = server.execute(sid, LOADED)
        assert r["status"] == "completed" and r["result"] == "[True, True, True]", r
        assert server.execute(sid, "'pd' in globals()")["result"] == "False"
        draws.append(tuple(eval(server.execute(sid, DRAW)["result"])))
    assert len({d[0] for d in draws}) == 3 and len({d[1] for d in draws}) == 3, draws


def test_a_session_on_the_cold_path_gets_the_preload_from_its_first_reset(server):
    # A pool miss (here: environment variables) starts its first interpreter the plain way (a
    # burst of new sandboxes spends no CPU on imports); from its first reset on, interpreters
    # come preloaded.
    sid = server.create_session({"execution_options": {"environment_variables": {"COLD": "1"}}})["session_id"]
    r = server.execute(sid, LOADED)
    assert r["status"] == "completed" and r["result"] == "[False, False, False]", r
    for _ in range(2):
        r = server.execute(sid, STUBBORN, timeout=1)
        assert r["status"] == "timeout" and r["reset"] is True, r
        r = server.execute(sid, LOADED)
        assert r["status"] == "completed" and r["result"] == "[True, True, True]", r
    assert server.execute(sid, "import os\nos.environ['COLD']")["result"] == "'1'"


def test_preload_off(make_server):
    srv = make_server(["--preload", "", "--pool-size", "1"])
    sid = srv.create_session({})["session_id"]
    r = srv.execute(sid, LOADED)
    assert r["status"] == "completed" and r["result"] == "[False, False, False]", r
    r = srv.execute(sid, STUBBORN, timeout=1)
    assert r["status"] == "timeout" and r["reset"] is True, r
    r = srv.execute(sid, "import numpy as np\nint(np.arange(10).sum())")
    assert r["status"] == "completed" and r["result"] == "45", r


def test_ipython_lines_through_rest(server, session):
    """IPython's `!cmd` and `%` lines (runbox_runner/shell.py) through runboxd: shell output,
    %pip refused in the sealed sandbox with the way to install, a wheel uploaded through the
    files API installed with %pip and imported by the next cell."""
    sid = session["session_id"]
    wheel = rbtest.pure_wheel("rbrestdemo", "2.0", {"rbrestdemo.py": b"answer = 'from a wheel'\n"})
    r = server.post(f"/sessions/{sid}/files", files={"file": ("rbrestdemo-2.0-py3-none-any.whl", wheel)},
                    data={"path": "wheels/rbrestdemo-2.0-py3-none-any.whl"})
    assert r.status_code in (200, 201), r.text
    r = server.execute(sid, "n = 2\nfound = !ls wheels | wc -l\n!echo {n * 21} $n\nint(found[0])")
    assert r["status"] == "completed" and r["stdout"] == "42 2\n" and r["result"] == "1", r
    r = server.execute(sid, "%pip install rbrestdemo")
    assert r["status"] == "error" and r["error"]["ename"] == "UsageError", r
    assert "no network" in r["error"]["evalue"] and f"/sessions/{{id}}/dependencies" in r["error"]["evalue"], r
    r = server.execute(sid, "%pip install --no-index --find-links wheels rbrestdemo")
    assert r["status"] == "completed" and "Successfully installed rbrestdemo-2.0" in r["stdout"], r
    r = server.execute(sid, "import rbrestdemo\nrbrestdemo.answer")
    assert r["status"] == "completed" and r["result"] == "'from a wheel'", r
    r = server.execute(sid, "%%bash\ncd wheels && ls *.whl")
    assert r["status"] == "completed" and r["stdout"] == "rbrestdemo-2.0-py3-none-any.whl\n", r

"""The preload (RUNBOX_PRELOAD, runboxd's --preload; docker/runner/runbox_runner/zygote.py and
preload.py): Python workers forked from a zygote that imported the listed modules once.

Most tests run the runner as a plain subprocess of the test with modules of the standard library
that a fresh worker does not load; the last ones run it in the sandbox image (RUNBOX_IMAGE) with
privileges separated and the real stack (numpy, pandas, matplotlib), and are skipped when the
image or Docker is missing. Run: python3 -m pytest tests/runner -q
"""

import subprocess
import time
import uuid

import pytest

from test_runner import IMAGE, Runner, image_available

PRELOAD = "decimal,fractions,xml.dom.minidom"  # a fresh worker loads none of them
MODULES = ["decimal", "fractions", "xml.dom.minidom"]
LOADED = "import sys\nsorted(m for m in %r if m in sys.modules)" % (MODULES + ["numpy"],)
# A cell that ignores the interrupt of its timeout: the supervisor kills it after the grace period.
STUBBORN = "import signal, time\nsignal.signal(signal.SIGINT, lambda *a: None)\nwhile True:\n    time.sleep(0.05)"
# The zygote of this runner: the supervisor's (the worker's parent's) child started with --zygote.
# (A forked worker has the zygote's command line too.)
ZYGOTES = ("import os\ndef zygotes():\n    out = []\n    for p in os.listdir('/proc'):\n"
           "        if not p.isdigit() or int(p) == os.getpid():\n            continue\n        try:\n"
           "            ppid = int(open('/proc/%s/stat' % p).read().rsplit(')', 1)[1].split()[1])\n"
           "            cmd = open('/proc/%s/cmdline' % p).read()\n        except (OSError, ValueError, IndexError):\n"
           "            continue\n        if ppid == os.getppid() and '--zygote' in cmd:\n            out.append(int(p))\n"
           "    return out\n")


def runner(monkeypatch, preload, grace_ms=300):
    monkeypatch.setenv("RUNBOX_PRELOAD", preload)
    return Runner(grace_ms=grace_ms)


def reset(py):
    r = py.execute(STUBBORN, timeout=0.3)
    assert r.status == "timeout" and r.done["reset"] is True, r.events[-2:]


def test_preloaded_modules_are_loaded_before_the_first_cell_but_not_named(monkeypatch):
    py = runner(monkeypatch, PRELOAD)
    try:
        py.send({"op": "ping", "id": "p"})
        pong = py.event()
        assert pong["type"] == "pong" and isinstance(pong["warming"], bool)
        assert py.execute(LOADED).result == repr(MODULES)
        assert py.warm["preload"] == MODULES and isinstance(py.warm["ms"], int)
        # In sys.modules, not in the user's namespace: a name needs its import, as always.
        for name in ("decimal", "fractions", "xml", "minidom"):
            r = py.execute(name)
            assert r.status == "error" and r.error["ename"] == "NameError", (name, r.events)
        assert py.execute("import decimal as d, xml.dom.minidom\nstr(d.Decimal('1.5') * 2)").result == "'3.0'"
        # (IPython's own names, In, Out, get_ipython, ..., are hidden as %who hides them)
        assert py.execute("__name__, sorted(k for k in globals() if not k.startswith('_') and "
                          "k not in get_ipython().user_ns_hidden)").result == "('__main__', ['d', 'sys', 'xml'])"
        py.send({"op": "ping", "id": "q"})
        pong = py.event()
        assert pong["warming"] is False and pong["worker_pid"] > 0
    finally:
        py.close()


def test_a_reset_gives_a_preloaded_interpreter_with_a_fresh_random_state(monkeypatch):
    pytest.importorskip("numpy")  # the runner runs on the test's Python
    py = runner(monkeypatch, "numpy," + PRELOAD)
    state = ("import os, random, sys\nimport numpy as np\n"
             "(os.getpid(), 'kept' in globals(), sorted(m for m in %r if m in sys.modules), "
             "float(np.random.random()), random.random())" % (MODULES + ["numpy"],))
    try:
        py.execute("kept = 1")
        seen = []
        for _ in range(3):
            reset(py)
            pid, kept, loaded, np_random, py_random = eval(py.execute(state).result)
            assert not kept
            assert loaded == sorted(MODULES + ["numpy"])
            seen.append((pid, np_random, py_random))
        for i in range(3):
            for j in range(i):
                assert all(a != b for a, b in zip(seen[i], seen[j])), seen  # pid, numpy, random
        assert py.execute("import numpy as np\nint(np.arange(10).sum())").result == "45"
    finally:
        py.close()


def test_the_zygote_makes_ipythons_shell_and_each_worker_its_own_history(monkeypatch):
    """IPython's InteractiveShell is made once in the zygote (history off: no SQLite connection
    crosses a fork); each worker forked from it gives it a history in memory, so In, %history
    and the cell names start over with each interpreter."""
    py = runner(monkeypatch, PRELOAD)
    try:
        shell_made_before = ("import os, sys\nip = get_ipython()\n"
                             "(sys.modules['__main__'] is ip.user_module, ip.history_manager.enabled, "
                             "ip.history_manager.hist_file, ip.made_in_pid != os.getpid(), os.getpid())")
        first = py.execute(shell_made_before).result
        assert first.startswith("(True, True, ':memory:', True, "), first
        py.execute("x = 41")
        r = py.execute("%history -n")
        assert "   2: x = 41\n" in r.text("stdout") and "   1:\nimport os" in r.text("stdout"), r.events
        assert 'File "<cell-4>"' in "".join(py.execute("1 / 0").error["traceback"])
        reset(py)
        r = py.execute("len(In), In[-1]")
        assert r.result == "(2, 'len(In), In[-1]')", r.events
        second = py.execute(shell_made_before).result
        assert second.startswith("(True, True, ':memory:', True, ") and second != first, (first, second)
        assert 'File "<cell-3>"' in "".join(py.execute("1 / 0").error["traceback"])
    finally:
        py.close()


def test_preload_off_still_works(monkeypatch):
    py = runner(monkeypatch, "")
    try:
        py.send({"op": "ping", "id": "p"})
        pong = py.event()
        assert pong["warming"] is False and pong["worker_pid"] > 0
        assert py.execute(LOADED).result == "[]"
        reset(py)
        assert py.execute("import decimal\nstr(decimal.Decimal(2) ** 10)").result == "'1024'"
        assert py.warm is None
    finally:
        py.close()


def test_lazy_preload_starts_with_the_first_reset(monkeypatch):
    # RUNBOX_PRELOAD_LAZY=1 (runboxd's cold path): the first interpreter starts the plain way,
    # the zygote with the first reset; every later one is forked from the same zygote.
    monkeypatch.setenv("RUNBOX_PRELOAD_LAZY", "1")
    py = runner(monkeypatch, PRELOAD)
    try:
        py.send({"op": "ping", "id": "p"})
        pong = py.event()
        assert pong["warming"] is False and pong["worker_pid"] > 0
        assert py.execute(LOADED).result == "[]"
        assert py.execute(ZYGOTES + "len(zygotes())").result == "0"
        zygotes = set()
        for _ in range(2):
            reset(py)
            assert py.execute(LOADED).result == repr(MODULES)
            zygotes.add(py.execute(ZYGOTES + "tuple(zygotes())").result)
        assert len(zygotes) == 1 and py.warm is None, zygotes
    finally:
        py.close()


def test_a_module_that_cannot_be_imported_is_left_out(monkeypatch):
    py = runner(monkeypatch, "no_such_module_of_runbox,decimal")
    try:
        assert py.execute(LOADED).result == "['decimal']"
        assert py.warm["preload"] == ["decimal"]
        r = py.execute("import no_such_module_of_runbox")
        assert r.error["ename"] == "ModuleNotFoundError"
    finally:
        py.close()


def test_a_slow_preload_is_waited_for(monkeypatch, tmp_path):
    # Imports that take longer than a fork may (a busy CPU: seconds) are not a hung zygote: the
    # first interpreter comes from it all the same, and the first cell waits for it.
    (tmp_path / "slow_runbox_module.py").write_text("import time\ntime.sleep(6)\n")
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    py = runner(monkeypatch, "slow_runbox_module,decimal")
    try:
        r = py.execute("import sys\nsorted(m for m in ('slow_runbox_module', 'decimal') if m in sys.modules)",
                       timeout=1)
        assert r.status == "completed" and r.result == "['decimal', 'slow_runbox_module']", r.events
    finally:
        py.close()


def test_a_stopped_or_killed_zygote_costs_only_time(monkeypatch):
    # User code runs as the zygote's user and may signal it. A stopped zygote is given up when it
    # does not answer, a killed one is started again; after three, fresh interpreters start
    # without the preload. Every reset still gives a working interpreter.
    py = runner(monkeypatch, PRELOAD)
    try:
        assert py.execute(LOADED).result == repr(MODULES)
        for sig, preloaded in (("SIGSTOP", True), ("SIGKILL", True), ("SIGKILL", False)):
            r = py.execute(ZYGOTES + "import signal\nzs = zygotes()\nfor z in zs:\n    os.kill(z, signal.%s)\n"
                                     "len(zs)" % sig)
            assert r.result == "1", (sig, r.events)
            reset(py)
            assert py.execute(LOADED).result == (repr(MODULES) if preloaded else "[]"), sig
            assert py.execute("6 * 7").result == "42"
        assert py.execute(ZYGOTES + "len(zygotes())").result == "0"
    finally:
        py.close()


def test_zygote_and_workers_in_sandbox_image_with_the_stack():
    if not image_available():
        pytest.skip("%s is not built (docker/build-images)" % IMAGE)
    name = "runbox-test-runner-%s" % uuid.uuid4().hex[:8]
    py = Runner(argv=docker_argv(name, "numpy,pandas,matplotlib.pyplot"))
    probe = ZYGOTES + (
        "def status(pid):\n"
        "    return {l.split(':')[0]: l.split()[1] for l in open('/proc/%s/status' % pid)\n"
        "            if l.startswith(('Uid', 'Gid', 'CapEff', 'CapPrm', 'Threads'))}\n"
        "def refused(path):\n    try:\n        os.open(path, os.O_RDONLY)\n    except OSError as e:\n"
        "        return e.strerror\n    return 'ALLOWED'\n"
        "[z] = zygotes()\n"
        "{'zygote': status(z), 'zygote fd': refused('/proc/%d/fd/0' % z), 'zygote mem': refused('/proc/%d/mem' % z),"
        " 'me': status('self'), 'parent': status(os.getppid())['Uid']}")
    try:
        r = py.execute("import sys\nsorted(m for m in ('numpy', 'pandas', 'matplotlib.pyplot') if m in sys.modules)",
                       timeout=120)
        assert r.result == "['matplotlib.pyplot', 'numpy', 'pandas']", r.events
        for name in ("np", "pd", "plt", "numpy", "pandas"):
            assert py.execute(name).error["ename"] == "NameError"
        r = py.execute("import pandas as pd, matplotlib.pyplot as plt\npd.DataFrame({'a': [1, 2, 3]}).plot()\n"
                       "plt.show()")
        assert r.status == "completed" and len(r.of("display")) == 1, r.events
        got = eval(py.execute(probe).result)
        # The zygote: the sandbox user, no capabilities, one thread, out of user code's reach.
        assert got["zygote"] == {"Uid": "1000", "Gid": "1000", "CapPrm": "0000000000000000",
                                 "CapEff": "0000000000000000", "Threads": "1"}, got
        assert got["zygote fd"] == got["zygote mem"] == "Permission denied", got
        assert {k: got["me"][k] for k in ("Uid", "Gid", "CapPrm", "CapEff")} == {
            "Uid": "1000", "Gid": "1000", "CapPrm": "0000000000000000", "CapEff": "0000000000000000"}
        assert got["parent"] == "999"  # the supervisor adopted the forked worker
        # Each fresh interpreter draws its own numbers (the image's numpy does not reseed at a fork).
        rand = "import numpy as np, random\nfloat(np.random.random()), random.random()"
        draws = [eval(py.execute(rand).result)]
        for _ in range(2):
            reset(py)
            r = py.execute("import sys\n[m in sys.modules for m in ('numpy', 'pandas', 'matplotlib.pyplot')]")
            assert r.result == "[True, True, True]"
            draws.append(eval(py.execute(rand).result))
        for k in (0, 1):
            assert len({d[k] for d in draws}) == 3, draws
        # The BLAS and OpenMP pools of a forked worker (numpy's scipy_openblas was loaded by the
        # zygote with one thread) are those of an interpreter started without the preload.
        pools = ("from threadpoolctl import threadpool_info\nimport numpy, pandas, scipy.linalg, sklearn\n"
                 "print(sorted((i['internal_api'], i['prefix'], i['num_threads']) for i in threadpool_info()))")
        forked = py.execute(pools).text("stdout")
        plain = py.execute("import subprocess, sys\nprint(subprocess.run([sys.executable, '-c', %r], "
                           "capture_output=True, text=True).stdout, end='')" % pools, timeout=120).text("stdout")
        assert forked == plain and "libscipy_openblas" in forked, (forked, plain)
    finally:
        rc = py.close()
        subprocess.run(["docker", "rm", "-f", name], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    assert rc == 0


def test_fork_bomb_of_a_forked_worker_in_sandbox_image():
    """A fork bomb of a worker forked from the zygote (the big interpreter of the stack): each
    cell ends at its timeout and the session goes on, with its variables or a plain reset, the
    zygote serving the next worker. The bomb's copies share the zygote's anon_vma tree and take
    seconds to die on a busy host; the supervisor used to wait for the killed worker before it
    answered, and runboxd gave up on the sandbox (tests/security test_fork_bomb)."""
    if not image_available():
        pytest.skip("%s is not built (docker/build-images)" % IMAGE)
    name = "runbox-test-runner-%s" % uuid.uuid4().hex[:8]
    py = Runner(argv=docker_argv(name, "numpy,pandas,matplotlib.pyplot"))
    bomb = "import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass\n"
    try:
        for n in range(3):
            assert py.execute("import numpy\nkept = %d\nkept" % n, timeout=120).result == str(n)
            r = py.execute(bomb, timeout=2)
            assert r.status == "timeout", r.events[-2:]
            after = py.execute("kept")
            if r.done["reset"]:
                assert "restarted" in r.done["reset_reason"], r.done
                assert after.error["ename"] == "NameError", after.events
            else:
                assert after.result == str(n), after.events
        assert py.execute("6 * 7").result == "42"
    finally:
        rc = py.close()
        subprocess.run(["docker", "rm", "-f", name], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    assert rc == 0


def test_packages_installed_into_the_session_win_over_the_preload():
    # runboxd's installer puts a session's own packages in /workspace/.runbox/site-packages, at
    # session creation after the warm sandbox's zygote has imported the image's pandas. `import
    # pandas` must give the session's: an interpreter forked from the zygote that has run nothing
    # is replaced by one started without the preload, and so is every one after a reset.
    if not image_available():
        pytest.skip("%s is not built (docker/build-images)" % IMAGE)
    name = "runbox-test-runner-%s" % uuid.uuid4().hex[:8]
    py = Runner(argv=docker_argv(name, "numpy,pandas,matplotlib.pyplot"))
    try:
        for i in range(1200):  # until the first interpreter is up, without sending it a cell
            py.send({"op": "ping", "id": i})
            if not py.event()["warming"]:
                break
            time.sleep(0.1)
        assert py.warm is not None and py.warm["preload"] == ["numpy", "pandas", "matplotlib.pyplot"]
        subprocess.run(["docker", "exec", "-u", "1000:1000", name, "sh", "-c",
                        "mkdir -p /workspace/.runbox/site-packages/pandas && echo 'MINE = True' > "
                        "/workspace/.runbox/site-packages/pandas/__init__.py"], check=True)
        mine = "import pandas\npandas.MINE, pandas.__file__"
        want = "(True, '/workspace/.runbox/site-packages/pandas/__init__.py')"
        assert py.execute(mine).result == want
        reset(py)
        assert py.execute(mine).result == want
        assert py.execute("import numpy\nint(numpy.arange(4).sum())").result == "6"
    finally:
        py.close()
        subprocess.run(["docker", "rm", "-f", name], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def docker_argv(name, preload):
    """The runner in the sandbox image as runboxd starts it: root with CAP_KILL/SETUID/SETGID only
    (privilege separation), the preload named."""
    return ["docker", "run", "-i", "--rm", "--name", name, "--label", "runbox.test=1", "--network", "none",
            "--read-only", "--tmpfs", "/tmp", "--tmpfs", "/workspace:uid=1000", "--user", "0:0", "--init", "--cap-drop", "ALL",
            "--cap-add", "KILL", "--cap-add", "SETUID", "--cap-add", "SETGID", "--security-opt", "no-new-privileges",
            "--pids-limit", "128", "-e", "RUNBOX_SANDBOX=1", "-e", "RUNBOX_GRACE_MS=300",
            "-e", "PYTHONPATH=/workspace/.runbox/site-packages", "-e", "RUNBOX_PRELOAD=" + preload, IMAGE]



def test_a_claim_never_waits_for_a_slow_preload(monkeypatch, tmp_path):
    # runboxd may hand out a warm sandbox whose preload is still importing (a busy host): the ping
    # of its claim makes the first interpreter start the plain way instead of waiting (issue 41).
    (tmp_path / "rbslowpreload.py").write_text("import time\ntime.sleep(600)\n")
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    py = runner(monkeypatch, "rbslowpreload,decimal")
    try:
        py.send({"op": "ping", "id": "p"})
        pong = py.event()
        assert pong["warming"] is True and pong["worker_pid"] is None, pong
        py.send({"op": "ping", "id": "c", "claim": True})
        pong = py.event()
        # answered after the switch: the first interpreter exists (without the claim it would wait
        # for the zygote, whose imports never end here)
        assert pong["type"] == "pong" and pong["worker_pid"] is not None, pong
        r = py.execute("import sys\nprint(1)\n[m in sys.modules for m in ('rbslowpreload', 'decimal')]")
        assert r.status == "completed" and r.text("stdout") == "1\n" and r.result == "[False, False]", r.events[-3:]
        assert py.execute(ZYGOTES + "len(zygotes())").result == "0"
    finally:
        py.close()

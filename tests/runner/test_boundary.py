"""The runner's trust boundary (docker/runner/runbox_runner/__init__.py): the Python worker,
which runs the user's code, loads nothing of the supervisor's side.

Checked twice: statically (every import in the worker-side files, lazy ones included) and in a
running worker (its sys.modules), started both alone from its entry script and by the
supervisor. Run: python3 -m pytest tests/runner -q
"""

import ast
import json
import os
import subprocess
import sys

from test_runner import Runner

RUNNER_DIR = os.path.join(os.path.dirname(__file__), "..", "..", "docker", "runner")
WORKER_ENTRY = os.path.join(RUNNER_DIR, "runbox_worker.py")
# The worker side: its entry script and the modules it may load.
WORKER_FILES = ["runbox_worker.py", "runbox_runner/__init__.py", "runbox_runner/python_worker.py",
                "runbox_runner/protocol.py", "runbox_runner/zygote.py", "runbox_runner/shell.py",
                "runbox_runner/pipcheck.py", "runbox_runner/kernel_requests.py"]
# IPython's shell (runbox_runner.shell, with the %pip checks of runbox_runner.pipcheck) is in
# every worker.
WORKER_MODULES = ["runbox_runner", "runbox_runner.pipcheck", "runbox_runner.protocol", "runbox_runner.python_worker",
                  "runbox_runner.shell"]
# A worker forked from the zygote (RUNBOX_PRELOAD) has the zygote's module too.
FORKED_WORKER_MODULES = sorted(WORKER_MODULES + ["runbox_runner.zygote"])
# Loaded by a worker at its first question (Jupyter's complete, inspect, ...), not before.
LAZY_WORKER_MODULES = ["runbox_runner.kernel_requests"]
SHOW_MODULES = "import sys\nsorted(m for m in sys.modules if m.startswith(('runbox', 'runner')))"


def imported_names(path):
    """Every module named by an import statement in the file, at any depth."""
    with open(os.path.join(RUNNER_DIR, path)) as f:
        tree = ast.parse(f.read(), path)
    names = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            assert node.level == 0, "%s: relative import" % path
            names.append(node.module)
            names += ["%s.%s" % (node.module, a.name) for a in node.names if node.module == "runbox_runner"]
    return names


def test_worker_files_import_nothing_of_the_supervisor_side():
    for path in WORKER_FILES:
        for name in imported_names(path):
            if name.startswith("runbox") or name.startswith("runner"):
                assert name in FORKED_WORKER_MODULES + LAZY_WORKER_MODULES, \
                    "%s imports %s, which is not on the worker's side" % (path, name)


def test_worker_alone_loads_only_its_modules():
    cmd_r, cmd_w = os.pipe()
    ctrl_r, ctrl_w = os.pipe()
    proc = subprocess.Popen([sys.executable, WORKER_ENTRY, str(cmd_r), str(ctrl_w)], pass_fds=(cmd_r, ctrl_w),
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, start_new_session=True)
    os.close(cmd_r)
    os.close(ctrl_w)
    ctrl = os.fdopen(ctrl_r, "rb")
    try:
        assert json.loads(ctrl.readline())["t"] == "hello"
        os.write(cmd_w, (json.dumps({"n": 1, "code": SHOW_MODULES, "limit": 4096}) + "\n").encode())
        msgs = [json.loads(ctrl.readline())]
        while msgs[-1]["t"] != "done":
            msgs.append(json.loads(ctrl.readline()))
        assert msgs[-1] == {"t": "done", "n": 1, "status": "completed"}
        results = [m for m in msgs if m["t"] == "result"]
        assert len(results) == 1 and ast.literal_eval(results[0]["text"]) == WORKER_MODULES, results
    finally:
        os.close(cmd_w)
        assert proc.wait(timeout=30) == 0
        ctrl.close()
        proc.stdout.close()


def test_worker_started_by_the_supervisor_loads_only_its_modules():
    py = Runner()
    try:
        assert ast.literal_eval(py.execute(SHOW_MODULES).result) == WORKER_MODULES
        assert ast.literal_eval(py.execute("!true\n" + SHOW_MODULES).result) == WORKER_MODULES
        err = py.execute("def f():\n    print(1 / 0)\nf()").error
        tb = "".join(err["traceback"])
        assert err["ename"] == "ZeroDivisionError" and "runbox" not in tb and "runner" not in tb, tb
    finally:
        py.close()


def test_worker_forked_from_the_zygote_loads_only_its_modules(monkeypatch):
    monkeypatch.setenv("RUNBOX_PRELOAD", "decimal")
    py = Runner()
    try:
        assert ast.literal_eval(py.execute(SHOW_MODULES).result) == FORKED_WORKER_MODULES
        err = py.execute("def f():\n    print(1 / 0)\nf()").error
        tb = "".join(err["traceback"])
        assert err["ename"] == "ZeroDivisionError" and "runbox" not in tb and "runner" not in tb, tb
    finally:
        py.close()

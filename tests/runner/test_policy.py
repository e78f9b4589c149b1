"""Tests of the optional code policy checker (docker/runner/runbox_policy.py) and of its use by
the runner's supervisor (docker/runner/runner.py run as a plain subprocess, no Docker).

Run: python3 -m pytest tests/runner -q
"""

import importlib.util
import json
import os
import subprocess
import sys
import uuid

import pytest

RUNNER_DIR = os.path.join(os.path.dirname(__file__), "..", "..", "docker", "runner")
RUNNER = os.path.join(RUNNER_DIR, "runner.py")

_spec = importlib.util.spec_from_file_location("runbox_policy", os.path.join(RUNNER_DIR, "runbox_policy.py"))
policy = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(policy)

DEFAULT = ["import:os", "import:subprocess", "import:socket", "import:ctypes", "builtin:eval", "builtin:exec",
           "builtin:compile", "builtin:__import__", "name:__builtins__", "attr:__globals__", "attr:__subclasses__",
           "attr:__builtins__", "open:write"]


def rules_hit(code, rules=DEFAULT):
    return [(v.rule, v.line) for v in policy.check(code, rules)]


# ---- the checker ----------------------------------------------------------------------------

@pytest.mark.parametrize("code,rule", [
    ("import os", "import:os"),
    ("import os.path as p", "import:os"),
    ("from os import path", "import:os"),
    ("from os.path import join", "import:os"),
    ("import json, subprocess", "import:subprocess"),
    ("def f():\n    import socket\n", "import:socket"),
    ("__import__('ctypes')", "import:ctypes"),
    ("import importlib\nimportlib.import_module('subprocess')", "import:subprocess"),
    ("eval('1+1')", "builtin:eval"),
    ("f = exec", "builtin:exec"),
    ("import builtins\nbuiltins.eval('1')", "builtin:eval"),
    ("getattr(__builtins__, 'compile')", "name:__builtins__"),
    ("(lambda: 0).__globals__", "attr:__globals__"),
    ("().__class__.__base__.__subclasses__()", "attr:__subclasses__"),
    ("getattr(f, '__globals__')", "attr:__globals__"),
    ("vars(f)['__globals__']", "attr:__globals__"),
    ("open('x.txt', 'w')", "open:write"),
    ("open('x.txt', mode='ab')", "open:write"),
    ("open('x.txt', 'r+')", "open:write"),
    ("m = 'w'\nopen('x.txt', m)", "open:write"),
    ("import io\nio.open('x', 'x')", "open:write"),
    ("from pathlib import Path\nPath('a').write_text('hi')", "open:write"),
    ("from pathlib import Path\nPath('a').open('w')", "open:write"),
    ("import zipfile\nzipfile.ZipFile('a.zip').open('n', 'w')", "open:write"),
])
def test_violations_are_found(code, rule):
    hit = rules_hit(code)
    assert rule in [r for r, _ in hit], hit


@pytest.mark.parametrize("code", [
    "import json\nimport os_helpers\nimport osmium",   # only os and its submodules
    "from . import os",                                 # a relative import is not the os module
    "import re\nre.compile('a+')",                      # compile as a method, not the builtin
    "def evaluate(x):\n    return x\nevaluate(1)",
    "x = {'eval': 1}\nx['eval']",
    "open('data.csv')",
    "open('data.csv', 'r')",
    "open('data.csv', 'rb', encoding=None)",
    "import pandas as pd\npd.DataFrame({'a': [1]})",
    "class A:\n    def __init__(self):\n        self.x = 1\nprint(A().x, __name__)",
    "s = 'import os; eval(1)'",                         # strings are not code
    "# import os\n",
])
def test_harmless_code_passes(code):
    assert rules_hit(code) == []


def test_only_the_given_rules_apply():
    assert rules_hit("import os\neval('1')", ["builtin:eval"]) == [("builtin:eval", 2)]
    assert rules_hit("import os", []) == []
    assert rules_hit("import os.path", ["import:os.path"]) == [("import:os.path", 1)]
    assert rules_hit("import os", ["import:os.path"]) == []


def test_violations_are_sorted_and_bounded():
    code = "\n".join("import os" for _ in range(50))
    found = policy.check("eval('1')\n" + code, DEFAULT)
    assert len(found) == policy.MAX_VIOLATIONS
    assert [v.line for v in found] == list(range(1, policy.MAX_VIOLATIONS + 1))
    assert found[0].rule == "builtin:eval"


def test_syntax_errors_are_left_to_python():
    assert policy.check("import os\nif x\n", DEFAULT) == []


@pytest.mark.parametrize("name", ["os", "import:", "import:os path", "import:1abc", "open:read", "call:eval",
                                  "attr:a.b", 3, None])
def test_bad_rule_names_are_refused(name):
    with pytest.raises(policy.RuleError):
        policy.check("x = 1", [name])


def test_report_names_rule_line_and_source():
    code = "x = 1\nimport os\n"
    evalue, tb = policy.report(code, policy.check(code, DEFAULT), "<cell-3>")
    assert evalue == "import:os: importing 'os' is not allowed by the code policy (line 2)"
    assert tb[0] == '  File "<cell-3>", line 2\n'
    assert tb[1] == "    import os\n"
    assert tb[-1].startswith("PolicyViolation: import:os:")


def test_deep_nesting_does_not_crash_the_checker():
    code = "x = " + "(" * 150 + "1" + ")" * 150
    assert policy.check(code, DEFAULT) == []


# ---- through the runner ---------------------------------------------------------------------

class Runner:
    def __init__(self):
        env = dict(os.environ)
        env["RUNBOX_LANGUAGE"] = "python"
        self.proc = subprocess.Popen([sys.executable, RUNNER], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     env=env)
        assert self.event()["type"] == "ready"

    def event(self):
        line = self.proc.stdout.readline()
        assert line, "runner closed its stdout"
        return json.loads(line)

    def execute(self, code, policy_field=None):
        rid = uuid.uuid4().hex
        req = {"op": "execute", "id": rid, "code": code, "timeout": 30, "max_output": 1 << 20}
        if policy_field is not None:
            req["policy"] = policy_field
        self.proc.stdin.write((json.dumps(req) + "\n").encode())
        self.proc.stdin.flush()
        events = []
        while True:
            ev = self.event()
            assert ev["id"] == rid
            events.append(ev)
            if ev["type"] == "done":
                return events

    def close(self):
        self.proc.stdin.close()
        self.proc.wait(timeout=60)
        self.proc.stdout.close()


@pytest.fixture
def runner():
    r = Runner()
    yield r
    r.close()


def by_type(events, t):
    return [e for e in events if e["type"] == t]


def test_runner_refuses_a_violating_cell_and_runs_nothing(runner):
    runner.execute("x = 1")
    ev = runner.execute("x = 2\nprint('ran')\nimport subprocess", {"rules": DEFAULT})
    assert by_type(ev, "stream") == []
    err = by_type(ev, "error")[0]
    assert err["ename"] == "PolicyViolation"
    assert "import:subprocess" in err["evalue"] and "line 3" in err["evalue"]
    done = ev[-1]
    assert done["status"] == "error" and done["reset"] is False
    # Nothing of the cell ran: x is still 1.
    ev = runner.execute("x", {"rules": DEFAULT})
    assert by_type(ev, "result")[0]["text"] == "1"
    assert ev[-1]["status"] == "completed"


def test_runner_without_policy_or_with_no_rules_runs_everything(runner):
    for field in (None, {"rules": []}):
        ev = runner.execute("import os\nos.getpid() > 0", field)
        assert by_type(ev, "result")[0]["text"] == "True", ev


def test_runner_reports_syntax_errors_as_python(runner):
    ev = runner.execute("import os\nif", {"rules": DEFAULT})
    assert by_type(ev, "error")[0]["ename"] == "SyntaxError"


@pytest.mark.parametrize("field", [{"rules": ["bogus"]}, {"rules": "import:os"}, ["import:os"]])
def test_runner_refuses_an_unusable_rule_set(runner, field):
    ev = runner.execute("print('ran')", field)
    assert by_type(ev, "stream") == []
    err = by_type(ev, "error")[0]
    assert err["ename"] == "PolicyError"
    assert ev[-1]["status"] == "error"

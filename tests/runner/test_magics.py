"""Tests of IPython's `!cmd` and `%magic` lines in Python cells (docker/runner/runbox_runner/magics.py):
the rewrite alone, then cells run by the runner as a plain subprocess (no Docker), the code
policy's view of them, and `%pip` in the sandbox image (sealed: no network).

Run: python3 -m pytest tests/runner/test_magics.py -q
"""

import ast
import os
import subprocess
import sys
import time
import uuid
import warnings

import pytest

from test_runner import IMAGE, Runner, image_available

RUNNER_DIR = os.path.join(os.path.dirname(__file__), "..", "..", "docker", "runner")
sys.path.insert(0, RUNNER_DIR)
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "integration"))
from runbox_runner import magics  # noqa: E402
import runbox_policy  # noqa: E402
import rbtest  # noqa: E402  (pure_wheel)


# ---- the rewrite -----------------------------------------------------------------------------

VALID_PYTHON = [
    "x = 5 % 3\nprint('%d' % x)\n",
    "s = '''\n!rm -rf /\n%time\n'''\n",
    's = """\n  %pip install x\n"""\nprint(s)\n',
    "a = (1,\n  2 % 2)\n",
    "b = 1 != 2\nc = [x for x in range(3) if x != 1]\n",
    "d = {\n 'k': '!v',\n}\n",
    "# !ls\n# %pip install\nx = 1  # %time\n",
    "e = 'it''s'\nf = r'\\'!'\n",
]


@pytest.mark.parametrize("code", VALID_PYTHON)
def test_python_is_never_rewritten(code):
    ast.parse(code)
    assert magics.transform(code) == (code, [])


def rewrite(code):
    src, uses = magics.transform(code)
    assert src.count("\n") >= code.count("\n") and len(src.splitlines()) == len(code.splitlines()), src
    ast.parse(src)
    return src, [(u.kind, u.line, u.what) for u in uses]


def test_escaped_lines_are_rewritten_in_place_with_their_indentation():
    src, uses = rewrite("import sys\nfor i in range(2):\n    !echo {i}\n    x = !ls\n%time f()\n")
    lines = src.splitlines()
    assert lines[0] == "import sys"
    assert lines[2] == "    __runbox_magic__.system('echo {i}')"
    assert lines[3] == "    x = __runbox_magic__.getoutput('ls')"
    assert lines[4] == "__runbox_magic__.line_magic('time', 'f()', 5)"
    assert uses == [("shell", 3, "!echo {i}"), ("shell", 4, "!ls"), ("python", 5, "%time")]


def test_lines_inside_strings_and_brackets_are_left_alone():
    code = "s = '''\n!not a command\n'''\nt = [1,\n%2]\n!yes\n"
    src, uses = magics.transform(code)
    assert src.splitlines()[:5] == code.splitlines()[:5]
    assert src.splitlines()[5] == "__runbox_magic__.system('yes')"
    assert [u.line for u in uses] == [6]


def test_a_backslash_joins_the_next_line_and_numbers_are_kept():
    src, uses = rewrite("!echo a \\\n  b\nprint(1)\n")
    assert src.splitlines() == ["__runbox_magic__.system('echo a b')", "", "print(1)"]


def test_a_cell_magic_takes_the_whole_cell():
    src, uses = rewrite("\n%%bash -x\necho 'hi'\n!not rewritten\n")
    assert src.splitlines()[1] == "__runbox_magic__.cell_magic('bash', '-x', \"echo 'hi'\\n!not rewritten\\n\", 2)"
    assert uses == [("shell", 2, "%%bash")]


def test_quotes_in_commands_are_kept_exactly():
    src, _ = rewrite("!echo \"it's\" '\\n' \\\\x\n")
    assert ast.literal_eval(src.split("system(")[1].rstrip(")\n")) == "echo \"it's\" '\\n' \\\\x"


def test_random_cells_never_break_the_rewrite():
    """The code policy runs the rewrite in the supervisor on hostile text: it never raises, keeps
    the line numbers, and leaves whatever Python parses as it is (20,000 cells of tricky pieces)."""
    import random
    rnd = random.Random(2026)
    pieces = ["!", "!!", "%", "%%", "%%bash", "%time ", "x = ", "a, b = ", "'", '"', "'" * 3, '"' * 3, "\\",
              "(", ")", "[", "]", "{", "}", "#", "\n", "\n", "\n", "    ", "\t", "ls", "$x", "{y}", "1", " % ",
              " != ", "f'", "r'", "\\\n", "\x00", "\u00e9", "pass", ":"]
    for _ in range(20000):
        code = "".join(rnd.choice(pieces) for _ in range(rnd.randint(0, 14)))
        src, uses = magics.transform(code)
        if uses:
            assert len(src.splitlines()) == len(code.splitlines()), repr(code)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # invalid escape sequences
                ast.parse(code)
        except (SyntaxError, ValueError):
            continue
        assert (src, uses) == (code, []), repr(code)


def test_the_rewrite_is_linear_in_the_cell():
    big = "x = 1\n" * 200000 + "!echo\n"
    start = time.process_time()
    magics.transform(big)
    one = time.process_time() - start
    start = time.process_time()
    magics.transform(big * 4)
    assert time.process_time() - start < one * 4 * 3 + 0.5


# ---- cells in the runner ---------------------------------------------------------------------

@pytest.fixture
def py(tmp_path):
    r = Runner()
    r.execute("import os\nos.chdir(%r)" % str(tmp_path))
    yield r
    r.close()


def test_shell_commands_stream_and_return_their_lines(py):
    r = py.execute("print('before')\n!echo out; echo err >&2\nprint('after')")
    assert r.status == "completed", r.events
    assert r.text("stdout") == "before\nout\nafter\n" and r.text("stderr") == "err\n"
    r = py.execute("files = !printf 'a\\nb\\n'\nfiles")
    assert r.result == "['a', 'b']"
    assert py.execute("files.s, files.n, type(files).__name__").result == "('a b', 'a\\nb', 'SList')"
    assert py.execute("!!echo twice").result == "['twice']"


def test_python_values_are_expanded_in_commands(py):
    r = py.execute("name = 'world'\nclass O: v = 7\no = O()\n!echo {name.upper()} $name $o.v '$$HOME'")
    assert r.text("stdout") == "WORLD world 7 $HOME\n"
    r = py.execute("def f(n):\n    out = !echo local $n\n    return out\nf(3)")
    assert r.result == "['local 3']"
    # An expansion that fails leaves the command as written (IPython's rule): awk's braces stay.
    r = py.execute("!echo '{no_such_name}' | awk '{print $1}'")
    assert r.text("stdout") == "{no_such_name}\n"


def test_exit_codes_are_kept_and_a_loop_runs_each_command(py):
    r = py.execute("for i in range(3):\n    !exit {i}\n    print(_exit_code)")
    assert r.text("stdout") == "0\n1\n2\n"
    r = py.execute("%%bash\necho from bash\nexit 3")
    assert r.status == "completed" and r.text("stdout") == "from bash\n"
    assert py.execute("_exit_code").result == "3"
    assert py.execute("%%sh\necho $0").text("stdout") == "/bin/sh\n"


def test_time_runs_python_and_keeps_its_value(py):
    r = py.execute("%time total = sum(range(1000))")
    assert r.status == "completed", r.events
    out = r.text("stdout").splitlines()
    assert out[0].startswith("CPU times: user ") and ", total: " in out[0] and out[1].startswith("Wall time: ")
    assert py.execute("%time total + 1").result == "499501"
    r = py.execute("%%time\ny = 5\ny * 2")
    assert r.result == "10" and "Wall time" in r.text("stdout")


def test_an_error_inside_time_points_at_the_users_line(py):
    r = py.execute("x = 1\n%time 1 / 0")
    assert r.status == "error" and r.error["ename"] == "ZeroDivisionError"
    tb = "".join(r.error["traceback"])
    assert "line 2" in tb and "magics.py" not in tb, tb
    assert "Wall time" in r.text("stdout")


def test_cd_pwd_env_writefile_and_matplotlib(py, tmp_path):
    (tmp_path / "sub").mkdir()
    r = py.execute("%cd sub")
    assert r.text("stdout") == str(tmp_path / "sub") + "\n"
    assert py.execute("%pwd").result == repr(str(tmp_path / "sub"))
    assert py.execute("%env RB_MAGIC=yes").text("stdout") == "env: RB_MAGIC=yes\n"
    assert py.execute("%env RB_MAGIC").result == "'yes'"
    assert py.execute("!echo $$RB_MAGIC").text("stdout") == "yes\n"  # the shell's own variable
    assert py.execute("import os; os.environ['RB_MAGIC']").result == "'yes'"
    assert py.execute("%%writefile notes.txt\nline 1\n").text("stdout") == "Writing notes.txt\n"
    assert py.execute("%%writefile -a notes.txt\nline 2\n").text("stdout") == "Appending to notes.txt\n"
    assert (tmp_path / "sub" / "notes.txt").read_text() == "line 1\nline 2\n"
    assert py.execute("%ls").text("stdout") == "notes.txt\n"
    r = py.execute("%matplotlib inline")
    assert r.status == "completed" and r.of("stream") == []


def test_unknown_and_misplaced_magics_are_usage_errors(py):
    r = py.execute("%timeit f()")
    assert r.error["ename"] == "UsageError" and "`%timeit` not found" in r.error["evalue"]
    assert "%pip" in r.error["evalue"] and "%time" in r.error["evalue"]
    r = py.execute("x = 1\n%%time\nx")
    assert r.error["ename"] == "UsageError" and "first line" in r.error["evalue"]
    r = py.execute("%%html\n<b>x</b>")
    assert r.error["ename"] == "UsageError" and "%%bash" in r.error["evalue"]
    # A Python error in a cell with magics is still Python's, on its line.
    r = py.execute("!echo ok\nx = (")
    assert r.error["ename"] == "SyntaxError" and "line 2" in r.error["evalue"]
    assert r.of("stream") == []


def test_an_interrupted_command_is_killed_and_the_state_kept(py, tmp_path):
    py.execute("kept = 41")
    rid = uuid.uuid4().hex
    py.send({"op": "execute", "id": rid, "code": "!echo go; exec sleep 60.4243", "timeout": 120,
             "max_output": 1 << 20})
    ev = py.event()
    assert ev["type"] == "stream" and ev["text"] == "go\n", ev
    py.send({"op": "interrupt", "id": rid})
    events = [ev]
    while events[-1]["type"] != "done":
        events.append(py.event())
    assert events[-1]["status"] == "cancelled", events
    # killed: gone once the kernel runs it (polled: a loaded host is slow; the odd argument
    # keeps the host's other sleeps out of it)
    deadline = time.monotonic() + 30
    while "sleep 60.4243" in (ps := subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout) \
            .splitlines() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert "sleep 60.4243" not in ps.splitlines(), ps
    assert py.execute("kept + 1").result == "42"


# ---- the code policy ----------------------------------------------------------------------

RULES = ["import:os", "import:subprocess", "open:write", "builtin:eval"]


@pytest.mark.parametrize("code,hits", [
    ("x = 1\n!ls", [("import:subprocess", 2)]),
    ("files = !ls", [("import:subprocess", 1)]),
    ("%pip install x", [("import:subprocess", 1)]),
    ("%%bash\nls", [("import:subprocess", 1)]),
    ("%ls", [("import:subprocess", 1)]),
    ("%cd /", [("import:os", 1)]),
    ("%%writefile f.txt\nx", [("open:write", 1)]),
    ("x = 1\n%time import os", [("import:os", 2)]),
    ("%%time\nx = 1\neval('2')", [("builtin:eval", 3)]),
    ("%time x = 1", []),
    ("%matplotlib inline\nx = 1", []),
])
def test_the_policy_sees_what_magics_do(code, hits):
    assert [(v.rule, v.line) for v in runbox_policy.check(code, RULES)] == hits
    assert runbox_policy.check(code, ["builtin:exec"]) == []


def test_the_runner_refuses_a_shell_line_under_the_policy(py):
    rid = uuid.uuid4().hex
    py.send({"op": "execute", "id": rid, "code": "print('ran')\n!touch should-not-exist", "timeout": 30,
             "max_output": 1 << 20, "policy": {"rules": RULES}})
    events = []
    while not events or events[-1]["type"] != "done":
        events.append(py.event())
    err = [e for e in events if e["type"] == "error"][0]
    assert err["ename"] == "PolicyViolation" and "import:subprocess" in err["evalue"] and "line 2" in err["evalue"]
    assert "!touch should-not-exist" in err["evalue"] or "!touch" in "".join(err["traceback"])
    assert not [e for e in events if e["type"] == "stream"]
    assert not os.path.exists("should-not-exist")


def test_pip_refusal_only_for_an_index_without_a_network(monkeypatch, tmp_path):
    wheel = tmp_path / "x-1.0-py3-none-any.whl"
    wheel.write_bytes(b"")
    monkeypatch.setattr(magics, "has_network", lambda: False)
    for argv in (["install", "requests"], ["-q", "install", "requests"], ["download", "x"], ["wheel", "x"],
                 ["install", "-r", str(wheel)], ["install", str(wheel), "requests"]):
        refusal = magics.pip_refusal(argv, "pip")
        assert refusal and refusal.startswith("pip %s needs a package index" % argv[argv.index(
            next(a for a in argv if not a.startswith("-")))]), argv
        assert "/dependencies" in refusal and "install_dependencies" in refusal and "--no-index" in refusal
        # ... and names the policy that would allow it
        assert '"allow": ["pypi.org", "files.pythonhosted.org"]' in refusal and "--egress" in refusal, refusal
    for argv in (["install", "--no-index", "--find-links", "/w", "x"], ["install", str(wheel)], ["list"],
                 ["--version"], ["show", "numpy"], ["uninstall", "-y", "x"], []):
        assert magics.pip_refusal(argv, "pip") is None, argv
    monkeypatch.setattr(magics, "has_network", lambda: True)
    assert magics.pip_refusal(["install", "requests"], "pip") is None


def test_pip_install_of_what_is_installed_needs_no_index():
    """Agents send `pip install numpy pillow` before their code (smolagents always does): with
    every name installed already, the answer is pip's own, not a refusal."""
    lines = magics.pip_satisfied(["install", "-q", "pytest", "pluggy"])
    assert lines and lines[0].startswith("Requirement already satisfied: pytest in "), lines
    assert len(lines) == 2 and "(%s)" % pytest.__version__ in lines[0], lines
    for argv in (["install", "pytest>=1"], ["install", "-U", "pytest"], ["install", "no-such-package-rb"],
                 ["install", "pytest", "no-such-package-rb"], ["install", "-r", "req.txt"], ["install"],
                 ["download", "pytest"], []):
        assert magics.pip_satisfied(argv) is None, argv


def test_pip_installs_go_into_the_session_unless_a_place_is_named(monkeypatch, tmp_path):
    site = tmp_path / "site"
    monkeypatch.setattr(magics, "DEPS_SITE", str(site))
    assert magics.pip_into_session(["install", "-q", "x"]) == ["install", "--target", str(site), "-q", "x"]
    assert site.is_dir()
    for argv in (["install", "--user", "x"], ["install", "-t", "/w", "x"], ["install", "--target=/w", "x"],
                 ["install", "--prefix", "/w", "x"], ["install", "--root=/r", "x"], ["download", "x"], ["list"], []):
        assert magics.pip_into_session(argv) == argv, argv


# ---- %pip in the sandbox image ---------------------------------------------------------------

@pytest.mark.skipif(not image_available(), reason="%s is not built (docker/build-images)" % IMAGE)
def test_pip_in_a_sealed_sandbox_says_how_to_install_and_installs_local_wheels(tmp_path):
    (tmp_path / "rbmagicdemo-1.0-py3-none-any.whl").write_bytes(rbtest.pure_wheel("rbmagicdemo", "1.0",
                                                                                  {"rbmagicdemo.py": b"answer = 42\n"}))
    os.chmod(tmp_path, 0o755)
    name = "runbox-test-magics-%s" % uuid.uuid4().hex[:8]
    argv = ["docker", "run", "-i", "--rm", "--name", name, "--label", "runbox.test=1", "--network", "none",
            "--read-only", "--tmpfs", "/tmp", "--tmpfs", "/workspace:uid=1000", "-u", "1000",
            "-v", "%s:/wheels:ro" % tmp_path, IMAGE]
    r = Runner(argv=argv)
    try:
        started = time.monotonic()
        res = r.execute("%pip install requests", timeout=60)
        assert res.status == "error" and res.error["ename"] == "UsageError", res.events
        assert "no network" in res.error["evalue"] and "/dependencies" in res.error["evalue"]
        assert "install_dependencies" in res.error["evalue"]
        assert time.monotonic() - started < 30  # refused at once, not after pip's retries
        res = r.execute("!pip --version", timeout=60)
        assert res.status == "completed" and res.text("stdout").startswith("pip "), res.events
        # The shell's pip (runbox_pip.py) says the same at once, where Debian's retried for 15 s.
        started = time.monotonic()
        res = r.execute("!pip install requests\n_exit_code", timeout=60)
        assert res.result == "1" and "ERROR: pip install needs a package index" in res.text("stderr"), res.events
        assert time.monotonic() - started < 10
        # what the image has already: pip's own answer, in both forms
        res = r.execute("%pip install numpy", timeout=60)
        assert res.status == "completed", res.events
        assert "Requirement already satisfied: numpy" in res.text("stdout"), res.events
        res = r.execute("!pip install -qqq pillow numpy\n_exit_code", timeout=60)
        assert res.result == "0" and res.text("stderr") == "", res.events
        res = r.execute("!pip3 download -d /tmp/d requests; python3 -m pip --version", timeout=60)
        assert "pip3 download needs a package index" in res.text("stderr"), res.events
        assert res.text("stdout").startswith("pip "), res.events
        res = r.execute("%pip install --no-index --find-links /wheels rbmagicdemo", timeout=120)
        assert res.status == "completed", res.events
        assert "Successfully installed rbmagicdemo-1.0" in res.text("stdout"), res.events
        res = r.execute("import rbmagicdemo\nrbmagicdemo.answer, rbmagicdemo.__file__", timeout=60)
        assert res.result == "(42, '/workspace/.runbox/site-packages/rbmagicdemo.py')", res.events
    finally:
        r.close()
        subprocess.run(["docker", "rm", "-f", name], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

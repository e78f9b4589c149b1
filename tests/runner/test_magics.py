"""Tests of Python cells run by IPython (docker/runner/runbox_runner/shell.py): IPython's `!cmd`,
`%magic` and `%%magic` lines, its display machinery and what runbox changes in it, in cells run
by the runner as a plain subprocess (no Docker); the code policy's view of them; and `%pip`
(runbox_runner/pipcheck.py) in the sandbox image (sealed: no network).

Run: python3 -m pytest tests/runner/test_magics.py -q
"""

import ast
import base64
import os
import subprocess
import sys
import time
import uuid
import warnings

import pytest

from test_runner import IMAGE, Runner, image_available, restart

RUNNER_DIR = os.path.join(os.path.dirname(__file__), "..", "..", "docker", "runner")
sys.path.insert(0, RUNNER_DIR)
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "integration"))
from runbox_runner import pipcheck  # noqa: E402
import runbox_policy  # noqa: E402
import rbtest  # noqa: E402  (pure_wheel)


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
    r = py.execute("name = 'world'\nclass O: v = 7\no = O()\n!echo {name.upper()} $name $o.v $$0 '$name'")
    assert r.text("stdout") == "WORLD world 7 /bin/bash $name\n"  # $$ is a $; single quotes keep $name
    r = py.execute("def f(n):\n    out = !echo local $n\n    return out\nf(3)")
    assert r.result == "['local 3']"
    # An expansion that fails leaves the command as written (IPython's rule): awk's braces stay.
    r = py.execute("!echo '{no_such_name}' | awk '{print $1}'")
    assert r.text("stdout") == "{no_such_name}\n"


def test_exit_codes_are_kept_and_a_loop_runs_each_command(py):
    r = py.execute("for i in range(3):\n    !exit {i}\n    print(_exit_code)")
    assert r.text("stdout") == "0\n1\n2\n"
    # %%bash as IPython runs it: a failing script is an error (CalledProcessError)
    r = py.execute("%%bash\necho from bash\nexit 3")
    assert r.status == "error" and r.error["ename"] == "CalledProcessError" and r.text("stdout") == "from bash\n"
    assert py.execute("%%bash --no-raise-error\nexit 3").status == "completed"
    # ... its output goes to the cell that runs it, the second time too (IPython's thread)
    for word in ("one", "two"):
        r = py.execute("%%bash\necho " + word + "; echo err >&2")
        assert (r.text("stdout"), r.text("stderr")) == (word + "\n", "err\n"), r.events
    assert py.execute("%%sh\necho $0").text("stdout") == "sh\n"


def test_time_runs_python_and_keeps_its_value(py):
    r = py.execute("%time total = sum(range(1000))")
    assert r.status == "completed", r.events
    out = r.text("stdout").splitlines()
    assert out[0].startswith("CPU times: user ") and ", total: " in out[0] and out[1].startswith("Wall time: ")
    assert py.execute("%time total + 1").result == "499501"
    r = py.execute("%%time\ny = 5\ny * 2")
    assert r.result == "10" and "Wall time" in r.text("stdout")


def test_an_error_inside_time_has_no_frames_of_the_runner_or_ipython(py):
    r = py.execute("x = 1\n%time 1 / 0")
    assert r.status == "error" and r.error["ename"] == "ZeroDivisionError"
    tb = "".join(r.error["traceback"])
    assert "<timed eval>" in tb and "IPython" not in tb and "runbox" not in tb, tb
    r = py.execute("def f():\n    return 1 / 0\n\nf()")
    tb = "".join(r.error["traceback"])
    assert tb.startswith("Traceback (most recent call last):\n") and "IPython" not in tb, tb
    assert 'File "<cell-' in tb and "line 4" in tb and "line 2, in f" in tb, tb


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
    # automagic, as in IPython: a magic's name alone on its line
    assert py.execute("ls").text("stdout") == "notes.txt\n"


def test_unknown_magics_are_usage_errors(py):
    r = py.execute("%no_such_magic f()")
    assert r.error["ename"] == "UsageError" and "`%no_such_magic` not found" in r.error["evalue"], r.events
    assert r.error["traceback"] == ["UsageError: " + r.error["evalue"] + "\n"]
    r = py.execute("%%no_such_magic\nx")
    assert r.error["ename"] == "UsageError" and "`%%no_such_magic` not found" in r.error["evalue"]
    # A Python error in a cell with magics is still Python's, on its line, in the cell's name.
    r = py.execute("!echo ok\nx = (")
    assert r.error["ename"] == "SyntaxError" and "line 2" in r.error["evalue"], r.events
    assert r.error["traceback"][0].startswith('  File "<cell-') and r.of("stream") == []


def test_ipythons_magics_run(py):
    py.execute("alpha = 1\nbeta = 'b'")
    r = py.execute("%who")
    assert r.text("stdout") == "alpha\t beta\t os\t \n", r.events
    r = py.execute("%timeit -n 3 -r 2 sum(range(10))")
    assert r.status == "completed" and "per loop (mean" in r.text("stdout"), r.events
    r = py.execute("%%capture captured\nprint('hidden')")
    assert r.status == "completed" and r.of("stream") == [], r.events
    assert py.execute("captured.stdout").result == "'hidden\\n'"
    r = py.execute("%%time\ny = 5\ny * 2")
    assert r.result == "10" and "Wall time" in r.text("stdout")
    assert py.execute("%lsmagic").status == "completed"
    r = py.execute("%load_ext no_such_extension_rb")
    assert r.status == "error" and r.error["ename"] == "ModuleNotFoundError", r.events


def test_an_error_is_not_formatted_again_by_ipython(py):
    """IPython 9 formats every error again for its history with ultratb (stack_data's import,
    source reading: hundreds of ms on a loaded host), after the error was sent: an interrupted
    cell's done then came after the supervisor's grace, and the interpreter was reset. History
    keeps the traceback that was sent instead."""
    r = py.execute("1 / 0")
    assert r.error["ename"] == "ZeroDivisionError"
    r = py.execute("import sys\n[m for m in ('stack_data', 'executing') if m in sys.modules], "
                   "get_ipython().history_manager.exceptions[max(get_ipython().history_manager.exceptions)]['ename']")
    assert r.result == "([], 'ZeroDivisionError')", r.events


def test_an_interrupt_reaches_the_users_code_only(py):
    """The worker's SIGINT handler raises KeyboardInterrupt only while the cell's own code runs,
    never in IPython's bookkeeping around it (its history's locks, its traps): a KeyboardInterrupt
    there could leave a lock held and hang every later cell."""
    py.execute("ip = get_ipython()\nseen = []\n"
               "ip.events.register('pre_run_cell', lambda info: seen.append(('pre', ip.runbox.running)))\n"
               "ip.events.register('post_run_cell', lambda r: seen.append(('post', ip.runbox.running)))")
    assert py.execute("ip.runbox.running").result == "True"
    assert py.execute("seen[-4:]").result == "[('post', False), ('pre', False), ('post', False), ('pre', False)]"


def test_indented_cells_run_and_the_last_value_is_shown(py):
    """E2B's examples and tests send cells indented as in their source (IPython dedents)."""
    r = py.execute("    x = 20\n    x + 22\n")
    assert r.status == "completed" and r.result == "42", r.events
    r = py.execute("\n        for i in range(2):\n            print(i)\n        ")
    assert r.text("stdout") == "0\n1\n", r.events


def test_display_and_ipython_display_are_there(py):
    png = base64.b64encode(bytes.fromhex(
        "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
        "1f15c4890000000d49444154789c6360000002000001e221bc330000000049454e44ae426082")).decode()
    r = py.execute("from IPython.display import Image, display\nimport base64\n"
                   "display(Image(data=base64.b64decode(%r)))\n'after'" % png)
    assert r.status == "completed", r.events
    assert [e["bundle"]["image/png"] for e in r.of("display")] == [png]
    assert r.result == "'after'"
    # every display is its mime bundle, none is printed
    r = py.execute("display({'k': 1}, 'text')\nfrom IPython.display import Markdown\ndisplay(Markdown('# T'))")
    assert r.text("stdout") == "", r.events
    assert [e["bundle"] for e in r.of("display")] == [
        {"text/plain": "{'k': 1}"}, {"text/plain": "'text'"},
        {"text/plain": "<IPython.core.display.Markdown object>", "text/markdown": "# T"}]
    # a trailing semicolon hides the value, as in IPython (nor is it kept in _ and Out)
    assert py.execute("3 * 3;").result is None
    assert py.execute("_, Out[max(Out)]").result == "('after', 'after')"


def test_outputs_are_jupyter_mime_bundles(py):
    """What IPython's display formatter gives, as a Jupyter kernel sends it: every format of a
    value or a display(), its metadata, display_id and update_display, clear_output."""
    r = py.execute("from IPython.display import HTML, JSON, Latex, Javascript, SVG, Markdown, display, clear_output\n"
                   "class Rich:\n"
                   "    def _repr_html_(self): return '<b>rich</b>'\n"
                   "    def _repr_markdown_(self): return '**rich**'\n"
                   "    def _repr_latex_(self): return r'$\\alpha$'\n"
                   "    def _repr_json_(self): return {'a': [1, 2]}\n"
                   "    def __repr__(self): return 'Rich()'\n"
                   "display(Latex(r'$x^2$'), Javascript('1;'), SVG('<svg xmlns=\"http://www.w3.org/2000/svg\"/>'))\n"
                   "h = display(HTML('<i>a</i>'), display_id='p')\n"
                   "h.update(Markdown('*b*'))\n"
                   "clear_output(wait=True)\n"
                   "Rich()")
    assert r.status == "completed", r.events
    latex, js, svg, shown, updated = r.of("display")
    assert latex["bundle"]["text/latex"] == "$x^2$" and js["bundle"]["application/javascript"] == "1;"
    assert svg["bundle"]["image/svg+xml"].startswith("<svg")
    assert (shown["bundle"]["text/html"], shown["display_id"], "update" in shown) == ("<i>a</i>", "p", False)
    assert (updated["bundle"]["text/markdown"], updated["display_id"], updated["update"]) == ("*b*", "p", True)
    assert r.of("clear_output") == [dict(r.of("clear_output")[0], wait=True)]
    res = r.of("result")[0]
    assert res["text"] == "Rich()" and res["bundle"] == {
        "text/plain": "Rich()", "text/html": "<b>rich</b>", "text/markdown": "**rich**",
        "text/latex": "$\\alpha$", "application/json": '{"a": [1, 2]}'}, res
    # the order of the events is the order of the calls
    kinds = [e["type"] for e in r.events]
    assert kinds == ["display"] * 5 + ["clear_output", "result", "done"], kinds
    # JSON's metadata, a plain value has text/plain only (no bundle)
    r = py.execute("JSON({'k': 1})")
    assert r.of("result")[0]["metadata"] == {"application/json": {"expanded": False, "root": "root"}}
    assert "bundle" not in py.execute("[1, 2]").of("result")[0]


def test_images_pil_and_matplotlib_figures_are_pngs(py):
    pytest.importorskip("PIL")
    pytest.importorskip("matplotlib")
    r = py.execute("from PIL import Image\nImage.new('RGB', (3, 2), 'red')")
    b = r.of("result")[0]["bundle"]
    assert base64.b64decode(b["image/png"]).startswith(b"\x89PNG") and "image/jpeg" in b, r.events
    assert b["text/plain"].startswith("<PIL.Image.Image image mode=RGB size=3x2")
    # a figure as a value is its PNG (as with the inline backend), and it is shown again at the
    # end of the cell as the figures left open are, as in Jupyter
    r = py.execute("import matplotlib.pyplot as plt\nfig, ax = plt.subplots()\nax.plot([1, 2])\nfig", timeout=120)
    value, shown = r.of("result")[0], r.of("display")
    assert base64.b64decode(value["bundle"]["image/png"]).startswith(b"\x89PNG"), r.events
    assert len(shown) == 1 and shown[0]["bundle"]["image/png"] == value["bundle"]["image/png"]
    assert shown[0]["bundle"]["text/plain"] == "<Figure size 640x480 with 1 Axes>"


def test_a_text_format_past_the_cap_is_left_out_and_text_plain_is_cut(py):
    r = py.execute("from IPython.display import HTML, display\n"
                   "class Big:\n"
                   "    def _repr_html_(self): return '<p>' + 'x' * 10000 + '</p>'\n"
                   "    def __repr__(self): return 'y' * 10000\n"
                   "display(Big())\nBig()", max_output=4096)
    for item in r.of("display") + r.of("result"):
        assert "text/html" not in item.get("bundle", {}), item
        assert "characters of the" in item.get("bundle", {"text/plain": item.get("text")})["text/plain"]


def test_cell_names_and_counts_start_over_after_a_restart(py):
    assert py.execute("In[-1], len(In)").status == "completed"
    before = py.execute("1 / 0").error["traceback"]
    assert any('File "<cell-' in line for line in before)
    restart(py)
    r = py.execute("len(In) - 1")
    assert r.result == "1", r.events
    tb = "".join(py.execute("1 / 0").error["traceback"])
    assert 'File "<cell-2>", line 1' in tb, tb


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
    ("%run script.py", [("import:subprocess", 1)]),
    ("%%capture\nx = 1\n!ls", [("import:subprocess", 3)]),
    ("%%time\n%%bash\nls", [("import:subprocess", 2)]),
    ("%load_ext os", [("import:os", 1)]),
    ("  x = 1\n  %cd /", [("import:os", 2)]),
    ("\n\n%%bash\nls", [("import:subprocess", 3)]),
    ("for i in range(2):\n    !echo \\\n  {i}\n    import os", [("import:subprocess", 2), ("import:os", 4)]),
    # automagic: a one-line cell IPython runs as a magic without its %
    ("cd /tmp", [("import:os", 1)]),
    ("pip install x", [("import:subprocess", 1)]),
    ("ls", [("import:subprocess", 1)]),
    ("cd = 3", []),
    ("zip?", []),
])
def test_the_policy_sees_what_magics_do(code, hits):
    assert [(v.rule, v.line) for v in runbox_policy.check(code, RULES)] == hits
    assert runbox_policy.check(code, ["builtin:exec"]) == []


def test_random_cells_never_break_the_policy():
    """The code policy reads cells in the supervisor, on hostile text: it never raises, and each
    violation names a line of the cell (2,000 cells of tricky pieces)."""
    import random
    rnd = random.Random(2026)
    pieces = ["!", "!!", "%", "%%", "%%bash", "%time ", "%%time\n", "x = ", "a, b = ", "'", '"', "'" * 3, '"' * 3,
              "\\", "(", ")", "[", "]", "{", "}", "#", "\n", "\n", "\n", "    ", "\t", "ls", "cd ", "$x", "{y}", "1",
              " % ", " != ", "f'", "r'", "\\\n", "\x00", "\u00e9", "pass", ":", "?", "import os", "open('f', 'w')"]
    for _ in range(2000):
        code = "".join(rnd.choice(pieces) for _ in range(rnd.randint(0, 14)))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # invalid escape sequences
            found = runbox_policy.check(code, RULES)
        for v in found:
            assert 1 <= v.line <= code.count("\n") + 1, (repr(code), v.line)


def test_the_policy_reads_magics_in_linear_time():
    """IPython's whole-cell transformation is quadratic in the lines it changes; the policy,
    which runs in the supervisor before the cell's time limit applies, reads them line by line."""
    big = "!echo\nx = 1\n" * 500
    start = time.process_time()
    assert len(runbox_policy.check(big, RULES)) == runbox_policy.MAX_VIOLATIONS
    one = time.process_time() - start
    start = time.process_time()
    runbox_policy.check(big * 4, RULES)
    assert time.process_time() - start < one * 4 * 3 + 0.5


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
    monkeypatch.setattr(pipcheck, "has_network", lambda: False)
    for argv in (["install", "requests"], ["-q", "install", "requests"], ["download", "x"], ["wheel", "x"],
                 ["install", "-r", str(wheel)], ["install", str(wheel), "requests"]):
        refusal = pipcheck.pip_refusal(argv, "pip")
        assert refusal and refusal.startswith("pip %s needs a package index" % argv[argv.index(
            next(a for a in argv if not a.startswith("-")))]), argv
        assert "/dependencies" in refusal and "install_dependencies" in refusal and "--no-index" in refusal
        # ... and names the policy that would allow it only when this server allows one (RUNBOX_PIP_INDEX,
        # set by runboxd from --egress and --egress-max)
        policy = '"allow": ["pypi.org", "files.pythonhosted.org"]'
        for reach, present, words in (("allowed", True, "network policy"), ("refused", False, "--egress-max"),
                                      ("off", False, "--egress is off")):
            monkeypatch.setenv("RUNBOX_PIP_INDEX", reach)
            told = pipcheck.pip_refusal(argv, "pip")
            assert (policy in told) == present and words in told, (reach, told)
        monkeypatch.delenv("RUNBOX_PIP_INDEX")
    for argv in (["install", "--no-index", "--find-links", "/w", "x"], ["install", str(wheel)], ["list"],
                 ["--version"], ["show", "numpy"], ["uninstall", "-y", "x"], []):
        assert pipcheck.pip_refusal(argv, "pip") is None, argv
    monkeypatch.setattr(pipcheck, "has_network", lambda: True)
    assert pipcheck.pip_refusal(["install", "requests"], "pip") is None


def test_pip_install_of_what_is_installed_needs_no_index():
    """Agents send `pip install numpy pillow` before their code (smolagents always does): with
    every name installed already, the answer is pip's own, not a refusal."""
    lines = pipcheck.pip_satisfied(["install", "-q", "pytest", "pluggy"])
    assert lines and lines[0].startswith("Requirement already satisfied: pytest in "), lines
    assert len(lines) == 2 and "(%s)" % pytest.__version__ in lines[0], lines
    for argv in (["install", "pytest>=1"], ["install", "-U", "pytest"], ["install", "no-such-package-rb"],
                 ["install", "pytest", "no-such-package-rb"], ["install", "-r", "req.txt"], ["install"],
                 ["download", "pytest"], []):
        assert pipcheck.pip_satisfied(argv) is None, argv


def test_pip_installs_go_into_the_session_unless_a_place_is_named(monkeypatch, tmp_path):
    site = tmp_path / "site"
    monkeypatch.setattr(pipcheck, "DEPS_SITE", str(site))
    assert pipcheck.pip_into_session(["install", "-q", "x"]) == ["install", "--target", str(site), "-q", "x"]
    assert site.is_dir()
    for argv in (["install", "--user", "x"], ["install", "-t", "/w", "x"], ["install", "--target=/w", "x"],
                 ["install", "--prefix", "/w", "x"], ["install", "--root=/r", "x"], ["download", "x"], ["list"], []):
        assert pipcheck.pip_into_session(argv) == argv, argv


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
        # IPython's folder is not in the user's workspace (IPYTHONDIR)
        res = r.execute("import os\nsorted(os.listdir('/workspace')), os.environ['IPYTHONDIR']", timeout=60)
        assert res.result == "([], '/tmp/ipython')", res.events
        res = r.execute("%pip install requests", timeout=60)
        assert res.status == "error" and res.error["ename"] == "UsageError", res.events
        assert "no network" in res.error["evalue"] and "/dependencies" in res.error["evalue"]
        assert "install_dependencies" in res.error["evalue"]
        assert time.monotonic() - started < 30  # refused at once, not after pip's retries
        res = r.execute("!pip --version", timeout=60)
        assert res.status == "completed" and res.text("stdout").startswith("pip "), res.events
        # The shell's pip (runbox_pip.py) says the same at once, where Debian's retried for 15 s.
        started = time.monotonic()
        # `!pip` in a cell fails the cell as %pip does (issue 42, item 11), with the same refusal
        res = r.execute("!pip install requests\n_exit_code", timeout=60)
        assert res.status == "error" and res.error["ename"] == "UsageError", res.events
        assert "!pip install needs a package index" in res.error["evalue"], res.events
        res = r.execute("!python3 -m pip install requests", timeout=60)
        assert res.status == "error" and "needs a package index" in res.error["evalue"], res.events
        # a shell line that is more than one pip call is bash's: pip's own refusal, the cell goes on
        res = r.execute("!pip install requests || echo refused\n_exit_code", timeout=60)
        assert res.result == "0" and "ERROR: pip install needs a package index" in res.text("stderr"), res.events
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

"""Tests of the JavaScript/TypeScript worker (docker/runner/js_worker.js) under the runner's
supervisor, driven over its stdin/stdout inside the sandbox image (RUNBOX_IMAGE, default
runbox-sandbox:latest), which has Debian's Node.js and TypeScript; skipped when the image or
Docker is missing. Run: python3 -m pytest tests/runner/test_js.py -q
"""

import subprocess
import time
import uuid

import pytest

from test_runner import IMAGE, Runner, image_available

pytestmark = pytest.mark.skipif(not image_available(), reason="%s is not built (docker/build-images)" % IMAGE)


class Sandbox(Runner):
    """The runner in a container of the image, as runboxd starts it (no network, read-only root)."""

    def __init__(self, language, grace_ms=1000):
        self.name = "runbox-test-js-%s" % uuid.uuid4().hex[:8]
        argv = ["docker", "run", "-i", "--rm", "--name", self.name, "--label", "runbox.test=1", "--network", "none",
                "--read-only", "--tmpfs", "/tmp", "--tmpfs", "/workspace:uid=1000", "--pids-limit", "200",
                "-e", "RUNBOX_LANGUAGE=" + language, "-e", "RUNBOX_GRACE_MS=%d" % grace_ms, "-e", "RUNBOX_SANDBOX=1",
                IMAGE]
        super().__init__(language, argv=argv)

    def interrupt_after(self, code, delay=1.0):
        """Runs code and interrupts it after delay seconds (as runboxd's interrupt does)."""
        rid = uuid.uuid4().hex
        self.send({"op": "execute", "id": rid, "code": code, "timeout": 120, "max_output": 1 << 20})
        time.sleep(delay)
        self.send({"op": "interrupt", "id": rid})
        events = []
        while True:
            ev = self.event()
            events.append(ev)
            if ev["type"] == "done":
                return events

    def close(self):
        try:
            return super().close()
        finally:
            subprocess.run(["docker", "rm", "-f", self.name], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


@pytest.fixture
def js():
    r = Sandbox("javascript")
    yield r
    r.close()


@pytest.fixture
def ts():
    r = Sandbox("typescript")
    yield r
    r.close()


def test_declarations_persist_and_last_value_is_inspected(js):
    r = js.execute("let x = 40; const f = (y) => x + y; class K { constructor() { this.v = 1 } }\n"
                   "function g() { return 'g' }", timeout=60)
    assert r.status == "completed" and r.result is None and r.of("stream") == [], r.events
    assert js.execute("f(2)").result == "42"
    assert js.execute("new K()").result == "K { v: 1 }"
    assert js.execute("g() + x").result == "'g40'"
    assert js.execute("({a: [1, 2], s: 'hi'})").result == "{ a: [ 1, 2 ], s: 'hi' }"
    assert js.execute("undefined").result is None
    assert js.execute("x = 1; x").result == "1"
    assert js.execute("[process.getuid(), process.cwd()]").result == "[ 1000, '/workspace' ]"


def test_a_cell_can_run_again(js):
    # Top-level let/const/class are declared again without "Identifier has already been declared".
    for _ in range(2):
        r = js.execute("const a = 1;\nlet b = 2;\nclass C { get v() { return a + b } }\nnew C().v", timeout=60)
        assert r.status == "completed" and r.result == "3", r.events
    r = js.execute("const a = await Promise.resolve(10); a")
    assert r.result == "10", r.events
    assert js.execute("a + b").result == "12"


def test_top_level_await_keeps_declarations(js):
    r = js.execute("const v = await new Promise((ok) => setTimeout(() => ok(21), 50)); v * 2", timeout=60)
    assert r.status == "completed" and r.result == "42", r.events
    assert js.execute("v").result == "21"
    assert js.execute("await Promise.resolve('done')").result == "'done'"


def test_stdout_and_stderr_are_separate_and_in_order(js):
    r = js.execute("for (let i = 0; i < 3; i++) { console.log('out', i); console.error('err', i) }\n"
                   "process.stdout.write('raw\\n'); 'end'", timeout=60)
    assert r.status == "completed" and r.result == "'end'"
    chunks = [(e["name"], e["text"]) for e in r.of("stream")]
    joined = []
    for name, text in chunks:
        joined.extend((name, line) for line in text.splitlines())
    assert joined == [("stdout", "out 0"), ("stderr", "err 0"), ("stdout", "out 1"), ("stderr", "err 1"),
                      ("stdout", "out 2"), ("stderr", "err 2"), ("stdout", "raw")], r.events


def test_child_processes_that_inherit_stdio_write_the_cells_output(js):
    r = js.execute("const cp = require('child_process');\n"
                   "cp.execSync('echo sync-out; echo sync-err >&2', { stdio: 'inherit' });\n"
                   "await new Promise((ok) => cp.spawn('sh', ['-c', 'echo async-out'], { stdio: 'inherit' })"
                   ".on('close', ok));\n"
                   "cp.spawnSync('sh', ['-c', 'echo given'], { stdio: [0, process.stdout, process.stderr] }).status",
                   timeout=60)
    assert r.status == "completed" and r.result == "0", r.events
    assert r.text("stdout") == "sync-out\nasync-out\ngiven\n", r.events
    assert r.text("stderr") == "sync-err\n", r.events


def test_error_shows_the_cells_line_without_runner_frames(js):
    r = js.execute("function g() {\n  throw new TypeError('bad value')\n}\n\ng()", timeout=60)
    assert r.status == "error"
    err = r.error
    assert err["ename"] == "TypeError" and err["evalue"] == "bad value"
    tb = "".join(err["traceback"])
    assert "at g (<cell-1>:2:9)" in tb and "<cell-1>:5:1" in tb, tb
    assert "js_worker" not in tb and "node:" not in tb, tb
    r = js.execute("let y = ;")
    assert r.status == "error" and r.error["ename"] == "SyntaxError"
    assert "".join(r.error["traceback"]).startswith("<cell-2>:1\nlet y = ;\n"), r.error
    r = js.execute("throw 42")
    assert r.error["ename"] == "Uncaught" and r.error["evalue"] == "42"
    assert js.execute("'still here'").result == "'still here'"


def test_timeout_stops_an_endless_loop_and_keeps_the_state(js):
    js.execute("let kept = 7", timeout=60)
    r = js.execute("while (true) {}", timeout=1)
    assert r.status == "timeout" and r.done["reset"] is False, r.events
    assert r.error["ename"] == "Interrupted"
    assert js.execute("kept").result == "7"


def test_interrupt_stops_waiting_and_keeps_the_state(js):
    js.execute("let kept = 8", timeout=60)
    events = js.interrupt_after("await new Promise(() => {})")
    assert events[-1]["status"] == "cancelled" and events[-1]["reset"] is False, events
    events = js.interrupt_after("for (;;) {}")
    assert events[-1]["status"] == "cancelled" and events[-1]["reset"] is False, events
    assert js.execute("kept").result == "8"


@pytest.fixture(params=["javascript", "typescript"])
def node(request):
    # These tests check that an interrupt is never lost and never ends Node.js, not the grace
    # period: a long one keeps a worker that is merely slow (TypeScript transpiling its first
    # cell on a CPU shared with other suites: reset after a grace of 1 s in a full run) from
    # being restarted. A lost interrupt still fails them: the cell then ends only at the grace's
    # kill, with reset true.
    r = Sandbox(request.param, grace_ms=30000)
    yield r
    r.close()


# Delays after which the interrupts below come: while the supervisor or the worker reads the
# cell, while TypeScript transpiles it, while vm compiles it, enters or leaves its run, or later.
INTERRUPT_DELAYS = (0.0, 0.001, 0.002, 0.003, 0.005, 0.0075, 0.01, 0.015, 0.02, 0.03, 0.05)


def assert_cancelled_and_kept(events, *where):
    done = events[-1]
    assert done["type"] == "done" and done["status"] == "cancelled" and done["reset"] is False, \
        where + (done.get("reset_reason"), events)


def test_an_interrupt_at_once_stops_an_endless_loop_without_a_reset(node):
    # The interrupt lands anywhere while the worker prepares, starts, runs or leaves the cell. Its
    # SIGINT must never end Node.js (vm's breakOnSigint left SIGINT deadly around each run: a
    # flake under load), be lost, or stop the next cell instead; the cell must stop with the
    # state kept, never end in a reset after the grace.
    typed = ": number[]" if node.ready["language"] == "typescript" else ""
    node.execute("let kept = 9", timeout=60)
    for round_ in range(3):
        for delay in INTERRUPT_DELAYS:
            for code in ("const big%s = [];\nfor (;;) {}" % typed, "await new Promise(() => {})"):
                assert_cancelled_and_kept(node.interrupt_after(code, delay=delay), round_, delay, code)
    assert node.execute("kept").result == "9"


def test_an_interrupt_while_the_interpreter_starts_does_not_end_it(node):
    # A cell interrupted while its Node.js is still starting (a new sandbox; right after a reset),
    # when a SIGINT would end it, is cancelled without a reset.
    assert_cancelled_and_kept(node.interrupt_after("for (;;) {}", delay=0.0), "first")
    for delay in (0.0, 0.0, 0.01, 0.03, 0.1):
        r = node.execute("process.exit(3)", timeout=60)
        assert r.done["reset"] is True, r.events
        assert_cancelled_and_kept(node.interrupt_after("for (;;) {}", delay=delay), delay)
    assert node.execute("1 + 1", timeout=60).result == "2"


def test_the_cells_sigint_listeners_do_not_take_the_interrupt(js):
    # A SIGINT listener of the user's code must not take SIGINT from Node.js's watchdog (nor give
    # it back to the default, deadly, when removed).
    js.execute("let kept = 5; process.on('SIGINT', () => {}); process.once('SIGINT', () => {})", timeout=60)
    for delay in (0.0, 0.01, 0.3):
        assert_cancelled_and_kept(js.interrupt_after("for (;;) {}", delay=delay), delay)
    js.execute("process.removeAllListeners('SIGINT')")
    for delay in (0.0, 0.01, 0.3):
        assert_cancelled_and_kept(js.interrupt_after("for (;;) {}", delay=delay), delay)
    assert js.execute("kept").result == "5"


def test_endless_loop_after_await_resets_with_a_reason(js):
    js.execute("let lost = 1", timeout=60)
    r = js.execute("await null; while (true) {}", timeout=1)
    assert r.status == "timeout" and r.done["reset"] is True, r.events
    assert "restarted" in r.done["reset_reason"]
    r = js.execute("typeof lost", timeout=60)
    assert r.status == "completed" and r.result == "'undefined'", r.events


def test_process_exit_resets_with_a_reason(js):
    js.execute("let lost = 1", timeout=60)
    r = js.execute("process.exit(1)")
    assert r.status == "error" and r.done["reset"] is True, r.events
    assert "exited with code 1" in r.done["reset_reason"]
    assert js.execute("typeof lost", timeout=60).result == "'undefined'"


def test_huge_output_is_capped(js):
    r = js.execute("for (let i = 0; i < 200000; i++) console.log('line ' + i + ' ' + 'x'.repeat(50))",
                   timeout=120, max_output=100_000)
    assert r.status == "completed", r.done
    out = r.text("stdout")
    assert len(out.encode()) < 150_000
    assert "bytes of output dropped" in out and r.done["dropped"] > 0
    assert out.startswith("line 0 ") and out.rstrip().endswith("line 199999 " + "x" * 50)


def test_output_of_a_timer_is_marked_as_an_earlier_cells(js):
    first = uuid.uuid4().hex
    js.send({"op": "execute", "id": first, "code": "setTimeout(() => console.log('late'), 300); 'set'",
             "timeout": 60, "max_output": 1 << 20})
    while js.event()["type"] != "done":
        pass
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        out = js.execute("'next'").text("stdout")
        if out:
            assert out == "[from earlier execution %s] late\n" % first
            break
        time.sleep(0.2)
    else:
        pytest.fail("the timer's output never came")


def test_typescript_types_are_erased_and_errors_map_to_its_lines(ts):
    r = ts.execute("interface P { x: number }\nconst p: P = { x: 41 };\n"
                   "function inc(a: number): number { return a + 1 }\ninc(p.x)", timeout=120)
    assert r.status == "completed" and r.result == "42", r.events
    assert ts.execute("enum Color { Red, Green }\nColor.Green").result == "1"
    r = ts.execute("let n: number = await Promise.resolve(3); n")
    assert r.result == "3", r.events
    assert ts.execute("n * 2").result == "6"
    r = ts.execute("type T = string;\n\nfunction boom(s: T): never {\n  throw new Error('boom ' + s);\n}\nboom('x')")
    assert r.status == "error" and r.error["evalue"] == "boom x"
    tb = "".join(r.error["traceback"])
    assert "at boom (<cell-5>:4:9)" in tb and "<cell-5>:6:1" in tb, tb
    r = ts.execute("let q: = 1")
    assert r.status == "error" and r.error["ename"] == "SyntaxError"
    assert "TS1110" in "".join(r.error["traceback"]) and "<cell-6>:1" in "".join(r.error["traceback"])
    r = ts.execute("import * as os from 'os';\nos.platform()")
    assert r.result == "'linux'", r.events


def test_child_processes_are_killed_with_an_interrupted_cell(js):
    r = js.execute("const { spawn } = require('child_process');\n"
                   "for (let i = 0; i < 5; i++) spawn('sleep', ['1000.4242'], { stdio: 'ignore' });\n"
                   "while (true) {}", timeout=2)
    assert r.status == "timeout", r.events
    # (a zombie the worker has not reaped yet is gone too: Node reaps it at its next turn). The
    # runner runs on the host here, so ps sees the host's processes: the cell's sleeps are found
    # by their odd argument (scripts/test's own `sleep 2` once made this fail). A SIGKILLed process
    # exits when the kernel next runs it, not at once on a loaded host: the count is polled (a
    # deadline for "never", not a timing).
    deadline = time.monotonic() + 30
    while True:
        r = js.execute("require('child_process').execSync('ps -eo stat=,args=').toString().split('\\n')"
                       ".filter((l) => /^\\s*[^Z\\s]\\S*\\s+sleep 1000\\.4242$/.test(l)).length", timeout=60)
        if r.result == "0" or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert r.result == "0", r.events

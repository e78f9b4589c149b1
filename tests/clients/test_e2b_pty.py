"""E2B's `sandbox.pty` and the process side of `sandbox.commands` beyond run (PyPI `e2b`, pinned in
tests/requirements.txt, sync and async, unmodified) against a real runboxd and real Docker
sandboxes: a terminal driven as a terminal (typed commands, their output, a resize that `stty
size` sees, kill), a terminal and a background command watched again from a second client after
the first let go, input to a process, kill by pid and by tag; and the hostile side: a terminal
that floods (`yes`) while runboxd stays responsive with its memory bounded, watched or not, too
many terminals (a clear 429), another key's sandbox (refused).

server/e2b/e2b_rpc.c (process.Process/Start with a pty, Connect, Update, SendInput, SendSignal)
over core/process.c (terminals on Docker exec with Tty, watchers, the backlog).
"""

from __future__ import annotations

import asyncio
import base64
import json
import struct
import threading
import time

import pytest
import requests

import rbtest
from rbfixtures import keyed_server_fixture, point_e2b_sdk_at

from e2b import AsyncSandbox, CommandExitException, PtySize, RateLimitException, Sandbox

KEYS = {"carol": "e2b_" + "c4" * 20, "dave": "e2b_" + "d5" * 20}

e2b_server = keyed_server_fixture("runboxd-e2b-pty", KEYS, name="e2b_server")


@pytest.fixture(scope="module")
def env(e2b_server):
    mp = pytest.MonkeyPatch()
    point_e2b_sdk_at(mp, e2b_server, KEYS["carol"])
    yield e2b_server
    mp.undo()


@pytest.fixture(scope="module")
def sbx(env):
    box = Sandbox.create()
    env.session_ids.add(box.sandbox_id)
    yield box
    box.kill()


class Screen:
    """A terminal's bytes as a reader thread collects them from a sync handle."""

    def __init__(self, handle):
        self.handle = handle
        self.data = b""
        self.cond = threading.Condition()
        self.ended = False
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self) -> None:
        try:
            self.handle.wait(on_pty=self._add)
        except Exception:  # noqa: BLE001 (a killed terminal ends with an exit exception)
            pass
        with self.cond:
            self.ended = True
            self.cond.notify_all()

    def _add(self, chunk: bytes) -> None:
        with self.cond:
            self.data += chunk
            self.cond.notify_all()

    def wait_for(self, needle: bytes, start: int = 0, deadline: float = 120) -> int:
        """The offset just past needle's first occurrence at or after start."""
        end = time.monotonic() + deadline
        with self.cond:
            while needle not in self.data[start:] and not self.ended and time.monotonic() < end:
                self.cond.wait(1)
            assert needle in self.data[start:], (needle, self.data[-2000:])
            return self.data.index(needle, start) + len(needle)

    def wait_end(self, deadline: float = 120) -> None:
        end = time.monotonic() + deadline
        with self.cond:
            while not self.ended and time.monotonic() < end:
                self.cond.wait(1)
            assert self.ended, "the terminal's stream did not end"


def read_until(handle, needle: bytes) -> bytes:
    """Iterates a sync handle in this thread until its terminal has written needle (then the
    handle can be disconnected: its generator is not running)."""
    seen = b""
    for _, _, pty in handle:
        seen += pty or b""
        if needle in seen:
            return seen
    raise AssertionError(f"the terminal ended before {needle!r}: {seen[-2000:]!r}")


def _gone(box, pid: int) -> bool:
    """Polls (the kill is asynchronous) until pid is no longer listed."""
    deadline = time.monotonic() + 60
    while pid in {p.pid for p in box.commands.list()} and time.monotonic() < deadline:
        time.sleep(0.2)
    return pid not in {p.pid for p in box.commands.list()}


def test_a_terminal_driven_like_a_terminal(sbx):
    h = sbx.pty.create(PtySize(rows=24, cols=80), timeout=0)
    screen = Screen(h)
    sbx.pty.send_stdin(h.pid, b"stty size; id -u; tty\n")
    at = screen.wait_for(b"24 80\r\n")
    at = screen.wait_for(b"1000\r\n", at)  # the sandbox user
    at = screen.wait_for(b"/dev/pts/", at)
    sbx.pty.send_stdin(h.pid, b"echo $((6 * 7))\n")
    at = screen.wait_for(b"42\r\n", at)
    sbx.pty.stream_input(h.pid, [b"echo stre", b"amed\n"])
    at = screen.wait_for(b"streamed\r\n", at)
    sbx.pty.resize(h.pid, PtySize(rows=40, cols=132))
    sbx.pty.send_stdin(h.pid, b"stty size\n")
    at = screen.wait_for(b"40 132\r\n", at)
    listed = {p.pid: p for p in sbx.commands.list()}
    assert listed[h.pid].cmd == "/bin/bash" and listed[h.pid].args == ["-i", "-l"], listed
    assert sbx.pty.kill(h.pid) is True
    screen.wait_end()
    assert _gone(sbx, h.pid)
    assert sbx.pty.kill(h.pid) is False


def test_a_terminal_is_watched_again_from_a_second_client(env, sbx):
    h = sbx.pty.create(PtySize(rows=10, cols=50), timeout=0, cwd="/home/user")
    sbx.pty.send_stdin(h.pid, b"export MARK=kept; echo ready\n")
    read_until(h, b"ready\r\n")
    h.disconnect()  # the terminal runs on
    other = Sandbox.connect(sbx.sandbox_id)  # another client of the same key
    h2 = other.pty.connect(h.pid, timeout=0)
    assert h2.pid == h.pid
    screen = Screen(h2)
    other.pty.send_stdin(h.pid, b"echo mark=$MARK; pwd\n")
    at = screen.wait_for(b"mark=kept\r\n")  # the same shell, its variable kept
    screen.wait_for(b"/workspace\r\n", at)
    assert other.pty.kill(h.pid) is True
    screen.wait_end()


def test_a_background_command_is_connected_to_sent_input_and_killed(env, sbx):
    h = sbx.commands.run("read a; echo got-$a; read b; echo got-$b", background=True, stdin=True, timeout=0)
    h.disconnect()
    other = Sandbox.connect(sbx.sandbox_id)
    h2 = other.commands.connect(h.pid)
    other.commands.send_stdin(h.pid, "x\n")  # what it printed meanwhile comes with the connect
    h2.send_stdin("y\n")
    r = h2.wait()
    assert r.exit_code == 0 and r.stdout == "got-x\ngot-y\n", r

    # a stream of input (client streaming: runboxd hands it over when the stream ends)
    h = sbx.commands.run("read a; read b; echo $a-$b", background=True, stdin=True, timeout=0)
    other.commands.stream_input(h.pid, ["one\n", b"two\n"])
    assert h.wait().stdout == "one-two\n"

    # kill by pid from another client
    h = sbx.commands.run("sleep 600", background=True, timeout=0)
    h.disconnect()
    assert other.commands.kill(h.pid) is True
    assert _gone(sbx, h.pid)
    # the connect of a process that is gone is not found
    from e2b import NotFoundException, SandboxException

    with pytest.raises((NotFoundException, SandboxException)):
        other.commands.connect(h.pid)


def _envd(env, box, method: str, body: bytes, ctype: str, token: str | None = None, stream: bool = False):
    return requests.post(f"{env.url}/e2b/{method}", data=body, timeout=120, stream=stream,
                         headers={"Content-Type": ctype, "Connect-Protocol-Version": "1",
                                  "E2b-Sandbox-Id": box.sandbox_id, "E2b-Sandbox-Port": "49983",
                                  "X-Access-Token": box._envd_access_token if token is None else token})


def _envelope(msg: dict) -> bytes:
    raw = json.dumps(msg).encode()
    return struct.pack(">BI", 0, len(raw)) + raw


def test_kill_and_input_by_tag(env, sbx):
    """A process started with a tag (the wire's StartRequest.tag) is named by it in SendInput and
    SendSignal; its Start stream may go, the process stays."""
    r = _envd(env, sbx, "process.Process/Start",
              _envelope({"process": {"cmd": "/bin/sh", "args": ["-c", "read x; echo $x > tagged.txt; sleep 600"]},
                         "tag": "worker-1", "stdin": True}), "application/connect+json", stream=True)
    assert r.status_code == 200, r.text
    head = r.raw.read(5)
    flags, n = struct.unpack(">BI", head)
    start = json.loads(r.raw.read(n))
    pid = start["event"]["start"]["pid"]
    r.close()  # the client goes; the process runs on
    listed = {p.pid: p for p in sbx.commands.list()}
    assert listed[pid].tag == "worker-1", listed
    sel = {"process": {"tag": "worker-1"}}
    r = _envd(env, sbx, "process.Process/SendInput",
              json.dumps({**sel, "input": {"stdin": base64.b64encode(b"by-tag\n").decode()}}).encode(),
              "application/json")
    assert r.status_code == 200, r.text
    rbtest.wait_until(lambda: sbx.files.exists("/home/user/tagged.txt") and
                      sbx.files.read("/home/user/tagged.txt") == "by-tag\n", "the input sent by tag", deadline=60)
    r = _envd(env, sbx, "process.Process/SendSignal", json.dumps({**sel, "signal": "SIGNAL_SIGKILL"}).encode(),
              "application/json")
    assert r.status_code == 200, r.text
    assert _gone(sbx, pid)
    r = _envd(env, sbx, "process.Process/SendSignal", json.dumps({**sel, "signal": "SIGNAL_SIGKILL"}).encode(),
              "application/json")
    assert r.status_code == 404 and "worker-1" in r.json()["message"], r.text
    # Update of a process without a terminal, and bad sizes, answer readably
    h = sbx.commands.run("sleep 600", background=True, timeout=0)
    r = _envd(env, sbx, "process.Process/Update",
              json.dumps({"process": {"pid": h.pid}, "pty": {"size": {"rows": 5, "cols": 5}}}).encode(),
              "application/json")
    assert r.status_code == 400 and "terminal" in r.json()["message"], r.text
    r = _envd(env, sbx, "process.Process/Start",
              _envelope({"process": {"cmd": "/bin/bash"}, "pty": {"size": {"rows": 0, "cols": 100000}}}),
              "application/connect+json")
    assert r.status_code == 400 and "rows and cols" in r.json()["message"], r.text
    # a client stream of input that is cut, or starts without naming the process, is refused
    data = _envelope({"data": {"input": {"stdin": "eA=="}}})
    r = _envd(env, sbx, "process.Process/StreamInput", data, "application/connect+json")
    assert r.status_code == 400 and "start event" in r.json()["message"], r.text
    r = _envd(env, sbx, "process.Process/StreamInput", _envelope({"start": {"process": {"pid": h.pid}}}) + data[:-3],
              "application/connect+json")
    assert r.status_code == 400 and "envelope announces" in r.json()["message"], r.text
    h.kill()


def test_the_async_sdk_drives_a_terminal_and_reconnects(env, sbx):
    async def main() -> None:
        box = await AsyncSandbox.connect(sbx.sandbox_id)
        got = bytearray()
        arrived = asyncio.Event()

        def on_data(chunk: bytes) -> None:
            got.extend(chunk)
            arrived.set()

        async def wait_for(needle: bytes, start: int = 0) -> int:
            async with asyncio.timeout(120):
                while needle not in got[start:]:
                    arrived.clear()
                    await arrived.wait()
            return got.index(needle, start) + len(needle)

        h = await box.pty.create(PtySize(rows=30, cols=90), on_data=on_data, timeout=0)
        await box.pty.send_stdin(h.pid, b"stty size\n")
        at = await wait_for(b"30 90\r\n")
        await box.pty.resize(h.pid, PtySize(rows=31, cols=91))
        await box.pty.send_stdin(h.pid, b"stty size\n")
        at = await wait_for(b"31 91\r\n", at)
        await h.disconnect()
        again = bytearray()
        h2 = await box.pty.connect(h.pid, on_data=again.extend, timeout=0)
        await box.pty.send_stdin(h.pid, b"echo async-again\n")
        async with asyncio.timeout(120):
            while b"async-again\r\n" not in again:
                await asyncio.sleep(0.1)
        assert await box.pty.kill(h.pid) is True
        with pytest.raises(CommandExitException):
            await h2.wait()

        c = await box.commands.run("read v; echo v=$v", background=True, stdin=True, timeout=0)
        await c.disconnect()
        c2 = await box.commands.connect(c.pid)
        await box.commands.send_stdin(c.pid, "1\n")
        r = await c2.wait()
        assert r.stdout == "v=1\n", r

    asyncio.run(main())


def _rss_kib(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise AssertionError("no VmRSS")


def _responsive(env) -> None:
    r = env.get("/health")
    assert r.status_code == 200, r.text


def test_a_flooding_terminal_keeps_runboxd_responsive_and_bounded(env, sbx):
    """`yes` on a terminal, watched by a client that reads, then by nobody: runboxd answers other
    requests meanwhile, and its memory stays within a bound whatever the flood's length."""
    before = _rss_kib(env.pid)
    h = sbx.pty.create(PtySize(rows=24, cols=80), timeout=0)
    sbx.pty.send_stdin(h.pid, b"yes flood-line\n")
    read_until(h, b"flood-line\r\n" * 200)
    for _ in range(5):  # watched by a client that does not read now (its output waits, paused)
        _responsive(env)
        assert sbx.commands.run("echo alive").stdout == "alive\n"
    h.disconnect()
    for _ in range(5):  # watched by nobody: runboxd drains it into its bounded backlog
        _responsive(env)
        assert sbx.commands.run("echo alive").stdout == "alive\n"
    grown = _rss_kib(env.pid) - before
    assert grown < 64 * 1024, f"runboxd grew by {grown} KiB during the flood"
    # a second client reconnects to the flood and stops it with ^C
    h2 = sbx.pty.connect(h.pid, timeout=0)
    screen = Screen(h2)
    screen.wait_for(b"flood-line\r\n")
    sbx.pty.send_stdin(h.pid, b"\x03")
    sbx.pty.send_stdin(h.pid, b"echo stopped-$((1+1))\n")
    screen.wait_for(b"stopped-2\r\n")
    assert sbx.pty.kill(h.pid) is True
    screen.wait_end()


def test_too_many_terminals_are_refused_clearly(env, sbx):
    handles = []
    try:
        for _ in range(4):
            handles.append(sbx.pty.create(PtySize(rows=5, cols=20), timeout=0))
        with pytest.raises(RateLimitException) as info:
            sbx.pty.create(PtySize(rows=5, cols=20), timeout=0)
        assert "terminals open already" in str(info.value), info.value
    finally:
        for h in handles:
            sbx.pty.kill(h.pid)
    for h in handles:
        assert _gone(sbx, h.pid)
    h = sbx.pty.create(PtySize(rows=5, cols=20), timeout=0)  # room again
    assert sbx.pty.kill(h.pid) is True


def test_another_keys_sandbox_is_refused(env, sbx):
    h = sbx.pty.create(PtySize(rows=5, cols=20), timeout=0)
    try:
        mp = pytest.MonkeyPatch()
        point_e2b_sdk_at(mp, env, KEYS["dave"])
        try:
            mine = Sandbox.create()
            env.session_ids.add(mine.sandbox_id)
            from e2b import SandboxNotFoundException

            with pytest.raises(SandboxNotFoundException):
                Sandbox.connect(sbx.sandbox_id)
        finally:
            mp.undo()
        # dave's token on carol's sandbox: every process call is refused, none reaches the terminal
        sel = json.dumps({"process": {"pid": h.pid}, "input": {"pty": base64.b64encode(b"id\n").decode()}}).encode()
        for token in (mine._envd_access_token, ""):
            r = _envd(env, sbx, "process.Process/SendInput", sel, "application/json", token=token)
            assert r.status_code in (401, 403, 404), r.text
            r = _envd(env, sbx, "process.Process/Connect", _envelope({"process": {"pid": h.pid}}),
                      "application/connect+json", token=token)
            assert r.status_code in (401, 403, 404), r.text
            r = _envd(env, sbx, "process.Process/SendSignal",
                      json.dumps({"process": {"pid": h.pid}, "signal": "SIGNAL_SIGKILL"}).encode(), "application/json",
                      token=token)
            assert r.status_code in (401, 403, 404), r.text
        # and dave's own sandbox knows no such process
        r = _envd(env, mine, "process.Process/Connect", _envelope({"process": {"pid": h.pid}}),
                  "application/connect+json")
        assert r.status_code == 404, r.text
        mine.kill()
        assert h.pid in {p.pid for p in sbx.commands.list()}  # untouched
    finally:
        sbx.pty.kill(h.pid)


def test_a_command_whose_sandbox_ends_reports_the_sandbox_gone(env):
    """The stream of a process whose sandbox is killed ends `unavailable`, as envd's proxy answers;
    the SDK then asks /health and raises SandboxNotRunningException."""
    from e2b import SandboxNotRunningException

    box = Sandbox.create()
    env.session_ids.add(box.sandbox_id)
    cmd = box.commands.run("sleep 60", background=True)
    box.kill()
    with pytest.raises(SandboxNotRunningException, match="killed or reached its end of life"):
        cmd.wait()

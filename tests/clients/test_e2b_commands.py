"""E2B's `sandbox.commands` (PyPI `e2b-code-interpreter` and its `e2b`, pinned in
tests/requirements.txt) against a real runboxd and real Docker sandboxes, unmodified: envd's
Connect RPC (process.Process/Start, SendSignal, List) on runbox sessions (server/e2b/e2b_rpc.c
over core/process.c). The SDK is configured only by E2B_API_URL, E2B_SANDBOX_URL and
E2B_API_KEY, as docs/e2b.md says.

Commands run as the sandbox user with the session's workspace as E2B's /home/user; their output
streams while they run; a non-zero exit raises CommandExitException; a background command can
be listed and killed; standard input works when asked for; what runbox does not offer (another
user) fails readably. Terminals and reconnecting: test_e2b_pty.py.
"""

from __future__ import annotations

import threading
import time

import pytest

import rbtest
from rbfixtures import keyed_server_fixture, point_e2b_sdk_at

from e2b import CommandExitException, SandboxException
from e2b_code_interpreter import Sandbox

KEY = "e2b_" + "c3" * 20


e2b_server = keyed_server_fixture("runboxd-e2b-commands", {"carol": KEY}, name="e2b_server")


@pytest.fixture(scope="module")
def sbx(e2b_server):
    """One sandbox for the module, made by the SDK pointed at runboxd by its environment alone."""
    mp = pytest.MonkeyPatch()
    point_e2b_sdk_at(mp, e2b_server, KEY)
    box = Sandbox.create()
    e2b_server.session_ids.add(box.sandbox_id)
    yield box
    box.kill()
    mp.undo()


def test_ls_runs_in_the_home_folder_as_the_sandbox_user(sbx):
    sbx.files.write("/home/user/hello.txt", "hi")
    r = sbx.commands.run("ls -la")
    assert r.exit_code == 0 and r.error is None, r
    assert "hello.txt" in r.stdout, r.stdout
    r = sbx.commands.run("id -u; pwd; cat hello.txt; echo oops >&2")
    assert r.stdout.split("\n")[:3] == ["1000", "/workspace", "hi"], r.stdout
    assert r.stderr == "oops\n", r.stderr


def test_cwd_and_envs(sbx):
    sbx.commands.run("mkdir -p sub")
    r = sbx.commands.run('pwd; echo "$GREETING"', cwd="/home/user/sub", envs={"GREETING": "hello there"})
    assert r.stdout == "/workspace/sub\nhello there\n", r.stdout
    r = sbx.commands.run("pwd", cwd="/tmp")
    assert r.stdout == "/tmp\n"


def test_a_failing_command_raises_command_exit_exception(sbx):
    with pytest.raises(CommandExitException) as info:
        sbx.commands.run("echo partial; echo bad >&2; exit 3")
    e = info.value
    assert e.exit_code == 3, e
    assert e.stdout == "partial\n" and e.stderr == "bad\n", (e.stdout, e.stderr)


def test_output_streams_while_the_command_runs(sbx):
    """on_stdout sees the first line while the command still waits for a file that the test
    writes only after that line arrived: the line cannot have come at the end."""
    seen: list[str] = []
    got_first = threading.Event()

    def on_stdout(chunk: str) -> None:
        seen.append(chunk)
        if "first" in "".join(seen):
            got_first.set()

    errors: list[Exception] = []

    def release() -> None:
        if got_first.wait(120):
            try:
                sbx.files.write("/home/user/go", "1")
            except Exception as e:  # noqa: BLE001 (reported by the assertion below)
                errors.append(e)

    t = threading.Thread(target=release)
    t.start()
    r = sbx.commands.run("rm -f go; echo first; while [ ! -e go ]; do sleep 0.1; done; echo second",
                         on_stdout=on_stdout, timeout=60)
    t.join()
    assert got_first.is_set() and not errors, errors
    assert r.stdout == "first\nsecond\n", r.stdout
    assert "".join(seen) == "first\nsecond\n", seen


def test_stderr_streams_to_on_stderr(sbx):
    errs: list[str] = []
    r = sbx.commands.run("echo to-err >&2", on_stderr=errs.append)
    assert "".join(errs) == "to-err\n" and r.stderr == "to-err\n"


def test_a_background_command_is_listed_and_killed(sbx):
    handle = sbx.commands.run("echo started; sleep 600", background=True)
    assert handle.pid > 0
    listed = {p.pid: p for p in sbx.commands.list()}
    assert handle.pid in listed, listed
    assert listed[handle.pid].cmd == "/bin/bash", listed[handle.pid]
    assert listed[handle.pid].args == ["-l", "-c", "echo started; sleep 600"]
    for out, _, _ in handle:  # its first line, so that the kill comes after it
        if out and "started" in out:
            break
    assert handle.kill() is True
    with pytest.raises(CommandExitException) as info:
        handle.wait()
    assert info.value.exit_code != 0
    assert "started" in info.value.stdout
    # gone from the list, and a second kill finds nothing (polling: the kill is asynchronous)
    deadline = time.monotonic() + 60
    while handle.pid in {p.pid for p in sbx.commands.list()} and time.monotonic() < deadline:
        time.sleep(0.2)
    assert handle.pid not in {p.pid for p in sbx.commands.list()}
    assert sbx.commands.kill(handle.pid) is False


def test_large_output_arrives_whole(sbx):
    r = sbx.commands.run("head -c 3000000 /dev/zero | tr '\\0' 'x'; echo", timeout=180)
    assert len(r.stdout) == 3000001 and set(r.stdout[:-1]) == {"x"}


def test_standard_input_when_asked_for(sbx):
    handle = sbx.commands.run("tr a-z A-Z", background=True, stdin=True)
    handle.send_stdin("hello ")
    sbx.commands.send_stdin(handle.pid, b"world\n")
    handle.close_stdin()
    r = handle.wait()
    assert r.stdout == "HELLO WORLD\n", r
    # without stdin=True a command reads end of file at once
    assert sbx.commands.run("cat; echo eof").stdout == "eof\n"


def test_what_runbox_does_not_offer_fails_readably(sbx):
    with pytest.raises(SandboxException) as info:
        sbx.commands.run("id", user="root")
    assert "sandbox user" in str(info.value), info.value
    with pytest.raises(SandboxException) as info:
        sbx.commands.run("true", cwd="/no/such/folder")
    assert "/no/such/folder" in str(info.value), info.value


def test_filesystem_stat_list_make_dir_remove(sbx):
    """envd's filesystem service on the session's files API: exists, get_info, list (with
    depth), make_dir, remove, rename."""
    from e2b import FileType, NotFoundException

    assert sbx.files.make_dir("/home/user/fs/inner") is True
    assert sbx.files.make_dir("/home/user/fs/inner") is False  # it exists already
    sbx.files.write("/home/user/fs/a.txt", "abc")
    sbx.files.write("/home/user/fs/inner/b.txt", "b")
    assert sbx.files.exists("/home/user/fs/a.txt") and not sbx.files.exists("/home/user/fs/none")
    info = sbx.files.get_info("/home/user/fs/a.txt")
    assert (info.name, info.type, info.path, info.size) == ("a.txt", FileType.FILE, "/home/user/fs/a.txt", 3), info
    assert sbx.files.get_info("fs").type == FileType.DIR
    names = sorted(e.path for e in sbx.files.list("/home/user/fs"))
    assert names == ["/home/user/fs/a.txt", "/home/user/fs/inner"], names
    deep = sorted(e.path for e in sbx.files.list("/home/user/fs", depth=2))
    assert deep == ["/home/user/fs/a.txt", "/home/user/fs/inner", "/home/user/fs/inner/b.txt"], deep
    # what commands see is the same folder
    assert sbx.commands.run("ls fs").stdout.split() == ["a.txt", "inner"]
    sbx.files.remove("/home/user/fs/inner")
    assert not sbx.files.exists("/home/user/fs/inner/b.txt")
    with pytest.raises(NotFoundException):
        sbx.files.get_info("/home/user/fs/inner")
    # Move and paths outside /home/user: tests/clients/test_e2b_files.py
    assert sbx.files.rename("/home/user/fs/a.txt", "/home/user/fs/c.txt").path == "/home/user/fs/c.txt"


def test_a_command_past_its_timeout_is_killed(sbx):
    from e2b import TimeoutException

    with pytest.raises(TimeoutException):
        sbx.commands.run("echo $$ > timed.pid; exec sleep 300", timeout=3)
    pid = sbx.files.read("/home/user/timed.pid").strip()
    # the process is gone from the sandbox, not only from the call (polling: the kill is asynchronous)
    deadline = time.monotonic() + 60
    alive = "yes"
    while alive and time.monotonic() < deadline:
        alive = sbx.commands.run(f"kill -0 {pid} 2>/dev/null && echo yes || true").stdout.strip()
        if alive:
            time.sleep(0.3)
    assert not alive, f"process {pid} still runs after its timeout"
    assert not sbx.commands.list()


def _envd(sbx, e2b_server, method, body, ctype):
    import requests

    return requests.post(f"{e2b_server.url}/e2b/{method}", data=body, timeout=120,
                         headers={"Content-Type": ctype, "Connect-Protocol-Version": "1",
                                  "E2b-Sandbox-Id": sbx.sandbox_id, "E2b-Sandbox-Port": "49983",
                                  "X-Access-Token": sbx._envd_access_token or ""})


def _envelopes(raw: bytes) -> list[tuple[int, dict]]:
    import json
    import struct

    out, off = [], 0
    while off < len(raw):
        flags, n = struct.unpack(">BI", raw[off:off + 5])
        out.append((flags, json.loads(raw[off + 5:off + 5 + n])))
        off += 5 + n
    return out


def test_the_connect_wire_as_envd_speaks_it(sbx, e2b_server):
    """The raw stream: start, data (base64), end, then the end-of-stream envelope; bad requests
    answer Connect's error shape with the status Connect gives the code."""
    import base64
    import json
    import struct

    msg = json.dumps({"process": {"cmd": "/bin/sh", "args": ["-c", "printf hi; exit 4"]}, "stdin": False}).encode()
    r = _envd(sbx, e2b_server, "process.Process/Start", struct.pack(">BI", 0, len(msg)) + msg,
              "application/connect+json")
    assert r.status_code == 200 and r.headers["content-type"] == "application/connect+json", r.text
    env = _envelopes(r.content)
    assert [f for f, _ in env] == [0] * (len(env) - 1) + [2], env
    assert "start" in env[0][1]["event"] and env[0][1]["event"]["start"]["pid"] > 0, env
    out = b"".join(base64.b64decode(m["event"]["data"]["stdout"]) for _, m in env if "data" in m.get("event", {}))
    assert out == b"hi"
    end = env[-2][1]["event"]["end"]
    assert (end["exitCode"], end["exited"], end["status"]) == (4, True, "exit status 4"), end
    assert env[-1][1] == {}

    r = _envd(sbx, e2b_server, "process.Process/Start", b"\x00\x00", "application/connect+json")
    assert r.status_code == 400 and r.json()["code"] == "invalid_argument" and "envelope" in r.json()["message"]
    r = _envd(sbx, e2b_server, "process.Process/Start", struct.pack(">BI", 0, 2) + b"{}", "application/connect+proto")
    assert r.status_code == 501 and r.json()["code"] == "unimplemented" and "JSON" in r.json()["message"]
    r = _envd(sbx, e2b_server, "process.Process/SendSignal", b'{"signal": "SIGNAL_SIGKILL"}', "application/json")
    assert r.status_code == 400 and "pid" in r.json()["message"], r.text
    r = _envd(sbx, e2b_server, "process.Process/SendSignal", b'{"process": {"pid": 99999}, "signal": 9}',
              "application/json")
    assert r.status_code == 404 and r.json()["code"] == "not_found", r.text
    r = _envd(sbx, e2b_server, "process.Process/Nope", b"{}", "application/json")
    assert r.status_code == 501 and r.json()["code"] == "unimplemented"

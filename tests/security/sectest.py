"""Helpers of the hostile code suite (tests/security): a real runboxd on a free loopback port
with a temp database, real HTTP, the real Docker engine and the real sandbox image.

Nothing is faked. runboxd is RUNBOX_BIN (default build/runboxd), the image RUNBOX_IMAGE
(default runbox-sandbox:latest). Every container a test makes is labelled by runboxd with its
instance id; teardown deletes the sessions and removes whatever containers of that instance are
left, and every Docker network a test creates is named runbox-test-* and labelled
runbox.test=1.

RUNBOX_TEST_ISOLATION=gvisor runs the same suite under gVisor: conftest's `engine` fixture starts
one nested Docker engine with runsc registered (enginehub.gvisor_suite), every runboxd gets it as
its one engine with --isolation gvisor (ENGINE_ARGS), and `docker` below talks to it. What differs under gVisor is listed in docs/security.md, "Under gVisor".
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

import pytest
import requests

ROOT = Path(__file__).resolve().parents[2]
RUNBOX_BIN = Path(os.environ.get("RUNBOX_BIN", str(ROOT / "build" / "runboxd")))
IMAGE = os.environ.get("RUNBOX_IMAGE", "runbox-sandbox:latest")
# Deadlines for "it never happened" (not timings): generous, the machine is noisy.
DEADLINE_S = float(os.environ.get("RUNBOX_TEST_DEADLINE_S", "90"))
# Peak RSS of runboxd allowed while a sandbox prints 1 GiB (ASan builds need more).
RSS_LIMIT_MB = int(os.environ.get("RUNBOX_RSS_LIMIT_MB", "200"))
FINAL = {"completed", "error", "timeout", "cancelled"}
# the suite's isolation and engine (the host's, or a nested gVisor one: tests/engines/enginehub.py)
sys.path.insert(0, str(ROOT / "tests" / "engines"))
from enginehub import GVISOR, ISOLATION, SUITE_RUNBOXD_ARGS as ENGINE_ARGS, suite_docker_env  # noqa: E402,F401


def gvisor_skip(reason: str):
    """Marks a test that cannot run under gVisor; reason names the difference (docs/security.md)."""
    return pytest.mark.skipif(GVISOR, reason="under gVisor: " + reason)


def docker(*args: str, check: bool = True, timeout: float = 120) -> str:
    """The docker command against the suite's engine (the host's, or the nested gVisor one)."""
    r = subprocess.run(["docker", *args], capture_output=True, text=True, timeout=timeout, env=suite_docker_env())
    if check and r.returncode != 0:
        raise AssertionError(f"docker {' '.join(args)} failed: {r.stderr.strip()}")
    return r.stdout


def containers(label: str) -> list[str]:
    return docker("ps", "-aq", "--no-trunc", "--filter", f"label={label}").split()


def inspect(cid: str) -> dict:
    """docker inspect of a container; cid may be runboxd's ENGINE@ID form (several engines)."""
    return json.loads(docker("inspect", cid.rpartition("@")[2]))[0]


def privilege_separated(cid: str) -> bool:
    """True when the sandbox starts as root with CapAdd KILL/SETGID/SETUID, so that its runner
    separates privileges (docker/runner/PROTOCOL.md: supervisor uid 999, user code uid 1000)."""
    c = inspect(cid)
    return c["Config"]["User"] in ("0", "0:0", "root") and bool(c["HostConfig"].get("CapAdd"))


def supervisor_host_pid(cid: str) -> int:
    """The host pid of a sandbox's supervisor: the child of its docker-init (runc only)."""
    init = inspect(cid)["State"]["Pid"]
    with open(f"/proc/{init}/task/{init}/children") as f:
        return int(f.read().split()[0])


def kill_supervisor(cid: str) -> None:
    """SIGKILLs a sandbox's supervisor from outside user code's reach. runc: from the host, by its
    host pid. gVisor: its processes live in the Sentry and have no host pid, but the supervisor is
    the sandbox's PID 1 (no docker-init), which is what `docker kill` signals (runsc kill). (A
    `docker exec ... kill -KILL 1` does it too, but the exec then hung now and then.)"""
    if not GVISOR:
        os.kill(supervisor_host_pid(cid), signal.SIGKILL)
        return
    cid = cid.rpartition("@")[2]
    cmdline = docker("exec", cid, "cat", "/proc/1/cmdline")
    assert "runner" in cmdline, f"PID 1 of the gVisor sandbox is not the runner's supervisor: {cmdline!r}"
    docker("kill", "--signal", "KILL", cid)


def check_sandbox_oom(server: "Server", sid: str, doc: dict, mib: int) -> None:
    """Under gVisor an out-of-memory is the host's memory cgroup killing the Sentry, so the whole
    sandbox (core/isolation/isolation.h): the execution doc says so, naming the session's
    memory_limit (mib), and the session is dead with that reason."""
    reason = doc["reset_reason"] or ""
    assert doc["status"] == "error" and doc["reset"] is True, short(doc)
    assert f"memory limit ({mib} MiB)" in reason and "create a new session" in reason, short(doc)
    assert doc["error"] is not None and doc["error"]["ename"] == "SessionEnded", short(doc)
    sess = poll(lambda: (lambda d: d if d["status"] == "dead" else None)(server.session(sid)), "the session to end")
    assert f"memory limit ({mib} MiB)" in (sess["end_reason"] or ""), sess
    r = server.http.post(server.url + "/execute", json={"session_id": sid, "code": "1"}, timeout=30)
    assert r.status_code == 409 and "create a new session" in r.json()["error"]["message"], r.text


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def rss_kb(pid: int, field: str = "VmRSS") -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


class Server:
    """One runboxd process (its own db in a temp folder) and the sessions made through it."""

    def __init__(self, workdir: Path, args: list[str] | None = None):
        self.workdir = workdir
        self.args = list(args or [])
        self.db = workdir / "runbox.db"
        self.log_path = workdir / "runboxd.log"
        self.proc: subprocess.Popen | None = None
        self.url = ""
        self.http = requests.Session()
        self.sessions: list[str] = []
        self.instances: set[str] = set()

    # ---- process ----
    def start(self) -> "Server":
        assert RUNBOX_BIN.exists(), f"{RUNBOX_BIN} does not exist: build runboxd first (or set RUNBOX_BIN)"
        for _ in range(3):
            port = free_port()
            self.url = f"http://127.0.0.1:{port}"
            log = open(self.log_path, "ab")
            cmd = [str(RUNBOX_BIN), "--listen", f"127.0.0.1:{port}", "--db", str(self.db), "--image", IMAGE,
                   *ENGINE_ARGS, *self.args]
            self.proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                         cwd=self.workdir)
            log.close()
            end = time.monotonic() + 60
            while time.monotonic() < end and self.proc.poll() is None:
                try:
                    if self.http.get(self.url + "/health", timeout=5).status_code == 200:
                        return self
                except requests.RequestException:
                    pass
                time.sleep(0.1)
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait()
        raise AssertionError(f"runboxd could not be started:\n{self.log_tail()}")

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def log_tail(self, n: int = 60) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-n:])
        except OSError:
            return "(no log)"

    def stop(self) -> None:
        """Deletes the sessions, stops runboxd (SIGTERM), removes the instance's containers."""
        if self.alive():
            for sid in self.sessions:
                for cid in containers(f"runbox.session={sid}"):
                    inst = (inspect(cid)["Config"]["Labels"] or {}).get("runbox.instance")
                    if inst:
                        self.instances.add(inst)
                try:
                    self.http.delete(f"{self.url}/sessions/{sid}", timeout=30)
                except requests.RequestException:
                    pass
            self.proc.terminate()
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        left = set()
        for inst in self.instances:
            left.update(containers(f"runbox.instance={inst}"))
        for sid in self.sessions:
            left.update(containers(f"runbox.session={sid}"))
        if left:
            docker("rm", "-f", "-v", *sorted(left), check=False)

    # ---- API ----
    def create_session(self, **body) -> dict:
        r = self.http.post(self.url + "/sessions", json=body, timeout=DEADLINE_S)
        assert r.status_code in (200, 201), f"POST /sessions {body}: {r.status_code} {r.text}"
        doc = r.json()
        self.sessions.append(doc["session_id"])
        for cid in containers(f"runbox.session={doc['session_id']}") or [doc.get("container_id") or ""]:
            if cid:
                inst = (inspect(cid)["Config"]["Labels"] or {}).get("runbox.instance")
                if inst:
                    self.instances.add(inst)
        return doc

    def session(self, sid: str) -> dict:
        r = self.http.get(f"{self.url}/sessions/{sid}", timeout=30)
        assert r.status_code == 200, r.text
        return r.json()

    def submit(self, sid: str, code: str, timeout: float | None = None) -> str:
        body: dict = {"session_id": sid, "code": code}
        if timeout is not None:
            body["timeout"] = timeout
        r = self.http.post(self.url + "/execute", json=body, timeout=30)
        assert r.status_code in (200, 201, 202), f"POST /execute: {r.status_code} {r.text}"
        return r.json()["request_id"]

    def result(self, rid: str) -> dict:
        end = time.monotonic() + DEADLINE_S + 60
        while time.monotonic() < end:
            r = self.http.get(f"{self.url}/execute/{rid}/results", timeout=30)
            assert r.status_code == 200, r.text
            doc = r.json()
            if doc["status"] in FINAL:
                return doc
            time.sleep(0.1)
        raise AssertionError(f"execution {rid} did not finish")

    def run(self, sid: str, code: str, timeout: float | None = 30) -> dict:
        """Runs code and waits for the final result document."""
        body: dict = {"session_id": sid, "code": code, "wait": True}
        if timeout is not None:
            body["timeout"] = timeout
        r = self.http.post(self.url + "/execute", json=body, timeout=(timeout or 30) + DEADLINE_S)
        assert r.status_code == 200, f"POST /execute: {r.status_code} {r.text[:2000]}"
        doc = r.json()
        if doc["status"] not in FINAL:
            doc = self.result(doc["request_id"])
        return doc

    def value(self, sid: str, code: str, timeout: float | None = 30) -> str:
        """Runs code that must complete; returns the repr of its last expression."""
        doc = self.run(sid, code, timeout)
        assert doc["status"] == "completed", f"{code!r} did not complete: {short(doc)}"
        return doc["result"]

    def health(self) -> dict:
        r = self.http.get(self.url + "/health", timeout=30)
        assert r.status_code == 200, f"/health: {r.status_code} {r.text}"
        return r.json()


def short(doc: dict, n: int = 3000) -> str:
    d = dict(doc)
    for k in ("outputs", "output"):
        d.pop(k, None)
    return json.dumps(d)[:n]


class Neighbour:
    """A session created before the attack, with state that must survive it."""

    def __init__(self, server: Server):
        self.server = server
        self.token = uuid.uuid4().hex
        self.sid = server.create_session()["session_id"]
        assert server.value(self.sid, f"secret = {self.token!r}\nopen('/workspace/mine', 'w').write(secret)") == "32"

    def check(self) -> None:
        """runboxd answers /health, its process lives, and the neighbour kept its state."""
        assert self.server.alive(), f"runboxd died:\n{self.server.log_tail()}"
        h = self.server.health()
        assert h["docker"]["reachable"], h
        assert self.server.value(self.sid, "secret") == repr(self.token)
        assert self.server.value(self.sid, "open('/workspace/mine').read() == secret") == "True"
        assert self.server.session(self.sid)["status"] == "ready"


class RssWatch:
    """Samples a process's VmRSS in the background; .peak_kb is the largest seen."""

    def __init__(self, pid: int):
        self.pid = pid
        self.peak_kb = rss_kb(pid)
        self._stop = threading.Event()
        self._t = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.wait(0.02):
            try:
                self.peak_kb = max(self.peak_kb, rss_kb(self.pid))
            except OSError:
                return

    def __enter__(self) -> "RssWatch":
        self._t.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._t.join()


def poll(cond, what: str, deadline: float = DEADLINE_S, every: float = 0.2):
    """Waits until cond() is truthy; fails naming what never happened."""
    end = time.monotonic() + deadline
    while True:
        v = cond()
        if v:
            return v
        if time.monotonic() > end:
            raise AssertionError(f"never happened within {deadline:g} s: {what}")
        time.sleep(every)

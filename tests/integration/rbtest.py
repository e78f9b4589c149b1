"""Helpers for runbox's integration tests: start and stop a real runboxd, talk to it over real
HTTP on loopback, check answers against openapi.yaml, inspect and clean up Docker objects.

Nothing here fakes anything: runboxd is the binary named by RUNBOX_BIN (default
build/runboxd), Docker is the engine on /var/run/docker.sock, the image is RUNBOX_IMAGE
(default runbox-sandbox:latest).
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Iterator

import requests
import yaml
from jsonschema import Draft202012Validator

ROOT = Path(__file__).resolve().parents[2]
RUNBOX_BIN = Path(os.environ.get("RUNBOX_BIN", str(ROOT / "build" / "runboxd")))
IMAGE = os.environ.get("RUNBOX_IMAGE", "runbox-sandbox:latest")
# Peak RSS runboxd may reach in the output-cap test; ASan builds need more (set by scripts/test).
RSS_LIMIT_MB = int(os.environ.get("RUNBOX_RSS_LIMIT_MB", "200"))
# The suite's isolation and engine: the host's, or under RUNBOX_TEST_ISOLATION=gvisor a nested
# engine with gVisor (tests/engines/enginehub.py; the `engine` fixture of rbfixtures), which every
# runboxd started here uses with --isolation gvisor and every docker command here addresses.
sys.path.insert(0, str(ROOT / "tests" / "engines"))
from enginehub import GVISOR, ISOLATION, SUITE_RUNBOXD_ARGS, suite_docker_env  # noqa: E402,F401

# Generous bounds for polling loops: these are deadlines for "it never happened", not timings.
DEADLINE_S = float(os.environ.get("RUNBOX_TEST_DEADLINE_S", "90"))

SESSION_ID_RE = re.compile(r"^s_[0-9a-f]{32}$")
REQUEST_ID_RE = re.compile(r"^e_[0-9a-f]{32}$")
FINAL_STATUSES = {"completed", "error", "timeout", "cancelled"}
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
SANITIZER_MARKERS = ("ERROR: AddressSanitizer", "ERROR: LeakSanitizer", "runtime error:", "SUMMARY: UndefinedBehaviorSanitizer")
ERROR_CODES = {
    400: {"invalid_request"},
    403: {"forbidden"},
    404: {"not_found"},
    405: {"method_not_allowed"},
    409: {"conflict", "cancelled"},
    413: {"payload_too_large"},
    415: {"unsupported_media_type"},
    401: {"unauthorized"},
    429: {"too_many_requests", "quota_exceeded"},
    500: {"store_error", "internal_error"},
    502: {"upstream_error"},
    503: {"docker_unavailable", "shutting_down"},
    504: {"timeout"},
    507: {"insufficient_storage"},
}

# ---- openapi.yaml as JSON Schema -------------------------------------------------------------

with open(ROOT / "openapi.yaml", encoding="utf-8") as _f:
    OPENAPI = yaml.safe_load(_f)


def schema_validator(name: str) -> Draft202012Validator:
    """A validator for components/schemas/<name> of openapi.yaml (OpenAPI 3.1 = JSON Schema 2020-12)."""
    return Draft202012Validator({"$ref": f"#/components/schemas/{name}", "components": OPENAPI["components"]})


_VALIDATORS: dict[str, Draft202012Validator] = {}


def check_schema(doc: Any, name: str) -> None:
    """Fails with every violation when doc does not match components/schemas/<name>."""
    v = _VALIDATORS.get(name)
    if v is None:
        v = _VALIDATORS[name] = schema_validator(name)
    errors = sorted(v.iter_errors(doc), key=lambda e: list(e.absolute_path))
    if errors:
        lines = [f"  at /{'/'.join(map(str, e.absolute_path))}: {e.message[:300]}" for e in errors[:10]]
        raise AssertionError(f"answer does not match openapi.yaml schema {name}:\n" + "\n".join(lines)
                             + f"\ndocument: {json.dumps(doc)[:2000]}")


def check_error(resp: requests.Response, status: int, mention: str | None = None) -> dict:
    """Asserts resp is `status` with the contract's error body; returns the error object.
    mention: a word the message must contain (case-insensitive), e.g. the bad field."""
    assert resp.status_code == status, f"expected {status}, got {resp.status_code}: {resp.text[:500]}"
    assert resp.headers.get("content-type", "").startswith("application/json"), resp.headers
    body = resp.json()
    check_schema(body, "Error")
    err = body["error"]
    assert err["code"] in ERROR_CODES[status], f"code {err['code']!r} does not go with {status}"
    assert err["message"].strip(), "empty error message"
    if mention is not None:
        assert mention.lower() in err["message"].lower(), f"message should mention {mention!r}: {err['message']!r}"
    return err


# ---- Docker (CLI) ----------------------------------------------------------------------------

def _docker(args, **kw) -> subprocess.CompletedProcess:
    """The docker command against the suite's engine."""
    return subprocess.run(["docker", *args], env=suite_docker_env(), **kw)


def docker(*args: str, check: bool = True) -> str:
    p = _docker(args, capture_output=True, text=True, timeout=120)
    if check and p.returncode != 0:
        raise AssertionError(f"docker {' '.join(args)} failed: {p.stderr.strip()}")
    return p.stdout.strip()


def docker_reachable() -> bool:
    try:
        _docker(["version", "--format", "{{.Server.APIVersion}}"], check=True, capture_output=True, timeout=30)
        return True
    except (OSError, subprocess.SubprocessError):
        return False


def image_exists(name: str = IMAGE) -> bool:
    return _docker(["image", "inspect", name], capture_output=True).returncode == 0


def require_sandbox_image() -> str:
    """The sandbox image's name; fails (never skips) the calling test when Docker is unreachable
    or the image is missing, naming the command that builds it. For the `sandbox_image` fixtures."""
    import pytest

    if not docker_reachable():
        pytest.fail("the Docker engine is not reachable on /var/run/docker.sock: these tests need it")
    if not image_exists():
        pytest.fail(f"the sandbox image {IMAGE} does not exist: build it with docker/build-images "
                    "(scripts/setup does)")
    return IMAGE


def finish_servers(servers: list["Server"]) -> None:
    """Cleans up every server (sessions, containers) and fails the calling test if any runboxd
    died on its own or a sanitizer reported something in its log. For fixture teardown."""
    import pytest

    problems = []
    for s in servers:
        found = s.cleanup()
        if found:
            problems.append(f"{s.log_path}:\n  " + "\n  ".join(found) + "\n--- log tail ---\n" + s.log_tail(80))
    if problems:
        pytest.fail("runboxd problems:\n" + "\n".join(problems), pytrace=False)


def containers_with_label(label: str) -> list[str]:
    """Ids of all containers (running or not) carrying label ("k" or "k=v")."""
    out = docker("ps", "-aq", "--no-trunc", "--filter", f"label={label}")
    return [line for line in out.splitlines() if line]


def engine_id(container_id: str) -> str:
    """The engine's id of a session's container_id: runboxd's ENGINE@ID form (with --engine, as
    under RUNBOX_TEST_ISOLATION=gvisor) is ID."""
    return container_id.rpartition("@")[2]


def container_exists(container_id: str) -> bool:
    """True while the container exists (running or not). Sessions may use a warm-pool container
    whose runbox.session label names the pool, so tests find a session's container by id."""
    return _docker(["inspect", "--type", "container", engine_id(container_id)],
                   capture_output=True).returncode == 0


def inspect(container: str) -> dict:
    """docker inspect of a container (a session's container_id, engine_id)."""
    return json.loads(docker("inspect", engine_id(container)))[0]


def remove_containers(ids: list[str]) -> None:
    if ids:
        docker("rm", "-f", "-v", *ids, check=False)


def wait_until(pred, what: str, deadline: float = DEADLINE_S, interval: float = 0.2):
    """Polls pred() until it returns a truthy value (returned) or the deadline passes (fails)."""
    end = time.monotonic() + deadline
    last = None
    while True:
        last = pred()
        if last:
            return last
        if time.monotonic() > end:
            raise AssertionError(f"timed out after {deadline:.0f} s waiting for {what} (last: {last!r})")
        time.sleep(interval)


# ---- runboxd ---------------------------------------------------------------------------------

def pure_wheel(name: str, version: str, files: dict[str, bytes]) -> bytes:
    """The bytes of a pure-Python wheel of distribution NAME (its file name is
    f"{name}-{version}-py3-none-any.whl") holding FILES (path in site-packages -> content), with
    the METADATA, WHEEL and RECORD that pip checks: for tests that install without an index."""
    import base64
    import hashlib
    import io
    import zipfile
    dist = f"{name}-{version}.dist-info"
    files = {**files, f"{dist}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n".encode(),
             f"{dist}/WHEEL": b"Wheel-Version: 1.0\nGenerator: runbox-test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"}
    record = [f"{path},sha256={base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b'=').decode()},{len(data)}"
              for path, data in files.items()]
    files[f"{dist}/RECORD"] = ("\n".join(record + [f"{dist}/RECORD,,"]) + "\n").encode()
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        for path, data in files.items():
            z.writestr(path, data)
    return buf.getvalue()


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def peak_rss_mb(pid: int) -> float:
    """Peak resident set size (VmHWM) of a live process, in MiB."""
    with open(f"/proc/{pid}/status", encoding="ascii") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    raise AssertionError("no VmHWM in /proc/<pid>/status")


class Server:
    """One runboxd process on a free loopback port with its own database file.

    stop() ends it with SIGTERM, kill9() with SIGKILL; start() again re-uses the same database
    (restart persistence). cleanup() deletes every session it knows and removes the containers of
    its instance (the runbox.instance label of its db), so no test leaves Docker objects behind.
    """

    def __init__(self, workdir: Path, args: list[str] | None = None, name: str = "runboxd",
                 wait_docker: bool = True):
        self.workdir = workdir
        self.db = workdir / f"{name}.db"
        self.log_path = workdir / f"{name}.log"
        self.args = list(args or [])
        self.proc: subprocess.Popen | None = None
        self.port = 0
        self.url = ""
        self.http = requests.Session()
        self.session_ids: set[str] = set()
        self.instances: set[str] = set()
        self.expect_dead = False
        self.wait_docker = wait_docker
        self.container_ids: set[str] = set()
        self._log_file = None

    # -- process --
    def start(self, extra: list[str] | None = None) -> "Server":
        if not RUNBOX_BIN.exists():
            raise AssertionError(f"{RUNBOX_BIN} does not exist: build it with scripts/setup (or set RUNBOX_BIN)")
        args = self.args + list(extra or [])
        last_error = ""
        for _ in range(3):  # a port picked by free_port() can be taken by someone else meanwhile
            self.port = free_port()
            self.url = f"http://127.0.0.1:{self.port}"
            self._log_file = open(self.log_path, "ab")
            cmd = [str(RUNBOX_BIN), "--listen", f"127.0.0.1:{self.port}", "--db", str(self.db),
                   "--image", IMAGE, "--log-level", "debug", *SUITE_RUNBOXD_ARGS, *args]
            self._log_file.write(f"\n==== {' '.join(cmd)}\n".encode())
            self._log_file.flush()
            self.proc = subprocess.Popen(cmd, stdout=self._log_file, stderr=subprocess.STDOUT,
                                         stdin=subprocess.DEVNULL, cwd=self.workdir)
            self.expect_dead = False
            end = time.monotonic() + 60
            while time.monotonic() < end:
                if self.proc.poll() is not None:
                    last_error = f"runboxd exited with {self.proc.returncode}:\n{self.log_tail()}"
                    break
                try:
                    r = self.http.get(self.url + "/health", timeout=5)
                    # Ready: answering, and (unless told otherwise) connected to Docker.
                    if r.status_code == 200 and (not self.wait_docker or r.json()["docker"]["reachable"]):
                        return self
                except (requests.RequestException, ValueError, KeyError, TypeError):
                    pass
                time.sleep(0.1)
            else:
                self.kill9()
                raise AssertionError(f"runboxd was not ready (/health 200{', Docker reachable' if self.wait_docker else ''}) "
                                     f"within 60 s:\n{self.log_tail()}")
            self._close_log()
        raise AssertionError(f"runboxd could not be started: {last_error}")

    def _close_log(self) -> None:
        if self._log_file is not None:
            self._log_file.close()
            self._log_file = None

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def stop(self) -> int | None:
        """SIGTERM, then SIGKILL after 20 s. Returns the exit status."""
        if self.proc is None:
            return None
        self.http.close()  # idle keep-alive connections would delay runboxd's graceful exit
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        rc = self.proc.returncode
        self.proc = None
        self._close_log()
        return rc

    def kill9(self) -> None:
        if self.proc is not None:
            if self.proc.poll() is None:
                self.proc.kill()
            self.proc.wait(10)
            self.proc = None
        self._close_log()

    def restart(self, extra: list[str] | None = None) -> "Server":
        self.stop()
        return self.start(extra)

    def log_text(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")
        except OSError:
            return ""

    def log_tail(self, n: int = 60) -> str:
        return "\n".join(self.log_text().splitlines()[-n:])

    def sanitizer_reports(self) -> list[str]:
        text = self.log_text()
        return [line for line in text.splitlines() if any(m in line for m in SANITIZER_MARKERS)]

    # -- HTTP --
    def request(self, method: str, path: str, **kw) -> requests.Response:
        kw.setdefault("timeout", 180)
        return self.http.request(method, self.url + path, **kw)

    def get(self, path: str, **kw) -> requests.Response:
        return self.request("GET", path, **kw)

    def post(self, path: str, body: Any = None, **kw) -> requests.Response:
        if body is not None:
            kw["json"] = body
        return self.request("POST", path, **kw)

    def delete(self, path: str, **kw) -> requests.Response:
        return self.request("DELETE", path, **kw)

    # -- API helpers that check the contract on the way --
    def create_session(self, body: dict | None = None, **kw) -> dict:
        r = self.post("/sessions", body if body is not None else {}, **kw)
        assert r.status_code == 201, f"POST /sessions: {r.status_code} {r.text[:1000]}\n{self.log_tail(30)}"
        s = r.json()
        check_schema(s, "Session")
        self.track(s)
        return s

    def track(self, session: dict) -> None:
        self.session_ids.add(session["session_id"])
        if session.get("container_id"):
            self.container_ids.add(session["container_id"])
            try:
                labels = inspect(session["container_id"])["Config"]["Labels"] or {}
                if labels.get("runbox.instance"):
                    self.instances.add(labels["runbox.instance"])
            except AssertionError:
                pass

    def session(self, sid: str) -> dict:
        r = self.get(f"/sessions/{sid}")
        assert r.status_code == 200, r.text
        check_schema(r.json(), "Session")
        return r.json()

    def execute(self, sid: str, code: str, *, wait: bool = True, timeout: float | None = None,
                expect: int | None = None) -> dict:
        body: dict[str, Any] = {"session_id": sid, "code": code}
        if wait:
            body["wait"] = True
        if timeout is not None:
            body["timeout"] = timeout
        r = self.post("/execute", body)
        want = expect if expect is not None else (200 if wait else 202)
        assert r.status_code == want, f"POST /execute: {r.status_code} {r.text[:1000]}"
        doc = r.json()
        check_schema(doc, "Result" if want == 200 else "ExecutionStatus")
        return doc

    def status(self, rid: str) -> dict:
        r = self.get(f"/execute/{rid}/status")
        assert r.status_code == 200, r.text
        check_schema(r.json(), "ExecutionStatus")
        return r.json()

    def results(self, rid: str) -> dict:
        r = self.get(f"/execute/{rid}/results")
        assert r.status_code == 200, r.text
        check_schema(r.json(), "Result")
        return r.json()

    def wait_status(self, rid: str, statuses: set[str] | str, deadline: float = DEADLINE_S) -> dict:
        want = {statuses} if isinstance(statuses, str) else statuses

        def check():
            st = self.status(rid)
            return st if st["status"] in want else None

        return wait_until(check, f"execution {rid} to reach {sorted(want)}", deadline)

    def wait_done(self, rid: str, deadline: float = DEADLINE_S) -> dict:
        self.wait_status(rid, FINAL_STATUSES, deadline)
        return self.results(rid)

    def delete_session(self, sid: str) -> dict:
        r = self.delete(f"/sessions/{sid}")
        assert r.status_code == 200, r.text
        check_schema(r.json(), "Session")
        return r.json()

    def db_volume_ids(self) -> set[str] | None:
        """The ids of the named volumes runboxd's database holds (core/volumes/), or None if it
        cannot be read."""
        try:
            con = sqlite3.connect(f"file:{self.db}?mode=ro", uri=True, timeout=5)
            try:
                return {row[0] for row in con.execute("SELECT volume_id FROM volumes")}
            finally:
                con.close()
        except sqlite3.Error:
            return None

    def db_instance(self) -> str | None:
        """The instance id runboxd keeps in its database (label runbox.instance of every container
        it creates, warm-pool ones included), or None if it cannot be read."""
        try:
            con = sqlite3.connect(f"file:{self.db}?mode=ro", uri=True, timeout=5)
            try:
                row = con.execute("SELECT value FROM meta WHERE key = 'instance'").fetchone()
            finally:
                con.close()
            return row[0] if row else None
        except sqlite3.Error:
            return None

    # -- cleanup --
    def cleanup(self) -> list[str]:
        """Deletes every live session, stops runboxd, removes its instance's containers.
        Returns problems found (runboxd died on its own, sanitizer reports)."""
        problems = []
        if self.proc is not None and self.proc.poll() is not None and not self.expect_dead:
            problems.append(f"runboxd exited on its own with status {self.proc.returncode}")
        if self.alive():
            try:
                r = self.get("/sessions", timeout=30)
                if r.status_code == 200:
                    for s in r.json().get("sessions", []):
                        self.track(s)
                for sid in list(self.session_ids):
                    for cid in containers_with_label(f"runbox.session={sid}"):
                        try:
                            labels = inspect(cid)["Config"]["Labels"] or {}
                        except AssertionError:
                            if container_exists(cid):
                                raise
                            continue  # a session deleted just before: its removal finished since the listing
                        if labels.get("runbox.instance"):
                            self.instances.add(labels["runbox.instance"])
                    self.delete(f"/sessions/{sid}", timeout=30)
            except (requests.RequestException, AssertionError) as e:
                problems.append(f"cleanup through the API failed: {e}")
        was_running = self.alive()
        rc = self.stop()
        if was_running and rc != 0:
            problems.append(f"runboxd exited with status {rc} after SIGTERM (expected 0; -9 means it hung)")
        inst = self.db_instance()
        if inst:
            self.instances.add(inst)
        leftovers = []
        for inst in self.instances:
            leftovers += containers_with_label(f"runbox.instance={inst}")
        for sid in self.session_ids:
            leftovers += containers_with_label(f"runbox.session={sid}")
        leftovers += [cid for cid in self.container_ids if container_exists(cid)]
        remove_containers(sorted(set(leftovers)))
        # workspace volumes a helper held until after runboxd stopped (the test removed the helper
        # just now): runboxd's next start would remove them; this one does not start again
        for inst in self.instances:
            vols = docker("volume", "ls", "-q", "--filter", f"label=runbox.workspace={inst}", check=False).split()
            if vols:
                _docker(["volume", "rm", *vols], capture_output=True, timeout=120)
        # named volumes outlive their sessions and runboxd by design: the test's are removed
        # here; one the database no longer names was deleted through the API, and runboxd
        # answered only once the engine had removed it: left behind, it is a problem
        known = self.db_volume_ids()
        for inst in self.instances:
            out = docker("volume", "ls", "--filter", "label=runbox.volume", "--filter", f"label=runbox.instance={inst}",
                         "--format", '{{.Name}} {{.Label "runbox.volume"}}', check=False)
            named = [line.split() for line in out.splitlines() if len(line.split()) == 2]
            deleted = [name for name, vid in named if known is not None and vid not in known]
            if deleted:
                problems.append(f"volumes deleted through the API (or whose creation failed) left in the engine: "
                                f"{deleted}")
            if named:
                _docker(["volume", "rm", "-f", *(name for name, _ in named)], capture_output=True, timeout=120)
        # kept workspaces (hibernated sessions) go with their session, before runboxd stops
        for inst in self.instances:
            kept = docker("volume", "ls", "-q", "--filter", f"label=runbox.keep={inst}", check=False).split()
            if kept:
                problems.append(f"kept workspace volumes left after their sessions were deleted: {kept}")
                _docker(["volume", "rm", "-f", *kept], capture_output=True, timeout=120)
        problems += [f"sanitizer: {line}" for line in self.sanitizer_reports()]
        return problems


# ---- Server-Sent Events ----------------------------------------------------------------------

class SSEEvent:
    def __init__(self, event: str, data: str, id: str | None):
        self.event = event
        self.data = data
        self.id = id

    def json(self) -> Any:
        return json.loads(self.data)

    def __repr__(self) -> str:
        return f"SSEEvent({self.event!r}, id={self.id!r}, data={self.data[:80]!r})"


def read_sse(resp: requests.Response) -> tuple[list[str], list[SSEEvent]]:
    """Reads a whole text/event-stream (until the server ends it). Returns the comment lines and
    the events, in order."""
    comments: list[str] = []
    events: list[SSEEvent] = []
    event, data, eid = None, [], None
    for raw in _lines(resp):
        line = raw.decode("utf-8")
        if line == "":
            if data or event:
                events.append(SSEEvent(event or "message", "\n".join(data), eid))
            event, data, eid = None, [], None
            continue
        if line.startswith(":"):
            comments.append(line)
            continue
        field, _, value = line.partition(":")
        if value.startswith(" "):
            value = value[1:]
        if field == "event":
            event = value
        elif field == "data":
            data.append(value)
        elif field == "id":
            eid = value
    return comments, events


def mcp_answer(resp: requests.Response, rid: Any = None) -> dict:
    """The JSON-RPC response in an answer to an MCP POST, framed either way the transport allows:
    application/json, or an event stream (runboxd's framing when Accept names
    text/event-stream). In a stream, the message with id rid (the only response when rid is
    None); progress and log notifications before it are skipped."""
    if not resp.headers.get("Content-Type", "").startswith("text/event-stream"):
        return resp.json()
    msgs = [json.loads(line[5:]) for line in resp.text.splitlines() if line.startswith("data:") and line[5:].strip()]
    answers = [m for m in msgs if "method" not in m and (rid is None or m.get("id") == rid)]
    assert len(answers) == 1, resp.text[:2000]
    return answers[0]


def _lines(resp: requests.Response) -> Iterator[bytes]:
    buf = b""
    for chunk in resp.iter_content(chunk_size=None):
        buf += chunk
        while True:
            i = buf.find(b"\n")
            if i < 0:
                break
            line, buf = buf[:i], buf[i + 1:]
            yield line.rstrip(b"\r")
    if buf:
        yield buf

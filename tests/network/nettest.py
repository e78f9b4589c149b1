"""Helpers of the network-by-policy suite (tests/network): a real runboxd (RUNBOX_BIN, default
build/runboxd) on a free loopback port with its own database, driven over real HTTP, against
the real Docker engine and the sandbox image (RUNBOX_IMAGE, default runbox-sandbox:latest).

Runboxd.finish() deletes the sessions it made, stops runboxd, and then fails the test when a
container or network of its instance (labels runbox.managed=1 and runbox.instance=<its id>)
is still there after a bounded poll (it removes them either way).

Inside a networked sandbox the proxy is http://egress:3128; its refusals are HTTP 403 with the
body `runbox egress proxy refused HOST:PORT: REASON` and the header X-Runbox-Refused: REASON.
"""

from __future__ import annotations

import ast
import json
import os
import signal
import socket
import sqlite3
import subprocess
import time
from pathlib import Path
from typing import Any

import requests

from inet import DEADLINE_S, IMAGE, docker, poll

ROOT = Path(__file__).resolve().parents[2]
RUNBOX_BIN = Path(os.environ.get("RUNBOX_BIN", str(ROOT / "build" / "runboxd")))
FINAL = {"completed", "error", "timeout", "cancelled"}
CA_PATH = "/workspace/ca.pem"  # where tests upload the test CA into a session
# Environment that makes every client in the sandbox trust the test CA (uploaded to CA_PATH).
CA_ENV = {"SSL_CERT_FILE": CA_PATH, "REQUESTS_CA_BUNDLE": CA_PATH, "PIP_CERT": CA_PATH,
          "NODE_EXTRA_CA_CERTS": CA_PATH, "npm_config_cafile": CA_PATH}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def objects(kind: str, *labels: str) -> list[str]:
    """Ids of the containers (kind "container", running or not) or networks (kind "network")
    carrying every one of LABELS ("k=v")."""
    filters = [a for lb in labels for a in ("--filter", f"label={lb}")]
    if kind == "container":
        return docker("ps", "-aq", "--no-trunc", *filters).split()
    return docker("network", "ls", "-q", "--no-trunc", *filters).split()


def egress_objects(sid: str) -> dict[str, list[str]]:
    """The egress proxy containers and networks of session SID (labels runbox.session=SID and
    runbox.role=egress)."""
    labels = (f"runbox.session={sid}", "runbox.role=egress")
    return {"containers": objects("container", *labels), "networks": objects("network", *labels)}


def named(objs: dict[str, list[str]]) -> dict[str, list[str]]:
    """{"containers": [ids], "networks": [ids]} with names instead of ids (for messages)."""
    return {k: [docker(*(["network"] if k == "networks" else []), "inspect", "-f", "{{.Name}}", i,
                       check=False).strip().lstrip("/") or i for i in v] for k, v in objs.items()}


def short(doc: Any, n: int = 2500) -> str:
    return json.dumps(doc)[:n]


class Runboxd:
    """One runboxd process and the sessions made through it. start() again after kill9()
    re-uses the same database (the restart tests)."""

    def __init__(self, workdir: Path, args: list[str]):
        self.workdir = workdir
        self.args = list(args)
        self.db = workdir / "runbox.db"
        self.log_path = workdir / "runboxd.log"
        self.proc: subprocess.Popen | None = None
        self.url = ""
        self.http = requests.Session()
        self.sessions: list[str] = []
        self.instance: str | None = None

    # ---- process ---------------------------------------------------------------------------
    def start(self) -> "Runboxd":
        assert RUNBOX_BIN.exists(), f"{RUNBOX_BIN} does not exist: build runboxd first (or set RUNBOX_BIN)"
        last = ""
        for _ in range(3):  # a port from free_port() may be taken meanwhile
            port = free_port()
            self.url = f"http://127.0.0.1:{port}"
            cmd = [str(RUNBOX_BIN), "--listen", f"127.0.0.1:{port}", "--db", str(self.db), "--image", IMAGE,
                   "--log-level", "debug", *self.args]
            with open(self.log_path, "ab") as log:
                log.write(f"\n==== {' '.join(cmd)}\n".encode())
                log.flush()
                self.proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                             cwd=self.workdir)
            end = time.monotonic() + 60
            while time.monotonic() < end:
                if self.proc.poll() is not None:
                    last = f"runboxd exited with {self.proc.returncode}:\n{self.log_tail()}"
                    self.proc = None
                    break
                try:
                    r = self.http.get(self.url + "/health", timeout=5)
                    if r.status_code == 200 and r.json().get("docker", {}).get("reachable"):
                        self.instance = self.db_instance() or self.instance
                        return self
                except (requests.RequestException, ValueError):
                    pass
                time.sleep(0.1)
            else:
                self.kill9()
                raise AssertionError(f"runboxd was not ready within 60 s:\n{self.log_tail()}")
            if "address already in use" not in last.lower():
                break
        raise AssertionError(f"runboxd could not be started: {last}")

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def kill9(self) -> None:
        """SIGKILL: runboxd gets no chance to clean up (the restart tests)."""
        if self.proc is not None:
            if self.proc.poll() is None:
                self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(30)
            self.proc = None
        self.http.close()

    def stop(self) -> int | None:
        """SIGTERM, then SIGKILL after 30 s; the exit status."""
        if self.proc is None:
            return None
        self.http.close()
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        rc = self.proc.returncode
        self.proc = None
        return rc

    def log_tail(self, n: int = 60) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-n:])
        except OSError:
            return "(no log)"

    def db_instance(self) -> str | None:
        """The instance id runboxd keeps in its database (its containers' runbox.instance label)."""
        try:
            con = sqlite3.connect(f"file:{self.db}?mode=ro", uri=True, timeout=5)
            try:
                row = con.execute("SELECT value FROM meta WHERE key = 'instance'").fetchone()
            finally:
                con.close()
            return row[0] if row else None
        except sqlite3.Error:
            return None

    def leftovers(self) -> dict[str, list[str]]:
        """Containers and networks of this runboxd's instance (runbox.managed=1)."""
        if not self.instance:
            return {"containers": [], "networks": []}
        labels = ("runbox.managed=1", f"runbox.instance={self.instance}")
        return {"containers": objects("container", *labels), "networks": objects("network", *labels)}

    def finish(self) -> list[str]:
        """Deletes the sessions, stops runboxd (SIGTERM), waits (bounded) for its instance's
        containers and networks to go; returns the problems found (and removes what is left)."""
        problems = []
        self.instance = self.db_instance() or self.instance
        if self.alive():
            for sid in self.sessions:
                try:
                    self.http.delete(f"{self.url}/sessions/{sid}", timeout=60)
                except requests.RequestException as e:
                    problems.append(f"DELETE /sessions/{sid}: {e}")
        elif self.proc is not None:
            problems.append(f"runboxd exited on its own with status {self.proc.returncode}:\n{self.log_tail(40)}")
        rc = self.stop()
        if rc not in (None, 0):
            problems.append(f"runboxd exited with {rc} after SIGTERM (expected 0)")
        try:
            log = self.log_path.read_text(errors="replace")
        except OSError:
            log = ""
        if "Sanitizer" in log or "runtime error:" in log:
            problems.append(f"a sanitizer reported something in {self.log_path}:\n{self.log_tail(40)}")
        left: dict[str, list[str]] = {}
        try:
            poll(lambda: not any(self.leftovers().values()), "runboxd's containers and networks removed", DEADLINE_S)
        except AssertionError:
            left = self.leftovers()
            problems.append(f"runboxd (instance {self.instance}) left behind {named(left)}")
        # whatever happened: nothing of this runboxd's stays on the engine
        for sid in self.sessions:
            for kind in ("container", "network"):
                for oid in objects(kind, f"runbox.session={sid}"):
                    left.setdefault(kind + "s", []).append(oid)
        cids = sorted(set(left.get("containers", [])))
        if cids:
            docker("rm", "-f", "-v", *cids, check=False)
        for nid in sorted(set(left.get("networks", []))):
            docker("network", "rm", nid, check=False)
        return problems

    def end_sessions(self, sids: list[str]) -> None:
        """Deletes sessions SIDS (those still live) if runboxd runs."""
        if self.alive():
            for sid in sids:
                try:
                    self.http.delete(f"{self.url}/sessions/{sid}", timeout=60)
                except requests.RequestException:
                    pass

    # ---- API -------------------------------------------------------------------------------
    def post_session(self, body: dict) -> requests.Response:
        r = self.http.post(self.url + "/sessions", json=body, timeout=DEADLINE_S + 60)
        if r.status_code == 201:
            self.sessions.append(r.json()["session_id"])
        return r

    def create(self, language: str = "python", network: Any = None, env: dict | None = None,
               ca: bool = True) -> dict:
        """A session (asserts 201). NETWORK: the execution_options.network value (None: not
        given). With CA (and a network), the test CA is uploaded to CA_PATH and CA_ENV set, so
        that Python, pip, Node and npm in the sandbox trust the test servers."""
        opts: dict[str, Any] = {}
        if network is not None:
            opts["network"] = network
        envs = dict(env or {})
        if ca and network not in (None, False):
            envs = {**CA_ENV, **envs}
        if envs:
            opts["environment_variables"] = envs
        body: dict[str, Any] = {"language": language}
        if opts:
            body["execution_options"] = opts
        r = self.post_session(body)
        assert r.status_code == 201, f"POST /sessions {short(body)}: {r.status_code} {r.text[:1500]}\n{self.log_tail(20)}"
        s = r.json()
        if ca and network not in (None, False):
            self.upload(s["session_id"], "ca.pem", self.ca_text)
        return s

    ca_text = ""  # the test CA's PEM (set by the fixture that starts this runboxd)

    def session(self, sid: str) -> dict:
        r = self.http.get(f"{self.url}/sessions/{sid}", timeout=30)
        assert r.status_code == 200, f"GET /sessions/{sid}: {r.status_code} {r.text[:500]}"
        return r.json()

    def put_network(self, sid: str, network: Any) -> requests.Response:
        return self.http.put(f"{self.url}/sessions/{sid}/network", json={"network": network}, timeout=DEADLINE_S)

    def upload(self, sid: str, path: str, data: str | bytes) -> None:
        r = self.http.post(f"{self.url}/sessions/{sid}/files", params={"path": path},
                           data=data.encode() if isinstance(data, str) else data,
                           headers={"Content-Type": "application/octet-stream"}, timeout=60)
        assert r.status_code in (200, 201), f"upload {path}: {r.status_code} {r.text[:500]}"

    def delete(self, sid: str) -> dict:
        r = self.http.delete(f"{self.url}/sessions/{sid}", timeout=60)
        assert r.status_code == 200, f"DELETE /sessions/{sid}: {r.status_code} {r.text[:500]}"
        return r.json()

    def run(self, sid: str, code: str, timeout: float = 60) -> dict:
        """Runs CODE (waits for the result document)."""
        body = {"session_id": sid, "code": code, "wait": True, "timeout": timeout}
        r = self.http.post(self.url + "/execute", json=body, timeout=timeout + DEADLINE_S)
        assert r.status_code == 200, f"POST /execute: {r.status_code} {r.text[:1500]}"
        doc = r.json()
        end = time.monotonic() + DEADLINE_S + timeout
        while doc["status"] not in FINAL:
            assert time.monotonic() < end, f"execution {doc['request_id']} did not finish"
            time.sleep(0.2)
            doc = self.http.get(f"{self.url}/execute/{doc['request_id']}/results", timeout=30).json()
        return doc

    def ok(self, sid: str, code: str, timeout: float = 60) -> dict:
        """Runs CODE, which must complete; the result document."""
        doc = self.run(sid, code, timeout)
        assert doc["status"] == "completed", f"{code[:300]!r} did not complete: {short(doc)}"
        return doc

    def value(self, sid: str, code: str, timeout: float = 60) -> Any:
        """Runs Python CODE, which must complete, whose last expression is a literal (dict,
        str, int, None...); returns it (the cell's repr, read back)."""
        doc = self.ok(sid, code, timeout)
        assert doc.get("result") is not None, f"no value: {short(doc)}"
        return ast.literal_eval(doc["result"])


# ---- code run inside the sandbox -------------------------------------------------------------

# Python: FETCH(url) through the proxy from the environment (urllib), as a dict: status, body
# (start), refusal header, or error (exception type and text). Never raises.
FETCH_PY = r'''
import urllib.request, urllib.error, ssl, socket
def fetch(url, timeout=30):
    try:
        with urllib.request.urlopen(url, timeout=timeout) as r:
            return {"status": r.status, "body": r.read(300).decode("latin-1"), "refused": None}
    except urllib.error.HTTPError as e:
        return {"status": e.code, "body": e.read(300).decode("latin-1"), "refused": e.headers.get("X-Runbox-Refused")}
    except Exception as e:
        return {"status": None, "error": type(e).__name__ + ": " + str(e), "body": "", "refused": None}
'''


def fetcher(srv: Runboxd, **kw) -> str:
    """A python session (kw: Runboxd.create's arguments) with FETCH_PY's fetch() defined in it."""
    sid = srv.create(**kw)["session_id"]
    srv.ok(sid, FETCH_PY)
    return sid


def fetch(srv: Runboxd, sid: str, url: str) -> dict:
    """fetch(URL) in session SID (made by fetcher): {status, body, refused} or {status: None, error}."""
    return srv.value(sid, f"fetch({url!r})")

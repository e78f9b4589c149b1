"""compose.yaml, for real (issue 10, "Self-hosting with compose"): the server image is built
offline (scripts/build-server-image, under a tag of the test's own), `docker compose up -d` (or
docker-compose v1) starts runboxd from compose.yaml with its port published on a free loopback
port (RUNBOX_PORT) under a project name of the test's own; the curl walkthrough and one MCP call
go through the published port; `restart` must keep a session and its variables; `down -v` must
leave no container, network, volume or sandbox behind, and the test removes its image.

Skipped, with the reason, only where neither `docker compose` nor `docker-compose` exists
(scripts/setup installs docker-compose). Needs root (debootstrap), as scripts/test does.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
import uuid
from pathlib import Path

import anyio
import pytest
import requests
from mcp import Client

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "integration"))

import rbtest  # noqa: E402

ROOT = rbtest.ROOT


def compose_command() -> list[str] | None:
    try:
        if subprocess.run(["docker", "compose", "version"], capture_output=True, timeout=60).returncode == 0:
            return ["docker", "compose"]
    except (OSError, subprocess.SubprocessError):
        pass
    return ["docker-compose"] if shutil.which("docker-compose") else None


class Deployment:
    """One compose project of compose.yaml: its name, port, image and the commands on it."""

    def __init__(self, cmd: list[str], image: str):
        self.cmd = cmd
        self.project = "runbox-compose-test-" + uuid.uuid4().hex[:10]
        self.image = image
        self.port = 0
        self.instance: str | None = None  # runbox.instance of the runboxd in the container
        self.log: list[str] = []  # every compose command run, with its duration

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def compose(self, *args: str, check: bool = True, timeout: float = 300) -> subprocess.CompletedProcess:
        env = {k: v for k, v in os.environ.items() if not k.startswith("COMPOSE_")}
        env.update(RUNBOX_PORT=str(self.port), RUNBOX_SERVER_IMAGE=self.image)
        argv = [*self.cmd, "-f", str(ROOT / "compose.yaml"), "-p", self.project, *args]
        start = time.monotonic()
        p = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout)
        self.log.append(f"RUNBOX_PORT={self.port} RUNBOX_SERVER_IMAGE={self.image} {' '.join(argv[:len(self.cmd)])} "
                        f"-p {self.project} {' '.join(args)}  ({time.monotonic() - start:.1f} s, exit {p.returncode})")
        if check and p.returncode != 0:
            raise AssertionError(f"{' '.join(argv)} failed ({p.returncode}):\n{p.stdout}\n{p.stderr}")
        return p

    def up(self) -> None:
        for attempt in range(3):  # a free port can be taken by someone else before compose binds it
            self.port = rbtest.free_port()
            p = self.compose("up", "-d", "--no-build", check=False)
            if p.returncode == 0:
                return
            self.compose("down", "-v", "--remove-orphans", check=False)
            if "already allocated" not in p.stderr and "address already in use" not in p.stderr:
                break
        raise AssertionError(f"compose up failed:\n{p.stdout}\n{p.stderr}")

    def container(self) -> dict:
        ids = rbtest.containers_with_label(f"com.docker.compose.project={self.project}")
        assert len(ids) == 1, ids
        return rbtest.inspect(ids[0])

    def wait_healthy(self) -> dict:
        def healthy():
            try:
                r = requests.get(self.url + "/health", timeout=5)
                return r.status_code == 200 and r.json()["docker"]["reachable"] and r.json()
            except (requests.RequestException, ValueError, KeyError):
                return False

        return rbtest.wait_until(healthy, f"runboxd in compose project {self.project} to answer /health "
                                 f"(logs: {self.cmd} -p {self.project} logs)", deadline=90)

    def leftovers(self, instance: str | None) -> list[str]:
        label = f"label=com.docker.compose.project={self.project}"
        found = []
        for kind in ("container", "network", "volume"):
            ls = ["ps", "-aq", "--filter", label] if kind == "container" else [kind, "ls", "-q", "--filter", label]
            found += [f"{kind} {x}" for x in rbtest.docker(*ls).split()]
        if instance:
            found += [f"sandbox container {x}" for x in rbtest.containers_with_label(f"runbox.instance={instance}")]
        return found


@pytest.fixture
def deployment(sandbox_image):
    cmd = compose_command()
    if cmd is None:
        pytest.skip("neither `docker compose` (the Compose plugin) nor `docker-compose` is installed; "
                    "scripts/setup installs Debian's docker-compose")
    if os.geteuid() != 0:
        pytest.fail("this test builds the server image with debootstrap: run it as root (scripts/test does)")
    image = "runboxd:compose-test-" + uuid.uuid4().hex[:10]
    d = Deployment(cmd, image)
    start = time.monotonic()
    p = subprocess.run([str(ROOT / "scripts" / "build-server-image"), "--tag", image], cwd=ROOT,
                       env={**os.environ, "RUNBOX_BUILD_DIR": str(rbtest.RUNBOX_BIN.parent)},
                       capture_output=True, text=True, timeout=1200)
    d.log.append(f"scripts/build-server-image --tag {image}  ({time.monotonic() - start:.1f} s, exit {p.returncode})")
    assert p.returncode == 0, p.stdout + p.stderr[-4000:]
    try:
        yield d
    finally:
        d.compose("down", "-v", "--remove-orphans", check=False)
        if d.instance:
            rbtest.remove_containers(rbtest.containers_with_label(f"runbox.instance={d.instance}"))
        rbtest.docker("rmi", image, check=False)
        print("\n".join(d.log))


@pytest.fixture(scope="session")
def sandbox_image() -> str:
    return rbtest.require_sandbox_image()


def test_compose_up_walkthrough_mcp_restart_down(deployment):
    d = deployment
    d.up()
    c = d.container()
    assert c["Config"]["Image"] == d.image
    assert c["HostConfig"]["PortBindings"]["8080/tcp"] == [{"HostIp": "127.0.0.1", "HostPort": str(d.port)}]
    d.wait_healthy()

    # The curl walkthrough (docs/rest.md) through the published port.
    p = subprocess.run(["bash", str(ROOT / "clients/curl/walkthrough.sh"), d.url],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stdout[-4000:] + p.stderr[-4000:]
    out = p.stdout.replace(" ", "")
    assert "xis42" in out and "event:done" in out and '"status":"cancelled"' in out
    assert '"code":"not_found"' in out and '"status":"ended"' in out
    walk_sid = out.split('"session_id":"', 1)[1].split('"', 1)[0]

    # One MCP call (the official SDK's client over streamable HTTP).
    async def mcp_call():
        async with Client(d.url + "/mcp") as client:
            r = await client.call_tool("execute_code", {"code": "6 * 7"})
            assert not r.is_error, r.content
            return r.structured_content

    sc = anyio.run(mcp_call)
    assert sc["result"] == "42"

    # A session with state, then `restart`: runboxd stops (SIGTERM) and starts on the same volume.
    http = requests.Session()
    s = http.post(d.url + "/sessions", json={"language": "python"}, timeout=120).json()
    sid = s["session_id"]
    d.instance = rbtest.inspect(s["container_id"])["Config"]["Labels"]["runbox.instance"]
    r = http.post(d.url + "/execute", json={"session_id": sid, "code": "kept = 'still here'", "wait": True},
                  timeout=120).json()
    assert r["status"] == "completed", r
    started = d.container()["State"]["StartedAt"]
    d.compose("restart")
    assert d.container()["State"]["StartedAt"] != started, "the container was not restarted"
    d.wait_healthy()
    assert http.get(f"{d.url}/sessions/{sid}", timeout=30).json()["status"] == "ready"
    r = http.post(d.url + "/execute", json={"session_id": sid, "code": "kept", "wait": True}, timeout=120).json()
    assert r["status"] == "completed" and r["result"] == "'still here'", r
    # the database is on the volume: what ended before the restart is still on record
    assert http.get(f"{d.url}/sessions/{walk_sid}", timeout=30).json()["status"] == "ended"
    # The SDK negotiated MCP 2026-07-28, where execute_code without session_id starts a session
    # and returns its id for the next call: shared with REST, it survived the restart too.
    assert http.get(f"{d.url}/sessions/{sc['session_id']}", timeout=30).json()["status"] == "ready"

    # `down -v` after ending the session leaves nothing: no container, network or volume of the
    # project, and no sandbox of this runboxd (warm-pool ones included).
    for ended in (sid, sc["session_id"]):
        assert http.delete(f"{d.url}/sessions/{ended}", timeout=60).json()["status"] == "ended"
    d.compose("down", "-v")
    assert d.leftovers(d.instance) == []

"""Fixtures of the tests of several Docker engines (enginehub.EngineCluster): the node image,
built (or found up to date) by docker/build-images --engine-node, and the sandbox image the nodes
get, which must exist on the host (scripts/setup builds it). The suites are skipped when Docker is
missing, as tests/web's are."""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

import enginehub

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "integration"))

import rbtest  # noqa: E402


def docker_available() -> bool:
    if shutil.which("docker") is None or shutil.which("openssl") is None:
        return False
    try:
        return subprocess.run(["docker", "version", "--format", "{{.Server.APIVersion}}"], capture_output=True,
                              timeout=20).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def pytest_collection_modifyitems(config, items):
    if not docker_available():
        skip = pytest.mark.skip(reason="Docker (or openssl) is not available")
        here = Path(__file__).resolve().parent
        for item in items:
            if here in Path(str(item.fspath)).resolve().parents:
                item.add_marker(skip)


@pytest.fixture(scope="session")
def node_image() -> str:
    """runbox-engine-node:latest, built by docker/build-images --engine-node when missing or out
    of date (it needs root for debootstrap then)."""
    start = time.monotonic()
    r = subprocess.run([str(ROOT / "docker" / "build-images"), "--engine-node", "--tag", enginehub.NODE_IMAGE],
                       capture_output=True, text=True, timeout=1800)
    if r.returncode != 0:
        pytest.fail("docker/build-images --engine-node failed:\n" + r.stderr[-4000:])
    print("build-images --engine-node: %.1f s: %s" % (time.monotonic() - start, r.stderr.strip().splitlines()[-1]))
    return enginehub.NODE_IMAGE


@pytest.fixture(scope="session")
def sandbox_image() -> str:
    r = subprocess.run(["docker", "image", "inspect", "-f", "{{.Id}}", enginehub.SANDBOX_IMAGE],
                       capture_output=True, text=True, timeout=60)
    if r.returncode != 0:
        pytest.fail("the sandbox image %s does not exist: build it with docker/build-images "
                    "(scripts/setup does)" % enginehub.SANDBOX_IMAGE)
    return enginehub.SANDBOX_IMAGE


@pytest.fixture
def start_runboxd(tmp_path):
    """start(args, bearer=None): a runboxd (rbtest.Server) in the test's folder with args, its
    requests carrying bearer as their API key; every one is cleaned up after the test, which fails
    if one died on its own or its log holds a sanitizer report (rbtest.finish_servers)."""
    servers: list[rbtest.Server] = []

    def start(args: list[str], bearer: str | None = None) -> rbtest.Server:
        s = rbtest.Server(tmp_path, args, name=f"runboxd{len(servers)}")
        if bearer is not None:
            s.http.headers["Authorization"] = f"Bearer {bearer}"
        servers.append(s)
        return s.start()

    yield start
    rbtest.finish_servers(servers)

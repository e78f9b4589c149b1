"""Fixtures for the files and dependencies tests: they reuse the runboxd harness of
tests/integration (rbtest.Server: a real runboxd on loopback, real Docker, cleanup of every
session and container it made), plus removal of the dependency cache volumes a test created.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "integration"))

import rbtest  # noqa: E402


def _finish(servers):
    problems = []
    for s in servers:
        found = s.cleanup()
        if found:
            problems.append(f"{s.log_path}:\n  " + "\n  ".join(found) + "\n--- log tail ---\n" + s.log_tail(80))
    if problems:
        pytest.fail("runboxd problems:\n" + "\n".join(problems), pytrace=False)


@pytest.fixture(scope="session")
def sandbox_image() -> str:
    if not rbtest.docker_reachable():
        pytest.fail("the Docker engine is not reachable on /var/run/docker.sock: these tests need it")
    if not rbtest.image_exists():
        pytest.fail(f"the sandbox image {rbtest.IMAGE} does not exist: build it with docker/build-images")
    return rbtest.IMAGE


@pytest.fixture(scope="module")
def server(sandbox_image, tmp_path_factory):
    s = rbtest.Server(tmp_path_factory.mktemp("runboxd"), ["--pool-size", "0"])
    s.start()
    yield s
    _finish([s])


@pytest.fixture
def make_server(sandbox_image, tmp_path):
    servers = []

    def make(args=None):
        s = rbtest.Server(tmp_path, ["--pool-size", "0", *(args or [])], name=f"runboxd{len(servers)}")
        servers.append(s)
        return s.start()

    yield make
    _finish(servers)


@pytest.fixture
def session(server) -> dict:
    s = server.create_session()
    yield s
    server.delete(f"/sessions/{s['session_id']}")

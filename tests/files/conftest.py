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


@pytest.fixture(scope="session")
def sandbox_image() -> str:
    return rbtest.require_sandbox_image()


@pytest.fixture(scope="module")
def server(sandbox_image, tmp_path_factory):
    s = rbtest.Server(tmp_path_factory.mktemp("runboxd"), ["--pool-size", "0"])
    s.start()
    yield s
    rbtest.finish_servers([s])


@pytest.fixture
def make_server(sandbox_image, tmp_path):
    servers = []

    def make(args=None):
        s = rbtest.Server(tmp_path, ["--pool-size", "0", *(args or [])], name=f"runboxd{len(servers)}")
        servers.append(s)
        return s.start()

    yield make
    rbtest.finish_servers(servers)


@pytest.fixture
def session(server) -> dict:
    s = server.create_session()
    yield s
    server.delete(f"/sessions/{s['session_id']}")

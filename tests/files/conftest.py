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
from rbfixtures import sandbox_image, server_fixture, session  # noqa: E402, F401 (fixtures)


server = server_fixture("runboxd", ["--pool-size", "0"])


@pytest.fixture
def make_server(sandbox_image, tmp_path):
    servers = []

    def make(args=None):
        s = rbtest.Server(tmp_path, ["--pool-size", "0", *(args or [])], name=f"runboxd{len(servers)}")
        servers.append(s)
        return s.start()

    yield make
    rbtest.finish_servers(servers)

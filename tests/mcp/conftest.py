"""Fixtures for the MCP tests: real runboxd processes (tests/integration/rbtest.py), the real
Docker engine and the real MCP clients from PyPI (the official `mcp` SDK and `fastmcp`).

- `server`: one runboxd shared by a test module (fresh database in a temp folder).
- `make_server`: runboxd processes of a test's own (restart on the same database).
Teardown deletes the sessions, removes their containers and fails the test if runboxd died on
its own or a sanitizer reported something in its log.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "integration"))

import rbtest  # noqa: E402
from rbfixtures import sandbox_image, server_fixture  # noqa: E402, F401 (fixtures)


server = server_fixture("runboxd-mcp")


@pytest.fixture
def make_server(sandbox_image, tmp_path):
    servers: list[rbtest.Server] = []

    def make(args: list[str] | None = None) -> rbtest.Server:
        s = rbtest.Server(tmp_path, args)
        servers.append(s)
        return s.start()

    yield make
    rbtest.finish_servers(servers)

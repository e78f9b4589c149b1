"""Fixtures shared by the pytest suites that drive a real runboxd through rbtest.py
(tests/integration, tests/files, tests/mcp, tests/clients). A suite's conftest puts
tests/integration on sys.path and imports them; pytest takes a fixture from the conftest's
names, so `from rbfixtures import sandbox_image` is the whole definition.

- `sandbox_image`: fails (never skips) every Docker-dependent test when Docker is unreachable
  or the sandbox image is missing, with the command that builds it.
- `server_fixture(folder, args)`: makes a suite's `server`, one runboxd shared by a test module
  (fresh database in a temp folder named after folder, extra flags args).
- `session`: a fresh Python session on the module's server, deleted afterwards.
Teardown deletes the sessions, removes their containers and fails the test if runboxd died on
its own or a sanitizer reported something in its log (rbtest.finish_servers).
"""

from __future__ import annotations

import pytest

import rbtest


@pytest.fixture(scope="session")
def sandbox_image() -> str:
    return rbtest.require_sandbox_image()


def server_fixture(folder: str, args: list[str] | None = None):
    """The module-scoped `server` fixture of a suite."""

    @pytest.fixture(scope="module", name="server")
    def server(sandbox_image, tmp_path_factory) -> rbtest.Server:
        s = rbtest.Server(tmp_path_factory.mktemp(folder), args)
        s.start()
        yield s
        rbtest.finish_servers([s])

    return server


@pytest.fixture
def session(server) -> dict:
    """A fresh Python session on the module's server, deleted afterwards."""
    s = server.create_session()
    yield s
    server.delete(f"/sessions/{s['session_id']}")

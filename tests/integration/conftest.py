"""Fixtures for runbox's integration tests.

- `sandbox_image`: fails (never skips) every Docker-dependent test when Docker is unreachable
  or the sandbox image is missing, with the command that builds it.
- `server`: one runboxd shared by a test module (fresh db in a temp folder).
- `make_server`: a factory for runboxd processes of a test's own (extra flags, kill -9 and
  restart on the same db); every one is cleaned up after the test.
Teardown deletes the sessions, removes their containers and fails the test if runboxd died
on its own or a sanitizer reported something in its log.
"""

from __future__ import annotations

import pytest

import rbtest


@pytest.fixture(scope="session")
def sandbox_image() -> str:
    return rbtest.require_sandbox_image()


@pytest.fixture(scope="module")
def server(sandbox_image, tmp_path_factory) -> rbtest.Server:
    s = rbtest.Server(tmp_path_factory.mktemp("runboxd"))
    s.start()
    yield s
    rbtest.finish_servers([s])


@pytest.fixture
def make_server(tmp_path):
    servers: list[rbtest.Server] = []

    def make(args: list[str] | None = None, start: bool = True, name: str = "runboxd",
             wait_docker: bool = True) -> rbtest.Server:
        s = rbtest.Server(tmp_path, args, name=name, wait_docker=wait_docker)
        servers.append(s)
        return s.start() if start else s

    yield make
    rbtest.finish_servers(servers)


@pytest.fixture
def session(server) -> dict:
    """A fresh Python session on the module's server, deleted afterwards."""
    s = server.create_session()
    yield s
    server.delete(f"/sessions/{s['session_id']}")

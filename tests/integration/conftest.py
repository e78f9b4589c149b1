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
from rbfixtures import sandbox_image, server_fixture, session  # noqa: F401 (fixtures)


server = server_fixture("runboxd")


@pytest.fixture
def make_server(tmp_path, request):
    servers: list[rbtest.Server] = []
    if rbtest.GVISOR:
        request.getfixturevalue("sandbox_image")  # the nested gVisor engine, before any runboxd

    def make(args: list[str] | None = None, start: bool = True, name: str = "runboxd",
             wait_docker: bool = True) -> rbtest.Server:
        s = rbtest.Server(tmp_path, args, name=name, wait_docker=wait_docker)
        servers.append(s)
        return s.start() if start else s

    yield make
    rbtest.finish_servers(servers)


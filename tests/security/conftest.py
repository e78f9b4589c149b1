"""Fixtures of the hostile code suite.

- `server`: one runboxd per test module (fresh db in a temp folder, default limits).
- `neighbour`: a session on that server created before any attack, holding a variable and a
  file; after every test `guard` checks that runboxd is healthy and the neighbour kept both.
- `make_server`: runboxd processes with extra flags (network tests), stopped after the test.
- `engine`: under RUNBOX_TEST_ISOLATION=gvisor, one nested Docker engine for the whole run
  (tests/engines/enginehub.py) with gVisor's runsc registered (enginehub.gvisor_platform, no network), which
  every runboxd above uses with --isolation gvisor and the suite's docker commands address.
Docker and the sandbox image (and under gVisor the engine node image, docker/build-images
--engine-node) are required: their absence fails the tests, never skips them.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

import sectest  # noqa: E402  (puts tests/engines on sys.path)
import enginehub  # noqa: E402


@pytest.fixture(scope="session")
def engine():
    """The nested gVisor engine (an enginehub.EngineCluster of one node) under
    RUNBOX_TEST_ISOLATION=gvisor, else None (the host's engine)."""
    with enginehub.gvisor_suite() as cluster:
        yield cluster


@pytest.fixture(scope="session")
def sandbox_image(engine) -> str:
    r = subprocess.run(["docker", "image", "inspect", sectest.IMAGE], capture_output=True, text=True,
                       env=enginehub.suite_docker_env())
    if r.returncode != 0:
        pytest.fail(f"the sandbox image {sectest.IMAGE} is missing or Docker is unreachable: build it with "
                    f"docker/build-images ({r.stderr.strip()})")
    return sectest.IMAGE


@pytest.fixture(scope="module")
def server(sandbox_image, tmp_path_factory) -> sectest.Server:
    s = sectest.Server(tmp_path_factory.mktemp("runboxd"))
    s.start()
    yield s
    s.stop()


@pytest.fixture(scope="module")
def neighbour(server) -> sectest.Neighbour:
    return sectest.Neighbour(server)


@pytest.fixture
def guard(server, neighbour):
    """Run the test, then check runboxd and the neighbouring session."""
    yield server
    neighbour.check()


@pytest.fixture
def make_server(sandbox_image, tmp_path):
    servers: list[sectest.Server] = []

    def make(args: list[str]) -> sectest.Server:
        d = tmp_path / f"runboxd{len(servers)}"
        d.mkdir()
        s = sectest.Server(d, args)
        servers.append(s)
        return s.start()

    yield make
    for s in servers:
        s.stop()

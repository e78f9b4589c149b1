"""Fixtures shared by the pytest suites that drive a real runboxd through rbtest.py
(tests/integration, tests/files, tests/mcp, tests/clients). A suite's conftest puts
tests/integration on sys.path and imports them; pytest takes a fixture from the conftest's
names, so `from rbfixtures import sandbox_image` is the whole definition.

- `sandbox_image`: fails (never skips) every Docker-dependent test when Docker is unreachable
  or the sandbox image is missing, with the command that builds it; under
  RUNBOX_TEST_ISOLATION=gvisor it first starts the nested gVisor engine the suite runs on.
- `server_fixture(folder, args)`: makes a suite's `server`, one runboxd shared by a test module
  (fresh database in a temp folder named after folder, extra flags args).
- `keyed_server_fixture(folder, keys)`: the same with an --api-keys-file of keys (name -> key);
  its own requests carry the first key, so that teardown sees that key's sessions.
- `point_e2b_sdk_at(mp, server, key)`: E2B's SDK configured for runboxd by its environment
  alone, as docs/e2b.md says (E2B_API_URL, E2B_SANDBOX_URL, E2B_API_KEY).
- `session`: a fresh Python session on the module's server, deleted afterwards.
Teardown deletes the sessions, removes their containers and fails the test if runboxd died on
its own or a sanitizer reported something in its log (rbtest.finish_servers).
"""

from __future__ import annotations

import hashlib

import pytest

import rbtest
import enginehub  # after rbtest, which puts tests/engines on sys.path


@pytest.fixture(scope="session")
def sandbox_image() -> str:
    """Under RUNBOX_TEST_ISOLATION=gvisor, a nested engine with gVisor is the suite's engine for
    the whole run (enginehub.gvisor_suite: rbtest's runboxd and docker commands use it)."""
    with enginehub.gvisor_suite():
        yield rbtest.require_sandbox_image()


def server_fixture(folder: str, args: list[str] | None = None):
    """The module-scoped `server` fixture of a suite."""

    @pytest.fixture(scope="module", name="server")
    def server(sandbox_image, tmp_path_factory) -> rbtest.Server:
        s = rbtest.Server(tmp_path_factory.mktemp(folder), args)
        s.start()
        yield s
        rbtest.finish_servers([s])

    return server


def keyed_server_fixture(folder: str, keys: dict[str, str], args: list[str] | None = None, name: str = "server",
                         roles: dict[str, str] | None = None):
    """A module-scoped runboxd (fixture name) with an --api-keys-file holding keys (their role= from
    roles, by name; a key without one is a user)."""

    @pytest.fixture(scope="module", name=name)
    def server(sandbox_image, tmp_path_factory) -> rbtest.Server:
        work = tmp_path_factory.mktemp(folder)
        path = work / "api-keys"
        role = {n: f" role={r}" for n, r in (roles or {}).items()}
        path.write_text("".join(f"{n} sha256:{hashlib.sha256(k.encode()).hexdigest()}{role.get(n, '')}\n"
                                for n, k in keys.items()))
        s = rbtest.Server(work, ["--api-keys-file", str(path), "--pool-size", "0", *(args or [])])
        s.start()
        s.http.headers["Authorization"] = f"Bearer {next(iter(keys.values()))}"
        yield s
        rbtest.finish_servers([s])

    return server


def point_e2b_sdk_at(mp: pytest.MonkeyPatch, server: rbtest.Server, key: str) -> None:
    base = server.url + "/e2b"
    mp.setenv("E2B_API_URL", base)
    mp.setenv("E2B_SANDBOX_URL", base)
    mp.setenv("E2B_API_KEY", key)
    mp.delenv("E2B_DEBUG", raising=False)
    mp.delenv("E2B_DOMAIN", raising=False)


@pytest.fixture
def session(server) -> dict:
    """A fresh Python session on the module's server, deleted afterwards."""
    s = server.create_session()
    yield s
    server.delete(f"/sessions/{s['session_id']}")

"""Fixtures of the network-by-policy suite (tests/network).

- `sandbox_image`: the sandbox image; Docker or the image missing FAILS the tests (never skips).
- `inet` (session): the test-made internet (inet.Inet): an --internal Docker network of the
  run's own with the servers www/api/cdn, private, pypi and registry .example.test on it, and
  the test CA. Removed at the end of the run.
- `egress_args`: runboxd's flags for sandbox network by policy through that internet:
  --egress=true, --egress-network=<inet>, the default allow list (EGRESS_ALLOW), the maximum
  (EGRESS_MAX), the operator's deny list (EGRESS_DENY) and the operator CIDRs (the /32 of www,
  pypi and registry; not private's).
- `egress_runboxd` (module): one runboxd with those flags; `egress_server`: the same, the
  sessions a test made deleted after it.
- `make_server`: runboxd processes of a test's own (other flags, kill -9 and restart).
Every runboxd's teardown deletes its sessions, stops it, and fails the test when a container
or network of its instance (runbox.managed=1) is left behind.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

import inet as inet_mod  # noqa: E402
import nettest  # noqa: E402

EGRESS_ALLOW = "www.example.test,pypi.example.test,registry.example.test"
EGRESS_MAX = "*.example.test,*.example.test:8080,*.example.test:7000"
EGRESS_DENY = "cdn.example.test"


@pytest.fixture(scope="session")
def sandbox_image() -> str:
    r = subprocess.run(["docker", "image", "inspect", inet_mod.IMAGE], capture_output=True, text=True)
    if r.returncode != 0:
        pytest.fail(f"the sandbox image {inet_mod.IMAGE} is missing or Docker is unreachable: build it with "
                    f"docker/build-images ({r.stderr.strip()})")
    return inet_mod.IMAGE


@pytest.fixture(scope="session")
def inet(sandbox_image, tmp_path_factory) -> inet_mod.Inet:
    net = inet_mod.Inet(tmp_path_factory.mktemp("inet"))
    try:
        yield net.start()
    finally:
        net.stop()


@pytest.fixture(scope="session")
def egress_args(inet) -> list[str]:
    cidrs = ",".join(inet.cidr(role) for role in ("www", "pypi", "registry"))
    return ["--egress=true", f"--egress-network={inet.network}", f"--egress-allow={EGRESS_ALLOW}",
            f"--egress-max={EGRESS_MAX}", f"--egress-deny={EGRESS_DENY}", f"--egress-cidr={cidrs}",
            "--pool-size=0", "--pool-bash-size=0"]


def _finish(servers: list[nettest.Runboxd]) -> None:
    problems = []
    for s in servers:
        problems += [f"{s.log_path}: {p}" for p in s.finish()]
    if problems:
        pytest.fail("\n".join(problems), pytrace=False)


@pytest.fixture(scope="module")
def egress_runboxd(inet, egress_args, tmp_path_factory) -> nettest.Runboxd:
    s = nettest.Runboxd(tmp_path_factory.mktemp("runboxd"), egress_args)
    s.ca_text = inet.ca_text
    try:
        yield s.start()
    finally:
        _finish([s])


@pytest.fixture
def egress_server(egress_runboxd) -> nettest.Runboxd:
    """The module's runboxd; the sessions a test made are deleted after it (each networked
    session holds a Docker network, and the engine's address pools are few)."""
    first = len(egress_runboxd.sessions)
    yield egress_runboxd
    egress_runboxd.end_sessions(egress_runboxd.sessions[first:])


@pytest.fixture
def make_server(sandbox_image, inet, tmp_path):
    servers: list[nettest.Runboxd] = []

    def make(args: list[str]) -> nettest.Runboxd:
        d = tmp_path / f"runboxd{len(servers)}"
        d.mkdir()
        s = nettest.Runboxd(d, args)
        s.ca_text = inet.ca_text
        servers.append(s)
        return s.start()

    try:
        yield make
    finally:
        _finish(servers)

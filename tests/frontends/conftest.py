"""Fixtures for the front ends' own clients (issue 25) against runboxd's Jupyter Kernel Gateway
(/jupyter) and E2B (/e2b) surfaces: Open WebUI's execute_code_jupyter, AutoGen's Jupyter
executor, Jupyter Server as a gateway client (jupyter_kernel_client, nbclient), smolagents' E2B
executor, and hostile clients over a raw websocket. The packages are pinned in
tests/requirements.txt (open-webui, installed without its dependencies, in
tests/requirements-nodeps.txt); the recipes are shared/DESIGN.md's "Front ends' own clients".

`server` is one runboxd per test module (tests/integration/rbtest.py: a fresh database in a temp
folder, the real Docker engine) with an --api-keys-file of KEYS; its own requests carry alice's
key, so that teardown deletes alice's sessions and removes every container of the instance.
"""

from __future__ import annotations

import sys
import uuid
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "integration"))

import rbtest  # noqa: E402
from rbfixtures import keyed_server_fixture, sandbox_image  # noqa: E402, F401 (fixtures)

# E2B's SDK checks the shape of its key (e2b_ and 40 hex digits); Jupyter's clients take any.
KEYS = {"alice": "e2b_" + "a1" * 20, "bob": "e2b_" + "b2" * 20}
ALICE, BOB = KEYS["alice"], KEYS["bob"]

server = keyed_server_fixture("runboxd-frontends", KEYS)


def jupyter_url(s: rbtest.Server) -> str:
    return s.url + "/jupyter"


def session_id_of(kernel_id: str) -> str:
    """The runbox session of a kernel: its id is the session's 32 hex digits as a UUID."""
    return "s_" + uuid.UUID(kernel_id).hex


@pytest.fixture
def kernels(server):
    """Kernel ids a test made (any key): deleted afterwards with the key that made them."""
    made: list[tuple[str, str]] = []
    yield made
    for kid, key in made:
        server.delete(f"/jupyter/api/kernels/{kid}", headers={"Authorization": f"token {key}"}, timeout=30)


def start_kernel(server: rbtest.Server, kernels: list, key: str = ALICE, name: str = "python3") -> str:
    r = server.post("/jupyter/api/kernels", {"name": name}, headers={"Authorization": f"token {key}"})
    assert r.status_code == 201, r.text
    kid = r.json()["id"]
    kernels.append((kid, key))
    return kid

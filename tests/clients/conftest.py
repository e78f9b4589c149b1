"""Fixtures for the client examples (clients/openai/): a real runboxd process
(tests/integration/rbtest.py) on the real Docker engine, shared by a test module, with a fresh
database in a temp folder. Teardown deletes the sessions, removes their containers and fails the
test if runboxd died on its own or a sanitizer reported something in its log.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "integration"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import rbtest  # noqa: E402


@pytest.fixture(scope="session")
def sandbox_image() -> str:
    return rbtest.require_sandbox_image()


@pytest.fixture(scope="module")
def server(sandbox_image, tmp_path_factory) -> rbtest.Server:
    s = rbtest.Server(tmp_path_factory.mktemp("runboxd-clients"))
    s.start()
    yield s
    rbtest.finish_servers([s])

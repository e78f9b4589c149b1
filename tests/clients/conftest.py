"""Fixtures for the client examples (clients/openai/): a real runboxd process
(tests/integration/rbtest.py) on the real Docker engine, shared by a test module, with a fresh
database in a temp folder. Teardown deletes the sessions, removes their containers and fails the
test if runboxd died on its own or a sanitizer reported something in its log.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "integration"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from rbfixtures import sandbox_image, server_fixture  # noqa: E402, F401 (fixtures)


server = server_fixture("runboxd-clients")

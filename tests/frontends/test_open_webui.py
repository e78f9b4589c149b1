"""Open WebUI's own Code Interpreter client (PyPI open-webui, installed without its dependencies:
tests/requirements-nodeps.txt) against runboxd's /jupyter, unmodified: what Open WebUI runs with
CODE_INTERPRETER_ENGINE=jupyter, CODE_INTERPRETER_JUPYTER_URL=http://HOST:PORT/jupyter and
CODE_INTERPRETER_JUPYTER_AUTH=token (a runbox API key as ..._AUTH_TOKEN) or password (a runbox
API key as ..._AUTH_PASSWORD).

Per call it starts a kernel (POST api/kernels), opens its websocket, sends one execute_request,
reads until status idle and deletes the kernel: stdout, stderr (tracebacks) and result (a plot
as data:image/png;base64,...) come back in a dict.
"""

from __future__ import annotations

import asyncio
import base64

import pytest

import rbtest
from conftest import ALICE, BOB, jupyter_url

PLOT = "import matplotlib.pyplot as plt\nprint('plotting')\nplt.plot([1, 4, 9])\nplt.show()"


@pytest.fixture(scope="module")
def execute_code_jupyter(tmp_path_factory):
    """open_webui.utils.code_interpreter.execute_code_jupyter. Open WebUI reads DATA_DIR and
    WEBUI_SECRET_KEY when imported: a temp folder and a test secret, so that nothing is written
    beside the package."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("DATA_DIR", str(tmp_path_factory.mktemp("open-webui-data")))
        mp.setenv("WEBUI_SECRET_KEY", "runbox-test-secret")
        from open_webui.utils.code_interpreter import execute_code_jupyter as run

        yield lambda base, code, **kw: asyncio.run(run(base, code, timeout=60, **kw))


def alice_kernels(server) -> list:
    r = server.get("/jupyter/api/kernels", headers={"Authorization": f"token {ALICE}"})
    assert r.status_code == 200, r.text
    return r.json()


@pytest.mark.parametrize("mode", ["token", "password"])
def test_print_plot_and_traceback(server, execute_code_jupyter, mode):
    auth = {mode: ALICE}
    base = jupyter_url(server)

    out = execute_code_jupyter(base, "x = 6 * 7\nprint('answer', x)", **auth)
    assert out == {"stdout": "answer 42", "stderr": "", "result": ""}, out

    out = execute_code_jupyter(base, PLOT, **auth)
    assert out["stdout"] == "plotting" and out["stderr"] == "", out
    prefix = "data:image/png;base64,"
    assert out["result"].startswith(prefix), out["result"][:200]
    assert base64.b64decode(out["result"][len(prefix):])[:8] == rbtest.PNG_SIGNATURE

    # a traceback goes to stderr; each call is a kernel of its own (no state between calls)
    out = execute_code_jupyter(base, "print('before')\nprint(x)", **auth)
    assert out["stdout"] == "before", out
    assert "NameError" in out["stderr"] and "name 'x' is not defined" in out["stderr"], out
    assert "Traceback" in out["stderr"], out

    # Open WebUI deletes each kernel when its call ends: nothing is left running
    assert alice_kernels(server) == []


def test_the_last_expression_is_the_result(server, execute_code_jupyter):
    out = execute_code_jupyter(jupyter_url(server), "sum(range(10))", token=ALICE)
    assert out == {"stdout": "", "stderr": "", "result": "45"}, out


def test_a_wrong_credential_is_an_error_and_starts_nothing(server, execute_code_jupyter):
    base = jupyter_url(server)
    before = len(server.get("/sessions").json()["sessions"])
    out = execute_code_jupyter(base, "print(1)", token="e2b_" + "0" * 40)
    assert out["stdout"] == "" and "401" in out["stderr"], out
    out = execute_code_jupyter(base, "print(1)", password="not-a-key")
    # the login form answers 401; Open WebUI goes on without a cookie and its POST api/kernels is
    # refused
    assert out["stdout"] == "" and "401" in out["stderr"], out
    assert len(server.get("/sessions").json()["sessions"]) == before


def test_password_mode_logs_in_with_any_key_and_sees_only_its_own(server, execute_code_jupyter):
    """bob's key as the password: his kernel, not alice's (the login cookie stands for the key)."""
    out = execute_code_jupyter(jupyter_url(server), "import os\nprint(os.getcwd())", password=BOB)
    assert out["stderr"] == "" and out["stdout"].startswith("/"), out
    r = server.get("/jupyter/api/kernels", headers={"Authorization": f"token {BOB}"})
    assert r.status_code == 200 and r.json() == [], r.text

"""AutoGen's Jupyter executor (autogen-ext[docker-jupyter-executor]) against runboxd's /jupyter,
unmodified and without Docker of its own: DockerJupyterCodeExecutor with a JupyterConnectionInfo.

AutoGen builds its URLs as http://{host}{:port} with no base path, so runbox's /jupyter goes in
host ("127.0.0.1:PORT/jupyter", port None), as docs/jupyter.md says. It sends Authorization: token
KEY, lists the kernelspecs, starts python3, sends a kernel_info_request before each batch, runs
each code block as a cell (rewriting `!pip install` with -qqq), saves image/png outputs to
output_dir, restarts with POST .../restart and deletes the kernel when it stops.
"""

from __future__ import annotations

import asyncio

import pytest
from autogen_core import CancellationToken
from autogen_core.code_executor import CodeBlock
from autogen_ext.code_executors.docker_jupyter import DockerJupyterCodeExecutor
from autogen_ext.code_executors.docker_jupyter._jupyter_server import JupyterConnectionInfo

import rbtest
from conftest import ALICE, BOB, session_id_of

PLOT = "import matplotlib.pyplot as plt\nplt.plot([3, 1, 2])\nplt.title('runbox')\nplt.show()"


def connection(server, key: str = ALICE) -> JupyterConnectionInfo:
    return JupyterConnectionInfo(host=f"127.0.0.1:{server.port}/jupyter", use_https=False, port=None, token=key)


def blocks(*codes: str) -> list[CodeBlock]:
    return [CodeBlock(code=c, language="python") for c in codes]


def test_state_plots_errors_and_restart(server, tmp_path):
    async def scenario():
        # timeout: per block; the first after the restart waits for the fresh interpreter's imports
        async with DockerJupyterCodeExecutor(jupyter_server=connection(server), timeout=180,
                                             output_dir=tmp_path) as ex:
            sid = session_id_of(ex._kernel_id)
            # the kernel is a runbox session of alice's key
            assert server.session(sid)["status"] in ("ready", "busy")
            cancel = CancellationToken()

            r = await ex.execute_code_blocks(blocks("x = 41", "print(x + 1)"), cancel)
            assert r.exit_code == 0 and "42" in r.output, r
            # state kept across batches too
            r = await ex.execute_code_blocks(blocks("x += 1\nprint('x is', x)"), cancel)
            assert r.exit_code == 0 and "x is 42" in r.output, r

            r = await ex.execute_code_blocks(blocks(PLOT), cancel)
            assert r.exit_code == 0 and len(r.output_files) == 1, r
            png = r.output_files[0]
            assert png.parent == tmp_path and png.read_bytes()[:8] == rbtest.PNG_SIGNATURE
            assert str(png) in r.output

            # a failing block stops the batch with the error; what ran before it stays
            r = await ex.execute_code_blocks(blocks("y = 'kept'", "1 / 0", "print('never')"), cancel)
            assert r.exit_code == 1 and "ZeroDivisionError" in r.output and "never" not in r.output, r
            r = await ex.execute_code_blocks(blocks("print(y, x)"), cancel)
            assert r.exit_code == 0 and "kept 42" in r.output, r

            # a `!pip install` line (AutoGen adds -qqq) of a package the image has, and a shell line
            r = await ex.execute_code_blocks(blocks("!pip install numpy\nimport numpy\nprint(numpy.__name__)",
                                                    "!echo from-the-shell"), cancel)
            assert r.exit_code == 0 and "numpy" in r.output and "from-the-shell" in r.output, r

            await ex.restart()
            r = await ex.execute_code_blocks(blocks("print(x)"), cancel)
            assert r.exit_code == 1 and "NameError" in r.output, r
            # the same kernel, a fresh interpreter
            assert session_id_of(ex._kernel_id) == sid
            r = await ex.execute_code_blocks(blocks("x = 'new'\nprint(x)"), cancel)
            assert r.exit_code == 0 and "new" in r.output, r
        return sid

    sid = asyncio.run(scenario())
    # stop() deleted the kernel: its session ended
    assert server.session(sid)["status"] == "ended"


def test_another_key_cannot_use_the_kernel(server, tmp_path):
    async def scenario():
        async with DockerJupyterCodeExecutor(jupyter_server=connection(server), timeout=30,
                                             output_dir=tmp_path) as ex:
            await ex.execute_code_blocks(blocks("secret = 1"), CancellationToken())
            bob = DockerJupyterCodeExecutor(jupyter_server=connection(server, BOB), timeout=30, output_dir=tmp_path)
            bob._kernel_id = ex._kernel_id  # what a client that learnt the id would do
            with pytest.raises(Exception) as e:
                await bob.execute_code_blocks(blocks("print(secret)"), CancellationToken())
            assert "404" in str(e.value), e.value
            await bob._jupyter_client.close()

    asyncio.run(scenario())

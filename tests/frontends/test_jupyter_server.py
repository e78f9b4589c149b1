"""Jupyter Server (jupyter-server, PyPI) as a gateway client of runboxd's /jupyter:
`jupyter server --gateway-url=http://127.0.0.1:PORT/jupyter --GatewayClient.auth_token=KEY`,
started by the test on a port of its own (killed with SIGKILL at the end), and real kernel
clients talking to Jupyter Server as they would to any: jupyter_kernel_client's
JupyterKernelClient, and nbclient executing a notebook (KernelHttpManager + NotebookClient, as
shared/DESIGN.md says works). Jupyter Server forwards kernels' REST calls and websockets to
runboxd; JupyterLab does the same from a browser.

Jupyter Server routes only kernel ids shaped like UUIDs (\\w+-\\w+-\\w+-\\w+-\\w+), which is why a
runbox kernel's id is its session's 32 hex digits as a UUID.

jupyter_kernel_client's websocket thread (websocket-client's WebSocketApp) takes up to 10 s to
end after the client closes its own socket (its dispatcher's select timeout), whoever the server;
the tests shut the kernel down first where they can.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import nbformat
import pytest
import requests
from jupyter_kernel_client import JupyterKernelClient, KernelHttpManager
from nbclient import NotebookClient

import rbtest
from conftest import ALICE, session_id_of

SERVER_TOKEN = "jupyter-server-token-of-the-test"


class JupyterServer:
    def __init__(self, proc: subprocess.Popen, url: str, log: Path):
        self.proc, self.url, self.log = proc, url, log

    def api(self, method: str, path: str, **kw) -> requests.Response:
        kw.setdefault("timeout", 60)
        return requests.request(method, self.url + path, headers={"Authorization": f"token {SERVER_TOKEN}"}, **kw)


@pytest.fixture(scope="module")
def jupyter_server(server, tmp_path_factory):
    """Jupyter Server with runboxd as its gateway: its own port, its own folders (HOME and the
    JUPYTER_* ones in a temp folder: nothing is written elsewhere), SIGKILL at the end."""
    work = tmp_path_factory.mktemp("jupyter-server")
    env = {**os.environ, "HOME": str(work), "JUPYTER_CONFIG_DIR": str(work / "config"),
           "JUPYTER_DATA_DIR": str(work / "data"), "JUPYTER_RUNTIME_DIR": str(work / "runtime"),
           "IPYTHONDIR": str(work / "ipython"), "JUPYTER_PLATFORM_DIRS": "1", "JUPYTER_NO_CONFIG": "1"}
    log = work / "jupyter-server.log"
    for _ in range(3):  # a port picked free can be taken meanwhile
        port = rbtest.free_port()
        cmd = [sys.executable, "-m", "jupyter_server", f"--ServerApp.port={port}", "--ServerApp.ip=127.0.0.1",
               "--ServerApp.port_retries=0", "--ServerApp.open_browser=False", f"--ServerApp.root_dir={work}",
               f"--IdentityProvider.token={SERVER_TOKEN}", f"--gateway-url={server.url}/jupyter",
               f"--GatewayClient.auth_token={ALICE}", "--GatewayClient.request_timeout=60"]
        if os.geteuid() == 0:
            cmd.append("--allow-root")
        with open(log, "ab") as f:
            proc = subprocess.Popen(cmd, stdout=f, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env,
                                    cwd=work)
        js = JupyterServer(proc, f"http://127.0.0.1:{port}", log)

        def ready():
            if proc.poll() is not None:
                return "exited"
            try:
                return js.api("GET", "/api/status", timeout=5).status_code == 200
            except requests.RequestException:
                return False

        if rbtest.wait_until(ready, "Jupyter Server to answer /api/status", 60) is True:
            break
    else:
        raise AssertionError("Jupyter Server did not start:\n" + log.read_text(errors="replace")[-3000:])
    yield js
    proc.send_signal(signal.SIGKILL)
    proc.wait(30)


def test_kernelspecs_come_from_runbox(jupyter_server):
    r = jupyter_server.api("GET", "/api/kernelspecs")
    assert r.status_code == 200, r.text
    specs = r.json()
    assert specs["default"] == "python3"
    assert {"python3", "bash", "javascript", "typescript"} <= set(specs["kernelspecs"]), specs


def test_jupyter_kernel_client_through_jupyter_server(server, jupyter_server):
    with JupyterKernelClient(server_url=jupyter_server.url, token=SERVER_TOKEN) as kernel:
        sid = session_id_of(kernel.id)
        assert server.session(sid)["status"] in ("ready", "busy")  # the kernel is alice's session

        r = kernel.execute("x = 20\nprint(x + 1)")
        assert r["status"] == "ok" and r["outputs"] == [{"output_type": "stream", "name": "stdout", "text": "21\n"}], r

        r = kernel.execute("import matplotlib.pyplot as plt\nplt.plot([x, 1])\nplt.show()")
        assert r["status"] == "ok", r
        png = [o for o in r["outputs"] if o["output_type"] == "display_data"]
        assert len(png) == 1 and png[0]["data"]["image/png"].startswith("iVBORw0KGgo"), r

        r = kernel.execute("x * 2")
        assert r["outputs"][0]["output_type"] == "execute_result" and r["outputs"][0]["data"]["text/plain"] == "40", r

        r = kernel.execute("1 / 0")
        assert r["status"] == "error" and r["outputs"][0]["ename"] == "ZeroDivisionError", r

        # Jupyter Server lists it, with runboxd's model
        listed = jupyter_server.api("GET", "/api/kernels").json()
        assert kernel.id in {k["id"] for k in listed}, listed
    # leaving the block shut the kernel down through Jupyter Server: the session ended
    assert server.session(sid)["status"] == "ended"


def test_nbclient_executes_a_notebook_with_a_plot(server, jupyter_server, tmp_path):
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("import matplotlib.pyplot as plt\nxs = [1, 4, 9, 16]"),
                nbformat.v4.new_markdown_cell("a plot"),
                nbformat.v4.new_code_cell("fig, ax = plt.subplots()\nax.plot(xs)\nplt.show()"),
                nbformat.v4.new_code_cell("print(sum(xs))\nlen(xs)"),
                nbformat.v4.new_code_cell("!echo shell says hi\n%time total = sum(xs)")]
    km = KernelHttpManager(server_url=jupyter_server.url, token=SERVER_TOKEN)
    km.start_kernel(name="python3")
    sid = session_id_of(km.kernel["id"])
    client = km.client
    try:
        client.start_channels()
        nbc = NotebookClient(nb, km=km, timeout=120, kernel_name="python3")
        nbc.kc = client
        nbc.execute()
    finally:
        km.shutdown_kernel(now=True)  # first: the server then closes the socket the client reads
        client.stop_channels()
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert [c.execution_count for c in code] == [1, 2, 3, 4]
    assert code[0].outputs == []
    plots = [o for o in code[1].outputs if o.output_type == "display_data"]
    assert len(plots) == 1 and plots[0].data["image/png"].startswith("iVBORw0KGgo"), code[1].outputs
    out = {o.output_type: o for o in code[2].outputs}
    assert out["stream"].text == "30\n" and out["execute_result"].data["text/plain"] == "4", code[2].outputs
    text = "".join(o.get("text", "") for o in code[3].outputs)
    assert "shell says hi" in text and "Wall time" in text, code[3].outputs
    nbformat.validate(nb)  # what nbclient wrote is a valid notebook
    nbformat.write(nb, tmp_path / "executed.ipynb")
    assert server.session(sid)["status"] == "ended"


def test_a_failing_cell_stops_the_notebook(server, jupyter_server):
    from nbclient.exceptions import CellExecutionError

    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("a = 1"), nbformat.v4.new_code_cell("raise ValueError('bad cell')"),
                nbformat.v4.new_code_cell("print('never')")]
    km = KernelHttpManager(server_url=jupyter_server.url, token=SERVER_TOKEN)
    km.start_kernel(name="python3")
    client = km.client
    t0 = time.monotonic()
    try:
        client.start_channels()
        nbc = NotebookClient(nb, km=km, timeout=60)
        nbc.kc = client
        with pytest.raises(CellExecutionError) as e:
            nbc.execute()
        assert "ValueError" in str(e.value) and "bad cell" in str(e.value)
    finally:
        km.shutdown_kernel(now=True)
        client.stop_channels()
    assert nb.cells[2].outputs == [] and nb.cells[2].execution_count is None
    assert time.monotonic() - t0 < 60


def test_nbclient_gets_rich_outputs_as_a_notebook_holds_them(server, jupyter_server, tmp_path):
    """Issue 38: display_data with the whole bundle and metadata, update_display_data by
    display_id, clear_output and execute_result with every format, as nbclient folds them into
    a notebook that nbformat validates."""
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("import pandas as pd\npd.DataFrame({'a': [1, 2]})"),
                nbformat.v4.new_code_cell("from IPython.display import display, Markdown, JSON, clear_output\n"
                                          "display(Markdown('# kept?'))\n"
                                          "clear_output()\n"
                                          "h = display(Markdown('*old*'), display_id='p')\n"
                                          "h.update(Markdown('*new*'))\n"
                                          "JSON({'k': [1, 2]})")]
    km = KernelHttpManager(server_url=jupyter_server.url, token=SERVER_TOKEN)
    km.start_kernel(name="python3")
    client = km.client
    try:
        client.start_channels()
        nbc = NotebookClient(nb, km=km, timeout=600, kernel_name="python3")  # pandas' first import
        nbc.kc = client
        nbc.execute()
    finally:
        km.shutdown_kernel(now=True)
        client.stop_channels()
    frame, = nb.cells[0].outputs
    assert frame.output_type == "execute_result" and "<table" in frame.data["text/html"], frame
    assert frame.data["text/plain"].split() == ["a", "0", "1", "1", "2"]
    shown, value = nb.cells[1].outputs  # the cleared display is gone; the updated one shows *new*
    assert shown.output_type == "display_data" and shown.data["text/markdown"] == "*new*", nb.cells[1].outputs
    assert value.output_type == "execute_result" and value.data["application/json"] == {"k": [1, 2]}, value
    assert value.metadata == {"application/json": {"expanded": False, "root": "root"}}, value
    nbformat.validate(nb)


def test_update_display_and_clear_output_on_the_wire(jupyter_server):
    """The iopub messages themselves: update_display_data carries transient.display_id,
    clear_output its wait."""
    with JupyterKernelClient(server_url=jupyter_server.url, token=SERVER_TOKEN) as kernel:
        seen = []
        r = kernel.execute_interactive("from IPython.display import display, HTML, clear_output\n"
                           "h = display(HTML('<b>1</b>'), display_id='x')\nh.update(HTML('<b>2</b>'))\n"
                           "clear_output(wait=True)", output_hook=seen.append)
        assert r["content"]["status"] == "ok", r
        kinds = [(m["header"]["msg_type"], m["content"].get("transient"), m["content"].get("wait")) for m in seen
                 if m["header"]["msg_type"] in ("display_data", "update_display_data", "clear_output")]
        assert kinds == [("display_data", {"display_id": "x"}, None),
                         ("update_display_data", {"display_id": "x"}, None),
                         ("clear_output", None, True)], kinds
        assert seen[[m["header"]["msg_type"] for m in seen].index("update_display_data")]["content"]["data"] == {
            "text/plain": "<IPython.core.display.HTML object>", "text/html": "<b>2</b>"}

"""JupyterLab's terminals through Jupyter Server in gateway mode (jupyter-server and
jupyter_server_terminals, PyPI, unmodified). Gateway mode forwards kernels to runboxd's /jupyter
but runs terminals locally (terminado); with `ServerApp.terminado_settings["shell_command"]` set to
clients/jupyter-terminal/runbox-terminal, a terminal opened as JupyterLab opens one (POST
/api/terminals, then the terminado websocket /terminals/websocket/NAME) is a terminal in a runbox
sandbox: the shell runs as the sandbox user in /workspace, `set_size` reaches `stty size`, and
closing the terminal ends the sandbox runbox-terminal made for it.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import requests
import websocket

import rbtest
from conftest import ALICE

TOKEN = "jupyter-terminal-token-of-the-test"
RELAY = Path(__file__).resolve().parents[2] / "clients" / "jupyter-terminal" / "runbox-terminal"


@pytest.fixture(scope="module")
def jupyter(server, tmp_path_factory):
    work = tmp_path_factory.mktemp("jupyter-terminal")
    config = work / "config"
    config.mkdir()
    (config / "jupyter_server_config.json").write_text(json.dumps(
        {"ServerApp": {"terminado_settings": {"shell_command": [sys.executable, str(RELAY)]}}}))
    env = {**os.environ, "HOME": str(work), "JUPYTER_CONFIG_DIR": str(config), "JUPYTER_DATA_DIR": str(work / "data"),
           "JUPYTER_RUNTIME_DIR": str(work / "runtime"), "JUPYTER_PLATFORM_DIRS": "1",
           "E2B_API_URL": server.url + "/e2b", "E2B_SANDBOX_URL": server.url + "/e2b", "E2B_API_KEY": ALICE}
    env.pop("E2B_DEBUG", None)
    env.pop("E2B_DOMAIN", None)
    log = work / "jupyter-server.log"
    for _ in range(3):  # a port picked free can be taken meanwhile
        port = rbtest.free_port()
        cmd = [sys.executable, "-m", "jupyter_server", f"--ServerApp.port={port}", "--ServerApp.ip=127.0.0.1",
               "--ServerApp.port_retries=0", "--ServerApp.open_browser=False", f"--ServerApp.root_dir={work}",
               f"--IdentityProvider.token={TOKEN}", f"--gateway-url={server.url}/jupyter",
               f"--GatewayClient.auth_token={ALICE}", "--GatewayClient.request_timeout=60"]
        if os.geteuid() == 0:
            cmd.append("--allow-root")
        with open(log, "ab") as f:
            proc = subprocess.Popen(cmd, stdout=f, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env,
                                    cwd=work)
        url = f"http://127.0.0.1:{port}"

        def ready():
            if proc.poll() is not None:
                return "exited"
            try:
                return requests.get(url + "/api/status", headers={"Authorization": f"token {TOKEN}"},
                                    timeout=5).status_code == 200
            except requests.RequestException:
                return False

        if rbtest.wait_until(ready, "Jupyter Server to answer /api/status", 60) is True:
            break
    else:
        raise AssertionError("Jupyter Server did not start:\n" + log.read_text(errors="replace")[-3000:])
    yield url, log
    proc.send_signal(signal.SIGKILL)
    proc.wait(30)


class Term:
    def __init__(self, ws):
        self.ws, self.out = ws, ""

    def wait_for(self, needle: str, start: int = 0, deadline: float = 120) -> int:
        end = time.monotonic() + deadline
        while needle not in self.out[start:]:
            assert time.monotonic() < end, (needle, self.out[-2000:])
            self.ws.settimeout(min(10.0, max(1.0, end - time.monotonic())))
            try:
                msg = json.loads(self.ws.recv())
            except websocket.WebSocketTimeoutException:
                continue
            if msg[0] == "stdout":
                self.out += msg[1]
            assert msg[0] != "disconnect", self.out[-2000:]
        return self.out.index(needle, start) + len(needle)

    def type(self, text: str) -> None:
        self.ws.send(json.dumps(["stdin", text]))


def test_a_jupyterlab_terminal_runs_in_a_runbox_sandbox(server, jupyter):
    url, log = jupyter
    auth = {"Authorization": f"token {TOKEN}"}
    before = {s["session_id"] for s in server.get("/sessions").json()["sessions"] if s["status"] != "ended"}
    r = requests.post(url + "/api/terminals", headers=auth, timeout=60)
    assert r.status_code == 200, r.text
    name = r.json()["name"]
    ws = websocket.create_connection(f"ws://127.0.0.1:{url.rsplit(':', 1)[1]}/terminals/websocket/{name}",
                                     header=[f"Authorization: token {TOKEN}"], timeout=120)
    term = Term(ws)
    try:
        ws.send(json.dumps(["set_size", 33, 101, 600, 800]))
        term.type("echo at-$((20+1)); id -u; pwd\r")
        at = term.wait_for("at-21\r\n")
        at = term.wait_for("1000\r\n", at)  # the sandbox user, not Jupyter Server's
        at = term.wait_for("/workspace\r\n", at)
        term.type("stty size\r")
        term.wait_for("33 101\r\n", at)
        now = {s["session_id"] for s in server.get("/sessions").json()["sessions"] if s["status"] != "ended"}
        made = now - before
        assert len(made) == 1, (before, now)  # the terminal's own sandbox, alice's session
    finally:
        ws.close()
    r = requests.delete(url + f"/api/terminals/{name}", headers=auth, timeout=60)
    assert r.status_code == 204, r.text
    sid = made.pop()
    rbtest.wait_until(lambda: server.session(sid)["status"] == "ended", "the terminal's sandbox to end", 120)

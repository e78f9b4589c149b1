"""Isolation you choose (issue 26): one runboxd over a runc engine and an engine that also offers
gVisor (Debian's runsc, registered in that nested dockerd's daemon.json by the node's entrypoint:
RUNBOX_NODE_RUNSC, with --network=none, on the KVM platform where /dev/kvm is hardware
virtualization and on ptrace otherwise: enginehub.gvisor_platform; this machine's /dev/kvm is PVM,
where gVisor's KVM platform hangs, docs/security.md). Each engine declares what it offers (--engine
...,runtimes=); sessions ask with execution_options.isolation.

What is checked: placement (gvisor sessions only where runsc is, /health and /metrics name the
runtimes); the same Python, bash and JavaScript results under both, plots, files both ways,
timeouts with and without a reset, interrupts, a restart of the interpreter; a fork bomb meets
its process limit and the session goes on; an out-of-memory ends a gVisor session with the reason
(the whole sandbox dies there) while runc kills only the worker; a kill -9 of runboxd and a
restart find both kinds again, with their variables; refusals: an unknown word (400), a key held
to runc (403), no engine that offers gVisor (503 naming the runtime), and an engine that offers
it drained (503 naming why). Traffic: loopback, and the nodes on the test's own network.
"""

from __future__ import annotations

import hashlib
import sys
from pathlib import Path

import pytest

import enginehub
from enginehub import EngineCluster

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "integration"))

import rbtest  # noqa: E402

KEYS = {"alice": "alice-key-1", "runc-only": "runc-only-key-2", "gvisor-only": "gvisor-only-key-3",
        "ops": "ops-key-4"}
PLOT = ("import pandas as pd, matplotlib.pyplot as plt\n"
        "pd.DataFrame({'a': [1, 3, 2]}).plot(title='t')\nplt.show()\n'plotted'")


@pytest.fixture(scope="module")
def cluster(node_image, sandbox_image):
    with EngineCluster(n=2, image=node_image, sandbox_image=sandbox_image,
                       node_env={1: enginehub.gvisor_node_env()}) as c:
        c.require_runtime(1)
        yield c


def engine_args(c: EngineCluster, gvisor_runtimes: str = "runc+runsc") -> list[str]:
    return ["--engine", f"n1={c.nodes[0].url},runtimes=runc", "--engine",
            f"n2={c.nodes[1].url},runtimes={gvisor_runtimes}", "--engine-tls-ca", str(c.ca_pem),
            "--engine-tls-cert", str(c.client_cert), "--engine-tls-key", str(c.client_key),
            "--docker-timeout", "20"]


@pytest.fixture
def runboxd(cluster, tmp_path, start_runboxd):
    keys = tmp_path / "api-keys"
    keys.write_text(f"alice sha256:{hashlib.sha256(KEYS['alice'].encode()).hexdigest()}\n"
                    f"runc-only sha256:{hashlib.sha256(KEYS['runc-only'].encode()).hexdigest()} isolation=container\n"
                    f"gvisor-only sha256:{hashlib.sha256(KEYS['gvisor-only'].encode()).hexdigest()} isolation=gvisor\n"
                    f"ops sha256:{hashlib.sha256(KEYS['ops'].encode()).hexdigest()} role=admin\n")

    def make(extra=None, runtimes="runc+runsc"):
        return start_runboxd(engine_args(cluster, runtimes) + ["--api-keys-file", str(keys)] + list(extra or []),
                             KEYS["alice"])

    return make


def engine_of(s: dict) -> str:
    return s["container_id"].split("@", 1)[0]


def make(srv, isolation: str, language: str = "python", **eo) -> dict:
    s = srv.create_session({"language": language, "execution_options": {"isolation": isolation, **eo}},
                           timeout=rbtest.DEADLINE_S)
    assert s["execution_options"]["isolation"] == isolation, s
    return s


def run(srv, sid: str, code: str, **kw) -> dict:
    return srv.execute(sid, code, timeout=kw.pop("timeout", 60), **kw)


def test_both_kinds_place_right_and_answer_alike(runboxd, cluster):
    runsc = cluster.api(1, "GET", "/info").json()["Runtimes"]["runsc"]
    assert f"--platform={enginehub.gvisor_platform()}" in runsc["runtimeArgs"], runsc
    srv = runboxd(["--pool-size", "1", "--pool-other-isolation-size", "1"])
    h = srv.get("/health").json()
    assert h["docker"]["runtimes"] == ["runc", "runsc"], h["docker"]
    assert {e["name"]: e["runtimes"] for e in h["docker"]["engines"]} == {"n1": ["runc"], "n2": ["runc", "runsc"]}
    assert h["isolation"] == {"default": "container", "gvisor_runtime": "runsc"}
    metrics = srv.get("/metrics").text
    assert 'runbox_engine_runtime{engine="n2",runtime="runsc"} 1' in metrics
    assert 'runbox_engine_runtime{engine="n1",runtime="runsc"}' not in metrics
    # the pool keeps one of each; a gVisor session is a pool hit like a runc one
    rbtest.wait_until(lambda: all(p["ready"] == 1 for p in srv.get("/health").json()["pool"]["profiles"]),
                      "a warm sandbox of each isolation", rbtest.DEADLINE_S)
    hits = srv.get("/health").json()["pool"]["hits"]
    g = make(srv, "gvisor")
    assert engine_of(g) == "n2"
    assert srv.get("/health").json()["pool"]["hits"] == hits + 1
    c = make(srv, "container")
    default = srv.create_session({}, timeout=rbtest.DEADLINE_S)
    assert default["execution_options"]["isolation"] == "container"
    sessions = {"gvisor": g["session_id"], "container": c["session_id"]}
    # the kernel each one talks to: gVisor answers as its own (Linux 4.4.0 in this release)
    kernel = {k: run(srv, sid, "import platform; platform.release()")["result"] for k, sid in sessions.items()}
    assert kernel["gvisor"] != kernel["container"], kernel
    results = {}
    for kind, sid in sessions.items():
        r = run(srv, sid, "import os, sys\nx = sum(range(10))\nprint(os.getuid(), x)\nsys.stderr.write('e\\n')\nx * 2")
        assert r["status"] == "completed", r
        results[kind] = (r["stdout"], r["stderr"], r["result"])
        r = run(srv, sid, PLOT)
        assert r["status"] == "completed" and r["result"] == "'plotted'", r
        assert any(o["type"] == "display" and o.get("mime") == "image/png" and o["data"].startswith("iVBOR")
                   for o in r["outputs"]), r["outputs"]
        # files both ways
        up = srv.post(f"/sessions/{sid}/files", files={"file": ("in.csv", b"a,b\n1,2\n")})
        assert up.status_code in (200, 201), up.text
        assert run(srv, sid, "open('in.csv').read().split()[1]")["result"] == "'1,2'"
        run(srv, sid, "open('out.txt', 'w').write('from ' + 'inside')")
        down = srv.get(f"/sessions/{sid}/files/download?path=out.txt")
        assert down.status_code == 200 and down.content == b"from inside"
        # an install inside the sandbox (no network: a wheel the user uploaded), into the session
        wheel = rbtest.pure_wheel("rbgvisordemo", "1.0", {"rbgvisordemo.py": b"answer = 42\n"})
        up = srv.post(f"/sessions/{sid}/files", files={"file": ("rbgvisordemo-1.0-py3-none-any.whl", wheel)})
        assert up.status_code in (200, 201), up.text
        r = run(srv, sid, "%pip install -q rbgvisordemo-1.0-py3-none-any.whl\nimport rbgvisordemo\nrbgvisordemo.answer",
                timeout=120)
        assert r["status"] == "completed" and r["result"] == "42", (kind, r)
    assert results["gvisor"] == results["container"] == ("1000 45\n", "e\n", "90"), results
    # bash and JavaScript under gVisor give what they give under runc
    for lang, code, want in (("bash", "echo $((6 * 7)); whoami", "42\nsandbox\n"),
                             ("javascript", "console.log([1, 2, 3].map(x => x * 2).join(','))", "2,4,6\n")):
        outs = []
        for kind in ("gvisor", "container"):
            s = make(srv, kind, lang)
            r = run(srv, s["session_id"], code)
            assert r["status"] == "completed", r
            outs.append(r["stdout"])
            srv.delete_session(s["session_id"])
        assert outs == [want, want], (lang, outs)
    # MCP's create_session takes it in execution_options too
    assert mcp_create(srv, {"isolation": "gvisor"})["execution_options"]["isolation"] == "gvisor"


def mcp_create(srv, eo: dict) -> dict:
    """MCP create_session (2025-06-18 over streamable HTTP) with execution_options eo: the session."""
    h = {"Accept": "application/json, text/event-stream"}
    r = srv.post("/mcp", {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}, headers=h)
    assert r.status_code == 200, r.text
    h["Mcp-Session-Id"] = r.headers["Mcp-Session-Id"]
    h["Mcp-Protocol-Version"] = "2025-06-18"
    srv.post("/mcp", {"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=h)
    r = srv.post("/mcp", {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
        "name": "create_session", "arguments": {"execution_options": eo}}}, headers=h)
    res = rbtest.mcp_answer(r, 2)["result"]
    assert not res.get("isError"), res
    srv.track(res["structuredContent"])
    return res["structuredContent"]


def test_timeouts_interrupts_resets_and_restart_under_gvisor(runboxd):
    srv = runboxd(["--pool-size", "0"])
    sid = make(srv, "gvisor")["session_id"]
    run(srv, sid, "y = 7")
    r = run(srv, sid, "while True: pass", timeout=2)
    assert r["status"] == "timeout" and r["reset"] is False, r
    assert run(srv, sid, "print(y)")["stdout"] == "7\n"
    # a cell that swallows interrupts is reset: a fresh interpreter, forked from the preloaded one
    r = run(srv, sid, "while True:\n    try:\n        while True:\n            pass\n    except KeyboardInterrupt:\n"
                      "        pass\n", timeout=2)
    assert r["status"] == "timeout" and r["reset"] is True, r
    r = run(srv, sid, "import sys\n('y' in globals(), 'pandas' in sys.modules)")
    assert r["result"] == "(False, True)", "the reset keeps the preload (the zygote works under gVisor): %s" % r
    # an interrupt of a running cell
    rid = srv.execute(sid, "import time; time.sleep(60)", wait=False)["request_id"]
    srv.wait_status(rid, "running")
    assert srv.delete(f"/execute/{rid}").status_code in (200, 202)
    assert srv.wait_done(rid)["status"] in ("cancelled", "error"), srv.results(rid)
    # Jupyter's restart: a fresh interpreter in place
    r = srv.post(f"/jupyter/api/kernels/{rbtest_kernel_id(sid)}/restart", headers={"Authorization": f"token {KEYS['alice']}"})
    assert r.status_code == 200, r.text
    rbtest.wait_until(lambda: run(srv, sid, "1")["status"] == "completed", "the restarted interpreter", 60)
    run(srv, sid, "z = 'kept'")
    # kill -9 and restart: both kinds found again with their variables
    cid = make(srv, "container")["session_id"]
    run(srv, cid, "z = 'kept too'")
    srv.kill9()
    srv.start()
    assert run(srv, sid, "z")["result"] == "'kept'"
    assert run(srv, cid, "z")["result"] == "'kept too'"
    assert srv.session(sid)["execution_options"]["isolation"] == "gvisor"


def rbtest_kernel_id(sid: str) -> str:
    """The Jupyter kernel id of a session: its hex digits as a UUID (docs/jupyter.md)."""
    h = sid[2:]
    return f"{h[0:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:32]}"


def test_fork_bombs_and_memory_under_both(runboxd):
    srv = runboxd(["--pool-size", "0"])
    bomb = ("import os, time\nn = 0\ntry:\n    for i in range(2000):\n        if os.fork() == 0:\n"
            "            time.sleep(20); os._exit(0)\n        n += 1\nexcept OSError as e:\n    err = e.errno\nn")
    for kind in ("gvisor", "container"):
        sid = make(srv, kind, memory_limit="256m")["session_id"]
        run(srv, sid, "v = 1")
        r = run(srv, sid, bomb, timeout=60)
        assert r["status"] == "completed", (kind, r)
        assert 16 <= int(r["result"]) < 256, (kind, r["result"])
        assert run(srv, sid, "(v, err)")["result"] == "(1, 11)", "EAGAIN, and the session goes on"
        # 1.5 GB in a 256 MiB session (its sandbox holds 1 GiB with /workspace and /tmp): runc kills the worker, the session goes on (reset);
        # gVisor's sandbox dies whole, and the session ends saying why
        r = run(srv, sid, "a = bytearray(1500 * 1024 * 1024)\nlen(a)", timeout=60)
        assert r["status"] == "error", (kind, r)
        if kind == "container":
            said = "%s %s %s" % (r["error"], r.get("reset_reason"), r["stderr"])
            assert "memory" in said.lower(), r
            assert run(srv, sid, "1 + 1")["result"] == "2"
        else:
            rbtest.wait_until(lambda: srv.session(sid)["status"] == "dead", "the gVisor session ends", 60)
            assert "memory" in srv.session(sid)["end_reason"], srv.session(sid)


def test_refusals_name_the_cause(runboxd, cluster):
    srv = runboxd(["--pool-size", "0"])
    r = srv.post("/sessions", {"execution_options": {"isolation": "kata"}})
    assert r.status_code == 400 and "container" in r.text and "gvisor" in r.text, r.text
    # a key held to runc may not ask for gVisor; one held to gVisor gets it by default
    r = srv.post("/sessions", {"execution_options": {"isolation": "gvisor"}},
                 headers={"Authorization": f"Bearer {KEYS['runc-only']}"})
    assert r.status_code == 403 and "isolation=container" in r.text, r.text
    r = srv.post("/sessions", {}, headers={"Authorization": f"Bearer {KEYS['gvisor-only']}"})
    assert r.status_code == 201 and r.json()["execution_options"]["isolation"] == "gvisor", r.text
    assert engine_of(r.json()) == "n2"
    srv.delete(f"/sessions/{r.json()['session_id']}", headers={"Authorization": f"Bearer {KEYS['gvisor-only']}"})
    # the only engine that offers gVisor drained: 503 naming the runtime and why
    ops = {"Authorization": f"Bearer {KEYS['ops']}"}  # draining is an admin's (role=admin)
    assert srv.post("/engines/n2/drain", headers=ops).status_code == 200
    r = srv.post("/sessions", {"execution_options": {"isolation": "gvisor"}})
    assert r.status_code == 503 and "runsc" in r.text and "drained" in r.text, r.text
    assert srv.delete("/engines/n2/drain", headers=ops).status_code == 200
    # a network under this runsc (--network=none): refused, naming the flag, unless the operator says so
    srv3 = runboxd(["--pool-size", "0", "--egress"])
    r = srv3.post("/sessions", {"execution_options": {"isolation": "gvisor", "network": True}})
    assert r.status_code == 400 and "--gvisor-network" in r.text, r.text
    # no engine declares gVisor: 503 before any Docker call, naming how to declare it
    srv2 = runboxd(["--pool-size", "0"], runtimes="runc")
    r = srv2.post("/sessions", {"execution_options": {"isolation": "gvisor"}})
    assert r.status_code == 503 and "runsc" in r.text and "runtimes=" in r.text, r.text
    # ... and a server whose default is gvisor then does not start
    bad = rbtest.Server(srv2.workdir, engine_args(cluster, "runc") + ["--isolation", "gvisor"], name="bad")
    with pytest.raises(AssertionError):
        bad.start()
    assert "gvisor" in bad.log_text()

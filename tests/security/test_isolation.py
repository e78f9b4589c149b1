"""Isolation: host files and other sessions' files are out of reach, the root file system is
read-only, privileges cannot be regained, and there is no network unless the operator allows
it and the session asks for it. Network tests never leave this machine: they connect to
127.0.0.1 inside the container, or to a listener on the gateway of a Docker network the test
creates (runbox-test-*, label runbox.test=1), and look up names under .invalid."""

from __future__ import annotations

import ast
import json
import time
import socket
import threading
import uuid

import pytest

import sectest
from sectest import short


def test_other_sessions_files_are_invisible(guard):
    a = guard.create_session()["session_id"]
    b = guard.create_session()["session_id"]
    token = uuid.uuid4().hex
    assert guard.value(a, f"open('/workspace/secret-{token}', 'w').write('a')\n"
                          f"open('/tmp/secret-{token}', 'w').write('a')") == "1"
    found = guard.value(b, f"import os\nhits = []\nfor top in ('/workspace', '/tmp', '/var', '/home', '/opt'):\n"
                           f"    for d, _, files in os.walk(top):\n"
                           f"        hits += [os.path.join(d, f) for f in files if {token!r} in f]\nhits")
    assert found == "[]"
    # The other session's container and runboxd are not visible as processes either.
    procs = guard.value(b, "import os\ncmds = []\nfor p in os.listdir('/proc'):\n    if p.isdigit():\n"
                           "        try:\n            cmds.append(open(f'/proc/{p}/cmdline', 'rb').read())\n"
                           "        except OSError:\n            pass\nb''.join(cmds)")
    assert "runboxd" not in procs and "dockerd" not in procs and "containerd" not in procs


def test_host_files_are_out_of_reach(guard):
    sid = guard.create_session()["session_id"]
    here = str(guard.db)
    code = ("import os\n"
            "checks = {\n"
            f"    'db': os.path.exists({here!r}),\n"
            "    'docker.sock': os.path.exists('/var/run/docker.sock') or os.path.exists('/run/docker.sock'),\n"
            "    'work': os.path.exists('/work'),\n"
            "    'host_root': os.path.exists('/proc/1/root/work'),\n"
            "}\n"
            "try:\n    open('/etc/shadow').read()\n    checks['shadow'] = True\n"
            "except OSError:\n    checks['shadow'] = False\n"
            "checks")
    # (the value, not its layout: IPython pretty-prints a repr wider than 79 columns on several lines)
    assert ast.literal_eval(guard.value(sid, code)) == {"db": False, "docker.sock": False, "work": False,
                                                        "host_root": False, "shadow": False}
    assert guard.value(sid, "open('/etc/hostname').read().strip()") != repr(socket.gethostname())


def test_root_filesystem_is_read_only(guard):
    sid = guard.create_session()["session_id"]
    for path in ("/etc/evil", "/usr/bin/evil", "/opt/runbox/runner.py", "/evil", "/var/evil"):
        doc = guard.run(sid, f"open({path!r}, 'a').write('x')")
        assert doc["status"] == "error", short(doc)
        assert doc["error"]["ename"] in ("OSError", "PermissionError"), short(doc)
        assert "Read-only file system" in doc["error"]["evalue"] or "Permission denied" in doc["error"]["evalue"]
    for code in ("import os; os.setuid(0)", "import os; os.chmod('/opt/runbox/runner.py', 0o777)",
                 "import subprocess; subprocess.run(['mount', '-t', 'tmpfs', 'x', '/mnt'], check=True)"):
        doc = guard.run(sid, code)
        assert doc["status"] == "error", f"{code}: {short(doc)}"
    # The runner is intact: cells still run.
    assert guard.value(sid, "'intact'") == "'intact'"


def test_no_network_by_default(guard):
    sid = guard.create_session()["session_id"]
    port = guard.url.rsplit(":", 1)[1]
    doc = guard.run(sid, "import socket\nsocket.getaddrinfo('example.invalid', 80)")
    assert doc["status"] == "error" and doc["error"]["ename"] == "gaierror", short(doc)
    # 127.0.0.1 is the container's own loopback: runboxd's port is not there.
    doc = guard.run(sid, f"import socket\ns = socket.socket()\ns.settimeout(5)\ns.connect(('127.0.0.1', {port}))")
    assert doc["status"] == "error" and doc["error"]["ename"] == "ConnectionRefusedError", short(doc)
    ifaces = guard.value(sid, "sorted(l.split(':')[0].strip() for l in open('/proc/net/dev').readlines()[2:])")
    assert ifaces == "['lo']"


@pytest.fixture
def test_network():
    """A Docker network of the test's own, and a TCP listener on its gateway (on this host)."""
    name = f"runbox-test-net-{uuid.uuid4().hex[:12]}"
    sectest.docker("network", "create", "--label", "runbox.test=1", name)
    try:
        gw = sectest.docker("network", "inspect", name, "--format", "{{(index .IPAM.Config 0).Gateway}}").strip()
        lst = socket.socket()
        lst.bind((gw, 0))
        lst.listen(8)
        lst.settimeout(1)
        stop = threading.Event()

        def serve():
            while not stop.is_set():
                try:
                    c, _ = lst.accept()
                except OSError:
                    continue
                with c:
                    c.sendall(b"hello-from-test-net\n")

        t = threading.Thread(target=serve, daemon=True)
        t.start()
        yield name, gw, lst.getsockname()[1]
        stop.set()
        t.join()
        lst.close()
    finally:
        # Containers still attached would block the removal: the servers are stopped first.
        sectest.docker("network", "rm", name, check=False)


CONNECT = ("import socket\ns = socket.create_connection(({gw!r}, {port}), timeout=10)\n"
           "s.recv(100).decode()")


@sectest.gvisor_skip("runsc runs with --network=none here, so a sandbox has no network stack: a networked "
                     "session (its internal network, its egress proxy) cannot work; and the test's listener on "
                     "the network's gateway would be inside the nested engine, out of the host's reach")
def test_network_only_when_allowed_and_asked_and_only_through_the_proxy(make_server, test_network, guard):
    net, gw, port = test_network
    # This server (the default) refuses network access, in plain words.
    r = guard.http.post(guard.url + "/sessions", json={"execution_options": {"network": True}}, timeout=30)
    assert r.status_code == 403 and r.json()["error"]["code"] == "forbidden", r.text
    msg = r.json()["error"]["message"]
    assert "network" in msg and "--egress" in msg, msg
    # A session of the default server cannot reach the test network's gateway.
    sid = guard.create_session()["session_id"]
    doc = guard.run(sid, CONNECT.format(gw=gw, port=port))
    assert doc["status"] == "error" and doc["error"]["ename"] in ("OSError", "TimeoutError"), short(doc)

    # Even the operator's own address range listed, a networked sandbox has no route to it: its one
    # way out is its egress proxy (HTTP and HTTPS to allowed names), not the egress network.
    srv = make_server(["--egress=true", f"--egress-network={net}", f"--egress-cidr={gw}/32", "--pool-size=0"])
    try:
        s = srv.create_session(execution_options={"network": True})
        assert s["execution_options"]["network"]["allow"] == ["pypi.org", "files.pythonhosted.org",
                                                              "registry.npmjs.org"], s
        mode = sectest.inspect(s["container_id"])["HostConfig"]["NetworkMode"]
        assert mode == f"runbox-net-{s['session_id']}", mode
        info = json.loads(sectest.docker("network", "inspect", mode))[0]
        assert info["Internal"] is True and info["Options"].get("com.docker.network.bridge.inhibit_ipv4") == "true"
        proxy = sectest.inspect(f"{mode}-proxy")
        assert set(proxy["NetworkSettings"]["Networks"]) == {mode, net}, proxy["NetworkSettings"]["Networks"]
        doc = srv.run(s["session_id"], CONNECT.format(gw=gw, port=port))
        assert doc["status"] == "error" and doc["error"]["ename"] in ("OSError", "TimeoutError"), short(doc)
        # On the same server, a session that did not ask has no network.
        other = srv.create_session()
        assert sectest.inspect(other["container_id"])["HostConfig"]["NetworkMode"] == "none"
        r = srv.http.post(srv.url + "/sessions", json={"execution_options": {"network": "yes"}}, timeout=30)
        assert r.status_code == 400 and "network" in r.json()["error"]["message"]
        # Its proxy and network go with the session.
        srv.http.delete(f"{srv.url}/sessions/{s['session_id']}", timeout=30).raise_for_status()
        deadline = time.monotonic() + sectest.DEADLINE_S
        while sectest.docker("network", "ls", "-q", "--filter", f"name=^{mode}$").strip():
            assert time.monotonic() < deadline, f"network {mode} still there after the session ended"
            time.sleep(0.2)
        assert sectest.docker("ps", "-aq", "--filter", f"name=^{mode}-proxy$").strip() == ""
    finally:
        srv.stop()


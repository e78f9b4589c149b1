"""The harness of several Docker engines (enginehub.EngineCluster) that the multi-engine tests
use: three nested engines on an internal network, over TLS with client certificates, each with the
host's sandbox image; what pausing, partitioning, stopping and killing a node does to its API and
to its containers.

Every request goes from the host to a node's address on the network the cluster made.
Run: .venv/bin/python -m pytest tests/engines -q
"""

from __future__ import annotations

import json
import os
import struct
import subprocess
import time
import uuid

import pytest
import requests

import enginehub
from enginehub import EngineCluster, docker


@pytest.fixture(scope="module")
def cluster(node_image, sandbox_image):
    start = time.monotonic()
    with EngineCluster(n=3, image=node_image, sandbox_image=sandbox_image) as c:
        print("cluster up in %.1f s: %s" % (time.monotonic() - start, json.dumps(c.timings)))
        yield c
    print("cluster down: %s s" % c.timings.get("down"))


def demux(raw: bytes) -> tuple[str, str]:
    """stdout and stderr of a container's log (Tty false: 8-byte frame headers)."""
    out, err = [], []
    while len(raw) >= 8:
        stream, size = raw[0], struct.unpack(">I", raw[4:8])[0]
        (out if stream == 1 else err).append(raw[8:8 + size])
        raw = raw[8 + size:]
    return b"".join(out).decode(), b"".join(err).decode()


def sandbox_config(code: str) -> dict:
    """A container of the sandbox image restricted as runboxd restricts a sandbox."""
    return {
        "Image": enginehub.SANDBOX_IMAGE,
        "Entrypoint": ["python3", "-c", code],
        "User": "1000:1000",
        "NetworkDisabled": True,
        "Labels": {"runbox.test": "engines"},
        "HostConfig": {
            "NetworkMode": "none",
            "Memory": 256 << 20,
            "MemorySwap": 256 << 20,
            "NanoCpus": 1_000_000_000,
            "PidsLimit": 64,
            "ReadonlyRootfs": True,
            "CapDrop": ["ALL"],
            "SecurityOpt": ["no-new-privileges"],
            "Tmpfs": {"/tmp": "size=64m", "/workspace": "size=64m,uid=1000,gid=1000"},
            "Init": True,
        },
    }


def run_container(cluster, i: int, code: str) -> str:
    """Creates and starts a sandbox container on node i; its id."""
    r = cluster.api(i, "POST", "/containers/create", json=sandbox_config(code))
    assert r.status_code == 201, r.text
    cid = r.json()["Id"]
    r = cluster.api(i, "POST", "/containers/%s/start" % cid)
    assert r.status_code == 204, r.text
    return cid


def container_state(cluster, i: int, cid: str) -> dict:
    r = cluster.api(i, "GET", "/containers/%s/json" % cid)
    assert r.status_code == 200, r.text
    return r.json()["State"]


def remove_container(cluster, i: int, cid: str) -> None:
    cluster.api(i, "DELETE", "/containers/%s" % cid, params={"force": "1"})


def test_three_engines_answer_over_tls_with_the_client_certificate(cluster):
    assert len(cluster.nodes) == 3
    assert len({n.ip for n in cluster.nodes}) == 3
    for node in cluster.nodes:
        assert node.url == "tcp://%s:2376" % node.ip
        assert node.https_url == "https://%s:2376" % node.ip
        r = cluster.engine_request(node.index, "GET", "/version")
        assert r.status_code == 200, r.text
        v = r.json()
        assert tuple(int(x) for x in v["ApiVersion"].split(".")) >= (1, 41)
        assert node.api_version == v["ApiVersion"]
        assert cluster.api(node.index, "GET", "/_ping").text == "OK"
        info = cluster.api(node.index, "GET", "/info").json()
        assert info["Driver"] == "overlay2"
        assert info["Name"] == node.alias
    for f in ("ca.pem", "cert.pem", "key.pem"):
        assert (cluster.nodes[0].tls_dir / f).is_file()


def test_a_request_without_a_client_certificate_is_refused(cluster, tmp_path):
    for node in cluster.nodes:
        try:
            r = cluster.engine_request(node.index, "GET", "/version", client_cert=False, timeout=(3, 5))
        except requests.exceptions.RequestException as e:  # the TLS handshake fails
            assert isinstance(e, (requests.exceptions.SSLError, requests.exceptions.ConnectionError)), repr(e)
        else:
            assert 400 <= r.status_code < 500, (r.status_code, r.text)
    # a client certificate of another CA is refused as well
    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    subprocess.run(["openssl", "req", "-x509", *ec, "-keyout", "k.pem", "-out", "c.pem", "-days", "1",
                    "-subj", "/CN=stranger", "-addext", "extendedKeyUsage=clientAuth"],
                   cwd=tmp_path, check=True, capture_output=True)
    with cluster.session() as s:
        s.cert = (str(tmp_path / "c.pem"), str(tmp_path / "k.pem"))
        with pytest.raises((requests.exceptions.SSLError, requests.exceptions.ConnectionError)):
            s.get(cluster.nodes[0].https_url + "/version", timeout=(3, 5))
    # and the server is checked: without the cluster's CA the node's certificate is not trusted
    with cluster.session() as s:
        s.verify = True
        s.cert = None
        with pytest.raises(requests.exceptions.SSLError):
            s.get(cluster.nodes[0].https_url + "/version", timeout=(3, 5))


def test_the_docker_command_reaches_a_node_with_its_environment(cluster):
    node = cluster.nodes[1]
    env = {k: v for k, v in os.environ.items() if not k.startswith("DOCKER_")}
    env.update(node.docker_env())
    r = subprocess.run(["docker", "version", "--format", "{{.Server.APIVersion}}"], env=env, capture_output=True,
                       text=True, timeout=30)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == node.api_version


def test_every_node_has_the_sandbox_image_of_the_host(cluster):
    host_id = docker("image", "inspect", "-f", "{{.Id}}", enginehub.SANDBOX_IMAGE).strip()
    assert cluster.sandbox_image_id == host_id
    for node in cluster.nodes:
        r = cluster.api(node.index, "GET", "/images/%s/json" % enginehub.SANDBOX_IMAGE)
        assert r.status_code == 200, r.text
        assert r.json()["Id"] == host_id
        assert enginehub.SANDBOX_IMAGE in r.json()["RepoTags"]


def test_a_sandbox_container_on_node_0_prints_42(cluster):
    cid = run_container(cluster, 0, "print(6*7)")
    try:
        r = cluster.api(0, "POST", "/containers/%s/wait" % cid, timeout=(3, 60))
        assert r.status_code == 200, r.text
        assert r.json()["StatusCode"] == 0
        r = cluster.api(0, "GET", "/containers/%s/logs" % cid, params={"stdout": "1", "stderr": "1"})
        out, err = demux(r.content)
        assert out == "42\n", (out, err)
        # the limits are in force in the nested engine's cgroups
        hc = cluster.api(0, "GET", "/containers/%s/json" % cid).json()["HostConfig"]
        assert hc["Memory"] == 256 << 20 and hc["PidsLimit"] == 64
    finally:
        remove_container(cluster, 0, cid)
    # the container exists on node 0 only
    for i in (1, 2):
        assert cluster.api(i, "GET", "/containers/%s/json" % cid).status_code == 404


def test_limits_hold_inside_a_nested_sandbox(cluster):
    code = ("import os\n"
            "print(open('/sys/fs/cgroup/memory/memory.limit_in_bytes').read().strip())\n"
            "print(open('/sys/fs/cgroup/pids/pids.max').read().strip())\n"
            "try:\n    open('/etc/x', 'w')\nexcept OSError as e:\n    print('ro', e.errno)\n")
    cid = run_container(cluster, 2, code)
    try:
        assert cluster.api(2, "POST", "/containers/%s/wait" % cid, timeout=(3, 60)).json()["StatusCode"] == 0
        out, err = demux(cluster.api(2, "GET", "/containers/%s/logs" % cid,
                                     params={"stdout": "1", "stderr": "1"}).content)
        assert out.split() == [str(256 << 20), "64", "ro", "30"], (out, err)
    finally:
        remove_container(cluster, 2, cid)


def test_a_paused_node_does_not_answer_and_comes_back_with_its_containers(cluster):
    cid = run_container(cluster, 1, "import time\nprint('up', flush=True)\ntime.sleep(3600)")
    try:
        before = container_state(cluster, 1, cid)
        assert before["Running"]
        cluster.pause(1)
        try:
            assert cluster.state(1) == "paused"
            start = time.monotonic()
            assert not cluster.answers(1, timeout=3)
            assert time.monotonic() - start < 5
            assert cluster.answers(0) and cluster.answers(2)
        finally:
            cluster.unpause(1)
        assert cluster.answers(1)
        after = container_state(cluster, 1, cid)
        assert after["Running"] and after["Pid"] == before["Pid"] and after["StartedAt"] == before["StartedAt"]
    finally:
        remove_container(cluster, 1, cid)


def test_a_partitioned_node_keeps_its_address_and_containers(cluster):
    ip = cluster.nodes[2].ip
    cid = run_container(cluster, 2, "import time\ntime.sleep(3600)")
    try:
        before = container_state(cluster, 2, cid)
        cluster.partition(2)
        try:
            assert cluster.container_ip(2) is None
            assert not cluster.answers(2, timeout=3)
            assert cluster.answers(0) and cluster.answers(1)
        finally:
            cluster.heal(2)
        assert cluster.container_ip(2) == ip == cluster.nodes[2].ip
        assert cluster.answers(2)
        after = container_state(cluster, 2, cid)
        assert after["Running"] and after["Pid"] == before["Pid"]
    finally:
        remove_container(cluster, 2, cid)


def test_a_stopped_node_comes_back_without_its_running_containers(cluster):
    ip = cluster.nodes[0].ip
    cid = run_container(cluster, 0, "import time\ntime.sleep(3600)")
    t = time.monotonic()
    cluster.stop(0)
    stop_s = time.monotonic() - t
    assert cluster.state(0) == "exited"
    assert not cluster.answers(0, timeout=2)
    t = time.monotonic()
    cluster.start(0)
    start_s = time.monotonic() - t
    assert cluster.container_ip(0) == ip
    # dockerd stopped it on the way down (SIGTERM through the container's init: 143); it is not
    # started again (no restart policy) and is still there to inspect and remove
    state = container_state(cluster, 0, cid)
    print("stop %.1f s, start %.1f s; the container after the restart: %s" % (stop_s, start_s, json.dumps(state)))
    assert not state["Running"]
    assert state["Status"] == "exited" and state["ExitCode"] == 143
    remove_container(cluster, 0, cid)
    # the restarted engine runs new containers
    cid = run_container(cluster, 0, "print(6*7)")
    try:
        assert cluster.api(0, "POST", "/containers/%s/wait" % cid, timeout=(3, 60)).json()["StatusCode"] == 0
        assert demux(cluster.api(0, "GET", "/containers/%s/logs" % cid, params={"stdout": "1"}).content)[0] == "42\n"
    finally:
        remove_container(cluster, 0, cid)


def test_a_killed_node_comes_back_with_its_containers_dead(cluster):
    cid = run_container(cluster, 1, "import time\ntime.sleep(3600)")
    cluster.kill(1)
    assert cluster.state(1) == "exited"
    cluster.start(1)
    state = container_state(cluster, 1, cid)
    print("the container after the node was killed and started: %s" % json.dumps(state))
    assert not state["Running"] and state["Status"] == "exited"
    remove_container(cluster, 1, cid)


def test_teardown_leaves_nothing_behind_even_after_a_failure(node_image):
    prefix = "runbox-test-engine-teardown-%s" % uuid.uuid4().hex[:6]
    c = EngineCluster(n=1, prefix=prefix, image=node_image, sandbox_image=None, keep_volumes=False)
    with pytest.raises(RuntimeError, match="on purpose"):
        with c:
            assert c.answers(0)
            cluster_network, volume = c.network, c.nodes[0].volume
            raise RuntimeError("on purpose")
    assert docker("ps", "-aq", "--filter", "label=runbox.test.run=" + c.run).strip() == ""
    assert docker("network", "ls", "-q", "--filter", "name=" + cluster_network).strip() == ""
    assert docker("volume", "ls", "-q", "--filter", "name=" + volume).strip() == ""

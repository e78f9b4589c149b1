"""The baselines bench.py measures runboxd against, through Docker alone (no runboxd): a container
of the sandbox image created and started through the Engine API; runboxd's own container
configuration (inspected from a pool miss's container) created, started and pinged until the
runner answers; and `docker exec <container> python3 -c 'print(1)'`. The containers made here are
named runbox-test-bench-* and labelled runbox.test=1, and removed after each sample."""
import json
import os
import socket
import subprocess

from benchlib import DOCKER_SOCK, IMAGE, Engine, now


def clone_config(inspected):
    """An Engine API create body from a sandbox container's inspect data: runboxd's exact
    configuration (image, environment, limits, hardening, the tmpfs-backed /workspace volume),
    labelled as the benchmark's own so that runboxd never takes it for one of its containers."""
    conf = dict(inspected["Config"])
    for k in ("Hostname", "Domainname"):
        conf.pop(k, None)
    conf["Labels"] = {"runbox.test": "1"}
    hc = dict(inspected["HostConfig"])
    mounts = []
    for m in hc.get("Mounts") or []:
        m = json.loads(json.dumps(m))
        if isinstance(m.get("VolumeOptions"), dict):
            m["VolumeOptions"]["Labels"] = {"runbox.test": "1"}
        mounts.append(m)
    hc["Mounts"] = mounts
    conf["HostConfig"] = hc
    return conf


def attach_stream(eng, cid):
    """A hijacked attach connection (stdin, stdout, stderr) to cid, and the bytes already read."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(120)
    s.connect(DOCKER_SOCK)
    s.sendall(("POST %s/containers/%s/attach?stream=1&stdin=1&stdout=1&stderr=1 HTTP/1.1\r\nHost: docker\r\n"
               "Connection: Upgrade\r\nUpgrade: tcp\r\nContent-Length: 0\r\n\r\n" % (eng.prefix, cid)).encode())
    buf = b""
    while b"\r\n\r\n" not in buf:
        data = s.recv(4096)
        if not data:
            raise RuntimeError("docker attach: connection closed: %r" % buf[:200])
        buf += data
    head, rest = buf.split(b"\r\n\r\n", 1)
    if b" 101 " not in head.split(b"\r\n", 1)[0] and b" 200 " not in head.split(b"\r\n", 1)[0]:
        raise RuntimeError("docker attach: %r" % head[:200])
    return s, rest


def create_start_container(eng, name, conf, after_start=None):
    """Creates and starts a container of conf through the Engine API, calls after_start(id) when
    given, and removes the container: (create + start seconds, what after_start returned)."""
    t0 = now()
    st, body = eng.api("POST", "/containers/create?name=" + name, conf)
    if st != 201:
        raise RuntimeError("docker create failed: %s %r" % (st, body))
    cid = body["Id"]
    try:
        st, body = eng.api("POST", "/containers/%s/start" % cid)
        dt = now() - t0
        if st not in (204, 304):
            raise RuntimeError("docker start failed: %s %r" % (st, body))
        return dt, (after_start(cid) if after_start is not None else None)
    finally:
        eng.api("DELETE", "/containers/%s?force=1&v=1" % cid)


def baseline_runbox_container(inspected, n):
    """What a pool miss is made of, without runboxd: runboxd's own container configuration
    created and started through the Engine API, then attached and pinged until the runner
    answers (its Python started, its handshake). Returns (create+start seconds, start->pong
    seconds)."""
    eng = Engine()
    conf = clone_config(inspected)
    create_start, handshake = [], []

    def ping(cid):
        t1 = now()
        s, buf = attach_stream(eng, cid)
        try:
            s.sendall(b'{"op": "ping", "id": "bench"}\n')
            while b'"pong"' not in buf:
                data = s.recv(65536)
                if not data:
                    raise RuntimeError("the runner closed its output before answering: %r" % buf[-300:])
                buf += data
            return now() - t1
        finally:
            s.close()

    for i in range(n):
        dt, hs = create_start_container(eng, "runbox-test-bench-rb-%d-%d" % (os.getpid(), i), conf, ping)
        create_start.append(dt)
        handshake.append(hs)
    return create_start, handshake


def baseline_create_start(n):
    eng = Engine()
    samples = []
    mem = 512 * 1024 * 1024
    conf = {
        "Image": IMAGE, "User": "0", "Env": ["RUNBOX_LANGUAGE=python", "RUNBOX_SANDBOX=1"],
        "Labels": {"runbox.test": "1"},
        "AttachStdin": True, "AttachStdout": True, "AttachStderr": True, "OpenStdin": True, "Tty": False,
        "WorkingDir": "/workspace", "NetworkDisabled": True,
        "HostConfig": {"NetworkMode": "none", "Memory": mem, "MemorySwap": mem, "NanoCpus": 10**9,
                       "PidsLimit": 256, "ReadonlyRootfs": True, "CapDrop": ["ALL"],
                       "CapAdd": ["KILL", "SETGID", "SETUID"],
                       "SecurityOpt": ["no-new-privileges"], "Init": True, "LogConfig": {"Type": "none"},
                       "Tmpfs": {"/tmp": "rw,nosuid,nodev,size=256m", "/workspace": "rw,nosuid,nodev,size=512m"}},
    }
    for i in range(n):
        samples.append(create_start_container(eng, "runbox-test-bench-%d-%d" % (os.getpid(), i), conf)[0])
    return samples


def baseline_docker_exec(cid, n):
    samples = []
    for _ in range(n):
        t0 = now()
        out = subprocess.run(["docker", "exec", cid, "python3", "-c", "print(1)"], capture_output=True, text=True)
        dt = now() - t0
        if out.returncode != 0 or out.stdout != "1\n":
            raise RuntimeError("docker exec failed: %r" % out)
        samples.append(dt)
    return samples

"""runboxd against a Docker engine that hangs or is slow: a stalled container create ends the
session creation with a clear error within runboxd's own deadline (and frees its slot), and a
graceful stop while the warm pool is refilling leaves no container behind.

The hung or slow engine is a proxy on a unix socket of the test's own in front of the real
/var/run/docker.sock (runboxd's --docker-socket points at it); it relays bytes both ways and,
while told to, swallows container creates or starts (never forwards or answers them) or passes
creates on only after a delay.
"""

from __future__ import annotations

import os
import select
import shutil
import socket
import tempfile
import threading
import time

import rbtest
from rbtest import check_error

DOCKER_SOCK = "/var/run/docker.sock"


class EngineProxy:
    """Relays every connection to the real engine. While stall_creates (stall_starts) is set, a
    request that starts with `POST /v1.NN/containers/create` (`.../containers/<id>/start`) is
    swallowed: never forwarded, never answered. A create is passed on create_delay seconds after
    it arrived, whether or not its client is still there (as an engine busy with it would)."""

    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="rbproxy-", dir="/tmp")
        self.path = os.path.join(self.dir, "docker.sock")
        self.stall_creates = False
        self.stall_starts = False
        self.create_delay = 0.0
        self.creates = 0
        self.stalled = 0
        self._stop = threading.Event()
        self._listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._listener.bind(self.path)
        self._listener.listen(64)
        self._listener.settimeout(0.2)
        self._threads: list[threading.Thread] = []
        t = threading.Thread(target=self._accept, daemon=True)
        t.start()
        self._threads.append(t)

    def _accept(self):
        while not self._stop.is_set():
            try:
                client, _ = self._listener.accept()
            except socket.timeout:
                continue
            except OSError:
                return
            t = threading.Thread(target=self._relay, args=(client,), daemon=True)
            t.start()
            self._threads.append(t)

    @staticmethod
    def _kind(chunk: bytes) -> str:
        line = chunk.split(b"\r\n", 1)[0]
        if not line.startswith(b"POST /v1."):
            return ""
        path = line.split(b" ")[1].split(b"?")[0]
        if path.endswith(b"/containers/create"):
            return "create"
        if b"/containers/" in path and path.endswith(b"/start"):
            return "start"
        return ""

    def _relay(self, client: socket.socket):
        upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            upstream.connect(DOCKER_SOCK)
        except OSError:
            client.close()
            return
        swallowing = False
        try:
            while not self._stop.is_set():
                ready, _, _ = select.select([client, upstream], [], [], 0.2)
                for s in ready:
                    data = s.recv(65536)
                    if not data:
                        return
                    if s is client:
                        # A keep-alive connection carries one request at a time: a chunk that
                        # starts a create starts a request (its line arrives in one piece).
                        kind = "" if swallowing else self._kind(data)
                        if kind == "create":
                            self.creates += 1
                        if (kind == "create" and self.stall_creates) or (kind == "start" and self.stall_starts):
                            swallowing = True
                            self.stalled += 1
                        if swallowing:
                            continue
                        if kind == "create" and self.create_delay > 0:
                            time.sleep(self.create_delay)
                        upstream.sendall(data)
                    else:
                        client.sendall(data)
        except OSError:
            return
        finally:
            client.close()
            upstream.close()

    def close(self):
        self._stop.set()
        self._listener.close()
        for t in self._threads:
            t.join(timeout=5)
        shutil.rmtree(self.dir, ignore_errors=True)


def test_stalled_container_create_fails_clearly_and_frees_the_slot(sandbox_image, make_server):
    proxy = EngineProxy()
    srv = None
    try:
        srv = make_server(["--docker-socket", proxy.path, "--pool-size", "0", "--pool-bash-size", "0",
                           "--max-sessions", "1"])
        proxy.stall_creates = True
        # runboxd's own create deadline is well under this; without one the request hangs.
        r = srv.post("/sessions", {}, timeout=rbtest.DEADLINE_S)
        assert proxy.stalled >= 1, "the proxy never saw the container create"
        err = check_error(r, r.status_code if r.status_code in (503, 504) else 504)
        assert "docker" in err["message"].lower(), err
        assert proxy.path in err["message"] or "engine" in err["message"].lower(), err
        # /health still answers while the engine swallows creates.
        h = srv.get("/health", timeout=10)
        assert h.status_code == 200, h.text
        # The failed session does not hold the only slot (--max-sessions 1).
        assert srv.get("/sessions", timeout=10).json()["sessions"] == []
        proxy.stall_creates = False
        s = srv.create_session(timeout=rbtest.DEADLINE_S)
        assert srv.execute(s["session_id"], "6 * 7")["result"] == "42"
        srv.delete_session(s["session_id"])
    finally:
        if srv is not None:
            srv.stop()  # before the proxy goes: runboxd ends with its engine still there
        proxy.close()


def test_graceful_stop_while_the_pool_refills_leaves_no_container(sandbox_image, make_server):
    srv = make_server(["--pool-size", "2", "--pool-bash-size", "0"], start=False)
    srv.start()
    instance = srv.db_instance()
    assert instance, "runboxd keeps its instance id in its database"

    def refilling():
        pool = srv.get("/health", timeout=10).json()["pool"]
        return pool["starting"] > 0

    rbtest.wait_until(refilling, "the warm pool to start refilling", interval=0.01)
    assert srv.stop() == 0, srv.log_tail(40)
    assert rbtest.containers_with_label(f"runbox.instance={instance}") == [], srv.log_tail(40)
    # A create the engine was still working on must not surface after runboxd has gone.
    time.sleep(3)
    left = rbtest.containers_with_label(f"runbox.instance={instance}")
    assert left == [], f"containers of instance {instance} left behind: {left}\n{srv.log_tail(40)}"


def test_graceful_stop_removes_the_warm_containers_of_a_slow_engine(sandbox_image, make_server):
    # Creates take seconds and starts never answer, and a client keeps an idle connection open
    # (so the HTTP drain gives up after its 3 s). A stop that waited for the warm sandboxes to
    # come up before removing them, or that exited at the drain deadline while creates were in
    # flight, would leave their containers behind (the engine finishes a create even after its
    # client has gone).
    proxy = EngineProxy()
    srv = None
    idle = None
    try:
        srv = make_server(["--docker-socket", proxy.path, "--pool-size", "2", "--pool-bash-size", "0"],
                          start=False)
        proxy.create_delay = 3.3
        proxy.stall_starts = True
        srv.start()
        instance = srv.db_instance()
        assert instance, "runboxd keeps its instance id in its database"
        idle = socket.create_connection(("127.0.0.1", srv.port), timeout=10)
        idle.sendall(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        assert idle.recv(65536).startswith(b"HTTP/1.1 200"), "the idle client's request was not answered"
        rbtest.wait_until(lambda: proxy.creates >= 1, "the pool's first container create", interval=0.01)
        assert srv.stop() == 0, srv.log_tail(40)
        left = rbtest.containers_with_label(f"runbox.instance={instance}")
        assert left == [], f"containers of instance {instance} left behind: {left}\n{srv.log_tail(40)}"
        time.sleep(proxy.create_delay)  # a create still in the engine's hands must not surface later either
        left = rbtest.containers_with_label(f"runbox.instance={instance}")
        assert left == [], f"containers of instance {instance} surfaced after exit: {left}\n{srv.log_tail(40)}"
    finally:
        if idle is not None:
            idle.close()
        if srv is not None:
            srv.stop()
        proxy.close()

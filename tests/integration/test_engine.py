"""runboxd against a Docker engine that hangs or is slow: a stalled container create ends the
session creation with a clear error within runboxd's own deadline (and frees its slot), and a
graceful stop while the warm pool is refilling leaves no container behind.

The hung or slow engine is the fault-injecting proxy of dockerproxy.py on a unix socket of the
test's own in front of the real /var/run/docker.sock (runboxd's --docker-socket points at it):
it swallows container creates or starts (never forwards or answers them), or passes creates on
only after a delay. test_faults.py covers the other faults.
"""

from __future__ import annotations

import socket
import time

import dockerproxy as dp
import rbtest
from rbtest import check_error


def test_stalled_container_create_fails_clearly_and_frees_the_slot(sandbox_image, make_server):
    proxy = dp.DockerProxy()
    srv = None
    try:
        srv = make_server(["--docker-socket", proxy.path, "--pool-size", "0", "--pool-bash-size", "0",
                           "--max-sessions", "1", "--docker-timeout", "3"])
        stall = proxy.fault(dp.CREATE, "swallow")
        # runboxd's own create deadline (3 s) is well under this; without one the request hangs.
        r = srv.post("/sessions", {}, timeout=rbtest.DEADLINE_S)
        assert stall.hits >= 1, "the proxy never saw the container create"
        err = check_error(r, r.status_code if r.status_code in (503, 504) else 504)
        assert "docker" in err["message"].lower(), err
        assert proxy.path in err["message"] or "engine" in err["message"].lower(), err
        # /health still answers while the engine swallows creates.
        h = srv.get("/health", timeout=10)
        assert h.status_code == 200, h.text
        # The failed session does not hold the only slot (--max-sessions 1).
        assert srv.get("/sessions", timeout=10).json()["sessions"] == []
        proxy.clear()
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
    proxy = dp.DockerProxy()
    srv = None
    idle = None
    create_delay = 3.3
    try:
        srv = make_server(["--docker-socket", proxy.path, "--pool-size", "2", "--pool-bash-size", "0"],
                          start=False)
        proxy.fault(dp.CREATE, "delay_request", create_delay)
        proxy.fault(dp.START, "swallow")
        srv.start()
        instance = srv.db_instance()
        assert instance, "runboxd keeps its instance id in its database"
        idle = socket.create_connection(("127.0.0.1", srv.port), timeout=10)
        idle.sendall(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        assert idle.recv(65536).startswith(b"HTTP/1.1 200"), "the idle client's request was not answered"
        rbtest.wait_until(lambda: proxy.seen(dp.CREATE) >= 1, "the pool's first container create", interval=0.01)
        assert srv.stop() == 0, srv.log_tail(40)
        left = rbtest.containers_with_label(f"runbox.instance={instance}")
        assert left == [], f"containers of instance {instance} left behind: {left}\n{srv.log_tail(40)}"
        time.sleep(create_delay)  # a create still in the engine's hands must not surface later either
        left = rbtest.containers_with_label(f"runbox.instance={instance}")
        assert left == [], f"containers of instance {instance} surfaced after exit: {left}\n{srv.log_tail(40)}"
    finally:
        if idle is not None:
            idle.close()
        if srv is not None:
            srv.stop()
        proxy.close()

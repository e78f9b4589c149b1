"""runboxd driving a Docker engine over TCP (--docker-socket tcp://HOST:PORT) instead of its unix
socket: every kind of Engine API traffic runboxd makes goes over that connection: JSON calls
through libcurl, the runner's attach stream and an exec's output stream through runboxd's own
HTTP upgrade (docker/attach.c) on a uv_tcp_t. The engine is the real one, reached through the
relay of dockerproxy.py listening on a port of 127.0.0.1 (nothing leaves the machine); TLS to
remote engines is tested against engines of their own (tests/engines).
"""

from __future__ import annotations

import dockerproxy as dp
import rbtest


def test_sessions_files_commands_and_restart_over_tcp(sandbox_image, make_server):
    proxy = dp.DockerProxy(tcp=True)
    srv = None
    try:
        assert proxy.url.startswith("tcp://127.0.0.1:")
        srv = make_server(["--docker-socket", proxy.url, "--pool-size", "1"])
        health = srv.get("/health").json()
        assert health["docker"]["reachable"] is True, health
        assert "engines" not in health["docker"], health  # one engine: no names, nothing to drain
        rbtest.check_error(srv.post("/engines/local/drain"), 404, "--engine")
        s = srv.create_session(timeout=rbtest.DEADLINE_S)
        sid = s["session_id"]
        # the runner's attach stream: state kept between cells, both streams, the last value
        assert srv.execute(sid, "x = 6 * 7\nimport sys\nprint('out'); print('err', file=sys.stderr)")["stdout"] == "out\n"
        doc = srv.execute(sid, "x")
        assert doc["result"] == "42", doc
        # files: the archive API (JSON call with a tar body) and the sandbox's file helper (exec)
        r = srv.request("PUT", f"/sessions/{sid}/files?path=data.txt", data=b"over tcp")
        assert r.status_code in (200, 201), r.text
        assert srv.execute(sid, "open('data.txt').read()")["result"] == "'over tcp'"
        r = srv.get(f"/sessions/{sid}/files/download?path=data.txt")
        assert r.status_code == 200 and r.content == b"over tcp", r.text
        # an exec's output stream: a bash session's command through the E2B-style process API is
        # not REST; a timeout's interrupt and a reset go through the attach stream again
        doc = srv.execute(sid, "import time\nwhile True: time.sleep(0.1)", timeout=1)
        assert doc["status"] == "timeout", doc
        assert srv.execute(sid, "x + 1")["result"] == "43"
        assert proxy.seen(dp.ATTACH) >= 1 and proxy.seen(dp.CREATE) >= 1, proxy.requests[:20]
        # a restart re-attaches to the session's container over TCP
        srv.kill9()
        srv.start()
        rbtest.wait_until(lambda: srv.session(sid)["status"] == "ready", "the session back after the restart")
        assert srv.execute(sid, "x")["result"] == "42"
        srv.delete_session(sid)
    finally:
        if srv is not None:
            srv.stop()
        proxy.close()


def test_an_engine_that_does_not_listen_is_reported_by_its_address(sandbox_image, make_server):
    proxy = dp.DockerProxy(tcp=True)
    url = proxy.url
    proxy.close()  # nothing listens on that port of 127.0.0.1 now
    srv = make_server(["--docker-socket", url, "--pool-size", "0"], wait_docker=False)
    health = srv.get("/health").json()
    assert health["docker"]["reachable"] is False, health
    assert url in str(health["docker"]), health
    err = rbtest.check_error(srv.post("/sessions", {}), 503)
    assert url in err["message"], err

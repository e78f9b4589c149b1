"""runboxd against a Docker engine that misbehaves: a fault-injecting proxy on the Docker socket
(dockerproxy.py) delays, drops, truncates and stalls the answers of chosen Engine API calls and
cuts or stalls attach streams, and takes the engine away altogether and brings it back.

With each fault runboxd must answer clearly (a 502/503/504 with the error contract, naming
Docker, within its own Docker deadlines, which these tests set short with --docker-timeout and
--docker-transfer-timeout), keep running (/health answers, its memory and open files stay
bounded), lose no stored result (an execution that finished before the fault reads the same
afterwards; one that was running ends with a clear error, never stays "running"), leave no
container behind, and work again once the proxy relays everything (new sessions run code; a
session hit by the fault works, or has ended with a reason that says what happened).
"""

from __future__ import annotations

import os
import threading
import time

import pytest
from prometheus_client.parser import text_string_to_metric_families

import dockerproxy as dp
import rbtest
from rbtest import check_error

# Deadlines the tests give runboxd's Docker calls (seconds); the client waits at most ten times
# that for an answer, a bound for "it never answered", not a timing.
CALL_S = 2
ANSWER_S = 10 * CALL_S
ERROR_CODE = {502: "upstream_error", 503: "docker_unavailable", 504: "timeout"}


@pytest.fixture(scope="module")
def rig(sandbox_image, tmp_path_factory):
    """One proxy and one runboxd behind it (no warm pool, short Docker deadlines) for the module."""
    tmp = tmp_path_factory.mktemp("faults")
    proxy = dp.DockerProxy(tmp)
    srv = rbtest.Server(tmp, ["--docker-socket", proxy.path, "--pool-size", "0", "--pool-bash-size", "0",
                              "--docker-timeout", str(CALL_S), "--docker-transfer-timeout", str(CALL_S),
                              "--grace", "500"])
    try:
        srv.start()
        srv.fds0 = open_fds(srv.pid)
        yield proxy, srv
    finally:
        proxy.clear()
        proxy.up()
        rbtest.finish_servers([srv])
        proxy.close()


@pytest.fixture(autouse=True)
def engine_back(rig):
    """After each test: the proxy relays everything again and runboxd still answers."""
    yield
    proxy, srv = rig
    proxy.clear()
    proxy.up()
    assert srv.alive(), srv.log_tail(40)


def open_fds(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def instance_containers(srv: rbtest.Server) -> set[str]:
    inst = srv.db_instance()
    assert inst
    return set(rbtest.containers_with_label(f"runbox.instance={inst}"))


def live_containers(srv: rbtest.Server) -> set[str]:
    """The containers of the sessions runboxd calls live."""
    return {s["container_id"] for s in srv.get("/sessions", timeout=ANSWER_S).json()["sessions"]
            if s.get("container_id")}


def assert_nothing_left(srv: rbtest.Server) -> None:
    """Every container of the instance belongs to a live session (the rest are removed, also
    the ones whose create or removal the engine failed)."""
    rbtest.wait_until(lambda: instance_containers(srv) <= live_containers(srv),
                      "runboxd to remove the containers no session owns", deadline=30)


@pytest.fixture(autouse=True)
def no_strays(rig):
    """Containers of the instance that a live session does not own before a test (left by an
    earlier test that failed) are removed, so that each test's check sees only its own."""
    _, srv = rig
    rbtest.remove_containers(sorted(instance_containers(srv) - live_containers(srv)))


def docker_error(r, statuses: set[int]) -> dict:
    """Asserts r is one of statuses with the error contract and a message naming Docker."""
    assert r.status_code in statuses, f"expected one of {sorted(statuses)}, got {r.status_code}: {r.text[:500]}"
    err = check_error(r, r.status_code, "docker")
    assert err["code"] == ERROR_CODE[r.status_code], err
    return err


def scrape(srv: rbtest.Server) -> dict[tuple, float]:
    r = srv.get("/metrics", timeout=ANSWER_S)
    assert r.status_code == 200, r.text
    return {(smp.name, tuple(sorted(smp.labels.items()))): smp.value
            for fam in text_string_to_metric_families(r.text) for smp in fam.samples}


def failures(m: dict, operation: str, reason: str) -> float:
    return m[("runbox_docker_call_failures_total", (("operation", operation), ("reason", reason)))]


def unreachable(m: dict) -> float:
    """Docker calls of any operation that failed because the engine could not be reached."""
    return sum(v for (name, labels), v in m.items()
               if name == "runbox_docker_call_failures_total" and ("reason", "unreachable") in labels)


def works(srv: rbtest.Server) -> None:
    """A new session runs code."""
    sid = srv.create_session(timeout=ANSWER_S)["session_id"]
    assert srv.execute(sid, "6 * 7")["result"] == "42"
    srv.delete_session(sid)


# ---- creating a session ----------------------------------------------------------------------

CREATE_FAULTS = [
    (dp.CREATE, "drop", 0, 502),            # the engine created it; its answer is lost
    (dp.CREATE, "truncate", 40, 502),       # cut in the status line
    (dp.CREATE, "truncate_body", 10, 502),  # cut in the JSON body
    (dp.CREATE, "refuse", 0, 502),          # the connection closes before the engine saw it
    (dp.CREATE, "status", 500, 502),
    (dp.CREATE, "stall", 0, 504),
    (dp.CREATE, "delay", 1.5 * CALL_S, 504),  # created, answered after the deadline
    (dp.START, "drop", 0, 502),
    (dp.START, "status", 500, 502),
    (dp.START, "stall", 0, 504),
    (dp.ATTACH, "drop", 0, 502),
    (dp.ATTACH, "truncate", 30, 502),
    (dp.ATTACH, "status", 500, 502),
    (dp.ATTACH, "stall", 0, 504),
]


@pytest.mark.parametrize("pattern,mode,arg,status", CREATE_FAULTS,
                         ids=[f"{p.split()[-1].split('/')[-1] or 'create'}-{m}" for p, m, _, _ in CREATE_FAULTS])
def test_session_create_fault_answers_clearly_and_leaves_nothing(rig, pattern, mode, arg, status):
    proxy, srv = rig
    proxy.fault(pattern, mode, arg)
    r = srv.post("/sessions", {}, timeout=ANSWER_S)
    assert proxy.faulted, "the proxy never saw the call it should fault"
    docker_error(r, {status})
    assert srv.get("/health", timeout=ANSWER_S).status_code == 200
    assert srv.get("/sessions", timeout=ANSWER_S).json()["sessions"] == []
    proxy.clear()
    assert_nothing_left(srv)
    works(srv)
    proxy.faulted.clear()


def test_engine_slower_than_usual_but_within_the_deadline_is_waited_for(rig):
    proxy, srv = rig
    proxy.fault(dp.CREATE, "delay", CALL_S / 2)
    proxy.fault(dp.START, "delay_request", CALL_S / 2)
    works(srv)
    assert len(proxy.faulted) == 2, proxy.faulted
    proxy.faulted.clear()


def test_create_the_engine_finishes_after_the_deadline_leaves_no_container(rig):
    # The engine gets the create only after runboxd has given up on it (and removed the name,
    # which did not exist yet): the container that surfaces later must be removed too.
    proxy, srv = rig
    answered = proxy.answers(dp.CREATE)
    proxy.fault(dp.CREATE, "delay_request", CALL_S + 1)
    docker_error(srv.post("/sessions", {}, timeout=ANSWER_S), {504})
    rbtest.wait_until(lambda: proxy.answers(dp.CREATE) > answered, "the engine to carry out the late create",
                      deadline=15)
    proxy.clear()
    assert_nothing_left(srv)
    proxy.faulted.clear()


# ---- a session's attach stream -------------------------------------------------------------

TICKER = "import time\nfor i in range(1200):\n    print(i, flush=True)\n    time.sleep(0.05)\n"


@pytest.mark.parametrize("mode,arg", [("drop", 0), ("truncate", 100)])
def test_cut_attach_stream_reconnects_and_the_session_keeps_its_variables(rig, mode, arg):
    # The connection of a running sandbox is cut once (a new attach goes through): the cell
    # that ran ends with an error saying so, the session reconnects and goes on.
    proxy, srv = rig
    sess = srv.create_session(timeout=ANSWER_S)
    sid, cid = sess["session_id"], sess["container_id"]
    before = srv.execute(sid, "x = 6 * 7\nx")
    rid = srv.execute(sid, TICKER, wait=False)["request_id"]
    srv.wait_status(rid, "running")
    attaches = proxy.seen(dp.ATTACH)
    proxy.fault(dp.ATTACH, mode, arg, streams_only=True)
    res = srv.wait_done(rid, deadline=ANSWER_S)
    assert res["status"] == "error" and res["error"]["ename"] == "ConnectionLost", res
    assert "docker" in res["error"]["evalue"].lower() and "cut" in res["error"]["evalue"], res["error"]
    after = srv.execute(sid, "x")  # waits for the reconnection
    assert after["result"] == "42", after
    assert proxy.seen(dp.ATTACH) == attaches + 1
    s = srv.session(sid)
    assert s["status"] == "ready" and s["container_id"] == cid, s
    assert srv.results(before["request_id"]) == before
    srv.delete_session(sid)


@pytest.mark.parametrize("mode,arg", [("drop", 0), ("truncate", 100)])
def test_cut_attach_stream_that_cannot_reconnect_ends_the_session_and_keeps_finished_results(rig, mode, arg):
    # The engine keeps cutting attach connections: the session cannot reconnect and ends.
    proxy, srv = rig
    sess = srv.create_session(timeout=ANSWER_S)
    sid, cid = sess["session_id"], sess["container_id"]
    before = srv.execute(sid, "x = 6 * 7\nprint(x)\nx")
    assert before["status"] == "completed" and before["stdout"] == "42\n"
    rid = srv.execute(sid, TICKER, wait=False)["request_id"]
    srv.wait_status(rid, "running")
    assert proxy.open_streams() >= 1
    proxy.fault(dp.ATTACH, mode, arg)  # cuts the open stream (truncate: after 100 more bytes) and new ones
    res = srv.wait_done(rid, deadline=ANSWER_S)
    assert res["status"] == "error", res
    assert "docker" in res["error"]["evalue"].lower(), res["error"]
    assert "cut" in res["error"]["evalue"].lower(), res["error"]
    s = srv.session(sid)
    assert s["status"] == "dead" and "docker" in s["end_reason"].lower(), s
    assert srv.results(before["request_id"]) == before
    proxy.clear()
    rbtest.wait_until(lambda: not rbtest.container_exists(cid), "the dead session's container to go", deadline=30)
    works(srv)


def test_stalled_attach_stream_ends_the_execution_at_its_backstop(rig):
    proxy, srv = rig
    sid = srv.create_session(timeout=ANSWER_S)["session_id"]
    before = srv.execute(sid, "'kept'")
    proxy.fault(dp.ATTACH, "stall")  # nothing moves either way on the open stream
    res = srv.execute(sid, "print('never seen')", timeout=1)
    assert res["status"] == "error" and "answer" in res["error"]["evalue"], res
    assert srv.session(sid)["status"] == "dead"
    assert srv.results(before["request_id"]) == before
    proxy.clear()
    assert_nothing_left(srv)
    works(srv)


def test_a_sandbox_slow_past_the_backstop_but_answering_a_ping_keeps_its_session(rig):
    # A host so loaded that the sandbox answers nothing until long after the cell's timeout (CI at a
    # load of 100 on 2 cores: `1/0` took over a minute) is slow, not dead: at the backstop runboxd
    # pings the runner, and a pong gives the cell more time. Here the stream stalls past the
    # backstop, then relays again: the ping's pong and the cell's answer come, the session lives.
    proxy, srv = rig
    sid = srv.create_session(timeout=ANSWER_S)["session_id"]
    srv.execute(sid, "x = 'kept'")
    proxy.fault(dp.ATTACH, "stall", streams_only=True)
    rid = srv.execute(sid, "x + ' too'", timeout=1, wait=False)["request_id"]
    rbtest.wait_until(lambda: f"execution {rid}: no answer from the sandbox" in srv.log_text(),
                      "runboxd to ping the sandbox at the backstop", deadline=120)
    assert srv.session(sid)["status"] == "busy"
    proxy.clear()
    res = srv.wait_done(rid, deadline=ANSWER_S)
    assert res["status"] == "completed" and res["result"] == "'kept too'", res
    assert srv.execute(sid, "6 * 7")["result"] == "42"
    srv.delete_session(sid)


def test_attach_stream_held_for_a_moment_resumes_and_the_cell_keeps_all_its_output(rig):
    # The engine holds an open attach stream for 2 s both ways (a busy engine, a paused
    # proxy), then relays again: the cell running meanwhile completes with every line it printed,
    # in order, and the session goes on.
    proxy, srv = rig
    sid = srv.create_session(timeout=ANSWER_S)["session_id"]
    code = "import time\nfor i in range(80):\n    print('line', i, flush=True)\n    time.sleep(0.05)\n'end'"
    rid = srv.execute(sid, code, wait=False)["request_id"]
    srv.wait_status(rid, "running")
    held = len(proxy.held)
    proxy.fault(dp.ATTACH, "delay", 2, streams_only=True)
    res = srv.wait_done(rid, deadline=ANSWER_S)
    assert len(proxy.held) == held + 1, "the proxy never held the stream"
    assert res["status"] == "completed", res
    assert res["stdout"] == "".join(f"line {i}\n" for i in range(80)), res["stdout"]
    assert res["result"] == "'end'", res
    assert srv.execute(sid, "6 * 7")["result"] == "42"
    srv.delete_session(sid)


# ---- files: exec and archive calls ---------------------------------------------------------

FILE_FAULTS = [
    (dp.EXEC_CREATE, "stall", 0, 504),
    (dp.EXEC_START, "drop", 0, 502),
    (dp.EXEC_START, "truncate_body", 12, 502),  # in the middle of the helper's first output frame
    (dp.ARCHIVE, "stall", 0, 504),
    (dp.ARCHIVE, "drop", 0, 502),
    (dp.ARCHIVE, "truncate_body", 1000, 502),
    (dp.ARCHIVE, "status", 500, 502),
]


@pytest.fixture(scope="module")
def file_session(rig):
    proxy, srv = rig
    sid = srv.create_session(timeout=ANSWER_S)["session_id"]
    srv.execute(sid, "open('/workspace/a.txt', 'w').write('hello ' * 2000)")
    yield sid
    srv.delete(f"/sessions/{sid}")


@pytest.mark.parametrize("pattern,mode,arg,status", FILE_FAULTS,
                         ids=[f"{'exec' if 'exec' in p else 'archive'}-{m}" for p, m, _, _ in FILE_FAULTS])
def test_file_transfer_fault_answers_clearly_and_the_session_works_after(rig, file_session, pattern, mode, arg,
                                                                        status):
    proxy, srv = rig
    sid = file_session
    proxy.fault(pattern, mode, arg)
    docker_error(srv.get(f"/sessions/{sid}/files/download", params={"path": "a.txt"}, timeout=ANSWER_S), {status})
    if pattern != dp.ARCHIVE:
        docker_error(srv.get(f"/sessions/{sid}/files", timeout=ANSWER_S), {status})
    if mode in ("stall", "drop"):
        r = srv.post(f"/sessions/{sid}/files", files={"file": ("b.txt", b"b" * 5000)}, timeout=ANSWER_S)
        docker_error(r, {status})
    proxy.clear()
    r = srv.get(f"/sessions/{sid}/files/download", params={"path": "a.txt"}, timeout=ANSWER_S)
    assert r.status_code == 200 and r.content == b"hello " * 2000, r.text[:300]
    assert srv.session(sid)["status"] == "ready"
    assert srv.execute(sid, "len(open('/workspace/a.txt').read())")["result"] == "12000"


# ---- dependency installs and the Docker client's long connections --------------------------

WAIT = r"^POST /containers/[^/?]+/wait"
LONG_CONNECTIONS = 16  # docker/request.c's budget for calls that may last (waits, exec starts, archives)


def test_hung_installs_leave_file_transfers_their_connections(tmp_path):
    # Issue 9, finding 5: each dependency install waits for its helper container on one of the
    # Docker client's long connections. With the engine never answering those waits, as many
    # installs as there are long connections took them all and the files of every session
    # starved (504 after the transfer deadline). At most --max-installs (default 4) now run;
    # the others wait their turn, and downloads and uploads still answer.
    proxy = dp.DockerProxy(tmp_path)
    call_s = 5 * CALL_S  # many helper containers start at once: the engine is slower than usual
    srv = rbtest.Server(tmp_path, ["--docker-socket", proxy.path, "--pool-size", "0", "--pool-bash-size", "0",
                                   "--docker-timeout", str(call_s), "--docker-transfer-timeout", str(call_s),
                                   # never the internet: a filler that ran would find no index
                                   "--deps-index-url", "http://127.0.0.1:9/simple"])
    answers: list[int] = []
    threads: list[threading.Thread] = []
    try:
        srv.start()
        sid = srv.create_session(timeout=10 * call_s)["session_id"]
        srv.execute(sid, "open('/workspace/a.txt', 'w').write('hello ' * 2000)")
        proxy.fault(WAIT, "stall")  # the installers' waits never answer

        def install():  # a set no other test installs: suites run side by side (scripts/test)
            r = srv.http.post(f"{srv.url}/sessions/{sid}/dependencies", json={"dependencies": ["runbox-test-faults==1.0.0"]},
                              timeout=300)
            answers.append(r.status_code)

        threads += [threading.Thread(target=install, daemon=True) for _ in range(LONG_CONNECTIONS)]
        for t in threads:
            t.start()
        queued = lambda: srv.log_text().count("the dependency install waits for a slot")
        rbtest.wait_until(lambda: proxy.seen(WAIT) >= LONG_CONNECTIONS or
                          (proxy.seen(WAIT) >= 4 and queued() == LONG_CONNECTIONS - 4),
                          "the installs to hang in their waits or queue", deadline=120)
        r = srv.get(f"/sessions/{sid}/files/download", params={"path": "a.txt"}, timeout=10 * call_s)
        assert r.status_code == 200 and r.content == b"hello " * 2000, r.text[:300]
        r = srv.post(f"/sessions/{sid}/files", files={"file": ("b.txt", b"b" * 5000)}, timeout=10 * call_s)
        assert r.status_code in (200, 201), r.text[:300]
        assert srv.get("/health", timeout=10 * call_s).status_code == 200
        assert answers == [], answers  # the queued installs are still waiting, not refused
        assert proxy.seen(WAIT) == 4, f"{proxy.seen(WAIT)} installs wait on the engine at once"
    finally:
        # The engine goes away: the hung waits fail, and so does every install after them.
        proxy.down()
        for t in threads:
            t.join(timeout=10 * call_s * 3)
        proxy.clear()
        proxy.up()
        rbtest.finish_servers([srv])
        proxy.close()
    assert len(answers) == LONG_CONNECTIONS and all(a in (502, 503, 504) for a in answers), answers


# ---- removal, the engine going away, and what runboxd keeps --------------------------------

def test_failed_container_removal_is_retried(rig):
    proxy, srv = rig
    sess = srv.create_session(timeout=ANSWER_S)
    tried = proxy.seen(dp.REMOVE)
    proxy.fault(dp.REMOVE, "status", 500)
    assert srv.delete_session(sess["session_id"])["status"] == "ended"
    rbtest.wait_until(lambda: proxy.seen(dp.REMOVE) > tried, "runboxd to try the removal", deadline=ANSWER_S)
    assert rbtest.container_exists(sess["container_id"])
    proxy.clear()
    rbtest.wait_until(lambda: not rbtest.container_exists(sess["container_id"]),
                      "the removal to be tried again once the engine answers", deadline=30)


def test_engine_gone_and_back(rig):
    proxy, srv = rig
    sess = srv.create_session(timeout=ANSWER_S)
    sid, cid = sess["session_id"], sess["container_id"]
    before = srv.execute(sid, "'still here'")
    m0 = scrape(srv)

    proxy.down()  # every connection closed, the socket gone
    rbtest.wait_until(lambda: srv.session(sid)["status"] == "dead", "the cut session to end", deadline=ANSWER_S)
    reason = srv.session(sid)["end_reason"]
    assert "docker" in reason.lower(), reason
    docker_error(srv.post("/sessions", {}, timeout=ANSWER_S), {503})
    assert srv.results(before["request_id"]) == before
    h = srv.get("/health", timeout=ANSWER_S)
    assert h.status_code == 200, h.text
    assert unreachable(scrape(srv)) > unreachable(m0)

    proxy.up()
    rbtest.wait_until(lambda: srv.get("/health", timeout=ANSWER_S).json()["docker"]["reachable"],
                      "runboxd to see the engine again", deadline=30)
    rbtest.wait_until(lambda: not rbtest.container_exists(cid), "the dead session's container to go", deadline=30)
    works(srv)


def test_failures_are_counted_by_operation_and_reason(rig):
    proxy, srv = rig
    m0 = scrape(srv)
    proxy.fault(dp.CREATE, "status", 500, times=1)
    docker_error(srv.post("/sessions", {}, timeout=ANSWER_S), {502})
    proxy.fault(dp.CREATE, "stall", times=1)
    docker_error(srv.post("/sessions", {}, timeout=ANSWER_S), {504})
    proxy.fault(dp.CREATE, "refuse", times=2)  # curl tries a dead connection twice
    docker_error(srv.post("/sessions", {}, timeout=ANSWER_S), {502})
    m1 = scrape(srv)
    for reason in ("http_5xx", "timeout", "connection"):
        assert failures(m1, "create", reason) == failures(m0, "create", reason) + 1, reason
    assert failures(m1, "create", "http_4xx") == failures(m0, "create", "http_4xx")
    proxy.clear()
    assert_nothing_left(srv)


def test_runboxd_stays_bounded_after_the_faults(rig):
    """Runs last: after every fault above runboxd still answers, its resident memory is within
    the suite's bound and it holds no more open files than when it started (plus slack for
    idle connections to the engine)."""
    proxy, srv = rig
    works(srv)
    assert srv.get("/health", timeout=ANSWER_S).json()["status"] == "ok"
    assert rbtest.peak_rss_mb(srv.pid) < rbtest.RSS_LIMIT_MB
    rbtest.wait_until(lambda: open_fds(srv.pid) <= srv.fds0 + 30,
                      f"runboxd's open files to come back near {srv.fds0}", deadline=30)

"""runboxd holds the line against hostile code and hostile callers (issue 9): each test
reproduces one finding through the public interface (HTTP, or code run in a sandbox) against a
real runboxd and the real Docker engine, and checks that runboxd is still alive and the
answer says what happened."""

from __future__ import annotations

import rbtest

# Two 1600x1600 figures of noise: about 27 MB of base64 PNG, under the 32 MiB display cap. The
# result document carries the images twice (outputs and files), so an event stream that replays
# the outputs and then sends the document holds about 80 MB, more than one stream may buffer.
NOISY_FIGURES = """
import numpy as np, matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
rng = np.random.default_rng(1)
for _ in range(2):
    fig = plt.figure(figsize=(16, 16), dpi=100)
    fig.figimage(rng.random((1600, 1600, 3)))
plt.show()
"""


def test_event_stream_larger_than_its_buffer_ends_cleanly(server, session):
    """Finding 1: an overflowing SSE buffer during "done" crashed runboxd (NULL dereference)."""
    sid = session["session_id"]
    done = server.execute(sid, NOISY_FIGURES, timeout=120)
    assert done["status"] == "completed", done
    sizes = [len(o["data"]) for o in done["outputs"] if o["type"] == "display"]
    assert len(sizes) == 2 and sum(sizes) > 20_000_000, sizes
    rid = done["request_id"]
    # A plain replay: everything lands in the stream's buffer before the first write completes.
    with server.get(f"/execute/{rid}/events", stream=True, timeout=(10, 120)) as resp:
        assert resp.status_code == 200
        comments, events = rbtest.read_sse(resp)
    assert server.alive(), "runboxd died:\n" + server.log_tail()
    # The stream says why it ended early and where the whole result is.
    assert any("too slow" in c and "/results" in c for c in comments), comments[-3:]
    assert server.get("/health").status_code == 200
    again = server.results(rid)
    assert [len(o["data"]) for o in again["outputs"] if o["type"] == "display"] == sizes


def test_requests_while_stopping_get_503_and_the_core_outlives_them(make_server):
    """Finding 4: after SIGTERM, runboxd freed the core while keep-alive connections could still
    reach it. Now it stops, drains, frees the server, then the core; new requests get 503."""
    import signal
    import threading
    import time

    import requests

    s = make_server(["--pool-size", "0"])
    sid = s.create_session()["session_id"]
    client = requests.Session()  # one keep-alive connection, used before and after the signal
    assert client.get(s.url + "/health", timeout=10).status_code == 200
    inflight: dict = {}

    def run() -> None:
        try:
            r = requests.post(s.url + "/execute", json={"session_id": sid, "code": "import time\ntime.sleep(1.5)\n7",
                                                        "wait": True}, timeout=60)
            inflight["status"], inflight["body"] = r.status_code, r.json()
        except requests.RequestException as e:  # noqa: PERF203
            inflight["error"] = repr(e)

    t = threading.Thread(target=run)
    t.start()
    time.sleep(0.5)  # the execution is running
    s.expect_dead = True
    s.proc.send_signal(signal.SIGTERM)
    time.sleep(0.3)
    r = client.get(s.url + "/health", timeout=10)
    err = rbtest.check_error(r, 503, "stopping")
    assert err["code"] == "shutting_down"
    assert r.headers.get("retry-after")
    t.join(60)
    # The request that was running when the signal came is answered, not cut off.
    assert inflight.get("status") == 200, inflight
    assert inflight["body"]["result"] == "7"
    assert s.proc.wait(30) == 0, s.log_tail()
    assert not s.sanitizer_reports(), s.sanitizer_reports()


# User code writes to its own control pipe (fd named in sys.argv), as the worker does: messages
# the supervisor forwards to runboxd with the cell's id. 20 results of 8 MiB each.
FORGED_RESULTS = """
import json, os, sys
fd = int(sys.argv[-1])
line = (json.dumps({"t": "result", "text": "x" * (8 << 20)}) + "\\n").encode()
for _ in range(20):
    os.write(fd, line)
print("sent")
"""


def test_forged_results_are_bounded(make_server):
    """Finding 2: result and error items were not capped in runboxd, and the worker's own
    clipping is in user code's reach; 160 MiB of results grew runboxd and the execution's row
    could no longer be stored (it stayed running)."""
    s = make_server(["--pool-size", "0"])
    sid = s.create_session()["session_id"]
    doc = s.execute(sid, FORGED_RESULTS, timeout=120)
    assert doc["status"] == "completed", {k: doc[k] for k in ("status", "error")}
    results = [o for o in doc["outputs"] if o["type"] == "result"]
    assert len(results) == 1, len(results)
    assert len(results[0]["text"]) <= 4 * (1 << 20) + 4096 + 200, len(results[0]["text"])  # 1 MiB output limit
    assert "dropped" in results[0]["text"]
    assert doc["truncated"] is True and doc["dropped_bytes"] >= 19 * (8 << 20)
    # The stored row is readable and the session takes the next cell.
    assert s.results(doc["request_id"])["status"] == "completed"
    assert s.execute(sid, "1 + 1")["result"] == "2"
    rss = rbtest.peak_rss_mb(s.pid)
    assert rss < rbtest.RSS_LIMIT_MB, f"runboxd peak RSS {rss:.0f} MiB >= {rbtest.RSS_LIMIT_MB} MiB"


def _mcp_initialize(s, client_info=None):
    body = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                       "clientInfo": client_info or {"name": "t", "version": "1"}}}
    return s.post("/mcp", body, headers={"Accept": "application/json, text/event-stream"})


def test_event_streams_and_mcp_sessions_are_bounded(make_server):
    """Finding 6: REST event streams, MCP GET streams and MCP initialize records had no count
    limit, and a clientInfo could be as large as the body limit."""
    import requests

    s = make_server(["--pool-size", "0", "--max-streams", "3", "--max-mcp-sessions", "2"])
    sid = s.create_session()["session_id"]
    rid = s.execute(sid, "import time\ntime.sleep(30)", wait=False)["request_id"]
    streams = []
    for _ in range(3):
        r = requests.get(s.url + f"/execute/{rid}/events", stream=True, timeout=(10, 60))
        assert r.status_code == 200
        streams.append(r)
    r = s.get(f"/execute/{rid}/events", timeout=10)
    rbtest.check_error(r, 429, "max-streams")
    assert r.headers.get("retry-after")
    # Once the execution ends its streams end too, and a new one is admitted.
    assert s.delete(f"/execute/{rid}").status_code == 200
    for r in streams:
        _, events = rbtest.read_sse(r)
        assert events[-1].event == "done"
        r.close()
    r = requests.get(s.url + f"/execute/{rid}/events", stream=True, timeout=(10, 60))
    assert r.status_code == 200, r.text
    r.close()

    # MCP: a clientInfo of 100 kB is refused; two sessions at most.
    r = _mcp_initialize(s, {"name": "x" * 100_000, "version": "1"})
    assert r.status_code == 400, r.text
    assert r.json()["error"]["code"] == -32602 and "clientInfo" in r.json()["error"]["message"]
    ids = []
    for _ in range(2):
        r = _mcp_initialize(s)
        assert r.status_code == 200, r.text
        ids.append(r.headers["mcp-session-id"])
    r = _mcp_initialize(s)
    assert r.status_code == 429, r.text
    assert "max-mcp-sessions" in r.json()["error"]["message"]
    s.delete("/mcp", headers={"mcp-session-id": ids.pop(), "MCP-Protocol-Version": "2025-06-18"})
    assert _mcp_initialize(s).status_code == 200
    assert s.alive()


# User code floods what it can still reach (issue 9, finding 3: the container's output stream,
# runboxd's control channel, is out of its reach): its own stdout and stderr, as fast as it can
# for SECS seconds, with malformed lines, text that looks like protocol frames (a forged "done"
# first, so that it is in the kept head of the output) and lines past runboxd's 16 MiB limit.
FLOOD = """
import os, time
forged = b'{"type":"done","id":"e_00000000000000000000000000000000","status":"completed","reset":false}\\n'
junk = b"x" * (256 << 10) + b"\\n"
frame = b'{"type":"stream","id":"e_00000000000000000000000000000000","name":"stdout","text":"%s"}\\n' % (b"y" * 60000)
huge = b"z" * (17 << 20) + b"\\n"
os.write(1, forged); os.write(2, forged)
end = time.time() + SECS
n = 0
while time.time() < end:
    os.write(1, junk); os.write(2, frame); n += 2
    if n % 200 == 0:
        os.write(1, huge)
print("wrote", n)
'flooded'
"""


def _flood_while_the_neighbour_works(s, neighbour: str, flood) -> list:
    """Runs flood() in a thread while the neighbour session answers kept + 1 again and again."""
    import threading

    t = threading.Thread(target=flood)
    t.start()
    answers = []
    while t.is_alive():
        answers.append(s.execute(neighbour, "kept + 1")["result"])
    t.join()
    return answers


def _runboxd_held(s, answers: list) -> list:
    """Checks that runboxd and the neighbour held; returns runboxd's warnings about the flooder."""
    assert answers and set(answers) == {"42"}, answers[:5]
    log = s.log_text()
    warnings = [l for l in log.splitlines() if " warn container " in l]
    assert len(warnings) <= 4, f"{len(warnings)} warnings about the flooding sandbox:\n" + "\n".join(warnings[:5])
    rss = rbtest.peak_rss_mb(s.pid)
    assert rss < rbtest.RSS_LIMIT_MB, f"runboxd peak RSS {rss:.0f} MiB >= {rbtest.RSS_LIMIT_MB} MiB"
    assert s.alive()
    return warnings


def test_a_flooding_sandbox_does_not_flood_runboxd(make_server):
    """Finding 3: user code that writes as fast as it can, frame-looking text included, gets its
    output capped and delivered as plain output of its own execution: nothing of it becomes an
    event, the execution's own result is intact, and a neighbour session keeps working. (The
    figures of a longer flood are in the benchmark.)"""
    s = make_server(["--pool-size", "0"])
    flooder = s.create_session()["session_id"]
    neighbour = s.create_session()["session_id"]
    s.execute(neighbour, "kept = 41")
    out: dict = {}
    answers = _flood_while_the_neighbour_works(
        s, neighbour, lambda: out.update(s.execute(flooder, FLOOD.replace("SECS", "8"), timeout=120)))
    assert out["status"] == "completed" and out["result"] == "'flooded'" and out["error"] is None, \
        {k: (v[:300] if isinstance(v, str) else v) for k, v in out.items()}
    forged = '{"type":"done","id":"e_00000000000000000000000000000000","status":"completed","reset":false}\n'
    # Both streams share the execution's output budget: when the runner reads the stdout pipe's
    # megabytes first (a loaded host), stderr's first bytes may arrive after the head is spent and
    # be dropped with the rest of the middle (the drop marker then goes to stdout, the stream
    # dropped first). What does arrive is the code's own text, never an event: every stderr line is
    # one the code wrote (or the head's end / the tail's start of one) or a drop marker.
    assert out["stdout"].startswith(forged), out["stdout"][:300]
    frame = '{"type":"stream","id":"e_00000000000000000000000000000000","name":"stdout","text":"%s"}' % ("y" * 60000)
    for line in out["stderr"].splitlines():
        assert ("output dropped" in line and len(line) < 200) or any(
            w.startswith(line) or w.endswith(line) for w in (forged.rstrip("\n"), frame)), line[:300]
    assert out["stdout"].splitlines()[-1].startswith("wrote "), out["stdout"][-300:]
    assert "output dropped" in out["stdout"] + out["stderr"]
    _runboxd_held(s, answers)


# A runner taken over (which privilege separation is there to prevent: user code cannot write
# into the container's output stream) writes garbage straight into that stream, docker-init's
# stdout, which is the attach stream runboxd reads: malformed lines, forged frames, and lines past
# runboxd's 16 MiB line limit, as fast as it can for SECS seconds, and the same junk into its
# stderr. Run as the container's root from the host (docker exec), the only way in now. (Under
# gVisor, where the runner's supervisor is PID 1, a write to /proc/1/fd/1 reaches the stderr
# stream: runboxd bounds that one per second too.)
HOSTILE_RUNNER = """
import os, time
fd = os.open("/proc/1/fd/1", os.O_WRONLY)
err = os.open("/proc/1/fd/2", os.O_WRONLY)
junk = b"x" * (256 << 10) + b"\\n"
forged = b'{"type":"stream","id":"e_00000000000000000000000000000000","name":"stdout","text":"%s"}\\n' % (b"y" * 60000)
huge = b"z" * (17 << 20) + b"\\n"
end = time.time() + SECS
n = 0
while time.time() < end:
    os.write(fd, junk); os.write(fd, forged); os.write(err, junk); n += 2
    if n % 200 == 0:
        os.write(fd, huge)
print("wrote", n)
"""


def test_a_hostile_runner_does_not_flood_runboxd(make_server):
    """Finding 3 (runboxd's side): every byte from a sandbox is untrusted, even with the runner's
    channel out of user code's reach: bounded per line, per execution and per second, and what
    is dropped is logged at a limited rate; a neighbour session keeps working meanwhile."""
    s = make_server(["--pool-size", "0"])
    created = s.create_session()
    flooder, cid = created["session_id"], rbtest.engine_id(created["container_id"])
    neighbour = s.create_session()["session_id"]
    s.execute(neighbour, "kept = 41")
    rid = s.execute(flooder, "import time; time.sleep(10); 'slept'", wait=False, timeout=60)["request_id"]
    wrote: dict = {}
    answers = _flood_while_the_neighbour_works(
        s, neighbour,
        lambda: wrote.update(out=rbtest.docker("exec", "-u", "0", cid, "python3", "-c",
                                               HOSTILE_RUNNER.replace("SECS", "8"))))
    assert wrote["out"].startswith("wrote"), wrote
    done = s.wait_done(rid, deadline=120)
    assert done["status"] == "completed" and done["result"] == "'slept'", done
    assert _runboxd_held(s, answers), "the flood never reached runboxd: nothing was dropped"


def _raw_connect(s, timeout: float = 10):
    import socket

    return socket.create_connection(("127.0.0.1", s.port), timeout=timeout)


def _read_all(sock, deadline: float = 60) -> bytes:
    import time

    sock.settimeout(5)
    data, end = b"", time.monotonic() + deadline
    while time.monotonic() < end:
        try:
            chunk = sock.recv(1 << 20)
        except TimeoutError:
            continue
        except OSError:
            break
        if not chunk:
            break
        data += chunk
    return data


def test_connections_are_bounded(make_server):
    """Finding 6: h2o reads a whole request body (up to max(max-body, max-upload)) before any
    handler runs, and nothing bounded the connections: each could hold its body in runboxd's
    memory. Now one connection over --max-connections is answered 429 at once and closed."""
    import select
    import time

    conns, body_mb = 40, 6
    s = make_server(["--pool-size", "0", "--max-connections", "8", "--max-upload", "8m"])
    socks = [_raw_connect(s) for _ in range(conns)]
    refused, answers, end = set(), {}, time.monotonic() + 10
    while time.monotonic() < end and len(refused) < conns - 8:
        ready, _, _ = select.select(socks, [], [], 0.5)
        for sock in ready:
            answers[sock] = answers.get(sock, b"") + sock.recv(4096)
            if answers[sock].startswith(b"HTTP/1.1 429"):
                refused.add(sock)
    assert conns - 8 <= len(refused) < conns, f"{len(refused)} of {conns} connections refused"
    head, _, body = answers[next(iter(refused))].partition(b"\r\n\r\n")
    assert b"retry-after: 1" in head.lower() and b"connection: close" in head.lower(), head
    assert b"max-connections 8" in body and b'"too_many_requests"' in body, body
    # The connections let in start uploads of body_mb MiB each and stop short of the end.
    request = (f"PUT /sessions/s_nosuch/files?path=big.bin HTTP/1.1\r\nHost: 127.0.0.1:{s.port}\r\n"
               f"Content-Type: application/octet-stream\r\nContent-Length: {8 << 20}\r\n\r\n").encode()
    for sock in refused:
        sock.close()
    for sock in socks:
        if sock not in refused:
            sock.sendall(request + b"u" * (body_mb << 20))
    time.sleep(1)  # runboxd reads what was sent
    rss = rbtest.peak_rss_mb(s.pid)
    for sock in socks:
        sock.close()
    assert rss < rbtest.RSS_LIMIT_MB, f"runboxd peak RSS {rss:.0f} MiB >= {rbtest.RSS_LIMIT_MB} MiB"
    rbtest.wait_until(lambda: s.get("/health", timeout=10).status_code == 200, "runboxd to take connections again")
    assert 'runbox_http_refusals_total{reason="too_many_connections"}' in s.get("/metrics").text
    assert s.alive()


# One 1600x1600 figure of noise: about 13 MB of base64 PNG; a replay of its execution's events
# (the display output, then the result document with the image twice) is about 40 MB, under what
# one stream may buffer (64 MiB) but several together would hold far more than runboxd should.
NOISY_FIGURE = NOISY_FIGURES.replace("range(2)", "range(1)")


def test_event_streams_share_a_memory_budget(make_server):
    """Finding 6: each event stream could hold 2 x 64 MiB for a slow client, 64 streams about
    8 GiB. Now the streams share --max-stream-memory: the one that would pass it ends with the
    comment of a stream too slow, naming the setting, and runboxd's memory stays bounded."""
    streams = 6
    s = make_server(["--pool-size", "0", "--max-stream-memory", "64m"])
    sid = s.create_session()["session_id"]
    done = s.execute(sid, NOISY_FIGURE, timeout=120)
    assert done["status"] == "completed", done
    rid = done["request_id"]
    socks = []
    for _ in range(streams):  # each replay lands in its stream's buffer; none is read yet
        sock = _raw_connect(s)
        sock.sendall(f"GET /execute/{rid}/events HTTP/1.1\r\nHost: 127.0.0.1:{s.port}\r\n"
                     "Connection: close\r\n\r\n".encode())
        socks.append(sock)
    rbtest.wait_until(lambda: s.log_text().count("max-stream-memory, which all event streams share") >= 1,
                      "a stream to end over the shared budget", deadline=30)
    rss = rbtest.peak_rss_mb(s.pid)
    texts = [_read_all(sock).decode("utf-8", "replace") for sock in socks]
    for sock in socks:
        sock.close()
    assert rss < rbtest.RSS_LIMIT_MB, f"runboxd peak RSS {rss:.0f} MiB >= {rbtest.RSS_LIMIT_MB} MiB"
    ended = [t for t in texts if "read too slowly" in t and "max-stream-memory" in t]
    whole = [t for t in texts if "event: done" in t]
    assert ended and whole and len(ended) + len(whole) == streams, [(len(t), t[-300:]) for t in texts]
    assert all(f"/execute/{rid}/results" in t for t in ended), ended[0][-400:]
    assert s.get("/health").status_code == 200 and s.alive()

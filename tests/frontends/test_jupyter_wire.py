"""runboxd's /jupyter driven over a raw websocket (the `websockets` package), as a hostile or
careless client would: another key's kernel, a 100 MB message, a flood of requests that are never
read, interrupts and restarts over REST and over the channels, a socket that drops and comes
back, and a kernel that outlives a kill -9 of runboxd (a kernel is a runbox session).

Every wait polls with a deadline; what must be prompt (an interrupt) has a bound far below what it
stops (a 60 s sleep).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import time
import uuid

import pytest
import requests
import websockets

import rbtest
from conftest import ALICE, BOB, KEYS, session_id_of, start_kernel

DEADLINE = 60.0  # seconds a reply may take before the test fails (a bound, not a timing)
# The first cell after a restart waits for the fresh interpreter's imports: about a second
# here, 22 s once beside a pip install on both cores.
AFTER_RESTART = 180.0
# Memory bounds scale with rbtest.RSS_LIMIT_MB (200, or 800 for an ASan runboxd, whose
# quarantine keeps freed memory resident: 230 MB after the flood below).
RSS_SCALE = rbtest.RSS_LIMIT_MB / 200


def auth(key: str = ALICE) -> dict:
    return {"Authorization": f"token {key}"}


def rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status", encoding="ascii") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS in /proc/<pid>/status")


def message(msg_type: str, content: dict | None = None, channel: str | None = "shell") -> dict:
    m = {"header": {"msg_id": uuid.uuid4().hex, "msg_type": msg_type, "session": uuid.uuid4().hex,
                    "username": "test", "date": "", "version": "5.3"},
         "parent_header": {}, "metadata": {}, "content": content or {}}
    if channel is not None:
        m["channel"] = channel
    return m


class Channels:
    """One websocket on a kernel's channels."""

    def __init__(self, ws):
        self.ws = ws

    @classmethod
    async def open(cls, server: rbtest.Server, kid: str, key: str = ALICE, **kw) -> "Channels":
        url = f"ws://127.0.0.1:{server.port}/jupyter/api/kernels/{kid}/channels"
        return cls(await websockets.connect(url, additional_headers=auth(key), **kw))

    async def send(self, msg: dict) -> str:
        await self.ws.send(json.dumps(msg))
        return msg["header"]["msg_id"]

    async def replies(self, parent: str, deadline: float = DEADLINE) -> list[dict]:
        """Every message answering parent, until its status idle (or dead)."""
        end = time.monotonic() + deadline
        got = []
        while True:
            m = json.loads(await asyncio.wait_for(self.ws.recv(), max(0.1, end - time.monotonic())))
            if m["parent_header"].get("msg_id") != parent:
                continue
            got.append(m)
            if m["msg_type"] == "status" and m["content"]["execution_state"] in ("idle", "dead"):
                return got

    async def run(self, code: str, deadline: float = DEADLINE) -> tuple[dict, list[dict]]:
        """execute_request: (execute_reply's content, every message answering it)."""
        got = await self.replies(await self.send(message("execute_request", {"code": code, "silent": False})),
                                 deadline)
        reply = [m for m in got if m["msg_type"] == "execute_reply"]
        assert len(reply) == 1, got
        return reply[0]["content"], got

    async def close(self):
        await self.ws.close()


def stdout_of(msgs: list[dict]) -> str:
    return "".join(m["content"]["text"] for m in msgs if m["msg_type"] == "stream" and m["content"]["name"] == "stdout")


def test_another_keys_kernel_is_not_found(server, kernels):
    kid = start_kernel(server, kernels)
    base = "/jupyter/api/kernels/" + kid
    assert server.get(base, headers=auth(ALICE)).status_code == 200
    for method, path in [("GET", base), ("DELETE", base), ("POST", base + "/interrupt"), ("POST", base + "/restart"),
                         ("GET", base + "/channels")]:
        r = server.request(method, path, headers=auth(BOB))
        assert r.status_code == 404, (method, path, r.text)
        assert set(r.json()) == {"message", "reason"} and r.json()["reason"] == "Not Found", r.text
    # the same for its session id, and its channels: the upgrade is refused before any frame
    assert server.get("/jupyter/api/kernels/" + session_id_of(kid), headers=auth(BOB)).status_code == 404
    with pytest.raises(websockets.InvalidStatus) as e:
        asyncio.run(Channels.open(server, kid, BOB))
    assert e.value.response.status_code == 404
    assert kid not in {k["id"] for k in server.get("/jupyter/api/kernels", headers=auth(BOB)).json()}
    # without a key: 401, with the way to give one
    r = requests.get(f"{server.url}{base}", timeout=30)
    assert r.status_code == 401, r.text
    # still alice's, untouched
    async def alice():
        ch = await Channels.open(server, kid)
        reply, _ = await ch.run("1 + 1")
        await ch.close()
        return reply

    assert asyncio.run(alice())["status"] == "ok"


def test_a_100_mb_message_is_refused_and_runboxd_serves_on(server, kernels):
    kid = start_kernel(server, kernels)
    before = rss_mb(server.pid)

    async def scenario():
        ch = await Channels.open(server, kid)
        # what is not a message is ignored: the socket stays open
        await ch.ws.send("not json")
        await ch.ws.send(b"\x00binary")
        await ch.ws.send(json.dumps({"header": {"msg_type": 7}}))
        reply, _ = await ch.run("v = 'alive'")
        assert reply["status"] == "ok"
        t0 = time.monotonic()
        with pytest.raises(websockets.ConnectionClosed):
            await asyncio.wait_for(ch.ws.send("x" * (100 << 20)), DEADLINE)
            await asyncio.wait_for(ch.ws.recv(), DEADLINE)  # the close, if the send went out first
        assert ch.ws.close_code == 1009 or (ch.ws.close_rcvd and ch.ws.close_rcvd.code == 1009), ch.ws.close_code
        assert time.monotonic() - t0 < DEADLINE
        # runboxd lives on: a new socket on the same kernel finds its state
        ch = await Channels.open(server, kid)
        reply, msgs = await ch.run("print(v)")
        await ch.close()
        return reply, msgs

    reply, msgs = asyncio.run(scenario())
    assert reply["status"] == "ok" and stdout_of(msgs) == "alive\n"
    assert server.alive() and server.get("/health").status_code == 200
    # the 100 MB were never held: wslay refuses the frame by its header (the body limit, 1 MiB)
    assert rss_mb(server.pid) - before < 50 * RSS_SCALE, (before, rss_mb(server.pid))


def test_a_flood_that_is_never_read_is_bounded(server, kernels):
    kid, other = start_kernel(server, kernels), start_kernel(server, kernels)
    before = rss_mb(server.pid)
    n = 10_000

    async def scenario():
        flood = await Channels.open(server, kid, max_size=None, max_queue=None)
        m = message("kernel_info_request")
        for i in range(n):
            m["header"]["msg_id"] = f"flood-{i}"
            await flood.ws.send(json.dumps(m))
        # while it is not read, runboxd serves others at once
        ch = await Channels.open(server, other)
        t0 = time.monotonic()
        reply, msgs = await ch.run("print('served')")
        served = time.monotonic() - t0
        await ch.close()
        assert reply["status"] == "ok" and stdout_of(msgs) == "served\n"
        assert server.get("/jupyter/api/kernels", headers=auth(BOB)).status_code == 200
        peak = rss_mb(server.pid)
        # now read: every reply comes, or the socket was closed (1008) for not reading
        replies, closed = 0, False
        end = time.monotonic() + DEADLINE
        try:
            while replies < n:
                raw = await asyncio.wait_for(flood.ws.recv(), max(0.1, end - time.monotonic()))
                replies += json.loads(raw)["msg_type"] == "kernel_info_reply"
        except websockets.ConnectionClosed:
            closed = True
            assert flood.ws.close_code == 1008, flood.ws.close_code
        await flood.close()
        return served, peak, replies, closed

    served, peak, replies, closed = asyncio.run(scenario())
    assert served < 20, served
    assert closed or replies == n, (closed, replies)
    # bounded: at most JUPYTER_WS_QUEUE_MAX (64 MiB) queued for one socket, plus slack
    assert peak - before < 110 * RSS_SCALE and peak < rbtest.RSS_LIMIT_MB, (before, peak, replies)
    assert server.alive()


def test_interrupt_over_rest_and_over_the_control_channel(server, kernels):
    kid = start_kernel(server, kernels)

    async def interrupted(ch: Channels, how: str) -> tuple[dict, float, list[dict]]:
        parent = await ch.send(message("execute_request", {"code": "import time\ntime.sleep(60)\nprint('slept')"}))
        # it runs once the busy status and execute_input came
        got = []
        while not any(m["msg_type"] == "execute_input" for m in got):
            m = json.loads(await asyncio.wait_for(ch.ws.recv(), DEADLINE))
            if m["parent_header"].get("msg_id") == parent:
                got.append(m)
        await asyncio.sleep(0.5)  # inside time.sleep
        t0 = time.monotonic()
        if how == "rest":
            r = await asyncio.to_thread(server.post, f"/jupyter/api/kernels/{kid}/interrupt", headers=auth())
            assert r.status_code == 204, r.text
        else:
            await ch.send(message("interrupt_request", channel="control"))
        rest = await ch.replies(parent, DEADLINE)
        took = time.monotonic() - t0
        reply = [m for m in rest if m["msg_type"] == "execute_reply"][0]["content"]
        return reply, took, rest

    async def scenario():
        ch = await Channels.open(server, kid)
        await ch.run("kept = 'yes'")
        results = {}
        for how in ("rest", "control"):
            reply, took, msgs = await interrupted(ch, how)
            results[how] = (reply, took, msgs)
        final, msgs = await ch.run("print(kept)")
        await ch.close()
        return results, final, msgs

    results, final, msgs = asyncio.run(scenario())
    for how, (reply, took, rest) in results.items():
        assert took < 15, (how, took)
        # as ipykernel answers an interrupted cell: an error, KeyboardInterrupt
        assert reply["status"] == "error" and reply["ename"] == "KeyboardInterrupt", (how, reply)
        assert "slept" not in stdout_of(rest), how
        assert any(m["msg_type"] == "error" and m["content"]["ename"] == "KeyboardInterrupt" for m in rest), how
    # the interpreter was interrupted, not replaced
    assert final["status"] == "ok" and stdout_of(msgs) == "yes\n"


def test_replies_come_on_their_channels(server, kernels):
    """interrupt_reply on control (nothing ran: no status follows it); a message without a channel
    field is a shell one; requests answered without running a cell get their replies on shell."""
    kid = start_kernel(server, kernels)

    async def scenario():
        ch = await Channels.open(server, kid)
        parent = await ch.send(message("interrupt_request", channel="control"))
        while True:
            m = json.loads(await asyncio.wait_for(ch.ws.recv(), DEADLINE))
            if m["parent_header"].get("msg_id") == parent:
                break
        info = await ch.replies(await ch.send(message("kernel_info_request", channel=None)))
        complete = await ch.replies(await ch.send(message("complete_request", {"code": "pri", "cursor_pos": 3})))
        await ch.close()
        return m, info, complete

    interrupt, info, complete = asyncio.run(scenario())
    assert interrupt["msg_type"] == interrupt["header"]["msg_type"] == "interrupt_reply", interrupt
    assert interrupt["channel"] == "control" and interrupt["content"] == {"status": "ok"}, interrupt
    assert [m["msg_type"] for m in info] == ["status", "kernel_info_reply", "status"], info
    reply = info[1]
    assert reply["channel"] == "shell" and reply["content"]["language_info"]["name"] == "python", reply
    assert reply["content"]["protocol_version"] == "5.3" and reply["header"]["version"] == "5.3", reply
    # a Python kernel completes from its interpreter (test_kernel_conformance.py has the rest)
    c = complete[1]["content"]
    assert c["status"] == "ok" and "print" in c["matches"] and (c["cursor_start"], c["cursor_end"]) == (0, 3), c


def test_restart_over_rest_and_by_shutdown_request_keeps_the_kernel_id(server, kernels):
    kid = start_kernel(server, kernels)
    sid = session_id_of(kid)

    async def scenario():
        ch = await Channels.open(server, kid)
        await ch.run("old = 1")
        r = await asyncio.to_thread(server.post, f"/jupyter/api/kernels/{kid}/restart", headers=auth())
        assert r.status_code == 200 and r.json()["id"] == kid, r.text
        after_rest, _ = await ch.run("old", AFTER_RESTART)
        await ch.run("old = 2")
        got = await ch.replies(await ch.send(message("shutdown_request", {"restart": True}, channel="control")),
                               AFTER_RESTART)
        after_msg, _ = await ch.run("old", AFTER_RESTART)
        await ch.close()
        return after_rest, got, after_msg

    after_rest, got, after_msg = asyncio.run(scenario())
    for reply in (after_rest, after_msg):
        assert reply["status"] == "error" and reply["ename"] == "NameError", reply
    # a fresh interpreter counts from 1 again (Jupyter's execution_count)
    assert after_msg["execution_count"] == 1, after_msg
    shutdown = [m for m in got if m["msg_type"] == "shutdown_reply"]
    assert len(shutdown) == 1 and shutdown[0]["channel"] == "control", got
    assert shutdown[0]["content"] == {"status": "ok", "restart": True}, shutdown
    assert "restarting" in [m["content"]["execution_state"] for m in got if m["msg_type"] == "status"]
    # the same kernel and session all along
    assert server.get(f"/jupyter/api/kernels/{kid}", headers=auth()).json()["id"] == kid
    assert server.session(sid)["status"] in ("ready", "busy")


async def closed_code(ch: Channels) -> int:
    """The close code of a socket the server closes (messages before it are skipped)."""
    with pytest.raises(websockets.ConnectionClosed):
        while True:
            await asyncio.wait_for(ch.ws.recv(), DEADLINE)
    return ch.ws.close_code


def test_shutdown_request_ends_the_kernel_and_its_other_sockets(server, kernels):
    kid = start_kernel(server, kernels)

    async def scenario():
        ch, other = await Channels.open(server, kid), await Channels.open(server, kid)
        got = await ch.replies(await ch.send(message("shutdown_request", {"restart": False}, channel="control")))
        code = await closed_code(other)
        # the socket that asked gets its replies and stays open; what it sends now cannot run
        reply, _ = await ch.run("1")
        await ch.close()
        return got, code, reply

    got, code, reply = asyncio.run(scenario())
    assert [m["content"] for m in got if m["msg_type"] == "shutdown_reply"] == [{"status": "ok", "restart": False}]
    assert got[-1]["content"]["execution_state"] == "dead"
    assert code == 1000
    assert reply["status"] == "error", reply
    assert server.get(f"/jupyter/api/kernels/{kid}", headers=auth()).status_code == 404
    assert server.session(session_id_of(kid))["status"] == "ended"


def test_deleting_a_kernel_closes_its_sockets(server, kernels):
    """As a gateway's kernel going away: its channels close (1000), no socket lingers on it."""
    kid = start_kernel(server, kernels)

    async def scenario():
        socks = [await Channels.open(server, kid) for _ in range(2)]
        await socks[0].run("import time")
        r = await asyncio.to_thread(server.delete, f"/jupyter/api/kernels/{kid}", headers=auth())
        assert r.status_code == 204, r.text
        return [await closed_code(ch) for ch in socks]

    assert asyncio.run(scenario()) == [1000, 1000]
    assert server.get(f"/jupyter/api/kernels/{kid}", headers=auth()).status_code == 404


def test_a_socket_that_drops_and_reconnects_finds_its_kernel(server, kernels):
    kid = start_kernel(server, kernels)

    async def scenario():
        ch = await Channels.open(server, kid)
        await ch.run("state = [1, 2, 3]")
        ch.ws.transport.abort()  # dropped: no close handshake
        ch = await Channels.open(server, kid)
        reply, msgs = await ch.run("state.append(4)\nprint(state)")
        assert reply["status"] == "ok" and stdout_of(msgs) == "[1, 2, 3, 4]\n"
        # a cell still running when its socket drops goes on; the new socket's interrupt stops it
        await ch.send(message("execute_request", {"code": "import time\ntime.sleep(60)"}))
        await asyncio.sleep(1.0)
        ch.ws.transport.abort()
        ch = await Channels.open(server, kid)
        t0 = time.monotonic()
        r = await asyncio.to_thread(server.post, f"/jupyter/api/kernels/{kid}/interrupt", headers=auth())
        assert r.status_code == 204, r.text
        reply, msgs = await ch.run("print(len(state))", deadline=DEADLINE)
        took = time.monotonic() - t0
        await ch.close()
        return reply, msgs, took

    reply, msgs, took = asyncio.run(scenario())
    assert reply["status"] == "ok" and stdout_of(msgs) == "4\n"
    assert took < 15, f"the orphaned sleep(60) was not interrupted ({took:.1f} s)"
    model = server.get(f"/jupyter/api/kernels/{kid}", headers=auth()).json()
    assert model["connections"] == 0, model


def test_a_kernel_is_a_session_and_survives_kill_9(sandbox_image, tmp_path):
    """On a runboxd of its own, killed with SIGKILL and started again on the same --db."""
    keys = tmp_path / "api-keys"
    keys.write_text("".join(f"{n} sha256:{hashlib.sha256(k.encode()).hexdigest()}\n" for n, k in KEYS.items()))
    s = rbtest.Server(tmp_path, ["--api-keys-file", str(keys), "--pool-size", "0"])
    s.start()
    s.http.headers["Authorization"] = f"Bearer {ALICE}"
    try:
        r = s.post("/jupyter/api/kernels", {"name": "python3"}, headers=auth())
        assert r.status_code == 201, r.text
        kid = r.json()["id"]
        sid = session_id_of(kid)
        s.track(s.session(sid))
        # the same session through REST, with the kernel's language
        assert s.session(sid)["language"] == "python"
        assert kid in {k["id"] for k in s.get("/jupyter/api/kernels", headers=auth()).json()}

        async def define():
            ch = await Channels.open(s, kid)
            await ch.run("survivor = 'still here'")
            await ch.close()

        asyncio.run(define())
        s.kill9()
        s.start()
        assert s.session(sid)["status"] in ("ready", "busy")
        assert s.get(f"/jupyter/api/kernels/{kid}", headers=auth()).status_code == 200

        async def read():
            ch = await Channels.open(s, kid)
            reply, msgs = await ch.run("print(survivor)")
            await ch.close()
            return reply, msgs

        reply, msgs = asyncio.run(read())
        assert reply["status"] == "ok" and stdout_of(msgs) == "still here\n", (reply, msgs)
        assert s.delete(f"/jupyter/api/kernels/{kid}", headers=auth()).status_code == 204
        assert s.session(sid)["status"] == "ended"
    finally:
        rbtest.finish_servers([s])

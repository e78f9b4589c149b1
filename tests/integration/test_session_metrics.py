"""Per-sandbox metrics (issue 27, "Per-sandbox metrics"; docs/operations.md) against a real
runboxd and the real Docker engine: GET /sessions/{id}/metrics fills with samples read from the
engine every --metrics-interval (1 s here), memory grows once the session holds 200 MB more,
another key's session is 404 like an unknown one, a deleted session's samples are gone, and
/metrics carries the per-session gauges: a user key's only of its own sessions (issue 37, "Per-session
series leak ids"), an admin's and a viewer's of every key's. Every wait is rbtest.wait_until with a generous
deadline: sampling is asynchronous and the engine may be slow under load."""

from __future__ import annotations

import re

import pytest

import rbtest
from rbfixtures import keyed_server_fixture
from rbtest import check_error, check_schema

KEYS = {"alice": "alice-key-" + "a" * 24, "bob": "bob-key-" + "b" * 24, "boss": "boss-key-" + "c" * 24,
        "auditor": "auditor-key-" + "d" * 24}
MIB = 1024 * 1024

server = keyed_server_fixture("runboxd-usage", KEYS, ["--metrics-interval", "1"],
                              roles={"boss": "admin", "auditor": "viewer"})


def as_(name: str) -> dict:
    return {"Authorization": f"Bearer {KEYS[name]}"}


def metrics(server, sid: str, who: str = "alice") -> dict:
    r = server.get(f"/sessions/{sid}/metrics", headers=as_(who))
    assert r.status_code == 200, r.text
    doc = r.json()
    check_schema(doc, "SessionMetrics")
    return doc


def test_samples_appear_and_memory_grows(server):
    s = server.create_session({"execution_options": {"memory_limit": "1g"}})
    sid = s["session_id"]
    doc = rbtest.wait_until(lambda: (d := metrics(server, sid)) and len(d["samples"]) >= 2 and d,
                            "two usage samples", deadline=60)
    assert doc["session_id"] == sid and doc["interval_ms"] == 1000
    last = doc["samples"][-1]
    # the cgroup's limit: memory_limit plus the tmpfs-backed workspace and /tmp, which count as memory
    ws, tmp = s["execution_options"].get("workspace_size"), s["execution_options"].get("tmp_size")
    assert last["mem_limit_bytes"] >= 1024 * MIB, last
    if isinstance(ws, int) and isinstance(tmp, int):
        assert last["mem_limit_bytes"] == 1024 * MIB + ws + tmp, (last, s["execution_options"])
    assert 0 < last["mem_bytes"] < 1024 * MIB and last["pids"] >= 1 and last["cpu_pct"] >= 0, last
    assert last["net_rx_bytes"] == 0 and last["net_tx_bytes"] == 0, "a session without a network sends nothing"
    times = [x["timestamp"] for x in doc["samples"]]
    assert times == sorted(times)
    before = last["mem_bytes"]

    # 200 MB written (touched, so the pages are really in use) and kept
    r = server.execute(sid, "hog = b'x' * (200 * 1024 * 1024)\nlen(hog)")
    assert r["status"] == "completed" and r["result"] == str(200 * MIB), r
    grown = rbtest.wait_until(
        lambda: [x for x in metrics(server, sid)["samples"] if x["mem_bytes"] >= before + 150 * MIB],
        "a sample with 150 MB more memory in use", deadline=60)
    assert grown[-1]["mem_bytes"] < 1024 * MIB
    # files written to the memory-backed workspace and /tmp are counted (they were not sampled)
    files = last["files_bytes"]
    assert 0 <= files < 8 * MIB, last
    r = server.execute(sid, "open('/workspace/blob', 'wb').write(b'y' * (48 * 1024 * 1024))\n"
                            "open('/tmp/blob', 'wb').write(b'z' * (16 * 1024 * 1024))")
    assert r["status"] == "completed", r
    rbtest.wait_until(lambda: [x for x in metrics(server, sid)["samples"] if x["files_bytes"] >= files + 60 * MIB],
                      "a sample with 64 MB more in files", deadline=60)

    # the gauges of /metrics name the session
    text = server.get("/metrics").text
    assert "# TYPE runbox_session_memory_bytes gauge" in text
    m = re.search(r'^runbox_session_memory_bytes\{session="%s"\} (\d+)$' % sid, text, re.M)
    assert m and int(m.group(1)) >= before + 150 * MIB, [l for l in text.splitlines() if "runbox_session" in l]
    assert re.search(r'^runbox_session_pids\{session="%s"\} [1-9]' % sid, text, re.M)
    assert re.search(r"^runbox_sessions_sampled [1-9]", text, re.M)


def test_other_key_gets_404_and_deleted_ring_is_gone(server):
    s = server.create_session()
    sid = s["session_id"]
    rbtest.wait_until(lambda: metrics(server, sid)["samples"], "a usage sample", deadline=60)
    # another key's session is not there, exactly as an unknown one
    check_error(server.get(f"/sessions/{sid}/metrics", headers=as_("bob")), 404)
    check_error(server.get("/sessions/s_0123456789abcdef0123456789abcdef/metrics", headers=as_("alice")), 404)
    # deleted: its samples go with it, and /metrics no longer names it
    assert server.delete_session(sid)["status"] == "ended"
    check_error(server.get(f"/sessions/{sid}/metrics", headers=as_("alice")), 404)
    rbtest.wait_until(lambda: f'session="{sid}"' not in server.get("/metrics").text,
                      "the ended session's gauges gone", deadline=30)


def test_paused_session_keeps_its_samples(server):
    s = server.create_session()
    sid = s["session_id"]
    rbtest.wait_until(lambda: metrics(server, sid)["samples"], "a usage sample", deadline=60)
    r = server.post(f"/sessions/{sid}/pause", {"mode": "suspend"})
    assert r.status_code == 200, r.text
    n = len(metrics(server, sid)["samples"])
    assert n >= 1
    r = server.post(f"/sessions/{sid}/resume", {})
    assert r.status_code == 200, r.text
    rbtest.wait_until(lambda: len(metrics(server, sid)["samples"]) > n, "sampling again after the resume",
                      deadline=60)


def series_ids(text: str) -> set[str]:
    return set(re.findall(r'^runbox_session_\w+\{session="([^"]+)"\}', text, re.M))


def test_metrics_names_only_the_keys_own_sessions(server):
    mine = server.create_session(headers=as_("alice"))["session_id"]
    theirs = server.create_session(headers=as_("bob"))["session_id"]
    for sid, who in ((mine, "alice"), (theirs, "bob")):
        rbtest.wait_until(lambda: metrics(server, sid, who)["samples"], f"a usage sample of {who}'s session",
                          deadline=60)
    seen = {}
    for who in KEYS:
        r = server.get("/metrics", headers=as_(who))
        assert r.status_code == 200, r.text
        seen[who] = r.text
    # a user key sees its own sessions' series and no id of another key's, as on every other route
    assert mine in series_ids(seen["alice"]) and theirs not in seen["alice"], sorted(series_ids(seen["alice"]))
    assert theirs in series_ids(seen["bob"]) and mine not in seen["bob"], sorted(series_ids(seen["bob"]))
    # an admin and a viewer see every key's
    for who in ("boss", "auditor"):
        assert {mine, theirs} <= series_ids(seen[who]), (who, sorted(series_ids(seen[who])))
    # runbox_sessions_sampled counts what the key may see: here each of its series once per gauge
    for who in KEYS:
        m = re.search(r"^runbox_sessions_sampled (\d+)$", seen[who], re.M)
        assert m and int(m.group(1)) == len(series_ids(seen[who])), (who, m and m.group(0))
    server.delete_session(mine)
    assert server.delete(f"/sessions/{theirs}", headers=as_("bob")).status_code == 200

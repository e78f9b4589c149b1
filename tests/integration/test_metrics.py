"""GET /metrics on a real runboxd with the real Docker engine: the exposition parses with the
Prometheus client library's own parser, every label value is from its fixed set, and the counts
match what the test did (cells that complete, fail and time out; a deleted and an idle session;
refusals by Host and Origin; an MCP session; the Docker calls a session create makes)."""

from __future__ import annotations

import re

import requests
from prometheus_client.parser import text_string_to_metric_families

import rbtest

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"

# The fixed set of every label runboxd uses.
LABELS = {
    "status": {"starting", "ready", "busy", "pausing", "suspended", "hibernated", "resuming", "completed", "error",
               "timeout", "cancelled"},
    "reason": {"deleted", "idle", "dead", "error", "host", "origin", "stopping", "too_many_streams",
               "body_too_large", "bad_request", "unauthorized", "rate_limited", "too_many_connections", "role",
               "timeout", "unreachable", "connection", "http_4xx", "http_5xx",
               "minimum", "rate", "maximum", "memory"},  # runbox_pool_target's (core/pool_demand.h)
    "operation": {"create", "start", "attach", "exec", "archive", "wait", "remove", "inspect", "ping", "other"},
    "protocol": {"rest", "mcp", "e2b", "other"},
    "status_class": {"2xx", "3xx", "4xx", "5xx"},
    "outcome": {"allowed", "unreachable"},
    "cause": {"not_allowed", "denied", "port", "ip_literal", "address", "other"},
    "direction": {"up", "down"},
}


def scrape(s: rbtest.Server) -> tuple[dict[tuple, float], dict[str, str]]:
    """Samples {(name, sorted labels): value} and families {name: type} of one GET /metrics."""
    r = s.get("/metrics")
    assert r.status_code == 200, r.text
    assert r.headers["content-type"] == CONTENT_TYPE
    samples: dict[tuple, float] = {}
    types: dict[str, str] = {}
    for fam in text_string_to_metric_families(r.text):
        assert fam.name.startswith("runbox_"), fam.name
        assert fam.documentation, f"{fam.name} has no HELP"
        assert fam.type in ("counter", "gauge", "histogram"), (fam.name, fam.type)
        types[fam.name] = fam.type
        for smp in fam.samples:
            for k, v in smp.labels.items():
                if k == "le":
                    float(v)
                elif k == "version":
                    assert v, smp
                elif k == "session":  # per-session usage gauges: a runbox session id
                    assert v.startswith("s_") and v[2:].isalnum(), smp
                elif k in ("engine", "runtime"):  # the operator's names (checked at start): [A-Za-z0-9._-]
                    assert re.fullmatch(r"[A-Za-z0-9._-]{1,64}", v), smp
                else:
                    assert v in LABELS[k], f"{smp.name}: label {k}={v!r} outside its fixed set"
            key = (smp.name, tuple(sorted(smp.labels.items())))
            assert key not in samples, f"series twice: {key}"
            samples[key] = smp.value
    return samples, types


def val(samples: dict, name: str, **labels: str) -> float:
    return samples[(name, tuple(sorted(labels.items())))]


def test_metrics_count_what_happened(sandbox_image, make_server):
    s = make_server(["--pool-size", "0", "--idle-timeout", "3"])
    m0, types = scrape(s)
    for fam, kind in [("runbox_sessions_live", "gauge"), ("runbox_sessions_created", "counter"),
                      ("runbox_executions_finished", "counter"), ("runbox_execution_duration_seconds", "histogram"),
                      ("runbox_http_refusals", "counter"), ("runbox_docker_reachable", "gauge"),
                      ("runbox_process_resident_memory_bytes", "gauge"), ("runbox_mcp_sessions_live", "gauge"),
                      ("runbox_docker_call_duration_seconds", "histogram"),
                      ("runbox_docker_call_failures", "counter")]:
        assert types.get(fam) == kind, (fam, types.get(fam))
    assert val(m0, "runbox_docker_reachable") == 1

    # A session create makes Docker calls: create, start, attach (and pings meanwhile).
    sid = s.create_session()["session_id"]
    m, _ = scrape(s)
    for op in ("create", "start", "attach"):
        assert val(m, "runbox_docker_call_duration_seconds_count", operation=op) == \
            val(m0, "runbox_docker_call_duration_seconds_count", operation=op) + 1, op
        assert val(m, "runbox_docker_call_duration_seconds_bucket", operation=op, le="+Inf") == \
            val(m, "runbox_docker_call_duration_seconds_count", operation=op), op
    assert val(m, "runbox_docker_call_duration_seconds_count", operation="ping") >= 1
    for op in LABELS["operation"]:
        for reason in ("timeout", "unreachable", "connection", "http_4xx", "http_5xx"):
            assert val(m, "runbox_docker_call_failures_total", operation=op, reason=reason) == 0, (op, reason)

    # Three cells with three outcomes, then the session is deleted.
    assert s.execute(sid, "print('hi')")["status"] == "completed"
    assert s.execute(sid, "1/0")["status"] == "error"
    assert s.execute(sid, "while True: pass", timeout=1)["status"] == "timeout"
    s.delete_session(sid)
    # A second session left alone until the idle timeout (3 s) ends it.
    idle = s.create_session()["session_id"]
    rbtest.wait_until(lambda: s.session(idle)["status"] == "ended", "the idle session to end", deadline=30)

    # Refused by the router on /metrics itself: a rebound Host, a foreign browser Origin.
    r = requests.get(s.url + "/metrics", headers={"Host": "attacker.example"}, timeout=10)
    assert r.status_code == 403, r.text
    r = requests.get(s.url + "/metrics", headers={"Origin": "https://attacker.example"}, timeout=10)
    assert r.status_code == 403, r.text
    # One MCP client session.
    body = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}
    r = s.post("/mcp", body, headers={"Accept": "application/json, text/event-stream"})
    assert r.status_code == 200, r.text

    m1, types = scrape(s)
    finished = {st: val(m1, "runbox_executions_finished_total", status=st)
                for st in ("completed", "error", "timeout", "cancelled")}
    assert finished == {"completed": 1, "error": 1, "timeout": 1, "cancelled": 0}, finished
    assert val(m1, "runbox_execution_duration_seconds_count") == 3
    assert val(m1, "runbox_execution_duration_seconds_bucket", le="+Inf") == 3
    assert val(m1, "runbox_execution_duration_seconds_sum") >= 1.0  # the timeout alone ran 1 s
    assert val(m1, "runbox_execution_output_bytes_total") >= len("hi\n")
    assert val(m1, "runbox_sessions_created_total") == 2
    ended = {r: val(m1, "runbox_sessions_ended_total", reason=r) for r in ("deleted", "idle", "dead", "error")}
    assert ended == {"deleted": 1, "idle": 1, "dead": 0, "error": 0}, ended
    assert sum(val(m1, "runbox_sessions_live", status=st)
               for st in ("starting", "ready", "busy", "pausing", "suspended", "hibernated", "resuming")) == 0
    assert val(m1, "runbox_executions_running") == 0 and val(m1, "runbox_executions_queued") == 0
    assert val(m1, "runbox_http_refusals_total", reason="host") == 1
    assert val(m1, "runbox_http_refusals_total", reason="origin") == 1
    assert val(m1, "runbox_http_refusals_total", reason="stopping") == 0
    # REST: 2 creates, 3 executes, 1 delete and the GETs of the idle wait, all 2xx.
    assert val(m1, "runbox_http_requests_total", protocol="rest", status_class="2xx") >= 6
    assert val(m1, "runbox_http_requests_total", protocol="mcp", status_class="2xx") >= 1
    assert val(m1, "runbox_http_requests_total", protocol="other", status_class="4xx") >= 2
    assert val(m1, "runbox_mcp_sessions_live") == 1
    assert val(m1, "runbox_docker_reachable") == 1
    assert val(m1, "runbox_process_resident_memory_bytes") > 1 << 20

    # The same series in both scrapes, and no counter went down.
    assert m0.keys() == m1.keys()
    for (name, labels), v in m0.items():
        base = name.removesuffix("_bucket").removesuffix("_sum").removesuffix("_count").removesuffix("_total")
        if types.get(base) in ("counter", "histogram"):
            assert m1[(name, labels)] >= v, f"{name}{dict(labels)} went down: {v} -> {m1[(name, labels)]}"
    assert s.alive()


def test_event_streams_and_their_refusals(sandbox_image, make_server):
    """Open event streams are a gauge; one past --max-streams is refused (429) and counted."""
    s = make_server(["--pool-size", "0", "--max-streams", "1"])
    sid = s.create_session()["session_id"]
    rid = s.execute(sid, "import time\ntime.sleep(30)", wait=False)["request_id"]
    stream = requests.get(s.url + f"/execute/{rid}/events", stream=True, timeout=(10, 60))
    assert stream.status_code == 200
    rbtest.check_error(s.get(f"/execute/{rid}/events", timeout=10), 429, "max-streams")
    m, _ = scrape(s)
    assert val(m, "runbox_event_streams_open") == 1
    assert val(m, "runbox_http_refusals_total", reason="too_many_streams") == 1
    assert val(m, "runbox_executions_running") == 1
    assert val(m, "runbox_sessions_live", status="busy") == 1
    assert s.delete(f"/execute/{rid}").status_code == 200
    _, events = rbtest.read_sse(stream)
    assert events[-1].event == "done"
    stream.close()
    m, _ = scrape(s)
    assert val(m, "runbox_event_streams_open") == 0
    assert val(m, "runbox_executions_finished_total", status="cancelled") == 1


def rows_of(fams: dict) -> list[tuple[str, str]]:
    return [(name, f[2]) for name, f in fams.items()]


def documented_families() -> tuple[dict[str, tuple[str, dict[str, set[str]], str]], int]:
    """docs/operations.md's table of families, {name: (type, {label: its listed values})}, and the
    number of fixed series it states."""
    doc = (rbtest.ROOT / "docs" / "operations.md").read_text()
    fams: dict[str, tuple[str, dict[str, set[str]], str]] = {}
    known: dict[str, set[str]] = {}
    for line in doc.splitlines():
        m = re.match(r"\| `(runbox_\w+)` \| (\w+) \|\s*(.*?)\s*\|", line)
        if not m:
            continue
        labels: dict[str, set[str]] = {}
        for part in m.group(3).split(";"):
            lm = re.match(r"\s*`(\w+)`(?::\s*(.*)|\s+(as above.*))?$", part.strip())
            if not lm:
                continue
            name, values = lm.group(1), (lm.group(2) or lm.group(3) or "").strip()
            if values.startswith("as above"):
                labels[name] = known[name]
            elif values and re.fullmatch(r"[\w.+`]+(?:,?\s+[\w.+`]+)*", values):  # a list, not words about it
                labels[name] = known[name] = {v.strip("`") for v in re.split(r"[,\s]+", values) if v.strip("`")}
            else:
                labels[name] = set()  # values named elsewhere (a session id, the operator's names)
        fams[m.group(1)] = (m.group(2), labels, line)
    count = re.search(r"the number of\s+series is fixed \((\d+)\)", doc)
    assert count, "docs/operations.md no longer says how many fixed series there are"
    return fams, int(count.group(1))


def test_docs_operations_md_lists_what_metrics_serves(server):
    """docs/operations.md's families, types, label values and fixed series count are what GET /metrics
    answers (issue 42, item 8: the doc had drifted, it lacked runbox_engine_runtime and
    reason="role" and said 273 series where there were 297)."""
    fams, fixed = documented_families()
    samples, _ = scrape(server)
    text = server.get("/metrics").text
    types = dict(re.findall(r"^# TYPE (\w+) (\w+)$", text, re.M))  # names as served (with _total)
    several = {n for n, line in rows_of(fams) if "with several engines only" in line}
    assert set(fams) - several == set(types), \
        f"documented only: {set(fams) - several - set(types)}; served only: {set(types) - set(fams)}"
    for name, (kind, labels, _) in fams.items():
        if name not in types:
            continue
        assert types[name] == kind, (name, kind, types[name])
        served: dict[str, set[str]] = {}
        for (sname, lab), _ in samples.items():
            if sname == name or (kind == "histogram" and sname in (name + "_bucket", name + "_sum", name + "_count")):
                for k, v in lab:
                    served.setdefault(k, set()).add(v)
        for k, values in labels.items():
            if values and k in served:
                assert served[k] == values, f"{name}: label {k}: documented {sorted(values)}, served {sorted(served[k])}"
        assert set(served) <= set(labels), f"{name}: labels served but not documented: {set(served) - set(labels)}"
    series = [k for k in samples if not k[0].startswith("runbox_session_")]
    assert len(series) == fixed, f"docs/operations.md says {fixed} fixed series; /metrics has {len(series)}"

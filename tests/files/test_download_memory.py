"""What a download costs runboxd in memory (issue 9, finding 6e), on a runboxd of its own so that
its peak RSS (VmHWM) belongs to this test alone:

- a 60 MiB file is held once between Docker's archive answer and the HTTP response: the
  response sends the tar entry's bytes where they lie, and the archive buffer lives until the
  response has been written;
- downloads in flight together are bounded by --max-download-memory: one more answers 429
  with a message that says why and what to do, and the memory is available again once a
  response has been written.
"""

from __future__ import annotations

import hashlib
import pytest
import requests
import rbtest

MIB = 1024 * 1024
FILE_MB = 60
# Where the peak may go above the level runboxd had reached before the download, in MiB. The
# file is held once (FILE_MB). Docker's answer is read into a buffer that doubles as it grows;
# glibc grows large blocks in place (mremap), but blocks under its dynamic mmap threshold
# (up to 32 MiB) are copied when they grow, and a freed one may stay resident: at most half of
# the final size, so 0.5 * FILE_MB. Then 8 MiB for everything else (h2o, curl, jansson,
# the helper's answer). Holding the file three times, as before, is 3 * FILE_MB = 180.
PEAK_BOUND_MB = FILE_MB * 1.5 + 8


def run(server, sid: str, code: str) -> dict:
    r = server.post("/execute", {"session_id": sid, "code": code, "wait": True})
    assert r.status_code == 200, r.text
    doc = r.json()
    assert doc["status"] == "completed", doc
    return doc


def sanitized(server) -> bool:
    with open(f"/proc/{server.pid}/maps", encoding="ascii", errors="replace") as f:
        return "libasan" in f.read()


def download_digest(server, sid: str, path: str) -> tuple[int, str]:
    h = hashlib.sha256()
    n = 0
    with server.get(f"/sessions/{sid}/files/download", params={"path": path}, stream=True) as r:
        assert r.status_code == 200, r.text
        for chunk in r.iter_content(1 << 20):
            h.update(chunk)
            n += len(chunk)
    return n, h.hexdigest()


def test_a_download_holds_the_file_once(make_server):
    s = make_server()
    if sanitized(s):
        pytest.skip("ASan's shadow memory and quarantine make RSS say nothing about copies")
    sess = s.create_session()
    sid = sess["session_id"]
    doc = run(s, sid, "import hashlib, os\n"
                      f"data = os.urandom({FILE_MB} * {MIB})\n"
                      "open('big.bin', 'wb').write(data)\n"
                      "open('small.txt', 'w').write('warm up')\n"
                      "hashlib.sha256(data).hexdigest()")
    want = doc["result"].strip("'")
    # warm up every path a download takes, then measure from the level reached
    assert s.get(f"/sessions/{sid}/files/download", params={"path": "small.txt"}).content == b"warm up"
    base = rbtest.peak_rss_mb(s.pid)
    n, digest = download_digest(s, sid, "big.bin")
    assert n == FILE_MB * MIB and digest == want
    peak = rbtest.peak_rss_mb(s.pid)
    assert peak - base < PEAK_BOUND_MB, (
        f"runboxd's peak RSS went from {base:.0f} to {peak:.0f} MiB for a {FILE_MB} MiB download "
        f"(bound {PEAK_BOUND_MB:.0f} MiB above the start)")


def mcp_download(server, path: str, session_id: str) -> dict:
    """download_file over MCP's HTTP transport (initialize, then one tools/call); the result."""
    h = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    r = requests.post(server.url + "/mcp", headers=h, timeout=120, json={
        "jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}})
    assert r.status_code == 200, r.text
    h = dict(h, **{"Mcp-Session-Id": r.headers["mcp-session-id"], "MCP-Protocol-Version": "2025-06-18"})
    r = requests.post(server.url + "/mcp", headers=h, timeout=120, json={
        "jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
            "name": "download_file", "arguments": {"session_id": session_id, "src_path": path}}})
    assert r.status_code == 200, r.text
    requests.delete(server.url + "/mcp", headers=h, timeout=30)
    return rbtest.mcp_answer(r)["result"]


def test_downloads_in_flight_are_bounded(make_server):
    # 40 MiB is far more than loopback socket buffers take, so a response nobody reads stays in
    # flight and holds its memory; a 7 MiB file does not fit beside it in 44 MiB.
    s = make_server(["--max-download", "42m", "--max-download-memory", "44m"])
    sess = s.create_session()
    sid = sess["session_id"]
    run(s, sid, "import os\n"
                "open('a.bin', 'wb').write(os.urandom(40 << 20))\n"
                "open('mid.bin', 'wb').write(b'y' * (7 << 20))\n"
                "open('small.bin', 'wb').write(b'x' * 1000)\n")
    url = f"/sessions/{sid}/files/download"
    held = s.get(url, params={"path": "a.bin"}, stream=True)
    try:
        assert held.status_code == 200, held.text
        r = s.get(url, params={"path": "mid.bin"})
        assert r.status_code == 429, r.text[:300]
        rbtest.check_schema(r.json(), "Error")
        err = r.json()["error"]
        assert err["code"] == "too_many_requests", err
        assert "max-download-memory" in err["message"] and "retry" in err["message"].lower(), err["message"]
        assert r.headers.get("retry-after"), r.headers
        # MCP's download_file draws on the same memory
        res = mcp_download(s, "mid.bin", sid)
        text = " ".join(c.get("text", "") for c in res["content"])
        assert res["isError"] and "max-download-memory" in text, res
        # a file that fits beside the one in flight is served
        assert s.get(url, params={"path": "small.bin"}).content == b"x" * 1000
    finally:
        got = sum(len(c) for c in held.iter_content(1 << 20))
        held.close()
    assert got == 40 << 20
    # once a response is written, its memory is available again
    r = s.get(url, params={"path": "mid.bin"})
    assert r.status_code == 200 and r.content == b"y" * (7 << 20)
    res = mcp_download(s, "mid.bin", sid)
    assert not res["isError"], res
    assert res["structuredContent"]["size"] == 7 << 20

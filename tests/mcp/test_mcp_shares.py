"""Shared folders through MCP with the official `mcp` SDK client, against a real runboxd and real
Docker sandboxes: the CodeRunner flow end to end (a folder of the user's machine with a CSV and a
PNG image is mounted into the sandbox; execute_code reads both by path, with no byte passing
through the conversation, and writes a result file into a read-write share, which the test then
finds on the host, owned by the sandbox user), list_mounts (what a session sees of its mounts),
and create_session with execution_options.mounts.

The host folders live under /var/tmp (a share may not lie in runboxd's data, which is in the
test's tmp_path, and pytest's folders are 0700) and are removed afterwards."""

from __future__ import annotations

import csv
import io
import os
import shutil
import struct
import tempfile
import zlib
from pathlib import Path

import anyio
import pytest
from mcp import Client

import rbtest

SANDBOX_UID = 1000
ROWS = [("month", "units"), ("jan", "12"), ("feb", "30"), ("mar", "7")]


def tiny_png(width: int, height: int) -> bytes:
    """A valid RGB PNG of width x height (a red and green gradient), made with zlib and struct."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)
    rows = b"".join(b"\x00" + b"".join(bytes((x * 40 % 256, y * 60 % 256, 128)) for x in range(width))
                    for y in range(height))
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b""))


@pytest.fixture
def folders(sandbox_image):
    base = Path(tempfile.mkdtemp(prefix="rb-mcp-shares-", dir="/var/tmp"))
    base.chmod(0o755)
    data, results = base / "data", base / "results"
    data.mkdir(mode=0o755)
    results.mkdir(mode=0o755)
    buf = io.StringIO()
    csv.writer(buf).writerows(ROWS)
    (data / "sales.csv").write_text(buf.getvalue())
    (data / "chart.png").write_bytes(tiny_png(7, 5))
    (data / "raw").mkdir(mode=0o755)
    os.chown(results, SANDBOX_UID, SANDBOX_UID)
    (base / "private").mkdir(mode=0o700)  # root's alone: the sandbox user cannot read it
    yield base
    shutil.rmtree(base)


def url(server: rbtest.Server) -> str:
    return server.url + "/mcp"


def texts(result) -> str:
    return "".join(getattr(c, "text", "") for c in result.content)


READ_BOTH = """
import csv, struct
with open('/workspace/data/sales.csv', newline='') as f:
    rows = list(csv.DictReader(f))
total = sum(int(r['units']) for r in rows)
with open('/workspace/data/chart.png', 'rb') as f:
    head = f.read(24)
assert head[:8] == b'\\x89PNG\\r\\n\\x1a\\n', head
width, height = struct.unpack('>II', head[16:24])
with open('/workspace/results/summary.txt', 'w') as f:
    f.write(f'total={total} image={width}x{height}\\n')
print(f'total={total} image={width}x{height}')
"""


def test_coderunner_flow_reads_host_files_by_path_and_writes_a_result(make_server, folders):
    """The operator mounts the user's folders into every session (--default-mounts): the model
    lists them, reads the CSV and the image by path and writes its result back."""
    server = make_server(["--pool-size", "0", "--share", f"data={folders / 'data'}",
                          "--share", f"results={folders / 'results'}:rw", "--default-mounts", "data,results"])

    async def main():
        async with Client(url(server), mode="legacy") as c:
            names = {t.name for t in (await c.list_tools()).tools}
            assert "list_mounts" in names
            r = await c.call_tool("list_mounts", {})  # this connection's own sandbox
            assert not r.is_error, texts(r)
            sc = r.structured_content
            server.session_ids.add(sc["session_id"])
            data = next(m for m in sc["mounts"] if m["share"] == "data")
            assert (data["path"], data["readonly"], data["total"], data["more"]) == ("/workspace/data", True, 3, 0)
            assert data["entries"] == [
                {"name": "chart.png", "path": "/workspace/data/chart.png", "type": "file",
                 "size": (folders / "data" / "chart.png").stat().st_size},
                {"name": "raw", "path": "/workspace/data/raw", "type": "directory", "size": 0},
                {"name": "sales.csv", "path": "/workspace/data/sales.csv", "type": "file",
                 "size": (folders / "data" / "sales.csv").stat().st_size}]
            results = next(m for m in sc["mounts"] if m["share"] == "results")
            assert (results["path"], results["readonly"], results["entries"]) == ("/workspace/results", False, [])
            assert "/workspace/data/sales.csv" in texts(r) and "read-only" in texts(r)

            r = await c.call_tool("execute_code", {"code": READ_BOTH})
            assert not r.is_error, texts(r)
            assert r.structured_content["session_id"] == sc["session_id"]
            assert "total=49 image=7x5" in texts(r)

            r = await c.call_tool("list_mounts", {})
            results = next(m for m in r.structured_content["mounts"] if m["share"] == "results")
            assert [e["name"] for e in results["entries"]] == ["summary.txt"]

    anyio.run(main)
    out = folders / "results" / "summary.txt"
    assert out.read_text() == "total=49 image=7x5\n"
    assert (out.stat().st_uid, out.stat().st_gid) == (SANDBOX_UID, SANDBOX_UID)


def test_create_session_with_mounts_then_execute_and_list(make_server, folders):
    server = make_server(["--pool-size", "0", "--share", f"data={folders / 'data'}",
                          "--share", f"results={folders / 'results'}:rw", "--share", f"private={folders / 'private'}"])

    async def main():
        async with Client(url(server), mode="legacy") as c:
            r = await c.call_tool("create_session", {"execution_options": {"mounts": [
                {"share": "data", "path": "/workspace/in"}, {"share": "results", "path": "/workspace/out"}]}})
            assert not r.is_error, texts(r)
            sid = r.structured_content["session_id"]
            server.session_ids.add(sid)
            assert r.structured_content["execution_options"]["mounts"] == [
                {"share": "data", "path": "/workspace/in", "readonly": True},
                {"share": "results", "path": "/workspace/out", "readonly": False}]
            r = await c.call_tool("list_mounts", {"session_id": sid})
            assert not r.is_error, texts(r)
            assert [m["path"] for m in r.structured_content["mounts"]] == ["/workspace/in", "/workspace/out"]
            assert [e["name"] for e in r.structured_content["mounts"][0]["entries"]] == ["chart.png", "raw",
                                                                                         "sales.csv"]
            code = READ_BOTH.replace("/workspace/data", "/workspace/in").replace("/workspace/results", "/workspace/out")
            r = await c.call_tool("execute_code", {"code": code, "session_id": sid})
            assert not r.is_error, texts(r)
            assert "total=49 image=7x5" in texts(r)
            # a share the server does not have: the error lists those it has
            r = await c.call_tool("create_session", {"execution_options": {"mounts": [{"share": "photos"}]}})
            assert r.is_error and "shares it may mount: data, results, private" in texts(r), texts(r)
            # a share the sandbox user cannot read: its mount says why, the others are listed
            r = await c.call_tool("create_session", {"execution_options": {"mounts": [
                {"share": "private"}, {"share": "data"}]}})
            assert not r.is_error, texts(r)
            server.session_ids.add(r.structured_content["session_id"])
            r = await c.call_tool("list_mounts", {"session_id": r.structured_content["session_id"]})
            assert not r.is_error, texts(r)
            private, data = r.structured_content["mounts"]
            assert "permission denied" in private["error"] and "entries" not in private, private
            assert data["total"] == 3, data
            assert "/workspace/private (shared folder private, read-only): cannot be listed" in texts(r)
            # without mounts, list_mounts says so
            r = await c.call_tool("create_session", {})
            plain = r.structured_content["session_id"]
            server.session_ids.add(plain)
            r = await c.call_tool("list_mounts", {"session_id": plain})
            assert not r.is_error and r.structured_content["mounts"] == [], texts(r)
            assert "no folders are mounted" in texts(r)

    anyio.run(main)
    assert (folders / "results" / "summary.txt").read_text() == "total=49 image=7x5\n"


def test_list_mounts_is_offered_only_with_shares(server):
    async def main():
        async with Client(url(server), mode="legacy") as c:
            assert "list_mounts" not in {t.name for t in (await c.list_tools()).tools}

    anyio.run(main)


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
def test_execute_code_without_a_session_mounts_a_share_and_a_volume(make_server, folders, mode):
    """execute_code's mounts: the sandbox it starts sees a shared folder and one of the key's
    volumes; list_mounts names both; a second sandbox with the same volume reads what the first
    wrote; mounts beside a session_id are refused with the way to do it."""
    server = make_server(["--pool-size", "0", "--share", f"data={folders / 'data'}"])
    r = server.post("/volumes", {"name": "notes"})
    assert r.status_code == 201, r.text
    mounts = [{"share": "data"}, {"volume": "notes", "path": "/workspace/notes"}]
    code = ("rows = open('/workspace/data/sales.csv').read().splitlines()\n"
            "open('/workspace/notes/n.txt', 'w').write(str(len(rows)))\nprint('rows', len(rows))")

    async def main():
        async with Client(url(server), mode=mode) as c:
            r = await c.call_tool("execute_code", {"code": code, "mounts": mounts})
            assert not r.is_error, texts(r)
            assert "rows 4" in texts(r)
            sid = r.structured_content["session_id"]
            server.session_ids.add(sid)
            r = await c.call_tool("list_mounts", {"session_id": sid})
            assert not r.is_error, texts(r)
            notes = next(m for m in r.structured_content["mounts"] if m.get("volume") == "notes")
            assert (notes["path"], notes["readonly"], [e["name"] for e in notes["entries"]]) == (
                "/workspace/notes", False, ["n.txt"]), notes
            assert "/workspace/notes (volume notes, read-write)" in texts(r)
            r = await c.call_tool("execute_code", {"code": "1", "session_id": sid, "mounts": mounts})
            assert r.is_error and "omit session_id" in texts(r), texts(r)
            r = await c.call_tool("create_session", {"execution_options": {"mounts": [{"volume": "notes"}]}})
            assert not r.is_error, texts(r)
            other = r.structured_content["session_id"]
            server.session_ids.add(other)
            r = await c.call_tool("execute_code", {"code": "print(open('/workspace/notes/n.txt').read())",
                                                   "session_id": other})
            assert not r.is_error and "4" in texts(r), texts(r)
            for s in (sid, other):
                await c.call_tool("close_session", {"session_id": s})

    anyio.run(main)
    r = server.delete("/volumes/notes")
    assert r.status_code == 204, r.text

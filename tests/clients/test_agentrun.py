"""AgentRun+ (PyPI `agentrun-plus`, pinned in tests/requirements.txt) against a real runboxd and
real Docker sandboxes, unmodified: its two clients, `AgentRunMCPClient` (MCP over streamable
HTTP, reading answers as SSE) and `AgentRunAPIClient` (REST), pointed at runboxd's AgentRun
surface `<runboxd>/agentrun`. One test per client calls every public method as the package's
README does: upload a CSV, run code that reads it from `src/` and saves a summary and a plot to
`artifacts/`, download both, and share one session between MCP and REST.
"""

from __future__ import annotations

import csv
import io

import pytest
import requests

from agentrun_plus import AgentRunAPIClient, AgentRunMCPClient, SessionInfo

import rbtest

DATA = "x,y\n1,10\n2,20\n3,25\n4,30\n"

# The README's "File Operations via MCP Client" code, plus a plot saved next to the summary.
README_CODE = """
import pandas as pd
df = pd.read_csv('src/data.csv')
df.describe().to_csv('artifacts/summary.csv')
print('Done!')
"""

PLOT_CODE = """
import matplotlib
matplotlib.use('Agg')
import matplotlib.pyplot as plt
import pandas as pd
pd.read_csv('src/data.csv').plot(x='x', y='y')
plt.savefig('artifacts/plot.png')
print('Plot saved!')
"""


def base(server: rbtest.Server) -> str:
    return server.url + "/agentrun"


def check_summary(path: str) -> None:
    rows = list(csv.reader(io.StringIO(open(path, encoding="utf-8").read())))
    assert rows[0] == ["", "x", "y"], rows
    stats = {r[0]: r[1:] for r in rows[1:]}
    assert stats["count"] == ["4.0", "4.0"] and stats["mean"] == ["2.5", "21.25"], rows


def check_png(path: str) -> None:
    with open(path, "rb") as f:
        assert f.read(8) == b"\x89PNG\r\n\x1a\n"


def test_agentrun_mcp_client(server, tmp_path):
    """AgentRunMCPClient: all 10 public methods (and its constructor's initialize)."""
    client = AgentRunMCPClient(base(server))  # initialize, answered as SSE
    assert client.mcp_session_id

    health = client.get_health()
    assert health["status"] == "healthy" and isinstance(health["active_sessions"], int), health

    packages = client.get_packages()
    assert packages["count"] == len(packages["packages"]) > 0, packages
    assert {"numpy", "pandas", "matplotlib"} <= set(packages["packages"]), packages["packages"][:10]

    session = client.create_session()
    sid = session.session_id
    server.session_ids.add(sid)
    assert isinstance(session, SessionInfo)
    assert (session.workdir, session.source_path, session.artifact_path) == \
        ("/workspace", "/workspace/src", "/workspace/artifacts")

    # The README's first example: describe a DataFrame, read result["output"].
    result = client.execute_code(sid, """
import pandas as pd
data = {'x': [1, 2, 3, 4], 'y': [10, 20, 25, 30]}
df = pd.DataFrame(data)
print(df.describe())
""")
    assert result["success"] is True and "mean" in result["output"] and "21.25" in result["output"], result
    hello = client.execute_code(sid, 'print("Hello World!")')
    assert (hello["success"], hello["output"]) == (True, "Hello World!\n"), hello

    # Files: upload from a path and from bytes; code reads them from src/, writes artifacts/.
    (tmp_path / "data.csv").write_text(DATA)
    up = client.upload_file(sid, str(tmp_path / "data.csv"))
    assert up["success"] is True and up["destination"] == "/workspace/src/data.csv", up
    up = client.upload_file_content(sid, b"\x00\x01binary\xff", "blob.bin")
    assert up["success"] is True and up["destination"] == "/workspace/src/blob.bin", up
    result = client.execute_code(sid, README_CODE, ignore_unsafe_functions=["open"])
    assert (result["success"], result["output"]) == (True, "Done!\n"), result
    check = client.execute_code(sid, "print(open('src/blob.bin', 'rb').read())")
    assert check["output"] == "b'\\x00\\x01binary\\xff'\n", check
    result = client.execute_code(sid, PLOT_CODE)
    assert result["success"] is True, result

    out = tmp_path / "out"
    out.mkdir()
    path = client.download_file(sid, "artifacts/summary.csv", str(out))
    assert path == str(out / "summary.csv")
    check_summary(path)
    path = client.download_file(sid, "/workspace/artifacts/plot.png", str(out), filename="mcp-plot.png")
    check_png(path)

    # An exception is a failed execution whose output holds the traceback.
    failed = client.execute_code(sid, "1 / 0")
    assert failed["success"] is False and "ZeroDivisionError" in failed["output"], failed

    info = client.get_session_info(sid)
    assert info["session_id"] == sid and info["source_path"] == "/workspace/src", info
    assert info["artifact_path"] == "/workspace/artifacts", info
    listed = client.list_sessions()
    assert sid in listed["active_sessions"] and listed["count"] == len(listed["active_sessions"]), listed

    closed = client.close_session(sid)
    assert closed == {"success": True, "message": f"Session {sid} closed successfully"}, closed
    assert sid not in client.list_sessions()["active_sessions"]
    # Errors come back as results the client can read, not as exceptions.
    gone = client.execute_code(sid, "print(1)")
    assert gone["success"] is False and sid in gone["error"], gone


def test_agentrun_api_client(server, tmp_path):
    """AgentRunAPIClient: all 11 public methods, and the README's REST/MCP interoperability."""
    api = AgentRunAPIClient(base(server))

    root = api.get_root()
    assert "POST /sessions/{session_id}/execute" in root["endpoints"] and "MCP" in root["protocols"], root
    health = api.get_health()
    assert health["status"] == "healthy" and health["protocols"] == ["rest", "mcp"], health
    packages = api.get_packages()
    assert packages["count"] == len(packages["packages"]) and "pandas" in packages["packages"], packages

    session = api.create_session()
    sid = session.session_id
    server.session_ids.add(sid)
    assert session == SessionInfo(sid, "/workspace", "/workspace/src", "/workspace/artifacts")

    hello = api.execute_code(sid, 'print("Hello from REST!")')
    assert (hello["success"], hello["output"]) == (True, "Hello from REST!\n"), hello

    (tmp_path / "data.csv").write_text(DATA)
    up = api.upload_file(sid, str(tmp_path / "data.csv"))
    assert up == {"message": "File 'data.csv' copied successfully", "destination_path": "/workspace/src/data.csv"}
    up = api.upload_file_content(sid, b"a note\n", "note.txt")
    assert up["destination_path"] == "/workspace/src/note.txt", up
    result = api.execute_code(sid, README_CODE, ignore_unsafe_functions=["open"])
    assert (result["success"], result["output"]) == (True, "Done!\n"), result
    assert api.execute_code(sid, "print(open('src/note.txt').read(), end='')")["output"] == "a note\n"
    assert api.execute_code(sid, PLOT_CODE)["success"] is True

    out = tmp_path / "out"
    out.mkdir()
    path = api.download_file(sid, "artifacts/summary.csv", str(out))
    assert path == str(out / "summary.csv")
    check_summary(path)
    check_png(api.download_file(sid, "artifacts/plot.png", str(out), filename="rest-plot.png"))

    failed = api.execute_code(sid, "raise ValueError('bad input')")
    assert failed["success"] is False and "ValueError: bad input" in failed["output"], failed

    info = api.get_session_info(sid)
    assert (info["session_id"], info["source_path"], info["artifact_path"]) == \
        (sid, "/workspace/src", "/workspace/artifacts"), info
    listed = api.list_sessions()
    assert sid in listed["active_sessions"] and listed["count"] == len(listed["active_sessions"]), listed

    # The README's interoperability: a session made over MCP runs code sent over REST, and both
    # clients list the same packages.
    mcp = AgentRunMCPClient(base(server))
    shared = mcp.create_session()
    server.session_ids.add(shared.session_id)
    assert api.execute_code(shared.session_id, 'print("Hello from REST!")')["output"] == "Hello from REST!\n"
    assert mcp.get_packages()["packages"] == api.get_packages()["packages"]
    assert mcp.close_session(shared.session_id)["success"] is True

    # Errors carry FastAPI's "detail", which the client puts into the exception it raises.
    with pytest.raises(requests.HTTPError, match="403 Forbidden .* traversal"):
        api.download_file(sid, "../etc/passwd", str(out))
    assert api.close_session(sid) == {"message": f"Session {sid} closed successfully"}
    assert sid not in api.list_sessions()["active_sessions"]
    with pytest.raises(requests.HTTPError, match="404 Not Found .* no live session"):
        api.get_session_info(sid)

"""What a sandbox can do to the files API in one line, through every protocol that moves files
(issue 21): REST, MCP (`upload_file`, `list_files`, `download_file`), E2B's SDK (`files.write`,
`list`, `read`, `remove`, `make_dir`, `get_info`) and AgentRun's `copy-to`, on one real runboxd
and real sandboxes.

1. A full /workspace: an upload is all or nothing. It answers 507 naming the workspace's size and
   what is free, an existing file keeps its content, and no new or temporary file is left.
2. Names that are not UTF-8, or hold a newline or escape characters: every one is listed (in the
   name form, "\\xhh" for such bytes, with path_bytes), and can be read, written and deleted by
   the name the listing gave; no listing fails because of one entry.
3. A link into /proc/1/root (which the sandbox user cannot resolve): that path is the documented
   403 "leads outside /workspace", no traceback reaches a caller, and everything else keeps
   working (listing, E2B's ListDir, Stat and MakeDir).
"""

from __future__ import annotations

import base64

import pytest
import requests

import rbtest
from rbfixtures import keyed_server_fixture, point_e2b_sdk_at

from e2b import NotEnoughSpaceException, SandboxException
from e2b_code_interpreter import Sandbox

KEY = "e2b_" + "c3" * 20
MCP_HEADERS = {"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call",
               "Accept": "application/json, text/event-stream"}


server = keyed_server_fixture("runboxd-hostile-files", {"carol": KEY})


@pytest.fixture
def e2b_env(server, monkeypatch):
    point_e2b_sdk_at(monkeypatch, server, KEY)
    return server


def run(server, sid: str, code: str) -> dict:
    doc = server.execute(sid, code)
    assert doc["status"] == "completed", doc
    return doc


def upload(server, sid: str, path: str, data: bytes) -> requests.Response:
    return server.request("POST", f"/sessions/{sid}/files", params={"path": path}, data=data,
                          headers={"Content-Type": "application/octet-stream"})


def listing(server, sid: str) -> dict:
    r = server.get(f"/sessions/{sid}/files")
    assert r.status_code == 200, r.text
    rbtest.check_schema(r.json(), "FileList")
    return {f["path"]: f for f in r.json()["files"]}


def check_error(resp: requests.Response, status: int, code: str, *mentions: str) -> str:
    assert resp.status_code == status, f"expected {status}, got {resp.status_code}: {resp.text[:500]}"
    rbtest.check_schema(resp.json(), "Error")
    err = resp.json()["error"]
    assert err["code"] == code, err
    for m in mentions:
        assert m.lower() in err["message"].lower(), err["message"]
    assert_no_internals(err["message"])
    return err["message"]


def assert_no_internals(text: str) -> None:
    for word in ("Traceback", "Error:", "File \"<string>\"", "/proc/1/root", "exit code 0", "errno"):
        assert word not in text, text


def mcp(server, tool: str, args: dict) -> dict:
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": tool, "arguments": args,
                       "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                                 "io.modelcontextprotocol/clientCapabilities": {}}}}
    r = server.post("/mcp", body, headers={**MCP_HEADERS, "Mcp-Name": tool})
    assert r.status_code == 200, r.text
    doc = rbtest.mcp_answer(r, 1)
    assert "result" in doc, doc
    return doc["result"]


def mcp_text(result: dict) -> str:
    return "\n".join(c.get("text", "") for c in result["content"] if c.get("type") == "text")


def agentrun_copy_to(server, sid: str, name: str, data: bytes) -> requests.Response:
    return server.request("POST", f"/agentrun/sessions/{sid}/copy-to", files={"file": (name, data)})


def workspace_bytes(server, sid: str) -> str:
    """The names and contents under /workspace as the sandbox itself sees them (bytes)."""
    return run(server, sid, "import os\n"
                            "sorted((os.path.relpath(os.path.join(d, n), b'.'),"
                            " open(os.path.join(d, n), 'rb').read()[:40])"
                            " for d, _, ns in os.walk(b'.') for n in ns)")["result"]


FILL = """
import os
open('keep.txt', 'w').write('precious\\n' * 1000)
try:
    with open('fill.bin', 'wb', buffering=0) as f:
        while True:
            f.write(b'x' * 4096)
except OSError as e:
    full = e.errno
s = os.statvfs('/workspace')
(full, s.f_bavail * s.f_frsize)
"""


def test_an_upload_into_a_full_workspace_changes_nothing(server, e2b_env):
    """Finding 1: the workspace at its size. Before the fix an upload answered 502
    upstream_error, left the new file behind empty and cut an existing file to 4,096 bytes."""
    sid = server.create_session({"execution_options": {"workspace_size": "2m"}})["session_id"]
    with Sandbox.connect(sid) as sbx:  # the same session through E2B's SDK
        assert run(server, sid, FILL)["result"] == "(28, 0)"  # ENOSPC, nothing free
        before = workspace_bytes(server, sid)
        keep = b"precious\n" * 1000

        # REST, over an existing file and as a new one
        msg = check_error(upload(server, sid, "keep.txt", b"new content " * 5000), 507, "insufficient_storage",
                          "workspace", "full", "workspace_size", "free")
        assert "nothing was changed" in msg, msg
        check_error(upload(server, sid, "sub/new.bin", b"y" * 50_000), 507, "insufficient_storage")
        # multipart too
        r = server.request("POST", f"/sessions/{sid}/files", files={"file": ("keep.txt", b"z" * 9000)})
        check_error(r, 507, "insufficient_storage")

        # MCP upload_file
        res = mcp(server, "upload_file", {"session_id": sid, "filename": "keep.txt", "content": "mcp " * 3000})
        assert res["isError"] is True, res
        assert "full" in mcp_text(res) and "workspace_size" in mcp_text(res), res
        assert_no_internals(mcp_text(res))

        # E2B files.write: its SDK raises NotEnoughSpaceException for 507
        with pytest.raises(NotEnoughSpaceException) as exc:
            sbx.files.write("/home/user/keep.txt", "e2b " * 3000)
        assert "workspace" in str(exc.value), exc.value

        # AgentRun copy-to (into src/)
        r = agentrun_copy_to(server, sid, "data.csv", b"a,b\n" * 3000)
        assert r.status_code == 507, r.text
        assert "workspace" in r.text

        # all or nothing: the workspace is exactly as it was (sub/ made for the upload is empty)
        assert workspace_bytes(server, sid) == before
        assert run(server, sid, "open('keep.txt','rb').read() == " + repr(keep))["result"] == "True"
        files = listing(server, sid)
        assert "sub/new.bin" not in files and "src/data.csv" not in files
        assert not [p for p in files if ".runbox-upload-" in p], files

        # room made: the same uploads go through, over the old file
        run(server, sid, "import os; os.remove('fill.bin')")
        r = upload(server, sid, "keep.txt", b"new content")
        assert r.status_code == 201, r.text
        assert sbx.files.read("/home/user/keep.txt") == "new content"
        assert not [p for p in listing(server, sid) if ".runbox-upload-" in p]


def test_a_file_that_fits_only_after_the_old_one_goes_is_refused_whole(server):
    """An upload needs room for the whole new file beside the old one (it replaces it only once
    written), and says so; the old file stays whole."""
    s = server.create_session({"execution_options": {"workspace_size": "2m"}})
    sid = s["session_id"]
    run(server, sid, "open('big.bin','wb').write(b'o' * 1_300_000)")
    msg = check_error(upload(server, sid, "big.bin", b"n" * 1_300_000), 507, "insufficient_storage", "free")
    assert "2097152" in msg.replace(",", ""), msg  # the workspace's size in bytes
    assert run(server, sid, "d=open('big.bin','rb').read(); (len(d), set(d))")["result"] == "(1300000, {111})"
    assert upload(server, sid, "small.bin", b"n" * 300_000).status_code == 201


NAMES = {
    b"bad\xff.bin": b"not utf-8",
    b"new\nline.txt": b"newline",
    b"esc\x1b[31m.txt": b"escape",
    b"back\\slash.txt": b"backslash",
    b"tab\there": b"tab",
    "caf\u00e9.txt".encode(): b"utf-8",
    b"ok.txt": b"plain",
}
FORMS = {
    b"bad\xff.bin": "bad\\xff.bin",
    b"new\nline.txt": "new\\x0aline.txt",
    b"esc\x1b[31m.txt": "esc\\x1b[31m.txt",
    b"back\\slash.txt": "back\\x5cslash.txt",
    b"tab\there": "tab\\x09here",
    "caf\u00e9.txt".encode(): "caf\u00e9.txt",
    b"ok.txt": "ok.txt",
}


def test_every_name_the_kernel_allows_is_listed_read_written_and_deleted(server, e2b_env):
    """Finding 2: before the fix one name that is not UTF-8 made REST listing answer 502 ("exit
    code 0: no output"), MCP list_files an error and E2B ListDir 503; names with a newline or
    escape characters were left out."""
    with Sandbox.create() as sbx:
        sid = sbx.sandbox_id
        server.session_ids.add(sid)
        doc = run(server, sid, "import os\nos.makedirs(b'd\\xfe', exist_ok=True)\n"
                               f"for n, d in {NAMES!r}.items(): open(n, 'wb').write(d)\n"
                               "open(b'd\\xfe/in\\x01side', 'wb').write(b'nested')")
        # the files the cell wrote are named as the listing names them
        assert sorted(f["path"] for f in doc["files_written"]) == sorted([*FORMS.values(), "d\\xfe/in\\x01side"])
        files = listing(server, sid)
        for raw, form in FORMS.items():
            assert form in files, (form, sorted(files))
            assert files[form]["type"] == "file" and files[form]["size"] == len(NAMES[raw])
            if "\\" in form:
                assert base64.b64decode(files[form]["path_bytes"]) == raw
            else:
                assert "path_bytes" not in files[form]
        assert files["d\\xfe"]["type"] == "directory"
        assert base64.b64decode(files["d\\xfe/in\\x01side"]["path_bytes"]) == b"d\xfe/in\x01side"

        # read each by the name the listing gave, absolute too
        for raw, form in FORMS.items():
            r = server.get(f"/sessions/{sid}/files/download", params={"path": form})
            assert r.status_code == 200 and r.content == NAMES[raw], (form, r.status_code, r.text[:200])
        r = server.get(f"/sessions/{sid}/files/download", params={"path": "/workspace/d\\xfe/in\\x01side"})
        assert r.status_code == 200 and r.content == b"nested"
        # a name given with upper-case hex is the same file
        r = server.get(f"/sessions/{sid}/files/download", params={"path": "bad\\xFF.bin"})
        assert r.status_code == 200 and r.content == b"not utf-8"

        # write: by name form, the sandbox sees the raw bytes
        r = upload(server, sid, "up\\xc0\\x0a.bin", b"uploaded")
        assert r.status_code == 201, r.text
        assert r.json()["files"][0]["path"] == "up\\xc0\\x0a.bin"
        assert run(server, sid, "open(b'up\\xc0\\n.bin','rb').read()")["result"] == "b'uploaded'"

        # malformed escapes and escapes of '/' or NUL are the caller's error, named
        for bad in ("a\\q", "a\\x4", "a\\x2f..\\x2fetc", "a\\x00b"):
            check_error(server.get(f"/sessions/{sid}/files/download", params={"path": bad}), 400,
                        "invalid_request", "\\x")
        check_error(server.get(f"/sessions/{sid}/files/download", params={"path": "\\x2e\\x2e/etc/passwd"}), 403,
                    "forbidden", "..")

        # MCP: list_files lists them, download_file reads one
        res = mcp(server, "list_files", {"session_id": sid})
        assert res["isError"] is False, res
        assert "bad\\xff.bin" in mcp_text(res) or "bad\\\\xff.bin" in mcp_text(res), mcp_text(res)[:2000]
        res = mcp(server, "download_file", {"session_id": sid, "src_path": "new\\x0aline.txt"})
        assert res["isError"] is False and "newline" in mcp_text(res), res

        # E2B: list, get_info, read, exists, remove, by the listed names
        names = {e.name for e in sbx.files.list("/home/user")}
        assert {"bad\\xff.bin", "new\\x0aline.txt", "esc\\x1b[31m.txt", "d\\xfe"} <= names, names
        info = sbx.files.get_info("/home/user/bad\\xff.bin")
        assert info.size == len(b"not utf-8"), info
        assert sbx.files.read("/home/user/esc\\x1b[31m.txt") == "escape"
        assert sbx.files.exists("/home/user/tab\\x09here")
        sbx.files.remove("/home/user/tab\\x09here")
        assert not sbx.files.exists("/home/user/tab\\x09here")

        # delete the rest over REST, folder included
        for form in [f for f in FORMS.values() if "tab" not in f] + ["d\\xfe", "up\\xc0\\x0a.bin"]:
            r = server.delete(f"/sessions/{sid}/files", params={"path": form})
            assert r.status_code == 200, (form, r.text)
        assert run(server, sid, "import os; os.listdir(b'.')")["result"] == "[]"


def test_a_link_into_proc_1_root_is_refused_and_breaks_nothing(server, e2b_env):
    """Finding 3: before the fix reading or writing through a link to /proc/1/root answered 502
    with a Python traceback, and listing, E2B ListDir, MakeDir and Stat failed for the session."""
    with Sandbox.create() as sbx:
        sid = sbx.sandbox_id
        server.session_ids.add(sid)
        run(server, sid, "import os\nos.symlink('/proc/1/root/etc', 'p1')\n"
                         "os.symlink('/proc/1/root/etc/hostname', 'p1f')\nopen('fine.txt','w').write('fine')")
        files = listing(server, sid)
        assert files["p1"]["type"] == "symlink" and files["p1"]["escapes"] is True
        assert files["p1f"]["escapes"] is True
        assert files["fine.txt"]["type"] == "file"

        dl = f"/sessions/{sid}/files/download"
        check_error(server.get(dl, params={"path": "p1f"}), 403, "forbidden", "leads outside /workspace")
        check_error(server.get(dl, params={"path": "p1/hostname"}), 403, "forbidden", "leads outside /workspace")
        check_error(upload(server, sid, "p1/evil", b"x"), 403, "forbidden", "leads outside /workspace")
        check_error(upload(server, sid, "p1/sub/evil", b"x"), 403, "forbidden", "leads outside /workspace")
        check_error(server.delete(f"/sessions/{sid}/files", params={"path": "p1/hostname"}), 403, "forbidden",
                    "leads outside /workspace")
        res = mcp(server, "download_file", {"session_id": sid, "src_path": "p1f"})
        assert res["isError"] is True and "outside /workspace" in mcp_text(res), res
        assert_no_internals(mcp_text(res))
        r = agentrun_copy_to(server, sid, "x.txt", b"x")  # src/ is fine: the link is elsewhere
        assert r.status_code in (200, 201), r.text

        # E2B: ListDir, Stat, MakeDir and read
        # listing works; links whose target the user cannot reach have no type, as envd reports them,
        # and the SDK leaves such entries out
        names = {e.name for e in sbx.files.list("/home/user")}
        assert {"fine.txt", "src"} <= names and not {"p1", "p1f"} & names, names
        # the link itself (envd's Stat: a link whose target cannot be reached has no type)
        assert sbx.files.get_info("/home/user/p1").name == "p1"
        assert sbx.files.make_dir("/home/user/newdir") is True
        with pytest.raises(SandboxException) as exc:
            sbx.files.make_dir("/home/user/p1/sub")
        assert "outside" in str(exc.value) and "Traceback" not in str(exc.value), exc.value
        with pytest.raises(SandboxException) as exc:
            sbx.files.read("/home/user/p1f")
        assert "Traceback" not in str(exc.value), exc.value
        assert sbx.files.read("/home/user/fine.txt") == "fine"
        # the link itself can be deleted (not what it points to)
        assert server.delete(f"/sessions/{sid}/files", params={"path": "p1"}).status_code == 200
        assert "p1" not in listing(server, sid)

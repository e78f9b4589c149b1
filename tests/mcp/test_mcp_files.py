"""MCP file, package and dependency tools with the official `mcp` SDK client against a real
runboxd and real Docker sandboxes: upload_file / download_file round trips (text and binary),
list_files (also of files that code wrote), files as resources
(runbox://sessions/{session_id}/files/{path}), confinement to /workspace, bad base64,
get_packages, and the dependency policy through install_dependencies and create_session, and
install_dependencies of what the image already has (a no-op that says so).
"""

from __future__ import annotations

import base64

import anyio
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError

import rbtest

SAVE_FILES = (
    "import os, matplotlib\nmatplotlib.use('Agg')\nimport matplotlib.pyplot as plt\n"
    "plt.plot([1, 2, 3], [3, 1, 2])\nplt.savefig('plot.png')\nplt.close('all')\n"
    "os.makedirs('out', exist_ok=True)\n"
    "with open('out/result.csv', 'w') as f:\n    f.write('x,y\\n1,2\\n')\n"
    "print('saved')\n"
)


def url(server: rbtest.Server) -> str:
    return server.url + "/mcp"


def texts(result) -> str:
    return "".join(getattr(c, "text", "") for c in result.content)


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def test_upload_download_round_trip_text_and_binary(server):
    text = "name,value\nalpha,1\nbéta,2\n"
    binary = bytes(range(256)) * 4

    async def main():
        async with Client(url(server), mode="legacy") as c:
            # Without session_id: this connection's sandbox, the one execute_code uses.
            r = await c.call_tool("upload_file", {"filename": "data/input.csv", "content_base64": b64(text.encode())})
            assert not r.is_error, texts(r)
            sc = r.structured_content
            sid = sc["session_id"]
            server.session_ids.add(sid)
            assert sc["path"] == "data/input.csv" and sc["size"] == len(text.encode())
            assert sc["uri"] == f"runbox://sessions/{sid}/files/data/input.csv"
            r = await c.call_tool("execute_code", {"code": "open('data/input.csv', encoding='utf-8').read()"})
            assert not r.is_error, texts(r)
            assert r.structured_content["session_id"] == sid
            assert r.structured_content["result"] == repr(text)

            # Text comes back as text; the absolute form of the path works too.
            r = await c.call_tool("download_file", {"session_id": sid, "src_path": "/workspace/data/input.csv"})
            assert not r.is_error, texts(r)
            assert r.content[0].type == "text" and r.content[0].text == text
            assert r.structured_content["encoding"] == "utf-8"
            assert r.structured_content["path"] == "data/input.csv"
            assert r.structured_content["mime_type"].startswith("text/csv")

            # Binary bytes round-trip exactly, as an embedded resource.
            r = await c.call_tool("upload_file", {"session_id": sid, "filename": "blob.bin", "content_base64": b64(binary)})
            assert not r.is_error, texts(r)
            r = await c.call_tool("execute_code", {"code": "import hashlib\nhashlib.sha256(open('blob.bin','rb').read()).hexdigest()"})
            import hashlib

            assert r.structured_content["result"] == repr(hashlib.sha256(binary).hexdigest())
            r = await c.call_tool("download_file", {"src_path": "blob.bin"})
            assert not r.is_error, texts(r)
            block = r.content[0]
            assert block.type == "resource", r.content
            assert block.resource.mime_type == "application/octet-stream"
            assert base64.b64decode(block.resource.blob) == binary
            assert r.structured_content["size"] == len(binary) and r.structured_content["encoding"] == "base64"

            # Plain text through `content`, replacing a file.
            r = await c.call_tool("upload_file", {"session_id": sid, "filename": "data/input.csv", "content": "replaced\n"})
            assert not r.is_error, texts(r)
            r = await c.call_tool("download_file", {"session_id": sid, "src_path": "data/input.csv"})
            assert texts(r) == "replaced\n"

            # list_files shows what was uploaded, with sizes and resource URIs.
            r = await c.call_tool("list_files", {})
            assert not r.is_error, texts(r)
            files = {f["path"]: f for f in r.structured_content["files"]}
            assert files["blob.bin"]["size"] == len(binary) and files["blob.bin"]["type"] == "file"
            assert files["data"]["type"] == "directory"
            assert files["data/input.csv"]["uri"] == f"runbox://sessions/{sid}/files/data/input.csv"

    anyio.run(main)


def test_files_written_by_code_are_listed_downloaded_and_readable_as_resources(server):
    async def main():
        async with Client(url(server), mode="legacy") as c:
            r = await c.call_tool("create_session", {})
            assert not r.is_error, texts(r)
            sid = r.structured_content["session_id"]
            server.session_ids.add(sid)
            r = await c.call_tool("execute_code", {"code": SAVE_FILES, "session_id": sid})
            assert not r.is_error, texts(r)
            r = await c.call_tool("list_files", {"session_id": sid})
            files = {f["path"]: f for f in r.structured_content["files"]}
            assert {"plot.png", "out/result.csv"} <= set(files), files
            assert files["plot.png"]["size"] > 1000

            # A saved plot comes back as image content the model can see.
            r = await c.call_tool("download_file", {"session_id": sid, "src_path": "plot.png"})
            assert not r.is_error, texts(r)
            assert r.content[0].type == "image" and r.content[0].mime_type == "image/png"
            assert base64.b64decode(r.content[0].data).startswith(rbtest.PNG_SIGNATURE)
            # and as text for hosts that pass only text on (Chat Completions tool messages)
            assert texts(r) == f"plot.png: image/png, {files['plot.png']['size']} bytes", r.content

            # Files as resources: the URIs list_files gives, and the template's escaped form.
            res = await c.read_resource(files["out/result.csv"]["uri"])
            assert res.contents[0].text == "x,y\n1,2\n"
            assert res.contents[0].mime_type.startswith("text/csv")
            res = await c.read_resource(f"runbox://sessions/{sid}/files/out%2Fresult.csv")
            assert res.contents[0].text == "x,y\n1,2\n"
            res = await c.read_resource(files["plot.png"]["uri"])
            assert res.contents[0].mime_type == "image/png"
            assert base64.b64decode(res.contents[0].blob).startswith(rbtest.PNG_SIGNATURE)
            res = await c.read_resource(f"runbox://sessions/{sid}/files")
            assert "out/result.csv" in res.contents[0].text
            templates = {t.uri_template for t in (await c.list_resource_templates()).resource_templates}
            assert "runbox://sessions/{session_id}/files/{path}" in templates
            with pytest.raises(MCPError) as e:
                await c.read_resource(f"runbox://sessions/{sid}/files/missing.txt")
            assert "no file" in str(e.value)

    anyio.run(main)


def test_paths_outside_the_workspace_are_refused(server):
    async def main():
        async with Client(url(server), mode="legacy") as c:
            r = await c.call_tool("execute_code", {"code": "import os\nos.symlink('/etc', 'etc_link')\nos.getcwd()"})
            assert not r.is_error, texts(r)
            sid = r.structured_content["session_id"]
            server.session_ids.add(sid)
            cases = [
                ("upload_file", {"filename": "../../etc/evil", "content": "x"}, "'..'"),
                ("upload_file", {"filename": "/etc/evil", "content": "x"}, "/workspace"),
                ("upload_file", {"filename": "etc_link/evil", "content": "x"}, "outside /workspace"),
                ("download_file", {"src_path": "../../etc/passwd"}, "'..'"),
                ("download_file", {"src_path": "/etc/passwd"}, "/workspace"),
                ("download_file", {"src_path": "etc_link/passwd"}, "outside /workspace"),
            ]
            for tool, args, words in cases:
                r = await c.call_tool(tool, args)
                assert r.is_error, (tool, args, texts(r))
                assert "forbidden" in texts(r) and words in texts(r), (tool, args, texts(r))
            with pytest.raises(MCPError) as e:
                await c.read_resource(f"runbox://sessions/{sid}/files/etc_link/passwd")
            assert "outside /workspace" in str(e.value)
            # Nothing was written through the link.
            r = await c.call_tool("execute_code", {"code": "import os\nos.path.exists('/etc/evil')"})
            assert r.structured_content["result"] == "False"

    anyio.run(main)


def test_bad_base64_is_a_clear_tool_error(server):
    async def main():
        async with Client(url(server), mode="legacy") as c:
            r = await c.call_tool("upload_file", {"filename": "x.bin", "content_base64": "not base64!"})
            assert r.is_error
            assert "not valid base64" in texts(r) and "'!'" in texts(r), texts(r)
            r = await c.call_tool("upload_file", {"filename": "x.bin", "content_base64": "QUJDR"})
            assert r.is_error and "not valid base64" in texts(r), texts(r)
            r = await c.call_tool("upload_file", {"filename": "x.bin"})
            assert r.is_error and "content_base64" in texts(r), texts(r)

    anyio.run(main)


def test_large_files(server):
    s = server.create_session()
    sid = s["session_id"]
    big_text = ("0123456789abcdef" * 64 + "\n") * 300  # ~300 KiB of text: over the inline-text size
    r = server.post(f"/sessions/{sid}/files?path=big.txt", data=big_text.encode(),
                    headers={"Content-Type": "application/octet-stream"})
    assert r.status_code in (200, 201), r.text
    huge = b"\0" * (9 * 1024 * 1024)
    r = server.post(f"/sessions/{sid}/files?path=huge.bin", data=huge,
                    headers={"Content-Type": "application/octet-stream"})
    assert r.status_code in (200, 201), r.text

    async def main():
        async with Client(url(server), mode="legacy") as c:
            r = await c.call_tool("download_file", {"session_id": sid, "src_path": "big.txt"})
            assert not r.is_error, texts(r)
            assert r.content[0].type == "resource"
            assert base64.b64decode(r.content[0].resource.blob).decode() == big_text
            r = await c.call_tool("download_file", {"session_id": sid, "src_path": "huge.bin"})
            assert r.is_error and "8388608 bytes" in texts(r), texts(r)
            assert "GET /sessions/" in texts(r), texts(r)

    anyio.run(main)


def test_get_packages_lists_numpy(server):
    async def main():
        async with Client(url(server), mode="legacy") as c:
            r = await c.call_tool("get_packages", {})
            assert not r.is_error, texts(r)
            names = {p["name"].lower(): p.get("version") for p in r.structured_content["packages"]}
            assert "numpy" in names and names["numpy"], sorted(names)
            assert "numpy" in texts(r)

    anyio.run(main)


def test_install_dependencies_the_image_satisfies_says_so(server):
    """install_dependencies of requirements the image already has is a no-op that says so."""
    async def main():
        # The SDK's default mode (MCP 2026-07-28): the session is the one execute_code started.
        async with Client(url(server)) as c:
            r = await c.call_tool("get_packages", {})
            pkgs = {p["name"].lower(): p for p in r.structured_content["packages"]}
            assert pkgs["scikit-learn"]["modules"] == ["sklearn"], pkgs["scikit-learn"]
            r = await c.call_tool("execute_code", {"code": "1"})
            assert not r.is_error, texts(r)
            sid = r.structured_content["session_id"]
            r = await c.call_tool("install_dependencies", {"session_id": sid, "dependencies": ["numpy", "scipy>=1.10"]})
            assert not r.is_error, texts(r)
            want = [f"numpy=={pkgs['numpy']['version']}", f"scipy=={pkgs['scipy']['version']}"]
            assert r.structured_content["already_satisfied"] == want, r.structured_content
            assert ("already satisfied by the image: " + ", ".join(want) + " (nothing was installed)") in texts(r)

    anyio.run(main)


def test_dependency_policy_through_mcp(make_server):
    srv = make_server(["--deps-block", "forbiddenpkg"])

    async def main():
        async with Client(url(srv), mode="legacy") as c:
            r = await c.call_tool("install_dependencies", {"dependencies": ["forbiddenpkg"]})
            assert r.is_error and "forbiddenpkg" in texts(r), texts(r)
            assert "forbidden" in texts(r), texts(r)
            r = await c.call_tool("install_dependencies", {"dependencies": ["pkg @ https://example.com/x.whl"]})
            assert r.is_error and "invalid_request" in texts(r), texts(r)
            r = await c.call_tool("install_dependencies", {"dependencies": []})
            assert r.is_error and "dependencies" in texts(r), texts(r)
            # create_session passes dependencies on to the same checks.
            r = await c.call_tool("create_session", {"dependencies": ["forbiddenpkg==1.0"]})
            assert r.is_error and "forbiddenpkg" in texts(r), texts(r)

    anyio.run(main)

"""Shared folders (issue 24, docs/data.md#shared-folders) against a real runboxd, the real Docker
engine and real host folders: a read-only share is listed and read but not written, a setuid-root
binary in it runs without privilege and a device node in it cannot be opened, symbolic links made
in it resolve inside the sandbox; a read-write share gets files owned by the sandbox user (uid
1000); keys may mount only the shares their shares= names; the default mounts; the mounts survive
a kill -9 of runboxd; the files API on a share; and runboxd refuses to start with a share that is
a symbolic link, passes through one, lies in its data or does not exist.

The host folders live under /var/tmp (not pytest's tmp_path: its folders are 0700, which the
sandbox user could not pass, and runboxd's database lives there: a share may not) and are removed
afterwards."""

from __future__ import annotations

import hashlib
import os
import shutil
import stat
import subprocess
import tempfile
from pathlib import Path

import pytest

import rbtest

SANDBOX_UID = 1000


@pytest.fixture(scope="module")
def host(sandbox_image):
    """Host folders: photos (a read-only share, with a setuid-root binary, a device node and
    symbolic links out of it) and out (a read-write share owned by the sandbox user)."""
    base = Path(tempfile.mkdtemp(prefix="rb-shares-", dir="/var/tmp"))
    base.chmod(0o755)
    photos, out = base / "photos", base / "out"
    photos.mkdir(mode=0o755)
    out.mkdir(mode=0o755)
    (photos / "a.txt").write_text("hello from the host\n")
    (photos / "sub").mkdir(mode=0o755)
    (photos / "sub" / "b.txt").write_text("deeper\n")
    shutil.copy("/usr/bin/id", photos / "id-suid")
    os.chown(photos / "id-suid", 0, 0)
    os.chmod(photos / "id-suid", 0o4755)
    os.symlink("/etc", photos / "link-etc")
    os.symlink("/etc/hostname", photos / "link-hostname")
    os.symlink("..", photos / "link-up")
    os.mknod(photos / "mem", stat.S_IFCHR | 0o666, os.makedev(1, 1))  # /dev/mem
    os.chown(out, SANDBOX_UID, SANDBOX_UID)
    yield base
    shutil.rmtree(base)


@pytest.fixture(scope="module")
def server(host, tmp_path_factory):
    s = rbtest.Server(tmp_path_factory.mktemp("shares"),
                      ["--pool-size", "0", "--share", f"photos={host / 'photos'}", "--share", f"out={host / 'out'}:rw"])
    s.start()
    yield s
    rbtest.finish_servers([s])


def run(server, sid: str, code: str) -> str:
    r = server.execute(sid, code)
    assert r["status"] == "completed", r
    return r["stdout"]


def test_read_only_share_is_read_but_not_written(server, host):
    s = server.create_session({"execution_options": {"mounts": [{"share": "photos"}]}})
    assert s["execution_options"]["mounts"] == [{"share": "photos", "path": "/workspace/photos", "readonly": True}]
    assert server.session(s["session_id"])["execution_options"]["mounts"] == s["execution_options"]["mounts"]
    out = run(server, s["session_id"], (
        "import os, errno\n"
        "print(sorted(os.listdir('/workspace/photos')))\n"
        "print(open('/workspace/photos/a.txt').read(), end='')\n"
        "print(open('photos/sub/b.txt').read(), end='')\n"
        "for attempt in (lambda: open('/workspace/photos/new.txt', 'w'), lambda: os.remove('/workspace/photos/a.txt'),\n"
        "                lambda: os.chmod('/workspace/photos/a.txt', 0o777), lambda: os.mkdir('/workspace/photos/d')):\n"
        "    try:\n"
        "        attempt(); print('WROTE')\n"
        "    except OSError as e:\n"
        "        print(errno.errorcode[e.errno])\n"))
    lines = out.splitlines()
    assert lines[0] == str(sorted(["a.txt", "sub", "id-suid", "link-etc", "link-hostname", "link-up", "mem"]))
    assert lines[1:3] == ["hello from the host", "deeper"]
    assert lines[3:] == ["EROFS"] * 4, out
    assert sorted(p.name for p in (host / "photos").iterdir()) == sorted(
        ["a.txt", "sub", "id-suid", "link-etc", "link-hostname", "link-up", "mem"])
    # the files API reads the share and is refused writing to it
    r = server.get(f"/sessions/{s['session_id']}/files/download", params={"path": "photos/a.txt"})
    assert r.status_code == 200 and r.content == b"hello from the host\n"
    r = server.request("PUT", f"/sessions/{s['session_id']}/files", params={"path": "photos/up.txt"}, data=b"x",
                       headers={"Content-Type": "application/octet-stream"})
    assert r.status_code == 403, r.text
    assert not (host / "photos" / "up.txt").exists()


def test_setuid_and_devices_in_a_share_give_nothing(server):
    s = server.create_session({"execution_options": {"mounts": [{"share": "photos"}, {"share": "out"}]}})
    out = run(server, s["session_id"], (
        "import os, stat, subprocess, errno\n"
        "st = os.stat('/workspace/photos/id-suid')\n"
        "print(st.st_uid, oct(st.st_mode & 0o7777))\n"
        "print(subprocess.run(['/workspace/photos/id-suid', '-u'], capture_output=True, text=True).stdout.strip())\n"
        "print(subprocess.run(['/workspace/photos/id-suid'], capture_output=True, text=True).stdout.strip())\n"
        "try:\n"
        "    open('/workspace/photos/mem', 'rb').read(1); print('READ')\n"
        "except OSError as e:\n"
        "    print(errno.errorcode[e.errno])\n"
        "try:\n"
        "    os.mknod('/workspace/out/null', stat.S_IFCHR | 0o666, os.makedev(1, 3)); print('MADE')\n"
        "except OSError as e:\n"
        "    print(errno.errorcode[e.errno])\n"))
    lines = out.splitlines()
    assert lines[0] == "0 0o4755", out  # the setuid bit is there ...
    assert lines[1] == str(SANDBOX_UID), out  # ... and gives nothing: no-new-privileges
    assert "euid=0" not in lines[2] and lines[2].startswith(f"uid={SANDBOX_UID}"), out
    assert lines[3] == "EPERM", out  # the engine's device rules: not /dev/mem
    assert lines[4] == "EPERM", out  # no CAP_MKNOD


def test_links_made_in_a_share_resolve_inside_the_sandbox(server):
    s = server.create_session({"execution_options": {"mounts": [{"share": "photos"}]}})
    host_hostname = Path("/etc/hostname").read_text()
    out = run(server, s["session_id"], (
        "import os\n"
        "print(repr(open('/workspace/photos/link-hostname').read()))\n"
        "print(repr(open('/etc/hostname').read()))\n"
        "print(sorted(os.listdir('/workspace/photos/link-etc')) == sorted(os.listdir('/etc')))\n"
        "print(os.path.realpath('/workspace/photos/link-up'), sorted(os.listdir('/workspace/photos/link-up')))\n"))
    lines = out.splitlines()
    assert lines[0] == lines[1], out  # the sandbox's /etc/hostname (its container id) ...
    assert lines[0] != repr(host_hostname), out  # ... not the host's
    assert lines[2] == "True", out
    assert lines[3].startswith("/workspace ") and "'photos'" in lines[3], out


def test_read_write_share_writes_as_the_sandbox_user(server, host):
    s = server.create_session({"execution_options": {"mounts": [{"share": "out", "path": "/workspace/results"}]}})
    assert s["execution_options"]["mounts"] == [{"share": "out", "path": "/workspace/results", "readonly": False}]
    run(server, s["session_id"], "open('/workspace/results/result.txt', 'w').write('42\\n')\n"
                                 "import os; os.makedirs('/workspace/results/deep/er')")
    f = host / "out" / "result.txt"
    assert f.read_text() == "42\n"
    st = f.stat()
    assert (st.st_uid, st.st_gid, stat.S_IMODE(st.st_mode)) == (SANDBOX_UID, SANDBOX_UID, 0o644)
    deep = (host / "out" / "deep" / "er").stat()
    assert (deep.st_uid, stat.S_IMODE(deep.st_mode)) == (SANDBOX_UID, 0o755)
    # the files API writes there as the sandbox user too
    r = server.request("PUT", f"/sessions/{s['session_id']}/files", params={"path": "results/up.bin"},
                       data=b"\x00\x01", headers={"Content-Type": "application/octet-stream"})
    assert r.status_code == 201, r.text
    up = (host / "out" / "up.bin").stat()
    assert (up.st_uid, up.st_gid, (host / "out" / "up.bin").read_bytes()) == (SANDBOX_UID, SANDBOX_UID, b"\x00\x01")
    # a read-write share mounted read-only by the caller
    s2 = server.create_session({"execution_options": {"mounts": [{"share": "out", "readonly": True}]}})
    out = run(server, s2["session_id"], (
        "import errno\ntry:\n    open('/workspace/out/no.txt', 'w')\nexcept OSError as e:\n"
        "    print(errno.errorcode[e.errno])\nprint(open('/workspace/out/result.txt').read(), end='')"))
    assert out == "EROFS\n42\n"
    assert not (host / "out" / "no.txt").exists()


def test_bad_mounts_are_refused_with_the_reason(server):
    cases = [
        ([{"share": "nosuch"}], 403, "no share 'nosuch' that this caller may mount; shares it may mount: photos, out"),
        ([{"share": "photos", "readonly": False}], 403, "read-only"),
        ([{"share": "photos", "path": "/etc"}], 400, "not under /workspace"),
        ([{"share": "photos", "path": "/workspace"}], 400, "over /workspace itself"),
        ([{"share": "photos", "path": "/workspace/.runbox/x"}], 400, ".runbox"),
        ([{"share": "photos", "path": "/workspace/a/../b"}], 400, "'..'"),
        ([{"share": "photos"}, {"share": "out", "path": "/workspace/photos/o"}], 400, "may not nest"),
        ([{"share": "photos"}, {"share": "out", "path": "photos"}], 400, "two mounts"),
        ([{"share": "photos", "path": "x"}] * 17, 400, "at most 16"),
    ]
    before = server.get("/sessions").json()["sessions"]
    for mounts, status, words in cases:
        r = server.post("/sessions", {"execution_options": {"mounts": mounts}})
        assert r.status_code == status, (mounts, r.text)
        assert words in r.json()["error"]["message"], (mounts, r.text)
    assert server.get("/sessions").json()["sessions"] == before  # nothing was created


def test_shares_listing_and_no_keys_means_every_share(server):
    r = server.get("/shares")
    assert r.status_code == 200
    rbtest.check_schema(r.json(), "ShareList")
    assert r.json() == {"shares": [{"name": "photos", "readonly": True}, {"name": "out", "readonly": False}]}
    assert "/var/tmp" not in r.text  # host paths are not shown


KEYS = {"alice": "alice-" + "a" * 40, "bob": "bob-" + "b" * 40}


def test_a_key_mounts_only_its_shares(make_server, host, tmp_path):
    keys = tmp_path / "api-keys"
    line = lambda n, extra="": f"{n} sha256:{hashlib.sha256(KEYS[n].encode()).hexdigest()} {extra}\n"  # noqa: E731
    keys.write_text(line("alice", "shares=photos") + line("bob"))
    s = make_server(["--api-keys-file", str(keys), "--pool-size", "0", "--share", f"photos={host / 'photos'}",
                     "--share", f"out={host / 'out'}:rw"])
    alice = {"Authorization": f"Bearer {KEYS['alice']}"}
    bob = {"Authorization": f"Bearer {KEYS['bob']}"}
    assert s.get("/shares", headers=alice).json() == {"shares": [{"name": "photos", "readonly": True}]}
    assert s.get("/shares", headers=bob).json() == {"shares": []}
    r = s.post("/sessions", {"execution_options": {"mounts": [{"share": "out"}]}}, headers=alice)
    assert r.status_code == 403, r.text
    assert "no share 'out' that this caller may mount; shares it may mount: photos" in r.text
    r = s.post("/sessions", {"execution_options": {"mounts": [{"share": "photos"}]}}, headers=bob)
    assert r.status_code == 403, r.text
    assert "no share 'photos' that this caller may mount; shares it may mount: none" in r.text
    r = s.post("/sessions", {"execution_options": {"mounts": [{"share": "photos"}]}}, headers=alice)
    assert r.status_code == 201, r.text
    s.session_ids.add(r.json()["session_id"])
    rr = s.post("/execute", {"session_id": r.json()["session_id"], "wait": True,
                             "code": "print(open('/workspace/photos/a.txt').read(), end='')"}, headers=alice)
    assert rr.json()["stdout"] == "hello from the host\n"
    s.delete(f"/sessions/{r.json()['session_id']}", headers=alice)


def test_default_mounts_and_restart(make_server, host):
    s = make_server(["--pool-size", "0", "--share", f"photos={host / 'photos'}", "--share", f"out={host / 'out'}:rw",
                     "--default-mounts", "photos,out:/workspace/in/out:ro"])
    assert s.get("/shares").json()["shares"] == [
        {"name": "photos", "readonly": True, "default_path": "/workspace/photos"},
        {"name": "out", "readonly": False, "default_path": "/workspace/in/out"}]
    d = s.create_session()
    assert d["execution_options"]["mounts"] == [
        {"share": "photos", "path": "/workspace/photos", "readonly": True},
        {"share": "out", "path": "/workspace/in/out", "readonly": True}]
    none = s.create_session({"execution_options": {"mounts": []}})
    assert "mounts" not in none["execution_options"]
    assert run(s, none["session_id"], "import os; print(os.path.exists('/workspace/photos'))") == "False\n"
    # the mounts are the session's: kept across a kill -9 of runboxd
    s.kill9()
    s.start()
    assert s.session(d["session_id"])["execution_options"]["mounts"] == d["execution_options"]["mounts"]
    assert run(s, d["session_id"], "print(open('/workspace/photos/a.txt').read(), end='')") == "hello from the host\n"


def start_fails(tmp_path: Path, *args: str) -> str:
    """runboxd's stderr when it refuses to start with args (it must exit non-zero at once)."""
    p = subprocess.run([str(rbtest.RUNBOX_BIN), "--listen", "127.0.0.1:0", "--db", str(tmp_path / "data" / "r.db"),
                        *args], capture_output=True, text=True, timeout=30)
    assert p.returncode != 0, p.stderr
    return p.stderr


def test_start_up_refuses_links_data_and_missing_folders(tmp_path, host):
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "inside").mkdir()
    link = host / "link-to-photos"
    os.symlink(host / "photos", link)
    try:
        err = start_fails(tmp_path, "--share", f"p={link}")
        assert f"share p: {link} is a symbolic link (to {host / 'photos'})" in err, err
        err = start_fails(tmp_path, "--share", f"p={link}/sub")
        assert f"share p: {link} is a symbolic link" in err, err
    finally:
        link.unlink()
    err = start_fails(tmp_path, "--share", f"p={tmp_path / 'data' / 'inside'}")
    assert "share p:" in err and "lies inside runboxd's own data" in err, err
    err = start_fails(tmp_path, "--share", f"p={tmp_path}")
    assert "share p:" in err and "holds runboxd's own data" in err, err
    err = start_fails(tmp_path, "--share", f"p={host}/missing")
    assert f"share p: {host}/missing does not exist" in err, err
    err = start_fails(tmp_path, "--share", f"p={host}/photos/a.txt")
    assert "is not a folder" in err, err
    err = start_fails(tmp_path, "--share", f"P={host}/photos")
    assert "the name must be" in err, err
    err = start_fails(tmp_path, "--share", f"p={host}/photos:rx")
    assert "not a mode" in err, err
    err = start_fails(tmp_path, "--share", f"p={host}/photos", "--default-mounts", "q")
    assert "default-mounts" in err, err
    # a :rw folder the sandbox user (uid 1000) cannot write in: said at start, with the fix
    err = start_fails(tmp_path, "--share", f"p={host}/photos:rw")
    assert f"share p: {host}/photos is owned by 0:0 with mode 0755, so the sandbox's user (uid 1000, gid 1000) " \
           f"cannot write in it; run `chown 1000:1000 {host}/photos`" in err, err


def test_e2b_sandbox_mounts_from_metadata(make_server, host, tmp_path, monkeypatch):
    """E2B has no option for host folders: metadata["runbox.mounts"] holds execution_options.mounts
    as JSON text (docs/e2b.md), checked as for REST."""
    from e2b import SandboxException
    from e2b_code_interpreter import Sandbox
    from rbfixtures import point_e2b_sdk_at

    key = "e2b_" + "c3" * 20
    keys = tmp_path / "api-keys"
    keys.write_text(f"carol sha256:{hashlib.sha256(key.encode()).hexdigest()} shares=photos\n")
    s = make_server(["--api-keys-file", str(keys), "--pool-size", "0", "--share", f"photos={host / 'photos'}",
                     "--share", f"out={host / 'out'}:rw"])
    point_e2b_sdk_at(monkeypatch, s, key)
    with Sandbox.create(metadata={"runbox.mounts": '[{"share": "photos", "path": "/workspace/p"}]'}) as sbx:
        s.session_ids.add(sbx.sandbox_id)
        ex = sbx.run_code("print(open('/workspace/p/a.txt').read(), end='')")
        assert ex.error is None and ex.logs.stdout == ["hello from the host\n"], ex
    with pytest.raises(SandboxException) as e:
        Sandbox.create(metadata={"runbox.mounts": '[{"share": "out"}]'})
    assert "no share 'out' that this caller may mount; shares it may mount: photos" in str(e.value)
    with pytest.raises(SandboxException) as e:
        Sandbox.create(metadata={"runbox.mounts": "photos"})
    assert "runbox.mounts" in str(e.value)


def test_an_upload_onto_a_link_is_refused_by_every_door(server, host, monkeypatch):
    """Issue 37, "A link in a writable share is replaced": code makes symbolic links in a :rw
    share (to /etc/passwd, to /etc, to a file of the share by absolute and by relative path) and
    in the plain /workspace. An upload onto any of them through REST (POST, PUT, multipart), MCP's
    upload_file, AgentRun's copy-to and E2B's files.write answers 403 naming the link, and the
    link stays as it was on the host (before the fix each answered 201 and replaced the link with
    a regular file). Writing beside the links still works."""
    import base64

    from e2b import SandboxException
    from e2b_code_interpreter import Sandbox
    from rbfixtures import point_e2b_sdk_at

    # the share at /workspace/src: AgentRun's copy-to writes there
    s = server.create_session({"execution_options": {"mounts": [{"share": "out", "path": "/workspace/src"}]}})
    sid = s["session_id"]
    links = {"l37-passwd": "/etc/passwd", "l37-etc": "/etc", "l37-abs": "/workspace/src/l37-real.txt",
             "l37-rel": "l37-real.txt"}
    run(server, sid, "import os\nopen('/workspace/src/l37-real.txt', 'w').write('real\\n')\n"
                     + "".join(f"os.symlink({t!r}, '/workspace/src/{n}')\n" for n, t in links.items())
                     + "os.symlink('/etc/passwd', '/workspace/l37-plain')\n")

    def untouched():
        for n, t in links.items():
            p = host / "out" / n
            assert p.is_symlink() and os.readlink(p) == t, (n, p.is_symlink() or p.read_bytes()[:40])
        assert (host / "out" / "l37-real.txt").read_text() == "real\n"
        assert run(server, sid, "import os; print(os.readlink('/workspace/l37-plain'))") == "/etc/passwd\n"

    def refused(r, path):
        assert r.status_code == 403, (path, r.status_code, r.text)
        msg = r.json()["error"]["message"]
        assert f"'{path}' is a symbolic link" in msg and "delete the link first" in msg, msg

    octet = {"Content-Type": "application/octet-stream"}
    paths = [f"src/{n}" for n in links] + ["l37-plain"]
    for path in paths:
        for method in ("POST", "PUT"):
            refused(server.request(method, f"/sessions/{sid}/files", params={"path": path}, data=b"evil",
                                   headers=octet), path)
        refused(server.request("POST", f"/sessions/{sid}/files", data={"path": path}, files={"file": ("x", b"evil")}),
                path)
    untouched()

    # MCP's upload_file (the stateless era: one request, no initialize)
    for path in paths:
        body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                "params": {"name": "upload_file",
                           "arguments": {"session_id": sid, "filename": path,
                                         "content_base64": base64.b64encode(b"evil").decode()},
                           "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                                     "io.modelcontextprotocol/clientCapabilities": {}}}}
        r = server.post("/mcp", body, headers={"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call",
                                               "Mcp-Name": "upload_file",
                                               "Accept": "application/json, text/event-stream"})
        res = rbtest.mcp_answer(r, 1)["result"]
        text = "\n".join(c.get("text", "") for c in res["content"])
        assert res["isError"] is True and f"'{path}' is a symbolic link" in text, res
    untouched()

    # AgentRun's copy-to (into src/)
    for n in links:
        r = server.request("POST", f"/agentrun/sessions/{sid}/copy-to", files={"file": (n, b"evil")})
        assert r.status_code == 403 and f"'src/{n}' is a symbolic link" in r.text, r.text
    untouched()

    # E2B's files.write on the same session (its home is /workspace)
    point_e2b_sdk_at(monkeypatch, server, "e2b_" + "d4" * 20)
    sbx = Sandbox.connect(sid)  # not as a context manager: leaving one would kill the session
    for path in paths:
        with pytest.raises(SandboxException) as e:
            sbx.files.write(f"/home/user/{path}", "evil")
        assert f"'{path}' is a symbolic link" in str(e.value), str(e.value)
    untouched()
    # beside the links, writing works through every door
    sbx.files.write("/home/user/src/l37-new.txt", "new")
    r = server.request("PUT", f"/sessions/{sid}/files", params={"path": "src/l37-new2.txt"}, data=b"new2",
                       headers=octet)
    assert r.status_code == 201, r.text
    assert (host / "out" / "l37-new.txt").read_text() == "new" and (host / "out" / "l37-new2.txt").read_bytes() == b"new2"
    # deleting the link (not its target) lets the upload through
    assert server.delete(f"/sessions/{sid}/files", params={"path": "src/l37-passwd"}).status_code == 200
    r = server.request("PUT", f"/sessions/{sid}/files", params={"path": "src/l37-passwd"}, data=b"mine",
                       headers=octet)
    assert r.status_code == 201 and (host / "out" / "l37-passwd").read_bytes() == b"mine", r.text
    assert Path("/etc/passwd").read_bytes()[:4] != b"mine"

"""Files in a session's /workspace through the REST API of a real runboxd on the real engine:
upload (raw body and multipart), list, download (content type, disposition), delete; files
that code writes are listed in the execution's result; path confinement (.., absolute paths,
NUL, symlinks that escape) answers 400/403; size limits answer 413.
"""

from __future__ import annotations

import rbtest


def check_error(resp, status: int, code: str, mention: str | None = None) -> dict:
    assert resp.status_code == status, f"expected {status}, got {resp.status_code}: {resp.text[:500]}"
    assert resp.headers.get("content-type", "").startswith("application/json"), resp.headers
    rbtest.check_schema(resp.json(), "Error")
    err = resp.json()["error"]
    assert err["code"] == code, err
    assert err["message"].strip()
    if mention is not None:
        assert mention.lower() in err["message"].lower(), err["message"]
    return err


def run(server, sid: str, code: str) -> dict:
    r = server.post("/execute", {"session_id": sid, "code": code, "wait": True})
    assert r.status_code == 200, r.text
    doc = r.json()
    assert doc["status"] == "completed", doc
    return doc


def upload_raw(server, sid: str, path: str, data: bytes, **kw):
    return server.request("POST", f"/sessions/{sid}/files", params={"path": path}, data=data,
                          headers={"Content-Type": "application/octet-stream"}, **kw)


def listing(server, sid: str) -> dict:
    r = server.get(f"/sessions/{sid}/files")
    assert r.status_code == 200, r.text
    rbtest.check_schema(r.json(), "FileList")
    return {f["path"]: f for f in r.json()["files"]}


def test_raw_upload_list_download_delete(server, session):
    sid = session["session_id"]
    data = bytes(range(256)) * 40  # binary, with NUL bytes
    r = upload_raw(server, sid, "data/blob.bin", data)
    assert r.status_code == 201, r.text
    rbtest.check_schema(r.json(), "UploadResult")
    item = r.json()["files"][0]
    assert item["path"] == "data/blob.bin" and item["size"] == len(data)

    files = listing(server, sid)
    assert files["data"]["type"] == "directory"
    assert files["data/blob.bin"]["type"] == "file"
    assert files["data/blob.bin"]["size"] == len(data)
    assert files["data/blob.bin"]["modified"].endswith("Z")

    r = server.get(f"/sessions/{sid}/files/download", params={"path": "/workspace/data/blob.bin"})
    assert r.status_code == 200, r.text
    assert r.content == data
    assert r.headers["content-type"] == "application/octet-stream"
    assert 'filename="blob.bin"' in r.headers["content-disposition"]
    assert r.headers["x-content-type-options"] == "nosniff"

    # the sandbox user owns the file: code can read and rewrite it
    doc = run(server, sid, "p='data/blob.bin'; d=open(p,'rb').read(); open(p,'ab').write(b'!'); len(d)")
    assert doc["result"] == str(len(data))

    r = server.delete(f"/sessions/{sid}/files", params={"path": "data"})
    assert r.status_code == 200, r.text
    rbtest.check_schema(r.json(), "DeletedFile")
    assert r.json()["deleted"] is True
    assert "data/blob.bin" not in listing(server, sid)
    r = server.get(f"/sessions/{sid}/files/download", params={"path": "data/blob.bin"})
    check_error(r, 404, "not_found", "data/blob.bin")


def test_folders_an_upload_makes_belong_to_the_sandbox_user(server, session):
    """The sandbox starts as root so that its runner can separate privileges (issue 9, finding
    3); the file helper that makes an upload's folders runs as the sandbox user all the same,
    so code can write into them and delete them."""
    sid = session["session_id"]
    r = upload_raw(server, sid, "made/by/upload.txt", b"up")
    assert r.status_code == 201, r.text
    doc = run(server, sid, "import os\n"
                           "[(os.stat(p).st_uid, os.stat(p).st_gid) for p in ('made', 'made/by', 'made/by/upload.txt')]")
    assert doc["result"] == "[(1000, 1000), (1000, 1000), (1000, 1000)]", doc
    doc = run(server, sid, "open('made/by/mine.txt', 'w').write('x')\nimport shutil; shutil.rmtree('made'); 'done'")
    assert doc["result"] == "'done'", doc


def test_multipart_upload_and_content_types(server, session):
    sid = session["session_id"]
    files = [("file", ("table.csv", b"a,b\n1,2\n", "text/csv")), ("file", ("notes.txt", b"hello\n", "text/plain"))]
    r = server.request("POST", f"/sessions/{sid}/files", files=files, data={"dir": "in"})
    assert r.status_code == 201, r.text
    assert sorted(f["path"] for f in r.json()["files"]) == ["in/notes.txt", "in/table.csv"]
    r = server.get(f"/sessions/{sid}/files/download", params={"path": "in/table.csv"})
    assert r.status_code == 200 and r.content == b"a,b\n1,2\n"
    assert r.headers["content-type"].startswith("text/csv")
    doc = run(server, sid, "import pandas as pd; int(pd.read_csv('in/table.csv')['b'].sum())")
    assert doc["result"] == "2"
    # a single file to an explicit path
    r = server.request("POST", f"/sessions/{sid}/files", files=[("f", ("x.bin", b"xyz"))],
                       data={"path": "deep/er/renamed.dat"})
    assert r.status_code == 201, r.text
    assert listing(server, sid)["deep/er/renamed.dat"]["size"] == 3


def test_files_written_by_code_are_listed(server, session):
    sid = session["session_id"]
    code = (
        "import matplotlib.pyplot as plt, os\n"
        "plt.plot([1, 2, 3]); plt.savefig('plot.png'); plt.close('all')\n"
        "os.makedirs('out', exist_ok=True)\n"
        "open('out/result.csv', 'w').write('x\\n1\\n')\n"
    )
    doc = run(server, sid, code)
    written = {f["path"]: f for f in doc["files_written"]}
    assert set(written) == {"plot.png", "out/result.csv"}, doc["files_written"]
    assert written["out/result.csv"]["size"] == 4
    assert written["plot.png"]["modified"].endswith("Z")
    # the stored result says the same
    again = server.get(f"/execute/{doc['request_id']}/results").json()
    assert {f["path"] for f in again["files_written"]} == {"plot.png", "out/result.csv"}
    # a cell that writes nothing lists nothing; rewriting a file lists it again
    assert run(server, sid, "1 + 1")["files_written"] == []
    doc = run(server, sid, "open('out/result.csv', 'a').write('2\\n')")
    assert [f["path"] for f in doc["files_written"]] == ["out/result.csv"]
    r = server.get(f"/sessions/{sid}/files/download", params={"path": "plot.png"})
    assert r.status_code == 200
    assert r.headers["content-type"] == "image/png"
    assert r.content.startswith(rbtest.PNG_SIGNATURE)


def test_path_confinement(server, session):
    sid = session["session_id"]
    dl = f"/sessions/{sid}/files/download"
    check_error(server.get(dl, params={"path": "../etc/passwd"}), 403, "forbidden", "..")
    check_error(server.get(dl, params={"path": "a/../../etc/passwd"}), 403, "forbidden")
    check_error(server.get(dl, params={"path": "/etc/passwd"}), 403, "forbidden", "/workspace")
    check_error(server.get(dl, params={"path": "/workspacefoo/x"}), 403, "forbidden")
    check_error(server.get(dl, params={"path": "a\x00b"}), 400, "invalid_request")
    check_error(server.get(dl, params={"path": ""}), 400, "invalid_request")
    check_error(upload_raw(server, sid, "../escape.txt", b"x"), 403, "forbidden")
    check_error(upload_raw(server, sid, "/tmp/x", b"x"), 403, "forbidden")
    check_error(server.delete(f"/sessions/{sid}/files", params={"path": "/"}), 403, "forbidden")
    check_error(server.delete(f"/sessions/{sid}/files", params={"path": "."}), 403, "forbidden", "/workspace itself")

    # symlinks made by code that lead outside /workspace are refused in every direction
    run(server, sid, "import os; os.symlink('/etc', 'etc'); os.symlink('/etc/passwd', 'pw'); "
                     "os.symlink('/workspace/real.txt', 'inside'); open('real.txt', 'w').write('ok')")
    files = listing(server, sid)
    assert files["etc"]["type"] == "symlink" and files["etc"]["escapes"] is True
    assert files["inside"]["escapes"] is False
    check_error(server.get(dl, params={"path": "etc/passwd"}), 403, "forbidden", "outside /workspace")
    check_error(server.get(dl, params={"path": "pw"}), 403, "forbidden")
    check_error(upload_raw(server, sid, "etc/evil.conf", b"x"), 403, "forbidden")
    check_error(server.delete(f"/sessions/{sid}/files", params={"path": "etc/hostname"}), 403, "forbidden")
    # a link that stays inside is followed
    r = server.get(dl, params={"path": "inside"})
    assert r.status_code == 200 and r.content == b"ok"
    # deleting a link removes the link, not its target
    assert server.delete(f"/sessions/{sid}/files", params={"path": "pw"}).status_code == 200
    doc = run(server, sid, "import os; (os.path.lexists('pw'), os.path.exists('/etc/passwd'))")
    assert doc["result"] == "(False, True)"
    # directories are not downloadable
    run(server, sid, "import os; os.makedirs('adir', exist_ok=True)")
    check_error(server.get(dl, params={"path": "adir"}), 409, "conflict", "not a regular file")


def test_unknown_session_and_missing_file(server, session):
    check_error(server.get("/sessions/s_00000000000000000000000000000000/files"), 404, "not_found")
    check_error(upload_raw(server, "s_00000000000000000000000000000000", "x", b"x"), 404, "not_found")
    sid = session["session_id"]
    check_error(server.get(f"/sessions/{sid}/files/download", params={"path": "nope.txt"}), 404, "not_found")
    check_error(server.delete(f"/sessions/{sid}/files", params={"path": "nope.txt"}), 404, "not_found")
    check_error(server.request("POST", f"/sessions/{sid}/files", data=b"x",
                               headers={"Content-Type": "text/plain"}), 400, "invalid_request", "path")
    server.delete(f"/sessions/{sid}")
    check_error(server.get(f"/sessions/{sid}/files"), 404, "not_found")


def test_size_limits(make_server):
    s = make_server(["--max-upload", "64k", "--max-download", "32k"])
    sess = s.create_session()
    sid = sess["session_id"]
    check_error(upload_raw(s, sid, "big.bin", b"x" * (64 * 1024 + 1)), 413, "payload_too_large")
    assert upload_raw(s, sid, "ok.bin", b"x" * (64 * 1024)).status_code == 201
    r = s.post("/execute", {"session_id": sid, "code": "open('out.bin','wb').write(b'y' * 40000)", "wait": True})
    assert r.status_code == 200 and r.json()["status"] == "completed", r.text
    check_error(s.get(f"/sessions/{sid}/files/download", params={"path": "out.bin"}), 413, "payload_too_large",
                "max-download")
    # the session is unharmed
    r = s.post("/execute", {"session_id": sid, "code": "len(open('ok.bin','rb').read())", "wait": True})
    assert r.json()["result"] == str(64 * 1024)


def test_plus_in_a_query_path_is_a_plus(server, session):
    """A '+' in ?path= is the character itself (RFC 3986), as curl sends it: c++.txt was stored
    as "c  .txt". A space travels as %20."""
    sid = session["session_id"]
    r = server.request("POST", f"/sessions/{sid}/files?path=c++.txt", data=b"cpp",
                       headers={"Content-Type": "application/octet-stream"})
    assert r.status_code == 201, r.text
    r = server.request("POST", f"/sessions/{sid}/files?path=a%20b.txt", data=b"space",
                       headers={"Content-Type": "application/octet-stream"})
    assert r.status_code == 201, r.text
    names = listing(server, sid)
    assert "c++.txt" in names and "a b.txt" in names, sorted(names)
    assert server.get(f"/sessions/{sid}/files/download?path=c%2B%2Bdummy").status_code == 404
    assert server.get(f"/sessions/{sid}/files/download?path=c++.txt").content == b"cpp"
    assert server.get(f"/sessions/{sid}/files/download?path=c%2B%2B.txt").content == b"cpp"

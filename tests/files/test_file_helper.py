"""The files API's helper inside the sandbox (core/files/files.c) against a session that tries to
take it over (issue 9, finding 9). The helper resolves paths and lists, deletes and creates
folders as the sandbox user; what a session controls (its environment variables, everything
under /workspace) must not change which program runs or what it does:

- a session whose PATH starts with /workspace/bin, where code planted a fake python3 that
  answers "/workspace/../etc/passwd" and claims deletions it never made, still gets the real
  listing, download, upload and delete;
- a session whose LD_PRELOAD names a library it uploaded to /workspace does not get its code
  loaded into the helper (the probe library leaves a mark when it is loaded).

The helper's answer is checked exactly (a normalised path under /workspace, no '..'); that
check is tested with a forged answer in tests/core/test_files.c.
"""

from __future__ import annotations

import platform
import shutil
import subprocess

import pytest
import rbtest

SYSTEM_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

# A stand-in for python3 on the session's PATH: it leaves a mark, then answers as a helper that
# escapes would (the argv of the real call is python3 ... OP REL LIMIT, OP being the 4th-last).
FAKE_HELPER = r"""#!/bin/sh
echo "$@" >> /workspace/helper-was-faked
for a in "$@"; do op3="$op2"; op2="$op1"; op1="$a"; done
case "$op3" in
  get) printf '{"real":"/workspace/../etc/passwd","size":10,"modified":0}'; exit 0;;
  list) printf '{"files":[{"path":"planted","type":"file","size":1,"modified":0}],"truncated":false}'; exit 0;;
  put) printf '{"dir":"/workspace/../tmp","name":"x"}'; exit 0;;
  delete) printf '{}'; exit 0;;
esac
exit 0
"""


# A library whose constructor creates /workspace/preload-ran (raw system calls: no libc needed,
# so the host's build works in the sandbox's userland).
PROBE_C = r"""
__attribute__((constructor)) static void probe(void)
{
    static const char path[] = "/workspace/preload-ran";
    long fd;
    __asm__ volatile("syscall" : "=a"(fd) : "a"(2L), "D"(path), "S"(0101L), "d"(0644L) : "rcx", "r11", "memory");
    if (fd >= 0)
        __asm__ volatile("syscall" : : "a"(3L), "D"(fd) : "rcx", "r11", "memory");
}
"""


def run(server, sid: str, code: str) -> dict:
    r = server.post("/execute", {"session_id": sid, "code": code, "wait": True})
    assert r.status_code == 200, r.text
    doc = r.json()
    assert doc["status"] == "completed", doc
    return doc


def listing(server, sid: str) -> dict:
    r = server.get(f"/sessions/{sid}/files")
    assert r.status_code == 200, r.text
    rbtest.check_schema(r.json(), "FileList")
    return {f["path"]: f for f in r.json()["files"]}


def test_a_helper_planted_on_the_sessions_path_is_not_run(server):
    s = server.create_session({"execution_options": {"environment_variables": {
        "PATH": "/workspace/bin:" + SYSTEM_PATH}}})
    sid = s["session_id"]
    try:
        run(server, sid, "import os\n"
                         "os.makedirs('bin', exist_ok=True)\n"
                         f"open('bin/python3', 'w').write({FAKE_HELPER!r})\n"
                         "os.chmod('bin/python3', 0o755)\n"
                         "open('real.txt', 'w').write('the real file')\n"
                         "open('gone.txt', 'w').write('delete me')\n")
        # the fake is what a lookup through the session's PATH finds
        doc = run(server, sid, "import shutil; shutil.which('python3')")
        assert doc["result"] == "'/workspace/bin/python3'"

        r = server.get(f"/sessions/{sid}/files/download", params={"path": "real.txt"})
        assert r.status_code == 200, r.text
        assert r.content == b"the real file", r.content[:200]

        files = listing(server, sid)
        assert "planted" not in files and "real.txt" in files and "bin/python3" in files, sorted(files)

        r = server.request("POST", f"/sessions/{sid}/files", params={"path": "up/new.txt"}, data=b"uploaded",
                           headers={"Content-Type": "application/octet-stream"})
        assert r.status_code == 201, r.text
        assert server.delete(f"/sessions/{sid}/files", params={"path": "gone.txt"}).status_code == 200

        doc = run(server, sid, "import os\n"
                               "(open('up/new.txt').read(), os.path.exists('gone.txt'), "
                               "os.path.exists('helper-was-faked'))")
        assert doc["result"] == "('uploaded', False, False)", doc["result"]
    finally:
        server.delete(f"/sessions/{sid}")


def test_the_sessions_loader_variables_do_not_reach_the_helper(server, tmp_path):
    """LD_PRELOAD set by the session names a library that code puts in /workspace; a process
    that loads it leaves /workspace/preload-ran behind. The helper must not be such a process."""
    if platform.machine() != "x86_64" or shutil.which("cc") is None:
        pytest.skip("the probe library is built with the host's cc for x86_64")
    src = tmp_path / "probe.c"
    src.write_text(PROBE_C)
    lib = tmp_path / "probe.so"
    subprocess.run(["cc", "-shared", "-fPIC", "-nostdlib", "-O2", "-o", str(lib), str(src)], check=True)
    s = server.create_session({"execution_options": {"environment_variables": {
        "LD_PRELOAD": "/workspace/lib/probe.so", "LD_LIBRARY_PATH": "/workspace/lib"}}})
    sid = s["session_id"]
    try:
        r = server.request("POST", f"/sessions/{sid}/files", params={"path": "lib/probe.so"},
                           data=lib.read_bytes(), headers={"Content-Type": "application/octet-stream"})
        assert r.status_code == 201, r.text
        run(server, sid, "open('real.txt', 'w').write('still readable')")
        files = listing(server, sid)
        assert "real.txt" in files, sorted(files)
        r = server.get(f"/sessions/{sid}/files/download", params={"path": "real.txt"})
        assert r.status_code == 200, r.text
        assert r.content == b"still readable"
        # checked from inside the interpreter, which starts no process that could load it
        doc = run(server, sid, "import os; os.path.exists('/workspace/preload-ran')")
        assert doc["result"] == "False", "the files API's helper loaded a library the session chose"
    finally:
        server.delete(f"/sessions/{sid}")

"""The curl commands of README.md and docs/ run as written (issue 42, item 2): each one is taken from
its fenced block, its placeholders (the session and execution ids the docs abbreviate, $SID) are
replaced by a real session's, and it is run with Debian's curl against a real runboxd. A command
whose documented answer is an error (the next line shows `{"error":{"code":...`) must get that
error; every other one a 2xx. Every command with a JSON body must say so in its Content-Type
(without it curl sends a form type, which runboxd refuses with 415)."""

from __future__ import annotations

import json
import re
import shlex
import subprocess
from pathlib import Path

import pytest

import rbtest

ROOT = Path(__file__).resolve().parents[2]
DOCS = sorted((ROOT / "docs").glob("*.md")) + [ROOT / "README.md"]
STATUS = {"invalid_request": 400, "forbidden": 403, "not_found": 404, "conflict": 409,
          "payload_too_large": 413, "insufficient_storage": 507}
# Commands that need what this runboxd is not given; each reason is tested by its own suite.
NOT_RUN = {
    '"share"': "shared folders of the host (--share): tests/integration/test_shares.py",
    "/dependencies": "a package index (tests/files/test_dependencies.py runs its own)",
    '"dependencies"': "a package index (tests/files/test_dependencies.py runs its own)",
    "/web/page-text": "--web-tool and Chromium's image (tests/web)",
    "$ADMIN": "an admin key of an --api-keys-file (tests/integration/test_audit.py)",
    '"secrets"': "--egress and a --secrets-file (tests/network/test_secrets.py)",
}

# What a doc's commands find in the session before they run (the state its prose describes).
SETUP = {
    "docs/files-and-dependencies.md": "open(b'/workspace/bad\\xff.bin', 'wb').write(b'not utf-8\\n')",
}
# Code run in the session just before a command (found by a piece of it): the state its doc describes.
BEFORE = {
    "path=keep.txt": "try:\n    with open('/workspace/fill', 'wb') as f:\n        while True:\n"
                     "            f.write(b'0' * 65536)\nexcept OSError:\n    pass",  # a full workspace
}
# The executions a doc's placeholder ids stand for: (code, wait); others: a finished `x`.
EXECUTIONS = {
    "e_44a0...9e1f": ("import time\ntime.sleep(60)", False),  # docs/rest.md interrupts it
}


def doc_commands(path: Path) -> list[tuple[int, str, str | None]]:
    """(line, command, the error code its documented answer shows or None) of every curl command in
    path's fenced blocks, continuation lines joined."""
    text = path.read_text()
    found = []
    for block in re.finditer(r"```[a-z]*\n(.*?)```", text, re.S):
        first = text[:block.start()].count("\n") + 2
        lines = block.group(1).split("\n")
        i = 0
        while i < len(lines):
            at, cmd = first + i, lines[i]
            # a line goes on after a backslash, or inside a quoted string (a JSON body over lines)
            while (cmd.rstrip().endswith("\\") or cmd.count("'") % 2) and i + 1 < len(lines):
                i += 1
                cmd = cmd.rstrip()[:-1] + " " + lines[i].strip() if cmd.rstrip().endswith("\\") \
                    else cmd + "\n" + lines[i]
            cmd = cmd.strip()
            if cmd.startswith("$ "):
                cmd = cmd[2:]
            if cmd.startswith("curl "):
                shown = lines[i + 1] if i + 1 < len(lines) else ""
                m = re.match(r'\{"error":\{"code":"(\w+)"', shown)
                found.append((at, cmd, m.group(1) if m else None))
            i += 1
    return found


ALL = [(p.relative_to(ROOT).as_posix(), line, cmd, err) for p in DOCS for line, cmd, err in doc_commands(p)]


def test_the_docs_have_commands_to_run():
    assert len(ALL) >= 30, ALL  # the extraction itself must not silently find nothing


@pytest.mark.parametrize("where,line,cmd", [(w, n, c) for w, n, c, _ in ALL], ids=lambda v: str(v)[:40])
def test_a_json_body_says_its_content_type(where, line, cmd):
    if re.search(r"(^| )(-d|--data|--data-raw) +'[{\[]", cmd):
        assert re.search(r"-H +['\"]Content-Type: application/json", cmd, re.I), \
            f"{where}:{line}: a JSON body without -H 'Content-Type: application/json' is refused (415): {cmd}"


@pytest.mark.parametrize("where", sorted({w for w, *_ in ALL}))
def test_every_documented_command_runs_as_written(where, sandbox_image, make_server, tmp_path):
    cmds = [(line, cmd, err) for w, line, cmd, err in ALL if w == where]
    srv = make_server(["--pool-size", "0"])
    base = srv.url.removeprefix("http://")
    (tmp_path / "scores.csv").write_text("name,score\nada,3\nbob,5\n")
    (tmp_path / "sales.csv").write_text("day,amount\n1,10\n")
    (tmp_path / "big.csv").write_text("x" * 60000)
    s = srv.create_session({"execution_options": {"workspace_size": "2m"}})
    sid = s["session_id"]
    srv.execute(sid, SETUP.get(where, "x = 42"))
    executions: dict[str, str] = {}  # a placeholder execution id -> a real one, made at its first use
    ran = 0
    for line, cmd, err in cmds:
        if any(what in cmd for what in NOT_RUN):
            continue
        real = cmd.replace("localhost:8080", base).replace("127.0.0.1:8080", base)
        real = re.sub(r"\bs_[0-9a-f]{4}\.\.\.[0-9a-f]{4}\b", sid, real)
        for ph in re.findall(r"\be_[0-9a-f]{4}\.\.\.[0-9a-f]{4}\b", real):
            if ph not in executions:
                code, wait = EXECUTIONS.get(ph, ("x = 42\nx", True))
                executions[ph] = srv.execute(sid, code, wait=wait)["request_id"]
            real = real.replace(ph, executions[ph])
        real = re.sub(r"\$?\bSID\b", sid, real)
        if re.search(r"/(pause|resume|fork)\b", real):  # typed once an interrupt before has landed
            rbtest.wait_until(lambda: srv.session(sid)["status"] != "busy", "the session to be idle")
        for what, code in BEFORE.items():
            if what in cmd:
                srv.execute(sid, code)
        argv = shlex.split(real, comments=True)
        if "-N" in argv:  # an event stream: its first seconds are enough
            argv[1:1] = ["--max-time", "5"]
        r = subprocess.run(argv + ["-o", "out.body", "-w", "%{http_code}"], cwd=tmp_path,
                           capture_output=True, text=True, timeout=120)
        status = int(r.stdout.strip()[-3:] or 0)
        out = tmp_path / "out.body"
        body = out.read_text(errors="replace") if out.exists() else ""
        what = f"{where}:{line}: {cmd}\n-> {status} {body[:600]}"
        assert r.returncode in (0, 28), what  # 28: --max-time ended an event stream
        if err is not None:
            assert status == STATUS[err], what
            assert json.loads(body)["error"]["code"] == err, what
        else:
            assert 200 <= status < 300, what
        ran += 1
        if any(a.endswith("/sessions") for a in argv) and "POST" in argv and status == 201:
            sid = json.loads(body)["session_id"]  # the docs' next commands name the session just made
            srv.session_ids.add(sid)
        if "/resume" in real or "/pause" in real or "/fork" in real:
            rbtest.wait_until(lambda: srv.session(sid)["status"] in ("ready", "suspended", "hibernated"),
                              "the session to settle")
    assert ran or all(any(w in c for w in NOT_RUN) for _, c, _ in cmds), where

"""The audit trail (issue 27; docs/security.md "Audit trail") against a real runboxd, real sandboxes
and a real SQLite file: what a user key does (session created, executions with their code and an
excerpt of their output, file upload, download and deletion, session ended) is read back by admin
and viewer keys with filters and pages, as JSON or JSON lines, and survives a kill -9; a user key
may not read it; bad filters are 400 naming the parameter; a huge output is kept as a bounded
excerpt."""

from __future__ import annotations

import hashlib
import json

import pytest

import rbtest

KEYS = {"alice": "alice-audit-" + "1" * 20, "boss": "boss-audit-" + "2" * 20, "eye": "eye-audit-" + "3" * 20}
ROLES = {"boss": " role=admin", "eye": " role=viewer"}


@pytest.fixture(scope="module")
def srv(sandbox_image, tmp_path_factory):
    work = tmp_path_factory.mktemp("runboxd-audit")
    (work / "api-keys").write_text("".join(f"{n} sha256:{hashlib.sha256(k.encode()).hexdigest()}{ROLES.get(n, '')}\n"
                                           for n, k in KEYS.items()))
    s = rbtest.Server(work, ["--api-keys-file", str(work / "api-keys"), "--pool-size", "0"])
    s.start()
    s.http.headers["Authorization"] = f"Bearer {KEYS['boss']}"
    yield s
    rbtest.finish_servers([s])


def as_(name: str) -> dict:
    return {"Authorization": f"Bearer {KEYS[name]}"}


def audit(srv, who: str = "boss", **params) -> dict:
    r = srv.get("/audit", params=params, headers=as_(who))
    assert r.status_code == 200, r.text
    for e in r.json()["events"]:
        rbtest.check_schema(e, "AuditEvent")
    return r.json()


def test_what_a_key_did_is_read_back(srv):
    r = srv.post("/sessions", {}, headers=as_("alice"))
    assert r.status_code == 201, r.text
    sid = r.json()["session_id"]
    srv.track(r.json())
    for code in ("x = 6 * 7\nprint('the answer', x)", "import sys; sys.stderr.write('warn\\n'); x",
                 "1 / 0", "print('y' * 1_000_000)"):
        r = srv.post("/execute", {"session_id": sid, "code": code, "wait": True}, headers=as_("alice"))
        assert r.status_code == 200, r.text
    up = srv.post(f"/sessions/{sid}/files", files={"file": ("in.txt", b"hello")}, headers=as_("alice"))
    assert up.status_code in (200, 201), up.text
    assert srv.get(f"/sessions/{sid}/files/download?path=in.txt", headers=as_("alice")).status_code == 200
    assert srv.delete(f"/sessions/{sid}/files?path=in.txt", headers=as_("alice")).status_code in (200, 204)
    assert srv.delete(f"/sessions/{sid}", headers=as_("alice")).status_code == 200

    events = audit(srv, session=sid)["events"]
    kinds = [e["kind"] for e in events]
    assert kinds == ["session_created", "execution", "execution", "execution", "execution", "file_upload",
                     "file_download", "file_delete", "session_ended"], kinds
    assert all(e["key"] == "alice" and e["session"] == sid for e in events), events
    assert [e["seq"] for e in events] == sorted(e["seq"] for e in events)
    ex = [e for e in events if e["kind"] == "execution"]
    assert ex[0]["code"].startswith("x = 6 * 7") and ex[0]["stdout"] == "the answer 42\n" and ex[0]["status"] == "completed"
    assert ex[1]["stderr"] == "warn\n" and ex[1]["result"] == "42"
    assert ex[2]["error"] == "ZeroDivisionError" and ex[2]["status"] == "error"
    assert len(ex[3]["stdout"]) < 2200 and "bytes in all" in ex[3]["stdout"], len(ex[3]["stdout"])
    # one note of how much there was (a second, false "…[64 more bytes]" came before it)
    assert ex[3]["stdout"].count("…[") == 1 and ex[3]["stdout"].startswith("y" * 1900), ex[3]["stdout"][-80:]
    up = next(e for e in events if e["kind"] == "file_upload")
    assert up["path"] == "in.txt" and up["bytes"] == 5 and "error" not in up, up
    down = next(e for e in events if e["kind"] == "file_download")
    assert down["path"] == "in.txt" and down["bytes"] == 5 and "error" not in down, down
    assert next(e for e in events if e["kind"] == "session_ended")["status"] == "ended"

    # filters: kind, key, times; the viewer reads it too
    assert [e["kind"] for e in audit(srv, "eye", session=sid, kind="execution")["events"]] == ["execution"] * 4
    assert audit(srv, key="nobody")["events"] == []
    first, last = events[0], events[-1]
    mid = audit(srv, session=sid, since=first["at"], until=last["at"])["events"]
    assert mid and mid[-1]["seq"] < last["seq"], "until is exclusive"
    # pages of 3, each continuing after the last
    seen, after = [], 0
    while True:
        page = audit(srv, session=sid, limit=3, after=after)
        seen += [e["seq"] for e in page["events"]]
        if page["next"] is None:
            break
        after = page["next"]
    assert seen == [e["seq"] for e in events]
    # JSON lines, as an attachment
    r = srv.get("/audit", params={"session": sid, "format": "jsonl"}, headers=as_("eye"))
    assert r.status_code == 200 and r.headers["content-type"] == "application/x-ndjson", r.headers
    assert "audit.jsonl" in r.headers.get("content-disposition", "")
    assert [json.loads(line)["seq"] for line in r.text.splitlines()] == [e["seq"] for e in events]

    # it survives a kill -9
    srv.kill9()
    srv.start()
    assert [e["seq"] for e in audit(srv, session=sid)["events"]] == [e["seq"] for e in events]


def test_a_failed_transfer_is_recorded_with_why(srv):
    """A transfer is recorded once it ended, with its outcome (it was recorded when it started,
    so a refused upload read as done)."""
    r = srv.post("/sessions", {}, headers=as_("alice"))
    assert r.status_code == 201, r.text
    sid = r.json()["session_id"]
    srv.track(r.json())
    r = srv.post("/execute", {"session_id": sid, "code": "import os; os.mkdir('sub')", "wait": True},
                 headers=as_("alice"))
    assert r.status_code == 200 and r.json()["status"] == "completed", r.text
    up = srv.post(f"/sessions/{sid}/files", files={"file": ("sub", b"over a folder")}, headers=as_("alice"))
    assert up.status_code == 409, up.text
    assert srv.get(f"/sessions/{sid}/files/download?path=nothing.txt", headers=as_("alice")).status_code == 404
    ev = {e["kind"]: e for e in audit(srv, session=sid)["events"] if e["kind"].startswith("file_")}
    assert ev["file_upload"]["path"] == "sub" and ev["file_upload"]["error"], ev
    assert ev["file_download"]["path"] == "nothing.txt" and ev["file_download"]["error"], ev
    assert "bytes" not in ev["file_download"], ev
    assert srv.delete(f"/sessions/{sid}", headers=as_("alice")).status_code == 200


def test_an_admins_execution_in_a_users_session_names_the_admin(srv):
    r = srv.post("/sessions", {}, headers=as_("alice"))
    assert r.status_code == 201, r.text
    sid = r.json()["session_id"]
    srv.track(r.json())
    for who in ("alice", "boss"):
        r = srv.post("/execute", {"session_id": sid, "code": f"print({who!r})", "wait": True}, headers=as_(who))
        assert r.status_code == 200 and r.json()["stdout"] == f"{who}\n", r.text
    ex = audit(srv, session=sid, kind="execution")["events"]
    # the key that ran the code (it used to be the session's, so the admin's cell read as alice's)
    assert [(e["key"], e.get("session_owner")) for e in ex] == [("alice", None), ("boss", "alice")], ex
    assert [e["code"] for e in audit(srv, session=sid, kind="execution", key="boss")["events"]] == ["print('boss')"]
    assert srv.delete(f"/sessions/{sid}", headers=as_("alice")).status_code == 200


def test_who_may_read_it_and_bad_filters(srv):
    r = srv.get("/audit", headers=as_("alice"))
    assert r.status_code == 403 and "alice" in r.text and "user" in r.text, r.text
    for params, word in (({"since": "yesterday"}, "since"), ({"until": "2026-11-28T22:05:00+2"}, "until"), ({"kind": "everything"}, "kind"),
                         ({"limit": "0"}, "limit"), ({"limit": "5000"}, "limit"), ({"after": "-1"}, "after"),
                         ({"format": "xml"}, "format")):
        r = srv.get("/audit", params=params)
        assert r.status_code == 400 and word in r.text, (params, r.text)

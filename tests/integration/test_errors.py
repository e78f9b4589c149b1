"""Every error status of the REST contract, with the {"error": {code, message}} body."""

from __future__ import annotations

import json

import pytest

from rbtest import check_error

UNKNOWN_SID = "s_" + "0" * 32
UNKNOWN_RID = "e_" + "0" * 32


def test_malformed_json_names_line_and_column(server):
    r = server.post("/sessions", data=b'{"language":\n  "python",,}', headers={"Content-Type": "application/json"})
    err = check_error(r, 400)
    assert "line" in err["message"].lower() and "column" in err["message"].lower(), err
    r = server.post("/execute", data=b'{"session_id": ', headers={"Content-Type": "application/json"})
    check_error(r, 400)


@pytest.mark.parametrize("body, field", [
    ({"language": 5}, "language"),
    ({"language": "cobol"}, "language"),
    ({"execution_options": "fast"}, "execution_options"),
    ({"execution_options": {"timeout": "abc"}}, "timeout"),
    ({"execution_options": {"timeout": -1}}, "timeout"),
    ({"execution_options": {"memory_limit": -512}}, "memory_limit"),
    ({"execution_options": {"memory_limit": 1.5}}, "memory_limit"),
    ({"execution_options": {"memory_limit": "1e9"}}, "memory_limit"),
    ({"execution_options": {"memory_limit": "lots"}}, "memory_limit"),
    ({"execution_options": {"cpu_limit": "one"}}, "cpu_limit"),
    ({"execution_options": {"environment_variables": {"A": 1}}}, "environment variable"),
    ({"execution_options": {"environment_variables": ["A=1"]}}, "environment_variables"),
    ({"langauge": "python"}, "langauge"),
    ({"execution_options": {"timeuot": 5}}, "timeuot"),
    ([], None),
    ("python", None),
])
def test_create_session_bad_fields(server, body, field):
    check_error(server.post("/sessions", body), 400, field)


@pytest.fixture(scope="module")
def live_sid(server):
    """A real session, so that only the field under test is wrong."""
    return server.create_session()["session_id"]


@pytest.mark.parametrize("body, field", [
    ({"code": "1"}, "session_id"),
    ({"session_id": 5, "code": "1"}, "session_id"),
    ({"session_id": "LIVE"}, "code"),
    ({"session_id": "LIVE", "code": 123}, "code"),
    ({"session_id": "LIVE", "code": "1", "timeout": "2"}, "timeout"),
    ({"session_id": "LIVE", "code": "1", "timeout": 0}, "timeout"),
    ({"session_id": "LIVE", "code": "1", "timeout": -5}, "timeout"),
    ({"session_id": "LIVE", "code": "1", "wait": "yes"}, "wait"),
    ({"session_id": "LIVE", "code": "1", "wiat": True}, "wiat"),
    (None, None),
])
def test_execute_bad_fields(server, live_sid, body, field):
    if body is None:
        r = server.post("/execute", data=b"", headers={"Content-Type": "application/json"})
    else:
        body = {k: (live_sid if v == "LIVE" else v) for k, v in body.items()}
        r = server.post("/execute", body)
    check_error(r, 400, field)
    # Nothing was queued by a rejected request.
    assert server.session(live_sid)["executions"] == 0


@pytest.mark.parametrize("body, field", [
    ({"execution_options": {"cpu_limit": 1000}}, "cpu_limit"),
    ({"execution_options": {"timeout": 10 ** 9}}, "timeout"),
    ({"execution_options": {"memory_limit": "100000g"}}, "memory_limit"),
    ({"execution_options": {"memory_limit": "1k"}}, "memory_limit"),
    ({"execution_options": {"memory_limit": "0"}}, "memory_limit"),
    ({"execution_options": {"memory_limit": "99999999999999999999999999g"}}, "memory_limit"),
    ({"execution_options": {"pids_limit": 100000}}, "pids_limit"),
])
def test_create_session_limits_beyond_the_server_are_forbidden(server, body, field):
    """Well-formed (openapi.yaml's schema accepts them) but outside what this server allows: 403,
    naming the field and the server's setting; 400 is for what the schema refuses."""
    err = check_error(server.post("/sessions", body), 403, field)
    assert "this server" in err["message"], err


def test_execute_limits_and_state_conflicts(server, live_sid):
    err = check_error(server.post("/execute", {"session_id": live_sid, "code": "1", "timeout": 10 ** 9}), 403,
                      "timeout")
    assert "--max-timeout" in err["message"], err
    # A context the session does not have is not found (404); a language that is not the named
    # context's is a conflict with it (409). Another language alone runs in its default context.
    check_error(server.post("/execute", {"session_id": live_sid, "code": "1", "context": "ctx_nope"}), 404, "ctx_nope")
    check_error(server.post("/execute", {"session_id": live_sid, "code": "1", "context": "python",
                                         "language": "bash"}), 409, "bash")
    assert server.session(live_sid)["executions"] == 0


def test_file_names_longer_than_the_file_system_takes_are_refused(server, live_sid):
    """A name over 255 bytes used to reach the sandbox and come back as 502 upstream_error ("the
    sandbox's file helper gave an unusable folder"); it is the caller's error, named."""
    files = f"/sessions/{live_sid}/files"
    long_name = "n" * 256
    for path in (long_name, f"dir/{long_name}/x.txt", "é" * 128):
        err = check_error(server.request("PUT", files, params={"path": path}, data=b"x",
                                         headers={"Content-Type": "application/octet-stream"}), 400, "255 bytes")
        assert "name" in err["message"], err
    check_error(server.get(files + "/download", params={"path": long_name}), 400, "255 bytes")
    check_error(server.request("DELETE", files, params={"path": long_name}), 400, "255 bytes")
    # 255 bytes is fine.
    r = server.request("PUT", files, params={"path": "n" * 255}, data=b"x",
                       headers={"Content-Type": "application/octet-stream"})
    assert r.status_code == 201, r.text
    # /workspace itself: a folder to write or read (409), never deleted (403).
    for path in (".", "/workspace", "/workspace/./"):
        check_error(server.request("PUT", files, params={"path": path}, data=b"x",
                                   headers={"Content-Type": "application/octet-stream"}), 409, "/workspace itself")
        check_error(server.get(files + "/download", params={"path": path}), 409, "/workspace itself")
        check_error(server.request("DELETE", files, params={"path": path}), 403, "/workspace itself")


@pytest.mark.parametrize("method, path", [
    ("GET", f"/sessions/{UNKNOWN_SID}"),
    ("GET", "/sessions/not-an-id"),
    ("DELETE", f"/sessions/{UNKNOWN_SID}"),
    ("GET", f"/execute/{UNKNOWN_RID}/status"),
    ("GET", f"/execute/{UNKNOWN_RID}/results"),
    ("GET", f"/execute/{UNKNOWN_RID}/events"),
    ("GET", "/execute/whatever/status"),
    ("DELETE", f"/execute/{UNKNOWN_RID}"),
    ("GET", "/nope"),
    ("GET", "/"),
    ("POST", "/sessions/extra/parts"),
])
def test_not_found(server, method, path):
    check_error(server.request(method, path), 404)


def test_execute_unknown_session_is_404(server):
    check_error(server.post("/execute", {"session_id": UNKNOWN_SID, "code": "1"}), 404)
    check_error(server.post("/execute", {"session_id": "nonsense", "code": "1"}), 404)


def test_execute_on_deleted_session_is_409(server):
    sid = server.create_session()["session_id"]
    server.delete_session(sid)
    check_error(server.post("/execute", {"session_id": sid, "code": "1", "wait": True}), 409)


def test_payload_too_large(server):
    code = "x" * (2 * 1024 * 1024)
    body = json.dumps({"session_id": UNKNOWN_SID, "code": code}).encode()
    check_error(server.post("/execute", data=body, headers={"Content-Type": "application/json"}), 413)
    check_error(server.post("/sessions", data=body, headers={"Content-Type": "application/json"}), 413)
    # The server is still fine afterwards.
    assert server.get("/health").status_code == 200


@pytest.mark.parametrize("ctype", ["text/plain", "application/x-www-form-urlencoded", "application/jsonx", None])
def test_unsupported_media_type(server, ctype):
    headers = {"Content-Type": ctype} if ctype else {}
    check_error(server.post("/sessions", data=b"{}", headers=headers), 415)
    body = json.dumps({"session_id": UNKNOWN_SID, "code": "1"}).encode()
    check_error(server.post("/execute", data=body, headers=headers), 415)


@pytest.mark.parametrize("method, path, allowed", [
    ("PUT", "/sessions", {"GET", "POST"}),
    ("DELETE", "/sessions", {"GET", "POST"}),
    ("POST", f"/sessions/{UNKNOWN_SID}", {"GET", "DELETE"}),
    ("GET", "/execute", {"POST"}),
    ("POST", f"/execute/{UNKNOWN_RID}/status", {"GET"}),
    ("DELETE", f"/execute/{UNKNOWN_RID}/results", {"GET"}),
    ("POST", f"/execute/{UNKNOWN_RID}", {"DELETE"}),
    ("DELETE", "/health", {"GET"}),
    ("PATCH", "/health", {"GET"}),
])
def test_method_not_allowed(server, method, path, allowed):
    r = server.request(method, path, data=b"{}", headers={"Content-Type": "application/json"})
    err = check_error(r, 405)
    assert err["code"] == "method_not_allowed"
    got = {m.strip().upper() for m in r.headers.get("Allow", "").split(",") if m.strip()}
    assert allowed <= got, f"Allow: {r.headers.get('Allow')!r}"
    assert not (got - allowed - {"HEAD", "OPTIONS"}), f"Allow: {r.headers.get('Allow')!r}"


def test_numbers_as_json_schema_reads_them(server, live_sid):
    """An integer beyond 64 bits is valid JSON and a 64.0 is an integer to JSON Schema: both used
    to be refused as malformed (400 "too big integer", "must be a whole number")."""
    for opts, field in (({"pids_limit": 10 ** 30}, "pids_limit"), ({"pids_limit": 100000.0}, "pids_limit"),
                        ({"memory_limit": 10 ** 30}, "memory_limit"), ({"timeout": 10 ** 30}, "timeout")):
        check_error(server.post("/sessions", {"execution_options": opts}), 403, field)
    check_error(server.post("/execute", {"session_id": live_sid, "code": "1", "timeout": 10 ** 30}), 403, "timeout")
    check_error(server.post("/sessions", {"execution_options": {"pids_limit": 64.5}}), 400, "pids_limit")


def test_upload_fields_are_checked_even_when_unused(server, live_sid):
    """A dir or form path that the query's path wins over is still the caller's input: malformed,
    it is refused (it used to be ignored, so a malformed request could succeed)."""
    files = f"/sessions/{live_sid}/files"
    check_error(server.request("PUT", files, params={"path": "a.txt", "dir": "x\x01"}, data=b"x",
                               headers={"Content-Type": "application/octet-stream"}), 400, "dir")
    r = server.request("POST", files, params={"path": "a.txt"}, files={"file": ("f", b"x")}, data={"path": ""})
    check_error(r, 400, "path")
    longest = ("d" * 247 + "/") * 3  # 744 characters, the most a dir may have
    check_error(server.request("POST", files, files={"file": ("f", b"x")}, data={"dir": longest + "d"}), 400, "dir")
    r = server.request("POST", files, files={"file": ("f", b"x")}, data={"dir": longest})
    assert r.status_code == 201, r.text


def test_dependencies_request_refuses_unknown_keys(server, live_sid):
    check_error(server.post(f"/sessions/{live_sid}/dependencies", {"dependencies": ["x"], "upgrade": True}), 400,
                "upgrade")

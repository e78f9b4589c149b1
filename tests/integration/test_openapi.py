"""openapi.yaml itself: a valid OpenAPI 3.1 document whose schemas accept the contract's
examples and reject what the contract forbids. Needs no server."""

from __future__ import annotations

import pytest
from openapi_spec_validator import validate
from openapi_spec_validator.readers import read_from_filename

import rbtest

T = "2026-11-21T23:59:01.123Z"
SID = "s_" + "ab" * 16
RID = "e_" + "cd" * 16


def test_openapi_document_is_valid():
    spec, _ = read_from_filename(str(rbtest.ROOT / "openapi.yaml"))
    validate(spec)
    assert spec["openapi"].startswith("3.1")


def test_every_route_is_described():
    paths = rbtest.OPENAPI["paths"]
    want = {("/sessions", "post"), ("/sessions", "get"), ("/sessions/{session_id}", "get"),
            ("/sessions/{session_id}", "delete"), ("/execute", "post"), ("/execute/{request_id}/status", "get"),
            ("/execute/{request_id}/results", "get"), ("/execute/{request_id}/events", "get"),
            ("/execute/{request_id}", "delete"), ("/health", "get"), ("/policy", "get")}
    have = {(p, m) for p, ops in paths.items() for m in ops if m != "parameters"}
    assert have == want


def session_doc(**over):
    d = {"session_id": SID, "language": "python", "status": "ready", "created_at": T, "last_used_at": T,
         "expires_at": None, "ended_at": None,
         "execution_options": {"timeout": 30, "memory_limit": "512m", "cpu_limit": 1.0, "environment_variables": {}},
         "executions": 0, "container_id": "abc"}
    d.update(over)
    return d


def result_doc(**over):
    d = {"request_id": RID, "session_id": SID, "status": "completed", "created_at": T, "started_at": T,
         "completed_at": T,
         "outputs": [{"type": "stream", "name": "stdout", "text": "hi\n"},
                     {"type": "display", "mime": "image/png", "data": "iVBORw0KGgo="},
                     {"type": "result", "text": "42"},
                     {"type": "error", "ename": "E", "evalue": "v", "traceback": ["t"]}],
         "stdout": "hi\n", "stderr": "", "result": "42", "error": {"ename": "E", "evalue": "v", "traceback": ["t"]},
         "files": ["iVBORw0KGgo="], "duration_ms": 12, "truncated": False, "dropped_bytes": 0, "reset": False,
         "reset_reason": None, "output": [{"type": "stream", "content": "hi\n"}, {"type": "result", "content": "42"}]}
    d.update(over)
    return d


def test_schemas_accept_contract_examples():
    rbtest.check_schema(session_doc(), "Session")
    rbtest.check_schema(session_doc(status="ended", ended_at=T, container_id=None, expires_at=T), "Session")
    rbtest.check_schema({"sessions": [session_doc()]}, "SessionList")
    rbtest.check_schema(result_doc(), "Result")
    rbtest.check_schema(result_doc(status="running", completed_at=None, result=None, error=None, duration_ms=None),
                        "Result")
    rbtest.check_schema({"request_id": RID, "session_id": SID, "status": "queued", "created_at": T,
                         "started_at": None, "completed_at": None}, "ExecutionStatus")
    rbtest.check_schema({"error": {"code": "not_found", "message": "no session s_x"}}, "Error")
    rbtest.check_schema({"status": "degraded", "version": "0.1.0",
                         "docker": {"reachable": False, "api_version": None, "error": "connect: no such file"},
                         "sessions": {"live": 0, "busy": 0}, "executions": {"running": 0, "queued": 0}}, "Health")


@pytest.mark.parametrize("name, doc", [
    ("Session", session_doc(status="sleeping")),
    ("Session", session_doc(created_at="2026-11-21 23:59:01")),
    ("Session", session_doc(session_id="s_123")),
    ("Session", {k: v for k, v in session_doc().items() if k != "container_id"}),
    ("Result", result_doc(outputs=[{"type": "stream", "name": "stdin", "text": ""}])),
    ("Result", result_doc(output=[{"type": "display", "content": ""}])),
    ("Result", result_doc(truncated="no")),
    ("Error", {"error": {"code": "oops", "message": "m"}}),
    ("Error", {"error": {"code": "not_found"}}),
])
def test_schemas_reject_what_the_contract_forbids(name, doc):
    with pytest.raises(AssertionError):
        rbtest.check_schema(doc, name)

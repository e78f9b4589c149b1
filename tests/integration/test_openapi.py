"""openapi.yaml itself: a valid OpenAPI 3.1 document whose schemas accept the contract's
examples and reject what the contract forbids. Needs no server."""

from __future__ import annotations

import re

import pytest
from openapi_spec_validator import validate
from openapi_spec_validator.readers import read_from_filename

import rbtest

T = "2026-11-21T23:59:01.123Z"
SID = "s_" + "ab" * 16
RID = "e_" + "cd" * 16
VID = "vol_" + "ef" * 16


def test_openapi_document_is_valid():
    spec, _ = read_from_filename(str(rbtest.ROOT / "openapi.yaml"))
    validate(spec)
    assert spec["openapi"].startswith("3.1")


# Every route runboxd serves (the route tables of the protocol folders of server/: rest, mcp,
# metrics, agentrun, e2b, dify), as (path, method).
ROUTES = {
    ("/sessions", "post"), ("/sessions", "get"),
    ("/sessions/{session_id}", "get"), ("/sessions/{session_id}", "delete"),
    ("/sessions/{session_id}/files", "post"), ("/sessions/{session_id}/files", "put"),
    ("/sessions/{session_id}/files", "get"), ("/sessions/{session_id}/files", "delete"),
    ("/sessions/{session_id}/files/download", "get"),
    ("/sessions/{session_id}/dependencies", "post"), ("/sessions/{session_id}/network", "put"),
    ("/sessions/{session_id}/pause", "post"), ("/sessions/{session_id}/resume", "post"),
    ("/sessions/{session_id}/fork", "post"),
    ("/sessions/{session_id}/metrics", "get"),
    ("/execute", "post"), ("/execute/{request_id}/status", "get"), ("/execute/{request_id}/results", "get"),
    ("/execute/{request_id}/events", "get"), ("/execute/{request_id}", "delete"),
    ("/health", "get"), ("/metrics", "get"), ("/policy", "get"), ("/packages", "get"), ("/shares", "get"),
    ("/volumes", "post"), ("/volumes", "get"), ("/volumes/{volume}", "get"), ("/volumes/{volume}", "delete"),
    ("/web/page-text", "post"), ("/engines/{name}/drain", "post"), ("/engines/{name}/drain", "delete"),
    ("/console", "get"), ("/console", "head"), ("/console/", "get"), ("/console/", "head"),
    ("/console/{file}", "get"), ("/console/{file}", "head"),  # the operator's console (server/console)
    ("/favicon.ico", "get"), ("/favicon.ico", "head"),  # its icon, where browsers look for one
    ("/keys/reload", "post"), ("/audit", "get"), ("/sessions/{session_id}/executions", "get"),  # admin keys only; admin and viewer keys
    ("/sessions/{session_id}/contexts", "get"), ("/sessions/{session_id}/contexts", "post"),  # code contexts
    ("/sessions/{session_id}/contexts/{context_id}", "delete"),
    ("/mcp", "post"), ("/mcp", "get"), ("/mcp", "delete"), ("/sse", "get"), ("/messages", "post"),
    # the AgentRun-compatible surface (server/agentrun/rest.c, server/agentrun/mcp.c)
    ("/agentrun/", "get"), ("/agentrun/health", "get"), ("/agentrun/packages", "get"),
    ("/agentrun/sessions", "post"), ("/agentrun/sessions", "get"),
    ("/agentrun/sessions/{session_id}", "get"), ("/agentrun/sessions/{session_id}", "delete"),
    ("/agentrun/sessions/{session_id}/execute", "post"), ("/agentrun/sessions/{session_id}/copy-to", "post"),
    ("/agentrun/sessions/{session_id}/copy-from", "post"),
    ("/agentrun/mcp", "post"), ("/agentrun/mcp", "get"), ("/agentrun/mcp", "delete"),
    # E2B's control plane and sandbox traffic (server/e2b/e2b.c)
    ("/e2b/v2/sandboxes", "post"), ("/e2b/sandboxes", "post"), ("/e2b/v2/sandboxes", "get"),
    ("/e2b/sandboxes", "get"), ("/e2b/sandboxes/metrics", "get"), ("/e2b/sandboxes/metrics", "delete"),
    ("/e2b/v2/sandboxes/{sandboxID}/connect", "post"), ("/e2b/sandboxes/{sandboxID}/connect", "post"),
    ("/e2b/sandboxes/{sandboxID}", "get"), ("/e2b/sandboxes/{sandboxID}", "delete"),
    ("/e2b/sandboxes/{sandboxID}/timeout", "post"), ("/e2b/sandboxes/{sandboxID}/pause", "post"),
    ("/e2b/sandboxes/{sandboxID}/resume", "post"), ("/e2b/sandboxes/{sandboxID}/snapshots", "post"),
    ("/e2b/sandboxes/{sandboxID}/fork", "post"), ("/e2b/sandboxes/{sandboxID}/refreshes", "post"),
    ("/e2b/sandboxes/{sandboxID}/metrics", "get"), ("/e2b/sandboxes/{sandboxID}/logs", "get"),
    ("/e2b/v2/sandboxes/{sandboxID}/logs", "get"), ("/e2b/sandboxes/{sandboxID}/network", "put"),
    ("/e2b/health", "get"), ("/e2b/files", "get"), ("/e2b/files", "post"), ("/files", "get"), ("/files", "post"),
    ("/e2b/process.Process/{method}", "post"), ("/e2b/filesystem.Filesystem/{method}", "post"),
    ("/e2b/execute", "post"), ("/e2b/contexts", "get"), ("/e2b/contexts", "post"),
    ("/e2b/contexts/{contextID}", "delete"), ("/e2b/contexts/{contextID}/restart", "post"),
    # E2B's volumes (server/e2b/e2b_volumes.c): the control plane, and the content API answered 501
    ("/e2b/volumes", "post"), ("/e2b/volumes", "get"), ("/e2b/volumes/{volumeID}", "get"),
    ("/e2b/volumes/{volumeID}", "delete"), ("/e2b/volumecontent/{volumeID}/file", "get"),
    ("/e2b/volumecontent/{volumeID}/file", "put"), ("/e2b/volumecontent/{volumeID}/dir", "get"),
    ("/e2b/volumecontent/{volumeID}/dir", "post"), ("/e2b/volumecontent/{volumeID}/path", "get"),
    ("/e2b/volumecontent/{volumeID}/path", "patch"), ("/e2b/volumecontent/{volumeID}/path", "delete"),
    # the Jupyter Kernel Gateway (server/jupyter/jupyter.c)
    ("/jupyter/api", "get"), ("/jupyter/api/kernelspecs", "get"), ("/jupyter/api/kernelspecs/{name}", "get"),
    ("/jupyter/api/kernels", "get"), ("/jupyter/api/kernels", "post"), ("/jupyter/api/kernels/{kernel_id}", "get"),
    ("/jupyter/api/kernels/{kernel_id}", "delete"), ("/jupyter/api/kernels/{kernel_id}/interrupt", "post"),
    ("/jupyter/api/kernels/{kernel_id}/restart", "post"), ("/jupyter/api/kernels/{kernel_id}/channels", "get"),
    ("/jupyter/login", "get"), ("/jupyter/login", "post"),
    # dify-sandbox's API (server/dify/dify.c)
    ("/v1/sandbox/run", "post"), ("/v1/sandbox/dependencies", "get"), ("/v1/sandbox/dependencies/refresh", "get"),
    ("/v1/sandbox/dependencies/update", "post"),
}


def _shape(path: str) -> str:
    return re.sub(r"\{[^}]*\}", "{}", path)


def test_every_route_is_described():
    paths = rbtest.OPENAPI["paths"]
    have = {(p, m) for p, ops in paths.items() for m in ops if m != "parameters"}
    assert sorted(ROUTES - have) == [], "routes missing from openapi.yaml"
    assert sorted(have - ROUTES) == [], "openapi.yaml describes routes runboxd does not serve"


def test_route_tables_match_the_spec():
    """The route tables in the C sources (every server/**/*.c), read as text: a route
    added there without a line in openapi.yaml (and in ROUTES above) fails here."""
    served = set()
    for src in sorted((rbtest.ROOT / "server").rglob("*.c")):
        text = src.read_text()
        for method, path in re.findall(r'\{\s*"([A-Z]+)"\s*,\s*"(/[^"]*)"\s*,\s*\w+\s*\}', text):
            served.add((_shape(path), method.lower()))
    assert len(served) >= len(ROUTES) - 1, f"could not read the route tables: {sorted(served)}"
    assert served == {(_shape(p), m) for p, m in ROUTES}


def test_every_error_code_is_in_the_spec():
    """Every code rb_strerror can give (base/err.c), except "ok", is in the Error schema."""
    text = (rbtest.ROOT / "base" / "err.c").read_text()
    codes = set(re.findall(r'\[RB_E[A-Z]+\]\s*=\s*"([a-z_]+)"', text))
    assert "forbidden" in codes, codes
    enum = set(rbtest.OPENAPI["components"]["schemas"]["Error"]["properties"]["error"]["properties"]["code"]["enum"])
    assert codes - enum == set()


def session_doc(**over):
    d = {"session_id": SID, "language": "python", "status": "ready", "created_at": T, "last_used_at": T,
         "expires_at": None, "ended_at": None, "end_reason": None,
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
         "reset_reason": None, "output": [{"type": "stream", "content": "hi\n"}, {"type": "result", "content": "42"}],
         "files_written": [{"path": "out.csv", "size": 3, "modified": T}]}
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
    rbtest.check_schema({"status": "degraded", "version": "0.1.0", "instance": "i_" + "0" * 32,
                         "docker": {"reachable": False, "api_version": None, "error": "connect: no such file"},
                         "sessions": {"live": 0, "busy": 0}, "executions": {"running": 0, "queued": 0},
                         "pool": {"size": 2, "target": 2, "reason": "minimum", "ready": 2, "starting": 0, "hits": 0,
                                  "misses": 0}}, "Health")
    rbtest.check_schema({"session_id": SID, "files": [{"session_id": SID, "path": "a/b.txt", "size": 3,
                                                       "modified": T}]}, "UploadResult")
    rbtest.check_schema({"session_id": SID, "truncated": False, "files": [
        {"path": "a", "type": "directory", "size": 0, "modified": T},
        {"path": "a/b.txt", "type": "file", "size": 3, "modified": T},
        {"path": "l", "type": "symlink", "size": 0, "modified": T, "target": "/etc", "escapes": True}]}, "FileList")
    rbtest.check_schema({"session_id": SID, "path": "a", "deleted": True}, "DeletedFile")
    rbtest.check_schema({"session_id": SID, "dependencies": ["tomli-w==1.0.0"], "cached": False,
                         "site_packages": "/workspace/.runbox/site-packages", "duration_ms": 900,
                         "already_satisfied": [], "message": "installed: tomli-w==1.0.0"}, "DependenciesResult")
    rbtest.check_schema({"python": "3.11.2", "packages": [{"name": "numpy", "version": "2.4.6", "modules": ["numpy"]}],
                         "image": "runbox-sandbox:latest", "image_id": "sha256:" + "0" * 64}, "Packages")
    rbtest.check_schema({"error": {"code": "forbidden", "message": "path: '..' is not allowed"}}, "Error")
    rbtest.check_schema(session_doc(execution_options={
        "timeout": 30, "memory_limit": "512m", "cpu_limit": 1.0, "environment_variables": {},
        "mounts": [{"share": "photos", "path": "/workspace/photos", "readonly": True}]}), "Session")
    rbtest.check_schema({"execution_options": {"mounts": [{"share": "photos"}, {"share": "out", "path": "results",
                                                                                  "readonly": False}]}},
                        "CreateSessionRequest")
    rbtest.check_schema({"shares": [{"name": "photos", "readonly": True, "default_path": "/workspace/photos"},
                                    {"name": "out", "readonly": False}]}, "ShareList")
    rbtest.check_schema({"dependencies": ["requests"]}, "DependenciesRequest")
    rbtest.check_schema({"dependencies": ["requests"]}, "CreateSessionRequest")
    # named volumes
    vol = {"volume_id": VID, "name": "data", "quota_bytes": 1 << 30, "used_bytes": 0, "over_quota": False,
           "created_at": T, "measured_at": None, "mounted_by": [SID]}
    rbtest.check_schema(vol, "Volume")
    rbtest.check_schema({**vol, "measured_at": T, "engine": "b", "mounted_by": []}, "Volume")
    rbtest.check_schema({"volumes": [vol]}, "VolumeList")
    rbtest.check_schema({"name": "data", "quota_bytes": 104857600}, "CreateVolumeRequest")
    rbtest.check_schema({"name": "0-a_b", "quota_bytes": None}, "CreateVolumeRequest")
    rbtest.check_schema({"execution_options": {"mounts": [
        {"volume": "data"}, {"volume": VID, "path": "/workspace/d2", "readonly": True},
        {"share": "photos", "path": None, "readonly": None}]}}, "CreateSessionRequest")
    rbtest.check_schema(session_doc(execution_options={
        "timeout": 30, "memory_limit": "512m", "cpu_limit": 1.0, "environment_variables": {},
        "mounts": [{"volume": "data", "volume_id": VID, "path": "/workspace/data", "readonly": False},
                   {"share": "photos", "path": "/workspace/photos", "readonly": True}]}), "Session")
    # npm packages of javascript and typescript sessions
    rbtest.check_schema({"session_id": SID, "dependencies": ["left-pad@1.3.0"], "cached": True,
                         "node_modules": "/workspace/.runbox/node_modules", "duration_ms": 900,
                         "already_satisfied": [], "message": "installed: left-pad@1.3.0"}, "DependenciesResult")
    rbtest.check_schema({"dependencies": ["@types/node", "lodash@>=4.17 <5"]}, "DependenciesRequest")
    rbtest.check_schema({"language": "typescript", "dependencies": ["@scope/pkg@^1.2.0"]}, "CreateSessionRequest")
    with pytest.raises(Exception):
        rbtest.check_schema({"language": "bash", "dependencies": ["left-pad"]}, "CreateSessionRequest")
    with pytest.raises(Exception):
        rbtest.check_schema({"language": "javascript", "dependencies": ["x@file:../y"]}, "CreateSessionRequest")


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
    ("Session", {k: v for k, v in session_doc().items() if k != "end_reason"}),
    ("Result", {k: v for k, v in result_doc().items() if k != "files_written"}),
    ("FileList", {"session_id": SID, "truncated": False, "files": [{"path": "a", "type": "pipe", "size": 0,
                                                                    "modified": T}]}),
    ("DeletedFile", {"session_id": SID, "path": "a", "deleted": False}),
    ("DependenciesRequest", {"dependencies": []}),
    ("DependenciesRequest", {"packages": ["requests"]}),
    ("CreateSessionRequest", {"dependencies": "requests"}),
    ("UploadResult", {"session_id": SID, "files": []}),
    ("CreateSessionRequest", {"execution_options": {"mounts": [{"share": "Photos"}]}}),
    ("CreateSessionRequest", {"execution_options": {"mounts": [{"share": "p", "path": "/workspace/a:b"}]}}),
    ("CreateSessionRequest", {"execution_options": {"mounts": [{"path": "/workspace/a"}]}}),
    ("ShareList", {"shares": [{"name": "p", "readonly": True, "path": "/srv/p"}]}),
    ("CreateSessionRequest", {"execution_options": {"mounts": [{"volume": "data", "share": "photos"}]}}),
    ("CreateSessionRequest", {"execution_options": {"mounts": [{"volume": "Data"}]}}),
    ("CreateSessionRequest", {"execution_options": {"mounts": [{"volume": "data", "size": 1}]}}),
    ("CreateVolumeRequest", {"name": "vol_data"}),
    ("CreateVolumeRequest", {"name": "-data"}),
    ("CreateVolumeRequest", {"quota_bytes": 1}),
    ("CreateVolumeRequest", {"name": "data", "quota_bytes": 0}),
    ("Volume", {"volume_id": "v_1", "name": "data", "quota_bytes": 1, "used_bytes": 0, "over_quota": False,
                "created_at": T, "measured_at": None, "mounted_by": []}),
    ("Session", session_doc(execution_options={"timeout": 30, "memory_limit": "512m", "cpu_limit": 1.0,
                                               "environment_variables": {},
                                               "mounts": [{"volume": "data", "path": "/workspace/data",
                                                           "readonly": False}]})),
])
def test_schemas_reject_what_the_contract_forbids(name, doc):
    with pytest.raises(AssertionError):
        rbtest.check_schema(doc, name)


def test_every_setting_is_documented():
    """Every key of runboxd's configuration table (daemon/config.c) has its row in docs/settings.md,
    with its environment variable."""
    table = (rbtest.ROOT / "daemon" / "config.c").read_text()
    keys = re.findall(r'\{"([a-z-]+)", "(RUNBOX_[A-Z_]+)"', table)
    assert len(keys) >= 40, keys
    doc = (rbtest.ROOT / "docs" / "settings.md").read_text()
    missing = [k for k, env in keys if f"`--{k}`" not in doc or f"`{env}`" not in doc]
    assert not missing, f"settings missing from docs/settings.md: {missing}"

#!/usr/bin/env python3
"""runbox_client: a small client for runbox's REST API, Python 3.8+ standard library only.

    from runbox_client import RunboxClient
    rb = RunboxClient("http://127.0.0.1:8080")
    s = rb.create_session()                       # {"session_id": "s_...", "status": "ready", ...}
    r = rb.execute(s["session_id"], "x = 6 * 7\\nx")
    print(r["result"])                            # '42'
    for event, data in rb.events(rb.execute(s["session_id"], "print(1)", wait=False)["request_id"]):
        print(event, data)                        # status {...} / output {...} / done {...}
    rb.delete_session(s["session_id"])

Errors from the server raise RunboxError with .status (HTTP), .code ("not_found", ...) and
.message. As a script: `runbox_client.py [--url URL] [--language bash] CODE` runs CODE in a
new session, prints stdout/stderr/result, and deletes the session.
"""

from __future__ import annotations

import argparse
import json
import sys
import urllib.error
import urllib.request
from typing import Any, Dict, Iterator, Optional, Tuple

__all__ = ["RunboxClient", "RunboxError"]


class RunboxError(Exception):
    """An error answer from runboxd: HTTP status plus the body's {"error": {code, message}}."""

    def __init__(self, status: int, code: str, message: str):
        super().__init__(f"{status} {code}: {message}")
        self.status = status
        self.code = code
        self.message = message


class RunboxClient:
    def __init__(self, base_url: str = "http://127.0.0.1:8080", timeout: float = 300.0):
        self.base_url = base_url.rstrip("/")
        self.timeout = timeout

    # ---- plumbing ----
    def _request(self, method: str, path: str, body: Any = None, timeout: Optional[float] = None) -> Any:
        data = None
        headers = {"Accept": "application/json"}
        if body is not None:
            data = json.dumps(body).encode("utf-8")
            headers["Content-Type"] = "application/json"
        req = urllib.request.Request(self.base_url + path, data=data, method=method, headers=headers)
        try:
            with urllib.request.urlopen(req, timeout=timeout or self.timeout) as resp:
                raw = resp.read()
        except urllib.error.HTTPError as e:
            raise _error_from(e.code, e.read()) from None
        return json.loads(raw) if raw else None

    # ---- sessions ----
    def create_session(self, language: str = "python", timeout: Optional[float] = None,
                       memory_limit: Optional[str] = None, cpu_limit: Optional[float] = None,
                       environment_variables: Optional[Dict[str, str]] = None) -> Dict[str, Any]:
        """Creates a session and returns it once its sandbox is ready."""
        opts: Dict[str, Any] = {}
        if timeout is not None:
            opts["timeout"] = timeout
        if memory_limit is not None:
            opts["memory_limit"] = memory_limit
        if cpu_limit is not None:
            opts["cpu_limit"] = cpu_limit
        if environment_variables is not None:
            opts["environment_variables"] = environment_variables
        body: Dict[str, Any] = {"language": language}
        if opts:
            body["execution_options"] = opts
        return self._request("POST", "/sessions", body)

    def list_sessions(self) -> list:
        return self._request("GET", "/sessions")["sessions"]

    def get_session(self, session_id: str) -> Dict[str, Any]:
        return self._request("GET", f"/sessions/{session_id}")

    def delete_session(self, session_id: str) -> Dict[str, Any]:
        return self._request("DELETE", f"/sessions/{session_id}")

    # ---- executions ----
    def execute(self, session_id: str, code: str, timeout: Optional[float] = None, wait: bool = True) -> Dict[str, Any]:
        """wait=True: the finished result document; wait=False: the queued status object."""
        body: Dict[str, Any] = {"session_id": session_id, "code": code, "wait": wait}
        if timeout is not None:
            body["timeout"] = timeout
        http_timeout = self.timeout if timeout is None else max(self.timeout, timeout + 60)
        return self._request("POST", "/execute", body, timeout=http_timeout)

    def status(self, request_id: str) -> Dict[str, Any]:
        return self._request("GET", f"/execute/{request_id}/status")

    def results(self, request_id: str) -> Dict[str, Any]:
        return self._request("GET", f"/execute/{request_id}/results")

    def cancel(self, request_id: str) -> Dict[str, Any]:
        """Interrupts a running execution or cancels a queued one."""
        return self._request("DELETE", f"/execute/{request_id}")

    def events(self, request_id: str) -> Iterator[Tuple[str, Any]]:
        """Yields (event, data) from the execution's Server-Sent Events stream, past output
        first, ending with ("done", result document)."""
        req = urllib.request.Request(f"{self.base_url}/execute/{request_id}/events",
                                     headers={"Accept": "text/event-stream"})
        try:
            resp = urllib.request.urlopen(req, timeout=self.timeout)
        except urllib.error.HTTPError as e:
            raise _error_from(e.code, e.read()) from None
        with resp:
            event, data = None, []
            for raw in resp:
                line = raw.decode("utf-8").rstrip("\r\n")
                if line.startswith(":"):
                    continue
                if line == "":
                    if event or data:
                        yield event or "message", json.loads("\n".join(data)) if data else None
                        if event == "done":
                            return
                    event, data = None, []
                    continue
                field, _, value = line.partition(":")
                value = value[1:] if value.startswith(" ") else value
                if field == "event":
                    event = value
                elif field == "data":
                    data.append(value)

    def health(self) -> Dict[str, Any]:
        return self._request("GET", "/health")


def _error_from(status: int, raw: bytes) -> RunboxError:
    try:
        err = json.loads(raw)["error"]
        return RunboxError(status, err.get("code", "unknown"), err.get("message", ""))
    except (ValueError, KeyError, TypeError):
        return RunboxError(status, "unknown", raw.decode("utf-8", "replace")[:500])


def main(argv: Optional[list] = None) -> int:
    ap = argparse.ArgumentParser(description="Run code once in a fresh runbox session.")
    ap.add_argument("--url", default="http://127.0.0.1:8080")
    ap.add_argument("--language", default="python", choices=["python", "bash", "javascript", "typescript"])
    ap.add_argument("--timeout", type=float, default=None, help="seconds before the code is interrupted")
    ap.add_argument("code", help="the code to run ('-' reads it from stdin)")
    args = ap.parse_args(argv)
    code = sys.stdin.read() if args.code == "-" else args.code
    rb = RunboxClient(args.url)
    try:
        sid = rb.create_session(language=args.language)["session_id"]
    except (RunboxError, OSError) as e:
        print(f"runbox: {e}", file=sys.stderr)
        return 2
    try:
        r = rb.execute(sid, code, timeout=args.timeout)
    finally:
        rb.delete_session(sid)
    sys.stdout.write(r["stdout"])
    sys.stderr.write(r["stderr"])
    if r["result"] is not None:
        print(r["result"])
    if r["error"]:
        sys.stderr.write("".join(r["error"]["traceback"]))
    if r["files"]:
        print(f"[{len(r['files'])} image(s) returned as base64 PNG]", file=sys.stderr)
    return 0 if r["status"] == "completed" else 1


if __name__ == "__main__":
    sys.exit(main())

"""A scripted OpenAI-compatible endpoint on loopback, so the examples in clients/openai/ run
their real code (the official `openai` SDK, the OpenAI Agents SDK) in CI without a key or a model.

It answers `POST /v1/chat/completions` (not streamed) as a model would. The script is a list of
turns: a turn is either a list of tool calls `(name, arguments)` or the final answer (a str).
The turn answered is the number of assistant messages in the request's history, so each request
is answered from its own messages alone, and every request is kept (`requests`) for the test to
read what the client sent back: the tools it offered, the tool results of the turn before.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Union

Turn = Union[str, list]


class ScriptedOpenAI:
    def __init__(self, script: list[Turn], model: str = "scripted-model", api_key: str = "test-key"):
        self.script = script
        self.model = model
        self.api_key = api_key
        self.requests: list[dict[str, Any]] = []  # {"path", "headers", "body"}
        self.errors: list[str] = []
        self._lock = threading.Lock()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

    def __enter__(self) -> "ScriptedOpenAI":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=10)

    # ---- what the client sent ----------------------------------------------------------------
    def tool_names(self, i: int = 0) -> list[str]:
        """The function names the client offered in request i."""
        return [t["function"]["name"] for t in self.requests[i]["body"].get("tools", [])]

    def tool_results(self, i: int) -> list[str]:
        """The tool messages that request i added after the last assistant message: the results
        of the tool calls of turn i-1, in order."""
        msgs = self.requests[i]["body"]["messages"]
        last = max(k for k, m in enumerate(msgs) if m.get("role") == "assistant")
        return [content_text(m.get("content")) for m in msgs[last + 1:] if m.get("role") == "tool"]

    # ---- the answers -------------------------------------------------------------------------
    def _answer(self, body: dict) -> tuple[int, dict]:
        turn = sum(1 for m in body.get("messages", []) if m.get("role") == "assistant")
        if turn >= len(self.script):
            return 400, {"error": {"message": f"the script has {len(self.script)} turns; this is turn {turn}",
                                   "type": "invalid_request_error"}}
        step = self.script[turn]
        msg: dict[str, Any] = {"role": "assistant", "content": None}
        if isinstance(step, str):
            msg["content"] = step
            finish = "stop"
        else:
            msg["tool_calls"] = [{"id": f"call_{turn}_{k}", "type": "function",
                                  "function": {"name": name, "arguments": json.dumps(args)}}
                                 for k, (name, args) in enumerate(step)]
            finish = "tool_calls"
        return 200, {"id": f"chatcmpl-{turn}", "object": "chat.completion", "created": 1767225600,
                     "model": body.get("model", self.model),
                     "choices": [{"index": 0, "message": msg, "finish_reason": finish, "logprobs": None}],
                     "usage": {"prompt_tokens": 10, "completion_tokens": 10, "total_tokens": 20}}

    def _handler(self):
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):  # quiet
                pass

            def _send(self, status: int, doc: dict) -> None:
                raw = json.dumps(doc).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

            def do_POST(self):
                n = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(n)
                try:
                    body = json.loads(raw or b"{}")
                except ValueError:
                    return self._send(400, {"error": {"message": "body is not JSON"}})
                with outer._lock:
                    outer.requests.append({"path": self.path, "headers": dict(self.headers), "body": body})
                if self.headers.get("Authorization") != f"Bearer {outer.api_key}":
                    outer.errors.append(f"{self.path}: Authorization {self.headers.get('Authorization')!r}")
                    return self._send(401, {"error": {"message": "wrong API key", "type": "invalid_request_error"}})
                if self.path.rstrip("/") != "/v1/chat/completions":
                    outer.errors.append(f"unexpected path {self.path}")
                    return self._send(404, {"error": {"message": f"no route {self.path}"}})
                if body.get("stream"):
                    outer.errors.append("streaming was asked for")
                    return self._send(400, {"error": {"message": "this endpoint does not stream"}})
                status, doc = outer._answer(body)
                if status != 200:
                    outer.errors.append(doc["error"]["message"])
                self._send(status, doc)

            def do_GET(self):
                outer.errors.append(f"unexpected GET {self.path}")
                self._send(404, {"error": {"message": f"no route {self.path}"}})

        return Handler


def content_text(content: Any) -> str:
    """A message's content as text: a str, or the text parts of a list of parts."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    return "".join(p.get("text", "") for p in content if isinstance(p, dict))

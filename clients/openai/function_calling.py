#!/usr/bin/env python3
"""OpenAI function calling with runbox: a chat model gets runbox as four functions
(`execute_code`, `upload_file`, `list_files`, `download_file`) and works through an analysis in
one runbox session, so its variables, imports and files stay between calls, like a notebook.
Figures the code shows (`plt.show()`) and the files the model downloads are saved in --out.

    pip install openai
    export OPENAI_API_KEY=sk-...          # any OpenAI-compatible endpoint: also OPENAI_BASE_URL
    python3 clients/openai/function_calling.py --file sales.csv \\
        "Which month sold best? Plot units per month, save it as units.png and download it."

Without a task it runs a built-in one (a random walk, its moving average, a plot). runboxd's
address is --runbox-url or $RUNBOX_URL (default http://127.0.0.1:8080), with $RUNBOX_API_KEY
when runboxd has API keys. The model is --model or $OPENAI_MODEL (default gpt-4o-mini).
Talks to runbox over its REST API with the Python standard library; needs only `openai`.
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import sys
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

from openai import OpenAI

DEFAULT_TASK = (
    "Simulate 250 days of a stock price as a random walk starting at 100 (numpy, seed 7) and keep "
    "it in a pandas DataFrame called df. Then, in a separate step, add its 20-day moving average "
    "and tell me the highest price and the day it was reached. Plot the price and the moving "
    "average, save the figure as price.png and download it."
)

SYSTEM = (
    "You are a data analyst with a Python sandbox (runbox). Call execute_code to run Python: it "
    "runs in one persistent interpreter, so variables, imports and files are kept between "
    "calls; do the work in small steps. The working folder is /workspace: files the user gave "
    "you are there, and files you write there can be downloaded with download_file. Print what "
    "you need to see; the value of the last expression is returned too. numpy, pandas, "
    "matplotlib and scipy are installed; the sandbox has no network. Answer briefly at the end."
)

TOOLS = [
    {"type": "function", "function": {
        "name": "execute_code",
        "description": "Run Python code in the persistent sandbox and return its stdout, stderr, "
                       "the value of the last expression and any error. Figures shown with "
                       "plt.show() are saved for the user.",
        "parameters": {"type": "object", "properties": {
            "code": {"type": "string", "description": "Python code to run"}},
            "required": ["code"]}}},
    {"type": "function", "function": {
        "name": "upload_file",
        "description": "Write a text file into /workspace.",
        "parameters": {"type": "object", "properties": {
            "path": {"type": "string", "description": "path relative to /workspace"},
            "content": {"type": "string"}},
            "required": ["path", "content"]}}},
    {"type": "function", "function": {
        "name": "list_files",
        "description": "List the files in /workspace.",
        "parameters": {"type": "object", "properties": {}}}},
    {"type": "function", "function": {
        "name": "download_file",
        "description": "Download a file from /workspace and save it for the user (plots, tables).",
        "parameters": {"type": "object", "properties": {
            "path": {"type": "string", "description": "path relative to /workspace"}},
            "required": ["path"]}}},
]

MAX_TOOL_OUTPUT = 20000  # characters of one tool result given back to the model


class Runbox:
    """The few REST calls the functions need (docs/rest.md, docs/files-and-dependencies.md)."""

    def __init__(self, url: str, api_key: str | None = None):
        self.url = url.rstrip("/")
        self.headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}

    def request(self, method: str, path: str, body: Any = None, raw: bytes | None = None,
                binary: bool = False) -> Any:
        headers = dict(self.headers)
        data = raw
        if body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        req = urllib.request.Request(self.url + path, data=data, method=method, headers=headers)
        try:
            with urllib.request.urlopen(req, timeout=600) as resp:
                payload = resp.read()
                return payload if binary else json.loads(payload)
        except urllib.error.HTTPError as e:
            detail = e.read().decode(errors="replace")
            try:
                detail = json.loads(detail)["error"]["message"]
            except (ValueError, KeyError, TypeError):
                pass
            raise RuntimeError(f"runbox {method} {path}: {e.code} {detail}") from None

    def create_session(self) -> str:
        return self.request("POST", "/sessions", {"language": "python"})["session_id"]

    def delete_session(self, sid: str) -> None:
        self.request("DELETE", f"/sessions/{sid}")

    def execute(self, sid: str, code: str) -> dict:
        return self.request("POST", "/execute", {"session_id": sid, "code": code, "wait": True})

    def upload(self, sid: str, path: str, data: bytes) -> None:
        self.request("POST", f"/sessions/{sid}/files?path={urllib.parse.quote(path)}", raw=data)

    def list_files(self, sid: str) -> list:
        return self.request("GET", f"/sessions/{sid}/files")["files"]

    def download(self, sid: str, path: str) -> bytes:
        return self.request("GET", f"/sessions/{sid}/files/download?path={urllib.parse.quote(path)}",
                            binary=True)


class Analysis:
    """One runbox session and the functions the model calls in it."""

    def __init__(self, runbox: Runbox, out: Path):
        self.rb = runbox
        self.out = out
        self.sid = runbox.create_session()
        self.figures = 0

    def close(self) -> None:
        self.rb.delete_session(self.sid)

    def call(self, name: str, arguments: str) -> str:
        try:
            args = json.loads(arguments or "{}")
            if not isinstance(args, dict):
                raise ValueError("the arguments are not a JSON object")
            fn = getattr(self, "fn_" + name, None)
            if fn is None:
                return f"error: there is no function {name!r}"
            return fn(**args)
        except (TypeError, ValueError) as e:
            return f"error: bad arguments for {name}: {e}"
        except RuntimeError as e:  # runbox answered with an error: the model can read it and retry
            return f"error: {e}"

    def fn_execute_code(self, code: str) -> str:
        r = self.rb.execute(self.sid, code)
        parts = [f"status: {r['status']}"]
        if r.get("stdout"):
            parts.append("stdout:\n" + r["stdout"])
        if r.get("stderr"):
            parts.append("stderr:\n" + r["stderr"])
        if r.get("result") is not None:
            parts.append("result: " + r["result"])
        err = r.get("error")
        if err:
            parts.append("error:\n" + ("".join(err["traceback"]) or f"{err['ename']}: {err['evalue']}"))
        for png in r.get("files", []):
            self.figures += 1
            dest = self.save(f"figure-{self.figures}.png", base64.b64decode(png))
            parts.append(f"a figure was shown; saved for the user as {dest.name}")
        if r.get("files_written"):
            parts.append("files written: " + ", ".join(f["path"] for f in r["files_written"]))
        return clip("\n".join(parts))

    def fn_upload_file(self, path: str, content: str) -> str:
        self.rb.upload(self.sid, path, content.encode())
        return f"wrote /workspace/{path} ({len(content.encode())} bytes)"

    def fn_list_files(self) -> str:
        rows = [f"{f['path']}{'/' if f.get('type') == 'directory' else ''} {f.get('size', 0)}"
                for f in self.rb.list_files(self.sid)]
        return clip("\n".join(rows) or "(no files)")

    def fn_download_file(self, path: str) -> str:
        data = self.rb.download(self.sid, path)
        dest = self.save(Path(path).name, data)
        return f"downloaded {path} ({len(data)} bytes); saved for the user as {dest}"

    def save(self, name: str, data: bytes) -> Path:
        self.out.mkdir(parents=True, exist_ok=True)
        dest = self.out / name
        dest.write_bytes(data)
        return dest


def clip(text: str) -> str:
    if len(text) <= MAX_TOOL_OUTPUT:
        return text
    return text[:MAX_TOOL_OUTPUT] + f"\n[... {len(text) - MAX_TOOL_OUTPUT} more characters cut]"


def run(task: str, files: list[Path], model: str, runbox: Runbox, out: Path, max_turns: int) -> str:
    client = OpenAI()  # OPENAI_API_KEY, OPENAI_BASE_URL
    analysis = Analysis(runbox, out)
    log(f"runbox session {analysis.sid}")
    try:
        for f in files:
            analysis.rb.upload(analysis.sid, f.name, f.read_bytes())
            log(f"uploaded {f} as /workspace/{f.name}")
        user = task
        if files:
            user += "\n\nFiles in /workspace: " + ", ".join(f.name for f in files)
        messages: list[dict[str, Any]] = [{"role": "system", "content": SYSTEM},
                                          {"role": "user", "content": user}]
        for _ in range(max_turns):
            reply = client.chat.completions.create(model=model, messages=messages, tools=TOOLS)
            msg = reply.choices[0].message
            if not msg.tool_calls:
                return msg.content or ""
            messages.append({"role": "assistant", "content": msg.content,
                             "tool_calls": [{"id": c.id, "type": "function",
                                             "function": {"name": c.function.name,
                                                          "arguments": c.function.arguments}}
                                            for c in msg.tool_calls]})
            for c in msg.tool_calls:
                log(f"-> {c.function.name} {c.function.arguments}")
                result = analysis.call(c.function.name, c.function.arguments)
                log("<- " + result.replace("\n", "\n   "))
                messages.append({"role": "tool", "tool_call_id": c.id, "content": result})
        raise SystemExit(f"no final answer after {max_turns} turns")
    finally:
        analysis.close()


def log(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("task", nargs="?", default=DEFAULT_TASK, help="what to analyse (default: a demo)")
    ap.add_argument("--file", action="append", default=[], type=Path,
                    help="a local file to upload into /workspace first (repeatable)")
    ap.add_argument("--model", default=os.environ.get("OPENAI_MODEL", "gpt-4o-mini"))
    ap.add_argument("--runbox-url", default=os.environ.get("RUNBOX_URL", "http://127.0.0.1:8080"))
    ap.add_argument("--out", default=Path("runbox-out"), type=Path,
                    help="where figures and downloads are saved (default ./runbox-out)")
    ap.add_argument("--max-turns", default=20, type=int)
    args = ap.parse_args(argv)
    runbox = Runbox(args.runbox_url, os.environ.get("RUNBOX_API_KEY"))
    print(run(args.task, args.file, args.model, runbox, args.out, args.max_turns))
    return 0


if __name__ == "__main__":
    sys.exit(main())

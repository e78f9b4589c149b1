#!/usr/bin/env python3
"""The OpenAI Agents SDK with runbox as an MCP server: an agent gets runbox's MCP tools
(`execute_code`, `upload_file`, `download_file`, `list_files`, ...) from `/mcp` (streamable
HTTP) and works through an analysis in the MCP session's own sandbox, so its variables and
files stay between calls. Files given with --file are uploaded first and the files named with
--download are saved in --out afterwards, both through the same MCP session.

    pip install openai-agents
    export OPENAI_API_KEY=sk-...          # any OpenAI-compatible endpoint: also OPENAI_BASE_URL
    python3 clients/openai/agents_mcp.py --file sales.csv --download units.png \\
        "Which month sold best? Plot units per month and save the chart as units.png."

--transport sse uses the older HTTP+SSE transport at /sse (the SDK's MCPServerSse) instead.
runboxd's address is --runbox-url or $RUNBOX_URL (default http://127.0.0.1:8080), with
$RUNBOX_API_KEY when runboxd has API keys. The model is --model or $OPENAI_MODEL (default
gpt-4o-mini), spoken to with Chat Completions so that any OpenAI-compatible endpoint works.
Tracing to OpenAI is turned off when OPENAI_BASE_URL points elsewhere.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import os
import sys
from pathlib import Path

from agents import Agent, OpenAIChatCompletionsModel, Runner, set_tracing_disabled
from agents.items import ToolCallItem, ToolCallOutputItem
from agents.mcp import MCPServerSse, MCPServerStreamableHttp
from openai import AsyncOpenAI

DEFAULT_TASK = (
    "Simulate 250 days of a stock price as a random walk starting at 100 (numpy, seed 7) and keep "
    "it in a pandas DataFrame called df. Then, in a separate step, add its 20-day moving average "
    "and tell me the highest price and the day it was reached. Plot the price and the moving "
    "average and save the figure as price.png."
)

INSTRUCTIONS = (
    "You are a data analyst with a Python sandbox (runbox). execute_code runs Python in one "
    "persistent interpreter, so variables, imports and files are kept between calls; do the "
    "work in small steps. The working folder is /workspace: files the user gave you are there, "
    "and files you save there are handed to the user. Print what you need to see; the value of "
    "the last expression is returned too. numpy, pandas, matplotlib and scipy are installed; the "
    "sandbox has no network. Answer briefly at the end."
)


def runbox_server(url: str, transport: str, api_key: str | None):
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    # client_session_timeout_seconds: the SDK's default (5 s) would cut off longer cells
    common = {"name": "runbox", "cache_tools_list": True, "client_session_timeout_seconds": 600}
    if transport == "sse":
        return MCPServerSse(params={"url": url.rstrip("/") + "/sse", "headers": headers,
                                    "timeout": 30, "sse_read_timeout": 900}, **common)
    # ?era=legacy: the SDK probes MCP 2026-07-28 first, which has no MCP session; this example
    # keeps one sandbox per MCP session (the file uploaded before the run, the chart downloaded after)
    return MCPServerStreamableHttp(params={"url": url.rstrip("/") + "/mcp?era=legacy", "headers": headers,
                                           "timeout": 30, "sse_read_timeout": 900}, **common)


def file_bytes(result) -> bytes:
    """The bytes of a download_file result: an image, a text, or a base64 resource."""
    if result.is_error:
        raise RuntimeError("".join(getattr(c, "text", "") for c in result.content))
    for c in result.content:
        if c.type == "image":
            return base64.b64decode(c.data)
        if c.type == "resource":
            res = c.resource
            return base64.b64decode(res.blob) if getattr(res, "blob", None) else res.text.encode()
        if c.type == "text":
            return c.text.encode()
    raise RuntimeError("download_file returned no content")


async def run(task: str, files: list[Path], downloads: list[str], model: str, url: str, transport: str,
              out: Path, max_turns: int) -> str:
    async with runbox_server(url, transport, os.environ.get("RUNBOX_API_KEY")) as runbox:
        for f in files:
            r = await runbox.call_tool("upload_file", {"filename": f.name,
                                                       "content_base64": base64.b64encode(f.read_bytes()).decode()})
            if r.is_error:
                raise RuntimeError(f"upload of {f}: " + "".join(getattr(c, "text", "") for c in r.content))
            log(f"uploaded {f} as /workspace/{f.name}")
        if files:
            task += "\n\nFiles in /workspace: " + ", ".join(f.name for f in files)
        agent = Agent(name="analyst", instructions=INSTRUCTIONS, mcp_servers=[runbox],
                      model=OpenAIChatCompletionsModel(model=model, openai_client=AsyncOpenAI()))
        result = await Runner.run(agent, task, max_turns=max_turns)
        for item in result.new_items:
            if isinstance(item, ToolCallItem):
                raw = item.raw_item
                log(f"-> {getattr(raw, 'name', None) or raw.get('name')} "
                    f"{getattr(raw, 'arguments', None) or raw.get('arguments')}")
            elif isinstance(item, ToolCallOutputItem):
                log("<- " + str(item.output)[:2000].replace("\n", "\n   "))
        # The sandbox is the MCP session's: still there until the session closes below.
        for path in downloads:
            data = file_bytes(await runbox.call_tool("download_file", {"src_path": path}))
            out.mkdir(parents=True, exist_ok=True)
            (out / Path(path).name).write_bytes(data)
            log(f"downloaded {path} ({len(data)} bytes) to {out / Path(path).name}")
        return str(result.final_output)


def log(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("task", nargs="?", default=DEFAULT_TASK, help="what to analyse (default: a demo)")
    ap.add_argument("--file", action="append", default=[], type=Path,
                    help="a local file to upload into /workspace first (repeatable)")
    ap.add_argument("--download", action="append", default=None,
                    help="a /workspace file to save in --out afterwards (repeatable; default price.png "
                         "with the built-in task)")
    ap.add_argument("--model", default=os.environ.get("OPENAI_MODEL", "gpt-4o-mini"))
    ap.add_argument("--runbox-url", default=os.environ.get("RUNBOX_URL", "http://127.0.0.1:8080"))
    ap.add_argument("--transport", choices=["streamable-http", "sse"], default="streamable-http")
    ap.add_argument("--out", default=Path("runbox-out"), type=Path,
                    help="where downloads are saved (default ./runbox-out)")
    ap.add_argument("--max-turns", default=20, type=int)
    args = ap.parse_args(argv)
    downloads = args.download if args.download is not None else (["price.png"] if args.task == DEFAULT_TASK else [])
    base = os.environ.get("OPENAI_BASE_URL", "")
    if base and "api.openai.com" not in base:
        set_tracing_disabled(True)  # traces would go to OpenAI with another provider's key
    print(asyncio.run(run(args.task, args.file, downloads, args.model, args.runbox_url, args.transport,
                          args.out, args.max_turns)))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""clients/mcp-stdio/runbox-mcp-stdio: hosts that only launch a command (Claude Desktop's
`command`/`args`) reach a runboxd through the stdio bridge. Driven by the `mcp` SDK's own
stdio_client against a real runboxd and real sandboxes (issue 10, "Older MCP hosts")."""

from __future__ import annotations

import base64
import hashlib
import sys

import anyio
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

import rbtest

BRIDGE = str(rbtest.ROOT / "clients" / "mcp-stdio" / "runbox-mcp-stdio")
PLOT = ("import matplotlib\nmatplotlib.use('Agg')\nimport matplotlib.pyplot as plt\n"
        "plt.plot([1, 2, 3], [1, 4, 9])\nplt.show()\n")


def texts(result) -> str:
    return "".join(getattr(c, "text", "") for c in result.content)


def bridge(url: str, *extra: str) -> StdioServerParameters:
    return StdioServerParameters(command=sys.executable, args=[BRIDGE, "--url", url, *extra])


def test_stdio_bridge_tools_state_plot_cancel_and_close(server):
    async def main():
        async with stdio_client(bridge(server.url)) as (read, write):
            async with ClientSession(read, write) as c:
                init = await c.initialize()
                assert init.server_info.name == "runbox"
                names = {t.name for t in (await c.list_tools()).tools}
                assert {"execute_code", "upload_file", "download_file"} <= names
                r = await c.call_tool("execute_code", {"code": "x = 21"})
                assert not r.is_error, texts(r)
                r = await c.call_tool("execute_code", {"code": "x * 2"})
                assert r.structured_content["result"] == "42"
                sid = r.structured_content["session_id"]
                r = await c.call_tool("execute_code", {"code": PLOT})
                images = [b for b in r.content if b.type == "image"]
                assert len(images) == 1 and base64.b64decode(images[0].data).startswith(rbtest.PNG_SIGNATURE)
                # progress reaches the host through the bridge while the call runs
                seen = []

                async def progress(p, total, message):
                    seen.append(p)

                r = await c.call_tool("execute_code", {"code": "import time\nfor i in range(3):\n"
                                                                "    print(i, flush=True); time.sleep(0.5)"},
                                      progress_callback=progress)
                assert not r.is_error and seen, (texts(r), seen)
                r = await c.call_tool("execute_code", {"code": "1/0"})
                assert r.is_error and "ZeroDivisionError" in texts(r)
                return sid

    sid = anyio.run(main)
    # end of input ends the MCP session (DELETE), and with it the bound sandbox
    rbtest.wait_until(lambda: server.get(f"/sessions/{sid}").json()["status"] == "ended",
                      "the bound session to end when the bridge exits")


def test_stdio_bridge_with_an_api_key_and_clear_errors(make_server, tmp_path):
    key = "k-" + "q" * 40
    keys = tmp_path / "keys"
    keys.write_text(f"host sha256:{hashlib.sha256(key.encode()).hexdigest()}\n")
    s = make_server(["--api-keys-file", str(keys)])

    async def with_key():
        async with stdio_client(bridge(s.url, "--api-key", key)) as (read, write):
            async with ClientSession(read, write) as c:
                await c.initialize()
                r = await c.call_tool("execute_code", {"code": "6 * 7"})
                return r.structured_content["result"]

    assert anyio.run(with_key) == "42"

    async def without_key():
        async with stdio_client(bridge(s.url)) as (read, write):
            async with ClientSession(read, write) as c:
                try:
                    await c.initialize()
                except Exception as e:  # the SDK raises the JSON-RPC error it got
                    return str(e)
                return "initialized"

    got = anyio.run(without_key)
    assert "API key" in got and "401" in got, got

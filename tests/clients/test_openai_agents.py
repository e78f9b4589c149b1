"""clients/openai/agents_mcp.py, run as a user would (a subprocess with OPENAI_BASE_URL): the
OpenAI Agents SDK's MCP support (MCPServerStreamableHttp on /mcp; MCPServerSse on /sse) against
a real runboxd, the model being the scripted OpenAI-compatible endpoint on loopback
(scripted_openai.py) (issue 10, "OpenAI function calling", second example).

The script plays a model that reads the uploaded CSV, relies on the variables of earlier calls,
makes a mistake, plots and saves the chart; the example then downloads the chart through the
same MCP session. The test reads what the Agents SDK sent back to the "model" after each turn.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

import rbtest
from scripted_openai import ScriptedOpenAI
from test_openai_function_calling import CSV, TOTAL

EXAMPLE = rbtest.ROOT / "clients" / "openai" / "agents_mcp.py"
PLOT = ("import matplotlib\nmatplotlib.use('Agg')\nimport matplotlib.pyplot as plt\n"
        "fig, ax = plt.subplots()\nax.bar(df['month'], df['units'])\nfig.savefig('units.png')\nplt.show()\n")
SCRIPT = [
    [("execute_code", {"code": "import pandas as pd\ndf = pd.read_csv('sales.csv')\nprint(df.shape)"})],
    [("execute_code", {"code": "total = int(df['units'].sum())\ntotal"}),
     ("execute_code", {"code": "df['unit'].sum()"})],                       # a mistake: KeyError
    [("execute_code", {"code": PLOT})],
    [("list_files", {})],  # not beside the plot: the SDK runs one turn's calls concurrently
    f"{TOTAL} units sold; month 6 was the best. The chart is units.png.",
]
MCP_TOOLS = {"execute_code", "upload_file", "download_file", "list_files", "create_session", "list_sessions",
             "get_session_info", "close_session", "get_health", "get_packages", "install_dependencies",
             "pause_session", "resume_session", "fork_session"}


@pytest.mark.parametrize("transport", ["streamable-http", "sse"])
def test_agents_sdk_mcp_multi_step_analysis(server, tmp_path, transport):
    (tmp_path / "sales.csv").write_text(CSV)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "RUNBOX_"))}
    before = {s["session_id"] for s in server.get("/sessions").json()["sessions"]}
    with ScriptedOpenAI(SCRIPT) as endpoint:
        env.update(OPENAI_BASE_URL=endpoint.base_url, OPENAI_API_KEY=endpoint.api_key,
                   OPENAI_MODEL=endpoint.model, RUNBOX_URL=server.url)
        p = subprocess.run([sys.executable, str(EXAMPLE), "--transport", transport, "--file", "sales.csv",
                            "--download", "units.png", "--out", "out",
                            "Which month sold best? Plot units per month and save the chart as units.png."],
                           cwd=tmp_path, env=env, capture_output=True, text=True, timeout=240)
    assert p.returncode == 0, p.stdout + p.stderr[-6000:]
    assert not endpoint.errors, endpoint.errors
    assert p.stdout.strip() == SCRIPT[-1]

    reqs = endpoint.requests
    assert len(reqs) == len(SCRIPT)
    for i, r in enumerate(reqs):
        assert r["path"] == "/v1/chat/completions" and r["body"]["model"] == "scripted-model"
        assert set(endpoint.tool_names(i)) == MCP_TOOLS
    first = reqs[0]["body"]["messages"]
    assert "sales.csv" in first[-1]["content"]

    # turn 1: the file uploaded through MCP before the run is read in the MCP session's sandbox
    [shape] = endpoint.tool_results(1)
    assert "(12, 2)" in shape, shape
    # turn 2 (two calls at once, queued in the one sandbox): df from turn 1 is still there; the
    # mistake comes back as a readable error
    total, err = endpoint.tool_results(2)
    assert str(TOTAL) in total, total
    assert "KeyError" in err and "'unit'" in err, err
    # turn 3: the plot. Chat Completions tool messages carry text only, and the SDK replaces an
    # output without text by "[tool output omitted]": the text block runbox adds to an
    # image-only result is what tells the model a plot was made.
    [plot] = endpoint.tool_results(3)
    assert plot == "(no text output; 1 plot as a PNG image)", plot
    # turn 4: the saved chart is in the listing
    [listing] = endpoint.tool_results(4)
    assert "units.png" in listing and "sales.csv" in listing, listing

    # the example downloaded the chart through the same MCP session afterwards
    assert (tmp_path / "out" / "units.png").read_bytes().startswith(rbtest.PNG_SIGNATURE)
    # one sandbox served the whole run (list_files named it), and it ended with the MCP session
    sid = json.loads(listing)["session_id"]
    assert sid not in before
    rbtest.wait_until(lambda: server.session(sid)["status"] == "ended",
                      "the MCP session's sandbox to end when the example exits")

"""clients/openai/function_calling.py, run as a user would (a subprocess with OPENAI_BASE_URL),
with the official `openai` SDK against a scripted OpenAI-compatible endpoint on loopback
(scripted_openai.py) and a real runboxd with real sandboxes (issue 10, "OpenAI function calling").

The script plays a model that reads an uploaded CSV, makes a mistake and recovers, relies on the
variables of earlier calls, plots (shown and saved), lists the files, downloads the plot and
answers. The test then reads what the example sent back to the "model" after each turn.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys

import pytest

import rbtest
from scripted_openai import ScriptedOpenAI

EXAMPLE = rbtest.ROOT / "clients" / "openai" / "function_calling.py"
CSV = "month,units\n" + "".join(f"{m},{u}\n" for m, u in zip(range(1, 13), [5, 8, 13, 7, 21, 34, 9, 11, 3, 17, 26, 6]))
TOTAL = 5 + 8 + 13 + 7 + 21 + 34 + 9 + 11 + 3 + 17 + 26 + 6  # 160
PLOT = ("import matplotlib\nmatplotlib.use('Agg')\nimport matplotlib.pyplot as plt\n"
        "fig, ax = plt.subplots()\nax.bar(df['month'], df['units'])\nfig.savefig('units.png')\nplt.show()\n")
SCRIPT = [
    [("execute_code", {"code": "import pandas as pd\ndf = pd.read_csv('sales.csv')\nprint(df.shape)"})],
    [("execute_code", {"code": "df['unit'].sum()"})],                      # a mistake: KeyError
    [("execute_code", {"code": "total = int(df['units'].sum())\nbest = int(df.loc[df['units'].idxmax(), 'month'])\n"
                               "total, best"})],
    [("execute_code", {"code": PLOT}), ("list_files", {})],                 # two calls in one turn
    [("download_file", {"path": "units.png"}), ("download_file", {"path": "missing.png"})],
    f"{TOTAL} units sold; month 6 was the best. The chart is units.png.",
]


def run_example(server, endpoint, tmp_path, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    full = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "RUNBOX_"))}
    full.update(OPENAI_BASE_URL=endpoint.base_url, OPENAI_API_KEY=endpoint.api_key,
                OPENAI_MODEL=endpoint.model, RUNBOX_URL=server.url, **(env or {}))
    return subprocess.run([sys.executable, str(EXAMPLE), *args], cwd=tmp_path, env=full,
                          capture_output=True, text=True, timeout=240)


@pytest.fixture
def keyed_server(sandbox_image, tmp_path):
    key = "k-" + "o" * 40
    keys = tmp_path / "keys"
    keys.write_text(f"example sha256:{hashlib.sha256(key.encode()).hexdigest()}\n")
    s = rbtest.Server(tmp_path, ["--api-keys-file", str(keys), "--pool-size", "0"])
    s.http.headers["Authorization"] = f"Bearer {key}"
    s.start()
    yield s, key
    rbtest.finish_servers([s])


def test_function_calling_multi_step_analysis(server, tmp_path):
    (tmp_path / "sales.csv").write_text(CSV)
    with ScriptedOpenAI(SCRIPT) as endpoint:
        p = run_example(server, endpoint, tmp_path, "--file", "sales.csv", "--out", "out",
                        "Which month sold best? Plot units per month and download the chart.")
    assert p.returncode == 0, p.stdout + p.stderr[-6000:]
    assert not endpoint.errors, endpoint.errors
    assert p.stdout.strip() == SCRIPT[-1]

    reqs = endpoint.requests
    assert len(reqs) == len(SCRIPT)
    for r in reqs:
        assert r["path"] == "/v1/chat/completions" and r["body"]["model"] == "scripted-model"
        assert sorted(endpoint.tool_names(reqs.index(r))) == ["download_file", "execute_code", "list_files",
                                                              "upload_file"]
    first = reqs[0]["body"]["messages"]
    assert first[0]["role"] == "system" and "sales.csv" in first[1]["content"]

    # turn 1: the uploaded file is read in the sandbox
    [shape] = endpoint.tool_results(1)
    assert "status: completed" in shape and "(12, 2)" in shape, shape
    # turn 2: the model's mistake comes back as a traceback it can read
    [err] = endpoint.tool_results(2)
    assert "status: error" in err and "KeyError" in err and "'unit'" in err, err
    # turn 3: df from turn 1 is still there (one session, state kept)
    [res] = endpoint.tool_results(3)
    assert f"result: ({TOTAL}, 6)" in res, res
    # turn 4: the figure shown is saved locally, the saved file is listed
    plot, listing = endpoint.tool_results(4)
    assert "status: completed" in plot and "figure-1.png" in plot and "units.png" in plot, plot
    assert "sales.csv" in listing and "units.png" in listing, listing
    # turn 5: the download is saved, a missing file is an error the model reads, not a crash
    got, missing = endpoint.tool_results(5)
    assert "downloaded units.png" in got, got
    assert missing.startswith("error:") and "404" in missing, missing

    out = tmp_path / "out"
    for name in ("units.png", "figure-1.png"):
        assert (out / name).read_bytes().startswith(rbtest.PNG_SIGNATURE), name
    # the example ends its session
    sid = p.stderr.split("runbox session ", 1)[1].split()[0]
    assert server.session(sid)["status"] == "ended"


def test_function_calling_runbox_api_key_and_bad_arguments(keyed_server, tmp_path):
    """With API keys the example sends $RUNBOX_API_KEY; arguments that are not JSON, an unknown
    function and missing arguments come back to the model as errors, and the run goes on."""
    server, key = keyed_server
    script = [
        [("execute_code", {"code": "x = 6 * 7"}), ("no_such_function", {})],
        [("execute_code", {}), ("upload_file", {"path": "note.txt", "content": "hi"})],
        [("execute_code", {"code": "open('note.txt').read() * 2, x"})],
        "done",
    ]
    with ScriptedOpenAI(script) as endpoint:
        p = run_example(server, endpoint, tmp_path, "--out", "out", "go", env={"RUNBOX_API_KEY": key})
    assert p.returncode == 0, p.stdout + p.stderr[-6000:]
    assert not endpoint.errors, endpoint.errors
    assert p.stdout.strip() == "done"
    _, unknown = endpoint.tool_results(1)
    assert unknown == "error: there is no function 'no_such_function'"
    missing, wrote = endpoint.tool_results(2)
    assert missing.startswith("error: bad arguments for execute_code") and "code" in missing, missing
    assert wrote == "wrote /workspace/note.txt (2 bytes)"
    [res] = endpoint.tool_results(3)
    assert "result: ('hihi', 42)" in res, res

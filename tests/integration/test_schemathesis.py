"""Property-based run of schemathesis against openapi.yaml on a live runboxd (real Docker).

Checks: all of schemathesis' checks (no 5xx, status codes / content types / headers / bodies
conform to openapi.yaml, schema-valid requests are accepted and schema-invalid ones rejected
with 4xx, undocumented methods answered 405 with Allow, ...), except use_after_free: after
DELETE /sessions/{id}, GET /sessions/{id} answers 200 with status "ended" on purpose (the
contract keeps ended sessions readable while retained), which this check reports as a resource
still reachable after deletion.

positive_data_acceptance holds because openapi.yaml declares what the server enforces
(patterns without control characters, lengths, sizes, rule and requirement syntax) and the
server answers a well-formed request it cannot take with 403 (beyond its --max-* settings) or
409 (a conflict with the session's state), never 400. The one rule a JSON schema cannot state
(a non-multipart upload needs ?path=) is applied to generated cases by schemathesis_hooks.py.

Phases: examples, coverage and fuzzing in one run, stateful in a second one against a fresh
runboxd (RUNS). The stateful phase follows openapi.yaml's links (schemathesis.toml): POST
/sessions -> the session, its files, dependencies and POST /execute with its id and language;
POST /execute -> status, results, events, cancel. Operations:
every one in openapi.yaml except /mcp and /agentrun/mcp (POST/GET/DELETE), /sse and /messages,
whose bodies are JSON-RPC messages of the MCP specification that openapi.yaml does not describe
(tests/mcp and tests/clients check those endpoints with real MCP clients, AgentRun+'s
included). The AgentRun-compatible routes (tag agentrun) get a run of their own
(test_schemathesis_agentrun, half the examples, positive_data_acceptance off): they reach
runbox's sessions under other paths, so in one run with runbox's own routes the stateful phase
would take a session closed through one family for one the other lost. E2B's control plane
(tag e2b) gets a run of its own for the same reason (test_schemathesis_e2b); E2B's sandbox
traffic (tag e2b-sandbox) is left to tests/clients/test_e2b.py, which drives it with E2B's own
SDK: it needs a live sandbox's id and access token in headers, and answers an unknown sandbox
502 as E2B's proxy does (the SDK reads that as "not running"), which schemathesis would count
as a server error.

runboxd runs with --deps-network none: installing packages needs a package index on the
network, which a property-based run must not depend on (nor spend minutes on); every
well-formed install is then refused with 403 `forbidden`, which is documented. The successful
answers of the dependency routes are checked against openapi.yaml by tests/files.

100 examples per operation (and 100 stateful scenarios) give more than 2,000 cases in two to
three minutes; RUNBOX_SCHEMATHESIS_EXAMPLES=500 (or more) makes a longer run outside CI.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import rbtest

HERE = Path(__file__).resolve().parent
DEFAULT_EXAMPLES = "100"
MAX_EXAMPLES = os.environ.get("RUNBOX_SCHEMATHESIS_EXAMPLES", DEFAULT_EXAMPLES)
MIN_CASES = 2000

# (phases, extra runboxd flags): two runs, each against its own runboxd. The stateful scenarios
# each create a session; sessions left by the fuzzing phase (or by earlier scenarios) would hold
# every one of the 20 --max-sessions, and POST /sessions, where the links start, would only
# answer 429. A 3 s idle timeout frees the sessions of finished scenarios.
RUNS = [("examples,coverage,fuzzing", []), ("stateful", ["--idle-timeout", "3"])]


OWN_ROUTES = ["--exclude-checks", "use_after_free", "--exclude-path", "/mcp", "--exclude-path", "/sse",
              "--exclude-path", "/messages", "--exclude-tag", "agentrun", "--exclude-tag", "e2b",
              "--exclude-tag", "e2b-sandbox", "--exclude-tag", "jupyter", "--exclude-tag", "dify",
              "--exclude-tag", "console",
              # free-text times that must be real dates, and a reload that answers 400 on a server
              # without keys: test_audit.py and test_roles.py drive them
              "--exclude-path", "/audit", "--exclude-path", "/keys/reload",
              # a session with cpu_limit 0.01 starts its runner on 1% of a CPU: seconds, not a hang
              "--max-response-time", "120"]


def run_schemathesis(srv, phases: str, report: Path, operations: list[str] = OWN_ROUTES,
                     examples: str = MAX_EXAMPLES) -> tuple[int, str]:
    st = Path(sys.executable).with_name("schemathesis")
    cmd = [str(st), "--config-file", str(HERE / "schemathesis.toml"), "run", str(rbtest.ROOT / "openapi.yaml"),
           "--url", srv.url, "--checks", "all", *operations,
           "--max-examples", examples, "--seed", "20261121", "--workers", "1", "--phases", phases,
           "--request-timeout", "120", "--suppress-health-check", "all",
           "--report", "junit", "--report-dir", str(report), "--no-color"]
    env = {**os.environ, "SCHEMATHESIS_HOOKS": "schemathesis_hooks",
           "PYTHONPATH": os.pathsep.join(filter(None, [str(HERE), os.environ.get("PYTHONPATH")]))}
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=840, cwd=report.parent, env=env)
    return p.returncode, p.stdout + p.stderr


@pytest.mark.timeout(900)
def test_schemathesis(sandbox_image, make_server, tmp_path):
    total = 0
    for i, (phases, flags) in enumerate(RUNS):
        srv = make_server(["--max-sessions", "20", "--deps-network", "none", *flags], name=f"runboxd-{i}")
        rc, out = run_schemathesis(srv, phases, tmp_path / f"report-{i}")
        assert rc == 0, f"schemathesis ({phases}) found problems (exit {rc}):\n{out[-12000:]}\n" \
                        f"--- runboxd log ---\n{srv.log_tail(40)}"
        m = re.search(r"(\d+) generated, (\d+) passed", out)
        assert m is not None, f"no case count in schemathesis' summary ({phases}):\n{out[-3000:]}"
        total += int(m.group(1))
        print(f"schemathesis {phases}: {m.group(1)} cases;",
              " ".join(re.findall(r"^ *(?:Scenarios|API Links):.*$", out, re.M)).strip())
        if phases == "stateful":
            links = re.search(r"API Links: +(\d+) covered", out)
            assert links is not None and int(links.group(1)) > 0, f"no link was followed:\n{out[-3000:]}"
        problems = srv.cleanup()  # its sessions' containers go before the next run starts
        assert not problems, f"runboxd ({phases}): {problems}\n{srv.log_tail(80)}"
    if MAX_EXAMPLES == DEFAULT_EXAMPLES:
        assert total >= MIN_CASES, f"only {total} cases in all (want {MIN_CASES})"


@pytest.mark.timeout(900)
def test_schemathesis_agentrun(sandbox_image, make_server, tmp_path):
    """The AgentRun-compatible routes by themselves (see the module's docstring)."""
    srv = make_server(["--max-sessions", "20", "--deps-network", "none"])
    ops = ["--exclude-checks", "use_after_free,positive_data_acceptance", "--include-tag", "agentrun",
           "--exclude-tag", "mcp"]
    # No stateful phase: schemathesis.toml turns inferred links off, and openapi.yaml's explicit
    # links start at runbox's own POST /sessions, which this run leaves out.
    rc, out = run_schemathesis(srv, "examples,coverage,fuzzing", tmp_path / "report", ops,
                               str(max(1, int(MAX_EXAMPLES) // 2)))
    assert rc == 0, f"schemathesis found problems (exit {rc}):\n{out[-12000:]}\n--- runboxd log ---\n{srv.log_tail(40)}"


@pytest.mark.timeout(900)
def test_schemathesis_e2b(sandbox_image, make_server, tmp_path):
    """E2B's control plane (tag e2b) by itself (see the module's docstring)."""
    srv = make_server(["--max-sessions", "20", "--deps-network", "none"])
    # Every E2B create starts a sandbox (a bash one, or any once the warm pool is spent, is a cold
    # container start), which can take longer than schemathesis' default 10 s limit on a busy
    # machine; speed is measured by tests/bench, not here.
    ops = ["--exclude-checks", "use_after_free,positive_data_acceptance", "--include-tag", "e2b",
           "--max-response-time", "120"]
    rc, out = run_schemathesis(srv, "examples,coverage,fuzzing", tmp_path / "report", ops,
                               str(max(1, int(MAX_EXAMPLES) // 2)))
    assert rc == 0, f"schemathesis found problems (exit {rc}):\n{out[-12000:]}\n--- runboxd log ---\n{srv.log_tail(40)}"
    problems = srv.cleanup()
    assert not problems, f"runboxd: {problems}\n{srv.log_tail(80)}"

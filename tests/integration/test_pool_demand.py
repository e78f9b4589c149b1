"""Bursts (issue 41): a session that finds the warm pool empty answers its first cell without
waiting for the preload, and its first plot still works; warm sandboxes wait at a low CPU weight
and get a session's when claimed; /health and /metrics say what the pool keeps and why. State is
asserted, never time."""
from __future__ import annotations

import base64

import rbtest

PRELOADED = ("numpy", "pandas", "matplotlib")
# Whether the stack is in sys.modules, and whether a zygote (the process that imports the preload,
# runbox_runner/zygote.py) runs in the sandbox: it runs as the sandbox user, so /proc shows it.
STATE = ("import os, sys\n"
         "def zygotes():\n"
         "    n = 0\n"
         "    for p in os.listdir('/proc'):\n"
         "        if p.isdigit():\n"
         "            try:\n"
         "                n += b'--zygote' in open('/proc/' + p + '/cmdline', 'rb').read()\n"
         "            except OSError:\n"
         "                pass\n"
         "    return n\n"
         "print(1)\n"
         "[[m in sys.modules for m in %r], zygotes()]" % (PRELOADED,))
PLOT = ("import pandas as pd, matplotlib.pyplot as plt\n"
        "pd.DataFrame({'a': [1, 2, 3]}).plot()\nplt.show()")
REASONS = {"minimum", "rate", "maximum", "memory", "idle"}


def test_a_cold_session_answers_before_any_preload_and_still_plots(make_server):
    # No pool: every session takes the cold path with the default options (the burst's case).
    srv = make_server(["--pool-size", "0", "--pool-bash-size", "0"])
    sid = srv.create_session({})["session_id"]
    r = srv.execute(sid, STATE)
    assert r["status"] == "completed" and r["stdout"] == "1\n", r
    # Nothing of the stack was imported before the first cell, and nothing imports it behind it.
    assert r["result"] == "[[False, False, False], 0]", r
    r = srv.execute(sid, PLOT)
    assert r["status"] == "completed" and len(r["files"]) == 1, r
    assert base64.b64decode(r["files"][0]).startswith(rbtest.PNG_SIGNATURE)
    h = srv.get("/health").json()["pool"]
    assert h["hits"] == 0 and h["misses"] == 0 and h["target"] == 0, h


def test_warm_sandboxes_wait_at_a_low_cpu_weight_and_a_claim_raises_it(make_server):
    srv = make_server(["--pool-size", "1", "--pool-bash-size", "0", "--pool-max", "1", "--pool-cpu-shares", "64"])

    def warm():
        p = srv.get("/health").json()["pool"]
        return p if p["ready"] >= 1 else None

    rbtest.wait_until(warm, "a warm pool sandbox", 180)
    s = srv.create_session({})
    assert srv.get("/health").json()["pool"]["hits"] == 1
    # The claimed sandbox has a session's weight; the one started to replace it the pool's.
    assert rbtest.wait_until(lambda: rbtest.inspect(s["container_id"])["HostConfig"]["CpuShares"] == 1024,
                             "the claimed sandbox's CPU weight raised", 60)
    instance = srv.get("/health").json()["instance"]

    def replacements():
        ids = rbtest.docker("ps", "-a", "-q", "--no-trunc", "--filter", "label=runbox.session=pool", "--filter",
                            "label=runbox.instance=" + instance).split()
        return [c for c in ids if c != s["container_id"]] or None

    pool = rbtest.wait_until(replacements, "the warm sandbox that replaces the claimed one", 120)
    assert {rbtest.inspect(c)["HostConfig"]["CpuShares"] for c in pool} == {64}
    r = srv.execute(s["session_id"], "print(1)")
    assert r["status"] == "completed" and r["stdout"] == "1\n", r


def test_health_and_metrics_show_the_target_and_its_reason(make_server):
    srv = make_server(["--pool-size", "1", "--pool-bash-size", "0", "--pool-max", "4"])
    p = srv.get("/health").json()["pool"]
    assert p["size"] == 1 and 1 <= p["target"] <= 4 and p["reason"] in REASONS, p
    assert isinstance(p["rate_per_min"], (int, float)) and p["rate_per_min"] >= 0, p
    prof = p["profiles"][0]
    assert prof["language"] == "python" and prof["target"] == p["target"] and prof["reason"] == p["reason"], p
    text = srv.get("/metrics").text
    lines = [ln for ln in text.splitlines() if ln.startswith("runbox_pool_target{")]
    assert len(lines) == 1, lines
    reason = lines[0].split('reason="', 1)[1].split('"', 1)[0]
    assert reason in REASONS and int(lines[0].rsplit(" ", 1)[1]) >= 1, lines


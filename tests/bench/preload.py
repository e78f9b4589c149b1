"""The preload's figures (issue 13), which bench.py takes from a runboxd with the preload on and
from a second one with it off: a new session's first cell that imports pandas and matplotlib and
shows a plot, done with its PNG; the cell right after a reset (a hard timeout) that needs the
stack; the memory of a warm sandbox; and whether runboxd handed out pool sandboxes before their
preload was imported (a host too busy for the figures)."""
import statistics
import time

from benchlib import Engine, create_session, delete_session, log, now, summary, wait_pool

MIB = 1024.0 * 1024

PLOT_CELL = "import pandas as pd, matplotlib.pyplot as plt\npd.DataFrame({'a': [1, 2, 3]}).plot()\nplt.show()"
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
# Ignores the interrupt of its timeout: the runner kills the interpreter after the grace period.
STUBBORN = "import signal, time\nsignal.signal(signal.SIGINT, lambda *a: None)\nwhile True:\n    time.sleep(0.05)\n"
NEEDS_STACK = "import numpy, pandas, matplotlib.pyplot\nprint(1)"


def bench_first_plot(c, n, size):
    """New session (a warm-pool hit) -> a first cell that imports pandas and matplotlib and shows a
    plot -> done with the PNG in hand: (whole, the cell alone, CPU time the sandbox used for the
    cell) in seconds. The CPU time does not depend on how busy the host is; the wall times do."""
    import base64
    eng = Engine()
    whole, cell, cpu = [], [], []
    for _ in range(n):
        wait_pool(c, size)
        t0 = now()
        _, s = create_session(c, {"language": "python"})
        t1 = now()
        cpu0 = container_cpu(eng, s["container_id"])
        t1b = now()
        status, r = c.json("POST", "/execute", {"session_id": s["session_id"], "code": PLOT_CELL, "wait": True,
                                                "timeout": 300})
        t2 = now()
        cpu1 = container_cpu(eng, s["container_id"])
        if cpu0 is not None and cpu1 is not None:
            cpu.append(cpu1 - cpu0)
        files = (r or {}).get("files") or []
        if status != 200 or r.get("status") != "completed" or len(files) != 1 or \
                not base64.b64decode(files[0]).startswith(PNG_SIGNATURE):
            raise RuntimeError("the plot cell failed: %s %r" % (status, r))
        whole.append((t1 - t0) + (t2 - t1b))
        cell.append(t2 - t1b)
        delete_session(c, s["session_id"])
    return whole, cell, cpu


def bench_reset(c, n, size):
    """In a warm session (a pool hit), a cell that ignores the interrupt of its 1 s timeout is
    killed after the grace period and the interpreter replaced (reset: true); measured: from that
    result in hand to the next cell, which needs numpy, pandas and matplotlib, done."""
    wait_pool(c, size)
    _, s = create_session(c, {})
    sid = s["session_id"]
    samples = []
    for _ in range(n):
        status, r = c.json("POST", "/execute", {"session_id": sid, "code": STUBBORN, "wait": True, "timeout": 1})
        if status != 200 or r.get("status") != "timeout" or not r.get("reset"):
            raise RuntimeError("expected a reset: %s %r" % (status, r))
        t0 = now()
        status, r = c.json("POST", "/execute", {"session_id": sid, "code": NEEDS_STACK, "wait": True, "timeout": 300})
        samples.append(now() - t0)
        if status != 200 or r.get("status") != "completed" or r.get("stdout") != "1\n":
            raise RuntimeError("the cell after the reset failed: %s %r" % (status, r))
    delete_session(c, sid)
    return samples


def container_cpu(eng, cid):
    """CPU time (seconds) the container has used, from the Engine API."""
    _, st = eng.api("GET", "/containers/%s/stats?stream=false&one-shot=true" % cid)
    try:
        return st["cpu_stats"]["cpu_usage"]["total_usage"] / 1e9
    except (KeyError, TypeError):
        return None


def container_memory(eng, cid):
    """(memory as `docker stats` shows it: usage minus inactive file pages, anonymous memory) of
    a container in MiB, from the Engine API (cgroup v1 or v2 fields)."""
    _, st = eng.api("GET", "/containers/%s/stats?stream=false&one-shot=true" % cid)
    ms = (st or {}).get("memory_stats") or {}
    stats = ms.get("stats") or {}
    inactive = stats.get("total_inactive_file", stats.get("inactive_file", 0))
    anon = stats.get("total_rss", stats.get("anon"))
    if "usage" not in ms:
        return None, None
    return (ms["usage"] - inactive) / MIB, (anon / MIB if anon is not None else None)


def bench_warm_memory(c, n, size):
    """The memory of a warm sandbox: a session just claimed from the pool, before its first cell."""
    eng = Engine()
    usage, anon = [], []
    for _ in range(n):
        wait_pool(c, size)
        time.sleep(0.5)
        _, s = create_session(c, {"language": "python"})
        u, a = container_memory(eng, s["container_id"])
        if u is not None:
            usage.append(u)
        if a is not None:
            anon.append(a)
        delete_session(c, s["session_id"])
    med = lambda xs: statistics.median(xs) if xs else None
    return {"n": len(usage), "usage_mib": med(usage), "anon_mib": med(anon)}


UNWARMED = "the preload took more than"  # core/sandbox.c: a pool sandbox handed out before its imports


def unwarmed(rb):
    """How often runboxd has handed out a pool sandbox whose preload was still importing (a host so
    busy that it took more than the handshake's patience): a first cell then waits for it."""
    try:
        return open(rb.log_path).read().count(UNWARMED)
    except OSError:
        return 0


def preload_figures(c, F, suffix, n, size, rb):
    log("preload %s: new session -> first plot cell with its PNG x%d" % (suffix, n))
    before = unwarmed(rb)
    whole, cell, cpu = bench_first_plot(c, n, size)
    F["first_plot_unwarmed_" + suffix] = unwarmed(rb) - before
    F["first_plot_" + suffix] = summary(whole)
    F["first_plot_cell_" + suffix] = summary(cell)
    F["first_plot_cell_cpu_" + suffix] = summary(cpu)
    log("preload %s: reset after a hard timeout -> a cell that needs the stack x%d" % (suffix, n))
    F["reset_to_ready_" + suffix] = summary(bench_reset(c, n, size))
    log("preload %s: memory of a warm sandbox x3" % suffix)
    F["warm_sandbox_memory_" + suffix] = bench_warm_memory(c, 3, size)

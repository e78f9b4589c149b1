#!/usr/bin/env python3
"""runbox benchmark (python3 stdlib only; run it through tests/bench/run).

Starts runboxd on a free loopback port with a fresh database and measures, in one run:
session creation (warm-pool hit, pool miss = cold start) against `docker create` + `docker
start` of the same image through the Engine API, and the pool miss taken apart without runboxd
(its own container configuration created and started, then the runner's handshake); the round
trip of print(1) in a warm session over REST (wait: true) and MCP (tools/call execute_code) against `docker exec <container>
python3 -c 'print(1)'`; throughput of 50 sessions running 20 executions each concurrently;
runboxd's resident memory idle, at 50 sessions and after 10,000 executions; the same print(1)
next to a sandbox whose code floods its stdout and stderr with garbage and frame-looking text;
and GET /health
requests per second with wrk. Then, with the preload (--preload, issue 13) on and, in a second
runboxd, off: a new session's first cell that imports pandas and matplotlib and shows a plot,
done with its PNG; the cell right after a reset (a hard timeout) that needs the stack; and the
memory of a warm sandbox, and whether runboxd handed out pool sandboxes before their preload was
imported (a host too busy for the figures). Next, unless --no-engines, a third runboxd with two
engines (--engine): the local one and a nested dockerd over TLS (tests/engines' harness), session
creation and print(1) on each. Then the benchmarks of core's rooms (ROOM_BENCHES: network, data,
Dify, Jupyter, gVisor beside runc), each in a file of its own; --room NAME runs only those named,
without the main runboxd. Prints one table (min / median / p99 per figure, the 1-minute load
average when it was taken, ratios to the baselines, targets) and writes the figures to
tests/bench/results/<time>.json.

Targets are reported, never asserted: the exit status is 0 unless the benchmark itself failed.
Docker objects it creates itself are named runbox-test-bench-* and labelled runbox.test=1.
"""
import argparse
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time

from baselines import baseline_create_start, baseline_docker_exec, baseline_runbox_container
from benchlib import (EXEC_OK, ROOT, Client, Engine, Mcp, Runboxd, create_session, delete_session, execute, health,
                      load_average, log, mem_available_mib, now, summary, wait_pool)
from enginebench import bench_engines
from preload import preload_figures
import roomlib
import burst

# The plumbing (the clients of runboxd and of the Engine API, runboxd itself) is in benchlib.py, the
# Docker baselines in baselines.py, the preload's figures in preload.py and the engines' in
# enginebench.py, all beside this file.

# The benchmarks of core's rooms, each a module beside this one with run() and rows().
ROOM_BENCHES = (("bench_network", "network by policy: a networked session beside a sealed one, the proxy beside a "
                                  "plain network"),
                ("bench_data", "data: suspend, hibernate and fork beside their baselines; a share beside the "
                               "workspace"),
                ("bench_dify", "Dify: a code node's run beside a REST execute of the same code"),
                ("bench_jupyter", "Jupyter: /jupyter's kernels beside the real jupyter_kernel_gateway on the same "
                                  "image"),
                ("bench_gvisor", "gVisor: sandboxes under runsc beside runc, on one nested engine offering both"),
                ("bench_secrets", "secrets: an HTTPS request with a secret injected by the egress proxy beside the "
                                  "same through a plain tunnel and without the proxy"))


# ---- figures --------------------------------------------------------------------------------

def bench_pool_hit(c, n, size):
    samples = []
    for _ in range(n):
        before = wait_pool(c, size)["hits"]
        dt, s = create_session(c, {"language": "python"})
        after = health(c)["pool"]["hits"]
        if after != before + 1:
            raise RuntimeError("expected a pool hit (hits %d -> %d)" % (before, after))
        samples.append(dt)
        delete_session(c, s["session_id"])
    return samples


def bench_pool_miss(c, n):
    """Pool misses: (seconds each, the Engine API configuration of the first one's container)."""
    eng = Engine()
    samples, config = [], None
    for i in range(n):
        # Any non-default option takes the cold path (create + start + attach + handshake).
        dt, s = create_session(c, {"execution_options": {"environment_variables": {"BENCH": str(i)}}})
        samples.append(dt)
        if config is None:
            _, config = eng.api("GET", "/containers/%s/json" % s["container_id"])
        delete_session(c, s["session_id"])
    return samples, config


def bench_exec_rest(c, sid, n, warmup=20, code="print(1)"):
    for _ in range(warmup):
        execute(c, sid, code)
    samples, errors = [], 0
    for _ in range(n):
        dt, ok, _ = execute(c, sid, code)
        samples.append(dt)
        errors += not ok
    return samples, errors


def bench_js_context(c, n, size):
    """The first JavaScript cell of a Python session (its javascript context starts: Node.js), on
    n sessions from the warm pool; then console.log(1) in that context once it is warm."""
    first, warm, errors = [], [], 0
    for _ in range(n):
        wait_pool(c, size)
        _, s = create_session(c, {})
        sid = s["session_id"]
        for samples, count in ((first, 1), (warm, 20)):
            for _ in range(count):
                t0 = now()
                status, r = c.json("POST", "/execute", {"session_id": sid, "code": "console.log(1)",
                                                        "language": "javascript", "wait": True})
                samples.append(now() - t0)
                errors += not (status == 200 and r and r.get("stdout") == EXEC_OK)
        delete_session(c, sid)
    return first, warm, errors


def bench_exec_mcp(port, n, size, warmup=20):
    m = Mcp(port)
    for _ in range(warmup):
        m.execute()
    c = Client(port)
    wait_pool(c, size)  # the sandbox that replaced the one execute_code claimed is warm (preload imported)
    c.close()
    samples, errors = [], 0
    for _ in range(n):
        dt, ok = m.execute()
        samples.append(dt)
        errors += not ok
    try:
        m.c.call("DELETE", "/mcp", None, m.headers())
    except Exception:
        pass
    m.c.close()
    return samples, errors


# What user code can reach (the container's output stream is out of its reach: privilege
# separation, docker/runner/PROTOCOL.md): its own stdout and stderr.
FLOOD_CODE = """
import os, time
junk = b"x" * (256 << 10) + b"\\n"
forged = b'{"type":"stream","id":"e_0","name":"stdout","text":"%s"}\\n' % (b"y" * 60000)
end = time.time() + SECS
while time.time() < end:
    os.write(1, junk); os.write(2, forged)
"""


def bench_flood(c, rb, neighbour, secs, size):
    """A hostile sandbox's code writes garbage and frame-looking text to its stdout and stderr as
    fast as it can for secs seconds while a neighbour session runs print(1): the neighbour's
    latency during the flood, and runboxd's resident memory at its end. The pool refills (and
    its new sandbox imports the preload) before the flood starts, so that only the flood is
    measured."""
    _, s = create_session(c, {})
    flooder = s["session_id"]
    wait_pool(c, size)
    _, st = c.json("POST", "/execute", {"session_id": flooder, "code": FLOOD_CODE.replace("SECS", str(secs)),
                                         "timeout": secs + 30})
    rid = st["request_id"]
    time.sleep(0.5)
    lat, errors = [], 0
    end = now() + secs - 1
    while now() < end:
        t0 = now()
        try:
            execute(c, neighbour)
            lat.append(now() - t0)
        except Exception:
            errors += 1
    rss = rb.rss_mb()
    while True:
        _, doc = c.json("GET", "/execute/%s/status" % rid)
        if doc.get("status") not in ("queued", "running"):
            break
        time.sleep(0.2)
    delete_session(c, flooder)
    return lat, errors, rss


def run_parallel(port, sids, per_session):
    """Each session runs per_session executions of print(1) in its own thread (own connection)."""
    errors = [0] * len(sids)
    lat = [[] for _ in sids]
    start = threading.Barrier(len(sids) + 1)

    def worker(i, sid):
        c = Client(port)
        start.wait()
        for _ in range(per_session):
            try:
                dt, ok, _ = execute(c, sid)
                lat[i].append(dt)
                errors[i] += not ok
            except Exception:
                errors[i] += 1
                c.close()
                c = Client(port)
        c.close()

    threads = [threading.Thread(target=worker, args=(i, s)) for i, s in enumerate(sids)]
    for t in threads:
        t.start()
    start.wait()
    t0 = now()
    for t in threads:
        t.join()
    wall = now() - t0
    return wall, sum(errors), [x for row in lat for x in row]


def create_many(port, n, threads=4):
    sids, errs = [], []
    lock = threading.Lock()
    todo = list(range(n))

    def worker():
        c = Client(port)
        while True:
            with lock:
                if not todo:
                    break
                todo.pop()
            try:
                _, s = create_session(c, {"language": "python"})
                with lock:
                    sids.append(s["session_id"])
            except Exception as e:  # reported, counted as errors
                with lock:
                    errs.append(str(e))
        c.close()

    ts = [threading.Thread(target=worker) for _ in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    return sids, errs


def wrk_health(port, seconds):
    out = subprocess.run(["wrk", "-t2", "-c64", "-d%ds" % seconds, "http://127.0.0.1:%d/health" % port],
                         capture_output=True, text=True)
    m = re.search(r"Requests/sec:\s*([\d.]+)", out.stdout)
    errs = re.search(r"Non-2xx or 3xx responses:\s*(\d+)", out.stdout)
    sock = re.search(r"Socket errors: (.*)", out.stdout)
    return (float(m.group(1)) if m else None), (int(errs.group(1)) if errs else 0), (sock.group(1) if sock else None)


# ---- report ---------------------------------------------------------------------------------

def fmt(v, digits=2):
    return "-" if v is None else ("%.*f" % (digits, v))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runboxd", required=True)
    ap.add_argument("--quick", action="store_true", help="fewer samples (a smoke run)")
    ap.add_argument("--out", help="result file (default tests/bench/results/<time>.json)")
    ap.add_argument("--pool-size", type=int, default=2)
    ap.add_argument("--no-engines", action="store_true",
                    help="leave out the local engine beside a remote one (needs the engine node image)")
    ap.add_argument("--preload-only", action="store_true",
                    help="only the preload figures (first plot cell, reset, warm sandbox memory), on and off")
    ap.add_argument("--room", action="append", choices=[m for m, _ in ROOM_BENCHES],
                    help="only this room's benchmark (repeatable), e.g. --room bench_gvisor")
    ap.add_argument("--burst", action="store_true",
                    help="only the bursts of new sessions (issue 41): three modes beside bare containers (burst.py)")
    ap.add_argument("--burst-n", type=int, help="sessions per mode (default 100; --quick 20)")
    ap.add_argument("--burst-mode", action="append", choices=[m for m, _ in burst.MODES],
                    help="only this mode (repeatable)")
    ap.add_argument("--burst-no-e2b", action="store_true", help="leave out E2B's create + run_code")
    ap.add_argument("--runboxd-arg", action="append", default=[],
                    help="one more argument for the benchmark's runboxd (repeatable), e.g. --runboxd-arg=--pool-max=8")
    a = ap.parse_args()

    q = a.quick
    n_hit, n_miss, n_base = (5, 3, 3) if q else (30, 10, 10)
    n_exec, n_mcp, n_dexec = (100, 50, 5) if q else (1000, 500, 20)
    n_sessions, per_session = 50, 20
    n_preload = 5 if q else 20
    total_execs = 2000 if q else 10000
    wrk_secs = 3 if q else 10

    if a.room:
        main_rooms(a)
    if a.burst:
        main_burst(a)
    work = tempfile.mkdtemp(prefix="runbox-bench-")
    rb = Runboxd(a.runboxd, work, a.pool_size)
    res = {"time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "host": platform.node(),
           "cpus": os.cpu_count(), "quick": q, "pool_size": a.pool_size, "figures": {},
           "load_average_start": load_average(), "mem_available_mib": mem_available_mib()}
    try:
        res["git"] = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"], capture_output=True,
                                    text=True).stdout.strip()
    except Exception:
        res["git"] = None
    F = res["figures"]
    sids = []
    c = Client(rb.port)
    try:
        log("runboxd pid %d on 127.0.0.1:%d; waiting for the warm pool" % (rb.proc.pid, rb.port))
        wait_pool(c, a.pool_size)
        time.sleep(1)
        F["rss_idle_mb"] = rb.rss_mb()
        if a.preload_only:
            preload_figures(c, F, "on", n_preload, a.pool_size, rb)
            raise Done()

        log("session create: pool hit x%d" % n_hit)
        F["create_pool_hit"] = summary(bench_pool_hit(c, n_hit, a.pool_size))
        log("session create: pool miss x%d" % n_miss)
        wait_pool(c, a.pool_size)
        samples, inspected = bench_pool_miss(c, n_miss)
        F["create_pool_miss"] = summary(samples)
        log("baseline: docker create + start x%d" % n_base)
        wait_pool(c, a.pool_size)
        F["baseline_create_start"] = summary(baseline_create_start(n_base))
        log("pool miss without runboxd: its container configuration, create + start, then the runner's "
            "handshake x%d" % n_base)
        cs, hs = baseline_runbox_container(inspected, n_base)
        F["runbox_config_create_start"] = summary(cs)
        F["runbox_config_handshake"] = summary(hs)
        F["runbox_config_total"] = summary([x + y for x, y in zip(cs, hs)])

        _, s = create_session(c, {})
        sid, cid = s["session_id"], s["container_id"]
        sids.append(sid)
        wait_pool(c, a.pool_size)  # the pool's new sandbox has imported the preload: it is not measured
        log("execute print(1) over REST x%d" % n_exec)
        samples, errs = bench_exec_rest(c, sid, n_exec)
        F["exec_rest"] = dict(summary(samples), errors=errs)
        log("execute print(1) over MCP x%d" % n_mcp)
        try:
            samples, errs = bench_exec_mcp(rb.port, n_mcp, a.pool_size)
            F["exec_mcp"] = dict(summary(samples), errors=errs)
        except Exception as e:
            log("MCP figure skipped: %s" % e)
            F["exec_mcp"] = {"error": str(e)}
        for lang, code in (("javascript", "console.log(1)"), ("typescript", "const one: number = 1; console.log(one)")):
            log("execute %s over REST x%d (a %s session, created cold: no warm pool for it)" % (code, n_exec, lang))
            dt, js = create_session(c, {"language": lang})
            F["create_" + lang] = summary([dt])
            sids.append(js["session_id"])
            samples, errs = bench_exec_rest(c, js["session_id"], n_exec, code=code)
            F["exec_rest_" + lang] = dict(summary(samples), errors=errs)
            delete_session(c, js["session_id"])
            sids.remove(js["session_id"])
        log("first JavaScript cell of a Python session (its javascript context) x%d" % n_dexec)
        first, warm, errs = bench_js_context(c, n_dexec, a.pool_size)
        F["exec_js_context_first"] = dict(summary(first), errors=errs)
        F["exec_js_context_warm"] = dict(summary(warm), errors=errs)
        flood_secs = 5 if q else 30
        log("flood: a neighbour's print(1) while a sandbox's code floods its stdout/stderr for %d s" % flood_secs)
        samples, errs, rss = bench_flood(c, rb, sid, flood_secs, a.pool_size)
        F["exec_rest_during_flood"] = dict(summary(samples) or {}, errors=errs)
        F["rss_end_of_flood_mb"] = rss
        log("baseline: docker exec python3 -c 'print(1)' x%d" % n_dexec)
        F["baseline_docker_exec"] = summary(baseline_docker_exec(cid, n_dexec))
        delete_session(c, sid)
        sids.remove(sid)

        preload_figures(c, F, "on", n_preload, a.pool_size, rb)

        log("throughput: creating %d sessions" % n_sessions)
        sids, errs = create_many(rb.port, n_sessions)
        if errs:
            log("session create errors: %s" % errs[:3])
        log("throughput: %d sessions x %d executions" % (len(sids), per_session))
        wall, errors, lat = run_parallel(rb.port, sids, per_session)
        F["throughput"] = {"sessions": len(sids), "executions": len(sids) * per_session, "seconds": wall,
                           "exec_per_s": len(sids) * per_session / wall, "errors": errors + len(errs),
                           "latency": summary(lat)}
        time.sleep(0.5)
        F["rss_50_sessions_mb"] = rb.rss_mb()
        done = len(sids) * per_session
        rest = max(0, total_execs - done)
        log("memory: %d more executions (to %d)" % (rest, total_execs))
        per = (rest + len(sids) - 1) // len(sids)
        wall2, errors2, _ = run_parallel(rb.port, sids, per)
        done += per * len(sids)
        time.sleep(0.5)
        F["rss_after_execs_mb"] = rb.rss_mb()
        F["rss_execs"] = done
        F["rss_growth_pct"] = 100.0 * (F["rss_after_execs_mb"] - F["rss_50_sessions_mb"]) / F["rss_50_sessions_mb"]
        F["soak"] = {"executions": per * len(sids), "seconds": wall2, "exec_per_s": per * len(sids) / wall2,
                     "errors": errors2}

        log("GET /health with wrk for %d s (%d live sessions)" % (wrk_secs, len(sids)))
        rps, non2xx, sockerr = wrk_health(rb.port, wrk_secs)
        F["health_rps"] = {"rps": rps, "non_2xx": non2xx, "socket_errors": sockerr,
                           "load1": (load_average() or [None])[0]}
    except Done:
        pass
    finally:
        # every live session, including the one MCP's execute_code created for itself
        roomlib.delete_live_sessions(c, delete_session)
        c.close()
        rb.stop()

    # The same preload figures from a runboxd with the preload off, side by side.
    log("a second runboxd with --preload '' (the cold path)")
    off = Runboxd(a.runboxd, work, a.pool_size, ["--preload", ""], name="runboxd-preload-off")
    c = Client(off.port)
    try:
        wait_pool(c, a.pool_size)
        preload_figures(c, F, "off", n_preload, a.pool_size, off)
    finally:
        roomlib.delete_live_sessions(c, delete_session)
        c.close()
        off.stop()
    if not a.no_engines:
        log("a local and a remote engine (nested dockerd over TLS) under one runboxd")
        try:
            bench_engines(a.runboxd, work, F, 3 if q else 10, 100 if q else 500)
        except Exception as e:  # reported, not fatal: the other figures stand
            log("engines: %s" % e)
            F["engines_error"] = str(e)[:500]
    run_rooms(a, F)
    res["load_average_end"] = load_average()

    report(res)
    write_results(a, res)
    log_text = open(rb.log_path).read() + open(off.log_path).read()
    if "Sanitizer" in log_text:
        log("runboxd reported sanitizer errors; its log is in %s" % work)
    else:
        shutil.rmtree(work, ignore_errors=True)


def run_rooms(a, F, names=None):
    """Runs the benchmarks of core's rooms (those named, or all) into F, each in its own file: a
    failure is logged and kept as F[<module>_error], the other figures stand. Returns the failures."""
    failed = 0
    for mod, what in ROOM_BENCHES:
        if names and mod not in names:
            continue
        log(what)
        try:
            F.update(__import__(mod).run(Runboxd, Client, create_session, delete_session, a.runboxd,
                                         3 if a.quick else 10, log))
        except Exception as e:
            log("%s: %s" % (mod, e))
            F[mod + "_error"] = str(e)[:500]
            failed += 1
    return failed


def main_rooms(a):
    """--room: only the named rooms' benchmarks (no main runboxd), their rows and result file; exit
    status 1 when one failed."""
    res = {"time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "host": platform.node(),
           "cpus": os.cpu_count(), "quick": a.quick, "rooms": a.room, "figures": {},
           "load_average_start": load_average(), "mem_available_mib": mem_available_mib()}
    failed = run_rooms(a, res["figures"], a.room)
    res["load_average_end"] = load_average()
    print_table([r for mod in a.room for r in __import__(mod).rows(res["figures"], fmt)])
    print("load average at start %s, at end %s (%s CPUs)" % (res["load_average_start"], res["load_average_end"],
                                                             res["cpus"]))
    write_results(a, res)
    sys.exit(1 if failed else 0)


def main_burst(a):
    """--burst: only the bursts (burst.py) against a runboxd of their own, then their rows and
    result file."""
    n = a.burst_n or (20 if a.quick else 100)
    res = {"time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "host": platform.node(),
           "cpus": os.cpu_count(), "quick": a.quick, "burst_n": n, "pool_size": a.pool_size,
           "runboxd_args": a.runboxd_arg, "figures": {}, "load_average_start": load_average(),
           "mem_available_mib": mem_available_mib()}
    try:
        res["git"] = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"], capture_output=True,
                                    text=True).stdout.strip()
    except Exception:
        res["git"] = None
    work = tempfile.mkdtemp(prefix="runbox-bench-")
    rb = Runboxd(a.runboxd, work, a.pool_size, extra=["--max-sessions", str(2 * n + 20)] + a.runboxd_arg)
    c = Client(rb.port)
    try:
        wait_pool(c, a.pool_size)
        res["figures"] = burst.run(rb.port, n, a.pool_size, None if a.burst_no_e2b else "e2b_bench", a.burst_mode)
        res["health_end"] = health(c)
    finally:
        c.close()
        rb.stop()
        shutil.rmtree(work, ignore_errors=True)
    res["load_average_end"] = load_average()
    for line in burst.rows(res["figures"]):
        print(line)
    print("load average at start %s, at end %s (%s CPUs)" % (res["load_average_start"], res["load_average_end"],
                                                             res["cpus"]))
    write_results(a, res)
    sys.exit(0)


def write_results(a, res):
    out = a.out or os.path.join(ROOT, "tests", "bench", "results", time.strftime("%Y%m%d-%H%M%S") + ".json")
    os.makedirs(os.path.dirname(out), exist_ok=True)
    with open(out, "w") as f:
        json.dump(res, f, indent=2)
    print("results: %s" % out)


class Done(Exception):
    """Ends the main runboxd's part early (--preload-only)."""


def print_table(rows):
    """Prints the report's rows (name, n, min, median, p99, unit, load, target) as one table."""
    w = [max((len(str(r[i] if r[i] is not None else "")) for r in rows), default=0) for i in range(8)]
    hdr = ("figure", "n", "min", "median", "p99", "unit", "load", "target")
    w = [max(w[i], len(hdr[i])) for i in range(8)]
    line = lambda r: "  ".join(str(r[i] if r[i] is not None else "").ljust(w[i]) if i in (0, 5, 7) else
                               str(r[i] if r[i] is not None else "").rjust(w[i]) for i in range(8))
    print(line(hdr))
    print("  ".join("-" * x for x in w))
    for r in rows:
        print(line(r))


def report(res):
    F = res["figures"]
    rows = []

    def lat(name, key, target=None):
        v = F.get(key) or {}
        rows.append((name, v.get("n"), fmt(v.get("min_ms")), fmt(v.get("median_ms")), fmt(v.get("p99_ms")),
                     "ms", fmt(v.get("load1"), 1), target or ""))

    lat("session create, pool hit", "create_pool_hit", "median <= 10 ms")
    lat("session create, pool miss (cold)", "create_pool_miss")
    lat("baseline: docker create+start (API)", "baseline_create_start")
    lat("  runboxd's config: create+start (API)", "runbox_config_create_start")
    lat("  runboxd's config: start -> runner's pong", "runbox_config_handshake")
    lat("  runboxd's config: both (a miss w/o runboxd)", "runbox_config_total")
    lat("execute print(1), REST wait:true", "exec_rest", "median <= 3 ms")
    lat("execute print(1), MCP execute_code", "exec_mcp")
    lat("execute console.log(1), REST, javascript", "exec_rest_javascript")
    lat("  same in typescript (transpiled per cell)", "exec_rest_typescript")
    lat("first javascript cell of a python session", "exec_js_context_first")
    lat("  then console.log(1) in that context", "exec_js_context_warm")
    lat("  javascript session create (cold)", "create_javascript")
    lat("  typescript session create (cold)", "create_typescript")
    lat("  same, neighbour of a flooding sandbox", "exec_rest_during_flood", "median <= 2x quiet")
    rows.append(("runboxd RSS at the end of the flood", None, "", fmt(F.get("rss_end_of_flood_mb"), 1), "", "MB", "",
                 ""))
    lat("baseline: docker exec python3 -c", "baseline_docker_exec")
    t = F.get("throughput") or {}
    rows.append(("throughput, 50 sessions x 20 execs", t.get("executions"), "", fmt(t.get("exec_per_s"), 0), "",
                 "exec/s", fmt((t.get("latency") or {}).get("load1"), 1), "errors = %s (target 0)" % t.get("errors")))
    tl = t.get("latency") or {}
    rows.append(("  latency under that load", tl.get("n"), fmt(tl.get("min_ms")), fmt(tl.get("median_ms")),
                 fmt(tl.get("p99_ms")), "ms", fmt(tl.get("load1"), 1), ""))
    rows.append(("runboxd RSS idle (pool warm)", None, "", fmt(F.get("rss_idle_mb"), 1), "", "MB", "", ""))
    rows.append(("runboxd RSS at 50 sessions", None, "", fmt(F.get("rss_50_sessions_mb"), 1), "", "MB", "",
                 "<= 30 MB"))
    rows.append(("runboxd RSS after %s execs" % F.get("rss_execs"), None, "", fmt(F.get("rss_after_execs_mb"), 1),
                 "", "MB", "", "growth %s%% (<= 5%%)" % fmt(F.get("rss_growth_pct"), 1)))
    h = F.get("health_rps") or {}
    rows.append(("GET /health (wrk -t2 -c64)", None, "", fmt(h.get("rps"), 0), "", "req/s", fmt(h.get("load1"), 1),
                 ">= 50000"))
    lat("new session -> first plot cell + PNG, preload on", "first_plot_on", "median <= 150 ms")
    lat("  same, preload off", "first_plot_off")
    lat("  the cell alone, preload on", "first_plot_cell_on")
    lat("  the cell alone, preload off", "first_plot_cell_off")
    lat("  CPU time the sandbox spent on it, on", "first_plot_cell_cpu_on")
    lat("  CPU time the sandbox spent on it, off", "first_plot_cell_cpu_off")
    lat("reset (hard timeout) -> cell with the stack, on", "reset_to_ready_on", "median <= 100 ms")
    lat("  same, preload off", "reset_to_ready_off")
    lat("session create, local engine (--engine, cold)", "engines_create_local")
    lat("  same, remote engine over TLS (nested dockerd)", "engines_create_remote")
    lat("execute print(1), local engine", "engines_exec_local")
    lat("  same, remote engine over TLS", "engines_exec_remote")
    avail = res.get("mem_available_mib")
    for k in ("on", "off"):
        m = F.get("warm_sandbox_memory_" + k) or {}
        fit = int(avail // m["usage_mib"]) if avail and m.get("usage_mib") else None
        rows.append(("warm sandbox memory, preload %s" % k, m.get("n"), "", fmt(m.get("usage_mib"), 1), "", "MiB", "",
                     "anon %s MiB; %s fit in MemAvailable %s MiB" % (fmt(m.get("anon_mib"), 1), fit, fmt(avail, 0))))

    for mod, _ in ROOM_BENCHES:
        rows.extend(__import__(mod).rows(F, fmt))
    print_table(rows)

    def ratio(a, b):
        x, y = (F.get(a) or {}).get("median_ms"), (F.get(b) or {}).get("median_ms")
        return (y / x) if x and y else None

    r1 = ratio("create_pool_hit", "baseline_create_start")
    r2 = ratio("exec_rest", "baseline_docker_exec")
    r3 = ratio("exec_mcp", "baseline_docker_exec")
    r4 = ratio("create_pool_miss", "baseline_create_start")
    r5 = ratio("exec_rest", "exec_rest_during_flood")
    res["ratios"] = {"create_pool_hit_vs_create_start": r1, "exec_rest_vs_docker_exec": r2,
                     "exec_mcp_vs_docker_exec": r3, "create_pool_miss_vs_create_start": r4}
    print()
    print("ratios (baseline median / runbox median; target >= 20x):")
    print("  pool-hit create vs docker create+start: %sx" % fmt(r1, 1))
    print("  pool-miss create vs docker create+start: %sx" % fmt(r4, 2))
    print("  REST execute vs docker exec:           %sx" % fmt(r2, 1))
    print("  MCP execute vs docker exec:            %sx" % fmt(r3, 1))
    res["ratios"]["exec_during_flood_vs_quiet"] = r5
    print("  neighbour of a flooding sandbox vs quiet (median; target <= 2x): %sx" % fmt(r5, 2))
    for k in ("on", "off"):
        if F.get("first_plot_unwarmed_" + k):
            print("  warning: preload %s: runboxd handed out %d pool sandboxes before their preload was imported "
                  "(the host is too busy); the first-plot figures include those imports"
                  % (k, F["first_plot_unwarmed_" + k]))
    print("load average at start %s, at end %s (%s CPUs)" % (res.get("load_average_start"), res.get("load_average_end"),
                                                             res.get("cpus")))


if __name__ == "__main__":
    main()

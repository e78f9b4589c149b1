"""gVisor beside runc, measured (tests/bench/run; core/isolation/isolation.h, docs/security.md
"Choosing the isolation"): the same runboxd, on the same engine, hands out sandboxes of both
isolations, and each figure's samples alternate between the two:

- session create with a pool hit (a warm sandbox of that isolation claimed) and with a pool miss
  (an environment variable takes the cold path: create + start + attach + handshake);
- the round trip of `print(1)` (REST, `wait: true`) in a live session;
- a new session's first cell that imports pandas and matplotlib and shows a plot, PNG in hand,
  and the CPU time the container spent on that cell (its cgroup's, from the engine's stats: under
  gVisor the Sentry's work included; unlike the wall times, it does not grow with the host's load);
- after a timeout: a cell of `time.sleep(10)` with timeout 1 (interrupted), then the time from
  its result in hand to the next `print(1)` answered; and the same after a hard reset (a cell that
  ignores the interrupt: its interpreter is killed and replaced, `reset: true`);
- the memory of an idle warm pool sandbox of each kind: the engine's `GET
  /containers/{id}/stats`, `memory_stats.usage` (what the container's cgroup holds, page cache
  included; also usage minus inactive file pages, as `docker stats` shows it).

The engine is a nested dockerd (tests/engines/enginehub.py, one node, the runbox-engine-node
image with Debian's runsc) on an --internal network of the benchmark's own, with gVisor
registered as the runtime "runsc" with the arguments RUNBOX_BENCH_RUNSC (default
`--platform=ptrace --network=none`: the platform that needs no KVM; docs/security.md). runboxd is
given that engine alone (`--engine ...,runtimes=runc+runsc`), a pool of one warm python sandbox
of each isolation (`--pool-size 1 --pool-other-isolation-size 1`), and no bash pool. Both pools
are full before every sample (and a warm sandbox has sat a second before its memory is read), so
that no refill runs beside what is measured. The goals (issue): gVisor's first plot cell at most
2x runc's, its pool hit unchanged. Times are the client's (the HTTP call from start to answer).
"""

import base64
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import roomlib  # tests/bench/roomlib.py

ROOT = Path(__file__).resolve().parents[2]
NODE_IMAGE = os.environ.get("RUNBOX_ENGINE_NODE_IMAGE", "runbox-engine-node:latest")
RUNSC_ARGS = os.environ.get("RUNBOX_BENCH_RUNSC", "--platform=ptrace --network=none")
KINDS = (("runc", "container"), ("gvisor", "gvisor"))  # (figure suffix, execution_options.isolation)
RUNTIME = {"runc": "runc", "gvisor": "runsc"}
MIB = 1024.0 * 1024
SETTLE_S = 1.0  # a warm sandbox's age before its memory is read
PLOT_CELL = "import pandas as pd, matplotlib.pyplot as plt\npd.DataFrame({'a': [1, 2, 3]}).plot()\nplt.show()"
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
SLEEP_CELL = "import time\ntime.sleep(10)"
# Ignores the interrupt of its timeout: the runner kills the interpreter after the grace period.
STUBBORN = "import signal, time\nsignal.signal(signal.SIGINT, lambda *a: None)\nwhile True:\n    time.sleep(0.05)\n"
UNWARMED = "the preload took more than"  # core/sandbox.c: a pool sandbox handed out before its imports
# (figure key, report row, target of the ratio gvisor / runc)
FIGURES = (("gv_create_hit", "session create, pool hit", "unchanged (~1x)"),
           ("gv_create_miss", "session create, pool miss (cold)", ""),
           ("gv_exec", "execute print(1), REST wait:true", ""),
           ("gv_first_plot", "new session -> first plot cell + PNG", "<= 2x"),
           ("gv_first_plot_cell", "  the plot cell alone", "<= 2x"),
           ("gv_first_plot_cpu", "  CPU time the sandbox spent on the cell", ""),
           ("gv_timeout_to_print", "timeout (sleep, 1 s) -> next print(1)", ""),
           ("gv_reset_to_print", "hard reset (timeout) -> next print(1)", ""))


def _summary(xs):
    """roomlib's summary, with the 1-minute load average at the end of the samples."""
    return dict(roomlib.summary(xs), load1=os.getloadavg()[0]) if xs else {}


def _median(xs):
    return statistics.median(xs) if xs else None


def _mem_summary(xs):
    xs = sorted(xs)
    return {"n": len(xs), "min_mib": xs[0], "median_mib": statistics.median(xs), "max_mib": xs[-1]} if xs else {}


class _Bench:
    """One runboxd on one engine offering runc and runsc, and the engine's API (for stats)."""

    def __init__(self, c, cl, create_session, delete_session, rb):
        self.c, self.cl, self.rb = c, cl, rb
        self.create_session, self.delete_session = create_session, delete_session

    def health(self):
        st, h = self.c.json("GET", "/health")
        if st != 200:
            raise RuntimeError("GET /health: %s %r" % (st, h))
        return h

    def wait_pools(self, timeout=300):
        """Waits until every pool profile is full and none is starting; /health's pool."""
        end = time.time() + timeout
        while True:
            pool = self.health().get("pool") or {}
            profs = pool.get("profiles") or []
            isos = {p["isolation"] for p in profs}
            if isos >= {"container", "gvisor"} and all(p["ready"] >= p["size"] and not p["starting"] for p in profs):
                return pool
            if time.time() > end:
                raise RuntimeError("the warm pools did not fill: %r" % pool)
            time.sleep(0.02)

    def engine(self, method, path, **kw):
        r = self.cl.api(0, method, path, **kw)
        if r.status_code != 200:
            raise RuntimeError("engine %s %s: %s %s" % (method, path, r.status_code, r.text[:300]))
        return r.json()

    def runtime(self, container_id):
        """The engine runtime of a session's container ("n1@abc...")."""
        return self.engine("GET", "/containers/%s/json" % container_id.split("@")[-1])["HostConfig"]["Runtime"]

    def pool_memory(self, kind):
        """(usage, usage minus inactive file) in MiB of the idle warm pool sandbox of kind: the
        pool-labelled container of that runtime that no live session holds."""
        _, live = self.c.json("GET", "/sessions")
        held = [x["container_id"].split("@")[-1] for x in (live or {}).get("sessions", []) if x.get("container_id")]
        found = self.engine("GET", "/containers/json",
                            params={"filters": json.dumps({"label": ["runbox.session=pool"]})})
        for ct in found:
            if any(ct["Id"].startswith(h) for h in held if h):
                continue
            if self.runtime(ct["Id"]) != RUNTIME[kind]:
                continue
            ms = self.engine("GET", "/containers/%s/stats" % ct["Id"],
                             params={"stream": "false", "one-shot": "true"}).get("memory_stats") or {}
            if "usage" not in ms:
                raise RuntimeError("no memory_stats.usage for a %s sandbox: %r" % (kind, ms))
            stats = ms.get("stats") or {}
            inactive = stats.get("total_inactive_file", stats.get("inactive_file", 0))
            return ms["usage"] / MIB, (ms["usage"] - inactive) / MIB
        raise RuntimeError("no idle warm %s sandbox on the engine" % kind)

    def create(self, iso, extra=None):
        """A session of isolation iso: (seconds, session)."""
        opts = {"isolation": iso}
        opts.update(extra or {})
        return self.create_session(self.c, {"language": "python", "execution_options": opts})

    def execute(self, sid, code, timeout=300):
        t0 = time.perf_counter()
        st, r = self.c.json("POST", "/execute", {"session_id": sid, "code": code, "wait": True, "timeout": timeout})
        dt = time.perf_counter() - t0
        if st != 200 or not r:
            raise RuntimeError("POST /execute: %s %r" % (st, r))
        return dt, r

    def print1(self, sid):
        dt, r = self.execute(sid, "print(1)")
        if r.get("status") != "completed" or r.get("stdout") != "1\n":
            raise RuntimeError("print(1) failed: %r" % (r,))
        return dt

    def cpu(self, container_id):
        """CPU time (s) the container's cgroup has used, from the engine's stats."""
        st = self.engine("GET", "/containers/%s/stats" % container_id.split("@")[-1],
                         params={"stream": "false", "one-shot": "true"})
        return st["cpu_stats"]["cpu_usage"]["total_usage"] / 1e9

    def unwarmed(self):
        try:
            return open(self.rb.log_path).read().count(UNWARMED)
        except OSError:
            return 0


def _alternate(i):
    """Both kinds, the first of them alternating with i (neither always measured first)."""
    return KINDS if i % 2 == 0 else KINDS[::-1]


def _pool_hits(b, n, log):
    """Pool hits and the memory of each idle warm sandbox just before it is claimed."""
    log("gvisor: session create, pool hit x%d each (and the idle warm sandbox's memory)" % n)
    hit = {k: [] for k, _ in KINDS}
    mem = {k: [] for k, _ in KINDS}
    mem_stats = {k: [] for k, _ in KINDS}
    for i in range(n):
        for kind, iso in _alternate(i):
            before = b.wait_pools()["hits"]
            time.sleep(SETTLE_S)
            u, s = b.pool_memory(kind)
            mem[kind].append(u)
            mem_stats[kind].append(s)
            dt, sess = b.create(iso)
            if b.health()["pool"]["hits"] != before + 1:
                raise RuntimeError("expected a pool hit for %s" % iso)
            if b.runtime(sess["container_id"]) != RUNTIME[kind]:
                raise RuntimeError("a %s session got runtime %s" % (iso, b.runtime(sess["container_id"])))
            hit[kind].append(dt * 1000)
            b.delete_session(b.c, sess["session_id"])
    return hit, mem, mem_stats


def _pool_misses(b, n, log):
    log("gvisor: session create, pool miss x%d each" % n)
    miss = {k: [] for k, _ in KINDS}
    for i in range(n):
        for kind, iso in _alternate(i):
            before = b.wait_pools()["hits"]
            # any option but the isolation takes the cold path
            dt, sess = b.create(iso, {"environment_variables": {"BENCH": str(i)}})
            if b.health()["pool"]["hits"] != before:
                raise RuntimeError("expected a pool miss for %s" % iso)
            miss[kind].append(dt * 1000)
            b.delete_session(b.c, sess["session_id"])
    return miss


def _first_plots(b, n, log):
    """New session (a pool hit) -> the plot cell, PNG in hand: (whole, the cell alone, the CPU time
    the container spent on the cell) in ms."""
    log("gvisor: new session -> first plot cell with its PNG x%d each" % n)
    whole = {k: [] for k, _ in KINDS}
    cell = {k: [] for k, _ in KINDS}
    cpu = {k: [] for k, _ in KINDS}
    for i in range(n):
        for kind, iso in _alternate(i):
            b.wait_pools()
            dt_create, sess = b.create(iso)
            cpu0 = b.cpu(sess["container_id"])
            dt_cell, r = b.execute(sess["session_id"], PLOT_CELL)
            cpu[kind].append((b.cpu(sess["container_id"]) - cpu0) * 1000)
            files = r.get("files") or []
            if r.get("status") != "completed" or len(files) != 1 or \
                    not base64.b64decode(files[0]).startswith(PNG_SIGNATURE):
                raise RuntimeError("the %s plot cell failed: %r" % (iso, r))
            whole[kind].append((dt_create + dt_cell) * 1000)
            cell[kind].append(dt_cell * 1000)
            b.delete_session(b.c, sess["session_id"])
    return whole, cell, cpu


def _live_sessions(b):
    """One live session of each kind (pool hits), the pools full again: {kind: session id}."""
    sids = {}
    for kind, iso in KINDS:
        b.wait_pools()
        sids[kind] = b.create(iso)[1]["session_id"]
    b.wait_pools()
    return sids


def _round_trips(b, sids, n_exec, log):
    log("gvisor: execute print(1) x%d each, alternating" % n_exec)
    ex = {k: [] for k, _ in KINDS}
    for _ in range(20):  # warm-up
        for kind, _ in KINDS:
            b.print1(sids[kind])
    for i in range(n_exec):
        for kind, _ in _alternate(i):
            ex[kind].append(b.print1(sids[kind]) * 1000)
    return ex


def _timeouts(b, sids, n, log):
    """In the live sessions: a timeout (the interrupt ends the sleep) and a hard reset (the
    interpreter replaced), each followed by the print(1) whose time (from the timeout's result in
    hand) is measured: ({(what, kind): ms}, {kind: timeouts that reset all the same})."""
    log("gvisor: timeout (sleep, 1 s) and hard reset -> next print(1) x%d each" % n)
    after = {(what, k): [] for what in ("timeout", "reset") for k, _ in KINDS}
    resets = {k: 0 for k, _ in KINDS}
    for i in range(n):
        for kind, iso in _alternate(i):
            for what, code in (("timeout", SLEEP_CELL), ("reset", STUBBORN)):
                _, r = b.execute(sids[kind], code, timeout=1)
                if r.get("status") != "timeout" or (what == "reset" and not r.get("reset")):
                    raise RuntimeError("expected a %s in %s: %r" % (what, iso, r))
                resets[kind] += what == "timeout" and bool(r.get("reset"))
                after[(what, kind)].append(b.print1(sids[kind]) * 1000)
    return after, resets


def run(Runboxd, Client, create_session, delete_session, binary, n, log):
    """The figures (a dict): gv_create_hit_*, gv_create_miss_*, gv_exec_*, gv_first_plot_*,
    gv_first_plot_cell_*, gv_first_plot_cpu_*, gv_timeout_to_print_*, gv_reset_to_print_* (ms
    summaries; * = runc, gvisor), gv_memory_* and gv_memory_stats_* (MiB summaries of the idle
    warm sandbox), each with its ratio gv_*_ratio (median gvisor / median runc)."""
    sys.path.insert(0, str(ROOT / "tests" / "engines"))
    import enginehub  # tests/engines/enginehub.py (needs requests: run through tests/bench/run)

    if subprocess.run(["docker", "image", "inspect", NODE_IMAGE], capture_output=True).returncode != 0:
        raise RuntimeError("no %s image: build it with docker/build-images --engine-node" % NODE_IMAGE)
    F = {"gv_runsc_args": RUNSC_ARGS}
    work = tempfile.mkdtemp(prefix="runbox-bench-gvisor-")
    log("gvisor: a nested dockerd with runc and runsc (%s)" % RUNSC_ARGS)
    with enginehub.EngineCluster(n=1, prefix="runbox-test-engine-bench",
                                 node_env={0: {"RUNBOX_NODE_RUNSC": RUNSC_ARGS}}) as cl:
        rb = Runboxd(binary, work, 1, ["--engine", "n1=%s,runtimes=runc+runsc" % cl.nodes[0].url,
                                       "--engine-tls-ca", str(cl.ca_pem), "--engine-tls-cert", str(cl.client_cert),
                                       "--engine-tls-key", str(cl.client_key), "--pool-bash-size", "0",
                                       "--pool-other-isolation-size", "1", "--docker-timeout", "20"],
                     name="runboxd-gvisor")
        c = Client(rb.port, timeout=300)
        b = _Bench(c, cl, create_session, delete_session, rb)
        try:
            b.wait_pools()

            def put(key, by_kind, summary=_summary):  # at the end of its phase (the load then)
                for kind, _ in KINDS:
                    F["%s_%s" % (key, kind)] = summary(by_kind[kind])
                F[key + "_ratio"] = _median(by_kind["gvisor"]) / _median(by_kind["runc"])

            hit, mem, mem_stats = _pool_hits(b, n, log)
            put("gv_create_hit", hit)
            put("gv_memory", mem, _mem_summary)
            put("gv_memory_stats", mem_stats, _mem_summary)
            put("gv_create_miss", _pool_misses(b, n, log))
            before = b.unwarmed()
            whole, cell, cpu = _first_plots(b, n, log)
            F["gv_first_plot_unwarmed"] = b.unwarmed() - before
            put("gv_first_plot", whole)
            put("gv_first_plot_cell", cell)
            put("gv_first_plot_cpu", cpu)
            sids = _live_sessions(b)
            put("gv_exec", _round_trips(b, sids, 20 * n, log))
            after, F["gv_timeout_resets"] = _timeouts(b, sids, n, log)
            put("gv_timeout_to_print", {k: after[("timeout", k)] for k, _ in KINDS})
            put("gv_reset_to_print", {k: after[("reset", k)] for k, _ in KINDS})
            for sid in sids.values():
                delete_session(c, sid)
        finally:
            roomlib.delete_live_sessions(c, delete_session)  # a failed run leaves no session behind
            c.close()
            rb.stop()
    if "Sanitizer" not in open(rb.log_path).read():
        shutil.rmtree(work, ignore_errors=True)
    return F


def rows(F, fmt):
    """The report's rows for these figures (name, n, min, median, p99, unit, load, target)."""
    out = []
    lat = roomlib.row_adder(F, fmt, out)
    if not F or "gv_create_hit_runc" not in F:
        return out
    for key, name, target in FIGURES:
        lat(name + ", runc", key + "_runc")
        lat("  same, gVisor", key + "_gvisor")
        out.append(("  ratio gVisor / runc (median)", None, "", fmt(F.get(key + "_ratio")), "", "x", "", target))
    for key, name in (("gv_memory", "idle warm sandbox memory (stats usage)"),
                      ("gv_memory_stats", "  usage - inactive file (docker stats)")):
        for kind, label in (("runc", ", runc"), ("gvisor", ", gVisor")):
            m = F.get("%s_%s" % (key, kind)) or {}
            out.append((name + label, m.get("n"), fmt(m.get("min_mib"), 1), fmt(m.get("median_mib"), 1),
                        fmt(m.get("max_mib"), 1), "MiB", "", ""))
        out.append(("  ratio gVisor / runc (median)", None, "", fmt(F.get(key + "_ratio")), "", "x", "", ""))
    if F.get("gv_first_plot_unwarmed"):
        out.append(("  warning: pool sandboxes handed out before their preload", F["gv_first_plot_unwarmed"], "", "",
                    "", "", "", "the plot figures include those imports"))
    return out

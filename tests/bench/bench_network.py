"""Network by policy, measured (tests/bench/run; docs/network.md): a networked session's create
time and memory beside a sealed one, and a 10 MB download and a `pip install` of a small wheel
through the session's egress proxy beside the same from a plain container on the same network.

The "internet" is the network tests' own (tests/network/inet.py): an --internal Docker network
of the benchmark's, with servers under .test names; nothing else is ever contacted. The
download and install are timed inside the containers (the code's own clock), so that what is
compared is the path through the proxy, not runboxd's or Docker's overhead.
"""

import os
import statistics
import subprocess
import sys
import tempfile
import time

import roomlib  # tests/bench/roomlib.py
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "network"))

BIG = 10 * 1024 * 1024
FETCH = ("import time, urllib.request\n"
         "t = time.perf_counter()\n"
         "n = len(urllib.request.urlopen('http://www.example.test/big?bytes=%d', timeout=60).read())\n"
         "assert n == %d, n\n"
         "print('%%.3f' %% ((time.perf_counter() - t) * 1000))\n" % (BIG, BIG))
PIP = ("import subprocess, sys, tempfile, time\n"
       "d = tempfile.mkdtemp()\n"
       "t = time.perf_counter()\n"
       "subprocess.run([sys.executable, '-m', 'pip', 'install', '-q', '--disable-pip-version-check', '--no-cache-dir',\n"
       "                '--index-url', 'https://pypi.example.test/simple', '--cert', CA, '--target', d, 'rbnetpkg'],\n"
       "               check=True)\n"
       "print('%.3f' % ((time.perf_counter() - t) * 1000))\n")


def _median(xs):
    return statistics.median(xs) if xs else None


_summary = roomlib.summary


def _container_mib(cid):
    """Memory in use by container cid (cgroup v1 usage minus page cache, as docker stats)."""
    out = subprocess.run(["docker", "stats", "--no-stream", "--format", "{{.MemUsage}}", cid], capture_output=True,
                         text=True, timeout=60).stdout.strip().split("/")[0].strip()
    units = {"KiB": 1 / 1024, "MiB": 1, "GiB": 1024, "B": 1 / (1024 * 1024)}
    for u, f in units.items():
        if out.endswith(u):
            return float(out[: -len(u)]) * f
    return None


def run(Runboxd, Client, create_session, delete_session, binary, n, log):
    """The figures (a dict): net_create_sealed, net_create_networked (ms summaries),
    net_memory_sandbox_mib, net_memory_proxy_mib, net_fetch_proxy / _plain and net_pip_proxy /
    _plain (ms summaries) and their ratios."""
    import inet  # tests/network/inet.py (needs tests/integration/rbtest.py)

    F = {}
    work = Path(tempfile.mkdtemp(prefix="runbox-bench-net-"))
    net = inet.Inet(work)
    net.start()
    rb = None
    try:
        cidrs = ",".join(net.cidr(r) for r in ("www", "pypi"))
        rb = Runboxd(binary, str(work), 0, ["--egress=true", "--egress-network=" + net.network,
                                            "--egress-cidr=" + cidrs,
                                            "--egress-allow=www.example.test,pypi.example.test"],
                     name="runboxd-network")
        c = Client(rb.port)
        sealed, networked, sids = [], [], []
        log("network: session create, sealed and networked x%d each (no warm pool)" % n)
        for _ in range(n):
            dt, s = create_session(c, {"language": "python"})
            sealed.append(dt * 1000)
            sids.append(s["session_id"])
            dt, s = create_session(c, {"language": "python", "execution_options": {"network": True}})
            networked.append(dt * 1000)
            sids.append(s["session_id"])
        F["net_create_sealed"] = _summary(sealed)
        F["net_create_networked"] = _summary(networked)
        sid = sids[-1]
        F["net_memory_sandbox_mib"] = _container_mib(s["container_id"])
        F["net_memory_proxy_mib"] = _container_mib("runbox-net-%s-proxy" % sid)
        for x in sids[:-1]:
            delete_session(c, x)
        def in_session(code):
            st, doc = c.json("POST", "/execute", {"session_id": sid, "code": code, "wait": True, "timeout": 120})
            text = "".join(o.get("text", "") for o in doc.get("outputs", []) if o.get("name") == "stdout")
            if doc.get("status") != "completed" or not text.strip():
                raise RuntimeError("network bench cell failed: %r" % (doc,))
            return float(text.strip().splitlines()[-1])

        # the test CA into the session, for pip's --cert
        in_session("open('/workspace/ca.pem', 'w').write(%r)\nprint(1)" % net.ca_text)

        # the baseline: one long-lived container of the same image, limits and user as a sandbox,
        # directly on the network (no proxy), so that both sides run warm
        base = "%s-bench-plain" % net.network
        inet.docker("run", "-d", "--name", base, *net.labels, "--network", net.network, "--read-only", "--tmpfs",
                    "/tmp", "--user", "1000:1000", "--memory", "512m", "--cpus", "1", "--cap-drop", "ALL",
                    "-v", "%s:/ca:ro" % net.data, "--entrypoint", "sleep", inet.IMAGE, "infinity")

        def plain(code):
            r = subprocess.run(["docker", "exec", "-e", "HOME=/tmp", base, "python3", "-c",
                                "CA = '/ca/ca.pem'\n" + code], capture_output=True, text=True, timeout=300)
            if r.returncode != 0:
                raise RuntimeError("plain container failed: %s" % r.stderr[-500:])
            return float(r.stdout.strip().splitlines()[-1])

        log("network: 10 MB download and pip install, through the proxy and plain, x%d each" % n)
        fp, fb, pp, pb = [], [], [], []
        for i in range(n + 1):  # the first of each is a warm-up
            a, b = in_session(FETCH), plain(FETCH)
            c2, d = in_session("CA = '/workspace/ca.pem'\n" + PIP), plain(PIP)
            if i:
                fp.append(a), fb.append(b), pp.append(c2), pb.append(d)
        F["net_fetch_proxy"], F["net_fetch_plain"] = _summary(fp), _summary(fb)
        F["net_pip_proxy"], F["net_pip_plain"] = _summary(pp), _summary(pb)
        F["net_fetch_ratio"] = _median(fp) / _median(fb)
        F["net_pip_ratio"] = _median(pp) / _median(pb)
        delete_session(c, sid)
        c.close()
    finally:
        if rb is not None:
            rb.stop()
        net.stop()
    return F


def rows(F, fmt):
    """The report's rows for these figures (name, n, min, median, p99, unit, load, target)."""
    out = []
    lat = roomlib.row_adder(F, fmt, out)
    if not F:
        return out
    lat("session create, sealed (no pool)", "net_create_sealed")
    lat("session create, networked (+ its proxy)", "net_create_networked")
    out.append(("  memory: sandbox / its egress proxy", None, "", "%s / %s" % (
        fmt(F.get("net_memory_sandbox_mib"), 1), fmt(F.get("net_memory_proxy_mib"), 1)), "", "MiB", "", ""))
    lat("10 MB download through the proxy", "net_fetch_proxy")
    lat("  baseline: the same, plain network", "net_fetch_plain")
    out.append(("  ratio (median)", None, "", fmt(F.get("net_fetch_ratio")), "", "x", "", "<= 1.2"))
    lat("pip install (small wheel) through the proxy", "net_pip_proxy")
    lat("  baseline: the same, plain network", "net_pip_plain")
    out.append(("  ratio (median)", None, "", fmt(F.get("net_pip_ratio")), "", "x", "", "<= 1.2"))
    return out

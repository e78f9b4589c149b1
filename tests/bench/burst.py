"""Bursts of new sessions (issue 41), python3 stdlib only; run through `tests/bench/run --burst`.

Measures what an evaluation harness sees when it asks for many sessions: the time from the
create call to the answer of the first command, for N sessions (100; --quick 20) in three modes:
one at a time, one every 200 ms, and all at once. Each mode runs twice side by side, first the
bare-container baseline, then runboxd:
  - baseline: `POST /containers/create` + `start` + `exec` (create + start) of
    `python3 -c 'print(1)'` in a container of the same image, through the Engine API (no CLI);
  - runbox REST: `POST /sessions` (python, default options) then `POST /execute` print(1) with
    `wait: true`;
  - runbox E2B (unless --burst-no-e2b): `POST /e2b/sandboxes` then the code interpreter's `POST /e2b/execute`
    print(1), as the e2b-code-interpreter SDK's create + run_code do.
Sessions and containers stay until the mode ends (a burst holds them all at once), then go.
Reports p50 / p95 / p99 (nearest rank) and the failures of each, with the load average; a
failed sample counts as a failure and is left out of the percentiles. A neighbour session
created before the burst runs print(1) in a loop during the all-at-once mode: its p99 beside its
idle p99.
"""
import json
import os
import threading
import time

from benchlib import IMAGE, Client, Engine, load_average, log, now

MODES = (("sequential", "one at a time"), ("paced", "one every 200 ms"), ("burst", "all at once"))
PACE_S = 0.2


def pct(samples, p):
    s = sorted(samples)
    if not s:
        return None
    return s[max(0, min(len(s) - 1, int(round(p / 100.0 * len(s) + 0.5)) - 1))]


def stats(samples, failures, extra=None):
    out = {"n": len(samples), "failures": failures, "load1": (load_average() or [None])[0]}
    for p in (50, 95, 99):
        v = pct(samples, p)
        out["p%d_ms" % p] = v * 1e3 if v is not None else None
    out.update(extra or {})
    return out


# ---- one sample of each kind: returns (seconds, handle to clean up) or raises ----------------

def demux(raw):
    """(stdout, stderr) of an Engine API exec's framed output (8-byte headers)."""
    out, err = b"", b""
    while len(raw) >= 8:
        n = int.from_bytes(raw[4:8], "big")
        if raw[0] == 2:
            err += raw[8:8 + n]
        else:
            out += raw[8:8 + n]
        raw = raw[8 + n:]
    return out, err


class Bare:
    """The baseline: a container of the image created, started and exec'd through the Engine API."""
    name = "bare container"

    def __init__(self):
        self.conf = {"Image": IMAGE, "Entrypoint": ["sleep", "infinity"], "Cmd": [], "User": "1000",
                     "Labels": {"runbox.test": "1"}, "NetworkDisabled": True,
                     "HostConfig": {"NetworkMode": "none", "Init": True, "LogConfig": {"Type": "none"}}}
        self.seq = 0
        self.lock = threading.Lock()

    def one(self):
        eng = Engine()
        with self.lock:
            self.seq += 1
            name = "runbox-test-bench-burst-%d-%d" % (os.getpid(), self.seq)
        t0 = now()
        st, body = eng.api("POST", "/containers/create?name=" + name, self.conf)
        if st != 201:
            raise RuntimeError("create: %s %r" % (st, body))
        cid = body["Id"]
        try:
            st, body = eng.api("POST", "/containers/%s/start" % cid)
            if st not in (204, 304):
                raise RuntimeError("start: %s %r" % (st, body))
            st, body = eng.api("POST", "/containers/%s/exec" % cid,
                               {"Cmd": ["python3", "-c", "print(1)"], "AttachStdout": True, "AttachStderr": True})
            if st != 201:
                raise RuntimeError("exec create: %s %r" % (st, body))
            eng.conn.request("POST", eng.prefix + "/exec/%s/start" % body["Id"], body=b'{"Detach":false,"Tty":false}',
                             headers={"Content-Type": "application/json"})
            r = eng.conn.getresponse()
            raw = r.read()
            dt = now() - t0
            if r.status != 200 or demux(raw)[0] != b"1\n":
                raise RuntimeError("exec start: %s %r" % (r.status, raw[:200]))
            return dt, cid
        except BaseException:
            self.drop(cid)
            raise
        finally:
            eng.conn.close()

    def drop(self, cid):
        eng = Engine()
        eng.api("DELETE", "/containers/%s?force=1&v=1" % cid)
        eng.conn.close()


class Rest:
    name = "runbox REST"

    def __init__(self, port):
        self.port = port

    def one(self):
        c = Client(self.port, timeout=300)
        try:
            t0 = now()
            st, s = c.json("POST", "/sessions", {"language": "python"})
            if st not in (200, 201) or not s or s.get("status") != "ready":
                raise RuntimeError("create: %s %r" % (st, s))
            sid = s["session_id"]
            st, r = c.json("POST", "/execute", {"session_id": sid, "code": "print(1)", "wait": True})
            dt = now() - t0
            if st != 200 or not r or r.get("status") != "completed" or r.get("stdout") != "1\n":
                self.drop(sid)
                raise RuntimeError("execute: %s %r" % (st, r))
            return dt, sid
        finally:
            c.close()

    def drop(self, sid):
        c = Client(self.port)
        try:
            c.json("DELETE", "/sessions/" + sid)
        finally:
            c.close()


class E2b:
    """E2B's create + run_code as the SDK sends them (E2B-WIRE.md): POST /e2b/sandboxes, then the
    code interpreter's POST /execute (E2B_SANDBOX_URL=runboxd's /e2b: the sandbox in headers),
    read to its end. Without --api-keys-file runboxd takes any key."""
    name = "runbox E2B"

    def __init__(self, port, key):
        self.port = port
        self.key = key

    def one(self):
        c = Client(self.port, timeout=300)
        try:
            t0 = now()
            st, _, raw = c.call("POST", "/e2b/sandboxes", {"templateID": "code-interpreter-v1", "timeout": 600},
                                {"X-API-Key": self.key})
            sb = json.loads(raw) if raw else None
            if st not in (200, 201) or not sb or "sandboxID" not in sb:
                raise RuntimeError("create: %s %r" % (st, raw[:300]))
            sid = sb["sandboxID"]
            headers = {"E2b-Sandbox-Id": sid, "E2b-Sandbox-Port": "49999"}
            if sb.get("envdAccessToken"):
                headers["X-Access-Token"] = sb["envdAccessToken"]
            st, _, raw = c.call("POST", "/e2b/execute", {"code": "print(1)"}, headers)
            dt = now() - t0
            if st != 200 or b'"1\\n"' not in raw:
                self.drop(sid)
                raise RuntimeError("run_code: %s %r" % (st, raw[:300]))
            return dt, sid
        finally:
            c.close()

    def drop(self, sid):
        c = Client(self.port)
        try:
            c.call("DELETE", "/e2b/sandboxes/" + sid, None, {"X-API-Key": self.key})
        finally:
            c.close()


# ---- the modes ------------------------------------------------------------------------------

def run_mode(kind, mode, n):
    """n samples of kind in mode; then every handle is dropped. Returns (samples, failures, errors)."""
    samples, handles, errors = [], [], []
    lock = threading.Lock()

    def one():
        try:
            dt, h = kind.one()
            with lock:
                samples.append(dt)
                handles.append(h)
        except Exception as e:
            with lock:
                errors.append(str(e)[:300])

    if mode == "sequential":
        for _ in range(n):
            one()
    else:
        threads = []
        start = now()
        for i in range(n):
            if mode == "paced":
                delay = start + i * PACE_S - now()
                if delay > 0:
                    time.sleep(delay)
            t = threading.Thread(target=one, daemon=True)
            t.start()
            threads.append(t)
        for t in threads:
            t.join(600)
    drops = [threading.Thread(target=kind.drop, args=(h,), daemon=True) for h in handles]
    for i in range(0, len(drops), 8):
        for t in drops[i:i + 8]:
            t.start()
        for t in drops[i:i + 8]:
            t.join(120)
    return samples, len(errors), errors[:3]


class Neighbour:
    """A session created before a burst that runs print(1) in a loop while the burst lasts."""

    def __init__(self, port):
        self.c = Client(port, timeout=300)
        st, s = self.c.json("POST", "/sessions", {"language": "python"})
        if st not in (200, 201):
            raise RuntimeError("neighbour: %s %r" % (st, s))
        self.sid = s["session_id"]
        self.samples = []
        self.stop_flag = threading.Event()
        self.thread = None
        self.last_error = None

    def exec_once(self):
        t0 = now()
        st, r = self.c.json("POST", "/execute", {"session_id": self.sid, "code": "print(1)", "wait": True})
        if st == 200 and r and r.get("stdout") == "1\n":
            return now() - t0
        self.last_error = "%s %r" % (st, r)
        return None

    def idle(self, n):
        out = [self.exec_once() for _ in range(n)]
        return [x for x in out if x is not None]

    def start(self):
        def loop():
            while not self.stop_flag.is_set():
                dt = self.exec_once()
                if dt is not None:
                    self.samples.append(dt)
                time.sleep(0.05)
        self.thread = threading.Thread(target=loop, daemon=True)
        self.thread.start()

    def stop(self):
        self.stop_flag.set()
        self.thread.join(60)
        return self.samples

    def close(self):
        self.c.json("DELETE", "/sessions/" + self.sid)
        self.c.close()


def wait_settled(port, pool_size, timeout=300):
    """Before each mode: the pool refilled (what a fresh burst meets) and the host calmer."""
    c = Client(port)
    end = time.time() + timeout
    try:
        while time.time() < end:
            _, h = c.json("GET", "/health")
            p = (h or {}).get("pool") or {}
            if p.get("ready", 0) >= pool_size and p.get("starting", 0) == 0:
                return
            time.sleep(0.2)
    finally:
        c.close()


def run(port, n, pool_size, e2b_key=None, modes=None, tag=""):
    """The three modes (or those named) for the baseline and runboxd on port; returns figures."""
    F = {}
    kinds = [Bare(), Rest(port)] + ([E2b(port, e2b_key)] if e2b_key else [])
    for mode, what in MODES:
        if modes and mode not in modes:
            continue
        for kind in kinds:
            if not isinstance(kind, Bare):
                wait_settled(port, pool_size)
            neighbour = None
            if mode == "burst" and isinstance(kind, Rest):
                neighbour = Neighbour(port)
                idle = neighbour.idle(20)
                neighbour.start()
            log("burst%s: %s, %s x%d" % (tag, kind.name, what, n))
            samples, failures, errors = run_mode(kind, mode, n)
            extra = {"errors": errors} if errors else {}
            if neighbour is not None:
                during = neighbour.stop()
                neighbour.close()
                extra["neighbour_idle_p99_ms"] = (pct(idle, 99) or 0) * 1e3
                extra["neighbour_burst_p99_ms"] = (pct(during, 99) or 0) * 1e3
                extra["neighbour_burst_n"] = len(during)
                if neighbour.last_error:
                    extra["neighbour_error"] = neighbour.last_error[:300]
            key = "burst_%s_%s" % (mode, kind.name.replace("runbox ", "").replace(" ", "_").lower())
            F[key] = stats(samples, failures, extra)
            log("  p50 %s p95 %s p99 %s ms, %d failures %s" % (
                fmt(F[key]["p50_ms"]), fmt(F[key]["p95_ms"]), fmt(F[key]["p99_ms"]), failures, errors[:1]))
    return F


def fmt(v):
    return "-" if v is None else ("%.0f" % v if v >= 10 else "%.1f" % v)


def rows(F):
    """Lines of the burst table: mode, what, n, p50 / p95 / p99, failures, load."""
    out = []
    for mode, what in MODES:
        for kind in ("bare_container", "rest", "e2b"):
            f = F.get("burst_%s_%s" % (mode, kind))
            if not f:
                continue
            line = "%-18s %-15s n=%-3d p50 %7s  p95 %7s  p99 %7s ms  failures %d  load %s" % (
                what, kind, f["n"] + f["failures"], fmt(f["p50_ms"]), fmt(f["p95_ms"]), fmt(f["p99_ms"]),
                f["failures"], f["load1"])
            out.append(line)
            if "neighbour_idle_p99_ms" in f:
                out.append("%-18s %-15s neighbour print(1) p99: idle %s ms, during the burst %s ms (n=%d)" % (
                    "", "", fmt(f["neighbour_idle_p99_ms"]), fmt(f["neighbour_burst_p99_ms"]),
                    f["neighbour_burst_n"]))
    return out

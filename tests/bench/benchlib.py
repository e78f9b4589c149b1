"""What bench.py (run it through tests/bench/run) and its helper modules share, python3 stdlib only:
the clock, the summary of samples, the log, the host's load average and available memory, the
JSON clients of runboxd (REST, MCP) and of Docker's Engine API over its unix socket, and a runboxd
of the benchmark's own (a free loopback port, a fresh database) with its session and execute calls.
The rooms' benchmarks (bench_NAME.py) are handed Runboxd, Client, create_session, delete_session and
log by bench.py's run_rooms()."""
import http.client
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DOCKER_SOCK = "/var/run/docker.sock"
IMAGE = os.environ.get("RUNBOX_IMAGE", "runbox-sandbox:latest")


def now():
    return time.perf_counter()


def summary(samples):
    """min / median / p99 (nearest rank) of a list of seconds, in milliseconds."""
    s = sorted(samples)
    if not s:
        return None
    p99 = s[max(0, min(len(s) - 1, int(round(0.99 * len(s) + 0.5)) - 1))]
    return {"n": len(s), "min_ms": s[0] * 1e3, "median_ms": statistics.median(s) * 1e3, "p99_ms": p99 * 1e3,
            "load1": (load_average() or [None])[0]}


def log(msg):
    print("bench: " + msg, file=sys.stderr, flush=True)

def load_average():
    try:
        return [float(x) for x in open("/proc/loadavg").read().split()[:3]]
    except (OSError, ValueError):
        return None


def mem_available_mib():
    try:
        for line in open("/proc/meminfo"):
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) / 1024.0
    except (OSError, ValueError):
        pass
    return None


# ---- HTTP clients ---------------------------------------------------------------------------

class UnixHTTPConnection(http.client.HTTPConnection):
    def __init__(self, path, timeout=120):
        super().__init__("localhost", timeout=timeout)
        self.unix_path = path

    def connect(self):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(self.timeout)
        s.connect(self.unix_path)
        self.sock = s


class Client:
    """A keep-alive JSON client of runboxd."""

    def __init__(self, port, timeout=120):
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)

    def call(self, method, path, body=None, headers=None):
        h = {"Content-Type": "application/json"} if body is not None else {}
        h.update(headers or {})
        data = json.dumps(body).encode() if body is not None else None
        try:
            self.conn.request(method, path, body=data, headers=h)
            r = self.conn.getresponse()
        except (BrokenPipeError, ConnectionResetError, http.client.RemoteDisconnected):
            # runboxd (h2o) closes a keep-alive connection idle for 10 s, e.g. while a busy host
            # refills the pool: the request never reached it, so it is sent again once.
            self.conn.close()
            self.conn.request(method, path, body=data, headers=h)
            r = self.conn.getresponse()
        raw = r.read()
        return r.status, r.headers, raw

    def json(self, method, path, body=None):
        status, _, raw = self.call(method, path, body)
        return status, (json.loads(raw) if raw else None)

    def close(self):
        self.conn.close()


class Engine:
    """Docker Engine API over its unix socket (the baseline's own client, no CLI overhead)."""

    def __init__(self):
        self.conn = UnixHTTPConnection(DOCKER_SOCK)
        _, v = self.json("GET", "/version")
        self.prefix = "/v%s" % min(float(v.get("ApiVersion", "1.41")), 1.47)

    def json(self, method, path, body=None):
        h = {"Content-Type": "application/json"} if body is not None else {}
        self.conn.request(method, path, body=json.dumps(body).encode() if body is not None else None, headers=h)
        r = self.conn.getresponse()
        raw = r.read()
        return r.status, (json.loads(raw) if raw and raw[:1] in b"{[" else None)

    def api(self, method, path, body=None):
        return self.json(method, self.prefix + path, body)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# ---- runboxd --------------------------------------------------------------------------------

class Runboxd:
    def __init__(self, binary, workdir, pool_size, extra=(), name="runboxd"):
        self.log_path = os.path.join(workdir, name + ".log")
        self.db = os.path.join(workdir, name + ".db")
        self.port = free_port()
        # warn, not info: info logs every request, and the figures are for the server, not its log.
        args = [binary, "--listen", "127.0.0.1:%d" % self.port, "--db", self.db, "--image", IMAGE, "--pool-size",
                str(pool_size), "--max-sessions", "200", "--idle-timeout", "0", "--log-level", "warn", *extra]
        self.logf = open(self.log_path, "w")
        self.proc = subprocess.Popen(args, stdout=self.logf, stderr=subprocess.STDOUT)
        deadline = time.time() + 30
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError("runboxd exited at start-up:\n" + open(self.log_path).read())
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                break
            except OSError:
                if time.time() > deadline:
                    raise RuntimeError("runboxd did not start listening")
                time.sleep(0.02)

    def rss_mb(self):
        with open("/proc/%d/status" % self.proc.pid) as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024.0
        return None

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.logf.close()


def health(c):
    _, h = c.json("GET", "/health")
    return h


def wait_pool(c, size, timeout=120):
    end = time.time() + timeout
    while time.time() < end:
        p = health(c).get("pool") or {}
        if p.get("ready", 0) >= size:
            return p
        time.sleep(0.01)
    raise RuntimeError("the warm pool did not fill: %r" % health(c))


def create_session(c, body):
    t0 = now()
    status, s = c.json("POST", "/sessions", body)
    dt = now() - t0
    if status not in (200, 201) or not s or s.get("status") != "ready":
        raise RuntimeError("session create failed: %s %r" % (status, s))
    return dt, s


def delete_session(c, sid):
    c.json("DELETE", "/sessions/" + sid)


EXEC_OK = "1\n"


def execute(c, sid, code="print(1)"):
    t0 = now()
    status, r = c.json("POST", "/execute", {"session_id": sid, "code": code, "wait": True})
    dt = now() - t0
    ok = status == 200 and r and r.get("status") == "completed" and r.get("stdout") == EXEC_OK
    return dt, ok, (status, r)


# ---- MCP client -----------------------------------------------------------------------------

class Mcp:
    def __init__(self, port):
        self.c = Client(port)
        self.sid = None
        self.version = "2025-06-18"
        self.next_id = 1
        res = self.rpc("initialize", {"protocolVersion": self.version, "capabilities": {},
                                      "clientInfo": {"name": "runbox-bench", "version": "1"}})
        self.version = res.get("protocolVersion", self.version)
        self.notify("notifications/initialized")

    def headers(self):
        h = {"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": self.version}
        if self.sid:
            h["Mcp-Session-Id"] = self.sid
        return h

    def notify(self, method):
        status, _, _ = self.c.call("POST", "/mcp", {"jsonrpc": "2.0", "method": method}, self.headers())
        if status != 202:
            raise RuntimeError("MCP notification answered %d" % status)

    def rpc(self, method, params):
        rid = self.next_id
        self.next_id += 1
        status, headers, raw = self.c.call("POST", "/mcp", {"jsonrpc": "2.0", "id": rid, "method": method,
                                                            "params": params}, self.headers())
        if status != 200:
            raise RuntimeError("MCP %s answered %d: %s" % (method, status, raw[:200]))
        if headers.get("Mcp-Session-Id"):
            self.sid = headers["Mcp-Session-Id"]
        msgs = []
        if "text/event-stream" in (headers.get("Content-Type") or ""):
            for line in raw.decode().splitlines():
                if line.startswith("data:"):
                    msgs.append(json.loads(line[5:]))
        else:
            msgs.append(json.loads(raw))
        for m in msgs:
            if m.get("id") == rid:
                if "error" in m:
                    raise RuntimeError("MCP %s error: %r" % (method, m["error"]))
                return m["result"]
        raise RuntimeError("MCP %s: no response" % method)

    def execute(self, code="print(1)"):
        t0 = now()
        res = self.rpc("tools/call", {"name": "execute_code", "arguments": {"code": code}})
        dt = now() - t0
        sc = res.get("structuredContent") or {}
        ok = not res.get("isError") and (sc.get("stdout") == EXEC_OK if sc else
                                         any("1" in (x.get("text") or "") for x in res.get("content", [])))
        return dt, ok

"""Jupyter kernels, measured beside the real jupyter_kernel_gateway (tests/bench/run; docs/jupyter.md,
issue 25), both on the sandbox image and in the same run, the samples of each figure alternating
between the two:

- kernel start: `POST .../api/kernels` answered (runbox: a session from the warm pool), and until
  the kernel is ready (the websocket open and a `kernel_info_reply` in hand; the gateway answers the
  POST once the kernel's process is launched, before its Python has started);
- a new kernel's first cell that imports pandas and matplotlib and shows a plot: from the POST to
  the `display_data` with its PNG in hand;
- `print(1)` over the websocket, from the `execute_request` sent to `status: idle`, in a kernel
  that has run cells before; the gateway's also with TCP_NODELAY set on its websockets (a second
  gateway process in the same container, patched through a config file): tornado leaves Nagle's
  algorithm on, so the reply's last frame waits for the client's delayed ACK (~40 ms);
- 10 kernels started at once, each running one `print(1)`: until the last is idle (the burst), and
  each kernel's own time.

The gateway is jupyter_kernel_gateway (pinned below, with ipykernel) installed by the benchmark
without giving any container a network: the wheels are downloaded on the host (`pip download`,
into RUNBOX_BENCH_JKG_CACHE, default /var/cache/runbox/bench-jkg, kept for the next run), then a
container of the sandbox image, on an --internal Docker network of the benchmark's own, installs
them from that folder (mounted read-only; `pip install --no-index --user` into a tmpfs) and runs
`jupyter kernelgateway` with no token; the benchmark talks to it at the container's address on that
network, so that nothing in the container can reach anything else (and no docker-proxy sits in
the path). Its kernels get the stock inline matplotlib backend (the image sets MPLBACKEND=Agg for
runbox's runner) and the image's font cache, as runbox's sandboxes do. The container has no CPU
or memory limit (runbox's sandboxes have 1 CPU each). Times are the client's.

Docker objects it creates are named runbox-test-bench-jkg-<pid> and labelled runbox.test=1; they,
the kernels and runboxd are removed even when a figure fails.
"""

import hashlib
import http.client
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid

import roomlib  # tests/bench/roomlib.py

IMAGE = os.environ.get("RUNBOX_IMAGE", "runbox-sandbox:latest")
CACHE = os.environ.get("RUNBOX_BENCH_JKG_CACHE", "/var/cache/runbox/bench-jkg")
JKG_REQS = ("jupyter_kernel_gateway==3.0.1", "ipykernel==7.4.0")
JKG_PORT = 8888
POOL = 2  # runboxd's default --pool-size
CONCURRENT = 10
PLOT = "import pandas as pd, matplotlib.pyplot as plt\npd.DataFrame({'a': [1, 2, 3]}).plot()\nplt.show()"
DEADLINE = 180.0  # seconds any one answer may take (a bound, not a figure)

now = time.perf_counter


def _summary(seconds):
    s = roomlib.summary([x * 1000 for x in seconds])
    if s:
        s["load1"] = os.getloadavg()[0]
    return s


# ---- a Jupyter server over REST and its websocket ------------------------------------------------

class _Server:
    """One side of the comparison: a Jupyter kernel server at host:port under prefix."""

    def __init__(self, label, host, port, prefix):
        self.label, self.host, self.port, self.prefix = label, host, port, prefix
        self.live = set()  # kernels started and not yet deleted
        self.lock = threading.Lock()

    def conn(self):
        return http.client.HTTPConnection(self.host, self.port, timeout=DEADLINE)

    def request(self, conn, method, path, body=None):
        data = json.dumps(body).encode() if body is not None else None
        h = {"Content-Type": "application/json"} if body is not None else {}
        for attempt in (0, 1):
            try:
                conn.request(method, self.prefix + path, body=data, headers=h)
                r = conn.getresponse()
                break
            except (BrokenPipeError, ConnectionResetError, http.client.RemoteDisconnected):
                conn.close()  # a keep-alive connection the server closed while idle: sent again once
                if attempt:
                    raise
        raw = r.read()
        return r.status, (json.loads(raw) if raw else None)

    def start(self, conn):
        st, k = self.request(conn, "POST", "/api/kernels", {"name": "python3"})
        if st != 201 or not k or "id" not in k:
            raise RuntimeError("%s: POST /api/kernels: %s %r" % (self.label, st, k))
        with self.lock:
            self.live.add(k["id"])
        return k["id"]

    def delete(self, conn, kid):
        st, body = self.request(conn, "DELETE", "/api/kernels/" + kid)
        if st not in (204, 404):
            raise RuntimeError("%s: DELETE kernel: %s %r" % (self.label, st, body))
        with self.lock:
            self.live.discard(kid)

    def websocket(self, kid):
        from websockets.sync.client import connect  # the venv's websockets (tests/requirements.txt)
        return connect("ws://%s:%d%s/api/kernels/%s/channels" % (self.host, self.port, self.prefix, kid),
                       max_size=64 << 20, compression=None, open_timeout=DEADLINE, close_timeout=5)

    def delete_all(self):
        """Deletes what is left of the kernels this benchmark started (after a failure)."""
        conn = self.conn()
        try:
            for kid in list(self.live):
                try:
                    self.delete(conn, kid)
                except Exception:
                    conn.close()
        finally:
            conn.close()


def _message(msg_type, content):
    return {"header": {"msg_id": uuid.uuid4().hex, "msg_type": msg_type, "session": uuid.uuid4().hex,
                       "username": "bench", "date": "", "version": "5.3"},
            "parent_header": {}, "metadata": {}, "content": content, "channel": "shell"}


def _replies(ws, msg_id):
    """The messages answering msg_id, as they come (others are skipped), bounded by DEADLINE."""
    end = time.monotonic() + DEADLINE
    while True:
        left = end - time.monotonic()
        if left <= 0:
            raise RuntimeError("no answer to a request within %d s" % DEADLINE)
        m = json.loads(ws.recv(timeout=left))
        if (m.get("parent_header") or {}).get("msg_id") == msg_id:
            yield m


def _kernel_info(ws):
    m = _message("kernel_info_request", {})
    ws.send(json.dumps(m))
    for r in _replies(ws, m["header"]["msg_id"]):
        if (r.get("header") or {}).get("msg_type") == "kernel_info_reply":
            return r["content"]


def _cell(ws, code, want_png=False):
    """Runs code: (perf_counter when the PNG came, or None; perf_counter at status idle; stdout)."""
    m = _message("execute_request", {"code": code, "silent": False, "store_history": True,
                                     "user_expressions": {}, "allow_stdin": False, "stop_on_error": True})
    ws.send(json.dumps(m))
    png, out = None, []
    for r in _replies(ws, m["header"]["msg_id"]):
        t = (r.get("header") or {}).get("msg_type") or r.get("msg_type")
        c = r.get("content") or {}
        if t == "display_data" and "image/png" in (c.get("data") or {}) and png is None:
            png = now()
        elif t == "stream" and c.get("name") == "stdout":
            out.append(c.get("text", ""))
        elif t == "error":
            raise RuntimeError("the cell failed: %s: %s" % (c.get("ename"), c.get("evalue")))
        elif t == "status" and c.get("execution_state") == "idle":
            done = now()
            if want_png and png is None:
                raise RuntimeError("the plot cell showed no image/png")
            return png, done, "".join(out)


def _new_kernel(srv, conn):
    """One new kernel: (POST answered, ready, first plot's PNG in hand), seconds from the POST."""
    t0 = now()
    kid = srv.start(conn)
    t1 = now()
    ws = srv.websocket(kid)
    try:
        _kernel_info(ws)
        t2 = now()
        png, _, _ = _cell(ws, PLOT, want_png=True)
    finally:
        ws.close()
        srv.delete(conn, kid)
    return t1 - t0, t2 - t0, png - t0


def _burst(srv, k):
    """k kernels started at once, each running print(1): (until the last is idle, each kernel's time)."""
    barrier = threading.Barrier(k + 1)
    ends, errors, kids = [None] * k, [], []
    start = [0.0]

    def one(i):
        conn = srv.conn()
        try:
            barrier.wait(DEADLINE)
            kid = srv.start(conn)
            kids.append(kid)
            ws = srv.websocket(kid)
            try:
                _, done, out = _cell(ws, "print(1)")
            finally:
                ws.close()
            if out != "1\n":
                raise RuntimeError("print(1) printed %r" % out)
            ends[i] = done
        except Exception as e:
            errors.append(e)
        finally:
            conn.close()

    threads = [threading.Thread(target=one, args=(i,), daemon=True) for i in range(k)]
    for t in threads:
        t.start()
    barrier.wait(DEADLINE)
    start[0] = now()
    for t in threads:
        t.join(DEADLINE * 2)
    # the kernels are deleted once all are done (not while others still run), in parallel
    dels = [threading.Thread(target=lambda kid=kid: _delete_quietly(srv, kid), daemon=True) for kid in kids]
    for t in dels:
        t.start()
    for t in dels:
        t.join(DEADLINE)
    if errors:
        raise RuntimeError("%s: %d of %d kernels failed: %s" % (srv.label, len(errors), k, errors[0]))
    return max(ends) - start[0], [e - start[0] for e in ends]


def _delete_quietly(srv, kid):
    conn = srv.conn()
    try:
        srv.delete(conn, kid)
    except Exception:
        pass
    finally:
        conn.close()


# ---- the real jupyter_kernel_gateway --------------------------------------------------------------

def _docker(*args, check=True, timeout=300):
    r = subprocess.run(["docker", *args], capture_output=True, text=True, timeout=timeout)
    if check and r.returncode != 0:
        raise RuntimeError("docker %s: %s" % (args[0], (r.stderr or r.stdout).strip()[-1000:]))
    return r.stdout.strip()


def _wheels(log):
    """The gateway's wheels (and all they need) for the image's Python in CACHE, downloaded on the
    host unless an earlier run left them complete."""
    probe = _docker("run", "--rm", "--network", "none", "--entrypoint", "python3", IMAGE, "-c",
                    "import platform, sys; print('%d.%d' % sys.version_info[:2], platform.libc_ver()[1], "
                    "platform.machine())", timeout=120).split()
    py, libc, arch = probe[0], probe[1], probe[2]
    key = hashlib.sha256(json.dumps([JKG_REQS, py, libc, arch]).encode()).hexdigest()[:16]
    marker = os.path.join(CACHE, ".complete-" + key)
    if os.path.exists(marker):
        return False
    os.makedirs(CACHE, exist_ok=True)
    minor = int(libc.split(".")[1]) if libc.startswith("2.") else 17
    plats = ["manylinux_2_%d_%s" % (m, arch) for m in range(minor, 4, -1)]
    plats += ["manylinux2014_" + arch, "manylinux2010_" + arch, "manylinux1_" + arch]
    log("jupyter: pip download of %s for python %s (%s, glibc %s) into %s" % (" ".join(JKG_REQS), py, arch, libc,
                                                                                CACHE))
    cmd = [sys.executable, "-m", "pip", "download", "--disable-pip-version-check", "-q", "--only-binary=:all:",
           "--python-version", py, "--implementation", "cp", "--abi", "cp" + py.replace(".", ""), "-d", CACHE]
    for p in plats:
        cmd += ["--platform", p]
    r = subprocess.run(cmd + list(JKG_REQS), capture_output=True, text=True, timeout=900)
    if r.returncode != 0:
        raise RuntimeError("pip download failed: " + (r.stderr or r.stdout)[-1500:])
    with open(marker, "w") as f:
        f.write("\n".join(JKG_REQS) + "\n")
    return True


# The same gateway a second time, on JKG_PORT + 1, with TCP_NODELAY on its websockets: tornado does
# not set it (nor does jupyter_server), so a reply's last small frame waits for the client's delayed
# ACK (about 40 ms on Linux); the round trip is measured on both.
_NODELAY = """import tornado.websocket
_write = tornado.websocket.WebSocketHandler.write_message
def write_message(self, *args, **kwargs):
    if self.ws_connection is not None and not getattr(self, "_runbox_bench_nodelay", False):
        self.set_nodelay(True)
        self._runbox_bench_nodelay = True
    return _write(self, *args, **kwargs)
tornado.websocket.WebSocketHandler.write_message = write_message
"""

_JKG_SCRIPT = """set -e
mkdir -p /tmp/home /tmp/matplotlib
cp -a "$RUNBOX_MPL_SEED"/. /tmp/matplotlib/ 2>/dev/null || true
python3 -m pip install -q --user --break-system-packages --no-index --find-links /wheels --no-cache-dir \\
    --disable-pip-version-check --no-warn-script-location %s
echo runbox-bench: installed
cat > /tmp/nodelay.py <<'EOF'
%sEOF
/opt/jkg/bin/jupyter kernelgateway --KernelGatewayApp.ip=0.0.0.0 --KernelGatewayApp.port=%d --config=/tmp/nodelay.py &
exec /opt/jkg/bin/jupyter kernelgateway --KernelGatewayApp.ip=0.0.0.0 --KernelGatewayApp.port=%d
""" % (" ".join(JKG_REQS), _NODELAY, JKG_PORT + 1, JKG_PORT)


class _Gateway:
    """jupyter_kernel_gateway in a container of the sandbox image on an --internal network."""

    def __init__(self):
        self.name = "runbox-test-bench-jkg-%d" % os.getpid()
        self.network = None
        self.container = None

    def start(self):
        t0 = now()
        _docker("network", "create", "--internal", "--label", "runbox.test=1", self.name)
        self.network = self.name
        self.container = _docker(
            "run", "-d", "--name", self.name, "--label", "runbox.test=1", "--network", self.network,
            "--read-only", "--tmpfs", "/tmp:rw,nosuid,nodev,size=512m",
            "--tmpfs", "/opt/jkg:rw,exec,nosuid,nodev,size=1g", "--cap-drop", "ALL",
            "--security-opt", "no-new-privileges", "--init", "-v", "%s:/wheels:ro" % CACHE,
            "-e", "PYTHONUSERBASE=/opt/jkg", "-e", "HOME=/tmp/home",
            "-e", "MPLBACKEND=module://matplotlib_inline.backend_inline",
            "--entrypoint", "sh", IMAGE, "-c", _JKG_SCRIPT)
        ip = _docker("inspect", "-f", "{{range .NetworkSettings.Networks}}{{.IPAddress}}{{end}}", self.container)
        srv = _Server("jupyter_kernel_gateway", ip, JKG_PORT, "")
        nodelay = _Server("jupyter_kernel_gateway (TCP_NODELAY)", ip, JKG_PORT + 1, "")
        end = time.monotonic() + 600
        for s in (srv, nodelay):
            while True:
                try:
                    c = s.conn()
                    c.timeout = 2
                    st, v = s.request(c, "GET", "/api")
                    c.close()
                    if st == 200:
                        break
                except (OSError, http.client.HTTPException, ValueError):
                    pass
                state = _docker("inspect", "-f", "{{.State.Running}}", self.container, check=False)
                if state != "true" or time.monotonic() > end:
                    raise RuntimeError("the gateway did not start: " + self.logs())
                time.sleep(0.5)
        versions = json.loads(_docker(
            "exec", self.container, "python3", "-c",
            "import json, importlib.metadata as m; print(json.dumps({p: m.version(p) for p in "
            "('jupyter_kernel_gateway', 'ipykernel', 'jupyter_server', 'jupyter_client', 'ipython', 'pyzmq', "
            "'tornado')}))"))
        return srv, nodelay, now() - t0, versions

    def logs(self):
        r = subprocess.run(["docker", "logs", "--tail", "40", self.name], capture_output=True, text=True,
                           timeout=60)
        return (r.stdout + r.stderr)[-3000:]

    def stop(self):
        if self.container or self.network:
            subprocess.run(["docker", "rm", "-f", "-v", self.name], capture_output=True, timeout=120)
        if self.network:
            subprocess.run(["docker", "network", "rm", self.network], capture_output=True, timeout=120)
        self.container = self.network = None


# ---- the benchmark -------------------------------------------------------------------------------

def run(Runboxd, Client, create_session, delete_session, binary, n, log):
    """The figures (ms summaries, jupyter_<side>_<figure> with side runbox or jkg): _start (POST
    answered), _ready (websocket + kernel_info_reply), _first_plot, _print1, _burst10 (the burst's
    wall time), _burst10_each (each kernel's); jupyter_jkg_nodelay_print1 (the patched gateway);
    and jupyter_jkg_versions, jupyter_jkg_setup_s, jupyter_runbox_pool_misses."""
    F = {}
    work = tempfile.mkdtemp(prefix="runbox-bench-jupyter-")
    rb, rbsrv, jkg, jsrv, jnd = None, None, _Gateway(), None, None
    restore = None
    if threading.current_thread() is threading.main_thread():  # a SIGTERM still cleans up
        def on_term(signum, frame):
            raise SystemExit("bench_jupyter: terminated")
        restore = [signal.signal(signal.SIGTERM, on_term)]
    try:
        import websockets  # noqa: F401 (fails here, reported, when run outside the venv)

        fetched = _wheels(log)
        log("jupyter: jupyter_kernel_gateway in a container of %s (wheels %s)" %
            (IMAGE, "downloaded" if fetched else "from the cache"))
        jsrv, jnd, setup, versions = jkg.start()
        F["jupyter_jkg_setup_s"], F["jupyter_jkg_versions"] = setup, versions
        log("jupyter: gateway up in %.1f s (install + start): %s" % (setup, versions))
        rb = Runboxd(binary, work, POOL, name="runboxd-jupyter")
        rbsrv = _Server("runbox", "127.0.0.1", rb.port, "/jupyter")
        c = Client(rb.port)

        def pool():
            _, h = c.json("GET", "/health")
            return (h or {}).get("pool") or {}

        def settle():
            """Waits until runboxd's pool is full (its refills take a CPU: never during a sample)."""
            end = time.monotonic() + DEADLINE
            while pool().get("ready", 0) < POOL:
                if time.monotonic() > end:
                    raise RuntimeError("runboxd's warm pool did not fill")
                time.sleep(0.02)

        sides = (("runbox", rbsrv), ("jkg", jsrv))
        conns = {k: s.conn() for k, s in sides}
        settle()
        for k, s in sides:  # warm-up, not counted: the first kernel each ever starts
            _new_kernel(s, conns[k])
            settle()

        log("jupyter: new kernel -> ready -> first plot cell, x%d on each, alternating" % n)
        raw = {k: ([], [], []) for k, _ in sides}
        misses = 0
        for _ in range(n):
            for k, s in sides:
                settle()
                hits = pool().get("hits", 0)
                for lst, x in zip(raw[k], _new_kernel(s, conns[k])):
                    lst.append(x)
                if k == "runbox" and pool().get("hits", 0) != hits + 1:
                    misses += 1
        for k, _ in sides:
            for i, fig in enumerate(("start", "ready", "first_plot")):
                F["jupyter_%s_%s" % (k, fig)] = _summary(raw[k][i])
        F["jupyter_runbox_pool_misses"] = misses

        m = 20 * n
        log("jupyter: print(1) round trips over the websocket x%d on each, alternating (the gateway twice: as "
            "it is, and with TCP_NODELAY on its websockets)" % m)
        settle()
        kws = {}
        rtsides = sides + (("jkg_nodelay", jnd),)
        conns["jkg_nodelay"] = jnd.conn()
        try:
            for k, s in rtsides:
                kid = s.start(conns[k])
                kws[k] = (kid, s.websocket(kid))
            settle()
            rt = {k: [] for k, _ in rtsides}
            for i in range(10 + m):
                for k, _ in rtsides:
                    ws = kws[k][1]
                    t0 = now()
                    _, done, out = _cell(ws, "print(1)")
                    if out != "1\n":
                        raise RuntimeError("%s: print(1) printed %r" % (k, out))
                    if i >= 10:  # the first 10 are a warm-up
                        rt[k].append(done - t0)
        finally:
            for k, s in rtsides:
                if k in kws:
                    kws[k][1].close()
                    s.delete(conns[k], kws[k][0])
        for k, _ in rtsides:
            F["jupyter_%s_print1" % k] = _summary(rt[k])

        reps = max(2, n // 3)
        log("jupyter: %d kernels started at once, each running print(1), x%d on each (runboxd's pool: %d)"
            % (CONCURRENT, reps, POOL))
        walls = {k: [] for k, _ in sides}
        each = {k: [] for k, _ in sides}
        for _ in range(reps):
            for k, s in sides:
                settle()
                wall, ts = _burst(s, CONCURRENT)
                walls[k].append(wall)
                each[k].extend(ts)
        settle()
        for k, _ in sides:
            F["jupyter_%s_burst10" % k] = _summary(walls[k])
            F["jupyter_%s_burst10_each" % k] = _summary(each[k])
        for k in conns:
            conns[k].close()
        c.close()
    finally:
        for s in (rbsrv, jsrv, jnd):
            if s is not None:
                s.delete_all()
        if rb is not None:
            try:  # a failed run leaves no session behind
                c2 = Client(rb.port)
                _, live = c2.json("GET", "/sessions")
                for x in (live or {}).get("sessions", []):
                    delete_session(c2, x["session_id"])
                c2.close()
            except Exception:
                pass
            rb.stop()
        try:
            jkg.stop()
        finally:
            if restore is not None:
                signal.signal(signal.SIGTERM, restore[0] if restore[0] is not None else signal.SIG_DFL)
            shutil.rmtree(work, ignore_errors=True)
    return F


def rows(F, fmt):
    """The report's rows for these figures (name, n, min, median, p99, unit, load, target)."""
    out = []
    if not any(k.startswith("jupyter_") for k in F):
        return out

    def lat(name, key, target=""):
        v = F.get(key) or {}
        out.append((name, v.get("n"), fmt(v.get("min_ms")), fmt(v.get("median_ms")), fmt(v.get("p99_ms")), "ms",
                    fmt(v.get("load1"), 1), target))

    def ratio(fig, want, other="jkg"):
        a = (F.get("jupyter_runbox_" + fig) or {}).get("median_ms")
        b = (F.get("jupyter_%s_%s" % (other, fig)) or {}).get("median_ms")
        return "gateway/runbox %sx (target >= %s)" % (fmt(b / a, 1) if a and b else "-", want) if want else (
            "gateway/runbox %sx" % (fmt(b / a, 1) if a and b else "-"))

    jv = (F.get("jupyter_jkg_versions") or {}).get("jupyter_kernel_gateway", "?")
    gw = "  jupyter_kernel_gateway %s, same image" % jv
    lat("Jupyter kernel start, POST (runbox: pool hit)", "jupyter_runbox_start", ratio("start", "5x"))
    lat(gw, "jupyter_jkg_start")
    lat("Jupyter kernel start -> ready (ws + kernel_info)", "jupyter_runbox_ready", ratio("ready", ""))
    lat(gw, "jupyter_jkg_ready")
    lat("Jupyter new kernel -> first plot cell, PNG", "jupyter_runbox_first_plot", ratio("first_plot", "5x"))
    lat(gw, "jupyter_jkg_first_plot")
    lat("Jupyter print(1), execute_request -> idle", "jupyter_runbox_print1", ratio("print1", "1x"))
    lat(gw, "jupyter_jkg_print1")
    lat("  same, its websockets with TCP_NODELAY (patched)", "jupyter_jkg_nodelay_print1",
        ratio("print1", "1x", "jkg_nodelay"))
    lat("Jupyter %d kernels at once + print(1): all (pool %d)" % (CONCURRENT, POOL), "jupyter_runbox_burst10",
        ratio("burst10", ""))
    lat(gw, "jupyter_jkg_burst10")
    lat("  each kernel of the burst, runbox", "jupyter_runbox_burst10_each")
    lat(gw, "jupyter_jkg_burst10_each")
    if F.get("jupyter_runbox_pool_misses"):
        out.append(("  runbox kernel starts that missed the pool", None, "", str(F["jupyter_runbox_pool_misses"]),
                    "", "", "", "expected 0"))
    return out

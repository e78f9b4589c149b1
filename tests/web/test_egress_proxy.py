"""Tests of the web-page reader's egress proxy (docker/web/egress_proxy.py), run on this host:
the real proxy process on loopback in front of a small HTTP server on 127.0.0.1 that the test
starts (allowed with --allow 127.0.0.1/32 --allow-port PORT where a test needs it), plus the
address check as a pure function. Every byte goes to 127.0.0.1 only: refused targets never get
a connection. Run: python3 -m pytest tests/web/test_egress_proxy.py -q
"""

import http.server
import importlib.util
import ipaddress
import json
import queue
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

PROXY = Path(__file__).resolve().parents[2] / "docker" / "web" / "egress_proxy.py"

spec = importlib.util.spec_from_file_location("egress_proxy", PROXY)
egress_proxy = importlib.util.module_from_spec(spec)
spec.loader.exec_module(egress_proxy)

# ---- the address check (pure) ------------------------------------------------------------


@pytest.mark.parametrize(
    "address,reason",
    [
        ("127.0.0.1", "loopback address"),
        ("127.1.2.3", "loopback address"),
        ("::1", "loopback address"),
        ("::ffff:127.0.0.1", "loopback address"),
        ("10.0.0.1", "private address"),
        ("10.255.255.53", "private address"),
        ("172.16.0.1", "private address"),
        ("172.31.255.254", "private address"),
        ("192.168.1.1", "private address"),
        ("::ffff:192.168.1.1", "private address"),
        ("169.254.169.254", "link-local address"),
        ("100.64.0.1", "private address"),
        ("100.127.255.254", "private address"),
        ("0.0.0.0", "unspecified address"),
        ("0.1.2.3", "unspecified address"),
        ("::", "unspecified address"),
        ("fe80::1", "link-local address"),
        ("fc00::1", "private address"),
        ("fd12:3456::1", "private address"),
        ("224.0.0.1", "multicast address"),
        ("ff02::1", "multicast address"),
        ("255.255.255.255", "reserved address"),
        ("240.0.0.1", "reserved address"),
        ("192.0.2.1", "non-global address"),  # documentation
        ("198.18.0.1", "non-global address"),  # benchmarking
        ("2001:db8::1", "non-global address"),
        ("64:ff9b::a00:1", "private address"),  # NAT64 of 10.0.0.1
        ("64:ff9b::7f00:1", "loopback address"),  # NAT64 of 127.0.0.1
        ("64:ff9b::a9fe:a9fe", "link-local address"),  # NAT64 of 169.254.169.254
        ("2002:c0a8:101::1", "private address"),  # 6to4 of 192.168.1.1
        ("2002:7f00:1::1", "loopback address"),  # 6to4 of 127.0.0.1
        ("::7f00:1", "reserved address"),  # IPv4-compatible (deprecated) form of 127.0.0.1
    ],
)
def test_check_address_refuses(address, reason):
    assert egress_proxy.check_address(address) == reason


@pytest.mark.parametrize(
    "address", ["8.8.8.8", "1.1.1.1", "93.184.216.34", "2606:4700:4700::1111", "64:ff9b::808:808", "2002:808:808::1"]
)
def test_check_address_allows_global(address):
    assert egress_proxy.check_address(address) is None


def test_check_address_allow_list_wins():
    allow = [ipaddress.ip_network("127.0.0.1/32"), ipaddress.ip_network("172.18.0.0/16")]
    assert egress_proxy.check_address("127.0.0.1", allow) is None
    assert egress_proxy.check_address("::ffff:127.0.0.1", allow) is None  # judged as its IPv4 address
    assert egress_proxy.check_address("172.18.3.4", allow) is None
    assert egress_proxy.check_address("127.0.0.2", allow) == "loopback address"
    assert egress_proxy.check_address("172.19.0.1", allow) == "private address"
    assert egress_proxy.check_address("::1", allow) == "loopback address"


@pytest.mark.parametrize(
    "authority,expected",
    [
        ("example.com", ("example.com", 80)),
        ("Example.COM.:8080", ("example.com", 8080)),
        ("[::1]:443", ("::1", 443)),
        ("127.0.0.1:0", None),
        ("127.0.0.1:65536", None),
        ("user@127.0.0.1", None),
        ("[::1", None),
        ("exa mple.com", None),
        ("host:", None),
        ("", None),
    ],
)
def test_parse_authority(authority, expected):
    assert egress_proxy.parse_authority(authority, 80) == expected


# ---- the real proxy on loopback ----------------------------------------------------------


class Upstream(http.server.ThreadingHTTPServer):
    """An origin server on 127.0.0.1 that records the requests it is sent."""

    daemon_threads = True

    def __init__(self):
        super().__init__(("127.0.0.1", 0), UpstreamHandler)
        self.seen = []  # (method, path, headers dict (lower-case names), body)
        self.port = self.server_address[1]


class UpstreamHandler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive unless told to close

    def log_message(self, *args):
        pass

    def handle_any(self):
        body = b""
        if self.headers.get("Content-Length"):
            body = self.rfile.read(int(self.headers["Content-Length"]))
        elif self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            while True:
                size = int(self.rfile.readline().split(b";")[0], 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b""):
                        pass
                    break
                body += self.rfile.read(size)
                self.rfile.readline()
        self.server.seen.append((self.command, self.path, {k.lower(): v for k, v in self.headers.items()}, body))
        if self.path.startswith("/big"):
            payload = b"x" * 200_000
        elif self.path.startswith("/echo"):
            payload = json.dumps({"method": self.command, "body": body.decode()}).encode()
        else:
            payload = b"hello from upstream " + self.path.encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(payload)))
        self.send_header("Keep-Alive", "timeout=5")
        self.end_headers()
        self.wfile.write(payload)

    do_GET = do_POST = do_PUT = do_HEAD = handle_any


@pytest.fixture
def upstream():
    server = Upstream()
    t = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    t.start()
    yield server
    server.shutdown()
    server.server_close()


class ProxyProcess:
    """egress_proxy.py as runboxd starts it, listening on 127.0.0.1 (port chosen by the OS)."""

    def __init__(self, *args, max_bytes=10_000_000, max_connections=16, deadline=60):
        argv = [sys.executable, str(PROXY), "--listen", "127.0.0.1:0", "--max-bytes", str(max_bytes),
                "--max-connections", str(max_connections), "--connect-timeout", "3", "--deadline", str(deadline),
                *args]
        self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.events = queue.Queue()
        self.lines = []
        threading.Thread(target=self._read, daemon=True).start()
        ready = self.wait_event("ready", 10)
        assert ready["listen"].startswith("127.0.0.1:")
        self.port = int(ready["listen"].rsplit(":", 1)[1])

    def _read(self):
        for line in self.proc.stdout:
            self.lines.append(line)
            self.events.put(json.loads(line))  # every line must be one JSON object
        self.events.put(None)

    def wait_event(self, name, timeout=5.0):
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            try:
                ev = self.events.get(timeout=max(0.01, end - time.monotonic()))
            except queue.Empty:
                break
            if ev is None:
                break
            if ev["event"] == name:
                return ev
        raise AssertionError("no %s event; stdout so far: %r; stderr: %r" % (name, self.lines, self.stderr()))

    def no_event(self, name, wait=0.5):
        time.sleep(wait)
        while True:
            try:
                ev = self.events.get_nowait()
            except queue.Empty:
                return
            assert ev is None or ev["event"] != name, ev

    def stderr(self):
        if self.proc.poll() is None:
            return "(running)"
        return self.proc.stderr.read()

    def close(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def connect(self):
        s = socket.create_connection(("127.0.0.1", self.port), timeout=10)
        return s

    def exchange(self, data, s=None):
        """Sends DATA on a new connection and reads until the proxy closes it."""
        s = s or self.connect()
        with s:
            s.sendall(data)
            return read_all(s)


def read_all(s):
    out = b""
    while True:
        chunk = s.recv(65536)
        if not chunk:
            return out
        out += chunk


def split_response(raw):
    head, _, body = raw.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split(" ")[1])
    headers = {}
    for line in lines[1:]:
        k, _, v = line.partition(":")
        headers[k.strip().lower()] = v.strip()
    return status, headers, body


@pytest.fixture
def make_proxy():
    procs = []

    def make(*args, **kw):
        p = ProxyProcess(*args, **kw)
        procs.append(p)
        return p

    yield make
    for p in procs:
        p.close()


def allowed(upstream):
    return ["--allow", "127.0.0.1/32", "--allow-port", str(upstream.port)]


def test_get_absolute_form_is_forwarded_with_connection_close(upstream, make_proxy):
    proxy = make_proxy(*allowed(upstream))
    raw = proxy.exchange(
        b"GET http://127.0.0.1:%d/page?q=1 HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nConnection: keep-alive, X-Drop\r\n"
        b"Proxy-Connection: keep-alive\r\nProxy-Authorization: Basic eDp5\r\nX-Drop: 1\r\nKeep-Alive: 300\r\n"
        b"X-Keep: yes\r\nUser-Agent: test\r\n\r\n" % (upstream.port, upstream.port)
    )
    status, headers, body = split_response(raw)
    assert status == 200
    assert body == b"hello from upstream /page?q=1"
    assert headers["connection"] == "close"
    assert "keep-alive" not in headers  # the upstream's hop-by-hop header is not relayed
    method, path, seen, _ = upstream.seen[0]
    assert (method, path) == ("GET", "/page?q=1")
    assert seen["connection"] == "close"
    assert seen["host"] == "127.0.0.1:%d" % upstream.port
    assert seen["x-keep"] == "yes"
    for hop in ("proxy-connection", "proxy-authorization", "keep-alive", "x-drop"):
        assert hop not in seen, hop


def test_connect_tunnels(upstream, make_proxy):
    proxy = make_proxy(*allowed(upstream))
    with proxy.connect() as s:
        s.sendall(b"CONNECT 127.0.0.1:%d HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n\r\n" % (upstream.port, upstream.port))
        head = b""
        while b"\r\n\r\n" not in head:
            head += s.recv(1)
        assert head.startswith(b"HTTP/1.1 200 ")
        # inside the tunnel: a plain HTTP exchange with the upstream itself
        s.sendall(b"GET /tunnelled HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        status, _, body = split_response(read_all(s))
    assert status == 200
    assert body == b"hello from upstream /tunnelled"


def test_post_bodies_are_relayed(upstream, make_proxy):
    proxy = make_proxy(*allowed(upstream))
    raw = proxy.exchange(
        b"POST http://127.0.0.1:%d/echo HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\n\r\nhello" % upstream.port
    )
    assert json.loads(split_response(raw)[2]) == {"method": "POST", "body": "hello"}
    raw = proxy.exchange(
        b"PUT http://127.0.0.1:%d/echo HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n"
        b"3\r\nabc\r\n2;ext=1\r\nde\r\n0\r\n\r\n" % upstream.port
    )
    assert json.loads(split_response(raw)[2]) == {"method": "PUT", "body": "abcde"}


def refused_event(proxy):
    return proxy.wait_event("refused")


def test_loopback_is_refused_without_allow(upstream, make_proxy):
    proxy = make_proxy("--allow-port", str(upstream.port))
    raw = proxy.exchange(b"GET http://127.0.0.1:%d/ HTTP/1.1\r\nHost: x\r\n\r\n" % upstream.port)
    status, headers, body = split_response(raw)
    assert status == 403
    assert headers["x-runbox-refused"] == "loopback address"
    assert b"loopback address" in body
    assert refused_event(proxy) == {"event": "refused", "host": "127.0.0.1", "port": upstream.port,
                                    "address": "127.0.0.1", "reason": "loopback address"}
    assert upstream.seen == []


@pytest.mark.parametrize(
    "target,address,reason",
    [
        ("localhost", None, "loopback address"),  # a name: checked after resolution
        ("2130706433", "127.0.0.1", "loopback address"),  # 127.0.0.1 written as one number
        ("0x7f.1", "127.0.0.1", "loopback address"),
        ("[::ffff:127.0.0.1]", "::ffff:7f00:1", "loopback address"),  # judged as 127.0.0.1
        ("[::1]", "::1", "loopback address"),
        ("0.0.0.0", "0.0.0.0", "unspecified address"),
    ],
)
def test_loopback_in_disguise_is_refused(upstream, make_proxy, target, address, reason):
    proxy = make_proxy("--allow-port", str(upstream.port))
    for request in (b"GET http://%s:%d/ HTTP/1.1\r\nHost: x\r\n\r\n", b"CONNECT %s:%d HTTP/1.1\r\nHost: x\r\n\r\n"):
        raw = proxy.exchange(request % (target.encode(), upstream.port))
        status, headers, _ = split_response(raw)
        assert status == 403, raw
        assert headers["x-runbox-refused"] == reason
        ev = refused_event(proxy)
        assert ev["reason"] == reason
        assert ev["port"] == upstream.port
        if address:
            assert ev["address"] == address
        else:
            assert ipaddress.ip_address(ev["address"]).is_loopback
    assert upstream.seen == []


def test_allow_does_not_open_other_loopback_addresses(upstream, make_proxy):
    proxy = make_proxy("--allow", "127.0.0.2/32", "--allow-port", str(upstream.port))
    status, headers, _ = split_response(proxy.exchange(b"GET http://127.0.0.1:%d/ HTTP/1.1\r\n\r\n" % upstream.port))
    assert status == 403 and headers["x-runbox-refused"] == "loopback address"


def test_port_not_allowed(upstream, make_proxy):
    proxy = make_proxy("--allow", "127.0.0.1/32")  # the upstream's port is not 80/443 and not allowed
    for request in (b"GET http://127.0.0.1:%d/ HTTP/1.1\r\n\r\n", b"CONNECT 127.0.0.1:%d HTTP/1.1\r\n\r\n"):
        status, headers, _ = split_response(proxy.exchange(request % upstream.port))
        assert status == 403
        assert headers["x-runbox-refused"] == "port not allowed"
        assert refused_event(proxy) == {"event": "refused", "host": "127.0.0.1", "port": upstream.port,
                                        "address": None, "reason": "port not allowed"}
    assert upstream.seen == []


def test_unreachable_answers_502(make_proxy):
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proxy = make_proxy("--allow", "127.0.0.1/32", "--allow-port", str(port))
    status, _, _ = split_response(proxy.exchange(b"GET http://127.0.0.1:%d/ HTTP/1.1\r\n\r\n" % port))
    assert status == 502
    ev = proxy.wait_event("unreachable")
    assert ev["host"] == "127.0.0.1" and ev["port"] == port and ev["reason"]


def test_byte_cap(upstream, make_proxy):
    proxy = make_proxy(*allowed(upstream), max_bytes=5000)
    raw = proxy.exchange(b"GET http://127.0.0.1:%d/big HTTP/1.1\r\n\r\n" % upstream.port)
    assert raw.startswith(b"HTTP/1.1 200 ")
    assert 0 < len(raw) <= 5000  # the head counts too
    assert proxy.wait_event("byte_cap") == {"event": "byte_cap", "max_bytes": 5000}
    status, headers, _ = split_response(proxy.exchange(b"GET http://127.0.0.1:%d/x HTTP/1.1\r\n\r\n" % upstream.port))
    assert status == 403
    assert headers["x-runbox-refused"] == "byte cap reached"
    assert refused_event(proxy)["reason"] == "byte cap reached"
    proxy.no_event("byte_cap")  # logged once
    assert len(upstream.seen) == 1


def test_byte_cap_counts_across_connections(upstream, make_proxy):
    proxy = make_proxy(*allowed(upstream), max_bytes=1000)
    total = 0
    for _ in range(20):
        raw = proxy.exchange(b"GET http://127.0.0.1:%d/small HTTP/1.1\r\n\r\n" % upstream.port)
        total += len(raw) if raw.startswith(b"HTTP/1.1 200") else 0
    assert total <= 1000
    proxy.wait_event("byte_cap")


WATCH = b"GET /runbox/byte-cap HTTP/1.1\r\nHost: egress\r\n\r\n"  # fetch_page's byte-cap watch


def read_exactly(s, n):
    out = b""
    while len(out) < n:
        chunk = s.recv(n - len(out))
        assert chunk, "the connection ended after %d of %d bytes: %r" % (len(out), n, out[:200])
        out += chunk
    return out


def read_answer(s):
    """One answer of the proxy's own (Content-Length framed) on a connection that stays open."""
    raw = b""
    while b"\r\n\r\n" not in raw:
        chunk = s.recv(4096)
        assert chunk, raw
        raw += chunk
    status, headers, body = split_response(raw)
    return status, body + read_exactly(s, int(headers["content-length"]) - len(body))


def assert_open(s):
    """Nothing arrives on s, not even its end (the proxy holds it)."""
    s.settimeout(0.5)
    with pytest.raises(socket.timeout):
        s.recv(1)
    s.settimeout(10)


def test_byte_cap_watch_holds_what_the_cap_cut_until_it_closes(upstream, make_proxy):
    # fetch_page's watch: while it is open, a response the cap cut mid-body is not ended (Chromium
    # stops parsing a document whose body ends early); the watch says when the cap is reached
    proxy = make_proxy(*allowed(upstream), max_bytes=5000)
    with proxy.connect() as watch, proxy.connect() as cut:
        watch.sendall(WATCH)
        cut.sendall(b"GET http://127.0.0.1:%d/big HTTP/1.1\r\n\r\n" % upstream.port)
        assert read_exactly(cut, 5000).startswith(b"HTTP/1.1 200 ")  # the head counts too
        assert read_answer(watch) == (200, b"byte cap reached\n")
        assert proxy.wait_event("byte_cap") == {"event": "byte_cap", "max_bytes": 5000}
        assert_open(cut)
        # what comes after the cap is refused as without a watch, and ended
        status, headers, _ = split_response(proxy.exchange(b"GET http://127.0.0.1:%d/x HTTP/1.1\r\n\r\n"
                                                           % upstream.port))
        assert status == 403 and headers["x-runbox-refused"] == "byte cap reached"
        assert_open(cut)
        watch.close()  # released: the cut response ends, nothing more relayed
        assert read_all(cut) == b""
    assert len(upstream.seen) == 1  # the refused request never left


def test_byte_cap_watch_answers_at_once_when_the_cap_is_reached(upstream, make_proxy):
    proxy = make_proxy(*allowed(upstream), max_bytes=5000)
    # without a watch, what the cap cut ends at once
    assert 0 < len(proxy.exchange(b"GET http://127.0.0.1:%d/big HTTP/1.1\r\n\r\n" % upstream.port)) <= 5000
    with proxy.connect() as watch:
        watch.sendall(WATCH)
        assert read_answer(watch) == (200, b"byte cap reached\n")


def test_a_response_cut_within_its_head_is_not_held(upstream, make_proxy):
    # Chromium fails a response without a whole head at once: there is nothing to keep
    proxy = make_proxy(*allowed(upstream), max_bytes=20)
    with proxy.connect() as watch:
        watch.sendall(WATCH)
        # exchange() reads until the proxy ends the connection
        raw = proxy.exchange(b"GET http://127.0.0.1:%d/big HTTP/1.1\r\n\r\n" % upstream.port)
        assert len(raw) == 20 and raw.startswith(b"HTTP/1.1 200 "), raw
        assert read_answer(watch) == (200, b"byte cap reached\n")


def test_request_head_is_bounded(upstream, make_proxy):
    proxy = make_proxy(*allowed(upstream))
    big = b"GET http://127.0.0.1:%d/ HTTP/1.1\r\nX-Big: %s\r\n\r\n" % (upstream.port, b"a" * 70_000)
    status, _, _ = split_response(proxy.exchange(big))
    assert status == 431
    assert upstream.seen == []
    # a head just under the bound is fine
    ok = b"GET http://127.0.0.1:%d/ HTTP/1.1\r\nX-Big: %s\r\n\r\n" % (upstream.port, b"a" * 60_000)
    assert split_response(proxy.exchange(ok))[0] == 200


def test_one_request_per_connection(upstream, make_proxy):
    proxy = make_proxy(*allowed(upstream))
    with socket.socket() as other:  # a second origin the pipelined request names
        other.bind(("127.0.0.1", 0))
        other.listen()
        other_port = other.getsockname()[1]
        raw = proxy.exchange(
            b"GET http://127.0.0.1:%d/first HTTP/1.1\r\n\r\n"
            b"GET http://127.0.0.1:%d/second HTTP/1.1\r\n\r\n"
            b"GET http://127.0.0.1:%d/third HTTP/1.1\r\n\r\n" % (upstream.port, other_port, upstream.port)
        )
        other.settimeout(0.5)
        with pytest.raises(socket.timeout):
            other.accept()
    assert raw.count(b"HTTP/1.1 ") == 1
    assert split_response(raw)[2] == b"hello from upstream /first"
    time.sleep(0.2)
    assert [p for _, p, _, _ in upstream.seen] == ["/first"]


@pytest.mark.parametrize(
    "request_line",
    [
        b"GET ftp://127.0.0.1/file HTTP/1.1",
        b"GET / HTTP/1.1",  # origin-form
        b"GET https://127.0.0.1/ HTTP/1.1",  # https goes through CONNECT
        b"OPTIONS * HTTP/1.1",
        b"CONNECT 127.0.0.1 HTTP/1.1",  # no port
        b"GET http://user@127.0.0.1/ HTTP/1.1",
        b"GET http:///path HTTP/1.1",
        b"GARBAGE",
        b"GET http://127.0.0.1/ HTTP/2.0",
    ],
)
def test_bad_requests_answer_400(upstream, make_proxy, request_line):
    proxy = make_proxy(*allowed(upstream))
    status, _, _ = split_response(proxy.exchange(request_line + b"\r\nHost: 127.0.0.1\r\n\r\n"))
    assert status == 400
    assert upstream.seen == []


def test_conflicting_body_framing_answers_400(upstream, make_proxy):
    proxy = make_proxy(*allowed(upstream))
    raw = proxy.exchange(
        b"POST http://127.0.0.1:%d/echo HTTP/1.1\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n"
        b"0\r\n\r\n" % upstream.port
    )
    assert split_response(raw)[0] == 400
    assert upstream.seen == []


def test_connection_limit(upstream, make_proxy):
    proxy = make_proxy(*allowed(upstream), max_connections=2)
    idle = [proxy.connect(), proxy.connect()]  # two slots held (no request sent yet)
    try:
        time.sleep(0.3)
        status, _, _ = split_response(proxy.exchange(b"GET http://127.0.0.1:%d/ HTTP/1.1\r\n\r\n" % upstream.port))
        assert status == 503
        proxy.wait_event("connection_limit")
    finally:
        for s in idle:
            s.close()
    time.sleep(0.3)
    status, _, _ = split_response(proxy.exchange(b"GET http://127.0.0.1:%d/ HTTP/1.1\r\n\r\n" % upstream.port))
    assert status == 200


def test_deadline_ends_the_process(make_proxy):
    start = time.monotonic()
    proxy = make_proxy(deadline=1)
    held = proxy.connect()  # an open connection does not keep it alive
    try:
        assert proxy.proc.wait(10) == 0
    finally:
        held.close()
    assert time.monotonic() - start < 8
    ev = proxy.wait_event("stop")
    assert ev["reason"] == "deadline"


def test_sigterm_stops_with_a_stop_event(make_proxy):
    proxy = make_proxy()
    proxy.proc.terminate()
    assert proxy.proc.wait(5) == 0
    assert proxy.wait_event("stop")["reason"] == "signal"


def test_every_stdout_line_is_json_and_flushed(upstream, make_proxy):
    proxy = make_proxy("--allow-port", str(upstream.port))
    proxy.exchange(b"GET http://127.0.0.1:%d/ HTTP/1.1\r\n\r\n" % upstream.port)
    # the refused line arrives while the process still runs: it was flushed
    refused_event(proxy)
    assert proxy.proc.poll() is None
    for line in proxy.lines:
        assert line.endswith("\n") and isinstance(json.loads(line), dict)


def test_bad_arguments_fail():
    r = subprocess.run([sys.executable, str(PROXY), "--listen", "127.0.0.1:0", "--allow", "not-a-cidr",
                        "--max-bytes", "1", "--max-connections", "1", "--connect-timeout", "1", "--deadline", "1"],
                       capture_output=True, text=True, timeout=10)
    assert r.returncode == 2
    assert "not a CIDR" in r.stderr

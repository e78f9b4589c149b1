"""Tests of the egress proxy's secrets (docker/web/egress_secrets.py, egress_proxy.py --ca-dir), run
on this host: the real proxy process in policy mode on loopback, in front of HTTP and HTTPS
servers of the test's own on 127.0.0.1 (names resolved with --resolve, the address allowed with
--allow 127.0.0.1/32), which record every request's headers. The clients are the real ones:
urllib, requests and curl, through the proxy, trusting the bundle the proxy wrote. Plus the pure
parts (Scrubber, inject, host_agrees). Run: python3 -m pytest tests/web/test_egress_secrets.py -q
"""

import http.server
import json
import os
import queue
import shutil
import socket
import ssl
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
import requests

WEB = Path(__file__).resolve().parents[2] / "docker" / "web"
PROXY = WEB / "egress_proxy.py"
sys.path.insert(0, str(WEB))

import egress_policy  # noqa: E402
import egress_secrets  # noqa: E402

VALUE = "sk-test-0123456789abcdef-SECRET"


# ---- pure parts ------------------------------------------------------------------------------


def secret(name="api", hosts=("api.example.test",), header="Authorization", value="Bearer " + VALUE,
           scrub=(VALUE,)):
    return egress_secrets.parse_secrets([{"name": name, "hosts": list(hosts), "header": header, "value": value,
                                          "scrub": list(scrub)}], "s", egress_policy.parse_pattern)[0]


def test_scrubber_replaces_across_reads_with_the_same_length():
    sc = egress_secrets.Scrubber([secret()])
    data = ("x" * 10 + VALUE + "y" * 5 + VALUE).encode()
    for cut in range(1, len(data)):
        sc = egress_secrets.Scrubber([secret()])
        out = sc.feed(data[:cut]) + sc.feed(data[cut:]) + sc.flush()
        assert len(out) == len(data)
        assert VALUE.encode() not in out
        assert out.count(b"*" * len(VALUE)) == 2


def test_inject_replaces_the_placeholder_header_and_asks_for_identity():
    h = egress_secrets.inject([("Authorization", "Bearer runbox-secret-placeholder-api"), ("accept-encoding", "gzip"),
                               ("X-Other", "1")], [secret()])
    assert ("Authorization", "Bearer " + VALUE) in h
    assert ("Accept-Encoding", "identity") in h
    assert not any(v == "Bearer runbox-secret-placeholder-api" or v == "gzip" for _, v in h)


def test_bound_matches_names_and_ports():
    s = secret(hosts=("api.example.test", "*.svc.test:8443"))
    assert egress_secrets.bound([s], "API.example.test.", 443, (80, 443)) == [s]
    assert egress_secrets.bound([s], "x.svc.test", 8443, (80, 443)) == [s]
    assert egress_secrets.bound([s], "x.svc.test", 443, (80, 443)) == []
    assert egress_secrets.bound([s], "other.example.test", 443, (80, 443)) == []


@pytest.mark.parametrize("headers,ok", [([], True), ([("Host", "api.example.test")], True),
                                        ([("Host", "API.example.test:443")], True),
                                        ([("Host", "other.example.test")], False),
                                        ([("Host", "api.example.test:8443")], False),
                                        ([("Host", "api.example.test"), ("Host", "api.example.test")], False)])
def test_host_agrees(headers, ok):
    from egress_proxy import parse_authority

    assert egress_secrets.host_agrees(headers, "api.example.test", 443, 443, parse_authority) is ok


def test_parse_secrets_refuses_bad_entries_without_the_value():
    for bad in [{"name": "a"}, {"name": "a", "hosts": [], "header": "A", "value": "v", "scrub": []},
                {"name": "a", "hosts": ["x.test"], "header": "A B", "value": "v", "scrub": []},
                {"name": "a", "hosts": ["x.test"], "header": "A", "value": "v\r\nX: 1", "scrub": []}]:
        with pytest.raises(ValueError) as e:
            egress_secrets.parse_secrets([bad], "s", egress_policy.parse_pattern)
        assert "v\r\n" not in str(e.value)


# ---- the proxy, on loopback ------------------------------------------------------------------


def make_ca(d):
    def ossl(*a):
        subprocess.run(["openssl", *a], cwd=d, check=True, capture_output=True, timeout=60)

    ossl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", "ca.key",
         "-out", "ca.pem", "-days", "2", "-subj", "/CN=upstream test CA",
         "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign")
    names = ["api.example.test", "other.example.test", "www.example.test"]
    ossl("req", "-x509", "-CA", "ca.pem", "-CAkey", "ca.key", "-newkey", "ec", "-pkeyopt",
         "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", "server.key", "-out", "server.pem", "-days", "2",
         "-subj", "/CN=api.example.test", "-addext", "subjectAltName=" + ",".join("DNS:" + n for n in names),
         "-addext", "basicConstraints=critical,CA:FALSE", "-addext", "extendedKeyUsage=serverAuth")


class Recorder(http.server.BaseHTTPRequestHandler):
    """Records each request's headers; /echo answers them (as a JSON body and in X-Echo-*),
    /redirect?to=URL answers 302 to URL, anything else 200 'ok'."""

    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # head and body are two writes: no delayed-ACK stall between them

    def log_message(self, *a):
        pass

    def handle_any(self):
        n = int(self.headers.get("Content-Length") or 0)
        if n:
            self.rfile.read(n)
        self.server.seen.append({"host": self.headers.get("Host"), "path": self.path, "scheme": self.server.scheme,
                                 "headers": dict(self.headers.items())})
        if self.path.startswith("/redirect?to="):
            self.send_response(302)
            self.send_header("Location", self.path.split("=", 1)[1])
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        body = (json.dumps(dict(self.headers.items())) if self.path.startswith("/echo") else "ok").encode()
        self.send_response(200)
        if self.path.startswith("/echo"):
            self.send_header("X-Echo-Authorization", self.headers.get("Authorization", ""))
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST = handle_any


class Server(http.server.ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, scheme, ctx=None):
        super().__init__(("127.0.0.1", 0), Recorder)
        self.scheme, self.ctx, self.seen = scheme, ctx, []
        self.port = self.server_address[1]

    def get_request(self):
        sock, addr = super().get_request()
        if self.ctx is not None:
            sock = self.ctx.wrap_socket(sock, server_side=True)
        return sock, addr

    def all_headers(self):
        return json.dumps(self.seen)


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    d = tmp_path_factory.mktemp("secrets")
    make_ca(d)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(d / "server.pem", d / "server.key")
    servers = {"http": Server("http"), "https": Server("https", ctx)}
    for s in servers.values():
        threading.Thread(target=s.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    yield d, servers
    for s in servers.values():
        s.shutdown()
        s.server_close()


class Proxy:
    def __init__(self, d, servers, secrets, allow=None, resolve=("api.example.test", "other.example.test",
                                                                 "www.example.test")):
        self.dir = d / ("p%d" % time.monotonic_ns())
        self.dir.mkdir()
        self.policy = self.dir / "policy.json"
        ports = [servers["http"].port, servers["https"].port]
        self.allow = allow or ["%s:%d" % (n, p) for n in resolve for p in ports]
        self.write(secrets)
        argv = [sys.executable, str(PROXY), "--listen", "127.0.0.1:0", "--policy-file", str(self.policy),
                "--max-connections", "32", "--connect-timeout", "5", "--deadline", "0", "--allow", "127.0.0.1/32",
                "--ca-dir", str(self.dir / "ca"), "--upstream-ca-pem", (d / "ca.pem").read_text()]
        for n in resolve:
            argv += ["--resolve", "%s=127.0.0.1" % n]
        self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.lines = queue.Queue()
        self.events = []
        threading.Thread(target=self._read, daemon=True).start()
        ev = self.wait("ready")
        self.port = int(ev["listen"].rsplit(":", 1)[1])
        self.url = "http://127.0.0.1:%d" % self.port
        self.bundle = str(self.dir / "ca" / egress_secrets.BUNDLE)

    def write(self, secrets):
        doc = {"clients": {"*": {"session": "s_test", "allow": self.allow, "deny": [], "secrets": secrets}}}
        tmp = self.policy.with_suffix(".new")
        tmp.write_text(json.dumps(doc))
        os.replace(tmp, self.policy)

    def _read(self):
        for line in self.proc.stdout:
            ev = json.loads(line)
            self.events.append(ev)
            self.lines.put(ev)

    def wait(self, name, timeout=15):
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            try:
                ev = self.lines.get(timeout=0.2)
            except queue.Empty:
                if self.proc.poll() is not None:
                    break
                continue
            if ev["event"] == name:
                return ev
        raise AssertionError("no %s event: %r %s" % (name, self.events, self.proc.stderr.read()
                                                     if self.proc.poll() is not None else ""))

    def close(self):
        self.proc.terminate()
        self.proc.wait(10)


def proxy_secret(servers, value=VALUE, hosts=None):
    hosts = hosts or ["api.example.test:%d" % servers[k].port for k in ("http", "https")]
    return [{"name": "api", "hosts": hosts, "header": "Authorization", "value": "Bearer " + value,
             "scrub": [value]}]


@pytest.fixture
def proxy(env):
    d, servers = env
    p = Proxy(d, servers, proxy_secret(servers))
    yield p
    p.close()


def urllib_get(proxy, url, headers=None):
    ctx = ssl.create_default_context(cafile=proxy.bundle)
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({"http": proxy.url, "https": proxy.url}),
                                         urllib.request.HTTPSHandler(context=ctx))
    req = urllib.request.Request(url, headers=headers or {})
    try:
        with opener.open(req, timeout=30) as r:
            return r.status, dict(r.headers.items()), r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers.items()), e.read().decode()


PLACEHOLDER = {"Authorization": "Bearer runbox-secret-placeholder-api"}


def test_the_bound_host_gets_the_value_over_https_and_http_from_urllib(env, proxy):
    d, servers = env
    for scheme in ("https", "http"):
        servers[scheme].seen.clear()
        status, headers, body = urllib_get(proxy, "%s://api.example.test:%d/hello" % (scheme, servers[scheme].port),
                                           PLACEHOLDER)
        assert status == 200, body
        assert servers[scheme].seen[-1]["headers"]["Authorization"] == "Bearer " + VALUE
        assert servers[scheme].seen[-1]["headers"]["Accept-Encoding"] == "identity"
        proxy.wait("secret_used")
    assert VALUE not in json.dumps(proxy.events)


def test_requests_and_curl_get_it_too(env, proxy):
    d, servers = env
    url = "https://api.example.test:%d/hello" % servers["https"].port
    servers["https"].seen.clear()
    r = requests.get(url, proxies={"https": proxy.url}, verify=proxy.bundle, timeout=30)
    assert r.status_code == 200
    assert servers["https"].seen[-1]["headers"]["Authorization"] == "Bearer " + VALUE
    if shutil.which("curl"):
        servers["https"].seen.clear()
        out = subprocess.run(["curl", "-sS", "--fail", "--proxy", proxy.url, "--cacert", proxy.bundle, url],
                             capture_output=True, text=True, timeout=60)
        assert out.returncode == 0, out.stderr
        assert servers["https"].seen[-1]["headers"]["Authorization"] == "Bearer " + VALUE


def test_an_echo_of_the_value_comes_back_scrubbed(env, proxy):
    d, servers = env
    for scheme in ("https", "http"):
        status, headers, body = urllib_get(proxy, "%s://api.example.test:%d/echo" % (scheme, servers[scheme].port))
        assert status == 200
        assert VALUE not in body and VALUE not in json.dumps(headers)
        assert "Bearer " + "*" * len(VALUE) in body
        assert headers["X-Echo-Authorization"] == "Bearer " + "*" * len(VALUE)


def test_unbound_hosts_get_the_placeholder_end_to_end(env, proxy):
    d, servers = env
    servers["https"].seen.clear()
    # other.example.test is allowed but not bound: a plain tunnel, checked against the real CA
    ctx = ssl.create_default_context(cafile=str(d / "ca.pem"))
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({"https": proxy.url}),
                                         urllib.request.HTTPSHandler(context=ctx))
    req = urllib.request.Request("https://other.example.test:%d/hello" % servers["https"].port, headers=PLACEHOLDER)
    with opener.open(req, timeout=30) as r:
        assert r.status == 200
    assert servers["https"].seen[-1]["headers"]["Authorization"] == PLACEHOLDER["Authorization"]
    status, _, _ = urllib_get(proxy, "http://other.example.test:%d/hello" % servers["http"].port, PLACEHOLDER)
    assert status == 200
    assert servers["http"].seen[-1]["headers"]["Authorization"] == PLACEHOLDER["Authorization"]
    assert VALUE not in servers["https"].all_headers() + servers["http"].all_headers() or all(
        s["host"].startswith("api.") for s in servers["https"].seen + servers["http"].seen
        if VALUE in json.dumps(s))


def test_a_redirect_to_another_host_goes_without_the_secret(env, proxy):
    d, servers = env
    servers["http"].seen.clear()
    target = "http://other.example.test:%d/landed" % servers["http"].port
    r = requests.get("http://api.example.test:%d/redirect?to=%s" % (servers["http"].port, target),
                     proxies={"http": proxy.url}, headers=PLACEHOLDER, timeout=30)
    assert r.status_code == 200
    landed = [s for s in servers["http"].seen if s["path"] == "/landed"]
    assert landed and VALUE not in json.dumps(landed)


def test_a_host_header_that_disagrees_gets_421_and_nothing_is_sent(env, proxy):
    d, servers = env
    for scheme in ("https", "http"):
        servers[scheme].seen.clear()
        status, _, body = urllib_get(proxy, "%s://api.example.test:%d/hello" % (scheme, servers[scheme].port),
                                     {"Host": "other.example.test:%d" % servers[scheme].port})
        assert status == 421, body
        assert "Host header" in body
        assert servers[scheme].seen == []
        ev = proxy.wait("secret_refused")
        assert ev["secret"] == "api" and VALUE not in json.dumps(ev)


def test_rotation_and_revocation_apply_to_the_next_request(env, proxy):
    d, servers = env
    url = "https://api.example.test:%d/hello" % servers["https"].port
    proxy.write(proxy_secret(servers, value="rotated-value-987654321"))
    urllib_get(proxy, url, PLACEHOLDER)
    assert servers["https"].seen[-1]["headers"]["Authorization"] == "Bearer rotated-value-987654321"
    proxy.write([])
    urllib_get(proxy, "http://api.example.test:%d/hello" % servers["http"].port, PLACEHOLDER)
    assert servers["http"].seen[-1]["headers"]["Authorization"] == PLACEHOLDER["Authorization"]


def test_the_ca_key_stays_in_the_proxys_folder_and_the_bundle_has_no_key(env, proxy):
    bundle = Path(proxy.bundle).read_text()
    assert "PRIVATE KEY" not in bundle
    assert bundle.count("BEGIN CERTIFICATE") >= 2
    assert oct(os.stat(proxy.dir / "ca" / "ca.key").st_mode & 0o777) == "0o600"


def test_an_upstream_the_ca_does_not_vouch_for_gets_nothing(env, tmp_path):
    d, servers = env
    other = tmp_path / "other"
    other.mkdir()
    make_ca(other)  # the same names, another CA: a man in the middle upstream
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(other / "server.pem", other / "server.key")
    evil = Server("https", ctx)
    threading.Thread(target=evil.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    p = Proxy(d, {"http": servers["http"], "https": evil}, [
        {"name": "api", "hosts": ["api.example.test:%d" % evil.port], "header": "Authorization",
         "value": "Bearer " + VALUE, "scrub": [VALUE]}])
    try:
        status, _, body = urllib_get(p, "https://api.example.test:%d/hello" % evil.port, PLACEHOLDER)
        assert status == 502, body
        assert evil.seen == []
    finally:
        p.close()
        evil.shutdown()
        evil.server_close()

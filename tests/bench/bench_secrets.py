"""Secrets, measured (tests/bench/run --room bench_secrets; docs/network.md, "Secrets"): the cost the
egress proxy adds to an HTTPS request when it injects a secret (it ends TLS with a leaf of the
session's CA, sends the request on over its own TLS and scrubs the answer), beside the same
request through the proxy without interception (a CONNECT tunnel) and without the proxy.

Everything runs on this host's loopback, as tests/web/test_egress_secrets.py does: the real
proxy process (docker/web/egress_proxy.py in policy mode with --ca-dir) in front of an HTTPS
server of the benchmark's own; the client is Python's http.client, timed around each request.
The proxy relays one request per connection, so every request through it opens a new
connection; the direct baseline is given both ways (a new connection each, and kept alive).
"""

import http.client
import socket
import ssl
import sys
import tempfile
import threading
import time
from pathlib import Path

import roomlib  # tests/bench/roomlib.py

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "web"))


def _request(conn, host, headers):
    conn.request("GET", "/hello", headers=headers)
    r = conn.getresponse()
    r.read()
    assert r.status == 200, r.status


def _via_proxy(proxy_port, host, port, ctx):
    conn = http.client.HTTPSConnection("127.0.0.1", proxy_port, context=ctx, timeout=30)
    conn.set_tunnel(host, port)
    return conn


def run(Runboxd, Client, create_session, delete_session, binary, n, log):
    """The figures (a dict of ms summaries): sec_direct_new, sec_direct_kept, sec_tunnel_new and
    sec_inject_new (n * 5 requests each), and sec_inject_added_ms (median inject - direct new)."""
    import test_egress_secrets as t  # its servers, CA and proxy helpers

    n = max(5, n * 5)
    d = Path(tempfile.mkdtemp(prefix="rb-bench-secrets-"))
    t.make_ca(d)
    sctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    sctx.load_cert_chain(d / "server.pem", d / "server.key")
    servers = {"http": t.Server("http"), "https": t.Server("https", sctx)}
    for s in servers.values():
        threading.Thread(target=s.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    proxy = t.Proxy(d, servers, t.proxy_secret(servers))
    port = servers["https"].port
    upstream_ctx = ssl.create_default_context(cafile=str(d / "ca.pem"))
    session_ctx = ssl.create_default_context(cafile=proxy.bundle)
    F = {}
    try:
        def timed(make, host, ctx, kept=False):
            xs = []
            conn = make() if kept else None
            for _ in range(n):
                t0 = time.perf_counter()
                c = conn or make()
                _request(c, host, {"Authorization": "Bearer runbox-secret-placeholder-api"})
                if not kept:
                    c.close()
                xs.append((time.perf_counter() - t0) * 1000)
            if conn:
                conn.close()
            return roomlib.summary(xs)

        direct_ctx = _named(ssl.create_default_context(cafile=str(d / "ca.pem")))
        direct = lambda: http.client.HTTPSConnection("127.0.0.1", port, context=direct_ctx, timeout=30)
        log("secrets: %d requests each, direct / tunnel / injected" % n)
        F["sec_direct_new"] = timed(direct, "api.example.test", upstream_ctx)
        F["sec_direct_kept"] = timed(direct, "api.example.test", upstream_ctx, kept=True)
        F["sec_tunnel_new"] = timed(lambda: _via_proxy(proxy.port, "other.example.test", port, upstream_ctx),
                                    "other.example.test", upstream_ctx)
        F["sec_inject_new"] = timed(lambda: _via_proxy(proxy.port, "api.example.test", port, session_ctx),
                                    "api.example.test", session_ctx)
        F["sec_inject_added_ms"] = F["sec_inject_new"]["median_ms"] - F["sec_direct_new"]["median_ms"]
        assert servers["https"].seen[-1]["headers"]["Authorization"].startswith("Bearer sk-"), "not injected"
    finally:
        proxy.close()
        for s in servers.values():
            s.shutdown()
            s.server_close()
    return F


def _named(ctx):
    """ctx, checking the server's certificate for api.example.test while connecting to 127.0.0.1."""
    orig = ctx.wrap_socket

    def wrap(sock, server_hostname=None, **kw):
        return orig(sock, server_hostname="api.example.test", **kw)

    ctx.wrap_socket = wrap
    return ctx


def rows(F, fmt):
    """The report's rows for these figures (name, n, min, median, p99, unit, load, target)."""
    out = []
    lat = roomlib.row_adder(F, fmt, out)
    if not F or "sec_inject_new" not in F:
        return out
    lat("HTTPS request, secret injected (new connection)", "sec_inject_new")
    lat("  baseline: through the proxy, no interception", "sec_tunnel_new")
    lat("  baseline: no proxy, new connection", "sec_direct_new")
    lat("  baseline: no proxy, kept alive", "sec_direct_kept")
    out.append(("  added by injecting (median)", None, "", fmt(F.get("sec_inject_added_ms")), "", "ms", "",
                "<= 10 (new)"))
    return out


if __name__ == "__main__":  # python3 tests/bench/bench_secrets.py: the figures alone
    figs = run(None, None, None, None, None, 10, lambda m: print(m, file=sys.stderr))
    for r in rows(figs, lambda v, p=2: "" if v is None else ("%.*f" % (p, v))):
        print("%-52s %5s %8s %8s %8s %s" % (r[0], r[1] or "", r[2], r[3], r[4], r[5]))

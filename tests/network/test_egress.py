"""Sandbox network by policy, seen from the code in the sandbox: what an allowed name reaches
(urllib, requests, curl, bash's own tools; http and https), what is refused and how the refusal
reads (the host and the rule that decided), wildcards and ports, private and literal addresses,
and that the sandbox has no way out but the proxy.

One runboxd (egress_server) with --egress=true on the test-made internet (inet.py):
--egress-allow=www.example.test,pypi.example.test,registry.example.test (what `network: true`
means), --egress-max=*.example.test and its :8080 and :7000, --egress-deny=cdn.example.test,
--egress-cidr=/32 of www, pypi and registry (not private.example.test's). Every server logs
the requests it receives: a refusal is also checked to have never reached it.
"""

from __future__ import annotations

import errno
import socket
import threading
import uuid

from conftest import EGRESS_ALLOW, EGRESS_DENY
from inet import docker
from nettest import CA_PATH, egress_objects, fetch, fetcher, short

PROXY = "http://egress:3128"


def token() -> str:
    return uuid.uuid4().hex[:12]


def assert_reached(inet, role: str, got: dict, host: str, tok: str, scheme: str = "http") -> None:
    assert got["status"] == 200, f"{host}: {got}"
    assert got["body"].startswith(f"hello from {host}") and got["body"].rstrip().endswith(f"{scheme})"), got
    assert inet.requests_seen(role, tok), f"server {role} never saw the request {tok}"


def assert_refused(inet, role: str, got: dict, host: str, port: int, *reason: str, tok: str) -> None:
    """A refusal by the proxy: 403, the body naming HOST:PORT and the header the reason (each
    of REASON in both); the server ROLE never saw the request."""
    assert got["status"] == 403, f"{host}:{port} should be refused: {got}"
    assert got["body"].startswith(f"runbox egress proxy refused {host}:{port}: "), got
    for word in reason:
        assert word in got["body"] and word in (got["refused"] or ""), f"{word!r} not in {got}"
    assert not inet.requests_seen(role, tok), f"a refused request reached {role}"


def test_session_answer_and_proxy_environment(egress_server, inet):
    """network: true is the operator's default list plus its deny list, in canonical form, and
    a sealed session's is false; the sandbox's proxy variables name the egress proxy."""
    s = egress_server.create(network=True)
    net = s["execution_options"]["network"]
    assert sorted(net["allow"]) == sorted(EGRESS_ALLOW.split(",")), short(s)
    assert net["deny"] == [EGRESS_DENY], short(s)
    assert egress_server.session(s["session_id"])["execution_options"]["network"] == net
    env = egress_server.value(s["session_id"], "import os\n{k: os.environ.get(k) for k in ("
                              "'HTTP_PROXY', 'HTTPS_PROXY', 'http_proxy', 'https_proxy', 'NO_PROXY', 'no_proxy')}")
    for k in ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"):
        assert env[k] == PROXY, env
    assert "localhost" in (env["NO_PROXY"] or env["no_proxy"] or ""), env
    # the proxy's name resolves inside (the names of the test internet do not: test_no_way_out...)
    assert egress_server.value(s["session_id"], "import socket\nlen(socket.getaddrinfo('egress', 3128)) > 0") is True
    sealed = egress_server.create()
    assert sealed["execution_options"].get("network") is False, short(sealed)


def test_allowed_name_with_urllib_over_http_and_https(egress_server, inet):
    sid = fetcher(egress_server, network=True)
    for scheme in ("http", "https"):
        tok = token()
        got = fetch(egress_server, sid, f"{scheme}://www.example.test/hello?t={tok}")
        assert_reached(inet, "www", got, "www.example.test", tok, scheme)
    # A large body comes through whole.
    got = egress_server.value(sid, "import urllib.request\n"
                              "len(urllib.request.urlopen('https://www.example.test/big?bytes=5000000', timeout=60).read())")
    assert got == 5_000_000


def test_allowed_name_with_requests(egress_server, inet):
    """requests (the image has no top-level `requests`: pip's vendored copy is the same library)
    finds the proxy and the CA bundle (REQUESTS_CA_BUNDLE) in the environment."""
    sid = egress_server.create(network=True)["session_id"]
    tok = token()
    got = egress_server.value(sid, "try:\n    import requests\nexcept ImportError:\n"
                              "    from pip._vendor import requests\n"
                              f"[(r.status_code, r.text) for r in (requests.get('http://www.example.test/hello?t={tok}', timeout=30),"
                              f" requests.get('https://www.example.test/hello?t={tok}', timeout=30))]")
    assert got[0][0] == 200 and got[0][1].startswith("hello from www.example.test") and "http)" in got[0][1], got
    assert got[1][0] == 200 and got[1][1].startswith("hello from www.example.test") and "https)" in got[1][1], got
    assert len(inet.requests_seen("www", tok)) == 2
    doc = egress_server.run(sid, "from pip._vendor import requests\nrequests.get('http://api.example.test/hello', timeout=30)"
                            ".raise_for_status()")
    assert doc["status"] == "error" and "403" in doc["error"]["evalue"], short(doc)


def test_allowed_name_with_curl_in_bash(egress_server, inet):
    """curl in a bash session, http and https (through the proxy variables)."""
    sid = egress_server.create(language="bash", network=True)["session_id"]
    tok = token()
    doc = egress_server.run(sid, f"curl -sS --fail --cacert {CA_PATH} http://www.example.test/hello?t={tok}; "
                                 f"curl -sS --fail --cacert {CA_PATH} https://www.example.test/hello?t={tok}")
    assert doc["status"] == "completed", f"curl in the sandbox: {short(doc)}"
    assert doc["stdout"].splitlines() == ["hello from www.example.test (server www, port 80, http)",
                                          "hello from www.example.test (server www, port 443, https)"], short(doc)
    doc = egress_server.run(sid, "curl -sS --fail http://api.example.test/hello")
    assert doc["status"] == "error" and "403" in doc["stderr"], short(doc)


def test_allowed_name_with_bash_own_tools(egress_server, inet):
    """Without curl: bash's /dev/tcp speaking HTTP to the proxy, and openssl s_client through it
    (CONNECT, the server's certificate verified with the test CA)."""
    sid = egress_server.create(language="bash", network=True)["session_id"]
    tok = token()
    http = (f"exec 3<>/dev/tcp/egress/3128\n"
            f"printf 'GET http://www.example.test/hello?t={tok} HTTP/1.1\\r\\nHost: www.example.test\\r\\n\\r\\n' >&3\n"
            f"cat <&3; exec 3<&-")
    doc = egress_server.ok(sid, http)
    assert doc["stdout"].startswith("HTTP/1.1 200") and "hello from www.example.test" in doc["stdout"], short(doc)
    tls = (f"printf 'GET /hello?t={tok} HTTP/1.1\\r\\nHost: www.example.test\\r\\nConnection: close\\r\\n\\r\\n' | "
           f"openssl s_client -quiet -proxy egress:3128 -connect www.example.test:443 -servername www.example.test "
           f"-CAfile {CA_PATH} -verify_return_error 2>/dev/null")
    doc = egress_server.ok(sid, tls)
    assert doc["stdout"].startswith("HTTP/1.") and "hello from www.example.test (server www, port 443, https)" in doc["stdout"], short(doc)
    assert len(inet.requests_seen("www", tok)) == 2


def test_unlisted_and_denied_names_are_refused_naming_host_and_rule(egress_server, inet):
    sid = fetcher(egress_server, network={"allow": ["*.example.test"], "deny": ["api.example.test"]})
    # the wildcard lets www through
    tok = token()
    assert_reached(inet, "www", fetch(egress_server, sid, f"http://www.example.test/hello?t={tok}"), "www.example.test", tok)
    # denied by the session's own deny list
    tok = token()
    got = fetch(egress_server, sid, f"http://api.example.test/hello?t={tok}")
    assert_refused(inet, "www", got, "api.example.test", 80, "denied by", "api.example.test", tok=tok)
    # denied by the operator's deny list, although the session's wildcard covers it
    tok = token()
    got = fetch(egress_server, sid, f"http://cdn.example.test/hello?t={tok}")
    assert_refused(inet, "www", got, "cdn.example.test", 80, "denied by", "cdn.example.test", tok=tok)
    # not in the allow list of another session: the refusal quotes the list
    sid2 = fetcher(egress_server, network=True)
    tok = token()
    got = fetch(egress_server, sid2, f"http://api.example.test/hello?t={tok}")
    assert_refused(inet, "www", got, "api.example.test", 80, "not in the allow list", "www.example.test", tok=tok)


def test_https_refusal_is_the_tunnels_answer(egress_server, inet):
    """For CONNECT the 403 is the tunnel's answer, with the same body and header."""
    sid = egress_server.create(network=True)["session_id"]
    got = egress_server.value(sid, "import socket\ns = socket.create_connection(('egress', 3128), timeout=30)\n"
                              "s.sendall(b'CONNECT api.example.test:443 HTTP/1.1\\r\\nHost: api.example.test:443\\r\\n\\r\\n')\n"
                              "data = b''\nwhile True:\n    c = s.recv(4096)\n    if not c:\n        break\n    data += c\n"
                              "data.decode('latin-1')")
    head, _, body = got.partition("\r\n\r\n")
    assert head.startswith("HTTP/1.1 403"), got
    assert "x-runbox-refused: not in the allow list" in head.lower(), got
    assert body.startswith("runbox egress proxy refused api.example.test:443: not in the allow list"), got


def test_https_refusal_reads_in_the_clients_error(egress_server, inet):
    """What urllib and pip's requests raise for a refused https:// URL names the host and the
    rule: clients drop a refused tunnel's body and headers and keep only its status line, so
    the reason has to be in the status line's reason phrase."""
    sid = fetcher(egress_server, network=True)
    got = fetch(egress_server, sid, "https://api.example.test/hello")
    assert got["status"] is None and "403" in got["error"], got
    assert "api.example.test" in got["error"] and "not in the allow list" in got["error"], (
        f"the error the code sees does not say why: {got['error']!r}")


def test_wildcards_and_ports(egress_server, inet):
    # `www.example.test` allows 80 and 443, not 8080
    sid = fetcher(egress_server, network=True)
    tok = token()
    got = fetch(egress_server, sid, f"http://www.example.test:8080/hello?t={tok}")
    assert_refused(inet, "www", got, "www.example.test", 8080, "port 8080", tok=tok)
    # `*.example.test:8080` allows 8080 on every name below example.test, and only 8080 there
    sid = fetcher(egress_server, network={"allow": ["*.example.test:8080"]})
    for host in ("www.example.test", "api.example.test"):
        tok = token()
        assert_reached(inet, "www", fetch(egress_server, sid, f"http://{host}:8080/hello?t={tok}"), host, tok)
    tok = token()
    got = fetch(egress_server, sid, f"http://www.example.test/hello?t={tok}")
    assert_refused(inet, "www", got, "www.example.test", 80, "port 80", tok=tok)
    # a pattern with a port opens a non-HTTP port through a CONNECT tunnel
    sid = egress_server.create(network={"allow": ["www.example.test:7000"]})["session_id"]
    got = egress_server.value(sid, "import socket\ns = socket.create_connection(('egress', 3128), timeout=30)\n"
                              "s.sendall(b'CONNECT www.example.test:7000 HTTP/1.1\\r\\nHost: www.example.test:7000\\r\\n\\r\\n')\n"
                              "head = b''\nwhile not head.endswith(b'\\r\\n\\r\\n'):\n    head += s.recv(1)\n"
                              "s.sendall(b'ping')\nbanner = b''\nwhile not banner.endswith(b'ping'):\n"
                              "    c = s.recv(100)\n    assert c\n    banner += c\n(head.decode(), banner.decode())")
    assert got[0].startswith("HTTP/1.1 200") and got[1] == "rbt-echo www\nping", got


def test_private_address_refused_unless_operator_cidr(egress_server, inet):
    """private.example.test is allowed by name (*.example.test) but resolves to an address of
    the (private) test network that --egress-cidr does not list; www's /32 is listed."""
    sid = fetcher(egress_server, network={"allow": ["*.example.test"]})
    for scheme, port in (("http", 80), ("https", 443)):
        tok = token()
        got = fetch(egress_server, sid, f"{scheme}://private.example.test/hello?t={tok}")
        if scheme == "http":
            assert_refused(inet, "private", got, "private.example.test", port, "private address", tok=tok)
        else:
            assert got["status"] is None and "403" in got["error"], got
            assert not inet.requests_seen("private", tok)
        tok = token()
        assert_reached(inet, "www", fetch(egress_server, sid, f"{scheme}://www.example.test/hello?t={tok}"),
                       "www.example.test", tok, scheme)


def test_ip_literals_are_refused_and_cannot_be_listed(egress_server, inet):
    """An IP literal is refused even when its address is an operator CIDR (www's /32): a policy
    names hosts. An IP address is not a pattern: asking for one is a 400 naming it."""
    sid = fetcher(egress_server, network={"allow": ["*.example.test"]})
    ip = inet.ips["www"]
    tok = token()
    got = fetch(egress_server, sid, f"http://{ip}/hello?t={tok}")
    assert_refused(inet, "www", got, ip, 80, "IP address", tok=tok)
    for pattern in (ip, f"{ip}:80", "*"):
        r = egress_server.post_session({"execution_options": {"network": {"allow": [pattern]}}})
        assert r.status_code == 400 and pattern in r.json()["error"]["message"], f"{pattern}: {r.status_code} {r.text}"


def test_no_way_out_but_the_proxy(egress_server, inet):
    """Raw TCP from the sandbox to a server's address fails (the sandbox is not on the test
    internet, only on its session's internal network with the proxy), and names of the test
    internet do not resolve inside."""
    sid = egress_server.create(network=True)["session_id"]
    echoes = len([e for e in inet.events("www") if e["event"] == "echo"])
    for port in (7000, 80):
        doc = egress_server.run(sid, f"import socket\nsocket.create_connection(({inet.ips['www']!r}, {port}), timeout=10)")
        assert doc["status"] == "error" and doc["error"]["ename"] in (
            "OSError", "TimeoutError", "ConnectionRefusedError"), short(doc)
    assert len([e for e in inet.events("www") if e["event"] == "echo"]) == echoes, "the sandbox reached www:7000"
    doc = egress_server.run(sid, "import socket\nsocket.getaddrinfo('www.example.test', 80)")
    assert doc["status"] == "error" and doc["error"]["ename"] == "gaierror", short(doc)
    # nor is the proxy a way around its own policy: an allowed name's raw port is refused
    doc = egress_server.run(sid, "import socket\ns = socket.create_connection(('egress', 3128), timeout=30)\n"
                            "s.sendall(b'CONNECT www.example.test:7000 HTTP/1.1\\r\\n\\r\\n')\ns.recv(200).decode()")
    assert doc["status"] == "completed" and doc["result"].startswith("'HTTP/1.1 403"), short(doc)


def test_sandbox_cannot_reach_the_host_through_its_network(egress_server, inet):
    """A Docker network's gateway address is the host's own: a service of this host listening
    on it (as one on 0.0.0.0 would be) must stay out of the sandbox's reach, even on an
    --internal network. Either the host has no address on the session's bridge (then there is
    nothing to bind), or the test's listener there is never reached."""
    sid = egress_server.create(network=True)["session_id"]
    nets = egress_objects(sid)["networks"]
    assert len(nets) == 1, nets
    gw = docker("network", "inspect", nets[0], "--format", "{{(index .IPAM.Config 0).Gateway}}").strip()
    assert gw, f"no gateway on {nets[0]}"
    lst = socket.socket()
    try:
        lst.bind((gw, 0))
    except OSError as e:
        lst.close()
        # the host has no address on the session's bridge: nothing of it to reach there
        assert e.errno == errno.EADDRNOTAVAIL, f"bind {gw}: {e}"
        return
    lst.listen(4)
    lst.settimeout(0.5)
    accepted = []
    stop = threading.Event()

    def serve():
        while not stop.is_set():
            try:
                c, addr = lst.accept()
            except OSError:
                continue
            accepted.append(addr)
            with c:
                c.sendall(b"host service\n")

    t = threading.Thread(target=serve, daemon=True)
    t.start()
    try:
        port = lst.getsockname()[1]
        doc = egress_server.run(sid, f"import socket\ns = socket.create_connection(({gw!r}, {port}), timeout=10)\n"
                                     "s.recv(100)")
        assert doc["status"] == "error", f"the sandbox reached the host at {gw}:{port}: {short(doc)}"
        assert not accepted, f"the host accepted a connection from the sandbox: {accepted}"
    finally:
        stop.set()
        t.join()
        lst.close()


def test_two_sessions_never_share_an_allowance(egress_server, inet):
    """Two sessions, each allowed one name of the same server: each reaches its own and not the
    other's, in turns; each has its own proxy container and network."""
    mine, other = "www.example.test", "api.example.test"
    a = fetcher(egress_server, network={"allow": [mine]})
    b = fetcher(egress_server, network={"allow": [other]})
    ea, eb = egress_objects(a), egress_objects(b)
    assert len(ea["containers"]) == 1 and len(eb["containers"]) == 1, (ea, eb)
    assert ea["containers"] != eb["containers"] and ea["networks"] != eb["networks"], (ea, eb)
    for sid, allowed, refused in ((a, mine, other), (b, other, mine), (a, mine, other)):
        tok = token()
        assert_reached(inet, "www", fetch(egress_server, sid, f"https://{allowed}/hello?t={tok}"), allowed, tok, "https")
        tok = token()
        got = fetch(egress_server, sid, f"http://{refused}/hello?t={tok}")
        assert_refused(inet, "www", got, refused, 80, "not in the allow list", allowed, tok=tok)

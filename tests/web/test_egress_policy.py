"""Tests of the egress proxy's network by policy (docker/web/egress_policy.py, and egress_proxy.py
with --policy-file), run on this host: host patterns and policies as pure functions, the policy
file as read from a temporary folder, and the real proxy process (started as runboxd starts it,
python3 -I) on loopback in front of small HTTP servers on 127.0.0.1. Host names are *.test
names that the proxy's test-only --resolve maps to 127.0.0.1 (allowed with --allow 127.0.0.1/32
where a test needs it): nothing is resolved by DNS and every byte goes to 127.0.0.1 only.
Run: python3 -m pytest tests/web/test_egress_policy.py -q
"""

import json
import os
import queue
import subprocess
import sys
import threading

import pytest

from test_egress_proxy import PROXY, ProxyProcess, Upstream, read_all, split_response, upstream  # noqa: F401 (fixture)

sys.path.insert(0, str(PROXY.parent))
import egress_policy  # noqa: E402
from egress_policy import Policy, PolicyFile, parse_pattern, parse_policy_file  # noqa: E402

# ---- host patterns (pure) ----------------------------------------------------------------


@pytest.mark.parametrize(
    "text,domain,wildcard,port,canonical",
    [
        ("pypi.org", "pypi.org", False, None, "pypi.org"),
        ("PyPI.ORG.", "pypi.org", False, None, "pypi.org"),  # case and trailing dot
        ("*.pythonhosted.org", "pythonhosted.org", True, None, "*.pythonhosted.org"),
        ("*.PythonHosted.org.:443", "pythonhosted.org", True, 443, "*.pythonhosted.org:443"),
        ("pypi.org:8443", "pypi.org", False, 8443, "pypi.org:8443"),
        ("a-b_c.example.test:1", "a-b_c.example.test", False, 1, "a-b_c.example.test:1"),
        ("xn--bcher-kva.example", "xn--bcher-kva.example", False, None, "xn--bcher-kva.example"),
        ("localhost", "localhost", False, None, "localhost"),
    ],
)
def test_parse_pattern(text, domain, wildcard, port, canonical):
    p = parse_pattern(text)
    assert (p.domain, p.wildcard, p.port, p.text) == (domain, wildcard, port, canonical)


@pytest.mark.parametrize(
    "text,why",
    [
        ("", "empty"),
        ("   ", "empty"),
        (".", "empty"),
        ("pypi.org..", "empty label"),
        ("*", "'*' only as the whole first label"),
        ("*.", "a wildcard needs a domain after it"),
        ("*.*.org", "'*' only as the whole first label"),
        ("a*.org", "'*' only as the whole first label"),
        ("**.org", "'*' only as the whole first label"),
        ("pypi.*", "'*' only as the whole first label"),
        ("*.:443", "a wildcard needs a domain after it"),
        ("pypi.org:0", "port out of range"),
        ("pypi.org:65536", "port out of range"),
        ("pypi.org:", "the port is not a number"),
        ("pypi.org:https", "the port is not a number"),
        ("pypi.org:\u00b2", "the port is not a number"),
        ("py pi.org", "bad characters"),
        ("pypi.org/simple", "bad characters"),
        ("user@pypi.org", "bad characters"),
        ("p\u00fcpi.org", "bad characters"),  # the xn-- form is needed
        ("pypi..org", "empty label"),
        (".pypi.org", "empty label"),
        ("x" * 64 + ".org", "a label is longer than 63"),
        ("a." * 127 + "org", "too long"),
        ("1.2.3.4", "an IP address"),
        ("127.0.0.1:443", "an IP address"),
        ("2130706433", "an IP address"),
        ("0x7f.1", "an IP address"),
        ("*.0.0.1", "an IP address"),
        ("::1", "an IP address"),
        ("[::1]:443", "an IP address"),
        (443, "not a string"),
        (None, "not a string"),
    ],
)
def test_malformed_patterns_are_rejected_naming_the_pattern(text, why):
    with pytest.raises(ValueError) as e:
        parse_pattern(text)
    message = str(e.value)
    assert why in message
    assert message.startswith("host pattern %s: " % json.dumps(text)[:300])


def test_at_most_256_patterns_per_list():
    names = ["h%d.example.test" % i for i in range(257)]
    assert len(Policy.parse({"allow": names[:256], "deny": names[:256]}).allow) == 256
    with pytest.raises(ValueError, match=r"^policy.allow: 257 patterns, at most 256$"):
        Policy.parse({"allow": names})
    with pytest.raises(ValueError, match=r"^policy.deny: 257 patterns, at most 256$"):
        Policy.parse({"deny": names})
    with pytest.raises(ValueError, match=r'^policy.allow: host pattern "bad name": bad characters'):
        Policy.parse({"allow": ["pypi.org", "bad name"]})
    with pytest.raises(ValueError, match=r"policy: unknown key \"allowed\""):
        Policy.parse({"allowed": ["pypi.org"]})
    with pytest.raises(ValueError, match=r"policy.allow: not a list"):
        Policy.parse({"allow": "pypi.org"})


PYPI = Policy.parse({"allow": ["pypi.org", "*.pythonhosted.org"], "deny": ["evil.pythonhosted.org"]})
DEFAULT_PORTS = {80, 443}
NOT_LISTED = "not in the allow list (allow: pypi.org, *.pythonhosted.org)"


@pytest.mark.parametrize(
    "host,port,allowed,rule,reason",
    [
        ("pypi.org", 443, True, "pypi.org", "allowed by rule 'pypi.org'"),
        ("pypi.org", 80, True, "pypi.org", "allowed by rule 'pypi.org'"),
        ("PyPI.Org.", 443, True, "pypi.org", "allowed by rule 'pypi.org'"),  # case, trailing dot
        ("files.pythonhosted.org", 443, True, "*.pythonhosted.org", "allowed by rule '*.pythonhosted.org'"),
        ("a.b.pythonhosted.org", 443, True, "*.pythonhosted.org", "allowed by rule '*.pythonhosted.org'"),
        ("FILES.PYTHONHOSTED.ORG.", 80, True, "*.pythonhosted.org", "allowed by rule '*.pythonhosted.org'"),
        ("pythonhosted.org", 443, False, None, NOT_LISTED),  # the wildcard needs a label before it
        (".pythonhosted.org", 443, False, None, NOT_LISTED),
        ("www.pypi.org", 443, False, None, NOT_LISTED),  # an exact name is only that name
        ("notpypi.org", 443, False, None, NOT_LISTED),
        ("pypi.org.evil.test", 443, False, None, NOT_LISTED),
        ("xpythonhosted.org", 443, False, None, NOT_LISTED),
        ("pythonhosted.org.evil.test", 443, False, None, NOT_LISTED),
        ("evil.pythonhosted.org", 443, False, "evil.pythonhosted.org", "denied by rule 'evil.pythonhosted.org'"),
        ("Evil.PythonHosted.org.", 80, False, "evil.pythonhosted.org", "denied by rule 'evil.pythonhosted.org'"),
        ("pypi.org", 8080, False, None, "port 8080 not in the allow list (allow: pypi.org, *.pythonhosted.org)"),
        ("files.pythonhosted.org", 22, False, None,
         "port 22 not in the allow list (allow: pypi.org, *.pythonhosted.org)"),
    ],
)
def test_decide(host, port, allowed, rule, reason):
    assert PYPI.decide(host, port, DEFAULT_PORTS) == (allowed, rule, reason)


def test_patterns_without_a_port_allow_the_proxys_ports():
    assert PYPI.decide("pypi.org", 8080, {80, 443, 8080}).allowed  # --allow-port 8080
    assert not PYPI.decide("pypi.org", 8081, {80, 443, 8080}).allowed


def test_port_specific_patterns():
    policy = Policy.parse({"allow": ["pypi.org:8443", "*.example.test:443"]})
    assert policy.decide("pypi.org", 8443, DEFAULT_PORTS) == (True, "pypi.org:8443", "allowed by rule 'pypi.org:8443'")
    assert policy.decide("pypi.org", 443, DEFAULT_PORTS).reason == (
        "port 443 not in the allow list (allow: pypi.org:8443, *.example.test:443)")
    assert policy.decide("a.example.test", 443, DEFAULT_PORTS).allowed
    assert not policy.decide("a.example.test", 80, DEFAULT_PORTS).allowed


def test_deny_beats_allow():
    policy = Policy.parse({"allow": ["*.example.test", "x.test:8443"], "deny": ["bad.example.test", "x.test"]})
    assert policy.decide("good.example.test", 443, DEFAULT_PORTS).allowed
    assert policy.decide("bad.example.test", 443, DEFAULT_PORTS) == (
        False, "bad.example.test", "denied by rule 'bad.example.test'")
    # a deny pattern without a port denies every port, even one an allow pattern names
    assert policy.decide("x.test", 8443, DEFAULT_PORTS).reason == "denied by rule 'x.test'"
    # with a port, only that port
    policy = Policy.parse({"allow": ["*.example.test"], "deny": ["*.bad.example.test:80"]})
    assert policy.decide("a.bad.example.test", 80, DEFAULT_PORTS).reason == "denied by rule '*.bad.example.test:80'"
    assert policy.decide("a.bad.example.test", 443, DEFAULT_PORTS).allowed


@pytest.mark.parametrize(
    "host", ["127.0.0.1", "93.184.216.34", "::1", "2606:4700:4700::1111", "2130706433", "0x7f.1", "127.1",
             "1.2.3.4.", "0177.0.0.1"],
)
def test_ip_literals_never_match_name_patterns(host):
    policy = Policy.parse({"allow": ["*.in-addr.arpa", "*.1.example.test", "pypi.org"], "deny": ["*.arpa"]})
    decision = policy.decide(host, 443, DEFAULT_PORTS)
    assert not decision.allowed and decision.rule is None
    assert decision.reason.startswith("an IP address: the policy names hosts (allow: *.in-addr.arpa")


def test_refusals_quote_the_allow_list_within_bounds():
    assert Policy().decide("pypi.org", 443, DEFAULT_PORTS).reason == "not in the allow list (allow: none)"
    many = Policy.parse({"allow": ["host-%03d.example.test" % i for i in range(200)]})
    reason = many.decide("pypi.org", 443, DEFAULT_PORTS).reason
    assert reason.startswith("not in the allow list (allow: host-000.example.test, host-001.example.test, ")
    assert reason.endswith(" more))") and len(reason) < 500


# ---- the policy file (pure, and read from a temporary folder) -----------------------------


def test_parse_policy_file():
    clients = parse_policy_file(json.dumps({"clients": {
        "172.30.0.5": {"session": "s_abc", "allow": ["pypi.org"], "deny": []},
        "::ffff:172.30.0.6": {"session": "s_def"},  # kept as its IPv4 address; no lists: nothing allowed
        "fd00::7": {"session": "s_ghi", "allow": ["*.pythonhosted.org"]},
    }}).encode())
    assert sorted(clients) == ["172.30.0.5", "172.30.0.6", "fd00::7"]
    assert clients["172.30.0.5"].session == "s_abc"
    assert clients["172.30.0.5"].policy.decide("pypi.org", 443, DEFAULT_PORTS).allowed
    assert not clients["172.30.0.6"].policy.decide("pypi.org", 443, DEFAULT_PORTS).allowed
    assert parse_policy_file(b'{"clients": {}}') == {}


def test_parse_policy_file_any_client():
    clients = parse_policy_file(b'{"clients": {"*": {"session": "s_one", "allow": ["pypi.org"]}}}')
    assert list(clients) == ["*"]
    assert clients["*"].session == "s_one"
    assert clients["*"].policy.decide("pypi.org", 443, DEFAULT_PORTS).allowed
    assert not clients["*"].policy.decide("other.org", 443, DEFAULT_PORTS).allowed
    # beside addresses of their own
    clients = parse_policy_file(json.dumps({"clients": {
        "10.0.0.1": {"session": "s_a"}, "*": {"session": "s_any"}, "fd00::1": {"session": "s_b"}}}).encode())
    assert sorted(clients) == ["*", "10.0.0.1", "fd00::1"]


def test_lookup_an_exact_address_beats_any_client(tmp_path):
    path = tmp_path / "policy.json"
    write_policy(path, {"*": {"session": "s_any", "allow": ["any.test"]},
                        "10.0.0.1": {"session": "s_a", "allow": ["a.test"]}})
    f = PolicyFile(str(path))
    assert f.start() is None
    assert f.lookup("10.0.0.1").session == "s_a"
    assert f.lookup("::ffff:10.0.0.1").session == "s_a"
    assert f.lookup("10.0.0.2").session == "s_any"
    assert f.lookup("fd00::9%eth0").session == "s_any"
    assert f.lookup("10.0.0.2").policy.decide("any.test", 443, DEFAULT_PORTS).allowed
    write_policy(path, {"10.0.0.1": {"session": "s_a"}})  # without "*": only the listed address
    assert f.refresh() == {"event": "policy", "clients": 1}
    assert f.lookup("10.0.0.1").session == "s_a"
    assert f.lookup("10.0.0.2") is None


@pytest.mark.parametrize(
    "data,why",
    [
        (b"", "not JSON"),
        (b"{", "not JSON"),
        (b"\xff", "not UTF-8"),
        (b"[]", 'not an object with "clients"'),
        (b'{"clients": []}', 'not an object with "clients"'),
        (b'{"clients": {}, "version": 2}', 'unknown key "version"'),
        (b'{"clients": {"10.0.0.1": []}}', 'clients["10.0.0.1"]: not an object'),
        (b'{"clients": {"10.0.0.1": {"allow": []}}}', 'clients["10.0.0.1"].session: not a session id'),
        (b'{"clients": {"10.0.0.1": {"session": "s a"}}}', 'clients["10.0.0.1"].session: not a session id'),
        (b'{"clients": {"10.0.0.1": {"session": "s_a", "alow": []}}}', 'clients["10.0.0.1"]: unknown key "alow"'),
        (b'{"clients": {"10.0.0.1": {"session": "s_a", "deny": ["*"]}}}',
         'clients["10.0.0.1"].deny: host pattern "*": \'*\' only as the whole first label'),
        (b'{"clients": {"10.0.0.1": {"session": "s_a"}, "10.0.0.1": {"session": "s_b"}}}',
         'duplicate key "10.0.0.1"'),
        (b'{"clients": {"10.0.0.1": {"session": "s_a"}, "::ffff:10.0.0.1": {"session": "s_b"}}}',
         "the same address twice"),
        (b'{"clients": {"host": {"session": "s_a"}}}', 'clients["host"]: not an IP address or "*"'),
        (b'{"clients": {"**": {"session": "s_a"}}}', 'clients["**"]: not an IP address or "*"'),
        (b'{"clients": {"*": {"session": "s_a"}, "*": {"session": "s_b"}}}', 'duplicate key "*"'),
        (b'{"clients": {"*": {"session": "s a"}}}', 'clients["*"].session: not a session id'),
        (b'{"clients": {"*": {"allow": ["pypi.org"]}}}', 'clients["*"].session: not a session id'),
        (b'{"clients": {"*": {"session": "s_a", "allow": ["*.*.org"]}}}',
         'clients["*"].allow: host pattern "*.*.org"'),
        (b'{"clients": {"*": []}}', 'clients["*"]: not an object'),
    ],
)
def test_malformed_policy_files_are_rejected_naming_what(data, why):
    with pytest.raises(ValueError) as e:
        parse_policy_file(data)
    assert why in str(e.value)


def write_policy(path, clients, raw=None):
    """Replaces the policy file at once: a temporary file, then rename."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_bytes(raw if raw is not None else json.dumps({"clients": clients}).encode())
    os.replace(tmp, path)


def test_policy_file_refresh(tmp_path):
    path = tmp_path / "policy.json"
    write_policy(path, {"10.0.0.1": {"session": "s_a", "allow": ["pypi.org"]}})
    f = PolicyFile(str(path))
    assert f.start() is None and f.read_well
    assert f.lookup("10.0.0.1").session == "s_a"
    assert f.lookup("::ffff:10.0.0.1%eth0").session == "s_a"
    assert f.lookup("10.0.0.2") is None
    assert f.refresh() is None  # unchanged
    write_policy(path, {"10.0.0.2": {"session": "s_b"}})
    assert f.refresh() == {"event": "policy", "clients": 1}  # at once: no interval
    assert f.refresh() is None
    assert f.lookup("10.0.0.1") is None and f.lookup("10.0.0.2").session == "s_b"
    write_policy(path, None, raw=b'{"clients": {"10.0.0.3": {"session": "s_c", "allow": ["a b"]}}}')
    event = f.refresh()
    assert event["event"] == "policy_error" and 'host pattern "a b": bad characters' in event["error"]
    assert f.lookup("10.0.0.2").session == "s_b"  # the last good policy
    assert f.refresh() is None  # one event per version
    path.unlink()
    assert f.refresh() == {"event": "policy_error", "path": str(path), "error": "No such file or directory"}
    assert f.refresh() is None
    assert f.lookup("10.0.0.2").session == "s_b"
    write_policy(path, {"10.0.0.4": {"session": "s_d"}})
    assert f.refresh() == {"event": "policy", "clients": 1}


def test_policy_file_same_stat_is_compared_by_contents_when_racy(tmp_path, monkeypatch):
    # Two writes within one tick of the file system's clock can leave the same inode, size and
    # times; a version read less than RACY_NS after its ctime is then read again and compared.
    monkeypatch.setattr(egress_policy, "file_version", lambda st: (1, 2, 3, 4))  # every version alike
    path = tmp_path / "policy.json"
    write_policy(path, {"10.0.0.1": {"session": "s_a"}})
    f = PolicyFile(str(path))
    assert f.start() is None
    assert f.refresh() is None  # read again: the same contents, no event
    write_policy(path, {"10.0.0.1": {"session": "s_b"}})
    assert f.refresh() == {"event": "policy", "clients": 1}
    assert f.lookup("10.0.0.1").session == "s_b"
    # a version read long enough after its ctime is not read again while its stat is the same
    monkeypatch.setattr(egress_policy, "RACY_NS", -10 ** 12)
    write_policy(path, {"10.0.0.1": {"session": "s_c"}})
    assert f.refresh() is None
    assert f.lookup("10.0.0.1").session == "s_b"


def test_policy_file_missing_at_start(tmp_path):
    path = tmp_path / "policy.json"
    f = PolicyFile(str(path))
    assert f.start() == {"event": "policy_error", "path": str(path),
                         "error": "missing (not written yet): every client is refused until it is"}
    assert not f.read_well and f.lookup("10.0.0.1") is None
    assert f.refresh() is None  # the start said so already
    write_policy(path, None, raw=b'{"clients": {"*": {"session": "s_a"')  # being written
    assert f.refresh()["error"].startswith("not JSON")
    assert not f.read_well
    write_policy(path, {"*": {"session": "s_a"}})
    assert f.refresh() == {"event": "policy", "clients": 1}
    assert f.read_well and f.lookup("10.0.0.1").session == "s_a"
    # its folder must exist, and a file that exists must parse
    with pytest.raises(FileNotFoundError, match="its folder %s does not exist" % (tmp_path / "nope")):
        PolicyFile(str(tmp_path / "nope" / "policy.json")).start()
    write_policy(path, None, raw=b"{")
    with pytest.raises(ValueError, match="not JSON"):
        PolicyFile(str(path)).start()


# ---- the real proxy with a policy file, on loopback ---------------------------------------

ME = "127.0.0.1"  # the tests' address as the proxy sees it: their client entry
NAMES = ["pypi.test", "files.hosted.test", "evil.hosted.test", "hosted.test", "other.test"]


class PolicyProxy(ProxyProcess):
    """egress_proxy.py in policy mode as runboxd would start it (python3 -I, --deadline 0), each
    of NAMES resolving to 127.0.0.1 (--resolve)."""

    def __init__(self, policy_file, *args):
        argv = [sys.executable, "-I", str(PROXY), "--listen", "127.0.0.1:0", "--max-connections", "16",
                "--connect-timeout", "3", "--deadline", "0", "--policy-file", str(policy_file),
                *["--resolve=%s=127.0.0.1" % n for n in NAMES], *args]
        self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.events = queue.Queue()
        self.lines = []
        threading.Thread(target=self._read, daemon=True).start()
        self.port = int(self.wait_event("ready", 10)["listen"].rsplit(":", 1)[1])

    def get(self, host, port, path="/"):
        return split_response(self.exchange(b"GET http://%s:%d%s HTTP/1.1\r\nHost: %s:%d\r\n\r\n"
                                             % (host.encode(), port, path.encode(), host.encode(), port)))

    def connect_tunnel(self, host, port):
        """CONNECT, then a request inside the tunnel: (status of the CONNECT, raw answer)."""
        with self.connect() as s:
            s.sendall(b"CONNECT %s:%d HTTP/1.1\r\nHost: %s:%d\r\n\r\n" % (host.encode(), port, host.encode(), port))
            head = b""
            while b"\r\n\r\n" not in head:
                chunk = s.recv(1)
                assert chunk, head
                head += chunk
            status = int(head.split(b" ")[1])
            if status != 200:
                return status, head + read_all(s)
            s.sendall(b"GET /tunnelled HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n" % host.encode())
            return status, read_all(s)


@pytest.fixture
def origin(upstream):
    """The HTTP server on 127.0.0.1 of test_egress_proxy.py."""
    return upstream


@pytest.fixture
def policy_path(tmp_path):
    return tmp_path / "egress-policy.json"


@pytest.fixture
def make_proxy(policy_path):
    procs = []

    def make(clients, *args):
        if clients is not None:  # None: no file at start
            write_policy(policy_path, clients)
        p = PolicyProxy(policy_path, *args)
        procs.append(p)
        return p

    yield make
    for p in procs:
        p.close()


def session(allow=(), deny=(), name="s_test"):
    return {ME: {"session": name, "allow": list(allow), "deny": list(deny)}}


def loopback(origin):
    return ["--allow", "127.0.0.1/32", "--allow-port", str(origin.port)]


def test_allowed_names_are_reached_by_get_and_connect(origin, make_proxy):
    proxy = make_proxy(session(["pypi.test", "*.hosted.test"]), *loopback(origin))
    raw = proxy.exchange(b"GET http://PyPI.test.:%d/simple/ HTTP/1.1\r\nHost: x\r\n\r\n" % origin.port)
    status, _, body = split_response(raw)
    assert (status, body) == (200, b"hello from upstream /simple/")
    assert origin.seen[0][2]["host"] == "PyPI.test.:%d" % origin.port  # the authority as the client wrote it
    assert proxy.wait_event("allowed") == {"event": "allowed", "rule": "pypi.test", "session": "s_test",
                                           "client": ME, "host": "pypi.test", "port": origin.port,
                                           "address": "127.0.0.1"}
    closed = proxy.wait_event("closed")
    assert closed["session"] == "s_test" and closed["host"] == "pypi.test"
    assert closed["bytes_down"] == len(raw) and closed["bytes_up"] > 0

    status, raw = proxy.connect_tunnel("files.hosted.test", origin.port)
    assert status == 200
    assert split_response(raw)[2] == b"hello from upstream /tunnelled"
    ev = proxy.wait_event("allowed")
    assert (ev["host"], ev["rule"], ev["session"]) == ("files.hosted.test", "*.hosted.test", "s_test")
    closed = proxy.wait_event("closed")
    assert closed["host"] == "files.hosted.test" and closed["bytes_down"] == len(raw)
    assert closed["bytes_up"] == len(b"GET /tunnelled HTTP/1.1\r\nHost: files.hosted.test\r\nConnection: close\r\n\r\n")
    assert [p for _, p, _, _ in origin.seen] == ["/simple/", "/tunnelled"]


def assert_refused(proxy, status_raw, host, port, reason):
    status, headers, body = split_response(status_raw) if isinstance(status_raw, bytes) else status_raw
    assert status == 403
    assert body == ("runbox egress proxy refused %s:%d: %s\n" % (host, port, reason)).encode()
    assert headers["x-runbox-refused"] == reason
    assert proxy.wait_event("refused") == {"event": "refused", "session": "s_test", "client": ME, "host": host,
                                           "port": port, "address": None, "reason": reason}


def test_unlisted_and_denied_names_are_refused_naming_the_rule(origin, make_proxy):
    proxy = make_proxy(session(["pypi.test", "*.hosted.test"], ["evil.hosted.test"]), *loopback(origin))
    listed = "not in the allow list (allow: pypi.test, *.hosted.test)"
    for host, reason in [("other.test", listed), ("hosted.test", listed),
                         ("evil.hosted.test", "denied by rule 'evil.hosted.test'"),
                         ("127.0.0.1", "an IP address: the policy names hosts (allow: pypi.test, *.hosted.test)")]:
        assert_refused(proxy, proxy.get(host, origin.port), host, origin.port, reason)
        status, raw = proxy.connect_tunnel(host, origin.port)  # refused before any tunnel
        # the refusal is in the status line too: clients of a refused tunnel show only that
        line = ("HTTP/1.1 403 Forbidden: runbox egress proxy refused %s:%d: %s\r\n" % (host, origin.port, reason))
        assert raw.startswith(line.encode()), raw[:300]
        assert_refused(proxy, raw, host, origin.port, reason)
    assert origin.seen == []
    proxy.no_event("allowed", wait=0.2)


def test_port_specific_patterns_through_the_proxy(origin, make_proxy):
    other = Upstream()  # a second origin, on a port no pattern names
    threading.Thread(target=other.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    try:
        # no --allow-port: the origin's port is allowed by the pattern that names it only
        proxy = make_proxy(session(["pypi.test:%d" % origin.port, "*.hosted.test"]), "--allow", "127.0.0.1/32")
        assert proxy.get("pypi.test", origin.port)[0] == 200
        assert proxy.connect_tunnel("pypi.test", origin.port)[0] == 200
        listed = "(allow: pypi.test:%d, *.hosted.test)" % origin.port
        assert_refused(proxy, proxy.get("pypi.test", other.port), "pypi.test", other.port,
                       "port %d not in the allow list %s" % (other.port, listed))
        assert_refused(proxy, proxy.get("files.hosted.test", origin.port), "files.hosted.test", origin.port,
                       "port %d not in the allow list %s" % (origin.port, listed))
        assert other.seen == []
        assert len(origin.seen) == 2
    finally:
        other.shutdown()
        other.server_close()


def test_a_policy_changed_while_running_applies_to_the_next_connection(origin, make_proxy, policy_path):
    proxy = make_proxy(session(["pypi.test"]), *loopback(origin))
    assert proxy.get("pypi.test", origin.port)[0] == 200
    assert proxy.get("other.test", origin.port)[0] == 403
    write_policy(policy_path, session(["other.test"], name="s_test"))
    assert proxy.get("other.test", origin.port)[0] == 200
    assert proxy.wait_event("policy") == {"event": "policy", "clients": 1}
    assert_refused(proxy, proxy.get("pypi.test", origin.port), "pypi.test", origin.port,
                   "not in the allow list (allow: other.test)")
    # the session's entry removed: its address is no longer known
    write_policy(policy_path, {})
    status, headers, body = proxy.get("other.test", origin.port)
    assert (status, headers["x-runbox-refused"]) == (403, "unknown client")
    assert [p for _, p, _, _ in origin.seen] == ["/", "/"]


def test_each_connection_obeys_the_policy_written_just_before_it(origin, make_proxy, policy_path):
    proxy = make_proxy({"*": {"session": "s_0", "allow": ["pypi.test"]}}, *loopback(origin))
    hosts = ["pypi.test", "other.test"]
    for i in range(1, 21):  # each version written right before the connection, with no pause
        allowed, refused = hosts[i % 2], hosts[(i + 1) % 2]
        write_policy(policy_path, {"*": {"session": "s_%d" % i, "allow": [allowed]}})
        status, headers, _ = proxy.get(allowed, origin.port)
        assert status == 200, (i, headers)
        assert proxy.wait_event("allowed")["session"] == "s_%d" % i
        write_policy(policy_path, {"*": {"session": "s_%d" % i, "allow": [allowed], "deny": [refused]}})
        status, headers, _ = proxy.get(refused, origin.port)
        assert (status, headers["x-runbox-refused"]) == (403, "denied by rule '%s'" % refused), i
    assert len(origin.seen) == 20


def test_a_proxy_started_without_its_file_waits_for_it(origin, make_proxy, policy_path):
    # runboxd writes the file into the proxy's folder once the proxy runs (and after a restart)
    proxy = make_proxy(None, *loopback(origin))
    assert proxy.wait_event("policy_error") == {
        "event": "policy_error", "path": str(policy_path),
        "error": "missing (not written yet): every client is refused until it is"}
    for status_raw in (proxy.get("pypi.test", origin.port), proxy.connect_tunnel("pypi.test", origin.port)[1]):
        status, headers, body = split_response(status_raw) if isinstance(status_raw, bytes) else status_raw
        assert (status, headers["x-runbox-refused"]) == (403, "no policy yet")
        assert body == b"runbox egress proxy refused pypi.test:%d: no policy yet\n" % origin.port
        assert proxy.wait_event("refused") == {"event": "refused", "session": None, "client": ME,
                                               "host": "pypi.test", "port": origin.port, "address": None,
                                               "reason": "no policy yet"}
    proxy.no_event("policy_error", wait=0.1)  # said once
    write_policy(policy_path, None, raw=b'{"clients": {"*": {"session": "s_test", "allow": ["pypi.t')
    assert proxy.get("pypi.test", origin.port)[1]["x-runbox-refused"] == "no policy yet"  # never read well
    assert proxy.wait_event("policy_error")["error"].startswith("not JSON")
    write_policy(policy_path, {"*": {"session": "s_test", "allow": ["pypi.test"]}})
    assert proxy.get("pypi.test", origin.port)[0] == 200
    assert proxy.wait_event("policy") == {"event": "policy", "clients": 1}
    assert proxy.wait_event("allowed")["session"] == "s_test"
    write_policy(policy_path, {"192.0.2.7": {"session": "s_other"}})  # read well once: unknown from now on
    assert proxy.get("pypi.test", origin.port)[1]["x-runbox-refused"] == "unknown client"
    assert [p for _, p, _, _ in origin.seen] == ["/"]


def test_an_unknown_client_is_refused(origin, make_proxy):
    proxy = make_proxy({"192.0.2.7": {"session": "s_other", "allow": ["pypi.test"]}}, *loopback(origin))
    for status_raw in (proxy.get("pypi.test", origin.port), proxy.connect_tunnel("pypi.test", origin.port)[1]):
        status, headers, body = split_response(status_raw) if isinstance(status_raw, bytes) else status_raw
        assert status == 403
        assert body == b"runbox egress proxy refused pypi.test:%d: unknown client\n" % origin.port
        assert proxy.wait_event("refused") == {"event": "refused", "session": None, "client": ME,
                                               "host": "pypi.test", "port": origin.port, "address": None,
                                               "reason": "unknown client"}
    assert origin.seen == []


def test_a_malformed_file_keeps_the_last_good_policy(origin, make_proxy, policy_path):
    proxy = make_proxy(session(["pypi.test"]), *loopback(origin))
    write_policy(policy_path, None, raw=b'{"clients": {"127.0.0.1": {"session": "s_test", "allow": ["oth')
    assert proxy.get("pypi.test", origin.port)[0] == 200
    assert proxy.wait_event("policy_error")["error"].startswith("not JSON")
    write_policy(policy_path, None, raw=json.dumps({"clients": {ME: {"session": "s_test", "allow": ["*.*.test"]}}})
                 .encode())
    assert proxy.get("pypi.test", origin.port)[0] == 200
    ev = proxy.wait_event("policy_error")
    assert ev["path"] == str(policy_path)
    assert ev["error"] == ('clients["127.0.0.1"].allow: host pattern "*.*.test": '
                           "'*' only as the whole first label, as in *.example.org")
    assert proxy.get("other.test", origin.port)[0] == 403
    write_policy(policy_path, session(["other.test"]))  # a good version again
    assert proxy.get("other.test", origin.port)[0] == 200
    proxy.wait_event("policy")


def test_a_name_allowed_by_policy_whose_address_is_private_is_refused(origin, make_proxy):
    # pypi.test resolves to 127.0.0.1, which --allow does not list: the address check, after
    # resolution, refuses it whatever the name patterns say
    proxy = make_proxy(session(["pypi.test", "*.test"]), "--allow", "127.0.0.2/32", "--allow-port", str(origin.port))
    for status_raw in (proxy.get("pypi.test", origin.port), proxy.connect_tunnel("other.test", origin.port)[1]):
        status, headers, body = split_response(status_raw) if isinstance(status_raw, bytes) else status_raw
        assert (status, headers["x-runbox-refused"]) == (403, "loopback address")
        ev = proxy.wait_event("refused")
        assert (ev["session"], ev["address"], ev["reason"]) == ("s_test", "127.0.0.1", "loopback address")
    assert origin.seen == []


def test_the_byte_cap_watch_is_the_page_readers_only(origin, make_proxy):
    proxy = make_proxy(session(["pypi.test"]), *loopback(origin))
    status, _, body = split_response(proxy.exchange(b"GET /runbox/byte-cap HTTP/1.1\r\nHost: egress\r\n\r\n"))
    assert status == 400


def run_proxy(*args):
    return subprocess.run([sys.executable, "-I", str(PROXY), "--listen", "127.0.0.1:0", "--max-connections", "1",
                           "--connect-timeout", "1", *args], capture_output=True, text=True, timeout=20)


def test_a_missing_policy_folder_fails_at_start(tmp_path):
    path = tmp_path / "no-such-folder" / "egress-policy.json"
    r = run_proxy("--deadline", "0", "--policy-file", str(path))
    assert r.returncode == 2, r
    assert "--policy-file %s: its folder %s does not exist" % (path, path.parent) in r.stderr
    assert r.stdout == ""  # never ready


def test_a_malformed_policy_file_fails_at_start(policy_path):
    for raw, why in [(b'{"clients": {"*": {"session": "s_a"', "not JSON"),
                     (json.dumps({"clients": session(["pypi.test:99999"])}).encode(),
                      'host pattern "pypi.test:99999": port out of range'),
                     (b'{"clients": {"*": {"session": "s a"}}}', 'clients["*"].session: not a session id')]:
        write_policy(policy_path, None, raw=raw)
        r = run_proxy("--deadline", "0", "--policy-file", str(policy_path))
        assert r.returncode == 2 and "--policy-file %s: " % policy_path in r.stderr and why in r.stderr, r
        assert r.stdout == ""


def test_bad_policy_settings_fail_at_start(policy_path):
    write_policy(policy_path, session(["pypi.test"]))
    r = run_proxy("--deadline", "0", "--policy-file", str(policy_path), "--max-bytes", "100")
    assert r.returncode == 2 and "--max-bytes: the byte cap is the page reader's" in r.stderr
    r = run_proxy("--deadline", "0", "--max-bytes", "100")  # no lifetime limit: policy mode only
    assert r.returncode == 2 and "--max-bytes and --deadline must be positive" in r.stderr
    r = run_proxy("--deadline", "1", "--policy-file", str(policy_path), "--resolve", "pypi.test")
    assert r.returncode == 2 and "--resolve pypi.test: not NAME=ADDR" in r.stderr

"""egress_secrets: the operator's secrets that a session's egress proxy adds to requests for the
hosts they are bound to, so that sandbox code can use them without seeing them (docs/network.md,
"Secrets"). Python stdlib and the image's `openssl` command only.

- Secret / parse_secrets: a client's "secrets" in the policy file (runboxd writes them there, in
  the proxy's own folder; the sandbox never sees that file): name, host patterns, the header it
  goes in, the header's value, and the strings to scrub from answers.
- bound(): the secrets of a client that apply to host:port (by name, as the policy decides).
- inject(): a request's headers with each bound secret's header set (whatever the client sent in
  it, e.g. the placeholder, is dropped) and `Accept-Encoding: identity`, so that an answer that
  echoes the header comes back in a form the Scrubber can see.
- host_agrees(): whether a request's Host header names the host it goes to (a secret is never
  sent with a Host that disagrees: a virtual host on the same address is another site).
- Scrubber: replaces each secret string in an answer's bytes by as many '*' (the same length, so
  that Content-Length and chunk sizes stay right), across read boundaries.
- SessionCA: the proxy's own CA (made with openssl at start in --ca-dir, which only the proxy
  container holds), the bundle the sandbox trusts (the image's CAs, the operator's upstream CAs
  and this CA), a leaf certificate per bound host name, and the context that checks upstreams.

It never logs and never puts a value into an event: the proxy emits the secret's name only.
"""

import asyncio
import collections
import os
import re
import ssl
import subprocess

MAX_SECRETS = 32  # secrets of one client
MAX_VALUE = 8192  # characters of a header value
MAX_LEAVES = 256  # leaf certificates kept
HEADER = re.compile(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")
SYSTEM_BUNDLE = "/etc/ssl/certs/ca-certificates.crt"
BUNDLE = ".runbox-egress-ca.pem"  # in the CA folder; runboxd copies it into the sandbox's /workspace

Secret = collections.namedtuple("Secret", "name hosts header value scrub")


def parse_secrets(items, what, parse_pattern):
    """A tuple of Secret from ITEMS (the policy file's list); raises ValueError naming WHAT and the
    bad field (never a value). PARSE_PATTERN: egress_policy.parse_pattern."""
    if not isinstance(items, list) or len(items) > MAX_SECRETS:
        raise ValueError("%s: not a list of at most %d secrets" % (what, MAX_SECRETS))
    out = []
    for i, item in enumerate(items):
        w = "%s[%d]" % (what, i)
        if not isinstance(item, dict) or set(item) != {"name", "hosts", "header", "value", "scrub"}:
            raise ValueError("%s: not {name, hosts, header, value, scrub}" % w)
        name, header, value, scrub = item["name"], item["header"], item["value"], item["scrub"]
        if not isinstance(name, str) or not 0 < len(name) <= 64:
            raise ValueError("%s.name: not a name" % w)
        if not isinstance(header, str) or not HEADER.match(header) or len(header) > 64:
            raise ValueError("%s.header: not a header name" % w)
        if not isinstance(value, str) or not 0 < len(value) <= MAX_VALUE or any(c in value for c in "\r\n\0"):
            raise ValueError("%s.value: not a header value" % w)
        if not isinstance(scrub, list) or not all(isinstance(s, str) and 0 < len(s) <= MAX_VALUE for s in scrub):
            raise ValueError("%s.scrub: not a list of strings" % w)
        if not isinstance(item["hosts"], list) or not item["hosts"]:
            raise ValueError("%s.hosts: not a list of host patterns" % w)
        hosts = tuple(parse_pattern(h) for h in item["hosts"])
        out.append(Secret(name, hosts, header, value, tuple(scrub)))
    return tuple(out)


def bound(secrets, host, port, default_ports):
    """The secrets of SECRETS whose host patterns match HOST:PORT (a name; a pattern without a port
    matches DEFAULT_PORTS)."""
    name = host.lower().rstrip(".")
    out = []
    for s in secrets:
        for p in s.hosts:
            if p.matches_name(name) and (port == p.port or (p.port is None and port in default_ports)):
                out.append(s)
                break
    return out


def inject(headers, secrets):
    """HEADERS ([(name, value)]) with each secret's header set to its value (any header of that name
    the client sent is dropped) and Accept-Encoding: identity."""
    names = {s.header.lower() for s in secrets} | {"accept-encoding"}
    out = [(n, v) for n, v in headers if n.lower() not in names]
    for s in secrets:
        out.append((s.header, s.value))
    out.append(("Accept-Encoding", "identity"))
    return out


def host_agrees(headers, host, port, default_port, parse_authority):
    """Whether the request's Host header (at most one) names HOST:PORT; no Host header agrees (the
    proxy sends the target's)."""
    values = [v for n, v in headers if n.lower() == "host"]
    if not values:
        return True
    if len(values) > 1:
        return False
    hp = parse_authority(values[0].strip(), default_port)
    return hp is not None and hp == (host.lower().rstrip("."), port)


class Scrubber:
    """Replaces the secrets' strings in a byte stream by '*'s of the same length."""

    def __init__(self, secrets):
        pairs = {}
        for s in secrets:
            for t in s.scrub:
                b = t.encode("latin-1", "replace")
                pairs[b] = b"*" * len(b)
        self.pairs = sorted(pairs.items(), key=lambda kv: -len(kv[0]))
        self.keep = max((len(k) for k in pairs), default=1) - 1
        self.tail = b""

    def replace(self, data):
        for k, v in self.pairs:
            if k in data:
                data = data.replace(k, v)
        return data

    def feed(self, data):
        """The bytes that may go now; up to keep bytes are held back for the next call."""
        buf = self.replace(self.tail + data)
        if len(buf) <= self.keep:
            self.tail = buf
            return b""
        cut = len(buf) - self.keep
        self.tail = buf[cut:]
        return buf[:cut]

    def flush(self):
        out, self.tail = self.tail, b""
        return out


def openssl(*args, cwd):
    r = subprocess.run(["openssl", *args], cwd=cwd, capture_output=True, text=True, timeout=60)
    if r.returncode != 0:
        raise OSError("openssl %s: %s" % (args[0], (r.stderr or "").strip()[-300:]))


class SessionCA:
    """The proxy's CA in DIRECTORY (made once: a restarted proxy keeps it, so that the sandbox's
    bundle stays right) and its leaf certificates. UPSTREAM_PEM: the operator's CAs for upstreams
    (None: the image's only)."""

    def __init__(self, directory, upstream_pem=None):
        self.dir = directory
        self.upstream_pem = upstream_pem
        self.leaves = {}  # host -> ssl.SSLContext
        self.making = {}  # host -> asyncio.Future of a leaf being made
        self.upstream = None

    def start(self):
        """Makes the CA if it is not there, writes the sandbox's bundle, prepares the upstream
        context. Raises OSError."""
        os.makedirs(self.dir, mode=0o700, exist_ok=True)
        key, cert = os.path.join(self.dir, "ca.key"), os.path.join(self.dir, "ca.pem")
        if not (os.path.exists(key) and os.path.exists(cert)):
            old = os.umask(0o077)
            try:
                openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                        "-keyout", "ca.key.new", "-out", "ca.pem.new", "-days", "3650",
                        "-subj", "/O=runbox/CN=runbox egress session CA",
                        "-addext", "basicConstraints=critical,CA:TRUE,pathlen:0",
                        "-addext", "keyUsage=critical,keyCertSign,cRLSign", cwd=self.dir)
            finally:
                os.umask(old)
            os.replace(os.path.join(self.dir, "ca.key.new"), key)
            os.replace(os.path.join(self.dir, "ca.pem.new"), cert)
        with open(cert) as f:
            ca_pem = f.read()
        try:
            with open(SYSTEM_BUNDLE) as f:
                system = f.read()
        except OSError:
            system = ""
        bundle = system.rstrip("\n") + "\n" + (self.upstream_pem or "").strip() + "\n" + ca_pem
        tmp = os.path.join(self.dir, BUNDLE + ".new")
        with open(tmp, "w") as f:
            f.write(bundle)
        os.chmod(tmp, 0o644)
        os.replace(tmp, os.path.join(self.dir, BUNDLE))
        self.upstream = ssl.create_default_context()
        if self.upstream_pem:
            self.upstream.load_verify_locations(cadata=self.upstream_pem)
        self.upstream.set_alpn_protocols(["http/1.1"])

    def make_leaf(self, host):
        """A certificate for HOST (a name the policy matched) signed by the CA: its SSL context."""
        base = os.path.join(self.dir, "leaf-" + host)
        openssl("req", "-x509", "-CA", "ca.pem", "-CAkey", "ca.key", "-newkey", "ec", "-pkeyopt",
                "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", base + ".key", "-out", base + ".pem",
                "-days", "30", "-subj", "/CN=" + host, "-addext", "subjectAltName=DNS:" + host,
                "-addext", "basicConstraints=critical,CA:FALSE", "-addext", "keyUsage=critical,digitalSignature",
                "-addext", "extendedKeyUsage=serverAuth", cwd=self.dir)
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(base + ".pem", base + ".key")
        ctx.set_alpn_protocols(["http/1.1"])
        return ctx

    async def server_context(self, host):
        """The context the proxy answers HOST's TLS with (made once per name, in a thread)."""
        ctx = self.leaves.get(host)
        if ctx is not None:
            return ctx
        fut = self.making.get(host)
        if fut is None:
            fut = asyncio.get_running_loop().run_in_executor(None, self.make_leaf, host)
            self.making[host] = fut
        try:
            ctx = await asyncio.shield(fut)
        finally:
            self.making.pop(host, None)
        if len(self.leaves) >= MAX_LEAVES:
            self.leaves.clear()
        self.leaves[host] = ctx
        return ctx

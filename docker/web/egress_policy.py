"""egress_policy: where runbox's egress proxy (egress_proxy.py) may connect, as data and checks.

Two checks, in this order, for every connection the proxy would open:

1. by name, before resolution, for sandbox sessions only (the proxy's --policy-file mode): a
   Policy of host patterns, {"allow": [...], "deny": [...]}. A pattern is `pypi.org` (exactly that
   name) or `*.pythonhosted.org` (any name ending in `.pythonhosted.org`, not the bare name),
   optionally with `:PORT`. Names are compared case-insensitively, a trailing dot ignored; an IP
   address (in any form a resolver accepts: 1.2.3.4, [::1], 2130706433, 0x7f.1) is never matched
   by a name pattern. A target is allowed when no deny pattern matches and some allow pattern
   does; the Decision names the rule that decided, so that an agent reading a refusal can tell
   what to ask for.
2. by address, after resolution, in every mode (check_address): each address the name resolves
   to must be a public (global unicast) address or inside an operator's --allow network,
   whatever the name patterns say (a name may resolve to anything: DNS rebinding).

Ports: an allow pattern without a port allows the proxy's default ports (80 and 443 plus its
--allow-port ones), with `:PORT` only that port (which it grants even when not a default one);
a deny pattern without a port denies every port, with `:PORT` only that port.

The policy file (PolicyFile) is runboxd's: {"clients": {"<client ip>": {"session": "s_...",
"allow": [...], "deny": [...], "secrets": [...]}}}, one entry per sandbox address on its internal network, or the
one entry "*" for any address (a proxy of one session, alone with its sandbox on their network);
a client's own address wins over "*". The proxy looks at the file (os.stat) on every new
connection and reads it when it changed, so that a connection opened after runboxd replaced it
obeys the new version. A version that cannot be read or parsed (being written, say) keeps the
last good policy. A file missing at start is no error while its folder exists (runboxd writes it
once the proxy runs): until a version is read well, no client is known.

This module is Python stdlib only and does no I/O at import; only PolicyFile reads (its one
file, and at start whether its folder exists, when asked). It never resolves names, opens
connections or logs: the proxy does.
"""

import collections
import ipaddress
import json
import os
import re
import sys
import time

# The sibling module (python3 -I leaves the script's folder off sys.path)
if os.path.dirname(os.path.abspath(__file__)) not in sys.path:
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from egress_secrets import parse_secrets  # noqa: E402

MAX_PATTERNS = 256  # patterns in one allow or deny list
MAX_NAME = 253  # characters of a DNS name (without its trailing dot)
MAX_LABEL = 63
MAX_SESSION = 128  # characters of a session id
MAX_POLICY_FILE = 8 << 20  # bytes of the policy file
MAX_LISTED = 400  # characters of allow list quoted in a refusal
ANY_CLIENT = "*"  # the policy file's key for any client address
RACY_NS = 2_000_000_000  # a version read less than this after its ctime is read again at each look

LABEL = re.compile(r"[a-z0-9_-]+")
NUMERIC_LABEL = re.compile(r"[0-9]+|0x[0-9a-f]*")
SESSION = re.compile(r"[A-Za-z0-9_.:-]+")

# ---- addresses (every mode) ------------------------------------------------------------------

_V4_REFUSED = [
    (ipaddress.ip_network("0.0.0.0/8"), "unspecified address"),
    (ipaddress.ip_network("127.0.0.0/8"), "loopback address"),
    (ipaddress.ip_network("169.254.0.0/16"), "link-local address"),
    (ipaddress.ip_network("10.0.0.0/8"), "private address"),
    (ipaddress.ip_network("172.16.0.0/12"), "private address"),
    (ipaddress.ip_network("192.168.0.0/16"), "private address"),
    (ipaddress.ip_network("100.64.0.0/10"), "private address"),  # carrier-grade NAT
    (ipaddress.ip_network("224.0.0.0/4"), "multicast address"),
    (ipaddress.ip_network("240.0.0.0/4"), "reserved address"),  # and 255.255.255.255
]
_V6_REFUSED = [
    (ipaddress.ip_network("::/128"), "unspecified address"),
    (ipaddress.ip_network("::1/128"), "loopback address"),
    (ipaddress.ip_network("fe80::/10"), "link-local address"),
    (ipaddress.ip_network("fc00::/7"), "private address"),
    (ipaddress.ip_network("fec0::/10"), "private address"),  # deprecated site-local
    (ipaddress.ip_network("64:ff9b:1::/48"), "private address"),  # local-use NAT64
    (ipaddress.ip_network("ff00::/8"), "multicast address"),
]
_NAT64 = ipaddress.ip_network("64:ff9b::/96")
_6TO4 = ipaddress.ip_network("2002::/16")


def check_address(address, allow=()):
    """Whether the proxy may connect to ADDRESS (an IP address string or ipaddress object).

    ALLOW is a sequence of ipaddress networks (the operator's --allow); an address inside one is
    allowed whatever it is. Otherwise only global unicast addresses are: IPv4-mapped IPv6
    addresses are judged as their IPv4 address, NAT64 (64:ff9b::/96) and 6to4 (2002::/16)
    addresses as the IPv4 address they embed. Returns None when allowed, else the reason as a
    short phrase ("loopback address", "private address", "link-local address", ...).
    """
    ip = ipaddress.ip_address(address) if isinstance(address, str) else address
    if ip.version == 6:
        if ip.scope_id:
            return "link-local address"
        if ip.ipv4_mapped is not None:
            ip = ip.ipv4_mapped
    for net in allow:
        if ip.version == net.version and ip in net:
            return None
    if ip.version == 4:
        for net, reason in _V4_REFUSED:
            if ip in net:
                return reason
        return None if ip.is_global else "non-global address"
    for net, reason in _V6_REFUSED:
        if ip in net:
            return reason
    if ip in _NAT64:
        return check_address(ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF), allow)
    if ip in _6TO4:
        return check_address(ipaddress.IPv4Address((int(ip) >> 80) & 0xFFFFFFFF), allow)
    if ip.is_multicast:
        return "multicast address"
    if ip.is_reserved:
        return "reserved address"
    return None if ip.is_global else "non-global address"


def is_address(host):
    """Whether HOST (a host as a URL or CONNECT names it, brackets removed) is an IP address
    rather than a name: an IPv6 address, or a name whose last label is a number (decimal, octal
    or 0x hex), which resolvers read as an IPv4 address (127.1, 2130706433, 0x7f.1; the WHATWG
    URL rule)."""
    if ":" in host:
        return True
    last = host.lower().rstrip(".").rpartition(".")[2]
    return bool(NUMERIC_LABEL.fullmatch(last))


# ---- names (sandbox sessions) ----------------------------------------------------------------


class HostPattern:
    """One parsed host pattern (parse_pattern): DOMAIN (lower case, no trailing dot), whether it
    is a wildcard (`*.DOMAIN`), and its PORT (None: the defaults for allow, every port for deny).
    TEXT is its canonical spelling, as refusals quote it."""

    __slots__ = ("domain", "wildcard", "port", "text")

    def __init__(self, domain, wildcard, port):
        self.domain = domain
        self.wildcard = wildcard
        self.port = port
        self.text = ("*." if wildcard else "") + domain + ("" if port is None else ":%d" % port)

    def matches_name(self, name):
        """NAME: lower case, no trailing dot, not an address (Policy.decide sees to it)."""
        if self.wildcard:
            return name.endswith("." + self.domain) and len(name) > len(self.domain) + 1
        return name == self.domain

    def __repr__(self):
        return "HostPattern(%r)" % self.text


def parse_pattern(text):
    """The HostPattern TEXT spells: `name`, `*.name`, each optionally with `:PORT`.

    Raises ValueError naming the pattern and what is wrong with it: empty, too long, bad
    characters, `*` not as the whole first label, an IP address, port not a number or out of
    range."""

    def bad(why):
        return ValueError("host pattern %s: %s" % (json.dumps(text)[:300], why))

    if not isinstance(text, str):
        raise bad("not a string")
    if not text.strip():
        raise bad("empty")
    if len(text) > MAX_NAME + 1 + 6:
        raise bad("too long (a name has at most %d characters)" % MAX_NAME)
    if text.startswith("[") or text.count(":") > 1:
        raise bad("an IP address, not a name (patterns match host names only)")
    name, sep, port_text = text.partition(":")
    port = None
    if sep:
        if not port_text.isascii() or not port_text.isdigit() or len(port_text) > 5:
            raise bad("the port is not a number")
        port = int(port_text)
        if not 0 < port < 65536:
            raise bad("port out of range (1-65535)")
    name = name.lower()
    wildcard = name.startswith("*.")
    domain = name[2:] if wildcard else name
    domain = domain[:-1] if domain.endswith(".") else domain  # a trailing dot: the same name
    if "*" in domain:
        raise bad("'*' only as the whole first label, as in *.example.org")
    if not domain:
        raise bad("a wildcard needs a domain after it, as in *.example.org" if wildcard else "empty")
    if len(domain) > MAX_NAME:
        raise bad("too long (a name has at most %d characters)" % MAX_NAME)
    for label in domain.split("."):
        if not label:
            raise bad("empty label")
        if len(label) > MAX_LABEL:
            raise bad("a label is longer than %d characters" % MAX_LABEL)
        if not LABEL.fullmatch(label):
            raise bad("bad characters (letters, digits, '-', '_' and '.' only; the xn-- form of international names)")
    if is_address(domain):
        raise bad("an IP address, not a name (patterns match host names only)")
    return HostPattern(domain, wildcard, port)


def parse_patterns(items, what):
    """A tuple of HostPatterns from ITEMS (a JSON list); raises ValueError naming WHAT."""
    if not isinstance(items, list):
        raise ValueError("%s: not a list of host patterns" % what)
    if len(items) > MAX_PATTERNS:
        raise ValueError("%s: %d patterns, at most %d" % (what, len(items), MAX_PATTERNS))
    out = []
    for item in items:
        try:
            out.append(parse_pattern(item))
        except ValueError as e:
            raise ValueError("%s: %s" % (what, e)) from None
    return tuple(out)


Decision = collections.namedtuple("Decision", "allowed rule reason")
Decision.__doc__ = """Policy.decide's answer: ALLOWED, the RULE that decided (a pattern's text, None
when no rule matched) and the REASON as a short sentence for logs and refusals."""


class Policy:
    """A session's allow and deny lists (tuples of HostPattern)."""

    def __init__(self, allow=(), deny=()):
        self.allow = tuple(allow)
        self.deny = tuple(deny)

    @classmethod
    def parse(cls, obj, what="policy"):
        """The Policy of OBJ ({"allow": [...], "deny": [...]}, both optional, nothing else);
        raises ValueError naming the bad key or pattern."""
        if not isinstance(obj, dict):
            raise ValueError("%s: not an object" % what)
        for key in obj:
            if key not in ("allow", "deny"):
                raise ValueError("%s: unknown key %s" % (what, json.dumps(key)))
        return cls(parse_patterns(obj.get("allow", []), what + ".allow"),
                   parse_patterns(obj.get("deny", []), what + ".deny"))

    def decide(self, host, port, default_ports):
        """Whether HOST:PORT may be reached by name. HOST as the client named it (any case,
        trailing dot or not); DEFAULT_PORTS: the ports an allow pattern without a port allows.
        The address check (check_address) is not part of it: it runs after resolution."""
        name = host.lower().rstrip(".")
        if is_address(name):
            return Decision(False, None, "an IP address: the policy names hosts (%s)" % self.listed())
        for p in self.deny:
            if p.matches_name(name) and p.port in (None, port):
                return Decision(False, p.text, "denied by rule '%s'" % p.text)
        known = False
        for p in self.allow:
            if p.matches_name(name):
                if port == p.port or (p.port is None and port in default_ports):
                    return Decision(True, p.text, "allowed by rule '%s'" % p.text)
                known = True
        if known:
            return Decision(False, None, "port %d not in the allow list (%s)" % (port, self.listed()))
        return Decision(False, None, "not in the allow list (%s)" % self.listed())

    def listed(self):
        """The allow list as a refusal quotes it: "allow: a, b" (cut after MAX_LISTED characters)."""
        if not self.allow:
            return "allow: none"
        out = ""
        for i, p in enumerate(self.allow):
            if out and len(out) + len(p.text) > MAX_LISTED:
                return "allow: %s, ... (%d more)" % (out, len(self.allow) - i)
            out += (", " if out else "") + p.text
        return "allow: " + out


# ---- the policy file -------------------------------------------------------------------------

Client = collections.namedtuple("Client", "session policy secrets")
Client.__new__.__defaults__ = ((),)  # secrets: egress_secrets.Secret tuples (none by default)


def client_key(address):
    """The canonical text of a client address (IPv4-mapped IPv6 as IPv4, no scope); None when
    ADDRESS is not an IP address."""
    try:
        ip = ipaddress.ip_address(address.split("%", 1)[0])
    except (ValueError, AttributeError):
        return None
    if ip.version == 6 and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return str(ip)


def _unique_keys(pairs):
    out = {}
    for key, value in pairs:
        if key in out:
            raise ValueError("duplicate key %s" % json.dumps(key))
        out[key] = value
    return out


def parse_policy_file(data):
    """The {client address or "*": Client} of a policy file's DATA (bytes); raises ValueError
    naming the bad key, client or pattern. "*" (ANY_CLIENT) is a key like an address: at most
    once, with a session id and a policy."""
    if len(data) > MAX_POLICY_FILE:
        raise ValueError("larger than %d bytes" % MAX_POLICY_FILE)
    try:
        doc = json.loads(data.decode("utf-8"), object_pairs_hook=_unique_keys)
    except UnicodeDecodeError:
        raise ValueError("not UTF-8") from None
    except json.JSONDecodeError as e:
        raise ValueError("not JSON: %s" % e) from None
    if not isinstance(doc, dict) or not isinstance(doc.get("clients"), dict):
        raise ValueError('not an object with "clients": {...}')
    for key in doc:
        if key != "clients":
            raise ValueError("unknown key %s" % json.dumps(key))
    clients = {}
    for address, entry in doc["clients"].items():
        key = ANY_CLIENT if address == ANY_CLIENT else client_key(address)
        what = "clients[%s]" % json.dumps(address)[:60]
        if key is None:
            raise ValueError('%s: not an IP address or "*"' % what)
        if key in clients:
            raise ValueError("%s: the same address twice" % what)
        if not isinstance(entry, dict):
            raise ValueError("%s: not an object" % what)
        session = entry.get("session")
        if not isinstance(session, str) or len(session) > MAX_SESSION or not SESSION.fullmatch(session):
            raise ValueError("%s.session: not a session id (1-%d of A-Z a-z 0-9 _ . : -)" % (what, MAX_SESSION))
        policy = Policy.parse({k: v for k, v in entry.items() if k not in ("session", "secrets")}, what)
        secrets = ()
        if "secrets" in entry:
            secrets = parse_secrets(entry["secrets"], what + ".secrets", parse_pattern)
        clients[key] = Client(session, policy, secrets)
    return clients


def file_version(st):
    """What tells two versions of the policy file apart without reading them (ST: an os.stat
    result): inode, size, mtime and ctime."""
    return (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


class PolicyFile:
    """The policy file at PATH as last read well, looked at again on every new connection.

    start() reads it at start-up; refresh() looks at it (os.stat) and reads it when its
    file_version changed since the last read, or when that read came less than RACY_NS after the
    version's ctime (two writes within one tick of the file system's clock may leave the same
    stat: then the contents tell). A version that fails to read or parse keeps the last good
    policy (before the first: no client) and is read again once its stat changes. READ_WELL:
    whether some version was read well."""

    def __init__(self, path):
        self.path = path
        self.clients = {}
        self.read_well = False
        self.seen = None  # file_version of the last version read, good or not; ("error", errno)
        self.data = None  # its contents
        self.read_at = None  # time.time_ns() when it was read

    def start(self):
        """Reads the file at start-up: returns None when read well, or the policy_error event to
        log when the file does not exist yet (its folder does: runboxd will write it). Raises
        OSError (its folder does not exist, or it cannot be read) or ValueError (malformed)."""
        try:
            self.load()
        except FileNotFoundError as e:
            folder = os.path.dirname(self.path) or "."
            if not os.path.isdir(folder):
                raise FileNotFoundError(e.errno, "its folder %s does not exist" % folder) from None
            self.seen = ("error", e.errno)
            return {"event": "policy_error", "path": self.path,
                    "error": "missing (not written yet): every client is refused until it is"}
        return None

    def load(self):
        """Reads the file: True when it parsed (READ_WELL from then on), False when its version
        and contents are those of the last read (nothing parsed); raises OSError or ValueError
        (the policy stays as it was)."""
        read_at = time.time_ns()
        with open(self.path, "rb") as f:
            version = file_version(os.fstat(f.fileno()))
            data = f.read(MAX_POLICY_FILE + 1)
        same = version == self.seen and data == self.data
        self.seen, self.data, self.read_at = version, data, read_at
        if same:
            return False
        self.clients = parse_policy_file(data)
        self.read_well = True
        return True

    def refresh(self):
        """Looks at the file (see the class); returns None when nothing changed, else the event
        to log: {"event": "policy", "clients": n} or {"event": "policy_error", "path": ...,
        "error": ...} (once per version; once per errno while it cannot be read)."""
        try:
            st = os.stat(self.path)
            if file_version(st) == self.seen and st.st_ctime_ns < self.read_at - RACY_NS:
                return None
            if not self.load():
                return None
        except OSError as e:
            if self.seen == ("error", e.errno):
                return None
            self.seen = ("error", e.errno)
            return {"event": "policy_error", "path": self.path, "error": e.strerror or str(e)}
        except ValueError as e:
            return {"event": "policy_error", "path": self.path, "error": str(e)}
        return {"event": "policy", "clients": len(self.clients)}

    def lookup(self, address):
        """The Client at ADDRESS (a peer address as the socket gives it): its own entry, else
        the "*" entry; None when there is neither."""
        client = self.clients.get(client_key(address))
        return client if client is not None else self.clients.get(ANY_CLIENT)

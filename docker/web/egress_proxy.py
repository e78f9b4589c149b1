#!/usr/bin/env python3
"""egress_proxy: runbox's egress proxy, the only way out for the web-page reader's browser (runbox
get_page_text) and, with --policy-file, for sandbox sessions whose network is by policy.

An HTTP/1.1 forward proxy (asyncio, Python stdlib only) that runs in its own container, on the
operator's outbound network and on the internal network(s) of its clients. It tunnels
`CONNECT host:port` (TLS) and forwards one absolute-form request (`GET http://host:port/path`,
any method) per client connection with `Connection: close`. Every target is checked after name
resolution (egress_policy.check_address): each address the name resolves to must be a public
(global unicast) address or inside an operator's --allow network; the proxy then connects to
the checked address itself and never resolves again. It bounds the concurrent connections and
the size of request heads, and writes one JSON line per event on stdout.

Two modes:
- the page reader (without --policy-file): one proxy per read, for one browser. Ports 80, 443
  and the --allow-ports; the bytes relayed to the browser are capped (--max-bytes) across all
  its connections; its lifetime is bounded (--deadline > 0). Events: ready, refused,
  unreachable, byte_cap, log_cap, connection_limit, stop. Its one request of its own is
  fetch_page's byte-cap watch (`GET /runbox/byte-cap`, origin-form, which a browser never sends
  to a proxy): answered once the cap is reached. While a watch is open, a response the cap cuts
  is not ended but held open, sending nothing more: Chromium stops parsing a document whose body
  ends early and drops what it received but had not parsed yet (under load, all of it), while a
  held document keeps every byte that was relayed. When the watch closes (fetch_page has read
  the page, or the document was complete), held responses end as without a watch.
- sandbox sessions (--policy-file PATH, see egress_policy): a long-lived proxy (--deadline 0:
  no lifetime limit) for the sandboxes of one session or of many. Each client address maps to
  a session and its policy of host patterns (the entry "*": any address without one of its
  own), checked by name before resolution (the address check still runs after it); an address
  not in the file is refused ("unknown client"). The file is looked at on every new connection
  and read when it changed, so that the connection obeys the version in place when it was
  accepted; a version that cannot be read or parsed keeps the last good policy (event
  policy_error). PATH need not exist at start (runboxd writes it once the proxy runs, and again
  after a restart) but its folder must: the proxy then starts with no policy, says so with one
  policy_error right after ready, refuses every connection ("no policy yet") until a version
  is read well, and serves from the first connection after that. A file that exists at start
  must parse. No byte cap and no byte-cap watch (--max-bytes is refused): those are the page
  reader's. Events: ready, policy, policy_error, allowed and refused (with session and
  client), closed (bytes_up: sent upstream, bytes_down: relayed to the client), unreachable,
  log_cap, connection_limit, stop.
In the page reader's mode refused, unreachable, allowed and closed lines together stop at
MAX_EVENT_LINES, then one log_cap line; in policy mode they are not capped (runboxd reads them
as they come: a long-lived proxy's counts must not stop). --resolve NAME=ADDR (like curl's) is for tests only.

With --ca-dir (policy mode, sessions with secrets; egress_secrets), a client's request to a host
one of its secrets is bound to gets the secret added: over HTTP as it is forwarded; over HTTPS the
CONNECT is answered, TLS ended with a leaf of the proxy's own session CA, the one request read
and sent on over the proxy's own TLS to the host (its certificate checked), and the answer
relayed with the value scrubbed. Every other CONNECT stays an end-to-end tunnel. Events:
secret_used and secret_refused (the secret's name, never its value).

It is not a general-purpose proxy: no keep-alive, no caching, no TLS interception but for
secrets, no authentication, no absolute-form https:// (clients use CONNECT for that), and it
does not look at what it relays but to scrub a secret from an answer. It trusts its command line and policy file (runboxd) and nothing a client
sends.
"""
import argparse
import asyncio
import concurrent.futures
import ipaddress
import json
import os
import re
import signal
import socket
import ssl
import sys

# The sibling module: python3 -I (as runboxd starts it) leaves the script's folder off sys.path.
if os.path.dirname(os.path.abspath(__file__)) not in sys.path:
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from egress_policy import PolicyFile, check_address, client_key  # noqa: E402
from egress_secrets import Scrubber, SessionCA, bound, host_agrees, inject  # noqa: E402

MAX_HEAD = 64 * 1024  # bytes of a request or response head (request line and headers)
HEAD_TIMEOUT = 30.0  # seconds a client has to send its request head
CHUNK = 256 * 1024  # bytes relayed per read
# An upstream connection's read buffer (asyncio pauses the socket beyond twice this): large, so
# that a download is relayed in few large reads; its response head is still capped at MAX_HEAD.
RELAY_LIMIT = 1024 * 1024
MAX_EVENT_LINES = 1000  # refused/unreachable/allowed/closed lines written before log_cap
DEFAULT_PORTS = (80, 443)
TUNNEL_LINGER = 5.0  # seconds a tunnel stays open for the upstream after the client's end closed
WATCH_PATH = "/runbox/byte-cap"  # fetch_page's byte-cap watch (see above)

# Hop-by-hop headers (RFC 9110 section 7.6.1) that a proxy must not forward, plus the proxy's
# own. Transfer-Encoding stays: bodies are relayed unchanged, so their framing is kept.
HOP_BY_HOP = {
    "connection",
    "keep-alive",
    "proxy-connection",
    "proxy-authenticate",
    "proxy-authorization",
    "te",
    "trailer",
    "upgrade",
}

TOKEN = re.compile(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")
HOSTNAME = re.compile(r"^[A-Za-z0-9_]([A-Za-z0-9_.-]{0,252})$")

def parse_authority(authority, default_port):
    """Splits "host", "host:port" or "[v6]:port" into (host, port); None when malformed."""
    if not authority or "@" in authority:
        return None
    if authority.startswith("["):
        end = authority.find("]")
        if end < 0:
            return None
        host, rest = authority[1:end], authority[end + 1 :]
        try:
            ipaddress.IPv6Address(host)
        except ValueError:
            return None
        if rest and not rest.startswith(":"):
            return None
        port_text = rest[1:] if rest else ""
    else:
        host, sep, port_text = authority.partition(":")
        if sep and not port_text:
            return None
        if not HOSTNAME.match(host):
            return None
    if port_text:
        if not port_text.isdigit() or len(port_text) > 5:
            return None
        port = int(port_text)
    else:
        port = default_port
    if port is None or not 0 < port < 65536:
        return None
    return host.lower().rstrip(".") or None, port


class Refused(Exception):
    def __init__(self, reason, address=None):
        super().__init__(reason)
        self.reason = reason
        self.address = address


class Unreachable(Exception):
    pass


class Meter:
    """One upstream connection's byte counts; EVENT (policy mode) is logged as "closed" with them.
    SECRETS: the client's secrets bound to the target (egress_secrets); SCRUBBER, once they were
    added to a request, cleans the answer."""

    __slots__ = ("up", "down", "event", "secrets", "scrubber")

    def __init__(self, event=None, secrets=()):
        self.up = self.down = 0
        self.event = event
        self.secrets = secrets
        self.scrubber = None


class BadRequest(Exception):
    def __init__(self, status, text):
        super().__init__(text)
        self.status = status
        self.text = text


class Proxy:
    """One proxy process: its settings, counters and the connections it holds."""

    def __init__(self, args):
        self.allow = [ipaddress.ip_network(c, strict=False) for c in args.allow]
        self.ports = set(DEFAULT_PORTS) | set(args.allow_port)
        self.policies = args.policies  # a started PolicyFile in policy mode, else None
        self.ca = args.ca  # a started egress_secrets.SessionCA with --ca-dir, else None
        self.resolve = args.resolve  # --resolve (tests): name -> ipaddress
        self.max_bytes = args.max_bytes  # None in policy mode: no byte cap
        self.max_connections = args.max_connections
        self.connect_timeout = args.connect_timeout
        self.relayed = 0  # bytes from upstreams to clients
        self.capped = False
        self.clients = 0
        self.requests = 0
        self.event_lines = 0
        self.limit_logged = False
        self.upstreams = {}  # writer of each open upstream connection -> its client's writer
        self.cut = set()  # writers of clients whose response the cap cut mid-body: held, see hold()
        self.cap_reached = asyncio.Event()
        self.watchers = 0  # open byte-cap watches
        self.unwatched = asyncio.Event()  # set while there is none
        self.unwatched.set()
        self.tasks = set()
        # getaddrinfo blocks a thread until the resolver gives up (which can take longer than
        # --connect-timeout): a pool of its own, as large as the connections, so that names
        # that never resolve cannot hold up the others
        self.resolver = concurrent.futures.ThreadPoolExecutor(max_workers=max(4, min(64, self.max_connections)))

    # ---- events --------------------------------------------------------------------------
    def emit(self, **event):
        try:
            sys.stdout.write(json.dumps(event, separators=(",", ":")) + "\n")
            sys.stdout.flush()
        except (OSError, ValueError):
            pass

    def emit_counted(self, **event):
        """Refused, unreachable, allowed and closed events: in the page reader's mode at most
        MAX_EVENT_LINES, then one log_cap; in policy mode all of them (runboxd reads them as they
        come, counting connections for /metrics and each execution's report)."""
        if self.policies is not None:
            self.emit(**event)
        elif self.event_lines < MAX_EVENT_LINES:
            self.event_lines += 1
            self.emit(**event)
        elif self.event_lines == MAX_EVENT_LINES:
            self.event_lines += 1
            self.emit(event="log_cap", max_events=MAX_EVENT_LINES)

    # ---- byte cap ------------------------------------------------------------------------
    def take_bytes(self, n):
        """How many of N upstream bytes may still go to the client; trips the cap at the end."""
        if self.max_bytes is None:
            self.relayed += n
            return n
        if self.capped:
            return 0
        room = self.max_bytes - self.relayed
        take = min(n, room)
        self.relayed += take
        if self.relayed >= self.max_bytes:
            self.trip_cap()
        return take

    def trip_cap(self):
        if self.capped:
            return
        self.capped = True
        self.emit(event="byte_cap", max_bytes=self.max_bytes)
        self.cap_reached.set()
        for w, client in list(self.upstreams.items()):
            if client is not None:
                self.cut.add(client)
            w.transport.abort()

    async def watch(self, reader, writer):
        """The byte-cap watch: answers 200 once the cap is reached (at once if it is), then holds
        what the cap cut (hold()) until the watcher closes this connection."""
        self.watchers += 1
        self.unwatched.clear()
        closed = asyncio.ensure_future(discard_input(reader))
        capped = asyncio.ensure_future(self.cap_reached.wait())
        try:
            await asyncio.wait({closed, capped}, return_when=asyncio.FIRST_COMPLETED)
            if not closed.done():
                await answer(writer, 200, "OK", "byte cap reached\n")
                await closed
        finally:
            for t in (closed, capped):
                t.cancel()
            self.watchers -= 1
            if self.watchers == 0:
                self.unwatched.set()

    async def hold(self, reader):
        """Keeps a client connection whose response the cap cut open, sending nothing more, while
        a byte-cap watch is open or until the client closes it."""
        if self.unwatched.is_set():
            return
        closed = asyncio.ensure_future(discard_input(reader))
        released = asyncio.ensure_future(self.unwatched.wait())
        try:
            await asyncio.wait({closed, released}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for t in (closed, released):
                t.cancel()

    # ---- target check and connect --------------------------------------------------------
    async def open_upstream(self, host, port, client=None):
        """Resolves, checks and connects for CLIENT (the writer of the connection it serves);
        returns (reader, writer, address). Raises Refused or Unreachable. In policy mode the
        policy has checked the name and the port already."""
        if self.capped:
            raise Refused("byte cap reached")
        if self.policies is None and port not in self.ports:
            raise Refused("port not allowed")
        loop = asyncio.get_running_loop()
        try:
            literal = ipaddress.ip_address(host)
        except ValueError:
            literal = self.resolve.get(host)  # None but in tests
        if literal is not None:  # an address in standard form is used as it is
            family = socket.AF_INET if literal.version == 4 else socket.AF_INET6
            infos = [(family, socket.SOCK_STREAM, socket.IPPROTO_TCP, "", (str(literal), port))]
        else:  # a name, or an address in another form (2130706433, 0x7f.1): the resolver says
            try:
                infos = await asyncio.wait_for(
                    loop.run_in_executor(
                        self.resolver, socket.getaddrinfo, host, port, 0, socket.SOCK_STREAM, socket.IPPROTO_TCP
                    ),
                    self.connect_timeout,
                )
            except (OSError, asyncio.TimeoutError, UnicodeError):
                raise Refused("name does not resolve")
        addresses = []
        for family, _, _, _, sockaddr in infos:
            if family not in (socket.AF_INET, socket.AF_INET6):
                continue
            ip = ipaddress.ip_address(sockaddr[0].split("%")[0])
            if family == socket.AF_INET6 and len(sockaddr) > 3 and sockaddr[3]:
                raise Refused("link-local address", str(ip))
            reason = check_address(ip, self.allow)
            if reason:
                raise Refused(reason, str(ip))
            if ip not in addresses:
                addresses.append(ip)
        if not addresses:
            raise Refused("name does not resolve")
        last = "no address"
        for ip in addresses:
            try:
                reader, writer = await asyncio.wait_for(
                    asyncio.open_connection(str(ip), port, limit=RELAY_LIMIT), self.connect_timeout
                )
            except asyncio.TimeoutError:
                last = "connect timed out"
                continue
            except OSError as e:
                last = (e.strerror or str(e)).lower()
                continue
            if self.capped:
                writer.transport.abort()
                raise Refused("byte cap reached")
            self.upstreams[writer] = client
            return reader, writer, str(ip)
        raise Unreachable(last)

    # ---- client connections --------------------------------------------------------------
    async def handle(self, reader, writer):
        task = asyncio.current_task()
        self.tasks.add(task)
        self.clients += 1
        try:
            if self.policies is not None:
                event = self.policies.refresh()
                if event:
                    self.emit(**event)
            if self.clients > self.max_connections:
                if not self.limit_logged:
                    self.limit_logged = True
                    self.emit(event="connection_limit", max_connections=self.max_connections)
                await answer(writer, 503, "Service Unavailable", "too many connections\n")
                return
            await self.serve(reader, writer)
            if writer in self.cut:
                await self.hold(reader)
        except (OSError, EOFError, asyncio.IncompleteReadError, asyncio.TimeoutError):
            pass
        except Exception as e:  # a bug: this connection ends, the proxy goes on
            sys.stderr.write("egress_proxy: %s: %s\n" % (type(e).__name__, e))
        finally:
            self.clients -= 1
            self.cut.discard(writer)
            await close_gracefully(reader, writer)
            self.tasks.discard(task)

    async def serve(self, reader, writer):
        try:
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), HEAD_TIMEOUT)
        except asyncio.LimitOverrunError:
            await answer(writer, 431, "Request Header Fields Too Large", "request head too large\n")
            return
        except ValueError:  # the separator was not found before the limit
            await answer(writer, 431, "Request Header Fields Too Large", "request head too large\n")
            return
        try:
            method, target, headers = parse_head(head)
            if method == "GET" and target == WATCH_PATH and self.policies is None:
                await self.watch(reader, writer)
            elif method == "CONNECT":
                hp = parse_authority(target, None)
                if hp is None:
                    raise BadRequest(400, "CONNECT needs host:port\n")
                await self.tunnel(reader, writer, *hp)
            else:
                if not target[:7].lower() == "http://":
                    raise BadRequest(400, "only absolute http:// URLs and CONNECT are proxied\n")
                await self.forward(reader, writer, method, target[7:], headers)
        except BadRequest as e:
            await answer(writer, e.status, "Bad Request" if e.status == 400 else "Error", e.text)

    async def connect_or_answer(self, writer, host, port):
        """The policy check (policy mode) and open_upstream: (reader, writer, Meter), or None after
        answering 403 or 502 (and logging)."""
        self.requests += 1
        who = {}
        try:
            rule = None
            if self.policies is not None:
                peer = writer.get_extra_info("peername")
                client = self.policies.lookup(peer[0] if peer else "")
                who = {"session": client and client.session, "client": client_key(peer[0]) if peer else None}
                if client is None:
                    raise Refused("unknown client" if self.policies.read_well else "no policy yet")
                decision = client.policy.decide(host, port, self.ports)
                if not decision.allowed:
                    raise Refused(decision.reason)
                rule = decision.rule
            up_reader, up_writer, address = await self.open_upstream(host, port, writer)
            if not who:
                return up_reader, up_writer, Meter()
            event = dict(who, host=host, port=port, address=address)
            self.emit_counted(event="allowed", rule=rule, **event)
            return up_reader, up_writer, Meter(event, bound(client.secrets, host, port, self.ports))
        except Refused as e:
            self.emit_counted(event="refused", **who, host=host, port=port, address=e.address, reason=e.reason)
            text = "runbox egress proxy refused %s:%d: %s" % (host, port, e.reason)
            # the refusal in the reason phrase too: clients of a refused CONNECT (urllib,
            # requests, pip) show only the status line ("Tunnel connection failed: 403 ...")
            await answer(writer, 403, reason_phrase("Forbidden: " + text), text + "\n",
                         [("X-Runbox-Refused", e.reason)])
        except Unreachable as e:
            self.emit_counted(event="unreachable", **who, host=host, port=port, reason=str(e))
            await answer(writer, 502, "Bad Gateway", "runbox egress proxy could not reach %s:%d: %s\n" % (host, port, e))
        return None

    async def tunnel(self, reader, writer, host, port):
        up = await self.connect_or_answer(writer, host, port)
        if up is None:
            return
        up_reader, up_writer, meter = up
        try:
            if meter.secrets and self.ca is not None:
                await self.intercept(reader, writer, up_reader, up_writer, meter, host, port)
                return
            writer.write(b"HTTP/1.1 200 Connection Established\r\n\r\n")
            await writer.drain()
            await self.relay_both(reader, writer, up_reader, up_writer, meter)
        finally:
            self.close_upstream(up_writer, meter)

    async def intercept(self, reader, writer, up_reader, up_writer, meter, host, port):
        """A tunnel to a host a secret of the client is bound to: TLS is ended here with a leaf of the
        session's CA, the one request read, the secret added, and sent on over TLS checked against
        the image's and the operator's CAs (never end to end: an upstream that fails the check gets
        nothing)."""
        ctx = await self.ca.server_context(host)
        # no await between the answer and start_tls: the client's TLS hello must reach TLS, not the
        # plain stream's buffer (start_tls stops the plain reading at once)
        writer.write(b"HTTP/1.1 200 Connection Established\r\n\r\n")
        await writer.start_tls(ctx, ssl_handshake_timeout=HEAD_TIMEOUT)
        try:
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), HEAD_TIMEOUT)
        except (asyncio.LimitOverrunError, ValueError):
            await answer(writer, 431, "Request Header Fields Too Large", "request head too large\n")
            return
        try:
            method, target, headers = parse_head(head)
            if not target.startswith("/"):
                raise BadRequest(400, "an origin-form request (GET /path) inside the tunnel\n")
            body = request_body_framing(headers)
        except BadRequest as e:
            await answer(writer, e.status, "Bad Request", e.text)
            return
        try:
            await up_writer.start_tls(self.ca.upstream, server_hostname=host, ssl_handshake_timeout=self.connect_timeout)
        except (ssl.SSLError, ssl.CertificateError, OSError, asyncio.TimeoutError) as e:
            self.emit_counted(event="unreachable", **{k: meter.event[k] for k in ("session", "client")},
                              host=host, port=port, reason="TLS: %s" % reason_phrase(str(e), 200))
            await answer(writer, 502, "Bad Gateway",
                         "runbox egress proxy could not reach %s:%d over TLS: %s\n" % (host, port, e))
            return
        await self.send_request(reader, writer, up_reader, up_writer, meter, method, target, headers, body,
                                host, port, 443)

    async def forward(self, reader, writer, method, rest, headers):
        # rest: the absolute URL without "http://": authority, then path and query
        cut = len(rest)
        for c in "/?#":
            i = rest.find(c)
            if 0 <= i < cut:
                cut = i
        authority, path = rest[:cut], rest[cut:].split("#", 1)[0]
        if path.startswith("?") or not path:
            path = "/" + path
        hp = parse_authority(authority, 80)
        if hp is None:
            raise BadRequest(400, "bad host in the request URL\n")
        host, port = hp
        body = request_body_framing(headers)
        up = await self.connect_or_answer(writer, host, port)
        if up is None:
            return
        up_reader, up_writer, meter = up
        try:
            await self.send_request(reader, writer, up_reader, up_writer, meter, method, path, headers, body,
                                    host, port, 80, authority)
        finally:
            self.close_upstream(up_writer, meter)

    async def send_request(self, reader, writer, up_reader, up_writer, meter, method, path, headers, body, host,
                           port, default_port, authority=None):
        """Sends one request upstream (its secrets added when the client has some bound to the
        target) and relays the answer."""
        if meter.secrets:
            if not host_agrees(headers, host, port, default_port, parse_authority):
                for secret in meter.secrets:
                    self.emit(event="secret_refused", session=meter.event.get("session"), secret=secret.name,
                              host=host, port=port, reason="the Host header disagrees with the target")
                await answer(writer, 421, "Misdirected Request",
                             "runbox egress proxy: the Host header does not name %s:%d, the host this request goes "
                             "to; a secret is never sent with a Host that disagrees\n" % (host, port))
                return
            headers = inject(headers, meter.secrets)
            meter.scrubber = Scrubber(meter.secrets)
            for secret in meter.secrets:
                self.emit(event="secret_used", session=meter.event.get("session"), secret=secret.name, host=host,
                          port=port)
        if authority is None:
            authority = host if port == default_port else "%s:%d" % (host, port)
        drop = HOP_BY_HOP | connection_tokens(headers)
        lines = ["%s %s HTTP/1.1" % (method, path), "Host: %s" % authority]
        for name, value in headers:
            if name.lower() in drop or name.lower() == "host":
                continue
            lines.append("%s: %s" % (name, value))
        lines.append("Connection: close")
        data = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
        up_writer.write(data)
        meter.up += len(data)
        await up_writer.drain()
        # The request body (if any) is relayed in its own task so that an upstream may
        # answer before reading it all.
        sender = asyncio.ensure_future(send_body(reader, up_writer, body, meter))
        try:
            await self.relay_response(up_reader, writer, meter)
        finally:
            sender.cancel()

    async def relay_response(self, up_reader, writer, meter):
        """Relays the one response: its head with the hop-by-hop headers replaced by
        Connection: close, then the rest unchanged until the upstream closes."""
        try:
            head = await up_reader.readuntil(b"\r\n\r\n")
            if len(head) > MAX_HEAD:
                raise ValueError("head too large")
        except (asyncio.LimitOverrunError, ValueError):
            await answer(writer, 502, "Bad Gateway", "upstream response head too large\n")
            return
        except asyncio.IncompleteReadError:
            await answer(writer, 502, "Bad Gateway", "upstream closed without a response\n")
            return
        lines = head.decode("latin-1").split("\r\n")[:-2]
        status, fields = lines[0], []
        for line in lines[1:]:
            name, sep, value = line.partition(":")
            if sep and TOKEN.match(name):
                fields.append((name, value.strip()))
        drop = HOP_BY_HOP | connection_tokens(fields)
        out = [status] + ["%s: %s" % (n, v) for n, v in fields if n.lower() not in drop]
        out.append("Connection: close")
        head = ("\r\n".join(out) + "\r\n\r\n").encode("latin-1")
        if meter.scrubber is not None:  # an answer that echoes the secret shows '*'s
            head = meter.scrubber.replace(head)
        if not await self.send_counted(writer, head, meter):
            self.cut.discard(writer)  # cut within its head: Chromium fails it at once, nothing to keep
            return
        await self.pump(up_reader, writer, meter)

    async def send_counted(self, writer, data, meter):
        """Writes upstream bytes to the client within the byte cap; False once capped."""
        take = self.take_bytes(len(data))
        if take:
            meter.down += take
            writer.write(data[:take])
            await writer.drain()
        return take == len(data) and not self.capped

    async def pump(self, up_reader, writer, meter):
        writer.transport.set_write_buffer_limits(high=RELAY_LIMIT)  # fewer waits in drain()
        scrubber = meter.scrubber
        while True:
            try:
                data = await up_reader.read(CHUNK)
            except ssl.SSLError:  # a TLS upstream that ends without close_notify: the end
                data = b""
            if scrubber is not None:  # an answer that echoes the secret shows '*'s
                if not data:
                    rest = scrubber.flush()
                    if rest:
                        await self.send_counted(writer, rest, meter)
                    return
                data = scrubber.feed(data)
                if not data:
                    continue
            if not data:
                return
            if not await self.send_counted(writer, data, meter):
                return

    async def relay_both(self, reader, writer, up_reader, up_writer, meter):
        async def client_to_upstream():
            try:
                while True:
                    data = await reader.read(CHUNK)
                    if not data:
                        break
                    up_writer.write(data)
                    meter.up += len(data)
                    await up_writer.drain()
                if up_writer.can_write_eof():
                    up_writer.write_eof()
            except OSError:
                pass

        sender = asyncio.ensure_future(client_to_upstream())
        pumper = asyncio.ensure_future(self.pump(up_reader, writer, meter))
        try:
            done, _ = await asyncio.wait({sender, pumper}, return_when=asyncio.FIRST_COMPLETED)
            if pumper not in done:  # the client's end closed: the upstream may still answer
                await asyncio.wait({pumper}, timeout=TUNNEL_LINGER)
        finally:
            for t in (sender, pumper):
                t.cancel()
            for t in (sender, pumper):
                if t.done() and not t.cancelled():
                    t.exception()  # retrieved: a reset connection just ends the tunnel

    def close_upstream(self, up_writer, meter):
        self.upstreams.pop(up_writer, None)
        up_writer.transport.abort()
        if meter.event:
            self.emit_counted(event="closed", **meter.event, bytes_up=meter.up, bytes_down=meter.down)


def parse_head(head):
    """(method, target, [(name, value)]) of a request head; raises BadRequest."""
    try:
        text = head.decode("latin-1")
    except UnicodeDecodeError:
        raise BadRequest(400, "bad request head\n")
    lines = text.split("\r\n")[:-2]
    parts = lines[0].split(" ")
    if len(parts) != 3 or not TOKEN.match(parts[0]) or not parts[2].startswith("HTTP/1."):
        raise BadRequest(400, "bad request line\n")
    method, target = parts[0], parts[1]
    if not target or any(ord(c) <= 32 or ord(c) == 127 for c in target):
        raise BadRequest(400, "bad request target\n")
    headers = []
    for line in lines[1:]:
        name, sep, value = line.partition(":")
        if not sep or not TOKEN.match(name):
            raise BadRequest(400, "bad header line\n")
        value = value.strip(" \t")
        if any(c in value for c in "\r\n\0"):
            raise BadRequest(400, "bad header value\n")
        headers.append((name, value))
    return method, target, headers


def connection_tokens(headers):
    """The header names a Connection header lists (they are hop-by-hop too)."""
    out = set()
    for name, value in headers:
        if name.lower() == "connection":
            out |= {t.strip().lower() for t in value.split(",") if t.strip()}
    return out


def request_body_framing(headers):
    """("length", n), ("chunked", None) or ("none", None); raises BadRequest for framing a
    single-request proxy cannot relay unambiguously."""
    lengths = {v.strip() for n, v in headers if n.lower() == "content-length"}
    codings = [v.strip().lower() for n, v in headers if n.lower() == "transfer-encoding"]
    if codings:
        if lengths or codings != ["chunked"]:
            raise BadRequest(400, "unsupported request body framing\n")
        return ("chunked", None)
    if not lengths:
        return ("none", None)
    if len(lengths) != 1:
        raise BadRequest(400, "conflicting Content-Length headers\n")
    value = lengths.pop()
    if not value.isdigit():
        raise BadRequest(400, "bad Content-Length\n")
    return ("length", int(value))


async def close_gracefully(reader, writer):
    """Ends a client connection: FIN after what was written, then what the client still sends
    is read and dropped (at most 1 MiB for 1 s) so that closing does not reset the connection
    before the client has read the answer."""

    async def drop_input():
        n = 0
        while n < 1 << 20:
            data = await reader.read(CHUNK)
            if not data:
                return
            n += len(data)

    try:
        if writer.can_write_eof():
            writer.write_eof()
        await asyncio.wait_for(drop_input(), 1.0)
    except (Exception, asyncio.CancelledError):
        pass
    finally:
        writer.transport.abort()


async def discard_input(reader):
    """Reads what a client sends and drops it, until it closes its end."""
    try:
        while await reader.read(CHUNK):
            pass
    except (OSError, ValueError):
        pass


async def send_body(reader, up_writer, framing, meter):
    """Relays one request body, framed as the client framed it, and nothing after it (counted in
    METER.up); a client that breaks the framing just ends the relay."""
    try:
        await send_body_framed(reader, up_writer, framing, meter)
    except (OSError, ValueError, EOFError, asyncio.IncompleteReadError, asyncio.LimitOverrunError):
        pass


async def send_body_framed(reader, up_writer, framing, meter):
    def put(data):
        up_writer.write(data)
        meter.up += len(data)

    kind, n = framing
    if kind == "length":
        while n > 0:
            data = await reader.read(min(CHUNK, n))
            if not data:
                return
            n -= len(data)
            put(data)
            await up_writer.drain()
    elif kind == "chunked":
        while True:
            line = await reader.readuntil(b"\r\n")
            put(line)
            size = int(line.split(b";", 1)[0].strip() or b"x", 16)
            if size == 0:
                while True:  # trailers, then the empty line
                    line = await reader.readuntil(b"\r\n")
                    put(line)
                    if line == b"\r\n":
                        break
                await up_writer.drain()
                return
            left = size + 2  # the data and its CRLF
            while left > 0:
                data = await reader.read(min(CHUNK, left))
                if not data:
                    return
                left -= len(data)
                put(data)
                await up_writer.drain()


def reason_phrase(text, limit=400):
    """TEXT as an HTTP reason phrase: printable ASCII only, at most LIMIT characters."""
    return "".join(ch if " " <= ch <= "~" else "?" for ch in text[:limit])


async def answer(writer, status, phrase, text, extra=()):
    """A complete response of the proxy's own, then the connection is to be closed."""
    body = text.encode("utf-8")
    lines = ["HTTP/1.1 %d %s" % (status, phrase), "Content-Type: text/plain; charset=utf-8"]
    lines += ["%s: %s" % (n, v) for n, v in extra]
    lines += ["Content-Length: %d" % len(body), "Connection: close"]
    try:
        writer.write(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body)
        await asyncio.wait_for(writer.drain(), 5)
    except (OSError, asyncio.TimeoutError):
        pass


def parse_args(argv):
    p = argparse.ArgumentParser(description="runbox's egress proxy (web-page reader; sandbox sessions by policy)")
    p.add_argument("--listen", required=True, help="HOST:PORT to listen on, e.g. 0.0.0.0:3128")
    p.add_argument("--allow", action="append", default=[], help="CIDR whose addresses are allowed")
    p.add_argument("--allow-port", action="append", default=[], type=int, help="port allowed beside 80 and 443")
    p.add_argument("--max-bytes", type=int, help="bytes relayed at most (page reader only, required there)")
    p.add_argument("--max-connections", required=True, type=int)
    p.add_argument("--connect-timeout", required=True, type=float)
    p.add_argument("--deadline", required=True, type=float, help="seconds to live (0: no limit, policy mode only)")
    p.add_argument("--policy-file", help="sandbox sessions: the clients' policies (see egress_policy)")
    p.add_argument("--resolve", action="append", default=[], metavar="NAME=ADDR", help="tests only: NAME resolves to ADDR")
    p.add_argument("--ca-dir", help="policy mode: a folder of the proxy's own for its session CA (adds secrets)")
    p.add_argument("--upstream-ca-pem", help="with --ca-dir: CA certificates (PEM text) upstreams may be signed by")
    args = p.parse_args(argv)
    resolve = {}
    for item in args.resolve:
        name, _, address = item.partition("=")
        try:
            resolve[name.lower().rstrip(".")] = ipaddress.ip_address(address)
        except ValueError:
            p.error("--resolve %s: not NAME=ADDR" % item)
    args.resolve = resolve
    args.policies = args.policy_event = args.ca = None
    if args.ca_dir is not None:
        if args.policy_file is None:
            p.error("--ca-dir: only with --policy-file")
        args.ca = SessionCA(args.ca_dir, args.upstream_ca_pem)
        try:
            args.ca.start()
        except (OSError, ssl.SSLError, ValueError) as e:
            p.error("--ca-dir %s: %s" % (args.ca_dir, e))
    if args.policy_file is not None:
        if args.max_bytes is not None:
            p.error("--max-bytes: the byte cap is the page reader's, not with --policy-file")
        args.policies = PolicyFile(args.policy_file)
        try:
            args.policy_event = args.policies.start()  # a policy_error when it is not there yet
        except (OSError, ValueError) as e:
            p.error("--policy-file %s: %s" % (args.policy_file, getattr(e, "strerror", None) or e))
    elif args.max_bytes is None or args.max_bytes < 1 or args.deadline <= 0:
        p.error("--max-bytes and --deadline must be positive (without --policy-file)")
    for c in args.allow:
        try:
            ipaddress.ip_network(c, strict=False)
        except ValueError:
            p.error("--allow %s: not a CIDR" % c)
    if any(not 0 < port < 65536 for port in args.allow_port):
        p.error("--allow-port: not a port")
    if args.max_connections < 1 or args.connect_timeout <= 0 or args.deadline < 0:
        p.error("--max-connections and --connect-timeout must be positive, --deadline not negative")
    host, _, port = args.listen.rpartition(":")
    host = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    if not host or not port.isdigit() or int(port) > 65535:
        p.error("--listen %s: not HOST:PORT" % args.listen)
    return args, (host, int(port))


async def main(argv):
    args, (host, port) = parse_args(argv)
    proxy = Proxy(args)
    loop = asyncio.get_running_loop()
    stop = loop.create_future()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, lambda s=sig: stop.done() or stop.set_result("signal"))
    if args.deadline:  # 0 (policy mode): a long-lived proxy
        loop.call_later(args.deadline, lambda: stop.done() or stop.set_result("deadline"))
    server = await asyncio.start_server(proxy.handle, host, port, limit=MAX_HEAD, backlog=128)
    # The address as bound (the same as --listen unless it asked for port 0)
    bound = server.sockets[0].getsockname()
    proxy.emit(event="ready", listen=("[%s]:%d" if ":" in bound[0] else "%s:%d") % bound[:2])
    if args.policy_event:
        proxy.emit(**args.policy_event)
    reason = await stop
    server.close()
    proxy.emit(event="stop", reason=reason, bytes=proxy.relayed, requests=proxy.requests)
    # Open connections are not waited for: the process ends now.
    os._exit(0)


if __name__ == "__main__":
    try:
        asyncio.run(main(sys.argv[1:]))
    except OSError as e:
        sys.stderr.write("egress_proxy: %s\n" % e)
        sys.exit(1)

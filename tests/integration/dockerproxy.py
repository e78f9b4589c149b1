"""A fault-injecting proxy in front of the real Docker engine, for integration tests.

DockerProxy listens on a unix socket of the test's own (point runboxd's --docker-socket at
.path), or with tcp=True on a port of 127.0.0.1 (an engine at .url, tcp://127.0.0.1:PORT), and
relays every connection to /var/run/docker.sock. It reads the HTTP/1.1 requests
going through (one at a time per connection, as HTTP/1.1 clients without pipelining send them;
bodies by Content-Length), and applies to each the first rule whose pattern matches it, or
relays it untouched. A rule's pattern is a regular expression searched in "METHOD /path?query"
with the API version prefix removed, e.g. "POST /containers/create?name=runbox-s_...".

What a rule does with a matching request (arg in brackets):

    pass            relay it and its answer (as if there were no rule)
    delay [s]       relay it; hold the answer for s seconds before relaying it
    delay_request [s]  hold the request s seconds, then relay it (whether or not the client
                    is still there, as a busy engine would) and its answer
    drop            relay it; when the engine starts answering, close both connections
                    without relaying a byte: the engine acted, its answer is lost
    refuse          close the client's connection without relaying the request
    truncate [k]    relay it and the first k bytes of the answer, then close both connections
    truncate_body [k]  relay it, the answer's head and the first k bytes of its body, then
                    close both connections
    stall           relay it; never relay the answer (a hung engine); the connection stays open
    swallow         never relay it, never answer (the connection stays open)
    status [code]   answer HTTP code with Docker's JSON error body, without relaying the request

Attach streams (a request with an Upgrade header, answered 101 and then raw bytes both ways)
follow the rules twice: the handshake like any request, and, once open, whatever rule matches
their request *now*, from the moment it is set: drop and refuse close the stream, truncate
relays k more bytes of the engine's side and closes it, stall stops relaying both ways (and
relaying resumes when the rule goes), delay [s] stops relaying both ways for s seconds from the
moment the rule meets the open stream, once, then relays again (a brief hiccup of the engine;
nothing is lost), the rest relay. held counts the streams a delay has held.

Rules are evaluated in the order they were added; times=N limits a rule to its first N
requests; streams_only=True makes a rule apply only to the attach streams open when it is set,
not to any request or stream that comes later (a cut connection that a new attach replaces). Every request seen is recorded (seen(pattern) counts them). down() takes the engine
away altogether (every connection closed, the socket removed: connecting fails) and up() brings
it back on the same path, as a restart of the Docker daemon would.
"""

from __future__ import annotations

import os
import re
import select
import shutil
import socket
import tempfile
import threading
import time
from dataclasses import dataclass, field

DOCKER_SOCK = "/var/run/docker.sock"

# Patterns of the Engine API calls runboxd makes.
CREATE = r"^POST /containers/create"
START = r"^POST /containers/[^/?]+/start"
ATTACH = r"^POST /containers/[^/?]+/attach"
EXEC = r"(^POST /containers/[^/?]+/exec|/exec/)"
EXEC_CREATE = r"^POST /containers/[^/?]+/exec"
EXEC_START = r"^POST /exec/[^/?]+/start"
ARCHIVE = r"/containers/[^/?]+/archive"
REMOVE = r"^DELETE /containers/"
VERSION = r"^GET /version"
ANY = r""

MODES = {"pass", "delay", "delay_request", "drop", "refuse", "truncate", "truncate_body", "stall", "swallow",
         "status"}
_VERSION_PREFIX = re.compile(r"^/v\d+\.\d+(?=/)")
_TICK = 0.05


@dataclass(eq=False)
class Rule:
    pattern: str
    mode: str
    arg: float = 0
    times: int | None = None
    streams_only: bool = False
    hits: int = 0
    streams: set = field(default_factory=set)  # streams_only: the connections it applies to
    regex: re.Pattern = field(init=False)

    def __post_init__(self):
        if self.mode not in MODES:
            raise ValueError(f"unknown proxy mode {self.mode!r}")
        self.regex = re.compile(self.pattern)


class _Conn:
    """One client connection and its connection to the engine, relayed by two threads."""

    def __init__(self, proxy: "DockerProxy", client: socket.socket, upstream: socket.socket):
        self.proxy = proxy
        self.client = client
        self.upstream = upstream
        self.lock = threading.Lock()
        self.closed = False
        self.target = ""          # "METHOD /path" of the request the engine is answering
        self.rule: Rule | None = None
        self.answer_bytes = 0     # bytes of that answer relayed under self.rule
        self.answer_head = b""    # its head while truncate_body looks for the end of it
        self.head_len = -1        # the head's length once known (truncate_body)
        self.delayed = False
        self.forwarded = False    # the current request was passed on to the engine
        self.answering = False    # the engine has started answering the current request
        self.upgraded = False     # an attach stream: raw bytes both ways
        self.swallowing = False
        self.hold_until = 0.0     # an open stream that a delay rule holds: relay nothing before then

    def close(self):
        with self.lock:
            if self.closed:
                return
            self.closed = True
        for s in (self.client, self.upstream):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            s.close()

    def live_rule(self) -> Rule | None:
        """The rule that governs bytes moving now: an open attach stream follows the rules as
        they are now (a change restarts the count of truncate); a request keeps its own."""
        with self.lock:
            if not self.upgraded:
                return self.rule
            r = self.proxy._match(self.target, count=False, current=self.rule, conn=self)
            if r is not self.rule:
                self.rule = r
                self.answer_bytes = 0
                self.head_len = 0  # on a stream, the body is what follows from now on
                if r is not None and r.mode == "delay":
                    self.delayed = True  # the hold below replaces the delay of an answer
                    self.hold_until = time.monotonic() + r.arg
                    with self.proxy._lock:
                        self.proxy.held.append(self.target)
            return r

    def held_now(self) -> bool:
        """Whether a delay rule holds this open stream at the moment."""
        return self.upgraded and time.monotonic() < self.hold_until

    # -- client -> engine: requests --
    def pump_requests(self):
        buf = b""
        try:
            while not self.closed and not self.proxy._stopping.is_set():
                if self.upgraded:
                    r = self.live_rule()
                    if r is not None and r.mode in ("drop", "refuse"):
                        self.close()
                        return
                    if (r is not None and r.mode == "stall") or self.held_now():
                        time.sleep(_TICK)
                        continue
                ready, _, _ = select.select([self.client], [], [], _TICK)
                if not ready:
                    continue
                data = self.client.recv(65536)
                if not data:
                    # The client gave up; like an engine, finish a request already passed on:
                    # its answer still comes (and is recorded) before both connections close.
                    end = time.monotonic() + 10
                    while self.forwarded and not self.answering and not self.closed and time.monotonic() < end:
                        time.sleep(_TICK)
                    return
                if self.swallowing:
                    continue
                if self.upgraded:
                    self.upstream.sendall(data)
                    continue
                buf += data
                while not self.upgraded and not self.swallowing and not self.closed:
                    req, buf = _split_request(buf)
                    if req is None:
                        break
                    self.handle(req)
                if (self.upgraded or self.swallowing) and buf:
                    if self.upgraded:
                        self.upstream.sendall(buf)
                    buf = b""
        except (OSError, ValueError):  # a socket closed by the other thread
            pass
        finally:
            self.close()

    def handle(self, req: bytes):
        head = req.split(b"\r\n\r\n", 1)[0].decode("latin-1")
        line, *headers = head.split("\r\n")
        parts = line.split(" ")
        method, path = parts[0], parts[1] if len(parts) > 1 else ""
        target = f"{method} {_VERSION_PREFIX.sub('', path)}"
        upgrade = any(h.lower().startswith("upgrade:") for h in headers)
        rule = self.proxy._match(target, count=True)
        self.proxy._record(target, rule)
        mode = rule.mode if rule is not None else "pass"
        with self.lock:
            self.target, self.rule, self.answer_bytes, self.delayed = target, rule, 0, False
            self.answer_head, self.head_len, self.answering, self.forwarded = b"", -1, False, False
        if mode == "refuse":
            self.close()
            return
        if mode == "swallow":
            self.swallowing = True
            return
        if mode == "status":
            code = int(rule.arg or 500)
            body = ('{"message":"fault injected by the test proxy: HTTP %d"}' % code).encode()
            self.client.sendall(b"HTTP/1.1 %d Injected\r\nContent-Type: application/json\r\n"
                                b"Content-Length: %d\r\n\r\n%s" % (code, len(body), body))
            return
        if mode == "delay_request" and not self.proxy._sleep(rule.arg):
            return
        self.upstream.sendall(req)
        self.forwarded = True
        if upgrade:
            self.upgraded = True

    # -- engine -> client: answers --
    def pump_answers(self):
        try:
            while not self.closed and not self.proxy._stopping.is_set():
                r = self.live_rule()
                mode = r.mode if r is not None else "pass"
                if mode == "stall" or (self.upgraded and mode == "refuse") or self.held_now():
                    if self.upgraded and mode == "refuse":
                        self.close()
                        return
                    time.sleep(_TICK)
                    continue
                if self.upgraded and mode == "drop":
                    self.close()
                    return
                ready, _, _ = select.select([self.upstream], [], [], _TICK)
                if not ready:
                    continue
                if self.live_rule() is not r:
                    continue  # the rules changed while waiting: look again before relaying
                data = self.upstream.recv(65536)
                if not data:
                    return
                if not self.answering:
                    self.answering = True
                    with self.proxy._lock:
                        self.proxy.answered.append(self.target)
                if mode == "drop":
                    self.close()
                    return
                if mode == "delay" and not self.delayed:
                    self.delayed = True
                    if not self.proxy._sleep(r.arg):
                        return
                if mode == "truncate_body" and self.head_len < 0:
                    self.answer_head += data
                    end = self.answer_head.find(b"\r\n\r\n")
                    if end < 0:
                        continue
                    self.head_len = end + 4
                    data, self.answer_head = self.answer_head, b""
                if mode in ("truncate", "truncate_body"):
                    room = int(r.arg) + max(self.head_len, 0) * (mode == "truncate_body") - self.answer_bytes
                    if room < len(data):
                        if room > 0:
                            self.client.sendall(data[:room])
                        self.close()
                        return
                self.answer_bytes += len(data)
                self.client.sendall(data)
        except (OSError, ValueError):  # a socket closed by the other thread
            pass
        finally:
            self.close()


def _split_request(buf: bytes) -> tuple[bytes | None, bytes]:
    """(one whole request, the rest) from the front of buf, or (None, buf) if it is not all
    there yet. A chunked body is taken as running to the end of what has arrived."""
    end = buf.find(b"\r\n\r\n")
    if end < 0:
        return None, buf
    head = buf[:end].decode("latin-1").lower()
    length = 0
    for h in head.split("\r\n")[1:]:
        name, _, value = h.partition(":")
        if name.strip() == "content-length":
            length = int(value.strip() or 0)
        elif name.strip() == "transfer-encoding" and "chunked" in value:
            return buf, b""
    total = end + 4 + length
    if len(buf) < total:
        return None, buf
    return buf[:total], buf[total:]


class DockerProxy:
    """The proxy; it runs from construction until close(). dir: where to put the socket (a
    temporary folder under /tmp when None or when the path would be too long for a socket)."""

    def __init__(self, dir: str | os.PathLike | None = None, upstream: str = DOCKER_SOCK, tcp: bool = False):
        self.tcp = tcp  # listen on 127.0.0.1:port instead (an engine at tcp://, plain): see .url
        self.port = 0
        self._own_dir = None
        path = os.path.join(str(dir), "docker.sock") if dir is not None else ""
        if not path or len(path) > 100:
            self._own_dir = tempfile.mkdtemp(prefix="rbproxy-", dir="/tmp")
            path = os.path.join(self._own_dir, "docker.sock")
        self.path = path
        self.upstream = upstream
        self._rules: list[Rule] = []
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._conns: list[_Conn] = []
        self._threads: list[threading.Thread] = []
        self.requests: list[str] = []  # "METHOD /path" of every request, in order
        self.faulted: list[str] = []   # those a rule other than pass applied to
        self.answered: list[str] = []  # those the engine started to answer (relayed or not)
        self.held: list[str] = []      # the open streams a delay rule held, by request
        self._listener: socket.socket | None = None
        self.up()

    # -- control --
    def fault(self, pattern: str, mode: str, arg: float = 0, times: int | None = None,
              streams_only: bool = False) -> Rule:
        """Adds a rule (after the existing ones) and returns it."""
        r = Rule(pattern, mode, arg, times, streams_only)
        if streams_only:
            with self._lock:
                r.streams = {c for c in self._conns if c.upgraded and not c.closed}
        with self._lock:
            self._rules.append(r)
        return r

    def remove(self, rule: Rule) -> None:
        with self._lock:
            if rule in self._rules:
                self._rules.remove(rule)

    def clear(self) -> None:
        """Back to relaying everything (stalled attach streams resume)."""
        with self._lock:
            self._rules.clear()

    def seen(self, pattern: str = ANY) -> int:
        """How many requests matching pattern went through (faulted or not)."""
        rx = re.compile(pattern)
        with self._lock:
            return sum(1 for t in self.requests if rx.search(t))

    def answers(self, pattern: str = ANY) -> int:
        """How many requests matching pattern the engine has started to answer."""
        rx = re.compile(pattern)
        with self._lock:
            return sum(1 for t in self.answered if rx.search(t))

    def open_streams(self, pattern: str = ATTACH) -> int:
        """Attach streams open through the proxy whose request matches pattern."""
        rx = re.compile(pattern)
        with self._lock:
            return sum(1 for c in self._conns if c.upgraded and not c.closed and rx.search(c.target))

    def down(self) -> None:
        """The engine goes away: every connection (attach streams too) is closed and the socket
        removed, so connecting fails until up()."""
        if self._listener is None:
            return
        self._listener.close()
        self._listener = None
        if not self.tcp:
            try:
                os.unlink(self.path)
            except OSError:
                pass
        with self._lock:
            conns, self._conns = list(self._conns), []
        for c in conns:
            c.close()

    def up(self) -> None:
        """The engine is back (the proxy listens again on the same path)."""
        if self._listener is not None:
            return
        if self.tcp:  # the same port after down()
            listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            listener.bind(("127.0.0.1", self.port))
            self.port = listener.getsockname()[1]
        else:
            listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            listener.bind(self.path)
        listener.listen(128)
        listener.settimeout(_TICK)
        self._listener = listener
        self._spawn(self._accept, listener)

    @property
    def url(self) -> str:
        """What runboxd's --docker-socket takes: the socket's path, or tcp://127.0.0.1:port."""
        return f"tcp://127.0.0.1:{self.port}" if self.tcp else self.path

    def close(self) -> None:
        self._stopping.set()
        self.down()
        for t in self._threads:
            t.join(timeout=5)
        if self._own_dir is not None:
            shutil.rmtree(self._own_dir, ignore_errors=True)

    def __enter__(self) -> "DockerProxy":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # -- internals --
    def _match(self, target: str, count: bool, current: Rule | None = None,
               conn: "_Conn | None" = None) -> Rule | None:
        """The rule for target (None: relay). times limits the requests a rule catches; a
        stream it caught (current) stays caught while the rule is there."""
        with self._lock:
            for r in self._rules:
                if r.times is not None and r.hits >= r.times and r is not current:
                    continue
                if r.streams_only and conn not in r.streams:
                    continue
                if r.regex.search(target):
                    if count:
                        r.hits += 1
                    return None if r.mode == "pass" else r
        return None

    def _record(self, target: str, rule: Rule | None) -> None:
        with self._lock:
            self.requests.append(target)
            if rule is not None:
                self.faulted.append(f"{rule.mode} {target}")

    def _sleep(self, seconds: float) -> bool:
        """Sleeps unless the proxy is closing; False if it is."""
        return not self._stopping.wait(seconds)

    def _spawn(self, fn, *args) -> None:
        t = threading.Thread(target=fn, args=args, daemon=True)
        t.start()
        with self._lock:
            self._threads = [x for x in self._threads if x.is_alive()]
            self._threads.append(t)

    def _accept(self, listener: socket.socket):
        while not self._stopping.is_set() and self._listener is listener:
            try:
                client, _ = listener.accept()
            except socket.timeout:
                continue
            except OSError:
                return
            upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                upstream.connect(self.upstream)
            except OSError:
                upstream.close()
                client.close()
                continue
            c = _Conn(self, client, upstream)
            with self._lock:
                self._conns = [x for x in self._conns if not x.closed]
                self._conns.append(c)
            if self._listener is not listener:  # went down meanwhile
                c.close()
                return
            self._spawn(c.pump_requests)
            self._spawn(c.pump_answers)

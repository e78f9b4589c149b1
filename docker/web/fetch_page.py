#!/usr/bin/env python3
"""fetch_page: opens one web page in headless Chromium and prints its visible text as one JSON line
(the web-page reader's browser side; runbox get_page_text).

It runs in the browser container, whose only route is the egress proxy (egress_proxy.py, given
with --proxy): it starts Chromium with every request sent to that proxy (loopback included:
--proxy-bypass-list=<-loopback>), speaks the Chrome DevTools Protocol over a pipe (fds 3 and 4,
NUL-terminated JSON), navigates to --url, waits for the load event and then for the network to
stay quiet for --settle-ms (or until --timeout), and answers with the title, the final URL, the
main document's HTTP status and document.body.innerText read in an isolated world (the page's
scripts cannot change what it reads), capped at --max-chars, and a PNG screenshot with
--screenshot; a page whose document the proxy's byte cap cut is read once it has parsed every
byte it got (CapWatch). --timeout is the page's time: it starts once Chromium is ready, which
has STARTUP_S of its own (browser_ms in the answer says how long it took). It always prints
exactly one JSON line on stdout and exits 0, within browser_ms + --timeout plus a few seconds:
{"ok":true,...} or {"ok":false,"error":CODE,"message":...} with CODE one of navigation_failed,
refused, timeout, too_many_redirects, browser_failed.

It is not a security boundary: Chromium runs with --no-sandbox, and the container (read-only
root, no capabilities, only the proxy reachable) and the proxy's address checks are what
contain a hostile page. It does not crawl, run a page's downloads, keep cookies or a profile
between runs, or write outside /tmp. Python 3 stdlib only.
"""

import argparse
import collections
import fcntl
import json
import os
import select
import signal
import socket
import sys
import threading
import time
import urllib.parse

CHROMIUM = "/usr/lib/chromium/chromium"  # the binary itself: Debian's /usr/bin/chromium wrapper adds flags
TMP = "/tmp"
PROFILE = TMP + "/profile"
STARTUP_S = 40.0  # at most, for Chromium to start and take the page's setup (before --timeout starts)
PROXY_WAIT_S = 15.0  # at most, for the egress proxy to accept connections (within --timeout)
EXTRACT_S = 5.0  # at most, after the wait, to read text and screenshot
NUDGE_S = 1.0  # while the page does not let its text be read, its script is stopped this often
WATCH_PATH = b"/runbox/byte-cap"  # the egress proxy's byte-cap watch (egress_proxy.py)
# Resolves once the page's main thread has nothing left to do: no parsing of what has arrived,
# no task of its scripts (the scheduler runs idle callbacks only then)
IDLE_EXPRESSION = "new Promise(r => requestIdleCallback(() => r(true)))"
HARD_SLACK_S = 8.0  # the watchdog: past --timeout + this, answer "timeout" and exit whatever happens
TITLE_MAX = 1000  # characters of the title
MAX_MESSAGE = 256 * 1024 * 1024  # bytes of one DevTools message (text and screenshot are bounded before)
STDERR_TAIL = 4096  # bytes of Chromium's stderr kept for browser_failed
NOWHERE = "runbox-nowhere.invalid"  # where the browser's own services are sent (never resolves)
SHM_ENOUGH = 4080218931  # Debian's launcher: with less free in /dev/shm Chromium can crash; use /tmp


def chromium_flags(args, proxy_host, small_shm):
    """Every flag Chromium is started with, in one list."""
    flags = [
        "--headless=new",
        "--no-sandbox",  # no user namespaces or setuid in the container: it is the sandbox
        "--disable-gpu",
        "--remote-debugging-pipe",  # DevTools on fds 3 (in) and 4 (out), no port
        "--proxy-server=" + args.proxy,
        # loopback goes to the proxy too (which refuses it); only the browser's own services
        # (below) go direct, and fail at once
        "--proxy-bypass-list=<-loopback>;" + NOWHERE,
        # Chromium resolves no name but the proxy's: requests go to the proxy with their host
        "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE " + proxy_host,
        # The browser's own calls home that no flag turns off (the component updater's on-demand
        # model manifest, Google account checks) go to NOWHERE: no request, no DNS, no proxy event
        "--gaia-url=http://%s/" % NOWHERE,
        "--component-updater=url-source=http://%s/" % NOWHERE,
        "--force-webrtc-ip-handling-policy=disable_non_proxied_udp",
        "--webrtc-ip-handling-policy=disable_non_proxied_udp",
        "--disable-quic",
        "--user-data-dir=" + PROFILE,
        "--crash-dumps-dir=" + TMP,
        "--disable-breakpad",
        "--disable-crash-reporter",
        "--no-first-run",
        "--no-default-browser-check",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-default-apps",
        "--disable-component-extensions-with-background-pages",
        "--disable-extensions",
        "--disable-sync",
        "--disable-domain-reliability",
        "--disable-client-side-phishing-detection",
        "--disable-features=Translate,MediaRouter,OptimizationHints,OptimizationHintsFetching,"
        "OptimizationGuideModelDownloading,OptimizationTargetPrediction,AutofillServerCommunication,"
        "CertificateTransparencyComponentUpdater,InterestFeedContentSuggestions,DialMediaRouteProvider,"
        "NetworkTimeServiceQuerying,PrivacySandboxSettings4,OptimizationGuideOnDeviceModel",
        "--disable-field-trial-config",
        "--no-pings",
        "--metrics-recording-only",
        "--password-store=basic",
        "--mute-audio",
        "--deny-permission-prompts",
        "--disable-notifications",
        "--disable-hang-monitor",
        "--disable-background-timer-throttling",
        "--disable-backgrounding-occluded-windows",
        "--disable-renderer-backgrounding",
        "--hide-scrollbars",
        "--window-size=%d,%d" % (args.width, args.height),
        "--lang=en-US",
    ]
    if small_shm:
        flags.append("--disable-dev-shm-usage")
    return flags


def chromium_env():
    return {
        "PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
        "LANG": "C.UTF-8",
        "HOME": TMP,
        "TMPDIR": TMP,
        "XDG_CONFIG_HOME": TMP + "/.config",
        "XDG_CACHE_HOME": TMP + "/.cache",
        "XDG_RUNTIME_DIR": TMP + "/.runtime",
        "DBUS_SESSION_BUS_ADDRESS": "unix:path=/dev/null",  # no session bus: none is started
        "GOOGLE_API_KEY": "no",
        "GOOGLE_DEFAULT_CLIENT_ID": "no",
        "GOOGLE_DEFAULT_CLIENT_SECRET": "no",
    }


class BrowserFailed(Exception):
    pass


class Deadline(Exception):
    pass


class CdpError(Exception):
    pass


class Chromium:
    """The Chromium process and its DevTools pipe."""

    def __init__(self, argv, env):
        for d in (PROFILE, TMP + "/.config", TMP + "/.cache", TMP + "/.runtime"):
            os.makedirs(d, mode=0o700, exist_ok=True)
        cmd_r, cmd_w = pipe_high()  # Chromium reads commands on fd 3
        out_r, out_w = pipe_high()  # and writes answers and events on fd 4
        err_r, err_w = pipe_high()
        actions = [
            (os.POSIX_SPAWN_OPEN, 0, "/dev/null", os.O_RDONLY, 0),
            (os.POSIX_SPAWN_OPEN, 1, "/dev/null", os.O_WRONLY, 0),  # our stdout is the answer alone
            (os.POSIX_SPAWN_DUP2, err_w, 2),
            (os.POSIX_SPAWN_DUP2, cmd_r, 3),
            (os.POSIX_SPAWN_DUP2, out_w, 4),
        ]
        try:
            self.pid = os.posix_spawn(argv[0], argv, env, file_actions=actions, setsid=True)
        except OSError as e:
            raise BrowserFailed("Chromium could not be started: %s" % e)
        finally:
            for fd in (cmd_r, out_w, err_w):
                os.close(fd)
        self.wfd, self.rfd = cmd_w, out_r
        self.buf = bytearray()
        self.next_id = 0
        self.responses = {}
        self.on_event = None
        self.stderr = collections.deque(maxlen=64)
        self.stderr_thread = threading.Thread(target=self._drain_stderr, args=(err_r,), daemon=True)
        self.stderr_thread.start()

    def _drain_stderr(self, fd):
        while True:
            try:
                data = os.read(fd, 65536)
            except OSError:
                return
            if not data:
                return
            self.stderr.append(data)

    def stderr_tail(self):
        data = b"".join(self.stderr)[-STDERR_TAIL:]
        return data.decode("utf-8", "replace").strip()

    def send(self, method, params=None, session=None):
        self.next_id += 1
        msg = {"id": self.next_id, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        data = json.dumps(msg).encode() + b"\0"
        try:
            while data:
                n = os.write(self.wfd, data)
                data = data[n:]
        except OSError as e:
            raise BrowserFailed("Chromium's DevTools pipe closed (%s)" % e.strerror)
        return self.next_id

    def pump(self, until, watch=None):
        """Reads what Chromium sent, waiting at most until monotonic time UNTIL; dispatches
        events to on_event and keeps responses. With WATCH (a CapWatch), reads its news too."""
        timeout = max(0.0, until - time.monotonic())
        fds = [self.rfd]
        if watch is not None and watch.sock is not None:
            fds.append(watch.sock)
        ready, _, _ = select.select(fds, [], [], timeout)
        if len(fds) > 1 and fds[1] in ready:
            watch.poll()
        if self.rfd not in ready:
            return
        data = os.read(self.rfd, 1 << 20)
        if not data:
            raise BrowserFailed("Chromium closed its DevTools pipe (it exited or crashed)")
        self.buf += data
        while True:
            i = self.buf.find(b"\0")
            if i < 0:
                break
            raw = bytes(self.buf[:i])
            del self.buf[: i + 1]
            msg = json.loads(raw)
            if "id" in msg:
                self.responses[msg["id"]] = msg
            elif self.on_event is not None:
                self.on_event(msg)
        if len(self.buf) > MAX_MESSAGE:
            raise BrowserFailed("a DevTools message from Chromium is larger than %d bytes" % MAX_MESSAGE)

    def call(self, method, params=None, session=None, deadline=None):
        """Sends a command and waits for its result until DEADLINE (monotonic); raises CdpError
        for an error answer, Deadline when it does not come in time."""
        cid = self.send(method, params, session)
        while cid not in self.responses:
            if time.monotonic() >= deadline:
                raise Deadline(method)
            self.pump(deadline)
        msg = self.responses.pop(cid)
        if "error" in msg:
            raise CdpError("%s: %s" % (method, msg["error"].get("message", "error")))
        return msg.get("result", {})

    def call_nudging(self, method, params, session, deadline):
        """call() for a command the page's main thread must run: while it does not answer, the
        page's running script is terminated every NUDGE_S (a script that never yields), until
        DEADLINE."""
        cid = self.send(method, params, session)
        nudge = time.monotonic() + NUDGE_S
        while cid not in self.responses:
            now = time.monotonic()
            if now >= deadline:
                raise Deadline(method)
            if now >= nudge:
                self.send("Runtime.terminateExecution", session=session)
                nudge = now + NUDGE_S
            self.pump(min(deadline, nudge))
        msg = self.responses.pop(cid)
        if "error" in msg:
            raise CdpError("%s: %s" % (method, msg["error"].get("message", "error")))
        return msg.get("result", {})

    def kill(self):
        try:
            os.killpg(self.pid, signal.SIGKILL)
        except OSError:
            pass
        try:
            os.waitpid(self.pid, 0)
        except ChildProcessError:
            pass


def pipe_high():
    """A pipe whose ends are above fd 4 and close on exec (so that dup2 to 3 and 4 cannot clash)."""
    r, w = os.pipe()
    out = []
    for fd in (r, w):
        out.append(fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 10))
        os.close(fd)
    return out[0], out[1]


class PageState:
    """What the DevTools events tell about the main frame's navigation and the network."""

    def __init__(self, cdp, session, max_redirects):
        self.cdp = cdp
        self.session = session
        self.max_redirects = max_redirects
        self.main_frame = None
        self.doc_requests = set()  # request ids of main-frame documents
        self.redirects = 0
        self.too_many = False
        self.status = None
        self.response_url = None
        self.refused = None  # the proxy's reason when the main document is its refusal
        self.committed_url = None
        self.doc_loading = False  # the main document's body is still arriving
        self.loaded = False
        self.inflight = set()
        self.last_activity = time.monotonic()
        self.crashed = False

    def on_event(self, msg):
        if msg.get("sessionId") != self.session:
            return
        method, p = msg.get("method"), msg.get("params", {})
        if method == "Network.requestWillBeSent":
            self.activity(add=p.get("requestId"))
            if p.get("type") == "Document" and p.get("frameId") == self.main_frame:
                rid = p.get("requestId")
                if p.get("redirectResponse"):
                    self.redirects += 1  # an HTTP redirect
                    self.status = p["redirectResponse"].get("status")
                    self.response_url = p["redirectResponse"].get("url")
                elif self.doc_requests and rid not in self.doc_requests:
                    self.redirects += 1  # a new navigation of the main frame (script, meta refresh)
                self.doc_requests.add(rid)
                self.doc_loading = True
                if self.redirects > self.max_redirects and not self.too_many:
                    self.too_many = True
                    self.cdp.send("Page.stopLoading", session=self.session)
        elif method in ("Network.loadingFinished", "Network.loadingFailed"):
            self.activity(remove=p.get("requestId"))
            if p.get("requestId") in self.doc_requests:
                self.doc_loading = False
        elif method == "Network.responseReceived":
            if p.get("type") == "Document" and p.get("frameId") == self.main_frame:
                r = p.get("response", {})
                self.status = r.get("status")
                self.response_url = r.get("url")
                for k, v in (r.get("headers") or {}).items():
                    if k.lower() == "x-runbox-refused":
                        self.refused = str(v)
        elif method == "Page.frameStartedLoading" and p.get("frameId") == self.main_frame:
            self.loaded = False
        elif method in ("Page.loadEventFired",):
            self.loaded = True
        elif method == "Page.frameStoppedLoading" and p.get("frameId") == self.main_frame:
            self.loaded = True
        elif method == "Page.frameNavigated":
            frame = p.get("frame", {})
            if frame.get("id") == self.main_frame:
                self.committed_url = frame.get("url")
        elif method == "Page.javascriptDialogOpening":
            # alert(), confirm(), prompt() and beforeunload would stop the page's scripts
            self.cdp.send("Page.handleJavaScriptDialog", {"accept": p.get("type") == "beforeunload"}, self.session)
        elif method in ("Inspector.targetCrashed", "Target.targetCrashed"):
            self.crashed = True

    def activity(self, add=None, remove=None):
        if add is not None:
            self.inflight.add(add)
        if remove is not None:
            self.inflight.discard(remove)
        self.last_activity = time.monotonic()


class Answer(Exception):
    """Ends the run with this document as the answer."""

    def __init__(self, doc):
        super().__init__(doc.get("error", "ok"))
        self.doc = doc


def failure(code, message, state=None, final_url=None):
    doc = {"ok": False, "error": code, "message": message, "final_url": final_url, "status": None}
    if state is not None:
        doc["final_url"] = final_url or state.committed_url or state.response_url
        doc["status"] = state.status if isinstance(state.status, int) else None
    return Answer(doc)


def clean(text):
    """A str that encodes as UTF-8 (lone surrogates from a JavaScript string become U+FFFD)."""
    if not isinstance(text, str):
        text = "" if text is None else str(text)
    return text.encode("utf-8", "surrogatepass").decode("utf-8", "replace")


class CapWatch:
    """The egress proxy's byte-cap watch: one connection it answers once its byte cap is reached.
    While the watch is open the proxy holds the responses the cap cut open instead of ending them:
    Chromium stops parsing a document whose body fails and drops what it received but had not
    parsed yet (on a loaded machine, all of it), while a held document keeps every byte and its
    parser goes on to the end of them. release() closes the watch, and the proxy ends them."""

    def __init__(self, host, port, until):
        self.sock = None
        self.capped = False
        self.head = b""
        try:
            sock = socket.create_connection((host, port), timeout=max(0.1, until - time.monotonic()))
            sock.sendall(b"GET %s HTTP/1.1\r\nHost: egress\r\n\r\n" % WATCH_PATH)
            sock.setblocking(False)
            self.sock = sock
        except OSError:
            pass  # no watch: a capped page is read as any other

    def holding(self):
        """Whether the cap was reached and the proxy holds what it cut."""
        return self.capped and self.sock is not None

    def poll(self):
        """Reads the proxy's answer (the socket is readable)."""
        try:
            data = self.sock.recv(4096)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        self.head = (self.head + data)[:64]
        if self.head.startswith(b"HTTP/1.1 200 "):
            self.capped = True
        if not data:  # the proxy ended the watch: it holds nothing
            self.release()

    def release(self):
        if self.sock is not None:
            self.sock.close()
            self.sock = None


def wait_for_idle(browser, state, session, deadline):
    """Starts waiting for the page's main thread to be idle, in an isolated world; returns the
    command's id (its answer comes then), or None when the frame has no world to wait in."""
    try:
        world = browser.call("Page.createIsolatedWorld", {"frameId": state.main_frame, "worldName": "runbox-idle"},
                             session, deadline)
    except CdpError:
        return None
    return browser.send("Runtime.evaluate", {"expression": IDLE_EXPRESSION, "awaitPromise": True,
                                             "contextId": world["executionContextId"]}, session)


def wait_for_proxy(host, port, until):
    """Waits until the egress proxy accepts a TCP connection (runboxd starts the browser as soon as
    the proxy's container runs, maybe before it listens)."""
    last = None
    while True:
        left = until - time.monotonic()
        if left <= 0:
            return last or "timed out"
        try:
            with socket.create_connection((host, port), timeout=min(1.0, left)):
                return None
        except OSError as e:
            last = e.strerror or str(e)
        time.sleep(min(0.1, max(0.0, until - time.monotonic())))


def run(args, t0):
    # Chromium's start is the reader's own cost, not the page's: it has STARTUP_S of its own (a
    # loaded host can take tens of seconds to start a browser), and --timeout starts once it is
    # ready for the page. The answer says how long the start took (browser_ms).
    deadline = t0 + STARTUP_S
    url = args.url
    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise failure("navigation_failed", "only http and https URLs with a host are read, not %r" % url[:200])
    proxy = urllib.parse.urlsplit(args.proxy)
    if proxy.scheme != "http" or not proxy.hostname:
        raise failure("browser_failed", "--proxy must be http://HOST:PORT")
    proxy_port = proxy.port or 80

    small_shm = True
    try:
        st = os.statvfs("/dev/shm")
        small_shm = st.f_bavail * st.f_frsize < SHM_ENOUGH
    except OSError:
        pass
    argv = [CHROMIUM] + chromium_flags(args, proxy.hostname, small_shm) + ["about:blank"]
    browser = Chromium(argv, chromium_env())
    RUNNING.append(browser)

    def browser_failed(what):
        browser.stderr_thread.join(0.3)  # a Chromium that died has written its last lines
        tail = browser.stderr_tail()
        return failure("browser_failed", "%s%s" % (what, "; Chromium's stderr ends with: " + tail if tail else ""))

    try:
        try:
            browser.call("Browser.getVersion", deadline=deadline)
        except (Deadline, BrowserFailed, CdpError) as e:
            raise browser_failed("Chromium did not start within %g s (%s)" % (STARTUP_S, e))
        step = deadline
        target = browser.call("Target.createTarget", {"url": "about:blank"}, deadline=step)["targetId"]
        session = browser.call("Target.attachToTarget", {"targetId": target, "flatten": True}, deadline=step)[
            "sessionId"
        ]
        state = PageState(browser, session, args.max_redirects)
        browser.on_event = state.on_event
        browser.call("Browser.setDownloadBehavior", {"behavior": "deny"}, deadline=step)
        for method, params in (
            ("Page.enable", {}),
            ("Page.setLifecycleEventsEnabled", {"enabled": False}),
            ("Network.enable", {"maxTotalBufferSize": 0, "maxResourceBufferSize": 0}),
            ("Network.setBypassServiceWorker", {"bypass": True}),
            ("Emulation.setDeviceMetricsOverride",
             {"width": args.width, "height": args.height, "deviceScaleFactor": 1, "mobile": False}),
        ):
            browser.call(method, params, session, deadline=step)
        state.main_frame = browser.call("Page.getFrameTree", {}, session, deadline=step)["frameTree"]["frame"]["id"]
    except Deadline as e:
        raise browser_failed("Chromium did not answer %s in time" % e)
    except (BrowserFailed, CdpError) as e:
        raise browser_failed(str(e))
    ready = time.monotonic()
    BROWSER_MS.append(int((ready - t0) * 1000))
    deadline = ready + args.timeout

    problem = wait_for_proxy(proxy.hostname, proxy_port, min(deadline, time.monotonic() + PROXY_WAIT_S))
    if problem:
        raise failure("navigation_failed", "the egress proxy %s:%d does not accept connections (%s)"
                      % (proxy.hostname, proxy_port, problem))
    watch = CapWatch(proxy.hostname, proxy_port, min(deadline, time.monotonic() + PROXY_WAIT_S))

    # Navigate: Page.navigate answers once the main document is committed (or failed).
    try:
        nav = browser.call("Page.navigate", {"url": url}, session, deadline=deadline)
    except Deadline:
        raise failure("timeout", "the page did not start loading within %g s" % args.timeout, state)
    except BrowserFailed as e:
        raise browser_failed(str(e))
    except CdpError as e:
        raise failure("navigation_failed", "Chromium could not open %s: %s" % (url, e), state)
    check_navigation(state, args, url)
    if nav.get("errorText"):
        raise failure("navigation_failed", "Chromium could not open %s: %s%s"
                      % (url, nav["errorText"], hint(nav["errorText"])), state)

    # Wait for the load event, then for the network to stay quiet for settle-ms. When the byte cap
    # cut the document, nothing more will come: wait for the page to have parsed what it got.
    settled = False
    idle = None  # the idle wait's command id, once the cap cut the document
    try:
        while True:
            check_navigation(state, args, url)
            if state.crashed:
                raise failure("browser_failed", "the page's renderer crashed (out of memory?)", state)
            now = time.monotonic()
            quiet = now - state.last_activity >= args.settle_ms / 1000.0
            if watch.holding() and not state.doc_loading:
                watch.release()  # the document is complete: what the cap cut fails now, the page settles
            if state.loaded and not state.inflight and quiet:
                settled = True
                break
            if watch.holding():  # what the cap cut stays in flight: the page will not load
                if idle is None:
                    idle = wait_for_idle(browser, state, session, deadline) or 0
                elif quiet and (idle == 0 or idle in browser.responses):
                    browser.responses.pop(idle, None)
                    settled = True
                    break
            if now >= deadline:
                break
            browser.pump(min(deadline, now + 0.05), watch)
    except Deadline:
        pass  # an idle wait's world was not made in time: the text is what is there
    except BrowserFailed as e:
        raise browser_failed(str(e))

    # Read the page: in an isolated world, so the page's scripts cannot change what is read.
    budget = time.monotonic() + EXTRACT_S
    try:
        if not settled and not watch.holding():
            # (not what the cap cut: stopping a document's load stops its parser too)
            browser.send("Page.stopLoading", session=session)
        limit = 2 * args.max_chars + 2  # UTF-16 units: at least max-chars characters
        expression = (
            "(() => { const b = document.body; const t = b ? String(b.innerText) : '';"
            " return {title: String(document.title), href: String(location.href),"
            " text: t.length > %d ? t.slice(0, %d) : t}; })()" % (limit, limit)
        )
        got = None
        for _ in range(4):
            # an error or an exception: a navigation replaced the frame's world, or a
            # terminateExecution meant for the page's script stopped this one; try again
            try:
                world = browser.call_nudging("Page.createIsolatedWorld",
                                             {"frameId": state.main_frame, "worldName": "runbox"}, session, budget)
                res = browser.call_nudging("Runtime.evaluate",
                                           {"expression": expression, "contextId": world["executionContextId"],
                                            "returnByValue": True}, session, budget)
                if "exceptionDetails" not in res:
                    got = res.get("result", {}).get("value")
                    break
            except CdpError:
                pass
            time.sleep(0.05)
        if not isinstance(got, dict):
            raise failure("timeout" if not settled else "browser_failed",
                          "the page's text could not be read", state)
        shot = None
        if args.screenshot:
            try:
                res = browser.call_nudging("Page.captureScreenshot",
                                           {"format": "png", "captureBeyondViewport": False}, session, budget)
                shot = res.get("data")
            except CdpError:
                shot = None
    except Deadline:
        raise failure("timeout", "the page did not let its text be read within %g s of the timeout" % EXTRACT_S, state)
    except BrowserFailed as e:
        raise browser_failed(str(e))

    text = clean(got.get("text"))
    truncated = len(text) > args.max_chars
    if truncated:
        text = clean(text[: args.max_chars])
    doc = {
        "ok": True,
        "url": url,
        "final_url": clean(got.get("href")) or state.committed_url,
        "title": clean(got.get("title"))[:TITLE_MAX],
        "status": state.status if isinstance(state.status, int) else None,
        "text": text,
        "truncated": truncated,
        "settled": settled,
        "redirects": state.redirects,
        "byte_cap": watch.capped,
    }
    if isinstance(shot, str) and shot:
        doc["screenshot"] = shot
    return doc


def check_navigation(state, args, url):
    if state.too_many:
        raise failure("too_many_redirects", "%s redirected more than %d times (stopped at %s)"
                      % (url, args.max_redirects, state.response_url), state)
    if state.refused:
        raise failure("refused", "the egress proxy refused to fetch %s: %s"
                      % (state.response_url or url, state.refused), state, state.response_url)


def hint(error_text):
    if "TUNNEL_CONNECTION_FAILED" in error_text or "PROXY" in error_text:
        return " (the egress proxy refused the address or port, or could not reach it)"
    return ""


RUNNING = []  # the Chromium process, for the watchdog
BROWSER_MS = []  # how long Chromium took to be ready, once it was
OUTPUT = threading.Lock()
printed = []


def emit(doc, t0):
    """Prints the one answer line (once, whoever calls first: the run or the watchdog)."""
    with OUTPUT:
        if printed:
            return
        printed.append(True)
        doc["elapsed_ms"] = int((time.monotonic() - t0) * 1000)
        if BROWSER_MS:
            doc["browser_ms"] = BROWSER_MS[0]
        line = json.dumps(doc, ensure_ascii=False, separators=(",", ":")) + "\n"
        try:
            sys.stdout.write(line)
            sys.stdout.flush()
        except (OSError, ValueError):
            pass


def watchdog(t0, args):
    """Past STARTUP_S + --timeout + HARD_SLACK_S: answer timeout, kill Chromium and exit, whatever hangs."""
    emit({"ok": False, "error": "timeout", "message": "the page read did not finish within %g s" % args.timeout,
          "final_url": None, "status": None}, t0)
    for b in RUNNING:
        try:
            os.killpg(b.pid, signal.SIGKILL)
        except OSError:
            pass
    os._exit(0)


def parse_args(argv):
    p = argparse.ArgumentParser(description="runbox web-page reader: one page's visible text as JSON")
    p.add_argument("--url", required=True)
    p.add_argument("--proxy", required=True, help="http://HOST:PORT of the egress proxy")
    p.add_argument("--timeout", type=float, default=30.0, help="seconds for the page, once Chromium is ready")
    p.add_argument("--settle-ms", type=int, default=500, help="network quiet time after load")
    p.add_argument("--max-chars", type=int, default=100000)
    p.add_argument("--max-redirects", type=int, default=10)
    p.add_argument("--screenshot", action="store_true")
    p.add_argument("--width", type=int, default=1280)
    p.add_argument("--height", type=int, default=800)
    args = p.parse_args(argv)
    if not 0 < args.timeout <= 3600 or args.settle_ms < 0 or args.max_chars < 0 or args.max_redirects < 0:
        p.error("--timeout must be in (0, 3600], --settle-ms, --max-chars and --max-redirects not negative")
    if not (16 <= args.width <= 4096 and 16 <= args.height <= 4096):
        p.error("--width and --height must be within 16..4096")
    return args


def main(argv):
    t0 = time.monotonic()
    args = parse_args(argv)
    timer = threading.Timer(STARTUP_S + args.timeout + HARD_SLACK_S, watchdog, (t0, args))
    timer.daemon = True
    timer.start()
    try:
        doc = run(args, t0)
    except Answer as a:
        doc = a.doc
    except Exception as e:  # a bug here must still answer with one line
        doc = {"ok": False, "error": "browser_failed", "message": "fetch_page failed: %s: %s" % (type(e).__name__, e),
               "final_url": None, "status": None}
    finally:
        for b in RUNNING:
            b.kill()
    emit(doc, t0)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

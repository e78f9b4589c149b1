"""Tests of the web-page reader's browser side (docker/web/fetch_page.py) in the browser image
runbox-browser:latest (RUNBOX_BROWSER_IMAGE), built first with `docker/build-images --browser`
(skipped when it is up to date; the whole module is skipped when Docker is missing).

Everything runs as runboxd runs it, on an --internal Docker network this module creates: a page
server container (the same image, python3 serving the pages written below), the egress proxy
container (docker/web/egress_proxy.py) with the alias "egress" and --allow for the page server's
address only (the byte-cap tests start proxies of their own with a small --max-bytes), and one
browser container per read (read-only root, no capabilities, no-new-privileges, uid 1000, tmpfs
/tmp, memory and process limits). The proxy has no other
network: no test can reach anything but these containers. Containers and the network are
removed at the end, whatever happens.
Run: python3 -m pytest tests/web/test_fetch_page.py -q
"""

import base64
import json
import os
import shutil
import struct
import subprocess
import time
import uuid
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
IMAGE = os.environ.get("RUNBOX_BROWSER_IMAGE", "runbox-browser:latest")
PAGE_PORT = 8000

# The page server: static files from /srv plus a few pages that misbehave on purpose.
SERVER = r'''
import http.server, sys, time

class Handler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *a):
        pass

    def redirect(self, where):
        self.send_response(302)
        self.send_header("Location", where)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_GET(self):
        path, _, query = self.path.partition("?")
        if path == "/redirect":
            return self.redirect("/js.html")
        if path == "/loop":
            n = int(query.split("=")[1]) if query.startswith("n=") else 0
            return self.redirect("/loop?n=%d" % (n + 1))
        if path == "/to-loopback":
            return self.redirect("http://127.0.0.1:%d/js.html" % PORT)
        if path == "/tick":
            body = b"ok"
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            return self.wfile.write(body)
        if path == "/stall":  # never answers
            time.sleep(3600)
            return
        if path == "/endless":  # the head and some text, then a body that never ends
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.end_headers()
            self.wfile.write(b"<html><head><title>Endless</title></head><body><p>partial text visible</p>"
                             + b"<!--" + b" " * 4096 + b"-->")
            self.wfile.flush()
            while True:
                time.sleep(0.2)
                self.wfile.write(b"<!-- tick -->")
                self.wfile.flush()
        return super().do_GET()

PORT = int(sys.argv[1])
http.server.ThreadingHTTPServer.daemon_threads = True
http.server.ThreadingHTTPServer(("0.0.0.0", PORT), lambda *a: Handler(*a, directory="/srv")).serve_forever()
'''

PAGES = {
    # text produced by scripts, part of it only after a fetch 300 ms after load
    "js.html": """<!doctype html><html><head><title>Scripted page</title></head><body>
<h1>Static heading</h1><div id="o"></div>
<script>
document.getElementById('o').textContent = 'rendered by script ' + (6 * 7);
setTimeout(() => fetch('/data.txt').then(r => r.text()).then(t => {
  const p = document.createElement('p'); p.textContent = 'late: ' + t.trim(); document.body.appendChild(p);
}), 300);
</script></body></html>""",
    "data.txt": "fetched data\n",
    # never settles: a request every 100 ms
    "ticking.html": """<!doctype html><html><head><title>Ticking</title></head><body><p>still ticking</p>
<script>setInterval(() => fetch('/tick?' + Math.random()), 100);</script></body></html>""",
    # the page's main thread never yields after load
    "spin.html": """<!doctype html><html><head><title>Spin</title></head><body><p>before the loop</p>
<script>setTimeout(() => { for (;;) {} }, 200);</script></body></html>""",
    # dialogs would block the page's scripts
    "alert.html": """<!doctype html><html><head><title>Alert</title></head><body><p id="p">waiting</p>
<script>alert('hello'); confirm('sure?'); document.getElementById('p').textContent = 'after the dialogs';</script>
</body></html>""",
    # the page tries to change what the reader sees through the main world's prototypes
    "tamper.html": """<!doctype html><html><head><title>Real title</title></head><body><p>real text</p>
<script>
Object.defineProperty(HTMLElement.prototype, 'innerText', {get() { return 'forged text'; }});
Object.defineProperty(Document.prototype, 'title', {get() { return 'forged title'; }});
String.prototype.slice = () => 'forged';
</script></body></html>""",
    # a parser-blocking script that the byte cap cuts (big.js, written below), after a whole document
    "cut-script.html": """<!doctype html><html><head><title>Cut script</title></head><body>
<p>text before the script</p><script src="/big.js"></script><p>text after the script</p></body></html>""",
    "shot.html": """<!doctype html><html><head><title>Shot</title></head>
<body style="background:#3060c0;color:white"><h1>Screenshot</h1></body></html>""",
}


def docker(*args, check=True, timeout=120):
    r = subprocess.run(["docker", *args], capture_output=True, text=True, timeout=timeout)
    if check and r.returncode != 0:
        raise AssertionError("docker %s failed (%d): %s" % (" ".join(args[:3]), r.returncode, r.stderr.strip()))
    return r


def docker_available():
    if shutil.which("docker") is None:
        return False
    try:
        return docker("version", "--format", "{{.Server.APIVersion}}", check=False, timeout=20).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


pytestmark = pytest.mark.skipif(not docker_available(), reason="Docker is not available")


@pytest.fixture(scope="session")
def browser_image():
    """The browser image, built (or found up to date) by docker/build-images --browser."""
    start = time.monotonic()
    r = subprocess.run([str(ROOT / "docker" / "build-images"), "--browser"], capture_output=True, text=True,
                       timeout=1800)
    if r.returncode != 0:
        pytest.fail("docker/build-images --browser failed:\n" + r.stderr[-4000:])
    print("build-images --browser: %.1f s: %s" % (time.monotonic() - start, r.stderr.strip().splitlines()[-1]))
    return IMAGE


def ip_on(container, network):
    r = docker("inspect", "-f", '{{(index .NetworkSettings.Networks "%s").IPAddress}}' % network, container)
    return r.stdout.strip()


class Web:
    """The internal network with its page server and egress proxy."""

    def __init__(self, image, srv):
        self.image = image
        suffix = uuid.uuid4().hex[:10]
        self.network = "runbox-test-web-%s" % suffix
        self.server = "runbox-test-web-pages-%s" % suffix
        self.proxy = "runbox-test-web-egress-%s" % suffix
        self.containers = []
        docker("network", "create", "--internal", "-o", "com.docker.network.bridge.inhibit_ipv4=true",
               "--label", "runbox.test=1", self.network)
        self.containers.append(self.server)
        docker("run", "-d", "--name", self.server, "--label", "runbox.test=1", "--network", self.network,
               "--network-alias", "pages", "--read-only", "--cap-drop", "ALL", "--security-opt", "no-new-privileges",
               "--user", "1000:1000", "--tmpfs", "/tmp", "-v", "%s:/srv:ro" % srv, image,
               "python3", "/srv/server.py", str(PAGE_PORT))
        self.server_ip = ip_on(self.server, self.network)
        self.start_proxy(self.proxy, "egress", 200000000)
        self.proxy_ip = ip_on(self.proxy, self.network)

    def start_proxy(self, name, alias, max_bytes):
        self.containers.append(name)
        docker("run", "-d", "--name", name, "--label", "runbox.test=1", "--network", self.network,
               "--network-alias", alias, "--read-only", "--cap-drop", "ALL", "--security-opt", "no-new-privileges",
               "--user", "1000:1000", "--tmpfs", "/tmp", "--memory", "256m", "--pids-limit", "64", self.image,
               "python3", "-I", "/opt/runbox-web/egress_proxy.py", "--listen", "0.0.0.0:3128",
               "--allow", "%s/32" % self.server_ip, "--allow-port", str(PAGE_PORT), "--max-bytes", str(max_bytes),
               "--max-connections", "64", "--connect-timeout", "5", "--deadline", "3600")
        for _ in range(100):
            if any(e["event"] == "ready" for e in self.proxy_events(name)):
                break
            time.sleep(0.1)
        else:
            raise AssertionError("the egress proxy did not get ready: %s" % docker("logs", name).stderr)

    def capped_proxy(self, max_bytes):
        """A proxy of its own with --max-bytes MAX_BYTES (the cap counts all a proxy relays, as
        for the one proxy of each read in runboxd): (its name on the network, its container)."""
        alias = "egress-capped-%s" % uuid.uuid4().hex[:6]
        name = "runbox-test-web-%s-%s" % (alias, self.network[-10:])
        self.start_proxy(name, alias, max_bytes)
        return alias, name

    def page(self, path, host=None):
        return "http://%s:%d/%s" % (host or self.server_ip, PAGE_PORT, path)

    def proxy_events(self, name=None):
        r = docker("logs", name or self.proxy, check=False)
        return [json.loads(line) for line in r.stdout.splitlines() if line.strip()]

    def read(self, url, *extra, timeout=20, max_chars=100000, max_redirects=5, docker_args=(), proxy="egress"):
        """One read as runboxd does it; returns (the answer, wall seconds, the container's stderr)."""
        name = "runbox-test-web-browser-%s" % uuid.uuid4().hex[:10]
        argv = ["run", "--rm", "--name", name, "--label", "runbox.test=1", "--network", self.network,
                "--read-only", "--cap-drop", "ALL", "--security-opt", "no-new-privileges", "--user", "1000:1000",
                "--tmpfs", "/tmp:size=512m", "--shm-size", "256m", "--memory", "2g", "--pids-limit", "512",
                "--cpus", "1", "-e", "HOME=/tmp", *docker_args, self.image,
                "python3", "-I", "/opt/runbox-web/fetch_page.py", "--url", url, "--proxy", "http://%s:3128" % proxy,
                "--timeout", str(timeout), "--settle-ms", "500", "--max-chars", str(max_chars),
                "--max-redirects", str(max_redirects), *extra]
        start = time.monotonic()
        try:
            r = docker(*argv, check=False, timeout=timeout + 60)
        finally:
            docker("rm", "-f", name, check=False)
        wall = time.monotonic() - start
        lines = [line for line in r.stdout.splitlines() if line.strip()]
        assert r.returncode == 0, (r.returncode, r.stdout[-2000:], r.stderr[-4000:])
        assert len(lines) == 1, "fetch_page must print exactly one line: %r (stderr %s)" % (lines, r.stderr[-2000:])
        doc = json.loads(lines[0])
        assert isinstance(doc.get("elapsed_ms"), int)
        if doc["ok"]:  # Chromium was ready: how long it took is said
            assert isinstance(doc.get("browser_ms"), int) and doc["browser_ms"] <= doc["elapsed_ms"], doc
        return doc, wall, r.stderr

    def close(self):
        for c in self.containers:
            docker("rm", "-f", c, check=False)
        docker("network", "rm", self.network, check=False)


@pytest.fixture(scope="module")
def web(browser_image, tmp_path_factory):
    srv = tmp_path_factory.mktemp("pages")
    (srv / "server.py").write_text(SERVER)
    for name, text in PAGES.items():
        (srv / name).write_text(text)
    (srv / "huge.html").write_text(HUGE_HTML)
    (srv / "big.js").write_text("// " + "x" * 2_000_000 + "\n")
    os.chmod(srv, 0o755)
    for f in srv.iterdir():
        os.chmod(f, 0o644)
    w = None
    try:
        w = Web(browser_image, srv)
        yield w
    finally:
        if w is not None:
            w.close()
        else:  # the constructor failed half-way: remove what it made, by its labels' names
            for r in docker("ps", "-aq", "--filter", "label=runbox.test=1", "--filter", "name=runbox-test-web-",
                            check=False).stdout.split():
                docker("rm", "-f", r, check=False)


WORDS = " ".join("word%d" % i for i in range(400))
HUGE_HTML = ("<!doctype html><title>Huge</title><body>" + "".join("<p>%d %s</p>\n" % (i, WORDS) for i in range(700))
             + "</body>")


def assert_ok(doc):
    assert doc["ok"] is True, doc
    return doc


def test_script_rendered_text_title_and_final_url(web):
    url = web.page("js.html", host="pages")  # a name: the proxy resolves it, not the browser
    doc, wall, _ = web.read(url)
    assert_ok(doc)
    assert doc["url"] == url
    assert doc["final_url"] == url
    assert doc["title"] == "Scripted page"
    assert doc["status"] == 200
    assert "Static heading" in doc["text"]
    assert "rendered by script 42" in doc["text"]
    assert "late: fetched data" in doc["text"]  # it waited for the network to settle
    assert doc["settled"] is True
    assert doc["truncated"] is False
    assert doc["redirects"] == 0
    assert "screenshot" not in doc
    print("simple page: %.2f s from docker run to the answer (elapsed_ms %d)" % (wall, doc["elapsed_ms"]))


def test_redirect_is_followed_and_counted(web):
    doc, _, _ = web.read(web.page("redirect"))
    assert_ok(doc)
    assert doc["final_url"] == web.page("js.html")
    assert doc["redirects"] == 1
    assert "rendered by script 42" in doc["text"]


def test_too_many_redirects(web):
    doc, _, _ = web.read(web.page("loop"), max_redirects=3)
    assert doc["ok"] is False
    assert doc["error"] == "too_many_redirects"
    assert "3" in doc["message"]


def test_redirect_to_the_browser_containers_own_loopback_is_refused(web):
    before = len(web.proxy_events())
    doc, _, _ = web.read(web.page("to-loopback"))
    assert doc["ok"] is False
    assert doc["error"] == "refused", doc
    assert doc["status"] == 403
    assert "loopback address" in doc["message"]
    refused = [e for e in web.proxy_events()[before:] if e["event"] == "refused"]
    assert {"event": "refused", "host": "127.0.0.1", "port": PAGE_PORT, "address": "127.0.0.1",
            "reason": "loopback address"} in refused


def test_address_not_allowed_is_refused(web):
    before = len(web.proxy_events())
    doc, _, _ = web.read("http://%s:%d/" % (web.proxy_ip, PAGE_PORT))  # the proxy's own, private address
    assert doc["ok"] is False
    assert doc["error"] == "refused", doc
    assert "private address" in doc["message"]
    events = web.proxy_events()[before:]
    assert any(e["event"] == "refused" and e["address"] == web.proxy_ip for e in events), events


def test_https_to_a_port_not_allowed_fails_the_tunnel(web):
    before = len(web.proxy_events())
    doc, _, _ = web.read("https://%s:8443/" % web.server_ip)
    assert doc["ok"] is False
    assert doc["error"] == "navigation_failed", doc
    assert "ERR_TUNNEL_CONNECTION_FAILED" in doc["message"]
    events = web.proxy_events()[before:]
    assert {"event": "refused", "host": web.server_ip, "port": 8443, "address": None,
            "reason": "port not allowed"} in events


def test_page_that_never_settles_answers_within_the_timeout(web):
    doc, wall, _ = web.read(web.page("ticking.html"), timeout=6)
    assert_ok(doc)
    assert doc["settled"] is False
    assert "still ticking" in doc["text"]
    assert doc["elapsed_ms"] - doc.get("browser_ms", 0) < (6 + 6) * 1000
    assert wall < 6 + 20 + doc.get("browser_ms", 0) / 1000


def test_response_that_never_ends_answers_what_was_rendered(web):
    doc, wall, _ = web.read(web.page("endless"), timeout=6)
    assert_ok(doc)
    assert doc["settled"] is False
    assert doc["title"] == "Endless"
    assert "partial text visible" in doc["text"]
    assert wall < 6 + 20 + doc.get("browser_ms", 0) / 1000


def test_page_that_never_commits_times_out(web):
    doc, wall, _ = web.read(web.page("stall"), timeout=4)
    assert doc["ok"] is False
    assert doc["error"] == "timeout", doc
    assert doc["elapsed_ms"] - doc.get("browser_ms", 0) < (4 + 6) * 1000
    assert wall < 4 + 20 + doc.get("browser_ms", 0) / 1000


def test_script_that_never_yields_is_stopped_to_read_the_text(web):
    doc, wall, _ = web.read(web.page("spin.html"), timeout=8)
    assert_ok(doc)
    assert "before the loop" in doc["text"]
    assert wall < 8 + 20 + doc.get("browser_ms", 0) / 1000


def test_dialogs_do_not_block_the_page(web):
    doc, _, _ = web.read(web.page("alert.html"))
    assert_ok(doc)
    assert "after the dialogs" in doc["text"]


def test_page_scripts_cannot_forge_what_is_read(web):
    doc, _, _ = web.read(web.page("tamper.html"))
    assert_ok(doc)
    assert doc["title"] == "Real title"
    assert "real text" in doc["text"]
    assert "forged" not in doc["text"]


def test_huge_page_is_truncated_at_max_chars(web):
    doc, _, _ = web.read(web.page("huge.html"), max_chars=5000)
    assert_ok(doc)
    assert doc["truncated"] is True
    assert len(doc["text"]) == 5000
    assert doc["text"].startswith("0 word0 word1")


def test_document_cut_by_the_byte_cap_is_read_to_its_last_byte(web):
    # Chromium stops parsing a document whose body fails and drops what it received but had not
    # parsed yet (on a loaded machine, all of it); fetch_page's watch makes the proxy hold the cut
    # document open instead, and the text is read once the page has parsed every byte it got
    cap = 1 << 20
    proxy, container = web.capped_proxy(cap)
    doc, _, _ = web.read(web.page("huge.html"), max_chars=10_000_000, proxy=proxy)
    assert_ok(doc)
    assert doc["byte_cap"] is True
    assert doc["title"] == "Huge"
    # every paragraph that came whole within the cap (less room for the response head) is read
    last = HUGE_HTML.encode()[: cap - 4096].count(b"</p>") - 1
    assert last > 300
    text = doc["text"]
    assert text.startswith("0 %s\n" % WORDS), text[:200]
    assert "\n%d %s\n" % (last, WORDS) in text, (len(text), text[-300:])
    assert "699 word0" not in text  # the rest was not downloaded
    assert {"event": "byte_cap", "max_bytes": cap} in web.proxy_events(container)


def test_subresource_cut_by_the_byte_cap_fails_as_before_once_the_document_is_whole(web):
    # the whole document needs nothing held: the watch is released, the cut script fails and the
    # parser goes on past it
    proxy, _ = web.capped_proxy(1 << 20)
    doc, _, _ = web.read(web.page("cut-script.html"), proxy=proxy)
    assert_ok(doc)
    assert doc["byte_cap"] is True
    assert doc["settled"] is True
    assert "text before the script" in doc["text"] and "text after the script" in doc["text"], doc["text"]


def test_page_within_the_byte_cap_says_so(web):
    doc, _, _ = web.read(web.page("js.html"))
    assert_ok(doc)
    assert doc["byte_cap"] is False


def test_http_error_status_is_reported(web):
    doc, _, _ = web.read(web.page("missing"))
    assert_ok(doc)
    assert doc["status"] == 404


def png_size(data):
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    assert data[12:16] == b"IHDR"
    return struct.unpack(">II", data[16:24])


def test_screenshot_is_a_png_of_the_viewport(web):
    doc, _, _ = web.read(web.page("shot.html"), "--screenshot")
    assert_ok(doc)
    assert png_size(base64.b64decode(doc["screenshot"])) == (1280, 800)
    doc, _, _ = web.read(web.page("shot.html"), "--screenshot", "--width", "640", "--height", "480")
    assert png_size(base64.b64decode(doc["screenshot"])) == (640, 480)


def test_only_http_and_https_urls(web):
    doc, _, _ = web.read("file:///etc/passwd")
    assert doc["ok"] is False
    assert doc["error"] == "navigation_failed"
    assert "root:" not in json.dumps(doc)


def test_browser_that_cannot_start_is_reported(web):
    doc, _, _ = web.read(web.page("js.html"), docker_args=("--pids-limit", "12"), timeout=10)
    assert doc["ok"] is False
    assert doc["error"] == "browser_failed", doc
    assert doc["message"]

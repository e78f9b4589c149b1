"""The web-page reader through a real runboxd (core/web/web.c): POST /web/page-text and the MCP tool
get_page_text, with the browser image (docker/build-images --browser) on the real Docker engine.

Nothing leaves the machine: the test makes an internal Docker network (no route out) with two
page servers of its own on it, "pages" (whose address runboxd is told to allow with --web-allow)
and "secret" (not listed: what a page must never reach), and starts runboxd with --web-network
on that network. A refused address in these tests is always one of the test's own: the
browser's loopback (127.0.0.1) or the secret container, whose request log must stay empty.
"""

from __future__ import annotations

import base64
import json
import secrets
import sys
import threading
from pathlib import Path

import anyio
import pytest
import requests

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "integration"))

import rbtest  # noqa: E402
from rbfixtures import sandbox_image  # noqa: E402, F401 (fixture)

PORT = 8000
BROWSER_IMAGE = "runbox-browser:latest"

# The page server: a few pages and a request log on stdout (one line per request).
SERVE_PY = r"""
import http.server, sys, time
HUGE = ("<p>" + "lorem ipsum dolor sit amet " * 40 + "</p>\n") * 3000
PAGES = {
  "/app.html": "<html><head><title>Rendered by script</title></head><body><p id=x>waiting</p>"
               "<script>document.getElementById('x').textContent = 'rendered ' + (6 * 7);"
               "document.title = 'Rendered by script';</script></body></html>",
  "/plain.html": "<html><head><title>Plain</title></head><body><h1>Hello from the test</h1>"
                 "<p style='display:none'>hidden words</p></body></html>",
  "/huge.html": "<html><head><title>Huge</title></head><body>" + HUGE + "</body></html>",
}
class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def log_message(self, fmt, *args):
        print("REQUEST " + self.requestline, flush=True)
    def send(self, code, body, ctype="text/html; charset=utf-8", extra=()):
        data = body.encode()
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        for k, v in extra:
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)
    def do_GET(self):
        path, _, query = self.path.partition("?")
        if path.startswith("/redirect"):
            self.send(302, "moved", extra=[("Location", query)])
        elif path == "/sub.html":
            target = query
            self.send(200, "<html><head><title>Subresources</title></head><body><p>main text stays</p>"
                           "<img src='" + target + "/pixel.png'>"
                           "<script>fetch('" + target + "/data').catch(function () {});</script></body></html>")
        elif path == "/never.html":
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", "1000000")
            self.end_headers()
            self.wfile.write(b"<html><head><title>Never</title></head><body><p>partial text</p>" + b" " * 2048)
            self.wfile.flush()
            time.sleep(300)
        elif path == "/ready":
            self.send(200, "ready")
        elif path in PAGES:
            self.send(200, PAGES[path])
        else:
            self.send(404, "no such page")
http.server.ThreadingHTTPServer(("", %d), H).serve_forever()
""" % PORT


def browser_image_present() -> None:
    if not rbtest.image_exists(BROWSER_IMAGE):
        pytest.fail(f"the browser image {BROWSER_IMAGE} is missing: build it with docker/build-images --browser "
                    "(scripts/test does)")


@pytest.fixture(scope="module")
def web_net(sandbox_image, tmp_path_factory):
    """An internal network with the page servers "pages" and "secret": (network, pages IP, secret IP,
    secret container name)."""
    browser_image_present()
    tag = secrets.token_hex(4)
    net = f"runbox-test-web-{tag}"
    root = tmp_path_factory.mktemp("web-pages")
    (root / "serve.py").write_text(SERVE_PY)
    names = {role: f"runbox-test-web-{role}-{tag}" for role in ("pages", "secret")}
    rbtest.docker("network", "create", "--internal", "--label", "runbox.test=web", net)
    try:
        for name in names.values():
            rbtest.docker("run", "-d", "--name", name, "--network", net, "--user", "0", "--cap-drop", "ALL",
                          "--read-only", "--label", "runbox.test=web", "-v", f"{root}:/srv:ro",
                          "--entrypoint", "python3", sandbox_image, "-u", "/srv/serve.py")
        probe = f"import urllib.request; print(urllib.request.urlopen('http://127.0.0.1:{PORT}/ready').status)"
        for name in names.values():
            rbtest.wait_until(lambda: rbtest.docker("exec", name, "python3", "-c", probe, check=False) == "200",
                              f"the test's page server {name}")
        ips = {role: rbtest.docker("inspect", "-f", f"{{{{(index .NetworkSettings.Networks \"{net}\").IPAddress}}}}",
                                   name) for role, name in names.items()}
        yield net, ips["pages"], ips["secret"], names["secret"]
    finally:
        rbtest.docker("rm", "-f", *names.values(), check=False)
        rbtest.docker("network", "rm", net, check=False)


@pytest.fixture(scope="module")
def server(web_net, tmp_path_factory):
    net, pages, _, _ = web_net
    s = rbtest.Server(tmp_path_factory.mktemp("runboxd-web"),
                      ["--pool-size", "0", "--web-tool", "--web-network", net, "--web-allow", f"{pages}/32",
                       "--web-ports", str(PORT), "--web-timeout", "25", "--web-max-bytes", "2m",
                       "--web-max-concurrent", "2"])
    s.start()
    yield s
    rbtest.finish_servers([s])


def secret_requests(web_net) -> list[str]:
    """The request lines the secret server has seen but the test's own readiness probe (it must
    see none)."""
    out = rbtest.docker("logs", web_net[3])
    return [line for line in out.splitlines() if line.startswith("REQUEST") and "/ready" not in line]


def read(server, body: dict, timeout: float = 120) -> requests.Response:
    return server.post("/web/page-text", body, timeout=timeout)


def web_objects() -> tuple[list[str], list[str]]:
    """Containers and networks of page reads that exist now (any runboxd's)."""
    cs = rbtest.docker("ps", "-aq", "--filter", "label=runbox.web=1").split()
    ns = rbtest.docker("network", "ls", "-q", "--filter", "label=runbox.web=1").split()
    return cs, ns


def test_script_rendered_text_title_final_url_and_screenshot(server, web_net):
    _, pages, _, _ = web_net
    url = f"http://{pages}:{PORT}/app.html"
    r = read(server, {"url": url, "screenshot": True})
    assert r.status_code == 200, r.text
    doc = r.json()
    rbtest.check_schema(doc, "PageText")
    assert "rendered 42" in doc["text"], doc["text"]
    assert "waiting" not in doc["text"]
    assert doc["title"] == "Rendered by script"
    assert doc["url"] == url and doc["final_url"] == url
    assert doc["status"] == 200 and doc["truncated"] is False and doc["refused"] == []
    assert base64.b64decode(doc["screenshot"]).startswith(rbtest.PNG_SIGNATURE)
    # visible text only: what display:none hides is not read
    doc = read(server, {"url": f"http://{pages}:{PORT}/plain.html"}).json()
    assert "Hello from the test" in doc["text"] and "hidden words" not in doc["text"], doc
    assert "screenshot" not in doc


def test_redirect_to_the_browsers_loopback_is_refused(server, web_net):
    _, pages, _, _ = web_net
    r = read(server, {"url": f"http://{pages}:{PORT}/redirect?http://127.0.0.1:{PORT}/plain.html"})
    err = rbtest.check_error(r, 403, "refused")
    assert "127.0.0.1" in err["message"] and "loopback" in err["message"], err


def test_redirect_and_direct_reads_of_an_unlisted_container_are_refused(server, web_net):
    _, pages, secret, _ = web_net
    r = read(server, {"url": f"http://{pages}:{PORT}/redirect?http://{secret}:{PORT}/plain.html"})
    err = rbtest.check_error(r, 403, "refused")
    assert secret in err["message"] and "private" in err["message"], err
    r = read(server, {"url": f"http://{secret}:{PORT}/plain.html"})
    err = rbtest.check_error(r, 403, "--web-allow")
    # a port that is not listed, on the allowed address
    r = read(server, {"url": f"http://{pages}:8001/plain.html"})
    err = rbtest.check_error(r, 403, "port")
    assert secret_requests(web_net) == []


def test_subresources_of_refused_addresses_are_not_fetched(server, web_net):
    _, pages, secret, _ = web_net
    r = read(server, {"url": f"http://{pages}:{PORT}/sub.html?http://{secret}:{PORT}"})
    assert r.status_code == 200, r.text
    doc = r.json()
    assert "main text stays" in doc["text"]
    refused = [e for e in doc["refused"] if e.get("address") == secret or e.get("host") == secret]
    assert refused and all(e["event"] == "refused" for e in refused), doc["refused"]
    assert "private" in refused[0]["reason"], refused
    assert secret_requests(web_net) == []


def test_a_page_that_never_finishes_is_answered_with_what_was_rendered(server, web_net):
    _, pages, _, _ = web_net
    r = read(server, {"url": f"http://{pages}:{PORT}/never.html", "timeout": 6})
    assert r.status_code == 200, r.text
    doc = r.json()
    assert doc["settled"] is False, doc
    assert "partial text" in doc["text"], doc


def test_a_huge_page_is_capped_in_bytes_and_characters(server, web_net):
    _, pages, _, _ = web_net
    r = read(server, {"url": f"http://{pages}:{PORT}/huge.html", "max_chars": 1000})
    assert r.status_code == 200, r.text
    doc = r.json()
    assert len(doc["text"]) == 1000 and doc["truncated"] is True, (len(doc["text"]), doc["truncated"])
    assert doc["byte_cap_reached"] is True, "the 3.3 MB page passes --web-max-bytes 2m"
    # the page's own text from its first character, however far the browser had parsed when the
    # cap cut the document
    assert doc["text"] == ("lorem ipsum dolor sit amet " * 40)[:1000], doc["text"][:200]
    assert doc["title"] == "Huge" and doc["status"] == 200, doc


def test_bad_urls_and_arguments_are_400(server):
    for body, mention in [({"url": "ftp://example.test/"}, "http"), ({"url": "file:///etc/passwd"}, "http"),
                          ({"url": "http://user:pw@example.test/"}, "password"), ({}, "url"),
                          ({"url": "http://example.test/", "timeout": 26}, "timeout"),
                          ({"url": "http://example.test/", "screenshot": "yes"}, "screenshot")]:
        rbtest.check_error(read(server, body), 400, mention)


def test_reads_beyond_the_limit_get_429_and_nothing_is_left_behind(server, web_net):
    _, pages, _, _ = web_net
    results = []

    def slow():
        results.append(read(server, {"url": f"http://{pages}:{PORT}/never.html", "timeout": 8}))

    # An earlier read's network is removed after its answer (its slot is free at once): wait for
    # those to go, so that the networks counted below are these reads' own.
    rbtest.wait_until(lambda: web_objects() == ([], []), "earlier page reads' containers and networks removed")
    threads = [threading.Thread(target=slow) for _ in range(2)]
    for t in threads:
        t.start()
    try:
        # both reads hold their slot: their networks exist, internal and without a host address
        rbtest.wait_until(lambda: len(web_objects()[1]) >= 2, "two page reads in flight")
        for n in web_objects()[1]:
            info = json.loads(rbtest.docker("network", "inspect", n))[0]
            assert info["Internal"] is True, info
            assert info["Options"].get("com.docker.network.bridge.inhibit_ipv4") == "true", info
        r = read(server, {"url": f"http://{pages}:{PORT}/plain.html"})
        rbtest.check_error(r, 429, "--web-max-concurrent")
    finally:
        for t in threads:  # never leave reads holding slots for the tests after this one
            t.join()
    assert [x.status_code for x in results] == [200, 200], [x.text for x in results]
    rbtest.wait_until(lambda: web_objects() == ([], []), "the page reads' containers and networks removed")


def test_mcp_get_page_text(server, web_net):
    from mcp import Client

    _, pages, secret, _ = web_net

    async def go():
        async with Client(server.url + "/mcp") as c:
            names = [t.name for t in (await c.list_tools()).tools]
            ok = await c.call_tool("get_page_text", {"url": f"http://{pages}:{PORT}/app.html", "screenshot": True})
            bad = await c.call_tool("get_page_text", {"url": f"http://{secret}:{PORT}/plain.html"})
            return names, ok, bad

    names, ok, bad = anyio.run(go)
    assert "get_page_text" in names
    assert not ok.is_error, ok.content
    assert "Rendered by script" in ok.content[0].text and "rendered 42" in ok.content[0].text
    assert ok.content[1].type == "image" and base64.b64decode(ok.content[1].data).startswith(rbtest.PNG_SIGNATURE)
    assert ok.structured_content["title"] == "Rendered by script"
    assert bad.is_error and secret in bad.content[0].text, bad.content


def test_off_by_default(sandbox_image, tmp_path):
    s = rbtest.Server(tmp_path, ["--pool-size", "0"]).start()
    try:
        r = s.post("/web/page-text", {"url": "http://example.test/"})
        rbtest.check_error(r, 404, "--web-tool")
        from mcp import Client

        async def tools():
            async with Client(s.url + "/mcp") as c:
                return [t.name for t in (await c.list_tools()).tools]

        assert "get_page_text" not in anyio.run(tools)
    finally:
        rbtest.finish_servers([s])

"""npm packages for javascript and typescript sessions through the REST API of a real runboxd,
installed the way Python packages are (core/deps_npm.c over core/deps.c): a filler container
with network fills a cache volume per requirement set, a copier without network copies it into
the session's /workspace/.runbox/node_modules, and the sandbox never has network.

No registry on the internet is contacted: the test makes an internal Docker network (no way
out of it), serves a registry of its own there (a few lines of http.server in a container of the
sandbox image, serving the packuments and tarballs of two tiny packages the test packs itself,
with their sha512 integrity and sha1 shasum), and starts runboxd with --deps-network on that
network and --deps-npm-registry pointing at the registry container by name.
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
import secrets
import tarfile

import anyio
import pytest
from mcp import Client

import rbtest
from test_dependencies import cache_snapshot, check_error

PKG = "runbox-test-pkg"
DEP = "runbox-test-dep"
PORT = 8080

# The registry: GET /NAME answers the packument NAME/index.json, GET /NAME/-/FILE the tarball.
SERVE_PY = """
import http.server, os, sys
ROOT = "/srv"
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        p = os.path.normpath(self.path.split("?")[0]).lstrip("/")
        f = os.path.join(ROOT, p)
        if os.path.isdir(f):
            f = os.path.join(f, "index.json")
        try:
            data = open(f, "rb").read()
        except OSError:
            self.send_error(404)
            return
        self.send_response(200)
        self.send_header("Content-Type", "application/octet-stream" if f.endswith(".tgz") else "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
http.server.ThreadingHTTPServer(("", %d), H).serve_forever()
""" % PORT


def tarball(files: dict[str, str]) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as t:
        for name, text in files.items():
            data = text.encode()
            info = tarfile.TarInfo("package/" + name)
            info.size, info.mode = len(data), 0o644
            t.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def publish(root, registry: str, name: str, version: str, deps: dict[str, str], index_js: str) -> None:
    manifest = {"name": name, "version": version, "main": "index.js", "dependencies": deps}
    tgz = tarball({"package.json": json.dumps(manifest), "index.js": index_js})
    folder = root / name / "-"
    folder.mkdir(parents=True)
    (folder / f"{name}-{version}.tgz").write_bytes(tgz)
    dist = {"tarball": f"{registry}{name}/-/{name}-{version}.tgz", "shasum": hashlib.sha1(tgz).hexdigest(),
            "integrity": "sha512-" + base64.b64encode(hashlib.sha512(tgz).digest()).decode()}
    doc = {"name": name, "dist-tags": {"latest": version}, "versions": {version: dict(manifest, dist=dist)}}
    (root / name / "index.json").write_text(json.dumps(doc))


@pytest.fixture
def registry(sandbox_image, tmp_path):
    """An internal Docker network with an npm registry container on it: (network, registry URL).
    Removes both, and the dependency cache volumes of npm sets made meanwhile."""
    tag = secrets.token_hex(4)
    net, name = f"runbox-test-npm-{tag}", f"runbox-test-npmreg-{tag}"
    url = f"http://{name}:{PORT}/"
    root = tmp_path / "registry"
    publish(root, url, DEP, "1.0.0", {}, "module.exports = 40;\n")
    publish(root, url, PKG, "1.2.3", {DEP: "^1.0.0"},
            "module.exports = { answer: require('runbox-test-dep') + 2, where: __dirname };\n")
    (root / "serve.py").write_text(SERVE_PY)
    before = deps_volumes()
    rbtest.docker("network", "create", "--internal", net)
    try:
        rbtest.docker("run", "-d", "--name", name, "--network", net, "--user", "0", "--cap-drop", "ALL",
                      "--read-only", "--label", "runbox.test=npm-registry", "-v", f"{root}:/srv:ro",
                      "--entrypoint", "python3", sandbox_image, "/srv/serve.py")
        # ready when it answers on its own loopback
        probe = f"import urllib.request; print(urllib.request.urlopen('http://127.0.0.1:{PORT}/{PKG}').status)"
        rbtest.wait_until(lambda: rbtest.docker("exec", name, "python3", "-c", probe, check=False) == "200",
                          "the test's npm registry")
        yield net, url
    finally:
        rbtest.docker("rm", "-f", name, check=False)
        new = deps_volumes() - before
        if new:
            rbtest.docker("volume", "rm", "-f", *sorted(new), check=False)
        rbtest.docker("network", "rm", net, check=False)


def deps_volumes() -> set[str]:
    """npm cache volumes of sets that name this file's packages (other suites may install other
    sets on the same engine at the same time: scripts/test runs suites side by side)."""
    out = rbtest.docker("volume", "ls", "--filter", "label=runbox.deps.tool=npm",
                        "--format", '{{.Name}}\t{{.Label "runbox.deps.set"}}')
    found = set()
    for line in out.splitlines():
        name, _, reqs = line.partition("\t")
        if name and any(r.strip().startswith(("runbox-test-", "left-pad", "tomli-w")) for r in reqs.split(",")):
            found.add(name)
    return found


def run(server, sid: str, code: str) -> dict:
    r = server.post("/execute", {"session_id": sid, "code": code, "wait": True, "timeout": 120})
    assert r.status_code == 200, r.text
    return r.json()


def test_npm_install_at_creation_from_cache_and_into_a_running_session(registry, make_server):
    net, url = registry
    s = make_server(["--deps-network", net, "--deps-npm-registry", url])

    # at creation: the filler downloads from the test's registry, the copier copies
    first = s.create_session({"language": "javascript", "dependencies": [f"{PKG}@^1.2.0"]})
    doc = run(s, first["session_id"], f"const pkg = require('{PKG}');\n[pkg.answer, pkg.where]")
    assert doc["status"] == "completed", doc
    assert doc["result"] == f"[ 42, '/workspace/.runbox/node_modules/{PKG}' ]", doc
    assert doc["files_written"] == []
    log = s.log_text()
    assert log.count("dependencies installed (downloaded)") == 1, log[-3000:]

    # the same set for a typescript session: served from the cache, the filler does not run again
    second = s.create_session({"language": "typescript", "dependencies": [f"{PKG}@^1.2.0"]})
    doc = run(s, second["session_id"], f"import * as pkg from '{PKG}';\nconst n: number = pkg.answer;\nn")
    assert doc["status"] == "completed" and doc["result"] == "42", doc
    log = s.log_text()
    assert log.count("dependencies installed (downloaded)") == 1 and "dependencies installed (from cache)" in log

    # a running session installs a package, then requires it without a restart
    sid = s.create_session({"language": "javascript"})["session_id"]
    doc = run(s, sid, f"try {{ require('{DEP}') }} catch (e) {{ e.code }}")
    assert doc["result"] == "'MODULE_NOT_FOUND'", doc
    r = s.post(f"/sessions/{sid}/dependencies", {"dependencies": [f"{DEP}@1.0.0"]})
    assert r.status_code == 200, r.text
    rbtest.check_schema(r.json(), "DependenciesResult")
    assert r.json()["cached"] is False and r.json()["dependencies"] == [f"{DEP}@1.0.0"], r.json()
    assert r.json()["node_modules"] == "/workspace/.runbox/node_modules" and "site_packages" not in r.json()
    doc = run(s, sid, f"require('{DEP}') + 2")
    assert doc["result"] == "42", doc
    r = s.post(f"/sessions/{sid}/dependencies", {"dependencies": [f"{DEP}@1.0.0"]})
    assert r.status_code == 200 and r.json()["cached"] is True, r.text

    # MCP's install_dependencies takes npm packages for the session it names (here a cache hit)
    async def mcp_install():
        async with Client(s.url + "/mcp") as c:
            return await c.call_tool("install_dependencies", {"session_id": sid, "dependencies": [f"{PKG}@^1.2.0"]})

    res = anyio.run(mcp_install)
    assert not res.is_error, res.content
    assert res.structured_content["cached"] is True, res.structured_content
    assert res.structured_content["node_modules"] == "/workspace/.runbox/node_modules"
    doc = run(s, sid, f"[require('{PKG}').answer, require('{DEP}')]")
    assert doc["result"] == "[ 42, 40 ]", doc

    # npm's own failure names the package; nothing is cached for it
    r = s.post(f"/sessions/{sid}/dependencies", {"dependencies": ["runbox-no-such-package"]})
    check_error(r, 400, "invalid_request", "npm could not install", "runbox-no-such-package")

    # user code still has no network: loopback is its only interface
    doc = run(s, sid, "Object.keys(require('os').networkInterfaces())")
    assert doc["result"] == "[ 'lo' ]", doc
    assert rbtest.inspect(first["container_id"])["HostConfig"]["NetworkMode"] == "none"
    # no installer container is left behind (by this runboxd: other tests may be installing)
    for one in (first["session_id"], second["session_id"], sid):
        assert rbtest.docker("ps", "-aq", "--filter", f"label=runbox.deps-for={one}") == ""


def test_npm_requirements_are_checked_before_anything_starts(registry, make_server):
    net, url = registry
    before = deps_volumes()
    s = make_server(["--deps-network", net, "--deps-npm-registry", url,
                     "--deps-block", f"npm:{DEP}", "--deps-allow", f"npm:{PKG}, npm:{DEP}, tomli-w"])
    for bad in ["../evil", "x@file:/etc", "x@https://example.invalid/x.tgz", "git+https://example.invalid/x.git",
                "a/b", "x@1 || 2", "--registry=http://x/", "requests==2.32.3", "", 5]:
        check_error(s.post("/sessions", {"language": "javascript", "dependencies": [bad]}), 400,
                    "invalid_request", "dependencies")
    check_error(s.post("/sessions", {"language": "typescript", "dependencies": [DEP]}), 403, "forbidden",
                DEP, f"deps-block rule 'npm:{DEP}'")
    check_error(s.post("/sessions", {"language": "javascript", "dependencies": ["left-pad"]}), 403, "forbidden",
                "left-pad", "allowlist")
    check_error(s.post("/sessions", {"language": "bash", "dependencies": [PKG]}), 400, "invalid_request")
    assert s.get("/sessions").json()["sessions"] == []
    sid = s.create_session({"language": "javascript"})["session_id"]
    check_error(s.post(f"/sessions/{sid}/dependencies", {"dependencies": ["x@../y"]}), 400, "invalid_request",
                "npm package name")
    check_error(s.post(f"/sessions/{sid}/dependencies", {"dependencies": ["tomli-w"]}), 403, "forbidden",
                "allowlist")
    # nothing was installed or cached on the way
    assert deps_volumes() == before


def test_user_symlinks_cannot_poison_the_shared_npm_cache(registry, make_server):
    """Issue 9, finding 8, for npm: code in session A replaces its installed files with symlinks
    to where the installer mounts the cache (/cache/site/node_modules/...) and installs the same
    set again; the copy must not follow them. The cache stays byte for byte as it was, session B
    gets intact files, A's own install is repaired, and a link where .runbox was is dropped."""
    net, url = registry
    s = make_server(["--deps-network", net, "--deps-npm-registry", url])
    req = f"{PKG}@^1.2.0"
    a = s.create_session({"language": "javascript", "dependencies": [req]})["session_id"]
    [vol] = rbtest.docker("volume", "ls", "-q", "--filter", f"label=runbox.deps.set={req}",
                          "--filter", "label=runbox.deps.tool=npm").split()
    before = cache_snapshot(vol)
    assert f"site/node_modules/{PKG}/index.js" in before, before

    # every file of the package becomes a link into the cache: index.js to package.json, the
    # others to index.js; a copy that follows links would overwrite the shared files
    plant = ("const fs = require('fs'), d = '/workspace/.runbox/node_modules/%s';\n"
             "const names = fs.readdirSync(d).filter((n) => fs.statSync(d + '/' + n).isFile()).sort();\n"
             "for (const n of names) {\n"
             "  fs.unlinkSync(d + '/' + n);\n"
             "  fs.symlinkSync('/cache/site/node_modules/%s/' + (n === 'index.js' ? 'package.json' : 'index.js'),"
             " d + '/' + n);\n"
             "}\n"
             "names") % (PKG, PKG)
    doc = run(s, a, plant)
    assert doc["status"] == "completed" and "index.js" in doc["result"], doc
    r = s.post(f"/sessions/{a}/dependencies", {"dependencies": [req]})
    assert r.status_code == 200 and r.json()["cached"] is True, r.text
    assert cache_snapshot(vol) == before, "the shared cache was written through links in session A's workspace"

    b = s.create_session({"language": "javascript", "dependencies": [req]})["session_id"]
    doc = run(s, b, f"require('{PKG}').answer")
    assert doc["result"] == "42", doc
    check_links = ("const fs = require('fs'), d = '/workspace/.runbox/node_modules/%s';\n"
                   "fs.readdirSync(d).filter((n) => fs.lstatSync(d + '/' + n).isSymbolicLink())") % PKG
    assert run(s, a, check_links)["result"] == "[]"
    assert run(s, a, f"require('{PKG}').answer")["result"] == "42"

    # a link where .runbox was is dropped, not followed
    doc = run(s, a, "const fs = require('fs');\n"
                    "fs.renameSync('/workspace/.runbox', '/workspace/kept');\n"
                    "fs.symlinkSync('/cache', '/workspace/.runbox')")
    assert doc["status"] == "completed", doc
    r = s.post(f"/sessions/{a}/dependencies", {"dependencies": [f"{DEP}@1.0.0"]})
    assert r.status_code == 200, r.text
    doc = run(s, a, "const fs2 = require('fs');\n"
                    "[fs2.lstatSync('/workspace/.runbox').isSymbolicLink(), fs2.readdirSync('/workspace/.runbox')]")
    assert doc["result"] == "[ false, [ 'node_modules' ] ]", doc
    assert cache_snapshot(vol) == before

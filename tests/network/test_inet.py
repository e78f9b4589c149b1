"""The test-made internet itself (inet.py, inet_server.py), checked from a plain container of the
sandbox image on its network (no runboxd, no proxy): every server answers on each of its names,
HTTPS verifies with the test CA (and only with it), the PEP 503 index serves wheels that pip
installs, the npm registry serves a package npm installs, and the network is --internal. The
egress tests rely on all of this; when one of these fails, theirs mean nothing."""

from __future__ import annotations

import hashlib
import json

from inet import NAMES, SERVERS, docker

# Runs in a client container: GET every URL of argv[1] (a JSON list), with the test CA.
GET_ALL = r'''
import json, ssl, sys, urllib.request
ctx = ssl.create_default_context(cafile="/ca/ca.pem")
out = {}
for url in json.loads(sys.argv[1]):
    try:
        with urllib.request.urlopen(url, timeout=20, context=ctx) as r:
            out[url] = [r.status, r.read().decode("latin-1")]
    except Exception as e:
        out[url] = [None, type(e).__name__ + ": " + str(e)]
print(json.dumps(out))
'''


def get_all(inet, urls: list[str]) -> dict:
    r = inet.run_client(["python3", "-I", "-c", GET_ALL, json.dumps(urls)])
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def test_network_is_internal_and_servers_are_locked_down(inet):
    net = json.loads(docker("network", "inspect", inet.network))[0]
    assert net["Internal"] is True, "the test-made internet must not reach beyond itself"
    assert net["Labels"].get("rbtest") == "1"
    assert inet.subnet and all(inet.ips[r] for r in SERVERS)
    assert len(set(inet.ips.values())) == len(SERVERS)
    for role, cname in inet.containers.items():
        c = json.loads(docker("inspect", cname))[0]
        assert c["HostConfig"]["ReadonlyRootfs"] is True, role
        assert list(c["NetworkSettings"]["Networks"]) == [inet.network], role
        aliases = c["NetworkSettings"]["Networks"][inet.network]["Aliases"] or []
        assert set(SERVERS[role][0]) <= set(aliases), (role, aliases)


def test_every_name_answers_http_and_verified_https(inet):
    urls = []
    for name in NAMES:
        urls += [f"http://{name}/hello", f"https://{name}/hello"]
    for name in SERVERS["www"][0] + SERVERS["private"][0]:
        urls.append(f"http://{name}:8080/hello")
    got = get_all(inet, urls)
    for url in urls:
        status, body = got[url]
        host = url.split("/")[2]
        scheme = url.split(":")[0]
        assert status == 200, f"{url}: {body}"
        assert body.startswith(f"hello from {host} ") and body.rstrip().endswith(f"{scheme})"), f"{url}: {body}"


def test_https_needs_the_test_ca(inet):
    """Without the test CA, the certificate does not verify: HTTPS tests prove the CA is used."""
    code = ("import urllib.request\ntry:\n    urllib.request.urlopen('https://www.example.test/hello', timeout=20)\n"
            "    print('VERIFIED')\nexcept Exception as e:\n    print(type(e).__name__, e)")
    r = inet.run_client(["python3", "-I", "-c", code])
    assert "CERTIFICATE_VERIFY_FAILED" in r.stdout, r.stdout + r.stderr
    r = inet.run_client(["openssl", "s_client", "-connect", "pypi.example.test:443", "-servername",
                         "pypi.example.test", "-CAfile", "/ca/ca.pem", "-verify_return_error", "-brief"])
    assert "Verification: OK" in r.stderr + r.stdout, r.stderr


def test_big_and_raw_tcp(inet):
    got = get_all(inet, ["http://www.example.test/big?bytes=100000"])
    status, body = got["http://www.example.test/big?bytes=100000"]
    assert status == 200 and body == "x" * 100000
    code = ("import socket\ns = socket.create_connection(('www.example.test', 7000), timeout=20)\n"
            "banner = s.recv(100)\ns.sendall(b'ping')\nprint(banner.decode().strip(), s.recv(100).decode())")
    r = inet.run_client(["python3", "-I", "-c", code])
    assert r.stdout.strip() == "rbt-echo www ping", r.stdout + r.stderr
    assert any(e["event"] == "echo" for e in inet.events("www"))


def test_private_server_is_a_separate_host(inet):
    got = get_all(inet, ["https://private.example.test/hello", "https://api.example.test/hello"])
    assert "(server private," in got["https://private.example.test/hello"][1]
    assert "(server www," in got["https://api.example.test/hello"][1]
    assert inet.ips["private"] != inet.ips["www"]


def test_pip_installs_from_the_test_index(inet):
    """Real pip resolves rbnetpkg from https://pypi.example.test/simple (verified with the CA)
    and installs it; the module imports."""
    script = ("set -e; python3 -m pip install -q --no-cache-dir --disable-pip-version-check --target /tmp/t "
              "--index-url https://pypi.example.test/simple --cert /ca/ca.pem rbnetpkg; "
              "PYTHONPATH=/tmp/t python3 -c 'import rbnetpkg; print(rbnetpkg.VALUE)'")
    r = inet.run_client(["bash", "-c", script], timeout=300)
    assert r.returncode == 0 and r.stdout.strip().endswith("42"), r.stdout + r.stderr
    assert inet.requests_seen("pypi", "/simple/rbnetpkg/"), inet.events("pypi")
    assert inet.requests_seen("pypi", "/files/rbnetpkg-1.0-py3-none-any.whl")
    got = get_all(inet, ["https://pypi.example.test/simple/"])
    index = got["https://pypi.example.test/simple/"][1]
    for dist in ("rbnetpkg", "rbnetmagic", "rbnetbash"):
        assert f'href="/simple/{dist}/"' in index, index


def test_npm_installs_from_the_test_registry(inet):
    """Real npm reads the packument of rbnetnpm from https://registry.example.test, fetches
    the tarball its dist.tarball names, checks its integrity, and node requires it."""
    blob = (inet.data / "npm" / inet.npm_file).read_bytes()
    got = get_all(inet, ["https://registry.example.test/rbnetnpm"])
    status, body = got["https://registry.example.test/rbnetnpm"]
    assert status == 200, body
    dist = json.loads(body)["versions"]["1.0.0"]["dist"]
    assert dist["tarball"] == "https://registry.example.test/rbnetnpm/-/rbnetnpm-1.0.0.tgz"
    assert dist["shasum"] == hashlib.sha1(blob).hexdigest()
    script = ("set -e; export HOME=/tmp npm_config_cache=/tmp/npm-cache; mkdir /tmp/p; cd /tmp/p; "
              "npm install --no-audit --no-fund --registry https://registry.example.test --cafile /ca/ca.pem rbnetnpm; "
              "node -e \"console.log(require('rbnetnpm').value)\"")
    r = inet.run_client(["bash", "-c", script], timeout=300)
    assert r.returncode == 0 and r.stdout.strip().endswith("42"), r.stdout + r.stderr
    assert inet.requests_seen("registry", "/rbnetnpm/-/rbnetnpm-1.0.0.tgz")

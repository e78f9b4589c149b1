"""The network tests' test-made internet: a Docker network of the test's own, created with
--internal (nothing on it reaches beyond it), and server containers on it, all of the sandbox
image running tests/network/inet_server.py (Python stdlib), each under reserved `.test` names
(network aliases):

- www.example.test (also api.example.test, cdn.example.test): HTTP on 80 and 8080, HTTPS on
  443, a TCP banner/echo on 7000;
- private.example.test: the same program, on an address the runboxd under test does not list
  as an operator CIDR (--egress-cidr), for "a permitted name that resolves to a private address";
- pypi.example.test: a PEP 503 simple index (HTTPS) of pure wheels made here with
  rbtest.pure_wheel (WHEELS);
- registry.example.test: a minimal npm registry (HTTPS) of a tarball made here (NPM_PACKAGE).

The certificates come from a CA made for the run with openssl on the host (Inet.ca_pem), one
server certificate with every name as a SAN. Nothing here talks to anything but the Docker
engine and the containers on that network. Everything is labelled rbtest=1 and
rbtest.inet=<network name>; stop() removes it all.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import tarfile
import time
import uuid
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT / "tests" / "integration"))

from rbtest import pure_wheel  # noqa: E402

IMAGE = os.environ.get("RUNBOX_IMAGE", "runbox-sandbox:latest")
DEADLINE_S = float(os.environ.get("RUNBOX_TEST_DEADLINE_S", "90"))

# The servers: role -> (its network aliases, its program's port options).
WEB_PORTS = ["--http", "80", "--http", "8080", "--https", "443", "--echo", "7000"]
SERVERS = {
    "www": (["www.example.test", "api.example.test", "cdn.example.test"], WEB_PORTS),
    "private": (["private.example.test"], WEB_PORTS),
    "pypi": (["pypi.example.test"], ["--http", "80", "--https", "443"]),
    "registry": (["registry.example.test"], ["--http", "80", "--https", "443"]),
}
NAMES = [n for aliases, _ in SERVERS.values() for n in aliases]

# The wheels of pypi.example.test: distribution -> (version, module file, content).
WHEELS = {
    "rbnetpkg": ("1.0", "rbnetpkg.py", b"VALUE = 42\n"),
    "rbnetmagic": ("1.0", "rbnetmagic.py", b"VALUE = 'installed by %pip'\n"),
    "rbnetbash": ("1.0", "rbnetbash.py", b"VALUE = 'installed by pip in bash'\n"),
}
# The npm package of registry.example.test.
NPM_PACKAGE = ("rbnetnpm", "1.0.0", "module.exports = { value: 42, from: 'registry.example.test' };\n")


def docker(*args: str, check: bool = True, timeout: float = 180) -> str:
    r = subprocess.run(["docker", *args], capture_output=True, text=True, timeout=timeout)
    if check and r.returncode != 0:
        raise AssertionError(f"docker {' '.join(args)} failed ({r.returncode}): {r.stderr.strip()}")
    return r.stdout


def openssl(*args: str, cwd: Path) -> None:
    r = subprocess.run(["openssl", *args], capture_output=True, text=True, cwd=cwd, timeout=120)
    if r.returncode != 0:
        raise AssertionError(f"openssl {' '.join(args)} failed: {r.stderr.strip()}")


def make_ca(d: Path) -> None:
    """ca.pem (and its key) and server.pem/server.key for every name of NAMES, in folder d."""
    openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.pem",
            "-days", "3", "-subj", "/CN=runbox network tests CA",
            "-addext", "basicConstraints=critical,CA:TRUE",
            "-addext", "keyUsage=critical,keyCertSign,cRLSign", cwd=d)
    (d / "server.ext").write_text("basicConstraints=critical,CA:FALSE\n"
                                  "keyUsage=critical,digitalSignature,keyEncipherment\n"
                                  "extendedKeyUsage=serverAuth\n"
                                  "subjectAltName=" + ",".join(f"DNS:{n}" for n in NAMES) + "\n")
    openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", "server.key", "-out", "server.csr",
            "-subj", "/CN=www.example.test", cwd=d)
    openssl("x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
            "-out", "server.pem", "-days", "3", "-extfile", "server.ext", cwd=d)


def npm_tarball(name: str, version: str, index_js: str) -> bytes:
    """An npm package tarball: package/package.json and package/index.js."""
    manifest = json.dumps({"name": name, "version": version, "main": "index.js", "license": "MIT",
                           "description": "runbox network test package"}, indent=2).encode()
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as t:
        for path, data in (("package/package.json", manifest), ("package/index.js", index_js.encode())):
            info = tarfile.TarInfo(path)
            info.size = len(data)
            info.mode = 0o644
            info.mtime = 1700000000
            t.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def poll(cond, what: str, deadline: float = DEADLINE_S, every: float = 0.2):
    """Waits until cond() is truthy (returned); fails naming what never happened."""
    end = time.monotonic() + deadline
    while True:
        v = cond()
        if v:
            return v
        if time.monotonic() > end:
            raise AssertionError(f"never happened within {deadline:g} s: {what}")
        time.sleep(every)


class Inet:
    """The test-made internet (see the module docstring). After start(): network, subnet,
    ips (role -> IPv4 address), containers (role -> container name), ca_pem (the CA
    certificate's path on this host) and ca_text (its PEM)."""

    def __init__(self, workdir: Path):
        self.workdir = workdir
        self.id = uuid.uuid4().hex[:10]
        self.network = f"rbt-inet-{self.id}"
        self.subnet = ""
        self.ips: dict[str, str] = {}
        self.containers: dict[str, str] = {}
        self.data = workdir / "srv"
        self.ca_pem = self.data / "ca.pem"
        self.ca_text = ""
        self.wheel_files: dict[str, str] = {}  # distribution -> wheel file name
        self.npm_file = ""
        self.labels = ["--label", "rbtest=1", "--label", f"rbtest.inet={self.network}"]

    # ---- lifecycle -------------------------------------------------------------------------
    def start(self) -> "Inet":
        self.data.mkdir(parents=True, exist_ok=True)
        make_ca(self.data)
        self.ca_text = self.ca_pem.read_text()
        (self.data / "pypi").mkdir(exist_ok=True)
        for dist, (version, module, content) in WHEELS.items():
            fn = f"{dist}-{version}-py3-none-any.whl"
            (self.data / "pypi" / fn).write_bytes(pure_wheel(dist, version, {module: content}))
            self.wheel_files[dist] = fn
        (self.data / "npm").mkdir(exist_ok=True)
        name, version, index_js = NPM_PACKAGE
        self.npm_file = f"{name}-{version}.tgz"
        (self.data / "npm" / self.npm_file).write_bytes(npm_tarball(name, version, index_js))
        for p in [self.data, *self.data.rglob("*")]:  # readable by the containers' users
            os.chmod(p, 0o755 if p.is_dir() else 0o644)
        os.chmod(self.workdir, 0o755)

        docker("network", "create", "--internal", *self.labels, self.network)
        self.subnet = docker("network", "inspect", self.network, "--format",
                             "{{(index .IPAM.Config 0).Subnet}}").strip()
        for role, (aliases, ports) in SERVERS.items():
            cname = f"{self.network}-{role}"
            alias_args = [a for n in aliases for a in ("--network-alias", n)]
            docker("run", "-d", "--name", cname, *self.labels, "--network", self.network, *alias_args,
                   "--read-only", "--user", "0", "--cap-drop", "ALL", "--cap-add", "NET_BIND_SERVICE",
                   "--security-opt", "no-new-privileges", "--pids-limit", "256", "--memory", "256m",
                   "-v", f"{self.data}:/srv:ro", "-v", f"{HERE}:/prog:ro", "--entrypoint", "python3",
                   IMAGE, "-I", "-B", "/prog/inet_server.py", "--name", role, "--data", "/srv",
                   "--cert", "/srv/server.pem", "--key", "/srv/server.key", *ports)
            self.containers[role] = cname
        for role, cname in self.containers.items():
            poll(lambda c=cname: self._ready(c), f"inet server {cname} printing READY")
            self.ips[role] = docker("inspect", cname, "--format",
                                    "{{(index .NetworkSettings.Networks \"%s\").IPAddress}}" % self.network).strip()
            assert self.ips[role], f"{cname} has no address on {self.network}"
        return self

    def _ready(self, cname: str) -> bool:
        state = json.loads(docker("inspect", cname, "--format", "{{json .State}}"))
        if not state.get("Running"):
            logs = subprocess.run(["docker", "logs", cname], capture_output=True, text=True, timeout=30)
            raise AssertionError(f"inet server {cname} exited ({state.get('ExitCode')}):\n{logs.stdout}{logs.stderr}")
        return "READY" in docker("logs", cname, timeout=30)

    def stop(self) -> None:
        """Removes every container (servers and clients) and the network."""
        ids = docker("ps", "-aq", "--filter", f"label=rbtest.inet={self.network}", check=False).split()
        if ids:
            docker("rm", "-f", "-v", *ids, check=False)
        docker("network", "rm", self.network, check=False)

    # ---- helpers ---------------------------------------------------------------------------
    def cidr(self, role: str) -> str:
        return f"{self.ips[role]}/32"

    def events(self, role: str) -> list[dict]:
        """The JSON event lines the server ROLE printed so far (requests, echo connections)."""
        out = []
        for line in docker("logs", self.containers[role], timeout=30).splitlines():
            if line.startswith("{"):
                try:
                    out.append(json.loads(line))
                except ValueError:
                    pass
        return out

    def requests_seen(self, role: str, needle: str) -> list[dict]:
        """The requests server ROLE received whose path contains NEEDLE."""
        return [e for e in self.events(role) if e.get("event") == "request" and needle in e.get("path", "")]

    def run_client(self, argv: list[str], timeout: float = 120) -> subprocess.CompletedProcess:
        """Runs ARGV (the image's programs: python3, node, openssl...) in a fresh container of the
        sandbox image on this network, with the CA at /ca/ca.pem (read-only); removed after."""
        name = f"{self.network}-client-{uuid.uuid4().hex[:8]}"
        try:
            return subprocess.run(["docker", "run", "--rm", "--name", name, *self.labels, "--network", self.network,
                                   "--read-only", "--tmpfs", "/tmp", "--cap-drop", "ALL",
                                   "--security-opt", "no-new-privileges",
                                   "-v", f"{self.data}:/ca:ro", "--entrypoint", argv[0], IMAGE, *argv[1:]],
                                  capture_output=True, text=True, timeout=timeout)
        finally:
            docker("rm", "-f", name, check=False)

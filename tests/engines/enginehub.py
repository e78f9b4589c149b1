"""Real Docker engines as containers, for the tests of one runboxd driving several engines.

    with EngineCluster(n=3) as cluster:
        node = cluster.nodes[0]
        node.url          # "tcp://172.20.0.2:2376" (node.https_url: "https://172.20.0.2:2376")
        node.tls_dir      # ca.pem, cert.pem, key.pem: the client's files (DOCKER_CERT_PATH layout)
        cluster.engine_request(0, "GET", "/version").json()["ApiVersion"]   # "1.41"
        cluster.pause(1); cluster.unpause(1); cluster.partition(2); cluster.heal(2)

EngineCluster creates an --internal Docker network of the host's engine (label
runbox.test=engines) with a subnet of its own, and n node containers of runbox-engine-node:latest
(docker/build-images --engine-node; docker/engine-node/entrypoint.sh) on it, each at a fixed
address (so that stop/start and partition/heal keep it: the server certificates name it). Each node
is a Docker 20.10 engine (API 1.41, storage driver overlay2 on a volume at /var/lib/docker) that
serves its API over TLS on port 2376 and requires a client certificate signed by the cluster's CA.
The CA, one server certificate per node (subjectAltName: the node's address, its container name,
its alias nodeI, and 127.0.0.1/localhost for use inside the node) and one client certificate are
made with the openssl command in a temporary folder and the server's files copied into the nodes
with `docker cp`. The sandbox image (runbox-sandbox:latest) is loaded into each node that lacks
that image id: one `docker save` streamed to all of them at once (POST /images/load), then each
node's image id is checked against the host's.

A node's /var/lib/docker is a named volume, PREFIX-nodeI, kept after the cluster is torn down so
that the next run finds the image loaded (RUNBOX_TEST_ENGINES_KEEP_VOLUMES=0, or
keep_volumes=False, removes them); when another live cluster uses that volume, the node gets a
volume of its own run, always removed. At start every container a node holds from an earlier run
is removed. Containers and the network are removed on exit whatever happened, and those of earlier
runs whose process is gone (label runbox.test.owner: pid-starttime) are removed at the next start.

Traffic: only to the node containers' addresses on the network this module creates (from the host,
over the network's bridge) and to the host's engine through the docker command; requests never
uses proxies of the environment.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import ipaddress
import json
import os
import queue
import shutil
import subprocess
import tempfile
import threading
import time
import uuid
from pathlib import Path

import requests

NODE_IMAGE = os.environ.get("RUNBOX_ENGINE_NODE_IMAGE", "runbox-engine-node:latest")
SANDBOX_IMAGE = os.environ.get("RUNBOX_IMAGE", "runbox-sandbox:latest")
PORT = 2376
LABEL = "runbox.test=engines"
# The flags a node needs on this kind of VM (--privileged fails: the capability bounding set lacks
# CAP_SYS_RESOURCE); the entrypoint remounts /sys and the cgroups read-write.
NODE_FLAGS = [
    "--cap-add", "ALL", "--cap-drop", "SYS_RESOURCE",
    "--security-opt", "seccomp=unconfined", "--security-opt", "apparmor=unconfined",
    "--security-opt", "systempaths=unconfined",
    "--device", "/dev/fuse", "--device-cgroup-rule", "a *:* rwm",
    "--cgroupns", "private", "--tmpfs", "/run", "--tmpfs", "/tmp",
]
CERT_DAYS = 30


# ---- gVisor on a node ------------------------------------------------------------------------

def kvm_kind() -> str | None:
    """What serves this machine's /dev/kvm: "vmx" or "svm" (hardware virtualization, kvm_intel or
    kvm_amd), "pvm" (kvm_pvm: Pagetable-based Virtual Machine, which runs only PVM-enabled guest
    kernels), "kvm" (another module), or None (no /dev/kvm)."""
    if not os.path.exists("/dev/kvm"):
        return None
    for module, kind in (("kvm_intel", "vmx"), ("kvm_amd", "svm"), ("kvm_pvm", "pvm")):
        if os.path.isdir("/sys/module/" + module):
            return kind
    return "kvm"


def gvisor_platform() -> str:
    """The runsc platform a test node uses: RUNBOX_TEST_GVISOR_PLATFORM when set, else kvm where
    /dev/kvm is hardware virtualization, else ptrace. gVisor's KVM platform runs its own ring-0
    code in the guest: under PVM (this machine's kvm_pvm) it hangs at boot (docs/security.md)."""
    chosen = os.environ.get("RUNBOX_TEST_GVISOR_PLATFORM")
    if chosen:
        return chosen
    return "kvm" if kvm_kind() in ("vmx", "svm") else "ptrace"


def gvisor_runsc_args(platform: str | None = None) -> str:
    """runsc's arguments on a node (RUNBOX_NODE_RUNSC): the platform, and no network stack of its
    own (this runsc refuses one on kernel 6.x: networked sandboxes are refused under gVisor)."""
    return "--platform=%s --network=none" % (platform or gvisor_platform())


def gvisor_node_env(platform: str | None = None) -> dict:
    """The environment of a node that registers gVisor as the runtime "runsc"."""
    return {"RUNBOX_NODE_RUNSC": gvisor_runsc_args(platform)}


# A suite run under gVisor: RUNBOX_TEST_ISOLATION is "container" (runc, the host's engine) or
# "gvisor" (runsc on a nested engine: tests/security, and the trust tests of tests/integration).
# SUITE_DOCKER_ENV and SUITE_RUNBOXD_ARGS are set by use_suite_engine (the suite's `engine`
# fixture) under gVisor, empty otherwise: the docker command's environment and runboxd's flags.
ISOLATION = os.environ.get("RUNBOX_TEST_ISOLATION", "container")
if ISOLATION not in ("container", "gvisor"):
    raise ValueError("RUNBOX_TEST_ISOLATION=%r: container or gvisor" % ISOLATION)
GVISOR = ISOLATION == "gvisor"
SUITE_DOCKER_ENV: dict = {}
SUITE_RUNBOXD_ARGS: list = []


def use_suite_engine(cluster) -> None:
    """Points the suite's docker commands and every runboxd it starts from now on at node 0 of
    cluster (gvisor_cluster), with --isolation gvisor, or back at the host's engine (None)."""
    SUITE_DOCKER_ENV.clear()
    SUITE_RUNBOXD_ARGS.clear()
    if cluster is None:
        return
    SUITE_DOCKER_ENV.update(cluster.nodes[0].docker_env())
    SUITE_RUNBOXD_ARGS.extend(cluster.runboxd_args(0) + ["--isolation", "gvisor"])


def suite_docker_env() -> dict | None:
    """The environment of a suite's docker command: None (inherit) on the host's engine."""
    return {**os.environ, **SUITE_DOCKER_ENV} if SUITE_DOCKER_ENV else None


_suite = {"cluster": None, "users": 0}


@contextlib.contextmanager
def gvisor_suite():
    """The `engine` fixture of a suite: under RUNBOX_TEST_ISOLATION=gvisor one gvisor_cluster for
    the whole run, its node the suite's engine meanwhile; else None (the host's engine). Suites
    run in one pytest (tests/security with tests/integration/test_trust.py) share the cluster."""
    if not GVISOR:
        yield None
        return
    if _suite["cluster"] is not None:
        _suite["users"] += 1
        try:
            yield _suite["cluster"]
        finally:
            _suite["users"] -= 1
        return
    with gvisor_cluster() as cluster:
        _suite.update(cluster=cluster, users=1)
        use_suite_engine(cluster)
        try:
            yield cluster
        finally:
            use_suite_engine(None)
            _suite.update(cluster=None, users=0)


@contextlib.contextmanager
def gvisor_cluster(sandbox_image: str = SANDBOX_IMAGE):
    """One node with gVisor registered as "runsc" and the sandbox image, for a suite run under
    gVisor (RUNBOX_TEST_ISOLATION=gvisor): tests/security and the trust tests point runboxd at it
    with cluster.runboxd_args(0) and the docker command with cluster.nodes[0].docker_env()."""
    r = subprocess.run(["docker", "image", "inspect", NODE_IMAGE], capture_output=True, text=True, timeout=60)
    if r.returncode != 0:
        raise EngineError("the engine node image %s is missing or Docker is unreachable: build it with "
                          "docker/build-images --engine-node (%s)" % (NODE_IMAGE, r.stderr.strip()))
    with EngineCluster(n=1, sandbox_image=sandbox_image, node_env={0: gvisor_node_env()}) as cluster:
        cluster.require_runtime(0)
        yield cluster


class EngineError(RuntimeError):
    pass


def docker(*args: str, check: bool = True, timeout: float = 120, input: bytes | None = None) -> str:
    """The docker command against the host's engine; its stdout (text)."""
    r = subprocess.run(["docker", *args], capture_output=True, timeout=timeout, input=input)
    if check and r.returncode != 0:
        raise EngineError("docker %s failed (%d): %s" % (" ".join(args[:4]), r.returncode,
                                                          r.stderr.decode(errors="replace").strip()))
    return r.stdout.decode(errors="replace")


def openssl(*args: str, cwd: Path) -> None:
    r = subprocess.run(["openssl", *args], cwd=cwd, capture_output=True, text=True, timeout=60)
    if r.returncode != 0:
        raise EngineError("openssl %s failed: %s" % (args[0], r.stderr.strip()))


def process_tag(pid: int) -> str | None:
    """pid-starttime of a live process (None: gone, or a zombie nobody reaped yet): a pid that was
    reused does not match the tag its first owner wrote."""
    try:
        stat = Path("/proc/%d/stat" % pid).read_text()
    except OSError:
        return None
    fields = stat[stat.rindex(")") + 2:].split()
    if fields[0] in ("Z", "X"):
        return None
    return "%d-%s" % (pid, fields[19])


def tag_alive(tag: str) -> bool:
    pid, _, _ = tag.partition("-")
    return pid.isdigit() and process_tag(int(pid)) == tag


class EngineNode:
    """One node: a Docker engine in container `name`, at `ip` on the cluster's network."""

    def __init__(self, cluster: "EngineCluster", index: int, name: str, ip: str, volume: str,
                 own_volume: bool):
        self.cluster = cluster
        self.index = index
        self.name = name            # container name, also its DNS name on the network
        self.alias = "node%d" % index
        self.ip = ip
        self.port = PORT
        self.url = "tcp://%s:%d" % (ip, PORT)          # DOCKER_HOST form
        self.https_url = "https://%s:%d" % (ip, PORT)  # what an HTTP client speaks
        self.volume = volume        # mounted at /var/lib/docker
        self.own_volume = own_volume  # made for this run only (removed at teardown)
        self.server_dir = cluster.certs_dir / name     # ca.pem, server-cert.pem, server-key.pem
        self.api_version: str | None = None            # from GET /version, e.g. "1.41"
        self.version: dict | None = None

    # The client's TLS files (the same for every node).
    @property
    def tls_dir(self) -> Path:
        return self.cluster.client_dir

    @property
    def ca(self) -> Path:
        return self.cluster.client_dir / "ca.pem"

    @property
    def cert(self) -> Path:
        return self.cluster.client_dir / "cert.pem"

    @property
    def key(self) -> Path:
        return self.cluster.client_dir / "key.pem"

    def docker_env(self) -> dict:
        """The environment that points the docker command (or any Docker SDK) at this node."""
        return {"DOCKER_HOST": self.url, "DOCKER_TLS_VERIFY": "1", "DOCKER_CERT_PATH": str(self.tls_dir)}

    def __repr__(self) -> str:
        return "EngineNode(%d, %s, %s)" % (self.index, self.name, self.url)


class EngineCluster:
    """n Docker engines on an internal network, each with the sandbox image; a context manager.

    Attributes: nodes (list of EngineNode), network, subnet, gateway, certs_dir, client_dir,
    ca_pem, client_cert, client_key, sandbox_image, sandbox_image_id, timings (seconds by step;
    "load <name>" per node that got the image). Indices are 0-based: nodes[i].
    """

    def __init__(self, n: int = 3, prefix: str = "runbox-test-engine", image: str = NODE_IMAGE,
                 sandbox_image: str | None = SANDBOX_IMAGE, keep_volumes: bool | None = None,
                 start_timeout: float = 90, clean: bool = True, node_env: dict | None = None):
        if not prefix.startswith("runbox-test-engine"):
            raise ValueError("the prefix must start with runbox-test-engine")
        self.n = n
        self.prefix = prefix
        self.image = image
        self.sandbox_image = sandbox_image
        self.sandbox_image_id: str | None = None
        if keep_volumes is None:
            keep_volumes = os.environ.get("RUNBOX_TEST_ENGINES_KEEP_VOLUMES", "1") != "0"
        self.keep_volumes = keep_volumes
        self.start_timeout = start_timeout
        self.clean = clean
        # {index: {NAME: value}}: the environment of node index's entrypoint (RUNBOX_NODE_RUNSC
        # registers gVisor, docker/engine-node/entrypoint.sh)
        self.node_env = node_env or {}
        self.run = uuid.uuid4().hex[:8]
        self.network = "%s-%s-net" % (prefix, self.run)
        self.subnet: str | None = None
        self.gateway: str | None = None
        self.nodes: list[EngineNode] = []
        self.timings: dict[str, float] = {}
        self.tmp: Path | None = None
        self.certs_dir: Path | None = None   # (set by up) ca.pem, ca-key.pem, client/, one folder a node
        self.client_dir: Path | None = None  # ca.pem, cert.pem, key.pem
        self._made_network = False
        self._containers: list[str] = []
        self._lock = threading.Lock()

    # ---- life cycle ------------------------------------------------------------------------

    def __enter__(self) -> "EngineCluster":
        try:
            self.up()
        except BaseException:
            self.down()
            raise
        return self

    def __exit__(self, *exc) -> None:
        self.down()

    def _timed(self, what: str, start: float) -> None:
        with self._lock:
            self.timings[what] = round(time.monotonic() - start, 2)

    def up(self) -> None:
        """Network, certificates, nodes, the sandbox image. Used without `with`, call down() even
        when up() fails."""
        t0 = time.monotonic()
        self.remove_stale()
        self.tmp = Path(tempfile.mkdtemp(prefix="runbox-test-engine-"))
        self.certs_dir = self.tmp / "certs"
        self.client_dir = self.certs_dir / "client"
        self._make_network()
        hosts = ipaddress.ip_network(self.subnet).hosts()
        taken = {self.gateway}
        ips = []
        for h in hosts:
            if str(h) not in taken:
                ips.append(str(h))
            if len(ips) == self.n:
                break
        in_use = self._volumes_in_use()
        for i in range(self.n):
            name = "%s-%s-node%d" % (self.prefix, self.run, i)
            volume = "%s-node%d" % (self.prefix, i)
            own = False
            if volume in in_use:  # another live cluster runs on it: one of our own for this run
                volume = "%s-%s-node%d" % (self.prefix, self.run, i)
                own = True
            self.nodes.append(EngineNode(self, i, name, ips[i], volume, own))
        t = time.monotonic()
        self._make_certs()
        self._timed("certificates", t)
        t = time.monotonic()
        with concurrent.futures.ThreadPoolExecutor(self.n) as pool:
            list(pool.map(self._start_node, self.nodes))
        self._timed("engines up", t)
        if self.clean:
            t = time.monotonic()
            with concurrent.futures.ThreadPoolExecutor(self.n) as pool:
                list(pool.map(self._remove_leftovers, self.nodes))
            self._timed("leftovers removed", t)
        if self.sandbox_image:
            t = time.monotonic()
            self.ensure_image()
            self._timed("sandbox image", t)
        self._timed("up", t0)

    def down(self) -> None:
        """Removes the node containers, the network and (unless kept) the volumes."""
        t = time.monotonic()
        names = list(self._containers)
        if names:
            # a paused container cannot be stopped: unpause first (errors: not paused)
            docker("unpause", *names, check=False)
            with concurrent.futures.ThreadPoolExecutor(len(names)) as pool:
                list(pool.map(lambda c: docker("rm", "-f", "-v", c, check=False, timeout=120), names))
            self._containers.clear()
        if self._made_network:
            docker("network", "rm", self.network, check=False)
            self._made_network = False
        for node in self.nodes:
            if node.own_volume or not self.keep_volumes:
                docker("volume", "rm", "-f", node.volume, check=False)
        if self.tmp is not None:
            shutil.rmtree(self.tmp, ignore_errors=True)
            self.tmp = None
        self._timed("down", t)

    def remove_stale(self) -> None:
        """Removes containers and networks of this prefix left by runs whose process is gone."""
        out = docker("ps", "-a", "--filter", "label=" + LABEL, "--format",
                     '{{.Names}}\t{{.Label "runbox.test.owner"}}', check=False)
        stale = []
        for line in out.splitlines():
            name, _, owner = line.partition("\t")
            if name.startswith(self.prefix + "-") and owner and not tag_alive(owner):
                stale.append(name)
        if stale:
            docker("unpause", *stale, check=False)
            docker("rm", "-f", "-v", *stale, check=False)
        out = docker("network", "ls", "--filter", "label=" + LABEL, "--format",
                     '{{.Name}}\t{{.Label "runbox.test.owner"}}', check=False)
        for line in out.splitlines():
            name, _, owner = line.partition("\t")
            if name.startswith(self.prefix + "-") and owner and not tag_alive(owner):
                docker("network", "rm", name, check=False)

    def _volumes_in_use(self) -> set:
        out = docker("ps", "-a", "--no-trunc", "--filter", "label=" + LABEL, "--format", "{{.Mounts}}",
                     check=False)
        return {v for line in out.splitlines() for v in line.split(",") if v}

    def _labels(self) -> list[str]:
        return ["--label", LABEL, "--label", "runbox.test.owner=%s" % process_tag(os.getpid()),
                "--label", "runbox.test.run=" + self.run]

    def _make_network(self) -> None:
        """An internal network with a subnet Docker chose, given explicitly (fixed addresses need
        a configured subnet): made once to learn a free subnet, then made again with it. Another
        test suite running at the same time may take that subnet in between (Docker answers "Pool
        overlaps with other one on this address space"): then it starts over with a new one."""
        t = time.monotonic()
        for attempt in range(8):
            docker("network", "create", "--internal", *self._labels(), self.network)
            self._made_network = True
            cfg = json.loads(docker("network", "inspect", "-f", "{{json .IPAM.Config}}", self.network))
            docker("network", "rm", self.network)
            self._made_network = False
            subnet = cfg[0]["Subnet"]
            net = ipaddress.ip_network(subnet)
            gateway = cfg[0].get("Gateway") or str(next(net.hosts()))
            try:
                docker("network", "create", "--internal", "--subnet", subnet, "--gateway", gateway,
                       *self._labels(), self.network)
            except EngineError as e:
                if "overlap" not in str(e) or attempt == 7:
                    raise
                continue
            break
        self._made_network = True
        self.subnet, self.gateway = subnet, gateway
        self._timed("network", t)

    def _make_certs(self) -> None:
        d = self.certs_dir
        d.mkdir(parents=True)
        self.client_dir.mkdir()
        ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
        openssl("req", "-x509", *ec, "-keyout", "ca-key.pem", "-out", "ca.pem", "-days", str(CERT_DAYS),
                "-subj", "/CN=runbox test engines CA %s" % self.run,
                "-addext", "basicConstraints=critical,CA:TRUE",
                "-addext", "keyUsage=critical,keyCertSign,cRLSign", cwd=d)

        def sign(folder: Path, cn: str, ext: str, key: str, cert: str) -> None:
            (folder / "ext.cnf").write_text(ext)
            openssl("req", "-new", *ec, "-keyout", key, "-out", "req.csr", "-subj", "/CN=" + cn, cwd=folder)
            openssl("x509", "-req", "-in", "req.csr", "-CA", str(d / "ca.pem"), "-CAkey", str(d / "ca-key.pem"),
                    "-set_serial", str(int.from_bytes(os.urandom(8), "big")), "-days", str(CERT_DAYS),
                    "-extfile", "ext.cnf", "-out", cert, cwd=folder)
            (folder / "ext.cnf").unlink()
            (folder / "req.csr").unlink()

        sign(self.client_dir, "runboxd", "basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature\n"
             "extendedKeyUsage=clientAuth\n", "key.pem", "cert.pem")
        shutil.copy(d / "ca.pem", self.client_dir / "ca.pem")
        for node in self.nodes:
            node.server_dir.mkdir()
            san = "IP:%s,DNS:%s,DNS:%s,IP:127.0.0.1,DNS:localhost" % (node.ip, node.name, node.alias)
            sign(node.server_dir, node.name, "basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature\n"
                 "extendedKeyUsage=serverAuth\nsubjectAltName=%s\n" % san, "server-key.pem", "server-cert.pem")
            shutil.copy(d / "ca.pem", node.server_dir / "ca.pem")
        for p in self.certs_dir.rglob("*key.pem"):
            p.chmod(0o600)

    @property
    def ca_pem(self) -> Path:
        return self.client_dir / "ca.pem"

    @property
    def client_cert(self) -> Path:
        return self.client_dir / "cert.pem"

    @property
    def client_key(self) -> Path:
        return self.client_dir / "key.pem"

    def _start_node(self, node: EngineNode) -> None:
        t = time.monotonic()
        with self._lock:
            self._containers.append(node.name)
        node_env = self.node_env.get(node.index, {})
        env = [x for k, v in node_env.items() for x in ("-e", "%s=%s" % (k, v))]
        # gVisor's KVM platform needs the device in the node
        kvm = ["--device", "/dev/kvm"] if "--platform=kvm" in node_env.get("RUNBOX_NODE_RUNSC", "") else []
        docker("run", "-d", "--name", node.name, "--hostname", node.alias, *self._labels(), *env,
               "--network", self.network, "--ip", node.ip, "--network-alias", node.alias,
               *NODE_FLAGS, *kvm, "-v", "%s:/var/lib/docker" % node.volume, self.image)
        # the entrypoint waits for these files before it starts dockerd
        docker("cp", str(node.server_dir) + "/.", node.name + ":/certs/")
        self.wait_engine(node.index)
        self._timed("engine %s" % node.alias, t)

    # ---- the engines' API -------------------------------------------------------------------

    def node(self, i: int) -> EngineNode:
        return self.nodes[i]

    def session(self, i: int | None = None) -> requests.Session:
        """A requests session with the client certificate and the CA (no proxies of the
        environment): for streaming or keep-alive use by tests. Close it when done."""
        s = requests.Session()
        s.trust_env = False
        s.verify = str(self.ca_pem)
        s.cert = (str(self.client_cert), str(self.client_key))
        return s

    def engine_request(self, i: int, method: str, path: str, timeout=(3, 60), client_cert: bool = True,
                       **kw) -> requests.Response:
        """One request to node i's Engine API over TLS (a fresh connection each time, so that a
        paused or restarted node never leaves a stale pooled one). path: "/version",
        "/v1.41/containers/json", ...; kw go to requests (json=, params=, data=, stream=, ...)."""
        node = self.nodes[i]
        if not path.startswith("/"):
            raise ValueError("path must start with /")
        s = self.session()
        if not client_cert:
            s.cert = None
        try:
            r = s.request(method, node.https_url + path, timeout=timeout, **kw)
        except BaseException:
            s.close()
            raise
        if not kw.get("stream"):
            s.close()  # (a streamed answer keeps its connection until it is read or closed)
        return r

    def runboxd_args(self, i: int = 0, name: str = "g1", runtimes: str = "runc+runsc") -> list[str]:
        """runboxd's flags for node i as its one engine (--engine with what it offers, and the
        cluster's TLS files)."""
        return ["--engine", "%s=%s,runtimes=%s" % (name, self.nodes[i].url, runtimes), "--engine-tls-ca",
                str(self.ca_pem), "--engine-tls-cert", str(self.client_cert), "--engine-tls-key", str(self.client_key)]

    def require_runtime(self, i: int, runtime: str = "runsc") -> None:
        """Raises EngineError with the node's log when node i's engine did not register runtime."""
        if runtime not in self.api(i, "GET", "/info").json().get("Runtimes", {}):
            raise EngineError("the nested engine %s did not register %s:\n%s" % (self.nodes[i].name, runtime,
                                                                               self.logs(i)[-3000:]))

    def api(self, i: int, method: str, path: str, **kw) -> requests.Response:
        """engine_request with the node's API version before path: api(0, "GET", "/containers/json")."""
        node = self.nodes[i]
        return self.engine_request(i, method, "/v%s%s" % (node.api_version or "1.41", path), **kw)

    def answers(self, i: int, timeout: float = 3) -> bool:
        """Whether node i answers GET /version within timeout seconds."""
        try:
            return self.engine_request(i, "GET", "/version", timeout=(timeout, timeout)).status_code == 200
        except requests.RequestException:
            return False

    def wait_engine(self, i: int, timeout: float | None = None) -> dict:
        """Waits until node i answers GET /version over TLS; its answer. Fails early, with the
        node's log, when its container stops."""
        node = self.nodes[i]
        deadline = time.monotonic() + (timeout or self.start_timeout)
        last = None
        checked = time.monotonic()
        while time.monotonic() < deadline:
            try:
                r = self.engine_request(i, "GET", "/version", timeout=(1, 3))
                if r.status_code == 200:
                    node.version = r.json()
                    node.api_version = node.version["ApiVersion"]
                    return node.version
                last = "HTTP %d" % r.status_code
            except requests.RequestException as e:
                last = repr(e)
            if time.monotonic() - checked > 2:
                checked = time.monotonic()
                state = docker("inspect", "-f", "{{.State.Status}}", node.name, check=False).strip()
                if state not in ("running", "paused"):
                    raise EngineError("node %s is %s:\n%s" % (node.name, state or "gone", self.logs(i)[-4000:]))
            time.sleep(0.2)
        raise EngineError("node %s did not answer GET /version within %ss (last: %s):\n%s"
                          % (node.name, timeout or self.start_timeout, last, self.logs(i)[-4000:]))

    def logs(self, i: int) -> str:
        r = subprocess.run(["docker", "logs", "--tail", "200", self.nodes[i].name], capture_output=True,
                           text=True, timeout=30)
        return r.stdout + r.stderr

    # ---- the sandbox image ------------------------------------------------------------------

    def image_id(self, i: int, image: str | None = None) -> str | None:
        r = self.api(i, "GET", "/images/%s/json" % (image or self.sandbox_image))
        if r.status_code == 404:
            return None
        if r.status_code != 200:
            raise EngineError("node %d: GET /images/.../json: HTTP %d %s" % (i, r.status_code, r.text[:300]))
        return r.json()["Id"]

    def ensure_image(self, image: str | None = None) -> None:
        """Loads the host's image (default: the sandbox image) into every node that lacks its id,
        from one `docker save` streamed to all of them, then checks every node's id."""
        image = image or self.sandbox_image
        want = docker("image", "inspect", "-f", "{{.Id}}", image).strip()
        if image == self.sandbox_image:
            self.sandbox_image_id = want
        need = [node for node in self.nodes if self.image_id(node.index, image) != want]
        if need:
            self._load(image, need)
        for node in self.nodes:
            have = self.image_id(node.index, image)
            if have != want:
                raise EngineError("node %s has %s as %s, the host %s" % (node.name, image, have, want))
        if need:
            # the image the tag named before, if any, is dangling now: remove it (disk of the volume)
            for node in need:
                self.api(node.index, "POST", "/images/prune",
                         params={"filters": json.dumps({"dangling": ["true"]})}, timeout=(3, 120))

    def _load(self, image: str, nodes: list[EngineNode]) -> None:
        t = time.monotonic()
        saver = subprocess.Popen(["docker", "save", image], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        queues = {node.index: queue.Queue(maxsize=64) for node in nodes}
        dead: set[int] = set()
        total = [0]

        def produce():
            try:
                while True:
                    chunk = saver.stdout.read(1 << 20)
                    for idx, q in queues.items():
                        while idx not in dead:
                            try:
                                q.put(chunk, timeout=1)
                                break
                            except queue.Full:
                                pass
                    if not chunk:
                        return
                    total[0] += len(chunk)
            finally:
                saver.stdout.close()

        def body(idx):
            q = queues[idx]
            while True:
                chunk = q.get()
                if not chunk:
                    return
                yield chunk

        def upload(node):
            t1 = time.monotonic()
            try:
                r = self.api(node.index, "POST", "/images/load", params={"quiet": "1"}, data=body(node.index),
                             headers={"Content-Type": "application/x-tar"}, timeout=(3, 600))
                text = r.text
                if r.status_code != 200 or "errorDetail" in text:
                    raise EngineError("node %s: POST /images/load: HTTP %d %s"
                                      % (node.name, r.status_code, text[-500:]))
            finally:
                dead.add(node.index)
            self._timed("load %s" % node.alias, t1)

        producer = threading.Thread(target=produce, daemon=True)
        producer.start()
        errors = []
        with concurrent.futures.ThreadPoolExecutor(len(nodes)) as pool:
            for f in [pool.submit(upload, node) for node in nodes]:
                try:
                    f.result()
                except Exception as e:  # noqa: BLE001 (reported together)
                    errors.append(e)
        producer.join(60)
        rc = saver.wait(60)
        err = saver.stderr.read().decode(errors="replace")
        saver.stderr.close()
        if errors:
            raise errors[0]
        if rc != 0:
            raise EngineError("docker save %s failed (%d): %s" % (image, rc, err.strip()))
        self._timed("load all (%d MiB each)" % (total[0] >> 20), t)

    def _remove_leftovers(self, node: EngineNode) -> None:
        """Removes every container of an earlier run from the node's volume."""
        r = self.api(node.index, "GET", "/containers/json", params={"all": "1"})
        for c in r.json():
            self.api(node.index, "DELETE", "/containers/" + c["Id"], params={"force": "1", "v": "1"},
                     timeout=(3, 60))

    # ---- failures ---------------------------------------------------------------------------

    def pause(self, i: int) -> None:
        """Freezes node i (dockerd and its containers): connections to it open but never answer."""
        docker("pause", self.nodes[i].name)

    def unpause(self, i: int) -> None:
        docker("unpause", self.nodes[i].name)

    def stop(self, i: int, timeout: int = 10) -> None:
        """docker stop of node i's container (dockerd stops its containers, given `timeout` s)."""
        docker("stop", "-t", str(timeout), self.nodes[i].name, timeout=timeout + 60)

    def kill(self, i: int) -> None:
        """docker kill of node i's container: the engine and its containers die at once."""
        docker("kill", self.nodes[i].name)

    def start(self, i: int, timeout: float | None = None) -> dict:
        """Starts node i's container again (same address, certificates and volume) and waits for
        its engine; its GET /version answer."""
        docker("start", self.nodes[i].name)
        return self.wait_engine(i, timeout)

    def restart(self, i: int, timeout: int = 10) -> dict:
        self.stop(i, timeout)
        return self.start(i)

    def partition(self, i: int) -> None:
        """Cuts node i off the network (docker network disconnect): new connections time out,
        open ones hang; the engine and its containers go on."""
        docker("network", "disconnect", self.network, self.nodes[i].name)

    def heal(self, i: int) -> None:
        """Connects node i again, at its address (given explicitly: the certificates name it)."""
        node = self.nodes[i]
        docker("network", "connect", "--ip", node.ip, "--alias", node.alias, self.network, node.name)
        ip = self.container_ip(i)
        if ip != node.ip:
            raise EngineError("node %s came back at %s, not %s" % (node.name, ip, node.ip))

    def container_ip(self, i: int) -> str | None:
        """Node i's address on the network as the host's engine reports it (None: not connected)."""
        out = docker("inspect", "-f", "{{json .NetworkSettings.Networks}}", self.nodes[i].name)
        nets = json.loads(out) or {}
        ep = nets.get(self.network)
        return ep["IPAddress"] if ep else None

    def state(self, i: int) -> str:
        """Node i's container state as the host's engine reports it (running, paused, exited...)."""
        return docker("inspect", "-f", "{{.State.Status}}", self.nodes[i].name).strip()


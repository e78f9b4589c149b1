"""Dependencies and preinstalled packages through the REST API of a real runboxd:
GET /packages lists the image's distributions; requirement syntax and the operator's policy
(deps-block, deps-allow, minimum versions) are enforced with errors naming the package and the
rule; a session created with `dependencies` can import them, a second session with the same set
is served from the cache (no network), and a running session can install more.

The real path needs a container on a bridge network to reach PyPI. On this machine it does,
through a TLS-inspecting proxy whose CA is in the host's bundle, which runboxd gives the
installer by default; RUNBOX_TEST_PIP_CA, when set, is passed as --deps-ca-file instead.
"""

from __future__ import annotations

import os
import re

import pytest

import rbtest

CA_ARGS = ["--deps-ca-file", os.environ["RUNBOX_TEST_PIP_CA"]] if os.environ.get("RUNBOX_TEST_PIP_CA") else []
# The stack the image promises (docker/sandbox/requirements.in), by distribution name.
STACK = ("numpy", "pandas", "matplotlib", "seaborn", "scipy", "scikit-learn", "statsmodels", "sympy", "pillow",
         "openpyxl", "pyarrow", "networkx", "tabulate", "beautifulsoup4", "lxml", "plotly")
# Small pure-Python wheels that the image does not have.
PKG = "tomli-w==1.0.0"
PKG2 = "toolz==0.12.1"


def check_error(resp, status: int, code: str, *mentions: str) -> dict:
    assert resp.status_code == status, f"expected {status}, got {resp.status_code}: {resp.text[:800]}"
    rbtest.check_schema(resp.json(), "Error")
    err = resp.json()["error"]
    assert err["code"] == code, err
    for m in mentions:
        assert m.lower() in err["message"].lower(), err["message"]
    return err


# The distributions this file's tests install or ask for: its checks and its clean-up look only
# at cache volumes of sets that name one of them, since other suites may install other sets on
# the same engine at the same time (scripts/test runs suites side by side).
OWN = ("tomli-w", "toolz", "numpy", "pandas", "scikit-learn", "xarray", "tabulate", "runbox-no-such-package")


def deps_volumes(names: tuple[str, ...] = OWN) -> set[str]:
    """pip cache volumes whose set names one of names."""
    out = rbtest.docker("volume", "ls", "--filter", "label=runbox.deps=1", "--filter", "label=runbox.deps.tool=pip",
                        "--format", '{{.Name}}\t{{.Label "runbox.deps.set"}}')
    found = set()
    for line in out.splitlines():
        name, _, reqs = line.partition("\t")
        listed = {re.split(r"[=<>!~ \[;]", r.strip(), maxsplit=1)[0].lower().replace("_", "-")
                  for r in reqs.split(",")}
        if name and listed & set(names):
            found.add(name)
    return found


@pytest.fixture
def volumes():
    """Starts without caches of the sets used here (so the first install really downloads) and
    removes the dependency cache volumes the test created."""
    for req in (PKG, PKG2):
        old = rbtest.docker("volume", "ls", "-q", "--filter", f"label=runbox.deps.set={req}")
        if old:
            rbtest.docker("volume", "rm", "-f", *old.split(), check=False)
    before = deps_volumes()
    yield
    new = deps_volumes() - before
    if new:
        rbtest.docker("volume", "rm", "-f", *sorted(new), check=False)


def run(server, sid: str, code: str) -> dict:
    r = server.post("/execute", {"session_id": sid, "code": code, "wait": True})
    assert r.status_code == 200, r.text
    return r.json()


def test_packages_lists_the_image(server):
    r = server.get("/packages")
    assert r.status_code == 200, r.text
    doc = r.json()
    rbtest.check_schema(doc, "Packages")
    names = {p["name"].lower(): p["version"] for p in doc["packages"]}
    for want in STACK:
        assert want in names, sorted(names)
    assert int(names["numpy"].split(".")[0]) >= 2 and int(names["pandas"].split(".")[0]) >= 2, names
    modules = {p["name"].lower(): p["modules"] for p in doc["packages"]}
    assert modules["scikit-learn"] == ["sklearn"] and modules["beautifulsoup4"] == ["bs4"], modules
    assert modules["pillow"] == ["PIL"] and "matplotlib" in modules["matplotlib"], modules
    assert all(p["modules"] for p in doc["packages"]), doc
    assert doc["python"].startswith("3.")
    assert doc["image"] == rbtest.IMAGE and doc["image_id"].startswith("sha256:")
    assert server.get("/packages").json() == doc  # cached per image id
    # What is listed really imports in a session, in the version listed.
    sid = server.create_session()["session_id"]
    check = ("import importlib, importlib.metadata as md\nbad = []\n"
             "for dist, mods in %r:\n"
             "    for m in mods:\n"
             "        importlib.import_module(m)\n"
             "    bad += [] if md.version(dist) == want[dist] else [dist]\n"
             "bad") % ([(n, modules[n]) for n in STACK],)
    r = server.post("/execute", {"session_id": sid, "code": "want = %r\n" % {n: names[n] for n in STACK} + check,
                                 "wait": True, "timeout": 300})
    assert r.status_code == 200 and r.json()["status"] == "completed", r.text
    assert r.json()["result"] == "[]", r.json()


def test_requirement_syntax_and_policy(make_server):
    s = make_server(["--deps-block", "evil-pkg, numpy<1.20", "--deps-allow", "requests>=2.31, numpy, tomli-w"])
    for bad in ["--index-url=http://x", "git+https://x/y.git", "./local", "pkg[extra]", "a==1 ; python_version>'3'",
                "", 5]:
        check_error(s.post("/sessions", {"dependencies": [bad]}), 400, "invalid_request", "dependencies")
    check_error(s.post("/sessions", {"dependencies": "requests"}), 400, "invalid_request", "list")
    check_error(s.post("/sessions", {"dependencies": ["Evil_Pkg"]}), 403, "forbidden", "evil-pkg", "deps-block")
    check_error(s.post("/sessions", {"dependencies": ["numpy==1.19.5"]}), 403, "forbidden", "numpy", "1.20",
                "deps-block")
    check_error(s.post("/sessions", {"dependencies": ["requests==2.30.0"]}), 403, "forbidden", "requests", "2.31",
                "deps-allow")
    check_error(s.post("/sessions", {"dependencies": ["flask"]}), 403, "forbidden", "flask", "allowlist")
    check_error(s.post("/sessions", {"dependencies": ["numpy", "NumPy"]}), 400, "invalid_request", "twice")
    check_error(s.post("/sessions", {"language": "bash", "dependencies": ["numpy"]}), 400, "invalid_request")
    # nothing was created on the way
    assert s.get("/sessions").json()["sessions"] == []
    off = make_server(["--deps-network", "none"])
    check_error(off.post("/sessions", {"dependencies": ["tomli-w"]}), 403, "forbidden", "disabled")


def test_install_at_creation_then_from_cache_then_into_a_running_session(make_server, volumes):
    s = make_server(CA_ARGS)
    first = s.create_session({"dependencies": [PKG]})
    doc = run(s, first["session_id"], "import tomli_w; tomli_w.dumps({'a': 1})")
    assert doc["status"] == "completed", doc
    assert doc["result"] == repr('a = 1\n')
    # installed packages are not "files the code wrote", and the listing hides them
    assert doc["files_written"] == []
    files = s.get(f"/sessions/{first['session_id']}/files").json()["files"]
    assert not any(f["path"].startswith(".runbox") for f in files)
    assert "downloaded" in s.log_text()

    # the same set again: served from the cache volume by an installer without network
    second = s.create_session({"dependencies": ["TOMLI_W == 1.0.0"]})
    doc = run(s, second["session_id"], "import tomli_w, subprocess, sys\n"
                                       "subprocess.run([sys.executable, '-c', 'import tomli_w'], check=True)\n"
                                       "tomli_w.__file__")
    assert doc["status"] == "completed", doc
    assert doc["result"].startswith("'/workspace/.runbox/site-packages/")
    assert "from cache" in s.log_text()

    # a running session installs another package, then imports it without a restart
    bare = s.create_session()
    sid = bare["session_id"]
    doc = run(s, sid, "try:\n    import toolz\nexcept ImportError:\n    print('missing')")
    assert doc["stdout"] == "missing\n"
    r = s.post(f"/sessions/{sid}/dependencies", {"dependencies": [PKG2]})
    assert r.status_code == 200, r.text
    rbtest.check_schema(r.json(), "DependenciesResult")  # openapi.yaml describes the live answer
    assert r.json()["cached"] is False
    assert r.json()["dependencies"] == [PKG2]
    doc = run(s, sid, "import toolz; toolz.__version__")
    assert doc["result"] == "'0.12.1'", doc
    # the same set for the same session again is a cache hit
    r = s.post(f"/sessions/{sid}/dependencies", {"packages": [PKG2]})
    assert r.status_code == 200 and r.json()["cached"] is True, r.text
    rbtest.check_schema(r.json(), "DependenciesResult")

    # pip's own failure names the package
    r = s.post(f"/sessions/{sid}/dependencies", {"dependencies": ["runbox-no-such-package-xyz==1.0"]})
    check_error(r, 400, "invalid_request", "runbox-no-such-package-xyz")
    # user code still runs without network: its only interface is loopback (nothing is sent
    # anywhere to find out)
    doc = run(s, sid, "import socket\nsorted(n for _, n in socket.if_nameindex())")
    assert doc["result"] == "['lo']", doc
    # no installer container of this runboxd is left behind
    inst = s.db_instance()
    assert inst, "runboxd's instance id"
    assert rbtest.docker("ps", "-aq", "--filter", f"label=runbox.instance={inst}",
                         "--filter", "label=runbox.deps-for") == ""


IMAGE_STACK = ("import numpy, pandas, matplotlib\nmatplotlib.use('Agg')\nimport matplotlib.pyplot as plt\n"
               "plt.plot([1, 2, 3], [1, 4, 9]); plt.show()\n"
               "numpy.__version__, numpy.__file__.startswith('/usr/'), pandas.__file__.startswith('/usr/')")


def test_codebox_flow_keeps_the_image_stack_working(make_server, volumes):
    """Issue 10 (CodeBox-AI's README): dependencies the image already satisfies are not installed
    again, and what a new package pulls in stays compatible with the image. Before, numpy and
    pandas were installed fresh from PyPI (numpy 2.x) in front of the image's numpy 1.x, and
    `import matplotlib.pyplot` failed with `_ARRAY_API not found`."""
    s = make_server(CA_ARGS)
    image = {p["name"].lower(): p["version"] for p in s.get("/packages").json()["packages"]}
    sid = s.create_session({"dependencies": ["numpy", "pandas"]})["session_id"]
    doc = run(s, sid, IMAGE_STACK)
    assert doc["status"] == "completed", doc
    assert doc["result"] == f"({image['numpy']!r}, True, True)", doc
    assert [o["mime"] for o in doc["outputs"] if o["type"] == "display"] == ["image/png"]
    # A package whose newest release wants a newer numpy and pandas than the image's: pip picks
    # a release that fits the image instead of replacing numpy under matplotlib.
    r = s.post(f"/sessions/{sid}/dependencies", {"dependencies": ["xarray"]})
    assert r.status_code == 200, r.text
    doc = run(s, sid, "import xarray\n" + IMAGE_STACK)
    assert doc["status"] == "completed", doc
    assert doc["result"] == f"({image['numpy']!r}, True, True)", doc
    ls = run(s, sid, "import os; sorted(os.listdir('/workspace/.runbox/site-packages'))")["result"]
    assert "xarray" in ls and "'numpy'" not in ls and "'pandas'" not in ls, ls


def test_requirements_the_image_satisfies_install_nothing(server, volumes):
    """A request the image already satisfies is a no-op that says so, in REST (MCP tests it in
    tests/mcp): nothing is downloaded, no cache volume stays, the image's version is imported."""
    image = {p["name"].lower(): p["version"] for p in server.get("/packages").json()["packages"]}
    sid = server.create_session()["session_id"]
    before = deps_volumes()
    r = server.post(f"/sessions/{sid}/dependencies", {"dependencies": ["NumPy", "pandas>=2", "scikit_learn"]})
    assert r.status_code == 200, r.text
    doc = r.json()
    rbtest.check_schema(doc, "DependenciesResult")
    want = [f"numpy=={image['numpy']}", f"pandas=={image['pandas']}", f"scikit-learn=={image['scikit-learn']}"]
    assert doc["already_satisfied"] == want, doc
    assert doc["message"] == "already satisfied by the image: " + ", ".join(want) + " (nothing was installed)", doc
    assert deps_volumes() == before
    assert "already satisfied by the image" in server.log_text()
    d = run(server, sid, "import os, numpy\nnumpy.__version__, os.path.exists('/workspace/.runbox/site-packages')")
    assert d["result"] == f"({image['numpy']!r}, False)", d


def test_a_session_package_never_breaks_the_image(make_server, volumes):
    """Constraints from the image's own package list: a version of an image package that the
    image's other packages do not accept is refused by pip (pandas 3 needs numpy>=2), while one
    they accept is installed for the session; a requirement the image satisfies beside others is
    named as such and not installed."""
    s = make_server(CA_ARGS)
    image = {p["name"].lower(): p["version"] for p in s.get("/packages").json()["packages"]}
    sid = s.create_session()["session_id"]
    r = s.post(f"/sessions/{sid}/dependencies", {"dependencies": ["numpy==1.26.4"]})
    check_error(r, 400, "invalid_request", "numpy")
    doc = run(s, sid, "import numpy, pandas\nnumpy.__version__, pandas.__version__")
    assert doc["result"] == repr((image["numpy"], image["pandas"])), doc
    # tabulate: nothing in the image requires a version of it, so the session may have its own
    r = s.post(f"/sessions/{sid}/dependencies", {"dependencies": ["numpy", "tabulate==0.9.0"]})
    assert r.status_code == 200, r.text
    rbtest.check_schema(r.json(), "DependenciesResult")
    assert r.json()["already_satisfied"] == [f"numpy=={image['numpy']}"], r.json()
    assert r.json()["message"].startswith(f"already satisfied by the image: numpy=={image['numpy']}; installed:")
    doc = run(s, sid, "import numpy, tabulate, os\n"
                      "numpy.__version__, tabulate.__version__, sorted(os.listdir('/workspace/.runbox/site-packages'))")
    got = eval(doc["result"])
    assert got[:2] == (image["numpy"], "0.9.0"), doc
    assert "numpy" not in got[2] and "tabulate" in got[2], got


def test_install_errors(server):
    check_error(server.post("/sessions/s_00000000000000000000000000000000/dependencies", {"dependencies": ["x"]}),
                404, "not_found")
    sess = server.create_session()
    sid = sess["session_id"]
    check_error(server.post(f"/sessions/{sid}/dependencies", {"dependencies": []}), 400, "invalid_request")
    check_error(server.post(f"/sessions/{sid}/dependencies", {}), 400, "invalid_request")
    bash = server.create_session({"language": "bash"})
    # a well-formed request the session cannot take: a conflict with its language (409)
    check_error(server.post(f"/sessions/{bash['session_id']}/dependencies", {"dependencies": ["x"]}), 409,
                "conflict", "python")


def cache_snapshot(volume: str) -> str:
    """sha256 of every file in a dependency cache volume, read through a read-only mount by a
    throwaway container without network (the cache as other sessions will see it)."""
    return rbtest.docker("run", "--rm", "--network", "none", "--entrypoint", "sh", "-v", f"{volume}:/c:ro",
                         rbtest.IMAGE, "-c", "cd /c && find . -type f -exec sha256sum {} + | sort")


def test_user_symlinks_cannot_poison_the_shared_cache(make_server, volumes):
    """Issue 9, finding 8. The installer copies the cache of a requirement set into the session's
    /workspace/.runbox, a tree user code controls. Code in session A replaces its installed files
    with symlinks to where the installer mounts that cache (/cache/site/...) and installs the
    same set again: the copy must not follow them. The cache volume stays byte for byte as it
    was, session B gets intact packages (checked against pip's RECORD hashes), and A's own
    install is repaired."""
    s = make_server(CA_ARGS)
    a = s.create_session({"dependencies": [PKG]})["session_id"]
    [vol] = rbtest.docker("volume", "ls", "-q", "--filter", f"label=runbox.deps.set={PKG}").split()
    before = cache_snapshot(vol)
    assert "tomli_w/__init__.py" in before, before

    # every installed file of tomli_w but __init__.py becomes a link to the cache's __init__.py,
    # and __init__.py a link to the cache's copy of another file: a copy that follows links
    # truncates the shared __init__.py (import tomli_w then has no dumps) and rewrites the rest
    plant = ("import os\n"
             "d = '/workspace/.runbox/site-packages/tomli_w'\n"
             "names = sorted(n for n in os.listdir(d) if os.path.isfile(os.path.join(d, n)))\n"
             "assert '__init__.py' in names and len(names) > 1, names\n"
             "other = [n for n in names if n != '__init__.py'][0]\n"
             "for n in names:\n"
             "    os.unlink(os.path.join(d, n))\n"
             "    os.symlink('/cache/site/tomli_w/' + (other if n == '__init__.py' else '__init__.py'),\n"
             "               os.path.join(d, n))\n"
             "print(len(names))")
    doc = run(s, a, plant)
    assert doc["status"] == "completed", doc
    r = s.post(f"/sessions/{a}/dependencies", {"dependencies": [PKG]})
    assert r.status_code == 200 and r.json()["cached"] is True, r.text

    assert cache_snapshot(vol) == before, "the shared cache was written through links in session A's workspace"
    b = s.create_session({"dependencies": [PKG]})["session_id"]
    check_record = ("import base64, csv, hashlib, os, tomli_w\n"
                    "sp = '/workspace/.runbox/site-packages'\n"
                    "[info] = [n for n in os.listdir(sp) if n.startswith('tomli_w-') and n.endswith('.dist-info')]\n"
                    "bad = []\n"
                    "for path, digest, _ in csv.reader(open(os.path.join(sp, info, 'RECORD'))):\n"
                    "    if digest.startswith('sha256=') and path.startswith('tomli_w/'):\n"
                    "        h = hashlib.sha256(open(os.path.join(sp, path), 'rb').read()).digest()\n"
                    "        if base64.urlsafe_b64encode(h).rstrip(b'=').decode() != digest[7:]:\n"
                    "            bad.append(path)\n"
                    "print(bad)\n"
                    "tomli_w.dumps({'a': 1})")
    doc = run(s, b, check_record)
    assert doc["status"] == "completed" and doc["stdout"] == "[]\n", doc
    assert doc["result"] == repr('a = 1\n')
    # A gets regular files again: its own install is not left pointing elsewhere
    doc = run(s, a, "import os\n"
                    "d = '/workspace/.runbox/site-packages/tomli_w'\n"
                    "print([n for n in os.listdir(d) if os.path.islink(os.path.join(d, n))])")
    assert doc["stdout"] == "[]\n", doc
    # a link where .runbox was is dropped, not followed; earlier installs stay importable
    doc = run(s, a, "import os, shutil\n"
                    "shutil.move('/workspace/.runbox', '/workspace/kept')\n"
                    "os.symlink('/cache', '/workspace/.runbox')")
    assert doc["status"] == "completed", doc
    r = s.post(f"/sessions/{a}/dependencies", {"dependencies": [PKG2]})
    assert r.status_code == 200, r.text
    doc = run(s, a, "import os, toolz\n"
                    "print(os.path.islink('/workspace/.runbox'), sorted(os.listdir('/workspace/.runbox')))")
    assert doc["stdout"] == "False ['site-packages']\n", doc
    r = s.post(f"/sessions/{a}/dependencies", {"dependencies": [PKG]})
    assert r.status_code == 200, r.text
    doc = run(s, a, "import toolz, tomli_w; tomli_w.dumps({'b': 2})")
    assert doc["result"] == repr('b = 2\n'), doc
    assert cache_snapshot(vol) == before

"""The sandbox image build (docker/build-images) without network: with the Debian part cached
and the wheel cache filled (what the build of the sandbox image before the tests left in
/var/cache/runbox), a build of the Python stack from docker/sandbox/requirements.lock runs in a
network namespace of its own with no interface but loopback (`unshare -n`; the Docker socket is
a file, so the engine is still reached), and the image has the locked versions.

Needs root (unshare, debootstrap's files) and the caches; skipped, saying which is missing,
otherwise. The Debian part is hard-linked into a cache folder of the test's own, so the
shared caches are never changed, and the image gets a tag of its own, removed afterwards.
"""

from __future__ import annotations

import glob
import os
import re
import shutil
import subprocess
import uuid

import pytest

import rbtest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
BUILD = os.path.join(ROOT, "docker", "build-images")
LOCK = os.path.join(ROOT, "docker", "sandbox", "requirements.lock")
IMAGE_CACHE = os.environ.get("RUNBOX_IMAGE_CACHE", "/var/cache/runbox/images")
WHEEL_CACHE = os.environ.get("RUNBOX_WHEEL_CACHE", "/var/cache/runbox/wheels")


def locked() -> dict[str, str]:
    out = {}
    for line in open(LOCK):
        m = re.match(r"([a-z0-9][a-z0-9._-]*)==(\S+)\s", line)
        if m:
            out[m.group(1)] = m.group(2)
    return out


def test_the_image_builds_offline_from_the_wheel_cache(sandbox_image):
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        pytest.skip("needs root and unshare")
    bases = glob.glob(os.path.join(IMAGE_CACHE, "base-*"))
    if not bases or not glob.glob(os.path.join(WHEEL_CACHE, "*.whl")):
        pytest.skip(f"no cached Debian part in {IMAGE_CACHE} or no wheels in {WHEEL_CACHE} "
                    "(docker/build-images fills them)")
    name = uuid.uuid4().hex[:8]
    cache = os.path.join(os.path.dirname(IMAGE_CACHE), f"test-offline-{name}")
    tag = f"runbox-sandbox:test-offline-{name}"
    try:
        os.makedirs(cache)
        for base in bases:  # hard links: the build only reads the Debian part
            subprocess.run(["cp", "-al", base, cache], check=True)
        r = subprocess.run(["unshare", "-n", BUILD, "--cache-dir", cache, "--wheel-cache", WHEEL_CACHE, "--tag", tag],
                           capture_output=True, text=True, timeout=1800)
        assert r.returncode == 0, r.stderr[-3000:]
        assert "has every wheel of the lock" in r.stderr and "debootstrap " not in r.stderr, r.stderr[-3000:]
        want = locked()
        got = rbtest.docker("run", "--rm", "--network", "none", tag, "python3", "-c",
                            "import importlib.metadata as m, numpy, pandas, matplotlib, sklearn, scipy\n"
                            "print(m.version('numpy'), m.version('pandas'), m.version('scikit-learn'), "
                            "matplotlib.get_backend())")
        assert got.lower().split() == [want["numpy"], want["pandas"], want["scikit-learn"], "agg"], got
    finally:
        subprocess.run(["docker", "image", "rm", "-f", tag], capture_output=True)
        shutil.rmtree(cache, ignore_errors=True)

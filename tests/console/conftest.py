"""Fixtures for the operator's console (issue 27, docs/console.md): one runboxd per module
(tests/integration/rbtest.py: a fresh database, the real Docker engine) with a keys file of an
admin, a user and a viewer key and two engine entries on the local Docker engine (so that /health
lists engines and the console offers drain buttons), and a headless Chromium driven by Selenium
(Debian's chromium and chromium-driver: scripts/setup installs them) that logs every request it
sends (goog:loggingPrefs performance).
"""

from __future__ import annotations

import hashlib
import shutil
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "integration"))

import rbtest  # noqa: E402
from rbfixtures import sandbox_image  # noqa: E402, F401 (fixture)

KEYS = {"ops": ("a1" * 16, "role=admin"), "alice": ("b2" * 16, ""), "audit": ("c3" * 16, "role=viewer")}
ADMIN, USER, VIEWER = KEYS["ops"][0], KEYS["alice"][0], KEYS["audit"][0]
SOCK = "unix:///var/run/docker.sock"


def start_server(tmp_path_factory, extra: list[str]) -> rbtest.Server:
    work = tmp_path_factory.mktemp("runboxd-console")
    keys = work / "api-keys"
    keys.write_text("".join(f"{n} sha256:{hashlib.sha256(k.encode()).hexdigest()} {extra}\n"
                            for n, (k, extra) in KEYS.items()))
    s = rbtest.Server(work, ["--api-keys-file", str(keys), "--pool-size", "0", "--metrics-interval", "1s", *extra])
    s.start()
    s.http.headers["Authorization"] = f"Bearer {ADMIN}"  # an admin's teardown sees every key's sessions
    return s


@pytest.fixture(scope="module")
def server(sandbox_image, tmp_path_factory) -> rbtest.Server:
    """Two engine entries (on the local Docker engine): the console offers drain buttons."""
    s = start_server(tmp_path_factory, ["--engine", f"one={SOCK}", "--engine", f"two={SOCK}"])
    yield s
    rbtest.finish_servers([s])


@pytest.fixture(scope="module")
def bare_server(sandbox_image, tmp_path_factory) -> rbtest.Server:
    """One engine (--docker-socket's) and nothing run yet: the console's empty states."""
    s = start_server(tmp_path_factory, [])
    yield s
    rbtest.finish_servers([s])


def chromium_paths() -> tuple[str, str]:
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    driver = shutil.which("chromedriver") or "/usr/lib/chromium/chromedriver"
    if browser is None or not Path(driver).exists():
        pytest.fail("Debian's chromium and chromium-driver are needed: apt-get install chromium chromium-driver "
                    "(scripts/setup installs them)")
    return browser, driver


@pytest.fixture(scope="module")
def downloads(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("downloads")


@pytest.fixture(scope="module")
def driver(downloads):
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    browser, chromedriver = chromium_paths()
    opts = webdriver.ChromeOptions()
    opts.binary_location = browser
    for a in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1280,800",
              "--disable-background-networking", "--disable-component-update", "--no-first-run",
              "--disable-default-apps", "--disable-sync", "--metrics-recording-only"):
        opts.add_argument(a)
    opts.add_experimental_option("prefs", {"download.default_directory": str(downloads),
                                           "download.prompt_for_download": False})
    opts.set_capability("goog:loggingPrefs", {"performance": "ALL", "browser": "ALL"})
    d = webdriver.Chrome(options=opts, service=Service(chromedriver))
    d.execute_cdp_cmd("Page.setDownloadBehavior", {"behavior": "allow", "downloadPath": str(downloads)})
    yield d
    d.quit()

"""The operator's console at /console (issue 27, docs/console.md), against a real runboxd and a
real headless Chromium: the static files and their headers over plain HTTP, then the page as an
admin, a user's agent and a viewer use it. Screenshots of the main pages are saved in the test's
tmp folder (the artefacts), and copied to the folder RUNBOX_CONSOLE_SHOTS names when it is set
(RUNBOX_CONSOLE_SHOTS=docs/console refreshes the documentation's pictures).
"""

from __future__ import annotations

import http.client
import json
import os
import re
import shutil
import time
from pathlib import Path
from urllib.parse import urlparse

import pytest
import requests
from selenium.common.exceptions import NoAlertPresentException, StaleElementReferenceException
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as EC
from selenium.webdriver.support.ui import Select, WebDriverWait

import rbtest
from conftest import ADMIN, USER, VIEWER

SHOTS = os.environ.get("RUNBOX_CONSOLE_SHOTS")
CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
       "base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
XSS_NAME = "<img src=x onerror=alert(1)>"
PLOT = ("import matplotlib\nmatplotlib.use('Agg')\nimport matplotlib.pyplot as plt\n"
        "plt.plot([1, 2, 3], [1, 4, 9])\nplt.title('squares')\n")


def raw_get(server: rbtest.Server, path: str, key: str | None = None) -> tuple[int, dict, bytes]:
    """GET path exactly as written (no dot-segment removal by the client)."""
    c = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
    c.request("GET", path, headers={"Authorization": f"Bearer {key}"} if key else {})
    r = c.getresponse()
    body = r.read()
    headers = {k.lower(): v for k, v in r.getheaders()}
    c.close()
    return r.status, headers, body


def test_static_files_and_headers(server):
    for path, ctype in [("/console", "text/html"), ("/console/", "text/html"),
                        ("/console/console.js", "text/javascript"), ("/console/console.css", "text/css")]:
        status, h, body = raw_get(server, path)  # no API key: the files hold no data
        assert status == 200, (path, body)
        assert h["content-type"].startswith(ctype)
        assert h["content-security-policy"] == CSP
        assert h["x-content-type-options"] == "nosniff"
        assert h["referrer-policy"] == "no-referrer"
        assert h["cache-control"] == "no-store"
        assert "set-cookie" not in h
        assert len(body) == int(h["content-length"]) > 100
    page = raw_get(server, "/console")[2].decode()
    assert "<script>" not in page and "style=" not in page and "http" not in page.replace("http-equiv", "")
    for path in ["/console/nope.js", "/console/index.html", "/console/static/console.js", "/console/a/b",
                 "/console/..%2f..%2fetc%2fpasswd", "/console/%2e%2e/%2e%2e/etc/passwd", "/console/../../etc/passwd",
                 "/console/..%2fCMakeLists.txt"]:
        status, h, body = raw_get(server, path, ADMIN)
        assert status == 404, (path, status, body)
        assert b"root:" not in body and b"project(" not in body
    # A dot segment does not carry the console's exemption from the API key to another route.
    status, _, body = raw_get(server, "/console/../sessions")
    assert status == 401, body
    assert raw_get(server, "/console/../sessions", ADMIN)[0] == 200
    assert requests.post(server.url + "/console", timeout=30).status_code in (401, 405)


def test_favicon_without_key(server):
    """The icon is served without a key, at the address browsers try by themselves and at the one
    index.html links (issue 42: /favicon.ico answered 401)."""
    for path in ["/favicon.ico", "/console/favicon.svg"]:
        status, h, body = raw_get(server, path)
        assert status == 200, (path, status, body)
        assert h["content-type"] == "image/svg+xml", h
        assert body.startswith(b"<svg") and b"<script" not in body
        assert "set-cookie" not in h
    assert 'rel="icon" href="/console/favicon.svg"' in raw_get(server, "/console")[2].decode()
    assert raw_get(server, "/favicon.png")[0] == 401  # only the icon: other paths still need a key


# ---- in the browser -------------------------------------------------------------------------

def wait(driver, cond, timeout=60):
    return WebDriverWait(driver, timeout, ignored_exceptions=[StaleElementReferenceException]).until(cond)


def click(driver, locator) -> None:
    """Clicks the element once it is clickable, again if the page replaced it meanwhile (lists
    are redrawn when their data arrives)."""
    def attempt(d):
        EC.element_to_be_clickable(locator)(d).click()
        return True
    wait(driver, attempt)


def shot(driver, tmp_path: Path, name: str) -> None:
    """Saves a screenshot in the test's tmp folder, and in RUNBOX_CONSOLE_SHOTS/NAME.png when set."""
    path = tmp_path / f"{name}.png"
    driver.save_screenshot(str(path))
    assert path.stat().st_size > 1000, "an empty screenshot"
    if SHOTS:
        Path(SHOTS).mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, Path(SHOTS) / f"{name}.png")


def no_alert(driver) -> None:
    with pytest.raises(NoAlertPresentException):
        driver.switch_to.alert.text  # noqa: B018 (raises when no dialog is open)
    for img in driver.find_elements(By.TAG_NAME, "img"):
        assert not (img.get_attribute("src") or "").endswith("/x"), "an <img> from server text was made"


def sign_in(driver, server, key: str) -> None:
    driver.get(server.url + "/console")
    if driver.find_elements(By.ID, "signout") and driver.find_element(By.ID, "signout").is_displayed():
        driver.find_element(By.ID, "signout").click()
    box = wait(driver, EC.visibility_of_element_located((By.ID, "key")))
    box.send_keys(key)
    driver.find_element(By.CSS_SELECTOR, "#signin-form button").click()
    wait(driver, EC.visibility_of_element_located((By.ID, "sessions")))


def open_session(driver, sid: str) -> None:
    driver.find_element(By.CSS_SELECTOR, "nav a[data-view=sessions]").click()
    click(driver, (By.XPATH, f"//a[text()='{sid}']"))
    wait(driver, EC.visibility_of_element_located((By.ID, "session")))
    wait(driver, EC.text_to_be_present_in_element((By.ID, "session-id"), sid))


def chart_labels(driver, chart: str) -> list[str]:
    return [t.text for t in driver.find_elements(By.CSS_SELECTOR, f"svg#{chart} text")]


def chart_times(driver, chart: str) -> list[str]:
    return [t for t in chart_labels(driver, chart) if re.fullmatch(r"\d\d:\d\d:\d\d", t)]


def hash_of(driver) -> str:
    return driver.execute_script("return location.hash")


def run_cell(driver, code: str):
    cell = driver.find_element(By.ID, "cell")
    cell.clear()
    cell.send_keys(code)
    driver.find_element(By.ID, "run").click()
    return wait(driver, lambda d: d.find_element(By.ID, "cell-out").find_elements(By.CSS_SELECTOR, ".exec, .error"))[0]


@pytest.fixture(scope="module")
def agent_session(server):
    """A session an agent made through MCP with the user key, with a plot in its history and two
    files (one with a hostile name)."""
    url, h = server.url + "/mcp", {"Accept": "application/json, text/event-stream",
                                   "Content-Type": "application/json", "Authorization": f"Bearer {USER}"}
    r = requests.post(url, headers=h, timeout=60, json={
        "jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "agent", "version": "1"}}})
    assert r.status_code == 200, r.text
    h = dict(h, **{"Mcp-Session-Id": r.headers["mcp-session-id"], "MCP-Protocol-Version": "2025-11-25"})
    requests.post(url, headers=h, timeout=60, json={"jsonrpc": "2.0", "method": "notifications/initialized"})

    def call(tool, args, rid):
        body = {"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": {"name": tool, "arguments": args}}
        r = requests.post(url, headers=h, timeout=180, json=body)
        assert r.status_code == 200, r.text
        answer = rbtest.mcp_answer(r, rid)
        assert not answer["result"].get("isError"), answer
        return answer["result"]

    call("create_session", {"language": "python"}, 1)
    mine = requests.get(server.url + "/sessions", headers={"Authorization": f"Bearer {USER}"}, timeout=30).json()
    assert len(mine["sessions"]) == 1, mine
    sid = mine["sessions"][0]["session_id"]
    server.session_ids.add(sid)
    call("execute_code", {"session_id": sid, "code": PLOT}, 2)
    call("execute_code", {"session_id": sid, "code": (
        f"open({XSS_NAME!r}, 'w').write('x')\nopen('data.csv', 'w').write('a,b\\n1,2\\n')\nprint('files written')")}, 3)
    yield sid
    requests.delete(server.url + "/mcp", headers=h, timeout=60)


def test_admin_sees_the_agents_session(server, driver, agent_session, tmp_path, downloads):
    sid = agent_session
    sign_in(driver, server, ADMIN)
    row = wait(driver, EC.visibility_of_element_located((By.XPATH, f"//a[text()='{sid}']/ancestor::tr")))
    assert "alice" in row.text and "python" in row.text
    assert "one" in row.text or "two" in row.text  # the engine, from container_id's ENGINE@
    time.sleep(2.5)  # a sample or two of the sparkline
    driver.find_element(By.ID, "sessions-refresh").click()
    wait(driver, EC.visibility_of_element_located((By.XPATH, f"//a[text()='{sid}']")))
    shot(driver, tmp_path, "sessions")

    open_session(driver, sid)
    # The history: the agent's plot as an image, its code as text.
    img = wait(driver, EC.visibility_of_element_located((By.CSS_SELECTOR, "#history img")))
    assert img.get_attribute("src").startswith("data:image/png;base64,iVBOR")
    assert driver.execute_script("return arguments[0].naturalWidth", img) > 100
    assert "plt.title('squares')" in driver.find_element(By.ID, "history").text

    # Files: the hostile name stays text.
    files = wait(driver, lambda d: d.find_element(By.ID, "files") if XSS_NAME in d.find_element(By.ID, "files").text
                 else None)
    assert "data.csv" in files.text
    no_alert(driver)

    # A cell: its output, then HTML printed by it, shown as text.
    out = run_cell(driver, "print(6 * 7)\n'done'")
    assert "42" in out.text and "'done'" in out.text
    out = run_cell(driver, "print('<script>alert(1)</script>' + '<img src=x onerror=alert(1)>')")
    assert "<script>alert(1)</script><img src=x onerror=alert(1)>" in out.text
    assert not out.find_elements(By.TAG_NAME, "script") and not out.find_elements(By.TAG_NAME, "img")
    no_alert(driver)
    out = run_cell(driver, PLOT)
    wait(driver, lambda d: out.find_element(By.TAG_NAME, "img"))
    shot(driver, tmp_path, "session")

    # A download through fetch + blob with the Bearer header.
    time.sleep(0.5)  # the cell's run refreshes the file list
    click(driver, (By.CSS_SELECTOR, "button[aria-label='Download data.csv']"))
    got = wait(driver, lambda d: (downloads / "data.csv").exists() and (downloads / "data.csv").read_text())
    assert got == "a,b\n1,2\n"

    # An upload (multipart POST with the key), then listed.
    up = tmp_path / "uploaded.txt"
    up.write_text("from the browser\n")
    driver.find_element(By.ID, "upload").send_keys(str(up))
    driver.find_element(By.CSS_SELECTOR, "#upload-form button").click()
    wait(driver, EC.text_to_be_present_in_element((By.ID, "files"), "uploaded.txt"))
    assert server.get(f"/sessions/{sid}/files/download", params={"path": "uploaded.txt"}).text == "from the browser\n"

    # Engines: two, each with a drain button that works.
    driver.find_element(By.CSS_SELECTOR, "nav a[data-view=engines]").click()
    click(driver, (By.CSS_SELECTOR, "button[aria-label='Drain two']"))
    wait(driver, EC.element_to_be_clickable((By.CSS_SELECTOR, "button[aria-label='Undrain two']")))
    assert [e["draining"] for e in server.get("/health").json()["docker"]["engines"]] == [False, True]
    shot(driver, tmp_path, "engines")
    click(driver, (By.CSS_SELECTOR, "button[aria-label='Undrain two']"))
    wait(driver, EC.element_to_be_clickable((By.CSS_SELECTOR, "button[aria-label='Drain two']")))

    # The audit trail, filtered by the session.
    driver.find_element(By.CSS_SELECTOR, "nav a[data-view=audit]").click()
    wait(driver, EC.visibility_of_element_located((By.ID, "audit-session"))).send_keys(sid)
    driver.find_element(By.CSS_SELECTOR, "#audit-form button").click()
    wait(driver, EC.text_to_be_present_in_element((By.ID, "audit-rows"), "execution"))
    assert "session_created" in driver.find_element(By.ID, "audit-rows").text
    no_alert(driver)
    shot(driver, tmp_path, "audit")

    # Charts of /metrics.
    driver.find_element(By.CSS_SELECTOR, "nav a[data-view=charts]").click()
    wait(driver, lambda d: d.find_element(By.ID, "now-execs").text.endswith("/s"), timeout=20)
    assert int(driver.find_element(By.ID, "now-sessions").text) >= 1
    wait(driver, lambda d: len(chart_times(d, "chart-execs")) >= 3, timeout=20)  # three samples: three times
    for chart, unit in [("chart-sessions", "sessions"), ("chart-execs", "executions/s"), ("chart-latency", "seconds")]:
        labels = chart_labels(driver, chart)
        assert unit in labels, (chart, labels)  # the y axis names its unit
        assert "0" in labels, (chart, labels)  # and starts at 0, with a labelled top above the data
        assert chart_times(driver, chart), (chart, labels)  # the x axis is clock time
    # a constant series (the live sessions) is drawn inside the plot, below its top line
    top = driver.execute_script("""const s = document.querySelector('#chart-sessions path.series');
        return [s.getBBox().y, Math.min(...[...document.querySelectorAll('#chart-sessions line.grid')]
        .map((l) => Number(l.getAttribute('y1'))))]""")
    assert top[0] > top[1], top
    shot(driver, tmp_path, "charts")

    # A narrow phone: the page still fits.
    driver.set_window_size(390, 844)
    driver.find_element(By.CSS_SELECTOR, "nav a[data-view=sessions]").click()
    wait(driver, EC.visibility_of_element_located((By.XPATH, f"//a[text()='{sid}']")))
    assert driver.execute_script("return document.documentElement.scrollWidth") <= 420
    table = driver.find_element(By.CSS_SELECTOR, "#sessions .scroll")  # the table fits: no sideways scrolling
    assert driver.execute_script("return arguments[0].scrollWidth <= arguments[0].clientWidth", table)
    shot(driver, tmp_path, "phone")
    click(driver, (By.XPATH, f"//a[text()='{sid}']"))
    wait(driver, EC.visibility_of_element_located((By.CSS_SELECTOR, "#history img")))
    assert driver.execute_script("return document.documentElement.scrollWidth") <= 420
    shot(driver, tmp_path, "phone-session")
    driver.set_window_size(1280, 800)


def test_viewer_is_refused_a_run(server, driver, agent_session, tmp_path):
    sign_in(driver, server, VIEWER)
    open_session(driver, agent_session)
    out = run_cell(driver, "print('should not run')")
    assert "403" in out.text and "viewer" in out.text, out.text
    assert "should not run" not in driver.find_element(By.ID, "history").text
    driver.find_element(By.CSS_SELECTOR, "nav a[data-view=engines]").click()
    click(driver, (By.CSS_SELECTOR, "button[aria-label='Drain one']"))
    alert = wait(driver, EC.visibility_of_element_located((By.ID, "error")))
    assert "403" in alert.text
    assert not any(e["draining"] for e in server.get("/health").json()["docker"]["engines"])


def test_end_session(server, driver):
    """End session asks first and calls DELETE /sessions/{id} with the key: a viewer's confirmed
    click is refused and the server's 403 (naming the role) is shown; an admin who cancels the
    dialog changes nothing; confirmed, the session is ended (GET /sessions/{id}: 200, status
    ended) and the page shows it so."""
    sid = server.create_session({"language": "python"}, headers={"Authorization": f"Bearer {USER}"})["session_id"]

    sign_in(driver, server, VIEWER)
    open_session(driver, sid)
    click(driver, (By.ID, "end-session"))
    dialog = wait(driver, EC.alert_is_present())
    assert sid in dialog.text, dialog.text
    dialog.accept()
    alert = wait(driver, EC.visibility_of_element_located((By.ID, "error")))
    assert "403" in alert.text and "viewer" in alert.text, alert.text
    assert server.session(sid)["status"] not in ("ended", "dead")

    sign_in(driver, server, ADMIN)
    open_session(driver, sid)
    wait(driver, EC.text_to_be_present_in_element((By.ID, "session-info"), "alice"))
    click(driver, (By.ID, "end-session"))
    wait(driver, EC.alert_is_present()).dismiss()
    time.sleep(1)  # a DELETE sent despite the cancel would have ended it by now
    assert server.session(sid)["status"] not in ("ended", "dead")
    assert driver.find_element(By.ID, "end-session").is_displayed()

    click(driver, (By.ID, "end-session"))
    wait(driver, EC.alert_is_present()).accept()
    wait(driver, EC.text_to_be_present_in_element((By.ID, "session-info"), "ended"))
    r = server.get(f"/sessions/{sid}")  # ended sessions stay readable while retained (openapi.yaml)
    assert r.status_code == 200, r.text
    assert r.json()["status"] == "ended" and r.json()["end_reason"], r.json()
    # an ended session runs nothing and takes no file: its forms go with the button
    for gone in ("end-session", "cell-form", "upload-form"):
        assert not driver.find_element(By.ID, gone).is_displayed(), gone
    assert not driver.find_element(By.ID, "error").is_displayed(), driver.find_element(By.ID, "error").text
    driver.find_element(By.CSS_SELECTOR, "nav a[data-view=sessions]").click()
    wait(driver, EC.invisibility_of_element_located((By.XPATH, f"//a[text()='{sid}']")))
    assert sid not in driver.find_element(By.ID, "sessions-rows").text
    no_alert(driver)


def test_menu_hidden_before_sign_in(server, driver):
    """Before sign-in the menu (and Sign out) is not shown, and a click where it would be does
    nothing: the key field stays, no error is shown (issue 42: nav's display:flex beat hidden, and
    Audit trail there hid the form and said the key was not valid)."""
    driver.get(server.url + "/console")
    driver.execute_script("sessionStorage.clear()")
    driver.get(server.url + "/console#/audit")
    wait(driver, EC.visibility_of_element_located((By.ID, "key")))
    header = driver.find_element(By.TAG_NAME, "header")
    width = header.size["width"]
    for x in range(-width // 2 + 10, width // 2 - 10, 40):  # across the whole header bar, one click at a time
        ActionChains(driver).move_to_element_with_offset(header, x, 0).click().perform()
        time.sleep(0.2)  # what a click there would start (a call to runboxd) has answered
        assert driver.find_element(By.ID, "key").is_displayed(), f"a click at {x} px from the header's middle"
        assert not driver.find_element(By.ID, "audit").is_displayed()
        assert not driver.find_element(By.ID, "error").is_displayed(), driver.find_element(By.ID, "error").text
    assert not driver.find_element(By.ID, "nav").is_displayed()
    for b in driver.find_elements(By.CSS_SELECTOR, "nav a, nav button"):
        assert not b.is_displayed(), b.text


def test_addresses(server, driver, agent_session):
    """Each page has an address: a reload keeps the page, Back returns to the one before, a
    bookmarked session page opens directly after sign-in, and audit rows link their session."""
    sid = agent_session
    sign_in(driver, server, ADMIN)
    assert hash_of(driver) == "#/sessions"
    click(driver, (By.XPATH, f"//a[text()='{sid}']"))
    wait(driver, EC.text_to_be_present_in_element((By.ID, "session-id"), sid))
    assert hash_of(driver) == f"#/sessions/{sid}"
    driver.refresh()
    wait(driver, EC.text_to_be_present_in_element((By.ID, "session-id"), sid))
    wait(driver, EC.text_to_be_present_in_element((By.ID, "session-info"), "alice"))
    assert driver.find_element(By.ID, "session").is_displayed()
    driver.back()
    wait(driver, EC.visibility_of_element_located((By.ID, "sessions")))
    assert hash_of(driver) == "#/sessions"
    driver.forward()
    wait(driver, EC.visibility_of_element_located((By.ID, "session")))

    for page, section in [("engines", "engines"), ("audit", "audit"), ("charts", "charts")]:
        driver.find_element(By.CSS_SELECTOR, f"nav a[data-view={page}]").click()
        wait(driver, EC.visibility_of_element_located((By.ID, section)))
    assert hash_of(driver) == "#/metrics"
    driver.refresh()
    wait(driver, EC.visibility_of_element_located((By.ID, "charts")))
    driver.back()
    wait(driver, EC.visibility_of_element_located((By.ID, "audit")))

    # The audit trail's filters are in its address, and a row's session opens that session's page.
    driver.find_element(By.ID, "audit-session").send_keys(sid)
    Select(driver.find_element(By.ID, "audit-kind")).select_by_visible_text("session_created")
    driver.find_element(By.CSS_SELECTOR, "#audit-form button").click()
    wait(driver, lambda d: hash_of(d) == f"#/audit?session={sid}&kind=session_created")
    driver.refresh()
    wait(driver, EC.text_to_be_present_in_element((By.ID, "audit-rows"), "session_created"))
    assert driver.find_element(By.ID, "audit-session").get_attribute("value") == sid
    click(driver, (By.XPATH, f"//tbody[@id='audit-rows']//a[text()='{sid}']"))
    wait(driver, EC.text_to_be_present_in_element((By.ID, "session-id"), sid))
    assert hash_of(driver) == f"#/sessions/{sid}"

    # A bookmark of the session's page, opened in a tab without the key: sign in, then that page.
    driver.find_element(By.ID, "signout").click()
    wait(driver, EC.visibility_of_element_located((By.ID, "key")))
    driver.get(server.url + f"/console#/sessions/{sid}")
    box = wait(driver, EC.visibility_of_element_located((By.ID, "key")))
    box.send_keys(ADMIN)
    driver.find_element(By.CSS_SELECTOR, "#signin-form button").click()
    wait(driver, EC.text_to_be_present_in_element((By.ID, "session-id"), sid))
    wait(driver, EC.text_to_be_present_in_element((By.ID, "history"), "files written"))
    # An address that names no page goes to the sessions.
    driver.get(server.url + "/console#/nowhere")
    wait(driver, EC.visibility_of_element_located((By.ID, "sessions")))
    assert hash_of(driver) == "#/sessions"


def test_history_after_run(server, driver, tmp_path):
    """A cell run from the session page appears in its History at once, and the count of
    executions goes up; a multi-line result keeps its first line in line with the others."""
    sid = server.create_session({"language": "python"}, headers={"Authorization": f"Bearer {USER}"})["session_id"]
    sign_in(driver, server, ADMIN)
    driver.get(server.url + f"/console#/sessions/{sid}")
    wait(driver, EC.text_to_be_present_in_element((By.CSS_SELECTOR, "#session-info [data-fact=executions]"), "0"))
    assert "No execution yet" in driver.find_element(By.ID, "history").text
    out = run_cell(driver, "print('first-run-marker')")
    assert "first-run-marker" in out.text
    wait(driver, EC.text_to_be_present_in_element((By.ID, "history"), "first-run-marker"))
    wait(driver, EC.text_to_be_present_in_element((By.CSS_SELECTOR, "#session-info [data-fact=executions]"), "1"))
    out = run_cell(driver, "class R:\n    def __repr__(self):\n        return 'line one\\nline two'\nR()")
    result = out.find_element(By.CSS_SELECTOR, ".result pre")
    assert result.text == "line one\nline two", result.text
    wait(driver, EC.text_to_be_present_in_element((By.CSS_SELECTOR, "#session-info [data-fact=executions]"), "2"))
    wait(driver, lambda d: len(d.find_elements(By.CSS_SELECTOR, "#history .exec")) == 2)
    assert "(2)" in driver.find_element(By.ID, "history-count").text
    # the newest first
    assert "line one" in driver.find_elements(By.CSS_SELECTOR, "#history .exec")[0].text
    driver.execute_script("arguments[0].scrollIntoView()", out)
    shot(driver, tmp_path, "history")


def test_ended_session_page(server, driver, tmp_path):
    """An ended session is reached by its address and shows its record and history, read-only
    (the End dialog says its history stays readable)."""
    sid = server.create_session({"language": "python"}, headers={"Authorization": f"Bearer {USER}"})["session_id"]
    r = server.post("/execute", json={"session_id": sid, "code": "print('before-the-end')", "wait": True})
    assert r.status_code == 200, r.text
    assert server.delete(f"/sessions/{sid}").status_code in (200, 204)
    sign_in(driver, server, ADMIN)
    driver.get(server.url + f"/console#/sessions/{sid}")
    wait(driver, EC.text_to_be_present_in_element((By.ID, "history"), "before-the-end"))
    wait(driver, EC.text_to_be_present_in_element((By.ID, "session-info"), "ended"))
    assert driver.find_element(By.ID, "session-ended").is_displayed()
    for gone in ("end-session", "cell-box", "cell-form", "upload-form"):
        assert not driver.find_element(By.ID, gone).is_displayed(), gone
    assert "Run code" not in driver.find_element(By.ID, "session").text
    assert "the session has ended" in driver.find_element(By.ID, "files").text
    assert not driver.find_element(By.ID, "error").is_displayed(), driver.find_element(By.ID, "error").text
    # the audit trail links it too
    driver.get(server.url + f"/console#/audit?session={sid}")
    click(driver, (By.XPATH, f"//tbody[@id='audit-rows']//a[text()='{sid}']"))
    wait(driver, EC.text_to_be_present_in_element((By.ID, "history"), "before-the-end"))
    code = wait(driver, EC.visibility_of_element_located((By.CSS_SELECTOR, "#history pre.code")))
    assert code.text == "print('before-the-end')"
    shot(driver, tmp_path, "ended")


def test_bad_key_and_sign_out(server, driver):
    driver.get(server.url + "/console")
    driver.find_element(By.ID, "signout").click()
    driver.find_element(By.ID, "key").send_keys("not-a-key")
    driver.find_element(By.CSS_SELECTOR, "#signin-form button").click()
    assert "401" in wait(driver, EC.visibility_of_element_located((By.ID, "error"))).text
    assert driver.execute_script("return sessionStorage.length") == 0
    assert driver.get_cookies() == []


def test_requests_only_to_runboxd(server, driver):
    """Every request the browser sent in this module went to runboxd's origin (or was a data:
    or blob: URL the page made itself)."""
    origin = urlparse(server.url)
    urls = []
    for entry in driver.get_log("performance"):
        msg = json.loads(entry["message"])["message"]
        if msg["method"] == "Network.requestWillBeSent":
            urls.append(msg["params"]["request"]["url"])
    assert any(u.startswith(server.url + "/sessions") for u in urls), urls[:20]
    for u in urls:
        p = urlparse(u)
        assert p.scheme in ("data", "blob") or (p.scheme, p.netloc) == (origin.scheme, origin.netloc), u
    no_alert(driver)

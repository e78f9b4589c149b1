"""The console's empty states (issue 42, docs/console.md) against a runboxd with one engine (its
--docker-socket) where nothing has run yet: every table and list with nothing to show says so in
words, the engines page says runboxd uses one engine, and the duration chart says no execution
ran instead of plotting 0.
"""

from __future__ import annotations

from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as EC

from conftest import ADMIN, USER
from test_console import chart_labels, chart_times, shot, sign_in, wait


def test_empty_states(bare_server, driver, tmp_path):
    server = bare_server
    sign_in(driver, server, ADMIN)
    wait(driver, EC.text_to_be_present_in_element((By.ID, "sessions-rows"), "No live session"))

    # Charts before any execution: no 0.000 for the mean duration, but words, on the chart too.
    driver.find_element(By.CSS_SELECTOR, "nav a[data-view=charts]").click()
    wait(driver, EC.text_to_be_present_in_element((By.ID, "now-latency"), "no executions yet"))
    wait(driver, lambda d: len(chart_times(d, "chart-latency")) >= 2, timeout=20)
    assert "no executions yet" in chart_labels(driver, "chart-latency")
    assert not driver.find_elements(By.CSS_SELECTOR, "#chart-latency path.series")
    assert "0" in chart_labels(driver, "chart-sessions") and chart_times(driver, "chart-sessions")
    shot(driver, tmp_path, "charts-empty")

    # One engine: no empty seven-column table, but what runboxd uses.
    driver.find_element(By.CSS_SELECTOR, "nav a[data-view=engines]").click()
    note = wait(driver, EC.visibility_of_element_located((By.ID, "engines-note")))
    wait(driver, lambda d: "one Docker engine" in d.find_element(By.ID, "engines-note").text)
    assert "--docker-socket" in note.text and "reachable" in note.text, note.text
    assert not driver.find_element(By.ID, "engines-table").is_displayed()
    shot(driver, tmp_path, "engines-one")

    # The audit trail filtered to a session that never was: said in words.
    driver.get(server.url + "/console#/audit?session=s_nothing_here")
    wait(driver, EC.text_to_be_present_in_element((By.ID, "audit-rows"), "No event matches these filters."))

    # A new session's page: no file, no execution, said so.
    sid = server.create_session({"language": "python"}, headers={"Authorization": f"Bearer {USER}"})["session_id"]
    driver.get(server.url + f"/console#/sessions/{sid}")
    wait(driver, EC.text_to_be_present_in_element((By.ID, "history"), "No execution yet"))
    wait(driver, EC.text_to_be_present_in_element((By.ID, "files"), "No file in the workspace yet"))
    assert "(0)" in driver.find_element(By.ID, "history-count").text
    assert not driver.find_element(By.ID, "error").is_displayed(), driver.find_element(By.ID, "error").text

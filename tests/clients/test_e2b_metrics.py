"""E2B's Sandbox.get_metrics() (issue 27, "Per-sandbox metrics"; docs/e2b.md) with E2B's own SDK,
unmodified, against a real runboxd sampling every second: the list fills with SandboxMetrics
whose memory grows once the sandbox holds 200 MB more, start/end narrow it, another key's
sandbox is not found and a killed one is not found either. Waits are rbtest.wait_until with
generous deadlines."""

from __future__ import annotations

import datetime

import pytest

import rbtest
from rbfixtures import keyed_server_fixture, point_e2b_sdk_at

from e2b import SandboxException
from e2b_code_interpreter import Sandbox

KEYS = {"alice": "e2b_" + "d4" * 20, "bob": "e2b_" + "e5" * 20}
MIB = 1024 * 1024

metrics_server = keyed_server_fixture("runboxd-e2b-metrics", KEYS, ["--metrics-interval", "1"],
                                      name="metrics_server")


@pytest.fixture
def e2b_env(metrics_server, monkeypatch):
    point_e2b_sdk_at(monkeypatch, metrics_server, KEYS["alice"])
    return metrics_server


def test_get_metrics(e2b_env, monkeypatch):
    sbx = Sandbox.create(timeout=600)
    e2b_env.session_ids.add(sbx.sandbox_id)
    try:
        ms = rbtest.wait_until(lambda: len(m := sbx.get_metrics()) >= 2 and m, "two samples", deadline=60)
        first = ms[-1]
        assert first.cpu_count >= 1 and first.cpu_used_pct >= 0
        assert 0 < first.mem_used < first.mem_total and first.mem_cache >= 0
        assert 0 <= first.disk_used < 8 * MIB and first.disk_total > 0
        assert isinstance(first.timestamp, datetime.datetime)
        assert [m.timestamp for m in ms] == sorted(m.timestamp for m in ms)

        sbx.run_code("hog = b'x' * (200 * 1024 * 1024)")
        grown = rbtest.wait_until(lambda: [m for m in sbx.get_metrics() if m.mem_used >= first.mem_used + 150 * MIB],
                                  "a sample with 150 MB more in use", deadline=60)
        assert grown[-1].mem_used < grown[-1].mem_total
        # files in the workspace are its disk (memory-backed: in mem_used too)
        sbx.run_code("open('/workspace/blob', 'wb').write(b'y' * (64 * 1024 * 1024))")
        rbtest.wait_until(lambda: [m for m in sbx.get_metrics() if m.disk_used >= first.disk_used + 60 * MIB],
                          "a sample with 64 MB more on disk", deadline=60)

        # start and end narrow the list (Unix seconds, as the SDK sends them)
        later = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(hours=1)
        assert sbx.get_metrics(start=later) == []
        assert len(sbx.get_metrics(end=later)) >= 2

        # another key's sandbox is not there
        monkeypatch.setenv("E2B_API_KEY", KEYS["bob"])
        with pytest.raises(SandboxException):
            Sandbox.get_metrics(sbx.sandbox_id)
        monkeypatch.setenv("E2B_API_KEY", KEYS["alice"])
        assert Sandbox.get_metrics(sbx.sandbox_id)
    finally:
        sbx.kill()
    with pytest.raises(SandboxException):
        Sandbox.get_metrics(sbx.sandbox_id)

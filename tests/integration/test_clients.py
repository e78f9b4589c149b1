"""The shipped clients work against a real runboxd: clients/python/runbox_client.py (imported)
and clients/curl/walkthrough.sh (run as a user would)."""

from __future__ import annotations

import subprocess
import sys

import pytest

import rbtest

sys.path.insert(0, str(rbtest.ROOT / "clients" / "python"))
from runbox_client import RunboxClient, RunboxError  # noqa: E402


def test_python_client(server):
    rb = RunboxClient(server.url)
    assert rb.health()["status"] == "ok"
    s = rb.create_session(environment_variables={"WHO": "client"})
    server.track(s)
    sid = s["session_id"]
    assert sid in [x["session_id"] for x in rb.list_sessions()]
    r = rb.execute(sid, "import os\nprint(os.environ['WHO'])\n6 * 7")
    assert r["stdout"] == "client\n" and r["result"] == "42"
    rid = rb.execute(sid, "print('streamed')", wait=False)["request_id"]
    events = list(rb.events(rid))
    assert events[-1][0] == "done" and events[-1][1]["stdout"] == "streamed\n"
    assert rb.status(rid)["status"] == "completed"
    assert rb.results(rid)["stdout"] == "streamed\n"
    with pytest.raises(RunboxError) as e:
        rb.cancel(rid)
    assert e.value.status == 409 and e.value.code == "conflict"
    assert rb.delete_session(sid)["status"] == "ended"
    with pytest.raises(RunboxError) as e:
        rb.get_session("s_" + "0" * 32)
    assert e.value.status == 404 and e.value.code == "not_found"


def test_python_client_cli(server):
    p = subprocess.run([sys.executable, str(rbtest.ROOT / "clients/python/runbox_client.py"), "--url", server.url,
                        "print('hello from the cli')"], capture_output=True, text=True, timeout=180)
    assert p.returncode == 0, p.stderr
    assert p.stdout == "hello from the cli\n"


def test_curl_walkthrough(server):
    p = subprocess.run(["bash", str(rbtest.ROOT / "clients/curl/walkthrough.sh"), server.url],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stdout[-4000:] + p.stderr[-4000:]
    out = p.stdout
    assert "x is 42" in out
    assert "event: done" in out
    assert '"status":"cancelled"' in out.replace(" ", "")
    assert '"code":"not_found"' in out.replace(" ", "")
    assert '"status":"ended"' in out.replace(" ", "")

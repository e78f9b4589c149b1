"""Questions that are not cells (docker/runner/runbox_runner/asks.py and kernel_requests.py):
`{"op": "ask", "id", "kind", "content"}` answered `{"type": "answer", "id", "content"}` with what
ipykernel answers, in a runner started as a plain subprocess (no Docker).

Run: python3 -m pytest tests/runner/test_asks.py -q
"""

import time
import uuid

import pytest

from test_runner import Runner


@pytest.fixture
def py():
    r = Runner()
    yield r
    r.close()


def ask(r, kind, **content):
    rid = "q" + uuid.uuid4().hex
    r.send({"op": "ask", "id": rid, "kind": kind, "content": content})
    ev = r.event()
    assert ev["type"] == "answer" and ev["id"] == rid, ev
    return ev["content"]


def test_complete_uses_the_session_names_and_jedi(py):
    py.execute("my_variable = 1")
    # the first completions come without jedi (it warms up in a thread): names all the same
    a = ask(py, "complete", code="my_va", cursor_pos=5)
    assert a["status"] == "ok" and a["matches"] == ["my_variable"]
    assert (a["cursor_start"], a["cursor_end"]) == (0, 5)
    # then jedi's: its type of the value (IPython's own matcher says "variable")
    deadline = time.monotonic() + 300
    while a["metadata"]["_jupyter_types_experimental"][0]["type"] != "instance":
        assert time.monotonic() < deadline, "jedi never answered"
        time.sleep(0.2)
        a = ask(py, "complete", code="my_va", cursor_pos=5)
    assert a["matches"] == ["my_variable"]
    f = ask(py, "complete", code="import json\njson.dum")
    assert "dumps" in f["matches"] and "(obj" in f["metadata"]["_jupyter_types_experimental"][0]["signature"]
    a = ask(py, "complete", code="import os\nos.pa", cursor_pos=15)
    assert "path" in a["matches"] and a["cursor_start"] == 13
    assert ask(py, "complete", code="zzz_nothing")["matches"] == []


def test_a_question_is_not_a_cell(py):
    py.execute("x = 41")
    ask(py, "complete", code="x")
    ask(py, "inspect", code="x")
    r = py.execute("x + 1")
    assert r.result == "42"
    # the history has the two cells, nothing of the questions; the count goes on from 2
    h = ask(py, "history", hist_access_type="tail", n=10, raw=True, output=False)
    assert [e[2] for e in h["history"]] == ["x = 41", "x + 1"]
    assert '"<cell-3>"' in "".join(py.execute("1/0").error["traceback"])


def test_inspect_levels_and_not_found(py):
    py.execute("def f(a, b=2):\n    'Adds.'\n    return a + b")
    a = ask(py, "inspect", code="f(", cursor_pos=1, detail_level=0)
    assert a["status"] == "ok" and a["found"] is True
    assert "Adds." in a["data"]["text/plain"] and "return a + b" not in a["data"]["text/plain"]
    a = ask(py, "inspect", code="f", detail_level=1)
    assert "return a + b" in a["data"]["text/plain"]
    a = ask(py, "inspect", code="no_such_name")
    assert a == {"status": "ok", "found": False, "data": {}, "metadata": {}}
    assert ask(py, "inspect", code="f", detail_level=7)["status"] == "error"


def test_is_complete(py):
    assert ask(py, "is_complete", code="1") == {"status": "complete"}
    assert ask(py, "is_complete", code="def f(x):") == {"status": "incomplete", "indent": "    "}
    assert ask(py, "is_complete", code="import = 7q") == {"status": "invalid"}


def test_history_tail_range_search(py):
    for code in ("1+2+3", "[n*n for n in range(1, 4)]", "1+2+3"):
        py.execute(code)
    tail = ask(py, "history", hist_access_type="tail", n=2, raw=True, output=True)["history"]
    assert [e[2][0] for e in tail] == ["[n*n for n in range(1, 4)]", "1+2+3"]
    session, start = tail[0][0], tail[0][1]
    rng = ask(py, "history", hist_access_type="range", session=session, start=start, stop=start + 1)["history"]
    assert rng == [[session, start, "[n*n for n in range(1, 4)]"]]
    found = ask(py, "history", hist_access_type="search", pattern="1?2*", n=None)["history"]
    assert [e[2] for e in found] == ["1+2+3", "1+2+3"]
    assert len(ask(py, "history", hist_access_type="search", pattern="1?2*", unique=True)["history"]) == 1
    assert ask(py, "history", hist_access_type="sideways")["status"] == "error"


def test_kernel_info_names_the_real_python(py):
    import sys
    a = ask(py, "kernel_info")
    assert a["language_info"]["version"] == sys.version.split()[0]
    assert a["language_info"]["pygments_lexer"] == "ipython3"


def test_refused_while_a_cell_runs_and_for_bad_questions(py):
    rid = uuid.uuid4().hex
    py.send({"op": "execute", "id": rid, "code": "import time; time.sleep(1)", "timeout": 30})
    a = ask(py, "complete", code="pri")
    assert a["status"] == "error" and a["ename"] == "KernelBusy"
    while py.event()["type"] != "done":
        pass
    assert ask(py, "teleport")["ename"] == "ValueError"
    qid = "q" + uuid.uuid4().hex
    py.send({"op": "ask", "id": qid, "kind": "complete", "content": [1]})
    assert py.event()["content"]["ename"] == "ValueError"


def test_pager_is_a_page_event(py):
    r = py.execute("zip?")
    assert r.status == "completed" and r.text("stdout") == ""
    pages = r.of("page")
    assert len(pages) == 1 and "zip" in pages[0]["data"]["text/plain"] and pages[0]["start"] == 0


def test_bash_kernels_answer_no_questions():
    r = Runner("bash")
    try:
        assert ask(r, "complete", code="ec")["ename"] == "NotSupported"
    finally:
        r.close()

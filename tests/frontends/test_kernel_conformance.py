"""runbox's Python kernel against jupyter_kernel_test (PyPI), the conformance suite ipykernel
passes, through Jupyter Server's gateway client (`jupyter server --gateway-url=RUNBOXD/jupyter`,
the fixture of test_jupyter_server.py) with jupyter_kernel_client's websocket client: only the
kernel's start is ours (KernelTests starts a local kernel); the samples are those ipykernel's own
run (jupyter_kernel_test's test_ipykernel.py), with "range" among the history operations too.
Then each request the kernel answers without running a cell (core/kernel_ask.h,
server/jupyter/jupyter_ask.c), asked directly on runboxd's websocket: completion, inspection at
both detail levels, is_complete, history, kernel_info, the pager's payload, coloured tracebacks,
and the counts after a restart.

Run: RUNBOX_BIN=build/runboxd python -m pytest tests/frontends/test_kernel_conformance.py -q
"""

from __future__ import annotations

import json
import sys
import time
import uuid

import jupyter_kernel_test as jkt
import pytest
import websocket
from jupyter_kernel_client import KernelHttpManager

from conftest import ALICE, session_id_of, start_kernel
from test_jupyter_server import SERVER_TOKEN, jupyter_server  # noqa: F401 (the fixture)


@pytest.fixture(scope="class")
def gateway_kernel(request, server, jupyter_server):  # noqa: F811
    """A kernel of runboxd's started through Jupyter Server, as KernelTests' km and kc."""
    km = KernelHttpManager(server_url=jupyter_server.url, token=SERVER_TOKEN)
    km.start_kernel(name="python3")
    kc = km.client
    kc.start_channels()
    kc.wait_for_ready(timeout=120)
    request.cls.km, request.cls.kc = km, kc
    yield
    km.shutdown_kernel(now=True)  # first: the server then closes the socket the client reads
    kc.stop_channels()


@pytest.mark.usefixtures("gateway_kernel")
class TestRunboxAsIPyKernel(jkt.KernelTests):
    @classmethod
    def setUpClass(cls) -> None:  # the kernel is gateway_kernel's
        pass

    @classmethod
    def tearDownClass(cls) -> None:
        pass

    kernel_name = "python3"
    language_name = "python"
    file_extension = ".py"
    code_hello_world = "print('hello, world')"
    code_stderr = "import sys; print('test', file=sys.stderr)"
    completion_samples = [{"text": "zi", "matches": {"zip"}}]
    complete_code_samples = ["1", "print('hello, world')", "def f(x):\n  return x*2\n\n\n"]
    incomplete_code_samples = ["print('''hello", "def f(x):\n  x*2"]
    invalid_code_samples = ["import = 7q"]
    code_page_something = "zip?"
    code_generate_error = "raise"
    code_execute_result = [
        {"code": "1+2+3", "result": "6"},
        {"code": "[n*n for n in range(1, 4)]", "result": "[1, 4, 9]"},
    ]
    code_display_data = [
        {"code": "from IPython.display import HTML, display; display(HTML('<b>test</b>'))", "mime": "text/html"},
        {"code": "from IPython.display import Math, display; display(Math('\\frac{1}{2}'))", "mime": "text/latex"},
    ]
    code_history_pattern = "1?2*"
    supported_history_operations = ("tail", "range", "search")
    code_inspect_sample = "zip"
    code_clear_output = "from IPython.display import clear_output; clear_output()"


# ---- each request, asked directly on runboxd's websocket ----------------------------------------

class Socket:
    """A raw websocket on runboxd's /jupyter channels: requests and the messages answering them."""

    def __init__(self, server, kid: str):
        url = server.url.replace("http://", "ws://") + f"/jupyter/api/kernels/{kid}/channels"
        self.ws = websocket.create_connection(url, header=[f"Authorization: token {ALICE}"], timeout=120)

    def send(self, msg_type: str, content: dict, channel: str = "shell") -> str:
        mid = uuid.uuid4().hex
        self.ws.send(json.dumps({"header": {"msg_id": mid, "msg_type": msg_type, "session": "t", "username": "t",
                                            "date": "", "version": "5.3"},
                                 "parent_header": {}, "metadata": {}, "content": content, "channel": channel}))
        return mid

    def until_idle(self, mid: str) -> list[dict]:
        """The messages answering mid, up to its idle status."""
        out = []
        while True:
            m = json.loads(self.ws.recv())
            if m["parent_header"].get("msg_id") != mid:
                continue
            out.append(m)
            if m["msg_type"] == "status" and m["content"]["execution_state"] == "idle":
                return out

    def request(self, msg_type: str, **content) -> dict:
        msgs = self.until_idle(self.send(msg_type, content))
        replies = [m for m in msgs if m["msg_type"] == msg_type.replace("_request", "_reply")]
        assert len(replies) == 1, msgs
        return replies[0]["content"]

    def execute(self, code: str) -> list[dict]:
        return self.until_idle(self.send("execute_request", {"code": code, "silent": False}))

    def close(self):
        self.ws.close()


@pytest.fixture
def sock(server, kernels):
    s = Socket(server, start_kernel(server, kernels))
    yield s
    s.close()


def test_complete_as_ipykernel(sock):
    sock.execute("import collections\nmy_counter = collections.Counter('abca')")
    r = sock.request("complete_request", code="my_cou", cursor_pos=6)
    assert r["status"] == "ok" and r["matches"] == ["my_counter"], r
    assert (r["cursor_start"], r["cursor_end"]) == (0, 6)
    # the first completions come without jedi while it warms up in the kernel; then jedi's types
    deadline = time.monotonic() + 300
    while r["metadata"]["_jupyter_types_experimental"][0]["type"] != "instance":
        assert time.monotonic() < deadline, r
        time.sleep(0.2)
        r = sock.request("complete_request", code="my_cou", cursor_pos=6)
    types = r["metadata"]["_jupyter_types_experimental"]
    assert types[0]["text"] == "my_counter" and r["matches"] == ["my_counter"], types
    r = sock.request("complete_request", code="my_counter.most", cursor_pos=15)  # jedi on a live object
    assert r["matches"] == ["most_common"] and r["cursor_start"] == 11, r
    r = sock.request("complete_request", code="import collections.abc as c\nc.Mapp", cursor_pos=34)
    assert "Mapping" in r["matches"], r


def test_inspect_at_both_levels(sock):
    sock.execute("def area(w, h=2):\n    'The area of a rectangle.'\n    return w * h")
    r = sock.request("inspect_request", code="x = area(3", cursor_pos=8, detail_level=0)
    assert r["status"] == "ok" and r["found"] is True, r
    text = r["data"]["text/plain"]
    assert "area(w, h=2)" in text and "The area of a rectangle." in text and "return w * h" not in text
    r = sock.request("inspect_request", code="area", cursor_pos=4, detail_level=1)
    assert "return w * h" in r["data"]["text/plain"], r
    r = sock.request("inspect_request", code="no_such_thing", cursor_pos=5, detail_level=0)
    assert r == {"status": "ok", "found": False, "data": {}, "metadata": {}}


def test_is_complete_as_ipykernel(sock):
    assert sock.request("is_complete_request", code="for i in range(3):") == {"status": "incomplete",
                                                                             "indent": "    "}
    assert sock.request("is_complete_request", code="x = 1")["status"] == "complete"
    assert sock.request("is_complete_request", code="x = = 1")["status"] == "invalid"
    # IPython's syntax: a magic or a shell line is complete; a cell magic ends at a blank line
    assert sock.request("is_complete_request", code="!ls")["status"] == "complete"
    assert sock.request("is_complete_request", code="%%time\nx = 1\n") == {"status": "incomplete", "indent": ""}


def test_questions_leave_no_trace(server, sock, kernels):
    sock.execute("a = 1")
    for _ in range(3):
        sock.request("complete_request", code="a", cursor_pos=1)
        sock.request("inspect_request", code="a", cursor_pos=1, detail_level=0)
        sock.request("history_request", hist_access_type="tail", n=5, raw=True, output=False)
    msgs = sock.execute("a + 1")
    result = [m for m in msgs if m["msg_type"] == "execute_result"][0]
    assert result["content"]["execution_count"] == 2 and result["content"]["data"]["text/plain"] == "2"
    hist = sock.request("history_request", hist_access_type="tail", n=10, raw=True, output=False)["history"]
    assert [h[2] for h in hist] == ["a = 1", "a + 1"], hist
    # runbox's own record holds the two executions, none of the questions
    sid = session_id_of(kernels[-1][0])
    execs = server.get(f"/sessions/{sid}/executions").json()["executions"]
    assert [e["code"] if "code" in e else e["outputs"] for e in execs][-1] != [] and len(execs) == 2, execs


def test_history_range_and_search(sock):
    for code in ("t = 10", "t * 2", "t * 3"):
        sock.execute(code)
    tail = sock.request("history_request", hist_access_type="tail", n=3, raw=True, output=False)["history"]
    session, start = tail[0][0], tail[0][1]
    assert session >= 1 and [h[2] for h in tail] == ["t = 10", "t * 2", "t * 3"]
    r = sock.request("history_request", hist_access_type="range", session=session, start=start + 1, stop=start + 3,
                     raw=True, output=False)
    assert r["history"] == [[session, start + 1, "t * 2"], [session, start + 2, "t * 3"]], r
    r = sock.request("history_request", hist_access_type="search", pattern="t [*]*", raw=True, output=False,
                     n=None, unique=False)
    assert [h[2] for h in r["history"]] == ["t * 2", "t * 3"], r


def test_kernel_info_has_the_full_language_info(sock):
    r = sock.request("kernel_info_request")
    li = r["language_info"]
    assert li["name"] == "python" and li["mimetype"] == "text/x-python" and li["file_extension"] == ".py"
    assert li["pygments_lexer"] == "ipython3" and li["nbconvert_exporter"] == "python"
    assert li["codemirror_mode"] == {"name": "ipython", "version": 3}
    major, minor, _ = li["version"].split(".")  # the sandbox's Python, not "3"
    assert (int(major), int(minor)) >= (3, 9), li
    assert "IPython" in r["banner"]


def test_pager_is_a_payload_and_tracebacks_have_colour(sock):
    msgs = sock.execute("len??")
    reply = [m for m in msgs if m["msg_type"] == "execute_reply"][0]["content"]
    assert reply["status"] == "ok" and len(reply["payload"]) == 1, reply
    page = reply["payload"][0]
    assert page["source"] == "page" and "Return the number of items" in page["data"]["text/plain"]
    assert not [m for m in msgs if m["msg_type"] == "stream"], msgs  # not printed as well
    msgs = sock.execute("def f():\n    return 1 / 0\nf()")
    err = [m for m in msgs if m["msg_type"] == "error"][0]["content"]
    tb = "\n".join(err["traceback"])
    assert "\x1b[31mZeroDivisionError\x1b[39m" in tb and '\x1b[32m  File "<cell-' in tb, err
    reply = [m for m in msgs if m["msg_type"] == "execute_reply"][0]["content"]
    assert reply["traceback"] == err["traceback"]


def test_pager_text_stays_plain_stdout_over_rest(server):
    sid = server.create_session()["session_id"]
    try:
        r = server.execute(sid, "zip?")
        assert r["status"] == "completed", r
        assert "zip" in r["stdout"] and [o["type"] for o in r["outputs"]] == ["page"], r
        r = server.execute(sid, "1/0")
        assert "\x1b[" not in "".join(r["error"]["traceback"])  # colour is Jupyter's only
    finally:
        server.delete_session(sid)


def test_counts_and_cell_names_start_over_after_a_restart(server, sock, kernels):
    sock.execute("x = 1")
    sock.execute("y = 2")
    kid = kernels[-1][0]
    r = server.post(f"/jupyter/api/kernels/{kid}/restart", {}, headers={"Authorization": f"token {ALICE}"})
    assert r.status_code == 200, r.text
    msgs = sock.execute("1/0")
    reply = [m for m in msgs if m["msg_type"] == "execute_reply"][0]["content"]
    assert reply["execution_count"] == 1, reply
    assert '"<cell-1>"' in "".join(reply["traceback"]), reply


def test_busy_kernel_answers_after_the_cell_of_this_socket(sock):
    mid = sock.send("execute_request", {"code": "import time; time.sleep(1); done = 1", "silent": False})
    cid = sock.send("complete_request", {"code": "don", "cursor_pos": 3})
    order = []
    while len(order) < 2:
        m = json.loads(sock.ws.recv())
        if m["msg_type"] in ("execute_reply", "complete_reply"):
            order.append((m["msg_type"], m))
    assert [o[0] for o in order] == ["execute_reply", "complete_reply"]
    assert order[1][1]["parent_header"]["msg_id"] == cid and order[1][1]["content"]["matches"] == ["done"]
    assert order[0][1]["parent_header"]["msg_id"] == mid


def test_busy_with_another_clients_code_the_reply_says_so(server, sock, kernels):
    sid = session_id_of(kernels[-1][0])
    rid = server.execute(sid, "import time; time.sleep(600)", wait=False)["request_id"]
    server.wait_status(rid, "running")
    r = sock.request("complete_request", code="pri", cursor_pos=3)
    assert r["status"] == "error" and r["ename"] == "KernelBusy", r
    info = sock.request("kernel_info_request")  # what it knows without the interpreter
    assert info["status"] == "ok" and info["language_info"]["pygments_lexer"] == "ipython3", info
    assert server.delete(f"/execute/{rid}").status_code == 200
    server.wait_done(rid)
    r = sock.request("complete_request", code="pri", cursor_pos=3)
    assert "print" in r.get("matches", []), r


def test_bash_kernels_keep_the_plain_replies(server, kernels):
    s = Socket(server, start_kernel(server, kernels, name="bash"))
    try:
        r = s.request("complete_request", code="ec", cursor_pos=2)
        assert r["status"] == "ok" and r["matches"] == []
    finally:
        s.close()


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q"]))

"""E2B's SDK (PyPI `e2b-code-interpreter` and its `e2b`, pinned in tests/requirements.txt) against
a real runboxd and real Docker sandboxes, unmodified: the SDK is configured only by the
environment variables docs/e2b.md names (E2B_API_URL and E2B_SANDBOX_URL both at runboxd's
/e2b, E2B_API_KEY a key of runboxd's --api-keys-file). An E2B sandbox is a runbox session.

What runbox cannot do must fail readably (a typed SDK exception naming the cause), never succeed
silently; a sandbox belongs to the key that made it.
"""

from __future__ import annotations

import base64
import hashlib
import threading
import time
import uuid

import pytest
import requests

import rbtest
from rbfixtures import keyed_server_fixture, point_e2b_sdk_at

from e2b import (ALL_TRAFFIC, AuthenticationException, InvalidArgumentException, NotFoundException, SandboxException,
                 SandboxNetworkOpts, SandboxQuery, SandboxNotFoundException, ServiceBusyException, TimeoutException)
from e2b_code_interpreter import Sandbox

# E2B keys look like e2b_ + 40 hex digits; some SDKs check the form.
KEYS = {"alice": "e2b_" + "a1" * 20, "bob": "e2b_" + "b2" * 20}


e2b_server = keyed_server_fixture("runboxd-e2b", KEYS, name="e2b_server")  # cleanup sees alice's sessions


@pytest.fixture
def e2b_env(e2b_server, monkeypatch):
    """The SDK pointed at runboxd by its environment alone, as a user would."""
    point_e2b_sdk_at(monkeypatch, e2b_server, KEYS["alice"])
    return e2b_server


def test_the_issue_flow(e2b_env):
    """create, run_code with state, on_stdout, a matplotlib figure's png, files, connect, list, kill."""
    seen: list[str] = []
    with Sandbox.create() as sbx:
        sid = sbx.sandbox_id
        e2b_env.session_ids.add(sid)
        assert sbx.run_code("x = 1").error is None
        ex = sbx.run_code("print(x)", on_stdout=lambda m: seen.append(m.line))
        assert ex.logs.stdout == ["1\n"] and seen == ["1\n"], (ex, seen)
        assert ex.execution_count == 2, ex

        ex = sbx.run_code("import matplotlib.pyplot as plt; plt.plot([1, 2]); plt.show()")
        assert ex.error is None, ex.error
        png = ex.results[0].png
        assert base64.b64decode(png)[:8] == b"\x89PNG\r\n\x1a\n"

        ex = sbx.run_code("import sys; print('oops', file=sys.stderr); 6 * 7")
        assert ex.text == "42" and ex.logs.stderr == ["oops\n"], ex

        info = sbx.files.write("/home/user/a.txt", "hi")
        assert (info.name, info.path) == ("a.txt", "/home/user/a.txt"), info
        assert sbx.files.read("/home/user/a.txt") == "hi"
        # /home/user is the session's workspace, which the code runs in
        assert sbx.run_code("open('a.txt').read()").text == "hi"
        sbx.run_code("open('made.bin', 'wb').write(bytes(range(256)))")
        assert sbx.files.read("made.bin", format="bytes") == bytes(range(256))

        again = Sandbox.connect(sid)
        assert again.sandbox_id == sid and again.run_code("x + 1").text == "2"
        listed = Sandbox.list().next_items()
        assert sid in {s.sandbox_id for s in listed}, listed
        assert sbx.is_running()

        # the same session through REST
        r = e2b_env.get(f"/sessions/{sid}")
        assert r.status_code == 200 and r.json()["status"] in ("ready", "busy"), r.text
    # leaving the with-block killed it
    r = e2b_env.get(f"/sessions/{sid}")
    assert r.json()["status"] == "ended", r.text


def test_results_carry_every_format(e2b_env):
    """Issue 38: Execution.results as E2B's SDK reads them: each display() and the cell's value
    with every format under E2B's names, is_main_result for the value, the others in extra."""
    with Sandbox.create() as sbx:
        e2b_env.session_ids.add(sbx.sandbox_id)
        ex = sbx.run_code(
            "from IPython.display import display, HTML, Markdown, Latex, JSON, Javascript, SVG\n"
            "class Rich:\n"
            "    def _repr_mimebundle_(self, include=None, exclude=None):\n"
            "        return {'text/plain': 'Rich()', 'application/x-runbox+json': '{}'}\n"
            "display(HTML('<b>h</b>'), Markdown('# m'), Latex('$x$'), JSON({'k': [1]}), Javascript('1;'))\n"
            "display(SVG('<svg xmlns=\"http://www.w3.org/2000/svg\"/>'), Rich())\n"
            "import pandas as pd\n"
            "pd.DataFrame({'a': [1]})", timeout=600, request_timeout=600)  # pandas' first import, on a busy host
        assert ex.error is None, ex.error
        html, md, latex, js_, javascript, svg, rich, value = ex.results
        assert (html.html, md.markdown, latex.latex, javascript.javascript) == ("<b>h</b>", "# m", "$x$", "1;")
        assert js_.json == {"k": [1]} and svg.svg.startswith("<svg")
        assert rich.text == "Rich()" and rich.extra == {"application/x-runbox+json": {}}  # a +json format is JSON
        assert not any(r.is_main_result for r in ex.results[:-1]) and value.is_main_result
        assert "<table" in value.html and value.text.split() == ["a", "0", "1"]
        assert set(value.formats()) == {"text", "html"}
        # PIL images are pngs and jpegs
        img = sbx.run_code("from PIL import Image\nImage.new('RGB', (2, 2))").results[0]
        assert base64.b64decode(img.png)[:8] == b"\x89PNG\r\n\x1a\n" and img.jpeg and img.is_main_result


def test_a_string_result_reads_as_e2b_shows_it(e2b_env):
    """Issue 38: E2B shows a str value as the string itself (`results[0].text`), not its repr;
    other values keep their repr, and REST keeps the repr as `text` with the string beside it."""
    with Sandbox.create() as sbx:
        e2b_env.session_ids.add(sbx.sandbox_id)
        assert sbx.run_code("'a' + 'b'").text == "ab"
        tricky = "it's \"quoted\"\n\tand \\ é"
        assert sbx.run_code(f"{tricky!r}").results[0].text == tricky
        assert sbx.run_code("[1, 'a']").text == "[1, 'a']"
        assert sbx.run_code("class S(str): pass\nS('sub')").text == "sub"
        assert sbx.run_code("b'x'").text == "b'x'"
        item = e2b_env.post("/execute", json={"session_id": sbx.sandbox_id, "code": "'x' * 3", "wait": True}).json()
        result = [o for o in item["outputs"] if o["type"] == "result"][0]
        assert (item["result"], result["text"], result["str"]) == ("'xxx'", "'xxx'", "xxx"), item


def test_kill_then_connect_is_not_found(e2b_env):
    sbx = Sandbox.create()
    e2b_env.session_ids.add(sbx.sandbox_id)
    assert sbx.kill() is True
    with pytest.raises(SandboxNotFoundException):
        Sandbox.connect(sbx.sandbox_id)
    assert Sandbox.kill(sbx.sandbox_id) is False
    assert not sbx.is_running()
    with pytest.raises(SandboxException):
        sbx.run_code("1")


def test_two_sandboxes_in_parallel_keep_their_own_state(e2b_env):
    boxes = [Sandbox.create(metadata={"n": str(i)}) for i in range(2)]
    try:
        for b in boxes:
            e2b_env.session_ids.add(b.sandbox_id)
        errors: list[BaseException] = []

        def work(i: int, b: Sandbox) -> None:
            try:
                b.run_code(f"v = {i} * 100")
                for _ in range(3):
                    assert b.run_code("v").text == str(i * 100)
            except BaseException as e:  # noqa: BLE001 - reported below
                errors.append(e)

        threads = [threading.Thread(target=work, args=(i, b)) for i, b in enumerate(boxes)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(240)
        assert not errors, errors
        # list filters by metadata and pages with x-next-token
        only = Sandbox.list(query=SandboxQuery(metadata={"n": "1"})).next_items()
        assert [s.sandbox_id for s in only] == [boxes[1].sandbox_id], only
        assert Sandbox.list(query=SandboxQuery(template="bash")).next_items() == []
        mine = {b.sandbox_id for b in boxes}
        ci = {s.sandbox_id for s in Sandbox.list(query=SandboxQuery(template="code-interpreter-v1")).next_items()}
        assert mine <= ci, (mine, ci)
        first_start = boxes[0].get_info().started_at
        later = {s.sandbox_id for s in Sandbox.list(query=SandboxQuery(started_after=first_start)).next_items()}
        assert mine <= later, later  # at or after, as E2B's (tests/clients/test_e2b_files.py)
        pager = Sandbox.list(limit=1)
        first = pager.next_items()
        assert len(first) == 1 and pager.has_next
        second = pager.next_items()
        assert len(second) == 1 and second[0].sandbox_id != first[0].sandbox_id
    finally:
        for b in boxes:
            b.kill()


def test_a_disconnect_interrupts_the_execution(e2b_env):
    """The SDK enforces run_code's timeout by dropping the connection: runboxd then cancels the
    cell, so the next one runs at once instead of queueing behind a ten-minute sleep."""
    with Sandbox.create() as sbx:
        e2b_env.session_ids.add(sbx.sandbox_id)
        sbx.run_code("keep = 'state'")
        with pytest.raises(TimeoutException):
            sbx.run_code("import time; time.sleep(600)", timeout=3)
        ex = sbx.run_code("keep", timeout=120)
        assert ex.text == "state", ex


def test_an_unknown_key_is_an_authentication_error(e2b_env):
    with pytest.raises(AuthenticationException):
        Sandbox.create(api_key="e2b_" + "0" * 40)
    with pytest.raises(AuthenticationException):
        Sandbox.list(api_key="e2b_" + "0" * 40).next_items()


def test_another_key_cannot_see_the_sandbox(e2b_env):
    with Sandbox.create() as sbx:
        e2b_env.session_ids.add(sbx.sandbox_id)
        bob = {"api_key": KEYS["bob"]}
        assert sbx.sandbox_id not in {s.sandbox_id for s in Sandbox.list(**bob).next_items()}
        with pytest.raises(SandboxNotFoundException):
            Sandbox.connect(sbx.sandbox_id, **bob)
        with pytest.raises(SandboxNotFoundException):
            Sandbox.get_info(sbx.sandbox_id, **bob)
        assert Sandbox.kill(sbx.sandbox_id, **bob) is False
        assert sbx.is_running()
        # The sandbox's own traffic needs its access token, not just its id.
        r = requests.post(e2b_env.url + "/e2b/execute", json={"code": "1"}, timeout=30,
                          headers={"E2b-Sandbox-Id": sbx.sandbox_id, "E2b-Sandbox-Port": "49999",
                                   "X-Access-Token": "0" * 32})
        assert r.status_code == 401 and "X-Access-Token" in r.json()["message"], r.text
        r = requests.get(e2b_env.url + "/e2b/files", params={"path": "/home/user/a.txt"}, timeout=30,
                         headers={"E2b-Sandbox-Id": sbx.sandbox_id, "E2b-Sandbox-Port": "49983"})
        assert r.status_code == 401, r.text


def test_quota_answers_carry_retry_after(sandbox_image, tmp_path):
    """Issue 21 #4: a key's quotas answer 429 with Retry-After on E2B's routes too, as on REST and
    AgentRun (docs/security.md): a sandbox over sessions=, /e2b/execute over executions=."""
    keys = tmp_path / "api-keys"
    keys.write_text(f"alice sha256:{hashlib.sha256(KEYS['alice'].encode()).hexdigest()} sessions=1 executions=1\n")
    s = rbtest.Server(tmp_path, ["--api-keys-file", str(keys), "--pool-size", "0"])
    s.start()
    s.http.headers["Authorization"] = f"Bearer {KEYS['alice']}"  # cleanup sees alice's sessions
    try:
        api = {"X-API-Key": KEYS["alice"]}
        r = requests.post(s.url + "/e2b/sandboxes", json={"templateID": "code-interpreter-v1"}, headers=api,
                          timeout=120)
        assert r.status_code == 201, r.text
        sid, token = r.json()["sandboxID"], r.json()["envdAccessToken"]
        s.session_ids.add(sid)
        r = requests.post(s.url + "/e2b/sandboxes", json={"templateID": "code-interpreter-v1"}, headers=api,
                          timeout=120)
        assert r.status_code == 429 and "sessions=" in r.json()["message"], r.text
        assert int(r.headers.get("Retry-After", "0")) >= 1, dict(r.headers)

        box = {"E2b-Sandbox-Id": sid, "E2b-Sandbox-Port": "49999", "X-Access-Token": token}
        with requests.post(s.url + "/e2b/execute", json={"code": "import time; time.sleep(5)"}, headers=box,
                           stream=True, timeout=(10, 60)) as running:
            assert running.status_code == 200, running.text
            r = requests.post(s.url + "/e2b/execute", json={"code": "1"}, headers=box, timeout=30)
            assert r.status_code == 429 and "executions=" in r.json()["message"], r.text
            assert int(r.headers.get("Retry-After", "0")) >= 1, dict(r.headers)
    finally:
        rbtest.finish_servers([s])


def test_paths_the_user_may_not_write_are_refused(e2b_env):
    """The files calls reach the sandbox's own paths as its user (tests/clients/test_e2b_files.py):
    the image is read-only, /etc/passwd readable, and a '..' leads nowhere else."""
    with Sandbox.create() as sbx:
        e2b_env.session_ids.add(sbx.sandbox_id)
        assert "root:x:0:0" in sbx.files.read("/etc/passwd")
        with pytest.raises(InvalidArgumentException, match="may not"):
            sbx.files.write("/home/user/../../etc/evil", "x")
        with pytest.raises(InvalidArgumentException, match="runbox's"):
            sbx.files.read("/opt/runbox/runner.py")
        with pytest.raises(NotFoundException):
            sbx.files.read("/home/user/missing.txt")


def test_what_runbox_cannot_do_fails_readably(e2b_env):
    with pytest.raises(SandboxException, match="not available on runboxd"):
        Sandbox.create(template="some-custom-template")
    with pytest.raises(SandboxException, match="timeout"):
        Sandbox.create(timeout=10**9)
    with Sandbox.create(timeout=600) as sbx:
        e2b_env.session_ids.add(sbx.sandbox_id)
        with pytest.raises(SandboxException, match="snapshots"):
            sbx.create_snapshot()
        with pytest.raises(SandboxException, match="no other kernel"):
            sbx.run_code("1", language="r")
        # set_timeout moves the sandbox's end, shown by get_info and as the session's expires_at
        before = sbx.get_info().end_at
        sbx.set_timeout(1200)
        after = sbx.get_info().end_at
        assert after > before, (before, after)
        with pytest.raises(SandboxException):
            sbx.set_timeout(0)


def test_the_timeout_ends_the_sandbox(e2b_env):
    sbx = Sandbox.create(timeout=2)
    e2b_env.session_ids.add(sbx.sandbox_id)
    rbtest.wait_until(lambda: not sbx.is_running(), "the sandbox ended by its timeout", deadline=120)
    r = e2b_env.get(f"/sessions/{sbx.sandbox_id}")
    assert r.json()["status"] == "ended" and "timeout" in r.json()["end_reason"], r.text
    with pytest.raises(SandboxNotFoundException):
        Sandbox.connect(sbx.sandbox_id)


def test_a_sandbox_and_its_token_survive_a_restart(e2b_env, monkeypatch):
    """The access token is stored with the session: after a restart of runboxd (on a new port
    here), connect gives the same token and the interpreter's state is still there."""
    sbx = Sandbox.create()
    e2b_env.session_ids.add(sbx.sandbox_id)
    sbx.run_code("kept = 41")
    e2b_env.restart()
    monkeypatch.setenv("E2B_API_URL", e2b_env.url + "/e2b")
    monkeypatch.setenv("E2B_SANDBOX_URL", e2b_env.url + "/e2b")
    again = Sandbox.connect(sbx.sandbox_id)
    assert again._envd_access_token == sbx._envd_access_token
    assert again.run_code("kept + 1", timeout=120).text == "42"
    again.files.write("/home/user/after.txt", "restart")
    assert again.files.read("/home/user/after.txt") == "restart"
    again.kill()


def test_e2b_requests_are_counted_as_their_own_protocol(e2b_env):
    import re

    def count() -> float:
        text = e2b_env.get("/metrics").text
        m = re.search(r'^runbox_http_requests_total\{protocol="e2b",status_class="2xx"\} (\S+)$', text, re.M)
        assert m is not None, text[:2000]
        return float(m.group(1))

    before = count()
    assert Sandbox.list().next_items() is not None
    assert count() >= before + 1


def test_javascript_and_typescript_sandboxes(e2b_env):
    """The templates javascript and typescript make sessions of those languages; run_code takes
    the SDK's names and the documentation's short ones (js, ts); a language the sandbox does
    not run by runbox (r, java) is refused naming the languages it runs."""
    with Sandbox.create(template="javascript") as sbx:
        e2b_env.session_ids.add(sbx.sandbox_id)
        seen: list[str] = []
        ex = sbx.run_code("let x = 6 * 7; console.log('x is', x); x", on_stdout=lambda m: seen.append(m.line))
        assert ex.error is None, ex.error
        assert ex.logs.stdout == ["x is 42\n"], ex.logs
        assert seen == ["x is 42\n"]
        assert ex.text == "42"
        # state kept, the short name accepted, top-level await
        ex = sbx.run_code("await Promise.resolve(x + 1)", language="js")
        assert ex.error is None and ex.text == "43", (ex.error, ex.text)
        ex = sbx.run_code("\nnull.boom", language="javascript")
        assert ex.error is not None and ex.error.name == "TypeError", ex.error
        assert "<cell-" in ex.error.traceback, ex.error.traceback
        # the sandbox's own language's default context comes first; python is another one
        assert [c.language for c in sbx.list_code_contexts()][0] == "javascript"
        assert sbx.run_code("x = 5; x", language="python").text == "5"
        assert sbx.run_code("x").text == "42"
        assert {s.sandbox_id: s.template_id for s in Sandbox.list().next_items()}[sbx.sandbox_id] == "javascript"
    with Sandbox.create(template="typescript") as sbx:
        e2b_env.session_ids.add(sbx.sandbox_id)
        ex = sbx.run_code("const n: number = 5;\nfunction twice(v: number): number { return v * 2 }\ntwice(n)",
                          language="ts")
        assert ex.error is None and ex.text == "10", (ex.error, ex.text)


def test_code_and_commands_find_files_under_home_user(e2b_env):
    """E2B's examples write a file with files.write('/home/user/...') and read it from code or a
    command by that path: /home/user is the workspace inside the sandbox too."""
    with Sandbox.create() as sbx:
        e2b_env.session_ids.add(sbx.sandbox_id)
        sbx.files.write("/home/user/data.csv", "a,b\n1,2\n3,4\n")
        ex = sbx.run_code("import pandas as pd\nint(pd.read_csv('/home/user/data.csv').a.sum())")
        assert ex.error is None and ex.text == "4", (ex.error, ex.text)
        ex = sbx.run_code("open('/home/user/out.txt', 'w').write('from code')")
        assert ex.error is None, ex.error
        assert sbx.files.read("/home/user/out.txt") == "from code"
        r = sbx.commands.run("ls /home/user && cat /home/user/out.txt")
        assert r.exit_code == 0 and "data.csv" in r.stdout and "from code" in r.stdout, (r.stdout, r.stderr)


# ---- network options (docs/e2b.md "Network") ---------------------------------------------------
# No test here makes a sandbox open a connection: the sandbox's environment and the policy runboxd
# stores (REST GET /sessions/{id}: an E2B sandbox id is the session id) are checked;
# tests/network tests the traffic itself.

EGRESS_ALLOW = "pypi.example.test"
EGRESS_MAX = "*.example.test"
PROXY = "http://egress:3128"


def assert_status(e: pytest.ExceptionInfo, status: int) -> None:
    """The SDK raises every refusal of E2B's API as SandboxException with its status code."""
    assert getattr(e.value, "status_code", None) == status, (status, e.value)


def network_of(server: rbtest.Server, sid: str):
    r = server.get(f"/sessions/{sid}")
    assert r.status_code == 200, r.text
    return r.json()["execution_options"].get("network")


def test_a_network_needs_runboxd_started_with_egress(e2b_env):
    """Without --egress runboxd gives sandboxes no network: asking for one is refused (403,
    naming the flag), never ignored; asking for none still works."""
    with pytest.raises(SandboxException, match="--egress") as e:
        Sandbox.create(allow_internet_access=True)
    assert_status(e, 403)
    with pytest.raises(SandboxException, match="--egress"):
        Sandbox.create(network=SandboxNetworkOpts(allow_out=["pypi.org"], deny_out=[ALL_TRAFFIC]))
    with Sandbox.create(allow_internet_access=False, network=SandboxNetworkOpts(deny_out=[ALL_TRAFFIC])) as sbx:
        e2b_env.session_ids.add(sbx.sandbox_id)
        assert network_of(e2b_env, sbx.sandbox_id) is False
        info = sbx.get_info()
        assert info.allow_internet_access is False and info.network is None, info
        # nothing to allow: accepted (the sandbox has no network anyway); a network: refused as at create
        sbx.update_network({"allow_internet_access": False})
        with pytest.raises(SandboxException, match="--egress") as e:
            sbx.update_network({"allow_out": ["pypi.org"]})
        assert_status(e, 403)
        # the inbound options stay unsupported
        with pytest.raises(SandboxException, match="allowPublicTraffic") as e:
            Sandbox.create(network=SandboxNetworkOpts(allow_public_traffic=True))
        assert_status(e, 400)


@pytest.fixture(scope="module")
def egress_e2b(sandbox_image, tmp_path_factory):
    """A runboxd with --egress=true, the default list pypi.example.test and the maximum
    *.example.test. The egress proxies' outside network is an --internal Docker network of this
    module's own: nothing can leave through it (and no test asks anything to)."""
    work = tmp_path_factory.mktemp("runboxd-e2b-egress")
    keys = work / "api-keys"
    keys.write_text(f"alice sha256:{hashlib.sha256(KEYS['alice'].encode()).hexdigest()}\n")
    net = f"rbt-e2b-egress-{uuid.uuid4().hex[:10]}"
    rbtest.docker("network", "create", "--internal", "--label", "rbtest=1", net)
    s = rbtest.Server(work, ["--api-keys-file", str(keys), "--pool-size", "0", "--egress=true",
                             f"--egress-network={net}", f"--egress-allow={EGRESS_ALLOW}", f"--egress-max={EGRESS_MAX}"])
    try:
        s.start()
        s.http.headers["Authorization"] = f"Bearer {KEYS['alice']}"
        yield s
    finally:
        inst = s.db_instance()
        try:
            rbtest.finish_servers([s])
        finally:
            # the sessions' own networks (runboxd removes them as their sessions end), then ours
            def left() -> list[str]:
                return rbtest.docker("network", "ls", "-q", "--filter", f"label=runbox.instance={inst}",
                                     check=False).split() if inst else []
            end = time.monotonic() + 30
            while left() and time.monotonic() < end:
                time.sleep(0.5)
            for nid in left():
                rbtest.docker("network", "rm", nid, check=False)
            rbtest.docker("network", "rm", net, check=False)


@pytest.fixture
def egress_env(egress_e2b, monkeypatch):
    point_e2b_sdk_at(monkeypatch, egress_e2b, KEYS["alice"])
    return egress_e2b


def test_allow_internet_access_is_the_operators_default_list(egress_env):
    with Sandbox.create(allow_internet_access=True) as sbx:
        egress_env.session_ids.add(sbx.sandbox_id)
        assert network_of(egress_env, sbx.sandbox_id) == {"allow": [EGRESS_ALLOW], "deny": []}
        assert sbx.run_code("import os; os.environ['HTTPS_PROXY']").text == PROXY
        r = sbx.commands.run("echo $HTTPS_PROXY $HTTP_PROXY")
        assert r.stdout.split() == [PROXY, PROXY], r
        info = sbx.get_info()
        assert info.allow_internet_access is True, info
        assert info.network == {"allow_out": [EGRESS_ALLOW], "deny_out": [ALL_TRAFFIC]}, info.network


def test_network_allow_out_is_the_sandboxs_allow_list_and_update_network_changes_it(egress_env):
    with Sandbox.create(network=SandboxNetworkOpts(allow_out=["api.example.test"], deny_out=[ALL_TRAFFIC])) as sbx:
        sid = sbx.sandbox_id
        egress_env.session_ids.add(sid)
        assert network_of(egress_env, sid) == {"allow": ["api.example.test"], "deny": []}
        assert sbx.run_code("import os; os.environ['HTTPS_PROXY']").text == PROXY
        assert sbx.get_info().network == {"allow_out": ["api.example.test"], "deny_out": [ALL_TRAFFIC]}

        # what update_network sends replaces the policy; the callable form of E2B's examples too
        sbx.update_network({"allow_out": ["pypi.example.test", "*.cdn.example.test"],
                            "deny_out": ["bad.cdn.example.test"]})
        assert network_of(egress_env, sid) == {"allow": ["pypi.example.test", "*.cdn.example.test"],
                                               "deny": ["bad.cdn.example.test"]}
        Sandbox.update_network(sid, {"allow_out": ["api.example.test"], "deny_out": lambda ctx: [ctx.all_traffic]})
        assert network_of(egress_env, sid) == {"allow": ["api.example.test"], "deny": []}
        sbx.update_network({"allow_internet_access": True})
        assert network_of(egress_env, sid) == {"allow": [EGRESS_ALLOW], "deny": []}

        # refusals leave the policy as it was
        with pytest.raises(SandboxException, match="--egress-max") as e:
            sbx.update_network({"allow_out": ["evil.other.test"]})
        assert_status(e, 403)
        with pytest.raises(SandboxException, match="--egress-cidr") as e:
            sbx.update_network({"allow_out": ["10.0.0.1"]})
        assert_status(e, 400)
        assert network_of(egress_env, sid) == {"allow": [EGRESS_ALLOW], "deny": []}

        # nothing allowed: the sandbox keeps its proxy, which lets nothing through
        sbx.update_network({"allow_internet_access": False})
        assert network_of(egress_env, sid) == {"allow": [], "deny": []}
        info = sbx.get_info()
        assert info.allow_internet_access is False and info.network["allow_out"] == [], info
        with pytest.raises(SandboxNotFoundException):
            Sandbox.update_network("s_" + "0" * 24, {"allow_out": ["api.example.test"]})


def test_a_sandbox_made_without_a_network_keeps_none(egress_env):
    """runbox's default is no network (E2B's is the internet): such a sandbox has no proxy, no
    proxy variables, and no network to give a policy to later."""
    with Sandbox.create() as sbx:
        egress_env.session_ids.add(sbx.sandbox_id)
        assert network_of(egress_env, sbx.sandbox_id) is False
        assert sbx.run_code("import os; os.environ.get('HTTPS_PROXY')").text is None
        assert sbx.get_info().allow_internet_access is False
        sbx.update_network({})  # nothing allowed: already so
        with pytest.raises(SandboxException, match="created without a network") as e:
            sbx.update_network({"allow_out": ["api.example.test"]})
        assert_status(e, 409)
        assert network_of(egress_env, sbx.sandbox_id) is False


def test_network_options_runbox_cannot_honour_are_refused(egress_env):
    with pytest.raises(SandboxException, match="--egress-cidr") as e:
        Sandbox.create(network=SandboxNetworkOpts(allow_out=["10.0.0.1"], deny_out=[ALL_TRAFFIC]))
    assert "10.0.0.1" in str(e.value) and "IP address" in str(e.value), e.value
    assert_status(e, 400)
    with pytest.raises(SandboxException, match="--egress-cidr"):
        Sandbox.create(network=SandboxNetworkOpts(allow_out=["api.example.test"], deny_out=["8.8.8.0/24"]))
    with pytest.raises(SandboxException, match="--egress-max") as e:
        Sandbox.create(network=SandboxNetworkOpts(allow_out=["evil.other.test"], deny_out=[ALL_TRAFFIC]))
    assert e.value.status_code == 403 and "evil.other.test" in str(e.value), e.value
    with pytest.raises(SandboxException, match="allow_internet_access is false") as e:
        Sandbox.create(allow_internet_access=False, network=SandboxNetworkOpts(allow_out=["api.example.test"]))
    assert_status(e, 400)
    with pytest.raises(SandboxException, match="allowPublicTraffic"):
        Sandbox.create(allow_internet_access=True, network=SandboxNetworkOpts(allow_public_traffic=True))
    with pytest.raises(SandboxException, match="egressProxy"):
        Sandbox.create(network=SandboxNetworkOpts(allow_out=["api.example.test"],
                                                  egress_proxy={"address": "proxy.example.test:1080"}))
    # none of them made a sandbox
    assert Sandbox.list().next_items() == []


def test_isolation_by_metadata(e2b_env):
    """metadata["runbox.isolation"] (docs/e2b.md): the session's execution_options.isolation; a runtime no
    engine offers (this server's one engine offers runc only) fails the create naming it."""
    with Sandbox.create(metadata={"runbox.isolation": "container"}) as sbx:
        e2b_env.session_ids.add(sbx.sandbox_id)
        assert e2b_env.session(sbx.sandbox_id)["execution_options"]["isolation"] == "container"
        assert sbx.run_code("6 * 7").text == "42"
    with pytest.raises(ServiceBusyException) as e:  # 503: no engine offers it
        Sandbox.create(metadata={"runbox.isolation": "gvisor"})
    assert "runsc" in str(e.value) and "gvisor" in str(e.value), e.value
    with pytest.raises((SandboxException, InvalidArgumentException)) as e:
        Sandbox.create(metadata={"runbox.isolation": "kata"})
    assert "isolation" in str(e.value), e.value

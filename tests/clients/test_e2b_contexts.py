"""E2B's code contexts and per-run environment variables, through the unmodified SDK (sync and
async) against a real runboxd and real Docker sandboxes: create, list, restart and remove
contexts, run_code(language=...) and run_code(context=...) in one sandbox (each context its own
interpreter, variables and working directory, the files shared), run_code(envs=...) in every
language; and the hostile cases (too many contexts, an unknown id, another sandbox's or another
key's context, bad envs) answered with a clear 4xx that the SDK raises.
"""

from __future__ import annotations

import asyncio

import pytest
import requests

from rbfixtures import keyed_server_fixture, point_e2b_sdk_at

from e2b import NotFoundException, SandboxException
from e2b_code_interpreter import AsyncSandbox, Context, Sandbox

KEYS = {"alice": "e2b_" + "c3" * 20, "bob": "e2b_" + "d4" * 20}
CONTEXTS_MAX = 8  # core/core.h CORE_CONTEXTS_MAX

e2b_server = keyed_server_fixture("runboxd-e2b-contexts", KEYS, name="e2b_server")


@pytest.fixture
def e2b_env(e2b_server, monkeypatch):
    point_e2b_sdk_at(monkeypatch, e2b_server, KEYS["alice"])
    return e2b_server


@pytest.fixture
def sbx(e2b_env):
    s = Sandbox.create(timeout=600)
    e2b_env.session_ids.add(s.sandbox_id)
    yield s
    s.kill()


def test_contexts_have_their_own_state_and_cwd_and_share_the_files(sbx):
    contexts = sbx.list_code_contexts()
    assert [c.language for c in contexts][:2] == ["python", "javascript"], contexts
    assert {"typescript", "bash"} <= {c.language for c in contexts}
    assert all(c.cwd == "/home/user" for c in contexts), contexts

    ctx = sbx.create_code_context()
    last = sbx.list_code_contexts()[-1]
    assert (last.id, last.language, last.cwd) == (ctx.id, "python", "/home/user")

    assert sbx.run_code("x = 'default'").error is None
    assert sbx.run_code("x = 'mine'", context=ctx).error is None
    assert sbx.run_code("x").text == "default"
    assert sbx.run_code("x", context=ctx).text == "mine"
    # the default context is named by its language too
    assert sbx.run_code("x", language="python").text == "default"

    sbx.files.make_dir("/home/user/sub")
    sub = sbx.create_code_context(cwd="/home/user/sub", language="python")
    assert sub.cwd == "/home/user/sub"
    last = sbx.list_code_contexts()[-1]
    assert (last.id, last.cwd) == (sub.id, "/home/user/sub")
    ex = sbx.run_code("import os; open('here.txt', 'w').write('sub'); os.getcwd()", context=sub)
    assert ex.error is None and ex.text.rstrip("'").endswith("/sub"), (ex.error, ex.text)
    assert sbx.files.read("/home/user/sub/here.txt") == "sub"
    assert sbx.run_code("open('sub/here.txt').read()").text == "sub"  # the default one stays in /home/user


def test_restart_and_remove(sbx):
    ctx = sbx.create_code_context()
    sbx.run_code("x = 1", context=ctx)
    sbx.run_code("y = 2")
    sbx.restart_code_context(ctx.id)
    ex = sbx.run_code("x", context=ctx)
    assert ex.error is not None and ex.error.name == "NameError", ex.error
    assert ex.error.value == "name 'x' is not defined"
    assert sbx.run_code("y").text == "2"

    sbx.remove_code_context(ctx)
    assert ctx.id not in [c.id for c in sbx.list_code_contexts()]
    with pytest.raises(NotFoundException):
        sbx.run_code("1", context=ctx)
    with pytest.raises(NotFoundException):
        sbx.remove_code_context(ctx.id)
    with pytest.raises(NotFoundException):
        sbx.restart_code_context(ctx.id)

    # the default context restarts too; a default context cannot be removed
    sbx.restart_code_context("python")
    assert sbx.run_code("y").error.name == "NameError"
    with pytest.raises(SandboxException, match="409.*default context"):
        sbx.remove_code_context("python")


def test_every_language_in_one_sandbox(sbx):
    ex = sbx.run_code("console.log('Hello, World!')", language="js")
    assert ex.logs.stdout == ["Hello, World!\n"], ex
    assert sbx.run_code("const a = 40; a + 2", language="javascript").text == "42"
    assert sbx.run_code("a", language="js").text == "40"
    assert sbx.run_code("await Promise.resolve('Hello World!')", language="js").text == "Hello World!"
    ex = sbx.run_code("const message: string = 'Hello, World!'; console.log(message)", language="ts")
    assert ex.logs.stdout == ["Hello, World!\n"], (ex.logs, ex.error)
    sbx.run_code("cd /tmp; export KEPT=yes", language="bash")
    assert sbx.run_code("echo $KEPT; pwd", language="bash").logs.stdout == ["yes\n/tmp\n"]
    js = sbx.create_code_context(language="js")
    assert js.language == "javascript"
    assert sbx.run_code("typeof a", context=js).text == "undefined"
    # a file written by one language is read by another
    sbx.run_code("echo shared > /home/user/s.txt", language="bash")
    assert sbx.run_code("open('/home/user/s.txt').read()").text == "shared\n"


def test_envs_hold_for_one_run_in_every_language(e2b_env):
    with Sandbox.create(envs={"TEST_ENV_VAR": "supertest"}, timeout=600) as sbx:
        e2b_env.session_ids.add(sbx.sandbox_id)
        py = "import os; os.getenv('FOO', 'default')"
        assert sbx.run_code(py, envs={"FOO": "bar"}).text == "bar"
        assert sbx.run_code(py).text == "default"
        glob = "import os; os.getenv('TEST_ENV_VAR')"
        assert sbx.run_code(glob, envs={"TEST_ENV_VAR": "overwrite"}).text == "overwrite"
        assert sbx.run_code(glob).text == "supertest"

        assert sbx.run_code("echo $FOO", envs={"FOO": "bar"}, language="bash").logs.stdout == ["bar\n"]
        assert sbx.run_code("echo ${FOO:-default}", language="bash").logs.stdout == ["default\n"]
        ex = sbx.run_code("echo $TEST_ENV_VAR", envs={"TEST_ENV_VAR": "overwrite"}, language="bash")
        assert ex.logs.stdout == ["overwrite\n"]
        assert sbx.run_code("echo $TEST_ENV_VAR", language="bash").logs.stdout == ["supertest\n"]

        assert sbx.run_code("process.env.FOO", envs={"FOO": "bar"}, language="js").text == "bar"
        assert sbx.run_code("process.env.FOO || 'default'", language="js").text == "default"
        ex = sbx.run_code("process.env.TEST_ENV_VAR", envs={"TEST_ENV_VAR": "overwrite"}, language="js")
        assert ex.text == "overwrite"
        assert sbx.run_code("process.env.TEST_ENV_VAR", language="js").text == "supertest"

        with pytest.raises(SandboxException, match="400.*not a variable name"):
            sbx.run_code("1", envs={"1BAD": "x"})


def test_hostile_contexts_get_a_clear_4xx(e2b_env, monkeypatch):
    with Sandbox.create(timeout=600) as a, Sandbox.create(timeout=600) as b:
        e2b_env.session_ids.update({a.sandbox_id, b.sandbox_id})
        made = [a.create_code_context(language="bash") for _ in range(CONTEXTS_MAX)]
        with pytest.raises(SandboxException, match="409.*remove one first"):
            a.create_code_context()
        a.remove_code_context(made[0])
        a.create_code_context()  # room again

        with pytest.raises(NotFoundException, match="no context 'ctx_nope'"):
            a.run_code("1", context=Context("ctx_nope", "python", "/home/user"))
        # a context belongs to its sandbox: another sandbox does not know its id
        with pytest.raises(NotFoundException):
            b.run_code("echo hi", context=made[1])
        with pytest.raises(NotFoundException):
            b.remove_code_context(made[1])
        assert made[1].id in [c.id for c in a.list_code_contexts()]

        base = e2b_env.url + "/e2b"
        headers = {"E2b-Sandbox-Id": a.sandbox_id, "E2b-Sandbox-Port": "49999",
                   "X-Access-Token": a._envd_access_token or ""}
        r = requests.post(base + "/execute", json={"code": "1", "language": "python", "context_id": made[1].id},
                          headers=headers, timeout=30)
        assert r.status_code == 400 and "not both" in r.text, r.text
        r = requests.post(base + "/contexts", json={"language": "cobol"}, headers=headers, timeout=30)
        assert r.status_code == 400 and "no other kernel" in r.text, r.text
        r = requests.post(base + "/contexts", json={"cwd": "relative/dir"}, headers=headers, timeout=30)
        assert r.status_code == 400 and "absolute path" in r.text, r.text

        # bob's key does not reach alice's sandbox, its contexts included
        monkeypatch.setenv("E2B_API_KEY", KEYS["bob"])
        with pytest.raises(Exception):
            Sandbox.connect(a.sandbox_id).run_code("1", context=made[1])


def test_contexts_and_envs_with_the_async_sdk(e2b_env):
    async def flow():
        sbx = await AsyncSandbox.create(timeout=600)
        e2b_env.session_ids.add(sbx.sandbox_id)
        try:
            ctx = await sbx.create_code_context(language="python")
            assert (await sbx.list_code_contexts())[-1].id == ctx.id
            await sbx.run_code("x = 1", context=ctx)
            assert (await sbx.run_code("x", context=ctx)).text == "1"
            assert (await sbx.run_code("x")).error.name == "NameError"
            await sbx.restart_code_context(ctx)
            assert (await sbx.run_code("x", context=ctx)).error.name == "NameError"
            assert (await sbx.run_code("const v = 3; v * 2", language="js")).text == "6"
            ex = await sbx.run_code("echo $FOO", envs={"FOO": "bar"}, language="bash")
            assert ex.logs.stdout == ["bar\n"]
            ex = await sbx.run_code("import os; os.getenv('FOO', 'default')", envs={"FOO": "bar"}, context=ctx)
            assert ex.text == "bar"
            assert (await sbx.run_code("import os; os.getenv('FOO', 'default')", context=ctx)).text == "default"
            await sbx.remove_code_context(ctx.id)
            assert ctx.id not in [c.id for c in await sbx.list_code_contexts()]
            with pytest.raises(NotFoundException):
                await sbx.run_code("1", context=ctx)
        finally:
            await sbx.kill()

    asyncio.run(flow())


def wait_busy(server, sid: str) -> None:
    import rbtest
    rbtest.wait_until(lambda: server.get(f"/sessions/{sid}").json().get("status") == "busy",
                      "the cell is running", deadline=120)


def test_a_sandbox_killed_during_run_code_breaks_the_stream(e2b_env):
    """As on E2B: the SDK raises TimeoutException (the sandbox was killed while the request was in
    progress), not an execution error, when the sandbox ends under a running cell."""
    import threading
    from e2b import TimeoutException

    sbx = Sandbox.create(timeout=600)
    e2b_env.session_ids.add(sbx.sandbox_id)
    caught: list[BaseException] = []
    ran: list = []

    def run_it():
        try:
            ran.append(sbx.run_code("import time; time.sleep(300)", timeout=300))
        except BaseException as e:  # noqa: BLE001 (the test looks at what came)
            caught.append(e)

    t = threading.Thread(target=run_it)
    t.start()
    wait_busy(e2b_env, sbx.sandbox_id)
    Sandbox.kill(sbx.sandbox_id)
    t.join(120)
    assert not t.is_alive()
    assert not ran, ran
    assert len(caught) == 1 and isinstance(caught[0], TimeoutException), caught
    assert "killed while the request was in progress" in str(caught[0])


def test_a_sandbox_killed_during_run_code_breaks_the_stream_async(e2b_env):
    from e2b import TimeoutException

    async def flow():
        sbx = await AsyncSandbox.create(timeout=600)
        e2b_env.session_ids.add(sbx.sandbox_id)
        task = asyncio.create_task(sbx.run_code("import time; time.sleep(300)", timeout=300))
        await asyncio.to_thread(wait_busy, e2b_env, sbx.sandbox_id)
        await sbx.kill()
        with pytest.raises(TimeoutException, match="killed while the request was in progress"):
            await task

    asyncio.run(flow())

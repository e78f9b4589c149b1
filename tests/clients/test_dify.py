"""Dify's code nodes against a real runboxd and real Docker sandboxes. Dify has no client package:
its API server sends each code node to dify-sandbox over HTTP, so this test sends exactly what Dify
sends and checks exactly what Dify parses, from Dify's own code (github.com/langgenius/dify, main):

- api/core/helper/code_executor/code_executor.py: CodeExecutor.execute_code, the request (the URL
  CODE_EXECUTION_ENDPOINT/v1/sandbox/run, the X-Api-Key header, the body {language, code, preload,
  enable_network: True}, httpx timeouts connect 10 / read 60 / write 10) and what it accepts (HTTP
  200, 503 as "unavailable", `code` 0, `data.error` empty, `data.stdout`);
- api/core/helper/code_executor/template_transformer.py: the inputs as base64 JSON, and
  transform_response (the JSON between the <<RESULT>> tags, a dict with string keys);
- api/core/helper/code_executor/python3/python3_transformer.py, javascript/javascript_transformer.py
  and jinja2/jinja2_transformer.py: the runner scripts (and jinja2's preload) the code is wrapped in.

The answers are compared with dify-sandbox's (github.com/langgenius/dify-sandbox:
internal/controller/run.go and base.go, internal/middleware/auth.go, internal/service/run_code.go,
internal/core/runner/output_capture.go). Hostile cases: a bad key (401, no body), a bad language,
a body gin cannot bind, code over --max-body, a timeout, code that raises or exits, a client that
hangs up, runboxd stopping mid-run. Each run must leave no session behind.
"""

from __future__ import annotations

import base64
import json
import re
import threading
import time
from textwrap import dedent

import httpx
import pytest
from pydantic import BaseModel

import rbtest
from rbfixtures import keyed_server_fixture

KEYS = {"dify": "dify-" + "5a" * 16, "other": "other-" + "7c" * 16}
DIFY_TIMEOUT = 6  # --dify-timeout: dify-sandbox's WORKER_TIMEOUT (Dify's compose sets 15)

# A warm pool of 4: most Python runs here claim a ready sandbox (JavaScript ones start theirs).
dify_server = keyed_server_fixture("runboxd-dify", KEYS, ["--pool-size", "4", "--dify-timeout", str(DIFY_TIMEOUT)],
                                   name="dify_server")


# ---- Dify's code executor (code_executor.py), as it is -------------------------------------------

class CodeExecutionError(Exception):
    pass


class CodeExecutionResponse(BaseModel):
    class Data(BaseModel):
        stdout: str | None = None
        error: str | None = None

    code: int
    message: str
    data: Data


CODE_LANGUAGE_TO_RUNNING_LANGUAGE = {"javascript": "nodejs", "jinja2": "python3", "python3": "python3"}


def execute_code(endpoint: str, api_key: str, language: str, preload: str, code: str) -> str:
    """CodeExecutor.execute_code: dify_config's endpoint and key passed in."""
    url = endpoint.rstrip("/") + "/v1/sandbox/run"  # URL(CODE_EXECUTION_ENDPOINT) / "v1" / "sandbox" / "run"
    headers = {"X-Api-Key": api_key}
    data = {
        "language": CODE_LANGUAGE_TO_RUNNING_LANGUAGE.get(language),
        "code": code,
        "preload": preload,
        "enable_network": True,
    }
    timeout = httpx.Timeout(connect=10.0, read=60.0, write=10.0, pool=None)
    try:
        with httpx.Client() as client:
            response = client.post(url, json=data, headers=headers, timeout=timeout)
        if response.status_code == 503:
            raise CodeExecutionError("Code execution service is unavailable")
        elif response.status_code != 200:
            raise Exception(
                f"Failed to execute code, got status code {response.status_code},"
                f" please check if the sandbox service is running"
            )
    except CodeExecutionError as e:
        raise e
    except Exception as e:
        raise CodeExecutionError(
            "Failed to execute code, which is likely a network issue,"
            " please check if the sandbox service is running."
            f" ( Error: {str(e)} )"
        )
    try:
        response_data = response.json()
    except Exception as e:
        raise CodeExecutionError("Failed to parse response") from e
    if (code := response_data.get("code")) != 0:
        raise CodeExecutionError(f"Got error code: {code}. Got error msg: {response_data.get('message')}")
    response_code = CodeExecutionResponse.model_validate(response_data)
    if response_code.data.error:
        raise CodeExecutionError(response_code.data.error)
    return response_code.data.stdout or ""


# ---- the templates (the transformers' runner scripts, as they are) -------------------------------

CODE_PLACEHOLDER = "{{code}}"
INPUTS_PLACEHOLDER = "{{inputs}}"

# python3_transformer.py (with the print override of Dify 1.x; older releases lack it)
PYTHON3_RUNNER = dedent(f"""
    # Override built-in print to add auto-flush for real-time logs
    import builtins
    original_print = builtins.print
    def print(*args, **kwargs):
        kwargs.setdefault('flush', True)
        return original_print(*args, **kwargs)
    builtins.print = print

    # declare main function
    {CODE_PLACEHOLDER}

    import json
    import sys
    from base64 import b64decode

    # decode and prepare input dict
    inputs_obj = json.loads(b64decode('{INPUTS_PLACEHOLDER}').decode('utf-8'))

    # execute main function
    output_obj = main(**inputs_obj)

    # convert output to json and print
    output_json = json.dumps(output_obj, indent=4)
    result = f'''<<RESULT>>{{output_json}}<<RESULT>>'''
    print(result)
    """)

# javascript/javascript_transformer.py
NODEJS_RUNNER = dedent(f"""
    // declare main function
    {CODE_PLACEHOLDER}

    // decode and prepare input object
    var inputs_obj = JSON.parse(Buffer.from('{INPUTS_PLACEHOLDER}', 'base64').toString('utf-8'))

    // execute main function
    var output_obj = main(inputs_obj)

    // convert output to json and print
    var output_json = JSON.stringify(output_obj)
    var result = `<<RESULT>>${{output_json}}<<RESULT>>`
    console.log(result)
    """)

# jinja2/jinja2_transformer.py: its runner and its preload
JINJA2_RUNNER = dedent(f"""
    # declare main function
    def main(**inputs):
        import jinja2
        template = jinja2.Template('''{CODE_PLACEHOLDER}''')
        return template.render(**inputs)

    import json
    from base64 import b64decode

    # decode and prepare input dict
    inputs_obj = json.loads(b64decode('{INPUTS_PLACEHOLDER}').decode('utf-8'))

    # execute main function
    output = main(**inputs_obj)

    # convert output and print
    result = f'''<<RESULT>>{{output}}<<RESULT>>'''
    print(result)

    """)
JINJA2_PRELOAD = dedent("""
    import jinja2
    from base64 import b64decode

    def _jinja2_preload_():
        # prepare jinja2 environment, load template and render before to avoid sandbox issue
        template = jinja2.Template('{{s}}')
        template.render(s='a')

    if __name__ == '__main__':
        _jinja2_preload_()

    """)

RUNNERS = {"python3": (PYTHON3_RUNNER, ""), "javascript": (NODEJS_RUNNER, ""),
           "jinja2": (JINJA2_RUNNER, JINJA2_PRELOAD)}


def transform_caller(language: str, code: str, inputs: dict) -> tuple[str, str]:
    """TemplateTransformer.transform_caller / assemble_runner_script / serialize_inputs."""
    runner, preload = RUNNERS[language]
    inputs_str = base64.b64encode(json.dumps(inputs, ensure_ascii=False).encode()).decode("utf-8")
    return runner.replace(CODE_PLACEHOLDER, code).replace(INPUTS_PLACEHOLDER, inputs_str), preload


def transform_response(language: str, response: str) -> dict:
    """TemplateTransformer.transform_response (Jinja2's: {"result": the text})."""
    result = re.search(r"<<RESULT>>(.*)<<RESULT>>", response, re.DOTALL)
    if not result:
        raise ValueError(f"Failed to parse result: no result tag found in response. Response: {response[:200]}...")
    if language == "jinja2":
        return {"result": result.group(1)}
    out = json.loads(result.group(1))
    assert isinstance(out, dict) and all(isinstance(k, str) for k in out), out
    return out


def code_node(server: rbtest.Server, language: str, code: str, inputs: dict, key: str = KEYS["dify"]) -> dict:
    """CodeExecutor.execute_workflow_code_template against runboxd."""
    runner, preload = transform_caller(language, code, inputs)
    return transform_response(language, execute_code(server.url, key, language, preload, runner))


def raw_run(server: rbtest.Server, body, key: str | None = KEYS["dify"], **kw) -> httpx.Response:
    headers = {"X-Api-Key": key} if key is not None else {}
    headers.update(kw.pop("headers", {}))
    if isinstance(body, (bytes, str)):
        return httpx.post(server.url + "/v1/sandbox/run", content=body, headers=headers, timeout=90, **kw)
    return httpx.post(server.url + "/v1/sandbox/run", json=body, headers=headers, timeout=90, **kw)


def live_sessions(server: rbtest.Server, key: str = KEYS["dify"]) -> list[dict]:
    r = server.get("/sessions", headers={"Authorization": f"Bearer {key}"})
    assert r.status_code == 200, r.text
    return r.json()["sessions"]


def wait_no_sessions(server: rbtest.Server, deadline: float = 30) -> None:
    rbtest.wait_until(lambda: not live_sessions(server), "every Dify run's session is deleted", deadline)


# ---- Dify's code nodes ----------------------------------------------------------------------------

PY_DEFAULT = dedent("""
    def main(arg1: str, arg2: str):
        return {
            "result": arg1 + arg2,
        }
    """)
JS_DEFAULT = dedent("""
    function main({arg1, arg2}) {
        return {
            result: arg1 + arg2
        }
    }
    """)


def test_python3_code_node(dify_server):
    """Dify's default Python node, unicode and nested inputs; each run in a fresh interpreter."""
    assert code_node(dify_server, "python3", PY_DEFAULT, {"arg1": "Hello, ", "arg2": "Dify ✓"}) == \
        {"result": "Hello, Dify ✓"}
    code = dedent("""
        import statistics
        def main(items: list, meta: dict) -> dict:
            print("a log line")  # Dify's print override flushes it; the result tag comes after
            return {"mean": statistics.mean(items), "n": len(items), "tags": sorted(meta), "none": None}
        """)
    assert code_node(dify_server, "python3", code, {"items": [1, 2, 3, 6], "meta": {"b": 1, "a": 2}}) == \
        {"mean": 3, "n": 4, "tags": ["a", "b"], "none": None}
    # stateless: what one run leaves (a global, a file) the next does not see
    keep = ("def main():\n    global leak\n    leak = 1\n    open('/tmp/dify-leak', 'w').write('x')\n"
            "    return {'ok': True}")
    assert code_node(dify_server, "python3", keep, {}) == {"ok": True}
    probe = ("import os\ndef main():\n"
             "    return {'leak': 'leak' in globals(), 'file': os.path.exists('/tmp/dify-leak')}")
    assert code_node(dify_server, "python3", probe, {}) == {"leak": False, "file": False}
    wait_no_sessions(dify_server)


def test_javascript_code_node(dify_server):
    """Dify's default JavaScript node (language nodejs), with Buffer, console.log and console.error."""
    code = JS_DEFAULT.replace("return {", "console.error('to stderr')\n        return {")
    assert code_node(dify_server, "javascript", code, {"arg1": "1", "arg2": "2"}) == {"result": "12"}
    wait_no_sessions(dify_server)


def test_jinja2_template_node(dify_server):
    """Dify's template node runs jinja2 in python3 after its preload; the image may lack jinja2, and
    then the node fails readably (docs/dify.md says how to add it)."""
    deps = httpx.get(dify_server.url + "/v1/sandbox/dependencies", params={"language": "python3"},
                     headers={"X-Api-Key": KEYS["dify"]}, timeout=60).json()
    names = {d["name"].lower() for d in deps["data"]["dependencies"]}
    template = "Hello {{ name }}! {% for i in items %}[{{ i }}]{% endfor %}"
    if "jinja2" in names:
        assert code_node(dify_server, "jinja2", template, {"name": "Dify", "items": [1, 2]}) == \
            {"result": "Hello Dify! [1][2]"}
    else:
        with pytest.raises(CodeExecutionError) as e:
            code_node(dify_server, "jinja2", template, {"name": "Dify", "items": [1, 2]})
        assert str(e.value).startswith("process exited with code 255\n"), str(e.value)
        assert "No module named 'jinja2'" in str(e.value), str(e.value)


def test_code_that_raises_or_exits(dify_server):
    """HTTP 200 and code 0; the failure is data.error as dify-sandbox builds it, which Dify raises."""
    bad = "def main(x: int) -> dict:\n    raise ValueError('bad input: ' + str(x))"
    with pytest.raises(CodeExecutionError) as e:
        code_node(dify_server, "python3", bad, {"x": 7})
    msg = str(e.value)
    assert msg.startswith("process exited with code 255\nTraceback (most recent call last):\n"), msg
    assert "\nValueError: bad input: 7\n" in msg, msg
    # the sealed run says so after the traceback (Dify always asks for a network)
    assert msg.rstrip().endswith("enable_network was asked: this server gives sandboxes no network (the operator "
                                 "can allow listed hosts with --egress)]"), msg

    # sys.exit(n) exits with n, as the process would (0 would be a success)
    runner, _ = transform_caller("python3", "import sys\ndef main():\n    print('half')\n    sys.exit(3)", {})
    r = raw_run(dify_server, {"language": "python3", "code": runner, "preload": "", "enable_network": True})
    assert r.status_code == 200 and r.json()["code"] == 0, r.text
    d = r.json()["data"]
    assert d["exit_code"] == 3 and d["stdout"] == "half\n" and d["error"].startswith("process exited with code 3"), d

    with pytest.raises(CodeExecutionError) as e:
        code_node(dify_server, "javascript", "function main() { throw new Error('boom') }", {})
    assert str(e.value).startswith("process exited with code 1\n") and "Error: boom" in str(e.value), str(e.value)
    wait_no_sessions(dify_server)


def test_stderr_of_a_success_is_not_an_error(dify_server):
    """dify-sandbox keeps stderr apart from error on a success (run_code.go); so does runbox."""
    r = raw_run(dify_server, {"language": "python3", "code": "import sys\nsys.stderr.write('INFO: x\\n')\nprint(1)"})
    d = r.json()["data"]
    assert r.status_code == 200 and d["stdout"] == "1\n" and d["error"] == "" and d["exit_code"] == 0, r.text
    assert d["stderr"].startswith("INFO: x\n"), d


def test_timeout(dify_server):
    """Past --dify-timeout the run ends with output_capture.go's words; what it printed is kept."""
    code = "import time\ndef main():\n    print('started')\n    time.sleep(120)\n    return {}"
    t0 = time.monotonic()
    with pytest.raises(CodeExecutionError) as e:
        code_node(dify_server, "python3", code, {})
    took = time.monotonic() - t0
    assert str(e.value).startswith("process exited with code -1\nerror: timeout\n"), str(e.value)
    assert DIFY_TIMEOUT - 0.5 <= took < DIFY_TIMEOUT + 40, took
    wait_no_sessions(dify_server)


def test_preload_runs_before_the_code(dify_server):
    """dify-sandbox runs the preload in the code's process, first; one that fails stops the run."""
    r = raw_run(dify_server, {"language": "python3", "preload": "x = 41\nprint('pre')", "code": "print(x + 1)"})
    assert r.json()["data"]["stdout"] == "pre\n42\n" and r.json()["data"]["error"] == "", r.text
    r = raw_run(dify_server, {"language": "python3", "preload": "raise RuntimeError('no')", "code": "print('ran')"})
    d = r.json()["data"]
    assert d["exit_code"] == 255 and "ran" not in d["stdout"] and "RuntimeError: no" in d["error"], d


def test_network_asked_but_sealed(dify_server):
    """Dify always sends enable_network: true. Without --egress the run is sealed instead of
    refusing every run; a run that fails says why it had no network in its stderr and error, a run
    that works says nothing (a note on every node's output would be noise), and the log says it
    once."""
    code = dedent("""
        import urllib.request
        def main():
            urllib.request.urlopen('http://example.com', timeout=3)
            return {}
        """)
    with pytest.raises(CodeExecutionError) as e:
        code_node(dify_server, "python3", code, {})
    assert "had no network although enable_network was asked" in str(e.value), str(e.value)
    assert "--egress" in str(e.value), str(e.value)
    for network in (True, False):
        r = raw_run(dify_server, {"language": "python3", "code": "print(1)", "enable_network": network})
        assert r.json()["data"] == {"stdout": "1\n", "stderr": "", "error": "", "exit_code": 0}, r.text
    assert dify_server.log_text().count("dify: runs ask for a network (enable_network) and run without one") == 1


# ---- refusals ---------------------------------------------------------------------------------

def test_bad_key_is_dify_sandboxs_bare_401(dify_server):
    """middleware.Auth: c.AbortWithStatus(401), no body; Dify reports the status."""
    body = {"language": "python3", "code": "print(1)", "preload": "", "enable_network": True}
    for key in ("wrong-key", None, ""):
        r = raw_run(dify_server, body, key=key)
        assert r.status_code == 401 and r.content == b"", (key, r.status_code, r.content)
        assert "content-type" not in r.headers, r.headers
    with pytest.raises(CodeExecutionError) as e:
        execute_code(dify_server.url, "wrong-key", "python3", "", "print(1)")
    assert "got status code 401" in str(e.value), str(e.value)
    r = httpx.get(dify_server.url + "/v1/sandbox/dependencies", params={"language": "python3"},
                  headers={"X-Api-Key": "wrong-key"})
    assert r.status_code == 401 and r.content == b""
    # another valid key runs too, as its own caller (its sessions are its own)
    assert code_node(dify_server, "python3", PY_DEFAULT, {"arg1": "a", "arg2": "b"}, key=KEYS["other"]) == \
        {"result": "ab"}


def test_refusals_keep_dify_sandboxs_shapes(dify_server):
    r = raw_run(dify_server, {"language": "ruby", "code": "puts 1"})
    assert r.status_code == 400 and r.json() == {"code": -400, "message": "unsupported language", "data": None}
    # Dify's own name for JavaScript is not the sandbox's (nodejs)
    assert raw_run(dify_server, {"language": "javascript", "code": "1"}).status_code == 400
    r = raw_run(dify_server, {"language": "python3", "code": ""})
    assert r.status_code == 400, r.text
    assert r.json() == {"code": -400, "data": None,
                        "message": "Key: 'Code' Error:Field validation for 'Code' failed on the 'required' tag"}
    r = raw_run(dify_server, {"language": "python3", "code": 5})
    assert r.json()["message"] == "json: cannot unmarshal number into Go struct field .code of type string", r.text
    r = raw_run(dify_server, b"not json", headers={"Content-Type": "application/json"})
    assert r.status_code == 400 and r.json()["code"] == -400, r.text
    # gin's ShouldBind (any other Content-Type) leaves the status at 200
    r = raw_run(dify_server, b'{"language": "python3"}', headers={"Content-Type": "text/plain"})
    assert r.status_code == 200 and r.json()["code"] == -400, r.text
    # nothing was run for any of them
    assert not live_sessions(dify_server)


def test_huge_code_is_refused_clearly(dify_server):
    """Over --max-body (1 MiB by default): HTTP 200 with a negative code, which Dify shows as the
    message (a 413 would read "likely a network issue" in Dify)."""
    code = "x = 1\n" * 200_000  # 1.2 MB
    with pytest.raises(CodeExecutionError) as e:
        execute_code(dify_server.url, KEYS["dify"], "python3", "", code)
    assert str(e.value).startswith("Got error code: -413. Got error msg: the request is "), str(e.value)
    assert "--max-body" in str(e.value), str(e.value)
    assert not live_sessions(dify_server)


def test_a_client_that_hangs_up_leaves_no_session(dify_server):
    """Dify gave up (its read timeout): the run still ends at --dify-timeout and deletes its session."""
    runner, _ = transform_caller("python3", "import time\ndef main():\n    time.sleep(120)", {})
    with pytest.raises(httpx.ReadTimeout):
        httpx.post(dify_server.url + "/v1/sandbox/run", json={"language": "python3", "code": runner},
                   headers={"X-Api-Key": KEYS["dify"]}, timeout=httpx.Timeout(60, read=1.0))
    wait_no_sessions(dify_server, deadline=DIFY_TIMEOUT + 60)


def test_concurrent_nodes(dify_server):
    """Nodes of parallel branches run at once, each in its own interpreter (beyond the warm pool:
    cold sandboxes)."""
    results, errors = {}, []

    def one(i: int) -> None:
        try:
            results[i] = code_node(dify_server, "python3",
                                   "import os\ndef main(i):\n    return {'i': i, 'pid': os.getpid()}", {"i": i})
        except Exception as e:  # noqa: BLE001 (reported below)
            errors.append(repr(e))

    threads = [threading.Thread(target=one, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not errors, errors
    assert sorted(r["i"] for r in results.values()) == list(range(4)), results
    wait_no_sessions(dify_server)


# ---- dependencies, health -------------------------------------------------------------------------

def test_dependencies(dify_server):
    """GET /v1/sandbox/dependencies?language=python3 (what older Dify called), refresh and update."""
    h = {"X-Api-Key": KEYS["dify"]}
    r = httpx.get(dify_server.url + "/v1/sandbox/dependencies", params={"language": "python3"}, headers=h, timeout=120)
    assert r.status_code == 200 and r.json()["code"] == 0 and r.json()["message"] == "success", r.text
    deps = r.json()["data"]["dependencies"]
    assert all(set(d) == {"name", "version"} for d in deps), deps[:3]
    assert {"numpy", "pandas"} <= {d["name"] for d in deps}, deps
    r = httpx.get(dify_server.url + "/v1/sandbox/dependencies/refresh", params={"language": "python3"}, headers=h,
                  timeout=120)
    assert r.json()["data"]["dependencies"] == deps
    r = httpx.post(dify_server.url + "/v1/sandbox/dependencies/update", params={"language": "python3"}, headers=h)
    assert r.status_code == 200 and r.json() == {"code": 0, "message": "success", "data": {}}, r.text
    r = httpx.get(dify_server.url + "/v1/sandbox/dependencies", params={"language": "nodejs"}, headers=h)
    assert r.status_code == 400 and r.json()["message"] == "unsupported language"
    r = httpx.get(dify_server.url + "/v1/sandbox/dependencies", headers=h)
    assert r.status_code == 200 and r.json()["code"] == -400 and "'Language'" in r.json()["message"], r.text


def test_health_is_runboxs(dify_server):
    """GET /health stays runbox's (its clients read it); dify-sandbox's "ok" is only ever checked for
    its status (compose's curl -f), which is 200 here too."""
    r = httpx.get(dify_server.url + "/health")
    assert r.status_code == 200 and r.json()["status"] in ("ok", "degraded"), r.text


def test_without_keys_any_key_runs(server):
    """With no --api-keys-file every key is accepted, as everywhere in runbox (loopback only)."""
    assert code_node(server, "python3", PY_DEFAULT, {"arg1": "x", "arg2": "y"}, key="dify-sandbox") == \
        {"result": "xy"}


def test_stopping_runboxd_answers_503(sandbox_image, tmp_path):
    """SIGTERM mid-run: the run is cancelled and answered 503 (Dify: "Code execution service is
    unavailable"), and its session goes."""
    s = rbtest.Server(tmp_path, ["--pool-size", "1", "--dify-timeout", "60"])
    s.start()
    try:
        box: dict = {}

        def run() -> None:
            runner, _ = transform_caller("python3", "import time\ndef main():\n    time.sleep(120)", {})
            try:
                execute_code(s.url, "any", "python3", "", runner)
            except CodeExecutionError as e:
                box["error"] = str(e)

        t = threading.Thread(target=run)
        t.start()
        rbtest.wait_until(lambda: any(x["status"] == "busy" for x in s.get("/sessions").json()["sessions"]),
                          "the run is running")
        containers = [x["container_id"] for x in s.get("/sessions").json()["sessions"]]
        assert s.stop() == 0
        t.join(60)
        assert box.get("error") == "Code execution service is unavailable", box
        assert not any(rbtest.container_exists(c) for c in containers if c)
    finally:
        rbtest.finish_servers([s])

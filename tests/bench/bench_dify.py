"""Dify's code node, measured (tests/bench/run; docs/dify.md): a `POST /v1/sandbox/run` round trip
with the body Dify sends (its Python 3 runner template around Dify's default code node, from
api/core/helper/code_executor/python3/python3_transformer.py of github.com/langgenius/dify), each
beside a baseline of the same run:

- python3 with a warm sandbox ready (the pool refilled between runs, the wait not counted), and
  back to back (the pool refills as it can: what a steady stream of nodes gets);
- nodejs (the pool holds Python and bash only: a JavaScript run starts its sandbox);
- baselines: the same code as a REST execute (`wait: true`) in a live session (the interpreter
  alone), and the Dify run's own steps through REST (create from the pool, execute, delete: three
  calls where Dify makes one).

dify-sandbox itself is not run here (its image is not built on this machine); it starts a fresh
interpreter process per run. Times are the client's (the HTTP call from start to answer).
"""

import base64
import json
import shutil
import tempfile
import time
from textwrap import dedent

import roomlib  # tests/bench/roomlib.py

_summary = roomlib.summary

# Dify's Python 3 runner (python3_transformer.py) around its default code node, inputs as Dify sends them
_PY_RUNNER = dedent("""
    # declare main function
    def main(arg1: str, arg2: str):
        return {
            "result": arg1 + arg2,
        }

    import json
    from base64 import b64decode

    # decode and prepare input dict
    inputs_obj = json.loads(b64decode('%s').decode('utf-8'))

    # execute main function
    output_obj = main(**inputs_obj)

    # convert output to json and print
    output_json = json.dumps(output_obj, indent=4)
    result = f'''<<RESULT>>{output_json}<<RESULT>>'''
    print(result)
    """) % base64.b64encode(json.dumps({"arg1": "a", "arg2": "b"}).encode()).decode()
# its JavaScript runner (javascript_transformer.py) around the default JavaScript node
_JS_RUNNER = dedent("""
    // declare main function
    function main({arg1, arg2}) {
        return {
            result: arg1 + arg2
        }
    }

    // decode and prepare input object
    var inputs_obj = JSON.parse(Buffer.from('%s', 'base64').toString('utf-8'))

    // execute main function
    var output_obj = main(inputs_obj)

    // convert output to json and print
    var output_json = JSON.stringify(output_obj)
    var result = `<<RESULT>>${output_json}<<RESULT>>`
    console.log(result)
    """) % base64.b64encode(json.dumps({"arg1": "a", "arg2": "b"}).encode()).decode()
_WANT = {"result": "ab"}


def _result(stdout):
    start = stdout.index("<<RESULT>>") + len("<<RESULT>>")
    return json.loads(stdout[start:stdout.rindex("<<RESULT>>")])


def run(Runboxd, Client, create_session, delete_session, binary, n, log):
    """The figures (a dict of ms summaries): dify_run_python_warm, dify_run_python_steady,
    dify_run_nodejs, dify_rest_execute_live, dify_rest_create_execute_delete."""
    F = {}
    work = tempfile.mkdtemp(prefix="runbox-bench-dify-")
    rb = None
    pool = 2
    try:
        rb = Runboxd(binary, work, pool, name="runboxd-dify")
        c = Client(rb.port)

        def ready(k=1, timeout=120):
            end = time.time() + timeout
            while time.time() < end:
                _, h = c.json("GET", "/health")
                if ((h or {}).get("pool") or {}).get("ready", 0) >= k:
                    return
                time.sleep(0.01)
            raise RuntimeError("the warm pool did not fill")

        def dify(language, code):
            body = {"language": language, "code": code, "preload": "", "enable_network": True}
            t0 = time.perf_counter()
            status, _, raw = c.call("POST", "/v1/sandbox/run", body, {"X-Api-Key": "bench"})
            dt = (time.perf_counter() - t0) * 1000
            doc = json.loads(raw) if raw else {}
            if status != 200 or doc.get("code") != 0 or (doc.get("data") or {}).get("error"):
                raise RuntimeError("dify run failed: %s %r" % (status, doc))
            if _result(doc["data"]["stdout"]) != _WANT:
                raise RuntimeError("dify run answered %r" % (doc,))
            return dt

        log("dify: python3 run with a warm sandbox ready x%d" % n)
        ready(pool)
        dify("python3", _PY_RUNNER)  # warm-up (the first run loads what the next ones reuse)
        warm = []
        for _ in range(n):
            ready(1)
            warm.append(dify("python3", _PY_RUNNER))
        F["dify_run_python_warm"] = _summary(warm)

        log("dify: python3 runs back to back x%d (the pool refills as it can)" % n)
        ready(pool)
        F["dify_run_python_steady"] = _summary([dify("python3", _PY_RUNNER) for _ in range(n)])

        log("dify: nodejs run x%d (a sandbox started per run)" % n)
        F["dify_run_nodejs"] = _summary([dify("nodejs", _JS_RUNNER) for _ in range(n)])

        log("dify: baselines through REST x%d" % n)
        ready(pool)
        _, s = create_session(c, {"language": "python"})
        sid = s["session_id"]

        def execute(session_id):
            t0 = time.perf_counter()
            st, doc = c.json("POST", "/execute", {"session_id": session_id, "code": _PY_RUNNER, "wait": True})
            dt = (time.perf_counter() - t0) * 1000
            if st != 200 or doc.get("status") != "completed" or _result(doc["stdout"]) != _WANT:
                raise RuntimeError("REST execute failed: %s %r" % (st, doc))
            return dt

        execute(sid)
        F["dify_rest_execute_live"] = _summary([execute(sid) for _ in range(n)])
        delete_session(c, sid)
        steps = []
        for _ in range(n):
            ready(1)
            t0 = time.perf_counter()
            _, s = create_session(c, {"language": "python"})
            execute(s["session_id"])
            delete_session(c, s["session_id"])
            steps.append((time.perf_counter() - t0) * 1000)
        F["dify_rest_create_execute_delete"] = _summary(steps)
        c.close()
    finally:
        if rb is not None:
            roomlib.delete_live_sessions(Client(rb.port), delete_session)  # a failed run leaves no session behind
            rb.stop()
        shutil.rmtree(work, ignore_errors=True)
    return F


def rows(F, fmt):
    """The report's rows for these figures (name, n, min, median, p99, unit, load, target)."""
    out = []
    lat = roomlib.row_adder(F, fmt, out)
    if not F:
        return out
    lat("Dify run (python3), warm sandbox ready", "dify_run_python_warm", "ms, not a container start")
    lat("  baseline: REST execute in a live session", "dify_rest_execute_live")
    lat("  baseline: REST create + execute + delete", "dify_rest_create_execute_delete")
    lat("Dify runs (python3) back to back", "dify_run_python_steady")
    lat("Dify run (nodejs): its sandbox started", "dify_run_nodejs")
    return out

"""The engines' figures of bench.py (unless --no-engines): a third runboxd given two engines
(--engine), the local one and a nested dockerd over TLS (tests/engines' harness), and session
creation and print(1) on each."""
import os
import subprocess
import sys
import time

from benchlib import DOCKER_SOCK, ROOT, Client, Runboxd, create_session, delete_session, execute, health, summary


def bench_engines(binary, work, F, n_create, n_exec):
    """Session create and print(1) on the local engine (its unix socket) beside a remote one: a
    nested dockerd over TLS on an internal network of the benchmark's own (tests/engines'
    enginehub, one node), both given to one runboxd with --engine; placement is steered by
    draining the other engine. Figures engines_create_{local,remote}, engines_exec_{local,remote}."""
    sys.path.insert(0, os.path.join(ROOT, "tests", "engines"))
    import enginehub  # noqa: E402 (needs requests: run through tests/bench/run from the venv, or skip)

    r = subprocess.run([os.path.join(ROOT, "docker", "build-images"), "--engine-node"], capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError("docker/build-images --engine-node failed: " + r.stderr[-2000:])
    with enginehub.EngineCluster(n=1, prefix="runbox-test-engine-bench") as cl:
        node = cl.nodes[0]
        rb = Runboxd(binary, work, 0, ["--engine", "local=unix://" + DOCKER_SOCK, "--engine", "remote=" + node.url,
                                       "--engine-tls-ca", str(cl.ca_pem), "--engine-tls-cert", str(cl.client_cert),
                                       "--engine-tls-key", str(cl.client_key)], name="runboxd-engines")
        c = Client(rb.port)
        try:
            end = time.time() + 60
            while not all(e.get("placing") for e in (health(c)["docker"].get("engines") or [{}])):
                if time.time() > end:
                    raise RuntimeError("the engines are not both placing: %r" % health(c))
                time.sleep(0.2)
            for here, other in (("local", "remote"), ("remote", "local")):
                c.json("POST", "/engines/%s/drain" % other)
                creates, execs, sids = [], [], []
                for _ in range(n_create):
                    dt, sess = create_session(c, {})
                    if not sess["container_id"].startswith(here + "@"):
                        raise RuntimeError("placed on the wrong engine: %r" % sess["container_id"])
                    creates.append(dt)
                    sids.append(sess["session_id"])
                for _ in range(10):  # warm-up
                    execute(c, sids[0])
                for _ in range(n_exec):
                    dt, ok, got = execute(c, sids[0])
                    if not ok:
                        raise RuntimeError("execute failed: %r" % (got,))
                    execs.append(dt)
                F["engines_create_" + here] = summary(creates)
                F["engines_exec_" + here] = summary(execs)
                for sid in sids:
                    delete_session(c, sid)
                c.json("DELETE", "/engines/%s/drain" % other)
        finally:
            c.close()
            rb.stop()

"""Network policies over a session's life and runboxd's: the operator's switches (--egress,
--egress-max) answered in plain words, a policy changed mid-session (PUT
/sessions/{id}/network), policies kept across a SIGKILL of runboxd, the per-session proxy
killed and back, and every proxy container and network gone after DELETE."""

from __future__ import annotations

import re
import uuid

from conftest import EGRESS_DENY
from inet import DEADLINE_S, docker, poll
from nettest import FETCH_PY, egress_objects, fetch, fetcher, named, short


def reached(inet, srv, sid: str, host: str) -> bool:
    """Whether the session gets host's /hello through its proxy (and the server saw it)."""
    tok = uuid.uuid4().hex[:12]
    got = fetch(srv, sid, f"http://{host}/hello?t={tok}")
    if got["status"] == 200:
        assert got["body"].startswith(f"hello from {host}") and inet.requests_seen("www", tok), got
        return True
    assert got["status"] == 403 and got["body"].startswith(f"runbox egress proxy refused {host}:80: "), got
    assert not inet.requests_seen("www", tok)
    return False


def test_network_needs_egress_on(make_server, inet):
    """Without --egress, asking for a network is 403 naming --egress; sealed sessions work."""
    srv = make_server(["--pool-size=0", "--pool-bash-size=0", f"--egress-network={inet.network}"])
    for network in (True, {"allow": ["www.example.test"]}):
        r = srv.post_session({"execution_options": {"network": network}})
        assert r.status_code == 403 and r.json()["error"]["code"] == "forbidden", f"{network}: {r.status_code} {r.text}"
        assert re.search(r"--egress(?![\w-])", r.json()["error"]["message"]), f"the message should name --egress: {r.text}"
    s = srv.create()
    assert s["execution_options"].get("network") is False, short(s)
    assert srv.value(s["session_id"], "import os\nsorted(os.listdir('/sys/class/net'))") == ["lo"]


def test_beyond_egress_max_is_forbidden_naming_the_pattern(egress_server, inet):
    for pattern in ("elsewhere.test", "*.test", "www.example.test:9999"):
        r = egress_server.post_session({"execution_options": {"network": {"allow": ["www.example.test", pattern]}}})
        assert r.status_code == 403, f"{pattern}: {r.status_code} {r.text}"
        msg = r.json()["error"]["message"]
        assert pattern in msg and "--egress-max" in msg, msg
    # within the maximum: answered in canonical form, the operator's deny list added
    s = egress_server.create(network={"allow": ["WWW.Example.Test.", "*.example.test:8080", "www.example.test"]})
    net = s["execution_options"]["network"]
    assert sorted(net["allow"]) == ["*.example.test:8080", "www.example.test"] and net["deny"] == [EGRESS_DENY], net
    # a malformed policy is a 400 naming what is wrong
    for network in ({"allow": "www.example.test"}, {"allow": ["www.example.test"], "other": []}, "yes"):
        r = egress_server.post_session({"execution_options": {"network": network}})
        assert r.status_code == 400, f"{network}: {r.status_code} {r.text}"


def test_policy_changes_mid_session(egress_server, inet):
    """PUT /sessions/{id}/network: the next connection obeys the new policy; a sealed session
    answers 409 (it has no network interface to give a policy to)."""
    sid = fetcher(egress_server, network={"allow": ["www.example.test"]})
    assert reached(inet, egress_server, sid, "www.example.test")
    assert not reached(inet, egress_server, sid, "api.example.test")

    r = egress_server.put_network(sid, {"allow": ["api.example.test"]})
    assert r.status_code == 200, r.text
    assert r.json()["execution_options"]["network"] == {"allow": ["api.example.test"], "deny": [EGRESS_DENY]}, r.text
    assert egress_server.session(sid)["execution_options"]["network"]["allow"] == ["api.example.test"]
    assert reached(inet, egress_server, sid, "api.example.test")
    assert not reached(inet, egress_server, sid, "www.example.test")

    r = egress_server.put_network(sid, False)  # nothing allowed, the interface stays
    assert r.status_code == 200, r.text
    assert not reached(inet, egress_server, sid, "api.example.test")
    r = egress_server.put_network(sid, True)  # the operator's default list
    assert r.status_code == 200, r.text
    assert reached(inet, egress_server, sid, "www.example.test")
    assert not reached(inet, egress_server, sid, "api.example.test")

    r = egress_server.put_network(sid, {"allow": ["elsewhere.test"]})
    assert r.status_code == 403 and "--egress-max" in r.json()["error"]["message"], r.text
    r = egress_server.put_network(sid, {"allow": "www.example.test"})
    assert r.status_code == 400, r.text
    assert reached(inet, egress_server, sid, "www.example.test"), "a refused PUT changed the policy"

    sealed = egress_server.create()["session_id"]
    r = egress_server.put_network(sealed, {"allow": ["www.example.test"]})
    assert r.status_code == 409 and r.json()["error"]["code"] == "conflict", r.text
    assert "network" in r.json()["error"]["message"], r.text


def test_policy_survives_sigkill_of_runboxd(make_server, egress_args, inet):
    srv = make_server(egress_args)
    a = fetcher(srv, network={"allow": ["www.example.test"]})
    b = fetcher(srv, network={"allow": ["api.example.test"]})
    assert reached(inet, srv, a, "www.example.test") and not reached(inet, srv, a, "api.example.test")
    assert reached(inet, srv, b, "api.example.test") and not reached(inet, srv, b, "www.example.test")
    srv.kill9()
    srv.start()
    assert srv.session(a)["execution_options"]["network"]["allow"] == ["www.example.test"]
    assert srv.session(b)["execution_options"]["network"]["allow"] == ["api.example.test"]
    srv.ok(a, FETCH_PY)  # the sandboxes may have been made again; defining it again is harmless
    srv.ok(b, FETCH_PY)
    assert reached(inet, srv, a, "www.example.test") and not reached(inet, srv, a, "api.example.test")
    assert reached(inet, srv, b, "api.example.test") and not reached(inet, srv, b, "www.example.test")
    # and policies still change after the restart
    r = srv.put_network(a, {"allow": ["api.example.test"]})
    assert r.status_code == 200, r.text
    assert reached(inet, srv, a, "api.example.test") and not reached(inet, srv, a, "www.example.test")
    assert not reached(inet, srv, b, "www.example.test")


# requests (pip's vendored copy: the image has no other) names the proxy in its errors.
RGET = ("def rget(url):\n"
        "    from pip._vendor import requests\n"
        "    try:\n"
        "        r = requests.get(url, timeout=20)\n"
        "        return {'status': r.status_code, 'body': r.text[:300]}\n"
        "    except Exception as e:\n"
        "        return {'status': None, 'error': type(e).__name__ + ': ' + str(e)}\n")


def test_killed_proxy_fails_clearly_then_comes_back(egress_server, inet):
    """docker kill of the session's proxy: the next request fails with a proxy error (not a
    hang, not a silent direct connection), and within a bounded poll the proxy is back, with
    the session's policy."""
    sid = fetcher(egress_server, network=True)
    egress_server.ok(sid, RGET)
    assert reached(inet, egress_server, sid, "www.example.test")
    proxies = egress_objects(sid)["containers"]
    assert len(proxies) == 1, proxies
    docker("kill", proxies[0])
    got = egress_server.value(sid, "rget('http://www.example.test/hello')")
    if got["status"] == 200:
        # runboxd had the proxy back before the request: then a proxy of the session runs again
        assert any(docker("inspect", "-f", "{{.State.Running}}", c).strip() == "true"
                   for c in egress_objects(sid)["containers"]), got
    else:
        assert got["status"] is None and "ProxyError" in got["error"], f"not a clear proxy error: {got}"
        assert "timed out" not in got["error"].lower(), f"the request hung: {got}"

    def works():
        g = egress_server.value(sid, "rget('http://www.example.test/hello')")
        return g["status"] == 200 and g["body"].startswith("hello from www.example.test")

    poll(works, "the session's proxy back after docker kill", DEADLINE_S, every=1)
    assert not reached(inet, egress_server, sid, "api.example.test"), "the proxy came back without the policy"


def test_delete_removes_the_proxy_and_its_network(egress_server, inet):
    sessions = [egress_server.create(network=True)["session_id"],
                egress_server.create(language="bash", network={"allow": ["www.example.test"]})["session_id"]]
    found = {}
    for sid in sessions:
        objs = egress_objects(sid)
        assert len(objs["containers"]) == 1 and len(objs["networks"]) == 1, objs
        labels = docker("inspect", "-f", "{{json .Config.Labels}}", objs["containers"][0])
        assert '"runbox.managed":"1"' in labels and f'"runbox.session":"{sid}"' in labels, labels
        net = docker("network", "inspect", "-f", "{{.Internal}}", objs["networks"][0]).strip()
        assert net == "true", f"the session's network must be internal: {objs}"
        found[sid] = objs
    for sid in sessions:
        assert egress_server.delete(sid)["status"] == "ended"
    for sid in sessions:
        poll(lambda s=sid: not any(egress_objects(s).values()), f"proxy and network of {sid} removed after DELETE")
        for cid in found[sid]["containers"]:
            assert docker("ps", "-aq", "--filter", f"id={cid}").strip() == "", cid


def test_sigterm_right_after_delete_leaves_nothing(make_server, egress_args, inet):
    """An operator's usual end: delete the sessions, then stop runboxd (SIGTERM) at once. The
    proxies and networks of the sessions just deleted must not outlive runboxd; and whatever a
    stop left, the next start on the same database removes."""
    srv = make_server(egress_args)
    sids = [srv.create(language=lang, network=True)["session_id"] for lang in ("python", "bash", "javascript")]
    for sid in sids:
        objs = egress_objects(sid)
        assert objs["containers"] and objs["networks"], objs
    srv.ok(sids[0], FETCH_PY + "\nfetch('http://www.example.test/hello')")
    for sid in sids:
        srv.delete(sid)
    assert srv.stop() == 0, srv.log_tail()
    try:  # removals the engine still has in flight may end on their own
        poll(lambda: not any(srv.leftovers().values()), "runboxd's objects gone after its stop", DEADLINE_S / 3)
    except AssertionError:
        pass
    left = named(srv.leftovers())
    srv.start()
    poll(lambda: not any(srv.leftovers().values()), f"the next start removing what the stop left: {left}")
    assert not any(left.values()), f"runboxd's stop left behind {left} (the next start removed them)"


def test_a_keys_egress_limit_replaces_egress_max_for_it(make_server, egress_args, inet, tmp_path):
    """egress= in the keys file: a key's own maximum (in place of --egress-max), or none."""
    import hashlib
    import secrets

    import requests

    keys = {name: secrets.token_hex(16) for name in ("alice", "bob", "carol")}
    limits = {"alice": " egress=api.example.test,*.cdn.example.test", "bob": " egress=none", "carol": ""}
    kf = tmp_path / "keys"
    kf.write_text("".join(f"{n} sha256:{hashlib.sha256(k.encode()).hexdigest()}{limits[n]}\n" for n, k in keys.items()))
    srv = make_server([*egress_args, f"--api-keys-file={kf}"])

    def create(name, network):
        return requests.post(srv.url + "/sessions", json={"execution_options": {"network": network}},
                             headers={"Authorization": "Bearer " + keys[name]}, timeout=DEADLINE_S + 60)

    made = []
    try:
        r = create("alice", {"allow": ["api.example.test"]})
        assert r.status_code == 201, r.text
        made.append(("alice", r.json()["session_id"]))
        assert r.json()["execution_options"]["network"]["allow"] == ["api.example.test"]
        # beyond the key's limit (though within --egress-max), named
        r = create("alice", {"allow": ["www.example.test"]})
        assert r.status_code == 403 and "www.example.test" in r.text and "key" in r.text, r.text
        # true: the server's default list is beyond this key's limit
        r = create("alice", True)
        assert r.status_code == 403 and "key" in r.json()["error"]["message"], r.text
        # egress=none: no network for this key at all, in plain words
        r = create("bob", True)
        assert r.status_code == 403 and "egress=none" in r.json()["error"]["message"], r.text
        # a malformed request is still 400, whatever the key
        r = create("bob", "yes")
        assert r.status_code == 400, r.text
        # no egress=: the server's limits
        r = create("carol", True)
        assert r.status_code == 201, r.text
        made.append(("carol", r.json()["session_id"]))
        # PUT obeys the key's limit too
        sid = made[0][1]
        r = requests.put(f"{srv.url}/sessions/{sid}/network", json={"network": {"allow": ["www.example.test"]}},
                         headers={"Authorization": "Bearer " + keys["alice"]}, timeout=DEADLINE_S)
        assert r.status_code == 403, r.text
    finally:
        for name, sid in made:
            requests.delete(f"{srv.url}/sessions/{sid}", headers={"Authorization": "Bearer " + keys[name]}, timeout=60)

    # a limit that is not host patterns stops runboxd at start, naming the line
    import subprocess

    from nettest import RUNBOX_BIN

    kf.write_text(f"dave sha256:{hashlib.sha256(b'x').hexdigest()} egress=10.0.0.1\n")
    r = subprocess.run([str(RUNBOX_BIN), "--listen", "127.0.0.1:0", "--db", str(tmp_path / "bad.db"),
                        f"--api-keys-file={kf}", *egress_args], capture_output=True, text=True, timeout=60)
    assert r.returncode != 0 and "line 1" in r.stderr and "egress=" in r.stderr and "10.0.0.1" in r.stderr, r.stderr

"""Secrets that sandbox code can use but never see (issue 43; docs/network.md, "Secrets"), end to
end on the test-made internet: a real runboxd with --secrets-file and API keys, real sandboxes
and their egress proxies, the inet servers recording every header they receive.

The secret `api` (bearer) is bound to api.example.test and to private.example.test (a name whose
address --egress-cidr does not allow), `index` (basic) to pypi.example.test; both for the key
alice only. www.example.test is allowed but bound to nothing.
"""

from __future__ import annotations

import hashlib
import json
import re
import secrets
import signal
import sqlite3
import sys
from pathlib import Path

import pytest
import requests

sys.path.insert(0, str(Path(__file__).resolve().parent))

import nettest  # noqa: E402
from inet import DEADLINE_S, poll  # noqa: E402

VALUE = "rbt-secret-" + secrets.token_hex(12)
ROTATED = "rbt-rotated-" + secrets.token_hex(12)
INDEX_USER, INDEX_PASSWORD = "pypiuser", "rbt-index-" + secrets.token_hex(8)
PLACEHOLDER = "runbox-secret-placeholder-api"
KEYS = {name: secrets.token_hex(16) for name in ("alice", "bob", "root")}


def secrets_text(api_value: str | None) -> str:
    lines = ["# the network tests' secrets\n"]
    if api_value is not None:
        lines.append(f"api hosts=api.example.test,private.example.test as=bearer keys=alice value={api_value}\n")
    lines.append(f"index hosts=pypi.example.test as=basic keys=alice value={INDEX_USER}:{INDEX_PASSWORD}\n")
    return "".join(lines)


@pytest.fixture(scope="module")
def srv(inet, egress_args, tmp_path_factory):
    d = tmp_path_factory.mktemp("secrets")
    kf = d / "keys"
    kf.write_text("".join(f"{n} sha256:{hashlib.sha256(k.encode()).hexdigest()}{' role=admin' if n == 'root' else ''}\n"
                          for n, k in KEYS.items()))
    sf = d / "secrets"
    sf.write_text(secrets_text(VALUE))
    s = nettest.Runboxd(d, [*egress_args, f"--api-keys-file={kf}", f"--secrets-file={sf}",
                            f"--egress-ca-file={inet.ca_pem}"])
    s.secrets_file = sf
    s.http.headers["Authorization"] = "Bearer " + KEYS["alice"]
    s.ca_text = inet.ca_text
    s.results = []  # every execution result document, for the leak check at the end
    try:
        yield s.start()
    finally:
        # each session's network goes once its sandbox is gone: waited for here, as a network a
        # session still removes when runboxd stops is left for its next start
        s.end_sessions(s.sessions)
        for sid in s.sessions:
            try:
                poll(lambda: not any(nettest.egress_objects(sid).values()), f"session {sid}'s network removed")
            except AssertionError:
                pass
        problems = s.finish()
        if problems:
            pytest.fail("\n".join(problems), pytrace=False)


def create(srv, key="alice", network=None, language="python"):
    body = {"language": language,
            "execution_options": {"network": network or {"allow": ["www.example.test"], "secrets": ["api", "index"]}}}
    r = requests.post(srv.url + "/sessions", json=body, headers={"Authorization": "Bearer " + KEYS[key]},
                      timeout=DEADLINE_S + 60)
    if r.status_code == 201:
        srv.sessions.append(r.json()["session_id"])
    return r


@pytest.fixture(scope="module")
def sid(srv):
    r = create(srv)
    assert r.status_code == 201, r.text
    return r.json()["session_id"]


def value(srv, sid, code, timeout=90):
    doc = srv.ok(sid, code, timeout)
    srv.results.append(doc)
    import ast

    return ast.literal_eval(doc["result"])


SH = r'''
import subprocess
def sh(cmd, timeout=60):
    r = subprocess.run(["bash", "-c", cmd], capture_output=True, text=True, timeout=timeout)
    return r.stdout + r.stderr
'''


def seen(inet, role, needle):
    return [e for e in inet.requests_seen(role, needle)]


def test_the_session_names_its_secrets_and_the_code_sees_placeholders(srv, sid):
    s = srv.session(sid)
    net = s["execution_options"]["network"]
    assert net["secrets"] == ["api", "index"]
    assert "api.example.test" in net["allow"] and "pypi.example.test" in net["allow"]
    got = value(srv, sid, "import os; (os.environ.get('API'), os.environ.get('INDEX'), os.environ.get('SSL_CERT_FILE'))")
    assert got == (PLACEHOLDER, "runbox-secret-placeholder-index", "/workspace/.runbox-egress-ca.pem")


def test_the_bound_host_receives_the_value_from_curl_urllib_requests_and_pip(srv, sid, inet):
    code = SH + r'''
import os, urllib.request
from pip._vendor import requests as rq
ph = os.environ["API"]
out = {}
out["curl"] = sh('curl -sS -o /dev/null -w "%{http_code}" -H "Authorization: Bearer $API" "https://api.example.test/hello?c=curl"')
req = urllib.request.Request("https://api.example.test/hello?c=urllib", headers={"Authorization": "Bearer " + ph})
out["urllib"] = urllib.request.urlopen(req, timeout=30).status
out["requests"] = rq.get("https://api.example.test/hello?c=requests", headers={"Authorization": "Bearer " + ph},
                         timeout=30).status_code
out["plain_http"] = urllib.request.urlopen("http://api.example.test/hello?c=plain", timeout=30).status
out["pip"] = sh("python3 -m pip download --no-deps --no-cache-dir -d /tmp/dl --index-url "
                "https://pypi.example.test/simple/ rbnetpkg 2>&1 | tail -2", timeout=120)
out
'''
    out = value(srv, sid, code, timeout=180)
    assert out["curl"] == "200" and out["urllib"] == 200 and out["requests"] == 200 and out["plain_http"] == 200, out
    for client in ("curl", "urllib", "requests", "plain"):
        reqs = seen(inet, "www", f"c={client}")
        assert reqs, f"{client}: api.example.test saw nothing"
        assert reqs[-1]["headers"].get("Authorization") == "Bearer " + VALUE, (client, reqs[-1])
        assert reqs[-1]["scheme"] == ("http" if client == "plain" else "https")
    assert "Saved" in out["pip"] or "rbnetpkg" in out["pip"], out["pip"]
    import base64

    basic = "Basic " + base64.b64encode(f"{INDEX_USER}:{INDEX_PASSWORD}".encode()).decode()
    index = seen(inet, "pypi", "/simple/rbnetpkg")
    assert index and index[-1]["headers"].get("Authorization") == basic, index[-1:]


NODE = r"""
const https = require('https');
const HttpsProxyAgent = require('https-proxy-agent');  // Debian's node-https-proxy-agent (5.x)
const agent = new HttpsProxyAgent(process.env.HTTPS_PROXY);
https.get('https://api.example.test/hello?c=node', {agent, headers: {Authorization: 'Bearer ' + process.env.API}},
          (r) => { console.log(r.statusCode); r.resume(); }).on('error', (e) => console.log('ERR ' + e.message));
"""


def test_node_sends_it_too_trusting_the_session_ca_by_node_extra_ca_certs(srv, sid, inet):
    code = SH + "import json\nopen('/tmp/n.js', 'w').write(%r)\n(sh('node /tmp/n.js'),)\n" % NODE
    out = value(srv, sid, code)[0]
    assert out.strip() == "200", out
    assert seen(inet, "www", "c=node")[-1]["headers"]["Authorization"] == "Bearer " + VALUE


def test_an_echo_of_the_value_comes_back_as_stars(srv, sid):
    code = SH + r'''
(sh('curl -sS -i "https://api.example.test/echo"'),)
'''
    out = value(srv, sid, code)[0]
    assert VALUE not in out
    assert "Bearer " + "*" * len(VALUE) in out, out


def test_the_sandbox_cannot_find_the_value(srv, sid):
    code = SH + r'''
import os
out = {}
out["env"] = sh("env")
# the values' prefixes are known, their random rest is not: any trace of one is found by its prefix
out["files"] = sh("grep -rhoa -e 'rbt-secret-[0-9a-f]\\{8,\\}' -e 'rbt-index-[0-9a-f]\\{8,\\}' /workspace /tmp /etc /home /root "
                  "/run /var/tmp 2>/dev/null | head; cat /proc/*/environ /proc/*/cmdline /proc/*/maps 2>/dev/null "
                  "| tr '\\0' '\\n' | grep -ao -e 'rbt-secret-[0-9a-f]\\{8,\\}' -e 'rbt-index-[0-9a-f]\\{8,\\}' | head", 150)
out["proxy"] = sh("curl -sS -i http://egress:3128/policy/policy.json; curl -sS -i -x http://egress:3128 "
                  "http://egress:3128/policy/policy.json; curl -sS -i -x http://egress:3128 http://egress/policy.json")
out["placeholder"] = os.environ["API"]
print(os.environ["API"])
out["workspace"] = sh("ls -la /workspace; cat /workspace/.runbox-egress-ca.pem | grep -c 'PRIVATE' ")
out
'''
    out = value(srv, sid, code, timeout=180)
    assert out["placeholder"] == PLACEHOLDER
    blob = json.dumps(out)
    assert VALUE not in blob and INDEX_PASSWORD not in blob
    assert re.search(r"rbt-(secret|index)-[0-9a-f]{8}", out["files"]) is None, out["files"]
    assert PLACEHOLDER in out["env"]
    assert out["workspace"].strip().endswith("0"), out["workspace"]  # the bundle holds no private key


def test_the_value_never_goes_where_it_is_not_bound(srv, sid, inet):
    code = SH + r'''
out = {}
# an unbound (allowed) host: the placeholder goes as it is
out["unbound"] = sh('curl -sS -o /dev/null -w "%{http_code}" -H "Authorization: Bearer $API" '
                    '"https://www.example.test/hello?c=unbound"')
# a redirect from the bound host to another: the client re-sends its header, the proxy adds nothing
out["redirect"] = sh('curl -sS -L --location-trusted -o /dev/null -w "%{http_code}" -H "Authorization: Bearer $API" '
                     '"https://api.example.test/redirect?to=https://www.example.test/hello%3Fc%3Dredirected"')
# a Host header that disagrees with the target: refused, nothing sent
out["host_https"] = sh('curl -sS -o /dev/null -w "%{http_code}" -H "Host: www.example.test" '
                       '"https://api.example.test/hello?c=mismatch"')
out["host_http"] = sh('curl -sS -o /dev/null -w "%{http_code}" -H "Host: www.example.test" '
                      '"http://api.example.test/hello?c=mismatch"')
# a bound name whose address --egress-cidr does not allow (rebinding): refused before any byte
out["private"] = sh('curl -sS -o /dev/null -w "%{http_code}" "https://private.example.test/hello?c=private"')
# CONNECT to another name (www) with the bound name inside: end to end, no secret
out["connect_to"] = sh('curl -sS -o /dev/null -w "%{http_code}" --connect-to api.example.test:443:www.example.test:443 '
                       '-H "Authorization: Bearer $API" "https://api.example.test/hello?c=connectto"')
out
'''
    out = value(srv, sid, code, timeout=180)
    assert out["unbound"] == "200", out
    assert seen(inet, "www", "c=unbound")[-1]["headers"]["Authorization"] == "Bearer " + PLACEHOLDER
    assert out["redirect"] == "200", out
    landed = seen(inet, "www", "c=redirected")
    assert landed and landed[-1]["host"] == "www.example.test"
    assert landed[-1]["headers"]["Authorization"] == "Bearer " + PLACEHOLDER
    assert "421" in out["host_https"] and "421" in out["host_http"], out
    assert seen(inet, "www", "c=mismatch") == []
    assert "403" in out["private"] or "CONNECT tunnel failed" in out["private"], out
    assert seen(inet, "private", "c=private") == []
    assert out["connect_to"] == "200", out
    assert seen(inet, "www", "c=connectto")[-1]["headers"]["Authorization"] == "Bearer " + PLACEHOLDER
    # nothing but api.example.test's requests ever carried the value
    for role in ("www", "private", "pypi", "registry"):
        for e in inet.events(role):
            if VALUE in json.dumps(e):
                assert e["host"].split(":")[0] == "api.example.test", e


def test_another_keys_session_cannot_name_the_secret(srv):
    r = create(srv, key="bob")
    assert r.status_code == 403, r.text
    msg = r.json()["error"]["message"]
    assert 'no secret named "api" is available to this API key' in msg, msg
    # an unknown name reads the same (names cannot be probed)
    r = create(srv, network={"allow": [], "secrets": ["nope"]})
    assert r.status_code == 403 and 'no secret named "nope"' in r.json()["error"]["message"], r.text
    r = create(srv, network={"allow": [], "secrets": "api"})
    assert r.status_code == 400, r.text


def test_a_session_without_secrets_cannot_add_them_later(srv):
    r = create(srv, network={"allow": ["www.example.test"]})
    assert r.status_code == 201, r.text
    s2 = r.json()["session_id"]
    r = srv.put_network(s2, {"allow": ["www.example.test"], "secrets": ["api"]})
    assert r.status_code == 409 and "created without secrets" in r.text, r.text
    srv.delete(s2)


def test_rotation_and_revocation_apply_to_the_next_request(srv, sid, inet):
    code = SH + r'''
sh('curl -sS -o /dev/null -w "%{http_code}" "https://api.example.test/hello?c=TAG"')
'''

    def auth_of(tag):
        value(srv, sid, code.replace("TAG", tag))
        return seen(inet, "www", f"c={tag}")[-1]["headers"].get("Authorization")

    srv.secrets_file.write_text(secrets_text(ROTATED))
    srv.proc.send_signal(signal.SIGHUP)
    n = [0]

    def rotated():
        n[0] += 1
        return auth_of(f"rot{n[0]}") == "Bearer " + ROTATED

    poll(rotated, "the rotated value used after SIGHUP", every=0.5)
    srv.secrets_file.write_text(secrets_text(None))  # revoked
    srv.proc.send_signal(signal.SIGHUP)

    def revoked():
        n[0] += 1
        return auth_of(f"rev{n[0]}") is None

    poll(revoked, "no secret sent after it was revoked", every=0.5)
    srv.secrets_file.write_text(secrets_text(VALUE))
    srv.proc.send_signal(signal.SIGHUP)
    poll(lambda: n.__setitem__(0, n[0] + 1) or auth_of(f"back{n[0]}") == "Bearer " + VALUE, "restored", every=0.5)


def test_put_network_changes_the_secrets_of_a_live_session(srv, sid, inet):
    code = SH + r'''
sh('curl -sS -o /dev/null -w "%{http_code}" "https://api.example.test/hello?c=TAG"')
'''
    r = srv.put_network(sid, {"allow": ["www.example.test", "api.example.test"], "secrets": []})
    assert r.status_code == 200, r.text
    assert r.json()["execution_options"]["network"]["secrets"] == []
    assert value(srv, sid, code.replace("TAG", "put-none")) == "200"
    assert "Authorization" not in seen(inet, "www", "c=put-none")[-1]["headers"]
    r = srv.put_network(sid, {"allow": ["www.example.test"], "secrets": ["api", "index"]})
    assert r.status_code == 200, r.text
    assert value(srv, sid, code.replace("TAG", "put-back")) == "200"
    assert seen(inet, "www", "c=put-back")[-1]["headers"]["Authorization"] == "Bearer " + VALUE
    # false: nothing allowed from now on, and no secret either
    r = srv.put_network(sid, False)
    assert r.status_code == 200 and r.json()["execution_options"]["network"]["secrets"] == [], r.text
    r = srv.put_network(sid, {"allow": ["www.example.test"], "secrets": ["api", "index"]})
    assert r.status_code == 200, r.text


def test_a_proxy_made_anew_has_a_new_ca_which_the_sandbox_gets_again(srv, inet):
    r = create(srv)
    assert r.status_code == 201, r.text
    s2 = r.json()["session_id"]
    code = SH + r'''
(sh('curl -sS -o /dev/null -w "%{http_code}" "https://api.example.test/hello?c=TAG"'),
 sh("grep -c 'BEGIN CERTIFICATE' /workspace/.runbox-egress-ca.pem; tail -3 /workspace/.runbox-egress-ca.pem"))
'''
    first = value(srv, s2, code.replace("TAG", "before"))
    assert first[0] == "200", first
    from inet import docker

    for cid in nettest.egress_objects(s2)["containers"]:
        docker("rm", "-f", "-v", cid)
    n = [0]

    def works():
        n[0] += 1
        doc = srv.run(s2, code.replace("TAG", f"after{n[0]}"))
        return doc["status"] == "completed" and doc["result"] and "'200'" in doc["result"] and doc

    doc = poll(works, "a request with the secret through the proxy made anew", every=1)
    srv.results.append(doc)
    import ast

    assert ast.literal_eval(doc["result"])[1] != first[1], "the same CA: the proxy was not made anew"
    got = seen(inet, "www", f"c=after{n[0]}")
    assert got[-1]["headers"]["Authorization"] == "Bearer " + VALUE
    srv.delete(s2)


def test_uses_are_audited_counted_and_the_value_is_nowhere(srv, sid):
    root = {"Authorization": "Bearer " + KEYS["root"]}
    r = requests.get(srv.url + "/audit", params={"kind": "secret_used", "limit": 1000}, headers=root, timeout=30)
    assert r.status_code == 200, r.text
    audit = r.json()
    uses = [e for e in audit["events"] if e.get("session") == sid]
    assert uses, audit
    assert {"secret", "host", "port"} <= set(uses[0]) or {"secret", "host", "port"} <= set(uses[0].get("detail", {})), uses[0]
    assert any("api" in json.dumps(e) and "api.example.test" in json.dumps(e) for e in uses)
    refused = requests.get(srv.url + "/audit", params={"kind": "secret_refused"}, headers=root, timeout=30).json()
    assert refused["events"], refused
    metrics = requests.get(srv.url + "/metrics", headers=root, timeout=30).text
    line = [x for x in metrics.splitlines() if x.startswith("runbox_egress_secret_uses_total")]
    assert line and int(line[0].split()[-1]) >= 5, line
    line = [x for x in metrics.splitlines() if x.startswith("runbox_egress_secret_refusals_total")]
    assert line and int(line[0].split()[-1]) >= 2, line
    everything = [json.dumps(audit), json.dumps(refused), metrics, json.dumps(srv.results),
                  json.dumps(srv.session(sid)), srv.log_path.read_text(errors="replace"),
                  srv.http.get(f"{srv.url}/sessions/{sid}/executions", timeout=30).text]
    for v in (VALUE, ROTATED, INDEX_PASSWORD):
        for i, text in enumerate(everything):
            assert v not in text, f"a secret value in item {i}"
    # the store: never in SQLite in clear (the database and its WAL)
    for f in srv.workdir.glob("runbox.db*"):
        data = f.read_bytes()
        assert VALUE.encode() not in data and ROTATED.encode() not in data, f

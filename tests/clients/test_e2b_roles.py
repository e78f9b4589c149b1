"""Roles on E2B's sandbox traffic (issue 37; docs/e2b.md "Keys and access tokens", docs/security.md
"Roles"), with E2B's own SDK against a real runboxd and real sandboxes. A sandbox's access token
(envdAccessToken) is bound to the API key it was handed to: its owner's, or an admin's own; a
viewer is handed none. Sandbox traffic acts as the token's key, with that key's role and rights at
each call, so a viewer runs no code and changes no file on any protocol, an admin's cells are the
admin's in the audit trail, and a key removed or demoted loses what its token could do.
"""

from __future__ import annotations

import hashlib

import pytest
import requests
from packaging.version import Version

import rbtest
from e2b import ConnectionConfig
from e2b_code_interpreter import Sandbox

KEYS = {"alice": "e2b_" + "a1" * 20, "bob": "e2b_" + "b2" * 20, "boss": "e2b_" + "c3" * 20,
        "auditor": "e2b_" + "d4" * 20, "carol": "e2b_" + "e5" * 20}
ROLES = {"boss": "admin", "auditor": "viewer", "carol": "admin"}


def write_keys(path, roles: dict[str, str], without: tuple[str, ...] = ()) -> None:
    path.write_text("".join(f"{n} sha256:{hashlib.sha256(k.encode()).hexdigest()}"
                            f"{' role=' + roles[n] if n in roles else ''}\n" for n, k in KEYS.items() if n not in without))


@pytest.fixture(scope="module")
def srv(sandbox_image, tmp_path_factory):
    work = tmp_path_factory.mktemp("runboxd-e2b-roles")
    write_keys(work / "api-keys", ROLES)
    s = rbtest.Server(work, ["--api-keys-file", str(work / "api-keys"), "--pool-size", "0"])
    s.start()
    s.http.headers["Authorization"] = f"Bearer {KEYS['boss']}"  # teardown sees every key's sessions
    yield s
    rbtest.finish_servers([s])


@pytest.fixture
def env(srv, monkeypatch):
    """The SDK pointed at runboxd by its environment, as alice's."""
    monkeypatch.setenv("E2B_API_URL", srv.url + "/e2b")
    monkeypatch.setenv("E2B_SANDBOX_URL", srv.url + "/e2b")
    monkeypatch.setenv("E2B_API_KEY", KEYS["alice"])
    monkeypatch.delenv("E2B_DEBUG", raising=False)
    monkeypatch.delenv("E2B_DOMAIN", raising=False)
    return srv


def detail(srv, sid: str, who: str) -> requests.Response:
    return requests.get(f"{srv.url}/e2b/sandboxes/{sid}", headers={"X-API-KEY": KEYS[who]}, timeout=60)


def sdk_sandbox(sid: str, who: str, token: str | None) -> Sandbox:
    """A Sandbox object as the SDK builds it from a connect answer (sandbox_sync/main.py,
    _cls_connect_sandbox): X-Access-Token only when the answer had a token."""
    headers = {"E2b-Sandbox-Id": sid, "E2b-Sandbox-Port": str(ConnectionConfig.envd_port)}
    if token is not None:
        headers["X-Access-Token"] = token
    return Sandbox(sandbox_id=sid, sandbox_domain=None, envd_version=Version("0.5.6"), envd_access_token=token,
                   connection_config=ConnectionConfig(extra_sandbox_headers=headers, api_key=KEYS[who]))


def audit(srv, sid: str, kind: str) -> list[dict]:
    r = srv.get(f"/audit?session={sid}&kind={kind}", headers={"Authorization": f"Bearer {KEYS['boss']}"})
    assert r.status_code == 200, r.text
    return r.json()["events"]


def refused(fn, *words: str) -> str:
    with pytest.raises(Exception) as info:
        fn()
    text = str(info.value)
    for w in words:
        assert w in text, (w, text)
    return text


def test_a_viewer_is_handed_no_token_and_changes_nothing(env):
    sbx = Sandbox.create()
    sid = sbx.sandbox_id
    env.session_ids.add(sid)
    sbx.run_code("secret = 'alice-only'")
    sbx.files.write("/home/user/mine.txt", "alice")
    # the viewer reads the sandbox: no token in any answer
    r = detail(env, sid, "auditor")
    assert r.status_code == 200 and r.json()["sandboxID"] == sid, r.text
    assert "envdAccessToken" not in r.json(), r.json()
    assert Sandbox.get_info(sid, api_key=KEYS["auditor"]).sandbox_id == sid
    refused(lambda: Sandbox.connect(sid, api_key=KEYS["auditor"]), "viewer", "auditor")
    # what the SDK does with the answer it got: no X-Access-Token, every change refused, naming the role
    v = sdk_sandbox(sid, "auditor", r.json().get("envdAccessToken"))
    refused(lambda: v.run_code("print(secret)"), "viewer")
    refused(lambda: v.files.write("/home/user/by-viewer.txt", "x"), "viewer")
    refused(lambda: v.files.make_dir("/home/user/viewer-dir"), "viewer")
    refused(lambda: v.commands.run("touch /home/user/by-viewer-cmd"), "viewer")
    # nothing changed, and nothing is the viewer's in the audit trail
    assert not sbx.files.exists("/home/user/by-viewer.txt")
    assert not sbx.files.exists("/home/user/viewer-dir")
    assert not sbx.files.exists("/home/user/by-viewer-cmd")
    assert sbx.run_code("secret").text == "alice-only"
    keys = {e["key"] for kind in ("execution", "file_upload") for e in audit(env, sid, kind)}
    assert keys == {"alice"}, keys
    sbx.kill()


def test_an_admin_runs_code_with_its_own_token_as_itself(env):
    sbx = Sandbox.create()
    sid = sbx.sandbox_id
    env.session_ids.add(sid)
    sbx.run_code("x = 41")
    boss = Sandbox.connect(sid, api_key=KEYS["boss"])
    assert boss._envd_access_token and boss._envd_access_token != sbx._envd_access_token
    r = detail(env, sid, "boss")
    assert r.json()["envdAccessToken"] == boss._envd_access_token, r.json()
    assert detail(env, sid, "alice").json()["envdAccessToken"] == sbx._envd_access_token
    assert boss.run_code("print('by boss'); x + 1").text == "42"
    boss.files.write("/home/user/by-boss.txt", "boss")
    assert sbx.files.read("/home/user/by-boss.txt") == "boss"
    runs = {e["code"]: e for e in audit(env, sid, "execution")}
    assert runs["print('by boss'); x + 1"]["key"] == "boss", runs
    assert runs["print('by boss'); x + 1"]["session_owner"] == "alice", runs
    assert runs["x = 41"]["key"] == "alice" and "session_owner" not in runs["x = 41"], runs
    uploads = audit(env, sid, "file_upload")
    assert [e["key"] for e in uploads] == ["boss"], uploads
    sbx.kill()


def test_a_rest_session_read_by_a_viewer_keeps_its_owner(env):
    r = env.post("/sessions", {}, headers={"Authorization": f"Bearer {KEYS['alice']}"})
    assert r.status_code == 201, r.text
    env.track(r.json())
    sid = r.json()["session_id"]
    # the viewer reaches it through E2B first: it is handed nothing, and records nothing
    r = detail(env, sid, "auditor")
    assert r.status_code == 200 and "envdAccessToken" not in r.json(), r.text
    v = sdk_sandbox(sid, "auditor", None)
    refused(lambda: v.run_code("1"), "viewer")
    # an admin reaching it first is handed a token of its own, not one the owner will get
    boss = detail(env, sid, "boss").json()["envdAccessToken"]
    # the owner's token works, and its cells are the owner's
    mine = Sandbox.connect(sid)
    assert mine._envd_access_token and mine._envd_access_token != boss
    assert mine.run_code("print('owner')").logs.stdout == ["owner\n"]
    runs = audit(env, sid, "execution")
    assert [(e["key"], e.get("session_owner")) for e in runs] == [("alice", None)], runs
    assert env.session(sid)["owner"] == "alice"


def test_a_token_acts_only_as_the_key_it_was_handed_to(env):
    sbx = Sandbox.create()
    sid = sbx.sandbox_id
    env.session_ids.add(sid)
    # another user's own token does not open alice's sandbox, nor does its key see it
    other = Sandbox.create(api_key=KEYS["bob"])
    env.session_ids.add(other.sandbox_id)
    stolen = sdk_sandbox(sid, "bob", other._envd_access_token)
    refused(lambda: stolen.run_code("1"), "X-Access-Token")
    refused(lambda: stolen.files.read("/home/user/x"))
    assert detail(env, sid, "bob").status_code == 404
    other.kill()
    # an admin's token, once its key is demoted, only reads; once removed, does nothing
    carol = Sandbox.connect(sid, api_key=KEYS["carol"])
    carol.files.write("/home/user/by-carol.txt", "admin then")
    keys = env.workdir / "api-keys"
    try:
        write_keys(keys, {**ROLES, "carol": "viewer"})
        assert env.post("/keys/reload").status_code == 200
        refused(lambda: carol.run_code("1"), "viewer", "carol")
        refused(lambda: carol.files.write("/home/user/by-carol.txt", "viewer now"), "viewer", "carol")
        assert carol.files.read("/home/user/by-carol.txt") == "admin then"
        write_keys(keys, {**ROLES, "carol": "user"})
        assert env.post("/keys/reload").status_code == 200
        refused(lambda: carol.commands.run("true"), "carol", "another key's")
        refused(lambda: carol.files.read("/home/user/by-carol.txt"), "carol", "another key's")
        write_keys(keys, ROLES, without=("carol",))
        assert env.post("/keys/reload").status_code == 200
        refused(lambda: carol.files.read("/home/user/by-carol.txt"), "carol", "no longer")
    finally:
        write_keys(keys, ROLES)
        assert env.post("/keys/reload").status_code == 200
    # the owner's own flow is untouched by all of it
    assert sbx.run_code("6 * 7").text == "42"
    assert sbx.commands.run("cat by-carol.txt").stdout == "admin then"
    sbx.files.make_dir("/home/user/d")
    assert sbx.files.exists("/home/user/d")
    sbx.kill()

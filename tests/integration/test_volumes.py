"""Named volumes (issue 24, "Volumes"; docs/data.md) against a real runboxd and the real Docker
engine: creation and its refusals, two sessions mounting one volume at once and seeing each
other's writes, files owned by the sandbox user, the data outliving the sessions and a kill -9 of
runboxd, the quota (an upload past it refused; code that writes past it makes the volume
over_quota, which refuses executions, uploads and read-write mounts until a delete brings it
under), read-only mounts, ownership by API key, deletion refused while mounted, and malformed
mount items.

Every test deletes the volumes it made through the API, and checks that the engine's volume
(runbox-vol-<id>) went with each; the `volumes` fixture deletes what a failed test left, and
rbtest's cleanup removes the volumes of the test's runboxd instance and fails the test if one
that runboxd deleted is still in the engine. The quota is measured in the background after an
upload, a delete or an execution: tests poll GET /volumes/{id} with a deadline."""

from __future__ import annotations

import hashlib
import re

import pytest
import requests

import rbtest
from rbtest import check_error, check_schema

SANDBOX_UID = 1000
VOLUME_ID_RE = re.compile(r"^vol_[0-9a-f]{32}$")
OCTETS = {"Content-Type": "application/octet-stream"}
MIB = 1024 * 1024


def engine_has(volume_id: str) -> bool:
    """Whether `docker volume ls` lists the engine's volume of volume_id."""
    return f"runbox-vol-{volume_id}" in rbtest.docker("volume", "ls", "-q").split()


class Volumes:
    """The volumes a test makes (on any of its runboxd), created and deleted through the API.
    finish() deletes those a failed test left (ending the sessions that mount them first) and
    fails if the engine still has the volume of one deleted through the API."""

    def __init__(self):
        self.made: list[tuple[rbtest.Server, str, dict | None]] = []
        self.deleted: set[str] = set()

    def create(self, srv: rbtest.Server, body: dict, who: dict | None = None) -> dict:
        r = srv.post("/volumes", body, headers=who)
        assert r.status_code == 201, f"POST /volumes: {r.status_code} {r.text}\n{srv.log_tail(20)}"
        v = r.json()
        check_schema(v, "Volume")
        self.made.append((srv, v["volume_id"], who))
        return v

    def delete(self, srv: rbtest.Server, ref: str, who: dict | None = None) -> None:
        """DELETE /volumes/{ref}: 204, tried again while the engine still removes the sandbox of a
        session that just ended (409 'still used by a sandbox'); the engine's volume is gone."""
        vid = self.get(srv, ref, who)["volume_id"]

        def attempt():
            r = srv.delete(f"/volumes/{ref}", headers=who)
            if r.status_code == 409 and "still used by a sandbox" in r.text:
                return None
            return [r]  # (a Response is false when its status is 4xx)

        [r] = rbtest.wait_until(attempt, f"DELETE /volumes/{ref} to be answered otherwise than 'still used'")
        assert r.status_code == 204, f"DELETE /volumes/{ref}: {r.status_code} {r.text}\n{srv.log_tail(20)}"
        assert r.content == b""
        self.deleted.add(vid)
        assert not engine_has(vid), f"runbox-vol-{vid} is still in the engine after DELETE /volumes answered 204"
        check_error(srv.get(f"/volumes/{vid}", headers=who), 404, vid)

    @staticmethod
    def get(srv: rbtest.Server, ref: str, who: dict | None = None) -> dict:
        r = srv.get(f"/volumes/{ref}", headers=who)
        assert r.status_code == 200, f"GET /volumes/{ref}: {r.status_code} {r.text}"
        check_schema(r.json(), "Volume")
        return r.json()

    def finish(self) -> list[str]:
        problems = []
        for srv, vid, who in self.made:
            if vid in self.deleted or not srv.alive():
                continue  # a runboxd that is down: rbtest's cleanup removes its instance's volumes
            try:
                r = srv.get(f"/volumes/{vid}", headers=who, timeout=30)
                if r.status_code == 404:
                    self.deleted.add(vid)
                    continue
                for sid in r.json().get("mounted_by", []):
                    srv.delete(f"/sessions/{sid}", headers=who, timeout=30)
                self.delete(srv, vid, who)
            except (requests.RequestException, AssertionError) as e:
                problems.append(f"could not delete volume {vid} through the API: {e}")
        left = sorted(vid for vid in self.deleted if engine_has(vid))
        if left:
            problems.append(f"volumes deleted through the API still in the engine: {left}")
            rbtest.docker("volume", "rm", "-f", *(f"runbox-vol-{vid}" for vid in left), check=False)
        return problems


@pytest.fixture
def volumes(sandbox_image, make_server):
    # (after make_server: torn down before the test's own runboxd stop)
    v = Volumes()
    yield v
    problems = v.finish()
    if problems:
        pytest.fail("volumes: " + "; ".join(problems), pytrace=False)


@pytest.fixture(scope="module")
def server(sandbox_image, tmp_path_factory):
    """One runboxd for the tests that need no flags of their own (each deletes its volumes and
    sessions): at most 3 volumes at once, quotas of 8 MiB by default and at most 64 MiB."""
    s = rbtest.Server(tmp_path_factory.mktemp("volumes"),
                      ["--pool-size", "0", "--max-volumes", "3", "--volume-quota", "8m", "--volume-quota-max", "64m"])
    s.start()
    yield s
    rbtest.finish_servers([s])


def run(srv: rbtest.Server, sid: str, code: str) -> str:
    r = srv.execute(sid, code)
    assert r["status"] == "completed", r
    return r["stdout"]


def upload(srv: rbtest.Server, sid: str, path: str, data: bytes, who: dict | None = None) -> requests.Response:
    return srv.request("PUT", f"/sessions/{sid}/files", params={"path": path}, data=data,
                       headers={**OCTETS, **(who or {})})


def mounting(srv: rbtest.Server, mounts: list, who: dict | None = None) -> dict:
    """A new session with execution_options.mounts, checked against openapi.yaml."""
    r = srv.post("/sessions", {"execution_options": {"mounts": mounts}}, headers=who)
    assert r.status_code == 201, f"POST /sessions: {r.status_code} {r.text}\n{srv.log_tail(20)}"
    s = r.json()
    check_schema(s, "Session")
    srv.track(s)
    return s


def wait_volume(srv: rbtest.Server, ref: str, pred, what: str) -> dict:
    """GET /volumes/{ref} until pred(volume) holds (the measurement runs in the background)."""
    def check():
        v = Volumes.get(srv, ref)
        return v if pred(v) else None

    return rbtest.wait_until(check, what)


# ---- create, list, get, delete -----------------------------------------------------------------

def test_create_list_get_delete_and_refusals(server, volumes):
    v = volumes.create(server, {"name": "data"})
    vid = v["volume_id"]
    assert VOLUME_ID_RE.match(vid), vid
    assert v == {"volume_id": vid, "name": "data", "quota_bytes": 8 * MIB, "used_bytes": 0, "over_quota": False,
                 "created_at": v["created_at"], "measured_at": None, "mounted_by": []}, v
    # the engine's volume, labelled with its id and runboxd's instance
    labels = rbtest.docker("volume", "inspect", "--format", "{{json .Labels}}", f"runbox-vol-{vid}")
    assert f'"runbox.volume":"{vid}"' in labels and f'"runbox.instance":"{server.db_instance()}"' in labels, labels
    assert volumes.get(server, vid) == v and volumes.get(server, "data") == v  # by id and by name

    check_error(server.post("/volumes", {"name": "data"}), 409, "data")
    for bad in ["Data", "", "-data", "_x", "a" * 64, "vol_data", "a b", "da/ta", 5, None]:
        check_error(server.post("/volumes", {"name": bad}), 400, "name")
    check_error(server.post("/volumes", {"quota_bytes": MIB}), 400, "name")
    check_error(server.post("/volumes", {"name": "x", "size": 1}), 400, "size")
    check_error(server.post("/volumes", {"name": "x", "quota_bytes": 64 * MIB + 1}), 400, "--volume-quota-max")
    for bad in [0, -1, 1.5, "1m", True]:
        check_error(server.post("/volumes", {"name": "x", "quota_bytes": bad}), 400, "quota_bytes")
    check_error(server.post("/volumes", data="name=x", headers={"Content-Type": "text/plain"}), 415)

    b = volumes.create(server, {"name": "b-1", "quota_bytes": 64 * MIB})  # the most --volume-quota-max allows
    c = volumes.create(server, {"name": "c_2", "quota_bytes": None})  # null: the default
    assert (b["quota_bytes"], c["quota_bytes"]) == (64 * MIB, 8 * MIB)
    r = server.post("/volumes", {"name": "d"})
    check_error(r, 429, "--max-volumes")
    assert int(r.headers["Retry-After"]) >= 1
    r = server.get("/volumes")
    assert r.status_code == 200
    check_schema(r.json(), "VolumeList")
    assert [x["name"] for x in r.json()["volumes"]] == ["data", "b-1", "c_2"]  # oldest first
    assert r.json()["volumes"][0] == v

    check_error(server.get("/volumes/nosuch"), 404, "nosuch")
    check_error(server.delete("/volumes/nosuch"), 404, "nosuch")
    check_error(server.get("/volumes/vol_" + "0" * 32), 404)
    volumes.delete(server, "data")  # by name
    # room for one again, and the name is free again; a whole number may be written 2097152.0
    assert volumes.create(server, {"name": "data", "quota_bytes": float(2 * MIB)})["quota_bytes"] == 2 * MIB
    for x in server.get("/volumes").json()["volumes"]:
        volumes.delete(server, x["volume_id"])
    assert server.get("/volumes").json() == {"volumes": []}


# ---- two sessions, one volume; kept after the sessions; read-only; deletion while mounted ------

def test_two_sessions_share_a_volume_that_outlives_them(server, volumes):
    v = volumes.create(server, {"name": "data"})
    vid = v["volume_id"]
    # null path and readonly mean the defaults, as in share items
    a = mounting(server, [{"volume": "data", "path": None, "readonly": None}])
    b = mounting(server, [{"volume": vid, "path": "/workspace/common"}])
    sa, sb = a["session_id"], b["session_id"]
    assert a["execution_options"]["mounts"] == [
        {"volume": "data", "volume_id": vid, "path": "/workspace/data", "readonly": False}]
    assert b["execution_options"]["mounts"] == [
        {"volume": "data", "volume_id": vid, "path": "/workspace/common", "readonly": False}]
    assert server.session(sb)["execution_options"]["mounts"] == b["execution_options"]["mounts"]
    assert sorted(volumes.get(server, vid)["mounted_by"]) == sorted([sa, sb])

    # a file uploaded through A's files API, read by B's code; B's code writes, A reads
    r = upload(server, sa, "/workspace/data/in/up.csv", b"a,b\n1,2\n")
    assert r.status_code == 201, r.text
    assert r.json()["files"][0]["path"] == "data/in/up.csv"
    out = run(server, sb, "import os\nprint(open('/workspace/common/in/up.csv').read(), end='')\n"
                          "open('/workspace/common/from_b.txt', 'w').write('written by B\\n')\n"
                          "os.makedirs('/workspace/common/deep/er')\n")
    assert out == "a,b\n1,2\n"
    # everything in it belongs to the sandbox user: the volume itself, uploads and what code wrote
    paths = [".", "from_b.txt", "deep/er", "in", "in/up.csv"]
    out = run(server, sa, "import os\nprint(open('/workspace/data/from_b.txt').read(), end='')\n"
                          f"for p in {paths!r}:\n"
                          "    st = os.stat('/workspace/data/' + p)\n"
                          "    print(p, st.st_uid, st.st_gid)\n")
    assert out.splitlines() == ["written by B"] + [f"{p} {SANDBOX_UID} {SANDBOX_UID}" for p in paths], out
    r = server.get(f"/sessions/{sa}/files/download", params={"path": "data/from_b.txt"})
    assert r.status_code == 200 and r.content == b"written by B\n"
    listed = {f["path"] for f in server.get(f"/sessions/{sb}/files").json()["files"]}
    assert {"common/from_b.txt", "common/in/up.csv", "common/deep/er"} <= listed, listed

    # not deleted while mounted: the answer names the sessions
    err = check_error(server.delete(f"/volumes/{vid}"), 409, sa)
    assert sb in err["message"], err
    server.delete_session(sa)
    server.delete_session(sb)
    assert volumes.get(server, vid)["mounted_by"] == []

    # a new session sees what the ended ones wrote; mounted read-only, it cannot write
    c = mounting(server, [{"volume": "data", "readonly": True}])
    sc = c["session_id"]
    assert c["execution_options"]["mounts"] == [
        {"volume": "data", "volume_id": vid, "path": "/workspace/data", "readonly": True}]
    out = run(server, sc, (
        "import errno, os\n"
        "print(open('/workspace/data/from_b.txt').read(), end='')\n"
        "print(open('/workspace/data/in/up.csv').read(), end='')\n"
        "for attempt in (lambda: open('/workspace/data/new.txt', 'w'),\n"
        "                lambda: os.remove('/workspace/data/from_b.txt'),\n"
        "                lambda: os.mkdir('/workspace/data/d'), lambda: open('/workspace/data/in/up.csv', 'a')):\n"
        "    try:\n"
        "        attempt(); print('WROTE')\n"
        "    except OSError as e:\n"
        "        print(errno.errorcode[e.errno])\n"))
    assert out.splitlines() == ["written by B", "a,b", "1,2", "EROFS", "EROFS", "EROFS", "EROFS"], out
    check_error(upload(server, sc, "data/up2.bin", b"x"), 403, "read-only")
    check_error(server.delete(f"/volumes/{vid}"), 409, sc)
    server.delete_session(sc)
    # the session's sandbox goes in the background: Volumes.delete tries again while it holds the volume
    volumes.delete(server, vid)


# ---- the quota ---------------------------------------------------------------------------------

def test_quota_refuses_uploads_executions_and_mounts_until_a_delete(server, volumes):
    v = volumes.create(server, {"name": "small", "quota_bytes": MIB})
    vid = v["volume_id"]
    a = mounting(server, [{"volume": "small"}])
    sa = a["session_id"]

    assert upload(server, sa, "small/first.bin", b"1" * 600_000).status_code == 201
    v = wait_volume(server, vid, lambda x: x["used_bytes"] >= 600_000, "the upload to be measured")
    assert v["measured_at"] is not None and not v["over_quota"], v
    # what is left is less than the next file: refused, nothing written
    err = check_error(upload(server, sa, "/workspace/small/second.bin", b"2" * 600_000), 507, "'small'")
    assert str(MIB) in err["message"] and "quota" in err["message"], err
    assert run(server, sa, "import os; print(os.path.exists('/workspace/small/second.bin'))") == "False\n"

    # code writes past the quota; the measurement after its execution finds it over
    run(server, sa, "open('/workspace/small/big.bin', 'wb').write(b'3' * (2 * 1024 * 1024))")
    v = wait_volume(server, vid, lambda x: x["over_quota"], "the volume to be found over its quota")
    assert v["used_bytes"] > MIB, v
    err = check_error(server.post("/execute", {"session_id": sa, "code": "print(1)", "wait": True}), 507, "'small'")
    assert str(MIB) in err["message"] and "DELETE /sessions/" in err["message"], err
    check_error(upload(server, sa, "small/third.bin", b"4"), 507, "'small'")
    check_error(server.post("/sessions", {"execution_options": {"mounts": [{"volume": "small"}]}}), 507, "'small'")
    # read-only: mounted, and its code runs
    ro = mounting(server, [{"volume": vid, "path": "/workspace/ro", "readonly": True}])
    assert run(server, ro["session_id"], "import os; print(os.path.getsize('/workspace/ro/big.bin'))") == \
        f"{2 * MIB}\n"

    # a delete through the files API brings it back under; code runs again
    r = server.delete(f"/sessions/{sa}/files", params={"path": "small/big.bin"})
    assert r.status_code == 200, r.text
    v = wait_volume(server, vid, lambda x: not x["over_quota"], "the volume to be back under its quota")
    assert 600_000 <= v["used_bytes"] <= MIB, v
    assert run(server, sa, "import os; print(sorted(os.listdir('/workspace/small')))") == "['first.bin']\n"
    server.delete_session(sa)
    server.delete_session(ro["session_id"])
    volumes.delete(server, vid)


def test_use_counts_the_bytes_of_files_so_a_small_quota_can_be_met(server, volumes):
    """used_bytes is what the user wrote (files and links, each inode once), not the folders' own
    blocks: 104 bytes read as 104, a quota of 200 bytes is met again once the files go, and the
    same files measure the same in a fork's and a hibernation's workspace_bytes."""
    v = volumes.create(server, {"name": "tiny", "quota_bytes": 200})
    vid = v["volume_id"]
    a = mounting(server, [{"volume": "tiny"}])
    sa = a["session_id"]
    run(server, sa, "import os\nos.makedirs('/workspace/tiny/a/b/c')\n"
                    "open('/workspace/tiny/a/b/c/x.txt', 'w').write('x' * 100)\n"
                    "os.link('/workspace/tiny/a/b/c/x.txt', '/workspace/tiny/hard.txt')\n"
                    "os.symlink('x.txt', '/workspace/tiny/a/b/c/link')")
    v = wait_volume(server, vid, lambda x: x["used_bytes"] > 0, "the volume to be measured")
    assert v["used_bytes"] == 100 + len("x.txt") and not v["over_quota"], v
    run(server, sa, "open('/workspace/tiny/big.txt', 'w').write('y' * 300)")
    v = wait_volume(server, vid, lambda x: x["over_quota"], "the volume to be over its quota")
    assert v["used_bytes"] == 405, v
    r = server.delete(f"/sessions/{sa}/files", params={"path": "tiny/big.txt"})
    assert r.status_code == 200, r.text
    r = server.delete(f"/sessions/{sa}/files", params={"path": "tiny/a"})
    assert r.status_code == 200, r.text
    # hard.txt keeps the inode; the folders count nothing
    v = wait_volume(server, vid, lambda x: x["used_bytes"] == 100, "the volume to hold hard.txt's 100 bytes")
    assert not v["over_quota"], v
    assert run(server, sa, "print(1)") == "1\n"
    server.delete_session(sa)
    volumes.delete(server, vid)

    # the same files: a fork's copy and a hibernation count the same bytes
    s = server.create_session()
    sid = s["session_id"]
    run(server, sid, "import os\nos.makedirs('/workspace/d/e')\nopen('/workspace/d/e/f.txt', 'w').write('z' * 104)")
    r = server.post(f"/sessions/{sid}/fork", {})
    assert r.status_code == 201, r.text
    fork = r.json()
    server.track(fork)
    r = server.post(f"/sessions/{sid}/pause", {"mode": "hibernate"})
    assert r.status_code == 200, r.text
    assert fork["fork"]["workspace_bytes"] == r.json()["pause"]["workspace_bytes"] == 104, (fork, r.json())
    server.delete_session(fork["session_id"])
    server.delete_session(sid)


# ---- malformed mount items -----------------------------------------------------------------------

def test_bad_mount_items_are_refused_with_the_reason(server, volumes):
    data = volumes.create(server, {"name": "data", "quota_bytes": MIB})
    volumes.create(server, {"name": "other", "quota_bytes": MIB})
    cases = [
        ([{"volume": "data", "size": 1}], 400, "unknown field 'size'"),
        ([{"volume": "data", "share": "photos"}], 400, "unknown field 'share'"),
        ([{"volume": 5}], 400, "'volume' must be"),
        ([{"volume": "data", "readonly": "yes"}], 400, "'readonly' must be"),
        ([{"volume": "data", "path": 7}], 400, "'path' must be"),
        ([{"volume": "data", "path": "/etc/data"}], 400, "not under /workspace"),
        ([{"volume": "data", "path": "/workspace"}], 400, "/workspace itself"),
        ([{"volume": "data", "path": "/workspace/.runbox/d"}], 400, ".runbox"),
        ([{"volume": "data", "path": "/workspace/a/../b"}], 400, "'..'"),
        ([{"volume": "data", "path": "/workspace/x"}, {"volume": "other", "path": "x"}], 400, "two mounts"),
        ([{"volume": "data", "path": "/workspace/x"}, {"volume": "other", "path": "/workspace/x/y"}], 400,
         "may not nest"),
        ([{"volume": "data"}, {"volume": data["volume_id"], "path": "/workspace/y"}], 400, "mounted twice"),
        ([{"volume": "data"}] * 17, 400, "16"),
        ([{"volume": "nosuch"}], 404, "no volume 'nosuch'"),
        ([{"volume": "vol_" + "0" * 32}], 404, "vol_" + "0" * 32),
    ]
    before = server.get("/sessions").json()["sessions"]
    for mounts, status, words in cases:
        r = server.post("/sessions", {"execution_options": {"mounts": mounts}})
        check_error(r, status, words)
    check_error(server.post("/sessions", {"execution_options": {"mounts": "data"}}), 400, "mounts")
    assert server.get("/sessions").json()["sessions"] == before  # nothing was created
    assert all(x["mounted_by"] == [] for x in server.get("/volumes").json()["volumes"])
    for x in server.get("/volumes").json()["volumes"]:
        volumes.delete(server, x["volume_id"])


# ---- kill -9 of runboxd ------------------------------------------------------------------------

def test_volume_and_its_mount_survive_kill9_of_runboxd(make_server, volumes):
    srv = make_server(["--pool-size", "0"])
    vid = volumes.create(srv, {"name": "keep", "quota_bytes": 16 * MIB})["volume_id"]
    a = mounting(srv, [{"volume": "keep"}])
    sa = a["session_id"]
    run(srv, sa, "open('/workspace/keep/before.txt', 'w').write('before the kill\\n')")

    srv.kill9()
    srv.start()
    rbtest.wait_until(lambda: srv.session(sa)["status"] == "ready", "the live session to be found again")
    assert volumes.get(srv, vid)["mounted_by"] == [sa]
    assert srv.session(sa)["execution_options"]["mounts"] == a["execution_options"]["mounts"]
    # the session live during the kill has its volume, files and all
    assert run(srv, sa, "print(open('/workspace/keep/before.txt').read(), end='')\n"
                        "open('/workspace/keep/after.txt', 'w').write('after the restart\\n')") == "before the kill\n"
    b = mounting(srv, [{"volume": vid, "path": "/workspace/k"}])
    assert run(srv, b["session_id"], "print(open('/workspace/k/before.txt').read(), end='')\n"
                                     "print(open('/workspace/k/after.txt').read(), end='')") == \
        "before the kill\nafter the restart\n"
    assert sorted(volumes.get(srv, vid)["mounted_by"]) == sorted([sa, b["session_id"]])
    v = wait_volume(srv, vid, lambda x: x["used_bytes"] > 0, "the volume to be measured")
    assert not v["over_quota"], v
    srv.delete_session(sa)
    srv.delete_session(b["session_id"])
    # a kill -9 just after an execution can leave the one-shot container of the measurement that
    # followed it, made by the engine after the restart's recovery listed the containers (never
    # started, it holds the volume): the deletion removes it
    left = rbtest.docker("create", "--label", f"runbox.instance={srv.db_instance()}", "--label", "runbox.managed=1",
                         "--label", f"runbox.volume-for={vid}", "-v", f"runbox-vol-{vid}:/v:ro", rbtest.IMAGE, "true")
    try:
        volumes.delete(srv, vid)
        assert not rbtest.container_exists(left), "the one-shot container left holding the volume is still there"
        assert "a one-shot of an earlier runboxd that holds it" in srv.log_text()
    finally:
        rbtest.remove_containers([left])


# ---- API keys ----------------------------------------------------------------------------------

KEYS = {"alice": "alice-" + "a" * 40, "bob": "bob-" + "b" * 40}
ALICE = {"Authorization": f"Bearer {KEYS['alice']}"}
BOB = {"Authorization": f"Bearer {KEYS['bob']}"}


def test_a_key_sees_and_mounts_only_its_own_volumes(make_server, volumes, tmp_path):
    keys = tmp_path / "api-keys"
    keys.write_text("".join(f"{n} sha256:{hashlib.sha256(k.encode()).hexdigest()}\n" for n, k in KEYS.items()))
    srv = make_server(["--api-keys-file", str(keys), "--pool-size", "0", "--max-volumes", "1"])
    check_error(srv.get("/volumes"), 401)
    check_error(srv.post("/volumes", {"name": "data"}), 401)
    mine = volumes.create(srv, {"name": "data"}, ALICE)
    vid = mine["volume_id"]
    check_error(srv.post("/volumes", {"name": "more"}, headers=ALICE), 429, "--max-volumes")

    # bob: alice's volume is not found, by id or by name, to read, delete or mount
    for ref in (vid, "data"):
        check_error(srv.get(f"/volumes/{ref}", headers=BOB), 404, ref)
        check_error(srv.delete(f"/volumes/{ref}", headers=BOB), 404, ref)
        check_error(srv.post("/sessions", {"execution_options": {"mounts": [{"volume": ref}]}}, headers=BOB), 404,
                    ref)
    assert srv.get("/volumes", headers=BOB).json() == {"volumes": []}
    assert srv.get("/sessions", headers=BOB).json()["sessions"] == []
    # names are per key, and so is --max-volumes
    his = volumes.create(srv, {"name": "data"}, BOB)
    assert his["volume_id"] != vid
    assert srv.get("/volumes", headers=ALICE).json() == {"volumes": [volumes.get(srv, vid, ALICE)]}
    assert srv.get("/volumes", headers=BOB).json() == {"volumes": [volumes.get(srv, "data", BOB)]}
    assert volumes.get(srv, "data", ALICE)["volume_id"] == vid
    volumes.delete(srv, "data", BOB)
    assert volumes.get(srv, vid, ALICE) == mine
    volumes.delete(srv, vid, ALICE)

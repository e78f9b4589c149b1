"""E2B's volumes (docs/e2b.md "Volumes") with E2B's own SDK, unmodified, against a real runboxd
and real sandboxes: Volume.create, list, get_info, connect and destroy are runbox's volumes of
the caller's key (POST/GET/DELETE /e2b/volumes); Sandbox.create(volume_mounts=...) mounts them
under /workspace, several sandboxes at once, and the files outlive the sandboxes; another key
sees none of them; E2B's volume content API (Volume.write_file, read_file, list, ...) is not
served and fails readably, naming the alternative. Each test removes what it made; the module's
teardown checks that no volume is left, in runboxd or in Docker.
"""

from __future__ import annotations

import hashlib
import shutil
import tempfile
from pathlib import Path

import pytest
import requests

import rbtest
from rbfixtures import point_e2b_sdk_at

from e2b import (AuthenticationException, SandboxException, Volume, VolumeException, VolumeNotFoundException)
from e2b_code_interpreter import Sandbox

KEYS = {"alice": "e2b_" + "d4" * 20, "bob": "e2b_" + "e5" * 20}
BOB = {"api_key": KEYS["bob"]}
# what runboxd's VolumeAndToken names (server/e2b/e2b_volumes.c): no content API, no real domain
NO_CONTENT = "runboxd-has-no-volume-content-api"


def _docker_volumes(instance: str) -> list[str]:
    out = rbtest.docker("volume", "ls", "-q", "--filter", "label=runbox.volume",
                        "--filter", f"label=runbox.instance={instance}", check=False)
    return out.split()


@pytest.fixture(scope="module")
def host(sandbox_image):
    """A read-only share beside the volumes (metadata["runbox.mounts"])."""
    base = Path(tempfile.mkdtemp(prefix="rb-e2b-vol-", dir="/var/tmp"))
    base.chmod(0o755)
    (base / "photos").mkdir(mode=0o755)
    (base / "photos" / "a.txt").write_text("from the share\n")
    yield base
    shutil.rmtree(base)


@pytest.fixture(scope="module")
def vol_server(host, tmp_path_factory):
    work = tmp_path_factory.mktemp("runboxd-e2b-volumes")
    keys = work / "api-keys"
    keys.write_text("".join(f"{n} sha256:{hashlib.sha256(k.encode()).hexdigest()} shares=photos\n"
                            for n, k in KEYS.items()))
    s = rbtest.Server(work, ["--api-keys-file", str(keys), "--pool-size", "0", "--share", f"photos={host / 'photos'}"])
    s.start()
    s.http.headers["Authorization"] = f"Bearer {KEYS['alice']}"
    instance = s.db_instance()
    yield s
    # every test removes its sandboxes and volumes: what is left is a leak (removed all the same)
    left = []
    for key in KEYS.values():
        api = {"X-API-KEY": key}
        for sbx in requests.get(s.url + "/e2b/v2/sandboxes", headers=api, timeout=30).json():
            left.append(sbx["sandboxID"])
            requests.delete(s.url + f"/e2b/sandboxes/{sbx['sandboxID']}", headers=api, timeout=60)
        for v in requests.get(s.url + "/e2b/volumes", headers=api, timeout=30).json():
            left.append(v["volumeID"])
            requests.delete(s.url + f"/e2b/volumes/{v['volumeID']}", headers=api, timeout=120)
    on_disk = _docker_volumes(instance)
    if on_disk:
        rbtest.docker("volume", "rm", "-f", *on_disk, check=False)
    rbtest.finish_servers([s])
    assert not left, f"tests left sandboxes or volumes behind: {left}"
    assert not on_disk, f"Docker volumes left behind by runboxd: {on_disk}"


@pytest.fixture
def e2b_env(vol_server, monkeypatch):
    point_e2b_sdk_at(monkeypatch, vol_server, KEYS["alice"])
    monkeypatch.delenv("E2B_VOLUME_API_URL", raising=False)
    return vol_server


def _sandbox(server: rbtest.Server, made: list, **kw) -> Sandbox:
    sbx = Sandbox.create(timeout=600, **kw)
    server.session_ids.add(sbx.sandbox_id)
    made.append(sbx)
    return sbx


def _kill_all(made: list) -> None:
    for sbx in made:
        sbx.kill()


def test_volumes_are_made_listed_and_destroyed(e2b_env):
    instance = e2b_env.db_instance()
    vol = Volume.create("notes")
    try:
        assert vol.name == "notes" and vol.volume_id.startswith("vol_"), vol
        assert vol.token == NO_CONTENT
        assert _docker_volumes(instance) == [f"runbox-vol-{vol.volume_id}"]
        assert [(v.volume_id, v.name) for v in Volume.list()] == [(vol.volume_id, "notes")]
        info = Volume.get_info(vol.volume_id)
        assert (info.volume_id, info.name, info.token) == (vol.volume_id, "notes", NO_CONTENT)
        assert Volume.get_info("notes").volume_id == vol.volume_id  # a name is runbox's ref too
        again = Volume.connect(vol.volume_id)
        assert (again.volume_id, again.name) == (vol.volume_id, "notes")

        with pytest.raises(VolumeException, match="409: a volume named 'notes' exists already"):
            Volume.create("notes")
        with pytest.raises(VolumeException, match="400: 'name' must be"):
            Volume.create("Not A Name")
        with pytest.raises(AuthenticationException):
            Volume.list(api_key="e2b_" + "0" * 40)
    finally:
        assert Volume.destroy(vol.volume_id) is True
    assert Volume.list() == []
    assert _docker_volumes(instance) == []
    assert Volume.destroy(vol.volume_id) is False  # E2B's 404
    with pytest.raises(VolumeNotFoundException):
        Volume.get_info(vol.volume_id)


def test_sandboxes_share_a_volume_and_its_files_outlive_them(e2b_env):
    """Two sandboxes mount one volume at once and see each other's writes; once both are killed
    a third, mounting it elsewhere, finds the files."""
    vol = Volume.create("shared")
    made: list = []
    try:
        a = _sandbox(e2b_env, made, volume_mounts={"/workspace/data": vol})
        b = _sandbox(e2b_env, made, volume_mounts={"/workspace/data": "shared"})  # by name, as E2B allows
        assert a.get_info().volume_mounts == [{"name": "shared", "path": "/workspace/data"}]

        ex = a.run_code("open('/workspace/data/from_a.txt', 'w').write('written by a')")
        assert ex.error is None, ex.error
        ex = b.run_code("print(open('/workspace/data/from_a.txt').read(), end='')")
        assert ex.error is None and ex.logs.stdout == ["written by a"], ex
        b.files.write("/home/user/data/from_b.txt", "written by b")  # the files API reaches the volume too
        ex = a.run_code("import os; sorted(os.listdir('/workspace/data'))")
        assert ex.text == "['from_a.txt', 'from_b.txt']", ex

        # a mounted volume cannot go
        with pytest.raises(VolumeException, match="409: .*kill the sandboxes that mount it"):
            Volume.destroy(vol.volume_id)
        _kill_all(made)

        c = _sandbox(e2b_env, made, volume_mounts={"/home/user/kept": vol})  # /home/user is /workspace
        assert c.get_info().volume_mounts == [{"name": "shared", "path": "/workspace/kept"}]
        ex = c.run_code("print(open('/workspace/kept/from_a.txt').read(), open('kept/from_b.txt').read())")
        assert ex.error is None and ex.logs.stdout == ["written by a written by b\n"], ex
        assert c.files.read("/home/user/kept/from_b.txt") == "written by b"
        c.kill()
    finally:
        _kill_all(made)
        Volume.destroy(vol.volume_id)
    assert Volume.list() == []


def test_another_key_cannot_see_or_mount_the_volume(e2b_env):
    vol = Volume.create("private")
    try:
        assert Volume.list(**BOB) == []
        with pytest.raises(VolumeNotFoundException):
            Volume.get_info(vol.volume_id, **BOB)
        with pytest.raises(VolumeNotFoundException):
            Volume.get_info("private", **BOB)
        assert Volume.destroy(vol.volume_id, **BOB) is False
        with pytest.raises(SandboxException, match="404: no volume 'private'"):
            Sandbox.create(volume_mounts={"/workspace/p": "private"}, **BOB)
        # bob may have a volume of the same name: names are per key
        own = Volume.create("private", **BOB)
        try:
            assert own.volume_id != vol.volume_id
            assert [v.volume_id for v in Volume.list()] == [vol.volume_id]
        finally:
            assert Volume.destroy(own.volume_id, **BOB) is True
        assert Volume.get_info(vol.volume_id).name == "private"  # untouched
    finally:
        Volume.destroy(vol.volume_id)


def test_mount_paths_outside_the_workspace_are_refused(e2b_env):
    vol = Volume.create("paths")
    try:
        with pytest.raises(SandboxException, match=r"400: volumeMounts\[0\]\.path '/mnt/data' is outside /workspace: "
                                                   r"runbox mounts volumes only in the sandbox's workspace"):
            Sandbox.create(volume_mounts={"/mnt/data": vol})
        with pytest.raises(SandboxException, match="is the whole workspace"):
            Sandbox.create(volume_mounts={"/home/user": vol})
        with pytest.raises(SandboxException, match="404: no volume 'missing'"):
            Sandbox.create(volume_mounts={"/workspace/m": "missing"})
        assert Volume.get_info(vol.volume_id).name == "paths"
        assert Sandbox.list().next_items() == []  # nothing was made
    finally:
        Volume.destroy(vol.volume_id)


def test_volume_mounts_join_the_shares_of_metadata(e2b_env):
    """metadata["runbox.mounts"] (runbox's shared folders) and volume_mounts in one sandbox."""
    vol = Volume.create("beside")
    made: list = []
    try:
        sbx = _sandbox(e2b_env, made, volume_mounts={"/workspace/v": vol},
                       metadata={"runbox.mounts": '[{"share": "photos", "path": "/workspace/p"}]'})
        ex = sbx.run_code("open('/workspace/v/x.txt', 'w').write('v')\n"
                          "print(open('/workspace/p/a.txt').read(), end='')")
        assert ex.error is None and ex.logs.stdout == ["from the share\n"], ex
        mounts = e2b_env.get(f"/sessions/{sbx.sandbox_id}").json()["execution_options"]["mounts"]
        assert [(m.get("share") or m.get("volume"), m["path"]) for m in mounts] == [
            ("photos", "/workspace/p"), ("beside", "/workspace/v")], mounts
        assert sbx.get_info().volume_mounts == [{"name": "beside", "path": "/workspace/v"}]
        with pytest.raises(SandboxException, match="runbox.mounts"):
            Sandbox.create(volume_mounts={"/workspace/v": vol}, metadata={"runbox.mounts": '{"share": "photos"}'})
    finally:
        _kill_all(made)
        Volume.destroy(vol.volume_id)


def test_the_volume_content_api_is_not_served(e2b_env, monkeypatch):
    """Volume.write_file, read_file, list, ...: E2B's volume content API, which runboxd does not
    offer. With E2B_VOLUME_API_URL at runboxd they get its 501, naming the way that works; without
    it the SDK would call https://api.<domain>: runboxd's domain never resolves, so the call fails
    on the client and nothing goes to E2B's cloud."""
    vol = Volume.create("content")
    try:
        with pytest.raises(Exception, match=f"api.{NO_CONTENT}.invalid"):
            vol.write_file("/a.txt", "never sent")

        monkeypatch.setenv("E2B_VOLUME_API_URL", e2b_env.url + "/e2b")
        want = r"501: runboxd does not serve E2B's volume content API .*volume_mounts="
        calls = [lambda: vol.write_file("/a.txt", "x"), lambda: vol.read_file("/a.txt"), lambda: vol.list("/"),
                 lambda: vol.make_dir("/d"), lambda: vol.exists("/a.txt"), lambda: vol.remove("/a.txt"),
                 lambda: Volume.connect(vol.volume_id).update_metadata("/a.txt", mode=0o644)]
        for call in calls:
            with pytest.raises(VolumeException, match=want):
                call()
    finally:
        Volume.destroy(vol.volume_id)

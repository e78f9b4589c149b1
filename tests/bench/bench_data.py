"""Pause, resume and fork, measured (tests/bench/run; docs/data.md), each beside a baseline of the
same run:

- suspend + resume through runboxd beside `docker pause` + `docker unpause` of a plain container
  (what the freezer itself costs);
- hibernate + resume, and fork, of a small workspace and of a 1 GB one, beside a cold session
  create (what a caller pays without them) and E2B's documented figures (about 4 s per GB to
  pause, about 1 s to resume: not measured here);
- reading a 1 GB file from a read-only shared folder beside reading it from the workspace, and
  from a volume; creating a volume, a session that mounts one (beside a cold create) and deleting it
  (tmpfs), inside the sandbox with its own clock.

Times are the client's (the HTTP call from start to answer).
"""

import os
import shutil
import subprocess
import tempfile
import time

import roomlib  # tests/bench/roomlib.py

GB = 1024 * 1024 * 1024
READ = ("import time\nt = time.perf_counter()\nn = 0\nwith open(%r, 'rb', buffering=0) as f:\n"
        "    while True:\n        b = f.read(8 << 20)\n        if not b: break\n        n += len(b)\n"
        "assert n == %d, n\nprint('%%.3f' %% ((time.perf_counter() - t) * 1000))\n")


_summary = roomlib.summary


def run(Runboxd, Client, create_session, delete_session, binary, n, log):
    """The figures (a dict of ms summaries): data_suspend, data_resume_suspended, data_docker_pause,
    data_docker_unpause, data_hibernate_small / _1g, data_resume_hibernated_small / _1g,
    data_fork_small / _1g, data_create_cold, data_read_share_1g, data_read_workspace_1g."""
    F = {}
    work = tempfile.mkdtemp(prefix="runbox-bench-data-")
    share = tempfile.mkdtemp(prefix="runbox-bench-share-")  # never under runboxd's data (refused)
    os.chmod(share, 0o755)
    with open(os.path.join(share, "big.bin"), "wb") as f:  # 1 GB on the host, for the share's read
        chunk = os.urandom(8 << 20)
        for _ in range(GB // len(chunk)):
            f.write(chunk)
    rb = None
    plain = "runbox-bench-data-plain-%d" % os.getpid()
    try:
        rb = Runboxd(binary, work, 0, ["--max-workspace-size=1200m", "--share=bench=%s" % share],
                     name="runboxd-data")
        c = Client(rb.port)

        def call(path, body=None, want=200):
            t0 = time.perf_counter()
            st, doc = c.json("POST", path, body)
            dt = (time.perf_counter() - t0) * 1000
            if st != want:
                raise RuntimeError("%s: %s %r" % (path, st, doc))
            return dt, doc

        def cell(sid, code):
            st, doc = c.json("POST", "/execute", {"session_id": sid, "code": code, "wait": True, "timeout": 300})
            text = "".join(o.get("text", "") for o in doc.get("outputs", []) if o.get("name") == "stdout")
            if doc.get("status") != "completed":
                raise RuntimeError("data bench cell failed: %r" % (doc,))
            return text

        log("data: suspend + resume x%d, beside docker pause + unpause of a plain container" % n)
        _, s = create_session(c, {"language": "python"})
        sid = s["session_id"]
        cell(sid, "x = 1")
        sus, res = [], []
        for _ in range(n):
            sus.append(call("/sessions/%s/pause" % sid, {"mode": "suspend"})[0])
            res.append(call("/sessions/%s/resume" % sid)[0])
        F["data_suspend"], F["data_resume_suspended"] = _summary(sus), _summary(res)
        subprocess.run(["docker", "run", "-d", "--name", plain, "--network", "none", "--entrypoint", "sleep",
                        os.environ.get("RUNBOX_IMAGE", "runbox-sandbox:latest"), "infinity"], check=True,
                       capture_output=True, timeout=120)
        dp, du = [], []
        for _ in range(n):
            t0 = time.perf_counter()
            subprocess.run(["docker", "pause", plain], check=True, capture_output=True, timeout=60)
            t1 = time.perf_counter()
            subprocess.run(["docker", "unpause", plain], check=True, capture_output=True, timeout=60)
            dp.append((t1 - t0) * 1000)
            du.append((time.perf_counter() - t1) * 1000)
        F["data_docker_pause"], F["data_docker_unpause"] = _summary(dp), _summary(du)
        delete_session(c, sid)

        log("data: cold session create x%d (the baseline of a resume from hibernation)" % n)
        cold = []
        for _ in range(n):
            dt, s2 = create_session(c, {"language": "python"})
            cold.append(dt * 1000)
            delete_session(c, s2["session_id"])
        F["data_create_cold"] = _summary(cold)

        for label, size, reps in (("small", 0, n), ("1g", GB, max(2, n // 3))):
            log("data: hibernate + resume and fork of a %s workspace x%d" % (label, reps))
            _, s = create_session(c, {"language": "python", "execution_options": {"workspace_size": "1200m"}})
            sid = s["session_id"]
            cell(sid, "import os\nopen('/workspace/a.txt', 'w').write('a')\n" +
                 ("f = open('/workspace/big.bin', 'wb')\nfor _ in range(%d): f.write(os.urandom(8 << 20))\nf.close()"
                  % (size // (8 << 20)) if size else ""))
            hib, rsm, frk = [], [], []
            for _ in range(reps):
                hib.append(call("/sessions/%s/pause" % sid, {"mode": "hibernate"})[0])
                rsm.append(call("/sessions/%s/resume" % sid)[0])
                dt, f = call("/sessions/%s/fork" % sid, None, 201)
                frk.append(dt)
                delete_session(c, f["session_id"])
            F["data_hibernate_" + label] = _summary(hib)
            F["data_resume_hibernated_" + label] = _summary(rsm)
            F["data_fork_" + label] = _summary(frk)
            if size:
                log("data: reading 1 GB from the share and from the workspace x%d" % reps)
                _, s3 = create_session(c, {"language": "python", "execution_options": {
                    "mounts": [{"share": "bench", "path": "/workspace/bench"}]}})
                rs, rw = [], []
                for _ in range(reps + 1):  # the first of each is a warm-up
                    a = float(cell(s3["session_id"], READ % ("/workspace/bench/big.bin", GB)).split()[-1])
                    b = float(cell(sid, READ % ("/workspace/big.bin", GB)).split()[-1])
                    rs.append(a), rw.append(b)
                F["data_read_share_1g"], F["data_read_workspace_1g"] = _summary(rs[1:]), _summary(rw[1:])
                delete_session(c, s3["session_id"])
                log("data: volumes: create, a session mounting one, reading 1 GB from it x%d" % reps)
                vc, vs, vd = [], [], []
                for i in range(n):
                    vc.append(call("/volumes", {"name": "bench%d" % i}, 201)[0])
                    dt, s4 = create_session(c, {"language": "python",
                                                "execution_options": {"mounts": [{"volume": "bench%d" % i}]}})
                    vs.append(dt * 1000)
                    delete_session(c, s4["session_id"])
                    t0 = time.perf_counter()
                    st, _ = c.json("DELETE", "/volumes/bench%d" % i)
                    if st != 204:
                        raise RuntimeError("DELETE /volumes: %s" % st)
                    vd.append((time.perf_counter() - t0) * 1000)
                F["data_volume_create"], F["data_volume_session"] = _summary(vc), _summary(vs)
                F["data_volume_delete"] = _summary(vd)
                call("/volumes", {"name": "big", "quota_bytes": 2 * GB}, 201)
                _, s4 = create_session(c, {"language": "python", "execution_options": {"mounts": [{"volume": "big"}]}})
                cell(s4["session_id"], "import os\nf = open('/workspace/big/big.bin', 'wb')\n"
                     "for _ in range(%d): f.write(os.urandom(8 << 20))\nf.close()" % (GB // (8 << 20)))
                rv = [float(cell(s4["session_id"], READ % ("/workspace/big/big.bin", GB)).split()[-1])
                      for _ in range(reps + 1)]
                F["data_read_volume_1g"] = _summary(rv[1:])
                delete_session(c, s4["session_id"])
                c.json("DELETE", "/volumes/big")
            delete_session(c, sid)
        c.close()
    finally:
        subprocess.run(["docker", "rm", "-f", plain], capture_output=True, timeout=120)
        if rb is not None:
            # a failed run leaves no session (nor kept volume, nor volume) behind
            roomlib.delete_live_sessions(Client(rb.port), delete_session)
            try:
                st, vols = Client(rb.port).json("GET", "/volumes")
                for v in (vols or {}).get("volumes", []):
                    Client(rb.port).json("DELETE", "/volumes/%s" % v["volume_id"])
            except Exception:
                pass
            rb.stop()
        shutil.rmtree(work, ignore_errors=True)
        shutil.rmtree(share, ignore_errors=True)
    return F


def rows(F, fmt):
    """The report's rows for these figures (name, n, min, median, p99, unit, load, target)."""
    out = []
    lat = roomlib.row_adder(F, fmt, out)
    if not F:
        return out
    lat("suspend (POST .../pause)", "data_suspend")
    lat("  baseline: docker pause", "data_docker_pause")
    lat("resume a suspended session", "data_resume_suspended")
    lat("  baseline: docker unpause", "data_docker_unpause")
    lat("hibernate, small workspace", "data_hibernate_small")
    lat("resume from hibernation, small workspace", "data_resume_hibernated_small", "E2B: ~1 s")
    lat("  baseline: cold session create", "data_create_cold")
    lat("hibernate, 1 GB workspace", "data_hibernate_1g", "E2B: ~4 s per GB")
    lat("resume from hibernation, 1 GB workspace", "data_resume_hibernated_1g", "E2B: ~1 s")
    lat("fork, small workspace", "data_fork_small")
    lat("fork, 1 GB workspace", "data_fork_1g")
    lat("read 1 GB from a read-only share", "data_read_share_1g")
    lat("  baseline: read 1 GB from the workspace", "data_read_workspace_1g")
    lat("read 1 GB from a volume", "data_read_volume_1g")
    lat("create a volume (POST /volumes)", "data_volume_create")
    lat("create a session that mounts a volume", "data_volume_session")
    lat("  baseline: cold session create", "data_create_cold")
    lat("delete a volume right after its session", "data_volume_delete")
    return out

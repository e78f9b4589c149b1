"""The container around the supervisor: cgroup memory, other processes, workspace files.

Runs on the trusted side, inside the supervisor. What it reads (the memory cgroup, /proc,
/workspace) the user's code can change or fill, so every reader is bounded and fails soft. It
decides nothing: the supervisor calls it to describe a worker's end (describe_exit), to kill
what escaped the worker's process group (kill_strays, only inside a sandbox), to protect
itself (separate_privileges, make_undumpable) and to list the files a cell wrote (workspace_snapshot,
files_written). It is not the worker handling (supervisor) and never runs user code.
"""

import os
import re
import signal
import stat


def describe_exit(status, oom=False):
    """The worker's end in plain words; oom: the sandbox's memory cgroup killed a process."""
    if status is None:
        return "the interpreter stopped"
    if status < 0:
        sig = -status
        try:
            name = signal.Signals(sig).name
        except ValueError:
            name = "signal %d" % sig
        if sig == signal.SIGKILL and oom:
            limit = memory_limit()
            return ("the interpreter was killed because the sandbox ran out of memory (%s)"
                    % ("memory_limit is %d MiB" % (limit // (1024 * 1024)) if limit else "see memory_limit"))
        if sig == signal.SIGSEGV:
            return ("the interpreter crashed (SIGSEGV, signal 11: a segmentation fault, for instance from a "
                    "recursion too deep for the C stack after sys.setrecursionlimit)")
        return "the interpreter was killed by %s (signal %d)" % (name, sig)
    return "the interpreter exited with code %d" % status


_CGROUP_OOM = ("/sys/fs/cgroup/memory.events", "/sys/fs/cgroup/memory/memory.oom_control")
_CGROUP_LIMIT = ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes")


def oom_kills():
    """How many processes the sandbox's memory cgroup has killed (cgroup v2 or v1), or None."""
    for path in _CGROUP_OOM:
        try:
            with open(path) as f:
                for line in f:
                    k, _, v = line.partition(" ")
                    if k == "oom_kill":
                        return int(v)
        except (OSError, ValueError):
            continue
    return None


def memory_limit():
    """The session's memory limit in bytes (RUNBOX_MEMORY_MB from runboxd, which excludes the
    tmpfs sizes it adds to the cgroup), else the memory cgroup's limit, else None."""
    try:
        return int(os.environ["RUNBOX_MEMORY_MB"]) * 1024 * 1024
    except (KeyError, ValueError):
        pass
    for path in _CGROUP_LIMIT:
        try:
            with open(path) as f:
                v = int(f.read().strip())
            return v if v < (1 << 60) else None
        except (OSError, ValueError):
            continue
    return None


def in_sandbox():
    """True inside a runbox container (set by runboxd), where every other process of the
    sandbox is the user's and may be killed when the interpreter is replaced."""
    return os.environ.get("RUNBOX_SANDBOX") == "1" and os.path.exists("/.dockerenv")


_proc_fd = None


def _proc():
    """A descriptor of /proc, kept open: lookups that start there never check the root
    directory, which on fuse-overlayfs (Docker's storage driver on some hosts) is a request to
    the FUSE daemon, a host process that on a busy host kept each of the hundreds of opens of a
    /proc scan waiting (a fork bomb's copies queue their own requests there)."""
    global _proc_fd
    if _proc_fd is None:
        _proc_fd = os.open("/proc", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    return _proc_fd


def proc_read(rel, limit=8192):
    """The start of /proc/<rel> (bytes); OSError as open() raises it."""
    fd = os.open(rel, os.O_RDONLY | os.O_CLOEXEC, dir_fd=_proc())
    try:
        return os.read(fd, limit)
    finally:
        os.close(fd)


def proc_pids():
    """The names of /proc's entries that are pids (strings); OSError when it cannot be listed."""
    return [n for n in os.listdir(_proc()) if n.isdigit()]


def kill_strays(spare=(), groups=()):
    """SIGKILL every process of the container but PID 1, this one, spare (the zygote) and the
    members of the process groups in groups (the workers of the sandbox's other contexts):
    processes that escaped the worker's process group (setsid, daemons, fork bombs). With nothing
    to spare, one kill(-1), which the kernel applies to all of them at once, so a fork bomb cannot
    refill the pids a scan of /proc frees. With a process to spare, one kill(-1, SIGSTOP) first
    (just as atomic: a fork that a signal interrupts fails), then every stopped process but the
    spared ones is killed by a scan of /proc, which nothing refills, and the spared ones go on.
    Only inside a sandbox, where every other process is the user's."""
    if not in_sandbox():
        return
    if not spare and not groups:
        try:
            os.kill(-1, signal.SIGKILL)
        except OSError:
            pass
        return
    try:
        os.kill(-1, signal.SIGSTOP)
    except OSError:
        pass
    keep = {1, os.getpid()} | set(spare)
    killed = set()
    try:
        for _ in range(3):
            new = 0
            try:
                names = proc_pids()
            except OSError:
                break
            for name in names:
                if int(name) in keep or int(name) in killed:
                    continue
                try:
                    fields = proc_read(name + "/stat").rsplit(b")", 1)[1].split()
                    state = fields[0]
                    if groups and int(fields[2]) in groups:
                        keep.add(int(name))
                    elif state != b"Z":
                        os.kill(int(name), signal.SIGKILL)
                        killed.add(int(name))
                        new += 1
                except (OSError, IndexError):
                    pass
            if not new:
                break
    finally:
        for pid in spare:
            try:
                os.kill(pid, signal.SIGCONT)
            except OSError:
                pass
        for pgid in groups:
            try:
                os.killpg(pgid, signal.SIGCONT)
            except OSError:
                pass


SUPERVISOR_UID = 999           # the supervisor's own user when the container starts as root
SANDBOX_UID = 1000             # the user code's (the image's user "sandbox")
_CAPS = {"CAP_KILL": 5, "CAP_SETGID": 6, "CAP_SETUID": 7}


def _capset(caps):
    """Sets this process's effective and permitted capabilities to exactly caps (bit mask)."""
    import ctypes

    class Header(ctypes.Structure):
        _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]

    class Data(ctypes.Structure):
        _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32),
                    ("inheritable", ctypes.c_uint32)]

    libc = ctypes.CDLL(None, use_errno=True)
    header = Header(0x20080522, 0)  # _LINUX_CAPABILITY_VERSION_3
    data = (Data * 2)()
    data[0].effective = data[0].permitted = caps
    if libc.capset(ctypes.byref(header), data) != 0:
        raise OSError(ctypes.get_errno(), "capset: %s" % os.strerror(ctypes.get_errno()))


def separate_privileges():
    """Privilege separation, when the container starts as root (inside a sandbox only): this
    process becomes SUPERVISOR_UID with no capabilities but CAP_KILL (to signal the user's
    processes), CAP_SETUID and CAP_SETGID (to start each worker as SANDBOX_UID), and user code
    then runs as another user: it cannot open this process's or docker-init's (root's)
    /proc/<pid>/fd, where the container's stdout is, signal them, ptrace, renice or prlimit them.
    Returns (uid, gid) for the workers, or None when the container starts as the sandbox user
    (then all share one user, as before). Started as root without those capabilities it refuses
    to run: user code must never run as root."""
    if os.geteuid() != 0 or not in_sandbox():
        return None
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)
    keep = sum(1 << bit for bit in _CAPS.values())
    try:
        if libc.prctl(8, 1, 0, 0, 0) != 0:  # PR_SET_KEEPCAPS: keep the permitted set over setuid
            raise OSError(ctypes.get_errno(), "prctl(PR_SET_KEEPCAPS)")
        os.setgroups([])
        os.setresgid(SUPERVISOR_UID, SUPERVISOR_UID, SUPERVISOR_UID)
        os.setresuid(SUPERVISOR_UID, SUPERVISOR_UID, SUPERVISOR_UID)
        _capset(keep)
        libc.prctl(8, 0, 0, 0, 0)
        libc.prctl(38, 1, 0, 0, 0)  # PR_SET_NO_NEW_PRIVS, inherited by the workers
    except OSError as e:
        raise SystemExit("runner: started as root, but cannot become uid %d keeping only %s (%s); the container "
                         "needs CapAdd %s; refusing to run user code as root"
                         % (SUPERVISOR_UID, ", ".join(_CAPS), e, ", ".join(c[4:] for c in _CAPS)))
    return (SANDBOX_UID, SANDBOX_UID)


def make_undumpable():
    """Other processes of the same user (the worker, user code) cannot open this process's
    /proc/<pid>/fd (the protocol pipes) or ptrace it."""
    try:
        import ctypes
        ctypes.CDLL(None, use_errno=True).prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE, 0
    except (OSError, AttributeError):
        pass


WORKSPACE = b"/workspace"
WORKSPACE_SCAN_MAX = 5000      # entries looked at when listing the files a cell wrote
FILES_WRITTEN_MAX = 100        # files reported per cell
_PLAIN_NAME = re.compile(rb"[\x20-\x5b\x5d-\x7e]*")


def name_form(raw: bytes) -> str:
    """A path's bytes in runbox's name form (base/codec.h, as the files API lists and takes
    paths): valid UTF-8 as it is, except control characters and '\\'; those, and every byte
    that is not part of valid UTF-8, as \\xhh. Reversible, and always valid JSON text."""
    if _PLAIN_NAME.fullmatch(raw):
        return raw.decode()
    out = []
    for ch in raw.decode("utf-8", "surrogateescape"):
        c = ord(ch)
        if 0xDC80 <= c <= 0xDCFF:
            c -= 0xDC00
        elif c >= 0x20 and c != 0x7F and c != 0x5C:
            out.append(ch)
            continue
        out.append("\\x%02x" % c)
    return "".join(out)


def workspace_snapshot():
    """{relative path (bytes): (mtime_ns, size)} of the regular files under /workspace (symlinks
    not followed), or None when there are more than WORKSPACE_SCAN_MAX entries (then nothing is
    reported for the cell rather than a wrong list). Names are bytes: any the kernel allows."""
    snap, seen = {}, 0
    try:
        for dp, dns, fns in os.walk(WORKSPACE):
            if dp == WORKSPACE and b".runbox" in dns:
                dns.remove(b".runbox")  # installed packages are not files the cell wrote
            seen += len(dns) + len(fns)
            if seen > WORKSPACE_SCAN_MAX:
                return None
            for n in fns:
                p = os.path.join(dp, n)
                try:
                    st = os.lstat(p)
                except OSError:
                    continue
                if stat.S_ISREG(st.st_mode):
                    snap[os.path.relpath(p, WORKSPACE)] = (st.st_mtime_ns, st.st_size)
    except OSError:
        return None
    return snap


def files_written(before):
    """[{path (name form), size, modified (ms)}] of files created or changed since the snapshot
    before."""
    if before is None:
        return []
    after = workspace_snapshot()
    if after is None:
        return []
    out = []
    for p in sorted(after):
        if before.get(p) != after[p]:
            out.append({"path": name_form(p), "size": after[p][1], "modified": after[p][0] // 1000000})
            if len(out) >= FILES_WRITTEN_MAX:
                break
    return out

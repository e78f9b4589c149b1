"""The zygote: a Python interpreter that has imported the preload and forks fresh workers.

Runs on the untrusted side of the trust boundary, as the sandbox user (uid 1000, no
capabilities), in a process of its own that the supervisor starts with runbox_worker.py
--zygote. It imports the modules of RUNBOX_PRELOAD (runboxd's --preload, e.g.
"numpy,pandas,matplotlib.pyplot"), draws and closes one small chart when pyplot is among them
(what loads only at the first chart: _first_figure), and then waits on
its socket to the supervisor: each request carries the four pipe ends of a new worker (command
in, control out, stdout, stderr) and is answered with the pid of a worker forked from this
process, so that a fresh interpreter (at start and after every reset) has the preload at the
cost of a fork instead of seconds of imports. IPython (runbox_runner.shell) is imported here
too, whatever the preload, and its InteractiveShell is made once here, with its history off;
each worker gives it a history of its own after the fork (in memory: an SQLite connection must
not cross a fork). The user's namespace stays
empty: the modules are in sys.modules, not in __main__ (python_worker makes a new one).

What makes the fork safe:
  - threads: numerical libraries start their thread pools at import (OpenBLAS: one thread per
    CPU). The imports run with OPENBLAS_NUM_THREADS, OMP_NUM_THREADS and the like set to 1, so
    the zygote has one thread when it forks (it checks, and refuses to fork with more); a worker
    then sets the pool size the user would have got without the preload (_blas_threads).
    pyarrow (pandas imports it) starts a jemalloc background thread at load: the imports run with
    its background_thread option off (JE_ARROW_MALLOC_CONF; jemalloc then purges on allocation);
  - random state: every worker reseeds `random` and numpy's global generator from the OS, so two
    workers never share a sequence (the hash seed of str/bytes is the zygote's: it cannot change
    after start);
  - open files: the zygote holds none but /dev/null on 0-2 and its socket, which a worker closes
    before it runs anything; the pipes it passes on are closed in the zygote after the fork;
  - memory: gc.freeze() after the imports keeps the collector from touching (and so copying) the
    shared objects in every worker;
  - process tree: the worker is forked from a short-lived child that exits at once, so the
    worker is adopted by the supervisor (a child subreaper): the supervisor waits for it,
    signals its process group and reads its exit status as for any worker it started itself.
    The worker starts a session of its own (its own process group) before it reports its pid.
The zygote is not dumpable, so user code (same uid) cannot ptrace it or open its fds; a worker
makes itself dumpable again. It may still signal the zygote (SIGKILL, SIGSTOP): the supervisor
then starts workers another way, which costs the user only time.

Control messages, one JSON object per datagram on the SOCK_SEQPACKET socket:
  zygote -> supervisor  {"t": "ready", "ms", "modules": [top-level names in sys.modules],
                        "failed": {name: error}, "threads"} once the preload is imported;
                        {"t": "forked", "seq", "pid"} or {"t": "failed", "seq", "error"}
  supervisor -> zygote  {"fork": seq} with the worker's four fds (SCM_RIGHTS)
"""

import json
import os
import signal
import socket
import sys
import time

THREAD_VARS = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "BLIS_NUM_THREADS",
               "NUMEXPR_NUM_THREADS", "VECLIB_MAXIMUM_THREADS", "GOTO_NUM_THREADS")
# jemalloc's options as pyarrow's bundled copy (symbol prefix je_arrow_) reads them, at load
JEMALLOC_CONF_VAR = "JE_ARROW_MALLOC_CONF"
MSG_MAX = 65536
PR_SET_DUMPABLE = 4


def _prctl_dumpable(flag):
    try:
        import ctypes
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_DUMPABLE, flag, 0, 0, 0)
    except (OSError, AttributeError):
        pass


def preload_names(text):
    """The module names of a RUNBOX_PRELOAD value (comma-separated; blanks ignored)."""
    return [n.strip() for n in (text or "").split(",") if n.strip()]


def _import_preload(names):
    """Imports names; returns {name: error} of those that failed (the worker works without them)."""
    import importlib
    failed = {}
    for name in names:
        try:
            importlib.import_module(name)
        except BaseException as e:  # a broken module must not take the zygote with it
            failed[name] = ("%s: %s" % (type(e).__name__, e))[:500]
    if "matplotlib.pyplot" in sys.modules:
        try:
            _first_figure(sys.modules["matplotlib.pyplot"], sys.modules.get("pandas"))
        except BaseException as e:
            failed["(first figure)"] = ("%s: %s" % (type(e).__name__, e))[:500]
    return failed


def _first_figure(plt, pd):
    """Draws one small chart as a cell would (with pandas when it is preloaded) and renders it to
    PNG as python_worker sends figures, then closes it: the Agg backend, fonts, tick formatters,
    pandas' plotting backend and the PNG writer load on the first chart (0.4 s of a first
    plotting cell on a busy CPU), and a worker forked afterwards has them."""
    import io
    try:
        if pd is not None:
            pd.DataFrame({"a": [1, 2, 3]}).plot(title="t")
        else:
            fig, ax = plt.subplots()
            ax.plot([1, 2, 3], label="a")
            ax.set_title("t")
            ax.legend()
        try:  # the way python_worker.send_figures renders them (IPython's print_figure), with
            # the inline backend's metadata (tens of ms of imports)
            from IPython.core.pylabtools import print_figure
            import matplotlib_inline.backend_inline  # noqa: F401
        except ImportError:
            print_figure = None
        for num in plt.get_fignums():
            if print_figure is not None:
                print_figure(plt.figure(num), "png")
            else:
                plt.figure(num).savefig(io.BytesIO(), format="png", bbox_inches="tight")
    finally:
        plt.close("all")


def _threads():
    try:
        return len(os.listdir("/proc/self/task"))
    except OSError:
        return 1


def main(sock_fd, entry):
    """Imports the preload, reports ready, and forks a worker for each request until the socket
    closes. Returns only in the zygote; a worker never comes back here."""
    from runbox_runner import python_worker  # noqa: F401  (in every worker; loaded once here)
    from runbox_runner import shell  # noqa: F401  (IPython: each worker makes its shell after the fork)
    os.set_inheritable(sock_fd, False)
    sock = socket.socket(fileno=sock_fd)
    started = time.monotonic()
    _prctl_dumpable(0)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # aimed at workers; a worker installs its own handler
    python_worker.seed_matplotlib()
    saved = {k: os.environ.get(k) for k in THREAD_VARS + (JEMALLOC_CONF_VAR,)}
    for k in THREAD_VARS:
        os.environ[k] = "1"
    os.environ[JEMALLOC_CONF_VAR] = ",".join(filter(None, (saved[JEMALLOC_CONF_VAR], "background_thread:false")))
    failed = _import_preload(preload_names(os.environ.get("RUNBOX_PRELOAD")))
    for k, v in saved.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v
    try:
        shell.prepare()
    except BaseException as e:  # the workers then make their own
        failed["(IPython shell)"] = ("%s: %s" % (type(e).__name__, e))[:500]
    import gc
    gc.collect()
    gc.freeze()
    modules = sorted({m.partition(".")[0] for m in list(sys.modules)})
    _send(sock, {"t": "ready", "ms": int((time.monotonic() - started) * 1000), "modules": modules[:5000],
                 "failed": failed, "threads": _threads()})
    while True:
        try:
            data, fds, _, _ = socket.recv_fds(sock, MSG_MAX, 8)
        except InterruptedError:
            continue
        except OSError:
            return
        if not data:
            for fd in fds:
                os.close(fd)
            return
        try:
            seq = json.loads(data).get("fork")
        except (ValueError, AttributeError):
            seq = None
        if not isinstance(seq, int) or len(fds) != 4:
            for fd in fds:
                os.close(fd)
            continue
        _send(sock, _fork(sock, seq, fds, entry))


def _send(sock, msg):
    try:
        sock.send(json.dumps(msg).encode("ascii"))
    except OSError:
        pass


def _fork(sock, seq, fds, entry):
    """Forks a worker on fds (command in, control out, stdout, stderr); the answer to seq."""
    threads = _threads()
    if threads != 1:
        for fd in fds:
            os.close(fd)
        return {"t": "failed", "seq": seq, "error": "the zygote runs %d threads; forking it is not safe" % threads}
    for f in (sys.stdout, sys.stderr):
        try:
            f.flush()
        except Exception:
            pass
    r, w = os.pipe()
    try:
        middle = os.fork()
    except OSError as e:
        for fd in fds + [r, w]:
            os.close(fd)
        return {"t": "failed", "seq": seq, "error": "fork: %s" % e}
    if middle == 0:
        # The short-lived middle process: its child, the worker, is adopted by the supervisor
        # when it exits.
        code = 0
        try:
            os.close(r)
            if os.fork() == 0:
                _become_worker(sock, fds, w, entry)  # never returns
        except BaseException:
            code = 1
        os._exit(code)
    os.close(w)
    for fd in fds:
        os.close(fd)
    data = b""
    try:
        while len(data) < 64:
            chunk = os.read(r, 64)
            if not chunk:
                break
            data += chunk
    finally:
        os.close(r)
    try:
        os.waitpid(middle, 0)
    except ChildProcessError:
        pass
    try:
        pid = int(data.decode("ascii").strip())
    except ValueError:
        return {"t": "failed", "seq": seq, "error": "the worker did not start"}
    return {"t": "forked", "seq": seq, "pid": pid}


def _become_worker(sock, fds, report_fd, entry):
    """In the forked worker: its own session, dumpable again, its pipes on 0-2 and the control
    fds, a fresh random state and the thread pool sizes of an unpreloaded interpreter; then the
    worker's loop. Never returns (os._exit)."""
    code = 1
    try:
        cmd_fd, ctrl_fd, out_fd, err_fd = fds
        os.setsid()
        _prctl_dumpable(1)
        sock.close()
        os.dup2(out_fd, 1)
        os.dup2(err_fd, 2)
        os.close(out_fd)
        os.close(err_fd)
        os.write(report_fd, str(os.getpid()).encode("ascii"))
        os.close(report_fd)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        _reseed()
        _blas_threads()
        from runbox_runner import python_worker
        sys.argv[:] = [entry, str(cmd_fd), str(ctrl_fd)]  # as a worker started by the supervisor sees it
        python_worker.main(sys.argv[1:], entry)
        code = 0
        try:
            import atexit
            atexit._run_exitfuncs()
        except BaseException:
            pass
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    except BaseException:
        try:
            import traceback
            traceback.print_exc()
        except BaseException:
            pass
    finally:
        for f in (sys.stdout, sys.stderr):
            try:
                f.flush()
            except BaseException:
                pass
        os._exit(code)


def _reseed():
    """Each worker gets its own random state (the zygote's would repeat in every worker)."""
    import random
    random.seed()
    nr = sys.modules.get("numpy.random")
    if nr is not None:
        try:
            nr.seed()
        except Exception:
            pass


def _wanted_threads():
    """The BLAS/OpenMP pool size the user's interpreter would have had without the preload: the
    first of the thread variables that is set, else the CPUs this process may run on."""
    for k in ("OPENBLAS_NUM_THREADS", "GOTO_NUM_THREADS", "OMP_NUM_THREADS"):
        try:
            n = int(os.environ.get(k, "").split(",")[0])
            if n > 0:
                return n
        except ValueError:
            continue
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def _blas_threads():
    """Sets the pools of the BLAS and OpenMP libraries the preload loaded (with one thread) to
    _wanted_threads()."""
    n = _wanted_threads()
    if n <= 1:
        return
    try:
        with open("/proc/self/maps") as f:
            libs = {line.split()[-1] for line in f if ".so" in line and "/" in line}
    except OSError:
        return
    import ctypes
    for path in sorted(libs):
        base = os.path.basename(path).lower()
        if "blas" in base:
            names = ("openblas_set_num_threads", "openblas_set_num_threads64_", "scipy_openblas_set_num_threads64_",
                     "scipy_openblas_set_num_threads")
        elif "gomp" in base or "libomp" in base or "iomp" in base:
            names = ("omp_set_num_threads",)
        else:
            continue
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        for name in names:
            fn = getattr(lib, name, None)
            if fn is not None:
                try:
                    fn(ctypes.c_int(n))
                except Exception:
                    pass
                break

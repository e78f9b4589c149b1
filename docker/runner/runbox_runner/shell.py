"""IPython as the Python worker's kernel: the InteractiveShell that runs each cell.

Runs on the untrusted side (the user's process), like python_worker, which owns the control
channel and makes one shell per worker (make_shell), after the fork from the zygote: the
zygote imports this module (and so IPython) once, and each worker builds its own shell, whose
history lives in memory (an SQLite connection must not cross a fork; a worker's history ends
with it). A cell runs through InteractiveShell.run_cell, so it has IPython's semantics: its
input transformations (`!cmd`, `%magic`, `%%cell_magic`, `obj?`, dedent of an indented cell),
every magic IPython has, `display()` and `IPython.display`, the display formatter's mime
bundles and `_repr_*_` methods, `_`/`Out`/`In` and execution counts. What differs from a plain
IPython, and why:
  - the value of a last expression, display() calls and errors go to python_worker's control
    channel (the worker's send_result / send_display / send_error), not to stdout;
  - a cell is named `<cell-N>` (N: its execution count) in tracebacks;
  - `!cmd`, `x = !cmd` and `%sx` run in bash with the cell's stdout and stderr (IPython runs them
    in a pseudo-terminal, which merges the two);
  - `%pip` installs into the session's packages folder and, without a network, says how to
    install instead (pipcheck);
  - the threads IPython starts for `%%bash` and the other script magics write to the running
    cell's output (python_worker.FOLLOW), not to that of the cell that first started them.
"""

import os
import sys
import warnings

from IPython.core.displayhook import DisplayHook
from IPython.core.displaypub import DisplayPublisher
from IPython.core.error import UsageError
from IPython.core.interactiveshell import InteractiveShell
from IPython.core.magic import Magics, line_magic, magics_class
from IPython.utils.text import SList

from runbox_runner import pipcheck

SHELL = "/bin/bash"
# IPython's own package: its frames are the runner's machinery, left out of tracebacks.
IPYTHON_DIR = os.path.dirname(os.path.dirname(os.path.abspath(sys.modules["IPython.core.interactiveshell"].__file__)))


class _DisplayHook(DisplayHook):
    """The value of a cell's last expression: its mime bundle to the worker, nothing printed."""

    def start_displayhook(self):
        pass

    def write_output_prompt(self):
        pass

    def compute_format_data(self, result):
        # A str value goes out as itself too: E2B shows a string result as the string, not its repr.
        self.str_value = result if isinstance(result, str) else None
        return super().compute_format_data(result)

    def write_format_data(self, format_dict, md_dict=None):
        self.shell.runbox.send_result(format_dict, md_dict, getattr(self, "str_value", None))

    def finish_displayhook(self):
        pass


class _DisplayPublisher(DisplayPublisher):
    """display(), update_display and clear_output: to the worker."""

    def publish(self, data, metadata=None, source=None, *, transient=None, update=False, **kwargs):
        self.shell.runbox.send_display(data, metadata, transient, update)

    def clear_output(self, wait=False):
        self.shell.runbox.send_clear(bool(wait))


@magics_class
class _RunboxMagics(Magics):
    """runbox's %pip: into the session's packages folder; refused at once without a network."""

    @line_magic
    def pip(self, line):
        """Run pip in the sandbox, installing into the session's packages folder.

        Without a network an install from a package index is refused with the way to install
        instead (runboxd's installer); packages already installed answer as pip does."""
        import shlex
        argv = shlex.split(line)
        refusal = pipcheck.pip_refusal(argv, "%pip")
        satisfied = pipcheck.pip_satisfied(argv) if refusal is not None else None
        if satisfied is not None:
            if not any(a.startswith("-q") or a == "--quiet" for a in argv):
                print("\n".join(satisfied))
            return
        if refusal is not None:
            raise UsageError(refusal)
        self.shell.runbox_run([sys.executable, "-m", "pip", "--disable-pip-version-check",
                               *pipcheck.pip_into_session(argv)])


class RunboxShell(InteractiveShell):
    """InteractiveShell whose outputs go to the worker (runbox, python_worker._Worker)."""

    runbox = None

    def init_io(self):
        pass

    def ask_exit(self):
        """exit() and quit(): as in a Python script, SystemExit (the cell ends with it; the
        interpreter and its variables stay)."""
        raise SystemExit()

    async def run_code(self, code_obj, result=None, *, async_=False):
        """As IPython's, with the worker's `running` on while the user's code runs, and only
        then: the worker's SIGINT handler raises KeyboardInterrupt only in it, never in IPython's
        own bookkeeping (its history's locks, its traps) before and after. An interrupt the
        supervisor sent before (when it found the worker not running) is taken here."""
        w = self.runbox
        w.running = True
        try:
            if w.interrupted_before_start(w.cell_n):
                try:
                    raise KeyboardInterrupt
                except KeyboardInterrupt as e:
                    if result is not None:
                        result.error_in_exec = e
                    self.showtraceback()
                    return True
            return await super().run_code(code_obj, result, async_=async_)
        finally:
            w.running = False

    # -- shell commands: bash with the cell's own stdout and stderr
    def runbox_run(self, argv, capture=False):
        """Runs ARGV with the cell's fd 1/2 (stdout captured when CAPTURE); sets _exit_code and
        returns the captured text. An interrupt kills the process (subprocess.run does)."""
        import subprocess
        for f in (sys.stdout, sys.stderr):
            try:
                f.flush()
            except Exception:
                pass
        r = subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE if capture else None)
        self.user_ns["_exit_code"] = r.returncode
        if r.returncode != 0 and self.system_raise_on_error:
            raise subprocess.CalledProcessError(r.returncode, argv[-1])
        return r.stdout.decode("utf-8", "replace") if capture else None

    def system(self, cmd):
        """`!cmd`: runs cmd in bash ({expr} and $name expanded as IPython does). A plain pip
        call that cannot work without a network fails the cell as `%pip` does (the same
        refusal, the same error status), instead of printing it from a command the cell ignores."""
        cmd = self.var_expand(cmd, depth=1)
        argv = pipcheck.is_pip_command(cmd)
        if argv is not None:
            refusal = pipcheck.pip_refusal(argv, "!pip")
            if refusal is not None and pipcheck.pip_satisfied(argv) is None:
                raise UsageError(refusal)
        self.runbox_run([SHELL, "-c", cmd])

    system_piped = system
    system_raw = system

    def getoutput(self, cmd, split=True, depth=0):
        """`x = !cmd`, `!!cmd` and %sx: cmd's stdout, as an SList of its lines when split."""
        out = self.runbox_run([SHELL, "-c", self.var_expand(cmd, depth=depth + 1)], capture=True)
        return SList(out.splitlines()) if split else out

    # -- errors: to the worker, in Python's own format (the worker drops the runner's frames).
    # IPython's own formatting (ultratb, stack_data) is not used: its first use imports for
    # seconds, which an interrupted cell does not have before the supervisor's grace ends.
    def showtraceback(self, exc_tuple=None, filename=None, tb_offset=None, exception_only=False,
                      running_compiled_code=False):
        try:
            etype, value, tb = self._get_exc_info(exc_tuple)
        except ValueError:
            return
        if issubclass(etype, SyntaxError):
            self.showsyntaxerror(filename, running_compiled_code)
        elif etype is UsageError:
            self.show_usage_error(value)
        else:
            if value.__traceback__ is None and tb is not None:
                value = value.with_traceback(tb)
            self.runbox.send_error(value, None)

    def _format_exception_for_storage(self, exception, filename=None, running_compiled_code=False):
        """What history keeps of a cell's error (for %notebook): the traceback the worker sent,
        not one IPython formats again (ultratb: stack_data's import and source reading cost
        hundreds of ms, after the error was sent and before the cell's done)."""
        sent = self.runbox.last_error
        if sent is not None and sent.get("ename") in (type(exception).__name__, "UsageError"):
            return sent
        import traceback
        return {"ename": type(exception).__name__, "evalue": str(exception),
                "traceback": traceback.format_exception_only(type(exception), exception)}

    def _showtraceback(self, etype, evalue, stb):
        self.runbox.send_error(evalue, stb)

    def show_usage_error(self, exc):
        self.runbox.send_error(exc, None, usage=True)

    def showsyntaxerror(self, filename=None, running_compiled_code=False):
        etype, value, tb = self._get_exc_info()
        if filename and issubclass(etype, SyntaxError):
            try:
                value.filename = filename
            except AttributeError:
                pass
        if not running_compiled_code:
            value.__traceback__ = None  # shown as Python shows it: no frames of the compiler
            value.__context__ = None
        self.runbox.send_error(value, None)

    def run_cell_magic(self, magic_name, line, cell):
        """As IPython's, but the thread that %%bash, %%sh, %%script and the like stream their
        program's output from (an asyncio loop IPython starts once) writes for whichever cell
        runs, not for the one that started it (python_worker.FOLLOW)."""
        self.find_cell_magic(magic_name)  # loads the magic's class (IPython loads them lazily)
        script = self.magics_manager.registry.get("ScriptMagics")
        if script is None or magic_name not in script.magics.get("cell", {}):
            return super().run_cell_magic(magic_name, line, cell)
        self.runbox.follow_threads += 1
        try:
            return super().run_cell_magic(magic_name, line, cell)
        finally:
            self.runbox.follow_threads -= 1

    def showindentationerror(self):
        self.showsyntaxerror()


def _show_in_pager(shell, data, start=0, screen_lines=0):
    """IPython's pager (`obj?`, `obj??`, %pdoc, ...): its mime bundle to the worker, which sends
    it as the cell's page (a Jupyter execute_reply's payload, as ipykernel's payloadpage)."""
    shell.runbox.send_page(data if isinstance(data, dict) else {"text/plain": str(data)}, start)


def _figure_png(fig):
    from IPython.core.pylabtools import print_figure
    png = print_figure(fig, "png", base64=True)
    if png is None and fig.images:
        # IPython shows nothing of a figure without axes; one drawn with figimage() still has a
        # picture to show (runbox showed it before IPython, and so does savefig)
        import base64
        import io
        buf = io.BytesIO()
        fig.savefig(buf, format="png")
        png = base64.b64encode(buf.getvalue()).decode("ascii")
    return png


_prepared = None  # the shell the zygote made before its forks (prepare)


def _new_shell(history):
    """A RunboxShell with a new __main__ module as the user's namespace; its history in memory,
    or off (HISTORY false: no SQLite connection, which must not cross a fork)."""
    import types
    from traitlets.config import Config
    c = Config()
    c.HistoryManager.hist_file = ":memory:"
    c.HistoryManager.enabled = history
    c.InteractiveShell.warn_venv = False
    c.InteractiveShell.colors = "nocolor"
    warnings.filterwarnings("ignore", message="To exit: use 'exit', 'quit', or Ctrl-D.")
    main = types.ModuleType("__main__")
    shell = RunboxShell.instance(config=c, user_module=main, user_ns=main.__dict__,
                                 displayhook_class=_DisplayHook, display_pub_class=_DisplayPublisher)
    shell.compile.get_code_name = lambda raw, transformed, number: "<cell-%d>" % number
    shell.register_magics(_RunboxMagics)
    shell.set_hook("show_in_pager", _show_in_pager, 99)
    # A matplotlib figure shown (display(fig), or as a cell's value) is a PNG, as with the inline
    # backend; by name, so that matplotlib is imported only by the user's code.
    shell.display_formatter.formatters["image/png"].for_type_by_name("matplotlib.figure", "Figure", _figure_png)
    shell.made_in_pid = os.getpid()  # the zygote's, in a worker forked from it
    return shell


def prepare():
    """In the zygote, after the preload: the shell every worker forked from it starts with (its
    making costs tens of ms of each reset otherwise). Its history is off until make_shell."""
    global _prepared
    if _prepared is None:
        _prepared = _new_shell(history=False)


def make_shell(worker):
    """The shell of WORKER (python_worker._Worker): the zygote's (prepare) with a history of its
    own, in memory, or a new one; its user_module is the worker's __main__."""
    from IPython.core.history import HistoryManager
    shell = _prepared
    if shell is None:
        shell = _new_shell(history=True)
    else:
        old = shell.history_manager
        hm = HistoryManager(shell=shell, parent=shell, hist_file=":memory:", enabled=True)
        shell.history_manager = hm
        shell.configurables = [hm if x is old else x for x in shell.configurables]
        ns = shell.user_ns
        for name, attr in (("_ih", "input_hist_parsed"), ("In", "input_hist_parsed"), ("_oh", "output_hist"),
                           ("Out", "output_hist"), ("_dh", "dir_hist")):
            ns[name] = getattr(hm, attr)
    shell.runbox = worker
    return shell

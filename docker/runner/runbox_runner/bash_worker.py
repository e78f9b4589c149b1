"""The bash worker as the supervisor drives it: start command, start-up script, cell text.

With RUNBOX_LANGUAGE=bash the worker is a persistent interactive bash, not Python code of the
runner. This module runs on the trusted side, inside the supervisor: it builds the text the
supervisor writes to bash's stdin and strips bash's start-up noise from its output. The
untrusted side is bash itself with the user's commands; it receives nothing from here but that
text, and answers with protocol's worker messages (printf to CTRL_FD). It is not the output
capture (capture) nor the process handling (supervisor).
"""

ARGV = ["bash", "--noprofile", "--norc", "--noediting", "-i"]
CTRL_FD = 62                   # control fd number inside bash
SYNC = b"\x1erunbox-sync\x1e\n"  # written once to stdout and stderr: the end of start-up noise
_INIT = r"""
set +o history +H
PS1= PS2= PS4=
unset PROMPT_COMMAND
exec %(r)d<&-
%(move)secho 1000 >/proc/self/oom_score_adj 2>/dev/null
__rb_done() { printf '{"t":"done","n":%%d,"rc":%%d}\n' "$1" "$2" >&%(fd)d; }
printf '\036runbox-sync\036\n'; printf '\036runbox-sync\036\n' >&2
printf '{"t":"hello","pid":%%d}\n' $$ >&%(fd)d
"""


def init_text(cmd_r, ctrl_w):
    """The start-up script: moves the control pipe (bash's inherited fd ctrl_w) to CTRL_FD, closes
    the command pipe's fd cmd_r (bash reads it as stdin), marks the end of start-up noise."""
    # cmd_r goes first: with many workers (contexts) either fd may be CTRL_FD itself
    move = "exec %d>&%d %d>&-\n" % (CTRL_FD, ctrl_w, ctrl_w) if ctrl_w != CTRL_FD else ""
    return _INIT % {"fd": CTRL_FD, "w": ctrl_w, "r": cmd_r, "move": move}


def quote(code):
    """$'...' quoting of arbitrary text as one line."""
    out = []
    for b in code.encode("utf-8", "surrogateescape"):
        if b in (0x5c, 0x27) or b < 0x20 or b >= 0x7f:
            out.append("\\x%02x" % b)
        else:
            out.append(chr(b))
    return "$'" + "".join(out) + "'"


def execute_text(n, code, out=None, err=None, cwd=None, env=None):
    """The command line that runs cell n (stdin /dev/null, no control fd, stdout and stderr to the
    cell's FIFOs out and err when given) and reports its status. cwd: a directory to change to
    first (a context's first cell); env: variables exported for this cell only (names already
    checked by contexts.parse_env), put back as they were afterwards."""
    redirect = (" >%s" % quote(out) if out else "") + (" 2>%s" % quote(err) if err else "")
    body = "eval %s" % quote(code)
    if cwd:
        body = "{ cd -- %s; %s; }" % (quote(cwd), body)
    if not env:
        return "%s </dev/null %d>&-%s; __rb_done %d $?\n" % (body, CTRL_FD, redirect, n)
    # declare -p restores a variable with its attributes; one that was not set is unset again
    save = "".join('__rb_env+=("$(declare -p %s 2>/dev/null || echo unset %s)"); export %s=%s; '
                   % (k, k, k, quote(v)) for k, v in env.items())
    return ("__rb_env=(); %s%s </dev/null %d>&-%s; __rb_rc=$?; for __rb_e in \"${__rb_env[@]}\"; do "
            "eval \"$__rb_e\"; done; unset __rb_env __rb_e; __rb_done %d $__rb_rc\n"
            % (save, body, CTRL_FD, redirect, n))


def interrupt_text(n):
    """Sent after SIGINT: an interactive bash abandons the whole command line, __rb_done included."""
    return "__rb_done %d 130\n" % n


class StartupFilter:
    """Drops what bash writes to stdout/stderr before its SYNC mark (job control warnings)."""

    def __init__(self):
        self.bufs = {"stdout": bytearray(), "stderr": bytearray()}

    def filter(self, name, data):
        """The part of data (bytes from stream name) that is real output; b"" while waiting."""
        buf = self.bufs.get(name)
        if buf is None:
            return data
        buf.extend(data)
        i = buf.find(SYNC)
        if i < 0:
            del buf[:-len(SYNC)]
            return b""
        self.bufs[name] = None
        return bytes(buf[i + len(SYNC):])

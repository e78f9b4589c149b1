"""Code contexts: the interpreters of one sandbox, each with its own worker, state and cwd.

Runs on the trusted side, inside the supervisor. A sandbox starts with one context, the main
one (key ""), in RUNBOX_LANGUAGE, whose worker the supervisor starts at once; that is what a
request that names no context runs in. An `execute` may name another one
(`"context": {"id", "language", "cwd"}`, PROTOCOL.md): runboxd decides which contexts exist
(their ids, languages, working directories and how many); the supervisor makes a context's
worker the first time a cell or a restart names it and keeps it until `close_context`. Each
context holds what the supervisor knew of its one worker before there were several: the worker,
when it started, how often it failed, the state lost between cells. Only one cell runs at a time
in a sandbox; the supervisor's attributes worker, language, lost_state ... are those of the
context in focus (Supervisor.ctx), the running cell's while one runs. It never imports or runs
user code.
"""

import re

MAX_CONTEXTS = 16              # contexts a sandbox holds at most (runboxd's own bound is lower)
LANGUAGES = ("python", "bash", "javascript", "typescript")
ID_RE = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")
ENV_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,255}$")
ENV_MAX = 256                  # variables per execution
ENV_BYTES_MAX = 256 * 1024     # their names and values together


class Ctx:
    """One context: its language, working directory (None: the worker's default) and worker."""

    def __init__(self, key, language, cwd=None):
        self.key = key
        self.language = language
        self.cwd = cwd
        self.worker = None
        self.worker_started = 0.0
        self.worker_failures = 0
        self.oom_base = None
        self.lost_state = None        # reason the state was lost between cells
        self.cmd_watched = None       # the command pipe while it is selected for writing


def ctx_attr(name):
    """A Supervisor attribute that is the focused context's."""
    return property(lambda self: getattr(self.ctx, name), lambda self, v: setattr(self.ctx, name, v))


def parse_context(spec):
    """(key, language, cwd) of an execute's "context" field, or raises ValueError naming the
    problem. None (absent) is the main context: ("", None, None)."""
    if spec is None:
        return "", None, None
    if not isinstance(spec, dict):
        raise ValueError("'context' must be an object {\"id\", \"language\", \"cwd\"}")
    key, language, cwd = spec.get("id"), spec.get("language"), spec.get("cwd")
    if not isinstance(key, str) or not ID_RE.match(key):
        raise ValueError("'context.id' must be 1-64 letters, digits, '_', '.' or '-'")
    if language not in LANGUAGES:
        raise ValueError("'context.language' must be one of %s" % ", ".join(LANGUAGES))
    if cwd is not None and (not isinstance(cwd, str) or not cwd.startswith("/") or "\x00" in cwd
                            or len(cwd) > 4096):
        raise ValueError("'context.cwd' must be an absolute path")
    return key, language, cwd


def parse_env(env):
    """The execute's "env" as a dict of str to str (None: none), or raises ValueError."""
    if env is None:
        return None
    if not isinstance(env, dict):
        raise ValueError("'env' must be an object of names to strings")
    if len(env) > ENV_MAX:
        raise ValueError("'env' has more than %d variables" % ENV_MAX)
    size = 0
    for k, v in env.items():
        if not ENV_NAME_RE.match(k) or not isinstance(v, str) or "\x00" in v:
            raise ValueError("'env': %r must be a name of letters, digits and '_' with a string value" % k[:64])
        size += len(k) + len(v)
    if size > ENV_BYTES_MAX:
        raise ValueError("'env' is larger than %d bytes" % ENV_BYTES_MAX)
    return env or None

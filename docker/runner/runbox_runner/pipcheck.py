"""pip in a sandbox: what `%pip` in a Python cell and the shell's pip (runbox_pip.py) decide
before pip itself runs.

In a sandbox without a network, an install, download or wheel from a package index is refused
at once with a message that says what to do instead (pip_refusal); an install of bare names that
are all installed already answers as pip does (pip_satisfied), since it needs no index; an
install that names no place of its own goes into the session's packages folder
(pip_into_session), since the image's site-packages are read-only.

Runs on the worker's side (the user's process) and in runbox_pip.py. Standard library only.
"""

import os
import re

DEPS_SITE = "/workspace/.runbox/site-packages"  # as python_worker.DEPS_SITE
INDEX_COMMANDS = ("install", "download", "wheel")  # pip commands that may reach a package index


def pip_refusal(argv, what):
    """Why pip ARGV (its arguments) cannot work here, or None: a command that reaches a package
    index (not --no-index) in a sandbox without a network. WHAT names the caller ("pip",
    "%pip") in the message, which says what to do instead."""
    words = [a for a in argv if not a.startswith("-")]
    if not words or words[0] not in INDEX_COMMANDS or "--no-index" in argv or has_network():
        return None
    command = words[0]
    if len(words) > 1 and all(os.path.exists(w) for w in words[1:]) and not ({"-r", "--requirement"} & set(argv)):
        return None  # local wheels, archives or folders (pip reaches the index only for their dependencies)
    reach = os.environ.get("RUNBOX_PIP_INDEX", "")
    host = _own_index_host(argv)
    if host is not None and reach != "off":  # runboxd judged pypi.org only: the operator's list may allow this one
        advice = (", or create the session with a network policy that allows the index, if this server's "
                  "--egress-max does: execution_options.network = {\"allow\": [\"%s\"]}" % host)
    else:
        advice = _NETWORK_ADVICE.get(reach, "")
    return ("%s %s needs a package index, and this session has no network. Install with "
            "POST /sessions/{id}/dependencies (MCP: install_dependencies), which runbox's installer "
            "runs outside the sandbox%s; local wheels install without one (--no-index --find-links DIR)"
            % (what, command, advice))


def _own_index_host(argv):
    """The host of the package index ARGV names (-i, --index-url), or None for pypi.org's."""
    from urllib.parse import urlsplit
    for i, a in enumerate(argv):
        url = None
        if a in ("-i", "--index-url") and i + 1 < len(argv):
            url = argv[i + 1]
        elif a.startswith("--index-url="):
            url = a.split("=", 1)[1]
        if url:
            try:
                host = urlsplit(url).hostname
            except ValueError:
                return None
            return host if host and host not in ("pypi.org", "files.pythonhosted.org") else None
    return None


# What runboxd says (RUNBOX_PIP_INDEX, core/sandbox.c) a session of this server may have: only
# a way this server allows is suggested.
_NETWORK_ADVICE = {
    "allowed": (", or create the session with a network policy that allows the index: "
                "execution_options.network = {\"allow\": [\"pypi.org\", \"files.pythonhosted.org\"]}"),
    "refused": (" (this server's --egress-max does not let sessions reach pypi.org: a network policy "
                "cannot help here)"),
    "off": " (this server gives sessions no network: --egress is off)",
}


def is_pip_command(cmd):
    """The arguments pip gets from the shell command CMD (`!cmd` in a cell) when it is one plain
    pip call (pip, pip3, python -m pip, python3 -m pip; no pipes, lists or redirections), or None."""
    import shlex
    if any(c in cmd for c in ";|&<>`$()\n"):
        return None
    try:
        words = shlex.split(cmd)
    except ValueError:
        return None
    if words[:1] in (["pip"], ["pip3"]):
        return words[1:]
    if len(words) >= 3 and words[0] in ("python", "python3", "/usr/bin/python3") and words[1:3] == ["-m", "pip"]:
        return words[3:]
    return None


_REQ = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)(\[[A-Za-z0-9,._ -]*\])?$")


def pip_satisfied(argv):
    """The lines pip prints for an install whose every requirement is already installed ("pip
    install numpy pillow", as agents send before their code), or None. Only bare names (extras
    allowed) count: a version constraint, a file, -r or -U needs pip itself. Without a network
    pip cannot even check the index, so this answer, real pip's own, is what lets such a line
    succeed in a sealed sandbox instead of being refused."""
    if not argv or argv[0] != "install":
        return None
    names = []
    for a in argv[1:]:
        if a in ("-q", "-qq", "-qqq", "--quiet", "--no-cache-dir", "--disable-pip-version-check", "--user"):
            continue
        m = _REQ.match(a)
        if m is None:
            return None
        names.append(m.group(1))
    if not names:
        return None
    from importlib import metadata
    lines = []
    for n in names:
        try:
            dist = metadata.distribution(n)
        except metadata.PackageNotFoundError:
            return None
        where = os.path.dirname(str(dist.locate_file(""))).rstrip("/") or "/"
        lines.append("Requirement already satisfied: %s in %s (%s)" % (n, where, dist.version))
    return lines


def pip_into_session(argv):
    """ARGV with `--target DEPS_SITE` added to an install that names no place of its own: the
    image's site-packages are read-only, and the session's folder is on every interpreter's
    sys.path (the next cell imports what was installed; PYTHONPATH for subprocesses)."""
    if argv[:1] != ["install"]:
        return list(argv)
    if any(a in ("-t", "--target", "--user", "--prefix", "--root") or a.startswith(("--target=", "--prefix=", "--root="))
           for a in argv):
        return list(argv)
    os.makedirs(DEPS_SITE, exist_ok=True)
    return [argv[0], "--target", DEPS_SITE, *argv[1:]]


def has_network():
    """Whether the sandbox has any network interface but loopback (a sealed session has none)."""
    try:
        return any(name != "lo" for name in os.listdir("/sys/class/net"))
    except OSError:
        return True

"""runbox code policy: checks a Python cell against named rules before it runs.

The runner's supervisor (runbox_runner/supervisor.py, trusted side) calls check() when an
execute request carries a rule set (the operator turned the optional code policy on; runboxd
sends the active rules, see docker/runner/PROTOCOL.md), before the cell reaches the worker. The
check uses Python's own parser (ast) and never runs anything.
It is a guard rail against accidents and careless code, NOT a security boundary: Python offers
countless ways around any such list (the container is the boundary).

A rule is named "<kind>:<target>" and its name alone says what it forbids:
  import:<module>  importing the module or any submodule (import, from ... import, and
                   __import__ / importlib.import_module with a literal name)
  builtin:<name>   using the builtin name (calling it or referring to it, builtins.<name> too)
  name:<name>      using the name (e.g. name:__builtins__), same matching as builtin:
  attr:<name>      the attribute (obj.<name>, getattr/setattr/delattr/hasattr with the literal
                   name, a subscript with it as literal key)
  open:write       open()/io.open()/codecs.open() in a writing mode (w, a, x, +) or with a
                   mode that is not a literal, .open() methods with a literal writing mode,
                   os.open() with write flags, Path.write_text/write_bytes
Python standard library only, but for cells Python cannot parse: they are read through IPython's
input transformer (IPython.core.inputtransformer2), as the worker runs them; this module holds no
state.
"""

import ast
import re

KINDS = ("import", "builtin", "name", "attr", "open")
MAX_VIOLATIONS = 20
_MODE_CHARS = set("rwxabtU+")
_WRITE_MODE_CHARS = set("wax+")
_OS_WRITE_FLAGS = {"O_WRONLY", "O_RDWR", "O_CREAT", "O_APPEND", "O_TRUNC"}
_BUILTIN_MODULES = ("builtins", "__builtins__")


class RuleError(ValueError):
    """A rule name that is not "<kind>:<target>" with a known kind."""


def parse_rule(name):
    """(kind, target) of a rule name; RuleError when it is malformed."""
    if not isinstance(name, str):
        raise RuleError("a rule name must be a string, not %r" % (name,))
    kind, sep, target = name.partition(":")
    if not sep or kind not in KINDS or not target or any(c.isspace() for c in target):
        raise RuleError("%r is not a rule name: use <kind>:<target> with kind one of %s"
                        % (name, ", ".join(KINDS)))
    if kind == "open" and target != "write":
        raise RuleError("%r is not a rule name: the only open rule is open:write" % name)
    if kind == "import" and not all(p.isidentifier() for p in target.split(".")):
        raise RuleError("%r is not a rule name: %r is not a module name" % (name, target))
    if kind in ("builtin", "name", "attr") and not target.isidentifier():
        raise RuleError("%r is not a rule name: %r is not an identifier" % (name, target))
    return kind, target


def describe(name):
    """What the rule forbids, in plain words."""
    kind, target = parse_rule(name)
    if kind == "import":
        return "importing %r is not allowed" % target
    if kind == "builtin":
        return "using the builtin %r is not allowed" % target
    if kind == "name":
        return "using the name %r is not allowed" % target
    if kind == "attr":
        return "accessing the attribute %r is not allowed" % target
    return "opening files for writing is not allowed"


class Violation:
    def __init__(self, rule, node, what):
        self.rule = rule
        self.line = getattr(node, "lineno", 0) or 0
        self.col = getattr(node, "col_offset", 0) or 0
        self.what = what

    def message(self):
        return "%s: %s by the code policy (line %d)" % (self.rule, self.what, self.line)


class _Rules:
    def __init__(self, names):
        self.imports = {}   # module -> rule name
        self.names = {}     # identifier -> rule name (builtin: and name:)
        self.attrs = {}     # attribute -> rule name
        self.open_write = None
        for name in names:
            kind, target = parse_rule(name)
            if kind == "import":
                self.imports.setdefault(target, name)
            elif kind in ("builtin", "name"):
                self.names.setdefault(target, name)
            elif kind == "attr":
                self.attrs.setdefault(target, name)
            else:
                self.open_write = name

    def import_rule(self, module):
        """The rule forbidding module (or a package it is in), or None."""
        parts = module.split(".")
        for i in range(1, len(parts) + 1):
            rule = self.imports.get(".".join(parts[:i]))
            if rule is not None:
                return rule
        return None


def _literal_str(node):
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    return None


def _dotted(node):
    """"a.b.c" for a Name/Attribute chain, else None."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return None


def _arg(call, pos, kw):
    for k in call.keywords:
        if k.arg == kw:
            return k.value
    if len(call.args) > pos and not any(isinstance(a, ast.Starred) for a in call.args[:pos + 1]):
        return call.args[pos]
    return None


def _is_mode(s):
    return s is not None and 0 < len(s) <= 4 and set(s) <= _MODE_CHARS


def _writes(mode):
    return bool(set(mode) & _WRITE_MODE_CHARS)


def _open_write(call):
    """A reason when the call opens a file for writing, else None."""
    func = call.func
    dotted = _dotted(func)
    if dotted in ("open", "io.open", "codecs.open", "builtins.open", "__builtins__.open"):
        mode = _arg(call, 1, "mode")
        if mode is None:
            if any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords):
                return "opening a file with a mode that is not a literal is not allowed"
            return None
        text = _literal_str(mode)
        if text is None:
            return "opening a file with a mode that is not a literal is not allowed"
        return "opening files for writing is not allowed" if _writes(text) else None
    if dotted == "os.open":
        flags = _arg(call, 1, "flags")
        names = {n.attr if isinstance(n, ast.Attribute) else n.id
                 for n in ast.walk(flags) if isinstance(n, (ast.Attribute, ast.Name))} if flags is not None else set()
        if names & _OS_WRITE_FLAGS or (flags is not None and not names):
            return "opening files for writing is not allowed"
        return None
    if isinstance(func, ast.Attribute):
        if func.attr in ("write_text", "write_bytes"):
            return "writing files is not allowed"
        if func.attr == "open":
            candidates = [_arg(call, 0, "mode"), _arg(call, 1, "mode")]
            for c in candidates:
                text = _literal_str(c)
                if _is_mode(text) and _writes(text):
                    return "opening files for writing is not allowed"
    return None


def _check_node(node, rules, out):
    if isinstance(node, ast.Import):
        for alias in node.names:
            rule = rules.import_rule(alias.name)
            if rule:
                out.append(Violation(rule, node, "importing %r is not allowed" % alias.name))
    elif isinstance(node, ast.ImportFrom):
        if node.level == 0 and node.module:
            rule = rules.import_rule(node.module)
            if rule:
                out.append(Violation(rule, node, "importing %r is not allowed" % node.module))
                return
            for alias in node.names:
                full = node.module + "." + alias.name
                rule = rules.import_rule(full)
                if rule:
                    out.append(Violation(rule, node, "importing %r is not allowed" % full))
    elif isinstance(node, ast.Name):
        rule = rules.names.get(node.id)
        if rule and isinstance(node.ctx, ast.Load):
            out.append(Violation(rule, node, describe(rule)))
    elif isinstance(node, ast.Attribute):
        rule = rules.attrs.get(node.attr)
        if rule:
            out.append(Violation(rule, node, describe(rule)))
        elif isinstance(node.value, ast.Name) and node.value.id in _BUILTIN_MODULES:
            rule = rules.names.get(node.attr)
            if rule:
                out.append(Violation(rule, node, describe(rule)))
    elif isinstance(node, ast.Subscript):
        key = _literal_str(node.slice)
        rule = rules.attrs.get(key) if key is not None else None
        if rule:
            out.append(Violation(rule, node, describe(rule)))
    elif isinstance(node, ast.Call):
        dotted = _dotted(node.func)
        first = _literal_str(node.args[0]) if node.args else None
        if dotted in ("__import__", "importlib.import_module", "importlib.__import__", "builtins.__import__") \
                and first is not None:
            rule = rules.import_rule(first)
            if rule:
                out.append(Violation(rule, node, "importing %r is not allowed" % first))
        elif dotted in ("getattr", "setattr", "delattr", "hasattr") and len(node.args) >= 2:
            name = _literal_str(node.args[1])
            rule = None
            if name is not None:
                rule = rules.attrs.get(name)
                if rule is None and isinstance(node.args[0], ast.Name) and node.args[0].id in _BUILTIN_MODULES:
                    rule = rules.names.get(name)
            if rule:
                out.append(Violation(rule, node, describe(rule)))
        if rules.open_write:
            why = _open_write(node)
            if why:
                out.append(Violation(rules.open_write, node, why))


def check(code, rule_names):
    """The violations of code (a cell) against the rules, sorted by position, at most
    MAX_VIOLATIONS. A cell Python cannot parse is checked as IPython runs it (its input
    transformations: `!cmd`, `%magic`, `%%magic`, an indented cell), its magics counting as what
    they do (a shell command, %pip, %run, %%bash and the shell aliases as import:subprocess, %cd
    and %env as import:os, %%writefile and %save as open:write, the Python of %time, %timeit and
    %%capture as a cell of its own); so is a one-line cell IPython runs as a magic without its
    `%` (`cd /tmp`, `pip install x`). Other code that does not parse gives [] (running it reports
    the SyntaxError as Python would). RuleError for a malformed rule name; RecursionError/MemoryError propagate
    (the caller refuses the cell: it could not be checked)."""
    rules = _Rules(rule_names)
    if not rule_names:
        return []
    out = []
    try:
        tree = ast.parse(code, "<cell>", "exec")
        auto = _automagic(code)
        if auto is not None:
            _check_magics(auto, rules, out, 1)
    except (SyntaxError, ValueError):
        tree = _check_magics(code, rules, out)
        if tree is None:
            return out[:MAX_VIOLATIONS]
    for node in ast.walk(tree):
        _check_node(node, rules, out)
    out.sort(key=lambda v: (v.line, v.col))
    return out[:MAX_VIOLATIONS]


class _At:
    """Where a magic is, as a node would say it."""

    def __init__(self, line):
        self.lineno, self.col_offset = line, 0


# What IPython's `!cmd` and `%magic` lines do, as the rule that covers it: by kind, and the
# magics of each kind (line and cell magics by name; IPython's shell aliases among them).
_MAGIC_RULES = {
    "shell": ("import:subprocess", "running a shell command (%s) is not allowed"),
    "os": ("import:os", "changing the process (%s) is not allowed"),
    "write": ("open:write", "writing a file (%s) is not allowed"),
}
_SHELL_MAGICS = {"pip", "conda", "mamba", "micromamba", "uv", "sx", "system", "alias", "rehashx", "run", "script",
                 "bash", "sh", "perl", "ruby", "python", "python2", "python3", "pypy",
                 "cat", "cp", "ls", "ll", "lf", "lk", "ldir", "lx", "mkdir", "mv", "rm", "rmdir", "clear", "less",
                 "man", "more"}
_OS_MAGICS = {"cd", "env", "set_env", "pushd", "popd", "bookmark"}
_WRITE_MAGICS = {"writefile", "file", "save", "logstart", "logon", "store", "notebook"}
_PYTHON_MAGICS = {"time", "timeit", "prun", "capture"}  # their code (line: the arguments; cell: the body) runs
_IPY = "get_ipython"
_AUTOMAGIC_NOT = ("=", ",")  # an assignment (IPython's AssignmentChecker runs the line as Python)


# A physical line IPython may transform: `!cmd`, `%magic`, `x = !cmd`, `x = %magic` (checked
# against IPython's own transformer line by line: a cell-wide pass is quadratic in the lines).
_ESCAPED = re.compile(r"[ \t]*(?:[!%]|[A-Za-z_][\w.]*(?:[ \t]*,[ \t]*[A-Za-z_]\w*)*[ \t]*=[ \t]*[!%])")


def _ipython_python(code):
    """The Python IPython runs for a cell, as far as the policy needs it, with the cell's line
    numbers: IPython's cleanup (dedent of an indented cell, prompts), its cell magic on the
    first line, and each line that starts with an escape (with the lines its backslashes join)
    through its token transformations. Linear in the cell; None when IPython cannot be
    imported or fails on the cell."""
    try:
        from IPython.core.inputtransformer2 import (TransformerManager, classic_prompt, ipython_prompt,
                                                    leading_indent, cell_magic)
    except ImportError:
        return None
    try:
        tm = TransformerManager()
        lines = (code if code.endswith("\n") else code + "\n").splitlines(True)
        skipped = 0
        while skipped < len(lines) and not lines[skipped].strip():
            skipped += 1
        lines = lines[skipped:]
        for transform in (leading_indent, classic_prompt, ipython_prompt, cell_magic):
            lines = transform(lines)
        out = ["\n"] * skipped
        i = 0
        while i < len(lines):
            line = lines[i]
            if not _ESCAPED.match(line):
                out.append(line)
                i += 1
                continue
            j = i + 1
            while lines[j - 1].rstrip("\r\n").endswith("\\") and j < len(lines):
                j += 1
            indent = line[:len(line) - len(line.lstrip(" \t"))]
            chunk = [x[len(indent):] if x.startswith(indent) else x for x in lines[i:j]]
            text = "".join(tm.do_token_transforms(chunk)).rstrip("\n")
            out.append(indent + text + "\n" + "\n" * max(0, (j - i) - (text.count("\n") + 1)))
            i = j
        return "".join(out)
    except Exception:
        return None


def _magic_call(node):
    """(kind, name, args, body) of a call IPython's transformations make (get_ipython().system
    / getoutput / run_line_magic / run_cell_magic with literal arguments), or None."""
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
        return None
    inner = node.func.value
    if not (isinstance(inner, ast.Call) and isinstance(inner.func, ast.Name) and inner.func.id == _IPY):
        return None
    args = [_literal_str(a) for a in node.args]
    if any(a is None for a in args):
        return None
    what = node.func.attr
    if what in ("system", "getoutput") and len(args) >= 1:
        return ("shell", "!" + args[0].strip(), None, None)
    if what == "run_line_magic" and len(args) >= 2:
        return ("line", args[0], args[1], None)
    if what == "run_cell_magic" and len(args) >= 3:
        return ("cell", args[0], args[1], args[2])
    return None


def _automagic(code):
    """A one-line cell that IPython runs as a magic without its `%` (automagic: `cd /tmp`,
    `pip install x`): that line with the `%`, else None."""
    line = code.strip()
    if "\n" in line or not line:
        return None
    i = 0
    while i < len(line) and (line[i].isalnum() or line[i] == "_"):
        i += 1
    word, rest = line[:i], line[i:]
    if not word.isidentifier() or rest.startswith("."):
        return None
    if word not in _SHELL_MAGICS | _OS_MAGICS | _WRITE_MAGICS | _PYTHON_MAGICS:
        return None
    rest = rest.lstrip()
    if rest.startswith(_AUTOMAGIC_NOT) and not rest.startswith("=="):
        return None
    return "%" + word + " " + rest


def _check_magics(code, rules, out, depth=0):
    """The AST of the Python IPython runs for a cell (_ipython_python), with OUT given a
    violation for each magic a rule covers and for the Python of %time and the like (checked
    as a cell of its own, on the magic's lines); None when the cell does not parse even so (it
    fails as it runs, as it does where IPython is missing)."""
    src = _ipython_python(code)
    if src is None:
        return None
    try:
        tree = ast.parse(src, "<cell>", "exec")
    except (SyntaxError, ValueError):
        auto = _automagic(code) if depth == 0 else None
        if auto is None:
            return None
        return _check_magics(auto, rules, out, depth + 1)
    active = {name for names in (rules.imports, rules.names, rules.attrs) for name in names.values()}
    active.add(rules.open_write)
    for node in ast.walk(tree):
        call = _magic_call(node)
        if call is None:
            continue
        kind, name, args, body = call
        line = getattr(node, "lineno", 1)
        if kind == "shell":
            use, what = "shell", name
        else:
            what = ("%" if kind == "line" else "%%") + name
            use = "shell" if name in _SHELL_MAGICS else "os" if name in _OS_MAGICS else \
                "write" if name in _WRITE_MAGICS else None
        if use is not None:
            rule, message = _MAGIC_RULES[use]
            if rule in active:
                out.append(Violation(rule, _At(line), message % what))
            continue
        inner = None
        if name in _PYTHON_MAGICS:
            inner, first = (body, line + 1) if kind == "cell" else (args, line)
        elif name in ("load_ext", "reload_ext") and args.strip().replace(".", "").replace("_", "").isalnum():
            inner, first = "import " + args.strip(), line
        if inner is None or depth > 8:
            continue
        sub = []
        sub_tree = _parse_or_magics(inner, rules, sub, depth + 1)
        if sub_tree is not None:
            for n in ast.walk(sub_tree):
                _check_node(n, rules, sub)
        for v in sub:
            v.line += first - 1
        out.extend(sub)
    return tree


def _parse_or_magics(code, rules, out, depth):
    try:
        return ast.parse(code, "<cell>", "exec")
    except (SyntaxError, ValueError):
        return _check_magics(code, rules, out, depth)


def report(code, violations, filename):
    """(evalue, traceback lines) of the PolicyViolation error for a refused cell."""
    first = violations[0]
    lines = code.splitlines()
    tb = []
    for v in violations:
        tb.append('  File "%s", line %d\n' % (filename, v.line))
        if 0 < v.line <= len(lines):
            src = lines[v.line - 1].strip()
            if len(src) > 200:
                src = src[:200] + "..."
            tb.append("    %s\n" % src)
        tb.append("  [%s] %s\n" % (v.rule, v.what))
    evalue = first.message()
    if len(violations) > 1:
        evalue += " (and %d more)" % (len(violations) - 1)
    tb.append("PolicyViolation: %s; the cell was not run\n" % evalue)
    return evalue, tb

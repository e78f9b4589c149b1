"""A kernel's questions that are not cells: completion, inspection, is_complete, history, kernel_info.

Runs in the worker (the untrusted side), between cells: python_worker reads a command
{"ask": id, "kind", "content"} and sends back {"t": "answer", "id", "content"}, the content of
the Jupyter reply as ipykernel (ipykernel/ipkernel.py, kernelbase.py) makes it from the same
IPython machinery: IPCompleter's completions (with jedi) for complete, the shell's
object_inspect_mime for inspect, TransformerManager.check_complete for is_complete, the shell's
HistoryManager for history (the worker's own: it starts over with each interpreter). Nothing runs
as a cell: no execution count, no history entry, no output of its own. What the user's objects
do when they are looked at (a __repr__ that prints, a property jedi reads) is theirs, as in
ipykernel. The supervisor bounds what goes back (supervisor.ask_answer); it is not trusted here.
"""

import sys

KINDS = ("complete", "inspect", "is_complete", "history", "kernel_info")
CODE_MAX = 1024 * 1024        # characters of code a question may carry
MATCHES_MAX = 1000            # completions returned at most
HISTORY_MAX = 1000            # history entries returned at most

_jedi = {"ready": False, "thread": None}  # jedi warmed up in this interpreter (_warm_jedi)


def _warm_jedi():
    """A first completion with jedi parses the builtins' stubs: about a second, 17 s on a loaded
    2-core host, which no Tab key waits for. It is done once, in a thread of its own started at
    the first completion; until it is over, completions are IPython's without jedi (names,
    attributes, keys, paths, magics: what a Tab needs most)."""
    try:
        import jedi
        jedi.Interpreter("zi", [{}]).complete(1, 2)
    except Exception:
        pass
    _jedi["ready"] = True


class AskError(Exception):
    """A question that cannot be answered as asked (its content is wrong): the reply says why."""


def _code(content):
    code = content.get("code", "")
    if not isinstance(code, str):
        raise AskError("'code' must be a string")
    if len(code) > CODE_MAX:
        raise AskError("'code' is longer than %d characters" % CODE_MAX)
    return code


def _cursor(content, code):
    pos = content.get("cursor_pos")
    if pos is None:
        return len(code)
    if not isinstance(pos, int) or isinstance(pos, bool) or pos < 0:
        raise AskError("'cursor_pos' must be an integer >= 0")
    return min(pos, len(code))


def complete(shell, content):
    """ipykernel's complete_reply (its experimental completions, on by default there): matches
    between cursor_start and cursor_end, with each one's type and signature in metadata."""
    from IPython.core.completer import provisionalcompleter, rectify_completions
    code = _code(content)
    pos = _cursor(content, code)
    completer = shell.Completer
    use_jedi = completer.use_jedi
    if use_jedi and not _jedi["ready"]:
        if _jedi["thread"] is None:
            import threading
            _jedi["thread"] = threading.Thread(target=_warm_jedi, name="runbox-jedi-warmup", daemon=True)
            _jedi["thread"].start()
        completer.use_jedi = False
    try:
        with provisionalcompleter():
            found = list(rectify_completions(code, completer.completions(code, pos)))
    finally:
        completer.use_jedi = use_jedi
    found = found[:MATCHES_MAX]
    if found:
        start, end = found[0].start, found[0].end
    else:
        start = end = pos
    meta = [{"start": c.start, "end": c.end, "text": c.text, "type": c.type, "signature": c.signature}
            for c in found]
    return {"status": "ok", "matches": [c.text for c in found], "cursor_start": start, "cursor_end": end,
            "metadata": {"_jupyter_types_experimental": meta}}


def inspect(shell, content):
    """ipykernel's inspect_reply: the name at the cursor as `name?` (detail_level 0) or `name??`
    (1) shows it, as a mime bundle; found false when nothing has that name."""
    from IPython.utils.tokenutil import token_at_cursor
    code = _code(content)
    pos = _cursor(content, code)
    level = content.get("detail_level", 0)
    if level not in (0, 1) or isinstance(level, bool):
        raise AskError("'detail_level' must be 0 or 1")
    name = token_at_cursor(code, pos)
    reply = {"status": "ok", "found": False, "data": {}, "metadata": {}}
    try:
        bundle = shell.object_inspect_mime(name, detail_level=level, omit_sections=())
    except KeyError:
        return reply
    if not shell.enable_html_pager:
        bundle.pop("text/html", None)
    reply["data"] = {k: v for k, v in bundle.items() if isinstance(k, str)}
    reply["found"] = True
    return reply


def is_complete(shell, content):
    """ipykernel's is_complete_reply: complete, incomplete (with the indent of the next line),
    invalid or unknown, from IPython's TransformerManager."""
    code = _code(content)
    status, indent = shell.input_transformer_manager.check_complete(code)
    reply = {"status": status}
    if status == "incomplete":
        reply["indent"] = " " * (indent or 0)
    return reply


def _int(content, name, default):
    v = content.get(name, default)
    if v is None:
        return default
    if not isinstance(v, int) or isinstance(v, bool):
        raise AskError("'%s' must be an integer" % name)
    return v


def history(shell, content):
    """ipykernel's history_reply: tail (the last n), range (session, start, stop) or search
    (a glob pattern, n, unique), each entry [session, line, input] or [session, line,
    [input, output]] with output. This interpreter's history only: it starts with it."""
    hm = shell.history_manager
    kind = content.get("hist_access_type")
    raw, output = bool(content.get("raw", True)), bool(content.get("output", False))
    n = _int(content, "n", None)
    if n is not None:
        n = max(0, min(n, HISTORY_MAX))
    if kind == "tail":
        hist = hm.get_tail(n if n is not None else 10, raw=raw, output=output, include_latest=True)
    elif kind == "range":
        hist = hm.get_range(_int(content, "session", 0), _int(content, "start", 0), _int(content, "stop", None),
                            raw=raw, output=output)
    elif kind == "search":
        pattern = content.get("pattern", "*")
        if not isinstance(pattern, str) or len(pattern) > 4096:
            raise AskError("'pattern' must be a glob pattern of at most 4096 characters")
        hist = hm.search(pattern, raw=raw, output=output, n=n, unique=bool(content.get("unique", False)))
    else:
        raise AskError("'hist_access_type' must be tail, range or search")
    out = []
    for entry in hist:
        if len(out) >= HISTORY_MAX:
            break
        session, line, data = entry
        if session == 0:  # IPython's name for the session that runs: its number, as tail gives it
            session = hm.session_number
        if output:
            data = [data[0], data[1]] if isinstance(data, tuple) else [data, None]
        out.append([session, line, data])
    return {"status": "ok", "history": out}


def kernel_info(shell, content):
    """What a kernel_info_reply says of the language, as ipykernel says it: this interpreter's
    Python version, IPython's lexer and CodeMirror mode, and IPython's banner."""
    import IPython
    major = sys.version_info[0]
    return {"language_info": {"name": "python", "version": sys.version.split()[0], "mimetype": "text/x-python",
                              "codemirror_mode": {"name": "ipython", "version": major},
                              "pygments_lexer": "ipython%d" % major, "nbconvert_exporter": "python",
                              "file_extension": ".py"},
            "banner": shell.banner, "ipython_version": IPython.__version__}


def answer(shell, kind, content):
    """The content of the reply to question kind, asked with content (a dict); an error reply
    {status: error, ename, evalue, traceback} when it cannot be answered."""
    try:
        if kind not in KINDS:
            raise AskError("unknown question %r (%s)" % (kind, ", ".join(KINDS)))
        if not isinstance(content, dict):
            raise AskError("the question's content must be an object")
        return globals()[kind](shell, content)
    except KeyboardInterrupt:
        return {"status": "error", "ename": "KeyboardInterrupt", "evalue": "the answer took too long",
                "traceback": []}
    except Exception as e:  # a question of the user's, about the user's objects: any error is its answer
        return {"status": "error", "ename": type(e).__name__, "evalue": str(e)[:4096], "traceback": []}

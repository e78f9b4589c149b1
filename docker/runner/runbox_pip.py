#!/usr/bin/python3 -I
"""pip as a sandbox's shell finds it (/usr/local/bin/pip and pip3, ahead of Debian's on PATH).

It is Debian's pip, with one difference: in a sandbox without a network (the default), an
install, download or wheel from a package index fails at once with a message that says what to
do instead, where pip would retry for 15 s and then say "No matching distribution found", which
reads like a wrong package name. Local installs (--no-index, a wheel file) and every other
command go to pip (exec); an install of bare names that are all installed already answers as pip
does ("Requirement already satisfied"), since it needs no index; an install that names no --target, --user, --prefix or --root goes into
the session's packages folder (/workspace/.runbox/site-packages: on every interpreter's path), since
the image's own are read-only. `python3 -m pip` is Debian's pip itself. The check and the
message are runbox_runner.pipcheck's, which `%pip` in a Python cell uses too.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.realpath(__file__)))
from runbox_runner import pipcheck  # noqa: E402

refusal = pipcheck.pip_refusal(sys.argv[1:], os.path.basename(sys.argv[0]))  # pip or pip3
satisfied = pipcheck.pip_satisfied(sys.argv[1:]) if refusal is not None else None
if satisfied is not None:  # what is installed already needs no index (pip's own answer)
    if not any(a.startswith("-q") or a == "--quiet" for a in sys.argv[1:]):
        print("\n".join(satisfied))
    sys.exit(0)
if refusal is not None:
    sys.stderr.write("ERROR: %s\n" % refusal)
    sys.exit(1)
# An install goes into the session's packages folder unless it names a place (pipcheck.pip_into_session).
os.execv(sys.executable, [sys.executable, "-m", "pip", *pipcheck.pip_into_session(sys.argv[1:])])

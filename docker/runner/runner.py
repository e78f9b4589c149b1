#!/usr/bin/env python3
"""runbox sandbox runner: entry point of the supervisor, the main process of every sandbox
container (the image runs python3 /opt/runbox/runner.py). It only starts
runbox_runner.supervisor, runboxd's trusted side of the sandbox; the user's code runs in a
worker started from runbox_worker.py. See PROTOCOL.md and runbox_runner/__init__.py.
"""

import os
import sys

# The supervisor is runbox's side of the privilege separation (PROTOCOL.md): it imports nothing
# from where user code can write. PYTHONPATH (runboxd's names /workspace/.runbox/site-packages,
# the session's packages) is the user's Python's, which the workers still get; the supervisor
# imports some modules only when first needed (the policy checker and `ast`), long after user
# code could have left a module of that name there.
# The runner's own folder (/opt/runbox in the image) always stays, wherever a checkout puts it.
_here = os.path.dirname(os.path.abspath(__file__))
_user_paths = {os.path.abspath(p) for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p}
sys.path[:] = [p for p in sys.path if p and (os.path.abspath(p) == _here or (
               os.path.abspath(p) not in _user_paths
               and not os.path.abspath(p).startswith(("/workspace/", "/tmp/"))
               and os.path.abspath(p) not in ("/workspace", "/tmp")))]

from runbox_runner import supervisor  # noqa: E402  (after the path is the image's only)

if __name__ == "__main__":
    supervisor.main()

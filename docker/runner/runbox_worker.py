#!/usr/bin/env python3
"""runbox sandbox runner: entry point of the Python worker, the process that runs the user's
code (the untrusted side of the trust boundary). The supervisor starts it as
`python3 runbox_worker.py COMMAND_FD CONTROL_FD`. It loads runbox_runner.python_worker (and,
through it, runbox_runner.protocol) and nothing of the supervisor.
"""

import os
import sys

from runbox_runner import python_worker

if __name__ == "__main__":
    python_worker.main(sys.argv[1:], os.path.abspath(__file__))

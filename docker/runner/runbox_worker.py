#!/usr/bin/env python3
"""runbox sandbox runner: entry point of the Python worker, the process that runs the user's
code (the untrusted side of the trust boundary). The supervisor starts it as
`python3 runbox_worker.py COMMAND_FD CONTROL_FD`, or, when runboxd names modules to preload,
`python3 runbox_worker.py --zygote SOCKET_FD`: then it is the zygote (runbox_runner.zygote), which
imports them once and forks every worker. It loads runbox_runner.python_worker (and, through it,
runbox_runner.protocol), the zygote, and nothing of the supervisor.
"""

import os
import sys

from runbox_runner import python_worker

if __name__ == "__main__":
    if sys.argv[1:2] == ["--zygote"] and len(sys.argv) == 3 and sys.argv[2].isdigit():
        from runbox_runner import zygote
        zygote.main(int(sys.argv[2]), os.path.abspath(__file__))
    else:
        python_worker.main(sys.argv[1:], os.path.abspath(__file__))

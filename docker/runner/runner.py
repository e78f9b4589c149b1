#!/usr/bin/env python3
"""runbox sandbox runner: entry point of the supervisor, the main process of every sandbox
container (the image runs python3 /opt/runbox/runner.py). It only starts
runbox_runner.supervisor, runboxd's trusted side of the sandbox; the user's code runs in a
worker started from runbox_worker.py. See PROTOCOL.md and runbox_runner/__init__.py.
"""

from runbox_runner import supervisor

if __name__ == "__main__":
    supervisor.main()

"""runbox sandbox runner: the code that runs inside every sandbox container.

The package is split along the trust boundary between runboxd's side and the user's code:

  trusted (the supervisor process, started as runner.py):
    supervisor     talks to runboxd over stdin/stdout (PROTOCOL.md), sends cells to the worker, times them
    worker_keeper  starts, stops, replaces and reaps the workers, keeps the zygote (the supervisor's base class)
    worker_process one worker process: started, its pipes, its signals
    capture        turns the worker's stdout/stderr bytes into capped, ordered stream events
    pipes          the output pipes of each cell, which tell a cell's output from an earlier one's
    forward        bounds what of the worker's messages (result, error, display) goes to runboxd
    bash_worker    how the supervisor drives a persistent bash as the worker
    container      cgroup memory and OOM kills, stray processes, files a cell wrote
    preload        starts the zygote, asks it for each Python worker, checks what it answers
  untrusted (the Python worker process, started as runbox_worker.py, running the user's code):
    python_worker  runs cells in one persistent __main__ namespace
    shell          IPython's InteractiveShell that runs each cell, its outputs sent by python_worker
    pipcheck       what %pip (and the shell's pip, runbox_pip.py) decides before pip runs
    zygote         imports the preload and IPython once and forks every Python worker (RUNBOX_PRELOAD)
  both:
    protocol       the control channel between supervisor and worker (JSON lines over pipes)

The worker side imports nothing but python_worker, shell, pipcheck, protocol and zygote (and
IPython, the standard library and what the user's code imports); this file imports nothing, so
that importing the package from the worker loads no supervisor code.
"""

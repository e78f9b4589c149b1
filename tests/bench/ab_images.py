"""Two sandbox images side by side in one run (e.g. the runner before and after a change):
REST print(1), a new session's first pandas+matplotlib plot cell, reset -> ready and a warm
sandbox's memory, the images alternating for ROUNDS rounds with the same runboxd binary, so that
a busy host weighs on both alike. Prints one JSON line per image and round.

Usage: python3 tests/bench/ab_images.py RUNBOXD IMAGE_A IMAGE_B [SAMPLES [ROUNDS]]
(RUNBOXD: e.g. build/runboxd; SAMPLES: per preload figure, default 5; ROUNDS default 2)
"""
import json
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench  # noqa: E402
import benchlib  # noqa: E402
import preload  # noqa: E402
from benchlib import Client, Runboxd, create_session, delete_session, summary, wait_pool  # noqa: E402


def one(binary, image, samples):
    benchlib.IMAGE = image  # Runboxd passes it as --image
    rb = Runboxd(binary, tempfile.mkdtemp(prefix="runbox-ab-"), 2)
    c = Client(rb.port)
    figures = {}
    try:
        wait_pool(c, 2)
        time.sleep(1)
        _, s = create_session(c, {})
        wait_pool(c, 2)
        rest, errors = bench.bench_exec_rest(c, s["session_id"], 100)
        figures["exec_rest"] = dict(summary(rest), errors=errors)
        delete_session(c, s["session_id"])
        preload.preload_figures(c, figures, "on", samples, 2, rb)
    finally:
        rb.stop()
    return figures


def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    binary, images = sys.argv[1], sys.argv[2:4]
    samples = int(sys.argv[4]) if len(sys.argv) > 4 else 5
    rounds = int(sys.argv[5]) if len(sys.argv) > 5 else 2
    for r in range(rounds):
        for image in images:
            print(json.dumps({"image": image, "round": r, "figures": one(binary, image, samples)}), flush=True)


if __name__ == "__main__":
    main()

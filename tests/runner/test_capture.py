"""The supervisor's output capture (runbox_runner/capture.py) as a unit: when gathered stream
text goes out, driven with explicit clock values so that no test depends on the host's speed.
Run: python3 -m pytest tests/runner -q
"""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "docker", "runner"))

from runbox_runner import capture  # noqa: E402


def rig():
    events = []
    cap = capture.Capture(events.append)
    cap.start("e_1", 1 << 20)
    return cap, events


def texts(events):
    return [(e["name"], e["text"]) for e in events]


def test_a_line_written_in_two_parts_goes_out_whole():
    # print('6') writes '6' and then '\n'; on a busy host more than COALESCE_S passed between
    # the two and E2B's on_stdout got two messages, '6' and '\n'
    cap, events = rig()
    cap.take("stdout", b"6")
    t0 = cap.pending_since
    cap.flush_if_due(t0 + capture.COALESCE_S * 3)
    assert events == [], "an open line went out before its end"
    cap.take("stdout", b"\n")
    assert cap.flush_at() <= t0 + capture.COALESCE_S  # an ended line is due at once
    cap.flush_if_due(t0 + capture.COALESCE_S * 3)
    assert texts(events) == [("stdout", "6\n")]


def test_an_open_line_goes_out_after_the_longer_hold():
    # progress without a newline (a bar redrawn with '\r') still streams, as ipykernel's 0.2 s
    cap, events = rig()
    cap.take("stdout", b"50%\r")
    t0 = cap.pending_since
    assert cap.flush_at() == t0 + capture.PARTIAL_LINE_S
    cap.flush_if_due(t0 + capture.PARTIAL_LINE_S + 0.001)
    assert texts(events) == [("stdout", "50%\r")]
    cap.take("stdout", b"100%\n")
    cap.flush_if_due(cap.pending_since + capture.COALESCE_S + 0.001)
    assert texts(events) == [("stdout", "50%\r"), ("stdout", "100%\n")]


def test_whole_lines_keep_the_short_window_and_their_order():
    cap, events = rig()
    cap.take("stdout", b"a\n")
    cap.take("stderr", b"b\n")
    cap.take("stdout", b"c\n")
    t0 = cap.pending_since
    assert cap.flush_at() == t0 + capture.COALESCE_S
    cap.flush_if_due(t0 + capture.COALESCE_S + 0.001)
    assert texts(events) == [("stdout", "a\n"), ("stderr", "b\n"), ("stdout", "c\n")]

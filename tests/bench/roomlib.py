"""What the benchmarks share (bench.py and core's rooms: bench_network.py, bench_data.py,
bench_dify.py, bench_gvisor.py): a summary of samples, the report's latency rows, and the sweep
that leaves no session behind."""

import statistics


def summary(xs):
    """{n, min_ms, median_ms, p99_ms} of samples in ms ({} for none)."""
    xs = sorted(xs)
    return {"n": len(xs), "min_ms": xs[0], "median_ms": statistics.median(xs), "p99_ms": xs[-1]} if xs else {}


def lat_row(F, fmt, name, key, target=""):
    """The report's row (name, n, min, median, p99, unit, load, target) of the summary F[key]; its
    load column is F[key]["load1"] (the 1-minute load average when taken) where the bench keeps it."""
    v = F.get(key) or {}
    load = fmt(v["load1"], 1) if v.get("load1") is not None else ""
    return (name, v.get("n"), fmt(v.get("min_ms")), fmt(v.get("median_ms")), fmt(v.get("p99_ms")), "ms", load, target)


def row_adder(F, fmt, out):
    """lat(name, key, target=""): appends the latency row of F[key] to out (a bench's rows())."""
    def lat(name, key, target=""):
        out.append(lat_row(F, fmt, name, key, target))
    return lat


def delete_live_sessions(c, delete_session):
    """Deletes every live session of the runboxd c (a bench Client) talks to, whatever a failed
    run left; best effort (the caller then stops runboxd)."""
    try:
        _, live = c.json("GET", "/sessions")
        for x in (live or {}).get("sessions", []):
            delete_session(c, x["session_id"])
    except Exception:
        pass

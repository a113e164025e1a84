"""Sliding windows at every event, the whole user path (issue 23 §2): a long window costs
what a short one does.

Run (from the repository root)::

    .venv/bin/python benchmarks/window_signals.py [--events 1000000] [--keys 100]

(about a minute on 2 cores) and writes the table to benchmarks/RESULTS.md, section
"window_signals" (``--output``).

Seeded random events (keys, integer seconds about a second apart per key, one tag,
normal values) run through ``Monitor.run_keys`` (count windows) or
``Monitor.run_timed`` (time windows) with the default engine: strings and arrays in,
outputs out — the keys grouped, the window store, the DT. Each query is timed best of
``--repeat`` after a warm-up call (kernel compile or cache load), the queries side by
side in one run, so the ratios are this run's:

* ``avg_last(5, cur)`` — the expansion (five nested splits: a DT of a few states);
* ``avg_last(1000, cur)`` — beyond 100 events the window store (issue 23: "within 2×
  the speed of ``avg_last(5, cur)``"), and ``avg_last(100000, cur)``;
* ``avg_over(1000, cur)``, ``median_over(1000, cur)``, ``max_over(1000, cur)``,
  ``distinct_over(1000, cur)`` and the time windows ``avg_over(1h, cur)`` and
  ``median_over(1h, cur)`` (about 3,600 events each);
* the peer a pandas user writes: ``groupby(key).rolling(1000, min_periods=1000)
  .mean()`` (and ``.median()``), over the same frame, timed the same way.

The outputs are cross-checked first: avg_last(1000) and pandas' rolling mean agree to
1e-9 relative (pandas sums with adds and subtracts; qre's sum is exact), and the
statuses say ⊥ exactly before each key's 1000th event.
"""

from __future__ import annotations

import argparse
import os
import platform
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd
from results import RESULTS, write_section

from qre import qre

COUNT_QUERIES = ("avg_last(5, cur)", "avg_last(1000, cur)", "avg_last(100000, cur)",
                 "avg_over(1000, cur)", "median_over(1000, cur)", "max_over(1000, cur)",
                 "distinct_over(1000, floor(cur * 10))")
TIME_QUERIES = ("avg_over(1h, cur)", "median_over(1h, cur)")


def events(n: int, keys: int, seed: int = 0) -> pd.DataFrame:
    """``n`` events of ``keys`` keys in time order: key, time (s), value."""
    rng = np.random.default_rng(seed)
    key = rng.integers(0, keys, n)
    gap = rng.integers(1, 3, n)  # per key about one event per 1.5 s
    time_ = pd.Series(gap).groupby(key).cumsum().to_numpy()
    return pd.DataFrame({"key": key.astype(str), "time": time_, "v": rng.normal(size=n)})


def best_seconds(job: Callable[[], object], repeat: int) -> float:
    job()  # warm-up: kernels compiled or loaded from the cache
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        job()
        times.append(time.perf_counter() - start)
    return min(times)


def cross_check(frame: pd.DataFrame) -> None:
    """avg_last(1000) against pandas' rolling mean, statuses included."""
    out = qre("alphabet m; avg_last(1000, cur)").run_keys(
        frame["key"], ["m"] * len(frame), frame["v"].to_numpy())
    rolling = frame.groupby("key")["v"].rolling(1000, min_periods=1000).mean()
    want = rolling.reset_index(level=0, drop=True).sort_index().to_numpy()
    assert ((out.status == 1) == ~np.isnan(want)).all(), "statuses differ"
    defined = out.status == 1
    np.testing.assert_allclose(out.value[defined], want[defined], rtol=1e-9, atol=1e-12)


def measure(frame: pd.DataFrame, repeat: int) -> list[tuple[str, float]]:
    keys, tags, v = frame["key"], ["m"] * len(frame), frame["v"].to_numpy()
    times = frame["time"].to_numpy()
    rows = []
    for text in COUNT_QUERIES:
        m = qre(f"alphabet m; {text}")
        rows.append((text, best_seconds(lambda m=m: m.run_keys(keys, tags, v), repeat)))
    for text in TIME_QUERIES:
        m = qre(f"alphabet m; {text}")
        rows.append((text, best_seconds(
            lambda m=m: m.run_timed(times, tags, v, keys=keys), repeat)))
    grouped = frame.groupby("key")["v"]
    rows.append(("pandas rolling(1000).mean()", best_seconds(
        lambda: grouped.rolling(1000, min_periods=1000).mean(), repeat)))
    rows.append(("pandas rolling(1000).median()", best_seconds(
        lambda: grouped.rolling(1000, min_periods=1000).median(), repeat)))
    return rows


def table(rows: list[tuple[str, float]], n: int, keys: int, repeat: int) -> str:
    base = dict(rows)["avg_last(5, cur)"]
    lines = ["## window_signals: sliding windows at every event (issue 23)", "",
             f"`.venv/bin/python benchmarks/window_signals.py --events {n} --keys {keys}` "
             f"({platform.machine()}, {os.cpu_count()} cores, Python "
             f"{platform.python_version()}); best of {repeat}, whole path "
             f"(run_keys / run_timed: strings and arrays in, outputs out).", "",
             "| query | seconds | events/s | vs avg_last(5, cur) |",
             "|---|---:|---:|---:|"]
    for text, seconds in rows:
        lines.append(f"| `{text}` | {seconds:.3f} | {n / seconds:,.0f} | "
                     f"{seconds / base:.2f}x |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--keys", type=int, default=100)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--output", default=str(RESULTS))
    args = parser.parse_args()
    frame = events(args.events, args.keys)
    cross_check(frame)
    text = table(measure(frame, args.repeat), args.events, args.keys, args.repeat)
    print(text)
    write_section(Path(args.output), "window_signals", text)


if __name__ == "__main__":
    main()

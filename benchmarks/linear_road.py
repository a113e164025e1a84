"""Seed 001's evaluation on this machine: A_C's memory against its throughput and latency
for D ∈ {∞, 20 min, 10 min, 1 min, 15 s, 0} (issue 23 §3).

Run (from the repository root)::

    .venv/bin/python benchmarks/linear_road.py [--rate 25] [--hours 4] [--codecs lz4,zstd] \
        [--repeat 3]

(about 10 minutes on 2 cores) and writes the table to benchmarks/RESULTS.md, section
"linear_road" (``--output``).

Data, as seed 001 §5 describes Linear Road's: vehicles report every 30 s of event time,
each for a journey of 5 to 60 minutes starting anywhere in the run; the speed drifts and
drops to 0 now and then (a stop: a run of zero-speed reports). ``--rate`` reports per
second of event time on average, over ``--hours`` of event time (the default: 25/s, 4 h:
about 360k reports of 5,500 vehicles; the seed's 3 hours held 44M reports, which
this Python operator would take hours over: each minute's close visits every key).

The operator (:class:`qre.runtime.compressed_aggregate.CompressedAggregate`), as in the
seed: key = the vehicle, WA = 1 min, WS = 3 h, f_O = the number of stops in the window
(runs of zero speed between reports with a speed, or at either end), f_A / f_S store
and drop tuples. Each D runs the same reports in one process, side by side:

* throughput: reports per second of wall time over the whole run (every report through
  ``process``, then ``flush``), and in two phases from the calls' own times: while the
  windows fill (the first WS = 3 h of event time, no tuple leaves a window yet: the
  regime of the seed's runs, 10 minutes of wall time over a 3-hour data set) and while
  they shed (after 3 h, every close drops the oldest minute: a compressed window then
  needs its tuples, which the seed's runs never reached);
* latency: each ``process`` call's wall time is recorded; at an injection rate r the
  reports arrive 1/r apart and one worker takes them in order, so a report waits while
  the worker is busy (start = max(arrival, previous end)); an output's latency is the end
  of the call that made it minus the arrival of the report that triggered it. Rates:
  ¼, ½ and ¾ of D = ∞'s throughput (the seed swept up to the rate D = ∞ sustains);
* memory: the bytes of the windows' tuples (16 a tuple uncompressed, the compressed size
  otherwise), sampled at every minute of event time: the end of the run's first 3 hours
  (the windows full, as the seed's end-of-experiment figure) and the peak;
* the share of windows (γs) compressed then, and the compressions and decompressions.

Every D's outputs are compared with D = ∞'s: identical, in the same order. ``--codecs``
runs every finite D once per codec (lz4, A_C's default, and zstd: the two candidates of
benchmarks/compressed_windows.py); ``--repeat`` runs everything that many times,
interleaved, and keeps the best throughput of each D (this machine's speed drifts by
±30 % over minutes).
"""

from __future__ import annotations

import argparse
import os
import platform
import time
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
from results import RESULTS, write_section

from qre.runtime.compressed_aggregate import CompressedAggregate

MINUTE, HOUR = 60, 3600
D_VALUES = {"∞": None, "20 min": 20 * MINUTE, "10 min": 10 * MINUTE, "1 min": MINUTE,
            "15 s": 15, "0 s": 0}

SEED = {"∞": "3 GB, 0 %", "1 min": "1 GB, ~40 % compressed, ~−15 % throughput"}
"""Seed 001 Fig. 4 (medium rate): memory and share compressed at the end; Fig. 2a."""


def reports(rate: int, hours: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Vehicles' reports in time order: vehicle id, time (s), speed."""
    rng = np.random.default_rng(seed)
    span = hours * HOUR
    per_vehicle = (5 + 60) / 2 * MINUTE / 30  # reports of an average journey
    vehicles = int(rate * span / per_vehicle)
    starts = rng.integers(0, span, vehicles)
    lengths = rng.integers(10, 121, vehicles)  # 5 to 60 minutes of reports 30 s apart
    ids = np.repeat(np.arange(vehicles), lengths)
    step = np.arange(lengths.sum()) - np.repeat(np.cumsum(lengths) - lengths, lengths)
    times = np.repeat(starts, lengths) + 30 * step
    speed = np.clip(55 + rng.normal(0, 15, len(ids)), 1, 100).round()
    stopped = rng.random(len(ids)) < 0.03
    speed[stopped | np.roll(stopped, 1) & (rng.random(len(ids)) < 0.5)] = 0.0
    keep = times < span
    order = np.argsort(times[keep], kind="stable")
    return ids[keep][order], times[keep][order], speed[keep][order]


def stops(speeds: np.ndarray) -> float:
    """f_O: the runs of zero speed in the window's reports."""
    zero = speeds == 0.0
    return float(zero[0] + np.count_nonzero(zero[1:] & ~zero[:-1])) if len(zero) else 0.0


@dataclass
class Run:
    seconds: float
    filling: float
    """Reports per second of the process calls while the windows fill (before 3 h)."""
    shedding: float
    """The same after 3 h (NaN for a run of at most 3 hours)."""
    costs: np.ndarray
    """Each report's process call, in seconds."""
    made: list[tuple[int, int]]
    """(report index, outputs made by its call) for the calls that made outputs."""
    outputs: np.ndarray
    """(key, window start, value) of every output, in order."""
    memory_full: int
    memory_peak: int
    share_full: float
    compressions: int
    decompressions: int


def run(ids: np.ndarray, times: np.ndarray, speeds: np.ndarray, idle: int | None,
        codec: str) -> Run:
    a = CompressedAggregate(MINUTE, 3 * HOUR, idle=idle, output=stops, codec=codec)
    costs = np.empty(len(ids))
    outputs, made = [], []
    memory_full = memory_peak = 0
    share_full = float("nan")
    next_sample = int(times[0]) + MINUTE if len(times) else 0
    start = time.perf_counter()
    for i, (key, t, v) in enumerate(zip(ids.tolist(), times.tolist(), speeds.tolist(),
                                        strict=True)):
        before = time.perf_counter()
        out = a.process(key, t, v)
        costs[i] = time.perf_counter() - before
        if out:
            made.append((i, len(out)))
            outputs += out
        if t >= next_sample:  # a minute of event time: sample the memory (not timed)
            pause = time.perf_counter()
            plain, packed = a.state_bytes
            memory_peak = max(memory_peak, plain + packed)
            if t <= 3 * HOUR:
                memory_full, share_full = plain + packed, a.compressed_share
            next_sample = t + MINUTE
            start += time.perf_counter() - pause
    outputs += a.flush()
    seconds = time.perf_counter() - start
    rows = np.array([(k, left, v) for k, left, _, v in outputs], dtype=np.float64)
    full = int(np.searchsorted(times, times[0] + 3 * HOUR)) if len(times) else 0
    filling = full / costs[:full].sum() if full else float("nan")
    shedding = (len(costs) - full) / costs[full:].sum() if full < len(costs) else float("nan")
    return Run(seconds, filling, shedding, costs, made, rows, memory_full, memory_peak, share_full,
               a.counters.compressions, a.counters.decompressions)


def best(a: Run, b: Run) -> Run:
    """The faster of two runs of one D, with each phase's throughput the better one."""
    fast = a if a.seconds <= b.seconds else b
    return replace(fast, filling=max(a.filling, b.filling), shedding=max(a.shedding, b.shedding))


def latency(r: Run, times_rate: float) -> float:
    """The mean latency of the outputs at an injection rate (reports per wall second)."""
    arrival = np.arange(len(r.costs)) / times_rate
    end = 0.0
    ends = np.empty(len(r.costs))
    for i, cost in enumerate(r.costs.tolist()):
        end = max(arrival[i], end) + cost
        ends[i] = end
    waits = [(ends[i] - arrival[i]) * n for i, n in r.made]
    return sum(waits) / sum(n for _, n in r.made) if r.made else float("nan")


def table(runs: dict[str, Run], n: int, rate: int, hours: int, repeat: int) -> str:
    base = runs["∞"]
    peak = n / base.seconds
    rates = [peak / 4, peak / 2, 3 * peak / 4]
    lines = ["## linear_road: seed 001's A_C, memory against throughput and latency (issue 23 §3)",
             "", f"`.venv/bin/python benchmarks/linear_road.py --rate {rate} --hours {hours} "
             f"--codecs {','.join(dict.fromkeys(r.split(', ')[-1] for r in runs if ', ' in r))} "
             f"--repeat {repeat}` "
             f"({platform.machine()}, {os.cpu_count()} cores, Python "
             f"{platform.python_version()}): {n:,} reports, WA = 1 min, WS = 3 h, f_O = "
             f"stops per vehicle. Best of {repeat} interleaved runs: throughput over the "
             f"whole run, and of the process calls while the windows fill (0–3 h: the seed's "
             f"regime) and while they shed (after 3 h); "
             f"latency at injection rates of ¼, ½, ¾ of D = ∞'s throughput "
             f"({', '.join(f'{r:,.0f}' for r in rates)} reports/s); memory at 3 h of event time "
             f"(windows full) and its peak.", "",
             "| D, codec | reports/s | vs ∞ | filling | vs ∞ | shedding | vs ∞ | "
             "latency ms (¼, ½, ¾) | memory at 3 h | vs ∞ | peak | compressed γs | "
             "compressions | decompressions | seed 001 |",
             "|---|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|---|"]
    for name, r in runs.items():
        lat = ", ".join(f"{latency(r, x) * 1e3:.2f}" for x in rates)
        lines.append(
            f"| {name} | {n / r.seconds:,.0f} | {base.seconds / r.seconds:.2f}x | "
            f"{r.filling:,.0f} | {r.filling / base.filling:.2f}x | {r.shedding:,.0f} | "
            f"{r.shedding / base.shedding:.2f}x | {lat} | "
            f"{r.memory_full / 2**20:.1f} MB | {r.memory_full / base.memory_full:.2f}x | "
            f"{r.memory_peak / 2**20:.1f} MB | {r.share_full:.0%} | {r.compressions:,} | "
            f"{r.decompressions:,} | {SEED.get(name.split(', ')[0], '')} |")
    lines += ["", "The goal (at least 3x less memory at at most 15 % throughput loss), D by D: "
              + goal(runs, "filling", "while the windows fill") + "; "
              + goal(runs, "shedding", "while they shed") + "."]
    return "\n".join(lines)


def goal(runs: dict[str, Run], phase: str, when: str) -> str:
    """The runs meeting the goal in one phase, or the best throughput among those with
    3x less memory."""
    base = runs["∞"]
    small = {name: getattr(r, phase) / getattr(base, phase) for name, r in runs.items()
             if name != "∞" and r.memory_full * 3 <= base.memory_full}
    met = [f"{name} ({ratio:.2f}x)" for name, ratio in small.items() if ratio >= 0.85]
    if met:
        return f"met {when} by " + ", ".join(met)
    if not small:
        return f"no D saves 3x memory {when}"
    name = max(small, key=small.__getitem__)
    return f"not met {when} (best: {name}, {small[name]:.2f}x)"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rate", type=int, default=25)
    parser.add_argument("--hours", type=int, default=4)
    parser.add_argument("--repeat", type=int, default=3,
                        help="runs of each D; each throughput is the best of them")
    parser.add_argument("--codecs", default="lz4,zstd",
                        help="comma-separated codecs to run every finite D with")
    parser.add_argument("--output", default=str(RESULTS))
    args = parser.parse_args()
    ids, times, speeds = reports(args.rate, args.hours)
    configs = [("∞", None, "lz4")] + [  # D = ∞ compresses nothing: one codec is enough
        (f"{name}, {codec}", idle, codec) for codec in args.codecs.split(",")
        for name, idle in D_VALUES.items() if idle is not None]
    runs: dict[str, Run] = {}
    for repeat in range(args.repeat):  # interleaved, so that a slow spell hits every D
        for label, idle, codec in configs:
            r = run(ids, times, speeds, idle, codec)
            assert label == "∞" or np.array_equal(r.outputs, runs["∞"].outputs), \
                f"D = {label} changed the outputs"
            runs[label] = best(runs[label], r) if label in runs else r
            print(f"{repeat}: D = {label}: {r.seconds:.1f} s", flush=True)
    text = table(runs, len(ids), args.rate, args.hours, args.repeat)
    print(text)
    write_section(Path(args.output), "linear_road", text)

if __name__ == "__main__":
    main()

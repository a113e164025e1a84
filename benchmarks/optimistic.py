"""Optimistic processing (issue 22, seed 002): replay ratio, replayed events, latency and
throughput, against the pessimistic policy on the same arrivals.

Run (from the repository root)::

    .venv/bin/python benchmarks/optimistic.py [--events 100000] [--keys 200]

and writes the tables to benchmarks/RESULTS.md, section "optimistic" (``--no-write``
to skip; ``--latency-only`` prints the latency table alone). About 45 minutes on 2
cores at the defaults.

Workload: ``--events`` events of ``--keys`` keys, one every 10 µs of event time
(100,000 events/s), values normal. A fraction of the events (0 % to 30 %) arrives
late: up to ``delay`` after its event time (uniform); the others arrive at their
event time. Events are fed in arrival order to :class:`spark_udf.LocalStream` in
micro-batches of 100 ms of arrival time, with a watermark ``delay`` behind the
largest event time seen (so no event is ever late for the watermark), then the
watermark is advanced past everything. Three queries: a window aggregate (100 ms
tumbling windows: its rows are the windows'), a per-event query whose every later
row depends on each event (the last five readings against the mean so far), and a
per-event query with a short memory (the mean of the last two readings).

* **Replay ratio** (seed 002 §VI): rows reaching the sink barrier (inserts and
  retractions) over the valid rows among them (those the barrier releases).
* **Replayed events per event**: the events run a second time (from a key's
  checkpoint before an event that arrived out of order), over the events.
* **Latency** (the mean query, 20 s of events, watermark 10 s behind, 5 % of events
  up to 10 s late): for each event, from its arrival to the end of the feed that
  emits its first row, with one worker: a micro-batch is fed once it has arrived and
  the feed before it is done, so a load the worker does not keep up with queues (seed
  002 §II: latency "under a fixed load"). Two loads: one that both policies sustain
  in this process (10 keys, 1,000 events/s) and the sweeps' (``--keys`` keys,
  10,000 events/s), which neither does; median and 99th percentile, optimistic
  against pessimistic, same final rows.
* **Throughput**: events per second through ``LocalStream.feed`` (the whole path:
  pandas batches in, changelog frames out), against the pessimistic policy on the
  same batches in the same run.
* **Sweeps**: the number of keys (the replay ratio should not grow with it), the
  events between checkpoints (``checkpoint_every``: replays against kernel calls), and
  the speculation bound (``speculate``: replay ratio against latency, on twice
  ``--events`` events so that the watermark moves; the first tables' stream lasts 1 s
  of event time, so there their watermark, 1 s behind, passes nothing before the
  final flush).

Both policies' final rows are cross-checked on every run: the optimistic changelog
through :class:`qre.runtime.changelog.Barrier` equals the pessimistic rows.
"""

from __future__ import annotations

import argparse
import datetime
import platform
import sys
import time
from dataclasses import dataclass

import numpy as np
import pandas as pd
from results import RESULTS, write_section

from qre import qre
from qre.runtime.changelog import Barrier
from spark_udf import LocalStream

QUERIES = {"sum per 100 ms window": "alphabet m; aggregate(sum(cur), 100ms)",
           "last 5 against the mean": "alphabet m; avg_last(5, cur) - avg(cur)",
           "mean of the last 2": "alphabet m; avg_last(2, cur)"}
LATENCY_QUERY = "last 5 against the mean"
"""The query latency is measured on: one row per event (a window's row has no event)."""
ARRIVE = "arrive_us"
"""The column of each event's arrival time (µs) in :func:`arrivals`' batches (not fed)."""
STEP_US = 10  # 100,000 events per second of event time
BATCH_US = 100_000  # micro-batches of 100 ms of arrival time


def arrivals(n: int, keys: int, late: float, delay_us: int, seed: int = 0,
             step_us: int = STEP_US) -> list[pd.DataFrame]:
    """The events (one every ``step_us``) in arrival order, cut into micro-batches of
    :data:`BATCH_US`."""
    rng = np.random.default_rng(seed)
    t = np.arange(n, dtype=np.int64) * step_us
    behind = np.where(rng.random(n) < late, rng.integers(0, delay_us + 1, n), 0)
    arrive = t + behind
    order = np.argsort(arrive, kind="stable")
    frame = pd.DataFrame({"k": rng.integers(0, keys, n), "t": t, "tag": "m",
                          "v": rng.normal(size=n), ARRIVE: arrive}
                         ).iloc[order].reset_index(drop=True)
    batch = arrive[order] // BATCH_US
    cuts = np.flatnonzero(np.diff(batch)) + 1
    return [frame.iloc[lo:hi] for lo, hi in zip([0, *cuts], [*cuts, n], strict=True)]


@dataclass
class Run:
    rows: pd.DataFrame
    seconds: float
    replayed: int
    first_batch: dict[tuple[int, int], int]
    batch_seconds: list[float]


def run(text: str, batches: list[pd.DataFrame], delay_us: int, optimistic: bool,
        checkpoint_every: int | None = None, speculate_us: int | None = None) -> Run:
    """Feed the batches (times in µs), then flush; every row, the wall time, the events
    replayed and each row's first output batch."""
    stream = LocalStream(qre(text), "k", "t", "tag", "v", time_unit="us",
                         watermark=f"{delay_us} microseconds", optimistic=optimistic,
                         checkpoint_every=checkpoint_every,
                         speculate=None if speculate_us is None else f"{speculate_us} us")
    out, first, walls = [], {}, []
    fed = [b.drop(columns=ARRIVE) for b in batches]
    start = time.perf_counter()
    for i, batch in enumerate([*fed, None]):
        began = time.perf_counter()
        rows = stream.feed(batch) if batch is not None else stream.advance(2**62)
        walls.append(time.perf_counter() - began)
        if len(rows):
            out.append(rows)
            for k, t in zip(rows["k"].tolist(), rows["t"].tolist(), strict=True):
                first.setdefault((k, t), i)
    seconds = time.perf_counter() - start
    return Run(pd.concat(out, ignore_index=True), seconds, stream.replayed, first, walls)


def final_rows(changelog: pd.DataFrame) -> pd.DataFrame:
    barrier = Barrier(time="t")
    barrier.push(changelog)
    released = barrier.release(2**62)
    assert barrier.held == 0 and released is not None
    return released


def canonical(frame: pd.DataFrame) -> list[tuple]:
    return sorted(zip(frame["k"].tolist(), frame["t"].tolist(), frame["status"].tolist(),
                      [float(v).hex() for v in frame["value"]], strict=True))


def latencies(runs: Run, batches: list[pd.DataFrame]) -> np.ndarray:
    """Seconds from each event's arrival to the end of the feed that emits its first row,
    with one worker: micro-batch i (then the final flush) is fed at the end of its 100 ms
    of arrival time or when the feed before it ends, whichever is later."""
    done, finished = 0.0, []
    for i, wall in enumerate(runs.batch_seconds):
        done = max(done, (i + 1) * BATCH_US / 1e6) + wall
        finished.append(done)
    arrived = {}
    for batch in batches:
        for k, t, a in zip(batch["k"].tolist(), batch["t"].tolist(), batch[ARRIVE].tolist(),
                           strict=True):
            arrived[(k, t)] = a / 1e6
    return np.array([finished[b] - arrived[kt] for kt, b in runs.first_batch.items()
                     if kt in arrived])


def row_latencies(runs: Run) -> np.ndarray:
    """Seconds of arrival time from each row's time to the end of the micro-batch that
    first emits it (events arrive at their time, unless late). Without the feed's wall
    time: at 100,000 events/s a feed takes longer than its 100 ms (the throughput
    column), which would swamp what the bound changes."""
    return np.array([(b + 1) * BATCH_US / 1e6 - t / 1e6
                     for (_, t), b in runs.first_batch.items()])


@dataclass
class Measured:
    ratio: float
    replays: float
    optimistic: float
    pessimistic: float | None

    def cells(self) -> str:
        pes = "" if self.pessimistic is None else f"{self.pessimistic:,.0f}"
        return (f"{self.ratio:.3f} | {self.replays:.2f} | {self.optimistic:,.0f} | {pes} |")


def measure(text: str, events: int, keys: int, late: float, delay_s: float,
            checkpoint_every: int | None = None, pessimistic: bool = True) -> Measured:
    """One configuration: both policies on the same arrivals, final rows cross-checked."""
    delay_us = int(delay_s * 1e6)
    batches = arrivals(events, keys, late, delay_us)
    opt = run(text, batches, delay_us, True, checkpoint_every)
    final = final_rows(opt.rows)
    pes = None
    if pessimistic:
        pes = run(text, batches, delay_us, False)
        assert canonical(final) == canonical(pes.rows), "final rows differ"
    return Measured(len(opt.rows) / len(final), opt.replayed / events, events / opt.seconds,
                    None if pes is None else events / pes.seconds)


def latency_table(keys: int) -> list[str]:
    """The latency runs (module docstring): 20 s of events, watermark 10 s behind."""
    lines = ["", f"Latency ({LATENCY_QUERY}; 20 s of events, watermark 10 s behind, 5 % "
             "of events up to 10 s late; from each event's arrival to the end of the feed "
             "that emits its first row, one worker, micro-batches queue behind a feed that "
             "takes longer than their 100 ms):", "",
             "| keys | events/s | feed per micro-batch (median) optimistic | pessimistic | "
             "median latency optimistic | pessimistic | p99 optimistic | pessimistic | "
             "ratio of medians |", "|--:|--:|--:|--:|--:|--:|--:|--:|--:|"]
    for n_keys, rate in ((10, 1_000), (keys, 10_000)):
        batches = arrivals(20 * rate, n_keys, 0.05, 10_000_000, step_us=1_000_000 // rate)
        opt = run(QUERIES[LATENCY_QUERY], batches, 10_000_000, True)
        pes = run(QUERIES[LATENCY_QUERY], batches, 10_000_000, False)
        assert canonical(final_rows(opt.rows)) == canonical(pes.rows), "final rows differ"
        lo, lp = latencies(opt, batches), latencies(pes, batches)
        lines.append(
            f"| {n_keys:,} | {rate:,} | {np.median(opt.batch_seconds):.3f} s | "
            f"{np.median(pes.batch_seconds):.3f} s | {np.median(lo):.3f} s | "
            f"{np.median(lp):.3f} s | {np.quantile(lo, 0.99):.3f} s | "
            f"{np.quantile(lp, 0.99):.3f} s | {np.median(lp) / max(np.median(lo), 1e-9):,.1f}x |")
        print(lines[-1], flush=True)
    return lines


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--events", type=int, default=100_000)
    parser.add_argument("--keys", type=int, default=200)
    parser.add_argument("--no-write", action="store_true")
    parser.add_argument("--latency-only", action="store_true",
                        help="only the latency table, printed (nothing written)")
    args = parser.parse_args()
    if args.latency_only:
        print("\n".join(latency_table(args.keys)))
        return
    n = args.events
    lines = ["## Optimistic processing: replay ratio, latency, throughput (issue 22, seed 002)",
             "", f"Produced by `.venv/bin/python benchmarks/optimistic.py "
             f"{' '.join(sys.argv[1:])}` on {datetime.date.today()} ({platform.machine()}, "
             f"Python {platform.python_version()}). {n:,} events, {args.keys:,} "
             "keys, 100,000 events/s of event time, micro-batches of 100 ms, spark_udf."
             "LocalStream (monitor_stream's rules in one process), checkpoints every 256 "
             "events and after each micro-batch. Final rows cross-checked: the optimistic "
             "changelog through the Barrier equals the pessimistic rows.", "",
             "| query | late | delay | rows at barrier / valid | replayed / event | "
             "events/s optimistic | events/s pessimistic |", "|---|--:|--:|--:|--:|--:|--:|"]

    def row(table: list[str], head: str, m: Measured) -> None:
        table.append(f"| {head} | {m.cells()}")
        print(table[-1], flush=True)

    for name, text in QUERIES.items():
        for late, delay_s in [(0.0, 1), (0.05, 1), (0.1, 1), (0.3, 1), (0.05, 0.1)]:
            row(lines, f"{name} | {late:.0%} | {delay_s:g} s",
                measure(text, n, args.keys, late, delay_s))
    keys = ["", "Keys (5 % late, up to 1 s):", "",
            "| query | keys | rows at barrier / valid | replayed / event | "
            "events/s optimistic | events/s pessimistic |", "|---|--:|--:|--:|--:|--:|"]
    for name in ("sum per 100 ms window", "mean of the last 2"):
        for k in (20, 200, 1000):
            row(keys, f"{name} | {k:,}", measure(QUERIES[name], n, k, 0.05, 1))
    spacing = ["", f"Events between checkpoints (5 % late, up to 1 s, {args.keys:,} keys; "
               "optimistic only):", "", "| query | checkpoint_every | rows at barrier / valid "
               "| replayed / event | events/s optimistic | |", "|---|--:|--:|--:|--:|--|"]
    for name in ("sum per 100 ms window", "mean of the last 2"):
        for every in (32, 256, 10**9):
            label = "micro-batches only" if every == 10**9 else f"{every}"
            row(spacing, f"{name} | {label}",
                measure(QUERIES[name], n, args.keys, 0.05, 1, every, pessimistic=False))
    bounded = ["", f"Speculation bound (``speculate``: rows are emitted once the release "
               f"point is within it; {2 * n:,} events, so that the watermark, 1 s behind, "
               f"moves for the second half; 5 % late, up to 1 s, {args.keys:,} keys). "
               "Latency: arrival time from a row's time to the end of the micro-batch "
               "that first emits it (events arrive at their time unless late; the feeds' "
               "wall time left out: in this process they take longer than the 100 ms of "
               "events they hold, see events/s).", "",
               "| query | speculate | rows at barrier / valid | median latency | "
               "p99 latency | events/s |", "|---|--:|--:|--:|--:|--:|"]
    batches = arrivals(2 * n, args.keys, 0.05, 1_000_000)
    for name, text in QUERIES.items():
        pes = run(text, batches, 1_000_000, False)
        for bound_us in (None, 500_000, 0, "pessimistic"):
            got = pes if bound_us == "pessimistic" else run(
                text, batches, 1_000_000, True, speculate_us=bound_us)
            final = pes.rows if got is pes else final_rows(got.rows)
            assert canonical(final) == canonical(pes.rows), "final rows differ"
            label = ("pessimistic policy" if got is pes else "none" if bound_us is None
                     else f"{bound_us / 1e6:g} s")
            lat = row_latencies(got)
            bounded.append(f"| {name} | {label} | {len(got.rows) / len(final):.3f} | "
                           f"{np.median(lat):.3f} s | {np.quantile(lat, 0.99):.3f} s | "
                           f"{2 * n / got.seconds:,.0f} |")
            print(bounded[-1], flush=True)
    latency_lines = latency_table(args.keys)
    notes = ["", "Seed 002's figures (§VI, Fig. 9; an inverted index on 10 AWS micro "
             "instances, 1 to 10 workers): replay ratio 1.05-1.30, under 10 % overhead under "
             "non-extreme load, not growing with the number of workers.", "",
             "Reading the latency: at a load the worker keeps up with, an optimistic row "
             "comes within the feed of the micro-batch its event arrives in, a pessimistic "
             "one once the watermark, 10 s behind, passes it. At the sweeps' load one "
             "process keeps up with neither policy (a micro-batch's feed takes longer than "
             "its 100 ms, the optimistic one longer than the pessimistic one: see events/s "
             "above), so rows wait behind the backlog, whichever the policy. Both run the "
             "same Python step per key and micro-batch; on Spark, buckets of keys step in "
             "parallel tasks.", "",
             "Reading the ratios: a late event retracts and re-inserts every row it changes. "
             "The mean of the last 2 changes its own row and the next: about 1 + 2 x the late "
             "fraction. A window's result is emitted when the key's first event after its end "
             "arrives and again in each micro-batch where a late event changes it, so the "
             "ratio grows with the events per key and window (it falls as keys are added); "
             "the mean so far changes every later row of the key, whatever the policy. "
             "Throughput: the optimistic step's pandas bookkeeping per key and micro-batch "
             "(merging, the rows asserted since a checkpoint, the changelog) against the "
             "pessimistic step's; replays themselves are cheap, which is why checkpoints "
             "are sparse.", "",
             "Why the ratio is what the query makes it: the changelog retracts only rows "
             "that changed (identical rows cancel in the diff), so every retraction counted "
             "above is of a row emitted before a late event changed it; a policy that emits "
             "a row before it is final must retract it then. Fewer retractions need later "
             "rows: the speculation bound trades one for the other, down to 1.000 at 0 (final "
             "rows only) at the pessimistic policy's latency."]
    text = "\n".join([*lines, *keys, *spacing, *bounded, *latency_lines, *notes]) + "\n"
    if not args.no_write:
        write_section(RESULTS, "optimistic", text)
    print(text)


if __name__ == "__main__":
    main()

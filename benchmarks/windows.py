"""Windowed averages per core: qre against Spark's native ``groupBy(window(...))`` (issue 7)
and ``groupBy(session_window(...))`` (issue 21 §3).

Run (from the repository root)::

    .venv/bin/python benchmarks/windows.py [--events 5000000] [--keys 10000]

(a few minutes on 2 cores at the default size) and writes the table to
benchmarks/RESULTS.md, section "windows" (``--output``).

Writes seeded random events (key, timestamp, tag, value; about ten events per
key and minute, in random order) to Parquet in a temporary directory and, for
a tumbling window (60 s), a sliding one (60 s every 10 s) and session windows
(a 10 s gap: sessions of about five events), times the average of ``v`` per
key and window:

* ``Monitor.run_timed`` (engine ``codegen``) in this process, on the columns
  read back from the Parquet file with pandas (sorting, ticks and the kernel:
  one core);
* ``spark_udf.monitor_timed`` on Spark local[*], written to the ``noop`` sink;
* native Spark SQL, ``groupBy(k, window(ts, "60 seconds"[, "10 seconds"]))
  .agg(avg(v))`` (``session_window(ts, "10 seconds")`` for sessions), written to
  the ``noop`` sink;
* the floor of monitor_timed: ``repartition(k)`` and ``mapInArrow`` of a function
  that reads the batches and returns nothing (the same job for both windows).

Spark times are best of ``--repeat`` after a warm-up on the events of one key
in a hundred (worker start, kernel compile or cache load); run_timed's too,
after a warm-up call. Rates are events per second, and per core (Spark's divided
by the cores of local[*]).

The outputs are cross-checked first, on the events of one key in a hundred:
the three give the same non-empty windows (Spark's ``window.end`` − 1 µs is
qre's stamp, seed 004 §2.1: γ.l + WS − δ; a session's end is its last event +
the gap in both) and the same averages (relative tolerance 1e-9: the sums are
taken in different orders).
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pandas as pd
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from results import RESULTS, write_section

from qre import Monitor, qre
from spark_udf import local_session, monitor_timed

WINDOWS = {"tumbling 60 s": (60, 60), "sliding 60 s / 10 s": (60, 10), "session 10 s gap": (10, 0)}
"""Name → (size, slide) in seconds; slide 0: sessions, size the gap."""

EVENTS_PER_KEY_MINUTE = 10
START = np.datetime64("2026-11-25T00:00:00", "us")


def query(size: int, slide: int) -> str:
    span = f"session({size}s)" if slide == 0 else f"{size}s, {slide}s"
    return f"alphabet m; aggregate(avg(cur), {span})"


def events(n: int, keys: int, seed: int = 0) -> pd.DataFrame:
    """``n`` events over ``keys`` keys, about ten per key and minute, shuffled."""
    rng = np.random.default_rng(seed)
    span_us = int(n / keys / EVENTS_PER_KEY_MINUTE * 60e6)
    return pd.DataFrame({"k": rng.integers(0, keys, n),
                         "ts": START + rng.integers(0, span_us, n).astype("timedelta64[us]"),
                         "tag": np.full(n, "m"), "v": rng.normal(size=n)})


def native_window(df: DataFrame, size: int, slide: int) -> DataFrame:
    """The average per key and non-empty window (session: slide 0), in Spark SQL."""
    window = (F.session_window("ts", f"{size} seconds") if slide == 0
              else F.window("ts", f"{size} seconds", f"{slide} seconds"))
    return df.groupBy("k", window.alias("w")).agg(F.avg("v").alias("value"))


def qre_on_spark(df: DataFrame, m: Monitor) -> DataFrame:
    return monitor_timed(df, m, "k", "ts", "tag", "v", engine="codegen")


def run_local(pdf: pd.DataFrame, m: Monitor) -> pd.DataFrame:
    return m.run_timed(pdf["ts"].to_numpy(), pdf["tag"].to_numpy(dtype=object),
                       pdf["v"].to_numpy(), keys=pdf["k"].to_numpy(), engine="codegen")


def _indexed(frame: pd.DataFrame, key: str, stamp: str, name: str) -> pd.Series:
    stamps = pd.to_datetime(frame[stamp]).astype("datetime64[us]")
    return pd.Series(frame["value"].to_numpy(), name=name,
                     index=pd.MultiIndex.from_arrays([frame[key].to_numpy(), stamps]))


def cross_check(local: pd.DataFrame, spark_qre: DataFrame, native: DataFrame) -> int:
    """Same windows and averages from the three; returns the number of windows compared."""
    mine = spark_qre.toPandas()
    theirs = native.select("k", (F.col("w.end") - F.expr("INTERVAL 1 MICROSECOND"))
                           .alias("stamp"), "value").toPandas()
    series = [_indexed(local, "key", "time", "run_timed"),
              _indexed(mine, "k", "ts", "monitor_timed"),
              _indexed(theirs, "k", "stamp", "native")]
    joined = pd.concat(series, axis=1, join="outer")
    if joined.isna().any().any():
        raise AssertionError(f"different windows:\n{joined[joined.isna().any(axis=1)].head()}")
    if not np.allclose(joined.min(axis=1), joined.max(axis=1), rtol=1e-9, atol=1e-12):
        raise AssertionError("different averages")
    return len(joined)


def best_seconds(job: Callable[[], object], repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        job()
        best = min(best, time.perf_counter() - start)
    return best


def _drain(batches: Iterator[object]) -> Iterator[object]:
    for _ in batches:
        pass
    return iter(())


def shuffle_floor(df: DataFrame) -> DataFrame:
    """What monitor_timed does before run_timed: every event shuffled to its key's
    partition and handed to Python as Arrow; here nothing is computed."""
    return df.select("k", "ts", "tag", "v").repartition("k").mapInArrow(_drain, df.schema)


def to_noop(out: DataFrame) -> Callable[[], None]:
    return lambda: out.write.format("noop").mode("overwrite").save()


def table_rows(rows: list[tuple[str, str, int, float]], n: int) -> list[str]:
    """Markdown rows for (window, job, cores, seconds); the last column compares events/s
    per core with native Spark's on the same window."""
    native_core_seconds = {window: cores * seconds for window, job, cores, seconds in rows
                           if job.startswith("native")}
    return [f"| {window} | {job} | {seconds:.2f} | {n / seconds:,.0f} | "
            f"{n / seconds / cores:,.0f} | {native_core_seconds[window] / (cores * seconds):.2f}x |"
            for window, job, cores, seconds in rows]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--events", type=int, default=5_000_000)
    parser.add_argument("--keys", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--output", type=Path, default=RESULTS)
    args = parser.parse_args()
    spark = local_session("qre-bench")
    spark_cores = os.cpu_count() or 1  # local[*]: a thread per core
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "events.parquet")
        events(args.events, args.keys).to_parquet(path, index=False)
        pdf = pd.read_parquet(path)
        sample_pdf = pdf[pdf["k"] % 100 == 0]
        df = spark.read.parquet(path)
        sample = df.where(F.col("k") % 100 == 0)
        checked = {}
        for name, (size, slide) in WINDOWS.items():
            m = qre(query(size, slide), ["m"])
            checked[name] = cross_check(run_local(sample_pdf, m), qre_on_spark(sample, m),
                                        native_window(sample, size, slide))
            for out in (qre_on_spark(sample, m), native_window(sample, size, slide),
                        shuffle_floor(sample)):
                to_noop(out)()
            run_local(sample_pdf, m)
            rows += [
                (name, "qre run_timed (codegen), 1 process", 1,
                 best_seconds(lambda m=m: run_local(pdf, m), args.repeat)),
                (name, "qre monitor_timed, Spark local[*]", spark_cores,
                 best_seconds(to_noop(qre_on_spark(df, m)), args.repeat)),
                (name, f"native Spark SQL groupBy({'session_' * (slide == 0)}window)",
                 spark_cores,
                 best_seconds(to_noop(native_window(df, size, slide)), args.repeat)),
                (name, "floor: the shuffle and Arrow of monitor_timed, no work", spark_cores,
                 best_seconds(to_noop(shuffle_floor(df)), args.repeat))]
    command = " ".join(["benchmarks/windows.py", *sys.argv[1:]])
    lines = ["## Windowed aggregates: qre against Spark's native groupBy(window(...))", "",
             f"Produced by `.venv/bin/python {command}` on {datetime.date.today()} "
             f"({platform.machine()}, {spark_cores} cores, Python "
             f"{platform.python_version()}, Spark {spark.version} local[*]). "
             "The average of `v` per key and window, "
             f"{args.events:,} events, {args.keys:,} keys, about "
             f"{EVENTS_PER_KEY_MINUTE} per key and minute, read from Parquet; query "
             f"`{query(60, 10)}` (sliding), its tumbling form and `{query(10, 0)}`. "
             "Spark jobs written to the "
             f"`noop` sink; best of {args.repeat} after a warm-up. Outputs cross-checked on "
             "the events of one key in a hundred (same non-empty windows, same stamps, "
             "averages within 1e-9): "
             + ", ".join(f"{n:,} windows {name}" for name, n in checked.items()) + ".", "",
             "| window | job | seconds | events/s | events/s per core | per core / native |",
             "|---|---|---:|---:|---:|---:|"]
    notes = ["", "- run_timed: one process on the pandas columns (event order, ticks, kernel, "
             "output frame). monitor_timed: `repartition(k)` sends every event through Spark's "
             "shuffle and Arrow, then run_timed per partition. Native Spark aggregates each "
             "window partially before its shuffle, and a sliding window expands each event "
             "into size / slide windows (6 here). Spark's session windows sort each key's "
             "events and merge them after the shuffle."]
    text = "\n".join([*lines, *table_rows(rows, args.events), *notes]) + "\n"
    write_section(args.output, "windows", text)
    print(text)


if __name__ == "__main__":
    main()

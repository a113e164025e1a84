"""Rows/s and per-batch latency of spark_udf.monitor_stream at steady state (issue 6).

Run (from the repository root)::

    .venv/bin/python benchmarks/spark_stream.py [--batches 10] [--batch-events 100000]

(about 10 minutes on 2 cores) and writes the table to benchmarks/RESULTS.md,
section "spark-stream" (``--output``).

Writes seeded random events to Parquet files, one per micro-batch (each file
``--batch-events`` events of ``--keys`` keys, times increasing from file to
file and shuffled within one), and streams them through Spark's file source
(``maxFilesPerTrigger`` 1, local[*], RocksDB state) to the ``noop`` sink
with a watermark of 10 seconds:

* ``monitor_stream`` with the query ``avg_last(5, cur)``;
* the floor: a ``transformWithStateInPandas`` processor that only counts
  each key's events in a value state and passes its rows through — what
  Spark's stateful Python operator costs before any monitoring.

Per job, Spark's own progress reports give each micro-batch's duration
(``triggerExecution``) and row count; the first ``--warmup`` batches (worker
start, kernel load, state store creation) are left out. Reported: the median
and the 90th percentile of the per-batch latency and rows/s over the steady
batches (their rows over their summed durations), for two key counts: few
events per key per batch is the costly case (a fixed cost per key).
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from pyspark.sql.streaming import StatefulProcessor
from results import RESULTS, write_section

from qre import qre
from spark_udf import local_session, monitor_stream

QUERY = "avg_last(5, cur)"
SCHEMA = "k long, t double, tag string, v double"


def write_files(directory: Path, batches: int, batch_events: int, keys: int) -> None:
    """One Parquet file per micro-batch; batch i's times lie in [100 i, 100 i + 100) s."""
    rng = np.random.default_rng(0)
    directory.mkdir(parents=True)
    for i in range(batches):
        frame = pd.DataFrame({"k": rng.integers(0, keys, batch_events),
                              "t": 100.0 * i + 100.0 * rng.random(batch_events),
                              "tag": "m", "v": rng.normal(size=batch_events)})
        path = directory / f"batch-{i:04d}.parquet"
        frame.to_parquet(path, index=False)
        os.utime(path, (1_700_000_000 + i, 1_700_000_000 + i))


class PassThrough(StatefulProcessor):
    """The floor: count each key's events in a value state, output the rows as they are."""

    def init(self, handle: Any) -> None:
        self.count = handle.getValueState("count", "n long")

    def handleInputRows(self, key: Any, rows: Iterator[pd.DataFrame],
                        timerValues: Any) -> Iterator[pd.DataFrame]:
        saved = self.count.get()
        n = 0 if saved is None else saved[0]
        for frame in rows:
            n += len(frame)
            yield frame
        self.count.update((n,))

    def close(self) -> None:
        pass


def progress_rows(query: Any) -> list[tuple[int, float]]:
    """(input rows, seconds) of each micro-batch with data, in batch order."""
    return [(p["numInputRows"], p["durationMs"]["triggerExecution"] / 1000)
            for p in query.recentProgress if p["numInputRows"]]


def run_monitor(spark: Any, source: Path, tmp: Path) -> list[tuple[int, float]]:
    df = spark.readStream.schema(SCHEMA).option("maxFilesPerTrigger", 1).parquet(str(source))
    query = monitor_stream(df, qre(QUERY, ["m"]), "k", "t", "tag", "v", format="noop",
                           output=str(tmp / "out-monitor"), checkpoint=str(tmp / "ckpt-monitor"),
                           watermark="10 seconds", trigger={"availableNow": True})
    query.awaitTermination()
    return progress_rows(query)


def run_floor(spark: Any, source: Path, tmp: Path) -> list[tuple[int, float]]:
    from pyspark.sql import functions as F

    df = spark.readStream.schema(SCHEMA).option("maxFilesPerTrigger", 1).parquet(str(source))
    events = (df.withColumn("ts", F.timestamp_seconds("t")).withWatermark("ts", "10 seconds")
              .drop("ts"))
    out = events.groupBy("k").transformWithStateInPandas(
        statefulProcessor=PassThrough(), outputStructType=SCHEMA, outputMode="Append",
        timeMode="None")
    query = (out.writeStream.format("noop").option("checkpointLocation", str(tmp / "ckpt-floor"))
             .trigger(availableNow=True).start())
    query.awaitTermination()
    return progress_rows(query)


def summary(batches: list[tuple[int, float]], warmup: int) -> tuple[float, float, float, int]:
    """Median and p90 latency (s), rows/s over the steady batches, and their number."""
    steady = batches[warmup:]
    seconds = np.array([s for _, s in steady])
    rows = sum(n for n, _ in steady)
    return (float(np.median(seconds)), float(np.percentile(seconds, 90)),
            rows / float(seconds.sum()), len(steady))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--batches", type=int, default=10)
    parser.add_argument("--batch-events", type=int, default=100_000)
    parser.add_argument("--keys", type=int, nargs="+", default=[1_000, 10_000])
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--output", type=Path, default=RESULTS)
    args = parser.parse_args()
    spark = local_session("qre-bench")
    cores = os.cpu_count() or 1
    lines = []
    for keys in args.keys:
        with tempfile.TemporaryDirectory() as name:
            tmp = Path(name)
            write_files(tmp / "in", args.batches, args.batch_events, keys)
            for job, run in [("monitor_stream", run_monitor),
                             ("floor: pass-through stateful processor", run_floor)]:
                batches = run(spark, tmp / "in", tmp)
                if sum(n for n, _ in batches) != args.batches * args.batch_events:
                    raise AssertionError(f"{job}: not every event was read: {batches}")
                median, p90, rate, n = summary(batches, args.warmup)
                lines.append(f"| {keys:,} | {args.batch_events // keys:,} | {job} | {n} | "
                             f"{median:.2f} | {p90:.2f} | {rate:,.0f} | {rate / cores:,.0f} |")
                print(lines[-1], flush=True)
    command = " ".join(["benchmarks/spark_stream.py", *sys.argv[1:]])
    text = "\n".join([
        "## Spark streaming: monitor_stream at steady state", "",
        f"Produced by `.venv/bin/python {command}` on {datetime.date.today()} "
        f"({platform.machine()}, {cores} cores, Python {platform.python_version()}, Spark "
        f"{spark.version} local[*], RocksDB state). Query `{QUERY}`; {args.batches} micro-batches "
        f"of {args.batch_events:,} events (one Parquet file each), watermark 10 seconds, `noop` "
        f"sink; latency is Spark's `triggerExecution` per micro-batch, the first "
        f"{args.warmup} batches left out; rows/s is the steady batches' rows over their summed "
        "latencies. The floor is a `transformWithStateInPandas` processor that only counts "
        "each key's events in its state and passes the rows through.", "",
        "| keys | events per key per batch | job | steady batches | median latency s "
        "| p90 latency s | rows/s | rows/s per core |",
        "|---:|---:|---|---:|---:|---:|---:|---:|",
        *lines])
    write_section(args.output, "spark-stream", text)
    print(text)


if __name__ == "__main__":
    main()

"""Rows/s and per-batch latency of spark_udf.monitor_stream at steady state, and state per
key (issues 6 and 20).

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
* the floor the issue set (20, goal 6): a ``transformWithStateInPandas``
  processor grouped by key that only counts each key's events in a value
  state and passes its rows through — what Spark's stateful Python operator
  costs per key before any monitoring;
* the floor of monitor_stream's own shape: the same pass-through grouped by
  ``monitor_stream``'s buckets (a count per bucket).

State per key (issue 20, goal 7): for each query of benchmarks/end_to_end.py and
the one above, the bytes a key takes in monitor_stream's state value (its row of
``Bucket.keys`` as stored: the key, the configuration, the last event's time,
wake-up and number of waiting events; measured on the stream's first batches of
10,000 keys, each key's row averaged) against the kernel's configuration (9 bytes
per DT state); and Spark's own figure for the stream above, RocksDB's SST files
over the keys (compressed, and holding the waiting events too).

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
from spark_udf.buckets import GROUP, Bucket, BucketRules, step_bucket
from spark_udf.keyed import TIME_US, Rules
from spark_udf.plan import make_plan
from spark_udf.stream import BUCKETS_PER_PARTITION

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


class PassThroughBuckets(PassThrough):
    """The floor of monitor_stream's shape: a count per bucket, the rows as they are."""

    def handleInputRows(self, key: Any, rows: Iterator[pd.DataFrame],
                        timerValues: Any) -> Iterator[pd.DataFrame]:
        for frame in super().handleInputRows(key, rows, timerValues):
            yield frame[["k", "t", "tag", "v"]]


def progress_rows(query: Any) -> list[tuple[int, float]]:
    """(input rows, seconds) of each micro-batch with data, in batch order."""
    return [(p["numInputRows"], p["durationMs"]["triggerExecution"] / 1000)
            for p in query.recentProgress if p["numInputRows"]]


SST_BYTES: dict[int, float] = {}
"""RocksDB's SST bytes per key at the end of each monitor_stream run, by key count."""


def run_monitor(spark: Any, source: Path, tmp: Path) -> list[tuple[int, float]]:
    df = spark.readStream.schema(SCHEMA).option("maxFilesPerTrigger", 1).parquet(str(source))
    query = monitor_stream(df, qre(QUERY, ["m"]), "k", "t", "tag", "v", format="noop",
                           output=str(tmp / "out-monitor"), checkpoint=str(tmp / "ckpt-monitor"),
                           watermark="10 seconds", trigger={"availableNow": True})
    query.awaitTermination()
    keys = int(source.name.split("-")[-1])
    metrics = query.lastProgress["stateOperators"][0]["customMetrics"]
    SST_BYTES[keys] = metrics.get("rocksdbSstFileSize", float("nan")) / keys
    return progress_rows(query)


def _pass_through(spark: Any, source: Path, tmp: Path, group: str, processor: Any,
                  name: str) -> list[tuple[int, float]]:
    from pyspark.sql import functions as F

    df = spark.readStream.schema(SCHEMA).option("maxFilesPerTrigger", 1).parquet(str(source))
    buckets = BUCKETS_PER_PARTITION * int(spark.conf.get("spark.sql.shuffle.partitions"))
    events = (df.withColumn("ts", F.timestamp_seconds("t")).withWatermark("ts", "10 seconds")
              .drop("ts").withColumn("bucket", F.pmod(F.hash("k"), F.lit(buckets))))
    out = events.groupBy(group).transformWithStateInPandas(
        statefulProcessor=processor, outputStructType=SCHEMA, outputMode="Append",
        timeMode="None")
    query = (out.writeStream.format("noop").option("checkpointLocation", str(tmp / name))
             .trigger(availableNow=True).start())
    query.awaitTermination()
    return progress_rows(query)


def run_floor(spark: Any, source: Path, tmp: Path) -> list[tuple[int, float]]:
    return _pass_through(spark, source, tmp, "k", PassThrough(), "ckpt-floor")


def run_floor_buckets(spark: Any, source: Path, tmp: Path) -> list[tuple[int, float]]:
    return _pass_through(spark, source, tmp, "bucket", PassThroughBuckets(), "ckpt-buckets")


def key_state_bytes(text: str, alphabet: list[str], keys: int, events: int
                    ) -> tuple[int, float]:
    """(Q, bytes per key of ``Bucket.keys`` as stored) for the query after three batches of
    ``events`` events over ``keys`` keys (one bucket: the per-key bytes do not depend on
    how keys are split), with a watermark, as monitor_stream runs it."""
    m = qre(text) if alphabet is None else qre(text, alphabet)
    rng = np.random.default_rng(1)
    frames = []
    for i in range(3):
        frame = pd.DataFrame({"k": rng.integers(0, keys, events),
                              "t": 100.0 * i + 100.0 * rng.random(events),
                              "tag": rng.choice(list(m.alphabet), events),
                              "v": rng.normal(size=events)})
        frame[TIME_US] = (frame["t"] * 1e6).astype(np.int64)
        frame[GROUP] = frame["k"].astype(str)
        frames.append(frame)
    plan = make_plan("bench", frames[0][["k", "t", "tag", "v"]], m, "k", "t", "tag", "v", (),
                     "table", "error")
    spec = BucketRules(plan, Rules(watermark=True), m, "table", int)
    bucket = Bucket.empty(spec)
    for i, frame in enumerate(frames):  # the watermark: the times before, less 10 s
        bucket, _ = step_bucket(spec, bucket, frame, max(0, 100 * i - 10) * 1_000_000)
    return len(m.dt.states), len(bucket.to_bytes()[0]) / len(bucket.keys)


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
            source = tmp / f"in-{keys}"
            write_files(source, args.batches, args.batch_events, keys)
            for job, run in [("monitor_stream", run_monitor),
                             ("floor: pass-through per key", run_floor),
                             ("floor: pass-through per bucket", run_floor_buckets)]:
                batches = run(spark, source, tmp)
                if sum(n for n, _ in batches) != args.batches * args.batch_events:
                    raise AssertionError(f"{job}: not every event was read: {batches}")
                median, p90, rate, n = summary(batches, args.warmup)
                lines.append(f"| {keys:,} | {args.batch_events // keys:,} | {job} | {n} | "
                             f"{median:.2f} | {p90:.2f} | {rate:,.0f} | {rate / cores:,.0f} |")
                print(lines[-1], flush=True)
    sys.path.insert(0, str(Path(__file__).parent))
    from end_to_end import QUERIES

    state_lines = []
    for query, text, alphabet in [(f"`{QUERY}`", QUERY, ["m"]),
                                  *((name, text, None) for name, text in QUERIES.items())]:
        q, per_key = key_state_bytes(text, alphabet, 10_000, args.batch_events)
        state_lines.append(f"| {query} | {q} | {9 * q} | {per_key:.0f} | "
                           f"{per_key / (9 * q):.2f} |")
        print(state_lines[-1], flush=True)
    sst = "; ".join(f"{keys:,} keys: {SST_BYTES[keys]:.0f} bytes per key"
                    for keys in args.keys if keys in SST_BYTES)
    command = " ".join(["benchmarks/spark_stream.py", *sys.argv[1:]])
    text = "\n".join([
        "## Spark streaming: monitor_stream at steady state", "",
        f"Produced by `.venv/bin/python {command}` on {datetime.date.today()} "
        f"({platform.machine()}, {cores} cores, Python {platform.python_version()}, Spark "
        f"{spark.version} local[*], RocksDB state). Query `{QUERY}`; {args.batches} micro-batches "
        f"of {args.batch_events:,} events (one Parquet file each), watermark 10 seconds, `noop` "
        f"sink; latency is Spark's `triggerExecution` per micro-batch, the first "
        f"{args.warmup} batches left out; rows/s is the steady batches' rows over their summed "
        "latencies. The floors are `transformWithStateInPandas` processors that only count "
        "events in their state and pass the rows through: grouped by key (the issue's floor), "
        "and grouped by monitor_stream's buckets (its own shape: one call per bucket).", "",
        "| keys | events per key per batch | job | steady batches | median latency s "
        "| p90 latency s | rows/s | rows/s per core |",
        "|---:|---:|---|---:|---:|---:|---:|---:|",
        *lines, "",
        "State per key: each key's row of the bucket's state as stored (Arrow: the key, the "
        "configuration as 9 bytes per DT state, the last event's time, the wake-up, the number "
        "of its waiting events), after three "
        f"batches of {args.batch_events:,} events over 10,000 keys with a watermark, against the "
        "kernel's configuration (Q DT states, 9 bytes each). Before buckets a key's state was a "
        "row of its own holding the fingerprint (about 70 characters) and the configuration as "
        f"2Q doubles (16 bytes per state). Spark's RocksDB SST files at the end of the runs "
        f"above (compressed; waiting events included): {sst or 'not reported'}.", "",
        "| query | DT states Q | configuration bytes (9Q) | state bytes per key "
        "| / configuration |",
        "|---|---:|---:|---:|---:|",
        *state_lines])
    write_section(args.output, "spark-stream", text)
    print(text)


if __name__ == "__main__":
    main()

"""Rows/s of spark_udf.monitor_frame by method, side by side in one run (issue 6).

Run (from the repository root)::

    .venv/bin/python benchmarks/spark_frame.py [--events 10000000] [--keys 100000]

(about 25 minutes on 2 cores at the default size) and writes the table to
benchmarks/RESULTS.md, section "spark-frame" (``--output``).

Writes seeded random events (key, time, tag, value; keys and times
shuffled) to Parquet in a temporary directory, reads them back with Spark
(local[*]), and times, written to Spark's ``noop`` sink (the whole job runs,
nothing is kept), best of ``--repeat`` runs after a warm-up on the events of
one key in a hundred (which starts the workers and compiles the kernels):

* ``monitor_frame(...)`` for each method of :data:`spark_udf.batch.METHODS`;
* native Spark SQL: ``avg(v) OVER (PARTITION BY k ORDER BY t ROWS BETWEEN 4
  PRECEDING AND CURRENT ROW)``, the same average of the last five events;
* a plain-Python loop in ``applyInPandas`` (per key: sort, then a running
  window of five in a Python ``for`` loop), what one writes without qre;
* the floor of a per-key Arrow UDF: ``applyInArrow`` that only sorts each
  key's events (the third shape monitor_frame could have taken; it pays a
  fixed cost per key, as ``method="grouped"`` does).

The outputs are cross-checked first, on the events of one key in a hundred:
on every row with at least five events of its key, all give the same average (``avg_last(5)`` is
undefined before the fifth event; the SQL window averages fewer rows).
Prints a markdown table: seconds, rows/s and rows/s per core.
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F
from results import RESULTS, write_section

from qre import Monitor, qre
from spark_udf import local_session, monitor_frame
from spark_udf.batch import METHODS

QUERY = "avg_last(5, cur)"


def events(n: int, keys: int, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame({"k": rng.integers(0, keys, n), "t": rng.permutation(n),
                         "tag": np.full(n, "m"), "v": rng.normal(size=n)})


def native_window(df: DataFrame) -> DataFrame:
    """The average of the last five events per key, in Spark SQL: a window of rows."""
    last_five = Window.partitionBy("k").orderBy("t").rowsBetween(-4, 0)
    return df.select("k", "t", "tag", F.avg("v").over(last_five).alias("value"),
                     F.count("v").over(last_five).alias("n"))


def _python_window(pdf: pd.DataFrame) -> pd.DataFrame:
    """Per key: sort by time, then a running window of five values in a Python loop."""
    pdf = pdf.sort_values("t", kind="mergesort")
    values = pdf["v"].tolist()
    out, window = [], []
    for v in values:
        window.append(v)
        if len(window) > 5:
            window.pop(0)
        out.append(sum(window) / 5 if len(window) == 5 else float("nan"))
    return pd.DataFrame({"k": pdf["k"], "t": pdf["t"], "tag": pdf["tag"], "value": out})


def python_loop(df: DataFrame) -> DataFrame:
    return df.groupBy("k").applyInPandas(_python_window,
                                         "k long, t long, tag string, value double")


def cross_check(jobs: dict[str, DataFrame]) -> None:
    """Every job's average on rows with five events of their key so far, side by side."""
    frames = []
    for name, out in jobs.items():
        if name.startswith("floor"):
            continue
        pdf = out.toPandas()
        if "status" in pdf:
            pdf = pdf[pdf["status"] == 1]
        if "n" in pdf:
            pdf = pdf[pdf["n"] == 5]
        frames.append(pdf.dropna(subset=["value"]).set_index(["k", "t"])["value"].rename(name))
    joined = pd.concat(frames, axis=1, join="outer")
    if joined.isna().any().any() or not np.allclose(joined.min(axis=1), joined.max(axis=1),
                                                    rtol=1e-9, atol=1e-12):
        raise AssertionError(f"the jobs disagree:\n{joined[joined.isna().any(axis=1)].head()}")


def _sorted_table(table: pa.Table) -> pa.Table:
    return table.sort_by("t")


def arrow_floor(df: DataFrame) -> DataFrame:
    """``applyInArrow`` per key doing nothing but sort the key's events: the floor of a
    per-group Arrow UDF, before any monitoring."""
    return df.groupBy("k").applyInArrow(_sorted_table, df.schema)


def make_jobs(df: DataFrame, m: Monitor, methods: list[str]) -> dict[str, DataFrame]:
    jobs = {f"monitor_frame, method={method}": monitor_frame(
        df, m, key="k", time="t", tag="tag", value="v", method=method) for method in methods}
    jobs["native Spark SQL window"] = native_window(df)
    jobs["plain-Python applyInPandas loop"] = python_loop(df)
    jobs["floor: applyInArrow sorting each key, no monitor"] = arrow_floor(df)
    return jobs


def best_seconds(out: DataFrame, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        out.write.format("noop").mode("overwrite").save()
        best = min(best, time.perf_counter() - start)
    return best


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--events", type=int, default=10_000_000)
    parser.add_argument("--keys", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--methods", nargs="+", choices=METHODS, default=list(METHODS))
    parser.add_argument("--output", type=Path, default=RESULTS)
    args = parser.parse_args()
    spark = local_session("qre-bench")
    cores = os.cpu_count() or 1
    m = qre(QUERY, ["m"])
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "events.parquet")
        events(args.events, args.keys).to_parquet(path, index=False)
        df = spark.read.parquet(path)
        sample = make_jobs(df.where(F.col("k") % 100 == 0), m, args.methods)
        cross_check(sample)
        for out in sample.values():  # warm-up: worker start, kernel compile or cache load
            best_seconds(out, 1)
        rows = [(name, best_seconds(out, args.repeat))
                for name, out in make_jobs(df, m, args.methods).items()]
    command = " ".join(["benchmarks/spark_frame.py", *sys.argv[1:]])
    lines = ["## Spark batch: monitor_frame against native Spark SQL and a plain-Python UDF", "",
             f"Produced by `.venv/bin/python {command}` on {datetime.date.today()} "
             f"({platform.machine()}, {cores} cores, Python {platform.python_version()}, "
             f"Spark {spark.version} local[*]). Query `{QUERY}` (the average of each key's "
             f"last five events), {args.events:,} events, {args.keys:,} keys, read from "
             f"Parquet; each job written to the `noop` sink, best of {args.repeat} after a "
             "warm-up; outputs cross-checked on the events of one key in a hundred, on every "
             "row with five events of its key.", "",
             "| job | seconds | rows/s | rows/s per core | / native |", "|---|---:|---:|---:|---:|"]
    native = dict(rows)["native Spark SQL window"]
    for name, seconds in rows:
        rate = args.events / seconds
        lines.append(f"| {name} | {seconds:.2f} | {rate:,.0f} | {rate / cores:,.0f} | "
                     f"{native / seconds:.2f}x |")
    text = "\n".join(lines) + "\n"
    write_section(args.output, "spark-frame", text)
    print(text)


if __name__ == "__main__":
    main()

"""Rows/s of spark_udf.monitor_frame by method, side by side in one run (issue 6).

Run (from the repository root)::

    .venv/bin/python benchmarks/spark_frame.py [--events 1000000] [--keys 10000]

and writes the table to benchmarks/SPARK.md (``--output``).

Writes seeded random events (key, time, tag, value; keys and times
shuffled) to Parquet in a temporary directory, reads them back with Spark
(local[*]), and times, written to Spark's ``noop`` sink (the whole job runs,
nothing is kept), best of ``--repeat`` runs after one warm-up (which starts
the workers and compiles the kernels):

* ``monitor_frame(...)`` for each method of :data:`spark_udf.batch.METHODS`;
* native Spark SQL: ``avg(v) OVER (PARTITION BY k ORDER BY t ROWS BETWEEN 4
  PRECEDING AND CURRENT ROW)``, the same average of the last five events;
* a plain-Python loop in ``applyInPandas`` (per key: sort, then a running
  window of five in a Python ``for`` loop), what one writes without qre.

The outputs are cross-checked first: on every row with at least five
events of its key, all three give the same average (``avg_last(5)`` is
undefined before the fifth event; the SQL window averages fewer rows).
Prints a markdown table: seconds, rows/s and rows/s per core.
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd
from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from qre import qre
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


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--keys", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--output", type=Path, default=Path(__file__).parent / "SPARK.md")
    args = parser.parse_args()
    spark = local_session("qre-bench")
    cores = os.cpu_count() or 1
    m = qre(QUERY, ["m"])
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "events.parquet")
        events(args.events, args.keys).to_parquet(path, index=False)
        df = spark.read.parquet(path)
        jobs = {f"monitor_frame, method={method}": monitor_frame(
            df, m, key="k", time="t", tag="tag", value="v", method=method) for method in METHODS}
        jobs["native Spark SQL window"] = native_window(df)
        jobs["plain-Python applyInPandas loop"] = python_loop(df)
        cross_check(jobs)
        rows = []
        for name, out in jobs.items():
            def job(out: DataFrame = out) -> None:
                out.write.format("noop").mode("overwrite").save()

            job()  # warm-up: worker start, kernel compile or cache load
            best = float("inf")
            for _ in range(args.repeat):
                start = time.perf_counter()
                job()
                best = min(best, time.perf_counter() - start)
            rows.append((name, best))
    lines = ["# monitor_frame against native Spark SQL and a plain-Python UDF", "",
             f"Generated by `.venv/bin/python benchmarks/spark_frame.py --events {args.events} "
             f"--keys {args.keys}` on {datetime.date.today()} ({platform.processor() or 'cpu'}, "
             f"{cores} cores, Python {platform.python_version()}, Spark {spark.version} "
             f"local[*]). Query `{QUERY}` (the average of each key's last five events), "
             f"{args.events:,} events, {args.keys:,} keys, read from Parquet; each job written "
             f"to the `noop` sink, best of {args.repeat} after a warm-up; outputs cross-checked "
             "on every row with five events of its key.", "",
             "| job | seconds | rows/s | rows/s per core |", "|---|---:|---:|---:|"]
    for name, seconds in rows:
        rate = args.events / seconds
        lines.append(f"| {name} | {seconds:.2f} | {rate:,.0f} | {rate / cores:,.0f} |")
    text = "\n".join(lines) + "\n"
    args.output.write_text(text)
    print(text)


if __name__ == "__main__":
    main()

"""Rows/s of spark_udf.monitor_frame by method, side by side in one run (issue 6).

Run (from the repository root)::

    .venv/bin/python benchmarks/spark_frame.py [--events 1000000] [--keys 10000]

Writes seeded random events (key, time, tag, value; keys and times
shuffled) to Parquet in a temporary directory, reads them back with Spark
(local[*]), and times ``monitor_frame(...)`` written to Spark's ``noop``
sink (the whole job runs, nothing is kept) for each method of
:data:`spark_udf.batch.METHODS`, best of ``--repeat`` runs after one
warm-up (which compiles the kernels in the workers). Prints a markdown
table: seconds, rows/s and rows/s per core.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time

import numpy as np
import pandas as pd

from qre import qre
from spark_udf import local_session, monitor_frame
from spark_udf.batch import METHODS

QUERY = "avg_last(5, cur)"


def events(n: int, keys: int, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame({"k": rng.integers(0, keys, n), "t": rng.permutation(n),
                         "tag": np.full(n, "m"), "v": rng.normal(size=n)})


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--keys", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=2)
    args = parser.parse_args()
    spark = local_session("qre-bench")
    cores = os.cpu_count() or 1
    m = qre(QUERY, ["m"])
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "events.parquet")
        events(args.events, args.keys).to_parquet(path, index=False)
        df = spark.read.parquet(path)
        rows = []
        for method in METHODS:
            def job(method: str = method) -> None:
                out = monitor_frame(df, m, key="k", time="t", tag="tag", value="v",
                                    method=method)
                out.write.format("noop").mode("overwrite").save()

            job()  # warm-up: worker start, kernel compile or cache load
            best = float("inf")
            for _ in range(args.repeat):
                start = time.perf_counter()
                job()
                best = min(best, time.perf_counter() - start)
            rows.append((method, best))
    print(f"monitor_frame, query {QUERY!r}, {args.events:,} events, {args.keys:,} keys, "
          f"Spark {spark.version} local[*] on {cores} cores; best of {args.repeat}")
    print()
    print("| method | seconds | rows/s | rows/s per core |")
    print("|---|---:|---:|---:|")
    for method, seconds in rows:
        rate = args.events / seconds
        print(f"| {method} | {seconds:.2f} | {rate:,.0f} | {rate / cores:,.0f} |")


if __name__ == "__main__":
    main()

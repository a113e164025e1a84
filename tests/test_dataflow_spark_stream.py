"""Seed 000's operators on Spark Structured Streaming (issue 27): the in-process tuples.

A stream's micro-batches (one Parquet file each, out of order within and across them)
run through Spark; the reference is the in-process flow over the arrival sequence Spark
makes of them: each batch's rows, then the watermark after it (the greatest time so far
less the delay; none while it is 0 ms). Late rows, sliding windows, lateness, both
refinements, a chain of stateful operators, joins (of a stream with itself) and A∞ are in
it, all in one query;
the query is stopped after half of the batches and restarted from its checkpoint.
"""

from __future__ import annotations

import dataclasses
import os
import sys

import numpy as np
import pandas as pd
import pytest

from qre.runtime.dataflow import Flow

pytest.importorskip("pyspark")
from pyspark import cloudpickle

# The plans' functions travel to Spark's workers by value (this module is not on their path).
cloudpickle.register_pickle_by_value(sys.modules[__name__])

DELAY = 3
BATCHES = 4


def batches(seed: int, n: int = 10) -> list[pd.DataFrame]:
    """Micro-batches of rows whose times drift forward, some late for the watermark."""
    rng = np.random.default_rng(seed)
    out = []
    for b in range(BATCHES):
        base = 4 + 6 * b  # from before the epoch: Spark's watermark starts at 0 ms
        out.append(pd.DataFrame({"time": base + rng.integers(-8, 6, n),
                                 "user": rng.choice(["a", "b", "c"], n),
                                 "amount": rng.integers(0, 9, n)}))
    return out


def arrival(parts: list[pd.DataFrame], delay: int) -> tuple[list, int]:
    """Spark's arrival sequence of ``parts``: rows in time order, then the watermark."""
    items, top, last = [], None, None
    for part in parts:
        part = part.sort_values("time", kind="stable")
        items.extend(("t", (int(r[0]), *r[1:])) for r in part.itertuples(index=False, name=None))
        top = max(top or -np.inf, int(part["time"].max()))
        w = top - delay
        if w > 0 and (last is None or w > last):
            items.append(("w", w))
            last = w
    return items, last


def reference(parts: list[pd.DataFrame], plan, delay: int = DELAY) -> pd.DataFrame:
    """The in-process flow of ``plan`` over Spark's arrival sequence of ``parts``."""
    flow = Flow()
    source = flow.source(pd.concat(parts, ignore_index=True))
    items, last = arrival(parts, delay)
    source = dataclasses.replace(source, options={"items": items, "last": last}, lateness=0)
    return plan(source).collect(until=last)


def streamed(spark, tmp_path, plans: dict, parts: list[pd.DataFrame],
             delay: int = DELAY) -> pd.DataFrame:
    """The ``plans`` over one stream of ``parts`` (a file each), as one query stopped
    halfway and restarted from its checkpoint: rows tagged with their plan's name."""
    from pyspark.sql import functions as F

    source = tmp_path / "in"
    source.mkdir()

    def write(indices: range) -> None:
        for i in indices:
            path = source / f"part-{i}.parquet"
            parts[i].to_parquet(path)
            os.utime(path, (1_700_000_000 + i, 1_700_000_000 + i))

    def run() -> None:
        df = (spark.readStream.schema("time long, user string, amount long")
              .option("maxFilesPerTrigger", 1).parquet(str(source)))
        source_stream = Flow().source(df, delay=delay)
        outs = [plan(source_stream).to_spark(SCHEMA).withColumn("plan", F.lit(name))
                for name, plan in plans.items()]
        out = outs[0]
        for other in outs[1:]:
            out = out.unionByName(other)
        (out.writeStream.format("parquet").option("path", str(tmp_path / "out"))
         .option("checkpointLocation", str(tmp_path / "ckpt"))
         .trigger(availableNow=True).start().awaitTermination())

    # One state partition: Spark starts a Python worker per partition, micro-batch and
    # stateful operator (13 here); grouping by key is Spark's, the same for any number.
    partitions = spark.conf.get("spark.sql.shuffle.partitions")
    spark.conf.set("spark.sql.shuffle.partitions", "1")
    try:
        write(range(BATCHES // 2))
        run()
        write(range(BATCHES // 2, BATCHES))
        run()
    finally:
        spark.conf.set("spark.sql.shuffle.partitions", partitions)
    return spark.read.parquet(str(tmp_path / "out")).toPandas()


def rows(frame: pd.DataFrame) -> list:
    return sorted(map(tuple, frame.astype(str).to_numpy().tolist()))


def total(g) -> tuple:
    return (g.key, sum(t[2] for t in g.tuples))


def pair_row(t: tuple) -> list:
    """A join's output (τ, t1, t2) as one row of the plans' schema."""
    return [(t[1][1], t[1][2] * 10 + t[2][2])]


SCHEMA = "user string, amount long"
PLANS = {
    "sliding A, lateness 4":
        lambda s: s.aggregate(total, size=6, advance=3, key="user", lateness=4),
    "A⁺ discarding":
        lambda s: s.aggregate(lambda g: [(g.key, t[2]) for t in g.tuples if t[2] > 3],
                              size=5, key="user", lateness=6, plus=True,
                              refinement="discarding"),
    "A⁺ Filter, A⁺ Map, then A":
        lambda s: s.filter(lambda t: t[2] % 4 != 0, via="aggregate_plus")
        .map(lambda t: [(t[1], t[2] * j) for j in range(1, t[2] % 3 + 1)],
             via="aggregate_plus")
        .aggregate(total, size=4, key="user", lateness=2),
    "dedicated Map, A, dedicated Filter":
        lambda s: s.map(lambda t: [(t[1], t[2] + 1)])
        .aggregate(total, size=3, key="user").filter(lambda t: t[2] > 4),
    "self-join, lateness 3":
        lambda s: s.join(s, size=4, key="user", on=lambda a, b: a[2] < b[2], lateness=3)
        .map(pair_row, columns=["user", "amount"]),
    "self-join through A⁺":
        lambda s: s.join(s, size=4, key="user", on=lambda a, b: a[2] < b[2],
                         via="aggregate_plus").map(pair_row, columns=["user", "amount"]),
    "A∞":
        lambda s: s.unbounded(lambda t: t[2], lambda x, t: x + t[2], lambda x, y: x + y,
                              lambda x: (x,), period=4, key="user", columns=["amount"]),
}


def test_a_restarted_stream_gives_the_in_process_tuples(spark, tmp_path):
    parts = batches(5)
    got = streamed(spark, tmp_path, PLANS, parts)
    for name, plan in PLANS.items():
        want = reference(parts, plan).rename(columns={"key": "user"})
        assert len(want) > 0, name
        assert rows(got[got["plan"] == name].drop(columns="plan")) == rows(want), name

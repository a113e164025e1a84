"""Seed 000's operators on Spark batch (issue 27): the same tuples as in-process, three ways.

A Spark DataFrame at rest is complete input: every window closes once, on time. The
in-process flow over the same rows with a watermark delay past their span (no late row)
is the reference; each way through Spark (dedicated: Spark's own map, filter and
equi-join; through A with the driver running X's loop; through A⁺) gives its tuples.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from qre.runtime.dataflow import Flow

pytest.importorskip("pyspark")

VIAS = ["dedicated", "aggregate", "aggregate_plus"]


def events(seed: int, n: int = 40) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame({"time": rng.integers(0, 30, n), "user": rng.choice(["a", "b"], n),
                         "amount": rng.integers(0, 9, n)})


def pipeline(flow: Flow, source, via: str) -> dict:
    s = flow.source(source, delay=100)
    kept = s.filter(lambda t: t[2] % 3 != 0, via=via)
    parts = kept.map(lambda t: [(t[1], t[2] * 10 + j) for j in range(t[2] % 3)], via=via)
    sums = parts.aggregate(lambda g: (g.key, sum(t[2] for t in g.tuples)), size=4, advance=2,
                           key="user")
    pairs = s.join(s, size=3, key="user", on=lambda a, b: a[2] < b[2], via=via)
    return {"kept": kept, "parts": parts, "sums": sums, "pairs": pairs}


SCHEMAS = {"kept": "user string, amount long", "parts": "user string, amount long",
           "sums": "user string, amount long",
           "pairs": "left_time long, user_left string, amount_left long, right_time long, "
                    "user_right string, amount_right long"}


def rows(frame: pd.DataFrame) -> list:
    """The rows as text, in order; datetimes as UTC without a zone (Spark's toPandas
    gives the session's zone, UTC, without one)."""
    frame = frame.apply(lambda c: c.dt.tz_convert(None)
                        if isinstance(c.dtype, pd.DatetimeTZDtype) else c)
    return sorted(map(tuple, frame.astype(str).to_numpy().tolist()))


@pytest.mark.parametrize("via", VIAS)
def test_spark_batch_gives_the_in_process_tuples(spark, via):
    frame = events(7)
    want = {name: rows(s.collect()) for name, s in pipeline(Flow(), frame, via).items()}
    got = pipeline(Flow(), spark.createDataFrame(frame), via)
    for name, stream in got.items():
        assert rows(stream.to_spark(SCHEMAS[name]).toPandas()) == want[name], name


def test_spark_unbounded_and_times_in_the_source_type(spark):
    frame = events(3).assign(time=lambda f: pd.to_datetime(f.time, unit="s", utc=True))
    fold = (lambda t: t[2], lambda s, t: s + t[2], lambda a, b: a + b, lambda s: (s,))
    local = Flow().source(frame, delay="1min").unbounded(*fold, period="10s", key="user",
                                                          columns=["total"])
    remote = Flow().source(spark.createDataFrame(frame)).unbounded(
        *fold, period="10s", key="user", columns=["total"])
    got = remote.to_spark("key string, total long").toPandas()
    assert rows(got) == rows(local.collect())
    assert str(got["time"].dtype).startswith("datetime64")
    for via in ("aggregate", "aggregate_plus"):  # Listing 6's loop, a Spark job per period
        looped = Flow().source(spark.createDataFrame(frame)).unbounded(
            *fold, period="10s", key="user", columns=["total"], via=via)
        assert rows(looped.to_spark("key string, total long").toPandas()) == rows(
            local.collect()), via
    with pytest.raises(ValueError, match="to_spark"):
        remote.collect()
    # A streaming source's plan is refused at once when Spark cannot run it.
    rate = spark.readStream.format("rate").load()
    with pytest.raises(ValueError, match="every= is for pandas sources"):
        Flow().source(rate, time="timestamp", every=2)
    ticks = Flow().source(rate, time="timestamp")
    with pytest.raises(ValueError, match="no cycles"):
        ticks.map(lambda t: [t[1:]], via="aggregate").to_spark("value long")
    with pytest.raises(ValueError, match="until= is for DataFrames at rest"):
        ticks.to_spark("value long", until="1s")
    at_rest = ticks.flow.source(spark.createDataFrame(frame))
    with pytest.raises(ValueError, match="all streaming DataFrames or none"):
        ticks.join(at_rest, size="1s").to_spark("a long")

"""One tied input through all six entry points (issue 18, point 5; qre.runtime.order's rule).

The same rows, in an order that is not the processing order, run through
Monitor.run (times=), Monitor.run_timed, ``qre run --time``, monitor_frame,
monitor_timed and monitor_stream. The query spells the values in the order it
reads them, so any difference in the order of tied events shows; the outputs
join back to their input rows by an ``id`` column that every entry point keeps.
Expected, by qre.runtime.order's rule (per key: time, tag text, value, then position):
key 1 reads b9 (t=4), then at t=5 a2, a3, b1; key 2 reads a4, a5.
"""

from __future__ import annotations

import io
import os
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from qre import qre
from qre.cli import main

DIGITS = "alphabet a, b; iter(atom(_, cur), 0, (x, y) -> 10 * x + y)"
EVENTS = pd.DataFrame({"id": [0, 1, 2, 3, 4, 5], "k": [1, 1, 1, 1, 2, 2],
                       "t": [5, 5, 5, 4, 7, 7], "tag": ["b", "a", "a", "b", "a", "a"],
                       "v": [1.0, 3.0, 2.0, 9.0, 5.0, 4.0]})
WANT = {3: 9.0, 2: 92.0, 1: 923.0, 0: 9231.0, 5: 4.0, 4: 45.0}


def _by_id(ids, values) -> dict[int, float]:  # type: ignore[no-untyped-def]
    return {int(i): float(v) for i, v in zip(ids, values, strict=True)}


def test_run_and_run_keys():
    m = qre(DIGITS)
    out = m.run_keys(EVENTS["k"], EVENTS["tag"], EVENTS["v"], times=EVENTS["t"])
    assert _by_id(EVENTS["id"], out.value) == WANT
    one = EVENTS[EVENTS["k"] == 1]
    out = m.run(one["tag"], one["v"], times=one["t"])
    assert _by_id(one["id"], out.value) == {i: WANT[i] for i in one["id"]}


def test_run_timed():
    rows = qre(DIGITS).run_timed(EVENTS["t"], EVENTS["tag"], EVENTS["v"], keys=EVENTS["k"])
    assert _by_id(EVENTS["id"].to_numpy()[rows["row"]], rows["value"]) == WANT


def test_the_command_line(tmp_path, capsys):
    path = tmp_path / "events.csv"
    EVENTS.to_csv(path, index=False)
    assert main(["run", DIGITS, "--input", str(path), "--key", "k", "--time", "t",
                 "--value", "v"]) == 0
    rows = pd.read_csv(io.StringIO(capsys.readouterr().out))
    assert _by_id(rows["id"], rows["value"]) == WANT


@pytest.fixture
def events_df(spark):  # type: ignore[no-untyped-def]
    # Shuffled across partitions: Spark's row order is not the input's.
    return spark.createDataFrame(EVENTS).repartition(3)


def test_monitor_frame(events_df):  # type: ignore[no-untyped-def]
    from spark_udf import monitor_frame

    for method in ("sorted", "grouped"):
        rows = monitor_frame(events_df, qre(DIGITS), "k", "t", "tag", "v",
                             method=method).toPandas()
        assert _by_id(rows["id"], rows["value"]) == WANT


def test_monitor_timed(events_df):  # type: ignore[no-untyped-def]
    from spark_udf import monitor_timed

    rows = monitor_timed(events_df, qre(DIGITS), "k", "t", "tag", "v").toPandas()
    assert _by_id(rows["id"], rows["value"]) == WANT


def test_monitor_stream(spark, tmp_path: Path):  # type: ignore[no-untyped-def]
    """With a watermark the events wait in the state store (their id with them) until a
    later event of another key moves the watermark past them."""
    from spark_udf import monitor_stream

    source = tmp_path / "in"
    source.mkdir()
    sentinel = pd.DataFrame({"id": [99], "k": [99], "t": [10**6], "tag": ["a"], "v": [0.0]})
    for i, batch in enumerate([EVENTS.iloc[::-1], sentinel]):
        path = source / f"batch-{i}.parquet"
        batch.to_parquet(path)
        os.utime(path, (1_700_000_000 + i, 1_700_000_000 + i))
    df = (spark.readStream.schema("id long, k long, t long, tag string, v double")
          .option("maxFilesPerTrigger", 1).parquet(str(source)))
    query = monitor_stream(df, qre(DIGITS), "k", "t", "tag", "v", watermark="0 seconds",
                           checkpoint=str(tmp_path / "ckpt"), output=str(tmp_path / "out"),
                           trigger={"availableNow": True})
    query.awaitTermination()
    rows = spark.read.parquet(str(tmp_path / "out")).toPandas()
    rows = rows[rows["k"] != 99]
    assert not rows["late"].any()
    assert _by_id(rows["id"], rows["value"]) == WANT
    assert np.array_equal(rows.sort_values("id")["v"], EVENTS["v"])

"""Key identity on Spark (issue 19, points 1, 2 and 9): every entry point, one rule.

The same keyed input — long keys beyond 2**53 with nulls, double keys with NaN, ±0.0
and nulls, string keys with nulls — through both ``monitor_frame`` methods,
``monitor_timed`` and a stream, against tests/key_oracle.py (a token per key by
qre.runtime.keys' rule, each token's rows in time order through ``Monitor.run``),
the oracle of the Python entry points too (tests/test_keys.py). Rows are collected as
Spark Rows (Python ints, floats and None: no pandas conversion in between) and joined
back by an ``id`` column; an output's key must be its input's, exactly (a NaN stays a
NaN, a null a null, 2**53 + 1 itself).
"""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from key_oracle import BIG, DIGITS, KEY_CLASSES, keyed_rows, oracle, token

from qre import qre

pyspark = pytest.importorskip("pyspark")
pytestmark = pytest.mark.fuzz  # nulls, NaN and huge keys on every Spark path

from spark_udf import monitor_frame, monitor_stream, monitor_timed  # noqa: E402
from spark_udf.batch import METHODS  # noqa: E402

SPARK_TYPES = {"long": "long", "double": "double", "string": "string"}
FEW = settings(max_examples=3, suppress_health_check=[HealthCheck.function_scoped_fixture])


def frame(spark, kind: str, keys: list[Any], times: list[int], tags: list[str],  # type: ignore[no-untyped-def]
          values: list[float]) -> Any:
    """A Spark DataFrame of the rows (from Python values: None is null, NaN is NaN),
    spread over partitions."""
    rows = list(zip(range(len(keys)), keys, times, tags, values, strict=True))
    schema = f"id long, k {SPARK_TYPES[kind]}, t long, tag string, v double"
    return spark.createDataFrame(rows, schema).repartition(3)


def same_cell(got: Any, want: Any) -> bool:
    """Equal as stored: a NaN is a NaN (not a null), ±0.0 by sign, ints exactly."""
    if isinstance(want, float) and isinstance(got, float):
        return (math.isnan(got) and math.isnan(want)) or (
            got == want and math.copysign(1, got) == math.copysign(1, want))
    return type(got) is type(want) and got == want if want is not None else got is None


def check(rows: list[Any], keys: list[Any], want_value: list[float], *,
          own_key: bool) -> None:
    """Each output row by ``id``: the oracle's value, and its key (``own_key``: the
    row's own cell; else one of its stream, e.g. 0.0 for a stream of -0.0 and 0.0)."""
    assert sorted(r.id for r in rows) == list(range(len(keys)))
    for r in rows:
        np.testing.assert_array_equal(r.value, want_value[r.id], err_msg=f"id {r.id}")
        if own_key:
            assert same_cell(r.k, keys[r.id]), (r, keys[r.id])
        else:
            assert token(r.k) == token(keys[r.id]) and (r.k is None) == (keys[r.id] is None)


@pytest.mark.parametrize("kind", sorted(KEY_CLASSES))
@FEW
@given(data=st.data())
def test_monitor_frame_and_monitor_timed_keep_keys_apart(spark, kind, data) -> None:  # type: ignore[no-untyped-def]
    _, keys, times, tags, values = data.draw(keyed_rows(kind))
    _, want_value = oracle(keys, times, tags, values)
    df = frame(spark, kind, keys, times, tags, values)
    for method in METHODS:
        rows = monitor_frame(df, DIGITS, "k", "t", "tag", "v", method=method).collect()
        check(rows, keys, want_value, own_key=True)
    rows = monitor_timed(df, DIGITS, "k", "t", "tag", "v").collect()
    check(rows, keys, want_value, own_key=False)


def test_the_issue_examples(spark) -> None:  # type: ignore[no-untyped-def]
    """Long keys 2**53 and 2**53 + 1 with a null in the partition (the second got 11.0),
    NaN and null keys (one stream, out of time order: 1, 7, 5), and monitor_timed's null
    keys (an Arrow error) for long and string keys, with a window's tick rows."""
    cases = [("long", [BIG, BIG + 1, None], [1.0, 10.0, 5.0]),
             ("double", [math.nan, None, math.nan], [1.0, 5.0, 7.0])]
    for kind, keys, values in cases:
        df = frame(spark, kind, keys, [1, 2, 3], ["a"] * 3, values).coalesce(1)
        for method in METHODS:
            rows = sorted(monitor_frame(df, DIGITS, "k", "t", "tag", "v",
                                        method=method).collect(), key=lambda r: r.id)
            assert [r.value for r in rows] == ([1.0, 10.0, 5.0] if kind == "long"
                                               else [1.0, 5.0, 17.0]), (kind, method)
            assert all(same_cell(r.k, k) for r, k in zip(rows, keys, strict=True))
    windows = qre("alphabet a, b; aggregate(sum(cur), 2s)")
    for kind, keys in (("long", [None, 3, None]), ("string", [None, "x", None])):
        df = frame(spark, kind, keys, [1, 2, 5], ["a"] * 3, [1.0, 2.0, 4.0])
        got = sorted((r.k is None, r.t, r.value) for r in
                     monitor_timed(df, windows, "k", "t", "tag", "v").collect())
        want = windows.run_timed([1, 2, 5], ["a"] * 3, [1.0, 2.0, 4.0], keys=keys)
        assert got == sorted(zip(want["key"].isna(), want["time"], want["value"],
                                 strict=True))


def write(directory: Path, kind: str, batches: list[list[tuple[Any, ...]]]) -> None:
    """One Parquet file per micro-batch (id, k, t, tag, v), Arrow-typed: nulls and NaN
    as given."""
    directory.mkdir(parents=True)
    for i, batch in enumerate(batches):
        ids, keys, times, tags, values = zip(*batch, strict=True)
        table = pa.table({"id": pa.array(ids, pa.int64()),
                          "k": pa.array(keys, KEY_CLASSES[kind][0], from_pandas=False),
                          "t": pa.array(times, pa.int64()), "tag": list(tags),
                          "v": pa.array(values, pa.float64())})
        pq.write_table(table, directory / f"batch-{i}.parquet")
        os.utime(directory / f"batch-{i}.parquet", (1_700_000_000 + i, 1_700_000_000 + i))


@pytest.mark.parametrize("kind, keys", [
    ("long", [BIG, BIG + 1, None, 2**63 - 1, BIG, BIG + 1, None, 2**63 - 1]),
    ("double", [math.nan, None, -0.0, 1.0, math.nan, None, 0.0, 1.0]),
])
def test_a_stream_keeps_keys_apart(spark, tmp_path, kind, keys) -> None:  # type: ignore[no-untyped-def]
    """Two micro-batches, times increasing (no late event): each key's state must carry
    from the first batch to the second under its own key. Spark hands the processor its
    key through pandas, which made 2**53 + 1 of a long column with a null into 2**53
    (their states merged) and a double's null into NaN."""
    n = len(keys)
    times, tags, values = list(range(1, n + 1)), ["a"] * n, [float(i % 9 + 1) for i in range(n)]
    rows = list(zip(range(n), keys, times, tags, values, strict=True))
    write(tmp_path / "in", kind, [rows[:n // 2], rows[n // 2:]])
    schema = f"id long, k {SPARK_TYPES[kind]}, t long, tag string, v double"
    df = spark.readStream.schema(schema).option("maxFilesPerTrigger", 1).parquet(
        str(tmp_path / "in"))
    query = monitor_stream(df, DIGITS, "k", "t", "tag", "v", checkpoint=str(tmp_path / "c"),
                           output=str(tmp_path / "out"), trigger={"availableNow": True})
    query.awaitTermination()
    got = spark.read.parquet(str(tmp_path / "out")).collect()
    assert not any(r.late for r in got)
    _, want_value = oracle(keys, times, tags, values)
    check(got, keys, want_value, own_key=False)

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
import math
import os
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from qre import qre
from qre.cli import main
from qre.runtime.order import processing_order

DIGITS = "alphabet a, b; iter(atom(_, cur), 0, (x, y) -> 10 * x + y)"
EVENTS = pd.DataFrame({"id": [0, 1, 2, 3, 4, 5], "k": [1, 1, 1, 1, 2, 2],
                       "t": [5, 5, 5, 4, 7, 7], "tag": ["b", "a", "a", "b", "a", "a"],
                       "v": [1.0, 3.0, 2.0, 9.0, 5.0, 4.0]})
WANT = {3: 9.0, 2: 92.0, 1: 923.0, 0: 9231.0, 5: 4.0, 4: 45.0}

# Signed zeros (issue 19, point 7): equal as numbers, told apart by 1 / cur, so ordered
# -0.0 first; the digits spell the signs in the order the query reads them.
SIGNS = "alphabet a, b; iter(atom(_, 1 / cur > 0), 0, (x, y) -> 10 * x + y)"
ZEROS = pd.DataFrame({"id": [0, 1, 2, 3, 4, 5], "k": [1, 1, 1, 1, 2, 2],
                      "t": [5, 5, 5, 4, 7, 7], "tag": ["a"] * 6,
                      "v": [0.0, -0.0, 2.0, 1.0, 0.0, -0.0]})
WANT_ZEROS = {3: 1.0, 1: 10.0, 0: 101.0, 2: 1011.0, 5: 0.0, 4: 1.0}

CASES = {"digits": (DIGITS, EVENTS, WANT), "signed zeros": (SIGNS, ZEROS, WANT_ZEROS)}


def _by_id(ids, values) -> dict[int, float]:  # type: ignore[no-untyped-def]
    return {int(i): float(v) for i, v in zip(ids, values, strict=True)}


@pytest.fixture(params=list(CASES))
def case(request):  # type: ignore[no-untyped-def]
    return CASES[request.param]


def test_run_and_run_keys(case):  # type: ignore[no-untyped-def]
    query, events, want = case
    m = qre(query)
    out = m.run_keys(events["k"], events["tag"], events["v"], times=events["t"])
    assert _by_id(events["id"], out.value) == want
    one = events[events["k"] == 1]
    out = m.run(one["tag"], one["v"], times=one["t"])
    assert _by_id(one["id"], out.value) == {i: want[i] for i in one["id"]}


def test_run_timed(case):  # type: ignore[no-untyped-def]
    query, events, want = case
    rows = qre(query).run_timed(events["t"], events["tag"], events["v"], keys=events["k"])
    assert _by_id(events["id"].to_numpy()[rows["row"]], rows["value"]) == want


def test_the_command_line(case, tmp_path, capsys):  # type: ignore[no-untyped-def]
    query, events, want = case
    path = tmp_path / "events.csv"
    events.to_csv(path, index=False)
    assert main(["run", query, "--input", str(path), "--key", "k", "--time", "t",
                 "--value", "v"]) == 0
    rows = pd.read_csv(io.StringIO(capsys.readouterr().out))
    assert _by_id(rows["id"], rows["value"]) == want


@pytest.fixture
def events_df(spark, case):  # type: ignore[no-untyped-def]
    # Shuffled across partitions: Spark's row order is not the input's.
    return spark.createDataFrame(case[1]).repartition(3)


def test_monitor_frame(case, events_df):  # type: ignore[no-untyped-def]
    from spark_udf import monitor_frame

    query, _, want = case
    for method in ("sorted", "grouped"):
        rows = monitor_frame(events_df, qre(query), "k", "t", "tag", "v",
                             method=method).toPandas()
        assert _by_id(rows["id"], rows["value"]) == want


def test_monitor_timed(case, events_df):  # type: ignore[no-untyped-def]
    from spark_udf import monitor_timed

    query, _, want = case
    rows = monitor_timed(events_df, qre(query), "k", "t", "tag", "v").toPandas()
    assert _by_id(rows["id"], rows["value"]) == want


def test_monitor_stream(case, spark, tmp_path: Path):  # type: ignore[no-untyped-def]
    """With a watermark the events wait in the state store (their id with them) until a
    later event of another key moves the watermark past them."""
    from spark_udf import monitor_stream

    query, events, want = case
    source = tmp_path / "in"
    source.mkdir()
    sentinel = pd.DataFrame({"id": [99], "k": [99], "t": [10**6], "tag": ["a"], "v": [1.0]})
    for i, batch in enumerate([events.iloc[::-1], sentinel]):
        path = source / f"batch-{i}.parquet"
        batch.to_parquet(path)
        os.utime(path, (1_700_000_000 + i, 1_700_000_000 + i))
    df = (spark.readStream.schema("id long, k long, t long, tag string, v double")
          .option("maxFilesPerTrigger", 1).parquet(str(source)))
    out = monitor_stream(df, qre(query), "k", "t", "tag", "v", watermark="0 seconds",
                         checkpoint=str(tmp_path / "ckpt"), output=str(tmp_path / "out"),
                         trigger={"availableNow": True})
    out.awaitTermination()
    rows = spark.read.parquet(str(tmp_path / "out")).toPandas()
    rows = rows[rows["k"] != 99]
    assert not rows["late"].any()
    assert _by_id(rows["id"], rows["value"]) == want
    assert np.array_equal(rows.sort_values("id")["v"], events["v"])


def test_a_stream_releasing_zeros_one_by_one_keeps_the_order(spark, tmp_path: Path):
    """Without a watermark each event is processed on arrival, and one that sorts before the
    last processed one is late (spark_udf.keyed): -0.0 after 0.0 at the same time is late."""
    from spark_udf import monitor_stream

    source = tmp_path / "in"
    source.mkdir()
    for i, v in enumerate([0.0, -0.0]):
        path = source / f"batch-{i}.parquet"
        pd.DataFrame({"id": [i], "k": [1], "t": [5], "tag": ["a"], "v": [v]}).to_parquet(path)
        os.utime(path, (1_700_000_000 + i, 1_700_000_000 + i))
    df = (spark.readStream.schema("id long, k long, t long, tag string, v double")
          .option("maxFilesPerTrigger", 1).parquet(str(source)))
    out = monitor_stream(df, qre(SIGNS), "k", "t", "tag", "v",
                         checkpoint=str(tmp_path / "ckpt"), output=str(tmp_path / "out"),
                         trigger={"availableNow": True})
    out.awaitTermination()
    rows = spark.read.parquet(str(tmp_path / "out")).toPandas().sort_values("id")
    assert rows["late"].tolist() == [False, True]


# --------------------------------------------------------------------------- any input order

def _content(row: tuple[int, str, float]) -> tuple[int, str, str]:
    """What the query can tell of an event: NaNs alike, -0.0 apart from 0.0."""
    t, tag, v = row
    return t, tag, "nan" if math.isnan(v) else repr(v)


@settings(max_examples=60)
@given(st.lists(st.tuples(st.integers(0, 1), st.sampled_from("ab"),
                          st.sampled_from([0.0, -0.0, 1.0, math.nan, -math.nan])),
                max_size=8, unique_by=_content), st.randoms(use_true_random=False))
def test_outputs_do_not_depend_on_the_order_of_the_input_rows(rows, random):
    """Distinct events (in what the query can tell apart): every row's output is the same
    whatever the order of the input rows, for run_keys and run_timed (dedup or not)."""
    m = qre(SIGNS)
    perm = list(range(len(rows)))
    random.shuffle(perm)
    shuffled = [rows[k] for k in perm]

    def outputs(events: list[tuple[int, str, float]]) -> dict[str, list[float]]:
        t, tags, v = ([e[i] for e in events] for i in range(3))
        run = m.run(tags, v, times=t).value.tolist()
        timed = {}
        for dedup in (False, True):
            emitted = m.run_timed(t, tags, v, dedup=dedup)
            timed[dedup] = dict(zip(emitted["row"], emitted["value"], strict=True))
        return {"run": run, "timed": [timed[False].get(k) for k in range(len(events))],
                "dedup": [timed[True].get(k) for k in range(len(events))]}

    want, got = outputs(rows), outputs(shuffled)
    for name in want:
        assert [got[name][perm.index(k)] for k in range(len(rows))] == want[name], name


def test_dedup_keeps_the_zeros_a_query_tells_apart():
    m = qre(SIGNS)
    rows = m.run_timed([1] * 5, ["a"] * 5, [0.0, -0.0, 0.0, math.nan, -math.nan], dedup=True)
    assert rows["row"].tolist() == [1, 0, 3]  # -0.0, one 0.0, one NaN
    assert rows["value"].tolist() == [0.0, 1.0, 10.0]


@pytest.mark.parametrize("keys", [None, ["k", "k"]])
def test_a_tiebreak_without_times_is_refused(keys):
    """Tie-breakers order events with equal times: without times there is nothing to order."""
    with pytest.raises(ValueError, match="tiebreak orders events with equal times"):
        qre(SIGNS).run_keys(keys, ["a", "a"], [1.0, 2.0], tiebreak=[1, 2])


@pytest.mark.parametrize("values", [np.array([1.0, 2.0]), pd.Series([1.0, 2.0]),
                                    np.array(["x", "y"], dtype=object)])
def test_processing_order_refuses_a_value_column_of_another_length(values):
    """Float value columns are ordered only where times tie (lazily), others up front: a
    column of the wrong length is refused either way, before any sorting."""
    with pytest.raises(ValueError, match="a tiebreak or value column has 2 entries but there "
                                         "are 3 events"):
        processing_order(np.zeros(3, dtype=np.int64), np.array([1, 1, 2]), ["a"] * 3,
                         np.zeros(3, dtype=np.int64), ["a"], values)

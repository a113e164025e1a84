"""Timed monitors on Spark (issue 7, point 5): monitor_timed against the brute-force
windows and patterns and against run_timed; timestamp columns; refusals.

Spark's rows (``toPandas``) and the oracles' (each key's in time order) are compared
as traces of monitor_timed's output type (qre.runtime.stream_types: each key's rows
in order, keys independent), never sorted."""

from __future__ import annotations

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from qre import qre
from qre.language import ast
from qre.language.printer import to_text
from qre.runtime.stream_types import stream_type
from qre.testing import assert_equivalent_streams
from tests import match_oracle
from tests.test_patterns import patterns
from tests.test_windows import FUNCTION_TEXT, expected_windows, timed_events

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

OUTPUT = stream_type("monitor_timed", "k").output_dependence()
"""PartitionBy(k, Seq(row)): each key's rows in order, keys independent."""


def rows_of(want: list[tuple], columns: list[str]) -> pd.DataFrame:
    """An oracle's rows (tuples, each key's in time order) as a frame."""
    return pd.DataFrame(want, columns=columns)


@settings(max_examples=6)
@given(timed_events(max_events=30, keys=4), st.sampled_from(["avg", "max", "first", "var"]),
       st.integers(1, 4), st.integers(1, 3))
def test_windows_on_spark_equal_brute_force(spark, frame, name, slide, slots):
    from spark_udf import monitor_timed

    size = slide * slots
    m = qre(f"alphabet a, b; aggregate({FUNCTION_TEXT[name]}, {size}s, {slide}s)")
    df = spark.createDataFrame(frame.astype({"k": str}), "k string, t long, tag string, x double")
    got = monitor_timed(df, m, "k", "t", "tag", ["x"], engine="table").toPandas()
    want = expected_windows(frame.astype({"k": str}), size, slide, name, ("a", "b"))
    assert_equivalent_streams(got, rows_of(want, ["k", "t", "value", "start"]), OUTPUT,
                              equal=["k", "t", "value"], names=("spark", "brute force"))
    assert (got["tag"] == "tick").all() and (got["status"] == 1).all()


@settings(max_examples=4)
@given(patterns(max_leaves=3), st.lists(st.tuples(st.integers(0, 2), st.integers(0, 9),
                                                  st.sampled_from("abc")), max_size=20))
def test_patterns_on_spark_equal_enumeration(spark, p, rows):
    from spark_udf import monitor_timed

    m = qre("alphabet a, b, c;\n" + to_text(ast.Matches(p, True)))
    frame = pd.DataFrame(rows, columns=["k", "t", "tag"]).astype({"k": str})
    got = monitor_timed(spark.createDataFrame(frame, "k string, t long, tag string"), m,
                        "k", "t", "tag", engine="table").toPandas()
    for key, part in frame.groupby("k"):
        order = sorted(range(len(part)), key=lambda i: (part["t"].iloc[i], part["tag"].iloc[i]))
        tags = [part["tag"].iloc[i] for i in order]
        times = [int(part["t"].iloc[i]) for i in order]
        mine = got[got["k"] == key]
        assert mine["t"].tolist() == times and mine["tag"].tolist() == tags
        assert mine["value"].tolist() == match_oracle.ending_counts(p, tags, times)


def test_bounded_past_operators_on_spark_equal_run_timed(spark):
    """Issue 21 §2: a past operator bounded by event time reads the time column on Spark
    as run_timed does (µs on Spark, whole seconds here: the same distances)."""
    from spark_udf import monitor_timed

    m = qre("alphabet a, b; is(b) since[0s, 3s] is(a) || "
            "once[2s, 5s](fill_with(last(cur.x), const(0)) > 1)")
    frame = pd.DataFrame({"k": ["u", "u", "u", "u", "v", "u", "v"],
                          "t": [0, 1, 3, 6, 2, 7, 9],
                          "tag": ["a", "b", "b", "b", "a", "b", "b"],
                          "x": [0.0, 2.0, 0.0, 0.0, 0.0, 0.0, 3.0]})
    df = spark.createDataFrame(frame, "k string, t long, tag string, x double")
    got = monitor_timed(df, m, "k", "t", "tag", ["x"], engine="table").toPandas()
    want = m.run_timed(frame["t"], frame["tag"], {"x": frame["x"]}, keys=frame["k"]).rename(
        columns={"key": "k", "time": "t"})
    assert_equivalent_streams(got, want, OUTPUT, equal=["k", "t", "value"],
                              names=("spark", "run_timed"))
    expected = rows_of([("u", t, 1.0) for t in (0, 1, 3, 6)] + [("u", 7, 0.0), ("v", 2, 1.0),
                                                                ("v", 9, 0.0)],
                       ["k", "t", "value"])
    assert_equivalent_streams(want, expected, OUTPUT, equal=["k", "t", "value"],
                              names=("run_timed", "expected"))


def test_timestamps_and_derived_tags_on_spark(spark):
    from spark_udf import monitor_timed

    m = qre("alphabet r; tag hot = r where cur.temp > 30; aggregate(count(), 1min, [hot])")
    frame = pd.DataFrame({"k": ["x", "x", "x", "y"],
                          "ts": pd.to_datetime(["2026-11-25 10:00:01", "2026-11-25 10:00:30",
                                                "2026-11-25 10:01:02", "2026-11-25 10:00:00"]),
                          "tag": ["r"] * 4, "temp": [31.0, 40.0, 10.0, 35.0]})
    got = monitor_timed(spark.createDataFrame(frame), m, "k", "ts", "tag", ["temp"]).toPandas()
    want = m.run_timed(frame["ts"], frame["tag"], {"temp": frame["temp"]},
                       keys=frame["k"]).rename(columns={"key": "k", "time": "ts"})
    assert got["ts"].astype(str).tolist() == ["2026-11-25 10:00:59.999999"] * 2
    expected = rows_of([("x", 2.0), ("y", 1.0)], ["k", "value"])
    for side, name in ((got, "spark"), (want, "run_timed")):
        assert_equivalent_streams(side, expected, OUTPUT, equal=["k", "value"],
                                  names=(name, "expected"))


def test_session_windows_on_spark_equal_brute_force(spark):
    """Issue 21 §3: one row per session at its close, with its start, per key."""
    from spark_udf import monitor_timed
    from tests.test_sessions import expected_sessions

    frame = pd.DataFrame({"k": ["u", "u", "v", "u", "v", "u", "u"],
                          "t": [0, 4, 5, 9, 20, 30, 32],
                          "tag": ["a", "b", "a", "a", "a", "b", "a"],
                          "x": [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0]})
    m = qre("alphabet a, b; aggregate(sum(cur.x), session(6s), [a])")
    df = spark.createDataFrame(frame, "k string, t long, tag string, x double")
    got = monitor_timed(df, m, "k", "t", "tag", ["x"], engine="table").toPandas()
    want = expected_sessions(frame, 6, "sum", ("a",))
    columns = ["k", "t", "value", "start"]
    assert_equivalent_streams(got, rows_of(want, columns), OUTPUT, equal=columns,
                              names=("spark", "brute force"))
    assert want == [("u", 14, 5.0, 0), ("u", 37, 7.0, 30), ("v", 10, 3.0, 5),
                    ("v", 25, 5.0, 20)]


def test_monitor_frame_refuses_timed_monitors_and_reads_timestamps(spark):
    from spark_udf import monitor_frame, monitor_timed

    frame = pd.DataFrame({"k": ["x", "x"], "ts": pd.to_datetime(["2026-01-01", "2026-01-02"]),
                          "tag": ["a", "a"], "v": [1.0, 2.0]})
    df = spark.createDataFrame(frame)
    with pytest.raises(ValueError, match="monitor_timed"):
        monitor_frame(df, qre("alphabet a; aggregate(sum(cur), 1d)"), "k", "ts", "tag", "v")
    out = monitor_frame(df, qre("iter(atom(a, cur), 0, +)"), "k", "ts", "tag", "v").toPandas()
    assert out["value"].tolist() == [1.0, 3.0]
    derived = qre("alphabet a; tag big = cur.v > 1; iter(or(atom(a, 1), atom(big, 10)), 0, +)")
    out = monitor_frame(df, derived, "k", "ts", "tag", "v").toPandas()
    assert out["value"].tolist() == [1.0, 11.0]  # derived tags run on Spark too
    with pytest.raises(ValueError, match=r"reads cur\.temp"):
        monitor_timed(df, qre("alphabet a; tag hot = cur.temp > 1; aggregate(count(), 1d)"),
                      "k", "ts", "tag")


def test_timed_rows_keep_their_event_columns(spark):
    """An event's row shows its input columns as they were (the input's tag, not the
    derived one); a window's row (a tick) has none. Names may not collide."""
    from spark_udf import monitor_timed

    frame = pd.DataFrame({"id": [1, 2, 3], "k": ["x", "x", "x"], "t": [1, 2, 70],
                          "tag": ["r", "r", "r"], "temp": [35.0, 36.0, 10.0]})
    df = spark.createDataFrame(frame)
    hot = qre("alphabet r; tag hot = r where cur.temp > 30; matched(seq(hot, hot))")
    got = monitor_timed(df, hot, "k", "t", "tag", ["temp"]).toPandas()
    assert list(got.columns) == ["id", "k", "t", "tag", "temp", "status", "value"]
    assert got[["id", "t", "tag", "temp"]].values.tolist() == [[1, 1, "r", 35.0],
                                                                [2, 2, "r", 36.0],
                                                                [3, 70, "r", 10.0]]
    assert got["value"].tolist() == [0.0, 1.0, 0.0]
    window = qre("alphabet r; aggregate(max(cur.temp), 1min)")
    got = monitor_timed(df, window, "k", "t", "tag", ["temp"], keep=["id"]).toPandas()
    assert list(got.columns) == ["id", "k", "t", "tag", "start", "status", "value"]
    assert got["id"].isna().all() and (got["tag"] == "tick").all()
    assert got["start"].tolist() == [0, 60] and got["t"].tolist() == [59, 119]
    assert got["value"].tolist() == [36.0, 10.0]
    with pytest.raises(ValueError, match="'status' would overwrite"):
        monitor_timed(df.withColumnRenamed("id", "status"), window, "k", "t", "tag", ["temp"])
    with pytest.raises(ValueError, match="'start' would overwrite"):
        monitor_timed(df.withColumnRenamed("id", "start"), window, "k", "t", "tag", ["temp"])

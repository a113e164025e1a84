"""Sliding windows and stored window aggregates on Spark batches (issue 23 §4, in part).

``monitor_timed`` and ``monitor_frame(method="local")`` run each key's events in one
call, so the window store runs there as in :meth:`qre.Monitor.run_timed` and
:meth:`qre.Monitor.run_keys`: the oracle is the local run (itself checked against the
denotational interpreter in tests/test_window_signals.py), bit for bit, compared as
traces of the entry point's output type (qre.runtime.stream_types: each key's rows in
order, keys independent), never sorted. The ways that feed a key in pieces
(``method="sorted"`` or ``"grouped"``) refuse a windowed query before any job; a stream
keeps each key's window contents in its state store (a restarted one is still compared
as a multiset: see test_a_stream_restarted_keeps_its_windows).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from qre import qre
from qre.language import ast
from qre.runtime.stream_types import stream_type
from qre.testing import assert_equivalent_streams
from tests.keyed_oracle import sorted_events
from tests.test_window_signals import ALPHABET, windowed_queries

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

ROWS = st.lists(st.tuples(st.sampled_from("uvw"), st.integers(0, 20), st.sampled_from(ALPHABET),
                          st.sampled_from([0.0, 1.0, -2.5, 4.0, np.nan])), min_size=1,
                max_size=25)


def _frame(rows) -> pd.DataFrame:  # type: ignore[no-untyped-def]
    return pd.DataFrame(rows, columns=["k", "t", "tag", "x"])


OUTPUT = stream_type("monitor_timed", "k").output_dependence()
"""PartitionBy(k, Seq(row)): each key's rows in order, keys independent (the output
type of monitor_timed, monitor_frame and monitor_stream alike)."""


@settings(max_examples=5, deadline=None)
@given(st.data(), ROWS)
def test_monitor_timed_equals_run_timed(spark, data, rows):
    from spark_udf import monitor_timed

    query = data.draw(windowed_queries(timed=True))
    m = qre(ast.Program(ALPHABET, (), query))
    frame = _frame(rows)
    df = spark.createDataFrame(frame, "k string, t long, tag string, x double")
    got = monitor_timed(df, m, "k", "t", "tag", "x", engine="table").toPandas()
    want = m.run_timed(frame["t"], frame["tag"], frame["x"], keys=frame["k"], engine="table")
    want = want.assign(k=want["key"], t=want["time"], tag=want["tag"].astype(str),
                       x=frame["x"].to_numpy()[want["row"]])
    columns = ["k", "t", "tag", "x", "status", "value"]
    assert_equivalent_streams(got, want, OUTPUT, equal=columns, names=("spark", "run_timed"))


@settings(max_examples=5, deadline=None)
@given(st.data(), ROWS)
def test_monitor_frame_equals_run_keys(spark, data, rows):
    from spark_udf import monitor_frame

    query = data.draw(windowed_queries())
    m = qre(ast.Program(ALPHABET, (), query))
    frame = _frame(rows)
    df = spark.createDataFrame(frame, "k string, t long, tag string, x double")
    got = monitor_frame(df, m, "k", "t", "tag", "x", engine="table").toPandas()
    out = m.run_keys(frame["k"], frame["tag"], frame["x"], times=frame["t"], engine="table")
    # run_keys aligns its outputs with the input rows: put them in the order it read
    # them (each key's in time order, ties by tag, then value: NaN last).
    want = sorted_events(frame.assign(status=out.status, value=out.value), "k",
                         ["t", "tag", "x"], ["x"])
    assert_equivalent_streams(got, want, OUTPUT, equal=list(want.columns),
                              names=("spark", "run_keys"))


def test_a_stored_window_aggregate_on_spark(spark):
    from spark_udf import monitor_timed

    m = qre("alphabet a; aggregate(median(cur), 4s, 3s)")
    frame = pd.DataFrame({"k": ["u"] * 5 + ["v"] * 2, "t": [0, 1, 2, 5, 9, 3, 4],
                          "tag": ["a"] * 7, "x": [5.0, 1.0, 3.0, 7.0, 2.0, 8.0, 6.0]})
    df = spark.createDataFrame(frame, "k string, t long, tag string, x double")
    got = monitor_timed(df, m, "k", "t", "tag", "x").toPandas()
    # Windows [3l, 3l + 4), each stamped at its end − 1 s: u's [-3, 1) → median(5) at 0,
    # [0, 4) → median(5, 1, 3) = 3, [3, 7) → 7, [6, 10) → 2, [9, 13) → 2 (the end of the
    # input closes it); v's [0, 4) → 8 and [3, 7) → median(8, 6) = 7.
    want = pd.DataFrame([("u", 0, -3, 5.0), ("u", 3, 0, 3.0), ("u", 6, 3, 7.0),
                         ("u", 9, 6, 2.0), ("u", 12, 9, 2.0), ("v", 3, 0, 8.0),
                         ("v", 6, 3, 7.0)], columns=["k", "t", "start", "value"])
    assert_equivalent_streams(got, want, OUTPUT, equal=list(want.columns),
                              names=("spark", "expected"))


def test_runs_that_feed_a_key_in_pieces_refuse_windows(spark):
    from spark_udf import monitor_frame

    m = qre("alphabet a; avg_over(3, cur)")
    df = spark.createDataFrame(pd.DataFrame({"k": ["u"], "t": [0], "tag": ["a"], "x": [1.0]}))
    for method in ("sorted", "grouped"):
        with pytest.raises(ValueError, match=r"monitor_frame\(method='\w+'\): this query "
                                             r"has sliding windows"):
            monitor_frame(df, m, "k", "t", "tag", "x", method=method)


@pytest.mark.parametrize("text", ["avg_over(3s, cur.v) - median_over(2, cur.v)",
                                  "aggregate(median(cur.v), 4s, 3s)",
                                  "aggregate(spread(cur.v), 3, 2, [a])"])
def test_a_stream_restarted_keeps_its_windows(spark, tmp_path, text):
    """monitor_stream keeps each key's window contents in the state store: stopped after
    two micro-batches and restarted from its checkpoint, it writes the rows of the
    simulator (tests/test_stream_windows.py checks it against run_timed). A function
    given in Python travels to the workers with the plan."""
    from stream_simulator import simulate

    from qre.runtime.timed import is_timed
    from spark_udf.keyed import LATE, TIME_US, Rules
    from tests.test_spark_stream import RESULTS, _restart_events, run, write_batches

    m = qre("alphabet a, b; " + text, functions={"spread": lambda v: float(v.max() - v.min())})
    events = _restart_events()
    options = {"watermark": "4 seconds"}
    write_batches(tmp_path / "in", events[:2])
    run(spark, m, tmp_path / "in", tmp_path / "ckpt", tmp_path / "out", **options)
    write_batches(tmp_path / "in", events[2:], first=2)
    got = run(spark, m, tmp_path / "in", tmp_path / "ckpt", tmp_path / "out", **options)
    rules = Rules(True, None, "flag", 0, m.clock, is_timed(m), 10**6, "integral")
    want, _ = simulate(m, [e.assign(**{TIME_US: e["t"] * 10**6}) for e in events], rules, 4)
    want = want[want["k"] != 99]
    # Late rows are a side output in monitor_stream's output type: a restart moves them.
    assert len(got) > 10
    assert_equivalent_streams(got, want, stream_type("monitor_stream", "k").output_dependence(),
                              equal=[*RESULTS, LATE], names=("restarted", "simulator"))


def test_compressed_window_contents_and_the_state_per_key(spark, tmp_path):
    """compress_windows (seed 001's D) changes how the state store holds the window
    contents, not the rows; stream_state reports them per key."""
    from spark_udf import stream_state
    from tests.test_spark_stream import _restart_events, run, write_batches

    m = qre("alphabet a, b; avg_over(20s, cur.v) - median_over(5, cur.v)")
    write_batches(tmp_path / "in", _restart_events()[:-1])
    rows, sizes = {}, {}
    for i, d in enumerate((None, "0 seconds")):
        ckpt = tmp_path / f"ckpt-{i}"
        rows[d] = run(spark, m, tmp_path / "in", ckpt, tmp_path / f"out-{i}",
                      watermark="4 seconds", compress_windows=d)
        sizes[d] = stream_state(spark, str(ckpt)).sort_values("key").reset_index(drop=True)
    assert_equivalent_streams(rows[None], rows["0 seconds"], OUTPUT,
                              equal=["k", "t", "tag", "status", "value"],
                              names=("plain", "compressed"))
    raw, packed = sizes[None], sizes["0 seconds"]
    assert len(raw) == 3 and not raw["compressed"].any() and packed["compressed"].all()
    assert (raw["window_events"] > 0).all()
    assert raw["window_events"].tolist() == packed["window_events"].tolist()
    assert (raw["window_bytes"] == 24 + 8 * 2 + raw["window_events"] * (12 + 8 * 2)).all()
    assert packed["window_bytes"].sum() < raw["window_bytes"].sum()
    with pytest.raises(ValueError, match="needs a watermark"):
        run(spark, m, tmp_path / "in", tmp_path / "c2", tmp_path / "o2",
            compress_windows="1 minute")
    with pytest.raises(ValueError, match="has none"):
        run(spark, qre("alphabet a, b; sum(cur.v)"), tmp_path / "in", tmp_path / "c3",
            tmp_path / "o3", watermark="4 seconds", compress_windows="0 seconds")

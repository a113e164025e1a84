"""The dataflow operators from frames (issue 27): ``Flow`` and its streams as a user runs them.

The three ways through each operator (dedicated, only Aggregates, A⁺) give the same
frame up to row order, with times in the sources' type; bad arguments get errors that
say what to do.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dt import dataflow as definition
from qre.runtime.dataflow import Flow

VIAS = ["dedicated", "aggregate", "aggregate_plus"]


def frames(draw_times):
    return st.builds(
        lambda rows: pd.DataFrame(rows, columns=["time", "user", "amount"]),
        st.lists(st.tuples(draw_times, st.sampled_from(["a", "b", "c"]), st.integers(0, 9)),
                 max_size=25))


def rows(frame):
    return sorted(map(tuple, frame.astype(str).to_numpy().tolist()))


def pipeline(frame, via, delay):
    """A filter, a map with selectivity 0–2, a per-user sliding sum, and a self-join."""
    flow = Flow()
    s = flow.source(frame, delay=delay, every=2)
    kept = s.filter(lambda t: t[2] % 3 != 0, via=via)
    parts = kept.map(lambda t: [(t[1], t[2] * 10 + j) for j in range(t[2] % 3)], via=via)
    sums = parts.aggregate(lambda g: (g.key, sum(t[2] for t in g.tuples)), size=4,
                           advance=2, key="user")
    pairs = s.join(s, size=3, key="user", on=lambda a, b: a[2] < b[2], via=via)
    return [rows(x.collect()) for x in (kept, parts, sums, pairs)]


@settings(max_examples=25)
@given(frames(st.integers(0, 30)), st.integers(0, 6))
def test_three_ways_give_one_frame(frame, delay):
    first, *others = (pipeline(frame, via, delay) for via in VIAS)
    assert all(other == first for other in others)


@settings(max_examples=25)
@given(frames(st.integers(0, 30)), st.integers(1, 5))
def test_unbounded_three_ways_and_its_definition(frame, period):
    fold = (lambda t: (1, t[2]), lambda s, t: (s[0] + 1, s[1] + t[2]),
            lambda a, b: (a[0] + b[0], a[1] + b[1]), lambda s: s)
    got = []
    for via in VIAS:
        flow = Flow()
        s = flow.source(frame, delay=40)  # no tuple is late
        got.append(rows(s.unbounded(*fold, period=period, key="user",
                                    columns=["n", "sum"], via=via).collect(until=45)))
    items = flow.source(frame, delay=40).options["items"]
    want = definition.unbounded(items, fold[0], fold[1], fold[3], period, lambda t: t[1],
                                until=45)
    assert got[0] == got[1] == got[2] == sorted(tuple(map(str, t)) for t in want)


def test_datetimes_come_back_with_their_zone():
    times = pd.to_datetime(["2026-11-28T10:00:01Z", "2026-11-28T10:00:04Z",
                            "2026-11-28T10:00:12Z"])
    frame = pd.DataFrame({"time": times, "user": ["u", "u", "v"], "amount": [5, 7, 1]})
    flow = Flow()
    sums = flow.source(frame).aggregate(lambda g: (g.key, sum(t[2] for t in g.tuples)),
                                        size="10s", key="user")
    out = sums.collect()
    assert out[["user", "amount"]].values.tolist() == [["u", 12], ["v", 1]]
    assert str(out["time"].dt.tz) == "UTC"
    assert out["time"].astype(str).tolist() == ["2026-11-28 10:00:09.999999+00:00",
                                                "2026-11-28 10:00:19.999999+00:00"]


def test_join_frame_names_both_sides():
    left = pd.DataFrame({"time": [1, 2], "user": ["a", "b"], "x": [1, 2]})
    right = pd.DataFrame({"time": [1, 3], "user": ["a", "b"], "y": [10, 20]})
    flow = Flow()
    out = flow.source(left).join(flow.source(right), size=5, key="user").collect()
    assert list(out.columns) == ["time", "left_time", "user_left", "x", "right_time",
                                 "user_right", "y"]
    assert out.values.tolist() == [[4, 1, "a", 1, 1, "a", 10], [4, 2, "b", 2, 3, "b", 20]]


def test_errors_say_what_to_do():
    frame = pd.DataFrame({"time": [0, 5, 1], "user": ["a", "a", "a"], "amount": [1, 2, 3]})
    flow = Flow()
    s = flow.source(frame)
    with pytest.raises(ValueError, match="lateness 0"):
        s.join(s, size=2, lateness=1, via="aggregate")
    with pytest.raises(ValueError, match="without late tuples"):
        s.unbounded(None, None, None, None, period=2)
    with pytest.raises(ValueError, match="via is one of"):
        s.map(lambda t: [t[1:]], via="aggregates")
    with pytest.raises(ValueError, match="no column 'who'"):
        s.aggregate(lambda g: None, size=2, key="who")
    with pytest.raises(ValueError, match="columns="):
        s.map(lambda t: [(1,)]).collect()
    with pytest.raises(ValueError, match="no time column"):
        flow.source(frame, time="t")
    with pytest.raises(ValueError, match="positive duration"):
        s.aggregate(lambda g: None, size=0)
    with pytest.raises(ValueError, match="one type"):
        flow.source(frame.assign(time=frame.time.astype(float)))


def test_late_rows_reach_a_map_but_not_a_closed_window():
    frame = pd.DataFrame({"time": [0, 10, 3], "user": ["a", "a", "a"], "amount": [1, 2, 3]})
    flow = Flow()
    s = flow.source(frame)  # watermark 10 before the row at 3
    assert s.lateness == 7
    assert s.map(lambda t: [t[1:]]).collect()["time"].tolist() == [0, 10, 3]  # as they came
    for via in VIAS:  # through Aggregates too (their δ-windows wait 7 for it)
        assert sorted(s.map(lambda t: [t[1:]], via=via).collect()["time"]) == [0, 3, 10]
    sums = s.aggregate(lambda g: (g.key, len(g.tuples)), size=5, key="user").collect()
    assert sums.values.tolist() == [[4, "a", 1], [14, "a", 1]]  # the row at 3 came too late
    assert np.array_equal(sums["time"], [4, 14])

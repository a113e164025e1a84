"""Operator templates on Spark (spark_udf/templates.py) against their sequential meaning.

The oracle runs each template's functions one item at a time over the input in
time order (markers before the items at their time), as seed 003 §2.3 defines
them; Spark runs the same functions on 1 to 6 random partitions of the shuffled
input. Theorem 2.27: the outputs are the same trace of the template's output type
(markers ordered with everything; between them a bag, or each key's rows in
order), compared with the DiffStream matcher, never sorted. A combine that is not
commutative, and an ordered operator that changes the key, are caught.
"""

from __future__ import annotations

import random
import sys

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from qre.testing import assert_equivalent_streams
from qre.traces import compare_streams

pytest.importorskip("pyspark")

from pyspark import cloudpickle

from spark_udf.templates import (
    op_keyed_ordered,
    op_keyed_unordered,
    op_stateless,
    output_dependence,
)

# The workers cannot import this module: its functions travel by value.
cloudpickle.register_pickle_by_value(sys.modules[__name__])

SCHEMA = "k long, t long, x double"


@st.composite
def inputs(draw: st.DrawFn) -> pd.DataFrame:
    """Items (k, t, id, x) and a few markers (marker true, their time in t)."""
    n = draw(st.integers(1, 30))
    rows = [{"k": draw(st.integers(0, 3)), "t": draw(st.integers(0, 9)), "id": i,
             "x": draw(st.sampled_from([-1.0, 0.5, 2.0])), "marker": False} for i in range(n)]
    for j, t in enumerate(draw(st.lists(st.integers(1, 9), max_size=3, unique=True))):
        rows.append({"k": None, "t": t, "id": n + j, "x": None, "marker": True})
    return pd.DataFrame(rows).astype({"k": "Int64"})


def sequence(frame: pd.DataFrame) -> list[dict]:
    """The input in a linearization of its type: by time, a marker before items at its time."""
    rows = frame.to_dict("records")
    return sorted(rows, key=lambda r: (r["t"], not r["marker"], r["id"]))


class Sequential:
    """The templates' meaning, one item at a time (the oracle)."""

    def __init__(self) -> None:
        self.out: list[dict] = []
        self.block = 0

    def emit(self, rows) -> None:  # type: ignore[no-untyped-def]
        for k, t, x in rows:
            self.out.append({"k": k, "t": t, "x": x, "block": self.block, "marker": False})

    def marker(self, m: dict) -> None:
        self.out.append({"k": None, "t": m["t"], "x": None, "block": self.block, "marker": True})
        self.block += 1


def spark_frame(spark, frame: pd.DataFrame, rng: random.Random):  # type: ignore[no-untyped-def]
    shuffled = frame.sample(frac=1.0, random_state=rng.randrange(2**31))
    df = spark.createDataFrame(shuffled, "k long, t long, id long, x double, marker boolean")
    return df.repartition(rng.randint(1, 6))


# The functions each test runs both ways.

def double_positive(row):  # type: ignore[no-untyped-def]
    return [(row["k"], row["t"], 2 * row["x"])] if row["x"] > 0 else []


def marker_time(m):  # type: ignore[no-untyped-def]
    return [(None, m["t"], 0.0)]


def running_sum(state, k, row):  # type: ignore[no-untyped-def]
    state += row["x"]
    return state, [(k, row["t"], state)]


def day_total(state, k, m):  # type: ignore[no-untyped-def]
    return 0.0, [(k, m["t"], state)]


def to_state(state, aggregate):  # type: ignore[no-untyped-def]
    return (state[0] + aggregate[0], state[1] + aggregate[1])


def report(state, k, m):  # type: ignore[no-untyped-def]
    return [(k, m["t"], state[1] / state[0] if state[0] else 0.0)]


def above_average(state, k, row):  # type: ignore[no-untyped-def]
    return [(k, row["t"], row["x"])] if state[0] and row["x"] > state[1] / state[0] else []


UNORDERED = {"initial_state": lambda: (0, 0.0), "identity": lambda: (0, 0.0),
             "lift": lambda k, row: (1, row["x"]),
             "combine": lambda a, b: (a[0] + b[0], a[1] + b[1]),
             "update_state": to_state, "on_marker": report, "on_item": above_average}


def sequential_stateless(rows: list[dict]) -> list[dict]:
    run = Sequential()
    for r in rows:
        if r["marker"]:
            run.emit(marker_time(r))
            run.marker(r)
        else:
            run.emit(double_positive(r))
    return run.out


def sequential_keyed(rows: list[dict], ordered: bool) -> list[dict]:
    run = Sequential()
    states: dict = {}
    blocks: dict = {}
    for r in rows:
        if r["marker"]:
            for k in states:
                if ordered:
                    states[k], emitted = day_total(states[k], k, r)
                else:
                    states[k] = to_state(states[k], blocks[k])
                    blocks[k] = UNORDERED["identity"]()
                    emitted = report(states[k], k, r)
                run.emit(emitted)
            run.marker(r)
            continue
        k = r["k"]
        if ordered:
            states[k], emitted = running_sum(states.get(k, 0.0), k, r)
        else:
            states.setdefault(k, UNORDERED["initial_state"]())
            emitted = above_average(states[k], k, r)
            blocks[k] = UNORDERED["combine"](blocks.get(k, UNORDERED["identity"]()),
                                             UNORDERED["lift"](k, r))
        run.emit(emitted)
    return run.out


def collected(df) -> pd.DataFrame:  # type: ignore[no-untyped-def]
    return df.toPandas().astype({"k": "Int64"})


@settings(max_examples=5)
@given(inputs(), st.integers(0, 2**32))
def test_stateless(spark, frame, seed):
    out = op_stateless(spark_frame(spark, frame, random.Random(seed)), double_positive,
                       schema=SCHEMA, on_marker=marker_time, marker="marker", time="t")
    want = pd.DataFrame(sequential_stateless(sequence(frame)), columns=out.columns)
    assert_equivalent_streams(collected(out), want.astype({"k": "Int64"}),
                              output_dependence(None, "marker"), names=("spark", "sequential"))


@settings(max_examples=5)
@given(inputs(), st.integers(0, 2**32))
def test_keyed_ordered(spark, frame, seed):
    out = op_keyed_ordered(spark_frame(spark, frame, random.Random(seed)), "k", ["t", "id"],
                           running_sum, schema=SCHEMA, initial_state=lambda: 0.0,
                           on_marker=day_total, marker="marker", time="t")
    want = pd.DataFrame(sequential_keyed(sequence(frame), True), columns=out.columns)
    assert_equivalent_streams(collected(out), want.astype({"k": "Int64"}),
                              output_dependence("k", "marker"), names=("spark", "sequential"))


@settings(max_examples=5)
@given(inputs(), st.integers(0, 2**32))
def test_keyed_unordered(spark, frame, seed):
    """x takes values whose sums are exact in any order: a commutative monoid."""
    out = op_keyed_unordered(spark_frame(spark, frame, random.Random(seed)), "k",
                             schema=SCHEMA, marker="marker", time="t", **UNORDERED)
    want = pd.DataFrame(sequential_keyed(sequence(frame), False), columns=out.columns)
    assert_equivalent_streams(collected(out), want.astype({"k": "Int64"}),
                              output_dependence(None, "marker"), names=("spark", "sequential"))


def test_a_combine_that_is_not_commutative_is_caught(spark):
    """String concatenation as the monoid: Spark's order shows in the output."""
    rows = [{"k": 1, "t": 0, "id": i, "x": float(i), "marker": False} for i in range(40)]
    rows.append({"k": None, "t": 5, "id": 99, "x": None, "marker": True})
    frame = pd.DataFrame(rows).astype({"k": "Int64"})
    concat = dict(UNORDERED, initial_state=str, identity=str,
                  lift=lambda k, row: f"{row['x']:.0f};", combine=lambda a, b: a + b,
                  update_state=lambda s, a: s + a, on_item=None,
                  on_marker=lambda s, k, m: [(k, m["t"], float(hash(s) % 1000))])
    rng = random.Random(1)
    outputs = [collected(op_keyed_unordered(spark_frame(spark, frame, rng), "k",
                                            schema=SCHEMA, marker="marker", time="t",
                                            **concat)) for _ in range(4)]
    verdicts = [compare_streams(outputs[0], other, output_dependence(None, "marker"))
                for other in outputs[1:]]
    assert not all(v.equivalent for v in verdicts)


def test_an_ordered_operator_keeps_its_key(spark):
    frame = pd.DataFrame({"k": [1, 2], "t": [0, 1], "id": [0, 1], "x": [1.0, 2.0],
                          "marker": [False, False]})
    df = spark.createDataFrame(frame, "k long, t long, id long, x double, marker boolean")
    out = op_keyed_ordered(df, "k", "t", lambda s, k, row: (s, [(k + 1, row["t"], 0.0)]),
                           schema=SCHEMA, initial_state=lambda: None)
    with pytest.raises(Exception, match="keeps the input's key"):
        out.collect()
    with pytest.raises(ValueError, match="no column 'k'"):
        op_keyed_ordered(df, "k", "t", running_sum, schema="t long, x double",
                         initial_state=float)

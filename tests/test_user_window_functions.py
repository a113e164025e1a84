"""Window functions given in Python (issue 23 §1): ``qre(..., functions={"iqr": fn})``,
written ``NAME_over(size, t)`` and ``aggregate(NAME(t), size[, slide])``.

Oracle: the denotational interpreter (qre/language/semantics.py) recomputes each window
by brute force and calls the same function on it: random queries mixing them with the
builtins, random words, keys, times, every prefix, status and value bit for bit; a
window aggregate against a brute force over the window instances; a session fed in
chunks; Spark's ``monitor_timed`` against ``run_timed``.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dt.terms import Apply, Const, Cur
from qre import QreSyntaxError, qre
from qre.api import user_functions
from qre.language import ast
from qre.language.printer import to_text
from qre.language.semantics import prefix_meanings
from tests.test_window_signals import (
    ALPHABET,
    VALUES,
    _assert_outputs,
    check_timed,
    window_signals,
)

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")  # numpy on inf − inf

FUNCTIONS = user_functions({
    "spread": np.ptp,  # NaN with a NaN inside
    "drift": lambda v: v[-1] - v[0],  # reads the events' order
    "n": lambda v: float(len(v)),
    "iqr": lambda v: np.subtract(*np.percentile(v, [75, 25])),
})


@st.composite
def user_signals(draw, *, timed: bool = False) -> ast.WindowSignal:
    user = draw(st.sampled_from(list(FUNCTIONS.values())))
    if timed and draw(st.booleans()):
        size = ast.WindowSize(draw(st.integers(1, 6)) * 1_000_000_000, events=False)
    else:
        size = ast.WindowSize(draw(st.integers(1, 5)), events=True)
    arg = draw(st.sampled_from([Cur(), Apply("sub", (Apply("mul", (Cur(), Const(2.0))),
                                                     Const(1.0)))]))
    return ast.WindowSignal(user.name, size, arg, user=user)


@st.composite
def user_queries(draw, *, timed: bool = False) -> ast.Query:
    mine = user_signals(timed=timed)
    kind = draw(st.sampled_from(["alone", "arith", "compare", "once"]))
    if kind == "alone":
        return draw(mine)
    if kind == "arith":
        return ast.Arith("+", draw(mine), draw(st.one_of(mine, window_signals(timed=timed))))
    compare = ast.Compare(">", draw(mine), draw(window_signals(timed=timed)))
    return compare if kind == "compare" else ast.Once(compare)


@settings(max_examples=60, deadline=None)
@given(user_queries(), st.lists(st.tuples(st.sampled_from(ALPHABET), VALUES), max_size=12))
def test_count_windows_against_the_oracle_on_every_prefix(query, word):
    m = qre(query, alphabet=list(ALPHABET))
    want = prefix_meanings(query, word)
    tags = [t for t, _ in word]
    values = np.array([v for _, v in word], dtype=np.float64)
    for engine in ("table", "reference"):
        out = m.run(tags, values, engine=engine)
        _assert_outputs(out.status, out.value, want[1:], (to_text(query), engine))
    s, got = m.session(), []
    for lo in range(0, len(word), 5):  # in chunks of five: the contents carried
        s = m.session(s.state, windows=s.windows)
        got.append(s.feed(tags[lo:lo + 5], values[lo:lo + 5]))
    if got:
        _assert_outputs(np.concatenate([o.status for o in got]),
                        np.concatenate([o.value for o in got]), want[1:], to_text(query))


@settings(max_examples=40, deadline=None)
@given(st.data(), st.lists(st.tuples(st.integers(0, 2), st.integers(0, 20),
                                     st.sampled_from(ALPHABET), VALUES), max_size=20))
def test_time_windows_against_the_oracle(data, rows):
    check_timed(ast.Program(ALPHABET, (), data.draw(user_queries(timed=True))), rows)


@settings(max_examples=40, deadline=None)
@given(st.sampled_from(["spread", "drift", "iqr"]), st.integers(1, 4), st.integers(0, 3),
       st.lists(st.tuples(st.integers(0, 1), st.integers(0, 25), VALUES), max_size=20))
def test_a_window_aggregate_equals_brute_force(name, slide, extra, rows):
    """aggregate(NAME(cur), size, slide) for any slide up to the size: each key's
    non-empty instance [l·slide, l·slide + size) once, at its end − 1."""
    size = slide + extra
    m = qre(f"alphabet a; aggregate({name}(cur), {size}s, {slide}s)",
            functions={name: FUNCTIONS[name].fn})
    keys = [k for k, _, _ in rows]
    times = np.array([t for _, t, _ in rows], dtype=np.int64)
    values = np.array([v for _, _, v in rows], dtype=np.float64)
    got = m.run_timed(times, ["a"] * len(rows), values, keys=keys)
    want = []
    for key in sorted(set(keys)):
        mine = sorted((t, i) for i, (k, t, _) in enumerate(rows) if k == key)
        lo = (mine[0][0] - size) // slide + 1
        for left in range(lo * slide, mine[-1][0] + 1, slide):
            inside = [values[i] for t, i in mine if left <= t < left + size]
            if inside:
                want.append((key, left + size - 1, FUNCTIONS[name](np.array(inside))))
    assert [(k, t) for k, t, _ in sorted(want)] == sorted(zip(got["key"], got["time"],
                                                              strict=True))
    got_values = dict(zip(zip(got["key"], got["time"], strict=True), got["value"],
                          strict=True))
    for k, t, v in want:
        assert np.float64(got_values[(k, t)]).tobytes() == np.float64(v).tobytes() or (
            math.isnan(v) and math.isnan(got_values[(k, t)]))


def test_names_errors_and_a_failing_function():
    with pytest.raises(QreSyntaxError, match="functions=\\{'iqr': fn\\}"):
        qre("alphabet a; iqr_over(3, cur)")
    with pytest.raises(ValueError, match="is a builtin's"):
        qre("alphabet a; avg(cur)", functions={"median": np.median})
    with pytest.raises(ValueError, match="an identifier"):
        qre("alphabet a; avg(cur)", functions={"my fn": np.median})
    with pytest.raises(TypeError, match="must be a function"):
        qre("alphabet a; avg(cur)", functions={"f": 3})
    with pytest.raises(QreSyntaxError, match="not sessions"):
        qre("alphabet a; aggregate(f(cur), session(1s))", functions={"f": np.median})
    m = qre("alphabet a; f_over(2, cur)", functions={"f": lambda v: v.sort()})
    with pytest.raises(ValueError, match="window function 'f' failed on a window of 1 "
                                         "values: ValueError"):
        m.run(["a"], [1.0])  # sorting in place: the values are read-only


def test_on_spark(spark):
    from spark_udf import monitor_timed

    m = qre("alphabet a; iqr_over(3s, cur) - drift_over(2, cur)",
            functions={"iqr": FUNCTIONS["iqr"].fn, "drift": FUNCTIONS["drift"].fn})
    frame = pd.DataFrame({"k": ["u", "u", "v", "u", "v"], "t": [0, 1, 1, 2, 4],
                          "tag": ["a"] * 5, "x": [1.0, 4.0, 2.0, 9.0, 3.0]})
    df = spark.createDataFrame(frame, "k string, t long, tag string, x double")
    got = monitor_timed(df, m, "k", "t", "tag", "x").toPandas().sort_values(["k", "t"])
    want = m.run_timed(frame["t"], frame["tag"], frame["x"], keys=frame["k"])
    assert got["value"].tolist() == want.sort_values(["key", "time"])["value"].tolist()
    # u at 1: iqr of [1, 4] (3.25 − 1.75) minus the drift 4 − 1.
    assert got["value"].tolist()[1] == -1.5

"""Sliding windows at every event (issue 23 §2): ``avg_over(2d, cur)`` and its kin.

A window signal is the aggregate of a term over the key's events in a window ending at
the current step — the last k events, or those of the last D of event time — computed
by a window store before the DT (qre/runtime/window_fields.py,
codegen/window_store). The oracle is the denotational interpreter
(qre/language/semantics.py), which recomputes each window from the word with the brute
force of dt/window_aggregates.py: random queries that mix window signals with the rest
of QRE-Past (arithmetic, comparisons, past operators), random words, keys and times,
every prefix, status and value bit for bit, on every engine.
"""

from __future__ import annotations

import io
import math
import re

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from query_strategies import temporal_queries, top_queries

from dt.terms import Apply, Const, Cur
from dt.values import BOT, TOP
from dt.windows import TICK
from qre import QreSyntaxError, QreTypeError, examples, qre
from qre.language import ast
from qre.language import combinators as q
from qre.language.event_data import PLAIN_FIELD
from qre.language.parser import parse
from qre.language.patterns import CLOCK_FIELD, duration_field
from qre.language.printer import to_text
from qre.language.semantics import prefix_meanings

ENGINES = ("reference", "table", "codegen")
ALPHABET = ("a", "b")

# Values with ties, cancellations and the special floats the aggregates must keep exact.
VALUES = st.one_of(st.integers(-3, 3).map(float),
                   st.sampled_from([0.5, -0.0, 1e16, -1e16, math.inf, -math.inf, math.nan,
                                    5e-324, 1.7e308]))


def _bits(x: float) -> int:
    """A float's bits, every NaN one value: bit-for-bit equality of outputs."""
    return int(np.float64(math.nan if math.isnan(x) else x).view(np.int64))


def _assert_outputs(status: np.ndarray, value: np.ndarray, want: list, where: object) -> None:
    """Status and value against the oracle's values, one per step."""
    expected = [0 if w is BOT else 2 if w is TOP else 1 for w in want]
    assert status.tolist() == expected, where
    got = [_bits(v) for v, s in zip(value.tolist(), expected, strict=True) if s == 1]
    assert got == [_bits(w) for w in want if w is not BOT and w is not TOP], where


@st.composite
def window_signals(draw, *, timed: bool = False) -> ast.WindowSignal:
    function = draw(st.sampled_from(ast.WINDOW_SIGNALS))
    if timed and draw(st.booleans()):
        size = ast.WindowSize(draw(st.integers(1, 6)) * 1_000_000_000, events=False)
    else:
        size = ast.WindowSize(draw(st.integers(1, 5)), events=True)
    arg = None if function == "count" else draw(st.sampled_from(
        [Cur(), Apply("sub", (Apply("mul", (Cur(), Const(2.0))), Const(1.0)))]))
    p = draw(st.sampled_from([0.0, 0.25, 0.3, 0.5, 0.9, 1.0])) if function == "quantile" \
        else float(draw(st.integers(1, 4))) if function == "top" else None
    return ast.WindowSignal(function, size, arg, p)


@st.composite
def windowed_queries(draw, *, timed: bool = False,
                     alphabet: tuple[str, ...] = ALPHABET) -> ast.Query:
    """A query with window signals at the top, in arithmetic, in comparisons and under
    past operators and connectives (a window signal is defined on every word)."""
    w = window_signals(timed=timed)
    kind = draw(st.sampled_from(["alone", "arith", "compare", "once", "since", "function"]))
    if kind == "alone":
        return draw(w)
    if kind == "arith":
        other = st.one_of(w, top_queries(alphabet, 2))
        return ast.Arith(draw(st.sampled_from(list(ast.ARITHMETIC))), draw(w), draw(other))
    if kind == "function":
        return ast.SignalFunction("max", (draw(w), draw(w)))
    compare = ast.Compare(draw(st.sampled_from(list(ast.COMPARISONS))), draw(w), draw(w))
    if kind == "compare":
        return compare
    if kind == "once":
        return ast.Once(compare)
    return ast.Since(compare, draw(temporal_queries(alphabet, 1)), True)


words = st.lists(st.tuples(st.sampled_from(ALPHABET), VALUES), max_size=12)


@settings(max_examples=60, deadline=None)
@given(windowed_queries(), words)
def test_count_windows_against_the_oracle_on_every_prefix(query, word):
    m = qre(query, alphabet=list(ALPHABET))
    want = prefix_meanings(query, word)
    status, value = m.initial  # the empty stream
    _assert_outputs(np.array([status]), np.array([value]), want[:1], to_text(query))
    tags = [t for t, _ in word]
    values = np.array([v for _, v in word], dtype=np.float64)
    for engine in ENGINES:
        out = m.run(tags, values, engine=engine)
        _assert_outputs(out.status, out.value, want[1:], (to_text(query), engine))


@settings(max_examples=40, deadline=None)
@given(windowed_queries(), st.lists(st.tuples(st.integers(0, 3), st.sampled_from(ALPHABET),
                                              VALUES), max_size=25))
def test_keys_slide_their_own_windows(query, rows):
    """run_keys: every key's windows start empty and see only its events."""
    m = qre(query, alphabet=list(ALPHABET))
    keys = [k for k, _, _ in rows]
    tags = [t for _, t, _ in rows]
    values = np.array([v for _, _, v in rows], dtype=np.float64)
    out = m.run_keys(keys, tags, values, engine="table")
    for key in set(keys):
        at = [i for i, k in enumerate(keys) if k == key]
        want = prefix_meanings(query, [(tags[i], values[i]) for i in at])[1:]
        _assert_outputs(out.status[at], out.value[at], want, (to_text(query), key))


@settings(max_examples=40, deadline=None)
@given(st.data(),
       st.lists(st.tuples(st.integers(0, 2), st.integers(0, 20), st.sampled_from(ALPHABET),
                          VALUES), max_size=25),
       st.booleans())
def test_time_windows_against_the_oracle(data, rows, ticks):
    """run_timed: windows of durations (events less than D before the step, equal times
    included), per key in processing order; with a declared period its ticks read the
    windows without entering them."""
    alphabet = (*ALPHABET, TICK) if ticks else ALPHABET
    query = data.draw(windowed_queries(timed=True, alphabet=alphabet))
    check_timed(ast.Program(alphabet, (), query, period=3_000_000_000 if ticks else None),
                rows)


def check_timed(program: ast.Program, rows: list[tuple]) -> None:
    """``program``'s run_timed over ``rows`` (key, time in s, tag, value) against the
    denotational interpreter, key by key in processing order, every prefix."""
    query = program.query
    m = qre(program)
    keys = [k for k, _, _, _ in rows]
    times = np.array([t for _, t, _, _ in rows], dtype=np.int64)
    tags = [g for _, _, g, _ in rows]
    values = np.array([v for _, _, _, v in rows], dtype=np.float64)
    frame = m.run_timed(times, tags, values, keys=keys, undefined="keep", engine="table")
    sizes = {w.size.amount for w in _windows(query) if not w.size.events}
    for key, steps in frame.groupby("key", sort=False):
        word = []
        for row, stamp, tag in zip(steps["row"], steps["time"], steps["tag"], strict=True):
            clock = float(stamp) + (row < 0)  # a tick's row is stamped at its boundary − δ
            record = {PLAIN_FIELD: math.nan if row < 0 else float(values[row]),
                      CLOCK_FIELD: clock,
                      **{duration_field(ns): float(math.ceil(ns / 1e9)) for ns in sizes}}
            word.append((str(tag), record))
        want = prefix_meanings(query, word)[1:]
        _assert_outputs(steps["status"].to_numpy(), steps["value"].to_numpy(), want,
                        (to_text(query), key))


def _windows(node: object) -> list[ast.WindowSignal]:
    """The window signals in a query."""
    if isinstance(node, ast.WindowSignal):
        return [node]
    if isinstance(node, tuple):
        return [w for item in node for w in _windows(item)]
    if not hasattr(node, "__dataclass_fields__"):
        return []
    return [w for name in node.__dataclass_fields__ if name != "span"
            for w in _windows(getattr(node, name))]


def test_the_papers_motivating_query_exactly_as_stated():
    """Seed 003 §5.3: "is the average of the last five measurements always more than two
    standard deviations above the average over the last two days?" (examples/two_days.qre),
    its comparison recomputed with numpy over the same windows at every reading."""
    text = examples.read_text("two_days.qre")
    hour = 3600
    rng = np.random.default_rng(3)
    times = np.arange(80) * hour  # hourly readings over 3⅓ days
    readings = 10.0 + rng.integers(0, 3, 80) + np.where(np.arange(80) >= 70, 30.0, 0.0)
    above = qre(text.replace("hist(count() == 0 || above)", "above"))
    got = above.run_timed(times, ["m"] * 80, readings)["value"].to_numpy()
    want = []
    for i in range(80):
        days = readings[max(0, i - 47):i + 1]  # (t − 2d, t]: the last 48 hourly readings
        sd = math.sqrt(max(np.mean(days * days) - np.mean(days) ** 2, 0.0))
        want.append(float(readings[max(0, i - 4):i + 1].mean() > days.mean() + 2 * sd))
    assert got.tolist() == want and 1.0 in want
    # "Always" is 0 from the first reading on, for any word: there the average of the
    # last five is the 2-day mean itself. The check still tells hist from once (1 after
    # the jump) and from the pointwise form.
    always = qre(text).run_timed(times, ["m"] * 80, readings)["value"].to_numpy()
    assert always.tolist() == np.minimum.accumulate(want).tolist()


def test_large_windows_and_each_aggregate_on_known_data():
    x = np.arange(1, 2001, dtype=np.float64)
    tags = ["a"] * len(x)
    cases = {"avg_over(1000, cur)": np.array([x[max(0, i - 999):i + 1].mean()
                                              for i in range(len(x))]),
             "sum_over(1000000, cur)": np.cumsum(x),
             "count_over(7)": np.minimum(np.arange(1, 2001), 7).astype(float),
             "min_over(3, cur)": np.maximum(x - 2, 1), "max_over(3, cur)": x,
             "median_over(4, cur)": np.array([np.median(x[max(0, i - 3):i + 1])
                                              for i in range(len(x))]),
             "distinct_over(10, floor(cur / 4))": np.array(
                 [len(set(np.floor(x[max(0, i - 9):i + 1] / 4))) for i in range(len(x))])}
    for text, want in cases.items():
        out = qre(f"alphabet a; {text}").run(tags, x)
        assert (out.status == 1).all(), text
        np.testing.assert_array_equal(out.value, want, err_msg=text)


def test_quantiles_match_numpy_and_the_empty_window_values():
    rng = np.random.default_rng(5)
    x = rng.normal(size=300).round(3)
    for p in (0.1, 0.25, 0.5, 0.75, 0.99):
        out = qre(f"alphabet a; quantile_over(50, cur, {p})").run(["a"] * 300, x)
        want = [np.quantile(x[max(0, i - 49):i + 1], p) for i in range(300)]
        np.testing.assert_allclose(out.value, want, rtol=0, atol=1e-12)
    empty = {"count": 0.0, "sum": 0.0, "avg": math.nan, "min": math.inf, "max": -math.inf,
             "median": math.nan, "distinct": 0.0}
    for function, value in empty.items():
        arg = "" if function == "count" else ", cur"
        status, initial = qre(f"alphabet a; {function}_over(3{arg})").initial
        assert status == 1 and _bits(initial) == _bits(value), function


def test_text_code_and_printing_agree():
    cases = {"avg_over(2d, cur)": q.avg_over("2d", "cur"),
             "quantile_over(1000, cur.x, 0.25)": q.quantile_over(1000, "cur.x", 0.25),
             "count_over(90s)": q.count_over("90s"),
             "distinct_over(5, cur)": q.distinct_over(5, "cur")}
    for text, built in cases.items():
        assert parse(text).query == built
        assert to_text(built) == text


@pytest.mark.parametrize(("text", "message"), [
    ("avg_over(cur, cur)", "size is a duration (2d, 10min) or a positive whole number"),
    ("avg_over(2.5, cur)", "size is a duration"),
    ("avg_over(0, cur)", "size is a duration"),
    ("avg(2d)", "t is a term, not a duration"),
    ("quantile_over(5, cur, 1.5)", "between 0 and 1"),
    ("count_over(5, cur)", "takes 1 argument"),
])
def test_errors_are_located(text, message):
    with pytest.raises(QreSyntaxError, match=re.escape(message)) as err:
        parse(text)
    assert "^" in str(err.value)


def test_where_a_window_signal_cannot_run():
    timed = qre("alphabet a; avg_over(1h, cur)")
    with pytest.raises(ValueError, match="run_timed"):
        timed.run(["a"], [1.0])
    counted = qre("alphabet a; avg_over(3, cur)")
    with pytest.raises(ValueError, match="sliding windows"):
        counted.resume_keys(np.zeros((1, 2 * len(counted.dt.states))), [0], ["a"], [1.0])
    with pytest.raises(ValueError, match="compile each query with it alone"):
        qre({"x": "avg_over(3s, cur)", "y": "avg(cur)"}, alphabet=["a"])
    for text in ("aggregate(median(cur), 3, 2)", "avg_last(101, cur)"):
        with pytest.raises(ValueError, match="for its own query only"):
            qre({"x": text, "y": "avg(cur)"}, alphabet=["a"])
    with pytest.raises(QreTypeError, match="reads cur"):
        qre("alphabet a; avg_over(3, cur.x) + avg(cur)")


@given(st.lists(st.tuples(st.integers(0, 2), VALUES), max_size=20))
def test_a_dict_of_windowed_queries_is_each_query(rows):
    """Top-k and quartiles as one monitor: the windows numbered across the outputs (a
    shared one computed once), plain cur read beside them, each output the query's own."""
    texts = {"top1": "top_over(4, cur, 1)", "top2": "top_over(4, cur, 2)",
             "q1": "quantile_over(5, cur, 0.25) + top_over(4, cur, 1)", "sum": "sum(cur)"}
    m = qre(texts, alphabet=["a"])
    assert m.windows is not None and len(m.windows.windows) == 3  # top1 shared
    keys = [k for k, _ in rows]
    values = np.array([v for _, v in rows], dtype=np.float64)
    out = m.run_keys(keys, ["a"] * len(rows), values)
    for j, text in enumerate(texts.values()):
        alone = qre(text, alphabet=["a"]).run_keys(keys, ["a"] * len(rows), values)
        status = out.status.reshape(len(rows), len(texts))[:, j]
        value = out.value.reshape(len(rows), len(texts))[:, j]
        assert status.tolist() == alone.status.tolist(), text
        defined = status == 1
        assert [_bits(v) for v in value[defined]] == \
            [_bits(v) for v in alone.value[defined]], text


def test_records_and_plain_values_reach_the_window_and_the_rest():
    """The DT reads plain cur as a field beside the windows' values: both kinds of
    event data work, and a frame's other columns are ignored."""
    m = qre("alphabet a; avg_over(2, cur) - last(cur)")
    assert m.run(["a", "a", "a"], [1.0, 3.0, 8.0]).value.tolist() == [0.0, -1.0, -2.5]
    r = qre("alphabet a; max_over(2, cur.x) * last(cur.y)")
    frame = pd.DataFrame({"x": [1.0, 5.0, 2.0], "y": [1.0, 2.0, 3.0], "z": ["p", "q", "r"]})
    assert r.run(["a"] * 3, frame).value.tolist() == [1.0, 10.0, 15.0]
    counted = qre("alphabet a; count_over(2)")  # reads no column of the records
    assert counted.run(["a"] * 3, {"x": [1.0, 2.0, 3.0]}).value.tolist() == [1.0, 2.0, 2.0]


@settings(max_examples=15, deadline=None)
@given(st.sampled_from(["avg_last({k}, cur)", "window({k}, cur, +) - avg(cur)",
                        "window({k}, cur * 2, max) > count_over(3)",
                        "max(window({k}, cur, min), avg_last(3, cur))"]),
       st.integers(101, 110), st.lists(VALUES, min_size=95, max_size=115),
       st.lists(st.integers(0, 1), min_size=115, max_size=115))
def test_avg_last_beyond_100_events_is_undefined_before_the_kth(template, k, values, keys):
    """avg_last and window(k, t, + min max) beyond 100 events: the window store's
    windows, ⊥ before the k-th event as the expansion is — the output too, through
    arithmetic, functions and comparisons — per key."""
    query = parse("alphabet a; " + template.format(k=k)).query
    m = qre(query, alphabet=["a"])
    keys = keys[:len(values)]
    out = m.run_keys(keys, ["a"] * len(values), np.array(values))
    for key in (0, 1):
        at = [i for i, g in enumerate(keys) if g == key]
        want = prefix_meanings(query, [("a", values[i]) for i in at])[1:]
        _assert_outputs(out.status[at], out.value[at], want, (template, k, key))


def test_avg_last_at_and_beyond_the_expansion_agree():
    """avg_last(100, …) is the expansion, avg_last(101, …) the store: same statuses from
    the k-th event, the same means up to the order of the additions."""
    x = np.random.default_rng(1).normal(size=400)
    small = qre("alphabet a; avg_last(100, cur)").run(["a"] * 400, x)
    large = qre("alphabet a; avg_last(101, cur)").run(["a"] * 400, x)
    assert small.status.tolist() == [0] * 99 + [1] * 301
    assert large.status.tolist() == [0] * 100 + [1] * 300
    want = [x[i - 100:i + 1].mean() for i in range(100, 400)]
    np.testing.assert_allclose(large.value[100:], want, rtol=0, atol=1e-15)


def test_times_order_the_windows_and_the_outputs_stay_in_input_order():
    """run(…, times=…) slides each window in time order; outputs aligned with the rows."""
    m = qre("alphabet a; avg_over(2, cur) * 10 + count_over(3)")
    times = [3, 1, 2, 0]
    values = np.array([4.0, 2.0, 3.0, 1.0])
    shuffled = m.run(["a"] * 4, values, times=times)
    in_order = m.run(["a"] * 4, values[np.argsort(times)])
    assert shuffled.value[np.argsort(times)].tolist() == in_order.value.tolist()


def test_the_command_line_runs_windows(tmp_path, capsys):
    from qre.cli import main

    events = tmp_path / "e.csv"
    events.write_text("key,ts,tag,v\nu,0,m,5\nu,1800,m,9\nu,3600,m,6\nv,3601,m,7\n")
    code = main(["run", "--input", str(events), "--key", "key", "--time", "ts", "--value",
                 "v", "alphabet m; max_over(1h, cur) - min_over(1h, cur)"])
    out = capsys.readouterr().out
    assert code == 0
    assert pd.read_csv(io.StringIO(out))["value"].tolist() == [0.0, 4.0, 3.0, 0.0]

"""Window aggregates and clock ticks (issue 7, points 1, 2, 5): every engine against a
brute-force recomputation of every window; ticks against enumeration."""

from __future__ import annotations

import itertools
import math
import time
from collections.abc import Callable, Iterator
from unittest.mock import patch

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

from dt.errors import DTError
from dt.terms import parse_term
from dt.window_aggregates import aggregate_values
from dt.windows import MAX_SLOTS, Fold, window_aggregate
from qre import qre
from qre.language.ast import HOLISTIC_FUNCTIONS
from qre.language.clock import Clock, clock_steps
from qre.language.errors import QreSyntaxError, QreTypeError
from qre.runtime import keys as keys_module
from qre.runtime.monitor import Monitor
from qre.runtime.order import event_order, sorted_events
from tests import window_oracle as oracle

ALPHABET = ("a", "b")
VALUES = [-1.0, 0.0, 0.5, 2.0, 3.0, math.nan]

FUNCTION_TEXT = {name: (f"{name}()" if name == "count" else f"{name}(cur.x)")
                 for name in oracle.FUNCTIONS}


@st.composite
def timed_events(draw, max_events: int = 25, keys: int = 3, span: int = 30):  # type: ignore[no-untyped-def]
    """Keyed events at small integer times (many ties, many on window boundaries)."""
    n = draw(st.integers(0, max_events))
    start = draw(st.lists(st.integers(-10, 10), min_size=keys, max_size=keys))
    ks = draw(st.lists(st.integers(0, keys - 1), min_size=n, max_size=n))
    return pd.DataFrame({
        "k": ks,
        "t": [start[k] + draw(st.integers(0, span)) for k in ks],
        "tag": draw(st.lists(st.sampled_from(ALPHABET), min_size=n, max_size=n)),
        "x": draw(st.lists(st.sampled_from(VALUES), min_size=n, max_size=n)),
    })


def key_events(frame: pd.DataFrame) -> Iterator[tuple[object, list[oracle.Event]]]:
    """Each key of ``frame`` (columns k, t, tag, x) with its events for the oracle."""
    for key in pd.unique(frame["k"]):
        part = frame[frame["k"] == key]
        yield key, [(int(t), str(g), float(x), int(r))
                    for r, t, g, x in zip(part.index, part["t"], part["tag"], part["x"],
                                          strict=True)]


def expected_windows(frame: pd.DataFrame, size: int, slide: int, name: str,
                     tags: tuple[str, ...], fn: Callable[[list[float]], float] | None = None
                     ) -> list[tuple[object, int, float, int]]:
    """(key, stamp, value, window start) of every non-empty window, by brute force (``fn``
    of its values, default the oracle's function ``name``)."""
    return [(key, stamp, value, stamp + 1 - size) for key, events in key_events(frame)
            for stamp, value in oracle.windows(events, size, slide,
                                               fn or oracle.FUNCTIONS[name], tags, ALPHABET)]


def assert_rows(got: pd.DataFrame, want: list[tuple[object, object, float, object]]) -> None:
    assert (got["status"] == 1).all()
    assert (got["row"] == -1).all() and (got["tag"] == "tick").all()
    assert got["start"].dtype == got["time"].dtype
    rows = list(zip(got["key"], got["time"], got["start"], strict=True))
    assert rows == [(k, t, start) for k, t, _, start in want]
    np.testing.assert_array_equal(got["value"].to_numpy(dtype=float),
                                  np.array([v for _, _, v, _ in want], dtype=float))


@given(timed_events(), st.sampled_from(sorted(oracle.FUNCTIONS)), st.integers(1, 5),
       st.integers(1, 3), st.sampled_from([None, ("a",)]),
       st.sampled_from(["table", "codegen", "reference"]))
def test_aggregate_equals_brute_force(frame, name, slide, slots, tags, engine):
    size = slide * slots
    tag_arg = "" if tags is None else ", [a]"
    m = qre(f"alphabet a, b; aggregate({FUNCTION_TEXT[name]}, {size}s, {slide}s{tag_arg})")
    got = m.run_timed(frame["t"], frame["tag"], {"x": frame["x"]}, keys=frame["k"],
                      engine=engine)
    assert_rows(got, expected_windows(frame, size, slide, name, tags or ALPHABET))


@given(timed_events(), st.sampled_from(["median", "quantile", "distinct", "top", "count",
                                       "sum", "avg", "min", "max"]),
       st.integers(1, 5), st.integers(1, 12), st.sampled_from([None, ("a",)]),
       st.sampled_from(["table", "codegen"]))
def test_stored_aggregates_equal_brute_force(frame, name, slide, size, tags, engine):
    """Issue 23: median, quantile and distinct over any window, and count, sum, avg, min and
    max over windows whose size is not a multiple of their slide, are computed by the
    window store — bit for bit the definitions of dt/window_aggregates.py over each
    window's values (sums exact, rounded once)."""
    size = max(size, slide)
    m = qre(f"alphabet a, b; aggregate({STORED_TEXT[name]}, {size}s, {slide}s"
            f"{'' if tags is None else ', [a]'})")
    assert m.windows is not None or (size % slide == 0 and name not in HOLISTIC_FUNCTIONS)
    got = m.run_timed(frame["t"], frame["tag"], {"x": frame["x"]}, keys=frame["k"],
                      engine=engine)
    want = expected_windows(frame, size, slide, name, tags or ALPHABET,
                            (lambda xs: aggregate_values(xs, name, PARAMETER.get(name, 0.5)))
                            if m.windows else None)
    assert_rows(got, want)


STORED_TEXT = {**FUNCTION_TEXT, "median": "median(cur.x)", "quantile": "quantile(cur.x, 0.3)",
               "distinct": "distinct(cur.x)", "top": "top(cur.x, 2)"}
PARAMETER = {"quantile": 0.3, "top": 2}
"""The number STORED_TEXT gives each function that takes one."""


@given(st.lists(st.tuples(st.integers(0, 2), st.sampled_from(["a", "b"]),
                          st.sampled_from([-1.0, 0.5, 2.0, 2.0, -0.0, math.nan])), max_size=30),
       st.sampled_from(["median", "quantile", "distinct", "top", "count", "sum", "avg", "min",
                        "max"]),
       st.integers(1, 4), st.integers(0, 4), st.sampled_from([None, ("a",)]),
       st.lists(st.integers(0, 30), max_size=3))
def test_windows_of_events_equal_brute_force(rows, name, slide, extra, tags, cuts):
    """aggregate(f, n, m) (issue 23 §1): at the c-th event of the tags (per key, from 1)
    with c ≡ n (mod m), f of the last min(c, n) of them; ⊥ at every other event. Run at
    once with keys, and fed to a session in pieces (the count carried with the
    contents)."""
    size = slide + extra
    m = qre(f"alphabet a, b; aggregate({STORED_TEXT[name]}, {size}, {slide}"
            f"{'' if tags is None else ', [a]'})")
    keys = [k for k, _, _ in rows]
    tags_in = [t for _, t, _ in rows]
    x = np.array([v for _, _, v in rows])
    out = m.run_keys(keys, tags_in, {"x": x})
    for key in set(keys):
        at = [i for i, k in enumerate(keys) if k == key]
        seen: list[float] = []
        want = []
        for i in at:
            if tags is not None and tags_in[i] not in tags:
                want.append(None)
                continue
            seen.append(x[i])
            c = len(seen)
            want.append(aggregate_values(seen[-size:], name, PARAMETER.get(name, 0.5))
                        if (c - size) % slide == 0 else None)
        assert out.status[at].tolist() == [0 if w is None else 1 for w in want]
        got = [v for v, w in zip(out.value[at].tolist(), want, strict=True) if w is not None]
        assert _bits(got) == _bits([w for w in want if w is not None])
    s, pieces = m.session(), []
    for lo, hi in itertools.pairwise(sorted({0, len(rows), *(c % (len(rows) + 1)
                                                               for c in cuts)})):
        s = m.session(s.state, windows=s.windows)
        pieces.append(s.feed(tags_in[lo:hi], {"x": x[lo:hi]}))
    whole = m.run(tags_in, {"x": x})
    if pieces:
        assert np.concatenate([p.status for p in pieces]).tolist() == whole.status.tolist()
        assert _bits(np.concatenate([p.value for p in pieces])) == _bits(whole.value)


def test_a_window_of_events_counts_across_pieces():
    """The count of events travels with the window contents: a session resumed after
    four events closes the next tumbling window of three at the sixth, not the seventh."""
    m = qre("alphabet a; aggregate(sum(cur), 3)")
    x = np.arange(8.0)
    s = m.session()
    first = s.feed(["a"] * 4, x[:4])
    s = m.session(s.state, windows=s.windows)
    assert s.windows is not None and s.windows.counts.tolist() == [4]
    second = s.feed(["a"] * 4, x[4:])
    assert [*first.status.tolist(), *second.status.tolist()] == [0, 0, 1, 0, 0, 1, 0, 0]
    assert second.value[1] == 3.0 + 4.0 + 5.0


def _bits(values: object) -> list[int]:
    """Floats as their bits, every NaN one value."""
    return np.nan_to_num(np.asarray(values, dtype=np.float64), nan=7.5).view(np.int64).tolist()


FRACTIONS = st.one_of(
    st.just(0.0), st.floats(0, 1, exclude_max=True),
    st.sampled_from([-1e-6, -5e-7, 5e-7, 1e-6, -4.999999e-7, -5.000001e-7, 0.9999995]),
    st.integers(0, 127).map(lambda k: k / 128))
"""Added to whole seconds: anything, and the hard cases — a microsecond or a hair around a
window boundary, exact half microseconds (k/128 s is a tie at every odd k)."""


@st.composite
def float_timed_events(draw):  # type: ignore[no-untyped-def]
    frame = draw(timed_events())
    return frame.assign(t=[t + draw(FRACTIONS) for t in frame["t"]])


@given(float_timed_events(), st.sampled_from(sorted(oracle.FUNCTIONS)), st.integers(1, 5),
       st.integers(1, 3), st.sampled_from(["table", "codegen", "reference"]))
def test_float_times_round_to_the_microsecond(frame, name, slide, slots, engine):
    # The oracle rounds each time (round of the float product), then recomputes every window
    # in µs.
    size = slide * slots
    m = qre(f"alphabet a, b; aggregate({FUNCTION_TEXT[name]}, {size}s, {slide}s)")
    got = m.run_timed(frame["t"], frame["tag"], {"x": frame["x"]}, keys=frame["k"],
                      engine=engine)
    us = frame.assign(t=[oracle.nearest(t, 10**6) for t in frame["t"]])
    want = expected_windows(us, size * 10**6, slide * 10**6, name, ALPHABET)
    assert_rows(got, [(k, oracle.as_float(t, 10**6), v, oracle.as_float(s, 10**6))
                      for k, t, v, s in want])


@given(timed_events(max_events=15), st.integers(1, 4), st.integers(1, 3))
def test_input_order_does_not_matter(frame, slide, slots):
    m = qre(f"alphabet a, b; aggregate(last(cur.x), {slide * slots}s, {slide}s)")
    shuffled = frame.iloc[::-1]
    one = m.run_timed(frame["t"], frame["tag"], {"x": frame["x"]}, keys=frame["k"])
    two = m.run_timed(shuffled["t"], shuffled["tag"], {"x": shuffled["x"]},
                      keys=shuffled["k"])
    # Keys come in order of first appearance; within a key, rows do not depend on input order.
    def by_key(f):
        return f.drop(columns="row").sort_values(["key", "time"], kind="stable").reset_index(
            drop=True)

    pd.testing.assert_frame_equal(by_key(one), by_key(two))


def test_user_fold_is_a_window_function():
    # Sum of squares by a fold, against the brute force of the same definition.
    m = qre("alphabet a; aggregate(fold([0, 0], (q, n) -> [q + cur.x * cur.x, n + 1], "
            "(q, n) -> q / n), 4s, 2s)")
    t, x = [0, 1, 2, 5, 9], [1.0, 2.0, 3.0, 4.0, 5.0]
    got = m.run_timed(t, ["a"] * 5, {"x": x})
    assert got["time"].tolist() == [1, 3, 5, 7, 9, 11]
    assert got["value"].tolist() == [2.5, 14 / 3, 12.5, 16.0, 25.0, 25.0]


def test_events_on_a_boundary_open_the_next_window():
    m = qre("alphabet a; aggregate(count(), 10s)")
    got = m.run_timed([0, 9, 10, 20], ["a"] * 4)
    assert got["time"].tolist() == [9, 19, 29] and got["value"].tolist() == [2, 1, 1]


def test_datetime_times_stamp_a_microsecond_before_the_boundary():
    m = qre("alphabet a; aggregate(sum(cur.x), 1min)")
    times = pd.to_datetime(["2026-11-25 10:00:05", "2026-11-25 10:00:59.5",
                            "2026-11-25 10:03:00"], format="ISO8601")
    got = m.run_timed(times, ["a"] * 3, {"x": [1.0, 2.0, 4.0]})
    assert got["time"].astype(str).tolist() == ["2026-11-25 10:00:59.999999",
                                                "2026-11-25 10:03:59.999999"]
    assert got["value"].tolist() == [3.0, 4.0]


def test_time_unit_must_divide_the_slide():
    m = qre("alphabet a; aggregate(count(), 1500ms)")
    assert m.run_timed([0, 1600], ["a", "a"], time_unit="ms")["value"].tolist() == [1, 1]
    with pytest.raises(ValueError, match="not a whole number of the time unit 's'"):
        m.run_timed([0, 2], ["a", "a"])


def test_bad_times_name_the_row():
    m = qre("alphabet a; aggregate(count(), 1s)")
    with pytest.raises(ValueError, match=r"row 1 of times: inf is not a time"):
        m.run_timed([0, math.inf], ["a", "a"])
    with pytest.raises(ValueError, match=r"row 2 of times: 1e\+30 is out of range"):
        m.run_timed([0.5, 1.5, 1e30], ["a"] * 3)
    with pytest.raises(ValueError, match="row 1 of times: 'x' is neither a number nor a date"):
        m.run_timed([0, "x"], ["a", "a"])
    with pytest.raises(ValueError, match="row 0 of times: the event time is missing"):
        m.run_timed([None, 1], ["a", "a"])


def test_watermark_closes_only_the_windows_it_passes():
    m = qre("alphabet a; aggregate(count(), 10s)")
    got = m.run_timed([1, 2, 25], ["a"] * 3, watermark=20)
    assert got["time"].tolist() == [9]  # [20, 30) is still open at watermark 20
    assert m.run_timed([1], ["a"], watermark=5).empty


def test_dedup_keeps_one_of_equal_events():
    m = qre("alphabet a; aggregate(count(), 10s)")
    t, tags, x = [1, 1, 1], ["a"] * 3, {"x": [2.0, 2.0, math.nan]}
    m2 = qre("alphabet a; aggregate(sum(cur.x), 10s)")
    assert m.run_timed(t, tags, x)["value"].tolist() == [3]
    assert m.run_timed(t, tags, x, dedup=True)["value"].tolist() == [2]
    assert math.isnan(m2.run_timed(t, tags, x, dedup=True)["value"][0])


@given(st.integers(0, 30).flatmap(lambda n: st.tuples(*(
    st.lists(elements, min_size=n, max_size=n) for elements in (
        st.integers(0, 3), st.one_of(st.integers(-3, 3), st.sampled_from([-2**62, 2**62])),
        st.integers(0, 2), st.sampled_from([0.5, -1.0, np.nan]))))), st.booleans())
def test_event_order_is_lexsort(columns, float_times):
    """event_order and sorted_events, in numpy and (from NUMBA_ROWS rows) through the
    counting sort; ties given as columns or as functions of the tied rows; integer times
    (a span too wide for one int64 too) and float times (-0.0 and 0.0 one time)."""
    key, time, *ties = (np.array(c) for c in columns)
    if float_times:
        time = np.where(time == 0, np.where(key % 2 == 0, 0.0, -0.0), time / 4)
    for numba_rows, kept_ties in itertools.product((10**9, 0), (ties, ties[:1], [])):
        want = np.lexsort([*reversed(kept_ties), time, key])
        lazy = [lambda rows, c=c: c[rows] for c in kept_ties]
        with patch.object(keys_module, "NUMBA_ROWS", numba_rows):
            assert event_order(key, time, kept_ties).tolist() == want.tolist()
            got = sorted_events(key, time, lazy)
        assert got.order.tolist() == want.tolist()
        assert got.key.tolist() == key[want].tolist()
        assert got.time.tolist() == time[want].tolist()


@given(st.lists(st.integers(-30, 30), max_size=12).map(sorted), st.integers(1, 7),
       st.sampled_from([None, 1, 3]), st.sampled_from([None, -5, 0, 17, 40]))
def test_clock_steps_equal_enumeration(times, period, horizon, until):
    steps = clock_steps(np.zeros(len(times), dtype=np.int64), np.array(times, dtype=np.int64),
                        period, horizon, until)
    got = [("e" if e >= 0 else "t", int(t)) for e, t in zip(steps.event, steps.time,
                                                            strict=True)]
    assert got == oracle.ticks(times, period, horizon, until)
    assert [e for e in steps.event if e >= 0] == list(range(len(times)))


def test_the_aggregate_dt_is_silent_after_its_horizon():
    # The horizon claim of dt.windows, checked on the DT: after k ticks, more ticks emit
    # nothing, and the next event leaves the same configuration as without them.
    fold = Fold(("s",), (0.0,), (parse_term("s + cur"),), parse_term("s"))
    for slots in (1, 2, 4):
        d = window_aggregate(("a", "tick"), fold, slots)
        states = []
        for extra in (0, 1, 3):
            s = Monitor.from_dt(d, optimize=False).session()
            s.feed(["a", "a"], [1.0, 2.0])
            s.feed(["tick"] * slots, [np.nan] * slots)
            if extra:
                assert (s.feed(["tick"] * extra, [np.nan] * extra).status == 0).all()
            s.feed(["a"], [5.0])
            states.append(s.state)
        assert all(np.array_equal(states[0], x, equal_nan=True) for x in states)
    assert Clock(10, 3).in_units("ns") == 10


def test_errors_are_located():
    with pytest.raises(QreSyntaxError, match="multiple of its slide for var"):
        qre("alphabet a; aggregate(var(cur), 10s, 3s)")
    with pytest.raises(QreSyntaxError, match="slide is at most its size"):
        qre("alphabet a; aggregate(count(), 3s, 10s)")
    with pytest.raises(QreTypeError, match="10,000"):
        qre("alphabet a; aggregate(median(cur), 1d, 7s)")
    with pytest.raises(QreSyntaxError, match="unknown time unit 'sec'"):
        qre("alphabet a; aggregate(count(), 10sec)")
    with pytest.raises(QreTypeError, match="cannot be part of another one"):
        qre("alphabet a; aggregate(count(), 10s) > const(1)")
    with pytest.raises(QreTypeError, match="differs from the window's slide"):
        qre("alphabet a; period 5s; aggregate(count(), 10s)")
    with pytest.raises(QreSyntaxError, match="unknown variable 'z'"):
        qre("alphabet a; aggregate(fold([0], (s) -> [s + z], (s) -> s), 1s)")
    with pytest.raises(DTError, match="reads cur"):
        Fold(("s",), (0.0,), (parse_term("s"),), parse_term("cur"))


TUMBLING_SUM_AS_QRE = ("alphabet a, tick; split(or(eps(0), split(any_word(), atom(tick, 0), fst)),"
                       " split(split(iter(atom(a, cur), 0, +), atom(a, cur), +), atom(tick, 0),"
                       " fst), snd)")


@given(st.lists(st.tuples(st.sampled_from(["a", "tick"]), st.sampled_from(VALUES[:-1])),
                max_size=12))
def test_the_direct_window_dt_equals_its_qre_past_form(word):
    # The sugar that dt/windows.py measures against: same outputs at every event.
    tags = [t for t, _ in word]
    values = [v for _, v in word]
    sugar, direct = qre(TUMBLING_SUM_AS_QRE), qre("alphabet a; aggregate(sum(cur), 1s)")
    assert sugar.stats.unoptimized_size == 277 and direct.stats.unoptimized_size == 22
    one, two = sugar.run(tags, values), direct.session().feed(tags, values)
    np.testing.assert_array_equal(one.status, two.status)
    np.testing.assert_array_equal(one.value, two.value)


@pytest.mark.parametrize("text", ["alphabet a; aggregate(sum(cur), 1s)",
                                  "alphabet a; period 5s; count()"])
def test_run_refuses_a_monitor_that_needs_clock_ticks(text):
    """Issue 19, point 18: Monitor.run gave all ⊥ for a window (no ticks); it refuses, as
    spark_udf.monitor_frame does, and names run_timed."""
    m = qre(text)
    with pytest.raises(ValueError, match=r"Monitor.run: this monitor is timed .*run_timed"):
        m.run(["a", "a"], [1.0, 2.0])
    with pytest.raises(ValueError, match=r"Monitor.run_keys: this monitor is timed"):
        m.run_keys([1, 2], ["a", "a"], [1.0, 2.0])
    assert len(m.run_timed([0, 3], ["a", "a"], [1.0, 2.0]))


@pytest.mark.parametrize(("text", "instead"), [
    ("aggregate(var(cur), 100000s, 1s)", "aggregate(var(cur), 100000s, 100s)"),
    ("aggregate(std(cur), 1000000d, 1ns)", "aggregate(std(cur), 1000000d, 1000d)"),
    ("aggregate(last(cur), 7919s, 1s)", "aggregate(last(cur), 7919s)"),  # prime: tumbling
])
def test_too_many_open_windows_are_refused_with_a_slide_that_works(text, instead):
    """Issue 19.14: one register set per open window; 100,000 of them took minutes and
    800 MB to build, 8.64e19 never finished. Refused at once, proposing a longer slide."""
    query = f"alphabet a; {text}"
    start = time.perf_counter()
    with pytest.raises(QreTypeError) as info:
        qre(query)
    assert time.perf_counter() - start < 2
    err = info.value
    assert (err.line, err.column) == (1, 13) and "^" in str(err)
    assert f"e.g. {instead}, or a shorter size" in err.message
    assert f"more than {MAX_SLOTS:,}" in err.message
    assert qre(f"alphabet a; {instead}").clock.window_ns is not None  # the proposal compiles


def test_the_largest_window_allowed_compiles():
    m = qre(f"alphabet a; aggregate(count(), {MAX_SLOTS}s, 1s)")
    assert m.clock.horizon == MAX_SLOTS

"""The window store (codegen.window_store) against its brute-force definition
(dt.window_aggregates), bit for bit.

Hypothesis draws keyed streams (keys of 0 to a dozen steps, ticks that do not enter,
times with gaps, equal times and times at the ends of int64), count and time windows of
every size from 1 to beyond the stream, every aggregate and p in [0, 1], and values mixed
from small integers (ties, cancellations), ±0.0, NaNs of several bit patterns, ±inf,
subnormals, huge finite values and ordinary floats. Every output must have the
reference's bits (all NaNs taken as one). Narrow windows go through the sorted window and,
with SORTED_WIDTHS patched to 0, through the ranks and the Fenwick tree.

Targeted examples pin the rules (the sum's overflow and cancellation, ties to even, −0.0,
infinities, the quantile against numpy) and one test checks that they catch an
accumulator that adds and subtracts floats.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Sequence
from unittest import mock

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import codegen.window_store as window_store
from codegen.window_store import AGGREGATES, SORTED_WIDTHS, window_bounds, window_values
from codegen.window_store.fenwick import tree_values
from codegen.window_store.order_stats import order_keys
from dt.window_aggregates import (
    EMPTY,
    aggregate_values,
    exact_sum,
    order_key,
    reference_window_values,
    window_members,
)
from qre.runtime.order import float_order

INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
BIG = 1.7976931348623157e308  # the greatest double, 2^1024 − 2^971


def _float(bits: int) -> float:
    return struct.unpack("<d", struct.pack("<q", bits))[0]


SPECIAL = [0.0, -0.0, math.nan, _float(-0x0008_0000_0000_0000),  # −NaN
           _float(0x7FF0_0000_0000_0001),  # a signalling NaN's payload
           math.inf, -math.inf, 5e-324, -5e-324, 2.2250738585072014e-308,
           2.225073858507201e-308, -2.225073858507201e-308, 1.7e308, -1.7e308, BIG, -BIG,
           2.0**1023, -(2.0**1023), 2.0**53, 1.0, -1.0, 0.1, 1e308, -1e308]

values = st.one_of(
    st.integers(-3, 3).map(float),
    st.sampled_from(SPECIAL),
    st.floats(allow_nan=False, allow_infinity=False),
    st.floats(min_value=-1e-306, max_value=1e-306),  # subnormals and tiny normals
    st.floats(min_value=-1e6, max_value=1e6),
)

sizes = st.one_of(st.integers(1, 6), st.sampled_from([20, 1000, 2**62, INT64_MAX]))


@st.composite
def streams(draw: st.DrawFn, max_keys: int = 4, max_steps: int = 12
            ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """offsets, enters, x, time of a keyed stream; times nondecreasing within each key."""
    lengths = draw(st.lists(st.integers(0, max_steps), max_size=max_keys))
    n = sum(lengths)
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    enters = np.array(draw(st.lists(st.sampled_from([True, True, True, False]),
                                    min_size=n, max_size=n)), dtype=bool)
    x = np.array(draw(st.lists(values, min_size=n, max_size=n)), dtype=np.float64)
    time = []
    for length in lengths:
        start = draw(st.sampled_from([0, 17, INT64_MIN, INT64_MAX - 1000]))
        gaps = draw(st.lists(st.sampled_from([0, 0, 1, 2, 3, 7, 50]), min_size=length,
                             max_size=length))
        time += (start + np.cumsum(gaps)).tolist()
    return offsets, enters, x, np.array(time, dtype=np.int64)


def assert_same(got: np.ndarray, want: np.ndarray) -> None:
    """Bit for bit, every NaN taken as one."""
    got, want = np.asarray(got, dtype=np.float64), np.asarray(want, dtype=np.float64)
    assert got.shape == want.shape
    g = np.where(np.isnan(got), np.nan, got).view(np.int64)
    w = np.where(np.isnan(want), np.nan, want).view(np.int64)
    bad = np.flatnonzero(g != w)
    assert len(bad) == 0, f"steps {bad[:5].tolist()}: got {got[bad[:5]]}, want {want[bad[:5]]}"


def same(a: float, b: float) -> bool:
    return (math.isnan(a) and math.isnan(b)) or struct.pack("<d", a) == struct.pack("<d", b)


# The kernels against the reference --------------------------------------------------


@settings(max_examples=200, deadline=None)
@given(streams(), sizes, st.booleans(),
       st.one_of(st.floats(0.0, 1.0), st.sampled_from([0.0, 0.25, 0.5, 1.0, 1 / 3])),
       st.integers(1, 6))
def test_every_aggregate_matches_the_reference(stream, size, by_time, p, k):
    """top takes k (the k-th greatest) where quantile takes p."""
    offsets, enters, x, time = stream
    for aggregate in AGGREGATES:
        q = k if aggregate == "top" else p
        want = reference_window_values(offsets, enters, x, time, size, by_time, aggregate, q)
        assert_same(window_values(offsets, enters, x, time, size, by_time, aggregate, q), want)
        if aggregate in ("quantile", "median", "distinct", "top"):  # the wide path too
            with mock.patch.dict(window_store.SORTED_WIDTHS, {aggregate: 0}):
                assert_same(window_values(offsets, enters, x, time, size, by_time, aggregate,
                                          q), want)


@settings(max_examples=200, deadline=None)
@given(streams(), sizes, st.booleans())
def test_window_bounds_are_the_windows(stream, size, by_time):
    offsets, enters, _, time = stream
    first, end = window_bounds(offsets, enters, time, size, by_time)
    steps = np.flatnonzero(enters)  # entry number → step
    for i in range(len(enters)):
        assert steps[first[i]:end[i]].tolist() == \
            window_members(offsets, enters, time, size, by_time, i)


@st.composite
def near_powers(draw: st.DrawFn) -> list[float]:
    """±2^(E − d) and ±(2^53 − 1)·2^(E − 52 − d) for d in 0..70 around one exponent E:
    their sums are ties, just above or below ties, and carries through whole digits."""
    top = draw(st.sampled_from([0, 1000, 1023, -1000, -1074 + 70, 31, 64]))
    terms = st.tuples(st.sampled_from([1.0, -1.0]), st.integers(0, 70), st.booleans())
    return [sign * (2.0**53 - 1 if full else 1.0) * 2.0 ** (top - d - (52 if full else 0))
            for sign, d, full in draw(st.lists(terms, min_size=1, max_size=60))]


@settings(max_examples=200, deadline=None)
@given(st.one_of(
    st.lists(st.one_of(st.floats(allow_nan=False, allow_infinity=False),
                       st.integers(-3, 3).map(float),
                       st.sampled_from([BIG, -BIG, 2.0**1023, -(2.0**1023), 5e-324, -5e-324,
                                        2.0**53, -0.0])),
             min_size=1, max_size=60),
    near_powers()),
    st.integers(1, 8))
def test_sliding_sums_of_wide_magnitudes(xs, size):
    """Long single-key streams through the superaccumulator: carries, borrows, sign
    changes, folds, ties and the overflow boundary."""
    x = np.array(xs)
    n = len(x)
    offsets, enters = np.array([0, n]), np.ones(n, dtype=bool)
    for aggregate in ("sum", "avg"):
        assert_same(window_values(offsets, enters, x, None, size, False, aggregate),
                    reference_window_values(offsets, enters, x, None, size, False,
                                            aggregate))


@settings(max_examples=200, deadline=None)
@given(streams(), sizes, st.booleans())
def test_min_and_max_through_the_fenwick_tree(stream, size, by_time):
    """The tree's min / max (the benchmark's comparison) are the reference's too."""
    offsets, enters, x, time = stream
    first, end = window_bounds(offsets, enters, time, size, by_time)
    entry_offsets = np.concatenate([[0], np.cumsum(enters)])[offsets]
    for mode in ("min", "max"):
        assert_same(tree_values(offsets, first, end, np.ascontiguousarray(x[enters]),
                                entry_offsets, mode),
                    reference_window_values(offsets, enters, x, time, size, by_time, mode))


def test_wide_windows_with_ticks_and_mass_evictions():
    """Windows wider than SORTED_WIDTHS (the ranks' path as shipped) and narrower, and time
    jumps that evict a hundred entries in one step."""
    rng = np.random.default_rng(3)
    lengths = [700, 0, 650, 1]
    n = sum(lengths)
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    enters = rng.random(n) < 0.9
    x = np.where(rng.random(n) < 0.5, rng.integers(-4, 5, n).astype(float),
                 rng.standard_normal(n) * 10.0 ** rng.integers(-20, 20, n))
    x[[10, 1340]] = np.nan  # early in key 0 (it leaves its windows), late in key 2
    time = np.concatenate([np.cumsum(rng.choice([0, 1, 1, 2, 400], size))
                           for size in lengths]).astype(np.int64)
    widest = max(SORTED_WIDTHS.values())
    for size, by_time, aggregates in (
            (100, False, AGGREGATES), (200, True, AGGREGATES),
            (widest + 50, False, ("quantile", "median", "distinct", "top")),
            (10**6, True, ("quantile", "median", "distinct", "min", "max", "top"))):
        for aggregate in aggregates:
            q = 3 if aggregate == "top" else 0.3
            assert_same(window_values(offsets, enters, x, time, size, by_time, aggregate, q),
                        reference_window_values(offsets, enters, x, time, size, by_time,
                                                aggregate, q))


# Targeted examples ------------------------------------------------------------------


def _count_window(xs: Sequence[float], size: int, aggregate: str, p: float = 0.5) -> list:
    x = np.array(xs, dtype=np.float64)
    out = window_values(np.array([0, len(x)]), np.ones(len(x), dtype=bool), x, None, size,
                        False, aggregate, p)
    assert_same(out, reference_window_values(np.array([0, len(x)]), np.ones(len(x), bool), x,
                                             None, size, False, aggregate, p))
    return out.tolist()


# Each example's exact sums; an accumulator that adds and subtracts floats fails them all
# (test_the_examples_catch_a_float_accumulator).
SUM_EXAMPLES = [
    # 1e308 + 1e308 overflows, but the window's exact sum comes back when −1e308 joins.
    ([1e308, 1e308, -1e308, -1e308, 1e308, 5.0], 3,
     [1e308, math.inf, 1e308, -1e308, -1e308, 5.0]),
    # 2^53 + 1 ties to even (2^53), 2^53 + 2 is a double; then 2^53 leaves.
    ([2.0**53, 1.0, 1.0, 1.0], 3, [2.0**53, 2.0**53, 2.0**53 + 2, 3.0]),
    # An infinity leaves the window: the sum is finite again (inf − inf is not).
    ([math.inf, 1.0, 2.0], 2, [math.inf, math.inf, 3.0]),
    # NaN leaves too.
    ([math.nan, 1.0, 2.0], 2, [math.nan, math.nan, 3.0]),
    # Catastrophic cancellation of tiny by huge.
    ([1e-300, 1e300, -1e300, 3.0], 3, [1e-300, 1e300, 1e-300, 3.0]),
]


@pytest.mark.parametrize(("xs", "size", "sums"), SUM_EXAMPLES)
def test_sum_examples(xs, size, sums):
    assert all(same(a, b) for a, b in zip(_count_window(xs, size, "sum"), sums, strict=True))


def test_the_examples_catch_a_float_accumulator():
    """The mutant that the superaccumulator replaces: add the new value, subtract the one
    leaving. Every targeted sum example tells it apart."""
    for xs, size, sums in SUM_EXAMPLES:
        total, naive = 0.0, []
        for i, v in enumerate(xs):
            total += v
            if i >= size:
                total -= xs[i - size]
            naive.append(total)
        assert not all(same(a, b) for a, b in zip(naive, sums, strict=True)), xs


def test_ties_and_sticky_bits():
    """Exactly halfway between two doubles rounds to even; a bit below the half, wherever
    it sits among the limbs, rounds up."""
    tie, below = 2.0**-53, 2.0**-60
    assert same(_count_window([1.0, tie], 2, "sum")[1], 1.0)
    assert same(_count_window([1.0, tie, below], 3, "sum")[2], 1.0 + 2.0**-52)
    assert same(_count_window([1.0, tie, 2.0**-105], 3, "sum")[2], 1.0 + 2.0**-52)
    assert same(_count_window([1.0, tie, -below], 3, "sum")[2], 1.0)
    assert same(_count_window([-1.0, -tie, -below], 3, "sum")[2], -1.0 - 2.0**-52)
    assert same(_count_window([1.0 + 2.0**-52, tie], 2, "sum")[1], 1.0 + 2.0**-51)
    assert same(_count_window([2.0**1000, 2.0**947, 2.0**900], 3, "sum")[2],
                2.0**1000 + 2.0**948)
    # The tie comes back when the sticky bit leaves the window.
    assert all(same(a, b) for a, b in zip(_count_window([below, 1.0, tie], 2, "sum"),
                                          [below, 1.0 + below, 1.0], strict=True))


def test_overflow_boundary_and_subnormals():
    assert same(_count_window([BIG, 2.0**970], 2, "sum")[1], math.inf)  # 2^1024 − 2^970
    assert same(_count_window([BIG, 2.0**969], 2, "sum")[1], BIG)
    assert same(_count_window([-BIG, -(2.0**970)], 2, "sum")[1], -math.inf)
    assert same(_count_window([BIG, BIG, -BIG], 3, "sum")[2], BIG)
    assert same(_count_window([5e-324, 5e-324], 2, "sum")[1], 1e-323)
    assert same(_count_window([2.2250738585072014e-308, -5e-324], 2, "sum")[1],
                2.225073858507201e-308)
    assert same(_count_window([BIG, BIG], 2, "avg")[1], math.inf)  # the sum overflows
    assert same(_count_window([5e-324, 5e-324, 5e-324], 3, "avg")[2], 5e-324)


def test_negative_zero():
    only = _count_window([-0.0, -0.0], 2, "sum")
    assert [math.copysign(1, v) for v in only] == [-1, -1]
    assert math.copysign(1, _count_window([-0.0, 0.0], 2, "sum")[1]) == 1
    assert math.copysign(1, _count_window([-0.0, 0.0, -0.0], 1, "sum")[2]) == -1
    assert math.copysign(1, _count_window([-0.0, -0.0], 2, "avg")[1]) == -1
    assert math.copysign(1, _count_window([1.0, -1.0], 2, "sum")[1]) == 1  # cancellation
    assert math.copysign(1, _count_window([0.0, -0.0], 2, "min")[1]) == -1
    assert math.copysign(1, _count_window([-0.0, 0.0], 2, "max")[1]) == 1
    assert _count_window([0.0, -0.0, 0.0], 3, "distinct") == [1.0, 2.0, 2.0]
    assert math.copysign(1, _count_window([-0.0, -0.0], 2, "median")[1]) == -1


def test_infinities_and_nans():
    assert _count_window([math.inf, 1.0], 2, "sum") == [math.inf, math.inf]
    assert _count_window([-math.inf, 1.0], 2, "sum") == [-math.inf, -math.inf]
    assert math.isnan(_count_window([math.inf, -math.inf], 2, "sum")[1])
    assert _count_window([math.inf, -math.inf, 1.0], 1, "sum") == [math.inf, -math.inf, 1.0]
    for aggregate in ("min", "max", "median"):
        out = _count_window([1.0, math.nan, 2.0, 3.0], 2, aggregate)
        assert math.isnan(out[1]) and math.isnan(out[2]) and not math.isnan(out[3])
    assert _count_window([math.nan, -math.nan, _float(0x7FF0_0000_0000_0001)], 3,
                         "distinct") == [1.0, 1.0, 1.0]
    assert _count_window([math.inf, math.inf], 2, "median") == [math.inf, math.inf]
    assert _count_window([-math.inf, math.inf], 2, "min") == [-math.inf, -math.inf]


def test_empty_windows_and_ticks():
    """A step that does not enter still gets a value; a window empties by time."""
    offsets, enters = np.array([0, 3]), np.array([False, True, False])
    x, time = np.array([9.0, 2.0, 9.0]), np.array([0, 1, 10])
    for aggregate in AGGREGATES:
        q = 1 if aggregate == "top" else 0.5  # top's k: the max
        out = window_values(offsets, enters, x, time, 5, True, aggregate, q)
        assert same(out[0], EMPTY[aggregate]) and same(out[2], EMPTY[aggregate])
        assert same(out[1], aggregate_values([2.0], aggregate, q))


@settings(max_examples=200, deadline=None)
@given(st.lists(st.one_of(st.integers(-3, 3).map(float),
                          st.floats(allow_nan=False, allow_infinity=False)),
                min_size=1, max_size=30),
       st.one_of(st.floats(0.0, 1.0), st.sampled_from([0.0, 0.5, 1.0, 0.1, 0.9])))
def test_quantile_is_numpys_linear_without_infinities_or_signed_zeros(xs, p):
    xs = [v if v != 0 else 0.0 for v in xs]  # no −0.0: numpy does not order the zeros
    want = float(np.quantile(np.array(xs), p, method="linear"))
    assert same(aggregate_values(xs, "quantile", p), want)
    x = np.array(xs)
    got = window_values(np.array([0, len(x)]), np.ones(len(x), bool), x, None, len(x),
                        False, "quantile", p)[-1]
    assert same(got, want)


def test_quantile_differs_from_numpy_where_documented():
    """Equal neighbours give themselves (numpy: −0.0 + 0.0·t = 0.0, inf − inf = NaN)."""
    with np.errstate(invalid="ignore"):
        assert same(float(np.quantile([-0.0, -0.0], 0.3)), 0.0)
        assert math.isnan(float(np.quantile([1.0, math.inf, math.inf], 0.9)))
    assert same(aggregate_values([-0.0, -0.0], "quantile", 0.3), -0.0)
    assert same(aggregate_values([1.0, math.inf, math.inf], "quantile", 0.9), math.inf)


def test_quantile_examples():
    assert _count_window([4.0, 1.0, 2.0, 8.0], 4, "median") == [4.0, 2.5, 2.0, 3.0]
    assert _count_window([4.0, 1.0, 2.0, 8.0], 4, "quantile", 1.0) == [4.0, 4.0, 4.0, 8.0]
    assert _count_window([4.0, 1.0, 2.0, 8.0], 4, "quantile", 0.0) == [4.0, 1.0, 1.0, 1.0]
    assert _count_window([4.0, 1.0, 2.0, 8.0], 2, "quantile", 0.75) == [4.0, 3.25, 1.75, 6.5]


# The order and the reference's own rules ---------------------------------------------


def test_order_keys_are_float_order():
    x = np.array([*SPECIAL, -2.5, 3.0, -1e-310], dtype=np.float64)
    want = float_order(x)
    assert order_keys(x.view(np.int64)).tolist() == want.tolist()
    assert [order_key(v) for v in x.tolist()] == want.tolist()


def test_exact_sum_rounds_once():
    assert exact_sum([1.0, 2.0**-53]) == 1.0  # a tie: to even
    assert exact_sum([1.0, 2.0**-53, 2.0**-105]) == 1.0 + 2.0**-52  # above the tie
    assert exact_sum([0.1, 0.2, -0.3]) == 2.7755575615628914e-17


# Arguments ------------------------------------------------------------------------------


def _call(**changes):
    args = {"offsets": np.array([0, 2]), "enters": np.array([True, True]),
            "x": np.array([1.0, 2.0]), "time": np.array([0, 1]), "size": 2,
            "by_time": True, "aggregate": "sum", "p": 0.5}
    args.update(changes)
    return window_values(**args)


@pytest.mark.parametrize(("changes", "message"), [
    ({"aggregate": "mean"}, "unknown aggregate"),
    ({"size": 0}, "size"),
    ({"size": 1.5}, "size"),
    ({"size": True}, "size"),
    ({"p": 1.5}, "p must"),
    ({"p": math.nan}, "p must"),
    ({"x": np.array([1.0])}, "x has 1"),
    ({"time": np.array([0])}, "time has 1"),
    ({"time": None}, "needs the steps' times"),
    ({"time": np.array([1, 0])}, "time decreases"),
    ({"offsets": np.array([0, 1])}, "offsets"),
    ({"offsets": np.array([1, 2])}, "offsets"),
    ({"enters": np.array([1, 1])}, "enters"),
    ({"x": np.array(["a", "b"])}, "x must"),
])
def test_bad_arguments_are_value_errors(changes, message):
    with pytest.raises(ValueError, match=message):
        _call(**changes)


def test_count_windows_need_no_times():
    assert _call(time=None, by_time=False).tolist() == [1.0, 3.0]
    assert window_values(np.array([0]), np.zeros(0, bool), np.zeros(0), None, 1, False,
                         "median").tolist() == []

"""Sliding-window aggregates over a key's events: the definition and its brute-force oracle.

Pipeline position: events in processing order → **window store** → per-step field values
that the DT reads. The fast version is :func:`codegen.window_store.window_values` (Numba:
an exact superaccumulator, a monotonic deque, a sorted window, a Fenwick tree); this
module says what it must compute, bit for bit, as plainly as possible, and is the oracle
of its tests (tests/test_window_store.py). :func:`aggregate_values` is the meaning of one window and
can be called on its own (a denotational interpreter folds its windows through it).

The steps. Key g owns steps ``offsets[g] .. offsets[g+1]-1`` in processing order. Step i
*enters* (``enters[i]``) with value ``x[i]``, or not (a clock tick: it only asks). After
every step, entering or not, the window of its key is

* by time (``by_time``): the values of the entering steps j ≤ i of the key with
  ``time[i] − time[j] < size``, i.e. the instants in (now − size, now];
* by count: the values of the last ``size`` entering steps j ≤ i of the key (fewer at the
  start).

Each key starts empty. The result at step i is the aggregate over that window:

===========  ==================================================================  =======
aggregate    value                                                               empty
===========  ==================================================================  =======
count        the number of values                                                0.0
sum          NaN if a NaN or both infinities, else ±inf if one infinity, else    0.0
             the exact sum of the values rounded once (nearest, ties to even;
             ≥ 2^1024 − 2^970 in magnitude is ±inf); an exact zero is −0.0 only
             if every value is −0.0
avg          sum / count (float64 division)                                      NaN
min, max     NaN if a NaN, else the least / greatest in the total order          inf, −inf
             −inf < … < −0.0 < 0.0 < … < inf
quantile     NaN if a NaN; numpy's "linear" interpolation (below) at p           NaN
median       quantile at p = 0.5                                                 NaN
top          NaN if a NaN or fewer than k values, else the k-th greatest in the  NaN
             total order (k = 1: max); k is passed as p
distinct     the number of distinct bit patterns, all NaNs one value             0.0
===========  ==================================================================  =======

The quantile: s = the values sorted in the total order (n of them), h = (n − 1)·p (float64),
lo = ⌊h⌋, hi = min(lo + 1, n − 1), t = h − lo, a = s[lo], b = s[hi]; if a == b the result
is a, else with d = b − a it is b − d·(1 − t) if t ≥ 0.5, else a + d·t. This is
``np.quantile(values, p, method="linear")`` step for step (numpy's ``_lerp``), with two
differences: numpy has no ``a == b`` case, so it gives NaN between two equal infinities
(d = inf − inf) and +0.0 between two −0.0 (−0.0 + 0.0·t); and numpy's sort does not order
−0.0 before 0.0 (they compare equal), so which zero it picks among mixed zeros is its
partition's choice. Without infinities and signed zeros the two agree bit for bit.

Cost: brute force. Every step collects its window by scanning its key's earlier steps
(O(n) each) and recomputes the aggregate from scratch (Python ``Fraction`` for sums): meant
for tests on short streams, never for data.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Iterable, Mapping, Sequence
from fractions import Fraction
from types import MappingProxyType

import numpy as np

__all__ = ["AGGREGATES", "EMPTY", "aggregate_values", "exact_sum", "order_key",
           "reference_window_values", "window_members"]

AGGREGATES: tuple[str, ...] = ("count", "sum", "avg", "min", "max", "quantile", "median",
                               "distinct", "top")
"""The aggregate names :func:`aggregate_values` and the window store accept."""

EMPTY: Mapping[str, float] = MappingProxyType({
    "count": 0.0, "sum": 0.0, "avg": math.nan, "min": math.inf, "max": -math.inf,
    "quantile": math.nan, "median": math.nan, "distinct": 0.0, "top": math.nan})
"""Each aggregate over an empty window (avg is 0.0 / 0.0)."""

_CANONICAL_NAN = 0x7FF8_0000_0000_0000
"""The bits of the one NaN that every NaN is taken as (numpy's ``np.nan``)."""

def order_key(value: float) -> int:
    """The value's place in the total order −inf < … < −0.0 < 0.0 < … < inf < NaN, as an
    int64: the bits, a negative value's flipped but for the sign, every NaN one key —
    what :func:`qre.runtime.order.float_order` computes for arrays.

    >>> sorted([0.0, math.nan, -0.0, -1.0, math.inf], key=order_key)
    [-1.0, -0.0, 0.0, inf, nan]
    """
    bits = _bits(value)
    return bits ^ 0x7FFF_FFFF_FFFF_FFFF if bits < 0 else bits


def exact_sum(values: Iterable[float]) -> float:
    """The sum rule: NaN if a NaN or both infinities, ±inf if one infinity, else the exact
    sum rounded once; an exact zero is −0.0 only if there are values and all are −0.0.

    >>> exact_sum([1e308, 1e308, -1e308]), exact_sum([2.0**53, 1.0, 1.0])
    (1e+308, 9007199254740994.0)
    >>> exact_sum([-0.0, -0.0]), exact_sum([-0.0, 0.0]), exact_sum([])
    (-0.0, 0.0, 0.0)
    >>> exact_sum([math.inf, 1.0]), exact_sum([math.inf, -math.inf])
    (inf, nan)
    >>> big = 1.7976931348623157e308  # 2^1024 − 2^971, the greatest double
    >>> exact_sum([big, 2.0**970]), exact_sum([big, 2.0**969]), exact_sum([-big, -big])
    (inf, 1.7976931348623157e+308, -inf)
    """
    values = list(values)
    if any(math.isnan(v) for v in values) or (math.inf in values and -math.inf in values):
        return math.nan
    if math.inf in values or -math.inf in values:
        return math.inf if math.inf in values else -math.inf
    total = sum((Fraction(v) for v in values), Fraction(0))  # Fraction(float) is exact
    if total == 0:
        negative = bool(values) and all(_bits(v) == _bits(-0.0) for v in values)
        return -0.0 if negative else 0.0
    try:
        # int / int is correctly rounded (nearest, ties to even), subnormals included.
        return total.numerator / total.denominator
    except OverflowError:
        # Raised exactly when the rounded quotient is 2^1024 or more, i.e. from
        # 2^1024 − 2^970 (halfway between the greatest double and 2^1024, which ties to
        # even round up): IEEE's overflow to infinity.
        return math.inf if total > 0 else -math.inf


def aggregate_values(values: Sequence[float], aggregate: str, p: float = 0.5) -> float:
    """One window's aggregate (the module docstring's table); ``p`` only for quantile (and
    k for top).

    >>> aggregate_values([3.0, 1.0, 2.0, 2.0], "median"), aggregate_values([], "min")
    (2.0, inf)
    >>> aggregate_values([0.0, -0.0], "min"), aggregate_values([0.0, -0.0], "max")
    (-0.0, 0.0)
    >>> aggregate_values([1.0, math.nan], "max"), aggregate_values([0.0, -0.0, 0.0], "distinct")
    (nan, 2.0)
    >>> aggregate_values([1.0, 2.0, 4.0], "quantile", 0.75), aggregate_values([1.0, 2.0], "avg")
    (3.0, 1.5)
    >>> aggregate_values([1.0, 4.0, 2.0], "top", 2), aggregate_values([1.0], "top", 2)
    (2.0, nan)
    """
    if aggregate not in AGGREGATES:
        raise ValueError(f"unknown aggregate {aggregate!r}; one of {', '.join(AGGREGATES)}")
    values = [float(v) for v in values]
    if aggregate == "count":
        return float(len(values))
    if aggregate == "sum":
        return exact_sum(values)
    if aggregate == "avg":
        return exact_sum(values) / len(values) if values else math.nan
    if aggregate == "distinct":
        return float(len({_bits(v) for v in values}))
    if not values:
        return EMPTY[aggregate]
    if any(math.isnan(v) for v in values):
        return math.nan
    ordered = sorted(values, key=order_key)
    if aggregate == "min":
        return ordered[0]
    if aggregate == "max":
        return ordered[-1]
    if aggregate == "top":
        return ordered[-int(p)] if len(ordered) >= p else math.nan
    return _linear_quantile(ordered, 0.5 if aggregate == "median" else p)


def window_members(offsets: np.ndarray, enters: np.ndarray, time: np.ndarray | None,
                   size: int, by_time: bool, i: int) -> list[int]:
    """The entering steps in the window after step i (ascending), by scanning its key.

    >>> window_members(np.array([0, 4]), np.array([True, True, False, True]),
    ...                np.array([0, 5, 6, 9]), 5, True, 3)
    [1, 3]
    >>> window_members(np.array([0, 4]), np.array([True, True, False, True]), None, 2,
    ...                False, 2)
    [0, 1]
    """
    g = int(np.searchsorted(offsets, i, side="right")) - 1
    earlier = [j for j in range(int(offsets[g]), i + 1) if enters[j]]
    if by_time:
        assert time is not None
        return [j for j in earlier if int(time[i]) - int(time[j]) < size]
    return earlier[-size:]


def reference_window_values(offsets: np.ndarray, enters: np.ndarray, x: np.ndarray,
                            time: np.ndarray | None, size: int, by_time: bool,
                            aggregate: str, p: float = 0.5) -> np.ndarray:
    """The aggregate over the window after every step (float64[n]), by brute force: each
    step's window collected by :func:`window_members`, then :func:`aggregate_values`.

    >>> reference_window_values(np.array([0, 3, 5]), np.array([True, False, True, True, True]),
    ...                         np.array([1.0, 9.0, 2.0, 5.0, 6.0]), None, 2, False,
    ...                         "sum").tolist()
    [1.0, 1.0, 3.0, 5.0, 11.0]
    """
    n = len(enters)
    out = np.empty(n, dtype=np.float64)
    for i in range(n):
        members = window_members(offsets, enters, time, size, by_time, i)
        out[i] = aggregate_values([float(x[j]) for j in members], aggregate, p)
    return out


def _linear_quantile(ordered: list[float], p: float) -> float:
    """numpy's "linear" quantile of values sorted in the total order (module docstring)."""
    n = len(ordered)
    h = (n - 1) * p
    lo = math.floor(h)
    hi = min(lo + 1, n - 1)
    t = h - lo
    a, b = ordered[lo], ordered[hi]
    if a == b:
        return a
    d = b - a
    return b - d * (1 - t) if t >= 0.5 else a + d * t


def _bits(value: float) -> int:
    """The float's bits as a signed int64, every NaN the canonical one."""
    if math.isnan(value):
        return _CANONICAL_NAN
    return struct.unpack("<q", struct.pack("<d", value))[0]

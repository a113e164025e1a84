"""The window store: per-step sliding-window aggregates over each key's events, exact.

Pipeline position: events in processing order (grouped by key, ticks between them:
:func:`codegen.grouping.interleave_ticks`) → **window store** → per-step field values the
DT reads. :func:`window_values` gives, after every step, the aggregate over its key's
window: the last ``size`` entering values (a count window) or those of the last ``size``
time units, (now − size, now] (a time window). Its meaning, and its oracle in the tests,
is :mod:`dt.window_aggregates` (brute force, ``Fraction`` sums); this package computes the
same floats bit for bit in Numba:

* :mod:`.bounds` — the window after each step as a range of entries (the entering steps
  numbered in processing order): ``first``, ``end`` int64[n], one pass;
* :mod:`.exact_sum` — ``sum`` and ``avg``: a fixed-point superaccumulator of int64 limbs
  (32-bit digits, carries deferred) that adds and removes doubles exactly, rounded once
  per output;
* :mod:`.order_stats` — ``min`` / ``max`` by a monotonic deque; ``quantile`` /
  ``median`` / ``distinct`` of windows up to :data:`SORTED_WIDTHS` entries by keeping
  the window's values sorted;
* :mod:`.fenwick` — those of wider windows: each key's values ranked (one sort), a
  Fenwick tree of counts over the ranks for quantiles, counts per rank for distinct;
* :mod:`.packing` — a key's window state (times, values) laid out for a codec: seed
  001's compressed windows (:mod:`qre.runtime.compressed_aggregate`).

Every kernel moves two cursors forward over the entries (adding at ``end[i]``, removing
at ``first[i]``), so each entry is added and removed once whatever the window's size.

Cost, measured by benchmarks/window_store.py (1e6 steps, one key, every step entering,
N(0, 1) values, count windows of 5, 1000 and 1e6 entries; ns per step of a whole
:func:`window_values` call, the window bounds, gathers and sorts included; best of 7 on
this 2-core VM, whose timings swing by up to 1.7x between runs):

==============  =====  =====  =====
ns per step         5   1000    1e6
==============  =====  =====  =====
count             8.4    8.3    8.3
sum              31.2   30.1   23.4
avg              31.6   31.2   24.4
min              21.3   22.3   22.3
max              25.1   25.5   25.5
quantile (0.9)   59.5    335    271
median           59.7    362    277
distinct         54.1    122    115
==============  =====  =====  =====

avg over the last 1000 costs 0.99x avg over the last 5 (the target: at most 2x); over
the whole stream less (no removals). Values spread from 1e−300 to 1e300 put every limb
of the superaccumulator to work: avg 91 / 81 / 75 ns. min through the Fenwick tree
instead of the deque: 319 / 219 / 196 ns. Quantiles at 5 go through the sorted window, at
1000 and 1e6 through the ranks and the tree (their sort is about 100 ns of it).

Per step the sums cost O(1) (a carry pass over the limbs in use: 3 for N(0, 1) values, as
many as the window's values span 32-bit digits, at most 70), min / max O(1) amortized,
quantile / median / distinct O(width) up to :data:`SORTED_WIDTHS` and then O(log R) (R
the key's distinct values) or O(1) after an O(m log m) sort.
"""

from __future__ import annotations

import numbers

import numpy as np

from dt.window_aggregates import AGGREGATES

from .bounds import window_bounds
from .exact_sum import window_sums
from .fenwick import dense_ranks, distinct_values, quantile_values
from .order_stats import extreme_values, order_keys, sorted_window_values

__all__ = ["AGGREGATES", "SORTED_WIDTHS", "window_bounds", "window_values"]

SORTED_WIDTHS: dict[str, int] = {"quantile": 512, "median": 512, "top": 512, "distinct": 96}
"""The widest windows (most entries at once, max(end − first)) whose quantiles and
distinct counts keep the window sorted (:func:`.order_stats.sorted_window_values`: O(width)
a step, no sort beforehand); wider ones rank the entries and count them in a Fenwick tree
or per rank (:mod:`.fenwick`: O(log R) or O(1) a step after an O(m log m) sort). About
where the two cost the same on 1e6 N(0, 1) values (``benchmarks/window_store.py --sweep``,
ns a step, sorted window / ranks): median 327 / 392 at width 512, 609 / 374 at 1024;
distinct 96 / 153 at width 64, 124 / 130 at 128."""


def window_values(offsets: np.ndarray, enters: np.ndarray, x: np.ndarray,
                  time: np.ndarray | None, size: int, by_time: bool, aggregate: str,
                  p: float = 0.5) -> np.ndarray:
    """The aggregate over each step's window, float64[n] (:mod:`dt.window_aggregates`).

    ``offsets`` int64[K+1] (key g owns steps offsets[g]..offsets[g+1]−1, from 0 to n),
    ``enters`` bool[n] (step i's value joins its key's window), ``x`` float64[n] (read
    where ``enters``), ``time`` int64[n] (read by a time window only, None otherwise;
    nondecreasing within a key), ``size`` ≥ 1 (entries, or time units if ``by_time``),
    ``aggregate`` one of :data:`AGGREGATES`, ``p`` in [0, 1] (quantile only; median is
    p = 0.5; for top, k: the k-th greatest). Bad arguments are ValueErrors.

    >>> offsets, enters = np.array([0, 4, 6]), np.array([True, True, False, True, True, True])
    >>> x = np.array([1e308, 1e308, 0.0, -1e308, -0.0, -0.0])
    >>> window_values(offsets, enters, x, None, 3, False, "sum").tolist()
    [1e+308, inf, inf, 1e+308, -0.0, -0.0]
    >>> window_values(offsets, enters, x, np.array([0, 5, 7, 9, 0, 1]), 5, True, "max").tolist()
    [1e+308, 1e+308, 1e+308, 1e+308, -0.0, -0.0]
    """
    offsets, enters, x, time = _checked(offsets, enters, x, time, size, by_time, aggregate, p)
    first, end = window_bounds(offsets, enters, time, int(size), bool(by_time))
    if aggregate == "count":
        return (end - first).astype(np.float64)
    values = np.ascontiguousarray(x[enters])  # the entries' values, in entry order
    bits = values.view(np.int64)
    if aggregate in ("sum", "avg"):
        return window_sums(first, end, bits, aggregate == "avg")
    keys = order_keys(bits)
    if aggregate in ("min", "max"):
        return extreme_values(first, end, values, keys, aggregate == "max")
    # The k-th greatest is an order statistic: the quantile kernels take it as p = −k.
    q = 0.5 if aggregate == "median" else -float(p) if aggregate == "top" else float(p)
    distinct = aggregate == "distinct"
    if len(first) == 0 or int((end - first).max()) <= SORTED_WIDTHS[aggregate]:
        return sorted_window_values(first, end, keys, distinct, q)
    entry_offsets = np.concatenate([[0], np.cumsum(enters)])[offsets]
    if distinct:
        return distinct_values(first, end, dense_ranks(keys, values, entry_offsets)[0])
    return quantile_values(offsets, first, end, values, entry_offsets, q)


def _checked(offsets: np.ndarray, enters: np.ndarray, x: np.ndarray, time: np.ndarray | None,
             size: int, by_time: bool, aggregate: str, p: float
             ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray | None]:
    """The arrays as the kernels take them (contiguous int64, bool, float64), or a
    ValueError that says which argument is wrong."""
    if aggregate not in AGGREGATES:
        raise ValueError(f"unknown aggregate {aggregate!r}; one of {', '.join(AGGREGATES)}")
    if not isinstance(size, numbers.Integral) or isinstance(size, bool) or \
            not 1 <= int(size) < 2**63:
        raise ValueError(f"size must be an integer from 1 to 2^63 − 1, got {size!r}")
    if aggregate == "top":
        if not isinstance(p, numbers.Real) or not float(p).is_integer() or not 1 <= p < 2**53:
            raise ValueError(f"top's k must be a whole number from 1, got {p!r}")
    elif not isinstance(p, numbers.Real) or not 0.0 <= float(p) <= 1.0:
        raise ValueError(f"p must be a number in [0, 1], got {p!r}")
    enters = _array(enters, "enters", "b", np.bool_)
    n = len(enters)
    offsets = _array(offsets, "offsets", "iu", np.int64)
    if len(offsets) == 0 or offsets[0] != 0 or offsets[-1] != n or \
            bool(np.any(np.diff(offsets) < 0)):
        raise ValueError(f"offsets must rise from 0 to the {n} steps, got "
                         f"{offsets[:5].tolist()}{'…' if len(offsets) > 5 else ''}")
    x = _array(x, "x", "fiu", np.float64)
    if len(x) != n:
        raise ValueError(f"x has {len(x)} values but enters has {n} steps")
    if by_time:
        if time is None:
            raise ValueError("a time window needs the steps' times")
        time = _array(time, "time", "iu", np.int64)
        if len(time) != n:
            raise ValueError(f"time has {len(time)} values but enters has {n} steps")
    return offsets, enters, x, time if by_time else None


def _array(values: np.ndarray, what: str, kinds: str, dtype: type) -> np.ndarray:
    """``values`` as a contiguous one-dimensional array of ``dtype``; its own dtype must be
    of one of ``kinds`` (numpy kind letters)."""
    array = np.asarray(values)
    if array.ndim != 1 or array.dtype.kind not in kinds:
        raise ValueError(f"{what} must be a one-dimensional array of kind {kinds!r}, got "
                         f"{array.dtype} of shape {array.shape}")
    if array.dtype.kind == "u" and dtype is np.int64 and len(array) and \
            int(array.max()) >= 2**63:
        raise ValueError(f"{what} has values beyond int64")
    return np.ascontiguousarray(array, dtype=dtype)

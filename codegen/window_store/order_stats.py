"""Order statistics of sliding windows: min / max by a deque, quantiles and distinct
counts of narrow windows by a sorted window; the order keys and the quantile rule.

Pipeline position: aggregate kernels of the window store (events in processing order →
window bounds → **min / max / quantile / median / distinct** → per-step field values the
DT reads). They take the window bounds (:mod:`.bounds`: entries first[i]..end[i]−1 after
step i) and the entries' values or order keys; each gives float64[n], bit for bit
:func:`dt.window_aggregates.aggregate_values`. Wide windows' quantiles and distinct
counts are :mod:`.fenwick`'s.

The order. Values compare by their int64 *order key* (:func:`order_keys`, as
:func:`qre.runtime.order.float_order`): the bits, a negative value's flipped but for the
sign, every NaN the canonical quiet NaN — so −inf < … < −0.0 < 0.0 < … < inf < NaN, equal
keys are equal bits, and a key gives its value back (:func:`_key_bits`). A window that
holds a NaN gives NaN for min, max and the quantiles: the kernels keep the last NaN entry
they passed, and the window holds one iff it is at or after first[i] — no count to keep.

The structures (flat arrays; the entries numbered 0..m−1 in processing order):

* min / max — a monotonic deque ``queue`` int64[m] of entries whose keys strictly
  increase from ``head`` to ``tail`` (for max the keys are complemented: ``~key``
  reverses the order). Per step::

      while front < end[i]: pop the back while key[queue[tail−1]] ≥ key[front]; push front
      while queue[head] < first[i]: head += 1
      out[i] = value[queue[head]]          (inf / −inf if empty, NaN if a NaN is in)

  O(1) amortized: each entry is pushed and popped once.
* quantile / median / distinct of a window never wider than W entries (W = max(end −
  first), known from the bounds) — the window's keys in order, ``window`` int64[W], and
  the number of distinct ones, kept as keys come and go. Per step::

      while an entry leaves and one comes: replace   (only the keys between their places move)
      while one leaves: remove;  while one comes: insert
      out[i] = interpolated window[lo], window[hi]   or   the distinct count

  A key's place is the count of keys below it (a pass without branches). O(W) per step,
  but no sort beforehand: the window store takes it up to
  :data:`codegen.window_store.SORTED_WIDTHS` entries.

Measured (benchmarks/window_store.py, 1e6 steps, one key, N(0, 1) values, this 2-core
VM): min through the deque costs 23-29 ns a step at every width, min through the Fenwick
tree (:func:`.fenwick.tree_values` with mode ``"min"``, one descent a step) 200-340 ns
(its sort and cache misses), so min and max use the deque.
"""

from __future__ import annotations

import numba
import numpy as np

from ..numba_cache import guard_namespace

__all__ = ["extreme_values", "linear_quantile", "order_keys", "quantile_point",
           "sorted_window_values"]

_JIT = {"nopython": True, "cache": True, "nogil": True}
_SCALAR = {**_JIT, "inline": "always"}  # scalars in and out: inlined, no reference counts

_CANONICAL_NAN = 0x7FF8_0000_0000_0000
_EXPONENT_BITS = 0x7FF0_0000_0000_0000
_FRACTION = (1 << 52) - 1
_MAGNITUDE = 0x7FFF_FFFF_FFFF_FFFF
_MAX_KEY = 2**63 - 1


def order_keys(bits: np.ndarray) -> np.ndarray:
    """int64 keys in the total order of the values of ``bits`` (int64 views of floats).

    >>> keys = order_keys(np.array([0.0, -0.0, np.nan, -1.0, -np.nan]).view(np.int64))
    >>> keys.argsort(kind="stable").tolist(), bool(keys[2] == keys[4])
    ([3, 1, 0, 2, 4], True)
    """
    out = np.empty(len(bits), dtype=np.int64)
    _order_keys(bits, out)
    return out


def extreme_values(first: np.ndarray, end: np.ndarray, values: np.ndarray, keys: np.ndarray,
                   want_max: bool) -> np.ndarray:
    """min (or max) of entries first[i]..end[i]−1 at every step, by a monotonic deque
    (module docstring); ``values`` float64[m], ``keys`` their :func:`order_keys`.

    >>> v = np.array([0.0, -0.0, 3.0, np.nan, 1.0])
    >>> extreme_values(np.array([0, 0, 1, 2, 4]), np.array([1, 2, 3, 4, 5]), v,
    ...                order_keys(v.view(np.int64)), False).tolist()
    [0.0, -0.0, -0.0, nan, 1.0]
    """
    out = np.empty(len(first), dtype=np.float64)
    _extremes(first, end, values, ~keys if want_max else keys, want_max, out)
    return out


def sorted_window_values(first: np.ndarray, end: np.ndarray, keys: np.ndarray, distinct: bool,
                         p: float = 0.5) -> np.ndarray:
    """The quantile at ``p`` (or, ``distinct``, the number of distinct values) of entries
    first[i]..end[i]−1 at every step, from their :func:`order_keys`, by a sorted window
    (module docstring): O(W) a step for windows of at most W entries.

    >>> v = np.array([4.0, 1.0, 1.0, -0.0, 0.0])
    >>> keys = order_keys(v.view(np.int64))
    >>> first, end = np.array([0, 0, 0, 1, 2]), np.array([1, 2, 3, 4, 5])
    >>> sorted_window_values(first, end, keys, False, 0.5).tolist()
    [4.0, 2.5, 1.0, 1.0, 0.0]
    >>> sorted_window_values(first, end, keys, True).tolist()
    [1.0, 2.0, 2.0, 2.0, 3.0]
    """
    out = np.empty(len(first), dtype=np.float64)
    width = int((end - first).max()) if len(first) else 0
    _sorted_window(first, end, keys, width, distinct, p, out)
    return out


@numba.jit(**_SCALAR)
def _order_key(b):
    if (b & _EXPONENT_BITS) == _EXPONENT_BITS and (b & _FRACTION) != 0:
        return _CANONICAL_NAN  # every NaN one value, after every other
    return b ^ ((b >> 63) & _MAGNITUDE)  # a negative's bits count down: flipped


@numba.jit(**_JIT)
def _order_keys(bits, out):
    for e in range(bits.shape[0]):
        out[e] = _order_key(bits[e])


@numba.jit(**_JIT)
def _extremes(first, end, values, keys, want_max, out):
    queue = np.empty(values.shape[0], dtype=np.int64)
    head = tail = front = 0
    last_nan = -1
    empty = -np.inf if want_max else np.inf
    for i in range(first.shape[0]):
        while front < end[i]:
            k = keys[front]
            # An entry that is not below the newcomer can never be the least again.
            while tail > head and keys[queue[tail - 1]] >= k:
                tail -= 1
            queue[tail] = front
            tail += 1
            if values[front] != values[front]:
                last_nan = front
            front += 1
        while head < tail and queue[head] < first[i]:
            head += 1
        if last_nan >= first[i]:
            out[i] = np.nan
        elif head == tail:
            out[i] = empty
        else:
            out[i] = values[queue[head]]


@numba.jit(**_JIT)
def _sorted_window(first, end, keys, width, distinct, p, out):
    window = np.empty(max(width, 1), dtype=np.int64)  # the window's keys, ascending
    size = 0
    kinds = 0  # distinct keys in the window
    last_nan = -1
    front = back = 0
    for i in range(first.shape[0]):
        # A key leaving and one coming are one replacement: only the keys between their
        # places move. Then what is left of either (only one kind is): inserts only once
        # nothing is left to remove, so the window never holds more than W keys.
        while back < first[i] or front < end[i]:
            if front < end[i] and keys[front] == _CANONICAL_NAN:
                last_nan = front
            if back < first[i] and front < end[i]:
                kinds += _replace(window, size, keys[back], keys[front])
                back += 1
                front += 1
            elif back < first[i]:
                kinds += _remove(window, size, keys[back])
                size -= 1
                back += 1
            else:
                kinds += _insert(window, size, keys[front])
                size += 1
                front += 1
        if distinct:
            out[i] = kinds
        elif size == 0 or last_nan >= first[i]:
            out[i] = np.nan
        else:
            lo, hi, t = quantile_point(size, p)
            if lo < 0:  # the k-th greatest of fewer than k values
                out[i] = np.nan
            else:
                out[i] = linear_quantile(_key_value(window[lo]), _key_value(window[hi]), t)


# The sorted window's edits. A place is found by counting the keys below (one pass without
# branches, which the compiler vectorizes: a binary search's unpredictable branches cost
# more at these widths, and the keys after the place move anyway). Each returns the change
# in the number of distinct keys.


@numba.jit(**_JIT)
def _remove(window, size, k):
    j = _count_below(window, size, k)  # window[j] == k: the first of them
    for t in range(j, size - 1):
        window[t] = window[t + 1]
    return -1 if j == size - 1 or window[j] != k else 0  # its last copy?


@numba.jit(**_JIT)
def _insert(window, size, k):
    j = _count_below(window, size, k + 1) if k < _MAX_KEY else size  # after its equals
    new = 1 if j == 0 or window[j - 1] != k else 0
    for t in range(size, j, -1):
        window[t] = window[t - 1]
    window[j] = k
    return new


@numba.jit(**_JIT)
def _replace(window, size, old, k):
    if old == k:  # the same value leaves and comes: nothing changes
        return 0
    at = _count_below(window, size, old)  # window[at] == old: the first of them
    to = _count_below(window, size, k + 1) if k < _MAX_KEY else size  # after k's equals
    gone = -1 if at == size - 1 or window[at + 1] != old else 0
    new = 1 if to == 0 or window[to - 1] != k else 0  # (old ≠ k: not window[at])
    if to > at:  # k goes after old's place: the keys between move down
        for t in range(at, to - 1):
            window[t] = window[t + 1]
        window[to - 1] = k
    else:  # before it: they move up
        for t in range(at, to, -1):
            window[t] = window[t - 1]
        window[to] = k
    return gone + new


@numba.jit(**_JIT)
def _count_below(window, size, k):
    """The keys of window[0:size] below k: where k goes before its equals."""
    below = 0
    for t in range(size):
        below += window[t] < k
    return below


@numba.jit(**_SCALAR)
def _key_bits(key):
    """The bits of the value of an order key (a NaN's: the canonical NaN)."""
    return key ^ ((key >> 63) & _MAGNITUDE)


@numba.jit(**_SCALAR)
def _key_value(key):
    """The value of an order key, as a float."""
    return np.int64(_key_bits(key)).view(np.float64)


@numba.jit(**_SCALAR)
def quantile_point(n, p):
    """Where numpy's "linear" quantile at p falls among n ≥ 1 sorted values: lo, hi, t
    (:mod:`dt.window_aggregates`: h = (n − 1)·p, lo = ⌊h⌋, hi = min(lo + 1, n − 1),
    t = h − lo). A negative p = −k is the k-th greatest: lo = hi = n − k (negative when
    n < k), t = 0."""
    if p < 0:
        lo = n + int(p)
        return lo, lo, 0.0
    h = (n - 1) * p
    lo = int(np.floor(h))
    return lo, min(lo + 1, n - 1), h - lo


@numba.jit(**_SCALAR)
def linear_quantile(a, b, t):
    """numpy's ``_lerp`` between the sorted values a ≤ b at t, but a itself when a == b
    (:mod:`dt.window_aggregates`)."""
    if a == b:
        return a
    d = b - a
    return b - d * (1 - t) if t >= 0.5 else a + d * t


guard_namespace(globals())

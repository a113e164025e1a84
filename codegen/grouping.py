"""Grouping rows by key in linear time: the kernels before the keyed kernels.

Pipeline position: between the columns (:mod:`qre.runtime.keys`,
:func:`qre.runtime.tag_codes.tag_codes`) and the keyed engines
(:meth:`codegen.kernels.ArrayEngine.advance_keys`). Sorting 10M rows by key with
numpy's stable argsort takes about a second; hashing Python strings with
``pd.factorize`` about half of one. These kernels do the same work in one or two
passes over the rows:

* :func:`identity_ids` numbers the *objects* of a numpy object array by identity
  (their addresses, hashed in a Numba table) — readers of CSV and Parquet
  (pandas' parser, pyarrow's ``to_pandas``) give every distinct string one object,
  so a column of 10M keys holds a few distinct objects, and only those are then
  compared by value (by the caller, with its own rule). One object is one value,
  so numbering by identity first never merges two keys; two equal values in two
  objects are merged by the caller's pass over the distinct objects.
* :func:`group_rows` is a counting sort of key ids: the rows grouped by key, each
  key's rows in input order (what ``np.argsort(ids, kind="stable")`` gives) and
  the offsets of each key's run, as the keyed engines take them;
* :func:`block_rows` partitions the rows by blocks of consecutive key ids (a counting
  sort by block, the rows' codes and data moved with them) and :func:`merge_blocks`
  takes rows in that order back to input order: the keyed kernel then runs block by
  block with each block's per-key table in a core's cache;
* :func:`sort_groups` sorts each key's rows by time, stably (a timed run's
  processing order, :func:`qre.runtime.order.event_order`);
* :func:`is_permutation` is the engines' check of a grouping they are given;
* for timed runs (:func:`qre.runtime.timed.run_timed`): :func:`take_codes` takes the
  events' tags in processing order, :func:`tick_counts` and
  :func:`interleave_ticks` put the clock's ticks between them (the rule of
  :func:`qre.language.clock.clock_steps`), :func:`take_rows` the events' data.

Cost: :func:`identity_ids` one pass with a hash table of about 4 slots per
distinct object (it gives up, returning None, once the distinct objects pass a
limit: then hashing by value is no dearer); :func:`group_rows` two passes over the
ids and an array of k + 1 counts; :func:`sort_groups` linear on nearly sorted
times (a merge sort per key beyond); the timed kernels one pass each. All about 10
ns per row on this machine's scale (see benchmarks/end_to_end.py); the gathers
(random reads) cost most. From :data:`_PARTS_ROWS` rows the counting sort and the gathers
run in parts, one per Numba thread, side by side (0.14 → 0.06 s for 10M rows on 2 cores),
and :func:`sort_groups` in parts of whole groups.
"""

from __future__ import annotations

import ctypes
import itertools
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import partial
from typing import TypeVar

import numba
import numpy as np

from .numba_cache import guard_namespace

__all__ = ["KeyBlocks", "block_rows", "group_rows", "identity_ids", "interleave_ticks",
           "is_permutation", "lookup_codes", "merge_blocks", "side_by_side", "sort_groups",
           "take_codes", "take_rows", "tick_counts"]

T = TypeVar("T")

_JIT = {"nopython": True, "cache": True, "nogil": True}

_PARTS_ROWS = 1_000_000
"""From this many rows the scattered passes run in parts, one per Numba thread (random
reads and writes wait on memory, and two cores keep twice as many in flight)."""

_MULTIPLIER = 0x9E3779B97F4A7C15 - (1 << 64)
"""Fibonacci hashing (Knuth): the address times 2^64/φ, the high bits index the table."""


def group_rows(ids: np.ndarray, n_keys: int) -> tuple[np.ndarray, np.ndarray]:
    """The rows of each key id in 0..n_keys-1 together, in input order (a stable counting
    sort): ``order`` int64[n] and ``offsets`` int64[n_keys + 1], key g owning rows
    ``order[offsets[g]:offsets[g+1]]`` — the grouping that
    :meth:`~codegen.kernels.ArrayEngine.advance_keys` takes.

    >>> order, offsets = group_rows(np.array([1, 0, 1, 2, 0]), 3)
    >>> order.tolist(), offsets.tolist()
    ([1, 4, 0, 2, 3], [0, 2, 4, 5])
    """
    ids = np.ascontiguousarray(ids, dtype=np.int64)
    if len(ids) and (int(ids.min()) < 0 or int(ids.max()) >= n_keys):
        raise ValueError(f"key ids must be in 0..{n_keys - 1}")
    # Each part of the rows counts its keys, then writes its rows after the earlier parts'
    # rows of the same key: stable, and the parts run side by side.
    parts = _parts(len(ids))
    counts = np.zeros((len(parts), n_keys), dtype=np.int64)
    side_by_side([partial(_count_keys, ids[a:b], counts[p])
                   for p, (a, b) in enumerate(parts)])
    offsets, fill = _part_starts(counts)
    order = np.empty(len(ids), dtype=np.int64)
    side_by_side([partial(_place_rows, ids[a:b], a, fill[p], order)
                   for p, (a, b) in enumerate(parts)])
    return order, offsets


@dataclass(frozen=True)
class KeyBlocks:
    """Rows partitioned by blocks of consecutive key ids (:func:`block_rows`).

    Block b holds the keys ``b << shift`` .. ``((b + 1) << shift) − 1`` and the rows
    ``starts[b]:starts[b+1]`` of ``keys`` (each row's key id within its block), ``codes``
    and ``data``, in input order. ``fill[p, b]`` is where row part p's rows of block b
    start (the parts of :func:`_parts`), which :func:`merge_blocks` reads again."""

    shift: int
    starts: np.ndarray  # int64[blocks + 1]
    fill: np.ndarray  # int64[parts, blocks]
    keys: np.ndarray  # int64[n]
    codes: np.ndarray  # int[n], the dtype given
    data: np.ndarray  # float64[n, f]


def block_rows(ids: np.ndarray, n_keys: int, shift: int, codes: np.ndarray,
               data: np.ndarray) -> KeyBlocks:
    """The rows partitioned stably by block of keys ``ids >> shift`` (ids in 0..n_keys−1;
    a counting sort by
    block: sequential reads, one sequential write stream per block), with their codes
    and data: each block's keys then fit a per-key table in a core's cache, and the keyed
    kernel (``run_rows``) reads a block's rows in order, without a sort by key.

    >>> b = block_rows(np.array([3, 0, 2, 1]), 4, 1, np.array([5, 6, 7, 8]),
    ...                np.array([[.5], [.6], [.7], [.8]]))
    >>> b.starts.tolist(), b.keys.tolist(), b.codes.tolist()
    ([0, 2, 4], [0, 1, 1, 0], [6, 8, 5, 7])
    """
    n = len(ids)
    n_blocks = ((n_keys - 1) >> shift) + 1 if n_keys else 0
    parts = _parts(n)
    counts = np.zeros((len(parts), n_blocks), dtype=np.int64)
    side_by_side([partial(_count_blocks, ids[a:b], shift, counts[p])
                   for p, (a, b) in enumerate(parts)])
    starts, fill = _part_starts(counts)
    keys = np.empty(n, dtype=np.int64)
    block_codes = np.empty(n, dtype=codes.dtype)
    block_data = np.empty(data.shape, dtype=np.float64)
    side_by_side([partial(_place_blocks, ids[a:b], codes[a:b], data[a:b], shift,
                          fill[p].copy(), keys, block_codes, block_data)
                   for p, (a, b) in enumerate(parts)])
    return KeyBlocks(shift, starts, fill, keys, block_codes, block_data)


def merge_blocks(ids: np.ndarray, blocks: KeyBlocks, block_s: np.ndarray,
                 block_v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Rows of :func:`block_rows`' order (``block_s`` uint8[n, m], ``block_v``
    float64[n, m]) back in input order: row i is the next unread row of its block.

    >>> ids = np.array([3, 0, 2, 1])
    >>> b = block_rows(ids, 4, 1, np.zeros(4, dtype=np.int64), np.zeros((4, 0)))
    >>> s, v = merge_blocks(ids, b, np.arange(4, dtype=np.uint8)[:, None],
    ...                     np.arange(4.0)[:, None])
    >>> s[:, 0].tolist()
    [2, 0, 3, 1]
    """
    n, m = block_s.shape
    out_s, out_v = np.empty((n, m), dtype=np.uint8), np.empty((n, m))
    side_by_side([partial(_merge_blocks, ids[a:b], blocks.shift, blocks.fill[p].copy(),
                          block_s, block_v, out_s[a:b], out_v[a:b])
                   for p, (a, b) in enumerate(_parts(n))])
    return out_s, out_v


def sort_groups(order: np.ndarray, offsets: np.ndarray, values: np.ndarray, *,
                copy: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """Each group's rows (``order[offsets[g]:offsets[g+1]]``, as :func:`group_rows` gives
    them) sorted by ``values`` (int64 or float64 at the rows, no NaN), stably: rows of
    equal values keep their order. Returns the sorted order (``order`` itself, sorted in
    place, with ``copy=False`` if it is a contiguous int64 array), ``run_start`` bool[n],
    True where a position starts a run of rows equal in group and value, and the values
    in that order (int64, or float64 for float values).

    With the groups in input order this is ``np.lexsort([values, group])`` (stable by
    group, then value, then position), in a pass over the groups: an insertion sort,
    linear on the nearly sorted times of event logs, that hands a group over to a merge
    sort once it has moved more than a few rows per row.

    >>> order, start, values = sort_groups(np.array([1, 4, 0, 2, 3]), np.array([0, 2, 5]),
    ...                                    np.array([7, 9, 5, 5, 9]))
    >>> order.tolist(), start.tolist(), values.tolist()
    ([1, 4, 2, 3, 0], [True, False, True, False, True], [9, 9, 5, 5, 7])
    """
    # Sorted in place: a copy unless the caller gives its own int64 order (copy=False).
    order = np.array(order, dtype=np.int64, copy=copy or None)
    values = values.astype(np.float64 if values.dtype.kind == "f" else np.int64, copy=False)
    offsets = np.ascontiguousarray(offsets, dtype=np.int64)
    sorted_values = np.empty(len(order), dtype=values.dtype)
    run_start = np.ones(len(order), dtype=bool)
    # In parts of whole groups (about as many rows each), side by side.
    cuts = np.unique(np.searchsorted(offsets, [b for _, b in _parts(len(order))[:-1]]))
    bounds = [0, *cuts.tolist(), len(offsets) - 1]
    side_by_side([partial(_sort_groups, order[offsets[g0]:offsets[g1]],
                           offsets[g0:g1 + 1] - offsets[g0], values,
                           sorted_values[offsets[g0]:offsets[g1]],
                           run_start[offsets[g0]:offsets[g1]])
                   for g0, g1 in itertools.pairwise(bounds) if g1 > g0] or [lambda: None])
    return order, run_start, sorted_values


def take_codes(codes: np.ndarray, order: np.ndarray) -> np.ndarray:
    """``codes[order]`` (any integer dtype), in parts side by side.

    >>> take_codes(np.array([8, 9], dtype=np.int8), np.array([1, 0, 1])).tolist()
    [9, 8, 9]
    """
    out = np.empty(len(order), dtype=codes.dtype)
    side_by_side([partial(_take_codes, codes, order[a:b], out[a:b])
                   for a, b in _parts(len(order))])
    return out


def tick_counts(key: np.ndarray, time: np.ndarray, period: int, horizon: int | None,
                until: int | None, session: bool = False
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For events sorted by key, then time (int64): each one's tick base
    (:func:`qre.language.clock.tick_base`: ⌊time / period⌋·period, or the time itself for
    a ``session`` clock) and the clock ticks before and after it, by the rule of
    :func:`qre.language.clock.clock_steps` (which does the same in numpy): ticks before
    an event at base + period, base + 2·period, ... from its key's previous event's
    base, after a key's last event up to ``until`` (None: ``horizon`` ticks; no horizon:
    none), at most ``horizon`` in a row (None: no bound). Returns int64 ``base``,
    ``before``, ``after``.

    >>> [a.tolist() for a in tick_counts(np.array([0, 0]), np.array([3, 25]), 10, None, None)]
    [[0, 20], [0, 2], [0, 0]]
    """
    out = tuple(np.empty(len(key), dtype=np.int64) for _ in range(3))
    _tick_counts(np.ascontiguousarray(key, dtype=np.int64),
                 np.ascontiguousarray(time, dtype=np.int64), period,
                 -1 if horizon is None else horizon, 0 if until is None else until,
                 until is not None, session, *out)
    return out


def interleave_ticks(order: np.ndarray, key: np.ndarray, time: np.ndarray, codes: np.ndarray,
                     counts: tuple[np.ndarray, np.ndarray, np.ndarray], tick_code: int,
                     period: int, n_keys: int) -> tuple[np.ndarray, ...]:
    """The steps of a timed run, events and ticks, grouped by key: ``order`` the events'
    input rows in processing order, sorted by key (``key``, ids below ``n_keys``), then
    time (``time``), with their tag codes ``codes``; ``counts`` the bases and ticks of
    :func:`tick_counts`. Returns ``rows`` (each step's input row, −1 for a tick),
    ``times`` (a tick's boundary), ``step_codes`` (``tick_code`` for a tick) and
    ``offsets`` int64[n_keys + 1]: key g owns steps ``offsets[g]:offsets[g+1]``.

    >>> rows, times, tags, offsets = interleave_ticks(
    ...     np.array([1, 0]), np.array([0, 0]), np.array([3, 25]), np.array([6, 5]),
    ...     (np.array([0, 20]), np.array([0, 2]), np.array([0, 0])), 9, 10, 1)
    >>> rows.tolist(), times.tolist(), tags.tolist(), offsets.tolist()
    ([1, -1, -1, 0], [3, 10, 20, 25], [6, 9, 9, 5], [0, 4])
    """
    base, before, after = counts
    total = len(order) + int(before.sum()) + int(after.sum())
    out = (np.empty(total, dtype=np.int64), np.empty(total, dtype=np.int64),
           np.empty(total, dtype=codes.dtype), np.zeros(n_keys + 1, dtype=np.int64))
    _interleave_ticks(order, key, time, codes, base, before, after,
                      codes.dtype.type(tick_code), period, *out)
    return out


def lookup_codes(rows: np.ndarray, lookup: np.ndarray) -> tuple[np.ndarray, int]:
    """``lookup[rows]`` (rows int64 in 0..len(lookup)−1, e.g. the object numbers of
    :func:`identity_ids`) and the first position whose code is negative, −1 if none: a
    tag column's codes from its distinct objects' codes, and where the first unknown tag
    is, in one pass (numpy's gather and a scan for negatives take three times as long).

    >>> codes, first = lookup_codes(np.array([1, 0, 1]), np.array([2, -1]))
    >>> codes.tolist(), first
    ([-1, 2, -1], 0)
    """
    rows = np.ascontiguousarray(rows, dtype=np.int64)
    lookup = np.ascontiguousarray(lookup)  # its integer dtype: the codes'
    out = np.empty(len(rows), dtype=lookup.dtype)
    first, outside = _lookup_codes(rows, lookup, out)
    if outside >= 0:
        raise ValueError(f"row {int(rows[outside])} at position {outside} is outside the "
                         f"lookup's 0..{len(lookup) - 1}")
    return out, int(first)


def take_rows(column: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """``column[rows]`` as float64, NaN where a row is −1 (a tick's data).

    >>> take_rows(np.array([1.5, 2.5]), np.array([1, -1, 0])).tolist()
    [2.5, nan, 1.5]
    """
    out = np.empty(len(rows), dtype=np.float64)
    side_by_side([partial(_take_rows, column, rows[a:b], out[a:b])
                   for a, b in _parts(len(rows))])
    return out


def _parts(n: int) -> list[tuple[int, int]]:
    """Rows 0..n-1 in parts: one per Numba thread from :data:`_PARTS_ROWS` rows, else one."""
    parts = numba.get_num_threads() if n >= _PARTS_ROWS else 1
    return list(itertools.pairwise(n * j // parts for j in range(parts + 1)))


def side_by_side(calls: list[Callable[[], T]]) -> list[T]:
    """The calls' results, the calls run in threads side by side (they should spend their
    time where the GIL is released: these kernels, Numba passes), the first in this
    thread. An error of the first is raised once the others are done, before theirs."""
    if len(calls) == 1:
        return [calls[0]()]
    with ThreadPoolExecutor(max_workers=len(calls) - 1, thread_name_prefix="qre-parts") as pool:
        rest = [pool.submit(call) for call in calls[1:]]
        first = calls[0]()
        return [first, *(done.result() for done in rest)]


def is_permutation(order: np.ndarray) -> bool:
    """Whether int64 ``order`` holds each of 0..n-1 once (one pass, a byte per row).

    >>> is_permutation(np.array([2, 0, 1])), is_permutation(np.array([0, 0, 2]))
    (True, False)
    """
    return bool(_is_permutation(np.ascontiguousarray(order, dtype=np.int64)))


def identity_ids(objects: np.ndarray, max_distinct: int) -> tuple[np.ndarray, np.ndarray] | None:
    """Each entry of an object array numbered by the identity of its object, 0, 1, … in
    order of first appearance, and the first row of each number; None once more than
    ``max_distinct`` objects are distinct (the caller then hashes by value).

    >>> a, b = "x" * 3, "y" * 3
    >>> ids, first = identity_ids(np.array([a, b, a, a], dtype=object), 10)
    >>> ids.tolist(), first.tolist()
    ([0, 1, 0, 0], [0, 1])
    """
    if objects.dtype != object or objects.ndim != 1:
        raise TypeError("identity_ids takes a one-dimensional object array")
    if np.dtype(object).itemsize != 8:  # pointers that are not 64-bit: hash by value
        return None
    objects = np.ascontiguousarray(objects)
    n = len(objects)
    if n == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    # The array's buffer is its PyObject pointers; read it as integers. ``objects`` stays
    # referenced (and unchanged) for the whole call, so every address names a live object.
    buffer = (ctypes.c_int64 * n).from_address(objects.ctypes.data)
    addresses = np.frombuffer(buffer, dtype=np.int64)
    ids = np.empty(n, dtype=np.int64)
    first, count = _identity_ids(addresses, max_distinct, ids)
    return (ids, first[:count]) if count >= 0 else None


@numba.jit(**_JIT)
def _count_keys(ids, counts):
    for i in range(ids.shape[0]):
        counts[ids[i]] += 1


@numba.jit(**_JIT)
def _part_starts(counts):
    """Where each group's rows start (offsets) and where each part's rows of it start (a
    group: a key for :func:`group_rows`, a block of keys for :func:`block_rows`)."""
    parts, n_keys = counts.shape
    offsets = np.zeros(n_keys + 1, dtype=np.int64)
    fill = np.empty((parts, n_keys), dtype=np.int64)
    at = 0
    for g in range(n_keys):
        offsets[g] = at
        for p in range(parts):
            fill[p, g] = at
            at += counts[p, g]
    offsets[n_keys] = at
    return offsets, fill


@numba.jit(**_JIT)
def _place_rows(ids, first_row, fill, order):
    for i in range(ids.shape[0]):
        g = ids[i]
        order[fill[g]] = first_row + i
        fill[g] += 1


@numba.jit(**_JIT)
def _count_blocks(ids, shift, counts):
    for i in range(ids.shape[0]):
        counts[ids[i] >> shift] += 1


@numba.jit(**_JIT)
def _place_blocks(ids, codes, data, shift, fill, keys, codes_out, data_out):
    low = (1 << shift) - 1
    for i in range(ids.shape[0]):
        g = ids[i]
        b = g >> shift
        j = fill[b]
        fill[b] = j + 1
        keys[j] = g & low
        codes_out[j] = codes[i]
        for c in range(data.shape[1]):
            data_out[j, c] = data[i, c]


@numba.jit(**_JIT)
def _merge_blocks(ids, shift, fill, block_s, block_v, out_s, out_v):
    for i in range(ids.shape[0]):
        b = ids[i] >> shift
        j = fill[b]
        fill[b] = j + 1
        for c in range(out_s.shape[1]):
            out_s[i, c] = block_s[j, c]
            out_v[i, c] = block_v[j, c]


# Outputs are allocated by numpy and filled here: numpy asks the kernel for huge pages
# for large arrays, which take a tenth of the page faults (take_rows: 0.10 s against
# 0.14 s for 16M rows allocated by Numba).


@numba.jit(**_JIT)
def _sort_groups(order, offsets, values, v, run_start):
    for i in range(order.shape[0]):
        v[i] = values[order[i]]
    for g in range(offsets.shape[0] - 1):
        lo, hi = offsets[g], offsets[g + 1]
        budget, moved = 4 * (hi - lo) + 64, 0
        for i in range(lo + 1, hi):
            x, r, j = v[i], order[i], i
            while j > lo and v[j - 1] > x:
                v[j], order[j] = v[j - 1], order[j - 1]
                j -= 1
            v[j], order[j] = x, r
            moved += i - j
            if moved > budget:  # far from sorted: a stable merge sort of the rest
                by = np.argsort(v[lo:hi], kind="mergesort")
                order[lo:hi] = order[lo:hi][by]
                v[lo:hi] = v[lo:hi][by]
                break
        for i in range(lo + 1, hi):
            run_start[i] = v[i] != v[i - 1]


@numba.jit(**_JIT)
def _take_codes(codes, order, out):
    for i in range(order.shape[0]):
        out[i] = codes[order[i]]


@numba.jit(**_JIT)
def _tick_counts(key, time, period, horizon, until, has_until, session, base, before, after):
    n = key.shape[0]
    for i in range(n):
        base[i] = time[i] if session else time[i] // period * period  # floor, as numpy's
        same_key = i > 0 and key[i] == key[i - 1]
        before[i] = (time[i] - base[i - 1]) // period if same_key else 0
        after[i] = 0
        if i == n - 1 or key[i + 1] != key[i]:
            if has_until:
                after[i] = max((until - base[i]) // period, 0)
            elif horizon >= 0:
                after[i] = horizon
        if horizon >= 0:
            before[i] = min(before[i], horizon)
            after[i] = min(after[i], horizon)


@numba.jit(**_JIT)
def _interleave_ticks(order, key, time, codes, base, before, after, tick_code, period, rows,
                      times, step_codes, offsets):
    # Reads and writes in order only: a random read here (codes[order[i]]) would stall the
    # loop, whose tick counts branch on every event (0.5 s instead of 0.13 s for 16M steps).
    s = 0
    for i in range(order.shape[0]):
        for j in range(before[i]):  # ticks since the key's previous event
            rows[s], times[s], step_codes[s] = -1, base[i - 1] + (1 + j) * period, tick_code
            s += 1
        rows[s], times[s], step_codes[s] = order[i], time[i], codes[i]
        s += 1
        for j in range(after[i]):  # ticks after the key's last event
            rows[s], times[s], step_codes[s] = -1, base[i] + (1 + j) * period, tick_code
            s += 1
        offsets[key[i] + 1] += before[i] + 1 + after[i]
    for g in range(offsets.shape[0] - 1):
        offsets[g + 1] += offsets[g]


@numba.jit(**_JIT)
def _lookup_codes(rows, lookup, out):
    first = -1
    for i in range(rows.shape[0]):
        r = rows[i]
        if r < 0 or r >= lookup.shape[0]:
            return first, i
        out[i] = lookup[r]
        if out[i] < 0 and first < 0:
            first = i
    return first, -1


@numba.jit(**_JIT)
def _take_rows(column, rows, out):
    for s in range(rows.shape[0]):
        out[s] = np.nan if rows[s] < 0 else column[rows[s]]


@numba.jit(**_JIT)
def _is_permutation(order):
    n = order.shape[0]
    seen = np.zeros(n, dtype=np.bool_)
    for i in range(n):
        r = order[i]
        if r < 0 or r >= n or seen[r]:
            return False
        seen[r] = True
    return True


@numba.jit(**_JIT)
def _slot(address, shift):
    # Objects are 16-byte aligned: the low bits carry nothing.
    return ((address >> 4) * _MULTIPLIER) >> shift & ((1 << (64 - shift)) - 1)


@numba.jit(**_JIT)
def _identity_ids(addresses, max_distinct, ids):
    """Open addressing with linear probing in one table of (address, number) pairs —
    a probe reads one cache line, not one per array —, grown fourfold when half full.
    Writes ``ids`` (allocated by the caller: numpy's large arrays get huge pages, and
    first touching 80 MB of small pages costs more than the hashing); returns (first
    rows, count), count −1 if more than max_distinct objects are distinct.

    Without the GIL (the caller may hash two columns at once): the addresses are only
    compared, never dereferenced, and the caller holds the array for the whole call."""
    n = addresses.shape[0]
    bits = 10
    table = np.zeros(2 << bits, dtype=np.int64)  # address 0: an empty slot (no object is at 0)
    first = np.empty(min(n, max_distinct + 1), dtype=np.int64)
    count = 0
    mask, shift = (1 << bits) - 1, 64 - bits
    for i in range(n):
        address = addresses[i]
        s = _slot(address, shift)
        while True:  # each slot read once: the common case, a hit, is one load and a test
            seen = table[2 * s]
            if seen == address:
                ids[i] = table[2 * s + 1]
                break
            if seen == 0:
                if count == max_distinct:
                    return first, -1
                table[2 * s], table[2 * s + 1] = address, count
                ids[i], first[count] = count, i
                count += 1
                if 2 * count > (1 << bits):
                    bits += 2
                    table = _rehash(table, bits)
                    mask, shift = (1 << bits) - 1, 64 - bits
                break
            s = (s + 1) & mask
    return first, count


@numba.jit(**_JIT)
def _rehash(table, bits):
    new = np.zeros(2 << bits, dtype=np.int64)
    mask = (1 << bits) - 1
    for j in range(table.shape[0] // 2):
        if table[2 * j] != 0:
            s = _slot(table[2 * j], 64 - bits)
            while new[2 * s] != 0:
                s = (s + 1) & mask
            new[2 * s], new[2 * s + 1] = table[2 * j], table[2 * j + 1]
    return new


guard_namespace(globals())

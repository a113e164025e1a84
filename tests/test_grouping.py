"""The grouping kernels (codegen.grouping) against plain Python, and the long-column paths
of tag codes, event order and timed runs that use them (issue 20: fast end to end).

Oracles: ``id()`` for identity numbering, a stable sort for grouping and ordering, numpy's
clock steps (:func:`qre.language.clock.clock_steps`) for the ticks, the short-column paths
(pandas, numpy) for tag codes and their errors and for timed runs.
"""

from __future__ import annotations

import math
from unittest.mock import patch

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

import codegen.grouping as grouping_module
from codegen.grouping import (
    block_rows,
    group_rows,
    identity_ids,
    interleave_ticks,
    is_permutation,
    merge_blocks,
    sort_groups,
    take_codes,
    take_rows,
    tick_counts,
)
from qre import qre
from qre.language.clock import clock_steps
from qre.runtime import keys as keys_module
from qre.runtime.tag_codes import tag_codes

# Distinct objects, some of equal value ("a" built twice is two objects of one value).
POOL = ["a", "".join(["a"]), "b", None, math.nan, float("nan"), 1, 1.0, -0.0, 0.0, (1, 2)]


@st.composite
def object_columns(draw):  # type: ignore[no-untyped-def]
    picks = draw(st.lists(st.integers(0, len(POOL) - 1), max_size=60))
    column = np.empty(len(picks), dtype=object)
    column[:] = [POOL[k] for k in picks]
    return column


@given(object_columns(), st.integers(0, 12))
def test_identity_ids_number_objects_in_order_of_first_appearance(column, limit):
    numbers: dict[int, int] = {}
    first = []
    for row, x in enumerate(column):
        if id(x) not in numbers:
            numbers[id(x)] = len(numbers)
            first.append(row)
    got = identity_ids(column, limit)
    if len(numbers) > limit:
        assert got is None
        return
    assert got is not None
    assert got[0].tolist() == [numbers[id(x)] for x in column]
    assert got[1].tolist() == first


def test_identity_ids_grow_their_table_and_take_strided_columns():
    """Past the first table's 512 entries (it grows fourfold, rehashing), on a view."""
    objects = np.array([f"k{j}" for j in range(5000)], dtype=object)
    rows = np.random.default_rng(0).integers(0, 5000, 40_000)
    column = np.empty(2 * len(rows), dtype=object)
    column[::2] = objects[rows]
    ids, first = identity_ids(column[::2], 10_000)
    assert np.array_equal(objects[rows][first][ids], objects[rows])
    assert np.array_equal(ids, pd.factorize(objects[rows])[0])


@given(st.lists(st.integers(0, 6), max_size=80), st.sampled_from([1, 2, 3]))
def test_group_rows_is_a_stable_sort_by_key(ids, threads):
    """In one part, or in parts side by side (each counts, then places its rows after the
    earlier parts' rows of a key)."""
    ids = np.array(ids, dtype=np.int64)
    n_keys = int(ids.max(initial=-1)) + 1
    with patch.object(grouping_module, "_PARTS_ROWS", 1), \
            patch.object(grouping_module.numba, "get_num_threads", lambda: threads):
        order, offsets = group_rows(ids, n_keys)
    assert order.tolist() == np.argsort(ids, kind="stable").tolist()
    assert offsets.tolist() == [0, *np.cumsum(np.bincount(ids, minlength=n_keys)).tolist()]


@given(st.lists(st.integers(0, 9), max_size=80), st.integers(0, 4), st.sampled_from([1, 2, 3]))
def test_block_rows_partitions_stably_and_merge_blocks_undoes_it(ids, shift, threads):
    """Block b's rows are the rows of keys b·2^shift.. in input order, with their key within
    the block, code and data; merge_blocks takes rows in that order back to input order."""
    ids = np.array(ids, dtype=np.int64)
    codes = np.arange(len(ids), dtype=np.int64)  # the row itself
    data = np.stack([codes * 0.5, -codes * 1.0], axis=1)
    with patch.object(grouping_module, "_PARTS_ROWS", 1), \
            patch.object(grouping_module.numba, "get_num_threads", lambda: threads):
        n_keys = int(ids.max(initial=-1)) + 1
        blocks = block_rows(ids, n_keys, shift, codes, data)
        rows = np.argsort(ids >> shift, kind="stable")
        assert blocks.codes.tolist() == rows.tolist()
        assert blocks.data.tolist() == data[rows].tolist()
        assert blocks.keys.tolist() == (ids[rows] & ((1 << shift) - 1)).tolist()
        n_blocks = (int(ids.max(initial=-1)) >> shift) + 1
        assert blocks.starts.tolist() == [
            0, *np.cumsum(np.bincount(ids >> shift, minlength=n_blocks)).tolist()]
        block_s = np.stack([blocks.codes % 251, blocks.codes % 7], axis=1).astype(np.uint8)
        out_s, out_v = merge_blocks(ids, blocks, block_s, blocks.data)
    assert out_s.tolist() == np.stack([codes % 251, codes % 7], axis=1).tolist()
    assert out_v.tolist() == data.tolist()


def test_group_rows_refuses_ids_out_of_range():
    with pytest.raises(ValueError, match=r"key ids must be in 0\.\.1"):
        group_rows(np.array([0, 2]), 2)


@given(st.lists(st.integers(-1, 6), max_size=8))
def test_is_permutation(order):
    assert is_permutation(np.array(order, dtype=np.int64)) == \
        (sorted(order) == list(range(len(order))))


TAGS = ["a", "".join(["a"]), "b", "c", None, math.nan, 3]


@given(st.lists(st.sampled_from(TAGS), min_size=1, max_size=30), st.booleans())
def test_long_tag_columns_give_the_codes_and_errors_of_short_ones(tags, skip):
    column = np.empty(len(tags), dtype=object)
    column[:] = tags

    def codes():  # type: ignore[no-untyped-def]
        try:
            return tag_codes(column, ("a", "b"), skip_unknown=skip).tolist()
        except ValueError as e:
            return str(e)

    short = codes()
    with patch.object(keys_module, "NUMBA_ROWS", 0):
        assert codes() == short


@given(st.lists(st.tuples(st.integers(0, 2), st.integers(-4, 4)), max_size=120),
       st.booleans(), st.booleans(), st.sampled_from([1, 2, 3]))
def test_sort_groups_is_a_stable_sort_by_group_then_value(rows, descending, floats, threads):
    """Ties, and groups far from sorted (descending: past the insertion sort's budget, the
    merge sort's turn); in one part, or in parts of whole groups side by side."""
    ids = np.array([g for g, _ in rows], dtype=np.int64)
    values = np.array([-t if descending else t for _, t in rows],
                      dtype=np.float64 if floats else np.int64)
    with patch.object(grouping_module, "_PARTS_ROWS", 1), \
            patch.object(grouping_module.numba, "get_num_threads", lambda: threads):
        order, start, sorted_values = sort_groups(*group_rows(ids, 3), values)
    want = np.lexsort([values, ids])
    assert order.tolist() == want.tolist()
    assert sorted_values.tolist() == values[want].tolist()
    runs = np.stack([ids[want], values[want]], axis=1)
    assert start.tolist() == [True, *(runs[1:] != runs[:-1]).any(axis=1).tolist()][:len(rows)]


@given(st.lists(st.tuples(st.integers(0, 2), st.integers(-30, 30)), max_size=20),
       st.integers(1, 7), st.sampled_from([None, 1, 3]), st.sampled_from([None, -5, 0, 40]))
def test_interleaved_ticks_are_the_clock_steps(events, period, horizon, until):
    events.sort()
    key = np.array([k for k, _ in events], dtype=np.int64)
    time = np.array([t for _, t in events], dtype=np.int64)
    order = np.arange(len(events))[::-1].copy()  # the input rows, in processing order
    codes = order % 3  # the events' tag codes, in processing order
    want = clock_steps(key, time, period, horizon, until)
    counts = tick_counts(key, time, period, horizon, until)
    rows, times, step_codes, offsets = interleave_ticks(order, key, time, codes, counts, 7,
                                                        period, 3)
    assert rows.tolist() == np.where(want.event >= 0, order[want.event], -1).tolist()
    assert times.tolist() == want.time.tolist()
    assert step_codes.tolist() == np.where(want.event < 0, 7, codes[want.event]).tolist()
    assert offsets.tolist() == np.searchsorted(want.key, np.arange(4)).tolist()


@pytest.mark.parametrize("parts_from", [10**9, 2])  # in one call; in parts, in threads
def test_take_codes_and_take_rows_take_what_they_say(parts_from):
    order = np.array([2, 0, 1])
    with patch.object(grouping_module, "_PARTS_ROWS", parts_from), \
            patch.object(grouping_module.numba, "get_num_threads", lambda: 2):
        for codes in (np.array([5, 6, 7]), np.array([0, 1, 1], np.int8)):
            got = take_codes(codes, order)
            assert got.dtype == codes.dtype and got.tolist() == codes[order].tolist()
        assert take_rows(np.array([1.5, 2.5]), np.array([-1, 1, 0])).tolist()[1:] == [2.5, 1.5]


TIMED = ["alphabet a, b; aggregate(sum(cur.x), 6s, 2s)",
         "alphabet a, b; aggregate(count(), 4s, 2s, [a])",
         "alphabet a, b; matched(within(seq(a, b), 3s))",
         "alphabet a, b; period 2s; iter(or(atom(a, cur.x), atom(tick, 1)), 0, +)",
         "alphabet a, b; iter(atom(_, cur.time + cur.x), 0, +)"]


@given(st.lists(st.tuples(st.sampled_from([0, 1, "k"]), st.integers(-6, 12),
                          st.sampled_from("abc"), st.sampled_from([0.0, -0.0, 1.5, np.nan])),
                max_size=25),
       st.sampled_from(TIMED), st.sampled_from([None, 14]), st.booleans(), st.booleans())
def test_long_timed_runs_give_the_rows_of_short_ones(events, text, watermark, keep, dedup):
    """run_timed's Numba paths (event order, ticks, step data) against its numpy
    paths, on every column of the result."""
    key, t, tag, x = (list(c) for c in zip(*events, strict=True)) if events else ([], [], [],
                                                                                 [])
    m = qre(text)

    def run() -> pd.DataFrame:
        return m.run_timed(np.array(t, dtype=np.int64), tag, {"x": x}, keys=key,
                           watermark=watermark, undefined="keep" if keep else "drop",
                           dedup=dedup, unknown_tags="skip", engine="codegen")

    short = run()
    with patch.object(keys_module, "NUMBA_ROWS", 0):
        pd.testing.assert_frame_equal(run(), short)

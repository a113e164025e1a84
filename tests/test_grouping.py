"""The grouping kernels (codegen.grouping) against plain Python, and the long-column paths
of tag codes that use them (issue 20: fast end to end).

Oracles: ``id()`` for identity numbering, a stable sort for grouping and ordering, the
short-column path (pandas) for tag codes and their errors.
"""

from __future__ import annotations

import math
from unittest.mock import patch

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

from codegen.grouping import group_rows, identity_ids, is_permutation, sort_groups
from qre.runtime import keys as keys_module
from qre.runtime.monitor import tag_codes

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


@given(st.lists(st.integers(0, 6), max_size=80))
def test_group_rows_is_a_stable_sort_by_key(ids):
    ids = np.array(ids, dtype=np.int64)
    n_keys = int(ids.max(initial=-1)) + 1
    order, offsets = group_rows(ids, n_keys)
    assert order.tolist() == np.argsort(ids, kind="stable").tolist()
    assert offsets.tolist() == [0, *np.cumsum(np.bincount(ids, minlength=n_keys)).tolist()]


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
       st.booleans(), st.booleans())
def test_sort_groups_is_a_stable_sort_by_group_then_value(rows, descending, floats):
    """Ties, and groups far from sorted (descending: past the insertion sort's budget, the
    merge sort's turn)."""
    ids = np.array([g for g, _ in rows], dtype=np.int64)
    values = np.array([-t if descending else t for _, t in rows],
                      dtype=np.float64 if floats else np.int64)
    order, start = sort_groups(*group_rows(ids, 3), values)
    want = np.lexsort([values, ids])
    assert order.tolist() == want.tolist()
    runs = np.stack([ids[want], values[want]], axis=1)
    assert start.tolist() == [True, *(runs[1:] != runs[:-1]).any(axis=1).tolist()][:len(rows)]

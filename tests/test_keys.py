"""Key identity (issue 19, points 1 and 2): which rows form one stream, qre.runtime.keys' rule.

The oracle is tests/key_oracle.py's, independent of qre.runtime.keys (no pandas): a
token per key by the documented rule, each token's rows in time order through
``Monitor.run``. Every container a user may hold keys in (a list, Arrow, pandas'
nullable arrays) goes through ``stream_ids``, ``run_keys`` and ``run_timed``; Spark's
entry points are checked against the same oracle in tests/test_spark_keys.py.
"""

from __future__ import annotations

import itertools
import math
from unittest.mock import patch

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given
from key_oracle import BIG, DIGITS, containers, keyed_rows, oracle, token

from qre.runtime import keys as keys_module
from qre.runtime.keys import same_key, stream_ids


def both_paths():  # type: ignore[no-untyped-def]
    """Short columns take pandas' and numpy's paths, long ones (≥ NUMBA_ROWS) number
    objects by identity and group rows in Numba: run each check on both."""
    yield "short"
    with patch.object(keys_module, "NUMBA_ROWS", 0):
        yield "long"


@given(keyed_rows())
def test_stream_ids_follow_the_rule(case) -> None:  # type: ignore[no-untyped-def]
    kind, keys, *_ = case
    for (name, column), path in itertools.product(containers(kind, keys).items(),
                                                  both_paths()):
        name = f"{name}, {path}"
        ids, values = stream_ids(column)
        for i in range(len(keys)):
            assert token(values[ids[i]]) == token(keys[i]), name  # each row's key, exactly
            for j in range(len(keys)):
                assert (ids[i] == ids[j]) == (token(keys[i]) == token(keys[j])), name
                assert same_key(keys[i], keys[j]) == (token(keys[i]) == token(keys[j]))
        firsts = [ids[i] for i in range(len(keys)) if ids[i] not in ids[:i]]
        assert firsts == list(range(len(firsts)))  # numbered by first appearance


@given(keyed_rows())
def test_run_keys_and_run_timed_keep_streams_apart(case) -> None:  # type: ignore[no-untyped-def]
    kind, keys, times, tags, values = case
    want_status, want_value = oracle(keys, times, tags, values)
    for (name, column), path in itertools.product(containers(kind, keys).items(),
                                                  both_paths()):
        name = f"{name}, {path}"
        in_order = oracle(keys, None, tags, values)
        for engine in ("table", "codegen"):  # codegen runs rows in input order (run_rows)
            untimed = DIGITS.run_keys(column, tags, values, engine=engine)
            assert untimed.status.tolist() == in_order[0], (name, engine)
            np.testing.assert_array_equal(untimed.value, in_order[1], err_msg=name)
        out = DIGITS.run_keys(column, tags, values, times=times)
        assert out.status.tolist() == want_status, name
        np.testing.assert_array_equal(out.value, want_value, err_msg=name)
        rows = DIGITS.run_timed(times, tags, values, keys=column)
        assert sorted(rows["row"]) == list(range(len(keys)))
        at = rows["row"].to_numpy()
        np.testing.assert_array_equal(rows["value"], np.array(want_value)[at], err_msg=name)
        # Each emitted row carries its stream's key, exactly (the missing key as None).
        assert [token(k) for k in rows["key"]] == [token(keys[r]) for r in at], name


def test_nan_and_missing_keys_are_two_streams_in_time_order() -> None:
    """The issue's example: NaN at t = 1 and 3, a null at t = 2 (merged before: 1, 15, 157)."""
    keys = [math.nan, None, math.nan]
    out = DIGITS.run_keys(keys, ["a"] * 3, [1.0, 5.0, 7.0], times=[1, 2, 3])
    assert out.value.tolist() == [1.0, 5.0, 17.0]
    rows = DIGITS.run_timed([1, 2, 3], ["a"] * 3, [1.0, 5.0, 7.0],
                            keys=pa.array(keys, type=pa.float64(), from_pandas=False))
    assert rows["value"].tolist() == [1.0, 17.0, 5.0]
    assert rows["key"].iloc[2] is None and math.isnan(rows["key"].iloc[0])


def test_long_keys_beyond_2_53_with_a_null_stay_apart() -> None:
    """The issue's example: an Arrow long column with a null becomes floats in pandas,
    which merged 2**53 and 2**53 + 1 (11.0 for the second instead of 10.0)."""
    keys = pa.array([BIG, BIG + 1, None])
    out = DIGITS.run_keys(keys, ["a"] * 3, [1.0, 10.0, 5.0], times=[1, 2, 3])
    assert out.value.tolist() == [1.0, 10.0, 5.0]
    rows = DIGITS.run_timed([1, 2, 3], ["a"] * 3, [1.0, 10.0, 5.0], keys=keys)
    assert rows["key"].tolist() == [BIG, BIG + 1, None]


def test_unhashable_keys_are_refused() -> None:
    with pytest.raises(TypeError, match="keys must be hashable"):
        DIGITS.run_keys([[1], [2]], ["a", "a"], [1.0, 2.0])


def test_keys_numbered_beside_the_tags_report_the_tags_error_first() -> None:
    """run_keys numbers a long key column in a thread while the tags are coded
    (stream_ids_beside): on both paths a bad tag is reported before bad keys, and good
    keys come out as stream_ids gives them."""
    keys = np.array(["u", "v", "u"], dtype=object)
    for _ in both_paths():
        with pytest.raises(ValueError, match="unknown tag 'x'"):
            DIGITS.run_keys([[1], [2], [3]], ["x", "x", "x"], [1.0, 2.0, 3.0])
        (ids, values), done = keys_module.stream_ids_beside(keys, lambda: "work")
        assert ids.tolist() == [0, 1, 0] and values.tolist() == ["u", "v"] and done == "work"
        with pytest.raises(TypeError, match="keys must be hashable"):
            keys_module.stream_ids_beside([[1], [2]], lambda: None)

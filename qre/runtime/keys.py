"""Key identity: which rows form one stream (issue 19, point 2).

Pipeline position: before the order of events (:mod:`qre.runtime.order`), wherever
events carry a key — :meth:`qre.Monitor.run_keys`, :meth:`~qre.Monitor.run_timed`,
``qre run --key``, and on Spark the per-batch grouping of ``monitor_frame`` and
``monitor_timed`` (Spark's own ``groupBy`` and ``repartition`` already group this
way, so streams and the ``"grouped"`` method agree without this module).

The rule. Two rows belong to one stream when their keys are equal:

* values compare as Python compares them (``1``, ``1.0`` and ``True`` are one key
  in a column of Python objects; a typed column never mixes them), and ``-0.0``
  equals ``0.0``;
* NaN is a key like any other value: every NaN is one key;
* a missing key — ``None``, a null, ``pd.NA``, ``NaT`` — is one key of its own,
  **different from NaN**.

Why this rule: it is Spark's (``groupBy`` and hash partitioning put all nulls in
one group, NaN in another, and normalize ``-0.0`` to ``0.0``), which this
package cannot change, and it keeps apart what the data tells apart: NaN is a
value, null is the absence of one. pandas would merge them (``factorize``
treats None and NaN alike), so they are separated here; a pandas float column
that holds NaN for its missing entries (what pandas makes of a null) gives
one NaN stream, as its data says.

Exactness: keys are compared as the column holds them, never through a float
cast: Arrow integers with nulls become pandas' nullable integers, not floats
(2**53 + 1 stays apart from 2**53), Arrow floats with nulls a masked ``Float64``
(:func:`qre.runtime.columns.column` with ``exact=True``).

Cost: one ``pd.factorize`` of the column in its own dtype (hashing in C); a long
object column is first numbered by object identity (:func:`distinct_objects`, a
Numba pass over the addresses) and only its distinct objects are hashed by value;
an object column holding missing entries pays one Python check per missing entry.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, TypeVar

import numpy as np
import pandas as pd

from . import columns

__all__ = ["NUMBA_ROWS", "distinct_objects", "group_by_key", "is_missing", "key_offsets",
           "key_streams", "same_key", "stream_ids", "stream_ids_beside"]

T = TypeVar("T")

NUMBA_ROWS = 100_000
"""From this many rows, object columns are numbered by identity first
(:func:`distinct_objects`), rows are grouped by a Numba counting sort
(:func:`group_by_key`) and tag codes checked in one Numba pass
(:func:`qre.runtime.tag_codes.tag_codes`); shorter columns take pandas' and numpy's
paths, without importing Numba (milliseconds either way)."""


def stream_ids(keys: Any) -> tuple[np.ndarray, np.ndarray]:
    """One stream id per row, by the rule of the module docstring, and each stream's key.

    Ids are int64, 0..k−1 in order of each key's first row; the keys come as an object
    array, Python values (None for the missing key, NaN for the NaN key).
    Accepts any column :func:`qre.runtime.columns.column` does, lists and iterables.

    >>> ids, values = stream_ids([None, float("nan"), 3, None, -0.0, 0.0])
    >>> ids.tolist(), values.tolist()
    ([0, 1, 2, 0, 3, 3], [None, nan, 3, -0.0])
    """
    keys = columns.column(keys, "keys", exact=True)
    if isinstance(keys, pd.Series | pd.Index):
        keys = keys.array
    if isinstance(keys, pd.arrays.NumpyExtensionArray):
        keys = np.asarray(keys)  # its data: to_numpy() would scan for missing entries
    if not isinstance(keys, np.ndarray | pd.api.extensions.ExtensionArray):
        # Lists and iterables as objects: numpy would turn [1, "a"] into strings and a
        # list of tuples into a matrix.
        keys = pd.Series(list(keys), dtype=object).to_numpy()
    if isinstance(keys, np.ndarray) and keys.ndim != 1:
        raise ValueError(f"keys must be one-dimensional, got shape {keys.shape}")
    if isinstance(keys, np.ndarray) and keys.dtype == object:
        return _object_ids(keys)
    ids, uniques = pd.factorize(keys, use_na_sentinel=False)
    return ids.astype(np.int64, copy=False), _key_values(uniques)


def stream_ids_beside(keys: Any, work: Callable[[], T]
                      ) -> tuple[tuple[np.ndarray, np.ndarray], T]:
    """``(stream_ids(keys), work())``, the two side by side when the key column is long.

    The callers' ``work`` numbers the tags (:func:`qre.runtime.tag_codes.tag_codes`). Both
    spend most of a long column's time in Numba passes that release the GIL (the
    identity hashing of :func:`distinct_objects`), so on two cores they overlap: 0.07 s
    instead of 0.14 s for 10M text keys and tags read from Parquet
    (benchmarks/end_to_end.py). ``work`` runs in the calling thread; its error, if any,
    comes first (once the key column is done), then the keys'.
    """
    try:
        long = len(keys) >= NUMBA_ROWS
    except TypeError:  # not a column (an iterable, a 0-d array): stream_ids tells
        long = False
    if not long:
        done = work()  # first, as below: its errors come before the keys'
        return stream_ids(keys), done
    from codegen.grouping import side_by_side  # a long column: Numba is in use already

    done, ids = side_by_side([work, lambda: stream_ids(keys)])
    return ids, done


def group_by_key(ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The rows grouped by stream id (ids 0..k−1, all present, as :func:`stream_ids` gives
    them), each stream's rows in input order: ``order`` int64[n] and ``offsets``
    int64[k + 1], stream g owning ``order[offsets[g]:offsets[g+1]]``.

    A long column is grouped by a counting sort in Numba
    (:func:`codegen.grouping.group_rows`, 0.13 s for 10M rows against 1.1 s for
    numpy's stable argsort); a short one by numpy, without importing Numba.

    >>> order, offsets = group_by_key(np.array([1, 0, 1, 2, 0]))
    >>> order.tolist(), offsets.tolist()
    ([1, 4, 0, 2, 3], [0, 2, 4, 5])
    """
    ids = np.asarray(ids, dtype=np.int64)
    n_keys = int(ids.max(initial=-1)) + 1
    if len(ids) >= NUMBA_ROWS:
        from codegen.grouping import group_rows  # here: see distinct_objects

        return group_rows(ids, n_keys)
    return np.argsort(ids, kind="stable").astype(np.int64, copy=False), key_offsets(ids)


def key_offsets(ids: np.ndarray) -> np.ndarray:
    """Where each stream's rows start once grouped (ids 0..k−1): int64[k + 1], from 0 to n.

    >>> key_offsets(np.array([1, 0, 1, 2, 0])).tolist()
    [0, 2, 4, 5]
    """
    ids = np.asarray(ids, dtype=np.int64)
    offsets = np.zeros(int(ids.max(initial=-1)) + 2, dtype=np.int64)
    np.cumsum(np.bincount(ids, minlength=len(offsets) - 1), out=offsets[1:])
    return offsets


def is_missing(x: Any) -> bool:
    """True for a missing key: None, ``pd.NA``, ``NaT`` (not NaN: a NaN is a value)."""
    return x is None or x is pd.NA or x is pd.NaT or (
        isinstance(x, np.datetime64 | np.timedelta64) and bool(np.isnat(x)))


def same_key(a: Any, b: Any) -> bool:
    """Whether keys ``a`` and ``b`` are one stream's (the module docstring's rule)."""
    if is_missing(a) or is_missing(b):
        return is_missing(a) and is_missing(b)
    if _is_nan(a) or _is_nan(b):
        return _is_nan(a) and _is_nan(b)
    return bool(a == b)


def _is_nan(x: Any) -> bool:
    return isinstance(x, float | np.floating) and math.isnan(x)


def _object_ids(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Python objects: numbered by identity first when that pays (:func:`distinct_objects`),
    then by value over the distinct objects (:func:`_value_ids`)."""
    split = distinct_objects(values)
    if split is None:
        return _value_ids(values)
    by_object, objects = split
    ids, uniques = _value_ids(objects)
    if np.array_equal(ids, np.arange(len(ids))):  # one object per value, as readers give them
        return by_object, uniques
    return ids[by_object], uniques


def distinct_objects(values: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """A large object column as ``(ids, objects)`` with ``values == objects[ids]``: each row
    numbered by the identity of its object (in order of first appearance), and those
    objects; None for a short column, or one whose objects are mostly distinct.

    Readers of CSV and Parquet give each distinct string one object, so 10M keys are
    a few objects: numbering them by address (:func:`codegen.grouping.identity_ids`,
    0.07 s) and hashing only the distinct objects by value costs a seventh of hashing
    every row by value (``pd.factorize``, 0.5 s). Exact: one object is one value, and
    equal values in different objects are merged by the caller's pass by value.
    """
    if len(values) < NUMBA_ROWS:
        return None
    # Imported here: Numba is not needed for short columns (``import qre`` stays light).
    from codegen.grouping import identity_ids

    split = identity_ids(values, max_distinct=len(values) // 4)
    if split is None:
        return None
    ids, first = split
    return ids, values[first]


def _value_ids(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Python objects: pandas hashes them, but gives None and NaN one code (−1); the
    rows it leaves out are split here into the NaN key and the missing key."""
    try:
        ids, uniques = pd.factorize(values, use_na_sentinel=True)
    except TypeError as e:  # a list, a dict...: no key compares with it
        raise TypeError(f"keys must be hashable values: {e}") from None
    ids = ids.astype(np.int64, copy=False)
    absent = np.flatnonzero(ids < 0)
    if not len(absent):
        return ids, uniques
    nan = np.fromiter((_is_nan(values[k]) for k in absent), dtype=bool, count=len(absent))
    extra: list[Any] = []
    for rows, value in ((absent[nan], np.nan), (absent[~nan], None)):
        if len(rows):
            ids[rows] = len(uniques) + len(extra)
            extra.append(value)
    return _first_appearance(ids, np.concatenate([uniques, np.array(extra, dtype=object)]))


def _first_appearance(ids: np.ndarray, uniques: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Ids renumbered in order of their first row (as ``pd.factorize`` numbers them)."""
    _, first = np.unique(ids, return_index=True)
    by_first = np.argsort(first, kind="stable")
    renumber = np.empty(len(by_first), dtype=np.int64)
    renumber[by_first] = np.arange(len(by_first))
    return renumber[ids], uniques[by_first]


def _key_values(uniques: Any) -> np.ndarray:
    """The distinct keys of a typed column as Python values, None for the missing key."""
    values = np.asarray(uniques, dtype=object)
    if isinstance(uniques, np.ndarray) and uniques.dtype.kind in "biuf":
        return values  # numpy numbers have no missing entry (NaN is a value)
    missing = np.asarray(pd.isna(uniques), dtype=bool)  # Float64 masks nulls, not NaN
    values[missing] = None
    return values


def key_streams(keys: Any, n: int) -> tuple[np.ndarray, np.ndarray]:
    """The stream of each of ``n`` rows (:func:`stream_ids` of the ``keys`` column, or one
    stream without keys) and each stream's key value; a ValueError when ``keys`` is not
    ``n`` long."""
    if keys is None:
        return np.zeros(n, dtype=np.int64), np.array([None] * min(n, 1), dtype=object)
    (ids, values), _ = stream_ids_beside(columns.column(keys, "keys", exact=True), lambda: None)
    if len(ids) != n:
        raise ValueError(f"keys has {len(ids)} entries but there are {n} tags")
    return ids, values

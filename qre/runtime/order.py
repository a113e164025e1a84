"""The order in which one key's events are processed: one rule for every entry point.

Pipeline position: before the kernel, wherever events carry a time —
:meth:`qre.Monitor.run` / :meth:`~qre.Monitor.run_keys` with ``times=``,
:meth:`~qre.Monitor.run_timed`, ``qre run --time``, and on Spark
``monitor_frame``, ``monitor_timed`` and ``monitor_stream`` (which sort by
the same columns, :attr:`spark_udf.plan.Plan.order`).

The rule. Per key, events run in event-time order; events at equal times are
ordered by

1. the ``tiebreak`` columns, in the order given (e.g. a sequence number);
2. the tag, by its text (before derived tags are applied);
3. the value columns, in the order given (numbers ascending, ``-0.0`` before
   ``0.0``, NaN last; other values by their text, missing last);
4. and, where the input has an order (not on Spark), by input position.

Why the contents and not the input position: a Spark DataFrame has no input
order (its rows arrive in an order that depends on partitioning), so a rule
that fell back on position first would give Spark results that change from
one run to the next and differ from a local run. Ordering by what the events
hold makes all six entry points agree. Events equal in all of 1–3 carry the
same tag and values, so the query cannot tell them apart; only which of the
rows gets which output can differ (visible through other columns kept beside
the outputs): give a tiebreak column when that matters.

Equal, for the float columns of 1 and 3, means equal bits (:func:`float_order`):
``-0.0`` and ``0.0`` compare equal but a query tells them apart (``1 / cur``), so
they are ordered (``-0.0`` first) and never deduplicated together; NaNs are one
value (no operation reveals a NaN's sign or payload). Spark sorts and groups
``-0.0`` as ``0.0``, so ``monitor_frame`` adds a sort key that tells them apart
(:func:`spark_udf.plan.spark_sort_columns`). Times are not refined: ``-0.0`` and
``0.0`` are one instant.

Cost: one stable sort of an int64 (key · span + time) when it fits, then a
lexsort of only the runs of tied events.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any, NamedTuple

import numpy as np
import pandas as pd

from . import columns
from . import keys as key_rules
from .times import int64_times, time_series

__all__ = ["SortedEvents", "event_order", "float_order", "processing_events",
           "processing_order", "sortable", "sortable_times", "sorted_events", "tag_rank",
           "tiebreak_columns", "value_columns", "zero_rank"]


Tie = np.ndarray | Callable[[np.ndarray], np.ndarray]
"""A column that breaks ties of key and time: its values at every row, or a function
giving its values at given rows (computed then only where times tie)."""


class SortedEvents(NamedTuple):
    """Events in processing order: the rows, and their key ids and times in that order."""

    order: np.ndarray
    key: np.ndarray
    time: np.ndarray


def event_order(key: np.ndarray, time: np.ndarray, ties: list[Tie]) -> np.ndarray:
    """The permutation sorting by ``key``, then ``time``, then each of ``ties`` in turn,
    then position: ``np.lexsort([*reversed(ties), time, key])``, faster.

    A long column of key ids (0 ≤ id < n, as :func:`qre.runtime.keys.stream_ids` numbers
    them) is grouped by key with a counting sort and each key's rows sorted by time
    (:func:`codegen.grouping.sort_groups`: 0.3 s for 10M rows where numpy's stable sort
    takes 1.1 s). Otherwise integer times sort one int64 (key·span + time) when it fits,
    and float times (no NaN) go through a lexsort of key and time. Then only the runs of
    equal key and time are sorted by the ties (a full lexsort of four columns costs four
    stable sorts).

    >>> event_order(np.array([1, 0, 1, 1]), np.array([5, 9, 5, 2]), [np.array([3, 0, 1, 0])])
    array([1, 3, 2, 0])
    """
    return _sorted(key, time, ties, with_columns=False).order


def sorted_events(key: np.ndarray, time: np.ndarray, ties: list[Tie]) -> SortedEvents:
    """:func:`event_order` and ``key[order]``, ``time[order]``, which the long sort has at
    hand (the keys from the groups' sizes, the times as it sorted them): no gathers.

    >>> sorted_events(np.array([1, 0, 1]), np.array([5, 9, 2]), [])
    SortedEvents(order=array([1, 2, 0]), key=array([0, 1, 1]), time=array([9, 2, 5]))
    """
    return _sorted(key, time, ties, with_columns=True)


def _sorted(key: np.ndarray, time: np.ndarray, ties: list[Tie],
            with_columns: bool) -> SortedEvents:
    """:func:`sorted_events`; without ``with_columns``, its key and time are empty."""
    n = len(key)
    none = np.zeros(0, dtype=np.int64)
    if n == 0:
        return SortedEvents(none, key[:0], time[:0])
    high = int(key.max())
    if n >= key_rules.NUMBA_ROWS and int(key.min()) >= 0 and high < n:
        from codegen.grouping import group_rows, sort_groups  # here: no Numba for short runs

        order, offsets = group_rows(key, high + 1)
        order, run_start, sorted_time = sort_groups(order, offsets, time, copy=False)
        key_sorted = np.repeat(np.arange(high + 1, dtype=key.dtype), np.diff(offsets)) \
            if with_columns else none
    else:
        order, run_start = _sorted_by_key_and_time(key, time)
        key_sorted, sorted_time = (key[order], time[order]) if with_columns else (none, none)
    tied = ~run_start
    tied[:-1] |= ~run_start[1:]
    if ties and tied.any():
        at = np.flatnonzero(tied)
        rows = order[at]  # in input order within each run: the sort is stable
        run = np.cumsum(run_start[at])  # each tied run whole in at, its first row starting it
        order[at] = rows[np.lexsort([*(_at(c, rows) for c in reversed(ties)), run])]
    return SortedEvents(order, key_sorted, sorted_time if with_columns else none)


def _at(tie: Tie, rows: np.ndarray) -> np.ndarray:
    """A tie column's values at ``rows``."""
    return tie(rows) if callable(tie) else tie[rows]


def _sorted_by_key_and_time(key: np.ndarray, time: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The stable sort by key, then time, in numpy; and where each run of equal key and time
    starts."""
    run_start = np.ones(len(key), dtype=bool)
    low = time.min()
    span = int(time.max()) - int(low) + 1 if time.dtype.kind in "iu" else None
    if span is not None and (int(key.max()) + 1) * span < 2**63:
        flat = key * span + (time - low)
        order = np.argsort(flat, kind="stable")
        flat = flat[order]
        run_start[1:] = flat[1:] != flat[:-1]
    else:
        if int(key.min()) >= 0 and int(key.max()) < 2**16:
            # By time, then by key: numpy sorts 16-bit integers stably by radix, in
            # half the time of a lexsort of both (a monitor_stream bucket's keys).
            order = np.argsort(time, kind="stable")
            order = order[np.argsort(key[order].astype(np.uint16), kind="stable")]
        else:
            order = np.lexsort([time, key])
        k, t = key[order], time[order]
        run_start[1:] = (k[1:] != k[:-1]) | (t[1:] != t[:-1])
    return order, run_start


def float_order(values: np.ndarray) -> np.ndarray:
    """Floats as int64 keys that sort and compare as the rule does: ascending, ``-0.0``
    before ``0.0`` (a query tells them apart), every NaN equal and last.

    The IEEE total order of the bits (a negative float's bits flipped but for the sign,
    so that they count down), after every NaN is made the one positive quiet NaN.

    >>> float_order(np.array([0.0, -0.0, float("nan"), -1.0])).argsort().tolist()
    [3, 1, 0, 2]
    """
    x = np.asarray(values, dtype=np.float64)
    bits = np.where(np.isnan(x), np.nan, x).view(np.int64)
    return bits ^ ((bits >> 63) & np.int64(0x7FFF_FFFF_FFFF_FFFF))


def zero_rank(value: Any) -> int:
    """0 for ``-0.0``, else 1: after the value itself, orders one Python scalar as
    :func:`float_order` does (only the zeros are equal with different bits)."""
    negative_zero = isinstance(value, float | np.floating) and value == 0.0 and \
        math.copysign(1.0, value) < 0
    return 0 if negative_zero else 1


def sortable(column: Any, what: str) -> np.ndarray:
    """A column as an array whose ascending order and equality are the rule's: floats by
    :func:`float_order` (``-0.0`` before ``0.0``, NaN last), integers and booleans as
    numbers, anything else by its sorted text codes (missing last). A column that is not
    one-dimensional, or whose entries cannot be ordered, is an error naming ``what``.

    >>> sortable([2.0, float("nan"), -1.0], "tiebreak").argsort().tolist()
    [2, 0, 1]
    >>> sortable(["b", None, "a"], "tiebreak").tolist()
    [1, 2, 0]
    """
    try:
        array = np.asarray(column)
    except ValueError:  # ragged entries ([[], [0]]): objects, refused below
        array = np.asarray(column, dtype=object)
    if array.ndim != 1:
        raise ValueError(f"{what} must be one-dimensional, got shape {array.shape}")
    if array.dtype.kind == "f":
        return float_order(array)
    if array.dtype.kind in "biu":
        return array.astype(np.float64, copy=False)
    if isinstance(column, pd.Series | pd.api.extensions.ExtensionArray) and \
            pd.api.types.is_float_dtype(column.dtype):  # pandas' nullable Float64: NA is NaN
        return float_order(pd.array(column).to_numpy(dtype=np.float64, na_value=np.nan))
    try:
        codes, uniques = pd.factorize(pd.Series(array, dtype=object), sort=True)
    except TypeError as e:  # unhashable (lists) or not comparable (1 and object())
        raise TypeError(f"{what}: its entries cannot be ordered ({e})") from None
    return np.where(codes < 0, len(uniques), codes)


def sortable_times(times: Any) -> np.ndarray:
    """Event times as an array in time order: numbers as they are (int64 stays exact),
    datetimes as int64 nanoseconds since the epoch (time-zone aware ones as instants).
    A missing time (None, NaN, NaT), a boolean, or anything else that is not a time is
    an error naming its row (:func:`qre.runtime.times.time_series`).

    >>> sortable_times([3, 1]).tolist()
    [3, 1]
    >>> sortable_times(pd.to_datetime(["2024-01-01T00:00:01Z"])).tolist()
    [1704067201000000000]
    """
    series = time_series(times)
    dtype = series.dtype
    if pd.api.types.is_datetime64_any_dtype(dtype):
        if getattr(dtype, "tz", None) is not None:
            series = series.dt.tz_convert("UTC").dt.tz_localize(None)
        return series.to_numpy(dtype="datetime64[ns]").view(np.int64)
    if pd.api.types.is_timedelta64_dtype(dtype):
        return series.to_numpy(dtype="timedelta64[ns]").view(np.int64)
    numpy_dtype = getattr(dtype, "numpy_dtype", dtype)
    return int64_times(series) if numpy_dtype.kind in "iu" else series.to_numpy(np.float64)


def value_columns(values: Any) -> list[Any]:
    """The value columns as given: one (``cur``), or a record's columns in their order."""
    if values is None:
        return []
    if isinstance(values, Mapping | pd.DataFrame):
        return [values[c] for c in values]
    return [values]


def tag_rank(tags: Any, codes: np.ndarray, alphabet: Sequence[str]) -> np.ndarray:
    """Each event's tag as a rank in the text order of the tags (rule step 2).

    ``codes`` index ``alphabet`` (−1 for a tag outside it, skipped by the caller's
    choice): the ranks of the alphabet's texts, unless some tag is outside it, whose
    text then ranks among the others as given in ``tags``.
    """
    if len(codes) == 0 or int(codes.min()) >= 0:
        return _alphabet_ranks(alphabet)[codes]
    text = pd.Series(np.asarray(tags, dtype=object)).map(str)
    return pd.factorize(text, sort=True)[0]


def tiebreak_columns(tiebreak: Any) -> list[Any]:
    """The ``tiebreak=`` argument as a list of columns: None (none), one column (an
    array, Series or list of scalars), or several (a DataFrame or dict of columns, in
    order)."""
    if tiebreak is None:
        return []
    if isinstance(tiebreak, Mapping | pd.DataFrame):
        return [tiebreak[c] for c in tiebreak]
    if isinstance(tiebreak, str | bytes):
        raise TypeError("tiebreak is a column of values (or a dict of columns), not a "
                        "string")
    return [tiebreak]


def processing_order(key_ids: np.ndarray, times: np.ndarray, tags: Any, codes: np.ndarray,
                     alphabet: Sequence[str], values: Any, tiebreak: Any = None,
                     rows: np.ndarray | None = None) -> np.ndarray:
    """The rows in processing order (module docstring): ``key_ids`` group the rows,
    ``times`` sort within a key (int64 or float64, no NaN), then the ``tiebreak``
    columns (:func:`tiebreak_columns`), the tag (``tags`` as given, ``codes`` into
    ``alphabet``), the ``values``' columns, position. Only ``rows`` (default: all)
    take part; the result lists positions among all rows."""
    return _processing(key_ids, times, tags, codes, alphabet, values, tiebreak, rows,
                       with_columns=False).order


def processing_events(key_ids: np.ndarray, times: np.ndarray, tags: Any, codes: np.ndarray,
                      alphabet: Sequence[str], values: Any, tiebreak: Any = None,
                      rows: np.ndarray | None = None) -> SortedEvents:
    """:func:`processing_order` with the events' key ids and times in that order
    (:func:`sorted_events`)."""
    return _processing(key_ids, times, tags, codes, alphabet, values, tiebreak, rows,
                       with_columns=True)


def _processing(key_ids: np.ndarray, times: np.ndarray, tags: Any, codes: np.ndarray,
                alphabet: Sequence[str], values: Any, tiebreak: Any,
                rows: np.ndarray | None, with_columns: bool) -> SortedEvents:
    """:func:`processing_events`; without ``with_columns``, its key and time are empty."""
    n = len(codes)
    tags, values = columns.column(tags, "tags"), columns.values(values)
    ties: list[Tie] = [*(sortable(columns.column(c, "tiebreak"), "tiebreak")
                         for c in tiebreak_columns(tiebreak)),
                       _tag_ranks(tags, codes, alphabet),
                       *(_value_order(c) for c in value_columns(values))]
    for column in ties:
        length = getattr(column, "length", None) if callable(column) else len(column)
        if length is not None and length != n:
            raise ValueError(f"a tiebreak or value column has {length} entries but there "
                             f"are {n} events")
    if rows is None:  # all rows: no copies to take
        return _sorted(key_ids, times, ties, with_columns)
    order, key, time = _sorted(key_ids[rows], times[rows],
                               [lambda at, c=c: _at(c, rows[at]) for c in ties], with_columns)
    return SortedEvents(rows[order], key, time)


def _tag_ranks(tags: Any, codes: np.ndarray, alphabet: Sequence[str]) -> Tie:
    """:func:`tag_rank`, at the tied rows only when every tag is in the alphabet (the
    ranks of its texts); else over all rows (the other tags' texts rank among them)."""
    if len(codes) == 0 or int(codes.min()) >= 0:
        rank = _alphabet_ranks(alphabet)
        return lambda rows: rank[codes[rows]]
    return tag_rank(tags, codes, alphabet)


def _alphabet_ranks(alphabet: Sequence[str]) -> np.ndarray:
    """Each tag code's rank in the text order of the alphabet's tags."""
    return np.argsort(np.argsort(np.array(alphabet, dtype=object)))


def _value_order(column: Any) -> Tie:
    """:func:`sortable` of a value column: at the tied rows only for a float array, whose
    order cannot fail (times seldom tie: 10M events at one-second stamps tie on a few
    percent); any other column over all rows, so that a column that cannot be ordered is
    an error whether or not times tie."""
    if isinstance(column, pd.Series) and isinstance(column.dtype, np.dtype):
        column = column.to_numpy()  # numpy-backed: no copy
    if isinstance(column, np.ndarray) and column.dtype.kind == "f" and column.ndim == 1:
        return _LazyColumn(lambda rows: float_order(column[rows]), len(column))
    return sortable(column, "values")


class _LazyColumn:
    """A tie column computed at the rows asked for, and its length (checked up front)."""

    def __init__(self, at: Callable[[np.ndarray], np.ndarray], length: int) -> None:
        self.at, self.length = at, length

    def __call__(self, rows: np.ndarray) -> np.ndarray:
        return self.at(rows)

"""Compare two output streams as traces: frames, files or items (seed 003 §3).

API reference: docs/API.md, "Streams as traces".

The user's end of :mod:`dt.traces`: the dependence relations and schemas are
re-exported here, and :func:`compare_streams` takes what a user holds — pandas,
polars or Spark DataFrames, Arrow tables, lists of dicts or tuples — turns each
row into an item (a dict of its columns) with an equality key computed column
by column, and runs the DiffStream matcher over the two streams.

A dependence is a :class:`~dt.traces.Dependence` (``by_key("user")``,
``ordered()``, ``unordered()``, ``punctuated(...)``, ``typed(schema, header=)``),
a one-header schema, a symmetric function of two rows, or text
(:mod:`dt.traces.notation`: ``"by_key(user)"``, ``"Sync(EOD, Bag(ride))"`` with
``header=``).

Equality: rows are equal when all their columns are (NaN equals NaN, as a
monitor's undefined value); ``equal=["user", "value"]`` compares those columns
only, and a function of a row compares its result.

Cost: converting a frame is one pass per column (``to_dict`` and ``tolist``);
the matcher's cost is :mod:`dt.traces.diffstream`'s.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from typing import Any

from dt.traces import (
    Bag,
    Dependence,
    Header,
    ItemError,
    Mismatch,
    Par,
    PartitionBy,
    Predicate,
    Schema,
    Seq,
    StreamMatcher,
    Sync,
    Typed,
    Verdict,
    as_dependence,
    by_key,
    compare,
    ordered,
    punctuated,
    typed,
    unordered,
)
from dt.traces.diffstream import NAN, NEGATIVE_ZERO, SIDES, normalized
from dt.traces.notation import DependenceSyntaxError, parse_dependence

__all__ = ["Bag", "Dependence", "DependenceSyntaxError", "FrameMatcher", "Header", "ItemError",
           "Mismatch", "Par", "PartitionBy", "Predicate", "Schema", "Seq", "StreamMatcher", "Sync",
           "Typed", "Verdict", "by_key", "compare_streams", "ordered", "punctuated",
           "stream_items", "to_dependence", "typed", "unordered"]

Equal = Sequence[str] | Callable[[Any], Hashable] | None


def to_dependence(spec: Any, header: str | Callable[[Any], str] | None = None) -> Dependence:
    """A dependence from any of the forms in the module docstring."""
    if isinstance(spec, str):
        return parse_dependence(spec, header)
    if isinstance(spec, Schema) and header is not None:
        return typed(spec, header)
    return as_dependence(spec)


def stream_items(data: Any, equal: Equal = None) -> tuple[list[Any], list[Hashable] | None]:
    """The items of a stream and their equality keys (None: the matcher computes them).

    A frame's rows become dicts; their keys are the tuples of the ``equal``
    columns (all columns by default), NaN as one value. A function ``equal``
    applies to each item; an iterable that is not a frame is taken as its items.
    """
    frame = _as_pandas(data)
    if frame is None:
        items = list(data)
        return items, ([equal(item) for item in items] if callable(equal) else
                       [tuple(normalized(item[c]) for c in equal) for item in items]
                       if equal is not None else None)
    frame = frame.reset_index(drop=True)
    items = frame.to_dict("records")
    if callable(equal):
        return items, [equal(item) for item in items]
    names = list(frame.columns) if equal is None else list(equal)
    missing = [c for c in names if c not in frame.columns]
    if missing:
        raise ItemError(f"equal= names column {missing[0]!r}, which the stream does not have "
                        f"(it has {', '.join(map(str, frame.columns))})")
    cells = [_column(frame[c]) for c in names]
    return items, list(zip(*cells, strict=True)) if cells else [()] * len(items)


def compare_streams(left: Any, right: Any, dependence: Any, *, equal: Equal = None,
                    header: str | Callable[[Any], str] | None = None,
                    names: tuple[str, str] = SIDES) -> Verdict:
    """Are ``left`` and ``right`` the same trace under ``dependence``? (DiffStream, §3.4)

    Items are fed alternately, so the reported mismatch is the first that the two
    streams, read side by side, prove. ``names`` name the streams in the report.
    """
    frames = [_as_pandas(data) for data in (left, right)]
    noun = "item" if all(frame is None for frame in frames) else "row"
    dependence = to_dependence(dependence, header)
    (items_l, keys_l), (items_r, keys_r) = (
        _items(dependence, data if frame is None else frame, name, equal)
        for data, frame, name in zip((left, right), frames, names, strict=True))
    return compare(items_l, items_r, dependence, keys=(keys_l, keys_r), names=names,
                   noun=noun)


def _items(dependence: Dependence, data: Any, name: str,
           equal: Equal) -> tuple[list[Any], list[Hashable] | None]:
    """A stream's (or a piece's) items and keys (:func:`stream_items`), a frame's
    columns checked against the dependence."""
    frame = _as_pandas(data)
    if frame is not None:
        _check_columns(dependence, frame, name)
    return stream_items(data if frame is None else frame, equal)


class FrameMatcher:
    """Two streams compared as they arrive in pieces (micro-batches: frames or items).

    ``feed(side, piece)`` pushes a piece's rows in their order (side 0 or 1) and
    returns the first mismatch once there is one; ``finish()`` gives the verdict
    when both streams have ended. Memory: the unmatched rows.
    """

    def __init__(self, dependence: Any, *, equal: Equal = None,
                 header: str | Callable[[Any], str] | None = None,
                 names: tuple[str, str] = SIDES, noun: str = "row") -> None:
        self.dependence = to_dependence(dependence, header)
        self.equal = equal
        self.names = names
        self.matcher = StreamMatcher(self.dependence, names=names, noun=noun)

    def feed(self, side: int, data: Any) -> Mismatch | None:
        items, keys = _items(self.dependence, data, self.names[side], self.equal)
        for i, item in enumerate(items):
            self.matcher.push(side, item, None if keys is None else keys[i])
        return self.matcher.mismatch

    @property
    def mismatch(self) -> Mismatch | None:
        return self.matcher.mismatch

    def finish(self) -> Verdict:
        return self.matcher.finish()


def _check_columns(dependence: Dependence, frame: Any, name: str) -> None:
    """A typed dependence's key fields and header column are columns of the frame."""
    if not isinstance(dependence, Typed):
        return
    needed = {k for keys in dependence.schema.conditions().values() for k in keys}
    if isinstance(dependence.header, str):
        needed.add(dependence.header)
    missing = sorted(needed - set(map(str, frame.columns)))
    if missing:
        raise ItemError(f"{name} has no column {missing[0]!r}, which the dependence reads "
                        f"(its columns: {', '.join(map(str, frame.columns))})")


def _column(column: Any) -> list[Hashable]:
    """A column's cells as compared: Python scalars, every missing value (NaN, None,
    NA, NaT) as one value, −0.0 apart from 0.0 (:func:`dt.traces.diffstream.normalized`)."""
    import numpy as np

    values = column.tolist()
    missing = column.isna().to_numpy()
    floats = np.ones(1)
    if column.dtype.kind == "f":  # NaN is not NA in pandas' nullable Float64
        floats = column.to_numpy(dtype=float, na_value=np.nan)
        missing = missing | np.isnan(floats)
    negative_zero = (floats == 0) & np.signbit(floats)
    if not (missing.any() or negative_zero.any()):
        return values
    return [NAN if m else NEGATIVE_ZERO if z else v
            for v, m, z in zip(values, missing, np.broadcast_to(negative_zero, missing.shape),
                               strict=True)]


def _as_pandas(data: Any) -> Any:
    """``data`` as a pandas DataFrame if it is a frame or table; else None."""
    import pandas as pd

    if isinstance(data, pd.DataFrame):
        return data
    module = type(data).__module__.split(".")[0]
    if module == "pyarrow" or module == "polars":
        return data.to_pandas()
    if module == "pyspark" and hasattr(data, "toPandas"):
        return data.toPandas()
    return None

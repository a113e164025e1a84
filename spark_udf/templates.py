"""Operator templates on Spark whose output is deterministic up to its type (seed 003 §2.3).

Pipeline position: beside the monitors — small stateful operators written as a
few Python functions, run on Spark, whose results do not depend on how Spark
partitions or orders the rows (Theorem 2.27: every computation written with these
templates is consistent with its input and output types).

The input is a DataFrame of items and, optionally, **markers** (rows whose
``marker`` column is true; end-of-day, watermarks): the markers are ordered by
their ``time``, and an item belongs to the block before the first marker whose
time exceeds its own (all items earlier than a marker come before it, as in
Example 2.26). Three templates:

* :func:`op_stateless` — ``on_item(row)`` and ``on_marker(marker)`` return the
  rows to emit. Output type: between markers, a bag.
* :func:`op_keyed_ordered` — per key, the items in ``order``;
  ``on_item(state, key, row)`` and ``on_marker(state, key, marker)`` return
  ``(state, rows)``, starting from ``initial_state()``; every emitted row keeps
  the input's key (checked: the restriction that keeps the output ordered per
  key). Output type: between markers, each key's rows in order.
* :func:`op_keyed_unordered` — per key, the items between two markers in any
  order: each is ``lift(key, row)`` into a commutative monoid (``identity()``,
  ``combine``) and at a marker ``update_state(state, aggregate)`` takes the
  block in, then ``on_marker(state, key, marker)`` emits; ``on_item(state, key,
  row)`` may emit from the state of the last marker. Output type: between
  markers, a bag. ``combine`` must be associative and commutative: if it is not,
  the output depends on Spark's order, which :func:`qre.traces.compare_streams`
  against a sequential run shows.

A key's ``on_marker`` runs at every marker from the block of its first item on.
The output is a DataFrame of the ``schema``'s columns, a ``block`` column (the
markers before the row) and the ``marker`` column (true for the markers, passed
through with their time in the ``time`` column if the schema has it); read in
Spark's order (``collect``), its rows are a stream of :func:`output_dependence`.
With markers, that order is Spark's sort by block, markers last; without, the
rows come in partition order and each key's in order.

Costs: markers are collected to the driver (they are few) and sent to the
workers; keyed templates repartition by key and sort each partition by key and
order; the Python functions run once per item and per (key, marker).
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from dt.traces import Typed, by_key, punctuated, unordered

__all__ = ["op_keyed_ordered", "op_keyed_unordered", "op_stateless", "output_dependence"]

BLOCK = "block"
SEQUENCE = "_qre_seq"
Rows = Iterable[Any]


def output_dependence(key: str | None = None, marker: str = "marker") -> Typed:
    """The output type of a template: markers ordered with every row; between them a
    bag of rows, or with ``key`` (:func:`op_keyed_ordered`) each key's rows in order."""
    within = by_key(key) if key is not None else unordered()
    return punctuated(lambda row: bool(row[marker]), within)


@dataclass(frozen=True)
class _Markers:
    """The markers, sorted by time, as the workers see them (rows as dicts)."""

    times: tuple[Any, ...]
    rows: tuple[dict, ...]

    def block(self, time: Any) -> int:
        """The block of an item at ``time``: the number of markers at or before it."""
        return bisect.bisect_right(self.times, time)


def _markers(df: Any, marker: str | None, time: str | None) -> tuple[Any, _Markers]:
    """The items of ``df`` and its markers (collected: they are few)."""
    if marker is None:
        return df, _Markers((), ())
    if time is None:
        raise ValueError("markers need time=: the column that orders them and places items")
    from pyspark.sql import functions as F

    missing = [c for c in (marker, time) if c not in df.columns]
    if missing:
        raise ValueError(f"no column {missing[0]!r} (the columns: {', '.join(df.columns)})")
    is_marker = F.coalesce(F.col(marker), F.lit(False))
    rows = sorted((r.asDict() for r in df.filter(is_marker).collect()), key=lambda r: r[time])
    return df.filter(~is_marker), _Markers(tuple(r[time] for r in rows), tuple(rows))


def _emitted(rows: Rows, names: Sequence[str], where: str) -> list[tuple]:
    """User-emitted rows (dicts or tuples) as tuples in the schema's column order."""
    result = []
    for row in rows or ():
        if isinstance(row, dict):
            unknown = set(row) - set(names)
            if unknown:
                raise ValueError(f"{where} emitted a column {sorted(unknown)[0]!r} that the "
                                 f"schema does not have ({', '.join(names)})")
            result.append(tuple(row.get(n) for n in names))
        else:
            row = tuple(row)
            if len(row) != len(names):
                raise ValueError(f"{where} emitted {len(row)} values for the schema's "
                                 f"{len(names)} columns ({', '.join(names)})")
            result.append(row)
    return result


class _Output:
    """The rows a worker emits, with their block and sequence number, as pandas."""

    def __init__(self, names: Sequence[str]) -> None:
        self.names = list(names)
        self.rows: list[tuple] = []

    def add(self, rows: Rows, block: int, where: str, key: Any = None,
            key_column: str | None = None) -> None:
        for row in _emitted(rows, self.names, where):
            if key_column is not None and row[self.names.index(key_column)] != key:
                raise ValueError(f"{where} for key {key!r} emitted a row of key "
                                 f"{row[self.names.index(key_column)]!r}: a keyed ordered "
                                 "operator keeps the input's key (seed 003 §2.3)")
            self.rows.append((*row, block, False, len(self.rows)))

    def frame(self, marker: str) -> Any:
        import pandas as pd

        return pd.DataFrame(self.rows, columns=[*self.names, BLOCK, marker, SEQUENCE])


def _finish(items: Any, schema: Any, markers: _Markers, marker: str, time: str | None,
            sort: Sequence[str]) -> Any:
    """The emitted rows with the markers as rows, in an order of the output type."""
    from pyspark.sql import functions as F

    if markers.rows:
        names = [f.name for f in schema.fields]
        spark = items.sparkSession
        rows = [(*(m.get(time) if n == time else None for n in names), i, True, 0)
                for i, m in enumerate(markers.rows)]
        marks = spark.createDataFrame(rows, items.schema)
        items = (items.unionByName(marks).repartitionByRange(BLOCK)
                 .sortWithinPartitions(BLOCK, marker, *sort))
    return items.drop(SEQUENCE).withColumn(marker, F.col(marker).cast("boolean"))


def _out_schema(schema: Any, marker: str) -> Any:
    from pyspark.sql.types import BooleanType, LongType, StructField, StructType

    user = schema if isinstance(schema, StructType) else StructType.fromDDL(schema)
    taken = {BLOCK, marker, SEQUENCE} & set(user.fieldNames())
    if taken:
        raise ValueError(f"the output schema may not have a column {sorted(taken)[0]!r}")
    return user, StructType([*user.fields, StructField(BLOCK, LongType()),
                             StructField(marker, BooleanType()),
                             StructField(SEQUENCE, LongType())])


def op_stateless(df: Any, on_item: Callable[[dict], Rows], *, schema: Any,
                 on_marker: Callable[[dict], Rows] | None = None, marker: str | None = None,
                 time: str | None = None) -> Any:
    """OpStateless: ``on_item(row)`` per item, ``on_marker(marker_row)`` per marker (on the
    driver), each returning rows of ``schema`` (a DDL string or a StructType)."""
    items, markers = _markers(df, marker, time)
    marker_name = marker or "marker"
    user, out = _out_schema(schema, marker_name)

    def run(batches: Iterator[Any]) -> Iterator[Any]:
        for batch in batches:
            output = _Output(user.fieldNames())
            for row in batch.to_dict("records"):
                output.add(on_item(row), markers.block(row[time]) if time else 0, "on_item")
            yield output.frame(marker_name)

    emitted = items.mapInPandas(run, out)
    if markers.rows and on_marker is not None:
        output = _Output(user.fieldNames())
        for i, m in enumerate(markers.rows):
            output.add(on_marker(m), i, "on_marker")
        if output.rows:
            emitted = emitted.unionByName(df.sparkSession.createDataFrame(
                output.frame(marker_name), out))
    return _finish(emitted, user, markers, marker_name, time, ())


def _keyed(df: Any, key: str, order: Sequence[str], schema: Any, marker: str | None,
           time: str | None, per_key: Callable[[Any, list[dict], _Markers, _Output], None],
           keep_order: bool) -> Any:
    items, markers = _markers(df, marker, time)
    marker_name = marker or "marker"
    user, out = _out_schema(schema, marker_name)
    if key not in user.fieldNames():
        raise ValueError(f"the output schema has no column {key!r}: a keyed operator emits "
                         "rows of its key")

    def run(batches: Iterator[Any]) -> Iterator[Any]:
        import pandas as pd

        frame = pd.concat(list(batches), ignore_index=True)
        output = _Output(user.fieldNames())
        if len(frame):
            for k, rows in frame.groupby(key, sort=False, dropna=False):
                per_key(k, rows.to_dict("records"), markers, output)
        yield output.frame(marker_name)

    ordered = items.repartition(key).sortWithinPartitions(key, *order)
    sort = (key, SEQUENCE) if keep_order else ()
    return _finish(ordered.mapInPandas(run, out), user, markers, marker_name, time, sort)


def op_keyed_ordered(df: Any, key: str, order: str | Sequence[str],
                     on_item: Callable[[Any, Any, dict], tuple[Any, Rows]], *, schema: Any,
                     initial_state: Callable[[], Any],
                     on_marker: Callable[[Any, Any, dict], tuple[Any, Rows]] | None = None,
                     marker: str | None = None, time: str | None = None) -> Any:
    """OpKeyedOrdered: per ``key``, the items in ``order`` (columns; give an order
    without ties per key, and with markers one that starts with ``time``: a key's
    markers run as its items cross them) through ``on_item`` and the markers through
    ``on_marker``."""
    order = [order] if isinstance(order, str) else list(order)

    def per_key(k: Any, rows: list[dict], markers: _Markers, output: _Output) -> None:
        state = initial_state()
        next_marker = markers.block(rows[0][time]) if time else 0
        for row in rows:
            block = markers.block(row[time]) if time else 0
            next_marker, state = _close(state, k, next_marker, block, markers, on_marker,
                                        output, key)
            state, emitted = on_item(state, k, row)
            output.add(emitted, block, "on_item", k, key)
        _close(state, k, next_marker, len(markers.times), markers, on_marker, output, key)

    return _keyed(df, key, order, schema, marker, time, per_key, keep_order=True)


def _close(state: Any, k: Any, first: int, until: int, markers: _Markers,
           on_marker: Callable[[Any, Any, dict], tuple[Any, Rows]] | None, output: _Output,
           key_column: str | None) -> tuple[int, Any]:
    """Run ``on_marker`` for markers ``first`` to ``until`` − 1; the next marker and state."""
    for i in range(first, until):
        if on_marker is not None:
            state, emitted = on_marker(state, k, markers.rows[i])
            output.add(emitted, i, "on_marker", k, key_column)
    return max(first, until), state


def op_keyed_unordered(df: Any, key: str, *, schema: Any, initial_state: Callable[[], Any],
                       identity: Callable[[], Any], lift: Callable[[Any, dict], Any],
                       combine: Callable[[Any, Any], Any],
                       update_state: Callable[[Any, Any], Any],
                       on_marker: Callable[[Any, Any, dict], Rows] | None = None,
                       on_item: Callable[[Any, Any, dict], Rows] | None = None,
                       marker: str | None = None, time: str | None = None) -> Any:
    """OpKeyedUnordered: per ``key``, each block's items folded into a commutative monoid
    (``identity``, ``combine`` of ``lift(key, row)``), taken into the state at each marker
    by ``update_state``; ``on_marker(state, key, marker)`` and ``on_item(state, key, row)``
    (the state of the last marker) emit."""
    def per_key(k: Any, rows: list[dict], markers: _Markers, output: _Output) -> None:
        state = initial_state()
        blocks: dict[int, list[dict]] = {}
        for row in rows:
            blocks.setdefault(markers.block(row[time]) if time else 0, []).append(row)
        first = min(blocks)
        for i in range(first, len(markers.times) + 1):
            aggregate = identity()
            for row in blocks.get(i, ()):
                if on_item is not None:
                    output.add(on_item(state, k, row), i, "on_item")
                aggregate = combine(aggregate, lift(k, row))
            if i < len(markers.times):
                state = update_state(state, aggregate)
                if on_marker is not None:
                    output.add(on_marker(state, k, markers.rows[i]), i, "on_marker")

    # No order within a key: the blocks' items reach combine in Spark's order.
    return _keyed(df, key, (), schema, marker, time, per_key, keep_order=False)

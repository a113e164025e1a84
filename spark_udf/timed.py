"""Timed monitors on a Spark DataFrame: windows, clock ticks, patterns, derived tags (issue 7).

Pipeline position: the last stage, for monitors that need event time — a
clock (``aggregate``, ``period``), ``cur.time``, a pattern's ``within`` —
which :func:`spark_udf.monitor_frame` refuses (derived tags run in both).
:func:`monitor_timed` gives, per key, exactly the rows of
:meth:`qre.Monitor.run_timed` (same order of equal times, same ticks, same
stamps: it is the same code): the key, the stamp
under the time column's name and type, the tag (the input's for an event's
row, ``tick`` for a tick's), the event row's other input columns (null for
a tick), a window's ``start``, ``status`` and ``value``; a window aggregate
emits one row per non-empty window.

How it runs: ``repartition(key)`` and ``mapInArrow``; each partition's
events are gathered and go through ``run_timed`` in one call (all its keys
at once, one kernel call), so a partition must fit in a Python worker's
memory — more partitions (``spark.sql.shuffle.partitions``) make them
smaller. Keys, times and tiebreak columns reach ``run_timed`` as Arrow
columns and the rows' input columns are taken from the Arrow batches, so
nothing passes through pandas' float casts (:mod:`qre.runtime.keys`). Cost:
one shuffle, then the numpy/Numba cost of ``run_timed``.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from qre.language.clock import UNIT_NS
from qre.runtime.cer.matches import Matcher
from qre.runtime.keys import stream_ids
from qre.runtime.monitor import Monitor
from qre.runtime.times import TimeError

from .matches import match_rows
from .plan import (
    START,
    Plan,
    check_arguments,
    event_data,
    make_plan,
    output_fields,
    spark_frame,
    text,
    worker_monitor,
)

__all__ = ["monitor_timed"]


def monitor_timed(df: Any, monitor: Monitor | Matcher, key: str, time: str, tag: str,
                  value: str | Sequence[str] | None = None, *, time_unit: str = "s",
                  tiebreak: str | Sequence[str] = (), keep: str | Sequence[str] | None = None,
                  prefix: str = "", dedup: bool = False, engine: str = "auto",
                  unknown_tags: str = "error", undefined: str = "drop") -> Any:
    """Run a timed ``monitor`` per key over ``df``: the rows of ``Monitor.run_timed``.

    ``time`` is a timestamp column (microseconds) or a number of ``time_unit``;
    ``value`` names the column read as ``cur`` or the columns read as
    ``cur.FIELD`` (the fields of derived tags' predicates included); equal times
    are ordered by ``tiebreak``, the tag, the values (:mod:`qre.runtime.order`). Each row
    holds the key, the stamp (under the time column's name and type), the tag
    (the event's, as in the input, or ``tick``), the event row's other input
    columns (``keep``: only these; null for a tick's row), then ``status`` and
    ``value`` (names starting with ``prefix``). The other options are those of
    :func:`qre.runtime.timed.run_timed`. Raises ValueError at once for a missing column,
    a name collision or value columns that do not fit the query. A ``match(...)``
    query's :class:`~qre.runtime.cer.matches.Matcher` gives one row per match instead
    (:func:`spark_udf.matches.match_rows`).
    """
    from pyspark.sql.types import StructType

    if isinstance(monitor, Matcher):
        if dedup or prefix or undefined != "drop":
            raise ValueError("monitor_timed: a match query's rows are its matches: dedup, "
                             "prefix and undefined do not apply")
        return match_rows(df, monitor, key, time, tag, value, time_unit=time_unit,
                          tiebreak=tiebreak, keep=keep, unknown_tags=unknown_tags)
    if not isinstance(time_unit, str) or time_unit not in UNIT_NS:
        raise ValueError(f"monitor_timed: time_unit must be one of {', '.join(UNIT_NS)}")
    if not isinstance(undefined, str) or undefined not in ("drop", "keep"):
        raise ValueError(f"monitor_timed: undefined must be 'drop' or 'keep', got {undefined!r}")
    if not isinstance(dedup, bool):
        raise TypeError(f"monitor_timed: dedup must be True or False, not {dedup!r}")
    df = spark_frame(df, "monitor_timed")
    check_arguments("monitor_timed", monitor, key, time, tag, value, tiebreak, keep, prefix,
                    engine, unknown_tags)
    windows = monitor.clock is not None and monitor.clock.windowed
    plan = make_plan("monitor_timed", df, monitor, key, time, tag, value, tiebreak, engine,
                     unknown_tags, timed=True, keep=keep, prefix=prefix,
                     added=[START] if windows else [], stamped=True)
    if len(plan.outputs) != 1:
        raise ValueError(f"monitor_timed needs a monitor with one output, this one has "
                         f"{len(plan.outputs)}")
    options = (("time_unit", time_unit), ("dedup", dedup), ("engine", engine),
               ("unknown_tags", unknown_tags), ("undefined", undefined))
    schema = StructType(output_fields(df.schema, plan))
    events = df.select(*plan.columns).repartition(key)

    def run_partition(batches: Iterator[Any]) -> Iterator[Any]:
        return _run_partition(batches, plan, options, schema)

    return events.mapInArrow(run_partition, schema)


def _run_partition(batches: Iterator[Any], plan: Plan, options: tuple[tuple[str, Any], ...],
                   schema: Any) -> Iterator[Any]:
    """A partition's events through ``run_timed`` in one call; its rows as one batch.

    The key, time and tiebreak columns go to ``run_timed`` as Arrow columns, so keys
    keep their identity (:mod:`qre.runtime.keys`: a long key with a null is not made a
    float, a double's null is not made NaN), and the rows' input columns are taken
    from the Arrow batches (NaN stays NaN; a tick's row holds nulls)."""
    import pyarrow as pa
    from pyspark.sql.pandas.types import to_arrow_schema

    parts = [b for b in batches if b.num_rows]
    if not parts:
        return
    table = pa.Table.from_batches(parts)
    m = worker_monitor(plan)
    run_options = dict(options)
    run_options["engine"] = m.resolve_engine(run_options["engine"])
    events = table.select(plan.order).to_pandas()
    # Stream ids here, not in run_timed: an output row then finds its key's Arrow value.
    ids, _ = stream_ids(table.column(plan.key))
    _, first_row = np.unique(ids, return_index=True)
    ties = {c: table.column(c) for c in plan.tiebreak} or None
    try:
        out = m.run_timed(table.column(plan.time), events[plan.tag].to_numpy(dtype=object),
                          event_data(events, plan), keys=ids, tiebreak=ties, **run_options)
    except TimeError as e:
        raise _time_error(e, table, plan) from None
    except ValueError as e:
        raise ValueError(f"monitor_timed (rows of one partition): {e}") from None
    arrow = to_arrow_schema(schema, timezone=plan.timezone)
    row = out["row"].to_numpy()
    is_event = row >= 0
    rows = pa.array(row, mask=~is_event)  # a tick takes a null from every input column
    # Stamps come in the column's type (datetimes in its time zone): Arrow casts instants.
    time_type = arrow.field(plan.time).type
    tags = np.where(is_event, events[plan.tag].map(text).to_numpy(dtype=object)[
        np.maximum(row, 0)], "tick")
    key_rows = first_row[out["key"].to_numpy(dtype=np.int64)]
    columns = []
    for name in plan.shown:
        if name == plan.key:
            columns.append(table.column(name).take(key_rows).combine_chunks())
        elif name == plan.time:
            columns.append(pa.array(out["time"]).cast(time_type))
        elif name == plan.tag:
            columns.append(pa.array(tags, type=pa.string()))
        else:
            columns.append(table.column(name).take(rows).combine_chunks())
    if "start" in out:
        columns.append(pa.array(out["start"], from_pandas=True).cast(time_type))
    columns += [pa.array(out["status"].to_numpy().astype(np.int8)),
                pa.array(out["value"].to_numpy())]
    yield pa.RecordBatch.from_arrays(columns, schema=arrow)


def _time_error(e: TimeError, table: Any, plan: Plan) -> ValueError:
    """A time ``run_timed`` refused, named by its column and key (a partition's row
    number means nothing to the user)."""
    where = f"column {plan.time!r} (time)"
    if e.row is not None:
        where += f", key {table.column(plan.key)[e.row].as_py()!r}"
    return ValueError(f"monitor_timed: {where}: {e.reason}")

"""``match(...)`` queries on a Spark DataFrame: one row per match, per key (issue 26).

Pipeline position: the last stage for a :class:`~qre.runtime.cer.matches.Matcher`:
:func:`spark_udf.monitor_timed` hands one here. Per key, the rows are exactly those of
:meth:`Matcher.run_timed` (the same code, the same order of equal times): the key, a
``match`` number (from 0 per key, in emission order), ``start`` and ``end`` (the first
and last events' times) and ``time`` (the stamp) in the time column's type, ``vars``
(each event's variable), ``events`` (the matched rows, each a struct of the input
columns — ``keep`` chooses them), then one column per measure (double; ``count``
long), then ``timeout`` for a query that reports timed-out partial matches. A Spark
row has no row number: ``events`` stands for the pandas result's ``rows``.

How it runs: as ``monitor_timed`` — ``repartition(key)``, ``mapInArrow``, each
partition's events through ``run_timed`` in one call, so a partition must fit a
Python worker's memory. Cost: one shuffle, then the match kernel per key.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from qre.runtime.cer.matches import Matcher
from qre.runtime.keys import stream_ids
from qre.runtime.times import TimeError

from .plan import session_time_zone, spark_frame

__all__ = ["match_rows"]


def match_rows(df: Any, matcher: Matcher, key: str, time: str, tag: str,
               value: str | Sequence[str] | None = None, *, time_unit: str = "s",
               tiebreak: str | Sequence[str] = (), keep: str | Sequence[str] | None = None,
               unknown_tags: str = "error") -> Any:
    """The matches of ``matcher`` per key of ``df`` (module docstring). ``value`` names
    the column read as ``cur`` or the columns read as ``cur.FIELD`` (by measures and
    derived tags' predicates); ``tiebreak`` orders equal times before the tag."""
    df = spark_frame(df, "monitor_timed")
    schema, columns, values, ties, kept = output_schema(df, matcher, key, time, tag, value,
                                                         tiebreak, keep, "monitor_timed")
    timezone = session_time_zone(df)
    options = (matcher, key, time, tag, values, ties, kept, time_unit, unknown_tags)

    def run_partition(batches: Iterator[Any]) -> Iterator[Any]:
        return _run_partition(batches, options, schema, timezone)

    return df.select(*columns).repartition(key).mapInArrow(run_partition, schema)


def output_schema(df: Any, matcher: Matcher, key: str, time: str, tag: str,
                  value: str | Sequence[str] | None, tiebreak: str | Sequence[str],
                  keep: str | Sequence[str] | None, caller: str
                  ) -> tuple[Any, list[str], list[str], list[str], list[str]]:
    """The rows' schema (module docstring), the input columns read, and the value,
    tiebreak and kept columns; a ValueError naming a missing column or a clash."""
    from pyspark.sql.types import (
        ArrayType,
        BooleanType,
        LongType,
        StringType,
        StructField,
        StructType,
    )

    values = [] if value is None else [value] if isinstance(value, str) else list(value)
    ties = [tiebreak] if isinstance(tiebreak, str) else list(tiebreak)
    kept = ([c for c in df.columns] if keep is None else [keep] if isinstance(keep, str)
            else list(keep))
    needed = [key, time, tag, *values, *ties, *kept]
    missing = [c for c in dict.fromkeys(needed) if c not in df.columns]
    if missing:
        raise ValueError(f"{caller}: no column {missing[0]!r} (columns: "
                         f"{', '.join(df.columns)})")
    fields = {f.name: f for f in df.schema.fields}
    measures = [StructField(m.name, LongType() if m.function == "count" else
                            _double()) for m in matcher.query.measures]
    clash = {m.name for m in matcher.query.measures} & {key}
    if clash:
        raise ValueError(f"{caller}: measure {clash.pop()!r} has the key column's name")
    event = StructType([fields[c] for c in kept])
    schema = StructType([fields[key], StructField("match", LongType()),
                         *(StructField(c, fields[time].dataType) for c in
                           ("start", "end", "time")),
                         StructField("vars", ArrayType(StringType())),
                         StructField("events", ArrayType(event)), *measures,
                         *([StructField("timeout", BooleanType())] if matcher.query.timeouts
                           else [])])
    return schema, list(dict.fromkeys(needed)), values, ties, kept


def _double() -> Any:
    from pyspark.sql.types import DoubleType

    return DoubleType()


def _run_partition(batches: Iterator[Any], options: tuple[Any, ...], schema: Any,
                   timezone: str) -> Iterator[Any]:
    """A partition's events through ``Matcher.run_timed`` in one call; its matches as one
    Arrow batch."""
    import pyarrow as pa
    from pyspark.sql.pandas.types import to_arrow_schema

    matcher, key, time, tag, values, ties, kept, time_unit, unknown_tags = options
    parts = [b for b in batches if b.num_rows]
    if not parts:
        return
    table = pa.Table.from_batches(parts)
    ids, _ = stream_ids(table.column(key))
    _, first_row = np.unique(ids, return_index=True)
    data = ({v: table.column(v).to_numpy(zero_copy_only=False) for v in values}
            if len(values) > 1 or any(m.field is not None for m in matcher.query.measures)
            else table.column(values[0]).to_numpy(zero_copy_only=False) if values else None)
    try:
        out = matcher.run_timed(table.column(time),
                                table.column(tag).to_numpy(zero_copy_only=False), data,
                                keys=ids, time_unit=time_unit, unknown_tags=unknown_tags,
                                tiebreak={c: table.column(c) for c in ties} or None)
    except TimeError as e:
        raise ValueError(f"monitor_timed: column {time!r} (time): {e.reason}") from None
    except ValueError as e:
        raise ValueError(f"monitor_timed (matches of one partition): {e}") from None
    arrow = to_arrow_schema(schema, timezone=timezone)
    time_type = arrow.field("time").type
    key_ids = out["key"].to_numpy(dtype=np.int64) if len(out) else np.zeros(0, np.int64)
    lengths = np.array([len(r) for r in out["rows"]], dtype=np.int32)
    offsets = pa.array(np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32))
    flat = pa.array([r for rows in out["rows"] for r in rows], type=pa.int64())
    matched = pa.StructArray.from_arrays(
        [table.column(c).take(flat).combine_chunks() for c in kept], names=kept)
    events = pa.ListArray.from_arrays(offsets, matched)
    names = pa.ListArray.from_arrays(offsets, pa.array([v for vs in out["vars"] for v in vs],
                                                       type=pa.string()))
    columns = [table.column(key).take(pa.array(first_row[key_ids])).combine_chunks(),
               pa.array(_per_key_numbers(key_ids), type=pa.int64()),
               *(pa.array(out[c], from_pandas=True).cast(time_type)
                 for c in ("start", "end", "time")),
               names, events.cast(arrow.field("events").type),
               *(pa.array(out[m.name].to_numpy()) for m in matcher.query.measures),
               *([pa.array(out["timeout"].to_numpy(dtype=bool))] if matcher.query.timeouts
                 else [])]
    yield pa.RecordBatch.from_arrays(columns, schema=arrow)


def _per_key_numbers(key_ids: np.ndarray) -> np.ndarray:
    """0, 1, … within each run of equal key ids (the rows are grouped by key)."""
    if len(key_ids) == 0:
        return key_ids
    starts = np.flatnonzero(np.diff(key_ids, prepend=key_ids[0] - 1))
    return np.arange(len(key_ids)) - np.repeat(starts, np.diff(np.append(starts,
                                                                         len(key_ids))))

"""Timed monitors on a Spark DataFrame: windows, clock ticks, patterns, derived tags (issue 7).

Pipeline position: the last stage, for monitors that need event time — a
clock (``aggregate``, ``period``), ``cur.time``, a pattern's ``within`` —
which :func:`spark_udf.monitor_frame` refuses (derived tags run in both).
:func:`monitor_timed` gives, per key, exactly the rows of
:meth:`qre.Monitor.run_timed` (same order of equal times, same ticks, same
stamps: it is the same code): the key, the stamp
under the time column's name and type, the tag (``tick`` for a tick),
``status`` and ``value``; a window aggregate emits one row per non-empty
window.

How it runs: ``repartition(key)`` and ``mapInArrow``; each partition's
events are gathered and go through ``run_timed`` in one call (all its keys
at once, one kernel call), so a partition must fit in a Python worker's
memory — more partitions (``spark.sql.shuffle.partitions``) make them
smaller. Cost: one shuffle, then the numpy/Numba cost of ``run_timed``.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from qre.clock import UNIT_NS, Clock
from qre.derive import Derivation
from qre.frames import value_columns_problem
from qre.monitor import Monitor
from qre.timed import needed_fields

from .plan import worker_monitor

__all__ = ["monitor_timed"]


@dataclass(frozen=True)
class _TimedPlan:
    """What a worker needs: the monitor (DT JSON, clock, derived tags) and the columns."""

    dt_json: str
    alphabet: tuple[str, ...]
    clock: Clock | None
    derivation: Derivation | None
    key: str
    time: str
    tag: str
    values: tuple[str, ...]
    scalar: bool
    options: tuple[tuple[str, Any], ...]
    timezone: str


def monitor_timed(df: Any, monitor: Monitor, key: str, time: str, tag: str,
                  value: str | Sequence[str] | None = None, *, time_unit: str = "s",
                  dedup: bool = False, engine: str = "auto", unknown_tags: str = "error",
                  undefined: str = "drop") -> Any:
    """Run a timed ``monitor`` per key over ``df``: the rows of ``Monitor.run_timed``.

    ``time`` is a timestamp column (microseconds) or a number of ``time_unit``;
    ``value`` names the column read as ``cur`` or the columns read as
    ``cur.FIELD`` (the fields of derived tags' predicates included). The other
    options are those of :func:`qre.timed.run_timed`. Raises ValueError at once
    for a missing column or value columns that do not fit the query.
    """
    from pyspark.sql.types import ByteType, DoubleType, StringType, StructField, StructType

    values = (value,) if isinstance(value, str) else tuple(value or ())
    for role, name in [("key", key), ("time", time), ("tag", tag), *(("value", v)
                                                                     for v in values)]:
        if name not in df.columns:
            raise ValueError(f"monitor_timed: no column {name!r} for {role} in the DataFrame "
                             f"(columns: {', '.join(df.columns)})")
    if time_unit not in UNIT_NS:
        raise ValueError(f"monitor_timed: time_unit must be one of {', '.join(UNIT_NS)}")
    source = monitor.unoptimized or monitor.dt
    problem = value_columns_problem(
        needed_fields(monitor), source.reads_scalar_cur, values,
        lambda col: "value column" if col is None else f"{col!r} to the value columns")
    if problem is not None:
        raise ValueError(problem)
    if engine == "auto":
        monitor.prepare("codegen")
    plan = _TimedPlan(source.to_json(indent=None), tuple(monitor.alphabet), monitor.clock,
                      monitor.derivation, key, time, tag, values, source.reads_scalar_cur,
                      (("time_unit", time_unit), ("dedup", dedup), ("engine", engine),
                       ("unknown_tags", unknown_tags), ("undefined", undefined)),
                      df.sparkSession.conf.get("spark.sql.session.timeZone"))
    schema = StructType([StructField(key, df.schema[key].dataType, True),
                         StructField(time, df.schema[time].dataType, True),
                         StructField(tag, StringType(), True),
                         StructField("status", ByteType(), False),
                         StructField("value", DoubleType(), True)])
    events = df.select(*dict.fromkeys([key, time, tag, *values])).repartition(key)

    def run_partition(batches: Iterator[Any]) -> Iterator[Any]:
        return _run_partition(batches, plan, schema)

    return events.mapInArrow(run_partition, schema)


def _run_partition(batches: Iterator[Any], plan: _TimedPlan, schema: Any) -> Iterator[Any]:
    import pyarrow as pa
    from pyspark.sql.pandas.types import to_arrow_schema

    frames = [b.to_pandas() for b in batches]
    frames = [f for f in frames if len(f)]
    if not frames:
        return
    events = pd.concat(frames, ignore_index=True) if len(frames) > 1 else frames[0]
    m = worker_monitor(plan)  # type: ignore[arg-type]  # reads dt_json, alphabet, clock, derivation
    options = dict(plan.options)
    options["engine"] = m.resolve_engine(options["engine"])
    if plan.scalar:
        data: Any = _floats(events[plan.values[0]])
    else:
        data = {name: _floats(events[name]) for name in plan.values} or None
    try:
        out = m.run_timed(events[plan.time], events[plan.tag].to_numpy(dtype=object), data,
                          keys=events[plan.key], **options)
    except ValueError as e:
        raise ValueError(f"monitor_timed (rows of one partition): {e}") from None
    arrow = to_arrow_schema(schema, timezone=plan.timezone)
    # Stamps come in the column's type (datetimes in its time zone): Arrow casts instants.
    times = pa.array(out["time"]).cast(arrow.field(plan.time).type)
    columns = [pa.array(list(out["key"]), type=arrow.field(plan.key).type), times,
               pa.array(out["tag"].astype(str).to_numpy(dtype=object), type=pa.string()),
               pa.array(out["status"].to_numpy().astype(np.int8)),
               pa.array(out["value"].to_numpy())]
    yield pa.RecordBatch.from_arrays(columns, schema=arrow)


def _floats(column: pd.Series) -> np.ndarray:
    return pd.to_numeric(column).to_numpy(dtype=np.float64, na_value=np.nan)

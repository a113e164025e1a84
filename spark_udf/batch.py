"""Batch monitoring of a Spark DataFrame: one output row per input event (API.md, "Spark").

Pipeline position: the last stage. ``monitor_frame`` takes a DataFrame of
events and a compiled :class:`qre.Monitor`; Spark groups the events by key,
and each group runs through the monitor's compiled engine (Numba kernels) in
a Python worker; the result is a DataFrame with the input's columns (all, or
the key, time and tag columns and those ``keep`` names) plus ``status``
(tinyint: 0 undefined, 1 defined, 2 conflict) and ``value`` (double, NaN
unless defined) — or ``status_F`` / ``value_F`` per output F of a monitor
with several outputs; ``prefix`` starts those names (:mod:`qre.runtime.output`).

Order of events. Within a key, events are processed in event-time order.
Ties in time are broken by the ``tiebreak`` columns if given (e.g. a
sequence number), then by the tag, then by the value columns (NaN last): the
rule of :mod:`qre.runtime.order`, on the rows' contents, so the result never depends
on how Spark partitioned or ordered the input. Rows equal in all these
columns are interchangeable to the query: they get their outputs in some
order (visible only through other kept columns: give a tiebreak column when
that matters). A null time is an error.

How it runs (``method``). ``"sorted"``, the default: repartition by key,
sort each partition by (key, time, ties, tag, values), and ``mapInArrow``
over the Arrow batches, carrying a key's configuration (a
:class:`qre.runtime.monitor.Session`) from one batch to the next; tag codes are
computed once per batch. ``"grouped"``: ``groupBy(key).applyInPandas``, one
pandas frame per key. Measured side by side (``benchmarks/spark_frame.py``,
RESULTS.md: 10M events, 100k keys, ``avg_last(5, cur)``, local[*] on 2
cores): sorted 632,000 rows/s, grouped 73,000 rows/s, because a grouped UDF
pays Spark's and pandas' overhead once per key; an ``applyInArrow`` per key
that only sorts the key's events already takes as long as the whole sorted
method (621,000 rows/s), so it was not built. The equivalent native Spark SQL
window runs at 1,046,000 rows/s, a plain-Python ``applyInPandas`` loop at
119,000.

How monitors travel (:mod:`spark_udf.plan`). The driver ships the DT as
JSON (exact: terms print and parse back unchanged); each Python worker
rebuilds the Monitor once per DT and reuses it (``spark.python.worker.reuse``),
so the kernels compile or load from their caches once per worker process.

Cost: one shuffle by key and a sort within partitions, then O(DT size) per
event in the kernel plus a small fixed cost per key and per Arrow batch.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
import pandas as pd

from qre.runtime.monitor import Monitor, tag_codes

from .plan import (
    Plan,
    event_data,
    is_null,
    make_plan,
    nan_for_null,
    null_time_error,
    output_fields,
    plain,
    spark_frame,
    spark_sort_columns,
    take_rows,
    text,
    time_ordered,
    worker_monitor,
)

__all__ = ["monitor_frame"]

METHODS = ("sorted", "grouped")
"""How :func:`monitor_frame` runs: ``"sorted"`` (repartition by key, sort
within partitions, ``mapInArrow`` over Arrow batches carrying each key's
configuration across batches) or ``"grouped"`` (``groupBy(key).applyInPandas``,
one pandas frame per key)."""


def monitor_frame(df: Any, monitor: Monitor, key: str, time: str, tag: str,
                  value: str | Sequence[str] | None = None, *,
                  tiebreak: str | Sequence[str] = (), keep: str | Sequence[str] | None = None,
                  prefix: str = "", engine: str = "auto", unknown_tags: str = "error",
                  method: str = "sorted") -> Any:
    """Run ``monitor`` over the events of ``df``, one independent stream per key.

    ``value`` names the column read as ``cur``, or (a list) the columns read
    as ``cur.FIELD``; ``tiebreak`` columns order events with equal times
    (see the module docstring for the whole rule). ``engine`` and
    ``unknown_tags`` are those of :meth:`qre.Monitor.run`; ``method`` one of
    :data:`METHODS` (same rows either way). Returns one row per input row: the
    input's columns (``keep``: only these besides key, time and tag), then
    ``status`` and ``value`` (``status_F, value_F`` per output F with several
    outputs; every added name starts with ``prefix``, and may not be the name of
    an input column output beside it). ``df`` may be a pandas DataFrame: it is
    converted with the active Spark session. Raises ValueError at once for a
    missing column, a name collision or value columns that do not match what the
    query reads; data errors (a null time, an unknown tag) fail the job with a
    message naming the key and the column.
    """
    from pyspark.sql.types import StructType

    if not isinstance(method, str) or method not in METHODS:
        raise ValueError(f"unknown method {method!r}; methods: {', '.join(METHODS)}")
    df = spark_frame(df, "monitor_frame")
    plan = make_plan("monitor_frame", df, monitor, key, time, tag, value, tiebreak, engine,
                     unknown_tags, keep=keep, prefix=prefix)
    schema = StructType(output_fields(df.schema, plan))
    events = df.select(*plan.columns)
    if method == "grouped":
        def run_group(pdf: pd.DataFrame) -> pd.DataFrame:
            return _run_group(pdf, plan)

        return nan_for_null(events.groupBy(key).applyInPandas(run_group, schema), plan)
    ordered = events.repartition(key).sortWithinPartitions(
        *spark_sort_columns(plan, events.schema))

    def run_partition(batches: Iterator[Any]) -> Iterator[Any]:
        return _run_partition(batches, plan, schema)

    return ordered.mapInArrow(run_partition, schema)


def _run_group(pdf: pd.DataFrame, plan: Plan) -> pd.DataFrame:
    """One key's events: the time order of the module docstring, then the monitor."""
    key = plain(pdf[plan.key].iloc[0])
    if pdf[plan.time].isna().any():
        raise null_time_error("monitor_frame", plan, key)
    events = time_ordered(pdf, plan)
    m = worker_monitor(plan)
    tags = events[plan.tag].to_numpy(dtype=object)
    try:
        out = m.run(tags, event_data(events, plan), engine=m.resolve_engine(plan.engine),
                    unknown_tags=plan.unknown_tags)  # type: ignore[arg-type]
    except ValueError as e:  # positions are in the key's time order: say which key
        raise ValueError(f"monitor_frame, key {key!r} (events in time order): {e}") from None
    result = pd.DataFrame({c: events[plan.tag].map(text) if c == plan.tag else events[c]
                           for c in plan.shown})
    status = out.status.astype(np.int8).reshape(len(events), -1)
    value = out.value.reshape(len(events), -1)
    for j, (s, v) in enumerate(plan.result_pairs):
        result[s], result[v] = status[:, j], value[:, j]
    return result


def _run_partition(batches: Iterator[Any], plan: Plan, schema: Any) -> Iterator[Any]:
    """A partition sorted by (key, time, ties, tag, values): each key's rows are
    contiguous, possibly across Arrow batches, so the configuration of the key at
    the end of a batch is carried into the next one (a :class:`qre.runtime.monitor.Session`)."""
    import pyarrow as pa
    from pyspark.sql.pandas.types import to_arrow_schema

    m = worker_monitor(plan)
    engine = m.resolve_engine(plan.engine)  # once: checking the kernel cache is not free
    arrow_schema = to_arrow_schema(schema, timezone=plan.timezone)
    carried: tuple[Any, Any] | None = None  # (key, session) of the last key of the batch
    for batch in batches:
        events = batch.to_pandas()
        if len(events) == 0:
            continue
        if events[plan.time].isna().any():
            row = int(np.flatnonzero(events[plan.time].isna().to_numpy())[0])
            raise null_time_error("monitor_frame", plan, events[plan.key].iloc[row])
        ids, uniques = pd.factorize(events[plan.key], use_na_sentinel=False)
        bounds = np.flatnonzero(np.diff(ids)) + 1
        starts, ends = np.r_[0, bounds], np.r_[bounds, len(events)]
        status = np.empty((len(events), len(plan.outputs)), dtype=np.int8)
        value = np.empty((len(events), len(plan.outputs)), dtype=np.float64)
        tags = events[plan.tag].to_numpy(dtype=object)
        # Tag codes once per batch (the monitor's fast path); a key with an unknown tag
        # gets its strings instead, so that the monitor skips or names it.
        codes = tag_codes(tags, m.alphabet, skip_unknown=True)
        data = event_data(events, plan)
        for g, (lo, hi) in enumerate(zip(starts, ends, strict=True)):
            key = plain(uniques[ids[lo]])
            if carried is not None and g == 0 and _same_key(carried[0], key):
                session = carried[1]
            else:
                session = m.session(engine=engine)
            rows = slice(lo, hi)
            known = int(codes[rows].min(initial=0)) >= 0
            try:
                out = session.feed(codes[rows] if known else tags[rows], take_rows(data, rows),
                                   unknown_tags=plan.unknown_tags)  # type: ignore[arg-type]
            except ValueError as e:
                raise ValueError(f"monitor_frame, key {key!r} (events in time order): {e}") \
                    from None
            status[rows] = out.status.reshape(hi - lo, -1)
            value[rows] = out.value.reshape(hi - lo, -1)
            carried = (key, session)
        columns = [batch.column(c).cast(pa.string()) if c == plan.tag else batch.column(c)
                   for c in plan.shown]
        for j in range(status.shape[1]):
            columns += [pa.array(status[:, j]), pa.array(value[:, j])]
        yield pa.RecordBatch.from_arrays(columns, schema=arrow_schema)


def _same_key(a: Any, b: Any) -> bool:
    """Key equality as Spark groups keys: all nulls (and NaNs) are one key."""
    if is_null(a) or is_null(b):
        return is_null(a) and is_null(b)
    return bool(a == b)

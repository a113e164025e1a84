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

How it runs (``method``). ``"local"``, the default: repartition by key and
``mapInArrow`` over each whole partition: the worker reads the partition into
one Arrow table, puts it in processing order itself (numbering keys, one sort of
key and time, ties only where times tie: :func:`qre.runtime.order.processing_order`)
and runs all its keys in one :meth:`~qre.Monitor.run_keys` call. No Spark sort,
but the worker holds the partition in memory (its columns and the outputs: about
40 bytes per row for a key, a time, a tag and a value): for partitions larger than
a worker can hold, raise ``spark.sql.shuffle.partitions`` or take ``"sorted"``,
whose sort Spark spills to disk. ``"sorted"``: repartition by key, Spark sorts each
partition by (key, time, ties, tag, values), and ``mapInArrow`` streams the Arrow
batches, carrying a key's configuration (a :class:`qre.runtime.monitor.Session`)
from one batch to the next; each batch's keys run in one ``run_keys`` call.
``"grouped"``: ``groupBy(key).applyInArrow``, one Arrow table per key, sorted,
then run as a sorted partition holding one key.
Measured side by side (``benchmarks/spark_frame.py``, RESULTS.md: 10M events,
100k keys, ``avg_last(5, cur)``, local[*] on 2 cores; issue 20): local 1.01x the
equivalent native Spark SQL window (1.10x in another run), sorted 0.65x (0.60x when
it fed a session per key), grouped 0.10x (a grouped UDF pays Spark's overhead once
per key; an ``applyInArrow`` per key that only sorts runs at 0.54x).
(``applyInArrow`` replaced ``applyInPandas`` for exactness, issue 19.)

Keys and columns stay exact (issue 19): keys are told apart on the Arrow
columns by :mod:`qre.runtime.keys`' rule, Spark's own (a pandas view would make
a long column with a null into floats and a double's null into NaN), and the
input columns go back as the Arrow columns they came in, NaN and nulls apart.

How monitors travel (:mod:`spark_udf.plan`). The driver ships the DT as
JSON (exact: terms print and parse back unchanged); each Python worker
rebuilds the Monitor once per DT and reuses it (``spark.python.worker.reuse``),
so the kernels compile or load from their caches once per worker process.

Cost: one shuffle by key, then (``"local"``) numbering the keys and one sort of key
and time in the worker, or (``"sorted"``) Spark's sort within partitions, then
O(DT size) per event in the kernel plus a small fixed cost per Arrow batch.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from qre.runtime.keys import same_key, stream_ids
from qre.runtime.monitor import Monitor
from qre.runtime.order import processing_order, sortable_times
from qre.runtime.tag_codes import tag_codes
from qre.runtime.window_fields import check_runnable

from .plan import (
    Plan,
    event_data,
    make_plan,
    name_unknown_tag,
    null_time_error,
    order_of,
    output_fields,
    spark_frame,
    spark_sort_columns,
    take_rows,
    worker_monitor,
)

__all__ = ["monitor_frame"]

METHODS = ("local", "sorted", "grouped")
"""How :func:`monitor_frame` runs: ``"local"`` (repartition by key, ``mapInArrow``
reading a whole partition and ordering it in the worker: no Spark sort),
``"sorted"`` (repartition by key, sort within partitions, ``mapInArrow`` over
Arrow batches carrying each key's configuration across batches) or ``"grouped"``
(``groupBy(key).applyInArrow``, one Arrow table per key)."""


def monitor_frame(df: Any, monitor: Monitor, key: str, time: str, tag: str,
                  value: str | Sequence[str] | None = None, *,
                  tiebreak: str | Sequence[str] = (), keep: str | Sequence[str] | None = None,
                  prefix: str = "", engine: str = "auto", unknown_tags: str = "error",
                  method: str = "local") -> Any:
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
    missing column, a column of the wrong type (a time that is not a number or a
    timestamp, a value that is not a number), a name collision or value columns
    that do not match what the query reads; data errors (a null time, an unknown
    tag) fail the job with a message naming the key and the column.
    """
    from pyspark.sql.types import StructType

    if not isinstance(method, str) or method not in METHODS:
        raise ValueError(f"unknown method {method!r}; methods: {', '.join(METHODS)}")
    df = spark_frame(df, "monitor_frame")
    plan = make_plan("monitor_frame", df, monitor, key, time, tag, value, tiebreak, engine,
                     unknown_tags, keep=keep, prefix=prefix)
    if method != "local":  # these feed a key's events in pieces, windows need them whole
        check_runnable(monitor, f"monitor_frame(method={method!r})")
    schema = StructType(output_fields(df.schema, plan))
    events = df.select(*plan.columns)
    if method == "grouped":
        def run_group(table: Any) -> Any:
            return _run_group(table, plan, schema)

        return events.groupBy(key).applyInArrow(run_group, schema)
    if method == "local":
        def run_local(batches: Iterator[Any]) -> Iterator[Any]:
            return _run_local(batches, plan, schema)

        return events.repartition(key).mapInArrow(run_local, schema)
    ordered = events.repartition(key).sortWithinPartitions(
        *spark_sort_columns(plan, events.schema))

    def run_partition(batches: Iterator[Any]) -> Iterator[Any]:
        return _run_partition(batches, plan, schema)

    return ordered.mapInArrow(run_partition, schema)


def _run_group(table: Any, plan: Plan, schema: Any) -> Any:
    """One key's events (an Arrow table): put in the order of the module docstring, then
    run as a sorted partition holding one key."""
    import pyarrow as pa
    from pyspark.sql.pandas.types import to_arrow_schema

    rows = table.take(order_of(table.select(plan.order).to_pandas(), plan))
    out = list(_run_partition(iter(rows.combine_chunks().to_batches()), plan, schema))
    return pa.Table.from_batches(out, schema=to_arrow_schema(schema, timezone=plan.timezone))


def _run_partition(batches: Iterator[Any], plan: Plan, schema: Any) -> Iterator[Any]:
    """A partition sorted by (key, time, ties, tag, values): each key's rows are
    contiguous, possibly across Arrow batches, so the configuration of the key at
    the end of a batch is carried into the next one (a :class:`qre.runtime.monitor.Session`).

    Keys are told apart on the Arrow column itself (:mod:`qre.runtime.keys`: a pandas
    view would turn a long key column with a null into floats, merging 2**53 and
    2**53 + 1, and a double key's null into NaN); the output columns are the input's
    Arrow columns, untouched."""
    import pyarrow as pa
    from pyspark.sql.pandas.types import to_arrow_schema

    m = worker_monitor(plan)
    engine = m.resolve_engine(plan.engine)  # once: checking the kernel cache is not free
    arrow_schema = to_arrow_schema(schema, timezone=plan.timezone)
    carried: tuple[Any, Any] | None = None  # (key, session) of the last key of the batch
    for batch in batches:
        if batch.num_rows == 0:
            continue
        ev = _read_events(batch, m, engine, plan, time_ordered=True)
        status, value, carried = _run_batch(m, engine, plan, ev.ids, ev.uniques, ev.tags,
                                            ev.data, carried)
        yield pa.RecordBatch.from_arrays(_output_columns(batch, plan, status, value),
                                         schema=arrow_schema)


@dataclass(frozen=True)
class _BatchEvents:
    """The events of an Arrow batch or table as the monitor reads them."""

    ids: np.ndarray  # stream ids (qre.runtime.keys' rule) and each id's key
    uniques: np.ndarray
    events: pd.DataFrame  # the order columns (time, ties, tag, values)
    codes: np.ndarray  # tag codes, −1 for a tag outside the alphabet
    tags: np.ndarray  # what the monitor is fed: the codes, or the strings if one is unknown
    data: Any  # event_data: cur, or the cur.F columns


def _read_events(rows: Any, m: Monitor, engine: str, plan: Plan, *,
                 time_ordered: bool) -> _BatchEvents:
    """Key ids, the order columns, tag codes once per batch (the monitor's fast path; with
    an unknown tag the strings go to the monitor instead, so that it skips them) and the
    event data; a null time, or an unknown tag under ``unknown_tags="error"``, is an error
    naming its key (the tag's position among its key's events in time order: the rows'
    order if ``time_ordered``)."""
    ids, uniques = stream_ids(rows.column(plan.key))
    events = rows.select(plan.order).to_pandas()
    if events[plan.time].isna().any():
        row = int(np.flatnonzero(events[plan.time].isna().to_numpy())[0])
        raise null_time_error("monitor_frame", plan, uniques[ids[row]])
    tags = events[plan.tag].to_numpy(dtype=object)
    codes = tag_codes(tags, m.alphabet, skip_unknown=True)
    known = int(codes.min(initial=0)) >= 0
    if not known and plan.unknown_tags == "error":
        name_unknown_tag("monitor_frame", "events", m, engine, tags, codes, ids, uniques,
                         None if time_ordered
                         else lambda rows: rows[order_of(events.iloc[rows], plan)])
    return _BatchEvents(ids, uniques, events, codes, codes if known else tags,
                        event_data(events, plan))


def _output_columns(rows: Any, plan: Plan, status: np.ndarray, value: np.ndarray
                    ) -> list[Any]:
    """The shown input columns of an Arrow batch or table (the tag as text), then each
    output's status and value."""
    import pyarrow as pa

    columns = [rows.column(c).cast(pa.string()) if c == plan.tag else rows.column(c)
               for c in plan.shown]
    for j in range(status.shape[1]):
        columns += [pa.array(status[:, j]), pa.array(value[:, j])]
    return columns


def _run_local(batches: Iterator[Any], plan: Plan, schema: Any) -> Iterator[Any]:
    """A whole partition (every key's rows, in any order), read into one table and put in
    processing order here (:func:`qre.runtime.order.processing_order`: by key, time and
    ties, the rule Spark's sort follows for ``"sorted"``), then run as one sorted batch:
    one :meth:`~qre.Monitor.run_keys` call. Holds the partition in the worker's memory."""
    import pyarrow as pa
    from pyspark.sql.pandas.types import to_arrow_schema

    parts = [b for b in batches if b.num_rows]  # Spark may call with no batch at all
    if not parts:
        return
    table = pa.Table.from_batches(parts)
    m = worker_monitor(plan)
    engine = m.resolve_engine(plan.engine)
    ev = _read_events(table, m, engine, plan, time_ordered=False)
    events = ev.events
    order = processing_order(ev.ids, _time_order(events[plan.time]),
                             events[plan.tag].to_numpy(dtype=object), ev.codes, m.alphabet,
                             ev.data, {c: events[c].to_numpy() for c in plan.tiebreak} or None)
    status, value, _ = _run_batch(m, engine, plan, ev.ids[order], ev.uniques, ev.tags[order],
                                  take_rows(ev.data, order), None, carry=False)
    result = pa.Table.from_arrays(_output_columns(table.take(order), plan, status, value),
                                  schema=to_arrow_schema(schema, timezone=plan.timezone))
    yield from result.to_batches(max_chunksize=_LOCAL_BATCH_ROWS)


def _time_order(times: Any) -> np.ndarray:
    """Times as sortable int64 or float64: numbers and timestamps as they are
    (:func:`~qre.runtime.order.sortable_times`); dates and decimals, which Spark sorts
    exactly and a float would not hold, as their ranks."""
    if times.dtype.kind in "iufM" or isinstance(times.dtype, pd.DatetimeTZDtype):
        return sortable_times(times)
    return pd.factorize(times, sort=True)[0].astype(np.int64)


_LOCAL_BATCH_ROWS = 65_536
"""Rows per Arrow batch that ``"local"`` hands back to Spark."""


def _run_batch(m: Monitor, engine: str, plan: Plan, ids: np.ndarray, uniques: np.ndarray,
               tags: np.ndarray, data: Any, carried: tuple[Any, Any] | None, *,
               carry: bool = True) -> tuple[np.ndarray, np.ndarray, tuple[Any, Any] | None]:
    """One sorted batch (each key's rows contiguous): the first key continues the carried
    session if it is the same key; the others run from the initial configuration in one
    ``run_keys`` call (all keys in one kernel call, not one call per key); with ``carry``
    the last key's configuration is carried on (its rows fed again to a session: one
    call), else None (a whole partition: nothing follows)."""
    n = len(ids)
    bounds = np.flatnonzero(np.diff(ids)) + 1
    first_end = int(bounds[0]) if len(bounds) else n
    last_start = int(bounds[-1]) if len(bounds) else 0
    status = np.empty((n, len(plan.outputs)), dtype=np.int8)  # Spark's tinyint
    value = np.empty((n, len(plan.outputs)), dtype=np.float64)
    start = 0
    if carried is not None and same_key(carried[0], uniques[ids[0]]):
        out = carried[1].feed(tags[:first_end], take_rows(data, slice(0, first_end)),
                              unknown_tags=plan.unknown_tags)  # type: ignore[arg-type]
        status[:first_end] = out.status.reshape(first_end, -1)
        value[:first_end] = out.value.reshape(first_end, -1)
        start = first_end
    if start < n:
        rest = slice(start, n)
        out = m.run_keys(ids[rest], tags[rest], take_rows(data, rest), engine=engine,
                         unknown_tags=plan.unknown_tags)  # type: ignore[arg-type]
        status[rest] = out.status.reshape(n - start, -1)
        value[rest] = out.value.reshape(n - start, -1)
    if not carry:
        return status, value, None
    session = carried[1] if start == n else m.session(engine=engine)
    if start < n:  # the last key (not the continued one): its configuration, carried on
        session.feed(tags[last_start:], take_rows(data, slice(last_start, n)),
                     unknown_tags=plan.unknown_tags)  # type: ignore[arg-type]
    return status, value, (uniques[ids[-1]], session)

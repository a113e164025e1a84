"""Batch monitoring of a Spark DataFrame: one output row per input event (API.md, "Spark").

Pipeline position: the last stage. ``monitor_frame`` takes a DataFrame of
events and a compiled :class:`qre.Monitor`; Spark groups the events by key,
and each group runs through the monitor's compiled engine (Numba kernels) in
a Python worker; the result is a DataFrame with the key, time and tag
columns under their own names plus ``status`` (tinyint: 0 undefined, 1
defined, 2 conflict) and ``value`` (double, NaN unless defined) — or
``status_F`` / ``value_F`` per output F of a monitor with several outputs.

Order of events. Within a key, events are processed in event-time order.
Ties in time are broken by the ``tiebreak`` columns if given (e.g. a
sequence number), then by the tag, then by the value columns (NaN last): a
rule on the rows' contents, so the result never depends on how Spark
partitioned or ordered the input. Rows equal in all these columns are
interchangeable: they get their outputs in some order, and which row gets
which is not observable. A null time is an error.

How it runs (``method``). ``"sorted"``, the default: repartition by key,
sort each partition by (key, time, ties, tag, values), and ``mapInArrow``
over the Arrow batches, carrying a key's configuration (a
:class:`qre.monitor.Session`) from one batch to the next; tag codes are
computed once per batch. ``"grouped"``: ``groupBy(key).applyInPandas``, one
pandas frame per key. Measured side by side (``benchmarks/spark_frame.py``,
1M events, 10k keys, ``avg_last(5, cur)``, local[*] on 2 cores): sorted
375,000 rows/s, grouped 41,000 rows/s, because the grouped UDF pays Spark's
and pandas' overhead once per key. ``applyInArrow`` has the same per-group
shape as ``applyInPandas`` and was not built.

How monitors travel. The driver ships the DT as JSON (exact: terms print
and parse back unchanged); each Python worker rebuilds the Monitor once per
DT and reuses it (``spark.python.worker.reuse``), so the kernels compile or
load from their caches once per worker process.

Cost: one shuffle by key and a sort within partitions, then O(DT size) per
event in the kernel plus a small fixed cost per key and per Arrow batch.
"""

from __future__ import annotations

import hashlib
import logging
import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from dt import DT
from qre.frames import value_columns_problem
from qre.monitor import Monitor, tag_codes

__all__ = ["monitor_fingerprint", "monitor_frame"]

log = logging.getLogger(__name__)


def monitor_fingerprint(m: Monitor) -> str:
    """A digest of what a monitor computes: its DT (as compiled) and alphabet.

    Two monitors with the same fingerprint give the same outputs on every
    input; a checkpointed stream stores it to refuse a different query.
    """
    return hashlib.sha256(_dt_text(m).encode()).hexdigest()


def _dt_text(m: Monitor) -> str:
    return (m.unoptimized or m.dt).to_json(indent=None)


@dataclass(frozen=True)
class _Plan:
    """Everything a worker needs, small and picklable."""

    dt_json: str
    alphabet: tuple[str, ...]
    key: str
    time: str
    tag: str
    values: tuple[str, ...]
    tiebreak: tuple[str, ...]
    scalar: bool  # the DT reads plain cur (one value column) rather than fields
    outputs: tuple[str, ...]  # names of the output columns' suffixes; () for one output
    engine: str
    unknown_tags: str


_WORKER_MONITORS: dict[str, Monitor] = {}
"""Monitors rebuilt in this (worker) process, by DT fingerprint."""


def _worker_monitor(plan: _Plan) -> Monitor:
    digest = hashlib.sha256(plan.dt_json.encode()).hexdigest()
    m = _WORKER_MONITORS.get(digest)
    if m is None:
        m = _WORKER_MONITORS[digest] = Monitor.from_dt(DT.from_json(plan.dt_json),
                                                       list(plan.alphabet))
    return m


METHODS = ("sorted", "grouped")
"""How :func:`monitor_frame` runs: ``"sorted"`` (repartition by key, sort
within partitions, ``mapInArrow`` over Arrow batches carrying each key's
configuration across batches) or ``"grouped"`` (``groupBy(key).applyInPandas``,
one pandas frame per key)."""


def monitor_frame(df: Any, monitor: Monitor, key: str, time: str, tag: str,
                  value: str | Sequence[str] | None = None, *,
                  tiebreak: str | Sequence[str] = (), engine: str = "auto",
                  unknown_tags: str = "error", method: str = "sorted") -> Any:
    """Run ``monitor`` over the events of ``df``, one independent stream per key.

    ``value`` names the column read as ``cur``, or (a list) the columns read
    as ``cur.FIELD``; ``tiebreak`` columns order events with equal times
    (see the module docstring for the whole rule). ``engine`` and
    ``unknown_tags`` are those of :meth:`qre.Monitor.run`; ``method`` one of
    :data:`METHODS` (same rows either way). Returns a DataFrame
    of ``key, time, tag, status, value`` (``status_F, value_F`` per output F
    with several outputs), one row per input row. Raises ValueError at once
    for a missing column or value columns that do not match what the query
    reads; data errors (a null time, an unknown tag) fail the job with a
    message naming the key and the column.
    """
    if method not in METHODS:
        raise ValueError(f"unknown method {method!r}; methods: {', '.join(METHODS)}")
    values = (value,) if isinstance(value, str) else tuple(value or ())
    ties = (tiebreak,) if isinstance(tiebreak, str) else tuple(tiebreak)
    _check_columns(df, {"key": key, "time": time, "tag": tag},
                   {"value": values, "tiebreak": ties})
    source = monitor.unoptimized or monitor.dt
    scalar = _check_values(source, values)
    outputs = () if len(source.final) == 1 else source.final
    plan = _Plan(_dt_text(monitor), tuple(monitor.alphabet), key, time, tag, values, ties,
                 scalar, outputs, engine, unknown_tags)
    if engine == "auto":
        # Compile the query's kernel once, here: workers on this machine load it from the
        # disk cache, and "auto" then picks it (17-36x the table engine, RESULTS.md).
        monitor.prepare("codegen")
    schema = _output_schema(df.schema, plan)
    needed = list(dict.fromkeys([key, time, tag, *values, *ties]))
    events = df.select(*needed)
    if method == "grouped":
        def run_group(pdf: pd.DataFrame) -> pd.DataFrame:
            return _run_group(pdf, plan)

        return events.groupBy(key).applyInPandas(run_group, schema)
    from pyspark.sql import functions as F

    order = [F.col(c).asc_nulls_last() for c in (key, time, *ties, tag, *values)]
    ordered = events.repartition(key).sortWithinPartitions(*order)

    def run_partition(batches: Iterator[Any]) -> Iterator[Any]:
        return _run_partition(batches, plan, schema)

    return ordered.mapInArrow(run_partition, schema)


def _check_columns(df: Any, single: dict[str, str], multiple: dict[str, Sequence[str]]) -> None:
    have = set(df.columns)
    for role, name in [*single.items(), *((r, n) for r, ns in multiple.items() for n in ns)]:
        if name not in have:
            raise ValueError(f"monitor_frame: no column {name!r} for {role} in the DataFrame "
                             f"(columns: {', '.join(df.columns)})")


def _check_values(source: DT, values: Sequence[str]) -> bool:
    """True if the query reads plain ``cur``; ValueError if the value columns do not fit."""
    problem = value_columns_problem(
        source, values,
        lambda col: "value column" if col is None else f"{col!r} to the value columns")
    if problem is not None:
        raise ValueError(problem)
    return source.reads_scalar_cur


def _output_schema(schema: Any, plan: _Plan) -> Any:
    from pyspark.sql.types import ByteType, DoubleType, StringType, StructField, StructType

    fields = [StructField(plan.key, schema[plan.key].dataType, True),
              StructField(plan.time, schema[plan.time].dataType, True),
              StructField(plan.tag, StringType(), True)]
    for suffix in plan.outputs or ("",):
        name = f"_{suffix}" if suffix else ""
        fields += [StructField(f"status{name}", ByteType(), False),
                   StructField(f"value{name}", DoubleType(), True)]
    return StructType(fields)


def _run_group(pdf: pd.DataFrame, plan: _Plan) -> pd.DataFrame:
    """One key's events: the time order of the module docstring, then the monitor."""
    key = pdf[plan.key].iloc[0]
    key = key.item() if isinstance(key, np.generic) else key
    if pdf[plan.time].isna().any():
        raise ValueError(f"monitor_frame: column {plan.time!r} (time) is null for key "
                         f"{key!r}; every event needs a time")
    order = [plan.time, *plan.tiebreak, plan.tag, *plan.values]
    events = pdf.sort_values(order, kind="mergesort", na_position="last", ignore_index=True)
    m = _worker_monitor(plan)
    tags = events[plan.tag].to_numpy(dtype=object)
    data = _event_data(events, plan)
    try:
        out = m.run(tags, data, engine=m.resolve_engine(plan.engine),
                    unknown_tags=plan.unknown_tags)  # type: ignore[arg-type]
    except ValueError as e:  # positions are in the key's time order: say which key
        raise ValueError(f"monitor_frame, key {key!r} (events in time order): {e}") from None
    result = pd.DataFrame({plan.key: events[plan.key], plan.time: events[plan.time],
                           plan.tag: events[plan.tag].map(_text)})
    status = out.status.astype(np.int8)
    if not plan.outputs:
        result["status"], result["value"] = status, out.value
    else:
        for j, name in enumerate(plan.outputs):
            result[f"status_{name}"], result[f"value_{name}"] = status[:, j], out.value[:, j]
    return result


def _run_partition(batches: Iterator[Any], plan: _Plan, schema: Any) -> Iterator[Any]:
    """A partition sorted by (key, time, ties, tag, values): each key's rows are
    contiguous, possibly across Arrow batches, so the configuration of the key at
    the end of a batch is carried into the next one (a :class:`qre.monitor.Session`)."""
    import pyarrow as pa

    m = _worker_monitor(plan)
    engine = m.resolve_engine(plan.engine)  # once: checking the kernel cache is not free
    arrow_schema = _arrow_schema(schema)
    carried: tuple[Any, Any] | None = None  # (key, session) of the last key of the batch
    for batch in batches:
        events = batch.to_pandas()
        if len(events) == 0:
            continue
        if events[plan.time].isna().any():
            row = int(np.flatnonzero(events[plan.time].isna().to_numpy())[0])
            raise ValueError(f"monitor_frame: column {plan.time!r} (time) is null for key "
                             f"{_plain(events[plan.key].iloc[row])!r}; every event needs a time")
        ids, uniques = pd.factorize(events[plan.key], use_na_sentinel=False)
        bounds = np.flatnonzero(np.diff(ids)) + 1
        starts, ends = np.r_[0, bounds], np.r_[bounds, len(events)]
        status = np.empty((len(events), max(1, len(plan.outputs))), dtype=np.int8)
        value = np.empty((len(events), max(1, len(plan.outputs))), dtype=np.float64)
        tags = events[plan.tag].to_numpy(dtype=object)
        # Tag codes once per batch (the monitor's fast path); a key with an unknown tag
        # gets its strings instead, so that the monitor skips or names it.
        codes = tag_codes(tags, m.alphabet, skip_unknown=True)
        data = _event_data(events, plan)
        for g, (lo, hi) in enumerate(zip(starts, ends, strict=True)):
            key = _plain(uniques[ids[lo]])
            if carried is not None and g == 0 and _same_key(carried[0], key):
                session = carried[1]
            else:
                session = m.session(engine=engine)
            rows = slice(lo, hi)
            known = int(codes[rows].min(initial=0)) >= 0
            try:
                out = session.feed(codes[rows] if known else tags[rows], _take_rows(data, rows),
                                   unknown_tags=plan.unknown_tags)  # type: ignore[arg-type]
            except ValueError as e:
                raise ValueError(f"monitor_frame, key {key!r} (events in time order): {e}") \
                    from None
            status[rows] = out.status.reshape(hi - lo, -1)
            value[rows] = out.value.reshape(hi - lo, -1)
            carried = (key, session)
        columns = [batch.column(plan.key), batch.column(plan.time),
                   batch.column(plan.tag).cast(pa.string())]
        for j in range(status.shape[1]):
            columns += [pa.array(status[:, j]), pa.array(value[:, j])]
        yield pa.RecordBatch.from_arrays(columns, schema=arrow_schema)


def _arrow_schema(schema: Any) -> Any:
    from pyspark.sql.pandas.types import to_arrow_schema

    return to_arrow_schema(schema)


def _text(tag: Any) -> str | None:
    return None if _is_null(tag) else str(tag)


def _plain(key: Any) -> Any:
    return key.item() if isinstance(key, np.generic) else key


def _same_key(a: Any, b: Any) -> bool:
    """Key equality as Spark groups keys: all nulls (and NaNs) are one key."""
    if _is_null(a) or _is_null(b):
        return _is_null(a) and _is_null(b)
    return bool(a == b)


def _is_null(x: Any) -> bool:
    return x is None or (isinstance(x, float) and math.isnan(x))


def _take_rows(data: Any, rows: slice) -> Any:
    if data is None:
        return None
    if isinstance(data, dict):
        return {name: column[rows] for name, column in data.items()}
    return data[rows]


def _event_data(events: pd.DataFrame, plan: _Plan) -> Any:
    """``cur`` as one float column, or ``cur.F`` as a record of float columns."""
    def column(name: str) -> np.ndarray:
        return pd.to_numeric(events[name]).to_numpy(dtype=np.float64, na_value=np.nan)

    if not plan.values:
        return None
    if plan.scalar:
        return column(plan.values[0])
    return {name: column(name) for name in plan.values}

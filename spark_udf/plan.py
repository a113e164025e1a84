"""What travels from the driver to Spark's Python workers, and how a worker reads it.

Shared by batch (:mod:`spark_udf.batch`) and streaming
(:mod:`spark_udf.stream`): the :class:`Plan` (the monitor as DT JSON plus
the column roles), the driver-side checks of the columns, the output schema,
the monitor rebuilt once per worker process, the time order of one key's
events, and the event data handed to the monitor.

Why JSON: terms print and parse back unchanged, so the DT a worker rebuilds
is the driver's DT bit for bit; :func:`monitor_fingerprint` digests the same
text.
"""

from __future__ import annotations

import hashlib
import json
import math
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from dt import DT
from qre.language.ast import Aggregate, WindowSignal
from qre.language.clock import Clock
from qre.language.derive import Derivation
from qre.runtime.cer.matches import Matcher
from qre.runtime.frames import value_columns_problem
from qre.runtime.monitor import Monitor, Output, Session
from qre.runtime.order import Tie, event_order, sortable
from qre.runtime.output import check_no_collision, result_columns
from qre.runtime.timed import is_timed, needed_fields

__all__ = ["LATE", "START", "Plan", "check_arguments", "concat_rows", "feed_in_runs", "frame_rows",
           "make_plan", "monitor_fingerprint", "nan_for_null", "order_of", "session_time_zone",
           "spark_frame", "worker_monitor"]


def monitor_fingerprint(m: Monitor | Matcher) -> str:
    """A digest of what a monitor computes and of the layout of its state: its DT
    as compiled and as optimized, and its alphabet (and a timed monitor's clock and
    derived tags, and a query's sliding windows: its DT reads their values as fields,
    so ``sum_over(3, cur)`` and ``distinct_over(3, cur)`` have the same DT).

    Two monitors with the same fingerprint give the same outputs on every
    input and read each other's ``Session.state``; a checkpointed stream
    stores it to refuse a different query.
    """
    if isinstance(m, Matcher):  # a match query: its text, alphabet and derived tags
        text = json.dumps(["match", repr(m.query), list(m.alphabet),
                           repr(m.derivation and m.derivation.tags)])
        return hashlib.sha256(text.encode()).hexdigest()
    parts = [_dt_text(m), m.dt.to_json(indent=None), list(m.alphabet)]
    if m.clock is not None or m.derivation is not None:  # timed: the clock and tags too
        parts.append(repr((m.clock, m.derivation and m.derivation.tags)))
    if m.windows is not None:
        parts.append(repr(m.windows.windows))
    text = json.dumps(parts)
    return hashlib.sha256(text.encode()).hexdigest()


def _dt_text(m: Monitor) -> str:
    return (m.unoptimized or m.dt).to_json(indent=None)


@dataclass(frozen=True)
class Plan:
    """Everything a worker needs, small and picklable."""

    dt_json: str
    alphabet: tuple[str, ...]
    key: str
    time: str
    tag: str
    values: tuple[str, ...]
    tiebreak: tuple[str, ...]
    scalar: bool  # the DT reads plain cur (one value column) rather than fields
    outputs: tuple[str, ...]  # the monitor's output names (Monitor.outputs)
    engine: str
    unknown_tags: str
    timezone: str = "UTC"
    """The session's time zone: Arrow timestamps going back to Spark carry it."""
    clock: Clock | None = None
    """A timed monitor's clock (streams only; :mod:`spark_udf.clocked`)."""
    derivation: Derivation | None = None
    """The monitor's derived tags."""
    shown: tuple[str, ...] = ()
    """The input columns output beside the results, in the input's order: the key, time
    and tag columns and those ``keep`` asked for (all, by default)."""
    prefix: str = ""
    """The start of every column name the monitor adds (:mod:`qre.runtime.output`)."""
    stored_windows: tuple[WindowSignal | Aggregate, ...] = ()
    """The query's sliding windows and stored window aggregates (:attr:`Monitor.windows`):
    the worker's monitor computes them before its DT."""

    @property
    def order(self) -> list[str]:
        """The columns that order one key's events: time, tie-breakers, tag, values."""
        return list(dict.fromkeys([self.time, *self.tiebreak, self.tag, *self.values]))

    @property
    def carried(self) -> list[str]:
        """Shown columns that neither group nor order the events (carried along)."""
        return [c for c in self.shown if c != self.key and c not in self.order]

    @property
    def columns(self) -> list[str]:
        """The input columns a worker reads: key, the order columns, the carried ones."""
        return list(dict.fromkeys([self.key, *self.order, *self.carried]))

    @property
    def result_pairs(self) -> list[tuple[str, str]]:
        """``(status, value)``, or ``(status_F, value_F)`` per output F, in output order,
        prefixed (:func:`qre.runtime.output.result_columns`)."""
        return result_columns(self.outputs, self.prefix)

    @property
    def result_columns(self) -> list[str]:
        return [name for pair in self.result_pairs for name in pair]

    def added(self, name: str) -> str:
        """The name of another column the monitor adds (``late``, ``start``): prefixed."""
        return f"{self.prefix}{name}"

    @property
    def windows(self) -> bool:
        """The monitor is a window aggregate: its rows carry their window's ``start``."""
        return self.clock is not None and self.clock.windowed


def check_arguments(caller: str, monitor: Any, key: Any, time: Any, tag: Any, value: Any,
                    tiebreak: Any = (), keep: Any = None, prefix: Any = "",
                    engine: Any = "auto", unknown_tags: Any = "error") -> None:
    """Refuse an argument of the wrong type, naming it, before anything reads it (and
    before any Spark job): the monitor, the column names, the options.

    >>> check_arguments("monitor_frame", None, "k", "t", "tag", "v")
    Traceback (most recent call last):
    TypeError: monitor_frame: monitor must be a qre Monitor (from qre(...)), not NoneType
    """
    if not isinstance(monitor, Monitor):
        raise TypeError(f"{caller}: monitor must be a qre Monitor (from qre(...)), not "
                        f"{type(monitor).__name__}")
    for role, name in (("key", key), ("time", time), ("tag", tag), ("prefix", prefix)):
        if not isinstance(name, str):
            raise TypeError(f"{caller}: {role} must be a column name (a string), not "
                            f"{type(name).__name__}")
    for role, names in (("value", value), ("tiebreak", tiebreak), ("keep", keep)):
        if names is None or isinstance(names, str):
            continue
        if not (isinstance(names, Sequence) and all(isinstance(n, str) for n in names)):
            raise TypeError(f"{caller}: {role} must be a column name or a list of them, not "
                            f"{type(names).__name__}")
    monitor.resolve_engine(engine)  # an unknown engine: a ValueError naming it
    if not isinstance(unknown_tags, str) or unknown_tags not in ("error", "skip"):
        raise ValueError(f"{caller}: unknown_tags must be 'error' or 'skip', got "
                         f"{unknown_tags!r}")


def make_plan(caller: str, df: Any, monitor: Monitor, key: str, time: str, tag: str,
              value: str | Sequence[str] | None, tiebreak: str | Sequence[str],
              engine: str, unknown_tags: str, *, timed: bool = False,
              keep: str | Sequence[str] | None = None, prefix: str = "",
              added: Sequence[str] = (), stamped: bool = False) -> Plan:
    """Check the columns of ``df`` against the roles and the query; the worker's plan.

    Raises ValueError (worded for ``caller``) for a missing column, a column of the
    wrong type (:func:`_check_types`; ``stamped``: the time column's type must hold
    the stamps of a timed run) or value columns that do not fit what the query
    reads, and — unless ``timed`` (the caller runs clocks) — for a timed monitor (a
    clock or event times), which :func:`spark_udf.monitor_timed` runs. Derived tags
    travel with the plan.
    ``keep`` names the input columns output beside the results (None: all; the key,
    time and tag columns always are); a result column — ``prefix`` + status/value, and
    the ``added`` ones such as ``late`` — may not have the name of one of them.
    """
    check_arguments(caller, monitor, key, time, tag, value, tiebreak, keep, prefix, engine,
                    unknown_tags)
    if not timed and is_timed(monitor):
        raise ValueError(f"{caller}: this monitor is timed (a window, a clock period, a "
                         f"pattern's within or a past operator bounded by durations): run it "
                         f"with spark_udf.monitor_timed")
    values = (value,) if isinstance(value, str) else tuple(value or ())
    ties = (tiebreak,) if isinstance(tiebreak, str) else tuple(tiebreak or ())
    have = set(df.columns)
    roles = [("key", key), ("time", time), ("tag", tag), *(("value", v) for v in values),
             *(("tiebreak", t) for t in ties)]
    for role, name in roles:
        if name not in have:
            raise ValueError(f"{caller}: no column {name!r} for {role} in the DataFrame "
                             f"(columns: {', '.join(df.columns)})")
    if hasattr(df, "sparkSession"):  # (the stream simulator of the tests plans on pandas)
        _check_types(caller, df.schema, time, values, stamped)
    reads_scalar_cur = monitor._data_reads.reads_scalar_cur
    problem = value_columns_problem(
        needed_fields(monitor), reads_scalar_cur, values,
        lambda col: "value column" if col is None else f"{col!r} to the value columns")
    if problem is not None:
        raise ValueError(problem)
    shown = _shown(caller, list(df.columns), (key, time, tag), keep)
    results = [c for pair in result_columns(monitor.outputs, prefix) for c in pair]
    check_no_collision([*results, *(f"{prefix}{c}" for c in added)], shown,
                       "pass prefix='{prefix}'")
    if engine == "auto":
        # Compile the query's kernel once, from here, in another process: the job does not
        # wait for it (minutes for a DT of thousands of states). Workers on this machine
        # run the table engine until the kernel is in the disk cache, then codegen (17-36x
        # faster, RESULTS.md; the same outputs bit for bit). monitor.prepare("codegen")
        # before the call puts every batch on codegen.
        monitor.prepare("codegen", background=True)
    return Plan(_dt_text(monitor), tuple(monitor.alphabet), key, time, tag, values, ties,
                reads_scalar_cur, monitor.outputs, engine, unknown_tags,
                session_time_zone(df), monitor.clock, monitor.derivation, shown, prefix,
                () if monitor.windows is None else monitor.windows.windows)


def _check_types(caller: str, schema: Any, time: str, values: Sequence[str],
                 stamped: bool) -> None:
    """Refuse, before any job, a time column that holds no times and a value column that
    holds no numbers, naming the column: Spark would sort a string time as text ("10"
    before "9") and the workers would parse strings and read timestamps as numbers.

    Times are numbers (not booleans) or timestamps — dates and decimals too, but not
    where a timed run writes stamps back in the column's type (``stamped``), which a
    date or a decimal cannot hold exactly. Values are numbers or booleans (as
    :meth:`qre.Monitor.run` reads them)."""
    from pyspark.sql.types import (
        BooleanType,
        DateType,
        DecimalType,
        NumericType,
        TimestampNTZType,
        TimestampType,
    )

    kind = schema[time].dataType
    instant = isinstance(kind, TimestampType | TimestampNTZType)
    if stamped and isinstance(kind, DecimalType | DateType):
        raise ValueError(f"{caller}: column {time!r} (time) is {kind.simpleString()}, which "
                         f"cannot hold a timed run's stamps: cast it to "
                         f"{'double' if isinstance(kind, DecimalType) else 'timestamp'}")
    if not (instant or isinstance(kind, NumericType | DateType)):
        raise ValueError(f"{caller}: column {time!r} (time) is {kind.simpleString()}, not a "
                         f"number or a timestamp: cast it (e.g. F.col({time!r}).cast("
                         f"'timestamp') for ISO 8601 text, .cast('double') for numbers)")
    for name in values:
        kind = schema[name].dataType
        if not isinstance(kind, NumericType | BooleanType):
            raise ValueError(f"{caller}: column {name!r} (value) is {kind.simpleString()}, "
                             f"not a number: cast it, e.g. F.col({name!r}).cast('double')")


def _shown(caller: str, columns: list[str], roles: tuple[str, ...],
           keep: str | Sequence[str] | None) -> tuple[str, ...]:
    """The input columns output beside the results, in input order (:func:`make_plan`)."""
    if keep is None:
        return tuple(columns)
    kept = (keep,) if isinstance(keep, str) else tuple(keep)
    for name in kept:
        if name not in columns:
            raise ValueError(f"{caller}: no column {name!r} to keep in the DataFrame "
                             f"(columns: {', '.join(columns)})")
    return tuple(c for c in columns if c in {*roles, *kept})


def spark_frame(df: Any, caller: str) -> Any:
    """``df`` as a Spark DataFrame: a pandas DataFrame is converted with the active Spark
    session (:func:`spark_udf.local_session` starts one); anything else is refused."""
    if isinstance(df, pd.DataFrame):
        from pyspark.sql import SparkSession

        spark = SparkSession.getActiveSession()
        if spark is None:
            raise ValueError(f"{caller}: got a pandas DataFrame and there is no active Spark "
                             f"session to convert it with: start one (spark_udf.local_session"
                             f"()), or run the monitor in pandas with Monitor.run_keys")
        return spark.createDataFrame(df)
    if not hasattr(df, "sparkSession"):
        raise TypeError(f"{caller}: expected a Spark DataFrame (or a pandas one), got "
                        f"{type(df).__module__}.{type(df).__name__}")
    return df


def session_time_zone(df: Any) -> str:
    """The Spark session's time zone (UTC for a pandas frame, as the rules' tests use)."""
    session = getattr(df, "sparkSession", None)
    return "UTC" if session is None else session.conf.get("spark.sql.session.timeZone")


def output_fields(schema: Any, plan: Plan) -> list[Any]:
    """The output columns: the shown input columns as in the input (the tag as a string),
    a window aggregate's ``start`` (the time column's type), then the results."""
    from pyspark.sql.types import ByteType, DoubleType, StringType, StructField

    fields = [StructField(c, StringType() if c == plan.tag else schema[c].dataType, True)
              for c in plan.shown]
    if plan.windows:
        fields.append(StructField(plan.added(START), schema[plan.time].dataType, True))
    for status, value in plan.result_pairs:
        fields += [StructField(status, ByteType(), False), StructField(value, DoubleType(), True)]
    return fields


def nan_for_null(frame: Any, plan: Plan) -> Any:
    """The value columns with NaN where a pandas UDF's output has null: Spark turns a
    pandas NaN into null on the way to Arrow, and the encoding is NaN unless defined."""
    from pyspark.sql import functions as F

    return frame.withColumns({v: F.coalesce(F.col(v), F.lit(float("nan")))
                              for _, v in plan.result_pairs})


LATE = "late"
"""The stream's output column flagging late events (prefixed: ``Plan.added``)."""

START = "start"
"""The output column of a window's start (prefixed: ``Plan.added``)."""


def frame_rows(plan: Plan, key: Any, events: pd.DataFrame | None, status: np.ndarray,
               value: np.ndarray, late: bool | np.ndarray, *, rows: np.ndarray | None = None,
               tags: Any = None, times: Any = None, starts: Any = None,
               row_keys: np.ndarray | None = None) -> pd.DataFrame:
    """Output rows: the shown input columns, a window aggregate's start (``starts``;
    None: missing, an event's row), the results (``status`` and ``value``: one column per
    output) and, for a stream, the late flag (``late`` None: no such column).

    Row i shows ``events`` row ``rows[i]`` (default: row i; −1 or no ``events``: nulls,
    a clock tick's row); ``tags`` and ``times`` replace the tag and time columns;
    ``row_keys`` (objects) gives each row its key (many keys' rows), else ``key``. Built
    at once: adding columns one by one costs pandas more than the kernel's work on a
    key's rows."""
    n = len(status)
    source = None
    if events is not None:
        source = events if rows is None else events.iloc[np.maximum(rows, 0)]
    missing = None if rows is None else rows < 0
    columns: dict[str, Any] = {}
    for c in plan.shown:
        if c == plan.key:
            columns[c] = _key_cells(key, n) if row_keys is None else _row_key_cells(row_keys)
        elif c == plan.tag and tags is not None:
            columns[c] = tags
        elif c == plan.time and times is not None:
            columns[c] = times
        elif source is None:
            columns[c] = [None] * n
        elif c == plan.tag:
            cells = source[c].to_numpy(dtype=object)
            # Tags are text already, almost always: then one C pass checks it.
            columns[c] = cells if pd.api.types.infer_dtype(cells, skipna=False) == "string" \
                else [text(t) for t in cells]
        else:
            cells = source[c].to_numpy()
            columns[c] = cells if missing is None or not missing.any() else np.where(
                missing, None, cells.astype(object))
    if plan.windows:
        columns[plan.added(START)] = [None] * n if starts is None else starts
    for j, (s, v) in enumerate(plan.result_pairs):
        columns[s], columns[v] = status[:, j], value[:, j]
    if late is not None:
        columns[plan.added(LATE)] = np.broadcast_to(late, n).copy()
    return pd.DataFrame(columns)


def _key_cells(key: Any, n: int) -> Any:
    """The key column of ``n`` output rows. A NaN key is pandas' ``Float64`` with the NaN
    unmasked: Spark writes a NaN of a plain float column as null, and the NaN key is not
    the null key (:mod:`qre.runtime.keys`)."""
    key = plain(key)
    if isinstance(key, float) and math.isnan(key):
        return pd.arrays.FloatingArray(np.full(n, np.nan), np.zeros(n, dtype=bool))
    return [key] * n


def _row_key_cells(keys: np.ndarray) -> Any:
    """The key column of rows of many keys (objects): as :func:`_key_cells`, a NaN key
    stays a NaN (``Float64``, unmasked) beside the null key (masked)."""
    missing = pd.isna(keys)  # one C pass; then only the missing keys are looked at
    if not any(isinstance(k, float) for k in keys[missing]):
        return list(keys)
    null = np.array([k is None for k in keys], dtype=bool)
    values = np.array([0.0 if k is None else k for k in keys], dtype=np.float64)
    return pd.arrays.FloatingArray(values, null)


def concat_rows(frames: list[pd.DataFrame]) -> pd.DataFrame:
    """Output rows of several parts, in order.

    A clock tick's row holds nulls in the input columns shown beside the results, and
    pandas warns that all-null columns will count when it picks a concatenated column's
    dtype: harmless here (an object or a float column converts to the schema's Spark
    type either way), so that FutureWarning is not passed on to the user.
    """
    if len(frames) == 1:
        return frames[0]
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", category=FutureWarning,
                                message="The behavior of DataFrame concatenation with empty")
        return pd.concat(frames, ignore_index=True)


_WORKER_MONITORS: dict[str, Monitor] = {}
"""Monitors rebuilt in this (worker) process, by DT fingerprint."""


def worker_monitor(plan: Plan) -> Monitor:
    """The plan's monitor, rebuilt once per worker process (kernels load from their caches)."""
    digest = hashlib.sha256(repr((plan.dt_json, plan.clock, plan.derivation,
                                  plan.stored_windows)).encode()).hexdigest()
    m = _WORKER_MONITORS.get(digest)
    if m is None:
        m = _WORKER_MONITORS[digest] = Monitor.from_dt(
            DT.from_json(plan.dt_json), list(plan.alphabet), clock=plan.clock,
            derivation=plan.derivation, windows=plan.stored_windows)
    return m


def time_ordered(events: pd.DataFrame, plan: Plan) -> pd.DataFrame:
    """One key's events in the documented order: time, tie-breakers, tag, values, NA last.

    Stable, so rows equal in all these columns keep their input order: the
    order of ``sort_values(plan.order, kind="mergesort", na_position="last")``,
    computed by :func:`order_of`.

    >>> plan = Plan("", ("a", "b"), "k", "t", "tag", ("v",), (), True, (), "table", "error")
    >>> frame = pd.DataFrame({"t": [2, 1, 1, 1], "tag": ["a", "b", "a", "a"],
    ...                       "v": [0.0, 1.0, float("nan"), -1.0]})
    >>> time_ordered(frame, plan).to_dict("list")
    {'t': [1, 1, 1, 2], 'tag': ['a', 'a', 'b', 'a'], 'v': [-1.0, nan, 1.0, 0.0]}
    """
    if len(events) < 2:
        return events.reset_index(drop=True)
    return events.take(order_of(events, plan)).reset_index(drop=True)


def order_of(events: pd.DataFrame, plan: Plan, groups: np.ndarray | None = None
             ) -> np.ndarray:
    """The permutation putting one key's events in :func:`time_ordered`'s order; with
    ``groups`` (an integer per row), many keys' events: grouped by it (ascending), each
    group's in that order.

    :func:`qre.runtime.order.event_order` of the group and the time, the other order
    columns read only at rows whose group and time tie (monitor_stream sorts a bucket of
    keys per micro-batch; ties are rare): float tie-breakers and values by
    :func:`qre.runtime.order.float_order` (``-0.0`` before ``0.0``), other columns by
    their sorted factor codes (NA last)."""
    key = np.zeros(len(events), dtype=np.int64) if groups is None else groups
    time = _time_rank(events[plan.time].to_numpy())
    ties = [_tie_column(events[c].to_numpy(), c) for c in plan.order[1:]]
    return event_order(key, time, ties)


def _time_rank(values: np.ndarray) -> np.ndarray:
    """Times as an array that sorts and compares as Spark's ``asc_nulls_last`` does:
    numbers and datetimes as they are, or, if some are missing (NaN, NaT) or are
    objects, their ranks with the missing ones equal and last."""
    if values.dtype.kind not in "biufmM":  # e.g. time-zone aware timestamps: objects
        return sortable(values, "time")
    missing = pd.isna(values)
    if values.dtype.kind not in "fmM" or not missing.any():
        return values.view(np.int64) if values.dtype.kind in "mM" else values
    present = values[~missing]
    if values.dtype.kind in "mM":
        present = present.view(np.int64)
    uniques, inverse = np.unique(present, return_inverse=True)  # -0.0 and 0.0 one time
    rank = np.full(len(values), len(uniques), dtype=np.int64)
    rank[~missing] = inverse
    return rank


def _tie_column(values: np.ndarray, name: str) -> Tie:
    """A tie-breaker or value column at given rows, ordered as :func:`order_of` says."""
    return lambda rows: sortable(values[rows], name)


def spark_sort_columns(plan: Plan, schema: Any) -> list[Any]:
    """Spark sort expressions for (key, time, ties, tag, values), nulls last, in the order of
    :mod:`qre.runtime.order` and :func:`time_ordered`.

    Spark compares ``-0.0`` and ``0.0`` as equal (and normalizes them when grouping), so
    after each float tie-breaker and value column comes a hidden key that tells them
    apart: the text of a zero (``"-0.0" < "0.0"``), null for any other value (those are
    equal only to themselves).
    """
    from pyspark.sql import functions as F
    from pyspark.sql.types import DoubleType, FloatType

    out = []
    for name in (plan.key, *plan.order):
        column = F.col(name)
        out.append(column.asc_nulls_last())
        if name not in (plan.key, plan.time) and isinstance(schema[name].dataType,
                                                            DoubleType | FloatType):
            out.append(F.when(column == 0, column.cast("string")).asc_nulls_last())
    return out


def event_data(events: pd.DataFrame, plan: Plan) -> Any:
    """``cur`` as one float column, or ``cur.F`` as a record of float columns."""
    def column(name: str) -> np.ndarray:
        return pd.to_numeric(events[name]).to_numpy(dtype=np.float64, na_value=np.nan)

    if not plan.values:
        return None
    if plan.scalar:
        return column(plan.values[0])
    return {name: column(name) for name in plan.values}


def take_rows(data: Any, rows: slice | np.ndarray) -> Any:
    """Rows of what :func:`event_data` returned."""
    if data is None:
        return None
    if isinstance(data, dict):
        return {name: column[rows] for name, column in data.items()}
    return data[rows]


def feed_in_runs(session: Session, n: int, ends: Sequence[int],
                 feed: Callable[[slice], Output]) -> tuple[np.ndarray, np.ndarray, list[Any]]:
    """Feed a session its ``n`` steps (``feed`` of a slice of them) in runs, one ending at
    each of ``ends`` (increasing, at most ``n``), then the rest: the status and value of
    every step (shape (n, outputs)) and :attr:`Session.state` and :attr:`Session.windows`
    after each end (optimistic processing's checkpoints, taken without a second pass over
    the steps)."""
    outputs = len(session.monitor.outputs)
    if not ends:  # one run: its outputs as they come
        out = feed(slice(0, n))
        return out.status.reshape(n, outputs), out.value.reshape(n, outputs), []
    status = np.zeros((n, outputs), dtype=np.int8)
    value = np.full((n, outputs), np.nan)
    states, lo = [], 0
    for hi in [*ends, n]:
        if hi > lo:
            out = feed(slice(lo, hi))
            status[lo:hi] = out.status.reshape(hi - lo, -1)
            value[lo:hi] = out.value.reshape(hi - lo, -1)
            lo = hi
        states.append((session.state, session.windows))
    return status, value, states[:len(ends)]


def name_unknown_tag(caller: str, events: str, m: Monitor, engine: str, tags: np.ndarray,
                     codes: np.ndarray, ids: np.ndarray, keys: np.ndarray,
                     in_time_order: Any = None) -> None:
    """Raise the monitor's error for the first unknown tag (``codes`` −1), naming its key
    (``keys[ids[row]]``) and the tag's position among that key's ``events`` (in time
    order: ``in_time_order(rows)`` orders the rows if they are not already)."""
    row = int(np.flatnonzero(codes < 0)[0])
    rows = np.flatnonzero(ids == ids[row])
    if in_time_order is not None:
        rows = in_time_order(rows)
    try:
        m.session(engine=engine).feed(tags[rows])  # raises, naming the tag and its position
    except ValueError as e:
        raise ValueError(f"{caller}, key {plain(keys[ids[row]])!r} ({events} in time order): "
                         f"{e}") from None
    raise AssertionError("an unknown tag was fed without an error")  # pragma: no cover


def null_time_error(caller: str, plan: Plan, key: Any) -> ValueError:
    return ValueError(f"{caller}: column {plan.time!r} (time) is null for key {plain(key)!r}; "
                      f"every event needs a time")


def plain(x: Any) -> Any:
    """A numpy scalar as the Python value it holds (for messages and comparisons)."""
    return x.item() if isinstance(x, np.generic) else x


def is_null(x: Any) -> bool:
    return x is None or (isinstance(x, float) and math.isnan(x))


def text(tag: Any) -> str | None:
    return None if is_null(tag) else str(tag)

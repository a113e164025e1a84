"""Structured Streaming: a monitor per key as a stateful operator (API.md, "Spark").

Pipeline position: the last stage, like :mod:`spark_udf.batch`, for streaming
DataFrames. :func:`monitor_stream_frame` takes a streaming DataFrame of
events and a compiled :class:`qre.Monitor` and returns a streaming DataFrame
of one output row per event: the input's columns (``keep``: the key, time and
tag columns and those named), ``status`` and ``value`` (or
``status_F``/``value_F`` per output F), and ``late`` (each added name starting
with ``prefix``; :mod:`qre.runtime.output`). Carried columns wait with their event in
the state store. :func:`monitor_stream` also starts the query, writing to files, a
``foreachBatch`` function or a memory table, with a checkpoint.

How it runs. Keys are hashed into buckets (``buckets``, default
:data:`BUCKETS_PER_PARTITION` per shuffle partition) and
``groupBy(bucket).transformWithStateInPandas`` runs one :class:`_MonitorProcessor`
call per bucket and micro-batch (and per fired timer): the bucket's state — every
key's configuration and last processed event, the events waiting for the
watermark — is one value in the state store (:class:`spark_udf.buckets.Bucket`, as
Arrow), read and written once, and one timer wakes the bucket when its earliest key
needs it; the rules themselves (order, watermark, late events, idle keys) are
:mod:`spark_udf.keyed`'s, applied to all the bucket's keys at once by
:mod:`spark_udf.buckets`.

Time. ``watermark=None`` processes each micro-batch's events at once (in
time order within the batch). ``watermark="10 seconds"`` holds each event
until the watermark (the largest time seen, minus the delay) reaches it, so
events up to that much out of order are processed in order; an output then
appears once the watermark passes its event. The time column may be a
timestamp, or a number of ``time_unit`` (seconds by default, as Spark
casts numbers to timestamps). Rows that Spark itself calls late (at or
below the watermark when they arrive) are not dropped silently: they reach
the monitor, which flags them in the output (``late`` true) or, with
``late="fail"``, stops the query. Spark's watermark starts at the epoch, so
with a watermark, event times at or before 1970-01-01 are late.

Keys. A bucket's keys are told apart by :mod:`qre.runtime.keys`' rule (nulls one
key, NaN another, ``-0.0`` with ``0.0``, as Spark groups them), on the rows as
pandas hands them to the processor, where a long column with a null becomes floats
(2**53 + 1 would be read, and its state stored, as 2**53) and a double's null
becomes NaN. So a numeric key is told apart (and hashed to its bucket) by its text
(``KEY_TEXT``: ``"NaN"``, a null stays null, ``-0.0`` written ``0.0``), which pandas
keeps exactly, and read back here (:func:`_key_from_text`).

Timed monitors (window aggregates, a clock period, patterns with ``within``,
past operators bounded by durations, derived tags) emit the rows of
:meth:`qre.Monitor.run_timed` instead of one row per event: a key's clock ticks
between its events and, with a watermark, whenever the watermark passes a boundary
after its last event (the key's timer), so idle keys close their windows; a window
monitor's key state is dropped once all its windows are closed. ``lateness`` (with a watermark)
is seed 000's allowed lateness: the rules run that much behind the
watermark, so an event is accepted, and processed in order, until a window
it falls in has closed for good (its end plus the lateness passed by the
watermark; also with no lateness: an event behind the watermark joins a
window still open); a window's result is emitted when the watermark passes
its end, and emitted again (same key and stamp) whenever an accepted late
event changes it. The per-key work is :mod:`spark_udf.clocked`.

Exactly once. Spark checkpoints the state and the source offsets with each
micro-batch, and the file sink commits a batch's files atomically, so a
query restarted from its checkpoint — after a stop, a crash or a killed
worker — neither loses nor repeats an output row. The state carries a
fingerprint of the monitor (its DT as compiled and as optimized, and its
alphabet); :func:`monitor_stream` also records it next to the checkpoint,
and restarting a checkpoint with a different monitor is a clear error.

Cost: a shuffle per micro-batch, then per bucket with events (or a due timer) one
state read and write (O(keys and waiting events in the bucket)), a sort of its
events, numpy bookkeeping and one kernel call (:meth:`qre.Monitor.resume_keys`).
Measured (``benchmarks/spark_stream.py``, RESULTS.md, issue 20): at 10,000 keys × 10
events per micro-batch, a state per key ran 4,000 rows/s (2.5 ms per key and batch,
3.2x a pass-through per-key processor); buckets run 105,700-107,900 rows/s (8.2-8.9x
that pass-through, 0.61-0.65x one grouped by the same buckets), and 77,900-82,900 at
1,000 keys × 100 events (1.2-1.35x the per-key pass-through). Of a bucket's call
(about 26 ms there), a third is the state's read and write (Spark's state server: a
round trip costs milliseconds, and a binary value comes back pickled as Latin-1 text),
a sixth the timer's delete and register, half the step and the Arrow conversions. The
Row-based ``transformWithState`` measured twice as fast with 10 events per key and
slower with 400 when each key had its own state; the pandas API was kept.
"""

from __future__ import annotations

import inspect
import json
import logging
import os
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from typing import Any

import pandas as pd

from qre.runtime.cer.matches import Matcher
from qre.runtime.changelog import CHANGE, RETRACT
from qre.runtime.monitor import Monitor
from qre.runtime.timed import is_timed

from .buckets import GROUP, Bucket, BucketRules, step_bucket
from .final_rows import FinalRows
from .keyed import LATE, LATE_POLICIES, TIME_US, Rules
from .match_stream import match_stream_frame
from .plan import (
    Plan,
    check_arguments,
    make_plan,
    monitor_fingerprint,
    nan_for_null,
    output_fields,
    worker_monitor,
)
from .processor import SteppedProcessor, move_timer

__all__ = ["monitor_stream", "monitor_stream_frame"]

log = logging.getLogger(__name__)

ROCKSDB = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"
"""The state store that ``transformWithStateInPandas`` needs."""

TIME_UNITS = {"s": 1_000_000, "ms": 1_000, "us": 1, "ns": None}
"""Microseconds per unit of a numeric time column (``ns``: divided by 1000)."""

METRICS = "qre_monitor"
"""The name of the metrics each micro-batch reports: its output ``rows`` and ``late`` rows
(``query.lastProgress["observedMetrics"]["qre_monitor"]``)."""

SIDECAR = "qre-monitor.json"
"""The file in a checkpoint directory that records which monitor wrote it."""

STATE_LAYOUT = 4
"""How rows map to state, recorded beside the fingerprint: 2 grouped a numeric key by its
text (issue 19: NaN and null apart, longs never through a float); 3 keeps keys in
buckets (issue 20), their number recorded too; 4 keeps a bucket's waiting events
without their keys (its keys count them). A checkpoint of another layout (or of none:
written before this record) would resume its keys' state under other groups — losing
or repeating output — so it is refused."""

BUCKET = "__qre_bucket"
"""The grouping column: the key's bucket, ``pmod(hash(key), buckets)``."""

BUCKETS_PER_PARTITION = 4
"""Default buckets per shuffle partition: a bucket's call costs Spark about 2 ms, a key
in it far less; a few per partition keep the partitions' work even."""

_TIME_LIMIT = 2**62
"""Times in µs lie strictly within ±_TIME_LIMIT (:mod:`qre.runtime.times`' range)."""

KEY_TEXT = "__qre_key"
"""The column a numeric key is told apart by: its text (module docstring, "Keys")."""


@dataclass(frozen=True)
class _Spec:
    """What the stateful processor needs: the plan, the time rules, the monitor's
    fingerprint, how keys are read and bucketed."""

    plan: Plan
    rules: Rules
    fingerprint: str
    key_text: str | None = None
    """``integral`` or ``fractional``: the key is grouped by its text (:data:`KEY_TEXT`)."""
    buckets: int = 1
    """How many buckets the keys are hashed into (module docstring, "How it runs")."""
    compress_after_us: int | None = None
    """``compress_windows``: window contents idle this long are stored compressed."""

    @property
    def group_column(self) -> str:
        """The input column whose values tell a bucket's keys apart."""
        return KEY_TEXT if self.key_text else self.plan.key

    @property
    def input_columns(self) -> list[str]:
        """The operator's input columns, in order: key, order and carried columns, times
        in µs, the key's text, the bucket."""
        columns = self.plan.columns
        if self.rules.watermark or self.rules.timed:
            columns = [*columns, TIME_US]
        if self.key_text:
            columns = [*columns, KEY_TEXT]
        return [*columns, BUCKET]

    def key(self, grouped: Any) -> Any:
        """The key as the user's column holds it, from the key a bucket's rows carry."""
        return _key_from_text(grouped, self.key_text) if self.key_text else grouped

    def bucket_rules(self, monitor: Monitor, engine: str) -> BucketRules:
        return BucketRules(self.plan, self.rules, monitor, engine, self.key,
                           self.compress_after_us)


def monitor_stream_frame(df: Any, monitor: Monitor | Matcher, key: str, time: str, tag: str,
                         value: str | Sequence[str] | None = None, *,
                         watermark: Any = None, ttl: Any = None, time_unit: str = "s",
                         tiebreak: str | Sequence[str] = (), late: str = "flag",
                         lateness: Any = None, keep: str | Sequence[str] | None = None,
                         prefix: str = "", engine: str = "auto",
                         unknown_tags: str = "error", buckets: int | None = None,
                         optimistic: bool = False, speculate: Any = None,
                         compress_windows: Any = None) -> Any:
    """The streaming DataFrame of ``monitor`` run per key over the streaming ``df`` (a
    :class:`~qre.runtime.cer.matches.Matcher`, a ``match(...)`` query, gives one row per
    match: :mod:`spark_udf.match_stream`).

    Columns as :func:`spark_udf.monitor_frame`'s (``keep``, ``prefix`` alike) plus
    ``late`` (boolean; also prefixed).
    ``watermark`` (a duration: ``"10 seconds"``, a ``timedelta``) makes events
    wait until the watermark passes them, so that events out of order by up
    to that much are processed in time order; None processes each
    micro-batch at once. ``ttl`` (a duration; needs a watermark): an event
    more than ``ttl`` after its key's previous one starts the key afresh,
    and idle keys' state is dropped. ``late``: ``"flag"`` outputs a late
    event with ``late`` true and no result, ``"fail"`` stops the query; each
    micro-batch counts its late rows in the query's progress
    (``query.lastProgress["observedMetrics"]["qre_monitor"]``: ``rows``, ``late``).
    ``time_unit``: what a numeric time column counts (``s``, ``ms``, ``us``,
    ``ns``). ``lateness`` (a duration; needs a watermark): the allowed lateness
    of seed 000 — the key's rules (release, late, ticks) run that much behind
    the watermark, so an event is accepted, in order, while the watermark is
    below its time plus the lateness (for windows: until one it falls in has
    closed for good), and window results are emitted on time and updated (the
    last row of a key and stamp is the result). A timed
    monitor (window aggregates, a clock period, patterns with ``within``,
    derived tags) emits the rows of :meth:`qre.Monitor.run_timed`
    (:mod:`spark_udf.clocked`). ``buckets``: how many buckets the keys are hashed into
    (each bucket's keys share one state entry and one call per micro-batch; default
    four per shuffle partition; fixed for the life of a checkpoint). ``optimistic``
    (needs a watermark; seed 002): events are processed when they arrive instead of
    when the watermark passes them, and the rows are a changelog — a column
    ``change`` (prefixed), ``insert`` or ``retract`` — whose inserts minus
    retractions are at every micro-batch the results of the events so far, in time
    order (:mod:`spark_udf.optimistic`); :class:`qre.runtime.changelog.Barrier` turns
    it into the final rows. ``speculate`` (a duration; with ``optimistic``) bounds
    how far ahead of the final rows the changelog goes: a row is emitted once its time
    is within ``speculate`` of the release point (the watermark less the lateness, where
    rows become final), so fewer rows are retracted and re-inserted, at that much
    latency; None (the default) emits every row on arrival, ``0`` final rows only.
    ``compress_windows`` (a duration; a query with sliding windows): seed 001's D — the
    window contents of a key whose last event is that far behind the watermark are kept
    compressed in the state store (lz4 on delta-encoded, byte-shuffled arrays), and
    decompressed when the key steps again; ``0`` compresses all, None (the default)
    none. :func:`spark_udf.stream_state` reports the state's bytes per key. The
    others are :func:`monitor_frame`'s. See the module docstring.
    """
    from pyspark.sql import functions as F
    from pyspark.sql.types import BooleanType, StringType, StructField, StructType

    if not hasattr(df, "isStreaming"):
        raise TypeError(f"monitor_stream: expected a streaming Spark DataFrame "
                        f"(spark.readStream), got {type(df).__module__}.{type(df).__name__}")
    if not df.isStreaming:
        raise ValueError("monitor_stream: the DataFrame is not streaming (spark.readStream); "
                         "use monitor_frame for a batch DataFrame")
    if isinstance(monitor, Matcher):
        return match_stream_frame(
            df, monitor, key, time, tag, value, watermark=watermark, time_unit=time_unit,
            tiebreak=tiebreak, late=late, keep=keep, unknown_tags=unknown_tags,
            buckets=buckets, ttl=ttl, lateness=lateness, prefix=prefix, engine=engine,
            optimistic=optimistic, speculate=speculate, compress_windows=compress_windows)
    check_arguments("monitor_stream", monitor, key, time, tag, value, tiebreak, keep, prefix,
                    engine, unknown_tags)
    # (a missing time column: make_plan says so, below)
    kind = _time_kind(df.schema[time].dataType) if time in df.columns else "timestamp"
    delay_us, rules = checked_rules(monitor, kind, time_unit, watermark, ttl, late, lateness,
                                    optimistic, speculate)
    buckets = _bucket_count(df, buckets)
    compress_after_us = _compress_after_us(monitor, compress_windows, delay_us)
    plan = make_plan("monitor_stream", df, monitor, key, time, tag, value, tiebreak, engine,
                     unknown_tags, timed=True, keep=keep, prefix=prefix,
                     added=[LATE, *([CHANGE] if optimistic else [])], stamped=is_timed(monitor))
    key_text = _key_text(F.col(key), df.schema[key].dataType)
    spec = _Spec(plan, rules, monitor_fingerprint(monitor),
                 None if key_text is None else key_text[0], buckets, compress_after_us)
    _use_rocksdb(df.sparkSession)
    events = df.select(*plan.columns)
    if rules.timed and delay_us is None:
        events = events.withColumn(TIME_US, _time_us(F.col(time), df.schema[time].dataType,
                                                     time_unit, time, F.col(key)))
    if delay_us is not None:
        micros = _time_us(F.col(time), df.schema[time].dataType, time_unit, time, F.col(key))
        # Spark's watermark needs a timestamp column; the operator gets the times in µs
        # in a plain column instead, so that Spark does not drop rows it calls late: the
        # monitor flags them itself.
        events = (events.withColumn(TIME_US, micros)
                  .withColumn("__qre_event_time", F.timestamp_micros(F.col(TIME_US)))
                  .withWatermark("__qre_event_time", f"{delay_us} microseconds")
                  .drop("__qre_event_time"))
    if key_text is not None:
        events = events.withColumn(KEY_TEXT, key_text[1])
    events = events.withColumn(BUCKET, F.pmod(F.hash(F.col(spec.group_column)),
                                              F.lit(buckets)))
    schema = StructType([*output_fields(df.schema, plan),
                         StructField(plan.added(LATE), BooleanType(), False),
                         *([StructField(plan.added(CHANGE), StringType(), False)]
                           if optimistic else [])])
    out = events.groupBy(BUCKET).transformWithStateInPandas(
        statefulProcessor=_MonitorProcessor(spec), outputStructType=schema,
        outputMode="Append", timeMode="EventTime" if delay_us is not None else "None")
    retracted = (F.count_if(F.col(plan.added(CHANGE)) == RETRACT) if optimistic
                 else F.lit(0)).alias("retracted")
    return nan_for_null(out, plan).observe(
        METRICS, F.count(F.lit(1)).alias("rows"),
        F.count_if(F.col(plan.added(LATE))).alias("late"), retracted)


def _compress_after_us(monitor: Monitor, compress_windows: Any, delay_us: int | None
                       ) -> int | None:
    """``compress_windows`` checked: D in µs, or None."""
    if compress_windows is None:
        return None
    if monitor.windows is None:
        raise ValueError("monitor_stream: compress_windows compresses the contents of sliding "
                         "windows; this query has none")
    d = duration_us(compress_windows, "compress_windows")
    if d and delay_us is None:
        raise ValueError("monitor_stream: compress_windows above 0 needs a watermark (a key "
                         "is idle when the watermark has passed its last event by that much)")
    return d


def _bucket_count(df: Any, buckets: Any) -> int:
    """The number of buckets: as given, else :data:`BUCKETS_PER_PARTITION` per shuffle
    partition of the session."""
    if buckets is None:
        return BUCKETS_PER_PARTITION * int(df.sparkSession.conf.get(
            "spark.sql.shuffle.partitions"))
    if isinstance(buckets, bool) or not isinstance(buckets, int) or buckets < 1:
        raise ValueError(f"monitor_stream: buckets must be a positive number, not {buckets!r}")
    return buckets


def _key_text(column: Any, dtype: Any) -> tuple[str, Any] | None:
    """For a numeric key: its kind and the text Spark groups it by (module docstring,
    "Keys"); None for other keys, grouped as they are."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import DecimalType, FractionalType, IntegralType

    if isinstance(dtype, IntegralType):
        return "integral", column.cast("string")
    if isinstance(dtype, FractionalType) and not isinstance(dtype, DecimalType):
        # -0.0 is the key 0.0 (Spark groups them together), so it is written "0.0".
        zero = F.when(column == 0, F.lit(0).cast(dtype)).otherwise(column)
        return "fractional", zero.cast("string")
    return None


def _key_from_text(text: str | None, kind: str | None) -> Any:
    """A numeric key from its text (:func:`_key_text`): None for the null key, NaN for
    ``"NaN"`` (Python reads Spark's ``Infinity`` and ``1.0E20`` too)."""
    if text is None:
        return None
    return int(text) if kind == "integral" else float(text)


def _time_kind(dtype: Any) -> str:
    """``integral``, ``fractional`` or ``timestamp``: the kind of a Spark time type."""
    from pyspark.sql.types import DecimalType, FractionalType, IntegralType

    return ("integral" if isinstance(dtype, IntegralType) else "fractional"
            if isinstance(dtype, FractionalType | DecimalType) else "timestamp")


def checked_rules(monitor: Monitor, kind: str, time_unit: str, watermark: Any, ttl: Any,
                  late: str, lateness: Any, optimistic: bool, speculate: Any = None
                  ) -> tuple[int | None, Rules]:
    """The watermark's delay (µs; None without one) and the rules of a stream, the
    options checked (ValueError or TypeError naming the option)."""
    if not isinstance(late, str) or late not in LATE_POLICIES:
        raise ValueError(f"monitor_stream: late must be one of {', '.join(LATE_POLICIES)}, "
                         f"not {late!r}")
    if not isinstance(time_unit, str) or time_unit not in TIME_UNITS:
        raise ValueError(f"monitor_stream: time_unit must be one of {', '.join(TIME_UNITS)}, "
                         f"not {time_unit!r}")
    delay_us = None if watermark is None else duration_us(watermark, "watermark")
    ttl_us = None if ttl is None else duration_us(ttl, "ttl")
    lateness_us = 0 if lateness is None else duration_us(lateness, "lateness")
    if ttl_us is not None and delay_us is None:
        raise ValueError("monitor_stream: ttl needs a watermark (a key is idle when the "
                         "watermark has passed its last event by ttl)")
    if lateness_us and delay_us is None:
        raise ValueError("monitor_stream: lateness needs a watermark (an event is accepted "
                         "while the watermark is below its time plus the lateness)")
    if not isinstance(optimistic, bool):
        raise TypeError(f"monitor_stream: optimistic must be True or False, not {optimistic!r}")
    if optimistic and delay_us is None:
        raise ValueError("monitor_stream: optimistic=True needs a watermark (it says when a "
                         "result is final and what to retract no more)")
    speculate_us = None if speculate is None else duration_us(speculate, "speculate")
    if speculate_us is not None and not optimistic:
        raise ValueError("monitor_stream: speculate bounds optimistic results: it needs "
                         "optimistic=True")
    rules = stream_rules(monitor, kind, time_unit, delay_us is not None, ttl_us, late,
                         lateness_us)
    return delay_us, replace(rules, optimistic=optimistic, speculate_us=speculate_us)


def stream_rules(monitor: Monitor, kind: str, time_unit: str, watermark: bool,
                 ttl_us: int | None, late: str, lateness_us: int) -> Rules:
    """The time rules of a stream whose time column is of ``kind`` (``integral``,
    ``fractional`` or ``timestamp``); a timed monitor's clock and units are checked
    here."""
    if not is_timed(monitor):
        return Rules(watermark, ttl_us, late, lateness_us)
    unit_us = 1 if kind == "timestamp" else TIME_UNITS[time_unit]
    if unit_us is None:
        raise ValueError("monitor_stream: a timed monitor needs a time unit of at least a "
                         "microsecond (time_unit 's', 'ms' or 'us', or a timestamp column)")
    if ttl_us is not None:
        raise ValueError("monitor_stream: ttl is for untimed monitors (a window aggregate "
                         "drops an idle key's state itself, once its windows are closed)")
    clock = monitor.clock
    rules = Rules(watermark, None, late, lateness_us, clock, True, unit_us, kind)
    if clock is not None and clock.period_ns % (rules.delta_us * 1000):
        raise ValueError(f"monitor_stream: the clock period ({clock.period_ns} ns) is not a "
                         f"whole number of the time unit ({unit_us} µs)")
    return rules


def monitor_stream(df: Any, monitor: Monitor | Matcher, key: str, time: str, tag: str,
                   value: str | Sequence[str] | None = None, *, checkpoint: str,
                   output: str | Callable[[Any, int], None] | None = None,
                   format: str = "parquet", query_name: str | None = None,
                   trigger: dict[str, Any] | None = None, **options: Any) -> Any:
    """Start the streaming query of :func:`monitor_stream_frame` (same ``options``).

    ``output`` is a directory (files in ``format``, committed exactly once per
    micro-batch), a function ``f(batch_df, batch_id)`` (``foreachBatch``; make
    it idempotent on ``batch_id`` for exactly-once output), or None for a
    memory table named ``query_name``; with ``optimistic=True``, a
    :class:`spark_udf.FinalRows` function writes only the final rows (the sink
    barrier). ``checkpoint`` is the checkpoint
    directory; restarting with the same one continues where the query
    stopped. ``trigger`` holds ``DataStreamWriter.trigger`` arguments, e.g.
    ``{"availableNow": True}``. Returns the ``StreamingQuery``.
    """
    if not isinstance(checkpoint, str | os.PathLike):
        raise TypeError(f"monitor_stream: checkpoint must be a directory (a str or path), "
                        f"not {type(checkpoint).__name__}")
    checkpoint = os.fspath(checkpoint)
    recorded = _check_sidecar(df.sparkSession, checkpoint, monitor)
    if recorded is not None:
        if options.get("buckets") not in (None, recorded["buckets"]):
            raise ValueError(f"monitor_stream: the checkpoint {checkpoint} keeps its keys in "
                             f"{recorded['buckets']} buckets, not {options['buckets']}: give "
                             f"this query a new checkpoint directory to change them")
        options["buckets"] = recorded["buckets"]
    options["buckets"] = _bucket_count(df, options.get("buckets"))
    frame = monitor_stream_frame(df, monitor, key, time, tag, value, **options)
    if recorded is None:
        _record_sidecar(df.sparkSession, checkpoint, monitor, options["buckets"])
    writer = frame.writeStream.outputMode("append").option("checkpointLocation", checkpoint)
    if query_name is not None:
        writer = writer.queryName(query_name)
    if trigger is not None:
        writer = writer.trigger(**trigger)
    if isinstance(output, FinalRows):
        given = inspect.signature(monitor_stream_frame).bind_partial(**options)
        given.apply_defaults()  # the frame's defaults, where the call gave none
        o = given.arguments
        _, rules = checked_rules(monitor, _time_kind(df.schema[time].dataType),
                                 o["time_unit"], o["watermark"], o["ttl"], o["late"],
                                 o["lateness"], o["optimistic"], o["speculate"])
        output.bind(rules, TIME_UNITS[o["time_unit"]], time, o["prefix"] + CHANGE, checkpoint)
    if callable(output):
        return writer.foreachBatch(output).start()
    if output is None:
        if query_name is None:
            raise ValueError("monitor_stream: give output (a directory or a function) or a "
                             "query_name for a memory table")
        return writer.format("memory").start()
    return writer.format(format).start(output)


def duration_us(x: Any, what: str) -> int:
    """A duration (``"10 seconds"``, ``"1h30m"``, a ``timedelta``) in microseconds."""
    try:
        us = pd.Timedelta(x).value // 1000
    except (ValueError, TypeError):
        raise ValueError(f"monitor_stream: {what} {x!r} is not a duration "
                         f"(e.g. '10 seconds', '500 ms', '1 hour')") from None
    if us < 0:
        raise ValueError(f"monitor_stream: {what} {x!r} is negative")
    return int(us)


def _time_us(column: Any, dtype: Any, unit: str, name: str, key: Any) -> Any:
    """Event times in whole microseconds since the epoch, as a long column.

    A number whose count of µs is not within ±2**62 (qre.runtime.times' range: ±inf,
    1e20 s, a long near its limits), or a NaN, fails the query naming the column
    ``name`` and the row's ``key``, before any cast could overflow (or, without ANSI
    mode, wrap); a null time reaches the monitor, which names it."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import DecimalType, FractionalType, IntegralType

    factor = TIME_UNITS[unit]
    if isinstance(dtype, IntegralType):
        micros = (column * factor if factor else F.floor(column / 1000)).cast("long")
        bound = -(-_TIME_LIMIT // factor) if factor else None  # ns / 1000 always fits
        out = None if bound is None else (column >= bound) | (column <= -bound)
    elif isinstance(dtype, FractionalType | DecimalType):
        # qre.runtime.times' rule: the float product, to the nearest, ties to even (bround).
        count = column.cast("double") * factor if factor else column.cast("double") / 1000
        micros = (F.bround(count) if factor else F.floor(count)).cast("long")
        out = F.isnan(count) | (count >= float(_TIME_LIMIT)) | (count <= -float(_TIME_LIMIT))
    else:
        return F.unix_micros(column.cast("timestamp"))
    if out is None:
        return micros
    message = F.format_string(f"monitor_stream: column {name!r} (time), key %s: %s is not a "
                              f"time within 2**62 µs of the epoch", key, column)
    return F.when(out, F.raise_error(message)).otherwise(micros)


def _use_rocksdb(spark: Any) -> None:
    name = "spark.sql.streaming.stateStore.providerClass"
    if spark.conf.get(name, None) != ROCKSDB:
        log.info("monitor_stream: setting %s to RocksDB (transformWithState needs it)", name)
        spark.conf.set(name, ROCKSDB)


def _sidecar(spark: Any, checkpoint: str) -> tuple[Any, Any]:
    """The Hadoop path of the checkpoint's monitor record and its file system."""
    path = spark._jvm.org.apache.hadoop.fs.Path(checkpoint, SIDECAR)
    return path, path.getFileSystem(spark._jsc.hadoopConfiguration())


def _check_sidecar(spark: Any, checkpoint: str, monitor: Monitor) -> dict[str, Any] | None:
    """Refuse a checkpoint written by another monitor or state layout; its record (None for
    a new checkpoint)."""
    path, fs = _sidecar(spark, checkpoint)
    fingerprint = monitor_fingerprint(monitor)
    if not fs.exists(path):
        return None
    stream = fs.open(path)
    try:
        recorded = json.loads(spark._jvm.org.apache.commons.io.IOUtils.toString(stream, "UTF-8"))
    finally:
        stream.close()
    if recorded.get("layout") != STATE_LAYOUT:
        raise ValueError(
            f"monitor_stream: the checkpoint {checkpoint} was written by another version "
            f"of qre (state layout {recorded.get('layout', 1)}, this one {STATE_LAYOUT}: "
            f"keys are grouped differently), so resuming it would lose or repeat output. "
            f"Give this query a new checkpoint directory (and replay its input)")
    if recorded.get("fingerprint") != fingerprint:
        raise ValueError(
            f"monitor_stream: the checkpoint {checkpoint} was written by another monitor "
            f"(fingerprint {recorded.get('fingerprint')}, this one {fingerprint}; its "
            f"query: {recorded.get('query')!r}). Restart it with that query, or give this "
            f"one a new checkpoint directory")
    return recorded


def _record_sidecar(spark: Any, checkpoint: str, monitor: Monitor, buckets: int) -> None:
    """Record the monitor, the state layout and the number of buckets of a new checkpoint."""
    path, fs = _sidecar(spark, checkpoint)
    record = json.dumps({"fingerprint": monitor_fingerprint(monitor), "layout": STATE_LAYOUT,
                         "buckets": buckets, "query": monitor.source,
                         "alphabet": list(monitor.alphabet)})
    out = fs.create(path, True)
    try:
        out.write(bytearray(record.encode()))
    finally:
        out.close()


class _MonitorProcessor(SteppedProcessor):
    """The ``StatefulProcessor`` of :func:`monitor_stream_frame` (pickled to the workers).

    Per bucket of keys one value state ``bucket``: the monitor's fingerprint, the
    bucket's timer (at its keys' earliest :func:`~spark_udf.keyed.wake_ms`), and its
    :class:`~spark_udf.buckets.Bucket` (the keys' states and the events waiting for the
    watermark) as two Arrow IPC blobs (``Bucket.to_bytes``).
    """

    def __init__(self, spec: _Spec) -> None:
        self.spec = spec

    def init(self, handle: Any) -> None:
        self.handle = handle
        self.state = handle.getValueState(
            "bucket", "fingerprint string, timer_ms long, keys binary, pending binary")
        self.monitor: Monitor | None = None  # built on the first key: init also runs on the driver
        self.engine: str | None = None

    def _columns(self) -> list[str]:
        return self.spec.input_columns

    def _step(self, bucket_id: int, events: pd.DataFrame | None, watermark_ms: int,
              fired_ms: int | None) -> Iterator[pd.DataFrame]:
        spec = self.spec
        if events is not None:
            events[GROUP] = events[spec.group_column]
        if self.monitor is None:
            self.monitor = worker_monitor(spec.plan)
        if self.engine != "codegen":  # "auto": codegen once the driver's compile is cached
            self.engine = self.monitor.resolve_engine(spec.plan.engine)
        rules = spec.bucket_rules(self.monitor, self.engine)
        bucket, timer_ms = self._load(rules, bucket_id)
        watermark_us = watermark_ms * 1000 if spec.rules.watermark else None
        new, rows = step_bucket(rules, bucket, events, watermark_us)
        self._store(new, timer_ms, fired_ms)
        if len(rows):
            yield rows

    def _load(self, rules: BucketRules, bucket_id: int) -> tuple[Bucket, int | None]:
        saved = self.state.get()
        if saved is None:
            return Bucket.empty(rules), None
        fingerprint, timer_ms, keys, pending = saved
        if fingerprint != self.spec.fingerprint:
            raise ValueError(
                f"monitor_stream: the checkpoint's state for bucket {bucket_id} was written by "
                f"another monitor (fingerprint {fingerprint}, this one {self.spec.fingerprint}); "
                f"restart it with that query, or give this one a new checkpoint directory")
        return Bucket.from_bytes(keys, pending), timer_ms

    def _store(self, new: Bucket, timer_ms: int | None, fired_ms: int | None) -> None:
        wake = None
        if self.spec.rules.watermark and len(new.keys):
            due = new.keys["wake_ms"].dropna()
            wake = int(due.min()) if len(due) else None
        # The next wake-up is always later than the watermark that fired it (keyed.wake_ms).
        move_timer(self.handle, timer_ms, wake, fired_ms)
        if not len(new.keys):
            self.state.clear()
        else:
            self.state.update((self.spec.fingerprint, wake, *new.to_bytes()))

"""``match(...)`` queries on a streaming DataFrame: one row per match, per key (issue 26).

Pipeline position: the last stage for a :class:`~qre.runtime.cer.matches.Matcher` given to
:func:`spark_udf.monitor_stream_frame` (and so to ``monitor_stream``). Per key, the rows
are those of :meth:`Matcher.run_timed` over the key's whole stream — each match once,
when the event (or, with a watermark, the watermark) that completes it is processed —
through a :class:`~qre.runtime.cer.session.MatchSession` per key whose state (the live
partial matches and the events they still name) is kept in Spark's state store between
micro-batches. Columns as :func:`spark_udf.matches.match_rows`' (``events`` the matched
rows as structs, ``match`` numbered from 0 per key across micro-batches), plus ``late``.

Time. Without a watermark each micro-batch's events are processed at once, in time order
per key. ``watermark="10 seconds"`` holds each event until the watermark reaches it, so
events out of order by up to that much are processed in order, and tells the key's
session that no earlier event will come (``until``): a match held for a negation at
the end, or a partial match that times out, is emitted once the watermark passes its
time, also for a key without new events (its timer wakes it at the next watermark). An
event before its key's last processed one (or the last watermark) is late: with
``late="flag"`` it is emitted as a row with ``late`` true, its event in ``events`` and no
match; ``late="fail"`` stops the query.

Exactly once: the state and the source offsets are checkpointed with each micro-batch,
so a query restarted from its checkpoint neither loses nor repeats rows
(:func:`spark_udf.monitor_stream`).

Cost per micro-batch and key with events (or with live state, at a watermark): the
session's (the match kernel on the events, O(live state) to resume and save), and one
pickled state value read and written.
"""

from __future__ import annotations

import pickle
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from qre.runtime.cer.matches import Matcher
from qre.runtime.cer.session import MatchSession

from .processor import SteppedProcessor, move_timer

__all__ = ["match_stream_frame"]

_UNSUPPORTED = {"ttl": None, "lateness": None, "prefix": "", "engine": "auto",
                "optimistic": False, "speculate": None, "compress_windows": None}


@dataclass(frozen=True)
class _Spec:
    """What the processor needs (pickled to the workers)."""

    matcher: Matcher
    fingerprint: str
    columns: tuple[str, ...]
    key: str
    time: str
    tag: str
    values: tuple[str, ...]
    ties: tuple[str, ...]
    kept: tuple[str, ...]
    time_unit: str
    """The unit the session reads times in: ``us`` for a timestamp column (fed its µs)."""
    timestamp: bool
    fractional: bool
    watermark: bool
    late: str
    unknown_tags: str
    per_us: int | None
    """µs per time unit of a numeric time column (None: ns)."""


def match_stream_frame(df: Any, matcher: Matcher, key: str, time: str, tag: str,
                       value: str | Sequence[str] | None = None, *, watermark: Any = None,
                       time_unit: str = "s", tiebreak: str | Sequence[str] = (),
                       late: str = "flag", keep: str | Sequence[str] | None = None,
                       unknown_tags: str = "error", buckets: int | None = None,
                       **options: Any) -> Any:
    """The streaming DataFrame of ``matcher``'s matches per key (module docstring).
    ``buckets`` is ignored: a match query keeps its state per key."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import (
        BooleanType,
        DecimalType,
        FractionalType,
        StructField,
        StructType,
    )

    from .matches import output_schema
    from .plan import monitor_fingerprint
    from .stream import TIME_UNITS, _time_kind, _time_us, _use_rocksdb, duration_us

    for name, default in _UNSUPPORTED.items():
        if options.get(name, default) != default:
            raise ValueError(f"monitor_stream: {name}= is not for match queries")
    if options.keys() - _UNSUPPORTED.keys():
        raise TypeError(f"monitor_stream: unexpected argument "
                        f"{sorted(options.keys() - _UNSUPPORTED.keys())[0]!r}")
    if late not in ("flag", "fail"):
        raise ValueError(f"monitor_stream: late must be 'flag' or 'fail', got {late!r}")
    if time_unit not in TIME_UNITS:
        raise ValueError(f"monitor_stream: time_unit must be one of {', '.join(TIME_UNITS)}")
    schema, columns, values, ties, kept = output_schema(df, matcher, key, time, tag, value,
                                                         tiebreak, keep, "monitor_stream")
    timestamp = _time_kind(df.schema[time].dataType) == "timestamp"
    spec = _Spec(matcher, monitor_fingerprint(matcher), (*columns, "__qre_time_us"), key,
                 time, tag, tuple(values), tuple(ties), tuple(kept),
                 "us" if timestamp else time_unit, timestamp,
                 isinstance(df.schema[time].dataType, FractionalType | DecimalType),
                 watermark is not None, late,
                 unknown_tags, TIME_UNITS[time_unit])
    _use_rocksdb(df.sparkSession)
    micros = _time_us(F.col(time), df.schema[time].dataType, time_unit, time, F.col(key))
    events = df.select(*columns).withColumn("__qre_time_us", micros)
    if watermark is not None:
        delay_us = duration_us(watermark, "watermark")
        events = (events.withColumn("__qre_event_time", F.timestamp_micros("__qre_time_us"))
                  .withWatermark("__qre_event_time", f"{delay_us} microseconds")
                  .drop("__qre_event_time"))
    out_schema = StructType([*schema.fields, StructField("late", BooleanType(), False)])
    return events.groupBy(key).transformWithStateInPandas(
        statefulProcessor=_MatchProcessor(spec), outputStructType=out_schema,
        outputMode="Append", timeMode="EventTime" if watermark is not None else "None")


class _MatchProcessor(SteppedProcessor):
    """Per key one value state ``key``: the query's fingerprint, the key's timer, its
    :class:`MatchSession` (without the query), the rows its state still names and the
    events waiting for the watermark, pickled."""

    def __init__(self, spec: _Spec) -> None:
        self.spec = spec

    def init(self, handle: Any) -> None:
        self.handle = handle
        self.state = handle.getValueState("key", "fingerprint string, data binary")

    def _columns(self) -> list[str]:
        return list(self.spec.columns)

    def _step(self, key: Any, events: pd.DataFrame | None, watermark_ms: int,
              fired_ms: int | None) -> Iterator[pd.DataFrame]:
        spec = self.spec
        session, carried, pending, timer, last_us = self._load(key)
        if events is not None:
            pending = pd.concat([pending, events], ignore_index=True) if len(pending) else events
        watermark_us = watermark_ms * 1000 if spec.watermark else None
        ready = pending if watermark_us is None else pending[pending["__qre_time_us"] <=
                                                              watermark_us]
        pending = pending.iloc[:0] if watermark_us is None else pending[
            pending["__qre_time_us"] > watermark_us]
        frames = []
        late = _late(ready, last_us)
        if late.any():
            if spec.late == "fail":
                row = ready[late].iloc[0]
                raise ValueError(f"monitor_stream: key {key!r}: a late event at "
                                 f"{row[spec.time]!r}, before the key's last one processed "
                                 f"or the watermark (late='fail')")
            frames.append(_late_rows(key, ready[late], spec))
            ready = ready[~late]
        until = None if watermark_us is None else self._until(watermark_us)
        if len(ready) or until is not None:
            fed = session.fed
            out = session.feed(ready[spec.time if not spec.timestamp else "__qre_time_us"],
                               ready[spec.tag].to_numpy(dtype=object),
                               _values(ready, spec), until=until,
                               unknown_tags=spec.unknown_tags,
                               tiebreak={c: ready[c] for c in spec.ties} or None)
            ready = ready.set_axis(np.arange(fed, fed + len(ready)))
            pool = pd.concat([carried, ready]) if len(carried) else ready
            if len(out):
                frames.append(_match_rows(key, out, pool, spec))
            carried = pool.loc[session.named_rows()]
            last_us = max(x for x in (last_us, watermark_us,
                                      int(ready["__qre_time_us"].max()) if len(ready) else None)
                          if x is not None)
        self._store(session, carried, pending, timer, fired_ms, watermark_ms, last_us)
        if frames:
            yield pd.concat(frames, ignore_index=True)

    def _until(self, watermark_us: int) -> Any:
        """The watermark in the session's time unit (rounded down for whole numbers)."""
        spec = self.spec
        if spec.timestamp:
            return watermark_us
        if spec.per_us is None:
            return watermark_us * 1000
        return watermark_us / spec.per_us if spec.fractional else watermark_us // spec.per_us

    def _load(self, key: Any) -> tuple[MatchSession, pd.DataFrame, pd.DataFrame, int | None,
                                       int | None]:
        saved = self.state.get()
        spec = self.spec
        if saved is None:
            empty = pd.DataFrame({c: [] for c in spec.columns})
            return spec.matcher.session(spec.time_unit), empty, empty, None, None
        fingerprint, data = saved
        if fingerprint != spec.fingerprint:
            raise ValueError(
                f"monitor_stream: the checkpoint's state for key {key!r} was written by "
                f"another query (fingerprint {fingerprint}, this one {spec.fingerprint}); "
                f"restart it with that query, or give this one a new checkpoint directory")
        state, carried, pending, timer, last_us = pickle.loads(data)
        return MatchSession.resumed(spec.matcher, state), carried, pending, timer, last_us

    def _store(self, session: MatchSession, carried: pd.DataFrame, pending: pd.DataFrame,
               timer: int | None, fired_ms: int | None, watermark_ms: int,
               last_us: int | None) -> None:
        wake = None
        if self.spec.watermark:
            due = [int(-(-int(pending["__qre_time_us"].min()) // 1000))] if len(pending) else []
            if session.waiting():
                due.append(watermark_ms + 1)  # the next watermark may release or time out
            wake = min(due) if due else None
        move_timer(self.handle, timer, wake, fired_ms)
        self.state.update((self.spec.fingerprint,
                           pickle.dumps((session.saved(), carried, pending, wake, last_us))))


def _late(ready: pd.DataFrame, last_us: int | None) -> np.ndarray:
    """Which ready events come before their key's last processed one or the last
    watermark (the session would refuse them)."""
    if last_us is None:
        return np.zeros(len(ready), dtype=np.bool_)
    return ready["__qre_time_us"].to_numpy(dtype=np.int64) < last_us


def _values(ready: pd.DataFrame, spec: _Spec) -> Any:
    if len(spec.values) > 1 or any(m.field is not None for m in spec.matcher.query.measures):
        return {v: ready[v].to_numpy() for v in spec.values}
    return ready[spec.values[0]].to_numpy() if spec.values else None


def _match_rows(key: Any, out: pd.DataFrame, pool: pd.DataFrame, spec: _Spec) -> pd.DataFrame:
    """The session's rows as the stream's: the key, the events as structs, the times in
    the time column's type."""
    frame = pd.DataFrame({spec.key: [key] * len(out), "match": out["match"].to_numpy()})
    for c in ("start", "end", "time"):
        frame[c] = _stamps(out[c].to_numpy(), spec)
    frame["vars"] = out["vars"].to_numpy()
    records = pool[list(spec.kept)]
    frame["events"] = [records.loc[rows].to_dict("records") for rows in out["rows"]]
    for m in spec.matcher.query.measures:
        frame[m.name] = out[m.name].to_numpy()
    if spec.matcher.query.timeouts:
        frame["timeout"] = out["timeout"].to_numpy(dtype=bool)
    frame["late"] = False
    return frame


def _late_rows(key: Any, late: pd.DataFrame, spec: _Spec) -> pd.DataFrame:
    """A row per late event: ``late`` true, the event in ``events``, no match."""
    n = len(late)
    frame = pd.DataFrame({spec.key: [key] * n, "match": [None] * n})
    for c in ("start", "end", "time", "vars"):
        frame[c] = [None] * n
    frame["events"] = [[r] for r in late[list(spec.kept)].to_dict("records")]
    for m in spec.matcher.query.measures:
        frame[m.name] = [None] * n
    if spec.matcher.query.timeouts:
        frame["timeout"] = [None] * n
    frame["late"] = True
    return frame


def _stamps(stamps: np.ndarray, spec: _Spec) -> Any:
    """Stamps in the time column's type (a timestamp column's from µs)."""
    if spec.timestamp:
        return pd.to_datetime(stamps.astype(np.int64), unit="us", utc=True)
    return stamps

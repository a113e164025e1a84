"""``monitor_stream``'s rules in this process, over pandas batches as they arrive.

Pipeline position: beside :mod:`spark_udf.stream`, without Spark: the same per-key
rules (:func:`spark_udf.keyed.step`: order, watermark, late events, idle keys,
clocks, optimistic processing) applied to micro-batches that the caller hands over
one by one, with Spark's watermark and timer semantics. Use it to try a streaming
monitor on a laptop, to test one, or to run the optimistic policy (seed 002) and
its sink :class:`qre.runtime.changelog.Barrier` in-process.

Time as Spark keeps it: a batch is processed with the watermark of the batches
before it — the largest event time seen, less the ``watermark`` delay, never
decreasing, from the epoch — then each key whose timer is due at that watermark
steps once more (Spark's event-time timers), then the watermark moves. The rows
are those ``monitor_stream`` writes for the same micro-batches (without Spark's
turning NaN into null and back).

Cost: a pandas ``groupby`` per batch and one :func:`~spark_udf.keyed.step` per key
with events or a due timer (Python per key, numpy per event).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import numpy as np
import pandas as pd

from qre.runtime.changelog import CHANGE
from qre.runtime.keys import is_missing, stream_ids
from qre.runtime.monitor import Monitor
from qre.runtime.timed import is_timed

from .keyed import LATE, TIME_US, KeyState, step, wake_ms
from .plan import Plan, concat_rows, make_plan
from .stream import TIME_UNITS, checked_rules

__all__ = ["LocalStream"]


class LocalStream:
    """A monitored stream in this process (module docstring).

    The options are :func:`spark_udf.monitor_stream_frame`'s; ``watermark`` is a
    delay (``"10 seconds"``, a ``timedelta``) or None. ``checkpoint_every`` tunes
    optimistic processing: the events between a key's checkpoints (default
    ``Rules.checkpoint_every``, :mod:`spark_udf.optimistic`). :meth:`feed` takes the next
    micro-batch (a pandas DataFrame with the key, time, tag and value columns) and
    returns its output rows; :meth:`advance` moves the watermark without events.

    >>> from qre import qre
    >>> s = LocalStream(qre("alphabet a; sum(cur)"), "k", "t", "tag", "v",
    ...                 watermark="5 seconds", optimistic=True)
    >>> s.feed(pd.DataFrame({"k": [1, 1], "t": [10, 12], "tag": ["a", "a"], "v": [1.0, 2.0]})
    ...        )[["t", "value", "change"]].values.tolist()
    [[10, 1.0, 'insert'], [12, 3.0, 'insert']]
    >>> s.feed(pd.DataFrame({"k": [1], "t": [11], "tag": ["a"], "v": [5.0]})
    ...        )[["t", "value", "change"]].values.tolist()
    [[12, 3.0, 'retract'], [11, 6.0, 'insert'], [12, 8.0, 'insert']]
    """

    def __init__(self, monitor: Monitor, key: str, time: str, tag: str,
                 value: str | Sequence[str] | None = None, *, watermark: Any = None,
                 ttl: Any = None, time_unit: str = "s", tiebreak: str | Sequence[str] = (),
                 late: str = "flag", lateness: Any = None,
                 keep: str | Sequence[str] | None = None, prefix: str = "",
                 engine: str = "auto", unknown_tags: str = "error",
                 optimistic: bool = False, speculate: Any = None,
                 checkpoint_every: int | None = None) -> None:
        self.monitor = monitor
        self._roles = (key, time, tag, value, tiebreak, engine, unknown_tags, keep, prefix)
        if checkpoint_every is not None and (isinstance(checkpoint_every, bool) or not isinstance(
                checkpoint_every, int) or checkpoint_every < 1):
            raise ValueError(f"LocalStream: checkpoint_every must be a positive integer, not "
                             f"{checkpoint_every!r}")
        self._options = (time_unit, watermark, ttl, late, lateness, optimistic, speculate)
        self._checkpoint_every = checkpoint_every
        self._plan: Plan | None = None
        self._engine = ""
        self._delay_us: int | None = None
        self._states: dict[Any, tuple[Any, KeyState]] = {}  # by _slot(key): key, state
        self._latest_us: int | None = None
        self.watermark_us: int | None = None
        """The watermark the next batch is processed with, in µs since the epoch (None
        without a watermark)."""
        self.replayed = 0
        """Optimistic processing: the events run again so far (from a key's checkpoint
        before an event that arrived out of order, and up to a release point)."""

    @property
    def keys(self) -> int:
        """How many keys hold state."""
        return len(self._states)

    @property
    def pending(self) -> int:
        """How many events wait for the watermark (or, optimistically, to settle)."""
        return sum(0 if s.pending is None else len(s.pending)
                   for _, s in self._states.values())

    def feed(self, batch: pd.DataFrame) -> pd.DataFrame:
        """Process the next micro-batch; its output rows."""
        if not isinstance(batch, pd.DataFrame):
            raise TypeError(f"LocalStream.feed: a batch is a pandas DataFrame, not "
                            f"{type(batch).__name__}")
        plan = self._plan_for(batch)
        self._resolve_engine()
        events = batch[plan.columns].assign(**{TIME_US: self._micros(batch, plan)})
        ids, keys = stream_ids(events[plan.key])  # qre's key rule: NaN and null apart
        order = np.argsort(ids, kind="stable")
        bounds = np.searchsorted(ids[order], np.arange(len(keys) + 1))
        out = [rows for g, k in enumerate(keys.tolist())
               if len(rows := self._step(k, events.iloc[order[bounds[g]:bounds[g + 1]]]))]
        out += self._timers()
        if len(events) and self._delay_us is not None:
            latest = int(events[TIME_US].max())
            self._latest_us = latest if self._latest_us is None else max(self._latest_us,
                                                                           latest)
            self.watermark_us = max(self.watermark_us or 0, self._latest_us - self._delay_us)
        return self._rows(out)

    def advance(self, watermark_us: int) -> pd.DataFrame:
        """Move the watermark to ``watermark_us`` (µs since the epoch; never back) and
        fire the timers due: the rows, e.g. windows closed and pending events settled
        (``2**62`` closes everything a clock with a horizon holds)."""
        if self._delay_us is None:
            raise ValueError("LocalStream.advance: this stream has no watermark")
        self.watermark_us = max(self.watermark_us or 0, int(watermark_us))
        self._resolve_engine()
        return self._rows(self._timers())

    def _resolve_engine(self) -> None:
        """The engine of this batch's steps, resolved once (as ``monitor_stream`` does per
        micro-batch): ``auto`` is codegen once the kernel is compiled."""
        if self._plan is not None and self._engine != "codegen":
            self._engine = self.monitor.resolve_engine(self._plan.engine)

    def _plan_for(self, batch: pd.DataFrame) -> Plan:
        if self._plan is not None:
            return self._plan
        key, time, tag, value, tiebreak, engine, unknown_tags, keep, prefix = self._roles
        time_unit, watermark, ttl, late, lateness, optimistic, speculate = self._options
        if time not in batch:
            raise ValueError(f"LocalStream: no column {time!r} for time in the batch "
                             f"(columns: {', '.join(map(str, batch.columns))})")
        self._delay_us, self._rules = checked_rules(
            self.monitor, _time_kind(batch[time]), time_unit, watermark, ttl, late, lateness,
            optimistic, speculate)
        if self._checkpoint_every is not None:
            self._rules = replace(self._rules, checkpoint_every=self._checkpoint_every)
        self._plan = make_plan("LocalStream", batch, self.monitor, key, time, tag, value,
                               tiebreak, engine, unknown_tags, timed=True, keep=keep,
                               prefix=prefix, added=[LATE, *([CHANGE] if optimistic else [])],
                               stamped=is_timed(self.monitor))
        if self._delay_us is not None:
            self.watermark_us = 0  # Spark's watermark starts at the epoch
        return self._plan

    def _micros(self, batch: pd.DataFrame, plan: Plan) -> np.ndarray:
        """The batch's times in µs since the epoch (``monitor_stream``'s rule)."""
        column = batch[plan.time]
        if column.isna().any():
            return np.zeros(len(batch), dtype=np.int64)  # the step names the null time
        if pd.api.types.is_datetime64_any_dtype(column):
            if getattr(column.dt, "tz", None) is not None:
                column = column.dt.tz_convert("UTC").dt.tz_localize(None)
            return column.to_numpy(dtype="datetime64[us]").view(np.int64)
        factor = TIME_UNITS[self._options[0]]
        values = column.to_numpy()
        if pd.api.types.is_integer_dtype(column):
            return values.astype(np.int64) * factor if factor else values // 1000
        counts = values.astype(np.float64) * factor if factor else values / 1000
        return (np.round(counts) if factor else np.floor(counts)).astype(np.int64)

    def _step(self, key: Any, events: pd.DataFrame | None) -> pd.DataFrame:
        assert self._plan is not None
        slot = _slot(key)
        new, rows = step(self._plan, self._rules, self.monitor, self._engine, key,
                         self._states.get(slot, (key, KeyState()))[1], events,
                         self.watermark_us)
        if new is None:
            self._states.pop(slot, None)
        else:
            self._states[slot] = (key, new)
            self.replayed += new.replayed
        return rows

    def _timers(self) -> list[pd.DataFrame]:
        """One step of each key whose timer is due at the watermark."""
        if self._plan is None or self.watermark_us is None:
            return []
        watermark_ms = self.watermark_us // 1000
        due = [k for k, s in self._states.values()
               if (w := wake_ms(s, self._rules)) is not None and w <= watermark_ms]
        return [rows for k in due if len(rows := self._step(k, None))]

    def _rows(self, frames: list[pd.DataFrame]) -> pd.DataFrame:
        if frames:
            return concat_rows(frames).reset_index(drop=True)
        assert self._plan is not None
        from .keyed import no_rows

        rows = no_rows(self._plan)
        return rows.assign(**{self._plan.added(CHANGE): []}) if self._rules.optimistic \
            else rows


def _slot(key: Any) -> Any:
    """A dict key for a stream key, equal where qre's key rule says the keys are one
    (:mod:`qre.runtime.keys`: every NaN alike, the missing ones alike, ``-0.0`` with
    ``0.0``)."""
    if is_missing(key):
        return ("missing",)
    if isinstance(key, float | np.floating) and key != key:
        return ("nan",)
    return ("value", key)


def _time_kind(column: pd.Series) -> str:
    """``integral``, ``fractional`` or ``timestamp``: the kind of a pandas time column."""
    if pd.api.types.is_datetime64_any_dtype(column):
        return "timestamp"
    return "integral" if pd.api.types.is_integer_dtype(column) else "fractional"

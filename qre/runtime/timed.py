"""Timed runs: keyed events in event-time order, with clock ticks (issue 7).

Pipeline position: timed, keyed events → order, deduplicate, derive tags →
steps with ticks (:mod:`qre.language.clock`) → the monitor's engine → emitted rows.
:func:`run_timed` is behind :meth:`qre.Monitor.run_timed`.

Order (S&P, seed 004 §3): per key, by event time; equal times by the rule of
:mod:`qre.runtime.order`, the same on every entry point: ``tiebreak`` columns, the tag
(its text, as given: before derivation), the value columns in the order given
(NaN last), then input position. So the outputs do not depend on the order of
the input rows, except between events that agree on all of those (and then
they are indistinguishable to the query).
``dedup=True`` keeps one event of those equal in key, time, tag, every
``tiebreak`` column and every column of ``values`` (read by the query or
not): "keying by all attributes deduplicates". Floats are equal when their
bits are (:func:`qre.runtime.order.float_order`): ``-0.0`` is not ``0.0`` (a
query tells them apart, ``1 / cur``), every NaN is one value.

Time (:mod:`qre.runtime.times` states the rule). ``times`` are datetimes (numpy,
pandas, Arrow; with or without a time zone) or numbers of ``time_unit``. The
column's type fixes δ, the resolution of the run: one ``time_unit`` for
integers (exact), a microsecond for floats (rounded to the nearest, ties to
even; a nanosecond for floats of ns) and for datetimes. Stamps come back in
the input's type: integers, floats of ``time_unit``, datetimes in the input's
time zone. Terms read the event time as ``cur.time`` (in ``time_unit``;
microseconds since the epoch for datetimes) when values are records or
absent; a tick's ``cur.time`` is its boundary and its other fields are NaN. A
pattern's ``within`` compares whole δ: the DT reads the time in δ as
``within_clock`` and a duration D as ``within_<D in ns>``, set here to
⌈D / δ⌉ (:mod:`qre.language.patterns`). A query that reads no value takes a plain
value column all the same (it orders equal times, and ``dedup`` reads it).
Sliding windows (``avg_over(2d, cur)``, issue 23) slide over each key's steps here,
before the DT (:mod:`qre.runtime.window_fields`): a window of a duration D holds the
events less than ⌈D/δ⌉ δ before the step; ticks get its value without entering it.

Emission. One row per step (event or tick) whose output is not ⊥
(``undefined="keep"`` keeps those too): an event's row is stamped with its
time (R-CER: outputs stamped with their input's time), a tick's with its
boundary minus δ (a window [l, l + WS) reports at l + WS − δ, seed 004 §2.1).
A window aggregate is ⊥ at events and at empty windows, so it emits exactly
one row per non-empty window, in time order per key. ``watermark`` says up
to which time the input is complete: ticks fire at the boundaries up to it
(None: the input is the whole stream, so a window aggregate closes all its
windows; a query with a declared period and no watermark ticks only between
events). A window aggregate's rows also carry ``start``, the start of their
window [start, start + size), in the type of ``time``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Literal, TypeVar

import numpy as np
import pandas as pd

from dt.windows import TICK

from ..language.clock import (
    TicksOverflow,
    TooManyTicks,
    check_ticks,
    clock_steps,
    format_duration,
    session_starts,
)
from ..language.patterns import CLOCK_FIELD, WITHIN_PREFIX, durations
from . import columns
from . import keys as key_rules
from .keys import stream_ids_beside
from .order import SortedEvents, float_order, processing_events, tiebreak_columns, value_columns
from .times import TimeError, TimeScale, event_times
from .window_fields import without

if TYPE_CHECKING:
    from .monitor import Monitor

__all__ = ["TIME_FIELD", "input_tags", "is_timed", "needed_fields", "run_timed"]

T = TypeVar("T")

TIME_FIELD = "time"
"""The record field that carries the event time in a timed run (``cur.time``)."""


def needed_fields(m: Monitor) -> set[str]:
    """The record fields a caller supplies: those the DT and the derived tags' predicates
    read, except the event time and the durations, which a timed run adds."""
    reads = set(m._data_reads.fields)
    if m.derivation is not None:
        reads |= set(m.derivation.predicates.fields)
    return {f for f in reads if f != TIME_FIELD and not f.startswith(WITHIN_PREFIX)}


def input_tags(m: Monitor) -> tuple[str, ...]:
    """The tags events may carry: the alphabet without the clock's tick and the derived
    tags (which the monitor gives, the input does not)."""
    derived = set() if m.derivation is None else {d.name for d in m.derivation.tags}
    return tuple(t for t in m.alphabet if t != TICK and t not in derived)


def is_timed(m: Monitor) -> bool:
    """True if ``m`` needs event times (a clock, or terms reading the time): run it with
    :func:`run_timed`, not ``Monitor.run``."""
    return m.clock is not None or TIME_FIELD in m._source_dt.fields or any(
        f.startswith(WITHIN_PREFIX) for f in m._source_dt.fields) or (
        m.windows is not None and m.windows.by_time)


def run_timed(m: Monitor, times: Any, tags: Any, values: Any = None, *, keys: Any = None,
              time_unit: str = "s", watermark: Any = None, dedup: bool = False,
              undefined: Literal["drop", "keep"] = "drop", engine: str = "auto",
              unknown_tags: Literal["error", "skip"] = "error",
              tiebreak: Any = None) -> pd.DataFrame:
    """Run ``m`` per key over timed events; the emitted rows (module docstring).

    Equal times are ordered by :mod:`qre.runtime.order`'s rule: ``tiebreak`` (one column, or a
    dict / DataFrame of columns), then the tag's text, then ``values``' columns.

    Columns: ``key`` (when ``keys`` is given), ``time`` (the stamp, in the type of
    ``times``: :mod:`qre.runtime.times`), ``start`` (a window aggregate's only: the start of the
    window a tick closes, in the same type; missing at the event rows that
    ``undefined="keep"`` keeps), ``tag`` (the event's tag after derivation, or
    ``tick``), ``row`` (the input row, −1 for a tick), ``status`` (uint8) and ``value``.
    """
    if len(m.dt.final) != 1:
        raise ValueError(f"run_timed needs a monitor with one output, this one has "
                         f"{len(m.dt.final)}")
    if not isinstance(undefined, str) or undefined not in ("drop", "keep"):
        raise ValueError(f"undefined must be 'drop' or 'keep', got {undefined!r}")
    chosen = m.resolve_engine(engine)
    times = columns.column(times, "times")
    keys = columns.column(keys, "keys", required=False, exact=True)
    values = columns.values(values)
    clock_times, scale = event_times(times, time_unit)
    n = len(clock_times)
    timed_values = _with_time(m, values, clock_times, scale)
    (key_ids, key_values), (codes, events) = _keys_beside(
        keys, n, lambda: m._events(tags, timed_values, unknown_tags, derive=False))
    if len(codes) != n:
        raise ValueError(f"times has {n} entries but there are {len(codes)} tags")
    if len(key_ids) != n:
        raise ValueError(f"keys has {len(key_ids)} entries but there are {n} times")
    m._compile_for_large_runs(engine, chosen, n)
    # The rows that take part (None: all), without the skipped tags (−1).
    kept = None if int(codes.min(initial=0)) >= 0 else np.flatnonzero(codes >= 0)
    in_order = processing_events(key_ids, clock_times, tags, codes, m.alphabet, values,
                                 tiebreak, rows=kept)
    if dedup and len(in_order.order):
        first = _first_of_equal(in_order.order, [key_ids, clock_times, codes,
                                                 *_attributes([*tiebreak_columns(tiebreak),
                                                               *value_columns(values)])])
        in_order = SortedEvents(*(column[first] for column in in_order))
    if m.derivation is not None:
        # Predicates on plain cur read the column itself (the DT may read the time fields).
        scalar = m.derivation.predicates.reads_scalar_cur
        codes = m.derivation.apply(codes, values if scalar else timed_values)
    try:
        rows, step_time, step_codes, offsets = _steps(m, in_order, codes, scale, watermark,
                                                      len(key_values))
    except TooManyTicks as e:
        key = "" if keys is None else f"key {key_values[e.key]!r}"
        start, end = (str(t) for t in scale.stamps(np.array([e.start, e.end])))
        raise ValueError(e.described(key, start, end)) from None
    except TicksOverflow as e:  # a time row, named like the other times out of range
        row = int(in_order.order[e.index])
        stamp = scale.stamps(np.array([e.time]))[0]
        raise TimeError(row, stamp, f"{stamp} is too late for the clock: its ticks (every "
                                    f"{format_duration(m.clock.period_ns)}) after it would "
                                    f"pass the largest time int64 holds") from None
    step_events = _step_events(events, rows, step_time, scale)
    before_full = None  # where a window makes the output ⊥ (before its k-th event…)
    if m.windows is not None:
        step_events, before_full = m.windows.events(step_events, None, offsets,
                                                    enters=rows >= 0, times=step_time,
                                                    scale=scale, codes=step_codes,
                                                    alphabet=m.alphabet)
    out = without(m._run_grouped(chosen, None, offsets, step_codes, step_events),  # grouped
                  before_full)
    window_starts = None if m.clock is None or not m.clock.windowed else _window_starts(
        m, scale, rows, step_time, offsets)
    time, step_codes, rows, status, value, per_key, window_starts = _emitted(
        out.status, out.value, rows, step_time, step_codes, offsets, undefined == "keep",
        window_starts)
    is_tick = rows < 0
    stamp = time - is_tick  # a tick's row: its boundary minus δ
    frame = {} if keys is None else {"key": np.repeat(key_values, per_key)}
    frame["time"] = scale.stamps(stamp)
    if m.clock is not None and m.clock.windowed:
        frame["start"] = _starts(scale, window_starts, is_tick, undefined == "keep")
    frame["tag"] = pd.Categorical.from_codes(step_codes, categories=list(m.alphabet))
    frame["row"] = rows
    frame["status"] = status
    frame["value"] = value
    # Not copied, so not consolidated: stacking the int64 columns into one block would
    # copy them (1.2 s for 6M rows), and the arrays are this frame's alone.
    return pd.DataFrame(frame, copy=False)


def _attributes(columns: list[Any]) -> list[np.ndarray]:
    """Columns of the events as int64 codes, equal where the values are: floats by their
    bits (``-0.0`` apart from ``0.0``, every NaN alike: :func:`float_order`), other
    values by ``pd.factorize`` (exact integers, missing values alike)."""
    out = []
    for column in columns:
        series = pd.Series(column)  # a column: processing_order refused anything else
        if pd.api.types.is_float_dtype(series.dtype):
            series = pd.Series(float_order(series.to_numpy(dtype=np.float64,
                                                           na_value=np.nan)))
        codes, _ = pd.factorize(series, use_na_sentinel=False)
        out.append(codes.astype(np.int64))
    return out


def _first_of_equal(order: np.ndarray, columns: list[np.ndarray]) -> np.ndarray:
    """Where in ``order`` a row is not equal to its predecessor in every column (the order
    puts equal events next to each other: they agree on everything it sorts by)."""
    same = np.ones(len(order) - 1, dtype=bool)
    for c in columns:
        same &= c[order[1:]] == c[order[:-1]]
    return np.concatenate([[True], ~same])


def _steps(m: Monitor, events: SortedEvents, codes: np.ndarray, scale: TimeScale,
           watermark: Any, n_keys: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The steps the DT reads, events (rows ``events.order`` of the input, in processing
    order, with their key ids and times) and clock ticks, grouped by key: each step's
    input row (−1 for a tick), time (a tick's boundary) and tag code, and where each key's
    steps start (int64[n_keys + 1]). Long runs interleave the ticks in Numba
    (:func:`codegen.grouping.interleave_ticks`), short ones in numpy
    (:func:`qre.language.clock.clock_steps`), by one rule."""
    order, key, time = events
    long = len(order) >= key_rules.NUMBA_ROWS
    if long:
        from codegen.grouping import take_codes  # here: Numba for long runs only

        codes = take_codes(codes, order)
    else:
        codes = codes[order]
    if m.clock is None:
        return order, time, codes, _offsets(key, n_keys)
    period = scale.whole(m.clock.period_ns, "the clock period")
    until = None if watermark is None else scale.point(watermark, "watermark")
    if until is None and m.clock.horizon is None:
        until = int(time.max(initial=0))  # no horizon: no ticks after the last event
    tick = m.alphabet.index(TICK) if TICK in m.alphabet else 0
    if long:
        from codegen.grouping import interleave_ticks, tick_counts

        counts = tick_counts(key, time, period, m.clock.horizon, until, m.clock.session)
        check_ticks(key, time, *counts, period)
        return interleave_ticks(order, key, time, codes, counts, tick, period, n_keys)
    steps = clock_steps(key, time, period, m.clock.horizon, until, m.clock.session)
    event = np.maximum(steps.event, 0)
    rows = np.where(steps.event >= 0, order[event], -1)
    return rows, steps.time, np.where(rows < 0, tick, codes[event]), \
        _offsets(steps.key, n_keys)


def _offsets(key: np.ndarray, n_keys: int) -> np.ndarray:
    """Where each key's run starts in ``key`` (sorted ids below ``n_keys``)."""
    return np.searchsorted(key, np.arange(n_keys + 1)).astype(np.int64)


def _window_starts(m: Monitor, scale: TimeScale, rows: np.ndarray, time: np.ndarray,
                   offsets: np.ndarray) -> np.ndarray:
    """The start (in δ) of the window each step belongs to: a tick at b closes [b − size,
    b); under a session clock, the session that the step's key opened last (at an
    event that is its key's first step or follows a tick)."""
    assert m.clock is not None
    if not m.clock.session:
        return time - scale.whole(m.clock.window_ns, "the window size")
    first = np.zeros(len(rows), dtype=bool)
    first[offsets[:-1][offsets[:-1] < len(rows)]] = True
    return session_starts(rows < 0, time, first)


def _emitted(status: np.ndarray, value: np.ndarray, rows: np.ndarray, time: np.ndarray,
             codes: np.ndarray, offsets: np.ndarray, keep_all: bool,
             starts: np.ndarray | None) -> tuple[Any, ...]:
    """The emitted steps' (status not 0, or all with ``keep_all``) time, code, row, status
    and value, how many steps each key emits, and their window starts (if any)."""
    at = np.arange(len(rows)) if keep_all else np.flatnonzero(status != 0)
    per_key = np.diff(np.searchsorted(at, offsets))
    return (time[at], codes[at], rows[at], status[at], value[at], per_key,
            None if starts is None else starts[at])


def _keys_beside(keys: Any, n: int, work: Callable[[], T]
                 ) -> tuple[tuple[np.ndarray, np.ndarray], T]:
    """Stream ids and each stream's key (:mod:`qre.runtime.keys`' rule; one stream
    without keys), and ``work()``, side by side (:func:`stream_ids_beside`)."""
    if keys is None:
        return (np.zeros(n, dtype=np.int64), np.array([None] * min(n, 1), dtype=object)), \
            work()
    return stream_ids_beside(keys, work)


def _with_time(m: Monitor, values: Any, times: np.ndarray, scale: TimeScale) -> Any:
    """The values with the fields a timed run adds (the event time as ``time`` in
    ``time_unit`` and in δ, the ``within`` durations in δ) when the DT reads records;
    a plain column as it is unless the DT reads only those fields."""
    reads = m._data_reads.fields
    extra = {TIME_FIELD: scale.time_values(times),
             **({CLOCK_FIELD: times.astype(np.float64)} if CLOCK_FIELD in reads else {}),
             **{name: np.full(len(times), float(scale.ceil(ns)))
                for name, ns in durations(reads).items()}}
    if values is None:
        return extra
    if isinstance(values, Mapping | pd.DataFrame):
        for name in extra:
            if name in values:
                raise ValueError(f"values has a column {name!r}: in a timed run cur.{name} "
                                 f"is {'the event time' if name == TIME_FIELD else 'reserved'}"
                                 f"; rename the column")
        return {**{name: values[name] for name in values}, **extra}
    source = m._data_reads
    if source.reads_scalar_cur or not set(source.fields) & set(extra):
        return values  # the DT reads cur, or no field a timed run adds
    fields = sorted(needed_fields(m))
    if fields:
        raise ValueError(f"the query reads {', '.join(f'cur.{f}' for f in fields)}: pass "
                         f"values as a dict or DataFrame with columns {', '.join(fields)}")
    # The query reads the event time only: the column still orders equal times (and dedup
    # reads it), so it must be numbers, one per event, as Monitor.run wants.
    from .monitor import _check_length, _float_column

    _check_length(_float_column(values, "values"), len(times), "values")
    return extra


def _starts(scale: TimeScale, start: np.ndarray, tick: np.ndarray, events_kept: bool) -> Any:
    """The ``start`` column: the windows' starts (given in δ) in the input's type; with
    event rows kept, missing at those (pandas' nullable Int64 for integer times)."""
    stamps = scale.stamps(start)
    if not events_kept:
        return stamps
    column = pd.Series(stamps)
    return (column.astype("Int64") if scale.kind == "int" else column).where(tick).array


def _step_events(events: Any, rows: np.ndarray, time: np.ndarray, scale: TimeScale) -> Any:
    """The data of every step: the event's, or NaN with the tick's time for a tick."""
    from .monitor import _Events

    if len(rows) >= key_rules.NUMBA_ROWS:
        from codegen.grouping import take_rows  # here: Numba for long runs only

        def column(c: np.ndarray) -> np.ndarray:
            return take_rows(c, rows)
    else:
        def column(c: np.ndarray) -> np.ndarray:
            return np.where(rows < 0, np.nan, c[np.maximum(rows, 0)])

    def value(name: str, c: np.ndarray) -> np.ndarray:
        if name == TIME_FIELD:
            return scale.time_values(time)
        return time.astype(np.float64) if name == CLOCK_FIELD else column(c)

    fields = {name: value(name, c) for name, c in events.fields.items()}
    return _Events(None if events.scalar is None else column(events.scalar), fields)

"""A timed monitor's share of a key's step in a stream: clock ticks and event times (issue 7).

Pipeline position: inside :func:`spark_udf.keyed.step`, for monitors that read
event times (a clock — window aggregates, ``period`` — or ``cur.time``, a
pattern's ``within``). Pure pandas/numpy, tested without Spark like the rest
of :mod:`spark_udf.keyed`.

The rows are those of :meth:`qre.Monitor.run_timed` on the key's released
events: the key's clock ticks at each multiple of the period that its time
crosses (:func:`qre.clock.clock_steps`), and — with a watermark — also when
the watermark passes a boundary after its last event, so an idle key's
windows close (the key's timer wakes it: :func:`next_tick_us`); only outputs
that are not ⊥ are emitted, a tick's stamped with its boundary minus one time
unit. Without a watermark a key ticks only between its events. After a
window aggregate's horizon of idle ticks its state is silent and is dropped
(:func:`silent`): a later event starts the key afresh, which gives the same
outputs (:mod:`dt.windows` proves the horizon).

Event times are kept in microseconds (Spark's unit); ``cur.time`` and the
stamps are in the time column's unit (microseconds for a timestamp column).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from dt.windows import TICK
from qre.clock import clock_steps
from qre.monitor import Monitor, tag_codes
from qre.patterns import WITHIN_PREFIX
from qre.timed import TIME_FIELD

from .plan import Plan, event_data, plain, text

if TYPE_CHECKING:
    from .keyed import KeyState, Rules

__all__ = ["next_tick_us", "run", "silent"]

_TIME_US = "__qre_time_us"  # keyed.TIME_US (not imported: keyed imports this module)


def run(plan: Plan, rules: Rules, m: Monitor, engine: str, key: Any,
        events: pd.DataFrame | None, state: KeyState, watermark_us: int | None
        ) -> tuple[np.ndarray | None, int | None, pd.DataFrame]:
    """Feed the released ``events`` (None on a timer) with the clock's ticks up to the
    watermark: the key's configuration and clock afterwards, and the emitted rows."""
    if events is not None:
        codes = tag_codes(events[plan.tag].to_numpy(dtype=object), m.alphabet,
                          skip_unknown=plan.unknown_tags == "skip")
        events = events[codes >= 0].reset_index(drop=True)
        codes = codes[codes >= 0]
    times = (np.zeros(0, dtype=np.int64) if events is None
             else events[_TIME_US].to_numpy(dtype=np.int64))
    event, step_us = _steps(rules, state.clock_us, times, watermark_us)
    if len(event) == 0:
        return state.config, state.clock_us, _rows(plan, rules, key, event, step_us, None,
                                                   np.zeros(0, np.uint8), np.zeros(0))
    data = _event_record(plan, rules, events, times)
    if events is not None and m.derivation is not None:
        codes = m.derivation.apply(codes, data)
    take = np.maximum(event, 0)
    tick = event < 0
    step_codes = np.where(tick, m.alphabet.index(TICK) if TICK in m.alphabet else 0,
                          codes[take] if events is not None else 0)
    session = m.session(state.config, engine=engine)
    try:
        out = session.feed(step_codes, _step_data(m, rules, data, take, tick, step_us),
                           derive=False)
    except ValueError as e:
        raise ValueError(f"monitor_stream, key {plain(key)!r} "
                         f"(this micro-batch's events in time order): {e}") from None
    return session.state, int(step_us[-1]), _rows(plan, rules, key, event, step_us, events,
                                                  out.status, out.value)


def next_tick_us(state: KeyState, rules: Rules) -> int | None:
    """The time of the key's next tick, if its clock has one due (with a watermark, while
    the horizon is not reached), else None."""
    if (rules.clock is None or not rules.watermark or state.clock_us is None
            or state.last_us is None):
        return None
    period = rules.clock.period_ns // 1000
    if rules.clock.horizon is not None and _ticks_since(state, period) >= rules.clock.horizon:
        return None
    return (state.clock_us // period + 1) * period


def silent(state: KeyState, rules: Rules) -> bool:
    """True if the key's state can go: nothing pending, and as many idle ticks as the
    clock's horizon since its last event (later ticks change nothing a step reads)."""
    if (rules.clock is None or rules.clock.horizon is None or state.pending is not None
            or state.clock_us is None or state.last_us is None):
        return False
    return _ticks_since(state, rules.clock.period_ns // 1000) >= rules.clock.horizon


def _ticks_since(state: KeyState, period: int) -> int:
    assert state.clock_us is not None and state.last_us is not None
    return state.clock_us // period - state.last_us // period


def _steps(rules: Rules, clock_us: int | None, times: np.ndarray, watermark_us: int | None
           ) -> tuple[np.ndarray, np.ndarray]:
    """(event index or −1 for a tick, time in µs) of every step after ``clock_us``."""
    if rules.clock is None:
        return np.arange(len(times), dtype=np.int64), times
    previous = [] if clock_us is None else [clock_us]
    seq = np.array([*previous, *times.tolist()], dtype=np.int64)
    until = watermark_us if rules.watermark else int(seq[-1])
    steps = clock_steps(np.zeros(len(seq), dtype=np.int64), seq, rules.clock.period_ns // 1000,
                        rules.clock.horizon, until)
    event, step_us = steps.event, steps.time
    if previous:  # the clock's last position is not a step: drop it, renumber the events
        keep = event != 0
        event, step_us = np.where(event[keep] > 0, event[keep] - 1, -1), step_us[keep]
    return event, step_us


def _durations(m: Monitor, rules: Rules) -> dict[str, float]:
    """The ``within`` durations the DT reads, in the time column's unit (rounded up, as
    :func:`qre.timed.run_timed` gives them)."""
    unit_ns = rules.unit_us * 1000
    return {name: float(-(-int(name[len(WITHIN_PREFIX):]) // unit_ns))
            for name in (m.unoptimized or m.dt).fields if name.startswith(WITHIN_PREFIX)}


def _event_record(plan: Plan, rules: Rules, events: pd.DataFrame | None,
                  times: np.ndarray) -> Any:
    """The events' data (:func:`spark_udf.plan.event_data`), with ``time`` in the time
    column's unit when the events are records (what derived tags' predicates read)."""
    if events is None:  # a timer: ticks only, no event data
        data: Any = (np.zeros(0) if plan.scalar
                     else {name: np.zeros(0) for name in plan.values})
    else:
        data = event_data(events, plan)
    if plan.scalar:
        return data
    return {**(data or {}), TIME_FIELD: times / rules.unit_us}


def _step_data(m: Monitor, rules: Rules, data: Any, take: np.ndarray, tick: np.ndarray,
               step_us: np.ndarray) -> Any:
    """The data of every step: the event's, or NaN for a tick; ``time`` and the durations
    for every step."""
    def column(c: np.ndarray) -> np.ndarray:
        return np.where(tick, np.nan, c[take]) if len(c) else np.full(len(take), np.nan)

    if data is not None and not isinstance(data, dict):
        return column(data)
    out = {name: column(c) for name, c in (data or {}).items()}
    out[TIME_FIELD] = step_us / rules.unit_us
    out.update({name: np.full(len(take), d) for name, d in _durations(m, rules).items()})
    return out


def _rows(plan: Plan, rules: Rules, key: Any, event: np.ndarray, step_us: np.ndarray,
          events: pd.DataFrame | None, status: np.ndarray, value: np.ndarray) -> pd.DataFrame:
    """The emitted rows (output not ⊥): events stamped with their time, ticks with their
    boundary minus one unit, in the time column's type."""
    keep = status != 0
    event, step_us = event[keep], step_us[keep]
    tick = event < 0
    stamp_us = np.where(tick, step_us - rules.unit_us, step_us)
    if rules.time_kind == "timestamp":
        times: Any = pd.to_datetime(stamp_us, unit="us").to_numpy()
    else:
        times = stamp_us // rules.unit_us
        if rules.time_kind == "fractional":
            times = times.astype(np.float64)
    tags = np.full(len(event), TICK, dtype=object)
    if events is not None:
        original = events[plan.tag].to_numpy(dtype=object)
        tags[~tick] = [text(t) for t in original[event[~tick]]]
    (status_name, value_name), = plan.result_pairs
    return pd.DataFrame({plan.key: [plain(key)] * len(event), plan.time: times, plan.tag: tags,
                         status_name: status[keep].astype(np.int8), value_name: value[keep],
                         "late": np.zeros(len(event), dtype=bool)})

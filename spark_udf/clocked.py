"""A timed monitor's share of a key's step in a stream: clock ticks and event times (issue 7).

Pipeline position: inside :func:`spark_udf.keyed.step`, for monitors that read
event times (a clock — window aggregates, ``period`` — or ``cur.time``, a
pattern's ``within``, a past operator bounded by durations). Pure pandas/numpy,
tested without Spark like the rest of :mod:`spark_udf.keyed`.

The rows are those of :meth:`qre.Monitor.run_timed` on the key's released
events: the key's clock ticks at each multiple of the period that its time
crosses (:func:`qre.language.clock.clock_steps`), and — with a watermark — also when
the watermark passes a boundary after its last event, so an idle key's
windows close (the key's timer wakes it: :func:`next_tick_us`); only outputs
that are not ⊥ are emitted, a tick's stamped with its boundary minus one time
unit. Without a watermark a key ticks only between its events. After a
window aggregate's horizon of idle ticks its state is silent and is dropped
(:func:`silent`): a later event starts the key afresh, which gives the same
outputs (:mod:`dt.windows` proves the horizon).

Allowed lateness L (seed 000 §2.3; :func:`with_updates`). The rules settle
the key at the watermark minus L (:mod:`spark_udf.keyed`): an event is
accepted, and processed in order, until a window it falls in has closed for
good (the watermark minus L has passed the end of the clock period holding
the event: ``Rules.release_us``). For tumbling windows that is seed 000's
rule; an event some of whose sliding windows are still open is flagged late
(seed 000 would add it to those: one DT state cannot add an event to only
some of its open instances). The clock's outputs (a window's result) do not
wait for that: once the watermark passes a window's end its result is
emitted from the settled state
plus the accepted events up to the watermark (on time), and emitted again in
each later step where a late event changes it (an update: a row with the same
key and stamp; status 0 if the result went back to ⊥), until the watermark
passes its end plus L and the settled result is final. The last row of a
(key, stamp) is the result; a result is never emitted twice unchanged
(``KeyState.sent`` remembers the unsettled ones). Event rows (patterns) are
emitted once, when settled.

Session windows (``aggregate(f, session(gap))``) have a session clock
(:mod:`qre.language.clock`): it resumes from the key's last event, ticks once a
gap after it when the watermark reaches that, and each tick's row carries the
session's start, the first event after the previous tick (``KeyState.opened_us``
carries it across micro-batches). Their events are released at the effective
watermark (no boundary to round down to); with allowed lateness a session result
emitted on time whose end a late event moves is cleared at its old boundary (a
status-0 row without a start) as any window result that goes back to ⊥.

Event times are kept in microseconds (Spark's unit); ``cur.time`` and the
stamps are in the time column's unit (microseconds for a timestamp column).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from dt.windows import TICK
from qre.language.clock import TooManyTicks, clock_steps, session_starts
from qre.language.patterns import CLOCK_FIELD, durations
from qre.runtime.monitor import Monitor
from qre.runtime.tag_codes import tag_codes
from qre.runtime.timed import TIME_FIELD
from qre.runtime.window_contents import WindowContents

from .plan import Plan, concat_rows, event_data, feed_in_runs, frame_rows, plain, take_rows, text

if TYPE_CHECKING:
    from .keyed import KeyState, Rules

__all__ = ["ROW_US", "TICK_US", "next_tick_us", "next_update_us", "run", "silent", "updates",
           "with_updates"]

_TIME_US = "__qre_time_us"  # keyed.TIME_US (not imported: keyed imports this module)

TICK_US = "__qre_tick_us"
"""Rows of :func:`run` with ``boundaries``: a tick's boundary in µs, −1 for an event's row."""

ROW_US = "__qre_row_us"
"""Rows of a key whose optimistic results are bounded (``Rules.speculate_us``): the row's
stamp in µs, what the bound is compared with (:mod:`spark_udf.optimistic`)."""


def run(plan: Plan, rules: Rules, m: Monitor, engine: str, key: Any,
        events: pd.DataFrame | None, state: KeyState, watermark_us: int | None,
        boundaries: bool = False, cuts: Sequence[int] = ()
        ) -> tuple[Resumed, tuple[int | None, int | None], pd.DataFrame, list[Cut]]:
    """Feed the released ``events`` (None on a timer) with the clock's ticks up to the
    watermark: the key's configuration and window contents, its clock
    (``KeyState.clock_us`` and ``opened_us``) afterwards, the emitted rows (with
    ``boundaries``, also the column :data:`TICK_US`), and for each k in ``cuts`` the
    :data:`Cut` after the first k events, before the ticks after them (what a run of those
    k events up to the last one's time would leave)."""
    times = (np.zeros(0, dtype=np.int64) if events is None
             else events[_TIME_US].to_numpy(dtype=np.int64))
    kept = np.arange(len(times))
    if events is not None:
        codes = tag_codes(events[plan.tag].to_numpy(dtype=object), m.alphabet,
                          skip_unknown=plan.unknown_tags == "skip")
        kept = np.flatnonzero(codes >= 0)
        events = events.iloc[kept].reset_index(drop=True)
        codes = codes[kept]
    try:
        event, step_us = _steps(rules, state, times[kept], watermark_us)
    except TooManyTicks as e:  # times here are µs since the epoch
        raise ValueError("monitor_stream: " + e.described(
            f"key {plain(key)!r}", f"{e.start} µs", f"{e.end} µs")) from None
    starts = _window_starts(rules, state, event < 0, step_us)
    clock = (state.clock_us, state.opened_us)
    resumed = (state.config, state.windows)
    if len(event) == 0:
        return resumed, clock, _rows(plan, rules, key, event, step_us, None,
                                     np.zeros(0, np.uint8), np.zeros(0), starts,
                                     boundaries), [(resumed, *clock, 0)] * len(cuts)
    data = _event_record(plan, rules, events, times[kept])
    if events is not None and m.derivation is not None:
        codes = m.derivation.apply(codes, data)
    take = np.maximum(event, 0)
    tick = event < 0
    step_codes = np.where(tick, m.alphabet.index(TICK) if TICK in m.alphabet else 0,
                          codes[take] if events is not None else 0)
    step_data = _step_data(m, rules, data, take, tick, step_us)
    session = m.session(state.config, engine=engine, windows=state.windows)
    ends = _cut_steps(cuts, kept, times, event, step_us)
    windowed = m.windows is not None  # the window store reads the steps' times (µs)
    try:
        status, value, configs = feed_in_runs(session, len(event), ends, lambda rows: session.feed(
            step_codes[rows], take_rows(step_data, rows), derive=False,
            times=step_us[rows] if windowed else None))
    except ValueError as e:
        raise ValueError(f"monitor_stream, key {plain(key)!r} "
                         f"(this micro-batch's events in time order): {e}") from None
    at_cuts = []
    if ends:  # the rows emitted before each cut: only for checkpoints
        emitted = np.concatenate([[0], np.cumsum(status[:, 0] != 0)])
        at_cuts = [(config, *_clock_at(state, step_us, starts, end), int(emitted[end]))
                   for config, end in zip(configs, ends, strict=True)]
    opened = state.opened_us if starts is None else int(starts[-1])
    return (session.state, session.windows), (int(step_us[-1]), opened), _rows(
        plan, rules, key, event, step_us, events, status[:, 0], value[:, 0], starts,
        boundaries), at_cuts


Resumed = tuple[np.ndarray | None, WindowContents | None]
"""What a key's session resumes from: its configuration (``Session.state``; None: the
initial one) and its window contents (``Session.windows``; None: none yet or no window)."""

Cut = tuple[Resumed, int | None, int | None, int]
"""A key's configuration and window contents, ``clock_us`` and ``opened_us`` part-way
through :func:`run`, and the rows emitted before."""


def _cut_steps(cuts: Sequence[int], kept: np.ndarray, times: np.ndarray, event: np.ndarray,
               step_us: np.ndarray) -> list[int]:
    """For each k in ``cuts``, the number of steps up to the first k events (of which
    ``kept`` are fed; ``times`` all of theirs): those before the first fed event from
    k on, and no tick after the k-th event's time (a tick at a time comes before an event
    at that time)."""
    if not len(cuts):
        return []
    at = np.asarray(cuts, dtype=np.int64)
    first_after = np.append(np.flatnonzero(event >= 0), len(event))[np.searchsorted(kept, at)]
    by_time = np.searchsorted(step_us, times[at - 1], "right")
    return np.minimum(first_after, by_time).tolist()


def _clock_at(state: KeyState, step_us: np.ndarray, starts: np.ndarray | None,
              end: int) -> tuple[int | None, int | None]:
    """``clock_us`` and ``opened_us`` after the first ``end`` steps of a run."""
    if end == 0:
        return state.clock_us, state.opened_us
    return int(step_us[end - 1]), state.opened_us if starts is None else int(starts[end - 1])


def next_tick_us(state: KeyState, rules: Rules) -> int | None:
    """The time of the key's next tick, if its clock has one due (with a watermark, while
    the horizon is not reached), else None."""
    if not rules.watermark:
        return None
    return _next_tick_us(state, rules)


def _next_tick_us(state: KeyState, rules: Rules) -> int | None:
    """The time of the clock's next tick after its last one, None past its horizon (or
    before the key's first event)."""
    if rules.clock is None or state.clock_us is None or state.last_us is None:
        return None
    if rules.clock.horizon is not None and _idle_ticks(state, rules) >= rules.clock.horizon:
        return None
    if rules.clock.session:
        return state.last_us + rules.period_us
    return (state.clock_us // rules.period_us + 1) * rules.period_us


def updates(rules: Rules) -> bool:
    """True if the key's window results are emitted on time and updated (module
    docstring): a clock, a watermark and an allowed lateness (optimistic processing
    emits them on arrival instead)."""
    return (rules.clock is not None and rules.watermark and rules.lateness_us > 0
            and not rules.optimistic)


def next_speculative_tick_us(state: KeyState, rules: Rules) -> int | None:
    """Optimistic processing (:mod:`spark_udf.optimistic`): the next tick of the clock
    that ran over the pending events and up to the last watermark (``ahead_us``), or
    None (no clock, nothing processed, or past its horizon)."""
    last = (state.last_us if state.pending is None
            else int(state.pending[_TIME_US].max()))
    if last is None or rules.clock is None:
        return None
    clock = last if state.ahead_us is None else max(last, state.ahead_us)
    return _next_tick_us(replace(state, clock_us=clock, last_us=last), rules)


def with_updates(plan: Plan, rules: Rules, m: Monitor, engine: str, key: Any,
                 settled: KeyState, rows: pd.DataFrame | None, watermark_us: int
                 ) -> tuple[KeyState, pd.DataFrame | None]:
    """The rows to emit and the key's state, given the ``settled`` state and its new
    ``rows`` (from :func:`run` with ``boundaries``; None if it did not run) and Spark's
    watermark (not lessened by the lateness): settled results unless already sent as
    they are, then the results of the windows ended by the watermark, if new or
    changed."""
    sent = {b: (s, v) for b, s, v in settled.sent}
    done = settled.clock_us if settled.clock_us is not None else -2**63
    final = _changes(plan, rules, key, rows, sent, lambda b: b <= done)
    sent = {b: sv for b, sv in sent.items() if b > done}
    early = _changes(plan, rules, key, _ahead(plan, rules, m, engine, key, settled,
                                              watermark_us), sent, lambda b: b > done)
    out = [r for r in (final, early) if r is not None and len(r)]
    emitted = None if not out else concat_rows(out)
    state = replace(settled, sent=tuple((b, s, v) for b, (s, v) in sorted(sent.items())),
                    ahead_us=watermark_us)
    return state, None if emitted is None else emitted.drop(columns=TICK_US)


def _ahead(plan: Plan, rules: Rules, m: Monitor, engine: str, key: Any, settled: KeyState,
           watermark_us: int) -> pd.DataFrame | None:
    """The tick rows of a run from the settled state over the accepted events up to the
    watermark, with ticks up to it (nothing is kept of that run but its rows)."""
    ready = None
    if settled.pending is not None:
        n = int(np.searchsorted(settled.pending[_TIME_US].to_numpy(), watermark_us, "right"))
        ready = settled.pending.iloc[:n] if n else None
    tick = _next_tick_us(settled, rules)
    if ready is None and (tick is None or tick > watermark_us):
        return None  # no window can have ended since the settled clock
    _, _, rows, _ = run(plan, rules, m, engine, key, ready, settled, watermark_us,
                        boundaries=True)
    return rows[rows[TICK_US].to_numpy() >= 0]


def _changes(plan: Plan, rules: Rules, key: Any, rows: pd.DataFrame | None,
             sent: dict[int, tuple[int, float]], covers: Callable[[int], bool]
             ) -> pd.DataFrame | None:
    """``rows`` (with :data:`TICK_US`) without the tick rows already sent as they are,
    plus a status-0 row for each boundary that ``covers`` says this run decides, that
    was sent defined and has no row now; ``sent`` is updated to what was emitted."""
    (status_name, value_name), = plan.result_pairs
    keep = np.ones(0 if rows is None else len(rows), dtype=bool)
    seen = set()
    if rows is not None:
        for i, (b, s, v) in enumerate(zip(rows[TICK_US].tolist(), rows[status_name].tolist(),
                                          rows[value_name].tolist(), strict=True)):
            if b < 0:
                continue
            seen.add(b)
            if b in sent and _same(sent[b], (s, v)):
                keep[i] = False
            sent[b] = (s, v)
    gone = [b for b in sorted(sent) if covers(b) and b not in seen]
    for b in gone:
        del sent[b]
    if not gone:
        return rows if rows is None or keep.all() else rows[keep]
    stamps = np.array(gone, dtype=np.int64)
    # A session's start is not kept for its retraction: the row's start is missing.
    window_ns = None if rules.clock is None else rules.clock.window_ns
    starts = None if window_ns is None else stamps - window_ns // 1000
    cleared = frame_rows(plan, key, None, np.zeros((len(gone), 1), dtype=np.int8),
                         np.full((len(gone), 1), np.nan), False, tags=[TICK] * len(gone),
                         times=_stamps(rules, stamps - rules.delta_us),
                         starts=_starts(rules, starts, np.ones(len(gone), dtype=bool)))
    cleared[TICK_US] = stamps
    return cleared if rows is None else concat_rows([rows[keep], cleared])


def _same(a: tuple[int, float], b: tuple[int, float]) -> bool:
    """Equal results: status and value, NaN equal to NaN."""
    return a[0] == b[0] and (a[1] == b[1] or (np.isnan(a[1]) and np.isnan(b[1])))


def next_update_us(state: KeyState, rules: Rules) -> int | None:
    """The watermark at which a window can next end with a result to emit on time
    (:func:`with_updates`), or None."""
    if not updates(rules) or state.ahead_us is None:
        return None
    assert rules.clock is not None
    if rules.clock.session:
        return _next_session_end_us(state, rules)
    period = rules.period_us
    start = state.ahead_us if state.clock_us is None else max(state.ahead_us, state.clock_us)
    boundary = (start // period + 1) * period
    pending = (np.zeros(0, dtype=np.int64) if state.pending is None
               else state.pending[_TIME_US].to_numpy(dtype=np.int64))
    before = [*pending[pending < boundary].tolist(),
              *([] if state.last_us is None else [state.last_us])]
    horizon = rules.clock.horizon
    if before and (horizon is None or boundary // period - max(before) // period <= horizon):
        return boundary
    after = pending[pending >= boundary]  # the tick after the next event
    return None if not len(after) else (int(after.min()) // period + 1) * period


def _next_session_end_us(state: KeyState, rules: Rules) -> int | None:
    """Under a session clock: the first end (last event + gap) after ``ahead_us`` of a
    session of the settled events since the clock's last tick and the pending ones."""
    gap = rules.period_us
    times = [] if state.pending is None else state.pending[_TIME_US].tolist()
    if state.last_us is not None and (state.clock_us is None
                                      or state.clock_us < state.last_us + gap):
        times = [state.last_us, *times]
    ends = [t + gap for t, after in zip(times, [*times[1:], None], strict=True)
            if after is None or after - t >= gap]
    later = [e for e in ends if state.ahead_us is None or e > state.ahead_us]
    return min(later, default=None)


def silent(state: KeyState, rules: Rules) -> bool:
    """True if the key's state can go: nothing pending, and as many idle ticks as the
    clock's horizon since its last event (later ticks change nothing a step reads)."""
    if (rules.clock is None or rules.clock.horizon is None or state.pending is not None
            or state.clock_us is None or state.last_us is None or state.sent):
        return False
    return _idle_ticks(state, rules) >= rules.clock.horizon


def _idle_ticks(state: KeyState, rules: Rules) -> int:
    """The ticks of the clock since the key's last event."""
    assert rules.clock is not None and state.clock_us is not None and state.last_us is not None
    if rules.clock.session:
        return int(state.clock_us >= state.last_us + rules.period_us)
    return state.clock_us // rules.period_us - state.last_us // rules.period_us


def _steps(rules: Rules, state: KeyState, times: np.ndarray, watermark_us: int | None
           ) -> tuple[np.ndarray, np.ndarray]:
    """(event index or −1 for a tick, time in µs) of every step after the clock's last
    (``state.clock_us``). A periodic clock resumes from there, a session clock from the
    key's last event (it ticks a gap after it, unless it did already)."""
    if rules.clock is None:
        return np.arange(len(times), dtype=np.int64), times
    session = rules.clock.session
    origin = state.last_us if session else state.clock_us
    previous = [] if origin is None else [origin]
    seq = np.array([*previous, *times.tolist()], dtype=np.int64)
    until = watermark_us if rules.watermark else int(seq[-1])
    steps = clock_steps(np.zeros(len(seq), dtype=np.int64), seq, rules.period_us,
                        rules.clock.horizon, until, session)
    event, step_us = steps.event, steps.time
    if previous:  # the clock's last position is not a step: drop it, renumber the events
        keep = event != 0
        if state.clock_us is not None:  # a session's tick the clock made already
            keep &= (event > 0) | (step_us > state.clock_us)
        event, step_us = np.where(event[keep] > 0, event[keep] - 1, -1), step_us[keep]
    return event, step_us


def _window_starts(rules: Rules, state: KeyState, tick: np.ndarray, step_us: np.ndarray
                   ) -> np.ndarray | None:
    """The start (µs) of the window of each step (its tick's window, for a tick): a
    periodic window's boundary minus its size; a session's first event, carried over
    from ``state.opened_us`` while the session the key had open goes on. None for a
    monitor without windows."""
    if rules.clock is None or not rules.clock.windowed:
        return None
    if not rules.clock.session:
        return step_us - rules.clock.window_ns // 1000
    is_open = state.last_us is not None and _idle_ticks(state, rules) == 0
    fresh = np.zeros(len(tick), dtype=bool)
    fresh[:1] = not is_open
    return session_starts(tick, step_us, fresh, state.opened_us or 0)


def _durations(m: Monitor) -> dict[str, float]:
    """The ``within`` durations the DT reads, in µs, the unit of :data:`CLOCK_FIELD` here
    (rounded up, as :func:`qre.runtime.timed.run_timed` gives them in its δ)."""
    return {name: float(-(-ns // 1000))
            for name, ns in durations((m.unoptimized or m.dt).fields).items()}


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
    out[CLOCK_FIELD] = step_us.astype(np.float64)  # whole µs: a within's differences are exact
    out.update({name: np.full(len(take), d) for name, d in _durations(m).items()})
    return out


def _rows(plan: Plan, rules: Rules, key: Any, event: np.ndarray, step_us: np.ndarray,
          events: pd.DataFrame | None, status: np.ndarray, value: np.ndarray,
          starts: np.ndarray | None, boundaries: bool = False) -> pd.DataFrame:
    """The emitted rows (output not ⊥): events stamped with their time, ticks with their
    boundary minus one unit, in the time column's type, with their windows' ``starts``
    (µs); with ``boundaries`` also :data:`TICK_US`; with a speculation bound,
    :data:`ROW_US`."""
    keep = status != 0
    event, step_us = event[keep], step_us[keep]
    starts = None if starts is None else starts[keep]
    tick = event < 0
    tags = np.full(len(event), TICK, dtype=object)
    if events is not None:
        original = events[plan.tag].to_numpy(dtype=object)
        tags[~tick] = [text(t) for t in original[event[~tick]]]
    stamp_us = np.where(tick, step_us - rules.delta_us, step_us)
    rows = frame_rows(plan, key, events, status[keep].astype(np.int8).reshape(-1, 1),
                      value[keep].reshape(-1, 1), False, rows=event, tags=tags,
                      times=_stamps(rules, stamp_us), starts=_starts(rules, starts, tick))
    if rules.speculate_us is not None:
        rows[ROW_US] = stamp_us
    if boundaries:
        rows[TICK_US] = np.where(tick, step_us, -1)
    return rows


def _starts(rules: Rules, start_us: np.ndarray | None, tick: np.ndarray) -> Any:
    """A window aggregate's ``start`` column: the start (µs; None: unknown) of the window
    each tick closes, missing at an event's row, in the time column's type (a nullable
    column: NaT, NaN or NA where missing); None for other monitors."""
    if rules.clock is None or not rules.clock.windowed:
        return None
    known = start_us is not None
    start = pd.Series(_stamps(rules, start_us if known else np.zeros(len(tick), np.int64)))
    if rules.time_kind == "integral":
        start = start.astype("Int64")
    return start.where(pd.Series(tick & known), None if rules.time_kind == "integral"
                       else np.nan)


def _stamps(rules: Rules, stamp_us: np.ndarray) -> Any:
    """Stamps in µs as values of the time column's type."""
    if rules.time_kind == "timestamp":
        return pd.to_datetime(stamp_us, unit="us").to_numpy()
    if rules.time_kind == "fractional":
        return stamp_us / rules.unit_us
    return stamp_us // rules.unit_us

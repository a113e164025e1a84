"""One key's step of a monitored stream: order, watermark, lateness and idle gaps.

Pipeline position: inside a Spark Python worker, between the state store and
the monitor's kernel; :mod:`spark_udf.stream` calls :func:`step` once per
key per micro-batch (and per fired timer) and keeps :class:`KeyState` in
Spark's state store. Pure: pandas frames in, pandas frames out, no Spark, so
the rules are tested against ``Monitor.run`` without a cluster.

The rules, per key:

* **Order.** Events are processed in the order of :func:`spark_udf.plan.time_ordered`
  (time, tie-breakers, tag, values; NA last): the order of ``monitor_frame``.
* **Watermark.** Without one, each micro-batch's events are processed at
  once. With one, an event waits (``KeyState.pending``) until the watermark
  reaches its time (``time_us <= watermark_us``, Spark's own test for a late
  row), and events released together are sorted: events that arrive out of
  order, but no later than the watermark allows, are processed in order.
* **Late events.** An event that cannot be processed in order is late. With
  a watermark, that is an event that arrives at or below the watermark in
  force (the rows Spark itself calls late; earlier events of its key may
  have been released already); without one, an event that sorts before the
  last event its key processed (events equal to it in every order column
  are not late: such rows are interchangeable). Either way it depends only
  on the micro-batches, never on when timers fire, so a restarted query
  flags the same events. A late event is never reordered silently: policy
  ``"flag"`` (the default) outputs it with ``late`` true, status 0 (no
  output) and value NaN, and leaves the key's state as it was; ``"fail"``
  raises ValueError.
* **Idle keys** (``ttl``, with a watermark). An event more than ``ttl`` after
  its key's previous processed event starts the key afresh, from the
  monitor's initial configuration; and once the watermark passes the last
  event + ``ttl`` with nothing pending, the key's state is dropped
  (:func:`step` returns None). The first rule makes the outputs independent
  of when Spark drops the state: an event that arrives after the drop is
  either late (at or below the watermark) or more than ``ttl`` after the
  key's last event, which starts the key afresh anyway. A state that holds
  nothing (its key only had late events) is not kept.

* **Allowed lateness** (``Rules.lateness_us``): all of the above runs at the
  watermark minus the lateness — with a periodic clock, release and lateness at the
  clock's latest boundary at or below it (``Rules.release_us``: late only
  once a window of the event has closed for good); a clock's window results
  are emitted on time and updated (:func:`spark_udf.clocked.with_updates`).
* **Optimistic processing** (``Rules.optimistic``, :mod:`spark_udf.optimistic`):
  events waiting for the watermark are processed on arrival, on from the key's
  checkpoints, and the rows are a changelog (inserts and retractions) of the current
  results; the late rule is the one above.
* **Timed monitors** (``Rules.timed``): :mod:`spark_udf.clocked` feeds the
  released events with the clock's ticks and emits the rows of
  ``Monitor.run_timed``; the key's timer also wakes it at its clock's next
  tick, and a window monitor's state goes once its windows are closed.

Cost per key and step: a sort of the key's new and pending events, one
kernel call per idle gap, O(1) Python otherwise.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import pandas as pd

from qre.language.clock import Clock
from qre.runtime.monitor import Monitor, Output, Session
from qre.runtime.order import zero_rank
from qre.runtime.window_contents import WindowContents

from . import clocked
from .plan import (
    LATE,
    START,
    Plan,
    concat_rows,
    event_data,
    feed_in_runs,
    frame_rows,
    null_time_error,
    plain,
    take_rows,
    time_ordered,
)

__all__ = ["LATE", "LATE_POLICIES", "TIME_US", "Checkpoint", "KeyState", "Rules", "advance",
           "advance_in_runs", "first_held", "late_rows", "no_rows", "sort_out", "split_late",
           "step", "unless_idle", "wake_ms"]

TIME_US = "__qre_time_us"
"""The column of event times in microseconds since the epoch (watermark comparisons)."""


LATE_POLICIES = ("flag", "fail")
"""What happens to a late event: flagged in the output, or the query fails."""


@dataclass(frozen=True)
class Rules:
    """How a stream treats time (module docstring)."""

    watermark: bool
    ttl_us: int | None = None
    late: str = "flag"
    lateness_us: int = 0
    """Allowed lateness: the key's rules run at the watermark minus this."""
    clock: Clock | None = None
    """A timed monitor's clock (period and horizon in µs here), or None."""
    timed: bool = False
    """The monitor reads event times (a clock, ``cur.time``, a ``within``, a bounded
    past operator)."""
    unit_us: int = 1
    """Microseconds per unit of the time column (1 for timestamps): the unit of
    ``cur.time`` (and δ for integer times: :attr:`delta_us`)."""
    time_kind: str = "timestamp"
    """The time column's type: ``timestamp``, ``integral`` or ``fractional`` (stamps)."""
    optimistic: bool = False
    """Process events on arrival and retract the rows that a later-arriving event with
    an earlier time invalidates (:mod:`spark_udf.optimistic`); needs a watermark."""
    checkpoint_every: int = 256
    """Optimistic processing: the pending events between two of a key's checkpoints
    (:class:`Checkpoint`; besides one at the end of each micro-batch's events). Chosen
    by measurement (benchmarks/optimistic.py): fewer checkpoints replay more events
    after a late one, more cost a kernel call and a stored configuration each."""
    speculate_us: int | None = None
    """Optimistic processing: how far past the release point (:meth:`release_us`, where
    rows become final) rows are emitted; a later row waits until the release point is
    that close to it. None: no bound, every row on arrival; 0: final rows only."""

    @property
    def delta_us(self) -> int:
        """δ, the granularity of stamps, in µs: a unit for integer times, a microsecond
        for floats and timestamps (:mod:`qre.runtime.times`' rule)."""
        return self.unit_us if self.time_kind == "integral" else 1

    def effective(self, watermark_us: int | None) -> int | None:
        """The watermark the rules apply: Spark's, minus the allowed lateness."""
        return None if watermark_us is None else watermark_us - self.lateness_us

    @property
    def period_us(self) -> int:
        """The clock's period in µs (a clocked monitor's only)."""
        assert self.clock is not None
        return self.clock.period_ns // 1000

    def release_us(self, watermark_us: int | None) -> int | None:
        """Events at or below this time are released (late, if they arrive now), given
        Spark's watermark: the effective watermark; with a periodic clock, the last µs
        before the clock's latest boundary at or below it — an event is late only once
        a window it falls in has closed for good (seed 000 §2.3: purged at its end plus
        L). A session clock's windows are not aligned: its events are released at the
        effective watermark, as without a clock."""
        effective = self.effective(watermark_us)
        if effective is None or self.clock is None or self.clock.session:
            return effective
        return effective // self.period_us * self.period_us - 1

    def emitted_us(self, watermark_us: int) -> int:
        """Optimistic processing with a speculation bound: the latest stamp of the rows
        emitted at Spark's watermark ``watermark_us`` (the release point plus the bound)."""
        release_us = self.release_us(watermark_us)
        assert release_us is not None and self.speculate_us is not None
        return release_us + self.speculate_us

    def due_us(self, time_us: int) -> int:
        """The effective watermark at which an event at ``time_us`` is released."""
        if self.clock is None or self.clock.session:
            return time_us
        return (time_us // self.period_us + 1) * self.period_us


@dataclass(frozen=True)
class KeyState:
    """What a key carries from one micro-batch to the next."""

    config: np.ndarray | None = None
    """``Session.state`` after the last processed event; None: the initial configuration."""
    last: tuple[Any, ...] | None = None
    """The order columns (``plan.order``) of the last processed event."""
    last_us: int | None = None
    """Its time in microseconds (with a watermark, or for a timed monitor)."""
    pending: pd.DataFrame | None = None
    """Events waiting for the watermark, in processing order: ``plan.order`` columns and
    :data:`TIME_US`."""
    clock_us: int | None = None
    """A timed monitor's clock: the time of its last event or of its last tick since."""
    sent: tuple[tuple[int, int, float], ...] = ()
    """With allowed lateness, the window results emitted before they settled: (boundary
    in µs, status, value) (:func:`spark_udf.clocked.with_updates`)."""
    ahead_us: int | None = None
    """With allowed lateness, the watermark up to which window results were emitted."""
    opened_us: int | None = None
    """A session clock's latest session: the time of its first event (the ``start`` of
    its row when it closes)."""
    asserted: pd.DataFrame | None = None
    """Optimistic processing: the rows asserted for the pending events (and the clock's
    ticks after the settled ones) and not retracted since: emitted, or, with a
    speculation bound, held back until it comes near (stamped: ``clocked.ROW_US``)."""
    checkpoints: tuple[Checkpoint, ...] = ()
    """Optimistic processing: states of the key part-way through its pending events,
    by position."""
    replayed: int = 0
    """Optimistic processing, a statistic of the step that made this state (not kept
    across micro-batches): the events it ran that a step had run before."""
    windows: WindowContents | None = None
    """A query with sliding windows: the events they can still reach
    (:attr:`qre.runtime.monitor.Session.windows`); None: no event yet, or no window."""


@dataclass(frozen=True)
class Checkpoint:
    """Optimistic processing (:mod:`spark_udf.optimistic`): a key's state after its first
    ``position`` pending events, processed from its settled state with no clock tick
    after the last of them, and the number of asserted rows those made. A key rolls
    back to its latest checkpoint before the first event that arrives out of order."""

    position: int
    rows: int
    state: KeyState


def first_held(state: KeyState, rules: Rules) -> int | None:
    """Optimistic processing with a speculation bound: the stamp (µs) of the key's first
    row held back at the last watermark, or None."""
    assert state.asserted is not None and state.ahead_us is not None
    stamps = state.asserted[clocked.ROW_US].to_numpy()
    held = stamps[stamps > rules.emitted_us(state.ahead_us)]
    return int(held.min()) if len(held) else None


def step(plan: Plan, rules: Rules, m: Monitor, engine: str, key: Any, state: KeyState,
         events: pd.DataFrame | None, watermark_us: int | None
         ) -> tuple[KeyState | None, pd.DataFrame]:
    """Process a key's new ``events`` (None on a timer) from ``state``.

    Returns the key's next state (None: drop it) and the output rows: the
    shown input columns (``plan.shown``), the result columns
    (``plan.result_columns``) and :data:`LATE` (prefixed), in processing order.
    """
    if events is not None and events[plan.time].isna().any():
        raise null_time_error("monitor_stream", plan, key)
    if rules.optimistic:
        from . import optimistic  # here: it builds on this module

        return optimistic.step(plan, rules, m, engine, key, state, events, watermark_us)
    spark_watermark_us, watermark_us = watermark_us, rules.effective(watermark_us)
    release_us = rules.release_us(spark_watermark_us)
    late, on_time, waiting = sort_out(plan, rules, state, events, release_us)
    outputs = [] if late is None else [late_rows(plan, rules, key, late, state, release_us)]
    updates = clocked.updates(rules)
    nxt, settled_rows = advance(plan, rules, m, engine, key, state, on_time, watermark_us,
                                boundaries=updates)
    nxt = replace(nxt, pending=waiting)
    if updates:
        assert spark_watermark_us is not None  # updates need a watermark
        nxt, settled_rows = clocked.with_updates(plan, rules, m, engine, key, nxt,
                                                 settled_rows, spark_watermark_us)
    if settled_rows is not None:
        outputs.append(settled_rows)
    rows = concat_rows(outputs) if outputs else no_rows(plan)
    if clocked.silent(nxt, rules):
        return None, rows
    return unless_idle(nxt, rules, watermark_us), rows


def advance(plan: Plan, rules: Rules, m: Monitor, engine: str, key: Any, state: KeyState,
            on_time: pd.DataFrame | None, watermark_us: int | None, *,
            boundaries: bool = False) -> tuple[KeyState, pd.DataFrame | None]:
    """Process the key's ``on_time`` events (in order; None: none) from ``state``, with
    a timed monitor's clock ticks up to ``watermark_us``: the state after them (pending
    events as in ``state``) and their rows (None if nothing ran)."""
    state, rows, _ = advance_in_runs(plan, rules, m, engine, key, state, on_time, watermark_us,
                                     (), boundaries=boundaries)
    return state, rows


def advance_in_runs(plan: Plan, rules: Rules, m: Monitor, engine: str, key: Any,
                    state: KeyState, on_time: pd.DataFrame | None, watermark_us: int | None,
                    cuts: Sequence[int], *, boundaries: bool = False
                    ) -> tuple[KeyState, pd.DataFrame | None, list[Checkpoint]]:
    """:func:`advance`, and a :class:`Checkpoint` after each of the first ``cuts`` events
    (increasing positions in ``on_time``, 1 to its length): the state there with no
    clock tick after its last event, and the number of rows before (one kernel pass)."""
    resumed, last, last_us = (state.config, state.windows), state.last, state.last_us
    clock_us, opened_us = state.clock_us, state.opened_us
    if on_time is not None:
        last = _order_values(on_time, plan, len(on_time) - 1)
        last_us = int(on_time[TIME_US].iloc[-1]) if rules.watermark or rules.timed else None
    rows, at_cuts = None, []
    if rules.timed and (on_time is not None or state.clock_us is not None):
        resumed, (clock_us, opened_us), rows, at_cuts = clocked.run(
            plan, rules, m, engine, key, on_time, state, watermark_us, boundaries=boundaries,
            cuts=cuts)
    elif on_time is not None:
        resumed, rows, configs = _run(plan, rules, m, engine, key, on_time, state, cuts)
        at_cuts = [(c, state.clock_us, state.opened_us, k) for c, k in zip(configs, cuts,
                                                                            strict=True)]
    points = [Checkpoint(k, n_rows, replace(
        state, config=c, windows=w, last=_order_values(on_time, plan, k - 1),
        last_us=int(on_time[TIME_US].iloc[k - 1]) if rules.watermark or rules.timed else None,
        clock_us=c_us, opened_us=o_us)) for k, ((c, w), c_us, o_us, n_rows) in zip(
            cuts, at_cuts, strict=True)] if on_time is not None else []
    return replace(state, config=resumed[0], windows=resumed[1], last=last, last_us=last_us,
                   clock_us=clock_us, opened_us=opened_us), rows, points


def wake_ms(state: KeyState, rules: Rules) -> int | None:
    """The watermark (ms) at which the key needs a timer: its first pending event
    becomes ready, its clock's next tick falls due, or, with nothing pending, its
    state becomes idle; None if none of these can happen."""
    due = [] if state.pending is None else [rules.due_us(int(_first_waiting(state, rules)))]
    if rules.speculate_us is not None and state.asserted is not None:
        waits = first_held(state, rules)  # it is emitted at a release point this close
        if waits is not None:
            due.append(rules.due_us(waits - rules.speculate_us))
    tick = clocked.next_tick_us(state, rules)
    if tick is not None:
        due.append(tick)
    update = clocked.next_update_us(state, rules)  # on Spark's watermark, not lessened
    ahead = clocked.next_speculative_tick_us(state, rules) if rules.optimistic else None
    if ahead is not None:  # the speculative clock's next tick, also on Spark's watermark
        update = ahead if update is None else min(update, ahead)
    if due or update is not None:
        return -(-min([*(d + rules.lateness_us for d in due),  # ceil
                       *([] if update is None else [update])]) // 1000)
    if rules.ttl_us is not None and state.last_us is not None:
        # watermark·1000 − lateness > last + ttl
        return (state.last_us + rules.ttl_us + rules.lateness_us) // 1000 + 1
    return None


def _first_waiting(state: KeyState, rules: Rules) -> int:
    """The time of the key's first pending event not released at the last watermark (with
    optimistic processing, released events wait for a checkpoint after them:
    :mod:`spark_udf.optimistic`; there is always one not released)."""
    times = state.pending[TIME_US].to_numpy()
    if not rules.optimistic or state.ahead_us is None:
        return int(times[0])
    return int(times[np.searchsorted(times, rules.release_us(state.ahead_us), side="right")])


def sort_out(plan: Plan, rules: Rules, state: KeyState, events: pd.DataFrame | None,
             watermark_us: int | None
             ) -> tuple[pd.DataFrame | None, pd.DataFrame | None, pd.DataFrame | None]:
    """The late events, the events to process now and the events that wait, each in
    processing order (None: no such events); module docstring, "Late events"."""
    late = None
    if rules.watermark and events is not None:
        late, events = split_late(plan, events, watermark_us)
    parts = [f for f in (state.pending, events) if f is not None and len(f)]
    if not parts:
        return _some(late), None, None
    # Pending events are kept sorted: alone (on a timer) they need no sort, and what
    # stays pending is the same frame, which the state store then need not rewrite.
    frame = state.pending if parts[0] is state.pending and len(parts) == 1 else time_ordered(
        pd.concat(parts, ignore_index=True), plan)
    if rules.watermark:
        # Times in microseconds grow with the times, so the released events are a prefix.
        n_ready = int(np.searchsorted(frame[TIME_US].to_numpy(), watermark_us, side="right"))
        waiting = frame if n_ready == 0 else frame.iloc[n_ready:]
        return _some(late), _some(frame.iloc[:n_ready]), _some(waiting)
    n_late = _late_prefix(frame, plan, state.last)
    return _some(frame.iloc[:n_late]), _some(frame.iloc[n_late:]), None


def split_late(plan: Plan, events: pd.DataFrame, release_us: int | None
               ) -> tuple[pd.DataFrame | None, pd.DataFrame]:
    """The late ``events`` (at or below the release point: the rows Spark calls late,
    their key may have moved past them already) in processing order, and the others."""
    behind = events[TIME_US].to_numpy() <= release_us
    if not behind.any():
        return None, events
    return time_ordered(events[behind], plan), events[~behind]


def _some(frame: pd.DataFrame | None) -> pd.DataFrame | None:
    return frame if frame is not None and len(frame) else None


def unless_idle(state: KeyState, rules: Rules, watermark_us: int | None) -> KeyState | None:
    """None (drop the state) if it holds nothing (only late events so far), or once the
    watermark is past the last event + ttl with nothing pending."""
    if state.pending is None and state.last is None:
        return None
    if (rules.ttl_us is not None and state.pending is None and state.last_us is not None
            and watermark_us is not None and watermark_us > state.last_us + rules.ttl_us):
        return None
    return state


def _order_values(frame: pd.DataFrame, plan: Plan, i: int) -> tuple[Any, ...]:
    return tuple(plain(frame[c].iloc[i]) for c in plan.order)


def _sort_key(values: tuple[Any, ...]) -> tuple[Any, ...]:
    """A tuple comparing as :func:`time_ordered` sorts: each value ascending, NA last; after
    the time (the first value), ``-0.0`` before ``0.0`` (:func:`qre.runtime.order.zero_rank`)."""
    return tuple((True, 0, 0) if pd.isna(v) else (False, v, zero_rank(v) if k else 0)
                 for k, v in enumerate(values))


def _late_prefix(ready: pd.DataFrame, plan: Plan, last: tuple[Any, ...] | None) -> int:
    """How many of the sorted ``ready`` events sort before ``last`` (they come first)."""
    if last is None or not len(ready):
        return 0
    bound = _sort_key(last)
    n = 0
    while n < len(ready) and _sort_key(_order_values(ready, plan, n)) < bound:
        n += 1
    return n


def late_rows(plan: Plan, rules: Rules, key: Any, late: pd.DataFrame,
              state: KeyState, release_us: int | None) -> pd.DataFrame:
    """The late-event policy: flag the events (no output, state unchanged) or fail."""
    if rules.late == "fail":
        first = plain(late[plan.time].iloc[0])
        behind = (f"at or below {release_us} µs since the epoch (the watermark, less the "
                  f"allowed lateness{'; before the first window still open' * bool(rules.clock)})"
                  if rules.watermark else
                  f"after processing one at {state.last[0] if state.last else None!r}")
        raise ValueError(
            f"monitor_stream: key {plain(key)!r} received an event at {plan.time} = {first!r} "
            f"{behind} (late=\"fail\"); a larger watermark waits longer for late events, "
            f"late=\"flag\" reports them")
    n_outputs = len(plan.result_pairs)
    return frame_rows(plan, key, late, np.zeros((len(late), n_outputs), dtype=np.int8),
                      np.full((len(late), n_outputs), np.nan), late=True)


def _run(plan: Plan, rules: Rules, m: Monitor, engine: str, key: Any, events: pd.DataFrame,
         state: KeyState, cuts: Sequence[int] = ()
         ) -> tuple[clocked.Resumed, pd.DataFrame, list[clocked.Resumed]]:
    """Feed the on-time events, afresh after each idle gap; the final configuration and
    window contents, the rows (one per event) and the same after the first k events for k
    in ``cuts``."""
    n = len(events)
    starts = [0]
    fresh = state.config is None
    if rules.ttl_us is not None:
        us = events[TIME_US].to_numpy(dtype=np.int64)
        gaps = np.flatnonzero(np.diff(us) > rules.ttl_us) + 1
        starts += gaps.tolist()
        fresh = fresh or (state.last_us is not None and int(us[0]) - state.last_us > rules.ttl_us)
    bounds = [*starts, n]
    tags = events[plan.tag].to_numpy(dtype=object)
    data = event_data(events, plan)
    status = np.empty((n, len(plan.outputs)), dtype=np.int8)
    value = np.empty((n, len(plan.outputs)), dtype=np.float64)
    resumed: clocked.Resumed = (state.config, state.windows)
    configs: list[clocked.Resumed] = []
    for lo, hi in itertools.pairwise(bounds):
        afresh = fresh or lo > 0  # after an idle gap longer than the ttl: a new key
        session = m.session(None if afresh else resumed[0], engine=engine,
                            windows=None if afresh else resumed[1])
        ends = [k - lo for k in cuts if lo < k <= hi]

        def feed(rows: slice, lo: int = lo, session: Session = session) -> Output:
            rows = slice(lo + rows.start, lo + rows.stop)
            return session.feed(tags[rows], take_rows(data, rows),  # type: ignore[arg-type]
                                unknown_tags=plan.unknown_tags)

        try:
            status[lo:hi], value[lo:hi], at = feed_in_runs(session, hi - lo, ends, feed)
        except ValueError as e:
            raise ValueError(f"monitor_stream, key {plain(key)!r} "
                             f"(this micro-batch's events in time order): {e}") from None
        configs += at
        resumed = (session.state, session.windows)
    rows = frame_rows(plan, key, events, status, value, late=False)
    if rules.speculate_us is not None:
        rows[clocked.ROW_US] = events[TIME_US].to_numpy(dtype=np.int64)
    return resumed, rows, configs


def no_rows(plan: Plan) -> pd.DataFrame:
    """An empty output frame with the stream's columns (without an optimistic change)."""
    start = [plan.added(START)] if plan.windows else []
    return pd.DataFrame(columns=[*plan.shown, *start, *plan.result_columns, plan.added(LATE)])

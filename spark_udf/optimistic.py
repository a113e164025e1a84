"""Optimistic processing of one key's stream: results on arrival, retracted when a later
arrival invalidates them (seed 002, §V; issue 22).

Pipeline position: inside :func:`spark_udf.keyed.step` when ``Rules.optimistic``,
between the state store and the monitor's kernel. Pure pandas/numpy, tested without
Spark through the stream simulator like the rest of :mod:`spark_udf.keyed`.

The rules, per key, with a watermark W and an allowed lateness L:

* **Settled.** Events at or below the release point (``Rules.release_us``: W − L,
  or the clock's boundary below it) are final: an event that arrives at or below it
  is late (flagged or failing, as today), so nothing can come before them any more.
  The key's settled state moves up to its latest checkpoint at or below the release
  point (the events after it stay pending, already run, until a later checkpoint is
  released; all of them, with the clock's ticks up to W − L, once all are released),
  so settling runs nothing again. The settled state, the pending events and the
  checkpoints among them are all a key keeps: its state stays bounded by the events
  of the last L plus the watermark's delay, plus up to a checkpoint's span.
* **Speculative.** The pending events are processed on arrival, in order, on from the
  settled state (a timed monitor's clock ticking between them and up to W): their
  rows are the key's current answer. The key keeps :class:`~spark_udf.keyed.Checkpoint`
  states part-way through them — after each micro-batch's events and every
  ``Rules.checkpoint_every`` events — so that events arriving in order continue from
  the last one, and an event that sorts before pending events rolls the key back to
  the latest checkpoint before it and replays the events from there (seed 002's
  "insert at its place and recompute"; the DT's state is a flat vector, so the
  rollback is a copy).
* **Changelog.** Against the rows asserted since the rollback point it emits, in this
  order, a ``retract`` row for each earlier row that is no longer asserted (gone, or
  changed) and an ``insert`` row for each new one; a retraction repeats the row it
  withdraws (seed 002's tombstone carries the payload of the item it cancels). Rows
  compare by every column (:func:`qre.runtime.changelog.row_changes`): identical rows
  are one result to a consumer, so a replay that gives the same row emits nothing.
  After each step, the inserts minus the retractions emitted so far are the rows of
  the key's events so far, in order, with ticks up to W: what ``run_timed`` gives on
  them (tests/test_optimistic.py). Late events' rows are inserts (flagged late).
* **Speculation bound** (``Rules.speculate_us``, the user's ``speculate``): the
  changelog covers only the rows stamped at most that far past the release point;
  the others are computed and kept (stamped, :data:`spark_udf.clocked.ROW_US`) and
  emitted by the step — on an event or the key's timer — whose release point comes
  within the bound of them. A row that a late event changes before it is emitted is
  never retracted: the bound trades latency for retractions (0: final rows only).

Why a checkpoint is a valid place to resume: a clock's ticks are a function of the
event times alone (:func:`qre.language.clock.clock_steps`; a tick at a boundary comes
before an event at that time), so a state after an event with no tick after it, and the
state after the same events with ticks up to W − L (all at or before the next pending
event), give the same rows and states on the events that follow; the rows of the
ticks up to W − L are a prefix of the rows the key asserted from the same point.

Once W − L passes a row's stamp no event can change it: the sink barrier
(:class:`qre.runtime.changelog.Barrier`) releases it then, and what it releases is the
pessimistic policy's output.

Cost per key and step: the events after the rollback point run through the kernel in
one pass (a session feed per checkpoint taken: why checkpoints are every 256 events,
benchmarks/optimistic.py), and the rows after it are compared
(:func:`~qre.runtime.changelog.row_changes`); pandas bookkeeping per step, about three
times the pessimistic policy's in-order cost (RESULTS.md, "optimistic").
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from qre.runtime.changelog import CHANGE, INSERT, RETRACT, row_changes

from . import clocked
from .plan import Plan, concat_rows, order_of

if TYPE_CHECKING:
    from qre.runtime.monitor import Monitor

    from .keyed import Checkpoint, KeyState, Rules

__all__ = ["step"]


def step(plan: Plan, rules: Rules, m: Monitor, engine: str, key: Any, state: KeyState,
         events: pd.DataFrame | None, watermark_us: int | None
         ) -> tuple[KeyState | None, pd.DataFrame]:
    """:func:`spark_udf.keyed.step` under the optimistic rules (module docstring): the
    key's next state (None: drop it) and its changelog rows, retractions first."""
    from . import keyed  # here: keyed imports this module

    if watermark_us is None:
        raise ValueError("monitor_stream: optimistic processing needs a watermark: it "
                         "says when a result is final")
    release_us = rules.release_us(watermark_us)
    late = None
    if events is not None:
        late, events = keyed.split_late(plan, events, release_us)
    merged, changed_at, n_new = _merged(plan, state.pending, events)
    n = 0 if merged is None else len(merged)
    settle_at = 0 if merged is None else int(np.searchsorted(
        merged[keyed.TIME_US].to_numpy(), release_us, side="right"))
    start = keyed.Checkpoint(0, 0, replace(state, pending=None, asserted=None,
                                           checkpoints=(), replayed=0))
    kept = [c for c in (start, *state.checkpoints) if c.position <= changed_at]
    base = kept[-1]
    cuts = sorted({*range(base.position + rules.checkpoint_every, n, rules.checkpoint_every),
                   n} - {base.position})
    points, fresh = _replay(plan, rules, m, engine, key, base, merged, cuts, watermark_us)
    before = state.asserted
    retracted, inserted = _changes(rules, state, base.rows, fresh, watermark_us)
    asserted = _some([None if before is None else before.iloc[:base.rows], fresh])
    # Settle at the latest checkpoint at or before the release point: the events after
    # it stay pending until a later one (nothing runs twice to settle); all of them, once
    # all are released, with the clock's ticks up to the effective watermark.
    checkpoints = [*kept, *points]
    at = [c for c in checkpoints if c.position <= settle_at][-1]
    settled, n_settled = at.state, at.rows
    if at.position == n:
        settled, ticks = keyed.advance(plan, rules, m, engine, key, settled, None,
                                       rules.effective(watermark_us))
        n_settled += 0 if ticks is None else len(ticks)
    remaining = None if asserted is None or n_settled >= len(asserted) else (
        asserted.iloc[n_settled:].reset_index(drop=True))
    nxt = replace(
        settled, pending=None if at.position == n else merged.iloc[at.position:].reset_index(
            drop=True), asserted=remaining, ahead_us=watermark_us,
        checkpoints=tuple(replace(c, position=c.position - at.position, rows=c.rows - n_settled)
                          for c in checkpoints if c.position > at.position),
        replayed=n - base.position - n_new)
    out = [] if late is None else [_changed(
        keyed.late_rows(plan, rules, key, late, state, release_us), INSERT, plan)]
    out += [_changed(f, change, plan) for f, change in ((retracted, RETRACT), (inserted, INSERT))
            if f is not None]
    rows = concat_rows(out) if out else _changed(keyed.no_rows(plan), INSERT, plan)
    if clocked.silent(nxt, rules) and remaining is None:
        return None, rows
    if rules.speculate_us is not None and remaining is not None and keyed.first_held(
            nxt, rules) is not None:
        return nxt, rows  # idle or not, the key's timer emits what it holds back
    return keyed.unless_idle(nxt, rules, rules.effective(watermark_us)), rows


def _changes(rules: Rules, state: KeyState, kept: int, fresh: pd.DataFrame | None,
             watermark_us: int) -> tuple[pd.DataFrame | None, pd.DataFrame | None]:
    """The rows to retract and to insert when the key's asserted rows after the first
    ``kept`` are replaced by ``fresh`` at Spark's ``watermark_us``: with a speculation
    bound, of the rows emitted (:meth:`~spark_udf.keyed.Rules.emitted_us`) at the last
    watermark and at this one."""
    before = state.asserted
    old = None if before is None else before.iloc[kept:]
    if rules.speculate_us is None:
        return row_changes(old, fresh)
    bound_us = rules.emitted_us(watermark_us)
    bound_before = None if state.ahead_us is None else rules.emitted_us(state.ahead_us)
    retracted, inserted = row_changes(_emitted(old, bound_before), _emitted(fresh, bound_us))
    if before is None or bound_before is None:
        return retracted, inserted
    stamps = before[clocked.ROW_US].to_numpy()[:kept]  # kept rows held back until now
    now = before.iloc[:kept][(stamps > bound_before) & (stamps <= bound_us)]
    return retracted, _some([now, inserted])


def _emitted(rows: pd.DataFrame | None, bound_us: int | None) -> pd.DataFrame | None:
    """The ``rows`` stamped at most ``bound_us`` (None: none of them)."""
    if rows is None or bound_us is None:
        return None
    return rows[rows[clocked.ROW_US].to_numpy() <= bound_us]


def _merged(plan: Plan, pending: pd.DataFrame | None, events: pd.DataFrame | None
            ) -> tuple[pd.DataFrame | None, int, int]:
    """The pending and new events in processing order (None: none), the position of the
    first new one (the number of events, if none) and the number of new ones. The
    sort is stable, so a new event equal to a pending one in every order column
    comes after it."""
    n_old = 0 if pending is None else len(pending)
    if events is None or not len(events):
        return pending, n_old, 0
    both = (pd.concat([pending, events], ignore_index=True) if n_old
            else events.reset_index(drop=True))
    order = order_of(both, plan)
    changed_at = int(np.argmax(order >= n_old))
    if (order[1:] > order[:-1]).all():  # arrived in order (the common case): no gather
        return both, changed_at, len(events)
    merged = both.take(order)
    merged.index = pd.RangeIndex(len(merged))  # (a new frame: no copy, as reset_index makes)
    return merged, changed_at, len(events)


def _replay(plan: Plan, rules: Rules, m: Monitor, engine: str, key: Any, base: Checkpoint,
            merged: pd.DataFrame | None, cuts: list[int], watermark_us: int
            ) -> tuple[list[Checkpoint], pd.DataFrame | None]:
    """Run ``merged`` from the checkpoint ``base`` to its end, with the clock's ticks up to
    the watermark, in one pass: a checkpoint at each of the ``cuts`` and the rows (None:
    none)."""
    from .keyed import advance, advance_in_runs

    if merged is None or base.position == len(merged):  # no event: the clock's ticks only
        _, rows = advance(plan, rules, m, engine, key, base.state, None, watermark_us)
        return [], rows
    _, rows, points = advance_in_runs(plan, rules, m, engine, key, base.state,
                                      merged.iloc[base.position:], watermark_us,
                                      [c - base.position for c in cuts])
    return [replace(c, position=c.position + base.position, rows=c.rows + base.rows)
            for c in points], rows if rows is not None and len(rows) else None


def _changed(frame: pd.DataFrame, change: str, plan: Plan) -> pd.DataFrame:
    """``frame`` with the change column (after the late flag), without the stamps."""
    if clocked.ROW_US in frame:  # (drop copies the frame: only with a speculation bound)
        frame = frame.drop(columns=clocked.ROW_US)
    return frame.assign(**{plan.added(CHANGE): change})


def _some(frames: list[pd.DataFrame | None]) -> pd.DataFrame | None:
    present = [f for f in frames if f is not None and len(f)]
    return concat_rows(present) if present else None

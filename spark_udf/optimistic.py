"""Optimistic processing of one key's stream: results on arrival, retracted when a later
arrival invalidates them (seed 002, §V; issue 22).

Pipeline position: inside :func:`spark_udf.keyed.step` when ``Rules.optimistic``,
between the state store and the monitor's kernel. Pure pandas/numpy, tested without
Spark through the stream simulator like the rest of :mod:`spark_udf.keyed`.

The rules, per key, with a watermark W and an allowed lateness L:

* **Settled.** Events at or below the release point (``Rules.release_us``: W − L,
  or the clock's boundary below it) are processed once, in order, from the settled
  state, exactly as the pessimistic policy does; an event that arrives at or below
  it is late (flagged or failing, as today). The settled state and the pending
  events are all a key keeps, so its state stays bounded by the events of the last
  L plus the watermark's delay.
* **Speculative.** The pending events — above the release point — are processed at
  once, in order, from the settled state (a timed monitor's clock ticking between
  them and up to W): their rows are the key's current answer. A key rolls back to
  its settled state and replays its pending events whenever any arrive, in whatever
  order they arrived; the DT's state is a flat vector, so the rollback is a copy.
* **Changelog.** The rows a step asserts are the settled rows it made plus the
  speculative ones. Against the rows asserted before (``KeyState.asserted``) it
  emits, in this order, a ``retract`` row for each earlier row that is no longer
  asserted (gone, or changed) and an ``insert`` row for each new one; a retraction
  repeats the row it withdraws (seed 002's tombstone carries the payload of the item
  it cancels). Rows compare by every column
  (:func:`qre.runtime.changelog.row_changes`): identical rows
  are one result to a consumer, so a replay that gives the same row emits nothing.
  After each step, the inserts minus the retractions emitted so far are the rows of
  the key's events so far, in order, with ticks up to W: what ``run_timed`` gives on
  them (tests/test_optimistic.py). Late events' rows are inserts (flagged late).

Once W − L passes a row's stamp no event can change it: the sink barrier
(:class:`qre.runtime.changelog.Barrier`) releases it then, and what it releases is the
pessimistic policy's output.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any

import pandas as pd

from qre.runtime.changelog import CHANGE, INSERT, RETRACT, row_changes

from . import clocked
from .plan import Plan, concat_rows

if TYPE_CHECKING:
    from qre.runtime.monitor import Monitor

    from .keyed import KeyState, Rules

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
    late, on_time, waiting = keyed.sort_out(plan, rules, state, events, release_us)
    settled, settled_rows = keyed.advance(plan, rules, m, engine, key, state, on_time,
                                          rules.effective(watermark_us))
    settled = replace(settled, pending=waiting, asserted=None)
    _, speculative_rows = keyed.advance(plan, rules, m, engine, key,
                                        replace(settled, pending=None), waiting, watermark_us)
    asserted = _some([settled_rows, speculative_rows])
    retracted, inserted = row_changes(state.asserted, asserted)
    out = [] if late is None else [_changed(
        keyed.late_rows(plan, rules, key, late, state, release_us), INSERT, plan)]
    out += [_changed(f, change, plan) for f, change in ((retracted, RETRACT), (inserted, INSERT))
            if f is not None]
    nxt = replace(settled, asserted=speculative_rows, ahead_us=watermark_us)
    rows = concat_rows(out) if out else _changed(keyed.no_rows(plan), INSERT, plan)
    if clocked.silent(nxt, rules) and speculative_rows is None:
        return None, rows
    return keyed.unless_idle(nxt, rules, rules.effective(watermark_us)), rows


def _changed(frame: pd.DataFrame, change: str, plan: Plan) -> pd.DataFrame:
    """``frame`` with the change column (after the late flag)."""
    return frame.assign(**{plan.added(CHANGE): change})


def _some(frames: list[pd.DataFrame | None]) -> pd.DataFrame | None:
    present = [f for f in frames if f is not None and len(f)]
    return concat_rows(present) if present else None


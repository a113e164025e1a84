"""Sliding windows before the DT (issue 23): a window store's values as event fields.

Pipeline position: a key's steps in processing order, with the data the user gave
them → **the window store** (:func:`codegen.window_store.window_values`, one pass per
window) → the records the DT reads. A query with sliding windows (``avg_over(2d,
cur)``, :class:`qre.language.ast.WindowSignal`) compiles to a DT that reads the k-th
window's value at each step as the field ``__window<k>``
(:func:`qre.language.event_data.window_field`) and plain ``cur`` as ``__cur``
(:data:`qre.language.event_data.PLAIN_FIELD`); :class:`WindowPlan` makes those records.

Steps: a window's term is evaluated at every step by the table engine over a
one-state-per-window DT (as derived tags are, :mod:`qre.language.derive`: the
semantics of DT terms, vectorised), then each window slides over its key's events:
the events of the last ``size`` of event time (the current one included; ``size``
in δ is ⌈size/δ⌉, as ``within`` reads durations) or the last ``size`` events.
Clock ticks (a declared period) never enter a window but get its value at their
time. Every key starts with empty windows.

Cost: one kernel pass for the terms, then per window and step O(1) for count, sum
and avg and O(log n) for the others (:mod:`codegen.window_store`), whatever the
window's size; the store holds one window's values per key at a time.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from functools import cached_property
from typing import TYPE_CHECKING, Any

import numpy as np

from dt.model import DT, Transition
from dt.terms import Const

from ..language.ast import WindowSignal
from ..language.event_data import PLAIN_FIELD, window_field

if TYPE_CHECKING:
    from .monitor import Monitor, _Events
    from .output import Output
    from .times import TimeScale

__all__ = ["DataReads", "WindowPlan", "check_runnable", "without"]

_EVENT = "event"


@dataclass(frozen=True)
class DataReads:
    """What the user's events must carry (as :class:`dt.DT` says it for its own reads):
    plain ``cur`` or these fields."""

    fields: frozenset[str]
    reads_scalar_cur: bool


@dataclass(frozen=True)
class WindowPlan:
    """A query's sliding windows (the k-th is field k of its DT) and what it reads."""

    windows: tuple[WindowSignal, ...]
    dt_fields: frozenset[str]
    """The fields the DT reads (the windows', ``__cur``, the user's, the timed ones)."""

    @classmethod
    def of(cls, dt: DT, windows: Sequence[WindowSignal]) -> WindowPlan:
        """The plan of ``dt``, compiled from a query with ``windows``."""
        return cls(tuple(windows), frozenset(dt.fields))

    @cached_property
    def reads(self) -> DataReads:
        """The user's data: what the windows' terms and the rest of the query read."""
        own = {window_field(k) for k in range(len(self.windows))} | {PLAIN_FIELD}
        fields = set(self.dt_fields - own)
        plain = PLAIN_FIELD in self.dt_fields
        for w in self.windows:
            if w.arg is not None:
                fields |= w.arg.fields()
                plain = plain or w.arg.reads_plain_cur()
        return DataReads(frozenset(fields), plain)

    @cached_property
    def by_time(self) -> bool:
        """True if a window's size is a duration: the run needs event times."""
        return any(not w.size.events for w in self.windows)

    @cached_property
    def _terms(self) -> Monitor:
        """A monitor whose output k is window k's term at every event (0 for count)."""
        from .monitor import Monitor

        states = tuple(f"w{k}" for k in range(len(self.windows)))
        transitions = tuple(Transition(_EVENT, frozenset(), q, Const(0.0) if w.arg is None
                                       else w.arg)
                            for q, w in zip(states, self.windows, strict=True))
        return Monitor.from_dt(DT((_EVENT,), states, (), states, transitions), optimize=False)

    def events(self, events: _Events, order: np.ndarray | None, offsets: np.ndarray, *,
               enters: np.ndarray | None = None, times: np.ndarray | None = None,
               scale: TimeScale | None = None) -> tuple[_Events, np.ndarray | None]:
        """The records the DT reads, one per row of ``events``, and where the output is
        ⊥ whatever the DT computes (None: nowhere).

        Key g's steps are rows ``order[offsets[g]:offsets[g+1]]`` in processing order
        (``order`` None: rows ``offsets[g]`` to ``offsets[g+1] − 1``); ``enters`` says
        which steps are events (None: all; ticks do not enter); ``times`` are the
        steps' times in δ of ``scale``, needed by a window whose size is a duration.

        A partial window (``avg_last(k, t)`` beyond 100 events) is ⊥ before its k-th
        event, which its DT (a field read) cannot say: the output is ⊥ there. That is
        exact because the typing admits a partial window only under arithmetic,
        functions of signals and comparisons up to the top, which are all lifted — ⊥
        in an operand makes the output ⊥ (:func:`qre.language.typing._partial_windows`).
        """
        from codegen.window_store import window_values

        from .monitor import _Events

        n = _rows(events)
        steps = np.arange(n) if order is None else order
        entering = np.ones(n, dtype=bool) if enters is None else enters[steps]
        stamps = np.zeros(n, dtype=np.int64) if times is None else times[steps]
        terms = self._terms.run(np.zeros(n, dtype=np.int64), events.data(), engine="table")
        values = np.asarray(terms.value, dtype=np.float64).reshape(n, len(self.windows))
        fields = {name: column for name, column in events.fields.items()
                  if name in self.dt_fields}
        if events.scalar is not None and PLAIN_FIELD in self.dt_fields:
            fields[PLAIN_FIELD] = events.scalar
        for k, w in enumerate(self.windows):
            size = w.size.amount
            if not w.size.events:
                if times is None or scale is None:
                    raise ValueError(f"{w.function}_over over a duration needs event times: "
                                     f"run the monitor with run_timed")
                size = max(1, int(scale.ceil(size)))
            out = window_values(offsets, entering, np.ascontiguousarray(values[steps, k]),
                                stamps, size, not w.size.events, w.function,
                                0.5 if w.p is None else w.p)
            fields[window_field(k)] = _in_rows(out, steps, n)
        return _Events(None, fields), self._undefined(offsets, entering, stamps, steps, n)

    def _undefined(self, offsets: np.ndarray, entering: np.ndarray, stamps: np.ndarray,
                   steps: np.ndarray, n: int) -> np.ndarray | None:
        """The rows before a partial window's k-th event (None without partial windows)."""
        from codegen.window_store import window_values

        sizes = {w.size.amount for w in self.windows if w.partial}
        if not sizes:
            return None
        # The events so far, up to the largest k: fewer than k until the k-th.
        k = max(sizes)
        seen = window_values(offsets, entering, np.zeros(n), stamps, k, False, "count")
        return _in_rows(seen < k, steps, n)


def _in_rows(per_step: np.ndarray, steps: np.ndarray, n: int) -> np.ndarray:
    """Values given in processing order (step j is row ``steps[j]``), in row order."""
    out = np.empty(n, dtype=per_step.dtype)
    out[steps] = per_step
    return out


def _rows(events: _Events) -> int:
    """The number of events in ``events``."""
    if events.scalar is not None:
        return len(events.scalar)
    return len(next(iter(events.fields.values()))) if events.fields else 0


def without(out: Output, undefined: np.ndarray | None) -> Output:
    """``out`` with status ⊥ (0) and value NaN at the ``undefined`` rows."""
    if undefined is None or not undefined.any():
        return out
    status, value = out.status.copy(), out.value.copy()
    status[undefined] = 0
    value[undefined] = np.nan
    return replace(out, status=status, value=value)


def check_runnable(m: Any, caller: str) -> None:
    """Refuse a monitor with sliding windows where their contents cannot be kept: a
    session or resumed states (one call's events only) and Spark (not yet: issue 23
    point 4)."""
    if getattr(m, "windows", None) is not None:
        raise ValueError(f"{caller}: this query has sliding windows ({_names(m.windows)}), "
                         f"whose contents are kept within one call only: run it with "
                         f"m.run, m.run_keys or m.run_timed")


def _names(plan: WindowPlan) -> str:
    return ", ".join(sorted({f"{w.function}_over" for w in plan.windows}))

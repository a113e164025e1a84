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

A window aggregate the store computes (``aggregate(median(cur), 1h, 10min)``,
:attr:`qre.language.ast.Aggregate.stored`) is read the same way at the ticks: a tick at
b that closes [b − size, b) (b − size a multiple of the slide; the clock ticks at
gcd(size, slide)) gets the aggregate of the events of the window's tags at most size δ
back — the tick comes before the events at b — and the output is ⊥ at every other step
and at an empty window.

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
from dt.terms import Const, Term

from ..language.ast import Aggregate, WindowFunction, WindowSignal
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
class _Window:
    """One window as the store computes it: ``function`` of ``arg`` over the last
    ``size`` events or nanoseconds; ``partial``: ⊥ before the ``size``-th event; a window
    aggregate's (``slide`` set): the events of ``tags`` only, its value output at the
    ticks that close a window [l·slide, l·slide + size) and ⊥ elsewhere."""

    function: str
    arg: Term | None
    p: float
    size: int
    events: bool
    partial: bool = False
    tags: tuple[str, ...] | None = None
    slide: int | None = None

    @classmethod
    def of(cls, w: WindowSignal | Aggregate) -> _Window:
        if isinstance(w, WindowSignal):
            return cls(w.function, w.arg, 0.5 if w.p is None else w.p, w.size.amount,
                       w.size.events, w.partial)
        f = w.function
        assert isinstance(f, WindowFunction), "a stored window aggregates a builtin"
        return cls(f.name, f.arg, 0.5 if f.p is None else f.p, w.size, False, tags=w.tags,
                   slide=w.slide)


@dataclass(frozen=True)
class WindowPlan:
    """A query's sliding windows and stored window aggregates (the k-th is field k of its
    DT) and what it reads."""

    windows: tuple[WindowSignal | Aggregate, ...]
    dt_fields: frozenset[str]
    """The fields the DT reads (the windows', ``__cur``, the user's, the timed ones)."""

    @classmethod
    def of(cls, dt: DT, windows: Sequence[WindowSignal | Aggregate]) -> WindowPlan:
        """The plan of ``dt``, compiled from a query with ``windows``."""
        return cls(tuple(windows), frozenset(dt.fields))

    @cached_property
    def _stored(self) -> tuple[_Window, ...]:
        return tuple(_Window.of(w) for w in self.windows)

    @cached_property
    def reads(self) -> DataReads:
        """The user's data: what the windows' terms and the rest of the query read."""
        own = {window_field(k) for k in range(len(self.windows))} | {PLAIN_FIELD}
        fields = set(self.dt_fields - own)
        plain = PLAIN_FIELD in self.dt_fields
        for w in self._stored:
            if w.arg is not None:
                fields |= w.arg.fields()
                plain = plain or w.arg.reads_plain_cur()
        return DataReads(frozenset(fields), plain)

    @cached_property
    def by_time(self) -> bool:
        """True if a window's size is a duration: the run needs event times."""
        return any(not w.events for w in self._stored)

    @cached_property
    def _terms(self) -> Monitor:
        """A monitor whose output k is window k's term at every event (0 for count)."""
        from .monitor import Monitor

        states = tuple(f"w{k}" for k in range(len(self.windows)))
        transitions = tuple(Transition(_EVENT, frozenset(), q, Const(0.0) if w.arg is None
                                       else w.arg)
                            for q, w in zip(states, self._stored, strict=True))
        return Monitor.from_dt(DT((_EVENT,), states, (), states, transitions), optimize=False)

    def events(self, events: _Events, order: np.ndarray | None, offsets: np.ndarray, *,
               enters: np.ndarray | None = None, times: np.ndarray | None = None,
               scale: TimeScale | None = None, codes: np.ndarray | None = None,
               alphabet: Sequence[str] = ()) -> tuple[_Events, np.ndarray | None]:
        """The records the DT reads, one per row of ``events``, and where the output is
        ⊥ whatever the DT computes (None: nowhere).

        Key g's steps are rows ``order[offsets[g]:offsets[g+1]]`` in processing order
        (``order`` None: rows ``offsets[g]`` to ``offsets[g+1] − 1``); ``enters`` says
        which steps are events (None: all; the others are ticks, which do not enter);
        ``times`` are the steps' times in δ of ``scale``, needed by a window whose size
        is a duration; ``codes`` the steps' tags in ``alphabet``, needed by a window
        aggregate of some tags.

        A partial window (``avg_last(k, t)`` beyond 100 events) is ⊥ before its k-th
        event, which its DT (a field read) cannot say: the output is ⊥ there. That is
        exact because the typing admits a partial window only under arithmetic,
        functions of signals and comparisons up to the top, which are all lifted — ⊥
        in an operand makes the output ⊥ (:func:`qre.language.typing._partial_windows`).
        A stored window aggregate is a whole query: its output is ⊥ but at the ticks
        that close a non-empty window.
        """
        from .monitor import _Events

        n = int(offsets[-1])  # the steps (events may carry no column: count())
        steps = np.arange(n) if order is None else order
        run = _Run(offsets, np.ones(n, dtype=bool) if enters is None else enters[steps],
                   np.zeros(n, dtype=np.int64) if times is None else times[steps], scale,
                   None if codes is None else codes[steps], tuple(alphabet))
        terms = self._terms.run(np.zeros(n, dtype=np.int64), events.data(), engine="table")
        values = np.asarray(terms.value, dtype=np.float64).reshape(n, len(self.windows))
        fields = {name: column for name, column in events.fields.items()
                  if name in self.dt_fields}
        if events.scalar is not None and PLAIN_FIELD in self.dt_fields:
            fields[PLAIN_FIELD] = events.scalar
        undefined = np.zeros(n, dtype=bool)
        for k, w in enumerate(self._stored):
            if not w.events and (times is None or scale is None):
                raise ValueError(f"{w.function}_over over a duration needs event times: run "
                                 f"the monitor with run_timed")
            out, missing = run.window(w, np.ascontiguousarray(values[steps, k]))
            fields[window_field(k)] = _in_rows(out, steps, n)
            if missing is not None:
                undefined |= missing
        return _Events(None, fields), _in_rows(undefined, steps, n) if undefined.any() \
            else None


@dataclass(frozen=True)
class _Run:
    """The steps of one call in processing order, as the store reads them."""

    offsets: np.ndarray
    enters: np.ndarray
    """Whether each step is an event (not a tick)."""
    times: np.ndarray
    scale: TimeScale | None
    codes: np.ndarray | None
    alphabet: tuple[str, ...]

    def window(self, w: _Window, x: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
        """Window ``w``'s value after every step, and the steps where the output is ⊥
        because of it (None: none)."""
        from codegen.window_store import window_values

        if w.events:
            out = window_values(self.offsets, self.enters, x, self.times, w.size, False,
                                w.function, w.p)
            if not w.partial:
                return out, None
            count = window_values(self.offsets, self.enters, x, self.times, w.size, False,
                                  "count")
            return out, count < w.size  # before the size-th event
        assert self.scale is not None
        if w.slide is None:  # (now − size, now]: less than ⌈size/δ⌉ δ back
            return window_values(self.offsets, self.enters, x, self.times,
                                 max(1, int(self.scale.ceil(w.size))), True, w.function,
                                 w.p), None
        return self.closing(w, x)

    def closing(self, w: _Window, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """A window aggregate: at a tick at b that closes [b − size, b) (b − size a
        multiple of the slide), the window of its events of ``tags`` — those at most
        size δ back, the tick coming before the events at b — and ⊥ elsewhere."""
        from codegen.window_store import window_values

        assert self.scale is not None and w.slide is not None
        size = self.scale.whole(w.size, "the window size")
        slide = self.scale.whole(w.slide, "the window slide")
        enters = self.enters
        if w.tags is not None:
            assert self.codes is not None, "a window of some tags needs the steps' tags"
            picked = [self.alphabet.index(t) for t in w.tags]
            enters = enters & np.isin(self.codes, picked)
        out = window_values(self.offsets, enters, x, self.times, size + 1, True, w.function,
                            w.p)
        count = out if w.function == "count" else window_values(
            self.offsets, enters, x, self.times, size + 1, True, "count")
        closes = ~self.enters & ((self.times - size) % slide == 0) & (count > 0)
        return out, ~closes


def _in_rows(per_step: np.ndarray, steps: np.ndarray, n: int) -> np.ndarray:
    """Values given in processing order (step j is row ``steps[j]``), in row order."""
    out = np.empty(n, dtype=per_step.dtype)
    out[steps] = per_step
    return out


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
    return ", ".join(sorted({f"{w.function}_over" if isinstance(w, WindowSignal)
                             else f"aggregate({w.function_name}, ...)" for w in plan.windows}))

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
time. Every key starts with empty windows (:meth:`WindowPlan.events`), or with the
events carried from its earlier calls (:meth:`WindowPlan.resume`: a session, a stream's
key; :mod:`qre.runtime.window_contents`).

A window aggregate the store computes (``aggregate(median(cur), 1h, 10min)``,
:attr:`qre.language.ast.Aggregate.stored`) is read the same way at the ticks: a tick at
b that closes [b − size, b) (b − size a multiple of the slide; the clock ticks at
gcd(size, slide)) gets the aggregate of the events of the window's tags at most size δ
back — the tick comes before the events at b — and the output is ⊥ at every other step
and at an empty window. A window aggregate of events (``aggregate(median(cur), 100,
10)``) has no clock: the c-th event of its tags (per key, counting from 1, the count
carried with the contents) with c ≡ size (mod slide) gets the aggregate of the last
size of them, and the output is ⊥ at every other step.

Cost: one kernel pass for the terms, then per window and step O(1) for count, sum
and avg and O(log n) for the others (:mod:`codegen.window_store`), whatever the
window's size; the store holds one window's values per key at a time. A window
function given in Python (:class:`qre.language.ast.UserFunction`) costs one call on the
window's values per output: every step for a sliding window, every closing tick for a
window aggregate.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from functools import cached_property
from typing import TYPE_CHECKING, Any

import numpy as np

from dt.model import DT, Transition
from dt.terms import Const, Term

from ..language.ast import Aggregate, UserFunction, WindowFunction, WindowSignal
from ..language.event_data import PLAIN_FIELD, window_field
from .window_contents import WindowContents

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
    user: UserFunction | None = None
    """A function given in Python (``function`` is its name)."""

    @classmethod
    def of(cls, w: WindowSignal | Aggregate) -> _Window:
        if isinstance(w, WindowSignal):
            return cls(w.function, w.arg, 0.5 if w.p is None else w.p, w.size.amount,
                       w.size.events, w.partial, user=w.user)
        f = w.function
        assert isinstance(f, WindowFunction), "a stored window aggregates a window function"
        return cls(f.name, f.arg, 0.5 if f.p is None else f.p, w.size, w.events, tags=w.tags,
                   slide=w.slide, user=f.user)


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
        n = int(offsets[-1])  # the steps (events may carry no column: count())
        steps = np.arange(n) if order is None else order
        run = _Run(offsets, np.ones(n, dtype=bool) if enters is None else enters[steps],
                   np.zeros(n, dtype=np.int64) if times is None else times[steps], scale,
                   None if codes is None else codes[steps], tuple(alphabet))
        terms = self._term_values(events, n)[steps]
        values, undefined = self._values(run, terms)
        return self._fields(events, values, steps), \
            _in_rows(undefined, steps, n) if undefined.any() else None

    def resume(self, events: _Events, offsets: np.ndarray, carried: Sequence[WindowContents],
               codes: np.ndarray, *, enters: np.ndarray | None = None,
               times: np.ndarray | None = None, scale: TimeScale | None = None,
               alphabet: Sequence[str] = ()
               ) -> tuple[_Events, np.ndarray | None, list[WindowContents]]:
        """:meth:`events` of steps that continue earlier ones: key g's steps, rows
        ``offsets[g]`` to ``offsets[g+1] − 1`` in processing order, come after the events
        ``carried[g]`` (:mod:`qre.runtime.window_contents`); also each key's contents
        after its steps. ``codes`` (the steps' tags) are needed: the contents keep them."""
        n = int(offsets[-1])
        step_enters = np.ones(n, dtype=bool) if enters is None else enters
        step_times = np.zeros(n, dtype=np.int64) if times is None else times
        terms = self._term_values(events, n)
        ext = _extended(offsets, carried, step_enters, step_times, codes, terms)
        run = _Run(ext.offsets, ext.enters, ext.times, scale, ext.codes, tuple(alphabet))
        extents = [run.extent(w) for w in self._stored]
        entered = np.array([c.counts for c in carried], dtype=np.int64).reshape(
            len(carried), len(self.windows))  # each window's events in all, so far
        seen = entered.copy()  # … before the carried ones
        for k, (enters_k, _, _) in enumerate(extents):
            seen[:, k] -= _per_key(ext.offsets, enters_k & ext.old)
            entered[:, k] = seen[:, k] + _per_key(ext.offsets, enters_k)  # … after these
        run = replace(run, seen=seen)
        values, undefined = self._values(run, ext.terms)
        steps = np.arange(n)
        return (self._fields(events, values[ext.at], steps),
                undefined[ext.at] if undefined[ext.at].any() else None,
                _contents(run, ext, extents, entered))

    def _term_values(self, events: _Events, n: int) -> np.ndarray:
        """Each window's term at each row, float64[n, W] (0 for a count)."""
        if all(w.arg is None for w in self._stored):  # counts only: no term to evaluate
            return np.zeros((n, len(self.windows)))
        terms = self._terms.run(np.zeros(n, dtype=np.int64), events.data(), engine="table")
        return np.asarray(terms.value, dtype=np.float64).reshape(n, len(self.windows))

    def _values(self, run: _Run, terms: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Each window's value after each of ``run``'s steps (float64[n, W]), and where the
        output is ⊥ because of one."""
        for w in self._stored:
            if not w.events and run.scale is None:
                raise ValueError(f"{w.function}_over over a duration needs event times: run "
                                 f"the monitor with run_timed (or feed a session times=)")
        n = len(run.enters)
        values = np.empty((n, len(self.windows)))
        undefined = np.zeros(n, dtype=bool)
        for k, w in enumerate(self._stored):
            values[:, k], missing = run.window(w, np.ascontiguousarray(terms[:, k]), k)
            if missing is not None:
                undefined |= missing
        return values, undefined

    def _fields(self, events: _Events, values: np.ndarray, steps: np.ndarray) -> _Events:
        """The DT's records: the user's fields it reads, plain cur as ``__cur`` and window
        k's values (given in processing order, step j being row ``steps[j]``)."""
        from .monitor import _Events

        n = len(steps)
        fields = {name: column for name, column in events.fields.items()
                  if name in self.dt_fields}
        if events.scalar is not None and PLAIN_FIELD in self.dt_fields:
            fields[PLAIN_FIELD] = events.scalar
        for k in range(len(self.windows)):
            fields[window_field(k)] = _in_rows(values[:, k], steps, n)
        return _Events(None, fields)


def _contents(run: _Run, ext: _Extended, extents: list[tuple[np.ndarray, int, bool]],
              entered: np.ndarray) -> list[WindowContents]:
    """Each key's events from the earliest one a window of its last step holds
    (``extents``: the windows as :meth:`_Run.extent` gives them; ``entered``: each
    window's events in all, per key)."""
    from codegen.window_store import window_bounds  # Numba: only when a window runs

    keys = len(ext.offsets) - 1
    start = ext.offsets[1:].copy()  # the earliest step kept, per key
    last = ext.offsets[1:] - 1
    has = np.diff(ext.offsets) > 0
    for enters, size, by_time in extents:
        first, _ = window_bounds(ext.offsets, enters, run.times, size, by_time)
        entry_steps = np.flatnonzero(enters)
        held = first[last[has]]
        steps = np.append(entry_steps, len(enters))[held]
        start[has] = np.minimum(start[has], steps)
    out = []
    for g in range(keys):
        keep = np.arange(start[g], ext.offsets[g + 1])
        keep = keep[ext.enters[keep]]
        out.append(WindowContents(ext.times[keep], ext.codes[keep].astype(np.int32),
                                  ext.terms[keep], entered[g]))
    return out


@dataclass(frozen=True)
class _Extended:
    """A resumed call's steps with each key's carried events before its new steps."""

    offsets: np.ndarray
    enters: np.ndarray
    times: np.ndarray
    codes: np.ndarray
    terms: np.ndarray
    at: np.ndarray
    """int64[n]: where each new step is."""
    old: np.ndarray
    """bool[N]: the carried events."""


def _extended(offsets: np.ndarray, carried: Sequence[WindowContents], enters: np.ndarray,
              times: np.ndarray, codes: np.ndarray, terms: np.ndarray) -> _Extended:
    """Key g's carried events (all entering) followed by its steps, for every key."""
    lengths = np.array([len(c) for c in carried], dtype=np.int64)
    steps = np.diff(offsets)
    ext_offsets = np.concatenate([[0], np.cumsum(lengths + steps)])
    at = np.arange(int(offsets[-1])) + np.repeat(np.cumsum(lengths), steps)
    old = np.ones(int(ext_offsets[-1]), dtype=bool)
    old[at] = False

    def merged(new: np.ndarray, kept: list[np.ndarray]) -> np.ndarray:
        out = np.empty((len(old), *new.shape[1:]), dtype=new.dtype)
        out[at] = new
        if kept:
            out[old] = np.concatenate(kept).astype(new.dtype, copy=False)
        return out

    return _Extended(ext_offsets, merged(enters, [np.ones(len(c), dtype=bool) for c in carried]),
                     merged(times, [c.times for c in carried]),
                     merged(np.asarray(codes, dtype=np.int64), [c.codes for c in carried]),
                     merged(terms, [c.terms for c in carried]), at, old)


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
    seen: np.ndarray | None = None
    """int64[K, W]: each window's events before each key's first step (None: none)."""

    def extent(self, w: _Window) -> tuple[np.ndarray, int, bool]:
        """Window ``w`` as the store slides it: the steps that enter it, and its size in
        entries or (``by_time``) in δ — (now − size, now]."""
        enters = self.enters
        if w.tags is not None:
            assert self.codes is not None, "a window of some tags needs the steps' tags"
            picked = [self.alphabet.index(t) for t in w.tags]
            enters = enters & np.isin(self.codes, picked)
        if w.events:
            return enters, w.size, False
        assert self.scale is not None
        if w.slide is None:  # (now − size, now]: less than ⌈size/δ⌉ δ back
            return enters, max(1, int(self.scale.ceil(w.size))), True
        # The tick at b reads the events at most size δ back: (b − size − 1, b].
        return enters, self.scale.whole(w.size, "the window size") + 1, True

    def window(self, w: _Window, x: np.ndarray, k: int
               ) -> tuple[np.ndarray, np.ndarray | None]:
        """Window ``w`` (the k-th)'s value after every step, and the steps where the output
        is ⊥ because of it (None: none)."""
        from codegen.window_store import window_values

        enters, size, by_time = self.extent(w)
        if w.slide is not None:
            closing = self._counted(w, enters, k) if w.events else \
                self._closing(w, enters, x, size)
            return self._values(w, enters, x, size, by_time, closing), ~closing
        out = self._values(w, enters, x, size, by_time, None)
        if not w.partial:
            return out, None
        count = window_values(self.offsets, enters, x, self.times, size, by_time, "count")
        return out, count < w.size  # before the size-th event

    def _values(self, w: _Window, enters: np.ndarray, x: np.ndarray, size: int,
                by_time: bool, where: np.ndarray | None) -> np.ndarray:
        """The aggregate over each step's window (a function given in Python: at the steps
        ``where`` holds only, NaN elsewhere)."""
        from codegen.window_store import window_values

        if w.user is None:
            return window_values(self.offsets, enters, x, self.times, size, by_time,
                                 w.function, w.p)
        return _user_values(self.offsets, enters, x, self.times, size, by_time, w.user,
                            where)

    def _closing(self, w: _Window, enters: np.ndarray, x: np.ndarray, size: int
                 ) -> np.ndarray:
        """A window aggregate's output steps: the ticks at b that close [b − size, b)
        (b − size a multiple of the slide) holding an event of its tags."""
        from codegen.window_store import window_values

        assert self.scale is not None and w.slide is not None
        slide = self.scale.whole(w.slide, "the window slide")
        count = window_values(self.offsets, enters, x, self.times, size, True, "count")
        return ~self.enters & ((self.times - (size - 1)) % slide == 0) & (count > 0)

    def _counted(self, w: _Window, enters: np.ndarray, k: int) -> np.ndarray:
        """A window aggregate of events: the events numbered c (from 1, of its tags, per
        key) with c ≡ size (mod slide), which close [c − size, c)."""
        assert w.slide is not None
        entered = np.cumsum(enters)
        before = np.concatenate([[0], entered])[self.offsets[:-1]]  # at each key's start
        number = entered - np.repeat(before, np.diff(self.offsets))
        if self.seen is not None:
            number = number + np.repeat(self.seen[:, k], np.diff(self.offsets))
        return enters & ((number - w.size) % w.slide == 0)


def _per_key(offsets: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """int64[K]: the steps of each key where ``mask`` holds."""
    counts = np.concatenate([[0], np.cumsum(mask, dtype=np.int64)])
    return counts[offsets[1:]] - counts[offsets[:-1]]


def _user_values(offsets: np.ndarray, enters: np.ndarray, x: np.ndarray, times: np.ndarray,
                 size: int, by_time: bool, user: UserFunction,
                 where: np.ndarray | None) -> np.ndarray:
    """``user`` of each step's window (a read-only array of its values in the events'
    order; NaN for an empty one): one Python call per step, at the steps ``where`` holds
    (None: all)."""
    from codegen.window_store import window_bounds

    first, end = window_bounds(offsets, enters, times, size, by_time)
    values = np.ascontiguousarray(x[enters])
    values.flags.writeable = False  # a function that sorts in place must copy
    out = np.full(len(first), np.nan)
    steps = np.arange(len(first)) if where is None else np.flatnonzero(where)
    for i in steps[end[steps] > first[steps]].tolist():
        out[i] = user(values[first[i]:end[i]])
    return out


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
    """Refuse a monitor with sliding windows where their contents would have to be kept
    from one call to the next and are not yet: resumed states of many keys at once, a
    Spark batch run that feeds a key in pieces. (A session carries them,
    :attr:`qre.runtime.monitor.Session.windows`, and so does a stream's key state.)"""
    if getattr(m, "windows", None) is not None:
        raise ValueError(f"{caller}: this query has sliding windows ({_names(m.windows)}), "
                         f"whose contents this call cannot carry: run it with m.run, "
                         f"m.run_keys, m.run_timed or m.session(), or on Spark with "
                         f"monitor_timed, monitor_stream or monitor_frame(method='local')")


def _names(plan: WindowPlan) -> str:
    return ", ".join(sorted({f"{w.function}_over" if isinstance(w, WindowSignal)
                             else f"aggregate({w.function_name}, ...)" for w in plan.windows}))

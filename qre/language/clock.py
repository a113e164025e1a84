"""Clock ticks: the stage between timed events and the DT (issue 7, point 1).

Pipeline position: timed, keyed events → **steps** (events and ticks) → the
DT's kernel. A query that declares a period P (a window aggregate declares
its slide) sees, per key, a ``tick`` event at every multiple of P that the
key's event time crosses: for consecutive events of a key at times
t_prev < t, one tick at each boundary b = m·P with t_prev < b ≤ t, placed
before the event (an event exactly on a boundary belongs to the window that
opens there: windows are closed on the left). A key gets no tick before its
first event. After a key's last event, the boundaries up to the watermark
tick too (all of them when the stream is complete).

A **session clock** (``aggregate(f, session(G))``, issue 21 §3) restarts at
each event instead: it ticks once at t + G after a key's event at t that no
event of the key follows within G (the next one at t' ≥ t + G, or none up to
the watermark), placed before the event at t + G if there is one (a session
is closed on the right: an event exactly G after the last starts the next
session). Both clocks are one rule: the ticks after an event count from its
**base** — the latest boundary at or before it for a periodic clock, the
event's own time for a session clock — at base + P, base + 2P, ... (P the
period, the gap for a session clock), up to the key's next event or the
watermark; a session clock has a horizon of one tick.

A long idle gap would cost one tick per boundary. A :class:`Clock` with a
``horizon`` h says that after h consecutive ticks, further ticks output ⊥ and
change nothing that a later step reads (a window aggregate with k slots:
h = k, see :mod:`dt.windows`); then only the first h ticks of a gap are made,
which gives the same outputs. Without a horizon every tick is made, up to
:data:`MAX_IDLE_TICKS` in one gap: a longer gap is a :class:`TooManyTicks`
error naming it, before anything is allocated (each tick may change the
state and emit a row, so none can be skipped; 10^11 s idle under ``period
1s`` would need terabytes). The ticks must also stay within int64.

Durations are integers of a time unit (:data:`UNIT_NS` names them); a query
keeps its durations in nanoseconds, and a run expresses them in δ, its
resolution (:mod:`qre.runtime.times`: the time unit of integer times, a microsecond
for floats and datetimes). δ is also the granularity of output stamps: a tick
at b stamps its output b − δ, the last instant of the window it closes (seed
004, §2.1).

Cost: O(events + ticks) numpy work per call, no Python loop per event.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["MAX_IDLE_TICKS", "UNIT_NS", "Clock", "Steps", "TicksOverflow", "TooManyTicks",
           "check_ticks", "clock_steps", "duration_ns", "format_duration", "session_starts",
           "tick_base"]

MAX_IDLE_TICKS = 10_000_000
"""The most ticks a clock without a horizon makes in one idle gap of a key (between
two of its events, or after its last one up to the watermark): about 0.5 GB of steps
and outputs. A window aggregate's clock has a horizon and never comes near it."""

UNIT_NS = {"ns": 1, "us": 1_000, "ms": 1_000_000, "s": 1_000_000_000,
           "min": 60_000_000_000, "h": 3_600_000_000_000, "d": 86_400_000_000_000}
"""Nanoseconds per time unit, by the unit's name (also the duration suffixes of the
query text)."""


@dataclass(frozen=True)
class Clock:
    """A tick every ``period_ns`` nanoseconds; ``horizon`` ticks silence an idle DT
    (None: no such bound, every tick is made)."""

    period_ns: int
    horizon: int | None = None
    window_ns: int | None = None
    """The window size when this is a window aggregate's clock (a tick at b closes the
    window [b − window_ns, b): its row carries that start), else None."""
    session: bool = False
    """A session window's clock (module docstring): ``period_ns`` is the gap, the clock
    ticks once, a gap after an event that no other follows within it, and the tick's
    row carries the session's start, its first event's time."""

    def __post_init__(self) -> None:
        if self.period_ns <= 0:
            raise ValueError(f"a clock period is positive, not {self.period_ns} ns")
        if self.session and (self.horizon != 1 or self.window_ns is not None):
            raise ValueError("a session clock ticks once after an event (horizon 1) and has "
                             "no window size")
        if self.horizon is not None and self.horizon < 1:
            raise ValueError(f"a clock horizon is at least one tick, not {self.horizon}")
        if self.window_ns is not None and (self.window_ns <= 0 or self.window_ns % self.period_ns):
            raise ValueError(f"a window is a positive multiple of the clock period, not "
                             f"{self.window_ns} ns")

    @property
    def windowed(self) -> bool:
        """True if a tick closes a window (a window aggregate's clock, sessions included):
        its rows carry the window's start."""
        return self.window_ns is not None or self.session

    def in_units(self, unit: str) -> int:
        """The period as a whole number of ``unit``; a ValueError if it is not one."""
        period, rest = divmod(self.period_ns, UNIT_NS[unit])
        if rest or period == 0:
            raise ValueError(f"the clock period ({format_duration(self.period_ns)}) is not a "
                             f"whole number of the time unit {unit!r}; pass a finer time_unit")
        return period


def duration_ns(number: str, unit: str) -> int:
    """``number`` of ``unit`` (a name of :data:`UNIT_NS`) in whole nanoseconds; a
    ValueError naming the problem otherwise.

    >>> duration_ns("1.5", "s"), duration_ns("0", "min")
    (1500000000, 0)
    """
    if unit not in UNIT_NS:
        raise ValueError(f"unknown time unit {unit!r}; units: {', '.join(UNIT_NS)}")
    ns = float(number) * UNIT_NS[unit]
    if not float(ns).is_integer():
        raise ValueError("a duration is a whole number of nanoseconds")
    return int(ns)


def format_duration(ns: int) -> str:
    """``ns`` in the largest unit that divides it: 90_000_000_000 → ``'90s'`` (0 → ``'0s'``)."""
    if ns == 0:
        return "0s"
    for name, size in sorted(UNIT_NS.items(), key=lambda item: -item[1]):
        if ns % size == 0:
            return f"{ns // size}{name}"
    raise AssertionError("every integer is a whole number of nanoseconds")


@dataclass(frozen=True)
class Steps:
    """What the DT reads, grouped by key: ``event[s]`` is the row (into the arrays given
    to :func:`clock_steps`) of step s, or −1 for a tick; ``time[s]`` its time (a tick's
    boundary); ``key[s]`` its key id."""

    event: np.ndarray
    time: np.ndarray
    key: np.ndarray


class TooManyTicks(ValueError):
    """An idle gap needing more than :data:`MAX_IDLE_TICKS` ticks: key id ``key``, from
    time ``start`` to ``end`` (in the unit of the period), ``ticks`` ticks."""

    def __init__(self, key: int, start: int, end: int, ticks: int) -> None:
        self.key, self.start, self.end, self.ticks = key, start, end, ticks
        super().__init__(self.described(f"key id {key}", str(start), str(end)))

    def described(self, key: str, start: str, end: str) -> str:
        """The error in the caller's words: ``key`` names the key ("" if unkeyed),
        ``start`` and ``end`` are the gap's ends as the caller's times."""
        of = f" of {key}" if key else ""
        return (f"the clock would tick {self.ticks:,} times in the idle gap{of} from {start} "
                f"to {end}: more than {MAX_IDLE_TICKS:,}, the most a clock without a horizon "
                f"makes in one gap (each tick may change the state, so none is skipped). "
                f"A window aggregate bounds idle ticks by its horizon; or give a longer "
                f"period, or a watermark nearer the events")


class TicksOverflow(ValueError):
    """Ticks past the largest int64: after the time at position ``index`` of the sorted
    arrays (``time``, in the unit of ``period``), whose last tick would be at ``tick``."""

    def __init__(self, index: int, time: int, period: int, tick: int) -> None:
        self.index, self.time, self.period, self.tick = index, time, period, tick
        super().__init__(f"the clock's ticks after time {time} (period {period}) pass the "
                         f"largest time int64 holds")


def tick_base(time: np.ndarray, period: int, session: bool) -> np.ndarray:
    """Where the ticks after each event count from (module docstring): the latest
    boundary at or before it, or with ``session`` the event's time itself.

    >>> tick_base(np.array([3, 25]), 10, False).tolist()
    [0, 20]
    >>> tick_base(np.array([3, 25]), 10, True).tolist()
    [3, 25]
    """
    return time.copy() if session else np.floor_divide(time, period) * period


def clock_steps(key: np.ndarray, time: np.ndarray, period: int, horizon: int | None,
                until: int | None = None, session: bool = False) -> Steps:
    """Events interleaved with ticks (see the module docstring).

    ``key`` (int64 ids) and ``time`` (int64, in the unit of ``period``) are sorted
    by key, then time. ``until`` is the watermark: after its last event a key
    ticks at the boundaries ≤ ``until``; None means the stream is complete (every
    boundary up to the horizon; none without a horizon). ``session``: a session
    clock (its horizon is 1).

    >>> s = clock_steps(np.array([0, 0]), np.array([3, 25]), 10, None)
    >>> s.event.tolist(), s.time.tolist()
    ([0, -1, -1, 1], [3, 10, 20, 25])
    >>> s = clock_steps(np.array([0, 0, 0]), np.array([3, 9, 25]), 10, 1, session=True)
    >>> s.event.tolist(), s.time.tolist()
    ([0, 1, -1, 2, -1], [3, 9, 19, 25, 35])
    """
    n = len(time)
    base = tick_base(time, period, session)
    first = np.ones(n, dtype=bool)
    first[1:] = key[1:] != key[:-1]
    last = np.ones(n, dtype=bool)
    last[:-1] = first[1:]
    before = np.zeros(n, dtype=np.int64)
    before[1:] = (time[1:] - base[:-1]) // period
    before[first] = 0
    if until is not None:
        after = np.where(last, np.maximum((until - base) // period, 0), 0)
    elif horizon is not None:
        after = np.where(last, horizon, 0)
    else:
        after = np.zeros(n, dtype=np.int64)
    if horizon is not None:
        before = np.minimum(before, horizon)
        after = np.minimum(after, horizon)
    check_ticks(key, time, base, before, after, period)
    width = before + 1 + after
    start = np.cumsum(width) - width
    total = int(width.sum()) if n else 0
    event = np.full(total, -1, dtype=np.int64)
    at = start + before
    event[at] = np.arange(n)
    times = np.empty(total, dtype=np.int64)
    times[at] = time
    # Ticks before event i: base[i-1] + (1 + j)·P; after it: base[i] + (1 + j)·P.
    previous = np.empty(n, dtype=np.int64)
    previous[1:] = base[:-1]
    previous[:1] = 0
    for count, origin, since in ((before, start, previous), (after, at + 1, base)):
        j = _ranks(count)
        times[np.repeat(origin, count) + j] = np.repeat(since, count) + (1 + j) * period
    keys = np.repeat(key, width)
    return Steps(event, times, keys)


def session_starts(tick: np.ndarray, time: np.ndarray, fresh: np.ndarray,
                   carried: int = 0) -> np.ndarray:
    """The start of each step's session under a session clock: the time of the latest
    event at or before the step that opens a session — an event where ``fresh`` holds (a
    key's first step, no session open) or right after a tick. Steps before any such
    event continue a session that opened at ``carried``.

    >>> session_starts(np.array([False, False, True, False]), np.array([3, 9, 19, 25]),
    ...                np.array([True, False, False, False])).tolist()
    [3, 3, 3, 25]
    """
    n = len(time)
    after_tick = np.zeros(n, dtype=bool)
    after_tick[1:] = tick[:-1]
    opens = ~tick & (fresh | after_tick)
    latest = np.maximum.accumulate(np.where(opens, np.arange(n), -1)) if n else opens
    return np.where(latest >= 0, time[np.maximum(latest, 0)], carried)


def check_ticks(key: np.ndarray, time: np.ndarray, base: np.ndarray, before: np.ndarray,
                after: np.ndarray, period: int) -> None:
    """Refuse a gap of more than MAX_IDLE_TICKS ticks (:class:`TooManyTicks`) and ticks
    beyond int64 (:class:`TicksOverflow`), before any array of ticks is made; ``base``
    is :func:`tick_base` of the times."""
    if not len(time):
        return
    for count, is_after in ((before, False), (after, True)):
        i = int(np.argmax(count))
        if int(count[i]) > MAX_IDLE_TICKS:
            start = int(time[i]) if is_after else int(time[i - 1])
            end = int(base[i]) + int(count[i]) * period if is_after else int(time[i])
            raise TooManyTicks(int(key[i]), start, end, int(count[i]))
    # The events whose last tick may pass int64 (a superset: negative bases count as 0),
    # then each exactly, in Python ints.
    risky = np.flatnonzero(after > (np.iinfo(np.int64).max - np.maximum(base, 0)) // period)
    for i in risky.tolist():
        last = int(base[i]) + int(after[i]) * period
        if last >= 2**63:
            raise TicksOverflow(i, int(time[i]), period, last)


def _ranks(count: np.ndarray) -> np.ndarray:
    """0..c−1 for each c in ``count``, concatenated: [2, 0, 3] → [0, 1, 0, 1, 2]."""
    total = int(count.sum())
    return np.arange(total, dtype=np.int64) - np.repeat(np.cumsum(count) - count, count)

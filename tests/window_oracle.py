"""Brute-force oracles for timed runs: every window recomputed from its events, ticks by
enumeration. Independent of qre.language.clock, dt.windows and qre.runtime.timed on purpose: plain
Python loops over the definitions of seed 004 §2.1 (issue 7, point 5).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from fractions import Fraction

Event = tuple[int, str, float, int]
"""(time, tag, value, input row)."""


def _fold_sum(xs: Sequence[float]) -> float:
    acc = 0.0
    for x in xs:
        acc = acc + x
    return acc


def _fold_min(xs: Sequence[float], sign: float) -> float:
    acc = sign * math.inf
    for x in xs:
        acc = math.nan if math.isnan(acc) or math.isnan(x) else (
            min(acc, x) if sign > 0 else max(acc, x))
    return acc


def _var(xs: Sequence[float]) -> float:
    """The population variance as qre.language.sugar defines it: Welford's update on x − xs[0]."""
    k = xs[0]
    m = q = 0.0
    for n, x in enumerate(xs):
        e = (x - k) - m
        m, q = m + e / (n + 1), q + e * e * n / (n + 1)
    return q / len(xs)


FUNCTIONS: dict[str, Callable[[Sequence[float]], float]] = {
    "count": lambda xs: float(len(xs)),
    "sum": _fold_sum,
    "min": lambda xs: _fold_min(xs, 1.0),
    "max": lambda xs: _fold_min(xs, -1.0),
    "avg": lambda xs: _fold_sum(xs) / len(xs),
    "var": _var,
    "std": lambda xs: math.sqrt(_var(xs)),  # var ≥ 0 or NaN: math.sqrt(nan) is nan
    "first": lambda xs: xs[0],
    "last": lambda xs: xs[-1],
}
"""Window functions on a non-empty list of values, as their definitions say."""


def nearest(x: float, per: int) -> int:
    """The integer nearest to the float product ``x * per``, ties to even: a float time in
    whole steps of 1/per (Python's float product is IEEE's; its round is half to even)."""
    return round(x * per)


def as_float(count: int, per: int) -> float:
    """``count / per`` correctly rounded: a time in steps of 1/per as a float."""
    return float(Fraction(count, per))


def ordered(events: Sequence[Event], alphabet: Sequence[str]) -> list[Event]:
    """Event-time order; ties by tag text, then value (NaN last), then input row (the
    alphabet only says which tags exist)."""
    return sorted(events, key=lambda e: (e[0], e[1],
                                         (1, 0.0) if math.isnan(e[2]) else (0, e[2]), e[3]))


def windows(events: Sequence[Event], size: int, slide: int, fn: Callable,
            tags: Sequence[str], alphabet: Sequence[str]) -> list[tuple[int, float]]:
    """(stamp, value) of every non-empty instance [l·slide, l·slide + size) of one key,
    in stamp order; stamp = l·slide + size − 1 (any slide up to the size)."""
    picked = [e for e in ordered(events, alphabet) if e[1] in tags]
    if not picked:
        return []
    first = (min(e[0] for e in picked) - size) // slide + 1  # the first l that holds one
    last = max(e[0] for e in picked) // slide
    out = []
    for l in range(first, last + 1):  # noqa: E741 - l as in the paper
        lo = l * slide
        inside = [e[2] for e in picked if lo <= e[0] < lo + size]
        if inside:
            out.append((lo + size - 1, fn(inside)))
    return out


def ticks(times: Sequence[int], period: int, horizon: int | None,
          until: int | None) -> list[tuple[str, int]]:
    """One key's steps, by enumeration: ('e', t) for events, ('t', b) for ticks."""
    out: list[tuple[str, int]] = []
    prev = None
    for t in times:
        if prev is not None:
            made = 0
            for b in range(prev + 1, t + 1):
                if b % period == 0 and (horizon is None or made < horizon):
                    out.append(("t", b))
                    made += 1
        out.append(("e", t))
        prev = t
    if prev is not None:
        end = until if until is not None else (
            prev + period * horizon if horizon is not None else prev)
        made = 0
        for b in range(prev + 1, end + 1):
            if b % period == 0 and (horizon is None or made < horizon):
                out.append(("t", b))
                made += 1
    return out


def sessions(events: Sequence[Event], gap: int, fn: Callable, tags: Sequence[str],
             alphabet: Sequence[str], until: int | None = None
             ) -> list[tuple[int, float, int]]:
    """(stamp, value, start) of every session of one key that holds an event of ``tags``
    and has closed — a later event shows it, or ``until`` is at least its end (None:
    the events are all there is): a session is a maximal run of its events (every tag)
    each less than ``gap`` after the one before; it starts at its first event, closes
    at its last + gap and is stamped a unit before that."""
    runs: list[list[Event]] = []
    for e in ordered(events, alphabet):
        if runs and e[0] - runs[-1][-1][0] < gap:
            runs[-1].append(e)
        else:
            runs.append([e])
    out = []
    for i, run in enumerate(runs):
        end = run[-1][0] + gap
        picked = [e[2] for e in run if e[1] in tags]
        if picked and (until is None or end <= until or i + 1 < len(runs)):
            out.append((end - 1, fn(picked), run[0][0]))
    return out


def session_ticks(times: Sequence[int], gap: int, until: int | None) -> list[tuple[str, int]]:
    """One key's steps under a session clock, by enumeration: ('e', t) for events,
    ('t', b) for the tick a gap after an event that no event follows within the gap."""
    out: list[tuple[str, int]] = []
    for i, t in enumerate(times):
        out.append(("e", t))
        nxt = times[i + 1] if i + 1 < len(times) else None
        if nxt is not None and nxt >= t + gap:
            out.append(("t", t + gap))
        if nxt is None and (until is None or t + gap <= until):
            out.append(("t", t + gap))
    return out

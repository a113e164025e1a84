"""Metric-bounded past operators as data transducers (issue 21 §2; past MTL, point-based).

Meaning. Over a word of events e_1 … e_n with times t_1 ≤ … ≤ t_n (in whole units
of the run: δ for time bounds, the event's index for event-count bounds), after the
event e_n and for a body output φ, ψ that is 0 or 1 after every prefix:

* ``once_I ψ``   — some k ≤ n with t_n − t_k ∈ I and ψ after e_k;
* ``hist_I φ``   — every k ≤ n with t_n − t_k ∈ I has φ after e_k (``¬once_I ¬φ``);
* ``φ since_I ψ`` — some k ≤ n with t_n − t_k ∈ I, ψ after e_k and φ after every
  e_j, k < j ≤ n;
* ``prev_I φ``   — n ≥ 2, φ after e_{n−1} and t_n − t_{n−1} ∈ I.

I = [A, B) in whole units: a bound [a, b] of durations is A = ⌈a/δ⌉, B = ⌈(b + 1 ns)/δ⌉
(for whole δ, ``t_n − t_k ≥ a`` and ``≤ b`` exactly then), of event counts A = a,
B = b + 1; B = ∞ for an open end. Only events count: the empty prefix has no time,
so on it ``once``, ``since`` and ``prev`` are 0 and ``hist`` 1.

Construction (``once`` and ``since``; ``hist`` negates around ``once``). A time t_k
where ψ held keeps the output true exactly at the times [t_k + A, t_k + B); the DT
keeps the union of those intervals that may still contain a coming time, as at most
K disjoint intervals [x_i, y_i) in a ring of slots. At an event at time t:

* ``since`` only: if φ is 0, every interval dies (y_i := −∞): no earlier k counts;
* if ψ is 1, the interval [t + A, t + B) joins: it extends the latest one when it
  starts at or before that one's end (then it ends later, since t grew), else it
  takes the next slot of the ring;
* the output is 1 iff some interval holds t (x_i ≤ t < y_i).

Why K slots suffice (:func:`slots`). After an event at t the live intervals
(y > t) are disjoint and do not touch, each at least L = B − A long, and each
starts at or before t + A. The second one starts at or after t + 2, the j-th at or
after t + 2 + (j − 2)(L + 1), so there are at most 2 + ⌊(A − 2)/(L + 1)⌋ (one if
A < 2). The ring's next slot holds the interval that joined K insertions ago, which
is therefore dead when it is reused. For A = 0 or B = ∞, K = 1: the state is two
registers whatever the event rate (one for A = 0: an interval then starts at or
before now, so only its end is kept). A time bound's K is computed for δ = 1 ns (the
unit of the query's durations), the finest resolution and the most slots (a
coarser δ rounds the interval to fewer whole units; tests/test_metric.py checks
this for every small bound).

Cost per event: O(K) term nodes; ``prev`` keeps two registers. The DT is top level
(its facts prove nothing but output synchronization): it reads its body's outputs
after the same event (primed) and its time from ``cur`` (or counts the events).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from .builder import Builder
from .errors import PreconditionError
from .model import DT, EPS, Facts
from .terms import Apply, Const, Term, Var

__all__ = ["MAX_METRIC_SLOTS", "MetricBound", "metric_past", "metric_prev", "slots"]

MAX_METRIC_SLOTS = 100
"""The most interval slots a bounded operator may keep per key (:func:`slots`): each
costs two registers and about 50 term nodes per event."""

_NEG_INF = Const(-math.inf)
_POS_INF = Const(math.inf)


def slots(lo: int, hi: int | None) -> int:
    """K, the intervals a bound [lo, hi] keeps alive at most (module docstring): lo and
    hi whole units (events, or nanoseconds for time, the finest δ); hi None for ∞.

    >>> slots(0, 600), slots(5, None), slots(3, 4), slots(10, 10)
    (1, 1, 2, 6)
    """
    if hi is not None and hi < lo:
        raise PreconditionError(f"a bound [{lo}, {hi}] is empty: its end is before its start")
    if hi is None or lo < 2:
        return 1
    length = hi + 1 - lo
    return 2 + (lo - 2) // (length + 1)


@dataclass(frozen=True)
class MetricBound:
    """An interval I = [lo, hi) of distances as terms over ``cur``, in the run's units.

    ``time`` reads the event's time (``cur.FIELD``); None counts the events (the DT
    keeps the count). ``lo`` and ``hi`` are constants or ``cur`` fields (a duration in
    the run's δ, which only the run knows); ``hi`` is ``Const(inf)`` for an open end.
    ``slots``: K of :func:`slots`.
    """

    time: Term | None
    lo: Term
    hi: Term
    slots: int

    def __post_init__(self) -> None:
        if not 1 <= self.slots <= MAX_METRIC_SLOTS:
            raise PreconditionError(f"a bounded operator keeps 1 to {MAX_METRIC_SLOTS} "
                                    f"intervals, not {self.slots}")
        for term in (self.lo, self.hi):
            if term.variables():
                raise PreconditionError(f"a bound reads cur or constants, not {term}")


def _add(a: Term, b: Term) -> Term:
    return a if b == Const(0.0) else Apply("add", (a, b))


def _if(c: Term, a: Term, b: Term) -> Term:
    return Apply("if", (c, a, b))


def _and(*terms: Term) -> Term:
    out = terms[0]
    for t in terms[1:]:
        out = Apply("and", (out, t))
    return out


class _Frame:
    """The states every metric DT has: the input, the body (fed the input), the output,
    and the time of the current event (``now``: a term valid on tag transitions)."""

    def __init__(self, body: DT, bound: MetricBound, start: float) -> None:
        self.b = Builder(body.alphabet)
        self.x = self.b.state("x")
        rename = self.b.embed(body)
        for i in body.initial:
            self.b.copy(self.x, rename[i])
        self.outputs = [Var(rename[f], primed=True) for f in body.final]
        self.out = self.b.state("out")
        self.b.add(EPS, [Var(self.x, True)], self.out, Const(start))
        self.now: Term
        if bound.time is None:  # count the events: the time of the k-th is k
            count = self.register("n", 0.0)
            self.update(count, _add(Var(count), Const(1.0)))
            self.now = Var(count, primed=True)
        else:
            self.now = bound.time

    def register(self, hint: str, init: float) -> str:
        """A register set to ``init`` on initialization."""
        q = self.b.state(hint)
        self.b.add(EPS, [Var(self.x, True)], q, Const(init))
        return q

    def update(self, target: str, term: Term) -> None:
        """``target := term`` at every event (strict in what the term reads)."""
        for tag in self.b.alphabet:
            self.b.add(tag, term.variables(), target, term)

    def freeze(self) -> DT:
        return self.b.freeze([self.x], [self.out], Facts(output_synchronized=True))


def metric_past(body: DT, bound: MetricBound, *, negate: bool = False) -> DT:
    """``once_I ψ`` (body outputs ψ), ``φ since_I ψ`` (body outputs φ, ψ), or with
    ``negate`` ``hist_I φ`` = ¬once_I ¬φ (body outputs φ): the module docstring's
    construction. ``body`` has one input and outputs 0/1 after every prefix."""
    if len(body.initial) != 1 or len(body.final) not in (1, 2):
        raise PreconditionError(f"a bounded past operator reads a body with one input and "
                                f"one or two outputs, not {len(body.initial)} and "
                                f"{len(body.final)}")
    if negate and len(body.final) != 1:
        raise PreconditionError("hist reads one body output")
    f = _Frame(body, bound, 1.0 if negate else 0.0)
    *kept, held = f.outputs
    hit: Term = Apply("not", (held,)) if negate else held
    keep: Term | None = kept[0] if kept else None
    k = bound.slots
    # With A = 0 every interval starts at or before now (at a time ψ held): one slot
    # (K = 1) and no start register, the output is now < y.
    starts = not (k == 1 and bound.lo == Const(0.0))
    xs = [f.register("x", math.inf) for _ in range(k)] if starts else []
    ys = [f.register("y", -math.inf) for _ in range(k)]
    start, end = _add(f.now, bound.lo), _add(f.now, bound.hi)
    # The end of the latest interval: slot 0's with one slot; a ring of K > 1 slots keeps
    # it in a register beside the latest slot's index.
    last = ys[0] if k == 1 else f.register("last", -math.inf)
    latest: Term = Var(last) if keep is None else _if(keep, Var(last), _NEG_INF)
    merge = _and(hit, Apply("le", (start, latest)))
    insert = _and(hit, Apply("not", (merge,)))
    if k == 1:
        if starts:
            f.update(xs[0], _if(insert, start, Var(xs[0])))
        f.update(ys[0], _if(hit, end, latest))
    else:
        ring = f.register("k", float(k - 1))  # the first interval takes slot 0
        nxt = _if(Apply("eq", (Var(ring), Const(float(k - 1)))), Const(0.0),
                  _add(Var(ring), Const(1.0)))
        for i, (x, y) in enumerate(zip(xs, ys, strict=True)):
            here = Const(float(i))
            f.update(x, _if(_and(insert, Apply("eq", (nxt, here))), start, Var(x)))
            target = _if(merge, Apply("eq", (Var(ring), here)), Apply("eq", (nxt, here)))
            kept_y = Var(y) if keep is None else _if(keep, Var(y), _NEG_INF)
            f.update(y, _if(_and(hit, target), end, kept_y))
        f.update(ring, _if(insert, nxt, Var(ring)))
        f.update(last, _if(hit, end, latest))
    before = [Apply("lt", (f.now, Var(y, True))) for y in ys]
    inside = ([_and(Apply("le", (Var(x, True), f.now)), b) for x, b in zip(xs, before,
                                                                           strict=True)]
              if starts else before)
    held_now = inside[0]
    for term in inside[1:]:
        held_now = Apply("or", (held_now, term))
    f.update(f.out, Apply("not", (held_now,)) if negate else held_now)
    return f.freeze()


def metric_prev(body: DT, bound: MetricBound) -> DT:
    """``prev_I φ``: φ after the previous event, and its distance to this one in I."""
    if len(body.initial) != 1 or len(body.final) != 1:
        raise PreconditionError("prev reads a body with one input and one output")
    f = _Frame(body, bound, 0.0)
    (held,) = f.outputs
    before = f.register("p", 0.0)
    then = f.register("t", -math.inf)
    gap = Apply("sub", (f.now, Var(then)))
    f.update(f.out, _and(Var(before), Apply("ge", (gap, bound.lo)),
                         Apply("lt", (gap, bound.hi))))
    f.update(before, held)
    f.update(then, f.now)
    return f.freeze()


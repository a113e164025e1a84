"""CER patterns compiled to folds, then to DTs (issue 7, point 4).

Pipeline position: typed AST (:class:`~qre.language.ast.Matches`) → :class:`dt.windows.Fold`
→ DT (:func:`dt.windows.event_fold` per event, :func:`dt.windows.window_aggregate`
per window).

Meaning (skip-till-any-match). A match of a pattern is an assignment of events
to its tags; any events may lie between them:

* ``a`` — one event of tag a;
* ``seq(p1, …, pk)`` — a match of each part, each ending before the next
  starts; ``not(c | d)`` between two parts: no event of tag c or d strictly
  between the end of the one and the start of the other;
* ``or(p, q)`` — a match of p or of q (a match of both counts twice);
* ``and(p, q)`` — ``or(seq(p, q), seq(q, p))``: both, one after the other, in
  either order (interleavings are not matches: they would need a state per
  interleaving);
* ``plus(p)`` — one or more matches of p, each ending before the next starts;
* ``within(p, D)`` — a match of p whose last event is less than D after its
  first (the whole pattern only).

``matches(p)`` is the number of matches that end at this event,
``matched(p)`` 1 if there is one (else 0); as a window function
(``aggregate(matches(p), WS, WA)``) the number of matches that start in the
window's first slide and end inside it — T-CER (seed 004, §4): a match is
counted by the last window instance that contains it, so every match shorter
than WS − WA + δ is counted exactly once (D_C = WS − WA), and a longer one at
most once.

Construction. A pattern is a linear weighted automaton over one of two
semirings, run as a fold whose registers hold, per position of the pattern,
what has been seen so far: counts (+, 0) for ``matches``, latest start
(max, −∞) for ``matched`` — the latest start is what ``within`` needs, and the
timestamps are kept in registers. Each fragment takes the weight ``in`` of
matches of what precedes it that may start here and returns the weight
``out`` of those that end here:

=================  ===========================================================
pattern            out (and register updates; ⊕ the semiring's sum)
=================  ===========================================================
a                  in at an event of a, else 0
seq(p, q)          q(acc) with acc' = acc ⊕ p(in) (acc' = 0 ⊕ p(in) at an
                   event that a ``not`` between p and q forbids)
or(p, q)           p(in) ⊕ q(in)
plus(p)            p(in ⊕ acc) with acc' = acc ⊕ out
=================  ===========================================================

The top of the pattern takes ``in`` = the start weight (1, or the event's
time for ``within``; :data:`dt.windows.START`). One register per ``seq``
junction and per ``plus``; the update terms are specialised per tag, so a tag
a pattern does not mention costs copies only. Counts are floats: exact up to
2^53 (``plus`` can make 2^n matches of n events).

A ``within`` compares the time since the latest start with its duration in
δ, the resolution of the run (:mod:`qre.runtime.times`): the DT reads the event time
as the record field ``within_clock`` (:data:`CLOCK_FIELD`: whole δ, so the
difference is exact — ``cur.time`` is in the user's unit, a float of seconds
maybe, whose differences are not) and the duration as ``within_<nanoseconds>``
(:func:`duration_field`), both supplied by the timed runtime
(:mod:`qre.runtime.timed`), so one compiled monitor serves every time unit.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from itertools import count

from dt.terms import Apply, Const, Cur, Term, Var
from dt.windows import START, Fold

from . import ast
from .errors import QreTypeError

__all__ = ["CLOCK_FIELD", "WITHIN_PREFIX", "check_pattern", "duration_field", "durations",
           "event_pattern", "pattern_tags", "walk_pattern", "window_pattern"]

WITHIN_PREFIX = "within_"
"""Prefix of the record fields a ``within`` reads: durations and :data:`CLOCK_FIELD`
(see the module docstring); the runtime supplies them, users never do."""

CLOCK_FIELD = f"{WITHIN_PREFIX}clock"
"""The record field holding the event time as a whole number of δ (exact below 2^53)."""


def duration_field(ns: int) -> str:
    """The record field holding the duration ``ns`` in the run's δ."""
    return f"{WITHIN_PREFIX}{ns}"


def durations(fields: Iterable[str]) -> dict[str, int]:
    """The duration fields among ``fields``, with their durations in nanoseconds."""
    return {f: int(f[len(WITHIN_PREFIX):]) for f in fields
            if f.startswith(WITHIN_PREFIX) and f[len(WITHIN_PREFIX):].isdigit()}


@dataclass(frozen=True)
class _Semiring:
    zero: float
    op: str

    def plus(self, a: Term, b: Term) -> Term:
        # 0 ⊕ x = x exactly in both semirings (counts are never −0.0; max(−inf, x) = x).
        if a == Const(self.zero):
            return b
        if b == Const(self.zero):
            return a
        return Apply(self.op, (a, b))


COUNTS = _Semiring(0.0, "add")
LATEST = _Semiring(-math.inf, "max")


def check_pattern(q: ast.Matches, *, windowed: bool) -> None:
    """QreTypeError unless ``q`` can be compiled (at the top level, or in a window)."""
    for node in walk_pattern(q.pattern):
        if isinstance(node, ast.PatternTimes | ast.PatternGap) or getattr(
                node, "contiguity", None) is not None or getattr(node, "greedy", False):
            raise QreTypeError("contiguity, greedy, times, optional, star and gap are for "
                               "match(...), whose rows are the matches; matches(p) and "
                               "matched(p) count skip-till-any-match", span=node.span)
        if isinstance(node, ast.PatternSeq) and isinstance(node.parts[-1], ast.PatternNot):
            raise QreTypeError("not(...) ends a pattern only in match(..., within D)",
                               span=node.parts[-1].span)
    _, duration = _strip_within(q.pattern)
    if windowed and not q.count:
        raise QreTypeError("a window counts matches: write matches(p)", span=q.span)
    if windowed and duration is not None:
        raise QreTypeError("within in a window: the window's size already bounds a match "
                           "(each match shorter than size − slide is counted exactly once)",
                           span=q.span)
    if q.count and duration is not None:
        raise QreTypeError("matches(within(p, D)) would need a register per start time: "
                           "use matched(within(p, D)) to know whether a match ends here, "
                           "or aggregate(matches(p), size, slide) to count per window",
                           span=q.span)


def event_pattern(q: ast.Matches, alphabet: Sequence[str]) -> tuple[Fold, Term]:
    """The fold of ``matches(p)``/``matched(p)`` per event, and its start weight
    (``q`` passed :func:`check_pattern`)."""
    body, duration = _strip_within(q.pattern)
    if q.count:
        regs, inits, updates = _compile(body, alphabet, COUNTS)
        return _fold(regs, inits, updates, lambda o: o), Const(1.0)
    regs, inits, updates = _compile(body, alphabet, LATEST)
    if duration is None:
        def test(o: Term) -> Term:
            return Apply("gt", (o, Const(-math.inf)))
        start: Term = Const(1.0)
    else:
        def test(o: Term) -> Term:
            span = Apply("sub", (Cur(CLOCK_FIELD), o))
            return Apply("lt", (span, Cur(duration_field(duration))))
        start = Cur(CLOCK_FIELD)
    return _fold(regs, inits, updates, test), start


def window_pattern(q: ast.Matches, alphabet: Sequence[str]) -> Fold:
    """The fold of ``aggregate(matches(p), WS, WA)``: the matches counted per window
    (``q`` passed :func:`check_pattern`)."""
    body, _ = _strip_within(q.pattern)
    regs, inits, updates = _compile(body, alphabet, COUNTS)
    n = Var("n")
    per_tag = tuple((tag, (*ups, Apply("add", (n, o))) if o != Const(0.0) else (*ups, n))
                    for tag, (ups, o) in updates.items())
    return Fold((*regs, "n"), (*inits, 0.0), per_tag[0][1], n, per_tag)


_Updates = dict[str, tuple[tuple[Term, ...], Term]]
"""Per tag: the register updates and the out term."""


def _fold(regs: list[str], inits: list[float], updates: _Updates,
          test: Callable[[Term], Term]) -> Fold:
    """The registers and m, where m' = test(out at this event); the output is m."""
    per_tag = tuple((tag, (*ups, test(o))) for tag, (ups, o) in updates.items())
    return Fold((*regs, "m"), (*inits, 0.0), per_tag[0][1], Var("m"), per_tag)


def _strip_within(p: ast.Pattern) -> tuple[ast.Pattern, int | None]:
    duration = None
    if isinstance(p, ast.PatternWithin):
        p, duration = p.body, p.duration
    for node in walk_pattern(p):
        if isinstance(node, ast.PatternWithin):
            raise QreTypeError("within applies to a whole pattern: matched(within(p, D))",
                               span=node.span)
    return p, duration


def walk_pattern(p: ast.Pattern | ast.PatternNot) -> Iterator[ast.Pattern | ast.PatternNot]:
    """``p`` and its sub-patterns, in document order."""
    yield p
    for child in _children(p):
        yield from walk_pattern(child)


def _children(p: ast.Pattern | ast.PatternNot) -> tuple[ast.Pattern | ast.PatternNot, ...]:
    if isinstance(p, ast.PatternSeq):
        return p.parts
    if isinstance(p, ast.PatternOr | ast.PatternAnd):
        return (p.left, p.right)
    if isinstance(p, ast.PatternPlus | ast.PatternWithin | ast.PatternTimes | ast.PatternGap):
        return (p.body,)
    return ()


def pattern_tags(p: ast.Pattern | ast.PatternNot) -> list[str]:
    """The tags a pattern mentions, in order of first appearance."""
    out: list[str] = []
    for node in walk_pattern(p):
        tags = (node.tag,) if isinstance(node, ast.PatternTag) else (
            node.tags if isinstance(node, ast.PatternNot) else ())
        out.extend(t for t in tags if t not in out)
    return out


def _compile(p: ast.Pattern, alphabet: Sequence[str], ring: _Semiring
             ) -> tuple[list[str], list[float], _Updates]:
    """Registers, their initial values, and per tag: (register updates, out term)."""
    updates: _Updates = {}
    regs: list[str] = []
    for tag in alphabet:
        fragment = _Fragment(tag, ring, count())
        out = fragment.out(p, START)
        regs = [r for r, _ in fragment.updates]
        updates[tag] = (tuple(u for _, u in fragment.updates), out)
    return regs, [ring.zero] * len(regs), updates


class _Fragment:
    """One tag's pass over the pattern: registers are named in traversal order, so every
    tag's pass names them alike."""

    def __init__(self, tag: str, ring: _Semiring, names: Iterator[int]) -> None:
        self.tag, self.ring, self.names = tag, ring, names
        self.updates: list[tuple[str, Term]] = []

    def register(self) -> str:
        return f"acc{next(self.names)}"

    def out(self, p: ast.Pattern, inp: Term) -> Term:
        ring = self.ring
        if isinstance(p, ast.PatternTag):
            return inp if p.tag == self.tag else Const(ring.zero)
        if isinstance(p, ast.PatternOr):
            return ring.plus(self.out(p.left, inp), self.out(p.right, inp))
        if isinstance(p, ast.PatternAnd):
            return self.out(ast.PatternOr(ast.PatternSeq((p.left, p.right)),
                                          ast.PatternSeq((p.right, p.left))), inp)
        if isinstance(p, ast.PatternPlus):
            acc = self.register()
            slot = len(self.updates)
            self.updates.append((acc, Const(ring.zero)))  # placed now: traversal order
            out = self.out(p.body, ring.plus(inp, Var(acc)))
            self.updates[slot] = (acc, ring.plus(Var(acc), out))
            return out
        assert isinstance(p, ast.PatternSeq), f"not a pattern: {p!r}"
        return self.seq(p.parts, inp)

    def seq(self, parts: Sequence[ast.Pattern | ast.PatternNot], inp: Term) -> Term:
        ring = self.ring
        first, *rest = parts
        assert not isinstance(first, ast.PatternNot)
        out = self.out(first, inp)
        forbidden: set[str] = set()
        for part in rest:
            if isinstance(part, ast.PatternNot):
                forbidden |= set(part.tags)
                continue
            acc = self.register()
            kept = Const(ring.zero) if self.tag in forbidden else Var(acc)
            self.updates.append((acc, ring.plus(kept, out)))
            out = self.out(part, Var(acc))
            forbidden = set()
        return out
